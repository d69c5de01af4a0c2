//! The method table: every operation of the interface declared once, as a type — its request
//! type, its spec (name, HTTP route, dialect, what it takes and how it answers), how it parses
//! and runs — and the table that erases those types once, so that every door binds one list.
//!
//! The doors bind the table, not the methods: `ingle serve` makes its routes, its OpenAPI
//! description and its `--help` from [`METHODS`]; the C library's `ingle_call` /
//! `ingle_call_stream` and the Python and Node bindings' native `call` / `stream` take a
//! method's name and its request as JSON text. A method added here is reachable in every door;
//! what each door adds by hand is its typed signature (the `.pyi`, the `.d.ts`, the
//! OpenAI-shaped resource object).
//!
//! A method is an [`Operation`] (one that may stream its answer when asked is also
//! [`Streamed`]: its create and stream methods are declared together, on one request type).
//! Parsing gives a [`Parsed`] request that holds the operation that parsed it, so a request
//! cannot reach the wrong method: there is no dispatch on a request's kind anywhere.
//!
//! A method's input is its request and, for an upload, its audio; its [`Answer`] is typed
//! (JSON, a transcription, speech with its samples, the embedding matrix, a stream), and each
//! door converts each kind once. Outside the table: `predictions` (inputs hold tensors and
//! raw audio, by a predictor's own names) and `models.pull` (a progress callback).

use crate::error::{shown, Error, ErrorCode, Result};
use crate::json_text::{to_json_text, JsonTextStream};
use crate::openai::{
    EmbeddingMatrix, EncodingFormat, SpeechAudio, SpeechStream, TranscriptionAudio,
    TranscriptionResponse,
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

/// How a method answers over HTTP. In process its [`Answer`] may carry more: `Json`'s
/// embeddings come as their `Matrix`, `Body`'s speech as `Speech` with its samples.
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
    /// (the Responses API; Anthropic's stream with its [`Dialect`]).
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

/// Whose API a method is: its errors' shape and its stream's framing over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    /// Anthropic's Messages: `event:` lines, `ping`s, and Anthropic's error events.
    Anthropic,
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

/// The type of a value a method takes by name (a query parameter, an upload's part).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamType {
    /// Text; `one_of` non-empty lists the values it may take.
    Text {
        one_of: &'static [&'static str],
        description: &'static str,
    },
    /// An integer, within the bounds when given; a URL's query gives it as text.
    Integer {
        minimum: Option<i64>,
        maximum: Option<i64>,
    },
    /// A number within `[minimum, maximum]` (whole bounds, written as the OpenAPI document
    /// always had them).
    Number {
        minimum: i64,
        maximum: i64,
    },
    Boolean,
    /// A list of text, each one of `one_of`.
    TextList {
        one_of: &'static [&'static str],
    },
}

impl ParamType {
    /// Plain text.
    pub const TEXT: ParamType = ParamType::Text {
        one_of: &[],
        description: "",
    };

    /// Text that is one of `values`.
    pub const fn one_of(values: &'static [&'static str]) -> ParamType {
        ParamType::Text {
            one_of: values,
            description: "",
        }
    }

    /// Its JSON schema (for the OpenAPI description).
    pub fn schema(&self) -> Json {
        let mut schema = Map::new();
        match *self {
            ParamType::Text {
                one_of,
                description,
            } => {
                schema.insert("type".into(), "string".into());
                if !one_of.is_empty() {
                    schema.insert("enum".into(), one_of.into());
                }
                if !description.is_empty() {
                    schema.insert("description".into(), description.into());
                }
            }
            ParamType::Integer { minimum, maximum } => {
                schema.insert("type".into(), "integer".into());
                if let Some(minimum) = minimum {
                    schema.insert("minimum".into(), minimum.into());
                }
                if let Some(maximum) = maximum {
                    schema.insert("maximum".into(), maximum.into());
                }
            }
            ParamType::Number { minimum, maximum } => {
                schema.insert("type".into(), "number".into());
                schema.insert("minimum".into(), minimum.into());
                schema.insert("maximum".into(), maximum.into());
            }
            ParamType::Boolean => {
                schema.insert("type".into(), "boolean".into());
            }
            ParamType::TextList { one_of } => {
                schema.insert("type".into(), "array".into());
                schema.insert(
                    "items".into(),
                    serde_json::json!({"type": "string", "enum": one_of}),
                );
            }
        }
        Json::Object(schema)
    }
}

