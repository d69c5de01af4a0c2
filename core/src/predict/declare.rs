//! A predictor's declaration as JSON: how the Python, Node and C bindings describe a predictor
//! written by a user. One format for every binding, parsed here, so a signature means the same
//! thing from every language.
//!
//! ```json
//! {"tag": "@me/tone", "kind": "eager", "description": "A tone per voice.",
//!  "inputs": [
//!    {"name": "text", "type": "string", "description": "Text to speak."},
//!    {"name": "voice", "type": "string", "annotation": {"type": "audio_voice", "voices": ["low", "high"]}},
//!    {"name": "speed", "type": "number", "default": 1.0, "min": 0.25, "max": 4.0,
//!     "annotation": {"type": "audio_speed", "min": 0.25, "max": 4.0}}],
//!  "outputs": [{"name": "audio", "type": "audio", "annotation": {"type": "audio", "sample_rate": 24000}}]}
//! ```
//!
//! A parameter is required unless it has a `default` or `"required": false`. `type` is one of
//! `boolean`, `integer`, `number`, `string`, `array`, `object`, `tensor`, `audio`; an `array`
//! may name its `items` type; `choices` lists the values a parameter may take. An annotation
//! is a type name, alone (`"embedding"`) or with its fields (`{"type": "embedding_dims",
//! "min": 1, "max": 384}`).

use super::{Annotation, GenerationOption, Parameter, PredictorKind, Signature};
use crate::error::{shown, Error, Result};
use crate::value::{Value, ValueType};
use serde_json::{Map, Value as Json};

/// What a binding declares of a user's predictor.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    pub tag: String,
    pub kind: PredictorKind,
    pub description: String,
    pub signature: Signature,
}

/// Longest tag a predictor may have, in bytes.
const MAX_TAG_BYTES: usize = 256;

impl Declaration {
    /// Parses a declaration; every problem is an invalid-request error naming its field.
    pub fn from_json(text: &str) -> Result<Self> {
        let json: Json = crate::json::parse_one(text).map_err(|problem| {
            let message = match problem {
                crate::json::JsonProblem::Syntax(message) => message,
                crate::json::JsonProblem::Data { message, .. } => message,
            };
            Error::invalid(
                "signature",
                format!("The predictor declaration is not valid JSON: {message}"),
            )
        })?;
        let object = json.as_object().ok_or_else(|| {
            Error::invalid("signature", "A predictor declaration must be a JSON object")
        })?;
        known_keys(
            object,
            "",
            &["tag", "kind", "description", "inputs", "outputs"],
        )?;
        let tag = match object.get("tag") {
            Some(Json::String(tag)) => check_tag(tag)?,
            _ => return Err(Error::invalid("tag", "A predictor needs a `tag` string")),
        };
        let kind = match object.get("kind") {
            None | Some(Json::Null) => PredictorKind::Eager,
            Some(Json::String(kind)) if kind == "eager" => PredictorKind::Eager,
            Some(Json::String(kind)) if kind == "generator" => PredictorKind::Generator,
            Some(other) => {
                return Err(Error::invalid(
                    "kind",
                    format!(
                        "Invalid `kind` {}: it must be 'eager' or 'generator'",
                        shown(&other.to_string())
                    ),
                ))
            }
        };
        let description = optional_string(object, "description", "description")?;
        let inputs = parameters(object.get("inputs"), "inputs")?;
        let outputs = parameters(object.get("outputs"), "outputs")?;
        if outputs.is_empty() {
            return Err(Error::invalid(
                "outputs",
                format!("The predictor `{}` declares no output", shown(&tag)),
            ));
        }
        Ok(Declaration {
            tag,
            kind,
            description,
            signature: Signature::new(inputs, outputs),
        })
    }
}

/// A tag is `@owner/name`-like: printable, no spaces, at most [`MAX_TAG_BYTES`].
fn check_tag(tag: &str) -> Result<String> {
    if tag.is_empty()
        || tag.len() > MAX_TAG_BYTES
        || tag.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::invalid(
            "tag",
            format!(
                "Invalid predictor tag '{}': a tag is 1 to {MAX_TAG_BYTES} bytes without spaces \
                 or control characters, such as `@me/echo`",
                shown(tag)
            ),
        ));
    }
    Ok(tag.to_string())
}

fn known_keys(object: &Map<String, Json>, path: &str, known: &[&str]) -> Result<()> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => {
            let field = format!("{path}{}", shown(key));
            Err(Error::invalid(
                &field,
                format!(
                    "Unknown field `{field}` in the predictor declaration; known: {}",
                    known.join(", ")
                ),
            ))
        }
        None => Ok(()),
    }
}

