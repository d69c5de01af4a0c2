//! Speech input: the bytes of an uploaded audio file (`audio.transcriptions.create(file=...)`)
//! decoded to mono f32 at the rate a speech-to-text model wants (16 kHz for Whisper).
//!
//! Symphonia probes the container and demuxes it (WAV, FLAC, MP3, Ogg, Matroska/WebM, MP4/M4A,
//! ADTS) and decodes everything but Opus (PCM, ADPCM, FLAC, MP3, Vorbis, AAC). It has no Opus
//! decoder, so Opus packets (in Ogg or WebM) go to libopus (`opus.rs`), with the OpusHead pre-skip and output
//! gain applied and, in Ogg, the end trimmed to the last page's granule position. Where the
//! container records an encoder delay or padding that symphonia leaves in (an MP4 edit list: the
//! AAC priming; a compressed WAV's `fact` length), it is trimmed here (`trim.rs`).
//!
//! Decoding is packet by packet: each packet is down-mixed (channels averaged) and pushed through
//! the band-limited resampler of the speech-output path ([`Resampler`], rubato's FFT resampler)
//! as it comes, so only the output at the target rate is ever held whole, never the source at its
//! own rate. Malformed input is an invalid-request error about `file`, never a panic.

use super::Resampler;
use crate::error::{shown, Error, Result};
use crate::predict::Cancel;
use opus::{OpusDecoder, OPUS_RATE};
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use symphonia::core::codecs::audio::well_known::CODEC_ID_OPUS;
use symphonia::core::codecs::audio::{AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, FormatReader, Track, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::packet::Packet;
use trim::{mp4_edit, wav_fact};

mod opus;
#[cfg(test)]
mod tests;
mod trim;

/// The containers/codecs that decode, for error messages: OpenAI's own list.
pub const SUPPORTED_AUDIO_FORMATS: &str =
    "flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, opus, wav, webm";

/// The longest audio decoded: 3 hours is 691 MB of 16 kHz samples. A few kilobytes of FLAC
/// of constant frames would otherwise expand to whatever memory there is.
pub const MAX_AUDIO_SECONDS: u64 = 3 * 3600;

/// An uploaded file's audio, mono at the requested rate.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedAudio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    /// Seconds of the source.
    pub duration: f64,
    /// The container, and the codec where the container can hold several: "wav", "mp3", "flac",
    /// "ogg/vorbis", "ogg/opus", "webm/opus", "m4a/aac", ...
    pub format: String,
}

/// Decodes `bytes` (any sample rate, any channel count) to mono f32 at `target_rate`,
/// down-mixing by averaging channels and resampling with a band-limited (FFT) resampler; a
/// source already mono at `target_rate` passes through untouched. `filename` is only a hint
/// (its extension) for probing, and is quoted in error messages.
///
/// Errors: an empty, corrupt, truncated-to-nothing or unsupported file, or one with no audio, is
/// an invalid-request error about `file` whose message ends with the supported formats.
pub fn decode_to_mono(
    bytes: &[u8],
    filename: Option<&str>,
    target_rate: u32,
) -> Result<DecodedAudio> {
    decode_to_mono_for(bytes, filename, target_rate, &Cancel::default())
}

/// [`decode_to_mono`] for a call that `cancel` stops: asked every few packets, so that a
/// client that went away stops the work (a [`crate::ErrorKind::Cancelled`] error). Hours of
/// audio take a minute of CPU to decode.
pub(crate) fn decode_to_mono_for(
    bytes: &[u8],
    filename: Option<&str>,
    target_rate: u32,
    cancel: &Cancel,
) -> Result<DecodedAudio> {
    decode_to_mono_limited(bytes, filename, target_rate, MAX_AUDIO_SECONDS, cancel)
}

/// [`decode_to_mono_for`] refusing audio longer than `max_seconds` (from the container's header
/// before decoding where it says, else as the output grows): a chat request's audio parts
/// share a smaller budget than a transcription's file.
pub(crate) fn decode_to_mono_limited(
    bytes: &[u8],
    filename: Option<&str>,
    target_rate: u32,
    max_seconds: u64,
    cancel: &Cancel,
) -> Result<DecodedAudio> {
    if target_rate == 0 {
        return Err(Error::internal("audio decode: target sample rate 0"));
    }
    if bytes.is_empty() {
        return Err(invalid_file(filename, "is empty"));
    }
    // Symphonia may panic on malformed data; that is a bad file, not a crash.
    catch_unwind(AssertUnwindSafe(|| {
        decode(
            bytes,
            filename,
            target_rate,
            max_seconds.min(MAX_AUDIO_SECONDS),
            cancel,
        )
    }))
    .unwrap_or_else(|_| {
        Err(invalid_file(
            filename,
            "could not be decoded: the data is malformed",
        ))
    })
}

