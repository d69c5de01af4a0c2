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
    let config = Config::from_file(&file).unwrap();
    let builtins = Config::default();
    assert_eq!(tags(&config)[..2], ["@me/chat", "@local/all-minilm-l6-v2"]);
    for builtin in &builtins.predictors {
        assert_eq!(
            config
                .predictors
                .iter()
                .filter(|p| p.tag == builtin.tag)
                .count(),
            1,
            "{}",
            builtin.tag
        );
    }
    // The shared tag is the config's model, not the built-in one.
    assert_eq!(config.predictors[1].model, PathBuf::from("b.gguf"));
    assert_eq!(config.predictors.len(), builtins.predictors.len() + 1);
    // The same from JSON (what the C library and Node take).
    let json = Config::from_json(
        r#"{"predictors": [{"tag": "@me/chat", "backend": "llama", "model": "a.gguf"}]}"#,
    )
    .unwrap();
    assert_eq!(json.predictors.len(), builtins.predictors.len() + 1);
    // Alone when it says so.
    std::fs::write(&file, format!("builtin_models = false\n{mine}")).unwrap();
    let alone = Config::from_file(&file).unwrap();
    assert_eq!(tags(&alone), ["@me/chat", "@local/all-minilm-l6-v2"]);
    let alone = Config::from_json(
        r#"{"builtin_models": false, "predictors": [{"tag": "@me/chat", "backend": "llama", "model": "a.gguf"}]}"#,
    )
    .unwrap();
    assert_eq!(tags(&alone), ["@me/chat"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
