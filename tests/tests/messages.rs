//! Anthropic's Messages API over the chat models: create, the stream's events, tools over two
//! turns, count_tokens, and the errors, through the method table as every door calls it.

use ingle::methods::method;
use ingle::ErrorKind;
use ingle_tests::{shared, MODEL};
use serde_json::{json, Value as Json};

fn call(name: &str, request: &Json) -> ingle::Result<Json> {
    let answer = method(name)?.call(shared(), &request.to_string(), None)?;
    Ok(serde_json::from_str(&answer.into_text()?).unwrap())
}

fn events(request: &Json) -> Vec<Json> {
    let answer = method("messages.stream")
        .unwrap()
        .call(shared(), &request.to_string(), None)
        .unwrap();
    answer
        .into_stream()
        .unwrap()
        .map(|text| serde_json::from_str(&text.unwrap()).unwrap())
        .collect()
}

fn capital() -> Json {
    json!({"model": MODEL, "max_tokens": 16, "temperature": 0,
           "system": "Answer in one short sentence.",
           "messages": [{"role": "user", "content": "Name the capital of France."}]})
}

#[test]
fn a_message_and_its_stream_agree() {
    let message = call("messages.create", &capital()).unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    let text = message["content"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(message["content"][0]["type"], "text");
    assert!(text.contains("Paris"), "{message}");
    assert!(["end_turn", "max_tokens"].contains(&message["stop_reason"].as_str().unwrap()));
    let input_tokens = message["usage"]["input_tokens"].as_u64().unwrap();
    assert!(input_tokens > 0 && message["usage"]["output_tokens"].as_u64().unwrap() > 0);

    let events = events(&capital());
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[..3], ["message_start", "ping", "content_block_start"]);
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(kinds[3..kinds.len() - 3]
        .iter()
        .all(|k| *k == "content_block_delta"));
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .map(|e| e["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, text, "greedy: the same words whole and streamed");
    let end = &events[events.len() - 2];
    assert_eq!(end["delta"]["stop_reason"], message["stop_reason"]);
    assert_eq!(
        end["usage"]["output_tokens"],
        message["usage"]["output_tokens"]
    );

    // Anthropic's `input_tokens` leaves out what the prompt cache read: the prompt is the sum.
    let prompt = input_tokens
        + message["usage"]["cache_read_input_tokens"]
            .as_u64()
            .unwrap();
    let counted = call("messages.count_tokens", &capital()).unwrap();
    assert_eq!(counted, json!({ "input_tokens": prompt }));
}

#[test]
fn tools_over_two_turns() {
    let weather = json!([{"name": "get_weather", "description": "Get the current weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]);
    let question = json!({"role": "user", "content": "What's the weather in Paris right now?"});
    let first = json!({"model": ingle::TOOLS_MODEL, "max_tokens": 64, "temperature": 0,
        "tools": weather, "tool_choice": {"type": "any"}, "messages": [question]});
    let message = call("messages.create", &first).unwrap();
    assert_eq!(message["stop_reason"], "tool_use", "{message}");
    let call_block = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .unwrap();
    assert_eq!(call_block["name"], "get_weather");
    assert!(call_block["input"]["city"]
        .as_str()
        .unwrap()
        .contains("Paris"));

    // Streamed, the call is a tool_use block whose input comes as input_json_delta.
    let streamed = events(&first);
    let start = streamed
        .iter()
        .find(|e| e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use")
        .unwrap();
    assert_eq!(start["content_block"]["name"], "get_weather");
    let input: String = streamed
        .iter()
        .filter(|e| e["delta"]["type"] == "input_json_delta")
        .map(|e| e["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Json>(&input).unwrap(),
        call_block["input"]
    );

    let second = json!({"model": ingle::TOOLS_MODEL, "max_tokens": 48, "temperature": 0,
        "tools": weather, "messages": [
            question,
            {"role": "assistant", "content": message["content"]},
            // Qwen 0.5B, greedy, answers a bare tool result by calling again; asked, it answers.
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_block["id"],
                "content": "The weather in Paris is sunny, 21 degrees celsius."},
                {"type": "text", "text": "Thanks. So, what is the weather in Paris? Answer in plain words."}]}]});
    let answer = call("messages.create", &second).unwrap();
    let text = answer["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(text.contains("sunny") || text.contains("21"), "{answer}");
}

#[test]
fn bad_requests_name_the_field() {
    let cases = [
        (
            json!({"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}),
            "max_tokens",
        ),
        (
            json!({"model": MODEL, "max_tokens": 5, "messages": []}),
            "messages",
        ),
        (
            json!({"model": MODEL, "max_tokens": 5, "thinking": {"type": "enabled", "budget_tokens": 2000},
                "messages": [{"role": "user", "content": "Hi"}]}),
            "thinking",
        ),
        (
            json!({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}]}]}),
            "messages[0].content[0]",
        ),
    ];
    for (request, param) in cases {
        let error = call("messages.create", &request).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{request}");
        assert_eq!(error.param.as_deref(), Some(param), "{request}: {error:?}");
    }
}