/// The invalid-request error about `file`: "The audio file ['name'] {what}. Supported formats: …".
fn invalid_file(filename: Option<&str>, what: &str) -> Error {
    let name = filename
        .filter(|name| !name.is_empty())
        .map(|name| format!(" '{}'", shown(name)))
        .unwrap_or_default();
    Error::invalid(
        "file",
        format!("The audio file{name} {what}. Supported formats: {SUPPORTED_AUDIO_FORMATS}"),
    )
}

/// The error for audio past `max_seconds` ([`MAX_AUDIO_SECONDS`] for a transcription).
fn too_long(max_seconds: u64) -> Error {
    let most = if max_seconds.is_multiple_of(3600) {
        format!("{} hours", max_seconds / 3600)
    } else {
        format!("{} minutes", max_seconds.div_ceil(60))
    };
    Error::invalid(
        "file",
        format!(
            "The audio file is longer than {most}, the most ingle takes in one request; split it"
        ),
    )
}

fn decode(
    bytes: &[u8],
    filename: Option<&str>,
    target_rate: u32,
    max_seconds: u64,
    cancel: &Cancel,
) -> Result<DecodedAudio> {
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes)), Default::default());
    let mut hint = Hint::new();
    if let Some(extension) = filename.and_then(extension) {
        hint.with_extension(&extension);
    }
    let mut reader = symphonia::default::get_probe()
        .probe(
            &hint,
            source,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|e| match (e, container_of(bytes)) {
            // symphonia reports a missing part (a truncated file) as unsupported too.
            (SymphoniaError::Unsupported(what), Some(container))
                if !what.contains("missing") && !what.contains("truncated") =>
            {
                invalid_file(
                    filename,
                    &format!("looks like {container} but holds what ingle cannot read ({what})"),
                )
            }
            // The magic says what it is, so it is damaged, not unsupported.
            (e, Some(container)) => invalid_file(
                filename,
                &format!("looks like {container} but is truncated or corrupt ({e})"),
            ),
            (e @ (SymphoniaError::DecodeError(_) | SymphoniaError::LimitError(_)), None) => {
                invalid_file(filename, &format!("could not be read ({e})"))
            }
            (_, None) => invalid_file(filename, "is not in a supported audio format"),
        })?;

    let track = choose_track(reader.as_ref(), filename)?;
    let track_id = track.id;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|params| params.audio())
        .cloned()
        .ok_or_else(|| invalid_file(filename, "contains no audio track"))?;
    let mut decoder = if params.codec == CODEC_ID_OPUS {
        TrackDecoder::Opus(OpusDecoder::new(&params).map_err(|e| invalid_file(filename, &e))?)
    } else {
        let decoder = symphonia::default::get_codecs()
            .make_audio_decoder(&params, &AudioDecoderOptions::default())
            .map_err(|e| {
                invalid_file(
                    filename,
                    &format!("has an audio track that cannot be decoded ({e})"),
                )
            })?;
        TrackDecoder::Symphonia(decoder)
    };
    let format = format_name(reader.as_ref(), bytes, filename, decoder.codec_name());

    // Refused before decoding when the container says it is too long (a header can lie the
    // other way too: the decoded length is checked as it grows).
    if let (Some(frames), Some(rate)) = (track.num_frames, params.sample_rate) {
        // Not for WAV: its length is bounded by its bytes, and a WAV written as a stream says
        // 4 GB where it does not know.
        let bounded_by_size = reader.format_info().short_name == "wave";
        if rate > 0 && !bounded_by_size && frames / u64::from(rate) > max_seconds {
            return Err(too_long(max_seconds));
        }
    }
    let mut mono = MonoResampler::new(target_rate, max_seconds);
    // Room for the whole output where the container says how long the track is (no regrowing
    // of a long output), unless that is implausible for the file's size: a header can lie.
    if let (Some(frames), Some(rate)) = (track.num_frames, params.sample_rate) {
        if rate > 0 {
            let expected = frames.saturating_mul(target_rate.into()) / u64::from(rate);
            if expected <= 25 * bytes.len() as u64 {
                mono.output.reserve(expected as usize + 1);
            }
        }
    }
    // Encoder delay and padding the container records but symphonia does not apply.
    let mut trim = match reader.format_info().short_name {
        "isomp4" => mp4_edit(bytes, track_id),
        "wave" if decoder.codec_name() != "pcm" => wav_fact(bytes, params.sample_rate),
        _ => None,
    }
    .unwrap_or_default();
    let mut interleaved: Vec<f32> = Vec::new();
    // The first error of a packet that would not decode (skipped, as players do).
    let mut packet_error: Option<String> = None;
    let mut packets: u64 = 0;
    while !trim.done() {
        if packets.is_multiple_of(64) && cancel.is_cancelled() {
            return Err(Error::cancelled("The request was cancelled"));
        }
        packets += 1;
        let packet = match reader.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            // A truncated file (or a WAV whose header gives no length): decode what is there.
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break
            }
            // Chained streams (a new Ogg stream): the first one is the recording.
            Err(SymphoniaError::ResetRequired) => break,
            // Corrupt data after some audio: keep the audio, as a player would.
            Err(_) if mono.frames_in() > 0 => break,
            Err(e) => return Err(invalid_file(filename, &format!("could not be read ({e})"))),
        };
        if packet.track_id != track_id {
            continue;
        }
        match decoder.decode(&packet, &mut interleaved) {
            Ok(Some((channels, rate))) => {
                if !crate::value::SAMPLE_RATES.contains(&rate) {
                    return Err(invalid_file(
                        filename,
                        &format!("has an unsupported sample rate ({rate} Hz)"),
                    ));
                }
                let frames = trim.apply(interleaved.len() / channels, rate);
                mono.push(
                    &interleaved[frames.start * channels..frames.end * channels],
                    channels,
                    rate,
                )?;
            }
            Ok(None) => {}
            Err(e) => {
                packet_error.get_or_insert(e);
            }
        }
    }
    let duration = mono.finish();
    if mono.output.is_empty() {
        let what = match packet_error {
            Some(e) => format!("could not be decoded ({e})"),
            None => "contains no audio".to_string(),
        };
        return Err(invalid_file(filename, &what));
    }
    Ok(DecodedAudio {
        samples: mono.output,
        sample_rate: target_rate,
        duration,
        format,
    })
}

