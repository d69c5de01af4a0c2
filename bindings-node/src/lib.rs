//! The native addon of the `ingle` npm package. Conversion only: requests arrive as OpenAI JSON
//! text, responses and chunks leave as JSON text, and `index.js` gives them the interface of
//! the `openai` package. Every call that waits on the core runs on the libuv thread pool and
//! resolves a Promise, so the event loop never blocks.

use ingle_core::openai::{ChatCompletionRequest, CompletionRequest};
use ingle_core::{inputs_from_json, Client, Config, Error};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Status, Task};
use napi_derive::napi;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A stream of JSON texts (chunks or predictions) pulled from the core.
type JsonStream = Box<dyn Iterator<Item = ingle_core::Result<String>> + Send>;

/// A core error as a JS `Error` whose message is the error's fields as JSON; `index.js` turns
/// it into `BadRequestError`, `NotFoundError`, ... like the `openai` package's.
fn js_error(error: Error) -> napi::Error {
    let reason = serde_json::json!({
        "ingle_error": true,
        "kind": error.kind,
        "message": error.to_string(),
        "type": error.kind.openai_type(),
        "param": error.param,
        "code": error.code,
        "status": error.kind.http_status(),
    });
    napi::Error::new(Status::GenericFailure, reason.to_string())
}

fn to_json(value: &impl serde::Serialize) -> ingle_core::Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::internal(format!("Cannot serialize a response: {e}")))
}

fn json_stream<T: serde::Serialize + 'static>(
    items: impl Iterator<Item = ingle_core::Result<T>> + Send + 'static,
) -> JsonStream {
    Box::new(items.map(|item| item.and_then(|item| to_json(&item))))
}

/// Work for the libuv thread pool that yields a JSON text, or nothing (`null` in JS).
pub struct Work(Option<Box<dyn FnOnce() -> ingle_core::Result<Option<String>> + Send>>);

fn work(
    f: impl FnOnce() -> ingle_core::Result<Option<String>> + Send + 'static,
) -> AsyncTask<Work> {
    AsyncTask::new(Work(Some(Box::new(f))))
}

impl Task for Work {
    type Output = Option<String>;
    type JsValue = Option<String>;

    fn compute(&mut self) -> napi::Result<Option<String>> {
        let f = self
            .0
            .take()
            .ok_or_else(|| napi::Error::new(Status::GenericFailure, "ingle: a task ran twice"))?;
        // A panic must not unwind into Node: it becomes an internal error.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(result) => result.map_err(js_error),
            Err(_) => Err(js_error(Error::internal(
                "ingle panicked; this is a bug, please report it",
            ))),
        }
    }

    fn resolve(&mut self, _env: Env, output: Option<String>) -> napi::Result<Option<String>> {
        Ok(output)
    }
}

/// Work that starts a stream, resolving to a `NativeStream`.
pub struct StartStream(Option<Box<dyn FnOnce() -> ingle_core::Result<JsonStream> + Send>>);

fn start(
    f: impl FnOnce() -> ingle_core::Result<JsonStream> + Send + 'static,
) -> AsyncTask<StartStream> {
    AsyncTask::new(StartStream(Some(Box::new(f))))
}

impl Task for StartStream {
    type Output = JsonStream;
    type JsValue = NativeStream;

    fn compute(&mut self) -> napi::Result<JsonStream> {
        let f = self
            .0
            .take()
            .ok_or_else(|| napi::Error::new(Status::GenericFailure, "ingle: a task ran twice"))?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(result) => result.map_err(js_error),
            Err(_) => Err(js_error(Error::internal(
                "ingle panicked; this is a bug, please report it",
            ))),
        }
    }

    fn resolve(&mut self, _env: Env, stream: JsonStream) -> napi::Result<NativeStream> {
        Ok(NativeStream {
            inner: Arc::new(Mutex::new(Some(stream))),
            closed: Arc::new(AtomicBool::new(false)),
        })
    }
}

/// Set to stop a running whole-response `create` at its next token (an aborted `signal`).
#[napi]
pub struct NativeCancel {
    flag: Arc<AtomicBool>,
}

#[napi]
impl NativeCancel {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)] // a JS constructor
    pub fn new() -> Self {
        NativeCancel {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    #[napi]
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
    }
}

fn cancel_flag(cancel: Option<&NativeCancel>) -> Arc<AtomicBool> {
    cancel.map_or_else(|| Arc::new(AtomicBool::new(false)), |c| Arc::clone(&c.flag))
}

/// A client of the core, shared by every request of the JS client.
#[napi]
pub struct NativeClient {
    client: Client,
}

