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

mod answer;
mod constrain;
pub mod cpu;
mod format;
mod generate;
pub mod gpu;
mod memory;
mod prefill;
mod sampling;
mod scheduler;
mod sequence;
mod signature;
mod speculation;
mod stream;

pub use signature::signature;

use crate::error::ErrorCode;
use format::ChatFormat;
pub use format::{check_chat_template, gguf_chat_template, is_jinja};
use memory::{check_gguf, check_kv_memory, context_size, kv_bytes};
use sampling::{random_seed, Sampling};
use scheduler::Scheduler;
use sequence::Job;

pub use super::cores::{capped_threads, default_threads};
use crate::chat::tool_calls::{ToolFormat, HERMES};
use crate::config::{LlamaOptions, PredictorConfig};
use crate::error::{Error, Result};
use crate::predict::{
    AtomicHistogram, Context, Generate, GenerationRequest, Inputs, Metrics, OutputStream,
    Predictor, PredictorKind, Signature, Tokenizer,
};
pub use crate::predict::{MAX_STOP_SEQUENCES, MAX_TOP_LOGPROBS};
use crate::value::Value;
use constrain::Grammars;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};

/// How the models ingle serves write tool calls (Qwen2.5 and most open models of its time).
const TOOL_FORMAT: ToolFormat = HERMES;

/// Default context size per request.
pub const DEFAULT_N_CTX: u32 = 2048;
/// Default number of requests decoded side by side.
pub const DEFAULT_PARALLEL: u32 = 4;
/// Tokens per decode call; longer prompts are fed in chunks.
const N_BATCH: u32 = 512;

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
            // The GPU modules beside it are loaded where their drivers and devices are.
            let cpu = cpu::load()?;
            let dir = cpu.path.parent().unwrap_or(Path::new("."));
            gpu::load(dir)?;
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::model(format!("Cannot initialise llama.cpp: {e}")))
}

/// The options of a llama predictor's config: every config this backend is given is one
/// (`backends::load` picks the backend by them); another's reads as no options given.
pub(crate) fn options_of(config: &PredictorConfig) -> &LlamaOptions {
    static NONE: std::sync::LazyLock<LlamaOptions> =
        std::sync::LazyLock::new(LlamaOptions::default);
    config.llama_options().unwrap_or(&NONE)
}

/// Counters shared by the predictor and its scheduler thread.
#[derive(Default)]
struct Counters {
    active: AtomicUsize,
    queued: AtomicUsize,
    generated: AtomicU64,
    /// Generated tokens a grammar forced (jump-forward decoding), counted in `generated` too.
    forced: AtomicU64,
    /// Tokens proposed by speculative decoding, and those of them accepted.
    drafted: AtomicU64,
    accepted: AtomicU64,
    prompt: AtomicU64,
    cancelled: AtomicU64,
    /// KV cells held by the running sequences (their positions), updated every step.
    kv_used: AtomicU64,
    /// The context's cells (`n_ctx` × `parallel`) and the weights plus KV cache, in bytes.
    kv_total: u64,
    memory_bytes: u64,
    queue_wait: AtomicHistogram,
    time_to_first_token: AtomicHistogram,
    time_per_output_token: AtomicHistogram,
}

