//! The client: `Send + Sync`, cheap to clone, laid out like the OpenAI client.

use crate::config::Config;
use crate::error::Result;
use crate::openai::{AudioApi, Chat, Completions, Embeddings, Models};
use crate::predict::{
    last_prediction, Inputs, Logs, Metrics, Prediction, PredictionStream, Predictor,
};
use crate::registry::Registry;
use std::sync::Arc;

/// Runs models in-process. `client.chat.completions.create(..)`, `client.completions`,
/// `client.embeddings`, `client.audio.speech`, `client.models`, and the lower-level `client.predictions`.
#[derive(Clone)]
pub struct Client {
    pub chat: Chat,
    pub completions: Completions,
    pub embeddings: Embeddings,
    pub audio: AudioApi,
    pub models: Models,
    pub predictions: Predictions,
    registry: Arc<Registry>,
}

impl Client {
    /// The predictors of the config file in `INGLE_CONFIG`, or the default model.
    pub fn new() -> Result<Self> {
        Client::from_config(&Config::from_env()?)
    }

    pub fn from_config(config: &Config) -> Result<Self> {
        Ok(Client::from_registry(Registry::from_config(config)?))
    }

    fn from_registry(registry: Registry) -> Self {
        let registry = Arc::new(registry);
        Client {
            chat: Chat::new(Arc::clone(&registry)),
            completions: Completions::new(Arc::clone(&registry)),
            embeddings: Embeddings::new(Arc::clone(&registry)),
            audio: AudioApi::new(Arc::clone(&registry)),
            models: Models::new(Arc::clone(&registry)),
            predictions: Predictions {
                registry: Arc::clone(&registry),
            },
            registry,
        }
    }

    /// Adds a predictor of your own (for instance an [`crate::FnPredictor`]). Its signature
    /// must follow the rules of each OpenAI method its annotations claim
    /// ([`crate::openai::check_predictor`]); an error names the parameter at fault.
    pub fn register(&self, predictor: Arc<dyn Predictor>) -> Result<()> {
        crate::openai::check_predictor(predictor.tag(), predictor.signature())?;
        self.registry.register(predictor)
    }

    /// The predictor behind `tag`, loading it if needed.
    pub fn predictor(&self, tag: &str) -> Result<Arc<dyn Predictor>> {
        self.registry.get(tag)
    }

    /// Load figures of a loaded predictor.
    pub fn metrics(&self, tag: &str) -> Result<Metrics> {
        Ok(self.registry.get(tag)?.metrics())
    }
}

/// `client.predictions`: run any predictor by tag with named inputs.
#[derive(Clone)]
pub struct Predictions {
    registry: Arc<Registry>,
}

impl Predictions {
    /// Runs the predictor to the end and returns the final prediction. Errors found before it
    /// starts (unknown tag, invalid inputs) are `Err`; a failure while running is returned as
    /// a prediction with `error` set.
    pub fn create(&self, tag: &str, inputs: Inputs) -> Result<Prediction> {
        Ok(last_prediction(self.stream(tag, inputs)?))
    }

    /// Yields one prediction per partial output (once for an eager predictor).
    /// Dropping the stream cancels the prediction.
    pub fn stream(&self, tag: &str, inputs: Inputs) -> Result<PredictionStream> {
        let predictor = self.registry.get(tag)?;
        let inputs = predictor.signature().validate(inputs)?;
        let logs = Logs::default();
        let outputs = predictor.predict_logged(inputs, logs.clone())?;
        Ok(PredictionStream::new(
            tag,
            predictor.signature(),
            outputs,
            logs,
        ))
    }
}
