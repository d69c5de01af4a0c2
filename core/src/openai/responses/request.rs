//! A Responses request, read and checked: every field ingle cannot honour is refused by name;
//! input items are normalised, and become chat messages.

use crate::error::{shown, Error, Result};
use crate::predict::random_id;
use serde_json::{json, Map, Value as Json};

/// Request fields ingle reads. Others are refused by name, but for those whose value asks for
/// nothing (`null`, or the default written out): SDKs send some of them as a matter of course.
const FIELDS: [&str; 22] = [
    "model",
    "input",
    "instructions",
    "previous_response_id",
    "store",
    "stream",
    "metadata",
    "max_output_tokens",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "allow_repeated_tool_calls",
    "text",
    "user",
    "stream_options",
    "reasoning",
    "presence_penalty",
    "frequency_penalty",
    "safety_identifier",
    "prompt_cache_key",
];

/// A Responses request, checked: every field ingle cannot honour was refused by name.
#[derive(Debug, Clone)]
pub struct ResponseRequest {
    pub model: String,
    /// This turn's input items, normalised (messages with parts, ids on every item).
    pub(super) input: Vec<Json>,
    pub(super) instructions: Option<String>,
    pub(super) previous_response_id: Option<String>,
    pub(super) store: bool,
    pub stream: bool,
    pub(super) metadata: Map<String, Json>,
    pub(super) max_output_tokens: Option<i64>,
    pub(super) temperature: Option<f64>,
    pub(super) top_p: Option<f64>,
    /// As given (the Responses shape), echoed in the response.
    pub(super) tools: Vec<Json>,
    pub(super) tool_choice: Option<Json>,
    pub(super) parallel_tool_calls: Option<bool>,
    /// ingle's `allow_repeated_tool_calls` (docs/tools.md).
    pub(super) allow_repeated_tool_calls: Option<bool>,
    /// `text.format`, as given (default `{"type": "text"}`).
    pub(super) format: Json,
    pub(super) user: Option<String>,
    /// `reasoning.effort`, for a model whose predictor declares `ReasoningEffort`.
    pub(super) reasoning_effort: Option<String>,
    pub(super) presence_penalty: Option<f64>,
    pub(super) frequency_penalty: Option<f64>,
    /// Echoed; they steer OpenAI's own abuse detection and caching, nothing here.
    pub(super) safety_identifier: Option<String>,
    pub(super) prompt_cache_key: Option<String>,
}

impl ResponseRequest {
    /// Parses and checks the JSON body of a request; an error names the field at fault.
    pub fn from_json(json: &str) -> Result<Self> {
        let body: Map<String, Json> = crate::openai::types::from_json(json)?;
        ResponseRequest::from_map(body)
    }

