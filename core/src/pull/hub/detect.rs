//! Which files of a Hub repo make a model, and of which kind: ingle reads the kind from the
//! files, as a user would, never from a config.
//!
//! - a **GGUF** chat or completion model: the file of the quant asked for (`:Q4_K_M`; by
//!   default Q4_K_M, else the only or the first GGUF, as llama.cpp picks), with all its shards
//!   when it is split (`-00001-of-00003.gguf`); a vision projector (`mmproj*.gguf`) is noted;
//! - a **sentence-transformers** ONNX export: `onnx/model.onnx` (or `model.onnx`) with
//!   `tokenizer.json`, read with `1_Pooling/config.json` (mean or CLS pooling) and
//!   `sentence_bert_config.json` (`max_seq_length`);
//! - a **CTranslate2 Whisper** model, faster-whisper's layout: `model.bin`, `config.json`,
//!   `tokenizer.json` (and `preprocessor_config.json`, `vocabulary.*` where there);
//! - a **Piper voice**: `VOICE.onnx` with `VOICE.onnx.json`, named by its path in a repo of many
//!   (`hf.co/rhasspy/piper-voices/en/en_US/joe/medium/en_US-joe-medium.onnx`).

use super::HubRef;
use crate::config::{Backend, PredictorConfig};
use crate::error::ErrorCode;
use crate::error::{shown, Error, Result};
use std::path::Path;

/// The quant picked when a reference names none (llama.cpp's and Ollama's default).
pub const DEFAULT_QUANT: &str = "Q4_K_M";

/// What a repo's files make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub backend: Backend,
    /// Every file the model needs, as paths in the repo.
    pub files: Vec<String>,
    /// The model file (a GGUF's first shard).
    pub model: String,
    /// The quant tag of a GGUF (as its file name spells it, uppercase), when the name has one.
    pub quant: Option<String>,
    pub tokenizer: Option<String>,
    /// What a user should know about the repo (a vision projector left aside).
    pub notes: Vec<String>,
}

fn is_gguf(path: &str) -> bool {
    path.to_ascii_lowercase().ends_with(".gguf")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A vision projector (`mmproj-model-f16.gguf`, `llava-v1.5-7b-mmproj-f16.gguf`), as llama.cpp
/// finds them.
fn is_mmproj(path: &str) -> bool {
    file_name(path).to_ascii_lowercase().contains("mmproj")
}

/// `(prefix, index, count)` of a split GGUF's shard (`NAME-00002-of-00003.gguf`).
fn shard(path: &str) -> Option<(&str, u32, u32)> {
    let stem = path
        .strip_suffix(".gguf")
        .or_else(|| path.strip_suffix(".GGUF"))?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, index) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(index) || !digits(count) {
        return None;
    }
    let (index, count) = (index.parse().ok()?, count.parse().ok()?);
    (index >= 1 && index <= count).then_some((prefix, index, count))
}

/// Whether `quant` appears in `path` as a whole tag: after the start or `-._/`, before the end or
/// `-./` (so `Q4_K` is not found in `Q4_K_M`, nor `Q4_K_M` in `IQ4_K_M`).
fn names_quant(path: &str, quant: &str) -> bool {
    let (path, quant) = (path.to_ascii_lowercase(), quant.to_ascii_lowercase());
    let bytes = path.as_bytes();
    path.match_indices(&quant).any(|(at, _)| {
        let before = at == 0 || matches!(bytes[at - 1], b'-' | b'.' | b'_' | b'/');
        let end = at + quant.len();
        let after = end == bytes.len() || matches!(bytes[end], b'-' | b'.' | b'/');
        before && after
    })
}

/// The quant tag a GGUF's name carries (`Q4_K_M`, `IQ4_XS`, `F16`, `UD-Q4_K_XL`), uppercase; else
/// the one its folders carry (`Q8_0/model-00001-of-00002.gguf`).
fn quant_of(path: &str) -> Option<String> {
    quant_of_name(path).or_else(|| {
        let mut folders: Vec<&str> = path.split('/').collect();
        folders.pop();
        folders.into_iter().rev().find_map(quant_of_name)
    })
}

