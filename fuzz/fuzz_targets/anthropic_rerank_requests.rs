//! The request JSON of Anthropic's Messages API (parsed, then mapped onto chat completions) and
//! of rerank (parsed, then checked): mapped or refused with an invalid-request error of bounded
//! size, never a panic.
#![no_main]
use ingle::anthropic::MessagesRequest;
use ingle::openai::RerankRequest;
use ingle::{Error, ErrorKind};
use libfuzzer_sys::fuzz_target;

fn refused_clearly<T>(result: Result<T, Error>) {
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
    refused_clearly(MessagesRequest::from_json(text).and_then(|r| {
        r.to_chat(false)?;
        r.to_chat(true)
    }));
    refused_clearly(RerankRequest::from_json(text).and_then(|r| r.check().map(drop)));
});