/// The container a file's first bytes announce, among those ingle reads.
fn container_of(bytes: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| bytes.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"RIFF") && at(8, b"WAVE") {
        Some("WAV")
    } else if at(0, b"fLaC") {
        Some("FLAC")
    } else if at(0, b"OggS") {
        Some("Ogg")
    } else if at(0, &[0x1A, 0x45, 0xDF, 0xA3]) {
        Some("WebM/Matroska")
    } else if at(4, b"ftyp") {
        Some("MP4/M4A")
    } else if at(0, b"ID3") {
        Some("MP3")
    } else {
        None
    }
}

/// The file name's extension, lowercase, as symphonia's probe knows it.
fn extension(filename: &str) -> Option<String> {
    let extension = std::path::Path::new(filename)
        .extension()?
        .to_str()?
        .to_ascii_lowercase();
    Some(match extension.as_str() {
        "mpga" | "mpeg" => "mp3".to_string(),
        "oga" | "opus" => "ogg".to_string(),
        _ => extension,
    })
}

/// The audio track to decode: the container's default audio track when we can decode it, else
/// the first one we can.
fn choose_track(reader: &dyn FormatReader, filename: Option<&str>) -> Result<Track> {
    let decodable = |track: &&Track| {
        track
            .codec_params
            .as_ref()
            .and_then(|params| params.audio())
            .is_some_and(|params| {
                params.codec == CODEC_ID_OPUS
                    || symphonia::default::get_codecs()
                        .get_audio_decoder(params.codec)
                        .is_some()
            })
    };
    if let Some(track) = reader
        .default_track(TrackType::Audio)
        .filter(decodable)
        .or_else(|| reader.tracks().iter().find(decodable))
    {
        return Ok(track.clone());
    }
    let has_audio = reader
        .tracks()
        .iter()
        .any(|track| track.track_type() == Some(TrackType::Audio));
    Err(invalid_file(
        filename,
        if has_audio {
            "has an audio track in a codec that is not supported"
        } else {
            "contains no audio track"
        },
    ))
}

/// "wav", "mp3", "flac", "aac" where the container implies the codec; else "container/codec".
fn format_name(
    reader: &dyn FormatReader,
    bytes: &[u8],
    filename: Option<&str>,
    codec: &str,
) -> String {
    let container = match reader.format_info().short_name {
        "wave" => return "wav".to_string(),
        name @ ("mp1" | "mp2" | "mp3" | "flac" | "aac") => return name.to_string(),
        "matroska" => {
            // The EBML header's DocType, within its first few dozen bytes.
            let head = &bytes[..bytes.len().min(64)];
            if head.windows(4).any(|w| w == b"webm") {
                "webm"
            } else {
                "mkv"
            }
        }
        "isomp4" => {
            // ftyp's major brand says M4A for an audio-only file; the name may say so too.
            let m4a_brand = bytes.len() >= 12 && matches!(&bytes[8..12], b"M4A " | b"M4B ");
            let m4a_name = filename
                .and_then(extension)
                .is_some_and(|extension| extension == "m4a");
            if m4a_brand || m4a_name {
                "m4a"
            } else {
                "mp4"
            }
        }
        name => name,
    };
    format!("{container}/{codec}")
}

