//! `client.images.generate`: OpenAI's image generation (`POST /v1/images/generations`) over
//! predictors that make images, found by annotation (Muna's `images.create`): a prompt (the
//! required string input), `ImageWidth`, `ImageHeight` and `ImageCount` inputs, and images out,
//! `(H, W, C)` uint8 arrays (C = 1, 3 or 4) or a list of them, encoded here (`encode.rs`).
//!
//! Created, the answer is an `ImagesResponse` with each image as `b64_json`. Streamed
//! (`stream: true`), the events are `image_generation.partial_image` for each partial image a
//! generator predictor yields before its last (up to `partial_images` of them), then one
//! `image_generation.completed` per image of the last yield (docs/images.md).

mod encode;

pub use encode::{OutputFormat, MAX_IMAGE_PIXELS};

use super::types::OtherFields;
use crate::error::{shown, Error, ErrorKind, Result};
use crate::predict::{unix_now, Annotation, Cancel, Inputs, Logs, OutputStream, Signature};
use crate::registry::Registry;
use crate::value::Value;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::Arc;

/// Most images one request may ask for (`n`), as OpenAI's.
pub const MAX_IMAGES: i64 = 10;

/// Most partial images a stream may ask for (`partial_images`), as OpenAI's.
pub const MAX_PARTIAL_IMAGES: i64 = 3;

/// An image generation request: OpenAI's fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImageGenerateRequest {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub prompt: Json,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    /// `"{width}x{height}"`, or `"auto"` (the predictor's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// `"b64_json"` (the default here); `"url"` is refused: nothing serves the files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    /// `"png"` (default), `"jpeg"` or `"webp"` (lossless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    /// JPEG quality, 0–100 (default 100, as OpenAI's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_compression: Option<i64>,
    /// `"transparent"`, `"opaque"` or `"auto"`: reported back; the predictor's images decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    /// Reported back (`"auto"` when not given); the predictor decides what it makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Partial images to stream before the last, 0–3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_images: Option<i64>,
    /// Accepted: `moderation`, `style`, `user`, `safety_identifier` (nothing to choose here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// A request as [`ImageGenerateRequest::check`] finds it.
#[derive(Debug, Clone)]
pub struct CheckedImages {
    pub prompt: String,
    pub n: u32,
    /// `None`: `"auto"` or not given (the predictor's defaults).
    pub size: Option<(u32, u32)>,
    pub format: OutputFormat,
    pub quality: u8,
    pub partial_images: u32,
}

fn invalid(param: &str, message: String) -> Error {
    Error::invalid(param, message)
}

