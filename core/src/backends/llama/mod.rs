//! llama.cpp (via `llama-cpp-2`): chat and text completion from GGUF files.
//!
//! Concurrency: each model has **one scheduler thread** owning **one context** with `parallel`
//! sequences (non-unified KV cache, so each request gets a fixed `n_ctx`). Every step decodes a
//! single batch holding one token for each generating request plus prompt chunks of newly
//! admitted ones (continuous batching, as llama.cpp's server does). Requests therefore progress
//! side by side instead of queueing behind a lock, on one thread team sized to the physical
//! cores. Separate models decode on separate schedulers, so each decode first takes its
//! threads' worth of the process's cores (`cores.rs`): two teams on the same cores ran 3x
//! slower on 2 cores. Requests beyond `parallel` wait in a queue for a free sequence. See
//! docs/architecture.md.

mod constrain;
pub mod cpu;
mod options;
pub mod template;
mod text;

pub use super::cores::{capped_threads, default_threads};
use crate::chat::tool_calls::{Piece, ToolCallParser, ToolFormat, HERMES};
use crate::config::{PredictorConfig, SamplingDefaults};
use crate::error::{Error, Result};
use crate::predict::{
    Annotation, GenerationOption, Inputs, Metrics, OutputStream, Outputs, Parameter, Predictor,
    PredictorKind, Signature,
};
use crate::value::{Value, ValueType};
use constrain::{Grammars, ToolSpec};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;
use options::{RequestOptions, ToolChoice};
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};

/// How the models ingle serves write tool calls (Qwen2.5 and most open models of its time).
const TOOL_FORMAT: ToolFormat = HERMES;
use llguidance::Matcher;
use template::ChatTemplate;
use text::{StopMatcher, Utf8Assembler};

/// Default context size per request.
pub const DEFAULT_N_CTX: u32 = 2048;
/// Default number of requests decoded side by side.
pub const DEFAULT_PARALLEL: u32 = 4;
/// Tokens per decode call; longer prompts are fed in chunks.
const N_BATCH: u32 = 512;
/// Most stop sequences a request may give, as in the OpenAI API.
pub const MAX_STOP_SEQUENCES: usize = 4;
/// Most alternatives reported with each token's log probability, as in the OpenAI API.
pub const MAX_TOP_LOGPROBS: usize = 20;

/// The process-wide llama.cpp backend (llama.cpp allows one initialisation per process).
/// Its logs go to `tracing`, and are dropped unless `INGLE_LOG` is set.
pub fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let enabled = std::env::var_os("INGLE_LOG").is_some_and(|v| !v.is_empty());
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(enabled),
            );
            // The CPU kernels are a module picked for this machine; nothing runs without one.
            cpu::load()?;
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::model(format!("Cannot initialise llama.cpp: {e}")))
}

/// Config options this backend has no use for.
pub const UNUSED_OPTIONS: &[&str] = &["tokenizer", "max_length", "voice_config", "voices"];

/// Checks that llama.cpp can apply `template` (a template name such as `chatml`, or a
/// template text it recognises), by rendering one message with it; no model is needed.
pub fn check_chat_template(template: &str) -> Result<()> {
    if is_jinja(template) {
        return ChatTemplate::new("config", template, "", "")
            .map(drop)
            .map_err(|e| Error::invalid("chat_template", e.message));
    }
    let invalid = |why: &str| {
        Error::invalid(
            "chat_template",
            format!(
                "Invalid config: `chat_template` {why} (got `{}`); give a llama.cpp template \
                 name such as `chatml`, `llama3`, `gemma`, or a template text llama.cpp recognises",
                crate::error::shown(template).escape_debug()
            ),
        )
    };
    let text = std::ffi::CString::new(template).map_err(|_| invalid("contains a NUL byte"))?;
    let (role, content) = (c"user", c"x");
    let message = llama_cpp_sys_2::llama_chat_message {
        role: role.as_ptr(),
        content: content.as_ptr(),
    };
    let mut buffer = vec![0 as std::ffi::c_char; 256];
    // SAFETY: every pointer is valid for the call; the buffer's length is passed with it.
    let written = unsafe {
        llama_cpp_sys_2::llama_chat_apply_template(
            text.as_ptr(),
            &message,
            1,
            true,
            buffer.as_mut_ptr(),
            buffer.len() as i32,
        )
    };
    if written < 0 {
        return Err(invalid("is not a template llama.cpp knows"));
    }
    Ok(())
}

/// The signature every llama predictor has: chat messages or a prompt in, text deltas out.
pub fn signature() -> Signature {
    use GenerationOption as G;
    let option = |name: &str, ty, option| {
        Parameter::new(name, ty)
            .optional()
            .annotated(Annotation::Generation(option))
    };
    Signature::new(
        vec![
            Parameter::new("messages", ValueType::List)
                .optional()
                .annotated(Annotation::ChatMessages)
                .describe("Chat messages, each {role, content}; give this or `prompt`."),
            Parameter::new("prompt", ValueType::String)
                .optional()
                .annotated(Annotation::Prompt)
                .describe("Raw text to continue; give this or `messages`."),
            option("max_tokens", ValueType::Int, G::MaxTokens)
                .range(Some(1.0), None)
                .describe("Most tokens to generate; default: the rest of the context."),
            // No defaults in the signature: what a request leaves unset is the model's
            // recommended sampling (`SamplingDefaults`), known only once it is loaded.
            option("temperature", ValueType::Float, G::Temperature)
                .range(Some(0.0), Some(2.0))
                .describe(
                    "Sampling temperature; 0 picks the most likely token (greedy). Default: \
                     the model's recommended (config `defaults`, the GGUF's, else 0.8).",
                ),
            option("top_p", ValueType::Float, G::TopP)
                .range(Some(0.0), Some(1.0))
                .describe(
                    "Nucleus sampling: sample from the smallest set of tokens above this mass. \
                     Default: the model's recommended, else 0.95.",
                ),
            option("top_k", ValueType::Int, G::TopK)
                .range(Some(0.0), Some(f64::from(u32::MAX)))
                .describe(
                    "Sample from the k most likely tokens; 0 turns it off. Default: the \
                     model's recommended, else 40.",
                ),
            option("min_p", ValueType::Float, G::MinP)
                .range(Some(0.0), Some(1.0))
                .describe(
                    "Drop tokens less likely than this fraction of the most likely one; 0 \
                     turns it off. Default: the model's recommended, else 0.05.",
                ),
            option("repetition_penalty", ValueType::Float, G::RepetitionPenalty)
                .range(Some(0.1), Some(2.0))
                .describe(
                    "Divide the logits of tokens already in the context by this; 1 turns it \
                     off. Default when sampling: the model's recommended, else 1.",
                ),
            option("chat_template_kwargs", ValueType::Dict, G::ChatTemplateKwargs).describe(
                "Extra variables for the model's Jinja chat template (`enable_thinking`...).",
            ),
            option("seed", ValueType::Int, G::Seed)
                .describe("Seed of the sampler; the same seed and inputs give the same text."),
            option("stop", ValueType::List, G::Stop)
                .describe("Up to 4 strings; generation stops before any of them."),
            option("frequency_penalty", ValueType::Float, G::FrequencyPenalty)
                .default_value(0.0)
                .range(Some(-2.0), Some(2.0))
                .describe("Penalise tokens by how often they already appear in the output."),
            option("presence_penalty", ValueType::Float, G::PresencePenalty)
                .default_value(0.0)
                .range(Some(-2.0), Some(2.0))
                .describe("Penalise tokens that already appear in the output."),
            option("tools", ValueType::List, G::Tools).describe(
                "Function tools the model may call, as in the OpenAI API; the model's chat \
                 template must support tools.",
            ),
            option("tool_choice", ValueType::Dict, G::ToolChoice).describe(
                "{type: auto | none | required} or {type: function, function: {name}}; \
                 default auto when tools are given.",
            ),
            option("parallel_tool_calls", ValueType::Bool, G::ParallelToolCalls)
                .default_value(true)
                .describe("Whether a reply may hold several tool calls."),
            option("response_format", ValueType::Dict, G::ResponseFormat).describe(
                "{type: text | json_object} or {type: json_schema, json_schema: {name, \
                 schema}}: JSON output, enforced by a grammar.",
            ),
            option("logprobs", ValueType::Int, G::Logprobs)
                .range(Some(0.0), Some(MAX_TOP_LOGPROBS as f64))
                .describe(
                    "Report each token's log probability with this many most likely \
                     alternatives; absent: no log probabilities.",
                ),
            option("logit_bias", ValueType::Dict, G::LogitBias).describe(
                "Token id (a string) → bias from -100 to 100 added to its logit; -100 bans it.",
            ),
        ],
        vec![
            Parameter::new("text", ValueType::String)
                .annotated(Annotation::TextDelta)
                .describe("Text generated since the previous output."),
            Parameter::new("finish_reason", ValueType::String)
                .optional()
                .annotated(Annotation::FinishReason)
                .describe("`stop` or `length` on the last output, else null."),
            Parameter::new("usage", ValueType::Dict)
                .optional()
                .annotated(Annotation::Usage)
                .describe("{prompt_tokens, completion_tokens, cached_tokens} on the last output, else null; \
                     cached_tokens: prompt tokens whose KV was reused from the prompt cache."),
            Parameter::new("tool_calls", ValueType::List)
                .optional()
                .annotated(Annotation::ToolCalls)
                .describe("Tool-call deltas since the previous output, when tools are given."),
            Parameter::new("logprobs", ValueType::List)
                .optional()
                .annotated(Annotation::TokenLogprobs)
                .describe("Log probabilities of this output's tokens, when asked for."),
        ],
    )
}

