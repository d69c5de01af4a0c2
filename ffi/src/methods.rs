//! The core's method table at the C ABI: `ingle_call` runs any method that answers whole,
//! `ingle_call_stream` any that answers in parts, each by its name and its request as JSON. The
//! typed JSON functions of the other modules are these two with the name filled in, but for
//! `ingle_responses_stream` (which returns the status of a response that failed, where the
//! events only carry it) and `ingle_responses_delete` (whose `out_json` may be NULL).

use crate::call::{
    callback_arg, client_arg, deliver, ffi_call, give_string, out_arg, str_arg, Failure, FfiResult,
};
use crate::{IngleChunkCallback, IngleClient, IngleStatus};
use ingle_core::methods::{method, Gives};
use ingle_core::Error;
use std::ffi::{c_char, c_void};

/// Runs the method `method` (`"chat.completions.create"`, `"responses.input_tokens"`,
/// `"models.retrieve"` ...: the names of the method table, listed in `docs/c.md`) on
/// `request_json`, its request as JSON: an OpenAI request body, or for a method that names
/// what it reads (`responses.retrieve`) an object of those names (`{"response_id": "..."}`).
/// `*out_json` receives the answer as JSON, to free with `ingle_string_free` (NULL on failure). A method that answers in parts is
/// `ingle_call_stream`'s, and one that answers with audio or takes an upload has its own
/// function (`ingle_audio_speech_create`, `ingle_audio_transcriptions_create`): each is an
/// `INGLE_ERROR_INVALID_REQUEST` naming the function to call.
#[no_mangle]
pub unsafe extern "C" fn ingle_call(
    client: *mut IngleClient,
    method: *const c_char,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole_with(client, || str_arg(method, "method"), request_json, out_json)
}

/// Streams the method `method` (`"chat.completions.stream"`, `"completions.stream"`,
/// `"responses.stream"`) on `request_json`: `on_chunk` receives each chunk or event as JSON.
/// Returns when the stream ends, fails, or `on_chunk` returns non-zero
/// (`INGLE_ERROR_CANCELLED`, which stops the work). `user_data` is passed to `on_chunk`
/// untouched. A method that answers whole is `ingle_call`'s: an `INGLE_ERROR_INVALID_REQUEST`.
#[no_mangle]
pub unsafe extern "C" fn ingle_call_stream(
    client: *mut IngleClient,
    method: *const c_char,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    let name = || str_arg(method, "method");
    streamed_with(client, name, request_json, on_chunk, user_data)
}

/// The failure of a typed function whose method gave an answer of another kind (a bug).
pub(crate) fn unexpected(name: &str, answer: &ingle_core::methods::Answer) -> Failure {
    Failure::from(Error::internal(format!(
        "`{name}` answered {answer:?}, not what its function gives"
    )))
}

/// A whole method's answer as text.
pub(crate) fn call_whole(
    client: &ingle_core::Client,
    name: &str,
    request: &str,
) -> ingle_core::Result<String> {
    let method = method(name)?;
    match (method.gives, method.takes) {
        (Gives::Json, _) => method.call(client, request, None)?.into_text(),
        (Gives::Body | Gives::Audio, _) => Err(elsewhere(name)),
        (Gives::Chunks | Gives::NamedEvents | Gives::Events, _) => Err(Error::invalid(
            "method",
            format!("`{name}` answers in parts: call it with `ingle_call_stream`"),
        )),
    }
}

/// A streamed method's chunks as JSON texts.
pub(crate) fn call_streamed(
    client: &ingle_core::Client,
    name: &str,
    request: &str,
) -> ingle_core::Result<ingle_core::json_text::JsonTextStream> {
    let method = method(name)?;
    match method.gives {
        Gives::Events | Gives::Audio => Err(elsewhere(name)),
        Gives::Chunks | Gives::NamedEvents => method.call(client, request, None)?.into_stream(),
        Gives::Json | Gives::Body => Err(Error::invalid(
            "method",
            format!("`{name}` answers whole: call it with `ingle_call`"),
        )),
    }
}

/// A method whose request or answer is audio, which has a function of its own: the method's
/// name as a C function (`audio.translations.create` is `ingle_audio_translations_create`).
fn elsewhere(name: &str) -> Error {
    let function = format!("ingle_{}", name.replace('.', "_"));
    Error::invalid(
        "method",
        format!("`{name}` takes or gives audio, which JSON text cannot carry: call `{function}`"),
    )
}

/// The body of a typed function that answers whole: [`ingle_call`] with its method's name.
pub(crate) unsafe fn whole(
    client: *mut IngleClient,
    name: &str,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole_with(client, || Ok(name), request_json, out_json)
}

/// The body of a typed function that streams: [`ingle_call_stream`] with its method's name.
pub(crate) unsafe fn streamed(
    client: *mut IngleClient,
    name: &str,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    streamed_with(client, || Ok(name), request_json, on_chunk, user_data)
}

/// [`ingle_call`] and [`whole`]: the method's name read (or given) after the output and the
/// client, so that each argument's error comes in the same order.
unsafe fn whole_with<'a>(
    client: *mut IngleClient,
    name: impl FnOnce() -> FfiResult<&'a str>,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let name = name()?;
        let request = str_arg(request_json, "request_json")?;
        give_string(out, call_whole(client, name, request)?)
    })
}

/// [`ingle_call_stream`] and [`streamed`], as [`whole_with`].
unsafe fn streamed_with<'a>(
    client: *mut IngleClient,
    name: impl FnOnce() -> FfiResult<&'a str>,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = callback_arg(on_chunk)?;
        let name = name()?;
        let request = str_arg(request_json, "request_json")?;
        for chunk in call_streamed(client, name, request)? {
            deliver(chunk?, on_chunk, user_data)?;
        }
        Ok(())
    })
}

/// The body of a typed function that takes one named value (a response's id, a model's):
/// [`ingle_call`] with `{"<param>": value}`.
pub(crate) unsafe fn by_name(
    client: *mut IngleClient,
    name: &str,
    param: &str,
    value: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let request = serde_json::json!({ param: str_arg(value, param)? }).to_string();
        give_string(out, call_whole(client, name, &request)?)
    })
}
