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
use std::collections::BTreeMap;
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

/// One predictor of the config: what every backend has, and the options of its backend
/// ([`BackendOptions`], tagged by `backend`). Each backend's options are a closed list: one of
/// another backend's in a config is an error when the config is read, naming it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "PredictorForm")]
pub struct PredictorConfig {
    pub tag: String,
    /// Model file; a relative path is taken inside the models directory.
    pub model: PathBuf,
    /// CPU threads for decoding (llama) or for each operator (ONNX Runtime's intra-op
    /// threads). Default: the number of physical cores.
    pub threads: Option<u32>,
    /// Register the predictor only when its files exist (how the default embedding model is
    /// listed only once `ingle pull` has fetched it).
    pub if_present: bool,
    /// `backend` and its options.
    pub options: BackendOptions,
    /// Options of another backend given to a builder (`.n_ctx(..)` on an embedding model),
    /// which has nowhere to keep them: refused by name when the client is made, as a config
    /// text's are when it is read.
    pub(crate) misplaced: Vec<&'static str>,
}

/// A predictor's engine (`backend = "..."` in the config) and that engine's options.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendOptions {
    Llama(LlamaOptions),
    OnnxEmbedding(EmbeddingOptions),
    Piper(SpeechOptions),
    Whisper(WhisperOptions),
}

/// The options of a llama.cpp chat or text model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlamaOptions {
    /// Context size (tokens) available to each request. Default 2048, capped at the model's.
    pub n_ctx: Option<u32>,
    /// How many requests are decoded side by side (sequences of one batch). Default 4.
    pub parallel: Option<u32>,
    /// Layers put on the GPU (`scripts/build-gpu-modules`; 0: none). Default: all that fit in
    /// the device's free memory with the KV cache, fewer where they do not. A number given is
    /// an error where it does not fit.
    pub n_gpu_layers: Option<u32>,
    /// The GPU the model runs on, by index among the GPUs (`0`), ggml name (`Vulkan0`,
    /// `CUDA1`) or a part of its description (`H100`); `cpu` for none. Default: the GPU with
    /// the most free memory. An index may be written as a TOML integer (`device = 0`).
    pub device: Option<String>,
    /// A chat template (a llama.cpp template name such as `chatml`, or the template text)
    /// used when the model has none, or to override its own.
    pub chat_template: Option<String>,
    /// Sampling used where a request leaves it unset (`[predictors.defaults]`); what is not
    /// set here comes from the GGUF's `general.sampling.*` keys, else llama.cpp's server
    /// defaults.
    pub defaults: SamplingDefaults,
}

/// The options of a sentence-embedding model on ONNX Runtime.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbeddingOptions {
    /// The model's `tokenizer.json`; a relative path is taken inside the models directory.
    /// Needed, except for a Hugging Face reference, whose repo has it.
    pub tokenizer: Option<PathBuf>,
    /// Most tokens read of one input (special tokens included); longer inputs are truncated.
    /// Default 256, all-MiniLM-L6-v2's window.
    pub max_length: Option<u32>,
    /// How the tokens' states become one vector: `mean` (over the real tokens, the default)
    /// or `cls` (the first token's), as its `1_Pooling/config.json` says.
    pub pooling: Option<Pooling>,
}

/// The options of a Piper voice on ONNX Runtime.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpeechOptions {
    /// The voice's `.onnx.json`; default: the model path + `.json`.
    pub voice_config: Option<PathBuf>,
    /// OpenAI voice names (`alloy`, `nova`, ...) to voices of the model. A name not listed
    /// speaks with the model's default voice.
    pub voices: BTreeMap<String, String>,
}

/// The options of a Whisper model on ONNX Runtime: none beyond every predictor's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WhisperOptions {}