/// The sampling a model uses where a request leaves it unset, resolved at load.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sampling {
    temperature: f64,
    top_p: f64,
    top_k: i64,
    min_p: f64,
    repetition_penalty: f64,
}

impl Sampling {
    /// llama.cpp's server defaults, for what neither the config nor the GGUF sets.
    const LLAMA_CPP_SERVER: SamplingDefaults = SamplingDefaults {
        temperature: Some(0.8),
        top_p: Some(0.95),
        top_k: Some(40),
        min_p: Some(0.05),
        repetition_penalty: Some(1.0),
    };

    /// Each value from the config's `defaults`, else the GGUF's `general.sampling.*` keys
    /// (written by conversions that know the model's recommendation), else llama.cpp's server
    /// defaults. A GGUF value out of range is ignored.
    fn of(model: &LlamaModel, config: &SamplingDefaults) -> Sampling {
        let gguf = |key: &str, min: f64, max: f64| {
            model
                .meta_val_str(&format!("general.sampling.{key}"))
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| (min..=max).contains(v))
        };
        let from_gguf = SamplingDefaults {
            temperature: gguf("temp", 0.0, 2.0),
            top_p: gguf("top_p", 0.0, 1.0),
            top_k: gguf("top_k", 0.0, f64::from(u32::MAX)).map(|k| k as i64),
            min_p: gguf("min_p", 0.0, 1.0),
            repetition_penalty: gguf("penalty_repeat", 0.1, 2.0),
        };
        let d = config.or(from_gguf).or(Self::LLAMA_CPP_SERVER);
        Sampling {
            temperature: d.temperature.unwrap_or(0.8),
            top_p: d.top_p.unwrap_or(0.95),
            top_k: d.top_k.unwrap_or(40),
            min_p: d.min_p.unwrap_or(0.05),
            repetition_penalty: d.repetition_penalty.unwrap_or(1.0),
        }
    }
}

/// Counters shared by the predictor and its scheduler thread.
#[derive(Default)]
struct Counters {
    active: AtomicUsize,
    queued: AtomicUsize,
    generated: AtomicU64,
    cancelled: AtomicU64,
}

/// A GGUF model served by llama.cpp.
pub struct LlamaPredictor {
    tag: String,
    signature: Signature,
    model: Arc<LlamaModel>,
    template: Option<ChatFormat>,
    /// Whether the chat template has a place for tools (found once, at load).
    tools_supported: bool,
    /// The sampling used where a request leaves it unset.
    sampling: Sampling,
    grammars: Grammars,
    /// Context available to each request, in tokens.
    n_ctx: u32,
    /// Bytes of the longest token piece (special tokens included).
    max_piece_bytes: usize,
    jobs: mpsc::Sender<Job>,
    counters: Arc<Counters>,
}

