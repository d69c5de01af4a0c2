//! A model's thinking, written between `<think>` and `</think>` (Qwen3, QwQ, DeepSeek R1 and
//! its distills, SmolLM3), split out of its text as it streams: the thoughts become reasoning
//! (chat's `reasoning_content`, Responses' reasoning items, Anthropic's thinking blocks), the
//! rest the answer. Thoughts never reach the answer, even cut off by `max_tokens`.
//!
//! Our own splitter, not llama.cpp's `common/chat` parser: that one re-parses the whole output
//! at every token and comes with its own template engine and tool-call grammars, which the
//! binding to it (issue 65's next step) brings in one piece; this is the part ingle's own
//! pipeline needs now (docs/architecture.md).

pub(crate) const OPEN: &str = "<think>";
pub(crate) const CLOSE: &str = "</think>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace yet: an opening tag may come.
    Start,
    /// Inside the thoughts.
    Thinking,
    /// Just after the closing tag: the whitespace between thoughts and answer is neither.
    Closed,
    /// The answer.
    Answer,
}

/// Splits streamed text into reasoning and answer.
#[derive(Debug, Clone)]
pub(crate) struct ThinkSplitter {
    state: State,
    /// Text held back: what may be the start of a tag, or whitespace (before anything, or at
    /// the end of the thoughts so far).
    held: String,
    /// Reasoning given out yet (its leading whitespace is dropped).
    reasoned: bool,
}

impl ThinkSplitter {
    /// `inside`: the prompt opened the thoughts itself (DeepSeek R1's template ends its
    /// generation prompt with `<think>\n`), so the output starts in them.
    pub(crate) fn new(inside: bool) -> Self {
        ThinkSplitter {
            state: if inside {
                State::Thinking
            } else {
                State::Start
            },
            held: String::new(),
            reasoned: false,
        }
    }

    /// `(reasoning, answer)` out of `text`, the next piece of the output; at `end`, what was
    /// held back too (unclosed thoughts stay reasoning).
    pub(crate) fn split(&mut self, text: &str, end: bool) -> (String, String) {
        let mut buffer = std::mem::take(&mut self.held);
        buffer.push_str(text);
        let (mut reasoning, mut answer) = (String::new(), String::new());
        let mut rest = buffer.as_str();
        loop {
            match self.state {
                State::Start => {
                    let trimmed = rest.trim_start();
                    if let Some(after) = trimmed.strip_prefix(OPEN) {
                        self.state = State::Thinking;
                        rest = after;
                    } else if !end && OPEN.starts_with(trimmed) {
                        // Whitespace, or the tag's first characters: wait for more.
                        self.held = rest.to_string();
                        break;
                    } else {
                        self.state = State::Answer;
                    }
                }
                State::Thinking => {
                    if !self.reasoned {
                        rest = rest.trim_start();
                        // Thoughts the prompt opened, opened again by the model (R1's distills
                        // do): the tag is markup.
                        if let Some(after) = rest.strip_prefix(OPEN) {
                            rest = after.trim_start();
                        } else if !end && !rest.is_empty() && OPEN.starts_with(rest) {
                            self.held = rest.to_string();
                            break;
                        }
                    }
                    match rest.find(CLOSE) {
                        Some(at) => {
                            reasoning.push_str(rest[..at].trim_end());
                            rest = &rest[at + CLOSE.len()..];
                            self.state = State::Closed;
                        }
                        None => {
                            // What may start the closing tag, and the whitespace before it
                            // (not thought), wait for what follows.
                            let keep = if end { 0 } else { partial_suffix(rest, CLOSE) };
                            let shown = rest[..rest.len() - keep].trim_end();
                            reasoning.push_str(shown);
                            self.held = rest[shown.len()..].to_string();
                            if end {
                                self.held.clear();
                            }
                            self.reasoned |= !reasoning.is_empty();
                            break;
                        }
                    }
                    self.reasoned |= !reasoning.is_empty();
                }
                State::Closed => {
                    rest = rest.trim_start();
                    if rest.is_empty() {
                        break;
                    }
                    self.state = State::Answer;
                }
                State::Answer => {
                    answer.push_str(rest);
                    break;
                }
            }
        }
        (reasoning, answer)
    }
}

/// The length of the longest end of `text` that `tag` starts with (a tag split across pieces).
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

/// Whether a rendered prompt leaves the model inside its thoughts (it ends with `<think>`).
pub(crate) fn prompt_opens_thoughts(prompt: &str) -> bool {
    prompt.trim_end().ends_with(OPEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output in pieces of `size` bytes (on character boundaries), split and joined.
    fn in_pieces(output: &str, size: usize, inside: bool) -> (String, String) {
        let mut splitter = ThinkSplitter::new(inside);
        let (mut reasoning, mut answer) = (String::new(), String::new());
        let mut start = 0;
        while start < output.len() {
            let mut stop = (start + size).min(output.len());
            while !output.is_char_boundary(stop) {
                stop += 1;
            }
            let (r, a) = splitter.split(&output[start..stop], false);
            reasoning.push_str(&r);
            answer.push_str(&a);
            start = stop;
        }
        let (r, a) = splitter.split("", true);
        (reasoning + &r, answer + &a)
    }

    #[test]
    fn thoughts_come_apart_at_every_split_of_the_markers() {
        let cases: &[(&str, bool, &str, &str)] = &[
            // Qwen3: the tags in the output, a blank line before the answer.
            (
                "<think>\nAdd them: 4.\n</think>\n\nThe answer is 4.",
                false,
                "Add them: 4.",
                "The answer is 4.",
            ),
            // DeepSeek R1 distills: the prompt opened the thoughts...
            (
                "Okay, 2 + 2 = 4.\n</think>\n\n4",
                true,
                "Okay, 2 + 2 = 4.",
                "4",
            ),
            // ... and the model may open them again: the tag is markup.
            ("<think>\nHm.</think>ok", true, "Hm.", "ok"),
            // Whitespace inside the thoughts stays; before the closing tag or the cut, it goes.
            ("<think>a \n b  \n</think> c", false, "a \n b", "c"),
            // Thinking turned off: Qwen3's empty thoughts, or none at all.
            ("<think>\n\n</think>\n\nHi!", false, "", "Hi!"),
            ("Hi! <think> is a tag.", false, "", "Hi! <think> is a tag."),
            // Cut off by max_tokens inside the thoughts: all reasoning, no answer.
            (
                "<think>\nLet me see, first I ",
                false,
                "Let me see, first I",
                "",
            ),
            ("Hmm, </thi", true, "Hmm, </thi", ""),
            // Only whitespace: the answer.
            (" \n", false, "", " \n"),
            // Not a tag after all.
            ("<thinking>", false, "", "<thinking>"),
            ("  <b>bold</b>", false, "", "  <b>bold</b>"),
            ("— é <think>ü</think>ß", false, "", "— é <think>ü</think>ß"),
            ("<think>ü é</think>ß", false, "ü é", "ß"),
        ];
        for &(output, inside, reasoning, answer) in cases {
            for size in 1..=output.len() {
                assert_eq!(
                    in_pieces(output, size, inside),
                    (reasoning.to_string(), answer.to_string()),
                    "{output:?} in pieces of {size}"
                );
            }
        }
    }

    #[test]
    fn a_prompt_that_ends_in_think_opens_the_thoughts() {
        assert!(prompt_opens_thoughts("<｜Assistant｜><think>\n"));
        assert!(!prompt_opens_thoughts(
            "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        ));
        assert!(!prompt_opens_thoughts("<|im_start|>assistant\n"));
    }
}
