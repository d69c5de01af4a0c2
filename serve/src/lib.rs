//! `ingle serve`: the OpenAI HTTP API (`/v1/...`) over the in-process engine, for clients that
//! speak HTTP (any OpenAI SDK pointed at its base URL). No logic of its own: requests are parsed
//! by the core's request types, run by the core's `Client`, and answered with the core's
//! response JSON; streams are Server-Sent Events exactly as OpenAI sends them.
//!
//! - Work that blocks (loading, generating, embedding) runs on tokio's blocking pool; the core
//!   batches concurrent requests on one model itself.
//! - A stream's producer checks before every chunk whether the client is still there, and drops
//!   the core stream (which stops generation) as soon as it is not. A non-streamed request whose
//!   connection goes away stops at the next token too (`create_until` with a flag set on drop).
//! - Shutdown (SIGINT, SIGTERM, or the future given to [`Server::run`]) ends in-flight streams
//!   with an error event and stops whole requests, so nothing hangs.
//! - Hostile or slow clients cannot hold the server: header, body, idle and write timeouts, a
//!   body limit enforced while reading (a larger one for audio uploads), and a cap on open
//!   connections ([`Options`], `conn`).
//! - Audio uploads (`/v1/audio/transcriptions`, `/v1/audio/translations`) are
//!   `multipart/form-data` as OpenAI takes them, read whole (within the upload limit) and
//!   parsed into the core's `TranscriptionRequest` and `TranscriptionAudio`.
//!   Generation never waits on a socket: the engine produces into the request's own buffer
//!   (bounded by its `max_tokens`) and frees its sequence when done, whatever the client reads.

mod conn;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http_body_util::BodyExt;
use ingle::json_text::{json_texts, to_json_text, JsonTextStream};
use ingle::openai::{
    ChatCompletionRequest, CompletionRequest, EmbeddingRequest, SpeechRequest, TranscriptionAudio,
    TranscriptionRequest,
};
use ingle::{Client, Error, ErrorKind};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

/// Default limit of a request body: room for 2048 long embedding inputs.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Default limit of an audio upload (the whole `multipart/form-data` body of
/// `/v1/audio/transcriptions` and `/v1/audio/translations`): 25 MB, OpenAI's.
pub const DEFAULT_UPLOAD_LIMIT: usize = 25 * 1024 * 1024;

/// How the server runs. The defaults suit a server on a trusted network; every limit is a
/// flag of `ingle serve`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Requests to `/v1/...` must carry `Authorization: Bearer <api_key>` when set.
    pub api_key: Option<String>,
    /// Largest request body accepted, in bytes (larger: 413, as soon as it is known).
    pub body_limit: usize,
    /// Largest audio upload (the `multipart/form-data` body of `/v1/audio/transcriptions`
    /// and `/v1/audio/translations`), in bytes; these routes take it instead of `body_limit`.
    pub upload_limit: usize,
    /// Time a client has to send a request's headers, from their first byte (default 10 s).
    pub header_timeout: Duration,
    /// Time a client has to send a request's body once its headers are in (default 30 s;
    /// slower: 408).
    pub body_timeout: Duration,
    /// Time a connection may stay open with no request (default 60 s; keep-alive included).
    pub idle_timeout: Duration,
    /// Time a response may wait on a client that accepts none of its bytes before the
    /// connection is dropped and its generation cancelled (default 30 s).
    pub write_timeout: Duration,
    /// Most connections open at once (default 512); more are answered 503 and closed.
    pub max_connections: usize,
    /// A model no request has used for this long, and none is using, is unloaded (its memory
    /// freed) and loads again on the next request, as Ollama's keep-alive. None: models stay.
    pub keep_alive: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            api_key: None,
            body_limit: DEFAULT_BODY_LIMIT,
            upload_limit: DEFAULT_UPLOAD_LIMIT,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            max_connections: 512,
            keep_alive: None,
        }
    }
}

#[derive(Clone)]
struct AppState {
    client: Client,
    api_key: Option<Arc<str>>,
    body_limit: usize,
    upload_limit: usize,
    body_timeout: Duration,
    /// Set when the server shuts down: streams end with an error event, whole requests stop.
    shutting_down: Arc<AtomicBool>,
}

