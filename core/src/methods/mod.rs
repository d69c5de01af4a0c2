//! The method table: every operation of the OpenAI interface declared once — its name, the
//! HTTP route that serves it, what it takes and how it answers — and the one dispatcher that
//! parses a request for it and runs it on a [`Client`].
//!
//! The doors bind the table, not the methods: `ingle serve` makes its routes and its OpenAPI
//! description from [`METHODS`]; the C library's `ingle_call` / `ingle_call_stream` and the
//! Python and Node bindings' native `call` / `stream` take a method's name and its request as
//! JSON text. A method added here is reachable in every door; what each door adds by hand is
//! its typed signature (the `.pyi`, the `.d.ts`, the OpenAI-shaped resource object).
//!
//! Outside the table, because JSON cannot carry what they take or give: `predictions`
//! (inputs hold tensors and raw audio), `models.pull` (a progress callback), the embedding
//! matrix and speech samples that the bindings hand over as numbers.

use crate::anthropic::MessagesRequest;
use crate::error::{shown, Error, ErrorCode, Result};
use crate::json_text::{to_json_text, JsonTextStream};
use crate::openai::{
    ChatCompletionRequest, CompletionRequest, EmbeddingRequest, ImageGenerateRequest,
    RerankRequest, ResponseRequest, SpeechRequest, SpeechStream, TranscriptionAudio,
    TranscriptionRequest,
};
use crate::Client;
use serde_json::{Map, Value as Json};

/// An HTTP verb of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Delete => "delete",
        }
    }
}

/// What a method takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// A JSON object: an HTTP body, or the request's JSON text in process.
    Json,
    /// A JSON object and an audio file: over HTTP a `multipart/form-data` upload.
    Upload,
    /// Named values: over HTTP the route's `{name}` segments and its query; in process a JSON
    /// object of them (`{"response_id": "resp_..."}`).
    Named,
}

/// How a method answers: an [`Answer`] of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gives {
    /// One JSON object.
    Json,
    /// A body in the content type the request chose (a transcription's `response_format`,
    /// whole speech).
    Body,
    /// JSON chunks; over HTTP `data:` events ending with `data: [DONE]`.
    Chunks,
    /// JSON events, each naming itself in its `type`; over HTTP `event:` and `data:` lines
    /// (the Responses API).
    NamedEvents,
    /// JSON events, each naming itself in its `type`; over HTTP `data:` lines only, the last
    /// event ending the stream (transcription).
    Events,
    /// Audio bytes as they are made (or `speech.audio.*` events with `stream_format: "sse"`).
    Audio,
}

impl Gives {
    /// Whether the answer comes in parts.
    pub fn streams(self) -> bool {
        !matches!(self, Gives::Json | Gives::Body)
    }
}

/// A route of `ingle serve` (under `/v1`). `{name}` is one path segment, `{*name}` the rest of
/// the path (a model id holds `/`); both are percent-decoded.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    pub verb: Verb,
    pub path: &'static str,
    /// Whole paths (not under `/v1`) that serve the method too, where other servers put it
    /// (text-embeddings-inference's `/rerank`, Cohere's `/v2/rerank`).
    pub aliases: &'static [&'static str],
}

/// One operation of the interface.
pub struct Method {
    /// The name every door calls it by: `chat.completions.create`.
    pub name: &'static str,
    /// One line for the docs and the OpenAPI description.
    pub summary: &'static str,
    /// What a successful answer is, in words (for the OpenAPI description).
    pub answer: &'static str,
    /// The core's request type.
    pub request: &'static str,
    pub takes: Takes,
    pub gives: Gives,
    /// The fields a request must have (for the OpenAPI description; the parse checks them).
    pub required: &'static [&'static str],
    /// For a [`Takes::Named`] or [`Takes::Upload`] method, the other fields it takes, each with
    /// its JSON schema (for the OpenAPI description: query parameters, upload parts; and for
    /// serve, which reads an `integer` query parameter as a number). A JSON body's fields are
    /// its request type's.
    pub optional: &'static [(&'static str, &'static str)],
    /// Its HTTP route, when it has one of its own.
    pub route: Option<Route>,
    /// Over HTTP, the method a request with `"stream": true` goes to (same route).
    pub streamed_by: Option<&'static str>,
    pub(crate) parse: fn(&str, Option<TranscriptionAudio>) -> Result<Request>,
    pub(crate) run: fn(&Client, Request) -> Result<Answer>,
}

