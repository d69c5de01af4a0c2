//! Predictors written in JavaScript. `index.js` turns the user's declaration into the core's
//! JSON format and hands over one function, `dispatch(call)`, that runs on the main thread.
//!
//! The core runs predictions on libuv's thread pool; a JS function can only run on the main
//! thread. So each step of a prediction (start it, pull the next output, close it) is a call
//! of `dispatch` through a thread-safe function, and the pool thread waits until JS answers
//! with `predictorReply(reply, ...)`: JS awaits the user's promise or async generator without
//! blocking the event loop, and only the pool thread waits.
//!
//! Values cross as JSON, except audio and tensors: those travel as bytes beside the JSON, which
//! holds `{"$raw": i, "kind": "audio", "sample_rate", "channels"}` or `{"$raw": i, "kind":
//! "tensor", "dtype", "shape"}` where the value goes (buffer `i`).

use crate::js_error;
use ingle::{
    Audio, Declaration, Dtype, Error, ExternalPredictor, Inputs, Logs, OnCancel, OutputStream,
    Outputs, Tensor, Value,
};
use napi::bindgen_prelude::{Uint8Array, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// One step of a prediction, for `dispatch` on the main thread.
#[napi(object)]
pub struct PredictorCall {
    /// `"start"`, `"next"`, `"close"` or `"cancel"` (the call was cancelled: abort the
    /// prediction's signal; no reply).
    pub op: String,
    /// The prediction this step belongs to.
    pub prediction: u32,
    /// What to pass to `predictorReply` (0 for `close` and `cancel`, which have no reply).
    pub reply: u32,
    /// `start`: the inputs as a JSON object, audio and tensors as `$raw` references.
    pub json: String,
    /// The bytes the `$raw` references point at.
    pub buffers: Vec<Uint8Array>,
}

type Dispatch =
    ThreadsafeFunction<PredictorCall, Unknown<'static>, PredictorCall, Status, false, true>;

/// JS's answer to one step.
struct Reply {
    error: Option<String>,
    /// `next`: the outputs; `None` when the generator is done.
    outputs: Option<Outputs>,
}

fn waiting() -> &'static Mutex<HashMap<u32, Sender<Reply>>> {
    static WAITING: OnceLock<Mutex<HashMap<u32, Sender<Reply>>>> = OnceLock::new();
    WAITING.get_or_init(Default::default)
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

fn next_id() -> u32 {
    // 0 means "no reply"; wrapping past u32::MAX skips it.
    loop {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        if id != 0 {
            return id;
        }
    }
}

/// Calls `dispatch` on the main thread and waits for its reply.
fn ask(dispatch: &Dispatch, tag: &str, mut call: PredictorCall) -> ingle::Result<Reply> {
    let (sender, receiver) = channel();
    let reply = next_id();
    call.reply = reply;
    waiting()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(reply, sender);
    let status = dispatch.call(call, ThreadsafeFunctionCallMode::NonBlocking);
    if status != Status::Ok {
        waiting()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&reply);
        return Err(Error::model(format!(
            "The predictor `{tag}` cannot run: the JavaScript environment is closing ({status})"
        )));
    }
    receiver.recv().map_err(|_| {
        Error::model(format!(
            "The predictor `{tag}` never answered (its environment went away)"
        ))
    })
}

/// A prediction running in JS: each `next` asks for the next output; dropping it closes the
/// JS generator (its `finally` runs).
struct JsOutputs {
    dispatch: Arc<Dispatch>,
    tag: String,
    prediction: u32,
    done: bool,
    /// Tells JS when the prediction's call is cancelled: the predictor's `predictionSignal()`
    /// aborts, which stops an `await` that listens to it (a `fetch`, a timer) mid-step.
    _cancel: OnCancel,
}

impl JsOutputs {
    fn call(&self, op: &str) -> PredictorCall {
        PredictorCall {
            op: op.into(),
            prediction: self.prediction,
            reply: 0,
            json: String::new(),
            buffers: Vec::new(),
        }
    }
}

impl Iterator for JsOutputs {
    type Item = ingle::Result<Outputs>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let reply = match ask(&self.dispatch, &self.tag, self.call("next")) {
            Ok(reply) => reply,
            Err(error) => {
                self.done = true;
                return Some(Err(error));
            }
        };
        match reply {
            Reply {
                error: Some(message),
                ..
            } => {
                self.done = true;
                Some(Err(Error::model(message)))
            }
            Reply { outputs: None, .. } => {
                self.done = true;
                None
            }
            Reply {
                outputs: Some(outputs),
                ..
            } => Some(Ok(outputs)),
        }
    }
}

