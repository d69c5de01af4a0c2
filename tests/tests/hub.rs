//! Models by Hugging Face reference, end to end, with no internet: a local stand-in for the Hub
//! (tests/hub/standin.py: `resolve`, 302s to a second port acting as the CDN, `X-Linked-Etag`,
//! the tree API, gated and private repos, a CDN that sends wrong bytes or cuts a transfer; its
//! protocol is checked against `huggingface_hub` itself by tests/hub/test_standin.py) serving
//! the real model files. Pulled into a Hub cache of the test's own, then chatted with, embedded,
//! transcribed and spoken by reference, as a user would.
//!
//! The Hub's settings come from the environment (HF_ENDPOINT, HF_HUB_CACHE, HF_TOKEN,
//! HF_HUB_OFFLINE), which is the process's: the tests of this binary take turns on [`ENV`].

use ingle::openai::{
    ChatCompletionRequest, ChatMessage, EmbeddingInput, EmbeddingRequest, EmbeddingVector,
    SpeechRequest, TranscriptionAudio, TranscriptionRequest,
};
use ingle::pull::{PullEvent, PullStatus, Puller};
use ingle::{Client, Config, ErrorKind};
use ingle_tests::{hub_env, TempDir};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

static ENV: Mutex<()> = Mutex::new(());

/// The repo root (tests/ is one level down).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn models() -> PathBuf {
    ingle::config::default_models_dir()
}

/// The stand-in, running; killed when dropped.
struct Standin {
    child: Child,
    hub: String,
    log: PathBuf,
}

