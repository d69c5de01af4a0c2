//! An Anthropic Messages request read into a chat completion request: `system` first, each
//! user message's `tool_result` blocks as `tool` messages, an assistant's `tool_use` blocks as
//! its tool calls, `tools` as function tools, `tool_choice` and `stop_sequences` as their chat
//! counterparts, `image` blocks as `image_url` parts. What a local model cannot honour
//! (documents, server tools) is an error naming the field.

use crate::error::{shown, Error, Result};
use crate::openai::{ChatCompletionRequest, OtherFields};
use crate::value::Value;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

/// Most stop sequences the chat models take.
const MAX_STOP_SEQUENCES: usize = crate::predict::MAX_STOP_SEQUENCES;

/// A `POST /v1/messages` (or `/v1/messages/count_tokens`) request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessagesRequest {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub messages: Json,
    /// Required by `messages.create`; `count_tokens` takes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    /// A string, or text blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// Accepted (`user_id`); nothing is done with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// `{"type": "enabled", "budget_tokens"}`: a `reasoning_effort` for a predictor that takes
    /// one (up to 2,048 tokens `low`, 8,192 `medium`, 32,768 `high`, more `xhigh`); a model
    /// without refuses it. `disabled` and `adaptive` ask for nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Json>,
    /// `{"edits": [...]}`: `clear_thinking_*` edits are accepted (there is no thinking to
    /// clear); other edits (clearing tool results) are refused by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Json>,
    /// `format` (`{"type": "json_schema", "schema"}`): the reply is JSON of that schema,
    /// enforced by a grammar; `effort` is accepted (a local model has one effort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_config: Option<Json>,
    /// Accepted; nothing here to choose: one tier, one speed, one place, one workspace,
    /// the prompt cache always on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_geo: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_profile_id: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<Json>,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

fn type_name(json: &Json) -> &'static str {
    Value::from(json.clone()).type_name()
}

fn invalid(param: impl Into<String>, message: impl Into<String>) -> Error {
    Error::invalid(param, message)
}

/// The text of a `system` prompt or a `tool_result`'s content: a string or text blocks.
fn text_of(value: &Json, at: &str) -> Result<String> {
    match value {
        Json::String(text) => Ok(text.clone()),
        Json::Array(blocks) => {
            let mut text = String::new();
            for (j, block) in blocks.iter().enumerate() {
                match (block.get("type").and_then(Json::as_str), block.get("text")) {
                    (Some("text"), Some(Json::String(part))) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(part);
                    }
                    (Some("text"), _) => {
                        return Err(invalid(
                            format!("{at}[{j}].text"),
                            format!("`{at}[{j}].text` must be a string"),
                        ))
                    }
                    (kind, _) => return Err(unsupported_block(&format!("{at}[{j}]"), kind)),
                }
            }
            Ok(text)
        }
        other => Err(invalid(
            at,
            format!(
                "Invalid type for `{at}`: expected a string or text blocks, got {}",
                type_name(other)
            ),
        )),
    }
}

fn unsupported_block(at: &str, kind: Option<&str>) -> Error {
    match kind {
        Some(kind @ ("document" | "search_result" | "container_upload")) => invalid(
            format!("{at}.type"),
            format!(
                "`{at}` is a{} {kind} block; ingle's chat models read text only",
                if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "n"
                } else {
                    ""
                }
            ),
        ),
        Some(kind) => invalid(
            format!("{at}.type"),
            format!(
                "`{at}.type` '{}' is not a content block ingle can take here",
                shown(kind)
            ),
        ),
        None => invalid(format!("{at}.type"), format!("`{at}` needs a `type`")),
    }
}

impl MessagesRequest {
    /// Reads a request from JSON text, errors naming the field.
    pub fn from_json(json: &str) -> Result<Self> {
        crate::openai::from_json(json)
    }

