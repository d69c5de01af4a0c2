//! What speculative decoding can gain on this machine: the time of one decode step that feeds K
//! tokens of one sequence (every row with logits, as a verified draft is), against one token.
//! A draft of K-1 tokens that is accepted whole yields K tokens for the cost of K rows, so
//! K / cost(K) is the most any drafter can speed up plain decoding here; a draft model adds its
//! own steps on top. Bare llama-cpp-2 calls, one sequence, with the scheduler's threads, batch
//! size and flash-attention setting. Prints one JSON object: {"K": step time relative to K = 1
//! (to the first K when 1 is not listed)}, the median of ROUNDS rounds, and on stderr the
//! milliseconds.
//! Usage: verify_rows [CONTEXT] [K,K,...] [ROUNDS]   (default 500 1,2,3,4,5,6,8,9 7).
//! INGLE_BENCH_MODEL names another GGUF of the models directory.

use ingle::backends::llama::{backend, default_threads};
use ingle::Config;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use std::num::NonZeroU32;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let context: usize = args.get(1).map_or(500, |a| a.parse().unwrap());
    let sizes: Vec<usize> = args
        .get(2)
        .map_or("1,2,3,4,5,6,8,9", String::as_str)
        .split(',')
        .map(|k| k.parse().unwrap())
        .collect();
    let rounds: usize = args.get(3).map_or(7, |a| a.parse().unwrap());
    let config = Config::default();
    let path = match std::env::var("INGLE_BENCH_MODEL") {
        Ok(file) => ingle::config::default_models_dir().join(file),
        Err(_) => config.model_path(&config.predictors[0]),
    };
    let model = LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default())
        .unwrap();
    let threads = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default_threads() as i32);
    let text = "fn area(width: u32, height: u32) -> u32 {\n    width * height\n}\n".repeat(context);
    let tokens: Vec<_> = model
        .vocab()
        .tokenize(text.as_bytes(), true, true)
        .into_iter()
        .take(context + sizes.iter().max().copied().unwrap_or(1))
        .collect();
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new((context + 512) as u32))
        .with_n_seq_max(1)
        .with_n_batch(512)
        .with_n_ubatch(512)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
    let mut ctx = model.new_context(backend().unwrap(), params).unwrap();
    let mut batch = LlamaBatch::new(512, 1);
    for start in (0..context).step_by(512) {
        batch.clear();
        for (pos, token) in tokens.iter().enumerate().take(context).skip(start) {
            batch.add(*token, pos as i32, &[0], false).unwrap();
            if batch.n_tokens() == 512 {
                break;
            }
        }
        ctx.decode(&mut batch).unwrap();
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    // Rounds interleave the sizes, so that a slow moment of the machine falls on all of them.
    for _ in 0..rounds {
        for (i, &k) in sizes.iter().enumerate() {
            batch.clear();
            for (offset, token) in tokens[context..context + k].iter().enumerate() {
                batch
                    .add(*token, (context + offset) as i32, &[0], true)
                    .unwrap();
            }
            let begin = Instant::now();
            ctx.decode(&mut batch).unwrap();
            times[i].push(begin.elapsed().as_secs_f64());
            ctx.clear_kv_cache_seq(Some(0), Some(context as u32), None)
                .unwrap();
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect();
    let one = medians[sizes.iter().position(|&k| k == 1).unwrap_or(0)];
    for (k, m) in sizes.iter().zip(&medians) {
        eprintln!(
            "K = {k}: {:.1} ms, {:.2} tokens per one-token step time",
            m * 1e3,
            *k as f64 * one / m
        );
    }
    let out: Vec<String> = sizes
        .iter()
        .zip(&medians)
        .map(|(k, m)| format!("\"{k}\": {:.2}", m / one))
        .collect();
    println!("{{{}}}", out.join(", "));
}
