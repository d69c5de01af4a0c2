//! A user predictor's declaration (the JSON that the Python, Node and C bindings send):
//! read, or refused as an invalid request naming what is wrong.
#![no_main]
use ingle::{Declaration, ErrorKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(error) = Declaration::from_json(text) {
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}");
    }
});
