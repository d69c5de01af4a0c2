//! The stable C ABI of ingle (`libingle.so`, `libingle.a`, `include/ingle.h`).
//!
//! Requests and responses cross the boundary as the OpenAI JSON of the Rust core, so the C
//! surface stays small and does not change when a request grows a field. Every exported
//! function catches panics, checks its pointers, and reports failures as an [`IngleStatus`]
//! plus a thread-local message ([`ingle_last_error`]); nothing unwinds into C.
//!
//! The rules C callers rely on (ownership, threading) are written in the header's preamble,
//! `cbindgen.toml`, and on each function below; cbindgen copies these comments into the header.

// The C names are the contract: `INGLE_OK`, `IngleClient`, ... rather than Rust's conventions.
#![allow(non_camel_case_types)]
// Raw pointers from C are checked for NULL before use, and each function says in the header
// what it requires of them; repeating that as `# Safety` sections would add nothing.
#![allow(clippy::missing_safety_doc)]

mod predictors;

use ingle_core::json_text::to_json_text;
use ingle_core::openai::{
    ChatCompletionRequest, CompletionRequest, EmbeddingRequest, SpeechRequest, TranscriptionAudio,
    TranscriptionRequest, TranscriptionResponse,
};
use ingle_core::{inputs_from_json, Client, Config, Error, ErrorKind, Prediction};
use serde::Serialize;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// Major version of the header; `ingle_version()` gives the library's at run time.
pub const INGLE_VERSION_MAJOR: u32 = 0;
/// Minor version of the header.
pub const INGLE_VERSION_MINOR: u32 = 1;
/// Patch version of the header.
pub const INGLE_VERSION_PATCH: u32 = 0;

/// A client: the models of one configuration, loaded on first use and shared by every call.
/// Opaque; create it with `ingle_client_create`, free it with `ingle_client_free`.
pub struct IngleClient {
    client: Client,
}

/// What every fallible function returns. On anything but `INGLE_OK`, `ingle_last_error()` says
/// what went wrong, on the thread that made the call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngleStatus {
    /// Success.
    INGLE_OK = 0,
    /// The request is malformed: invalid UTF-8 or JSON, an unknown field, a value out of range.
    INGLE_ERROR_INVALID_REQUEST = 1,
    /// The model (or another named resource) does not exist.
    INGLE_ERROR_NOT_FOUND = 2,
    /// The prompt plus the requested completion does not fit the model's context.
    INGLE_ERROR_CONTEXT_LENGTH_EXCEEDED = 3,
    /// The model could not be loaded (its file is missing, say) or failed while running.
    INGLE_ERROR_MODEL = 4,
    /// The chunk callback returned non-zero; generation was stopped.
    INGLE_ERROR_CANCELLED = 5,
    /// A pointer argument that must not be NULL was NULL.
    INGLE_ERROR_NULL_ARGUMENT = 6,
    /// A bug inside ingle (a caught panic, say). The client stays usable.
    INGLE_ERROR_INTERNAL = 7,
}

/// Embeddings as numbers: a `rows × dims` float32 matrix, row-major, row `i` the embedding of
/// input `i` (each a unit vector). From `ingle_embeddings_create_matrix`; free it, `data`
/// included, with one call to `ingle_embedding_matrix_free`.
#[repr(C)]
pub struct IngleEmbeddingMatrix {
    /// `rows * dims` floats (native float32), owned by the matrix.
    pub data: *const f32,
    /// One per input.
    pub rows: usize,
    /// The length of each vector (the request's `dimensions`, or the model's).
    pub dims: usize,
    /// Tokens the model read (`usage.prompt_tokens` of the JSON response).
    pub prompt_tokens: usize,
}

/// Speech as an audio file: the encoded bytes of `ingle_audio_speech_create`, e.g. a whole
/// `.wav` or `.mp3` file. Free it, `data` included, with one call to `ingle_speech_audio_free`.
#[repr(C)]
pub struct IngleSpeechAudio {
    /// `len` bytes of the encoded audio (the request's `response_format`), owned by the struct.
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
    /// The MIME type the OpenAI API answers with: `"audio/mpeg"` (mp3), `"audio/ogg"` (opus),
    /// `"audio/aac"`, `"audio/flac"`, `"audio/wav"` or `"audio/pcm"`. NUL-terminated, owned by
    /// the struct.
    pub content_type: *const c_char,
    /// The sample rate of the encoded audio in Hz: 24000 for `pcm` (16-bit little-endian mono,
    /// as OpenAI sends it) and `opus`, otherwise the model's (22050 for the default voice).
    pub sample_rate: u32,
}

