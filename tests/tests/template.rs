//! A GGUF without a chat template: a clear error for chat, text completion still works, and a
//! configured template makes chat work.

use ingle::openai::{ChatCompletionRequest, CompletionRequest};
use ingle::{Client, ErrorKind};
use ingle_tests::{config, france};

/// The default model with its `tokenizer.chat_template` key renamed (same length, so the GGUF
/// stays valid): llama.cpp then finds no template.
fn model_without_template() -> std::path::PathBuf {
    let config = config();
    let bytes = std::fs::read(config.model_path(&config.predictors[0])).unwrap();
    let key = b"tokenizer.chat_template";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("the GGUF has a chat template key");
    let mut patched = bytes;
    patched[at + key.len() - 1] = b'X';
    let dir = std::env::temp_dir().join(format!("ingle-no-template-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("no-template.gguf");
    std::fs::write(&path, patched).unwrap();
    path
}

#[test]
fn chat_without_a_template_is_a_clear_error_unless_one_is_configured() {
    let path = model_without_template();
    let client = |template: Option<&str>| {
        let predictor = ingle::PredictorConfig::llama("@test/no-template", &path).parallel(1);
        let predictor = match template {
            Some(template) => predictor.chat_template(template),
            None => predictor,
        };
        Client::from_config(&ingle::Config::empty().predictor(predictor)).unwrap()
    };
    let chat = ChatCompletionRequest {
        model: "@test/no-template".into(),
        ..france()
    };

    let bare = client(None);
    let err = bare.chat.completions.create(&chat).unwrap_err();
    assert_eq!(
        (err.kind, err.param.as_deref()),
        (ErrorKind::InvalidRequest, Some("model"))
    );
    assert!(
        err.message.contains("has no chat template") && err.message.contains("chat_template"),
        "{err}"
    );
    let text = CompletionRequest {
        temperature: Some(0.0),
        ..CompletionRequest::new("@test/no-template", "The capital of France is")
    };
    assert!(bare.completions.create(&text).unwrap().choices[0]
        .text
        .contains("Paris"));

    let configured = client(Some("chatml"));
    let completion = configured.chat.completions.create(&chat).unwrap();
    assert!(
        completion.choices[0].message.text().contains("Paris"),
        "{:?}",
        completion.choices[0].message.text()
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// Each chat model's own GGUF template renders the conversations of tests/data/chat_templates.json
/// (with and without tools, calls and results) exactly as Hugging Face transformers'
/// apply_chat_template does (the expected texts come from jinja2 under transformers' rules:
/// scripts/gen-template-fixtures). A conversation transformers' rendering refuses, ingle refuses.
#[test]
fn gguf_templates_render_as_transformers_does() {
    use llama_cpp_2::model::{params::LlamaModelParams, LlamaModel};
    let fixtures: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/chat_templates.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let config = config();
    let backend = ingle::backends::llama::backend().unwrap();
    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    for predictor in &config.predictors {
        let cases: Vec<&serde_json::Value> = fixtures
            .iter()
            .filter(|f| f["model"] == predictor.tag.as_str())
            .collect();
        if cases.is_empty() {
            continue;
        }
        let model = LlamaModel::load_from_file(
            backend,
            config.model_path(predictor),
            &LlamaModelParams::default(),
        )
        .unwrap();
        let template = ingle::backends::llama::gguf_chat_template(&model, &predictor.tag).unwrap();
        for case in cases {
            let tools = case.get("tools").filter(|t| !t.is_null());
            let rendered = template.render(
                &case["messages"],
                tools,
                case["add_generation_prompt"].as_bool().unwrap(),
                None,
            );
            match case["expected"].as_str() {
                Some(expected) => assert_eq!(
                    rendered
                        .as_deref()
                        .unwrap_or_else(|e| panic!("{case}: {e}")),
                    expected,
                    "{} / {}",
                    predictor.tag,
                    case["case"]
                ),
                None => assert!(rendered.is_err(), "{case}: transformers refuses it"),
            }
            *checked.entry(predictor.tag.clone()).or_default() += 1;
        }
    }
    assert_eq!(checked.len(), 2, "both chat models checked: {checked:?}");
}
