//! Models from the Hugging Face Hub, by reference (`hf.co/ORG/REPO[:QUANT][@REV]`), kept in the
//! Hub's shared cache exactly as `huggingface_hub` lays it out, so that each reads what the other
//! downloaded:
//!
//! ```text
//! $HF_HUB_CACHE/models--ORG--REPO/
//!     blobs/ETAG                 the bytes (ETAG: the sha256 of a large file, the git blob
//!                                sha1 of a small one); ingle downloads into ETAG.incomplete,
//!                                which the next pull resumes (huggingface_hub 2.x uses
//!                                ETAG.RANDOM.incomplete of its own, deleted on failure)
//!     refs/main                  the commit `main` named when it was pulled
//!     snapshots/COMMIT/PATH      a relative link to ../../blobs/ETAG
//! $HF_HUB_CACHE/.locks/models--ORG--REPO/ETAG.lock   taken by one download at a time
//! ```
//!
//! [`fetch`] speaks the Hub's protocol; [`detect`] says which files of a repo make a model, and
//! which kind. Why not the `hf-hub` crate: docs/models.md ("The Hub's protocol").

pub mod answer;
mod blob;
pub mod detect;
mod fetch;
pub mod reference;

pub use detect::Selection;
pub use reference::HubRef;

use crate::config::{BackendOptions, EmbeddingOptions};
use crate::error::ErrorCode;
use crate::error::{shown, Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// Where the Hub is and what the environment says about it, read as `huggingface_hub` does.
#[derive(Debug, Clone)]
pub struct HubSettings {
    /// `$HF_ENDPOINT` (a mirror) or `https://huggingface.co`.
    pub endpoint: String,
    /// `$HF_TOKEN`, else the file `$HF_TOKEN_PATH` or `$HF_HOME/token`.
    pub token: Option<String>,
    /// `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`.
    pub cache: PathBuf,
    /// `$HF_HUB_OFFLINE=1`: the cache only, no request.
    pub offline: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn truthy(name: &str) -> bool {
    env(name).is_some_and(|v| {
        matches!(
            v.trim().to_ascii_uppercase().as_str(),
            "1" | "ON" | "YES" | "TRUE"
        )
    })
}

/// `$HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`.
fn hf_home() -> PathBuf {
    if let Some(home) = env("HF_HOME") {
        return PathBuf::from(home);
    }
    let cache = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env("HOME").unwrap_or_else(|| "/".into())).join(".cache"));
    cache.join("huggingface")
}

impl HubSettings {
    pub fn from_env() -> HubSettings {
        let endpoint = env("HF_ENDPOINT")
            .unwrap_or_else(|| "https://huggingface.co".into())
            .trim_end_matches('/')
            .to_string();
        let token = env("HF_TOKEN")
            .or_else(|| env("HUGGING_FACE_HUB_TOKEN"))
            .or_else(|| {
                let path = env("HF_TOKEN_PATH")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| hf_home().join("token"));
                std::fs::read_to_string(path)
                    .ok()
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
            });
        let cache = env("HF_HUB_CACHE")
            .or_else(|| env("HUGGINGFACE_HUB_CACHE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home().join("hub"));
        HubSettings {
            endpoint,
            token,
            cache,
            offline: truthy("HF_HUB_OFFLINE") || truthy("TRANSFORMERS_OFFLINE"),
        }
    }

    /// `models--ORG--REPO`: a repo's folder in the cache.
    pub fn repo_folder(&self, repo: &str) -> PathBuf {
        self.cache
            .join(format!("models--{}", repo.replace('/', "--")))
    }
}

/// A model found in the cache: its reference (with the quant picked), the snapshot it is in and
/// what its files make.
#[derive(Debug, Clone)]
pub struct Cached {
    pub reference: HubRef,
    pub snapshot: PathBuf,
    pub selection: Selection,
}

impl Cached {
    /// The files the model needs, at their snapshot paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.selection
            .files
            .iter()
            .map(|f| self.snapshot.join(f))
            .collect()
    }

