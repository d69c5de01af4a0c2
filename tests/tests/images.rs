//! `images.generate` on users' predictors annotated for it (a prompt, `ImageWidth`,
//! `ImageHeight`, `ImageCount`): eager and generator, created and streamed, every format, and
//! every mistake of the caller's or the predictor's as an error naming it.

use base64::Engine;
use ingle::openai::ImageGenerateRequest;
use ingle::predict::{Annotation, OutputStream, Parameter, Signature};
use ingle::{Client, ErrorKind, FnPredictor, Tensor, Value, ValueType};
use ingle_tests::own_client;
use serde_json::Value as Json;
use std::sync::Arc;

fn signature(with_count: bool) -> Signature {
    let mut inputs = vec![
        Parameter::new("prompt", ValueType::String),
        Parameter::new("width", ValueType::Int)
            .annotated(Annotation::ImageWidth)
            .default_value(Value::Int(8))
            .range(Some(1.0), Some(512.0)),
        Parameter::new("height", ValueType::Int)
            .annotated(Annotation::ImageHeight)
            .default_value(Value::Int(4)),
    ];
    if with_count {
        inputs.push(
            Parameter::new("count", ValueType::Int)
                .annotated(Annotation::ImageCount)
                .default_value(Value::Int(1)),
        );
    }
    Signature::new(inputs, vec![Parameter::new("images", ValueType::List)])
}

/// The colour a prompt names.
fn colour(prompt: &str) -> [u8; 3] {
    match prompt {
        p if p.contains("red") => [255, 0, 0],
        p if p.contains("green") => [0, 255, 0],
        _ => [0, 0, 255],
    }
}

/// An RGB image: the prompt's colour, its green channel a gradient along x, `step` in blue.
fn painted(prompt: &str, width: usize, height: usize, step: u8) -> Value {
    let [r, _, _] = colour(prompt);
    let mut data = Vec::with_capacity(width * height * 3);
    for _y in 0..height {
        for x in 0..width {
            data.extend([r, (x * 255 / width.max(2).saturating_sub(1)) as u8, step]);
        }
    }
    Value::Tensor(Tensor::new(ingle::Dtype::U8, vec![height, width, 3], data).unwrap())
}

fn sizes(inputs: &ingle::predict::Inputs) -> (String, usize, usize, usize) {
    let int =
        |name: &str, default: i64| inputs.get(name).and_then(Value::as_i64).unwrap_or(default);
    (
        inputs["prompt"].as_str().unwrap().to_string(),
        int("width", 8) as usize,
        int("height", 4) as usize,
        int("count", 1) as usize,
    )
}

fn client() -> Client {
    let client = own_client(|p| p);
    client
        .register(Arc::new(FnPredictor::eager(
            "@me/paint",
            signature(true),
            |inputs| {
                let (prompt, w, h, n) = sizes(&inputs);
                Ok(vec![Value::List(
                    (0..n).map(|i| painted(&prompt, w, h, i as u8)).collect(),
                )])
            },
        )))
        .unwrap();
    // A generator: three yields, a finer image each time (blue = the step), the last one whole.
    client
        .register(Arc::new(FnPredictor::generator(
            "@me/refine",
            signature(false),
            |inputs| {
                let (prompt, w, h, _) = sizes(&inputs);
                let steps: OutputStream =
                    Box::new((1..=3u8).map(move |step| {
                        Ok(vec![Value::List(vec![painted(&prompt, w, h, step)])])
                    }));
                Ok(steps)
            },
        )))
        .unwrap();
    client
}

fn decoded(b64: &str) -> image::DynamicImage {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    image::load_from_memory(&bytes).unwrap()
}

fn request(model: &str, prompt: &str, extra: Json) -> ImageGenerateRequest {
    let mut json = serde_json::json!({"model": model, "prompt": prompt});
    json.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    ImageGenerateRequest::from_json(&json.to_string()).unwrap()
}

