//! The OpenAPI description of the served routes (`GET /openapi.json`).

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
            "/responses": post("Create a response (OpenAI's Responses API, over the chat models)", &["model", "input"], "A `response`, or with `stream: true` its events (`response.created` ... `response.completed`)", true),
            "/responses/input_tokens": post("Count the input tokens of a Responses request (read by the model: its prompt is left in the prompt cache)", &["model", "input"], "`{object: \"response.input_tokens\", input_tokens}`", false),
            "/responses/{response_id}": {
                "get": {
                    "summary": "Retrieve a stored response",
                    "parameters": [{"name": "response_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": answers("A `response`", false),
                },
                "delete": {
                    "summary": "Delete a stored response",
                    "parameters": [{"name": "response_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": answers("`{id, object: \"response.deleted\", deleted: true}`", false),
                },
            },
            "/responses/{response_id}/input_items": {"get": {
                "summary": "List a stored response's input items",
                "parameters": [
                    {"name": "response_id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "after", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                    {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
                ],
                "responses": answers("A `list` of input items", false),
            }},
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
                    "language": {"type": "string", "description": "ISO-639-1 (`fr`) or an English name (`french`); detected on a multilingual model when left out"},
                    "timestamp_granularities[]": {"type": "array", "items": {"type": "string", "enum": ["word", "segment"]}},
                    "stream": {"type": "boolean"},
                })),
                "responses": transcription_answers,
            }},
            "/audio/translations": {"post": {
                "summary": "Create a translation into English (a multilingual model such as `@local/whisper-base`; an English-only model is a 400 naming it)",
                "requestBody": upload(serde_json::json!({
                    "language": {"type": "string", "description": "The audio's language (ISO-639-1 `fr` or a name); detected when left out"},
                })),
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