/// Speech as numbers: the float32 samples the model produced, before any encoding. From
/// `ingle_audio_speech_create_samples`; free it, `samples` included, with one call to
/// `ingle_speech_samples_free`.
#[repr(C)]
pub struct IngleSpeechSamples {
    /// `frames * channels` floats in [-1, 1], interleaved when `channels > 1`, owned by the
    /// struct.
    pub samples: *const f32,
    /// Samples per channel: the duration is `frames / sample_rate` seconds.
    pub frames: usize,
    /// 1 for the default voice.
    pub channels: u16,
    /// In Hz, the model's own rate (22050 for the default voice).
    pub sample_rate: u32,
}

/// A transcription: the response body of `ingle_audio_transcriptions_create` (or
/// `_create_samples`) in the request's `response_format`, exactly as the OpenAI API sends it,
/// with its content type. Free it, strings included, with one call to
/// `ingle_transcription_free`.
#[repr(C)]
pub struct IngleTranscription {
    /// The body, NUL-terminated, owned by the struct: the JSON text of `{"text", "usage"}` for
    /// `json` (the default) and of `{"task", "language", "duration", "text", "segments",
    /// "words", "usage"}` for `verbose_json`; the text and a newline for `text`; SubRip cues
    /// for `srt`, WebVTT for `vtt`.
    pub body: *const c_char,
    /// The length of `body` in bytes, without the NUL.
    pub len: usize,
    /// The MIME type the OpenAI API answers with: `"application/json"` (json, verbose_json),
    /// `"text/plain; charset=utf-8"` (text, srt) or `"text/vtt; charset=utf-8"` (vtt).
    /// NUL-terminated, owned by the struct.
    pub content_type: *const c_char,
    /// The transcribed text alone, whatever the format (the `text` of the JSON), UTF-8,
    /// NUL-terminated, owned by the struct.
    pub text: *const c_char,
    /// Seconds of audio transcribed.
    pub duration: f64,
}

/// Receives one chunk of a stream: `chunk_json` is the chunk's JSON, NUL-terminated, `len` bytes
/// long (without the NUL). It is called synchronously on the thread that called the streaming
/// function, once per chunk, in order. `chunk_json` is valid only during the call: copy what you
/// keep. Return 0 to go on, or non-zero to stop generation (the streaming function then returns
/// `INGLE_ERROR_CANCELLED`). It must not unwind (a C++ exception or `longjmp`) through ingle,
/// and must not free the client it is streaming from.
pub type IngleChunkCallback = Option<
    unsafe extern "C" fn(chunk_json: *const c_char, len: usize, user_data: *mut c_void) -> i32,
>;

/// Receives one chunk of streamed speech: `len` bytes of audio (`len > 0`), in the order they
/// play, NOT NUL-terminated; the chunks together are one file of the request's
/// `response_format` (in its streaming form: wav and flac headers cannot know the length), or,
/// with `"stream_format": "sse"`, server-sent events (`data: {...}\n\n` text). Called
/// synchronously on the calling thread, once per chunk (about a sentence of audio each);
/// `chunk` is valid only during the call. Return 0 to go on, or non-zero to stop synthesis
/// (`ingle_audio_speech_stream` then returns `INGLE_ERROR_CANCELLED`). The same rules as
/// `IngleChunkCallback` otherwise.
pub type IngleAudioCallback =
    Option<unsafe extern "C" fn(chunk: *const u8, len: usize, user_data: *mut c_void) -> i32>;

/// Why a call failed: the status it returns and the error behind `ingle_last_error`.
struct Failure {
    status: IngleStatus,
    error: Error,
}

type FfiResult<T> = Result<T, Failure>;

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let status = match error.kind {
            ErrorKind::InvalidRequest => IngleStatus::INGLE_ERROR_INVALID_REQUEST,
            ErrorKind::NotFound => IngleStatus::INGLE_ERROR_NOT_FOUND,
            ErrorKind::ContextLengthExceeded => IngleStatus::INGLE_ERROR_CONTEXT_LENGTH_EXCEEDED,
            ErrorKind::Model => IngleStatus::INGLE_ERROR_MODEL,
            ErrorKind::Internal => IngleStatus::INGLE_ERROR_INTERNAL,
            ErrorKind::Cancelled => IngleStatus::INGLE_ERROR_CANCELLED,
        };
        Failure { status, error }
    }
}

impl Failure {
    fn null_argument(name: &str) -> Self {
        Failure {
            status: IngleStatus::INGLE_ERROR_NULL_ARGUMENT,
            error: Error::invalid(name, format!("`{name}` must not be NULL"))
                .with_code("null_argument"),
        }
    }

    fn cancelled(returned: i32) -> Self {
        Failure::from(
            Error::cancelled(format!("Cancelled: the chunk callback returned {returned}"))
                .with_param("on_chunk"),
        )
    }

    fn panicked(payload: Box<dyn std::any::Any + Send>) -> Self {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Failure::from(Error::internal(format!(
            "ingle panicked ({what}); this is a bug, please report it"
        )))
    }

