//! The OpenAI interface: `chat.completions`, `completions`, `embeddings`, `audio.speech` and
//! `models`, mapped onto predictors.
//!
//! A request's `model` names a predictor tag. Its parameters are found by **annotation**, never by
//! name: chat needs an input annotated [`Annotation::ChatMessages`], text completion one annotated
//! [`Annotation::Prompt`], each sampling option one annotated [`Annotation::Generation`], and the
//! outputs must include [`Annotation::TextDelta`]. A predictor lacking one gets an error saying
//! which. Non-streaming responses are the streamed chunks folded into one object, so both agree.

mod embeddings;
mod speech;
mod transcription;
mod types;

pub use embeddings::*;
pub use speech::*;
pub use transcription::*;
pub use types::*;

use crate::error::{shown, Error, Result};
use crate::predict::{
    random_id, unix_now, Annotation, GenerationOption, Inputs, OutputStream, Signature,
};
use crate::registry::Registry;
use crate::value::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// Chat roles the OpenAI API knows.
pub const CHAT_ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// Request fields accepted and ignored because they mean nothing for a local model.
const IGNORED_FIELDS: [&str; 3] = ["store", "metadata", "service_tier"];

/// Most choices one request may ask for (`n`).
pub const MAX_CHOICES: i64 = 8;

/// `client.chat`.
#[derive(Clone)]
pub struct Chat {
    pub completions: ChatCompletions,
}

/// `client.chat.completions`.
#[derive(Clone)]
pub struct ChatCompletions {
    registry: Arc<Registry>,
}

/// `client.completions` (legacy text completion).
#[derive(Clone)]
pub struct Completions {
    registry: Arc<Registry>,
}

/// `client.models`.
#[derive(Clone)]
pub struct Models {
    registry: Arc<Registry>,
}

impl Chat {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Chat {
            completions: ChatCompletions { registry },
        }
    }
}

impl Completions {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Completions { registry }
    }
}

impl Models {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Models { registry }
    }

    pub fn list(&self) -> ModelList {
        let data = self
            .registry
            .list()
            .into_iter()
            .map(|info| model_object(&info.tag, info.created))
            .collect();
        ModelList {
            object: "list".into(),
            data,
        }
    }

    /// Downloads `model` (a tag of the catalog, see [`crate::pull`]) and what it needs into
    /// the client's models directory, verified; a model the config registers only when its
    /// files exist is then served by this client. `progress` hears about each file; returning
    /// `false` cancels (the next pull resumes).
    pub fn pull(
        &self,
        model: &str,
        progress: &mut dyn FnMut(&crate::pull::PullEvent) -> bool,
    ) -> Result<crate::pull::PullReport> {
        crate::pull::Puller::new(self.registry.models_dir())?.pull(model, progress)
    }

    /// The catalog's entries: what [`Models::pull`] can download, each with its size and
    /// whether its files are in the client's models directory.
    pub fn catalog(&self) -> Result<Vec<crate::pull::CatalogStatus>> {
        Ok(crate::pull::Puller::new(self.registry.models_dir())?.list())
    }

    pub fn retrieve(&self, model: &str) -> Result<Model> {
        let info = self.registry.info_of(model)?;
        Ok(model_object(&info.tag, info.created))
    }

    /// Frees a model's memory (weights, KV cache, threads); the next request loads it again.
    /// Requests running on it finish first: the memory goes when the last one ends. Returns
    /// whether it was loaded. Not an OpenAI method (OpenAI's models do not live in your process).
    pub fn unload(&self, model: &str) -> Result<bool> {
        self.registry.unload(model)
    }

    /// Unloads the models no request has used for `idle` and none is using now (a keep-alive,
    /// as Ollama's); returns their tags.
    pub fn unload_idle(&self, idle: std::time::Duration) -> Vec<String> {
        self.registry.unload_idle(idle)
    }

    /// Whether `model` is in memory now.
    pub fn is_loaded(&self, model: &str) -> Result<bool> {
        Ok(self.registry.info_of(model)?.loaded)
    }
}

/// The next chunk of `chunks`, unless `stop` says to give up (which drops nothing here: the
/// caller returns, and dropping the stream cancels generation).
fn next_unless_stopped<T>(
    chunks: &mut impl Iterator<Item = Result<T>>,
    stop: &mut impl FnMut() -> bool,
) -> Result<Option<T>> {
    if stop() {
        return Err(Error::cancelled("The request was cancelled"));
    }
    chunks.next().transpose()
}

fn model_object(tag: &str, created: i64) -> Model {
    Model {
        id: tag.to_string(),
        object: "model".into(),
        created,
        owned_by: "ingle".into(),
    }
}

impl ChatCompletions {
    /// A whole `chat.completion`. `request.stream` must not be true (use [`Self::stream`]).
    pub fn create(&self, request: &ChatCompletionRequest) -> Result<ChatCompletion> {
        self.create_until(request, || false)
    }

    /// [`Self::create`] that asks `stop` before each token whether to go on: once it returns
    /// true, generation stops and the call returns an [`ErrorKind::Cancelled`] error. This is
    /// how bindings cancel a whole-response request (an aborted JS signal, a cancelled asyncio
    /// task, Ctrl-C in Python).
    ///
    /// [`ErrorKind::Cancelled`]: crate::ErrorKind::Cancelled
    pub fn create_until(
        &self,
        request: &ChatCompletionRequest,
        mut stop: impl FnMut() -> bool,
    ) -> Result<ChatCompletion> {
        if request.stream == Some(true) {
            return Err(Error::invalid(
                "stream",
                "`stream: true` was given to create(); call stream() instead",
            ));
        }
        let mut chunks = self.start(request, true)?;
        let mut completion = ChatCompletion {
            id: chunks.id.clone(),
            object: "chat.completion".into(),
            created: chunks.created,
            model: request.model.clone(),
            choices: Vec::new(),
            usage: Usage::default(),
        };
        let mut choices: Vec<FoldedChoice> = (0..chunks.runs.len())
            .map(|_| FoldedChoice::default())
            .collect();
        while let Some(chunk) = next_unless_stopped(&mut chunks, &mut stop)? {
            for choice in chunk.choices {
                if let Some(folded) = choices.get_mut(choice.index as usize) {
                    folded.add(choice);
                }
            }
            if let Some(usage) = chunk.usage {
                completion.usage = usage;
            }
        }
        for (index, folded) in choices.into_iter().enumerate() {
            completion
                .choices
                .push(folded.finish(index as u32, chunks.logprobs)?);
        }
        Ok(completion)
    }

