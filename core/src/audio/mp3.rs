//! MP3 through LAME: mono, CBR 64 kbit/s.

use super::{failed, Codec};
use crate::error::{Error, Result};
use mp3lame_encoder::{Bitrate, Builder, FlushGap, Mode, MonoPcm, Quality};

/// The MPEG-1, 2 and 2.5 sample rates.
pub(super) const RATES: [u32; 9] = [
    8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000,
];

pub(super) struct Mp3 {
    lame: mp3lame_encoder::Encoder,
}

impl Mp3 {
    /// Not streaming, LAME starts the stream with an empty frame that `patch` fills with the
    /// LAME tag (encoder delay and padding, so decoders trim them: exact length). Streaming,
    /// there is no tag: a decoder plays the delay (about 50 ms) as leading silence.
    pub(super) fn new(rate: u32, streaming: bool) -> Result<Self> {
        let mut builder =
            Builder::new().ok_or_else(|| Error::internal("mp3: LAME could not allocate"))?;
        let setup = |b: &mut Builder| {
            b.set_num_channels(1)?;
            b.set_sample_rate(rate)?;
            b.set_output_sample_rate(std::num::NonZeroU32::new(rate))?;
            b.set_mode(Mode::Mono)?;
            b.set_brate(Bitrate::Kbps64)?;
            b.set_quality(Quality::Good)?;
            b.set_to_write_vbr_tag(!streaming)
        };
        setup(&mut builder).map_err(|e| failed("mp3 settings", e))?;
        let lame = builder.build().map_err(|e| failed("mp3 encoder", e))?;
        Ok(Mp3 { lame })
    }
}

impl Codec for Mp3 {
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(pcm.len()));
        if !pcm.is_empty() {
            self.lame
                .encode_to_vec(MonoPcm(pcm), &mut bytes)
                .map_err(|e| failed("mp3", e))?;
        }
        Ok(bytes)
    }

    fn finish(&mut self) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(7200); // LAME's documented need for the last frames
        self.lame
            .flush_to_vec::<FlushGap>(&mut bytes)
            .map_err(|e| failed("mp3", e))?;
        Ok(bytes)
    }

    fn patch(&mut self, file: &mut [u8]) -> Result<()> {
        let mut tag = Vec::with_capacity(self.lame.lame_tag_size());
        if self.lame.lame_tag_encode_to_vec(&mut tag).is_some() && tag.len() <= file.len() {
            file[..tag.len()].copy_from_slice(&tag);
        }
        Ok(())
    }
}
