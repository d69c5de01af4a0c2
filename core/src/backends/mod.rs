//! Engines that run models. Each turns a [`PredictorConfig`] into a [`Predictor`].

pub mod cores;
pub mod espeak;
#[cfg(feature = "llama")]
pub mod llama;
pub mod onnx;

use crate::config::{Backend, Config, PredictorConfig};
use crate::error::{Error, Result};
use crate::predict::Predictor;
use std::path::PathBuf;
use std::sync::Arc;

/// What the backends know of a config: the files each predictor needs.
impl Config {
    /// Every file `predictor` needs (the model, a tokenizer, a voice config).
    pub fn files_of(&self, predictor: &PredictorConfig) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::iter::once(&predictor.model)
            .chain(&predictor.tokenizer)
            .map(|p| self.resolve(p))
            .collect();
        if predictor.backend == Backend::Piper {
            files.push(onnx::voice_config_path(self, predictor));
        }
        if predictor.backend == Backend::Whisper {
            files.extend(onnx::whisper_files(&self.model_path(predictor)));
        }
        files
    }
}

/// Loads the predictor `predictor` describes; `config` says where its files are. Its options
/// were checked with the config ([`validate`], by the registry), not again here.
pub fn load(config: &Config, predictor: &PredictorConfig) -> Result<Arc<dyn Predictor>> {
    match predictor.backend {
        #[cfg(feature = "llama")]
        Backend::Llama => Ok(Arc::new(llama::LlamaPredictor::load(
            predictor,
            &config.model_path(predictor),
        )?)),
        #[cfg(not(feature = "llama"))]
        Backend::Llama => Err(without_llama()),
        Backend::OnnxEmbedding => Ok(Arc::new(onnx::EmbeddingPredictor::load(config, predictor)?)),
        Backend::Piper => Ok(Arc::new(onnx::SpeechPredictor::load(config, predictor)?)),
        Backend::Whisper => Ok(Arc::new(onnx::TranscriptionPredictor::load(
            config, predictor,
        )?)),
    }
}

/// Checks what can be checked of `predictor` without loading it: options its backend does
/// not have, a chat template llama.cpp does not know. Errors name the option as `param`.
pub fn validate(predictor: &PredictorConfig) -> Result<()> {
    match predictor.backend {
        #[cfg(feature = "llama")]
        Backend::Llama => {
            reject_options(predictor, llama::UNUSED_OPTIONS)?;
            if let Some(template) = &predictor.chat_template {
                llama::check_chat_template(template)?;
            }
            llama::gpu::check_device(predictor)
        }
        #[cfg(not(feature = "llama"))]
        Backend::Llama => Err(without_llama()),
        Backend::OnnxEmbedding => {
            reject_options(predictor, onnx::EMBEDDING_UNUSED_OPTIONS)?;
            // A Hub reference brings its tokenizer.json from the repo.
            let from_the_hub = predictor
                .model
                .to_str()
                .is_some_and(crate::pull::hub::HubRef::looks_like);
            if predictor.tokenizer.is_none() && !from_the_hub {
                return Err(Error::invalid(
                    "tokenizer",
                    format!(
                        "The embedding predictor `{}` needs a `tokenizer` (a tokenizer.json)",
                        crate::error::shown(&predictor.tag)
                    ),
                ));
            }
            Ok(())
        }
        Backend::Piper => {
            reject_options(predictor, onnx::SPEECH_UNUSED_OPTIONS)?;
            if let Some(alias) = predictor.voices.keys().find(|a| a.trim().is_empty()) {
                return Err(Error::invalid(
                    "voices",
                    format!(
                        "`voices` has an empty name (`{}`)",
                        crate::error::shown(alias)
                    ),
                ));
            }
            Ok(())
        }
        Backend::Whisper => reject_options(predictor, onnx::TRANSCRIPTION_UNUSED_OPTIONS),
    }
}

#[cfg(not(feature = "llama"))]
fn without_llama() -> Error {
    Error::model("This build of ingle has no llama.cpp backend (the `llama` feature is off)")
}

/// An error for options of `predictor`'s config that its backend does not have (a typo or a
/// copy-paste from another predictor would otherwise be silently ignored).
pub(crate) fn reject_options(predictor: &PredictorConfig, options: &[&str]) -> Result<()> {
    let given = |name: &str| match name {
        "n_ctx" => predictor.n_ctx.is_some(),
        "parallel" => predictor.parallel.is_some(),
        "n_gpu_layers" => predictor.n_gpu_layers.is_some(),
        "device" => predictor.device.is_some(),
        "chat_template" => predictor.chat_template.is_some(),
        "tokenizer" => predictor.tokenizer.is_some(),
        "max_length" => predictor.max_length.is_some(),
        "pooling" => predictor.pooling.is_some(),
        "voice_config" => predictor.voice_config.is_some(),
        "voices" => !predictor.voices.is_empty(),
        "defaults" => predictor.defaults != crate::config::SamplingDefaults::default(),
        _ => false,
    };
    match options.iter().find(|o| given(o)) {
        Some(option) => Err(Error::invalid(
            *option,
            format!(
                "`{option}` is not an option of backend `{}` (predictor `{}`)",
                predictor.backend.name(),
                crate::error::shown(&predictor.tag)
            ),
        )),
        None => Ok(()),
    }
}
