//! `ingle serve`: the OpenAI HTTP API (`/v1/...`) over the in-process engine, for clients that
//! speak HTTP (any OpenAI SDK pointed at its base URL). No logic of its own: requests are parsed
//! by the core's request types, run by the core's `Client`, and answered with the core's
//! response JSON; streams are Server-Sent Events exactly as OpenAI sends them.
//!
//! - Work that blocks (loading, generating, embedding) runs on tokio's blocking pool; the core
//!   batches concurrent requests on one model itself.
//! - A stream's producer checks before every chunk whether the client is still there, and drops
//!   the core stream (which stops generation) as soon as it is not. A non-streamed request whose
//!   connection goes away stops at the next token too (its cancel, set when the handler is dropped).
//! - Shutdown (SIGINT, or the future given to [`Server::run`]) ends in-flight streams with an
//!   error event and stops whole requests, so nothing hangs. A drain (SIGTERM, `POST /drain`)
//!   first stops taking connections and lets in-flight requests finish, for up to
//!   [`Options::drain_timeout`] (`lifecycle`).
//! - Operators read `/health`, `/ready` and `/metrics`, and one log line a request
//!   (`telemetry`; docs/operations.md).
//! - Hostile or slow clients cannot hold the server: header, body, idle and write timeouts, a
//!   body limit enforced while reading (a larger one for audio uploads), and a cap on open
//!   connections ([`Options`], `conn`).
//! - Audio uploads (`/v1/audio/transcriptions`, `/v1/audio/translations`) are
//!   `multipart/form-data` as OpenAI takes them, read whole (within the upload limit) and
//!   parsed into the core's `TranscriptionRequest` and `TranscriptionAudio`.
//!   Generation never waits on a socket: the engine produces into the request's own buffer
//!   (bounded by its `max_tokens`) and frees its sequence when done, whatever the client reads.

mod anthropic;
mod auth;
mod body;
mod conn;
mod guard;
mod handlers;
mod lifecycle;
mod openapi;
mod request_id;
mod respond;
mod telemetry;
mod upload;

use axum::http::{Method, StatusCode, Uri};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use ingle::ErrorCode;
use ingle::{Client, Error, ErrorKind};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

pub use guard::{check_allowed_host, check_cors_origin};
pub use openapi::openapi;
#[doc(hidden)]
pub use upload::parse_multipart_for_fuzzing;

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
    /// Models loaded when the server starts, before `/ready` answers 200; a request for one
    /// still loading is answered 503 with `Retry-After`. Others load on their first request.
    pub preload: Vec<String>,
    /// How long a drain (SIGTERM, `POST /drain`) lets in-flight requests run before it ends
    /// them with the shutdown error event (default 30 s).
    pub drain_timeout: Duration,
    /// Serve `GET /metrics` (Prometheus text; behind the API key when one is set).
    pub metrics: bool,
    /// Serve `/metrics` without the API key, for scrapers that cannot send one (the Gateway
    /// API Inference Extension's endpoint picker).
    pub metrics_public: bool,
    /// Without an API key, `Host` names served besides loopback names, IP addresses and this
    /// machine's name (which are always): `models.example.com`, `.example.com` (a domain and
    /// its subdomains), or `*` (any). Other names are refused (403), which stops DNS
    /// rebinding. With a key every name is served (a web page cannot know the key).
    pub allowed_hosts: Vec<String>,
    /// Browser origins whose pages may call the server (CORS) besides this machine's own
    /// (`http://localhost:PORT`, `http://127.0.0.1:PORT`): `https://app.example.com`, or `*`.
    /// A request from any other origin is refused (403) before it runs.
    pub cors_origins: Vec<String>,
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
            preload: Vec::new(),
            drain_timeout: Duration::from_secs(30),
            metrics: true,
            metrics_public: false,
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) client: Client,
    pub(crate) api_key: Option<Arc<str>>,
    pub(crate) body_limit: usize,
    pub(crate) upload_limit: usize,
    pub(crate) body_timeout: Duration,
    /// Set when the server shuts down: streams end with an error event, whole requests stop.
    pub(crate) shutting_down: Arc<AtomicBool>,
    pub(crate) lifecycle: Arc<lifecycle::Lifecycle>,
    pub(crate) telemetry: Arc<telemetry::Telemetry>,
    pub(crate) policy: Arc<guard::Policy>,
}

/// A bound server, ready to run.
pub struct Server {
    client: Client,
    listener: TcpListener,
    router: Router,
    options: Arc<Options>,
    shutting_down: Arc<AtomicBool>,
    lifecycle: Arc<lifecycle::Lifecycle>,
}

/// Asks a running [`Server`] to drain (what SIGTERM and `POST /drain` do).
#[derive(Clone)]
pub struct Drainer(Arc<lifecycle::Lifecycle>);

impl Drainer {
    pub fn drain(&self) {
        self.0.start_drain();
    }

    /// Whether a drain has started (by this handle, SIGTERM or `POST /drain`).
    pub fn draining(&self) -> bool {
        self.0.draining()
    }
}

