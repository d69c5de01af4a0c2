//! Configuration: the one source of truth for which predictors exist. A TOML file or a builder.
//!
//! ```toml
//! models_dir = "/opt/models"            # optional; relative model paths resolve against it
//!
//! [[predictors]]
//! tag = "@local/smollm2-135m-instruct"
//! backend = "llama"
//! model = "SmolLM2-135M-Instruct.Q4_1.gguf"
//! n_ctx = 2048                          # context size per request
//! threads = 2                           # default: physical cores
//! parallel = 4                          # requests decoded side by side
//! # n_gpu_layers = 16                   # default: all that fit on the GPU (none without one)
//! # device = "CUDA0"                    # default: the GPU with the most free memory
//! # chat_template = "chatml"            # when the GGUF has no template
//!
//! [[predictors]]
//! tag = "@local/all-minilm-l6-v2"
//! backend = "onnx-embedding"            # sentence embeddings on ONNX Runtime
//! model = "all-minilm-l6-v2/model.onnx"
//! tokenizer = "all-minilm-l6-v2/tokenizer.json"
//! max_length = 256                      # tokens per input; longer inputs are truncated
//! ```
//!
//! `onnxruntime = "/path/to/libonnxruntime.so.1.31.1"` at the top level picks the ONNX Runtime
//! library (else `$ORT_DYLIB_PATH`, else the copy `ingle pull onnxruntime` puts in the models
//! directory, or the GPU build `ingle pull onnxruntime-gpu` puts there, on a machine with
//! NVIDIA's driver).

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The tag of the model ingle serves when no config is given.
pub const DEFAULT_MODEL: &str = "@local/smollm2-135m-instruct";
/// The file of the default model, inside the models directory.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The second chat model, which can call tools (Hermes format); registered when cached.
pub const TOOLS_MODEL: &str = "@local/qwen2.5-coder-0.5b-instruct";
/// Its GGUF in the models dir (assembled from six wheels by `ingle pull`).
pub const TOOLS_MODEL_FILE: &str = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf";
/// The tag of the embedding model, registered by default when its files are in the models
/// directory.
pub const DEFAULT_EMBEDDING_MODEL: &str = "@local/all-minilm-l6-v2";
/// Its ONNX graph (all-MiniLM-L6-v2, int8) and tokenizer, inside the models directory.
pub const DEFAULT_EMBEDDING_FILE: &str = "all-minilm-l6-v2/model.onnx";
pub const DEFAULT_EMBEDDING_TOKENIZER: &str = "all-minilm-l6-v2/tokenizer.json";
/// The tag of the speech voice, registered by default when its files are in the models
/// directory, and its Piper model (its config is the same path + `.json`).
pub const DEFAULT_SPEECH_MODEL: &str = "@local/piper-en-us-joe-medium";
pub const DEFAULT_SPEECH_FILE: &str = "piper/en_US-joe-medium.onnx";
/// The tag of the transcription model, registered by default when its files are in the models
/// directory, and its CTranslate2 `model.bin` (`config.json` and `tokenizer.json` beside it).
pub const DEFAULT_TRANSCRIPTION_MODEL: &str = "@local/whisper-tiny-en";
pub const DEFAULT_TRANSCRIPTION_FILE: &str = "whisper-tiny-en/model.bin";
/// The ONNX Runtime library `ingle pull onnxruntime` installs, inside the models directory.
pub const DEFAULT_ONNXRUNTIME_FILE: &str = "onnxruntime/libonnxruntime.so.1.31.1";
/// ONNX Runtime's GPU build (its CUDA provider beside it), as `ingle pull onnxruntime-gpu`
/// installs it: the default instead of [`DEFAULT_ONNXRUNTIME_FILE`] where it is there, NVIDIA's
/// driver is there and `INGLE_DEVICE` allows CUDA.
pub const DEFAULT_ONNXRUNTIME_GPU_FILE: &str = "onnxruntime-gpu/libonnxruntime.so.1.31.1";

/// Most threads a predictor may ask for; more than the machine's cores are capped at load
/// (with a warning), more than this is a mistake.
pub const MAX_THREADS: u32 = 1024;
/// Most requests decoded side by side (llama.cpp's `LLAMA_MAX_SEQ`).
pub const MAX_PARALLEL: u32 = 256;
/// Smallest and largest context per request; a model's own training context caps it further.
pub const MIN_N_CTX: u32 = 16;
pub const MAX_N_CTX: u32 = 1 << 20;
/// Largest token window of an embedding model.
pub const MAX_EMBEDDING_LENGTH: u32 = 1 << 16;

