//! A loaded Whisper model: its two ONNX Runtime sessions, its tokenizer and its token ids.

use super::ct2::Ct2Model;
use super::graphs::{self, Dims, Precision};
use super::languages::ModelLanguages;
use super::mel::MelFilters;
use crate::backends::onnx::ort_error;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use ort::environment::Environment;
use ort::session::Session;
use ort::value::{DynValue, Tensor, TensorRef};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use tokenizers::Tokenizer;

/// The special tokens decoding needs.
#[derive(Debug, Clone, Copy)]
pub struct Special {
    pub eot: u32,
    pub sot: u32,
    pub sot_prev: u32,
    pub no_speech: u32,
    pub no_timestamps: u32,
    pub timestamp_begin: u32,
    /// The task tokens, which follow the language token on a multilingual model.
    pub transcribe: u32,
    pub translate: u32,
}

/// What to write: the speech in its own language, or in English.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Task {
    #[default]
    Transcribe,
    /// Into English (Whisper's `translate` task; multilingual models only).
    Translate,
}

/// `config.json` beside CTranslate2's model.bin (as faster-whisper reads it).
#[derive(Debug, serde::Deserialize)]
struct Ct2Config {
    #[serde(default)]
    alignment_heads: Vec<(usize, usize)>,
    #[serde(default)]
    suppress_ids: Vec<u32>,
    #[serde(default)]
    suppress_ids_begin: Vec<u32>,
}

pub struct WhisperModel {
    pub dims: Dims,
    pub special: Special,
    pub tokenizer: Tokenizer,
    pub suppress: Vec<u32>,
    pub suppress_begin: Vec<u32>,
    pub alignment_heads: usize,
    /// The languages it knows (none listed: English-only).
    pub languages: ModelLanguages,
    pub mel: MelFilters,
    /// Runs are serialised per session (each already uses every core it is given).
    encoder: Mutex<Session>,
    decoder: Mutex<Session>,
}

/// The languages of a model with `vocab` tokens: none for an English-only model (51864
/// tokens); for a multilingual one (51865 and up, as openai-whisper tells them apart) the
/// tokens between `<|startoftranscript|>` and `<|translate|>`, each `<|code|>`: 99 for most
/// checkpoints, 100 from large-v3 on (51866 tokens).
fn languages(
    tokenizer: &Tokenizer,
    special: &Special,
    vocab: usize,
) -> std::result::Result<ModelLanguages, String> {
    if vocab < 51865 {
        return Ok(ModelLanguages::default());
    }
    let expected = vocab - 51765 - 1; // openai-whisper's `num_languages`
    let mut tokens = Vec::new();
    for id in special.sot + 1..special.translate {
        let token = tokenizer.id_to_token(id).unwrap_or_default();
        let code = token
            .strip_prefix("<|")
            .and_then(|t| t.strip_suffix("|>"))
            .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_lowercase()))
            .ok_or_else(|| format!("token {id} (`{token}`) is not a language token"))?;
        tokens.push((id, code.to_string()));
    }
    if tokens.len() != expected {
        return Err(format!(
            "{} language tokens for a multilingual model of {vocab} tokens (expected \
             {expected}): the tokenizer does not belong to the weights",
            tokens.len()
        ));
    }
    Ok(ModelLanguages { tokens })
}

/// `suppress` with the special tokens faster-whisper always suppresses (a conversion whose
/// config.json leaves them out would otherwise sample them as text).
fn with_specials(mut suppress: Vec<u32>, special: &Special, tokenizer: &Tokenizer) -> Vec<u32> {
    let sot_lm = tokenizer.token_to_id("<|startoflm|>");
    suppress.extend(
        [
            special.transcribe,
            special.translate,
            special.sot,
            special.sot_prev,
            special.no_speech,
        ]
        .into_iter()
        .chain(sot_lm),
    );
    suppress.sort_unstable();
    suppress.dedup();
    suppress
}

/// What one decoder run returns.
pub struct Step {
    /// [k, vocab]: the logits at the asked positions.
    pub logits: Vec<f32>,
    /// The self-attention KV cache after this run, to pass to the next.
    pub cache: Vec<DynValue>,
    /// [alignment heads, n, audio ctx] raw cross-attention scores, when asked for.
    pub alignment: Option<Vec<f32>>,
}

fn model_error(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::model(format!("{}: {what}", path.display())).with_code(ErrorCode::ModelFileInvalid)
}

