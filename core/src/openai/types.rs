//! OpenAI request and response types, with the exact wire shapes of the OpenAI API.

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Map;

pub use crate::predict::{FunctionCallDelta, ToolCallDelta};

/// Request fields ingle does not model: kept so they can be rejected by name, not dropped.
pub type OtherFields = Map<String, serde_json::Value>;

/// `stop`: one string or a list of up to 4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StopSequences {
    One(String),
    Many(Vec<String>),
}

impl StopSequences {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            StopSequences::One(s) => vec![s],
            StopSequences::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Send a last chunk with the token usage and no choices.
    #[serde(default)]
    pub include_usage: bool,
    /// Accepted and ignored: OpenAI pads chunks against network side channels; ingle's
    /// chunks do not leave the process (and `ingle serve` is meant for trusted networks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_obfuscation: Option<bool>,
    /// Every other key: rejected by name, as at the top level of a request.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// One part of a list-of-parts message content: `text`, `image_url` (`{url, detail}`, a
/// base64 `data:` URL or, where allowed, an http(s) one) or `input_audio` (`{data, format}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(flatten)]
    pub other: OtherFields,
    /// Where the caller wrote this part, when it was not a chat request's
    /// `messages[i].content[j]` (a Responses item's, an Anthropic block's): errors name it.
    #[serde(skip)]
    pub at: Option<String>,
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart {
            kind: "text".into(),
            text: Some(text.into()),
            other: OtherFields::new(),
            at: None,
        }
    }

    /// An `image_url` part of `url` (a `data:` URL or an http(s) one).
    pub fn image_url(url: impl Into<String>, detail: Option<String>) -> Self {
        let mut image = serde_json::json!({ "url": url.into() });
        if let Some(detail) = detail {
            image["detail"] = detail.into();
        }
        ContentPart {
            kind: "image_url".into(),
            text: None,
            other: OtherFields::from_iter([("image_url".to_string(), image)]),
            at: None,
        }
    }

    /// An `input_audio` part: base64 `data` in `format` (`wav`, `mp3`, ...).
    pub fn input_audio(data: impl Into<String>, format: impl Into<String>) -> Self {
        let audio = serde_json::json!({ "data": data.into(), "format": format.into() });
        ContentPart {
            kind: "input_audio".into(),
            text: None,
            other: OtherFields::from_iter([("input_audio".to_string(), audio)]),
            at: None,
        }
    }

    /// The same part, named `at` in errors.
    pub fn at(mut self, at: impl Into<String>) -> Self {
        self.at = Some(at.into());
        self
    }
}

/// Message content: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// A chat message. `role` is one of system, developer, user, assistant, tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<MessageContent>,
    /// Accepted and ignored: the chat templates have no place for participant names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For role `tool`: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For role `assistant`: the calls it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(flatten)]
    pub other: OtherFields,
}

/// A function call the assistant made: `arguments` is JSON text, as OpenAI sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: Some(MessageContent::Text(content.into())),
            name: None,
            tool_call_id: None,
            tool_calls: None,
            other: OtherFields::new(),
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::new("system", content)
    }

    pub fn developer(content: impl Into<String>) -> Self {
        ChatMessage::new("developer", content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::new("user", content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::new("assistant", content)
    }
}

/// `chat.completions.create` arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopSequences>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Extensions that llama.cpp-based servers take (`extra_body` in the OpenAI SDKs): sample
    /// from the `top_k` most likely tokens (0: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// Drop tokens less likely than `min_p` times the most likely one (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f64>,
    /// Divide the logits of tokens already in the context by this (1: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f64>,
    /// llama.cpp's server's name for `repetition_penalty`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
    /// Extra variables for the model's Jinja chat template (`enable_thinking`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// Choices to generate, 1 to 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    /// Function tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<serde_json::Value>,
    /// `"none"`, `"auto"`, `"required"` or `{"type": "function", "function": {"name"}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// ingle's: let a tool call repeat one made earlier in the reply or already answered since
    /// the user spoke (by default neither is made, docs/tools.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_repeated_tool_calls: Option<bool>,
    /// `{"type": "text" | "json_object"}` or `{"type": "json_schema", "json_schema": {...}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// 0 to 20; needs `logprobs: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<i64>,
    /// Token id → bias from -100 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logit_bias: Option<serde_json::Map<String, serde_json::Value>>,
    /// How much to think first: `none`, `minimal`, `low`, `medium`, `high`, `xhigh`; for a
    /// model whose predictor declares `ReasoningEffort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// Accepted and ignored (an end-user id for abuse tracking means nothing locally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other field: rejected by name unless documented as ignored.
    #[serde(flatten)]
    pub other: OtherFields,
}

impl ChatCompletionRequest {
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        ChatCompletionRequest {
            model: model.into(),
            messages,
            ..Default::default()
        }
    }

    /// Parses the JSON body of a request; an error names the field at fault.
    pub fn from_json(json: &str) -> Result<Self> {
        from_json(json)
    }
}

