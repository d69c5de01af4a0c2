//! What a container records of an encoder's delay and padding, which symphonia leaves in: an
//! MP4 edit list (the AAC priming) and a compressed WAV's `fact` length, trimmed as audio arrives.

/// Frames to drop at the start of a track and how many to keep after them, as a container's
/// ticks at its timescale (converted to frames at the decoded rate when audio arrives).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Trim {
    /// (ticks, timescale).
    pub(super) skip: Option<(u64, u64)>,
    pub(super) keep: Option<(u64, u64)>,
    /// Frames still to drop, and to keep: known once the decoded rate is.
    pub(super) skip_frames: Option<u64>,
    pub(super) keep_frames: Option<u64>,
}

impl Trim {
    /// Every frame to keep has been kept.
    pub(super) fn done(&self) -> bool {
        self.keep_frames == Some(0)
    }

    /// The frames of a decoded buffer of `frames` frames at `rate` to keep.
    pub(super) fn apply(&mut self, frames: usize, rate: u32) -> std::ops::Range<usize> {
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
pub(super) fn mp4_edit(bytes: &[u8], track_id: u32) -> Option<Trim> {
    // (version, body after the full-box header).
    pub(super) fn full_box(body: &[u8]) -> Option<(u8, &[u8])> {
        Some((*body.first()?, body.get(4..)?))
    }
    // mvhd and mdhd: the timescale after the creation and modification times.
    pub(super) fn timescale(body: &[u8]) -> Option<u64> {
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
pub(super) fn mp4_boxes(mut data: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
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

pub(super) fn mp4_child<'a>(data: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    mp4_boxes(data)
        .find(|(k, _)| k == kind)
        .map(|(_, body)| body)
}

/// A compressed WAV's `fact` chunk: its length in frames, where the last block's padding is not.
pub(super) fn wav_fact(bytes: &[u8], sample_rate: Option<u32>) -> Option<Trim> {
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
