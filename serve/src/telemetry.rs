//! What `ingle serve` tells operators: `GET /metrics` (Prometheus / OpenMetrics text, through
//! the Prometheus project's `prometheus-client`) and one log line a request (`tracing`).
//!
//! Two sources make up the metrics:
//! - **per request**, counted here by [`observe`], a middleware over `/v1`: requests by surface,
//!   model and status, requests in flight, and request duration (to the last byte of a stream);
//! - **per model**, read from the core's [`ingle::Metrics`] of each loaded model at scrape time
//!   ([`ModelCollector`]): queued and running requests, KV-cache cells, tokens, audio seconds,
//!   and the engine's histograms (queue wait, time to first token, time per output token).
//!
//! Names and what routers read of them: docs/operations.md.

use crate::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ingle::{Client, Metrics};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// The labels of a request's metrics. `model` is a registered model's tag or `""` (a request
/// naming no model, or one that does not exist: a client's typos are not a label each).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    surface: &'static str,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    surface: &'static str,
    model: String,
    status: u16,
}

/// The server's metrics registry and its per-request families.
pub(crate) struct Telemetry {
    registry: Registry,
    requests: Family<StatusLabels, Counter>,
    in_flight: Family<RequestLabels, Gauge>,
    duration: Family<RequestLabels, Histogram>,
}

impl Telemetry {
    pub(crate) fn new(client: Client) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<StatusLabels, Counter>::default();
        registry.register(
            "ingle_requests",
            "Requests answered, by surface, model and HTTP status",
            requests.clone(),
        );
        let in_flight = Family::<RequestLabels, Gauge>::default();
        registry.register(
            "ingle_requests_in_flight",
            "Requests being answered now (queued, running or streaming)",
            in_flight.clone(),
        );
        let duration = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(ingle::predict::HISTOGRAM_BOUNDS.iter().copied())
        });
        registry.register_with_unit(
            "ingle_request_duration",
            "Time from a request's arrival to the last byte of its answer",
            Unit::Seconds,
            duration.clone(),
        );
        registry.register_collector(Box::new(ModelCollector { client }));
        Telemetry {
            registry,
            requests,
            in_flight,
            duration,
        }
    }

    /// The metrics in OpenMetrics text, which Prometheus and its text-format parsers read.
    pub(crate) fn render(&self) -> Result<String, fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    let telemetry = std::sync::Arc::clone(&state.telemetry);
    // Reading every model's figures takes a few locks: off the async threads.
    match tokio::task::spawn_blocking(move || telemetry.render()).await {
        Ok(Ok(text)) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        _ => crate::core_error(ingle::Error::internal("Cannot render the metrics")),
    }
}

/// The OpenAI surface a `/v1` path belongs to, as metrics and logs name it.
fn surface_of(path: &str) -> &'static str {
    let path = path.strip_prefix("/v1").unwrap_or(path);
    match path {
        "/chat/completions" => "chat",
        "/completions" => "completions",
        "/embeddings" => "embeddings",
        "/rerank" | "/v2/rerank" => "rerank",
        p if p.starts_with("/messages") => "messages",
        "/audio/speech" => "speech",
        "/audio/transcriptions" => "transcription",
        "/audio/translations" => "translation",
        p if p.starts_with("/responses") => "responses",
        p if p.starts_with("/models") => "models",
        "/tokenize" | "/detokenize" => "tokenize",
        _ => "other",
    }
}

/// On a streamed response: set once the stream has been made to its end (its last event
/// handed to the connection), so the log line says `completed` even when the client closes
/// the connection on the last event before the body is polled to its end.
#[derive(Clone)]
pub(crate) struct StreamMade(pub(crate) std::sync::Arc<std::sync::atomic::AtomicBool>);

tokio::task_local! {
    /// The request being answered, so its handler can name its model once the body is parsed.
    static TRACKED: std::sync::Arc<Tracked>;
}

/// A request from its arrival to its last byte: its surface, the model it names (a label
/// once known and registered), and the in-flight gauge it holds up meanwhile.
struct Tracked {
    telemetry: std::sync::Arc<Telemetry>,
    client: Client,
    surface: &'static str,
    /// The model label it is counted under in `ingle_requests_in_flight` now.
    model: std::sync::Mutex<String>,
}

