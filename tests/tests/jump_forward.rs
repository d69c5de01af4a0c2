//! Jump-forward decoding of constrained output (docs/tools.md, "Jump-forward decoding"): the
//! tokens a grammar forces are decoded in one batch instead of sampled one by one. On
//! Qwen2.5-Coder 0.5B, greedy, against the same model with `jump_forward = false` (how ingle
//! decoded before): the same JSON, the same calls, fewer sampling steps.

use ingle::openai::{ChatCompletion, ChatCompletionRequest, ChatMessage};
use ingle::{Client, TOOLS_MODEL};
use ingle_tests::config;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The tools model twice: as configured (jump-forward on) and with it off.
const PLAIN: &str = "qwen-without-jump-forward";

fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let mut config = config();
        config.predictors.retain(|p| p.tag == TOOLS_MODEL);
        let mut plain = config
            .predictors
            .first()
            .unwrap_or_else(|| panic!("run `ingle pull {TOOLS_MODEL}`"))
            .clone()
            .jump_forward(false);
        plain.tag = PLAIN.into();
        Client::from_config(&config.predictor(plain)).unwrap()
    })
}

/// An extraction of 10 fields: a nested object, an enum, an array, numbers, a boolean.
fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "email": {"type": "string"},
            "height_m": {"type": "number"},
            "married": {"type": "boolean"},
            "role": {"type": "string", "enum": ["engineer", "doctor", "teacher", "artist"]},
            "languages": {"type": "array", "items": {"type": "string"}},
            "address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"},
                    "country": {"type": "string"}
                },
                "required": ["street", "city", "country"]
            },
            "children": {"type": "integer"},
            "salary_eur": {"type": "number"}
        },
        "required": ["name", "age", "email", "height_m", "married", "role", "languages",
                     "address", "children", "salary_eur"]
    })
}

const PERSON: &str = "Maria Keller, 41, is a doctor living at 12 Rosenweg in Basel, \
    Switzerland. Her email is maria.keller@example.ch. She is 1.68 m tall, married with two \
    children, speaks German, French and English, and earns 145000.50 EUR a year. Extract her \
    details as JSON.";

fn extraction(model: &str) -> ChatCompletionRequest {
    ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(200),
        response_format: Some(json!({"type": "json_schema",
            "json_schema": {"name": "Person", "schema": person_schema()}})),
        ..ChatCompletionRequest::new(model, vec![ChatMessage::user(PERSON)])
    }
}

fn create(request: &ChatCompletionRequest) -> ChatCompletion {
    client().chat.completions.create(request).unwrap()
}

fn forced(model: &str) -> u64 {
    client().metrics(model).unwrap().forced_tokens
}

