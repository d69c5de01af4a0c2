//! Tool calls in generated text, found as the text streams.
//!
//! A model writes its calls in its family's format; this splits the stream into text and calls
//! so that no call markup ever reaches `content`. Formats:
//! - Hermes (Qwen2.5, many others): `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
//!   one block per call;
//! - what small models write instead: a fenced ```` ```json ```` block, or a bare JSON object, whose
//!   `name` is one of the given tools (recognised only when the whole object is such a call).
//!
//! Text is released as soon as it cannot be the start of a call: the parser holds back only a
//! possible opening (`<tool_c`, a fence, a `{` at the start of a line) until it knows. A tagged
//! call streams: its name as soon as `{"name": "...", "arguments": ` has been read, then its
//! arguments as they arrive. Fenced and bare calls come whole, once recognised.
//!
//! Another family is a new [`ToolFormat`] (its tags) where it writes `{name, arguments}` objects
//! between tags, or a new parser beside this one where it writes something else.

use serde_json::Value as Json;

/// What the stream turned out to contain, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Piece {
    /// Plain content.
    Text(String),
    /// A whole call: `arguments` as the JSON text OpenAI sends.
    Call { name: String, arguments: String },
    /// The start of a streamed call: its name; its arguments follow in `Arguments` pieces.
    CallStart { name: String },
    /// More of the arguments (JSON text) of the call last started.
    Arguments(String),
    /// The call last started has ended (its block closed, or the output ended inside it).
    CallEnd,
}

/// How a model family marks its calls: `{"name", "arguments"}` objects between tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolFormat {
    pub open: &'static str,
    pub close: &'static str,
}

/// Hermes (NousResearch), used by Qwen2.5 and many others.
pub const HERMES: ToolFormat = ToolFormat {
    open: "<tool_call>",
    close: "</tool_call>",
};

const OPEN: &str = HERMES.open;
const CLOSE: &str = HERMES.close;
const FENCE: &str = "```";

/// A tagged block being streamed.
#[derive(Debug, Default)]
struct TaggedCall {
    /// Where the arguments' value starts in the block's body, once the name has been read.
    arguments_at: Option<usize>,
    /// Bytes of the arguments' value already given out.
    emitted: usize,
}

/// Splits generated text into content and tool calls as it arrives.
pub struct ToolCallParser {
    tools: Vec<String>,
    /// Text not yet released: a possible opening, or a block being read.
    pending: String,
    /// Whether `pending` starts at the beginning of a line (where a bare `{` may open a call).
    at_line_start: bool,
    /// A tagged call just ended: the newline after it belongs to it, when it comes.
    after_block: bool,
    /// The tagged call `pending` starts with, while it streams.
    tagged: Option<TaggedCall>,
    /// The fenced or bare call `pending` starts with, while it streams.
    untagged: Option<UntaggedCall>,
}

/// A fenced or bare call being streamed: it named a given tool.
#[derive(Debug)]
struct UntaggedCall {
    fenced: bool,
    /// Where the arguments' value starts in `pending`.
    arguments_at: usize,
    /// Bytes of it already given out.
    emitted: usize,
}

impl ToolCallParser {
    pub fn new(tools: Vec<String>) -> Self {
        ToolCallParser {
            tools,
            pending: String::new(),
            at_line_start: true,
            after_block: false,
            tagged: None,
            untagged: None,
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
            return self.read_tagged(end);
        }
        if self.untagged.is_some() {
            return self.stream_untagged(end);
        }
        // Where the object starts: after ```json and a newline, or right here.
        let fenced = self.pending.starts_with(FENCE);
        let body_at = if fenced {
            let after = &self.pending[FENCE.len()..];
            let header = after.trim_start();
            let header = header.strip_prefix("json").unwrap_or(header);
            self.pending.len() - header.trim_start().len()
        } else {
            0
        };
        if let Head::Complete { name, arguments_at } = call_head(&self.pending[body_at..]) {
            if self.tools.contains(&name) {
                self.untagged = Some(UntaggedCall {
                    fenced,
                    arguments_at: body_at + arguments_at,
                    emitted: 0,
                });
                return Some(Piece::CallStart { name });
            }
        }
        if fenced {
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
                if end {
                    let body = after.trim_start();
                    let body = body.strip_prefix("json").unwrap_or(body).to_string();
                    if let Some(call) = self.cut_short_call(&body) {
                        return Some(call);
                    }
                }
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
            None if end => {
                let body = self.pending.clone();
                Some(
                    self.cut_short_call(&body)
                        .unwrap_or_else(|| self.give_up_block()),
                )
            }
            None => None,
        }
    }

