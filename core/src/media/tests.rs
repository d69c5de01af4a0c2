use super::*;
use base64::Engine as _;

fn png(width: u32, height: u32, color: image::ColorType) -> Vec<u8> {
    let channels = color.bytes_per_pixel() as usize;
    let pixels: Vec<u8> = (0..width as usize * height as usize * channels)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let mut out = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut out),
        &pixels,
        width,
        height,
        color.into(),
    )
    .unwrap();
    out
}

fn data_url(media_type: &str, bytes: &[u8]) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!("data:{media_type};base64,{data}")
}

fn decode_url(url: &str) -> Result<Tensor> {
    let at = "messages[0].content[1]";
    let MediaSource::Bytes { media_type, bytes } = url_source(url, MediaKind::Image, at)? else {
        panic!("not bytes");
    };
    decode_image(&bytes, media_type.as_deref(), at, &mut 0)
}

#[test]
fn a_png_decodes_to_rows_of_rgb_pixels() {
    let bytes = png(4, 3, image::ColorType::Rgb8);
    let tensor = decode_url(&data_url("image/png", &bytes)).unwrap();
    assert_eq!(tensor.dtype, Dtype::U8);
    assert_eq!(tensor.shape, [3, 4, 3]);
    let expected: Vec<u8> = (0..36).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(tensor.data, expected);
}

#[test]
fn alpha_keeps_four_channels_and_grey_becomes_rgb() {
    let rgba = decode_url(&data_url("image/png", &png(2, 2, image::ColorType::Rgba8))).unwrap();
    assert_eq!(rgba.shape, [2, 2, 4]);
    let grey = decode_url(&data_url("image/png", &png(5, 1, image::ColorType::L16))).unwrap();
    assert_eq!(grey.shape, [1, 5, 3]);
}

#[test]
fn a_media_type_that_lies_is_refused_naming_the_part() {
    let error =
        decode_url(&data_url("image/jpeg", &png(2, 2, image::ColorType::Rgb8))).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("messages[0].content[1]"));
    assert!(error.message.contains("says it is JPEG"), "{error}");
    assert!(error.message.contains("its data is PNG"), "{error}");
    let error =
        decode_url(&data_url("text/plain", &png(2, 2, image::ColorType::Rgb8))).unwrap_err();
    assert!(error.message.contains("not an image type"), "{error}");
}

#[test]
fn svg_and_truncated_files_are_refused() {
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#;
    let error = decode_url(&data_url("image/svg+xml", svg)).unwrap_err();
    assert!(error.message.contains("SVG"), "{error}");
    let bytes = png(64, 64, image::ColorType::Rgb8);
    let error = decode_url(&data_url("image/png", &bytes[..bytes.len() / 2])).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("messages[0].content[1]"));
    assert!(error.message.contains("truncated or corrupt"), "{error}");
    let error = decode_url(&data_url("image/png", &bytes[..20])).unwrap_err();
    assert!(error.message.contains("truncated or corrupt"), "{error}");
}

/// A PNG whose header says `width` × `height`, with a few bytes of image data: refused from
/// the header, before any allocation for its pixels.
fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend(kind);
        out.extend(data);
        out.extend(crc.sum().to_be_bytes());
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::new();
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    header.extend([8, 2, 0, 0, 0]); // 8-bit RGB
    chunk(&mut out, b"IHDR", &header);
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut zlib, &vec![0u8; 1 << 16]).unwrap();
    chunk(&mut out, b"IDAT", &zlib.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}

#[test]
fn a_decompression_bomb_is_refused_from_its_header() {
    let bomb = png_claiming(20_000, 20_000);
    assert!(bomb.len() < 4096, "{} bytes", bomb.len());
    let error = decode_url(&data_url("image/png", &bomb)).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("messages[0].content[1]"));
    assert!(error.message.contains("20000 × 20000"), "{error}");
    // Under the side limit, over the pixel limit.
    let error = decode_url(&data_url("image/png", &png_claiming(16_000, 16_000))).unwrap_err();
    assert!(error.message.contains("16000 × 16000"), "{error}");
}

#[test]
fn the_request_shares_one_pixel_budget() {
    let bytes = png(2, 2, image::ColorType::Rgb8);
    let mut used = MAX_REQUEST_PIXELS - 3;
    let error = decode_image(&bytes, None, "input[0].content[3]", &mut used).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("input[0].content[3]"));
    assert!(error.message.contains("together"), "{error}");
}

#[test]
fn urls_are_refused_unless_allowed_and_data_urls_must_be_base64() {
    let at = "messages[2].content[0]";
    let source = url_source("https://example.com/cat.png", MediaKind::Image, at).unwrap();
    let part = MediaPart {
        at: at.into(),
        kind: MediaKind::Image,
        source,
        format: None,
    };
    let media = ChatMedia { parts: vec![part] };
    let error = media
        .decode_images(&MediaConfig::default(), &Cancel::default(), 1)
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some(at));
    assert!(error.message.contains("allow_urls = true"), "{error}");
    let error = url_source("data:image/png,%89PNG", MediaKind::Image, at).unwrap_err();
    assert!(error.message.contains("not base64"), "{error}");
    let error = url_source("file:///etc/passwd", MediaKind::Image, at).unwrap_err();
    assert!(error.message.contains("`data:` URL"), "{error}");
    let error = url_source("data:image/png;base64,@@@@", MediaKind::Image, at).unwrap_err();
    assert!(error.message.contains("not valid base64"), "{error}");
}

#[test]
fn too_many_bytes_or_parts_are_refused_before_decoding() {
    let at = "messages[0].content[0]";
    let huge = "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 400);
    let error = url_source(
        &format!("data:image/png;base64,{huge}"),
        MediaKind::Image,
        at,
    )
    .unwrap_err();
    assert!(error.message.contains("over the 20 MB"), "{error}");
    let mut media = ChatMedia::default();
    let part = |j: usize| MediaPart {
        at: format!("messages[0].content[{j}]"),
        kind: MediaKind::Image,
        source: MediaSource::Bytes {
            media_type: None,
            bytes: Vec::new(),
        },
        format: None,
    };
    for j in 0..MAX_IMAGES {
        media.push(part(j)).unwrap();
    }
    let error = media.push(part(MAX_IMAGES)).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("messages[0].content[64]"));
    assert!(error.message.contains("at most 64 images"), "{error}");
}