    /// Makes this the thread's last error and returns its status.
    fn record(self) -> IngleStatus {
        let last = LastError {
            message: c_string_lossy(self.error.to_string()),
            json: c_string_lossy(self.error.to_openai().to_string()),
        };
        LAST_ERROR.with(|cell| *cell.borrow_mut() = Some(last));
        self.status
    }
}

struct LastError {
    message: CString,
    json: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// A C string of `text`; an interior NUL (which C cannot hold) becomes U+FFFD.
fn c_string_lossy(text: String) -> CString {
    CString::new(text).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{FFFD}");
        CString::new(text).expect("NULs were replaced")
    })
}

/// Runs the body of an exported function: a panic or an error becomes a status and the
/// thread's last error.
fn ffi_call(body: impl FnOnce() -> FfiResult<()>) -> IngleStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => IngleStatus::INGLE_OK,
        Ok(Err(failure)) => failure.record(),
        Err(payload) => Failure::panicked(payload).record(),
    }
}

unsafe fn client_arg<'a>(client: *const IngleClient) -> FfiResult<&'a Client> {
    match client.as_ref() {
        Some(handle) => Ok(&handle.client),
        None => Err(Failure::null_argument("client")),
    }
}

unsafe fn str_arg<'a>(text: *const c_char, name: &str) -> FfiResult<&'a str> {
    if text.is_null() {
        return Err(Failure::null_argument(name));
    }
    CStr::from_ptr(text).to_str().map_err(|e| {
        Failure::from(Error::invalid(
            name,
            format!(
                "`{name}` is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        ))
    })
}

/// Checks an out-pointer and sets what it points to to NULL, so it is NULL on any failure.
unsafe fn out_arg<'a, T>(out: *mut *mut T, name: &str) -> FfiResult<&'a mut *mut T> {
    match out.as_mut() {
        Some(slot) => {
            *slot = ptr::null_mut();
            Ok(slot)
        }
        None => Err(Failure::null_argument(name)),
    }
}

fn callback_arg(
    callback: IngleChunkCallback,
) -> FfiResult<unsafe extern "C" fn(*const c_char, usize, *mut c_void) -> i32> {
    callback.ok_or_else(|| Failure::null_argument("on_chunk"))
}

fn audio_callback_arg(
    callback: IngleAudioCallback,
) -> FfiResult<unsafe extern "C" fn(*const u8, usize, *mut c_void) -> i32> {
    callback.ok_or_else(|| Failure::null_argument("on_chunk"))
}

/// Gives C a boxed slice it frees with [`take_slice`].
fn give_slice<T>(items: Vec<T>) -> (*const T, usize) {
    let len = items.len();
    (Box::into_raw(items.into_boxed_slice()) as *const T, len)
}

/// Frees a slice from [`give_slice`].
unsafe fn take_slice<T>(data: *const T, len: usize) {
    drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
        data as *mut T,
        len,
    )));
}

fn to_json_string(value: &impl Serialize) -> FfiResult<String> {
    Ok(to_json_text(value)?)
}

fn give_string(out: &mut *mut c_char, json: String) -> FfiResult<()> {
    *out = c_string_lossy(json).into_raw();
    Ok(())
}

/// Hands every item of `items` to the callback as JSON; stops (dropping `items`, which cancels
/// generation) on the first error or when the callback asks to.
fn deliver_all<T: Serialize>(
    items: impl Iterator<Item = ingle_core::Result<T>>,
    on_chunk: unsafe extern "C" fn(*const c_char, usize, *mut c_void) -> i32,
    user_data: *mut c_void,
) -> FfiResult<()> {
    for item in items {
        deliver(to_json_string(&item?)?, on_chunk, user_data)?;
    }
    Ok(())
}

fn deliver(
    json: String,
    on_chunk: unsafe extern "C" fn(*const c_char, usize, *mut c_void) -> i32,
    user_data: *mut c_void,
) -> FfiResult<()> {
    let chunk = c_string_lossy(json);
    let returned = unsafe { on_chunk(chunk.as_ptr(), chunk.as_bytes().len(), user_data) };
    match returned {
        0 => Ok(()),
        other => Err(Failure::cancelled(other)),
    }
}

/// The JSON of a prediction; a failed one is an error with the prediction's error.
fn prediction_json(prediction: &Prediction) -> FfiResult<(String, Option<Error>)> {
    let json = prediction.to_json()?;
    Ok((json.to_string(), prediction.error.clone()))
}

