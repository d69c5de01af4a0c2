//! Aggregate decode of N concurrent streamed chat completions through the Rust core (one
//! thread per stream, `parallel = 8`), measured as `scripts/bench` measures it through Python:
//! from the moment the last stream has its first token to the moment the first stream ends.
//! With nothing but Rust around the scheduler, this tells what the Python threads cost.
//! Prints one JSON object {"N": tok/s}. Usage: stream_scaling [TEMPERATURE] [N,N,...]
//! (default 0.8 1,4,8)

mod common;
use common::question;
use ingle::openai::{ChatCompletionRequest, ChatMessage};
use ingle::{Client, Config};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let temperature: f64 = args.get(1).map_or(0.8, |a| a.parse().unwrap());
    let sizes: Vec<usize> = args
        .get(2)
        .map_or("1,4,8", String::as_str)
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect();
    // INGLE_BENCH_MODEL: another GGUF of the models directory (scripts/bench gpu).
    let model = std::env::var("INGLE_BENCH_MODEL")
        .unwrap_or_else(|_| ingle::config::DEFAULT_MODEL_FILE.to_string());
    let config = Config::from_toml(&format!(
        "models_dir = {:?}\n[[predictors]]\ntag = \"@bench/smollm2-p8\"\nbackend = \"llama\"\n\
         model = {model:?}\nparallel = 8\nn_ctx = 1024\n",
        ingle::config::default_models_dir().display().to_string()
    ))?;
    let client = Client::from_config(&config)?;
    let run = std::sync::atomic::AtomicUsize::new(0);
    let streams = |n: usize| -> f64 {
        let stamps: Vec<Vec<Instant>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..n)
                .map(|i| {
                    let (client, run) = (&client, &run);
                    scope.spawn(move || {
                        let k = run.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let request = ChatCompletionRequest {
                            temperature: Some(temperature),
                            seed: Some(i as i64),
                            max_tokens: Some(128),
                            ..ChatCompletionRequest::new(
                                "@bench/smollm2-p8",
                                vec![
                                    ChatMessage::system(format!(
                                        "Request {k:06}. You are a helpful AI assistant."
                                    )),
                                    ChatMessage::user(question()),
                                ],
                            )
                        };
                        let mut stamps: Vec<Instant> = Vec::new();
                        let sent = Instant::now();
                        let request = ChatCompletionRequest {
                            stream_options: Some(ingle::openai::StreamOptions {
                                include_usage: true,
                                ..Default::default()
                            }),
                            ..request
                        };
                        for chunk in client.chat.completions.stream(&request).unwrap() {
                            let chunk = chunk.unwrap();
                            if let (Some(usage), 1, Some(first)) = (&chunk.usage, n, stamps.first())
                            {
                                // Prefill rate on stderr: stdout stays one JSON object.
                                let ttft = first.duration_since(sent).as_secs_f64();
                                eprintln!(
                                    "prefill, 1 stream: {:.1} tok/s",
                                    usage.prompt_tokens as f64 / ttft
                                );
                            }
                            if chunk
                                .choices
                                .iter()
                                .any(|c| c.delta.content.as_deref().is_some_and(|t| !t.is_empty()))
                            {
                                stamps.push(Instant::now());
                            }
                        }
                        stamps
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let begin = stamps.iter().map(|s| s[0]).max().unwrap();
        let end = stamps.iter().map(|s| *s.last().unwrap()).min().unwrap();
        let tokens = stamps
            .iter()
            .flatten()
            .filter(|&&t| t > begin && t <= end)
            .count();
        tokens as f64 / (end - begin).as_secs_f64()
    };
    streams(1);
    let mut out = Vec::new();
    for &n in &sizes {
        let mut rates: Vec<f64> = (0..3).map(|_| streams(n)).collect();
        rates.sort_by(f64::total_cmp);
        out.push(format!("\"{n}\": {:.2}", rates[1]));
    }
    println!("{{{}}}", out.join(", "));
    Ok(())
}
