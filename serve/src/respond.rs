//! Answers: whole responses and Server-Sent Events, with the work on tokio's blocking pool,
//! stopped when the client goes away or the server shuts down.

use crate::{core_error, AppState};
use axum::body::Bytes;
use axum::http::header;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use ingle::json_text::JsonTextStream;
use ingle::openai::SpeechStream;
use ingle::ErrorCode;
use ingle::{Cancel, Client, Error, ErrorKind};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// A request's cancel: set when its handler's future is dropped (the connection went away),
/// or when the response it made is dropped before its end; asked, it also says so once the
/// server shuts down. The core stops at its next step and tells the predictor (a Python
/// predictor stuck in its own code gets an exception raised in it).
pub(crate) fn request_cancel(state: &AppState) -> Cancel {
    let shutting_down = Arc::clone(&state.shutting_down);
    Cancel::polled(move || shutting_down.load(Ordering::Acquire))
}

/// Runs a whole-response request on the blocking pool, with a client whose calls stop when the
/// client goes away or the server shuts down; `work` answers JSON text.
pub(crate) async fn whole<F>(state: AppState, work: F) -> Response
where
    F: FnOnce(&Client) -> ingle::Result<String> + Send + 'static,
{
    whole_typed(state, move |client| {
        Ok(("application/json", work(client)?.into_bytes()))
    })
    .await
}

