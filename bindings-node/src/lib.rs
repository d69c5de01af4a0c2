//! The native addon of the `ingle` npm package. Conversion only: requests arrive as OpenAI JSON
//! text (an audio upload as its bytes or samples beside it), responses and chunks leave as JSON
//! text, and `index.js` gives them the interface of the `openai` package. Every call that waits
//! on the core runs on a thread of its own (`spawned.rs`: not libuv's pool, which JavaScript
//! predictors would exhaust) and resolves a Promise, so the event loop never blocks.

pub mod predictors;
mod spawned;

use ingle::json_text::{to_json_text, JsonTextStream};
use ingle::methods::{self, Answer};
use ingle::openai::{EncodingFormat, SpeechStream, TranscriptionAudio};
use ingle::{Cancel, Client, Config, Error};
use napi::bindgen_prelude::{Either, Float32Array, Uint8Array};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Task};
use napi_derive::napi;
use spawned::Spawned;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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

/// Work for a thread of `spawned`'s pool: a JSON text (or nothing, `null` in JS), a whole
/// [`Answer`] of the table, or a started stream (`Started`, of an [`Opened`] one).
pub struct Job<T>(Option<Box<dyn FnOnce() -> ingle::Result<T> + Send>>);

fn work(
    f: impl FnOnce() -> ingle::Result<Option<String>> + Send + 'static,
) -> Spawned<Job<Option<String>>> {
    Spawned::new(Job(Some(Box::new(f))))
}

/// Starts a stream on the pool with `client`'s calls stopped by `cancel` (a new one if none):
/// an aborted signal stops the start (a transcription's decoding), and the stream's `close()`
/// stops the work a pending `next()` waits for.
fn start<S: Send + 'static>(
    client: &Client,
    cancel: Option<&NativeCancel>,
    f: impl FnOnce(&Client) -> ingle::Result<S> + Send + 'static,
) -> Spawned<Job<Started<S>>>
where
    Job<Started<S>>: Task,
{
    let cancel = cancel.map_or_else(Cancel::new, |c| c.cancel.clone());
    let client = client.with_cancel(&cancel);
    Spawned::new(Job(Some(Box::new(move || {
        Ok(Started {
            stream: f(&client)?,
            cancel,
        })
    }))))
}

/// A stream started on the pool, and the cancel of its call.
pub struct Started<S> {
    stream: S,
    cancel: Cancel,
}

impl<T> Job<T> {
    fn run(&mut self) -> napi::Result<T> {
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
}

impl Task for Job<Option<String>> {
    type Output = Option<String>;
    type JsValue = Option<String>;

    fn compute(&mut self) -> napi::Result<Option<String>> {
        self.run()
    }

    fn resolve(&mut self, _env: Env, output: Option<String>) -> napi::Result<Option<String>> {
        Ok(output)
    }
}

impl Task for Job<Started<JsonTextStream>> {
    type Output = Started<JsonTextStream>;
    type JsValue = NativeStream;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        self.run()
    }

    fn resolve(&mut self, _env: Env, started: Self::Output) -> napi::Result<NativeStream> {
        Ok(NativeStream {
            stream: Closable::new(started.stream, started.cancel),
        })
    }
}

/// A stream of the table as it started: JSON texts, or speech with its first bytes (pulled
/// before the stream is handed to JS, so an error in the first sentence rejects the start).
pub enum Opened {
    Texts(JsonTextStream),
    Speech(Box<SpeechStream>, Option<Vec<u8>>),
}

impl Opened {
    fn of(answer: Answer) -> ingle::Result<Opened> {
        match answer {
            Answer::Audio(mut speech) => {
                let first = speech.next().transpose()?;
                Ok(Opened::Speech(Box::new(speech), first))
            }
            answer => Ok(Opened::Texts(answer.into_stream()?)),
        }
    }
}

impl Task for Job<Started<Opened>> {
    type Output = Started<Opened>;
    type JsValue = Either<NativeStream, NativeSpeechStream>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        self.run()
    }

    fn resolve(&mut self, _env: Env, started: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match started.stream {
            Opened::Texts(stream) => Either::A(NativeStream {
                stream: Closable::new(stream, started.cancel),
            }),
            Opened::Speech(stream, first) => Either::B(NativeSpeechStream {
                content_type: stream.content_type(),
                stream: Closable::new(*stream, started.cancel),
                first: Mutex::new(first),
            }),
        })
    }
}