fn quant_of_name(path: &str) -> Option<String> {
    let name = file_name(path);
    let name = shard(name).map_or_else(
        || name.strip_suffix(".gguf").unwrap_or(name),
        |(prefix, ..)| prefix,
    );
    let tags: Vec<&str> = name.split(['-', '.']).collect();
    let quant = |t: &str| {
        let t = t.to_ascii_lowercase();
        let q = t.strip_prefix('i').unwrap_or(&t);
        let numbered = q.starts_with('q') && q[1..].starts_with(|c: char| c.is_ascii_digit());
        let float = matches!(t.as_str(), "f16" | "f32" | "bf16");
        numbered || float
    };
    let at = tags.iter().rposition(|t| quant(t))?;
    let tag = tags[at].to_ascii_uppercase();
    // Unsloth's dynamic quants: `UD-Q4_K_XL`.
    if at > 0 && tags[at - 1].eq_ignore_ascii_case("ud") {
        return Some(format!("UD-{tag}"));
    }
    Some(tag)
}

/// The quant tags of the (non-projector) GGUFs among `files`, in order, each once.
pub fn quants(files: &[(String, u64)]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (path, _) in files {
        if is_gguf(path) && !is_mmproj(path) {
            if let Some(q) = quant_of(path) {
                if !found.contains(&q) {
                    found.push(q);
                }
            }
        }
    }
    found
}

/// The files of `reference`'s model among `files` (a repo's, or a snapshot's), and its kind.
pub fn select(reference: &HubRef, files: &[(String, u64)]) -> Result<Selection> {
    let has = |path: &str| files.iter().any(|(p, _)| p == path);
    let name = reference.to_string();
    let error =
        |message: String| Error::invalid("model", message).with_code(ErrorCode::UnsupportedModel);
    if let Some(file) = &reference.file {
        if has(file) {
            return select_file(reference, file, files, &has);
        }
        // A folder of the repo: its files, read as a repo of their own.
        let prefix = format!("{file}/");
        let inside: Vec<(String, u64)> = files
            .iter()
            .filter_map(|(p, s)| Some((p.strip_prefix(&prefix)?.to_string(), *s)))
            .collect();
        if inside.is_empty() {
            return Err(Error::new(
                crate::ErrorKind::NotFound,
                format!(
                    "The repository {} has no file or folder `{}`",
                    reference.repo,
                    shown(file)
                ),
            )
            .with_param("model")
            .with_code(ErrorCode::ModelNotFound));
        }
        let mut selection = select(
            &HubRef {
                file: None,
                ..reference.clone()
            },
            &inside,
        )?;
        selection.quant = None; // named by its folder, not its quant
        selection
            .files
            .iter_mut()
            .for_each(|f| *f = format!("{prefix}{f}"));
        selection.model = format!("{prefix}{}", selection.model);
        selection.tokenizer = selection.tokenizer.map(|t| format!("{prefix}{t}"));
        return Ok(selection);
    }
    let ggufs: Vec<&String> = files
        .iter()
        .map(|(p, _)| p)
        .filter(|p| is_gguf(p) && !is_mmproj(p))
        .collect();
    if !ggufs.is_empty() {
        return select_gguf(reference, &ggufs, files);
    }
    if reference.quant.is_some() {
        return Err(error(format!(
            "`{}` asks for a quant, but the repository has no GGUF file",
            shown(&name)
        )));
    }
    // faster-whisper's layout (CTranslate2).
    if has("model.bin") && has("config.json") {
        if !has("tokenizer.json") {
            return Err(error(format!(
                "{} looks like a CTranslate2 Whisper model (model.bin, config.json) but has no \
                 tokenizer.json, which ingle reads",
                reference.repo
            )));
        }
        let mut needed: Vec<String> = ["model.bin", "config.json", "tokenizer.json"]
            .map(String::from)
            .to_vec();
        for optional in [
            "preprocessor_config.json",
            "vocabulary.json",
            "vocabulary.txt",
        ] {
            if has(optional) {
                needed.push(optional.into());
            }
        }
        return Ok(Selection {
            backend: Backend::Whisper,
            files: needed,
            model: "model.bin".into(),
            quant: None,
            tokenizer: None,
            notes: Vec::new(),
        });
    }
    // A sentence-transformers export with its ONNX graph.
    // A sentence-transformers repo says so: an ONNX decoder or cross-encoder with a tokenizer
    // is no embedding model.
    let sentence_transformers = [
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
    ]
    .into_iter()
    .any(&has);
    let onnx = ["onnx/model.onnx", "model.onnx"]
        .into_iter()
        .find(|p| has(p))
        .filter(|_| sentence_transformers);
    if let Some(onnx) = onnx {
        let tokenizer = [
            "tokenizer.json".to_string(),
            onnx.replace("model.onnx", "tokenizer.json"),
        ]
        .into_iter()
        .find(|p| has(p));
        if let Some(tokenizer) = tokenizer {
            let mut needed = vec![onnx.to_string(), tokenizer.clone()];
            for optional in [
                format!("{onnx}_data"),
                "1_Pooling/config.json".into(),
                "modules.json".into(),
                "sentence_bert_config.json".into(),
                "config.json".into(),
            ] {
                if has(&optional) {
                    needed.push(optional);
                }
            }
            return Ok(Selection {
                backend: Backend::OnnxEmbedding,
                files: needed,
                model: onnx.to_string(),
                quant: None,
                tokenizer: Some(tokenizer),
                notes: Vec::new(),
            });
        }
    }
    // One Piper voice.
    let voices: Vec<&String> = files
        .iter()
        .map(|(p, _)| p)
        .filter(|p| p.ends_with(".onnx") && has(&format!("{p}.json")))
        .collect();
    match voices[..] {
        [voice] => return select_file(reference, voice, files, &has),
        [] => {}
        _ => {
            return Err(error(format!(
                "{} holds {} Piper voices; name one by its path, as \
                 hf.co/{}/{}",
                reference.repo,
                voices.len(),
                reference.repo,
                voices[0]
            )))
        }
    }
    let mut shown_files: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).take(12).collect();
    if files.len() > 12 {
        shown_files.push("…");
    }
    Err(error(format!(
        "ingle cannot tell what model {} is: it found {}; ingle reads a GGUF file (chat and \
         completions), a sentence-transformers ONNX export (onnx/model.onnx + tokenizer.json: \
         embeddings), a CTranslate2 Whisper model (model.bin + config.json + tokenizer.json: \
         transcription) or a Piper voice (VOICE.onnx + VOICE.onnx.json: speech)",
        reference.repo,
        if files.is_empty() {
            "no files".into()
        } else {
            shown_files.join(", ")
        }
    )))
}

