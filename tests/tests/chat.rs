//! `chat.completions` on the real default model (SmolLM2-135M-Instruct via llama.cpp).

use ingle::openai::{
    ChatCompletionRequest, ChatMessage, ContentPart, MessageContent, StopSequences, StreamOptions,
};
use ingle::ErrorKind;
use ingle_tests::{ask, france, own_client, shared, MODEL};
use llama_cpp_2::model::{params::LlamaModelParams, LlamaChatMessage, LlamaModel};

#[test]
fn greedy_capital_of_france_mentions_paris() {
    let completion = shared().chat.completions.create(&france()).unwrap();
    let choice = &completion.choices[0];
    assert!(
        choice.message.text().contains("Paris"),
        "{:?}",
        choice.message.text()
    );
    assert_eq!(choice.finish_reason, "stop");
    assert_eq!(choice.message.role, "assistant");
    assert!(completion.id.starts_with("chatcmpl-"));
    assert_eq!(
        (completion.object.as_str(), completion.model.as_str()),
        ("chat.completion", MODEL)
    );
}

#[test]
fn the_response_has_the_openai_wire_shape() {
    let completion = shared().chat.completions.create(&france()).unwrap();
    let json = serde_json::to_value(&completion).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&json),
        ["choices", "created", "id", "model", "object", "usage"]
    );
    assert_eq!(
        keys(&json["choices"][0]),
        ["finish_reason", "index", "logprobs", "message"]
    );
    assert_eq!(
        keys(&json["usage"]),
        [
            "completion_tokens",
            "prompt_tokens",
            "prompt_tokens_details",
            "total_tokens"
        ]
    );
    assert_eq!(
        keys(&json["usage"]["prompt_tokens_details"]),
        ["cached_tokens"]
    );
    assert_eq!(json["choices"][0]["logprobs"], serde_json::Value::Null);
    assert!(json["created"].as_i64().unwrap() > 1_700_000_000);
}

#[test]
fn stream_chunks_concatenate_to_the_non_stream_content_for_the_same_seed() {
    let client = own_client(|p| p);
    let request = ChatCompletionRequest {
        temperature: Some(0.9),
        seed: Some(1234),
        max_tokens: Some(40),
        ..ask("Write a sentence about the sea.")
    };
    let whole = client.chat.completions.create(&request).unwrap();
    let chunks: Vec<_> = client
        .chat
        .completions
        .stream(&request)
        .unwrap()
        .map(Result::unwrap)
        .collect();

    let first = &chunks[0].choices[0];
    assert_eq!(first.delta.role.as_deref(), Some("assistant"));
    assert_eq!(first.finish_reason, None);
    let last = chunks.last().unwrap();
    assert_eq!(
        last.choices[0].delta,
        Default::default(),
        "the last delta is empty"
    );
    assert_eq!(
        last.choices[0].finish_reason.as_deref(),
        Some(whole.choices[0].finish_reason.as_str())
    );
    assert!(chunks
        .iter()
        .all(|c| c.object == "chat.completion.chunk" && c.id == chunks[0].id && c.usage.is_none()));

    let streamed: String = chunks
        .iter()
        .flat_map(|c| c.choices[0].delta.content.clone())
        .collect();
    assert!(!streamed.is_empty());
    assert_eq!(streamed, whole.choices[0].message.text());

    let again = client.chat.completions.create(&request).unwrap();
    assert_eq!(
        again.choices[0].message.text(),
        whole.choices[0].message.text(),
        "same seed, same text"
    );
}

