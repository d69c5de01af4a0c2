//! A chat message's list of content parts: text, and in user messages images (`image_url`) and
//! audio (`input_audio`), checked and collected undecoded (`crate::media`), with a placeholder
//! where each was.

use super::types::ContentPart;
use crate::error::{shown, Error, Result};
use crate::media::{ChatMedia, MediaKind, MediaPart, MediaSource};
use crate::value::Value;

/// A message's list of parts: the text joined into a string when it is all text; else the
/// parts, text and placeholders, with each image and audio part added to `media`.
pub(super) fn parts_content(
    i: usize,
    role: &str,
    parts: &[ContentPart],
    media: &mut ChatMedia,
) -> Result<Value> {
    if parts.is_empty() {
        return Err(Error::invalid(
            format!("messages[{i}].content"),
            format!("`messages[{i}].content` is an empty list; give a string or at least one content part"),
        ));
    }
    let mut text = String::new();
    let mut out: Vec<Value> = Vec::new();
    let mut has_media = false;
    for (j, part) in parts.iter().enumerate() {
        let at = part
            .at
            .clone()
            .unwrap_or_else(|| format!("messages[{i}].content[{j}]"));
        let field = |key: &str| part.other.get(key).filter(|v| !v.is_null());
        // A part's own fields: anything else is refused by name.
        let own: &[&str] = match part.kind.as_str() {
            "text" => &[],
            "image_url" => &["image_url"],
            "input_audio" => &["input_audio"],
            _ => &[],
        };
        if matches!(part.kind.as_str(), "text" | "image_url" | "input_audio") {
            if let Some((key, _)) = part
                .other
                .iter()
                .find(|(k, v)| !v.is_null() && !own.contains(&k.as_str()))
            {
                let key = shown(key);
                return Err(Error::invalid(
                    format!("{at}.{key}"),
                    format!("Unrecognized field `{at}.{key}`"),
                ));
            }
        }
        // OpenAI takes media in user messages only.
        let only_user = || -> Result<()> {
            if role != "user" {
                return Err(Error::invalid(
                    at.clone(),
                    format!(
                        "`{at}`: {} parts are only for user messages, not {role} ones",
                        part.kind
                    ),
                ));
            }
            Ok(())
        };
        match part.kind.as_str() {
            "text" => match &part.text {
                Some(t) => {
                    text.push_str(t);
                    out.push(Value::Dict(crate::value::Dict::from([
                        ("type".to_string(), Value::from("text")),
                        ("text".to_string(), Value::from(t.as_str())),
                    ])));
                }
                None => {
                    return Err(Error::invalid(
                        format!("{at}.text"),
                        format!("`{at}` is a text part without `text`"),
                    ))
                }
            },
            "image_url" => {
                only_user()?;
                let (url, detail) = match field("image_url") {
                    Some(serde_json::Value::String(url)) => (url.clone(), None),
                    Some(serde_json::Value::Object(image)) => {
                        if let Some(key) = image.keys().find(|k| !["url", "detail"].contains(&k.as_str())) {
                            let key = shown(key);
                            return Err(Error::invalid(
                                format!("{at}.image_url.{key}"),
                                format!("Unrecognized field `{at}.image_url.{key}`"),
                            ));
                        }
                        let url = match image.get("url") {
                            Some(serde_json::Value::String(url)) => url.clone(),
                            _ => {
                                return Err(Error::invalid(
                                    format!("{at}.image_url.url"),
                                    format!("Missing `{at}.image_url.url`: a `data:` URL or an http(s) URL"),
                                ))
                            }
                        };
                        let detail = match image.get("detail") {
                            None | Some(serde_json::Value::Null) => None,
                            Some(serde_json::Value::String(d)) if ["auto", "low", "high"].contains(&d.as_str()) => Some(d.clone()),
                            Some(other) => {
                                return Err(Error::invalid(
                                    format!("{at}.image_url.detail"),
                                    format!(
                                        "Invalid value for `{at}.image_url.detail`: {}; it must be 'auto', 'low' or 'high'",
                                        shown(&other.to_string())
                                    ),
                                ))
                            }
                        };
                        (url, detail)
                    }
                    _ => {
                        return Err(Error::invalid(
                            format!("{at}.image_url"),
                            format!("Missing `{at}.image_url`: `{{\"url\": \"data:image/png;base64,...\"}}`"),
                        ))
                    }
                };
                let source = crate::media::url_source(&url, MediaKind::Image, &at)?;
                media.push(MediaPart { at: at.clone(), kind: MediaKind::Image, source, format: None })?;
                let mut placeholder = crate::value::Dict::from([("type".to_string(), Value::from("image"))]);
                if let Some(detail) = detail {
                    placeholder.insert("detail".into(), Value::from(detail));
                }
                out.push(Value::Dict(placeholder));
                has_media = true;
            }
            "input_audio" => {
                only_user()?;
                let Some(serde_json::Value::Object(audio)) = field("input_audio") else {
                    return Err(Error::invalid(
                        format!("{at}.input_audio"),
                        format!("Missing `{at}.input_audio`: `{{\"data\": <base64>, \"format\": \"wav\"}}`"),
                    ));
                };
                if let Some(key) = audio.keys().find(|k| !["data", "format"].contains(&k.as_str())) {
                    let key = shown(key);
                    return Err(Error::invalid(
                        format!("{at}.input_audio.{key}"),
                        format!("Unrecognized field `{at}.input_audio.{key}`"),
                    ));
                }
                let format = match audio.get("format") {
                    Some(serde_json::Value::String(f)) if AUDIO_PART_FORMATS.contains(&f.as_str()) => f.clone(),
                    Some(other) if !other.is_null() => {
                        return Err(Error::invalid(
                            format!("{at}.input_audio.format"),
                            format!(
                                "Invalid value for `{at}.input_audio.format`: {}; it must be one of {}",
                                shown(&other.to_string()),
                                AUDIO_PART_FORMATS.join(", ")
                            ),
                        ))
                    }
                    _ => {
                        return Err(Error::invalid(
                            format!("{at}.input_audio.format"),
                            format!("Missing `{at}.input_audio.format` (`wav`, `mp3`, ...)"),
                        ))
                    }
                };
                let Some(serde_json::Value::String(data)) = audio.get("data") else {
                    return Err(Error::invalid(
                        format!("{at}.input_audio.data"),
                        format!("Missing `{at}.input_audio.data`: the audio file in base64"),
                    ));
                };
                let bytes = crate::media::base64_bytes(data, crate::media::MAX_AUDIO_BYTES, &at, "audio")?;
                let source = MediaSource::Bytes { media_type: None, bytes };
                media.push(MediaPart { at: at.clone(), kind: MediaKind::Audio, source, format: Some(format) })?;
                out.push(Value::Dict(crate::value::Dict::from([("type".to_string(), Value::from("audio"))])));
                has_media = true;
            }
            kind => {
                return Err(Error::invalid(
                    format!("{at}.type"),
                    format!(
                        "Content parts of type `{}` are not supported; ingle takes `text`, `image_url` and `input_audio` parts ({at})",
                        shown(kind)
                    ),
                ))
            }
        }
    }
    Ok(if has_media {
        Value::List(out)
    } else {
        Value::String(text)
    })
}

/// The containers an `input_audio` part may name (what ingle's decoder reads).
const AUDIO_PART_FORMATS: [&str; 11] = [
    "wav", "mp3", "flac", "ogg", "oga", "opus", "webm", "m4a", "mp4", "mpeg", "mpga",
];
