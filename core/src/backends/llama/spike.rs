//! WIP (issue 16): is llguidance fast enough? Decode tok/s on Qwen2.5-Coder with a JSON-schema
//! constraint vs unconstrained, same prompt, greedy. `cargo test --release -p ingle-core --lib
//! spike -- --ignored --nocapture`.

#![cfg(test)]
#![allow(clippy::explicit_counter_loop)] // a spike

use super::backend;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use std::num::NonZeroU32;
use std::time::Instant;

fn decode(
    model: &LlamaModel,
    prompt: &str,
    sampler: &mut LlamaSampler,
    max: usize,
) -> (String, usize, f64) {
    let backend = backend().unwrap();
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(2048))
        .with_n_threads(2)
        .with_n_threads_batch(2);
    let mut ctx = model.new_context(backend, params).unwrap();
    let tokens = model.vocab().tokenize(prompt.as_bytes(), false, true);
    let mut batch = LlamaBatch::new(2048, 1);
    for (i, t) in tokens.iter().enumerate() {
        batch
            .add(*t, i as i32, &[0], i + 1 == tokens.len())
            .unwrap();
    }
    ctx.decode(&mut batch).unwrap();
    let mut n_past = tokens.len() as i32;
    let mut out = String::new();
    let start = Instant::now();
    let mut produced = 0;
    for _ in 0..max {
        let token = sampler.sample(&ctx, batch.n_tokens() - 1);
        // sample() accepts the token itself (llama_sampler_sample).
        if model.vocab().is_eog(token) {
            break;
        }
        out.push_str(&String::from_utf8_lossy(
            &model.vocab().token_to_piece(token, false, None),
        ));
        produced += 1;
        batch.clear();
        batch.add(token, n_past, &[0], true).unwrap();
        n_past += 1;
        ctx.decode(&mut batch).unwrap();
    }
    (out, produced, start.elapsed().as_secs_f64())
}

#[test]
#[ignore]
fn llguidance_json_schema_speed() {
    let path = std::path::PathBuf::from(std::env::var("HOME").unwrap())
        .join(".cache/ingle/models/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf");
    let model = LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default())
        .unwrap();
    let prompt = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nDescribe three European capitals as JSON: a list of objects with name, country, population (an integer) and a one-sentence description.<|im_end|>\n<|im_start|>assistant\n";
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"capitals": {"type": "array", "minItems": 3, "maxItems": 3, "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "country": {"type": "string"},
                           "population": {"type": "integer", "minimum": 0},
                           "description": {"type": "string"}},
            "required": ["name", "country", "population", "description"],
            "additionalProperties": false}}},
        "required": ["capitals"], "additionalProperties": false
    });
    let start = Instant::now();
    let tok_env = LlamaSampler::llguidance_tok_env(&model);
    let tok_env_s = start.elapsed().as_secs_f64();
    let factory = llguidance::ParserFactory::new_simple(&tok_env).unwrap();
    let start = Instant::now();
    let grammar = llguidance::api::TopLevelGrammar::from_json_schema(schema.clone());
    let matcher = llguidance::Matcher::new(factory.create_parser(grammar));
    assert!(!matcher.is_error(), "{:?}", matcher.get_error());
    let compile_s = start.elapsed().as_secs_f64();
    for round in 0..2 {
        let mut free = LlamaSampler::greedy();
        let (text, n, secs) = decode(&model, prompt, &mut free, 160);
        let grammar = llguidance::api::TopLevelGrammar::from_json_schema(schema.clone());
        let matcher = llguidance::Matcher::new(factory.create_parser(grammar));
        let mut constrained =
            LlamaSampler::chain_simple([LlamaSampler::from(matcher), LlamaSampler::greedy()]);
        let (json_text, m, json_secs) = decode(&model, prompt, &mut constrained, 400);
        println!("round {round}: unconstrained {n} tokens {:.1} tok/s; constrained {m} tokens {:.1} tok/s ({:.2}×)",
            n as f64 / secs, m as f64 / json_secs, (m as f64 / json_secs) / (n as f64 / secs));
        if round == 1 {
            println!("tok env {tok_env_s:.2} s, schema compile {compile_s:.3} s");
            println!("free: {}", &text[..text.len().min(200)]);
            println!("json: {json_text}");
            let parsed: serde_json::Value = serde_json::from_str(&json_text).expect("valid JSON");
            assert_eq!(parsed["capitals"].as_array().unwrap().len(), 3);
        }
    }
}

