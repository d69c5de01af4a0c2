//! `rerank.create` on the real embedding model (a bi-encoder: cosine scores) and on a user's
//! predictor annotated for it; both shapes (Jina's and Cohere's, TEI's); the method table.

use ingle::openai::RerankRequest;
use ingle::predict::{Annotation, Parameter, Signature};

use ingle::{ErrorKind, FnPredictor, Value, ValueType};
use ingle_tests::{own_client, shared, EMBEDDING_MODEL, MODEL};
use std::sync::Arc;

const QUERY: &str = "What is the capital of France?";
const DOCUMENTS: [&str; 4] = [
    "Berlin is the capital of Germany.",
    "The Eiffel Tower is a landmark in Paris.",
    "Paris is the capital and largest city of France.",
    "Bananas are rich in potassium.",
];

#[test]
fn an_embedding_model_ranks_the_paris_document_first() {
    let response = shared()
        .rerank
        .create(&RerankRequest::new(EMBEDDING_MODEL, QUERY, DOCUMENTS))
        .unwrap();
    assert!(response.id.starts_with("rerank-"));
    assert_eq!(response.model, EMBEDDING_MODEL);
    let order: Vec<u32> = response.results.iter().map(|r| r.index).collect();
    assert_eq!(order[0], 2, "{response:?}");
    assert_eq!(*order.last().unwrap(), 3, "bananas last: {response:?}");
    let scores: Vec<f64> = response.results.iter().map(|r| r.relevance_score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(
        scores.iter().all(|s| (-1.0..=1.0).contains(s)),
        "cosines: {scores:?}"
    );
    assert_eq!(
        response.results[0].document.as_ref().unwrap().text,
        DOCUMENTS[2],
        "Jina's default: documents returned"
    );
    assert!(response.usage.prompt_tokens > 0);

    let top = shared()
        .rerank
        .create(&RerankRequest {
            top_n: Some(2),
            return_documents: Some(false),
            ..RerankRequest::new(EMBEDDING_MODEL, QUERY, DOCUMENTS)
        })
        .unwrap();
    assert_eq!(top.results.len(), 2);
    assert_eq!(top.results[0].index, 2);
    assert!(top.results.iter().all(|r| r.document.is_none()));
}

/// More documents than the embedder takes in one call: embedded in batches, all scored.
#[test]
fn more_documents_than_one_embedding_batch() {
    let mut documents: Vec<String> = (0..2100).map(|i| format!("Note number {i}.")).collect();
    documents[2077] = DOCUMENTS[2].to_string();
    let response = shared()
        .rerank
        .create(&RerankRequest {
            top_n: Some(3),
            ..RerankRequest::new(EMBEDDING_MODEL, QUERY, documents)
        })
        .unwrap();
    assert_eq!(response.results[0].index, 2077, "{:?}", response.results);
    let error = shared()
        .rerank
        .create(&RerankRequest::new(
            EMBEDDING_MODEL,
            QUERY,
            vec![String::new(); ingle::openai::MAX_RERANK_DOCUMENTS + 1],
        ))
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("documents"));
}