/// Embeddings as numbers: `data` is the row-major `rows × dims` float32 matrix, handed to JS
/// without a copy (the typed array takes over the engine's buffer). `index.js` builds the
/// OpenAI response from it.
#[napi(object)]
pub struct NativeEmbeddings {
    pub model: String,
    pub rows: u32,
    pub dims: u32,
    pub prompt_tokens: u32,
    /// Whether the request asked for `encoding_format: "base64"`.
    pub base64: bool,
    pub data: Float32Array,
}

/// A whole answer of the table as JS takes it: text (JSON, a transcription's body), or
/// embeddings as their matrix, without JSON.
impl Task for Job<Answer> {
    type Output = Answer;
    type JsValue = Either<String, NativeEmbeddings>;

    fn compute(&mut self) -> napi::Result<Answer> {
        self.run()
    }

    fn resolve(&mut self, _env: Env, answer: Answer) -> napi::Result<Self::JsValue> {
        Ok(match answer {
            Answer::Matrix { matrix: m, format } => Either::B(NativeEmbeddings {
                model: m.model,
                rows: m.rows as u32,
                dims: m.dims as u32,
                prompt_tokens: m.prompt_tokens,
                base64: format == EncodingFormat::Base64,
                data: Float32Array::new(m.data),
            }),
            answer => Either::A(answer.into_text().map_err(js_error)?),
        })
    }
}

impl Task for Job<Option<Vec<u8>>> {
    type Output = Option<Vec<u8>>;
    type JsValue = Option<Uint8Array>;

    fn compute(&mut self) -> napi::Result<Option<Vec<u8>>> {
        self.run()
    }

    fn resolve(&mut self, _env: Env, bytes: Option<Vec<u8>>) -> napi::Result<Option<Uint8Array>> {
        Ok(bytes.map(Uint8Array::new))
    }
}

/// Audio for `audio.transcriptions` and `audio.translations`, as `index.js` hands it over: an
/// uploaded file's bytes (read whole in JS) and its name (a hint for the container), or
/// interleaved float32 `samples` at `sample_rate` with `channels`.
#[napi(object)]
pub struct NativeAudio {
    pub bytes: Option<Uint8Array>,
    pub filename: Option<String>,
    pub samples: Option<Float32Array>,
    pub sample_rate: Option<u32>,
    pub channels: Option<u32>,
}

/// The audio as the core takes it, copied out of the JS buffers (on the JS thread, so the work
/// on the thread pool owns its data).
fn transcription_audio(audio: NativeAudio) -> napi::Result<TranscriptionAudio> {
    match audio.samples {
        Some(samples) => {
            let channels = u16::try_from(audio.channels.unwrap_or(1)).map_err(|_| {
                js_error(Error::invalid(
                    "file.channels",
                    "`file.channels` must be at most 65535",
                ))
            })?;
            Ok(TranscriptionAudio::samples(
                samples.to_vec(),
                audio.sample_rate.unwrap_or(0),
                channels,
            ))
        }
        None => Ok(TranscriptionAudio::file(
            audio.bytes.map(|b| b.to_vec()).unwrap_or_default(),
            audio.filename.as_deref(),
        )),
    }
}

/// Set to stop a running call at its next step (an aborted `signal`): the core's [`Cancel`].
#[napi]
pub struct NativeCancel {
    cancel: Cancel,
}

#[napi]
impl NativeCancel {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)] // a JS constructor
    pub fn new() -> Self {
        NativeCancel {
            cancel: Cancel::new(),
        }
    }

    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

/// `client` with its calls stopped by `cancel`, if one is given.
fn cancelled_by(client: &Client, cancel: Option<&NativeCancel>) -> Client {
    match cancel {
        Some(cancel) => client.with_cancel(&cancel.cancel),
        None => client.clone(),
    }
}

