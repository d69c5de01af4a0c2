//! The request's structured options read from JSON, each error naming the field.

use super::{LogitBias, ResponseFormat, Tool, ToolChoice, Tools, MAX_STOP_SEQUENCES};
use crate::error::{shown, Error, Result};
use serde_json::{json, Value as Json};

/// `stop`: at most [`MAX_STOP_SEQUENCES`] non-empty strings.
pub(super) fn stop_sequences(stop: Vec<String>) -> Result<Vec<String>> {
    let invalid = |msg: &str| Error::invalid("stop", msg.to_string());
    if stop.len() > MAX_STOP_SEQUENCES {
        return Err(invalid("`stop` may hold at most 4 sequences"));
    }
    if stop.iter().any(String::is_empty) {
        return Err(invalid("`stop` sequences must not be empty"));
    }
    Ok(stop)
}

/// A tool's name as OpenAI allows it: 1–64 of `a-z A-Z 0-9 _ -`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub(super) fn tools(json: Json) -> Result<Option<Tools>> {
    let list = json
        .as_array()
        .ok_or_else(|| Error::invalid("tools", "`tools` must be a list of function tools"))?;
    if list.is_empty() {
        return Ok(None);
    }
    let mut read: Vec<Tool> = Vec::with_capacity(list.len());
    for (i, tool) in list.iter().enumerate() {
        let at = |field: &str| format!("tools[{i}]{field}");
        let kind = tool.get("type").and_then(Json::as_str);
        if kind != Some("function") {
            return Err(Error::invalid(
                at(".type"),
                format!(
                    "`{}` must be \"function\" (the only tool type a local model can call)",
                    at(".type")
                ),
            ));
        }
        let function = tool
            .get("function")
            .filter(|f| f.is_object())
            .ok_or_else(|| {
                Error::invalid(at(".function"), format!("Missing `{}`", at(".function")))
            })?;
        let name = function.get("name").and_then(Json::as_str).unwrap_or("");
        if !valid_name(name) {
            return Err(Error::invalid(
                at(".function.name"),
                format!(
                    "`{}` must be 1 to 64 letters, digits, underscores or dashes (got '{}')",
                    at(".function.name"),
                    shown(name)
                ),
            ));
        }
        if read.iter().any(|t| t.name == name) {
            return Err(Error::invalid(
                at(".function.name"),
                format!("Two tools are named `{name}`"),
            ));
        }
        let parameters = match function.get("parameters") {
            None | Some(Json::Null) => json!({"type": "object", "properties": {}}),
            Some(p @ Json::Object(_)) => p.clone(),
            Some(_) => {
                return Err(Error::invalid(
                    at(".function.parameters"),
                    format!(
                        "`{}` must be a JSON schema object",
                        at(".function.parameters")
                    ),
                ))
            }
        };
        let strict = function.get("strict") == Some(&Json::Bool(true))
            && function.get("parameters").is_some();
        read.push(Tool {
            name: name.to_string(),
            parameters,
            strict,
        });
    }
    Ok(Some(Tools { json, list: read }))
}

pub(super) fn tool_choice(json: &Json) -> Result<ToolChoice> {
    let invalid = || {
        Error::invalid(
            "tool_choice",
            "`tool_choice` must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \
             \"function\": {\"name\": ...}}",
        )
    };
    let kind = match json {
        Json::String(s) => s.as_str(),
        Json::Object(o) => o.get("type").and_then(Json::as_str).ok_or_else(invalid)?,
        _ => return Err(invalid()),
    };
    match kind {
        "auto" => Ok(ToolChoice::Auto),
        "none" => Ok(ToolChoice::None),
        "required" => Ok(ToolChoice::Required),
        "function" => json
            .pointer("/function/name")
            .and_then(Json::as_str)
            .map(|name| ToolChoice::Function(name.to_string()))
            .ok_or_else(|| {
                Error::invalid(
                    "tool_choice.function.name",
                    "`tool_choice` of type function needs `function.name`",
                )
            }),
        _ => Err(invalid()),
    }
}

pub(super) fn response_format(json: &Json) -> Result<Option<ResponseFormat>> {
    let kind = json.get("type").and_then(Json::as_str).ok_or_else(|| {
        Error::invalid(
            "response_format.type",
            "`response_format` needs a `type`: text, json_object or json_schema",
        )
    })?;
    match kind {
        "text" => Ok(None),
        "json_object" => Ok(Some(ResponseFormat {
            kind: "json_object",
            schema: json!({"type": "object"}),
            strict: false,
            param: "response_format",
        })),
        "json_schema" => {
            let spec = json
                .get("json_schema")
                .filter(|s| s.is_object())
                .ok_or_else(|| {
                    Error::invalid(
                        "response_format.json_schema",
                        "`response_format` of type json_schema needs `json_schema`: {name, schema}",
                    )
                })?;
            match spec.get("name").and_then(Json::as_str) {
                Some(name) if valid_name(name) => {}
                _ => {
                    return Err(Error::invalid(
                        "response_format.json_schema.name",
                        "`response_format.json_schema.name` must be 1 to 64 letters, digits, \
                         underscores or dashes",
                    ))
                }
            }
            let schema = match spec.get("schema") {
                Some(schema @ (Json::Object(_) | Json::Bool(true))) => schema.clone(),
                None => json!({}),
                Some(_) => {
                    return Err(Error::invalid(
                        "response_format.json_schema.schema",
                        "`response_format.json_schema.schema` must be a JSON schema object",
                    ))
                }
            };
            Ok(Some(ResponseFormat {
                kind: "json_schema",
                schema,
                strict: spec.get("strict") == Some(&Json::Bool(true)),
                param: "response_format.json_schema.schema",
            }))
        }
        other => Err(Error::invalid(
            "response_format.type",
            format!(
                "Invalid value for `response_format.type`: '{}'; supported are text, \
                 json_object and json_schema",
                shown(other)
            ),
        )),
    }
}

/// A `logit_bias` key as OpenAI writes token ids: decimal digits, no sign, no spaces, no leading
/// zero (`" 5"`, `"+5"` and `"0005"` are not token 5: they are refused, not guessed at).
pub(super) fn token_id(key: &str) -> Option<u32> {
    let canonical = !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_digit())
        && (key == "0" || !key.starts_with('0'));
    canonical.then(|| key.parse().ok()).flatten()
}

pub(super) fn logit_bias(json: &Json) -> Result<Vec<LogitBias>> {
    let Some(map) = json.as_object() else {
        return Err(Error::invalid(
            "logit_bias",
            "`logit_bias` must map token ids to biases",
        ));
    };
    let mut biases = Vec::with_capacity(map.len());
    for (key, bias) in map {
        let field = format!("logit_bias.{}", shown(key));
        let bias = bias
            .as_f64()
            .filter(|b| (-100.0..=100.0).contains(b))
            .ok_or_else(|| {
                Error::invalid(
                    field.clone(),
                    format!("`{field}` must be a number from -100 to 100"),
                )
            })?;
        // As OpenAI says: -100 bans the token, 100 makes it the only choice in practice.
        let bias = if bias <= -100.0 {
            f32::NEG_INFINITY
        } else {
            bias as f32
        };
        biases.push(LogitBias {
            key: key.clone(),
            token: token_id(key),
            bias,
        });
    }
    Ok(biases)
}
