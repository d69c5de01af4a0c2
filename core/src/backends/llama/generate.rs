//! The llama engine's typed entry: a checked [`GenerationRequest`] rendered, tokenized, given
//! its grammar and sampler, and queued on the scheduler. What is checked here depends on the
//! model: the prompt against its context, tools against its chat template and grammar
//! compiler, `logit_bias` ids against its vocabulary.

use super::answer::AnswerInstead;
use super::constrain::{self, ToolSpec};
use super::sequence::{Job, Lazy};
use super::stream::{flag_on_cancel, TextStream};
use super::{random_seed, LlamaPredictor, TOOL_FORMAT};
use crate::chat::thinking::{prompt_opens_thoughts, ThinkSplitter};
use crate::chat::tool_calls::{
    answered_calls, exchanges_as_text, ToolCallDeltas, ToolCallParser, TurnRules,
};
use crate::error::{Error, Result};
use crate::predict::{
    Cancel, Context, Generate, GenerationInput, GenerationRequest, LogitBias, SamplingParams,
    StepStream, ToolChoice,
};
use crate::value::Value;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;
use llguidance::Matcher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

impl Generate for LlamaPredictor {
    fn generate(&self, request: GenerationRequest, context: &Context) -> Result<StepStream> {
        Ok(Box::new(self.start(request, &context.cancel)?))
    }

    fn default_sampling(&self) -> Option<(f64, f64)> {
        Some((self.sampling.temperature, self.sampling.top_p))
    }

    fn render(&self, request: &GenerationRequest) -> Result<String> {
        match &request.input {
            // As `start` renders it: the tools unless `tool_choice` is none.
            GenerationInput::Messages(messages) => {
                if !self.tool_history_shown {
                    self.check_no_tool_history(messages)?;
                }
                let tools = match request.callable_tools() {
                    Some(_) if !self.tools_supported => return Err(self.no_tool_support()),
                    tools => tools.map(|t| &t.json),
                };
                let kwargs = self.template_kwargs(request)?;
                self.render_chat_with(messages, tools, kwargs.as_ref())
            }
            GenerationInput::Prompt(prompt) => Ok(prompt.clone()),
        }
    }
}

/// `logit_bias` as llama.cpp's sampler takes it: ids of this model's vocabulary.
fn logit_biases(biases: &[LogitBias], n_vocab: i32) -> Result<Vec<LlamaLogitBias>> {
    biases
        .iter()
        .map(|b| {
            let token = b.token_below(n_vocab.max(0) as u32)?;
            Ok(LlamaLogitBias::new(LlamaToken(token as i32), b.bias))
        })
        .collect()
}

/// Refuses a `strict: true` schema that breaks OpenAI's strict-mode rules (the grammar this
/// engine builds would enforce a looser one).
fn check_strict_schemas(request: &GenerationRequest) -> Result<()> {
    if let Some(tools) = &request.tools {
        for (i, tool) in tools.list.iter().enumerate() {
            if tool.strict {
                let at = format!("tools[{i}].function.parameters");
                constrain::check_strict(&tool.parameters, &at)?;
            }
        }
    }
    match &request.response_format {
        Some(format) if format.strict => constrain::check_strict(&format.schema, format.param),
        _ => Ok(()),
    }
}

