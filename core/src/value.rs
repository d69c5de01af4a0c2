//! `Value`: what flows in and out of predictors. JSON-like values plus tensors and audio, which
//! keep their raw buffers (they never become JSON number arrays inside the library).

use crate::error::{Error, Result};
/// A dict value: its keys keep the order they were given in (a JSON schema's properties, a
/// tool's fields), as chat templates render them in that order.
pub type Dict = indexmap::IndexMap<String, Value>;

/// Element type of a [`Tensor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F16,
    I64,
    I32,
    I8,
    U8,
    Bool,
}

impl Dtype {
    /// The name used in JSON (NumPy's).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "float32",
            Dtype::F16 => "float16",
            Dtype::I64 => "int64",
            Dtype::I32 => "int32",
            Dtype::I8 => "int8",
            Dtype::U8 => "uint8",
            Dtype::Bool => "bool",
        }
    }

    /// The dtype of a NumPy name (the inverse of [`Self::name`]).
    pub fn from_name(name: &str) -> Option<Dtype> {
        [
            Dtype::F32,
            Dtype::F16,
            Dtype::I64,
            Dtype::I32,
            Dtype::I8,
            Dtype::U8,
            Dtype::Bool,
        ]
        .into_iter()
        .find(|d| d.name() == name)
    }

    pub fn size(self) -> usize {
        match self {
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F16 => 2,
            Dtype::I64 => 8,
            Dtype::I8 | Dtype::U8 | Dtype::Bool => 1,
        }
    }
}

/// The most bytes one tensor may hold (1 GiB): far above what any output ingle serves needs (a
/// 4096 × 4096 RGBA image is 64 MiB), and below what would take a machine's memory when a
/// predictor returns, say, a 50,000 × 50,000 image (7.5 GB, which NumPy allocates lazily).
pub const MAX_TENSOR_BYTES: usize = 1 << 30;

/// The bytes a tensor of `shape` and `dtype` holds, or an error past [`MAX_TENSOR_BYTES`].
pub fn tensor_bytes(dtype: Dtype, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(dtype.size(), |bytes, &side| bytes.checked_mul(side))
        .filter(|&bytes| bytes <= MAX_TENSOR_BYTES)
        .ok_or_else(|| {
            Error::internal(format!(
                "a tensor of shape {} and dtype {dtype:?} is over the {} GiB a tensor may hold",
                crate::error::shown(&format!("{shape:?}")),
                MAX_TENSOR_BYTES >> 30
            ))
        })
}

/// A dense, contiguous, row-major tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    /// Little-endian element bytes, `shape.product() * dtype.size()` long.
    pub data: Vec<u8>,
}

impl Tensor {
    pub fn new(dtype: Dtype, shape: Vec<usize>, data: Vec<u8>) -> Result<Self> {
        let expected = tensor_bytes(dtype, &shape)?;
        if data.len() != expected {
            return Err(Error::internal(format!(
                "tensor of shape {shape:?} and dtype {dtype:?} needs {expected} bytes, got {}",
                data.len()
            )));
        }
        Ok(Tensor { dtype, shape, data })
    }

    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Result<Self> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(Dtype::F32, shape, data)
    }
}

/// The sample rates ingle takes audio at, in Hz (uploads, raw samples, predictors'
/// declarations): outside them is a corrupt header or a mistake, and a 1 Hz source would make
/// the resampler's chunks enormous.
pub const SAMPLE_RATES: std::ops::RangeInclusive<u32> = 1_000..=768_000;

/// Interleaved f32 PCM samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    pub channels: u16,
}

/// How deep lists and dicts may nest in a value that crosses from another language, as JSON
/// parsers bound it (serde_json's limit): deeper values, and values that contain themselves,
/// are refused where they enter, before a recursive walk could overflow the stack.
pub const MAX_NESTING: usize = 128;

/// A value passed to or returned by a predictor.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    List(Vec<Value>),
    Dict(Dict),
    Tensor(Tensor),
    Audio(Audio),
}

