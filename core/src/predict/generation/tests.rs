use super::parse::token_id;
use super::*;
use serde_json::json;

#[test]
fn a_logit_bias_key_is_a_token_id_only_as_decimal_digits() {
    assert_eq!(token_id("0"), Some(0));
    assert_eq!(token_id("5"), Some(5));
    assert_eq!(token_id("151643"), Some(151643));
    for bad in [
        " 5",
        "5 ",
        "+5",
        "-5",
        "0005",
        "05",
        "",
        "5.0",
        "1e3",
        "٥",
        "99999999999999999999",
    ] {
        assert_eq!(token_id(bad), None, "{bad:?}");
    }
}

fn request(options: GenerationOptions) -> Result<GenerationRequest> {
    GenerationRequest::new(GenerationInput::Prompt("Hi".into()), options)
}

#[test]
fn each_option_is_checked_naming_the_callers_field() {
    let error = request(GenerationOptions {
        max_tokens: Some(("max_completion_tokens", 0)),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("max_completion_tokens"));
    assert!(error.message.contains("at least 1"), "{}", error.message);
    let error = request(GenerationOptions {
        repetition_penalty: Some(("repeat_penalty", 3.0)),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("repeat_penalty"));
    let error = request(GenerationOptions {
        tools: Some(json!({"type": "function"})),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        error.message,
        "Invalid type for `tools`: expected array, got object"
    );
    let error = request(GenerationOptions {
        tool_choice: Some(json!("required")),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("tool_choice"));
    let error = request(GenerationOptions {
        stop: Some(vec!["a".into(), "".into()]),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("stop"));
}

#[test]
fn options_are_read_into_their_types() {
    let read = request(GenerationOptions {
        max_tokens: Some(("max_tokens", 5)),
        top_k: Some(7),
        tools: Some(
            json!([{"type": "function", "function": {"name": "f", "strict": true,
            "parameters": {"type": "object"}}}]),
        ),
        tool_choice: Some(json!({"type": "function", "function": {"name": "f"}})),
        response_format: Some(json!({"type": "text"})),
        logit_bias: Some(json!({"12": -100, "3": 2.5})),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(read.max_tokens, Some(5));
    assert_eq!(read.sampling.top_k, Some(7));
    let tools = read.tools.as_ref().unwrap();
    assert_eq!(
        (tools.list[0].name.as_str(), tools.list[0].strict),
        ("f", true)
    );
    assert_eq!(read.tool_choice, ToolChoice::Function("f".into()));
    assert!(read.response_format.is_none());
    let biases: Vec<_> = read.logit_bias.iter().map(|b| (b.token, b.bias)).collect();
    assert_eq!(biases, vec![(Some(12), f32::NEG_INFINITY), (Some(3), 2.5)]);
    // A named function is one call unless parallel calls are asked for; other choices default
    // to parallel, as OpenAI's.
    assert!(!read.parallel_tool_calls && !read.allow_repeated_tool_calls);
    let tools = json!([{"type": "function", "function": {"name": "f"}}]);
    let with = |choice: Json, parallel: Option<bool>| {
        request(GenerationOptions {
            tools: Some(tools.clone()),
            tool_choice: Some(choice),
            parallel_tool_calls: parallel,
            ..Default::default()
        })
        .unwrap()
        .parallel_tool_calls
    };
    let named = json!({"type": "function", "function": {"name": "f"}});
    assert!(with(named.clone(), Some(true)));
    assert!(with(json!("required"), None) && with(json!("auto"), None));
    assert!(!with(json!("auto"), Some(false)));
}

#[test]
fn inputs_and_options_read_alike() {
    let inputs = Inputs::from([
        ("prompt".to_string(), Value::from("Hi")),
        ("max_tokens".to_string(), Value::Int(3)),
        ("temperature".to_string(), Value::Int(0)),
        ("stop".to_string(), Value::from(vec!["\n"])),
        (
            "tool_choice".to_string(),
            Value::from(json!({"type": "none"})),
        ),
    ]);
    let read = GenerationRequest::from_inputs(&inputs).unwrap();
    assert!(matches!(read.input, GenerationInput::Prompt(ref p) if p == "Hi"));
    assert_eq!(read.max_tokens, Some(3));
    assert_eq!(read.sampling.temperature, Some(0.0));
    assert_eq!(read.stop, vec!["\n".to_string()]);
    assert_eq!(read.tool_choice, ToolChoice::None);
    let both = Inputs::from([
        ("prompt".to_string(), Value::from("Hi")),
        ("messages".to_string(), Value::List(vec![])),
    ]);
    let error = GenerationRequest::from_inputs(&both).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("prompt"));
}

#[test]
fn a_step_gives_the_outputs_of_a_text_engine() {
    let step = GenerationStep {
        reasoning: String::new(),
        text: "a".into(),
        finish_reason: Some("stop".into()),
        usage: Some(StepUsage {
            prompt_tokens: 2,
            completion_tokens: 1,
            cached_tokens: 0,
        }),
        tool_calls: Some(vec![ToolCallDelta {
            index: 0,
            function: Some(FunctionCallDelta {
                name: None,
                arguments: Some("{}".into()),
            }),
            ..Default::default()
        }]),
        logprobs: None,
    };
    let outputs = step.into_outputs().unwrap();
    assert_eq!(outputs[0], Value::from("a"));
    assert_eq!(outputs[1], Value::from("stop"));
    assert_eq!(
        outputs[2].as_dict().unwrap()["prompt_tokens"],
        Value::Int(2)
    );
    assert_eq!(
        outputs[3].to_json().unwrap(),
        json!([{"index": 0, "function": {"arguments": "{}"}}])
    );
    assert!(outputs[4].is_null());
}
