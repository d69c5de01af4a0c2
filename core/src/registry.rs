//! Tags → predictors. Predictors load lazily on first use, once, and are shared.

use crate::config::Config;
use crate::error::ErrorCode;
use crate::error::{shown, Error, ErrorKind, Result};
use crate::predict::{unix_now, Predictor};
use crate::pull::hub::{HubRef, HubSettings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

type Loader = Box<dyn Fn() -> Result<Arc<dyn Predictor>> + Send + Sync>;

/// A registered tag.
struct Entry {
    tag: String,
    created: i64,
    loader: Loader,
    /// Held while loading, so concurrent first requests load once. A failed load is not
    /// cached: fetching the missing model and retrying works without a restart.
    loaded: Mutex<Option<Arc<dyn Predictor>>>,
    /// When a request last asked for the predictor (for `unload_idle`).
    last_used: Mutex<Option<Instant>>,
    /// For a predictor registered only when its files are there (`if_present`): those files.
    /// It is listed and served once they all exist, so a model pulled after the client was
    /// made is found without a new client.
    needs_files: Option<Vec<PathBuf>>,
    /// OpenAI voice names → the model's voices (a config model's `voices`): they belong to
    /// this entry, and go with it when a predictor registered under its tag replaces it.
    voice_aliases: BTreeMap<String, String>,
    /// The context length its predictor declares (0: none), known once it has loaded, or
    /// before for a ready predictor: `models` reports it without waiting on a load.
    context_length: std::sync::atomic::AtomicU32,
}

impl Entry {
    fn present(&self) -> bool {
        self.needs_files
            .as_ref()
            .is_none_or(|files| files.iter().all(|f| f.is_file()))
    }
}

/// What `models.list` shows of a registered predictor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub tag: String,
    pub created: i64,
    pub loaded: bool,
    /// The tokens its context holds, prompt and answer together, when known: a loaded chat
    /// model's, or what a predictor declares (`ChatMessages(context_length=...)`).
    pub context_length: Option<u32>,
}

/// Thread-safe registry of predictors by tag.
pub struct Registry {
    entries: RwLock<Vec<Arc<Entry>>>,
    /// Where the config's models are (and where `models.pull` puts them).
    models_dir: PathBuf,
    /// The config's settings without its predictors: what a model named by its file's path
    /// (`model="/models/qwen.gguf"`) loads with.
    file_config: Config,
    /// Whether the Hugging Face cache's models are served (with the built-in models; not for a
    /// config that serves its own alone).
    hub: bool,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            entries: RwLock::default(),
            models_dir: crate::config::default_models_dir(),
            file_config: Config::empty(),
            hub: true,
        }
    }
}

impl Registry {
    /// Where the media of chat messages may come from (the config's `[media]`).
    pub(crate) fn media_config(&self) -> &crate::media::MediaConfig {
        &self.file_config.media
    }

    pub fn from_config(config: &Config) -> Result<Self> {
        // The config's own Whisper files are checked now; a built-in or catalog model's
        // broken file fails that model alone, on its first use (not every client).
        let own_whisper: Vec<PathBuf> = config
            .predictors
            .iter()
            .filter(|p| p.backend() == crate::config::Backend::Whisper)
            .map(|p| config.model_path(p))
            .collect();
        // A config file adds to the built-in models (unless `builtin_models = false`).
        let joined;
        let config = if config.builtin_models {
            joined = config.clone().with_builtin_models();
            &joined
        } else {
            config
        };
        // The catalog's models come with the built-in ones (a user's `$INGLE_CATALOG` entry is
        // served once pulled), not into a config that serves its own alone.
        let with_catalog;
        let builtins = config
            .predictors
            .iter()
            .any(|p| p.tag == crate::config::DEFAULT_MODEL);
        let config = if builtins {
            with_catalog = crate::pull::catalog::with_catalog_models(config.clone());
            &with_catalog
        } else {
            config
        };
        config.validate(crate::backends::validate)?;
        for predictor in &config.predictors {
            let path = config.model_path(predictor);
            if predictor.backend() == crate::config::Backend::Whisper && own_whisper.contains(&path)
            {
                crate::backends::onnx::whisper::ct2::check_whisper_file(&path).map_err(|e| {
                    let tag = shown(&predictor.tag);
                    Error::invalid("model", format!("The predictor `{tag}`: {}", e.message))
                        .with_code(ErrorCode::ModelFileInvalid)
                })?;
            }
        }
        let registry = Registry {
            models_dir: config
                .models_dir
                .clone()
                .unwrap_or_else(crate::config::default_models_dir),
            file_config: Config {
                predictors: Vec::new(),
                ..config.clone()
            },
            hub: builtins,
            ..Registry::default()
        };
        for predictor in &config.predictors {
            let needs_files = predictor.if_present.then(|| config.files_of(predictor));
            let voice_aliases = predictor
                .speech_options()
                .map(|o| o.voices.clone())
                .unwrap_or_default();
            let (config, predictor) = (config.clone(), predictor.clone());
            let tag = predictor.tag.clone();
            registry.add(
                &tag,
                // `model = "hf.co/..."`: the Hub cache's files, looked up at load.
                Box::new(move || {
                    crate::backends::load(&config, &crate::pull::hub::resolved(&predictor)?)
                }),
                needs_files,
                voice_aliases,
                None,
            )?;
        }
        Ok(registry)
    }

