//! What a generation gives back: typed steps, and the entry a built-in engine offers.

use crate::error::{Error, Result};
use crate::predict::Context;
use crate::value::Value;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::GenerationRequest;

/// Prompt and completion token counts, on a generation's last step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepUsage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Of the prompt tokens, those whose KV came from the prompt cache.
    pub cached_tokens: usize,
}

/// One alternative to a token, with its log probability.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f64,
    pub bytes: Vec<u8>,
}

/// A generated token's log probability and its most likely alternatives, as OpenAI reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
    pub bytes: Vec<u8>,
    pub top_logprobs: Vec<TopLogprob>,
}

/// One tool call's part in a step, as OpenAI streams it: `{index, id, type, function: {name,
/// arguments}}` in a call's first delta, `{index, function: {arguments}}` after.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionCallDelta>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCallDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// What one step of a generation gave.
#[derive(Debug, Clone, Default)]
pub struct GenerationStep {
    /// Text generated since the previous step.
    pub text: String,
    /// Thinking generated since the previous step, apart from the answer (a model that thinks
    /// in `<think>` tags).
    pub reasoning: String,
    /// Why generation ended (`stop`, `length`, `tool_calls`), on the last step.
    pub finish_reason: Option<String>,
    pub usage: Option<StepUsage>,
    /// Tool-call deltas since the previous step; `None` when the request has no tools.
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// The log probabilities of the tokens behind `text`; `None` when not asked for.
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// A pull-based stream of a generation's steps. Dropping it stops the generation.
pub type StepStream = Box<dyn Iterator<Item = Result<GenerationStep>> + Send>;

/// A built-in text engine's typed entry, beside the annotation protocol every predictor has.
pub trait Generate: Send + Sync {
    /// Starts a checked request. Errors found before any step (a prompt too long) are
    /// returned here.
    fn generate(&self, request: GenerationRequest, context: &Context) -> Result<StepStream>;

    /// The `(temperature, top_p)` it samples with where a request leaves them unset (the
    /// model's recommended sampling), for what a Response reports it used.
    fn default_sampling(&self) -> Option<(f64, f64)> {
        None
    }

    /// The prompt `request` would be decoded from (its chat template's rendering), without
    /// generating: `POST /apply-template`.
    fn render(&self, request: &GenerationRequest) -> Result<String> {
        let _ = request;
        Err(crate::error::Error::invalid(
            "model",
            "This engine renders no chat template",
        ))
    }
}

impl GenerationStep {
    /// The step as a built-in text engine's signature gives it: `text`, `finish_reason`,
    /// `usage`, `tool_calls`, `logprobs` (see `backends::llama::signature`).
    pub fn into_outputs(self) -> Result<crate::predict::Outputs> {
        let usage = self.usage.map(|u| {
            Value::Dict(crate::value::Dict::from([
                (
                    "prompt_tokens".to_string(),
                    Value::Int(u.prompt_tokens as i64),
                ),
                (
                    "completion_tokens".to_string(),
                    Value::Int(u.completion_tokens as i64),
                ),
                (
                    "cached_tokens".to_string(),
                    Value::Int(u.cached_tokens as i64),
                ),
            ]))
        });
        let listed = |json: serde_json::Result<Json>| {
            json.map(Value::from)
                .map_err(|e| Error::internal(format!("Cannot convert a generation step: {e}")))
        };
        let tool_calls = match self.tool_calls {
            Some(calls) => listed(serde_json::to_value(calls))?,
            None => Value::Null,
        };
        let logprobs = match self.logprobs {
            Some(tokens) => listed(serde_json::to_value(tokens))?,
            None => Value::Null,
        };
        Ok(vec![
            Value::String(self.text),
            Value::from(self.finish_reason),
            Value::from(usage),
            tool_calls,
            logprobs,
        ])
    }
}
