//! An ingle config, as TOML (a file) and as JSON (what C and JS pass): read, or refused as an
//! invalid request about `config`.
#![no_main]
use ingle::{Config, ErrorKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for result in [Config::from_toml(text), Config::from_json(text)] {
        if let Err(error) = result {
            assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}");
        }
    }
});