impl Drop for JsOutputs {
    fn drop(&mut self) {
        // JS forgets the prediction, closing its generator if it is still open. No reply.
        let _ = self
            .dispatch
            .call(self.call("close"), ThreadsafeFunctionCallMode::NonBlocking);
        log_sinks()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.prediction);
    }
}

/// Inputs as JSON with `$raw` references, and their buffers. A list of audio or tensors (a
/// chat's images, `ChatImages`) is a list of references.
fn inputs_for_js(inputs: Inputs) -> ingle::Result<(String, Vec<Uint8Array>)> {
    let mut json = serde_json::Map::new();
    let mut buffers = Vec::new();
    for (name, value) in inputs {
        let entry = match value {
            Value::List(items)
                if !items.is_empty()
                    && items
                        .iter()
                        .all(|v| matches!(v, Value::Audio(_) | Value::Tensor(_))) =>
            {
                let mut references = Vec::with_capacity(items.len());
                for item in items {
                    references.push(raw_for_js(item, &mut buffers)?);
                }
                serde_json::Value::Array(references)
            }
            other => raw_for_js(other, &mut buffers)?,
        };
        json.insert(name, entry);
    }
    Ok((serde_json::Value::Object(json).to_string(), buffers))
}

/// One input value: audio and tensors as `$raw` references into `buffers`, the rest as JSON.
fn raw_for_js(value: Value, buffers: &mut Vec<Uint8Array>) -> ingle::Result<serde_json::Value> {
    {
        let entry = match value {
            Value::Audio(audio) => {
                let bytes: Vec<u8> = audio.samples.iter().flat_map(|x| x.to_ne_bytes()).collect();
                buffers.push(Uint8Array::new(bytes));
                serde_json::json!({"$raw": buffers.len() - 1, "kind": "audio",
                    "sample_rate": audio.sample_rate, "channels": audio.channels})
            }
            Value::Tensor(tensor) => {
                let reference = serde_json::json!({"$raw": buffers.len(), "kind": "tensor",
                    "dtype": tensor.dtype.name(), "shape": tensor.shape});
                buffers.push(Uint8Array::new(tensor.data));
                reference
            }
            other => other.to_json()?,
        };
        Ok(entry)
    }
}

/// A value from JS: JSON, or a `$raw` reference to one of `buffers`.
fn value_from_js(
    json: serde_json::Value,
    buffers: &mut [Option<Vec<u8>>],
) -> Result<Value, String> {
    let Some(index) = json.get("$raw").and_then(serde_json::Value::as_u64) else {
        return Ok(Value::from(json));
    };
    let bytes = buffers
        .get_mut(index as usize)
        .and_then(Option::take)
        .ok_or("a raw value refers to a missing buffer")?;
    if json.get("kind").and_then(serde_json::Value::as_str) == Some("audio")
        && !bytes.len().is_multiple_of(4)
    {
        return Err("audio crosses as float32 samples: its bytes must be a multiple of 4".into());
    }
    match json.get("kind").and_then(serde_json::Value::as_str) {
        Some("audio") => {
            let number = |key: &str| {
                json.get(key)
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
            };
            Ok(Value::Audio(Audio {
                samples: bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                sample_rate: number("sample_rate") as u32,
                channels: number("channels").clamp(0, u16::MAX as u64) as u16,
            }))
        }
        Some("tensor") => {
            let dtype = json
                .get("dtype")
                .and_then(serde_json::Value::as_str)
                .and_then(Dtype::from_name)
                .ok_or("a tensor of an unknown dtype")?;
            let shape = json
                .get("shape")
                .and_then(serde_json::Value::as_array)
                .and_then(|s| {
                    s.iter()
                        .map(|d| d.as_u64().map(|d| d as usize))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or("a tensor without a shape")?;
            Tensor::new(dtype, shape, bytes)
                .map(Value::Tensor)
                .map_err(|e| e.message)
        }
        _ => Err("a raw value of an unknown kind".into()),
    }
}

/// Answers the step `reply` of a prediction: `error` (the message, the predictor failed), or
/// `outputs` (a JSON array in signature order, `null` when a generator is done) with the
/// buffers its `$raw` values refer to; `logs` is what the predictor printed since the last
/// step of the prediction `prediction`. Called by `index.js` on the main thread.
#[napi]
pub fn predictor_reply(
    reply: u32,
    prediction: u32,
    error: Option<String>,
    logs: Option<String>,
    outputs: Option<String>,
    buffers: Option<Vec<Uint8Array>>,
) {
    let Some(sender) = waiting()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&reply)
    else {
        return;
    };
    let mut buffers: Vec<Option<Vec<u8>>> = buffers
        .unwrap_or_default()
        .iter()
        .map(|b| Some(b.to_vec()))
        .collect();
    let parsed = match (error, outputs) {
        (Some(message), _) => Err(message),
        (None, None) => Ok(None),
        (None, Some(json)) => match serde_json::from_str::<serde_json::Value>(&json) {
            Ok(serde_json::Value::Array(values)) => values
                .into_iter()
                .map(|v| value_from_js(v, &mut buffers))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Ok(_) => Err("outputs must be a JSON array".into()),
            Err(e) => Err(format!("outputs are not JSON: {e}")),
        },
    };
    let logs_reply = Reply {
        error: parsed.as_ref().err().cloned(),
        outputs: parsed.ok().flatten(),
    };
    if let Some(logs) = logs.filter(|l| !l.is_empty()) {
        let sink = log_sinks()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&prediction)
            .cloned();
        if let Some(sink) = sink {
            sink.write(&logs);
        }
    }
    let _ = sender.send(logs_reply);
}

