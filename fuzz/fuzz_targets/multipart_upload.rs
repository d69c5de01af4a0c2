//! The `multipart/form-data` body of an audio upload (`/v1/audio/transcriptions`): the
//! request and its file, or a refusal as an invalid request, never a panic.
#![no_main]
use ingle::ErrorKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The boundary (the first line, as a Content-Type would give it), then the body.
    let Some(newline) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(boundary) = std::str::from_utf8(&data[..newline]) else {
        return;
    };
    if boundary.is_empty() || boundary.len() > 70 {
        return;
    }
    match ingle_serve::parse_multipart_for_fuzzing(boundary, &data[newline + 1..]) {
        Ok((request, _audio)) => assert!(!request.model.is_empty()),
        Err(error) => assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}"),
    }
});