    /// The predictor that serves it, under its canonical reference.
    pub fn predictor(&self) -> Result<crate::config::PredictorConfig> {
        self.selection
            .predictor(&self.reference.to_string(), &self.snapshot)
    }
}

/// The commit `revision` of `repo` names in the cache: the revision itself when it is a commit
/// whose snapshot is there, else what `refs/REVISION` says.
pub fn cached_commit(settings: &HubSettings, repo: &str, revision: &str) -> Option<String> {
    let folder = settings.repo_folder(repo);
    if is_commit(revision) && folder.join("snapshots").join(revision).is_dir() {
        return Some(revision.to_string());
    }
    if revision.split('/').any(|s| s.is_empty() || s == "..") {
        return None;
    }
    let commit = std::fs::read_to_string(folder.join("refs").join(revision)).ok()?;
    let commit = commit.trim();
    is_commit(commit).then(|| commit.to_string())
}

/// A 40-digit lowercase hex git commit.
pub fn is_commit(text: &str) -> bool {
    text.len() == 40
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Every file of a snapshot whose link reaches its blob, as `/` paths relative to it. A link
/// that leads out of the repo's folder (`../../blobs/ETAG` is the layout) is no file: a cache
/// someone tampered with never makes ingle load a file from elsewhere, and a pull replaces it.
/// The link itself is judged, lexically, not where `blobs/` leads (a `blobs` folder linked to
/// another disk is a cache like any other).
pub fn snapshot_files(snapshot: &Path) -> Vec<(String, u64)> {
    let repo_folder = snapshot.parent().and_then(Path::parent);
    let inside = |path: &Path| repo_folder.is_some_and(|folder| link_stays_in(path, folder));
    let mut files = Vec::new();
    let mut stack = vec![(snapshot.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let relative = format!("{prefix}{name}");
            // A real folder is walked; a link is followed to its blob (a dangling one, its blob
            // gone, is no file), never into a folder (a cache with a loop in it ends).
            let Ok(own) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if own.is_dir() {
                stack.push((path, format!("{relative}/")));
            } else if let Some(m) = std::fs::metadata(&path)
                .ok()
                .filter(|m| m.is_file() && inside(&path))
            {
                files.push((relative, m.len()));
            }
        }
    }
    files.sort();
    files
}

/// Whether `path` is no link, or a link whose target, read as a path (`..` resolved against
/// the link's folder, no other link followed), lies in `folder`.
fn link_stays_in(path: &Path, folder: &Path) -> bool {
    let Ok(target) = std::fs::read_link(path) else {
        return true;
    };
    let joined = match path.parent() {
        Some(parent) if target.is_relative() => parent.join(target),
        _ => target,
    };
    let mut normal = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                if !normal.pop() {
                    return false;
                }
            }
            std::path::Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal.starts_with(folder)
}

/// `reference` in the cache, if every file its model needs is there.
pub fn find_cached(settings: &HubSettings, reference: &HubRef) -> Result<Option<Cached>> {
    let Some(commit) = cached_commit(settings, &reference.repo, reference.revision()) else {
        return Ok(None);
    };
    let snapshot = settings
        .repo_folder(&reference.repo)
        .join("snapshots")
        .join(&commit);
    let files = snapshot_files(&snapshot);
    let selection = match detect::select(reference, &files) {
        Ok(selection) => selection,
        // The files that would make it are not there (a quant not pulled): not pulled yet.
        Err(e) if e.kind == ErrorKind::NotFound || files.is_empty() => return Ok(None),
        // There, but not a model ingle serves (several voices, unknown files): say so.
        Err(e) => return Err(e),
    };
    // Only files the listing admits (a shard's name is made up from the first's).
    if !selection
        .files
        .iter()
        .all(|f| files.iter().any(|(listed, _)| listed == f))
    {
        return Ok(None);
    }
    Ok(Some(Cached {
        reference: reference.with_quant(selection.quant.clone()),
        snapshot,
        selection,
    }))
}

/// Every model in the cache that ingle can serve (at each repo's `main`): each GGUF quant a
/// repo holds whole, or the repo's one model of another kind.
pub fn cached_models(settings: &HubSettings) -> Vec<Cached> {
    cached_models_named(settings, None)
}