/// The logs of each running prediction, by its id, so what JS logs reaches them.
fn log_sinks() -> &'static Mutex<HashMap<u32, Logs>> {
    static LOG_SINKS: OnceLock<Mutex<HashMap<u32, Logs>>> = OnceLock::new();
    LOG_SINKS.get_or_init(Default::default)
}

pub fn js_predictor(declaration: &str, dispatch: Dispatch) -> napi::Result<ExternalPredictor> {
    let declaration = Declaration::from_json(declaration).map_err(js_error)?;
    let tag = declaration.tag.clone();
    let dispatch = Arc::new(dispatch);
    Ok(ExternalPredictor::new(
        declaration,
        move |inputs, context| {
            let (json, buffers) = inputs_for_js(inputs)?;
            let prediction = next_id();
            let call = PredictorCall {
                op: "start".into(),
                prediction,
                reply: 0,
                json,
                buffers,
            };
            log_sinks()
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(prediction, context.logs.clone());
            let forget = || {
                log_sinks()
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&prediction);
            };
            let reply = ask(&dispatch, &tag, call).inspect_err(|_| forget())?;
            if let Some(message) = reply.error {
                forget();
                return Err(Error::model(message));
            }
            let told = Arc::clone(&dispatch);
            let cancel = PredictorCall {
                op: "cancel".into(),
                prediction,
                reply: 0,
                json: String::new(),
                buffers: Vec::new(),
            };
            let stream: OutputStream = Box::new(JsOutputs {
                dispatch: Arc::clone(&dispatch),
                tag: tag.clone(),
                prediction,
                done: false,
                _cancel: context.cancel.on_cancel(move || {
                    let _ = told.call(cancel, ThreadsafeFunctionCallMode::NonBlocking);
                }),
            });
            Ok(stream)
        },
    ))
}

/// JS buffers copied out on the main thread, to go with a task to the pool.
pub fn copied(buffers: Option<Vec<Uint8Array>>) -> Vec<Option<Vec<u8>>> {
    buffers
        .unwrap_or_default()
        .iter()
        .map(|b| Some(b.to_vec()))
        .collect()
}

/// `predictions` inputs: JSON whose top-level `$raw` values are audio or tensors in `buffers`.
pub fn inputs_with_raw(json: &str, mut buffers: Vec<Option<Vec<u8>>>) -> ingle::Result<Inputs> {
    let mut inputs = ingle::inputs_from_json(json)?;
    for (name, value) in inputs.iter_mut() {
        let is_raw = value.as_dict().is_some_and(|d| d.contains_key("$raw"));
        if is_raw {
            *value = value_from_js(value.to_json()?, &mut buffers)
                .map_err(|problem| Error::invalid(name.as_str(), format!("`{name}`: {problem}")))?;
        }
    }
    Ok(inputs)
}
