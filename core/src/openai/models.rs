//! `client.models`: list, retrieve, pull, unload.

use super::types::{Model, ModelList};
use crate::error::Result;
use crate::predict::Cancel;
use crate::registry::Registry;
use std::sync::Arc;

/// `client.models`.
#[derive(Clone)]
pub struct Models {
    registry: Arc<Registry>,
    /// Stops a pull at its next progress report (each chunk downloaded or hashed).
    pub(crate) cancel: Cancel,
}

impl Models {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Models {
            registry,
            cancel: Cancel::default(),
        }
    }

    pub fn list(&self) -> ModelList {
        let data = self
            .registry
            .list()
            .into_iter()
            .map(|info| model_object(&info))
            .collect();
        ModelList {
            object: "list".into(),
            data,
        }
    }

    /// Downloads `model` (a tag of the catalog, see [`crate::pull`]) and what it needs into
    /// the client's models directory, verified; a model the config registers only when its
    /// files exist is then served by this client. `progress` hears about each file; returning
    /// `false` cancels (the next pull resumes), as does the client's cancel
    /// ([`crate::Client::with_cancel`]).
    pub fn pull(
        &self,
        model: &str,
        progress: &mut dyn FnMut(&crate::pull::PullEvent) -> bool,
    ) -> Result<crate::pull::PullReport> {
        self.cancel.check()?;
        // The caller hears every event (`success` too: a pull done is done); a cancel stops
        // the pull at the next one.
        let mut progress = |event: &crate::pull::PullEvent| {
            progress(event)
                && (event.status == crate::pull::PullStatus::Success || !self.cancel.is_cancelled())
        };
        let report =
            crate::pull::Puller::new(self.registry.models_dir())?.pull(model, &mut progress)?;
        // A Hub model is served from the snapshot just pulled (`refs/main` may have moved).
        self.registry.refresh_hub(&report.tag);
        Ok(report)
    }

    /// The catalog's entries: what [`Models::pull`] can download, each with its size and
    /// whether its files are in the client's models directory.
    pub fn catalog(&self) -> Result<Vec<crate::pull::CatalogStatus>> {
        Ok(crate::pull::Puller::new(self.registry.models_dir())?.list())
    }

    pub fn retrieve(&self, model: &str) -> Result<Model> {
        let info = self.registry.info_of(model)?;
        Ok(model_object(&info))
    }

    /// Frees a model's memory (weights, KV cache, threads); the next request loads it again.
    /// Requests running on it finish first: the memory goes when the last one ends. Returns
    /// whether it was loaded. Not an OpenAI method (OpenAI's models do not live in your process).
    pub fn unload(&self, model: &str) -> Result<bool> {
        self.registry.unload(model)
    }

    /// Unloads the models no request has used for `idle` and none is using now (a keep-alive,
    /// as Ollama's); returns their tags.
    pub fn unload_idle(&self, idle: std::time::Duration) -> Vec<String> {
        self.registry.unload_idle(idle)
    }

    /// Whether `model` is in memory now.
    pub fn is_loaded(&self, model: &str) -> Result<bool> {
        Ok(self.registry.info_of(model)?.loaded)
    }
}

fn model_object(info: &crate::registry::ModelInfo) -> Model {
    Model {
        id: info.tag.clone(),
        object: "model".into(),
        created: info.created,
        owned_by: "ingle".into(),
        context_length: info.context_length,
    }
}