/// A predictor as a config file writes it: every backend's options in one table, read with
/// the path of a bad value (`predictors[0].n_gpu_layers`), then sorted into its backend's
/// options, where one of another backend is an error naming it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PredictorForm {
    tag: String,
    backend: Backend,
    model: PathBuf,
    #[serde(default)]
    threads: Option<u32>,
    #[serde(default)]
    if_present: bool,
    #[serde(default)]
    n_ctx: Option<u32>,
    #[serde(default)]
    parallel: Option<u32>,
    #[serde(default)]
    n_gpu_layers: Option<u32>,
    #[serde(default, deserialize_with = "device_name_or_index")]
    device: Option<String>,
    #[serde(default)]
    chat_template: Option<String>,
    #[serde(default)]
    defaults: Option<SamplingDefaults>,
    #[serde(default)]
    tokenizer: Option<PathBuf>,
    #[serde(default)]
    max_length: Option<u32>,
    #[serde(default)]
    pooling: Option<Pooling>,
    #[serde(default)]
    voice_config: Option<PathBuf>,
    #[serde(default)]
    voices: Option<BTreeMap<String, String>>,
}

/// Each backend's own options, beyond every predictor's.
fn options_of(backend: Backend) -> &'static [&'static str] {
    match backend {
        Backend::Llama => &[
            "n_ctx",
            "parallel",
            "n_gpu_layers",
            "device",
            "chat_template",
            "defaults",
        ],
        Backend::OnnxEmbedding => &["tokenizer", "max_length", "pooling"],
        Backend::Piper => &["voice_config", "voices"],
        Backend::Whisper => &[],
    }
}

/// What an option of another backend is told, read from a config or given to a builder. It
/// starts with the option in backticks: [`config_param`] reads it back for the error's `param`.
pub(crate) fn misplaced_option(option: &str, backend: Backend, tag: &str) -> String {
    let takes = match options_of(backend) {
        [] => "none but every predictor's".to_string(),
        own => own
            .iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "`{option}` is not an option of backend `{}` (predictor `{}`; it takes {takes})",
        backend.name(),
        crate::error::shown(tag)
    )
}

/// The `param` of a config error at `path`: the misplaced option's own path
/// (`predictors[0].n_ctx`) when the message is [`misplaced_option`]'s, else `config`.
fn config_param(path: &str, message: &str) -> String {
    let option = message
        .strip_prefix('`')
        .and_then(|rest| rest.split_once("` is not an option of backend `"))
        .map(|(option, _)| option)
        .filter(|o| !o.is_empty() && o.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
    match option {
        Some(option) if !path.is_empty() && path != "." => format!("{path}.{option}"),
        _ => "config".to_string(),
    }
}

impl TryFrom<PredictorForm> for PredictorConfig {
    type Error = String;

    fn try_from(form: PredictorForm) -> std::result::Result<Self, String> {
        // Empty counts as not given, as an absent table does.
        let given = [
            ("n_ctx", form.n_ctx.is_some()),
            ("parallel", form.parallel.is_some()),
            ("n_gpu_layers", form.n_gpu_layers.is_some()),
            ("device", form.device.is_some()),
            ("chat_template", form.chat_template.is_some()),
            (
                "defaults",
                form.defaults
                    .is_some_and(|d| d != SamplingDefaults::default()),
            ),
            ("tokenizer", form.tokenizer.is_some()),
            ("max_length", form.max_length.is_some()),
            ("pooling", form.pooling.is_some()),
            ("voice_config", form.voice_config.is_some()),
            (
                "voices",
                form.voices.as_ref().is_some_and(|v| !v.is_empty()),
            ),
        ];
        let own = options_of(form.backend);
        if let Some((option, _)) = given.iter().find(|(o, set)| *set && !own.contains(o)) {
            return Err(misplaced_option(option, form.backend, &form.tag));
        }
        let options = match form.backend {
            Backend::Llama => BackendOptions::Llama(LlamaOptions {
                n_ctx: form.n_ctx,
                parallel: form.parallel,
                n_gpu_layers: form.n_gpu_layers,
                device: form.device,
                chat_template: form.chat_template,
                defaults: form.defaults.unwrap_or_default(),
            }),
            Backend::OnnxEmbedding => BackendOptions::OnnxEmbedding(EmbeddingOptions {
                tokenizer: form.tokenizer,
                max_length: form.max_length,
                pooling: form.pooling,
            }),
            Backend::Piper => BackendOptions::Piper(SpeechOptions {
                voice_config: form.voice_config,
                voices: form.voices.unwrap_or_default(),
            }),
            Backend::Whisper => BackendOptions::Whisper(WhisperOptions {}),
        };
        Ok(PredictorConfig {
            tag: form.tag,
            model: form.model,
            threads: form.threads,
            if_present: form.if_present,
            options,
            misplaced: Vec::new(),
        })
    }
}

/// A chat model's recommended sampling, used for what a request leaves unset. A request's own
/// value always wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingDefaults {
    /// 0 to 2; 0 is greedy.
    pub temperature: Option<f64>,
    /// 0 to 1; 1 turns it off.
    pub top_p: Option<f64>,
    /// 0 or more; 0 turns it off.
    pub top_k: Option<i64>,
    /// 0 to 1; 0 turns it off.
    pub min_p: Option<f64>,
    /// 0.1 to 2; 1 turns it off. Applies when sampling (temperature above 0).
    pub repetition_penalty: Option<f64>,
}

