//! One generation per choice: a chat or completion request's sampling options mapped onto the
//! predictor's inputs by annotation, the choices started, and each stepped one output at a time.

use super::common::in_openai_terms;
use super::types::{PromptTokensDetails, StopSequences, ToolCallDelta, Usage};
use crate::error::{shown, Error, Result};
use crate::predict::{Annotation, Cancel, GenerationOption, Inputs, Logs, OutputStream};
use crate::registry::Registry;
use crate::value::Value;

/// The sampling options of a request, with the OpenAI field each came from.
#[derive(Clone, Default)]
pub(super) struct SamplingRequest {
    pub(super) max_tokens: Option<(&'static str, i64)>,
    pub(super) temperature: Option<f64>,
    pub(super) top_p: Option<f64>,
    pub(super) seed: Option<i64>,
    pub(super) stop: Option<StopSequences>,
    pub(super) frequency_penalty: Option<f64>,
    pub(super) presence_penalty: Option<f64>,
    /// llama.cpp's sampling extensions (`extra_body` in the OpenAI SDKs).
    pub(super) top_k: Option<i64>,
    pub(super) min_p: Option<f64>,
    /// With the field it came in (`repetition_penalty` or llama.cpp's `repeat_penalty`).
    pub(super) repetition_penalty: Option<(&'static str, f64)>,
    pub(super) chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    pub(super) tools: Option<serde_json::Value>,
    pub(super) tool_choice: Option<serde_json::Value>,
    pub(super) parallel_tool_calls: Option<bool>,
    pub(super) allow_repeated_tool_calls: Option<bool>,
    pub(super) response_format: Option<serde_json::Value>,
    /// Alternatives per token (chat: `top_logprobs`, completions: `logprobs`).
    pub(super) logprobs: Option<i64>,
    pub(super) logit_bias: Option<serde_json::Map<String, serde_json::Value>>,
}

impl SamplingRequest {
    pub(super) fn given(self) -> Vec<(GenerationOption, &'static str, Value)> {
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
            given.push((G::Stop, "stop", Value::from(stop.into_vec())));
        }
        let json = [
            (G::Tools, "tools", self.tools),
            (G::ToolChoice, "tool_choice", self.tool_choice),
            (G::ResponseFormat, "response_format", self.response_format),
            (
                G::ChatTemplateKwargs,
                "chat_template_kwargs",
                self.chat_template_kwargs.map(serde_json::Value::Object),
            ),
            (
                G::LogitBias,
                "logit_bias",
                self.logit_bias.map(serde_json::Value::Object),
            ),
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
        given
    }
}

/// `repetition_penalty`, or llama.cpp's name for it, `repeat_penalty`; not both.
pub(super) fn repetition_penalty(
    ours: Option<f64>,
    llama_cpp: Option<f64>,
) -> Result<Option<(&'static str, f64)>> {
    match (ours, llama_cpp) {
        (Some(_), Some(_)) => Err(Error::invalid(
            "repeat_penalty",
            "Give `repetition_penalty` or `repeat_penalty` (its llama.cpp name), not both",
        )),
        (Some(p), None) => Ok(Some(("repetition_penalty", p))),
        (None, Some(p)) => Ok(Some(("repeat_penalty", p))),
        (None, None) => Ok(None),
    }
}

/// Starts `n` generations of the same request, the choices of one response. With a `seed`,
/// choice `i` draws with `seed + i`, so that the choices differ yet repeat.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_choices(
    registry: &Registry,
    model: &str,
    input: Annotation,
    input_field: &'static str,
    input_value: Value,
    method: &str,
    options: SamplingRequest,
    n: usize,
    cancel: &Cancel,
) -> Result<Vec<Generation>> {
    // Choices beyond the sequences the model decodes at once would wait for one of their own
    // siblings to end, and a stream blocked on a waiting choice cannot see its client leave:
    // n = 8 on 4 sequences kept the model busy for 80 s after the client went.
    if n > 1 && !model.is_empty() {
        if let Some(limit) = registry.get(model)?.concurrency().filter(|&l| n > l) {
            return Err(Error::invalid(
                "n",
                format!(
                    "Invalid value for `n`: {n}; the model `{}` generates at most {limit} \
                     sequences at once (its `parallel`: the config's, or what fits in memory), \
                     so `n` must be at most {limit}",
                    shown(model)
                ),
            ));
        }
    }
    (0..n)
        .map(|i| {
            let mut options = options.clone();
            options.seed = options.seed.map(|seed| seed.wrapping_add(i as i64));
            start_generation(
                registry,
                model,
                input.clone(),
                input_field,
                input_value.clone(),
                method,
                options,
                cancel,
            )
        })
        .collect()
}

/// A running generation and where its outputs are.
pub(super) struct Generation {
    pub(super) outputs: OutputStream,
    pub(super) text: usize,
    pub(super) finish_reason: Option<usize>,
    pub(super) usage: Option<usize>,
    pub(super) tool_calls: Option<usize>,
    pub(super) logprobs: Option<usize>,
}

/// One step of a generation, read off the predictor's outputs by annotation.
#[derive(Default)]
pub(super) struct Step {
    pub(super) text: String,
    pub(super) finish_reason: Option<String>,
    pub(super) usage: Option<Usage>,
    pub(super) tool_calls: Vec<ToolCallDelta>,
    /// `{token, logprob, bytes, top_logprobs}` per token.
    pub(super) logprobs: Vec<serde_json::Value>,
}

impl Generation {
    pub(super) fn next_step(&mut self) -> Option<Result<Step>> {
        let outputs = match self.outputs.next()? {
            Ok(outputs) => outputs,
            Err(e) => return Some(Err(e)),
        };
        let get = |i: Option<usize>| i.and_then(|i| outputs.get(i)).filter(|v| !v.is_null());
        let text = get(Some(self.text))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let finish_reason = get(self.finish_reason)
            .and_then(Value::as_str)
            .map(str::to_string);
        let usage = get(self.usage).and_then(Value::as_dict).map(|u| {
            let count = |k: &str| u.get(k).and_then(Value::as_i64).unwrap_or(0) as u32;
            let (prompt_tokens, completion_tokens) =
                (count("prompt_tokens"), count("completion_tokens"));
            let prompt_tokens_details =
                u.get("cached_tokens")
                    .and_then(Value::as_i64)
                    .map(|cached| PromptTokensDetails {
                        cached_tokens: cached as u32,
                    });
            Usage {
                prompt_tokens,
                completion_tokens,
                total_tokens: prompt_tokens + completion_tokens,
                prompt_tokens_details,
            }
        });
        let list = |i: Option<usize>| -> Result<Vec<serde_json::Value>> {
            match get(i) {
                Some(value) => match value.to_json()? {
                    serde_json::Value::Array(items) => Ok(items),
                    _ => Ok(Vec::new()),
                },
                None => Ok(Vec::new()),
            }
        };
        let tool_calls = match list(self.tool_calls).and_then(|items| {
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    serde_json::from_value::<ToolCallDelta>(item).map_err(|e| {
                        Error::internal(format!(
                            "The predictor gave a malformed tool call delta [{i}]: {e}"
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()
        }) {
            Ok(calls) => calls,
            Err(e) => return Some(Err(e)),
        };
        let logprobs = match list(self.logprobs) {
            Ok(logprobs) => logprobs,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(Step {
            text,
            finish_reason,
            usage,
            tool_calls,
            logprobs,
        }))
    }
}

/// The next step of a running generation. After an error, or once the predictor ends, the
/// generation is dropped (freeing the model) and later calls return `None`.
pub(super) fn next_step(run: &mut Option<Generation>) -> Option<Result<Step>> {
    let step = match run.as_mut()?.next_step() {
        Some(Ok(step)) => return Some(Ok(step)),
        Some(Err(e)) => Err(e),
        // A predictor that ends without giving a finish reason (a user's generator that just
        // returns) stopped of its own accord.
        None => Ok(Step {
            finish_reason: Some("stop".into()),
            ..Step::default()
        }),
    };
    *run = None;
    Some(step)
}

/// Finds the predictor and its parameters by annotation, validates, and starts it.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_generation(
    registry: &Registry,
    model: &str,
    input: Annotation,
    input_field: &'static str,
    input_value: Value,
    method: &str,
    options: SamplingRequest,
    cancel: &Cancel,
) -> Result<Generation> {
    if model.is_empty() {
        return Err(Error::invalid(
            "model",
            "Missing required parameter: `model`",
        ));
    }
    let predictor = registry.get(model)?;
    let signature = predictor.signature();
    let cannot = |what: String| {
        Error::invalid(
            "model",
            format!(
                "The model `{}` cannot serve {method}: its predictor has no {what}",
                shown(model)
            ),
        )
    };
    let input_param = signature
        .input_annotated(&input)
        .ok_or_else(|| cannot(format!("input annotated {input:?}")))?;
    let text = signature
        .output_annotated(&Annotation::TextDelta)
        .ok_or_else(|| cannot("output annotated TextDelta".into()))?;
    // Predictor parameter name → OpenAI field, to report errors in the caller's terms.
    let mut fields = vec![(input_param.name.clone(), input_field)];
    let mut inputs = Inputs::new();
    inputs.insert(input_param.name.clone(), input_value);
    for (option, field, value) in options.given() {
        let param = signature
            .input_annotated(&Annotation::Generation(option))
            .ok_or_else(|| {
                Error::invalid(
                    field,
                    format!("The model `{}` does not support `{field}`", shown(model)),
                )
            })?;
        fields.push((param.name.clone(), field));
        inputs.insert(param.name.clone(), value);
    }
    let to_openai = |e| in_openai_terms(e, &fields);
    let inputs = signature.validate(inputs).map_err(to_openai)?;
    // Each choice its own part of the call: one that ends does not stop the others.
    let outputs =
        crate::predict::start(&predictor, inputs, cancel, Logs::default()).map_err(to_openai)?;
    Ok(Generation {
        outputs,
        text,
        finish_reason: signature.output_annotated(&Annotation::FinishReason),
        usage: signature.output_annotated(&Annotation::Usage),
        tool_calls: signature.output_annotated(&Annotation::ToolCalls),
        logprobs: signature.output_annotated(&Annotation::TokenLogprobs),
    })
}

/// The next choice, after `*next`, whose generation still runs.
pub(super) fn next_running(runs: &[Option<Generation>], next: &mut usize) -> Option<usize> {
    let n = runs.len();
    let found = (0..n)
        .map(|k| (*next + k) % n)
        .find(|&i| runs[i].is_some())?;
    *next = (found + 1) % n;
    Some(found)
}