/// A request parsed for its method. Made once per call and moved into the call: boxing the
/// large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Request {
    Chat(ChatCompletionRequest),
    Completion(CompletionRequest),
    Embedding(EmbeddingRequest),
    Rerank(RerankRequest),
    Images(ImageGenerateRequest),
    /// An Anthropic Messages request.
    Messages(MessagesRequest),
    Response(ResponseRequest),
    Speech(SpeechRequest),
    Transcription(TranscriptionRequest, TranscriptionAudio),
    /// A model, by id.
    Model(String),
    /// A stored response, by id.
    ResponseId(String),
    /// A page of a stored response's input items.
    InputItems {
        response_id: String,
        after: Option<String>,
        limit: Option<i64>,
        order: Option<String>,
    },
    /// Nothing (`models.list`).
    Nothing,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let variant = match self {
            Request::Chat(_) => "Chat",
            Request::Completion(_) => "Completion",
            Request::Embedding(_) => "Embedding",
            Request::Rerank(_) => "Rerank",
            Request::Images(_) => "Images",
            Request::Messages(_) => "Messages",
            Request::Response(_) => "Response",
            Request::Speech(_) => "Speech",
            Request::Transcription(..) => "Transcription",
            Request::Model(_) => "Model",
            Request::ResponseId(_) => "ResponseId",
            Request::InputItems { .. } => "InputItems",
            Request::Nothing => "Nothing",
        };
        f.write_str(variant)
    }
}

impl std::fmt::Debug for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Method").field("name", &self.name).finish()
    }
}

impl Request {
    /// The model a request runs on, when it runs on one.
    pub fn model(&self) -> Option<&str> {
        match self {
            Request::Chat(r) => Some(&r.model),
            Request::Completion(r) => Some(&r.model),
            Request::Embedding(r) => Some(&r.model),
            Request::Rerank(r) => Some(r.model_name()),
            Request::Images(r) => Some(&r.model),
            Request::Messages(r) => Some(&r.model),
            Request::Response(r) => Some(&r.model),
            Request::Speech(r) => Some(&r.model),
            Request::Transcription(r, _) => Some(&r.model),
            _ => None,
        }
    }

    /// Whether the request asks for its answer as a stream (`"stream": true`).
    pub fn streams(&self) -> bool {
        match self {
            Request::Chat(r) => r.stream == Some(true),
            Request::Completion(r) => r.stream == Some(true),
            Request::Response(r) => r.stream,
            Request::Transcription(r, _) => r.stream == Some(true),
            Request::Messages(r) => r.stream == Some(true),
            Request::Images(r) => r.stream == Some(true),
            _ => false,
        }
    }
}

/// A method's answer, as its [`Gives`] says (made once per call, as [`Request`]).
#[allow(clippy::large_enum_variant)]
pub enum Answer {
    Json(String),
    Body {
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// Chunks or events, as JSON texts.
    Stream(JsonTextStream),
    Audio(SpeechStream),
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Json(json) => f.debug_tuple("Json").field(json).finish(),
            Answer::Body { content_type, body } => f
                .debug_struct("Body")
                .field("content_type", content_type)
                .field("bytes", &body.len())
                .finish(),
            Answer::Stream(_) => f.write_str("Stream"),
            Answer::Audio(_) => f.write_str("Audio"),
        }
    }
}

impl Answer {
    /// A [`Answer::Json`]'s text, or a [`Answer::Body`]'s when it is text.
    pub fn into_text(self) -> Result<String> {
        match self {
            Answer::Json(json) => Ok(json),
            Answer::Body { body, .. } => String::from_utf8(body)
                .map_err(|_| Error::internal("This method answers with binary data, not text")),
            Answer::Stream(_) | Answer::Audio(_) => Err(Error::internal(
                "This method answers with a stream: call it as one",
            )),
        }
    }

    /// A [`Answer::Stream`]'s JSON texts.
    pub fn into_stream(self) -> Result<JsonTextStream> {
        match self {
            Answer::Stream(stream) => Ok(stream),
            _ => Err(Error::internal(
                "This method answers whole, not with a stream",
            )),
        }
    }
}