#[test]
fn the_method_table_answers_jina_and_tei_shapes() {
    let client = shared();
    let jina = serde_json::json!({
        "model": EMBEDDING_MODEL, "query": QUERY,
        "documents": [DOCUMENTS[0], {"text": DOCUMENTS[2]}], "top_n": 1,
    });
    let method = ingle::methods::method("rerank.create").unwrap();
    let answer = method.call(client, &jina.to_string(), None).unwrap();
    let json: serde_json::Value = serde_json::from_str(&answer.into_text().unwrap()).unwrap();
    assert_eq!(json["results"][0]["index"], 1);
    assert_eq!(json["results"][0]["document"]["text"], DOCUMENTS[2]);
    assert_eq!(json["results"].as_array().unwrap().len(), 1);

    let tei = serde_json::json!({
        "model": EMBEDDING_MODEL, "query": QUERY, "texts": DOCUMENTS, "return_text": true,
        "raw_scores": false, "truncate": true,
    });
    let answer = method.call(client, &tei.to_string(), None).unwrap();
    let json: serde_json::Value = serde_json::from_str(&answer.into_text().unwrap()).unwrap();
    let list = json.as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[0]["index"], 2);
    assert_eq!(list[0]["text"], DOCUMENTS[2]);
    assert!(list[0]["score"].as_f64().unwrap() > list[3]["score"].as_f64().unwrap());

    // TEI's clients name no model (a TEI server has one): the default embedding model ranks.
    let unnamed = serde_json::json!({"query": QUERY, "texts": DOCUMENTS});
    let answer = method.call(client, &unnamed.to_string(), None).unwrap();
    let json: serde_json::Value = serde_json::from_str(&answer.into_text().unwrap()).unwrap();
    assert_eq!(json[0]["index"], 2);
    assert!(json[0].get("text").is_none(), "TEI's default: no text");
}

#[test]
fn bad_rerank_requests_name_the_field() {
    let cases = [
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "documents": ["a"]}),
            "query",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q"}),
            "documents",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q", "documents": []}),
            "documents",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q", "documents": ["a", 3]}),
            "documents[1]",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q", "documents": [{"title": "a"}]}),
            "documents[0].text",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q", "documents": ["a"], "top_n": 0}),
            "top_n",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q", "documents": ["a"], "texts": ["b"]}),
            "texts",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": 5, "documents": ["a"]}),
            "query",
        ),
        (
            serde_json::json!({"model": EMBEDDING_MODEL, "query": "q", "documents": ["a"], "rank_fields": ["x"]}),
            "rank_fields",
        ),
        (
            serde_json::json!({"model": MODEL, "query": "q", "documents": ["a"]}),
            "model",
        ),
        (
            serde_json::json!({"query": "q", "documents": ["a"]}),
            "model",
        ),
    ];
    let method = ingle::methods::method("rerank.create").unwrap();
    for (request, param) in cases {
        let error = method
            .call(shared(), &request.to_string(), None)
            .unwrap_err();
        assert_eq!(
            error.kind,
            ErrorKind::InvalidRequest,
            "{request}: {error:?}"
        );
        assert_eq!(error.param.as_deref(), Some(param), "{request}: {error:?}");
    }
    let error = method
        .call(
            shared(),
            &serde_json::json!({"model": MODEL, "query": "q", "documents": ["a"]}).to_string(),
            None,
        )
        .unwrap_err();
    assert!(
        error.message.contains("cannot serve rerank"),
        "{}",
        error.message
    );
}

fn keyword_reranker(tag: &str, scores: fn(&str, &[Value]) -> Vec<Value>) -> FnPredictor {
    let signature = Signature::new(
        vec![
            Parameter::new("q", ValueType::String).annotated(Annotation::RerankQuery),
            Parameter::new("docs", ValueType::List).annotated(Annotation::RerankDocuments),
        ],
        vec![Parameter::new("scores", ValueType::List).annotated(Annotation::RerankScores)],
    );
    FnPredictor::eager(tag, signature, move |inputs| {
        let query = inputs["q"].as_str().unwrap_or_default().to_string();
        let docs = inputs["docs"].as_list().unwrap_or_default().to_vec();
        Ok(vec![Value::List(scores(&query, &docs))])
    })
}

/// Words of the query each document holds.
fn shared_words(query: &str, docs: &[Value]) -> Vec<Value> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    docs.iter()
        .map(|d| {
            let text = d.as_str().unwrap_or_default().to_lowercase();
            Value::Int(words.iter().filter(|w| text.contains(w.as_str())).count() as i64)
        })
        .collect()
}

