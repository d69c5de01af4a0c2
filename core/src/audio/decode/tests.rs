//! Each format made from a real recording by ffmpeg at test time, decoded and compared with
//! the recording; and files that are not audio, which must be errors about `file`.

use super::opus::OpusHead;
use super::*;
use crate::error::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

const RATE: u32 = 16_000;
/// beckett.wav: 16 kHz mono s16, 9.96 s.
const BECKETT_SECONDS: f64 = 9.96;

fn recording(name: &str) -> Option<PathBuf> {
    let path = crate::config::default_models_dir()
        .join("recordings")
        .join(name);
    if path.is_file() {
        Some(path)
    } else {
        println!("skipped: no recording at {}", path.display());
        None
    }
}

fn have_ffmpeg() -> bool {
    let found = Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        println!("skipped: no ffmpeg");
    }
    found
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("ingle-decode-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ffmpeg -i input {args} {dir}/{file}`; the bytes written.
fn ffmpeg(input: &Path, args: &[&str], dir: &TempDir, file: &str) -> Vec<u8> {
    let output = dir.0.join(file);
    let result = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-i"])
        .arg(input)
        .args(args)
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "ffmpeg {args:?} {file}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::read(&output).unwrap()
}

/// The samples of a 16-bit PCM WAV, read here (not by the code under test): (rate, channels,
/// interleaved samples / 32768).
fn read_wav_s16(bytes: &[u8]) -> (u32, usize, Vec<f32>) {
    assert_eq!(&bytes[..4], b"RIFF");
    assert_eq!(&bytes[8..12], b"WAVE");
    let (mut rate, mut channels, mut samples) = (0, 0, Vec::new());
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = &bytes[at + 8..(at + 8 + size).min(bytes.len())];
        if id == b"fmt " {
            assert_eq!(u16::from_le_bytes([body[0], body[1]]), 1, "PCM");
            channels = u16::from_le_bytes([body[2], body[3]]) as usize;
            rate = u32::from_le_bytes(body[4..8].try_into().unwrap());
            assert_eq!(u16::from_le_bytes([body[14], body[15]]), 16, "16-bit");
        } else if id == b"data" {
            samples = body
                .chunks_exact(2)
                .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
                .collect();
        }
        at += 8 + size + size % 2;
    }
    (rate, channels, samples)
}

