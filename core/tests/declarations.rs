//! Predictors declared as JSON (what the Python, Node and C bindings send): parsing, the rules
//! of the OpenAI methods checked at registration, and every output checked at run time.

use ingle::openai::{ChatCompletionRequest, ChatMessage, EmbeddingRequest};
use ingle::{
    Audio, Client, Config, Declaration, ErrorKind, ExternalPredictor, Inputs, OutputStream, Tensor,
    Value,
};
use std::sync::Arc;

fn declare(json: serde_json::Value) -> ingle::Result<Declaration> {
    Declaration::from_json(&json.to_string())
}

/// The parameter an error names, for a declaration that must be refused.
fn refused(json: serde_json::Value) -> String {
    let client = Client::from_config(&Config::empty()).unwrap();
    let error = declare(json)
        .and_then(|d| {
            let predictor = ExternalPredictor::new(d, |_, _| Ok(Box::new(std::iter::empty())));
            client.register(Arc::new(predictor))
        })
        .expect_err("the declaration must be refused");
    assert_eq!(error.kind, ErrorKind::InvalidRequest, "{error}");
    error.param.unwrap_or_default()
}

fn speech(inputs: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"tag": "@t/s", "inputs": inputs,
        "outputs": [{"name": "audio", "type": "audio", "annotation": {"type": "audio", "sample_rate": 8000}}]})
}

#[test]
fn a_declaration_parses_into_a_signature() {
    let d = declare(serde_json::json!({
        "tag": "@me/tone", "kind": "generator", "description": "Tones.",
        "inputs": [
            {"name": "voice", "type": "string", "choices": ["low", "high"],
             "annotation": {"type": "audio_voice", "voices": ["low", "high"]}},
            {"name": "text", "type": "string", "description": "Text."},
            {"name": "speed", "type": "number", "default": 1.0, "min": 0.25, "max": 4,
             "annotation": {"type": "audio_speed", "min": 0.25, "max": 4}}],
        "outputs": [{"name": "audio", "type": "audio", "annotation": {"type": "audio", "sample_rate": 24000}}]
    }))
    .unwrap();
    assert_eq!(d.kind, ingle::PredictorKind::Generator);
    assert_eq!(d.signature.inputs.len(), 3);
    assert!(d.signature.inputs[0].required && !d.signature.inputs[2].required);
    assert_eq!(d.signature.inputs[2].default, Some(Value::Float(1.0)));
    let inputs = Inputs::from([
        ("voice".to_string(), Value::from("middle")),
        ("text".to_string(), Value::from("x")),
    ]);
    let error = d.signature.validate(inputs).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("voice"));
    assert!(error.message.contains("'low', 'high'"), "{}", error.message);
}

