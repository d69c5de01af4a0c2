//! Stopping a Python predictor that does not come back. Closing a stream (or cancelling a
//! `create`) stops the core at its next token; but a Python predictor stuck in its own code
//! (a loop that never yields, a long `sleep`) never reaches one: the worker thread ran forever
//! and `asyncio.run()` never returned, waiting for it.
//!
//! So each closable call has an id, set as the thread's current call while it runs
//! ([`CallScope`]). When a predictor's Python code runs ([`Running`], around each `__next__`),
//! it is registered under that id with the thread running it. Closing the call
//! ([`interrupt`]) then raises `ingle.PredictionCancelled` in that thread: an `async`
//! predictor's task is cancelled (`ingle._predictors._interrupt`), other code gets the
//! exception asynchronously (`PyThreadState_SetAsyncExc`), as Ctrl-C would. Once the predictor
//! returns to the engine, an exception not yet delivered is withdrawn, so it can never land in
//! code that runs later in that thread.

use pyo3::prelude::*;
use std::cell::Cell;
use std::collections::HashMap;
use std::os::raw::{c_long, c_ulong};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CURRENT_CALL: Cell<u64> = const { Cell::new(0) };
}

/// A predictor's Python code running for a call, and whether it was interrupted.
struct Entry {
    thread: c_ulong,
    depth: usize,
    /// An asynchronous exception was set on the thread and may not have been delivered yet.
    injected: bool,
}

static RUNNING: Mutex<Option<HashMap<u64, Entry>>> = Mutex::new(None);

fn with_running<T>(f: impl FnOnce(&mut HashMap<u64, Entry>) -> T) -> T {
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    f(running.get_or_insert_with(HashMap::new))
}

/// A new call id.
pub fn new_call() -> u64 {
    NEXT_CALL.fetch_add(1, Ordering::Relaxed)
}

/// While alive, `call` is the current call of this thread (the previous one after).
pub struct CallScope {
    previous: u64,
}

impl CallScope {
    pub fn enter(call: u64) -> Self {
        CallScope {
            previous: CURRENT_CALL.with(|c| c.replace(call)),
        }
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        CURRENT_CALL.with(|c| c.set(self.previous));
    }
}

/// A predictor's Python code running in this thread for the current call (if any). Made and
/// dropped with the GIL held.
pub struct Running {
    call: u64,
    thread: c_ulong,
}

impl Running {
    pub fn start(_py: Python<'_>) -> Running {
        let call = CURRENT_CALL.with(Cell::get);
        // SAFETY: reads the calling thread's id; no state.
        let thread = unsafe { pyo3::ffi::PyThread_get_thread_ident() };
        if call != 0 {
            with_running(|running| {
                running
                    .entry(call)
                    .or_insert(Entry {
                        thread,
                        depth: 0,
                        injected: false,
                    })
                    .depth += 1;
            });
        }
        Running { call, thread }
    }

    /// Ends the registration; with the GIL held (`_py`), so no Python code runs in between and
    /// a pending interrupt is withdrawn before any could.
    pub fn finish(self, _py: Python<'_>) {
        if self.call == 0 {
            return;
        }
        let injected = with_running(|running| {
            let Some(entry) = running.get_mut(&self.call) else {
                return false;
            };
            entry.depth -= 1;
            let injected = std::mem::take(&mut entry.injected);
            if entry.depth == 0 {
                running.remove(&self.call);
            }
            injected
        });
        if injected {
            // SAFETY: the GIL is held; a null exception clears this thread's pending one.
            unsafe {
                pyo3::ffi::PyThreadState_SetAsyncExc(self.thread as c_long, std::ptr::null_mut());
            }
        }
    }
}

/// Interrupts the predictor code running for `call`, if any (see the module documentation).
pub fn interrupt(call: u64) {
    Python::attach(|py| {
        let Some(thread) = with_running(|running| running.get(&call).map(|e| e.thread)) else {
            return;
        };
        let Ok(module) = py.import("ingle._predictors") else {
            return;
        };
        // An async predictor: its task is cancelled in its loop.
        let handled = module
            .call_method1("_interrupt", (thread,))
            .and_then(|r| r.extract::<bool>())
            .unwrap_or(false);
        if handled {
            return;
        }
        let Ok(cancelled) = module.getattr("PredictionCancelled") else {
            return;
        };
        // Set while holding the registry's lock: the thread cannot finish (and withdraw)
        // in between, as finishing takes the lock too.
        with_running(|running| {
            if let Some(entry) = running.get_mut(&call) {
                // SAFETY: the GIL is held; the exception type outlives the call.
                unsafe {
                    pyo3::ffi::PyThreadState_SetAsyncExc(
                        entry.thread as c_long,
                        cancelled.as_ptr(),
                    );
                }
                entry.injected = true;
            }
        });
    });
}
