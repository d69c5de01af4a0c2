//! Sharing prompts between sequences: a request whose prompt another one is still prefilling
//! copies that one's KV cache when it is done (the `n` choices of one request), and a request
//! reuses the longest prefix a free slot's cache still holds (see `Scheduler::slot_for`).

use super::sequence::Sequence;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The sequence (of those still prefilling, `(slot, prompt, cancel flag)`) whose prefill a new
/// request with `prompt` can copy.
pub(super) fn leader_for(
    prompt: &[LlamaToken],
    prefilling: &[(usize, Vec<LlamaToken>, Arc<AtomicBool>)],
) -> Option<(usize, Arc<AtomicBool>)> {
    prefilling
        .iter()
        .find(|(_, p, _)| p.as_slice() == prompt)
        .map(|(id, _, flag)| (*id, Arc::clone(flag)))
}

/// How many first tokens `a` and `b` share.
pub(super) fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A follower whose leader has gone (cancelled, failed) prefills on its own.
pub(super) fn unlink_orphans(slots: &mut [Option<Sequence>]) {
    let alive: Vec<Option<Arc<AtomicBool>>> = slots
        .iter()
        .map(|s| s.as_ref().map(|s| Arc::clone(&s.job.cancelled)))
        .collect();
    for seq in slots.iter_mut().flatten() {
        if let Some((leader, flag)) = &seq.follows {
            let same = alive[*leader]
                .as_ref()
                .is_some_and(|f| Arc::ptr_eq(f, flag));
            if !same {
                seq.follows = None;
            }
        }
    }
}

/// Followers whose leader finished its prefill in this batch get a copy of its KV cache (the
/// prompt alone: its first token is not decoded yet) and sample from the same logits.
pub(super) fn share_prefills(slots: &mut [Option<Sequence>], ctx: &mut LlamaContext) {
    for id in 0..slots.len() {
        let Some((leader, _)) = slots[id].as_ref().and_then(|s| s.follows.clone()) else {
            continue;
        };
        let Some(index) = slots[leader]
            .as_ref()
            .filter(|l| l.prefilled == l.job.prompt.len())
            .and_then(|l| l.logits_index)
        else {
            continue;
        };
        let copied = ctx
            .copy_kv_cache_seq(leader as i32, id as i32, None, None)
            .is_ok();
        if let Some(seq) = slots[id].as_mut() {
            seq.follows = None;
            if !copied {
                continue; // prefills itself from the next step
            }
            seq.prefilled = seq.job.prompt.len();
            seq.n_past = seq.prefilled;
            seq.logits_index = Some(index);
        }
    }
}