/// The library's version, `"MAJOR.MINOR.PATCH"`. A static string: do not free it.
#[no_mangle]
pub extern "C" fn ingle_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Creates a client. `config_json` is NULL for the defaults (the config file named by the
/// `INGLE_CONFIG` environment variable, or else the default model from the models cache), or a
/// JSON object with the fields of the TOML config, e.g.
/// `{"models_dir": "/opt/models", "predictors": [{"tag": "@me/chat", "backend": "llama",
/// "model": "my.gguf", "n_ctx": 2048, "threads": 2, "parallel": 4}]}`.
/// Models load on first use, not here. On success `*out` is a client to free with
/// `ingle_client_free`; on failure it is NULL.
#[no_mangle]
pub unsafe extern "C" fn ingle_client_create(
    config_json: *const c_char,
    out: *mut *mut IngleClient,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let config = if config_json.is_null() {
            Config::from_env()?
        } else {
            Config::from_json(str_arg(config_json, "config_json")?)?
        };
        let client = Client::from_config(&config)?;
        *out = Box::into_raw(Box::new(IngleClient { client }));
        Ok(())
    })
}

/// Frees a client and the models only it uses. NULL is a no-op. No call may be using the
/// client, on any thread, when it is freed.
#[no_mangle]
pub unsafe extern "C" fn ingle_client_free(client: *mut IngleClient) {
    if !client.is_null() {
        // Dropping runs Rust code only (no C callbacks); a panic there must not unwind into C.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(client))));
    }
}

/// A whole chat completion: `request_json` is an OpenAI chat completion request
/// (`{"model": ..., "messages": [...], ...}`, without `"stream": true`); `*out_json` receives the
/// `chat.completion` object, to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_chat_completions_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let request = ChatCompletionRequest::from_json(str_arg(request_json, "request_json")?)?;
        let completion = client.chat.completions.create(&request)?;
        give_string(out, to_json_string(&completion)?)
    })
}

/// Streams a chat completion: `on_chunk` receives each `chat.completion.chunk` object as JSON
/// (and, with `"stream_options": {"include_usage": true}`, a last chunk with `usage`). Returns
/// when the stream ends, fails, or `on_chunk` returns non-zero (`INGLE_ERROR_CANCELLED`).
/// `user_data` is passed to `on_chunk` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_chat_completions_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = callback_arg(on_chunk)?;
        let request = ChatCompletionRequest::from_json(str_arg(request_json, "request_json")?)?;
        deliver_all(
            client.chat.completions.stream(&request)?,
            on_chunk,
            user_data,
        )
    })
}

/// A whole text completion (`{"model": ..., "prompt": ..., ...}`); `*out_json` receives the
/// `text_completion` object, to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_completions_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let request = CompletionRequest::from_json(str_arg(request_json, "request_json")?)?;
        let completion = client.completions.create(&request)?;
        give_string(out, to_json_string(&completion)?)
    })
}

/// Streams a text completion: `on_chunk` receives each `text_completion` chunk as JSON.
/// Same rules as `ingle_chat_completions_stream`.
#[no_mangle]
pub unsafe extern "C" fn ingle_completions_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = callback_arg(on_chunk)?;
        let request = CompletionRequest::from_json(str_arg(request_json, "request_json")?)?;
        deliver_all(client.completions.stream(&request)?, on_chunk, user_data)
    })
}

/// Embeddings: `request_json` is an OpenAI embeddings request (`{"model": ..., "input": "text"
/// or ["text", ...], "dimensions": ..., "encoding_format": "float" or "base64"}`); `*out_json`
/// receives the response `{"object": "list", "data": [{"object": "embedding", "index",
/// "embedding"}], "model", "usage"}`, to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_embeddings_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let request = EmbeddingRequest::from_json(str_arg(request_json, "request_json")?)?;
        give_string(out, to_json_string(&client.embeddings.create(&request)?)?)
    })
}

/// The same request as `ingle_embeddings_create`, answered with the vectors as one float32
/// matrix instead of JSON (no numbers are printed or parsed; `encoding_format` is checked but
/// has nothing to choose). `*out` receives the matrix, to free with
/// `ingle_embedding_matrix_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_embeddings_create_matrix(
    client: *mut IngleClient,
    request_json: *const c_char,
    out: *mut *mut IngleEmbeddingMatrix,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let request = EmbeddingRequest::from_json(str_arg(request_json, "request_json")?)?;
        let matrix = client.embeddings.create_matrix(&request)?;
        let (data, _) = give_slice(matrix.data);
        *out = Box::into_raw(Box::new(IngleEmbeddingMatrix {
            data,
            rows: matrix.rows,
            dims: matrix.dims,
            prompt_tokens: matrix.prompt_tokens as usize,
        }));
        Ok(())
    })
}

/// Frees a matrix from `ingle_embeddings_create_matrix` and its data. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_embedding_matrix_free(matrix: *mut IngleEmbeddingMatrix) {
    if !matrix.is_null() {
        let matrix = Box::from_raw(matrix);
        take_slice(matrix.data, matrix.rows * matrix.dims);
    }
}

