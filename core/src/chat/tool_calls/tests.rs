//! The parser and the turn rules on texts written as the models write them.

use super::turn::*;
use super::*;

fn parse_in_chunks(text: &str, chunk: usize) -> Vec<Piece> {
    let mut parser = ToolCallParser::new(vec!["get_weather".into()]);
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for part in chars.chunks(chunk) {
        for piece in parser.push(&part.iter().collect::<String>()) {
            push_piece(&mut out, piece);
        }
    }
    for piece in parser.finish() {
        push_piece(&mut out, piece);
    }
    fold(out)
}

/// Streamed calls folded into whole ones, to compare with what the text holds.
fn fold(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (out.last_mut(), piece) {
            (_, Piece::CallStart { name }) => out.push(Piece::Call {
                name,
                arguments: String::new(),
            }),
            (Some(Piece::Call { arguments, .. }), Piece::Arguments(more)) => {
                arguments.push_str(&more)
            }
            (_, Piece::CallEnd) => {}
            (_, piece) => push_piece(&mut out, piece),
        }
    }
    // Compare arguments as JSON values: streamed ones keep the model's spacing.
    out.into_iter()
        .map(|piece| match piece {
            Piece::Call { name, arguments } => Piece::Call {
                name,
                arguments: serde_json::from_str::<Json>(&arguments)
                    .map_or(arguments, |v| v.to_string()),
            },
            piece => piece,
        })
        .collect()
}

fn call(city: &str) -> Piece {
    Piece::Call {
        name: "get_weather".into(),
        arguments: format!(r#"{{"city":"{city}"}}"#),
    }
}

#[test]
fn every_format_in_any_chunking() {
    let cases: Vec<(&str, Vec<Piece>)> = vec![
        ("Hello there.", vec![Piece::Text("Hello there.".into())]),
        (
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            vec![call("Paris")],
        ),
        (
            "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
            vec![Piece::Text("Sure.\n".into()), call("Paris"), call("Rome")],
        ),
        (
            "```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\"\n  }\n}\n```",
            vec![call("Paris")],
        ),
        (
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}. It is sunny.",
            vec![call("Rome"), Piece::Text(". It is sunny.".into())],
        ),
        // In double braces, as Qwen2.5-Coder's template shows the format (bare or tagged).
        (
            "{{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
            vec![call("Paris")],
        ),
        (
            "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}}\n</tool_call>",
            vec![call("Rome")],
        ),
        // Not calls: an unknown name outside tags, code, a lone brace, a broken tag.
        (
            "{\"name\": \"other\"}",
            vec![Piece::Text("{\"name\": \"other\"}".into())],
        ),
        (
            "```python\nprint(1)\n```",
            vec![Piece::Text("```python\nprint(1)\n```".into())],
        ),
        ("a < b and {x}", vec![Piece::Text("a < b and {x}".into())]),
        // Tags are markup: a broken block is dropped, never shown as content.
        ("<tool_call> oops", vec![]),
        ("Hi <tool_call>{\"name\": \"x\", \"arg", vec![Piece::Text("Hi ".into())]),
        // Cut short (by max_tokens): the call as far as it went, tagged or not.
        ("Hi\n{\"name\": \"get_weather\", \"arguments\": {\"ci", vec![Piece::Text("Hi\n".into()), Piece::Call { name: "get_weather".into(), arguments: "{\"ci".into() }]),
        ("```json\n{\"name\": \"get_weather\", \"arguments\": {", vec![Piece::Call { name: "get_weather".into(), arguments: "{".into() }]),
        ("<tool_call>{\"name\": \"x\", \"arguments\": {\"a\": 1", vec![Piece::Call { name: "x".into(), arguments: "{\"a\": 1".into() }]),
    ];
    for (text, expected) in cases {
        for chunk in [1, 2, 3, 7, 1000] {
            assert_eq!(
                parse_in_chunks(text, chunk),
                expected,
                "{text:?} in chunks of {chunk}"
            );
        }
    }
}

#[test]
fn a_tagged_call_streams_its_name_then_its_arguments() {
    let mut parser = ToolCallParser::new(vec![]);
    assert_eq!(parser.push("<tool_call>\n{\"name\": \"get_"), vec![]);
    assert_eq!(
        parser.push("weather\", \"arguments\": {\"ci"),
        vec![
            Piece::CallStart {
                name: "get_weather".into()
            },
            Piece::Arguments("{\"ci".into())
        ]
    );
    assert_eq!(
        parser.push("ty\": \"Paris\"}}\n</tool"),
        vec![Piece::Arguments("ty\": \"Paris\"}".into())]
    );
    assert_eq!(
        parser.push("_call>\nDone"),
        vec![Piece::CallEnd, Piece::Text("Done".into())]
    );
    assert_eq!(parser.finish(), vec![]);
}

