//! The OpenAI interface: `chat.completions`, `responses`, `completions`, `embeddings`,
//! `audio.speech`, `rerank` and `models`, mapped onto predictors.
//!
//! A request's `model` names a predictor tag. Its parameters are found by **annotation**, never by
//! name: chat needs an input annotated [`Annotation::ChatMessages`], text completion one annotated
//! [`Annotation::Prompt`], each sampling option one annotated [`Annotation::Generation`], and the
//! outputs must include [`Annotation::TextDelta`]. A predictor lacking one gets an error saying
//! which. Non-streaming responses are the streamed chunks folded into one object, so both agree.

mod chat;
mod common;
mod completions;
mod content_parts;
mod embeddings;
mod generation;
mod images;
mod models;
mod rerank;
mod responses;
mod rules;
mod slots;
mod speech;
mod subtitles;
mod tokens;
mod transcription;
mod translation;
mod types;

pub use chat::{Chat, ChatCompletionStream, ChatCompletions, RenderedPrompt};
pub use completions::{CompletionStream, Completions};
pub use embeddings::*;
pub use images::{
    CheckedImages, ImageEvents, ImageGenerateRequest, Images, OutputFormat, MAX_IMAGES,
    MAX_IMAGE_PIXELS, MAX_PARTIAL_IMAGES,
};
pub use models::Models;
pub use rerank::{
    CheckedRerank, Rerank, RerankDocument, RerankRequest, RerankResponse, RerankResult,
    RerankUsage, TeiRerankResult, MAX_RERANK_DOCUMENTS,
};
pub use responses::{ResponseRequest, ResponseStream, Responses};
pub use speech::*;
pub use subtitles::{srt, vtt};
pub use tokens::{
    DetokenizeRequest, DetokenizeResponse, Piece, TokenList, TokenPiece, TokenizeRequest,
    TokenizeResponse, Tokens, MAX_DETOKENIZED_BYTES, MAX_DETOKENIZE_TOKENS, MAX_PIECES,
    MAX_TOKENIZE_BYTES,
};
pub use transcription::*;
pub use translation::Translations;
pub use types::*;

use crate::error::Result;
use crate::predict::Signature;

/// Chat roles the OpenAI API knows.
pub const CHAT_ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// Most choices one request may ask for (`n`).
pub const MAX_CHOICES: i64 = 8;

/// Checks that a predictor can serve each OpenAI method its annotations claim, so a user's
/// predictor fails when it is registered rather than on its first request. Each failure is an
/// invalid-request error naming the parameter at fault. A predictor that claims no method
/// (no chat, embedding, audio or transcription annotation) serves `predictions` only.
pub fn check_predictor(tag: &str, signature: &Signature) -> Result<()> {
    rules::annotation_types(tag, signature)?;
    rules::chat_rules(tag, signature)?;
    embeddings::rules(tag, signature)?;
    speech::rules(tag, signature)?;
    transcription::rules(tag, signature)?;
    rerank::rules(tag, signature)?;
    images::rules(tag, signature)?;
    Ok(())
}
