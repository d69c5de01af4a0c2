//! What the server tests share: a server on a free loopback port, and a raw HTTP/1.1 client.
#![allow(dead_code)] // each test file uses its part

use ingle::{Client, Config};
use ingle_serve::{Options, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

pub const MODEL: &str = "@local/smollm2-135m-instruct";

/// A server on a free loopback port, on its own runtime thread; dropping it shuts it down and
/// waits for the server to finish. One at a time: the timing checks (cancellation, shutdown)
/// mean nothing while other tests' generations share the two cores.
pub struct TestServer {
    pub _one_at_a_time: std::sync::MutexGuard<'static, ()>,
    pub addr: SocketAddr,
    pub client: Client,
    pub stop: Option<oneshot::Sender<()>>,
    pub thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    pub fn start(config: Config, options: Options) -> Self {
        TestServer::start_at(config, options, ([127, 0, 0, 1], 0).into())
    }

    pub fn start_at(config: Config, options: Options, bind: SocketAddr) -> Self {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let client = Client::from_config(&config).unwrap();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let server_client = client.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async move {
                let server = Server::bind(server_client, bind, options).await?;
                addr_tx.send(server.local_addr()?).unwrap();
                server
                    .run(async {
                        let _ = stopped.await;
                    })
                    .await
            })
        });
        TestServer {
            _one_at_a_time: guard,
            addr: addr_rx.recv().unwrap(),
            client,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn default() -> Self {
        TestServer::start(Config::default(), Options::default())
    }

    /// A server listening on every interface (0.0.0.0), as `ingle serve --host 0.0.0.0`.
    pub fn on_every_interface(options: Options) -> Self {
        TestServer::start_at(Config::default(), options, ([0, 0, 0, 0], 0).into())
    }

    /// Shuts down and waits; returns how long the server took to finish.
    pub fn shutdown(&mut self) -> Duration {
        let start = Instant::now();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap().unwrap();
        }
        start.elapsed()
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream
    }

    /// Sends one request (`Connection: close`) and reads the whole response.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut stream = self.connect();
        send(&mut stream, method, path, headers, body);
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        Reply::parse(&raw)
    }

    /// POSTs JSON and returns the whole raw response (head and chunked body), for binary
    /// bodies that `Reply` (text) cannot hold.
    pub fn post_json_raw(&self, path: &str, body: &str) -> Vec<u8> {
        let mut stream = self.connect();
        send(
            &mut stream,
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        raw
    }

    pub fn post_json(&self, path: &str, body: &str) -> Reply {
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

pub fn send(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    // `Host: localhost` unless the test names its own.
    let host = if headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        ""
    } else {
        "Host: localhost\r\n"
    };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\n{host}Connection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
}

pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Reply {
    pub fn parse(raw: &[u8]) -> Self {
        let text = String::from_utf8_lossy(raw).to_string();
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let mut body = body.to_string();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body);
        }
        Reply {
            status,
            headers: head.to_ascii_lowercase(),
            body,
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The OpenAI error object of an error reply.
    pub fn error(&self) -> serde_json::Value {
        self.json()["error"].clone()
    }
}

pub fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

pub fn start_story(server: &TestServer, stream: bool) -> TcpStream {
    let body = format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Write a very long story about a dragon."}}], "max_tokens": 1500, "temperature": 0, "stream": {stream}}}"#
    );
    let mut connection = server.connect();
    let json = [("Content-Type", "application/json")];
    send(
        &mut connection,
        "POST",
        "/v1/chat/completions",
        &json,
        body.as_bytes(),
    );
    connection
}

/// Reads Server-Sent Events off `reader` until `n` data events arrived.
pub fn read_events(reader: &mut BufReader<TcpStream>, n: usize) -> Vec<String> {
    let mut events = Vec::new();
    let mut line = String::new();
    while events.len() < n {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            events.push(data.to_string());
        }
    }
    events
}

/// The value of the sample `name{labels}` in a metrics text (labels as the server writes them,
/// in order), or None.
pub fn sample(metrics: &str, name_and_labels: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(name_and_labels)?;
        rest.strip_prefix(' ')?.split(' ').next()?.parse().ok()
    })
}
