use super::*;

#[test]
fn names_are_unique_and_streamed_by_names_a_streaming_method_on_the_same_request() {
    for (i, m) in METHODS.iter().enumerate() {
        assert!(
            METHODS[..i].iter().all(|other| other.name != m.name),
            "{} twice",
            m.name
        );
        if let Some(name) = m.streamed_by {
            let streaming = method(name).unwrap();
            assert!(streaming.gives.streams(), "{name} does not stream");
            assert_eq!(streaming.request, m.request, "{name}");
            assert!(
                streaming.route.is_none(),
                "{name} shares {}'s route",
                m.name
            );
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
    match items.parse(
        r#"{"response_id": "r", "limit": "10", "include[]": "x"}"#,
        None,
    ) {
        Ok(Request::InputItems { limit, .. }) => assert_eq!(limit, Some(10)),
        other => panic!("{:?}", other.err()),
    }
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
    assert_eq!(
        create.for_request(&streamed).name,
        "chat.completions.stream"
    );
    let whole = create
        .parse(r#"{"model": "m", "messages": []}"#, None)
        .unwrap();
    assert_eq!(create.for_request(&whole).name, "chat.completions.create");
    assert_eq!(whole.model(), Some("m"));
}

#[test]
fn every_optional_field_has_a_json_schema() {
    for m in METHODS {
        for (name, schema) in m.optional {
            let schema: serde_json::Value =
                serde_json::from_str(schema).unwrap_or_else(|e| panic!("{}: {name}: {e}", m.name));
            assert!(schema["type"].is_string(), "{}: {name}", m.name);
        }
        assert!(
            m.optional.is_empty() || m.takes != Takes::Json,
            "{}: a JSON body's fields are its type's",
            m.name
        );
    }
}