fn one_of(param: &str, value: &Option<String>, allowed: &[&str]) -> Result<()> {
    match value {
        Some(v) if !allowed.contains(&v.as_str()) => Err(invalid(
            param,
            format!(
                "Invalid value for `{param}`: '{}'; it must be one of {}",
                shown(v),
                allowed.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

impl ImageGenerateRequest {
    pub fn new(model: impl Into<String>, prompt: impl Into<String>) -> Self {
        ImageGenerateRequest {
            model: model.into(),
            prompt: Json::String(prompt.into()),
            ..Default::default()
        }
    }

    pub fn from_json(json: &str) -> Result<Self> {
        super::types::from_json(json)
    }

    /// Every field checked (types, ranges, the size), each error naming its field.
    pub fn check(&self) -> Result<CheckedImages> {
        if let Some((field, _)) = self.other.iter().find(|(_, v)| !v.is_null()) {
            return Err(invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            ));
        }
        if self.model.is_empty() {
            return Err(invalid(
                "model",
                "Missing required parameter: `model`".into(),
            ));
        }
        let prompt = match &self.prompt {
            Json::String(p) if !p.is_empty() => p.clone(),
            Json::String(_) => return Err(invalid("prompt", "`prompt` must not be empty".into())),
            Json::Null => {
                return Err(invalid(
                    "prompt",
                    "Missing required parameter: `prompt`".into(),
                ))
            }
            other => {
                return Err(invalid(
                    "prompt",
                    format!(
                        "Invalid type for `prompt`: expected a string, got {}",
                        kind(other)
                    ),
                ))
            }
        };
        let n = match self.n {
            None => 1,
            Some(n) if (1..=MAX_IMAGES).contains(&n) => n as u32,
            Some(n) => {
                return Err(invalid(
                    "n",
                    format!("Invalid value for `n`: {n}; it must be from 1 to {MAX_IMAGES}"),
                ))
            }
        };
        let size = match self.size.as_deref() {
            None | Some("auto") => None,
            Some(size) => Some(parse_size(size)?),
        };
        one_of(
            "response_format",
            &self.response_format,
            &["b64_json", "url"],
        )?;
        if self.response_format.as_deref() == Some("url") {
            return Err(invalid(
                "response_format",
                "`response_format: \"url\"` is not served: ingle keeps no files to link to; ask \
                 for \"b64_json\" (the default), the image itself"
                    .into(),
            ));
        }
        one_of(
            "output_format",
            &self.output_format,
            &["png", "jpeg", "webp"],
        )?;
        let format = match self.output_format.as_deref() {
            Some("jpeg") => OutputFormat::Jpeg,
            Some("webp") => OutputFormat::Webp,
            _ => OutputFormat::Png,
        };
        let quality = match self.output_compression {
            None => 100,
            Some(c) if (0..=100).contains(&c) => (c as u8).max(1),
            Some(c) => {
                return Err(invalid(
                    "output_compression",
                    format!(
                        "Invalid value for `output_compression`: {c}; it must be from 0 to 100"
                    ),
                ))
            }
        };
        one_of(
            "background",
            &self.background,
            &["transparent", "opaque", "auto"],
        )?;
        if self.background.as_deref() == Some("transparent") && format == OutputFormat::Jpeg {
            return Err(invalid(
                "background",
                "`background: \"transparent\"` needs an `output_format` with transparency: png \
                 or webp"
                    .into(),
            ));
        }
        one_of(
            "quality",
            &self.quality,
            &["low", "medium", "high", "auto", "standard", "hd"],
        )?;
        one_of("moderation", &self.moderation, &["low", "auto"])?;
        one_of("style", &self.style, &["vivid", "natural"])?;
        let partial_images = match self.partial_images {
            None => 0,
            Some(p) if (0..=MAX_PARTIAL_IMAGES).contains(&p) => p as u32,
            Some(p) => {
                return Err(invalid(
                    "partial_images",
                    format!(
                        "Invalid value for `partial_images`: {p}; it must be from 0 to \
                         {MAX_PARTIAL_IMAGES}"
                    ),
                ))
            }
        };
        Ok(CheckedImages {
            prompt,
            n,
            size,
            format,
            quality,
            partial_images,
        })
    }
}

fn kind(value: &Json) -> &'static str {
    match value {
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
        _ => "a string",
    }
}

/// `"1024x768"` → (1024, 768); each side 1 to 4096 and at most [`MAX_IMAGE_PIXELS`] in all.
fn parse_size(size: &str) -> Result<(u32, u32)> {
    let bad = |why: &str| {
        invalid(
            "size",
            format!("Invalid value for `size`: '{}'; {why}", shown(size)),
        )
    };
    let (w, h) = size
        .split_once('x')
        .ok_or_else(|| bad("it must be \"auto\" or WIDTHxHEIGHT in pixels, e.g. \"1024x1024\""))?;
    let side = |s: &str| s.parse::<u32>().ok().filter(|v| (1..=4096).contains(v));
    match (side(w), side(h)) {
        (Some(w), Some(h)) if (w as usize) * (h as usize) <= MAX_IMAGE_PIXELS => Ok((w, h)),
        _ => Err(bad(
            "each side must be a whole number of pixels from 1 to 4096",
        )),
    }
}

/// The inputs of a predictor that makes images.
struct ImageParams {
    prompt: String,
    width: Option<String>,
    height: Option<String>,
    count: Option<String>,
}

fn image_params(signature: &Signature) -> Option<ImageParams> {
    let name = |a: Annotation| signature.input_annotated(&a).map(|p| p.name.clone());
    let (width, height, count) = (
        name(Annotation::ImageWidth),
        name(Annotation::ImageHeight),
        name(Annotation::ImageCount),
    );
    if width.is_none() && height.is_none() && count.is_none() {
        return None;
    }
    let prompt = prompt_input(signature)?.name.clone();
    Some(ImageParams {
        prompt,
        width,
        height,
        count,
    })
}

/// The prompt: the predictor's string input annotated `Generic` (the required one first).
fn prompt_input(signature: &Signature) -> Option<&crate::predict::Parameter> {
    let strings = || {
        signature.inputs.iter().filter(|p| {
            p.annotation == Annotation::Generic && p.value_type == crate::value::ValueType::String
        })
    };
    strings().find(|p| p.required).or_else(|| strings().next())
}

/// A predictor with an `ImageWidth`, `ImageHeight` or `ImageCount` input serves
/// `images.generate`: it needs a string prompt and an output for the images.
pub(super) fn rules(tag: &str, signature: &Signature) -> Result<()> {
    use super::rules::{nothing_else_required, problem};
    let annotated = |a: Annotation| signature.input_annotated(&a);
    let sized = [
        Annotation::ImageWidth,
        Annotation::ImageHeight,
        Annotation::ImageCount,
    ]
    .map(annotated);
    if sized.iter().all(Option::is_none) {
        return Ok(());
    }
    let prompt = prompt_input(signature).ok_or_else(|| {
        problem(
            tag,
            "inputs",
            "serves images.generate, so it needs a string input annotated Generic (the prompt)"
                .into(),
        )
    })?;
    let Some(output) = signature.outputs.first() else {
        return Err(problem(
            tag,
            "outputs",
            "serves images.generate, so it needs an output: the image (an (H, W, C) uint8 array) \
             or a list of them"
                .into(),
        ));
    };
    if !matches!(
        output.value_type,
        crate::value::ValueType::Tensor | crate::value::ValueType::List
    ) {
        return Err(problem(
            tag,
            &output.name,
            format!(
                "serves images.generate, so its first output `{}` must be a tensor (the image) \
                 or a list of them, not {}",
                output.name,
                output.value_type.name()
            ),
        ));
    }
    let mut served = sized.to_vec();
    served.push(Some(prompt));
    nothing_else_required(tag, signature, "images.generate", &served)
}

/// `client.images`.
#[derive(Clone)]
pub struct Images {
    registry: Arc<Registry>,
    pub(crate) cancel: Cancel,
}

/// What a run of an image predictor answers with, besides its images.
struct Run {
    outputs: OutputStream,
    model: String,
    checked: CheckedImages,
    background: Option<String>,
    /// The `quality` asked for.
    quality: Option<String>,
}

impl Images {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Images {
            registry,
            cancel: Cancel::default(),
        }
    }

    /// The images of `request`, as an `ImagesResponse` (`{created, data: [{b64_json}],
    /// background, output_format, quality, size}`).
    pub fn generate(&self, request: &ImageGenerateRequest) -> Result<Json> {
        if request.stream == Some(true) {
            return Err(invalid(
                "stream",
                "`stream: true` was given to generate(); call stream() instead".into(),
            ));
        }
        let run = self.start(request)?;
        let mut last = None;
        for outputs in run.outputs {
            last = Some(outputs?);
        }
        let images = last_images(last, &run.model)?;
        let pixels = encode::images_of(&images, "images")?;
        let mut data = Vec::with_capacity(pixels.len());
        for image in &pixels {
            let bytes = encode::encode(image, run.checked.format, run.checked.quality)?;
            data.push(json!({"b64_json": base64::engine::general_purpose::STANDARD.encode(bytes)}));
        }
        let first = pixels.first().ok_or_else(|| nothing(&run.model))?;
        let mut response = json!({
            "created": unix_now(),
            "data": data,
            "background": background_of(&run.background, first),
            "output_format": run.checked.format.name(),
            "size": format!("{}x{}", first.width, first.height),
        });
        // The openai types' levels only ("auto", "standard" and "hd" are not reported).
        if let Some(quality) = run
            .quality
            .filter(|q| ["low", "medium", "high"].contains(&q.as_str()))
        {
            response["quality"] = json!(quality);
        }
        Ok(response)
    }

    /// The events of `request`: `image_generation.partial_image` per partial image, then
    /// `image_generation.completed` per image. Dropping the stream stops the predictor.
    pub fn stream(&self, request: &ImageGenerateRequest) -> Result<ImageEvents> {
        let run = self.start(request)?;
        Ok(ImageEvents {
            run,
            previous: None,
            pending: VecDeque::new(),
            partials_sent: 0,
            done: false,
        })
    }

    fn start(&self, request: &ImageGenerateRequest) -> Result<Run> {
        let checked = request.check()?;
        let predictor = self.registry.get(&request.model)?;
        let model = shown(&request.model).to_string();
        let params = image_params(predictor.signature()).ok_or_else(|| {
            invalid(
                "model",
                format!(
                    "The model `{model}` cannot generate images: its predictor has no input \
                     annotated ImageWidth, ImageHeight or ImageCount"
                ),
            )
        })?;
        let mut inputs =
            Inputs::from([(params.prompt.clone(), Value::from(checked.prompt.as_str()))]);
        let mut fields = vec![(params.prompt.clone(), "prompt")];
        let mut give =
            |name: &Option<String>, value: Option<u32>, field: &'static str| -> Result<()> {
                match (name, value) {
                    (Some(name), Some(v)) => {
                        inputs.insert(name.clone(), Value::Int(i64::from(v)));
                        fields.push((name.clone(), field));
                        Ok(())
                    }
                    (None, Some(_)) if field == "n" && checked.n == 1 => Ok(()),
                    (None, Some(_)) => Err(invalid(
                        field,
                        format!("The model `{model}` does not take `{field}`"),
                    )),
                    (_, None) => Ok(()),
                }
            };
        give(&params.width, checked.size.map(|s| s.0), "size")?;
        give(&params.height, checked.size.map(|s| s.1), "size")?;
        give(&params.count, request.n.map(|_| checked.n), "n")?;
        let to_request = |e| super::common::in_openai_terms(e, &fields);
        let inputs = predictor.signature().validate(inputs).map_err(to_request)?;
        let outputs = crate::predict::start(&predictor, inputs, &self.cancel, Logs::default())
            .map_err(to_request)?;
        Ok(Run {
            outputs,
            model,
            checked,
            background: request.background.clone(),
            quality: request.quality.clone(),
        })
    }
}

fn nothing(model: &str) -> Error {
    Error::new(
        ErrorKind::Model,
        format!("The predictor of `{model}` gave no image"),
    )
}

fn last_images(last: Option<Vec<Value>>, model: &str) -> Result<Value> {
    last.and_then(|mut outputs| (!outputs.is_empty()).then(|| outputs.swap_remove(0)))
        .ok_or_else(|| nothing(model))
}

/// The background reported: the one asked for, else what the image has.
fn background_of(asked: &Option<String>, image: &encode::Pixels) -> &'static str {
    match asked.as_deref() {
        Some("transparent") => "transparent",
        Some("opaque") => "opaque",
        _ if image.has_alpha() => "transparent",
        _ => "opaque",
    }
}

