//! Chat features layered over generation (WIP, issue 16): tool-call parsing first.

pub mod tool_calls;
