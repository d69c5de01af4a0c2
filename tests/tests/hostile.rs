//! Hostile input on the real default model: what cannot fit is refused before it is paid for,
//! config values that would hang or crash llama.cpp are capped or refused, and the client
//! answers a normal request afterwards.

use ingle::openai::{ChatCompletionRequest, ChatMessage, CompletionRequest};
use ingle::ErrorKind;
use ingle_tests::{ask, own_client, shared, MODEL};

fn still_answers() {
    let request = ChatCompletionRequest {
        max_tokens: Some(4),
        ..ask("Say hi")
    };
    let completion = shared().chat.completions.create(&request).unwrap();
    assert_eq!(completion.choices.len(), 1);
}

#[test]
fn a_10_mb_message_is_refused_without_tokenizing_it() {
    let huge = "word ".repeat(2 << 20);
    let request = ask(&huge);
    let error = shared().chat.completions.create(&request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextLengthExceeded, "{error:?}");
    assert_eq!(error.param.as_deref(), Some("messages"));
    // The cheap bound ("at least N tokens"), not a count of the tokens.
    assert!(error.message.contains("is at least"), "{}", error.message);
    let request = CompletionRequest::new(MODEL, huge);
    let error = shared().completions.create(&request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextLengthExceeded, "{error:?}");
    assert_eq!(error.param.as_deref(), Some("prompt"));
    still_answers();
}

#[test]
fn ten_thousand_messages_are_refused_without_tokenizing_them() {
    let messages = (0..10_000)
        .map(|i| ChatMessage::new(if i % 2 == 0 { "user" } else { "assistant" }, "hello there"))
        .collect();
    let request = ChatCompletionRequest::new(MODEL, messages);
    let error = shared().chat.completions.create(&request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextLengthExceeded, "{error:?}");
    assert!(error.message.contains("is at least"), "{}", error.message);
    still_answers();
}

#[test]
fn a_prompt_just_over_the_context_is_still_counted_exactly() {
    // Under the cheap bound: tokenized, and the message gives the exact count.
    let request = ask(&"Paris ".repeat(3000));
    let error = shared().chat.completions.create(&request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextLengthExceeded, "{error:?}");
    assert!(error.message.contains("resulted in"), "{}", error.message);
}

#[test]
fn threads_beyond_the_cores_are_capped() {
    let cores = std::thread::available_parallelism().unwrap().get() as u32;
    assert_eq!(
        ingle::backends::llama::capped_threads(Some(100_000), "t"),
        cores
    );
    assert_eq!(ingle::backends::llama::capped_threads(Some(1), "t"), 1);
    // 64 threads on 2 cores took minutes for two tokens before the cap.
    let client = own_client(|p| p.threads(64));
    let request = ChatCompletionRequest {
        max_tokens: Some(2),
        ..ask("Hi")
    };
    let completion = client.chat.completions.create(&request).unwrap();
    assert_eq!(completion.usage.completion_tokens, 2);
}

#[test]
fn a_kv_cache_larger_than_memory_is_refused_naming_the_settings() {
    let client = own_client(|p| p.parallel(256).n_ctx(8192));
    let error = client.predictor(MODEL).err().unwrap();
    assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error:?}");
    assert!(
        error.message.contains("`n_ctx`") && error.message.contains("`parallel`"),
        "{error:?}"
    );
}

#[test]
fn more_choices_than_the_model_decodes_at_once_are_refused_naming_n() {
    // n = 8 on 4 sequences: the stream blocked on a queued choice, generation ran on for 80 s
    // after the client left, and every other request waited.
    let err = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            n: Some(8),
            max_tokens: Some(4),
            ..ask("Say hi")
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest, "{err}");
    assert_eq!(err.param.as_deref(), Some("n"));
    assert!(err.message.contains("so `n` must be at most"), "{err}");
    let err = shared()
        .completions
        .create(&CompletionRequest {
            n: Some(8),
            max_tokens: Some(4),
            ..CompletionRequest::new(MODEL, "Once")
        })
        .unwrap_err();
    assert_eq!(err.param.as_deref(), Some("n"), "{err}");
    let two = shared()
        .chat
        .completions
        .create(&ChatCompletionRequest {
            n: Some(2),
            max_tokens: Some(4),
            ..ask("Say hi")
        })
        .unwrap();
    assert_eq!(two.choices.len(), 2);
}

#[test]
fn a_bad_config_value_names_its_field() {
    let text = "[[predictors]]\ntag = \"x\"\nbackend = \"llama\"\nmodel = \"a.gguf\"\n\
                [[predictors]]\ntag = \"y\"\nbackend = \"llama\"\nmodel = \"b.gguf\"\nthreads = -1\n";
    let err = ingle::Config::from_toml(text).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("config"));
    assert!(
        err.message.contains("at `predictors[1].threads`") && err.message.contains("-1"),
        "{err}"
    );
}
