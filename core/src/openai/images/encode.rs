//! A predictor's images (`(H, W, C)` uint8 tensors, C = 1, 3 or 4) encoded as PNG, JPEG or WebP
//! by the `image` crate. Every shape, dtype and size is checked first: a predictor that gives
//! something else is an error naming its output.

use crate::error::{Error, Result};
use crate::value::{Dtype, Tensor, Value};
use image::{ExtendedColorType, ImageEncoder};

/// The most pixels one image may have (4096 × 4096): more is refused before any encoding.
pub const MAX_IMAGE_PIXELS: usize = 4096 * 4096;

/// An output format of `images.generate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Png,
    Jpeg,
    /// Lossless WebP (the `image` crate's encoder).
    Webp,
}

impl OutputFormat {
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Png => "png",
            OutputFormat::Jpeg => "jpeg",
            OutputFormat::Webp => "webp",
        }
    }
}

/// One image as the predictor gave it: its pixels, row by row.
pub struct Pixels<'a> {
    pub width: u32,
    pub height: u32,
    /// 1 (grey), 3 (RGB) or 4 (RGBA).
    pub channels: usize,
    pub data: &'a [u8],
}

impl Pixels<'_> {
    pub fn has_alpha(&self) -> bool {
        self.channels == 4
    }
}

/// The images of a predictor's output: one `(H, W, C)` or `(H, W)` tensor, an `(N, H, W, C)`
/// tensor of N, or a list of tensors. `what` names the output in errors.
pub fn images_of<'a>(value: &'a Value, what: &str) -> Result<Vec<Pixels<'a>>> {
    match value {
        Value::Tensor(tensor) if tensor.shape.len() == 4 => {
            let each = tensor.shape[1..].iter().product::<usize>();
            let mut images = Vec::with_capacity(tensor.shape[0]);
            for i in 0..tensor.shape[0] {
                let shape = &tensor.shape[1..];
                images.push(pixels(tensor, shape, i * each, &format!("{what}[{i}]"))?);
            }
            Ok(images)
        }
        Value::Tensor(tensor) => Ok(vec![pixels(tensor, &tensor.shape, 0, what)?]),
        Value::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Tensor(tensor) if tensor.shape.len() != 4 => {
                    pixels(tensor, &tensor.shape, 0, &format!("{what}[{i}]"))
                }
                other => Err(broken(
                    &format!("{what}[{i}]"),
                    format!("a {}", describe(other)),
                )),
            })
            .collect(),
        other => Err(broken(what, format!("a {}", describe(other)))),
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Tensor(t) => format!("tensor of shape {:?}", t.shape),
        other => other.type_name().to_string(),
    }
}

fn broken(what: &str, gave: String) -> Error {
    Error::internal(format!(
        "The predictor's output `{what}` is {gave}; an image is an (H, W, C) uint8 array with \
         C = 1, 3 or 4 (or a list of them)"
    ))
}

fn pixels<'a>(
    tensor: &'a Tensor,
    shape: &[usize],
    offset: usize,
    what: &str,
) -> Result<Pixels<'a>> {
    if tensor.dtype != Dtype::U8 {
        return Err(broken(what, format!("a {} array", tensor.dtype.name())));
    }
    let (height, width, channels) = match *shape {
        [h, w] => (h, w, 1),
        [h, w, c] if [1, 3, 4].contains(&c) => (h, w, c),
        _ => return Err(broken(what, format!("of shape {shape:?}"))),
    };
    if height == 0 || width == 0 {
        return Err(broken(what, format!("empty (shape {shape:?})")));
    }
    if height.saturating_mul(width) > MAX_IMAGE_PIXELS {
        return Err(Error::internal(format!(
            "The predictor's output `{what}` is {width} × {height} pixels; ingle encodes images of \
             at most {MAX_IMAGE_PIXELS} pixels (4096 × 4096)"
        )));
    }
    let len = height * width * channels;
    Ok(Pixels {
        width: width as u32,
        height: height as u32,
        channels,
        data: &tensor.data[offset..offset + len],
    })
}

