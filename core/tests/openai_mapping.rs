//! The OpenAI layer finds predictor parameters by annotation, never by name.

use ingle::openai::{ChatCompletionRequest, ChatMessage, CompletionRequest};
use ingle::{
    Annotation, Client, Config, ErrorKind, FnPredictor, Inputs, OutputStream, Parameter, Signature,
    Value, ValueType,
};
use std::sync::Arc;

/// A chat "model" in plain Rust whose parameters have unusual names: it echoes the last message
/// word by word.
fn echo_predictor() -> FnPredictor {
    let signature = Signature::new(
        vec![Parameter::new("conversation", ValueType::List).annotated(Annotation::CHAT_MESSAGES)],
        vec![
            Parameter::new("out", ValueType::String).annotated(Annotation::TextDelta),
            Parameter::new("why", ValueType::String)
                .optional()
                .annotated(Annotation::FinishReason),
        ],
    );
    FnPredictor::generator("@test/echo", signature, |inputs: Inputs| {
        let messages = inputs["conversation"].as_list().unwrap();
        let last = messages.last().unwrap().as_dict().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        let words: Vec<String> = last.split_inclusive(' ').map(str::to_string).collect();
        let n = words.len();
        let stream: OutputStream = Box::new(words.into_iter().enumerate().map(move |(i, w)| {
            let why = if i + 1 == n {
                Value::from("stop")
            } else {
                Value::Null
            };
            Ok(vec![Value::String(w), why])
        }));
        Ok(stream)
    })
}

fn client() -> Client {
    let client = Client::from_config(&Config::empty()).unwrap();
    client.register(Arc::new(echo_predictor())).unwrap();
    let sum = Signature::new(
        vec![Parameter::new("a", ValueType::Int)],
        vec![Parameter::new("b", ValueType::Int)],
    );
    client
        .register(Arc::new(FnPredictor::eager("@test/sum", sum, |_| {
            Ok(vec![Value::Int(0)])
        })))
        .unwrap();
    client
}

#[test]
fn a_predictor_with_the_right_annotations_serves_chat_whatever_its_names() {
    let client = client();
    let request =
        ChatCompletionRequest::new("@test/echo", vec![ChatMessage::user("hello there world")]);
    let completion = client.chat.completions.create(&request).unwrap();
    assert_eq!(completion.choices[0].message.text(), "hello there world");
    assert_eq!(completion.choices[0].finish_reason, "stop");
    let chunks: Vec<_> = client
        .chat
        .completions
        .stream(&request)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        chunks.len(),
        1 + 3 + 1,
        "role chunk, one chunk per word, finish chunk"
    );
}

#[test]
fn a_predictor_that_cannot_serve_chat_gets_an_error_saying_why() {
    let client = client();
    let request = ChatCompletionRequest::new("@test/sum", vec![ChatMessage::user("hi")]);
    let err = client.chat.completions.create(&request).unwrap_err();
    assert_eq!(
        (err.kind, err.param.as_deref()),
        (ErrorKind::InvalidRequest, Some("model"))
    );
    assert!(
        err.message.contains("cannot serve chat completions")
            && err.message.contains("ChatMessages"),
        "{err}"
    );
    let err = client
        .completions
        .create(&CompletionRequest::new("@test/echo", "hi"))
        .unwrap_err();
    assert!(
        err.message.contains("cannot serve text completions") && err.message.contains("Prompt"),
        "{err}"
    );
}

#[test]
fn an_option_the_predictor_does_not_declare_is_rejected_not_ignored() {
    let client = client();
    let request = ChatCompletionRequest {
        temperature: Some(0.5),
        ..ChatCompletionRequest::new("@test/echo", vec![ChatMessage::user("hi")])
    };
    let err = client.chat.completions.create(&request).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("temperature"));
    assert!(
        err.message.contains("does not support `temperature`"),
        "{err}"
    );
}
