//! What an agent loop needs of one turn, on the real models, greedy, through chat (whole and
//! streamed) and the Responses API (whole and streamed): `parallel_tool_calls: false` is one
//! call whatever form the model writes it in; a call repeated within a turn ends it; calls are
//! never broken into fragments; an object schema gets the properties it lists only.
//! docs/tools.md ("A turn").

use ingle::openai::{ChatCompletionRequest, ResponseRequest};
use ingle::TOOLS_MODEL;
use ingle_tests::{shared, tools_client};
use serde_json::{json, Value};

/// The weather tool as openai-agents sends it (a `@function_tool`): pydantic's schema.
fn agents_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": {"properties": {"city": {"title": "City", "type": "string"}},
                       "required": ["city"], "title": "get_weather_args", "type": "object",
                       "additionalProperties": false}}})
}

/// A chat request from JSON, as a client sends it.
fn chat(body: Value) -> ChatCompletionRequest {
    ChatCompletionRequest::from_json(&body.to_string()).unwrap()
}

/// The calls and content of a chat request, whole and streamed (which must agree): each call as
/// `(name, arguments)`, the content, the finish reason and the completion tokens.
fn both_ways(body: Value) -> (Vec<(String, String)>, String, String, u32) {
    let client = tools_client();
    let whole = client.chat.completions.create(&chat(body.clone())).unwrap();
    let choice = &whole.choices[0];
    let calls: Vec<(String, String)> = choice
        .message
        .tool_calls
        .iter()
        .flatten()
        .map(|c| (c.function.name.clone(), c.function.arguments.clone()))
        .collect();
    let content = choice.message.content.clone().unwrap_or_default();
    let (mut streamed, mut text, mut finish) =
        (Vec::<(String, String)>::new(), String::new(), None);
    for chunk in client.chat.completions.stream(&chat(body)).unwrap() {
        let chunk = chunk.unwrap();
        let Some(choice) = chunk.choices.first() else {
            continue;
        };
        text.push_str(choice.delta.content.as_deref().unwrap_or(""));
        for delta in choice.delta.tool_calls.iter().flatten() {
            let index = delta.index as usize;
            if index == streamed.len() {
                streamed.push(Default::default());
            }
            let function = delta.function.clone().unwrap_or_default();
            streamed[index]
                .0
                .push_str(&function.name.unwrap_or_default());
            streamed[index]
                .1
                .push_str(&function.arguments.unwrap_or_default());
        }
        finish = choice.finish_reason.clone().or(finish);
    }
    assert_eq!(streamed, calls, "streamed calls");
    assert_eq!(text, content, "streamed content");
    assert_eq!(finish.as_deref(), Some(choice.finish_reason.as_str()));
    let tokens = whole.usage.completion_tokens;
    (calls, content, choice.finish_reason.clone(), tokens)
}

fn paris(arguments: &str) -> bool {
    serde_json::from_str::<Value>(arguments).unwrap()["city"] == "Paris"
}

#[test]
fn parallel_tool_calls_false_is_one_call_when_the_model_writes_bare_json() {
    // Greedy, Qwen 0.5B writes this call as a bare JSON object (no tags, so no grammar), then
    // echoes the tool's schema as another object: 36 tokens, the echo as content.
    let body = |parallel: bool| {
        json!({"model": TOOLS_MODEL, "temperature": 0, "parallel_tool_calls": parallel,
               "tools": [agents_tool()], "tool_choice": "auto",
               "messages": [{"role": "system", "content": "You answer questions about the weather."},
                            {"role": "user", "content": "What is the weather in Paris?"}]})
    };
    for parallel in [false, true] {
        let (calls, content, finish, tokens) = both_ways(body(parallel));
        assert_eq!(calls.len(), 1, "parallel {parallel}: {calls:?}");
        assert!(paris(&calls[0].1), "{calls:?}");
        // Text after the calls ends the turn, with or without parallel calls.
        assert_eq!(content, "", "parallel {parallel}");
        assert_eq!(finish, "tool_calls");
        assert!(tokens < 30, "the turn ends at the call: {tokens} tokens");
    }
}

/// A conversation whose first turn called the tool three times alike: asked again, Qwen 0.5B,
/// made to call (`required`), writes the same call over and over.
fn repeating_conversation(allow: bool) -> Value {
    let call = |i: u32| {
        json!({"id": format!("call_{i}"), "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}})
    };
    let mut messages = vec![
        json!({"role": "user", "content": "What's the weather in Paris?"}),
        json!({"role": "assistant", "content": null, "tool_calls": [call(1), call(2), call(3)]}),
    ];
    for i in 1..=3 {
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"),
                             "content": "Sunny, 21 degrees."}));
    }
    messages.push(json!({"role": "user", "content": "What's the weather in Rome?"}));
    json!({"model": TOOLS_MODEL, "temperature": 0, "max_tokens": 200, "messages": messages,
           "tools": [agents_tool()], "tool_choice": "required",
           "allow_repeated_tool_calls": allow})
}

