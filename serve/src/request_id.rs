//! Request ids: each request is known by the `X-Request-Id` its client sent (a router's, say),
//! or by one made here (`req_...`). It is returned as `X-Request-Id` on every response (the
//! openai SDKs read it as `_request_id` / `request_id`) and as `request_id` in every error
//! body (a stream's error event included), so one call can be followed from the client through
//! a router to this server.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;

/// The header, as routers and the OpenAI API send it.
pub(crate) const REQUEST_ID: &str = "x-request-id";

/// Longest id taken from a client; a longer one, or one with other than visible ASCII, is
/// replaced by one of ours (it would not survive logs and headers intact).
const MAX_CLIENT_ID: usize = 200;

/// Largest error body the id is written into (errors are a few hundred bytes; a body this
/// size is not an error object of ours).
const MAX_ERROR_BODY: usize = 64 * 1024;

tokio::task_local! {
    /// The id of the request being handled, for what its handler makes off the response path
    /// (the error event of a stream).
    static CURRENT: String;
}

/// The id of the request this task is handling (`None` outside a request).
pub(crate) fn current() -> Option<String> {
    CURRENT.try_with(Clone::clone).ok()
}

/// The request's id: its client's, if usable, else a new one.
pub(crate) fn request_id(request: &Request) -> String {
    request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|id| {
            !id.is_empty() && id.len() <= MAX_CLIENT_ID && id.bytes().all(|b| b.is_ascii_graphic())
        })
        .map_or_else(|| ingle::predict::random_id("req_"), str::to_string)
}

/// Middleware: the id on the response's headers, and in its body when it is an error object.
pub(crate) async fn with_request_id(mut request: Request, next: Next) -> Response {
    let id = request_id(&request);
    if let Ok(value) = HeaderValue::from_str(&id) {
        request.headers_mut().insert(REQUEST_ID, value);
    }
    let response = CURRENT.scope(id.clone(), next.run(request)).await;
    let (mut parts, body) = response.into_parts();
    if let Ok(value) = HeaderValue::from_str(&id) {
        parts.headers.insert(REQUEST_ID, value);
    }
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(parts.status.is_client_error() || parts.status.is_server_error()) || !is_json {
        return Response::from_parts(parts, body);
    }
    // An error object: small, and whole already (never a stream).
    let Ok(collected) = http_body_util::Limited::new(body, MAX_ERROR_BODY)
        .collect()
        .await
    else {
        return Response::from_parts(parts, Body::empty());
    };
    let bytes = collected.to_bytes();
    let body = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut json) if json.get("error").is_some_and(|e| e.is_object()) => {
            json["error"]["request_id"] = serde_json::Value::String(id);
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(json.to_string())
        }
        _ => Body::from(bytes),
    };
    Response::from_parts(parts, body)
}
