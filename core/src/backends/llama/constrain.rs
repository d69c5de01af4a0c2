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
use llguidance::toktrie::{TokEnv, TokTrie, TokenId, TokenizerEnv};
use llguidance::{Matcher, ParserFactory};
use std::sync::{Arc, OnceLock};

/// The grammar compiler of one model (its token trie is built on first use: ~0.1 s).
pub struct Grammars {
    factory: OnceLock<std::result::Result<ParserFactory, String>>,
    /// Tokenize forced text as the model does, so that llguidance forces its tokens (jump-
    /// forward decoding); without, the model writes every token itself, in the tokens it
    /// likes (how ingle decoded before jump-forward, kept to compare against).
    forcing: bool,
}

/// The model's vocabulary as llguidance sees it, tokenizing with the model's own tokenizer.
///
/// llama-cpp-2's environment tokenizes greedily over the token trie, which is not how the
/// model tokenizes, so llguidance rightly computes no forced tokens with it (they could split
/// a token the model writes whole). With llama.cpp's tokenizer the tokenization is canonical:
/// llguidance then reports the tokens a grammar forces (jump-forward decoding, see
/// `scheduler.rs`), re-tokenizing from the last token written and leaving out a last token
/// that the next bytes could still merge into.
struct LlamaTokEnv {
    trie: TokTrie,
    model: Arc<LlamaModel>,
}

impl TokenizerEnv for LlamaTokEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, bytes: &[u8]) -> Vec<TokenId> {
        // llama.cpp's tokenizer takes text (it throws on invalid UTF-8, which must not reach
        // C++): each valid run goes to it, a broken character to the trie's greedy split (a
        // forced run can start with the rest of a character the model wrote half of).
        let tokens = self.trie.tokenize_with_greedy_fallback(bytes, |text| {
            let tokens = self.model.vocab().tokenize(text.as_bytes(), false, false);
            tokens.into_iter().map(|t| t.0 as TokenId).collect()
        });
        // Tokens that do not spell the text (`<unk>`) must not be forced: the greedy split
        // does spell it.
        if self.trie.decode_raw(&tokens) == bytes {
            tokens
        } else {
            self.trie.greedy_tokenize(bytes)
        }
    }

    fn tokenize_is_canonical(&self) -> bool {
        true
    }
}

/// Whether the model's tokenizer gives back exactly the text it is given. SentencePiece
/// tokenizers with `add_space_prefix` (Llama 2, Mistral up to v0.3, TinyLlama) put a space in
/// front of every text they tokenize, so their tokens for forced text would write a space the
/// grammar does not allow: such a model decodes constrained output without jump-forward.
fn spells_text_back(model: &LlamaModel) -> bool {
    let probe = r#"{"name": "x", "n": [1, 2]}"#;
    let tokens = model.vocab().tokenize(probe.as_bytes(), false, false);
    let pieces: Vec<u8> = tokens
        .iter()
        .flat_map(|&t| model.vocab().token_to_piece(t, false, None))
        .collect();
    pieces == probe.as_bytes()
}

impl Grammars {
    pub fn new(forcing: bool) -> Self {
        Grammars {
            factory: OnceLock::new(),
            forcing,
        }
    }

    fn factory(&self, model: &Arc<LlamaModel>) -> Result<&ParserFactory> {
        self.factory
            .get_or_init(|| {
                let approximate = LlamaSampler::llguidance_tok_env(model);
                let tok_env: TokEnv = if self.forcing && spells_text_back(model) {
                    let trie = approximate.tok_trie().clone();
                    let model = Arc::clone(model);
                    Arc::new(LlamaTokEnv { trie, model })
                } else {
                    approximate
                };
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
        model: &Arc<LlamaModel>,
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
    pub fn check_tools(&self, model: &Arc<LlamaModel>, tools: &[ToolSpec]) -> Result<()> {
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
