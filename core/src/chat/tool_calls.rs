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

use crate::value::Value;
use serde_json::Value as Json;

/// What the stream turned out to contain, in order.
#[derive(Debug, Clone, PartialEq)]
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

/// What a turn may hold besides its first call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnRules {
    /// `parallel_tool_calls`: more than one call. Without it the turn ends with its first call,
    /// whatever form the call took (the grammar enforces it only for tagged calls).
    pub(crate) parallel: bool,
    /// The turn ends at the first call that repeats an earlier one of the same turn (same name,
    /// same arguments as JSON), which is dropped: a small model, greedy, otherwise writes the
    /// same call until the context is full. `allow_repeated_tool_calls: true` turns it off.
    pub(crate) end_on_repeat: bool,
}

/// A call of this turn as it streams.
struct OpenCall {
    name: String,
    arguments: String,
    /// Held back, not given out yet: a call to a tool already called in this turn may turn
    /// out to be a repeat, which is never shown.
    held: bool,
}

/// Tool calls found in streamed text, given out as OpenAI's streamed deltas (`index`, and on a
/// call's first delta its `id` and `type`), whatever the engine, under the turn's rules.
/// A reply is content, then calls: text after a call ends the turn (llama.cpp's grammar allows
/// only more calls after one; a small model otherwise goes on echoing a tool's schema), and
/// whitespace next to a call (the newlines between bare calls) is not content.
pub(crate) struct ToolCallDeltas {
    parser: ToolCallParser,
    rules: TurnRules,
    /// Calls given out so far: the next call's `index`.
    started: usize,
    /// The calls of this turn that have ended, given out or dropped: name and arguments (as
    /// JSON when they parse).
    ended: Vec<(String, Json)>,
    /// Of those, the calls dropped for repeating one answered since the user spoke.
    dropped: usize,
    /// The output has ended.
    finished: bool,
    /// Content (other than whitespace) has been given out.
    gave_content: bool,
    open: Option<OpenCall>,
    /// Whitespace-only text held back: content if text follows, dropped if a call or the end
    /// of a turn with calls does.
    space: String,
    /// The turn is over (its one call made, a call repeated, text after the calls): what
    /// follows is dropped.
    over: bool,
    /// The calls made and answered (a tool message followed) since the user last spoke.
    answered: Vec<(String, Json)>,
}

impl ToolCallDeltas {
    pub(crate) fn new(parser: ToolCallParser, rules: TurnRules) -> Self {
        ToolCallDeltas {
            parser,
            rules,
            started: 0,
            ended: Vec::new(),
            open: None,
            space: String::new(),
            over: false,
            answered: Vec::new(),
            dropped: 0,
            finished: false,
            gave_content: false,
        }
    }

    /// The calls the conversation made and answered since the user last spoke
    /// ([`answered_calls`]): one made again is dropped (its result is in the conversation),
    /// and a turn with nothing but such calls has [`looped`](Self::looped).
    pub(crate) fn with_answered(mut self, answered: Vec<(String, Json)>) -> Self {
        self.answered = answered;
        self
    }

    /// Whether the turn, now over, gave nothing an agent can use although the conversation has
    /// results since the user spoke: only calls already answered (the model looping on
    /// results it has), or nothing at all (the 1.5B, after two results, ends at once). The
    /// caller may have the model answer instead.
    pub(crate) fn looped(&self) -> bool {
        let nothing = self.started == 0 && !self.gave_content && !self.answered.is_empty();
        nothing && ((self.over && self.dropped > 0) || self.finished)
    }

    /// Whether a call has started (the finish reason is then `tool_calls`).
    pub(crate) fn any_started(&self) -> bool {
        self.started > 0
    }

    /// Whether the turn is over: generation can stop, the rest would be dropped.
    pub(crate) fn turn_over(&self) -> bool {
        self.over
    }