#[test]
fn malformed_declarations_name_the_field() {
    let cases = [
        (serde_json::json!({"inputs": [], "outputs": []}), "tag"),
        (serde_json::json!({"tag": "a b", "outputs": []}), "tag"),
        (
            serde_json::json!({"tag": "@t/x", "kind": "lazy", "outputs": []}),
            "kind",
        ),
        (
            serde_json::json!({"tag": "@t/x", "kind": 1, "outputs": []}),
            "kind",
        ),
        (
            serde_json::json!({"tag": "@t/x", "inputs": [{"name": "a", "type": "number", "min": 2, "max": 1}],
            "outputs": [{"name": "o", "type": "string"}]}),
            "inputs[0].min",
        ),
        (serde_json::json!({"tag": "@t/x", "outputs": []}), "outputs"),
        (
            serde_json::json!({"tag": "@t/x", "extra": 1, "outputs": []}),
            "extra",
        ),
        (
            serde_json::json!({"tag": "@t/x", "outputs": [{"name": "o", "type": "complex"}]}),
            "outputs[0].type",
        ),
        (
            serde_json::json!({"tag": "@t/x", "outputs": [{"type": "string"}]}),
            "outputs[0].name",
        ),
        (
            serde_json::json!({"tag": "@t/x", "inputs": [{"name": "a", "type": "string"}, {"name": "a", "type": "string"}],
            "outputs": [{"name": "o", "type": "string"}]}),
            "inputs[1].name",
        ),
        (
            serde_json::json!({"tag": "@t/x", "inputs": [{"name": "a", "type": "integer", "default": "x"}],
            "outputs": [{"name": "o", "type": "string"}]}),
            "inputs[0].default",
        ),
        (
            serde_json::json!({"tag": "@t/x", "inputs": [{"name": "a", "type": "integer", "annotation": "telepathy"}],
            "outputs": [{"name": "o", "type": "string"}]}),
            "inputs[0].annotation.type",
        ),
        (
            serde_json::json!({"tag": "@t/x", "outputs": [{"name": "o", "type": "audio",
            "annotation": {"type": "audio", "sample_rate": 10}}]}),
            "outputs[0].annotation.sample_rate",
        ),
    ];
    for (json, param) in cases {
        let error = declare(json.clone()).unwrap_err();
        assert_eq!(error.param.as_deref(), Some(param), "{json}: {error}");
    }
    assert_eq!(
        Declaration::from_json("{").unwrap_err().param.as_deref(),
        Some("signature")
    );
}

