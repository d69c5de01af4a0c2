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