#[test]
fn include_usage_adds_a_last_chunk_with_usage_and_no_choices() {
    let request = ChatCompletionRequest {
        stream_options: Some(StreamOptions {
            include_usage: true,
            ..Default::default()
        }),
        max_tokens: Some(8),
        ..france()
    };
    let chunks: Vec<_> = shared()
        .chat
        .completions
        .stream(&request)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let last = chunks.last().unwrap();
    assert!(last.choices.is_empty());
    let usage = last.usage.unwrap();
    assert_eq!(
        usage.total_tokens,
        usage.prompt_tokens + usage.completion_tokens
    );
    assert!(usage.completion_tokens >= 1 && usage.completion_tokens <= 8);
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c.usage.is_none()));
    let json = serde_json::to_value(last).unwrap();
    assert_eq!(json["choices"], serde_json::json!([]));
}

#[test]
fn max_tokens_5_ends_with_length_and_5_completion_tokens() {
    for request in [
        ChatCompletionRequest {
            max_tokens: Some(5),
            ..ask("Tell me a long story about a dragon.")
        },
        ChatCompletionRequest {
            max_completion_tokens: Some(5),
            ..ask("Tell me a long story about a dragon.")
        },
    ] {
        let completion = shared().chat.completions.create(&request).unwrap();
        assert_eq!(completion.choices[0].finish_reason, "length");
        assert_eq!(completion.usage.completion_tokens, 5);
    }
}

#[test]
fn a_stop_sequence_cuts_the_text_before_it() {
    let full = shared().chat.completions.create(&france()).unwrap().choices[0]
        .message
        .text()
        .to_string();
    let at = full.find("Paris").expect("greedy answer mentions Paris");
    // "is Par" spans two tokens (" is", " Paris"): it must still never be emitted.
    for stop in ["Paris", "is Par"] {
        let request = ChatCompletionRequest {
            stop: Some(StopSequences::One(stop.into())),
            ..france()
        };
        let completion = shared().chat.completions.create(&request).unwrap();
        let content = &completion.choices[0].message.text();
        assert_eq!(completion.choices[0].finish_reason, "stop");
        assert_eq!(*content, &full[..full.find(stop).unwrap()], "stop {stop:?}");
        let streamed: Vec<String> = shared()
            .chat
            .completions
            .stream(&request)
            .unwrap()
            .flat_map(|c| c.unwrap().choices.into_iter().flat_map(|c| c.delta.content))
            .collect();
        assert!(!streamed.concat().contains(stop));
        assert!(streamed.concat().len() <= at);
    }
    let many = ChatCompletionRequest {
        stop: Some(StopSequences::Many(vec!["zzz".into(), "capital".into()])),
        ..france()
    };
    let content = shared().chat.completions.create(&many).unwrap().choices[0]
        .message
        .text()
        .to_string();
    assert_eq!(content, full[..full.find("capital").unwrap()]);
}

#[test]
fn usage_counts_match_the_tokenizer() {
    let request = france();
    let completion = shared().chat.completions.create(&request).unwrap();
    // Count independently with llama.cpp itself.
    let backend = ingle::backends::llama::backend().unwrap();
    let config = ingle_tests::config();
    let path = config.model_path(&config.predictors[0]);
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();
    let template = model.chat_template(None).unwrap();
    // SmolLM2's Jinja template adds its default system prompt when the messages have none;
    // llama.cpp's built-in ChatML renderer is given it explicitly, as an independent check.
    let chat = [
        LlamaChatMessage::new(
            "system".into(),
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face".into(),
        )
        .unwrap(),
        LlamaChatMessage::new("user".into(), "Name the capital of France.".into()).unwrap(),
    ];
    let prompt = model.apply_chat_template(&template, &chat, true).unwrap();
    let prompt_tokens = model.vocab().tokenize(prompt.as_bytes(), true, true).len();
    let content = &completion.choices[0].message.text();
    // The greedy answer ends with the end-of-turn token, which is not part of the content.
    let completion_tokens = model
        .vocab()
        .tokenize(content.as_bytes(), false, false)
        .len();
    assert_eq!(completion.usage.prompt_tokens as usize, prompt_tokens);
    assert_eq!(
        completion.usage.completion_tokens as usize,
        completion_tokens
    );
    assert_eq!(
        completion.usage.total_tokens,
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    );
}