/// A JS progress callback, called on the main thread with an event's JSON; it does not keep
/// the process alive by itself (the pull's Promise does).
type ProgressFn = ThreadsafeFunction<
    String,
    napi::bindgen_prelude::Unknown<'static>,
    String,
    Status,
    false,
    true,
>;

/// A client of the core, shared by every request of the JS client.
#[napi]
pub struct NativeClient {
    client: Client,
}

#[napi]
impl NativeClient {
    /// `config`: a TOML config file, or the config as TOML or JSON text (an object) (default:
    /// `$INGLE_CONFIG`, else the default model); `modelsDir`: where relative model paths resolve.
    #[napi(constructor)]
    pub fn new(config: Option<String>, models_dir: Option<String>) -> napi::Result<Self> {
        let mut config = match config {
            Some(value) => Config::from_file_or_text(&value),
            None => Config::from_env(),
        }
        .map_err(js_error)?;
        if let Some(dir) = models_dir {
            config.models_dir = Some(dir.into());
        }
        let client = Client::from_config(&config).map_err(js_error)?;
        Ok(NativeClient { client })
    }

    /// Any method of the core's method table that answers whole (`chat.completions.create`,
    /// `responses.retrieve`, `audio.transcriptions.create`, ...), by name: its request as JSON
    /// text in, its answer out (JSON, a transcription in its `response_format`, or embeddings as
    /// a `NativeEmbeddings` matrix), on the thread pool; `cancel` stops it. A method that takes an upload takes `audio`, copied
    /// here and decoded on the pool.
    #[napi(ts_return_type = "Promise<string | NativeEmbeddings>")]
    pub fn call(
        &self,
        method: String,
        request: String,
        cancel: Option<&NativeCancel>,
        audio: Option<NativeAudio>,
    ) -> napi::Result<Spawned<Job<Answer>>> {
        let client = cancelled_by(&self.client, cancel);
        let upload = audio.map(transcription_audio).transpose()?;
        Ok(Spawned::new(Job(Some(Box::new(move || {
            methods::method(&method)?.call(&client, &request, upload)
        })))))
    }

    /// Any method of the table that answers in parts (`chat.completions.stream`,
    /// `audio.transcriptions.stream`, ...), by name: a `NativeStream` of its chunks or events
    /// as JSON texts, or for speech (`audio.speech.stream`) a `NativeSpeechStream` of its
    /// bytes, once the first sentence is synthesised. Resolves once the call started (an
    /// upload decoded); `cancel` stops the start and the stream; so does closing the stream.
    #[napi(ts_return_type = "Promise<NativeStream | NativeSpeechStream>")]
    pub fn stream(
        &self,
        method: String,
        request: String,
        cancel: Option<&NativeCancel>,
        audio: Option<NativeAudio>,
    ) -> napi::Result<Spawned<Job<Started<Opened>>>> {
        let upload = audio.map(transcription_audio).transpose()?;
        Ok(start(&self.client, cancel, move |client| {
            Opened::of(methods::method(&method)?.call(client, &request, upload)?)
        }))
    }

