//! The methods over text models: chat, completions, embeddings, images, rerank, Anthropic's
//! Messages, OpenAI's Responses (create and count), and the tokenizer.

use super::{json, post, Answer, Dialect, Door, Gives, Operation, Route, Spec, Streamed, Verb};
use crate::anthropic::MessagesRequest;
use crate::error::Result;
use crate::json_text::json_texts;
use crate::openai::{
    ChatCompletionRequest, CompletionRequest, DetokenizeRequest, EmbeddingRequest,
    ImageGenerateRequest, RerankRequest, ResponseRequest, TokenizeRequest, TranscriptionAudio,
};
use crate::Client;

/// `chat.completions.create` and `chat.completions.stream`.
pub struct ChatCompletionsCreate;

impl Operation for ChatCompletionsCreate {
    type Request = ChatCompletionRequest;
    const SPEC: Spec = Spec {
        name: "chat.completions.create",
        summary: "Create a chat completion",
        answer: "A `chat.completion`, or with `stream: true` `chat.completion.chunk` events",
        required: &["model", "messages"],
        route: post("/chat/completions"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        ChatCompletionRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.chat.completions.create(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

impl Streamed for ChatCompletionsCreate {
    const STREAM: Spec = Spec {
        name: "chat.completions.stream",
        summary: "Stream a chat completion",
        answer: "`chat.completion.chunk` objects",
        gives: Gives::Chunks,
        ..Self::SPEC
    };

    fn wants_stream(request: &Self::Request) -> bool {
        request.stream == Some(true)
    }

    fn stream(client: &Client, request: Self::Request) -> Result<Answer> {
        let chunks = client.chat.completions.stream(&request)?;
        Ok(Answer::Stream(json_texts(chunks)))
    }
}

/// `completions.create` and `completions.stream`.
pub struct CompletionsCreate;

impl Operation for CompletionsCreate {
    type Request = CompletionRequest;
    const SPEC: Spec = Spec {
        name: "completions.create",
        summary: "Create a text completion",
        answer: "A `text_completion`, or with `stream: true` its chunks as events",
        required: &["model", "prompt"],
        route: post("/completions"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        CompletionRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.completions.create(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

impl Streamed for CompletionsCreate {
    const STREAM: Spec = Spec {
        name: "completions.stream",
        summary: "Stream a text completion",
        answer: "`text_completion` chunks",
        gives: Gives::Chunks,
        ..Self::SPEC
    };

    fn wants_stream(request: &Self::Request) -> bool {
        request.stream == Some(true)
    }

    fn stream(client: &Client, request: Self::Request) -> Result<Answer> {
        Ok(Answer::Stream(json_texts(
            client.completions.stream(&request)?,
        )))
    }
}

/// `embeddings.create`.
pub struct EmbeddingsCreate;

impl Operation for EmbeddingsCreate {
    type Request = EmbeddingRequest;
    const SPEC: Spec = Spec {
        name: "embeddings.create",
        summary: "Create embeddings",
        answer: "A `list` of `embedding` objects",
        required: &["model", "input"],
        route: post("/embeddings"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        EmbeddingRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        // The format first, as `client.embeddings.create` checks it.
        let format = request.format()?;
        let matrix = client.embeddings.create_matrix(&request)?;
        Ok(Answer::Matrix { matrix, format })
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

/// `images.generate` and `images.stream`.
pub struct ImagesGenerate;

impl Operation for ImagesGenerate {
    type Request = ImageGenerateRequest;
    const SPEC: Spec = Spec {
        name: "images.generate",
        summary: "Make images from a prompt (predictors annotated ImageWidth, ImageHeight, ImageCount)",
        answer: "An `ImagesResponse`: `{created, data: [{b64_json}], background, output_format, quality, size}`; with `stream: true`, `image_generation.partial_image` and `image_generation.completed` events",
        required: &["model", "prompt"],
        route: post("/images/generations"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        ImageGenerateRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.images.generate(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

impl Streamed for ImagesGenerate {
    const STREAM: Spec = Spec {
        name: "images.stream",
        summary: "Stream image generation events (partial images, then each completed image)",
        answer: "`image_generation.partial_image` ... `image_generation.completed` events",
        gives: Gives::NamedEvents,
        ..Self::SPEC
    };

    fn wants_stream(request: &Self::Request) -> bool {
        request.stream == Some(true)
    }

    fn stream(client: &Client, request: Self::Request) -> Result<Answer> {
        Ok(Answer::Stream(json_texts(client.images.stream(&request)?)))
    }
}

/// `rerank.create`.
pub struct RerankCreate;

impl Operation for RerankCreate {
    type Request = RerankRequest;
    const SPEC: Spec = Spec {
        name: "rerank.create",
        summary: "Rank documents by relevance to a query (Jina's and Cohere's shape; TEI's with `texts`)",
        answer: "`{id, model, results: [{index, relevance_score, document}], usage}`, most relevant first; for a request with `texts`, text-embeddings-inference's `[{index, score, text}]`",
        // `documents` (or TEI's `texts`) and `model` (but for TEI's shape) are required too.
        required: &["query"],
        route: Some(Route {
            verb: Verb::Post,
            path: "/rerank",
            aliases: &["/rerank", "/v2/rerank"],
        }),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        RerankRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        let ranked = client.rerank.create(&request)?;
        match request.is_tei() {
            true => json(&ranked.into_tei()),
            false => json(&ranked),
        }
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(request.model_name())
    }
}

/// `messages.create` and `messages.stream`: Anthropic's Messages.
pub struct MessagesCreate;

impl Operation for MessagesCreate {
    type Request = MessagesRequest;
    const SPEC: Spec = Spec {
        name: "messages.create",
        summary: "Create a message (Anthropic's Messages API, over the chat models)",
        answer:
            "A `message`, or with `stream: true` its events (`message_start` ... `message_stop`)",
        dialect: Dialect::Anthropic,
        required: &["model", "messages", "max_tokens"],
        route: post("/messages"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        MessagesRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.messages.create(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

impl Streamed for MessagesCreate {
    const STREAM: Spec = Spec {
        name: "messages.stream",
        summary: "Stream a message (Anthropic's stream events)",
        answer: "`message_start`, `ping`, `content_block_start` / `_delta` / `_stop`, `message_delta`, `message_stop`",
        gives: Gives::NamedEvents,
        ..Self::SPEC
    };

    fn wants_stream(request: &Self::Request) -> bool {
        request.stream == Some(true)
    }

    fn stream(client: &Client, request: Self::Request) -> Result<Answer> {
        Ok(Answer::Stream(json_texts(
            client.messages.stream(&request)?,
        )))
    }
}

/// `messages.count_tokens`.
pub struct MessagesCountTokens;

impl Operation for MessagesCountTokens {
    type Request = MessagesRequest;
    const SPEC: Spec = Spec {
        name: "messages.count_tokens",
        summary: "Count a message request's input tokens (Anthropic's)",
        answer: "`{input_tokens}`",
        dialect: Dialect::Anthropic,
        required: &["model", "messages"],
        route: post("/messages/count_tokens"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        MessagesRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.messages.count_tokens(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

/// `responses.create` and `responses.stream`: OpenAI's Responses.
pub struct ResponsesCreate;

impl Operation for ResponsesCreate {
    type Request = ResponseRequest;
    const SPEC: Spec = Spec {
        name: "responses.create",
        summary: "Create a response (OpenAI's Responses API, over the chat models)",
        answer: "A `response`, or with `stream: true` its events (`response.created` ... `response.completed`)",
        required: &["model", "input"],
        route: post("/responses"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        ResponseRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        Ok(Answer::Json(client.responses.create(&request)?.to_string()))
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

impl Streamed for ResponsesCreate {
    const STREAM: Spec = Spec {
        name: "responses.stream",
        summary: "Stream a response's events",
        answer: "`response.created` ... `response.completed` events",
        gives: Gives::NamedEvents,
        ..Self::SPEC
    };

    fn wants_stream(request: &Self::Request) -> bool {
        request.stream
    }

    fn stream(client: &Client, request: Self::Request) -> Result<Answer> {
        Ok(Answer::Stream(json_texts(
            client.responses.stream(&request)?,
        )))
    }
}

/// `responses.input_tokens`.
pub struct ResponsesInputTokens;

impl Operation for ResponsesInputTokens {
    type Request = ResponseRequest;
    const SPEC: Spec = Spec {
        name: "responses.input_tokens",
        summary: "Count the input tokens of a Responses request (read by the model: its prompt is left in the prompt cache)",
        answer: "`{object: \"response.input_tokens\", input_tokens}`",
        required: &["model", "input"],
        route: post("/responses/input_tokens"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        ResponseRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        let count = client.responses.input_tokens(&request)?;
        Ok(Answer::Json(count.to_string()))
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

/// `apply_template`: llama.cpp server's `POST /apply-template`, a chat request's prompt.
pub struct ApplyTemplate;

impl Operation for ApplyTemplate {
    type Request = ChatCompletionRequest;
    const SPEC: Spec = Spec {
        name: "apply_template",
        summary: "Render a chat request's prompt with the model's chat template, generating \
                  nothing (llama.cpp server's `/apply-template`)",
        answer: "`{prompt}`",
        // `model` too but for llama.cpp server's clients: the default chat model then.
        required: &["messages"],
        route: Some(Route {
            verb: Verb::Post,
            path: "/apply-template",
            aliases: &["/apply-template"],
        }),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        // llama.cpp server's clients send no `model`: the default chat model then.
        match serde_json::from_str::<serde_json::Value>(json) {
            Ok(serde_json::Value::Object(mut body)) if !body.contains_key("model") => {
                body.insert("model".into(), "".into());
                ChatCompletionRequest::from_json(&serde_json::Value::Object(body).to_string())
            }
            _ => ChatCompletionRequest::from_json(json),
        }
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.chat.completions.render(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(match request.model.as_str() {
            "" => crate::config::DEFAULT_MODEL,
            model => model,
        })
    }
}

/// `tokenize`: llama.cpp server's `POST /tokenize`.
pub struct Tokenize;

impl Operation for Tokenize {
    type Request = TokenizeRequest;
    const SPEC: Spec = Spec {
        name: "tokenize",
        summary: "Tokenize text with a text model's own tokenizer (llama.cpp server's `/tokenize`)",
        answer: "`{tokens: [id, ...]}`, or with `with_pieces: true` `{tokens: [{id, piece}, ...]}`",
        // `model` too but for llama.cpp server's clients: the default chat model then.
        required: &["content"],
        route: Some(Route {
            verb: Verb::Post,
            path: "/tokenize",
            aliases: &["/tokenize"],
        }),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        TokenizeRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.tokens.tokenize(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(request.model_name())
    }
}

/// `detokenize`: llama.cpp server's `POST /detokenize`.
pub struct Detokenize;

impl Operation for Detokenize {
    type Request = DetokenizeRequest;
    const SPEC: Spec = Spec {
        name: "detokenize",
        summary: "Turn token ids back into text (llama.cpp server's `/detokenize`)",
        answer: "`{content}`",
        required: &["tokens"],
        route: Some(Route {
            verb: Verb::Post,
            path: "/detokenize",
            aliases: &["/detokenize"],
        }),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        DetokenizeRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        json(&client.tokens.detokenize(&request)?)
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(request.model_name())
    }
}