#[test]
fn the_rules_of_each_method_name_the_parameter() {
    let text = serde_json::json!({"name": "text", "type": "string"});
    let voice = serde_json::json!({"name": "v", "type": "string",
        "annotation": {"type": "audio_voice", "voices": ["a"]}});
    // Speech: one required text, a required voice, a speed with a default.
    assert_eq!(refused(speech(serde_json::json!([voice]))), "inputs");
    assert_eq!(refused(speech(serde_json::json!([text]))), "inputs");
    let optional_voice = serde_json::json!({"name": "v", "type": "string", "default": "a",
        "annotation": {"type": "audio_voice", "voices": ["a"]}});
    assert_eq!(
        refused(speech(serde_json::json!([text, optional_voice]))),
        "v"
    );
    let speed = serde_json::json!({"name": "pace", "type": "number",
        "annotation": {"type": "audio_speed", "min": 0.5, "max": 2}});
    assert_eq!(
        refused(speech(serde_json::json!([text, voice, speed]))),
        "pace"
    );
    let extra = serde_json::json!({"name": "mood", "type": "integer"});
    assert_eq!(
        refused(speech(serde_json::json!([text, voice, extra]))),
        "mood"
    );
    Client::from_config(&Config::empty())
        .unwrap()
        .register(Arc::new(ExternalPredictor::new(
            declare(speech(serde_json::json!([voice, text]))).unwrap(),
            |_, _| Ok(Box::new(std::iter::empty())),
        )))
        .unwrap();
    // Chat: required messages, text out, generation options optional and typed.
    let messages = serde_json::json!({"name": "m", "type": "array", "annotation": "chat_messages"});
    let text_out = serde_json::json!({"name": "t", "type": "string", "annotation": "text_delta"});
    let chat = |inputs: serde_json::Value, outputs: serde_json::Value| serde_json::json!({"tag": "@t/c", "inputs": inputs, "outputs": outputs});
    assert_eq!(
        refused(chat(
            serde_json::json!([messages]),
            serde_json::json!([{"name": "n", "type": "integer"}])
        )),
        "outputs"
    );
    let hot = serde_json::json!({"name": "heat", "type": "string", "default": "x", "annotation": "temperature"});
    assert_eq!(
        refused(chat(
            serde_json::json!([messages, hot]),
            serde_json::json!([text_out])
        )),
        "heat"
    );
    let required_top_p = serde_json::json!({"name": "p", "type": "number", "annotation": "top_p"});
    assert_eq!(
        refused(chat(
            serde_json::json!([messages, required_top_p]),
            serde_json::json!([text_out])
        )),
        "p"
    );
    let optional_messages = serde_json::json!({"name": "m", "type": "array", "required": false, "annotation": "chat_messages"});
    assert_eq!(
        refused(chat(
            serde_json::json!([optional_messages]),
            serde_json::json!([text_out])
        )),
        "m"
    );
    let wrong_type =
        serde_json::json!({"name": "m", "type": "string", "annotation": "chat_messages"});
    assert_eq!(
        refused(chat(
            serde_json::json!([wrong_type]),
            serde_json::json!([text_out])
        )),
        "m"
    );
    // Muna's ChatMessages(context_length=...): a whole number of at least one token.
    let with_context = |n: serde_json::Value| serde_json::json!({"name": "m", "type": "array", "annotation": {"type": "chat_messages", "context_length": n}});
    let declared = declare(chat(
        serde_json::json!([with_context(4096.into())]),
        serde_json::json!([text_out]),
    ))
    .unwrap();
    assert_eq!(declared.signature.context_length(), Some(4096));
    for bad in [
        serde_json::json!(0),
        serde_json::json!(1),
        serde_json::json!(1.5),
        serde_json::json!("4k"),
    ] {
        assert_eq!(
            refused(chat(
                serde_json::json!([with_context(bad)]),
                serde_json::json!([text_out])
            )),
            "inputs[0].annotation.context_length"
        );
    }
    // Embeddings: one required input (the texts), dims with a default, the matrix out.
    let texts = serde_json::json!({"name": "texts", "type": "array", "items": "string", "annotation": "embedding"});
    let matrix = serde_json::json!({"name": "e", "type": "tensor", "annotation": "embedding"});
    let embed = |inputs: serde_json::Value| serde_json::json!({"tag": "@t/e", "inputs": inputs, "outputs": [matrix]});
    let dims = serde_json::json!({"name": "d", "type": "integer", "annotation": {"type": "embedding_dims", "min": 1, "max": 8}});
    assert_eq!(refused(embed(serde_json::json!([texts, dims]))), "d");
    assert_eq!(
        refused(embed(
            serde_json::json!([texts, {"name": "x", "type": "string"}])
        )),
        "x"
    );
    assert_eq!(
        refused(embed(serde_json::json!([{"name": "x", "type": "string"}]))),
        "inputs"
    );
    // Taking both messages and a prompt, each request gives one: both must be optional.
    let prompt = serde_json::json!({"name": "p", "type": "string", "annotation": "prompt"});
    assert_eq!(
        refused(chat(
            serde_json::json!([messages, prompt]),
            serde_json::json!([text_out])
        )),
        "m"
    );
    // Audio needs its rate: an audio parameter without the Audio annotation is refused.
    let bare_audio = serde_json::json!({"tag": "@t/a", "inputs": [{"name": "a", "type": "audio"}],
        "outputs": [{"name": "n", "type": "integer"}]});
    assert_eq!(refused(bare_audio), "a");
    // Transcription: audio in, text out.
    let audio = serde_json::json!({"name": "a", "type": "audio", "annotation": {"type": "audio", "sample_rate": 16000}});
    let listen = serde_json::json!({"tag": "@t/l", "inputs": [audio], "outputs": [{"name": "n", "type": "integer"}]});
    assert_eq!(refused(listen), "outputs");
}

fn client_with(declaration: serde_json::Value, outputs: Vec<Vec<Value>>) -> Client {
    let client = Client::from_config(&Config::empty()).unwrap();
    let predictor = ExternalPredictor::new(declare(declaration).unwrap(), move |_, context| {
        context.logs.write("ran\n");
        let stream: OutputStream = Box::new(outputs.clone().into_iter().map(Ok));
        Ok(stream)
    });
    client.register(Arc::new(predictor)).unwrap();
    client
}

