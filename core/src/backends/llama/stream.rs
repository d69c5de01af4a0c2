//! The consumer's end of a request: the events the scheduler sends, turned into outputs (text,
//! tool-call deltas, log probabilities, the finish); dropping it cancels the request.

use crate::chat::tool_calls::{Piece, ToolCallParser};
use crate::error::{Error, Result};
use crate::predict::Outputs;
use crate::value::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

/// Text produced by one step, the log probabilities of the tokens behind it, and on the last
/// step why generation ended.
pub(super) struct Event {
    pub(super) text: String,
    pub(super) logprobs: Vec<Value>,
    pub(super) finish: Option<Finish>,
}

pub(super) struct Finish {
    pub(super) reason: &'static str,
    pub(super) prompt_tokens: usize,
    /// Of the prompt tokens, those whose KV came from the cache.
    pub(super) cached_tokens: usize,
    pub(super) completion_tokens: usize,
}

/// The consumer's end of a request: pulls events, and cancels the request when dropped.
pub(super) struct TextStream {
    pub(super) events: mpsc::Receiver<Result<Event>>,
    pub(super) cancelled: Arc<AtomicBool>,
    pub(super) done: bool,
    /// Splits tool calls out of the text, when the request has tools.
    pub(super) calls: Option<CallStream>,
    pub(super) logprobs: bool,
}

/// Tool calls found in the text, given out as OpenAI's streamed deltas.
pub(super) struct CallStream {
    pub(super) parser: ToolCallParser,
    /// Calls started so far: the next call's `index`.
    pub(super) started: usize,
}

impl CallStream {
    /// Content and tool-call deltas out of `text` (and, at the end, what was held back).
    pub(super) fn split(&mut self, text: &str, end: bool) -> (String, Vec<Value>) {
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

    pub(super) fn start(&mut self, name: String, arguments: String) -> Value {
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