    /// Downloads `model` from ingle's catalog into the client's models directory (see
    /// `client.models.pull`) on a thread of its own; `on_progress` receives each event's JSON
    /// on the main thread. Resolves to the report's JSON.
    #[napi(
        ts_args_type = "model: string, onProgress: ((event: string) => void) | null, cancel?: NativeCancel | null",
        ts_return_type = "Promise<string>"
    )]
    pub fn models_pull(
        &self,
        model: String,
        on_progress: Option<ProgressFn>,
        cancel: Option<&NativeCancel>,
    ) -> Spawned<Job<Option<String>>> {
        let client = self.client.clone();
        let cancel = cancel.map(|c| c.cancel.clone()).unwrap_or_default();
        work(move || {
            let report = client.models.pull(&model, &mut |event| {
                if let (Some(on_progress), Ok(json)) = (&on_progress, to_json_text(event)) {
                    on_progress.call(json, ThreadsafeFunctionCallMode::NonBlocking);
                }
                !cancel.is_cancelled()
            })?;
            Ok(Some(to_json_text(&report)?))
        })
    }

    #[napi]
    pub fn models_catalog(&self) -> napi::Result<String> {
        self.client
            .models
            .catalog()
            .and_then(|c| to_json_text(&c))
            .map_err(js_error)
    }

    /// Frees the model's memory; the next request loads it again. Whether it was loaded.
    #[napi]
    pub fn models_unload(&self, model: String) -> napi::Result<bool> {
        self.client.models.unload(&model).map_err(js_error)
    }

    #[napi]
    pub fn models_is_loaded(&self, model: String) -> napi::Result<bool> {
        self.client.models.is_loaded(&model).map_err(js_error)
    }

    /// Registers a predictor written in JS: `declaration` is its JSON declaration, `dispatch`
    /// runs its steps on the main thread (see `predictors.rs`). The rules of the OpenAI
    /// methods it claims are checked here; a broken one throws, naming the parameter.
    #[napi(ts_args_type = "declaration: string, dispatch: (call: PredictorCall) => void")]
    pub fn register_predictor(
        &self,
        declaration: String,
        dispatch: ThreadsafeFunction<
            predictors::PredictorCall,
            napi::bindgen_prelude::Unknown<'static>,
            predictors::PredictorCall,
            Status,
            false,
            true,
        >,
    ) -> napi::Result<()> {
        let predictor = predictors::js_predictor(&declaration, dispatch)?;
        self.client.register(Arc::new(predictor)).map_err(js_error)
    }

    /// The final prediction as JSON. Errors before it starts reject; a failure while running
    /// is the prediction's `error`, with its `logs`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn predictions_create(
        &self,
        tag: String,
        inputs: String,
        buffers: Option<Vec<Uint8Array>>,
        cancel: Option<&NativeCancel>,
    ) -> Spawned<Job<Option<String>>> {
        let client = cancelled_by(&self.client, cancel);
        let buffers = predictors::copied(buffers);
        work(move || {
            let inputs = predictors::inputs_with_raw(&inputs, buffers)?;
            let prediction = client.predictions.create(&tag, inputs)?;
            prediction.to_json_text().map(Some)
        })
    }

    #[napi(ts_return_type = "Promise<NativeStream>")]
    pub fn predictions_stream(
        &self,
        tag: String,
        inputs: String,
        buffers: Option<Vec<Uint8Array>>,
    ) -> Spawned<Job<Started<JsonTextStream>>> {
        let buffers = predictors::copied(buffers);
        start(&self.client, None, move |client| {
            let inputs = predictors::inputs_with_raw(&inputs, buffers)?;
            let predictions = client.predictions.stream(&tag, inputs)?;
            Ok(predictions.into_whole_json_texts())
        })
    }

    /// Load figures of a model as JSON, loading it if needed.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn metrics(&self, model: String) -> Spawned<Job<Option<String>>> {
        let client = self.client.clone();
        work(move || Ok(Some(client.metrics(&model)?.to_json().to_string())))
    }
}

/// A running core stream that any thread may close, also while a `next()` on the thread pool
/// waits for its item: that call resolves with its item (or the end, when the close stopped the
/// work short: a Whisper window), then the stream ends. Dropping the core stream stops its work
/// (generation, synthesis). The state is shared with the pool's jobs.
struct Closable<I> {
    inner: Arc<Mutex<Option<I>>>,
    closed: Arc<AtomicBool>,
    /// The stream's call: closing cancels it, which stops the work a pending `next()` waits
    /// for (Whisper's decoder at its next token; a JS predictor's `predictionSignal()` aborts).
    cancel: Cancel,
}

