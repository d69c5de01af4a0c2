//! Speech input: the bytes of an uploaded audio file (`audio.transcriptions.create(file=...)`)
//! decoded to mono f32 at the rate a speech-to-text model wants (16 kHz for Whisper).
//!
//! Symphonia probes the container and demuxes it (WAV, FLAC, MP3, Ogg, Matroska/WebM, MP4/M4A,
//! ADTS) and decodes everything but Opus (PCM, ADPCM, FLAC, MP3, Vorbis, AAC). It has no Opus
//! decoder, so Opus packets (in Ogg or WebM) go to libopus, with the OpusHead pre-skip and output
//! gain applied and, in Ogg, the end trimmed to the last page's granule position. Where the
//! container records an encoder delay or padding that symphonia leaves in (an MP4 edit list: the
//! AAC priming; a compressed WAV's `fact` length), it is trimmed here.
//!
//! Decoding is packet by packet: each packet is down-mixed (channels averaged) and pushed through
//! the band-limited resampler of the speech-output path ([`Resampler`], rubato's FFT resampler)
//! as it comes, so only the output at the target rate is ever held whole, never the source at its
//! own rate. Malformed input is an invalid-request error about `file`, never a panic.

use super::Resampler;
use crate::error::{shown, Error, Result};
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use symphonia::core::codecs::audio::well_known::CODEC_ID_OPUS;
use symphonia::core::codecs::audio::{AudioCodecParameters, AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, FormatReader, Track, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::packet::Packet;

/// The containers/codecs that decode, for error messages: OpenAI's own list.
pub const SUPPORTED_AUDIO_FORMATS: &str =
    "flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, opus, wav, webm";

/// The longest audio decoded: 3 hours is 691 MB of 16 kHz samples. A few kilobytes of FLAC
/// of constant frames would otherwise expand to whatever memory there is.
pub const MAX_AUDIO_SECONDS: u64 = 3 * 3600;

/// Opus always decodes at 48 kHz here (its granule positions and pre-skip count 48 kHz samples).
const OPUS_RATE: u32 = 48_000;
/// The longest Opus packet: 120 ms at 48 kHz.
const OPUS_MAX_FRAMES: usize = 5_760;

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
    if target_rate == 0 {
        return Err(Error::internal("audio decode: target sample rate 0"));
    }
    if bytes.is_empty() {
        return Err(invalid_file(filename, "is empty"));
    }
    // Symphonia may panic on malformed data; that is a bad file, not a crash.
    catch_unwind(AssertUnwindSafe(|| decode(bytes, filename, target_rate))).unwrap_or_else(|_| {
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

fn decode(bytes: &[u8], filename: Option<&str>, target_rate: u32) -> Result<DecodedAudio> {
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
        .map_err(|e| match e {
            SymphoniaError::DecodeError(_) | SymphoniaError::LimitError(_) => {
                invalid_file(filename, &format!("could not be read ({e})"))
            }
            _ => invalid_file(filename, "is not in a supported audio format"),
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

    let mut mono = MonoResampler::new(target_rate);
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
    while !trim.done() {
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

/// Frames to drop at the start of a track and how many to keep after them, as a container's
/// ticks at its timescale (converted to frames at the decoded rate when audio arrives).
#[derive(Debug, Default, PartialEq)]
struct Trim {
    /// (ticks, timescale).
    skip: Option<(u64, u64)>,
    keep: Option<(u64, u64)>,
    /// Frames still to drop, and to keep: known once the decoded rate is.
    skip_frames: Option<u64>,
    keep_frames: Option<u64>,
}

impl Trim {
    /// Every frame to keep has been kept.
    fn done(&self) -> bool {
        self.keep_frames == Some(0)
    }

    /// The frames of a decoded buffer of `frames` frames at `rate` to keep.
    fn apply(&mut self, frames: usize, rate: u32) -> std::ops::Range<usize> {
        let to_frames = |(ticks, timescale): (u64, u64)| {
            let frames = (u128::from(ticks) * u128::from(rate) + u128::from(timescale) / 2)
                / u128::from(timescale.max(1));
            u64::try_from(frames).unwrap_or(u64::MAX)
        };
        let skip = self
            .skip_frames
            .get_or_insert_with(|| self.skip.map_or(0, to_frames));
        let start = (*skip).min(frames as u64);
        *skip -= start;
        let mut end = frames as u64;
        if let Some(keep) = self.keep {
            let keep = self.keep_frames.get_or_insert_with(|| to_frames(keep));
            end = end.min(start + *keep);
            *keep -= end - start;
        }
        start as usize..end as usize
    }
}

/// An MP4 track's edit list (ISO/IEC 14496-12 §8.6.6): the encoder delay to skip (its first
/// non-empty edit's media time) and the length to keep (that edit's duration), as AAC encoders
/// record their priming and padding. `None` without an edit list, or with one of several edits.
fn mp4_edit(bytes: &[u8], track_id: u32) -> Option<Trim> {
    // (version, body after the full-box header).
    fn full_box(body: &[u8]) -> Option<(u8, &[u8])> {
        Some((*body.first()?, body.get(4..)?))
    }
    // mvhd and mdhd: the timescale after the creation and modification times.
    fn timescale(body: &[u8]) -> Option<u64> {
        let (version, body) = full_box(body)?;
        let at = if version == 1 { 16 } else { 8 };
        Some(u32::from_be_bytes(body.get(at..at + 4)?.try_into().ok()?).into())
    }
    let moov = mp4_child(bytes, b"moov")?;
    let movie_timescale = timescale(mp4_child(moov, b"mvhd")?)?;
    for trak in mp4_boxes(moov)
        .filter(|(kind, _)| kind == b"trak")
        .map(|(_, body)| body)
    {
        let (version, tkhd) = full_box(mp4_child(trak, b"tkhd")?)?;
        let at = if version == 1 { 16 } else { 8 };
        if u32::from_be_bytes(tkhd.get(at..at + 4)?.try_into().ok()?) != track_id {
            continue;
        }
        let media_timescale = timescale(mp4_child(mp4_child(trak, b"mdia")?, b"mdhd")?)?;
        let (version, elst) = full_box(mp4_child(mp4_child(trak, b"edts")?, b"elst")?)?;
        let count = u32::from_be_bytes(elst.get(..4)?.try_into().ok()?) as usize;
        let size = if version == 1 { 20 } else { 12 };
        let mut edits = elst
            .get(4..)?
            .chunks_exact(size)
            .take(count)
            .filter_map(|entry| {
                let (duration, media_time) = if version == 1 {
                    (
                        u64::from_be_bytes(entry[..8].try_into().ok()?),
                        i64::from_be_bytes(entry[8..16].try_into().ok()?),
                    )
                } else {
                    (
                        u32::from_be_bytes(entry[..4].try_into().ok()?).into(),
                        i32::from_be_bytes(entry[4..8].try_into().ok()?).into(),
                    )
                };
                // -1: an empty edit (a pause before the media), which we do not play.
                (media_time >= 0).then_some((duration, media_time as u64))
            });
        let (duration, media_time) = edits.next()?;
        if edits.next().is_some() {
            return None;
        }
        return Some(Trim {
            skip: Some((media_time, media_timescale)),
            // 0: "the rest of the media" (fragmented files).
            keep: (duration > 0).then_some((duration, movie_timescale)),
            ..Trim::default()
        });
    }
    None
}

/// The boxes in `data`: (type, body).
fn mp4_boxes(mut data: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    std::iter::from_fn(move || {
        let size = u32::from_be_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let kind: [u8; 4] = data.get(4..8)?.try_into().ok()?;
        let (header, size) = match size {
            0 => (8, data.len()),
            1 => (
                16,
                usize::try_from(u64::from_be_bytes(data.get(8..16)?.try_into().ok()?)).ok()?,
            ),
            size => (8, size),
        };
        let body = data.get(header..size)?;
        data = &data[size..];
        Some((kind, body))
    })
}

fn mp4_child<'a>(data: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    mp4_boxes(data)
        .find(|(k, _)| k == kind)
        .map(|(_, body)| body)
}

/// A compressed WAV's `fact` chunk: its length in frames, where the last block's padding is not.
fn wav_fact(bytes: &[u8], sample_rate: Option<u32>) -> Option<Trim> {
    let mut data = bytes.get(12..)?;
    while data.len() >= 8 {
        let size = u32::from_le_bytes(data[4..8].try_into().ok()?) as usize;
        if &data[..4] == b"fact" {
            let frames = u32::from_le_bytes(data.get(8..12)?.try_into().ok()?);
            let rate = sample_rate?;
            return (frames > 0).then_some(Trim {
                keep: Some((frames.into(), rate.into())),
                ..Trim::default()
            });
        }
        if &data[..4] == b"data" {
            return None;
        }
        data = data.get(8 + size + size % 2..)?;
    }
    None
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
    fn new(target_rate: u32) -> Self {
        MonoResampler {
            target_rate,
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
        if self.output.len() as u64 > MAX_AUDIO_SECONDS * u64::from(self.target_rate) {
            return Err(Error::invalid(
                "file",
                format!(
                    "The audio file is longer than {} hours, the most ingle transcribes in one \
                     request; split it",
                    MAX_AUDIO_SECONDS / 3600
                ),
            ));
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

/// An Opus track through libopus, at 48 kHz: RFC 7845's OpusHead (from the Ogg identification
/// header or Matroska's CodecPrivate) gives the channels, the channel mapping, the pre-skip and
/// the output gain.
struct OpusDecoder {
    libopus: Libopus,
    channels: usize,
    /// 48 kHz frames still to drop from the start (the encoder's delay).
    pre_skip: u64,
    /// Linear output gain.
    gain: f32,
    /// Frames of the last packet, for the loss concealment of an empty one.
    last_frames: usize,
    buffer: Vec<f32>,
}

enum Libopus {
    /// Mapping family 0: mono or stereo, one stream.
    Plain(opus::Decoder),
    /// Other families: up to 255 channels in several streams.
    Multistream(Multistream),
}

/// The fields of an OpusHead packet (RFC 7845 §5.1) that decoding needs.
#[derive(Debug, PartialEq)]
struct OpusHead {
    channels: u8,
    pre_skip: u16,
    /// Q7.8 dB.
    gain: i16,
    family: u8,
    streams: u8,
    coupled: u8,
    mapping: Vec<u8>,
}

impl OpusHead {
    fn parse(data: &[u8]) -> std::result::Result<OpusHead, String> {
        let bad = |what: &str| format!("has a malformed Opus header ({what})");
        if data.len() < 19 || &data[..8] != b"OpusHead" {
            return Err(bad("no OpusHead"));
        }
        // Major version 0 is the one this reads; later minor versions are compatible.
        if data[8] >> 4 != 0 {
            return Err(bad("unknown version"));
        }
        let channels = data[9];
        let pre_skip = u16::from_le_bytes([data[10], data[11]]);
        let gain = i16::from_le_bytes([data[16], data[17]]);
        let family = data[18];
        if channels == 0 {
            return Err(bad("0 channels"));
        }
        let (streams, coupled, mapping) = if family == 0 {
            if channels > 2 {
                return Err(bad("more than 2 channels in mapping family 0"));
            }
            (1, channels - 1, (0..channels).collect())
        } else {
            let end = 21 + usize::from(channels);
            if data.len() < end {
                return Err(bad("short channel mapping table"));
            }
            let (streams, coupled) = (data[19], data[20]);
            if streams == 0 || coupled > streams {
                return Err(bad("bad stream counts"));
            }
            (streams, coupled, data[21..end].to_vec())
        };
        Ok(OpusHead {
            channels,
            pre_skip,
            gain,
            family,
            streams,
            coupled,
            mapping,
        })
    }
}

impl OpusDecoder {
    fn new(params: &AudioCodecParameters) -> std::result::Result<OpusDecoder, String> {
        let head = match params.extra_data.as_deref() {
            Some(data) => OpusHead::parse(data)?,
            // No OpusHead (a Matroska track without CodecPrivate): stereo decodes any
            // mono/stereo stream.
            None => OpusHead {
                channels: 2,
                pre_skip: 0,
                gain: 0,
                family: 0,
                streams: 1,
                coupled: 1,
                mapping: vec![0, 1],
            },
        };
        let failed = |e: String| format!("has an Opus stream libopus cannot decode ({e})");
        let libopus = if head.family == 0 {
            let channels = if head.channels == 1 {
                opus::Channels::Mono
            } else {
                opus::Channels::Stereo
            };
            Libopus::Plain(
                opus::Decoder::new(OPUS_RATE, channels).map_err(|e| failed(e.to_string()))?,
            )
        } else {
            Libopus::Multistream(
                Multistream::new(head.channels, head.streams, head.coupled, &head.mapping)
                    .map_err(failed)?,
            )
        };
        let channels = usize::from(head.channels);
        Ok(OpusDecoder {
            libopus,
            channels,
            pre_skip: head.pre_skip.into(),
            gain: 10f32.powf(f32::from(head.gain) / (20.0 * 256.0)),
            last_frames: 960,
            buffer: vec![0.0; OPUS_MAX_FRAMES * channels],
        })
    }

    /// Decodes one packet into `out` (interleaved, possibly empty once trimmed): drops the
    /// pre-skip still due, then `trim_start` and `trim_end` frames (the container's trims).
    fn decode(
        &mut self,
        packet: &[u8],
        trim_start: u64,
        trim_end: u64,
        out: &mut Vec<f32>,
    ) -> std::result::Result<(), String> {
        out.clear();
        // An empty packet is a lost one (or DTX): conceal it at the last packet's length.
        let frames = if packet.is_empty() {
            self.last_frames
        } else {
            OPUS_MAX_FRAMES
        };
        let buffer = &mut self.buffer[..frames * self.channels];
        let decoded = match &mut self.libopus {
            Libopus::Plain(decoder) => decoder
                .decode_float(packet, buffer, false)
                .map_err(|e| format!("opus: {e}"))?,
            Libopus::Multistream(decoder) => decoder.decode_float(packet, buffer, frames)?,
        };
        let decoded = decoded.min(frames);
        if decoded > 0 {
            self.last_frames = decoded;
        }
        let skip_start = (self.pre_skip.saturating_add(trim_start)).min(decoded as u64);
        self.pre_skip = self.pre_skip.saturating_sub(skip_start);
        let skip_end = trim_end.min(decoded as u64 - skip_start);
        let (start, end) = (skip_start as usize, decoded - skip_end as usize);
        let gain = self.gain;
        out.extend(
            buffer[start * self.channels..end * self.channels]
                .iter()
                .map(|&x| x * gain),
        );
        Ok(())
    }
}

/// libopus's multistream decoder (channel mapping families 1 and 255), which the `opus` crate
/// does not wrap.
struct Multistream {
    decoder: std::ptr::NonNull<opusic_sys::OpusMSDecoder>,
}

// SAFETY: the decoder state is owned and only used through `&mut self`.
unsafe impl Send for Multistream {}

impl Multistream {
    fn new(
        channels: u8,
        streams: u8,
        coupled: u8,
        mapping: &[u8],
    ) -> std::result::Result<Multistream, String> {
        if mapping.len() != usize::from(channels) {
            return Err("channel mapping length".to_string());
        }
        let mut error = 0;
        // SAFETY: `mapping` holds `channels` bytes, as libopus reads; it validates the rest.
        let decoder = unsafe {
            opusic_sys::opus_multistream_decoder_create(
                OPUS_RATE as i32,
                channels.into(),
                streams.into(),
                coupled.into(),
                mapping.as_ptr(),
                &mut error,
            )
        };
        match std::ptr::NonNull::new(decoder) {
            Some(decoder) if error == opusic_sys::OPUS_OK => Ok(Multistream { decoder }),
            Some(decoder) => {
                // SAFETY: created above and not used again.
                unsafe { opusic_sys::opus_multistream_decoder_destroy(decoder.as_ptr()) };
                Err(opus_error(error))
            }
            None => Err(opus_error(error)),
        }
    }

    /// Decodes into `pcm` (`frames` × channels interleaved); returns the frames decoded.
    fn decode_float(
        &mut self,
        packet: &[u8],
        pcm: &mut [f32],
        frames: usize,
    ) -> std::result::Result<usize, String> {
        let data = if packet.is_empty() {
            std::ptr::null()
        } else {
            packet.as_ptr()
        };
        let length = i32::try_from(packet.len()).map_err(|_| "opus: packet too long")?;
        // SAFETY: `pcm` holds `frames` × channels floats (the caller sizes it so), `data` is
        // `length` bytes or null (loss concealment).
        let decoded = unsafe {
            opusic_sys::opus_multistream_decode_float(
                self.decoder.as_ptr(),
                data,
                length,
                pcm.as_mut_ptr(),
                frames as i32,
                0,
            )
        };
        usize::try_from(decoded).map_err(|_| opus_error(decoded))
    }
}

impl Drop for Multistream {
    fn drop(&mut self) {
        // SAFETY: created by opus_multistream_decoder_create and destroyed once.
        unsafe { opusic_sys::opus_multistream_decoder_destroy(self.decoder.as_ptr()) };
    }
}

fn opus_error(code: i32) -> String {
    // SAFETY: opus_strerror returns a static C string for any code.
    let text = unsafe { std::ffi::CStr::from_ptr(opusic_sys::opus_strerror(code)) };
    format!("opus: {}", text.to_string_lossy())
}

#[cfg(test)]
mod tests {
    //! Each format made from a real recording by ffmpeg at test time, decoded and compared with
    //! the recording; and files that are not audio, which must be errors about `file`.

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
            let dir =
                std::env::temp_dir().join(format!("ingle-decode-{}-{name}", std::process::id()));
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
    #[ignore = "slow in debug builds; measures the whole process's peak memory"]
    fn long_stereo_holds_only_the_output() {
        if !have_ffmpeg() {
            return;
        }
        let dir = TempDir::new("long");
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
}
