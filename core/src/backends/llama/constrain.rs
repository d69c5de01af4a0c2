//! Constrained decoding with llguidance: JSON output (`response_format`) and tool calls.
//!
//! Why llguidance rather than llama.cpp's GBNF (`json_schema_to_grammar` of its `common`
//! library): it compiles a JSON schema in about a millisecond and masks tokens at 0.94–0.97× the
//! unconstrained decode speed (docs/tools.md); it covers more of JSON Schema (`$ref`/`$defs`,
//! `anyOf`, numeric bounds, `minItems`/`maxItems`, string formats and patterns); it **refuses**
//! a keyword it cannot enforce instead of ignoring it, which is how ingle reports such a schema
//! as an invalid request; and its Lark grammars embed JSON schemas (`%json`), which is how a
//! tool call's markup and its arguments are constrained together.

pub use crate::chat::grammar::{check_strict, first_line, json_schema, tool_calls, ToolSpec};
use crate::error::{shown, Error, Result};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
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
        let mut matcher = Matcher::new(factory.create_parser(grammar));
        let refuse = |why: &str| {
            Error::invalid(
                param,
                format!("`{param}` cannot be enforced: {}", first_line(why)),
            )
        };
        if let Some(reason) = matcher.get_error() {
            return Err(refuse(reason.trim_start_matches("Error: ")));
        }
        // A grammar can compile and admit nothing (a schema whose `$ref`s only go round):
        // generation then failed at its first token with the parser's state dump.
        let nothing = "it admits no value (does a `$ref` only lead to other `$ref`s?)";
        match matcher.compute_mask() {
            Ok(mask) if mask.is_zero() && !matcher.is_accepting().unwrap_or(false) => {
                Err(refuse(nothing))
            }
            Ok(_) => Ok(matcher),
            Err(e) if e.to_string().starts_with("NoExtensionBias") => Err(refuse(nothing)),
            Err(e) => Err(refuse(&e.to_string())),
        }
    }

    /// Refuses a tool whose parameters admit no value, naming it, before generation (in the
    /// call grammar that shows only once the model has written the tool's name).
    pub fn check_tools(&self, model: &LlamaModel, tools: &[ToolSpec]) -> Result<()> {
        for tool in tools {
            self.matcher(model, json_schema(&tool.parameters), "tools")
                .map_err(|mut e| {
                    e.message = e.message.replacen(
                        "`tools` cannot be enforced",
                        &format!(
                            "the parameters of the tool `{}` cannot be enforced",
                            shown(&tool.name)
                        ),
                        1,
                    );
                    e
                })?;
        }
        Ok(())
    }
}