    /// Registers a tag whose predictor `load` creates on first use.
    pub fn register_loader(
        &self,
        tag: &str,
        load: impl Fn() -> Result<Arc<dyn Predictor>> + Send + Sync + 'static,
    ) -> Result<()> {
        self.add(tag, Box::new(load), None, BTreeMap::new(), None)
    }

    fn add(
        &self,
        tag: &str,
        load: Loader,
        needs_files: Option<Vec<PathBuf>>,
        voice_aliases: BTreeMap<String, String>,
        declared_context: Option<u32>,
    ) -> Result<()> {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if tag.is_empty() {
            return Err(Error::invalid("tag", "A predictor tag must not be empty"));
        }
        if let Some(at) = entries.iter().position(|e| e.tag == tag) {
            // A config model whose files are not there is hidden: a predictor registered
            // under its tag takes its place (and keeps it once the files come).
            if needs_files.is_some() || entries[at].present() {
                return Err(Error::invalid(
                    "tag",
                    format!("A predictor `{tag}` is already registered"),
                ));
            }
            entries.remove(at);
        }
        entries.push(Arc::new(Entry {
            tag: tag.to_string(),
            created: unix_now(),
            loader: load,
            loaded: Mutex::new(None),
            last_used: Mutex::new(None),
            needs_files,
            voice_aliases,
            context_length: declared_context.unwrap_or(0).into(),
        }));
        Ok(())
    }

    /// Registers a ready predictor under its own tag.
    pub fn register(&self, predictor: Arc<dyn Predictor>) -> Result<()> {
        let tag = predictor.tag().to_string();
        let declared_context = predictor.signature().context_length();
        self.add(
            &tag,
            Box::new(move || Ok(Arc::clone(&predictor))),
            None,
            BTreeMap::new(),
            declared_context,
        )
    }

    /// The entry `tag` names: its own tag, else (a name without `/`) the one entry whose tag
    /// ends in `/NAME` (`smollm2-135m-instruct` for `@local/smollm2-135m-instruct`), else a model
    /// of the Hugging Face cache (`hf.co/ORG/REPO:QUANT`, or its name without `/`), registered
    /// at its first use.
    fn entry(&self, tag: &str) -> Result<Arc<Entry>> {
        match self.named(tag) {
            Err(not_found) if self.hub && !tag.contains('/') => {
                // `REPO:QUANT`: a model pulled from the Hub, by its short name (only the repos
                // of that name are looked at).
                let repo = tag.split(':').next().unwrap_or(tag);
                for cached in
                    crate::pull::hub::cached_models_named(&HubSettings::from_env(), Some(repo))
                {
                    self.add_hub_model(&cached);
                }
                match self.named(tag) {
                    Err(e) if e.message.contains("names several models") => Err(e),
                    Err(_) => Err(not_found),
                    found => found,
                }
            }
            Err(not_found) if self.hub && HubRef::looks_like(tag) => {
                let Some(reference) = HubRef::parse(tag)? else {
                    return Err(not_found);
                };
                let settings = HubSettings::from_env();
                let Some(cached) = crate::pull::hub::find_cached(&settings, &reference)? else {
                    return Err(crate::pull::hub::not_pulled(&reference, &settings));
                };
                self.add_hub_model(&cached);
                self.named(&cached.reference.to_string())
            }
            found => found,
        }
    }