/// Speech: `request_json` is an OpenAI speech request (`{"model": "@local/piper-en-us-joe-medium",
/// "input": "Hello there.", "voice": "alloy", "response_format": "wav", "speed": 1.0}`; `voice` is
/// one of the model's voices (`"joe"`) or any OpenAI voice name, `response_format` is `mp3`
/// (default), `opus`, `aac`, `flac`, `wav` or `pcm`, `speed` 0.25 to 4). `*out` receives the whole
/// encoded file (headers with exact lengths), to free with `ingle_speech_audio_free` (NULL on
/// failure). Errors name the field at fault in `ingle_last_error_json()`'s `param`.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_speech_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out: *mut *mut IngleSpeechAudio,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let request = SpeechRequest::from_json(str_arg(request_json, "request_json")?)?;
        let audio = client.audio.speech.create(&request)?;
        let content_type = c_string_lossy(audio.content_type.to_string()).into_raw();
        let (data, len) = give_slice(audio.bytes);
        *out = Box::into_raw(Box::new(IngleSpeechAudio {
            data,
            len,
            content_type,
            sample_rate: audio.sample_rate,
        }));
        Ok(())
    })
}

/// Frees audio from `ingle_audio_speech_create`, its data and content type. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_speech_audio_free(audio: *mut IngleSpeechAudio) {
    if !audio.is_null() {
        let audio = Box::from_raw(audio);
        take_slice(audio.data, audio.len);
        drop(CString::from_raw(audio.content_type as *mut c_char));
    }
}

/// Streams speech as it is synthesised, sentence by sentence: `on_chunk` receives the encoded
/// bytes (see `IngleAudioCallback`) for the same request as `ingle_audio_speech_create`, plus
/// `"stream_format": "sse"` for server-sent events. Errors in the request are returned before
/// any chunk. Returns when the audio ends, fails, or `on_chunk` returns non-zero
/// (`INGLE_ERROR_CANCELLED`: synthesis stops before the next sentence). `user_data` is passed to
/// `on_chunk` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_speech_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_chunk: IngleAudioCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = audio_callback_arg(on_chunk)?;
        let request = SpeechRequest::from_json(str_arg(request_json, "request_json")?)?;
        // Each chunk is dropped, and with the stream the synthesis, on the way out.
        for chunk in client.audio.speech.stream(&request)? {
            let chunk = chunk?;
            match on_chunk(chunk.as_ptr(), chunk.len(), user_data) {
                0 => {}
                returned => return Err(Failure::cancelled(returned)),
            }
        }
        Ok(())
    })
}

/// The same request as `ingle_audio_speech_create`, answered with the model's float32 samples
/// instead of an encoded file (`response_format` is checked but has nothing to choose).
/// `*out` receives them, to free with `ingle_speech_samples_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_speech_create_samples(
    client: *mut IngleClient,
    request_json: *const c_char,
    out: *mut *mut IngleSpeechSamples,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let request = SpeechRequest::from_json(str_arg(request_json, "request_json")?)?;
        let raw = client.audio.speech.create_samples(&request)?;
        let channels = raw.channels.max(1);
        let frames = raw.samples.len() / channels as usize;
        let mut samples = raw.samples;
        samples.truncate(frames * channels as usize); // whole frames only
        let (samples, _) = give_slice(samples);
        *out = Box::into_raw(Box::new(IngleSpeechSamples {
            samples,
            frames,
            channels,
            sample_rate: raw.sample_rate,
        }));
        Ok(())
    })
}

/// Frees samples from `ingle_audio_speech_create_samples`, the samples included. NULL is a
/// no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_speech_samples_free(samples: *mut IngleSpeechSamples) {
    if !samples.is_null() {
        let samples = Box::from_raw(samples);
        take_slice(
            samples.samples,
            samples.frames * samples.channels.max(1) as usize,
        );
    }
}

/// The bytes of an uploaded audio file; NULL is an error whatever `len` is.
unsafe fn bytes_arg<'a>(data: *const u8, len: usize, name: &str) -> FfiResult<&'a [u8]> {
    if data.is_null() {
        return Err(Failure::null_argument(name));
    }
    if len > isize::MAX as usize {
        return Err(Failure::from(Error::invalid(
            format!("{name}_len"),
            format!("`{name}_len` is {len}: more bytes than any buffer can hold"),
        )));
    }
    Ok(std::slice::from_raw_parts(data, len))
}

/// The request of a transcription function and its audio file (`filename` may be NULL).
unsafe fn transcription_file_args(
    request_json: *const c_char,
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
) -> FfiResult<(TranscriptionRequest, TranscriptionAudio)> {
    let bytes = bytes_arg(file, file_len, "file")?;
    let filename = if filename.is_null() {
        None
    } else {
        Some(str_arg(filename, "filename")?)
    };
    let request = TranscriptionRequest::from_json(str_arg(request_json, "request_json")?)?;
    Ok((request, TranscriptionAudio::file(bytes, filename)))
}