impl<T, I: Iterator<Item = ingle::Result<T>> + Send + 'static> Closable<I> {
    fn new(stream: I, cancel: Cancel) -> Self {
        Closable {
            inner: Arc::new(Mutex::new(Some(stream))),
            closed: Arc::new(AtomicBool::new(false)),
            cancel,
        }
    }

    /// A job for the thread pool: the next item, `None` at the end or once closed.
    fn next_job(&self) -> impl FnOnce() -> ingle::Result<Option<T>> + Send + 'static {
        let (inner, closed) = (Arc::clone(&self.inner), Arc::clone(&self.closed));
        move || {
            let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
            if closed.load(Ordering::Acquire) {
                *inner = None; // stops the work
            }
            let mut item = inner.as_mut().and_then(Iterator::next);
            let was_closed = closed.load(Ordering::Acquire);
            if !matches!(item, Some(Ok(_))) || was_closed {
                *inner = None; // the end, an error, or closed while waiting
            }
            // Closed while waiting, the work may have stopped short (its cancel): that is the
            // end the closer asked for, not an error.
            if was_closed && matches!(&item, Some(Err(e)) if e.kind == ingle::ErrorKind::Cancelled)
            {
                item = None;
            }
            item.transpose()
        }
    }

    /// Stops the work. Safe to call more than once, and from any thread.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.cancel.cancel();
        // A job waiting for an item holds the lock, and drops the stream itself.
        if let Ok(mut inner) = self.inner.try_lock() {
            *inner = None;
        }
    }
}

/// A running stream: `next()` resolves to the next JSON text, or `null` at the end.
/// `close()` (or garbage collection) stops generation, even while a `next()` is pending: that
/// call resolves with its item, and the stream then ends.
#[napi]
pub struct NativeStream {
    stream: Closable<JsonTextStream>,
}

#[napi]
impl NativeStream {
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next(&self) -> Spawned<Job<Option<String>>> {
        work(self.stream.next_job())
    }

    /// Stops generation. Safe to call more than once.
    #[napi]
    pub fn close(&self) {
        self.stream.close();
    }
}

/// Speech being synthesised: `takeFirst()` gives the bytes pulled when it started, then each
/// `next()` resolves to the next bytes (about a sentence of audio), or `null` at the end.
/// `close()` (or garbage collection) stops synthesis, even while a `next()` is pending: that
/// call resolves with its bytes, and the stream then ends.
#[napi]
pub struct NativeSpeechStream {
    stream: Closable<SpeechStream>,
    first: Mutex<Option<Vec<u8>>>,
    content_type: &'static str,
}

#[napi]
impl NativeSpeechStream {
    /// The `Content-Type` of the bytes: the audio format's, or `text/event-stream` for SSE.
    #[napi(getter)]
    pub fn content_type(&self) -> &'static str {
        self.content_type
    }

    /// The first bytes, once; `null` afterwards.
    #[napi]
    pub fn take_first(&self) -> Option<Uint8Array> {
        let mut first = self.first.lock().unwrap_or_else(PoisonError::into_inner);
        first.take().map(Uint8Array::new)
    }

    #[napi(ts_return_type = "Promise<Uint8Array | null>")]
    pub fn next(&self) -> Spawned<Job<Option<Vec<u8>>>> {
        Spawned::new(Job(Some(Box::new(self.stream.next_job()))))
    }

    /// Stops synthesis before the next sentence. Safe to call more than once.
    #[napi]
    pub fn close(&self) {
        self.stream.close();
        self.first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// Checks a predictor declaration (JSON) as registering it would: `predictor()` calls it, so a
/// broken predictor fails where it is defined.
#[napi]
pub fn check_predictor_declaration(declaration: String) -> napi::Result<()> {
    let declaration = ingle::Declaration::from_json(&declaration).map_err(js_error)?;
    ingle::openai::check_predictor(&declaration.tag, &declaration.signature).map_err(js_error)
}

/// What ingle runs with here (version, the CPU variant of llama.cpp's kernels), as JSON.
#[napi]
pub fn system_info() -> napi::Result<String> {
    ingle::system_info()
        .and_then(|info| to_json_text(&info))
        .map_err(js_error)
}

/// The `ingle` command (`args`: its arguments, without the program's name), run by the same
/// implementation as the `ingle` binary, on this thread (a command line has nothing else to
/// do meanwhile); its exit status.
#[napi]
pub fn run_command(args: Vec<String>) -> u32 {
    let mut argv = vec![std::ffi::OsString::from("ingle")];
    argv.extend(args.into_iter().map(std::ffi::OsString::from));
    u32::from(ingle_cli::run_hosted(argv))
}

/// The version of ingle.
#[napi]
pub fn version() -> &'static str {
    ingle::VERSION
}