#[test]
fn an_eager_predictor_paints_what_the_prompt_asks_at_the_size_asked() {
    let client = client();
    let response = client
        .images
        .generate(&request(
            "@me/paint",
            "a red square",
            serde_json::json!({"size": "16x9", "n": 2}),
        ))
        .unwrap();
    assert_eq!(response["size"], "16x9");
    assert_eq!(response["output_format"], "png");
    assert_eq!(response["background"], "opaque");
    assert!(response.get("quality").is_none(), "none asked for");
    let data = response["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (i, item) in data.iter().enumerate() {
        let image = decoded(item["b64_json"].as_str().unwrap()).to_rgb8();
        assert_eq!(image.dimensions(), (16, 9));
        assert_eq!(image.get_pixel(0, 0).0, [255, 0, i as u8]);
        assert_eq!(image.get_pixel(15, 8).0, [255, 255, i as u8]);
    }
    // "auto" (and no size) is the predictor's default; JPEG and WebP encode too.
    for (format, extra) in [
        (
            "jpeg",
            serde_json::json!({"output_format": "jpeg", "output_compression": 90}),
        ),
        (
            "webp",
            serde_json::json!({"output_format": "webp", "size": "auto"}),
        ),
    ] {
        let response = client
            .images
            .generate(&request("@me/paint", "green", extra))
            .unwrap();
        assert_eq!(response["output_format"], format);
        let image = decoded(response["data"][0]["b64_json"].as_str().unwrap()).to_rgb8();
        assert_eq!(image.dimensions(), (8, 4), "{format}");
        let [r, g, _] = image.get_pixel(7, 0).0;
        assert!(r < 10 && g > 245, "{format}: {:?}", image.get_pixel(7, 0));
    }
}

#[test]
fn a_generators_yields_stream_as_partial_images_then_the_completed_one() {
    let client = client();
    let events: Vec<Json> = client
        .images
        .stream(&request(
            "@me/refine",
            "blue",
            serde_json::json!({"stream": true, "partial_images": 2}),
        ))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "image_generation.partial_image",
            "image_generation.partial_image",
            "image_generation.completed"
        ]
    );
    for (i, event) in events.iter().enumerate() {
        let step = decoded(event["b64_json"].as_str().unwrap())
            .to_rgb8()
            .get_pixel(0, 0)
            .0[2];
        assert_eq!(step, i as u8 + 1, "each yield in order");
        assert_eq!(event["size"], "8x4");
    }
    assert_eq!(events[1]["partial_image_index"], 1);
    assert_eq!(events[2]["usage"]["total_tokens"], 0);
    // Fewer partial images than yields: the first ones; none asked: only the completed one.
    let one = client
        .images
        .stream(&request(
            "@me/refine",
            "blue",
            serde_json::json!({"partial_images": 1}),
        ))
        .unwrap()
        .count();
    assert_eq!(one, 2);
    let none = client
        .images
        .stream(&request("@me/refine", "blue", serde_json::json!({})))
        .unwrap();
    assert_eq!(none.count(), 1);
    // Created, a generator's answer is its last yield; an eager predictor streams one event.
    let whole = client
        .images
        .generate(&request("@me/refine", "blue", serde_json::json!({})))
        .unwrap();
    assert_eq!(
        decoded(whole["data"][0]["b64_json"].as_str().unwrap())
            .to_rgb8()
            .get_pixel(0, 0)
            .0[2],
        3
    );
    let eager: Vec<_> = client
        .images
        .stream(&request(
            "@me/paint",
            "red",
            serde_json::json!({"partial_images": 3}),
        ))
        .unwrap()
        .collect();
    assert_eq!(eager.len(), 1);
}

#[test]
fn the_callers_mistakes_are_errors_naming_the_field() {
    let client = client();
    for (extra, param) in [
        (serde_json::json!({"size": "10000x10000"}), "size"),
        (serde_json::json!({"size": "big"}), "size"),
        (serde_json::json!({"size": "0x5"}), "size"),
        (serde_json::json!({"n": 11}), "n"),
        (serde_json::json!({"n": 0}), "n"),
        (
            serde_json::json!({"response_format": "url"}),
            "response_format",
        ),
        (serde_json::json!({"output_format": "gif"}), "output_format"),
        (
            serde_json::json!({"output_format": "jpeg", "background": "transparent"}),
            "background",
        ),
        (
            serde_json::json!({"output_compression": 101}),
            "output_compression",
        ),
        (serde_json::json!({"partial_images": 4}), "partial_images"),
        (serde_json::json!({"quality": "ultra"}), "quality"),
        (serde_json::json!({"mask": "x"}), "mask"),
        (serde_json::json!({"size": "1024x16"}), "size"), // over the predictor's own width bound
    ] {
        let error = client
            .images
            .generate(&request("@me/paint", "red", extra.clone()))
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{extra}: {error}");
        assert_eq!(error.param.as_deref(), Some(param), "{extra}: {error}");
    }
    for (prompt, kind) in [
        (Json::Null, "Missing"),
        (Json::from(""), "empty"),
        (Json::from(3), "string"),
    ] {
        let request = ImageGenerateRequest {
            prompt,
            ..ImageGenerateRequest::new("@me/paint", "x")
        };
        let error = client.images.generate(&request).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("prompt"));
        assert!(error.message.contains(kind), "{error}");
    }
    // The refiner takes no count: n > 1 is refused by name; a chat model makes no images.
    let error = client
        .images
        .generate(&request("@me/refine", "red", serde_json::json!({"n": 2})))
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("n"), "{error}");
    let error = client
        .images
        .generate(&request(ingle_tests::MODEL, "red", serde_json::json!({})))
        .unwrap_err();
    assert!(error.message.contains("cannot generate images"), "{error}");
    assert!(client
        .images
        .generate(&request("@me/paint", "red", serde_json::json!({})))
        .is_ok());
}