    fn from_map(mut body: Map<String, Json>) -> Result<Self> {
        for (key, value) in &body {
            if !FIELDS.contains(&key.as_str()) && !asks_nothing(key, value) {
                return Err(unsupported_field(key));
            }
        }
        let model = match body.remove("model") {
            Some(Json::String(model)) if !model.is_empty() => model,
            Some(Json::String(_)) | None => {
                return Err(Error::invalid(
                    "model",
                    "Missing required parameter: `model`",
                ))
            }
            Some(other) => return Err(not_a("model", "a string", &other)),
        };
        let input = match body.remove("input") {
            Some(Json::String(text)) => vec![message_item("user", &text, None)],
            Some(Json::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| input_item(item, &format!("input[{i}]")))
                .collect::<Result<_>>()?,
            Some(Json::Null) | None => {
                return Err(Error::invalid(
                    "input",
                    "Missing required parameter: `input`",
                ))
            }
            Some(other) => return Err(not_a("input", "a string or a list of items", &other)),
        };
        let text = |body: &mut Map<String, Json>, field: &str| -> Result<Option<String>> {
            match body.remove(field) {
                Some(Json::String(text)) => Ok(Some(text)),
                Some(Json::Null) | None => Ok(None),
                Some(other) => Err(not_a(field, "a string", &other)),
            }
        };
        let instructions = text(&mut body, "instructions")?;
        let previous_response_id = text(&mut body, "previous_response_id")?;
        let user = text(&mut body, "user")?;
        let flag = |body: &mut Map<String, Json>, field: &str| -> Result<Option<bool>> {
            match body.remove(field) {
                Some(Json::Bool(flag)) => Ok(Some(flag)),
                Some(Json::Null) | None => Ok(None),
                Some(other) => Err(not_a(field, "a boolean", &other)),
            }
        };
        let store = flag(&mut body, "store")?.unwrap_or(true);
        let stream = flag(&mut body, "stream")?.unwrap_or(false);
        let parallel_tool_calls = flag(&mut body, "parallel_tool_calls")?;
        let allow_repeated_tool_calls = flag(&mut body, "allow_repeated_tool_calls")?;
        let number = |body: &mut Map<String, Json>, field: &str| -> Result<Option<f64>> {
            match body.remove(field) {
                Some(Json::Number(n)) => Ok(n.as_f64()),
                Some(Json::Null) | None => Ok(None),
                Some(other) => Err(not_a(field, "a number", &other)),
            }
        };
        let temperature = number(&mut body, "temperature")?;
        let top_p = number(&mut body, "top_p")?;
        let presence_penalty = number(&mut body, "presence_penalty")?;
        let frequency_penalty = number(&mut body, "frequency_penalty")?;
        let safety_identifier = text(&mut body, "safety_identifier")?;
        let prompt_cache_key = text(&mut body, "prompt_cache_key")?;
        let reasoning_effort = match body.remove("reasoning") {
            Some(Json::Object(mut reasoning)) => {
                match reasoning.remove("summary") {
                    None | Some(Json::Null) => {}
                    Some(Json::String(s)) if s == "auto" => {}
                    Some(other) => {
                        return Err(Error::invalid(
                            "reasoning.summary",
                            format!(
                                "`reasoning.summary` {} is not supported: ingle's models give \
                                 their reasoning itself, not a summary of it (leave it out or \
                                 `auto`)",
                                shown(&other.to_string())
                            ),
                        ))
                    }
                }
                let effort = match reasoning.remove("effort") {
                    None | Some(Json::Null) => None,
                    Some(Json::String(effort))
                        if crate::predict::REASONING_EFFORTS.contains(&effort.as_str()) =>
                    {
                        Some(effort)
                    }
                    Some(other) => {
                        return Err(Error::invalid(
                            "reasoning.effort",
                            format!(
                                "Invalid value for `reasoning.effort`: {}; it must be one of {}",
                                shown(&other.to_string()),
                                crate::predict::REASONING_EFFORTS.join(", ")
                            ),
                        ))
                    }
                };
                if let Some((key, _)) = reasoning.iter().find(|(_, v)| !v.is_null()) {
                    return Err(Error::invalid(
                        format!("reasoning.{}", shown(key)),
                        format!(
                            "Unrecognized request argument supplied: reasoning.{}",
                            shown(key)
                        ),
                    ));
                }
                effort
            }
            Some(Json::Null) | None => None,
            Some(other) => return Err(not_a("reasoning", "an object", &other)),
        };
        let max_output_tokens = match body.remove("max_output_tokens") {
            Some(Json::Number(n)) => match n.as_i64().filter(|n| *n >= 1) {
                Some(n) => Some(n),
                None => {
                    return Err(Error::invalid(
                        "max_output_tokens",
                        format!(
                            "Invalid value for `max_output_tokens`: {n} (an integer of at least 1)"
                        ),
                    ))
                }
            },
            Some(Json::Null) | None => None,
            Some(other) => return Err(not_a("max_output_tokens", "an integer", &other)),
        };
        let metadata = match body.remove("metadata") {
            Some(Json::Object(metadata)) => check_metadata(metadata)?,
            Some(Json::Null) | None => Map::new(),
            Some(other) => return Err(not_a("metadata", "an object of strings", &other)),
        };
        let tools = match body.remove("tools") {
            Some(Json::Array(tools)) => {
                for (i, tool) in tools.iter().enumerate() {
                    check_tool(tool, i)?;
                }
                tools
            }
            Some(Json::Null) | None => Vec::new(),
            Some(other) => return Err(not_a("tools", "a list of function tools", &other)),
        };
        let tool_choice = match body.remove("tool_choice") {
            Some(Json::Null) | None => None,
            Some(choice) => {
                chat_tool_choice(&choice)?;
                Some(choice)
            }
        };
        let format = match body.remove("text") {
            Some(Json::Object(mut text)) => {
                if let Some(verbosity) = text.remove("verbosity") {
                    if !matches!(verbosity.as_str(), None | Some("medium")) && !verbosity.is_null()
                    {
                        return Err(Error::invalid(
                            "text.verbosity",
                            "`text.verbosity` is not supported: ingle's models have one verbosity",
                        ));
                    }
                }
                let format = text.remove("format").unwrap_or(Json::Null);
                if let Some(key) = text.keys().next() {
                    return Err(Error::invalid(
                        format!("text.{}", shown(key)),
                        format!(
                            "Unrecognized request argument supplied: text.{}",
                            shown(key)
                        ),
                    ));
                }
                match format {
                    Json::Null => json!({"type": "text"}),
                    format => {
                        chat_response_format(&format)?;
                        format
                    }
                }
            }
            Some(Json::Null) | None => json!({"type": "text"}),
            Some(other) => return Err(not_a("text", "an object", &other)),
        };
        if let Some(options) = body.remove("stream_options") {
            if !stream && !options.is_null() {
                return Err(Error::invalid(
                    "stream_options",
                    "`stream_options` is only allowed with `stream: true`",
                ));
            }
        }
        Ok(ResponseRequest {
            model,
            input,
            instructions,
            previous_response_id,
            store,
            stream,
            metadata,
            max_output_tokens,
            temperature,
            top_p,
            tools,
            tool_choice,
            parallel_tool_calls,
            allow_repeated_tool_calls,
            format,
            user,
            reasoning_effort,
            presence_penalty,
            frequency_penalty,
            safety_identifier,
            prompt_cache_key,
        })
    }
}

