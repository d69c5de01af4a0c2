//! The Hub's download protocol, as `huggingface_hub` speaks it (its `file_download.py`):
//!
//! 1. `GET {endpoint}/api/models/{repo}/revision/{rev}`: the commit a revision names;
//! 2. `GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true`: every file, with its git
//!    blob sha1 and, for a large (LFS) file, its sha256 (pages follow `Link: rel="next"`);
//! 3. per file, `HEAD {endpoint}/{repo}/resolve/{commit}/{path}`, redirects not followed: a large
//!    file answers 302 to a CDN with `X-Linked-Etag` (its sha256) and `X-Linked-Size`; a relative
//!    redirect (a renamed repo) is followed on the endpoint;
//! 4. its bytes from there into `blobs/ETAG.incomplete`, resumed with a range request after a
//!    cut, checked against its sha256 (a small file: its git blob sha1), only then renamed to
//!    `blobs/ETAG` and linked from the snapshot; then `refs/{rev}`.
//!
//! The token (`Authorization: Bearer`) goes only to the endpoint's own host, never to a CDN.
//! One download of a blob at a time, across processes, on `.locks/models--ORG--REPO/ETAG.lock`:
//! the same `flock` that huggingface_hub's `filelock` takes.

use super::super::download::{interrupted, read_some, retrying, INTERRUPTED};
use super::super::http::{self, download_error, Range, RawAnswer};
use super::super::{
    local_error, Emit, PullEvent, PullReport, PullStatus, PulledFile, Puller, Stamp,
};
use super::answer::{next_page, revision_commit, tree_page, TreeFile};
use super::blob::{hashes, link, write_atomically};
use super::{detect, find_cached, HubRef, HubSettings};
use crate::error::ErrorCode;
use crate::error::{shown, Error, ErrorKind, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

/// Most bytes of an API answer read (a big repo's tree page is a few MB).
const API_LIMIT: u64 = 64 << 20;
/// Most pages and files of a repo's tree read (the Hub's pages hold 1,000 files; its largest
/// model repos list some tens of thousands): a hub that pages on forever is refused.
const MAX_TREE_PAGES: usize = 1_000;
const MAX_TREE_FILES: usize = 1_000_000;
/// Most relative redirects followed on the endpoint (renamed repos).
const MAX_REDIRECTS: usize = 5;

/// Makes `reference`'s model present and verified in the Hub cache: the files its kind needs,
/// linked from the snapshot of the commit its revision names.
pub fn pull(
    puller: &Puller,
    reference: &HubRef,
    progress: &mut dyn FnMut(&PullEvent) -> bool,
) -> Result<PullReport> {
    let settings = HubSettings::from_env();
    let tag = reference.to_string();
    let mut emit = super::super::emitter(&tag, progress);
    let cached_report = |cached: super::Cached, note: Option<String>| PullReport {
        tag: cached.reference.to_string(),
        status: "success",
        models_dir: settings.cache.clone(),
        files: cached
            .selection
            .files
            .iter()
            .map(|f| PulledFile {
                tag: cached.reference.to_string(),
                path: f.clone(),
                size: fs::metadata(cached.snapshot.join(f)).map_or(0, |m| m.len()),
                sha256: String::new(),
                fetched: false,
            })
            .collect(),
        downloaded_bytes: 0,
        notes: cached.selection.notes.iter().cloned().chain(note).collect(),
    };
    if settings.offline {
        return match find_cached(&settings, reference)? {
            Some(cached) => {
                emit(PullStatus::Success, None, 0, 0).ok();
                Ok(cached_report(
                    cached,
                    Some(
                        "HF_HUB_OFFLINE is set: the cached copy, unchecked against the Hub".into(),
                    ),
                ))
            }
            None => Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "HF_HUB_OFFLINE is set and `{}` is not in the Hugging Face cache ({}); \
                     unset it to download the model",
                    shown(&tag),
                    settings.cache.display()
                ),
            )
            .with_param("model")
            .with_code(ErrorCode::ModelNotFound)),
        };
    }
    let hub = Hub {
        puller,
        settings: &settings,
        reference,
    };
    let commit = match hub.commit() {
        // No network: what the cache holds is served, as huggingface_hub does.
        Err(e)
            if matches!(
                e.code,
                Some(ErrorCode::DownloadUnreachable | ErrorCode::DownloadServerError)
            ) =>
        {
            return match find_cached(&settings, reference)? {
                Some(cached) => {
                    emit(PullStatus::Success, None, 0, 0).ok();
                    let note = format!("{}; the cached copy is used", e.message);
                    Ok(cached_report(cached, Some(note)))
                }
                None => Err(e),
            };
        }
        other => other?,
    };
    let tree = hub.tree(&commit)?;
    let listing: Vec<(String, u64)> = tree.iter().map(|f| (f.path.clone(), f.size)).collect();
    let selection = detect::select(reference, &listing)?;
    let folder = settings.repo_folder(&reference.repo);
    let mut report = PullReport {
        tag: reference.with_quant(selection.quant.clone()).to_string(),
        status: "success",
        models_dir: settings.cache.clone(),
        files: Vec::new(),
        downloaded_bytes: 0,
        notes: selection.notes.clone(),
    };
    for path in &selection.files {
        let file = tree.iter().find(|f| &f.path == path).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "{} lists no {path}, which its model needs (a split GGUF's shard?)",
                    reference.repo
                ),
            )
            .with_param("model")
            .with_code(ErrorCode::EntryNotFound)
        })?;
        let (fetched, downloaded, sha256) = hub.fetch(&folder, &commit, file, &mut emit)?;
        report.downloaded_bytes += downloaded;
        report.files.push(PulledFile {
            tag: report.tag.clone(),
            path: path.clone(),
            size: file.size,
            sha256,
            fetched,
        });
    }
    if reference.revision() != commit {
        let refs = folder.join("refs").join(reference.revision());
        // A revision is checked when parsed; a file outside `refs/` is never written.
        if !refs.starts_with(folder.join("refs"))
            || refs
                .components()
                .any(|c| c == std::path::Component::ParentDir)
        {
            return Err(Error::invalid(
                "model",
                "The revision names no file under refs/",
            ));
        }
        write_atomically(&refs, commit.as_bytes())?;
    }
    emit(PullStatus::Success, None, 0, 0).ok();
    Ok(report)
}

