//! Predictors written in C: `ingle_predictor_register` serves a callback under a tag, through
//! the OpenAI functions and `ingle_predictions_*`, like a built-in model.
//!
//! The core pulls outputs one at a time, while a C callback pushes them as it goes; so each
//! prediction runs its callback on a thread of its own, and every `ingle_sink_emit` hands one
//! output over and waits until the consumer takes it. When the consumer goes away (a stream
//! dropped, a callback returning non-zero), the next `ingle_sink_emit` returns
//! `INGLE_ERROR_CANCELLED` and the callback should return.

use crate::call::{c_string_lossy, client_arg, ffi_call, str_arg, Failure, FfiResult};
use crate::{IngleClient, IngleStatus};
use ingle_core::{
    Audio, Cancel, Context, Declaration, Dtype, Error, ExternalPredictor, Inputs, Logs,
    OutputStream, Outputs, Tensor, Value,
};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// The inputs of one call of a C predictor. Opaque; valid during the callback only. Read
/// scalars and lists with `ingle_inputs_json`, audio with `ingle_inputs_audio` and tensors
/// with `ingle_inputs_tensor`.
pub struct IngleInputs {
    /// The inputs that have a JSON form, as one object.
    json: CString,
    /// Audio and tensor inputs, by name.
    raw: BTreeMap<String, RawInput>,
}

enum RawInput {
    Audio(Audio),
    Tensor { tensor: Tensor, dtype: CString },
}

/// Where a C predictor sends its outputs, logs and failure. Opaque; valid during the callback
/// only, and only on the thread the callback runs on.
pub struct IngleSink {
    tag: String,
    /// Output names in signature order.
    outputs: Vec<String>,
    /// Audio and tensor values set for the next `ingle_sink_emit`.
    staged: BTreeMap<String, Value>,
    sender: SyncSender<ingle_core::Result<Outputs>>,
    /// Set when the consumer of the outputs went away (their stream dropped).
    gone: Arc<AtomicBool>,
    /// The call's cancel: its caller stopped it.
    cancel: Cancel,
    logs: Logs,
    error: Option<String>,
}

/// A predictor's callback: computes its outputs from `inputs` and sends each with
/// `ingle_sink_emit` (once for an eager predictor, any number of times for a generator).
/// Returns 0 on success; non-zero fails the prediction, with the message given to
/// `ingle_sink_fail` (or a generic one). It runs on a thread ingle starts for each
/// prediction, so it must be safe to call from several threads at once with the same
/// `user_data`. It must not unwind (a C++ exception or `longjmp`) through ingle.
pub type InglePredictorCallback = Option<
    unsafe extern "C" fn(
        inputs: *const IngleInputs,
        sink: *mut IngleSink,
        user_data: *mut c_void,
    ) -> i32,
>;

/// A registered callback, and how many of its calls are running.
struct Callback {
    function: unsafe extern "C" fn(*const IngleInputs, *mut IngleSink, *mut c_void) -> i32,
    user_data: *mut c_void,
    running: Mutex<usize>,
    returned: Condvar,
}

/// Held by the predictor: when the client is freed, waits until every call of the callback
/// has returned, so the caller may free `user_data` once `ingle_client_free` returns.
struct WaitForCalls(Arc<Callback>);

