//! Hugging Face references as people type them: `hf.co/ORG/REPO[:QUANT][@REVISION]` (Ollama's
//! spelling), `huggingface.co/...`, `hf.co/ORG/REPO/PATH/IN/REPO` for one file, and the Hub's
//! own page and download URLs (`https://huggingface.co/ORG/REPO/resolve/main/PATH`).

use crate::error::ErrorCode;
use crate::error::{shown, Error, Result};
use std::fmt;

/// A model on the Hub: a repo, maybe a quant tag (GGUF repos), one file, a revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HubRef {
    /// `ORG/REPO`.
    pub repo: String,
    /// A GGUF quant tag (`Q4_K_M`), as typed.
    pub quant: Option<String>,
    /// One file's path in the repo (`en/en_US/joe/medium/en_US-joe-medium.onnx`).
    pub file: Option<String>,
    /// A branch, tag or commit; `main` when not given.
    pub revision: Option<String>,
}

/// The revision a reference without one means.
pub const DEFAULT_REVISION: &str = "main";

impl HubRef {
    /// Whether `text` is meant as a Hub reference (it starts with one of the Hub's names): a
    /// malformed one is then an error, not "no such model".
    pub fn looks_like(text: &str) -> bool {
        strip_host(text).is_some()
    }

    /// Parses a reference; `None` for text that names no Hub model (a tag, a path), an error
    /// for a Hub reference that is malformed.
    pub fn parse(text: &str) -> Result<Option<HubRef>> {
        let Some(rest) = strip_host(text) else {
            return Ok(None);
        };
        // A URL copied from the Hub's page: `?download=true`, `#anchor` are not the path.
        let rest = rest.split(['?', '#']).next().unwrap_or(rest);
        let bad = |why: &str| {
            Error::invalid(
                "model",
                format!(
                    "`{}` is not a Hugging Face reference: {why}; write \
                     hf.co/ORG/REPO[:QUANT][@REVISION] or hf.co/ORG/REPO/PATH/IN/REPO",
                    shown(text)
                ),
            )
            .with_code(ErrorCode::InvalidModelReference)
        };
        let (rest, mut revision) = match rest.split_once('@') {
            Some((rest, revision)) => (rest, Some(revision.to_string())),
            None => (rest, None),
        };
        let mut segments: Vec<&str> = rest.split('/').collect();
        if segments.last() == Some(&"") {
            segments.pop(); // a trailing slash
        }
        if segments.len() < 2 {
            return Err(bad("it names no repository (ORG/REPO)"));
        }
        let org = segments[0];
        let (name, mut quant) = match segments[1].split_once(':') {
            Some((name, quant)) => (name, Some(quant.to_string())),
            None => (segments[1], None),
        };
        let mut path: Vec<&str> = segments[2..].to_vec();
        // The Hub's own URLs: .../resolve/REV/PATH, .../blob/REV/PATH, .../tree/REV.
        if quant.is_none() && path.len() >= 2 && matches!(path[0], "resolve" | "blob" | "tree") {
            if revision.is_some() {
                return Err(bad("it gives the revision twice"));
            }
            revision = Some(path[1].to_string());
            path.drain(..2);
        }
        let file = if path.is_empty() {
            None
        } else {
            if let Some((last, q)) = path.last().and_then(|l| l.split_once(':')) {
                let _ = (last, q);
                return Err(bad(
                    "a quant tag goes after the repository, not after a file",
                ));
            }
            Some(path.join("/"))
        };
        if quant.is_some() && file.is_some() {
            return Err(bad("it gives both a quant tag and a file"));
        }
        let valid_name = |s: &str| {
            !s.is_empty()
                && s.len() <= 96
                && s != "."
                && s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        // `--` is refused as the Hub refuses it: the cache's folder `models--ORG--REPO` would
        // not say where the organisation ends.
        if !valid_name(org) || !valid_name(name) || org.contains("--") || name.contains("--") {
            return Err(bad(
                "an organisation and a repository name are letters, digits, `-`, `_` and `.` \
                 (no `--`)",
            ));
        }
        if let Some(q) = &quant {
            if q.is_empty()
                || q.len() > 64
                || !q
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad("a quant tag is letters, digits, `_` and `-` (Q4_K_M)"));
            }
        }
        if let Some(file) = &file {
            if file
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == ".." || s.contains('\\'))
                || file.len() > 1024
            {
                return Err(bad(
                    "a file's path in the repository has an empty, `.` or `..` part",
                ));
            }
        }
        if let Some(r) = &revision {
            // It names a file under `refs/`: no empty, `.` or `..` part (nor a leading `/`).
            if r.len() > 256
                || r.split('/').any(|s| s.is_empty() || s == "." || s == "..")
                || r.contains('\\')
                || r.chars().any(char::is_control)
            {
                return Err(bad("the revision is empty or malformed"));
            }
        }
        if quant.as_deref() == Some("latest") {
            quant = None; // Ollama's default tag
        }
        Ok(Some(HubRef {
            repo: format!("{org}/{name}"),
            quant,
            file,
            revision: revision.filter(|r| r != DEFAULT_REVISION),
        }))
    }

    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or(DEFAULT_REVISION)
    }

    /// The same reference with another quant tag (the one a pull picked).
    pub fn with_quant(&self, quant: Option<String>) -> HubRef {
        HubRef {
            quant,
            ..self.clone()
        }
    }
}