/// A value a method takes by name, beyond its route's segment (or beside an upload's `file`
/// and `model`).
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamType,
}

/// What a method is, in data: what the doors read to offer it.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The name every door calls it by: `chat.completions.create`.
    pub name: &'static str,
    /// One line for the docs, `ingle serve --help` and the OpenAPI description.
    pub summary: &'static str,
    /// What a successful answer is, in words (for the OpenAPI description).
    pub answer: &'static str,
    pub takes: Takes,
    pub gives: Gives,
    pub dialect: Dialect,
    /// The fields a request must have (for the OpenAPI description; the parse checks them).
    pub required: &'static [&'static str],
    /// For a [`Takes::Named`] or [`Takes::Upload`] method, the other values it takes (query
    /// parameters, upload parts). A JSON body's fields are its request type's.
    pub params: &'static [Param],
    /// Its HTTP route, when it has one of its own.
    pub route: Option<Route>,
}

impl Spec {
    /// The defaults a spec's `..` takes: an OpenAI method with a JSON body that answers with
    /// one JSON object and has no route.
    pub const DEFAULT: Spec = Spec {
        name: "",
        summary: "",
        answer: "",
        takes: Takes::Json,
        gives: Gives::Json,
        dialect: Dialect::OpenAi,
        required: &[],
        params: &[],
        route: None,
    };
}

/// Where a call comes from. Over HTTP a model file named by its path is no model of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// A binding, the C library, the CLI: the caller's own process.
    InProcess,
    /// `ingle serve`'s routes.
    Http,
}

/// A method of the interface, as a type. Its answer is made from its [`Self::Request`] only, so
/// the table needs no dispatch on a request's kind.
pub trait Operation: Send + Sync + 'static {
    type Request: Send + 'static;
    const SPEC: Spec;
    /// Parses the request's JSON text (and `audio`, for a method that takes an upload; the
    /// table checks that it is there). Errors name the field at fault.
    fn parse(json: &str, audio: Option<TranscriptionAudio>) -> Result<Self::Request>;
    /// Runs it on `client` (whose cancel stops it).
    fn run(client: &Client, request: Self::Request, door: Door) -> Result<Answer>;
    /// The model the request runs on, when it runs on one.
    fn model(request: &Self::Request) -> Option<&str> {
        let _ = request;
        None
    }
    /// The model the request names, whether or not it runs on it (`models.retrieve`'s).
    fn named_model(request: &Self::Request) -> Option<&str> {
        Self::model(request)
    }
}

/// An operation that also answers in parts, on the same request: its stream method is
/// declared with it, and over HTTP a request that asks (`"stream": true`) goes to it.
pub trait Streamed: Operation {
    /// The streaming method's spec (its `route` is the whole method's).
    const STREAM: Spec;
    /// Whether the request asks for its answer as a stream.
    fn wants_stream(request: &Self::Request) -> bool;
    fn stream(client: &Client, request: Self::Request) -> Result<Answer>;
}

/// One operation of the interface, its type erased: what [`METHODS`] lists.
pub struct Method {
    pub spec: Spec,
    /// Over HTTP, the method a request that asks for a stream goes to (same route).
    pub streamed_by: Option<&'static Method>,
    parse: fn(&str, Option<TranscriptionAudio>) -> Result<Parsed>,
}

impl std::ops::Deref for Method {
    type Target = Spec;

    fn deref(&self) -> &Spec {
        &self.spec
    }
}

impl std::fmt::Debug for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Method").field("name", &self.name).finish()
    }
}

/// A request parsed by its method, ready to run: it holds its operation, so it runs only as
/// that one (or its stream, with [`Parsed::over_http`]).
pub struct Parsed {
    method: &'static Method,
    door: Door,
    request: Box<dyn Prepared>,
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("method", &self.method.name)
            .finish()
    }
}

