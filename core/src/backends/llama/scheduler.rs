//! The continuous-batching scheduler: one thread per model owning its context, admitting
//! requests into sequences, reusing cached prompts, decoding one batch per step and sampling
//! each sequence's next token (see docs/architecture.md).

use crate::error::{Error, Result};
use crate::predict::TokenLogprob;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use super::prefill::{common_prefix, leader_for, share_prefills, unlink_orphans};
use super::sampling::LogitsSummary;
use super::sequence::{Job, Sequence};
use super::speculation::{next_draft_len, ngram_draft};
use super::stream::{Event, Finish};
use super::{backend, Counters, N_BATCH};
use crate::chat::text::{StopMatcher, Utf8Assembler};
use llguidance::Matcher;

/// Most tokens forced in one step (a long constant in a schema is fed over several).
const MAX_FORCED: usize = 32;

/// A generated token, and how it was chosen.
#[derive(Clone, Copy)]
enum Generated {
    Sampled(LlamaToken),
    /// Forced by the grammar (jump-forward).
    Forced(LlamaToken),
}

/// What one step gives out for a sequence.
#[derive(Default)]
struct Output {
    text: String,
    reason: Option<&'static str>,
    /// Flush the text held back (any end but a stop sequence).
    flush: bool,
}

pub(super) struct Scheduler {
    pub(super) model: Arc<LlamaModel>,
    pub(super) n_ctx: u32,
    pub(super) parallel: u32,
    pub(super) threads: u32,
    pub(super) counters: Arc<Counters>,
    /// Per idle slot, the tokens its KV cache still holds from the request it served last.
    pub(super) kept: Vec<Vec<LlamaToken>>,
    /// Per slot, when it was last given a request (a counter): the least recently used
    /// slot is the one whose cache a request without a cached prefix overwrites.
    pub(super) last_used: Vec<u64>,
    pub(super) clock: u64,
    /// How many of a prompt's last tokens a cache hit computes again (`recomputed_on_a_hit`).
    pub(super) recomputed: usize,
    /// Speculative decoding by n-gram lookup, when on.
    pub(super) speculation: Option<Speculation>,
}

/// The n-gram lookup's sizes (`ngram_speculation` and its options in the config).
pub(super) struct Speculation {
    pub(super) draft_max: usize,
    pub(super) ngram_min: usize,
    pub(super) ngram_max: usize,
}

