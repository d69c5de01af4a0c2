//! Every format, streaming and not, decoded by a decoder that is not ours: symphonia for mp3,
//! aac, flac and wav; libopus (through the `opus` crate) after the `ogg` crate's page parser
//! for opus; pcm is checked as raw samples.

use super::*;
use std::io::Cursor;
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;

const RATE: u32 = 22_050;
/// 1.5 s.
const LEN: usize = 33_075;
const AMPLITUDE: f32 = 0.5;

fn sine(len: usize, rate: u32) -> Vec<f32> {
    (0..len)
        .map(|i| AMPLITUDE * (2.0 * std::f32::consts::PI * 440.0 * i as f32 / rate as f32).sin())
        .collect()
}

/// The sine pushed in three uneven chunks; the bytes of each call (pushes, then finish).
fn encode_in_chunks(format: AudioFormat, streaming: bool) -> (Vec<Vec<u8>>, u32) {
    let signal = sine(LEN, RATE);
    let mut encoder = Encoder::new(format, RATE, streaming).unwrap();
    let mut parts: Vec<Vec<u8>> = [&signal[..4_000], &signal[4_000..21_000], &signal[21_000..]]
        .iter()
        .map(|chunk| encoder.push(chunk).unwrap())
        .collect();
    parts.push(encoder.finish().unwrap());
    (parts, encoder.output_sample_rate())
}

fn encode_file(format: AudioFormat, streaming: bool) -> Vec<u8> {
    encode_in_chunks(format, streaming).0.concat()
}

struct Decoded {
    rate: u32,
    channels: usize,
    samples: Vec<f32>,
    /// The decoder's check of the file's checksum, where it has one (FLAC's MD5).
    verified: Option<bool>,
}

fn symphonia_decode(bytes: Vec<u8>, extension: &str) -> Decoded {
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes)), Default::default());
    let mut hint = Hint::new();
    hint.with_extension(extension);
    let mut reader = symphonia::default::get_probe()
        .probe(
            &hint,
            source,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .unwrap();
    let track = reader.default_track(TrackType::Audio).unwrap();
    let track_id = track.id;
    let params = track
        .codec_params
        .as_ref()
        .unwrap()
        .audio()
        .unwrap()
        .clone();
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default().verify(true))
        .unwrap();
    let mut decoded = Decoded {
        rate: 0,
        channels: 0,
        samples: Vec::new(),
        verified: None,
    };
    loop {
        let packet = match reader.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            // How symphonia ends a WAV whose sizes say "unknown" (it reads to EOF).
            Err(symphonia::core::errors::Error::IoError(e))
                if e.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                break
            }
            Err(e) => panic!("{e}"),
        };
        if packet.track_id != track_id {
            continue;
        }
        let buffer = decoder.decode(&packet).unwrap();
        decoded.rate = buffer.spec().rate();
        decoded.channels = buffer.spec().channels().count();
        let mut samples: Vec<f32> = Vec::new();
        buffer.copy_to_vec_interleaved(&mut samples);
        decoded.samples.extend(samples);
    }
    decoded.verified = decoder.finalize().verify_ok;
    decoded
}

/// Frequency from the zero crossings of the middle 80% (away from codec delay and edges).
fn frequency(samples: &[f32], rate: u32) -> f32 {
    let middle = &samples[samples.len() / 10..samples.len() * 9 / 10];
    let crossings = middle
        .windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count();
    crossings as f32 / 2.0 / (middle.len() as f32 / rate as f32)
}

fn peak(samples: &[f32]) -> f32 {
    let middle = &samples[samples.len() / 10..samples.len() * 9 / 10];
    middle.iter().fold(0.0f32, |m, x| m.max(x.abs()))
}

fn assert_sine(samples: &[f32], rate: u32, what: &str) {
    let frequency = frequency(samples, rate);
    assert!((frequency - 440.0).abs() < 5.0, "{what}: {frequency} Hz");
    let peak = peak(samples);
    assert!(
        (peak - AMPLITUDE).abs() < 0.05 * AMPLITUDE,
        "{what}: peak {peak}"
    );
}

