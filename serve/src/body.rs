//! Request bodies: read within their limit and time, refused with OpenAI errors before the core
//! sees them when they are not what the route takes.

use crate::{error_response, status_of, AppState};
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use ingle::ErrorCode;
use ingle::{Error, ErrorKind};

/// A request refused before it reaches the core: its status and OpenAI error.
pub(crate) struct Refusal(StatusCode, Box<Error>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error_response(self.0, &self.1)
    }
}

impl Refusal {
    /// The error refused with.
    pub(crate) fn into_error(self) -> Error {
        *self.1
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal(status_of(&error), Box::new(error))
    }
}

pub(crate) fn invalid(code: ErrorCode, message: impl Into<String>) -> Refusal {
    Error::new(ErrorKind::InvalidRequest, message)
        .with_code(code)
        .into()
}

/// Reads a request's body and parses it with `parse` (one of the core's request parsers,
/// whose errors name the field at fault), within the body limit (see [`read_body`]). Another
/// content type, text that is not UTF-8, and anything but one JSON document are 400.
pub(crate) async fn parse_body<T>(
    state: &AppState,
    request: Request,
    parse: impl FnOnce(&str) -> ingle::Result<T>,
) -> Result<T, Refusal> {
    let (parts, body) = request.into_parts();
    let content_type = content_type(&parts.headers);
    if !mime_of(content_type).eq_ignore_ascii_case("application/json") {
        return Err(invalid(
            ErrorCode::InvalidContentType,
            format!(
                "The request's Content-Type must be application/json (got {})",
                shown_content_type(content_type)
            ),
        ));
    }
    let body = read_body(state, &parts.headers, body, state.body_limit).await?;
    let text = std::str::from_utf8(&body).map_err(|_| {
        invalid(
            ErrorCode::InvalidBody,
            "The request body is not valid UTF-8",
        )
    })?;
    Ok(parse(text)?)
}

pub(crate) fn content_type(headers: &header::HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The media type of a Content-Type, without its parameters.
pub(crate) fn mime_of(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

pub(crate) fn shown_content_type(content_type: &str) -> String {
    if content_type.is_empty() {
        "none".into()
    } else {
        ingle::error::shown(content_type).into_owned()
    }
}

/// Reads a request's body up to `limit` bytes. The limit applies while reading: a declared
/// `Content-Length` over it is refused before a byte is read, a chunked body as soon as it
/// passes it (413). A body that does not arrive within the body timeout is 408.
pub(crate) async fn read_body(
    state: &AppState,
    headers: &header::HeaderMap,
    body: axum::body::Body,
    limit: usize,
) -> Result<Bytes, Refusal> {
    let too_large = || {
        let error = Error::new(
            ErrorKind::InvalidRequest,
            format!("The request body is too large (the limit is {limit} bytes)"),
        )
        .with_code(ErrorCode::RequestTooLarge);
        Refusal(StatusCode::PAYLOAD_TOO_LARGE, Box::new(error))
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, limit);
    match tokio::time::timeout(state.body_timeout, limited.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(error)) => Err(invalid(
            ErrorCode::InvalidBody,
            format!("Cannot read the request body: {error}"),
        )),
        Err(_) => {
            let error = Error::new(
                ErrorKind::InvalidRequest,
                format!(
                    "The request body did not arrive within {} s",
                    state.body_timeout.as_secs_f64()
                ),
            )
            .with_code(ErrorCode::RequestTimeout);
            Err(Refusal(StatusCode::REQUEST_TIMEOUT, Box::new(error)))
        }
    }
}
