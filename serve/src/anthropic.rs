//! Anthropic's error shape on its routes (`/v1/messages...`): `{"type": "error", "error": {"type",
//! "message"}}`, which the `anthropic` SDKs read, where every other route answers OpenAI's
//! `{"error": {"message", "type", "param", "code"}}`. One layer converts every refusal of those
//! routes (a bad body, a missing key, a model still loading, a draining server), so no handler
//! needs to know.

use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ingle::methods::{Dialect, METHODS};

/// Whether `path` is one of Anthropic's routes, or under one: the routes of the method table's
/// methods in Anthropic's dialect (`/v1/messages`, `/v1/messages/count_tokens`).
fn is_anthropic(path: &str) -> bool {
    let under = |route: &str| {
        path.strip_prefix(route)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    METHODS
        .iter()
        .filter(|method| method.dialect == Dialect::Anthropic)
        .filter_map(|method| method.route)
        .any(|route| under(&format!("/v1{}", route.path)) || route.aliases.iter().any(|a| under(a)))
}

/// Anthropic's error type for an HTTP status.
fn error_type(status: u16) -> &'static str {
    match status {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 => "timeout_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

pub(crate) async fn error_shape(request: Request, next: Next) -> Response {
    if !is_anthropic(request.uri().path()) {
        return next.run(request).await;
    }
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !status.is_client_error() && !status.is_server_error() || !is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    // An error object is small (serve's are a few hundred bytes); a body that cannot be read
    // whole is answered as the status alone, Anthropic-shaped.
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        let json = serde_json::json!({"type": "error", "error": {
            "type": error_type(parts.status.as_u16()), "message": "The request failed",
        }});
        return (parts.status, axum::Json(json)).into_response();
    };
    let message = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|json| json["error"]["message"].as_str().map(str::to_string));
    let Some(message) = message else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let json = serde_json::json!({
        "type": "error",
        "error": {"type": error_type(parts.status.as_u16()), "message": message},
    });
    let mut response = Response::from_parts(parts, Body::from(json.to_string()));
    response.headers_mut().remove(header::CONTENT_LENGTH);
    response
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_messages_routes_are_anthropics() {
        assert!(super::is_anthropic("/v1/messages"));
        assert!(super::is_anthropic("/v1/messages/count_tokens"));
        assert!(!super::is_anthropic("/v1/messagesx"));
        assert!(!super::is_anthropic("/v1/chat/completions"));
    }
}
