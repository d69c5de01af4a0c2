//! A response's events, made from the chat stream's chunks, as OpenAI streams them.

use super::conversation::chat_messages;
use super::store::Stored;
use super::{in_responses_terms, Responses};
use crate::error::{Error, ErrorKind, Result};
use crate::openai::chat::ChatCompletionStream;
use crate::openai::types::{ChatCompletionChunk, ChatMessage, Usage};
use crate::predict::{random_id, unix_now};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;

/// An output item being streamed: its place in `output` and its id.
struct OpenItem {
    index: usize,
    id: String,
    text: String,
}

/// A function call being streamed.
struct OpenCall {
    /// The chat delta's `index`: every delta with it is this call's, text between or not.
    delta_index: u32,
    item: OpenItem,
    call_id: String,
    name: String,
}

/// A response's events, each with its `sequence_number`: `response.created`,
/// `response.in_progress`, then per output item `response.output_item.added`, its content
/// (`response.content_part.added`, `response.output_text.delta`s, `.done`s; a reasoning item's
/// `response.reasoning_text.delta`s; or
/// `response.function_call_arguments.delta`s and `.done`), `response.output_item.done`; last
/// `response.completed` (or `response.incomplete` when `max_output_tokens` cut it).
pub struct ResponseStream {
    chunks: ChatCompletionStream,
    /// The response as it stands.
    response: Json,
    sequence: u64,
    pending: VecDeque<Json>,
    /// The message item receiving text, if one is open.
    text: Option<OpenItem>,
    /// The reasoning item receiving thinking, if one is open.
    reasoning: Option<OpenItem>,
    /// Function calls being streamed (open until the response ends: a call's arguments may
    /// follow text).
    calls: Vec<OpenCall>,
    output: Vec<Json>,
    usage: Usage,
    finish_reason: Option<String>,
    ended: bool,
    /// Where to store the response when it ends: the store, its input, the conversation.
    keep: Option<(Responses, Vec<Json>, Vec<ChatMessage>)>,
    /// Why the response failed, once it has (its last event is `response.failed`).
    failure: Option<Error>,
    /// Whether the items still open were cut (by `max_output_tokens`): their status is then
    /// `incomplete`, so a client does not take a cut call's arguments for whole ones.
    cut: bool,
}

impl ResponseStream {
    /// The events of `response` (its skeleton, in progress) made from `chunks`, after the
    /// `pending` ones; `keep` stores it at the end.
    pub(super) fn new(
        chunks: ChatCompletionStream,
        response: Json,
        pending: VecDeque<Json>,
        keep: Option<(Responses, Vec<Json>, Vec<ChatMessage>)>,
    ) -> Self {
        ResponseStream {
            chunks,
            response,
            sequence: 0,
            pending,
            text: None,
            reasoning: None,
            calls: Vec::new(),
            output: Vec::new(),
            usage: Usage::default(),
            finish_reason: None,
            ended: false,
            keep,
            failure: None,
            cut: false,
        }
    }

    /// Why the response failed, if it did: after a `response.failed` event, the error behind
    /// it (what `create()` returns).
    pub fn failure(&self) -> Option<&Error> {
        self.failure.as_ref()
    }

    pub(super) fn take_failure(&mut self) -> Option<Error> {
        self.failure.take()
    }

    /// Ends the response as failed: what was made so far is in `output`, `status` is `failed`
    /// and `error` says why, in the last event, `response.failed`. Not stored.
    fn fail(&mut self, error: Error) {
        self.cut = true;
        self.close_reasoning();
        self.close_text();
        self.close_calls();
        self.response["status"] = json!("failed");
        // Set by `end()` when storing is what failed: a failed response has neither.
        self.response["completed_at"] = Json::Null;
        self.response["incomplete_details"] = Json::Null;
        let made = std::mem::take(&mut self.output);
        if !made.is_empty() {
            self.response["output"] = Json::Array(made);
        }
        self.response["error"] = json!({
            "code": response_error_code(&error),
            "message": error.message,
        });
        let response = self.response.clone();
        self.event(json!({"type": "response.failed", "response": response}));
        self.failure = Some(error);
    }

    /// The response's id (`resp_...`).
    pub fn id(&self) -> &str {
        self.response["id"].as_str().unwrap_or_default()
    }

    fn event(&mut self, event: Json) {
        self.pending.push_back(event);
    }

