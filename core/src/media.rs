//! The images and audio a chat message carries (content parts): read from data URLs (or from
//! http(s) URLs where the config allows it), checked against limits *before* anything is
//! decoded, and decoded once in core for the predictor: images as `(H, W, C)` uint8 tensors,
//! audio as mono samples at the rate the predictor declares (docs/images.md, "Images in").
//!
//! Every surface (chat's `image_url` and `input_audio`, Responses' `input_image` and
//! `input_audio`, Anthropic's `image` blocks) becomes one [`MediaPart`], whose `at` names the
//! part in the caller's own terms (`messages[1].content[0]`, `input[0].content[2]`), so that
//! every error about it says which part of the request is at fault.

use crate::error::{shown, Error, Result};
use crate::predict::Cancel;
use crate::value::{Audio, Dtype, Tensor, Value};
use std::io::{Cursor, Read};
use std::time::Duration;

/// The most bytes one image may have (OpenAI's limit per image).
pub const MAX_IMAGE_BYTES: usize = 20 << 20;
/// The most pixels one image may have, 2^25 (an 8K frame, 7680 × 4320, fits), checked from the
/// header before a pixel is decoded.
pub const MAX_IMAGE_PIXELS: u64 = 1 << 25;
/// The longest side of an image.
pub const MAX_IMAGE_SIDE: u32 = 16_384;
/// The most images one request may carry.
pub const MAX_IMAGES: usize = 64;
/// The most pixels of all of a request's images together (512 MiB as RGBA).
pub const MAX_REQUEST_PIXELS: u64 = 1 << 27;
/// The most bytes one audio part may have (OpenAI's upload limit).
pub const MAX_AUDIO_BYTES: usize = 25 << 20;
/// The most audio one request may carry, all parts together.
pub const MAX_AUDIO_SECONDS: u64 = 20 * 60;
/// The most media parts of any kind one request may carry.
pub const MAX_PARTS: usize = 128;

/// The image formats ingle decodes, for error messages.
pub const IMAGE_FORMATS: &str = "PNG, JPEG, WebP and GIF";

pub use crate::config::MediaConfig;

/// What a part holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Image,
    Audio,
}

impl MediaKind {
    fn noun(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Audio => "audio",
        }
    }
}

/// Where a part's bytes are.
#[derive(Debug, Clone, PartialEq)]
pub enum MediaSource {
    /// Decoded from base64 already; `media_type` as the caller declared it (a data URL's, an
    /// Anthropic source's), `format` an audio part's (`wav`, `mp3`...).
    Bytes {
        media_type: Option<String>,
        bytes: Vec<u8>,
    },
    /// An http(s) URL, fetched only where [`MediaConfig::allow_urls`] says so.
    Url(String),
}

/// One image or audio part of a request, not decoded yet.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaPart {
    /// The part in the caller's terms: `messages[1].content[0]`.
    pub at: String,
    pub kind: MediaKind,
    pub source: MediaSource,
    /// An audio part's declared format (`wav`, `mp3`, ...), a hint for probing.
    pub format: Option<String>,
}

/// The media of a request's messages, in order of appearance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatMedia {
    pub parts: Vec<MediaPart>,
}

fn invalid(at: &str, message: impl Into<String>) -> Error {
    Error::invalid(at, message).with_code(crate::error::ErrorCode::InvalidMedia)
}

/// The bytes of base64 `data`, refused past `max` bytes before it is decoded.
pub fn base64_bytes(data: &str, max: usize, at: &str, what: &str) -> Result<Vec<u8>> {
    use base64::Engine as _;
    // What the base64 decodes to, at most, counted before decoding (line breaks aside).
    let significant = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    if significant / 4 * 3 > max + 3 {
        return Err(too_big(at, what, significant / 4 * 3, max));
    }
    // Standard base64; line breaks and a missing padding are forgiven, as browsers do.
    let cleaned: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(cleaned.as_bytes()).map_err(|e| {
        invalid(
            at,
            format!("`{at}` holds {what} that is not valid base64 ({e})"),
        )
    })?;
    if bytes.len() > max {
        return Err(too_big(at, what, bytes.len(), max));
    }
    Ok(bytes)
}

