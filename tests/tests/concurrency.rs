//! Several threads on one model, and cancellation by dropping a stream.

use ingle::openai::ChatCompletionRequest;
use ingle_tests::{ask, france, own_client, MODEL};
use std::time::{Duration, Instant};

#[test]
fn four_threads_times_five_requests_all_succeed() {
    let client = own_client(|p| p); // default parallel = 4: all four threads decode side by side
    let max_active = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (client, max_active) = (client.clone(), &max_active);
                scope.spawn(move || {
                    for i in 0..5 {
                        let request = ChatCompletionRequest {
                            max_tokens: Some(24),
                            ..france()
                        };
                        let completion = if i % 2 == 0 {
                            client.chat.completions.create(&request).unwrap().choices[0]
                                .message
                                .text()
                                .to_string()
                        } else {
                            let mut text = String::new();
                            for chunk in client.chat.completions.stream(&request).unwrap() {
                                text.extend(
                                    chunk
                                        .unwrap()
                                        .choices
                                        .into_iter()
                                        .flat_map(|c| c.delta.content),
                                );
                                let active = client.metrics(MODEL).unwrap().active_requests;
                                max_active.fetch_max(active, std::sync::atomic::Ordering::Relaxed);
                            }
                            text
                        };
                        assert!(completion.contains("Paris"), "{completion:?}");
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
    let metrics = client.metrics(MODEL).unwrap();
    assert_eq!((metrics.active_requests, metrics.queued_requests), (0, 0));
    // Requests were decoded side by side, not one after another.
    assert!(max_active.into_inner() >= 2);
}

#[test]
fn more_requests_than_sequences_queue_and_all_finish() {
    let client = own_client(|p| p.parallel(2));
    std::thread::scope(|scope| {
        for _ in 0..5 {
            let client = client.clone();
            scope.spawn(move || {
                let completion = client
                    .chat
                    .completions
                    .create(&ChatCompletionRequest {
                        max_tokens: Some(24),
                        ..france()
                    })
                    .unwrap();
                assert!(completion.choices[0].message.text().contains("Paris"));
            });
        }
    });
}

#[test]
fn dropping_a_stream_after_3_chunks_stops_generation() {
    // One sequence only: if the dropped request kept generating, the next one would have to wait.
    let client = own_client(|p| p.parallel(1));
    let long = ChatCompletionRequest {
        max_tokens: Some(1500),
        temperature: Some(0.8),
        seed: Some(3),
        ..ask("Write a very long story about a dragon and a knight.")
    };
    let mut stream = client.chat.completions.stream(&long).unwrap();
    for _ in 0..3 {
        stream.next().unwrap().unwrap();
    }
    let generated_at_drop = client.metrics(MODEL).unwrap().generated_tokens;
    drop(stream);

    let deadline = Instant::now() + Duration::from_secs(10);
    while client.metrics(MODEL).unwrap().active_requests > 0 {
        assert!(Instant::now() < deadline, "the dropped request still runs");
        std::thread::sleep(Duration::from_millis(5));
    }
    let metrics = client.metrics(MODEL).unwrap();
    assert_eq!(metrics.cancelled_requests, 1);
    assert!(
        metrics.generated_tokens <= generated_at_drop + 2,
        "generation went on after the drop: {} tokens at the drop, {} after",
        generated_at_drop,
        metrics.generated_tokens
    );
    // The single sequence is free: the next request runs at once and is correct.
    let completion = client.chat.completions.create(&france()).unwrap();
    assert!(completion.choices[0].message.text().contains("Paris"));
    assert_eq!(client.metrics(MODEL).unwrap().cancelled_requests, 1);
}

#[test]
fn a_cancelled_create_stops_generation() {
    let client = own_client(|p| p.parallel(1));
    let long = ChatCompletionRequest {
        max_tokens: Some(1500),
        ..ask("Write a very long story about a dragon and a knight.")
    };
    // Says stop from its sixth asking on (it is asked between tokens).
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&asked);
    let cancel = ingle::Cancel::polled(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 5
    });
    let error = client
        .with_cancel(&cancel)
        .chat
        .completions
        .create(&long)
        .unwrap_err();
    assert_eq!(error.kind, ingle::ErrorKind::Cancelled);
    assert_eq!(error.code.map(ingle::ErrorCode::as_str), Some("cancelled"));
    assert!(cancel.is_cancelled());
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.metrics(MODEL).unwrap().active_requests > 0 {
        assert!(Instant::now() < deadline, "the stopped request still runs");
        std::thread::sleep(Duration::from_millis(5));
    }
    let metrics = client.metrics(MODEL).unwrap();
    assert_eq!(metrics.cancelled_requests, 1);
    assert!(metrics.generated_tokens < 20, "{metrics:?}");
    // The text completion flavour too, and the client goes on.
    let prompt = ingle::openai::CompletionRequest {
        max_tokens: Some(1000),
        ..ingle::openai::CompletionRequest::new(MODEL, "Once upon a time")
    };
    let cancelled = ingle::Cancel::new();
    cancelled.cancel();
    let error = client
        .with_cancel(&cancelled)
        .completions
        .create(&prompt)
        .unwrap_err();
    assert_eq!(error.kind, ingle::ErrorKind::Cancelled);
    let completion = client.chat.completions.create(&france()).unwrap();
    assert!(completion.choices[0].message.text().contains("Paris"));
}

#[test]
fn a_cancel_reaches_a_request_still_queued_for_a_sequence() {
    // One sequence, held by a long generation that cannot end early (the end tokens barred): the
    // second request waits in the queue, where only its cancel can end it.
    let client = own_client(|p| p.parallel(1));
    let endless = ChatCompletionRequest {
        max_tokens: Some(1500),
        // SmolLM2's <|endoftext|> and <|im_end|>.
        logit_bias: Some(
            serde_json::from_value(serde_json::json!({"0": -100, "2": -100})).unwrap(),
        ),
        ..ask("Write a very long story about a dragon and a knight.")
    };
    let mut holder = client.chat.completions.stream(&endless).unwrap();
    holder.next().unwrap().unwrap();
    // It holds the sequence once it generates (its first chunk, the role, comes before).
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.metrics(MODEL).unwrap().generated_tokens == 0 {
        assert!(
            Instant::now() < deadline,
            "the first request never generated"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    let cancel = ingle::Cancel::new();
    let queued = {
        let client = client.with_cancel(&cancel);
        std::thread::spawn(move || client.chat.completions.create(&france()))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.metrics(MODEL).unwrap().queued_requests == 0 {
        assert!(Instant::now() < deadline, "the second request never queued");
        std::thread::sleep(Duration::from_millis(5));
    }
    cancel.cancel();
    let error = queued.join().unwrap().unwrap_err();
    assert_eq!(error.kind, ingle::ErrorKind::Cancelled, "{error}");
    // It ended while the first still held the sequence, and left the queue.
    let metrics = client.metrics(MODEL).unwrap();
    assert_eq!(metrics.active_requests, 1, "{metrics:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.metrics(MODEL).unwrap().queued_requests > 0 {
        assert!(
            Instant::now() < deadline,
            "the cancelled request stayed queued"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(client.metrics(MODEL).unwrap().cancelled_requests, 1);
    assert!(holder.next().unwrap().is_ok(), "the first request goes on");
    drop(holder);
    let completion = client.chat.completions.create(&france()).unwrap();
    assert!(completion.choices[0].message.text().contains("Paris"));
}
