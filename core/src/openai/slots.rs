//! A bound on how many transcriptions run at once in the process. Each holds its decoded audio
//! (up to 691 MB: 3 hours at 16 kHz) and its windows share the same cores, so without a bound a
//! handful of small uploads of long audio took gigabytes. Requests beyond it wait for a slot,
//! asking their cancel while they wait.

use crate::error::{Error, Result};
use crate::predict::Cancel;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Transcriptions that hold decoded audio at once; more wait.
pub const MAX_CONCURRENT_TRANSCRIPTIONS: usize = 4;

pub(super) static TRANSCRIPTION_SLOTS: Slots = Slots::new(MAX_CONCURRENT_TRANSCRIPTIONS);

/// A counting semaphore whose wait can be given up.
pub(super) struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// A taken slot, given back when dropped; `counted: false` for a thread's second slot.
pub(super) struct Slot {
    slots: &'static Slots,
    counted: bool,
    thread: std::thread::ThreadId,
}

/// Slots each thread holds now. A thread that holds one takes more without waiting: a user's
/// transcription predictor calling the client, or one thread opening several streams before
/// reading them, would otherwise wait for itself.
fn held() -> &'static Mutex<std::collections::HashMap<std::thread::ThreadId, usize>> {
    static HELD: std::sync::OnceLock<
        Mutex<std::collections::HashMap<std::thread::ThreadId, usize>>,
    > = std::sync::OnceLock::new();
    HELD.get_or_init(Mutex::default)
}

impl Slots {
    const fn new(n: usize) -> Self {
        Slots {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    /// Takes a slot, waiting for one until the call is cancelled.
    pub(super) fn take(&'static self, cancel: &Cancel) -> Result<Slot> {
        let thread = std::thread::current().id();
        let mut held_here = held().lock().unwrap_or_else(PoisonError::into_inner);
        let count = held_here.entry(thread).or_insert(0);
        *count += 1;
        if *count > 1 {
            return Ok(Slot {
                slots: self,
                counted: false,
                thread,
            });
        }
        drop(held_here);
        let slot = Slot {
            slots: self,
            counted: true,
            thread,
        };
        loop {
            {
                let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
                if *free > 0 {
                    *free -= 1;
                    return Ok(slot);
                }
            }
            // Asked without the lock: a cancel's actions may run here, and a poll may take
            // Python's GIL, whose holder may be giving a slot back.
            if cancel.is_cancelled() {
                let mut slot = slot;
                slot.counted = false; // nothing to give back
                return Err(Error::cancelled("The request was cancelled"));
            }
            let free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
            if *free == 0 {
                drop(
                    self.freed
                        .wait_timeout(free, Duration::from_millis(100))
                        .unwrap_or_else(PoisonError::into_inner),
                );
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut held_here = held().lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = held_here.get_mut(&self.thread) {
                *count -= 1;
                if *count == 0 {
                    held_here.remove(&self.thread);
                }
            }
        }
        if self.counted {
            *self
                .slots
                .free
                .lock()
                .unwrap_or_else(PoisonError::into_inner) += 1;
            self.slots.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bound_waits_until_a_slot_is_given_back_or_the_caller_stops() {
        static TWO: Slots = Slots::new(2);
        // Taken by other threads: a thread that holds one would not wait (the next test).
        let take_elsewhere = || {
            std::thread::spawn(|| TWO.take(&Cancel::default()).unwrap())
                .join()
                .unwrap()
        };
        let a = take_elsewhere();
        let _b = take_elsewhere();
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&asked);
        let cancel = Cancel::polled(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 == 3
        });
        let error = TWO.take(&cancel).err().unwrap();
        assert_eq!(error.kind, crate::ErrorKind::Cancelled);
        let giver = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(a);
        });
        let _c = TWO.take(&Cancel::default()).unwrap();
        giver.join().unwrap();
    }

    #[test]
    fn a_thread_that_holds_a_slot_takes_more_without_waiting() {
        static ONE: Slots = Slots::new(1);
        let first = ONE.take(&Cancel::default()).unwrap();
        // The same thread (a predictor calling the client; streams opened before reading):
        // had it waited, it would wait for itself.
        let never_asked = || Cancel::polled(|| panic!("waited"));
        let second = ONE.take(&never_asked()).unwrap();
        let other = std::thread::spawn(|| {
            let asked = std::sync::atomic::AtomicUsize::new(0);
            let cancel = Cancel::polled(move || {
                asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 == 2
            });
            ONE.take(&cancel).is_err()
        });
        assert!(
            other.join().unwrap(),
            "another thread waits for the one slot"
        );
        drop(second);
        drop(first);
        assert!(ONE.take(&never_asked()).is_ok());
    }
}