/// `image` encoded in `format`; `quality` (1–100) for JPEG. JPEG has no alpha: an RGBA image
/// loses it (over black, as the encoders of other servers do).
pub fn encode(image: &Pixels, format: OutputFormat, quality: u8) -> Result<Vec<u8>> {
    let color = match image.channels {
        1 => ExtendedColorType::L8,
        3 => ExtendedColorType::Rgb8,
        _ => ExtendedColorType::Rgba8,
    };
    let mut out = Vec::new();
    let failed = |e: image::ImageError| Error::internal(format!("Encoding the image failed: {e}"));
    match format {
        OutputFormat::Png => image::codecs::png::PngEncoder::new(&mut out)
            .write_image(image.data, image.width, image.height, color)
            .map_err(failed)?,
        OutputFormat::Webp => image::codecs::webp::WebPEncoder::new_lossless(&mut out)
            .write_image(image.data, image.width, image.height, color)
            .map_err(failed)?,
        OutputFormat::Jpeg => {
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
            if image.has_alpha() {
                let rgb: Vec<u8> = image
                    .data
                    .chunks_exact(4)
                    .flat_map(|p| {
                        let a = u16::from(p[3]);
                        [0, 1, 2].map(|c| (u16::from(p[c]) * a / 255) as u8)
                    })
                    .collect();
                encoder
                    .write_image(&rgb, image.width, image.height, ExtendedColorType::Rgb8)
                    .map_err(failed)?
            } else {
                encoder
                    .write_image(image.data, image.width, image.height, color)
                    .map_err(failed)?
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: Vec<usize>, dtype: Dtype) -> Value {
        let len = shape.iter().product::<usize>() * dtype.size();
        Value::Tensor(Tensor::new(dtype, shape, vec![7; len]).unwrap())
    }

    #[test]
    fn shapes_are_images_or_errors_naming_the_output() {
        assert_eq!(
            images_of(&tensor(vec![2, 3, 3], Dtype::U8), "image")
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            images_of(&tensor(vec![2, 3], Dtype::U8), "image").unwrap()[0].channels,
            1
        );
        assert_eq!(
            images_of(&tensor(vec![5, 2, 3, 4], Dtype::U8), "image")
                .unwrap()
                .len(),
            5
        );
        let list = Value::List(vec![
            tensor(vec![2, 2, 3], Dtype::U8),
            tensor(vec![4, 4, 1], Dtype::U8),
        ]);
        assert_eq!(images_of(&list, "image").unwrap()[1].width, 4);
        for (value, says) in [
            (
                tensor(vec![2, 3, 3], Dtype::F32),
                "`image` is a float32 array",
            ),
            (
                tensor(vec![2, 3, 2], Dtype::U8),
                "`image` is of shape [2, 3, 2]",
            ),
            (tensor(vec![0, 3, 3], Dtype::U8), "`image` is empty"),
            (Value::from("x"), "`image` is a string"),
            (Value::List(vec![Value::Int(1)]), "`image[0]` is a integer"),
        ] {
            let message = images_of(&value, "image").err().unwrap().message;
            assert!(message.contains(says), "{message}");
        }
    }

    #[test]
    fn an_image_over_the_pixel_limit_is_refused_before_encoding() {
        // No bytes are read past the shape: a 50,000 × 50,000 array's shape alone is refused.
        let huge = Tensor {
            dtype: Dtype::U8,
            shape: vec![50_000, 50_000, 3],
            data: Vec::new(),
        };
        let message = images_of(&Value::Tensor(huge), "image")
            .err()
            .unwrap()
            .message;
        assert!(message.contains("50000 × 50000"), "{message}");
    }

    #[test]
    fn each_format_decodes_back_to_the_pixels() {
        let data: Vec<u8> = (0..4 * 3 * 3).map(|i| (i * 7) as u8).collect();
        let image = Pixels {
            width: 4,
            height: 3,
            channels: 3,
            data: &data,
        };
        for format in [OutputFormat::Png, OutputFormat::Webp] {
            let bytes = encode(&image, format, 100).unwrap();
            let decoded = image::load_from_memory(&bytes).unwrap().to_rgb8();
            assert_eq!(decoded.as_raw(), &data, "{format:?}");
        }
        let jpeg = encode(&image, OutputFormat::Jpeg, 90).unwrap();
        assert_eq!(&jpeg[..2], &[0xFF, 0xD8]);
        let rgba: Vec<u8> = [10, 20, 30, 255].repeat(4);
        let alpha = Pixels {
            width: 2,
            height: 2,
            channels: 4,
            data: &rgba,
        };
        let png = encode(&alpha, OutputFormat::Png, 100).unwrap();
        assert_eq!(
            image::load_from_memory(&png).unwrap().to_rgba8().as_raw(),
            &rgba
        );
        assert!(encode(&alpha, OutputFormat::Jpeg, 75).is_ok());
    }
}
