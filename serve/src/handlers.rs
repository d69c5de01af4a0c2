//! The `/v1/...` routes, made from the core's method table (`ingle::methods`): one
//! route per method that has one, and one handler for them all. It reads the request as the
//! method takes it (a JSON body, an upload, or the route's segments and query), runs it on the
//! core's `Client`, and answers as the method gives (see [`crate::respond`]).

use crate::body::parse_body;
use crate::lifecycle::{refuse_a_file_path, refuse_if_loading};
use crate::respond::{speech, streamed_events, whole, whole_typed, Framing};
use crate::upload::{parse_upload, Upload};
use crate::{core_error, error_response, AppState};
use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, MethodRouter};
use axum::Router;
use ingle::methods::{Answer, Dialect, Gives, Method, ParamType, Parsed, Takes, Verb, METHODS};
use ingle::Error;
use ingle::ErrorCode;

/// A route under `/v1` for every method of the table that has one, and its aliases.
pub(crate) fn routes() -> Router<AppState> {
    let mut router = Router::new();
    for method in METHODS {
        let Some(route) = method.route else { continue };
        let handler =
            move |State(state): State<AppState>, request: Request| handle(state, method, request);
        let method_router: MethodRouter<AppState> = match route.verb {
            Verb::Get => get(handler),
            Verb::Post => post(handler),
            Verb::Delete => delete(handler),
        };
        router = router.route(&format!("/v1{}", route.path), method_router.clone());
        for alias in route.aliases {
            router = router.route(alias, method_router.clone());
        }
    }
    router
}

async fn handle(state: AppState, method: &'static Method, request: Request) -> Response {
    let parsed = match read(&state, method, request).await {
        Ok(parsed) => parsed.over_http(),
        Err(refusal) => return refusal,
    };
    if let Some(model) = parsed.named_model() {
        if let Some(refusal) = refuse_a_file_path(model) {
            return refusal;
        }
    }
    if let Some(model) = parsed.model() {
        if let Some(refusal) = refuse_if_loading(&state, model) {
            return refusal;
        }
    }
    let method = parsed.method();
    let run = move |client: &ingle::Client| parsed.run(client);
    match (method.gives, method.dialect) {
        (Gives::Json, _) => whole(state, move |client| run(client)?.into_text()).await,
        (Gives::Body, _) => whole_typed(state, move |client| run(client)?.into_body()).await,
        (Gives::Chunks, _) => streamed(state, Framing::Done, run).await,
        (Gives::NamedEvents, Dialect::Anthropic) => streamed(state, Framing::Anthropic, run).await,
        (Gives::NamedEvents, Dialect::OpenAi) => streamed(state, Framing::Named, run).await,
        (Gives::Events, _) => streamed(state, Framing::Typed, run).await,
        (Gives::Audio, _) => {
            speech(state, move |client| match run(client)? {
                Answer::Audio(stream) => Ok(stream),
                _ => Err(Error::internal("A speech method answered without audio")),
            })
            .await
        }
    }
}

async fn streamed<F>(state: AppState, framing: Framing, run: F) -> Response
where
    F: FnOnce(&ingle::Client) -> ingle::Result<Answer> + Send + 'static,
{
    streamed_events(state, framing, move |client| run(client)?.into_stream()).await
}

/// The request as `method` takes it, or the response that refuses it.
async fn read(state: &AppState, method: &Method, request: Request) -> Result<Parsed, Response> {
    match method.takes {
        Takes::Json => {
            let parse = |text: &str| method.parse(text, None);
            parse_body(state, request, parse)
                .await
                .map_err(IntoResponse::into_response)
        }
        Takes::Upload => {
            let Upload { request, audio } = parse_upload(state, request)
                .await
                .map_err(IntoResponse::into_response)?;
            // The upload's fields as the JSON request the method parses, as every door's.
            let fields = serde_json::to_string(&request)
                .map_err(|e| core_error(Error::internal(format!("An upload's fields: {e}"))))?;
            method.parse(&fields, Some(audio)).map_err(core_error)
        }
        Takes::Named => {
            let named = named_values(method, request.uri())
                .map_err(|error| error_response(StatusCode::BAD_REQUEST, &error))?;
            method.parse(&named.to_string(), None).map_err(core_error)
        }
    }
}

/// The values a route names, as a JSON object: its `{name}` (or `{*name}`) segment,
/// percent-decoded, and for a method that takes more (`responses.input_items.list`) its query
/// parameters, each one of the method's (an `integer` one read as a number), OpenAI's
/// `include` ignored. A method that takes nothing more ignores its query, as OpenAI does.
fn named_values(method: &Method, uri: &Uri) -> Result<serde_json::Value, Error> {
    let mut values = serde_json::Map::new();
    let route = method.route.map_or("", |r| r.path);
    if let Some((before, rest)) = route.split_once('{') {
        let (name, after) = rest.split_once('}').unwrap_or((rest, ""));
        let name = name.trim_start_matches('*');
        let path = uri.path();
        let start = path.find(before).map_or(path.len(), |i| i + before.len());
        let raw = path[start..].strip_suffix(after).unwrap_or(&path[start..]);
        let value = match (percent_decode(raw), name) {
            (Some(value), _) => value,
            (None, "model") => {
                let error = Error::invalid(
                    "model",
                    format!(
                        "The model id in the URL is not valid UTF-8 once percent-decoded ({})",
                        ingle::error::shown(raw)
                    ),
                );
                return Err(error.with_code(ErrorCode::InvalidModelId));
            }
            // An id no stored response has: not found, by the method.
            (None, _) => raw.to_string(),
        };
        values.insert(name.to_string(), value.into());
    }
    if method.params.is_empty() {
        return Ok(serde_json::Value::Object(values));
    }
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(&value.replace('+', " ")).unwrap_or_default();
        if key == "include" || key == "include[]" {
            continue; // extra fields to add; the items here have none
        }
        let Some(param) = method.params.iter().find(|param| param.name == key) else {
            return Err(Error::invalid(
                key.to_string(),
                format!("Unrecognized query parameter: {}", ingle::error::shown(key)),
            ));
        };
        let name = param.name;
        let value = if let ParamType::Integer { .. } = param.kind {
            let number = value.parse::<i64>().map_err(|_| {
                Error::invalid(
                    name,
                    format!(
                        "Invalid value for `{name}`: '{}' (an integer)",
                        ingle::error::shown(&value)
                    ),
                )
            })?;
            serde_json::Value::from(number)
        } else {
            serde_json::Value::from(value)
        };
        values.insert(name.to_string(), value);
    }
    Ok(serde_json::Value::Object(values))
}

/// `%XX` escapes decoded; None when the result is not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&hi), Some(&lo)) if hex(hi).is_some() && hex(lo).is_some() => {
                out.push((hex(hi)? * 16 + hex(lo)?) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}