impl Scheduler {
    pub(super) fn run(mut self, jobs: mpsc::Receiver<Job>, ready: mpsc::SyncSender<Result<()>>) {
        let backend = match backend() {
            Ok(backend) => backend,
            Err(e) => return drop(ready.send(Err(e))),
        };
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(self.n_ctx * self.parallel))
            .with_n_seq_max(self.parallel)
            .with_kv_unified(false)
            .with_n_batch(N_BATCH)
            .with_n_ubatch(N_BATCH)
            .with_n_threads(self.threads as i32)
            .with_n_threads_batch(self.threads as i32)
            // Off: with it, llama.cpp's CPU attention gives slightly different values for
            // the same tokens cut into other batches, so a prompt-cache hit would not answer
            // as a cold request does; without it the split does not change a bit (measured,
            // docs/speed.md). llama-cpp-python leaves it off by default too.
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
        // The context borrows the model: its own handle, so `self` stays free to change.
        let model = Arc::clone(&self.model);
        let mut ctx = match model.new_context(backend, params) {
            Ok(ctx) => ctx,
            Err(e) => {
                return drop(ready.send(Err(Error::model(format!(
                    "Cannot create a llama.cpp context of {} tokens (`n_ctx` {} × `parallel` \
                     {}): {e}; lower `n_ctx` or `parallel`",
                    self.n_ctx as u64 * self.parallel as u64,
                    self.n_ctx,
                    self.parallel
                )))))
            }
        };
        let _ = ready.send(Ok(()));
        let mut batch = LlamaBatch::new(N_BATCH as usize, 1);
        let mut slots: Vec<Option<Sequence>> = (0..self.parallel).map(|_| None).collect();
        let mut queue: VecDeque<Job> = VecDeque::new();
        let mut open = true;
        loop {
            // Wait for work when idle; otherwise take whatever has arrived and keep decoding.
            if open && queue.is_empty() && slots.iter().all(Option::is_none) {
                match jobs.recv() {
                    Ok(job) => queue.push_back(job),
                    Err(_) => return,
                }
            }
            while open {
                match jobs.try_recv() {
                    Ok(job) => queue.push_back(job),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => open = false,
                }
            }
            self.drop_cancelled(&mut slots, &mut queue);
            // The sequences still prefilling, as leaders for new ones with the same prompt.
            let mut slots_view: Vec<(usize, Vec<LlamaToken>, Arc<AtomicBool>)> = slots
                .iter()
                .enumerate()
                .filter_map(|(id, s)| {
                    let s = s.as_ref()?;
                    (s.follows.is_none() && s.prefilled < s.job.prompt.len())
                        .then(|| (id, s.job.prompt.clone(), Arc::clone(&s.job.cancelled)))
                })
                .collect();
            while slots.iter().any(Option::is_none) {
                let Some(mut job) = queue.pop_front() else {
                    break;
                };
                let follows = leader_for(&job.prompt, &slots_view);
                let (id, reused) = self.slot_for(&job.prompt, &slots, follows.is_some(), &mut ctx);
                {
                    let slot = &mut slots[id];
                    self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                    self.counters.active.fetch_add(1, Ordering::Relaxed);
                    self.counters.queue_wait.record(job.arrived.elapsed());
                    self.counters
                        .prompt
                        .fetch_add(job.prompt.len() as u64, Ordering::Relaxed);
                    let grammar = job.grammar.take();
                    slots_view.push((id, job.prompt.clone(), Arc::clone(&job.cancelled)));
                    *slot = Some(Sequence {
                        follows,
                        cached_tokens: reused,
                        stops: StopMatcher::new(job.stop.clone()),
                        grammar,
                        tail: String::new(),
                        logprobs: VecDeque::new(),
                        produced_bytes: 0,
                        released_bytes: 0,
                        job,
                        prefilled: reused,
                        n_past: reused,
                        feed: Vec::new(),
                        awaiting: Vec::new(),
                        drafts: Vec::new(),
                        verify_from: None,
                        draft_len: self.speculation.as_ref().map_or(0, |s| s.draft_max),
                        generated: Vec::new(),
                        logits_index: None,
                        completion_tokens: 0,
                        utf8: Utf8Assembler::default(),
                        first_token_at: None,
                    });
                }
            }
            if slots.iter().all(Option::is_none) {
                self.counters.kv_used.store(0, Ordering::Relaxed);
                if !open {
                    return;
                }
                continue;
            }
            unlink_orphans(&mut slots);
            if let Err(error) = self.fill_batch(&mut batch, &mut slots) {
                self.fail_batch(&mut slots, &mut ctx, error);
                continue;
            }
            let decoded = {
                let _cores = crate::backends::cores::Cores::process().take(self.threads);
                ctx.decode(&mut batch)
            };
            if let Err(e) = decoded {
                let error = Error::model(format!("llama.cpp failed to decode: {e}"));
                self.fail_batch(&mut slots, &mut ctx, error);
                continue;
            }
            share_prefills(&mut slots, &mut ctx);
            self.sample(&mut slots, &mut ctx);
            let cells: usize = slots.iter().flatten().map(|seq| seq.n_past).sum();
            self.counters.kv_used.store(cells as u64, Ordering::Relaxed);
        }
    }

    /// Puts one token per generating sequence, then prompt chunks, into the batch.
    pub(super) fn fill_batch(
        &self,
        batch: &mut LlamaBatch,
        slots: &mut [Option<Sequence>],
    ) -> Result<()> {
        batch.clear();
        let add_error = |e| Error::internal(format!("Cannot fill the llama.cpp batch: {e}"));
        for (id, seq) in slots.iter_mut().enumerate() {
            let Some(seq) = seq else { continue };
            seq.logits_index = None;
            if seq.feed.is_empty() {
                continue;
            }
            // Logits at the last token give the next one; at the others only when the forced
            // tokens after them need their log probabilities.
            let all_logits = !seq.awaiting.is_empty() || !seq.drafts.is_empty();
            let n = seq.feed.len();
            let first = batch.n_tokens();
            for (i, token) in seq.feed.drain(..).enumerate() {
                let last = i + 1 == n;
                batch
                    .add(token, seq.n_past as i32, &[id as i32], last || all_logits)
                    .map_err(add_error)?;
                seq.n_past += 1;
                if let Some(awaiting) = seq.awaiting.get_mut(i).filter(|_| !last) {
                    awaiting.1 = batch.n_tokens() - 1;
                }
            }
            if !seq.drafts.is_empty() {
                seq.verify_from = Some(first);
            }
            seq.logits_index = Some(batch.n_tokens() - 1);
        }
        // Prompts in the order their requests were admitted. The oldest gets all the room; a
        // younger one joins only if it fits whole in what is left of a quarter of the batch:
        // a short remainder (a prompt-cache hit) is not held up behind a long prompt, and two
        // long prompts do not make the older wait for both (time to first token under load).
        let mut prefilling: Vec<usize> = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.as_ref()
                    .is_some_and(|s| s.follows.is_none() && s.prefilled < s.job.prompt.len())
            })
            .map(|(id, _)| id)
            .collect();
        prefilling.sort_by_key(|&id| self.last_used[id]);
        let mut prompt_tokens = 0;
        for (n, id) in prefilling.into_iter().enumerate() {
            let Some(seq) = slots[id].as_mut() else {
                continue;
            };
            let remaining = seq.job.prompt.len() - seq.prefilled;
            let room = N_BATCH as usize - batch.n_tokens() as usize;
            if room == 0 {
                break;
            }
            if n > 0 && prompt_tokens + remaining > N_BATCH as usize / 4 {
                continue;
            }
            let take = remaining.min(room);
            for i in seq.prefilled..seq.prefilled + take {
                let last = i + 1 == seq.job.prompt.len();
                batch
                    .add(seq.job.prompt[i], i as i32, &[id as i32], last)
                    .map_err(add_error)?;
            }
            prompt_tokens += take;
            seq.prefilled += take;
            seq.n_past = seq.prefilled;
            if seq.prefilled == seq.job.prompt.len() {
                seq.logits_index = Some(batch.n_tokens() - 1);
            }
        }
        Ok(())
    }

    /// Samples the next token of every sequence that has logits in this batch (after giving
    /// out the forced tokens that waited for theirs, or checking the drafted ones), then
    /// appends the tokens its grammar forces after it, or a draft.
    pub(super) fn sample(&mut self, slots: &mut [Option<Sequence>], ctx: &mut LlamaContext) {
        for (id, slot) in slots.iter_mut().enumerate() {
            let Some(seq) = slot else { continue };
            let Some(index) = seq.logits_index.take() else {
                continue;
            };
            let mut out = match self.step(seq, id, ctx, index) {
                Ok(out) => out,
                Err(error) => {
                    if let Some(seq) = self.release(slot, id) {
                        let _ = seq.job.events.send(Err(error));
                    }
                    continue;
                }
            };
            if out.reason.is_none() && seq.job.finish_now.load(Ordering::Relaxed) {
                out.reason = Some("stop");
                out.flush = true;
            }
            let Output {
                mut text,
                reason,
                flush,
            } = out;
            if flush {
                let (safe, stopped) = seq.stops.push(&seq.utf8.finish());
                text.push_str(&safe);
                if !stopped {
                    text.push_str(&seq.stops.finish());
                }
            }
            let logprobs = seq.released_logprobs(&text, flush);
            let finish = reason.map(|reason| Finish {
                reason,
                prompt_tokens: seq.job.prompt.len(),
                cached_tokens: seq.cached_tokens,
                completion_tokens: seq.completion_tokens,
            });
            let event = Event {
                text,
                logprobs,
                finish,
            };
            if event.finish.is_some() {
                // Free the sequence before the consumer hears of the end, so that the metrics
                // it may read next already count the request as finished.
                if let Some(seq) = self.release(slot, id) {
                    let _ = seq.job.events.send(Ok(event));
                }
            } else if (!event.text.is_empty() || !event.logprobs.is_empty())
                && seq.job.events.send(Ok(event)).is_err()
            {
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
                self.release(slot, id);
            }
        }
    }

    /// One sequence's step after a decode: what it gives out, and what it feeds next.
    fn step(
        &self,
        seq: &mut Sequence,
        id: usize,
        ctx: &mut LlamaContext,
        index: i32,
    ) -> Result<Output> {
        let mut out = Output::default();
        let awaiting = std::mem::take(&mut seq.awaiting);
        // They were fed last, after the token sampled before them.
        let first_position = seq.n_past - awaiting.len();
        for (i, (token, at)) in awaiting.into_iter().enumerate() {
            let logprob = seq
                .job
                .logprobs
                .map(|top| logprob_at(ctx, at, token, top, &self.model));
            self.emit(
                seq,
                Generated::Forced(token),
                logprob,
                first_position + i,
                &mut out,
            );
            if out.reason.is_some() {
                return Ok(out);
            }
        }
        if seq.grammar.as_ref().is_some_and(is_complete) {
            // Forced tokens completed it: its end is the only token left.
            out.reason = Some("stop");
            out.flush = true;
            return Ok(out);
        }
        // Drafted tokens fed after the last sampled one are checked in order: the token
        // sampled at each position (from the logits there, by the request's own sampler and
        // grammar) is the output, as without a draft; while it is the drafted one, the next
        // position's logits are already computed. The first that differs is kept as sampled
        // and the drafts after it are dropped from the KV cache. The output is the one plain
        // decoding gives, token for token, sampled or greedy.
        let drafts = std::mem::take(&mut seq.drafts);
        let (first, base) = match seq.verify_from.take() {
            Some(base) => (seq.n_past - drafts.len(), base),
            None => (seq.n_past, index),
        };
        let mut accepted = 0;
        let token = loop {
            let (token, logprob) = pick(seq, ctx, base + accepted as i32, &self.model)?;
            if seq.first_token_at.is_none() {
                seq.first_token_at = Some(Instant::now());
                self.counters
                    .time_to_first_token
                    .record(seq.job.arrived.elapsed());
            }
            if self.model.vocab().is_eog(token) {
                out.reason = Some("stop");
                out.flush = true;
                break None;
            }
            self.emit(
                seq,
                Generated::Sampled(token),
                logprob,
                first + accepted,
                &mut out,
            );
            if out.reason.is_some() {
                break None;
            }
            // A drafted token is accepted unless its grammar now forces tokens: those are fed
            // after it as plain decoding feeds them (jump-forward), not sampled from the
            // draft's logits, so the token is fed again in its place.
            if drafts.get(accepted) == Some(&token) && !grammar_forces(seq) {
                accepted += 1;
                continue;
            }
            break Some(token);
        };
        if !drafts.is_empty() {
            self.counters
                .drafted
                .fetch_add(drafts.len() as u64, Ordering::Relaxed);
            self.counters
                .accepted
                .fetch_add(accepted as u64, Ordering::Relaxed);
            seq.draft_len = next_draft_len(seq.draft_len, accepted, drafts.len());
            let kept = first + accepted;
            if kept < seq.n_past {
                let _ = ctx.clear_kv_cache_seq(Some(id as u32), Some(kept as u32), None);
                seq.n_past = kept;
            }
        }
        let Some(token) = token else {
            return Ok(out);
        };
        seq.feed.push(token);
        self.jump_forward(seq, &mut out)?;
        if out.reason.is_none() && seq.feed.len() == 1 {
            self.draft(seq);
        }
        Ok(out)
    }

    /// Speculative decoding by n-gram lookup: after the sampled token, the tokens that followed
    /// the latest earlier occurrence of the output's last `ngram_max`..`ngram_min` tokens (in
    /// the prompt or the output), verified in the next batch ([`Scheduler::step`]).
    fn draft(&self, seq: &mut Sequence) {
        let Some(speculation) = &self.speculation else {
            return;
        };
        // Positions left after the sampled token, tokens left to `max_tokens` after the one
        // sampled at the last draft's position, this sequence's share of the batch.
        let room = (self.n_ctx as usize)
            .saturating_sub(seq.n_past + 1)
            .min(seq.job.max_tokens.saturating_sub(seq.completion_tokens + 1))
            .min((N_BATCH / self.parallel).saturating_sub(1) as usize)
            .min(seq.draft_len.min(speculation.draft_max));
        if room == 0 {
            return;
        }
        let drafts = ngram_draft(
            &seq.job.prompt,
            &seq.generated,
            speculation.ngram_min,
            speculation.ngram_max,
            room,
        );
        seq.feed.extend_from_slice(&drafts);
        seq.drafts = drafts;
    }

    /// Adds `token` (generated, at `position`) to the output: its text past the stop
    /// sequences, its log probability, the lazy grammar's trigger; ends the output on a stop
    /// sequence, at `max_tokens` or at the end of the context.
    fn emit(
        &self,
        seq: &mut Sequence,
        token: Generated,
        logprob: Option<TokenLogprob>,
        position: usize,
        out: &mut Output,
    ) {
        let token = match token {
            Generated::Sampled(token) => token,
            Generated::Forced(token) => {
                self.counters.forced.fetch_add(1, Ordering::Relaxed);
                token
            }
        };
        seq.completion_tokens += 1;
        self.counters.generated.fetch_add(1, Ordering::Relaxed);
        let bytes = self.model.vocab().token_to_piece(token, false, None);
        seq.produced_bytes += bytes.len();
        if let Some(logprob) = logprob {
            seq.logprobs.push_back((seq.produced_bytes, logprob));
        }
        if seq.job.lazy.is_some() {
            seq.tail.push_str(&String::from_utf8_lossy(&bytes));
            if let Some(cut) = seq.tail.len().checked_sub(64) {
                let cut = seq.tail.ceil_char_boundary(cut);
                seq.tail.drain(..cut);
            }
            if seq
                .tail
                .ends_with(seq.job.lazy.as_ref().map_or("", |l| l.trigger))
            {
                seq.grammar = seq.job.lazy.take().map(|lazy| lazy.matcher);
            }
        }
        if self.speculation.is_some() {
            seq.generated.push(token);
        }
        let piece = seq.utf8.push(&bytes);
        let (safe, stopped) = seq.stops.push(&piece);
        out.text.push_str(&safe);
        if stopped {
            out.reason = Some("stop");
        } else if seq.completion_tokens >= seq.job.max_tokens || position >= self.n_ctx as usize {
            out.reason = Some("length");
            out.flush = true;
        }
    }

    /// Jump-forward decoding: the tokens the grammar now leaves no choice about go into the
    /// next batch after the sampled one (`seq.feed`), decoded together as a small prefill
    /// instead of one step each. Their text is given out now, or after that batch when their
    /// log probabilities are asked for (computed from its logits, as for sampled tokens). A
    /// grammar that is complete ends the output here: its end is the only token left, and
    /// nothing needs decoding to know it.
    fn jump_forward(&self, seq: &mut Sequence, out: &mut Output) -> Result<()> {
        let Some(matcher) = seq.grammar.as_mut() else {
            return Ok(());
        };
        // Positions left in the context after the sampled token, tokens left to `max_tokens`,
        // and this sequence's share of the batch.
        let room = (self.n_ctx as usize)
            .saturating_sub(seq.n_past + 1)
            .min(seq.job.max_tokens.saturating_sub(seq.completion_tokens))
            .min((N_BATCH / self.parallel).saturating_sub(1) as usize)
            .min(MAX_FORCED);
        let mut forced = if room > 0 {
            matcher.compute_ff_tokens()
        } else {
            Vec::new()
        };
        forced.truncate(room);
        if !forced.is_empty() {
            matcher.consume_tokens(&forced).map_err(|e| {
                Error::internal(format!(
                    "Constrained decoding failed: {}",
                    super::constrain::first_line(&e.to_string())
                ))
            })?;
        }
        let done = is_complete(matcher);
        for &token in &forced {
            let token = LlamaToken(token as i32);
            seq.job.sampler.accept(token);
            seq.feed.push(token);
        }
        if seq.job.logprobs.is_some() {
            // Given out after the next batch, which computes their log probabilities.
            seq.awaiting = seq.feed[1..].iter().map(|&t| (t, 0)).collect();
            return Ok(());
        }
        for (i, &token) in seq.feed[1..].to_vec().iter().enumerate() {
            let position = seq.n_past + 1 + i;
            self.emit(seq, Generated::Forced(token), None, position, out);
            if out.reason.is_some() {
                return Ok(());
            }
        }
        if done {
            out.reason = Some("stop");
            out.flush = true;
        }
        Ok(())
    }

    /// Frees the sequences and queued jobs whose consumer has gone.
    pub(super) fn drop_cancelled(
        &mut self,
        slots: &mut [Option<Sequence>],
        queue: &mut VecDeque<Job>,
    ) {
        let before = queue.len();
        queue.retain(|job| !job.cancelled.load(Ordering::Relaxed));
        let dropped = before - queue.len();
        self.counters
            .cancelled
            .fetch_add(dropped as u64, Ordering::Relaxed);
        self.counters.queued.fetch_sub(dropped, Ordering::Relaxed);
        for (id, slot) in slots.iter_mut().enumerate() {
            if slot
                .as_ref()
                .is_some_and(|seq| seq.job.cancelled.load(Ordering::Relaxed))
            {
                self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
                self.release(slot, id);
            }
        }
    }

    /// A failed decode leaves the KV cache of every sequence in the batch unknown, and every
    /// active sequence is in the batch: fail them all. Queued requests run next.
    pub(super) fn fail_batch(
        &mut self,
        slots: &mut [Option<Sequence>],
        ctx: &mut LlamaContext,
        error: Error,
    ) {
        for (id, slot) in slots.iter_mut().enumerate() {
            if let Some(seq) = self.release_dropping_cache(slot, id, ctx) {
                let _ = seq.job.events.send(Err(error.clone()));
            }
        }
    }

    /// Ends the request in sequence `id`: it stops counting as active, and its KV cells stay
    /// for the next request that shares a prefix with its prompt.
    pub(super) fn release(&mut self, slot: &mut Option<Sequence>, id: usize) -> Option<Sequence> {
        let mut seq = slot.take()?;
        // Only prompt tokens are kept: generated ones were decoded one at a time, and a cold
        // prefill of the same text computes them (slightly) differently; prompt tokens come
        // out the same however the prompt is cut into batches (flash attention off).
        seq.job.prompt.truncate(seq.prefilled);
        self.kept[id] = std::mem::take(&mut seq.job.prompt);
        self.counters.active.fetch_sub(1, Ordering::Relaxed);
        if let (Some(first), Some(after_first)) = (
            seq.first_token_at,
            (seq.completion_tokens as u32)
                .checked_sub(1)
                .filter(|&n| n > 0),
        ) {
            self.counters
                .time_per_output_token
                .record(first.elapsed() / after_first);
        }
        Some(seq)
    }

    /// Ends the request in sequence `id` and forgets its KV cells (they are unknown after a
    /// failed decode).
    pub(super) fn release_dropping_cache(
        &mut self,
        slot: &mut Option<Sequence>,
        id: usize,
        ctx: &mut LlamaContext,
    ) -> Option<Sequence> {
        let seq = self.release(slot, id)?;
        self.kept[id].clear();
        let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
        Some(seq)
    }

    /// The free slot for a request with `prompt`, and how many of its first tokens that
    /// slot's KV cache already holds, as llama.cpp's server picks: the longest common prefix
    /// with what a slot kept, else the least recently used slot. The slot's cells after the
    /// shared prefix are removed. A follower (it copies its leader's cache) gets a clean slot.
    pub(super) fn slot_for(
        &mut self,
        prompt: &[LlamaToken],
        slots: &[Option<Sequence>],
        follower: bool,
        ctx: &mut LlamaContext,
    ) -> (usize, usize) {
        let free = (0..slots.len()).filter(|&id| slots[id].is_none());
        // At least the last two prompt tokens are decoded again (nine on CUDA): the last
        // one's logits give the first token, and a small batch can round differently from
        // the batch a cold prefill computes it in (measured: docs/speed.md).
        let limit = prompt.len().saturating_sub(self.recomputed);
        let (id, mut reused) = free
            .map(|id| {
                let shared = if follower {
                    0
                } else {
                    common_prefix(&self.kept[id], prompt).min(limit)
                };
                (id, shared)
            })
            .max_by_key(|&(id, shared)| (shared, std::cmp::Reverse(self.last_used[id])))
            .expect("a free slot");
        self.clock += 1;
        self.last_used[id] = self.clock;
        let removed = ctx.clear_kv_cache_seq(Some(id as u32), Some(reused as u32), None);
        if reused > 0 && !matches!(removed, Ok(true)) {
            // This model's memory cannot drop part of a sequence (recurrent): start clean.
            let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
            reused = 0;
        }
        self.kept[id].clear();
        (id, reused)
    }
}

