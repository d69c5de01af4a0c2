//! `include/ingle.h` is generated, and committed so that users need no Rust tooling to read it.
//! This test regenerates it and fails if the committed copy is stale; `INGLE_BLESS_HEADER=1`
//! (what `scripts/gen-header` sets) writes the fresh one instead.

use std::path::Path;

#[test]
fn committed_header_matches_the_code() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let header = crate_dir.join("../include/ingle.h");
    if std::env::var_os("INGLE_BLESS_HEADER").is_some() {
        std::fs::write(&header, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&header).unwrap_or_default();
    assert!(
        committed == generated,
        "include/ingle.h is out of date with ffi/src/lib.rs: run scripts/gen-header and commit it"
    );
}
