//! A chat request's tool, output-format, log-probability and logit-bias options, read and
//! checked from the predictor's inputs. The OpenAI layer checks their shape too, but a
//! prediction may come straight from `predictions.create`, so the backend checks what it uses;
//! errors name the input (`tools[0].function.name`, `logit_bias.99999`...).

use super::constrain::{self, ToolSpec};
use crate::error::{shown, Error, Result};
use crate::predict::Inputs;
use crate::value::Value;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;
use serde_json::{json, Value as Json};

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Function(String),
}

/// The tools of a request: as given (for the chat template), and what the grammar needs.
pub struct Tools {
    pub json: Json,
    pub specs: Vec<ToolSpec>,
}

/// `response_format` json_object or json_schema.
pub struct JsonFormat {
    /// `json_object` or `json_schema`, for messages.
    pub kind: &'static str,
    pub schema: Json,
    /// The field an error about the schema names.
    pub param: &'static str,
}

pub struct RequestOptions {
    pub tools: Option<Tools>,
    pub tool_choice: ToolChoice,
    pub parallel_tool_calls: bool,
    /// ingle's `allow_repeated_tool_calls`: a call repeating an earlier one of the turn does
    /// not end the turn (docs/tools.md).
    pub allow_repeated_tool_calls: bool,
    pub response_format: Option<JsonFormat>,
    /// How many alternatives to report with each token's log probability, when asked.
    pub logprobs: Option<usize>,
    pub logit_bias: Vec<LlamaLogitBias>,
}

impl RequestOptions {
    pub fn read(inputs: &Inputs, n_vocab: i32) -> Result<Self> {
        let tools = match inputs.get("tools").filter(|v| !v.is_null()) {
            Some(value) => tools(value)?,
            None => None,
        };
        let tool_choice = match inputs.get("tool_choice").filter(|v| !v.is_null()) {
            Some(value) => tool_choice(value)?,
            None => ToolChoice::Auto,
        };
        if tools.is_none() && matches!(tool_choice, ToolChoice::Required | ToolChoice::Function(_))
        {
            return Err(Error::invalid(
                "tool_choice",
                "`tool_choice` asks for a tool call, but no `tools` were given",
            ));
        }
        let flag = |name: &str, default: bool| match inputs.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Error::invalid(name, format!("`{name}` must be a boolean"))),
        };
        let parallel_tool_calls = flag("parallel_tool_calls", true)?;
        let allow_repeated_tool_calls = flag("allow_repeated_tool_calls", false)?;
        let response_format = match inputs.get("response_format").filter(|v| !v.is_null()) {
            Some(value) => response_format(value)?,
            None => None,
        };
        let logprobs = match inputs.get("logprobs").filter(|v| !v.is_null()) {
            Some(value) => match value.as_i64() {
                Some(n) if (0..=super::MAX_TOP_LOGPROBS as i64).contains(&n) => Some(n as usize),
                _ => {
                    return Err(Error::invalid(
                        "logprobs",
                        format!(
                            "`logprobs` must be a number of alternatives from 0 to {}",
                            super::MAX_TOP_LOGPROBS
                        ),
                    ))
                }
            },
            None => None,
        };
        let logit_bias = match inputs.get("logit_bias").filter(|v| !v.is_null()) {
            Some(value) => logit_bias(value, n_vocab)?,
            None => Vec::new(),
        };
        Ok(RequestOptions {
            tools,
            tool_choice,
            parallel_tool_calls,
            allow_repeated_tool_calls,
            response_format,
            logprobs,
            logit_bias,
        })
    }
}

/// `stop`: at most [`MAX_STOP_SEQUENCES`](super::MAX_STOP_SEQUENCES) non-empty strings.
pub(super) fn stop_sequences(stop: Option<&Value>) -> Result<Vec<String>> {
    let Some(stop) = stop else {
        return Ok(Vec::new());
    };
    let invalid = |msg: &str| Error::invalid("stop", msg.to_string());
    let list = stop
        .as_list()
        .ok_or_else(|| invalid("`stop` must be a list of strings"))?;
    if list.len() > super::MAX_STOP_SEQUENCES {
        return Err(invalid("`stop` may hold at most 4 sequences"));
    }
    list.iter()
        .map(|s| match s.as_str() {
            Some("") => Err(invalid("`stop` sequences must not be empty")),
            Some(s) => Ok(s.to_string()),
            None => Err(invalid("`stop` must be a list of strings")),
        })
        .collect()
}