fn optional_string(object: &Map<String, Json>, key: &str, path: &str) -> Result<String> {
    match object.get(key) {
        None | Some(Json::Null) => Ok(String::new()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(_) => Err(Error::invalid(path, format!("`{path}` must be a string"))),
    }
}

fn number(object: &Map<String, Json>, key: &str, path: &str) -> Result<Option<f64>> {
    match object.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(Error::invalid(
            format!("{path}.{key}"),
            format!("`{path}.{key}` must be a number"),
        )),
    }
}

fn parameters(json: Option<&Json>, path: &str) -> Result<Vec<Parameter>> {
    let list = match json {
        None | Some(Json::Null) => return Ok(Vec::new()),
        Some(Json::Array(list)) => list,
        Some(_) => {
            return Err(Error::invalid(
                path,
                format!("`{path}` must be a list of parameters"),
            ))
        }
    };
    let mut parameters: Vec<Parameter> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let path = format!("{path}[{i}]");
        let parameter = parameter(item, &path)?;
        if parameters.iter().any(|p| p.name == parameter.name) {
            return Err(Error::invalid(
                format!("{path}.name"),
                format!("Two parameters are named `{}`", parameter.name),
            ));
        }
        parameters.push(parameter);
    }
    Ok(parameters)
}

fn value_type(name: &str, path: &str) -> Result<ValueType> {
    Ok(match name {
        "boolean" => ValueType::Bool,
        "integer" => ValueType::Int,
        "number" => ValueType::Float,
        "string" => ValueType::String,
        "array" => ValueType::List,
        "object" => ValueType::Dict,
        "tensor" => ValueType::Tensor,
        "audio" => ValueType::Audio,
        other => {
            return Err(Error::invalid(
                path,
                format!(
                    "Unknown type '{}' at `{path}`; types are boolean, integer, number, string, \
                     array, object, tensor, audio",
                    shown(other)
                ),
            ))
        }
    })
}

fn parameter(json: &Json, path: &str) -> Result<Parameter> {
    let object = json.as_object().ok_or_else(|| {
        Error::invalid(
            path,
            format!("`{path}` must be an object describing a parameter"),
        )
    })?;
    known_keys(
        object,
        &format!("{path}."),
        &[
            "name",
            "type",
            "description",
            "required",
            "default",
            "min",
            "max",
            "choices",
            "items",
            "annotation",
        ],
    )?;
    let name = match object.get("name") {
        Some(Json::String(name)) if !name.is_empty() && name.len() <= MAX_TAG_BYTES => name,
        _ => {
            return Err(Error::invalid(
                format!("{path}.name"),
                format!("`{path}` needs a `name`: a non-empty string"),
            ))
        }
    };
    let type_name = object.get("type").and_then(Json::as_str).ok_or_else(|| {
        Error::invalid(
            format!("{path}.type"),
            format!("The parameter `{name}` needs a `type`"),
        )
    })?;
    let mut parameter = Parameter::new(
        name.clone(),
        value_type(type_name, &format!("{path}.type"))?,
    )
    .describe(optional_string(
        object,
        "description",
        &format!("{path}.description"),
    )?)
    .range(number(object, "min", path)?, number(object, "max", path)?);
    if let (Some(min), Some(max)) = (parameter.min, parameter.max) {
        if min > max {
            return Err(Error::invalid(
                format!("{path}.min"),
                format!("The parameter `{name}` has min {min} above its max {max}"),
            ));
        }
    }
    if let Some(items) = object.get("items").filter(|j| !j.is_null()) {
        let items = items.as_str().ok_or_else(|| {
            Error::invalid(format!("{path}.items"), "`items` must be a type name")
        })?;
        parameter = parameter.items(value_type(items, &format!("{path}.items"))?);
    }
    if let Some(choices) = object.get("choices").filter(|j| !j.is_null()) {
        let choices = choices.as_array().ok_or_else(|| {
            Error::invalid(
                format!("{path}.choices"),
                "`choices` must be a list of values",
            )
        })?;
        parameter = parameter.choices(choices.iter().cloned().map(Value::from).collect());
    }
    match object.get("default") {
        None => {}
        Some(default) => parameter = parameter.default_value(Value::from(default.clone())),
    }
    match object.get("required") {
        None | Some(Json::Null) => {}
        Some(Json::Bool(true)) if parameter.default.is_some() => {
            return Err(Error::invalid(
                format!("{path}.required"),
                format!("The parameter `{name}` has a default, so it cannot be required"),
            ))
        }
        Some(Json::Bool(true)) => {}
        Some(Json::Bool(false)) => parameter = parameter.optional(),
        Some(_) => {
            return Err(Error::invalid(
                format!("{path}.required"),
                "`required` must be true or false",
            ))
        }
    }
    // A null default is "optional, no value": the same as `"required": false`.
    if parameter.default == Some(Value::Null) {
        parameter.default = None;
    }
    if let Some(annotation) = object.get("annotation").filter(|j| !j.is_null()) {
        parameter = parameter.annotated(annotation_of(annotation, &format!("{path}.annotation"))?);
    }
    if let Some(default) = &parameter.default {
        let check = Signature::new(vec![parameter.clone()], Vec::new()).validate(
            [(parameter.name.clone(), default.clone())]
                .into_iter()
                .collect(),
        );
        if let Err(error) = check {
            return Err(Error::invalid(
                format!("{path}.default"),
                format!(
                    "The default of `{name}` does not fit its declaration: {}",
                    error.message
                ),
            ));
        }
    }
    Ok(parameter)
}

