//! A chat completion's chunks as Anthropic's stream events: `message_start`, `ping`, then per
//! content block `content_block_start`, its `content_block_delta`s (`thinking_delta`,
//! `text_delta`, or a tool call's `input_json_delta`) and `content_block_stop`, then `message_delta` (the stop reason
//! and usage) and `message_stop`. An error after the start is an `error` event, as Anthropic
//! sends it, and ends the events.

use super::stop_reason;
use crate::error::Result;
use crate::openai::{ChatCompletionChunk, ChatCompletionStream};
use crate::predict::random_id;
use serde_json::{json, Value as Json};
use std::collections::VecDeque;

/// The block under way.
#[derive(PartialEq)]
enum Block {
    None,
    Thinking,
    Text,
    ToolUse,
}

/// Anthropic's stream events, as JSON values (each names itself in `type`).
pub struct MessageEvents {
    chunks: Option<ChatCompletionStream>,
    id: String,
    model: String,
    started: bool,
    block: Block,
    /// Blocks opened so far; the open one is `index - 1`.
    index: usize,
    stop_reason: &'static str,
    pending: VecDeque<Json>,
}

/// Token counts as Anthropic reports them: `input_tokens` leaves out the prompt tokens read
/// from the prompt cache, which are `cache_read_input_tokens` (their sum is the prompt).
pub(super) fn anthropic_usage(usage: &crate::openai::Usage) -> Json {
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .map_or(0, |d| d.cached_tokens)
        .min(usage.prompt_tokens);
    json!({
        "input_tokens": usage.prompt_tokens - cached,
        "output_tokens": usage.completion_tokens,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    })
}

/// An error as Anthropic's `error` event (and body).
pub fn error_event(error: &crate::Error) -> Json {
    json!({"type": "error", "error": {"type": anthropic_error_type(error), "message": error.message}})
}

/// The Anthropic error type of an error.
pub fn anthropic_error_type(error: &crate::Error) -> &'static str {
    // A server going away is Anthropic's "overloaded": the SDKs retry it elsewhere.
    if error.code == Some(crate::ErrorCode::ServerShutdown) {
        return "overloaded_error";
    }
    match error.kind.http_status() {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 => "timeout_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

impl MessageEvents {
    pub(super) fn new(chunks: ChatCompletionStream, model: String) -> Self {
        MessageEvents {
            chunks: Some(chunks),
            id: random_id("msg_"),
            model,
            started: false,
            block: Block::None,
            index: 0,
            stop_reason: "end_turn",
            pending: VecDeque::new(),
        }
    }

    fn start(&mut self) {
        self.started = true;
        self.pending.push_back(json!({
            "type": "message_start",
            "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        }));
        self.pending.push_back(json!({"type": "ping"}));
    }

    fn close_block(&mut self) {
        if self.block != Block::None {
            self.pending
                .push_back(json!({"type": "content_block_stop", "index": self.index - 1}));
            self.block = Block::None;
        }
    }

    fn open_block(&mut self, block: Block, content_block: Json) {
        self.close_block();
        self.pending.push_back(json!({
            "type": "content_block_start", "index": self.index, "content_block": content_block,
        }));
        self.index += 1;
        self.block = block;
    }

    fn delta(&mut self, delta: Json) {
        self.pending.push_back(json!({
            "type": "content_block_delta", "index": self.index - 1, "delta": delta,
        }));
    }

    fn add(&mut self, chunk: ChatCompletionChunk) {
        for choice in chunk.choices {
            let delta = choice.delta;
            if let Some(thinking) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                if self.block != Block::Thinking {
                    self.open_block(
                        Block::Thinking,
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                    );
                }
                self.delta(json!({"type": "thinking_delta", "thinking": thinking}));
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                if self.block != Block::Text {
                    self.open_block(
                        Block::Text,
                        json!({"type": "text", "text": "", "citations": null}),
                    );
                }
                self.delta(json!({"type": "text_delta", "text": text}));
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let function = call.function.unwrap_or_default();
                if let Some(id) = call.id {
                    self.open_block(
                        Block::ToolUse,
                        json!({"type": "tool_use", "id": id,
                               "name": function.name.unwrap_or_default(), "input": {}}),
                    );
                }
                if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
                    if self.block == Block::ToolUse {
                        self.delta(json!({"type": "input_json_delta", "partial_json": arguments}));
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.stop_reason = stop_reason(&reason);
            }
        }
        if let Some(usage) = chunk.usage {
            self.close_block();
            self.pending.push_back(json!({
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": null},
                "usage": anthropic_usage(&usage),
            }));
            self.pending.push_back(json!({"type": "message_stop"}));
            self.chunks = None;
        }
    }
}

impl Iterator for MessageEvents {
    type Item = Result<Json>;

    fn next(&mut self) -> Option<Result<Json>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            let chunks = self.chunks.as_mut()?;
            match chunks.next() {
                Some(Ok(chunk)) => {
                    if !self.started {
                        self.start();
                    }
                    self.add(chunk);
                }
                // Before any event the error is the call's; after, an `error` event ends them.
                Some(Err(error)) if !self.started => {
                    self.chunks = None;
                    return Some(Err(super::in_anthropic_terms(error)));
                }
                Some(Err(error)) => {
                    self.chunks = None;
                    return Some(Ok(error_event(&super::in_anthropic_terms(error))));
                }
                None => {
                    // The chat ended without its usage chunk: close what is open.
                    self.chunks = None;
                    if self.started {
                        self.close_block();
                        self.pending.push_back(json!({
                            "type": "message_delta",
                            "delta": {"stop_reason": self.stop_reason, "stop_sequence": null},
                            "usage": {"output_tokens": 0},
                        }));
                        self.pending.push_back(json!({"type": "message_stop"}));
                    }
                }
            }
        }
    }
}
