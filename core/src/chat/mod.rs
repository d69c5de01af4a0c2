//! Chat features layered over generation, whatever the engine: tool-call parsing.

pub mod tool_calls;