#[test]
fn text_is_released_as_soon_as_it_cannot_open_a_call() {
    let mut parser = ToolCallParser::new(vec!["get_weather".into()]);
    assert_eq!(
        parser.push("Hello wor"),
        vec![Piece::Text("Hello wor".into())]
    );
    assert_eq!(parser.push("ld <tool_c"), vec![Piece::Text("ld ".into())]);
    assert_eq!(parser.push("al"), vec![]); // "<tool_cal" may still open a call
    assert_eq!(parser.push("m"), vec![Piece::Text("<tool_calm".into())]);
}

/// What a turn gives out, fed in chunks of `chunk` characters: per step, its content and
/// its deltas as `name(arguments)` (a fragment alone as `+arguments`); and whether it is over.
fn turn(text: &str, chunk: usize, rules: TurnRules) -> (Vec<(String, Vec<String>)>, bool) {
    let parser = ToolCallParser::new(vec!["get_weather".into(), "get_time".into()]);
    let mut deltas = ToolCallDeltas::new(parser, rules);
    let chars: Vec<char> = text.chars().collect();
    let mut steps = Vec::new();
    let parts: Vec<String> = chars.chunks(chunk).map(|c| c.iter().collect()).collect();
    for (i, part) in parts.iter().enumerate() {
        steps.push(deltas.split(part, i + 1 == parts.len()));
        if deltas.turn_over() {
            break;
        }
    }
    let shown = steps
        .into_iter()
        .map(|(text, calls)| {
            let calls = calls
                .iter()
                .map(|d| {
                    let d = serde_json::to_value(d).unwrap();
                    let args = d["function"]["arguments"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    match d["function"]["name"].as_str() {
                        Some(name) => format!("{}:{name}({args})", d["index"]),
                        None => format!("{}:+{args}", d["index"]),
                    }
                })
                .collect();
            (text, calls)
        })
        .collect();
    (shown, deltas.turn_over())
}

/// The steps folded: content, and each index's calls joined.
fn folded(steps: &[(String, Vec<String>)]) -> (String, Vec<String>) {
    let mut content = String::new();
    let mut calls: Vec<String> = Vec::new();
    for (text, deltas) in steps {
        content.push_str(text);
        for d in deltas {
            let (index, rest) = d.split_once(':').unwrap();
            let index: usize = index.parse().unwrap();
            match rest.strip_prefix('+') {
                Some(more) => {
                    let call = &mut calls[index];
                    call.insert_str(call.len() - 1, more)
                }
                None => calls.push(rest.to_string()),
            }
        }
    }
    (content, calls)
}

const PARALLEL: TurnRules = TurnRules {
    parallel: true,
    end_on_repeat: true,
};
const ONE: TurnRules = TurnRules {
    parallel: false,
    end_on_repeat: true,
};
const ANY: TurnRules = TurnRules {
    parallel: true,
    end_on_repeat: false,
};

#[test]
fn without_parallel_calls_the_turn_ends_with_its_first_call_in_any_form() {
    let bare = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\nDone.";
    let tagged = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\nAnd more.";
    for (text, parallel) in [(bare, 2), (tagged, 1)] {
        for chunk in [1, 3, 1000] {
            let (steps, over) = turn(text, chunk, ONE);
            assert!(over, "{text:?} by {chunk}");
            assert_eq!(
                folded(&steps),
                (
                    String::new(),
                    vec![r#"get_weather({"city": "Paris"})"#.to_string()]
                ),
                "{text:?} by {chunk}"
            );
        }
        // With parallel calls, text after the calls ends the turn all the same.
        let (steps, over) = turn(text, 1000, PARALLEL);
        assert!(over);
        let (content, calls) = folded(&steps);
        assert_eq!(calls.len(), parallel, "{text:?}");
        assert_eq!(content, "");
    }
}

#[test]
fn a_repeated_call_ends_the_turn_unless_allowed() {
    let call = |city: &str| {
        format!("{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n")
    };
    // The same call again (spaced otherwise: compared as JSON), after another one.
    let text = format!(
        "{}{}{}{}",
        call("Paris"),
        call("Rome"),
        "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n",
        call("Oslo")
    );
    for chunk in [1, 2, 5, 1000] {
        let (steps, over) = turn(&text, chunk, PARALLEL);
        assert!(over, "by {chunk}");
        let (content, calls) = folded(&steps);
        assert_eq!(content, "", "whitespace between calls is not content");
        assert_eq!(
            calls,
            [
                r#"get_weather({"city": "Paris"})"#,
                r#"get_weather({"city": "Rome"})"#
            ],
            "by {chunk}"
        );
        let (steps, over) = turn(&text, chunk, ANY);
        assert!(!over);
        assert_eq!(folded(&steps).1.len(), 4, "by {chunk}");
    }
    // Tagged calls stream; the second call to a tool already called comes whole.
    let tagged = |city: &str| {
        format!("<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>\n")
    };
    let text = format!("{}{}{}", tagged("Paris"), tagged("Rome"), tagged("Paris"));
    let (steps, over) = turn(&text, 1, PARALLEL);
    assert!(over);
    let deltas: Vec<&String> = steps.iter().flat_map(|(_, d)| d).collect();
    assert!(deltas.len() > 3, "the first call streams: {deltas:?}");
    assert_eq!(
        deltas.last().unwrap().as_str(),
        r#"1:get_weather({"city": "Rome"})"#
    );
    assert_eq!(folded(&steps).1.len(), 2);
}

#[test]
fn content_comes_before_the_calls_and_text_after_them_ends_the_turn() {
    let parser = ToolCallParser::new(vec!["get_weather".into()]);
    let mut deltas = ToolCallDeltas::new(parser, PARALLEL);
    let (content, first) = deltas.split(
        "Let me check.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
        false,
    );
    assert_eq!(content, "Let me check.\n");
    assert_eq!(first.len(), 2, "the call's start and its first arguments");
    assert!(!deltas.turn_over());
    // The last arguments, then the newline (not content) and text: the turn is over.
    let (content, last) = deltas.split("is\"}}\n{\"name\": \"get_weather_args\"}", false);
    assert_eq!(content, "");
    assert_eq!(last.len(), 1);
    assert!(deltas.turn_over());
    // Whitespace alone is content in a reply without calls.
    let mut deltas = ToolCallDeltas::new(ToolCallParser::new(vec![]), PARALLEL);
    assert_eq!(deltas.split("\n", false), (String::new(), vec![]));
    assert_eq!(deltas.split(" ", true), ("\n ".to_string(), vec![]));
}

#[test]
fn a_call_answered_since_the_user_spoke_made_again_is_a_loop() {
    let call = |city: &str| {
        serde_json::json!({"id": "c", "type": "function",
        "function": {"name": "get_weather", "arguments": format!("{{\"city\": \"{city}\"}}")}})
    };
    let messages: Vec<Json> = serde_json::from_value(serde_json::json!([
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "tool_calls": [call("Oslo")]},
        {"role": "tool", "tool_call_id": "c", "content": "Rain."},
        {"role": "user", "content": "And in Paris?"},
        {"role": "assistant", "tool_calls": [call("Paris")]},
        {"role": "tool", "tool_call_id": "c", "content": "Sunny."},
        {"role": "assistant", "tool_calls": [call("Rome")]},
    ]))
    .unwrap();
    // Oslo was before the user last spoke; Rome has no result yet.
    let answered = answered_calls(&messages);
    assert_eq!(
        answered,
        [(
            "get_weather".to_string(),
            serde_json::json!({"city": "Paris"})
        )]
    );
    let deltas = |rules| {
        let parser = ToolCallParser::new(vec!["get_weather".into()]);
        ToolCallDeltas::new(parser, rules).with_answered(answered.clone())
    };
    let again = "{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}";
    let mut turn = deltas(PARALLEL);
    assert_eq!(
        turn.split(again, false),
        (String::new(), vec![]),
        "never shown"
    );
    assert!(!turn.looped(), "the turn goes on: a new call may follow");
    assert_eq!(turn.split("\n", true), (String::new(), vec![]));
    assert!(turn.looped());
    // Dropped, and a new call follows: the turn is no loop.
    let mut turn = deltas(PARALLEL);
    let lyon = again.replace("Paris", "Lyon");
    let (_, calls) = turn.split(&format!("{again}\n{lyon}\n{again}"), true);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        serde_json::to_value(&calls[0]).unwrap()["function"]["arguments"],
        lyon[lyon.find("{\"city").unwrap()..lyon.len() - 1]
    );
    assert!(turn.turn_over() && !turn.looped());
    // Without parallel calls, the dropped call is the turn's one call: the turn has looped.
    let mut turn = deltas(ONE);
    turn.split(again, false);
    assert!(turn.turn_over() && turn.looped());
    // A turn that ends with nothing at all after results; one with content is an answer.
    let mut turn = deltas(PARALLEL);
    assert_eq!(turn.split(" ", true), (" ".to_string(), vec![]));
    assert!(turn.looped());
    let mut turn = deltas(PARALLEL);
    assert_eq!(turn.split("Sunny.", true).0, "Sunny.");
    assert!(!turn.looped());
    let mut turn = ToolCallDeltas::new(ToolCallParser::new(vec![]), PARALLEL);
    turn.split("", true);
    assert!(
        !turn.looped(),
        "without results there is nothing to answer from"
    );
    // Text after a dropped call is the reply, never lost; a preamble before one is no answer.
    let mut turn = deltas(PARALLEL);
    let (content, calls) = turn.split(&format!("{again}\nThe weather in Paris is sunny."), true);
    assert_eq!(
        (content.as_str(), calls.len()),
        ("The weather in Paris is sunny.", 0)
    );
    assert!(!turn.looped());
    // JSON after a dropped call (the tool's schema echoed, the result in an object) is no
    // reply: the turn ends there, looped.
    for echo in [
        "{\"name\": \"get_weather_args\", \"type\": \"object\"}",
        "[1]",
    ] {
        let mut turn = deltas(PARALLEL);
        let (content, calls) = turn.split(&format!("{again}\n{echo}"), false);
        assert_eq!((content.as_str(), calls.len()), ("", 0));
        assert!(turn.turn_over() && turn.looped(), "{echo}");
    }
    let mut turn = deltas(PARALLEL);
    let (content, _) = turn.split(&format!("Let me check.\n{again}"), true);
    assert_eq!(content, "Let me check.\n");
    assert!(turn.looped());
    // A call after a dropped one is the turn's first: index 0.
    let mut turn = deltas(PARALLEL);
    let nice = again.replace("Paris", "Nice");
    let (_, calls) = turn.split(&format!("{again}\n{nice}"), true);
    assert_eq!(serde_json::to_value(&calls[0]).unwrap()["index"], 0);
    // Another call is no loop; nor is the repeat when repeats are allowed.
    let mut turn = deltas(PARALLEL);
    let (_, calls) = turn.split(&again.replace("Paris", "Lyon"), true);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(!turn.looped());
    let mut turn = deltas(ANY);
    assert_eq!(
        turn.split(again, true).1.len(),
        2,
        "streamed: its start, its arguments"
    );
    assert!(!turn.looped());
}

