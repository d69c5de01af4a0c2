//! `client.chat.completions`: create and stream, the messages rendered for the template, and
//! the streamed choices folded into one response.

use super::common::{check_n, check_stream_options, next_unless_stopped, reject_other_fields};
use super::generation::{
    next_running, next_step, repetition_penalty, start_choices, Generation, Step,
};
use super::types::{
    AssistantMessage, ChatChoice, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest,
    ChatMessage, ChunkChoice, ChunkDelta, FunctionCall, MessageContent, StopSequences, ToolCall,
    ToolCallDelta, Usage,
};
use super::CHAT_ROLES;
use crate::error::{shown, Error, Result};
use crate::media::ChatMedia;
use crate::predict::{
    random_id, unix_now, Annotation, Cancel, GenerationOption, GenerationOptions, REASONING_EFFORTS,
};
use crate::registry::Registry;
use crate::value::Value;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;

/// `client.chat`.
#[derive(Clone)]
pub struct Chat {
    pub completions: ChatCompletions,
}

/// `client.chat.completions`.
#[derive(Clone)]
pub struct ChatCompletions {
    pub(super) registry: Arc<Registry>,
    /// What stops its calls ([`crate::Client::with_cancel`]).
    pub(crate) cancel: Cancel,
}

impl Chat {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Chat {
            completions: ChatCompletions {
                registry,
                cancel: Cancel::default(),
            },
        }
    }
}

impl ChatCompletions {
    /// Whether `model`'s predictor takes the generation option `option` (loading it if needed).
    pub(crate) fn supports(&self, model: &str, option: GenerationOption) -> Result<bool> {
        let predictor = self.registry.get(model)?;
        Ok(predictor
            .signature()
            .input_annotated(&Annotation::Generation(option))
            .is_some())
    }

    /// How many tokens `request`'s prompt takes, counted by the model itself: it reads the
    /// prompt and generates one token (where the predictor takes a limit; a user's may not), so
    /// the count is exact for every chat predictor that reports usage, and the prompt is left
    /// in the prompt cache for the request that follows. A predictor that reports no usage is
    /// an error naming `model`. (`responses.input_tokens` and `messages.count_tokens`.)
    pub(crate) fn count_input_tokens(&self, request: &ChatCompletionRequest) -> Result<u32> {
        let takes_limit = self.supports(&request.model, GenerationOption::MaxTokens)?;
        let counting = ChatCompletionRequest {
            // A predictor that takes no limit is not refused for the one asked for: counting
            // reads the prompt, whatever the reply's length would be.
            max_tokens: takes_limit.then_some(1),
            max_completion_tokens: None,
            n: None,
            stream: None,
            stream_options: None,
            ..request.clone()
        };
        let tokens = self.create(&counting)?.usage.prompt_tokens;
        if tokens == 0 {
            return Err(Error::invalid(
                "model",
                format!(
                    "The model `{}` does not report how many tokens it reads (no usage), so its \
                     input tokens cannot be counted",
                    shown(&request.model)
                ),
            ));
        }
        Ok(tokens)
    }

