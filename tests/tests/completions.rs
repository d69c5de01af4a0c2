//! `completions` (legacy text completion), `models`, and `predictions` on the real model.

use ingle::openai::{CompletionRequest, StopSequences, StreamOptions};
use ingle::{ErrorKind, Inputs, PredictorKind, Value};
use ingle_tests::{own_client, shared, MODEL};

fn capital() -> CompletionRequest {
    CompletionRequest {
        temperature: Some(0.0),
        ..CompletionRequest::new(MODEL, "The capital of France is")
    }
}

#[test]
fn greedy_text_completion_continues_the_prompt() {
    let completion = shared().completions.create(&capital()).unwrap();
    assert!(completion.id.starts_with("cmpl-"));
    assert_eq!(completion.object, "text_completion");
    let choice = &completion.choices[0];
    assert!(choice.text.contains("Paris"), "{:?}", choice.text);
    let usage = completion.usage.unwrap();
    assert!(
        usage.completion_tokens <= 16,
        "OpenAI's default max_tokens is 16"
    );
    if choice.finish_reason.as_deref() == Some("length") {
        assert_eq!(usage.completion_tokens, 16);
    }
    let json = serde_json::to_value(&completion).unwrap();
    let mut keys: Vec<_> = json["choices"][0]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    assert_eq!(keys, ["finish_reason", "index", "logprobs", "text"]);
}

#[test]
fn streamed_text_equals_the_whole_response() {
    let client = own_client(|p| p);
    let request = CompletionRequest {
        temperature: Some(0.7),
        seed: Some(99),
        max_tokens: Some(30),
        ..capital()
    };
    let whole = client.completions.create(&request).unwrap();
    let streaming = CompletionRequest {
        stream_options: Some(StreamOptions {
            include_usage: true,
            ..Default::default()
        }),
        ..request
    };
    let chunks: Vec<_> = client
        .completions
        .stream(&streaming)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let text: String = chunks
        .iter()
        .flat_map(|c| c.choices.iter().map(|c| c.text.clone()))
        .collect();
    assert_eq!(text, whole.choices[0].text);
    let usage_chunk = chunks.last().unwrap();
    assert!(usage_chunk.choices.is_empty());
    // The same counts (how much of the prompt the second request found cached depends on
    // which sequences other tests hold at that moment).
    let (streamed, whole_usage) = (usage_chunk.usage.unwrap(), whole.usage.unwrap());
    assert_eq!(
        (
            streamed.prompt_tokens,
            streamed.completion_tokens,
            streamed.total_tokens
        ),
        (
            whole_usage.prompt_tokens,
            whole_usage.completion_tokens,
            whole_usage.total_tokens
        )
    );
    let finish = &chunks[chunks.len() - 2].choices[0];
    assert_eq!(finish.finish_reason, whole.choices[0].finish_reason);
}

#[test]
fn stop_and_max_tokens_apply_to_text_completion() {
    let request = CompletionRequest {
        stop: Some(StopSequences::One("Paris".into())),
        ..capital()
    };
    let completion = shared().completions.create(&request).unwrap();
    assert_eq!(completion.choices[0].finish_reason.as_deref(), Some("stop"));
    assert!(!completion.choices[0].text.contains("Paris"));
    let request = CompletionRequest {
        max_tokens: Some(3),
        ..capital()
    };
    let completion = shared().completions.create(&request).unwrap();
    assert_eq!(completion.usage.unwrap().completion_tokens, 3);
    assert_eq!(
        completion.choices[0].finish_reason.as_deref(),
        Some("length")
    );
}

#[test]
fn bad_text_completion_requests_name_the_parameter() {
    let empty = CompletionRequest::new(MODEL, "");
    assert_eq!(
        shared()
            .completions
            .create(&empty)
            .unwrap_err()
            .param
            .as_deref(),
        Some("prompt")
    );
    let echo = CompletionRequest::from_json(
        r#"{"model":"@local/smollm2-135m-instruct","prompt":"hi","echo":true}"#,
    )
    .unwrap();
    assert_eq!(
        shared()
            .completions
            .create(&echo)
            .unwrap_err()
            .param
            .as_deref(),
        Some("echo")
    );
    let tokens = CompletionRequest::from_json(
        r#"{"model":"@local/smollm2-135m-instruct","prompt":[1,2,3]}"#,
    )
    .unwrap();
    assert_eq!(
        shared()
            .completions
            .create(&tokens)
            .unwrap_err()
            .param
            .as_deref(),
        Some("prompt")
    );
    let long = CompletionRequest::new(MODEL, "word ".repeat(3000));
    let err = shared().completions.create(&long).unwrap_err();
    assert_eq!(
        (err.kind, err.param.as_deref()),
        (ErrorKind::ContextLengthExceeded, Some("prompt"))
    );
}