/// Which engine runs a predictor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// llama.cpp, for GGUF chat and text completion models.
    Llama,
    /// ONNX Runtime, for sentence-embedding models (a BERT-style encoder whose output is
    /// mean-pooled and L2-normalised, as sentence-transformers does).
    #[serde(rename = "onnx-embedding")]
    OnnxEmbedding,
    /// ONNX Runtime, for Piper text-to-speech voices (VITS), phonemized by espeak-ng.
    Piper,
    /// ONNX Runtime, for Whisper speech-to-text: a CTranslate2 `model.bin` (as faster-whisper
    /// uses) turned into encoder and decoder graphs at load.
    Whisper,
}

impl Backend {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Llama => "llama",
            Backend::OnnxEmbedding => "onnx-embedding",
            Backend::Piper => "piper",
            Backend::Whisper => "whisper",
        }
    }
}

/// How an embedding model pools its token states (sentence-transformers' `pooling_mode_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// The mean over the real (unpadded) tokens.
    Mean,
    /// The first token's state (BERT's `[CLS]`).
    Cls,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where relative model paths resolve. Default: [`default_models_dir`].
    #[serde(default)]
    pub models_dir: Option<PathBuf>,
    #[serde(default)]
    pub predictors: Vec<PredictorConfig>,
    /// Whether a client made from this config also serves the built-in models (those of
    /// [`Config::default`], once their files are in the models directory) besides its own
    /// predictors: a config adds models, and a tag in both is the config's. True in a parsed
    /// config unless it says `builtin_models = false`; false in [`Config::empty`] and
    /// [`Config::default`] (which is them).
    #[serde(default = "serve_builtin_models")]
    pub builtin_models: bool,
    /// The ONNX Runtime shared library (1.31 or later); a relative path is taken inside the
    /// models directory (in a config file: next to the file). Default: `$ORT_DYLIB_PATH`, else
    /// [`DEFAULT_ONNXRUNTIME_GPU_FILE`] in the models directory where it is there and the
    /// machine has NVIDIA's driver, else [`DEFAULT_ONNXRUNTIME_FILE`]. One library serves the
    /// process.
    #[serde(default)]
    pub onnxruntime: Option<PathBuf>,
    /// Where stored responses (`client.responses`) are kept, and for how long.
    #[serde(default)]
    pub responses: ResponsesConfig,
    /// Where the images and audio of chat messages may come from (`[media]`).
    #[serde(default)]
    pub media: MediaConfig,
}

/// `[responses]`: the store of `client.responses` (SQLite). A relative `store` in a config
/// file is taken next to the file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponsesConfig {
    /// The database file, or `:memory:` (kept in the process, gone when it exits). Default:
    /// `$INGLE_RESPONSES_STORE`, else [`default_responses_store`].
    #[serde(default)]
    pub store: Option<PathBuf>,
    /// Stored responses older than this are forgotten (OpenAI keeps them 30 days).
    #[serde(default = "default_max_age_days")]
    pub max_age_days: u32,
    /// While the stored responses take more than this, the oldest are forgotten.
    #[serde(default = "default_max_megabytes")]
    pub max_megabytes: u64,
}

/// `[media]`: where the media of a request may come from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaConfig {
    /// Fetch an image or audio part given as an http(s) URL. Off by default: a request would
    /// otherwise make the process fetch any address it names (a server's own network
    /// included). `INGLE_ALLOW_MEDIA_URLS=1` turns it on too.
    #[serde(default)]
    pub allow_urls: bool,
    /// How long one fetch may take, in seconds.
    #[serde(default = "default_fetch_seconds")]
    pub fetch_timeout_seconds: u64,
}

fn default_fetch_seconds() -> u64 {
    10
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            allow_urls: false,
            fetch_timeout_seconds: default_fetch_seconds(),
        }
    }
}

impl MediaConfig {
    /// Whether http(s) URLs are fetched: the config's `allow_urls`, or the environment's.
    pub(crate) fn urls_allowed(&self) -> bool {
        self.allow_urls
            || std::env::var("INGLE_ALLOW_MEDIA_URLS").is_ok_and(|v| v == "1" || v == "true")
    }
}

fn serve_builtin_models() -> bool {
    true
}

fn default_max_age_days() -> u32 {
    30
}

fn default_max_megabytes() -> u64 {
    1024
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        ResponsesConfig {
            store: None,
            max_age_days: default_max_age_days(),
            max_megabytes: default_max_megabytes(),
        }
    }
}