impl LlamaPredictor {
    /// Loads the model (memory-mapped) and starts its scheduler thread.
    pub fn load(config: &PredictorConfig, model_path: &Path) -> Result<Self> {
        if model_path.is_dir() {
            return Err(Error::model(format!(
                "The model path {} of `{}` is a directory, not a GGUF file",
                model_path.display(),
                crate::error::shown(&config.tag)
            ))
            .with_param("model")
            .with_code("model_file_invalid"));
        }
        if !model_path.is_file() {
            return Err(Error::model(format!(
                "The model file {} for `{}` does not exist; {}",
                model_path.display(),
                crate::error::shown(&config.tag),
                crate::pull::missing_file_hint(model_path)
            ))
            .with_code("model_file_missing"));
        }
        check_gguf(model_path, &config.tag)?;
        let threads = capped_threads(config.threads, &config.tag);
        let mut parallel = config.parallel.unwrap_or(DEFAULT_PARALLEL);
        if parallel == 0 || parallel > crate::config::MAX_PARALLEL {
            return Err(Error::invalid(
                "parallel",
                format!(
                    "`parallel` of `{}` is {parallel}; it must be between 1 and {}",
                    crate::error::shown(&config.tag),
                    crate::config::MAX_PARALLEL
                ),
            ));
        }
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, model_path, &LlamaModelParams::default())
            .map_err(|e| {
            Error::model(format!(
                "Cannot load {} for `{}`: {e}",
                model_path.display(),
                config.tag
            ))
        })?;
        let mut n_ctx = config
            .n_ctx
            .unwrap_or(DEFAULT_N_CTX)
            .min(model.n_ctx_train())
            .max(crate::config::MIN_N_CTX);
        // Defaults fit the machine: what the config leaves out shrinks until the KV cache
        // takes at most half the memory available (what it sets is checked as given).
        if let Some(available) = available_memory() {
            let budget = available / 2;
            while kv_bytes(&model, n_ctx, parallel) > budget {
                if config.parallel.is_none() && parallel > 1 {
                    parallel /= 2;
                } else if config.n_ctx.is_none() && n_ctx / 2 >= crate::config::MIN_N_CTX {
                    n_ctx /= 2;
                } else {
                    break;
                }
            }
        }
        check_kv_memory(&model, n_ctx, parallel, &config.tag)?;
        let sampling = Sampling::of(&model, &config.defaults);
        let template = ChatFormat::of(&model, config)?;
        let tools_supported = template.as_ref().is_some_and(ChatFormat::supports_tools);
        // The longest text one token stands for: a prompt of B bytes is at least
        // B / max_piece_bytes tokens, which rejects what cannot fit before tokenizing it.
        let max_piece_bytes = model
            .tokens(true)
            .map(|(_, piece)| piece.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let model = Arc::new(model);
        let counters = Arc::new(Counters::default());
        let (jobs, job_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let scheduler = Scheduler {
            model: Arc::clone(&model),
            n_ctx,
            parallel,
            threads,
            counters: Arc::clone(&counters),
            kept: vec![Vec::new(); parallel as usize],
            last_used: vec![0; parallel as usize],
            clock: 0,
        };
        std::thread::Builder::new()
            .name(format!("ingle-llama {}", config.tag))
            .spawn(move || scheduler.run(job_rx, ready_tx))
            .map_err(|e| Error::internal(format!("Cannot start the scheduler thread: {e}")))?;
        ready_rx
            .recv()
            .map_err(|_| Error::internal("The scheduler thread stopped while starting"))??;
        Ok(LlamaPredictor {
            tag: config.tag.clone(),
            signature: signature(),
            model,
            template,
            tools_supported,
            sampling,
            grammars: Grammars::default(),
            n_ctx,
            max_piece_bytes,
            jobs,
            counters,
        })
    }

    /// The model, for callers that need llama.cpp directly (tokenizer checks, benchmarks).
    pub fn model(&self) -> &Arc<LlamaModel> {
        &self.model
    }

    /// Context available to each request, in tokens.
    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// Renders chat messages (and the tools the model may call) with the model's chat
    /// template, ending with the assistant's turn.
    pub fn render_chat(
        &self,
        messages: &[Value],
        tools: Option<&serde_json::Value>,
    ) -> Result<String> {
        self.render_chat_with(messages, tools, None)
    }

    /// [`Self::render_chat`] with extra template variables (`chat_template_kwargs`), which a
    /// Jinja template reads beside `messages` and `tools` (those cannot be overridden).
    pub fn render_chat_with(
        &self,
        messages: &[Value],
        tools: Option<&serde_json::Value>,
        kwargs: Option<&serde_json::Value>,
    ) -> Result<String> {
        let template = self.template.as_ref().ok_or_else(|| {
            Error::invalid(
                "model",
                format!(
                    "The model `{}` has no chat template, so it cannot serve chat completions; \
                     set `chat_template` in its config, or use text completions",
                    self.tag
                ),
            )
        })?;
        if messages.is_empty() {
            return Err(Error::invalid("messages", "`messages` must not be empty"));
        }
        for (i, message) in messages.iter().enumerate() {
            let ok = message
                .as_dict()
                .is_some_and(|m| m.get("role").and_then(Value::as_str).is_some());
            if !ok {
                return Err(Error::invalid(
                    format!("messages[{i}].role"),
                    format!("`messages[{i}]` must be an object with a string `role`"),
                ));
            }
        }
        match template {
            ChatFormat::Jinja(template) => {
                let messages = Value::List(messages.to_vec()).to_json()?;
                template.render(&messages, tools, true, kwargs)
            }
            ChatFormat::Builtin(template) => {
                if tools.is_some() {
                    return Err(self.no_tool_support());
                }
                if kwargs.is_some_and(|k| k.as_object().is_some_and(|o| !o.is_empty())) {
                    return Err(Error::invalid(
                        "chat_template_kwargs",
                        format!(
                            "The model `{}` uses one of llama.cpp's built-in chat templates, \
                             which take no `chat_template_kwargs`",
                            crate::error::shown(&self.tag)
                        ),
                    ));
                }
                self.render_builtin(template, messages)
            }
        }
    }

    fn no_tool_support(&self) -> Error {
        Error::invalid(
            "tools",
            format!(
                "The model `{}` cannot call tools: its chat template has no place for them",
                crate::error::shown(&self.tag)
            ),
        )
    }

    /// Renders with one of llama.cpp's built-in templates (a config naming one, such as
    /// `chatml`): `{role, content}` only.
    fn render_builtin(&self, template: &LlamaChatTemplate, messages: &[Value]) -> Result<String> {
        let mut chat = Vec::with_capacity(messages.len());
        for (i, message) in messages.iter().enumerate() {
            let field = |name: &str| {
                message
                    .as_dict()
                    .and_then(|m| m.get(name))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        Error::invalid(
                            format!("messages[{i}].{name}"),
                            format!("`messages[{i}]` must be an object with a string `{name}`"),
                        )
                    })
            };
            let (role, content) = (field("role")?, field("content")?);
            chat.push(
                LlamaChatMessage::new(role.to_string(), content.to_string()).map_err(|_| {
                    Error::invalid(
                        format!("messages[{i}].content"),
                        format!("`messages[{i}].content` contains a NUL byte, which llama.cpp's templates cannot take"),
                    )
                })?,
            );
        }
        self.model
            .apply_chat_template(template, &chat, true)
            .map_err(|e| {
                Error::model(format!(
                    "Cannot apply the chat template of `{}`: {e}",
                    self.tag
                ))
            })
    }

    /// Rejects a prompt of `bytes` bytes that is sure not to fit the context, before paying for
    /// its tokenization (a 10 MB message took seconds of every core): no token stands for more
    /// than `max_piece_bytes` bytes, so it is at least `bytes / max_piece_bytes` tokens.
    fn check_cannot_fit(&self, bytes: usize, param: &str) -> Result<()> {
        let at_least = bytes / self.max_piece_bytes;
        let n_ctx = self.n_ctx as usize;
        if at_least < n_ctx {
            return Ok(());
        }
        Err(Error::context_length(
            format!(
                "This model's maximum context length is {n_ctx} tokens. However, your {param} \
                 ({bytes} bytes) is at least {at_least} tokens. Please reduce the length of the \
                 {param}."
            ),
            param,
        ))
    }

    /// Tokenizes `text` as a prompt is tokenized (special tokens parsed, BOS if the model wants).
    pub fn tokenize(&self, text: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut tokens = vocab.tokenize(text.as_bytes(), true, true);
        // A template that writes `bos_token` itself, for a model that adds BOS: keep one.
        if tokens.len() >= 2 && tokens[0] == vocab.bos() && tokens[1] == vocab.bos() {
            tokens.remove(0);
        }
        tokens
    }
}

/// How a model's chat is rendered.
enum ChatFormat {
    /// A Jinja template (the GGUF's `tokenizer.chat_template`, or one given in the config),
    /// rendered as Hugging Face `transformers` renders it.
    Jinja(Box<ChatTemplate>),
    /// One of llama.cpp's built-in templates, named in the config (`chatml`, `llama3`...), or
    /// llama.cpp's reading of a GGUF template minijinja cannot compile.
    Builtin(LlamaChatTemplate),
}

/// The texts of a model's BOS and EOS tokens, as chat templates get them.
fn special_tokens(model: &LlamaModel) -> (String, String) {
    let vocab = model.vocab();
    let special = |token: LlamaToken| {
        if token.0 < 0 {
            return String::new();
        }
        String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned()
    };
    (special(vocab.bos()), special(vocab.eos()))
}

/// The GGUF's own chat template, compiled as ingle renders it (`None` when it has none, or one
/// minijinja cannot compile).
pub fn gguf_chat_template(model: &LlamaModel, tag: &str) -> Option<ChatTemplate> {
    let source = model.chat_template(None).ok()?;
    let (bos, eos) = special_tokens(model);
    ChatTemplate::new(tag, source.to_str().ok()?, &bos, &eos).ok()
}

impl ChatFormat {
    fn of(model: &LlamaModel, config: &PredictorConfig) -> Result<Option<ChatFormat>> {
        let (bos, eos) = special_tokens(model);
        let builtin = |text: &str| -> Result<ChatFormat> {
            LlamaChatTemplate::new(text)
                .map(ChatFormat::Builtin)
                .map_err(|_| {
                    Error::invalid("chat_template", "The chat template contains a NUL byte")
                })
        };
        match &config.chat_template {
            Some(text) if is_jinja(text) => Ok(Some(ChatFormat::Jinja(Box::new(
                ChatTemplate::new(&config.tag, text, &bos, &eos)
                    .map_err(|e| Error::invalid("chat_template", e.message))?,
            )))),
            // A llama.cpp template name, checked by `backends::validate`.
            Some(name) => builtin(name).map(Some),
            None => {
                let Ok(source) = model.chat_template(None) else {
                    return Ok(None);
                };
                let compiled = source
                    .to_str()
                    .ok()
                    .and_then(|text| ChatTemplate::new(&config.tag, text, &bos, &eos).ok());
                Ok(Some(match compiled {
                    Some(template) => ChatFormat::Jinja(Box::new(template)),
                    None => ChatFormat::Builtin(source),
                }))
            }
        }
    }

