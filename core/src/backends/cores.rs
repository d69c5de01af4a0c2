//! The CPU cores, shared by every model of the process.
//!
//! Each llama.cpp model decodes on its own scheduler thread, with a thread team sized to the
//! cores. Two models decoding at once (two chat models of one client, two clients) ran both
//! teams on the same cores, and ggml's threads spin at each barrier while another team holds
//! the core they wait for: on 2 cores, 16 tool-call tests run two at a time took 61 s where one
//! at a time took 20 s. A decode therefore first takes as many cores as its team has threads,
//! in the order the decodes asked; decodes whose teams fit side by side (8 threads each on 16
//! cores) still run together.
//!
//! Also here: how many threads a model runs with (every backend asks the same way).

use std::sync::{Condvar, Mutex, OnceLock};

/// Cores free, and a ticket queue so that a waiting decode is never overtaken (a model that
/// asks again right after its decode goes behind the one that was waiting).
struct State {
    free: u32,
    next_ticket: u64,
    serving: u64,
}

pub struct Cores {
    total: u32,
    state: Mutex<State>,
    turn: Condvar,
}

/// Cores held until dropped.
pub struct Held<'a> {
    cores: &'a Cores,
    n: u32,
}

impl Cores {
    pub fn new(total: u32) -> Self {
        let total = total.max(1);
        Cores {
            total,
            state: Mutex::new(State {
                free: total,
                next_ticket: 0,
                serving: 0,
            }),
            turn: Condvar::new(),
        }
    }

    /// The process's cores: those it may run on.
    pub fn process() -> &'static Cores {
        static CORES: OnceLock<Cores> = OnceLock::new();
        CORES.get_or_init(|| {
            Cores::new(std::thread::available_parallelism().map_or(1, |n| n.get()) as u32)
        })
    }

    /// Waits for `threads` cores (all of them if it asks more), after every earlier caller.
    pub fn take(&self, threads: u32) -> Held<'_> {
        let n = threads.clamp(1, self.total);
        // A poisoned lock only means a holder panicked; the counts stay right (see Drop).
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        while state.serving != ticket || state.free < n {
            state = self.turn.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.free -= n;
        state.serving += 1;
        drop(state);
        // The next ticket may fit in what is left.
        self.turn.notify_all();
        Held { cores: self, n }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut state = self.cores.state.lock().unwrap_or_else(|e| e.into_inner());
        state.free += self.n;
        drop(state);
        self.cores.turn.notify_all();
    }
}

/// Threads to decode with when the config does not say: the physical cores, never more.
pub fn default_threads() -> u32 {
    num_cpus::get_physical().max(1) as u32
}

/// The threads a predictor runs with: what its config asks, capped at the CPUs this process
/// may run on. More threads than cores only contend (64 threads on 2 cores took minutes for
/// two tokens); the cap is reported once per predictor on stderr.
pub fn capped_threads(asked: Option<u32>, tag: &str) -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let Some(asked) = asked else {
        return default_threads().min(cores);
    };
    if asked > cores {
        static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
        if !warned.iter().any(|t| t == tag) {
            warned.push(tag.to_string());
            eprintln!(
                "ingle: warning: `threads = {asked}` of `{}` is more than the {cores} CPUs this \
                 process can use; using {cores}",
                crate::error::shown(tag)
            );
        }
    }
    asked.min(cores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn holders_never_exceed_the_cores() {
        let cores = Arc::new(Cores::new(4));
        let running = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (cores, running) = (cores.clone(), running.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let n = if i % 2 == 0 { 2 } else { 3 };
                        let _held = cores.take(n);
                        let now = running.fetch_add(n, Ordering::SeqCst) + n;
                        assert!(now <= 4, "{now} cores held of 4");
                        std::thread::sleep(Duration::from_micros(200));
                        running.fetch_sub(n, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn teams_that_fit_side_by_side_run_together() {
        let cores = Arc::new(Cores::new(4));
        let _held = cores.take(2);
        let (done, taken) = std::sync::mpsc::channel();
        let other = cores.clone();
        std::thread::spawn(move || {
            let _held = other.take(2);
            done.send(()).unwrap();
        });
        taken
            .recv_timeout(Duration::from_secs(10))
            .expect("a second team of 2 waited while 2 of 4 cores were free");
    }

    #[test]
    fn a_team_larger_than_the_machine_takes_all_of_it_and_a_waiter_is_not_overtaken() {
        let cores = Arc::new(Cores::new(2));
        let first = cores.take(64);
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiter = {
            let (cores, order) = (cores.clone(), order.clone());
            std::thread::spawn(move || {
                let _held = cores.take(2);
                order.lock().unwrap().push("waiter");
            })
        };
        // Let the waiter queue up, then give back and at once ask again: the waiter goes first.
        std::thread::sleep(Duration::from_millis(50));
        drop(first);
        let _again = cores.take(2);
        order.lock().unwrap().push("again");
        drop(_again);
        waiter.join().unwrap();
        assert_eq!(*order.lock().unwrap(), ["waiter", "again"]);
    }
}
