use super::*;

fn read(json: Json) -> Result<ChatCompletionRequest> {
    MessagesRequest::from_json(&json.to_string())?.to_chat(false)
}

#[test]
fn a_conversation_with_tools_becomes_chat() {
    let chat = read(json!({
        "model": "m", "max_tokens": 10, "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {"type": "text", "text": "And tomorrow?"}]}],
        "tools": [{"name": "get_weather", "description": "Weather.",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "stop_sequences": ["\n\n"], "metadata": {"user_id": "u"},
    }))
    .unwrap();
    let json = serde_json::to_value(&chat).unwrap();
    let roles: Vec<&str> = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(
        json["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(json["messages"][3]["tool_call_id"], "toolu_1");
    assert_eq!(json["tool_choice"], "required");
    assert_eq!(json["parallel_tool_calls"], false);
    assert_eq!(json["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(json["max_tokens"], 10);
}

#[test]
fn what_claude_code_sends_is_read() {
    let chat = read(json!({"model": "m", "max_tokens": 256,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}]}))
    .unwrap();
    let json = serde_json::to_value(&chat).unwrap();
    let roles: Vec<&str> = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "system"]);
}

#[test]
fn what_cannot_be_honoured_is_refused_by_name() {
    let base = |extra: Json| {
        let mut request = json!({"model": "m", "max_tokens": 5,
            "messages": [{"role": "user", "content": "Hi"}]});
        for (k, v) in extra.as_object().unwrap() {
            request[k] = v.clone();
        }
        read(request).unwrap_err().param.unwrap()
    };
    // Enabled with a budget is a reasoning effort (refused later by a model without one);
    // Anthropic's least budget is 1,024.
    assert_eq!(
        base(json!({"thinking": {"type": "enabled", "budget_tokens": 500}})),
        "thinking.budget_tokens"
    );
    assert_eq!(
        base(json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]})),
        "tools[0].type"
    );
    assert_eq!(
        base(json!({"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}}]}]})),
        "messages[0].content[0].source.type"
    );
    assert_eq!(
        base(json!({"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]}]})),
        "messages[0].content[0].type"
    );
    assert_eq!(
        base(json!({"messages": [{"role": "tool", "content": "x"}]})),
        "messages[0].role"
    );
    assert_eq!(
        base(json!({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}})),
        "context_management.edits[0].type"
    );
    assert_eq!(
        base(json!({"context_management": []})),
        "context_management"
    );
    assert_eq!(base(json!({"messages": []})), "messages");
    assert_eq!(
        base(json!({"stop_sequences": ["a", "b", "c", "d", "e"]})),
        "stop_sequences"
    );
    assert_eq!(base(json!({"tool_choice": {"type": "any"}})), "tool_choice");
    assert_eq!(base(json!({"max_tokens": 0})), "max_tokens");
    assert_eq!(base(json!({"container": "x"})), "container");
    assert_eq!(base(json!({"stop_sequences": [""]})), "stop_sequences");
    assert_eq!(
        base(json!({"tools": [{"name": "bad name", "input_schema": {}}]})),
        "tools[0].name"
    );
    assert_eq!(
        base(json!({"messages": [{"role": "user", "content": []}]})),
        "messages[0].content"
    );
    assert_eq!(
        base(json!({"messages": [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "{"}]})),
        "messages[1].role"
    );
    assert_eq!(
        base(json!({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "content": "x"}]}]})),
        "messages[0].content[0].tool_use_id"
    );
}

#[test]
fn a_tool_result_answers_a_call_of_the_previous_message_and_call_ids_are_unique() {
    let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "f", "input": {}});
    let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "42"});
    let conversation =
        |messages: Json| read(json!({"model": "m", "max_tokens": 5, "messages": messages}));
    // Answering the previous message's calls, in any order: read.
    conversation(json!([
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [call("a"), call("b")]},
        {"role": "user", "content": [result("b"), result("a")]}]))
    .unwrap();
    // Messages of one role in a row are one turn (Anthropic's API joins them); a system
    // message between turns changes nothing.
    conversation(json!([
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [call("a")]},
        {"role": "assistant", "content": [call("b")]},
        {"role": "system", "content": "# Environment"},
        {"role": "user", "content": [result("a")]},
        {"role": "user", "content": [result("b")]}]))
    .unwrap();
    for (messages, param) in [
        // No call at all.
        (
            json!([{"role": "user", "content": [result("toolu_x")]}]),
            "messages[0].content[0].tool_use_id",
        ),
        // A call of another id.
        (
            json!([{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [call("a")]},
                {"role": "user", "content": [result("a"), result("z")]}]),
            "messages[2].content[1].tool_use_id",
        ),
        // A call of a message before the previous one.
        (
            json!([{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [call("a")]},
                {"role": "user", "content": [result("a")]},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": [result("a")]}]),
            "messages[4].content[0].tool_use_id",
        ),
        // Two calls with one id.
        (
            json!([{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [call("a"), call("a")]},
                {"role": "user", "content": [result("a")]}]),
            "messages[1].content[1].id",
        ),
        // Two calls with one id in two messages of one turn.
        (
            json!([{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [call("a")]},
                {"role": "assistant", "content": [call("a")]},
                {"role": "user", "content": [result("a")]}]),
            "messages[2].content",
        ),
    ] {
        let error = conversation(messages.clone()).unwrap_err();
        assert_eq!(error.kind, crate::ErrorKind::InvalidRequest, "{messages}");
        assert_eq!(error.param.as_deref(), Some(param), "{messages}: {error}");
    }
}

#[test]
fn deep_and_many_blocks_are_refused_or_read_without_overflow() {
    // Written as text: a serde_json value that deep would overflow the stack when dropped.
    let deep = format!("{}\"x\"{}", "[".repeat(100_000), "]".repeat(100_000));
    // serde_json refuses what nests past its recursion limit, before any of it is mapped.
    let text = format!(
        r#"{{"model": "m", "max_tokens": 5, "messages": [{{"role": "user", "content": {deep}}}]}}"#
    );
    let error = MessagesRequest::from_json(&text).unwrap_err();
    assert_eq!(error.kind, crate::ErrorKind::InvalidRequest);
    // Nested tool_result content and 10,000 text blocks: one error, or one user message.
    let nested = read(json!({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}]}]}))
    .unwrap_err();
    assert_eq!(
        nested.param.as_deref(),
        Some("messages[2].content[0].content[0].type")
    );
    let many = vec![json!({"type": "text", "text": "a"}); 10_000];
    let chat = read(json!({"model": "m", "max_tokens": 5,
        "messages": [{"role": "user", "content": many}]}))
    .unwrap();
    assert_eq!(chat.messages.len(), 1);
}