/// Whether a field ingle does not read asks for nothing it would fail to do: `null`, `false`,
/// an empty list, or the value that means what ingle does anyway.
fn asks_nothing(key: &str, value: &Json) -> bool {
    match (key, value) {
        (_, Json::Null) | (_, Json::Bool(false)) => true,
        ("tools", Json::Array(items)) => items.is_empty(),
        // Encrypted reasoning, for a client that replays it (Codex): ingle's models make no
        // reasoning items, so there is none to include.
        ("include", Json::Array(items)) => items
            .iter()
            .all(|item| item.as_str() == Some("reasoning.encrypted_content")),
        ("truncation", Json::String(t)) => t == "disabled",
        ("service_tier", Json::String(t)) => t == "auto" || t == "default",
        ("top_logprobs", Json::Number(n)) => n.as_u64() == Some(0),
        // A client's own bookkeeping (Codex sends its thread and turn ids), never echoed.
        ("client_metadata", Json::Object(_)) => true,
        _ => false,
    }
}

fn unsupported_field(key: &str) -> Error {
    let shown_key = shown(key);
    let message = match key {
        "background" => "`background` is not supported: ingle runs a response while its request waits (stream it to see it as it is made)".to_string(),
        "include" => "`include` is not supported: a response already holds all that ingle makes".to_string(),
        "conversation" => "`conversation` is not supported: continue a conversation with `previous_response_id`".to_string(),
        "prompt" => "`prompt` (a stored prompt template) is not supported: send `input` and `instructions`".to_string(),
        _ => format!("Unrecognized request argument supplied: {shown_key}"),
    };
    Error::invalid(key.to_string(), message)
}

fn not_a(field: &str, what: &str, value: &Json) -> Error {
    Error::invalid(
        field.to_string(),
        format!(
            "Invalid type for `{}`: expected {what}, but got {}",
            shown(field),
            kind_of(value)
        ),
    )
}

