//! AAC-LC in ADTS frames through Fraunhofer FDK AAC: mono, CBR 64 kbit/s.

use super::{failed, Codec};
use crate::error::{Error, Result};
use fdk_aac::enc::{AudioObjectType, BitRate, ChannelMode, EncoderParams, Transport};

/// The sample rates an ADTS header can name.
pub(super) const RATES: [u32; 12] = [
    8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000, 64_000, 88_200, 96_000,
];

pub(super) struct Aac {
    fdk: fdk_aac::enc::Encoder,
    out: Vec<u8>,
    /// Samples per frame (1024) and the encoder's delay, in samples.
    frame_len: u64,
    delay: u64,
    samples_in: u64,
    frames_out: u64,
}

impl Aac {
    pub(super) fn new(rate: u32) -> Result<Self> {
        let fdk = fdk_aac::enc::Encoder::new(EncoderParams {
            bit_rate: BitRate::Cbr(64_000),
            sample_rate: rate,
            transport: Transport::Adts,
            channels: ChannelMode::Mono,
            audio_object_type: AudioObjectType::Mpeg4LowComplexity,
        })
        .map_err(|e| failed("aac encoder", e))?;
        let info = fdk.info().map_err(|e| failed("aac encoder", e))?;
        Ok(Aac {
            fdk,
            out: vec![0; info.maxOutBufBytes as usize],
            frame_len: info.frameLength.into(),
            delay: info.nDelay.into(),
            samples_in: 0,
            frames_out: 0,
        })
    }

    /// Feeds samples; FDK takes what fits its buffer and returns at most one frame per call.
    fn encode(&mut self, mut pcm: &[i16]) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        loop {
            let done = self
                .fdk
                .encode(pcm, &mut self.out)
                .map_err(|e| failed("aac", e))?;
            pcm = &pcm[done.input_consumed.min(pcm.len())..];
            if done.output_size > 0 {
                bytes.extend_from_slice(&self.out[..done.output_size]);
                self.frames_out += 1;
            } else if done.input_consumed == 0 {
                return Ok(bytes);
            }
        }
    }
}

impl Codec for Aac {
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>> {
        self.samples_in += pcm.len() as u64;
        self.encode(pcm)
    }

    /// The fdk-aac crate cannot signal end of input, so silence pushes the encoder's delay out:
    /// frames until the last real sample is in one (what FDK's own flush would do).
    fn finish(&mut self) -> Result<Vec<u8>> {
        let silence = vec![0i16; self.frame_len as usize];
        let mut bytes = Vec::new();
        for _ in 0..64 {
            if self.frames_out * self.frame_len >= self.samples_in + self.delay {
                return Ok(bytes);
            }
            bytes.extend(self.encode(&silence)?);
        }
        Err(Error::internal("aac: the encoder did not flush"))
    }
}
