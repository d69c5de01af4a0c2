//! Chat templates as Hugging Face `transformers` renders them (`apply_chat_template`): each
//! GGUF's own `tokenizer.chat_template` (Jinja) in an environment with the same rules —
//! `trim_blocks`, `lstrip_blocks`, loop controls, Python string methods, `raise_exception`,
//! `strftime_now`, and a `tojson` that is Python's `json.dumps` (keys kept in order, `", "` and
//! `": "` separators, non-ASCII kept) rather than minijinja's compact, HTML-escaping one.

use crate::error::{Error, ErrorKind, Result};
use minijinja::value::{Kwargs, Value as JinjaValue};
use minijinja::{Environment, ErrorKind as JinjaErrorKind};

/// The variable a template reads to turn its model's thinking up or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingSwitch {
    /// None: the model thinks always (DeepSeek R1) or never.
    None,
    /// `enable_thinking` (Qwen3, SmolLM3): on or off.
    EnableThinking,
    /// `reasoning_effort` (gpt-oss): low, medium or high.
    ReasoningEffort,
}

/// A compiled chat template and the special tokens it may refer to.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// The template writes `<think>` and `</think>`: its model thinks in them.
    thinks: bool,
    /// What turns its model's thinking up or down, if anything.
    switch: ThinkingSwitch,
    bos_token: String,
    eos_token: String,
}

const NAME: &str = "chat_template";

/// What a rendering that ran out of [`TEMPLATE_FUEL`] says (minijinja's words).
const OUT_OF_FUEL: &str = "ran out of fuel";

/// Instructions one rendering may run: real templates take a few thousand per message.
pub const TEMPLATE_FUEL: u64 = 20_000_000;

