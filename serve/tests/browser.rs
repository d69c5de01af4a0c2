//! What a web page can make a keyless local server do: nothing. The requests a browser sends
//! for a page of another origin (simple POSTs without a preflight, `no-cors` fetches) and for
//! a page that rebound its own domain to 127.0.0.1 (a foreign `Host`), sent here byte for
//! byte as a browser sends them; `tests/serve/test_browser.py` sends them from a real headless
//! Chromium. And the counters see every request, also one whose client leaves.

mod common;

use common::*;
use ingle::Config;
use ingle_serve::Options;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const FOREIGN: &str = "https://evil.example";

fn ready(server: &TestServer) -> u16 {
    server.request("GET", "/ready", &[], b"").status
}

fn chat_body() -> String {
    format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Say hi."}}], "max_tokens": 4}}"#
    )
}

#[test]
fn a_page_of_another_origin_can_neither_drain_nor_generate() {
    let server = TestServer::default();
    // A form post or `fetch(..., {mode: "no-cors", body: "x"})`: text/plain, no preflight.
    for (path, content_type) in [
        ("/drain", "text/plain;charset=UTF-8"),
        ("/drain", "application/x-www-form-urlencoded"),
        ("/v1/chat/completions", "text/plain;charset=UTF-8"),
        ("/v1/chat/completions", "application/json"),
        (
            "/v1/audio/transcriptions",
            "multipart/form-data; boundary=x",
        ),
    ] {
        let reply = server.request(
            "POST",
            path,
            &[("Origin", FOREIGN), ("Content-Type", content_type)],
            chat_body().as_bytes(),
        );
        assert_eq!(reply.status, 403, "{path} {content_type}: {}", reply.body);
        assert_eq!(
            reply.error()["code"],
            "origin_not_allowed",
            "{}",
            reply.body
        );
        assert!(
            reply.error()["message"]
                .as_str()
                .unwrap()
                .contains("--cors-origin https://evil.example"),
            "{}",
            reply.body
        );
        assert!(!reply.headers.contains("access-control-allow-origin"));
    }
    // `fetch` with no body at all and an opaque origin (a sandboxed frame, a file).
    for origin in ["null", "http://localhost.evil.example:8080"] {
        let reply = server.request("POST", "/drain", &[("Origin", origin)], b"");
        assert_eq!(reply.status, 403, "{origin}: {}", reply.body);
    }
    // Reading is refused too, not left to the browser's CORS check; also a GET a page sends
    // without `Origin` (an `<img>`), which the browser marks as another site's.
    let read = server.request("GET", "/v1/models", &[("Origin", FOREIGN)], b"");
    assert_eq!(read.status, 403, "{}", read.body);
    for site in ["cross-site", "same-site"] {
        let image = server.request("GET", "/v1/models", &[("Sec-Fetch-Site", site)], b"");
        assert_eq!(image.status, 403, "{site}: {}", image.body);
    }
    for site in ["none", "same-origin"] {
        let typed = server.request("GET", "/v1/models", &[("Sec-Fetch-Site", site)], b"");
        assert_eq!(typed.status, 200, "{site}: {}", typed.body);
    }
    // Still serving, not draining, and nothing was generated.
    assert_eq!(ready(&server), 200);
    let metrics = server.request("GET", "/metrics", &[], b"").body;
    assert!(
        !metrics.contains("ingle_requests_total{surface=\"chat\""),
        "{metrics}"
    );
    // Without an Origin (curl, an SDK) the same server answers.
    assert_eq!(
        server
            .post_json("/v1/chat/completions", &chat_body())
            .status,
        200
    );
}

#[test]
fn a_rebound_domain_is_refused_by_its_host_name() {
    let server = TestServer::default();
    for host in ["evil.example", "evil.example:8080", "127.0.0.1.nip.io"] {
        for (method, path) in [
            ("GET", "/v1/models"),
            ("GET", "/metrics"),
            ("GET", "/v1/responses/resp_1"),
            ("POST", "/drain"),
        ] {
            let reply = server.request(method, path, &[("Host", host)], b"");
            assert_eq!(reply.status, 403, "{host} {path}: {}", reply.body);
            assert_eq!(reply.error()["code"], "host_not_allowed");
        }
        let chat = server.request(
            "POST",
            "/v1/chat/completions",
            &[("Host", host), ("Content-Type", "application/json")],
            chat_body().as_bytes(),
        );
        assert_eq!(chat.status, 403, "{}", chat.body);
    }
    // Loopback names and addresses, and any IP address (no page can rebind to its own IP).
    let port = server.addr.port();
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "app.localhost".into(),
        "192.168.1.20:8080".into(),
    ] {
        let reply = server.request("GET", "/v1/models", &[("Host", &host)], b"");
        assert_eq!(reply.status, 200, "{host}: {}", reply.body);
    }
    assert_eq!(ready(&server), 200);
    drop(server);

    // Names given on purpose (behind a proxy), and any name behind an API key.
    let named = TestServer::start(
        Config::default(),
        Options {
            allowed_hosts: vec!["models.example.com".into(), ".corp.internal".into()],
            ..Options::default()
        },
    );
    for host in ["models.example.com", "gpu1.corp.internal:443"] {
        let reply = named.request("GET", "/v1/models", &[("Host", host)], b"");
        assert_eq!(reply.status, 200, "{host}: {}", reply.body);
    }
    let other = named.request("GET", "/v1/models", &[("Host", "example.com")], b"");
    assert_eq!(other.status, 403);
    drop(named);
    let keyed = TestServer::start(
        Config::default(),
        Options {
            api_key: Some("sk-local".into()),
            ..Options::default()
        },
    );
    let reply = keyed.request(
        "GET",
        "/v1/models",
        &[
            ("Host", "ingle.default.svc"),
            ("Authorization", "Bearer sk-local"),
        ],
        b"",
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let keyless = keyed.request("GET", "/v1/models", &[("Host", "evil.example")], b"");
    assert_eq!(keyless.status, 401, "{}", keyless.body);
}

