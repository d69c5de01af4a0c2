//! Loading ONNX Runtime: where the library comes from, and what a missing or wrong one says.
//! One test in its own binary: a process loads the library once, so the order matters.

use ingle::openai::EmbeddingRequest;
use ingle::{Client, Config, ErrorKind, PredictorConfig, DEFAULT_EMBEDDING_MODEL};
use std::path::Path;

fn embedding_config() -> Config {
    let config = ingle_tests::config();
    let embedding = config
        .predictors
        .iter()
        .find(|p| p.tag == DEFAULT_EMBEDDING_MODEL)
        .cloned()
        .unwrap();
    let mut config = Config::empty().predictor(embedding);
    config.models_dir = Some(ingle::config::default_models_dir());
    config
}

fn embed(config: &Config) -> ingle::Result<usize> {
    let client = Client::from_config(config)?;
    let request = EmbeddingRequest::new(DEFAULT_EMBEDDING_MODEL, "hello");
    Ok(client.embeddings.create(&request)?.data.len())
}

#[test]
fn the_library_path_is_configurable_and_errors_say_which_file_and_how_to_get_it() {
    let real = Config::default().onnxruntime_path();
    let base = embedding_config();
    let scratch = std::env::temp_dir().join(format!("ingle-ort-test-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();

    // $ORT_DYLIB_PATH, when the config names no library.
    let missing = scratch.join("nowhere/libonnxruntime.so");
    std::env::set_var("ORT_DYLIB_PATH", &missing);
    let error = embed(&base.clone()).unwrap_err();
    assert_eq!(
        (error.kind, error.code.map(ingle::ErrorCode::as_str)),
        (ErrorKind::NotFound, Some("onnxruntime_missing"))
    );
    for words in [
        missing.to_str().unwrap(),
        "ingle pull onnxruntime",
        "ORT_DYLIB_PATH",
    ] {
        assert!(error.message.contains(words), "{}", error.message);
    }

    // The config's `onnxruntime` wins over the variable.
    let named = scratch.join("elsewhere/libonnxruntime.so.1.31.1");
    let error = embed(&base.clone().onnxruntime(&named)).unwrap_err();
    assert!(
        error.message.contains(named.to_str().unwrap()),
        "{}",
        error.message
    );
    std::env::remove_var("ORT_DYLIB_PATH");

    // A file that is not ONNX Runtime.
    let bogus = scratch.join("libonnxruntime.so");
    std::fs::write(&bogus, "not a shared library").unwrap();
    let error = embed(&base.clone().onnxruntime(&bogus)).unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("onnxruntime_invalid"),
        "{error:?}"
    );
    assert!(
        error.message.contains(bogus.to_str().unwrap()),
        "{}",
        error.message
    );

    // After those failures the right library still loads (nothing failed is remembered), and
    // a client of the same files shares the loaded session.
    assert_eq!(embed(&base.clone().onnxruntime(&real)).unwrap(), 1);
    assert_eq!(embed(&base.clone()).unwrap(), 1);

    // Once loaded, a different library is refused with the reason.
    let copy = scratch.join("copy/libonnxruntime.so.1.31.1");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&real, &copy).unwrap();
    let other_model = PredictorConfig::embedding(
        "@me/other",
        Config::default().resolve(Path::new(ingle::config::DEFAULT_EMBEDDING_FILE)),
        Config::default().resolve(Path::new(ingle::config::DEFAULT_EMBEDDING_TOKENIZER)),
    )
    .threads(1);
    let client =
        Client::from_config(&Config::empty().predictor(other_model).onnxruntime(&copy)).unwrap();
    let error = client
        .embeddings
        .create(&EmbeddingRequest::new("@me/other", "hello"))
        .unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("onnxruntime_conflict"),
        "{error:?}"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn model_files_missing() {
    let empty = std::env::temp_dir().join(format!("ingle-empty-models-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    // The default embedding model is listed only when its files are in the models directory.
    let client = Client::from_config(&Config::default().models_dir(&empty)).unwrap();
    let tags: Vec<String> = client
        .models
        .list()
        .data
        .into_iter()
        .map(|m| m.id)
        .collect();
    // (and by its name without the namespace)
    assert_eq!(tags, [ingle::DEFAULT_MODEL, "smollm2-135m-instruct"]);
    // Named explicitly, it is listed, and using it says which file is missing.
    let config = Config::empty()
        .models_dir(&empty)
        .predictor(PredictorConfig::embedding(
            "@me/embed",
            "gone.onnx",
            "gone.json",
        ));
    let client = Client::from_config(&config).unwrap();
    let error = client
        .embeddings
        .create(&EmbeddingRequest::new("@me/embed", "hello"))
        .unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("model_file_missing")
    );
    assert!(error.message.contains("gone.onnx"), "{}", error.message);
    // Options of another backend are refused by name, when the client is made.
    let config = Config::empty()
        .predictor(PredictorConfig::embedding("@me/embed", "gone.onnx", "gone.json").n_ctx(100));
    let error = Client::from_config(&config).err().unwrap();
    assert_eq!(error.param.as_deref(), Some("predictors[0].n_ctx"));
    assert!(
        error
            .message
            .contains("`n_ctx` is not an option of backend `onnx-embedding`"),
        "{}",
        error.message
    );
    // So is a chat model's sampling `defaults` on an embedding model.
    let config = Config::empty().predictor(
        PredictorConfig::embedding("@me/embed", "gone.onnx", "gone.json").defaults(
            ingle::SamplingDefaults {
                temperature: Some(0.5),
                ..Default::default()
            },
        ),
    );
    let error = Client::from_config(&config).err().unwrap();
    assert_eq!(
        error.param.as_deref(),
        Some("predictors[0].defaults"),
        "{error}"
    );
    std::fs::remove_dir_all(&empty).unwrap();
}
