//! A request's sampling options as a llama.cpp sampler chain, and the log probabilities of
//! what it picked.

use crate::config::SamplingDefaults;
use crate::predict::{TokenLogprob, TopLogprob};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

/// The sampling a model uses where a request leaves it unset, resolved at load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Sampling {
    pub(super) temperature: f64,
    pub(super) top_p: f64,
    pub(super) top_k: i64,
    pub(super) min_p: f64,
    pub(super) repetition_penalty: f64,
}

impl Sampling {
    /// llama.cpp's server defaults, for what neither the config nor the GGUF sets.
    const LLAMA_CPP_SERVER: SamplingDefaults = SamplingDefaults {
        temperature: Some(0.8),
        top_p: Some(0.95),
        top_k: Some(40),
        min_p: Some(0.05),
        repetition_penalty: Some(1.0),
    };

    /// Each value from the config's `defaults`, else the GGUF's `general.sampling.*` keys
    /// (written by conversions that know the model's recommendation), else llama.cpp's server
    /// defaults. A GGUF value out of range is ignored.
    pub(super) fn of(model: &LlamaModel, config: &SamplingDefaults) -> Sampling {
        let gguf = |key: &str, min: f64, max: f64| {
            model
                .meta_val_str(&format!("general.sampling.{key}"))
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| (min..=max).contains(v))
        };
        let from_gguf = SamplingDefaults {
            temperature: gguf("temp", 0.0, 2.0),
            top_p: gguf("top_p", 0.0, 1.0),
            top_k: gguf("top_k", 0.0, f64::from(u32::MAX)).map(|k| k as i64),
            min_p: gguf("min_p", 0.0, 1.0),
            repetition_penalty: gguf("penalty_repeat", 0.1, 2.0),
        };
        let d = config.or(from_gguf).or(Self::LLAMA_CPP_SERVER);
        Sampling {
            temperature: d.temperature.unwrap_or(0.8),
            top_p: d.top_p.unwrap_or(0.95),
            top_k: d.top_k.unwrap_or(40),
            min_p: d.min_p.unwrap_or(0.05),
            repetition_penalty: d.repetition_penalty.unwrap_or(1.0),
        }
    }
}

/// Log-softmax over a position's raw logits: the normaliser and the most likely tokens.
pub(super) struct LogitsSummary {
    pub(super) log_sum_exp: f32,
    /// The `top` most likely tokens, most likely first (lower ids first on ties).
    pub(super) top: Vec<(i32, f32)>,
}

impl LogitsSummary {
    pub(super) fn of(logits: &[f32], top: usize) -> Self {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f64 = logits.iter().map(|&l| ((l - max) as f64).exp()).sum();
        let mut best: Vec<(i32, f32)> = Vec::with_capacity(top + 1);
        if top > 0 {
            for (id, &logit) in logits.iter().enumerate() {
                if best.len() == top && best.last().is_some_and(|&(_, l)| logit <= l) {
                    continue;
                }
                let at = best.partition_point(|&(_, l)| l >= logit);
                best.insert(at, (id as i32, logit));
                best.truncate(top);
            }
        }
        LogitsSummary {
            log_sum_exp: max + sum.ln() as f32,
            top: best,
        }
    }

    /// `{token, logprob, bytes, top_logprobs}` for the chosen `token`, as OpenAI reports it.
    pub(super) fn entry(&self, token: LlamaToken, logit: f32, model: &LlamaModel) -> TokenLogprob {
        let describe = |id: i32, logit: f32| {
            let bytes = model.vocab().token_to_piece(LlamaToken(id), false, None);
            TopLogprob {
                token: String::from_utf8_lossy(&bytes).into_owned(),
                logprob: (logit - self.log_sum_exp) as f64,
                bytes,
            }
        };
        let chosen = describe(token.0, logit);
        TokenLogprob {
            token: chosen.token,
            logprob: chosen.logprob,
            bytes: chosen.bytes,
            top_logprobs: self
                .top
                .iter()
                .map(|&(id, logit)| describe(id, logit))
                .collect(),
        }
    }
}

/// A seed for requests that give none: `RandomState` is randomly keyed per process and per call.
pub(super) fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
    hasher.finish() as u32
}
