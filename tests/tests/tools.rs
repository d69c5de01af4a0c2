//! Tool calls, structured output, logprobs, logit_bias and n on the real models: Qwen2.5-Coder
//! 0.5B (which can call tools) and SmolLM2 (which cannot), greedy.

use ingle::openai::{ChatCompletionRequest, ChatMessage, FunctionCall, ToolCall};
use ingle::{ErrorKind, TOOLS_MODEL};
use ingle_tests::{config, france, shared, tools_client};
use llama_cpp_2::model::{params::LlamaModelParams, LlamaModel};
use serde_json::{json, Value};

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}}])
}

fn request(question: &str) -> ChatCompletionRequest {
    ChatCompletionRequest {
        temperature: Some(0.0),
        tools: Some(weather_tool()),
        max_tokens: Some(120),
        ..ChatCompletionRequest::new(TOOLS_MODEL, vec![ChatMessage::user(question)])
    }
}

const PARIS: &str = "What's the weather in Paris right now, in celsius?";
const HAIKU: &str = "Write a haiku about the sea.";

/// The call's arguments, checked against the weather tool's schema.
fn weather_arguments(call: &ToolCall) -> Value {
    assert_eq!(call.kind, "function");
    assert_eq!(call.function.name, "get_weather");
    assert!(call.id.starts_with("call_"), "{}", call.id);
    let arguments: Value = serde_json::from_str(&call.function.arguments).unwrap();
    assert!(arguments["city"].is_string(), "{arguments}");
    if let Some(unit) = arguments.get("unit") {
        assert!(unit == "celsius" || unit == "fahrenheit", "{arguments}");
    }
    arguments
}

#[test]
fn the_weather_question_calls_the_tool() {
    let completion = tools_client()
        .chat
        .completions
        .create(&request(PARIS))
        .unwrap();
    let choice = &completion.choices[0];
    assert_eq!(choice.finish_reason, "tool_calls");
    assert_eq!(choice.message.content, None);
    let calls = choice.message.tool_calls.as_ref().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(weather_arguments(&calls[0])["city"], "Paris");
}

#[test]
fn streamed_deltas_reassemble_to_the_same_call() {
    let whole = tools_client()
        .chat
        .completions
        .create(&request(PARIS))
        .unwrap();
    let whole = &whole.choices[0].message.tool_calls.as_ref().unwrap()[0];
    let (mut name, mut arguments, mut ids, mut finish) = (None, String::new(), Vec::new(), None);
    for chunk in tools_client()
        .chat
        .completions
        .stream(&request(PARIS))
        .unwrap()
    {
        let chunk = chunk.unwrap();
        let Some(choice) = chunk.choices.first() else {
            continue;
        };
        assert_eq!(
            choice.delta.content.as_deref().unwrap_or(""),
            "",
            "no markup in content"
        );
        let deltas = choice.delta.tool_calls.as_deref().unwrap_or_default();
        // One entry per call index per chunk, as OpenAI streams them: clients that merge by
        // index (LlamaIndex, instructor, the SDK's stream helper) read only one.
        assert!(
            deltas.len() <= 1,
            "two deltas for one call in a chunk: {deltas:?}"
        );
        for delta in deltas {
            assert_eq!(delta.index, 0);
            let function = delta.function.as_ref().unwrap();
            if let Some(id) = &delta.id {
                assert!(name.is_none(), "id, type and name come once");
                ids.push(id.clone());
                assert_eq!(delta.kind.as_deref(), Some("function"));
                name = function.name.clone();
            } else {
                assert!(function.name.is_none() && delta.kind.is_none());
            }
            arguments.push_str(function.arguments.as_deref().unwrap_or(""));
        }
        finish = choice.finish_reason.clone().or(finish);
    }
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(ids.len(), 1);
    assert_eq!(name.as_deref(), Some("get_weather"));
    let streamed: Value = serde_json::from_str(&arguments).unwrap();
    assert_eq!(
        streamed,
        serde_json::from_str::<Value>(&whole.function.arguments).unwrap()
    );
}