    /// A fenced or bare call that named a given tool: its arguments as they come, then the
    /// block gone once it ends (its object closed, and its fence).
    fn stream_untagged(&mut self, end: bool) -> Option<Piece> {
        let call = self.untagged.as_mut()?;
        let value = &self.pending[call.arguments_at..];
        let value_end = json_value_end(value);
        let available = value_end.unwrap_or(value.len());
        if call.emitted < available {
            let fragment = value[call.emitted..available].to_string();
            call.emitted = available;
            return Some(Piece::Arguments(fragment));
        }
        let block_end = value_end.and_then(|value_end| {
            let object_end = if self.pending[call.arguments_at + value_end..]
                .trim_start()
                .starts_with('}')
            {
                let rest = &self.pending[call.arguments_at + value_end..];
                Some(call.arguments_at + value_end + rest.find('}')? + 1)
            } else {
                // More keys after the arguments: the end of the whole object.
                let start = if call.fenced {
                    self.pending.find('{')?
                } else {
                    0
                };
                json_object_end(&self.pending[start..]).map(|n| start + n)
            }?;
            if !call.fenced {
                return Some(object_end);
            }
            self.pending[object_end..]
                .find(FENCE)
                .map(|i| object_end + i + FENCE.len())
        });
        match block_end {
            Some(n) => {
                self.pending.drain(..n);
            }
            None if end => self.pending.clear(),
            None => return None,
        }
        self.untagged = None;
        self.at_line_start = false;
        Some(Piece::CallEnd)
    }

    /// A tagged block: its name once read, its arguments as they come, the block gone once
    /// closed. Tags are markup, never content: a block that is no call is dropped.
    fn read_tagged(&mut self, end: bool) -> Option<Piece> {
        let close = self.pending.find(CLOSE);
        let body_end = close.unwrap_or(self.pending.len());
        let body = &self.pending[OPEN.len()..body_end];
        let tagged = self.tagged.get_or_insert_with(TaggedCall::default);
        if tagged.arguments_at.is_none() {
            match call_head(body) {
                Head::Complete { name, arguments_at } => {
                    tagged.arguments_at = Some(arguments_at);
                    return Some(Piece::CallStart { name });
                }
                Head::Partial if close.is_none() && !end => return None,
                // Another shape (or not JSON at all): read the block whole.
                Head::Partial | Head::Other => {
                    if close.is_none() && !end {
                        return None;
                    }
                    let call = self.call_of(body.trim(), false);
                    self.end_tagged(close);
                    return call.or(Some(Piece::Text(String::new())));
                }
            }
        }
        let start = tagged.arguments_at.unwrap_or(0);
        let value = &body[start.min(body.len())..];
        let value_end = json_value_end(value);
        let available = value_end.unwrap_or(value.len());
        if tagged.emitted < available {
            let fragment = value[tagged.emitted..available].to_string();
            tagged.emitted = available;
            return Some(Piece::Arguments(fragment));
        }
        if close.is_some() || end {
            self.end_tagged(close);
            return Some(Piece::CallEnd);
        }
        None
    }

    /// Drops the tagged block `pending` starts with (up to its close, or all of it).
    fn end_tagged(&mut self, close: Option<usize>) {
        self.tagged = None;
        match close {
            Some(close) => {
                self.pending.drain(..close + CLOSE.len());
                self.after_block = true; // its newline, now or in the next text
            }
            None => self.pending.clear(),
        }
        self.at_line_start = true;
    }

