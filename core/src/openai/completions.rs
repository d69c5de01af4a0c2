//! `client.completions` (legacy text completion): create and stream.

use super::common::{check_n, check_stream_options, next_unless_stopped, reject_other_fields};
use super::generation::{next_running, next_step, repetition_penalty, start_choices, Generation};
use super::types::{Completion, CompletionChoice, CompletionRequest, Prompt, StopSequences, Usage};
use crate::error::{Error, Result};
use crate::predict::{random_id, unix_now, Annotation, Cancel, GenerationOptions};
use crate::registry::Registry;
use crate::value::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// `client.completions` (legacy text completion).
#[derive(Clone)]
pub struct Completions {
    registry: Arc<Registry>,
    /// What stops its calls ([`crate::Client::with_cancel`]).
    pub(crate) cancel: Cancel,
}

impl Completions {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Completions {
            registry,
            cancel: Cancel::default(),
        }
    }
}

impl Completions {
    /// A whole `text_completion`. `request.stream` must not be true (use [`Self::stream`]).
    /// Its cancel ([`crate::Client::with_cancel`]) stops it at the next token.
    pub fn create(&self, request: &CompletionRequest) -> Result<Completion> {
        if request.stream == Some(true) {
            return Err(Error::invalid(
                "stream",
                "`stream: true` was given to create(); call stream() instead",
            ));
        }
        let mut chunks = self.start(request, true)?;
        let mut completion = Completion {
            id: chunks.id.clone(),
            object: "text_completion".into(),
            created: chunks.created,
            model: request.model.clone(),
            choices: Vec::new(),
            usage: None,
        };
        let mut choices: Vec<CompletionChoice> = (0..chunks.runs.len())
            .map(|index| CompletionChoice {
                text: String::new(),
                index: index as u32,
                logprobs: chunks.logprobs.then(|| {
                    serde_json::json!({
                        "tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []
                    })
                }),
                finish_reason: None,
            })
            .collect();
        while let Some(chunk) = next_unless_stopped(&mut chunks, &self.cancel)? {
            for choice in chunk.choices {
                let Some(folded) = choices.get_mut(choice.index as usize) else {
                    continue;
                };
                folded.text.push_str(&choice.text);
                folded.finish_reason = choice.finish_reason.or(folded.finish_reason.take());
                if let (Some(all), Some(more)) = (&mut folded.logprobs, choice.logprobs) {
                    for key in ["tokens", "token_logprobs", "top_logprobs", "text_offset"] {
                        if let (Some(list), Some(items)) =
                            (all[key].as_array_mut(), more[key].as_array())
                        {
                            list.extend(items.iter().cloned());
                        }
                    }
                }
            }
            completion.usage = chunk.usage.or(completion.usage);
        }
        completion.choices = choices;
        Ok(completion)
    }

    /// A stream of `text_completion` chunks. Dropping it stops generation.
    pub fn stream(&self, request: &CompletionRequest) -> Result<CompletionStream> {
        let include_usage = request
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage);
        self.start(request, include_usage)
    }

    fn start(&self, request: &CompletionRequest, include_usage: bool) -> Result<CompletionStream> {
        reject_other_fields(&request.other)?;
        check_stream_options(request.stream_options.as_ref())?;
        let n = check_n(request.n)?;
        if let Some(k) = request.logprobs.filter(|k| !(0..=5).contains(k)) {
            return Err(Error::invalid(
                "logprobs",
                format!("Invalid value for `logprobs`: {k}; it must be from 0 to 5"),
            ));
        }
        let prompt = match &request.prompt {
            Prompt::Text(text) => text.clone(),
            Prompt::Many(items) => match items.as_slice() {
                [serde_json::Value::String(text)] => text.clone(),
                _ => {
                    return Err(Error::invalid(
                        "prompt",
                        "`prompt` must be a string (or a list holding one string); batches and token arrays are not supported",
                    ))
                }
            },
        };
        let options = GenerationOptions {
            // The OpenAI API's default for text completions.
            max_tokens: Some(("max_tokens", request.max_tokens.unwrap_or(16))),
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            stop: request.stop.clone().map(StopSequences::into_vec),
            frequency_penalty: request.frequency_penalty,
            presence_penalty: request.presence_penalty,
            top_k: request.top_k,
            min_p: request.min_p,
            repetition_penalty: repetition_penalty(
                request.repetition_penalty,
                request.repeat_penalty,
            )?,
            logprobs: request.logprobs,
            logit_bias: request
                .logit_bias
                .clone()
                .filter(|b| !b.is_empty())
                .map(serde_json::Value::Object),
            ..GenerationOptions::default()
        };
        // Offsets count characters of the prompt and the completion, as llama-cpp-python's.
        let prompt_chars = prompt.chars().count();
        let runs = start_choices(
            &self.registry,
            &request.model,
            Annotation::Prompt,
            "prompt",
            Value::String(prompt),
            &crate::media::ChatMedia::default(),
            "text completions",
            options,
            n,
            &self.cancel,
        )?;
        Ok(CompletionStream {
            id: random_id("cmpl-"),
            created: unix_now(),
            model: request.model.clone(),
            offsets: vec![prompt_chars; runs.len()],
            runs: runs.into_iter().map(Some).collect(),
            next_run: 0,
            include_usage,
            logprobs: request.logprobs.is_some(),
            pending: VecDeque::new(),
            usage: Usage::default(),
        })
    }
}

