//! A bound on how many transcriptions run at once in the process. Each holds its decoded audio
//! (up to 691 MB: 3 hours at 16 kHz) and its windows share the same cores, so without a bound a
//! handful of small uploads of long audio took gigabytes. Requests beyond it wait for a slot,
//! asking their `stop` while they wait.

use crate::error::{Error, Result};
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

/// A taken slot, given back when dropped.
pub(super) struct Slot(&'static Slots);

impl Slots {
    const fn new(n: usize) -> Self {
        Slots {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    /// Takes a slot, waiting for one while `stop` says to go on.
    pub(super) fn take(&'static self, stop: &mut dyn FnMut() -> bool) -> Result<Slot> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *free > 0 {
                *free -= 1;
                return Ok(Slot(self));
            }
            if stop() {
                return Err(Error::cancelled("The request was cancelled"));
            }
            free = self
                .freed
                .wait_timeout(free, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bound_waits_until_a_slot_is_given_back_or_the_caller_stops() {
        static TWO: Slots = Slots::new(2);
        let a = TWO.take(&mut || false).unwrap();
        let _b = TWO.take(&mut || false).unwrap();
        let mut asked = 0;
        let error = TWO
            .take(&mut || {
                asked += 1;
                asked == 3
            })
            .err()
            .unwrap();
        assert_eq!(error.kind, crate::ErrorKind::Cancelled);
        let giver = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(a);
        });
        let _c = TWO.take(&mut || false).unwrap();
        giver.join().unwrap();
    }
}
