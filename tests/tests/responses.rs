//! The Responses API on the real models, greedy: the same answer as chat, events in OpenAI's
//! order, conversations continued by `previous_response_id` (from the prompt cache), function
//! calls over two turns on Qwen2.5-Coder, and every field ingle cannot honour refused by name.

use ingle::openai::{ChatCompletionRequest, ChatMessage, ResponseRequest};
use ingle::{Client, ErrorKind, TOOLS_MODEL};
use ingle_tests::{config, shared, tools_client, MODEL};
use serde_json::{json, Value};

fn request(body: Value) -> ResponseRequest {
    ResponseRequest::from_json(&body.to_string()).unwrap()
}

fn refused(body: Value) -> ingle::Error {
    match ResponseRequest::from_json(&body.to_string()) {
        Err(error) => error,
        Ok(request) => shared()
            .responses
            .create(&request)
            .expect_err("the request must be refused"),
    }
}

fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap())
        .map(|part| part["text"].as_str().unwrap())
        .collect()
}

#[test]
fn a_response_answers_as_chat_does() {
    let client = shared();
    let response = client
        .responses
        .create(&request(json!({
            "model": MODEL, "input": "Name the capital of France.",
            "instructions": "Answer in one sentence.", "temperature": 0, "max_output_tokens": 40,
        })))
        .unwrap();
    let chat = client
        .chat
        .completions
        .create(&ChatCompletionRequest {
            temperature: Some(0.0),
            max_tokens: Some(40),
            ..ChatCompletionRequest::new(
                MODEL,
                vec![
                    ChatMessage::system("Answer in one sentence."),
                    ChatMessage::user("Name the capital of France."),
                ],
            )
        })
        .unwrap();
    assert_eq!(output_text(&response), chat.choices[0].message.text());
    assert!(output_text(&response).contains("Paris"), "{response}");
    assert!(response["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["instructions"], "Answer in one sentence.");
    let message = &response["output"][0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"][0]["type"], "output_text");
    assert_eq!(message["content"][0]["annotations"], json!([]));
    let usage = &response["usage"];
    assert_eq!(usage["input_tokens"], chat.usage.prompt_tokens);
    assert_eq!(usage["output_tokens"], chat.usage.completion_tokens);
    assert_eq!(usage["total_tokens"], chat.usage.total_tokens);
    // Stored by default: retrieve gives it back, and its input items.
    let id = response["id"].as_str().unwrap();
    assert_eq!(client.responses.retrieve(id).unwrap(), response);
    let items = client.responses.input_items(id, None, None, None).unwrap();
    assert_eq!(items["object"], "list");
    assert_eq!(items["data"][0]["role"], "user");
    assert_eq!(
        items["data"][0]["content"][0],
        json!({"type": "input_text", "text": "Name the capital of France."})
    );
}

#[test]
fn the_stream_is_openais_events_in_order_and_ends_with_the_whole_response() {
    let client = shared();
    let body = json!({"model": MODEL, "input": "Count from one to five.", "temperature": 0,
                      "max_output_tokens": 30, "stream": true});
    let events: Vec<Value> = client
        .responses
        .stream(&request(body.clone()))
        .unwrap()
        .collect::<ingle::Result<_>>()
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], i, "{event}");
    }
    assert_eq!(
        kinds[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added"
        ]
    );
    let n = kinds.len();
    assert_eq!(
        kinds[n - 4..],
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert!(kinds[4..n - 4]
        .iter()
        .all(|k| *k == "response.output_text.delta"));
    assert_eq!(events[0]["response"]["status"], "in_progress");
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let last = &events[n - 1]["response"];
    assert_eq!(deltas, output_text(last));
    assert_eq!(events[n - 4]["text"], deltas.as_str());
    // The same as a whole create (greedy), and the same id throughout the stream.
    let mut whole = body;
    whole["stream"] = json!(false);
    let created = client.responses.create(&request(whole)).unwrap();
    assert_eq!(output_text(&created), deltas);
    assert_eq!(events[0]["response"]["id"], last["id"]);
}

#[test]
fn previous_response_id_continues_as_the_whole_history_does() {
    // A client of its own: no other test's request takes the sequence holding the first turn.
    let client = &Client::from_config(&config()).unwrap();
    let first = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "My name is Ada. Say hello.",
                                "temperature": 0, "max_output_tokens": 30}),
        ))
        .unwrap();
    let follow_up = "What is my name?";
    let second = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": follow_up, "temperature": 0,
                                "max_output_tokens": 30,
                                "previous_response_id": first["id"]}),
        ))
        .unwrap();
    // The same turn with the history sent whole, as a client without stored responses does.
    let whole = client
        .responses
        .create(&request(
            json!({"model": MODEL, "temperature": 0, "max_output_tokens": 30,
                                    "store": false, "input": [
                {"role": "user", "content": "My name is Ada. Say hello."},
                {"role": "assistant", "content": output_text(&first)},
                {"role": "user", "content": [{"type": "input_text", "text": follow_up}]},
            ]}),
        ))
        .unwrap();
    assert_eq!(output_text(&second), output_text(&whole));
    assert_eq!(second["previous_response_id"], first["id"]);
    // The second turn's prompt extends the first's: its KV came from the cache.
    let cached = second["usage"]["input_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached >= first["usage"]["input_tokens"].as_u64().unwrap() - 2,
        "{}",
        second["usage"]
    );
    // Not stored: cannot be continued or retrieved.
    let id = whole["id"].as_str().unwrap();
    assert_eq!(
        client.responses.retrieve(id).unwrap_err().kind,
        ErrorKind::NotFound
    );
    let error = refused(json!({"model": MODEL, "input": "Hi", "previous_response_id": id}));
    assert_eq!(error.kind, ErrorKind::NotFound);
    assert_eq!(error.param.as_deref(), Some("previous_response_id"));
    // Deleted: gone.
    let first_id = first["id"].as_str().unwrap();
    let deleted = client.responses.delete(first_id).unwrap();
    assert_eq!(
        deleted,
        json!({"id": first_id, "object": "response.deleted", "deleted": true})
    );
    assert_eq!(
        client.responses.retrieve(first_id).unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        client.responses.delete(first_id).unwrap_err().kind,
        ErrorKind::NotFound
    );
}

