//! Opus through libopus (symphonia has no Opus decoder), at 48 kHz, with RFC 7845's OpusHead:
//! the channel mapping, the pre-skip and the output gain.

use symphonia::core::codecs::audio::AudioCodecParameters;

/// Opus always decodes at 48 kHz here (its granule positions and pre-skip count 48 kHz samples).
pub(super) const OPUS_RATE: u32 = 48_000;
/// The longest Opus packet: 120 ms at 48 kHz.
pub(super) const OPUS_MAX_FRAMES: usize = 5_760;

/// An Opus track through libopus, at 48 kHz: RFC 7845's OpusHead (from the Ogg identification
/// header or Matroska's CodecPrivate) gives the channels, the channel mapping, the pre-skip and
/// the output gain.
pub(super) struct OpusDecoder {
    pub(super) libopus: Libopus,
    pub(super) channels: usize,
    /// 48 kHz frames still to drop from the start (the encoder's delay).
    pub(super) pre_skip: u64,
    /// Linear output gain.
    pub(super) gain: f32,
    /// Frames of the last packet, for the loss concealment of an empty one.
    pub(super) last_frames: usize,
    pub(super) buffer: Vec<f32>,
}

pub(super) enum Libopus {
    /// Mapping family 0: mono or stereo, one stream.
    Plain(opus::Decoder),
    /// Other families: up to 255 channels in several streams.
    Multistream(Multistream),
}

/// The fields of an OpusHead packet (RFC 7845 §5.1) that decoding needs.
#[derive(Debug, PartialEq)]
pub(super) struct OpusHead {
    pub(super) channels: u8,
    pub(super) pre_skip: u16,
    /// Q7.8 dB.
    pub(super) gain: i16,
    pub(super) family: u8,
    pub(super) streams: u8,
    pub(super) coupled: u8,
    pub(super) mapping: Vec<u8>,
}

impl OpusHead {
    pub(super) fn parse(data: &[u8]) -> std::result::Result<OpusHead, String> {
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
    pub(super) fn new(params: &AudioCodecParameters) -> std::result::Result<OpusDecoder, String> {
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
    pub(super) fn decode(
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
pub(super) struct Multistream {
    decoder: std::ptr::NonNull<opusic_sys::OpusMSDecoder>,
}

// SAFETY: the decoder state is owned and only used through `&mut self`.
unsafe impl Send for Multistream {}

impl Multistream {
    pub(super) fn new(
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
    pub(super) fn decode_float(
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

pub(super) fn opus_error(code: i32) -> String {
    // SAFETY: opus_strerror returns a static C string for any code.
    let text = unsafe { std::ffi::CStr::from_ptr(opusic_sys::opus_strerror(code)) };
    format!("opus: {}", text.to_string_lossy())
}
