//! Hostile input to the parsers and the config, without a model: each case must be a clear
//! error (kind, param, message) and never a panic. The same parsers serve every front door
//! (HTTP, C, Python, Node), so these are the root of their checks.

use ingle::error::{MAX_MESSAGE_BYTES, MAX_PARAM_BYTES};
use ingle::openai::{ChatCompletionRequest, CompletionRequest, EmbeddingRequest};
use ingle::{inputs_from_json, Client, Config, Error, ErrorKind, PredictorConfig};

const CHAT: &str = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;

fn chat(json: &str) -> Result<ChatCompletionRequest, Error> {
    ChatCompletionRequest::from_json(json)
}

#[test]
fn a_request_is_exactly_one_json_document() {
    assert!(chat(CHAT).is_ok());
    assert!(
        chat(&format!("  {CHAT}\n\t ")).is_ok(),
        "whitespace is fine"
    );
    for trailing in [" xyz", " {}", "}]]", CHAT, " 1", ",", "\u{0}"] {
        let json = format!("{CHAT}{trailing}");
        let error = chat(&json).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{json}");
        assert_eq!(error.param, None, "{json}: {error:?}");
        assert!(
            error.message.contains("one JSON document") && error.message.contains("column"),
            "{json}: {}",
            error.message
        );
    }
    let completion = r#"{"model": "m", "prompt": "x"} x"#;
    assert!(CompletionRequest::from_json(completion).is_err());
    let embedding = r#"{"model": "m", "input": "x"}{}"#;
    assert!(EmbeddingRequest::from_json(embedding).is_err());
    assert_eq!(
        inputs_from_json(r#"{"a": 1} 2"#)
            .unwrap_err()
            .param
            .as_deref(),
        Some("inputs")
    );
    assert!(Config::from_json(r#"{"predictors": []} []"#).is_err());
}

#[test]
fn a_syntax_error_names_no_param_and_says_what_and_where() {
    for (json, says) in [
        (r#"{model: "m"}"#, "key must be a string"),
        (r#"{"model": "m",}"#, "trailing comma"),
        (r#"{"model": "m""#, "ends early"),
        ("", "ends early"),
        (r#"{"model": "m", "messages": [}"#, "line 1 column"),
        ("{\"model\": \"\\ud800\"}", "lone surrogate"),
    ] {
        let error = chat(json).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{json}");
        assert_eq!(error.param, None, "{json}: {error:?}");
        assert_eq!(
            error.code.map(ingle::ErrorCode::as_str),
            Some("invalid_json"),
            "{json}"
        );
        assert!(
            error.message.contains(says) && error.message.contains("not valid JSON"),
            "{json}: {}",
            error.message
        );
        assert!(!error.message.contains('?'), "{json}: {}", error.message);
    }
}

#[test]
fn a_value_that_does_not_fit_names_its_field() {
    let error = chat(r#"{"model": "m", "messages": [{"role": 5, "content": "x"}]}"#).unwrap_err();
    assert_eq!(
        error.param.as_deref(),
        Some("messages[0].role"),
        "{error:?}"
    );
    let error = chat(r#"{"model": "m", "max_tokens": "5", "messages": []}"#).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("max_tokens"), "{error:?}");
    let error = chat(r#"{"messages": []}"#).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("model"), "{error:?}");
    assert!(
        error.message.contains("Missing required parameter"),
        "{error:?}"
    );
    let error = chat("[]").unwrap_err();
    assert_eq!(error.param, None, "{error:?}");
}

/// A client with one predictor that fails to load if anything reaches it: requests that are
/// refused before the model is needed prove it.
fn client_without_model() -> Client {
    let config = Config::empty()
        .models_dir(std::env::temp_dir())
        .predictor(PredictorConfig::llama("m", "no-such-model.gguf"));
    Client::from_config(&config).unwrap()
}

fn chat_error(json: &str) -> Error {
    let client = client_without_model();
    let request = chat(json).unwrap();
    client.chat.completions.create(&request).unwrap_err()
}

#[test]
fn stream_options_takes_only_its_own_keys() {
    let error = chat_error(
        r#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true, "bogus": 1}}"#,
    );
    assert_eq!(error.kind, ErrorKind::InvalidRequest);
    assert_eq!(error.param.as_deref(), Some("stream_options.bogus"));
    // The documented key is accepted (and the request then reaches the missing model: a 404
    // naming `model`, not a 500 that SDKs retry).
    let error = chat_error(
        r#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true, "include_obfuscation": false}}"#,
    );
    assert_eq!(error.kind, ErrorKind::NotFound, "{error:?}");
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("model_file_missing")
    );
    assert_eq!(error.param.as_deref(), Some("model"));
}

#[test]
fn content_needs_at_least_one_part_and_parts_only_their_keys() {
    let error = chat_error(r#"{"model": "m", "messages": [{"role": "user", "content": []}]}"#);
    assert_eq!(
        error.param.as_deref(),
        Some("messages[0].content"),
        "{error:?}"
    );
    let error = chat_error(
        r#"{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "x", "extra": 1}]}]}"#,
    );
    assert_eq!(
        error.param.as_deref(),
        Some("messages[0].content[0].extra"),
        "{error:?}"
    );
}

#[test]
fn error_messages_quote_at_most_a_little_of_what_the_caller_sent() {
    let client = client_without_model();
    let huge = "x".repeat(1 << 20);
    let error = client.models.retrieve(&huge).unwrap_err();
    assert_eq!(error.kind, ErrorKind::NotFound);
    assert!(error.message.len() < 400, "{}", error.message.len());
    assert!(error.message.contains("more bytes"), "{}", error.message);
    assert!(
        error.message.ends_with("does not exist"),
        "{}",
        error.message
    );
    // A huge unknown field, role and model name through the request parsers.
    for json in [
        format!(
            r#"{{"model": "m", "messages": [{{"role": "user", "content": "x"}}], "{huge}": 1}}"#
        ),
        format!(r#"{{"model": "m", "messages": [{{"role": "{huge}", "content": "x"}}]}}"#),
        format!(r#"{{"model": "{huge}", "messages": [{{"role": "user", "content": "x"}}]}}"#),
        format!(
            r#"{{"model": "m", "messages": [{{"role": "user", "content": "x", "{huge}": 1}}]}}"#
        ),
        format!(
            r#"{{"model": "m", "messages": [{{"role": "user", "content": "x"}}], "max_tokens": "{huge}"}}"#
        ),
    ] {
        let error = match chat(&json) {
            Ok(request) => client.chat.completions.create(&request).unwrap_err(),
            Err(error) => error,
        };
        let json_error = error.to_openai().to_string();
        assert!(
            json_error.len() <= MAX_MESSAGE_BYTES + MAX_PARAM_BYTES + 200,
            "{}",
            json_error.len()
        );
        assert!(error.to_string().len() <= MAX_MESSAGE_BYTES + MAX_PARAM_BYTES + 32);
    }
    let error = EmbeddingRequest::from_json(&format!(
        r#"{{"model": "m", "input": "x", "encoding_format": "{huge}"}}"#
    ))
    .and_then(|r| r.format().map(|_| ()))
    .unwrap_err();
    assert!(error.message.len() < 400, "{}", error.message.len());
}

fn config_error(predictor: PredictorConfig) -> Error {
    let config = Config::empty()
        .models_dir(std::env::temp_dir())
        .predictor(predictor);
    match Client::from_config(&config) {
        Ok(_) => panic!("the config was accepted"),
        Err(error) => error,
    }
}

#[test]
fn config_values_out_of_range_are_refused_by_field_when_the_client_is_made() {
    let llama = || PredictorConfig::llama("m", "m.gguf");
    for (predictor, field) in [
        (llama().threads(0), "predictors[0].threads"),
        (llama().threads(100_000), "predictors[0].threads"),
        (llama().parallel(0), "predictors[0].parallel"),
        (llama().parallel(100_000), "predictors[0].parallel"),
        (llama().n_ctx(1), "predictors[0].n_ctx"),
        (llama().n_ctx(u32::MAX), "predictors[0].n_ctx"),
        (
            llama().chat_template("no-such-template"),
            "predictors[0].chat_template",
        ),
        (
            llama().chat_template("chat\0ml"),
            "predictors[0].chat_template",
        ),
        (llama().max_length(128), "predictors[0].max_length"),
        (
            PredictorConfig::embedding("e", "e.onnx", "t.json").max_length(1),
            "predictors[0].max_length",
        ),
        (
            PredictorConfig::embedding("e", "e.onnx", "t.json").parallel(2),
            "predictors[0].parallel",
        ),
        (
            PredictorConfig::llama("m", "a\0b.gguf"),
            "predictors[0].model",
        ),
        (PredictorConfig::llama("", "m.gguf"), "predictors[0].tag"),
    ] {
        let error = config_error(predictor.clone());
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{predictor:?}");
        assert_eq!(
            error.param.as_deref(),
            Some(field),
            "{predictor:?}: {error:?}"
        );
    }
    // A known template name is fine.
    let config = Config::empty().predictor(llama().chat_template("chatml"));
    assert!(Client::from_config(&config).is_ok());
}

#[test]
fn paths_of_the_wrong_kind_are_refused() {
    let dir = std::env::temp_dir();
    let error = match Client::from_config(&Config::empty().models_dir("/tmp\0x")) {
        Ok(_) => panic!("accepted"),
        Err(error) => error,
    };
    assert_eq!(error.param.as_deref(), Some("models_dir"), "{error:?}");
    assert!(error.message.contains("NUL"), "{error:?}");
    // A directory where a model file should be.
    let subdir = dir.join(format!("ingle-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&subdir).unwrap();
    let error = config_error(PredictorConfig::llama("m", &subdir));
    assert_eq!(
        error.param.as_deref(),
        Some("predictors[0].model"),
        "{error:?}"
    );
    assert!(error.message.contains("directory"), "{error:?}");
    // A directory where the tokenizer should be, relative to the models directory.
    let config = Config::empty()
        .models_dir(&dir)
        .predictor(PredictorConfig::embedding(
            "e",
            "model.onnx",
            subdir.file_name().unwrap(),
        ));
    let error = Client::from_config(&config).err().unwrap();
    assert_eq!(
        error.param.as_deref(),
        Some("predictors[0].tokenizer"),
        "{error:?}"
    );
    // A file where the models directory should be.
    let file = subdir.join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let error = match Client::from_config(&Config::empty().models_dir(&file)) {
        Ok(_) => panic!("accepted"),
        Err(error) => error,
    };
    assert_eq!(error.param.as_deref(), Some("models_dir"), "{error:?}");
    // A file that is not GGUF: refused when the model loads, saying so.
    let config = Config::empty()
        .models_dir(&subdir)
        .predictor(PredictorConfig::llama("m", "file"));
    let client = Client::from_config(&config).unwrap();
    let error = client.predictor("m").err().unwrap();
    assert!(error.message.contains("not a GGUF file"), "{error:?}");
    std::fs::remove_dir_all(&subdir).unwrap();
}

#[test]
fn a_tensor_past_its_bound_or_whose_size_overflows_is_refused_by_its_shape() {
    use ingle::{Dtype, Tensor, MAX_TENSOR_BYTES};
    for shape in [
        vec![50_000, 50_000, 3],
        vec![usize::MAX, 2],
        vec![1 << 20, 1 << 20, 1 << 20, 1 << 20],
        vec![MAX_TENSOR_BYTES + 1],
    ] {
        let error = Tensor::new(Dtype::U8, shape.clone(), Vec::new()).unwrap_err();
        assert!(error.message.contains("GiB"), "{shape:?}: {error}");
        assert!(error.message.len() <= MAX_MESSAGE_BYTES);
    }
    let at_bound = Tensor::new(Dtype::U8, vec![MAX_TENSOR_BYTES], Vec::new()).unwrap_err();
    assert!(at_bound.message.contains("needs"), "{at_bound}");
}