    /// A stream of `chat.completion.chunk`s. Dropping it stops generation.
    pub fn stream(&self, request: &ChatCompletionRequest) -> Result<ChatCompletionStream> {
        let include_usage = request
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage);
        self.start(request, include_usage)
    }

    fn start(
        &self,
        request: &ChatCompletionRequest,
        include_usage: bool,
    ) -> Result<ChatCompletionStream> {
        reject_other_fields(&request.other)?;
        check_stream_options(request.stream_options.as_ref())?;
        let n = check_n(request.n)?;
        let messages = chat_messages(&request.messages)?;
        let logprobs = match (request.logprobs, request.top_logprobs) {
            (_, Some(k)) if !(0..=20).contains(&k) => {
                return Err(Error::invalid(
                    "top_logprobs",
                    format!("Invalid value for `top_logprobs`: {k}; it must be from 0 to 20"),
                ))
            }
            (Some(true), k) => Some(k.unwrap_or(0)),
            (_, Some(_)) => {
                return Err(Error::invalid(
                    "top_logprobs",
                    "`top_logprobs` needs `logprobs: true`",
                ))
            }
            _ => None,
        };
        let tool_choice = match &request.tool_choice {
            // Always a dict for the predictor: {"type": "auto"} for "auto".
            Some(serde_json::Value::String(kind)) => Some(serde_json::json!({"type": kind})),
            Some(serde_json::Value::Null) | None => None,
            Some(other) => Some(other.clone()),
        };
        if request.tool_choice.as_ref().is_some_and(|c| !c.is_null())
            && request
                .tools
                .as_ref()
                .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
            && tool_choice.as_ref().and_then(|c| c.get("type")) != Some(&"none".into())
        {
            return Err(Error::invalid(
                "tool_choice",
                "`tool_choice` is only allowed when `tools` are given",
            ));
        }
        let max_tokens = match (request.max_completion_tokens, request.max_tokens) {
            (Some(n), _) => Some(("max_completion_tokens", n)),
            (None, Some(n)) => Some(("max_tokens", n)),
            (None, None) => None,
        };
        let options = SamplingRequest {
            max_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            stop: request.stop.clone(),
            frequency_penalty: request.frequency_penalty,
            presence_penalty: request.presence_penalty,
            top_k: request.top_k,
            min_p: request.min_p,
            repetition_penalty: repetition_penalty(
                request.repetition_penalty,
                request.repeat_penalty,
            )?,
            chat_template_kwargs: request.chat_template_kwargs.clone(),
            tools: request
                .tools
                .clone()
                .filter(|t| !t.is_null() && t.as_array().is_none_or(|a| !a.is_empty())),
            tool_choice,
            parallel_tool_calls: request.parallel_tool_calls,
            response_format: request.response_format.clone().filter(|f| !f.is_null()),
            logprobs,
            logit_bias: request.logit_bias.clone().filter(|b| !b.is_empty()),
        };
        let runs = start_choices(
            &self.registry,
            &request.model,
            Annotation::ChatMessages,
            "messages",
            messages,
            "chat completions",
            options,
            n,
        )?;
        Ok(ChatCompletionStream {
            id: random_id("chatcmpl-"),
            created: unix_now(),
            model: request.model.clone(),
            runs: runs.into_iter().map(Some).collect(),
            next_run: 0,
            include_usage,
            logprobs: logprobs.is_some(),
            pending: VecDeque::new(),
            started: false,
            usage: Usage::default(),
        })
    }
}

impl Completions {
    /// A whole `text_completion`. `request.stream` must not be true (use [`Self::stream`]).
    pub fn create(&self, request: &CompletionRequest) -> Result<Completion> {
        self.create_until(request, || false)
    }

    /// [`Self::create`] with a `stop` check before each token, as
    /// [`ChatCompletions::create_until`].
    pub fn create_until(
        &self,
        request: &CompletionRequest,
        mut stop: impl FnMut() -> bool,
    ) -> Result<Completion> {
        if request.stream == Some(true) {
            return Err(Error::invalid(
                "stream",
                "`stream: true` was given to create(); call stream() instead",
            ));
        }
        let mut chunks = self.start(request, true)?;
        let mut completion = Completion {
            id: chunks.id.clone(),
            object: "text_completion".into(),
            created: chunks.created,
            model: request.model.clone(),
            choices: Vec::new(),
            usage: None,
        };
        let mut choices: Vec<CompletionChoice> = (0..chunks.runs.len())
            .map(|index| CompletionChoice {
                text: String::new(),
                index: index as u32,
                logprobs: chunks.logprobs.then(|| {
                    serde_json::json!({
                        "tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []
                    })
                }),
                finish_reason: None,
            })
            .collect();
        while let Some(chunk) = next_unless_stopped(&mut chunks, &mut stop)? {
            for choice in chunk.choices {
                let Some(folded) = choices.get_mut(choice.index as usize) else {
                    continue;
                };
                folded.text.push_str(&choice.text);
                folded.finish_reason = choice.finish_reason.or(folded.finish_reason.take());
                if let (Some(all), Some(more)) = (&mut folded.logprobs, choice.logprobs) {
                    for key in ["tokens", "token_logprobs", "top_logprobs", "text_offset"] {
                        if let (Some(list), Some(items)) =
                            (all[key].as_array_mut(), more[key].as_array())
                        {
                            list.extend(items.iter().cloned());
                        }
                    }
                }
            }
            completion.usage = chunk.usage.or(completion.usage);
        }
        completion.choices = choices;
        Ok(completion)
    }

    /// A stream of `text_completion` chunks. Dropping it stops generation.
    pub fn stream(&self, request: &CompletionRequest) -> Result<CompletionStream> {
        let include_usage = request
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage);
        self.start(request, include_usage)
    }

    fn start(&self, request: &CompletionRequest, include_usage: bool) -> Result<CompletionStream> {
        reject_other_fields(&request.other)?;
        check_stream_options(request.stream_options.as_ref())?;
        let n = check_n(request.n)?;
        if let Some(k) = request.logprobs.filter(|k| !(0..=5).contains(k)) {
            return Err(Error::invalid(
                "logprobs",
                format!("Invalid value for `logprobs`: {k}; it must be from 0 to 5"),
            ));
        }
        let prompt = match &request.prompt {
            Prompt::Text(text) => text.clone(),
            Prompt::Many(items) => match items.as_slice() {
                [serde_json::Value::String(text)] => text.clone(),
                _ => {
                    return Err(Error::invalid(
                        "prompt",
                        "`prompt` must be a string (or a list holding one string); batches and token arrays are not supported",
                    ))
                }
            },
        };
        let options = SamplingRequest {
            // The OpenAI API's default for text completions.
            max_tokens: Some(("max_tokens", request.max_tokens.unwrap_or(16))),
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            stop: request.stop.clone(),
            frequency_penalty: request.frequency_penalty,
            presence_penalty: request.presence_penalty,
            top_k: request.top_k,
            min_p: request.min_p,
            repetition_penalty: repetition_penalty(
                request.repetition_penalty,
                request.repeat_penalty,
            )?,
            logprobs: request.logprobs,
            logit_bias: request.logit_bias.clone().filter(|b| !b.is_empty()),
            ..SamplingRequest::default()
        };
        // Offsets count characters of the prompt and the completion, as llama-cpp-python's.
        let prompt_chars = prompt.chars().count();
        let runs = start_choices(
            &self.registry,
            &request.model,
            Annotation::Prompt,
            "prompt",
            Value::String(prompt),
            "text completions",
            options,
            n,
        )?;
        Ok(CompletionStream {
            id: random_id("cmpl-"),
            created: unix_now(),
            model: request.model.clone(),
            offsets: vec![prompt_chars; runs.len()],
            runs: runs.into_iter().map(Some).collect(),
            next_run: 0,
            include_usage,
            logprobs: request.logprobs.is_some(),
            pending: VecDeque::new(),
            usage: Usage::default(),
        })
    }
}