impl SamplingDefaults {
    /// Each field of `self`, else of `other`.
    pub fn or(self, other: SamplingDefaults) -> SamplingDefaults {
        SamplingDefaults {
            temperature: self.temperature.or(other.temperature),
            top_p: self.top_p.or(other.top_p),
            top_k: self.top_k.or(other.top_k),
            min_p: self.min_p.or(other.min_p),
            repetition_penalty: self.repetition_penalty.or(other.repetition_penalty),
        }
    }

    /// Checks each set value's range; an error names `field.<name>`.
    pub fn check(&self, field: &str) -> Result<()> {
        let ranges = [
            ("temperature", self.temperature, 0.0, 2.0),
            ("top_p", self.top_p, 0.0, 1.0),
            (
                "top_k",
                self.top_k.map(|k| k as f64),
                0.0,
                f64::from(u32::MAX),
            ),
            ("min_p", self.min_p, 0.0, 1.0),
            ("repetition_penalty", self.repetition_penalty, 0.1, 2.0),
        ];
        for (name, value, min, max) in ranges {
            if let Some(value) = value.filter(|v| !(min..=max).contains(v)) {
                return Err(Error::invalid(
                    format!("{field}.{name}"),
                    format!("Invalid config: `{field}.{name}` is {value}; it must be from {min} to {max}"),
                ));
            }
        }
        Ok(())
    }
}

impl PredictorConfig {
    fn of(tag: impl Into<String>, model: impl Into<PathBuf>, options: BackendOptions) -> Self {
        PredictorConfig {
            tag: tag.into(),
            model: model.into(),
            threads: None,
            if_present: false,
            options,
            misplaced: Vec::new(),
        }
    }

    /// A GGUF chat or text model on llama.cpp.
    pub fn llama(tag: impl Into<String>, model: impl Into<PathBuf>) -> Self {
        PredictorConfig::of(tag, model, BackendOptions::Llama(LlamaOptions::default()))
    }

    /// A Piper voice on ONNX Runtime: its `.onnx` (the `.onnx.json` beside it).
    pub fn speech(tag: impl Into<String>, model: impl Into<PathBuf>) -> Self {
        PredictorConfig::of(tag, model, BackendOptions::Piper(SpeechOptions::default()))
    }

    /// A Whisper model on ONNX Runtime: its CTranslate2 `model.bin` (`config.json` and
    /// `tokenizer.json` beside it).
    pub fn transcription(tag: impl Into<String>, model: impl Into<PathBuf>) -> Self {
        PredictorConfig::of(tag, model, BackendOptions::Whisper(WhisperOptions {}))
    }

    /// A sentence-embedding model on ONNX Runtime: its ONNX graph and its `tokenizer.json`.
    pub fn embedding(
        tag: impl Into<String>,
        model: impl Into<PathBuf>,
        tokenizer: impl Into<PathBuf>,
    ) -> Self {
        let options = EmbeddingOptions {
            tokenizer: Some(tokenizer.into()),
            ..EmbeddingOptions::default()
        };
        PredictorConfig::of(tag, model, BackendOptions::OnnxEmbedding(options))
    }

    /// The engine that runs it.
    pub fn backend(&self) -> Backend {
        match self.options {
            BackendOptions::Llama(_) => Backend::Llama,
            BackendOptions::OnnxEmbedding(_) => Backend::OnnxEmbedding,
            BackendOptions::Piper(_) => Backend::Piper,
            BackendOptions::Whisper(_) => Backend::Whisper,
        }
    }

