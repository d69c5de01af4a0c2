//! The `/v1/...` routes: each parses its request, runs it on the core's `Client`, and answers
//! with [`crate::respond`].

use crate::body::parse_body;
use crate::lifecycle::refuse_if_loading;
use crate::respond::{pump, streamed, streamed_events, whole, whole_typed, Framing};
use crate::upload::{parse_upload, Upload};
use crate::{core_error, error_response, AppState};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use ingle::json_text::{json_texts, to_json_text, JsonTextStream};
use ingle::openai::{
    ChatCompletionRequest, CompletionRequest, EmbeddingRequest, ResponseRequest, SpeechRequest,
};
use ingle::Error;
use ingle::ErrorCode;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

pub(crate) async fn models_list(State(state): State<AppState>) -> Response {
    let mut list = state.client.models.list();
    // A model file used by its path in-process (`ingle.serve` of a client that did) is no
    // model of the HTTP API: its path is the server's business.
    list.data
        .retain(|m| !std::path::Path::new(&m.id).is_absolute());
    match to_json_text(&list) {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => core_error(error),
    }
}

/// `GET /v1/models/{model}`: the id is the rest of the path, percent-decoded (ids hold `/`).
pub(crate) async fn models_retrieve(State(state): State<AppState>, uri: Uri) -> Response {
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
            .with_code(ErrorCode::InvalidModelId);
            return error_response(StatusCode::BAD_REQUEST, &error);
        }
    };
    if let Some(refusal) = crate::lifecycle::refuse_a_file_path(&model) {
        return refusal;
    }
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

pub(crate) async fn chat_completions(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, ChatCompletionRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    if request.stream == Some(true) {
        streamed(state, move |client| {
            Ok(json_texts(client.chat.completions.stream(&request)?))
        })
        .await
    } else {
        whole(state, move |client| {
            to_json_text(&client.chat.completions.create(&request)?)
        })
        .await
    }
}

pub(crate) async fn completions(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, CompletionRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    if request.stream == Some(true) {
        streamed(state, move |client| {
            Ok(json_texts(client.completions.stream(&request)?))
        })
        .await
    } else {
        whole(state, move |client| {
            to_json_text(&client.completions.create(&request)?)
        })
        .await
    }
}

/// `POST /v1/responses`: a whole `response`, or with `stream: true` its events (`event:` and
/// `data:` lines, as OpenAI sends them), ending with `response.completed`.
pub(crate) async fn responses_create(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, ResponseRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    if request.stream {
        streamed_events(state, Framing::Named, move |client| {
            Ok(json_texts(client.responses.stream(&request)?))
        })
        .await
    } else {
        whole(state, move |client| {
            Ok(client.responses.create(&request)?.to_string())
        })
        .await
    }
}

/// `POST /v1/responses/input_tokens`: `{"object": "response.input_tokens", "input_tokens": N}`.
pub(crate) async fn responses_input_tokens(
    State(state): State<AppState>,
    request: Request,
) -> Response {
    let request = match parse_body(&state, request, ResponseRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    whole(state, move |client| {
        Ok(client.responses.input_tokens(&request)?.to_string())
    })
    .await
}

/// The response id of `/v1/responses/{id}` and `/v1/responses/{id}/input_items`.
fn response_id(uri: &Uri) -> String {
    let rest = uri
        .path()
        .split_once("/responses/")
        .map_or("", |(_, rest)| rest);
    let id = rest.strip_suffix("/input_items").unwrap_or(rest);
    percent_decode(id).unwrap_or_else(|| id.to_string())
}

/// `GET /v1/responses/{id}`: a stored response.
pub(crate) async fn responses_retrieve(State(state): State<AppState>, uri: Uri) -> Response {
    let id = response_id(&uri);
    whole(state, move |client| {
        Ok(client.responses.retrieve(&id)?.to_string())
    })
    .await
}

/// `DELETE /v1/responses/{id}`.
pub(crate) async fn responses_delete(State(state): State<AppState>, uri: Uri) -> Response {
    let id = response_id(&uri);
    whole(state, move |client| {
        Ok(client.responses.delete(&id)?.to_string())
    })
    .await
}

/// `GET /v1/responses/{id}/input_items?after=&limit=&order=`: a page of a stored response's
/// input items.
pub(crate) async fn responses_input_items(State(state): State<AppState>, uri: Uri) -> Response {
    let id = response_id(&uri);
    let mut after = None;
    let mut limit = None;
    let mut order = None;
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(&value.replace('+', " ")).unwrap_or_default();
        match key {
            "after" => after = Some(value),
            "order" => order = Some(value),
            "limit" => match value.parse::<i64>() {
                Ok(n) => limit = Some(n),
                Err(_) => {
                    let error = Error::invalid(
                        "limit",
                        format!(
                            "Invalid value for `limit`: '{}' (an integer)",
                            ingle::error::shown(&value)
                        ),
                    );
                    return error_response(StatusCode::BAD_REQUEST, &error);
                }
            },
            // OpenAI's `include` names extra fields; input items here have none to add.
            "include" | "include[]" => {}
            other => {
                let error = Error::invalid(
                    other.to_string(),
                    format!(
                        "Unrecognized query parameter: {}",
                        ingle::error::shown(other)
                    ),
                );
                return error_response(StatusCode::BAD_REQUEST, &error);
            }
        }
    }
    whole(state, move |client| {
        let page = client
            .responses
            .input_items(&id, after.as_deref(), limit, order.as_deref())?;
        Ok(page.to_string())
    })
    .await
}