fn give_transcription(out: &mut *mut IngleTranscription, response: TranscriptionResponse) {
    let body = c_string_lossy(response.body);
    let len = body.as_bytes().len();
    *out = Box::into_raw(Box::new(IngleTranscription {
        body: body.into_raw(),
        len,
        content_type: c_string_lossy(response.content_type.to_string()).into_raw(),
        text: c_string_lossy(response.text).into_raw(),
        duration: response.duration,
    }));
}

/// Transcription: `request_json` holds the fields of an OpenAI transcription request other than
/// the file (`{"model": "@local/whisper-tiny-en", "language": "en", "prompt": ...,
/// "response_format": "json", "temperature": 0, "timestamp_granularities": ["segment",
/// "word"]}`; `response_format` is `json` (default), `text`, `srt`, `verbose_json` or `vtt`;
/// `timestamp_granularities` needs `verbose_json`; no `"stream": true`, which is
/// `ingle_audio_transcriptions_stream`). `file` is the audio file's `file_len` bytes (wav,
/// flac, mp3, ogg vorbis or opus, webm, m4a), borrowed for the call; `filename` (NULL, or e.g.
/// `"speech.mp3"`) only hints at its format. `*out` receives the response body and its content
/// type, to free with `ingle_transcription_free` (NULL on failure). Errors name the field or
/// argument at fault in `ingle_last_error_json()`'s `param`: audio that cannot be decoded is
/// `"file"`, a language the model does not speak `"language"`.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_transcriptions_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
    out: *mut *mut IngleTranscription,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let (request, audio) = transcription_file_args(request_json, file, file_len, filename)?;
        let response = client.audio.transcriptions.create(&request, audio)?;
        give_transcription(out, response);
        Ok(())
    })
}

/// Streams a transcription as the audio is decoded, 30 seconds at a time: `on_chunk` receives
/// each event as JSON, `{"type": "transcript.text.delta", "delta": "..."}` once per segment, then
/// `{"type": "transcript.text.done", "text": "...", "usage": {"type": "duration", "seconds":
/// ...}}` (the deltas joined make `text`, without its trailing space). The same request and
/// audio as `ingle_audio_transcriptions_create`, with `response_format` `json` or `text`, and
/// `"stream": true` allowed. Errors in the request or the audio are returned before any event.
/// Returns when the transcription ends, fails, or `on_chunk` returns non-zero
/// (`INGLE_ERROR_CANCELLED`: transcription stops before the next 30-second window, and no done
/// event comes). `user_data` is passed to `on_chunk` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_transcriptions_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = callback_arg(on_chunk)?;
        let (request, audio) = transcription_file_args(request_json, file, file_len, filename)?;
        // Dropping the stream on the way out (an error, or the callback's stop) stops it.
        for event in client.audio.transcriptions.stream(&request, audio)? {
            deliver(event?.to_json().to_string(), on_chunk, user_data)?;
        }
        Ok(())
    })
}

/// The same request as `ingle_audio_transcriptions_create`, on raw audio instead of a file:
/// `samples` is `n_samples` float32 samples in [-1, 1] (all channels together, interleaved
/// when `channels > 1`; whole frames only), at `sample_rate` Hz (any rate: resampled to the
/// model's 16 kHz), borrowed for the call. `*out` receives the response, to free with
/// `ingle_transcription_free` (NULL on failure). Errors about the audio name `"samples"`,
/// `"sample_rate"` or `"channels"`.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_transcriptions_create_samples(
    client: *mut IngleClient,
    request_json: *const c_char,
    samples: *const f32,
    n_samples: usize,
    sample_rate: u32,
    channels: u16,
    out: *mut *mut IngleTranscription,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        if samples.is_null() {
            return Err(Failure::null_argument("samples"));
        }
        let request = TranscriptionRequest::from_json(str_arg(request_json, "request_json")?)?;
        if n_samples > isize::MAX as usize / size_of::<f32>() {
            return Err(Error::invalid(
                "n_samples",
                format!("`n_samples` is more than any buffer can hold ({n_samples})"),
            )
            .into());
        }
        if sample_rate == 0 {
            return Err(Error::invalid("sample_rate", "`sample_rate` must be above 0 Hz").into());
        }
        if channels == 0 {
            return Err(Error::invalid("channels", "`channels` must be at least 1").into());
        }
        if n_samples == 0 || !n_samples.is_multiple_of(channels as usize) {
            return Err(Error::invalid(
                "samples",
                format!(
                    "`n_samples` is {n_samples}: the audio must be one or more whole frames of \
                     {channels} samples"
                ),
            )
            .into());
        }
        let samples = std::slice::from_raw_parts(samples, n_samples).to_vec();
        let audio = TranscriptionAudio::samples(samples, sample_rate, channels);
        let response = client
            .audio
            .transcriptions
            .create(&request, audio)
            .map_err(|mut error| {
                // The core names the audio as the OpenAI form field; here it is `samples`.
                if error.param.as_deref() == Some("file") {
                    error.param = Some("samples".into());
                    error.message = error.message.replace("`file`", "`samples`");
                }
                error
            })?;
        give_transcription(out, response);
        Ok(())
    })
}

