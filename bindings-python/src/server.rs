//! `ingle.serve`: the HTTP server of `ingle serve` over a Python client, so the predictors
//! registered from Python are served too. The server runs on a Tokio runtime in a thread of
//! its own; Python waits on it in short steps, so Ctrl-C reaches the waiting thread.

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running server. `stop()` ends in-flight work and closes every connection.
#[pyclass(frozen, module = "ingle._ingle")]
pub struct NativeServer {
    address: SocketAddr,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    thread: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
}

impl NativeServer {
    pub fn start(
        py: Python<'_>,
        client: ingle::Client,
        host: &str,
        port: u16,
        api_key: Option<String>,
        allowed_hosts: Vec<String>,
        cors_origins: Vec<String>,
    ) -> PyResult<Self> {
        for host in &allowed_hosts {
            ingle_serve::check_allowed_host(host).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!("allowed_hosts: {e}"))
            })?;
        }
        for origin in &cors_origins {
            ingle_serve::check_cors_origin(origin).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!("cors_origins: {e}"))
            })?;
        }
        if api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "api_key is empty: give a key, or None to serve without one",
            ));
        }
        let address = (host, port)
            .to_socket_addrs()
            .map_err(|e| PyOSError::new_err(format!("cannot resolve {host}:{port}: {e}")))?
            .next()
            .ok_or_else(|| PyOSError::new_err(format!("{host} resolves to no address")))?;
        let options = ingle_serve::Options {
            api_key,
            allowed_hosts,
            cors_origins,
            ..Default::default()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, bound_rx) = mpsc::channel::<std::io::Result<SocketAddr>>();
        let thread = std::thread::Builder::new()
            .name("ingle-serve".into())
            .spawn(move || -> std::io::Result<()> {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async move {
                    let server = match ingle_serve::Server::bind(client, address, options).await {
                        Ok(server) => server,
                        Err(e) => {
                            let _ = bound.send(Err(std::io::Error::new(e.kind(), e.to_string())));
                            return Err(e);
                        }
                    };
                    let _ = bound.send(server.local_addr());
                    server
                        .run(async move {
                            let _ = stopped.await;
                        })
                        .await
                })
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the server: {e}")))?;
        let address = py
            .detach(move || bound_rx.recv())
            .map_err(|_| PyRuntimeError::new_err("the server thread ended before binding"))?
            .map_err(|e| PyOSError::new_err(format!("cannot listen on {address}: {e}")))?;
        Ok(NativeServer {
            address,
            stop: Mutex::new(Some(stop)),
            thread: Mutex::new(Some(thread)),
        })
    }
}

#[pymethods]
impl NativeServer {
    /// `(host, port)` it listens on (the port chosen when 0 was asked for).
    #[getter]
    fn address(&self) -> (String, u16) {
        (self.address.ip().to_string(), self.address.port())
    }

    /// Asks the server to stop; `wait` returns once it has.
    fn stop(&self) {
        if let Some(stop) = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = stop.send(());
        }
    }

    /// Waits up to `timeout` seconds for the server to end; true once it has. An error the
    /// server ended with is raised.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let finished = {
                let thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
                thread.as_ref().is_none_or(JoinHandle::is_finished)
            };
            if finished {
                let thread = self
                    .thread
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(thread) = thread {
                    match py.detach(|| thread.join()) {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return Err(PyOSError::new_err(e.to_string())),
                        Err(_) => {
                            return Err(PyRuntimeError::new_err("the server thread panicked"))
                        }
                    }
                }
                return Ok(true);
            }
            if std::time::Instant::now() >= deadline {
                return Ok(false);
            }
            py.detach(|| std::thread::sleep(Duration::from_millis(20)));
        }
    }
}

impl Drop for NativeServer {
    fn drop(&mut self) {
        if let Some(stop) = self
            .stop
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = stop.send(());
        }
    }
}