/// Whether a grammar is complete: nothing but the end of the output is left.
fn is_complete(matcher: &Matcher) -> bool {
    matcher.is_stopped() && !matcher.is_error()
}

/// Whether the sequence's grammar (if any) forces tokens now (none without jump-forward).
fn grammar_forces(seq: &mut Sequence) -> bool {
    seq.grammar
        .as_mut()
        .is_some_and(|matcher| !matcher.compute_ff_tokens().is_empty())
}

/// The log probability of `token` from the logits at batch `index`, with `top` alternatives.
fn logprob_at(
    ctx: &LlamaContext,
    index: i32,
    token: LlamaToken,
    top: usize,
    model: &LlamaModel,
) -> TokenLogprob {
    let logits = ctx.get_logits_ith(index);
    let logit = logits.get(token.0 as usize).copied();
    LogitsSummary::of(logits, top).entry(token, logit.unwrap_or(f32::NEG_INFINITY), model)
}

/// The next token of `seq` from the logits at `index`: masked by its grammar if it has one,
/// then drawn by its sampler chain; with its log probability when asked.
pub(super) fn pick(
    seq: &mut Sequence,
    ctx: &LlamaContext,
    index: i32,
    model: &LlamaModel,
) -> Result<(LlamaToken, Option<TokenLogprob>)> {
    let summary = seq
        .job
        .logprobs
        .map(|top| LogitsSummary::of(ctx.get_logits_ith(index), top));
    let token = match seq.grammar.as_mut() {
        None => seq.job.sampler.sample(ctx, index),
        Some(matcher) => {
            let broken = |e: &dyn std::fmt::Display| {
                let e = e.to_string();
                Error::internal(format!(
                    "Constrained decoding failed: {}",
                    super::constrain::first_line(&e)
                ))
            };
            let mask = matcher.compute_mask_or_eos().map_err(|e| broken(&e))?;
            let mut candidates = ctx.token_data_array_ith(index);
            for candidate in candidates.data.iter_mut() {
                if !mask.is_allowed(candidate.id().0 as u32) {
                    candidate.set_logit(f32::NEG_INFINITY);
                }
            }
            candidates.apply_sampler(&mut seq.job.sampler);
            let token = candidates
                .selected_token()
                .ok_or_else(|| broken(&"the sampler chose no token"))?;
            seq.job.sampler.accept(token);
            if !model.vocab().is_eog(token) {
                matcher
                    .consume_token(token.0 as u32)
                    .map_err(|e| broken(&e))?;
            }
            token
        }
    };
    let logprob = summary.map(|summary| {
        let logit = ctx.get_logits_ith(index).get(token.0 as usize).copied();
        summary.entry(token, logit.unwrap_or(f32::NEG_INFINITY), model)
    });
    Ok((token, logprob))
}
