//! The typed request a built-in text engine takes, and the typed steps it yields.
//!
//! A chat or text completion reaches an engine one of two ways: from the OpenAI layer, whose
//! typed request becomes [`GenerationOptions`], or as a prediction's named inputs
//! (`predictions.create`, a user calling the predictor), read by [`GenerationRequest::from_inputs`].
//! Both go through [`GenerationRequest::new`], which checks every option once: the engine
//! takes what it is given, and checks only what depends on its model (a token id against its
//! vocabulary, a prompt against its context, tools against its chat template and grammar).
//! User predictors keep the annotation protocol ([`GenerationOptions::given`]): to the OpenAI
//! layer they and the built-in engines look the same.

mod parse;
mod step;
#[cfg(test)]
mod tests;

pub use step::{
    FunctionCallDelta, Generate, GenerationStep, StepStream, StepUsage, TokenLogprob,
    ToolCallDelta, TopLogprob,
};

use super::{GenerationOption, Inputs};
use crate::error::{shown, Error, Result};
use crate::value::{Value, ValueType};
use parse::{logit_bias, response_format, stop_sequences, tool_choice, tools};
use serde_json::{json, Value as Json};

/// Most stop sequences a request may give, as in the OpenAI API.
pub const MAX_STOP_SEQUENCES: usize = 4;
/// Most alternatives reported with each token's log probability, as in the OpenAI API.
pub const MAX_TOP_LOGPROBS: usize = 20;

/// The bounds of each numeric option, inclusive; a signature declares the same.
pub const MAX_TOKENS_MIN: f64 = 1.0;
pub const TEMPERATURE_RANGE: (f64, f64) = (0.0, 2.0);
pub const TOP_P_RANGE: (f64, f64) = (0.0, 1.0);
pub const TOP_K_RANGE: (f64, f64) = (0.0, u32::MAX as f64);
pub const MIN_P_RANGE: (f64, f64) = (0.0, 1.0);
pub const REPETITION_PENALTY_RANGE: (f64, f64) = (0.1, 2.0);
pub const PENALTY_RANGE: (f64, f64) = (-2.0, 2.0);