fn kind_of(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// OpenAI's bounds: 16 keys, keys up to 64 characters, values strings up to 512.
fn check_metadata(metadata: Map<String, Json>) -> Result<Map<String, Json>> {
    if metadata.len() > 16 {
        return Err(Error::invalid(
            "metadata",
            format!("`metadata` holds at most 16 keys (got {})", metadata.len()),
        ));
    }
    for (key, value) in &metadata {
        let param = format!("metadata.{}", shown(key));
        if key.chars().count() > 64 {
            return Err(Error::invalid(
                param,
                "A `metadata` key has at most 64 characters",
            ));
        }
        match value {
            Json::String(text) if text.chars().count() <= 512 => {}
            Json::String(_) => {
                return Err(Error::invalid(
                    param,
                    "A `metadata` value has at most 512 characters",
                ))
            }
            other => return Err(not_a(&param, "a string", other)),
        }
    }
    Ok(metadata)
}

/// A function tool in the Responses shape: `{type: "function", name, description, parameters,
/// strict}`. Built-in tools (web search, file search, ...) are OpenAI's own services.
fn check_tool(tool: &Json, i: usize) -> Result<()> {
    let Some(tool) = tool.as_object() else {
        return Err(not_a(&format!("tools[{i}]"), "an object", tool));
    };
    match tool.get("type").and_then(Json::as_str) {
        Some("function") => {}
        Some(kind) => {
            return Err(Error::invalid(
                format!("tools[{i}].type"),
                format!(
                    "Tools of type `{}` are not supported: they are services of OpenAI's; ingle \
                     serves `function` tools (your code runs them)",
                    shown(kind)
                ),
            ))
        }
        None => {
            return Err(Error::invalid(
                format!("tools[{i}].type"),
                "Missing required parameter: `tools[].type` (`function`)",
            ))
        }
    }
    if !tool.get("name").is_some_and(Json::is_string) {
        return Err(Error::invalid(
            format!("tools[{i}].name"),
            "Missing required parameter: `tools[].name`",
        ));
    }
    if let Some(strict) = tool
        .get("strict")
        .filter(|s| !s.is_null() && !s.is_boolean())
    {
        return Err(not_a(&format!("tools[{i}].strict"), "a boolean", strict));
    }
    for key in tool.keys() {
        if !["type", "name", "description", "parameters", "strict"].contains(&key.as_str()) {
            return Err(Error::invalid(
                format!("tools[{i}].{}", shown(key)),
                format!("Unrecognized tool argument supplied: {}", shown(key)),
            ));
        }
    }
    Ok(())
}

/// `tool_choice` as chat takes it: `auto`, `none`, `required`, or `{type: "function", name}`.
pub(super) fn chat_tool_choice(choice: &Json) -> Result<Json> {
    match choice {
        Json::String(mode) if ["auto", "none", "required"].contains(&mode.as_str()) => {
            Ok(choice.clone())
        }
        Json::Object(object) if object.get("type").and_then(Json::as_str) == Some("function") => {
            match object.get("name").and_then(Json::as_str) {
                Some(name) => Ok(json!({"type": "function", "function": {"name": name}})),
                None => Err(Error::invalid(
                    "tool_choice.name",
                    "Missing required parameter: `tool_choice.name`",
                )),
            }
        }
        _ => Err(Error::invalid(
            "tool_choice",
            "`tool_choice` must be `auto`, `none`, `required` or `{\"type\": \"function\", \
             \"name\": ...}`: ingle serves function tools only",
        )),
    }
}

/// `text.format` as chat's `response_format`.
pub(super) fn chat_response_format(format: &Json) -> Result<Option<Json>> {
    let kind = format.get("type").and_then(Json::as_str);
    match kind {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let Some(schema) = format.get("schema") else {
                return Err(Error::invalid(
                    "text.format.schema",
                    "Missing required parameter: `text.format.schema`",
                ));
            };
            let mut json_schema = json!({
                "name": format.get("name").cloned().unwrap_or(json!("response")),
                "schema": schema,
            });
            match format.get("strict") {
                None | Some(Json::Null) => {}
                Some(Json::Bool(strict)) => json_schema["strict"] = json!(strict),
                Some(other) => return Err(not_a("text.format.strict", "a boolean", other)),
            }
            match format.get("description") {
                None | Some(Json::Null) => {}
                Some(Json::String(text)) => json_schema["description"] = json!(text),
                Some(other) => return Err(not_a("text.format.description", "a string", other)),
            }
            Ok(Some(
                json!({"type": "json_schema", "json_schema": json_schema}),
            ))
        }
        _ => Err(Error::invalid(
            "text.format.type",
            "`text.format.type` must be `text`, `json_object` or `json_schema`",
        )),
    }
}

/// A message item with one text part (`input_text`, or `output_text` for the assistant).
fn message_item(role: &str, text: &str, id: Option<String>) -> Json {
    let part = if role == "assistant" {
        json!({"type": "output_text", "text": text, "annotations": []})
    } else {
        json!({"type": "input_text", "text": text})
    };
    json!({
        "id": id.unwrap_or_else(|| random_id("msg_")),
        "type": "message",
        "role": role,
        "status": "completed",
        "content": [part],
    })
}

