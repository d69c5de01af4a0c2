//! What the chat and completion methods (and the audio and embedding ones) check alike: the
//! shared request fields, `n`, `stream_options`, and errors renamed into the request's terms.

use super::types::{OtherFields, StreamOptions};
use super::MAX_CHOICES;
use crate::error::{shown, Error, Result};
use crate::predict::Cancel;

/// Request fields accepted and ignored because they mean nothing for a local model.
pub(super) const IGNORED_FIELDS: [&str; 3] = ["store", "metadata", "service_tier"];

/// The next chunk of `chunks`, unless the call was cancelled (which drops nothing here: the
/// caller returns, and dropping the stream cancels generation).
pub(super) fn next_unless_stopped<T>(
    chunks: &mut impl Iterator<Item = Result<T>>,
    cancel: &Cancel,
) -> Result<Option<T>> {
    cancel.check()?;
    chunks.next().transpose()
}

/// An error about a predictor parameter, restated in terms of the OpenAI field it came from:
/// `fields` maps parameter names to fields, and `name[i]` (an item of a list) becomes
/// `field[i]`. The first matching pair wins.
pub(super) fn in_openai_terms(mut error: Error, fields: &[(String, &str)]) -> Error {
    let Some(param) = error.param.clone() else {
        return error;
    };
    for (name, field) in fields {
        let renamed = match param.strip_prefix(name.as_str()) {
            Some("") => field.to_string(),
            Some(rest) if rest.starts_with('[') => format!("{field}{rest}"),
            _ => continue,
        };
        error.message = error
            .message
            .replace(&format!("`{param}`"), &format!("`{renamed}`"))
            .replace(&format!("`{name}`"), &format!("`{field}`"));
        error.param = Some(renamed);
        break;
    }
    error
}

/// `stream_options`: only its known keys, as for the request's own fields.
pub(super) fn check_stream_options(options: Option<&StreamOptions>) -> Result<()> {
    let Some(options) = options else {
        return Ok(());
    };
    match options.other.iter().find(|(_, value)| !value.is_null()) {
        Some((key, _)) => {
            let key = shown(key);
            Err(Error::invalid(
                format!("stream_options.{key}"),
                format!(
                    "Unrecognized field `stream_options.{key}`; `stream_options` takes \
                     `include_usage` (and `include_obfuscation`, ignored)"
                ),
            ))
        }
        None => Ok(()),
    }
}

/// `n`: how many choices, 1 to [`MAX_CHOICES`].
pub(super) fn check_n(n: Option<i64>) -> Result<usize> {
    match n {
        None => Ok(1),
        Some(n) if (1..=MAX_CHOICES).contains(&n) => Ok(n as usize),
        Some(n) => Err(Error::invalid(
            "n",
            format!("Invalid value for `n`: {n}; it must be from 1 to {MAX_CHOICES}"),
        )),
    }
}

/// Fields outside the typed request: ignored if documented so, else rejected by name.
pub(super) fn reject_other_fields(other: &OtherFields) -> Result<()> {
    for (field, value) in other {
        if value.is_null() || IGNORED_FIELDS.contains(&field.as_str()) {
            continue;
        }
        let default_ok = match field.as_str() {
            "echo" => value == &serde_json::Value::Bool(false),
            "best_of" => value == &serde_json::json!(1),
            "functions" => {
                value.as_array().is_some_and(Vec::is_empty)
                    || value.as_object().is_some_and(|o| o.is_empty())
            }
            _ => false,
        };
        if default_ok {
            continue;
        }
        let known = [
            "logprobs",
            "top_logprobs",
            "echo",
            "best_of",
            "suffix",
            "response_format",
            "tools",
            "tool_choice",
            "functions",
            "function_call",
            "logit_bias",
            "modalities",
            "audio",
            "prediction",
            "web_search_options",
        ];
        return Err(if known.contains(&field.as_str()) {
            Error::invalid(field, format!("`{field}` is not supported by ingle"))
        } else {
            Error::invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            )
        });
    }
    Ok(())
}
