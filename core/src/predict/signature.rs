//! Parameters, annotations and signatures, and validation of inputs against them.

use crate::error::{Error, Result};
use crate::value::{Value, ValueType};
use std::collections::BTreeMap;

/// Named inputs (or outputs) of a prediction.
pub type Inputs = BTreeMap<String, Value>;

/// A generation option of a text generator, so the OpenAI layer can find the parameter that
/// means `temperature` (say) without relying on the parameter's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenerationOption {
    MaxTokens,
    Temperature,
    TopP,
    Seed,
    Stop,
    FrequencyPenalty,
    PresencePenalty,
    /// `top_k`: sample from the k most likely tokens; 0 turns it off (int). An extension
    /// llama.cpp-based servers take (`extra_body` in the OpenAI SDKs).
    TopK,
    /// `min_p`: drop tokens less likely than this fraction of the most likely one (float, 0–1).
    MinP,
    /// `repetition_penalty` (llama.cpp's server: `repeat_penalty`): divide the logits of tokens
    /// already in the context by this; 1 turns it off (float).
    RepetitionPenalty,
    /// `chat_template_kwargs`: extra variables for the Jinja chat template (dict), such as
    /// `enable_thinking`.
    ChatTemplateKwargs,
    /// `tools`: a list of OpenAI function tools `{type, function: {name, description,
    /// parameters}}` (list).
    Tools,
    /// `tool_choice`, always as a dict: `{"type": "auto" | "none" | "required"}` or
    /// `{"type": "function", "function": {"name"}}` (dict).
    ToolChoice,
    /// `parallel_tool_calls`: whether one reply may hold several calls (bool).
    ParallelToolCalls,
    /// `allow_repeated_tool_calls` (ingle's): whether a tool call may repeat one made earlier
    /// (same name and arguments): by default a repeat within the reply ends it, and a call
    /// already answered since the user last spoke is dropped (bool; docs/tools.md).
    AllowRepeatedToolCalls,
    /// `response_format`: `{"type": "text" | "json_object"}` or `{"type": "json_schema",
    /// "json_schema": {name, schema, strict}}` (dict).
    ResponseFormat,
    /// How many most likely alternatives to report with each token's log probability; absent
    /// when log probabilities are not asked for (int, 0–20).
    Logprobs,
    /// `logit_bias`: token id (as a string) → bias from −100 to 100 (dict).
    LogitBias,
    /// `reasoning_effort` (Muna's `ReasoningEffort`): how much the model should think before it
    /// answers: `minimal`, `low`, `medium`, `high` or `xhigh` (string). Chat's
    /// `reasoning_effort`, Responses' `reasoning.effort`, Anthropic's `thinking`.
    ReasoningEffort,
}

/// What a parameter means. The OpenAI layer finds parameters by annotation, never by name.
#[derive(Debug, Clone)]
pub enum Annotation {
    /// No special meaning.
    Generic,
    /// Texts to embed (input) or the float32 `[N, D]` embedding matrix (output).
    Embedding,
    /// The number of embedding dimensions to return.
    EmbeddingDims { min: u32, max: u32 },
    /// A voice, one of `voices`.
    AudioVoice { voices: Vec<String> },
    /// A speaking speed factor.
    AudioSpeed { min: f64, max: f64 },
    /// Audio in or out.
    Audio { sample_rate: u32 },
    /// The language of audio to transcribe (an ISO-639-1 code or an English name) (input);
    /// the language a transcription found, reported as `verbose_json`'s `language` (output).
    TranscriptionLanguage,
    /// What to write (input, string): `transcribe` (the speech in its own language) or
    /// `translate` (into English). A predictor with it serves `audio.translations`.
    TranscriptionTask,
    /// Text that conditions a transcription: spelling, names, style (input).
    TranscriptionPrompt,
    /// Whether to time each word of a transcription (input, bool).
    TranscriptionWordTimestamps,
    /// One transcribed segment: `{id, seek, start, end, text, tokens, temperature,
    /// avg_logprob, compression_ratio, no_speech_prob, words}` (output, null when none).
    TranscriptionSegment,
    /// Chat messages: a list of `{role, content}` dicts (input). A message with images or
    /// audio has a list of parts for content: `{"type": "text", "text"}`, `{"type": "image",
    /// "detail"}` and `{"type": "audio"}`, the media themselves in [`Annotation::ChatImages`]
    /// and [`Annotation::ChatAudios`] in the same order. `context_length` (Muna's
    /// `ChatMessages(context_length=...)`): the most tokens the model holds, prompt and answer
    /// together, reported by `models` and checked against `max_tokens`.
    ChatMessages { context_length: Option<u32> },
    /// The decoded images of the conversation's image parts, in order of appearance: a list of
    /// `(H, W, C)` uint8 tensors, C = 3 (RGB) or 4 (RGBA) (input; Muna's `ChatImages`).
    ChatImages,
    /// The decoded audio of the conversation's audio parts, in order of appearance: a list of
    /// mono audio values at `sample_rate` (input; Muna's `ChatAudios`).
    ChatAudios { sample_rate: u32 },
    /// Thinking generated since the previous partial output, shown apart from the answer:
    /// chat's `delta.reasoning_content`, Responses' reasoning items, Anthropic's thinking
    /// blocks (output, string).
    ReasoningDelta,
    /// A raw text prompt to continue (input).
    Prompt,
    /// A sampling / length option of a text generator (input).
    Generation(GenerationOption),
    /// Text generated since the previous partial output (output).
    TextDelta,
    /// Why generation ended: `"stop"` or `"length"`, null until the last output (output).
    FinishReason,
    /// `{prompt_tokens, completion_tokens}` token counts, on the last output (output).
    Usage,
    /// Tool-call deltas since the previous output, as OpenAI streams them: `{index, id, type,
    /// function: {name, arguments}}` in a call's first delta, `{index, function: {arguments}}`
    /// after (output, list).
    ToolCalls,
    /// The tokens behind this output's text: `{token, logprob, bytes, top_logprobs: [{token,
    /// logprob, bytes}]}` each (output, list).
    TokenLogprobs,
    /// The query documents are ranked against (input, string).
    RerankQuery,
    /// The documents to rank (input, list of strings).
    RerankDocuments,
    /// One relevance score per document, higher is more relevant (output, list of numbers).
    RerankScores,
    /// The width in pixels of the images to make (input, int; Muna's `ImageWidth`).
    ImageWidth,
    /// The height in pixels of the images to make (input, int; Muna's `ImageHeight`).
    ImageHeight,
    /// How many images to make (input, int; Muna's `ImageCount`). With `ImageWidth` or
    /// `ImageHeight` it makes a predictor serve `images.generate`.
    ImageCount,
}

