//! Config files and the built-in models.

use super::*;

fn tags(config: &Config) -> Vec<&str> {
    config.predictors.iter().map(|p| p.tag.as_str()).collect()
}

#[test]
fn a_config_file_adds_to_the_built_in_models_and_wins_on_a_shared_tag() {
    let dir = std::env::temp_dir().join(format!("ingle-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ingle.toml");
    let mine = "[[predictors]]\ntag = \"@me/chat\"\nbackend = \"llama\"\nmodel = \"a.gguf\"\n\
                [[predictors]]\ntag = \"@local/all-minilm-l6-v2\"\nbackend = \"llama\"\n\
                model = \"b.gguf\"\n";
    std::fs::write(&file, mine).unwrap();
    // As parsed: the config's own, to be joined by the client (Registry::from_config).
    let parsed = Config::from_file(&file).unwrap();
    assert!(parsed.builtin_models);
    assert_eq!(tags(&parsed), ["@me/chat", "@local/all-minilm-l6-v2"]);
    let config = parsed.with_builtin_models();
    assert!(!config.builtin_models);
    let builtins = Config::default();
    assert!(!builtins.builtin_models);
    assert_eq!(tags(&config)[..2], ["@me/chat", "@local/all-minilm-l6-v2"]);
    for builtin in &builtins.predictors {
        let count = config
            .predictors
            .iter()
            .filter(|p| p.tag == builtin.tag)
            .count();
        assert_eq!(count, 1, "{}", builtin.tag);
    }
    // The shared tag is the config's model, not the built-in one; the built-ins are served
    // once their files are in the config's models directory.
    assert_eq!(config.predictors[1].model, PathBuf::from("b.gguf"));
    assert_eq!(config.predictors.len(), builtins.predictors.len() + 1);
    assert!(config.predictors[2..].iter().all(|p| p.if_present));
    // The same from JSON (what the C library and Node take).
    let json = Config::from_json(
        r#"{"predictors": [{"tag": "@me/chat", "backend": "llama", "model": "a.gguf"}]}"#,
    )
    .unwrap();
    assert!(json.builtin_models);
    let joined = json.with_builtin_models();
    assert_eq!(joined.predictors.len(), builtins.predictors.len() + 1);
    // Alone when it says so.
    std::fs::write(&file, format!("builtin_models = false\n{mine}")).unwrap();
    let alone = Config::from_file(&file).unwrap();
    assert!(!alone.builtin_models);
    let alone = Config::from_json(
        r#"{"builtin_models": false, "predictors": [{"tag": "@me/chat", "backend": "llama", "model": "a.gguf"}]}"#,
    )
    .unwrap();
    assert!(!alone.builtin_models);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_option_of_another_backend_is_a_parse_error_naming_it() {
    // Each backend's options are a closed list: a chat model's `n_ctx` on an embedding model,
    // an embedding model's `tokenizer` on a chat model.
    let toml = "[[predictors]]\ntag = \"@me/embed\"\nbackend = \"onnx-embedding\"\n\
                model = \"m.onnx\"\ntokenizer = \"t.json\"\nn_ctx = 512\n";
    let error = Config::from_toml(toml).unwrap_err();
    assert!(
        error.message.contains("predictors[0]")
            && error
                .message
                .contains("`n_ctx` is not an option of backend `onnx-embedding`"),
        "{error}"
    );
    assert!(
        error.message.contains("`max_length`"),
        "names what it takes: {error}"
    );
    assert_eq!(error.param.as_deref(), Some("predictors[0].n_ctx"));
    let json = r#"{"predictors": [{"tag": "@me/chat", "backend": "llama", "model": "a.gguf",
                   "tokenizer": "t.json"}]}"#;
    let error = Config::from_json(json).unwrap_err();
    assert!(
        error
            .message
            .contains("`tokenizer` is not an option of backend `llama`"),
        "{error}"
    );
    assert_eq!(error.param.as_deref(), Some("predictors[0].tokenizer"));
    // Empty tables count as not given, as absent ones.
    let toml = "[[predictors]]\ntag = \"x\"\nbackend = \"llama\"\nmodel = \"m\"\nvoices = {}\n\
                [[predictors]]\ntag = \"y\"\nbackend = \"whisper\"\nmodel = \"m\"\n\
                [predictors.defaults]\n";
    assert_eq!(Config::from_toml(toml).unwrap().predictors.len(), 2);
    // A Whisper model takes none but every predictor's.
    let toml = "[[predictors]]\ntag = \"@me/w\"\nbackend = \"whisper\"\nmodel = \"m.bin\"\n\
                threads = 2\nvoices = { alloy = \"x\" }\n";
    let error = Config::from_toml(toml).unwrap_err();
    assert!(
        error
            .message
            .contains("`voices` is not an option of backend `whisper`"),
        "{error}"
    );
    // A value of the wrong type is named by its whole path, as before.
    let toml =
        "[[predictors]]\ntag = \"x\"\nbackend = \"llama\"\nmodel = \"m\"\nn_gpu_layers = -1\n";
    let error = Config::from_toml(toml).unwrap_err();
    assert!(
        error.message.contains("predictors[0].n_gpu_layers"),
        "{error}"
    );
    // Each backend's own options still parse, with every predictor's.
    let toml = "[[predictors]]\ntag = \"@me/w\"\nbackend = \"whisper\"\nmodel = \"m.bin\"\n\
                threads = 2\nif_present = true\n\
                [[predictors]]\ntag = \"@me/v\"\nbackend = \"piper\"\nmodel = \"v.onnx\"\n\
                voices = { alloy = \"x\" }\n\
                [[predictors]]\ntag = \"@me/c\"\nbackend = \"llama\"\nmodel = \"c.gguf\"\n\
                device = 0\n[predictors.defaults]\ntemperature = 0.5\n";
    let config = Config::from_toml(toml).unwrap();
    let [whisper, piper, llama] = &config.predictors[..] else {
        panic!("{config:?}")
    };
    assert_eq!(
        (whisper.backend(), whisper.threads, whisper.if_present),
        (Backend::Whisper, Some(2), true)
    );
    assert_eq!(piper.speech_options().unwrap().voices["alloy"], "x");
    let llama = llama.llama_options().unwrap();
    assert_eq!(
        (llama.device.as_deref(), llama.defaults.temperature),
        (Some("0"), Some(0.5))
    );
    // An unknown backend, or none, says so.
    let error =
        Config::from_toml("[[predictors]]\ntag = \"x\"\nbackend = \"vllm\"\nmodel = \"m\"\n")
            .unwrap_err();
    assert!(error.message.contains("unknown variant `vllm`"), "{error}");
    let error = Config::from_toml("[[predictors]]\ntag = \"x\"\nmodel = \"m\"\n").unwrap_err();
    assert!(error.message.contains("backend"), "{error}");
}