    /// At the end of generation (cut short by `max_tokens`), an open fenced or bare block that
    /// has named a given tool is that call, as far as it went: markup never becomes content.
    fn cut_short_call(&mut self, body: &str) -> Option<Piece> {
        let Head::Complete { name, arguments_at } = call_head(body) else {
            return None;
        };
        if !self.tools.contains(&name) {
            return None;
        }
        let arguments = body[arguments_at..].trim_end().to_string();
        self.pending.clear();
        Some(Piece::Call { name, arguments })
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
    /// unambiguous; a given tool only otherwise). Also in double braces, `{{"name": ...}}`:
    /// Qwen2.5-Coder's template shows its call format as `{{"name": <function-name>, ...}}`
    /// (the braces doubled inside a Jinja string, so they reach the prompt as two), and the
    /// 1.5B model, greedy, writes its calls that way.
    fn call_of(&self, body: &str, must_name_a_tool: bool) -> Option<Piece> {
        let json: Json = serde_json::from_str(body).ok().or_else(|| {
            let inner = body.trim().strip_prefix('{')?.strip_suffix('}')?;
            serde_json::from_str(inner.trim()).ok()
        })?;
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

/// What the start of a tagged block's body says so far.
enum Head {
    /// `{"name": "...", "arguments": ` read: the name, and where the arguments' value starts.
    Complete { name: String, arguments_at: usize },
    /// Could still become that.
    Partial,
    /// Something else: another key order, other keys, not JSON.
    Other,
}

/// Reads `{ "name" : "<name>" , "arguments" : ` (whitespace anywhere) at the start of `body`.
fn call_head(body: &str) -> Head {
    let bytes = body.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // Each literal must match; running out of text is Partial.
    let expect = |i: &mut usize, literal: &str| -> Option<bool> {
        let rest = &body[*i..];
        if rest.len() < literal.len() {
            return if literal.starts_with(rest) {
                None
            } else {
                Some(false)
            };
        }
        if rest.starts_with(literal) {
            *i += literal.len();
            Some(true)
        } else {
            Some(false)
        }
    };
    macro_rules! step {
        ($literal:expr) => {
            skip_ws(&mut i);
            match expect(&mut i, $literal) {
                None => return Head::Partial,
                Some(false) => return Head::Other,
                Some(true) => {}
            }
        };
    }
    step!("{");
    step!("\"name\"");
    step!(":");
    skip_ws(&mut i);
    if i >= bytes.len() {
        return Head::Partial;
    }
    if bytes[i] != b'"' {
        return Head::Other;
    }
    let Some(len) = json_string_end(&body[i..]) else {
        return Head::Partial;
    };
    let Ok(name) = serde_json::from_str::<String>(&body[i..i + len]) else {
        return Head::Other;
    };
    i += len;
    step!(",");
    step!("\"arguments\"");
    step!(":");
    skip_ws(&mut i);
    if i >= bytes.len() {
        return Head::Partial;
    }
    Head::Complete {
        name,
        arguments_at: i,
    }
}

/// The length of the JSON string at the start of `text` (quotes included), once closed.
fn json_string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// The length of the JSON value at the start of `text` once it is known to be whole: an object
/// or array when its brackets balance, a string when closed, a scalar when followed by a
/// delimiter.
fn json_value_end(text: &str) -> Option<usize> {
    match text.as_bytes().first()? {
        b'{' | b'[' => json_object_end(text),
        b'"' => json_string_end(text),
        _ => text.find([',', '}', ']', '\n', ' ']),
    }
}

/// Appends, joining adjacent texts.
fn push_piece(out: &mut Vec<Piece>, piece: Piece) {
    match (out.last_mut(), piece) {
        (Some(Piece::Text(text)), Piece::Text(more)) => text.push_str(&more),
        (_, Piece::Text(more)) if more.is_empty() => {}
        (_, piece) => out.push(piece),
    }
}

mod turn;
pub(crate) use turn::{answered_calls, exchanges_as_text, ToolCallDeltas, TurnRules};

#[cfg(test)]
mod tests;
