//! Reads CTranslate2's `model.bin` (format version 6): the weights of a Whisper model as
//! CTranslate2 converts them, so ingle runs the files faster-whisper users already have.
//!
//! Layout (little-endian): u32 version, string spec name, u32 revision, u32 count, then per
//! variable: string name, u8 rank, u32 dims[rank], u8 dtype, u32 byte count, raw bytes; then
//! u32 alias count and (alias, target) string pairs. A string is a u16 length (counting a
//! trailing NUL) and its bytes.

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

/// One variable: its shape and its values widened to f32 (scalars of integer type included).
#[derive(Debug, Clone)]
pub struct Variable {
    pub dims: Vec<usize>,
    /// Shared with its aliases: an alias copied its target, and a file of many aliases to one
    /// large variable took memory quadratic in its size.
    pub values: std::sync::Arc<Vec<f32>>,
}

/// The variables of a CTranslate2 model, by name (aliases resolved).
#[derive(Debug)]
pub struct Ct2Model {
    pub spec: String,
    pub revision: u32,
    pub variables: HashMap<String, Variable>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let n = self.u16()? as usize;
        let bytes = self.take(n)?;
        let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// IEEE half to single precision (subnormals, infinities and NaN included).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exponent = ((h >> 10) & 0x1f) as u32;
    let mantissa = (h & 0x3ff) as u32;
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise the mantissa.
            let mut e = 127 - 15 + 1;
            let mut m = m;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// What ingle reads, for errors about a file that is something else.
pub const WHAT_INGLE_READS: &str = "ingle reads Whisper models in CTranslate2's format \
     (faster-whisper's layout: model.bin, config.json and tokenizer.json)";

/// The spec name at the head of a CTranslate2 `model.bin` (`WhisperSpec`), read without
/// loading the weights; `None` for a file that is not CTranslate2's format 6.
pub fn spec_name(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = [0u8; 262];
    let file = std::fs::File::open(path).ok()?;
    let read = file.take(head.len() as u64).read(&mut head).ok()?;
    let mut r = Reader {
        bytes: &head[..read],
        at: 0,
    };
    (r.u32()? == 6).then_some(())?;
    r.string()
}

/// Checks that `path`, if it exists, is a CTranslate2 Whisper model: a config that names
/// another file fails when the client is made, not on its first request.
pub fn check_whisper_file(path: &Path) -> Result<()> {
    if !path.is_file() {
        return Ok(()); // not pulled yet: the first request says so
    }
    match spec_name(path) {
        Some(spec) if spec.starts_with("WhisperSpec") => Ok(()),
        found => {
            let what = found.map_or_else(
                || "not a CTranslate2 model.bin".to_string(),
                |spec| format!("a CTranslate2 `{spec}` model, not Whisper"),
            );
            Err(Error::invalid(
                "model",
                format!("{} is {what}: {WHAT_INGLE_READS}", path.display()),
            )
            .with_code(ErrorCode::ModelFileInvalid))
        }
    }
}

impl Ct2Model {
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::model(format!("Cannot read {}: {e}", path.display())))?;
        Self::parse(&bytes).ok_or_else(|| {
            Error::model(format!(
                "{} is not a CTranslate2 model.bin of format version 6 (truncated or corrupt): {}",
                path.display(),
                WHAT_INGLE_READS
            ))
            .with_code(ErrorCode::ModelFileInvalid)
        })
    }

    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.u32()?;
        if version != 6 {
            return None;
        }
        let spec = r.string()?;
        let revision = r.u32()?;
        let count = r.u32()? as usize;
        // Room for what the file can hold (a variable takes at least 13 bytes), not for the
        // 4 billion its count may claim.
        let mut variables = HashMap::with_capacity(count.min(bytes.len() / 13));
        for _ in 0..count {
            let name = r.string()?;
            let rank = r.u8()? as usize;
            let mut dims = Vec::with_capacity(rank);
            for _ in 0..rank {
                dims.push(r.u32()? as usize);
            }
            let dtype = r.u8()?;
            let size = r.u32()? as usize;
            let raw = r.take(size)?;
            let elements = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
            let width = match dtype {
                0 | 3 => 4,
                1 => 1,
                2 | 4 | 5 => 2,
                _ => return None,
            };
            if elements.checked_mul(width)? != size {
                return None;
            }
            let values: Vec<f32> = match dtype {
                0 => raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                1 => raw.iter().map(|&b| b as i8 as f32).collect(),
                2 => raw
                    .chunks_exact(2)
                    .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32)
                    .collect(),
                3 => raw
                    .chunks_exact(4)
                    .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32)
                    .collect(),
                4 => raw
                    .chunks_exact(2)
                    .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                    .collect(),
                _ => raw
                    .chunks_exact(2)
                    .map(|b| bf16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                    .collect(),
            };
            variables.insert(
                name,
                Variable {
                    dims,
                    values: std::sync::Arc::new(values),
                },
            );
        }
        // Aliases are optional at the end of older files.
        if let Some(aliases) = r.u32() {
            for _ in 0..aliases {
                let alias = r.string()?;
                let target = r.string()?;
                let variable = variables.get(&target)?.clone();
                variables.insert(alias, variable);
            }
        }
        Some(Ct2Model {
            spec,
            revision,
            variables,
        })
    }

    /// The variable `name`, with an error naming it when the file lacks it or its shape is not
    /// `dims` (`None` in `dims` accepts any size on that axis).
    pub fn get(&self, name: &str, dims: &[Option<usize>]) -> Result<&Variable> {
        let variable = self.variables.get(name).ok_or_else(|| {
            Error::model(format!(
                "The Whisper model.bin has no variable `{name}` (spec {} revision {})",
                self.spec, self.revision
            ))
            .with_code(ErrorCode::ModelFileInvalid)
        })?;
        let fits = variable.dims.len() == dims.len()
            && variable
                .dims
                .iter()
                .zip(dims)
                .all(|(have, want)| want.is_none_or(|w| w == *have));
        if !fits {
            return Err(Error::model(format!(
                "The Whisper model.bin variable `{name}` has shape {:?}, expected {:?}",
                variable.dims, dims
            ))
            .with_code(ErrorCode::ModelFileInvalid));
        }
        Ok(variable)
    }

    /// A scalar variable (e.g. `encoder/num_heads`).
    pub fn scalar(&self, name: &str) -> Result<f32> {
        let variable = self.get(name, &[])?;
        Ok(variable.values[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, text: &str) {
        out.extend((text.len() as u16 + 1).to_le_bytes());
        out.extend(text.as_bytes());
        out.push(0);
    }

    #[test]
    fn aliases_share_their_variable_and_counts_are_not_trusted() {
        // One 1 MB variable and 20,000 aliases of it: each alias copied it (20 GB).
        let mut file = 6u32.to_le_bytes().to_vec();
        string(&mut file, "whisper");
        file.extend(1u32.to_le_bytes());
        file.extend(1u32.to_le_bytes());
        string(&mut file, "big");
        file.push(1);
        file.extend(262_144u32.to_le_bytes());
        file.push(0);
        file.extend((262_144u32 * 4).to_le_bytes());
        file.extend(vec![0u8; 262_144 * 4]);
        file.extend(20_000u32.to_le_bytes());
        for i in 0..20_000 {
            string(&mut file, &format!("a{i}"));
            string(&mut file, "big");
        }
        let model = Ct2Model::parse(&file).unwrap();
        assert_eq!(model.variables.len(), 20_001);
        let alias = &model.variables["a19999"].values;
        assert!(std::sync::Arc::ptr_eq(
            alias,
            &model.variables["big"].values
        ));
        // A count of 4 billion variables in a 20-byte file, and dims whose product overflows.
        let mut lying = 6u32.to_le_bytes().to_vec();
        string(&mut lying, "w");
        lying.extend(1u32.to_le_bytes());
        lying.extend(u32::MAX.to_le_bytes());
        assert!(Ct2Model::parse(&lying).is_none());
        let mut overflow = 6u32.to_le_bytes().to_vec();
        string(&mut overflow, "w");
        overflow.extend(1u32.to_le_bytes());
        overflow.extend(1u32.to_le_bytes());
        string(&mut overflow, "v");
        overflow.push(3);
        for _ in 0..3 {
            overflow.extend(u32::MAX.to_le_bytes());
        }
        overflow.push(0);
        overflow.extend(0u32.to_le_bytes());
        assert!(Ct2Model::parse(&overflow).is_none());
    }

    #[test]
    fn half_precision_values_widen_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn truncated_files_are_rejected() {
        let mut bytes = 6u32.to_le_bytes().to_vec();
        bytes.extend(6u16.to_le_bytes());
        bytes.extend(b"Spec\0\0");
        assert!(Ct2Model::parse(&bytes).is_none());
        assert!(Ct2Model::parse(&[]).is_none());
        assert!(Ct2Model::parse(&5u32.to_le_bytes()).is_none());
    }
}
