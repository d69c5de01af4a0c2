//! The client: `Send + Sync`, cheap to clone, laid out like the OpenAI client.

use crate::config::Config;
use crate::error::Result;
use crate::openai::{
    AudioApi, Chat, Completions, Embeddings, Images, Models, Rerank, Responses, Tokens,
};
use crate::predict::{
    last_prediction, Annotation, Cancel, Inputs, Logs, Metrics, Prediction, PredictionStream,
    Predictor, Signature,
};
use crate::registry::Registry;
use crate::value::{Audio, Value};
use std::sync::Arc;

/// Runs models in-process. `client.chat.completions.create(..)`, `client.completions`,
/// `client.embeddings`, `client.audio.speech`, `client.models`, and the lower-level `client.predictions`.
#[derive(Clone)]
pub struct Client {
    pub chat: Chat,
    /// OpenAI's Responses API, over the chat predictors; stored responses are kept in SQLite
    /// (`Config::responses`).
    pub responses: Responses,
    pub completions: Completions,
    pub embeddings: Embeddings,
    /// Anthropic's Messages API, over the chat predictors.
    pub messages: crate::anthropic::Messages,
    /// Documents ranked by relevance to a query (Jina's, Cohere's and TEI's rerank shapes).
    pub rerank: Rerank,
    /// Images made by predictors annotated for it (`ImageWidth`, `ImageHeight`, `ImageCount`).
    pub images: Images,
    pub audio: AudioApi,
    pub models: Models,
    /// A text model's own tokenizer: `tokenize` and `detokenize` (llama.cpp server's).
    pub tokens: Tokens,
    pub predictions: Predictions,
    registry: Arc<Registry>,
}

impl Client {
    /// The predictors of the config file in `INGLE_CONFIG`, or the default model.
    pub fn new() -> Result<Self> {
        Client::from_config(&Config::from_env()?)
    }

    pub fn from_config(config: &Config) -> Result<Self> {
        let registry = Arc::new(Registry::from_config(config)?);
        let chat = Chat::new(Arc::clone(&registry));
        Ok(Client {
            responses: Responses::new(chat.completions.clone(), &config.responses),
            messages: crate::anthropic::Messages::new(chat.completions.clone()),
            chat,
            completions: Completions::new(Arc::clone(&registry)),
            embeddings: Embeddings::new(Arc::clone(&registry)),
            rerank: Rerank::new(
                Arc::clone(&registry),
                Embeddings::new(Arc::clone(&registry)),
            ),
            images: Images::new(Arc::clone(&registry)),
            audio: AudioApi::new(Arc::clone(&registry)),
            models: Models::new(Arc::clone(&registry)),
            tokens: Tokens::new(Arc::clone(&registry)),
            predictions: Predictions {
                registry: Arc::clone(&registry),
                cancel: Cancel::default(),
            },
            registry,
        })
    }

    /// This client with every call stopped by `cancel`: once it is cancelled, a whole call
    /// returns an [`crate::ErrorKind::Cancelled`] error at its next step (token, sentence,
    /// window) and a stream ends with one, and predictors are told
    /// ([`crate::predict::Context::cancel`]). Cheap: the models are shared. Dropping a stream
    /// stops it whether or not it has a cancel.
    pub fn with_cancel(&self, cancel: &Cancel) -> Client {
        let mut client = self.clone();
        client.chat.completions.cancel = cancel.clone();
        client.responses = self.responses.with_cancel(cancel);
        client.completions.cancel = cancel.clone();
        client.embeddings.cancel = cancel.clone();
        client.rerank = self.rerank.with_cancel(cancel);
        client.images.cancel = cancel.clone();
        client.messages = self.messages.with_cancel(cancel);
        client.audio = self.audio.with_cancel(cancel);
        client.predictions.cancel = cancel.clone();
        client.models.cancel = cancel.clone();
        client
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

    /// Load figures of every model in memory now, by tag; loads none (what a metrics scrape
    /// reads). A model being loaded is left out until it is in.
    pub fn loaded_metrics(&self) -> Vec<(String, Metrics)> {
        self.registry
            .loaded()
            .into_iter()
            .map(|(tag, predictor)| (tag, predictor.metrics()))
            .collect()
    }
}

/// `client.predictions`: run any predictor by tag with named inputs.
#[derive(Clone)]
pub struct Predictions {
    registry: Arc<Registry>,
    cancel: Cancel,
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
        let inputs = audio_at_declared_rates(predictor.signature(), inputs)?;
        let inputs = predictor.signature().validate(inputs)?;
        let logs = Logs::default();
        let outputs = crate::predict::start(&predictor, inputs, &self.cancel, logs.clone())?;
        Ok(PredictionStream::new(
            tag,
            predictor.signature(),
            outputs,
            logs,
        ))
    }
}

/// Audio given for an input annotated `Audio { sample_rate }`, as the predictor declares it:
/// mono at that rate (what `audio.transcriptions` gives it too). Errors name the input.
fn audio_at_declared_rates(signature: &Signature, mut inputs: Inputs) -> Result<Inputs> {
    for param in &signature.inputs {
        let Annotation::Audio { sample_rate } = param.annotation else {
            continue;
        };
        let Some(Value::Audio(audio)) = inputs.get_mut(&param.name) else {
            continue;
        };
        if audio.sample_rate == sample_rate && audio.channels == 1 {
            continue;
        }
        let given = std::mem::replace(
            audio,
            Audio {
                samples: Vec::new(),
                sample_rate,
                channels: 1,
            },
        );
        audio.samples = crate::audio::to_mono(given, sample_rate, &param.name)?;
    }
    Ok(inputs)
}