/// Frees a transcription from `ingle_audio_transcriptions_create` or `_create_samples`, its
/// body, content type and text. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_transcription_free(transcription: *mut IngleTranscription) {
    if !transcription.is_null() {
        let transcription = Box::from_raw(transcription);
        drop(CString::from_raw(transcription.body as *mut c_char));
        drop(CString::from_raw(transcription.content_type as *mut c_char));
        drop(CString::from_raw(transcription.text as *mut c_char));
    }
}

/// The models of the client's configuration: `*out_json` receives
/// `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}, ...]}`,
/// to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_models_list(
    client: *mut IngleClient,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        give_string(out, to_json_string(&client.models.list())?)
    })
}

/// One model: `*out_json` receives its `model` object (`INGLE_ERROR_NOT_FOUND` when the client
/// has no such model), to free with `ingle_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ingle_models_retrieve(
    client: *mut IngleClient,
    model: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let model = client.models.retrieve(str_arg(model, "model")?)?;
        give_string(out, to_json_string(&model)?)
    })
}

/// Downloads `model`, a tag of ingle's model catalog (`ingle models` lists them), and what it
/// needs (ONNX Runtime for the ONNX models) into the client's models directory: each file
/// verified (sha256), written atomically, an interrupted download resumed by the next call.
/// Files already there are re-hashed; a corrupted one is fetched again. A model the client's
/// config registers only when its files exist is served by this client afterwards.
/// `on_progress` (NULL: none) receives each progress event as JSON,
/// `{"status": "waiting"|"verifying"|"downloading"|"success", "tag", "file", "completed",
/// "total"}` (bytes); a non-zero return stops the pull with `INGLE_ERROR_CANCELLED`, keeping
/// what was downloaded (on `success` it changes nothing: the pull is done). `*out_json` (NULL: not wanted) receives the report,
/// `{"tag", "status": "success", "models_dir", "files": [{"tag", "path", "size", "sha256",
/// "fetched"}], "downloaded_bytes"}`, to free with `ingle_string_free`.
/// `INGLE_ERROR_NOT_FOUND` for a tag the catalog does not have; network and checksum
/// failures are `INGLE_ERROR_MODEL` (`code` `download_unreachable` / `download_interrupted` /
/// `download_server_error` / `download_failed` / `checksum_mismatch`), after the pull's own
/// retries of a dropped connection or an HTTP 5xx.
#[no_mangle]
pub unsafe extern "C" fn ingle_models_pull(
    client: *mut IngleClient,
    model: *const c_char,
    on_progress: IngleChunkCallback,
    user_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = match out_json.is_null() {
            true => None,
            false => Some(out_arg(out_json, "out_json")?),
        };
        let client = client_arg(client)?;
        let model = str_arg(model, "model")?;
        let mut stopped = None;
        let result = client.models.pull(model, &mut |event| {
            let Some(callback) = on_progress else {
                return true;
            };
            let Ok(json) = to_json_string(event) else {
                return true;
            };
            let chunk = c_string_lossy(json);
            match callback(chunk.as_ptr(), chunk.as_bytes().len(), user_data) {
                0 => true,
                returned => {
                    stopped = Some(returned);
                    false
                }
            }
        });
        let report = match (result, stopped) {
            (Err(_), Some(returned)) => {
                let mut failure = Failure::cancelled(returned);
                failure.error.param = Some("on_progress".into());
                failure.error.message = format!(
                    "Cancelled: the progress callback returned {returned}; pulling again \
                     resumes where it stopped"
                );
                return Err(failure);
            }
            (result, _) => result?,
        };
        if let Some(out) = out {
            give_string(out, to_json_string(&report)?)?;
        }
        Ok(())
    })
}

/// Frees a model's memory (weights, KV cache, threads); the next request loads it again.
/// Requests running on it finish first, and its memory goes when the last one ends.
/// `*out_was_loaded` (NULL: not wanted) receives 1 if it was loaded, else 0.
/// `INGLE_ERROR_NOT_FOUND` when the client has no such model.
#[no_mangle]
pub unsafe extern "C" fn ingle_models_unload(
    client: *mut IngleClient,
    model: *const c_char,
    out_was_loaded: *mut c_int,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let was_loaded = client.models.unload(str_arg(model, "model")?)?;
        if !out_was_loaded.is_null() {
            *out_was_loaded = c_int::from(was_loaded);
        }
        Ok(())
    })
}

