//! The predictor model without a model file: Rust-function predictors, validation, create vs stream.

use ingle::{
    Client, Config, ErrorKind, FnPredictor, Inputs, OutputStream, Parameter, PredictorKind,
    Signature, Value, ValueType,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn client() -> Client {
    Client::from_config(&Config::empty()).unwrap()
}

fn inputs(pairs: &[(&str, Value)]) -> Inputs {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// `add(a, b)` eagerly; `count(to)` yields 1, 2, .., to.
fn register_math(client: &Client) {
    let add = Signature::new(
        vec![
            Parameter::new("a", ValueType::Int),
            Parameter::new("b", ValueType::Int)
                .default_value(10i64)
                .range(Some(0.0), Some(100.0)),
        ],
        vec![Parameter::new("sum", ValueType::Int)],
    );
    let eager = FnPredictor::eager("@test/add", add, |i: Inputs| {
        Ok(vec![Value::Int(
            i["a"].as_i64().unwrap() + i["b"].as_i64().unwrap(),
        )])
    });
    let count = Signature::new(
        vec![Parameter::new("to", ValueType::Int).range(Some(1.0), None)],
        vec![Parameter::new("n", ValueType::Int)],
    );
    let generator = FnPredictor::generator("@test/count", count, |i: Inputs| {
        let to = i["to"].as_i64().unwrap();
        let stream: OutputStream = Box::new((1..=to).map(|n| Ok(vec![Value::Int(n)])));
        Ok(stream)
    });
    client.register(Arc::new(eager)).unwrap();
    client.register(Arc::new(generator)).unwrap();
}

#[test]
fn eager_create_returns_the_value() {
    let client = client();
    register_math(&client);
    assert_eq!(
        client.predictor("@test/add").unwrap().kind(),
        PredictorKind::Eager
    );
    let p = client
        .predictions
        .create("@test/add", inputs(&[("a", 2.into()), ("b", 3.into())]))
        .unwrap();
    assert_eq!(p.results, Some(vec![Value::Int(5)]));
    assert_eq!(p.tag, "@test/add");
    assert!(p.id.starts_with("pred_") && p.error.is_none() && p.latency >= 0.0);
}

#[test]
fn eager_stream_yields_once() {
    let client = client();
    register_math(&client);
    let all: Vec<_> = client
        .predictions
        .stream("@test/add", inputs(&[("a", 1.into())]))
        .unwrap()
        .collect();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].results,
        Some(vec![Value::Int(11)]),
        "default b=10 applies"
    );
}

#[test]
fn generator_stream_yields_every_partial_value() {
    let client = client();
    register_math(&client);
    assert_eq!(
        client.predictor("@test/count").unwrap().kind(),
        PredictorKind::Generator
    );
    let all: Vec<_> = client
        .predictions
        .stream("@test/count", inputs(&[("to", 4.into())]))
        .unwrap()
        .collect();
    let values: Vec<_> = all
        .iter()
        .map(|p| p.results.clone().unwrap()[0].clone())
        .collect();
    assert_eq!(values, vec![1.into(), 2.into(), 3.into(), 4.into()]);
    assert!(
        all.iter().all(|p| p.id == all[0].id),
        "partial predictions share one id"
    );
}

#[test]
fn generator_create_returns_the_last_value() {
    let client = client();
    register_math(&client);
    let p = client
        .predictions
        .create("@test/count", inputs(&[("to", 3.into())]))
        .unwrap();
    assert_eq!(p.into_result().unwrap(), vec![Value::Int(3)]);
}

#[test]
fn dropping_a_stream_stops_pulling_the_generator() {
    let client = client();
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&produced);
    let sig = Signature::new(vec![], vec![Parameter::new("n", ValueType::Int)]);
    let endless = FnPredictor::generator("@test/endless", sig, move |_| {
        let counter = Arc::clone(&counter);
        let stream: OutputStream = Box::new((0..).map(move |n| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(vec![Value::Int(n)])
        }));
        Ok(stream)
    });
    client.register(Arc::new(endless)).unwrap();
    let taken: Vec<_> = client
        .predictions
        .stream("@test/endless", Inputs::new())
        .unwrap()
        .take(3)
        .collect();
    assert_eq!(taken.len(), 3);
    assert_eq!(
        produced.load(Ordering::SeqCst),
        3,
        "nothing is produced that nobody pulled"
    );
}

#[test]
fn a_failure_while_running_is_reported_on_the_prediction() {
    let client = client();
    let sig = Signature::new(vec![], vec![Parameter::new("n", ValueType::Int)]);
    let failing = FnPredictor::generator("@test/failing", sig, |_| {
        let stream: OutputStream =
            Box::new(vec![Ok(vec![Value::Int(1)]), Err(ingle::Error::model("boom"))].into_iter());
        Ok(stream)
    });
    client.register(Arc::new(failing)).unwrap();
    let all: Vec<_> = client
        .predictions
        .stream("@test/failing", Inputs::new())
        .unwrap()
        .collect();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].error.as_ref().unwrap().message, "boom");
    let last = client
        .predictions
        .create("@test/failing", Inputs::new())
        .unwrap();
    assert_eq!(last.into_result().unwrap_err().kind, ErrorKind::Model);
}

