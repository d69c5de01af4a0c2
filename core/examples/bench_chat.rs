//! Benchmark: prefill and decode tokens/s and time to first token of ingle's streamed chat
//! completion on the default model, against a bare llama-cpp-2 loop (the ceiling) in the same
//! run, as ratios. Also the aggregate decode rate of 4 concurrent requests.
//! Run with `scripts/bench chat` (release build). Figures, not a test.

mod common;
use common::question;
use ingle::backends::llama::{backend, default_threads};
use ingle::openai::{ChatCompletionRequest, ChatMessage};
use ingle::{Client, Config, DEFAULT_MODEL};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use std::num::NonZeroU32;
use std::time::Instant;

const RUNS: usize = 3;

/// One figure read off a run.
type Metric = fn(&Figures) -> f64;
const DECODE_TOKENS: i64 = 128;

#[derive(Clone, Copy, Default)]
struct Figures {
    prompt_tokens: usize,
    completion_tokens: usize,
    ttft_s: f64,
    decode_s: f64,
}

impl Figures {
    fn prefill_tps(&self) -> f64 {
        self.prompt_tokens as f64 / self.ttft_s
    }
    fn decode_tps(&self) -> f64 {
        (self.completion_tokens - 1) as f64 / self.decode_s
    }
}

/// A system message that differs from run to run: every run's prompt is new from its first
/// tokens, so ingle's prompt cache has nothing to reuse and each run prefills in full.
fn system() -> String {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("Request {run}. You are a helpful AI assistant.")
}

fn ingle_run(client: &Client) -> Figures {
    let request = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(DECODE_TOKENS),
        stream_options: Some(ingle::openai::StreamOptions {
            include_usage: true,
            ..Default::default()
        }),
        ..ChatCompletionRequest::new(
            DEFAULT_MODEL,
            vec![ChatMessage::system(system()), ChatMessage::user(question())],
        )
    };
    let start = Instant::now();
    let mut first = None;
    let mut figures = Figures::default();
    for chunk in client.chat.completions.stream(&request).unwrap() {
        let chunk = chunk.unwrap();
        if first.is_none()
            && chunk
                .choices
                .iter()
                .any(|c| c.delta.content.as_deref().is_some_and(|t| !t.is_empty()))
        {
            first = Some(start.elapsed().as_secs_f64());
        }
        if let Some(usage) = chunk.usage {
            figures.prompt_tokens = usage.prompt_tokens as usize;
            figures.completion_tokens = usage.completion_tokens as usize;
        }
    }
    figures.ttft_s = first.unwrap();
    figures.decode_s = start.elapsed().as_secs_f64() - figures.ttft_s;
    figures
}

/// The ceiling: tokenize, one prefill decode, then a greedy loop, with nothing around it.
fn bare_run(model: &LlamaModel, tokens: usize) -> Figures {
    let threads = default_threads() as i32;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(2048))
        .with_n_batch(512)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model.new_context(backend().unwrap(), params).unwrap();
    let start = Instant::now();
    let template = model.chat_template(None).unwrap();
    let chat = [
        LlamaChatMessage::new("system".into(), system()).unwrap(),
        LlamaChatMessage::new("user".into(), question()).unwrap(),
    ];
    let prompt = model.apply_chat_template(&template, &chat, true).unwrap();
    let prompt = model.vocab().tokenize(prompt.as_bytes(), true, true);
    let mut batch = LlamaBatch::new(512, 1);
    let last = prompt.len() - 1;
    for (i, token) in prompt.iter().enumerate() {
        batch.add(*token, i as i32, &[0], i == last).unwrap();
    }
    ctx.decode(&mut batch).unwrap();
    let mut sampler = LlamaSampler::greedy();
    let mut token = sampler.sample(&ctx, batch.n_tokens() - 1);
    let _ = model.vocab().token_to_piece(token, false, None);
    let ttft_s = start.elapsed().as_secs_f64();
    // Decode as many tokens as ingle did, ignoring end-of-generation, so the work is equal.
    for pos in prompt.len()..prompt.len() + tokens - 1 {
        batch.clear();
        batch.add(token, pos as i32, &[0], true).unwrap();
        ctx.decode(&mut batch).unwrap();
        token = sampler.sample(&ctx, 0);
        let _ = model.vocab().token_to_piece(token, false, None);
    }
    Figures {
        prompt_tokens: prompt.len(),
        completion_tokens: tokens,
        ttft_s,
        decode_s: start.elapsed().as_secs_f64() - ttft_s,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let config = Config::default();
    let path = config.model_path(&config.predictors[0]);
    let client = Client::from_config(&config).unwrap();
    ingle_run(&client); // warm-up: load and touch the weights
    if std::env::args().any(|a| a == "--core-json") {
        // The Rust core's figures alone, for the bindings' benchmarks to compare against.
        let figs: Vec<Figures> = (0..RUNS).map(|_| ingle_run(&client)).collect();
        let stat = |f: Metric| median(figs.iter().map(f).collect());
        println!(
            "{{\"prompt_tokens\": {}, \"completion_tokens\": {}, \"decode_tps\": {:.2}, \"ttft_ms\": {:.2}}}",
            figs[0].prompt_tokens,
            figs[0].completion_tokens,
            stat(Figures::decode_tps),
            stat(|f| f.ttft_s * 1000.0)
        );
        return;
    }
    let model = LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default())
        .unwrap();

    let (mut ingle_figs, mut bare_figs) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        // Interleaved, so both see the same machine conditions.
        let ours = ingle_run(&client);
        bare_figs.push(bare_run(&model, ours.completion_tokens));
        ingle_figs.push(ours);
    }
    let stat = |figs: &[Figures], f: Metric| median(figs.iter().map(f).collect());
    let rows: [(&str, Metric); 3] = [
        ("prefill tok/s", Figures::prefill_tps),
        ("decode tok/s", Figures::decode_tps),
        ("time to first token ms", |f| f.ttft_s * 1000.0),
    ];
    println!(
        "model {DEFAULT_MODEL}, {} threads, prompt {} tokens, {} completion tokens, median of {RUNS}",
        default_threads(),
        ingle_figs[0].prompt_tokens,
        ingle_figs[0].completion_tokens
    );
    println!(
        "{:<26}{:>12}{:>16}{:>10}",
        "", "ingle", "bare llama-cpp", "ratio"
    );
    for (name, f) in rows {
        let (ours, bare) = (stat(&ingle_figs, f), stat(&bare_figs, f));
        println!("{name:<26}{ours:>12.1}{bare:>16.1}{:>10.2}", ours / bare);
    }

    // Aggregate decode throughput: 4 requests at once share each decode batch.
    let start = Instant::now();
    let tokens: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| ingle_run(&client).completion_tokens))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let aggregate = tokens as f64 / start.elapsed().as_secs_f64();
    let single = stat(&ingle_figs, Figures::decode_tps);
    println!(
        "4 concurrent requests: {aggregate:.1} tok/s in all (prefill included), {:.2}x one request's decode rate",
        aggregate / single
    );
}
