//! Engines that run models. Each turns a [`PredictorConfig`] into a [`Predictor`].

pub mod llama;

use crate::config::{Backend, PredictorConfig};
use crate::error::Result;
use crate::predict::Predictor;
use std::path::Path;
use std::sync::Arc;

/// Loads the predictor `config` describes, its model file being `model_path`.
pub fn load(config: &PredictorConfig, model_path: &Path) -> Result<Arc<dyn Predictor>> {
    match config.backend {
        Backend::Llama => Ok(Arc::new(llama::LlamaPredictor::load(config, model_path)?)),
    }
}
