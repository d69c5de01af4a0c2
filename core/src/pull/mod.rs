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

mod assemble;
pub mod catalog;
mod download;
mod http;
pub mod hub;
#[doc(hidden)]
pub mod zip;

pub use catalog::{Catalog, Entry as CatalogEntry};

pub use download::INTERRUPTED;

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use assemble::{assemble, sha256_file};
use download::retrying;
use http::Http;
use serde::Serialize;
use std::collections::HashMap;
use std::fs::{self, File};
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
    /// What the user should know (a Hub repo's vision projector left aside, a cached copy used
    /// offline).
    pub notes: Vec<String>,
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
    /// Left out of `ingle pull --all` (pulled by its tag only).
    pub optional: bool,
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

/// The pull of `tag`'s reports to `progress`: a `false` from it cancels (an error).
fn emitter<'a>(
    tag: &'a str,
    progress: &'a mut dyn FnMut(&PullEvent) -> bool,
) -> impl FnMut(PullStatus, Option<&str>, u64, u64) -> Result<()> + 'a {
    move |status, file: Option<&str>, completed, total| {
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
    }
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
                optional: e.optional,
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
        // A Hugging Face reference: into the Hub's shared cache.
        if let Some(reference) = hub::HubRef::parse(tag)? {
            return hub::pull(self, &reference, progress);
        }
        // ONNX Runtime's GPU build comes along where it can be used (see `Entry::with_cuda`).
        let cuda = crate::devices::cuda_allowed_and_driver();
        let entries = self.catalog.to_pull(tag, cuda).ok_or_else(|| {
            Error::new(
                crate::ErrorKind::NotFound,
                format!(
                    "ingle knows no model `{}` to pull; the catalog has: {}",
                    crate::error::shown(tag),
                    self.catalog.tags().join(", ")
                ),
            )
            .with_param("model")
            .with_code(ErrorCode::ModelNotFound)
        })?;
        let mut report = PullReport {
            tag: tag.to_string(),
            status: "success",
            models_dir: self.models_dir.clone(),
            files: Vec::new(),
            downloaded_bytes: 0,
            notes: Vec::new(),
        };
        let mut emit = emitter(tag, &mut *progress);
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
        drop(emit);
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
}

/// A failure on this machine (disk full, permissions), not in the download: what was
/// downloaded is kept.
fn local_error(doing: &str, path: &Path, e: std::io::Error) -> Error {
    Error::model(format!("Cannot {doing} {}: {e}", path.display()))
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
