//! A CTranslate2 `model.bin` (Whisper's weights): read, or refused, never a panic or an
//! allocation the file's size does not justify.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(variables) = ingle::parsers::ct2_model(data) {
        assert!(variables <= data.len());
    }
});