/// A 16-bit PCM WAV of these interleaved samples.
fn write_wav_s16(rate: u32, channels: u16, samples: &[f32]) -> Vec<u8> {
    let data: Vec<u8> = samples
        .iter()
        .flat_map(|&x| ((x.clamp(-1.0, 1.0) * 32767.0).round() as i16).to_le_bytes())
        .collect();
    let mut wav = b"RIFF".to_vec();
    wav.extend((36 + data.len() as u32).to_le_bytes());
    wav.extend(b"WAVEfmt ");
    wav.extend(16u32.to_le_bytes());
    wav.extend(1u16.to_le_bytes());
    wav.extend(channels.to_le_bytes());
    wav.extend(rate.to_le_bytes());
    wav.extend((rate * u32::from(channels) * 2).to_le_bytes());
    wav.extend((channels * 2).to_le_bytes());
    wav.extend(16u16.to_le_bytes());
    wav.extend(b"data");
    wav.extend((data.len() as u32).to_le_bytes());
    wav.extend(data);
    wav
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

/// `decoded` against `reference` shifted by `lag` samples (decoded[i + lag] ~ reference[i]):
/// the normalised cross-correlation over the overlap.
fn ncc(reference: &[f32], decoded: &[f32], lag: isize) -> f64 {
    let (a, b) = if lag >= 0 {
        (reference, decoded.get(lag as usize..).unwrap_or(&[]))
    } else {
        (reference.get((-lag) as usize..).unwrap_or(&[]), decoded)
    };
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    dot(a, b) / (dot(a, a) * dot(b, b)).sqrt().max(1e-30)
}

/// The lag within ±`max_lag` where `decoded` best matches `reference` (searched on 2 s from
/// the middle), and the correlation over the whole overlap there.
fn best_correlation(reference: &[f32], decoded: &[f32], max_lag: usize) -> (isize, f64) {
    let middle = reference.len() / 2;
    let window = &reference[middle - RATE as usize..middle + RATE as usize];
    let max_lag = max_lag as isize;
    let lag = (-max_lag..=max_lag)
        .max_by(|&x, &y| {
            let at = |lag: isize| {
                let start = (middle as isize - RATE as isize + lag) as usize;
                decoded
                    .get(start..start + window.len())
                    .map_or(f64::MIN, |segment| dot(window, segment))
            };
            at(x).total_cmp(&at(y))
        })
        .unwrap();
    (lag, ncc(reference, decoded, lag))
}

/// beckett.wav through ffmpeg with `args` into `file`, decoded: the format name, the
/// duration and the correlation with the recording are checked.
fn check_format(args: &[&str], file: &str, format: &str, min_correlation: f64) {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let (rate, channels, reference) = read_wav_s16(&std::fs::read(&path).unwrap());
    assert_eq!((rate, channels), (RATE, 1));
    let dir = TempDir::new(file);
    let bytes = ffmpeg(&path, args, &dir, file);
    let decoded = decode_to_mono(&bytes, Some(file), RATE).unwrap();
    let (lag, correlation) = best_correlation(&reference, &decoded.samples, RATE as usize / 10);
    println!(
        "{file}: {} bytes, format {}, {:.4} s, {} samples, lag {lag}, correlation {correlation:.5}",
        bytes.len(),
        decoded.format,
        decoded.duration,
        decoded.samples.len(),
    );
    assert_eq!(decoded.format, format);
    assert_eq!(decoded.sample_rate, RATE);
    assert!(
        (decoded.duration - BECKETT_SECONDS).abs() < 0.1,
        "{file}: duration {}",
        decoded.duration
    );
    let output_seconds = decoded.samples.len() as f64 / f64::from(RATE);
    assert!(
        (output_seconds - decoded.duration).abs() < 1e-3,
        "{file}: {output_seconds} s of output for {} s of source",
        decoded.duration
    );
    assert!(
        correlation > min_correlation,
        "{file}: correlation {correlation} at lag {lag}"
    );
}

const LOSSY: f64 = 0.9;
const LOSSLESS: f64 = 0.999;

#[test]
fn flac() {
    check_format(&["-c:a", "flac"], "beckett.flac", "flac", LOSSLESS);
}

#[test]
fn mp3() {
    check_format(
        &["-c:a", "libmp3lame", "-b:a", "64k"],
        "beckett.mp3",
        "mp3",
        LOSSY,
    );
}

#[test]
fn ogg_vorbis() {
    check_format(&["-c:a", "libvorbis"], "beckett.ogg", "ogg/vorbis", LOSSY);
}

#[test]
fn ogg_opus() {
    check_format(
        &["-c:a", "libopus", "-b:a", "32k"],
        "beckett.opus",
        "ogg/opus",
        LOSSY,
    );
}

#[test]
fn ogg_opus_surround() {
    // Six channels: mapping family 1, libopus's multistream decoder.
    check_format(
        &["-ac", "6", "-c:a", "libopus", "-mapping_family", "1"],
        "beckett_6ch.ogg",
        "ogg/opus",
        LOSSY,
    );
}

#[test]
fn webm_opus() {
    check_format(
        &["-c:a", "libopus", "-b:a", "32k"],
        "beckett.webm",
        "webm/opus",
        LOSSY,
    );
}

#[test]
fn webm_vorbis() {
    check_format(
        &["-c:a", "libvorbis"],
        "beckett_vorbis.webm",
        "webm/vorbis",
        LOSSY,
    );
}

#[test]
fn m4a_aac() {
    check_format(
        &["-c:a", "aac", "-b:a", "64k"],
        "beckett.m4a",
        "m4a/aac",
        LOSSY,
    );
}

#[test]
fn mp4_aac() {
    check_format(
        &["-c:a", "aac", "-f", "mp4"],
        "beckett.mp4",
        "mp4/aac",
        LOSSY,
    );
}

#[test]
fn wav_stereo_44100_s16() {
    check_format(
        &["-ac", "2", "-ar", "44100", "-c:a", "pcm_s16le"],
        "beckett_stereo.wav",
        "wav",
        LOSSLESS,
    );
}

#[test]
fn wav_f32() {
    check_format(&["-c:a", "pcm_f32le"], "beckett_f32.wav", "wav", LOSSLESS);
}

#[test]
fn wav_s24_48000() {
    check_format(
        &["-ar", "48000", "-c:a", "pcm_s24le"],
        "beckett_s24.wav",
        "wav",
        LOSSLESS,
    );
}

#[test]
fn wav_s32_22050() {
    check_format(
        &["-ar", "22050", "-c:a", "pcm_s32le"],
        "beckett_s32.wav",
        "wav",
        LOSSLESS,
    );
}

#[test]
fn wav_u8() {
    // 8 bits: quantisation noise, not a lossless copy.
    check_format(&["-c:a", "pcm_u8"], "beckett_u8.wav", "wav", 0.95);
}

#[test]
fn wav_ima_adpcm() {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let (_, _, reference) = read_wav_s16(&std::fs::read(&path).unwrap());
    let dir = TempDir::new("adpcm");
    let mut bytes = ffmpeg(&path, &["-c:a", "adpcm_ima_wav"], &dir, "beckett_adpcm.wav");
    // ffmpeg pads the last block (2041 frames at 16 kHz) and counts the padding in `fact`
    // too: 10.08 s. Told the true length, the decoder stops there.
    let fact = bytes.windows(4).position(|w| w == b"fact").unwrap() + 8;
    assert_eq!(&bytes[fact - 4..fact], 4u32.to_le_bytes());
    let frames = u32::from_le_bytes(bytes[fact..fact + 4].try_into().unwrap()) as usize;
    assert!(frames > reference.len() && frames < reference.len() + 2041);
    bytes[fact..fact + 4].copy_from_slice(&(reference.len() as u32).to_le_bytes());
    let decoded = decode_to_mono(&bytes, Some("beckett_adpcm.wav"), RATE).unwrap();
    assert_eq!(decoded.format, "wav");
    assert_eq!(decoded.samples.len(), reference.len());
    let (lag, correlation) = best_correlation(&reference, &decoded.samples, 1_600);
    println!("beckett_adpcm.wav: lag {lag}, correlation {correlation:.5}");
    assert!(
        correlation > LOSSY,
        "correlation {correlation} at lag {lag}"
    );
}

/// `ffmpeg {inputs} {args} {dir}/{file}` (no `-i` added); the bytes written.
fn ffmpeg_raw(args: &[&str], dir: &TempDir, file: &str) -> Vec<u8> {
    let output = dir.0.join(file);
    let result = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "ffmpeg {args:?} {file}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::read(&output).unwrap()
}

#[test]
fn mp3_with_large_cover_art() {
    // An ID3v2 tag over a megabyte (the probe's reach) before the first frame.
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let dir = TempDir::new("cover");
    let cover = dir.0.join("cover.png");
    ffmpeg_raw(
        &[
            "-f",
            "lavfi",
            "-i",
            "nullsrc=s=1024x768,geq=random(1)*255:random(2)*255:128",
        ]
        .iter()
        .chain(&["-frames:v", "1"])
        .copied()
        .collect::<Vec<_>>(),
        &dir,
        "cover.png",
    );
    let (path, cover) = (path.to_str().unwrap(), cover.to_str().unwrap());
    let bytes = ffmpeg_raw(
        &[
            "-i",
            path,
            "-i",
            cover,
            "-map",
            "0",
            "-map",
            "1",
            "-c:a",
            "libmp3lame",
            "-c:v",
            "copy",
            "-id3v2_version",
            "3",
        ],
        &dir,
        "cover.mp3",
    );
    assert_eq!(&bytes[..3], b"ID3");
    let tag = bytes[6..10]
        .iter()
        .fold(0usize, |n, &b| n << 7 | usize::from(b));
    assert!(tag > 1 << 20, "tag of {tag} bytes");
    let decoded = decode_to_mono(&bytes, Some("cover.mp3"), RATE).unwrap();
    println!(
        "cover.mp3: ID3v2 tag of {tag} bytes, {:.3} s",
        decoded.duration
    );
    assert_eq!(decoded.format, "mp3");
    assert!((decoded.duration - BECKETT_SECONDS).abs() < 0.1);
}

#[test]
fn video_with_audio_decodes_its_audio() {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let (_, _, reference) = read_wav_s16(&std::fs::read(&path).unwrap());
    let dir = TempDir::new("video_audio");
    let path = path.to_str().unwrap();
    let bytes = ffmpeg_raw(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=duration=10:size=64x64:rate=10",
            "-i",
            path,
            "-c:v",
            "mpeg4",
            "-c:a",
            "aac",
            "-shortest",
        ],
        &dir,
        "video.mp4",
    );
    let decoded = decode_to_mono(&bytes, Some("video.mp4"), RATE).unwrap();
    let (lag, correlation) = best_correlation(&reference, &decoded.samples, 1_600);
    println!(
        "video.mp4: {} {:.3} s, lag {lag}, correlation {correlation:.5}",
        decoded.format, decoded.duration
    );
    assert_eq!(decoded.format, "mp4/aac");
    assert!(correlation > LOSSY);
}

