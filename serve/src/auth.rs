//! The API key: `Authorization: Bearer KEY` on every `/v1/...` request when `--api-key` is set
//! (or `x-api-key: KEY`, as the `anthropic` SDKs send it).

use crate::{error_response, AppState};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use ingle::ErrorCode;
use ingle::{Error, ErrorKind};

pub(crate) async fn authorize(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(key) = &state.api_key else {
        return next.run(request).await;
    };
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    let x_api_key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    // The anthropic SDKs may send both (`ANTHROPIC_AUTH_TOKEN` beside the key): either will do.
    if [bearer, x_api_key]
        .into_iter()
        .flatten()
        .any(|given| same_secret(given, key))
    {
        return next.run(request).await;
    }
    let given = bearer.or(x_api_key);
    let message = match given {
        None => "You didn't provide an API key. Send it as `Authorization: Bearer KEY` (the key given to `ingle serve --api-key`).",
        Some(_) => "Incorrect API key provided.",
    };
    let error = Error::new(ErrorKind::InvalidRequest, message).with_code(ErrorCode::InvalidApiKey);
    error_response(StatusCode::UNAUTHORIZED, &error)
}

/// The token of an `Authorization: Bearer TOKEN` header; the scheme is case-insensitive
/// (RFC 7235), and spaces around the token do not count.
pub(crate) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Compares without stopping at the first difference, so response times do not reveal how much
/// of a guessed key was right.
pub(crate) fn same_secret(given: &str, key: &str) -> bool {
    let (given, key) = (given.as_bytes(), key.as_bytes());
    given.len() == key.len()
        && given
            .iter()
            .zip(key)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}