/// One input item, checked and normalised. `at` is its place (`input[2]`), for errors.
fn input_item(item: Json, at: &str) -> Result<Json> {
    let Json::Object(item) = item else {
        return Err(not_a(at, "an object (an item)", &item));
    };
    let string = |key: &str| -> Result<String> {
        match item.get(key) {
            Some(Json::String(text)) => Ok(text.clone()),
            None | Some(Json::Null) => Err(Error::invalid(
                format!("{at}.{key}"),
                format!("Missing required parameter: `{at}.{key}`"),
            )),
            Some(other) => Err(not_a(&format!("{at}.{key}"), "a string", other)),
        }
    };
    let id = match item.get("id") {
        None | Some(Json::Null) => None,
        Some(Json::String(id)) => Some(id.clone()),
        Some(other) => return Err(not_a(&format!("{at}.id"), "a string", other)),
    };
    let kind = match item.get("type") {
        None | Some(Json::Null) => "message",
        Some(Json::String(kind)) => kind.as_str(),
        Some(other) => return Err(not_a(&format!("{at}.type"), "a string", other)),
    };
    match kind {
        "message" => {
            let role = string("role")?;
            if !["user", "system", "developer", "assistant"].contains(&role.as_str()) {
                return Err(Error::invalid(
                    format!("{at}.role"),
                    format!(
                        "Invalid value for `{at}.role`: '{}' (one of user, system, developer, \
                         assistant)",
                        shown(&role)
                    ),
                ));
            }
            let text = match item.get("content") {
                Some(Json::String(text)) => text.clone(),
                Some(Json::Array(parts))
                    if parts.iter().any(|p| {
                        matches!(
                            p.get("type").and_then(Json::as_str),
                            Some("input_image" | "input_audio")
                        )
                    }) =>
                {
                    // Media: the parts kept, each checked (decoded later, for the model).
                    let mut content = Vec::with_capacity(parts.len());
                    for (j, part) in parts.iter().enumerate() {
                        content.push(media_or_text_part(
                            part,
                            &format!("{at}.content[{j}]"),
                            &role,
                        )?);
                    }
                    return Ok(json!({
                        "id": id.unwrap_or_else(|| random_id("msg_")),
                        "type": "message",
                        "role": role,
                        "status": "completed",
                        "content": content,
                    }));
                }
                Some(Json::Array(parts)) => {
                    let mut text = String::new();
                    for (j, part) in parts.iter().enumerate() {
                        text.push_str(&part_text(part, &format!("{at}.content[{j}]"))?);
                    }
                    text
                }
                None | Some(Json::Null) => {
                    return Err(Error::invalid(
                        format!("{at}.content"),
                        format!("Missing required parameter: `{at}.content`"),
                    ))
                }
                Some(other) => {
                    return Err(not_a(
                        &format!("{at}.content"),
                        "a string or a list of parts",
                        other,
                    ))
                }
            };
            Ok(message_item(&role, &text, id))
        }
        "function_call" => Ok(json!({
            "id": id.unwrap_or_else(|| random_id("fc_")),
            "type": "function_call",
            "status": "completed",
            "call_id": string("call_id")?,
            "name": string("name")?,
            "arguments": string("arguments")?,
        })),
        "function_call_output" => {
            let output = match item.get("output") {
                Some(Json::String(text)) => text.clone(),
                Some(Json::Array(parts)) => {
                    let mut text = String::new();
                    for (j, part) in parts.iter().enumerate() {
                        text.push_str(&part_text(part, &format!("{at}.output[{j}]"))?);
                    }
                    text
                }
                _ => string("output")?,
            };
            Ok(json!({
                "id": id.unwrap_or_else(|| random_id("fco_")),
                "type": "function_call_output",
                "status": "completed",
                "call_id": string("call_id")?,
                "output": output,
            }))
        }
        // A client that replays a response's output (Codex) sends its reasoning items back.
        "reasoning" => {
            let mut item = item.clone();
            item.insert("id".into(), json!(id.unwrap_or_else(|| random_id("rs_"))));
            Ok(Json::Object(item))
        }
        kind => Err(Error::invalid(
            format!("{at}.type"),
            format!(
                "Input items of type `{}` are not supported: ingle takes `message`, \
                 `function_call`, `function_call_output` and `reasoning` items",
                shown(kind)
            ),
        )),
    }
}