/// The sampling options of a request, with the OpenAI field each came from.
#[derive(Clone, Default)]
struct SamplingRequest {
    max_tokens: Option<(&'static str, i64)>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    seed: Option<i64>,
    stop: Option<StopSequences>,
    frequency_penalty: Option<f64>,
    presence_penalty: Option<f64>,
    /// llama.cpp's sampling extensions (`extra_body` in the OpenAI SDKs).
    top_k: Option<i64>,
    min_p: Option<f64>,
    /// With the field it came in (`repetition_penalty` or llama.cpp's `repeat_penalty`).
    repetition_penalty: Option<(&'static str, f64)>,
    chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    tools: Option<serde_json::Value>,
    tool_choice: Option<serde_json::Value>,
    parallel_tool_calls: Option<bool>,
    response_format: Option<serde_json::Value>,
    /// Alternatives per token (chat: `top_logprobs`, completions: `logprobs`).
    logprobs: Option<i64>,
    logit_bias: Option<serde_json::Map<String, serde_json::Value>>,
}

impl SamplingRequest {
    fn given(self) -> Vec<(GenerationOption, &'static str, Value)> {
        use GenerationOption as G;
        let mut given = Vec::new();
        if let Some((field, n)) = self.max_tokens {
            given.push((G::MaxTokens, field, Value::Int(n)));
        }
        let numbers = [
            (G::Temperature, "temperature", self.temperature),
            (G::TopP, "top_p", self.top_p),
            (
                G::FrequencyPenalty,
                "frequency_penalty",
                self.frequency_penalty,
            ),
            (
                G::PresencePenalty,
                "presence_penalty",
                self.presence_penalty,
            ),
        ];
        for (option, field, value) in numbers {
            if let Some(value) = value {
                given.push((option, field, Value::Float(value)));
            }
        }
        if let Some(top_k) = self.top_k {
            given.push((G::TopK, "top_k", Value::Int(top_k)));
        }
        if let Some(min_p) = self.min_p {
            given.push((G::MinP, "min_p", Value::Float(min_p)));
        }
        if let Some((field, penalty)) = self.repetition_penalty {
            given.push((G::RepetitionPenalty, field, Value::Float(penalty)));
        }
        if let Some(seed) = self.seed {
            given.push((G::Seed, "seed", Value::Int(seed)));
        }
        if let Some(stop) = self.stop {
            given.push((G::Stop, "stop", Value::from(stop.into_vec())));
        }
        let json = [
            (G::Tools, "tools", self.tools),
            (G::ToolChoice, "tool_choice", self.tool_choice),
            (G::ResponseFormat, "response_format", self.response_format),
            (
                G::ChatTemplateKwargs,
                "chat_template_kwargs",
                self.chat_template_kwargs.map(serde_json::Value::Object),
            ),
            (
                G::LogitBias,
                "logit_bias",
                self.logit_bias.map(serde_json::Value::Object),
            ),
        ];
        for (option, field, value) in json {
            if let Some(value) = value {
                given.push((option, field, Value::from(value)));
            }
        }
        if let Some(parallel) = self.parallel_tool_calls {
            given.push((
                G::ParallelToolCalls,
                "parallel_tool_calls",
                Value::Bool(parallel),
            ));
        }
        if let Some(top) = self.logprobs {
            given.push((G::Logprobs, "logprobs", Value::Int(top)));
        }
        given
    }
}

/// `repetition_penalty`, or llama.cpp's name for it, `repeat_penalty`; not both.
fn repetition_penalty(
    ours: Option<f64>,
    llama_cpp: Option<f64>,
) -> Result<Option<(&'static str, f64)>> {
    match (ours, llama_cpp) {
        (Some(_), Some(_)) => Err(Error::invalid(
            "repeat_penalty",
            "Give `repetition_penalty` or `repeat_penalty` (its llama.cpp name), not both",
        )),
        (Some(p), None) => Ok(Some(("repetition_penalty", p))),
        (None, Some(p)) => Ok(Some(("repeat_penalty", p))),
        (None, None) => Ok(None),
    }
}

/// Starts `n` generations of the same request, the choices of one response. With a `seed`,
/// choice `i` draws with `seed + i`, so that the choices differ yet repeat.
#[allow(clippy::too_many_arguments)]
fn start_choices(
    registry: &Registry,
    model: &str,
    input: Annotation,
    input_field: &'static str,
    input_value: Value,
    method: &str,
    options: SamplingRequest,
    n: usize,
) -> Result<Vec<Generation>> {
    (0..n)
        .map(|i| {
            let mut options = options.clone();
            options.seed = options.seed.map(|seed| seed.wrapping_add(i as i64));
            start_generation(
                registry,
                model,
                input.clone(),
                input_field,
                input_value.clone(),
                method,
                options,
            )
        })
        .collect()
}

/// A running generation and where its outputs are.
struct Generation {
    outputs: OutputStream,
    text: usize,
    finish_reason: Option<usize>,
    usage: Option<usize>,
    tool_calls: Option<usize>,
    logprobs: Option<usize>,
}

/// One step of a generation, read off the predictor's outputs by annotation.
#[derive(Default)]
struct Step {
    text: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    tool_calls: Vec<ToolCallDelta>,
    /// `{token, logprob, bytes, top_logprobs}` per token.
    logprobs: Vec<serde_json::Value>,
}

impl Generation {
    fn next_step(&mut self) -> Option<Result<Step>> {
        let outputs = match self.outputs.next()? {
            Ok(outputs) => outputs,
            Err(e) => return Some(Err(e)),
        };
        let get = |i: Option<usize>| i.and_then(|i| outputs.get(i)).filter(|v| !v.is_null());
        let text = get(Some(self.text))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let finish_reason = get(self.finish_reason)
            .and_then(Value::as_str)
            .map(str::to_string);
        let usage = get(self.usage).and_then(Value::as_dict).map(|u| {
            let count = |k: &str| u.get(k).and_then(Value::as_i64).unwrap_or(0) as u32;
            let (prompt_tokens, completion_tokens) =
                (count("prompt_tokens"), count("completion_tokens"));
            let prompt_tokens_details =
                u.get("cached_tokens")
                    .and_then(Value::as_i64)
                    .map(|cached| PromptTokensDetails {
                        cached_tokens: cached as u32,
                    });
            Usage {
                prompt_tokens,
                completion_tokens,
                total_tokens: prompt_tokens + completion_tokens,
                prompt_tokens_details,
            }
        });
        let list = |i: Option<usize>| -> Result<Vec<serde_json::Value>> {
            match get(i) {
                Some(value) => match value.to_json()? {
                    serde_json::Value::Array(items) => Ok(items),
                    _ => Ok(Vec::new()),
                },
                None => Ok(Vec::new()),
            }
        };
        let tool_calls = match list(self.tool_calls).and_then(|items| {
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    serde_json::from_value::<ToolCallDelta>(item).map_err(|e| {
                        Error::internal(format!(
                            "The predictor gave a malformed tool call delta [{i}]: {e}"
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()
        }) {
            Ok(calls) => calls,
            Err(e) => return Some(Err(e)),
        };
        let logprobs = match list(self.logprobs) {
            Ok(logprobs) => logprobs,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(Step {
            text,
            finish_reason,
            usage,
            tool_calls,
            logprobs,
        }))
    }
}

/// The next step of a running generation. After an error, or once the predictor ends, the
/// generation is dropped (freeing the model) and later calls return `None`.
fn pull(run: &mut Option<Generation>) -> Option<Result<Step>> {
    let step = match run.as_mut()?.next_step() {
        Some(Ok(step)) => return Some(Ok(step)),
        Some(Err(e)) => Err(e),
        // A predictor that ends without giving a finish reason (a user's generator that just
        // returns) stopped of its own accord.
        None => Ok(Step {
            finish_reason: Some("stop".into()),
            ..Step::default()
        }),
    };
    *run = None;
    Some(step)
}

/// Finds the predictor and its parameters by annotation, validates, and starts it.
fn start_generation(
    registry: &Registry,
    model: &str,
    input: Annotation,
    input_field: &'static str,
    input_value: Value,
    method: &str,
    options: SamplingRequest,
) -> Result<Generation> {
    if model.is_empty() {
        return Err(Error::invalid(
            "model",
            "Missing required parameter: `model`",
        ));
    }
    let predictor = registry.get(model)?;
    let signature = predictor.signature();
    let cannot = |what: String| {
        Error::invalid(
            "model",
            format!(
                "The model `{}` cannot serve {method}: its predictor has no {what}",
                shown(model)
            ),
        )
    };
    let input_param = signature
        .input_annotated(&input)
        .ok_or_else(|| cannot(format!("input annotated {input:?}")))?;
    let text = signature
        .output_annotated(&Annotation::TextDelta)
        .ok_or_else(|| cannot("output annotated TextDelta".into()))?;
    // Predictor parameter name → OpenAI field, to report errors in the caller's terms.
    let mut fields = vec![(input_param.name.clone(), input_field)];
    let mut inputs = Inputs::new();
    inputs.insert(input_param.name.clone(), input_value);
    for (option, field, value) in options.given() {
        let param = signature
            .input_annotated(&Annotation::Generation(option))
            .ok_or_else(|| {
                Error::invalid(
                    field,
                    format!("The model `{}` does not support `{field}`", shown(model)),
                )
            })?;
        fields.push((param.name.clone(), field));
        inputs.insert(param.name.clone(), value);
    }
    let to_openai = |e| in_openai_terms(e, &fields);
    let inputs = signature.validate(inputs).map_err(to_openai)?;
    let outputs = predictor.predict(inputs).map_err(to_openai)?;
    Ok(Generation {
        outputs,
        text,
        finish_reason: signature.output_annotated(&Annotation::FinishReason),
        usage: signature.output_annotated(&Annotation::Usage),
        tool_calls: signature.output_annotated(&Annotation::ToolCalls),
        logprobs: signature.output_annotated(&Annotation::TokenLogprobs),
    })
}

/// An error about a predictor parameter, restated in terms of the OpenAI field it came from:
/// `fields` maps parameter names to fields, and `name[i]` (an item of a list) becomes
/// `field[i]`. The first matching pair wins.
fn in_openai_terms(mut error: Error, fields: &[(String, &str)]) -> Error {
    let Some(param) = error.param.clone() else {
        return error;
    };
    for (name, field) in fields {
        let renamed = match param.strip_prefix(name.as_str()) {
            Some("") => field.to_string(),
            Some(rest) if rest.starts_with('[') => format!("{field}{rest}"),
            _ => continue,
        };
        error.message = error
            .message
            .replace(&format!("`{param}`"), &format!("`{renamed}`"))
            .replace(&format!("`{name}`"), &format!("`{field}`"));
        error.param = Some(renamed);
        break;
    }
    error
}

/// A stream of `chat.completion.chunk`s: a first chunk with the role for each choice, content
/// and tool-call chunks, a last chunk per choice with an empty delta and the finish reason,
/// then (if asked) a usage chunk. With `n` > 1 the choices' chunks come interleaved.
pub struct ChatCompletionStream {
    pub id: String,
    pub created: i64,
    model: String,
    /// One generation per choice; `None` once it has ended.
    runs: Vec<Option<Generation>>,
    next_run: usize,
    include_usage: bool,
    logprobs: bool,
    pending: VecDeque<ChatCompletionChunk>,
    started: bool,
    /// Prompt tokens (counted once) and the completion tokens of every choice.
    usage: Usage,
}

impl ChatCompletionStream {
    fn chunk(
        &self,
        index: usize,
        delta: ChunkDelta,
        finish_reason: Option<String>,
    ) -> ChatCompletionChunk {
        let choice = ChunkChoice {
            index: index as u32,
            delta,
            logprobs: None,
            finish_reason,
        };
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices: vec![choice],
            usage: None,
        }
    }

    /// The chunks of one step of choice `index`.
    fn step_chunks(&mut self, index: usize, step: Step) {
        let mut logprobs = self
            .logprobs
            .then(|| serde_json::json!({"content": step.logprobs, "refusal": null}));
        if !step.text.is_empty() || (logprobs.is_some() && !step.logprobs.is_empty()) {
            let delta = ChunkDelta {
                content: Some(step.text),
                ..ChunkDelta::default()
            };
            let mut chunk = self.chunk(index, delta, None);
            chunk.choices[0].logprobs = logprobs.take();
            self.pending.push_back(chunk);
        }
        if !step.tool_calls.is_empty() {
            let delta = ChunkDelta {
                tool_calls: Some(one_delta_per_call(step.tool_calls)),
                ..ChunkDelta::default()
            };
            self.pending.push_back(self.chunk(index, delta, None));
        }
        if let Some(reason) = step.finish_reason {
            self.runs[index] = None; // this choice is over: free its sequence now
            if let Some(usage) = step.usage {
                self.usage.add_choice(usage);
            }
            self.pending
                .push_back(self.chunk(index, ChunkDelta::default(), Some(reason)));
        }
    }
}

/// The deltas of one step with one entry per call `index`, as OpenAI streams them: a step may
/// hold a call's opening delta (id, type, name) and its first arguments, and clients that
/// merge by index (LlamaIndex, instructor, the SDK's `stream()` helper) read only one entry per
/// index in a chunk. Fragments are joined in order; calls keep the order they first appear in.
fn one_delta_per_call(deltas: Vec<ToolCallDelta>) -> Vec<ToolCallDelta> {
    let mut merged: Vec<ToolCallDelta> = Vec::with_capacity(deltas.len());
    for delta in deltas {
        let Some(into) = merged.iter_mut().find(|m| m.index == delta.index) else {
            merged.push(delta);
            continue;
        };
        if let Some(id) = delta.id {
            into.id.get_or_insert_with(String::new).push_str(&id);
        }
        into.kind = into.kind.take().or(delta.kind);
        if let Some(function) = delta.function {
            let to = into.function.get_or_insert_with(Default::default);
            for (to, from) in [
                (&mut to.name, function.name),
                (&mut to.arguments, function.arguments),
            ] {
                if let Some(from) = from {
                    to.get_or_insert_with(String::new).push_str(&from);
                }
            }
        }
    }
    merged
}

/// The next choice, after `*next`, whose generation still runs.
fn next_running(runs: &[Option<Generation>], next: &mut usize) -> Option<usize> {
    let n = runs.len();
    let found = (0..n)
        .map(|k| (*next + k) % n)
        .find(|&i| runs[i].is_some())?;
    *next = (found + 1) % n;
    Some(found)
}

impl Iterator for ChatCompletionStream {
    type Item = Result<ChatCompletionChunk>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            for index in 0..self.runs.len() {
                let role = ChunkDelta {
                    role: Some("assistant".into()),
                    content: Some(String::new()),
                    ..ChunkDelta::default()
                };
                let chunk = self.chunk(index, role, None);
                self.pending.push_back(chunk);
            }
        }
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(Ok(chunk));
            }
            let Some(index) = next_running(&self.runs, &mut self.next_run) else {
                if std::mem::take(&mut self.include_usage) {
                    let mut last = self.chunk(0, ChunkDelta::default(), None);
                    last.choices.clear();
                    last.usage = Some(self.usage);
                    return Some(Ok(last));
                }
                return None;
            };
            let step = match pull(&mut self.runs[index])? {
                Ok(step) => step,
                Err(e) => {
                    self.runs.iter_mut().for_each(|run| *run = None);
                    self.include_usage = false;
                    return Some(Err(e));
                }
            };
            self.step_chunks(index, step);
        }
    }
}

/// A choice of a whole `chat.completion`, folded from its chunks.
#[derive(Default)]
struct FoldedChoice {
    content: String,
    tool_calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    logprobs: Vec<serde_json::Value>,
}

impl FoldedChoice {
    fn add(&mut self, choice: ChunkChoice) {
        self.content.extend(choice.delta.content);
        for delta in choice.delta.tool_calls.into_iter().flatten() {
            let index = delta.index as usize;
            if index == self.tool_calls.len() {
                self.tool_calls.push(ToolCall {
                    id: String::new(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: String::new(),
                        arguments: String::new(),
                    },
                });
            }
            let Some(call) = self.tool_calls.get_mut(index) else {
                continue;
            };
            call.id.extend(delta.id);
            if let Some(kind) = delta.kind {
                call.kind = kind;
            }
            if let Some(function) = delta.function {
                call.function.name.extend(function.name);
                call.function.arguments.extend(function.arguments);
            }
        }
        if let Some(content) = choice
            .logprobs
            .as_ref()
            .and_then(|l| l.get("content"))
            .and_then(serde_json::Value::as_array)
        {
            self.logprobs.extend(content.iter().cloned());
        }
        self.finish_reason = choice.finish_reason.or(self.finish_reason.take());
    }