/// The events of a streamed generation (see [`Images::stream`]).
pub struct ImageEvents {
    run: Run,
    /// The latest yield, sent as a partial image once the next one shows it was not the last.
    previous: Option<Value>,
    pending: VecDeque<Json>,
    partials_sent: u32,
    done: bool,
}

impl ImageEvents {
    fn event(&self, kind: &str, image: &encode::Pixels, b64: String) -> Json {
        json!({
            "type": kind,
            "b64_json": b64,
            "background": background_of(&self.run.background, image),
            "created_at": unix_now(),
            "output_format": self.run.checked.format.name(),
            "quality": self
                .run
                .quality
                .as_deref()
                .filter(|q| ["low", "medium", "high"].contains(q))
                .unwrap_or("auto"),
            "size": format!("{}x{}", image.width, image.height),
        })
    }

    fn encoded(&self, image: &encode::Pixels) -> Result<String> {
        let bytes = encode::encode(image, self.run.checked.format, self.run.checked.quality)?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// A yield that was not the last: its first image as a partial one, if more are asked for.
    fn partial(&mut self, value: &Value) -> Result<()> {
        if self.partials_sent >= self.run.checked.partial_images {
            return Ok(());
        }
        let pixels = encode::images_of(value, "images")?;
        let Some(image) = pixels.first() else {
            return Ok(());
        };
        let mut event = self.event(
            "image_generation.partial_image",
            image,
            self.encoded(image)?,
        );
        event["partial_image_index"] = json!(self.partials_sent);
        self.partials_sent += 1;
        self.pending.push_back(event);
        Ok(())
    }

    fn completed(&mut self, value: &Value) -> Result<()> {
        let pixels = encode::images_of(value, "images")?;
        if pixels.is_empty() {
            return Err(nothing(&self.run.model));
        }
        for image in &pixels {
            let mut event = self.event("image_generation.completed", image, self.encoded(image)?);
            // Predictors count no tokens: the usage the openai types require, all zero.
            event["usage"] = json!({
                "input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                "input_tokens_details": {"image_tokens": 0, "text_tokens": 0},
            });
            self.pending.push_back(event);
        }
        Ok(())
    }

    fn step(&mut self) -> Result<()> {
        match self.run.outputs.next() {
            Some(outputs) => {
                let value = last_images(Some(outputs?), &self.run.model)?;
                if let Some(previous) = self.previous.replace(value) {
                    self.partial(&previous)?;
                }
            }
            None => {
                self.done = true;
                let last = self
                    .previous
                    .take()
                    .ok_or_else(|| nothing(&self.run.model))?;
                self.completed(&last)?;
            }
        }
        Ok(())
    }
}

impl Iterator for ImageEvents {
    type Item = Result<Json>;

    fn next(&mut self) -> Option<Result<Json>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            if let Err(error) = self.step() {
                self.done = true;
                return Some(Err(error));
            }
        }
    }
}