#[test]
fn models_list_and_retrieve() {
    let list = shared().models.list();
    assert_eq!(list.object, "list");
    let ids: Vec<&str> = list.data.iter().map(|m| m.id.as_str()).collect();
    let mut expected = vec![
        MODEL,
        ingle::TOOLS_MODEL,
        ingle::DEFAULT_EMBEDDING_MODEL,
        ingle::DEFAULT_SPEECH_MODEL,
        ingle::config::DEFAULT_TRANSCRIPTION_MODEL,
        // Each also without its namespace (openai-agents reads `@local/` as a provider).
        "smollm2-135m-instruct",
        "qwen2.5-coder-0.5b-instruct",
        "all-minilm-l6-v2",
        "piper-en-us-joe-medium",
        "whisper-tiny-en",
    ];
    // The optional 1.5B (not in `ingle pull --all`) is served once pulled, after the built-ins.
    let optional =
        ingle::config::default_models_dir().join("Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf");
    if optional.is_file() {
        expected.insert(5, "@local/qwen2.5-coder-1.5b-instruct");
        expected.push("qwen2.5-coder-1.5b-instruct");
    }
    // The multilingual Whisper (in `ingle pull --all`, a catalog model, not a built-in) too.
    let catalog_models = expected.len() / 2;
    expected.insert(catalog_models, "@local/whisper-base");
    expected.push("whisper-base");
    assert_eq!(ids, expected);
    let short = shared().models.retrieve("smollm2-135m-instruct").unwrap();
    assert_eq!(short.id, MODEL);
    let model = shared().models.retrieve(MODEL).unwrap();
    assert_eq!(
        (model.object.as_str(), model.owned_by.as_str()),
        ("model", "ingle")
    );
    let err = shared().models.retrieve("@no/such").unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
}

#[test]
fn predictions_run_the_chat_model_directly() {
    let predictor = shared().predictor(MODEL).unwrap();
    assert_eq!(predictor.kind(), PredictorKind::Generator);
    let message =
        Value::from(serde_json::json!({"role": "user", "content": "Name the capital of France."}));
    let inputs: Inputs = [
        ("messages".to_string(), Value::List(vec![message])),
        ("temperature".to_string(), Value::Float(0.0)),
    ]
    .into();
    let partials: Vec<_> = shared()
        .predictions
        .stream(MODEL, inputs.clone())
        .unwrap()
        .collect();
    assert!(partials.len() > 2);
    let text: String = partials
        .iter()
        .map(|p| p.results.as_ref().unwrap()[0].as_str().unwrap().to_string())
        .collect();
    assert!(text.contains("Paris"), "{text:?}");
    let last = shared()
        .predictions
        .create(MODEL, inputs)
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        last[1],
        Value::from("stop"),
        "the final prediction carries the finish reason"
    );
    assert!(
        last[2].as_dict().unwrap()["completion_tokens"]
            .as_i64()
            .unwrap()
            > 0
    );

    let bad: Inputs = [("prompt".to_string(), Value::Int(3))].into();
    assert_eq!(
        shared()
            .predictions
            .create(MODEL, bad)
            .unwrap_err()
            .param
            .as_deref(),
        Some("prompt")
    );
    let none = shared()
        .predictions
        .create(MODEL, Inputs::new())
        .unwrap_err();
    assert_eq!(none.param.as_deref(), Some("messages"));
}