fn too_big(at: &str, what: &str, bytes: usize, max: usize) -> Error {
    invalid(
        at,
        format!(
            "`{at}`: the {what} is {:.1} MB, over the {} MB ingle takes",
            bytes as f64 / 1e6,
            max >> 20
        ),
    )
}

/// A `data:` URL's media type and bytes (base64 only), or the URL itself for http(s).
pub fn url_source(url: &str, kind: MediaKind, at: &str) -> Result<MediaSource> {
    let max = match kind {
        MediaKind::Image => MAX_IMAGE_BYTES,
        MediaKind::Audio => MAX_AUDIO_BYTES,
    };
    let trimmed = url.trim();
    if let Some(rest) = strip_prefix_ignore_case(trimmed, "data:") {
        let (header, data) = rest.split_once(',').ok_or_else(|| {
            invalid(
                at,
                format!("`{at}` is a data URL without a comma before its data"),
            )
        })?;
        let mut pieces = header.split(';');
        let media_type = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        if !pieces.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
            return Err(invalid(
                at,
                format!(
                    "`{at}` is a data URL that is not base64 (`data:{};base64,...` is what \
                     ingle reads)",
                    shown(&media_type)
                ),
            ));
        }
        let bytes = base64_bytes(data, max, at, kind.noun())?;
        return Ok(MediaSource::Bytes {
            media_type: (!media_type.is_empty()).then_some(media_type),
            bytes,
        });
    }
    let lower = trimmed.get(..8).unwrap_or(trimmed).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(MediaSource::Url(trimmed.to_string()));
    }
    Err(invalid(
        at,
        format!(
            "`{at}` must be a `data:` URL (`data:image/png;base64,...`) or an http(s) URL, not {}",
            shown(&trimmed.chars().take(40).collect::<String>())
        ),
    ))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

impl ChatMedia {
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Adds a part, refusing one past [`MAX_PARTS`] or (images) [`MAX_IMAGES`].
    pub fn push(&mut self, part: MediaPart) -> Result<()> {
        if self.parts.len() >= MAX_PARTS {
            return Err(invalid(
                &part.at,
                format!(
                    "`{}`: a request carries at most {MAX_PARTS} images and audio parts",
                    part.at
                ),
            ));
        }
        if part.kind == MediaKind::Image && self.count(MediaKind::Image) >= MAX_IMAGES {
            return Err(invalid(
                &part.at,
                format!(
                    "`{}`: a request carries at most {MAX_IMAGES} images",
                    part.at
                ),
            ));
        }
        self.parts.push(part);
        Ok(())
    }

    pub fn count(&self, kind: MediaKind) -> usize {
        self.parts.iter().filter(|p| p.kind == kind).count()
    }

    /// The first part of `kind`.
    pub fn first(&self, kind: MediaKind) -> Option<&MediaPart> {
        self.parts.iter().find(|p| p.kind == kind)
    }

    /// Every image, decoded: a list of `(H, W, C)` uint8 tensors. `copies`: how many copies of
    /// them the request will hold (one per choice), which share [`MAX_REQUEST_PIXELS`].
    pub fn decode_images(
        &self,
        config: &MediaConfig,
        cancel: &Cancel,
        copies: usize,
    ) -> Result<Value> {
        // Counted as if each image were `copies` times larger: the budget bounds what is held.
        let copies = copies.max(1) as u64;
        let mut pixels = 0u64;
        let mut images = Vec::new();
        for part in self.parts.iter().filter(|p| p.kind == MediaKind::Image) {
            cancel.check()?;
            let bytes = part.bytes(config)?;
            let image =
                decode_image_copies(&bytes.0, bytes.1.as_deref(), &part.at, &mut pixels, copies)?;
            images.push(Value::Tensor(image));
        }
        Ok(Value::List(images))
    }