    /// The chat conversation: `system`, then each message, its tool results as `tool` messages.
    fn chat_messages(&self) -> Result<Vec<Json>> {
        let mut chat = Vec::new();
        if let Some(system) = self.system.as_ref().filter(|s| !s.is_null()) {
            let text = text_of(system, "system")?;
            if !text.is_empty() {
                chat.push(json!({"role": "system", "content": text}));
            }
        }
        let messages = match &self.messages {
            Json::Array(messages) if !messages.is_empty() => messages,
            Json::Array(_) => return Err(invalid("messages", "`messages` must not be empty")),
            Json::Null => {
                return Err(invalid(
                    "messages",
                    "Missing required parameter: `messages`",
                ))
            }
            other => {
                return Err(invalid(
                    "messages",
                    format!(
                        "Invalid type for `messages`: expected an array, got {}",
                        type_name(other)
                    ),
                ))
            }
        };
        let last = messages.len() - 1;
        // The ids of the previous assistant turn's `tool_use` blocks: what a user turn's
        // `tool_result` blocks may answer (Anthropic's rule, which its API enforces too). A
        // turn is the messages of one role in a row, as Anthropic's API joins them.
        let mut calls: Vec<String> = Vec::new();
        let mut after_assistant = false;
        for (i, message) in messages.iter().enumerate() {
            let at = format!("messages[{i}]");
            if i == last && message.get("role").and_then(Json::as_str) == Some("assistant") {
                return Err(invalid(
                    format!("{at}.role"),
                    format!(
                        "`{at}` is an assistant message: continuing a prefilled reply is not \
                         supported by ingle; end the conversation with a user message"
                    ),
                ));
            }
            let role = message.get("role").and_then(Json::as_str);
            let content = message.get("content").unwrap_or(&Json::Null);
            match role {
                Some("user") => {
                    user_message(content, &at, &calls, &mut chat)?;
                    after_assistant = false;
                }
                Some("assistant") => {
                    let message = assistant_message(content, &at)?;
                    if !after_assistant {
                        calls.clear();
                    }
                    after_assistant = true;
                    for id in message["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|call| call["id"].as_str())
                    {
                        // Within a message, `assistant_message` names the block; across the
                        // messages of one turn, the message.
                        if calls.iter().any(|call| call == id) {
                            return Err(invalid(
                                format!("{at}.content"),
                                format!(
                                    "`{at}` repeats the `tool_use` id '{}' of an earlier \
                                     message of the same assistant turn; each call needs its \
                                     own id",
                                    shown(id)
                                ),
                            ));
                        }
                        calls.push(id.to_string());
                    }
                    chat.push(message);
                }
                // Claude Code sends its environment as a system message among the turns: text,
                // at its place in the conversation.
                Some("system") => {
                    let text = text_of(content, &format!("{at}.content"))?;
                    if !text.is_empty() {
                        chat.push(json!({"role": "system", "content": text}));
                    }
                }
                Some(other) => {
                    return Err(invalid(
                        format!("{at}.role"),
                        format!(
                            "`{at}.role` must be \"user\", \"assistant\" or \"system\", not '{}'",
                            shown(other)
                        ),
                    ))
                }
                None => {
                    return Err(invalid(
                        format!("{at}.role"),
                        format!("`{at}` needs a `role`"),
                    ))
                }
            }
        }
        Ok(chat)
    }

    /// The request as the chat completion request it maps onto, checked (each error names the
    /// field in Anthropic's terms); `stream`: with usage at the end.
    pub fn to_chat(&self, stream: bool) -> Result<ChatCompletionRequest> {
        if let Some((field, _)) = self.other.iter().find(|(_, v)| !v.is_null()) {
            return Err(invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            ));
        }
        if self.model.is_empty() {
            return Err(invalid("model", "Missing required parameter: `model`"));
        }
        match self.max_tokens {
            Some(n) if n < 1 => {
                return Err(invalid(
                    "max_tokens",
                    format!("Invalid value for `max_tokens`: {n}; it must be at least 1"),
                ))
            }
            _ => {}
        }
        // `enabled` with a budget is a reasoning effort, for a model whose predictor takes one;
        // "adaptive" lets the model decide, "disabled" asks for nothing.
        let mut reasoning_effort = None;
        if let Some(thinking) = self.thinking.as_ref().filter(|t| !t.is_null()) {
            match thinking.get("type").and_then(Json::as_str) {
                Some("disabled" | "adaptive") => {}
                Some("enabled") => {
                    let budget = thinking.get("budget_tokens").and_then(Json::as_u64).filter(|b| *b >= 1024).ok_or_else(|| {
                        invalid(
                            "thinking.budget_tokens",
                            "`thinking` of type \"enabled\" needs `budget_tokens`, an integer (at least 1024)",
                        )
                    })?;
                    reasoning_effort = Some(match budget {
                        0..=2048 => "low",
                        2049..=8192 => "medium",
                        8193..=32768 => "high",
                        _ => "xhigh",
                    });
                }
                _ => {
                    return Err(invalid(
                        "thinking.type",
                        "`thinking.type` must be \"enabled\" (with `budget_tokens`), \"disabled\" or \"adaptive\"",
                    ))
                }
            }
        }
        check_context_management(self.context_management.as_ref())?;
        if let Some(metadata) = self
            .metadata
            .as_ref()
            .filter(|m| !m.is_null() && !m.is_object())
        {
            return Err(invalid(
                "metadata",
                format!(
                    "Invalid type for `metadata`: expected an object, got {}",
                    type_name(metadata)
                ),
            ));
        }
        let mut chat = Map::new();
        chat.insert("model".into(), json!(self.model));
        chat.insert("messages".into(), Json::Array(self.chat_messages()?));
        if let Some(effort) = reasoning_effort {
            chat.insert("reasoning_effort".into(), json!(effort));
        }
        if let Some(n) = self.max_tokens {
            chat.insert("max_tokens".into(), json!(n));
        }
        for (field, value) in [
            ("temperature", self.temperature.map(Json::from)),
            ("top_p", self.top_p.map(Json::from)),
            ("top_k", self.top_k.map(Json::from)),
        ] {
            if let Some(value) = value {
                chat.insert(field.into(), value);
            }
        }
        if let Some(stop) = self.stop_sequences.as_ref().filter(|s| !s.is_null()) {
            chat.insert("stop".into(), stop_sequences(stop)?);
        }
        let tools = match self.tools.as_ref().filter(|t| !t.is_null()) {
            Some(tools) => tools_of(tools)?,
            None => Vec::new(),
        };
        if let Some(choice) = self.tool_choice.as_ref().filter(|c| !c.is_null()) {
            let (choice, parallel) = tool_choice(choice, !tools.is_empty())?;
            if let Some(choice) = choice {
                chat.insert("tool_choice".into(), choice);
            }
            if let Some(parallel) = parallel {
                chat.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if !tools.is_empty() {
            chat.insert("tools".into(), Json::Array(tools));
        }
        if let Some(config) = self.output_config.as_ref().filter(|c| !c.is_null()) {
            if let Some(format) = output_format(config)? {
                chat.insert("response_format".into(), format);
            }
        }
        if stream {
            chat.insert("stream_options".into(), json!({"include_usage": true}));
        }
        let mut request = ChatCompletionRequest::from_json(&Json::Object(chat).to_string())?;
        for message in &mut request.messages {
            if let Some(crate::openai::MessageContent::Parts(parts)) = &mut message.content {
                for part in parts {
                    if let Some(Json::String(at)) = part.other.remove(image::AT_KEY) {
                        part.at = Some(at);
                    }
                }
            }
        }
        Ok(request)
    }
}

/// A user message: its `tool_result` blocks become `tool` messages, its text one user message.
/// Each `tool_result` answers one of `calls`, the ids of the previous message's `tool_use`s.
fn user_message(content: &Json, at: &str, calls: &[String], chat: &mut Vec<Json>) -> Result<()> {
    let blocks = match content {
        Json::String(text) => {
            chat.push(json!({"role": "user", "content": text}));
            return Ok(());
        }
        Json::Array(blocks) => blocks,
        other => {
            return Err(invalid(
                format!("{at}.content"),
                format!(
                    "Invalid type for `{at}.content`: expected a string or content blocks, got {}",
                    type_name(other)
                ),
            ))
        }
    };
    if blocks.is_empty() {
        return Err(invalid(
            format!("{at}.content"),
            format!("`{at}.content` must not be empty"),
        ));
    }
    let mut text = Vec::new();
    // With an image, the message keeps its blocks as chat parts (text and images in order).
    let mut parts: Option<Vec<Json>> = None;
    for (j, block) in blocks.iter().enumerate() {
        let here = format!("{at}.content[{j}]");
        match block.get("type").and_then(Json::as_str) {
            Some("image") => {
                let image = image::image_part(block, &here)?;
                let parts = parts.get_or_insert_with(|| {
                    text.iter()
                        .map(|t| json!({"type": "text", "text": t}))
                        .collect()
                });
                parts.push(image);
            }
            Some("text") => match block.get("text") {
                Some(Json::String(part)) => {
                    if let Some(parts) = parts.as_mut() {
                        parts.push(json!({"type": "text", "text": format!("\n{part}")}));
                    }
                    text.push(part.clone())
                }
                _ => {
                    return Err(invalid(
                        format!("{here}.text"),
                        format!("`{here}.text` must be a string"),
                    ))
                }
            },
            Some("tool_result") => {
                let id = block
                    .get("tool_use_id")
                    .and_then(Json::as_str)
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| {
                        invalid(
                            format!("{here}.tool_use_id"),
                            format!("`{here}` needs the `tool_use_id` of the call it answers"),
                        )
                    })?;
                if !calls.iter().any(|call| call == id) {
                    return Err(invalid(
                        format!("{here}.tool_use_id"),
                        format!(
                            "`{here}.tool_use_id` '{}' answers no `tool_use` block of the \
                             assistant turn before it: each `tool_result` block must answer a \
                             `tool_use` block of the previous assistant message (or messages, \
                             in a row)",
                            shown(id)
                        ),
                    ));
                }
                let result = match block.get("content") {
                    None | Some(Json::Null) => String::new(),
                    Some(content) => text_of(content, &format!("{here}.content"))?,
                };
                let result = if block.get("is_error") == Some(&Json::Bool(true)) {
                    format!("Error: {result}")
                } else {
                    result
                };
                chat.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
            kind => return Err(unsupported_block(&here, kind)),
        }
    }
    if let Some(parts) = parts {
        chat.push(json!({"role": "user", "content": parts}));
    } else if !text.is_empty() {
        chat.push(json!({"role": "user", "content": text.join("\n")}));
    }
    Ok(())
}

/// An assistant message: its text, and its `tool_use` blocks as tool calls. Thinking blocks
/// (of a conversation held with another model) are left out.
fn assistant_message(content: &Json, at: &str) -> Result<Json> {
    let blocks = match content {
        Json::String(text) => return Ok(json!({"role": "assistant", "content": text})),
        Json::Array(blocks) => blocks,
        other => {
            return Err(invalid(
                format!("{at}.content"),
                format!(
                    "Invalid type for `{at}.content`: expected a string or content blocks, got {}",
                    type_name(other)
                ),
            ))
        }
    };
    let (mut text, mut calls) = (String::new(), Vec::new());
    for (j, block) in blocks.iter().enumerate() {
        let here = format!("{at}.content[{j}]");
        match block.get("type").and_then(Json::as_str) {
            Some("text") => match block.get("text") {
                Some(Json::String(part)) => text.push_str(part),
                _ => {
                    return Err(invalid(
                        format!("{here}.text"),
                        format!("`{here}.text` must be a string"),
                    ))
                }
            },
            Some("tool_use") => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Json::as_str)
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| {
                            invalid(
                                format!("{here}.{name}"),
                                format!("`{here}` needs a string `{name}`"),
                            )
                        })
                };
                let (id, name) = (field("id")?, field("name")?);
                if calls.iter().any(|call: &Json| call["id"] == id) {
                    return Err(invalid(
                        format!("{here}.id"),
                        format!(
                            "`{here}.id` '{}' is the id of an earlier `tool_use` block of this \
                             message; each call needs its own id",
                            shown(id)
                        ),
                    ));
                }
                let input = match block.get("input") {
                    Some(input @ Json::Object(_)) => input.to_string(),
                    None | Some(Json::Null) => "{}".to_string(),
                    Some(_) => {
                        return Err(invalid(
                            format!("{here}.input"),
                            format!("`{here}.input` must be an object"),
                        ))
                    }
                };
                calls.push(json!({"id": id, "type": "function",
                    "function": {"name": name, "arguments": input}}));
            }
            Some("thinking" | "redacted_thinking") => {}
            kind => return Err(unsupported_block(&here, kind)),
        }
    }
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        // Calls alone: no content, as the OpenAI API writes such a turn.
        if text.is_empty() {
            message["content"] = Json::Null;
        }
        message["tool_calls"] = Json::Array(calls);
    }
    Ok(message)
}