/// `"embedding"` or `{"type": "embedding_dims", "min": 1, "max": 384}`.
pub(crate) fn annotation_of(json: &Json, path: &str) -> Result<Annotation> {
    let (name, fields) = match json {
        Json::String(name) => (name.as_str(), Map::new()),
        Json::Object(object) => match object.get("type").and_then(Json::as_str) {
            Some(name) => (name, object.clone()),
            None => {
                return Err(Error::invalid(
                    format!("{path}.type"),
                    format!("`{path}` needs a `type`"),
                ))
            }
        },
        _ => {
            return Err(Error::invalid(
                path,
                format!("`{path}` must be an annotation name or object"),
            ))
        }
    };
    let known = |keys: &[&str]| {
        let mut all = vec!["type"];
        all.extend_from_slice(keys);
        known_keys(&fields, &format!("{path}."), &all)
    };
    let bound = |key: &str| -> Result<f64> {
        number(&fields, key, path)?.ok_or_else(|| {
            Error::invalid(
                format!("{path}.{key}"),
                format!("The annotation `{name}` needs `{key}`"),
            )
        })
    };
    let whole = |key: &str| -> Result<u32> {
        let x = bound(key)?;
        if x.fract() != 0.0 || !(0.0..=u32::MAX as f64).contains(&x) {
            return Err(Error::invalid(
                format!("{path}.{key}"),
                format!("`{path}.{key}` must be a whole number, not {x}"),
            ));
        }
        Ok(x as u32)
    };
    let sample_rate = || -> Result<u32> {
        let rate = whole("sample_rate")?;
        if !crate::value::SAMPLE_RATES.contains(&rate) {
            return Err(Error::invalid(
                format!("{path}.sample_rate"),
                format!("`{path}.sample_rate` must be between 1000 and 768000 Hz, not {rate}"),
            ));
        }
        Ok(rate)
    };
    let simple = |annotation: Annotation| -> Result<Annotation> {
        known(&[])?;
        Ok(annotation)
    };
    use GenerationOption as G;
    match name {
        "generic" => simple(Annotation::Generic),
        "embedding" => simple(Annotation::Embedding),
        "embedding_dims" => {
            known(&["min", "max"])?;
            let (min, max) = (whole("min")?, whole("max")?);
            if min == 0 || min > max {
                return Err(Error::invalid(
                    path,
                    format!("`{path}` needs 1 <= min <= max, not {min}..{max}"),
                ));
            }
            Ok(Annotation::EmbeddingDims { min, max })
        }
        "audio_voice" => {
            known(&["voices"])?;
            let voices = match fields.get("voices") {
                Some(Json::Array(voices)) => voices
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>(),
                _ => None,
            }
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    format!("{path}.voices"),
                    "An AudioVoice annotation needs `voices`: a non-empty list of names",
                )
            })?;
            Ok(Annotation::AudioVoice { voices })
        }
        "audio_speed" => {
            known(&["min", "max"])?;
            let (min, max) = (bound("min")?, bound("max")?);
            if !(min > 0.0 && min <= max && max.is_finite()) {
                return Err(Error::invalid(
                    path,
                    format!("`{path}` needs 0 < min <= max, not {min}..{max}"),
                ));
            }
            Ok(Annotation::AudioSpeed { min, max })
        }
        "audio" => {
            known(&["sample_rate"])?;
            let sample_rate = sample_rate()?;
            Ok(Annotation::Audio { sample_rate })
        }
        "transcription_language" => simple(Annotation::TranscriptionLanguage),
        "transcription_prompt" => simple(Annotation::TranscriptionPrompt),
        "transcription_task" => simple(Annotation::TranscriptionTask),
        "transcription_word_timestamps" => simple(Annotation::TranscriptionWordTimestamps),
        "transcription_segment" => simple(Annotation::TranscriptionSegment),
        "chat_messages" => {
            known(&["context_length"])?;
            let context_length = match fields.get("context_length") {
                None | Some(Json::Null) => None,
                Some(_) => match whole("context_length")? {
                    0 | 1 => {
                        return Err(Error::invalid(
                            format!("{path}.context_length"),
                            format!(
                                "`{path}.context_length` must be at least 2 tokens: room for \
                                 a prompt and an answer"
                            ),
                        ))
                    }
                    n => Some(n),
                },
            };
            Ok(Annotation::ChatMessages { context_length })
        }
        "chat_images" => simple(Annotation::ChatImages),
        "chat_audios" => {
            known(&["sample_rate"])?;
            let sample_rate = sample_rate()?;
            Ok(Annotation::ChatAudios { sample_rate })
        }
        "reasoning_delta" => simple(Annotation::ReasoningDelta),
        "reasoning_effort" => simple(Annotation::Generation(G::ReasoningEffort)),
        "prompt" => simple(Annotation::Prompt),
        "text_delta" => simple(Annotation::TextDelta),
        "finish_reason" => simple(Annotation::FinishReason),
        "usage" => simple(Annotation::Usage),
        "max_tokens" => simple(Annotation::Generation(G::MaxTokens)),
        "temperature" => simple(Annotation::Generation(G::Temperature)),
        "top_p" => simple(Annotation::Generation(G::TopP)),
        "seed" => simple(Annotation::Generation(G::Seed)),
        "stop" => simple(Annotation::Generation(G::Stop)),
        "frequency_penalty" => simple(Annotation::Generation(G::FrequencyPenalty)),
        "presence_penalty" => simple(Annotation::Generation(G::PresencePenalty)),
        "top_k" => simple(Annotation::Generation(G::TopK)),
        "min_p" => simple(Annotation::Generation(G::MinP)),
        "repetition_penalty" => simple(Annotation::Generation(G::RepetitionPenalty)),
        "chat_template_kwargs" => simple(Annotation::Generation(G::ChatTemplateKwargs)),
        // Muna's name for the same input.
        "tools" | "chat_tools" => simple(Annotation::Generation(G::Tools)),
        "tool_choice" => simple(Annotation::Generation(G::ToolChoice)),
        "parallel_tool_calls" => simple(Annotation::Generation(G::ParallelToolCalls)),
        "allow_repeated_tool_calls" => {
            simple(Annotation::Generation(G::AllowRepeatedToolCalls))
        }
        "response_format" => simple(Annotation::Generation(G::ResponseFormat)),
        "logprobs" => simple(Annotation::Generation(G::Logprobs)),
        "logit_bias" => simple(Annotation::Generation(G::LogitBias)),
        "tool_calls" => simple(Annotation::ToolCalls),
        "token_logprobs" => simple(Annotation::TokenLogprobs),
        "rerank_query" => simple(Annotation::RerankQuery),
        "rerank_documents" => simple(Annotation::RerankDocuments),
        "rerank_scores" => simple(Annotation::RerankScores),
        "image_width" => simple(Annotation::ImageWidth),
        "image_height" => simple(Annotation::ImageHeight),
        "image_count" => simple(Annotation::ImageCount),
        other => Err(Error::invalid(
            format!("{path}.type"),
            format!(
                "Unknown annotation '{}' at `{path}`; annotations are generic, embedding, \
                 embedding_dims, audio_voice, audio_speed, audio, transcription_language, \
                 transcription_prompt, transcription_task, transcription_word_timestamps, \
                 transcription_segment, \
                 chat_messages, chat_images, chat_audios, chat_tools, reasoning_effort, \
                 reasoning_delta, prompt, text_delta, finish_reason, usage, max_tokens, \
                 temperature, top_p, seed, stop, frequency_penalty, presence_penalty, top_k, \
                 min_p, repetition_penalty, chat_template_kwargs, tools, \
                 tool_choice, parallel_tool_calls, allow_repeated_tool_calls, response_format, logprobs, logit_bias, \
                 tool_calls, token_logprobs, rerank_query, rerank_documents, rerank_scores, \
                 image_width, image_height, image_count",
                shown(other)
            ),
        )),
    }
}