#[test]
fn a_predictors_broken_images_are_errors_naming_its_output_and_the_client_goes_on() {
    let client = client();
    type Broken = (&'static str, fn() -> Value, &'static str);
    let broken: [Broken; 4] = [
        (
            "@me/floats",
            || Value::Tensor(Tensor::from_f32(vec![2, 2, 3], &[0.5; 12]).unwrap()),
            "float32",
        ),
        (
            "@me/two-channels",
            || Value::Tensor(Tensor::new(ingle::Dtype::U8, vec![2, 2, 2], vec![0; 8]).unwrap()),
            "[2, 2, 2]",
        ),
        ("@me/text", || Value::from("a picture"), "string"),
        // (A 50,000 × 50,000 image is refused from its shape: encode.rs's unit test.)
        ("@me/empty", || Value::List(vec![]), "no image"),
    ];
    for (tag, output, says) in broken {
        client
            .register(Arc::new(FnPredictor::eager(
                tag,
                signature(true),
                move |_| Ok(vec![output()]),
            )))
            .unwrap();
        let error = client
            .images
            .generate(&request(tag, "red", serde_json::json!({})))
            .unwrap_err();
        assert!(error.message.contains(says), "{tag}: {error}");
        assert_ne!(
            error.kind,
            ErrorKind::InvalidRequest,
            "the predictor's fault, not the caller's"
        );
    }
    assert!(client
        .images
        .generate(&request("@me/paint", "red", serde_json::json!({})))
        .is_ok());

    // Registering a predictor that cannot serve images names what it lacks.
    let no_prompt = Signature::new(
        vec![Parameter::new("width", ValueType::Int).annotated(Annotation::ImageWidth)],
        vec![Parameter::new("image", ValueType::Tensor)],
    );
    let error = client
        .register(Arc::new(FnPredictor::eager(
            "@me/no-prompt",
            no_prompt,
            |_| Ok(vec![]),
        )))
        .unwrap_err();
    assert!(error.message.contains("the prompt"), "{error}");
    let text_out = Signature::new(
        vec![
            Parameter::new("prompt", ValueType::String),
            Parameter::new("width", ValueType::Int).annotated(Annotation::ImageWidth),
        ],
        vec![Parameter::new("caption", ValueType::String)],
    );
    let error = client
        .register(Arc::new(FnPredictor::eager(
            "@me/caption",
            text_out,
            |_| Ok(vec![]),
        )))
        .unwrap_err();
    assert!(error.message.contains("must be a tensor"), "{error}");
}

#[test]
fn the_method_table_serves_images_in_every_door() {
    let client = client();
    let method = ingle::methods::method("images.generate").unwrap();
    let request = r#"{"model": "@me/paint", "prompt": "red", "size": "2x2"}"#;
    let answer = method
        .call(&client, request, None)
        .unwrap()
        .into_text()
        .unwrap();
    let json: Json = serde_json::from_str(&answer).unwrap();
    assert_eq!(json["size"], "2x2");
    let stream = ingle::methods::method("images.stream").unwrap();
    let events: Vec<String> = stream
        .call(
            &client,
            r#"{"model": "@me/refine", "prompt": "red", "partial_images": 3}"#,
            None,
        )
        .unwrap()
        .into_stream()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(events.len(), 3);
}
