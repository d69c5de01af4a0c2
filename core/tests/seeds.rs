//! The seeds' embedding predictor as a JSON declaration (what the C, Python and Node bindings
//! send): texts annotated Generic (or not at all), found by their place, the one required list
//! of strings, and served by `embeddings.create`.

use ingle::openai::EmbeddingRequest;
use ingle::{Client, Config, Declaration, ExternalPredictor, OutputStream, Tensor, Value};
use std::sync::{Arc, Mutex};

#[test]
fn the_seeds_embedding_predictor_serves_embeddings_by_the_place_of_its_texts() {
    let declaration = serde_json::json!({"tag": "@seed/embed-text",
        "inputs": [
            {"name": "texts", "type": "array", "items": "string", "description": "Input texts to embed."},
            {"name": "dimensions", "type": "integer", "default": 768,
             "annotation": {"type": "embedding_dims", "min": 256, "max": 768}}],
        "outputs": [{"name": "output", "type": "tensor", "annotation": "embedding",
                     "description": "Embedding matrix."}]});
    let declaration = Declaration::from_json(&declaration.to_string()).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let heard = seen.clone();
    let predictor = ExternalPredictor::new(declaration, move |inputs, _| {
        let texts = inputs["texts"].as_list().unwrap().len();
        let dims = inputs["dimensions"].as_i64().unwrap() as usize;
        heard.lock().unwrap().push((texts, dims));
        let matrix = Tensor::from_f32(vec![texts, dims], &vec![0.5; texts * dims]).unwrap();
        let stream: OutputStream = Box::new(std::iter::once(Ok(vec![Value::Tensor(matrix)])));
        Ok(stream)
    });
    let client = Client::from_config(&Config::empty()).unwrap();
    client.register(Arc::new(predictor)).unwrap();

    let r = client
        .embeddings
        .create(&EmbeddingRequest::new("@seed/embed-text", vec!["a", "b"]))
        .unwrap();
    assert_eq!(r.data.len(), 2);
    let mut request = EmbeddingRequest::new("@seed/embed-text", "a");
    request.dimensions = Some(256);
    let m = client.embeddings.create_matrix(&request).unwrap();
    assert_eq!((m.rows, m.dims), (1, 256));
    assert_eq!(*seen.lock().unwrap(), vec![(2, 768), (1, 256)]);
    // Errors speak the caller's terms: `input`, not `texts`.
    let bad =
        EmbeddingRequest::from_json(r#"{"model": "@seed/embed-text", "input": ["a", 1]}"#).unwrap();
    let error = client.embeddings.create(&bad).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("input[1]"), "{error}");
}