impl Drop for WaitForCalls {
    fn drop(&mut self) {
        let mut running = self
            .0
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *running > 0 {
            running = self
                .0
                .returned
                .wait(running)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

// SAFETY: `ingle_predictor_register` requires the callback and its `user_data` to be usable
// from any thread; ingle only passes the pointer back to the callback.
unsafe impl Send for Callback {}
unsafe impl Sync for Callback {}

fn inputs_of(inputs: Inputs) -> FfiResult<IngleInputs> {
    let mut json = serde_json::Map::new();
    let mut raw = BTreeMap::new();
    for (name, value) in inputs {
        match value {
            Value::Audio(audio) => {
                raw.insert(name, RawInput::Audio(audio));
            }
            Value::Tensor(tensor) => {
                let dtype = CString::new(tensor.dtype.name()).expect("no NUL in dtype names");
                raw.insert(name, RawInput::Tensor { tensor, dtype });
            }
            // A list of audio or tensors (a chat's images, `ChatImages`; its audio parts,
            // `ChatAudios`): each raw under `name[i]`, the JSON listing those names.
            Value::List(items)
                if !items.is_empty()
                    && items
                        .iter()
                        .all(|v| matches!(v, Value::Audio(_) | Value::Tensor(_))) =>
            {
                let mut names = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let item_name = format!("{name}[{i}]");
                    names.push(serde_json::Value::String(item_name.clone()));
                    match item {
                        Value::Audio(audio) => {
                            raw.insert(item_name, RawInput::Audio(audio));
                        }
                        Value::Tensor(tensor) => {
                            let dtype =
                                CString::new(tensor.dtype.name()).expect("no NUL in dtype names");
                            raw.insert(item_name, RawInput::Tensor { tensor, dtype });
                        }
                        other => {
                            json.insert(item_name, other.to_json()?);
                        }
                    }
                }
                json.insert(name, serde_json::Value::Array(names));
            }
            other => {
                json.insert(name, other.to_json()?);
            }
        }
    }
    Ok(IngleInputs {
        json: c_string_lossy(serde_json::Value::Object(json).to_string()),
        raw,
    })
}

/// The outputs the callback's thread sends, pulled by the core one at a time.
struct Received {
    receiver: Receiver<ingle_core::Result<Outputs>>,
    /// Not the call's cancel: the stream ending (an eager predictor's one output read) is
    /// not a cancellation of the call.
    gone: Arc<AtomicBool>,
}

impl Iterator for Received {
    type Item = ingle_core::Result<Outputs>;

    fn next(&mut self) -> Option<Self::Item> {
        // Every sender gone: the callback returned and said how it went.
        self.receiver.recv().ok()
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        // The next emit fails once the receiver is gone; this says so before it blocks.
        self.gone.store(true, Ordering::Release);
    }
}

fn start(
    callback: &Arc<Callback>,
    tag: &str,
    outputs: &[String],
    inputs: Inputs,
    context: &Context,
) -> ingle_core::Result<OutputStream> {
    let inputs = inputs_of(inputs).map_err(|f| f.error)?;
    let (sender, receiver) = sync_channel(0);
    let gone = Arc::new(AtomicBool::new(false));
    let mut sink = IngleSink {
        tag: tag.to_string(),
        outputs: outputs.to_vec(),
        staged: BTreeMap::new(),
        sender: sender.clone(),
        gone: Arc::clone(&gone),
        cancel: context.cancel.clone(),
        logs: context.logs.clone(),
        error: None,
    };
    let callback = Arc::clone(callback);
    let tag = tag.to_string();
    // Counted before the thread starts, so a client freed meanwhile waits for it.
    *callback
        .running
        .lock()
        .unwrap_or_else(PoisonError::into_inner) += 1;
    let counted = Arc::clone(&callback);
    let on_error = Arc::clone(&callback);
    let finished = move || {
        let mut running = counted
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *running -= 1;
        counted.returned.notify_all();
    };
    let spawned = std::thread::Builder::new()
        .name(format!("ingle-predictor {tag}"))
        .spawn(move || {
            let returned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
                (callback.function)(&inputs, &mut sink, callback.user_data)
            }));
            let failure = match returned {
                Ok(0) => None,
                Ok(code) => Some(sink.error.take().unwrap_or_else(|| {
                    format!("The predictor `{tag}` failed (its callback returned {code})")
                })),
                Err(_) => Some(format!("The predictor `{tag}` panicked inside ingle")),
            };
            drop(sink); // its sender: the consumer sees the end once the result is sent
            if let Some(message) = failure {
                // Ignored when the consumer is gone: nobody is waiting for the result.
                let _ = sender.send(Err(Error::model(message)));
            }
            drop(sender);
            finished();
        });
    if let Err(e) = spawned {
        // The closure, and with it the count's decrement, never ran.
        let mut running = on_error
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *running -= 1;
        on_error.returned.notify_all();
        return Err(Error::internal(format!(
            "cannot start a predictor thread: {e}"
        )));
    }
    Ok(Box::new(Received { receiver, gone }))
}