#[test]
fn outputs_that_break_the_signature_fail_the_prediction_naming_predictor_and_output() {
    let embed = serde_json::json!({"tag": "@t/e",
        "inputs": [{"name": "texts", "type": "array", "annotation": "embedding"}],
        "outputs": [{"name": "matrix", "type": "tensor", "annotation": "embedding"}]});
    let request = EmbeddingRequest::new("@t/e", vec!["a", "b"]);
    let three_rows = Tensor::from_f32(vec![3, 1], &[1.0, 2.0, 3.0]).unwrap();
    let client = client_with(embed.clone(), vec![vec![Value::Tensor(three_rows)]]);
    let error = client.embeddings.create(&request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Model);
    assert!(
        error
            .message
            .contains("`@t/e` gave 3 embeddings for 2 texts in its output `matrix`"),
        "{error}"
    );
    let int_tensor = Tensor::new(ingle::Dtype::I32, vec![2, 1], vec![0; 8]).unwrap();
    let client = client_with(embed.clone(), vec![vec![Value::Tensor(int_tensor)]]);
    assert!(client
        .embeddings
        .create(&request)
        .unwrap_err()
        .message
        .contains("int32"));
    let client = client_with(embed, vec![vec![Value::from("text")]]);
    assert!(client
        .embeddings
        .create(&request)
        .unwrap_err()
        .message
        .contains("gave string for its output `matrix`, declared tensor"));

    let audio_at = |rate| {
        Value::Audio(Audio {
            samples: vec![0.0; 80],
            sample_rate: rate,
            channels: 1,
        })
    };
    let tone = speech(serde_json::json!([{"name": "text", "type": "string"},
        {"name": "v", "type": "string", "annotation": {"type": "audio_voice", "voices": ["a"]}}]));
    let request = ingle::openai::SpeechRequest::new("@t/s", "hi", "a");
    let client = client_with(tone.clone(), vec![vec![audio_at(16000)]]);
    let error = client.audio.speech.create(&request).unwrap_err();
    assert!(
        error
            .message
            .contains("at 16000 Hz in its output `audio`, declared 8000 Hz"),
        "{error}"
    );
    let mut generator = tone.clone();
    generator["kind"] = "generator".into();
    let client = client_with(generator, vec![vec![audio_at(8000)], vec![Value::Null]]);
    assert!(client
        .audio
        .speech
        .create(&request)
        .unwrap_err()
        .message
        .contains("no value for its output `audio`"));
    let client = client_with(tone, vec![vec![audio_at(8000), Value::Int(1)]]);
    assert!(client
        .audio
        .speech
        .create(&request)
        .unwrap_err()
        .message
        .contains("gave 2 output values"));
}