impl LlamaPredictor {
    /// Starts `request` on the scheduler: its stream of steps, which `cancel` stops.
    pub(super) fn start(&self, request: GenerationRequest, cancel: &Cancel) -> Result<TextStream> {
        check_strict_schemas(&request)?;
        let logit_bias = logit_biases(&request.logit_bias, self.model.n_vocab())?;
        let calling = request.callable_tools();
        let template_kwargs = self.template_kwargs(&request)?;
        // With calls already answered since the user spoke, the same conversation without
        // tools: the model answers from the results if it only makes one of them again.
        let mut answered = Vec::new();
        let mut without_tools = None;
        let (prompt, prompt_param) = match &request.input {
            GenerationInput::Messages(messages) => {
                let text_bytes = messages
                    .iter()
                    .filter_map(Value::as_dict)
                    .flat_map(|m| m.values().filter_map(Value::as_str))
                    .map(str::len)
                    .sum();
                self.check_cannot_fit(text_bytes, "messages")?;
                if !self.tool_history_shown {
                    self.check_no_tool_history(messages)?;
                }
                let tools = match calling {
                    Some(tools) => {
                        if !self.tools_supported {
                            return Err(self.no_tool_support());
                        }
                        Some(&tools.json)
                    }
                    None => None,
                };
                let kwargs = template_kwargs.as_ref();
                let rendered = self.render_chat_with(messages, tools, kwargs)?;
                if tools.is_some()
                    && request.tool_choice == ToolChoice::Auto
                    && !request.allow_repeated_tool_calls
                {
                    // Only what follows the last user message matters (images and audio
                    // before it are not converted).
                    let role = |m: &Value| m.as_dict()?.get("role")?.as_str().map(str::to_owned);
                    let since_user = messages
                        .iter()
                        .rposition(|m| role(m).as_deref() == Some("user"))
                        .map_or(0, |i| i + 1);
                    let recent: Option<Vec<serde_json::Value>> = messages[since_user..]
                        .iter()
                        .map(|m| m.to_json().ok())
                        .collect();
                    answered = recent.map_or_else(Vec::new, |json| answered_calls(&json));
                    if !answered.is_empty() {
                        // A template that cannot render the conversation without tools
                        // leaves the turn as the model writes it.
                        // Its tool exchanges as plain turns: left as calls, a small model
                        // copies the call again, as text (docs/tools.md, "A turn").
                        without_tools = messages
                            .iter()
                            .map(|m| m.to_json().ok())
                            .collect::<Option<Vec<_>>>()
                            .map(|json| exchanges_as_text(&json))
                            .and_then(|plain| {
                                let plain: Vec<Value> =
                                    plain.into_iter().map(Value::from).collect();
                                self.render_chat_with(&plain, None, kwargs).ok()
                            });
                    }
                }
                (rendered, "messages")
            }
            GenerationInput::Prompt(prompt) => {
                if request.tools.is_some() {
                    return Err(Error::invalid(
                        "tools",
                        "`tools` are for chat messages, not a text prompt",
                    ));
                }
                (prompt.clone(), "prompt")
            }
        };
        self.check_cannot_fit(prompt.len(), prompt_param)?;
        let tokens = self.tokenize(&prompt);
        if tokens.is_empty() {
            return Err(Error::invalid(
                prompt_param,
                format!("`{prompt_param}` must not be empty"),
            ));
        }
        let n_prompt = tokens.len();
        let n_ctx = self.n_ctx as usize;
        if n_prompt >= n_ctx {
            return Err(Error::context_length(
                format!(
                    "This model's maximum context length is {n_ctx} tokens. However, your \
                     {prompt_param} resulted in {n_prompt} tokens. Please reduce the length of \
                     the {prompt_param}."
                ),
                prompt_param,
            ));
        }
        let max_tokens = match request.max_tokens {
            Some(max) if n_prompt.saturating_add(max) > n_ctx => {
                return Err(Error::context_length(
                    format!(
                        "This model's maximum context length is {n_ctx} tokens. However, you \
                         requested {} tokens ({n_prompt} in the {prompt_param}, {max} in the \
                         completion). Please reduce the length of the {prompt_param} or \
                         completion.",
                        n_prompt.saturating_add(max)
                    ),
                    prompt_param,
                ))
            }
            Some(max) => max,
            None => n_ctx - n_prompt,
        };
        let (grammar, lazy) = self.constraints(&request)?;
        // A model that thinks in `<think>` tags, free to (no grammar from its first token): its
        // thoughts apart from its answer, from the start if the prompt opened them.
        let thinking = (self.thinks
            && request.split_thinking
            && grammar.is_none()
            && prompt_param == "messages")
            .then(|| ThinkSplitter::new(prompt_opens_thoughts(&prompt)));
        // A tool call's grammar, started when `<tool_call>` appears, would start inside the
        // thoughts too (and take them for a call): a thinking model's calls are parsed as it
        // writes them, unconstrained.
        let lazy = lazy.filter(|_| thinking.is_none());
        let sampler = self.sampler(&request.sampling, &logit_bias);
        let cancelled = Arc::new(AtomicBool::new(false));
        let (events, event_rx) = mpsc::channel();
        let calls = calling.map(|tools| {
            let names = tools.list.iter().map(|t| t.name.clone()).collect();
            let rules = TurnRules {
                parallel: request.parallel_tool_calls,
                end_on_repeat: !request.allow_repeated_tool_calls,
            };
            ToolCallDeltas::new(ToolCallParser::new(names), rules)
                .with_answered(std::mem::take(&mut answered))
        });
        // The answer generated instead starts its own thoughts (its prompt may open them).
        let restart_thinking = thinking
            .as_ref()
            .and(without_tools.as_deref())
            .map(|prompt| ThinkSplitter::new(prompt_opens_thoughts(prompt)));
        let answer_instead = without_tools.and_then(|prompt| {
            self.answer_instead(
                &prompt,
                AnswerInstead {
                    max_tokens: request.max_tokens,
                    sampling: &request.sampling,
                    logit_bias: &logit_bias,
                    logprobs: request.logprobs,
                    stop: request.stop.clone(),
                },
            )
        });
        let finish_now = Arc::new(AtomicBool::new(false));
        let job = Job {
            prompt: tokens,
            max_tokens,
            stop: request.stop,
            sampler,
            grammar,
            lazy,
            logprobs: request.logprobs,
            events,
            cancelled: Arc::clone(&cancelled),
            finish_now: Arc::clone(&finish_now),
            arrived: std::time::Instant::now(),
        };
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        self.jobs.send(job).map_err(|_| {
            self.counters.queued.fetch_sub(1, Ordering::Relaxed);
            Error::model(format!(
                "The llama.cpp scheduler of `{}` has stopped",
                self.tag
            ))
        })?;
        Ok(TextStream {
            events: event_rx,
            cancel_link: flag_on_cancel(cancel, &cancelled),
            cancel: cancel.clone(),
            cancelled,
            finish_now,
            done: false,
            thinking,
            restart_thinking,
            calls,
            logprobs: request.logprobs.is_some(),
            answer_instead,
            given_up: [0; 3],
        })
    }

