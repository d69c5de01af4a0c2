//! ingle runs open models in-process behind the OpenAI client interface.
//!
//! ```no_run
//! use ingle::{Client, openai::{ChatCompletionRequest, ChatMessage}};
//! let client = Client::new()?;
//! let request = ChatCompletionRequest::new(
//!     "@local/smollm2-135m-instruct",
//!     vec![ChatMessage::user("Which city is the capital of France?")],
//! );
//! for chunk in client.chat.completions.stream(&request)? {
//!     for choice in chunk?.choices {
//!         print!("{}", choice.delta.content.unwrap_or_default());
//!     }
//! }
//! # Ok::<(), ingle::Error>(())
//! ```
//!
//! Layers: [`predict`] (values, signatures, predictors, create vs stream), [`registry`]
//! (tags → lazily loaded predictors), [`backends`] (llama.cpp, ONNX Runtime), [`openai`] (the OpenAI
//! methods, mapped onto predictors by annotation), [`Client`] (the front door).

pub mod audio;
pub mod backends;
pub mod chat;
mod client;
pub mod config;
pub mod error;
pub mod json_text;
pub mod openai;
pub mod predict;
pub mod registry;
mod value;

pub use client::{Client, Predictions};
pub use config::{
    Config, PredictorConfig, DEFAULT_EMBEDDING_MODEL, DEFAULT_MODEL, DEFAULT_SPEECH_MODEL,
    TOOLS_MODEL,
};
pub use error::{Error, ErrorKind, Result};
pub use predict::{
    inputs_from_json, Annotation, Declaration, ExternalPredictor, FnPredictor, GenerationOption,
    Inputs, Logs, Metrics, OutputStream, Outputs, Parameter, Prediction, PredictionStream,
    Predictor, PredictorKind, Signature,
};
pub use value::{Audio, Dict, Dtype, Tensor, Value, ValueType};

/// The version of ingle.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn client_and_streams_cross_threads() {
        assert_send_sync::<crate::Client>();
        fn assert_send<T: Send>() {}
        assert_send::<crate::PredictionStream>();
        assert_send::<crate::openai::ChatCompletionStream>();
        assert_send::<crate::openai::CompletionStream>();
        assert_send::<crate::openai::SpeechStream>();
    }
}