    fn finish(self, index: u32, logprobs: bool) -> Result<ChatChoice> {
        let finish_reason = self
            .finish_reason
            .ok_or_else(|| Error::internal("generation ended without a finish reason"))?;
        let called = !self.tool_calls.is_empty();
        Ok(ChatChoice {
            index,
            message: AssistantMessage {
                role: "assistant".into(),
                // OpenAI: null content when the reply is only tool calls (and the blank lines
                // a model leaves around them).
                content: (!called || !self.content.trim().is_empty()).then_some(self.content),
                refusal: None,
                tool_calls: called.then_some(self.tool_calls),
            },
            finish_reason,
            logprobs: logprobs
                .then(|| serde_json::json!({"content": self.logprobs, "refusal": null})),
        })
    }
}

/// A stream of `text_completion` chunks: text chunks, a last one per choice with the finish
/// reason, then (if asked) a usage chunk with no choices.
pub struct CompletionStream {
    pub id: String,
    pub created: i64,
    model: String,
    runs: Vec<Option<Generation>>,
    next_run: usize,
    include_usage: bool,
    logprobs: bool,
    /// Per choice: the character offset of its next token (prompt included).
    offsets: Vec<usize>,
    pending: VecDeque<Completion>,
    usage: Usage,
}

impl CompletionStream {
    fn chunk(&self, choices: Vec<CompletionChoice>, usage: Option<Usage>) -> Completion {
        Completion {
            id: self.id.clone(),
            object: "text_completion".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
        }
    }