    fn supports_tools(&self) -> bool {
        match self {
            ChatFormat::Jinja(template) => template.supports_tools(),
            ChatFormat::Builtin(_) => false,
        }
    }
}

/// Whether a config's `chat_template` is a Jinja template rather than a llama.cpp name.
pub fn is_jinja(text: &str) -> bool {
    text.contains("{%") || text.contains("{{")
}

/// An error unless `path` starts like a GGUF file (its magic bytes), so a wrong file gets an
/// error that says so rather than llama.cpp's "failed to load model".
fn check_gguf(path: &Path, tag: &str) -> Result<()> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    match read {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Ok(()) | Err(_) => Err(Error::model(format!(
            "The model file {} of `{}` is not a GGUF file (llama.cpp reads GGUF models)",
            path.display(),
            crate::error::shown(tag)
        ))
        .with_param("model")
        .with_code("model_file_invalid")),
    }
}

/// Bytes of the f16 KV cache of `parallel` sequences of `n_ctx` tokens.
fn kv_bytes(model: &LlamaModel, n_ctx: u32, parallel: u32) -> u64 {
    let head_dim = model.n_embd().max(1) as u64 / model.n_head().max(1) as u64;
    let per_token = model.n_layer() as u64 * model.n_head_kv() as u64 * head_dim * 2 * 2;
    per_token * n_ctx as u64 * parallel as u64
}

/// The KV cache of `parallel` sequences of `n_ctx` tokens (f16 keys and values) must fit in
/// the memory the machine has available; otherwise llama.cpp fails deep inside with no word
/// of which setting was too large.
fn check_kv_memory(model: &LlamaModel, n_ctx: u32, parallel: u32, tag: &str) -> Result<()> {
    let needed = kv_bytes(model, n_ctx, parallel);
    let Some(available) = available_memory() else {
        return Ok(());
    };
    if needed > available {
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        return Err(Error::invalid(
            "n_ctx",
            format!(
                "The KV cache of `{}` (`n_ctx` {n_ctx} × `parallel` {parallel} tokens) would \
                 need {:.1} GiB, more than the {:.1} GiB of memory available; lower `n_ctx` or \
                 `parallel`",
                crate::error::shown(tag),
                gib(needed),
                gib(available)
            ),
        ));
    }
    Ok(())
}

/// `MemAvailable` of /proc/meminfo, in bytes (None where there is no such file).
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Predictor for LlamaPredictor {
    fn tag(&self) -> &str {
        &self.tag
    }

    fn kind(&self) -> PredictorKind {
        PredictorKind::Generator
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, inputs: Inputs) -> Result<OutputStream> {
        let options = RequestOptions::read(&inputs, self.model.n_vocab())?;
        let (prompt, prompt_param) =
            match (inputs.get("messages"), inputs.get("prompt")) {
                (Some(Value::List(messages)), None) => {
                    let text_bytes = messages
                        .iter()
                        .filter_map(Value::as_dict)
                        .flat_map(|m| m.values().filter_map(Value::as_str))
                        .map(str::len)
                        .sum();
                    self.check_cannot_fit(text_bytes, "messages")?;
                    let tools = match &options.tools {
                        Some(tools) if options.tool_choice != ToolChoice::None => {
                            if !self.tools_supported {
                                return Err(self.no_tool_support());
                            }
                            Some(tools.json.clone())
                        }
                        _ => None,
                    };
                    let kwargs =
                        match inputs.get("chat_template_kwargs") {
                            None | Some(Value::Null) => None,
                            Some(kwargs @ Value::Dict(_)) => Some(kwargs.to_json()?),
                            Some(_) => return Err(Error::invalid(
                                "chat_template_kwargs",
                                "`chat_template_kwargs` must be an object of template variables",
                            )),
                        };
                    let rendered =
                        self.render_chat_with(messages, tools.as_ref(), kwargs.as_ref())?;
                    (rendered, "messages")
                }
                (None, Some(Value::String(prompt))) => {
                    if options.tools.is_some() {
                        return Err(Error::invalid(
                            "tools",
                            "`tools` are for chat messages, not a text prompt",
                        ));
                    }
                    (prompt.clone(), "prompt")
                }
                (Some(_), Some(_)) => {
                    return Err(Error::invalid(
                        "prompt",
                        "Give either `messages` or `prompt`, not both",
                    ))
                }
                _ => return Err(Error::invalid(
                    "messages",
                    "Missing required parameter: `messages` (chat) or `prompt` (text completion)",
                )),
            };
        self.check_cannot_fit(prompt.len(), prompt_param)?;
        let tokens = self.tokenize(&prompt);
        if tokens.is_empty() {
            return Err(Error::invalid(
                prompt_param,
                format!("`{prompt_param}` must not be empty"),
            ));
        }
        let n_prompt = tokens.len();
        let n_ctx = self.n_ctx as usize;
        let where_ = if prompt_param == "messages" {
            "messages"
        } else {
            "prompt"
        };
        if n_prompt >= n_ctx {
            return Err(Error::context_length(
                format!(
                    "This model's maximum context length is {n_ctx} tokens. However, your \
                     {where_} resulted in {n_prompt} tokens. Please reduce the length of the {where_}."
                ),
                prompt_param,
            ));
        }
        let max_tokens = match inputs.get("max_tokens").and_then(Value::as_i64) {
            Some(max) if n_prompt + max as usize > n_ctx => {
                return Err(Error::context_length(
                    format!(
                        "This model's maximum context length is {n_ctx} tokens. However, you \
                         requested {} tokens ({n_prompt} in the {where_}, {max} in the completion). \
                         Please reduce the length of the {where_} or completion.",
                        n_prompt + max as usize
                    ),
                    prompt_param,
                ))
            }
            Some(max) => max as usize,
            None => n_ctx - n_prompt,
        };
        let stop = stop_sequences(inputs.get("stop"))?;
        let (grammar, lazy) = self.constraints(&options)?;
        let sampler = self.sampler(&inputs, &options.logit_bias);
        let cancelled = Arc::new(AtomicBool::new(false));
        let (events, event_rx) = mpsc::channel();
        let calls = options
            .tools
            .as_ref()
            .filter(|_| options.tool_choice != ToolChoice::None)
            .map(|tools| {
                let names = tools.specs.iter().map(|t| t.name.clone()).collect();
                CallStream {
                    parser: ToolCallParser::new(names),
                    started: 0,
                }
            });
        let job = Job {
            prompt: tokens,
            max_tokens,
            stop,
            sampler,
            grammar,
            lazy,
            logprobs: options.logprobs,
            events,
            cancelled: Arc::clone(&cancelled),
        };
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        self.jobs.send(job).map_err(|_| {
            self.counters.queued.fetch_sub(1, Ordering::Relaxed);
            Error::model(format!(
                "The llama.cpp scheduler of `{}` has stopped",
                self.tag
            ))
        })?;
        Ok(Box::new(TextStream {
            events: event_rx,
            cancelled,
            done: false,
            calls,
            logprobs: options.logprobs.is_some(),
        }))
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            active_requests: self.counters.active.load(Ordering::Relaxed),
            queued_requests: self.counters.queued.load(Ordering::Relaxed),
            generated_tokens: self.counters.generated.load(Ordering::Relaxed),
            cancelled_requests: self.counters.cancelled.load(Ordering::Relaxed),
        }
    }
}