impl Standin {
    fn start(repos: &Path, log: &Path) -> Standin {
        let mut child = Command::new("python3")
            .arg(root().join("tests/hub/standin.py"))
            .args(["--repos", &repos.display().to_string()])
            .args(["--token", TOKEN])
            .args(["--log", &log.display().to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the Hub stand-in");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let urls: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        Standin {
            child,
            hub: urls["hub"].as_str().unwrap().to_string(),
            log: log.to_path_buf(),
        }
    }

    /// The requests it answered: `(server, method, path, range, authorization)`.
    fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TOKEN: &str = "hf_standin_token";

/// Links (or writes) `repo/path` of the repos folder.
fn put(repos: &Path, repo_path: &str, source: &Path) {
    let dest = repos.join(repo_path);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(source, &dest).unwrap();
}

fn write(repos: &Path, repo_path: &str, bytes: &[u8]) {
    let dest = repos.join(repo_path);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(dest, bytes).unwrap();
}

/// Deterministic bytes that do not compress.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The repos the tests pull, built from the real model files of the models directory.
fn repos(dir: &Path) -> PathBuf {
    let repos = dir.join("repos");
    let m = models();
    let gguf = m.join(ingle::config::DEFAULT_MODEL_FILE);
    assert!(
        gguf.is_file(),
        "{} is missing: run scripts/fetch-models",
        gguf.display()
    );
    let chat = "ingle-test/SmolLM2-135M-Instruct-GGUF";
    put(
        &repos,
        &format!("{chat}/SmolLM2-135M-Instruct.Q4_1.gguf"),
        &gguf,
    );
    write(
        &repos,
        &format!("{chat}/README.md"),
        b"# SmolLM2 135M Instruct, Q4_1\n",
    );
    // A vision projector: noted, never downloaded.
    write(
        &repos,
        &format!("{chat}/mmproj-SmolLM2-f16.gguf"),
        &noise(4096, 9),
    );
    // The same model split in three shards (llama-gguf-split's layout).
    let split = repos.join("ingle-test/SmolLM2-135M-Instruct-split-GGUF/Q4_1");
    std::fs::create_dir_all(&split).unwrap();
    let status = Command::new("python3")
        .arg(root().join("tests/hub/split_gguf.py"))
        .arg(&gguf)
        .arg(split.join("SmolLM2-135M-Instruct-Q4_1"))
        .args(["--shards", "3"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "split_gguf.py failed");
    // A sentence-transformers export, with its ONNX graph in onnx/.
    let st = "sentence-transformers/all-MiniLM-L6-v2";
    put(
        &repos,
        &format!("{st}/onnx/model.onnx"),
        &m.join("all-minilm-l6-v2/model.onnx"),
    );
    put(
        &repos,
        &format!("{st}/tokenizer.json"),
        &m.join("all-minilm-l6-v2/tokenizer.json"),
    );
    write(
        &repos,
        &format!("{st}/1_Pooling/config.json"),
        br#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true}"#,
    );
    write(
        &repos,
        &format!("{st}/sentence_bert_config.json"),
        br#"{"max_seq_length": 256, "do_lower_case": false}"#,
    );
    write(&repos, &format!("{st}/modules.json"), br#"[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}, {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}, {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]"#);
    write(
        &repos,
        &format!("{st}/model.safetensors"),
        &noise(1 << 20, 3),
    );
    // The same graph read by its CLS token.
    let cls = "ingle-test/MiniLM-cls";
    put(
        &repos,
        &format!("{cls}/model.onnx"),
        &m.join("all-minilm-l6-v2/model.onnx"),
    );
    put(
        &repos,
        &format!("{cls}/tokenizer.json"),
        &m.join("all-minilm-l6-v2/tokenizer.json"),
    );
    write(
        &repos,
        &format!("{cls}/1_Pooling/config.json"),
        br#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    );
    // faster-whisper's layout.
    let whisper = "Systran/faster-whisper-tiny.en";
    for file in ["model.bin", "config.json", "tokenizer.json"] {
        put(
            &repos,
            &format!("{whisper}/{file}"),
            &m.join("whisper-tiny-en").join(file),
        );
    }
    // The multilingual one people download for faster-whisper.
    let base = "Systran/faster-whisper-base";
    for file in [
        "model.bin",
        "config.json",
        "tokenizer.json",
        "vocabulary.json",
    ] {
        put(
            &repos,
            &format!("{base}/{file}"),
            &m.join("whisper-base").join(file),
        );
    }
    // Piper's voices repo: one voice of several, named by its path.
    let voice = "rhasspy/piper-voices/en/en_US/joe/medium/en_US-joe-medium";
    put(
        &repos,
        &format!("{voice}.onnx"),
        &m.join("piper/en_US-joe-medium.onnx"),
    );
    put(
        &repos,
        &format!("{voice}.onnx.json"),
        &m.join("piper/en_US-joe-medium.onnx.json"),
    );
    write(
        &repos,
        "rhasspy/piper-voices/en/en_US/amy/low/en_US-amy-low.onnx.json",
        b"{}",
    );
    // Refusals and faults.
    write(
        &repos,
        "ingle-test/gated-GGUF/.standin.json",
        br#"{"gated": true}"#,
    );
    write(
        &repos,
        "ingle-test/gated-GGUF/tiny.Q8_0.gguf",
        &noise(10_000, 4),
    );
    write(
        &repos,
        "ingle-test/private-GGUF/.standin.json",
        br#"{"private": true}"#,
    );
    write(
        &repos,
        "ingle-test/private-GGUF/tiny.Q8_0.gguf",
        &noise(10_000, 5),
    );
    write(
        &repos,
        "ingle-test/corrupt-GGUF/.standin.json",
        br#"{"corrupt": ["bad.Q4_0.gguf"]}"#,
    );
    write(
        &repos,
        "ingle-test/corrupt-GGUF/bad.Q4_0.gguf",
        &noise(2 << 20, 6),
    );
    write(
        &repos,
        "ingle-test/cut-GGUF/.standin.json",
        br#"{"cut_after": {"cut.Q4_0.gguf": 3000000}}"#,
    );
    write(
        &repos,
        "ingle-test/cut-GGUF/cut.Q4_0.gguf",
        &noise(8 << 20, 7),
    );
    write(
        &repos,
        "ingle-test/resume-GGUF/resume.Q4_0.gguf",
        &noise(12 << 20, 8),
    );
    write(
        &repos,
        "ingle-test/weights-only/model.safetensors",
        &noise(1000, 10),
    );
    write(&repos, "ingle-test/weights-only/config.json", b"{}");
    repos
}

fn pull(puller: &Puller, reference: &str) -> ingle::Result<ingle::pull::PullReport> {
    puller.pull(reference, &mut |_| true)
}

fn client() -> Client {
    Client::from_config(&Config::default()).unwrap()
}

fn greedy(model: &str) -> ChatCompletionRequest {
    ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(12),
        ..ChatCompletionRequest::new(
            model,
            vec![ChatMessage::user("Name the capital of France.")],
        )
    }
}

fn answer(client: &Client, model: &str) -> (String, String) {
    let response = client.chat.completions.create(&greedy(model)).unwrap();
    let text = response.choices[0]
        .message
        .content
        .clone()
        .unwrap_or_default();
    (response.model, text)
}

#[test]
fn models_by_reference_pull_into_the_hub_cache_and_serve_in_every_kind() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("hub-kinds");
    let repos = repos(&dir.0);
    let standin = Standin::start(&repos, &dir.0.join("requests.jsonl"));
    let cache = dir.0.join("hub");
    hub_env(&standin.hub, &cache);
    let puller = Puller::new(dir.0.join("models")).unwrap();
    let client = client();

    // Not pulled yet: the error names the pull that fixes it.
    let missing = client
        .chat
        .completions
        .create(&greedy("hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF"))
        .unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound, "{missing}");
    assert!(
        missing
            .message
            .contains("ingle pull hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF"),
        "{missing}"
    );

    // A GGUF repo: no Q4_K_M, so its one GGUF; the projector noted and left aside.
    let mut events: Vec<PullEvent> = Vec::new();
    let report = puller
        .pull("hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF", &mut |e| {
            events.push(e.clone());
            true
        })
        .unwrap();
    let chat = "hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF:Q4_1";
    assert_eq!(report.tag, chat);
    assert_eq!(report.files.len(), 1);
    assert!(report.files[0].fetched);
    assert!(
        report.notes[0].contains("mmproj-SmolLM2-f16.gguf"),
        "{:?}",
        report.notes
    );
    assert!(events
        .iter()
        .any(|e| e.status == PullStatus::Downloading && e.completed > 0));
    assert_eq!(events.last().unwrap().status, PullStatus::Success);
    // huggingface_hub's layout: the blob named by its sha256, a relative link, refs/main.
    let folder = cache.join("models--ingle-test--SmolLM2-135M-Instruct-GGUF");
    let commit = std::fs::read_to_string(folder.join("refs/main")).unwrap();
    let pointer = folder
        .join("snapshots")
        .join(&commit)
        .join("SmolLM2-135M-Instruct.Q4_1.gguf");
    let target = std::fs::read_link(&pointer).unwrap();
    assert_eq!(
        target,
        Path::new("../../blobs").join(&report.files[0].sha256)
    );
    assert!(!folder
        .join("snapshots")
        .join(&commit)
        .join("mmproj-SmolLM2-f16.gguf")
        .exists());
    assert!(cache
        .join(".locks/models--ingle-test--SmolLM2-135M-Instruct-GGUF")
        .is_dir());
    // The token was never sent anywhere (none set), and the CDN served the weights.
    let requests = standin.requests();
    assert!(
        requests.iter().any(|r| r["server"] == "cdn"),
        "{requests:?}"
    );

    // Served by reference (the quant in any case), by its name without `/`, and listed.
    let (_, text) = answer(&client, "hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF:q4_1");
    let found = client
        .models
        .retrieve("hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF:q4_1");
    assert_eq!(found.unwrap().id, chat);
    assert!(text.contains("Paris"), "{text}");
    let (default_model, default_text) = answer(&client, ingle::DEFAULT_MODEL);
    assert_eq!(
        text, default_text,
        "the same file answers the same ({default_model})"
    );
    assert_eq!(answer(&client, "SmolLM2-135M-Instruct-GGUF:Q4_1").1, text);
    let listed: Vec<String> = client
        .models
        .list()
        .data
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert!(listed.contains(&chat.to_string()), "{listed:?}");
    assert!(
        listed.contains(&"SmolLM2-135M-Instruct-GGUF:Q4_1".to_string()),
        "{listed:?}"
    );
    // A new client finds it in the cache, with no pull.
    assert_eq!(
        answer(&Client::from_config(&Config::default()).unwrap(), chat).1,
        text
    );

    // Pulled again: up to date, nothing downloaded.
    let again = pull(&puller, chat).unwrap();
    assert_eq!((again.downloaded_bytes, again.files[0].fetched), (0, false));

    // The same model split in three shards: all three come, and it answers the same.
    let split = pull(
        &puller,
        "hf.co/ingle-test/SmolLM2-135M-Instruct-split-GGUF:Q4_1",
    )
    .unwrap();
    assert_eq!(split.files.len(), 3, "{:?}", split.files);
    assert_eq!(answer(&client, &split.tag).1, text);

    // Embeddings: the sentence-transformers export answers as the built-in model does.
    let st = pull(&puller, "hf.co/sentence-transformers/all-MiniLM-L6-v2").unwrap();
    assert_eq!(st.tag, "hf.co/sentence-transformers/all-MiniLM-L6-v2");
    assert!(
        !st.files.iter().any(|f| f.path.ends_with("safetensors")),
        "{:?}",
        st.files
    );
    let embed = |model: &str| {
        let request = EmbeddingRequest::new(model, EmbeddingInput::One("The sea is blue.".into()));
        let response = client.embeddings.create(&request).unwrap();
        let EmbeddingVector::Float(vector) = &response.data[0].embedding else {
            panic!("floats asked for");
        };
        vector.clone()
    };
    let by_reference = embed(&st.tag);
    assert_eq!(by_reference, embed(ingle::DEFAULT_EMBEDDING_MODEL));
    assert_eq!(embed("all-MiniLM-L6-v2"), by_reference);
    // Read by its CLS token: another vector, still of unit length.
    let cls = pull(&puller, "hf.co/ingle-test/MiniLM-cls").unwrap();
    let by_cls = embed(&cls.tag);
    assert_ne!(by_cls, by_reference);
    let norm: f32 = by_cls.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{norm}");

    // Transcription: faster-whisper's layout.
    let whisper = pull(&puller, "hf.co/Systran/faster-whisper-tiny.en").unwrap();
    let recording = models().join("recordings/beckett.wav");
    let transcribe = |model: &str| {
        client
            .audio
            .transcriptions
            .create(
                &TranscriptionRequest::new(model),
                TranscriptionAudio::file(std::fs::read(&recording).unwrap(), Some("beckett.wav")),
            )
            .unwrap()
            .text
    };
    assert_eq!(
        transcribe(&whisper.tag),
        transcribe(ingle::config::DEFAULT_TRANSCRIPTION_MODEL)
    );

    // The multilingual Whisper people download: French detected, and translated.
    let base = pull(&puller, "hf.co/Systran/faster-whisper-base").unwrap();
    assert_eq!(base.files.len(), 4, "{:?}", base.files);
    let french =
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/speech/fr.flac"))
            .unwrap();
    let verbose = client
        .audio
        .transcriptions
        .create(
            &TranscriptionRequest::new(&base.tag).response_format("verbose_json"),
            TranscriptionAudio::file(french.clone(), Some("fr.flac")),
        )
        .unwrap();
    assert_eq!(verbose.json().unwrap()["language"], "french");
    let english = client
        .audio
        .translations
        .create(
            &TranscriptionRequest::new(&base.tag),
            TranscriptionAudio::file(french, Some("fr.flac")),
        )
        .unwrap()
        .text
        .to_lowercase();
    assert!(english.contains("coffee"), "{english}");

    // Speech: one voice of many, by its path.
    let voice = pull(
        &puller,
        "hf.co/rhasspy/piper-voices/en/en_US/joe/medium/en_US-joe-medium.onnx",
    )
    .unwrap();
    assert_eq!(voice.files.len(), 2);
    let audio = client
        .audio
        .speech
        .create(&SpeechRequest::new(&voice.tag, "Hello there.", "alloy"))
        .unwrap();
    // About a second of speech (mp3 at 64 kb/s: some 8 kB).
    assert!(audio.bytes.len() > 4_000, "{} bytes", audio.bytes.len());

    // What ingle cannot tell, or the Hub does not have: each its own error.
    let unknown = pull(&puller, "hf.co/ingle-test/weights-only").unwrap_err();
    assert!(unknown.message.contains("model.safetensors"), "{unknown}");
    let no_quant = pull(
        &puller,
        "hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF:Q5_K_M",
    )
    .unwrap_err();
    assert!(
        no_quant.message.contains("its quants are: Q4_1"),
        "{no_quant}"
    );
    let no_repo = pull(&puller, "hf.co/ingle-test/nothing-here").unwrap_err();
    assert_eq!(
        no_repo.code.map(ingle::ErrorCode::as_str),
        Some("repo_not_found"),
        "{no_repo}"
    );
    let no_revision = pull(&puller, "hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF@v9").unwrap_err();
    assert_eq!(
        no_revision.code.map(ingle::ErrorCode::as_str),
        Some("revision_not_found"),
        "{no_revision}"
    );
    let no_file = pull(
        &puller,
        "hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF/nope.gguf",
    )
    .unwrap_err();
    assert_eq!(no_file.kind, ErrorKind::NotFound, "{no_file}");
    let private = pull(&puller, "hf.co/ingle-test/private-GGUF").unwrap_err();
    assert_eq!(
        private.code.map(ingle::ErrorCode::as_str),
        Some("repo_not_found"),
        "{private}"
    );
    assert!(private.message.contains("HF_TOKEN"), "{private}");
}

#[test]
fn gated_corrupt_cut_and_offline() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("hub-faults");
    let repos = repos(&dir.0);
    let mut standin = Some(Standin::start(&repos, &dir.0.join("requests.jsonl")));
    let hub = standin.as_ref().unwrap().hub.clone();
    let cache = dir.0.join("hub");
    hub_env(&hub, &cache);
    let puller = Puller::new(dir.0.join("models")).unwrap();

    // Gated: without a token, what to do; with one, the pull; the token never reaches the CDN.
    let gated = pull(&puller, "hf.co/ingle-test/gated-GGUF").unwrap_err();
    assert_eq!(
        gated.code.map(ingle::ErrorCode::as_str),
        Some("gated_repo"),
        "{gated}"
    );
    assert!(
        gated.message.contains("accept its licence") && gated.message.contains("HF_TOKEN"),
        "{gated}"
    );
    std::env::set_var("HF_TOKEN", TOKEN);
    pull(&puller, "hf.co/ingle-test/gated-GGUF").unwrap();
    std::env::remove_var("HF_TOKEN");
    // The token `hf auth login` writes, $HF_HOME/token, serves as well.
    let home = cache.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("token"), format!("{TOKEN}\n")).unwrap();
    pull(&puller, "hf.co/ingle-test/private-GGUF").unwrap();
    std::fs::remove_file(home.join("token")).unwrap();
    let requests = standin.as_ref().unwrap().requests();
    assert!(requests
        .iter()
        .any(|r| r["server"] == "hub" && r["authorization"] == true));
    assert!(
        !requests
            .iter()
            .any(|r| r["server"] == "cdn" && r["authorization"] == true),
        "the token went to the CDN: {requests:?}"
    );