#[test]
fn mono_at_target_rate_passes_through_untouched() {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let (_, _, reference) = read_wav_s16(&bytes);
    let decoded = decode_to_mono(&bytes, Some("beckett.wav"), RATE).unwrap();
    assert_eq!(decoded.format, "wav");
    assert_eq!(decoded.duration, reference.len() as f64 / f64::from(RATE));
    assert!((decoded.duration - BECKETT_SECONDS).abs() < 0.01);
    assert_eq!(decoded.samples, reference);
}

#[test]
fn resampled_length_is_exact() {
    for (name, rate) in [
        ("two_cities.wav", 48_000),
        ("endgame_nagg_nell.wav", 24_000),
    ] {
        let Some(path) = recording(name) else {
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        let (source_rate, channels, source) = read_wav_s16(&bytes);
        assert_eq!(source_rate, rate);
        let frames = (source.len() / channels) as u64;
        let decoded = decode_to_mono(&bytes, None, RATE).unwrap();
        let expected = (frames * u64::from(RATE) + u64::from(rate) / 2) / u64::from(rate);
        assert_eq!(decoded.samples.len() as u64, expected, "{name}");
        assert!((decoded.duration - frames as f64 / f64::from(rate)).abs() < 1e-9);
        println!("{name}: {} s -> {} samples", decoded.duration, expected);
    }
}

#[test]
fn stereo_left_only_down_mixes_to_half_level() {
    // 440 Hz at 0.5 in the left channel, silence in the right, 44.1 kHz.
    let rate = 44_100;
    let frames = 2 * rate as usize;
    let sine = |i: usize, rate: u32| {
        0.5 * (2.0 * std::f32::consts::PI * 440.0 * i as f32 / rate as f32).sin()
    };
    let interleaved: Vec<f32> = (0..frames).flat_map(|i| [sine(i, rate), 0.0]).collect();
    let bytes = write_wav_s16(rate, 2, &interleaved);
    let decoded = decode_to_mono(&bytes, Some("left.wav"), RATE).unwrap();
    assert_eq!(decoded.samples.len(), 2 * RATE as usize);
    assert!((decoded.duration - 2.0).abs() < 1e-9);
    let rms = |x: &[f32]| (dot(x, x) / x.len() as f64).sqrt();
    // Away from the edges (the resampler's filter rings at a hard start).
    let middle = &decoded.samples[1_000..decoded.samples.len() - 1_000];
    let expected = 0.5 / 2.0 / 2f64.sqrt();
    assert!(
        (rms(middle) / expected - 1.0).abs() < 0.01,
        "rms {} vs {expected}",
        rms(middle)
    );
    // Sample by sample: a 0.25 sine at 16 kHz, in phase.
    let worst = (1_000..decoded.samples.len() - 1_000)
        .map(|i| (decoded.samples[i] - sine(i, RATE) / 2.0).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 2e-3, "worst difference {worst}");
}

#[test]
fn truncated_file_decodes_what_is_there() {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let dir = TempDir::new("truncated");
    for (args, file) in [
        (&["-c:a", "libmp3lame"][..], "cut.mp3"),
        (&["-c:a", "flac"][..], "cut.flac"),
        (&["-c:a", "libopus"][..], "cut.opus"),
    ] {
        let bytes = ffmpeg(&path, args, &dir, file);
        let decoded = decode_to_mono(&bytes[..bytes.len() / 2], Some(file), RATE).unwrap();
        println!("{file}: half the bytes -> {:.2} s", decoded.duration);
        assert!(
            decoded.duration > 2.0 && decoded.duration < 8.0,
            "{file}: {}",
            decoded.duration
        );
    }
}

/// The error every bad file must give.
fn assert_invalid_file(bytes: &[u8], filename: Option<&str>, contains: &str) {
    let error = decode_to_mono(bytes, filename, RATE).unwrap_err();
    println!("{filename:?}: {error}");
    assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}");
    assert_eq!(error.param.as_deref(), Some("file"));
    assert!(
        error
            .message
            .ends_with(&format!("Supported formats: {SUPPORTED_AUDIO_FORMATS}")),
        "{}",
        error.message
    );
    assert!(error.message.contains(contains), "{}", error.message);
}