impl ResponsesConfig {
    /// The database file (or `:memory:`).
    pub fn store_path(&self) -> PathBuf {
        self.store.clone().unwrap_or_else(default_responses_store)
    }
}

impl Default for Config {
    /// The default chat model from the models cache, and the default embedding model when
    /// its files are there.
    fn default() -> Self {
        Config::empty()
            // The sampling each model's authors recommend: SmolLM2's model card
            // (temperature 0.2, top_p 0.9), Qwen2.5 0.5B Instruct's generation_config.json.
            .predictor(
                PredictorConfig::llama(DEFAULT_MODEL, DEFAULT_MODEL_FILE).defaults(
                    SamplingDefaults {
                        temperature: Some(0.2),
                        top_p: Some(0.9),
                        ..SamplingDefaults::default()
                    },
                ),
            )
            .predictor(
                PredictorConfig::llama(TOOLS_MODEL, TOOLS_MODEL_FILE)
                    .defaults(SamplingDefaults {
                        temperature: Some(0.7),
                        top_p: Some(0.8),
                        top_k: Some(20),
                        repetition_penalty: Some(1.1),
                        ..SamplingDefaults::default()
                    })
                    .if_present(),
            )
            .predictor(
                PredictorConfig::embedding(
                    DEFAULT_EMBEDDING_MODEL,
                    DEFAULT_EMBEDDING_FILE,
                    DEFAULT_EMBEDDING_TOKENIZER,
                )
                .if_present(),
            )
            .predictor(
                PredictorConfig::speech(DEFAULT_SPEECH_MODEL, DEFAULT_SPEECH_FILE).if_present(),
            )
            .predictor(
                PredictorConfig::transcription(
                    DEFAULT_TRANSCRIPTION_MODEL,
                    DEFAULT_TRANSCRIPTION_FILE,
                )
                .if_present(),
            )
    }
}

impl Config {
    /// A config with no predictors.
    pub fn empty() -> Self {
        Config {
            models_dir: None,
            predictors: Vec::new(),
            builtin_models: false,
            onnxruntime: None,
            responses: ResponsesConfig::default(),
            media: MediaConfig::default(),
        }
    }

    pub fn predictor(mut self, predictor: PredictorConfig) -> Self {
        self.predictors.push(predictor);
        self
    }