/// One pull's requests to the Hub.
struct Hub<'a> {
    puller: &'a Puller,
    settings: &'a HubSettings,
    reference: &'a HubRef,
}

/// `text` with everything but unreserved characters percent-encoded (`/` too: a revision such
/// as `refs/pr/1` is one path segment).
fn encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    let end = url[after..].find('/').map_or(url.len(), |i| after + i);
    &url[..end]
}

impl Hub<'_> {
    fn repo(&self) -> &str {
        &self.reference.repo
    }

    /// The `Authorization` header for `url`: only on the endpoint's own origin.
    fn authorization(&self, url: &str) -> Option<String> {
        let token = self.settings.token.as_ref()?;
        (origin(url) == origin(&self.settings.endpoint)).then(|| format!("Bearer {token}"))
    }

    fn call(&self, method: &str, url: &str) -> Result<RawAnswer> {
        let auth = self.authorization(url);
        retrying(
            &mut (),
            |_| {
                let answer = self
                    .puller
                    .http
                    .call_raw(method, url, auth.as_deref(), API_LIMIT)?;
                if answer.status == 429 || answer.status >= 500 {
                    return Err(download_error(url, format!("HTTP {}", answer.status))
                        .with_code(http::SERVER_ERROR));
                }
                Ok(answer)
            },
            |_| Ok(()),
        )
    }

    /// The error an answer that is not the resource means, as the Hub's `X-Error-Code` says.
    fn refusal(&self, url: &str, answer: &RawAnswer, path: Option<&str>) -> Error {
        let code = answer.header("x-error-code").unwrap_or("");
        let repo = self.repo();
        let endpoint = &self.settings.endpoint;
        let not_found = |message: String, code: ErrorCode| {
            Error::new(ErrorKind::NotFound, message)
                .with_param("model")
                .with_code(code)
        };
        match (code, answer.status) {
            ("GatedRepo", _) => {
                let message = match &self.settings.token {
                    None => format!(
                        "{repo} is a gated model: accept its licence on {endpoint}/{repo} \
                         (logged in), then set HF_TOKEN to an access token of that account \
                         ({endpoint}/settings/tokens) and pull again"
                    ),
                    Some(_) => format!(
                        "{repo} is a gated model and the account of the token in HF_TOKEN has \
                         not been granted access yet: accept its licence on {endpoint}/{repo} \
                         and pull again"
                    ),
                };
                Error::invalid("model", message).with_code(ErrorCode::GatedRepo)
            }
            ("RevisionNotFound", _) => not_found(
                format!(
                    "{repo} has no revision `{}` on {endpoint}",
                    shown(self.reference.revision())
                ),
                ErrorCode::RevisionNotFound,
            ),
            ("EntryNotFound", _) | ("", 404) if path.is_some() => not_found(
                format!(
                    "{repo} has no file `{}` at {}",
                    shown(path.unwrap_or("")),
                    shown(self.reference.revision())
                ),
                ErrorCode::EntryNotFound,
            ),
            ("RepoNotFound", _) | (_, 401 | 404) => not_found(
                format!(
                    "There is no model {repo} on {endpoint}{}",
                    if self.settings.token.is_some() {
                        " that the token in HF_TOKEN can see"
                    } else {
                        " (a private one needs HF_TOKEN set to a token with access to it)"
                    }
                ),
                ErrorCode::RepoNotFound,
            ),
            (_, 403) => Error::invalid(
                "model",
                format!(
                    "{endpoint} refused {url} (HTTP 403): {}",
                    answer
                        .header("x-error-message")
                        .unwrap_or("no reason given")
                ),
            )
            .with_code(ErrorCode::Forbidden),
            (_, status) => download_error(url, format!("HTTP {status}")),
        }
    }

    fn json(&self, url: &str) -> Result<(serde_json::Value, RawAnswer)> {
        let mut url = url.to_string();
        let mut answer = self.call("GET", &url)?;
        // A renamed repo: the Hub answers with a relative redirect to its new name.
        for _ in 0..MAX_REDIRECTS {
            let relative = answer.header("location").filter(|l| l.starts_with('/'));
            match relative {
                Some(location) if (300..=399).contains(&answer.status) => {
                    url = http::join_url(&url, location);
                    answer = self.call("GET", &url)?;
                }
                _ => break,
            }
        }
        let url = url.as_str();
        if answer.status != 200 {
            return Err(self.refusal(url, &answer, None));
        }
        let value = serde_json::from_slice(&answer.body).map_err(|e| {
            download_error(
                url,
                format!("the Hub's answer is not the JSON expected ({e})"),
            )
        })?;
        Ok((value, answer))
    }

    /// The commit the reference's revision names now.
    fn commit(&self) -> Result<String> {
        let url = format!(
            "{}/api/models/{}/revision/{}",
            self.settings.endpoint,
            self.repo(),
            encoded(self.reference.revision())
        );
        let (info, _) = self.json(&url)?;
        revision_commit(&info)
            .ok_or_else(|| download_error(&url, "the Hub's answer names no commit (`sha`)"))
    }

    /// Every file of the repo at `commit`.
    fn tree(&self, commit: &str) -> Result<Vec<TreeFile>> {
        let mut url = format!(
            "{}/api/models/{}/tree/{commit}?recursive=true&expand=false",
            self.settings.endpoint,
            self.repo()
        );
        let mut files = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for _page in 0..MAX_TREE_PAGES {
            // A page that links back to one already read would repeat forever.
            if !seen.insert(url.clone()) {
                return Err(download_error(
                    &url,
                    "the tree's pages link back to a page already read (a circle)",
                ));
            }
            let (page, answer) = self.json(&url)?;
            let entries = tree_page(&page).map_err(|problem| download_error(&url, problem))?;
            if files.len() + entries.len() > MAX_TREE_FILES {
                return Err(download_error(
                    &url,
                    format!("the tree lists more than {MAX_TREE_FILES} files"),
                ));
            }
            files.extend(entries);
            let next = answer.header("link").and_then(|link| next_page(&url, link));
            match next {
                Some(next) => url = next,
                None => return Ok(files),
            }
        }
        Err(download_error(
            &url,
            format!("the tree has more than {MAX_TREE_PAGES} pages"),
        ))
    }

    /// Where `file`'s bytes are: the CDN a large file redirects to, or `resolve` itself.
    fn locate(&self, commit: &str, file: &TreeFile) -> Result<String> {
        let path: Vec<String> = file.path.split('/').map(encoded).collect();
        let mut url = format!(
            "{}/{}/resolve/{commit}/{}",
            self.settings.endpoint,
            self.repo(),
            path.join("/")
        );
        for _ in 0..=MAX_REDIRECTS {
            let answer = self.call("HEAD", &url)?;
            let etag = answer
                .header("x-linked-etag")
                .or(answer.header("etag"))
                .map(|e| {
                    e.trim_start_matches("W/")
                        .trim_matches('"')
                        .to_ascii_lowercase()
                });
            let size = answer
                .header("x-linked-size")
                .and_then(|s| s.trim().parse::<u64>().ok());
            match answer.status {
                200..=399 => {}
                _ => return Err(self.refusal(&url, &answer, Some(&file.path))),
            }
            let location = answer.header("location").map(str::to_string);
            let relative = location.as_deref().is_some_and(|l| l.starts_with('/'));
            if (300..=399).contains(&answer.status) && relative {
                // A renamed repo: the same question on the endpoint.
                url = http::join_url(&url, location.as_deref().unwrap_or(""));
                continue;
            }
            if etag.as_deref().is_some_and(|e| e != file.etag())
                || size.is_some_and(|s| s != file.size)
            {
                return Err(download_error(
                    &url,
                    format!(
                        "the Hub announces {} with ETag {} and size {}, but its tree says {} and {}",
                        file.path,
                        etag.as_deref().unwrap_or("?"),
                        size.map_or("?".into(), |s| s.to_string()),
                        file.etag(),
                        file.size
                    ),
                )
                .with_code(ErrorCode::ChecksumMismatch));
            }
            return match (answer.status, location) {
                (300..=399, Some(location)) => Ok(http::join_url(&url, &location)),
                (300..=399, None) => Err(download_error(&url, "a redirect without a Location")),
                _ => Ok(url),
            };
        }
        Err(download_error(&url, "too many redirects"))
    }

    /// Makes `file`'s blob present and verified and links it from the snapshot:
    /// `(fetched, bytes downloaded, sha256)`.
    fn fetch(
        &self,
        folder: &Path,
        commit: &str,
        file: &TreeFile,
        emit: &mut Emit,
    ) -> Result<(bool, u64, String)> {
        let blobs = folder.join("blobs");
        let blob = blobs.join(file.etag());
        let pointer = folder.join("snapshots").join(commit).join(&file.path);
        let mut checked = None;
        if let Some(sha256) = self.verified(file, &blob, &mut checked, emit)? {
            link(&blob, &pointer, &folder.join("snapshots").join(commit))?;
            return Ok((false, 0, sha256));
        }
        fs::create_dir_all(&blobs).map_err(|e| local_error("create", &blobs, e))?;
        let locks = self
            .settings
            .cache
            .join(".locks")
            .join(folder.file_name().unwrap_or_default());
        fs::create_dir_all(&locks).map_err(|e| local_error("create", &locks, e))?;
        let lock_path = locks.join(format!("{}.lock", file.etag()));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| local_error("create", &lock_path, e))?;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) => {
                    emit(PullStatus::Waiting, Some(&file.path), 0, file.size)?;
                    std::thread::sleep(super::super::LOCK_POLL);
                }
                Err(fs::TryLockError::Error(e)) => return Err(local_error("lock", &lock_path, e)),
            }
        }
        if let Some(sha256) = self.verified(file, &blob, &mut checked, emit)? {
            link(&blob, &pointer, &folder.join("snapshots").join(commit))?;
            return Ok((false, 0, sha256));
        }
        let incomplete = blobs.join(format!("{}.incomplete", file.etag()));
        let mut downloaded = 0;
        for attempt in 0..2 {
            let url = retrying(&mut (), |_| self.locate(commit, file), |_| Ok(()))?;
            let resumed = fs::metadata(&incomplete).is_ok_and(|m| m.len() > 0);
            downloaded += self.download(&url, file, &incomplete, emit)?;
            let (sha256, sha1) = hashes(&incomplete, &file.path, file.lfs.is_none(), emit)?;
            if sha256.as_deref() == file.lfs.as_deref().or(sha256.as_deref())
                && (file.lfs.is_some() || sha1 == file.oid)
            {
                fs::rename(&incomplete, &blob)
                    .map_err(|e| local_error("move the download to", &blob, e))?;
                File::open(&blobs).and_then(|d| d.sync_all()).ok();
                self.remember(&blob);
                link(&blob, &pointer, &folder.join("snapshots").join(commit))?;
                return Ok((true, downloaded, sha256.unwrap_or_default()));
            }
            fs::remove_file(&incomplete).ok();
            let got = if file.lfs.is_some() {
                format!("sha256 {}", sha256.unwrap_or_default())
            } else {
                format!("git blob sha1 {sha1}")
            };
            // A resumed download may have kept stale bytes: once more, from scratch.
            if !resumed || attempt == 1 {
                return Err(download_error(
                    &url,
                    format!(
                        "the downloaded {} of {} has {got}, not the Hub's {}; the download was \
                         discarded",
                        file.path,
                        self.repo(),
                        file.etag()
                    ),
                )
                .with_code(ErrorCode::ChecksumMismatch));
            }
        }
        unreachable!("the second attempt returns")
    }

    /// The sha256 of `blob` when it holds `file`'s bytes (hashed, unless this pull verified it
    /// with the same stamp, or found it wrong with the stamp in `checked`).
    fn verified(
        &self,
        file: &TreeFile,
        blob: &Path,
        checked: &mut Option<Stamp>,
        emit: &mut Emit,
    ) -> Result<Option<String>> {
        let Some(stamp) = Stamp::of(blob).filter(|s| s.len == file.size) else {
            return Ok(None);
        };
        let known = self
            .puller
            .verified
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if known.get(blob) == Some(&stamp) && file.lfs.is_some() {
            return Ok(file.lfs.clone());
        }
        drop(known);
        if checked.as_ref() == Some(&stamp) {
            return Ok(None);
        }
        *checked = Some(stamp);
        let (sha256, sha1) = hashes(blob, &file.path, file.lfs.is_none(), emit)?;
        let good = match &file.lfs {
            Some(lfs) => sha256.as_deref() == Some(lfs.as_str()),
            None => sha1 == file.oid,
        };
        if !good {
            // Corrupted: downloaded again, and replaced once the new copy verifies.
            return Ok(None);
        }
        self.remember(blob);
        Ok(Some(sha256.unwrap_or_default()))
    }

    fn remember(&self, blob: &Path) {
        if let Some(stamp) = Stamp::of(blob) {
            let mut known = self
                .puller
                .verified
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            known.insert(blob.to_path_buf(), stamp);
        }
    }

    /// Downloads what `incomplete` lacks of `file` from `url`, retrying cuts: bytes downloaded.
    fn download(
        &self,
        url: &str,
        file: &TreeFile,
        incomplete: &Path,
        emit: &mut Emit,
    ) -> Result<u64> {
        let auth = self.authorization(url);
        let mut downloaded = 0u64;
        let mut have = fs::metadata(incomplete).map_or(0, |m| m.len());
        if have > file.size {
            fs::remove_file(incomplete).ok();
            have = 0;
        }
        emit(PullStatus::Downloading, Some(&file.path), have, file.size)?;
        // Both the try and the wait read how far it is: it travels in the state.
        let mut state = (emit, have);
        retrying(
            &mut state,
            |(emit, have)| {
                let have: &mut u64 = have;
                if *have == file.size {
                    return Ok(());
                }
                // What is kept and what the server answers disagree (a 416, a range from
                // elsewhere): the kept bytes go, and the download starts over (a transient error:
                // the retry begins at 0), rather than failing the same way at every pull.
                let restart = |have: &mut u64, why: String| {
                    fs::remove_file(incomplete).ok();
                    *have = 0;
                    Err(download_error(url, format!("{why}; starting over")).with_code(INTERRUPTED))
                };
                let body =
                    match self
                        .puller
                        .http
                        .get_range_as(url, Range::From(*have), auth.as_deref())
                    {
                        Err(e) if *have > 0 && e.code == Some(http::RANGE_NOT_SATISFIABLE) => {
                            return restart(have, format!("the server has no bytes from {have}"));
                        }
                        other => other?,
                    };
                let mut out = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(incomplete)
                    .map_err(|e| local_error("write", incomplete, e))?;
                if body.start != *have {
                    if body.start != 0 {
                        drop(out);
                        let why = format!(
                            "asked for bytes from {have}, the server sent them from {}",
                            body.start
                        );
                        return restart(have, why);
                    }
                    // The server ignored the range: from the start.
                    out.set_len(0)
                        .map_err(|e| local_error("truncate", incomplete, e))?;
                    *have = 0;
                }
                // One byte more than the file's size shows a server sending too much.
                let mut reader = body.reader.take(file.size - *have + 1);
                let mut buffer = vec![0u8; 256 << 10];
                let mut since = 0u64;
                loop {
                    let n = match read_some(&mut reader, &mut buffer) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) => {
                            out.sync_all().ok();
                            return Err(interrupted(url, *have, Some(file.size), e));
                        }
                    };
                    out.write_all(&buffer[..n])
                        .map_err(|e| local_error("write", incomplete, e))?;
                    *have += n as u64;
                    downloaded += n as u64;
                    since += n as u64;
                    if since >= super::super::PROGRESS_EVERY {
                        since = 0;
                        emit(
                            PullStatus::Downloading,
                            Some(&file.path),
                            (*have).min(file.size),
                            file.size,
                        )?;
                    }
                }
                out.sync_all()
                    .map_err(|e| local_error("write", incomplete, e))?;
                if *have > file.size {
                    drop(out);
                    fs::remove_file(incomplete).ok();
                    return Err(download_error(url, format!("the server sends more than the {} bytes of {}; the download was discarded", file.size, file.path)).with_code(ErrorCode::ChecksumMismatch));
                }
                if *have < file.size {
                    return Err(interrupted(
                        url,
                        *have,
                        Some(file.size),
                        "the connection closed early",
                    ));
                }
                Ok(())
            },
            |(emit, have)| emit(PullStatus::Downloading, Some(&file.path), *have, file.size),
        )?;
        let (emit, _) = state;
        emit(
            PullStatus::Downloading,
            Some(&file.path),
            file.size,
            file.size,
        )?;
        Ok(downloaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_links() {
        assert_eq!(encoded("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(encoded("v1.0"), "v1.0");
        assert_eq!(
            origin("https://huggingface.co/api/x"),
            "https://huggingface.co"
        );
        assert_eq!(origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}
