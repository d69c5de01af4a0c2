//! Helpers for the end-to-end tests: clients on the real default model.

use ingle::openai::{ChatCompletionRequest, ChatMessage};
use ingle::{
    Client, Config, PredictorConfig, DEFAULT_EMBEDDING_MODEL, DEFAULT_MODEL, DEFAULT_SPEECH_MODEL,
};
use std::sync::OnceLock;

pub mod pull_server;

/// A directory of a test's own (`ingle-NAME-PID` in the temporary directory), empty at first and
/// removed when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("ingle-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const MODEL: &str = DEFAULT_MODEL;
pub const EMBEDDING_MODEL: &str = DEFAULT_EMBEDDING_MODEL;
pub const SPEECH_MODEL: &str = DEFAULT_SPEECH_MODEL;
pub const TRANSCRIPTION_MODEL: &str = ingle::config::DEFAULT_TRANSCRIPTION_MODEL;

/// The default config, after checking the model is there (so a missing model fails clearly).
pub fn config() -> Config {
    let config = Config::default();
    for path in config
        .predictors
        .iter()
        .flat_map(|p| config.files_of(p))
        .chain([config.onnxruntime_path()])
    {
        assert!(
            path.is_file(),
            "{} is missing: run scripts/fetch-models (`ingle pull --all`) first",
            path.display()
        );
    }
    config
}

/// A client shared by the tests of one binary (requests from concurrent tests batch together).
pub fn shared() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| Client::from_config(&config()).unwrap())
}

/// A client shared by the tests of one binary that need the tools model (Qwen2.5-Coder),
/// after checking it is cached.
pub fn tools_client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let config = config();
        assert!(
            config
                .predictors
                .iter()
                .any(|p| p.tag == ingle::TOOLS_MODEL),
            "{} is not cached: run `ingle pull {}`",
            ingle::TOOLS_MODEL,
            ingle::TOOLS_MODEL
        );
        Client::from_config(&config).unwrap()
    })
}

/// A client of its own: its model decodes only this test's requests, so results that depend on
/// batch composition (bit-exact seeded sampling) are reproducible.
pub fn own_client(tweak: impl FnOnce(PredictorConfig) -> PredictorConfig) -> Client {
    let mut config = config();
    let predictor = config.predictors.remove(0);
    Client::from_config(&config.predictor(tweak(predictor))).unwrap()
}

pub fn ask(question: &str) -> ChatCompletionRequest {
    ChatCompletionRequest::new(MODEL, vec![ChatMessage::user(question)])
}

/// A greedy request for the capital of France.
pub fn france() -> ChatCompletionRequest {
    ChatCompletionRequest {
        temperature: Some(0.0),
        ..ask("Name the capital of France.")
    }
}

/// Sets the Hugging Face Hub's environment for a test: `endpoint` as the Hub, a cache of its own
/// at `cache`, no token, not offline. The environment is the process's: a binary's tests that
/// call this take turns.
pub fn hub_env(endpoint: &str, cache: &std::path::Path) {
    std::env::set_var("HF_ENDPOINT", endpoint);
    std::env::set_var("HF_HUB_CACHE", cache);
    std::env::set_var("HF_HOME", cache.join("home"));
    for name in [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "HF_TOKEN_PATH",
    ] {
        std::env::remove_var(name);
    }
}