    /// Chat-shaped token log probabilities in the legacy completions shape.
    fn legacy_logprobs(
        &mut self,
        index: usize,
        entries: &[serde_json::Value],
    ) -> serde_json::Value {
        let (mut tokens, mut token_logprobs, mut top, mut offsets) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for entry in entries {
            let token = entry["token"].as_str().unwrap_or_default().to_string();
            offsets.push(self.offsets[index]);
            self.offsets[index] += token.chars().count();
            tokens.push(token);
            token_logprobs.push(entry["logprob"].clone());
            let alternatives: serde_json::Map<String, serde_json::Value> = entry["top_logprobs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|alt| {
                    (
                        alt["token"].as_str().unwrap_or_default().to_string(),
                        alt["logprob"].clone(),
                    )
                })
                .collect();
            top.push(serde_json::Value::Object(alternatives));
        }
        serde_json::json!({
            "tokens": tokens, "token_logprobs": token_logprobs,
            "top_logprobs": top, "text_offset": offsets,
        })
    }
}

impl Iterator for CompletionStream {
    type Item = Result<Completion>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(Ok(chunk));
            }
            let Some(index) = next_running(&self.runs, &mut self.next_run) else {
                if std::mem::take(&mut self.include_usage) {
                    return Some(Ok(self.chunk(Vec::new(), Some(self.usage))));
                }
                return None;
            };
            let step = match pull(&mut self.runs[index])? {
                Ok(step) => step,
                Err(e) => {
                    self.runs.iter_mut().for_each(|run| *run = None);
                    self.include_usage = false;
                    return Some(Err(e));
                }
            };
            let finished = step.finish_reason.is_some();
            if !step.text.is_empty() || finished || (self.logprobs && !step.logprobs.is_empty()) {
                let logprobs = self
                    .logprobs
                    .then(|| self.legacy_logprobs(index, &step.logprobs));
                let choice = CompletionChoice {
                    text: step.text,
                    index: index as u32,
                    logprobs,
                    finish_reason: step.finish_reason,
                };
                self.pending.push_back(self.chunk(vec![choice], None));
            }
            if finished {
                self.runs[index] = None;
                if let Some(usage) = step.usage {
                    self.usage.add_choice(usage);
                }
            }
        }
    }
}