#[test]
fn required_and_a_named_choice_call_even_for_a_haiku_and_none_never_calls() {
    for choice in [
        json!("required"),
        json!({"type": "function", "function": {"name": "get_weather"}}),
    ] {
        let completion = tools_client()
            .chat
            .completions
            .create(&ChatCompletionRequest {
                tool_choice: Some(choice.clone()),
                // Forced to call for a haiku, a 0.5B model would go on calling until max_tokens.
                parallel_tool_calls: Some(false),
                ..request(HAIKU)
            })
            .unwrap();
        let message = &completion.choices[0].message;
        let calls = message
            .tool_calls
            .as_ref()
            .unwrap_or_else(|| panic!("{choice}: {message:?}"));
        assert_eq!(calls.len(), 1, "{calls:?}");
        weather_arguments(&calls[0]);
        assert_eq!(completion.choices[0].finish_reason, "tool_calls");
    }
    let completion = tools_client()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            tool_choice: Some(json!("none")),
            ..request(PARIS)
        })
        .unwrap();
    let message = &completion.choices[0].message;
    assert!(message.tool_calls.is_none(), "{message:?}");
    assert!(!message.text().is_empty());
    assert!(!message.text().contains("tool_call"), "{}", message.text());
}

#[test]
fn two_parallel_calls() {
    let completion = tools_client()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            tool_choice: Some(json!("required")),
            max_tokens: Some(200),
            ..request(
                "What's the weather in Paris and in Tokyo? Call get_weather once for each city.",
            )
        })
        .unwrap();
    let calls = completion.choices[0].message.tool_calls.clone().unwrap();
    let cities: Vec<Value> = calls
        .iter()
        .map(|c| weather_arguments(c)["city"].clone())
        .collect();
    assert_eq!(cities, [json!("Paris"), json!("Tokyo")], "{calls:?}");
    assert_ne!(calls[0].id, calls[1].id);
}

#[test]
fn a_tool_result_round_trip_ends_in_a_text_answer() {
    let call = ToolCall {
        id: "call_1".into(),
        kind: "function".into(),
        function: FunctionCall {
            name: "get_weather".into(),
            arguments: r#"{"city": "Paris", "unit": "celsius"}"#.into(),
        },
    };
    let mut assistant = ChatMessage::assistant("");
    assistant.content = None;
    assistant.tool_calls = Some(vec![call]);
    let mut result = ChatMessage::new("tool", "18 degrees Celsius, sunny");
    result.tool_call_id = Some("call_1".into());
    // Qwen 0.5B, greedy, answers a bare tool result by calling again; asked, it answers.
    let follow_up = "Thanks. So, what is the weather in Paris? Answer in plain words.";
    let completion = tools_client()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            messages: vec![
                ChatMessage::user("What's the weather in Paris?"),
                assistant,
                result,
                ChatMessage::user(follow_up),
            ],
            ..request(PARIS)
        })
        .unwrap();
    let choice = &completion.choices[0];
    assert_eq!(choice.finish_reason, "stop", "{:?}", choice.message);
    assert!(choice.message.tool_calls.is_none());
    assert!(
        choice.message.text().contains("18"),
        "{}",
        choice.message.text()
    );
}

#[test]
fn a_model_whose_template_has_no_tools_refuses_them() {
    let err = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            tools: Some(weather_tool()),
            ..france()
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
    assert_eq!(err.param.as_deref(), Some("tools"), "{err}");
    // Nor a history with tool calls: the template dropped them, and the answer was a 200.
    let history: Vec<ChatMessage> = serde_json::from_value(json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
    ]))
    .unwrap();
    let err = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            messages: history,
            max_tokens: Some(4),
            ..france()
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
    assert_eq!(
        err.param.as_deref(),
        Some("messages[1].tool_calls"),
        "{err}"
    );
}

#[test]
fn json_schema_output_is_enforced_and_unsupported_keywords_are_refused() {
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "population": {"type": "integer", "minimum": 0, "maximum": 100000000}},
        "required": ["city", "population"], "additionalProperties": false});
    let mut request = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(100),
        response_format: Some(json!({"type": "json_schema",
            "json_schema": {"name": "city", "schema": schema, "strict": true}})),
        ..ChatCompletionRequest::new(TOOLS_MODEL, vec![ChatMessage::user("Tell me about Paris.")])
    };
    let completion = tools_client().chat.completions.create(&request).unwrap();
    let value: Value = serde_json::from_str(completion.choices[0].message.text()).unwrap();
    assert!(
        value["city"].is_string() && value["population"].as_u64().is_some(),
        "{value}"
    );
    assert_eq!(value.as_object().unwrap().len(), 2);
    request.response_format = Some(json!({"type": "json_schema", "json_schema": {"name": "x",
        "schema": {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}}}}));
    let err = tools_client()
        .chat
        .completions
        .create(&request)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
    assert_eq!(
        err.param.as_deref(),
        Some("response_format.json_schema.schema")
    );
    assert!(err.message.contains("uniqueItems"), "{err}");
}