impl Annotation {
    /// The chat's messages, of a model whose context length is not declared.
    pub const CHAT_MESSAGES: Annotation = Annotation::ChatMessages {
        context_length: None,
    };
}

/// The variant first, then the fields of the variants that have some. (Derived, the comparison
/// compiles to loads of the fields of both sides whatever the variant, which valgrind reports as
/// branching on uninitialised bytes when a side is a unit variant.)
impl PartialEq for Annotation {
    fn eq(&self, other: &Self) -> bool {
        use Annotation as A;
        if std::mem::discriminant(self) != std::mem::discriminant(other) {
            return false;
        }
        match (self, other) {
            (A::EmbeddingDims { min: a, max: b }, A::EmbeddingDims { min: c, max: d }) => {
                a == c && b == d
            }
            (A::AudioVoice { voices: a }, A::AudioVoice { voices: b }) => a == b,
            (A::AudioSpeed { min: a, max: b }, A::AudioSpeed { min: c, max: d }) => {
                a == c && b == d
            }
            (A::Audio { sample_rate: a }, A::Audio { sample_rate: b })
            | (A::ChatAudios { sample_rate: a }, A::ChatAudios { sample_rate: b }) => a == b,
            (A::Generation(a), A::Generation(b)) => a == b,
            // The context length is a property of the model, not another meaning: any
            // ChatMessages is the chat's input (`input_annotated` finds it by this equality).
            (A::ChatMessages { .. }, A::ChatMessages { .. }) => true,
            // The same variant without fields. (A new variant with fields needs its arm above.)
            _ => true,
        }
    }
}

/// One input or output of a predictor.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub value_type: ValueType,
    pub description: String,
    /// A required input must be given; an optional one falls back to `default` (if any).
    pub required: bool,
    pub default: Option<Value>,
    /// Inclusive bounds of a numeric parameter.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The values it may take (an enumeration, a `Literal`); empty: any of its type.
    pub choices: Vec<Value>,
    /// The type of every item of a list parameter, when declared.
    pub item_type: Option<ValueType>,
    pub annotation: Annotation,
}

impl Parameter {
    /// A required parameter with no annotation.
    pub fn new(name: impl Into<String>, value_type: ValueType) -> Self {
        Parameter {
            name: name.into(),
            value_type,
            description: String::new(),
            required: true,
            default: None,
            min: None,
            max: None,
            choices: Vec::new(),
            item_type: None,
            annotation: Annotation::Generic,
        }
    }

    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// Makes the parameter optional with this default.
    pub fn default_value(mut self, value: impl Into<Value>) -> Self {
        self.required = false;
        self.default = Some(value.into());
        self
    }

    pub fn range(mut self, min: Option<f64>, max: Option<f64>) -> Self {
        self.min = min;
        self.max = max;
        self
    }