/// A GGUF model served by llama.cpp.
pub struct LlamaPredictor {
    tag: String,
    signature: Signature,
    model: Arc<LlamaModel>,
    template: Option<ChatFormat>,
    /// Whether the chat template has a place for tools (found once, at load).
    tools_supported: bool,
    /// Whether its template shows earlier tool calls (all that take tools, and DeepSeek R1's).
    tool_history_shown: bool,
    /// Whether it thinks in `<think>` tags (its template writes them): Qwen3, QwQ, DeepSeek R1.
    thinks: bool,
    /// What its template reads to turn thinking up or down (`reasoning_effort` maps onto it).
    thinking_switch: crate::chat::template::ThinkingSwitch,
    /// The sampling used where a request leaves it unset.
    sampling: Sampling,
    grammars: Grammars,
    /// Context available to each request, in tokens.
    n_ctx: u32,
    /// Sequences decoded at once; more requests wait for a free one.
    parallel: u32,
    /// Bytes of the longest token piece (special tokens included).
    max_piece_bytes: usize,
    jobs: mpsc::Sender<Job>,
    /// The scheduler thread, joined when the predictor is dropped.
    scheduler: Option<std::thread::JoinHandle<()>>,
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
            .with_code(ErrorCode::ModelFileInvalid));
        }
        if !model_path.is_file() {
            return Err(Error::model(format!(
                "The model file {} for `{}` does not exist; {}",
                model_path.display(),
                crate::error::shown(&config.tag),
                crate::pull::missing_file_hint(model_path)
            ))
            .with_code(ErrorCode::ModelFileMissing));
        }
        check_gguf(model_path, &config.tag)?;
        let threads = capped_threads(config.threads, &config.tag);
        let parallel = options_of(config).parallel.unwrap_or(DEFAULT_PARALLEL);
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
        let offload = gpu::offload(backend, config, model_path, parallel)?;
        let params = gpu::model_params(&offload)?;
        let model = LlamaModel::load_from_file(backend, model_path, &params).map_err(|e| {
            Error::model(format!(
                "Cannot load {} for `{}`: {e}",
                model_path.display(),
                config.tag
            ))
        })?;
        let (n_ctx, parallel) = context_size(config, &model, parallel);
        check_kv_memory(&model, n_ctx, parallel, &config.tag)?;
        let sampling = Sampling::of(&model, &options_of(config).defaults);
        let template = ChatFormat::of(&model, config)?;
        let tools_supported = template.as_ref().is_some_and(ChatFormat::supports_tools);
        let tool_history_shown =
            tools_supported || template.as_ref().is_some_and(ChatFormat::shows_tool_calls);
        let thinks = template.as_ref().is_some_and(ChatFormat::thinks);
        let thinking_switch = template.as_ref().map_or(
            crate::chat::template::ThinkingSwitch::None,
            ChatFormat::thinking_switch,
        );
        // The longest text one token stands for: a prompt of B bytes is at least
        // B / max_piece_bytes tokens, which rejects what cannot fit before tokenizing it.
        let max_piece_bytes = model
            .tokens(true)
            .map(|(_, piece)| piece.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let model = Arc::new(model);
        let counters = Arc::new(Counters {
            kv_total: n_ctx as u64 * parallel as u64,
            memory_bytes: model.size() + kv_bytes(&model, n_ctx, parallel),
            ..Counters::default()
        });
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
            recomputed: recomputed_on_a_hit(&offload),
            speculation: speculation(options_of(config), &model),
        };
        let scheduler = std::thread::Builder::new()
            .name(format!("ingle-llama {}", config.tag))
            .spawn(move || scheduler.run(job_rx, ready_tx))
            .map_err(|e| Error::internal(format!("Cannot start the scheduler thread: {e}")))?;
        ready_rx
            .recv()
            .map_err(|_| Error::internal("The scheduler thread stopped while starting"))??;
        Ok(LlamaPredictor {
            tag: config.tag.clone(),
            // What `models` reports, and the bound `max_tokens` is checked against.
            signature: signature().with_context_length(n_ctx),
            model,
            template,
            tools_supported,
            tool_history_shown,
            thinks,
            thinking_switch,
            sampling,
            grammars: Grammars::new(options_of(config).jump_forward.unwrap_or(true)),
            n_ctx,
            parallel,
            max_piece_bytes,
            jobs,
            scheduler: Some(scheduler),
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

    /// A template with no place for tools drops an assistant's `tool_calls` from the prompt:
    /// the model would answer a conversation other than the one sent. Refused, as `tools` are.
    fn check_no_tool_history(&self, messages: &[Value]) -> Result<()> {
        let with_calls = messages.iter().position(|m| {
            m.as_dict()
                .and_then(|m| m.get("tool_calls"))
                .and_then(Value::as_list)
                .is_some_and(|calls| !calls.is_empty())
        });
        match with_calls {
            Some(i) => Err(Error::invalid(
                format!("messages[{i}].tool_calls"),
                format!(
                    "The model `{}` cannot call tools (its chat template has no place for them), \
                     so it cannot be shown the tool calls of `messages[{i}]`",
                    crate::error::shown(&self.tag)
                ),
            )),
            None => Ok(()),
        }
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

impl Tokenizer for LlamaPredictor {
    fn vocab_size(&self) -> usize {
        self.model.n_vocab().max(0) as usize
    }

    fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let tokens = self
            .model
            .vocab()
            .tokenize(text.as_bytes(), add_special, parse_special);
        tokens.into_iter().map(|t| t.0 as u32).collect()
    }

    fn piece(&self, token: u32) -> Vec<u8> {
        (self.model.vocab()).token_to_piece(LlamaToken(token as i32), true, None)
    }

    fn detokenize(&self, tokens: &[u32]) -> Vec<u8> {
        let tokens: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t as i32)).collect();
        self.model.vocab().detokenize(&tokens, false, true)
    }
}