/// Serves `callback` as the predictor its declaration describes. `declaration_json` is
/// `{"tag", "kind": "eager" | "generator", "description", "inputs": [...], "outputs": [...]}`,
/// each parameter `{"name", "type", "description", "default", "required", "min", "max",
/// "choices", "items", "annotation"}`; `type` is one of boolean, integer, number, string,
/// array, object, tensor, audio; `annotation` one of generic, embedding, embedding_dims
/// (`{"type", "min", "max"}`), audio_voice (`{"type", "voices"}`), audio_speed (`{"type", "min",
/// "max"}`), audio (`{"type", "sample_rate"}`), transcription_language, transcription_prompt,
/// transcription_task (a string input: `transcribe` or `translate`; it makes the predictor serve
/// `audio.translations`), transcription_word_timestamps, transcription_segment, chat_messages
/// (or `{"type", "context_length"}`: the tokens its model holds, reported by `models` and
/// bounding `max_tokens`), prompt, text_delta,
/// finish_reason, usage, max_tokens, temperature, top_p, seed, stop, frequency_penalty,
/// presence_penalty, rerank_query and rerank_documents (a string and an array of strings in) with
/// rerank_scores (an array of numbers out, one per document: they make it serve `rerank`),
/// image_width, image_height and image_count (integers in: with a string prompt in and a uint8
/// `[H, W, C]` tensor out, C = 1, 3 or 4, they make it serve `images.generate`, docs/images.md)
/// (docs/predictors.md has the whole format and the rules of each OpenAI
/// method). A declaration that breaks a rule returns `INGLE_ERROR_INVALID_REQUEST`, the last
/// error naming the parameter. `user_data` is passed to every call of `callback`;
/// `ingle_client_free` waits until every running call has returned, so it may be freed after
/// that (a callback that ignores `INGLE_ERROR_CANCELLED` delays `ingle_client_free`).
#[no_mangle]
pub unsafe extern "C" fn ingle_predictor_register(
    client: *mut IngleClient,
    declaration_json: *const c_char,
    callback: InglePredictorCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let declaration = Declaration::from_json(str_arg(declaration_json, "declaration_json")?)?;
        let function = callback.ok_or_else(|| Failure::null_argument("callback"))?;
        let callback = Arc::new(Callback {
            function,
            user_data,
            running: Mutex::new(0),
            returned: Condvar::new(),
        });
        let wait = WaitForCalls(Arc::clone(&callback));
        let tag = declaration.tag.clone();
        let outputs: Vec<String> = declaration
            .signature
            .outputs
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let predictor = ExternalPredictor::new(declaration, move |inputs, context| {
            let _ = &wait; // dropped with the predictor: waits for running calls
            start(&callback, &tag, &outputs, inputs, context)
        });
        client.register(Arc::new(predictor))?;
        Ok(())
    })
}

impl IngleSink {
    /// Whether the prediction should stop: its consumer went away, or its call was cancelled.
    fn cancelled(&self) -> bool {
        self.gone.load(Ordering::Acquire) || self.cancel.is_cancelled()
    }
}

unsafe fn inputs_arg<'a>(inputs: *const IngleInputs) -> FfiResult<&'a IngleInputs> {
    inputs
        .as_ref()
        .ok_or_else(|| Failure::null_argument("inputs"))
}

unsafe fn sink_arg<'a>(sink: *mut IngleSink) -> FfiResult<&'a mut IngleSink> {
    sink.as_mut().ok_or_else(|| Failure::null_argument("sink"))
}

/// The inputs that are not audio or tensors, as one JSON object of parameter names to values
/// (defaults filled in). A list of audio or tensors (a chat's images, `chat_images`; its audio
/// parts, `chat_audios`) is listed by the names to read each by: `"images": ["images[0]",
/// "images[1]"]` for `ingle_inputs_tensor(inputs, "images[0]", ...)`. Owned by `inputs`: valid
/// during the callback; do not free it.
#[no_mangle]
pub unsafe extern "C" fn ingle_inputs_json(inputs: *const IngleInputs) -> *const c_char {
    match inputs.as_ref() {
        Some(inputs) => inputs.json.as_ptr(),
        None => c"{}".as_ptr(),
    }
}

/// The audio input `name`: `*samples` receives `*frames * *channels` float32 samples
/// (interleaved), owned by `inputs`; `*sample_rate` its rate (the rate the parameter's
/// annotation declares when it came through `audio.transcriptions`). `INGLE_ERROR_NOT_FOUND`
/// when there is no audio input of that name.
#[no_mangle]
pub unsafe extern "C" fn ingle_inputs_audio(
    inputs: *const IngleInputs,
    name: *const c_char,
    samples: *mut *const f32,
    frames: *mut usize,
    channels: *mut u16,
    sample_rate: *mut u32,
) -> IngleStatus {
    ffi_call(|| {
        let inputs = inputs_arg(inputs)?;
        let name = str_arg(name, "name")?;
        if samples.is_null() || frames.is_null() || channels.is_null() || sample_rate.is_null() {
            return Err(Failure::null_argument("samples"));
        }
        match inputs.raw.get(name) {
            Some(RawInput::Audio(audio)) => {
                *samples = audio.samples.as_ptr();
                *frames = audio.samples.len() / audio.channels.max(1) as usize;
                *channels = audio.channels;
                *sample_rate = audio.sample_rate;
                Ok(())
            }
            _ => Err(Failure::from(
                Error::new(
                    ingle_core::ErrorKind::NotFound,
                    format!(
                        "There is no audio input `{}`",
                        ingle_core::error::shown(name)
                    ),
                )
                .with_param("name"),
            )),
        }
    })
}