    fn open_reasoning(&mut self) {
        if self.reasoning.is_some() {
            return;
        }
        self.close_text();
        let item = OpenItem {
            index: self.output.len(),
            id: random_id("rs_"),
            text: String::new(),
        };
        self.output.push(Json::Null);
        self.event(json!({
            "type": "response.output_item.added",
            "output_index": item.index,
            "item": {"id": item.id, "type": "reasoning", "status": "in_progress", "summary": [], "content": []},
        }));
        self.event(json!({
            "type": "response.content_part.added",
            "item_id": item.id,
            "output_index": item.index,
            "content_index": 0,
            "part": {"type": "reasoning_text", "text": ""},
        }));
        self.reasoning = Some(item);
    }

    fn close_reasoning(&mut self) {
        let Some(item) = self.reasoning.take() else {
            return;
        };
        let status = self.item_status();
        let part = json!({"type": "reasoning_text", "text": item.text});
        self.event(json!({
            "type": "response.reasoning_text.done",
            "item_id": item.id,
            "output_index": item.index,
            "content_index": 0,
            "text": item.text,
        }));
        self.event(json!({
            "type": "response.content_part.done",
            "item_id": item.id,
            "output_index": item.index,
            "content_index": 0,
            "part": part,
        }));
        let done = json!({"id": item.id, "type": "reasoning", "status": status, "summary": [], "content": [part]});
        self.output[item.index] = done.clone();
        self.event(
            json!({"type": "response.output_item.done", "output_index": item.index, "item": done}),
        );
    }

    fn open_text(&mut self) {
        if self.text.is_some() {
            return;
        }
        self.close_reasoning();
        let item = OpenItem {
            index: self.output.len(),
            id: random_id("msg_"),
            text: String::new(),
        };
        self.output.push(Json::Null);
        self.event(json!({
            "type": "response.output_item.added",
            "output_index": item.index,
            "item": {"id": item.id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        }));
        self.event(json!({
            "type": "response.content_part.added",
            "item_id": item.id,
            "output_index": item.index,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        }));
        self.text = Some(item);
    }

    fn item_status(&self) -> &'static str {
        if self.cut {
            "incomplete"
        } else {
            "completed"
        }
    }

    fn close_text(&mut self) {
        let Some(item) = self.text.take() else { return };
        let status = self.item_status();
        let part =
            json!({"type": "output_text", "text": item.text, "annotations": [], "logprobs": []});
        self.event(json!({
            "type": "response.output_text.done",
            "item_id": item.id,
            "output_index": item.index,
            "content_index": 0,
            "text": item.text,
            "logprobs": [],
        }));
        self.event(json!({
            "type": "response.content_part.done",
            "item_id": item.id,
            "output_index": item.index,
            "content_index": 0,
            "part": part,
        }));
        let done = json!({"id": item.id, "type": "message", "status": status, "role": "assistant", "content": [part]});
        self.output[item.index] = done.clone();
        self.event(
            json!({"type": "response.output_item.done", "output_index": item.index, "item": done}),
        );
    }

    fn close_calls(&mut self) {
        let status = self.item_status();
        for call in std::mem::take(&mut self.calls) {
            let item = call.item;
            self.event(json!({
                "type": "response.function_call_arguments.done",
                "item_id": item.id,
                "output_index": item.index,
                "name": call.name,
                "arguments": item.text,
            }));
            let done = json!({
                "id": item.id, "type": "function_call", "status": status,
                "call_id": call.call_id, "name": call.name, "arguments": item.text,
            });
            self.output[item.index] = done.clone();
            self.event(json!({"type": "response.output_item.done", "output_index": item.index, "item": done}));
        }
    }