#[test]
#[ignore]
fn llguidance_forced_tool_call() {
    let path = std::path::PathBuf::from(std::env::var("HOME").unwrap())
        .join(".cache/ingle/models/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf");
    let model = LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default())
        .unwrap();
    let source = model
        .chat_template(None)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let template =
        super::template::ChatTemplate::new("qwen", &source, "<|endoftext|>", "<|im_end|>").unwrap();
    let parameters = serde_json::json!({"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]});
    let tools = serde_json::json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Get the current weather in a city.", "parameters": parameters}}]);
    for question in [
        "What's the weather in Paris right now, in celsius?",
        "Write a haiku about the sea.",
    ] {
        let messages = serde_json::json!([{"role": "user", "content": question}]);
        let prompt = template.render(&messages, Some(&tools), true).unwrap();
        let mut free = LlamaSampler::greedy();
        let (text, _, _) = decode(&model, &prompt, &mut free, 80);
        println!("{question}\n  free: {text:?}");
        let tok_env = LlamaSampler::llguidance_tok_env(&model);
        let factory = llguidance::ParserFactory::new_simple(&tok_env).unwrap();
        let call_schema = serde_json::json!({"type": "object", "properties": {
            "name": {"const": "get_weather"}, "arguments": parameters},
            "required": ["name", "arguments"], "additionalProperties": false});
        let lark = format!(
            "start: \"<tool_call>\\n\" payload \"\\n</tool_call>\"\npayload: %json {call_schema}\n"
        );
        let grammar = llguidance::api::TopLevelGrammar::from_lark(lark);
        let matcher = llguidance::Matcher::new(factory.create_parser(grammar));
        assert!(!matcher.is_error(), "{:?}", matcher.get_error());
        let mut forced =
            LlamaSampler::chain_simple([LlamaSampler::from(matcher), LlamaSampler::greedy()]);
        let (call, n, secs) = decode(&model, &prompt, &mut forced, 120);
        println!("  forced: {call:?} ({n} tokens, {:.2} s)", secs);
        let json = call
            .trim_start_matches("<tool_call>\n")
            .trim_end_matches("\n</tool_call>");
        let parsed: serde_json::Value = serde_json::from_str(json).expect("a JSON call");
        assert_eq!(parsed["name"], "get_weather");
        assert!(parsed["arguments"]["city"].is_string());
    }
}

#[test]
#[ignore]
fn llguidance_auto_tool_call() {
    let path = std::path::PathBuf::from(std::env::var("HOME").unwrap())
        .join(".cache/ingle/models/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf");
    let model = LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default())
        .unwrap();
    let source = model
        .chat_template(None)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let template =
        super::template::ChatTemplate::new("qwen", &source, "<|endoftext|>", "<|im_end|>").unwrap();
    let parameters = serde_json::json!({"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]});
    let tools = serde_json::json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Get the current weather in a city.", "parameters": parameters}}]);
    let call_schema = serde_json::json!({"type": "object", "properties": {
        "name": {"const": "get_weather"}, "arguments": parameters},
        "required": ["name", "arguments"], "additionalProperties": false});
    let tok_env = LlamaSampler::llguidance_tok_env(&model);
    let factory = llguidance::ParserFactory::new_simple(&tok_env).unwrap();
    // Free text until the model opens a call; from there, a valid call.
    let lark = format!(
        "start: prefix call?\nprefix[stop=\"<tool_call>\"]: /(?s:.*)/\ncall: \"\\n\" payload \"\\n</tool_call>\"\npayload: %json {call_schema}\n"
    );
    for question in [
        "What's the weather in Paris right now, in celsius?",
        "Use the tool: what is the weather in Rome?",
        "Write a haiku about the sea.",
    ] {
        let messages = serde_json::json!([{"role": "user", "content": question}]);
        let prompt = template.render(&messages, Some(&tools), true).unwrap();
        let grammar = llguidance::api::TopLevelGrammar::from_lark(lark.clone());
        let matcher = llguidance::Matcher::new(factory.create_parser(grammar));
        assert!(!matcher.is_error(), "{:?}", matcher.get_error());
        let mut auto =
            LlamaSampler::chain_simple([LlamaSampler::from(matcher), LlamaSampler::greedy()]);
        let (text, n, _) = decode(&model, &prompt, &mut auto, 120);
        println!("{question}\n  auto ({n} tokens): {text:?}");
    }
}
