//! Items, input or output, as the chat conversation they continue.

use crate::openai::types::{ChatMessage, ContentPart, FunctionCall, MessageContent, ToolCall};
use serde_json::Value as Json;

/// Items (input or output) as chat messages: consecutive function calls become one assistant
/// message with several tool calls, each output a `tool` message. A message with images or
/// audio keeps its parts, each named `input[i].content[j]` in errors.
pub(super) fn chat_messages(items: &[Json], messages: &mut Vec<ChatMessage>) {
    for (i, item) in items.iter().enumerate() {
        let text = |key: &str| {
            item.get(key)
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string()
        };
        match item.get("type").and_then(Json::as_str) {
            // Thinking is the model's own: chat templates leave it out of the history.
            Some("reasoning") => {}
            Some("function_call") => {
                let call = ToolCall {
                    id: text("call_id"),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: text("name"),
                        arguments: text("arguments"),
                    },
                };
                match messages.last_mut() {
                    Some(last) if last.role == "assistant" && last.tool_calls.is_some() => {
                        last.tool_calls.get_or_insert_with(Vec::new).push(call)
                    }
                    _ => messages.push(ChatMessage {
                        tool_calls: Some(vec![call]),
                        content: None,
                        ..ChatMessage::new("assistant", "")
                    }),
                }
            }
            Some("function_call_output") => messages.push(ChatMessage {
                tool_call_id: Some(text("call_id")),
                ..ChatMessage::new("tool", text("output"))
            }),
            _ if item
                .get("content")
                .and_then(Json::as_array)
                .is_some_and(|parts| {
                    parts.iter().any(|p| {
                        p.get("type").and_then(Json::as_str) != Some("input_text")
                            && p.get("type").and_then(Json::as_str) != Some("output_text")
                    })
                }) =>
            {
                let parts = item
                    .get("content")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten();
                let parts = parts
                    .enumerate()
                    .map(|(j, part)| {
                        let at = format!("input[{i}].content[{j}]");
                        let text = |key: &str| {
                            part.get(key)
                                .and_then(Json::as_str)
                                .unwrap_or("")
                                .to_string()
                        };
                        match part.get("type").and_then(Json::as_str) {
                            Some("input_image") => ContentPart::image_url(
                                text("image_url"),
                                part.get("detail")
                                    .and_then(Json::as_str)
                                    .map(str::to_string),
                            ),
                            Some("input_audio") => {
                                let audio = part.get("input_audio");
                                let field = |key: &str| {
                                    audio
                                        .and_then(|a| a.get(key))
                                        .and_then(Json::as_str)
                                        .unwrap_or("")
                                        .to_string()
                                };
                                ContentPart::input_audio(field("data"), field("format"))
                            }
                            _ => ContentPart::text(text("text")),
                        }
                        .at(at)
                    })
                    .collect();
                messages.push(ChatMessage {
                    content: Some(MessageContent::Parts(parts)),
                    ..ChatMessage::new(text("role"), "")
                });
            }
            _ => {
                let content: String = item
                    .get("content")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part.get("text").and_then(Json::as_str))
                    .collect();
                messages.push(ChatMessage::new(text("role"), content));
            }
        }
    }
}
