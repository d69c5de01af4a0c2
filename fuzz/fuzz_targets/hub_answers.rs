//! What a Hugging Face hub answers (a revision, a tree page and its `Link` header): read into
//! checked files (safe relative paths, hex hashes) and a next page, or refused with a reason of
//! bounded size, never a panic.
#![no_main]
use ingle::pull::hub::answer::{is_safe_path, next_page, revision_commit, tree_page};
use libfuzzer_sys::fuzz_target;

const PAGE: &str = "https://huggingface.co/api/models/o/r/tree/0123456789abcdef0123456789abcdef01234567?recursive=true";

fuzz_target!(|data: &[u8]| {
    // The body as JSON, and the same bytes as a `Link` header.
    if let Ok(answer) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Some(commit) = revision_commit(&answer) {
            assert_eq!(commit.len(), 40);
        }
        match tree_page(&answer) {
            Ok(files) => {
                for file in files {
                    assert!(is_safe_path(&file.path), "{:?}", file.path);
                    // Joined to a folder, it stays inside (`a..b` is a name like any other).
                    assert!(std::path::Path::new(&file.path)
                        .components()
                        .all(|c| matches!(c, std::path::Component::Normal(_))));
                    assert!(file.oid.len() == 40 && file.etag().bytes().all(|b| b.is_ascii_hexdigit()));
                    assert!(!file.etag().bytes().any(|b| b.is_ascii_uppercase()));
                }
            }
            Err(problem) => assert!(problem.len() <= 2 * ingle::error::MAX_MESSAGE_BYTES),
        }
    }
    if let Ok(link) = std::str::from_utf8(data) {
        if let Some(next) = next_page(PAGE, link) {
            assert!(next.len() <= PAGE.len() + link.len() + 1, "{next}");
        }
    }
});