#[test]
fn a_generator_without_finish_reason_stops_when_it_ends_and_logs_reach_the_prediction() {
    let echo = serde_json::json!({"tag": "@t/c", "kind": "generator",
        "inputs": [{"name": "m", "type": "array", "annotation": "chat_messages"}],
        "outputs": [{"name": "t", "type": "string", "annotation": "text_delta"}]});
    let client = client_with(echo, vec![vec![Value::from("a")], vec![Value::from("b")]]);
    let request = ChatCompletionRequest::new("@t/c", vec![ChatMessage::user("x")]);
    let completion = client.chat.completions.create(&request).unwrap();
    assert_eq!(completion.choices[0].message.text(), "ab");
    assert_eq!(completion.choices[0].finish_reason, "stop");
    let inputs = ingle::inputs_from_json(r#"{"m": [{"role": "user", "content": "x"}]}"#).unwrap();
    let prediction = client.predictions.create("@t/c", inputs).unwrap();
    assert_eq!(prediction.results, Some(vec![Value::from("ab")]));
    assert_eq!(prediction.logs.as_deref(), Some("ran\n"));
    let metrics = client.metrics("@t/c").unwrap();
    assert_eq!((metrics.active_requests, metrics.generated_tokens), (0, 4));
}

#[test]
fn an_eager_predictor_that_gives_nothing_fails() {
    let eager = serde_json::json!({"tag": "@t/n", "outputs": [{"name": "o", "type": "integer"}]});
    let client = client_with(eager, vec![]);
    let prediction = client.predictions.create("@t/n", Inputs::new()).unwrap();
    assert!(prediction
        .error
        .unwrap()
        .message
        .contains("`@t/n` returned no value"));
}

/// A transcription predictor declared with a `transcription_task` input serves
/// audio.translations (it gets `translate`), and one with a `transcription_language` output
/// reports the language it heard in verbose_json.
#[test]
fn a_transcription_task_input_serves_translations_and_a_language_output_is_reported() {
    use ingle::openai::{TranscriptionAudio, TranscriptionRequest};
    let declaration = |with_task: bool| {
        let mut inputs = vec![
            serde_json::json!({"name": "speech", "type": "audio",
                "annotation": {"type": "audio", "sample_rate": 16000}}),
            serde_json::json!({"name": "lang", "type": "string", "default": null, "required": false,
                "annotation": {"type": "transcription_language"}}),
        ];
        if with_task {
            inputs.push(
                serde_json::json!({"name": "job", "type": "string", "default": "transcribe",
                "annotation": {"type": "transcription_task"}}),
            );
        }
        serde_json::json!({"tag": "@t/listen", "kind": "generator", "inputs": inputs,
            "outputs": [
                {"name": "text", "type": "string", "annotation": {"type": "text_delta"}},
                {"name": "segment", "type": "object", "required": false,
                 "annotation": {"type": "transcription_segment"}},
                {"name": "heard", "type": "string", "required": false,
                 "annotation": {"type": "transcription_language"}}]})
    };
    let client = Client::from_config(&Config::empty()).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let predictor =
        ExternalPredictor::new(declare(declaration(true)).unwrap(), move |inputs, _| {
            let job = inputs
                .get("job")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let text = if job == "translate" {
                "Hello."
            } else {
                "Bonjour."
            };
            record.lock().unwrap().push(job);
            let outputs = vec![vec![Value::from(text), Value::Null, Value::from("fr")]];
            let stream: OutputStream = Box::new(outputs.into_iter().map(Ok));
            Ok(stream)
        });
    client.register(Arc::new(predictor)).unwrap();
    let audio = || TranscriptionAudio::samples(vec![0.0; 1600], 16_000, 1);
    let request = TranscriptionRequest::new("@t/listen").response_format("verbose_json");
    let heard = client
        .audio
        .transcriptions
        .create(&request, audio())
        .unwrap();
    let heard = heard.json().unwrap();
    assert_eq!(
        (&heard["text"], &heard["language"]),
        (&"Bonjour.".into(), &"french".into())
    );
    let translated = client.audio.translations.create(&request, audio()).unwrap();
    let translated = translated.json().unwrap();
    assert_eq!(
        (
            &translated["text"],
            &translated["task"],
            &translated["language"]
        ),
        (&"Hello.".into(), &"translate".into(), &"english".into())
    );
    assert_eq!(*seen.lock().unwrap(), ["transcribe", "translate"]);

    // Without the task input: transcriptions only.
    let client = client_with(
        declaration(false),
        vec![vec![Value::from("Bonjour."), Value::Null, Value::Null]],
    );
    let error = client
        .audio
        .translations
        .create(&request, audio())
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("model"), "{error}");
    assert!(error.message.contains("TranscriptionTask"), "{error}");

    // A task is a string input.
    let mut numeric = declaration(true);
    numeric["inputs"][2]["type"] = "integer".into();
    numeric["inputs"][2]["default"] = 0.into();
    assert_eq!(refused(numeric), "job");
    let mut as_output = declaration(false);
    as_output["outputs"][2]["annotation"]["type"] = "transcription_task".into();
    assert_eq!(refused(as_output), "heard");
}
