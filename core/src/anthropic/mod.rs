//! Anthropic's Messages API (`client.messages`), over the chat predictors: a request read into
//! a chat conversation (`request.rs`), the chat's answer written back as a message, its chunks
//! as Anthropic's stream events (`stream.rs`). So every chat predictor, built-in or a user's,
//! serves it with no code of its own, and clients built on the `anthropic` SDKs run on local
//! models (docs/anthropic.md).

mod request;
mod stream;

pub use request::MessagesRequest;
pub use stream::{anthropic_error_type, error_event, MessageEvents};

use crate::error::{Error, Result};
use crate::openai::{ChatCompletion, ChatCompletionRequest, ChatCompletions};
use crate::predict::{random_id, Cancel, GenerationOption};
use serde_json::{json, Value as Json};

/// `client.messages`.
#[derive(Clone)]
pub struct Messages {
    chat: ChatCompletions,
}

/// An OpenAI finish reason as Anthropic's `stop_reason`.
fn stop_reason(finish_reason: &str) -> &'static str {
    match finish_reason {
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        _ => "end_turn",
    }
}

/// A tool call's arguments as Anthropic's `input` object (`{}` when they are not one).
fn tool_input(arguments: &str) -> Json {
    match serde_json::from_str::<Json>(arguments) {
        Ok(input @ Json::Object(_)) => input,
        _ => json!({}),
    }
}

impl Messages {
    pub(crate) fn new(chat: ChatCompletions) -> Self {
        Messages { chat }
    }

    /// This resource with its calls stopped by `cancel`.
    pub(crate) fn with_cancel(&self, cancel: &Cancel) -> Self {
        let mut messages = self.clone();
        messages.chat.cancel = cancel.clone();
        messages
    }

    /// `POST /v1/messages`: the assistant's message.
    pub fn create(&self, request: &MessagesRequest) -> Result<Json> {
        if request.stream == Some(true) {
            return Err(Error::invalid(
                "stream",
                "`stream: true` was given to create(); call stream() instead",
            ));
        }
        require_max_tokens(request)?;
        let chat = self.chat_request(request, false)?;
        let completion = self.chat.create(&chat).map_err(in_anthropic_terms)?;
        Ok(message_of(completion, &request.model))
    }

    /// `POST /v1/messages` with `stream: true`: Anthropic's events, `message_start` to
    /// `message_stop`. Dropping the stream stops generation.
    pub fn stream(&self, request: &MessagesRequest) -> Result<MessageEvents> {
        require_max_tokens(request)?;
        let chat = self.chat_request(request, true)?;
        let chunks = self.chat.stream(&chat).map_err(in_anthropic_terms)?;
        Ok(MessageEvents::new(chunks, request.model.clone()))
    }

    /// The chat request of `request`. Anthropic requires `max_tokens` of every message, so a
    /// chat predictor that takes no limit (a user's may not) is not refused for it: it stops
    /// where it stops, as it does for chat completions without `max_tokens`.
    fn chat_request(
        &self,
        request: &MessagesRequest,
        stream: bool,
    ) -> Result<ChatCompletionRequest> {
        let mut chat = request.to_chat(stream)?;
        if !self
            .chat
            .supports(&request.model, GenerationOption::MaxTokens)?
        {
            chat.max_tokens = None;
        }
        Ok(chat)
    }

    /// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, counted by the model itself by
    /// reading the prompt and generating one token (as `responses.input_tokens`).
    pub fn count_tokens(&self, request: &MessagesRequest) -> Result<Json> {
        let tokens = self
            .chat
            .count_input_tokens(&request.to_chat(false)?)
            .map_err(in_anthropic_terms)?;
        Ok(json!({ "input_tokens": tokens }))
    }
}

/// An error of the chat request a message request maps onto, naming the field in Anthropic's
/// terms: `output_config.format` for `response_format`, `tools[i].input_schema` for a tool's
/// `parameters`, `stop_sequences` for `stop`, and `messages` without a chat index (a system
/// message and each tool result shift them).
pub(crate) fn in_anthropic_terms(mut error: Error) -> Error {
    let Some(param) = error.param.take() else {
        return error;
    };
    // An image block's error names the block in Anthropic's own terms already.
    if error.code == Some(crate::ErrorCode::InvalidMedia) {
        error.param = Some(param);
        return error;
    }
    let renamed = if let Some(rest) = param.strip_prefix("response_format.json_schema.schema") {
        format!("output_config.format.schema{rest}")
    } else if param.starts_with("response_format") {
        "output_config.format".to_string()
    } else if param == "reasoning_effort" {
        error.message = error.message.replace(
            "`reasoning_effort`",
            "`thinking` (a reasoning effort, from its budget)",
        );
        "thinking".to_string()
    } else if param == "stop" || param.starts_with("stop[") {
        format!("stop_sequences{}", &param[4..])
    } else if param.starts_with("messages[") {
        "messages".to_string()
    } else if let (Some(rest), true) = (param.strip_prefix("tools["), param.contains("].function"))
    {
        let (index, field) = rest.split_once("].function").unwrap_or((rest, ""));
        let field = match field.strip_prefix(".parameters") {
            Some(schema) => format!(".input_schema{schema}"),
            None => field.to_string(),
        };
        format!("tools[{index}]{field}")
    } else {
        param
    };
    error.param = Some(renamed);
    error
}

/// `max_tokens`, which Anthropic requires of a message (not of a count).
fn require_max_tokens(request: &MessagesRequest) -> Result<()> {
    match request.max_tokens {
        Some(_) => Ok(()),
        None => Err(Error::invalid(
            "max_tokens",
            "Missing required parameter: `max_tokens`",
        )),
    }
}

/// A chat completion as Anthropic's message: its text, then a `tool_use` block per call.
fn message_of(completion: ChatCompletion, model: &str) -> Json {
    let mut content = Vec::new();
    let mut reason = "end_turn";
    if let Some(choice) = completion.choices.into_iter().next() {
        reason = stop_reason(&choice.finish_reason);
        if let Some(thinking) = choice.message.reasoning_content.filter(|t| !t.is_empty()) {
            // No signature: the thinking never left this process to be vouched for.
            content.push(json!({"type": "thinking", "thinking": thinking, "signature": ""}));
        }
        let text = choice.message.content.unwrap_or_default();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text, "citations": null}));
        }
        for call in choice.message.tool_calls.unwrap_or_default() {
            content.push(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": tool_input(&call.function.arguments),
            }));
        }
    }
    json!({
        "id": random_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": null,
        "usage": stream::anthropic_usage(&completion.usage),
    })
}

#[cfg(test)]
mod tests {
    use super::in_anthropic_terms;
    use crate::error::Error;

    #[test]
    fn chat_fields_are_named_as_anthropic_names_them() {
        for (chat, anthropic) in [
            (
                "response_format.json_schema.schema.properties.x",
                "output_config.format.schema.properties.x",
            ),
            ("response_format.json_schema", "output_config.format"),
            (
                "tools[2].function.parameters.type",
                "tools[2].input_schema.type",
            ),
            ("tools[0].function.name", "tools[0].name"),
            ("stop[1]", "stop_sequences[1]"),
            ("stop", "stop_sequences"),
            ("messages[3].content", "messages"),
            ("max_tokens", "max_tokens"),
            ("tool_choice", "tool_choice"),
        ] {
            let error = in_anthropic_terms(Error::invalid(chat, "x"));
            assert_eq!(error.param.as_deref(), Some(anthropic), "{chat}");
        }
    }
}
