//! FLAC through flacenc: 16-bit mono, fixed 4096-sample blocks encoded as they fill.

use super::{failed, Codec};
use crate::error::Result;
use flacenc::bitsink::ByteSink;
use flacenc::component::{BitRepr, Stream, StreamInfo};
use flacenc::config;
use flacenc::error::{Verified, Verify};
use flacenc::source::{Context, Fill, FrameBuf};

const BLOCK: usize = 4096;

pub(super) struct Flac {
    config: Verified<config::Encoder>,
    /// The streaming STREAMINFO: total samples and MD5 0 ("unknown"), frame sizes 0.
    info: StreamInfo,
    /// The block being encoded, and the running sample count, frame number and MD5.
    block: (FrameBuf, Context),
    pending: Vec<i32>,
    frame_sizes: Option<(usize, usize)>,
    started: bool,
}

impl Flac {
    pub(super) fn new(rate: u32) -> Result<Self> {
        let mut info = StreamInfo::new(rate as usize, 1, 16).map_err(|e| failed("flac", e))?;
        info.set_block_sizes(BLOCK, BLOCK)
            .and_then(|()| info.set_frame_sizes(0, 0))
            .map_err(|e| failed("flac", e))?;
        let config = config::Encoder::default()
            .into_verified()
            .map_err(|(_, e)| failed("flac", e))?;
        Ok(Flac {
            config,
            info,
            block: (
                FrameBuf::with_size(1, BLOCK).map_err(|e| failed("flac", e))?,
                Context::new(16, 1),
            ),
            pending: Vec::new(),
            frame_sizes: None,
            started: false,
        })
    }

    /// Encodes whole blocks of `pending`, or everything left when `last`.
    fn encode(&mut self, last: bool, sink: &mut ByteSink) -> Result<()> {
        if !std::mem::replace(&mut self.started, true) {
            write(&Stream::with_stream_info(self.info.clone()), sink)?;
        }
        let whole = if last {
            self.pending.len()
        } else {
            self.pending.len() / BLOCK * BLOCK
        };
        for samples in self.pending[..whole].chunks(BLOCK) {
            self.block
                .fill_interleaved(samples)
                .map_err(|e| failed("flac", e))?;
            let number = self.block.1.current_frame_number().unwrap_or(0);
            let frame =
                flacenc::encode_fixed_size_frame(&self.config, &self.block.0, number, &self.info)
                    .map_err(|e| failed("flac", e))?;
            let before = sink.len();
            write(&frame, sink)?;
            let size = (sink.len() - before) / 8;
            let (min, max) = self.frame_sizes.unwrap_or((size, size));
            self.frame_sizes = Some((min.min(size), max.max(size)));
        }
        self.pending.drain(..whole);
        Ok(())
    }
}

impl Codec for Flac {
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>> {
        self.pending.extend(pcm.iter().map(|&x| i32::from(x)));
        let mut sink = ByteSink::new();
        self.encode(false, &mut sink)?;
        Ok(sink.into_inner())
    }

    fn finish(&mut self) -> Result<Vec<u8>> {
        let mut sink = ByteSink::new();
        self.encode(true, &mut sink)?;
        Ok(sink.into_inner())
    }

    /// The STREAMINFO of a normal encode: total samples, MD5 and frame sizes (same length).
    fn patch(&mut self, file: &mut [u8]) -> Result<()> {
        let mut info = self.info.clone();
        let context = &self.block.1;
        info.set_total_samples(context.total_samples());
        info.set_md5_digest(&context.md5_digest());
        let (min, max) = self.frame_sizes.unwrap_or((0, 0));
        info.set_frame_sizes(min, max)
            .map_err(|e| failed("flac", e))?;
        let mut sink = ByteSink::new();
        write(&Stream::with_stream_info(info), &mut sink)?;
        let header = sink.into_inner();
        file[..header.len()].copy_from_slice(&header);
        Ok(())
    }
}

fn write(component: &impl BitRepr, sink: &mut ByteSink) -> Result<()> {
    component.write(sink).map_err(|e| failed("flac", e))
}