    /// [`Self::entry`], else a GGUF file by its absolute path, registered under that path at
    /// its first use (and listed while the file is there).
    fn entry_or_file(&self, tag: &str) -> Result<Arc<Entry>> {
        match self.entry(tag) {
            Err(not_found) if Path::new(tag).is_absolute() => {
                let Some(predictor) = model_file(tag)? else {
                    return Err(not_found);
                };
                let config = self.file_config.clone();
                let weights = predictor.model.clone();
                // Two first requests at once: one registers it, the other finds it.
                let _ = self.add(
                    tag,
                    Box::new(move || crate::backends::load(&config, &predictor)),
                    Some(vec![weights]),
                    BTreeMap::new(),
                    None,
                );
                self.named(tag)
            }
            found => found,
        }
    }

    /// Registers a model of the Hub's cache under its reference; one registered from another
    /// snapshot (a pull moved `refs/main`) is replaced, and requests running on it finish on it.
    fn add_hub_model(&self, cached: &crate::pull::hub::Cached) {
        let tag = cached.reference.to_string();
        let paths = cached.paths();
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = entries.iter().position(|e| e.tag == tag) {
            let old = &entries[at];
            if old.needs_files.as_ref() == Some(&paths) {
                return;
            }
            // Only an entry of this repo's snapshots is replaced (a config's has other files).
            let snapshots = cached.snapshot.parent().unwrap_or(&cached.snapshot);
            let from_the_hub = old
                .needs_files
                .as_ref()
                .is_some_and(|files| files.iter().all(|f| f.starts_with(snapshots)));
            if !from_the_hub {
                return;
            }
            entries.remove(at);
        }
        drop(entries);
        let (config, cached_model) = (self.file_config.clone(), cached.clone());
        // Two first requests at once: one registers it, the other finds it.
        let _ = self.add(
            &tag,
            Box::new(move || crate::backends::load(&config, &cached_model.predictor()?)),
            Some(paths),
            BTreeMap::new(),
            None,
        );
    }

    /// After a pull of `reference`: the client serves what the cache holds now.
    pub fn refresh_hub(&self, reference: &str) {
        if !self.hub {
            return;
        }
        let Ok(Some(reference)) = HubRef::parse(reference) else {
            return;
        };
        if let Ok(Some(cached)) =
            crate::pull::hub::find_cached(&HubSettings::from_env(), &reference)
        {
            self.add_hub_model(&cached);
        }
    }

    /// Registers every model of the Hub's cache that ingle can serve (listed, and named by its
    /// short name).
    fn add_hub_models(&self) {
        for cached in crate::pull::hub::cached_models(&HubSettings::from_env()) {
            self.add_hub_model(&cached);
        }
    }