/// `output_config.format` as the chat's `response_format`.
fn output_format(config: &Json) -> Result<Option<Json>> {
    let Json::Object(config) = config else {
        return Err(invalid(
            "output_config",
            "`output_config` must be an object",
        ));
    };
    if let Some(key) = config
        .keys()
        .find(|k| !["effort", "format"].contains(&k.as_str()))
    {
        return Err(invalid(
            format!("output_config.{}", shown(key)),
            format!(
                "Unrecognized request argument supplied: output_config.{}",
                shown(key)
            ),
        ));
    }
    let Some(format) = config.get("format").filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match (
        format.get("type").and_then(Json::as_str),
        format.get("schema"),
    ) {
        (Some("json_schema"), Some(schema @ Json::Object(_))) => Ok(Some(json!({
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema},
        }))),
        _ => Err(invalid(
            "output_config.format",
            "`output_config.format` must be {\"type\": \"json_schema\", \"schema\": {...}}",
        )),
    }
}

/// `context_management`: an object whose `edits` clear thinking only (nothing to clear here:
/// no thinking is kept). Clearing tool results would change the conversation, which ingle
/// does not do for the caller: refused, naming the edit.
fn check_context_management(value: Option<&Json>) -> Result<()> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Some(object) = value.as_object() else {
        return Err(invalid(
            "context_management",
            format!(
                "Invalid type for `context_management`: expected an object, got {}",
                type_name(value)
            ),
        ));
    };
    if let Some((field, _)) = object.iter().find(|(k, v)| *k != "edits" && !v.is_null()) {
        return Err(invalid(
            format!("context_management.{field}"),
            format!(
                "Unrecognized argument `context_management.{}`",
                shown(field)
            ),
        ));
    }
    let edits = match object.get("edits") {
        None | Some(Json::Null) => return Ok(()),
        Some(Json::Array(edits)) => edits,
        Some(other) => {
            return Err(invalid(
                "context_management.edits",
                format!(
                    "Invalid type for `context_management.edits`: expected an array, got {}",
                    type_name(other)
                ),
            ))
        }
    };
    for (i, edit) in edits.iter().enumerate() {
        let kind = edit.get("type").and_then(Json::as_str).unwrap_or_default();
        if !kind.starts_with("clear_thinking_") {
            return Err(invalid(
                format!("context_management.edits[{i}].type"),
                format!(
                    "The context edit '{}' is not supported by ingle: only clear_thinking edits \
                     (a local model keeps no thinking), and the conversation is read as sent",
                    shown(kind)
                ),
            ));
        }
    }
    Ok(())
}