impl Tracked {
    /// Counts the request in flight (under no model, until its handler names one).
    fn start(state: &AppState, surface: &'static str) -> std::sync::Arc<Self> {
        let tracked = Tracked {
            telemetry: std::sync::Arc::clone(&state.telemetry),
            client: state.client.clone(),
            surface,
            model: std::sync::Mutex::new(String::new()),
        };
        tracked
            .telemetry
            .in_flight
            .get_or_create(&tracked.labels())
            .inc();
        std::sync::Arc::new(tracked)
    }

    fn model(&self) -> std::sync::MutexGuard<'_, String> {
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn labels(&self) -> RequestLabels {
        RequestLabels {
            surface: self.surface,
            model: self.model().clone(),
        }
    }

    /// Moves the request to `model`'s label. Only a registered model is a label: anything
    /// else a client sends would grow the series without bound.
    fn note(&self, model: &str) {
        // Under its tag, also when named without its namespace (`smollm2-135m-instruct`).
        let Ok(found) = self.client.models.retrieve(model) else {
            return;
        };
        let model = found.id.as_str();
        let mut current = self.model();
        if *current == model {
            return;
        }
        let in_flight = &self.telemetry.in_flight;
        in_flight
            .get_or_create(&RequestLabels {
                surface: self.surface,
                model: current.clone(),
            })
            .dec();
        *current = model.to_string();
        in_flight
            .get_or_create(&RequestLabels {
                surface: self.surface,
                model: current.clone(),
            })
            .inc();
    }
}

/// Records the model a request names (for its metrics and log line).
pub(crate) fn note_model(model: &str) {
    let _ = TRACKED.try_with(|tracked| tracked.note(model));
}

/// The status a request is recorded with when its client left before it was answered
/// (nginx's "client closed request").
const CLIENT_LEFT: u16 = 499;

/// Middleware over `/v1`: counts the request in flight from its arrival, times it to its last
/// byte, and logs one line when it ends, also when its client leaves before the answer (the
/// handler is then dropped, and the request recorded as not completed, status 499; 503 when
/// the server was stopping).
pub(crate) async fn observe(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let tracked = Tracked::start(&state, surface_of(request.uri().path()));
    let id = request
        .headers()
        .get(crate::request_id::REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut abandoned = Abandoned(
        std::sync::Arc::clone(&state.shutting_down),
        Some(Done {
            tracked: std::sync::Arc::clone(&tracked),
            status: CLIENT_LEFT,
            started,
            method: request.method().to_string(),
            // As the routes were nested under `/v1`, so that log queries keep working.
            path: {
                let path = request.uri().path();
                path.strip_prefix("/v1").unwrap_or(path).to_string()
            },
            id,
            stream: false,
            made: None,
        }),
    );
    let response = TRACKED.scope(tracked, next.run(request)).await;
    let mut done = abandoned.1.take().expect("recorded only once");
    done.status = response.status().as_u16();
    done.stream = is_stream(response.headers());
    done.made = response.extensions().get::<StreamMade>().cloned();
    let (parts, body) = response.into_parts();
    Response::from_parts(
        parts,
        Body::new(ObservedBody {
            inner: body,
            done: Some(done),
        }),
    )
}

/// A request whose handler is dropped before it answers: recorded as not completed, with
/// 499 when its client left, 503 when the server was stopping (the shutdown flag).
struct Abandoned(std::sync::Arc<std::sync::atomic::AtomicBool>, Option<Done>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(mut done) = self.1.take() {
            if self.0.load(std::sync::atomic::Ordering::Acquire) {
                done.status = 503;
            }
            done.record(false);
        }
    }
}

fn is_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// What is recorded when a request's answer has been sent (or abandoned).
struct Done {
    tracked: std::sync::Arc<Tracked>,
    status: u16,
    started: Instant,
    method: String,
    path: String,
    id: String,
    stream: bool,
    made: Option<StreamMade>,
}

