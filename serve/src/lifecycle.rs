//! A replica's life as a router or an orchestrator sees it: loading its models (`/ready` says
//! 503 until they are in, and a request for one of them is answered 503 with `Retry-After`
//! rather than left waiting), serving, and draining (`POST /drain` or SIGTERM: not ready, no
//! new connections, in-flight requests finish, then exit).

use crate::{error_response, AppState};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ingle::ErrorCode;
use ingle::{Client, Error, ErrorKind};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tokio::sync::Notify;

/// Seconds a client is told to wait before it retries a model still loading, or another
/// replica while this one drains.
const RETRY_AFTER_SECONDS: &str = "1";

/// What the server is doing, shared by its routes and its run loop.
#[derive(Default)]
pub(crate) struct Lifecycle {
    /// Models loading at startup (`Options::preload`), and how each load ended: `None` while
    /// it runs, the error when it failed.
    preload: Mutex<BTreeMap<String, Option<Result<(), String>>>>,
    draining: AtomicBool,
    drain: Notify,
}

impl Lifecycle {
    pub(crate) fn new(preload: &[String]) -> Self {
        Lifecycle {
            preload: Mutex::new(preload.iter().map(|m| (m.clone(), None)).collect()),
            ..Lifecycle::default()
        }
    }

    fn preload(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Option<Result<(), String>>>> {
        self.preload.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `model` is among those still loading at startup.
    fn loading(&self, model: &str) -> bool {
        self.preload().get(model).is_some_and(Option::is_none)
    }

    /// Loads the preloaded models one after the other (on 2 cores, loads side by side only
    /// compete), off the async threads. A model that fails to load is logged and keeps the
    /// server not ready; requests for it then get its error, as without preloading.
    pub(crate) async fn load(&self, client: &Client) {
        let models: Vec<String> = self.preload().keys().cloned().collect();
        for model in models {
            let started = std::time::Instant::now();
            let loading = client.clone();
            let tag = model.clone();
            let loaded = tokio::task::spawn_blocking(move || loading.predictor(&tag).map(drop))
                .await
                .unwrap_or_else(|e| Err(Error::internal(format!("loading panicked: {e}"))));
            match &loaded {
                Ok(()) => tracing::info!(
                    target: "ingle::serve",
                    model = %model,
                    seconds = started.elapsed().as_secs_f64(),
                    "model loaded"
                ),
                Err(error) => tracing::error!(
                    target: "ingle::serve",
                    model = %model,
                    error = %error,
                    "model failed to load; the server stays not ready"
                ),
            }
            self.preload()
                .insert(model, Some(loaded.map_err(|e| e.to_string())));
        }
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Starts draining (once); the run loop hears of it.
    pub(crate) fn start_drain(&self) {
        if !self.draining.swap(true, Ordering::AcqRel) {
            tracing::info!(target: "ingle::serve", "draining: not ready, finishing in-flight requests");
            self.drain.notify_one();
        }
    }

    /// Completes once a drain has been asked for.
    pub(crate) async fn drain_requested(&self) {
        if self.draining() {
            return;
        }
        self.drain.notified().await;
    }
}

/// `GET /ready`: 200 once every preloaded model is in; 503 with `Retry-After` while one is
/// loading (or failed to) or the server drains.
pub(crate) async fn ready(State(state): State<AppState>) -> Response {
    let lifecycle = &state.lifecycle;
    let (loading, failed): (Vec<String>, Vec<serde_json::Value>) = {
        let preload = lifecycle.preload();
        (
            preload
                .iter()
                .filter(|(_, r)| r.is_none())
                .map(|(m, _)| m.clone())
                .collect(),
            preload
                .iter()
                .filter_map(|(m, r)| match r {
                    Some(Err(e)) => Some(serde_json::json!({"model": m, "error": e})),
                    _ => None,
                })
                .collect(),
        )
    };
    let status = if lifecycle.draining() {
        "draining"
    } else if !failed.is_empty() {
        "failed"
    } else if !loading.is_empty() {
        "loading"
    } else {
        let body = serde_json::json!({"status": "ready"});
        return (StatusCode::OK, axum::Json(body)).into_response();
    };
    let body = serde_json::json!({"status": status, "loading": loading, "failed": failed});
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECONDS),
    );
    response
}

/// `POST /drain` (behind the API key): what SIGTERM does.
pub(crate) async fn drain(State(state): State<AppState>) -> Response {
    state.lifecycle.start_drain();
    (
        StatusCode::ACCEPTED,
        axum::Json(serde_json::json!({"status": "draining"})),
    )
        .into_response()
}

/// Middleware over `/v1`: while the server drains, a request that still reaches it (on a
/// connection opened before) is refused at once, so its client retries elsewhere.
pub(crate) async fn refuse_while_draining(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if !state.lifecycle.draining() {
        return next.run(request).await;
    }
    let error = Error::new(
        ErrorKind::Model,
        "This server is shutting down and takes no new requests; retry (another replica)",
    )
    .with_code(ErrorCode::ServerDraining);
    let mut response = retry_later(error);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A 503 with `Retry-After`, for a request for `model` while it loads at startup; `None`
/// when the request may go on.
pub(crate) fn refuse_if_loading(state: &AppState, model: &str) -> Option<Response> {
    if let Some(refusal) = refuse_a_file_path(model) {
        return Some(refusal);
    }
    crate::telemetry::note_model(model);
    // Preloads are kept by tag: a model asked for by its name without a namespace too.
    let tag = state.client.models.retrieve(model).map(|m| m.id);
    if !state.lifecycle.loading(tag.as_deref().unwrap_or(model)) {
        return None;
    }
    let error = Error::new(
        ErrorKind::Model,
        format!(
            "The model `{}` is still loading; retry shortly",
            ingle::error::shown(model)
        ),
    )
    .with_param("model")
    .with_code(ErrorCode::ModelLoading);
    Some(retry_later(error))
}

fn retry_later(error: Error) -> Response {
    let mut response = error_response(StatusCode::SERVICE_UNAVAILABLE, &error);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECONDS),
    );
    response
}

/// A model named by a file's path (`/models/x.gguf`) is served in-process and by the CLI, not
/// over HTTP: a client must not make the server open, or probe for, files of its choosing.
pub(crate) fn refuse_a_file_path(model: &str) -> Option<Response> {
    if !std::path::Path::new(model).is_absolute() {
        return None;
    }
    let error = Error::new(
        ErrorKind::NotFound,
        format!(
            "The model `{}` does not exist (a model file is served by its path in-process and \
             by `ingle chat --model PATH`, not over HTTP: give it a tag in a config)",
            ingle::error::shown(model)
        ),
    )
    .with_param("model")
    .with_code(ErrorCode::ModelNotFound);
    Some(error_response(StatusCode::NOT_FOUND, &error))
}