/// A generation's options as a caller gave them, each with the field it came in (so that an
/// error names the caller's field: `max_completion_tokens`, `repeat_penalty`...). Unchecked.
#[derive(Clone, Default)]
pub struct GenerationOptions {
    pub max_tokens: Option<(&'static str, i64)>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    pub stop: Option<Vec<String>>,
    pub frequency_penalty: Option<f64>,
    pub presence_penalty: Option<f64>,
    /// llama.cpp's sampling extensions (`extra_body` in the OpenAI SDKs).
    pub top_k: Option<i64>,
    pub min_p: Option<f64>,
    /// With the field it came in (`repetition_penalty` or llama.cpp's `repeat_penalty`).
    pub repetition_penalty: Option<(&'static str, f64)>,
    pub chat_template_kwargs: Option<Json>,
    pub tools: Option<Json>,
    /// `"auto"` or `{"type": "auto"}`, and so on.
    pub tool_choice: Option<Json>,
    pub parallel_tool_calls: Option<bool>,
    pub allow_repeated_tool_calls: Option<bool>,
    pub response_format: Option<Json>,
    /// Alternatives per token (chat: `top_logprobs`, completions: `logprobs`).
    pub logprobs: Option<i64>,
    pub logit_bias: Option<Json>,
    /// `reasoning_effort` (chat), `reasoning.effort` (Responses), from `thinking` (Anthropic);
    /// for a user predictor that declares `ReasoningEffort`.
    pub reasoning_effort: Option<String>,
}

/// The values `reasoning_effort` takes (OpenAI's, and Muna's `xhigh`).
pub const REASONING_EFFORTS: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];

impl GenerationOptions {
    /// The options given, as a user predictor takes them: each with the annotation of the
    /// parameter it goes to, and the caller's field. `tool_choice` always as a dict.
    pub fn given(self) -> Vec<(GenerationOption, &'static str, Value)> {
        use GenerationOption as G;
        let mut given = Vec::new();
        if let Some((field, n)) = self.max_tokens {
            given.push((G::MaxTokens, field, Value::Int(n)));
        }
        let numbers = [
            (G::Temperature, "temperature", self.temperature),
            (G::TopP, "top_p", self.top_p),
            (
                G::FrequencyPenalty,
                "frequency_penalty",
                self.frequency_penalty,
            ),
            (
                G::PresencePenalty,
                "presence_penalty",
                self.presence_penalty,
            ),
        ];
        for (option, field, value) in numbers {
            if let Some(value) = value {
                given.push((option, field, Value::Float(value)));
            }
        }
        if let Some(top_k) = self.top_k {
            given.push((G::TopK, "top_k", Value::Int(top_k)));
        }
        if let Some(min_p) = self.min_p {
            given.push((G::MinP, "min_p", Value::Float(min_p)));
        }
        if let Some((field, penalty)) = self.repetition_penalty {
            given.push((G::RepetitionPenalty, field, Value::Float(penalty)));
        }
        if let Some(seed) = self.seed {
            given.push((G::Seed, "seed", Value::Int(seed)));
        }
        if let Some(stop) = self.stop {
            given.push((G::Stop, "stop", Value::from(stop)));
        }
        let tool_choice = self.tool_choice.map(|choice| match choice {
            Json::String(kind) => json!({ "type": kind }),
            other => other,
        });
        let json = [
            (G::Tools, "tools", self.tools),
            (G::ToolChoice, "tool_choice", tool_choice),
            (G::ResponseFormat, "response_format", self.response_format),
            (
                G::ChatTemplateKwargs,
                "chat_template_kwargs",
                self.chat_template_kwargs,
            ),
            (G::LogitBias, "logit_bias", self.logit_bias),
        ];
        for (option, field, value) in json {
            if let Some(value) = value {
                given.push((option, field, Value::from(value)));
            }
        }
        let flags = [
            (
                G::ParallelToolCalls,
                "parallel_tool_calls",
                self.parallel_tool_calls,
            ),
            (
                G::AllowRepeatedToolCalls,
                "allow_repeated_tool_calls",
                self.allow_repeated_tool_calls,
            ),
        ];
        for (option, field, value) in flags {
            if let Some(value) = value {
                given.push((option, field, Value::Bool(value)));
            }
        }
        if let Some(top) = self.logprobs {
            given.push((G::Logprobs, "logprobs", Value::Int(top)));
        }
        if let Some(effort) = self.reasoning_effort {
            given.push((
                G::ReasoningEffort,
                "reasoning_effort",
                Value::String(effort),
            ));
        }
        given
    }
}

/// What a generation continues: a conversation or a text.
#[derive(Debug, Clone)]
pub enum GenerationInput {
    /// Chat messages, each at least `{role}` (what the chat template renders).
    Messages(Vec<Value>),
    Prompt(String),
}

/// How to sample; what is unset is the model's recommended sampling.
#[derive(Debug, Clone, Default)]
pub struct SamplingParams {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u32>,
    pub min_p: Option<f64>,
    pub repetition_penalty: Option<f64>,
    pub frequency_penalty: f64,
    pub presence_penalty: f64,
    pub seed: Option<i64>,
}

/// A function tool.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    /// The JSON schema of its arguments (`{"type": "object", "properties": {}}` if none given).
    pub parameters: Json,
    /// `strict: true` with parameters: the schema must follow OpenAI's strict-mode rules.
    pub strict: bool,
}

/// The tools of a request: as given (what the chat template renders), and read.
#[derive(Debug, Clone)]
pub struct Tools {
    pub json: Json,
    pub list: Vec<Tool>,
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Function(String),
}

/// `response_format` json_object or json_schema (text is no format).
#[derive(Debug, Clone)]
pub struct ResponseFormat {
    /// `json_object` or `json_schema`, for messages.
    pub kind: &'static str,
    pub schema: Json,
    /// `json_schema.strict: true`: the schema must follow OpenAI's strict-mode rules.
    pub strict: bool,
    /// The field an error about the schema names.
    pub param: &'static str,
}

/// One `logit_bias` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LogitBias {
    /// The key as given, which an error names.
    pub key: String,
    /// The token id it writes; `None` when it writes none (`"+5"`, `"05"`, `"x"`).
    pub token: Option<u32>,
    /// From -100 to 100; −∞ for -100, which bans the token.
    pub bias: f32,
}

impl LogitBias {
    /// The token id, if the key writes one below `n_vocab`; else the error naming the key.
    pub fn token_below(&self, n_vocab: u32) -> Result<u32> {
        self.token.filter(|&t| t < n_vocab).ok_or_else(|| {
            Error::invalid(
                format!("logit_bias.{}", shown(&self.key)),
                format!(
                    "`logit_bias` key '{}' is not a token id of this model (0 to {})",
                    shown(&self.key),
                    n_vocab.saturating_sub(1)
                ),
            )
        })
    }
}

