//! `client.responses`: OpenAI's Responses API over the chat machinery. A request's input items
//! (messages, function calls and their outputs, after those of `previous_response_id`) become a
//! chat conversation; the chat stream's chunks become the Responses events (`response.created`,
//! `response.output_text.delta`, ..., `response.completed`), and a whole `create()` is those
//! events run to the end. So every chat-capable predictor, built in or written by a user, serves
//! Responses with no code of its own, and a continued conversation renders as a prefix of the
//! next one, which the llama backend's prompt cache reuses.
//!
//! Stored responses (`store`, true unless said otherwise) are kept in SQLite (store.rs), in the
//! file `Config::responses` names; `previous_response_id` continues one, `retrieve`, `delete`
//! and `input_items` read them.

mod conversation;
mod request;
mod store;
mod stream;

pub use request::ResponseRequest;
pub use stream::ResponseStream;

use crate::config::ResponsesConfig;
use crate::error::ErrorCode;
use crate::error::{shown, Error, ErrorKind, Result};
use crate::openai::chat::ChatCompletions;
use crate::openai::common::next_unless_stopped;
use crate::openai::types::{ChatCompletionRequest, ChatMessage, StreamOptions};
use crate::predict::{random_id, unix_now};
use conversation::chat_messages;
use request::{chat_response_format, chat_tool_choice};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::Arc;
use store::{Store, Stored};

/// `client.responses`.
#[derive(Clone)]
pub struct Responses {
    chat: ChatCompletions,
    store: Arc<Store>,
}

impl Responses {
    pub(crate) fn new(chat: ChatCompletions, config: &ResponsesConfig) -> Self {
        Responses {
            chat,
            store: Arc::new(Store::new(config)),
        }
    }

    /// Its calls stopped by `cancel` (see [`crate::Client::with_cancel`]).
    pub(crate) fn with_cancel(&self, cancel: &crate::predict::Cancel) -> Self {
        let mut chat = self.chat.clone();
        chat.cancel = cancel.clone();
        Responses {
            chat,
            store: Arc::clone(&self.store),
        }
    }

    /// A whole `response`. `request.stream` must not be true (use [`Self::stream`]). Its
    /// cancel ([`crate::Client::with_cancel`]) stops it at the next token.
    pub fn create(&self, request: &ResponseRequest) -> Result<Json> {
        if request.stream {
            return Err(Error::invalid(
                "stream",
                "`stream: true` was given to create(); call stream() instead",
            ));
        }
        let mut events = self.start(request)?;
        let mut last = None;
        while let Some(event) = next_unless_stopped(&mut events, &self.chat.cancel)? {
            last = Some(event);
        }
        if let Some(failure) = events.take_failure() {
            return Err(failure);
        }
        last.and_then(|mut event| event.get_mut("response").map(Json::take))
            .ok_or_else(|| Error::internal("The response ended without its last event"))
    }

    /// The response's events, as OpenAI streams them. Dropping the stream stops generation.
    pub fn stream(&self, request: &ResponseRequest) -> Result<ResponseStream> {
        self.start(request)
    }