/// A part of a message with media: `input_text`, `input_image` (`image_url`: a `data:` URL or an
/// http(s) one; `detail`) or `input_audio` (`{data, format}`), as given.
fn media_or_text_part(part: &Json, at: &str, role: &str) -> Result<Json> {
    let kind = part.get("type").and_then(Json::as_str);
    if matches!(kind, Some("input_image" | "input_audio")) && role != "user" {
        return Err(Error::invalid(
            at.to_string(),
            format!("`{at}`: image and audio parts are only for user messages, not {role} ones"),
        ));
    }
    let known: &[&str] = match kind {
        Some("input_image") => &["type", "image_url", "detail", "file_id"],
        Some("input_audio") => &["type", "input_audio"],
        _ => return part_text(part, at).map(|text| json!({"type": "input_text", "text": text})),
    };
    if let Some(key) = part
        .as_object()
        .and_then(|p| p.keys().find(|k| !known.contains(&k.as_str())))
    {
        return Err(Error::invalid(
            format!("{at}.{}", shown(key)),
            format!("Unrecognized field `{at}.{}`", shown(key)),
        ));
    }
    if kind == Some("input_audio") {
        let audio = part.get("input_audio").and_then(Json::as_object);
        for key in ["data", "format"] {
            if !audio.is_some_and(|a| a.get(key).is_some_and(Json::is_string)) {
                return Err(Error::invalid(
                    format!("{at}.input_audio.{key}"),
                    format!(
                        "Missing required parameter: `{at}.input_audio.{key}` (`input_audio` is \
                         `{{\"data\": <base64>, \"format\": \"wav\"}}`)"
                    ),
                ));
            }
        }
    }
    if kind == Some("input_image") {
        if part.get("file_id").is_some_and(|f| !f.is_null()) {
            return Err(Error::invalid(
                format!("{at}.file_id"),
                format!("`{at}.file_id`: ingle keeps no uploaded files; send the image as `image_url` (a base64 `data:` URL)"),
            ));
        }
        match part.get("image_url") {
            Some(Json::String(_)) => {}
            _ => {
                return Err(Error::invalid(
                    format!("{at}.image_url"),
                    format!("Missing required parameter: `{at}.image_url` (a `data:` URL)"),
                ))
            }
        }
        match part.get("detail") {
            None | Some(Json::Null) => {}
            Some(Json::String(d)) if ["auto", "low", "high"].contains(&d.as_str()) => {}
            Some(other) => {
                return Err(Error::invalid(
                    format!("{at}.detail"),
                    format!(
                        "Invalid value for `{at}.detail`: {}; it must be 'auto', 'low' or 'high'",
                        shown(&other.to_string())
                    ),
                ))
            }
        }
    }
    Ok(part.clone())
}

/// The text of a content part: `input_text` or `output_text`. Files are refused (ingle keeps
/// no files); images and audio are taken only in a user message ([`media_or_text_part`]).
fn part_text(part: &Json, at: &str) -> Result<String> {
    match part.get("type").and_then(Json::as_str) {
        Some("input_text" | "output_text") => match part.get("text") {
            Some(Json::String(text)) => Ok(text.clone()),
            Some(other) => Err(not_a(&format!("{at}.text"), "a string", other)),
            None => Err(Error::invalid(
                format!("{at}.text"),
                format!("Missing required parameter: `{at}.text`"),
            )),
        },
        Some("input_file") => Err(Error::invalid(
            format!("{at}.type"),
            format!(
                "`{at}`: `input_file` parts are not supported: ingle reads no files; send the \
                 file's text as an `input_text` part"
            ),
        )),
        Some(kind) => Err(Error::invalid(
            format!("{at}.type"),
            format!(
                "Content parts of type `{}` are not supported: ingle takes `input_text`, \
                 `output_text`, and in user messages `input_image` and `input_audio`",
                shown(kind)
            ),
        )),
        None => Err(Error::invalid(
            format!("{at}.type"),
            format!("Missing required parameter: `{at}.type`"),
        )),
    }
}