#[test]
fn validation_names_the_parameter() {
    let client = client();
    register_math(&client);
    let err = |i: Inputs| client.predictions.create("@test/add", i).unwrap_err();

    let missing = err(inputs(&[("b", 1.into())]));
    assert_eq!(
        (missing.kind, missing.param.as_deref()),
        (ErrorKind::InvalidRequest, Some("a"))
    );
    assert!(
        missing.message.contains("Missing required parameter `a`"),
        "{missing}"
    );

    let wrong_type = err(inputs(&[("a", "two".into())]));
    assert_eq!(wrong_type.param.as_deref(), Some("a"));
    assert!(
        wrong_type.message.contains("expected integer, got string"),
        "{wrong_type}"
    );

    let out_of_range = err(inputs(&[("a", 1.into()), ("b", 101.into())]));
    assert_eq!(out_of_range.param.as_deref(), Some("b"));
    assert!(
        out_of_range.message.contains("between 0 and 100"),
        "{out_of_range}"
    );

    let unknown = err(inputs(&[("a", 1.into()), ("c", 1.into())]));
    assert_eq!(unknown.param.as_deref(), Some("c"));
    assert!(
        unknown.message.contains("Unknown parameter `c`"),
        "{unknown}"
    );

    let not_found = client
        .predictions
        .create("@test/nope", Inputs::new())
        .unwrap_err();
    assert_eq!(
        (not_found.kind, not_found.code.map(ingle::ErrorCode::as_str)),
        (ErrorKind::NotFound, Some("model_not_found"))
    );
}

#[test]
fn floats_accept_ints_but_not_the_reverse() {
    let sig = Signature::new(
        vec![
            Parameter::new("x", ValueType::Float),
            Parameter::new("n", ValueType::Int).optional(),
        ],
        vec![],
    );
    assert!(sig.validate(inputs(&[("x", 1.into())])).is_ok());
    let err = sig
        .validate(inputs(&[("x", 1.0.into()), ("n", 1.5.into())]))
        .unwrap_err();
    assert_eq!(err.param.as_deref(), Some("n"));
}

#[test]
fn duplicate_tags_are_rejected() {
    let client = client();
    register_math(&client);
    let sig = Signature::default();
    let again = FnPredictor::eager("@test/add", sig, |_| Ok(vec![]));
    let err = client.register(Arc::new(again)).unwrap_err();
    assert!(err.message.contains("already registered"), "{err}");
}

#[test]
fn error_serializes_to_the_openai_error_object() {
    let err = ingle::Error::invalid("temperature", "bad");
    let json = serde_json::to_value(&err).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"error": {"message": "bad", "type": "invalid_request_error", "param": "temperature", "code": null}})
    );
    assert_eq!(err.kind.http_status(), 400);
}

#[test]
fn config_parses_toml_and_rejects_unknown_keys() {
    let config = Config::from_toml(
        r#"
        models_dir = "/models"
        [[predictors]]
        tag = "@me/chat"
        backend = "llama"
        model = "chat.gguf"
        n_ctx = 512
        threads = 1
        parallel = 2
        "#,
    )
    .unwrap();
    let llama = config.predictors[0].llama_options().unwrap();
    assert_eq!((llama.n_ctx, llama.parallel), (Some(512), Some(2)));
    assert_eq!(config.predictors[0].threads, Some(1));
    assert_eq!(
        config.model_path(&config.predictors[0]),
        std::path::Path::new("/models/chat.gguf")
    );
    let err = Config::from_toml(
        "[[predictors]]\ntag = \"x\"\nbackend = \"llama\"\nmodel = \"m\"\nctx = 1\n",
    )
    .unwrap_err();
    assert!(err.message.contains("ctx"), "{err}");
    let err =
        Config::from_toml("[[predictors]]\ntag = \"x\"\nbackend = \"onnx2\"\nmodel = \"m\"\n")
            .unwrap_err();
    assert!(err.message.contains("onnx2"), "{err}");
}

#[test]
fn a_missing_model_file_names_the_path_and_the_fetch_command() {
    let config = Config::empty()
        .models_dir("/nonexistent/ingle-models")
        .predictor(ingle::PredictorConfig::llama(
            "@local/missing",
            "missing.gguf",
        ));
    let client = Client::from_config(&config).unwrap();
    assert_eq!(
        client.models.list().data[0].id,
        "@local/missing",
        "listing does not load"
    );
    let err = client
        .predictions
        .create("@local/missing", Inputs::new())
        .unwrap_err();
    assert!(
        err.message
            .contains("/nonexistent/ingle-models/missing.gguf"),
        "{err}"
    );
    assert!(err.message.contains("put the file there"), "{err}");
}
