//! `ingle._ingle`: the native half of the Python package. Conversion only: requests arrive
//! as OpenAI JSON text, responses and chunks leave as JSON text (numbers and audio as `bytes`:
//! embedding matrices, speech files and samples), and the Python half (`python/ingle/`) gives
//! them the shapes of the `openai` package. The GIL is released whenever the core works
//! (loading a model, generating, synthesising, transcribing), so other Python threads run.
//! Arguments arrive checked by `python/ingle/_arguments.py`, the one gate on the Python side:
//! strings are valid Unicode (no lone surrogate, which a Rust `String` cannot hold), JSON has
//! no `NaN`, paths have no NUL byte; what is wrong beyond that the core reports, naming it.

mod interrupt;
mod predictors;
mod server;
mod streams;

use streams::{NativeSpeechStream, NativeStream};

use ingle::json_text::to_json_text;
use ingle::methods::{self, Answer};
use ingle::openai::{EncodingFormat, TranscriptionAudio};
use ingle::{inputs_from_json, Cancel, Client, Config, Error, OnCancel};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The Python exception for a core error: `ingle._exceptions._from_native` picks the class
/// (`BadRequestError`, `NotFoundError`, ...) so the hierarchy lives in Python, like `openai`'s.
fn py_err(error: Error) -> PyErr {
    Python::attach(|py| {
        let build = || -> PyResult<PyErr> {
            let factory = py.import("ingle._exceptions")?.getattr("_from_native")?;
            let kind = serde_json::to_value(error.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let exception = factory.call1((
                kind,
                error.to_string(),
                error.kind.openai_type(),
                error.param.clone(),
                error.code.map(ingle::ErrorCode::as_str),
                error.kind.http_status(),
            ))?;
            Ok(PyErr::from_value(exception))
        };
        build().unwrap_or_else(|e| e)
    })
}

/// Set from any thread to stop a running `create` at its next step (asyncio cancels so): the
/// core's [`Cancel`], which also stops a Python predictor stuck in its own code
/// ([`interrupt`]).
#[pyclass(frozen, module = "ingle._ingle")]
struct CancelFlag {
    cancel: Cancel,
}

#[pymethods]
impl CancelFlag {
    #[new]
    fn new() -> Self {
        CancelFlag {
            cancel: Cancel::new(),
        }
    }

    fn set(&self) {
        self.cancel.cancel();
    }
}

/// The cancel of one whole call from Python: set by its `CancelFlag`, or by Ctrl-C. Python's
/// SIGINT handler only sets a flag that runs when Python code does, and none runs until the call
/// returns: so asking the cancel runs the handlers, from the calling thread, every 50 ms at most
/// (taking the GIL per token would slow decoding when other threads hold it). A
/// `KeyboardInterrupt` is kept, to raise once the call returns.
struct CallCancel {
    cancel: Cancel,
    interrupt: Arc<Mutex<Option<PyErr>>>,
    /// Cleared when the call returns: a stream it made goes on with this cancel (its `close()`
    /// cancels it), but Ctrl-C while the stream is iterated is Python's again.
    polling: Arc<AtomicBool>,
    _flag: Option<OnCancel>,
}

impl CallCancel {
    fn new(flag: Option<&Py<CancelFlag>>) -> Self {
        let interrupt = Arc::new(Mutex::new(None));
        let kept = Arc::clone(&interrupt);
        let caller = std::thread::current().id();
        let last_check = Mutex::new(Instant::now());
        let polling = Arc::new(AtomicBool::new(true));
        let asked = Arc::clone(&polling);
        let cancel = Cancel::polled(move || {
            if !asked.load(Ordering::Acquire) || std::thread::current().id() != caller {
                return false;
            }
            {
                let mut last = last_check.lock().unwrap_or_else(PoisonError::into_inner);
                if last.elapsed() < Duration::from_millis(50) {
                    return false;
                }
                *last = Instant::now();
            }
            match Python::attach(|py| py.check_signals()) {
                Ok(()) => false,
                Err(e) => {
                    *kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    true
                }
            }
        });
        let linked = cancel.clone();
        let flag = flag.map(|flag| flag.get().cancel.on_cancel(move || linked.cancel()));
        CallCancel {
            cancel,
            interrupt,
            polling,
            _flag: flag,
        }
    }

    /// `client` with its calls stopped by this cancel.
    fn client(&self, client: &Client) -> Client {
        client.with_cancel(&self.cancel)
    }

    /// The call's result: the interrupt if there was one, else `result`.
    fn finish<T>(self, result: ingle::Result<T>) -> PyResult<T> {
        self.polling.store(false, Ordering::Release);
        let interrupt = self
            .interrupt
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match interrupt {
            Some(interrupt) => Err(interrupt),
            None => result.map_err(py_err),
        }
    }
}

/// The audio of a transcription as Python hands it over: the bytes of a file (with its name,
/// a hint of the format), or float32 samples (native byte order, interleaved) when
/// `sample_rate` is given. Converted without the GIL.
fn transcription_audio(
    audio: &[u8],
    filename: Option<String>,
    sample_rate: Option<u32>,
    channels: u16,
) -> TranscriptionAudio {
    match sample_rate {
        Some(rate) => TranscriptionAudio::samples(
            audio
                .chunks_exact(4)
                .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            rate,
            channels,
        ),
        None => TranscriptionAudio::file(audio, filename.as_deref()),
    }
}

/// An upload as `call` and `stream` take it: `transcription_audio`'s arguments.
type Upload<'a> = (&'a [u8], Option<String>, Option<u32>, u16);