/// The decoder of the chosen track: symphonia's, or libopus for Opus.
enum TrackDecoder {
    Symphonia(Box<dyn AudioDecoder>),
    Opus(OpusDecoder),
}

impl TrackDecoder {
    fn codec_name(&self) -> &'static str {
        match self {
            TrackDecoder::Opus(_) => "opus",
            TrackDecoder::Symphonia(decoder) => {
                let name = decoder.codec_info().short_name;
                if name.starts_with("pcm") {
                    "pcm"
                } else if name.starts_with("adpcm") {
                    "adpcm"
                } else {
                    name
                }
            }
        }
    }

    /// Decodes one packet into `interleaved`; returns its (channels, sample rate), or `None`
    /// when it gave no samples. An error is a packet that would not decode.
    fn decode(
        &mut self,
        packet: &Packet,
        interleaved: &mut Vec<f32>,
    ) -> std::result::Result<Option<(usize, u32)>, String> {
        match self {
            TrackDecoder::Symphonia(decoder) => {
                let buffer = match decoder.decode(packet) {
                    Ok(buffer) => buffer,
                    Err(SymphoniaError::ResetRequired) => {
                        decoder.reset();
                        return Ok(None);
                    }
                    Err(e) => return Err(e.to_string()),
                };
                let channels = buffer.spec().channels().count();
                let rate = buffer.spec().rate();
                if buffer.frames() == 0 || channels == 0 {
                    return Ok(None);
                }
                buffer.copy_to_vec_interleaved(interleaved);
                Ok(Some((channels, rate)))
            }
            TrackDecoder::Opus(decoder) => {
                let trim_start = packet.trim_start.get();
                let trim_end = packet.trim_end.get();
                decoder.decode(&packet.data, trim_start, trim_end, interleaved)?;
                Ok((!interleaved.is_empty()).then_some((decoder.channels, OPUS_RATE)))
            }
        }
    }
}

/// Channels averaged, then resampled incrementally; the source rate may change between packets
/// (each run at one rate is resampled on its own and flushed when the rate changes).
struct MonoResampler {
    target_rate: u32,
    max_seconds: u64,
    /// The resampler of the current run and its source rate.
    current: Option<(Resampler, u32)>,
    /// Source frames in the current run.
    run_frames: u64,
    /// Seconds of source in the finished runs.
    seconds: f64,
    frames_total: u64,
    mixed: Vec<f32>,
    output: Vec<f32>,
}

impl MonoResampler {
    fn new(target_rate: u32, max_seconds: u64) -> Self {
        MonoResampler {
            target_rate,
            max_seconds,
            current: None,
            run_frames: 0,
            seconds: 0.0,
            frames_total: 0,
            mixed: Vec::new(),
            output: Vec::new(),
        }
    }

    fn frames_in(&self) -> u64 {
        self.frames_total
    }

    /// Interleaved samples of `channels` channels at `rate`.
    fn push(&mut self, interleaved: &[f32], channels: usize, rate: u32) -> Result<()> {
        if self
            .current
            .as_ref()
            .is_some_and(|(_, current)| *current != rate)
        {
            self.finish_run();
        }
        let (resampler, _) = match &mut self.current {
            Some(current) => current,
            none => none.insert((Resampler::new(rate, self.target_rate)?, rate)),
        };
        let frames = interleaved.len() / channels;
        let mono: &[f32] = if channels == 1 {
            interleaved
        } else {
            self.mixed.clear();
            super::down_mix_into(interleaved, channels, &mut self.mixed);
            &self.mixed
        };
        self.output.extend(resampler.process(mono));
        if self.output.len() as u64 > self.max_seconds * u64::from(self.target_rate) {
            return Err(too_long(self.max_seconds));
        }
        self.run_frames += frames as u64;
        self.frames_total += frames as u64;
        Ok(())
    }

    fn finish_run(&mut self) {
        if let Some((mut resampler, rate)) = self.current.take() {
            self.output.extend(resampler.finish());
            self.seconds += self.run_frames as f64 / f64::from(rate);
        }
        self.run_frames = 0;
    }

    /// Flushes the resampler; returns the seconds of source decoded.
    fn finish(&mut self) -> f64 {
        self.finish_run();
        self.seconds
    }
}
