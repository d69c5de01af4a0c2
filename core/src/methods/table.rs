//! The table itself: [`METHODS`], one line per operation's type (the types are in `text.rs`,
//! `named.rs` and `audio.rs`).

use super::audio::*;
use super::named::*;
use super::text::*;
use super::{Declared, Method};

/// Every method, in the order the docs list them: a [`Streamed`] operation's create and stream
/// methods side by side.
macro_rules! methods {
    ($($operation:ty => $($method:ident)+;)*) => {
        pub static METHODS: &[&Method] = &[$($(Declared::<$operation>::$method,)+)*];
    };
}

methods! {
    ChatCompletionsCreate => CREATE STREAM;
    CompletionsCreate => CREATE STREAM;
    EmbeddingsCreate => ONE;
    ImagesGenerate => CREATE STREAM;
    RerankCreate => ONE;
    MessagesCreate => CREATE STREAM;
    MessagesCountTokens => ONE;
    ResponsesCreate => CREATE STREAM;
    ResponsesInputTokens => ONE;
    ResponsesRetrieve => ONE;
    ResponsesDelete => ONE;
    ResponsesInputItemsList => ONE;
    AudioSpeechCreate => ONE;
    AudioSpeechStream => ONE;
    AudioTranscriptionsCreate => CREATE STREAM;
    AudioTranslationsCreate => ONE;
    ModelsList => ONE;
    ModelsRetrieve => ONE;
    ApplyTemplate => ONE;
    Tokenize => ONE;
    Detokenize => ONE;
}