/// A checked generation request.
#[derive(Debug, Clone)]
pub struct GenerationRequest {
    pub input: GenerationInput,
    pub max_tokens: Option<usize>,
    pub sampling: SamplingParams,
    pub stop: Vec<String>,
    pub tools: Option<Tools>,
    pub tool_choice: ToolChoice,
    /// Default true, as OpenAI's, but false with a named `tool_choice` (one call of it).
    pub parallel_tool_calls: bool,
    /// `reasoning_effort` (none, minimal, low, medium, high, xhigh), for a model that thinks.
    pub reasoning_effort: Option<String>,
    /// Whether a model's thoughts come apart from its text (the OpenAI methods); the annotation
    /// protocol (`predictions.create`), whose outputs have no place for them, keeps them in.
    pub split_thinking: bool,
    /// ingle's `allow_repeated_tool_calls`: a call repeating an earlier one of the turn does
    /// not end the turn (docs/tools.md).
    pub allow_repeated_tool_calls: bool,
    pub response_format: Option<ResponseFormat>,
    /// How many alternatives to report with each token's log probability, when asked.
    pub logprobs: Option<usize>,
    /// Biases to add to tokens' logits, checked against a vocabulary by the engine.
    pub logit_bias: Vec<LogitBias>,
    /// Extra variables for a Jinja chat template (an object).
    pub chat_template_kwargs: Option<Json>,
}

/// `x` within `[min, max]`, else an error about `name` (as a signature reports it).
pub(crate) fn check_range(name: &str, x: f64, min: Option<f64>, max: Option<f64>) -> Result<()> {
    if x.is_nan() {
        return Err(Error::invalid(name, format!("`{name}` is not a number")));
    }
    let below = min.is_some_and(|min| x < min);
    let above = max.is_some_and(|max| x > max);
    if !(below || above) {
        return Ok(());
    }
    let bounds = match (min, max) {
        (Some(min), Some(max)) => format!("between {min} and {max}"),
        (Some(min), None) => format!("at least {min}"),
        (None, Some(max)) => format!("at most {max}"),
        (None, None) => unreachable!("out of range needs a bound"),
    };
    Err(Error::invalid(
        name,
        format!("Invalid value for `{name}`: {x} is out of range; it must be {bounds}"),
    ))
}

/// `json` of type `ty`, else an error about `name` (as a signature reports it).
fn check_type(name: &str, json: &Json, ty: ValueType) -> Result<()> {
    let value = Value::from(json.clone());
    if value.matches(ty) {
        return Ok(());
    }
    Err(Error::invalid(
        name,
        format!(
            "Invalid type for `{name}`: expected {}, got {}",
            ty.name(),
            value.type_name()
        ),
    ))
}

impl GenerationRequest {
    /// Checks `options` and reads them: the one place a built-in engine's options are checked.
    pub fn new(input: GenerationInput, options: GenerationOptions) -> Result<Self> {
        let in_range = |name: &str, x: Option<f64>, (min, max): (f64, f64)| match x {
            Some(x) => check_range(name, x, Some(min), Some(max)),
            None => Ok(()),
        };
        let max_tokens = match options.max_tokens {
            Some((field, n)) => {
                check_range(field, n as f64, Some(MAX_TOKENS_MIN), None)?;
                Some(usize::try_from(n).unwrap_or(usize::MAX))
            }
            None => None,
        };
        in_range("temperature", options.temperature, TEMPERATURE_RANGE)?;
        in_range("top_p", options.top_p, TOP_P_RANGE)?;
        in_range("top_k", options.top_k.map(|k| k as f64), TOP_K_RANGE)?;
        in_range("min_p", options.min_p, MIN_P_RANGE)?;
        if let Some((field, penalty)) = options.repetition_penalty {
            in_range(field, Some(penalty), REPETITION_PENALTY_RANGE)?;
        }
        in_range(
            "frequency_penalty",
            options.frequency_penalty,
            PENALTY_RANGE,
        )?;
        in_range("presence_penalty", options.presence_penalty, PENALTY_RANGE)?;
        let sampling = SamplingParams {
            temperature: options.temperature,
            top_p: options.top_p,
            top_k: options.top_k.map(|k| k as u32),
            min_p: options.min_p,
            repetition_penalty: options.repetition_penalty.map(|(_, p)| p),
            frequency_penalty: options.frequency_penalty.unwrap_or(0.0),
            presence_penalty: options.presence_penalty.unwrap_or(0.0),
            seed: options.seed,
        };
        let stop = stop_sequences(options.stop.unwrap_or_default())?;
        let tools = match options.tools.filter(|t| !t.is_null()) {
            Some(json) => {
                check_type("tools", &json, ValueType::List)?;
                tools(json)?
            }
            None => None,
        };
        let tool_choice = match options.tool_choice.filter(|c| !c.is_null()) {
            Some(json) => {
                // "auto" and the like stand for their object.
                if !json.is_string() {
                    check_type("tool_choice", &json, ValueType::Dict)?;
                }
                tool_choice(&json)?
            }
            None => ToolChoice::Auto,
        };
        if tools.is_none() && matches!(tool_choice, ToolChoice::Required | ToolChoice::Function(_))
        {
            return Err(Error::invalid(
                "tool_choice",
                "`tool_choice` asks for a tool call, but no `tools` were given",
            ));
        }
        let response_format = match options.response_format.filter(|f| !f.is_null()) {
            Some(json) => {
                check_type("response_format", &json, ValueType::Dict)?;
                response_format(&json)?
            }
            None => None,
        };
        let logprobs = match options.logprobs {
            Some(n) => {
                check_range(
                    "logprobs",
                    n as f64,
                    Some(0.0),
                    Some(MAX_TOP_LOGPROBS as f64),
                )?;
                Some(n as usize)
            }
            None => None,
        };
        let logit_bias = match options.logit_bias.filter(|b| !b.is_null()) {
            Some(json) => {
                check_type("logit_bias", &json, ValueType::Dict)?;
                logit_bias(&json)?
            }
            None => Vec::new(),
        };
        let chat_template_kwargs = match options.chat_template_kwargs.filter(|k| !k.is_null()) {
            Some(json) => {
                check_type("chat_template_kwargs", &json, ValueType::Dict)?;
                Some(json)
            }
            None => None,
        };
        let not_named = !matches!(tool_choice, ToolChoice::Function(_));
        Ok(GenerationRequest {
            input,
            max_tokens,
            sampling,
            stop,
            tools,
            tool_choice,
            // A named function is one call of it unless the request asks for parallel calls:
            // greedy, the 0.5B forced to `get_time(timezone)` called it for six time zones.
            parallel_tool_calls: options.parallel_tool_calls.unwrap_or(not_named),
            reasoning_effort: options.reasoning_effort.clone(),
            split_thinking: true,
            allow_repeated_tool_calls: options.allow_repeated_tool_calls.unwrap_or(false),
            response_format,
            logprobs,
            logit_bias,
            chat_template_kwargs,
        })
    }