#[test]
fn logprobs_under_greedy_put_the_chosen_token_first() {
    let request = ChatCompletionRequest {
        logprobs: Some(true),
        top_logprobs: Some(3),
        max_tokens: Some(8),
        ..france()
    };
    let completion = shared().chat.completions.create(&request).unwrap();
    let choice = &completion.choices[0];
    let content = choice.logprobs.as_ref().unwrap()["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(content.len() as u32, completion.usage.completion_tokens);
    let mut text = Vec::new();
    for entry in &content {
        let top = entry["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 3);
        assert_eq!(top[0]["token"], entry["token"]);
        assert!(entry["logprob"].as_f64().unwrap() <= 0.0);
        text.extend(
            entry["bytes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8),
        );
    }
    assert_eq!(String::from_utf8(text).unwrap(), choice.message.text());
}

#[test]
fn logit_bias_bans_a_token_and_n_gives_choices() {
    let first = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            logprobs: Some(true),
            max_tokens: Some(4),
            ..france()
        })
        .unwrap();
    let first_text = first.choices[0].message.text().to_string();
    // The id of the first token: the one whose text starts the reply.
    let backend = ingle::backends::llama::backend().unwrap();
    let config = config();
    let path = config.model_path(&config.predictors[0]);
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();
    let first_token = first.choices[0].logprobs.as_ref().unwrap()["content"][0]["token"].clone();
    let token = model
        .vocab()
        .tokenize(first_token.as_str().unwrap().as_bytes(), false, false)[0]
        .0;
    let banned = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            logit_bias: Some(serde_json::from_value(json!({token.to_string(): -100})).unwrap()),
            max_tokens: Some(4),
            ..france()
        })
        .unwrap();
    assert_ne!(banned.choices[0].message.text(), first_text);
    let err = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            logit_bias: Some(serde_json::from_value(json!({"99999999": 5})).unwrap()),
            ..france()
        })
        .unwrap_err();
    assert_eq!(err.param.as_deref(), Some("logit_bias.99999999"), "{err}");

    let three = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            n: Some(3),
            temperature: Some(1.0),
            seed: Some(7),
            max_tokens: Some(6),
            ..france()
        })
        .unwrap();
    let indexes: Vec<u32> = three.choices.iter().map(|c| c.index).collect();
    assert_eq!(indexes, [0, 1, 2]);
    assert_eq!(three.usage.prompt_tokens, first.usage.prompt_tokens);
    let lengths: u32 = 3 * 6;
    assert!(three.usage.completion_tokens <= lengths && three.usage.completion_tokens >= 3);

    // Greedy, every choice is the single greedy answer: the choices after the first decode from
    // a copy of its prefilled KV cache, which must be the same prompt.
    let single = shared().chat.completions.create(&france()).unwrap();
    let four = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            n: Some(4),
            ..france()
        })
        .unwrap();
    for choice in &four.choices {
        assert_eq!(choice.message.text(), single.choices[0].message.text());
    }
    assert_eq!(four.usage.prompt_tokens, single.usage.prompt_tokens);
    assert_eq!(
        four.usage.completion_tokens,
        4 * single.usage.completion_tokens
    );
}

#[test]
fn a_history_with_arguments_that_are_not_json_is_accepted() {
    // What agents send back after a call cut short by max_tokens: OpenAI takes any string.
    for arguments in [r#"{"city": "Par"#, "not json at all", "[1, 2]"] {
        let call = ToolCall {
            id: "call_1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "get_weather".into(),
                arguments: arguments.into(),
            },
        };
        let mut assistant = ChatMessage::assistant("");
        assistant.content = None;
        assistant.tool_calls = Some(vec![call]);
        let mut result = ChatMessage::new("tool", "error: the arguments were cut short");
        result.tool_call_id = Some("call_1".into());
        let completion = tools_client()
            .chat
            .completions
            .create(&ChatCompletionRequest {
                messages: vec![ChatMessage::user(PARIS), assistant, result],
                max_tokens: Some(40),
                ..request(PARIS)
            })
            .unwrap_or_else(|e| panic!("{arguments}: {e}"));
        assert!(!completion.choices.is_empty());
    }
}

