//! Memory of one big embeddings request, in-process: the process's resident set (RSS) idle,
//! at its peak during a request of 2048 inputs of about 1 KB, and after it. Run by
//! `scripts/bench memory`. Figures in MB, from /proc/self/status (VmRSS, VmHWM).

use ingle::openai::EmbeddingRequest;
use ingle::{Client, Config, DEFAULT_EMBEDDING_MODEL};

fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::from_config(&Config::default())?;
    // Load the model and warm it up with one small request.
    client
        .embeddings
        .create(&EmbeddingRequest::new(DEFAULT_EMBEDDING_MODEL, "warm up"))?;
    let idle = status_mb("VmRSS:");
    let sentence = "The quick brown fox jumps over the lazy dog while the band plays on. ";
    let texts: Vec<String> = (0..2048)
        .map(|i| format!("{i}: {}", sentence.repeat(15)))
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let request = EmbeddingRequest::new(DEFAULT_EMBEDDING_MODEL, texts);
    let start = std::time::Instant::now();
    let response = client.embeddings.create(&request)?;
    let took = start.elapsed();
    drop(response);
    let after = status_mb("VmRSS:");
    let peak = status_mb("VmHWM:");
    println!(
        "embeddings of 2048 inputs ({:.1} MB of text) in {:.1} s: RSS idle {idle:.0} MB, \
         peak {peak:.0} MB (+{:.0}), after {after:.0} MB (+{:.0})",
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        peak - idle,
        after - idle
    );
    // The settings that bound memory must not slow the common case: short sentences.
    let short: Vec<String> = (0..32)
        .map(|i| format!("Sentence number {i} is short."))
        .collect();
    let batch = EmbeddingRequest::new(DEFAULT_EMBEDDING_MODEL, short);
    let start = std::time::Instant::now();
    let mut sentences = 0;
    while start.elapsed().as_secs_f64() < 3.0 {
        client.embeddings.create(&batch)?;
        sentences += 32;
    }
    println!(
        "short sentences in batches of 32: {:.0} sentences/s",
        sentences as f64 / start.elapsed().as_secs_f64()
    );
    Ok(())
}