impl ChatTemplate {
    /// Compiles `source`; a template with a syntax error is a model error naming `tag`.
    pub fn new(tag: &str, source: &str, bos_token: &str, eos_token: &str) -> Result<Self> {
        let mut env = Environment::new();
        // A hostile template (a GGUF's, a config's) loops or builds text for ever otherwise.
        env.set_fuel(Some(TEMPLATE_FUEL));
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(NAME, source.to_string())
            .map_err(|e| {
                Error::model(format!(
                    "The chat template of `{tag}` does not compile: {e}"
                ))
            })?;
        Ok(ChatTemplate {
            env,
            thinks: source.contains(super::thinking::OPEN)
                && source.contains(super::thinking::CLOSE),
            // The variables templates read: Qwen3's and SmolLM3's `enable_thinking`, gpt-oss's
            // `reasoning_effort`.
            switch: if source.contains("enable_thinking") {
                ThinkingSwitch::EnableThinking
            } else if source.contains("reasoning_effort") {
                ThinkingSwitch::ReasoningEffort
            } else {
                ThinkingSwitch::None
            },
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// Renders `messages` (OpenAI-shaped JSON objects) and `tools` (function tools), with the
    /// generation prompt when `add_generation_prompt`.
    pub fn render(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
        kwargs: Option<&serde_json::Value>,
    ) -> Result<String> {
        // A call as Hugging Face templates take it (`arguments` an object, `content: null`)
        // first; a template written for other shapes fails on it, and gets, as llama.cpp gives
        // such templates, `arguments` as JSON text (DeepSeek R1's concatenates it), then
        // `content` "" (QwQ's calls `content.split(...)`), then both. The first failure stands.
        // A template out of fuel is not tried again (a hostile one would cost four budgets).
        let mut error = match self.render_once(messages, tools, add_generation_prompt, kwargs) {
            Err(first) if has_calls(messages) && !first.message.contains(OUT_OF_FUEL) => first,
            rendered => return rendered,
        };
        for (text_arguments, blank_content) in [(true, false), (false, true), (true, true)] {
            let variant = call_variant(messages, text_arguments, blank_content);
            match self.render_once(&variant, tools, add_generation_prompt, kwargs) {
                Ok(text) => return Ok(text),
                // The template's own refusal (roles that do not alternate, say) is the caller's
                // to read: it wins over a failure on a shape the template was not written for.
                Err(refused) if refused.kind == ErrorKind::InvalidRequest => {
                    if error.kind != ErrorKind::InvalidRequest {
                        error = refused;
                    }
                }
                Err(_) => {}
            }
        }
        Err(error)
    }

    fn render_once(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
        kwargs: Option<&serde_json::Value>,
    ) -> Result<String> {
        let template = self
            .env
            .get_template(NAME)
            .map_err(|e| Error::internal(format!("chat template missing: {e}")))?;
        let context = minijinja::context! {
            messages => JinjaValue::from_serialize(messages),
            tools => tools.map(JinjaValue::from_serialize),
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
            // `chat_template_kwargs`, as transformers' `apply_chat_template(**kwargs)`: the
            // names above come first and cannot be replaced.
            ..JinjaValue::from_serialize(kwargs.unwrap_or(&serde_json::json!({})))
        };
        template.render(context).map_err(|e| {
            if e.kind() == JinjaErrorKind::InvalidOperation {
                // raise_exception: the template refused the conversation (say, roles that
                // do not alternate); its message is the caller's to read.
                Error::invalid(
                    "messages",
                    format!(
                        "The chat template refused the messages: {}",
                        e.detail().unwrap_or_default()
                    ),
                )
            } else {
                Error::model(format!("The chat template failed: {e}"))
            }
        })
    }
}

/// Whether an assistant message of `messages` makes tool calls.
fn has_calls(messages: &serde_json::Value) -> bool {
    messages.as_array().into_iter().flatten().any(|m| {
        m["role"] == "assistant" && m["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
    })
}

/// The messages with each call's `arguments` as JSON text (as Python's `json.dumps` writes it
/// with `ensure_ascii=False`, as OpenAI sends it: `São Paulo` kept) and/or a call message's null `content` as "".
fn call_variant(
    messages: &serde_json::Value,
    text_arguments: bool,
    blank_content: bool,
) -> serde_json::Value {
    let mut variant = messages.clone();
    for message in variant.as_array_mut().into_iter().flatten() {
        if message["role"] != "assistant" {
            continue;
        }
        if blank_content && message["content"].is_null() {
            message["content"] = serde_json::Value::String(String::new());
        }
        if !text_arguments {
            continue;
        }
        for call in message["tool_calls"].as_array_mut().into_iter().flatten() {
            let arguments = &mut call["function"]["arguments"];
            if !arguments.is_string() {
                let mut text = String::new();
                dump(arguments, None, 0, ", ", ": ", false, &mut text);
                *arguments = serde_json::Value::String(text);
            }
        }
    }
    variant
}

/// A tool that no template names by chance: a template that renders its name supports tools.
const PROBE_TOOL: &str = "ingle_probe_tool_4f1c";

impl ChatTemplate {
    /// Whether the template shows the model the tools it is given (Hugging Face templates that
    /// support tools render each tool's definition; the others ignore `tools`).
    pub fn supports_tools(&self) -> bool {
        let messages = serde_json::json!([{"role": "user", "content": "x"}]);
        let tools = serde_json::json!([{"type": "function", "function": {"name": PROBE_TOOL,
            "description": "", "parameters": {"type": "object", "properties": {}}}}]);
        self.render(&messages, Some(&tools), true, None)
            .is_ok_and(|text| text.contains(PROBE_TOOL))
    }

    /// Whether its model thinks in `<think>` tags (the template writes them).
    pub fn thinks(&self) -> bool {
        self.thinks
    }

    /// The variable of the template that turns thinking up or down.
    pub fn thinking_switch(&self) -> ThinkingSwitch {
        self.switch
    }

    /// Whether the template shows an assistant's earlier tool calls (DeepSeek R1's does, with
    /// their results, though it lists no tools): then a conversation with calls is its to show.
    pub fn shows_tool_calls(&self) -> bool {
        let messages = serde_json::json!([
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": PROBE_TOOL, "arguments": {}}}]},
            {"role": "tool", "tool_call_id": "c", "content": "y"}]);
        self.render(&messages, None, true, None)
            .is_ok_and(|text| text.contains(PROBE_TOOL))
    }
}

fn raise_exception(message: String) -> std::result::Result<JinjaValue, minijinja::Error> {
    Err(minijinja::Error::new(
        JinjaErrorKind::InvalidOperation,
        message,
    ))
}

/// `strftime_now(format)`: the time in UTC (transformers uses the machine's local time; a
/// server's is often UTC), formatted as Python's `strftime` does for the
/// directives templates use (`%d`, `%m`, `%Y`, `%b`, `%B`, `%H`, `%M`, `%S`, `%%`).
fn strftime_now(format: String) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, seconds) = (now.div_euclid(86_400), now.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('Y') => out.push_str(&year.to_string()),
            Some('b') => out.push_str(&MONTHS[month as usize - 1][..3]),
            Some('B') => out.push_str(MONTHS[month as usize - 1]),
            Some('H') => out.push_str(&format!("{:02}", seconds / 3600)),
            Some('M') => out.push_str(&format!("{:02}", seconds / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", seconds % 60)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `tojson` as `transformers` defines it: `json.dumps(x, ensure_ascii=False, indent=indent,
/// separators=separators, sort_keys=False)`.
fn tojson(value: JinjaValue, kwargs: Kwargs) -> std::result::Result<JinjaValue, minijinja::Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    let separators: Option<Vec<String>> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value).map_err(|e| {
        minijinja::Error::new(JinjaErrorKind::InvalidOperation, format!("tojson: {e}"))
    })?;
    let (item, key) = match separators.as_deref() {
        Some([item, key]) => (item.clone(), key.clone()),
        _ if indent.is_some() => (",".into(), ": ".into()),
        _ => (", ".into(), ": ".into()),
    };
    let mut out = String::new();
    dump(
        &json,
        indent,
        0,
        &item,
        &key,
        ensure_ascii.unwrap_or(false),
        &mut out,
    );
    Ok(JinjaValue::from_safe_string(out))
}

fn dump(
    value: &serde_json::Value,
    indent: Option<usize>,
    depth: usize,
    item: &str,
    key: &str,
    ascii: bool,
    out: &mut String,
) {
    use serde_json::Value as J;
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * depth));
        }
    };
    // With an indent, Python ends items with the separator stripped of trailing spaces.
    let item_sep = if indent.is_some() {
        item.trim_end()
    } else {
        item
    };
    match value {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) => out.push_str(&python_number(n)),
        J::String(s) => quote(s, ascii, out),
        J::Array(items) if items.is_empty() => out.push_str("[]"),
        J::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                dump(v, indent, depth + 1, item, key, ascii, out);
            }
            newline(out, depth);
            out.push(']');
        }
        J::Object(map) if map.is_empty() => out.push_str("{}"),
        J::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                quote(k, ascii, out);
                out.push_str(key);
                dump(v, indent, depth + 1, item, key, ascii, out);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

