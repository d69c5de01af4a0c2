//! `embeddings.create` on the real embedding model (all-MiniLM-L6-v2, int8, ONNX Runtime).

use base64::Engine as _;
use ingle::openai::{
    ChatCompletionRequest, ChatMessage, EmbeddingInput, EmbeddingRequest, EmbeddingVector,
};
use ingle::{ErrorKind, Value};
use ingle_tests::{shared, EMBEDDING_MODEL, MODEL};

fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    let request = EmbeddingRequest::new(EMBEDDING_MODEL, texts.to_vec());
    let matrix = shared().embeddings.create_matrix(&request).unwrap();
    assert_eq!((matrix.rows, matrix.dims), (texts.len(), 384));
    (0..matrix.rows).map(|i| matrix.row(i).to_vec()).collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

/// Sentences of many lengths, more than one sub-batch of the model's.
fn sentences() -> Vec<String> {
    let words = "the quick brown fox jumps over the lazy dog while a local model embeds \
                 every sentence it is given without any network at all";
    let words: Vec<&str> = words.split(' ').collect();
    (0..45)
        .map(|i| {
            words
                .iter()
                .cycle()
                .skip(i)
                .take(1 + (i * 7) % 40)
                .copied()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn cosines_match_the_reference_values() {
    let v = embed(&[
        "The capital of France is Paris.",
        "Paris is France's capital city.",
        "I like turtles.",
    ]);
    let (paraphrase, unrelated) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
    // onnxruntime + tokenizers in Python on the same files: 0.966 and 0.010 (docs/models.md).
    assert!(
        (paraphrase - 0.966).abs() < 0.01,
        "paraphrase cosine {paraphrase}"
    );
    assert!(
        (unrelated - 0.010).abs() < 0.03,
        "unrelated cosine {unrelated}"
    );
    for row in &v {
        assert!((norm(row) - 1.0).abs() < 1e-5);
    }
}

#[test]
fn a_batch_equals_one_by_one() {
    let sentences = sentences();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let batch = embed(&texts);
    let mut worst = 0f32;
    for (text, row) in texts.iter().zip(&batch) {
        let alone = &embed(&[text])[0];
        for (a, b) in alone.iter().zip(row) {
            worst = worst.max((a - b).abs());
        }
    }
    assert!(worst < 1e-5, "max abs difference {worst}");
}

#[test]
fn dimensions_128_gives_renormalised_prefixes() {
    let mut request =
        EmbeddingRequest::new(EMBEDDING_MODEL, vec!["Hello there.", "I like turtles."]);
    request.dimensions = Some(128);
    let response = shared().embeddings.create(&request).unwrap();
    let full = embed(&["Hello there.", "I like turtles."]);
    for (item, full) in response.data.iter().zip(&full) {
        let EmbeddingVector::Float(v) = &item.embedding else {
            panic!("floats expected")
        };
        assert_eq!(v.len(), 128);
        assert!((norm(v) - 1.0).abs() < 1e-5, "norm {}", norm(v));
        let scale = norm(&full[..128]);
        for (x, y) in v.iter().zip(&full[..128]) {
            assert!((x - y / scale).abs() < 1e-5);
        }
    }
}

#[test]
fn base64_decodes_to_the_float_values() {
    let texts = vec!["The capital of France is Paris.", "I like turtles."];
    let floats = shared()
        .embeddings
        .create(&EmbeddingRequest::new(EMBEDDING_MODEL, texts.clone()))
        .unwrap();
    let mut request = EmbeddingRequest::new(EMBEDDING_MODEL, texts);
    request.encoding_format = Some("base64".into());
    let encoded = shared().embeddings.create(&request).unwrap();
    for (f, e) in floats.data.iter().zip(&encoded.data) {
        let (EmbeddingVector::Float(f), EmbeddingVector::Base64(e)) = (&f.embedding, &e.embedding)
        else {
            panic!("float and base64 expected")
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(e).unwrap();
        let decoded: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(&decoded, f);
    }
}

#[test]
fn the_response_has_the_openai_wire_shape() {
    let mut request = EmbeddingRequest::new(EMBEDDING_MODEL, vec!["one", "two words"]);
    request.user = Some("someone".into());
    let json = serde_json::to_value(shared().embeddings.create(&request).unwrap()).unwrap();
    assert_eq!(json["object"], "list");
    assert_eq!(json["model"], EMBEDDING_MODEL);
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&json), ["data", "model", "object", "usage"]);
    assert_eq!(keys(&json["data"][1]), ["embedding", "index", "object"]);
    assert_eq!(json["data"][1]["object"], "embedding");
    assert_eq!(json["data"][1]["index"], 1);
    assert_eq!(json["data"][1]["embedding"].as_array().unwrap().len(), 384);
    // [CLS] one [SEP] + [CLS] two words [SEP]
    assert_eq!(
        json["usage"],
        serde_json::json!({"prompt_tokens": 7, "total_tokens": 7})
    );
    // A single string is a list of one.
    let one = shared()
        .embeddings
        .create(&EmbeddingRequest::new(EMBEDDING_MODEL, "one"))
        .unwrap();
    assert_eq!(one.data.len(), 1);
}

#[test]
fn long_inputs_are_truncated_to_the_token_window() {
    let long = "word ".repeat(5000);
    let request = EmbeddingRequest::new(EMBEDDING_MODEL, vec![long.as_str(), "short"]);
    let response = shared().embeddings.create(&request).unwrap();
    // 256 for the long text, 3 for "short".
    assert_eq!(response.usage.prompt_tokens, 256 + 3);
    let truncated = "word ".repeat(254);
    let same = embed(&[&truncated]);
    let EmbeddingVector::Float(v) = &response.data[0].embedding else {
        panic!()
    };
    assert!(v.iter().zip(&same[0]).all(|(a, b)| (a - b).abs() < 1e-5));
}

#[test]
fn the_predictions_api_returns_the_tensor() {
    let inputs = ingle::Inputs::from([("texts".to_string(), Value::from(vec!["a", "b", "c"]))]);
    let prediction = shared()
        .predictions
        .create(EMBEDDING_MODEL, inputs)
        .unwrap();
    let results = prediction.into_result().unwrap();
    let Value::Tensor(tensor) = &results[0] else {
        panic!("{results:?}")
    };
    assert_eq!(
        (tensor.dtype, tensor.shape.clone()),
        (ingle::Dtype::F32, vec![3, 384])
    );
    let json = Value::Tensor(tensor.clone()).to_json().unwrap();
    assert_eq!(
        (json["dtype"].as_str(), &json["shape"]),
        (Some("float32"), &serde_json::json!([3, 384]))
    );
    let predictor = shared().predictor(EMBEDDING_MODEL).unwrap();
    assert_eq!(predictor.kind(), ingle::PredictorKind::Eager);
}

#[test]
fn concurrent_requests_get_their_own_vectors() {
    // Concurrent requests are merged into shared batches: each must still get its own rows,
    // at its own `dimensions`.
    let texts = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "a much longer text about something else",
    ];
    let expected = embed(&texts);
    let threads: Vec<_> = texts
        .iter()
        .zip([384usize, 128, 16, 64, 200])
        .map(|(&text, dims)| {
            std::thread::spawn(move || {
                (0..10)
                    .map(|_| {
                        let mut request =
                            EmbeddingRequest::new(EMBEDDING_MODEL, vec![text, "filler"]);
                        request.dimensions = Some(dims as i64);
                        let m = shared().embeddings.create_matrix(&request).unwrap();
                        assert_eq!((m.rows, m.dims), (2, dims));
                        m.row(0).to_vec()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (thread, expected) in threads.into_iter().zip(&expected) {
        for v in thread.join().unwrap() {
            let scale = norm(&expected[..v.len()]);
            assert!(v
                .iter()
                .zip(expected)
                .all(|(a, b)| (a - b / scale).abs() < 1e-5));
        }
    }
}

fn error_of(json: serde_json::Value) -> ingle::Error {
    let request = EmbeddingRequest::from_json(&json.to_string());
    match request {
        Err(e) => e,
        Ok(request) => shared().embeddings.create(&request).unwrap_err(),
    }
}

#[test]
fn invalid_requests_name_the_parameter() {
    let m = EMBEDDING_MODEL;
    let too_many = vec!["x"; 2049];
    let cases = [
        (
            serde_json::json!({"model": m, "input": []}),
            "input",
            "at least one",
        ),
        (
            serde_json::json!({"model": m, "input": ""}),
            "input",
            "empty string",
        ),
        (
            serde_json::json!({"model": m, "input": ["a", ""]}),
            "input[1]",
            "empty string",
        ),
        (
            serde_json::json!({"model": m, "input": too_many}),
            "input",
            "2048",
        ),
        (
            serde_json::json!({"model": m, "input": 42}),
            "input",
            "expected a string or an array of strings",
        ),
        (
            serde_json::json!({"model": m, "input": ["a", 1]}),
            "input[1]",
            "expected a string",
        ),
        (
            serde_json::json!({"model": m, "input": [1, 2, 3]}),
            "input",
            "check_embedding_ctx_length=False",
        ),
        (
            serde_json::json!({"model": m, "input": [[1, 2], [3]]}),
            "input",
            "Token-id input",
        ),
        (
            serde_json::json!({"model": m}),
            "input",
            "Missing required parameter",
        ),
        (
            serde_json::json!({"model": m, "input": "a", "dimensions": 0}),
            "dimensions",
            "between 1 and 384",
        ),
        (
            serde_json::json!({"model": m, "input": "a", "dimensions": 385}),
            "dimensions",
            "between 1 and 384",
        ),
        (
            serde_json::json!({"model": m, "input": "a", "dimensions": "big"}),
            "dimensions",
            "dimensions",
        ),
        (
            serde_json::json!({"model": m, "input": "a", "encoding_format": "int8"}),
            "encoding_format",
            "'float' and 'base64'",
        ),
        (
            serde_json::json!({"model": m, "input": "a", "frobnicate": true}),
            "frobnicate",
            "Unrecognized request argument",
        ),
        (
            serde_json::json!({"model": "", "input": "a"}),
            "model",
            "Missing required parameter",
        ),
        (
            serde_json::json!({"model": MODEL, "input": "a"}),
            "model",
            "no input annotated Embedding",
        ),
    ];
    for (json, param, words) in cases {
        let error = error_of(json.clone());
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{json}: {error:?}");
        assert_eq!(error.param.as_deref(), Some(param), "{json}: {error:?}");
        assert!(error.message.contains(words), "{json}: {}", error.message);
    }
    let unknown = error_of(serde_json::json!({"model": "@nobody/nothing", "input": "a"}));
    assert_eq!(unknown.kind, ErrorKind::NotFound);
    // The client is still usable.
    assert_eq!(embed(&["still works"]).len(), 1);
}

#[test]
fn an_embedding_model_cannot_chat() {
    let request = ChatCompletionRequest::new(EMBEDDING_MODEL, vec![ChatMessage::user("Hi")]);
    let error = shared().chat.completions.create(&request).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("model"));
    assert!(
        error.message.contains("no input annotated ChatMessages"),
        "{}",
        error.message
    );
    assert!(matches!(
        EmbeddingRequest::from_json(r#"{"model": "m", "input": "a"}"#)
            .unwrap()
            .input,
        EmbeddingInput::One(_)
    ));
}