/// `hf.co/ORG/REPO[/PATH][:QUANT][@REV]`: the spelling ingle lists and names models by.
impl fmt::Display for HubRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hf.co/{}", self.repo)?;
        if let Some(file) = &self.file {
            write!(f, "/{file}")?;
        }
        if let Some(quant) = &self.quant {
            write!(f, ":{quant}")?;
        }
        if let Some(revision) = &self.revision {
            write!(f, "@{revision}")?;
        }
        Ok(())
    }
}

/// What follows the Hub's name: `hf.co/`, `huggingface.co/`, with or without `https://`
/// (`hf://` and node-llama-cpp's `hf:` too).
fn strip_host(text: &str) -> Option<&str> {
    let text = text.trim();
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .unwrap_or(text);
    for host in ["hf.co/", "huggingface.co/", "www.huggingface.co/"] {
        if let Some(rest) = rest.strip_prefix(host) {
            return Some(rest);
        }
    }
    if rest.len() == text.len() {
        if let Some(rest) = text
            .strip_prefix("hf://")
            .or_else(|| text.strip_prefix("hf:"))
        {
            return Some(rest);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> HubRef {
        HubRef::parse(text).unwrap().unwrap()
    }

    #[test]
    fn references_as_people_type_them() {
        let r = parsed("hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M");
        assert_eq!(r.repo, "bartowski/Qwen2.5-0.5B-Instruct-GGUF");
        assert_eq!(r.quant.as_deref(), Some("Q4_K_M"));
        assert_eq!(r.revision(), "main");
        assert_eq!(
            r.to_string(),
            "hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"
        );
        let r = parsed("huggingface.co/org/repo:q8_0@v1.0");
        assert_eq!((r.quant.as_deref(), r.revision()), (Some("q8_0"), "v1.0"));
        let r = parsed("https://huggingface.co/rhasspy/piper-voices/resolve/v1.0.0/en/en_US/joe/medium/en_US-joe-medium.onnx");
        assert_eq!(
            r.file.as_deref(),
            Some("en/en_US/joe/medium/en_US-joe-medium.onnx")
        );
        assert_eq!(r.revision(), "v1.0.0");
        let r = parsed("hf.co/org/repo/onnx/model.onnx@main");
        assert_eq!(
            (r.file.as_deref(), r.revision.as_deref()),
            (Some("onnx/model.onnx"), None)
        );
        assert_eq!(parsed("hf:org/repo").repo, "org/repo");
        let url = parsed("https://huggingface.co/o/r/resolve/main/m.Q4_0.gguf?download=true");
        assert_eq!(url.file.as_deref(), Some("m.Q4_0.gguf"));
        assert_eq!(parsed("hf.co/org/repo:latest").quant, None);
        assert_eq!(parsed("hf.co/org/repo/").to_string(), "hf.co/org/repo");
        for text in [
            "@local/smollm2-135m-instruct",
            "/models/x.gguf",
            "smollm2",
            "hf.com/x/y",
        ] {
            assert_eq!(HubRef::parse(text).unwrap(), None, "{text}");
        }
        for bad in [
            "hf.co/",
            "hf.co/org",
            "hf.co/org/repo:",
            "hf.co/org/re po",
            "hf.co/org/repo/../x",
            "hf.co/org/repo/a/b:Q4",
            "hf.co/org/repo@",
            "hf.co/a--b/c",
            "hf.co/org/repo@/etc/passwd",
            "hf.co/org/repo@refs//x",
            "hf.co/org/repo@a\\b",
            "hf.co/org/repo:Q4/file",
            "hf.co/org/repo/resolve/main/x@v2",
        ] {
            let error = HubRef::parse(bad).unwrap_err();
            assert_eq!(error.param.as_deref(), Some("model"), "{bad}");
        }
    }
}
