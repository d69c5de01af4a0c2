//! Uploaded audio (WAV, FLAC, MP3, Ogg Vorbis/Opus, WebM, MP4/M4A, ADTS): decoded to mono
//! 16 kHz within the length cap, or refused as an invalid request about `file`.
#![no_main]
use ingle::audio::decode::MAX_AUDIO_SECONDS;
use ingle::ErrorKind;
use libfuzzer_sys::fuzz_target;

const RATE: u32 = 16_000;
const NAMES: [Option<&str>; 8] = [
    None,
    Some("a.wav"),
    Some("a.flac"),
    Some("a.mp3"),
    Some("a.ogg"),
    Some("a.webm"),
    Some("a.m4a"),
    Some("a.opus"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let name = NAMES[pick as usize % NAMES.len()];
    match ingle::audio::decode_to_mono(bytes, name, RATE) {
        Ok(decoded) => {
            assert!(decoded.samples.len() as u64 <= MAX_AUDIO_SECONDS * u64::from(RATE) + 1);
            assert!(!decoded.samples.is_empty());
            assert_eq!(decoded.sample_rate, RATE);
        }
        Err(error) => {
            assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}");
            assert_eq!(error.param.as_deref(), Some("file"), "{error}");
        }
    }
});