/// `prompt` of a text completion: a string, or a list holding one string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    Text(String),
    Many(Vec<serde_json::Value>),
}

impl Default for Prompt {
    fn default() -> Self {
        Prompt::Text(String::new())
    }
}

/// `completions.create` (legacy text completion) arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    pub model: String,
    pub prompt: Prompt,
    /// Default 16, as in the OpenAI API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopSequences>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Extensions that llama.cpp-based servers take (`extra_body` in the OpenAI SDKs): sample
    /// from the `top_k` most likely tokens (0: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// Drop tokens less likely than `min_p` times the most likely one (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f64>,
    /// Divide the logits of tokens already in the context by this (1: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f64>,
    /// llama.cpp's server's name for `repetition_penalty`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    /// Report this many (0 to 5) most likely alternatives with each token's log probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<i64>,
    /// Token id → bias from -100 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logit_bias: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(flatten)]
    pub other: OtherFields,
}

impl CompletionRequest {
    pub fn new(model: impl Into<String>, prompt: impl Into<String>) -> Self {
        CompletionRequest {
            model: model.into(),
            prompt: Prompt::Text(prompt.into()),
            ..Default::default()
        }
    }

    pub fn from_json(json: &str) -> Result<Self> {
        from_json(json)
    }
}

/// Parses a request body: exactly one JSON document. A syntax error names no parameter and
/// says what is wrong where; a value that does not fit names its field.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T> {
    use crate::json::{parse_one, JsonProblem};
    parse_one(json).map_err(|problem| match problem {
        JsonProblem::Syntax(message) => Error::new(
            crate::error::ErrorKind::InvalidRequest,
            format!("The request body is not valid JSON: {message}"),
        )
        .with_code(ErrorCode::InvalidJson),
        JsonProblem::Data { path, message } if path.is_empty() => Error::new(
            crate::error::ErrorKind::InvalidRequest,
            format!("Invalid request body: {message}"),
        ),
        JsonProblem::Data { path, message } if message.starts_with("Missing required") => {
            Error::invalid(path, message)
        }
        JsonProblem::Data { path, message } => {
            let shown = crate::error::shown(&path);
            Error::invalid(
                path.clone(),
                format!("Invalid value for `{shown}`: {message}"),
            )
        }
    })
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    /// How many prompt tokens came from the prompt cache (OpenAI's
    /// `usage.prompt_tokens_details.cached_tokens`); absent when the predictor does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// The breakdown of `Usage::prompt_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Prompt tokens whose KV cache was reused from an earlier request sharing the prefix.
    pub cached_tokens: u32,
}

impl Usage {
    /// Adds one choice's usage, as OpenAI counts `n` choices: the prompt once, the
    /// completions summed.
    pub(crate) fn add_choice(&mut self, choice: Usage) {
        self.prompt_tokens = choice.prompt_tokens;
        self.completion_tokens += choice.completion_tokens;
        // The choices share one prompt; the first found it cached, the others copied it.
        self.prompt_tokens_details =
            match (self.prompt_tokens_details, choice.prompt_tokens_details) {
                (Some(a), Some(b)) => Some(if b.cached_tokens > a.cached_tokens {
                    b
                } else {
                    a
                }),
                (a, b) => a.or(b),
            };
        self.total_tokens = self.prompt_tokens + self.completion_tokens;
    }
}

/// The assistant's reply in a `chat.completion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub role: String,
    /// Null when the reply is only tool calls.
    pub content: Option<String>,
    pub refusal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The model's thinking, apart from `content` (absent when it thought nothing aloud).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

impl AssistantMessage {
    /// The content, or "" when there is none.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatChoice {
    pub index: u32,
    pub message: AssistantMessage,
    /// `stop`, `length` or `tool_calls`.
    pub finish_reason: String,
    pub logprobs: Option<serde_json::Value>,
}

/// `object: "chat.completion"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: Usage,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// Thinking, apart from the answer: what llama.cpp's server, vLLM and DeepSeek's API
    /// stream (an extra field to the OpenAI SDKs, kept on the delta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: ChunkDelta,
    pub logprobs: Option<serde_json::Value>,
    pub finish_reason: Option<String>,
}

/// `object: "chat.completion.chunk"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionChunk {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    /// Set on the last chunk when `stream_options.include_usage`; null otherwise.
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionChoice {
    pub text: String,
    pub index: u32,
    pub logprobs: Option<serde_json::Value>,
    pub finish_reason: Option<String>,
}

/// `object: "text_completion"`, both the whole response and each streamed chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    /// Always set on a whole response; on a stream only on the usage chunk.
    pub usage: Option<Usage>,
}

/// `object: "model"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub owned_by: String,
    /// The tokens the model's context holds, prompt and answer together (as OpenRouter and
    /// LM Studio name it): a loaded chat model's, or what its predictor declares. Absent when
    /// not known yet (a chat model not loaded) or not a chat model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u32>,
}

/// `object: "list"` of models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    pub object: String,
    pub data: Vec<Model>,
}