/// Deterministic bytes (xorshift).
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
fn empty_file_is_invalid() {
    assert_invalid_file(b"", Some("speech.mp3"), "is empty");
    assert_invalid_file(b"", None, "is empty");
}

#[test]
fn random_bytes_are_invalid() {
    for seed in 1..=20 {
        assert_invalid_file(&noise(1_000, seed), Some("noise.mp3"), "");
        assert_invalid_file(&noise(1_000, seed), None, "");
    }
}

#[test]
fn png_is_invalid() {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x10\0\0\0\x10\x08\x02\0\0\0".to_vec();
    png.extend(noise(200, 7));
    assert_invalid_file(&png, Some("picture.png"), "not in a supported audio format");
    assert_invalid_file(&png, Some("picture.wav"), "");
}

#[test]
fn text_file_is_invalid() {
    let text = "Hello, this is not audio.\n".repeat(40);
    assert_invalid_file(
        text.as_bytes(),
        Some("notes.txt"),
        "not in a supported audio format",
    );
    assert_invalid_file(text.as_bytes(), Some("notes.mp3"), "");
}

#[test]
fn truncated_wav_header_is_invalid() {
    let wav = write_wav_s16(RATE, 1, &[0.1; 1_000]);
    for cut in [4, 12, 20, 30, 43] {
        assert_invalid_file(&wav[..cut], Some("cut.wav"), "");
    }
    // A whole header and not one sample.
    assert_invalid_file(&wav[..44], Some("cut.wav"), "contains no audio");
}