/// The tensor input `name`: `*data` receives its row-major little-endian elements, `*dtype`
/// their NumPy name (`"float32"`, `"int64"`, ...), `*shape` its `*ndim` dimensions; all owned
/// by `inputs`. `INGLE_ERROR_NOT_FOUND` when there is no tensor input of that name.
#[no_mangle]
pub unsafe extern "C" fn ingle_inputs_tensor(
    inputs: *const IngleInputs,
    name: *const c_char,
    data: *mut *const c_void,
    dtype: *mut *const c_char,
    shape: *mut *const usize,
    ndim: *mut usize,
) -> IngleStatus {
    ffi_call(|| {
        let inputs = inputs_arg(inputs)?;
        let name = str_arg(name, "name")?;
        if data.is_null() || dtype.is_null() || shape.is_null() || ndim.is_null() {
            return Err(Failure::null_argument("data"));
        }
        match inputs.raw.get(name) {
            Some(RawInput::Tensor {
                tensor,
                dtype: name,
            }) => {
                *data = tensor.data.as_ptr() as *const c_void;
                *dtype = name.as_ptr();
                *shape = tensor.shape.as_ptr();
                *ndim = tensor.shape.len();
                Ok(())
            }
            _ => Err(Failure::from(
                Error::new(
                    ingle_core::ErrorKind::NotFound,
                    format!(
                        "There is no tensor input `{}`",
                        ingle_core::error::shown(name)
                    ),
                )
                .with_param("name"),
            )),
        }
    })
}

impl IngleSink {
    fn declared(&self, name: &str) -> FfiResult<()> {
        if self.outputs.iter().any(|o| o == name) {
            return Ok(());
        }
        Err(Failure::from(Error::invalid(
            "name",
            format!(
                "The predictor `{}` has no output `{}`; its outputs: {}",
                self.tag,
                ingle_core::error::shown(name),
                self.outputs.join(", ")
            ),
        )))
    }
}

/// Sets the audio output `name` of the next `ingle_sink_emit`: `frames * channels` float32
/// samples (interleaved) at `sample_rate`, copied.
#[no_mangle]
pub unsafe extern "C" fn ingle_sink_set_audio(
    sink: *mut IngleSink,
    name: *const c_char,
    samples: *const f32,
    frames: usize,
    channels: u16,
    sample_rate: u32,
) -> IngleStatus {
    ffi_call(|| {
        let sink = sink_arg(sink)?;
        let name = str_arg(name, "name")?;
        sink.declared(name)?;
        let count = frames.checked_mul(channels as usize).ok_or_else(|| {
            Failure::from(Error::invalid("frames", "`frames * channels` overflows"))
        })?;
        if samples.is_null() && count > 0 {
            return Err(Failure::null_argument("samples"));
        }
        let samples = if count == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(samples, count).to_vec()
        };
        sink.staged.insert(
            name.to_string(),
            Value::Audio(Audio {
                samples,
                sample_rate,
                channels,
            }),
        );
        Ok(())
    })
}