    /// Limits the parameter to these values.
    pub fn choices(mut self, choices: Vec<Value>) -> Self {
        self.choices = choices;
        self
    }

    /// Declares the type of a list parameter's items.
    pub fn items(mut self, item_type: ValueType) -> Self {
        self.item_type = Some(item_type);
        self
    }

    pub fn annotated(mut self, annotation: Annotation) -> Self {
        self.annotation = annotation;
        self
    }

    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    fn check(&self, value: &Value) -> Result<()> {
        if !value.matches(self.value_type) {
            return Err(Error::invalid(
                &self.name,
                format!(
                    "Invalid type for `{}`: expected {}, got {}",
                    self.name,
                    self.value_type.name(),
                    value.type_name()
                ),
            ));
        }
        if let (Some(item_type), Some(items)) = (self.item_type, value.as_list()) {
            if let Some((i, item)) = items
                .iter()
                .enumerate()
                .find(|(_, item)| !item.matches(item_type))
            {
                let name = format!("{}[{i}]", self.name);
                return Err(Error::invalid(
                    &name,
                    format!(
                        "Invalid type for `{name}`: expected {}, got {}",
                        item_type.name(),
                        item.type_name()
                    ),
                ));
            }
        }
        if !self.choices.is_empty() && !self.choices.iter().any(|c| same_choice(c, value)) {
            let allowed: Vec<String> = self.choices.iter().map(choice_text).collect();
            return Err(Error::invalid(
                &self.name,
                format!(
                    "Invalid value for `{}`: {}; it must be one of {}",
                    self.name,
                    crate::error::shown(&choice_text(value)),
                    allowed.join(", ")
                ),
            ));
        }
        if let Some(x) = value.as_f64() {
            super::check_range(&self.name, x, self.min, self.max)?;
        }
        Ok(())
    }
}

/// Whether `value` is the choice `choice` (`1` is the choice `1.0`, as JSON does not tell them apart).
pub(crate) fn same_choice(choice: &Value, value: &Value) -> bool {
    match (choice.as_f64(), value.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => choice == value,
    }
}

/// A choice as an error message shows it: strings quoted, numbers as they are.
fn choice_text(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => other
            .to_json()
            .map_or_else(|_| other.type_name().to_string(), |j| j.to_string()),
    }
}

/// The inputs and outputs of a predictor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Signature {
    pub inputs: Vec<Parameter>,
    pub outputs: Vec<Parameter>,
}

impl Signature {
    pub fn new(inputs: Vec<Parameter>, outputs: Vec<Parameter>) -> Self {
        Signature { inputs, outputs }
    }

    /// The input parameter with this annotation.
    pub fn input_annotated(&self, annotation: &Annotation) -> Option<&Parameter> {
        self.inputs.iter().find(|p| &p.annotation == annotation)
    }

    /// The context length a chat input declares (`ChatMessages(context_length=...)`).
    pub fn context_length(&self) -> Option<u32> {
        self.inputs.iter().find_map(|p| match p.annotation {
            Annotation::ChatMessages { context_length } => context_length,
            _ => None,
        })
    }

    /// The same signature, its chat input declaring `context_length` tokens.
    pub fn with_context_length(mut self, context_length: u32) -> Self {
        for p in &mut self.inputs {
            if let Annotation::ChatMessages { .. } = p.annotation {
                p.annotation = Annotation::ChatMessages {
                    context_length: Some(context_length),
                };
            }
        }
        self
    }

    /// The index of the output parameter with this annotation.
    pub fn output_annotated(&self, annotation: &Annotation) -> Option<usize> {
        self.outputs
            .iter()
            .position(|p| &p.annotation == annotation)
    }

    /// Checks `inputs` against the input parameters and fills in defaults.
    /// Null counts as absent. Errors name the offending parameter.
    pub fn validate(&self, mut inputs: Inputs) -> Result<Inputs> {
        inputs.retain(|_, v| !v.is_null());
        if let Some(unknown) = inputs
            .keys()
            .find(|k| !self.inputs.iter().any(|p| &p.name == *k))
        {
            let known: Vec<&str> = self.inputs.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::invalid(
                unknown,
                format!(
                    "Unknown parameter `{}`; expected one of: {}",
                    crate::error::shown(unknown),
                    known.join(", ")
                ),
            ));
        }
        for param in &self.inputs {
            match inputs.get(&param.name) {
                Some(value) => param.check(value)?,
                None if param.required => {
                    return Err(Error::invalid(
                        &param.name,
                        format!("Missing required parameter `{}`", param.name),
                    ))
                }
                None => {
                    if let Some(default) = &param.default {
                        inputs.insert(param.name.clone(), default.clone());
                    }
                }
            }
        }
        Ok(inputs)
    }
}