    fn chunk(&mut self, chunk: ChatCompletionChunk) {
        if let Some(usage) = chunk.usage {
            self.usage = usage;
        }
        for choice in chunk.choices {
            if let Some(thinking) = choice.delta.reasoning_content.filter(|t| !t.is_empty()) {
                self.open_reasoning();
                if let Some(item) = &mut self.reasoning {
                    item.text.push_str(&thinking);
                    let event = json!({
                        "type": "response.reasoning_text.delta",
                        "item_id": item.id,
                        "output_index": item.index,
                        "content_index": 0,
                        "delta": thinking,
                    });
                    self.event(event);
                }
            }
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                self.open_text();
                if let Some(item) = &mut self.text {
                    item.text.push_str(&text);
                    let event = json!({
                        "type": "response.output_text.delta",
                        "item_id": item.id,
                        "output_index": item.index,
                        "content_index": 0,
                        "delta": text,
                        "logprobs": [],
                    });
                    self.event(event);
                }
            }
            for delta in choice.delta.tool_calls.into_iter().flatten() {
                let known = self.calls.iter().position(|c| c.delta_index == delta.index);
                let slot = known.unwrap_or(self.calls.len());
                if known.is_none() {
                    self.close_reasoning();
                    self.close_text();
                    let function = delta.function.clone().unwrap_or_default();
                    let item = OpenItem {
                        index: self.output.len(),
                        id: random_id("fc_"),
                        text: String::new(),
                    };
                    let call_id = delta.id.clone().unwrap_or_else(|| random_id("call_"));
                    let name = function.name.unwrap_or_default();
                    self.output.push(Json::Null);
                    self.event(json!({
                        "type": "response.output_item.added",
                        "output_index": item.index,
                        "item": {"id": item.id, "type": "function_call", "status": "in_progress",
                                 "call_id": call_id, "name": name, "arguments": ""},
                    }));
                    self.calls.push(OpenCall {
                        delta_index: delta.index,
                        item,
                        call_id,
                        name,
                    });
                }
                let arguments = delta.function.and_then(|f| f.arguments).unwrap_or_default();
                if let Some(call) = self.calls.get_mut(slot).filter(|_| !arguments.is_empty()) {
                    call.item.text.push_str(&arguments);
                    let event = json!({
                        "type": "response.function_call_arguments.delta",
                        "item_id": call.item.id,
                        "output_index": call.item.index,
                        "delta": arguments,
                    });
                    self.event(event);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
    }

    fn end(&mut self) {
        let incomplete = self.finish_reason.as_deref() == Some("length");
        self.cut = incomplete;
        self.close_reasoning();
        self.close_text();
        self.close_calls();
        let cached = self
            .usage
            .prompt_tokens_details
            .map_or(0, |d| d.cached_tokens);
        self.response["status"] = json!(if incomplete {
            "incomplete"
        } else {
            "completed"
        });
        if incomplete {
            self.response["incomplete_details"] = json!({"reason": "max_output_tokens"});
        } else {
            self.response["completed_at"] = json!(unix_now());
        }
        self.response["output"] = Json::Array(std::mem::take(&mut self.output));
        self.response["usage"] = json!({
            "input_tokens": self.usage.prompt_tokens,
            // Every input token not from the cache had its KV written into the cache.
            "input_tokens_details": {
                "cached_tokens": cached,
                "cache_write_tokens": self.usage.prompt_tokens.saturating_sub(cached),
            },
            "output_tokens": self.usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.usage.total_tokens,
        });
        if let Some((responses, input, mut conversation)) = self.keep.take() {
            let output = self.response["output"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            chat_messages(&output, &mut conversation);
            let id = self.id().to_string();
            let stored = Stored {
                response: self.response.clone(),
                input,
                conversation,
            };
            // The caller asked for it stored: a response that cannot be fails, said so.
            if let Err(error) = responses.store.put(&id, &stored) {
                self.fail(error);
                return;
            }
        }
        let kind = if incomplete {
            "response.incomplete"
        } else {
            "response.completed"
        };
        let response = self.response.clone();
        self.event(json!({"type": kind, "response": response}));
    }
}

impl Iterator for ResponseStream {
    type Item = Result<Json>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(mut event) = self.pending.pop_front() {
                event["sequence_number"] = json!(self.sequence);
                self.sequence += 1;
                return Some(Ok(event));
            }
            if self.ended {
                return None;
            }
            match self.chunks.next() {
                Some(Ok(chunk)) => self.chunk(chunk),
                Some(Err(error)) => {
                    self.ended = true;
                    self.fail(in_responses_terms(error));
                }
                None => {
                    self.ended = true;
                    self.end();
                }
            }
        }
    }
}

/// The `error.code` of a failed response: OpenAI's codes are `server_error`,
/// `rate_limit_exceeded`, `invalid_prompt` and a few about images and vector stores.
fn response_error_code(error: &Error) -> &'static str {
    match error.kind {
        ErrorKind::InvalidRequest | ErrorKind::ContextLengthExceeded => "invalid_prompt",
        _ => "server_error",
    }
}