impl LlamaPredictor {
    /// The grammar a request's output must follow from its first token, and the one that
    /// starts when the model opens a tool call of its own accord (`tool_choice` auto).
    fn constraints(&self, options: &RequestOptions) -> Result<(Option<Matcher>, Option<Lazy>)> {
        let model = &self.model;
        let calling = options
            .tools
            .as_ref()
            .filter(|_| options.tool_choice != ToolChoice::None);
        if let (Some(format), Some(_)) = (&options.response_format, calling) {
            return Err(Error::invalid(
                "response_format",
                format!(
                    "`response_format` {} cannot be combined with `tools` (the reply is either \
                     calls or JSON); pass `tool_choice: \"none\"` or leave one out",
                    format.kind
                ),
            ));
        }
        if let Some(format) = &options.response_format {
            let grammar = constrain::json_schema(&format.schema);
            let matcher = self.grammars.matcher(model, grammar, format.param)?;
            return Ok((Some(matcher), None));
        }
        let Some(tools) = calling else {
            return Ok((None, None));
        };
        let parallel = options.parallel_tool_calls;
        let forced = |specs: &[ToolSpec]| -> Result<Matcher> {
            let grammar = constrain::tool_calls(specs, TOOL_FORMAT, parallel, false);
            self.grammars.matcher(model, grammar, "tools")
        };
        match &options.tool_choice {
            ToolChoice::None => Ok((None, None)),
            ToolChoice::Required => Ok((Some(forced(&tools.specs)?), None)),
            ToolChoice::Function(name) => {
                let spec = tools
                    .specs
                    .iter()
                    .find(|t| &t.name == name)
                    .ok_or_else(|| {
                        Error::invalid(
                            "tool_choice",
                            format!(
                                "`tool_choice` names the function `{}`, which is not in `tools`",
                                crate::error::shown(name)
                            ),
                        )
                    })?;
                Ok((Some(forced(std::slice::from_ref(spec))?), None))
            }
            ToolChoice::Auto => {
                let grammar = constrain::tool_calls(&tools.specs, TOOL_FORMAT, parallel, true);
                let matcher = self.grammars.matcher(model, grammar, "tools")?;
                Ok((
                    None,
                    Some(Lazy {
                        trigger: TOOL_FORMAT.open,
                        matcher,
                    }),
                ))
            }
        }
    }

    /// The sampler chain for one request, in llama.cpp's order: logit biases, penalties, then
    /// greedy (temperature 0) or top-k, top-p, min-p, temperature and a seeded draw. What the
    /// request leaves unset is the model's recommended sampling ([`SamplingDefaults`]).
    fn sampler(&self, inputs: &Inputs, biases: &[LlamaLogitBias]) -> LlamaSampler {
        let given = |name: &str| inputs.get(name).and_then(Value::as_f64);
        let defaults = &self.sampling;
        let temperature = given("temperature").unwrap_or(defaults.temperature);
        let top_p = given("top_p").unwrap_or(defaults.top_p);
        let top_k = given("top_k").map_or(defaults.top_k, |k| k as i64);
        let min_p = given("min_p").unwrap_or(defaults.min_p);
        // Greedy is the most likely token: a model's default penalty applies only when
        // sampling; a penalty the request gives applies always.
        let repetition = given("repetition_penalty").unwrap_or(if temperature == 0.0 {
            1.0
        } else {
            defaults.repetition_penalty
        });
        let (frequency, presence) = (
            given("frequency_penalty").unwrap_or(0.0),
            given("presence_penalty").unwrap_or(0.0),
        );
        let mut chain = Vec::new();
        if !biases.is_empty() {
            chain.push(LlamaSampler::logit_bias(self.model.n_vocab(), biases));
        }
        if frequency != 0.0 || presence != 0.0 || repetition != 1.0 {
            // OpenAI's penalties count every token generated so far: look back over the whole
            // context (llama.cpp's sampler counts what it has accepted: the generated tokens).
            chain.push(LlamaSampler::penalties(
                self.model.n_vocab(),
                self.n_ctx as i32,
                repetition as f32,
                frequency as f32,
                presence as f32,
            ));
        }
        if temperature == 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            if top_k > 0 {
                chain.push(LlamaSampler::top_k(top_k.min(i32::MAX as i64) as i32));
            }
            if top_p < 1.0 {
                chain.push(LlamaSampler::top_p(top_p as f32, 1));
            }
            if min_p > 0.0 {
                chain.push(LlamaSampler::min_p(min_p as f32, 1));
            }
            chain.push(LlamaSampler::temp(temperature as f32));
            let seed = match inputs.get("seed").and_then(Value::as_i64) {
                Some(seed) => (seed as u64 ^ (seed as u64 >> 32)) as u32,
                None => random_seed(),
            };
            chain.push(LlamaSampler::dist(seed));
        }
        LlamaSampler::chain_simple(chain)
    }
}

/// The sequence (of those still prefilling, `(slot, prompt, cancel flag)`) whose prefill a new
/// request with `prompt` can copy.
fn leader_for(
    prompt: &[LlamaToken],
    prefilling: &[(usize, Vec<LlamaToken>, Arc<AtomicBool>)],
) -> Option<(usize, Arc<AtomicBool>)> {
    prefilling
        .iter()
        .find(|(_, p, _)| p.as_slice() == prompt)
        .map(|(id, _, flag)| (*id, Arc::clone(flag)))
}

/// How many first tokens `a` and `b` share.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A follower whose leader has gone (cancelled, failed) prefills on its own.
fn unlink_orphans(slots: &mut [Option<Sequence>]) {
    let alive: Vec<Option<Arc<AtomicBool>>> = slots
        .iter()
        .map(|s| s.as_ref().map(|s| Arc::clone(&s.job.cancelled)))
        .collect();
    for seq in slots.iter_mut().flatten() {
        if let Some((leader, flag)) = &seq.follows {
            let same = alive[*leader]
                .as_ref()
                .is_some_and(|f| Arc::ptr_eq(f, flag));
            if !same {
                seq.follows = None;
            }
        }
    }
}

/// Followers whose leader finished its prefill in this batch get a copy of its KV cache (the
/// prompt alone: its first token is not decoded yet) and sample from the same logits.
fn share_prefills(slots: &mut [Option<Sequence>], ctx: &mut LlamaContext) {
    for id in 0..slots.len() {
        let Some((leader, _)) = slots[id].as_ref().and_then(|s| s.follows.clone()) else {
            continue;
        };
        let Some(index) = slots[leader]
            .as_ref()
            .filter(|l| l.prefilled == l.job.prompt.len())
            .and_then(|l| l.logits_index)
        else {
            continue;
        };
        let copied = ctx
            .copy_kv_cache_seq(leader as i32, id as i32, None, None)
            .is_ok();
        if let Some(seq) = slots[id].as_mut() {
            seq.follows = None;
            if !copied {
                continue; // prefills itself from the next step
            }
            seq.prefilled = seq.job.prompt.len();
            seq.n_past = seq.prefilled;
            seq.logits_index = Some(index);
        }
    }
}

/// The next token of `seq` from the logits at `index`: masked by its grammar if it has one,
/// then drawn by its sampler chain; with its log probability when asked.
fn pick(
    seq: &mut Sequence,
    ctx: &LlamaContext,
    index: i32,
    model: &LlamaModel,
) -> Result<(LlamaToken, Option<Value>)> {
    let summary = seq
        .job
        .logprobs
        .map(|top| LogitsSummary::of(ctx.get_logits_ith(index), top));
    let token = match seq.grammar.as_mut() {
        None => seq.job.sampler.sample(ctx, index),
        Some(matcher) => {
            let broken = |e: &dyn std::fmt::Display| {
                Error::internal(format!("Constrained decoding failed: {e}"))
            };
            let mask = matcher.compute_mask_or_eos().map_err(|e| broken(&e))?;
            let mut candidates = ctx.token_data_array_ith(index);
            for candidate in candidates.data.iter_mut() {
                if !mask.is_allowed(candidate.id().0 as u32) {
                    candidate.set_logit(f32::NEG_INFINITY);
                }
            }
            candidates.apply_sampler(&mut seq.job.sampler);
            let token = candidates
                .selected_token()
                .ok_or_else(|| broken(&"the sampler chose no token"))?;
            seq.job.sampler.accept(token);
            if !model.vocab().is_eog(token) {
                matcher
                    .consume_token(token.0 as u32)
                    .map_err(|e| broken(&e))?;
            }
            token
        }
    };
    let logprob = summary.map(|summary| {
        let logit = ctx.get_logits_ith(index).get(token.0 as usize).copied();
        summary.entry(token, logit.unwrap_or(f32::NEG_INFINITY), model)
    });
    Ok((token, logprob))
}