/// Runs the table's `method` on `request` (and its upload, converted there) with the GIL
/// released. What the answer becomes in Python (`whole_answer`) only moves or copies it once.
fn run_method(
    py: Python<'_>,
    client: &Client,
    method: &str,
    request: &str,
    upload: Option<Upload<'_>>,
) -> ingle::Result<Answer> {
    py.detach(|| {
        let audio = upload.map(|(audio, filename, sample_rate, channels)| {
            transcription_audio(audio, filename, sample_rate, channels)
        });
        methods::method(method)?.call(client, request, audio)
    })
}

/// A whole answer as Python takes it: text (JSON, a transcription's body); speech as
/// `(content, content_type, samples, sample_rate, channels)`, `samples` the model's float32
/// samples (native byte order) it was encoded from, or `(content, content_type)` for other
/// bytes (speech's SSE events); embeddings as `(model, rows, dims, prompt_tokens, base64,
/// matrix)`, `matrix` the row-major float32 bytes and `base64` whether the request asked for
/// that encoding. The one copy of numbers is into the `bytes`.
fn whole_answer(py: Python<'_>, answer: Answer) -> PyResult<Py<PyAny>> {
    let object = match answer {
        Answer::Speech(audio) => (
            PyBytes::new(py, &audio.bytes),
            audio.content_type,
            float_bytes(py, &audio.raw.samples)?,
            audio.raw.sample_rate,
            audio.raw.channels,
        )
            .into_pyobject(py)?
            .into_any(),
        Answer::Body { content_type, body } => (PyBytes::new(py, &body), content_type)
            .into_pyobject(py)?
            .into_any(),
        Answer::Matrix { matrix, format } => (
            matrix.model,
            matrix.rows,
            matrix.dims,
            matrix.prompt_tokens as usize,
            format == EncodingFormat::Base64,
            float_bytes(py, &matrix.data)?,
        )
            .into_pyobject(py)?
            .into_any(),
        answer => answer
            .into_text()
            .map_err(py_err)?
            .into_pyobject(py)?
            .into_any(),
    };
    Ok(object.unbind())
}

