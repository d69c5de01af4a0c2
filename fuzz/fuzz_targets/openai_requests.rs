//! The request JSON of every OpenAI surface, and prediction inputs: parsed or refused with an
//! invalid-request error of bounded size, never a panic.
#![no_main]
use ingle::openai::{
    ChatCompletionRequest, CompletionRequest, EmbeddingRequest, ResponseRequest, SpeechRequest,
    TranscriptionRequest,
};
use ingle::{Error, ErrorKind};
use libfuzzer_sys::fuzz_target;

fn refused_clearly(result: Result<(), Error>) {
    if let Err(error) = result {
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}");
        assert!(
            error.message.len() <= ingle::error::MAX_MESSAGE_BYTES,
            "{}",
            error.message.len()
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    refused_clearly(ChatCompletionRequest::from_json(text).map(drop));
    refused_clearly(CompletionRequest::from_json(text).map(drop));
    refused_clearly(EmbeddingRequest::from_json(text).map(drop));
    refused_clearly(SpeechRequest::from_json(text).map(drop));
    refused_clearly(TranscriptionRequest::from_json(text).map(drop));
    refused_clearly(ResponseRequest::from_json(text).map(drop));
    refused_clearly(ingle::inputs_from_json(text).map(drop));
});
