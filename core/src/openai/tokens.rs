//! `client.tokens`: a text model's own tokenizer, as llama.cpp's server offers it
//! (`POST /tokenize`, `POST /detokenize`): text to token ids (with each token's piece when
//! asked), and ids back to text.

use super::types::OtherFields;
use crate::error::{shown, Error, Result};
use crate::predict::Tokenizer;
use crate::registry::Registry;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use std::sync::Arc;

/// The most text one `tokenize` reads (64 MiB): llama.cpp counts a text's bytes in an `i32`.
pub const MAX_TOKENIZE_BYTES: usize = 64 << 20;

/// The most ids one `detokenize` reads.
pub const MAX_DETOKENIZE_TOKENS: usize = 16 << 20;

/// `tokenize`'s arguments (llama.cpp server's names).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TokenizeRequest {
    pub model: String,
    /// The text.
    pub content: String,
    /// Whether to add the tokens the model puts around a prompt (BOS); default false.
    #[serde(default)]
    pub add_special: bool,
    /// Whether special tokens written in the text (`<|im_start|>`) are read as such; default
    /// true, as a chat template's prompt is read.
    #[serde(default = "yes")]
    pub parse_special: bool,
    /// Whether each token comes with its piece: `{id, piece}`, the piece a string, or its
    /// bytes where they are not UTF-8 on their own.
    #[serde(default)]
    pub with_pieces: bool,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

fn yes() -> bool {
    true
}

/// `detokenize`'s arguments.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DetokenizeRequest {
    pub model: String,
    /// Token ids, each below the model's vocabulary size.
    pub tokens: Vec<i64>,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

impl TokenizeRequest {
    pub fn new(model: impl Into<String>, content: impl Into<String>) -> Self {
        TokenizeRequest {
            model: model.into(),
            content: content.into(),
            parse_special: true,
            ..Default::default()
        }
    }

    /// Reads a request from JSON text, errors naming the field.
    pub fn from_json(json: &str) -> Result<Self> {
        let request: Self = super::types::from_json(json)?;
        reject_other(&request.other)?;
        Ok(request)
    }
}

impl DetokenizeRequest {
    pub fn new(model: impl Into<String>, tokens: impl IntoIterator<Item = i64>) -> Self {
        DetokenizeRequest {
            model: model.into(),
            tokens: tokens.into_iter().collect(),
            ..Default::default()
        }
    }

    /// Reads a request from JSON text, errors naming the field.
    pub fn from_json(json: &str) -> Result<Self> {
        let request: Self = super::types::from_json(json)?;
        reject_other(&request.other)?;
        Ok(request)
    }
}

fn reject_other(other: &OtherFields) -> Result<()> {
    match other.iter().find(|(_, v)| !v.is_null()) {
        Some((field, _)) => Err(Error::invalid(
            field.clone(),
            format!("Unrecognized request argument supplied: {}", shown(field)),
        )),
        None => Ok(()),
    }
}

/// `client.tokens`.
#[derive(Clone)]
pub struct Tokens {
    registry: Arc<Registry>,
}

impl Tokens {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Tokens { registry }
    }

    /// `{"tokens": [id, ...]}`, or with `with_pieces` `{"tokens": [{"id", "piece"}, ...]}`.
    pub fn tokenize(&self, request: &TokenizeRequest) -> Result<Json> {
        if request.content.len() > MAX_TOKENIZE_BYTES {
            return Err(Error::invalid(
                "content",
                format!(
                    "`content` is {} bytes; one call tokenizes at most {MAX_TOKENIZE_BYTES}",
                    request.content.len()
                ),
            ));
        }
        self.with_tokenizer(&request.model, |tokenizer| {
            let ids =
                tokenizer.tokenize(&request.content, request.add_special, request.parse_special);
            let tokens: Vec<Json> = match request.with_pieces {
                false => ids.into_iter().map(Json::from).collect(),
                true => ids
                    .into_iter()
                    .map(|id| {
                        let bytes = tokenizer.piece(id);
                        let piece = match String::from_utf8(bytes) {
                            Ok(text) => Json::from(text),
                            Err(e) => Json::from(e.into_bytes()),
                        };
                        json!({"id": id, "piece": piece})
                    })
                    .collect(),
            };
            Ok(json!({ "tokens": tokens }))
        })
    }

    /// `{"content": text}`: the tokens' pieces joined (special tokens as their text), bytes
    /// that are not UTF-8 replaced by U+FFFD.
    pub fn detokenize(&self, request: &DetokenizeRequest) -> Result<Json> {
        if request.tokens.len() > MAX_DETOKENIZE_TOKENS {
            return Err(Error::invalid(
                "tokens",
                format!(
                    "`tokens` holds {} ids; one call reads at most {MAX_DETOKENIZE_TOKENS}",
                    request.tokens.len()
                ),
            ));
        }
        self.with_tokenizer(&request.model, |tokenizer| {
            let size = tokenizer.vocab_size();
            let ids = request
                .tokens
                .iter()
                .enumerate()
                .map(|(i, &id)| {
                    u32::try_from(id)
                        .ok()
                        .filter(|&id| (id as usize) < size)
                        .ok_or_else(|| {
                            Error::invalid(
                                format!("tokens[{i}]"),
                                format!(
                                    "Token id {id} is not in `{}`'s vocabulary (ids 0 to {})",
                                    shown(&request.model),
                                    size.saturating_sub(1)
                                ),
                            )
                        })
                })
                .collect::<Result<Vec<u32>>>()?;
            let text = String::from_utf8_lossy(&tokenizer.detokenize(&ids)).into_owned();
            Ok(json!({ "content": text }))
        })
    }

    fn with_tokenizer(
        &self,
        model: &str,
        work: impl FnOnce(&dyn Tokenizer) -> Result<Json>,
    ) -> Result<Json> {
        if model.is_empty() {
            return Err(Error::invalid(
                "model",
                "Missing required parameter: 'model'",
            ));
        }
        let predictor = self.registry.get(model)?;
        match predictor.tokenizer() {
            Some(tokenizer) => work(tokenizer),
            None => Err(Error::invalid(
                "model",
                format!(
                    "The model `{}` has no tokenizer to offer: tokenize and detokenize take a \
                     llama.cpp text model (a GGUF chat or completion model)",
                    shown(model)
                ),
            )),
        }
    }
}