/// `stream_options`: only its known keys, as for the request's own fields.
fn check_stream_options(options: Option<&StreamOptions>) -> Result<()> {
    let Some(options) = options else {
        return Ok(());
    };
    match options.other.iter().find(|(_, value)| !value.is_null()) {
        Some((key, _)) => {
            let key = shown(key);
            Err(Error::invalid(
                format!("stream_options.{key}"),
                format!(
                    "Unrecognized field `stream_options.{key}`; `stream_options` takes \
                     `include_usage` (and `include_obfuscation`, ignored)"
                ),
            ))
        }
        None => Ok(()),
    }
}

/// `n`: how many choices, 1 to [`MAX_CHOICES`].
fn check_n(n: Option<i64>) -> Result<usize> {
    match n {
        None => Ok(1),
        Some(n) if (1..=MAX_CHOICES).contains(&n) => Ok(n as usize),
        Some(n) => Err(Error::invalid(
            "n",
            format!("Invalid value for `n`: {n}; it must be from 1 to {MAX_CHOICES}"),
        )),
    }
}

/// Fields outside the typed request: ignored if documented so, else rejected by name.
fn reject_other_fields(other: &OtherFields) -> Result<()> {
    for (field, value) in other {
        if value.is_null() || IGNORED_FIELDS.contains(&field.as_str()) {
            continue;
        }
        let default_ok = match field.as_str() {
            "echo" => value == &serde_json::Value::Bool(false),
            "best_of" => value == &serde_json::json!(1),
            "functions" => {
                value.as_array().is_some_and(Vec::is_empty)
                    || value.as_object().is_some_and(|o| o.is_empty())
            }
            _ => false,
        };
        if default_ok {
            continue;
        }
        let known = [
            "logprobs",
            "top_logprobs",
            "echo",
            "best_of",
            "suffix",
            "response_format",
            "tools",
            "tool_choice",
            "functions",
            "function_call",
            "logit_bias",
            "modalities",
            "audio",
            "prediction",
            "reasoning_effort",
            "web_search_options",
        ];
        return Err(if known.contains(&field.as_str()) {
            Error::invalid(field, format!("`{field}` is not supported by ingle"))
        } else {
            Error::invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            )
        });
    }
    Ok(())
}

/// Checks OpenAI chat messages and turns them into the predictor's `{role, content}` dicts:
/// content parts joined, `developer` rendered as `system` (chat templates predate it).
fn chat_messages(messages: &[ChatMessage]) -> Result<Value> {
    if messages.is_empty() {
        return Err(Error::invalid(
            "messages",
            "`messages` must contain at least one message",
        ));
    }
    let mut out = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let role = message.role.as_str();
        if !CHAT_ROLES.contains(&role) {
            return Err(Error::invalid(
                format!("messages[{i}].role"),
                format!(
                    "Invalid value for `messages[{i}].role`: '{}'; supported roles are {}",
                    shown(role),
                    CHAT_ROLES.join(", ")
                ),
            ));
        }
        if let Some(field) = message
            .other
            .iter()
            .find(|(_, v)| !v.is_null())
            .map(|(k, _)| k)
        {
            let message = format!("Unrecognized field `messages[{i}].{}`", shown(field));
            return Err(Error::invalid(format!("messages[{i}].{field}"), message));
        }
        let content = match &message.content {
            Some(MessageContent::Text(text)) => text.clone(),
            Some(MessageContent::Parts(parts)) => {
                if parts.is_empty() {
                    return Err(Error::invalid(
                        format!("messages[{i}].content"),
                        format!("`messages[{i}].content` is an empty list; give a string or at least one content part"),
                    ));
                }
                let mut text = String::new();
                for (j, part) in parts.iter().enumerate() {
                    // A part of another type is refused by its type below, not its keys.
                    if part.kind == "text" {
                        if let Some((key, _)) = part.other.iter().find(|(_, v)| !v.is_null()) {
                            let key = shown(key);
                            return Err(Error::invalid(
                                format!("messages[{i}].content[{j}].{key}"),
                                format!("Unrecognized field `messages[{i}].content[{j}].{key}`"),
                            ));
                        }
                    }
                    match (part.kind.as_str(), &part.text) {
                        ("text", Some(t)) => text.push_str(t),
                        ("text", None) => {
                            return Err(Error::invalid(format!("messages[{i}].content[{j}].text"), format!("`messages[{i}].content[{j}]` is a text part without `text`")))
                        }
                        (kind, _) => {
                            return Err(Error::invalid(
                                format!("messages[{i}].content[{j}].type"),
                                format!("Content parts of type `{}` are not supported; only `text` parts are (messages[{i}].content[{j}])", shown(kind)),
                            ))
                        }
                    }
                }
                text
            }
            None if role == "assistant" => {
                if message.tool_calls.as_ref().is_none_or(Vec::is_empty) {
                    return Err(Error::invalid(
                        format!("messages[{i}].content"),
                        format!("Missing `messages[{i}].content`: an assistant message needs content or tool_calls"),
                    ));
                }
                String::new()
            }
            None => {
                return Err(Error::invalid(
                    format!("messages[{i}].content"),
                    format!("Missing `messages[{i}].content`: a {role} message needs content"),
                ))
            }
        };
        let role = if role == "developer" { "system" } else { role };
        let mut dict = crate::value::Dict::from([
            ("role".to_string(), Value::from(role)),
            ("content".to_string(), Value::String(content)),
        ]);
        if let Some(calls) = message.tool_calls.as_ref().filter(|c| !c.is_empty()) {
            if role != "assistant" {
                return Err(Error::invalid(
                    format!("messages[{i}].tool_calls"),
                    format!("`messages[{i}].tool_calls` is only for assistant messages"),
                ));
            }
            dict.insert("tool_calls".into(), tool_calls_for_template(i, calls)?);
        }
        if role == "tool" {
            if let Some(id) = &message.tool_call_id {
                dict.insert("tool_call_id".into(), Value::from(id.as_str()));
            }
            if let Some(name) = &message.name {
                dict.insert("name".into(), Value::from(name.as_str()));
            }
        }
        out.push(Value::Dict(dict));
    }
    Ok(Value::List(out))
}