#[test]
fn wav_with_no_samples_is_invalid() {
    let wav = write_wav_s16(RATE, 1, &[]);
    assert_invalid_file(&wav, Some("empty.wav"), "contains no audio");
}

#[test]
fn video_without_audio_is_invalid() {
    if !have_ffmpeg() {
        return;
    }
    let dir = TempDir::new("video");
    let output = dir.0.join("video.mp4");
    let result = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi"])
        .args([
            "-i",
            "testsrc=duration=1:size=64x64:rate=10",
            "-c:v",
            "mpeg4",
        ])
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let bytes = std::fs::read(&output).unwrap();
    assert_invalid_file(&bytes, Some("video.mp4"), "contains no audio track");
}

#[test]
fn opus_head_is_parsed() {
    let mut head = b"OpusHead\x01\x02".to_vec();
    head.extend(312u16.to_le_bytes());
    head.extend(48_000u32.to_le_bytes());
    head.extend((-256i16).to_le_bytes());
    head.push(0);
    let parsed = OpusHead::parse(&head).unwrap();
    assert_eq!(
        parsed,
        OpusHead {
            channels: 2,
            pre_skip: 312,
            gain: -256,
            family: 0,
            streams: 1,
            coupled: 1,
            mapping: vec![0, 1],
        }
    );
    assert!(OpusHead::parse(&head[..18]).is_err());
    let mut surround = head.clone();
    surround[9] = 6;
    surround[18] = 1;
    assert!(OpusHead::parse(&surround).is_err(), "no mapping table");
    surround.extend([4, 2, 0, 4, 1, 2, 3, 5]);
    assert_eq!(
        OpusHead::parse(&surround).unwrap().mapping,
        [0, 4, 1, 2, 3, 5]
    );
}

