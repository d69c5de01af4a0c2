//! Connections: accepting them, capping how many are open, and closing the ones that stall.
//!
//! hyper serves each connection; around it, one watchdog per connection enforces the
//! timeouts of [`Options`] from what the connection is doing:
//! - **idle**: no byte of a next request for `idle_timeout` (a kept-alive connection, or one
//!   that never sends anything) → closed;
//! - **head**: a request's headers started but not finished within `header_timeout`
//!   (slowloris) → closed;
//! - **write**: response bytes the client has not accepted (acknowledged) any of for
//!   `write_timeout` (a reader that stopped reading) → closed, which drops the handler and so
//!   cancels its generation. On Linux this reads the socket's unacknowledged bytes
//!   (`SIOCOUTQ`), so it holds whatever size the kernel's send buffer has grown to; elsewhere,
//!   a write that stays blocked that long.
//!
//! The body timeout is the handler's (it reads the body, see `read_body`), so it can answer
//! with an OpenAI error. Over `max_connections`, a new connection gets a 503 error object and
//! is closed; the accept loop never waits on a client.

use crate::Options;
use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use ingle::ErrorCode;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

/// What a connection is doing, for its watchdog.
const IDLE: u8 = 0;
const HEAD: u8 = 1;
const REQUEST: u8 = 2;
const NOT_BLOCKED: u64 = u64::MAX;

/// A connection's state, shared by its I/O, its service and its watchdog. Times are
/// milliseconds since `start`.
struct Watch {
    start: Instant,
    phase: AtomicU8,
    phase_since: AtomicU64,
    /// When a write last found the client's window full, until a byte is accepted again.
    write_blocked_since: AtomicU64,
    /// Bytes handed to the socket so far.
    written: AtomicU64,
}

impl Watch {
    fn new() -> Self {
        Watch {
            start: Instant::now(),
            phase: AtomicU8::new(IDLE),
            phase_since: AtomicU64::new(0),
            write_blocked_since: AtomicU64::new(NOT_BLOCKED),
            written: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn enter(&self, phase: u8) {
        self.phase_since.store(self.now(), Ordering::Release);
        self.phase.store(phase, Ordering::Release);
    }

    fn wrote(&self, result: &Poll<io::Result<usize>>) {
        match result {
            Poll::Pending => {
                let now = self.now();
                let _ = self.write_blocked_since.compare_exchange(
                    NOT_BLOCKED,
                    now,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.written.fetch_add(*n as u64, Ordering::AcqRel);
                self.write_blocked_since
                    .store(NOT_BLOCKED, Ordering::Release)
            }
            Poll::Ready(_) => {}
        }
    }

    /// Why the connection must close now, if it must.
    fn overdue(&self, options: &Options) -> Option<&'static str> {
        let now = self.now();
        let waited = |since: u64| Duration::from_millis(now.saturating_sub(since));
        let blocked = self.write_blocked_since.load(Ordering::Acquire);
        if blocked != NOT_BLOCKED && waited(blocked) > options.write_timeout {
            return Some("the client accepted no bytes of the response");
        }
        let since = self.phase_since.load(Ordering::Acquire);
        match self.phase.load(Ordering::Acquire) {
            IDLE if waited(since) > options.idle_timeout => Some("idle"),
            HEAD if waited(since) > options.header_timeout => {
                Some("the request headers did not arrive in time")
            }
            _ => None,
        }
    }
}

/// A socket that reports to its connection's [`Watch`]: the first byte of a request ends
/// the idle phase; a write the client does not accept starts the write clock.
struct WatchedIo {
    inner: TcpStream,
    watch: Arc<Watch>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before && self.watch.phase.load(Ordering::Acquire) == IDLE {
            self.watch.enter(HEAD);
        }
        result
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch.wrote(&result);
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch.wrote(&result);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A response body that marks its connection idle again once it is sent (or dropped).
struct TrackedBody {
    inner: Body,
    watch: Arc<Watch>,
}

impl http_body::Body for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        self.watch.enter(IDLE);
    }
}

/// How serving ends.
pub(crate) struct Stop<Now, Drain> {
    /// Completes to stop at once: `flag` is set, so in-flight streams end with an error event
    /// and whole requests stop; connections then have `grace` to close.
    pub(crate) now: Now,
    /// Completes to drain: no new connections, in-flight requests run to their end for up to
    /// `Options::drain_timeout` (or until `now`), then it goes as `now` does.
    pub(crate) drain: Drain,
    pub(crate) flag: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) grace: Duration,
}

