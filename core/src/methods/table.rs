//! The table itself: one entry per method.

use super::{
    json, mismatched, transcription, Answer, Gives, Method, Named, Request, Route, Takes, Verb,
};
use crate::anthropic::MessagesRequest;
use crate::json_text::json_texts;
use crate::openai::{
    ChatCompletionRequest, CompletionRequest, EmbeddingRequest, ImageGenerateRequest,
    RerankRequest, ResponseRequest, SpeechRequest,
};

const fn post(path: &'static str) -> Option<Route> {
    Some(Route {
        verb: Verb::Post,
        path,
        aliases: &[],
    })
}

const fn get(path: &'static str) -> Option<Route> {
    Some(Route {
        verb: Verb::Get,
        path,
        aliases: &[],
    })
}

/// Every method, in the order the docs list them.
pub static METHODS: &[Method] = &[
    Method {
        name: "chat.completions.create",
        summary: "Create a chat completion",
        answer: "A `chat.completion`, or with `stream: true` `chat.completion.chunk` events",
        request: "ChatCompletionRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "messages"],
        route: post("/chat/completions"),
        optional: &[],
        streamed_by: Some("chat.completions.stream"),
        parse: |json, _| Ok(Request::Chat(ChatCompletionRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Chat(r) => json(&client.chat.completions.create(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "chat.completions.stream",
        summary: "Stream a chat completion",
        answer: "`chat.completion.chunk` objects",
        request: "ChatCompletionRequest",
        takes: Takes::Json,
        gives: Gives::Chunks,
        required: &["model", "messages"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Chat(ChatCompletionRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Chat(r) => Ok(Answer::Stream(json_texts(
                client.chat.completions.stream(&r)?,
            ))),
            _ => mismatched(),
        },
    },
    Method {
        name: "completions.create",
        summary: "Create a text completion",
        answer: "A `text_completion`, or with `stream: true` its chunks as events",
        request: "CompletionRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "prompt"],
        route: post("/completions"),
        optional: &[],
        streamed_by: Some("completions.stream"),
        parse: |json, _| Ok(Request::Completion(CompletionRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Completion(r) => json(&client.completions.create(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "completions.stream",
        summary: "Stream a text completion",
        answer: "`text_completion` chunks",
        request: "CompletionRequest",
        takes: Takes::Json,
        gives: Gives::Chunks,
        required: &["model", "prompt"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Completion(CompletionRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Completion(r) => Ok(Answer::Stream(json_texts(client.completions.stream(&r)?))),
            _ => mismatched(),
        },
    },
    Method {
        name: "embeddings.create",
        summary: "Create embeddings",
        answer: "A `list` of `embedding` objects",
        request: "EmbeddingRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "input"],
        route: post("/embeddings"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Embedding(EmbeddingRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Embedding(r) => json(&client.embeddings.create(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "images.generate",
        summary: "Make images from a prompt (predictors annotated ImageWidth, ImageHeight, ImageCount)",
        answer: "An `ImagesResponse`: `{created, data: [{b64_json}], background, output_format, quality, size}`; with `stream: true`, `image_generation.partial_image` and `image_generation.completed` events",
        request: "ImageGenerateRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "prompt"],
        route: post("/images/generations"),
        optional: &[],
        streamed_by: Some("images.stream"),
        parse: |json, _| Ok(Request::Images(ImageGenerateRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Images(r) => json(&client.images.generate(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "images.stream",
        summary: "Stream image generation events (partial images, then each completed image)",
        answer: "`image_generation.partial_image` ... `image_generation.completed` events",
        request: "ImageGenerateRequest",
        takes: Takes::Json,
        gives: Gives::NamedEvents,
        required: &["model", "prompt"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Images(ImageGenerateRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Images(r) => Ok(Answer::Stream(json_texts(client.images.stream(&r)?))),
            _ => mismatched(),
        },
    },
    Method {
        name: "rerank.create",
        summary: "Rank documents by relevance to a query (Jina's and Cohere's shape; TEI's with `texts`)",
        answer: "`{id, model, results: [{index, relevance_score, document}], usage}`, most relevant first; for a request with `texts`, text-embeddings-inference's `[{index, score, text}]`",
        request: "RerankRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        // `documents` (or TEI's `texts`) and `model` (but for TEI's shape) are required too.
        required: &["query"],
        route: Some(Route {
            verb: Verb::Post,
            path: "/rerank",
            aliases: &["/rerank", "/v2/rerank"],
        }),
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Rerank(RerankRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Rerank(r) if r.is_tei() => json(&client.rerank.create(&r)?.into_tei()),
            Request::Rerank(r) => json(&client.rerank.create(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "messages.create",
        summary: "Create a message (Anthropic's Messages API, over the chat models)",
        answer: "A `message`, or with `stream: true` its events (`message_start` ... `message_stop`)",
        request: "MessagesRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "messages", "max_tokens"],
        route: post("/messages"),
        optional: &[],
        streamed_by: Some("messages.stream"),
        parse: |json, _| Ok(Request::Messages(MessagesRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Messages(r) => json(&client.messages.create(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "messages.stream",
        summary: "Stream a message (Anthropic's stream events)",
        answer: "`message_start`, `ping`, `content_block_start` / `_delta` / `_stop`, `message_delta`, `message_stop`",
        request: "MessagesRequest",
        takes: Takes::Json,
        gives: Gives::NamedEvents,
        required: &["model", "messages", "max_tokens"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Messages(MessagesRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Messages(r) => Ok(Answer::Stream(json_texts(client.messages.stream(&r)?))),
            _ => mismatched(),
        },
    },
    Method {
        name: "messages.count_tokens",
        summary: "Count a message request's input tokens (Anthropic's)",
        answer: "`{input_tokens}`",
        request: "MessagesRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "messages"],
        route: post("/messages/count_tokens"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Messages(MessagesRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Messages(r) => json(&client.messages.count_tokens(&r)?),
            _ => mismatched(),
        },
    },
    Method {
        name: "responses.create",
        summary: "Create a response (OpenAI's Responses API, over the chat models)",
        answer: "A `response`, or with `stream: true` its events (`response.created` ... `response.completed`)",
        request: "ResponseRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "input"],
        route: post("/responses"),
        optional: &[],
        streamed_by: Some("responses.stream"),
        parse: |json, _| Ok(Request::Response(ResponseRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Response(r) => Ok(Answer::Json(client.responses.create(&r)?.to_string())),
            _ => mismatched(),
        },
    },
    Method {
        name: "responses.stream",
        summary: "Stream a response's events",
        answer: "`response.created` ... `response.completed` events",
        request: "ResponseRequest",
        takes: Takes::Json,
        gives: Gives::NamedEvents,
        required: &["model", "input"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Response(ResponseRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Response(r) => Ok(Answer::Stream(json_texts(client.responses.stream(&r)?))),
            _ => mismatched(),
        },
    },
    Method {
        name: "responses.input_tokens",
        summary: "Count the input tokens of a Responses request (read by the model: its prompt is left in the prompt cache)",
        answer: "`{object: \"response.input_tokens\", input_tokens}`",
        request: "ResponseRequest",
        takes: Takes::Json,
        gives: Gives::Json,
        required: &["model", "input"],
        route: post("/responses/input_tokens"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Response(ResponseRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Response(r) => Ok(Answer::Json(client.responses.input_tokens(&r)?.to_string())),
            _ => mismatched(),
        },
    },
    Method {
        name: "responses.retrieve",
        summary: "Retrieve a stored response",
        answer: "A `response`",
        request: "{response_id}",
        takes: Takes::Named,
        gives: Gives::Json,
        required: &["response_id"],
        route: get("/responses/{response_id}"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| {
            let mut named = Named::parse(json, &["response_id"])?;
            Ok(Request::ResponseId(named.required("response_id")?))
        },
        run: |client, request| match request {
            Request::ResponseId(id) => Ok(Answer::Json(client.responses.retrieve(&id)?.to_string())),
            _ => mismatched(),
        },
    },
    Method {
        name: "responses.delete",
        summary: "Delete a stored response",
        answer: "`{id, object: \"response.deleted\", deleted: true}`",
        request: "{response_id}",
        takes: Takes::Named,
        gives: Gives::Json,
        required: &["response_id"],
        route: Some(Route {
            verb: Verb::Delete,
            path: "/responses/{response_id}",
            aliases: &[],
        }),
        optional: &[],
        streamed_by: None,
        parse: |json, _| {
            let mut named = Named::parse(json, &["response_id"])?;
            Ok(Request::ResponseId(named.required("response_id")?))
        },
        run: |client, request| match request {
            Request::ResponseId(id) => Ok(Answer::Json(client.responses.delete(&id)?.to_string())),
            _ => mismatched(),
        },
    },
    Method {
        name: "responses.input_items.list",
        summary: "List a stored response's input items",
        answer: "A `list` of input items",
        request: "{response_id, after?, limit?, order?}",
        takes: Takes::Named,
        gives: Gives::Json,
        required: &["response_id"],
        route: get("/responses/{response_id}/input_items"),
        optional: &[
            ("after", r#"{"type": "string"}"#),
            ("limit", r#"{"type": "integer", "minimum": 1, "maximum": 100}"#),
            ("order", r#"{"type": "string", "enum": ["asc", "desc"]}"#),
        ],
        streamed_by: None,
        parse: |json, _| {
            // OpenAI's `include` names extra fields; input items here have none to add.
            let known = ["response_id", "after", "limit", "order", "include", "include[]"];
            let mut named = Named::parse(json, &known)?;
            Ok(Request::InputItems {
                response_id: named.required("response_id")?,
                after: named.text("after")?,
                limit: named.integer("limit")?,
                order: named.text("order")?,
            })
        },
        run: |client, request| match request {
            Request::InputItems {
                response_id,
                after,
                limit,
                order,
            } => {
                let page = client.responses.input_items(
                    &response_id,
                    after.as_deref(),
                    limit,
                    order.as_deref(),
                )?;
                Ok(Answer::Json(page.to_string()))
            }
            _ => mismatched(),
        },
    },
    Method {
        name: "audio.speech.create",
        summary: "Create speech, whole",
        answer: "The audio file (or every SSE event with `stream_format: sse`)",
        request: "SpeechRequest",
        takes: Takes::Json,
        gives: Gives::Body,
        required: &["model", "input", "voice"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Speech(SpeechRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Speech(r) => {
                let audio = client.audio.speech.create(&r)?;
                Ok(Answer::Body {
                    content_type: audio.content_type,
                    body: audio.bytes,
                })
            }
            _ => mismatched(),
        },
    },
    Method {
        name: "audio.speech.stream",
        summary: "Create speech",
        answer: "The audio, sent as it is synthesised (or SSE events with `stream_format: sse`)",
        request: "SpeechRequest",
        takes: Takes::Json,
        gives: Gives::Audio,
        required: &["model", "input", "voice"],
        route: post("/audio/speech"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| Ok(Request::Speech(SpeechRequest::from_json(json)?)),
        run: |client, request| match request {
            Request::Speech(r) => Ok(Answer::Audio(client.audio.speech.stream(&r)?)),
            _ => mismatched(),
        },
    },
    Method {
        name: "audio.transcriptions.create",
        summary: "Create a transcription",
        answer: "The transcription in its `response_format`: JSON (`json`, `verbose_json`), text (`text`, `srt`) or WebVTT (`vtt`); with `stream: true`, `transcript.text.delta` events then `transcript.text.done`",
        request: "TranscriptionRequest",
        takes: Takes::Upload,
        gives: Gives::Body,
        required: &["file", "model"],
        route: post("/audio/transcriptions"),
        optional: &[
            ("language", r#"{"type": "string", "description": "ISO-639-1 (`fr`) or an English name (`french`); detected on a multilingual model when left out"}"#),
            ("prompt", r#"{"type": "string"}"#),
            ("response_format", r#"{"type": "string", "enum": ["json", "text", "srt", "verbose_json", "vtt"]}"#),
            ("temperature", r#"{"type": "number", "minimum": 0, "maximum": 1}"#),
            ("timestamp_granularities[]", r#"{"type": "array", "items": {"type": "string", "enum": ["word", "segment"]}}"#),
            ("stream", r#"{"type": "boolean"}"#),
        ],
        streamed_by: Some("audio.transcriptions.stream"),
        parse: |json, audio| transcription(json, audio),
        run: |client, request| match request {
            Request::Transcription(r, audio) => {
                let response = client.audio.transcriptions.create(&r, audio)?;
                Ok(Answer::Body {
                    content_type: response.content_type,
                    body: response.body.into_bytes(),
                })
            }
            _ => mismatched(),
        },
    },
    Method {
        name: "audio.transcriptions.stream",
        summary: "Stream a transcription",
        answer: "`transcript.text.delta` events, then `transcript.text.done`",
        request: "TranscriptionRequest",
        takes: Takes::Upload,
        gives: Gives::Events,
        required: &["file", "model"],
        route: None,
        optional: &[],
        streamed_by: None,
        parse: |json, audio| transcription(json, audio),
        run: |client, request| match request {
            Request::Transcription(r, audio) => {
                let events = client.audio.transcriptions.stream(&r, audio)?;
                Ok(Answer::Stream(Box::new(
                    events.map(|event| event.map(|e| e.to_json().to_string())),
                )))
            }
            _ => mismatched(),
        },
    },
    Method {
        name: "audio.translations.create",
        summary: "Create a translation into English (a multilingual model such as `@local/whisper-base`; an English-only model is a 400 naming it)",
        answer: "The translation in its `response_format`",
        request: "TranscriptionRequest",
        takes: Takes::Upload,
        gives: Gives::Body,
        required: &["file", "model"],
        route: post("/audio/translations"),
        optional: &[
            ("language", r#"{"type": "string", "description": "The audio's language (ISO-639-1 `fr` or a name); detected when left out"}"#),
            ("prompt", r#"{"type": "string"}"#),
            ("response_format", r#"{"type": "string", "enum": ["json", "text", "srt", "verbose_json", "vtt"]}"#),
            ("temperature", r#"{"type": "number", "minimum": 0, "maximum": 1}"#),
        ],
        streamed_by: None,
        parse: |json, audio| transcription(json, audio),
        run: |client, request| match request {
            Request::Transcription(r, audio) => {
                let response = client.audio.translations.create(&r, audio)?;
                Ok(Answer::Body {
                    content_type: response.content_type,
                    body: response.body.into_bytes(),
                })
            }
            _ => mismatched(),
        },
    },
    Method {
        name: "models.list",
        summary: "List models",
        answer: "A `list` of `model` objects",
        request: "{}",
        takes: Takes::Named,
        gives: Gives::Json,
        required: &[],
        route: get("/models"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| {
            Named::parse(json, &[])?;
            Ok(Request::Nothing)
        },
        run: |client, _| json(&client.models.list()),
    },
    Method {
        name: "models.retrieve",
        summary: "Retrieve a model",
        answer: "A `model` object",
        request: "{model}",
        takes: Takes::Named,
        gives: Gives::Json,
        required: &["model"],
        route: get("/models/{*model}"),
        optional: &[],
        streamed_by: None,
        parse: |json, _| {
            let mut named = Named::parse(json, &["model"])?;
            Ok(Request::Model(named.required("model")?))
        },
        run: |client, request| match request {
            Request::Model(model) => json(&client.models.retrieve(&model)?),
            _ => mismatched(),
        },
    },
];