/// [`whole`] for a body of any content type: `work` answers (content type, body).
pub(crate) async fn whole_typed<F>(state: AppState, work: F) -> Response
where
    F: FnOnce(&Client) -> ingle::Result<(&'static str, Vec<u8>)> + Send + 'static,
{
    let cancel = request_cancel(&state);
    // Dropped with this future: when the connection goes, or once the answer is made.
    let _cancel_on_drop = cancel.on_drop();
    let client = state.client.with_cancel(&cancel);
    let result = tokio::task::spawn_blocking(move || work(&client)).await;
    match result {
        Ok(Ok((content_type, body))) => {
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Ok(Err(error)) => core_error(error),
        Err(join) => core_error(Error::internal(format!("The request failed: {join}"))),
    }
}

/// How a stream's events are framed, as OpenAI frames each API's.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `data: {chunk}` per chunk, then `data: [DONE]` (chat and text completions).
    Done,
    /// `data: {event}` per event, ending with the last (transcription's `transcript.text.*`).
    Typed,
    /// `event: {type}` and `data: {event}` per event, ending with the last (Responses).
    Named,
    /// As `Named`, with a failure as Anthropic's `event: error` (the Messages API): the
    /// `anthropic` SDKs skip an event without a name.
    Anthropic,
}

/// Starts a stream on the blocking pool and answers with Server-Sent Events, framed as
/// `framing` says. An error before the first chunk is an ordinary HTTP error response, as with
/// OpenAI; one after it is a last `data: {"error": ...}` event. `start` gets a client whose calls stop when the
/// client goes away (before the stream starts, or while it runs) or the server shuts down: so
/// the work it does itself before the stream exists (a transcription decodes its upload) stops
/// too, and a predictor stuck inside one output is told.
pub(crate) async fn streamed_events<F>(state: AppState, framing: Framing, start: F) -> Response
where
    F: FnOnce(&Client) -> ingle::Result<JsonTextStream> + Send + 'static,
{
    let cancel = request_cancel(&state);
    // Held by this future until the response is made, then by the response's body: dropped
    // when the client goes, before or during the stream (the body ends, when whole, only after
    // the work has).
    let cancel_on_drop = cancel.on_drop();
    let client = state.client.with_cancel(&cancel);
    let (started_tx, started_rx) = oneshot::channel::<ingle::Result<()>>();
    let (events_tx, events_rx) = mpsc::channel::<Event>(8);
    let shutting_down = Arc::clone(&state.shutting_down);
    let request_id = crate::request_id::current();
    let made = Arc::new(AtomicBool::new(false));
    let made_here = Arc::clone(&made);
    tokio::task::spawn_blocking(move || {
        let chunks = match start(&client) {
            Ok(chunks) => chunks,
            Err(error) => {
                let _ = started_tx.send(Err(error));
                return;
            }
        };
        let _ = started_tx.send(Ok(()));
        produce(
            chunks,
            &events_tx,
            &shutting_down,
            framing,
            request_id,
            &made_here,
        );
    });
    match started_rx.await {
        Ok(Ok(())) => {
            let events = futures_util::stream::unfold(
                (events_rx, cancel_on_drop),
                |(mut rx, cancel_on_drop)| async move {
                    rx.recv()
                        .await
                        .map(|event| (Ok::<_, Infallible>(event), (rx, cancel_on_drop)))
                },
            );
            let mut response = Sse::new(events).into_response();
            response
                .extensions_mut()
                .insert(crate::telemetry::StreamMade(made));
            response
        }
        Ok(Err(error)) => core_error(error),
        Err(_) => core_error(Error::internal("The request stopped before it started")),
    }
}

/// Answers with speech as it is synthesised, sentence by sentence (the streaming forms of wav
/// and flac, whose headers cannot know the length), or as SSE events with `stream_format:
/// "sse"`. The first sentence is synthesised before the response starts, so an error there is
/// an ordinary error response; a later one cuts the body short (audio) or ends it with an
/// error event (SSE). A client that goes away stops synthesis at the next sentence.
pub(crate) async fn speech<F>(state: AppState, start: F) -> Response
where
    F: FnOnce(&Client) -> ingle::Result<SpeechStream> + Send + 'static,
{
    type Started = ingle::Result<(&'static str, Vec<u8>)>;
    let (started_tx, started_rx) = oneshot::channel::<Started>();
    let (chunks_tx, chunks_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let shutting_down = Arc::clone(&state.shutting_down);
    // Held by this future, then by the body: a client that leaves stops the synthesis (and a
    // predictor inside a sentence is told).
    let cancel = request_cancel(&state);
    let cancel_on_drop = cancel.on_drop();
    let client = state.client.with_cancel(&cancel);
    tokio::task::spawn_blocking(move || {
        let mut stream = match start(&client) {
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
        // No way to say an error inside audio bytes: the body is cut short.
        let failure = |error: &Error| match sse {
            true => Ok(Bytes::from(format!("data: {}\n\n", error.to_openai()))),
            false => Err(std::io::Error::other(error.message.clone())),
        };
        pump(
            stream,
            &chunks_tx,
            &shutting_down,
            |bytes| Ok(Bytes::from(bytes)),
            failure,
        );
    });
    match started_rx.await {
        Ok(Ok((content_type, first))) => {
            let rest = futures_util::stream::unfold(
                (chunks_rx, cancel_on_drop),
                |(mut rx, cancel_on_drop)| async move {
                    rx.recv().await.map(|item| (item, (rx, cancel_on_drop)))
                },
            );
            let first = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from(first))]);
            let body = axum::body::Body::from_stream(futures_util::StreamExt::chain(first, rest));
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Ok(Err(error)) => core_error(error),
        Err(_) => core_error(Error::internal("The request stopped before it started")),
    }
}

/// Pulls `chunks` into `events` until the end (then `data: [DONE]` when the framing has it), an
/// error, shutdown, or the client going away; then drops `chunks`, which stops generation.
fn produce(
    chunks: JsonTextStream,
    events: &mpsc::Sender<Event>,
    shutting_down: &AtomicBool,
    framing: Framing,
    request_id: Option<String>,
    made: &AtomicBool,
) {
    let error_event = |error: &Error| {
        if framing == Framing::Anthropic {
            let json = ingle::anthropic::error_event(error);
            return Event::default().event("error").data(json.to_string());
        }
        let mut json = error.to_openai();
        if let Some(id) = &request_id {
            json["error"]["request_id"] = serde_json::Value::String(id.clone());
        }
        Event::default().data(json.to_string())
    };
    let event = |json: String| {
        let named = matches!(framing, Framing::Named | Framing::Anthropic)
            .then(|| serde_json::from_str::<serde_json::Value>(&json).ok())
            .flatten()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string));
        match named {
            Some(name) => Event::default().event(name).data(json),
            None => Event::default().data(json),
        }
    };
    let ended = pump(chunks, events, shutting_down, event, error_event);
    // Before the last event goes: a client that closes as soon as it has it must not race
    // the request's log line into saying the answer was cut.
    made.store(ended, Ordering::Release);
    if ended && framing == Framing::Done {
        let _ = events.blocking_send(Event::default().data("[DONE]"));
    }
}

/// Sends `items` into `out` as `ok` makes them, until they end (true), or an error, shutdown or
/// the client going away (false). An error, and shutdown as a `server_shutdown` error, is sent
/// as `failure` makes it. Returning drops `items`, which stops the work behind them. The one
/// loop of every streamed answer: SSE events and speech's audio bytes.
pub(crate) fn pump<T, U>(
    items: impl Iterator<Item = ingle::Result<T>>,
    out: &mpsc::Sender<U>,
    shutting_down: &AtomicBool,
    ok: impl Fn(T) -> U,
    failure: impl Fn(&Error) -> U,
) -> bool {
    for item in items {
        if out.is_closed() {
            return false; // the client disconnected
        }
        if shutting_down.load(Ordering::Acquire) {
            let error = Error::new(ErrorKind::Model, "The server is shutting down")
                .with_code(ErrorCode::ServerShutdown);
            let _ = out.blocking_send(failure(&error));
            return false;
        }
        let item = match item {
            Ok(value) => ok(value),
            Err(error) => {
                let _ = out.blocking_send(failure(&error));
                return false;
            }
        };
        if out.blocking_send(item).is_err() {
            return false;
        }
    }
    true
}
