//! Audio in and out. Out: mono f32 samples from a text-to-speech model, encoded as each OpenAI
//! `response_format` (`audio.speech.create`). Encoding is incremental: the speech code pushes one
//! sentence at a time and sends whatever bytes are ready, so a streamed response starts playing
//! before the whole text is spoken.
//!
//! Each codec writes its streaming form (headers that do not need the total length); when the
//! caller encodes the whole signal before sending ([`Encoder::new`] with `streaming: false`), the
//! bytes are held until [`Encoder::finish`], which patches the header with the exact length
//! (WAV sizes, FLAC total samples and MD5, the MP3 LAME tag with its gapless delay and padding).
//!
//! In: [`decode_to_mono`] turns an uploaded audio file into mono samples at the rate a
//! transcription model wants (`decode.rs`, with `resample.rs`), and [`to_mono`] does the same for
//! raw samples; [`down_mix_into`] is the one down-mix of both directions.

mod aac;
pub mod decode;
mod flac;
mod mp3;
mod opus;
pub(crate) mod resample;
pub(crate) mod stretch;
mod wav;

#[cfg(test)]
mod tests;

pub(crate) use decode::decode_to_mono_for;
pub use decode::{decode_to_mono, DecodedAudio, SUPPORTED_AUDIO_FORMATS};
pub use resample::Resampler;

use crate::error::{shown, Error, Result};

/// An OpenAI speech `response_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    Mp3,
    Opus,
    Aac,
    Flac,
    Wav,
    Pcm,
}

impl AudioFormat {
    pub const ALL: [AudioFormat; 6] = [
        AudioFormat::Mp3,
        AudioFormat::Opus,
        AudioFormat::Aac,
        AudioFormat::Flac,
        AudioFormat::Wav,
        AudioFormat::Pcm,
    ];

    /// The format of a `response_format` value.
    pub fn parse(name: &str) -> Result<AudioFormat> {
        AudioFormat::ALL
            .into_iter()
            .find(|format| format.name() == name)
            .ok_or_else(|| {
                Error::invalid(
                    "response_format",
                    format!(
                        "Invalid response_format '{}': must be one of mp3, opus, aac, flac, wav, pcm",
                        shown(name)
                    ),
                )
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Opus => "opus",
            AudioFormat::Aac => "aac",
            AudioFormat::Flac => "flac",
            AudioFormat::Wav => "wav",
            AudioFormat::Pcm => "pcm",
        }
    }

    /// The rate audio made at `sample_rate` is encoded at: 24000 for pcm (what OpenAI sends) and
    /// opus (which has no 22.05 kHz mode), else `sample_rate` unless the codec cannot code it
    /// (mp3, aac: the next rate up that it can).
    pub fn output_rate(self, sample_rate: u32) -> u32 {
        match self {
            AudioFormat::Pcm => 24_000,
            AudioFormat::Opus => opus::RATE,
            AudioFormat::Mp3 => supported_rate(sample_rate, &mp3::RATES),
            AudioFormat::Aac => supported_rate(sample_rate, &aac::RATES),
            AudioFormat::Flac | AudioFormat::Wav => sample_rate,
        }
    }

    /// The HTTP `Content-Type` OpenAI answers with.
    pub fn content_type(self) -> &'static str {
        match self {
            AudioFormat::Mp3 => "audio/mpeg",
            AudioFormat::Opus => "audio/ogg",
            AudioFormat::Aac => "audio/aac",
            AudioFormat::Flac => "audio/flac",
            AudioFormat::Wav => "audio/wav",
            AudioFormat::Pcm => "audio/pcm",
        }
    }
}

/// One codec, fed 16-bit samples already at its output rate.
trait Codec: Send {
    /// Encodes these samples; returns the bytes ready now, in the streaming form.
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>>;
    /// Flushes the codec; returns the last bytes.
    fn finish(&mut self) -> Result<Vec<u8>>;
    /// Non-streaming only: rewrites the header of the whole file now that its length is known.
    fn patch(&mut self, _file: &mut [u8]) -> Result<()> {
        Ok(())
    }
}