    fn named(&self, tag: &str) -> Result<Arc<Entry>> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let present = || entries.iter().filter(|e| e.present());
        if let Some(entry) = present().find(|e| e.tag == tag) {
            return Ok(Arc::clone(entry));
        }
        if !tag.contains('/') {
            let named: Vec<&Arc<Entry>> = present()
                .filter(|e| short_name(&e.tag) == Some(tag))
                .collect();
            match named[..] {
                [entry] => return Ok(Arc::clone(entry)),
                [] => {}
                _ => {
                    let tags: Vec<&str> = named.iter().map(|e| e.tag.as_str()).collect();
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "The model `{}` names several models: {}; give one of their tags",
                            shown(tag),
                            tags.join(", ")
                        ),
                    )
                    .with_param("model")
                    .with_code(ErrorCode::ModelNotFound));
                }
            }
        }
        Err(model_not_found(tag))
    }

    /// Where the config's models are.
    pub fn models_dir(&self) -> &Path {
        &self.models_dir
    }

    /// The predictor for `tag`, loading it if this is its first use.
    pub fn get(&self, tag: &str) -> Result<Arc<dyn Predictor>> {
        let entry = self.entry_or_file(tag)?;
        *entry.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let mut loaded = entry.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(predictor) = loaded.as_ref() {
            return Ok(Arc::clone(predictor));
        }
        let predictor = (entry.loader)().map_err(|e| unloadable(tag, e))?;
        if let Some(context) = predictor.signature().context_length() {
            entry
                .context_length
                .store(context, std::sync::atomic::Ordering::Relaxed);
        }
        *loaded = Some(Arc::clone(&predictor));
        // Idle time starts after the load, not before it.
        *entry.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(predictor)
    }

    /// Frees `tag`'s model: the registry lets go of it, requests already running finish on
    /// it, and its memory (weights, KV cache, threads) is released when the last one ends.
    /// The next request loads it again. Returns whether it was loaded.
    pub fn unload(&self, tag: &str) -> Result<bool> {
        let entry = self.entry(tag)?;
        let mut loaded = entry.loaded.lock().unwrap_or_else(|e| e.into_inner());
        Ok(loaded.take().is_some())
    }

    /// Unloads every model that no request has asked for in `idle` and that no request is
    /// using (as Ollama's keep-alive): returns their tags.
    pub fn unload_idle(&self, idle: Duration) -> Vec<String> {
        let entries: Vec<Arc<Entry>> = self
            .entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut unloaded = Vec::new();
        for entry in entries {
            let Ok(mut loaded) = entry.loaded.try_lock() else {
                continue; // loading right now
            };
            let mut last_used = entry.last_used.lock().unwrap_or_else(|e| e.into_inner());
            // Only the registry holds it: no stream or prediction is running on it. One that is
            // counts as used now, so its idle time starts when its last request ends.
            let unused = loaded.as_ref().is_some_and(|p| Arc::strong_count(p) == 1);
            if loaded.is_some() && !unused {
                *last_used = Some(Instant::now());
            }
            let stale = last_used.is_none_or(|t| t.elapsed() >= idle);
            if stale && unused {
                loaded.take();
                unloaded.push(entry.tag.clone());
            }
        }
        unloaded
    }

    /// The voice of `tag`'s model that the config gives the OpenAI voice `name`, if any (the
    /// aliases of the predictor that serves `tag` now, none for a registered one).
    pub fn voice_alias(&self, tag: &str, name: &str) -> Option<String> {
        self.entry(tag).ok()?.voice_aliases.get(name).cloned()
    }

    /// The predictors in memory now, by tag (one being loaded is left out).
    pub fn loaded(&self) -> Vec<(String, Arc<dyn Predictor>)> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .filter_map(|entry| {
                let loaded = entry.loaded.try_lock().ok()?;
                Some((entry.tag.clone(), Arc::clone(loaded.as_ref()?)))
            })
            .collect()
    }

    /// Every model served, by its tag; then, for each tag with a `/`, its name without the
    /// namespace (`smollm2-135m-instruct`), where that names it alone: frameworks that read
    /// `PROVIDER/MODEL` in a model's name (openai-agents, LiteLLM) can name it so.
    pub fn list(&self) -> Vec<ModelInfo> {
        if self.hub {
            self.add_hub_models();
        }
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let present: Vec<&Arc<Entry>> = entries.iter().filter(|e| e.present()).collect();
        let mut list: Vec<ModelInfo> = present.iter().map(|e| Self::info(e)).collect();
        for entry in &present {
            let Some(name) = short_name(&entry.tag) else {
                continue;
            };
            let alone = present.iter().all(|other| {
                other.tag != name
                    && (Arc::ptr_eq(other, entry) || short_name(&other.tag) != Some(name))
            });
            if alone {
                list.push(ModelInfo {
                    tag: name.to_string(),
                    ..Self::info(entry)
                });
            }
        }
        list
    }

    pub fn info_of(&self, tag: &str) -> Result<ModelInfo> {
        let entry = self.entry(tag)?;
        Ok(Self::info(&entry))
    }

    fn info(entry: &Entry) -> ModelInfo {
        let loaded = entry
            .loaded
            .try_lock()
            .map(|l| l.is_some())
            .unwrap_or(false);
        // Once known, kept: the same model file loads with the same context.
        let context_length = Some(
            entry
                .context_length
                .load(std::sync::atomic::Ordering::Relaxed),
        )
        .filter(|&n| n > 0);
        ModelInfo {
            tag: entry.tag.clone(),
            created: entry.created,
            loaded,
            context_length,
        }
    }
}

