//! Responses as JSON text: what the C, Python and Node bindings hand across their boundaries.
//! (Requests are read by `json.rs`.)

use crate::error::{Error, Result};
use crate::predict::{Prediction, PredictionStream};
use serde::Serialize;

/// A stream of response objects (chunks, predictions) as JSON texts.
pub type JsonTextStream = Box<dyn Iterator<Item = Result<String>> + Send>;

/// A response object as JSON text.
pub fn to_json_text(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::internal(format!("Cannot serialize a response: {e}")))
}

/// Every item of `items` as JSON text.
pub fn json_texts<T: Serialize + 'static>(
    items: impl Iterator<Item = Result<T>> + Send + 'static,
) -> JsonTextStream {
    Box::new(items.map(|item| item.and_then(|item| to_json_text(&item))))
}

impl Prediction {
    /// The prediction's JSON, or the error it failed with.
    pub fn into_json_text(self) -> Result<String> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.to_json()?.to_string()),
        }
    }

    /// The whole prediction's JSON, a failure included (as `error`, with the `logs` that tell
    /// why), for callers that report failures as predictions rather than as errors.
    pub fn to_json_text(&self) -> Result<String> {
        Ok(self.to_json()?.to_string())
    }
}

impl PredictionStream {
    /// Each partial prediction as JSON text; a failed one is yielded as its error.
    pub fn into_json_texts(self) -> JsonTextStream {
        Box::new(self.map(Prediction::into_json_text))
    }

    /// Each partial prediction as JSON text, a failed one included (see
    /// [`Prediction::to_json_text`]).
    pub fn into_whole_json_texts(self) -> JsonTextStream {
        Box::new(self.map(|p| p.to_json_text()))
    }
}
