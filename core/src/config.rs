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
//! # chat_template = "chatml"            # when the GGUF has no template
//! ```

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The tag of the model ingle serves when no config is given.
pub const DEFAULT_MODEL: &str = "@local/smollm2-135m-instruct";
/// The file of the default model, inside the models directory.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// What a user runs to download the default models.
pub const FETCH_COMMAND: &str = "scripts/fetch-models";

/// Which engine runs a predictor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// llama.cpp, for GGUF chat and text completion models.
    Llama,
}

/// One predictor of the config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictorConfig {
    pub tag: String,
    pub backend: Backend,
    /// Model file; a relative path is taken inside the models directory.
    pub model: PathBuf,
    /// Context size (tokens) available to each request. Default 2048, capped at the model's.
    #[serde(default)]
    pub n_ctx: Option<u32>,
    /// CPU threads for decoding. Default: the number of physical cores.
    #[serde(default)]
    pub threads: Option<u32>,
    /// How many requests are decoded side by side (sequences of one batch). Default 4.
    #[serde(default)]
    pub parallel: Option<u32>,
    /// A chat template (a llama.cpp template name such as `chatml`, or the template text)
    /// used when the model has none, or to override its own.
    #[serde(default)]
    pub chat_template: Option<String>,
}

impl PredictorConfig {
    pub fn llama(tag: impl Into<String>, model: impl Into<PathBuf>) -> Self {
        PredictorConfig {
            tag: tag.into(),
            backend: Backend::Llama,
            model: model.into(),
            n_ctx: None,
            threads: None,
            parallel: None,
            chat_template: None,
        }
    }

    pub fn n_ctx(mut self, n_ctx: u32) -> Self {
        self.n_ctx = Some(n_ctx);
        self
    }

    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = Some(threads);
        self
    }

    pub fn parallel(mut self, parallel: u32) -> Self {
        self.parallel = Some(parallel);
        self
    }

    pub fn chat_template(mut self, template: impl Into<String>) -> Self {
        self.chat_template = Some(template.into());
        self
    }
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
}

impl Default for Config {
    /// The default model from the models cache.
    fn default() -> Self {
        Config::empty().predictor(PredictorConfig::llama(DEFAULT_MODEL, DEFAULT_MODEL_FILE))
    }
}

impl Config {
    /// A config with no predictors.
    pub fn empty() -> Self {
        Config {
            models_dir: None,
            predictors: Vec::new(),
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

    pub fn from_toml(text: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| {
            Error::invalid(
                "config",
                format!("Invalid ingle config: {}", e.message().trim()),
            )
        })
    }

    /// The same fields as the TOML file, as a JSON object (what the C and JS bindings take).
    pub fn from_json(text: &str) -> Result<Self> {
        let deserializer = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!(" at `{path}`")
            };
            Error::invalid(
                "config",
                format!("Invalid ingle config{at}: {}", e.into_inner()),
            )
        })
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
        // Relative models_dir in a file means relative to the file.
        if let (Some(dir), Some(parent)) = (&config.models_dir, path.parent()) {
            if dir.is_relative() {
                config.models_dir = Some(parent.join(dir));
            }
        }
        Ok(config)
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
        let dir = self.models_dir.clone().unwrap_or_else(default_models_dir);
        dir.join(&predictor.model)
    }
}

/// `$INGLE_MODELS_DIR`, else `${XDG_CACHE_HOME:-~/.cache}/ingle/models`.
pub fn default_models_dir() -> PathBuf {
    let non_empty = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = non_empty("INGLE_MODELS_DIR") {
        return dir;
    }
    let cache = non_empty("XDG_CACHE_HOME").unwrap_or_else(|| {
        non_empty("HOME")
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".cache")
    });
    cache.join("ingle").join("models")
}