impl Drop for LlamaPredictor {
    /// Closes the job channel and waits for the scheduler thread to end, so that freeing a
    /// client (`ingle_client_free`, then perhaps `exit`) never leaves llama.cpp decoding while
    /// the process tears down. No stream is alive by then (each holds the predictor), so the
    /// scheduler drops the cancelled sequences and ends within a decode step.
    fn drop(&mut self) {
        drop(std::mem::replace(&mut self.jobs, mpsc::channel().0));
        if let Some(scheduler) = self.scheduler.take() {
            if scheduler.thread().id() != std::thread::current().id() {
                let _ = scheduler.join();
            }
        }
    }
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

    /// The annotation protocol's entry (`predictions.create`, a caller's own inputs): the
    /// inputs read into a typed request, its steps given as the signature's outputs.
    fn predict(&self, inputs: Inputs, context: &Context) -> Result<OutputStream> {
        let steps = self.start(GenerationRequest::from_inputs(&inputs)?, &context.cancel)?;
        Ok(Box::new(steps.map(|step| step?.into_outputs())))
    }

    fn generation(&self) -> Option<&dyn Generate> {
        Some(self)
    }

    fn tokenizer(&self) -> Option<&dyn Tokenizer> {
        Some(self)
    }

    fn concurrency(&self) -> Option<usize> {
        Some(self.parallel as usize)
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            active_requests: self.counters.active.load(Ordering::Relaxed),
            queued_requests: self.counters.queued.load(Ordering::Relaxed),
            generated_tokens: self.counters.generated.load(Ordering::Relaxed),
            forced_tokens: self.counters.forced.load(Ordering::Relaxed),
            draft_tokens: self.counters.drafted.load(Ordering::Relaxed),
            accepted_draft_tokens: self.counters.accepted.load(Ordering::Relaxed),
            prompt_tokens: self.counters.prompt.load(Ordering::Relaxed),
            cancelled_requests: self.counters.cancelled.load(Ordering::Relaxed),
            kv_cells_used: self.counters.kv_used.load(Ordering::Relaxed),
            kv_cells_total: self.counters.kv_total,
            memory_bytes: self.counters.memory_bytes,
            queue_wait: self.counters.queue_wait.snapshot(),
            time_to_first_token: self.counters.time_to_first_token.snapshot(),
            time_per_output_token: self.counters.time_per_output_token.snapshot(),
            audio_input_ms: 0,
            audio_output_ms: 0,
        }
    }
}

/// Speculative decoding's settings where the config turns it on and the model can drop the
/// tail of a sequence's KV cache (not a recurrent model's state).
fn speculation(options: &LlamaOptions, model: &LlamaModel) -> Option<scheduler::Speculation> {
    if !options.ngram_speculation.unwrap_or(false) || model.is_recurrent() || model.is_hybrid() {
        return None;
    }
    let ngram_min = options.ngram_min.unwrap_or(2) as usize;
    Some(scheduler::Speculation {
        draft_max: options.draft_max.unwrap_or(15) as usize,
        ngram_min,
        ngram_max: (options.ngram_max.unwrap_or(4) as usize).max(ngram_min),
    })
}

/// How many of a prompt's last tokens a prompt-cache hit computes again, so that it answers
/// exactly as a cold request: at least two on the CPU and on Vulkan (a last batch of one token
/// rounds differently; two or more never did, docs/speed.md). ggml's CUDA backend multiplies
/// batches of up to 8 tokens with another kernel (MMVQ) than larger ones (MMQ), which round
/// differently: a hit there computes 9, as a cold prefill computes a prompt of 9 or more.
fn recomputed_on_a_hit(offload: &gpu::Offload) -> usize {
    let on_cuda = offload.layers > 0
        && offload
            .device
            .as_deref()
            .is_some_and(|d| d.to_ascii_uppercase().starts_with("CUDA"));
    if on_cuda {
        9
    } else {
        2
    }
}
