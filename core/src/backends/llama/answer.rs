//! A turn that looped on results the conversation has (docs/tools.md, "A turn") is generated
//! again without tools: the job for that, ready before the turn starts, sent only if needed.

use super::sequence::Job;
use super::stream::Restart;
use super::LlamaPredictor;
use crate::error::Error;
use crate::predict::SamplingParams;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

/// What of the request the answer keeps: all but its tools and grammar.
pub(super) struct AnswerInstead<'a> {
    pub(super) max_tokens: Option<usize>,
    pub(super) sampling: &'a SamplingParams,
    pub(super) logit_bias: &'a [LlamaLogitBias],
    pub(super) logprobs: Option<usize>,
    pub(super) stop: Vec<String>,
}

impl LlamaPredictor {
    /// What starts `prompt` (the request's conversation rendered without tools) instead of
    /// the turn under way, within what is left of `max_tokens`; `None` when it does not fit
    /// the context.
    pub(super) fn answer_instead(&self, prompt: &str, request: AnswerInstead) -> Option<Restart> {
        let tokens = self.tokenize(prompt);
        let n_ctx = self.n_ctx as usize;
        let max_tokens = match request.max_tokens {
            Some(max) => max.max(1),
            None => n_ctx.checked_sub(tokens.len())?,
        };
        if tokens.is_empty() || tokens.len().saturating_add(max_tokens) > n_ctx {
            return None;
        }
        let (events, event_rx) = mpsc::channel();
        let cancelled = Arc::new(AtomicBool::new(false));
        let finish_now = Arc::new(AtomicBool::new(false));
        let mut job = Job {
            prompt: tokens,
            max_tokens,
            stop: request.stop,
            sampler: self.sampler(request.sampling, request.logit_bias),
            grammar: None,
            lazy: None,
            logprobs: request.logprobs,
            events,
            cancelled: Arc::clone(&cancelled),
            finish_now: Arc::clone(&finish_now),
            arrived: std::time::Instant::now(),
        };
        let (jobs, counters, tag) = (
            self.jobs.clone(),
            Arc::clone(&self.counters),
            self.tag.clone(),
        );
        Some(Box::new(move |used: usize| {
            if used >= job.max_tokens {
                return Ok(None);
            }
            job.max_tokens -= used;
            job.arrived = std::time::Instant::now();
            counters.queued.fetch_add(1, Ordering::Relaxed);
            jobs.send(job).map_err(|_| {
                counters.queued.fetch_sub(1, Ordering::Relaxed);
                Error::model(format!("The llama.cpp scheduler of `{tag}` has stopped"))
            })?;
            Ok(Some((event_rx, cancelled, finish_now)))
        }))
    }
}