/// Float32 numbers as `bytes` (native byte order), copied once.
fn float_bytes<'py>(py: Python<'py>, numbers: &[f32]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, numbers.len() * 4, |buffer| {
        for (out, x) in buffer.chunks_exact_mut(4).zip(numbers) {
            out.copy_from_slice(&x.to_ne_bytes());
        }
        Ok(())
    })
}

/// A client of the core, shared by every thread that uses the Python client.
#[pyclass(frozen, module = "ingle._ingle")]
struct NativeClient {
    client: Client,
}

#[pymethods]
impl NativeClient {
    /// `config`: a TOML config file (default: `$INGLE_CONFIG`, else the default model);
    /// `models_dir`: where relative model paths resolve. The core checks the whole config
    /// here (`Client::from_config`), so a bad one raises at construction, not at first use.
    /// `config_text`: the config itself, as TOML or JSON text (`config=` given a dict or TOML).
    #[new]
    #[pyo3(signature = (config=None, models_dir=None, config_text=None))]
    fn new(
        config: Option<PathBuf>,
        models_dir: Option<PathBuf>,
        config_text: Option<String>,
    ) -> PyResult<Self> {
        let mut config = match (config, config_text) {
            (_, Some(text)) => Config::from_text(&text),
            (Some(path), None) => Config::from_file(&path),
            (None, None) => Config::from_env(),
        }
        .map_err(py_err)?;
        if let Some(dir) = models_dir {
            config.models_dir = Some(dir);
        }
        let client = Client::from_config(&config).map_err(py_err)?;
        Ok(NativeClient { client })
    }

    /// Any method of the core's method table that answers whole (`chat.completions.create`,
    /// `responses.retrieve`, `audio.transcriptions.create`, ...), by name: its request as JSON
    /// text in, its answer out as `whole_answer` gives it (text; speech's and embeddings'
    /// bytes and numbers). A method that takes an upload takes `audio`: a file's bytes, or
    /// with `sample_rate` float32 samples (native byte order, `channels` interleaved), as
    /// `_arguments.audio_file` gives them. The GIL is released while it runs (the upload
    /// decodes then too); Ctrl-C, or setting `cancel`, stops it.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (method, request, audio=None, filename=None, sample_rate=None, channels=1, cancel=None))]
    fn call(
        &self,
        py: Python<'_>,
        method: &str,
        request: String,
        audio: Option<&[u8]>,
        filename: Option<String>,
        sample_rate: Option<u32>,
        channels: u16,
        cancel: Option<Py<CancelFlag>>,
    ) -> PyResult<Py<PyAny>> {
        let call = CallCancel::new(cancel.as_ref());
        let upload = audio.map(|audio| (audio, filename, sample_rate, channels));
        let client = call.client(&self.client);
        let result = run_method(py, &client, method, &request, upload);
        whole_answer(py, call.finish(result)?)
    }

    /// Any method of the table that answers in parts (`chat.completions.stream`,
    /// `audio.transcriptions.stream`, ...), by name: a `NativeStream` of its chunks or events as
    /// JSON texts, or for speech (`audio.speech.stream`) a `NativeSpeechStream` of its bytes.
    /// `audio` as `call`'s. A bad request, or audio that cannot be decoded, raises here, before any
    /// chunk; Ctrl-C or `cancel` stops the start (an upload's decoding), and closing the stream
    /// cancels the call.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (method, request, audio=None, filename=None, sample_rate=None, channels=1, cancel=None))]
    fn stream(
        &self,
        py: Python<'_>,
        method: &str,
        request: String,
        audio: Option<&[u8]>,
        filename: Option<String>,
        sample_rate: Option<u32>,
        channels: u16,
        cancel: Option<Py<CancelFlag>>,
    ) -> PyResult<Py<PyAny>> {
        let call = CallCancel::new(cancel.as_ref());
        let upload = audio.map(|audio| (audio, filename, sample_rate, channels));
        let client = call.client(&self.client);
        let result = run_method(py, &client, method, &request, upload);
        let cancel = call.cancel.clone();
        Ok(match call.finish(result)? {
            Answer::Audio(stream) => {
                Py::new(py, NativeSpeechStream::new(stream, cancel))?.into_any()
            }
            answer => Py::new(
                py,
                NativeStream::new(answer.into_stream().map_err(py_err)?, cancel),
            )?
            .into_any(),
        })
    }

