//! Where the addon's work runs: threads of ingle's own, not libuv's pool.
//!
//! A step of a JavaScript predictor blocks the thread that asked for it until the main thread
//! answers (see `predictors.rs`). On libuv's pool (4 threads by default) four such steps would
//! hold every pool thread, and anything their JavaScript awaits on the pool (the ingle client
//! itself, `fs.promises`, `dns.lookup`, `crypto`, `zlib`) would queue behind them forever. So each
//! call runs on a thread of this pool, which starts another thread whenever none is idle, and
//! settles its promise through a deferred.

use napi::bindgen_prelude::{ToNapiValue, TypeName, ValueType};
use napi::{sys, Env, JsValue, Task};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

type Work = Box<dyn FnOnce() + Send>;

/// A thread idle this long ends.
const IDLE: Duration = Duration::from_secs(30);

struct Pool {
    sender: Sender<Work>,
    receiver: Arc<Mutex<Receiver<Work>>>,
    idle: Mutex<usize>,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (sender, receiver) = channel();
        Pool {
            sender,
            receiver: Arc::new(Mutex::new(receiver)),
            idle: Mutex::new(0),
        }
    })
}

/// Runs `work` on an idle thread of the pool, or on a new one.
fn run(work: Work) {
    let pool = pool();
    {
        let mut idle = pool.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if *idle > 0 {
            *idle -= 1; // this thread is taken
        } else {
            let receiver = Arc::clone(&pool.receiver);
            let spawned = std::thread::Builder::new()
                .name("ingle-node".into())
                .spawn(move || worker(receiver));
            if spawned.is_err() {
                // No thread to be had: run it here rather than lose it.
                drop(idle);
                work();
                return;
            }
        }
    }
    let _ = pool.sender.send(work);
}

fn worker(receiver: Arc<Mutex<Receiver<Work>>>) {
    loop {
        let next = receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv_timeout(IDLE);
        match next {
            Ok(work) => {
                work();
                *pool().idle.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            }
            Err(RecvTimeoutError::Timeout) => {
                let mut idle = pool().idle.lock().unwrap_or_else(PoisonError::into_inner);
                if *idle > 0 {
                    *idle -= 1;
                    return;
                }
                // Counted busy: work was promised to this thread; wait for it.
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// A [`Task`] to run on the pool, returned to JavaScript as the promise of its result.
pub struct Spawned<T: Task>(T);

impl<T: Task> Spawned<T> {
    pub fn new(task: T) -> Self {
        Spawned(task)
    }
}

impl<T> ToNapiValue for Spawned<T>
where
    T: Task + Send + 'static,
    T::Output: Send + 'static,
    T::JsValue: 'static,
{
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        let env = Env::from_raw(env);
        let (deferred, promise) = env.create_deferred()?;
        let mut task = value.0;
        run(Box::new(move || match task.compute() {
            Ok(output) => deferred.resolve(move |env| task.resolve(env, output)),
            Err(error) => deferred.reject(error),
        }));
        Ok(promise.raw())
    }
}

impl<T: Task> TypeName for Spawned<T> {
    fn type_name() -> &'static str {
        "Promise"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}
