//! A hostile Jinja chat template (a GGUF's or a config's), rendered with hostile messages:
//! an error or text, in bounded time (the template's fuel), never a panic.
#![no_main]
use ingle::chat::template::ChatTemplate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The template, then (after a NUL) the messages as JSON.
    let (source, messages) = text.split_once('\0').unwrap_or((text, ""));
    let messages = serde_json::from_str(messages).unwrap_or_else(|_| {
        serde_json::json!([{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    });
    let Ok(template) = ChatTemplate::new("fuzz", source, "<s>", "</s>") else {
        return;
    };
    let _ = template.supports_tools();
    let _ = template.render(&messages, None, true, None);
});
