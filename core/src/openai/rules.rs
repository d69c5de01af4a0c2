//! The rules a predictor follows to serve the OpenAI methods its annotations claim, checked
//! when it is registered ([`super::check_predictor`]): chat's and completions' rules, and what
//! every method's rules share. Embeddings', speech's and transcription's own rules are in their
//! files.

use crate::error::{shown, Error, Result};
use crate::predict::{Annotation, GenerationOption, Parameter, Signature};
use crate::value::ValueType;

/// A rule broken by `param` of the predictor `tag`.
pub(super) fn problem(tag: &str, param: &str, message: String) -> Error {
    Error::invalid(param, format!("The predictor `{}` {message}", shown(tag)))
}

/// The output annotated `annotation`, which `method` needs.
pub(super) fn output<'a>(
    tag: &str,
    signature: &'a Signature,
    annotation: &Annotation,
    method: &str,
) -> Result<&'a Parameter> {
    signature
        .outputs
        .iter()
        .find(|p| &p.annotation == annotation)
        .ok_or_else(|| {
            problem(
                tag,
                "outputs",
                format!("serves {method}, so it needs an output annotated {annotation:?}"),
            )
        })
}

/// Every required input other than `served` is one `method` cannot give.
pub(super) fn nothing_else_required(
    tag: &str,
    signature: &Signature,
    method: &str,
    served: &[Option<&Parameter>],
) -> Result<()> {
    let served = |p: &Parameter| served.iter().flatten().any(|s| s.name == p.name);
    match signature.inputs.iter().find(|p| p.required && !served(p)) {
        Some(p) => Err(problem(
            tag,
            &p.name,
            format!(
                "serves {method}, which cannot give its required input `{}`: give it a \
                 default, or an annotation {method} fills",
                p.name
            ),
        )),
        None => Ok(()),
    }
}