    /// Downloads `model` from ingle's catalog into the client's models directory; the report
    /// as JSON. `progress(event_json)` hears each event (without the GIL held between calls);
    /// a raised exception or a `False` return stops the pull (Ctrl-C too), and the exception
    /// is raised here.
    #[pyo3(signature = (model, progress=None))]
    fn models_pull(
        &self,
        py: Python<'_>,
        model: &str,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let mut raised: Option<PyErr> = None;
        let mut last_signal_check = Instant::now();
        let result = py.detach(|| {
            self.client.models.pull(model, &mut |event| {
                Python::attach(|py| {
                    if last_signal_check.elapsed() >= Duration::from_millis(50) {
                        last_signal_check = Instant::now();
                        if let Err(e) = py.check_signals() {
                            raised = Some(e);
                            return false;
                        }
                    }
                    let Some(progress) = &progress else {
                        return true;
                    };
                    let Ok(json) = to_json_text(event) else {
                        return true;
                    };
                    match progress.bind(py).call1((json,)) {
                        Ok(answer) => !matches!(answer.extract::<bool>(), Ok(false)),
                        Err(e) => {
                            raised = Some(e);
                            false
                        }
                    }
                })
            })
        });
        match (result, raised) {
            // Raised by `progress` (or Ctrl-C), even on the last event: it is not swallowed.
            (_, Some(exception)) => Err(exception),
            (result, None) => result.and_then(|r| to_json_text(&r)).map_err(py_err),
        }
    }

    fn models_catalog(&self) -> PyResult<String> {
        self.client
            .models
            .catalog()
            .and_then(|c| to_json_text(&c))
            .map_err(py_err)
    }

    /// Frees the model's memory; the next request loads it again. Whether it was loaded.
    fn models_unload(&self, py: Python<'_>, model: &str) -> PyResult<bool> {
        py.detach(|| self.client.models.unload(model))
            .map_err(py_err)
    }

    fn models_is_loaded(&self, model: &str) -> PyResult<bool> {
        self.client.models.is_loaded(model).map_err(py_err)
    }

    /// The final prediction as JSON. Errors found before it starts (an unknown tag, invalid
    /// inputs) raise; a failure while running is the prediction's `error`, with its `logs`.
    /// `raw_inputs` are inputs that cannot travel as JSON (`RawTensor`, `RawAudio`), merged
    /// over those of `inputs`.
    /// Setting `cancel` stops a Python predictor stuck in its own code.
    #[pyo3(signature = (tag, inputs, raw_inputs=None, cancel=None))]
    fn predictions_create(
        &self,
        py: Python<'_>,
        tag: String,
        inputs: String,
        raw_inputs: Option<Bound<'_, pyo3::types::PyDict>>,
        cancel: Option<Py<CancelFlag>>,
    ) -> PyResult<String> {
        let raw = predictors::raw_inputs(raw_inputs)?;
        let client = match &cancel {
            Some(flag) => self.client.with_cancel(&flag.get().cancel),
            None => self.client.clone(),
        };
        py.detach(|| {
            let mut inputs = inputs_from_json(&inputs)?;
            inputs.extend(raw);
            client.predictions.create(&tag, inputs)?.to_json_text()
        })
        .map_err(py_err)
    }