/// A stream of `text_completion` chunks: text chunks, a last one per choice with the finish
/// reason, then (if asked) a usage chunk with no choices.
pub struct CompletionStream {
    pub id: String,
    pub created: i64,
    model: String,
    runs: Vec<Option<Generation>>,
    next_run: usize,
    include_usage: bool,
    logprobs: bool,
    /// Per choice: the character offset of its next token (prompt included).
    offsets: Vec<usize>,
    pending: VecDeque<Completion>,
    usage: Usage,
}

impl CompletionStream {
    fn chunk(&self, choices: Vec<CompletionChoice>, usage: Option<Usage>) -> Completion {
        Completion {
            id: self.id.clone(),
            object: "text_completion".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
        }
    }

    /// Chat-shaped token log probabilities in the legacy completions shape.
    fn legacy_logprobs(
        &mut self,
        index: usize,
        entries: &[serde_json::Value],
    ) -> serde_json::Value {
        let (mut tokens, mut token_logprobs, mut top, mut offsets) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for entry in entries {
            let token = entry["token"].as_str().unwrap_or_default().to_string();
            offsets.push(self.offsets[index]);
            self.offsets[index] += token.chars().count();
            tokens.push(token);
            token_logprobs.push(entry["logprob"].clone());
            let alternatives: serde_json::Map<String, serde_json::Value> = entry["top_logprobs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|alt| {
                    (
                        alt["token"].as_str().unwrap_or_default().to_string(),
                        alt["logprob"].clone(),
                    )
                })
                .collect();
            top.push(serde_json::Value::Object(alternatives));
        }
        serde_json::json!({
            "tokens": tokens, "token_logprobs": token_logprobs,
            "top_logprobs": top, "text_offset": offsets,
        })
    }
}

impl Iterator for CompletionStream {
    type Item = Result<Completion>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(Ok(chunk));
            }
            let Some(index) = next_running(&self.runs, &mut self.next_run) else {
                if std::mem::take(&mut self.include_usage) {
                    return Some(Ok(self.chunk(Vec::new(), Some(self.usage))));
                }
                return None;
            };
            let step = match next_step(&mut self.runs[index])? {
                Ok(step) => step,
                Err(e) => {
                    self.runs.iter_mut().for_each(|run| *run = None);
                    self.include_usage = false;
                    return Some(Err(e));
                }
            };
            let finished = step.finish_reason.is_some();
            if !step.text.is_empty() || finished || (self.logprobs && !step.logprobs.is_empty()) {
                let logprobs = self
                    .logprobs
                    .then(|| self.legacy_logprobs(index, &step.logprobs));
                let choice = CompletionChoice {
                    text: step.text,
                    index: index as u32,
                    logprobs,
                    finish_reason: step.finish_reason,
                };
                self.pending.push_back(self.chunk(vec![choice], None));
            }
            if finished {
                self.runs[index] = None;
                if let Some(usage) = step.usage {
                    self.usage.add_choice(usage);
                }
            }
        }
    }
}
