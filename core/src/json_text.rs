//! Responses as JSON text: what the C, Python and Node bindings hand across their boundaries.

use crate::error::{Error, Result};
use crate::predict::{Prediction, PredictionStream};
use serde::Serialize;

/// A stream of response objects (chunks, predictions) as JSON texts.
pub type JsonTextStream = Box<dyn Iterator<Item = Result<String>> + Send>;

/// A response object as JSON text.
pub fn to_json_text(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::internal(format!("Cannot serialize a response: {e}")))
}

/// Every item of `items` as JSON text.
pub fn json_texts<T: Serialize + 'static>(
    items: impl Iterator<Item = Result<T>> + Send + 'static,
) -> JsonTextStream {
    Box::new(items.map(|item| item.and_then(|item| to_json_text(&item))))
}

impl Prediction {
    /// The prediction's JSON, or the error it failed with.
    pub fn into_json_text(self) -> Result<String> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.to_json()?.to_string()),
        }
    }

    /// The whole prediction's JSON, a failure included (as `error`, with the `logs` that tell
    /// why), for callers that report failures as predictions rather than as errors.
    pub fn to_json_text(&self) -> Result<String> {
        Ok(self.to_json()?.to_string())
    }
}

impl PredictionStream {
    /// Each partial prediction as JSON text; a failed one is yielded as its error.
    pub fn into_json_texts(self) -> JsonTextStream {
        Box::new(self.map(Prediction::into_json_text))
    }

    /// Each partial prediction as JSON text, a failed one included (see
    /// [`Prediction::to_json_text`]).
    pub fn into_whole_json_texts(self) -> JsonTextStream {
        Box::new(self.map(|p| p.to_json_text()))
    }
}

/// Why a JSON text could not be parsed into a request type.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonProblem {
    /// Not one JSON document: a syntax error, an early end, or data after the document. The
    /// message says what and where (line and column).
    Syntax(String),
    /// Valid JSON whose value does not fit: `path` is the field at fault (`messages[0].role`),
    /// empty for the whole document.
    Data { path: String, message: String },
}

/// Parses `json` as exactly one JSON document of type `T`: trailing data (a second document,
/// stray brackets) is an error, as is a syntax error, each told apart from a value that does
/// not fit so callers can name the field at fault only when there is one.
pub fn parse_one<T: serde::de::DeserializeOwned>(
    json: &str,
) -> std::result::Result<T, JsonProblem> {
    let deserializer = &mut serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut *deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_data() {
            data_problem(&path, &inner)
        } else {
            JsonProblem::Syntax(syntax_message(&inner))
        }
    })?;
    deserializer.end().map_err(|e| {
        JsonProblem::Syntax(format!(
            "expected one JSON document, but more data follows it at line {} column {}",
            e.line(),
            e.column()
        ))
    })?;
    Ok(value)
}

fn syntax_message(error: &serde_json::Error) -> String {
    if error.is_eof() {
        format!(
            "the JSON ends early (at line {} column {})",
            error.line(),
            error.column()
        )
    } else {
        // serde_json's message ends with "at line L column C" and quotes no input.
        let message = error.to_string();
        if message.contains("hex escape") || message.contains("surrogate") {
            // What `json.dumps("\ud800")` and JavaScript's lone surrogates produce.
            format!("{message} (a \\uD800-\\uDFFF escape must be half of a surrogate pair; a lone surrogate is not text)")
        } else {
            message
        }
    }
}

fn data_problem(path: &str, error: &serde_json::Error) -> JsonProblem {
    // serde_path_to_error writes the root as "." and fields it cannot name as "?".
    let path = path.trim_start_matches('.');
    let path = path
        .split(".?")
        .next()
        .unwrap_or_default()
        .trim_end_matches('?');
    let message = error.to_string();
    // "missing field `x`" is reported at the object holding it: name the field itself.
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
    {
        let path = if path.is_empty() {
            field.to_string()
        } else {
            format!("{path}.{field}")
        };
        return JsonProblem::Data {
            message: format!(
                "Missing required parameter: `{}`",
                crate::error::shown(&path)
            ),
            path,
        };
    }
    JsonProblem::Data {
        path: path.to_string(),
        // serde quotes the offending value: keep the message short whatever it was.
        message: crate::error::bounded(message, 400),
    }
}