impl Method {
    /// Parses `request` (JSON text; `audio` for a method that takes an upload) for this method.
    /// Errors name the field at fault.
    pub fn parse(&self, request: &str, audio: Option<TranscriptionAudio>) -> Result<Request> {
        if self.takes == Takes::Upload && audio.is_none() {
            return Err(Error::invalid(
                "file",
                format!("`{}` needs the audio (`file`)", self.name),
            ));
        }
        (self.parse)(request, audio)
    }

    /// Runs a request parsed by [`Method::parse`] on `client` (whose cancel stops it).
    pub fn run(&self, client: &Client, request: Request) -> Result<Answer> {
        (self.run)(client, request)
    }

    /// [`Method::parse`], then [`Method::run`].
    pub fn call(
        &self,
        client: &Client,
        request: &str,
        audio: Option<TranscriptionAudio>,
    ) -> Result<Answer> {
        let request = self.parse(request, audio)?;
        self.run(client, request)
    }

    /// The method a parsed request goes to over HTTP: this one, or the one that streams it.
    pub fn for_request(&'static self, request: &Request) -> &'static Method {
        match self.streamed_by {
            Some(name) if request.streams() => method(name).unwrap_or(self),
            _ => self,
        }
    }
}

/// The method named `name`; an `unknown_method` error naming the known ones otherwise.
pub fn method(name: &str) -> Result<&'static Method> {
    METHODS.iter().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
        Error::invalid(
            "method",
            format!(
                "Unknown method '{}'; the methods are {}",
                shown(name),
                known.join(", ")
            ),
        )
        .with_code(ErrorCode::UnknownMethod)
    })
}

/// Runs the method `name` on `client`: [`method`], then [`Method::call`].
pub fn call(
    client: &Client,
    name: &str,
    request: &str,
    audio: Option<TranscriptionAudio>,
) -> Result<Answer> {
    method(name)?.call(client, request, audio)
}

mod table;

pub use table::METHODS;

pub(crate) fn json(value: &impl serde::Serialize) -> Result<Answer> {
    Ok(Answer::Json(to_json_text(value)?))
}

/// A request given to a method whose parse did not make it: a bug of the caller's door.
pub(crate) fn mismatched() -> Result<Answer> {
    Err(Error::internal(
        "A request was run by a method that did not parse it",
    ))
}

pub(crate) fn transcription(json: &str, audio: Option<TranscriptionAudio>) -> Result<Request> {
    let request = TranscriptionRequest::from_json(json)?;
    let audio = audio.ok_or_else(|| Error::invalid("file", "The audio (`file`) is missing"))?;
    Ok(Request::Transcription(request, audio))
}

/// The named values of a [`Takes::Named`] method: a JSON object of strings (a URL's segments
/// and query arrive as text) or, in process, of strings and numbers.
pub(crate) struct Named(Map<String, Json>);

impl Named {
    pub(crate) fn parse(json: &str, known: &[&str]) -> Result<Named> {
        let json = if json.trim().is_empty() { "{}" } else { json };
        let map: Map<String, Json> = crate::openai::from_json(json)?;
        if let Some(other) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(Error::invalid(
                other.clone(),
                format!("Unrecognized parameter: {}", shown(other)),
            ));
        }
        Ok(Named(map))
    }

    pub(crate) fn text(&mut self, name: &str) -> Result<Option<String>> {
        match self.0.remove(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(text)) => Ok(Some(text)),
            Some(other) => Err(Error::invalid(
                name,
                format!("Invalid value for `{name}`: {other} (a string)"),
            )),
        }
    }

    pub(crate) fn required(&mut self, name: &str) -> Result<String> {
        self.text(name)?
            .ok_or_else(|| Error::invalid(name, format!("Missing required parameter: '{name}'")))
    }

    /// An integer, or a string of one (from a URL's query).
    pub(crate) fn integer(&mut self, name: &str) -> Result<Option<i64>> {
        let invalid = |shown_value: String| {
            Error::invalid(
                name,
                format!("Invalid value for `{name}`: {shown_value} (an integer)"),
            )
        };
        match self.0.remove(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Number(n)) => n.as_i64().map(Some).ok_or_else(|| invalid(n.to_string())),
            Some(Json::String(text)) => text
                .parse::<i64>()
                .map(Some)
                .map_err(|_| invalid(format!("'{}'", shown(&text)))),
            Some(other) => Err(invalid(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests;
