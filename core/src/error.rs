//! One error type for the whole library. It carries what the OpenAI error object needs
//! (`type`, `param`, `code`) so every front door (Rust, C, Python, Node) reports the same thing.

use serde::Serialize;
use std::borrow::Cow;
use std::fmt;

/// Most characters of caller-supplied text (a model name, a field name, a value) an error
/// message quotes; the rest is elided. A 1 MB model name must not become a 1 MB error.
pub const MAX_QUOTED_CHARS: usize = 120;
/// Longest error message and `param`, in bytes: a backstop for messages that quote text
/// (serde's, a backend's) without going through [`shown`].
pub const MAX_MESSAGE_BYTES: usize = 2048;
pub const MAX_PARAM_BYTES: usize = 256;

/// Caller-supplied text as an error message quotes it: at most [`MAX_QUOTED_CHARS`]
/// characters, then `…(N more bytes)`.
pub fn shown(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!(
            "{}…({} more bytes)",
            &text[..end],
            text.len() - end
        )),
    }
}

/// `text` cut to at most `max` bytes (on character boundaries), marked as cut. The middle goes,
/// not the end: a failure wrapped many times (a predictor calling the client, 140 deep) puts
/// the cause last, and it must survive.
pub(crate) fn bounded(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let room = max.saturating_sub(32);
    let mut head = room * 2 / 3;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (room - head);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}…({} bytes cut)…{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The class of an error; bindings map it to their exception / status types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request is malformed or asks for something unsupported (HTTP 400).
    InvalidRequest,
    /// The model (or another named resource) does not exist (HTTP 404).
    NotFound,
    /// The prompt plus the requested completion does not fit the model's context (HTTP 400).
    ContextLengthExceeded,
    /// The model could not be loaded or failed while running (HTTP 500).
    Model,
    /// A bug or an unexpected state inside ingle (HTTP 500).
    Internal,
    /// The caller stopped the request before it finished (HTTP 499, "client closed request").
    Cancelled,
}

impl ErrorKind {
    /// The HTTP status the OpenAI API would answer with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidRequest | ErrorKind::ContextLengthExceeded => 400,
            ErrorKind::NotFound => 404,
            ErrorKind::Model | ErrorKind::Internal => 500,
            ErrorKind::Cancelled => 499,
        }
    }

    /// The OpenAI error `type` string.
    pub fn openai_type(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest | ErrorKind::ContextLengthExceeded | ErrorKind::NotFound => {
                "invalid_request_error"
            }
            ErrorKind::Model | ErrorKind::Internal => "server_error",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// An error with a message, the request parameter it is about (if any) and a machine code.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub param: Option<String>,
    pub code: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: bounded(message.into(), MAX_MESSAGE_BYTES),
            param: None,
            code: None,
        }
    }

    /// An invalid-request error about `param`.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidRequest, message).with_param(param)
    }

    pub fn context_length(message: impl Into<String>, param: &str) -> Self {
        Error::new(ErrorKind::ContextLengthExceeded, message)
            .with_param(param)
            .with_code("context_length_exceeded")
    }

    pub fn model(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Model, message).with_code("model_error")
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message).with_code("internal_error")
    }

    /// The request was stopped by its caller (`create_until`'s `stop`, a callback's answer).
    pub fn cancelled(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Cancelled, message).with_code("cancelled")
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(bounded(param.into(), MAX_PARAM_BYTES));
        self
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// The OpenAI error object: `{"error": {"message", "type", "param", "code"}}`.
    pub fn to_openai(&self) -> serde_json::Value {
        // Bounded again: `message` and `param` are public and may have been rewritten.
        let param = self.param.clone().map(|p| bounded(p, MAX_PARAM_BYTES));
        serde_json::json!({
            "error": {
                "message": bounded(self.message.clone(), MAX_MESSAGE_BYTES),
                "type": self.kind.openai_type(),
                "param": param,
                "code": self.code,
            }
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.len() > MAX_MESSAGE_BYTES {
            f.write_str(&bounded(self.message.clone(), MAX_MESSAGE_BYTES))?;
        } else {
            f.write_str(&self.message)?;
        }
        if let Some(param) = &self.param {
            // Most messages already name the parameter; say it once more only when they do not.
            if !self.message.contains(param.as_str()) {
                write!(f, " (param: {param})")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl Serialize for Error {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_openai().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_keeps_its_start_and_its_cause() {
        let nested =
            "The predictor `@me/x` raised RuntimeError: ".repeat(140) + "ValueError: the cause";
        let error = Error::model(nested.clone());
        assert!(
            error.message.len() <= MAX_MESSAGE_BYTES,
            "{}",
            error.message.len()
        );
        assert!(error.message.starts_with("The predictor `@me/x` raised"));
        assert!(
            error.message.ends_with("ValueError: the cause"),
            "{}",
            error.message
        );
        assert!(error.message.contains(" bytes cut)…"));
        let multibyte = bounded("é".repeat(2000), 101);
        assert!(multibyte.len() <= 101 + 3, "{}", multibyte.len());
    }
}