/// The type of a value, as declared by a [`crate::Parameter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    Bool,
    Int,
    /// Accepts ints too, as JSON does not tell `1` from `1.0`.
    Float,
    String,
    List,
    Dict,
    Tensor,
    Audio,
}

impl ValueType {
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Bool => "boolean",
            ValueType::Int => "integer",
            ValueType::Float => "number",
            ValueType::String => "string",
            ValueType::List => "array",
            ValueType::Dict => "object",
            ValueType::Tensor => "tensor",
            ValueType::Audio => "audio",
        }
    }
}

impl Value {
    /// A short name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "number",
            Value::String(_) => "string",
            Value::List(_) => "array",
            Value::Dict(_) => "object",
            Value::Tensor(_) => "tensor",
            Value::Audio(_) => "audio",
        }
    }

    pub fn matches(&self, ty: ValueType) -> bool {
        matches!(
            (self, ty),
            (Value::Bool(_), ValueType::Bool)
                | (Value::Int(_), ValueType::Int)
                | (Value::Int(_) | Value::Float(_), ValueType::Float)
                | (Value::String(_), ValueType::String)
                | (Value::List(_), ValueType::List)
                | (Value::Dict(_), ValueType::Dict)
                | (Value::Tensor(_), ValueType::Tensor)
                | (Value::Audio(_), ValueType::Audio)
        )
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Converts to JSON. A tensor becomes `{"dtype", "shape", "data"}` with `data` the base64 of
    /// its little-endian bytes (never an array of numbers); audio becomes
    /// `{"dtype": "float32", "sample_rate", "channels", "data"}` the same way.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        use serde_json::Value as J;
        Ok(match self {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::String(s) => J::String(s.clone()),
            Value::List(l) => J::Array(l.iter().map(Value::to_json).collect::<Result<_>>()?),
            Value::Dict(d) => J::Object(
                d.iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_json()?)))
                    .collect::<Result<_>>()?,
            ),
            Value::Tensor(t) => {
                use base64::Engine as _;
                serde_json::json!({
                    "dtype": t.dtype.name(),
                    "shape": t.shape,
                    "data": base64::engine::general_purpose::STANDARD.encode(&t.data),
                })
            }
            // Like a tensor: the raw float32 samples in base64, never a list of numbers.
            Value::Audio(a) => {
                use base64::Engine as _;
                let bytes: Vec<u8> = a.samples.iter().flat_map(|s| s.to_le_bytes()).collect();
                serde_json::json!({
                    "dtype": "float32",
                    "sample_rate": a.sample_rate,
                    "channels": a.channels,
                    "data": base64::engine::general_purpose::STANDARD.encode(bytes),
                })
            }
        })
    }
}

impl From<serde_json::Value> for Value {
    fn from(json: serde_json::Value) -> Self {
        use serde_json::Value as J;
        match json {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            J::String(s) => Value::String(s),
            J::Array(a) => Value::List(a.into_iter().map(Value::from).collect()),
            J::Object(o) => Value::Dict(o.into_iter().map(|(k, v)| (k, Value::from(v))).collect()),
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {
        $(impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::$variant(v $(as $cast)?) }
        })*
    };
}
value_from!(bool => Bool, i64 => Int, i32 => Int as i64, u32 => Int as i64, f64 => Float,
    f32 => Float as f64, String => String, Tensor => Tensor, Audio => Audio);

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_string())
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Self {
        Value::List(v.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::Dtype;

    #[test]
    fn dtype_names_round_trip() {
        for dtype in [
            Dtype::F32,
            Dtype::F16,
            Dtype::I64,
            Dtype::I32,
            Dtype::I8,
            Dtype::U8,
            Dtype::Bool,
        ] {
            assert_eq!(Dtype::from_name(dtype.name()), Some(dtype));
        }
        assert_eq!(Dtype::from_name("float64"), None);
    }
}