/// A completion reaches the engine by two doors: the OpenAI layer's typed request and a
/// prediction's named inputs. Both are read by the same code, so they check alike and generate
/// alike.
#[test]
fn predictions_and_completions_reach_the_engine_alike() {
    let prompt = "The capital of France is";
    let completion = shared()
        .completions
        .create(&CompletionRequest {
            max_tokens: Some(8),
            logprobs: Some(2),
            ..capital()
        })
        .unwrap();
    let inputs = |extra: Vec<(&str, Value)>| -> Inputs {
        let mut inputs: Inputs = [
            ("prompt".to_string(), Value::from(prompt)),
            ("temperature".to_string(), Value::Float(0.0)),
            ("max_tokens".to_string(), Value::Int(8)),
        ]
        .into();
        inputs.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
        inputs
    };
    let partials: Vec<_> = shared()
        .predictions
        .stream(MODEL, inputs(vec![("logprobs", Value::Int(2))]))
        .unwrap()
        .map(|p| p.results.unwrap())
        .collect();
    let text: String = partials.iter().map(|r| r[0].as_str().unwrap()).collect();
    assert_eq!(text, completion.choices[0].text);
    // Each token's log probability and its 2 alternatives, as the typed steps carry them.
    let tokens: Vec<serde_json::Value> = partials
        .iter()
        .flat_map(|r| r[4].to_json().unwrap().as_array().cloned().unwrap())
        .collect();
    assert_eq!(tokens.len(), 8);
    for token in &tokens {
        assert_eq!(
            token["top_logprobs"].as_array().unwrap().len(),
            2,
            "{token}"
        );
        assert!(token["logprob"].as_f64().unwrap() <= 0.0);
    }
    let legacy = completion.choices[0].logprobs.as_ref().unwrap();
    assert_eq!(legacy["tokens"].as_array().unwrap().len(), 8);
    assert_eq!(legacy["tokens"][0], tokens[0]["token"]);

    // The same mistakes, the same errors, by either door.
    let by_prediction = |extra| {
        shared()
            .predictions
            .create(MODEL, inputs(extra))
            .unwrap_err()
    };
    let by_completion =
        |request: CompletionRequest| shared().completions.create(&request).unwrap_err();
    let pairs = [
        (
            by_prediction(vec![(
                "logit_bias",
                Value::from(serde_json::json!({"05": 1})),
            )]),
            by_completion(CompletionRequest {
                logit_bias: serde_json::json!({"05": 1}).as_object().cloned(),
                ..capital()
            }),
        ),
        (
            by_prediction(vec![("stop", Value::from(vec!["a", "b", "c", "d", "e"]))]),
            by_completion(CompletionRequest {
                stop: Some(StopSequences::Many(
                    ["a", "b", "c", "d", "e"].map(String::from).to_vec(),
                )),
                ..capital()
            }),
        ),
        (
            by_prediction(vec![("top_k", Value::Int(-1))]),
            by_completion(CompletionRequest {
                top_k: Some(-1),
                ..capital()
            }),
        ),
    ];
    // Pinned as the engine worded them before both doors shared the code.
    let expected = [
        (
            "logit_bias.05",
            "`logit_bias` key '05' is not a token id of this model (0 to ",
        ),
        ("stop", "`stop` may hold at most 4 sequences"),
        (
            "top_k",
            "Invalid value for `top_k`: -1 is out of range; it must be between 0 and 4294967295",
        ),
    ];
    for ((prediction, completion), (param, message)) in pairs.into_iter().zip(expected) {
        assert_eq!(prediction.kind, ErrorKind::InvalidRequest);
        assert_eq!(prediction.param.as_deref(), Some(param));
        assert!(
            prediction.message.starts_with(message),
            "{}",
            prediction.message
        );
        assert_eq!(
            (prediction.param, prediction.message),
            (completion.param, completion.message)
        );
    }
}

/// `tokenize` / `detokenize` through the method table, as every door calls them: the model's
/// own tokenizer, agreeing with the prompt tokens a completion counts.
#[test]
fn tokenize_agrees_with_the_prompt_a_completion_reads_and_detokenize_inverts_it() {
    let call = |name: &str, request: serde_json::Value| -> ingle::Result<serde_json::Value> {
        let answer = ingle::methods::method(name)?.call(shared(), &request.to_string(), None)?;
        Ok(serde_json::from_str(&answer.into_text()?).unwrap())
    };
    let text = "The capital of France is";
    let tokens = call(
        "tokenize",
        serde_json::json!({"model": MODEL, "content": text, "add_special": true}),
    )
    .unwrap()["tokens"]
        .clone();
    let ids: Vec<i64> = serde_json::from_value(tokens).unwrap();
    let usage = shared()
        .completions
        .create(&capital())
        .unwrap()
        .usage
        .unwrap();
    assert_eq!(ids.len(), usage.prompt_tokens as usize, "{ids:?}");
    let back = call(
        "detokenize",
        serde_json::json!({"model": MODEL, "tokens": ids}),
    )
    .unwrap();
    assert_eq!(back["content"], text);

    // Pieces join to the text; special tokens are read as one token unless told not to.
    let pieces = call(
        "tokenize",
        serde_json::json!({"model": MODEL, "content": "<|im_start|>Hi", "with_pieces": true}),
    )
    .unwrap();
    let pieces = pieces["tokens"].as_array().unwrap();
    assert_eq!(pieces[0]["piece"], "<|im_start|>", "{pieces:?}");
    let joined: String = pieces
        .iter()
        .map(|p| p["piece"].as_str().unwrap())
        .collect();
    assert_eq!(joined, "<|im_start|>Hi");
    let plain = call(
        "tokenize",
        serde_json::json!({"model": MODEL, "content": "<|im_start|>Hi", "parse_special": false}),
    )
    .unwrap();
    assert!(
        plain["tokens"].as_array().unwrap().len() > pieces.len(),
        "{plain}"
    );

    // Errors name the field: an id outside the vocabulary, a model without a tokenizer.
    let error = call(
        "detokenize",
        serde_json::json!({"model": MODEL, "tokens": [1, 1_i64 << 40]}),
    )
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidRequest);
    assert_eq!(error.param.as_deref(), Some("tokens[1]"), "{error}");
    let error = call(
        "tokenize",
        serde_json::json!({"model": ingle_tests::EMBEDDING_MODEL, "content": "x"}),
    )
    .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("model"), "{error}");
    assert!(error.message.contains("tokenizer"), "{error}");
}

