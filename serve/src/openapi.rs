//! The OpenAPI description of the served routes (`GET /openapi.json`), made from the core's
//! method table as the routes are.

use ingle::methods::{Gives, Takes, METHODS};

/// The OpenAPI description of the served routes.
pub fn openapi() -> serde_json::Value {
    let error = serde_json::json!({"$ref": "#/components/schemas/Error"});
    let object = |required: &[&str]| serde_json::json!({"type": "object", "required": required, "additionalProperties": true});
    let json_body = |schema: serde_json::Value| serde_json::json!({"required": true, "content": {"application/json": {"schema": schema}}});
    let answers = |ok: &str, streamed: Option<&str>| {
        let mut content = serde_json::json!({"application/json": {"schema": {"type": "object"}}});
        if let Some(events) = streamed {
            content["text/event-stream"] = serde_json::json!({
                "schema": {"type": "string", "description": events}
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
    let mut paths = serde_json::Map::new();
    for method in METHODS {
        let Some(route) = method.route else { continue };
        let path = route.path.replace("{*", "{");
        // How the method that streams a `stream: true` request frames its events.
        let streamed = method.streamed_by.map(|m| match m.gives {
            Gives::Chunks => "`data: {chunk}` events, then `data: [DONE]`".to_string(),
            Gives::NamedEvents => format!("`event:` and `data:` lines: {}", m.answer),
            _ => m.answer.to_string(),
        });
        let mut operation = serde_json::json!({"summary": method.summary});
        match method.takes {
            Takes::Json => {
                operation["requestBody"] = json_body(object(method.required));
            }
            Takes::Upload => {
                let mut properties = serde_json::json!({
                    "file": {"type": "string", "format": "binary", "description": "The audio: wav, flac, mp3, ogg (vorbis, opus), webm or m4a"},
                    "model": {"type": "string"},
                });
                for param in method.params {
                    properties[param.name] = param.kind.schema();
                }
                operation["requestBody"] = serde_json::json!({"required": true, "content": {"multipart/form-data": {"schema": {
                    "type": "object",
                    "required": method.required,
                    "properties": properties,
                }}}});
            }
            Takes::Named => {
                let mut parameters = Vec::new();
                if let Some((_, rest)) = path.split_once('{') {
                    let name = rest.split_once('}').map_or(rest, |(name, _)| name);
                    parameters.push(serde_json::json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}));
                }
                for param in method.params {
                    parameters.push(serde_json::json!({"name": param.name, "in": "query", "schema": param.kind.schema()}));
                }
                if !parameters.is_empty() {
                    operation["parameters"] = parameters.into();
                }
            }
        }
        let mut responses = answers(method.answer, streamed.as_deref());
        match method.gives {
            Gives::Body => {
                responses["200"]["content"] = serde_json::json!({
                    "application/json": {"schema": {"type": "object"}},
                    "text/plain": {"schema": {"type": "string"}},
                    "text/vtt": {"schema": {"type": "string"}},
                });
                if let Some(events) = &streamed {
                    responses["200"]["content"]["text/event-stream"] =
                        serde_json::json!({"schema": {"type": "string", "description": events}});
                }
            }
            Gives::Audio => {
                responses["200"]["content"] = serde_json::json!({
                    "audio/mpeg": {}, "audio/ogg": {}, "audio/aac": {}, "audio/flac": {}, "audio/wav": {}, "audio/pcm": {},
                    "text/event-stream": {"schema": {"type": "string", "description": "`speech.audio.delta` events, then `speech.audio.done`"}},
                });
            }
            Gives::Json | Gives::Chunks | Gives::NamedEvents | Gives::Events => {}
        }
        operation["responses"] = responses;
        let entry = paths.entry(path).or_insert_with(|| serde_json::json!({}));
        entry[route.verb.as_str()] = operation;
    }
    serde_json::json!({
        "openapi": "3.1.0",
        "info": {
            "title": "ingle",
            "version": ingle::VERSION,
            "description": "The OpenAI API, served by open models running in this process.",
        },
        "servers": [{"url": "/v1"}],
        "paths": paths,
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