    fn start(&self, request: &ResponseRequest) -> Result<ResponseStream> {
        if request.store {
            // A store that cannot open says so before anything is generated.
            self.store.open()?;
        }
        let (chat, conversation) = self.chat_request(request)?;
        let chunks = self.chat.stream(&chat).map_err(in_responses_terms)?;
        // What it samples with where the request says nothing: a built-in model's recommended
        // sampling; 1 (OpenAI's default) for a predictor, whose own defaults ingle cannot see.
        let (temperature, top_p) = self
            .chat
            .registry
            .get(&request.model)
            .ok()
            .and_then(|p| p.generation().and_then(|g| g.default_sampling()))
            .unwrap_or((1.0, 1.0));
        let response = json!({
            "id": random_id("resp_"),
            "object": "response",
            "created_at": unix_now(),
            "status": "in_progress",
            "completed_at": null,
            "access_programs": null,
            "background": false,
            "error": null,
            "incomplete_details": null,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "max_tool_calls": null,
            "model": request.model,
            "output": [],
            // As the engine reads it: a named function is one call unless it is set.
            "parallel_tool_calls": request.parallel_tool_calls.unwrap_or(
                !request.tool_choice.as_ref().is_some_and(|c| c["type"] == "function")
            ),
            "previous_response_id": request.previous_response_id,
            "reasoning": {"effort": request.reasoning_effort, "summary": null},
            "service_tier": "default",
            "store": request.store,
            "temperature": request.temperature.unwrap_or(temperature),
            "presence_penalty": request.presence_penalty.unwrap_or(0.0),
            "frequency_penalty": request.frequency_penalty.unwrap_or(0.0),
            "safety_identifier": request.safety_identifier,
            "prompt_cache_key": request.prompt_cache_key,
            "text": {"format": request.format, "verbosity": "medium"},
            "tool_choice": request.tool_choice.clone().unwrap_or(json!("auto")),
            "tools": request.tools.iter().map(echoed_tool).collect::<Vec<_>>(),
            "top_logprobs": 0,
            "top_p": request.top_p.unwrap_or(top_p),
            "truncation": "disabled",
            "usage": null,
            "user": request.user,
            "metadata": request.metadata,
        });
        let mut pending = VecDeque::new();
        pending.push_back(json!({"type": "response.created", "response": response}));
        pending.push_back(json!({"type": "response.in_progress", "response": response}));
        let keep = request
            .store
            .then(|| (self.clone(), request.input.clone(), conversation));
        Ok(ResponseStream::new(chunks, response, pending, keep))
    }

    /// The chat request `request` is, with the conversation it continues (the stored one of
    /// `previous_response_id`, then `input`).
    fn chat_request(
        &self,
        request: &ResponseRequest,
    ) -> Result<(ChatCompletionRequest, Vec<ChatMessage>)> {
        let mut conversation = Vec::new();
        if let Some(previous) = &request.previous_response_id {
            let stored = self.store.get(previous)?.ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "Previous response with id '{}' not found (never stored, deleted, or \
                         past the store's bounds)",
                        shown(previous)
                    ),
                )
                .with_param("previous_response_id")
                .with_code(ErrorCode::PreviousResponseNotFound)
            })?;
            conversation = stored.conversation;
            // The media of earlier turns are decoded again for this one: an error about one
            // (a model without ChatImages now) names where it came from.
            for message in &mut conversation {
                if let Some(crate::openai::types::MessageContent::Parts(parts)) =
                    &mut message.content
                {
                    for part in parts.iter_mut().filter(|p| p.kind != "text") {
                        part.at = Some("previous_response_id".into());
                    }
                }
            }
        }
        chat_messages(&request.input, &mut conversation);
        let mut messages = Vec::with_capacity(conversation.len() + 1);
        if let Some(instructions) = &request.instructions {
            messages.push(ChatMessage::system(instructions.clone()));
        }
        messages.extend(conversation.iter().cloned());
        let tools = !request.tools.is_empty();
        let chat = ChatCompletionRequest {
            max_tokens: request.max_output_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            presence_penalty: request.presence_penalty,
            frequency_penalty: request.frequency_penalty,
            reasoning_effort: request.reasoning_effort.clone(),
            tools: tools.then(|| {
                request
                    .tools
                    .iter()
                    .map(|tool| {
                        let mut function = json!({"name": tool["name"]});
                        for key in ["description", "parameters", "strict"] {
                            if let Some(value) = tool.get(key).filter(|v| !v.is_null()) {
                                function[key] = value.clone();
                            }
                        }
                        json!({"type": "function", "function": function})
                    })
                    .collect()
            }),
            tool_choice: request
                .tool_choice
                .as_ref()
                .map(chat_tool_choice)
                .transpose()?,
            parallel_tool_calls: request.parallel_tool_calls.filter(|_| tools),
            allow_repeated_tool_calls: request.allow_repeated_tool_calls.filter(|_| tools),
            response_format: chat_response_format(&request.format)?,
            stream: Some(true),
            stream_options: Some(StreamOptions {
                include_usage: true,
                ..StreamOptions::default()
            }),
            user: request.user.clone(),
            ..ChatCompletionRequest::new(request.model.clone(), messages)
        };
        Ok((chat, conversation))
    }

    /// `POST /v1/responses/input_tokens`: how many input tokens `request` would take, its
    /// instructions, tools, format and the conversation of `previous_response_id` included:
    /// `{"object": "response.input_tokens", "input_tokens": N}`. Counted by the model itself,
    /// by reading the prompt and generating one token (never stored), so it is exact for every
    /// chat predictor that reports usage, and the prompt is left in the prompt cache for the
    /// request that follows. A predictor that reports no usage is an error naming `model`.
    pub fn input_tokens(&self, request: &ResponseRequest) -> Result<Json> {
        let (chat, _) = self.chat_request(request)?;
        let tokens = self
            .chat
            .count_input_tokens(&chat)
            .map_err(in_responses_terms)?;
        Ok(json!({"object": "response.input_tokens", "input_tokens": tokens}))
    }

    /// A stored response, by id.
    pub fn retrieve(&self, id: &str) -> Result<Json> {
        Ok(self.found(id)?.response)
    }

    /// Forgets a stored response: `{"id", "object": "response.deleted", "deleted": true}`.
    pub fn delete(&self, id: &str) -> Result<Json> {
        if !self.store.delete(id)? {
            return Err(response_not_found(id));
        }
        Ok(json!({"id": id, "object": "response.deleted", "deleted": true}))
    }

    /// The input items of a stored response, as OpenAI pages them: `order` `desc` (the
    /// default: newest first) or `asc`, `limit` 1 to 100 (default 20), after the item `after`.
    pub fn input_items(
        &self,
        id: &str,
        after: Option<&str>,
        limit: Option<i64>,
        order: Option<&str>,
    ) -> Result<Json> {
        let stored = self.found(id)?;
        let limit = match limit {
            None => 20,
            Some(n @ 1..=100) => n as usize,
            Some(n) => {
                return Err(Error::invalid(
                    "limit",
                    format!("Invalid value for `limit`: {n} (1 to 100)"),
                ))
            }
        };
        let mut items: Vec<&Json> = stored.input.iter().collect();
        match order {
            None | Some("desc") => items.reverse(),
            Some("asc") => {}
            Some(other) => {
                return Err(Error::invalid(
                    "order",
                    format!(
                        "Invalid value for `order`: '{}' (asc or desc)",
                        shown(other)
                    ),
                ))
            }
        }
        if let Some(after) = after {
            let Some(at) = items.iter().position(|item| item["id"] == after) else {
                return Err(Error::invalid(
                    "after",
                    format!("No input item with id '{}' in this response", shown(after)),
                ));
            };
            items.drain(..=at);
        }
        let has_more = items.len() > limit;
        items.truncate(limit);
        Ok(json!({
            "object": "list",
            "data": items,
            "first_id": items.first().map(|item| item["id"].clone()),
            "last_id": items.last().map(|item| item["id"].clone()),
            "has_more": has_more,
        }))
    }

    fn found(&self, id: &str) -> Result<Stored> {
        self.store.get(id)?.ok_or_else(|| response_not_found(id))
    }
}