/// An assistant's calls as chat templates take them: `arguments` parsed into an object (OpenAI
/// sends JSON text; Hugging Face templates write `arguments | tojson`).
fn tool_calls_for_template(i: usize, calls: &[ToolCall]) -> Result<Value> {
    let mut out = Vec::with_capacity(calls.len());
    for (j, call) in calls.iter().enumerate() {
        let at = format!("messages[{i}].tool_calls[{j}]");
        if call.kind != "function" {
            return Err(Error::invalid(
                format!("{at}.type"),
                format!("`{at}.type` must be \"function\""),
            ));
        }
        // OpenAI takes any string here, and agents send back what they were given, including
        // a call cut short by `max_tokens`: text that is not a JSON object reaches the template
        // as the string it is (as llama.cpp's server does), never refused.
        let arguments = call.function.arguments.trim();
        let arguments = match serde_json::from_str::<serde_json::Value>(arguments) {
            _ if arguments.is_empty() => serde_json::json!({}),
            Ok(object @ serde_json::Value::Object(_)) => object,
            _ => serde_json::Value::String(call.function.arguments.clone()),
        };
        out.push(serde_json::json!({
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": arguments},
        }));
    }
    Ok(Value::from(serde_json::Value::Array(out)))
}

/// Checks that a predictor can serve each OpenAI method its annotations claim, so a user's
/// predictor fails when it is registered rather than on its first request. Each failure is an
/// invalid-request error naming the parameter at fault. A predictor that claims no method
/// (no chat, embedding, audio or transcription annotation) serves `predictions` only.
pub fn check_predictor(tag: &str, signature: &Signature) -> Result<()> {
    rules::annotation_types(tag, signature)?;
    chat_rules(tag, signature)?;
    embeddings::rules(tag, signature)?;
    speech::rules(tag, signature)?;
    transcription::rules(tag, signature)?;
    Ok(())
}

/// Chat (an input annotated `ChatMessages`) and text completion (one annotated `Prompt`): the
/// messages (or prompt) are required unless the predictor takes both; text deltas out;
/// generation options optional; nothing else required.
fn chat_rules(tag: &str, signature: &Signature) -> Result<()> {
    let messages = signature.input_annotated(&Annotation::ChatMessages);
    let prompt = signature.input_annotated(&Annotation::Prompt);
    let method = match (messages, prompt) {
        (None, None) => return Ok(()),
        (Some(_), None) => "chat.completions",
        (None, Some(_)) => "completions",
        (Some(_), Some(_)) => "chat.completions and completions",
    };
    let both = messages.is_some() && prompt.is_some();
    for input in [messages, prompt].into_iter().flatten() {
        if !input.required && !both {
            return Err(rules::problem(
                tag,
                &input.name,
                format!(
                    "serves {method}, so its input `{}` must be required (no default)",
                    input.name
                ),
            ));
        }
        if input.required && both {
            // A chat request gives no prompt and a completion request no messages.
            return Err(rules::problem(
                tag,
                &input.name,
                format!(
                    "serves {method}, and each request gives only one of messages and prompt, \
                     so `{}` must be optional",
                    input.name
                ),
            ));
        }
    }
    rules::output(tag, signature, &Annotation::TextDelta, method)?;
    rules::generation_options(tag, signature)?;
    rules::nothing_else_required(tag, signature, method, &[messages, prompt])
}

mod rules {
    //! What the rules of every method share.
    use crate::error::{shown, Error, Result};
    use crate::predict::{Annotation, GenerationOption, Parameter, Signature};
    use crate::value::ValueType;

    /// A rule broken by `param` of the predictor `tag`.
    pub(super) fn problem(tag: &str, param: &str, message: String) -> Error {
        Error::invalid(param, format!("The predictor `{}` {message}", shown(tag)))
    }