/// [`cached_models`] of the repos named `name` (any organisation, any case) only: what a
/// short name (`REPO:QUANT`) can name, without walking the whole cache.
pub fn cached_models_named(settings: &HubSettings, name: Option<&str>) -> Vec<Cached> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(&settings.cache) else {
        return found;
    };
    let mut folders: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let wanted = name;
    for folder in folders {
        let Some(name) = folder.strip_prefix("models--") else {
            continue;
        };
        let Some((org, repo)) = name.split_once("--") else {
            continue;
        };
        if wanted.is_some_and(|w| !w.eq_ignore_ascii_case(repo)) {
            continue;
        }
        let repo = format!("{org}/{repo}");
        let Ok(Some(reference)) = HubRef::parse(&format!("hf.co/{repo}")) else {
            continue;
        };
        let Some(commit) = cached_commit(settings, &repo, reference.revision()) else {
            continue;
        };
        let snapshot = settings.repo_folder(&repo).join("snapshots").join(commit);
        let files = snapshot_files(&snapshot);
        let quants = detect::quants(&files);
        let references: Vec<HubRef> = if quants.is_empty() {
            vec![reference]
        } else {
            quants
                .into_iter()
                .map(|q| reference.with_quant(Some(q)))
                .collect()
        };
        for reference in references {
            if let Ok(Some(cached)) = find_cached(settings, &reference) {
                if !found
                    .iter()
                    .any(|c: &Cached| c.reference == cached.reference)
                {
                    found.push(cached);
                }
            }
        }
    }
    found
}

/// What to run to get `reference` (not in the cache yet).
pub fn pull_hint(reference: &str) -> String {
    crate::pull::pull_hint(reference)
}

/// `reference` is not in the cache: the error names the pull that fixes it.
pub fn not_pulled(reference: &HubRef, settings: &HubSettings) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!(
            "The model `{}` is not in the Hugging Face cache ({}) yet; {}",
            shown(&reference.to_string()),
            settings.cache.display(),
            pull_hint(&reference.to_string())
        ),
    )
    .with_param("model")
    .with_code(ErrorCode::ModelNotFound)
}

/// A config's predictor whose `model` is a Hub reference (`model = "hf.co/ORG/REPO:QUANT"`, to
/// give it a `chat_template` or other options): the same predictor with the cached files' paths.
/// Any other predictor is returned as it is.
pub fn resolved(
    predictor: &crate::config::PredictorConfig,
) -> Result<crate::config::PredictorConfig> {
    let Some(text) = predictor.model.to_str().filter(|t| HubRef::looks_like(t)) else {
        return Ok(predictor.clone());
    };
    let Some(reference) = HubRef::parse(text)? else {
        return Ok(predictor.clone());
    };
    let settings = HubSettings::from_env();
    let cached =
        find_cached(&settings, &reference)?.ok_or_else(|| not_pulled(&reference, &settings))?;
    let found = cached.predictor()?;
    if found.backend() != predictor.backend() {
        return Err(Error::invalid(
            "model",
            format!(
                "The config gives `{}` the backend `{}`, but {} is a `{}` model",
                shown(&predictor.tag),
                predictor.backend().name(),
                cached.reference,
                found.backend().name()
            ),
        ));
    }
    // The config's own options, else what the repo says (an embedding model's tokenizer,
    // window and pooling).
    let options = match (&predictor.options, found.options) {
        (BackendOptions::OnnxEmbedding(given), BackendOptions::OnnxEmbedding(read)) => {
            BackendOptions::OnnxEmbedding(EmbeddingOptions {
                tokenizer: given.tokenizer.clone().or(read.tokenizer),
                max_length: given.max_length.or(read.max_length),
                pooling: given.pooling.or(read.pooling),
            })
        }
        (given, _) => given.clone(),
    };
    Ok(crate::config::PredictorConfig {
        model: found.model,
        options,
        ..predictor.clone()
    })
}

pub use fetch::pull;