    /// Each partial prediction as JSON, a failed one included (as for `predictions_create`).
    #[pyo3(signature = (tag, inputs, raw_inputs=None))]
    fn predictions_stream(
        &self,
        py: Python<'_>,
        tag: String,
        inputs: String,
        raw_inputs: Option<Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<NativeStream> {
        let raw = predictors::raw_inputs(raw_inputs)?;
        let cancel = Cancel::new();
        let client = self.client.with_cancel(&cancel);
        py.detach(|| {
            let mut inputs = inputs_from_json(&inputs)?;
            inputs.extend(raw);
            let predictions = client.predictions.stream(&tag, inputs)?;
            Ok(predictions.into_whole_json_texts())
        })
        .map(|stream| NativeStream::new(stream, cancel))
        .map_err(py_err)
    }

    /// Registers a predictor written in Python: `declaration` is its JSON declaration and
    /// `invoke(inputs, logs)` starts it (see `ingle._predictors`). The rules of the OpenAI
    /// methods it claims are checked here; a broken one raises, naming the parameter.
    fn register_predictor(&self, declaration: &str, invoke: Py<PyAny>) -> PyResult<()> {
        let predictor = predictors::python_predictor(declaration, invoke).map_err(py_err)?;
        self.client
            .register(std::sync::Arc::new(predictor))
            .map_err(py_err)
    }

    /// Serves this client's predictors over the HTTP API of `ingle serve`, from a thread of
    /// its own, until `stop()`.
    #[pyo3(signature = (host, port, api_key=None, allowed_hosts=Vec::new(), cors_origins=Vec::new()))]
    fn serve(
        &self,
        py: Python<'_>,
        host: &str,
        port: u16,
        api_key: Option<String>,
        allowed_hosts: Vec<String>,
        cors_origins: Vec<String>,
    ) -> PyResult<server::NativeServer> {
        server::NativeServer::start(
            py,
            self.client.clone(),
            host,
            port,
            api_key,
            allowed_hosts,
            cors_origins,
        )
    }

    /// Load figures of a model, loading it if needed, as JSON.
    fn metrics(&self, py: Python<'_>, model: String) -> PyResult<String> {
        py.detach(|| Ok(self.client.metrics(&model)?.to_json().to_string()))
            .map_err(py_err)
    }
}

/// Checks a predictor declaration (JSON) as registering it would: the `@predictor` decorator
/// calls it, so a broken predictor fails where it is defined.
#[pyfunction]
fn check_predictor_declaration(declaration: &str) -> PyResult<()> {
    predictors::check_declaration(declaration).map_err(py_err)
}

/// The native module of the `ingle` package.
/// What ingle runs with here (version, the CPU variant of llama.cpp's kernels), as JSON.
#[pyfunction]
fn system_info(py: Python<'_>) -> PyResult<String> {
    py.detach(ingle::system_info)
        .and_then(|info| to_json_text(&info))
        .map_err(py_err)
}

/// The `ingle` command (`argv`: the program's name, then its arguments), run by the same
/// implementation as the `ingle` binary; its exit status. The GIL is released while it runs.
#[pyfunction]
fn run_command(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| ingle_cli::run_hosted(argv))
}

#[pymodule]
fn _ingle(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeClient>()?;
    m.add_class::<NativeStream>()?;
    m.add_class::<NativeSpeechStream>()?;
    m.add_class::<CancelFlag>()?;
    m.add_class::<predictors::RawTensor>()?;
    m.add("MAX_TENSOR_BYTES", ingle::MAX_TENSOR_BYTES)?;
    m.add_class::<predictors::RawAudio>()?;
    m.add_class::<predictors::LogSink>()?;
    m.add_class::<server::NativeServer>()?;
    m.add_function(wrap_pyfunction!(check_predictor_declaration, m)?)?;
    m.add_function(wrap_pyfunction!(system_info, m)?)?;
    m.add_function(wrap_pyfunction!(run_command, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt::current_call, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt::call_cancelled, m)?)?;
    m.add("__version__", ingle::VERSION)?;
    Ok(())
}