#[test]
fn a_call_cut_by_max_tokens_ends_with_length() {
    let completion = tools_client()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            tool_choice: Some(json!("required")),
            max_tokens: Some(12),
            ..request(PARIS)
        })
        .unwrap();
    let choice = &completion.choices[0];
    assert_eq!(choice.finish_reason, "length", "{:?}", choice.message);
}

/// The issue's case: greedy Qwen, asked to describe Lisbon with an unbounded integer, wrote
/// `14000000000000000…` until max_tokens. Numbers are bounded to 15 digits.
#[test]
fn an_unbounded_number_ends() {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "country": {"type": "string"},
        "population": {"type": "integer"}},
        "required": ["name", "country", "population"], "additionalProperties": false});
    let completion = tools_client()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            temperature: Some(0.0),
            max_tokens: Some(100),
            response_format: Some(json!({"type": "json_schema",
                "json_schema": {"name": "city", "schema": schema, "strict": true}})),
            ..ChatCompletionRequest::new(TOOLS_MODEL, vec![ChatMessage::user("Describe Lisbon.")])
        })
        .unwrap();
    let choice = &completion.choices[0];
    assert_eq!(choice.finish_reason, "stop", "{}", choice.message.text());
    let value: Value = serde_json::from_str(choice.message.text()).unwrap();
    let population = value["population"].as_i64().unwrap();
    assert!(population.abs() < 1_000_000_000_000_000, "{value}");
}

#[test]
fn strict_schemas_follow_openais_rules() {
    let open =
        json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
    let optional = json!({"type": "object", "properties": {
        "x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x"], "additionalProperties": false});
    let nested = json!({"type": "object", "properties": {
        "p": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
        "required": ["p"], "additionalProperties": false});
    let base = ChatCompletionRequest {
        max_tokens: Some(20),
        ..ChatCompletionRequest::new(TOOLS_MODEL, vec![ChatMessage::user("Give numbers.")])
    };
    for (schema, problem) in [
        (open, "additionalProperties"),
        (optional, "`y` is missing"),
        (nested, "properties.p"),
    ] {
        let err = tools_client()
            .chat
            .completions
            .create(&ChatCompletionRequest {
                response_format: Some(json!({"type": "json_schema",
                    "json_schema": {"name": "n", "schema": schema, "strict": true}})),
                ..base.clone()
            })
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
        assert_eq!(
            err.param.as_deref(),
            Some("response_format.json_schema.schema")
        );
        assert!(err.message.contains(problem), "{problem}: {err}");
        // The same schema without strict is enforced as given.
        tools_client()
            .chat
            .completions
            .create(&ChatCompletionRequest {
                response_format: Some(json!({"type": "json_schema",
                    "json_schema": {"name": "n", "schema": schema}})),
                ..base.clone()
            })
            .unwrap();
    }
    let mut tools = weather_tool();
    tools[0]["function"]["strict"] = json!(true);
    let err = tools_client()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            tools: Some(tools),
            ..request(PARIS)
        })
        .unwrap_err();
    assert_eq!(
        err.param.as_deref(),
        Some("tools[0].function.parameters"),
        "{err}"
    );
}

/// Left unset, sampling is the model's recommended: the README's first command gives a
/// sensible answer. 20 fixed seeds, at least 19 name Paris.
#[test]
fn the_default_sampling_answers_sensibly() {
    let client = ingle_tests::own_client(|p| p);
    let mut answers = Vec::new();
    for seed in 0..20 {
        let completion = client
            .chat
            .completions
            .create(&ChatCompletionRequest {
                seed: Some(seed),
                max_tokens: Some(40),
                ..ingle_tests::ask("Name the capital of France.")
            })
            .unwrap();
        answers.push(completion.choices[0].message.text().to_string());
    }
    let paris = answers.iter().filter(|a| a.contains("Paris")).count();
    assert!(paris >= 19, "{paris} of 20 name Paris: {answers:#?}");
}

