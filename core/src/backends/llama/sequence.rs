//! A request as the scheduler holds it: the job handed to it, and the sequence of the
//! context it occupies while it runs.

use super::stream::Event;
use crate::chat::text::{StopMatcher, Utf8Assembler};
use crate::error::Result;
use crate::predict::TokenLogprob;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llguidance::Matcher;
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// One request, handed to the scheduler.
pub(super) struct Job {
    pub(super) prompt: Vec<LlamaToken>,
    pub(super) max_tokens: usize,
    pub(super) stop: Vec<String>,
    pub(super) sampler: LlamaSampler,
    /// The grammar the output follows from its first token.
    pub(super) grammar: Option<Matcher>,
    /// The grammar that starts when the output reaches a trigger.
    pub(super) lazy: Option<Lazy>,
    /// Alternatives to report with each token's log probability, when asked.
    pub(super) logprobs: Option<usize>,
    pub(super) events: mpsc::Sender<Result<Event>>,
    /// Set when the consumer drops its stream: the scheduler frees the sequence at its next step.
    pub(super) cancelled: Arc<AtomicBool>,
    /// Set when the consumer has what it wants (a tool-call turn is over): the sequence ends
    /// at its next token, as at a stop sequence.
    pub(super) finish_now: Arc<AtomicBool>,
    /// When the request came in (queue wait, time to first token).
    pub(super) arrived: Instant,
}

/// A grammar that constrains the output from the moment it ends with `trigger` (the model
/// opened a tool call), as llama.cpp's lazy grammars do.
pub(super) struct Lazy {
    pub(super) trigger: &'static str,
    pub(super) matcher: Matcher,
}

/// A request occupying one sequence of the context.
pub(super) struct Sequence {
    pub(super) job: Job,
    /// Prompt tokens already in the KV cache.
    pub(super) prefilled: usize,
    /// Position of the next token in the sequence.
    pub(super) n_past: usize,
    /// Tokens to feed at the next step, once the prompt is in: the last sampled one, then
    /// those its grammar forces after it (jump-forward).
    pub(super) feed: Vec<LlamaToken>,
    /// Forced tokens in `feed` whose text waits for their log probabilities (asked for): each
    /// with the batch index of the logits that predict it, set when the batch is filled.
    pub(super) awaiting: Vec<(LlamaToken, i32)>,
    /// Drafted tokens in `feed` after the sampled one (speculative decoding), and the batch
    /// index of the sampled one's logits once fed (those of the drafts follow it).
    pub(super) drafts: Vec<LlamaToken>,
    pub(super) verify_from: Option<i32>,
    /// How many tokens the next draft may have: it grows while drafts are accepted whole and
    /// shrinks to what was accepted and one more, so that text that does not repeat costs little.
    pub(super) draft_len: usize,
    /// The tokens generated so far (where a draft is looked up, with the prompt).
    pub(super) generated: Vec<LlamaToken>,
    /// Index in the current batch whose logits this sequence samples from.
    pub(super) logits_index: Option<i32>,
    pub(super) completion_tokens: usize,
    pub(super) utf8: Utf8Assembler,
    pub(super) stops: StopMatcher,
    /// The grammar in force (from the start, or since the lazy one's trigger).
    pub(super) grammar: Option<Matcher>,
    /// The end of the output, to spot a lazy grammar's trigger.
    pub(super) tail: String,
    /// Log probabilities of tokens whose text is held back, with where that text ends
    /// (in bytes of the whole output).
    pub(super) logprobs: VecDeque<(usize, TokenLogprob)>,
    /// Bytes of output produced, and given out.
    pub(super) produced_bytes: usize,
    pub(super) released_bytes: usize,
    /// Another request with the same prompt whose prefill this one waits for, to copy its KV
    /// cache instead of computing it again (the `n` choices of one request): its slot, and its
    /// cancel flag to recognise it by.
    pub(super) follows: Option<(usize, Arc<AtomicBool>)>,
    /// Prompt tokens found in the slot's cache instead of computed.
    pub(super) cached_tokens: usize,
    /// When its first token was sampled (time per output token).
    pub(super) first_token_at: Option<Instant>,
}

impl Sequence {
    /// The log probabilities of the tokens whose text is now all given out (all of them at
    /// the end).
    pub(super) fn released_logprobs(&mut self, text: &str, end: bool) -> Vec<TokenLogprob> {
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
