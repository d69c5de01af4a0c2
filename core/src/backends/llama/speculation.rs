//! Speculative decoding by n-gram lookup (prompt lookup decoding): where a draft comes from,
//! and how long the next one may be. The scheduler feeds a draft after the sampled token and
//! verifies it in the same batch (`Scheduler::step`).

use llama_cpp_2::token::LlamaToken;

/// The tokens that followed the latest earlier occurrence of the last `max_n` (down to
/// `min_n`) tokens of `prompt` + `generated`, at most `k` (prompt lookup decoding).
pub(super) fn ngram_draft(
    prompt: &[LlamaToken],
    generated: &[LlamaToken],
    min_n: usize,
    max_n: usize,
    k: usize,
) -> Vec<LlamaToken> {
    let len = prompt.len() + generated.len();
    let at = |i: usize| {
        if i < prompt.len() {
            prompt[i]
        } else {
            generated[i - prompt.len()]
        }
    };
    for n in (min_n.max(1)..=max_n.max(min_n)).rev() {
        if len <= n {
            continue;
        }
        let tail = len - n;
        // Latest first: the nearest context is the likeliest to go on the same way.
        for start in (0..tail).rev() {
            if (0..n).all(|j| at(start + j) == at(tail + j)) {
                let from = start + n;
                return (from..(from + k).min(len)).map(at).collect();
            }
        }
    }
    Vec::new()
}

/// The next draft's length after `accepted` of `drafted` tokens were: twice as long after a
/// draft accepted whole, else what was accepted and one more.
pub(super) fn next_draft_len(current: usize, accepted: usize, drafted: usize) -> usize {
    if accepted == drafted {
        (current * 2).min(64)
    } else {
        accepted + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&id| LlamaToken(id)).collect()
    }

    #[test]
    fn a_draft_is_what_followed_the_latest_occurrence_of_the_longest_tail() {
        let prompt = tokens(&[1, 2, 3, 4, 5, 9, 2, 3, 7, 8]);
        // Tail [2, 3] occurs at 1 and 6: the latest (6) goes on with 7, 8, then the output.
        assert_eq!(
            ngram_draft(&prompt, &tokens(&[2, 3]), 2, 4, 5),
            tokens(&[7, 8, 2, 3])
        );
        // A longer tail [9, 2, 3] wins over a later shorter one.
        let prompt = tokens(&[9, 2, 3, 4, 5, 2, 3, 6]);
        assert_eq!(
            ngram_draft(&prompt, &tokens(&[9, 2, 3]), 2, 4, 3),
            tokens(&[4, 5, 2])
        );
        // At most k; nothing without a match of min_n tokens.
        assert_eq!(
            ngram_draft(&prompt, &tokens(&[9, 2, 3]), 2, 4, 1),
            tokens(&[4])
        );
        assert!(ngram_draft(&prompt, &tokens(&[42, 43]), 2, 4, 8).is_empty());
        assert!(ngram_draft(&[], &tokens(&[1]), 1, 4, 8).is_empty());
        // min_n above max_n: max_n is raised to it.
        assert_eq!(
            ngram_draft(&tokens(&[5, 6, 7]), &tokens(&[5, 6]), 2, 1, 8),
            tokens(&[7, 5, 6])
        );
    }

    #[test]
    fn a_draft_grows_while_accepted_whole_and_shrinks_to_what_was() {
        assert_eq!(next_draft_len(4, 4, 4), 8);
        assert_eq!(next_draft_len(64, 64, 64), 64);
        assert_eq!(next_draft_len(8, 3, 8), 4);
        assert_eq!(next_draft_len(8, 0, 8), 1);
    }
}