pub(crate) async fn embeddings(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, EmbeddingRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    whole(state, move |client| {
        to_json_text(&client.embeddings.create(&request)?)
    })
    .await
}

/// `POST /v1/audio/speech`: the audio is sent as it is synthesised, sentence by sentence (the
/// streaming forms of wav and flac, whose headers cannot know the length), or as SSE events with
/// `stream_format: "sse"`. The first sentence is synthesised before the response starts, so an
/// error there is an ordinary error response; a later one cuts the body short (audio) or ends
/// it with an error event (SSE). A client that goes away stops synthesis at the next sentence.
pub(crate) async fn audio_speech(State(state): State<AppState>, request: Request) -> Response {
    let request = match parse_body(&state, request, SpeechRequest::from_json).await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    type Started = ingle::Result<(&'static str, Vec<u8>)>;
    let (started_tx, started_rx) = oneshot::channel::<Started>();
    let (chunks_tx, chunks_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let shutting_down = Arc::clone(&state.shutting_down);
    // Held by this future, then by the body: a client that leaves stops the synthesis (and a
    // predictor inside a sentence is told).
    let cancel = crate::respond::request_cancel(&state);
    let cancel_on_drop = cancel.on_drop();
    let client = state.client.with_cancel(&cancel);
    tokio::task::spawn_blocking(move || {
        let mut stream = match client.audio.speech.stream(&request) {
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

/// `POST /v1/audio/transcriptions`: a `multipart/form-data` upload (see [`parse_upload`]),
/// answered in its `response_format` with that format's content type, or with `stream: true`
/// as `transcript.text.delta` events and a `transcript.text.done`. The audio is transcribed
/// on the blocking pool; a client that goes away stops it while the upload decodes, or before
/// its next 30 s window.
pub(crate) async fn audio_transcriptions(
    State(state): State<AppState>,
    request: Request,
) -> Response {
    let Upload { request, audio } = match parse_upload(&state, request).await {
        Ok(upload) => upload,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    if request.stream == Some(true) {
        streamed_events(state, Framing::Typed, move |client| {
            let events = (client.audio.transcriptions).stream(&request, audio)?;
            let texts: JsonTextStream =
                Box::new(events.map(|event| event.map(|e| e.to_json().to_string())));
            Ok(texts)
        })
        .await
    } else {
        whole_typed(state, move |client| {
            let response = client.audio.transcriptions.create(&request, audio)?;
            Ok((response.content_type, response.body))
        })
        .await
    }
}

/// `POST /v1/audio/translations`: the same upload as transcriptions, translated into English by
/// a multilingual model (`@local/whisper-base`); an English-only model is a 400 naming it.
pub(crate) async fn audio_translations(
    State(state): State<AppState>,
    request: Request,
) -> Response {
    let Upload { request, audio } = match parse_upload(&state, request).await {
        Ok(upload) => upload,
        Err(refusal) => return refusal.into_response(),
    };
    if let Some(refusal) = refuse_if_loading(&state, &request.model) {
        return refusal;
    }
    whole_typed(state, move |client| {
        let response = client.audio.translations.create(&request, audio)?;
        Ok((response.content_type, response.body))
    })
    .await
}