    pub fn models_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.models_dir = Some(dir.into());
        self
    }

    /// The ONNX Runtime library to load (see [`Config::onnxruntime`]).
    pub fn onnxruntime(mut self, library: impl Into<PathBuf>) -> Self {
        self.onnxruntime = Some(library.into());
        self
    }

    /// The config's predictors, then the built-in models whose tags it does not use, each
    /// served once its files are in this config's models directory: what a client made from a
    /// config file or JSON serves, unless it says `builtin_models = false`.
    pub fn with_builtin_models(mut self) -> Self {
        for builtin in Config::default().predictors {
            if !self.predictors.iter().any(|p| p.tag == builtin.tag) {
                self.predictors.push(builtin.if_present());
            }
        }
        self.builtin_models = false; // joined: not again
        self
    }

    pub fn from_toml(text: &str) -> Result<Self> {
        // With the path of the field at fault: `threads = -1` said only "expected u32".
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let path = e.path().to_string();
            let message = e.inner().message().trim().to_string();
            let param = config_param(&path, &message);
            let message = if path.is_empty() || path == "." {
                format!("Invalid ingle config: {message}")
            } else {
                format!("Invalid ingle config at `{path}`: {message}")
            };
            Error::invalid(param, message)
        })
    }

    /// The same fields as the TOML file, as a JSON object (what the C and JS bindings take).
    pub fn from_json(text: &str) -> Result<Self> {
        use crate::json::{parse_one, JsonProblem};
        parse_one(text).map_err(|problem| {
            let param = match &problem {
                JsonProblem::Data { path, message } => config_param(path, message),
                JsonProblem::Syntax(_) => "config".to_string(),
            };
            let message = match problem {
                JsonProblem::Syntax(message) => {
                    format!("Invalid ingle config: not valid JSON: {message}")
                }
                JsonProblem::Data { path, message } if path.is_empty() => {
                    format!("Invalid ingle config: {message}")
                }
                JsonProblem::Data { path, message } => format!(
                    "Invalid ingle config at `{}`: {message}",
                    crate::error::shown(&path)
                ),
            };
            Error::invalid(param, message)
        })
    }

    /// A config given as text: a JSON object (`{...}`, what a Python dict or a JS object
    /// becomes) or TOML.
    pub fn from_text(text: &str) -> Result<Self> {
        if text.trim_start().starts_with('{') {
            Config::from_json(text)
        } else {
            Config::from_toml(text)
        }
    }

    /// What a binding's `config` argument gives: a file's path, or the config itself as TOML or
    /// JSON text. Text that names an existing file is that file; so is one line ending in
    /// `.toml` or `.json` (a missing file: "cannot read"); else text with a `=`, a `[`, a `{` or a
    /// line break is the config.
    pub fn from_file_or_text(value: &str) -> Result<Self> {
        let path = Path::new(value);
        let named = !value.contains('\n')
            && [".toml", ".json"]
                .iter()
                .any(|e| value.trim_end().to_ascii_lowercase().ends_with(e));
        let text_like = value.contains(['=', '[', '{', '\n']);
        if path.is_file() || named || !text_like {
            Config::from_file(path)
        } else {
            Config::from_text(value)
        }
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(
                "config",
                format!("Cannot read config {}: {e}", path.display()),
            )
        })?;
        let mut config = Config::from_toml(&text).map_err(|mut e| {
            e.message = format!("{} ({})", e.message, path.display());
            e
        })?;
        // Relative directories in a file mean relative to the file.
        if let Some(parent) = path.parent() {
            let store = &mut config.responses.store;
            for dir in [&mut config.models_dir, &mut config.onnxruntime, store] {
                if let Some(relative) = dir
                    .as_ref()
                    .filter(|d| d.is_relative() && d.as_os_str() != ":memory:")
                {
                    *dir = Some(parent.join(relative));
                }
            }
        }
        Ok(config)
    }

    /// Checks every value a config can get wrong before anything loads: an error names the
    /// field (`predictors[1].parallel`) and says what is allowed. Files are checked when
    /// their predictor loads (they may be fetched after the client is created). Each
    /// predictor's options are also given to `backend_check` (the registry passes
    /// [`crate::backends::validate`], which checks what needs the engines: a chat template
    /// llama.cpp knows, a GPU that is there).
    pub fn validate(&self, backend_check: impl Fn(&PredictorConfig) -> Result<()>) -> Result<()> {
        check_path("models_dir", self.models_dir.as_deref(), true)?;
        check_path("responses.store", self.responses.store.as_deref(), false)?;
        for (name, zero) in [
            ("max_age_days", self.responses.max_age_days == 0),
            ("max_megabytes", self.responses.max_megabytes == 0),
        ] {
            if zero {
                return Err(Error::invalid(
                    format!("responses.{name}"),
                    format!("Invalid config: `responses.{name}` must be at least 1"),
                ));
            }
        }
        // Files are checked where they resolve (relative ones inside the models directory).
        if let Some(library) = &self.onnxruntime {
            check_path("onnxruntime", Some(&self.resolve(library)), false)?;
        }
        for (i, predictor) in self.predictors.iter().enumerate() {
            let field = |name: &str| format!("predictors[{i}].{name}");
            let tag = crate::error::shown(&predictor.tag);
            if predictor.tag.trim().is_empty() {
                return Err(Error::invalid(
                    field("tag"),
                    format!("Invalid config: `predictors[{i}].tag` must not be empty"),
                ));
            }
            if let Some(j) = self.predictors[..i]
                .iter()
                .position(|p| p.tag == predictor.tag)
            {
                return Err(Error::invalid(
                    field("tag"),
                    format!("Invalid config: the tag `{tag}` is given twice (predictors[{j}] and predictors[{i}])"),
                ));
            }
            check_path(
                &field("model"),
                Some(&self.resolve(&predictor.model)),
                false,
            )?;
            let llama = predictor.llama_options().cloned().unwrap_or_default();
            let embedding = predictor.embedding_options().cloned().unwrap_or_default();
            if let Some(tokenizer) = &embedding.tokenizer {
                check_path(&field("tokenizer"), Some(&self.resolve(tokenizer)), false)?;
            }
            let voice_config = predictor
                .speech_options()
                .and_then(|o| o.voice_config.as_ref());
            if let Some(voice_config) = voice_config {
                check_path(
                    &field("voice_config"),
                    Some(&self.resolve(voice_config)),
                    false,
                )?;
            }
            llama.defaults.check(&field("defaults"))?;
            let ranges = [
                ("threads", predictor.threads, 1, MAX_THREADS),
                ("parallel", llama.parallel, 1, MAX_PARALLEL),
                ("n_ctx", llama.n_ctx, MIN_N_CTX, MAX_N_CTX),
                ("draft_max", llama.draft_max, 1, 64),
                ("ngram_min", llama.ngram_min, 1, 16),
                ("ngram_max", llama.ngram_max, 1, 16),
                ("max_length", embedding.max_length, 2, MAX_EMBEDDING_LENGTH),
            ];
            for (name, value, min, max) in ranges {
                match value {
                    Some(value) if value < min || value > max => {
                        return Err(Error::invalid(
                            field(name),
                            format!(
                                "Invalid config: `{name}` of `{tag}` is {value}; it must be \
                                 between {min} and {max}"
                            ),
                        ))
                    }
                    _ => {}
                }
            }
            if let (Some(min), Some(max)) = (llama.ngram_min, llama.ngram_max) {
                if min > max {
                    return Err(Error::invalid(
                        field("ngram_min"),
                        format!(
                            "Invalid config: `ngram_min` of `{tag}` is {min}, more than its \
                             `ngram_max` {max}"
                        ),
                    ));
                }
            }
            backend_check(predictor).map_err(|e| {
                // Backend checks name the option; say where it is in the config.
                match &e.param {
                    Some(param) if !param.starts_with("predictors[") => {
                        let param = field(param);
                        e.with_param(param)
                    }
                    _ => e,
                }
            })?;
        }
        Ok(())
    }

    /// The config file named by `INGLE_CONFIG`, or the default model.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os("INGLE_CONFIG") {
            Some(path) if !path.is_empty() => Config::from_file(Path::new(&path)),
            _ => Ok(Config::default()),
        }
    }

    /// Where `predictor`'s model file is.
    pub fn model_path(&self, predictor: &PredictorConfig) -> PathBuf {
        self.resolve(&predictor.model)
    }

    /// `path` taken inside the models directory, unless it is absolute.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        let dir = self.models_dir.clone().unwrap_or_else(default_models_dir);
        dir.join(path)
    }

    /// Where the ONNX Runtime library is: the config's `onnxruntime`, else `$ORT_DYLIB_PATH`,
    /// else the GPU build ([`DEFAULT_ONNXRUNTIME_GPU_FILE`]) in the models directory where it
    /// was pulled, NVIDIA's driver is on the machine and `INGLE_DEVICE` allows CUDA, else
    /// [`DEFAULT_ONNXRUNTIME_FILE`] in the models directory.
    pub fn onnxruntime_path(&self) -> PathBuf {
        if let Some(path) = &self.onnxruntime {
            return self.resolve(path);
        }
        if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
        let gpu = self.resolve(Path::new(DEFAULT_ONNXRUNTIME_GPU_FILE));
        if gpu.is_file() && crate::devices::cuda_allowed_and_driver() {
            return gpu;
        }
        self.resolve(Path::new(DEFAULT_ONNXRUNTIME_FILE))
    }
}