    /// Reads a prediction's inputs, named as a built-in text engine's signature names them
    /// (`backends::llama::signature`, already checked against it), into a request.
    pub(crate) fn from_inputs(inputs: &Inputs) -> Result<Self> {
        let get = |name: &str| inputs.get(name).filter(|v| !v.is_null());
        let input =
            match (get("messages"), get("prompt")) {
                (Some(Value::List(messages)), None) => GenerationInput::Messages(messages.clone()),
                (None, Some(Value::String(prompt))) => GenerationInput::Prompt(prompt.clone()),
                (Some(_), Some(_)) => {
                    return Err(Error::invalid(
                        "prompt",
                        "Give either `messages` or `prompt`, not both",
                    ))
                }
                _ => return Err(Error::invalid(
                    "messages",
                    "Missing required parameter: `messages` (chat) or `prompt` (text completion)",
                )),
            };
        let json = |name: &str| get(name).map(Value::to_json).transpose();
        let number = |name: &str| get(name).and_then(Value::as_f64);
        let int = |name: &str| get(name).and_then(Value::as_i64);
        let flag = |name: &str| match get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Error::invalid(name, format!("`{name}` must be a boolean"))),
        };
        let stop =
            match get("stop") {
                Some(stop) => {
                    let list = stop.as_list().ok_or_else(|| {
                        Error::invalid("stop", "`stop` must be a list of strings")
                    })?;
                    let strings = list.iter().map(|s| s.as_str().map(str::to_string));
                    Some(strings.collect::<Option<Vec<_>>>().ok_or_else(|| {
                        Error::invalid("stop", "`stop` must be a list of strings")
                    })?)
                }
                None => None,
            };
        let options = GenerationOptions {
            max_tokens: int("max_tokens").map(|n| ("max_tokens", n)),
            temperature: number("temperature"),
            top_p: number("top_p"),
            seed: int("seed"),
            stop,
            frequency_penalty: number("frequency_penalty"),
            presence_penalty: number("presence_penalty"),
            top_k: int("top_k"),
            min_p: number("min_p"),
            repetition_penalty: number("repetition_penalty").map(|p| ("repetition_penalty", p)),
            chat_template_kwargs: json("chat_template_kwargs")?,
            tools: json("tools")?,
            tool_choice: json("tool_choice")?,
            parallel_tool_calls: flag("parallel_tool_calls")?,
            allow_repeated_tool_calls: flag("allow_repeated_tool_calls")?,
            response_format: json("response_format")?,
            logprobs: int("logprobs"),
            logit_bias: json("logit_bias")?,
            reasoning_effort: None,
        };
        Ok(GenerationRequest {
            split_thinking: false,
            ..Self::new(input, options)?
        })
    }

    /// The tools the model may call: none with `tool_choice` none.
    pub fn callable_tools(&self) -> Option<&Tools> {
        self.tools
            .as_ref()
            .filter(|_| self.tool_choice != ToolChoice::None)
    }
}