impl Parsed {
    /// The method that runs it.
    pub fn method(&self) -> &'static Method {
        self.method
    }

    /// The model it runs on, when it runs on one.
    pub fn model(&self) -> Option<&str> {
        self.request.model()
    }

    /// The model it names, whether or not it runs on it.
    pub fn named_model(&self) -> Option<&str> {
        self.request.named_model()
    }

    /// The request as `ingle serve` runs it: a whole method's request that asks for a stream
    /// goes to its streaming method (same route), and model files named by their paths are
    /// left out of lists.
    pub fn over_http(mut self) -> Parsed {
        if let Some(stream) = self.request.switch_to_stream() {
            self.method = stream;
        }
        self.door = Door::Http;
        self
    }

    /// Runs it on `client` (whose cancel stops it).
    pub fn run(self, client: &Client) -> Result<Answer> {
        self.request.run(client, self.door)
    }
}

/// A parsed request with its operation: the one place a request type meets its `run`.
trait Prepared: Send {
    fn model(&self) -> Option<&str>;
    fn named_model(&self) -> Option<&str>;
    /// Whether it now runs as its operation's stream: that method, when it switched.
    fn switch_to_stream(&mut self) -> Option<&'static Method>;
    fn run(self: Box<Self>, client: &Client, door: Door) -> Result<Answer>;
}

/// An [`Operation`]'s request.
struct Whole<O: Operation>(O::Request);

impl<O: Operation> Prepared for Whole<O> {
    fn model(&self) -> Option<&str> {
        O::model(&self.0)
    }

    fn named_model(&self) -> Option<&str> {
        O::named_model(&self.0)
    }

    fn switch_to_stream(&mut self) -> Option<&'static Method> {
        None
    }

    fn run(self: Box<Self>, client: &Client, door: Door) -> Result<Answer> {
        O::run(client, self.0, door)
    }
}

/// A [`Streamed`] operation's request, run whole or as its stream.
struct Pair<O: Streamed> {
    request: O::Request,
    stream: bool,
}

impl<O: Streamed> Prepared for Pair<O> {
    fn model(&self) -> Option<&str> {
        O::model(&self.request)
    }

    fn named_model(&self) -> Option<&str> {
        O::named_model(&self.request)
    }

    fn switch_to_stream(&mut self) -> Option<&'static Method> {
        if self.stream || !O::wants_stream(&self.request) {
            return None;
        }
        self.stream = true;
        Some(Declared::<O>::STREAM)
    }

    fn run(self: Box<Self>, client: &Client, door: Door) -> Result<Answer> {
        match self.stream {
            true => O::stream(client, self.request),
            false => O::run(client, self.request, door),
        }
    }
}

/// An operation's methods, made once from its type: [`Operation`]s give [`Declared::ONE`],
/// [`Streamed`] ones [`Declared::CREATE`] and [`Declared::STREAM`].
pub struct Declared<O>(std::marker::PhantomData<O>);

impl<O: Operation> Declared<O> {
    pub const ONE: &'static Method = &Method {
        spec: O::SPEC,
        streamed_by: None,
        parse: |json, audio| {
            Ok(Parsed {
                method: Self::ONE,
                door: Door::InProcess,
                request: Box::new(Whole::<O>(O::parse(json, audio)?)),
            })
        },
    };
}

impl<O: Streamed> Declared<O> {
    pub const CREATE: &'static Method = &Method {
        spec: O::SPEC,
        streamed_by: Some(Self::STREAM),
        parse: |json, audio| Self::parse_pair(Self::CREATE, json, audio, false),
    };

    pub const STREAM: &'static Method = &Method {
        spec: Spec {
            route: None,
            ..O::STREAM
        },
        streamed_by: None,
        parse: |json, audio| Self::parse_pair(Self::STREAM, json, audio, true),
    };

    fn parse_pair(
        method: &'static Method,
        json: &str,
        audio: Option<TranscriptionAudio>,
        stream: bool,
    ) -> Result<Parsed> {
        let request = O::parse(json, audio)?;
        Ok(Parsed {
            method,
            door: Door::InProcess,
            request: Box::new(Pair::<O> { request, stream }),
        })
    }
}

