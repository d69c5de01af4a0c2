//! `client.tokens`: a text model's own tokenizer, as llama.cpp's server offers it
//! (`POST /tokenize`, `POST /detokenize`): text to token ids (with each token's piece when
//! asked), and ids back to text.

use super::types::OtherFields;
use crate::error::{shown, Error, Result};
use crate::predict::Tokenizer;
use crate::registry::Registry;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The most text one `tokenize` reads (64 MiB): llama.cpp counts a text's bytes in an `i32`.
pub const MAX_TOKENIZE_BYTES: usize = 64 << 20;

/// The most ids one `detokenize` reads.
pub const MAX_DETOKENIZE_TOKENS: usize = 16 << 20;

/// The most text one `detokenize` writes (64 MiB): llama.cpp counts it in an `i32`, and a sum
/// past that would wrap.
pub const MAX_DETOKENIZED_BYTES: usize = 64 << 20;

/// The most tokens one `tokenize` gives with their pieces (each piece is an allocation).
pub const MAX_PIECES: usize = 1 << 20;

/// `tokenize`'s arguments (llama.cpp server's names).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenizeRequest {
    /// The model whose tokenizer to use; default: the default chat model (llama.cpp's server
    /// serves one model, so its clients name none).
    #[serde(default)]
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

impl Default for TokenizeRequest {
    /// No text; special tokens read as such (`parse_special`), as the serde default.
    fn default() -> Self {
        TokenizeRequest {
            model: String::new(),
            content: String::new(),
            add_special: false,
            parse_special: true,
            with_pieces: false,
            other: OtherFields::default(),
        }
    }
}

/// What `tokenize` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenizeResponse {
    pub tokens: TokenList,
}

/// The ids, or with `with_pieces` each id with its piece.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TokenList {
    Ids(Vec<u32>),
    Pieces(Vec<TokenPiece>),
}

/// A token with its piece: its text, or its bytes where they are not UTF-8 on their own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenPiece {
    pub id: u32,
    pub piece: Piece,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Piece {
    Text(String),
    Bytes(Vec<u8>),
}

/// What `detokenize` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetokenizeResponse {
    pub content: String,
}

/// `detokenize`'s arguments.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DetokenizeRequest {
    /// As [`TokenizeRequest::model`].
    #[serde(default)]
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
            ..Default::default()
        }
    }

    /// Reads a request from JSON text, errors naming the field.
    pub fn from_json(json: &str) -> Result<Self> {
        read(json, |request: &Self| &request.other)
    }

    /// The model whose tokenizer reads it: the one named, or the default chat model.
    pub fn model_name(&self) -> &str {
        tokenizer_model(&self.model)
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
        read(json, |request: &Self| &request.other)
    }

    /// As [`TokenizeRequest::model_name`].
    pub fn model_name(&self) -> &str {
        tokenizer_model(&self.model)
    }
}

/// A request read from JSON text, its unknown fields refused by name.
fn read<T: serde::de::DeserializeOwned>(json: &str, other: fn(&T) -> &OtherFields) -> Result<T> {
    let request: T = super::types::from_json(json)?;
    match other(&request).iter().find(|(_, v)| !v.is_null()) {
        Some((field, _)) => Err(Error::invalid(
            field.clone(),
            format!("Unrecognized request argument supplied: {}", shown(field)),
        )),
        None => Ok(request),
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
    pub fn tokenize(&self, request: &TokenizeRequest) -> Result<TokenizeResponse> {
        if request.content.len() > MAX_TOKENIZE_BYTES {
            return Err(Error::invalid(
                "content",
                format!(
                    "`content` is {} bytes; one call tokenizes at most {MAX_TOKENIZE_BYTES}",
                    request.content.len()
                ),
            ));
        }
        self.with_tokenizer(request.model_name(), |tokenizer| {
            let ids =
                tokenizer.tokenize(&request.content, request.add_special, request.parse_special);
            if !request.with_pieces {
                return Ok(TokenizeResponse {
                    tokens: TokenList::Ids(ids),
                });
            }
            if ids.len() > MAX_PIECES {
                return Err(Error::invalid(
                    "with_pieces",
                    format!(
                        "`content` is {} tokens; one call gives at most {MAX_PIECES} with their \
                         pieces (ask without `with_pieces`, or for less text at a time)",
                        ids.len()
                    ),
                ));
            }
            let pieces = ids
                .into_iter()
                .map(|id| TokenPiece {
                    id,
                    piece: match String::from_utf8(tokenizer.piece(id)) {
                        Ok(text) => Piece::Text(text),
                        Err(e) => Piece::Bytes(e.into_bytes()),
                    },
                })
                .collect();
            Ok(TokenizeResponse {
                tokens: TokenList::Pieces(pieces),
            })
        })
    }

    /// `{"content": text}`: the tokens' pieces joined (special tokens as their text), bytes
    /// that are not UTF-8 replaced by U+FFFD.
    pub fn detokenize(&self, request: &DetokenizeRequest) -> Result<DetokenizeResponse> {
        if request.tokens.len() > MAX_DETOKENIZE_TOKENS {
            return Err(Error::invalid(
                "tokens",
                format!(
                    "`tokens` holds {} ids; one call reads at most {MAX_DETOKENIZE_TOKENS}",
                    request.tokens.len()
                ),
            ));
        }
        self.with_tokenizer(request.model_name(), |tokenizer| {
            let size = tokenizer.vocab_size();
            let mut bytes = 0usize;
            let mut ids = Vec::with_capacity(request.tokens.len());
            for (i, &id) in request.tokens.iter().enumerate() {
                let Some(id) = u32::try_from(id).ok().filter(|&id| (id as usize) < size) else {
                    return Err(Error::invalid(
                        format!("tokens[{i}]"),
                        format!(
                            "Token id {id} is not in the vocabulary of `{}` (ids 0 to {})",
                            shown(request.model_name()),
                            size.saturating_sub(1)
                        ),
                    ));
                };
                // The text's length, bounded before llama.cpp sums it in an i32.
                bytes += tokenizer.piece(id).len();
                if bytes > MAX_DETOKENIZED_BYTES {
                    return Err(Error::invalid(
                        "tokens",
                        format!(
                            "The tokens' text passes {MAX_DETOKENIZED_BYTES} bytes at \
                             `tokens[{i}]`; detokenize fewer at a time"
                        ),
                    ));
                }
                ids.push(id);
            }
            let content = String::from_utf8_lossy(&tokenizer.detokenize(&ids)).into_owned();
            Ok(DetokenizeResponse { content })
        })
    }

    fn with_tokenizer<T>(
        &self,
        model: &str,
        work: impl FnOnce(&dyn Tokenizer) -> Result<T>,
    ) -> Result<T> {
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

/// The model named, or the default chat model for a request that names none.
fn tokenizer_model(model: &str) -> &str {
    match model {
        "" => crate::config::DEFAULT_MODEL,
        model => model,
    }
}