#[test]
fn max_output_tokens_makes_it_incomplete() {
    let response = shared()
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "Tell me a long story about a ship.",
                                "temperature": 0, "max_output_tokens": 5}),
        ))
        .unwrap();
    assert_eq!(response["status"], "incomplete");
    assert_eq!(
        response["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(response["usage"]["output_tokens"], 5);
    // The message that was cut says so.
    assert_eq!(response["output"][0]["status"], "incomplete");
}

#[test]
fn a_function_call_and_its_output_over_two_turns() {
    let client = tools_client();
    let tools = json!([{"type": "function", "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}]);
    let body = json!({"model": TOOLS_MODEL, "input": "What is the weather in Paris?",
                      "tools": tools, "tool_choice": "required", "temperature": 0,
                      "max_output_tokens": 100, "stream": true});
    let events: Vec<Value> = client
        .responses
        .stream(&request(body))
        .unwrap()
        .collect::<ingle::Result<_>>()
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"response.output_text.delta"), "{kinds:?}");
    let added = events
        .iter()
        .find(|e| e["type"] == "response.output_item.added")
        .unwrap();
    assert_eq!(added["item"]["type"], "function_call");
    assert_eq!(added["item"]["name"], "get_weather");
    let arguments: String = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let response = &events.last().unwrap()["response"];
    let call = &response["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["arguments"], arguments.as_str());
    let parsed: Value = serde_json::from_str(&arguments).unwrap();
    assert_eq!(parsed["city"], "Paris");
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    // The second turn: the call's output, continuing the stored response.
    let answer = client
        .responses
        .create(&request(
            json!({"model": TOOLS_MODEL, "tools": tools, "temperature": 0,
            "max_output_tokens": 60, "previous_response_id": response["id"],
            "input": [{"type": "function_call_output", "call_id": call["call_id"],
                       "output": "{\"temperature\": 21, \"sky\": \"sunny\"}"}]}),
        ))
        .unwrap();
    let text = output_text(&answer);
    assert!(text.contains("21"), "{answer}");
    // The same turn with the whole history, as the agent frameworks send it.
    let whole = client
        .responses
        .create(&request(
            json!({"model": TOOLS_MODEL, "tools": tools, "temperature": 0,
            "max_output_tokens": 60, "store": false, "input": [
                {"role": "user", "content": "What is the weather in Paris?"},
                {"type": "function_call", "call_id": call["call_id"], "name": "get_weather",
                 "arguments": call["arguments"]},
                {"type": "function_call_output", "call_id": call["call_id"],
                 "output": "{\"temperature\": 21, \"sky\": \"sunny\"}"}]}),
        ))
        .unwrap();
    assert_eq!(output_text(&whole), text);
}

#[test]
fn what_ingle_cannot_honour_is_refused_by_name() {
    let cases = [
        (
            json!({"model": MODEL, "input": "Hi", "tools": [{"type": "web_search"}]}),
            "tools[0].type",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "background": true}),
            "background",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "reasoning": {"effort": "high"}}),
            "reasoning.effort",
        ),
        (
            json!({"model": MODEL, "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "https://example.com/a.png"}]}]}),
            "input[0].content[0]",
        ),
        (
            json!({"model": MODEL, "input": [{"type": "web_search_call", "id": "ws_1"}]}),
            "input[0].type",
        ),
        (
            json!({"model": MODEL, "input": [{"role": "robot", "content": "Hi"}]}),
            "input[0].role",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "frobnicate": 1}),
            "frobnicate",
        ),
        (json!({"model": MODEL}), "input"),
        (json!({"input": "Hi"}), "model"),
        (
            json!({"model": MODEL, "input": "Hi", "max_output_tokens": 0}),
            "max_output_tokens",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "text": {"format": {"type": "xml"}}}),
            "text.format.type",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "tool_choice": {"type": "file_search"}}),
            "tool_choice",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "tool_choice": "required"}),
            "tool_choice",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "metadata": {"a": 1}}),
            "metadata.a",
        ),
        (json!({"model": "@nobody/nothing", "input": "Hi"}), "model"),
        (
            json!({"model": MODEL, "input": "Hi", "include": ["message.output_text.logprobs"]}),
            "include",
        ),
        // An item's `type` and `id` are strings: another type is not taken for a message, nor
        // an id silently replaced (the third probe).
        (
            json!({"model": MODEL, "input": [{"type": 7, "role": "user", "content": "Hi"}]}),
            "input[0].type",
        ),
        (
            json!({"model": MODEL, "input": [{"type": ["message"], "role": "user", "content": "Hi"}]}),
            "input[0].type",
        ),
        (
            json!({"model": MODEL, "input": [{"id": 12, "role": "user", "content": "Hi"}]}),
            "input[0].id",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "text": {"format": {"type": "json_schema",
                   "name": "a", "schema": {"type": "object"}, "strict": "yes"}}}),
            "text.format.strict",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "text": {"format": {"type": "json_schema",
                   "name": "a", "schema": {"type": "object"}, "description": 3}}}),
            "text.format.description",
        ),
        (
            json!({"model": MODEL, "input": "Hi", "tools": [{"type": "function", "name": "f",
                   "parameters": {"type": "object"}, "strict": "yes"}]}),
            "tools[0].strict",
        ),
    ];
    for (body, param) in cases {
        let error = refused(body.clone());
        assert_eq!(error.param.as_deref(), Some(param), "{body}: {error}");
        assert!(
            matches!(error.kind, ErrorKind::InvalidRequest | ErrorKind::NotFound),
            "{body}: {error}"
        );
    }
    // What SDKs send as a matter of course, asking for nothing ingle cannot do, is accepted.
    ResponseRequest::from_json(
        &json!({"model": MODEL, "input": "Hi", "include": [], "truncation": "disabled",
                "reasoning": {"effort": null}, "background": false, "top_logprobs": 0,
                "service_tier": "auto", "prompt_cache_key": "k", "metadata": {"user": "me"}})
        .to_string(),
    )
    .unwrap();
    // And what Codex CLI sends: no reasoning asked for, encrypted reasoning to replay (there is
    // none), its own bookkeeping.
    ResponseRequest::from_json(
        &json!({"model": MODEL, "input": "Hi", "reasoning": {}, "store": false,
                "include": ["reasoning.encrypted_content"], "parallel_tool_calls": true,
                "client_metadata": {"thread_id": "t", "turn_id": "u"}})
        .to_string(),
    )
    .unwrap();
}