#[napi]
impl NativeClient {
    /// `config`: a TOML config file (default: `$INGLE_CONFIG`, else the default model);
    /// `modelsDir`: where relative model paths resolve.
    #[napi(constructor)]
    pub fn new(config: Option<String>, models_dir: Option<String>) -> napi::Result<Self> {
        let mut config = match config {
            Some(path) => Config::from_file(std::path::Path::new(&path)),
            None => Config::from_env(),
        }
        .map_err(js_error)?;
        if let Some(dir) = models_dir {
            config.models_dir = Some(dir.into());
        }
        let client = Client::from_config(&config).map_err(js_error)?;
        Ok(NativeClient { client })
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn chat_completions_create(
        &self,
        request: String,
        cancel: Option<&NativeCancel>,
    ) -> AsyncTask<Work> {
        let (client, cancel) = (self.client.clone(), cancel_flag(cancel));
        work(move || {
            let request = ChatCompletionRequest::from_json(&request)?;
            let stop = || cancel.load(Ordering::Acquire);
            Ok(Some(to_json(
                &client.chat.completions.create_until(&request, stop)?,
            )?))
        })
    }

    #[napi(ts_return_type = "Promise<NativeStream>")]
    pub fn chat_completions_stream(&self, request: String) -> AsyncTask<StartStream> {
        let client = self.client.clone();
        start(move || {
            let request = ChatCompletionRequest::from_json(&request)?;
            Ok(json_stream(client.chat.completions.stream(&request)?))
        })
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn completions_create(
        &self,
        request: String,
        cancel: Option<&NativeCancel>,
    ) -> AsyncTask<Work> {
        let (client, cancel) = (self.client.clone(), cancel_flag(cancel));
        work(move || {
            let request = CompletionRequest::from_json(&request)?;
            let stop = || cancel.load(Ordering::Acquire);
            Ok(Some(to_json(
                &client.completions.create_until(&request, stop)?,
            )?))
        })
    }

    #[napi(ts_return_type = "Promise<NativeStream>")]
    pub fn completions_stream(&self, request: String) -> AsyncTask<StartStream> {
        let client = self.client.clone();
        start(move || {
            let request = CompletionRequest::from_json(&request)?;
            Ok(json_stream(client.completions.stream(&request)?))
        })
    }

    #[napi]
    pub fn models_list(&self) -> napi::Result<String> {
        to_json(&self.client.models.list()).map_err(js_error)
    }

    #[napi]
    pub fn models_retrieve(&self, model: String) -> napi::Result<String> {
        self.client
            .models
            .retrieve(&model)
            .and_then(|m| to_json(&m))
            .map_err(js_error)
    }

    /// The final prediction as JSON; a prediction that failed while running rejects.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn predictions_create(&self, tag: String, inputs: String) -> AsyncTask<Work> {
        let client = self.client.clone();
        work(move || {
            let prediction = client
                .predictions
                .create(&tag, inputs_from_json(&inputs)?)?;
            match prediction.error {
                Some(error) => Err(error),
                None => Ok(Some(prediction.to_json()?.to_string())),
            }
        })
    }

    #[napi(ts_return_type = "Promise<NativeStream>")]
    pub fn predictions_stream(&self, tag: String, inputs: String) -> AsyncTask<StartStream> {
        let client = self.client.clone();
        start(move || {
            let predictions = client
                .predictions
                .stream(&tag, inputs_from_json(&inputs)?)?;
            let stream: JsonStream = Box::new(predictions.map(|p| match p.error {
                Some(error) => Err(error),
                None => Ok(p.to_json()?.to_string()),
            }));
            Ok(stream)
        })
    }

    /// Load figures of a model as JSON, loading it if needed.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn metrics(&self, model: String) -> AsyncTask<Work> {
        let client = self.client.clone();
        work(move || {
            let m = client.metrics(&model)?;
            Ok(Some(
                serde_json::json!({
                    "active_requests": m.active_requests,
                    "queued_requests": m.queued_requests,
                    "generated_tokens": m.generated_tokens,
                    "cancelled_requests": m.cancelled_requests,
                })
                .to_string(),
            ))
        })
    }
}

/// A running stream: `next()` resolves to the next JSON text, or `null` at the end.
/// `close()` (or garbage collection) stops generation, even while a `next()` is pending: that
/// call resolves with its item, and the stream then ends.
#[napi]
pub struct NativeStream {
    inner: Arc<Mutex<Option<JsonStream>>>,
    closed: Arc<AtomicBool>,
}

#[napi]
impl NativeStream {
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next(&self) -> AsyncTask<Work> {
        let (inner, closed) = (Arc::clone(&self.inner), Arc::clone(&self.closed));
        work(move || {
            let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
            if closed.load(Ordering::Acquire) {
                *inner = None; // cancels generation
            }
            let item = inner.as_mut().and_then(Iterator::next);
            if !matches!(item, Some(Ok(_))) || closed.load(Ordering::Acquire) {
                *inner = None; // the end, an error, or closed while waiting
            }
            item.transpose()
        })
    }

    /// Stops generation. Safe to call more than once.
    #[napi]
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Ok(mut inner) = self.inner.try_lock() {
            *inner = None;
        }
    }
}

/// The version of ingle.
#[napi]
pub fn version() -> &'static str {
    ingle_core::VERSION
}
