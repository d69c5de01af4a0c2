//! Ogg Opus (RFC 7845) through libopus: mono at 24 kHz, 20 ms packets.

use super::{failed, Codec};
use crate::error::Result;
use ogg::writing::{PacketWriteEndInfo, PacketWriter};

/// The rate we code at (the encoder resamples to it first).
pub(super) const RATE: u32 = 24_000;
/// 20 ms at 24 kHz.
const FRAME: usize = 480;
/// Granule positions count 48 kHz samples whatever the coded rate.
const GRANULE_PER_SAMPLE: u64 = (48_000 / RATE) as u64;
/// One logical stream per file, so any serial number will do; fixed for reproducible output.
const SERIAL: u32 = 0x696e_676c;

pub(super) struct Opus {
    libopus: opus::Encoder,
    ogg: PacketWriter<'static, Vec<u8>>,
    input_rate: u32,
    /// The encoder's lookahead at 24 kHz: the decoder drops it (OpusHead pre-skip).
    lookahead: u64,
    /// Samples not yet making a whole packet.
    pending: Vec<i16>,
    samples_in: u64,
    packets: u64,
    started: bool,
}

impl Opus {
    /// `input_rate`: the rate the model spoke at, recorded in OpusHead.
    pub(super) fn new(input_rate: u32) -> Result<Self> {
        let mut libopus = opus::Encoder::new(RATE, opus::Channels::Mono, opus::Application::Audio)
            .map_err(|e| failed("opus encoder", e))?;
        libopus
            .set_bitrate(opus::Bitrate::Bits(32_000))
            .map_err(|e| failed("opus encoder", e))?;
        let lookahead = libopus
            .get_lookahead()
            .map_err(|e| failed("opus encoder", e))?;
        Ok(Opus {
            libopus,
            ogg: PacketWriter::new(Vec::new()),
            input_rate,
            lookahead: lookahead.max(0) as u64,
            pending: Vec::new(),
            samples_in: 0,
            packets: 0,
            started: false,
        })
    }

    /// OpusHead and OpusTags, each on its own page, before the first audio packet.
    fn start(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.started, true) {
            return Ok(());
        }
        let pre_skip = u16::try_from(self.lookahead * GRANULE_PER_SAMPLE).unwrap_or(u16::MAX);
        let mut head = b"OpusHead".to_vec();
        head.push(1); // version
        head.push(1); // channels
        head.extend(pre_skip.to_le_bytes());
        head.extend(self.input_rate.to_le_bytes());
        head.extend(0i16.to_le_bytes()); // output gain
        head.push(0); // channel mapping family: mono/stereo
        let vendor = opus::version();
        let mut tags = b"OpusTags".to_vec();
        tags.extend((vendor.len() as u32).to_le_bytes());
        tags.extend(vendor.as_bytes());
        tags.extend(0u32.to_le_bytes()); // no user comments
        for header in [head, tags] {
            self.ogg
                .write_packet(header, SERIAL, PacketWriteEndInfo::EndPage, 0)
                .map_err(|e| failed("ogg", e))?;
        }
        Ok(())
    }

    /// Encodes the whole packets in `pending`, the last one ending the page (or the stream,
    /// with `end_granule`) so each push's pages go out at once.
    fn encode(&mut self, end_granule: Option<u64>) -> Result<()> {
        let count = self.pending.len() / FRAME;
        let mut packet = [0u8; 1500];
        for (i, frame) in self.pending.chunks_exact(FRAME).enumerate() {
            let len = self
                .libopus
                .encode(frame, &mut packet)
                .map_err(|e| failed("opus", e))?;
            self.packets += 1;
            let last = i + 1 == count;
            let (end, granule) = match end_granule {
                Some(granule) if last => (PacketWriteEndInfo::EndStream, granule),
                _ if last => (PacketWriteEndInfo::EndPage, self.granule()),
                _ => (PacketWriteEndInfo::NormalPacket, self.granule()),
            };
            self.ogg
                .write_packet(packet[..len].to_vec(), SERIAL, end, granule)
                .map_err(|e| failed("ogg", e))?;
        }
        self.pending.drain(..count * FRAME);
        Ok(())
    }

    /// The end of the packets so far, in 48 kHz samples (pre-skip included).
    fn granule(&self) -> u64 {
        self.packets * FRAME as u64 * GRANULE_PER_SAMPLE
    }
}

impl Codec for Opus {
    fn push(&mut self, pcm: &[i16]) -> Result<Vec<u8>> {
        self.start()?;
        self.pending.extend_from_slice(pcm);
        self.samples_in += pcm.len() as u64;
        self.encode(None)?;
        Ok(std::mem::take(self.ogg.inner_mut()))
    }

    /// Silence pushes the lookahead out; the last page's granule (pre-skip + real samples)
    /// tells decoders to drop the padding of the last packet.
    fn finish(&mut self) -> Result<Vec<u8>> {
        self.start()?;
        let needed = (self.samples_in + self.lookahead).div_ceil(FRAME as u64);
        let packets_left = needed.saturating_sub(self.packets).max(1) as usize;
        self.pending.resize(packets_left * FRAME, 0);
        let end = (self.lookahead + self.samples_in) * GRANULE_PER_SAMPLE;
        self.encode(Some(end))?;
        Ok(std::mem::take(self.ogg.inner_mut()))
    }
}
