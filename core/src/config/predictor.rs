//! One predictor of a config: what every backend has, and its backend's own options.

use super::{Backend, Pooling};
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
    /// Jump-forward decoding of constrained output: the tokens a grammar leaves no choice
    /// about are appended and decoded in one batch instead of sampled one by one
    /// (docs/tools.md). Default on; `false` to compare against, or to have the model choose
    /// its own tokenization of fixed text.
    pub jump_forward: Option<bool>,
    /// Speculative decoding by n-gram lookup (prompt lookup): the continuation of the last
    /// `ngram_max`..`ngram_min` tokens where they occurred before in the prompt or output is
    /// proposed, up to `draft_max` tokens, and verified in one batch (docs/speed.md). Default
    /// off.
    pub ngram_speculation: Option<bool>,
    /// Most tokens proposed per step (1 to 64; default 15: measured best on 2 CPU cores,
    /// docs/speed.md).
    pub draft_max: Option<u32>,
    /// Shortest and longest n-gram looked up (1 to 16; default 2 and 4).
    pub ngram_min: Option<u32>,
    pub ngram_max: Option<u32>,
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
    jump_forward: Option<bool>,
    #[serde(default)]
    ngram_speculation: Option<bool>,
    #[serde(default)]
    draft_max: Option<u32>,
    #[serde(default)]
    ngram_min: Option<u32>,
    #[serde(default)]
    ngram_max: Option<u32>,
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
            "jump_forward",
            "ngram_speculation",
            "draft_max",
            "ngram_min",
            "ngram_max",
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
pub(super) fn config_param(path: &str, message: &str) -> String {
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
            ("jump_forward", form.jump_forward.is_some()),
            ("ngram_speculation", form.ngram_speculation.is_some()),
            ("draft_max", form.draft_max.is_some()),
            ("ngram_min", form.ngram_min.is_some()),
            ("ngram_max", form.ngram_max.is_some()),
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
                jump_forward: form.jump_forward,
                ngram_speculation: form.ngram_speculation,
                draft_max: form.draft_max,
                ngram_min: form.ngram_min,
                ngram_max: form.ngram_max,
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

    /// Jump-forward decoding of constrained output (default on).
    pub fn jump_forward(self, on: bool) -> Self {
        self.with_llama("jump_forward", |o| o.jump_forward = Some(on))
    }

    /// Speculative decoding by n-gram lookup (default off).
    pub fn ngram_speculation(self, on: bool) -> Self {
        self.with_llama("ngram_speculation", |o| o.ngram_speculation = Some(on))
    }

    /// Most tokens proposed per step by speculative decoding.
    pub fn draft_max(self, tokens: u32) -> Self {
        self.with_llama("draft_max", |o| o.draft_max = Some(tokens))
    }
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
