//! The fuzz targets' committed corpus (fuzz/corpus/TARGET: the seeds and every regression input
//! a fuzzing run once found), replayed through the targets' own code on the stable toolchain.
//!
//! `scripts/fuzz` builds the targets with cargo-fuzz on the nightly toolchain, in a build of its
//! own (minutes after any change to ingle-core, 6 on a fresh machine); the CI tier replays the
//! corpus here instead, in the build it has already made, and the extended tier fuzzes
//! (`scripts/fuzz 60`). Each target file is compiled here as a module: `fuzz_target!` below
//! turns its body into `run(bytes)`, so the oracle replayed is the one fuzzed, not a copy.
//! What differs from `scripts/fuzz --replay`: no coverage instrumentation, and none of
//! libFuzzer's limits (`-timeout=10`, `-rss_limit_mb` and `-malloc_limit_mb` of 2 GB), so an
//! input that only runs too long or allocates too much passes here: those bounds, which the
//! `chat_template`, `ct2_model` and `pull_catalog` targets are about, are checked by the
//! extended tier's fuzzing (`scripts/test --extended fuzz`). Both build in release, without
//! debug assertions. The fuzz build is also the only one of ingle-core without its `llama`
//! feature.

// The targets' `#![no_main]` is a crate attribute, inert in a module.
#![allow(unused_attributes)]

// The targets' `use libfuzzer_sys::fuzz_target;` finds the macro at the end of this file (by
// its path: defined after the modules, it is not in their textual scope, so the import is used).
extern crate self as libfuzzer_sys;

macro_rules! targets {
    ($($name:ident: $path:literal),* $(,)?) => {
        $(
            #[path = $path]
            mod $name;
        )*
        const TARGETS: &[(&str, fn(&[u8]))] = &[$((stringify!($name), $name::run)),*];
    };
}

// `#[path]` takes a literal, so each file is named in full.
targets!(
    anthropic_rerank_requests: "../../fuzz/fuzz_targets/anthropic_rerank_requests.rs",
    audio_decode: "../../fuzz/fuzz_targets/audio_decode.rs",
    chat_template: "../../fuzz/fuzz_targets/chat_template.rs",
    config: "../../fuzz/fuzz_targets/config.rs",
    ct2_model: "../../fuzz/fuzz_targets/ct2_model.rs",
    hub_answers: "../../fuzz/fuzz_targets/hub_answers.rs",
    json_schema_grammar: "../../fuzz/fuzz_targets/json_schema_grammar.rs",
    multipart_upload: "../../fuzz/fuzz_targets/multipart_upload.rs",
    openai_requests: "../../fuzz/fuzz_targets/openai_requests.rs",
    predictor_declaration: "../../fuzz/fuzz_targets/predictor_declaration.rs",
    pull_catalog: "../../fuzz/fuzz_targets/pull_catalog.rs",
    zip_reader: "../../fuzz/fuzz_targets/zip_reader.rs",
);

fn fuzz_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of a folder, by name.
fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_fuzz_target_is_replayed_here() {
    let mut on_disk: Vec<String> = files(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut here: Vec<String> = TARGETS.iter().map(|(name, _)| name.to_string()).collect();
    here.sort();
    assert_eq!(
        on_disk, here,
        "a target of fuzz/fuzz_targets is missing from targets!(...) here, or the reverse"
    );
}

#[test]
fn the_committed_corpus_of_every_target_passes_its_oracle() {
    let mut replayed = 0;
    for (name, run) in TARGETS {
        let dir = fuzz_dir().join("corpus").join(name);
        let inputs = files(&dir);
        assert!(!inputs.is_empty(), "{} has no seed", dir.display());
        for input in inputs {
            let bytes = std::fs::read(&input).unwrap();
            // A panic names the input: the same one `scripts/fuzz --replay` would stop at.
            let outcome = std::panic::catch_unwind(|| run(&bytes));
            assert!(
                outcome.is_ok(),
                "{name}: {} fails its oracle",
                input.display()
            );
            replayed += 1;
        }
    }
    assert!(replayed >= TARGETS.len());
}

/// libfuzzer-sys's macro, as the replay needs it: the target's body becomes `run(bytes)`.
#[macro_export]
macro_rules! fuzz_target {
    (|$bytes:ident: &[u8]| $body:block) => {
        pub fn run($bytes: &[u8]) $body
    };
}