/// A client on the default model whose responses are stored in `store`.
fn client_storing_in(store: &std::path::Path) -> Client {
    let mut config = config();
    config.responses.store = Some(store.to_path_buf());
    Client::from_config(&config).unwrap()
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ingle-responses-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn stored_responses_outlive_the_client_that_made_them() {
    let dir = scratch_dir("restart");
    let store = dir.join("nested").join("responses.sqlite3");
    let first = {
        let client = client_storing_in(&store);
        client
            .responses
            .create(&request(
                json!({"model": MODEL, "input": "My name is Ada. Say hello.",
                                    "temperature": 0, "max_output_tokens": 20}),
            ))
            .unwrap()
    };
    assert!(store.is_file(), "the store is made where it is configured");
    // A new client (as after a restart) reads it, continues it, pages its items, deletes it.
    let client = client_storing_in(&store);
    let id = first["id"].as_str().unwrap();
    assert_eq!(client.responses.retrieve(id).unwrap(), first);
    let items = client.responses.input_items(id, None, None, None).unwrap();
    assert_eq!(
        items["data"][0]["content"][0]["text"],
        "My name is Ada. Say hello."
    );
    let second = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "What is my name?",
                                "temperature": 0, "max_output_tokens": 20,
                                "previous_response_id": id}),
        ))
        .unwrap();
    // The history came from the store: the prompt holds the first turn whole.
    assert!(
        second["usage"]["input_tokens"].as_u64().unwrap()
            >= first["usage"]["total_tokens"].as_u64().unwrap(),
        "{second}"
    );
    client.responses.delete(id).unwrap();
    assert_eq!(
        client_storing_in(&store)
            .responses
            .retrieve(id)
            .unwrap_err()
            .kind,
        ErrorKind::NotFound
    );
    // The continuation holds its whole conversation: it outlives the response it continued.
    let third = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "Say it again.", "temperature": 0,
                                "max_output_tokens": 5, "previous_response_id": second["id"]}),
        ))
        .unwrap();
    assert_eq!(third["status"], "incomplete");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_memory_store_is_the_clients_own() {
    let memory = std::path::Path::new(":memory:");
    let client = client_storing_in(memory);
    let response = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "Hi", "max_output_tokens": 2}),
        ))
        .unwrap();
    let id = response["id"].as_str().unwrap();
    assert_eq!(client.responses.retrieve(id).unwrap(), response);
    let other = client_storing_in(memory);
    assert_eq!(
        other.responses.retrieve(id).unwrap_err().kind,
        ErrorKind::NotFound
    );
}

