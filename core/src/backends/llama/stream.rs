//! The consumer's end of a request: the events the scheduler sends, turned into outputs (text,
//! tool-call deltas, log probabilities, the finish); dropping it cancels the request.

use crate::chat::thinking::ThinkSplitter;
use crate::chat::tool_calls::ToolCallDeltas;
use crate::error::{Error, Result};
use crate::predict::{Cancel, GenerationStep, OnCancel, StepUsage, TokenLogprob};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

/// Text produced by one step, the log probabilities of the tokens behind it, and on the last
/// step why generation ended.
pub(super) struct Event {
    pub(super) text: String,
    pub(super) logprobs: Vec<TokenLogprob>,
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
    /// The call's cancel, and what sets `cancelled` when it fires: a request still queued for a
    /// slot or reading its prompt is dropped by the scheduler then, not at its first token
    /// (the consumer waits in `recv` until then, and only asks the cancel between outputs).
    pub(super) cancel: Cancel,
    pub(super) cancel_link: OnCancel,
    /// Tells the scheduler to end the sequence (the tool-call turn is over).
    pub(super) finish_now: Arc<AtomicBool>,
    pub(super) done: bool,
    /// Splits the thoughts out of the text, for a model that thinks in `<think>` tags.
    pub(super) thinking: Option<ThinkSplitter>,
    /// The splitter of the answer generated instead (`answer_instead`), which thinks anew.
    pub(super) restart_thinking: Option<ThinkSplitter>,
    /// Splits tool calls out of the text (the answer), when the request has tools.
    pub(super) calls: Option<ToolCallDeltas>,
    pub(super) logprobs: bool,
    /// The same request without tools, started if the turn makes again a call already
    /// answered since the user spoke (docs/tools.md, "A turn").
    pub(super) answer_instead: Option<Restart>,
    /// The usage of a turn given up for `answer_instead`, added to the answer's: prompt,
    /// cached and completion tokens.
    pub(super) given_up: [usize; 3],
}

/// What a started job gives its consumer: its events, its `cancelled` and `finish_now` flags.
pub(super) type Started = (
    mpsc::Receiver<Result<Event>>,
    Arc<AtomicBool>,
    Arc<AtomicBool>,
);

/// Starts the same request without tools (`LlamaPredictor::answer_instead`), given the
/// completion tokens already used; `None` when none of `max_tokens` is left.
pub(super) type Restart = Box<dyn FnOnce(usize) -> Result<Option<Started>> + Send>;

/// Sets `cancelled` (a job's flag, which the scheduler reads between steps) when `cancel` fires.
pub(super) fn flag_on_cancel(cancel: &Cancel, cancelled: &Arc<AtomicBool>) -> OnCancel {
    let cancelled = Arc::clone(cancelled);
    cancel.on_cancel(move || cancelled.store(true, Ordering::Relaxed))
}

impl TextStream {
    /// Gives up the turn under way (it looped on results it has): waits for its end, then
    /// generates the answer instead, within what is left of `max_tokens`. A turn that used
    /// all of `max_tokens` is not redone: its finish is returned, to end the reply.
    fn switch_to(&mut self, restart: Restart, finished: Option<Finish>) -> Result<Option<Finish>> {
        let finish = match finished {
            Some(finish) => finish,
            None => loop {
                match self.events.recv() {
                    Ok(Ok(Event {
                        finish: Some(finish),
                        ..
                    })) => break finish,
                    Ok(Ok(_)) => continue,
                    Ok(Err(error)) => return Err(error),
                    Err(_) => return Err(Error::internal("Generation stopped without finishing")),
                }
            },
        };
        if finish.reason == "length" {
            return Ok(Some(finish));
        }
        let Some((events, cancelled, finish_now)) = restart(finish.completion_tokens)? else {
            return Ok(Some(finish));
        };
        self.given_up = [
            finish.prompt_tokens,
            finish.cached_tokens,
            finish.completion_tokens,
        ];
        self.events = events;
        self.cancel_link = flag_on_cancel(&self.cancel, &cancelled);
        self.cancelled = cancelled;
        self.finish_now = finish_now;
        self.calls = None;
        if let Some(thinking) = self.restart_thinking.take() {
            self.thinking = Some(thinking);
        }
        Ok(None)
    }
}

impl Iterator for TextStream {
    type Item = Result<GenerationStep>;

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
        let had_tools = self.calls.is_some();
        // The turn was over before this event: the scheduler, running ahead, may have reached
        // `max_tokens` before it heard, but the calls are whole.
        let mut over_before = self.calls.as_ref().is_some_and(ToolCallDeltas::turn_over);
        let (reasoning, answer) = match &mut self.thinking {
            Some(thinking) => thinking.split(&event.text, end),
            None => (String::new(), event.text),
        };
        let (text, deltas) = match &mut self.calls {
            Some(calls) => {
                let (text, deltas) = calls.split(&answer, end);
                if calls.turn_over() {
                    self.finish_now.store(true, Ordering::Relaxed);
                }
                // Over on an event before the last: the finish a switch reads ahead to counts
                // as coming after it.
                over_before |= !end && calls.turn_over();
                (text, deltas)
            }
            None => (answer, Vec::new()),
        };
        let mut event_finish = event.finish;
        if self.calls.as_ref().is_some_and(ToolCallDeltas::looped) {
            if let Some(answer) = self.answer_instead.take() {
                // Content so far (a preamble) stands; the answer follows it.
                match self.switch_to(answer, event_finish.take()) {
                    Ok(finish) => event_finish = finish,
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
            }
        }
        let tool_calls = had_tools.then_some(deltas);
        let (finish_reason, usage) = match event_finish {
            Some(finish) => {
                self.done = true;
                let usage = StepUsage {
                    prompt_tokens: finish.prompt_tokens + self.given_up[0],
                    completion_tokens: finish.completion_tokens + self.given_up[2],
                    cached_tokens: finish.cached_tokens + self.given_up[1],
                };
                // A turn ended early (finish_now) ends as at a stop sequence; one cut by
                // `max_tokens` while it went on stays `length`, its last call perhaps unfinished.
                let called = self.calls.as_ref().is_some_and(ToolCallDeltas::any_started);
                let reason = match finish.reason {
                    "stop" if called => "tool_calls",
                    "length" if over_before && called => "tool_calls",
                    "length" if over_before => "stop",
                    reason => reason,
                };
                (Some(reason.to_string()), Some(usage))
            }
            None => (None, None),
        };
        Some(Ok(GenerationStep {
            text,
            reasoning,
            finish_reason,
            usage,
            tool_calls,
            logprobs: self.logprobs.then_some(event.logprobs),
        }))
    }
}

impl Drop for TextStream {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}
