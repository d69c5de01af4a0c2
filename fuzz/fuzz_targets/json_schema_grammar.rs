//! A JSON schema (from `response_format` or a tool's `parameters`) turned into llguidance
//! grammars, compiled, and asked for its first token mask: refused with a reason, or a
//! grammar, never a panic or a hang.
#![no_main]
use ingle::chat::grammar::{check_strict, json_schema, tool_calls, ToolSpec};
use ingle::chat::tool_calls::ToolFormat;
use libfuzzer_sys::fuzz_target;
use llguidance::{Matcher, ParserFactory};
use std::sync::OnceLock;

fn factory() -> &'static ParserFactory {
    static FACTORY: OnceLock<ParserFactory> = OnceLock::new();
    FACTORY.get_or_init(|| {
        let mut factory = ParserFactory::new_simple(&toktrie::ApproximateTokEnv::single_byte_env())
            .expect("a factory over single bytes");
        factory.quiet();
        factory
    })
}

fn compile(grammar: llguidance::api::TopLevelGrammar) {
    let mut matcher = Matcher::new(factory().create_parser(grammar));
    if matcher.get_error().is_none() {
        let _ = matcher.compute_mask();
    }
}

const FORMAT: ToolFormat = ToolFormat {
    open: "<tool_call>",
    close: "</tool_call>",
};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = check_strict(&schema, "response_format.json_schema.schema");
    compile(json_schema(&schema));
    let tools = [ToolSpec {
        name: "f".into(),
        parameters: schema,
    }];
    compile(tool_calls(
        &tools,
        FORMAT,
        data.len().is_multiple_of(2),
        data.len().is_multiple_of(3),
    ));
});
