//! One generation per choice: a chat or completion request's options given to a built-in
//! engine as a typed request, or to a user's predictor by annotation; the choices started, and
//! each stepped one output at a time.

use super::common::in_openai_terms;
use super::types::{PromptTokensDetails, ToolCallDelta, Usage};
use crate::error::{shown, Error, Result};
use crate::media::{ChatMedia, MediaKind};
use crate::predict::{
    Annotation, Cancel, GenerationInput, GenerationOptions, GenerationRequest, GenerationStep,
    Inputs, Logs, OutputStream, StepStream,
};
use crate::registry::Registry;
use crate::value::Value;

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
    media: &ChatMedia,
    method: &str,
    options: GenerationOptions,
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
    // Decoded once for every choice.
    let media = if model.is_empty() {
        Vec::new()
    } else {
        media_inputs(registry, model, media, n, cancel)?
    };
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
                media.clone(),
                method,
                options,
                cancel,
            )
        })
        .collect()
}

fn media_error(at: String, message: String) -> Error {
    Error::invalid(at, message).with_code(crate::error::ErrorCode::InvalidMedia)
}

/// The messages' media as the model's predictor takes them: each kind decoded for the input
/// annotated to take it (images as tensors, audio at the declared rate); an image or audio
/// part for a model without such an input is an error naming the part. `copies`: the choices
/// that will each hold them (`n`), which share the request's limits.
fn media_inputs(
    registry: &Registry,
    model: &str,
    media: &ChatMedia,
    copies: usize,
    cancel: &Cancel,
) -> Result<Vec<(Annotation, Value)>> {
    let predictor = registry.get(model)?;
    let config = registry.media_config();
    if predictor.generation().is_some() {
        return match media.parts.first() {
            Some(part) => Err(media_error(
                part.at.clone(),
                format!(
                    "`{}`: the model `{}` cannot take {}: ingle runs llama.cpp chat models on \
                     text alone (no vision or audio projector is loaded); send text, or use a \
                     predictor that declares {}",
                    part.at,
                    shown(model),
                    if part.kind == MediaKind::Image {
                        "images"
                    } else {
                        "audio"
                    },
                    if part.kind == MediaKind::Image {
                        "ChatImages"
                    } else {
                        "ChatAudios"
                    },
                ),
            )),
            None => Ok(Vec::new()),
        };
    }
    let signature = predictor.signature();
    let lacks = |part: &crate::media::MediaPart, what: &str, annotation: &str| {
        media_error(
            part.at.clone(),
            format!(
                "`{}`: the model `{}` cannot take {what}: its predictor declares no input \
                 annotated {annotation}",
                part.at,
                shown(model)
            ),
        )
    };
    let images = signature.input_annotated(&Annotation::ChatImages);
    let audios = signature.inputs.iter().find_map(|p| match p.annotation {
        Annotation::ChatAudios { sample_rate } => Some((p.annotation.clone(), sample_rate)),
        _ => None,
    });
    // Every refusal before anything is decoded or fetched.
    if let (None, Some(part)) = (images, media.first(MediaKind::Image)) {
        return Err(lacks(part, "images", "ChatImages"));
    }
    if let (None, Some(part)) = (&audios, media.first(MediaKind::Audio)) {
        return Err(lacks(part, "audio", "ChatAudios"));
    }
    let mut inputs = Vec::new();
    if images.is_some() {
        let decoded = media.decode_images(config, cancel, copies)?;
        inputs.push((Annotation::ChatImages, decoded));
    }
    if let Some((annotation, rate)) = audios {
        inputs.push((
            annotation,
            media.decode_audios(rate, config, cancel, copies)?,
        ));
    }
    Ok(inputs)
}

/// A running generation: a built-in engine's typed steps, or a user predictor's outputs and
/// where in them (by annotation) each part of a step is.
pub(super) enum Generation {
    Typed(StepStream),
    Annotated(Annotated),
}

pub(super) struct Annotated {
    outputs: OutputStream,
    text: usize,
    finish_reason: Option<usize>,
    usage: Option<usize>,
    tool_calls: Option<usize>,
    logprobs: Option<usize>,
    reasoning: Option<usize>,
}

/// Token counts as OpenAI reports them.
fn usage(prompt_tokens: u32, completion_tokens: u32, cached: Option<u32>) -> Usage {
    Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: prompt_tokens + completion_tokens,
        prompt_tokens_details: cached.map(|cached_tokens| PromptTokensDetails { cached_tokens }),
    }
}

impl From<GenerationStep> for Step {
    fn from(step: GenerationStep) -> Self {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Step {
            text: step.text,
            reasoning: step.reasoning,
            finish_reason: step.finish_reason,
            usage: step.usage.map(|u| {
                usage(
                    count(u.prompt_tokens),
                    count(u.completion_tokens),
                    Some(count(u.cached_tokens)),
                )
            }),
            tool_calls: step.tool_calls.unwrap_or_default(),
            logprobs: step
                .logprobs
                .unwrap_or_default()
                .iter()
                .filter_map(|token| serde_json::to_value(token).ok())
                .collect(),
        }
    }
}

