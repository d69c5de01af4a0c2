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

/// Declares the codes once each: the enum, [`ErrorCode::ALL`] and [`ErrorCode::as_str`].
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $code:ident => $text:literal,)*) => {
        /// An error's machine-readable `code`: a closed catalogue, so every code ingle gives is
        /// listed here once, with what it means. It is independent of [`ErrorKind`] (which
        /// gives the HTTP status and the OpenAI `type`): the same code may come with two
        /// kinds, as `model_file_invalid` does (a config's own file is the caller's mistake, a
        /// built-in one's is not).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $code,)*
        }

        impl ErrorCode {
            /// Every code, in the catalogue's order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$code,)*];

            /// The code as the OpenAI error object carries it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$code => $text,)*
                }
            }
        }
    };
}

error_codes! {
    /// The caller stopped the request (HTTP 499).
    Cancelled => "cancelled",
    /// A downloaded or assembled file is not the one the catalog or the Hub names (its sha256 or size differs).
    ChecksumMismatch => "checksum_mismatch",
    /// The prompt plus the completion does not fit the model's context.
    ContextLengthExceeded => "context_length_exceeded",
    /// The config asks for a device (GPU) this machine cannot use.
    DeviceUnavailable => "device_unavailable",
    /// A download was answered with something other than the file.
    DownloadFailed => "download_failed",
    /// A download was cut short; pulling again resumes it.
    DownloadInterrupted => "download_interrupted",
    /// The server answered a download with HTTP 5xx or 429 (tried again).
    DownloadServerError => "download_server_error",
    /// The server of a download could not be reached.
    DownloadUnreachable => "download_unreachable",
    /// `POST /drain` from a web page, or without the operator key.
    DrainNotAllowed => "drain_not_allowed",
    /// A Hugging Face repository has no such file at that revision.
    EntryNotFound => "entry_not_found",
    /// A Piper voice needs espeak-ng's data, which is not installed.
    EspeakNgMissing => "espeak_ng_missing",
    /// The Hub refused the request (HTTP 403).
    Forbidden => "forbidden",
    /// A gated Hugging Face model whose licence the token's account has not accepted.
    GatedRepo => "gated_repo",
    /// `ingle serve` was reached under a host name it does not serve (DNS rebinding).
    HostNotAllowed => "host_not_allowed",
    /// A bug or an unexpected state inside ingle.
    InternalError => "internal_error",
    /// `ingle serve` was called without its API key, or with another.
    InvalidApiKey => "invalid_api_key",
    /// An HTTP body that cannot be read as the request it should be.
    InvalidBody => "invalid_body",
    /// An HTTP body of a content type the route does not take.
    InvalidContentType => "invalid_content_type",
    /// A request body that is not JSON.
    InvalidJson => "invalid_json",
    /// An image or audio part of a message that cannot be taken: not allowed from where it is,
    /// over a limit, not a format ingle decodes, corrupt, or sent to a model without the input.
    InvalidMedia => "invalid_media",
    /// A model id that cannot name a model (in a URL path).
    InvalidModelId => "invalid_model_id",
    /// A Hugging Face reference that does not parse.
    InvalidModelReference => "invalid_model_reference",
    /// The model failed while running.
    ModelError => "model_error",
    /// A model file that is not what ingle reads (a 400 for a config's own file, a 500 for a built-in one's).
    ModelFileInvalid => "model_file_invalid",
    /// A model file that is not there (`ingle pull` fetches it).
    ModelFileMissing => "model_file_missing",
    /// `ingle serve` is still loading the model (HTTP 503, try again).
    ModelLoading => "model_loading",
    /// No such model: not in the config, the catalog, or on disk.
    ModelNotFound => "model_not_found",
    /// A model that cannot be loaded, for a reason without a code of its own.
    ModelUnloadable => "model_unloadable",
    /// No such stored object (a response, an HTTP route's object).
    NotFound => "not_found",
    /// A NULL pointer given to the C API where a value is required.
    NullArgument => "null_argument",
    /// Two different ONNX Runtime libraries asked for in one process.
    OnnxruntimeConflict => "onnxruntime_conflict",
    /// A file given as ONNX Runtime that is not a usable one.
    OnnxruntimeInvalid => "onnxruntime_invalid",
    /// ONNX Runtime is not installed (`ingle pull onnxruntime`).
    OnnxruntimeMissing => "onnxruntime_missing",
    /// `ingle serve` was called from a web page it does not allow.
    OriginNotAllowed => "origin_not_allowed",
    /// `previous_response_id` names no stored response.
    PreviousResponseNotFound => "previous_response_not_found",
    /// A resumed download asked for a range the server cannot give (started over).
    RangeNotSatisfiable => "range_not_satisfiable",
    /// No such Hugging Face repository (or a private one without a token).
    RepoNotFound => "repo_not_found",
    /// A request body that did not arrive in time.
    RequestTimeout => "request_timeout",
    /// A request body over the server's limit.
    RequestTooLarge => "request_too_large",
    /// A Hugging Face repository has no such revision.
    RevisionNotFound => "revision_not_found",
    /// `ingle serve` is draining: it takes no new requests.
    ServerDraining => "server_draining",
    /// `ingle serve` shut down while the request ran.
    ServerShutdown => "server_shutdown",
    /// `ingle serve` holds as many connections as it takes.
    TooManyConnections => "too_many_connections",
    /// No such method in the method table (`ingle_call`, `call` in the bindings).
    UnknownMethod => "unknown_method",
    /// No such route on `ingle serve`.
    UnknownUrl => "unknown_url",
    /// A Hugging Face repository that holds no model ingle runs.
    UnsupportedModel => "unsupported_model",
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// An error with a message, the request parameter it is about (if any) and a machine code.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub param: Option<String>,
    pub code: Option<ErrorCode>,
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
            .with_code(ErrorCode::ContextLengthExceeded)
    }

    pub fn model(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Model, message).with_code(ErrorCode::ModelError)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message).with_code(ErrorCode::InternalError)
    }

    /// The request was stopped by its caller (its [`crate::Cancel`], a callback's answer).
    pub fn cancelled(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Cancelled, message).with_code(ErrorCode::Cancelled)
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(bounded(param.into(), MAX_PARAM_BYTES));
        self
    }

    pub fn with_code(mut self, code: ErrorCode) -> Self {
        self.code = Some(code);
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

    #[test]
    fn every_code_is_listed_once_in_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let text = code.as_str();
            assert!(seen.insert(text), "{text} twice");
            assert!(
                text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{text}"
            );
            assert_eq!(serde_json::to_value(code).unwrap(), text);
        }
    }
}
