//! Embeddings under concurrency, in the core: sentences/s of 8 threads embedding one sentence
//! per request, against one thread sending batches of 32 (the same sentences). Prints one JSON
//! object. Run by `scripts/bench` next to the same figure through the Python package.
//! Usage: embedding_concurrency [SECONDS] [CALLERS]   (default 3 8)

use ingle::openai::EmbeddingRequest;
use ingle::{Client, Config, DEFAULT_EMBEDDING_MODEL};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).map_or(3.0, |a| a.parse().unwrap());
    let callers: usize = args.get(2).map_or(8, |a| a.parse().unwrap());
    let client = Client::from_config(&Config::default())?;
    let sentences: Vec<String> = (0..512)
        .map(|i| format!("The river number {i} flows quietly past the old mill at dawn."))
        .collect();
    let embed = |texts: &[String]| {
        client
            .embeddings
            .create_matrix(&EmbeddingRequest::new(
                DEFAULT_EMBEDDING_MODEL,
                texts.to_vec(),
            ))
            .map(|_| ())
    };
    embed(&sentences[..32])?;
    let window = Duration::from_secs_f64(seconds);
    let mut batched = Vec::new();
    let mut singles = Vec::new();
    // Interleaved, best of 3 each: the figures are bounded by the machine, noise only lowers them.
    for _ in 0..3 {
        let (mut n, start) = (0, Instant::now());
        while start.elapsed() < window {
            embed(&sentences[n % 480..n % 480 + 32])?;
            n += 32;
        }
        batched.push(n as f64 / start.elapsed().as_secs_f64());

        let start = Instant::now();
        let total: usize = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..callers)
                .map(|k| {
                    let embed = &embed;
                    let sentences = &sentences;
                    scope.spawn(move || {
                        let mut count = 0;
                        while start.elapsed() < window {
                            let i = (k * 61 + count) % 512;
                            embed(&sentences[i..i + 1]).unwrap();
                            count += 1;
                        }
                        count
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).sum()
        });
        singles.push(total as f64 / start.elapsed().as_secs_f64());
    }
    let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    println!(
        "{{\"batches_of_32\": {:.1}, \"concurrent_singles\": {:.1}, \"callers\": {callers}}}",
        best(&batched),
        best(&singles)
    );
    Ok(())
}
