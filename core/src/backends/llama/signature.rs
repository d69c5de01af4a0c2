//! The signature every llama predictor has: its inputs, each annotated for the OpenAI layer,
//! with their ranges and what they mean, and its outputs.

use crate::predict::bounds::*;
use crate::predict::MAX_TOP_LOGPROBS;
use crate::predict::{Annotation, GenerationOption, Parameter, Signature};
use crate::value::ValueType;

/// The signature every llama predictor has: chat messages or a prompt in, text deltas out.
pub fn signature() -> Signature {
    use GenerationOption as G;
    let option = |name: &str, ty, option| {
        Parameter::new(name, ty)
            .optional()
            .annotated(Annotation::Generation(option))
    };
    Signature::new(
        vec![
            Parameter::new("messages", ValueType::List)
                .optional()
                .annotated(Annotation::CHAT_MESSAGES)
                .describe("Chat messages, each {role, content}; give this or `prompt`."),
            Parameter::new("prompt", ValueType::String)
                .optional()
                .annotated(Annotation::Prompt)
                .describe("Raw text to continue; give this or `messages`."),
            option("max_tokens", ValueType::Int, G::MaxTokens)
                .range(Some(MAX_TOKENS_MIN), None)
                .describe("Most tokens to generate; default: the rest of the context."),
            // No defaults in the signature: what a request leaves unset is the model's
            // recommended sampling (`SamplingDefaults`), known only once it is loaded.
            option("temperature", ValueType::Float, G::Temperature)
                .range(Some(TEMPERATURE_RANGE.0), Some(TEMPERATURE_RANGE.1))
                .describe(
                    "Sampling temperature; 0 picks the most likely token (greedy). Default: \
                     the model's recommended (config `defaults`, the GGUF's, else 0.8).",
                ),
            option("top_p", ValueType::Float, G::TopP)
                .range(Some(TOP_P_RANGE.0), Some(TOP_P_RANGE.1))
                .describe(
                    "Nucleus sampling: sample from the smallest set of tokens above this mass. \
                     Default: the model's recommended, else 0.95.",
                ),
            option("top_k", ValueType::Int, G::TopK)
                .range(Some(TOP_K_RANGE.0), Some(TOP_K_RANGE.1))
                .describe(
                    "Sample from the k most likely tokens; 0 turns it off. Default: the \
                     model's recommended, else 40.",
                ),
            option("min_p", ValueType::Float, G::MinP)
                .range(Some(MIN_P_RANGE.0), Some(MIN_P_RANGE.1))
                .describe(
                    "Drop tokens less likely than this fraction of the most likely one; 0 \
                     turns it off. Default: the model's recommended, else 0.05.",
                ),
            option("repetition_penalty", ValueType::Float, G::RepetitionPenalty)
                .range(
                    Some(REPETITION_PENALTY_RANGE.0),
                    Some(REPETITION_PENALTY_RANGE.1),
                )
                .describe(
                    "Divide the logits of tokens already in the context by this; 1 turns it \
                     off. Default when sampling: the model's recommended, else 1.",
                ),
            option("chat_template_kwargs", ValueType::Dict, G::ChatTemplateKwargs).describe(
                "Extra variables for the model's Jinja chat template (`enable_thinking`...).",
            ),
            option("seed", ValueType::Int, G::Seed)
                .describe("Seed of the sampler; the same seed and inputs give the same text."),
            option("stop", ValueType::List, G::Stop)
                .describe("Up to 4 strings; generation stops before any of them."),
            option("frequency_penalty", ValueType::Float, G::FrequencyPenalty)
                .default_value(0.0)
                .range(Some(PENALTY_RANGE.0), Some(PENALTY_RANGE.1))
                .describe("Penalise tokens by how often they already appear in the output."),
            option("presence_penalty", ValueType::Float, G::PresencePenalty)
                .default_value(0.0)
                .range(Some(PENALTY_RANGE.0), Some(PENALTY_RANGE.1))
                .describe("Penalise tokens that already appear in the output."),
            option("tools", ValueType::List, G::Tools).describe(
                "Function tools the model may call, as in the OpenAI API; the model's chat \
                 template must support tools.",
            ),
            option("tool_choice", ValueType::Dict, G::ToolChoice).describe(
                "{type: auto | none | required} or {type: function, function: {name}}; \
                 default auto when tools are given.",
            ),
            option("parallel_tool_calls", ValueType::Bool, G::ParallelToolCalls)
                .default_value(true)
                .describe("Whether a reply may hold several tool calls."),
            option(
                "allow_repeated_tool_calls",
                ValueType::Bool,
                G::AllowRepeatedToolCalls,
            )
            .default_value(false)
            .describe(
                "Whether a tool call may repeat one made earlier: by default a repeat within the \
                 reply ends it, and a call already answered since the user last spoke is dropped \
                 (a reply of nothing else is generated again without tools).",
            ),
            option("response_format", ValueType::Dict, G::ResponseFormat).describe(
                "{type: text | json_object} or {type: json_schema, json_schema: {name, \
                 schema}}: JSON output, enforced by a grammar.",
            ),
            option("logprobs", ValueType::Int, G::Logprobs)
                .range(Some(0.0), Some(MAX_TOP_LOGPROBS as f64))
                .describe(
                    "Report each token's log probability with this many most likely \
                     alternatives; absent: no log probabilities.",
                ),
            option("logit_bias", ValueType::Dict, G::LogitBias).describe(
                "Token id (a string) → bias from -100 to 100 added to its logit; -100 bans it.",
            ),
        ],
        vec![
            Parameter::new("text", ValueType::String)
                .annotated(Annotation::TextDelta)
                .describe("Text generated since the previous output."),
            Parameter::new("finish_reason", ValueType::String)
                .optional()
                .annotated(Annotation::FinishReason)
                .describe("`stop` or `length` on the last output, else null."),
            Parameter::new("usage", ValueType::Dict)
                .optional()
                .annotated(Annotation::Usage)
                .describe("{prompt_tokens, completion_tokens, cached_tokens} on the last output, else null; \
                     cached_tokens: prompt tokens whose KV was reused from the prompt cache."),
            Parameter::new("tool_calls", ValueType::List)
                .optional()
                .annotated(Annotation::ToolCalls)
                .describe("Tool-call deltas since the previous output, when tools are given."),
            Parameter::new("logprobs", ValueType::List)
                .optional()
                .annotated(Annotation::TokenLogprobs)
                .describe("Log probabilities of this output's tokens, when asked for."),
        ],
    )
}