/// The tail survived the flush: where the decoded sine starts (after any codec delay), its
/// last 50 ms before the end are still at full level.
fn assert_tail_kept(samples: &[f32], len: usize, what: &str) {
    let start = samples.iter().position(|x| x.abs() > 0.1).unwrap_or(0);
    let tail = &samples[start + len - len / 30..start + len - len / 300];
    let rms = (tail.iter().map(|x| x * x).sum::<f32>() / tail.len() as f32).sqrt();
    let expected = AMPLITUDE / std::f32::consts::SQRT_2;
    assert!(
        (rms - expected).abs() < 0.1 * expected,
        "{what}: tail rms {rms}"
    );
}

fn pcm_samples(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32767.0)
        .collect()
}

#[test]
fn formats_parse_by_name() {
    for format in AudioFormat::ALL {
        assert_eq!(AudioFormat::parse(format.name()).unwrap(), format);
        assert!(format.content_type().starts_with("audio/"));
    }
    assert_eq!(AudioFormat::Opus.content_type(), "audio/ogg");
    let error = AudioFormat::parse("ogg-vorbis").unwrap_err();
    assert_eq!(error.param.as_deref(), Some("response_format"));
    assert!(error.message.contains("'ogg-vorbis'"), "{}", error.message);
    assert!(error.message.contains("mp3, opus, aac, flac, wav, pcm"));
    assert!(AudioFormat::parse("MP3").is_err());
}

#[test]
fn encoder_is_send() {
    fn send<T: Send>() {}
    send::<Encoder>();
    send::<Resampler>();
}

#[test]
fn resampler_is_exact_aligned_and_chunk_independent() {
    let input = sine(LEN, RATE);
    let mut whole = Resampler::new(RATE, 24_000).unwrap();
    let mut expected = whole.process(&input);
    expected.extend(whole.finish());
    assert_eq!(expected.len(), 36_000); // round(33075 · 24000 / 22050)

    // Uneven pieces give the same samples: no clicks at chunk boundaries.
    let mut chunked = Resampler::new(RATE, 24_000).unwrap();
    let mut output = Vec::new();
    for piece in [
        &input[..1],
        &input[1..700],
        &input[700..20_000],
        &input[20_000..],
    ] {
        output.extend(chunked.process(piece));
    }
    output.extend(chunked.finish());
    assert_eq!(output.len(), expected.len());
    let worst = output
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-4, "chunked differs by {worst}");

    // No delay: the output is the same sine sampled at 24 kHz (edges aside).
    let ideal = sine(36_000, 24_000);
    let error = output[500..35_500]
        .iter()
        .zip(&ideal[500..35_500])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(error < 0.005 * AMPLITUDE, "misaligned by up to {error}");

    // After finish it starts over; equal rates pass samples through; lengths round.
    assert_eq!(
        chunked.process(&input[..100]).len() + chunked.finish().len(),
        109
    );
    let mut same = Resampler::new(RATE, RATE).unwrap();
    assert_eq!(same.process(&input[..5]), &input[..5]);
    assert!(same.finish().is_empty());
    let mut down = Resampler::new(48_000, 16_000).unwrap();
    assert_eq!(
        down.process(&vec![0.1; 1000]).len() + down.finish().len(),
        333
    );
    assert!(Resampler::new(0, 24_000).is_err());
}

#[test]
fn pcm_is_24khz_16bit_and_keeps_the_sine() {
    for streaming in [true, false] {
        let (parts, rate) = encode_in_chunks(AudioFormat::Pcm, streaming);
        assert_eq!(rate, 24_000);
        let bytes = parts.concat();
        assert_eq!(bytes.len(), 36_000 * 2);
        assert_sine(&pcm_samples(&bytes), 24_000, "pcm");
        assert_tail_kept(&pcm_samples(&bytes), 36_000, "pcm");
    }
}

#[test]
fn wav_decodes_with_exact_or_streaming_sizes() {
    for streaming in [true, false] {
        let bytes = encode_file(AudioFormat::Wav, streaming);
        assert_eq!(bytes.len(), 44 + LEN * 2);
        let data_size = u32::from_le_bytes(bytes[40..44].try_into().unwrap());
        let riff_size = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        if streaming {
            assert_eq!((riff_size, data_size), (u32::MAX, u32::MAX));
        } else {
            assert_eq!(
                (riff_size, data_size),
                (36 + LEN as u32 * 2, LEN as u32 * 2)
            );
        }
        assert_eq!(
            pcm_samples(&bytes[44..]),
            pcm_samples(&le_bytes(&to_i16(&sine(LEN, RATE))))
        );
        let decoded = symphonia_decode(bytes, "wav");
        assert_eq!((decoded.rate, decoded.channels), (RATE, 1));
        if streaming {
            // symphonia 0.6 reads an unknown-length WAV in 1152-frame packets up to EOF and
            // drops the last partial one (other decoders play it): the bytes are all there.
            assert!(
                decoded.samples.len() > LEN - 1152,
                "{}",
                decoded.samples.len()
            );
        } else {
            assert_eq!(decoded.samples.len(), LEN);
        }
        assert_sine(&decoded.samples, RATE, "wav");
    }
}

