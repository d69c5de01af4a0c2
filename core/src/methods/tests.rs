use super::*;

#[test]
fn names_are_unique_and_a_stream_twin_streams_without_a_route_of_its_own() {
    for (i, m) in METHODS.iter().enumerate() {
        assert!(
            METHODS[..i].iter().all(|other| other.name != m.name),
            "{} twice",
            m.name
        );
        if let Some(streaming) = m.streamed_by {
            assert!(
                streaming.gives.streams(),
                "{} does not stream",
                streaming.name
            );
            assert!(!m.gives.streams(), "{} streams already", m.name);
            assert_eq!(streaming.takes, m.takes, "{}", streaming.name);
            assert!(
                streaming.route.is_none(),
                "{} shares {}'s route",
                streaming.name,
                m.name
            );
            // Listed, right after the method it streams for.
            assert_eq!(METHODS.get(i + 1).map(|s| s.name), Some(streaming.name));
        }
    }
}

#[test]
fn routes_are_unique_per_verb() {
    let routes: Vec<_> = METHODS
        .iter()
        .filter_map(|m| m.route.map(|r| (r.verb, r.path)))
        .collect();
    for (i, route) in routes.iter().enumerate() {
        assert!(!routes[..i].contains(route), "{route:?} twice");
    }
}

#[test]
fn an_unknown_method_is_an_error_naming_it_and_the_known_ones() {
    let error = method("chat.complete").unwrap_err();
    assert_eq!(error.code, Some(ErrorCode::UnknownMethod));
    assert_eq!(error.param.as_deref(), Some("method"));
    assert!(
        error.message.contains("'chat.complete'"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("chat.completions.create"),
        "{}",
        error.message
    );
}

#[test]
fn named_values_are_checked_by_name() {
    let items = method("responses.input_items.list").unwrap();
    let error = items
        .parse(r#"{"response_id": "r", "colour": "red"}"#, None)
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("colour"));
    let error = items
        .parse(r#"{"response_id": "r", "limit": "ten"}"#, None)
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("limit"));
    assert!(error.message.contains("'ten'"), "{}", error.message);
    let page = ResponsesInputItemsList::parse(
        r#"{"response_id": "r", "limit": "10", "include[]": "x"}"#,
        None,
    )
    .unwrap();
    assert_eq!(page.limit, Some(10));
    assert_eq!(page.response_id, "r");
    let error = items.parse("{}", None).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("response_id"));
    let error = method("models.retrieve")
        .unwrap()
        .parse(r#"{"model": 3}"#, None)
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("model"));
}

#[test]
fn an_upload_without_its_audio_names_file() {
    let error = method("audio.transcriptions.create")
        .unwrap()
        .parse(r#"{"model": "@local/whisper-tiny-en"}"#, None)
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("file"));
}

#[test]
fn a_stream_request_goes_to_the_streaming_method_over_http() {
    let create = method("chat.completions.create").unwrap();
    let streamed = create
        .parse(r#"{"model": "m", "messages": [], "stream": true}"#, None)
        .unwrap();
    assert_eq!(streamed.method().name, "chat.completions.create");
    assert_eq!(
        streamed.over_http().method().name,
        "chat.completions.stream"
    );
    let whole = create
        .parse(r#"{"model": "m", "messages": []}"#, None)
        .unwrap();
    assert_eq!(whole.model(), Some("m"));
    assert_eq!(whole.over_http().method().name, "chat.completions.create");
    // A stream method's request stays on it.
    let stream = method("chat.completions.stream").unwrap();
    let parsed = stream
        .parse(r#"{"model": "m", "messages": [], "stream": true}"#, None)
        .unwrap();
    assert_eq!(parsed.over_http().method().name, "chat.completions.stream");
}

#[test]
fn models_retrieve_names_a_model_it_does_not_run_on() {
    let parsed = method("models.retrieve")
        .unwrap()
        .parse(r#"{"model": "/m.gguf"}"#, None)
        .unwrap();
    assert_eq!(parsed.model(), None);
    assert_eq!(parsed.named_model(), Some("/m.gguf"));
}

#[test]
fn tokenize_and_detokenize_name_their_fields() {
    let error = method("tokenize")
        .unwrap()
        .parse(r#"{"model": "m", "content": "x", "colour": 1}"#, None)
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("colour"));
    let error = method("detokenize")
        .unwrap()
        .parse(r#"{"model": "m", "tokens": ["a"]}"#, None)
        .unwrap_err();
    assert!(
        error
            .param
            .as_deref()
            .is_some_and(|p| p.starts_with("tokens")),
        "{error:?}"
    );
}

#[test]
fn every_params_schema_is_its_type_and_only_named_and_upload_methods_have_params() {
    for m in METHODS {
        for param in m.params {
            let schema = param.kind.schema();
            let expected = match param.kind {
                ParamType::Text { .. } => "string",
                ParamType::Integer { .. } => "integer",
                ParamType::Number { .. } => "number",
                ParamType::Boolean => "boolean",
                ParamType::TextList { .. } => "array",
            };
            assert_eq!(schema["type"], expected, "{}: {}", m.name, param.name);
        }
        assert!(
            m.params.is_empty() || m.takes != Takes::Json,
            "{}: a JSON body's fields are its type's",
            m.name
        );
    }
}

#[test]
fn the_anthropic_dialect_is_the_messages_methods() {
    for m in METHODS {
        assert_eq!(
            m.dialect == Dialect::Anthropic,
            m.name.starts_with("messages."),
            "{}",
            m.name
        );
    }
}

#[test]
fn a_param_type_writes_its_bounds_and_values() {
    let limit = ParamType::Integer {
        minimum: Some(1),
        maximum: Some(100),
    };
    assert_eq!(
        limit.schema(),
        serde_json::json!({"type": "integer", "minimum": 1, "maximum": 100})
    );
    assert_eq!(
        ParamType::one_of(&["asc", "desc"]).schema(),
        serde_json::json!({"type": "string", "enum": ["asc", "desc"]})
    );
    assert_eq!(
        ParamType::Number {
            minimum: 0,
            maximum: 1
        }
        .schema(),
        serde_json::json!({"type": "number", "minimum": 0, "maximum": 1})
    );
}