fn stop_sequences(stop: &Json) -> Result<Json> {
    let list = stop
        .as_array()
        .filter(|l| l.iter().all(Json::is_string))
        .ok_or_else(|| {
            invalid(
                "stop_sequences",
                "`stop_sequences` must be a list of strings",
            )
        })?;
    if list.iter().any(|s| s.as_str() == Some("")) {
        return Err(invalid(
            "stop_sequences",
            "`stop_sequences` must not hold an empty string",
        ));
    }
    if list.len() > MAX_STOP_SEQUENCES {
        return Err(invalid(
            "stop_sequences",
            format!(
                "`stop_sequences` holds {} sequences; the local models take at most \
                 {MAX_STOP_SEQUENCES}",
                list.len()
            ),
        ));
    }
    Ok(Json::Array(list.clone()))
}

/// Client tools as function tools. Anthropic's server tools (web search, code execution...)
/// run on Anthropic's side; there is nothing here to run them.
fn tools_of(tools: &Json) -> Result<Vec<Json>> {
    let list = tools.as_array().ok_or_else(|| {
        invalid(
            "tools",
            format!(
                "Invalid type for `tools`: expected an array, got {}",
                type_name(tools)
            ),
        )
    })?;
    list.iter()
        .enumerate()
        .map(|(i, tool)| {
            let at = format!("tools[{i}]");
            match tool.get("type").and_then(Json::as_str) {
                None | Some("custom") => {}
                Some(kind) => {
                    return Err(invalid(
                        format!("{at}.type"),
                        format!(
                            "`{at}` is Anthropic's server tool '{}', which runs on Anthropic's \
                             side; ingle calls client tools (`name`, `description`, \
                             `input_schema`)",
                            shown(kind)
                        ),
                    ))
                }
            }
            let name = tool
                .get("name")
                .and_then(Json::as_str)
                .filter(|name| {
                    (1..=64).contains(&name.len())
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                })
                .ok_or_else(|| {
                    invalid(
                        format!("{at}.name"),
                        format!(
                            "`{at}.name` must be 1 to 64 letters, digits, underscores or dashes"
                        ),
                    )
                })?;
            let schema = match tool.get("input_schema") {
                Some(schema @ Json::Object(_)) => schema.clone(),
                _ => {
                    return Err(invalid(
                        format!("{at}.input_schema"),
                        format!("`{at}.input_schema` must be a JSON schema object"),
                    ))
                }
            };
            let mut function = json!({"name": name, "parameters": schema});
            if let Some(description) = tool.get("description").and_then(Json::as_str) {
                function["description"] = json!(description);
            }
            Ok(json!({"type": "function", "function": function}))
        })
        .collect()
}