#[test]
fn flac_decodes_losslessly_streaming_and_not() {
    let quantized: Vec<i16> = to_i16(&sine(LEN, RATE));
    for streaming in [true, false] {
        let bytes = encode_file(AudioFormat::Flac, streaming);
        // STREAMINFO: 36 bits of total samples at byte 8 + 13, then the MD5.
        let info = &bytes[8..42];
        let total = u64::from_be_bytes(info[10..18].try_into().unwrap()) & 0xF_FFFF_FFFF;
        let md5_is_zero = info[18..34].iter().all(|&b| b == 0);
        if streaming {
            assert_eq!((total, md5_is_zero), (0, true));
        } else {
            assert_eq!((total, md5_is_zero), (LEN as u64, false));
        }
        let decoded = symphonia_decode(bytes, "flac");
        assert_eq!((decoded.rate, decoded.channels), (RATE, 1));
        assert_eq!(decoded.samples.len(), LEN, "streaming {streaming}");
        let exact = decoded
            .samples
            .iter()
            .zip(&quantized)
            .all(|(&d, &q)| (d * 32768.0).round() as i16 == q);
        assert!(exact, "flac is lossless (streaming {streaming})");
        if !streaming {
            assert_eq!(decoded.verified, Some(true), "MD5");
        }
    }
}

#[test]
fn mp3_decodes_at_the_input_rate() {
    for streaming in [true, false] {
        let (parts, rate) = encode_in_chunks(AudioFormat::Mp3, streaming);
        assert_eq!(rate, RATE);
        let decoded = symphonia_decode(parts.concat(), "mp3");
        assert_eq!((decoded.rate, decoded.channels), (RATE, 1));
        let len = decoded.samples.len();
        if streaming {
            // No LAME tag: the decoder also plays the encoder delay and the last frame's
            // padding (LAME: 576 + 529 samples, then up to one 576-sample frame).
            assert!((LEN..=LEN + 576 * 4).contains(&len), "{len}");
        } else {
            // The LAME tag's delay and padding let the decoder trim to the exact length.
            assert!(len.abs_diff(LEN) <= LEN / 50, "{len}");
        }
        assert_sine(&decoded.samples, RATE, "mp3");
        assert_tail_kept(&decoded.samples, LEN, "mp3");
    }
}

#[test]
fn aac_decodes_as_adts_at_the_input_rate() {
    for streaming in [true, false] {
        let (parts, rate) = encode_in_chunks(AudioFormat::Aac, streaming);
        assert_eq!(rate, RATE);
        let bytes = parts.concat();
        assert_eq!(&bytes[..2], &[0xFF, 0xF1]); // ADTS sync, MPEG-4, no CRC
        let decoded = symphonia_decode(bytes, "aac");
        assert_eq!((decoded.rate, decoded.channels), (RATE, 1));
        // ADTS carries no gapless info: encoder delay plus last-frame padding, at most
        // about 3 frames of 1024 over.
        let len = decoded.samples.len();
        assert!((LEN..=LEN + 3 * 1024).contains(&len), "{len}");
        assert_sine(&decoded.samples, RATE, "aac");
        assert_tail_kept(&decoded.samples, LEN, "aac");
    }
}