#[test]
fn system_developer_assistant_tool_roles_and_text_parts_are_accepted() {
    let parts = MessageContent::Parts(vec![
        ContentPart::text("What is the capital "),
        ContentPart::text("of France?"),
    ]);
    let mut user = ChatMessage::user("");
    user.content = Some(parts);
    let mut tool = ChatMessage::new("tool", "lookup: France -> capital Paris");
    tool.tool_call_id = Some("call_1".into());
    let request = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(20),
        ..ChatCompletionRequest::new(
            MODEL,
            vec![
                ChatMessage::system("You are a geography assistant."),
                ChatMessage::developer("Answer in one sentence."),
                ChatMessage::user("Hello"),
                ChatMessage::assistant("Hello! Ask me about geography."),
                tool,
                user,
            ],
        )
    };
    let completion = shared().chat.completions.create(&request).unwrap();
    assert!(
        completion.choices[0].message.text().contains("Paris"),
        "{:?}",
        completion.choices[0].message.text()
    );
}

#[test]
fn unknown_model_is_a_not_found_error() {
    let request = ChatCompletionRequest {
        model: "@nobody/nothing".into(),
        ..france()
    };
    let err = shared().chat.completions.create(&request).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert_eq!(err.kind.http_status(), 404);
    assert_eq!(
        err.code.map(ingle::ErrorCode::as_str),
        Some("model_not_found")
    );
    assert_eq!(err.param.as_deref(), Some("model"));
    assert_eq!(err.to_openai()["error"]["type"], "invalid_request_error");
    assert!(shared().chat.completions.stream(&request).is_err());
}

#[test]
fn invalid_requests_name_the_parameter() {
    let cases: Vec<(ChatCompletionRequest, &str)> = vec![
        (ChatCompletionRequest::new(MODEL, vec![]), "messages"),
        (
            ChatCompletionRequest::new(MODEL, vec![ChatMessage::new("wizard", "hi")]),
            "messages[0].role",
        ),
        (
            ChatCompletionRequest {
                max_tokens: Some(-1),
                ..france()
            },
            "max_tokens",
        ),
        (
            ChatCompletionRequest {
                max_completion_tokens: Some(0),
                ..france()
            },
            "max_completion_tokens",
        ),
        (
            ChatCompletionRequest {
                temperature: Some(3.0),
                ..france()
            },
            "temperature",
        ),
        (
            ChatCompletionRequest {
                top_p: Some(1.5),
                ..france()
            },
            "top_p",
        ),
        (
            ChatCompletionRequest {
                frequency_penalty: Some(-2.5),
                ..france()
            },
            "frequency_penalty",
        ),
        (
            ChatCompletionRequest {
                n: Some(9),
                ..france()
            },
            "n",
        ),
        (
            ChatCompletionRequest {
                stop: Some(StopSequences::Many(vec!["a".into(); 5])),
                ..france()
            },
            "stop",
        ),
        (
            ChatCompletionRequest {
                stop: Some(StopSequences::One(String::new())),
                ..france()
            },
            "stop",
        ),
    ];
    for (request, param) in cases {
        let err = shared().chat.completions.create(&request).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest, "{param}: {err}");
        assert_eq!(err.param.as_deref(), Some(param), "{err}");
        assert!(err.message.contains(param), "message names {param}: {err}");
        assert_eq!(err.to_openai()["error"]["param"], param);
    }
    // The client is still usable afterwards.
    assert!(shared().chat.completions.create(&france()).is_ok());
}