/// The process's peak resident memory so far (Linux), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Ten minutes of 48 kHz stereo decode holding only the 16 kHz mono output: the peak memory
/// grows by about that output (38 MB), never by a 48 kHz copy (115 MB mono, 230 MB stereo).
/// Run alone (the peak is the process's): `cargo test -p ingle-core --lib
/// audio::decode::tests::long_stereo_holds_only_the_output -- --ignored --exact`.
#[test]
#[ignore = "extended: slow in debug builds; measures the whole process's peak memory (scripts/test --extended rust)"]
fn long_stereo_holds_only_the_output() {
    if !have_ffmpeg() {
        return;
    }
    let dir = TempDir::new("long-stereo");
    let output = dir.0.join("long.opus");
    let result = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi"])
        .args(["-i", "sine=frequency=440:sample_rate=48000:duration=600"])
        .args(["-ac", "2", "-c:a", "libopus", "-b:a", "24k"])
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let bytes = std::fs::read(&output).unwrap();
    let Some(before) = peak_rss() else {
        println!("skipped: no /proc/self/status");
        return;
    };
    let decoded = decode_to_mono(&bytes, Some("long.opus"), RATE).unwrap();
    let after = peak_rss().unwrap();
    let output_bytes = (decoded.samples.len() * 4) as u64;
    println!(
        "{} bytes in, {:.1} s, output {:.1} MB, peak grew {:.1} MB",
        bytes.len(),
        decoded.duration,
        output_bytes as f64 / 1e6,
        after.saturating_sub(before) as f64 / 1e6
    );
    assert!((decoded.duration - 600.0).abs() < 0.1);
    assert!(after.saturating_sub(before) < output_bytes * 2);
}

