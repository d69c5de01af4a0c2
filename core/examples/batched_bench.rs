//! The ceiling for batched decoding on this build: what llama.cpp's `llama-batched-bench` does
//! (B sequences each prefill PP tokens, then decode TG tokens together, one batch per step),
//! with bare llama-cpp-2 calls and the context settings ingle's scheduler uses (one KV stream
//! per sequence, flash attention off). The crate's vendored llama.cpp does not ship the tool's
//! source, so this is its loop, rebuilt. Prints one JSON object: {"B": decode tok/s over all
//! sequences}, the median of 3 interleaved rounds.
//! Usage: batched_bench [PP] [TG] [B,B,...] [CTX]   (default 300 128 1,4,8, and a context of
//! CTX tokens per sequence, default PP + TG + 16). llama.cpp attends over the used cells padded
//! to 256, at most the sequence's context: compare with ingle at the same context per sequence
//! (its `n_ctx`).

use ingle::backends::llama::{backend, default_threads};
use ingle::Config;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use std::num::NonZeroU32;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pp: usize = args.get(1).map_or(300, |a| a.parse().unwrap());
    let tg: usize = args.get(2).map_or(128, |a| a.parse().unwrap());
    let per_sequence: usize = args.get(4).map_or(pp + tg + 16, |a| a.parse().unwrap());
    let sizes: Vec<usize> = args
        .get(3)
        .map_or("1,4,8", String::as_str)
        .split(',')
        .map(|b| b.parse().unwrap())
        .collect();
    let config = Config::default();
    // INGLE_BENCH_MODEL: another GGUF of the models directory (scripts/bench gpu).
    let path = match std::env::var("INGLE_BENCH_MODEL") {
        Ok(file) => ingle::config::default_models_dir().join(file),
        Err(_) => config.model_path(&config.predictors[0]),
    };
    let model = LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default())
        .unwrap();
    // BENCH_THREADS overrides the physical cores (e.g. under taskset, which they ignore).
    let threads = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default_threads() as i32);
    let prompt: Vec<_> = model
        .vocab()
        .tokenize(
            "The Loire is the longest river in France. "
                .repeat(pp)
                .as_bytes(),
            true,
            true,
        )
        .into_iter()
        .take(pp)
        .collect();
    // Rounds interleave the sizes; each size's median is printed.
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    for (k, &b) in sizes.iter().enumerate().cycle().take(sizes.len() * 3) {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new((per_sequence * b) as u32))
            .with_n_seq_max(b as u32)
            .with_kv_unified(false)
            .with_n_batch(512)
            .with_n_ubatch(512)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
        let mut ctx = model.new_context(backend().unwrap(), params).unwrap();
        let mut batch = LlamaBatch::new(512.max(b), 1);
        let prefill = Instant::now();
        // Prefill every sequence (one at a time, as the tool's default).
        for seq in 0..b {
            for start in (0..pp).step_by(512) {
                batch.clear();
                let end = (start + 512).min(pp);
                for (pos, token) in prompt.iter().enumerate().take(end).skip(start) {
                    batch
                        .add(*token, pos as i32, &[seq as i32], pos + 1 == pp)
                        .unwrap();
                }
                ctx.decode(&mut batch).unwrap();
            }
        }
        // Prefill rate on stderr: stdout stays one JSON object of decode rates.
        eprintln!(
            "prefill, {b} sequences: {:.1} tok/s",
            (b * pp) as f64 / prefill.elapsed().as_secs_f64()
        );
        let mut sampler = LlamaSampler::greedy();
        let mut tokens = vec![sampler.sample(&ctx, batch.n_tokens() - 1); b];
        let begin = Instant::now();
        for step in 0..tg {
            batch.clear();
            for (seq, token) in tokens.iter().enumerate() {
                batch
                    .add(*token, (pp + step) as i32, &[seq as i32], true)
                    .unwrap();
            }
            ctx.decode(&mut batch).unwrap();
            for (seq, token) in tokens.iter_mut().enumerate() {
                *token = sampler.sample(&ctx, seq as i32);
            }
        }
        rates[k].push((b * tg) as f64 / begin.elapsed().as_secs_f64());
    }
    let out: Vec<String> = sizes
        .iter()
        .zip(&mut rates)
        .map(|(b, rates)| {
            rates.sort_by(f64::total_cmp);
            format!("\"{b}\": {:.2}", rates[rates.len() / 2])
        })
        .collect();
    println!("{{{}}}", out.join(", "));
}
