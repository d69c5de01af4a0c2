//! How a model's chat is written: its GGUF's template (Jinja, rendered by `template.rs`) or
//! one llama.cpp knows by name, and the special tokens around it.

use crate::config::PredictorConfig;
use crate::error::{Error, Result};
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;

use crate::chat::template::ChatTemplate;

/// Checks that llama.cpp can apply `template` (a template name such as `chatml`, or a
/// template text it recognises), by rendering one message with it; no model is needed.
pub fn check_chat_template(template: &str) -> Result<()> {
    if is_jinja(template) {
        return ChatTemplate::new("config", template, "", "")
            .map(drop)
            .map_err(|e| Error::invalid("chat_template", e.message));
    }
    let invalid = |why: &str| {
        Error::invalid(
            "chat_template",
            format!(
                "Invalid config: `chat_template` {why} (got `{}`); give a llama.cpp template \
                 name such as `chatml`, `llama3`, `gemma`, or a template text llama.cpp recognises",
                crate::error::shown(template).escape_debug()
            ),
        )
    };
    let text = std::ffi::CString::new(template).map_err(|_| invalid("contains a NUL byte"))?;
    let (role, content) = (c"user", c"x");
    let message = llama_cpp_sys_2::llama_chat_message {
        role: role.as_ptr(),
        content: content.as_ptr(),
    };
    let mut buffer = vec![0 as std::ffi::c_char; 256];
    // SAFETY: every pointer is valid for the call; the buffer's length is passed with it.
    let written = unsafe {
        llama_cpp_sys_2::llama_chat_apply_template(
            text.as_ptr(),
            &message,
            1,
            true,
            buffer.as_mut_ptr(),
            buffer.len() as i32,
        )
    };
    if written < 0 {
        return Err(invalid("is not a template llama.cpp knows"));
    }
    Ok(())
}

/// How a model's chat is rendered.
pub(super) enum ChatFormat {
    /// A Jinja template (the GGUF's `tokenizer.chat_template`, or one given in the config),
    /// rendered as Hugging Face `transformers` renders it.
    Jinja(Box<ChatTemplate>),
    /// One of llama.cpp's built-in templates, named in the config (`chatml`, `llama3`...), or
    /// llama.cpp's reading of a GGUF template minijinja cannot compile.
    Builtin(LlamaChatTemplate),
}

/// The texts of a model's BOS and EOS tokens, as chat templates get them.
pub(super) fn special_tokens(model: &LlamaModel) -> (String, String) {
    let vocab = model.vocab();
    let special = |token: LlamaToken| {
        if token.0 < 0 {
            return String::new();
        }
        String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned()
    };
    (special(vocab.bos()), special(vocab.eos()))
}

/// The GGUF's own chat template, compiled as ingle renders it (`None` when it has none, or one
/// minijinja cannot compile).
pub fn gguf_chat_template(model: &LlamaModel, tag: &str) -> Option<ChatTemplate> {
    let source = model.chat_template(None).ok()?;
    let (bos, eos) = special_tokens(model);
    ChatTemplate::new(tag, source.to_str().ok()?, &bos, &eos).ok()
}

impl ChatFormat {
    pub(super) fn of(model: &LlamaModel, config: &PredictorConfig) -> Result<Option<ChatFormat>> {
        let (bos, eos) = special_tokens(model);
        let builtin = |text: &str| -> Result<ChatFormat> {
            LlamaChatTemplate::new(text)
                .map(ChatFormat::Builtin)
                .map_err(|_| {
                    Error::invalid("chat_template", "The chat template contains a NUL byte")
                })
        };
        match &super::options_of(config).chat_template {
            Some(text) if is_jinja(text) => Ok(Some(ChatFormat::Jinja(Box::new(
                ChatTemplate::new(&config.tag, text, &bos, &eos)
                    .map_err(|e| Error::invalid("chat_template", e.message))?,
            )))),
            // A llama.cpp template name, checked by `backends::validate`.
            Some(name) => builtin(name).map(Some),
            None => {
                let Ok(source) = model.chat_template(None) else {
                    return Ok(None);
                };
                let compiled = source
                    .to_str()
                    .ok()
                    .and_then(|text| ChatTemplate::new(&config.tag, text, &bos, &eos).ok());
                Ok(Some(match compiled {
                    Some(template) => ChatFormat::Jinja(Box::new(template)),
                    None => ChatFormat::Builtin(source),
                }))
            }
        }
    }

    pub(super) fn supports_tools(&self) -> bool {
        match self {
            ChatFormat::Jinja(template) => template.supports_tools(),
            ChatFormat::Builtin(_) => false,
        }
    }

    pub(super) fn thinking_switch(&self) -> crate::chat::template::ThinkingSwitch {
        match self {
            ChatFormat::Jinja(template) => template.thinking_switch(),
            ChatFormat::Builtin(_) => crate::chat::template::ThinkingSwitch::None,
        }
    }

    pub(super) fn thinks(&self) -> bool {
        match self {
            ChatFormat::Jinja(template) => template.thinks(),
            ChatFormat::Builtin(_) => false,
        }
    }

    pub(super) fn shows_tool_calls(&self) -> bool {
        match self {
            ChatFormat::Jinja(template) => template.shows_tool_calls(),
            ChatFormat::Builtin(_) => false,
        }
    }
}

/// Whether a config's `chat_template` is a Jinja template rather than a llama.cpp name.
pub fn is_jinja(text: &str) -> bool {
    text.contains("{%") || text.contains("{{")
}