/// What ingle runs with here, as JSON: its version and the CPU variant of llama.cpp's kernels
/// loaded for this machine (`{"version", "cpu_variant", "cpu_variant_chosen_by",
/// "cpu_variants": [[name, score]...], "cpu_features", ...}`); loads that variant if no model
/// has yet. `*out_json` is freed with `ingle_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ingle_system_info(out_json: *mut *mut c_char) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        give_string(out, to_json_string(&ingle_core::system_info()?)?)
    })
}

/// Runs the predictor `tag` on `inputs_json` (a JSON object of parameter names to values) to
/// the end. `*out_json` receives the prediction
/// `{"id", "tag", "created", "results": [...], "latency", "error": null, "logs"}`, to free with
/// `ingle_string_free`. A prediction that fails while running returns its error's status and
/// still gives `*out_json`: the prediction with `error` set and the `logs` it wrote before
/// failing (free it too). A call that fails before the predictor runs (a bad argument, an
/// unknown tag) leaves `*out_json` NULL. So: free `*out_json` whenever it is not NULL.
#[no_mangle]
pub unsafe extern "C" fn ingle_predictions_create(
    client: *mut IngleClient,
    tag: *const c_char,
    inputs_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let tag = str_arg(tag, "tag")?;
        let inputs = inputs_from_json(str_arg(inputs_json, "inputs_json")?)?;
        let (json, error) = prediction_json(&client.predictions.create(tag, inputs)?)?;
        give_string(out, json)?;
        match error {
            // The prediction (its logs above all) is the caller's to read and free.
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    })
}

/// Streams the predictor `tag`: `on_chunk` receives one prediction JSON per partial result
/// (once for an eager predictor). A prediction that fails while running is delivered with its
/// `error` set, and then the call returns that error's status. Same rules as
/// `ingle_chat_completions_stream`.
#[no_mangle]
pub unsafe extern "C" fn ingle_predictions_stream(
    client: *mut IngleClient,
    tag: *const c_char,
    inputs_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let tag = str_arg(tag, "tag")?;
        let on_chunk = callback_arg(on_chunk)?;
        let inputs = inputs_from_json(str_arg(inputs_json, "inputs_json")?)?;
        for prediction in client.predictions.stream(tag, inputs)? {
            let (json, error) = prediction_json(&prediction)?;
            deliver(json, on_chunk, user_data)?;
            if let Some(error) = error {
                return Err(error.into());
            }
        }
        Ok(())
    })
}

/// The message of the last failed call on this thread (`""` if none has failed). Successful
/// calls leave it unchanged. Owned by ingle: valid until the next failed call on this thread;
/// do not free it.
#[no_mangle]
pub extern "C" fn ingle_last_error() -> *const c_char {
    last_error_field(|last| last.message.as_ptr())
}

/// The last failure on this thread as the OpenAI error object
/// `{"error": {"message", "type", "param", "code"}}` (`""` if none has failed); `param` names
/// the request field at fault. A cancellation has type `"cancelled"`. Same lifetime as
/// `ingle_last_error()`.
#[no_mangle]
pub extern "C" fn ingle_last_error_json() -> *const c_char {
    last_error_field(|last| last.json.as_ptr())
}

fn last_error_field(field: impl Fn(&LastError) -> *const c_char) -> *const c_char {
    LAST_ERROR
        .try_with(|cell| cell.borrow().as_ref().map(&field))
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}

/// Frees a string ingle returned through an `out_json` argument. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_string_free(text: *mut c_char) {
    if !text.is_null() {
        drop(CString::from_raw(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_version_matches_the_crate() {
        let crate_version = [
            env!("CARGO_PKG_VERSION_MAJOR"),
            env!("CARGO_PKG_VERSION_MINOR"),
            env!("CARGO_PKG_VERSION_PATCH"),
        ]
        .map(|n| n.parse::<u32>().unwrap());
        assert_eq!(
            crate_version,
            [
                INGLE_VERSION_MAJOR,
                INGLE_VERSION_MINOR,
                INGLE_VERSION_PATCH
            ],
            "update INGLE_VERSION_* in ffi/src/lib.rs and regenerate include/ingle.h"
        );
    }

    #[test]
    fn a_panic_becomes_an_internal_error() {
        let status = ffi_call(|| panic!("boom"));
        assert_eq!(status, IngleStatus::INGLE_ERROR_INTERNAL);
        let message = unsafe { CStr::from_ptr(ingle_last_error()) }
            .to_str()
            .unwrap();
        assert!(message.contains("boom"), "{message}");
    }

    #[test]
    fn interior_nul_does_not_lose_the_message() {
        assert_eq!(
            c_string_lossy("a\0b".into()).to_str().unwrap(),
            "a\u{FFFD}b"
        );
    }
}