/// A model that cannot load is the caller's to fix (pull it, fix the config), not a server
/// failure that SDKs retry: its files missing, 404; present but unreadable, 400; both name
/// `model` and keep their code.
fn unloadable(tag: &str, error: Error) -> Error {
    if error.kind != ErrorKind::Model {
        return error;
    }
    let missing = matches!(
        error.code,
        Some(ErrorCode::ModelFileMissing | ErrorCode::OnnxruntimeMissing)
    );
    let kind = if missing {
        ErrorKind::NotFound
    } else {
        ErrorKind::InvalidRequest
    };
    let mut unloadable = Error::new(
        kind,
        format!(
            "The model `{}` cannot be loaded: {}",
            shown(tag),
            error.message
        ),
    )
    .with_param(error.param.unwrap_or_else(|| "model".into()));
    unloadable.code = error.code.or(Some(ErrorCode::ModelUnloadable));
    unloadable
}

/// A model given by its absolute path: a chat model's GGUF file
/// (`/models/qwen2.5-1.5b-q4_k_m.gguf`), or a Whisper model in faster-whisper's layout, by its
/// folder or its `model.bin` (`/models/faster-whisper-base`, as `WhisperModel(folder)` takes
/// it). Its predictor is served under that path; None for a path that is neither. A `.gguf`
/// path whose file is missing is an error naming it.
fn model_file(path: &str) -> Result<Option<crate::config::PredictorConfig>> {
    let file = Path::new(path);
    let whisper_weights = if file.is_dir() {
        Some(file.join("model.bin"))
    } else if file.file_name().is_some_and(|n| n == "model.bin") {
        Some(file.to_path_buf())
    } else {
        None
    };
    if let Some(weights) = whisper_weights {
        let folder = weights.parent().unwrap_or(Path::new("/"));
        let complete = weights.is_file()
            && ["config.json", "tokenizer.json"]
                .iter()
                .all(|f| folder.join(f).is_file());
        if complete {
            crate::backends::onnx::whisper::ct2::check_whisper_file(&weights)?;
            return Ok(Some(crate::config::PredictorConfig::transcription(
                path, weights,
            )));
        }
        if file.is_dir() || weights.is_file() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "`{}` is not a model ingle reads: a Whisper model in faster-whisper's \
                     layout is a folder of model.bin, config.json and tokenizer.json",
                    shown(path)
                ),
            )
            .with_param("model")
            .with_code(ErrorCode::ModelNotFound));
        }
    }
    let gguf = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if !gguf {
        return Ok(None);
    }
    if !file.is_file() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("The model file `{}` does not exist", shown(path)),
        )
        .with_param("model")
        .with_code(ErrorCode::ModelNotFound));
    }
    Ok(Some(crate::config::PredictorConfig::llama(path, file)))
}

/// A tag's name without its namespace: what follows its last `/` (`@local/smollm2-135m-instruct`
/// → `smollm2-135m-instruct`), a name that clients which take `/` for a provider can send.
pub fn short_name(tag: &str) -> Option<&str> {
    if Path::new(tag).is_absolute() {
        return None; // a model file's path: named by its path only
    }
    let (_, name) = tag.rsplit_once('/')?;
    (!name.is_empty()).then_some(name)
}

