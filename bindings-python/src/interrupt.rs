//! Stopping a Python predictor that does not come back. A cancelled call (a closed stream, a
//! cancelled task, a client that left `ingle.serve`: the core's `Cancel`) stops the core at its
//! next step; but a Python predictor stuck in its own code (a loop that never yields, a long
//! `sleep`) never reaches one: the worker thread ran forever and `asyncio.run()` never returned,
//! waiting for it.
//!
//! So each prediction of a Python predictor has an id (its call), current in the thread while
//! one of its steps runs ([`CallScope`]), and its cancel runs [`interrupt`] for that id. Each
//! step (a [`Running`], around each `__next__`) is registered under the id with the thread
//! running it, and `ingle._predictors` registers its runner under it while the predictor's own
//! code runs. [`interrupt`] marks the call cancelled (a step not yet started never runs) and
//! stops the step that runs: an `async` predictor's task is cancelled; a predictor running its
//! own code gets `ingle.PredictionCancelled` raised asynchronously
//! (`PyThreadState_SetAsyncExc`), as Ctrl-C would, at its next Python instruction (code blocked
//! in C, a `sleep`, sees it when it returns). Once the step returns to the engine, an exception
//! not yet delivered is withdrawn, so it can never land in code that runs later in that thread.
//! One that lands in ingle's wrapper just after the predictor's code returned ends the step as
//! cancelled all the same; `_after_interrupt` then unregisters the runner, though the thread's
//! log context may stay set to that prediction's logs. Not stopped: an `async` predictor blocked
//! in synchronous code (its loop cannot run the cancellation), and code blocked in C without a
//! timeout.

use pyo3::prelude::*;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
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

#[derive(Default)]
struct State {
    running: HashMap<u64, Entry>,
    /// Calls whose caller went away: a predictor of theirs does not start its next step.
    cancelled: HashSet<u64>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    f(state.get_or_insert_with(State::default))
}

/// A new call id.
pub fn new_call() -> u64 {
    NEXT_CALL.fetch_add(1, Ordering::Relaxed)
}

/// This thread's current call (0: none), for `ingle._predictors` to register its runner under.
#[pyfunction]
pub fn current_call() -> u64 {
    CURRENT_CALL.with(Cell::get)
}

/// Whether `call` was cancelled: `ingle._predictors` asks once its runner is registered, so
/// an interrupt that came before (and found no runner) is not lost.
#[pyfunction]
pub fn call_cancelled(call: u64) -> bool {
    with_state(|state| state.cancelled.contains(&call))
}

/// The call will not be interrupted again (its stream or flag is gone).
pub fn forget(call: u64) {
    with_state(|state| state.cancelled.remove(&call));
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

/// A step of a predictor's Python code running in this thread for the current call (if any).
/// Made and dropped with the GIL held.
pub struct Running {
    call: u64,
    thread: c_ulong,
}

impl Running {
    /// Registers the step; `None` when its call was cancelled already (a close that came
    /// before the step, or between two): the step must not run.
    pub fn start(_py: Python<'_>) -> Option<Running> {
        let call = CURRENT_CALL.with(Cell::get);
        // SAFETY: reads the calling thread's id; no state.
        let thread = unsafe { pyo3::ffi::PyThread_get_thread_ident() };
        if call != 0 {
            let cancelled = with_state(|state| {
                if state.cancelled.contains(&call) {
                    return true;
                }
                state
                    .running
                    .entry(call)
                    .or_insert(Entry {
                        thread,
                        depth: 0,
                        injected: false,
                    })
                    .depth += 1;
                false
            });
            if cancelled {
                return None;
            }
        }
        Some(Running { call, thread })
    }

    /// Ends the registration; with the GIL held (`py`), so no Python code runs in between and
    /// a pending interrupt is withdrawn before any could.
    pub fn finish(self, py: Python<'_>) {
        if self.call == 0 {
            return;
        }
        let injected = with_state(|state| {
            let Some(entry) = state.running.get_mut(&self.call) else {
                return false;
            };
            entry.depth -= 1;
            let injected = std::mem::take(&mut entry.injected);
            if entry.depth == 0 {
                state.running.remove(&self.call);
            }
            injected
        });
        if injected {
            // SAFETY: the GIL is held; a null exception clears this thread's pending one.
            unsafe {
                pyo3::ffi::PyThreadState_SetAsyncExc(self.thread as c_long, std::ptr::null_mut());
            }
            // Delivered in ingle's wrapper rather than in the predictor's code, it may have
            // skipped the runner's unregistering: done here.
            if let Ok(module) = py.import("ingle._predictors") {
                let _ = module.call_method1("_after_interrupt", (self.call,));
            }
        }
    }
}

/// Interrupts the predictor code running for `call` (see the module documentation), and
/// marks the call cancelled, so that a step not yet started never runs. Called from wherever
/// the call is cancelled (an `ingle.serve` connection's task, a thread holding locks): the
/// mark needs no GIL and is made here; the interrupt itself, which does, runs on a thread of
/// its own, so the canceller never waits for the GIL.
pub fn interrupt(call: u64) {
    let running = with_state(|state| {
        state.cancelled.insert(call);
        state.running.contains_key(&call)
    });
    if !running {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("ingle-interrupt".into())
        .spawn(move || interrupt_running(call));
    if spawned.is_err() {
        interrupt_running(call);
    }
}

fn interrupt_running(call: u64) {
    // None at interpreter shutdown: nothing left to interrupt.
    let _ = Python::try_attach(|py| {
        if !with_state(|state| state.running.contains_key(&call)) {
            return;
        }
        let Ok(module) = py.import("ingle._predictors") else {
            return;
        };
        // "task": an async predictor's task was cancelled in its loop; "code": the predictor's
        // own code runs now, and gets the exception; "none": ingle's code runs, and the step
        // ends of itself (the next one will not start).
        let how = module
            .call_method1("_interrupt", (call,))
            .and_then(|r| r.extract::<String>())
            .unwrap_or_default();
        if how != "code" {
            return;
        }
        let Ok(cancelled) = module.getattr("PredictionCancelled") else {
            return;
        };
        // Set while holding the state's lock: the thread cannot finish (and withdraw) in
        // between, as finishing takes the lock too.
        with_state(|state| {
            if let Some(entry) = state.running.get_mut(&call) {
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