/// Streaming encoder: push samples as they are synthesised, get the bytes that are ready.
pub struct Encoder {
    resampler: Option<Resampler>,
    codec: Box<dyn Codec>,
    output_rate: u32,
    /// Non-streaming: every byte so far, returned by `finish` once the header can be exact.
    held: Option<Vec<u8>>,
    finished: bool,
}

impl Encoder {
    /// `sample_rate`: rate of the f32 mono samples pushed. `streaming`: true when the caller sends
    /// bytes before the end (formats whose header needs the total length then use their streaming
    /// forms); false when the whole signal is encoded before any byte is sent (exact headers).
    pub fn new(format: AudioFormat, sample_rate: u32, streaming: bool) -> Result<Encoder> {
        if sample_rate == 0 {
            return Err(Error::internal("audio sample rate 0"));
        }
        let output_rate = format.output_rate(sample_rate);
        let codec: Box<dyn Codec> = match format {
            AudioFormat::Pcm => Box::new(Pcm),
            AudioFormat::Wav => Box::new(wav::Wav::new(output_rate)),
            AudioFormat::Flac => Box::new(flac::Flac::new(output_rate)?),
            AudioFormat::Mp3 => Box::new(mp3::Mp3::new(output_rate, streaming)?),
            AudioFormat::Aac => Box::new(aac::Aac::new(output_rate)?),
            AudioFormat::Opus => Box::new(opus::Opus::new(sample_rate)?),
        };
        let resampler = if output_rate == sample_rate {
            None
        } else {
            Some(Resampler::new(sample_rate, output_rate)?)
        };
        Ok(Encoder {
            resampler,
            codec,
            output_rate,
            held: (!streaming).then(Vec::new),
            finished: false,
        })
    }

    /// Encodes these samples; returns the bytes ready to send now (may be empty: always empty
    /// when not streaming). Called once per sentence.
    pub fn push(&mut self, samples: &[f32]) -> Result<Vec<u8>> {
        if self.finished {
            return Err(Error::internal("audio encoder used after finish"));
        }
        let pcm = match &mut self.resampler {
            Some(resampler) => to_i16(&resampler.process(samples)),
            None => to_i16(samples),
        };
        let bytes = self.codec.push(&pcm)?;
        Ok(self.hold(bytes))
    }

    /// Flushes everything; returns the last bytes. After this the concatenation of every
    /// returned Vec is a complete valid file/stream.
    pub fn finish(&mut self) -> Result<Vec<u8>> {
        if self.finished {
            return Err(Error::internal("audio encoder finished twice"));
        }
        self.finished = true;
        let mut bytes = match &mut self.resampler {
            Some(resampler) => self.codec.push(&to_i16(&resampler.finish()))?,
            None => Vec::new(),
        };
        bytes.extend(self.codec.finish()?);
        match self.held.take() {
            None => Ok(bytes),
            Some(mut file) => {
                file.extend(bytes);
                self.codec.patch(&mut file)?;
                Ok(file)
            }
        }
    }

    /// Rate of the encoded audio: 24000 for pcm and opus, else the input rate unless the codec
    /// cannot code it (mp3, aac: the next rate up that it can).
    pub fn output_sample_rate(&self) -> u32 {
        self.output_rate
    }

    fn hold(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        match &mut self.held {
            Some(held) => {
                held.extend(bytes);
                Vec::new()
            }
            None => bytes,
        }
    }
}

/// Convenience: the whole signal, non-streaming form.
pub fn encode(format: AudioFormat, sample_rate: u32, samples: &[f32]) -> Result<Vec<u8>> {
    let mut encoder = Encoder::new(format, sample_rate, false)?;
    encoder.push(samples)?;
    encoder.finish()
}