/// Log-softmax over a position's raw logits: the normaliser and the most likely tokens.
struct LogitsSummary {
    log_sum_exp: f32,
    /// The `top` most likely tokens, most likely first (lower ids first on ties).
    top: Vec<(i32, f32)>,
}

impl LogitsSummary {
    fn of(logits: &[f32], top: usize) -> Self {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f64 = logits.iter().map(|&l| ((l - max) as f64).exp()).sum();
        let mut best: Vec<(i32, f32)> = Vec::with_capacity(top + 1);
        if top > 0 {
            for (id, &logit) in logits.iter().enumerate() {
                if best.len() == top && best.last().is_some_and(|&(_, l)| logit <= l) {
                    continue;
                }
                let at = best.partition_point(|&(_, l)| l >= logit);
                best.insert(at, (id as i32, logit));
                best.truncate(top);
            }
        }
        LogitsSummary {
            log_sum_exp: max + sum.ln() as f32,
            top: best,
        }
    }

    /// `{token, logprob, bytes, top_logprobs}` for the chosen `token`, as OpenAI reports it.
    fn entry(&self, token: LlamaToken, logit: f32, model: &LlamaModel) -> Value {
        let describe = |id: i32, logit: f32| {
            let bytes = model.vocab().token_to_piece(LlamaToken(id), false, None);
            serde_json::json!({
                "token": String::from_utf8_lossy(&bytes),
                "logprob": (logit - self.log_sum_exp) as f64,
                "bytes": bytes,
            })
        };
        let mut entry = describe(token.0, logit);
        entry["top_logprobs"] = self
            .top
            .iter()
            .map(|&(id, logit)| describe(id, logit))
            .collect();
        Value::from(entry)
    }
}

/// A seed for requests that give none: `RandomState` is randomly keyed per process and per call.
fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
    hasher.finish() as u32
}

fn stop_sequences(stop: Option<&Value>) -> Result<Vec<String>> {
    let Some(stop) = stop else {
        return Ok(Vec::new());
    };
    let invalid = |msg: &str| Error::invalid("stop", msg.to_string());
    let list = stop
        .as_list()
        .ok_or_else(|| invalid("`stop` must be a list of strings"))?;
    if list.len() > MAX_STOP_SEQUENCES {
        return Err(invalid("`stop` may hold at most 4 sequences"));
    }
    list.iter()
        .map(|s| match s.as_str() {
            Some("") => Err(invalid("`stop` sequences must not be empty")),
            Some(s) => Ok(s.to_string()),
            None => Err(invalid("`stop` must be a list of strings")),
        })
        .collect()
}

/// One request, handed to the scheduler.
struct Job {
    prompt: Vec<LlamaToken>,
    max_tokens: usize,
    stop: Vec<String>,
    sampler: LlamaSampler,
    /// The grammar the output follows from its first token.
    grammar: Option<Matcher>,
    /// The grammar that starts when the output reaches a trigger.
    lazy: Option<Lazy>,
    /// Alternatives to report with each token's log probability, when asked.
    logprobs: Option<usize>,
    events: mpsc::Sender<Result<Event>>,
    /// Set when the consumer drops its stream: the scheduler frees the sequence at its next step.
    cancelled: Arc<AtomicBool>,
}

/// A grammar that constrains the output from the moment it ends with `trigger` (the model
/// opened a tool call), as llama.cpp's lazy grammars do.
struct Lazy {
    trigger: &'static str,
    matcher: Matcher,
}

/// Text produced by one step, the log probabilities of the tokens behind it, and on the last
/// step why generation ended.
struct Event {
    text: String,
    logprobs: Vec<Value>,
    finish: Option<Finish>,
}

struct Finish {
    reason: &'static str,
    prompt_tokens: usize,
    /// Of the prompt tokens, those whose KV came from the cache.
    cached_tokens: usize,
    completion_tokens: usize,
}

/// The consumer's end of a request: pulls events, and cancels the request when dropped.
struct TextStream {
    events: mpsc::Receiver<Result<Event>>,
    cancelled: Arc<AtomicBool>,
    done: bool,
    /// Splits tool calls out of the text, when the request has tools.
    calls: Option<CallStream>,
    logprobs: bool,
}

/// Tool calls found in the text, given out as OpenAI's streamed deltas.
struct CallStream {
    parser: ToolCallParser,
    /// Calls started so far: the next call's `index`.
    started: usize,
}

impl CallStream {
    /// Content and tool-call deltas out of `text` (and, at the end, what was held back).
    fn split(&mut self, text: &str, end: bool) -> (String, Vec<Value>) {
        let mut pieces = self.parser.push(text);
        if end {
            pieces.extend(self.parser.finish());
        }
        let (mut content, mut deltas) = (String::new(), Vec::new());
        for piece in pieces {
            match piece {
                Piece::Text(text) => content.push_str(&text),
                Piece::CallStart { name } => deltas.push(self.start(name, String::new())),
                Piece::Arguments(arguments) => {
                    let index = self.started.saturating_sub(1);
                    deltas.push(Value::from(serde_json::json!({
                        "index": index, "function": {"arguments": arguments}
                    })));
                }
                Piece::Call { name, arguments } => deltas.push(self.start(name, arguments)),
            }
        }
        (content, deltas)
    }

    fn start(&mut self, name: String, arguments: String) -> Value {
        let index = self.started;
        self.started += 1;
        Value::from(serde_json::json!({
            "index": index,
            "id": crate::predict::random_id("call_"),
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }))
    }
}

impl Iterator for TextStream {
    type Item = Result<Outputs>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let event = match self.events.recv() {
            Ok(Ok(event)) => event,
            Ok(Err(error)) => {
                self.done = true;
                return Some(Err(error));
            }
            Err(_) => {
                self.done = true;
                return Some(Err(Error::internal("Generation stopped without finishing")));
            }
        };
        let end = event.finish.is_some();
        let (text, tool_calls) = match &mut self.calls {
            Some(calls) => {
                let (text, deltas) = calls.split(&event.text, end);
                (text, Value::List(deltas))
            }
            None => (event.text, Value::Null),
        };
        let (finish_reason, usage) = match event.finish {
            Some(finish) => {
                self.done = true;
                let usage = crate::value::Dict::from([
                    (
                        "prompt_tokens".to_string(),
                        Value::Int(finish.prompt_tokens as i64),
                    ),
                    (
                        "completion_tokens".to_string(),
                        Value::Int(finish.completion_tokens as i64),
                    ),
                    (
                        "cached_tokens".to_string(),
                        Value::Int(finish.cached_tokens as i64),
                    ),
                ]);
                let called = self.calls.as_ref().is_some_and(|c| c.started > 0);
                let reason = match finish.reason {
                    "stop" if called => "tool_calls",
                    reason => reason,
                };
                (Value::from(reason), Value::Dict(usage))
            }
            None => (Value::Null, Value::Null),
        };
        let logprobs = if self.logprobs {
            Value::List(event.logprobs)
        } else {
            Value::Null
        };
        Some(Ok(vec![
            Value::String(text),
            finish_reason,
            usage,
            tool_calls,
            logprobs,
        ]))
    }
}