/// No predictor `tag`; for a model ingle can pull, the message says how. Here, not in
/// `error.rs`: it reads the pull catalog, and the errors module uses nothing above it.
pub fn model_not_found(tag: &str) -> Error {
    let known = crate::pull::Catalog::load()
        .or_else(|_| crate::pull::Catalog::builtin())
        // A model, not what models need (`onnxruntime`) or tests use (`recordings`).
        .is_ok_and(|c| c.get(tag).is_some_and(|e| e.backend.is_some()));
    let message = if known {
        format!(
            "The model `{}` does not exist here yet; {}",
            shown(tag),
            crate::pull::pull_hint(tag)
        )
    } else {
        format!("The model `{}` does not exist", shown(tag))
    };
    Error::new(ErrorKind::NotFound, message)
        .with_param("model")
        .with_code(ErrorCode::ModelNotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_also_named_without_its_namespace_where_that_names_it_alone() {
        let registry = Registry::default();
        for tag in [
            "@local/chat-a",
            "@me/shared",
            "@you/shared",
            "plain",
            "@x/plain",
        ] {
            let message = format!("loaded {tag}");
            registry
                .register_loader(tag, move || Err(Error::internal(message.clone())))
                .unwrap();
        }
        let loads = |name: &str| registry.get(name).err().map(|e| e.message);
        assert_eq!(loads("chat-a").as_deref(), Some("loaded @local/chat-a"));
        // Two tags end in `/shared`: neither is named by it.
        assert_eq!(
            registry.get("shared").err().unwrap().kind,
            ErrorKind::NotFound
        );
        // A tag of its own wins over another's short name.
        assert_eq!(loads("plain").as_deref(), Some("loaded plain"));
        // Only a name without `/` is looked up so.
        assert_eq!(
            registry.get("@other/chat-a").err().unwrap().kind,
            ErrorKind::NotFound
        );
        let listed: Vec<String> = registry.list().into_iter().map(|m| m.tag).collect();
        assert_eq!(
            listed,
            [
                "@local/chat-a",
                "@me/shared",
                "@you/shared",
                "plain",
                "@x/plain",
                "chat-a"
            ]
        );
        assert_eq!(short_name("@local/a/b"), Some("b"));
        assert_eq!(short_name("a/"), None);
        assert_eq!(short_name("plain"), None);
        assert_eq!(short_name("/models/x.gguf"), None);
    }

    fn hidden_model(dir: &Path) -> Registry {
        let config = Config::empty().models_dir(dir).predictor(
            crate::config::PredictorConfig::llama("@me/chat", "missing.gguf").if_present(),
        );
        Registry::from_config(&config).unwrap()
    }

    #[test]
    fn a_hidden_config_model_gives_its_tag_to_a_registered_predictor() {
        let dir = std::env::temp_dir().join(format!("ingle-registry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let registry = hidden_model(&dir);
        assert!(registry.get("@me/chat").is_err());
        registry
            .register_loader("@me/chat", || Err(Error::internal("mine")))
            .unwrap();
        // Now the tag is the registered predictor's (its loader answers).
        let error = registry.get("@me/chat").err().unwrap();
        assert!(error.message.contains("mine"), "{error}");
        assert!(registry
            .register_loader("@me/chat", || Err(Error::internal("again")))
            .is_err());
        // A config model whose files are there keeps its tag.
        std::fs::write(dir.join("missing.gguf"), b"x").unwrap();
        let registry = hidden_model(&dir);
        let error = registry
            .register_loader("@me/chat", || Err(Error::internal("mine")))
            .unwrap_err();
        assert!(error.message.contains("already registered"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_hidden_config_model_takes_its_voice_aliases_with_it() {
        let dir = std::env::temp_dir().join(format!("ingle-voices-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let speech = |dir: &Path| {
            let config = Config::empty().models_dir(dir).predictor(
                crate::config::PredictorConfig::speech("@me/voice", "missing.onnx")
                    .voice("alloy", "their_voice")
                    .if_present(),
            );
            Registry::from_config(&config).unwrap()
        };
        // Its files are missing: a predictor registered under its tag serves the tag, and the
        // config's aliases (for a model that is not there) must not rename its voices.
        let registry = speech(&dir);
        registry
            .register_loader("@me/voice", || Err(Error::internal("mine")))
            .unwrap();
        assert_eq!(registry.voice_alias("@me/voice", "alloy"), None);
        // With its files there, the config model serves the tag with its aliases.
        for file in ["missing.onnx", "missing.onnx.json"] {
            std::fs::write(dir.join(file), b"x").unwrap();
        }
        let registry = speech(&dir);
        assert_eq!(
            registry.voice_alias("@me/voice", "alloy").as_deref(),
            Some("their_voice")
        );
        assert_eq!(registry.voice_alias("@me/voice", "nova"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