    /// The grammar a request's output must follow from its first token, and the one that
    /// starts when the model opens a tool call of its own accord (`tool_choice` auto).
    fn constraints(&self, request: &GenerationRequest) -> Result<(Option<Matcher>, Option<Lazy>)> {
        let model = &self.model;
        let calling = request.callable_tools();
        if let (Some(format), Some(_)) = (&request.response_format, calling) {
            return Err(Error::invalid(
                "response_format",
                format!(
                    "`response_format` {} cannot be combined with `tools` (the reply is either \
                     calls or JSON); pass `tool_choice: \"none\"` or leave one out",
                    format.kind
                ),
            ));
        }
        if let Some(format) = &request.response_format {
            let grammar = constrain::json_schema(&format.schema);
            let matcher = self.grammars.matcher(model, grammar, format.param)?;
            return Ok((Some(matcher), None));
        }
        let Some(tools) = calling else {
            return Ok((None, None));
        };
        let specs: Vec<ToolSpec> = tools
            .list
            .iter()
            .map(|t| ToolSpec {
                name: t.name.clone(),
                parameters: t.parameters.clone(),
            })
            .collect();
        self.grammars.check_tools(model, &specs)?;
        let parallel = request.parallel_tool_calls;
        let forced = |specs: &[ToolSpec]| -> Result<Matcher> {
            let grammar = constrain::tool_calls(specs, TOOL_FORMAT, parallel, false);
            self.grammars.matcher(model, grammar, "tools")
        };
        match &request.tool_choice {
            ToolChoice::None => Ok((None, None)),
            ToolChoice::Required => Ok((Some(forced(&specs)?), None)),
            ToolChoice::Function(name) => {
                let spec = specs.iter().find(|t| &t.name == name).ok_or_else(|| {
                    Error::invalid(
                        "tool_choice",
                        format!(
                            "`tool_choice` names the function `{}`, which is not in `tools`",
                            crate::error::shown(name)
                        ),
                    )
                })?;
                Ok((Some(forced(std::slice::from_ref(spec))?), None))
            }
            ToolChoice::Auto => {
                let grammar = constrain::tool_calls(&specs, TOOL_FORMAT, parallel, true);
                let matcher = self.grammars.matcher(model, grammar, "tools")?;
                Ok((
                    None,
                    Some(Lazy {
                        trigger: TOOL_FORMAT.open,
                        matcher,
                    }),
                ))
            }
        }
    }