fn content(completion: &ChatCompletion) -> Value {
    let text = completion.choices[0].message.content.as_deref().unwrap();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn an_extraction_is_the_same_json_with_fewer_steps() {
    let forced_before = forced(TOOLS_MODEL);
    let jumped = create(&extraction(TOOLS_MODEL));
    let forced_tokens = forced(TOOLS_MODEL) - forced_before;
    let plain = create(&extraction(PLAIN));
    assert_eq!(content(&jumped), content(&plain));
    assert_eq!(jumped.choices[0].finish_reason, "stop");
    let value = content(&jumped);
    assert_eq!(value["address"]["city"], "Basel", "{value}");
    assert_eq!(value["role"], "doctor", "{value}");
    // Keys, separators and braces are forced: a good part of the output.
    let tokens = jumped.usage.completion_tokens as u64;
    assert!(
        forced_tokens * 4 >= tokens,
        "{forced_tokens} of {tokens} forced"
    );
    assert_eq!(forced(PLAIN), 0);
    eprintln!(
        "{tokens} tokens ({forced_tokens} forced) against {} without jump-forward",
        plain.usage.completion_tokens
    );
}

#[test]
fn streamed_it_gives_the_same_text() {
    let whole = create(&extraction(TOOLS_MODEL));
    let mut text = String::new();
    let mut finish = None;
    for chunk in client()
        .chat
        .completions
        .stream(&extraction(TOOLS_MODEL))
        .unwrap()
    {
        let chunk = chunk.unwrap();
        for choice in &chunk.choices {
            text.push_str(choice.delta.content.as_deref().unwrap_or(""));
            finish = finish.or(choice.finish_reason.clone());
        }
    }
    assert_eq!(text, whole.choices[0].message.text());
    assert_eq!(finish.as_deref(), Some("stop"));
}

#[test]
#[ignore = "extended: the extraction, tool-call and streamed tests keep jump-forward in CI (scripts/test --extended rust)"]
fn forced_tokens_have_their_log_probabilities() {
    let request = ChatCompletionRequest {
        logprobs: Some(true),
        top_logprobs: Some(2),
        ..extraction(TOOLS_MODEL)
    };
    let completion = create(&request);
    // The same text as without logprobs (forced tokens wait one batch for them).
    assert_eq!(
        content(&completion),
        content(&create(&extraction(TOOLS_MODEL)))
    );
    let entries = completion.choices[0].logprobs.as_ref().unwrap()["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(entries.len() as u32, completion.usage.completion_tokens);
    let mut bytes = Vec::new();
    for entry in &entries {
        let logprob = entry["logprob"].as_f64().unwrap();
        assert!(logprob.is_finite() && logprob <= 0.0, "{entry}");
        assert_eq!(entry["top_logprobs"].as_array().unwrap().len(), 2);
        bytes.extend(
            entry["bytes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8),
        );
    }
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        completion.choices[0].message.text()
    );
}

#[test]
fn max_tokens_cuts_inside_a_forced_run() {
    // `{"name": "` is forced from the start: 3 tokens end in the middle of it or just after.
    for max_tokens in [1i64, 3] {
        let completion = create(&ChatCompletionRequest {
            max_tokens: Some(max_tokens),
            ..extraction(TOOLS_MODEL)
        });
        assert_eq!(completion.choices[0].finish_reason, "length");
        assert_eq!(completion.usage.completion_tokens as i64, max_tokens);
        let text = completion.choices[0].message.text();
        assert!(
            r#"{"name": ""#.starts_with(text) || text.starts_with(r#"{"name""#),
            "{text}"
        );
    }
}

#[test]
#[ignore = "extended: the extraction, tool-call and streamed tests keep jump-forward in CI (scripts/test --extended rust)"]
fn n_choices_under_greedy_are_the_same() {
    let completion = create(&ChatCompletionRequest {
        n: Some(2),
        ..extraction(TOOLS_MODEL)
    });
    assert_eq!(completion.choices.len(), 2);
    assert_eq!(
        completion.choices[0].message.content,
        completion.choices[1].message.content
    );
    content(&completion);
}

fn tools() -> Value {
    json!([{"type": "function", "function": {
        "name": "book_flight",
        "description": "Book a flight.",
        "parameters": {"type": "object", "properties": {
            "from": {"type": "string"},
            "to": {"type": "string"},
            "date": {"type": "string", "description": "YYYY-MM-DD"},
            "class": {"type": "string", "enum": ["economy", "business", "first"]},
            "passengers": {"type": "integer"}},
            "required": ["from", "to", "date", "class", "passengers"]}}},
        {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}])
}

fn booking(model: &str, tool_choice: Value) -> ChatCompletionRequest {
    ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(120),
        tools: Some(tools()),
        tool_choice: Some(tool_choice),
        ..ChatCompletionRequest::new(
            model,
            vec![ChatMessage::user(
                "Book 2 business class seats from Zurich to Lisbon on 2027-03-14.",
            )],
        )
    }
}

#[test]
fn tool_calls_are_the_same_forced_or_chosen() {
    let named = json!({"type": "function", "function": {"name": "book_flight"}});
    for choice in [named, json!("required"), json!("auto")] {
        let jumped = create(&booking(TOOLS_MODEL, choice.clone()));
        let plain = create(&booking(PLAIN, choice.clone()));
        let calls = |c: &ChatCompletion| {
            let calls = c.choices[0].message.tool_calls.clone().unwrap_or_default();
            calls
                .iter()
                .map(|call| {
                    let arguments: Value = serde_json::from_str(&call.function.arguments).unwrap();
                    (call.function.name.clone(), arguments)
                })
                .collect::<Vec<_>>()
        };
        let jumped_calls = calls(&jumped);
        assert_eq!(jumped_calls, calls(&plain), "tool_choice {choice}");
        assert_eq!(jumped_calls.len(), 1, "tool_choice {choice}: {jumped:?}");
        assert_eq!(jumped_calls[0].0, "book_flight");
        assert_eq!(jumped_calls[0].1["to"], "Lisbon", "{:?}", jumped_calls[0]);
        assert_eq!(jumped.choices[0].finish_reason, "tool_calls");
    }
}
