//! Constrained decoding with llguidance: JSON output (`response_format`) and tool calls.
//!
//! Why llguidance rather than llama.cpp's GBNF (`json_schema_to_grammar` of its `common`
//! library): it compiles a JSON schema in about a millisecond and masks tokens at 0.94–0.97× the
//! unconstrained decode speed (docs/tools.md); it covers more of JSON Schema (`$ref`/`$defs`,
//! `anyOf`, numeric bounds, `minItems`/`maxItems`, string formats and patterns); it **refuses**
//! a keyword it cannot enforce instead of ignoring it, which is how ingle reports such a schema
//! as an invalid request; and its Lark grammars embed JSON schemas (`%json`), which is how a
//! tool call's markup and its arguments are constrained together.

use crate::chat::tool_calls::ToolFormat;
use crate::error::{Error, Result};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::{json, Value as Json};
use std::sync::OnceLock;

/// The grammar compiler of one model (its token trie is built on first use: ~0.1 s).
#[derive(Default)]
pub struct Grammars {
    factory: OnceLock<std::result::Result<ParserFactory, String>>,
}

impl Grammars {
    fn factory(&self, model: &LlamaModel) -> Result<&ParserFactory> {
        self.factory
            .get_or_init(|| {
                let tok_env = LlamaSampler::llguidance_tok_env(model);
                let mut factory = ParserFactory::new_simple(&tok_env).map_err(|e| e.to_string())?;
                factory.quiet();
                Ok(factory)
            })
            .as_ref()
            .map_err(|e| Error::model(format!("Cannot set up constrained decoding: {e}")))
    }

    /// A matcher for `grammar`; a grammar llguidance refuses is an invalid request about
    /// `param`, with llguidance's reason.
    pub fn matcher(
        &self,
        model: &LlamaModel,
        grammar: TopLevelGrammar,
        param: &str,
    ) -> Result<Matcher> {
        let factory = self.factory(model)?;
        let matcher = Matcher::new(factory.create_parser(grammar));
        if let Some(reason) = matcher.get_error() {
            return Err(Error::invalid(
                param,
                format!(
                    "`{param}` cannot be enforced: {}",
                    reason.trim_start_matches("Error: ")
                ),
            ));
        }
        Ok(matcher)
    }
}

/// Whitespace between JSON tokens: at most this many characters in a row. llguidance allows any
/// run by default, and a small model, greedy, can fill `max_tokens` with spaces after `{"a":`;
/// bounded, it has to write the value. Enough for pretty-printing several levels deep.
const JSON_WHITESPACE: &str = r"[\x20\x0A\x0D\x09]{1,24}";

/// `schema` with ingle's JSON options for llguidance (bounded whitespace).
fn with_options(schema: &Json) -> Json {
    let mut schema = match schema {
        Json::Bool(true) => json!({}),
        other => other.clone(),
    };
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "x-guidance".into(),
            json!({"whitespace_pattern": JSON_WHITESPACE}),
        );
    }
    schema
}

/// Output that is one JSON value valid against `schema`.
pub fn json_schema(schema: &Json) -> TopLevelGrammar {
    TopLevelGrammar::from_json_schema(with_options(schema))
}

/// A function tool: its name and the JSON schema of its arguments.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub parameters: Json,
}

/// The schema of one call object `{"name": ..., "arguments": ...}`, name first.
fn call_schema(tools: &[ToolSpec]) -> Json {
    let one = |tool: &ToolSpec| {
        json!({
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": tool.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": false
        })
    };
    match tools {
        [tool] => one(tool),
        _ => json!({"anyOf": tools.iter().map(one).collect::<Vec<_>>()}),
    }
}

/// Tool calls in `format`: one, or with `parallel` one or more separated by newlines. With
/// `opened`, the output already holds the first opening tag (a lazy start: the model opened a
/// call of its own accord), so the grammar begins right after it.
pub fn tool_calls(
    tools: &[ToolSpec],
    format: ToolFormat,
    parallel: bool,
    opened: bool,
) -> TopLevelGrammar {
    let quote = |s: &str| Json::from(s).to_string();
    let (open, close) = (
        quote(&format!("{}\n", format.open)),
        quote(&format!("\n{}", format.close)),
    );
    let first = if opened {
        format!("\"\\n\" payload {close}")
    } else {
        "call".to_string()
    };
    let more = if parallel { " (\"\\n\" call)*" } else { "" };
    let lark = format!(
        "start: {first}{more}\ncall: {open} payload {close}\npayload: %json {}\n",
        with_options(&call_schema(tools))
    );
    TopLevelGrammar::from_lark(lark)
}
