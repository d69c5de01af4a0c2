//! `models.unload` frees a model's memory and the next request loads it again. Alone in its
//! test binary: it reads the process's resident memory, which other tests would disturb.

use ingle::openai::ChatMessage;
use ingle_tests::{config, france, MODEL};
use std::time::{Duration, Instant};

/// Resident memory of this process, in MiB (/proc/self/statm, in pages).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: f64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096.0 / (1024.0 * 1024.0)
}

#[test]
fn unload_frees_the_model_and_the_next_request_reloads_it() {
    let client = ingle::Client::from_config(&config()).unwrap();
    assert!(!client.models.is_loaded(MODEL).unwrap());
    let before = rss_mib();
    let answer = |c: &ingle::Client| {
        let completion = c.chat.completions.create(&france()).unwrap();
        completion.choices[0].message.text().to_string()
    };
    let first = answer(&client);
    assert!(client.models.is_loaded(MODEL).unwrap());
    let loaded = rss_mib();
    assert!(
        loaded - before > 50.0,
        "loading SmolLM2 took {:.0} MiB",
        loaded - before
    );

    assert!(client.models.unload(MODEL).unwrap(), "it was loaded");
    assert!(!client.models.is_loaded(MODEL).unwrap());
    assert!(
        !client.models.unload(MODEL).unwrap(),
        "unloading twice is a no-op"
    );
    // The scheduler thread frees the weights and KV cache as it ends: give it a moment.
    let start = Instant::now();
    let mut after = rss_mib();
    while after > before + (loaded - before) * 0.3 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        after = rss_mib();
    }
    println!("RSS: {before:.0} MiB before loading, {loaded:.0} loaded, {after:.0} after unload");
    assert!(
        after <= before + (loaded - before) * 0.3,
        "unload freed too little: {before:.0} MiB before, {loaded:.0} loaded, {after:.0} after"
    );

    // The next request loads it again and answers the same.
    assert_eq!(answer(&client), first);
    assert!(client.models.is_loaded(MODEL).unwrap());

    // A stream running while the model is unloaded finishes on it.
    let mut request = france();
    request.messages.push(ChatMessage::user("And of Italy?"));
    let mut stream = client.chat.completions.stream(&request).unwrap();
    let first_chunk = stream.next().unwrap().unwrap();
    assert!(client.models.unload(MODEL).unwrap());
    let rest: Vec<_> = stream.collect::<Result<Vec<_>, _>>().unwrap();
    assert!(!rest.is_empty());
    let _ = first_chunk;
    assert!(client.models.unload("@nobody/nothing").is_err());

    // Keep-alive: a model idle for the given time, and not in use, is unloaded.
    answer(&client);
    assert!(client
        .models
        .unload_idle(Duration::from_secs(3600))
        .is_empty());
    assert_eq!(
        client.models.unload_idle(Duration::ZERO),
        vec![MODEL.to_string()]
    );
    assert!(!client.models.is_loaded(MODEL).unwrap());
}