#[test]
fn a_call_repeated_within_a_turn_ends_it_unless_allowed() {
    let (calls, content, finish, _) = both_ways(repeating_conversation(false));
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].1).unwrap()["city"],
        "Rome"
    );
    assert_eq!((content.as_str(), finish.as_str()), ("", "tool_calls"));

    // Allowed, the model repeats the call until max_tokens.
    let (calls, _, finish, tokens) = both_ways(repeating_conversation(true));
    assert!(calls.len() >= 5, "{calls:?}");
    // The last may be cut by max_tokens: the same call's start.
    let (last, whole) = calls.split_last().unwrap();
    assert!(whole.iter().all(|c| c == &calls[0]), "{calls:?}");
    assert!(
        last.0 == calls[0].0 && calls[0].1.starts_with(&last.1),
        "{calls:?}"
    );
    assert_eq!((finish.as_str(), tokens), ("length", 200));

    // Not a boolean: refused by name.
    let mut bad = repeating_conversation(false);
    bad["allow_repeated_tool_calls"] = json!("yes");
    let error = ChatCompletionRequest::from_json(&bad.to_string()).unwrap_err();
    assert_eq!(
        error.param.as_deref(),
        Some("allow_repeated_tool_calls"),
        "{error}"
    );
}

/// A Responses request with the weather tool in the Responses shape.
fn responses_body(stream: bool) -> Value {
    let tool = agents_tool()["function"].clone();
    json!({"model": TOOLS_MODEL, "temperature": 0, "stream": stream, "store": false,
           "instructions": "You answer questions about the weather.",
           "input": "What is the weather in Paris?", "tool_choice": "auto",
           "tools": [{"type": "function", "name": tool["name"], "description": tool["description"],
                      "parameters": tool["parameters"], "strict": true}]})
}

/// The one output item: a whole call to the weather tool.
fn check_one_call(output: &Value) {
    let items = output.as_array().unwrap();
    assert_eq!(items.len(), 1, "{output:#}");
    assert_eq!(items[0]["type"], "function_call");
    assert_eq!(items[0]["name"], "get_weather");
    assert_eq!(items[0]["status"], "completed");
    assert!(paris(items[0]["arguments"].as_str().unwrap()), "{output:#}");
}

#[test]
fn responses_keep_each_call_whole() {
    // Before, the same turn gave 4 items: the call's arguments split in two function_call
    // items (the second without a name) around a message holding "\n", and the echo.
    let request = |stream| ResponseRequest::from_json(&responses_body(stream).to_string()).unwrap();
    let response = shared().responses.create(&request(false)).unwrap();
    check_one_call(&response["output"]);
    let events: Vec<Value> = shared()
        .responses
        .stream(&request(true))
        .unwrap()
        .collect::<ingle::Result<_>>()
        .unwrap();
    for event in &events {
        let item = &event["item"];
        if item["type"] == "function_call" {
            assert_eq!(item["name"], "get_weather", "{event}");
        }
    }
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| &e["item"])
        .collect();
    check_one_call(&json!(done));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    check_one_call(&last["response"]["output"]);
}

#[test]
fn an_object_schema_gets_the_properties_it_lists_unless_it_says_otherwise() {
    // instructor's Mode.JSON_SCHEMA with pydantic's `Person(name: str, age: int)`, on SmolLM2.
    let person = |extra: Value| {
        let mut schema = json!({"properties": {"name": {"title": "Name", "type": "string"},
                                               "age": {"title": "Age", "type": "integer"}},
                                "required": ["name", "age"], "title": "Person", "type": "object"});
        if let Some(extra) = extra.as_object() {
            schema.as_object_mut().unwrap().extend(extra.clone());
        }
        chat(
            json!({"model": ingle_tests::MODEL, "temperature": 0, "max_tokens": 60,
                    "messages": [{"role": "user", "content": "Alice is 30 years old and lives in Paris. Extract her, with her city."}],
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "Person", "schema": schema}}}),
        )
    };
    let client = shared();
    let completion = client.chat.completions.create(&person(json!({}))).unwrap();
    let choice = &completion.choices[0];
    assert_eq!(choice.finish_reason, "stop");
    let value: Value = serde_json::from_str(choice.message.content.as_deref().unwrap()).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "age"], "{value}");

    // Said open, it stays open: SmolLM2 adds the city the prompt asks for.
    let open = json!({"additionalProperties": true});
    let completion = client.chat.completions.create(&person(open)).unwrap();
    let content = completion.choices[0].message.content.as_deref().unwrap();
    let value: Value = serde_json::from_str(content).unwrap();
    assert!(value.as_object().unwrap().len() > 2, "{content}");
}