/// One file named by its path: a GGUF (with its shards), or a Piper voice.
fn select_file(
    reference: &HubRef,
    file: &str,
    files: &[(String, u64)],
    has: &dyn Fn(&str) -> bool,
) -> Result<Selection> {
    if is_gguf(file) {
        let ggufs: Vec<&String> = files
            .iter()
            .map(|(p, _)| p)
            .filter(|p| is_gguf(p))
            .collect();
        let mut selection = gguf_files(file, &ggufs);
        selection.quant = None; // named by its path, not its quant
        return Ok(selection);
    }
    let voice = file.strip_suffix(".json").unwrap_or(file);
    if voice.ends_with(".onnx") && has(voice) && has(&format!("{voice}.json")) {
        return Ok(Selection {
            backend: Backend::Piper,
            files: vec![voice.to_string(), format!("{voice}.json")],
            model: voice.to_string(),
            quant: None,
            tokenizer: None,
            notes: Vec::new(),
        });
    }
    Err(Error::invalid(
        "model",
        format!(
            "ingle cannot serve `{}` of {} by itself: it reads one file as a GGUF model (.gguf) \
             or a Piper voice (.onnx beside its .onnx.json); name the repository for a model of \
             several files",
            shown(file),
            reference.repo
        ),
    )
    .with_code(ErrorCode::UnsupportedModel))
}