impl Done {
    fn record(self, completed: bool) {
        let completed = completed
            || self
                .made
                .as_ref()
                .is_some_and(|m| m.0.load(std::sync::atomic::Ordering::Acquire));
        let seconds = self.started.elapsed().as_secs_f64();
        let labels = self.tracked.labels();
        let t = &self.tracked.telemetry;
        t.in_flight.get_or_create(&labels).dec();
        t.duration.get_or_create(&labels).observe(seconds);
        t.requests
            .get_or_create(&StatusLabels {
                surface: labels.surface,
                model: labels.model.clone(),
                status: self.status,
            })
            .inc();
        tracing::info!(
            target: "ingle::serve",
            request_id = %self.id,
            method = %self.method,
            path = %self.path,
            surface = labels.surface,
            model = %labels.model,
            status = self.status,
            stream = self.stream,
            // false: the client left (or the server stopped) before the answer's last byte.
            completed,
            duration_ms = (seconds * 1000.0).round() as u64,
            "request"
        );
    }
}

/// A response body that records its request when its last byte is out, or when it is dropped
/// before that (the client went away).
struct ObservedBody {
    inner: Body,
    done: Option<Done>,
}

impl http_body::Body for ObservedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            if let Some(done) = self.done.take() {
                done.record(true);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ObservedBody {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            // A body whose end was never polled: sent whole in one frame (hyper stops at
            // `is_end_stream`), or abandoned.
            let completed = http_body::Body::is_end_stream(&self.inner);
            done.record(completed);
        }
    }
}

/// Per-model figures, read from the core at each scrape.
struct ModelCollector {
    client: Client,
}

impl fmt::Debug for ModelCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ModelCollector")
    }
}

type Describe = (&'static str, &'static str, Option<Unit>, MetricType);
/// A figure of a model's [`Metrics`], as a sample's value.
type Figure = fn(&Metrics) -> f64;
type HistogramOf = fn(&Metrics) -> &ingle::predict::Histogram;