#[test]
fn a_call_answered_since_the_user_spoke_made_again_is_answered_instead() {
    // An agent's second request: the call made, its result sent back. Qwen 0.5B, greedy,
    // calls the tool again with the same arguments (then echoes the tool's schema as JSON).
    let body = |allow: bool, parallel: bool| {
        json!({"model": TOOLS_MODEL, "temperature": 0, "max_tokens": 80,
               "tools": [agents_tool()], "allow_repeated_tool_calls": allow,
               "parallel_tool_calls": parallel,
               "messages": [
                   {"role": "system", "content": "You answer questions about the weather."},
                   {"role": "user", "content": "What's the weather in Paris right now?"},
                   {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                    "type": "function", "function": {"name": "get_weather",
                                                     "arguments": "{\"city\": \"Paris\"}"}}]},
                   {"role": "tool", "tool_call_id": "call_1",
                    "content": "The weather in Paris is sunny, 21 degrees celsius."}]})
    };
    let (calls, _, finish, _) = both_ways(body(true, false));
    assert_eq!(finish, "tool_calls", "the model's own choice: {calls:?}");
    assert!(calls.len() == 1 && paris(&calls[0].1), "{calls:?}");

    // By default the repeat is dropped; with one call allowed, that ends a turn of nothing
    // else, which is generated again without tools, its exchanges as plain turns: what the
    // model writes then is the reply, in words.
    let (calls, content, finish, tokens) = both_ways(body(false, false));
    assert_eq!(calls, [], "{content}");
    assert_eq!(finish, "stop");
    assert!(readable(&content) && content.contains("sunny"), "{content}");
    // The answer's own tokens, plus the turn given up (at least its dropped call).
    let request: ingle::openai::TokenizeRequest =
        serde_json::from_value(json!({"model": TOOLS_MODEL, "content": content})).unwrap();
    let answer_tokens = match tools_client().tokens.tokenize(&request).unwrap().tokens {
        ingle::openai::TokenList::Ids(ids) => ids.len() as u32,
        other => panic!("{other:?}"),
    };
    assert!(
        tokens > answer_tokens + 5,
        "usage counts the turn given up: {tokens} vs {answer_tokens}"
    );

    // With parallel calls, the same: JSON after the dropped call is no reply either.
    let (calls, content, finish, _) = both_ways(body(false, true));
    assert_eq!((calls.len(), finish.as_str()), (0, "stop"), "{calls:?}");
    assert!(
        !content.contains("\"Paris\"") && readable(&content),
        "the repeat is never shown: {content}"
    );
}

/// Text a user can read: not empty, and not a call or a fragment of one (the 0.5B answered a
/// tool result with `""`, `{"name":`, or the call again as JSON, before its exchanges were
/// rendered as plain turns).
fn readable(content: &str) -> bool {
    let text = content.trim();
    text.chars().filter(|c| c.is_alphabetic()).count() >= 8
        && !text.starts_with(['{', '[', '<'])
        && !text.contains("\"name\"")
}

#[test]
fn the_answer_to_a_tool_result_is_words_streamed_and_whole() {
    // The case of the report: the tools still offered and nothing else said, temperature 0.
    let body = json!({"model": TOOLS_MODEL, "temperature": 0, "tools": [agents_tool()],
        "messages": [
            {"role": "user", "content": "What's the weather in Lisbon?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
             "type": "function", "function": {"name": "get_weather",
                                              "arguments": "{\"city\": \"Lisbon\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}]});
    let (calls, content, finish, _) = both_ways(body);
    assert_eq!((calls.len(), finish.as_str()), (0, "stop"), "{calls:?}");
    assert!(readable(&content) && content.contains("21"), "{content:?}");
}

#[test]
fn a_named_tool_choice_is_one_call_of_it() {
    // Greedy, the 0.5B forced to `get_time` on "Tell me a joke." called it for six time zones.
    let get_time = json!({"type": "function", "function": {
        "name": "get_time", "description": "Get the current time in a timezone.",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}},
                       "required": ["timezone"]}}});
    let body = json!({"model": TOOLS_MODEL, "temperature": 0, "max_tokens": 120,
        "tools": [agents_tool(), get_time],
        "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        "messages": [{"role": "user", "content": "Tell me a joke."}]});
    let (calls, content, finish, _) = both_ways(body);
    assert_eq!(
        (calls.len(), finish.as_str()),
        (1, "tool_calls"),
        "{calls:?}"
    );
    assert_eq!((calls[0].0.as_str(), content.as_str()), ("get_time", ""));
}