impl WhisperModel {
    /// Loads `dir/model.bin`, `dir/config.json` and `dir/tokenizer.json`.
    pub fn load(
        environment: &Environment,
        dir: &Path,
        threads: usize,
        precision: Precision,
    ) -> Result<Self> {
        let weights = Ct2Model::load(&dir.join("model.bin"))?;
        if !weights.spec.starts_with("WhisperSpec") {
            return Err(model_error(
                &dir.join("model.bin"),
                format!(
                    "a `{}` model, not Whisper: {}",
                    weights.spec,
                    super::ct2::WHAT_INGLE_READS
                ),
            ));
        }
        let config_path = dir.join("config.json");
        let config: Ct2Config = std::fs::read_to_string(&config_path)
            .map_err(|e| model_error(&config_path, e))
            .and_then(|text| {
                serde_json::from_str(&text).map_err(|e| model_error(&config_path, e))
            })?;
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| model_error(&tokenizer_path, e))?;
        let id = |token: &str| {
            tokenizer
                .token_to_id(token)
                .ok_or_else(|| model_error(&tokenizer_path, format!("no token `{token}`")))
        };
        let no_timestamps = id("<|notimestamps|>")?;
        let special = Special {
            eot: id("<|endoftext|>")?,
            sot: id("<|startoftranscript|>")?,
            sot_prev: id("<|startofprev|>")?,
            no_speech: id("<|nospeech|>").or_else(|_| id("<|nocaptions|>"))?,
            no_timestamps,
            timestamp_begin: no_timestamps + 1,
            transcribe: id("<|transcribe|>")?,
            translate: id("<|translate|>")?,
        };
        let dims = Dims::read(&weights)?;
        if (special.timestamp_begin as usize + 1501) != dims.vocab {
            return Err(model_error(
                &tokenizer_path,
                format!(
                    "timestamps start at token {} but the model has {} tokens (expected 1501 \
                     timestamps): the tokenizer does not belong to the weights",
                    special.timestamp_begin, dims.vocab
                ),
            ));
        }
        let languages = languages(&tokenizer, &special, dims.vocab)
            .map_err(|what| model_error(&tokenizer_path, what))?;
        let heads = &config.alignment_heads;
        if let Some((l, h)) = heads
            .iter()
            .find(|(l, h)| *l >= dims.decoder_layers || *h >= dims.heads)
        {
            return Err(model_error(
                &config_path,
                format!("alignment head ({l}, {h}) is not in the model"),
            ));
        }
        // The default of openai-whisper when a model has none listed: the second half of
        // the decoder's layers, every head.
        let alignment_heads: Vec<(usize, usize)> = if heads.is_empty() {
            (dims.decoder_layers / 2..dims.decoder_layers)
                .flat_map(|l| (0..dims.heads).map(move |h| (l, h)))
                .collect()
        } else {
            heads.clone()
        };
        let encoder_graph = graphs::encoder(&weights, dims, precision)?;
        let decoder_graph = graphs::decoder(&weights, dims, precision, &alignment_heads)?;
        drop(weights);
        let session = |graph: &[u8], what: &str| -> Result<Session> {
            let loading = || format!("Cannot build the Whisper {what} from {}", dir.display());
            let graph = crate::backends::onnx::Graph::Memory(graph);
            crate::backends::onnx::load_session(environment, threads, false, &loading(), graph)
        };
        let encoder = session(&encoder_graph, "encoder")?;
        drop(encoder_graph);
        let decoder = session(&decoder_graph, "decoder")?;
        let suppress = with_specials(config.suppress_ids, &special, &tokenizer);
        Ok(WhisperModel {
            dims,
            special,
            tokenizer,
            suppress,
            suppress_begin: config.suppress_ids_begin,
            alignment_heads: alignment_heads.len(),
            languages,
            mel: MelFilters::new(dims.n_mels),
            encoder: Mutex::new(encoder),
            decoder: Mutex::new(decoder),
        })
    }

    /// Runs the encoder on one window's log-mel [n_mels, 3000]: the cross-attention keys and
    /// values of every decoder layer.
    pub fn encode(&self, mel: &[f32]) -> Result<Vec<DynValue>> {
        let running = "Cannot run the Whisper encoder";
        let frames = 2 * self.dims.n_audio_ctx;
        let input = TensorRef::from_array_view(([1, self.dims.n_mels, frames], mel))
            .map_err(ort_error(running))?;
        let mut session = self.encoder.lock().unwrap_or_else(PoisonError::into_inner);
        let mut outputs = session
            .run(ort::inputs!["mel" => input])
            .map_err(ort_error(running))?;
        let mut cross = Vec::with_capacity(2 * self.dims.decoder_layers);
        for layer in 0..self.dims.decoder_layers {
            for kv in ["cross_k", "cross_v"] {
                let value = outputs
                    .remove(format!("{kv}{layer}"))
                    .ok_or_else(|| Error::internal(format!("the encoder has no {kv}{layer}")))?;
                cross.push(value);
            }
        }
        Ok(cross)
    }

    /// An empty self-attention cache, for the first run on a window.
    pub fn empty_cache(&self) -> Result<Vec<DynValue>> {
        let shape = [1usize, self.dims.heads, 0, self.dims.head_dim()];
        (0..2 * self.dims.decoder_layers)
            .map(|_| {
                Tensor::<f32>::from_array((shape, Vec::<f32>::new()))
                    .map(|t| t.into_dyn())
                    .map_err(ort_error("Cannot make the Whisper decoder cache"))
            })
            .collect()
    }

    /// Runs the decoder on `tokens` after the cached ones, returning logits at `positions`
    /// (indices into `tokens`).
    pub fn decode(
        &self,
        tokens: &[i64],
        positions: &[i64],
        cache: &[DynValue],
        cross: &[DynValue],
        want_alignment: bool,
    ) -> Result<Step> {
        let running = "Cannot run the Whisper decoder";
        let layers = self.dims.decoder_layers;
        let mut inputs: Vec<(std::borrow::Cow<str>, ort::session::SessionInputValue)> = vec![
            (
                "tokens".into(),
                TensorRef::from_array_view(([1, tokens.len()], tokens))
                    .map_err(ort_error(running))?
                    .into(),
            ),
            (
                "positions".into(),
                TensorRef::from_array_view(([positions.len()], positions))
                    .map_err(ort_error(running))?
                    .into(),
            ),
        ];
        for layer in 0..layers {
            inputs.push((format!("past_k{layer}").into(), (&cache[2 * layer]).into()));
            inputs.push((
                format!("past_v{layer}").into(),
                (&cache[2 * layer + 1]).into(),
            ));
            inputs.push((format!("cross_k{layer}").into(), (&cross[2 * layer]).into()));
            inputs.push((
                format!("cross_v{layer}").into(),
                (&cross[2 * layer + 1]).into(),
            ));
        }
        let mut session = self.decoder.lock().unwrap_or_else(PoisonError::into_inner);
        let mut outputs = session.run(inputs).map_err(ort_error(running))?;
        let (_, logits) = outputs["logits"]
            .try_extract_tensor::<f32>()
            .map_err(ort_error(running))?;
        let logits = logits.to_vec();
        let alignment = if want_alignment {
            let (_, scores) = outputs["alignment"]
                .try_extract_tensor::<f32>()
                .map_err(ort_error(running))?;
            Some(scores.to_vec())
        } else {
            None
        };
        let mut next = Vec::with_capacity(2 * layers);
        for layer in 0..layers {
            for kv in ["present_k", "present_v"] {
                next.push(
                    outputs.remove(format!("{kv}{layer}")).ok_or_else(|| {
                        Error::internal(format!("the decoder has no {kv}{layer}"))
                    })?,
                );
            }
        }
        Ok(Step {
            logits,
            cache: next,
            alignment,
        })
    }

    /// The tokens decoding starts with: `<|startoftranscript|>` on an English-only model;
    /// `<|startoftranscript|><|fr|><|transcribe|>` on a multilingual one (English when no
    /// language is known yet).
    pub fn sot_sequence(&self, language: Option<&str>, task: Task) -> Result<Vec<u32>> {
        let special = self.special;
        if !self.languages.multilingual() {
            return Ok(vec![special.sot]);
        }
        let code = language.unwrap_or("en");
        let language = self
            .languages
            .token(code)
            .ok_or_else(|| Error::internal(format!("the model has no language `{code}`")))?;
        let task = match task {
            Task::Transcribe => special.transcribe,
            Task::Translate => special.translate,
        };
        Ok(vec![special.sot, language, task])
    }

    /// The language spoken in a window whose encoder output is `cross`, as Whisper detects
    /// it: the likeliest language token after `<|startoftranscript|>`, with its probability
    /// among the model's languages. A multilingual model only.
    pub fn detect_language(&self, cross: &[DynValue]) -> Result<(String, f64)> {
        let step = self.decode(
            &[self.special.sot as i64],
            &[0],
            &self.empty_cache()?,
            cross,
            false,
        )?;
        let languages = &self.languages.tokens;
        let logits: Vec<f64> = languages
            .iter()
            .map(|(token, _)| f64::from(step.logits[*token as usize]))
            .collect();
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = logits.iter().map(|l| (l - max).exp()).sum();
        let (best, _) =
            logits
                .iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |(bi, bl), (i, &l)| {
                    if l > bl {
                        (i, l)
                    } else {
                        (bi, bl)
                    }
                });
        let code = languages
            .get(best)
            .map(|(_, code)| code.clone())
            .ok_or_else(|| Error::internal("language detection on a model with no languages"))?;
        Ok((code, (logits[best] - max).exp() / total))
    }

    /// The text of text tokens (timestamps and other special tokens left out).
    pub fn text(&self, tokens: &[u32]) -> String {
        let text: Vec<u32> = tokens
            .iter()
            .copied()
            .filter(|t| *t < self.special.eot)
            .collect();
        self.tokenizer.decode(&text, false).unwrap_or_default()
    }

    /// The tokens of `text` (no special tokens added).
    pub fn encode_text(&self, text: &str) -> Vec<u32> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default()
    }
}