    // Wrong bytes from the CDN: discarded, nothing linked, nothing left as a blob.
    let corrupt = pull(&puller, "hf.co/ingle-test/corrupt-GGUF").unwrap_err();
    assert_eq!(
        corrupt.code.map(ingle::ErrorCode::as_str),
        Some("checksum_mismatch"),
        "{corrupt}"
    );
    let folder = cache.join("models--ingle-test--corrupt-GGUF");
    let blobs: Vec<_> = std::fs::read_dir(folder.join("blobs"))
        .unwrap()
        .flatten()
        .collect();
    assert!(blobs.is_empty(), "{blobs:?}");
    // Nothing at all under snapshots/ (a dangling link counts too).
    fn entries(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |d| {
            d.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => entries(&e.path()),
                    _ => 1,
                })
                .sum()
        })
    }
    assert_eq!(entries(&folder.join("snapshots")), 0);

    // A transfer cut mid-way resumes with a range request.
    let cut = pull(&puller, "hf.co/ingle-test/cut-GGUF").unwrap();
    assert!(
        cut.downloaded_bytes < (8 << 20) + 3_000_000,
        "{}",
        cut.downloaded_bytes
    );
    let requests = standin.as_ref().unwrap().requests();
    assert!(
        requests.iter().any(|r| r["server"] == "cdn"
            && r["range"]
                .as_str()
                .is_some_and(|r| r.starts_with("bytes=3000000-"))),
        "{requests:?}"
    );

    // A pull stopped part-way (the process killed, the user's Ctrl-C) resumes from its bytes.
    let mut seen = 0;
    let stopped = puller.pull("hf.co/ingle-test/resume-GGUF", &mut |e| {
        if e.status == PullStatus::Downloading && e.completed > 0 {
            seen += 1;
        }
        seen < 2
    });
    assert_eq!(stopped.unwrap_err().kind, ErrorKind::Cancelled);
    let resumed = pull(&puller, "hf.co/ingle-test/resume-GGUF").unwrap();
    assert!(
        resumed.downloaded_bytes < 12 << 20,
        "{}",
        resumed.downloaded_bytes
    );
    assert!(resumed.files[0].fetched);

    // Offline: the cache only.
    drop(standin.take());
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let offline = pull(&puller, "hf.co/ingle-test/cut-GGUF").unwrap();
    assert_eq!(offline.downloaded_bytes, 0);
    assert!(
        offline.notes.iter().any(|n| n.contains("HF_HUB_OFFLINE")),
        "{:?}",
        offline.notes
    );
    let absent = pull(&puller, "hf.co/ingle-test/never-pulled").unwrap_err();
    assert!(absent.message.contains("HF_HUB_OFFLINE"), "{absent}");
    std::env::remove_var("HF_HUB_OFFLINE");
    // The Hub unreachable: what the cache holds, said so.
    let unreachable = pull(&puller, "hf.co/ingle-test/cut-GGUF").unwrap();
    assert!(
        unreachable.notes.iter().any(|n| n.contains("cached copy")),
        "{:?}",
        unreachable.notes
    );
}