/// Generation options are optional and of the type the OpenAI field has.
pub(super) fn generation_options(tag: &str, signature: &Signature) -> Result<()> {
    use GenerationOption as G;
    for p in &signature.inputs {
        let Annotation::Generation(option) = p.annotation else {
            continue;
        };
        let types: &[ValueType] = match option {
            G::MaxTokens | G::Seed | G::Logprobs | G::TopK => &[ValueType::Int],
            G::Stop => &[ValueType::List, ValueType::String],
            G::ReasoningEffort => &[ValueType::String],
            G::Tools => &[ValueType::List],
            G::ToolChoice | G::ResponseFormat | G::LogitBias | G::ChatTemplateKwargs => {
                &[ValueType::Dict]
            }
            G::ParallelToolCalls | G::AllowRepeatedToolCalls => &[ValueType::Bool],
            G::Temperature
            | G::TopP
            | G::FrequencyPenalty
            | G::PresencePenalty
            | G::MinP
            | G::RepetitionPenalty => &[ValueType::Float],
        };
        if !types.contains(&p.value_type) {
            return Err(problem(
                tag,
                &p.name,
                format!(
                    "declares `{}` ({option:?}) as {}; it must be {}",
                    p.name,
                    p.value_type.name(),
                    types
                        .iter()
                        .map(|t| t.name())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            ));
        }
        if p.required {
            return Err(problem(
                tag,
                &p.name,
                format!(
                    "declares `{}` ({option:?}) as required; a generation option needs a \
                     default, as callers may leave it out",
                    p.name
                ),
            ));
        }
    }
    Ok(())
}

/// Each annotation on a parameter of the type it means, and at most once per side.
pub(super) fn annotation_types(tag: &str, signature: &Signature) -> Result<()> {
    use ValueType as T;
    for (side, params) in [("input", &signature.inputs), ("output", &signature.outputs)] {
        for (i, p) in params.iter().enumerate() {
            if p.value_type == T::Audio && !matches!(p.annotation, Annotation::Audio { .. }) {
                return Err(problem(
                    tag,
                    &p.name,
                    format!(
                        "declares the {side} `{}` as audio without an Audio annotation: \
                         annotate it Audio with its sample rate",
                        p.name
                    ),
                ));
            }
            if p.annotation == Annotation::Generic {
                continue;
            }
            let same = |q: &Parameter| match (&q.annotation, &p.annotation) {
                (Annotation::Generation(a), Annotation::Generation(b)) => a == b,
                (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
            };
            if params[..i].iter().any(same) {
                return Err(problem(
                    tag,
                    &p.name,
                    format!(
                        "has two {side}s annotated {}: `{}` and `{}`",
                        annotation_name(&p.annotation),
                        params[..i].iter().find(|q| same(q)).map_or("", |q| &q.name),
                        p.name
                    ),
                ));
            }
            let input = side == "input";
            let expected: Option<ValueType> = match &p.annotation {
                Annotation::Generic | Annotation::Generation(_) => None,
                Annotation::Embedding if input => Some(T::List),
                Annotation::Embedding => Some(T::Tensor),
                Annotation::EmbeddingDims { .. } => Some(T::Int),
                Annotation::AudioVoice { .. } => Some(T::String),
                Annotation::AudioSpeed { .. } => Some(T::Float),
                Annotation::Audio { .. } => Some(T::Audio),
                Annotation::TranscriptionLanguage
                | Annotation::TranscriptionPrompt
                | Annotation::TranscriptionTask
                | Annotation::Prompt
                | Annotation::TextDelta
                | Annotation::FinishReason
                | Annotation::ReasoningDelta
                | Annotation::RerankQuery => Some(T::String),
                Annotation::TranscriptionWordTimestamps => Some(T::Bool),
                Annotation::ImageWidth | Annotation::ImageHeight | Annotation::ImageCount => {
                    Some(T::Int)
                }
                Annotation::TranscriptionSegment | Annotation::Usage => Some(T::Dict),
                Annotation::ToolCalls | Annotation::TokenLogprobs => Some(T::List),
                Annotation::ChatMessages { .. }
                | Annotation::ChatImages
                | Annotation::ChatAudios { .. }
                | Annotation::RerankDocuments
                | Annotation::RerankScores => Some(T::List),
            };
            if let Some(expected) = expected.filter(|&t| t != p.value_type) {
                return Err(problem(
                    tag,
                    &p.name,
                    format!(
                        "declares the {side} `{}` as {}; annotated {}, it must be {}",
                        p.name,
                        p.value_type.name(),
                        annotation_name(&p.annotation),
                        expected.name()
                    ),
                ));
            }
            let input_only = matches!(
                p.annotation,
                Annotation::EmbeddingDims { .. }
                    | Annotation::AudioVoice { .. }
                    | Annotation::AudioSpeed { .. }
                    | Annotation::TranscriptionPrompt
                    | Annotation::TranscriptionTask
                    | Annotation::TranscriptionWordTimestamps
                    | Annotation::ChatMessages { .. }
                    | Annotation::ChatImages
                    | Annotation::ChatAudios { .. }
                    | Annotation::Prompt
                    | Annotation::Generation(_)
                    | Annotation::RerankQuery
                    | Annotation::RerankDocuments
                    | Annotation::ImageWidth
                    | Annotation::ImageHeight
                    | Annotation::ImageCount
            );
            let output_only = matches!(
                p.annotation,
                Annotation::TranscriptionSegment
                    | Annotation::TextDelta
                    | Annotation::ReasoningDelta
                    | Annotation::FinishReason
                    | Annotation::Usage
                    | Annotation::ToolCalls
                    | Annotation::TokenLogprobs
                    | Annotation::RerankScores
            );
            if (input && output_only) || (!input && input_only) {
                return Err(problem(
                    tag,
                    &p.name,
                    format!(
                        "annotates its {side} `{}` {}, which only an {} can be",
                        p.name,
                        annotation_name(&p.annotation),
                        if input { "output" } else { "input" }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The annotation's name without its fields.
pub(super) fn annotation_name(annotation: &Annotation) -> String {
    let debug = format!("{annotation:?}");
    match debug.find([' ', '{']) {
        Some(end) => debug[..end].to_string(),
        None => debug,
    }
}

/// Chat (an input annotated `ChatMessages`) and text completion (one annotated `Prompt`): the
/// messages (or prompt) are required unless the predictor takes both; text deltas out;
/// generation options optional; nothing else required.
pub(super) fn chat_rules(tag: &str, signature: &Signature) -> Result<()> {
    let messages = signature.input_annotated(&Annotation::CHAT_MESSAGES);
    let prompt = signature.input_annotated(&Annotation::Prompt);
    // The media of the messages: filled by chat (an empty list when the messages have none).
    let media = |is: fn(&Annotation) -> bool| signature.inputs.iter().find(|p| is(&p.annotation));
    let images = media(|a| matches!(a, Annotation::ChatImages));
    let audios = media(|a| matches!(a, Annotation::ChatAudios { .. }));
    for p in [images, audios].into_iter().flatten() {
        if messages.is_none() {
            return Err(problem(
                tag,
                &p.name,
                format!(
                    "annotates `{}` {}, the media of chat messages, but takes no ChatMessages",
                    p.name,
                    annotation_name(&p.annotation)
                ),
            ));
        }
    }
    let method = match (messages, prompt) {
        (None, None) => return Ok(()),
        (Some(_), None) => "chat.completions",
        (None, Some(_)) => "completions",
        (Some(_), Some(_)) => "chat.completions and completions",
    };
    let both = messages.is_some() && prompt.is_some();
    for input in [messages, prompt].into_iter().flatten() {
        if !input.required && !both {
            return Err(problem(
                tag,
                &input.name,
                format!(
                    "serves {method}, so its input `{}` must be required (no default)",
                    input.name
                ),
            ));
        }
        if input.required && both {
            // A chat request gives no prompt and a completion request no messages.
            return Err(problem(
                tag,
                &input.name,
                format!(
                    "serves {method}, and each request gives only one of messages and prompt, \
                     so `{}` must be optional",
                    input.name
                ),
            ));
        }
    }
    output(tag, signature, &Annotation::TextDelta, method)?;
    generation_options(tag, signature)?;
    nothing_else_required(tag, signature, method, &[messages, prompt, images, audios])
}

#[cfg(test)]
mod rule_tests {
    use crate::openai::check_predictor;

    #[test]
    fn every_built_in_signature_follows_the_rules() {
        use crate::backends;
        #[cfg(feature = "llama")]
        check_predictor("llama", &backends::llama::signature()).unwrap();
        check_predictor("embedding", &backends::onnx::embedding::signature(384)).unwrap();
        check_predictor(
            "speech",
            &backends::onnx::speech::signature(vec!["a".into()], 22050),
        )
        .unwrap();
        check_predictor("whisper", &backends::onnx::whisper::signature(false)).unwrap();
        check_predictor("whisper", &backends::onnx::whisper::signature(true)).unwrap();
    }
}