/// A bound server, ready to run.
pub struct Server {
    client: Client,
    listener: TcpListener,
    router: Router,
    options: Arc<Options>,
    shutting_down: Arc<AtomicBool>,
}

impl Server {
    /// Binds `addr` (port 0 picks a free port) and prepares the routes over `client`.
    pub async fn bind(client: Client, addr: SocketAddr, options: Options) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let shutting_down = Arc::new(AtomicBool::new(false));
        let state = AppState {
            client: client.clone(),
            api_key: options.api_key.clone().map(Arc::from),
            body_limit: options.body_limit,
            upload_limit: options.upload_limit,
            body_timeout: options.body_timeout,
            shutting_down: Arc::clone(&shutting_down),
        };
        Ok(Server {
            client,
            listener,
            router: router(state),
            options: Arc::new(options),
            shutting_down,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then ends in-flight work and returns once every
    /// connection is closed.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let flag = self.shutting_down;
        let shutdown = async move {
            shutdown.await;
            flag.store(true, Ordering::Release);
        };
        // In-flight work sees the flag at its next token; this only bounds a client that
        // stops reading its last events.
        let grace = Duration::from_secs(10);
        let keep_alive = self.options.keep_alive.map(|idle| {
            let client = self.client.clone();
            tokio::spawn(async move {
                // A model in use counts as used at each tick, so its idle time starts within a
                // tick of its last request's end: ticks are a tenth of the keep-alive.
                let every = (idle / 10).clamp(Duration::from_millis(50), Duration::from_secs(5));
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    let client = client.clone();
                    let unloaded =
                        tokio::task::spawn_blocking(move || client.models.unload_idle(idle)).await;
                    for tag in unloaded.unwrap_or_default() {
                        eprintln!("ingle: keep-alive: unloaded {tag} (idle for {idle:?})");
                    }
                }
            })
        });
        let served = conn::serve(self.listener, self.router, self.options, shutdown, grace).await;
        if let Some(task) = keep_alive {
            task.abort();
        }
        served
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}

fn router(state: AppState) -> Router {
    let v1 = Router::new()
        .route("/models", get(models_list))
        .route("/models/{*model}", get(models_retrieve))
        .route("/chat/completions", post(chat_completions))
        .route("/completions", post(completions))
        .route("/embeddings", post(embeddings))
        .route("/audio/speech", post(audio_speech))
        .route("/audio/transcriptions", post(audio_transcriptions))
        .route("/audio/translations", post(audio_translations))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize));
    Router::new()
        .route(
            "/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .route("/openapi.json", get(|| async { axum::Json(openapi()) }))
        .nest("/v1", v1)
        .fallback(unknown_route)
        .method_not_allowed_fallback(unknown_route)
        .with_state(state)
}

/// An OpenAI error body with its status.
fn error_response(status: StatusCode, error: &Error) -> Response {
    (status, axum::Json(error.to_openai())).into_response()
}