/// A tool's name as OpenAI allows it: 1–64 of `a-z A-Z 0-9 _ -`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn tools(value: &Value) -> Result<Option<Tools>> {
    let json = value.to_json()?;
    let list = json
        .as_array()
        .ok_or_else(|| Error::invalid("tools", "`tools` must be a list of function tools"))?;
    if list.is_empty() {
        return Ok(None);
    }
    let mut specs: Vec<ToolSpec> = Vec::with_capacity(list.len());
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
        if specs.iter().any(|s| s.name == name) {
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
        if function.get("strict") == Some(&Json::Bool(true)) && function.get("parameters").is_some()
        {
            constrain::check_strict(&parameters, &at(".function.parameters"))?;
        }
        specs.push(ToolSpec {
            name: name.to_string(),
            parameters,
        });
    }
    Ok(Some(Tools { json, specs }))
}

fn tool_choice(value: &Value) -> Result<ToolChoice> {
    let invalid = || {
        Error::invalid(
            "tool_choice",
            "`tool_choice` must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \
             \"function\": {\"name\": ...}}",
        )
    };
    let json = value.to_json()?;
    let kind = match &json {
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

fn response_format(value: &Value) -> Result<Option<JsonFormat>> {
    let json = value.to_json()?;
    let kind = json.get("type").and_then(Json::as_str).ok_or_else(|| {
        Error::invalid(
            "response_format.type",
            "`response_format` needs a `type`: text, json_object or json_schema",
        )
    })?;
    match kind {
        "text" => Ok(None),
        "json_object" => Ok(Some(JsonFormat {
            kind: "json_object",
            schema: json!({"type": "object"}),
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
            if spec.get("strict") == Some(&Json::Bool(true)) {
                constrain::check_strict(&schema, "response_format.json_schema.schema")?;
            }
            Ok(Some(JsonFormat {
                kind: "json_schema",
                schema,
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
fn token_id(key: &str) -> Option<i64> {
    let canonical = !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_digit())
        && (key == "0" || !key.starts_with('0'));
    canonical.then(|| key.parse().ok()).flatten()
}

fn logit_bias(value: &Value, n_vocab: i32) -> Result<Vec<LlamaLogitBias>> {
    let map = value
        .as_dict()
        .ok_or_else(|| Error::invalid("logit_bias", "`logit_bias` must map token ids to biases"))?;
    let mut biases = Vec::with_capacity(map.len());
    for (key, bias) in map {
        let field = format!("logit_bias.{}", shown(key));
        let token = token_id(key)
            .filter(|t| (0..n_vocab as i64).contains(t))
            .ok_or_else(|| {
                Error::invalid(
                    field.clone(),
                    format!(
                        "`logit_bias` key '{}' is not a token id of this model (0 to {})",
                        shown(key),
                        n_vocab - 1
                    ),
                )
            })?;
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
        biases.push(LlamaLogitBias::new(LlamaToken(token as i32), bias));
    }
    Ok(biases)
}

#[cfg(test)]
mod token_id_tests {
    use super::token_id;

    #[test]
    fn a_logit_bias_key_is_a_token_id_only_as_decimal_digits() {
        assert_eq!(token_id("0"), Some(0));
        assert_eq!(token_id("5"), Some(5));
        assert_eq!(token_id("151643"), Some(151643));
        for bad in [
            " 5",
            "5 ",
            "+5",
            "-5",
            "0005",
            "05",
            "",
            "5.0",
            "1e3",
            "٥",
            "99999999999999999999",
        ] {
            assert_eq!(token_id(bad), None, "{bad:?}");
        }
    }
}
