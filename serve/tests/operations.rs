//! What operators and routers read of a replica, on the real default models: `/metrics`,
//! `/ready` while models load, and a drain (`POST /drain`, what SIGTERM does).

mod common;

use common::*;
use ingle::Config;
use ingle_serve::Options;
use std::io::{BufReader, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn scrape(server: &TestServer, headers: &[(&str, &str)]) -> Reply {
    server.request("GET", "/metrics", headers, b"")
}

#[test]
fn metrics_count_requests_tokens_and_what_the_engine_does() {
    let server = TestServer::default();
    let chat = format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Say hi."}}], "max_tokens": 8, "temperature": 0}}"#
    );
    assert_eq!(server.post_json("/v1/chat/completions", &chat).status, 200);
    // A model that does not exist is no label of its own.
    let missing = r#"{"model": "@nobody/typo-1", "messages": [{"role": "user", "content": "Hi"}]}"#;
    assert_eq!(
        server.post_json("/v1/chat/completions", missing).status,
        404
    );

    // While a stream runs: in flight, running, and holding KV cells.
    let stream = start_story(&server, true);
    let mut reader = BufReader::new(stream);
    assert_eq!(read_events(&mut reader, 2).len(), 2);
    let during = scrape(&server, &[]);
    assert_eq!(during.status, 200);
    assert!(
        during
            .headers
            .contains("content-type: application/openmetrics-text"),
        "{}",
        during.headers
    );
    let m = &during.body;
    let model = format!(r#"model="{MODEL}""#);
    let chat_labels = format!(r#"{{surface="chat",{model}}}"#);
    assert_eq!(
        sample(m, &format!("ingle_requests_in_flight{chat_labels}")),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        sample(m, &format!("ingle_requests_running{{{model}}}")),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        sample(m, &format!("ingle_requests_waiting{{{model}}}")),
        Some(0.0),
        "{m}"
    );
    let used = sample(m, &format!("ingle_kv_cache_cells_used{{{model}}}")).unwrap();
    let total = sample(m, &format!("ingle_kv_cache_cells{{{model}}}")).unwrap();
    assert!(used > 0.0 && used < total, "{used} of {total} cells\n{m}");
    let usage = sample(m, &format!("ingle_kv_cache_usage_ratios{{{model}}}")).unwrap();
    assert!((usage - used / total).abs() < 1e-9, "{m}");
    drop(reader); // the client leaves: its generation stops

    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let m = scrape(&server, &[]).body;
        if sample(&m, &format!("ingle_requests_running{{{model}}}")) == Some(0.0)
            || Instant::now() > deadline
        {
            break m;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let m = &after;
    let ok = format!(r#"{{surface="chat",{model},status="200"}}"#);
    // The whole request and the stream (a stream's status is its head's).
    assert_eq!(
        sample(m, &format!("ingle_requests_total{ok}")),
        Some(2.0),
        "{m}"
    );
    let not_found = r#"{surface="chat",model="",status="404"}"#;
    assert_eq!(
        sample(m, &format!("ingle_requests_total{not_found}")),
        Some(1.0),
        "{m}"
    );
    assert!(!m.contains("typo-1"), "{m}");
    assert_eq!(
        sample(m, &format!("ingle_requests_in_flight{chat_labels}")),
        Some(0.0),
        "{m}"
    );
    assert_eq!(
        sample(
            m,
            &format!("ingle_request_duration_seconds_count{chat_labels}")
        ),
        Some(2.0),
        "{m}"
    );
    assert_eq!(
        sample(m, &format!("ingle_kv_cache_cells_used{{{model}}}")),
        Some(0.0),
        "{m}"
    );
    assert_eq!(
        sample(m, &format!("ingle_cancelled_requests_total{{{model}}}")),
        Some(1.0),
        "{m}"
    );
    let generated = sample(m, &format!("ingle_generation_tokens_total{{{model}}}")).unwrap();
    let prompt = sample(m, &format!("ingle_prompt_tokens_total{{{model}}}")).unwrap();
    assert!(
        generated >= 3.0 && prompt >= 20.0,
        "{generated} {prompt}\n{m}"
    );
    for histogram in ["queue_wait", "time_to_first_token"] {
        let count = format!("ingle_{histogram}_seconds_count{{{model}}}");
        assert_eq!(sample(m, &count), Some(2.0), "{histogram}\n{m}");
        let inf = format!(r#"ingle_{histogram}_seconds_bucket{{le="+Inf",{model}}}"#);
        assert_eq!(sample(m, &inf), Some(2.0), "{histogram}\n{m}");
    }
    let tpot = format!("ingle_time_per_output_token_seconds_count{{{model}}}");
    assert!(sample(m, &tpot).unwrap() >= 1.0, "{m}");
    assert!(
        sample(m, "process_resident_memory_bytes").unwrap() > 50e6,
        "{m}"
    );
    assert!(
        sample(m, &format!("ingle_model_memory_bytes{{{model}}}")).unwrap() > 50e6,
        "{m}"
    );
    assert!(m.ends_with("# EOF\n"), "{m}");
}

#[test]
fn metrics_and_drain_sit_behind_the_api_key_and_health_and_ready_do_not() {
    let options = Options {
        api_key: Some("sk-ops".into()),
        ..Options::default()
    };
    let server = TestServer::start(Config::default(), options);
    assert_eq!(scrape(&server, &[]).status, 401);
    assert_eq!(
        scrape(&server, &[("Authorization", "Bearer nope")]).status,
        401
    );
    assert_eq!(
        scrape(&server, &[("Authorization", "Bearer sk-ops")]).status,
        200
    );
    assert_eq!(server.request("POST", "/drain", &[], b"").status, 401);
    assert_eq!(server.request("GET", "/health", &[], b"").status, 200);
    let ready = server.request("GET", "/ready", &[], b"");
    assert_eq!(
        (ready.status, ready.json()["status"].as_str()),
        (200, Some("ready"))
    );

    drop(server);
    let public = Options {
        api_key: Some("sk-ops".into()),
        metrics_public: true,
        ..Options::default()
    };
    let server = TestServer::start(Config::default(), public);
    assert_eq!(scrape(&server, &[]).status, 200);
    assert_eq!(server.request("POST", "/drain", &[], b"").status, 401);
    drop(server);
    let off = Options {
        metrics: false,
        ..Options::default()
    };
    let server = TestServer::start(Config::default(), off);
    assert_eq!(scrape(&server, &[]).status, 404);
}

#[test]
fn a_replica_is_not_ready_while_its_models_load_and_refuses_their_requests_with_retry_after() {
    // The larger model loads first (tags in order): the small one is still loading when the
    // requests below arrive, a few milliseconds after the server started.
    let options = Options {
        preload: vec![ingle::config::TOOLS_MODEL.into(), MODEL.into()],
        ..Options::default()
    };
    let server = TestServer::start(Config::default(), options);
    let ready = server.request("GET", "/ready", &[], b"");
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert!(
        ready.headers.contains("retry-after: 1"),
        "{}",
        ready.headers
    );
    assert_eq!(ready.json()["status"], "loading");
    let chat = format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Hi"}}], "max_tokens": 4}}"#
    );
    let refused = server.post_json("/v1/chat/completions", &chat);
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.headers.contains("retry-after: 1"),
        "{}",
        refused.headers
    );
    assert_eq!(refused.error()["code"], "model_loading");
    assert_eq!(refused.error()["param"], "model");
    // /health says alive all along.
    assert_eq!(server.request("GET", "/health", &[], b"").status, 200);

    let deadline = Instant::now() + Duration::from_secs(60);
    while server.request("GET", "/ready", &[], b"").status != 200 {
        assert!(Instant::now() < deadline, "not ready after 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(server.client.models.is_loaded(MODEL).unwrap());
    assert!(server
        .client
        .models
        .is_loaded(ingle::config::TOOLS_MODEL)
        .unwrap());
    assert_eq!(server.post_json("/v1/chat/completions", &chat).status, 200);
}

#[test]
fn a_preloaded_model_that_cannot_load_keeps_the_replica_not_ready() {
    let options = Options {
        preload: vec!["@nobody/missing".into()],
        ..Options::default()
    };
    let server = TestServer::start(Config::default(), options);
    let deadline = Instant::now() + Duration::from_secs(10);
    let ready = loop {
        let ready = server.request("GET", "/ready", &[], b"");
        if ready.json()["status"] != "loading" || Instant::now() > deadline {
            break ready;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ready.status, 503);
    let failed = &ready.json()["failed"][0];
    assert_eq!(failed["model"], "@nobody/missing", "{}", ready.body);
    assert!(
        failed["error"].as_str().unwrap().contains("missing"),
        "{}",
        ready.body
    );
}

/// Sends `POST /drain` and reads the whole answer.
fn drain(server: &TestServer) -> Reply {
    server.request("POST", "/drain", &[], b"")
}

#[test]
fn a_drain_lets_in_flight_streams_finish_and_takes_no_new_connections() {
    let mut server = TestServer::default();
    let body = format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "Count to fifty."}}], "max_tokens": 40, "temperature": 0, "stream": true}}"#
    );
    let mut connection = server.connect();
    send(
        &mut connection,
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    let mut reader = BufReader::new(connection);
    assert_eq!(read_events(&mut reader, 2).len(), 2);
    let answered = drain(&server);
    assert_eq!(
        (answered.status, answered.json()["status"].as_str()),
        (202, Some("draining"))
    );
    // No new connection is taken (a router's next try goes to another replica).
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(server.addr).is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting 5 s into the drain"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The stream in flight runs to its own end.
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("data: [DONE]"), "{rest}");
    assert!(!rest.contains("server_shutdown"), "{rest}");
    // And the server then stops by itself.
    let took = server.shutdown();
    assert!(
        took < Duration::from_secs(5),
        "the server took {took:?} to stop"
    );
}

#[test]
fn a_drain_ends_what_outlives_its_timeout_with_the_shutdown_event() {
    let options = Options {
        drain_timeout: Duration::from_millis(500),
        ..Options::default()
    };
    let mut server = TestServer::start(Config::default(), options);
    let mut reader = BufReader::new(start_story(&server, true));
    assert_eq!(read_events(&mut reader, 2).len(), 2);
    let started = Instant::now();
    assert_eq!(drain(&server).status, 202);
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    let ended = started.elapsed();
    let last = rest
        .lines()
        .rfind(|l| l.starts_with("data: "))
        .unwrap_or_else(|| panic!("no event after the drain: {rest:?}"))
        .to_string();
    assert!(last.contains(r#""code":"server_shutdown""#), "{rest}");
    assert!(
        ended >= Duration::from_millis(450) && ended < Duration::from_secs(5),
        "the stream ended {ended:?} into a 500 ms drain"
    );
    assert!(server.shutdown() < Duration::from_secs(5));
}