fn select_gguf(
    reference: &HubRef,
    ggufs: &[&String],
    files: &[(String, u64)],
) -> Result<Selection> {
    let wanted = reference.quant.as_deref();
    let matching = |quant: &str| -> Vec<&String> {
        ggufs
            .iter()
            .copied()
            .filter(|p| names_quant(p, quant))
            .collect()
    };
    let pick: &String = match wanted {
        Some(quant) => {
            let found = matching(quant);
            // The first shard of a split file, else the first match.
            let first = found
                .iter()
                .copied()
                .find(|p| shard(p).is_some_and(|(_, i, _)| i == 1))
                .or(found.first().copied());
            first.ok_or_else(|| {
                let have = quants(files);
                Error::new(
                    crate::ErrorKind::NotFound,
                    format!(
                        "{} has no {quant} GGUF; its quants are: {}",
                        reference.repo,
                        if have.is_empty() {
                            ggufs
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        } else {
                            have.join(", ")
                        }
                    ),
                )
                .with_param("model")
                .with_code(ErrorCode::ModelNotFound)
            })?
        }
        None => {
            let default = matching(DEFAULT_QUANT);
            default
                .first()
                .copied()
                .or_else(|| {
                    ggufs
                        .iter()
                        .copied()
                        .find(|p| shard(p).is_none_or(|(_, i, _)| i == 1))
                })
                .unwrap_or(ggufs[0])
        }
    };
    let mut selection = gguf_files(pick, ggufs);
    if let Some(quant) = wanted {
        // Named as asked (`:q4_k_m` is `:Q4_K_M`), whatever the file's own spelling.
        selection.quant = Some(quant.to_ascii_uppercase());
    }
    let projectors: Vec<&str> = files
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| is_gguf(p) && is_mmproj(p))
        .collect();
    if !projectors.is_empty() {
        selection.notes.push(format!(
            "{} also has a vision projector ({}); ingle does not read images yet, so it was \
             left aside",
            reference.repo,
            projectors.join(", ")
        ));
    }
    Ok(selection)
}

/// A GGUF file, and all its shards when it is split (the first shard is the model file).
fn gguf_files(pick: &str, ggufs: &[&String]) -> Selection {
    let (model, files) = match shard(pick) {
        Some((prefix, _, count)) => {
            let all: Vec<String> = (1..=count)
                .map(|i| format!("{prefix}-{i:05}-of-{count:05}.gguf"))
                .collect();
            (all[0].clone(), all)
        }
        None => (pick.to_string(), vec![pick.to_string()]),
    };
    // A shard the listing lacks shows as a missing file when it is fetched or looked up.
    let _ = ggufs;
    Selection {
        backend: Backend::Llama,
        quant: quant_of(&model),
        files,
        model,
        tokenizer: None,
        notes: Vec::new(),
    }
}

