//! One turn's calls under its rules: what OpenAI's streamed deltas give out of the parser's
//! pieces (docs/tools.md, "A turn").

use super::{Piece, ToolCallParser};
use crate::predict::{FunctionCallDelta, ToolCallDelta};
use serde_json::Value as Json;

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
    /// Content given out after the last dropped call.
    content_since_drop: bool,
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
            content_since_drop: false,
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
        if self.started > 0 || self.answered.is_empty() || !(self.over || self.finished) {
            return false;
        }
        if self.dropped > 0 {
            // Content before the dropped call (a preamble) is no answer; content after is.
            !self.content_since_drop
        } else {
            self.finished && !self.gave_content
        }
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
    pub(crate) fn split(&mut self, text: &str, end: bool) -> (String, Vec<ToolCallDelta>) {
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
                        deltas.push(ToolCallDelta {
                            index: index as u32,
                            function: Some(FunctionCallDelta {
                                name: None,
                                arguments: Some(arguments),
                            }),
                            ..ToolCallDelta::default()
                        });
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
        // After a call given out, text ends the turn; after a dropped one, it is the reply.
        if self.started > 0 {
            self.over = true;
            return;
        }
        // After a dropped call, JSON is no reply: the 0.5B goes on with the tool's schema or the
        // result as an object of its own. The turn ends there, and has looped.
        if self.dropped > 0 && !self.content_since_drop && text.trim_start().starts_with(['{', '['])
        {
            self.space.clear();
            self.over = true;
            return;
        }
        // What separated the reply from a dropped call is not part of it.
        let text = if self.dropped > 0 && !self.content_since_drop {
            self.space.clear();
            text.trim_start()
        } else {
            text
        };
        content.push_str(&std::mem::take(&mut self.space));
        content.push_str(text);
        self.gave_content = true;
        self.content_since_drop = true;
    }

    /// A call has ended: given out whole if it was held back, unless it repeats an earlier one
    /// of the turn, which ends the turn instead, or one answered since the user spoke, which
    /// is dropped; without parallel calls, the turn ends with it.
    fn end_call(
        &mut self,
        name: String,
        arguments: String,
        held: bool,
        deltas: &mut Vec<ToolCallDelta>,
    ) {
        let value = arguments_value(&arguments);
        let same = |(n, v): &(String, Json)| *n == name && *v == value;
        if self.rules.end_on_repeat && self.ended.iter().any(same) {
            self.over = true;
            return;
        }
        let answered_again = self.rules.end_on_repeat && self.answered.iter().any(same);
        if answered_again {
            self.dropped += 1;
            self.content_since_drop = false;
        } else if held {
            let delta = self.start(&name, arguments);
            deltas.push(delta);
        }
        self.ended.push((name, value));
        // One call allowed: the turn ends with it, even a dropped one (the turn's one call went
        // on a result it has: it has looped).
        if !self.rules.parallel {
            self.over = true;
        }
    }

    fn start(&mut self, name: &str, arguments: String) -> ToolCallDelta {
        let index = self.started;
        self.started += 1;
        ToolCallDelta {
            index: index as u32,
            id: Some(crate::predict::random_id("call_")),
            kind: Some("function".into()),
            function: Some(FunctionCallDelta {
                name: Some(name.to_string()),
                arguments: Some(arguments),
            }),
        }
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

/// The conversation with its tool exchanges written as plain turns, for the answer generated
/// again without tools (docs/tools.md, "A turn"): each assistant call becomes its text
/// (`Calling NAME with ARGUMENTS.`) and each run of tool results one user message (`The result
/// of NAME: RESULT`), merged with a user message right after it so the roles still alternate.
/// Rendered through the model's own template with the calls left as calls, Qwen2.5-Coder 0.5B,
/// greedy, writes the call once more, as text (`{"name": "get_weather", ...}`); with nothing
/// left to copy, it and SmolLM2 answer from the results.
pub(crate) fn exchanges_as_text(messages: &[Json]) -> Vec<Json> {
    let text_of = |content: &Json| match content {
        Json::String(text) => text.clone(),
        Json::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Json::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Json::Null => String::new(),
        other => other.to_string(),
    };
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let mut out: Vec<Json> = Vec::with_capacity(messages.len());
    // Whether the last message out is a user message made of tool results.
    let mut results_open = false;
    for message in messages {
        let role = message["role"].as_str().unwrap_or_default();
        let calls = message["tool_calls"].as_array().filter(|c| !c.is_empty());
        match (role, calls) {
            ("assistant", Some(calls)) => {
                let mut lines: Vec<String> = Some(text_of(&message["content"]))
                    .filter(|t| !t.trim().is_empty())
                    .into_iter()
                    .collect();
                for call in calls {
                    let function = call.get("function").unwrap_or(call);
                    let name = function["name"].as_str().unwrap_or("a tool").to_string();
                    let arguments = match &function["arguments"] {
                        Json::String(text) => text.clone(),
                        Json::Null => "{}".to_string(),
                        value => value.to_string(),
                    };
                    if let Some(id) = call["id"].as_str() {
                        names.insert(id.to_string(), name.clone());
                    }
                    lines.push(format!("Calling {name} with {arguments}."));
                }
                out.push(serde_json::json!({"role": "assistant", "content": lines.join("\n")}));
                results_open = false;
            }
            ("tool", _) => {
                let name = message["tool_call_id"]
                    .as_str()
                    .and_then(|id| names.get(id).cloned())
                    .or_else(|| message["name"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "the tool".to_string());
                let line = format!("The result of {name}: {}", text_of(&message["content"]));
                match out.last_mut() {
                    Some(last) if results_open => {
                        let joined = format!("{}\n{line}", last["content"].as_str().unwrap_or(""));
                        last["content"] = Json::String(joined);
                    }
                    _ => out.push(serde_json::json!({"role": "user", "content": line})),
                }
                results_open = true;
            }
            ("user", _) if results_open => {
                let last = out.last_mut().expect("results were written");
                let joined = format!(
                    "{}\n\n{}",
                    last["content"].as_str().unwrap_or(""),
                    text_of(&message["content"])
                );
                last["content"] = Json::String(joined);
                results_open = false;
            }
            _ => {
                out.push(message.clone());
                results_open = false;
            }
        }
    }
    // Text then a call (two assistant messages, as Responses keeps them), or results after a
    // user message: one message a role, so that templates that enforce alternation render it.
    let mut merged: Vec<Json> = Vec::with_capacity(out.len());
    for message in out {
        let role = message["role"].clone();
        match merged.last_mut() {
            Some(last)
                if last["role"] == role
                    && (role == "user" || role == "assistant")
                    && last.get("tool_calls").is_none()
                    && message.get("tool_calls").is_none() =>
            {
                let joined = format!(
                    "{}\n\n{}",
                    text_of(&last["content"]),
                    text_of(&message["content"])
                );
                last["content"] = Json::String(joined);
            }
            _ => merged.push(message),
        }
    }
    merged
}