/// One step of a generation, read off the predictor's outputs by annotation.
#[derive(Default)]
pub(super) struct Step {
    pub(super) text: String,
    /// Thinking since the previous step (a predictor's `ReasoningDelta` output).
    pub(super) reasoning: String,
    pub(super) finish_reason: Option<String>,
    pub(super) usage: Option<Usage>,
    pub(super) tool_calls: Vec<ToolCallDelta>,
    /// `{token, logprob, bytes, top_logprobs}` per token.
    pub(super) logprobs: Vec<serde_json::Value>,
}

impl Generation {
    pub(super) fn next_step(&mut self) -> Option<Result<Step>> {
        match self {
            Generation::Typed(steps) => Some(steps.next()?.map(Step::from)),
            Generation::Annotated(annotated) => annotated.next_step(),
        }
    }
}

impl Annotated {
    fn next_step(&mut self) -> Option<Result<Step>> {
        let outputs = match self.outputs.next()? {
            Ok(outputs) => outputs,
            Err(e) => return Some(Err(e)),
        };
        let get = |i: Option<usize>| i.and_then(|i| outputs.get(i)).filter(|v| !v.is_null());
        let text = get(Some(self.text))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let reasoning = get(self.reasoning)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let finish_reason = get(self.finish_reason)
            .and_then(Value::as_str)
            .map(str::to_string);
        let usage = get(self.usage).and_then(Value::as_dict).map(|u| {
            let count = |k: &str| u.get(k).and_then(Value::as_i64).unwrap_or(0) as u32;
            let cached = u.get("cached_tokens").and_then(Value::as_i64);
            usage(
                count("prompt_tokens"),
                count("completion_tokens"),
                cached.map(|c| c as u32),
            )
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
            reasoning,
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
    media: Vec<(Annotation, Value)>,
    method: &str,
    options: GenerationOptions,
    cancel: &Cancel,
) -> Result<Generation> {
    if model.is_empty() {
        return Err(Error::invalid(
            "model",
            "Missing required parameter: `model`",
        ));
    }
    let predictor = registry.get(model)?;
    if predictor.generation().is_some() {
        // `reasoning_effort` is the engine's to map onto its template (or refuse).
        let input = match input {
            Annotation::ChatMessages { .. } => match input_value {
                Value::List(messages) => GenerationInput::Messages(messages),
                _ => return Err(Error::internal("Chat messages must be a list")),
            },
            _ => match input_value {
                Value::String(prompt) => GenerationInput::Prompt(prompt),
                _ => return Err(Error::internal("A prompt must be a string")),
            },
        };
        let request = GenerationRequest::new(input, options)?;
        let steps = crate::predict::generate(&predictor, request, cancel)
            .unwrap_or_else(|| Err(Error::internal("The engine has no typed entry")))?;
        return Ok(Generation::Typed(steps));
    }
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
    let input_param = signature.input_annotated(&input).ok_or_else(|| {
        cannot(format!(
            "input annotated {}",
            super::rules::annotation_name(&input)
        ))
    })?;
    let text = signature
        .output_annotated(&Annotation::TextDelta)
        .ok_or_else(|| cannot("output annotated TextDelta".into()))?;
    // A declared context length bounds the answer before the predictor runs; the prompt's
    // own length is the predictor's to check (ingle has no tokenizer of its model).
    if let (Some(context), Some((field, max_tokens))) =
        (signature.context_length(), options.max_tokens)
    {
        if max_tokens >= i64::from(context) {
            return Err(Error::context_length(
                format!(
                    "This model's maximum context length is {context} tokens, and `{field}` \
                     asks for {max_tokens}, which leaves no room for the prompt: ask for at \
                     most {} tokens",
                    context - 1
                ),
                field,
            ));
        }
    }
    // Predictor parameter name → OpenAI field, to report errors in the caller's terms.
    let mut fields = vec![(input_param.name.clone(), input_field)];
    let mut inputs = Inputs::new();
    inputs.insert(input_param.name.clone(), input_value);
    for (annotation, value) in media {
        if let Some(param) = signature.input_annotated(&annotation) {
            fields.push((param.name.clone(), input_field));
            inputs.insert(param.name.clone(), value);
        }
    }
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
    Ok(Generation::Annotated(Annotated {
        outputs,
        text,
        finish_reason: signature.output_annotated(&Annotation::FinishReason),
        usage: signature.output_annotated(&Annotation::Usage),
        tool_calls: signature.output_annotated(&Annotation::ToolCalls),
        logprobs: signature.output_annotated(&Annotation::TokenLogprobs),
        reasoning: signature.output_annotated(&Annotation::ReasoningDelta),
    }))
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