impl Server {
    /// Binds `addr` (port 0 picks a free port) and prepares the routes over `client`.
    pub async fn bind(client: Client, addr: SocketAddr, options: Options) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let shutting_down = Arc::new(AtomicBool::new(false));
        let lifecycle = Arc::new(lifecycle::Lifecycle::new(&options.preload));
        let state = AppState {
            client: client.clone(),
            api_key: options.api_key.clone().map(Arc::from),
            body_limit: options.body_limit,
            upload_limit: options.upload_limit,
            body_timeout: options.body_timeout,
            shutting_down: Arc::clone(&shutting_down),
            lifecycle: Arc::clone(&lifecycle),
            telemetry: Arc::new(telemetry::Telemetry::new(client.clone())),
            policy: Arc::new(guard::Policy::new(
                &options.allowed_hosts,
                &options.cors_origins,
                options.api_key.is_none(),
            )),
        };
        Ok(Server {
            client,
            listener,
            router: router(state, &options),
            options: Arc::new(options),
            shutting_down,
            lifecycle,
        })
    }

    /// A handle that makes the running server drain.
    pub fn drainer(&self) -> Drainer {
        Drainer(Arc::clone(&self.lifecycle))
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then ends in-flight work and returns once every
    /// connection is closed; or until a drain is asked for ([`Server::drainer`], `POST
    /// /drain`), then stops accepting, lets in-flight requests finish for up to
    /// `drain_timeout` (or until `shutdown` completes), ends the rest, and returns.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let preload = {
            let (lifecycle, client) = (Arc::clone(&self.lifecycle), self.client.clone());
            tokio::spawn(async move { lifecycle.load(&client).await })
        };
        let lifecycle = Arc::clone(&self.lifecycle);
        let drain = async move { lifecycle.drain_requested().await };
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
                        tracing::info!(target: "ingle::serve", model = %tag, idle_seconds = idle.as_secs_f64(), "keep-alive: unloaded");
                    }
                }
            })
        });
        let stop = conn::Stop {
            now: shutdown,
            drain,
            flag: self.shutting_down,
            grace,
        };
        let served = conn::serve(self.listener, self.router, self.options, stop).await;
        if let Some(task) = keep_alive {
            task.abort();
        }
        preload.abort();
        served
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Interrupt,
    Terminate,
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    Signals::listen().next().await;
}

/// The shutdown signals (Ctrl-C, and SIGTERM on Unix), listened to from when this is made: so
/// one that comes as soon as the server says it is serving is not missed (it would otherwise
/// take its default action, and end the process without a drain).
struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Starts listening; within a tokio runtime.
    fn listen() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal.
    async fn next(&mut self) -> Signal {
        #[cfg(unix)]
        {
            async fn received(signal: &mut Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                _ = received(&mut self.interrupt) => Signal::Interrupt,
                _ = received(&mut self.terminate) => Signal::Terminate,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            Signal::Interrupt
        }
    }
}

fn router(state: AppState, options: &Options) -> Router {
    let v1 = handlers::routes()
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            lifecycle::refuse_while_draining,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            telemetry::observe,
        ));
    // What only the operator may do or see: behind the API key too. Without a key, a drain
    // is taken only from this machine.
    let mut operator = Router::new().route(
        "/drain",
        post(lifecycle::drain).route_layer(middleware::from_fn_with_state(
            state.clone(),
            guard::drain_from_loopback,
        )),
    );
    let mut public = Router::new();
    match (options.metrics, options.metrics_public) {
        (true, false) => operator = operator.route("/metrics", get(telemetry::metrics)),
        (true, true) => public = public.route("/metrics", get(telemetry::metrics)),
        (false, _) => {}
    }
    let operator = operator.route_layer(middleware::from_fn_with_state(
        state.clone(),
        auth::authorize,
    ));
    public
        .route(
            "/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .route("/ready", get(lifecycle::ready))
        .route("/openapi.json", get(|| async { axum::Json(openapi()) }))
        .merge(operator)
        .merge(v1)
        .fallback(unknown_route)
        .method_not_allowed_fallback(unknown_route)
        .layer(middleware::from_fn(anthropic::error_shape))
        // Outside the routes, so a refused Host or Origin reaches none of them, and a CORS
        // preflight (OPTIONS) is answered for every route.
        .layer(middleware::from_fn_with_state(state.clone(), guard::check))
        .layer(middleware::from_fn(request_id::with_request_id))
        .with_state(state)
}

/// An OpenAI error body with its status.
pub(crate) fn error_response(status: StatusCode, error: &Error) -> Response {
    (status, axum::Json(error.to_openai())).into_response()
}

/// The status the OpenAI API answers a core error with. A cancellation only happens here when
/// the server shuts down, hence 503.
pub(crate) fn status_of(error: &Error) -> StatusCode {
    match error.kind {
        ErrorKind::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
        kind => {
            StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

pub(crate) fn core_error(error: Error) -> Response {
    error_response(status_of(&error), &error)
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    let error = Error::new(
        ErrorKind::NotFound,
        format!("Unknown request URL: {method} {}", uri.path()),
    )
    .with_code(ErrorCode::UnknownUrl);
    error_response(StatusCode::NOT_FOUND, &error)
}

/// Runs a server on a runtime of its own (what `ingle serve` does): SIGTERM drains it (see
/// [`Server::run`]), SIGINT (Ctrl-C) stops it at once, as does SIGTERM during a drain
/// (whether SIGTERM or `POST /drain` started it). `ready` is told the bound address first.
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
        let mut signals = Signals::listen();
        let server = Server::bind(client, addr, options).await?;
        ready(server.local_addr()?);
        let drainer = server.drainer();
        let now = async move {
            let first = signals.next().await;
            // A SIGTERM while a drain runs (one `POST /drain` started) stops at once, as a
            // second one does.
            if first == Signal::Terminate && !drainer.draining() {
                drainer.drain();
                signals.next().await;
            }
        };
        server.run(now).await
    })
}
