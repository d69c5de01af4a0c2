//! Audio uploads: the `multipart/form-data` bodies of `/v1/audio/transcriptions` and
//! `/v1/audio/translations`, parsed into the core's request and audio.

use crate::body::{content_type, invalid, mime_of, read_body, shown_content_type, Refusal};
use crate::AppState;
use axum::extract::Request;
use ingle::openai::{TranscriptionAudio, TranscriptionRequest};
use ingle::Error;
use ingle::ErrorCode;
use std::convert::Infallible;
use std::future::Future;

/// An audio upload: the request's fields and its `file`.
pub(crate) struct Upload {
    pub(crate) request: TranscriptionRequest,
    pub(crate) audio: TranscriptionAudio,
}

/// Parses `body` as a `multipart/form-data` upload with `boundary`: the request, or the
/// OpenAI error object of its refusal. For the fuzz target (fuzz/); the stream of a body
/// already read is ready at once, so one poll finishes it.
#[doc(hidden)]
pub fn parse_multipart_for_fuzzing(
    boundary: &str,
    body: &[u8],
) -> Result<(TranscriptionRequest, TranscriptionAudio), Error> {
    let future = parse_multipart(
        boundary.to_string(),
        axum::body::Bytes::copy_from_slice(body),
    );
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(Ok(upload)) => Ok((upload.request, upload.audio)),
        std::task::Poll::Ready(Err(refusal)) => Err(refusal.into_error()),
        std::task::Poll::Pending => Err(Error::internal("a ready body's parse was pending")),
    }
}

/// The fields that hold one value each.
pub(crate) const UPLOAD_FIELDS: [&str; 6] = [
    "model",
    "language",
    "prompt",
    "response_format",
    "temperature",
    "stream",
];

/// Reads an audio upload as OpenAI's API takes it (and its SDKs send it): a
/// `multipart/form-data` body with a `file` part (the audio, with its filename) and one part
/// per field. Numbers and booleans arrive as text; array fields as `name[]` parts, repeated
/// (`timestamp_granularities` without brackets too). Any other field goes into the request's
/// `other`, for the core to refuse by name. The body may be up to the upload limit.
pub(crate) async fn parse_upload(state: &AppState, request: Request) -> Result<Upload, Refusal> {
    let (parts, body) = request.into_parts();
    let content_type = content_type(&parts.headers);
    if !mime_of(content_type).eq_ignore_ascii_case("multipart/form-data") {
        return Err(invalid(
            ErrorCode::InvalidContentType,
            format!(
                "Audio uploads are multipart/form-data: a `file` part with the audio and one \
                 part per field (`model`, ...), as the OpenAI SDKs send them; the request's \
                 Content-Type is {}",
                shown_content_type(content_type)
            ),
        ));
    }
    let boundary = multer::parse_boundary(content_type).map_err(|e| {
        invalid(
            ErrorCode::InvalidContentType,
            format!("The request's multipart/form-data Content-Type has no usable boundary: {e}"),
        )
    })?;
    let body = read_body(state, &parts.headers, body, state.upload_limit).await?;
    parse_multipart(boundary, body).await
}

/// The fields and file of a whole `multipart/form-data` body (see [`parse_upload`]).
pub(crate) async fn parse_multipart(
    boundary: String,
    body: axum::body::Bytes,
) -> Result<Upload, Refusal> {
    let malformed = |e: multer::Error| {
        invalid(
            ErrorCode::InvalidBody,
            format!("The multipart/form-data body is malformed: {e}"),
        )
    };
    let mut form = multer::Multipart::new(
        futures_util::stream::once(async move { Ok::<_, Infallible>(body) }),
        boundary,
    );
    let mut request = TranscriptionRequest::default();
    let mut file: Option<TranscriptionAudio> = None;
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(field) = form.next_field().await.map_err(malformed)? {
        let full_name = field.name().unwrap_or("").to_string();
        let (name, bracketed) = match full_name.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (full_name.as_str(), false),
        };
        if name.is_empty() {
            return Err(invalid(
                ErrorCode::InvalidBody,
                "A part of the multipart/form-data body has no field name",
            ));
        }
        if name == "file" {
            let filename = field.file_name().map(str::to_string);
            let bytes = field.bytes().await.map_err(malformed)?;
            if file.is_some() {
                return Err(Error::invalid("file", "Only one `file` may be uploaded").into());
            }
            file = Some(TranscriptionAudio::file(
                bytes.to_vec(),
                filename.as_deref(),
            ));
            continue;
        }
        let bytes = field.bytes().await.map_err(malformed)?;
        let value = String::from_utf8(bytes.to_vec()).map_err(|_| {
            Error::invalid(
                name,
                format!(
                    "The `{}` field is not UTF-8 text",
                    ingle::error::shown(name)
                ),
            )
        })?;
        if name == "timestamp_granularities" {
            request
                .timestamp_granularities
                .get_or_insert_with(Vec::new)
                .push(value);
            continue;
        }
        if let Some(&field) = UPLOAD_FIELDS.iter().find(|f| **f == name) {
            if bracketed || seen.contains(&field) {
                return Err(Error::invalid(
                    field,
                    format!("`{field}` takes one value, and was given more than once"),
                )
                .into());
            }
            seen.push(field);
            set_upload_field(&mut request, field, value)?;
            continue;
        }
        // Unknown: the core names it. Repeated or bracketed fields become arrays.
        let value = serde_json::Value::String(value);
        match request.other.get_mut(name) {
            Some(serde_json::Value::Array(values)) => values.push(value),
            Some(first) => *first = serde_json::Value::Array(vec![first.take(), value]),
            None if bracketed => {
                request
                    .other
                    .insert(name.to_string(), serde_json::Value::Array(vec![value]));
            }
            None => {
                request.other.insert(name.to_string(), value);
            }
        }
    }
    if request.model.is_empty() {
        return Err(Error::invalid("model", "Missing required parameter: `model`").into());
    }
    let Some(audio) = file else {
        return Err(Error::invalid(
            "file",
            "Missing required parameter: `file` (the audio, as a multipart/form-data part named \
             `file`)",
        )
        .into());
    };
    Ok(Upload { request, audio })
}

/// Sets one of [`UPLOAD_FIELDS`] from its text.
pub(crate) fn set_upload_field(
    request: &mut TranscriptionRequest,
    field: &'static str,
    value: String,
) -> Result<(), Refusal> {
    let not_a = |what: &str| {
        Error::invalid(
            field,
            format!(
                "Invalid value for `{field}`: '{}' is not {what}",
                ingle::error::shown(&value)
            ),
        )
    };
    match field {
        "model" => request.model = value,
        "language" => request.language = Some(value),
        "prompt" => request.prompt = Some(value),
        "response_format" => request.response_format = Some(value),
        "temperature" => {
            let number = value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite())
                .ok_or_else(|| not_a("a number"))?;
            request.temperature = Some(number);
        }
        "stream" => {
            let flag = match value.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(not_a("a boolean ('true' or 'false')").into()),
            };
            request.stream = Some(flag);
        }
        _ => unreachable!("one of UPLOAD_FIELDS"),
    }
    Ok(())
}
