//! The request JSON of every method of the table (a method added there is fuzzed with the
//! others; an upload's with an empty file beside it), and prediction inputs: parsed or refused
//! with an invalid-request error of bounded size, never a panic.
#![no_main]
use ingle::methods::{Takes, METHODS};
use ingle::openai::TranscriptionAudio;
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
    for method in METHODS {
        let audio =
            (method.takes == Takes::Upload).then(|| TranscriptionAudio::file(Vec::new(), None));
        refused_clearly(method.parse(text, audio).map(drop));
    }
    refused_clearly(ingle::inputs_from_json(text).map(drop));
});