    /// The output annotated `annotation`, which `method` needs.
    pub(super) fn output<'a>(
        tag: &str,
        signature: &'a Signature,
        annotation: &Annotation,
        method: &str,
    ) -> Result<&'a Parameter> {
        signature
            .outputs
            .iter()
            .find(|p| &p.annotation == annotation)
            .ok_or_else(|| {
                problem(
                    tag,
                    "outputs",
                    format!("serves {method}, so it needs an output annotated {annotation:?}"),
                )
            })
    }

    /// Every required input other than `served` is one `method` cannot give.
    pub(super) fn nothing_else_required(
        tag: &str,
        signature: &Signature,
        method: &str,
        served: &[Option<&Parameter>],
    ) -> Result<()> {
        let served = |p: &Parameter| served.iter().flatten().any(|s| s.name == p.name);
        match signature.inputs.iter().find(|p| p.required && !served(p)) {
            Some(p) => Err(problem(
                tag,
                &p.name,
                format!(
                    "serves {method}, which cannot give its required input `{}`: give it a \
                     default, or an annotation {method} fills",
                    p.name
                ),
            )),
            None => Ok(()),
        }
    }

    /// Generation options are optional and of the type the OpenAI field has.
    pub(super) fn generation_options(tag: &str, signature: &Signature) -> Result<()> {
        use GenerationOption as G;
        for p in &signature.inputs {
            let Annotation::Generation(option) = p.annotation else {
                continue;
            };
            let types: &[ValueType] = match option {
                G::MaxTokens | G::Seed | G::Logprobs | G::TopK => &[ValueType::Int],
                G::Stop => &[ValueType::List, ValueType::String],
                G::Tools => &[ValueType::List],
                G::ToolChoice | G::ResponseFormat | G::LogitBias | G::ChatTemplateKwargs => {
                    &[ValueType::Dict]
                }
                G::ParallelToolCalls => &[ValueType::Bool],
                G::Temperature
                | G::TopP
                | G::FrequencyPenalty
                | G::PresencePenalty
                | G::MinP
                | G::RepetitionPenalty => &[ValueType::Float],
            };
            if !types.contains(&p.value_type) {
                return Err(problem(
                    tag,
                    &p.name,
                    format!(
                        "declares `{}` ({option:?}) as {}; it must be {}",
                        p.name,
                        p.value_type.name(),
                        types
                            .iter()
                            .map(|t| t.name())
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                ));
            }
            if p.required {
                return Err(problem(
                    tag,
                    &p.name,
                    format!(
                        "declares `{}` ({option:?}) as required; a generation option needs a \
                         default, as callers may leave it out",
                        p.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Each annotation on a parameter of the type it means, and at most once per side.
    pub(super) fn annotation_types(tag: &str, signature: &Signature) -> Result<()> {
        use ValueType as T;
        for (side, params) in [("input", &signature.inputs), ("output", &signature.outputs)] {
            for (i, p) in params.iter().enumerate() {
                if p.value_type == T::Audio && !matches!(p.annotation, Annotation::Audio { .. }) {
                    return Err(problem(
                        tag,
                        &p.name,
                        format!(
                            "declares the {side} `{}` as audio without an Audio annotation: \
                             annotate it Audio with its sample rate",
                            p.name
                        ),
                    ));
                }
                if p.annotation == Annotation::Generic {
                    continue;
                }
                let same = |q: &Parameter| match (&q.annotation, &p.annotation) {
                    (Annotation::Generation(a), Annotation::Generation(b)) => a == b,
                    (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
                };
                if params[..i].iter().any(same) {
                    return Err(problem(
                        tag,
                        &p.name,
                        format!(
                            "has two {side}s annotated {}: `{}` and `{}`",
                            annotation_name(&p.annotation),
                            params[..i].iter().find(|q| same(q)).map_or("", |q| &q.name),
                            p.name
                        ),
                    ));
                }
                let input = side == "input";
                let expected: Option<ValueType> = match &p.annotation {
                    Annotation::Generic | Annotation::Generation(_) => None,
                    Annotation::Embedding if input => Some(T::List),
                    Annotation::Embedding => Some(T::Tensor),
                    Annotation::EmbeddingDims { .. } => Some(T::Int),
                    Annotation::AudioVoice { .. } => Some(T::String),
                    Annotation::AudioSpeed { .. } => Some(T::Float),
                    Annotation::Audio { .. } => Some(T::Audio),
                    Annotation::TranscriptionLanguage
                    | Annotation::TranscriptionPrompt
                    | Annotation::Prompt
                    | Annotation::TextDelta
                    | Annotation::FinishReason => Some(T::String),
                    Annotation::TranscriptionWordTimestamps => Some(T::Bool),
                    Annotation::TranscriptionSegment | Annotation::Usage => Some(T::Dict),
                    Annotation::ToolCalls | Annotation::TokenLogprobs => Some(T::List),
                    Annotation::ChatMessages => Some(T::List),
                };
                if let Some(expected) = expected.filter(|&t| t != p.value_type) {
                    return Err(problem(
                        tag,
                        &p.name,
                        format!(
                            "declares the {side} `{}` as {}; annotated {}, it must be {}",
                            p.name,
                            p.value_type.name(),
                            annotation_name(&p.annotation),
                            expected.name()
                        ),
                    ));
                }
                let input_only = matches!(
                    p.annotation,
                    Annotation::EmbeddingDims { .. }
                        | Annotation::AudioVoice { .. }
                        | Annotation::AudioSpeed { .. }
                        | Annotation::TranscriptionLanguage
                        | Annotation::TranscriptionPrompt
                        | Annotation::TranscriptionWordTimestamps
                        | Annotation::ChatMessages
                        | Annotation::Prompt
                        | Annotation::Generation(_)
                );
                let output_only = matches!(
                    p.annotation,
                    Annotation::TranscriptionSegment
                        | Annotation::TextDelta
                        | Annotation::FinishReason
                        | Annotation::Usage
                        | Annotation::ToolCalls
                        | Annotation::TokenLogprobs
                );
                if (input && output_only) || (!input && input_only) {
                    return Err(problem(
                        tag,
                        &p.name,
                        format!(
                            "annotates its {side} `{}` {}, which only an {} can be",
                            p.name,
                            annotation_name(&p.annotation),
                            if input { "output" } else { "input" }
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The annotation's name without its fields.
    pub(super) fn annotation_name(annotation: &Annotation) -> String {
        let debug = format!("{annotation:?}");
        match debug.find([' ', '{']) {
            Some(end) => debug[..end].to_string(),
            None => debug,
        }
    }
}

#[cfg(test)]
mod rule_tests {
    use super::check_predictor;

    #[test]
    fn every_built_in_signature_follows_the_rules() {
        use crate::backends;
        check_predictor("llama", &backends::llama::signature()).unwrap();
        check_predictor("embedding", &backends::onnx::embedding::signature(384)).unwrap();
        check_predictor(
            "speech",
            &backends::onnx::speech::signature(vec!["a".into()], 22050),
        )
        .unwrap();
        check_predictor("whisper", &backends::onnx::whisper::signature()).unwrap();
    }
}

#[cfg(test)]
mod delta_tests {
    use super::{one_delta_per_call, FunctionCallDelta, ToolCallDelta};

    fn delta(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> ToolCallDelta {
        ToolCallDelta {
            index,
            id: id.map(str::to_string),
            kind: id.map(|_| "function".to_string()),
            function: Some(FunctionCallDelta {
                name: name.map(str::to_string),
                arguments: Some(arguments.to_string()),
            }),
        }
    }

    #[test]
    fn a_step_gives_one_delta_per_call() {
        // The first chunk: a call's opening delta and its first arguments.
        let merged = one_delta_per_call(vec![
            delta(0, Some("call_a"), Some("get_weather"), ""),
            delta(0, None, None, "{\""),
        ]);
        assert_eq!(
            merged,
            [delta(0, Some("call_a"), Some("get_weather"), "{\"")]
        );
        // The end of one call and the start of the next: two calls, in order.
        let merged = one_delta_per_call(vec![
            delta(0, None, None, "}"),
            delta(1, Some("call_b"), Some("f"), ""),
            delta(1, None, None, "{}"),
        ]);
        assert_eq!(
            merged,
            [
                delta(0, None, None, "}"),
                delta(1, Some("call_b"), Some("f"), "{}")
            ]
        );
    }
}