    /// A whole `chat.completion`. `request.stream` must not be true (use [`Self::stream`]).
    /// Its cancel ([`crate::Client::with_cancel`]) stops it at the next token, with an
    /// [`crate::ErrorKind::Cancelled`] error.
    pub fn create(&self, request: &ChatCompletionRequest) -> Result<ChatCompletion> {
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
        while let Some(chunk) = next_unless_stopped(&mut chunks, &self.cancel)? {
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

    /// The prompt a chat request puts before the model, rendered by its chat template exactly
    /// as a completion would render it (tools and `chat_template_kwargs` included): llama.cpp
    /// server's `POST /apply-template`, for debugging a template. Nothing is generated.
    pub fn render(&self, request: &ChatCompletionRequest) -> Result<RenderedPrompt> {
        let prepared = prepare(request)?;
        // llama.cpp server's clients name no model (it serves one): the default chat model.
        let model = match request.model.as_str() {
            "" => crate::config::DEFAULT_MODEL,
            model => model,
        };
        let predictor = self.registry.get(model)?;
        let Some(generation) = predictor.generation() else {
            return Err(Error::invalid(
                "model",
                format!(
                    "The model `{}` has no chat template to render: it is a predictor, which \
                     takes the messages as they are",
                    shown(model)
                ),
            ));
        };
        if let Some(part) = prepared.media.parts.first() {
            return Err(Error::invalid(
                part.at.clone(),
                format!(
                    "`{}`: the model `{}` takes text alone",
                    part.at,
                    shown(model)
                ),
            )
            .with_code(crate::error::ErrorCode::InvalidMedia));
        }
        let Value::List(messages) = prepared.messages else {
            return Err(Error::internal("Chat messages must be a list"));
        };
        let generation_request = crate::predict::GenerationRequest::new(
            crate::predict::GenerationInput::Messages(messages),
            prepared.options,
        )?;
        Ok(RenderedPrompt {
            prompt: generation.render(&generation_request)?,
        })
    }

    fn start(
        &self,
        request: &ChatCompletionRequest,
        include_usage: bool,
    ) -> Result<ChatCompletionStream> {
        let Prepared {
            messages,
            media,
            options,
            n,
            logprobs,
        } = prepare(request)?;
        let runs = start_choices(
            &self.registry,
            &request.model,
            Annotation::CHAT_MESSAGES,
            "messages",
            messages,
            &media,
            "chat completions",
            options,
            n,
            &self.cancel,
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

/// A chat request checked and read into what generation takes.
struct Prepared {
    messages: Value,
    media: ChatMedia,
    options: GenerationOptions,
    n: usize,
    logprobs: Option<i64>,
}

/// `{prompt}`: a chat request's prompt as the model's template renders it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderedPrompt {
    pub prompt: String,
}

fn prepare(request: &ChatCompletionRequest) -> Result<Prepared> {
    reject_other_fields(&request.other)?;
    check_stream_options(request.stream_options.as_ref())?;
    let n = check_n(request.n)?;
    let mut media = ChatMedia::default();
    let messages = chat_messages(&request.messages, &mut media)?;
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
    let tool_choice = request.tool_choice.clone().filter(|c| !c.is_null());
    let kind = tool_choice.as_ref().and_then(|c| match c {
        serde_json::Value::String(kind) => Some(kind.as_str()),
        other => other.get("type")?.as_str(),
    });
    if tool_choice.is_some()
        && request
            .tools
            .as_ref()
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
        && kind != Some("none")
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
    let options = GenerationOptions {
        max_tokens,
        temperature: request.temperature,
        top_p: request.top_p,
        seed: request.seed,
        stop: request.stop.clone().map(StopSequences::into_vec),
        frequency_penalty: request.frequency_penalty,
        presence_penalty: request.presence_penalty,
        top_k: request.top_k,
        min_p: request.min_p,
        repetition_penalty: repetition_penalty(request.repetition_penalty, request.repeat_penalty)?,
        chat_template_kwargs: request
            .chat_template_kwargs
            .clone()
            .map(serde_json::Value::Object),
        tools: request
            .tools
            .clone()
            .filter(|t| !t.is_null() && t.as_array().is_none_or(|a| !a.is_empty())),
        tool_choice,
        parallel_tool_calls: request.parallel_tool_calls,
        allow_repeated_tool_calls: request.allow_repeated_tool_calls,
        response_format: request.response_format.clone().filter(|f| !f.is_null()),
        logprobs,
        logit_bias: request
            .logit_bias
            .clone()
            .filter(|b| !b.is_empty())
            .map(serde_json::Value::Object),
        reasoning_effort: match request.reasoning_effort.as_deref() {
            Some(effort) if !REASONING_EFFORTS.contains(&effort) => {
                return Err(Error::invalid(
                    "reasoning_effort",
                    format!(
                        "Invalid value for `reasoning_effort`: '{}'; it must be one of {}",
                        shown(effort),
                        REASONING_EFFORTS.join(", ")
                    ),
                ))
            }
            effort => effort.map(str::to_string),
        },
    };
    Ok(Prepared {
        messages,
        media,
        options,
        n,
        logprobs,
    })
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
        if !step.reasoning.is_empty() {
            let delta = ChunkDelta {
                reasoning_content: Some(step.reasoning),
                ..ChunkDelta::default()
            };
            self.pending.push_back(self.chunk(index, delta, None));
        }
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
            let step = match next_step(&mut self.runs[index])? {
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
    reasoning: String,
    tool_calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    logprobs: Vec<serde_json::Value>,
}

impl FoldedChoice {
    fn add(&mut self, choice: ChunkChoice) {
        self.content.extend(choice.delta.content);
        self.reasoning.extend(choice.delta.reasoning_content);
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
                reasoning_content: (!self.reasoning.is_empty()).then_some(self.reasoning),
            },
            finish_reason,
            logprobs: logprobs
                .then(|| serde_json::json!({"content": self.logprobs, "refusal": null})),
        })
    }
}

/// Checks OpenAI chat messages and turns them into the predictor's `{role, content}` dicts:
/// text parts joined, `developer` rendered as `system` (chat templates predate it). A message
/// with images or audio keeps a list of parts, each medium a placeholder (`{"type": "image"}`)
/// whose bytes go to `media`, undecoded.
pub(crate) fn chat_messages(messages: &[ChatMessage], media: &mut ChatMedia) -> Result<Value> {
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
            Some(MessageContent::Text(text)) => Value::from(text.as_str()),
            Some(MessageContent::Parts(parts)) => {
                super::content_parts::parts_content(i, role, parts, media)?
            }
            None if role == "assistant" => {
                if message.tool_calls.as_ref().is_none_or(Vec::is_empty) {
                    return Err(Error::invalid(
                        format!("messages[{i}].content"),
                        format!("Missing `messages[{i}].content`: an assistant message needs content or tool_calls"),
                    ));
                }
                // Null, as OpenAI's and transformers' (DeepSeek R1's template shows the calls
                // only then); a template that cannot take it gets "" (ChatTemplate::render).
                Value::Null
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
            ("content".to_string(), content),
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

#[cfg(test)]
mod delta_tests {
    use super::one_delta_per_call;
    use crate::openai::{FunctionCallDelta, ToolCallDelta};

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