/// `tool_choice` as the chat's, and `parallel_tool_calls` from `disable_parallel_tool_use`.
fn tool_choice(choice: &Json, has_tools: bool) -> Result<(Option<Json>, Option<bool>)> {
    let parallel = match choice.get("disable_parallel_tool_use") {
        Some(Json::Bool(disable)) => Some(!disable),
        _ => None,
    };
    let kind = choice.get("type").and_then(Json::as_str);
    let chat = match kind {
        Some("auto") => Some(json!("auto")),
        Some("none") => Some(json!("none")),
        Some("any") => Some(json!("required")),
        Some("tool") => {
            let name = choice.get("name").and_then(Json::as_str).ok_or_else(|| {
                invalid(
                    "tool_choice.name",
                    "`tool_choice` of type tool needs `name`",
                )
            })?;
            Some(json!({"type": "function", "function": {"name": name}}))
        }
        _ => {
            return Err(invalid(
                "tool_choice.type",
                "`tool_choice.type` must be \"auto\", \"any\", \"tool\" or \"none\"",
            ))
        }
    };
    if !has_tools && matches!(kind, Some("any" | "tool")) {
        return Err(invalid(
            "tool_choice",
            "`tool_choice` asks for a tool call, but no `tools` were given",
        ));
    }
    // Without tools, the chat takes no tool choice at all.
    Ok((chat.filter(|_| has_tools), parallel.filter(|_| has_tools)))
}

mod image;
#[cfg(test)]
mod tests;
