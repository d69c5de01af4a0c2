//! The consumer's end of a request: the events the scheduler sends, turned into outputs (text,
//! tool-call deltas, log probabilities, the finish); dropping it cancels the request.

use crate::chat::tool_calls::ToolCallDeltas;
use crate::error::{Error, Result};
use crate::predict::Outputs;
use crate::value::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::collections::VecDeque;
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
    /// Tells the scheduler to end the sequence (the tool-call turn is over).
    pub(super) finish_now: Arc<AtomicBool>,
    pub(super) done: bool,
    /// Outputs made from one event beyond its first (a call's deltas then text: two steps).
    pub(super) queued: VecDeque<Outputs>,
    /// Splits tool calls out of the text, when the request has tools.
    pub(super) calls: Option<ToolCallDeltas>,
    pub(super) logprobs: bool,
}

impl Iterator for TextStream {
    type Item = Result<Outputs>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(outputs) = self.queued.pop_front() {
            return Some(Ok(outputs));
        }
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
        let steps = match &mut self.calls {
            Some(calls) => {
                let steps = calls.split(&event.text, end);
                if calls.turn_over() {
                    self.finish_now.store(true, Ordering::Relaxed);
                }
                steps
            }
            None => vec![(event.text, Vec::new())],
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
                let calls = self.calls.as_ref();
                let called = calls.is_some_and(ToolCallDeltas::any_started);
                // A turn whose calls were all made ended there, whatever came after.
                let over = calls.is_some_and(ToolCallDeltas::turn_over);
                let reason = match finish.reason {
                    "stop" if called => "tool_calls",
                    "length" if called && over => "tool_calls",
                    reason => reason,
                };
                (Value::from(reason), Value::Dict(usage))
            }
            None => (Value::Null, Value::Null),
        };
        let mut logprobs = if self.logprobs {
            Value::List(event.logprobs)
        } else {
            Value::Null
        };
        let tool_calls = |deltas: Vec<Value>| {
            if self.calls.is_some() {
                Value::List(deltas)
            } else {
                Value::Null
            }
        };
        // One output per step, the finish on the last; the event's log probabilities with the
        // first (they cover the tokens of every step).
        let last = steps.len().saturating_sub(1);
        let mut outputs: VecDeque<Outputs> = VecDeque::new();
        for (i, (text, deltas)) in steps.into_iter().enumerate() {
            let is_last = i == last;
            outputs.push_back(vec![
                Value::String(text),
                if is_last { finish_reason.clone() } else { Value::Null },
                if is_last { usage.clone() } else { Value::Null },
                tool_calls(deltas),
                std::mem::replace(&mut logprobs, if self.logprobs { Value::List(Vec::new()) } else { Value::Null }),
            ]);
        }
        if outputs.is_empty() {
            outputs.push_back(vec![
                Value::String(String::new()),
                finish_reason,
                usage,
                tool_calls(Vec::new()),
                logprobs,
            ]);
        }
        let first = outputs.pop_front();
        self.queued = outputs;
        first.map(Ok)
    }
}

impl Drop for TextStream {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}