    /// Every audio part, decoded to mono at `sample_rate`; `copies` as for images (the parts
    /// share [`MAX_AUDIO_SECONDS`], each counted once per copy).
    pub fn decode_audios(
        &self,
        sample_rate: u32,
        config: &MediaConfig,
        cancel: &Cancel,
        copies: usize,
    ) -> Result<Value> {
        let mut seconds_left = MAX_AUDIO_SECONDS / copies.max(1) as u64;
        let mut audios = Vec::new();
        for part in self.parts.iter().filter(|p| p.kind == MediaKind::Audio) {
            let too_long = || {
                invalid(
                    &part.at,
                    format!(
                        "`{}`: the request's audio parts are longer than {} minutes together \
                         (each counted once per choice, `n`), the most ingle takes in one \
                         request",
                        part.at,
                        MAX_AUDIO_SECONDS / 60
                    ),
                )
            };
            if seconds_left == 0 {
                return Err(too_long());
            }
            let (bytes, _) = part.bytes(config)?;
            let hint = part.format.as_deref().map(|f| format!("audio.{f}"));
            let decoded = crate::audio::decode::decode_to_mono_limited(
                &bytes,
                hint.as_deref(),
                sample_rate,
                seconds_left,
                cancel,
            )
            .map_err(|e| {
                if e.message.contains(" is longer than ") {
                    too_long()
                } else {
                    in_part(e, &part.at, hint.as_deref())
                }
            })?;
            seconds_left = seconds_left.saturating_sub(decoded.duration.ceil() as u64);
            audios.push(Value::Audio(Audio {
                samples: decoded.samples,
                sample_rate,
                channels: 1,
            }));
        }
        Ok(Value::List(audios))
    }
}

/// An error about a decoded file (`file`, named `hint`: a name made from the part's format, which
/// the caller never wrote) as one about the part.
fn in_part(mut error: Error, at: &str, hint: Option<&str>) -> Error {
    if error.param.as_deref() == Some("file") {
        let named = hint.map_or(String::new(), |name| format!(" '{}'", shown(name)));
        error.message = format!(
            "`{at}`: {}",
            error
                .message
                .replacen(&format!("The audio file{named}"), "the audio", 1)
        );
        error = error
            .with_param(at)
            .with_code(crate::error::ErrorCode::InvalidMedia);
    }
    error
}

impl MediaPart {
    /// The part's bytes and declared media type: given, or fetched where the config allows.
    fn bytes(&self, config: &MediaConfig) -> Result<(std::borrow::Cow<'_, [u8]>, Option<String>)> {
        match &self.source {
            MediaSource::Bytes { media_type, bytes } => {
                Ok((std::borrow::Cow::Borrowed(bytes), media_type.clone()))
            }
            MediaSource::Url(url) => {
                if !config.urls_allowed() {
                    return Err(invalid(
                        &self.at,
                        format!(
                            "`{}` is an http(s) URL, and fetching URLs is off: send the {} \
                             inline as a base64 `data:` URL, or allow fetching with \
                             `allow_urls = true` under `[media]` in the config (or \
                             INGLE_ALLOW_MEDIA_URLS=1)",
                            self.at,
                            self.kind.noun()
                        ),
                    ));
                }
                let max = match self.kind {
                    MediaKind::Image => MAX_IMAGE_BYTES,
                    MediaKind::Audio => MAX_AUDIO_BYTES,
                };
                fetch(url, max, config.fetch_timeout_seconds, &self.at, self.kind)
                    .map(|(bytes, media_type)| (std::borrow::Cow::Owned(bytes), media_type))
            }
        }
    }
}