#[test]
fn json_requests_reject_bad_and_unsupported_fields_by_name() {
    let parse = |body: &str| ChatCompletionRequest::from_json(body);
    let ok = parse(r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b"],"user":"u1","store":false}"#).unwrap();
    assert_eq!(
        ok.stop,
        Some(StopSequences::Many(vec!["a".into(), "b".into()]))
    );

    let err = parse(r#"{"model":"m","messages":[],"temperature":"hot"}"#).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("temperature"), "{err}");

    for (field, body) in [
        (
            "tools[0].function",
            r#"{"model":"@local/smollm2-135m-instruct","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}"#,
        ),
        (
            "top_logprobs",
            r#"{"model":"@local/smollm2-135m-instruct","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}"#,
        ),
        (
            "response_format.json_schema",
            r#"{"model":"@local/smollm2-135m-instruct","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}"#,
        ),
        (
            "echo",
            r#"{"model":"@local/smollm2-135m-instruct","messages":[{"role":"user","content":"hi"}],"echo":true}"#,
        ),
        (
            "frobnicate",
            r#"{"model":"@local/smollm2-135m-instruct","messages":[{"role":"user","content":"hi"}],"frobnicate":1}"#,
        ),
        (
            "messages[0].content[0]",
            r#"{"model":"@local/smollm2-135m-instruct","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}"#,
        ),
    ] {
        let request = parse(body).unwrap();
        let err = shared().chat.completions.create(&request).unwrap_err();
        assert_eq!(err.param.as_deref(), Some(field), "{err}");
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
    }
}

#[test]
fn a_prompt_longer_than_the_context_is_context_length_exceeded() {
    let long = "hello ".repeat(3000);
    let err = shared().chat.completions.create(&ask(&long)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContextLengthExceeded);
    assert_eq!(
        err.code.map(ingle::ErrorCode::as_str),
        Some("context_length_exceeded")
    );
    assert_eq!(err.param.as_deref(), Some("messages"));
    assert!(
        err.message
            .contains("maximum context length is 2048 tokens"),
        "{err}"
    );
    // Asking for more completion tokens than the context has left is the same error.
    let request = ChatCompletionRequest {
        max_tokens: Some(2040),
        ..france()
    };
    let err = shared().chat.completions.create(&request).unwrap_err();
    assert_eq!(
        err.code.map(ingle::ErrorCode::as_str),
        Some("context_length_exceeded"),
        "{err}"
    );
    assert!(
        shared().chat.completions.create(&france()).is_ok(),
        "still usable"
    );
}

#[test]
fn generation_stops_at_the_end_of_the_context_with_length() {
    let client = own_client(|p| p.n_ctx(64));
    let request = ChatCompletionRequest {
        temperature: Some(0.0),
        ..ask("Write a very long story about a dragon.")
    };
    let completion = client.chat.completions.create(&request).unwrap();
    assert_eq!(completion.choices[0].finish_reason, "length");
    assert_eq!(completion.usage.total_tokens, 64);
}

#[test]
fn penalties_and_top_p_change_sampling() {
    let client = own_client(|p| p);
    let base = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(60),
        ..ask("Count from 1 to 20, separated by commas.")
    };
    let plain = client.chat.completions.create(&base).unwrap().choices[0]
        .message
        .text()
        .to_string();
    let penalised = ChatCompletionRequest {
        frequency_penalty: Some(2.0),
        presence_penalty: Some(2.0),
        ..base.clone()
    };
    let penalised = client.chat.completions.create(&penalised).unwrap().choices[0]
        .message
        .text()
        .to_string();
    assert_ne!(plain, penalised, "penalties change greedy output");
    // top_p near 0 leaves only the most likely token: the same text as greedy, whatever the seed.
    let narrow = |seed| ChatCompletionRequest {
        temperature: Some(1.0),
        top_p: Some(0.0),
        seed: Some(seed),
        ..base.clone()
    };
    let a = client.chat.completions.create(&narrow(1)).unwrap().choices[0]
        .message
        .text()
        .to_string();
    let b = client.chat.completions.create(&narrow(2)).unwrap().choices[0]
        .message
        .text()
        .to_string();
    assert_eq!(a, plain);
    assert_eq!(b, plain);
}
