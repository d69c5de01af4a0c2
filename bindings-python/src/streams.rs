//! Streams Python iterates: a core stream that any thread may close, also while another
//! thread waits for its next item (asyncio does that).

use crate::py_err;
use ingle::json_text::JsonTextStream;
use ingle::openai::SpeechStream;
use ingle::Cancel;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// A running core stream that any thread may close, also while another waits for its next
/// item (asyncio does that): the waiting call returns its item (or the end, when the close
/// stopped the work short: a Whisper window, a stuck Python predictor), then the stream ends.
/// Dropping the core stream stops its work (generation, synthesis).
struct Closable<I> {
    inner: Mutex<Option<I>>,
    closed: AtomicBool,
    /// The call the stream was made under: closing cancels it, which stops a Python predictor
    /// stuck in its own code too (`interrupt`).
    cancel: Cancel,
}

impl<T, I: Iterator<Item = ingle::Result<T>> + Send> Closable<I> {
    fn new(stream: I, cancel: Cancel) -> Self {
        Closable {
            inner: Mutex::new(Some(stream)),
            closed: AtomicBool::new(false),
            cancel,
        }
    }

    /// The next item, waiting without the GIL; `None` at the end, or once closed.
    fn next(&self, py: Python<'_>) -> PyResult<Option<T>>
    where
        T: Send,
    {
        let item = py.detach(|| {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if self.closed.load(Ordering::Acquire) {
                *inner = None; // stops the work
            }
            let mut item = inner.as_mut()?.next();
            let closed = self.closed.load(Ordering::Acquire);
            if !matches!(item, Some(Ok(_))) || closed {
                *inner = None; // the end, an error, or closed while waiting
            }
            // Closed while waiting, the work may have stopped short (its cancel): that is the
            // end the closer asked for, not an error.
            if closed && matches!(&item, Some(Err(e)) if e.kind == ingle::ErrorKind::Cancelled) {
                item = None;
            }
            item
        });
        item.transpose().map_err(py_err)
    }

    /// Stops the work. Safe to call more than once, and from any thread.
    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        // If a thread is waiting for an item it holds the lock, and drops the stream itself,
        // once its item comes; the cancel stops the work it waits for (a Python predictor stuck
        // in its own code is interrupted).
        self.cancel.cancel();
        if let Ok(mut inner) = self.inner.try_lock() {
            *inner = None;
        }
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// A running stream. Iterating yields JSON texts; `close()` or dropping it stops generation.
/// It may be closed from another thread while one is waiting in `__next__` (asyncio does
/// that): the waiting call returns its item, then the stream ends.
#[pyclass(frozen, module = "ingle._ingle")]
pub(crate) struct NativeStream {
    stream: Closable<JsonTextStream>,
}

impl NativeStream {
    pub(crate) fn new(stream: JsonTextStream, cancel: Cancel) -> Self {
        NativeStream {
            stream: Closable::new(stream, cancel),
        }
    }
}

#[pymethods]
impl NativeStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next JSON text, or `None` at the end (`StopIteration`).
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.stream.next(py)
    }

    /// Stops generation. Safe to call more than once, and from any thread.
    fn close(&self) {
        self.stream.close();
    }

    #[getter]
    fn closed(&self) -> bool {
        self.stream.closed()
    }
}

/// Speech as it is synthesised: iterating yields `bytes` (encoded audio, or SSE-framed events),
/// a sentence at a time; `close()` or dropping it stops synthesis before the next sentence.
/// Closable from any thread, as `NativeStream`.
#[pyclass(frozen, module = "ingle._ingle")]
pub(crate) struct NativeSpeechStream {
    stream: Closable<SpeechStream>,
    content_type: &'static str,
}

impl NativeSpeechStream {
    pub(crate) fn new(stream: SpeechStream, cancel: Cancel) -> Self {
        NativeSpeechStream {
            content_type: stream.content_type(),
            stream: Closable::new(stream, cancel),
        }
    }
}

#[pymethods]
impl NativeSpeechStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next chunk of bytes, or `None` at the end (`StopIteration`).
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        Ok(self.stream.next(py)?.map(|bytes| PyBytes::new(py, &bytes)))
    }

    /// Stops synthesis. Safe to call more than once, and from any thread.
    fn close(&self) {
        self.stream.close();
    }

    #[getter]
    fn closed(&self) -> bool {
        self.stream.closed()
    }

    /// The MIME type of the bytes: the audio format's, or `text/event-stream` for SSE.
    #[getter]
    fn content_type(&self) -> &'static str {
        self.content_type
    }
}