/// The status the OpenAI API answers a core error with. A cancellation only happens here when
/// the server shuts down, hence 503.
fn status_of(error: &Error) -> StatusCode {
    match error.kind {
        ErrorKind::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
        kind => {
            StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

fn core_error(error: Error) -> Response {
    error_response(status_of(&error), &error)
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    let error = Error::new(
        ErrorKind::NotFound,
        format!("Unknown request URL: {method} {}", uri.path()),
    )
    .with_code("unknown_url");
    error_response(StatusCode::NOT_FOUND, &error)
}

async fn authorize(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(key) = &state.api_key else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    if given.is_some_and(|given| same_secret(given, key)) {
        return next.run(request).await;
    }
    let message = match given {
        None => "You didn't provide an API key. Send it as `Authorization: Bearer KEY` (the key given to `ingle serve --api-key`).",
        Some(_) => "Incorrect API key provided.",
    };
    let error = Error::new(ErrorKind::InvalidRequest, message).with_code("invalid_api_key");
    error_response(StatusCode::UNAUTHORIZED, &error)
}

/// The token of an `Authorization: Bearer TOKEN` header; the scheme is case-insensitive
/// (RFC 7235), and spaces around the token do not count.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Compares without stopping at the first difference, so response times do not reveal how much
/// of a guessed key was right.
fn same_secret(given: &str, key: &str) -> bool {
    let (given, key) = (given.as_bytes(), key.as_bytes());
    given.len() == key.len()
        && given
            .iter()
            .zip(key)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// A request refused before it reaches the core: its status and OpenAI error.
struct Refusal(StatusCode, Box<Error>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error_response(self.0, &self.1)
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal(status_of(&error), Box::new(error))
    }
}

fn invalid(code: &str, message: impl Into<String>) -> Refusal {
    Error::new(ErrorKind::InvalidRequest, message)
        .with_code(code)
        .into()
}

/// Reads a request's body and parses it with `parse` (one of the core's request parsers,
/// whose errors name the field at fault), within the body limit (see [`read_body`]). Another
/// content type, text that is not UTF-8, and anything but one JSON document are 400.
async fn parse_body<T>(
    state: &AppState,
    request: Request,
    parse: fn(&str) -> ingle::Result<T>,
) -> Result<T, Refusal> {
    let (parts, body) = request.into_parts();
    let content_type = content_type(&parts.headers);
    if !mime_of(content_type).eq_ignore_ascii_case("application/json") {
        return Err(invalid(
            "invalid_content_type",
            format!(
                "The request's Content-Type must be application/json (got {})",
                shown_content_type(content_type)
            ),
        ));
    }
    let body = read_body(state, &parts.headers, body, state.body_limit).await?;
    let text = std::str::from_utf8(&body)
        .map_err(|_| invalid("invalid_body", "The request body is not valid UTF-8"))?;
    Ok(parse(text)?)
}

fn content_type(headers: &header::HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The media type of a Content-Type, without its parameters.
fn mime_of(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

fn shown_content_type(content_type: &str) -> String {
    if content_type.is_empty() {
        "none".into()
    } else {
        ingle::error::shown(content_type).into_owned()
    }
}

/// Reads a request's body up to `limit` bytes. The limit applies while reading: a declared
/// `Content-Length` over it is refused before a byte is read, a chunked body as soon as it
/// passes it (413). A body that does not arrive within the body timeout is 408.
async fn read_body(
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
        .with_code("request_too_large");
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
            "invalid_body",
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
            .with_code("request_timeout");
            Err(Refusal(StatusCode::REQUEST_TIMEOUT, Box::new(error)))
        }
    }
}

/// An audio upload: the request's fields and its `file`.
struct Upload {
    request: TranscriptionRequest,
    audio: TranscriptionAudio,
}

/// The fields that hold one value each.
const UPLOAD_FIELDS: [&str; 6] = [
    "model",
    "language",
    "prompt",
    "response_format",
    "temperature",
    "stream",
];

/// Reads an audio upload as OpenAI's API takes it (and its SDKs send it): a
/// `multipart/form-data` body with a `file` part (the audio, with its filename) and one part
/// per field. Numbers and booleans arrive as text; array fields as `name[]` parts, repeated
/// (`timestamp_granularities` without brackets too). Any other field goes into the request's
/// `other`, for the core to refuse by name. The body may be up to the upload limit.
async fn parse_upload(state: &AppState, request: Request) -> Result<Upload, Refusal> {
    let (parts, body) = request.into_parts();
    let content_type = content_type(&parts.headers);
    if !mime_of(content_type).eq_ignore_ascii_case("multipart/form-data") {
        return Err(invalid(
            "invalid_content_type",
            format!(
                "Audio uploads are multipart/form-data: a `file` part with the audio and one \
                 part per field (`model`, ...), as the OpenAI SDKs send them; the request's \
                 Content-Type is {}",
                shown_content_type(content_type)
            ),
        ));
    }
    let boundary = multer::parse_boundary(content_type).map_err(|e| {
        invalid(
            "invalid_content_type",
            format!("The request's multipart/form-data Content-Type has no usable boundary: {e}"),
        )
    })?;
    let body = read_body(state, &parts.headers, body, state.upload_limit).await?;
    let malformed = |e: multer::Error| {
        invalid(
            "invalid_body",
            format!("The multipart/form-data body is malformed: {e}"),
        )
    };
    let mut form = multer::Multipart::new(
        futures_util::stream::once(async move { Ok::<_, Infallible>(body) }),
        boundary,
    );
    let mut request = TranscriptionRequest::default();
    let mut file: Option<TranscriptionAudio> = None;
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(field) = form.next_field().await.map_err(malformed)? {
        let full_name = field.name().unwrap_or("").to_string();
        let (name, bracketed) = match full_name.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (full_name.as_str(), false),
        };
        if name.is_empty() {
            return Err(invalid(
                "invalid_body",
                "A part of the multipart/form-data body has no field name",
            ));
        }
        if name == "file" {
            let filename = field.file_name().map(str::to_string);
            let bytes = field.bytes().await.map_err(malformed)?;
            if file.is_some() {
                return Err(Error::invalid("file", "Only one `file` may be uploaded").into());
            }
            file = Some(TranscriptionAudio::file(
                bytes.to_vec(),
                filename.as_deref(),
            ));
            continue;
        }
        let bytes = field.bytes().await.map_err(malformed)?;
        let value = String::from_utf8(bytes.to_vec()).map_err(|_| {
            Error::invalid(
                name,
                format!(
                    "The `{}` field is not UTF-8 text",
                    ingle::error::shown(name)
                ),
            )
        })?;
        if name == "timestamp_granularities" {
            request
                .timestamp_granularities
                .get_or_insert_with(Vec::new)
                .push(value);
            continue;
        }
        if let Some(&field) = UPLOAD_FIELDS.iter().find(|f| **f == name) {
            if bracketed || seen.contains(&field) {
                return Err(Error::invalid(
                    field,
                    format!("`{field}` takes one value, and was given more than once"),
                )
                .into());
            }
            seen.push(field);
            set_upload_field(&mut request, field, value)?;
            continue;
        }
        // Unknown: the core names it. Repeated or bracketed fields become arrays.
        let value = serde_json::Value::String(value);
        match request.other.get_mut(name) {
            Some(serde_json::Value::Array(values)) => values.push(value),
            Some(first) => *first = serde_json::Value::Array(vec![first.take(), value]),
            None if bracketed => {
                request
                    .other
                    .insert(name.to_string(), serde_json::Value::Array(vec![value]));
            }
            None => {
                request.other.insert(name.to_string(), value);
            }
        }
    }
    if request.model.is_empty() {
        return Err(Error::invalid("model", "Missing required parameter: `model`").into());
    }
    let Some(audio) = file else {
        return Err(Error::invalid(
            "file",
            "Missing required parameter: `file` (the audio, as a multipart/form-data part named \
             `file`)",
        )
        .into());
    };
    Ok(Upload { request, audio })
}

/// Sets one of [`UPLOAD_FIELDS`] from its text.
fn set_upload_field(
    request: &mut TranscriptionRequest,
    field: &'static str,
    value: String,
) -> Result<(), Refusal> {
    let not_a = |what: &str| {
        Error::invalid(
            field,
            format!(
                "Invalid value for `{field}`: '{}' is not {what}",
                ingle::error::shown(&value)
            ),
        )
    };
    match field {
        "model" => request.model = value,
        "language" => request.language = Some(value),
        "prompt" => request.prompt = Some(value),
        "response_format" => request.response_format = Some(value),
        "temperature" => {
            let number = value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite())
                .ok_or_else(|| not_a("a number"))?;
            request.temperature = Some(number);
        }
        "stream" => {
            let flag = match value.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(not_a("a boolean ('true' or 'false')").into()),
            };
            request.stream = Some(flag);
        }
        _ => unreachable!("one of UPLOAD_FIELDS"),
    }
    Ok(())
}