/// Damaged copies of real files (bytes overwritten, cut short) give audio or an error about
/// `file`, never a panic or a hang.
#[test]
fn damaged_files_never_panic() {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let dir = TempDir::new("damaged");
    let short = ["-t", "1"];
    let files = [
        (&["-c:a", "pcm_s16le"][..], "d.wav"),
        (&["-c:a", "flac"][..], "d.flac"),
        (&["-c:a", "libmp3lame"][..], "d.mp3"),
        (&["-c:a", "libvorbis"][..], "d.ogg"),
        (&["-c:a", "libopus"][..], "d.opus"),
        (&["-c:a", "libopus"][..], "d.webm"),
        (&["-c:a", "aac"][..], "d.m4a"),
    ];
    let mut seed = 1u64;
    for (args, file) in files {
        let args: Vec<&str> = short.iter().chain(args).copied().collect();
        let bytes = ffmpeg(&path, &args, &dir, file);
        let (mut decoded, mut failed) = (0, 0);
        for round in 0..40 {
            seed += 1;
            let mut damaged = bytes.clone();
            let random = noise(64, seed);
            for pair in random.chunks_exact(4).take(1 + round % 8) {
                let at = u32::from_le_bytes(pair.try_into().unwrap()) as usize;
                // Mostly in the headers, where damage does the most.
                let at = if round % 2 == 0 {
                    at % 200.min(damaged.len())
                } else {
                    at % damaged.len()
                };
                damaged[at] = pair[0];
            }
            if round % 5 == 4 {
                damaged.truncate(random[0] as usize * damaged.len() / 256);
            }
            match decode_to_mono(&damaged, Some(file), RATE) {
                Ok(_) => decoded += 1,
                Err(error) => {
                    assert_eq!(error.kind, ErrorKind::InvalidRequest, "{file}: {error}");
                    assert_eq!(error.param.as_deref(), Some("file"));
                    failed += 1;
                }
            }
        }
        println!("{file}: {decoded} damaged copies decoded, {failed} refused");
    }
}

#[test]
fn truncated_or_damaged_containers_are_called_corrupt_not_unsupported() {
    let Some(path) = recording("beckett.wav") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let dir = TempDir::new("corrupt");
    let short = ["-t", "2"];
    for (codec, file, cut) in [("libopus", "t.webm", 60), ("aac", "t.m4a", 40)] {
        let args: Vec<&str> = short.iter().chain(&["-c:a", codec]).copied().collect();
        let bytes = ffmpeg(&path, &args, &dir, file);
        assert_invalid_file(&bytes[..cut], Some(file), "is truncated or corrupt");
    }
    let args: Vec<&str> = short.iter().chain(&["-c:a", "flac"]).copied().collect();
    let mut flac = ffmpeg(&path, &args, &dir, "d.flac");
    flac[4..8].copy_from_slice(&[0x7F, 0xFF, 0xFF, 0xFF]); // the STREAMINFO block's header
    assert_invalid_file(
        &flac,
        Some("d.flac"),
        "looks like FLAC but is truncated or corrupt",
    );
}

#[test]
fn audio_whose_header_says_over_the_cap_is_refused_before_decoding() {
    if !have_ffmpeg() {
        return;
    }
    // 3 hours and a minute of silence: a few KB of FLAC that decoded to 691 MB, 4.5 GB for
    // six at once, before the cap refused it.
    let dir = TempDir::new("long");
    let output = dir.0.join("silence.flac");
    let result = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi"])
        .args([
            "-i",
            "anullsrc=r=8000:cl=mono",
            "-t",
            "10860",
            "-c:a",
            "flac",
        ])
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let bytes = std::fs::read(&output).unwrap();
    // Refused before the first packet: `stop` is never asked.
    let cancel = Cancel::polled(|| panic!("asked"));
    let error = decode_to_mono_for(&bytes, Some("silence.flac"), RATE, &cancel).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("file"), "{error}");
    assert!(error.message.contains("longer than 3 hours"), "{error}");
}

#[test]
fn decoding_stops_when_asked() {
    let wav = write_wav_s16(RATE, 1, &vec![0.1; RATE as usize * 60]);
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&asked);
    let cancel = Cancel::polled(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        true
    });
    let error = decode_to_mono_for(&wav, Some("a.wav"), RATE, &cancel).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Cancelled, "{error}");
    assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 1);
}