#[test]
fn a_store_that_cannot_open_is_said_before_generating() {
    let dir = scratch_dir("unopenable");
    // A file where the store's directory should be.
    std::fs::write(dir.join("file"), "").unwrap();
    let client = client_storing_in(&dir.join("file").join("responses.sqlite3"));
    let error = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "Hi", "max_output_tokens": 2}),
        ))
        .unwrap_err();
    assert!(
        error.message.contains("Cannot open the responses store")
            && error.message.contains("responses.sqlite3"),
        "{error}"
    );
    // Unstored responses need no store, and the client goes on.
    let unstored = client
        .responses
        .create(&request(
            json!({"model": MODEL, "input": "Hi", "max_output_tokens": 2,
                                "store": false}),
        ))
        .unwrap();
    assert_eq!(unstored["status"], "incomplete");
    // A directory given as the store, or a bound of 0, is a config error naming the field.
    for (tweak, field) in [
        (
            Box::new(|c: &mut ingle::Config| c.responses.store = Some(std::env::temp_dir()))
                as Box<dyn Fn(&mut ingle::Config)>,
            "responses.store",
        ),
        (
            Box::new(|c| c.responses.max_age_days = 0),
            "responses.max_age_days",
        ),
        (
            Box::new(|c| c.responses.max_megabytes = 0),
            "responses.max_megabytes",
        ),
    ] {
        let mut config = config();
        tweak(&mut config);
        let error = Client::from_config(&config).err().unwrap();
        assert_eq!(error.param.as_deref(), Some(field), "{error}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn input_tokens_counts_what_a_response_would_read() {
    let client = shared();
    let body = json!({"model": MODEL, "input": "Name the capital of France.",
                      "instructions": "Be brief.", "temperature": 0, "max_output_tokens": 4});
    let counted = client
        .responses
        .input_tokens(&request(body.clone()))
        .unwrap();
    assert_eq!(counted["object"], "response.input_tokens");
    let response = client.responses.create(&request(body)).unwrap();
    assert_eq!(counted["input_tokens"], response["usage"]["input_tokens"]);
    // With a stored conversation, counted whole; nothing new is stored.
    let continued = json!({"model": MODEL, "input": "And Spain?",
                           "previous_response_id": response["id"]});
    let more = client.responses.input_tokens(&request(continued)).unwrap();
    assert!(
        more["input_tokens"].as_u64().unwrap()
            > response["usage"]["total_tokens"].as_u64().unwrap(),
        "{more}"
    );
    let error = client
        .responses
        .input_tokens(&request(json!({"model": MODEL, "input": "Hi",
                                      "previous_response_id": "resp_gone"})))
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("previous_response_id"));
}
