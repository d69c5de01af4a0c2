//! Turning sampled token bytes into the text a caller sees: UTF-8 reassembly across tokens,
//! and stop sequences that are never emitted, even when split across tokens.

/// Accumulates token bytes and hands out only complete UTF-8 characters.
#[derive(Default)]
pub(crate) struct Utf8Assembler {
    pending: Vec<u8>,
}

impl Utf8Assembler {
    /// Adds `bytes` and returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(
                        std::str::from_utf8(&self.pending[..valid]).expect("valid prefix"),
                    );
                    match e.error_len() {
                        // An incomplete character at the end: wait for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        // Bytes that can never be valid: replace them, as lossy decoding would.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Whatever is left when generation ends.
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

/// Holds back text that might be the start of a stop sequence until it is sure it is not.
pub(crate) struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    pub fn new(stops: Vec<String>) -> Self {
        StopMatcher {
            stops,
            held: String::new(),
        }
    }

    /// Adds generated text. Returns the text safe to emit and whether a stop sequence was hit
    /// (then the text before it is emitted and the rest, the stop included, is dropped).
    pub fn push(&mut self, text: &str) -> (String, bool) {
        self.held.push_str(text);
        let first_stop = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min();
        if let Some(at) = first_stop {
            let emit = self.held[..at].to_string();
            self.held.clear();
            return (emit, true);
        }
        let keep = self
            .stops
            .iter()
            .map(|s| partial_suffix_len(&self.held, s))
            .max()
            .unwrap_or(0);
        let emit_len = self.held.len() - keep;
        let emit = self.held[..emit_len].to_string();
        self.held.drain(..emit_len);
        (emit, false)
    }

    /// Text held back when generation ends without hitting a stop sequence.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `stop`.
fn partial_suffix_len(text: &str, stop: &str) -> usize {
    (1..stop.len())
        .rev()
        .find(|&k| stop.is_char_boundary(k) && text.ends_with(&stop[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_tokens_is_joined() {
        let mut a = Utf8Assembler::default();
        let euro = "€".as_bytes(); // three bytes
        assert_eq!(a.push(&euro[..1]), "");
        assert_eq!(a.push(&euro[1..2]), "");
        assert_eq!(a.push(&[euro[2], b'!']), "€!");
        assert_eq!(a.finish(), "");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let mut a = Utf8Assembler::default();
        assert_eq!(a.push(&[b'a', 0xff, b'b']), "a\u{fffd}b");
        assert_eq!(a.push(&[0xe2, 0x82]), "");
        assert_eq!(a.finish(), "\u{fffd}");
    }

    #[test]
    fn stop_split_across_pushes_is_never_emitted() {
        let mut m = StopMatcher::new(vec!["STOP".into()]);
        assert_eq!(m.push("Hello S"), ("Hello ".into(), false));
        assert_eq!(m.push("TO"), ("".into(), false));
        assert_eq!(m.push("P and more"), ("".into(), true));
    }

    #[test]
    fn false_start_of_stop_is_released() {
        let mut m = StopMatcher::new(vec!["STOP".into()]);
        assert_eq!(m.push("ST"), ("".into(), false));
        assert_eq!(m.push("ART"), ("START".into(), false));
        assert_eq!(m.push("x S"), ("x ".into(), false));
        assert_eq!(m.finish(), "S");
    }

    #[test]
    fn earliest_of_several_stops_wins() {
        let mut m = StopMatcher::new(vec!["world".into(), "lo".into()]);
        assert_eq!(m.push("hello world"), ("hel".into(), true));
    }

    #[test]
    fn multibyte_stop_prefix_is_held_on_char_boundaries() {
        let mut m = StopMatcher::new(vec!["é!".into()]);
        assert_eq!(m.push("café"), ("caf".into(), false));
        assert_eq!(m.push("?"), ("é?".into(), false));
    }
}