/// Accepts connections until `stop` says, then ends as it says.
pub(crate) async fn serve<Now, Drain>(
    listener: TcpListener,
    router: Router,
    options: Arc<Options>,
    stop: Stop<Now, Drain>,
) -> io::Result<()>
where
    Now: std::future::Future<Output = ()>,
    Drain: std::future::Future<Output = ()>,
{
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let open = Arc::new(AtomicUsize::new(0));
    let refusing = Arc::new(AtomicUsize::new(0));
    let Stop {
        now,
        drain,
        flag,
        grace,
    } = stop;
    tokio::pin!(now);
    tokio::pin!(drain);
    let mut draining = false;
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut now => break,
            _ = &mut drain => {
                draining = true;
                break;
            }
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: the listener is fine, wait a bit.
                    tracing::warn!(target: "ingle::serve", %error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Every token is a small write: without TCP_NODELAY, Nagle's algorithm holds each
        // one until the previous is acknowledged (one stream decoded at 0.56x the in-process
        // rate, scripts/bench serve).
        let _ = tcp.set_nodelay(true);
        if open.load(Ordering::Acquire) >= options.max_connections {
            refuse(tcp, &refusing);
            continue;
        }
        open.fetch_add(1, Ordering::AcqRel);
        let watch = Arc::new(Watch::new());
        let unacknowledged = Unacknowledged::of(&tcp);
        let service_watch = Arc::clone(&watch);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            service_watch.enter(REQUEST);
            // Who sent it: `POST /drain` without a key is taken from loopback peers only.
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            let watch = Arc::clone(&service_watch);
            let router = router.clone();
            async move {
                let response = router.oneshot(request.map(Body::new)).await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|inner| TrackedBody { inner, watch }),
                )
            }
        });
        let io = TokioIo::new(WatchedIo {
            inner: tcp,
            watch: Arc::clone(&watch),
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            // The watchdog times headers (from their first byte) and idleness apart.
            .header_read_timeout(None)
            .serve_connection(io, service);
        let connection = graceful.watch(connection);
        let (options, open) = (Arc::clone(&options), Arc::clone(&open));
        tokio::spawn(async move {
            tokio::select! {
                _ = connection => {}
                _ = watchdog(&watch, &options, unacknowledged) => {}
            }
            open.fetch_sub(1, Ordering::AcqRel);
        });
    }
    // No new connections: a router's next attempt is refused, and goes to another replica.
    drop(listener);
    // Idle connections close at once; busy ones after their response (no keep-alive).
    let closed = graceful.shutdown();
    tokio::pin!(closed);
    if draining {
        let started = std::time::Instant::now();
        let finished = tokio::select! {
            _ = &mut closed => true,
            _ = tokio::time::sleep(options.drain_timeout) => false,
            _ = &mut now => false,
        };
        let in_flight = open.load(Ordering::Acquire);
        tracing::info!(
            target: "ingle::serve",
            seconds = started.elapsed().as_secs_f64(),
            finished,
            connections_left = in_flight,
            "drained"
        );
        if finished {
            return Ok(());
        }
    }
    // In-flight streams end with an error event and whole requests stop (the shutdown flag).
    flag.store(true, Ordering::Release);
    let _ = tokio::time::timeout(grace, closed).await;
    Ok(())
}

/// Resolves when the connection has broken one of its timeouts; the caller then drops it.
async fn watchdog(
    watch: &Watch,
    options: &Options,
    unacknowledged: Unacknowledged,
) -> &'static str {
    let shortest = [
        options.idle_timeout,
        options.header_timeout,
        options.write_timeout,
    ]
    .into_iter()
    .min()
    .unwrap_or(Duration::from_secs(1));
    let period = (shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The client's progress: bytes it acknowledged, and when that last grew.
    let (mut acknowledged, mut progress_at) = (0u64, Instant::now());
    loop {
        ticks.tick().await;
        if let Some(why) = watch.overdue(options) {
            return why;
        }
        let Some(pending) = unacknowledged.bytes() else {
            continue;
        };
        let now_acknowledged = watch
            .written
            .load(Ordering::Acquire)
            .saturating_sub(pending);
        if pending == 0 || now_acknowledged > acknowledged {
            (acknowledged, progress_at) = (now_acknowledged, Instant::now());
        } else if progress_at.elapsed() > options.write_timeout {
            return "the client accepted no bytes of the response";
        }
    }
}

/// The bytes a socket has sent (or queued) that its peer has not acknowledged yet.
struct Unacknowledged {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::RawFd,
}

impl Unacknowledged {
    fn of(_tcp: &TcpStream) -> Self {
        Unacknowledged {
            #[cfg(target_os = "linux")]
            fd: std::os::fd::AsRawFd::as_raw_fd(_tcp),
        }
    }

    #[cfg(target_os = "linux")]
    fn bytes(&self) -> Option<u64> {
        let mut pending: libc::c_int = 0;
        // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one int; the socket is open while its watchdog
        // runs (both live in the connection's task, and the watchdog stops first).
        let result = unsafe { libc::ioctl(self.fd, libc::TIOCOUTQ, &mut pending) };
        (result == 0 && pending >= 0).then_some(pending as u64)
    }

    #[cfg(not(target_os = "linux"))]
    fn bytes(&self) -> Option<u64> {
        None
    }
}

/// Most over-the-cap connections answered at once; beyond it they are closed unanswered.
const MAX_REFUSING: usize = 64;

/// Answers a connection over the cap with a 503 OpenAI error and closes it, without making
/// the accept loop wait on the client.
fn refuse(mut tcp: TcpStream, refusing: &Arc<AtomicUsize>) {
    if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let refusing = Arc::clone(refusing);
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let error = ingle::Error::new(
            ingle::ErrorKind::Model,
            "The server has too many open connections; retry shortly",
        )
        .with_code(ErrorCode::TooManyConnections);
        let body = error.to_openai().to_string();
        let response = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            tcp.write_all(response.as_bytes()).await?;
            tcp.shutdown().await?;
            // Read what the client sent, so closing does not reset the connection before it
            // has read the answer.
            let mut sink = [0u8; 4096];
            while tcp.read(&mut sink).await? > 0 {}
            Ok::<_, io::Error>(())
        })
        .await;
        refusing.fetch_sub(1, Ordering::AcqRel);
    });
}