#[test]
fn pages_of_this_machine_and_named_origins_get_cors_headers() {
    let server = TestServer::start(
        Config::default(),
        Options {
            cors_origins: vec!["https://app.example.com".into()],
            ..Options::default()
        },
    );
    for origin in ["https://app.example.com", "http://localhost:5173"] {
        let preflight = server.request(
            "OPTIONS",
            "/v1/chat/completions",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "authorization,content-type,x-stainless-os",
                ),
            ],
            b"",
        );
        assert_eq!(preflight.status, 204, "{origin}: {}", preflight.body);
        let headers = &preflight.headers;
        assert!(
            headers.contains(&format!("access-control-allow-origin: {origin}")),
            "{headers}"
        );
        assert!(
            headers.contains(
                "access-control-allow-headers: authorization,content-type,x-stainless-os"
            ),
            "{headers}"
        );
        assert!(headers.contains("access-control-allow-methods: get, post, delete, options"));
        let chat = server.request(
            "POST",
            "/v1/chat/completions",
            &[("Origin", origin), ("Content-Type", "application/json")],
            chat_body().as_bytes(),
        );
        assert_eq!(chat.status, 200, "{}", chat.body);
        assert!(
            chat.headers
                .contains(&format!("access-control-allow-origin: {origin}")),
            "{}",
            chat.headers
        );
        // An allowed page still cannot stop the server.
        let drain = server.request("POST", "/drain", &[("Origin", origin)], b"");
        assert_eq!(drain.status, 403, "{}", drain.body);
    }
    let foreign = server.request(
        "OPTIONS",
        "/v1/chat/completions",
        &[
            ("Origin", FOREIGN),
            ("Access-Control-Request-Method", "POST"),
        ],
        b"",
    );
    assert_eq!(foreign.status, 403);
    assert!(!foreign.headers.contains("access-control-allow-origin"));
    assert_eq!(ready(&server), 200);
}

/// This machine's address on its network, if it has one (what a LAN peer connects to).
fn lan_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?; // no packet is sent: only a route is chosen
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn a_keyless_server_takes_a_drain_from_this_machine_only() {
    let server = TestServer::on_every_interface(Options::default());
    let port = server.addr.port();
    match lan_address() {
        Some(ip) => {
            let mut stream = TcpStream::connect(SocketAddr::new(ip, port)).unwrap();
            send(&mut stream, "POST", "/drain", &[], b"");
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).unwrap();
            let reply = Reply::parse(&raw);
            assert_eq!(reply.status, 403, "{}", reply.body);
            assert_eq!(reply.error()["code"], "drain_not_allowed");
            assert!(reply.body.contains(&ip.to_string()), "{}", reply.body);
            assert_eq!(ready(&server), 200);
        }
        None => eprintln!("no address but loopback here: the LAN half is not run"),
    }
    // Through a proxy on this machine every peer is loopback: a forwarded drain is refused.
    for header in ["X-Forwarded-For", "Forwarded", "X-Real-IP"] {
        let proxied = server.request("POST", "/drain", &[(header, "203.0.113.7")], b"");
        assert_eq!(proxied.status, 403, "{header}: {}", proxied.body);
    }
    assert_eq!(ready(&server), 200);
    let local = server.request("POST", "/drain", &[], b"");
    assert_eq!(local.status, 202, "{}", local.body);
}

fn metric(server: &TestServer, name_and_labels: &str) -> f64 {
    let metrics = server.request("GET", "/metrics", &[], b"").body;
    sample(&metrics, name_and_labels).unwrap_or(0.0)
}

#[test]
fn a_whole_request_is_in_flight_while_it_runs_and_counted_when_its_client_leaves() {
    let server = TestServer::default();
    let labels = format!(r#"{{surface="chat",model="{MODEL}"}}"#);
    let in_flight = format!("ingle_requests_in_flight{labels}");
    let left = format!(r#"ingle_requests_total{{surface="chat",model="{MODEL}",status="499"}}"#);
    // A long non-streamed generation (one word a token, no stop until its length).
    let long = format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Write a long story about a dragon."}}], "max_tokens": 400, "temperature": 0, "stop": ["never-seen-stop"]}}"#
    );
    let mut stream = server.connect();
    send(
        &mut stream,
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "application/json")],
        long.as_bytes(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&server, &in_flight) < 1.0 {
        assert!(
            Instant::now() < deadline,
            "a whole request never counted in flight"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(metric(&server, &in_flight), 1.0);
    drop(stream); // the client leaves before the answer
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&server, &left) < 1.0 {
        assert!(
            Instant::now() < deadline,
            "a request whose client left was not counted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(metric(&server, &in_flight), 0.0);
    // A request refused before it names a model leaves nothing in flight either.
    let refused = server.request(
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "text/plain")],
        b"{}",
    );
    assert_eq!(refused.status, 400);
    let metrics = server.request("GET", "/metrics", &[], b"").body;
    assert_eq!(
        sample(
            &metrics,
            r#"ingle_requests_in_flight{surface="chat",model=""}"#
        ),
        Some(0.0),
        "{metrics}"
    );
}