/// Sets the tensor output `name` of the next `ingle_sink_emit`: `dtype` one of float32,
/// float16, int64, int32, int8, uint8, bool; `ndim` dimensions in `shape`; `data` the
/// row-major little-endian elements, copied. At most 1 GiB: a larger shape is refused
/// (`INGLE_ERROR_INVALID_REQUEST`, param `shape`) before `data` is read.
#[no_mangle]
pub unsafe extern "C" fn ingle_sink_set_tensor(
    sink: *mut IngleSink,
    name: *const c_char,
    dtype: *const c_char,
    shape: *const usize,
    ndim: usize,
    data: *const c_void,
) -> IngleStatus {
    ffi_call(|| {
        let sink = sink_arg(sink)?;
        let name = str_arg(name, "name")?;
        sink.declared(name)?;
        let dtype = str_arg(dtype, "dtype")?;
        let dtype = Dtype::from_name(dtype).ok_or_else(|| {
            Failure::from(Error::invalid(
                "dtype",
                format!("Unknown dtype `{}`", ingle_core::error::shown(dtype)),
            ))
        })?;
        if shape.is_null() && ndim > 0 {
            return Err(Failure::null_argument("shape"));
        }
        let shape = if ndim == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(shape, ndim).to_vec()
        };
        let bytes = shape
            .iter()
            .try_fold(dtype.size(), |n, &d| n.checked_mul(d))
            .ok_or_else(|| Failure::from(Error::invalid("shape", "The tensor's size overflows")))?;
        // Refused before `data` is read: its bytes are not copied (nor read past, if the shape
        // claims more than `data` holds).
        if bytes > ingle_core::MAX_TENSOR_BYTES {
            return Err(Failure::from(Error::invalid(
                "shape",
                format!(
                    "The tensor holds {bytes} bytes; at most {} GiB crosses into ingle",
                    ingle_core::MAX_TENSOR_BYTES >> 30
                ),
            )));
        }
        if data.is_null() && bytes > 0 {
            return Err(Failure::null_argument("data"));
        }
        let data = if bytes == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(data as *const u8, bytes).to_vec()
        };
        sink.staged.insert(
            name.to_string(),
            Value::Tensor(Tensor::new(dtype, shape, data)?),
        );
        Ok(())
    })
}

/// Sends one output: `outputs_json` is a JSON object of output names to values (outputs left
/// out are null), merged with the audio and tensors set since the last emit. Waits until the
/// consumer takes it. Returns `INGLE_ERROR_CANCELLED` once the consumer has gone away (the
/// callback should then return), `INGLE_ERROR_INVALID_REQUEST` for an unknown output or bad
/// JSON. `outputs_json` may be NULL when every output was set as audio or a tensor.
#[no_mangle]
pub unsafe extern "C" fn ingle_sink_emit(
    sink: *mut IngleSink,
    outputs_json: *const c_char,
) -> IngleStatus {
    ffi_call(|| {
        let sink = sink_arg(sink)?;
        let mut values: BTreeMap<String, Value> = std::mem::take(&mut sink.staged);
        if !outputs_json.is_null() {
            let given = ingle_core::inputs_from_json(str_arg(outputs_json, "outputs_json")?)
                .map_err(|e| {
                    Failure::from(Error::invalid(
                        "outputs_json",
                        e.message.replace("inputs", "outputs"),
                    ))
                })?;
            for (name, value) in given {
                sink.declared(&name)?;
                values.insert(name, value);
            }
        }
        let outputs: Outputs = sink
            .outputs
            .iter()
            .map(|name| values.remove(name).unwrap_or_default())
            .collect();
        if sink.cancelled() || sink.sender.send(Ok(outputs)).is_err() {
            sink.gone.store(true, Ordering::Release);
            return Err(Failure::from(
                Error::cancelled("The prediction was cancelled: its consumer went away")
                    .with_param("sink"),
            ));
        }
        Ok(())
    })
}

/// Whether the call was cancelled (1) or not (0): its consumer went away, or its caller stopped
/// it (a chunk callback's nonzero return ends the call). A long computation between emits can
/// check it to stop early.
#[no_mangle]
pub unsafe extern "C" fn ingle_sink_cancelled(sink: *const IngleSink) -> i32 {
    sink.as_ref().map_or(1, |s| i32::from(s.cancelled()))
}

/// Appends `text` to the prediction's logs (what `ingle_predictions_*` report as `logs`).
#[no_mangle]
pub unsafe extern "C" fn ingle_sink_log(sink: *mut IngleSink, text: *const c_char) -> IngleStatus {
    ffi_call(|| {
        let sink = sink_arg(sink)?;
        sink.logs.write(str_arg(text, "text")?);
        Ok(())
    })
}

/// Sets the message the prediction fails with when the callback then returns non-zero.
#[no_mangle]
pub unsafe extern "C" fn ingle_sink_fail(
    sink: *mut IngleSink,
    message: *const c_char,
) -> IngleStatus {
    ffi_call(|| {
        let sink = sink_arg(sink)?;
        let message = str_arg(message, "message")?;
        sink.error = Some(format!("The predictor `{}` failed: {message}", sink.tag));
        Ok(())
    })
}