/// Interleaved frames of `channels` channels averaged to one channel, appended to `out` (the
/// one down-mix: speech output, uploaded audio, audio given to a predictor). A last frame cut
/// short is averaged over the channels it has.
pub fn down_mix_into(interleaved: &[f32], channels: usize, out: &mut Vec<f32>) {
    out.extend(
        interleaved
            .chunks(channels.max(1))
            .map(|frame| frame.iter().sum::<f32>() / frame.len() as f32),
    );
}

/// Raw 16-bit little-endian mono, no header (OpenAI's `pcm`).
struct Pcm;

impl Codec for Pcm {
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>> {
        Ok(le_bytes(pcm))
    }
    fn finish(&mut self) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }
}

/// Samples clamped to [-1, 1], scaled by 32767 and rounded.
fn to_i16(samples: &[f32]) -> Vec<i16> {
    samples
        .iter()
        .map(|&x| (x.clamp(-1.0, 1.0) * 32767.0).round() as i16)
        .collect()
}

fn le_bytes(pcm: &[i16]) -> Vec<u8> {
    pcm.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `rate` if the codec supports it, else the lowest supported rate above it (else the highest).
fn supported_rate(rate: u32, supported: &[u32]) -> u32 {
    let max = supported.iter().copied().max().unwrap_or(rate);
    supported
        .iter()
        .copied()
        .filter(|&r| r >= rate)
        .min()
        .unwrap_or(max)
}

/// An encoder library's error, as ours.
fn failed(what: &str, error: impl std::fmt::Display) -> Error {
    Error::internal(format!("{what}: {error}"))
}

/// Raw samples (any rate from 1000 to 768000 Hz, 1 to 64 interleaved channels, at most the
/// hours [`decode::MAX_AUDIO_SECONDS`] allows) as mono at `rate`: checked, down-mixed, resampled.
/// Errors name `param`. Mono audio at `rate` is moved through, not copied.
pub fn to_mono(audio: crate::value::Audio, rate: u32, param: &str) -> Result<Vec<f32>> {
    let channels = audio.channels as usize;
    if !crate::value::SAMPLE_RATES.contains(&audio.sample_rate) {
        return Err(Error::invalid(
            param,
            format!(
                "`{param}` has a sample rate of {} Hz; it must be 1000 to 768000 Hz",
                audio.sample_rate
            ),
        ));
    }
    if !(1..=64).contains(&channels) || !audio.samples.len().is_multiple_of(channels) {
        return Err(Error::invalid(
            param,
            format!(
                "`{param}` has {} samples in {} channels: it needs 1 to 64 channels and a whole \
                 number of frames",
                audio.samples.len(),
                audio.channels
            ),
        ));
    }
    let seconds = (audio.samples.len() / channels) as u64 / u64::from(audio.sample_rate);
    if seconds > decode::MAX_AUDIO_SECONDS {
        return Err(Error::invalid(
            param,
            format!(
                "`{param}` lasts {seconds} s, longer than the {} hours ingle transcribes in one \
                 request; split it",
                decode::MAX_AUDIO_SECONDS / 3600
            ),
        ));
    }
    let mono: Vec<f32> = if channels == 1 {
        audio.samples // moved, not copied: an hour is 230 MB
    } else {
        let mut mono = Vec::with_capacity(audio.samples.len() / channels);
        down_mix_into(&audio.samples, channels, &mut mono);
        mono
    };
    if let Some(i) = mono.iter().position(|x| !x.is_finite()) {
        return Err(Error::invalid(
            param,
            format!("`{param}` has a sample that is not a finite number (at {i})"),
        ));
    }
    if audio.sample_rate == rate {
        return Ok(mono);
    }
    let mut resampler = resample::Resampler::new(audio.sample_rate, rate)?;
    let mut out = resampler.process(&mono);
    out.extend(resampler.finish());
    Ok(out)
}
