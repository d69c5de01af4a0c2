//! Tool calls in generated text, found as the text streams (WIP, issue 16).
//!
//! A model writes its calls in its family's format; this splits the stream into text and calls
//! so that no call markup ever reaches `content`. Formats:
//! - Hermes (Qwen2.5, many others): `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
//!   one block per call;
//! - what small models write instead: a fenced ```` ```json ```` block, or a bare JSON object, whose
//!   `name` is one of the given tools (recognised only when the whole object is such a call).
//!
//! Text is released as soon as it cannot be the start of a call: the parser holds back only a
//! possible opening (`<tool_c`, a fence, a `{` at the start of a line) until it knows.

use serde_json::Value as Json;

/// What the stream turned out to contain, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Plain content.
    Text(String),
    /// A whole call: `arguments` as the JSON text OpenAI sends.
    Call { name: String, arguments: String },
}

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const FENCE: &str = "```";

/// Splits generated text into content and tool calls as it arrives.
pub struct ToolCallParser {
    tools: Vec<String>,
    /// Text not yet released: a possible opening, or a block being read.
    pending: String,
    /// Whether `pending` starts at the beginning of a line (where a bare `{` may open a call).
    at_line_start: bool,
    /// A tagged call just ended: the newline after it belongs to it, when it comes.
    after_block: bool,
}

impl ToolCallParser {
    pub fn new(tools: Vec<String>) -> Self {
        ToolCallParser {
            tools,
            pending: String::new(),
            at_line_start: true,
            after_block: false,
        }
    }

    /// Feeds generated text; returns what is now certain.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        while let Some(piece) = self.step(false) {
            push_piece(&mut out, piece);
        }
        out
    }

    /// The end of generation: whatever is held back is content, unless it is a whole call.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        while let Some(piece) = self.step(true) {
            push_piece(&mut out, piece);
        }
        if !self.pending.is_empty() {
            push_piece(&mut out, Piece::Text(std::mem::take(&mut self.pending)));
        }
        out
    }

    /// One piece out of `pending`, or `None` when more text is needed (or, at the end, when
    /// nothing is left to decide).
    fn step(&mut self, end: bool) -> Option<Piece> {
        if self.pending.is_empty() {
            return None;
        }
        if std::mem::take(&mut self.after_block) && self.pending.starts_with('\n') {
            self.pending.remove(0);
            if self.pending.is_empty() {
                return None;
            }
        }
        // Where the next possible call starts.
        let candidates = [self.find_open(), self.find_fence(), self.find_bare()];
        let start = candidates.iter().flatten().min().copied();
        match start {
            Some(0) => self.read_block(end),
            Some(i) => Some(self.release(i)),
            None => {
                // No opening in sight: release all but a tail that may begin one.
                let keep = if end { 0 } else { self.possible_opening_tail() };
                let n = self.pending.len() - keep;
                (n > 0).then(|| self.release(n))
            }
        }
    }

    fn release(&mut self, n: usize) -> Piece {
        let text: String = self.pending.drain(..n).collect();
        self.at_line_start = text.ends_with('\n');
        Piece::Text(text)
    }

    fn find_open(&self) -> Option<usize> {
        self.pending.find(OPEN)
    }

    fn find_fence(&self) -> Option<usize> {
        self.pending.find(FENCE)
    }

    /// A `{` at the start of a line (or of the output).
    fn find_bare(&self) -> Option<usize> {
        let bytes = self.pending.as_bytes();
        (0..bytes.len()).find(|&i| {
            bytes[i] == b'{'
                && if i == 0 {
                    self.at_line_start
                } else {
                    bytes[i - 1] == b'\n'
                }
        })
    }

    /// How many trailing bytes of `pending` could be the beginning of an opening.
    fn possible_opening_tail(&self) -> usize {
        let text = &self.pending;
        let mut keep = 0;
        for opening in [OPEN, FENCE] {
            for n in (1..opening.len()).rev() {
                if text.len() >= n
                    && text.is_char_boundary(text.len() - n)
                    && opening.starts_with(&text[text.len() - n..])
                {
                    keep = keep.max(n);
                    break;
                }
            }
        }
        keep
    }

    /// `pending` starts with an opening: a call once the block is whole, text if it is not a
    /// call after all.
    fn read_block(&mut self, end: bool) -> Option<Piece> {
        if self.pending.starts_with(OPEN) {
            let Some(close) = self.pending.find(CLOSE) else {
                return end.then(|| self.give_up_block());
            };
            let body = self.pending[OPEN.len()..close].trim().to_string();
            return match self.call_of(&body, false) {
                Some(call) => {
                    self.pending.drain(..close + CLOSE.len());
                    self.after_block = true; // its newline, now or in the next text
                    self.at_line_start = true;
                    Some(call)
                }
                None => Some(self.give_up_block()),
            };
        }
        if self.pending.starts_with(FENCE) {
            // ```json\n{...}\n```
            let after = &self.pending[FENCE.len()..];
            let Some(close) = after.find(FENCE) else {
                // A fence that has not said json yet may still be one.
                let header_ok = "json".starts_with(
                    after
                        .trim_start()
                        .get(..after.trim_start().len().min(4))
                        .unwrap_or(""),
                ) || after.trim_start().starts_with("json");
                return (end || !header_ok).then(|| self.give_up_block());
            };
            let inner = &after[..close];
            let body = inner
                .strip_prefix("json")
                .unwrap_or(inner)
                .trim()
                .to_string();
            return match self.call_of(&body, true) {
                Some(call) => {
                    self.pending.drain(..FENCE.len() + close + FENCE.len());
                    self.at_line_start = false;
                    Some(call)
                }
                None => Some(self.give_up_block()),
            };
        }
        // A bare object: read until its braces balance.
        match json_object_end(&self.pending) {
            Some(n) => {
                let body = self.pending[..n].to_string();
                match self.call_of(&body, true) {
                    Some(call) => {
                        self.pending.drain(..n);
                        self.at_line_start = false;
                        Some(call)
                    }
                    None => Some(self.give_up_block()),
                }
            }
            None => end.then(|| self.give_up_block()),
        }
    }

    /// Releases the opening character of a block that is not a call, as text.
    fn give_up_block(&mut self) -> Piece {
        let first = self.pending.chars().next().map_or(1, char::len_utf8);
        let n = if self.pending.starts_with(OPEN) {
            OPEN.len()
        } else if self.pending.starts_with(FENCE) {
            FENCE.len()
        } else {
            first
        };
        self.release(n)
    }

    /// `{"name", "arguments"}` naming a given tool (any name in the tagged format, which is
    /// unambiguous; a given tool only otherwise).
    fn call_of(&self, body: &str, must_name_a_tool: bool) -> Option<Piece> {
        let json: Json = serde_json::from_str(body).ok()?;
        let name = json.get("name")?.as_str()?.to_string();
        if must_name_a_tool && !self.tools.iter().any(|t| t == &name) {
            return None;
        }
        let arguments = match json.get("arguments").or_else(|| json.get("parameters")) {
            Some(Json::String(text)) => text.clone(),
            Some(value) => value.to_string(),
            None => "{}".to_string(),
        };
        Some(Piece::Call { name, arguments })
    }
}

