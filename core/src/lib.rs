//! ingle runs open models in-process behind the OpenAI client interface.
//!
//! ```no_run
//! use ingle::{Client, openai::{ChatCompletionRequest, ChatMessage}};
//! let client = Client::new()?;
//! let request = ChatCompletionRequest::new(
//!     "@local/smollm2-135m-instruct",
//!     vec![ChatMessage::user("Name the capital of France.")],
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

// Without llama.cpp (the fuzz targets' build), its text helpers have no user.
#![cfg_attr(not(feature = "llama"), allow(dead_code))]

pub mod anthropic;
pub mod audio;
pub mod backends;
pub mod chat;
mod client;
pub mod config;
pub mod devices;
pub mod error;
mod external;
pub mod json;
pub mod json_text;
pub mod media;
pub mod methods;
pub mod openai;
pub mod predict;
pub mod pull;
pub mod registry;
mod value;

pub use client::{Client, Predictions};

/// Parsers of outside bytes that are not public API, for the fuzz targets (`fuzz/`).
#[doc(hidden)]
pub mod parsers {
    pub use crate::pull::zip;

    /// Reads a CTranslate2 `model.bin`; the number of its variables.
    pub fn ct2_model(bytes: &[u8]) -> Option<usize> {
        crate::backends::onnx::whisper::ct2::Ct2Model::parse(bytes).map(|m| m.variables.len())
    }
}
pub use config::{
    Config, PredictorConfig, SamplingDefaults, DEFAULT_EMBEDDING_MODEL, DEFAULT_MODEL,
    DEFAULT_SPEECH_MODEL, TOOLS_MODEL,
};
pub use error::{Error, ErrorCode, ErrorKind, Result};
pub use external::ExternalPredictor;
pub use predict::{
    inputs_from_json, Annotation, Cancel, CancelOnDrop, Context, Declaration, FnPredictor,
    GenerationOption, Inputs, Logs, Metrics, OnCancel, OutputStream, Outputs, Parameter,
    Prediction, PredictionStream, Predictor, PredictorKind, Signature,
};
pub use value::{Audio, Dict, Dtype, Tensor, Value, ValueType, MAX_NESTING, MAX_TENSOR_BYTES};

/// The version of ingle.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What ingle runs with on this machine: its version and the build of llama.cpp's CPU kernels
/// it loaded (runtime CPU dispatch, see `backends::llama::cpu`), and its GPUs.
#[cfg(feature = "llama")]
#[derive(Debug, Clone, serde::Serialize)]
pub struct SystemInfo {
    pub version: &'static str,
    /// The CPU variant of llama.cpp's kernels in use: `zen4`, `icelake`, `haswell`...
    pub cpu_variant: String,
    /// `best` (the highest-scoring variant this CPU runs) or `INGLE_CPU_VARIANT`.
    pub cpu_variant_chosen_by: String,
    /// Every variant considered, with its score here (0: this CPU cannot run it).
    pub cpu_variants: std::collections::BTreeMap<String, i32>,
    /// Variants left out, and why (AMX where it is not proven, unless `INGLE_CPU_AMX=1`).
    pub cpu_variants_excluded: std::collections::BTreeMap<String, String>,
    /// llama.cpp's own report of the kernels it runs (`llama_print_system_info`).
    pub cpu_features: String,
    /// The module loaded.
    pub cpu_backend_path: String,
    /// Threads a model decodes with when its config does not say.
    pub default_threads: u32,
    /// The GPU modules loaded and skipped, and the GPUs they found (`INGLE_DEVICE`).
    pub gpu: backends::llama::gpu::GpuBackends,
    /// Where each chat model loaded so far runs: its GPU and layers there, or the CPU.
    pub offloads: Vec<backends::llama::gpu::Offload>,
    /// Where the ONNX models (embeddings, speech, transcription) run: the ONNX Runtime loaded
    /// and its execution provider (`cuda` or `cpu`, and why not CUDA); before one is loaded,
    /// where they would run with the default config's ONNX Runtime.
    pub onnx: backends::onnx::cuda::OnnxDevice,
}

/// Loads llama.cpp's CPU backend if it is not yet, and says what ingle runs with.
#[cfg(feature = "llama")]
pub fn system_info() -> Result<SystemInfo> {
    backends::llama::backend()?;
    let cpu = backends::llama::cpu::load().map_err(Error::model)?;
    Ok(SystemInfo {
        version: VERSION,
        cpu_variant: cpu.variant.clone(),
        cpu_variant_chosen_by: cpu.chosen_by.clone(),
        cpu_variants: cpu.scores.iter().cloned().collect(),
        cpu_variants_excluded: cpu.excluded.iter().cloned().collect(),
        cpu_features: cpu.features.clone(),
        cpu_backend_path: cpu.path.display().to_string(),
        default_threads: backends::cores::default_threads(),
        gpu: backends::llama::gpu::with_memory()
            .ok_or_else(|| Error::internal("the GPU backends were not loaded"))?,
        offloads: backends::llama::gpu::offloads(),
        onnx: backends::onnx::cuda::device().unwrap_or_else(|| {
            backends::onnx::cuda::planned(&config::Config::default().onnxruntime_path())
        }),
    })
}

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
