//! The calling convention every exported function follows: arguments checked, panics caught,
//! failures turned into a status and the thread's last error, results given to C to free.

use crate::{IngleAudioCallback, IngleChunkCallback, IngleClient, IngleStatus};
use ingle_core::json_text::to_json_text;
use ingle_core::ErrorCode;
use ingle_core::{Client, Error, ErrorKind, Prediction};
use serde::Serialize;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// Why a call failed: the status it returns and the error behind `ingle_last_error`.
pub(crate) struct Failure {
    pub(crate) status: IngleStatus,
    pub(crate) error: Error,
}

pub(crate) type FfiResult<T> = Result<T, Failure>;

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
    pub(crate) fn null_argument(name: &str) -> Self {
        Failure {
            status: IngleStatus::INGLE_ERROR_NULL_ARGUMENT,
            error: Error::invalid(name, format!("`{name}` must not be NULL"))
                .with_code(ErrorCode::NullArgument),
        }
    }

    pub(crate) fn cancelled(returned: i32) -> Self {
        Failure::from(
            Error::cancelled(format!("Cancelled: the chunk callback returned {returned}"))
                .with_param("on_chunk"),
        )
    }

    pub(crate) fn panicked(payload: Box<dyn std::any::Any + Send>) -> Self {
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
    pub(crate) fn record(self) -> IngleStatus {
        let last = LastError {
            message: c_string_lossy(self.error.to_string()),
            json: c_string_lossy(self.error.to_openai().to_string()),
        };
        LAST_ERROR.with(|cell| *cell.borrow_mut() = Some(last));
        self.status
    }
}

pub(crate) struct LastError {
    pub(crate) message: CString,
    pub(crate) json: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// A C string of `text`; an interior NUL (which C cannot hold) becomes U+FFFD.
pub(crate) fn c_string_lossy(text: String) -> CString {
    CString::new(text).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{FFFD}");
        CString::new(text).expect("NULs were replaced")
    })
}

/// Runs the body of an exported function: a panic or an error becomes a status and the
/// thread's last error.
pub(crate) fn ffi_call(body: impl FnOnce() -> FfiResult<()>) -> IngleStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => IngleStatus::INGLE_OK,
        Ok(Err(failure)) => failure.record(),
        Err(payload) => Failure::panicked(payload).record(),
    }
}

pub(crate) unsafe fn client_arg<'a>(client: *const IngleClient) -> FfiResult<&'a Client> {
    match client.as_ref() {
        Some(handle) => Ok(&handle.client),
        None => Err(Failure::null_argument("client")),
    }
}

pub(crate) unsafe fn str_arg<'a>(text: *const c_char, name: &str) -> FfiResult<&'a str> {
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
pub(crate) unsafe fn out_arg<'a, T>(out: *mut *mut T, name: &str) -> FfiResult<&'a mut *mut T> {
    match out.as_mut() {
        Some(slot) => {
            *slot = ptr::null_mut();
            Ok(slot)
        }
        None => Err(Failure::null_argument(name)),
    }
}

pub(crate) fn callback_arg(
    callback: IngleChunkCallback,
) -> FfiResult<unsafe extern "C" fn(*const c_char, usize, *mut c_void) -> i32> {
    callback.ok_or_else(|| Failure::null_argument("on_chunk"))
}

pub(crate) fn audio_callback_arg(
    callback: IngleAudioCallback,
) -> FfiResult<unsafe extern "C" fn(*const u8, usize, *mut c_void) -> i32> {
    callback.ok_or_else(|| Failure::null_argument("on_chunk"))
}

/// Gives C a boxed slice it frees with [`take_slice`].
pub(crate) fn give_slice<T>(items: Vec<T>) -> (*const T, usize) {
    let len = items.len();
    (Box::into_raw(items.into_boxed_slice()) as *const T, len)
}

/// Frees a slice from [`give_slice`].
pub(crate) unsafe fn take_slice<T>(data: *const T, len: usize) {
    drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
        data as *mut T,
        len,
    )));
}

pub(crate) fn to_json_string(value: &impl Serialize) -> FfiResult<String> {
    Ok(to_json_text(value)?)
}

pub(crate) fn give_string(out: &mut *mut c_char, json: String) -> FfiResult<()> {
    *out = c_string_lossy(json).into_raw();
    Ok(())
}

pub(crate) fn deliver(
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
pub(crate) fn prediction_json(prediction: &Prediction) -> FfiResult<(String, Option<Error>)> {
    let json = prediction.to_json()?;
    Ok((json.to_string(), prediction.error.clone()))
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

/// Frees a string ingle returned through an `out_json` argument. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_string_free(text: *mut c_char) {
    if !text.is_null() {
        drop(CString::from_raw(text));
    }
}

fn last_error_field(field: impl Fn(&LastError) -> *const c_char) -> *const c_char {
    LAST_ERROR
        .try_with(|cell| cell.borrow().as_ref().map(&field))
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}