/// GETs `url`, at most `max` bytes within `seconds`.
fn fetch(
    url: &str,
    max: usize,
    seconds: u64,
    at: &str,
    kind: MediaKind,
) -> Result<(Vec<u8>, Option<String>)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(seconds.max(1))))
        .http_status_as_error(false)
        .max_redirects(3)
        .build()
        .into();
    let failed = |problem: String| {
        invalid(
            at,
            format!(
                "`{at}`: the {} at {} could not be fetched: {problem}",
                kind.noun(),
                shown(url)
            ),
        )
    };
    let mut response = agent.get(url).call().map_err(|e| failed(e.to_string()))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(failed(format!("HTTP {status}")));
    }
    let media_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|v| !v.is_empty() && v != "application/octet-stream");
    let mut bytes = Vec::new();
    response
        .body_mut()
        .as_reader()
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(e.to_string()))?;
    if bytes.len() > max {
        return Err(too_big(at, kind.noun(), bytes.len(), max));
    }
    Ok((bytes, media_type))
}

/// The format `bytes` are in, by their magic; SVG and other text named for what it is.
fn sniff(bytes: &[u8]) -> std::result::Result<image::ImageFormat, &'static str> {
    use image::ImageFormat as F;
    match image::guess_format(bytes) {
        Ok(format @ (F::Png | F::Jpeg | F::WebP | F::Gif)) => Ok(format),
        Ok(F::Avif) => Err("AVIF"),
        Ok(F::Tiff) => Err("TIFF"),
        Ok(F::Bmp) => Err("BMP"),
        Ok(F::Ico) => Err("ICO"),
        Ok(_) => Err("an image format ingle does not decode"),
        Err(_) => {
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
            if head.contains("<svg") || head.trim_start().starts_with("<?xml") {
                Err("SVG (a vector drawing; rasterise it first)")
            } else {
                Err("not an image ingle recognises")
            }
        }
    }
}

fn format_name(format: image::ImageFormat) -> &'static str {
    match format {
        image::ImageFormat::Png => "PNG",
        image::ImageFormat::Jpeg => "JPEG",
        image::ImageFormat::WebP => "WebP",
        image::ImageFormat::Gif => "GIF",
        _ => "another format",
    }
}

/// The image format a declared media type names, if an image one.
fn declared_format(media_type: &str) -> Option<image::ImageFormat> {
    match media_type {
        "image/png" | "image/apng" => Some(image::ImageFormat::Png),
        "image/jpeg" | "image/jpg" | "image/pjpeg" => Some(image::ImageFormat::Jpeg),
        "image/webp" => Some(image::ImageFormat::WebP),
        "image/gif" => Some(image::ImageFormat::Gif),
        _ => None,
    }
}

/// Decodes one image to `(H, W, C)` uint8 (C = 3, or 4 with alpha), EXIF orientation applied;
/// its size is checked from the header first, and `request_pixels` (the request's images so
/// far) against [`MAX_REQUEST_PIXELS`].
pub fn decode_image(
    bytes: &[u8],
    media_type: Option<&str>,
    at: &str,
    request_pixels: &mut u64,
) -> Result<Tensor> {
    decode_image_copies(bytes, media_type, at, request_pixels, 1)
}