#[test]
fn tool_exchanges_become_plain_turns_that_still_alternate() {
    let messages = vec![
        serde_json::json!({"role": "system", "content": "Be brief."}),
        serde_json::json!({"role": "user", "content": "Weather in Lisbon and Porto?"}),
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Lisbon\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Porto"}}}]}),
        serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 C"}),
        serde_json::json!({"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "Rain"}]}),
        serde_json::json!({"role": "user", "content": "And tomorrow?"}),
        serde_json::json!({"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "forecast", "arguments": "{}"}}]}),
        serde_json::json!({"role": "tool", "tool_call_id": "unknown", "content": "Cloudy"}),
    ];
    let plain = exchanges_as_text(&messages);
    let roles: Vec<&str> = plain.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "user", "assistant", "user"]
    );
    assert!(plain.iter().all(|m| m.get("tool_calls").is_none()));
    assert_eq!(
        plain[2]["content"],
        "Calling get_weather with {\"city\": \"Lisbon\"}.\nCalling get_weather with {\"city\":\"Porto\"}."
    );
    assert_eq!(
        plain[3]["content"],
        "The result of get_weather: Sunny, 21 C\nThe result of get_weather: Rain\n\nAnd tomorrow?"
    );
    assert_eq!(
        plain[4]["content"],
        "Let me look.\nCalling forecast with {}."
    );
    assert_eq!(plain[5]["content"], "The result of the tool: Cloudy");
    // Text, then a call in a message of its own (as Responses keeps them); results after a user
    // message: still one message a role.
    let split = vec![
        serde_json::json!({"role": "user", "content": "Hi"}),
        serde_json::json!({"role": "assistant", "content": "Let me look."}),
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "look", "arguments": "{}"}}]}),
        serde_json::json!({"role": "user", "content": "Quick!"}),
        serde_json::json!({"role": "tool", "tool_call_id": "c9", "content": "Found"}),
    ];
    let plain = exchanges_as_text(&split);
    let roles: Vec<&str> = plain.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(plain[1]["content"], "Let me look.\n\nCalling look with {}.");
    assert_eq!(plain[2]["content"], "Quick!\n\nThe result of look: Found");
    // Without tool exchanges, the conversation is as it was.
    assert_eq!(exchanges_as_text(&messages[..2]), messages[..2].to_vec());
}