/// A number as Python's `json.dumps` writes it: integers as they are, floats as `repr` (`1.0`,
/// `0.1`, `1e-05`, `1e+16`).
fn python_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let exponent = if f == 0.0 {
        0
    } else {
        f.abs().log10().floor() as i32
    };
    if (-4..16).contains(&exponent) {
        let text = format!("{f:?}"); // shortest round-trip, e.g. 0.1, 1.0
        if text.contains('e') {
            format!("{f}")
        } else {
            text
        }
    } else {
        // Python: 1e-05, 1.5e+16
        let text = format!("{f:e}"); // 1e-5, 1.5e16
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

/// A JSON string as Python writes it (`\uXXXX` for control characters, and for non-ASCII when
/// `ascii`).
fn quote(s: &str, ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tojson_is_pythons_json_dumps() {
        let t = ChatTemplate::new(
            "t",
            "{{ x | tojson }}|{{ x | tojson(indent=2) }}",
            "<s>",
            "</s>",
        )
        .unwrap();
        let env = &t.env;
        let out = env
            .render_str(
                "{{ x | tojson }}",
                minijinja::context! { x => JinjaValue::from_serialize(serde_json::json!({"b": 1, "a": [1.0, "é<>"], "c": {}})) },
            )
            .unwrap();
        assert_eq!(out, r#"{"b": 1, "a": [1.0, "é<>"], "c": {}}"#);
        let out = env
            .render_str(
                "{{ x | tojson(indent=2) }}",
                minijinja::context! { x => JinjaValue::from_serialize(serde_json::json!({"b": [1, 2]})) },
            )
            .unwrap();
        assert_eq!(out, "{\n  \"b\": [\n    1,\n    2\n  ]\n}");
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_000), (2024, 10, 4));
    }
}
