//! A predictor whose body is a user's function in Python, Node or C. The binding gives the
//! declaration and a body that starts the function; this wraps it so that every binding gets
//! the same guarantees: every output is checked against the signature before anyone sees it, so
//! a function that returns the wrong thing fails its prediction with a clear error instead of
//! reaching an encoder or a caller. The signature is checked against the OpenAI rules once, when
//! the predictor is registered ([`crate::Client::register`]), as any predictor's is.

use crate::error::{Error, Result};
use crate::predict::{
    Annotation, Context, Declaration, Inputs, Metrics, OutputStream, Outputs, Predictor,
    PredictorKind, Signature,
};
use crate::value::{Dtype, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

type Body = dyn Fn(Inputs, &Context) -> Result<OutputStream> + Send + Sync;

#[derive(Default)]
struct Counters {
    active: AtomicUsize,
    outputs: AtomicU64,
    cancelled: AtomicU64,
}

/// A user's function as a predictor (see the module documentation).
pub struct ExternalPredictor {
    declaration: Declaration,
    body: Box<Body>,
    counters: Arc<Counters>,
}

impl ExternalPredictor {
    /// Wraps `body`, which starts the function on validated inputs (defaults filled in),
    /// writing what it prints to the context's logs, and stopping the function when the
    /// context's cancel is cancelled where it can (see [`crate::predict::Cancel::on_cancel`]).
    /// [`crate::Client::register`] checks `declaration` against the rules of the OpenAI methods
    /// its annotations claim.
    pub fn new(
        declaration: Declaration,
        body: impl Fn(Inputs, &Context) -> Result<OutputStream> + Send + Sync + 'static,
    ) -> Self {
        ExternalPredictor {
            declaration,
            body: Box::new(body),
            counters: Arc::default(),
        }
    }

    pub fn description(&self) -> &str {
        &self.declaration.description
    }
}

impl Predictor for ExternalPredictor {
    fn tag(&self) -> &str {
        &self.declaration.tag
    }

    fn kind(&self) -> PredictorKind {
        self.declaration.kind
    }

    fn signature(&self) -> &Signature {
        &self.declaration.signature
    }

    fn predict(&self, inputs: Inputs, context: &Context) -> Result<OutputStream> {
        let signature = &self.declaration.signature;
        // An embedding predictor must give one row per text.
        let rows = signature
            .input_annotated(&Annotation::Embedding)
            .and_then(|p| inputs.get(&p.name))
            .and_then(Value::as_list)
            .map(<[Value]>::len);
        let outputs = (self.body)(inputs, context)?;
        self.counters.active.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Checked {
            tag: self.declaration.tag.clone(),
            kind: self.declaration.kind,
            signature: signature.clone(),
            rows,
            outputs: Some(outputs),
            produced: 0,
            counters: Arc::clone(&self.counters),
        }))
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            active_requests: self.counters.active.load(Ordering::Relaxed),
            queued_requests: 0,
            generated_tokens: self.counters.outputs.load(Ordering::Relaxed),
            cancelled_requests: self.counters.cancelled.load(Ordering::Relaxed),
            ..Metrics::default()
        }
    }
}

/// The function's outputs, each checked against the signature. Ends at the first error.
struct Checked {
    tag: String,
    kind: PredictorKind,
    signature: Signature,
    rows: Option<usize>,
    /// `None` once the function ended, failed, or broke its signature.
    outputs: Option<OutputStream>,
    produced: usize,
    counters: Arc<Counters>,
}