    /// Content and tool-call deltas out of `text` (and, at the end, out of what was held back):
    /// the content comes first, since text after a call ends the turn.
    pub(crate) fn split(&mut self, text: &str, end: bool) -> (String, Vec<Value>) {
        let mut pieces = self.parser.push(text);
        if end {
            pieces.extend(self.parser.finish());
        }
        let (mut content, mut deltas) = (String::new(), Vec::new());
        for piece in pieces {
            if self.over {
                break;
            }
            match piece {
                Piece::Text(text) => self.text(&text, &mut content),
                Piece::CallStart { name } => {
                    self.space.clear();
                    let held = self.rules.end_on_repeat
                        && self
                            .ended
                            .iter()
                            .chain(&self.answered)
                            .any(|(n, _)| *n == name);
                    if !held {
                        let delta = self.start(&name, String::new());
                        deltas.push(delta);
                    }
                    self.open = Some(OpenCall {
                        name,
                        arguments: String::new(),
                        held,
                    });
                }
                Piece::Arguments(arguments) => {
                    let Some(call) = self.open.as_mut() else {
                        continue;
                    };
                    call.arguments.push_str(&arguments);
                    if !call.held {
                        let index = self.started.saturating_sub(1);
                        deltas.push(Value::from(serde_json::json!({
                            "index": index, "function": {"arguments": arguments}
                        })));
                    }
                }
                Piece::CallEnd => {
                    if let Some(call) = self.open.take() {
                        self.end_call(call.name, call.arguments, call.held, &mut deltas);
                    }
                }
                Piece::Call { name, arguments } => {
                    self.space.clear();
                    self.end_call(name, arguments, true, &mut deltas);
                }
            }
        }
        if end {
            self.finished = true;
            if let Some(call) = self.open.take() {
                self.end_call(call.name, call.arguments, call.held, &mut deltas);
            }
            // Whitespace at the end is content only in a reply without calls.
            let space = std::mem::take(&mut self.space);
            if self.ended.is_empty() {
                content.push_str(&space);
            }
        }
        (content, deltas)
    }

    fn text(&mut self, text: &str, content: &mut String) {
        if text.chars().all(char::is_whitespace) {
            self.space.push_str(text);
            return;
        }
        if !self.ended.is_empty() {
            self.over = true;
            return;
        }
        content.push_str(&std::mem::take(&mut self.space));
        content.push_str(text);
        self.gave_content = true;
    }

    /// A call has ended: given out whole if it was held back, unless it repeats an earlier one
    /// of the turn, which ends the turn instead, or one answered since the user spoke, which
    /// is dropped; without parallel calls, the turn ends with it.
    fn end_call(&mut self, name: String, arguments: String, held: bool, deltas: &mut Vec<Value>) {
        let value = arguments_value(&arguments);
        let same = |(n, v): &(String, Json)| *n == name && *v == value;
        if self.rules.end_on_repeat && self.ended.iter().any(same) {
            self.over = true;
            return;
        }
        let answered_again = self.rules.end_on_repeat && self.answered.iter().any(same);
        if answered_again {
            self.dropped += 1;
        } else if held {
            let delta = self.start(&name, arguments);
            deltas.push(delta);
        }
        self.ended.push((name, value));
        if !self.rules.parallel {
            self.over = true;
        }
    }

    fn start(&mut self, name: &str, arguments: String) -> Value {
        let index = self.started;
        self.started += 1;
        Value::from(serde_json::json!({
            "index": index,
            "id": crate::predict::random_id("call_"),
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }))
    }
}

/// A call's arguments as compared for repeats: the JSON they hold, or their text.
fn arguments_value(arguments: &str) -> Json {
    serde_json::from_str::<Json>(arguments)
        .unwrap_or_else(|_| Json::String(arguments.trim().to_string()))
}

