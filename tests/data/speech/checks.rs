//! Checks of what Whisper makes of the clips in this folder, shared by the tests that send them
//! (tests/tests/multilingual.rs, serve/tests/http.rs) through `#[path]` modules.

/// A translation of the French clip: "coffee" (espeak says "café" clearly), English words
/// around it, and no French left. Only some of espeak's French carries (faster-whisper int8:
/// "Hello. I called Mary and I am going to Paris. Again, I see a coffee with bread. ...";
/// ingle int8: "Hello. I called Marie and I am here. Again, I see a coffee with Bure. ...").
pub fn translated_from_french(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let english = ["i", "and", "with", "the", "a", "to"];
    let french = ["je", "et", "avec", "du", "le", "bonjour"];
    words.contains(&"coffee")
        && english.iter().filter(|w| words.contains(w)).count() >= 2
        && !french.iter().any(|w| words.contains(w))
}
