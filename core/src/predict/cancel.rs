//! One way to stop a call, whatever door it came through: serve's client leaving, a dropped
//! stream, Python's `close()` / task cancel / Ctrl-C, Node's `AbortSignal`, a C callback's
//! return. Each door sets a [`Cancel`]; the OpenAI layer asks it between outputs, and a
//! predictor gets it in its [`super::Context`]: a built-in one asks it between steps (Whisper
//! between tokens), a binding's registers [`Cancel::on_cancel`] to stop the user's code (a
//! Python predictor stuck in a loop gets an exception raised in it).

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

type Action = Box<dyn FnOnce() + Send>;
type Poll = Box<dyn Fn() -> bool + Send + Sync>;

/// Whether a call should stop. Cheap to clone (clones are the same flag); safe from any thread.
/// [`Cancel::default`] is never cancelled unless someone calls [`Cancel::cancel`].
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Default)]
struct Inner {
    set: AtomicBool,
    /// Run once, by whoever cancels first (or at once, when registered after).
    actions: Mutex<Vec<(u64, Action)>>,
    next_action: AtomicU64,
    /// Asked by [`Cancel::is_cancelled`]: a door that learns of a stop only by looking (Python's
    /// Ctrl-C handler runs only when asked).
    poll: Option<Poll>,
    /// The call this one is part of: its cancel cancels this.
    parent: Option<Cancel>,
    /// Keeps this one registered in its parent's actions while it lives.
    link: Mutex<Option<OnCancel>>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.0.set.load(Ordering::Acquire))
            .finish()
    }
}

impl Cancel {
    /// A call not cancelled yet.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// A cancel that also asks `poll` whenever it is asked; once `poll` says true, it is
    /// cancelled (its actions run).
    pub fn polled(poll: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Cancel(Arc::new(Inner {
            poll: Some(Box::new(poll)),
            ..Inner::default()
        }))
    }

    /// A part of this call (one prediction of a request, one stream): cancelled with it, and
    /// cancellable alone, without cancelling this one.
    pub fn child(&self) -> Self {
        let child = Cancel(Arc::new(Inner {
            parent: Some(self.clone()),
            ..Inner::default()
        }));
        let weak: Weak<Inner> = Arc::downgrade(&child.0);
        let link = self.on_cancel(move || {
            if let Some(inner) = weak.upgrade() {
                Cancel(inner).cancel();
            }
        });
        *child.0.link.lock().unwrap_or_else(PoisonError::into_inner) = Some(link);
        child
    }

    /// Cancels the call: from now on [`Self::is_cancelled`] says so, and the registered actions
    /// run (here, once).
    pub fn cancel(&self) {
        if self.0.set.swap(true, Ordering::AcqRel) {
            return;
        }
        let actions = std::mem::take(
            &mut *self
                .0
                .actions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (_, action) in actions {
            action();
        }
    }

    /// Whether the call was cancelled (here, through a parent, or by a poll that says so now).
    pub fn is_cancelled(&self) -> bool {
        if self.0.set.load(Ordering::Acquire) {
            return true;
        }
        let polled = self.0.poll.as_ref().is_some_and(|poll| poll())
            || self.0.parent.as_ref().is_some_and(Cancel::is_cancelled);
        if polled {
            self.cancel();
        }
        polled
    }

    /// `Err(Cancelled)` once the call was cancelled.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::cancelled("The request was cancelled"));
        }
        Ok(())
    }

    /// Runs `action` when the call is cancelled (at once if it was already), unless the returned
    /// guard was dropped before.
    pub fn on_cancel(&self, action: impl FnOnce() + Send + 'static) -> OnCancel {
        let id = self.0.next_action.fetch_add(1, Ordering::Relaxed);
        {
            let mut actions = self
                .0
                .actions
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !self.0.set.load(Ordering::Acquire) {
                actions.push((id, Box::new(action)));
                return OnCancel {
                    cancel: Arc::downgrade(&self.0),
                    id,
                };
            }
        }
        action();
        OnCancel {
            cancel: Weak::new(),
            id,
        }
    }

    /// A guard that cancels this call when dropped (a stream's work stops with the stream).
    pub fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// An action registered by [`Cancel::on_cancel`]; dropping it unregisters the action.
#[must_use = "dropping it unregisters the action"]
pub struct OnCancel {
    cancel: Weak<Inner>,
    id: u64,
}

impl Drop for OnCancel {
    fn drop(&mut self) {
        if let Some(inner) = self.cancel.upgrade() {
            let removed = {
                let mut actions = inner.actions.lock().unwrap_or_else(PoisonError::into_inner);
                actions
                    .iter()
                    .position(|(id, _)| *id == self.id)
                    .map(|at| actions.swap_remove(at))
            };
            // Dropped outside the lock: the action may own guards of its own.
            drop(removed);
        }
    }
}

/// Cancels its call when dropped.
pub struct CancelOnDrop(Cancel);

impl CancelOnDrop {
    pub fn cancel(&self) -> &Cancel {
        &self.0
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn actions_run_once_and_a_dropped_guard_unregisters() {
        let cancel = Cancel::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let _kept = cancel.on_cancel(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        let dropped = cancel.on_cancel(|| panic!("unregistered"));
        drop(dropped);
        assert!(cancel.check().is_ok());
        cancel.cancel();
        cancel.cancel();
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert!(cancel.check().is_err());
        // Registered after: runs at once.
        let late = Arc::clone(&runs);
        let _late = cancel.on_cancel(move || {
            late.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(runs.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_child_goes_with_its_parent_and_alone_without_it() {
        let parent = Cancel::new();
        let alone = parent.child();
        alone.cancel();
        assert!(!parent.is_cancelled());
        let child = parent.child();
        let told = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&told);
        let _guard = child.on_cancel(move || flag.store(true, Ordering::Release));
        parent.cancel();
        assert!(child.is_cancelled() && told.load(Ordering::Acquire));
        // A dropped child leaves nothing behind in its parent.
        let parent = Cancel::new();
        drop(parent.child());
        assert!(parent.0.actions.lock().unwrap().is_empty());
    }

    #[test]
    fn a_polled_cancel_is_cancelled_once_its_poll_says_so() {
        let stop = Arc::new(AtomicBool::new(false));
        let asked = Arc::clone(&stop);
        let cancel = Cancel::polled(move || asked.load(Ordering::Acquire));
        let child = cancel.child();
        assert!(!child.is_cancelled());
        stop.store(true, Ordering::Release);
        assert!(child.is_cancelled() && cancel.is_cancelled());
    }
}