#[test]
fn a_user_predictor_annotated_for_rerank_scores_the_documents() {
    let client = own_client(|p| p);
    client
        .register(Arc::new(keyword_reranker("@me/keywords", shared_words)))
        .unwrap();
    let response = client
        .rerank
        .create(&RerankRequest::new(
            "@me/keywords",
            "red apple pie",
            ["a red car", "red apple pie recipe", "pie"],
        ))
        .unwrap();
    let ranked: Vec<(u32, f64)> = response
        .results
        .iter()
        .map(|r| (r.index, r.relevance_score))
        .collect();
    assert_eq!(ranked, [(1, 3.0), (0, 1.0), (2, 1.0)]);

    // A predictor that breaks its promise is an error naming it, and the client goes on.
    client
        .register(Arc::new(keyword_reranker("@me/short", |_, _| {
            vec![Value::Float(1.0)]
        })))
        .unwrap();
    let error = client
        .rerank
        .create(&RerankRequest::new("@me/short", "q", ["a", "b"]))
        .unwrap_err();
    assert!(
        error.message.contains("1 scores for 2 documents"),
        "{}",
        error.message
    );
    client
        .register(Arc::new(keyword_reranker("@me/nan", |_, docs| {
            vec![Value::Float(f64::NAN); docs.len()]
        })))
        .unwrap();
    let error = client
        .rerank
        .create(&RerankRequest::new("@me/nan", "q", ["a"]))
        .unwrap_err();
    assert!(
        error.message.contains("finite numbers"),
        "{}",
        error.message
    );
    assert!(client
        .rerank
        .create(&RerankRequest::new("@me/keywords", "q", ["a"]))
        .is_ok());

    // Registering a half-declared reranker fails, naming what is missing.
    let half = Signature::new(
        vec![Parameter::new("q", ValueType::String).annotated(Annotation::RerankQuery)],
        vec![Parameter::new("scores", ValueType::List).annotated(Annotation::RerankScores)],
    );
    let error = client
        .register(Arc::new(FnPredictor::eager("@me/half", half, |_| {
            Ok(vec![])
        })))
        .unwrap_err();
    assert!(
        error.message.contains("RerankDocuments"),
        "{}",
        error.message
    );
}

#[test]
fn a_hundred_thousand_documents_are_refused_and_huge_documents_ranked_by_their_start() {
    let client = shared();
    let method = ingle::methods::method("rerank.create").unwrap();
    // 100,000 documents through the method table (every door's JSON): refused by name, from
    // their count, before any is embedded.
    let many = serde_json::json!({"model": EMBEDDING_MODEL, "query": QUERY,
        "documents": vec!["a note"; 100_000]});
    let started = std::time::Instant::now();
    let error = method.call(client, &many.to_string(), None).unwrap_err();
    assert_eq!(
        (error.kind, error.param.as_deref()),
        (ErrorKind::InvalidRequest, Some("documents")),
        "{error}"
    );
    assert!(error.message.contains("100000 documents"), "{error}");
    eprintln!("100,000 documents refused in {:?}", started.elapsed());

    // Three 8 MB documents: each is read from its start (the model's 256 tokens), as its first
    // kilobytes would be, and the one about Paris ranks first.
    let huge =
        |start: &str| format!("{start} ") + &"The weather was mild that year. ".repeat(1 << 18);
    let documents = vec![huge(DOCUMENTS[0]), huge(DOCUMENTS[2]), huge(DOCUMENTS[3])];
    let response = client
        .rerank
        .create(&RerankRequest::new(
            EMBEDDING_MODEL,
            QUERY,
            documents.clone(),
        ))
        .unwrap();
    assert_eq!(response.results[0].index, 1, "{:?}", response.results);
    let short: Vec<String> = documents.iter().map(|d| d[..4096].to_string()).collect();
    let same = client
        .rerank
        .create(&RerankRequest::new(EMBEDDING_MODEL, QUERY, short))
        .unwrap();
    for (whole, start) in response.results.iter().zip(&same.results) {
        assert_eq!(whole.index, start.index);
        assert!(
            (whole.relevance_score - start.relevance_score).abs() < 1e-5,
            "{whole:?} {start:?}"
        );
    }
}