impl Selection {
    /// The predictor serving these files of `snapshot` under `tag`.
    pub fn predictor(&self, tag: &str, snapshot: &Path) -> Result<PredictorConfig> {
        let model = snapshot.join(&self.model);
        Ok(match self.backend {
            Backend::Llama => PredictorConfig::llama(tag, model),
            Backend::Whisper => PredictorConfig::transcription(tag, model),
            Backend::Piper => PredictorConfig::speech(tag, model),
            Backend::OnnxEmbedding => {
                let tokenizer =
                    snapshot.join(self.tokenizer.as_deref().unwrap_or("tokenizer.json"));
                let mut predictor = PredictorConfig::embedding(tag, model, tokenizer);
                // The sentence-transformers files sit beside the graph, or above its `onnx/`.
                let mut folder = Path::new(&self.model)
                    .parent()
                    .unwrap_or(Path::new(""))
                    .to_path_buf();
                if folder.file_name().is_some_and(|n| n == "onnx") {
                    folder.pop();
                }
                // Only a file of the selection: those the snapshot's listing admits (a link
                // that leads out of the cache is none, see `snapshot_files`).
                let read = |name: &str| -> Option<serde_json::Value> {
                    let relative = folder.join(name).to_string_lossy().replace('\\', "/");
                    if !self.files.contains(&relative) {
                        return None;
                    }
                    serde_json::from_slice(&std::fs::read(snapshot.join(relative)).ok()?).ok()
                };
                if let Some(length) = read("sentence_bert_config.json")
                    .and_then(|c| c.get("max_seq_length")?.as_u64())
                {
                    let length = length.clamp(2, u64::from(crate::config::MAX_EMBEDDING_LENGTH));
                    predictor = predictor.max_length(length as u32);
                }
                if let Some(pooling) = read("1_Pooling/config.json") {
                    let on = |key: &str| pooling.get(key).and_then(|v| v.as_bool()) == Some(true);
                    predictor = predictor.pooling(if on("pooling_mode_cls_token") {
                        crate::config::Pooling::Cls
                    } else if on("pooling_mode_mean_tokens") {
                        crate::config::Pooling::Mean
                    } else {
                        return Err(Error::invalid(
                            "model",
                            format!(
                                "`{tag}` pools its tokens otherwise than by their mean or the \
                                 CLS token (1_Pooling/config.json); ingle reads those two"
                            ),
                        )
                        .with_code(ErrorCode::UnsupportedModel));
                    });
                }
                predictor
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(paths: &[&str]) -> Vec<(String, u64)> {
        paths.iter().map(|p| (p.to_string(), 1)).collect()
    }

    fn pick(reference: &str, paths: &[&str]) -> Result<Selection> {
        select(&HubRef::parse(reference).unwrap().unwrap(), &listing(paths))
    }

    #[test]
    fn a_gguf_repo_picks_its_file_by_quant() {
        let repo = [
            "README.md",
            "Qwen2.5-0.5B-Instruct-Q4_K.gguf",
            "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf",
            "Qwen2.5-0.5B-Instruct-IQ4_XS.gguf",
            "Qwen2.5-0.5B-Instruct-Q8_0.gguf",
            "mmproj-Qwen2.5-f16.gguf",
        ];
        let s = pick("hf.co/o/r", &repo).unwrap();
        assert_eq!(s.model, "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf");
        assert_eq!(s.quant.as_deref(), Some("Q4_K_M"));
        assert!(
            s.notes[0].contains("mmproj-Qwen2.5-f16.gguf"),
            "{:?}",
            s.notes
        );
        assert_eq!(pick("hf.co/o/r:q8_0", &repo).unwrap().model, repo[4]);
        assert_eq!(pick("hf.co/o/r:Q4_K", &repo).unwrap().model, repo[1]);
        assert_eq!(
            pick("hf.co/o/r:iq4_xs", &repo).unwrap().quant.as_deref(),
            Some("IQ4_XS")
        );
        let missing = pick("hf.co/o/r:Q5_K_M", &repo).unwrap_err();
        assert!(
            missing
                .message
                .contains("quants are: Q4_K, Q4_K_M, IQ4_XS, Q8_0"),
            "{missing}"
        );
        // No Q4_K_M: the first GGUF.
        let s = pick("hf.co/o/r", &["b.Q8_0.gguf", "c.F16.gguf"]).unwrap();
        assert_eq!(
            (s.model.as_str(), s.quant.as_deref()),
            ("b.Q8_0.gguf", Some("Q8_0"))
        );
        assert_eq!(quant_of("x-UD-Q4_K_XL.gguf").as_deref(), Some("UD-Q4_K_XL"));
        assert_eq!(quant_of("model.gguf"), None);
        assert_eq!(
            quant_of("Q8_0/model-00001-of-00002.gguf").as_deref(),
            Some("Q8_0")
        );
        // llava's projector is no model, wherever "mmproj" is in its name.
        let s = pick(
            "hf.co/o/r",
            &["llava-v1.5-7b-mmproj-f16.gguf", "llava-v1.5-7b-Q5_K.gguf"],
        )
        .unwrap();
        assert_eq!(s.model, "llava-v1.5-7b-Q5_K.gguf");
        // An ONNX graph with a tokenizer but no sentence-transformers files: not an embedder.
        let decoder = pick(
            "hf.co/o/r",
            &["onnx/model.onnx", "tokenizer.json", "config.json"],
        );
        assert!(decoder.unwrap_err().message.contains("cannot tell"));
    }

    #[test]
    fn a_split_gguf_brings_all_its_shards() {
        let repo = [
            "Q4_K_M/m-Q4_K_M-00002-of-00003.gguf",
            "Q4_K_M/m-Q4_K_M-00001-of-00003.gguf",
            "Q4_K_M/m-Q4_K_M-00003-of-00003.gguf",
            "m-Q8_0.gguf",
        ];
        let s = pick("hf.co/o/r:Q4_K_M", &repo).unwrap();
        assert_eq!(s.model, "Q4_K_M/m-Q4_K_M-00001-of-00003.gguf");
        assert_eq!(s.files.len(), 3);
        assert_eq!(s.quant.as_deref(), Some("Q4_K_M"));
        let s = pick("hf.co/o/r/Q4_K_M/m-Q4_K_M-00003-of-00003.gguf", &repo).unwrap();
        assert_eq!(s.model, "Q4_K_M/m-Q4_K_M-00001-of-00003.gguf");
    }

    #[test]
    fn other_kinds_come_from_their_files() {
        let whisper = pick(
            "hf.co/Systran/faster-whisper-base",
            &[
                "config.json",
                "model.bin",
                "tokenizer.json",
                "vocabulary.txt",
                "README.md",
            ],
        )
        .unwrap();
        assert_eq!(whisper.backend, Backend::Whisper);
        assert_eq!(whisper.files.len(), 4);
        let st = pick(
            "hf.co/sentence-transformers/all-MiniLM-L6-v2",
            &[
                "1_Pooling/config.json",
                "config.json",
                "model.safetensors",
                "modules.json",
                "onnx/model.onnx",
                "onnx/model_O4.onnx",
                "onnx/model_qint8_avx512.onnx",
                "sentence_bert_config.json",
                "tokenizer.json",
            ],
        )
        .unwrap();
        assert_eq!(st.backend, Backend::OnnxEmbedding);
        assert_eq!(st.model, "onnx/model.onnx");
        assert!(!st.files.iter().any(|f| f.contains("O4")), "{:?}", st.files);
        let voices = [
            "en/en_US/joe/medium/en_US-joe-medium.onnx",
            "en/en_US/joe/medium/en_US-joe-medium.onnx.json",
            "en/en_US/amy/low/en_US-amy-low.onnx",
            "en/en_US/amy/low/en_US-amy-low.onnx.json",
        ];
        let joe = pick(
            "hf.co/rhasspy/piper-voices/en/en_US/joe/medium/en_US-joe-medium.onnx",
            &voices,
        )
        .unwrap();
        assert_eq!((joe.backend, joe.files.len()), (Backend::Piper, 2));
        let folder = pick("hf.co/rhasspy/piper-voices/en/en_US/amy/low", &voices).unwrap();
        assert_eq!(folder.model, "en/en_US/amy/low/en_US-amy-low.onnx");
        let many = pick("hf.co/rhasspy/piper-voices", &voices).unwrap_err();
        assert!(many.message.contains("2 Piper voices"), "{many}");
        let unknown = pick("hf.co/o/r", &["model.safetensors", "config.json"]).unwrap_err();
        assert!(
            unknown
                .message
                .contains("found model.safetensors, config.json"),
            "{unknown}"
        );
        assert_eq!(unknown.param.as_deref(), Some("model"));
        let missing = pick("hf.co/o/r/nope.gguf", &["a.gguf"]).unwrap_err();
        assert_eq!(missing.kind, crate::ErrorKind::NotFound);
    }

    /// An embedding model's side files are read only when the snapshot's listing admits them:
    /// a pooling config linked to a file outside the cache is not read (a tampered cache never
    /// makes ingle read elsewhere), and the model loads with its default pooling.
    #[cfg(unix)]
    #[test]
    fn side_files_linked_out_of_the_cache_are_not_read() {
        let root = std::env::temp_dir().join(format!("ingle-side-files-{}", std::process::id()));
        let snapshot = root.join("models--o--r/snapshots/abc");
        std::fs::create_dir_all(snapshot.join("onnx")).unwrap();
        std::fs::create_dir_all(snapshot.join("1_Pooling")).unwrap();
        for file in ["onnx/model.onnx", "tokenizer.json", "modules.json"] {
            std::fs::write(snapshot.join(file), b"{}").unwrap();
        }
        // Max pooling, which ingle refuses: reading it shows as an error.
        let max_pooling = br#"{"pooling_mode_max_tokens": true}"#;
        let outside = root.join("outside.json");
        std::fs::write(&outside, max_pooling).unwrap();
        let pooling = snapshot.join("1_Pooling/config.json");
        let load = || {
            let files = crate::pull::hub::snapshot_files(&snapshot);
            let reference = HubRef::parse("hf.co/o/r").unwrap().unwrap();
            select(&reference, &files)?.predictor("hf.co/o/r", &snapshot)
        };

        std::fs::write(&pooling, max_pooling).unwrap();
        let read = load().unwrap_err();
        assert!(read.message.contains("1_Pooling/config.json"), "{read}");

        std::fs::remove_file(&pooling).unwrap();
        std::os::unix::fs::symlink(&outside, &pooling).unwrap();
        let config = load().unwrap();
        assert!(
            matches!(&config.options, crate::config::BackendOptions::OnnxEmbedding(o) if o.pooling.is_none()),
            "{:?}",
            config.options
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