impl Drop for TextStream {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// A request occupying one sequence of the context.
struct Sequence {
    job: Job,
    /// Prompt tokens already in the KV cache.
    prefilled: usize,
    /// Position of the next token in the sequence.
    n_past: usize,
    /// Token to feed at the next step (the last sampled one), once the prompt is in.
    next_token: Option<LlamaToken>,
    /// Index in the current batch whose logits this sequence samples from.
    logits_index: Option<i32>,
    completion_tokens: usize,
    utf8: Utf8Assembler,
    stops: StopMatcher,
    /// The grammar in force (from the start, or since the lazy one's trigger).
    grammar: Option<Matcher>,
    /// The end of the output, to spot a lazy grammar's trigger.
    tail: String,
    /// Log probabilities of tokens whose text is held back, with where that text ends
    /// (in bytes of the whole output).
    logprobs: VecDeque<(usize, Value)>,
    /// Bytes of output produced, and given out.
    produced_bytes: usize,
    released_bytes: usize,
    /// Another request with the same prompt whose prefill this one waits for, to copy its KV
    /// cache instead of computing it again (the `n` choices of one request): its slot, and its
    /// cancel flag to recognise it by.
    follows: Option<(usize, Arc<AtomicBool>)>,
    /// Prompt tokens found in the slot's cache instead of computed.
    cached_tokens: usize,
}

impl Sequence {
    /// The log probabilities of the tokens whose text is now all given out (all of them at
    /// the end).
    fn released_logprobs(&mut self, text: &str, end: bool) -> Vec<Value> {
        self.released_bytes += text.len();
        let mut out = Vec::new();
        while let Some((until, _)) = self.logprobs.front() {
            if *until > self.released_bytes && !end {
                break;
            }
            out.extend(self.logprobs.pop_front().map(|(_, v)| v));
        }
        out
    }
}

struct Scheduler {
    model: Arc<LlamaModel>,
    n_ctx: u32,
    parallel: u32,
    threads: u32,
    counters: Arc<Counters>,
    /// Per idle slot, the tokens its KV cache still holds from the request it served last.
    kept: Vec<Vec<LlamaToken>>,
    /// Per slot, when it was last given a request (a counter): the least recently used
    /// slot is the one whose cache a request without a cached prefix overwrites.
    last_used: Vec<u64>,
    clock: u64,
}

impl Scheduler {
    fn run(mut self, jobs: mpsc::Receiver<Job>, ready: mpsc::SyncSender<Result<()>>) {
        let backend = match backend() {
            Ok(backend) => backend,
            Err(e) => return drop(ready.send(Err(e))),
        };
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(self.n_ctx * self.parallel))
            .with_n_seq_max(self.parallel)
            .with_kv_unified(false)
            .with_n_batch(N_BATCH)
            .with_n_ubatch(N_BATCH)
            .with_n_threads(self.threads as i32)
            .with_n_threads_batch(self.threads as i32)
            // Off: with it, llama.cpp's CPU attention gives slightly different values for
            // the same tokens cut into other batches, so a prompt-cache hit would not answer
            // as a cold request does; without it the split does not change a bit (measured,
            // docs/speed.md). llama-cpp-python leaves it off by default too.
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
        // The context borrows the model: its own handle, so `self` stays free to change.
        let model = Arc::clone(&self.model);
        let mut ctx = match model.new_context(backend, params) {
            Ok(ctx) => ctx,
            Err(e) => {
                return drop(ready.send(Err(Error::model(format!(
                    "Cannot create a llama.cpp context of {} tokens (`n_ctx` {} × `parallel` \
                     {}): {e}; lower `n_ctx` or `parallel`",
                    self.n_ctx as u64 * self.parallel as u64,
                    self.n_ctx,
                    self.parallel
                )))))
            }
        };
        let _ = ready.send(Ok(()));
        let mut batch = LlamaBatch::new(N_BATCH as usize, 1);
        let mut slots: Vec<Option<Sequence>> = (0..self.parallel).map(|_| None).collect();
        let mut queue: VecDeque<Job> = VecDeque::new();
        let mut open = true;
        loop {
            // Wait for work when idle; otherwise take whatever has arrived and keep decoding.
            if open && queue.is_empty() && slots.iter().all(Option::is_none) {
                match jobs.recv() {
                    Ok(job) => queue.push_back(job),
                    Err(_) => return,
                }
            }
            while open {
                match jobs.try_recv() {
                    Ok(job) => queue.push_back(job),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => open = false,
                }
            }
            self.drop_cancelled(&mut slots, &mut queue);
            // The sequences still prefilling, as leaders for new ones with the same prompt.
            let mut slots_view: Vec<(usize, Vec<LlamaToken>, Arc<AtomicBool>)> = slots
                .iter()
                .enumerate()
                .filter_map(|(id, s)| {
                    let s = s.as_ref()?;
                    (s.follows.is_none() && s.prefilled < s.job.prompt.len())
                        .then(|| (id, s.job.prompt.clone(), Arc::clone(&s.job.cancelled)))
                })
                .collect();
            while slots.iter().any(Option::is_none) {
                let Some(mut job) = queue.pop_front() else {
                    break;
                };
                let follows = leader_for(&job.prompt, &slots_view);
                let (id, reused) = self.slot_for(&job.prompt, &slots, follows.is_some(), &mut ctx);
                {
                    let slot = &mut slots[id];
                    self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                    self.counters.active.fetch_add(1, Ordering::Relaxed);
                    let grammar = job.grammar.take();
                    slots_view.push((id, job.prompt.clone(), Arc::clone(&job.cancelled)));
                    *slot = Some(Sequence {
                        follows,
                        cached_tokens: reused,
                        stops: StopMatcher::new(job.stop.clone()),
                        grammar,
                        tail: String::new(),
                        logprobs: VecDeque::new(),
                        produced_bytes: 0,
                        released_bytes: 0,
                        job,
                        prefilled: reused,
                        n_past: reused,
                        next_token: None,
                        logits_index: None,
                        completion_tokens: 0,
                        utf8: Utf8Assembler::default(),
                    });
                }
            }
            if slots.iter().all(Option::is_none) {
                if !open {
                    return;
                }
                continue;
            }
            unlink_orphans(&mut slots);
            if let Err(error) = self.fill_batch(&mut batch, &mut slots) {
                self.fail_batch(&mut slots, &mut ctx, error);
                continue;
            }
            let decoded = {
                let _cores = super::cores::Cores::process().take(self.threads);
                ctx.decode(&mut batch)
            };
            if let Err(e) = decoded {
                let error = Error::model(format!("llama.cpp failed to decode: {e}"));
                self.fail_batch(&mut slots, &mut ctx, error);
                continue;
            }
            share_prefills(&mut slots, &mut ctx);
            self.sample(&mut slots, &mut ctx);
        }
    }