/// A method's answer, as its [`Gives`] says (made once per call).
#[allow(clippy::large_enum_variant)]
pub enum Answer {
    Json(String),
    Body {
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A transcription or translation: its body in the requested format (what HTTP, Python and
    /// Node give), with the text and duration beside it (what C's `IngleTranscription` gives).
    Transcription(TranscriptionResponse),
    /// Whole speech (`audio.speech.create`, in process: HTTP's route streams): the encoded
    /// file (what Python's `content` and C give) and the samples it was encoded from (what
    /// Python's `to_numpy()` gives).
    Speech(SpeechAudio),
    /// Embeddings as the float32 matrix (what Python, Node and C's `_matrix` take without
    /// JSON), and the `encoding_format` its JSON is written in (what HTTP and C give).
    Matrix {
        matrix: EmbeddingMatrix,
        format: EncodingFormat,
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
            Answer::Transcription(response) => f
                .debug_struct("Transcription")
                .field("format", &response.format)
                .field("bytes", &response.body.len())
                .finish(),
            Answer::Speech(audio) => f
                .debug_struct("Speech")
                .field("content_type", &audio.content_type)
                .field("bytes", &audio.bytes.len())
                .finish(),
            Answer::Matrix { matrix, format } => f
                .debug_struct("Matrix")
                .field("rows", &matrix.rows)
                .field("dims", &matrix.dims)
                .field("format", format)
                .finish(),
            Answer::Stream(_) => f.write_str("Stream"),
            Answer::Audio(_) => f.write_str("Audio"),
        }
    }
}

impl Answer {
    /// A [`Answer::Json`]'s text, a transcription's body, or a [`Answer::Body`]'s when it is text.
    pub fn into_text(self) -> Result<String> {
        match self {
            Answer::Json(json) => Ok(json),
            Answer::Transcription(response) => Ok(response.body),
            Answer::Matrix { matrix, format } => to_json_text(&matrix.into_response(format)),
            Answer::Body { body, .. } => String::from_utf8(body)
                .map_err(|_| Error::internal("This method answers with binary data, not text")),
            Answer::Speech(_) => Err(Error::internal("This method answers with audio, not text")),
            Answer::Stream(_) | Answer::Audio(_) => Err(Error::internal(
                "This method answers with a stream: call it as one",
            )),
        }
    }

    /// A whole answer as an HTTP body and its content type.
    pub fn into_body(self) -> Result<(&'static str, Vec<u8>)> {
        match self {
            Answer::Body { content_type, body } => Ok((content_type, body)),
            Answer::Transcription(response) => {
                Ok((response.content_type, response.body.into_bytes()))
            }
            Answer::Speech(audio) => Ok((audio.content_type, audio.bytes)),
            other => Ok(("application/json", other.into_text()?.into_bytes())),
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
    pub fn parse(&self, request: &str, audio: Option<TranscriptionAudio>) -> Result<Parsed> {
        if self.takes == Takes::Upload && audio.is_none() {
            return Err(Error::invalid(
                "file",
                format!("`{}` needs the audio (`file`)", self.name),
            ));
        }
        (self.parse)(request, audio)
    }

    /// [`Method::parse`], then [`Parsed::run`].
    pub fn call(
        &self,
        client: &Client,
        request: &str,
        audio: Option<TranscriptionAudio>,
    ) -> Result<Answer> {
        self.parse(request, audio)?.run(client)
    }
}

/// The method named `name`; an `unknown_method` error naming the known ones otherwise.
pub fn method(name: &str) -> Result<&'static Method> {
    METHODS
        .iter()
        .copied()
        .find(|m| m.name == name)
        .ok_or_else(|| {
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

/// A `POST` route of its own (under `/v1`).
const fn post(path: &'static str) -> Option<Route> {
    Some(Route {
        verb: Verb::Post,
        path,
        aliases: &[],
    })
}

/// A `GET` route of its own (under `/v1`).
const fn get(path: &'static str) -> Option<Route> {
    Some(Route {
        verb: Verb::Get,
        path,
        aliases: &[],
    })
}

mod audio;
mod named;
mod table;
mod text;

pub use audio::*;
pub use named::*;
pub use table::METHODS;
pub use text::*;

pub(crate) fn json(value: &impl serde::Serialize) -> Result<Answer> {
    Ok(Answer::Json(to_json_text(value)?))
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