/// A function tool as a response echoes it: every field of OpenAI's `FunctionTool`, null where
/// the request left it out.
fn echoed_tool(tool: &Json) -> Json {
    json!({
        "type": "function",
        "name": tool["name"],
        "description": tool.get("description").unwrap_or(&Json::Null),
        "parameters": tool.get("parameters").unwrap_or(&Json::Null),
        "strict": tool.get("strict").unwrap_or(&Json::Null),
    })
}

fn response_not_found(id: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("No response found with id '{}'", shown(id)),
    )
    .with_param("response_id")
    .with_code(ErrorCode::NotFound)
}

/// A chat error, in the request's own terms: `messages` is `input`, `max_tokens`
/// `max_output_tokens`, `response_format` `text.format`.
fn in_responses_terms(mut error: Error) -> Error {
    if let Some(param) = &error.param {
        let renamed = [
            ("messages", "input"),
            ("max_tokens", "max_output_tokens"),
            ("response_format", "text.format"),
            ("reasoning_effort", "reasoning.effort"),
        ]
        .iter()
        .find_map(|(chat, responses)| {
            param
                .strip_prefix(chat)
                .filter(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
                .map(|rest| format!("{responses}{rest}"))
        });
        if let Some(renamed) = renamed {
            if param == "reasoning_effort" || param == "max_tokens" {
                // The message names the field too.
                error.message = error
                    .message
                    .replace(&format!("`{param}`"), &format!("`{renamed}`"));
            }
            error.param = Some(renamed);
        }
    }
    error
}