/// The length of the JSON object at the start of `text` once its braces balance (strings
/// respected), or `None` while it is open.
fn json_object_end(text: &str) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Appends, joining adjacent texts.
fn push_piece(out: &mut Vec<Piece>, piece: Piece) {
    match (out.last_mut(), piece) {
        (Some(Piece::Text(text)), Piece::Text(more)) => text.push_str(&more),
        (_, Piece::Text(more)) if more.is_empty() => {}
        (_, piece) => out.push(piece),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(text: &str, chunk: usize) -> Vec<Piece> {
        let mut parser = ToolCallParser::new(vec!["get_weather".into()]);
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for part in chars.chunks(chunk) {
            for piece in parser.push(&part.iter().collect::<String>()) {
                push_piece(&mut out, piece);
            }
        }
        for piece in parser.finish() {
            push_piece(&mut out, piece);
        }
        out
    }

    fn call(city: &str) -> Piece {
        Piece::Call {
            name: "get_weather".into(),
            arguments: format!(r#"{{"city":"{city}"}}"#),
        }
    }

    #[test]
    fn every_format_in_any_chunking() {
        let cases: Vec<(&str, Vec<Piece>)> = vec![
            ("Hello there.", vec![Piece::Text("Hello there.".into())]),
            (
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                vec![call("Paris")],
            ),
            (
                "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
                vec![Piece::Text("Sure.\n".into()), call("Paris"), call("Rome")],
            ),
            (
                "```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\"\n  }\n}\n```",
                vec![call("Paris")],
            ),
            (
                "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}. It is sunny.",
                vec![call("Rome"), Piece::Text(". It is sunny.".into())],
            ),
            // Not calls: an unknown name outside tags, code, a lone brace, a broken tag.
            (
                "{\"name\": \"other\"}",
                vec![Piece::Text("{\"name\": \"other\"}".into())],
            ),
            (
                "```python\nprint(1)\n```",
                vec![Piece::Text("```python\nprint(1)\n```".into())],
            ),
            ("a < b and {x}", vec![Piece::Text("a < b and {x}".into())]),
            ("<tool_call> oops", vec![Piece::Text("<tool_call> oops".into())]),
        ];
        for (text, expected) in cases {
            for chunk in [1, 2, 3, 7, 1000] {
                assert_eq!(
                    parse_in_chunks(text, chunk),
                    expected,
                    "{text:?} in chunks of {chunk}"
                );
            }
        }
    }

    #[test]
    fn text_is_released_as_soon_as_it_cannot_open_a_call() {
        let mut parser = ToolCallParser::new(vec!["get_weather".into()]);
        assert_eq!(
            parser.push("Hello wor"),
            vec![Piece::Text("Hello wor".into())]
        );
        assert_eq!(parser.push("ld <tool_c"), vec![Piece::Text("ld ".into())]);
        assert_eq!(parser.push("al"), vec![]); // "<tool_cal" may still open a call
        assert_eq!(parser.push("m"), vec![Piece::Text("<tool_calm".into())]);
    }
}