/// [`decode_image`] for a request that holds `copies` of each image (one per choice): each
/// counts `copies` times against [`MAX_REQUEST_PIXELS`].
fn decode_image_copies(
    bytes: &[u8],
    media_type: Option<&str>,
    at: &str,
    request_pixels: &mut u64,
    copies: u64,
) -> Result<Tensor> {
    use image::ImageDecoder as _;
    if bytes.is_empty() {
        return Err(invalid(at, format!("`{at}`: the image is empty")));
    }
    let format = sniff(bytes).map_err(|what| {
        invalid(
            at,
            format!("`{at}`: the image is {what}; ingle reads {IMAGE_FORMATS}"),
        )
    })?;
    if let Some(media_type) = media_type {
        match declared_format(media_type) {
            Some(declared) if declared == format => {}
            Some(declared) => {
                return Err(invalid(
                    at,
                    format!(
                        "`{at}` says it is {} ({}) but its data is {}: fix the media type",
                        format_name(declared),
                        shown(media_type),
                        format_name(format)
                    ),
                ))
            }
            None if media_type.starts_with("image/") => {
                return Err(invalid(
                    at,
                    format!(
                    "`{at}` is of type {}, which ingle does not decode; it reads {IMAGE_FORMATS}",
                    shown(media_type)
                ),
                ))
            }
            None => {
                return Err(invalid(
                    at,
                    format!(
                        "`{at}` is of type {}, not an image type (image/png, image/jpeg, \
                         image/webp, image/gif)",
                        shown(media_type)
                    ),
                ))
            }
        }
    }
    let corrupt = |e: image::ImageError| {
        invalid(
            at,
            format!(
                "`{at}`: the {} image is truncated or corrupt ({})",
                format_name(format),
                shown(&e.to_string())
            ),
        )
    };
    let decode = || -> Result<Tensor> {
        let mut reader = image::ImageReader::with_format(Cursor::new(bytes), format);
        // The size is checked below from the header (to say what it is); the allocation limit
        // stands behind it: room for the pixels at 16 bits per channel, and the decoder's own.
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(MAX_IMAGE_PIXELS * 8 + (64 << 20));
        reader.limits(limits);
        let mut decoder = reader
            .into_decoder()
            .map_err(|e| too_large_or(e, at, corrupt))?;
        let (width, height) = decoder.dimensions();
        let pixels = u64::from(width) * u64::from(height);
        if width == 0 || height == 0 {
            return Err(invalid(
                at,
                format!("`{at}`: the image has no pixels ({width} × {height})"),
            ));
        }
        if pixels > MAX_IMAGE_PIXELS || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
            return Err(too_many_pixels(at, width, height));
        }
        if *request_pixels + pixels * copies > MAX_REQUEST_PIXELS {
            return Err(invalid(
                at,
                format!(
                    "`{at}`: the request's images hold more than {} Mpx together (each counted \
                     once per choice, `n`), the most ingle decodes for one request",
                    MAX_REQUEST_PIXELS >> 20
                ),
            ));
        }
        *request_pixels += pixels * copies;
        let orientation = decoder.orientation().ok();
        let mut image =
            image::DynamicImage::from_decoder(decoder).map_err(|e| too_large_or(e, at, corrupt))?;
        if let Some(orientation) = orientation {
            image.apply_orientation(orientation);
        }
        let (width, height) = (image.width() as usize, image.height() as usize);
        let (channels, data) = if image.color().has_alpha() {
            (4, image.into_rgba8().into_raw())
        } else {
            (3, image.into_rgb8().into_raw())
        };
        Tensor::new(Dtype::U8, vec![height, width, channels], data)
    };
    // A decoder's panic on a hostile file is a bad file, not a crash.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|_| {
        Err(invalid(
            at,
            format!("`{at}`: the {} image is malformed", format_name(format)),
        ))
    })
}

fn too_many_pixels(at: &str, width: u32, height: u32) -> Error {
    invalid(
        at,
        format!(
            "`{at}`: the image is {width} × {height} pixels; ingle decodes images of at most \
             {} Mpx and {MAX_IMAGE_SIDE} pixels a side (scale it down first)",
            MAX_IMAGE_PIXELS >> 20
        ),
    )
}

fn too_large_or(
    e: image::ImageError,
    at: &str,
    otherwise: impl Fn(image::ImageError) -> Error,
) -> Error {
    match e {
        image::ImageError::Limits(_) => invalid(
            at,
            format!(
                "`{at}`: the image is larger than ingle decodes ({} Mpx and {MAX_IMAGE_SIDE} \
                 pixels a side at most; scale it down first)",
                MAX_IMAGE_PIXELS >> 20
            ),
        ),
        e => otherwise(e),
    }
}

#[cfg(test)]
mod tests;