    /// A llama model's options (None for another backend's).
    pub fn llama_options(&self) -> Option<&LlamaOptions> {
        match &self.options {
            BackendOptions::Llama(options) => Some(options),
            _ => None,
        }
    }

    /// An embedding model's options (None for another backend's).
    pub fn embedding_options(&self) -> Option<&EmbeddingOptions> {
        match &self.options {
            BackendOptions::OnnxEmbedding(options) => Some(options),
            _ => None,
        }
    }

    /// A Piper voice's options (None for another backend's).
    pub fn speech_options(&self) -> Option<&SpeechOptions> {
        match &self.options {
            BackendOptions::Piper(options) => Some(options),
            _ => None,
        }
    }

    /// Options of another backend than this predictor's that a builder was given.
    pub fn misplaced_options(&self) -> &[&'static str] {
        &self.misplaced
    }

    /// Changes a llama model's options; on another backend's predictor, which has none of
    /// them, notes `option` as misplaced (refused when the client is made).
    fn with_llama(mut self, option: &'static str, change: impl FnOnce(&mut LlamaOptions)) -> Self {
        match &mut self.options {
            BackendOptions::Llama(options) => change(options),
            _ => self.misplaced.push(option),
        }
        self
    }

    /// Speaks the OpenAI voice `openai_name` (`alloy`, ...) with the model's voice `voice` (a
    /// Piper voice's option).
    pub fn voice(mut self, openai_name: impl Into<String>, voice: impl Into<String>) -> Self {
        match &mut self.options {
            BackendOptions::Piper(options) => {
                options.voices.insert(openai_name.into(), voice.into());
            }
            _ => self.misplaced.push("voices"),
        }
        self
    }

    /// An embedding model's window.
    pub fn max_length(mut self, max_length: u32) -> Self {
        match &mut self.options {
            BackendOptions::OnnxEmbedding(options) => options.max_length = Some(max_length),
            _ => self.misplaced.push("max_length"),
        }
        self
    }

    /// An embedding model's pooling.
    pub fn pooling(mut self, pooling: Pooling) -> Self {
        match &mut self.options {
            BackendOptions::OnnxEmbedding(options) => options.pooling = Some(pooling),
            _ => self.misplaced.push("pooling"),
        }
        self
    }

    /// Serves the predictor only while its files exist; while they do not, a predictor
    /// registered under its tag takes its place.
    pub fn if_present(mut self) -> Self {
        self.if_present = true;
        self
    }

    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = Some(threads);
        self
    }

    /// A llama model's context per request (the options below are a llama model's too).
    pub fn n_ctx(self, n_ctx: u32) -> Self {
        self.with_llama("n_ctx", |o| o.n_ctx = Some(n_ctx))
    }

    pub fn n_gpu_layers(self, layers: u32) -> Self {
        self.with_llama("n_gpu_layers", |o| o.n_gpu_layers = Some(layers))
    }

    pub fn device(self, device: impl Into<String>) -> Self {
        self.with_llama("device", |o| o.device = Some(device.into()))
    }

    pub fn parallel(self, parallel: u32) -> Self {
        self.with_llama("parallel", |o| o.parallel = Some(parallel))
    }

    /// The sampling used where a request leaves it unset.
    pub fn defaults(self, defaults: SamplingDefaults) -> Self {
        self.with_llama("defaults", |o| o.defaults = defaults)
    }

    pub fn chat_template(self, template: impl Into<String>) -> Self {
        self.with_llama("chat_template", |o| o.chat_template = Some(template.into()))
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

/// `device` as a string, or a GPU's index as a non-negative integer (`device = 0`).
fn device_name_or_index<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<String>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum NameOrIndex {
        Name(String),
        Index(u32),
    }
    match <Option<NameOrIndex> as serde::Deserialize>::deserialize(deserializer) {
        Ok(value) => Ok(value.map(|v| match v {
            NameOrIndex::Name(name) => name,
            NameOrIndex::Index(index) => index.to_string(),
        })),
        Err(_) => Err(serde::de::Error::custom(
            "expected a GPU's index (0, 1...), its name (`CUDA0`, `Vulkan0`), a part of its \
             description (`H100`), or `cpu`",
        )),
    }
}

#[cfg(test)]
#[path = "config/tests.rs"]
mod tests;
