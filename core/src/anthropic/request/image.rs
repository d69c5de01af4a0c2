//! An Anthropic `image` block as a chat `image_url` part.

use super::invalid;
use crate::error::{shown, Result};
use serde_json::{json, Value as Json};

/// The key a chat part made from an Anthropic block carries its place in (`messages[0].content[1]`)
/// under, until [`MessagesRequest::to_chat`] moves it to the part's `at`: errors about the image
/// name the block.
pub(super) const AT_KEY: &str = "x-ingle-at";

/// An `image` block as chat's `image_url` part: a `base64` source as a `data:` URL, a `url` one
/// as the URL (fetched only where the config allows).
pub(super) fn image_part(block: &Json, at: &str) -> Result<Json> {
    let source = block
        .get("source")
        .and_then(Json::as_object)
        .ok_or_else(|| {
            invalid(
                format!("{at}.source"),
                format!(
                    "`{at}` needs a `source`: `{{\"type\": \"base64\", \"media_type\", \"data\"}}`"
                ),
            )
        })?;
    let string = |key: &str| -> Result<&str> {
        source.get(key).and_then(Json::as_str).ok_or_else(|| {
            invalid(
                format!("{at}.source.{key}"),
                format!("`{at}.source.{key}` must be a string"),
            )
        })
    };
    let url = match source.get("type").and_then(Json::as_str) {
        Some("base64") => format!("data:{};base64,{}", string("media_type")?, string("data")?),
        Some("url") => string("url")?.to_string(),
        Some(kind) => {
            return Err(invalid(
                format!("{at}.source.type"),
                format!(
                "`{at}.source.type` '{}' is not supported: ingle keeps no files; send the image \
                     as a `base64` source",
                shown(kind)
            ),
            ))
        }
        None => {
            return Err(invalid(
                format!("{at}.source.type"),
                format!("`{at}.source` needs a `type` (`base64` or `url`)"),
            ))
        }
    };
    Ok(json!({"type": "image_url", "image_url": {"url": url}, AT_KEY: at}))
}
