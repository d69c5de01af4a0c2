//! Benchmark: decode tokens/s of a chat completion constrained by a `json_schema` against the
//! same request unconstrained (same prompt, same model, greedy, interleaved rounds), as a ratio;
//! and the time to a complete streamed tool call (request to the chunk with finish_reason
//! `tool_calls`) and to its first delta. Qwen2.5-Coder-0.5B-Instruct. Run with
//! `scripts/bench tools` (release build). Figures, not a test.

use ingle::openai::{ChatCompletionRequest, ChatMessage};
use ingle::{Client, Config, TOOLS_MODEL};
use serde_json::json;
use std::time::Instant;

const ROUNDS: usize = 5;

/// (completion tokens, decode seconds: from the first content to the end) of one streamed run.
fn decode(client: &Client, request: &ChatCompletionRequest) -> (u32, f64, String) {
    let request = ChatCompletionRequest {
        stream_options: Some(ingle::openai::StreamOptions {
            include_usage: true,
            ..Default::default()
        }),
        ..request.clone()
    };
    let (mut first, mut text, mut tokens) = (None, String::new(), 0);
    for chunk in client.chat.completions.stream(&request).unwrap() {
        let chunk = chunk.unwrap();
        if let Some(usage) = chunk.usage {
            tokens = usage.completion_tokens;
        }
        for choice in &chunk.choices {
            if let Some(content) = choice.delta.content.as_deref().filter(|c| !c.is_empty()) {
                first.get_or_insert_with(Instant::now);
                text.push_str(content);
            }
        }
    }
    let seconds = first.map_or(f64::NAN, |t| t.elapsed().as_secs_f64());
    (tokens, seconds, text)
}

fn main() {
    let client = Client::from_config(&Config::default()).unwrap();
    let question = "Describe three European capitals: for each its name, country, population \
                    and a one-sentence description.";
    let free = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(400),
        ..ChatCompletionRequest::new(TOOLS_MODEL, vec![ChatMessage::user(question)])
    };
    let schema = json!({"type": "object", "properties": {"capitals": {"type": "array",
        "minItems": 3, "maxItems": 3, "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "country": {"type": "string"},
            "population": {"type": "integer", "minimum": 0, "maximum": 100000000},
            "description": {"type": "string", "maxLength": 200}},
            "required": ["name", "country", "population", "description"],
            "additionalProperties": false}}},
        "required": ["capitals"], "additionalProperties": false});
    let constrained = ChatCompletionRequest {
        response_format: Some(json!({"type": "json_schema",
            "json_schema": {"name": "capitals", "schema": schema, "strict": true}})),
        ..free.clone()
    };
    decode(&client, &free); // warm-up: load, first allocations, token trie
    decode(&client, &constrained);
    let (mut free_tps, mut json_tps) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (n, s, _) = decode(&client, &free);
        free_tps.push((n - 1) as f64 / s);
        let (m, t, text) = decode(&client, &constrained);
        json_tps.push((m - 1) as f64 / t);
        if round == 0 {
            let parsed: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(parsed["capitals"].as_array().map(Vec::len), Some(3));
            println!("unconstrained: {n} tokens; json_schema: {m} tokens (valid, 3 capitals)");
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (f, j) = (median(&mut free_tps), median(&mut json_tps));
    println!(
        "decode tok/s (median of {ROUNDS}): unconstrained {f:.1}, json_schema {j:.1}, ratio {:.2}x (goal >= 0.9x)",
        j / f
    );

    let tool = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(120),
        tools: Some(
            json!([{"type": "function", "function": {"name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                "required": ["city"]}}}]),
        ),
        ..ChatCompletionRequest::new(
            TOOLS_MODEL,
            vec![ChatMessage::user(
                "What's the weather in Paris right now, in celsius?",
            )],
        )
    };
    for (label, choice) in [("auto", None), ("required", Some(json!("required")))] {
        let request = ChatCompletionRequest {
            tool_choice: choice,
            ..tool.clone()
        };
        let (mut firsts, mut wholes) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let start = Instant::now();
            let mut first = None;
            for chunk in client.chat.completions.stream(&request).unwrap() {
                let chunk = chunk.unwrap();
                let Some(choice) = chunk.choices.first() else {
                    continue;
                };
                if choice.delta.tool_calls.is_some() && first.is_none() {
                    first = Some(start.elapsed().as_secs_f64());
                }
                if choice.finish_reason.as_deref() == Some("tool_calls") {
                    wholes.push(start.elapsed().as_secs_f64());
                }
            }
            firsts.push(first.expect("a streamed tool call"));
        }
        println!(
            "tool call ({label}): first delta {:.3} s, complete call {:.3} s (median of {ROUNDS})",
            median(&mut firsts),
            median(&mut wholes)
        );
    }
}
