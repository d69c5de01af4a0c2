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

// cbindgen writes the header in the order it reads the modules, so they are declared in the
// header's order, one group each (rustfmt sorts a group).
mod methods;

mod text;

mod responses;

mod audio;

mod models;

mod call;

mod predictors;

pub use audio::*;
pub use call::{ingle_last_error, ingle_last_error_json, ingle_string_free};
pub use methods::{ingle_call, ingle_call_stream};
pub use models::*;
pub use responses::*;
pub use text::*;

use call::{ffi_call, out_arg, str_arg};
use ingle_core::{Cancel, Client, Config};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    /// The call was stopped: a callback returned non-zero, or its `IngleCancel` was set
    /// (`ingle_client_with_cancel`).
    INGLE_ERROR_CANCELLED = 5,
    /// A pointer argument that must not be NULL was NULL.
    INGLE_ERROR_NULL_ARGUMENT = 6,
    /// A bug inside ingle (a caught panic, say). The client stays usable.
    INGLE_ERROR_INTERNAL = 7,
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

/// The library's version, `"MAJOR.MINOR.PATCH"`. A static string: do not free it.
#[no_mangle]
pub extern "C" fn ingle_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Creates a client. `config_json` is NULL for the defaults (the config file named by the
/// `INGLE_CONFIG` environment variable, or else the default model from the models cache), or a
/// JSON object with the fields of the TOML config, e.g.
/// `{"models_dir": "/opt/models", "predictors": [{"tag": "@me/chat", "backend": "llama",
/// "model": "my.gguf", "n_ctx": 2048, "threads": 2, "parallel": 4}]}`. Its predictors join the
/// built-in models (a tag in both is the config's) unless it says `"builtin_models": false`.
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

/// Stops calls from any thread: the calls of a client made by `ingle_client_with_cancel` end
/// with `INGLE_ERROR_CANCELLED` once it is set. Opaque; create it with `ingle_cancel_create`,
/// free it with `ingle_cancel_free`.
pub struct IngleCancel {
    cancel: Cancel,
}

/// Creates a cancel, not set. `*out` is to free with `ingle_cancel_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_cancel_create(out: *mut *mut IngleCancel) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        *out = Box::into_raw(Box::new(IngleCancel {
            cancel: Cancel::new(),
        }));
        Ok(())
    })
}

/// Sets `cancel`, from any thread, at any time (a signal handler excepted): the calls of a
/// client made with it stop at their next step (a generated token, a sentence, a transcription
/// window's next token, the audio decoder's next packet) and return `INGLE_ERROR_CANCELLED`; a
/// C predictor running for one sees `ingle_sink_cancelled` return 1; calls made after stop at
/// their first step. A chat request queued for a slot leaves the queue at once; one reading
/// its prompt stops after the chunk it reads. Work without steps inside (an embedding batch,
/// Whisper's encoder) stops when it ends. It stays set. NULL is a no-op.
/// `cancel` must not be freed while another thread may still set it.
#[no_mangle]
pub unsafe extern "C" fn ingle_cancel_set(cancel: *const IngleCancel) {
    if let Some(cancel) = cancel.as_ref() {
        // Setting runs what stops each running call (Rust code only): no unwinding into C.
        let _ = catch_unwind(AssertUnwindSafe(|| cancel.cancel.cancel()));
    }
}

/// Frees a cancel. NULL is a no-op. The clients made with it keep working, and can no longer be
/// cancelled unless it was set.
#[no_mangle]
pub unsafe extern "C" fn ingle_cancel_free(cancel: *mut IngleCancel) {
    if !cancel.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(cancel))));
    }
}

/// A client whose calls `cancel` stops (`ingle_cancel_set`): the same models as `client`,
/// shared, not loaded again. Make one per call (or per group of calls) to stop from another
/// thread: a whole completion, a long transcription still decoding its audio. `*out` is to
/// free with `ingle_client_free`, which frees no model `client` still uses (NULL on failure).
/// `client` and `cancel` may be freed before it. Made from a client that has a cancel, it
/// answers to `cancel` only.
#[no_mangle]
pub unsafe extern "C" fn ingle_client_with_cancel(
    client: *mut IngleClient,
    cancel: *const IngleCancel,
    out: *mut *mut IngleClient,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = call::client_arg(client)?;
        let cancel = cancel
            .as_ref()
            .ok_or_else(|| call::Failure::null_argument("cancel"))?;
        *out = Box::into_raw(Box::new(IngleClient {
            client: client.with_cancel(&cancel.cancel),
        }));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use call::c_string_lossy;
    use std::ffi::CStr;

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