    /// Puts one token per generating sequence, then prompt chunks, into the batch.
    fn fill_batch(&self, batch: &mut LlamaBatch, slots: &mut [Option<Sequence>]) -> Result<()> {
        batch.clear();
        let add_error = |e| Error::internal(format!("Cannot fill the llama.cpp batch: {e}"));
        for (id, seq) in slots.iter_mut().enumerate() {
            let Some(seq) = seq else { continue };
            seq.logits_index = None;
            if let Some(token) = seq.next_token.take() {
                batch
                    .add(token, seq.n_past as i32, &[id as i32], true)
                    .map_err(add_error)?;
                seq.n_past += 1;
                seq.logits_index = Some(batch.n_tokens() - 1);
            }
        }
        // Prompts in the order their requests were admitted. The oldest gets all the room; a
        // younger one joins only if it fits whole in what is left of a quarter of the batch:
        // a short remainder (a prompt-cache hit) is not held up behind a long prompt, and two
        // long prompts do not make the older wait for both (time to first token under load).
        let mut prefilling: Vec<usize> = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.as_ref()
                    .is_some_and(|s| s.follows.is_none() && s.prefilled < s.job.prompt.len())
            })
            .map(|(id, _)| id)
            .collect();
        prefilling.sort_by_key(|&id| self.last_used[id]);
        let mut prompt_tokens = 0;
        for (n, id) in prefilling.into_iter().enumerate() {
            let Some(seq) = slots[id].as_mut() else {
                continue;
            };
            let remaining = seq.job.prompt.len() - seq.prefilled;
            let room = N_BATCH as usize - batch.n_tokens() as usize;
            if room == 0 {
                break;
            }
            if n > 0 && prompt_tokens + remaining > N_BATCH as usize / 4 {
                continue;
            }
            let take = remaining.min(room);
            for i in seq.prefilled..seq.prefilled + take {
                let last = i + 1 == seq.job.prompt.len();
                batch
                    .add(seq.job.prompt[i], i as i32, &[id as i32], last)
                    .map_err(add_error)?;
            }
            prompt_tokens += take;
            seq.prefilled += take;
            seq.n_past = seq.prefilled;
            if seq.prefilled == seq.job.prompt.len() {
                seq.logits_index = Some(batch.n_tokens() - 1);
            }
        }
        Ok(())
    }

    /// Samples the next token of every sequence that has logits in this batch.
    fn sample(&mut self, slots: &mut [Option<Sequence>], ctx: &mut LlamaContext) {
        let model = Arc::clone(&self.model);
        let vocab = model.vocab();
        for (id, slot) in slots.iter_mut().enumerate() {
            let Some(seq) = slot else { continue };
            let Some(index) = seq.logits_index.take() else {
                continue;
            };
            let (token, logprob) = match pick(seq, ctx, index, &self.model) {
                Ok(picked) => picked,
                Err(error) => {
                    if let Some(seq) = self.release(slot, id) {
                        let _ = seq.job.events.send(Err(error));
                    }
                    continue;
                }
            };
            let mut text = String::new();
            let mut reason = None;
            // On a stop sequence the held-back text is dropped; on any other end it is flushed.
            let mut flush = false;
            if vocab.is_eog(token) {
                reason = Some("stop");
                flush = true;
            } else {
                seq.completion_tokens += 1;
                self.counters.generated.fetch_add(1, Ordering::Relaxed);
                let bytes = vocab.token_to_piece(token, false, None);
                seq.produced_bytes += bytes.len();
                if let Some(logprob) = logprob {
                    seq.logprobs.push_back((seq.produced_bytes, logprob));
                }
                if seq.job.lazy.is_some() {
                    seq.tail.push_str(&String::from_utf8_lossy(&bytes));
                    if let Some(cut) = seq.tail.len().checked_sub(64) {
                        let cut = seq.tail.ceil_char_boundary(cut);
                        seq.tail.drain(..cut);
                    }
                    if seq
                        .tail
                        .ends_with(seq.job.lazy.as_ref().map_or("", |l| l.trigger))
                    {
                        seq.grammar = seq.job.lazy.take().map(|lazy| lazy.matcher);
                    }
                }
                let piece = seq.utf8.push(&bytes);
                let (safe, stopped) = seq.stops.push(&piece);
                text = safe;
                if stopped {
                    reason = Some("stop");
                } else if seq.completion_tokens >= seq.job.max_tokens
                    || seq.n_past >= self.n_ctx as usize
                {
                    reason = Some("length");
                    flush = true;
                }
                seq.next_token = Some(token);
            }
            if flush {
                let (safe, stopped) = seq.stops.push(&seq.utf8.finish());
                text.push_str(&safe);
                if !stopped {
                    text.push_str(&seq.stops.finish());
                }
            }
            let logprobs = seq.released_logprobs(&text, flush);
            let finish = reason.map(|reason| Finish {
                reason,
                prompt_tokens: seq.job.prompt.len(),
                cached_tokens: seq.cached_tokens,
                completion_tokens: seq.completion_tokens,
            });
            let event = Event {
                text,
                logprobs,
                finish,
            };
            if event.finish.is_some() {
                // Free the sequence before the consumer hears of the end, so that the metrics
                // it may read next already count the request as finished.
                if let Some(seq) = self.release(slot, id) {
                    let _ = seq.job.events.send(Ok(event));
                }
            } else if (!event.text.is_empty() || !event.logprobs.is_empty())
                && seq.job.events.send(Ok(event)).is_err()
            {
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
                self.release(slot, id);
            }
        }
    }

    /// Frees the sequences and queued jobs whose consumer has gone.
    fn drop_cancelled(&mut self, slots: &mut [Option<Sequence>], queue: &mut VecDeque<Job>) {
        let before = queue.len();
        queue.retain(|job| !job.cancelled.load(Ordering::Relaxed));
        let dropped = before - queue.len();
        self.counters
            .cancelled
            .fetch_add(dropped as u64, Ordering::Relaxed);
        self.counters.queued.fetch_sub(dropped, Ordering::Relaxed);
        for (id, slot) in slots.iter_mut().enumerate() {
            if slot
                .as_ref()
                .is_some_and(|seq| seq.job.cancelled.load(Ordering::Relaxed))
            {
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
                self.release(slot, id);
            }
        }
    }

    /// A failed decode leaves the KV cache of every sequence in the batch unknown, and every
    /// active sequence is in the batch: fail them all. Queued requests run next.
    fn fail_batch(&mut self, slots: &mut [Option<Sequence>], ctx: &mut LlamaContext, error: Error) {
        for (id, slot) in slots.iter_mut().enumerate() {
            if let Some(seq) = self.release_dropping_cache(slot, id, ctx) {
                let _ = seq.job.events.send(Err(error.clone()));
            }
        }
    }

    /// Ends the request in sequence `id`: it stops counting as active, and its KV cells stay
    /// for the next request that shares a prefix with its prompt.
    fn release(&mut self, slot: &mut Option<Sequence>, id: usize) -> Option<Sequence> {
        let mut seq = slot.take()?;
        // Only prompt tokens are kept: generated ones were decoded one at a time, and a cold
        // prefill of the same text computes them (slightly) differently; prompt tokens come
        // out the same however the prompt is cut into batches (flash attention off).
        seq.job.prompt.truncate(seq.prefilled);
        self.kept[id] = std::mem::take(&mut seq.job.prompt);
        self.counters.active.fetch_sub(1, Ordering::Relaxed);
        Some(seq)
    }

    /// Ends the request in sequence `id` and forgets its KV cells (they are unknown after a
    /// failed decode).
    fn release_dropping_cache(
        &mut self,
        slot: &mut Option<Sequence>,
        id: usize,
        ctx: &mut LlamaContext,
    ) -> Option<Sequence> {
        let seq = self.release(slot, id)?;
        self.kept[id].clear();
        let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
        Some(seq)
    }

    /// The free slot for a request with `prompt`, and how many of its first tokens that
    /// slot's KV cache already holds, as llama.cpp's server picks: the longest common prefix
    /// with what a slot kept, else the least recently used slot. The slot's cells after the
    /// shared prefix are removed. A follower (it copies its leader's cache) gets a clean slot.
    fn slot_for(
        &mut self,
        prompt: &[LlamaToken],
        slots: &[Option<Sequence>],
        follower: bool,
        ctx: &mut LlamaContext,
    ) -> (usize, usize) {
        let free = (0..slots.len()).filter(|&id| slots[id].is_none());
        // At least the last two prompt tokens are decoded again: the last one's logits give
        // the first token, and a batch of one token can round differently from the batch a
        // cold prefill computes it in (measured: docs/speed.md); two or more never did.
        let limit = prompt.len().saturating_sub(2);
        let (id, mut reused) = free
            .map(|id| {
                let shared = if follower {
                    0
                } else {
                    common_prefix(&self.kept[id], prompt).min(limit)
                };
                (id, shared)
            })
            .max_by_key(|&(id, shared)| (shared, std::cmp::Reverse(self.last_used[id])))
            .expect("a free slot");
        self.clock += 1;
        self.last_used[id] = self.clock;
        let removed = ctx.clear_kv_cache_seq(Some(id as u32), Some(reused as u32), None);
        if reused > 0 && !matches!(removed, Ok(true)) {
            // This model's memory cannot drop part of a sequence (recurrent): start clean.
            let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
            reused = 0;
        }
        self.kept[id].clear();
        (id, reused)
    }
}
