//! RIFF/WAVE, 16-bit PCM mono.

use super::{le_bytes, Codec};
use crate::error::Result;

const HEADER_LEN: usize = 44;

pub(super) struct Wav {
    rate: u32,
    started: bool,
}

impl Wav {
    pub(super) fn new(rate: u32) -> Self {
        Wav {
            rate,
            started: false,
        }
    }

    /// The header once, first: sizes 0xFFFFFFFF ("unknown, read to the end"), as OpenAI
    /// streams wav; `patch` writes the real ones when the whole file is known.
    fn start(&mut self) -> Vec<u8> {
        if std::mem::replace(&mut self.started, true) {
            return Vec::new();
        }
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend(b"RIFF");
        header.extend(u32::MAX.to_le_bytes());
        header.extend(b"WAVEfmt ");
        header.extend(16u32.to_le_bytes()); // fmt chunk size
        header.extend(1u16.to_le_bytes()); // PCM
        header.extend(1u16.to_le_bytes()); // mono
        header.extend(self.rate.to_le_bytes());
        header.extend(self.rate.saturating_mul(2).to_le_bytes()); // bytes per second
        header.extend(2u16.to_le_bytes()); // bytes per frame
        header.extend(16u16.to_le_bytes()); // bits per sample
        header.extend(b"data");
        header.extend(u32::MAX.to_le_bytes());
        header
    }
}

impl Codec for Wav {
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>> {
        let mut bytes = self.start();
        bytes.extend(le_bytes(pcm));
        Ok(bytes)
    }

    fn finish(&mut self) -> Result<Vec<u8>> {
        Ok(self.start())
    }

    fn patch(&mut self, file: &mut [u8]) -> Result<()> {
        // Past 4 GiB the sizes cannot be written: the streaming form's 0xFFFFFFFF stays.
        let data_len = (file.len() - HEADER_LEN) as u64;
        if let (Ok(riff), Ok(data)) = (u32::try_from(data_len + 36), u32::try_from(data_len)) {
            file[4..8].copy_from_slice(&riff.to_le_bytes());
            file[40..44].copy_from_slice(&data.to_le_bytes());
        }
        Ok(())
    }
}
