//! JSON in: one document parsed into a request, config or declaration type, with errors that
//! say where (the line and column of a syntax error, the path of a field that does not fit).
//! (Responses are written by `json_text.rs`.)

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