/// The edges of `tokenize` / `detokenize`: no model (llama.cpp server's clients name none: the
/// default chat model), empty text and no ids, pieces that are not UTF-8 on their own (each a
/// part of an emoji's bytes, given as numbers), which joined give the text's bytes back.
#[test]
fn tokenize_edges_no_model_empty_input_and_pieces_that_are_bytes() {
    let call = |name: &str, request: serde_json::Value| -> serde_json::Value {
        let answer = ingle::methods::method(name)
            .unwrap()
            .call(shared(), &request.to_string(), None)
            .unwrap();
        serde_json::from_str(&answer.into_text().unwrap()).unwrap()
    };
    let unnamed = call("tokenize", serde_json::json!({"content": "Hello"}));
    let named = call(
        "tokenize",
        serde_json::json!({"model": MODEL, "content": "Hello"}),
    );
    assert_eq!(unnamed, named);
    assert_eq!(
        call("tokenize", serde_json::json!({"content": ""})),
        serde_json::json!({"tokens": []})
    );
    assert_eq!(
        call("detokenize", serde_json::json!({"tokens": []})),
        serde_json::json!({"content": ""})
    );
    let text = "🦀🦀 naïve ✓";
    let pieces = call(
        "tokenize",
        serde_json::json!({"content": text, "with_pieces": true}),
    );
    let mut bytes = Vec::new();
    let mut numbered = 0;
    for token in pieces["tokens"].as_array().unwrap() {
        match &token["piece"] {
            serde_json::Value::String(piece) => bytes.extend_from_slice(piece.as_bytes()),
            serde_json::Value::Array(piece) => {
                numbered += 1;
                bytes.extend(piece.iter().map(|b| b.as_u64().unwrap() as u8));
            }
            other => panic!("a piece of {other}"),
        }
    }
    assert_eq!(bytes, text.as_bytes(), "{pieces}");
    assert!(
        numbered > 0,
        "SmolLM2 splits an emoji into byte tokens: {pieces}"
    );
}

/// Over HTTP (`Door::Http`) a model file used by its path in process is no model of the API;
/// in process it is listed.
#[test]
fn models_list_over_http_leaves_out_a_model_used_by_its_path() {
    let config = ingle_tests::config();
    let predictor = config.predictors.iter().find(|p| p.tag == MODEL).unwrap();
    let path = config.files_of(predictor)[0].clone();
    let path = path.to_str().unwrap();
    let client = own_client(|p| p);
    let request = serde_json::json!({"model": path, "content": "Hi"}).to_string();
    let method = ingle::methods::method("tokenize").unwrap();
    method.call(&client, &request, None).unwrap();
    let list = ingle::methods::method("models.list").unwrap();
    let ids = |answer: ingle::methods::Answer| -> Vec<String> {
        let list: serde_json::Value = serde_json::from_str(&answer.into_text().unwrap()).unwrap();
        let data = list["data"].as_array().unwrap();
        data.iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let in_process = ids(list.call(&client, "{}", None).unwrap());
    assert!(in_process.iter().any(|id| id == path), "{in_process:?}");
    let parsed = list.parse("{}", None).unwrap().over_http();
    let over_http = ids(parsed.run(&client).unwrap());
    assert!(!over_http.iter().any(|id| id == path), "{over_http:?}");
    assert!(over_http.iter().any(|id| id == MODEL), "{over_http:?}");
}