/// Sets a flag when dropped: a handler's future is dropped when its connection goes away,
/// and the work it started on the blocking pool sees the flag at its next token.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs a whole-response request on the blocking pool; `work` gets a `stop()` to pass to the
/// core's `create_until`, and answers JSON text.
async fn whole<F>(state: AppState, work: F) -> Response
where
    F: FnOnce(&Client, &dyn Fn() -> bool) -> ingle::Result<String> + Send + 'static,
{
    whole_typed(state, move |client, stop| {
        Ok(("application/json", work(client, stop)?))
    })
    .await
}

/// [`whole`] for a body of any content type: `work` answers (content type, body).
async fn whole_typed<F>(state: AppState, work: F) -> Response
where
    F: FnOnce(&Client, &dyn Fn() -> bool) -> ingle::Result<(&'static str, String)> + Send + 'static,
{
    let gone = Arc::new(AtomicBool::new(false));
    let _guard = SetOnDrop(Arc::clone(&gone));
    let shutting_down = Arc::clone(&state.shutting_down);
    let stop = move || gone.load(Ordering::Acquire) || shutting_down.load(Ordering::Acquire);
    let result = tokio::task::spawn_blocking(move || work(&state.client, &stop)).await;
    match result {
        Ok(Ok((content_type, body))) => {
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Ok(Err(error)) => core_error(error),
        Err(join) => core_error(Error::internal(format!("The request failed: {join}"))),
    }
}

/// Starts a stream on the blocking pool and answers with Server-Sent Events: `data: {json}` per
/// chunk and `data: [DONE]` at the end. An error before the first chunk is an ordinary HTTP
/// error response, as with OpenAI; one after it is a last `data: {"error": ...}` event.
async fn streamed<F>(state: AppState, start: F) -> Response
where
    F: FnOnce(&Client) -> ingle::Result<JsonTextStream> + Send + 'static,
{
    streamed_events(state, true, start).await
}

/// [`streamed`], with `data: [DONE]` at the end only when `done` says so (OpenAI's typed event
/// streams, such as `transcript.text.*`, end with their last event).
async fn streamed_events<F>(state: AppState, done: bool, start: F) -> Response
where
    F: FnOnce(&Client) -> ingle::Result<JsonTextStream> + Send + 'static,
{
    let (started_tx, started_rx) = oneshot::channel::<ingle::Result<()>>();
    let (events_tx, events_rx) = mpsc::channel::<Event>(8);
    let shutting_down = Arc::clone(&state.shutting_down);
    tokio::task::spawn_blocking(move || {
        let chunks = match start(&state.client) {
            Ok(chunks) => chunks,
            Err(error) => {
                let _ = started_tx.send(Err(error));
                return;
            }
        };
        let _ = started_tx.send(Ok(()));
        produce(chunks, &events_tx, &shutting_down, done);
    });
    match started_rx.await {
        Ok(Ok(())) => {
            let events = futures_util::stream::unfold(events_rx, |mut rx| async move {
                rx.recv()
                    .await
                    .map(|event| (Ok::<_, Infallible>(event), rx))
            });
            Sse::new(events).into_response()
        }
        Ok(Err(error)) => core_error(error),
        Err(_) => core_error(Error::internal("The request stopped before it started")),
    }
}

/// Pulls `chunks` into `events` until the end (then `data: [DONE]` when `done` says so), an
/// error, shutdown, or the client going away; then drops `chunks`, which stops generation.
fn produce(
    chunks: JsonTextStream,
    events: &mpsc::Sender<Event>,
    shutting_down: &AtomicBool,
    done: bool,
) {
    for chunk in chunks {
        if events.is_closed() {
            return; // the client disconnected
        }
        if shutting_down.load(Ordering::Acquire) {
            let error = Error::new(ErrorKind::Model, "The server is shutting down")
                .with_code("server_shutdown");
            let _ = events.blocking_send(error_event(&error));
            return;
        }
        let event = match chunk {
            Ok(json) => Event::default().data(json),
            Err(error) => {
                let _ = events.blocking_send(error_event(&error));
                return;
            }
        };
        if events.blocking_send(event).is_err() {
            return;
        }
    }
    if done {
        let _ = events.blocking_send(Event::default().data("[DONE]"));
    }
}

fn error_event(error: &Error) -> Event {
    Event::default().data(error.to_openai().to_string())
}

async fn models_list(State(state): State<AppState>) -> Response {
    match to_json_text(&state.client.models.list()) {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => core_error(error),
    }
}

/// `GET /v1/models/{model}`: the id is the rest of the path, percent-decoded (ids hold `/`).
async fn models_retrieve(State(state): State<AppState>, uri: Uri) -> Response {
    let encoded = uri.path().split_once("/models/").map_or("", |(_, id)| id);
    let model = match percent_decode(encoded) {
        Some(model) => model,
        None => {
            let error = Error::invalid(
                "model",
                format!(
                    "The model id in the URL is not valid UTF-8 once percent-decoded ({})",
                    ingle::error::shown(encoded)
                ),
            )
            .with_code("invalid_model_id");
            return error_response(StatusCode::BAD_REQUEST, &error);
        }
    };
    match state
        .client
        .models
        .retrieve(&model)
        .and_then(|m| to_json_text(&m))
    {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => core_error(error),
    }
}

/// `%XX` escapes decoded; None when the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
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

async fn chat_completions(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, ChatCompletionRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if request.stream == Some(true) {
        streamed(state, move |client| {
            Ok(json_texts(client.chat.completions.stream(&request)?))
        })
        .await
    } else {
        whole(state, move |client, stop| {
            to_json_text(&client.chat.completions.create_until(&request, stop)?)
        })
        .await
    }
}

async fn completions(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, CompletionRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if request.stream == Some(true) {
        streamed(state, move |client| {
            Ok(json_texts(client.completions.stream(&request)?))
        })
        .await
    } else {
        whole(state, move |client, stop| {
            to_json_text(&client.completions.create_until(&request, stop)?)
        })
        .await
    }
}

async fn embeddings(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, EmbeddingRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    whole(state, move |client, _stop| {
        to_json_text(&client.embeddings.create(&request)?)
    })
    .await
}

/// `POST /v1/audio/speech`: the audio is sent as it is synthesised, sentence by sentence (the
/// streaming forms of wav and flac, whose headers cannot know the length), or as SSE events with
/// `stream_format: "sse"`. The first sentence is synthesised before the response starts, so an
/// error there is an ordinary error response; a later one cuts the body short (audio) or ends
/// it with an error event (SSE). A client that goes away stops synthesis at the next sentence.
async fn audio_speech(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, SpeechRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    type Started = ingle::Result<(&'static str, Vec<u8>)>;
    let (started_tx, started_rx) = oneshot::channel::<Started>();
    let (chunks_tx, chunks_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let shutting_down = Arc::clone(&state.shutting_down);
    tokio::task::spawn_blocking(move || {
        let mut stream = match state.client.audio.speech.stream(&request) {
            Ok(stream) => stream,
            Err(error) => {
                let _ = started_tx.send(Err(error));
                return;
            }
        };
        let sse = stream.is_sse();
        let first = match stream.next() {
            Some(Ok(bytes)) => bytes,
            Some(Err(error)) => {
                let _ = started_tx.send(Err(error));
                return;
            }
            None => Vec::new(),
        };
        if started_tx.send(Ok((stream.content_type(), first))).is_err() {
            return;
        }
        for chunk in stream {
            if chunks_tx.is_closed() {
                return; // the client disconnected: dropping the stream stops synthesis
            }
            let failure = |error: &Error| {
                if sse {
                    Ok(Bytes::from(format!("data: {}\n\n", error.to_openai())))
                } else {
                    // No way to say it inside audio bytes: cut the body short.
                    Err(std::io::Error::other(error.message.clone()))
                }
            };
            if shutting_down.load(Ordering::Acquire) {
                let error = Error::new(ErrorKind::Model, "The server is shutting down")
                    .with_code("server_shutdown");
                let _ = chunks_tx.blocking_send(failure(&error));
                return;
            }
            let item = match chunk {
                Ok(bytes) => Ok(Bytes::from(bytes)),
                Err(error) => {
                    let _ = chunks_tx.blocking_send(failure(&error));
                    return;
                }
            };
            if chunks_tx.blocking_send(item).is_err() {
                return;
            }
        }
    });
    match started_rx.await {
        Ok(Ok((content_type, first))) => {
            let rest = futures_util::stream::unfold(chunks_rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            });
            let first = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from(first))]);
            let body = axum::body::Body::from_stream(futures_util::StreamExt::chain(first, rest));
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Ok(Err(error)) => core_error(error),
        Err(_) => core_error(Error::internal("The request stopped before it started")),
    }
}

/// `POST /v1/audio/transcriptions`: a `multipart/form-data` upload (see [`parse_upload`]),
/// answered in its `response_format` with that format's content type, or with `stream: true`
/// as `transcript.text.delta` events and a `transcript.text.done`. The audio is transcribed
/// on the blocking pool; a client that goes away stops it before its next 30 s window.
async fn audio_transcriptions(State(state): State<AppState>, request: Request) -> Response {
    let Upload { request, audio } = match parse_upload(&state, request).await {
        Ok(upload) => upload,
        Err(refusal) => return refusal.into_response(),
    };
    if request.stream == Some(true) {
        streamed_events(state, false, move |client| {
            let events = client.audio.transcriptions.stream(&request, audio)?;
            let texts: JsonTextStream =
                Box::new(events.map(|event| event.map(|e| e.to_json().to_string())));
            Ok(texts)
        })
        .await
    } else {
        whole_typed(state, move |client, stop| {
            let response = client
                .audio
                .transcriptions
                .create_until(&request, audio, stop)?;
            Ok((response.content_type, response.body))
        })
        .await
    }
}

/// `POST /v1/audio/translations`: the same upload as transcriptions; every model ingle ships is
/// English-only, so the core answers an invalid-request error naming the model.
async fn audio_translations(State(state): State<AppState>, request: Request) -> Response {
    let Upload { request, audio } = match parse_upload(&state, request).await {
        Ok(upload) => upload,
        Err(refusal) => return refusal.into_response(),
    };
    whole_typed(state, move |client, _stop| {
        let response = client.audio.translations.create(&request, audio)?;
        Ok((response.content_type, response.body))
    })
    .await
}

/// The OpenAPI description of the served routes.
pub fn openapi() -> serde_json::Value {
    let error = serde_json::json!({"$ref": "#/components/schemas/Error"});
    let object = |required: &[&str]| serde_json::json!({"type": "object", "required": required, "additionalProperties": true});
    let json_body = |schema: serde_json::Value| serde_json::json!({"required": true, "content": {"application/json": {"schema": schema}}});
    let answers = |ok: &str, streams: bool| {
        let mut content = serde_json::json!({"application/json": {"schema": {"type": "object"}}});
        if streams {
            content["text/event-stream"] = serde_json::json!({
                "schema": {"type": "string", "description": "`data: {chunk}` events, then `data: [DONE]`"}
            });
        }
        serde_json::json!({
            "200": {"description": ok, "content": content},
            "400": {"description": "Invalid request", "content": {"application/json": {"schema": error}}},
            "401": {"description": "Missing or wrong API key", "content": {"application/json": {"schema": error}}},
            "404": {"description": "Unknown model", "content": {"application/json": {"schema": error}}},
            "408": {"description": "Request body not received in time", "content": {"application/json": {"schema": error}}},
            "413": {"description": "Request body too large", "content": {"application/json": {"schema": error}}},
            "500": {"description": "Model or server error", "content": {"application/json": {"schema": error}}},
            "503": {"description": "Too many open connections, or shutting down", "content": {"application/json": {"schema": error}}},
        })
    };
    let post = |summary: &str, required: &[&str], ok: &str, streams: bool| {
        serde_json::json!({"post": {
            "summary": summary,
            "requestBody": json_body(object(required)),
            "responses": answers(ok, streams),
        }})
    };
    let upload = |fields: serde_json::Value| {
        let mut properties = serde_json::json!({
            "file": {"type": "string", "format": "binary", "description": "The audio: wav, flac, mp3, ogg (vorbis, opus), webm or m4a"},
            "model": {"type": "string"},
            "prompt": {"type": "string"},
            "response_format": {"type": "string", "enum": ["json", "text", "srt", "verbose_json", "vtt"]},
            "temperature": {"type": "number", "minimum": 0, "maximum": 1},
        });
        for (name, schema) in fields.as_object().into_iter().flatten() {
            properties[name] = schema.clone();
        }
        serde_json::json!({"required": true, "content": {"multipart/form-data": {"schema": {
            "type": "object",
            "required": ["file", "model"],
            "properties": properties,
        }}}})
    };
    let mut transcription_answers = answers(
        "The transcription in its `response_format`: JSON (`json`, `verbose_json`), text (`text`, `srt`) or WebVTT (`vtt`); with `stream: true`, `transcript.text.delta` events then `transcript.text.done`",
        false,
    );
    transcription_answers["200"]["content"] = serde_json::json!({
        "application/json": {"schema": {"type": "object"}},
        "text/plain": {"schema": {"type": "string"}},
        "text/vtt": {"schema": {"type": "string"}},
        "text/event-stream": {"schema": {"type": "string", "description": "`transcript.text.delta` events, then `transcript.text.done`"}},
    });
    serde_json::json!({
        "openapi": "3.1.0",
        "info": {
            "title": "ingle",
            "version": ingle::VERSION,
            "description": "The OpenAI API, served by open models running in this process.",
        },
        "servers": [{"url": "/v1"}],
        "paths": {
            "/models": {"get": {"summary": "List models", "responses": answers("A `list` of `model` objects", false)}},
            "/models/{model}": {"get": {
                "summary": "Retrieve a model",
                "parameters": [{"name": "model", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": answers("A `model` object", false),
            }},
            "/chat/completions": post("Create a chat completion", &["model", "messages"], "A `chat.completion`, or with `stream: true` `chat.completion.chunk` events", true),
            "/completions": post("Create a text completion", &["model", "prompt"], "A `text_completion`, or with `stream: true` its chunks as events", true),
            "/embeddings": post("Create embeddings", &["model", "input"], "A `list` of `embedding` objects", false),
            "/audio/speech": {"post": {
                "summary": "Create speech",
                "requestBody": json_body(object(&["model", "input", "voice"])),
                "responses": {
                    "200": {"description": "The audio, sent as it is synthesised (or SSE events with `stream_format: sse`)", "content": {
                        "audio/mpeg": {}, "audio/ogg": {}, "audio/aac": {}, "audio/flac": {}, "audio/wav": {}, "audio/pcm": {},
                        "text/event-stream": {"schema": {"type": "string", "description": "`speech.audio.delta` events, then `speech.audio.done`"}},
                    }},
                    "400": {"description": "Invalid request", "content": {"application/json": {"schema": error}}},
                    "404": {"description": "Unknown model", "content": {"application/json": {"schema": error}}},
                    "500": {"description": "Model or server error", "content": {"application/json": {"schema": error}}},
                },
            }},
            "/audio/transcriptions": {"post": {
                "summary": "Create a transcription",
                "requestBody": upload(serde_json::json!({
                    "language": {"type": "string", "description": "ISO-639-1 (`en`)"},
                    "timestamp_granularities[]": {"type": "array", "items": {"type": "string", "enum": ["word", "segment"]}},
                    "stream": {"type": "boolean"},
                })),
                "responses": transcription_answers,
            }},
            "/audio/translations": {"post": {
                "summary": "Create a translation (into English: needs a multilingual model; every model ingle ships is English-only, so this is a 400)",
                "requestBody": upload(serde_json::json!({})),
                "responses": answers("The translation in its `response_format`", false),
            }},
        },
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {
                        "type": "object",
                        "required": ["message", "type"],
                        "properties": {
                            "message": {"type": "string"},
                            "type": {"type": "string"},
                            "param": {"type": ["string", "null"]},
                            "code": {"type": ["string", "null"]},
                        },
                    }},
                },
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
    })
}

/// Runs a server on a runtime of its own until SIGINT or SIGTERM (what `ingle serve` does);
/// `ready` is told the bound address first.
pub fn serve_until_signal(
    client: Client,
    addr: SocketAddr,
    options: Options,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = Server::bind(client, addr, options).await?;
        ready(server.local_addr()?);
        server.run(shutdown_signal()).await
    })
}