/// A configured path: not empty, no NUL byte (no file system path holds one), and for a
/// directory not a file.
fn check_path(field: &str, path: Option<&Path>, directory: bool) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    let text = path.to_string_lossy();
    let problem = if text.is_empty() {
        "must not be empty"
    } else if text.contains('\0') {
        "contains a NUL byte, which no path can hold"
    } else if directory && path.is_file() {
        "is a file, not a directory"
    } else if !directory && path.is_dir() {
        "is a directory, not a file"
    } else {
        return Ok(());
    };
    Err(Error::invalid(
        field,
        format!(
            "Invalid config: `{field}` {problem} ({})",
            crate::error::shown(&text).escape_debug()
        ),
    ))
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home() -> PathBuf {
    env_path("HOME").unwrap_or_else(|| PathBuf::from("."))
}

/// `$INGLE_MODELS_DIR`, else `${XDG_CACHE_HOME:-~/.cache}/ingle/models`.
pub fn default_models_dir() -> PathBuf {
    if let Some(dir) = env_path("INGLE_MODELS_DIR") {
        return dir;
    }
    let cache = env_path("XDG_CACHE_HOME").unwrap_or_else(|| home().join(".cache"));
    cache.join("ingle").join("models")
}

/// `$INGLE_RESPONSES_STORE`, else `${XDG_DATA_HOME:-~/.local/share}/ingle/responses.sqlite3`:
/// data, not a cache, since a stored conversation cannot be made again.
pub fn default_responses_store() -> PathBuf {
    if let Some(path) = env_path("INGLE_RESPONSES_STORE") {
        return path;
    }
    let data = env_path("XDG_DATA_HOME").unwrap_or_else(|| home().join(".local").join("share"));
    data.join("ingle").join("responses.sqlite3")
}

mod predictor;
pub use predictor::*;

#[cfg(test)]
#[path = "config/tests.rs"]
mod tests;