impl Collector for ModelCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let models = self.client.loaded_metrics();
        let gauges: [(Describe, Figure); 7] = [
            (
                ("ingle_requests_waiting", "Requests waiting for a free sequence of the model (vLLM: num_requests_waiting)", None, MetricType::Gauge),
                |m| m.queued_requests as f64,
            ),
            (
                ("ingle_requests_running", "Requests the model is running now (vLLM: num_requests_running)", None, MetricType::Gauge),
                |m| m.active_requests as f64,
            ),
            (
                ("ingle_kv_cache_cells_used", "KV-cache cells (token positions) held by running sequences", None, MetricType::Gauge),
                |m| m.kv_cells_used as f64,
            ),
            (
                ("ingle_kv_cache_cells", "KV-cache cells of the model's context (n_ctx x parallel)", None, MetricType::Gauge),
                |m| m.kv_cells_total as f64,
            ),
            (
                ("ingle_kv_cache_usage", "Share of the KV cache held by running sequences, 0 to 1 (vLLM: kv_cache_usage_perc)", Some(Unit::Ratios), MetricType::Gauge),
                |m| m.kv_cells_used as f64 / m.kv_cells_total.max(1) as f64,
            ),
            (
                ("ingle_model_memory", "Memory the model takes: a chat model's weights and KV cache, an ONNX model's weights file", Some(Unit::Bytes), MetricType::Gauge),
                |m| m.memory_bytes as f64,
            ),
            (
                ("ingle_model_loaded", "1 for each model in memory", None, MetricType::Gauge),
                |_| 1.0,
            ),
        ];
        for (describe, value) in gauges {
            each_model(&mut encoder, describe, &models, |mut metric, m| {
                metric.encode_gauge(&value(m))
            })?;
        }
        let counters: [(Describe, Figure); 8] = [
            (
                (
                    "ingle_prompt_tokens",
                    "Prompt tokens taken in (embedding inputs included)",
                    None,
                    MetricType::Counter,
                ),
                |m| m.prompt_tokens as f64,
            ),
            (
                (
                    "ingle_generation_tokens",
                    "Tokens generated (speech: sentences; transcription: 30 s windows)",
                    None,
                    MetricType::Counter,
                ),
                |m| m.generated_tokens as f64,
            ),
            (
                (
                    "ingle_forced_tokens",
                    "Generated tokens a grammar forced, decoded in a batch without sampling \
                     (jump-forward decoding)",
                    None,
                    MetricType::Counter,
                ),
                |m| m.forced_tokens as f64,
            ),
            (
                (
                    "ingle_spec_decode_num_draft_tokens",
                    "Tokens proposed by speculative decoding (n-gram lookup)",
                    None,
                    MetricType::Counter,
                ),
                |m| m.draft_tokens as f64,
            ),
            (
                (
                    "ingle_spec_decode_num_accepted_tokens",
                    "Of the tokens speculative decoding proposed, those the model's own sampling \
                     confirmed",
                    None,
                    MetricType::Counter,
                ),
                |m| m.accepted_draft_tokens as f64,
            ),
            (
                (
                    "ingle_cancelled_requests",
                    "Requests stopped because their client went away",
                    None,
                    MetricType::Counter,
                ),
                |m| m.cancelled_requests as f64,
            ),
            (
                (
                    "ingle_audio_input",
                    "Seconds of audio transcribed or translated",
                    Some(Unit::Seconds),
                    MetricType::Counter,
                ),
                |m| m.audio_input_ms as f64 / 1000.0,
            ),
            (
                (
                    "ingle_audio_output",
                    "Seconds of speech made",
                    Some(Unit::Seconds),
                    MetricType::Counter,
                ),
                |m| m.audio_output_ms as f64 / 1000.0,
            ),
        ];
        for (describe, value) in counters {
            each_model(&mut encoder, describe, &models, |mut metric, m| {
                metric.encode_counter::<prometheus_client::encoding::NoLabelSet, _, f64>(
                    &value(m),
                    None,
                )
            })?;
        }
        let histograms: [(Describe, HistogramOf); 3] = [
            (
                (
                    "ingle_queue_wait",
                    "From a request's arrival to its start on a free sequence",
                    Some(Unit::Seconds),
                    MetricType::Histogram,
                ),
                |m| &m.queue_wait,
            ),
            (
                (
                    "ingle_time_to_first_token",
                    "From a request's arrival to its first token",
                    Some(Unit::Seconds),
                    MetricType::Histogram,
                ),
                |m| &m.time_to_first_token,
            ),
            (
                (
                    "ingle_time_per_output_token",
                    "Per request, the time between its tokens after the first",
                    Some(Unit::Seconds),
                    MetricType::Histogram,
                ),
                |m| &m.time_per_output_token,
            ),
        ];
        for (describe, histogram) in histograms {
            each_model(&mut encoder, describe, &models, |mut metric, m| {
                let h = histogram(m);
                // prometheus-client takes each bucket's own count, and `f64::MAX` for +Inf.
                let buckets: Vec<(f64, u64)> = ingle::predict::HISTOGRAM_BOUNDS
                    .iter()
                    .copied()
                    .chain([f64::MAX])
                    .zip(h.counts)
                    .collect();
                metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    h.sum_seconds(),
                    h.count(),
                    &buckets,
                    None,
                )
            })?;
        }
        let rss = resident_bytes();
        let metric = encoder.encode_descriptor(
            "process_resident_memory",
            "Resident memory of the server process",
            Some(&Unit::Bytes),
            MetricType::Gauge,
        )?;
        let mut metric = metric;
        metric.encode_gauge(&(rss as f64))
    }
}

/// One metric family with a sample per loaded model (`model` label). Models with no use for a
/// figure (a KV cache for an embedding model) are left out of it.
fn each_model(
    encoder: &mut DescriptorEncoder,
    (name, help, unit, kind): Describe,
    models: &[(String, Metrics)],
    mut sample: impl FnMut(MetricEncoder, &Metrics) -> fmt::Result,
) -> fmt::Result {
    let applies = |m: &Metrics| match name {
        n if n.starts_with("ingle_kv_cache") => m.kv_cells_total > 0,
        _ => true,
    };
    let mut family = encoder.encode_descriptor(name, help, unit.as_ref(), kind)?;
    for (tag, m) in models.iter().filter(|(_, m)| applies(m)) {
        let labels = [("model", tag.as_str())];
        sample(family.encode_family(&labels)?, m)?;
    }
    Ok(())
}

/// The process's resident memory, in bytes (0 where it cannot be read).
fn resident_bytes() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // statm: sizes in pages; the second is resident.
        let pages = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        pages * page.max(0) as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}