/// The calls of the assistant messages since the last user message that a tool message
/// answered (one follows them), as `(name, arguments)`: what an agent has already run for the
/// question in hand. `messages` as OpenAI's chat messages (JSON), `arguments` as text or as the
/// object the chat layer parsed it into.
pub(crate) fn answered_calls(messages: &[Json]) -> Vec<(String, Json)> {
    let since_user = messages
        .iter()
        .rposition(|m| m["role"] == "user")
        .map_or(0, |i| i + 1);
    let recent = &messages[since_user..];
    let mut answered = Vec::new();
    for (i, message) in recent.iter().enumerate() {
        if message["role"] != "assistant" || !recent[i + 1..].iter().any(|m| m["role"] == "tool") {
            continue;
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let function = call.get("function").unwrap_or(call);
            let Some(name) = function["name"].as_str() else {
                continue;
            };
            let arguments = match &function["arguments"] {
                Json::String(text) => arguments_value(text),
                Json::Null => Json::Object(Default::default()),
                value => value.clone(),
            };
            answered.push((name.to_string(), arguments));
        }
    }
    answered
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
        fold(out)
    }

    /// Streamed calls folded into whole ones, to compare with what the text holds.
    fn fold(pieces: Vec<Piece>) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::new();
        for piece in pieces {
            match (out.last_mut(), piece) {
                (_, Piece::CallStart { name }) => out.push(Piece::Call {
                    name,
                    arguments: String::new(),
                }),
                (Some(Piece::Call { arguments, .. }), Piece::Arguments(more)) => {
                    arguments.push_str(&more)
                }
                (_, Piece::CallEnd) => {}
                (_, piece) => push_piece(&mut out, piece),
            }
        }
        // Compare arguments as JSON values: streamed ones keep the model's spacing.
        out.into_iter()
            .map(|piece| match piece {
                Piece::Call { name, arguments } => Piece::Call {
                    name,
                    arguments: serde_json::from_str::<Json>(&arguments)
                        .map_or(arguments, |v| v.to_string()),
                },
                piece => piece,
            })
            .collect()
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
            // In double braces, as Qwen2.5-Coder's template shows the format (bare or tagged).
            (
                "{{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
                vec![call("Paris")],
            ),
            (
                "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}}\n</tool_call>",
                vec![call("Rome")],
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
            // Tags are markup: a broken block is dropped, never shown as content.
            ("<tool_call> oops", vec![]),
            ("Hi <tool_call>{\"name\": \"x\", \"arg", vec![Piece::Text("Hi ".into())]),
            // Cut short (by max_tokens): the call as far as it went, tagged or not.
            ("Hi\n{\"name\": \"get_weather\", \"arguments\": {\"ci", vec![Piece::Text("Hi\n".into()), Piece::Call { name: "get_weather".into(), arguments: "{\"ci".into() }]),
            ("```json\n{\"name\": \"get_weather\", \"arguments\": {", vec![Piece::Call { name: "get_weather".into(), arguments: "{".into() }]),
            ("<tool_call>{\"name\": \"x\", \"arguments\": {\"a\": 1", vec![Piece::Call { name: "x".into(), arguments: "{\"a\": 1".into() }]),
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
    fn a_tagged_call_streams_its_name_then_its_arguments() {
        let mut parser = ToolCallParser::new(vec![]);
        assert_eq!(parser.push("<tool_call>\n{\"name\": \"get_"), vec![]);
        assert_eq!(
            parser.push("weather\", \"arguments\": {\"ci"),
            vec![
                Piece::CallStart {
                    name: "get_weather".into()
                },
                Piece::Arguments("{\"ci".into())
            ]
        );
        assert_eq!(
            parser.push("ty\": \"Paris\"}}\n</tool"),
            vec![Piece::Arguments("ty\": \"Paris\"}".into())]
        );
        assert_eq!(
            parser.push("_call>\nDone"),
            vec![Piece::CallEnd, Piece::Text("Done".into())]
        );
        assert_eq!(parser.finish(), vec![]);
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

    /// What a turn gives out, fed in chunks of `chunk` characters: per step, its content and
    /// its deltas as `name(arguments)` (a fragment alone as `+arguments`); and whether it is over.
    fn turn(text: &str, chunk: usize, rules: TurnRules) -> (Vec<(String, Vec<String>)>, bool) {
        let parser = ToolCallParser::new(vec!["get_weather".into(), "get_time".into()]);
        let mut deltas = ToolCallDeltas::new(parser, rules);
        let chars: Vec<char> = text.chars().collect();
        let mut steps = Vec::new();
        let parts: Vec<String> = chars.chunks(chunk).map(|c| c.iter().collect()).collect();
        for (i, part) in parts.iter().enumerate() {
            steps.push(deltas.split(part, i + 1 == parts.len()));
            if deltas.turn_over() {
                break;
            }
        }
        let shown = steps
            .into_iter()
            .map(|(text, calls)| {
                let calls = calls
                    .iter()
                    .map(|d| {
                        let d = d.to_json().unwrap();
                        let args = d["function"]["arguments"]
                            .as_str()
                            .unwrap_or("")
                            .to_string();
                        match d["function"]["name"].as_str() {
                            Some(name) => format!("{}:{name}({args})", d["index"]),
                            None => format!("{}:+{args}", d["index"]),
                        }
                    })
                    .collect();
                (text, calls)
            })
            .collect();
        (shown, deltas.turn_over())
    }

    /// The steps folded: content, and each index's calls joined.
    fn folded(steps: &[(String, Vec<String>)]) -> (String, Vec<String>) {
        let mut content = String::new();
        let mut calls: Vec<String> = Vec::new();
        for (text, deltas) in steps {
            content.push_str(text);
            for d in deltas {
                let (index, rest) = d.split_once(':').unwrap();
                let index: usize = index.parse().unwrap();
                match rest.strip_prefix('+') {
                    Some(more) => {
                        let call = &mut calls[index];
                        call.insert_str(call.len() - 1, more)
                    }
                    None => calls.push(rest.to_string()),
                }
            }
        }
        (content, calls)
    }

    const PARALLEL: TurnRules = TurnRules {
        parallel: true,
        end_on_repeat: true,
    };
    const ONE: TurnRules = TurnRules {
        parallel: false,
        end_on_repeat: true,
    };
    const ANY: TurnRules = TurnRules {
        parallel: true,
        end_on_repeat: false,
    };

    #[test]
    fn without_parallel_calls_the_turn_ends_with_its_first_call_in_any_form() {
        let bare = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\nDone.";
        let tagged = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\nAnd more.";
        for (text, parallel) in [(bare, 2), (tagged, 1)] {
            for chunk in [1, 3, 1000] {
                let (steps, over) = turn(text, chunk, ONE);
                assert!(over, "{text:?} by {chunk}");
                assert_eq!(
                    folded(&steps),
                    (
                        String::new(),
                        vec![r#"get_weather({"city": "Paris"})"#.to_string()]
                    ),
                    "{text:?} by {chunk}"
                );
            }
            // With parallel calls, text after the calls ends the turn all the same.
            let (steps, over) = turn(text, 1000, PARALLEL);
            assert!(over);
            let (content, calls) = folded(&steps);
            assert_eq!(calls.len(), parallel, "{text:?}");
            assert_eq!(content, "");
        }
    }

    #[test]
    fn a_repeated_call_ends_the_turn_unless_allowed() {
        let call = |city: &str| {
            format!("{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n")
        };
        // The same call again (spaced otherwise: compared as JSON), after another one.
        let text = format!(
            "{}{}{}{}",
            call("Paris"),
            call("Rome"),
            "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n",
            call("Oslo")
        );
        for chunk in [1, 2, 5, 1000] {
            let (steps, over) = turn(&text, chunk, PARALLEL);
            assert!(over, "by {chunk}");
            let (content, calls) = folded(&steps);
            assert_eq!(content, "", "whitespace between calls is not content");
            assert_eq!(
                calls,
                [
                    r#"get_weather({"city": "Paris"})"#,
                    r#"get_weather({"city": "Rome"})"#
                ],
                "by {chunk}"
            );
            let (steps, over) = turn(&text, chunk, ANY);
            assert!(!over);
            assert_eq!(folded(&steps).1.len(), 4, "by {chunk}");
        }
        // Tagged calls stream; the second call to a tool already called comes whole.
        let tagged = |city: &str| {
            format!("<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>\n")
        };
        let text = format!("{}{}{}", tagged("Paris"), tagged("Rome"), tagged("Paris"));
        let (steps, over) = turn(&text, 1, PARALLEL);
        assert!(over);
        let deltas: Vec<&String> = steps.iter().flat_map(|(_, d)| d).collect();
        assert!(deltas.len() > 3, "the first call streams: {deltas:?}");
        assert_eq!(
            deltas.last().unwrap().as_str(),
            r#"1:get_weather({"city": "Rome"})"#
        );
        assert_eq!(folded(&steps).1.len(), 2);
    }

    #[test]
    fn content_comes_before_the_calls_and_text_after_them_ends_the_turn() {
        let parser = ToolCallParser::new(vec!["get_weather".into()]);
        let mut deltas = ToolCallDeltas::new(parser, PARALLEL);
        let (content, first) = deltas.split(
            "Let me check.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
            false,
        );
        assert_eq!(content, "Let me check.\n");
        assert_eq!(first.len(), 2, "the call's start and its first arguments");
        assert!(!deltas.turn_over());
        // The last arguments, then the newline (not content) and text: the turn is over.
        let (content, last) = deltas.split("is\"}}\n{\"name\": \"get_weather_args\"}", false);
        assert_eq!(content, "");
        assert_eq!(last.len(), 1);
        assert!(deltas.turn_over());
        // Whitespace alone is content in a reply without calls.
        let mut deltas = ToolCallDeltas::new(ToolCallParser::new(vec![]), PARALLEL);
        assert_eq!(deltas.split("\n", false), (String::new(), vec![]));
        assert_eq!(deltas.split(" ", true), ("\n ".to_string(), vec![]));
    }

    #[test]
    fn a_call_answered_since_the_user_spoke_made_again_is_a_loop() {
        let call = |city: &str| {
            serde_json::json!({"id": "c", "type": "function",
            "function": {"name": "get_weather", "arguments": format!("{{\"city\": \"{city}\"}}")}})
        };
        let messages: Vec<Json> = serde_json::from_value(serde_json::json!([
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "tool_calls": [call("Oslo")]},
            {"role": "tool", "tool_call_id": "c", "content": "Rain."},
            {"role": "user", "content": "And in Paris?"},
            {"role": "assistant", "tool_calls": [call("Paris")]},
            {"role": "tool", "tool_call_id": "c", "content": "Sunny."},
            {"role": "assistant", "tool_calls": [call("Rome")]},
        ]))
        .unwrap();
        // Oslo was before the user last spoke; Rome has no result yet.
        let answered = answered_calls(&messages);
        assert_eq!(
            answered,
            [(
                "get_weather".to_string(),
                serde_json::json!({"city": "Paris"})
            )]
        );
        let deltas = |rules| {
            let parser = ToolCallParser::new(vec!["get_weather".into()]);
            ToolCallDeltas::new(parser, rules).with_answered(answered.clone())
        };
        let again = "{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}";
        let mut turn = deltas(PARALLEL);
        assert_eq!(
            turn.split(again, false),
            (String::new(), vec![]),
            "never shown"
        );
        assert!(!turn.looped(), "the turn goes on: a new call may follow");
        assert_eq!(turn.split("\n", true), (String::new(), vec![]));
        assert!(turn.looped());
        // Dropped, and a new call follows: the turn is no loop.
        let mut turn = deltas(PARALLEL);
        let lyon = again.replace("Paris", "Lyon");
        let (_, calls) = turn.split(&format!("{again}\n{lyon}\n{again}"), true);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(
            calls[0].to_json().unwrap()["function"]["arguments"],
            lyon[lyon.find("{\"city").unwrap()..lyon.len() - 1]
        );
        assert!(turn.turn_over() && !turn.looped());
        // Without parallel calls, the dropped call ends the turn.
        let mut turn = deltas(ONE);
        turn.split(again, false);
        assert!(turn.turn_over() && turn.looped());
        // A turn that ends with nothing at all after results; one with content is an answer.
        let mut turn = deltas(PARALLEL);
        assert_eq!(turn.split(" ", true), (" ".to_string(), vec![]));
        assert!(turn.looped());
        let mut turn = deltas(PARALLEL);
        assert_eq!(turn.split("Sunny.", true).0, "Sunny.");
        assert!(!turn.looped());
        let mut turn = ToolCallDeltas::new(ToolCallParser::new(vec![]), PARALLEL);
        turn.split("", true);
        assert!(
            !turn.looped(),
            "without results there is nothing to answer from"
        );
        // Another call is no loop; nor is the repeat when repeats are allowed.
        let mut turn = deltas(PARALLEL);
        let (_, calls) = turn.split(&again.replace("Paris", "Lyon"), true);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(!turn.looped());
        let mut turn = deltas(ANY);
        assert_eq!(
            turn.split(again, true).1.len(),
            2,
            "streamed: its start, its arguments"
        );
        assert!(!turn.looped());
    }
}