    /// The sampler chain for one request, in llama.cpp's order: logit biases, penalties, then
    /// greedy (temperature 0) or top-k, top-p, min-p, temperature and a seeded draw. What the
    /// request leaves unset is the model's recommended sampling ([`SamplingDefaults`]).
    pub(super) fn sampler(
        &self,
        given: &SamplingParams,
        biases: &[LlamaLogitBias],
    ) -> LlamaSampler {
        let defaults = &self.sampling;
        let temperature = given.temperature.unwrap_or(defaults.temperature);
        let top_p = given.top_p.unwrap_or(defaults.top_p);
        let top_k = given.top_k.map_or(defaults.top_k, i64::from);
        let min_p = given.min_p.unwrap_or(defaults.min_p);
        // Greedy is the most likely token: a model's default penalty applies only when
        // sampling; a penalty the request gives applies always.
        let repetition = given.repetition_penalty.unwrap_or(if temperature == 0.0 {
            1.0
        } else {
            defaults.repetition_penalty
        });
        let (frequency, presence) = (given.frequency_penalty, given.presence_penalty);
        let mut chain = Vec::new();
        if !biases.is_empty() {
            chain.push(LlamaSampler::logit_bias(self.model.n_vocab(), biases));
        }
        if frequency != 0.0 || presence != 0.0 || repetition != 1.0 {
            // OpenAI's penalties count every token generated so far: look back over the whole
            // context (llama.cpp's sampler counts what it has accepted: the generated tokens).
            chain.push(LlamaSampler::penalties(
                self.model.n_vocab(),
                self.n_ctx as i32,
                repetition as f32,
                frequency as f32,
                presence as f32,
            ));
        }
        if temperature == 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            if top_k > 0 {
                chain.push(LlamaSampler::top_k(top_k.min(i32::MAX as i64) as i32));
            }
            if top_p < 1.0 {
                chain.push(LlamaSampler::top_p(top_p as f32, 1));
            }
            if min_p > 0.0 {
                chain.push(LlamaSampler::min_p(min_p as f32, 1));
            }
            chain.push(LlamaSampler::temp(temperature as f32));
            let seed = match given.seed {
                Some(seed) => (seed as u64 ^ (seed as u64 >> 32)) as u32,
                None => random_seed(),
            };
            chain.push(LlamaSampler::dist(seed));
        }
        LlamaSampler::chain_simple(chain)
    }
}

impl LlamaPredictor {
    /// The request's `chat_template_kwargs`, with `reasoning_effort` mapped onto what the
    /// template reads (a kwarg the caller set wins): Qwen3's and SmolLM3's `enable_thinking`
    /// (off for `none` and `minimal`), gpt-oss's `reasoning_effort` (low, medium, high). A model
    /// that always thinks (DeepSeek R1) takes any effort but `none`; one that does not think
    /// takes none.
    fn template_kwargs(&self, request: &GenerationRequest) -> Result<Option<serde_json::Value>> {
        use crate::chat::template::ThinkingSwitch as S;
        let given = request.chat_template_kwargs.clone();
        let Some(effort) = request.reasoning_effort.as_deref() else {
            return Ok(given);
        };
        let mut kwargs = match given {
            Some(serde_json::Value::Object(kwargs)) => kwargs,
            _ => serde_json::Map::new(),
        };
        let refused = |why: &str| {
            Err(Error::invalid(
                "reasoning_effort",
                format!(
                    "The model `{}` takes no `reasoning_effort` '{}': {why}",
                    crate::error::shown(&self.tag),
                    crate::error::shown(effort)
                ),
            ))
        };
        match self.thinking_switch {
            S::EnableThinking => {
                let on = !matches!(effort, "none" | "minimal");
                kwargs
                    .entry("enable_thinking")
                    .or_insert(serde_json::Value::Bool(on));
            }
            S::ReasoningEffort if effort == "none" => {
                return refused(
                    "it always thinks (its chat template's reasoning_effort is low, \
                                medium or high)",
                )
            }
            S::ReasoningEffort => {
                let level = match effort {
                    "minimal" | "low" => "low",
                    "medium" => "medium",
                    _ => "high",
                };
                kwargs
                    .entry("reasoning_effort")
                    .or_insert(serde_json::Value::from(level));
            }
            S::None if self.thinks && effort != "none" => {}
            S::None if self.thinks => {
                return refused("it always thinks (its chat template has no switch to turn it off)")
            }
            S::None => {
                return refused(
                    "its chat template has no thinking to steer (no <think> tags, no \
                     enable_thinking or reasoning_effort variable)",
                )
            }
        }
        Ok(Some(serde_json::Value::Object(kwargs)))
    }
}