#[test]
fn llama_cpp_sampling_extensions_are_accepted_and_checked() {
    let given: ChatCompletionRequest = serde_json::from_value(json!({
        "model": TOOLS_MODEL, "messages": [{"role": "user", "content": "Say hi."}],
        "max_tokens": 8, "seed": 1, "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.2}))
    .unwrap();
    tools_client().chat.completions.create(&given).unwrap();
    let llama_cpp: ChatCompletionRequest = serde_json::from_value(json!({
        "model": TOOLS_MODEL, "messages": [{"role": "user", "content": "Say hi."}],
        "max_tokens": 8, "repeat_penalty": 1.1}))
    .unwrap();
    tools_client().chat.completions.create(&llama_cpp).unwrap();
    for (field, value) in [
        ("top_k", json!(-1)),
        ("min_p", json!(1.5)),
        ("repeat_penalty", json!(0)),
    ] {
        let request: ChatCompletionRequest = serde_json::from_value(json!({
            "model": TOOLS_MODEL, "messages": [{"role": "user", "content": "Say hi."}],
            field: value}))
        .unwrap();
        let err = tools_client()
            .chat
            .completions
            .create(&request)
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
        assert_eq!(err.param.as_deref(), Some(field), "{err}");
    }
}

#[test]
fn chat_template_kwargs_reach_the_template() {
    // A template that shows a variable only when the request gives it: the prompt grows.
    let template = "{% if house_style %}Answer in the house style of the Lisbon office, \
        formally.\n{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}\
        assistant:";
    let client = ingle_tests::own_client(|p| p.chat_template(template));
    let prompt_tokens = |kwargs: Option<Value>| {
        let mut request = ChatCompletionRequest {
            max_tokens: Some(1),
            ..ingle_tests::france()
        };
        request.chat_template_kwargs = kwargs.map(|k| k.as_object().unwrap().clone());
        client
            .chat
            .completions
            .create(&request)
            .unwrap()
            .usage
            .prompt_tokens
    };
    let plain = prompt_tokens(None);
    assert!(prompt_tokens(Some(json!({"house_style": true}))) > plain + 8);
    // `messages` is not a template variable a request can replace.
    assert_eq!(prompt_tokens(Some(json!({"messages": []}))), plain);
}

#[test]
fn tool_parameters_with_defs_and_refs_work_for_every_tool_choice() {
    // What Pydantic emits for a nested model: refused for every tool_choice before, as the
    // schema nested in the call wrapper made `#` point at the wrapper.
    let tools = json!([{"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "$defs": {"City": {"type": "object", "properties": {
                "name": {"type": "string"}, "country": {"type": "string"}},
                "required": ["name"], "title": "City"}},
            "type": "object",
            "properties": {"city": {"$ref": "#/$defs/City"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"], "title": "WeatherArgs"}}}]);
    for choice in [
        json!("auto"),
        json!("required"),
        json!({"type": "function", "function": {"name": "get_weather"}}),
    ] {
        let completion = tools_client()
            .chat
            .completions
            .create(&ChatCompletionRequest {
                tools: Some(tools.clone()),
                tool_choice: Some(choice.clone()),
                ..request(PARIS)
            })
            .unwrap();
        let calls = completion.choices[0].message.tool_calls.as_ref().unwrap();
        let arguments: Value = serde_json::from_str(&calls[0].function.arguments).unwrap();
        assert!(
            arguments["city"]["name"].is_string(),
            "{choice}: {arguments}"
        );
    }
}

#[test]
fn schemas_that_admit_nothing_are_refused_before_generation() {
    // They compiled, then generation failed at its first token: a 500, or an error event
    // mid-stream carrying a dump of the parser's state.
    let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a"});
    for schema in [json!({"$ref": "#"}), cycle.clone()] {
        let request = ChatCompletionRequest {
            response_format: Some(
                json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}),
            ),
            ..ChatCompletionRequest::new(TOOLS_MODEL, vec![ChatMessage::user("Hi")])
        };
        for err in [
            tools_client()
                .chat
                .completions
                .create(&request)
                .unwrap_err(),
            tools_client()
                .chat
                .completions
                .stream(&request)
                .err()
                .unwrap(),
        ] {
            assert_eq!(err.kind, ErrorKind::InvalidRequest, "{err}");
            assert_eq!(
                err.param.as_deref(),
                Some("response_format.json_schema.schema"),
                "{err}"
            );
            assert!(
                err.message.contains("admits no value") && !err.message.contains('\n'),
                "{err}"
            );
        }
    }
    let tools = json!([{"type": "function", "function": {"name": "loop", "parameters": cycle}}]);
    for choice in ["auto", "required"] {
        let err = tools_client()
            .chat
            .completions
            .create(&ChatCompletionRequest {
                tools: Some(tools.clone()),
                tool_choice: Some(json!(choice)),
                ..request(PARIS)
            })
            .unwrap_err();
        assert_eq!(err.param.as_deref(), Some("tools"), "{err}");
        assert!(
            err.message.contains("the parameters of the tool `loop`"),
            "{err}"
        );
    }
}
