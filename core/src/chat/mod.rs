//! Chat features layered over generation, whatever the engine: the model's chat template
//! (Jinja), the text a caller sees from sampled bytes (UTF-8, stop sequences), tool-call parsing.

pub mod grammar;
pub mod template;
pub(crate) mod text;
pub(crate) mod thinking;
pub mod tool_calls;