#[test]
fn opus_is_valid_ogg_opus() {
    for streaming in [true, false] {
        let (parts, rate) = encode_in_chunks(AudioFormat::Opus, streaming);
        assert_eq!(rate, 24_000);
        let mut reader = ogg::reading::PacketReader::new(Cursor::new(parts.concat()));
        let head = reader.read_packet_expected().unwrap();
        assert!(head.first_in_stream() && head.last_in_page());
        assert_eq!(&head.data[..8], b"OpusHead");
        assert_eq!((head.data[8], head.data[9]), (1, 1)); // version, channels
        let pre_skip = u16::from_le_bytes([head.data[10], head.data[11]]) as usize;
        assert!(pre_skip > 0 && pre_skip < 48_000 / 50);
        assert_eq!(
            u32::from_le_bytes(head.data[12..16].try_into().unwrap()),
            RATE
        );
        assert_eq!(head.data[18], 0); // mapping family
        let tags = reader.read_packet_expected().unwrap();
        assert_eq!(&tags.data[..8], b"OpusTags");
        assert!(tags.last_in_page());

        let mut decoder = ::opus::Decoder::new(48_000, ::opus::Channels::Mono).unwrap();
        let mut decoded = Vec::new();
        let mut last = None;
        while let Some(packet) = reader.read_packet().unwrap() {
            let mut out = vec![0f32; 5760];
            let n = decoder.decode_float(&packet.data, &mut out, false).unwrap();
            assert_eq!(n, 960, "20 ms packets");
            decoded.extend_from_slice(&out[..n]);
            last = Some((packet.absgp_page(), packet.last_in_stream()));
        }
        // The final granule trims the last packet's padding: exactly 1.5 s after pre-skip.
        let (granule, end_of_stream) = last.unwrap();
        assert!(end_of_stream);
        assert_eq!(granule as usize, pre_skip + 72_000);
        assert!(decoded.len() >= granule as usize);
        let played = &decoded[pre_skip..granule as usize];
        assert_sine(played, 48_000, "opus");
        assert_tail_kept(played, 72_000, "opus");
    }
}

#[test]
fn streaming_sends_bytes_from_the_first_sentence() {
    // A sentence of 0.5 s: every format has bytes for it at once. (Pushes far shorter than a
    // codec frame may come back empty from pcm, mp3 and aac, which buffer up to a frame.)
    let sentence = sine(RATE as usize / 2, RATE);
    for format in AudioFormat::ALL {
        let mut encoder = Encoder::new(format, RATE, true).unwrap();
        let first = encoder.push(&sentence).unwrap();
        assert!(!first.is_empty(), "{format:?}");
        encoder.finish().unwrap();
        assert!(encoder.finish().is_err() && encoder.push(&sentence).is_err());
    }
}

#[test]
fn non_streaming_holds_everything_until_finish() {
    for format in AudioFormat::ALL {
        let (parts, _) = encode_in_chunks(format, false);
        assert!(parts[..3].iter().all(Vec::is_empty), "{format:?}");
        // Same file as one push, but for Ogg, where each push ends a page.
        if format != AudioFormat::Opus {
            let whole = encode(format, RATE, &sine(LEN, RATE)).unwrap();
            assert!(parts[3] == whole, "{format:?}");
        }
    }
}

#[test]
fn empty_speech_is_still_a_valid_file() {
    assert_eq!(encode(AudioFormat::Wav, RATE, &[]).unwrap().len(), 44);
    assert!(encode(AudioFormat::Pcm, RATE, &[]).unwrap().is_empty());
    // FLAC: "fLaC" and STREAMINFO alone (symphonia cannot probe a FLAC with no frame).
    assert_eq!(encode(AudioFormat::Flac, RATE, &[]).unwrap().len(), 42);
    for format in [AudioFormat::Mp3, AudioFormat::Aac, AudioFormat::Opus] {
        assert!(!encode(format, RATE, &[]).unwrap().is_empty(), "{format:?}");
    }
}

#[test]
fn codecs_get_a_rate_they_support() {
    let rate = |format, input| {
        Encoder::new(format, input, true)
            .unwrap()
            .output_sample_rate()
    };
    assert_eq!(rate(AudioFormat::Mp3, 44_100), 44_100);
    assert_eq!(rate(AudioFormat::Mp3, 22_051), 24_000);
    assert_eq!(rate(AudioFormat::Aac, 96_000), 96_000);
    assert_eq!(rate(AudioFormat::Aac, 192_000), 96_000);
    assert_eq!(rate(AudioFormat::Flac, 16_000), 16_000);
    assert_eq!(rate(AudioFormat::Opus, 48_000), 24_000);
    // A resampled mp3 still decodes at its own rate.
    let bytes = encode(AudioFormat::Mp3, 22_051, &sine(22_051, 22_051)).unwrap();
    let decoded = symphonia_decode(bytes, "mp3");
    assert_eq!(decoded.rate, 24_000);
    assert_sine(&decoded.samples, 24_000, "mp3 from 22051 Hz");
    assert!(Encoder::new(AudioFormat::Wav, 0, true).is_err());
}