impl Checked {
    fn finish(&mut self) {
        if self.outputs.take().is_some() {
            self.counters.active.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn wrong(&self, what: String) -> Error {
        Error::model(format!("The predictor `{}` {what}", self.tag))
    }

    fn check(&self, outputs: &Outputs) -> Result<()> {
        let declared = &self.signature.outputs;
        if outputs.len() != declared.len() {
            return Err(self.wrong(format!(
                "gave {} output values where its signature declares {} ({})",
                outputs.len(),
                declared.len(),
                declared
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (param, value) in declared.iter().zip(outputs) {
            let name = &param.name;
            if value.is_null() {
                if param.required {
                    return Err(self.wrong(format!("gave no value for its output `{name}`")));
                }
                continue;
            }
            if !value.matches(param.value_type) {
                return Err(self.wrong(format!(
                    "gave {} for its output `{name}`, declared {}",
                    value.type_name(),
                    param.value_type.name()
                )));
            }
            if let Some(problem) = unrepresentable(value, name) {
                return Err(self.wrong(format!("gave {problem}")));
            }
            match (&param.annotation, value) {
                (Annotation::Embedding, Value::Tensor(t)) => {
                    if t.dtype != Dtype::F32 || t.shape.len() != 2 {
                        return Err(self.wrong(format!(
                            "gave a {} tensor of shape {:?} for its output `{name}`; an Embedding \
                             output is float32 (N, D)",
                            t.dtype.name(),
                            t.shape
                        )));
                    }
                    if let Some(rows) = self.rows.filter(|&rows| rows != t.shape[0]) {
                        return Err(self.wrong(format!(
                            "gave {} embeddings for {rows} texts in its output `{name}`",
                            t.shape[0]
                        )));
                    }
                    if t.shape[1] == 0 {
                        return Err(
                            self.wrong(format!("gave 0-dimensional embeddings in `{name}`"))
                        );
                    }
                    let finite = t
                        .data
                        .chunks_exact(4)
                        .all(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite());
                    if !finite {
                        return Err(self.wrong(format!(
                            "gave embeddings with NaN or infinite values in `{name}`"
                        )));
                    }
                }
                (Annotation::Audio { sample_rate }, Value::Audio(audio)) => {
                    if audio.sample_rate != *sample_rate {
                        return Err(self.wrong(format!(
                            "gave audio at {} Hz in its output `{name}`, declared {sample_rate} Hz",
                            audio.sample_rate
                        )));
                    }
                    if audio.channels == 0
                        || audio.channels > 64
                        || audio.samples.len() % audio.channels as usize != 0
                    {
                        return Err(self.wrong(format!(
                            "gave {} samples on {} channels in `{name}`: not whole frames of 1 to \
                             64 channels",
                            audio.samples.len(),
                            audio.channels
                        )));
                    }
                    if !audio.samples.iter().all(|x| x.is_finite()) {
                        return Err(self.wrong(format!(
                            "gave audio with NaN or infinite samples in `{name}`"
                        )));
                    }
                }
                _ => {}
            }
            if !param.choices.is_empty()
                && !param
                    .choices
                    .iter()
                    .any(|c| crate::predict::same_choice(c, value))
            {
                return Err(self.wrong(format!(
                    "gave a value for its output `{name}` that is not one of its choices"
                )));
            }
        }
        Ok(())
    }
}

/// What in an output value has no JSON form, which every caller (HTTP, C, the other
/// languages) would meet: a NaN or infinite number, or nesting deeper than
/// [`crate::MAX_NESTING`]. Worded as "X in `name[path]`".
fn unrepresentable(value: &Value, name: &str) -> Option<String> {
    let (problem, path) = unrepresentable_at(value, 0)?;
    Some(format!("{problem} in `{name}{path}`"))
}

/// The problem and its path below `value` (built only on the way back from a problem).
fn unrepresentable_at(value: &Value, depth: usize) -> Option<(String, String)> {
    let (problem, mut path, segment) = match value {
        Value::Float(x) if !x.is_finite() => {
            return Some((
                format!("{x}, which JSON cannot carry (NaN and infinity are not JSON numbers),"),
                String::new(),
            ))
        }
        Value::List(_) | Value::Dict(_) if depth >= crate::MAX_NESTING => {
            return Some((
                format!(
                    "lists and dicts nested more than {} deep",
                    crate::MAX_NESTING
                ),
                String::new(),
            ))
        }
        Value::List(items) => items.iter().enumerate().find_map(|(i, v)| {
            unrepresentable_at(v, depth + 1).map(|(p, path)| (p, path, format!("[{i}]")))
        })?,
        Value::Dict(map) => map.iter().find_map(|(k, v)| {
            unrepresentable_at(v, depth + 1).map(|(p, path)| (p, path, format!("[{k:?}]")))
        })?,
        _ => return None,
    };
    path.insert_str(0, &segment);
    Some((problem, path))
}

impl Iterator for Checked {
    type Item = Result<Outputs>;

    fn next(&mut self) -> Option<Result<Outputs>> {
        let item = self.outputs.as_mut()?.next();
        let result = match item {
            None if self.kind == PredictorKind::Eager && self.produced == 0 => {
                Err(self.wrong("returned no value".to_string()))
            }
            None => {
                self.finish();
                return None;
            }
            Some(Err(error)) => Err(error),
            Some(Ok(outputs)) => self.check(&outputs).map(|()| outputs),
        };
        match &result {
            Ok(_) => {
                self.produced += 1;
                self.counters.outputs.fetch_add(1, Ordering::Relaxed);
                if self.kind == PredictorKind::Eager {
                    self.finish(); // its one value: the function is done
                }
            }
            Err(_) => self.finish(),
        }
        Some(result)
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        if self.outputs.is_some() {
            // Dropped before the end: the caller went away.
            self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            self.finish();
        }
    }
}
