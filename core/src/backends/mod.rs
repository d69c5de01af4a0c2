//! Engines that run models. Each turns a [`PredictorConfig`] into a [`Predictor`].

pub mod cores;
pub mod espeak;
#[cfg(feature = "llama")]
pub mod llama;
pub mod onnx;

use crate::config::{Backend, BackendOptions, Config, PredictorConfig};
use crate::error::{Error, Result};
use crate::predict::Predictor;
use std::path::PathBuf;
use std::sync::Arc;

/// What the backends know of a config: the files each predictor needs.
impl Config {
    /// Every file `predictor` needs (the model, a tokenizer, a voice config).
    pub fn files_of(&self, predictor: &PredictorConfig) -> Vec<PathBuf> {
        let tokenizer = predictor
            .embedding_options()
            .and_then(|o| o.tokenizer.as_ref());
        let mut files: Vec<PathBuf> = std::iter::once(&predictor.model)
            .chain(tokenizer)
            .map(|p| self.resolve(p))
            .collect();
        match &predictor.options {
            BackendOptions::Piper(options) => {
                files.push(onnx::voice_config_path(self, predictor, options))
            }
            BackendOptions::Whisper(_) => {
                files.extend(onnx::whisper_files(&self.model_path(predictor)))
            }
            BackendOptions::Llama(_) | BackendOptions::OnnxEmbedding(_) => {}
        }
        files
    }
}

/// Loads the predictor `predictor` describes; `config` says where its files are. Its options
/// were checked with the config ([`validate`], by the registry), not again here.
pub fn load(config: &Config, predictor: &PredictorConfig) -> Result<Arc<dyn Predictor>> {
    match predictor.backend() {
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

/// Checks what can be checked of `predictor` without loading it (its options are its
/// backend's by their type): a chat template llama.cpp does not know, a GPU that is not
/// there, an embedding model without a tokenizer. Errors name the option as `param`.
pub fn validate(predictor: &PredictorConfig) -> Result<()> {
    if let Some(option) = predictor.misplaced_options().first() {
        return Err(Error::invalid(
            *option,
            crate::config::misplaced_option(option, predictor.backend(), &predictor.tag),
        ));
    }
    match &predictor.options {
        #[cfg(feature = "llama")]
        BackendOptions::Llama(options) => {
            if let Some(template) = &options.chat_template {
                llama::check_chat_template(template)?;
            }
            llama::gpu::check_device(predictor)
        }
        #[cfg(not(feature = "llama"))]
        BackendOptions::Llama(_) => Err(without_llama()),
        BackendOptions::OnnxEmbedding(options) => {
            // A Hub reference brings its tokenizer.json from the repo.
            let from_the_hub = predictor
                .model
                .to_str()
                .is_some_and(crate::pull::hub::HubRef::looks_like);
            if options.tokenizer.is_none() && !from_the_hub {
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
        BackendOptions::Piper(options) => {
            if let Some(alias) = options.voices.keys().find(|a| a.trim().is_empty()) {
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
        BackendOptions::Whisper(_) => Ok(()),
    }
}

#[cfg(not(feature = "llama"))]
fn without_llama() -> Error {
    Error::model("This build of ingle has no llama.cpp backend (the `llama` feature is off)")
}
