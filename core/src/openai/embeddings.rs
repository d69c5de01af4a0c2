//! `embeddings.create`: texts in, vectors out, on any predictor whose signature has an output
//! annotated [`Annotation::Embedding`] and takes the texts (and, for `dimensions`, an input
//! annotated [`Annotation::EmbeddingDims`]).
//!
//! The texts are found by their place, as the documents predictors are written from describe
//! them: the one required input that is a list of strings. An input annotated
//! [`Annotation::Embedding`] names them outright (and wins over the place). [`texts_input`] is
//! that rule, shared by the mapping and by the registration [`rules`].

use super::common::in_openai_terms;
use super::OtherFields;
use crate::error::{shown, Error, Result};
use crate::predict::{Annotation, Cancel, Inputs, Parameter, Signature};
use crate::registry::Registry;
use crate::value::ValueType;
use crate::value::{Dtype, Value};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `input`: one string, a list of strings, or (not supported here) token ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EmbeddingInput {
    One(String),
    Many(Vec<String>),
    /// Anything else as given (token-id arrays, wrong types): rejected with a message naming
    /// what is wrong, rather than a deserializer's.
    Other(serde_json::Value),
}

impl Default for EmbeddingInput {
    fn default() -> Self {
        EmbeddingInput::Other(serde_json::Value::Null)
    }
}

impl From<&str> for EmbeddingInput {
    fn from(text: &str) -> Self {
        EmbeddingInput::One(text.to_string())
    }
}

impl From<String> for EmbeddingInput {
    fn from(text: String) -> Self {
        EmbeddingInput::One(text)
    }
}

impl<S: Into<String>> From<Vec<S>> for EmbeddingInput {
    fn from(texts: Vec<S>) -> Self {
        EmbeddingInput::Many(texts.into_iter().map(Into::into).collect())
    }
}

/// `embeddings.create` arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingRequest {
    pub model: String,
    #[serde(default)]
    pub input: EmbeddingInput,
    /// Length of the returned vectors (Matryoshka truncation); default: the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<i64>,
    /// `"float"` (default) or `"base64"` (little-endian float32 bytes, as OpenAI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding_format: Option<String>,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

impl EmbeddingRequest {
    pub fn new(model: impl Into<String>, input: impl Into<EmbeddingInput>) -> Self {
        EmbeddingRequest {
            model: model.into(),
            input: input.into(),
            ..Default::default()
        }
    }

    /// Parses the JSON body of a request; an error names the field at fault.
    pub fn from_json(json: &str) -> Result<Self> {
        super::types::from_json(json)
    }

    /// The requested `encoding_format` (an error names it when it is neither `float` nor
    /// `base64`).
    pub fn format(&self) -> Result<EncodingFormat> {
        EncodingFormat::of(self)
    }
}

/// How vectors are written in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodingFormat {
    Float,
    Base64,
}

impl EncodingFormat {
    fn of(request: &EmbeddingRequest) -> Result<Self> {
        match request.encoding_format.as_deref() {
            None | Some("float") => Ok(EncodingFormat::Float),
            Some("base64") => Ok(EncodingFormat::Base64),
            Some(other) => Err(Error::invalid(
                "encoding_format",
                format!(
                    "Invalid value for `encoding_format`: '{}'; supported values are \
                     'float' and 'base64'",
                    shown(other)
                ),
            )),
        }
    }
}

/// One vector: numbers, or base64 of its little-endian float32 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EmbeddingVector {
    Float(Vec<f32>),
    Base64(String),
}

/// `object: "embedding"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    pub object: String,
    pub index: u32,
    pub embedding: EmbeddingVector,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingUsage {
    pub prompt_tokens: u32,
    pub total_tokens: u32,
}

/// `object: "list"` of embeddings: what `embeddings.create` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateEmbeddingResponse {
    pub object: String,
    pub data: Vec<Embedding>,
    pub model: String,
    pub usage: EmbeddingUsage,
}

/// The embeddings as one row-major float32 matrix, `rows × dims` (row `i` embeds input `i`):
/// what [`Embeddings::create_matrix`] returns for callers that want the numbers, not JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingMatrix {
    pub model: String,
    pub rows: usize,
    pub dims: usize,
    pub data: Vec<f32>,
    /// Tokens the model read.
    pub prompt_tokens: u32,
}

impl EmbeddingMatrix {
    /// Row `i`: the embedding of input `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dims..(i + 1) * self.dims]
    }

    /// The OpenAI response, with vectors as numbers or base64.
    pub fn into_response(self, format: EncodingFormat) -> CreateEmbeddingResponse {
        let data = (0..self.rows)
            .map(|i| {
                let row = self.row(i);
                let embedding = match format {
                    EncodingFormat::Float => EmbeddingVector::Float(row.to_vec()),
                    EncodingFormat::Base64 => {
                        let bytes: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
                        EmbeddingVector::Base64(
                            base64::engine::general_purpose::STANDARD.encode(bytes),
                        )
                    }
                };
                Embedding {
                    object: "embedding".into(),
                    index: i as u32,
                    embedding,
                }
            })
            .collect();
        CreateEmbeddingResponse {
            object: "list".into(),
            data,
            model: self.model,
            usage: EmbeddingUsage {
                prompt_tokens: self.prompt_tokens,
                total_tokens: self.prompt_tokens,
            },
        }
    }
}

/// `client.embeddings`.
#[derive(Clone)]
pub struct Embeddings {
    registry: Arc<Registry>,
    /// What stops its calls ([`crate::Client::with_cancel`]).
    pub(crate) cancel: Cancel,
}

impl Embeddings {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Embeddings {
            registry,
            cancel: Cancel::default(),
        }
    }

    /// The OpenAI response: `{object: "list", data: [{object: "embedding", index, embedding}],
    /// model, usage}`.
    pub fn create(&self, request: &EmbeddingRequest) -> Result<CreateEmbeddingResponse> {
        let format = EncodingFormat::of(request)?;
        Ok(self.create_matrix(request)?.into_response(format))
    }

    /// The same request, answered with the raw `[N, D]` float32 matrix instead of JSON-shaped
    /// vectors (`encoding_format` is checked but has nothing to choose).
    pub fn create_matrix(&self, request: &EmbeddingRequest) -> Result<EmbeddingMatrix> {
        if let Some((field, _)) = request.other.iter().find(|(_, v)| !v.is_null()) {
            return Err(Error::invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            ));
        }
        EncodingFormat::of(request)?;
        let model = request.model.as_str();
        if model.is_empty() {
            return Err(Error::invalid(
                "model",
                "Missing required parameter: `model`",
            ));
        }
        let (texts, single) = texts_of(&request.input)?;
        let predictor = self.registry.get(model)?;
        let model = shown(model);
        let signature = predictor.signature();
        let cannot = |what: &str| {
            Error::invalid(
                "model",
                format!("The model `{model}` cannot serve embeddings: its predictor has no {what}"),
            )
        };
        let input = texts_input(signature).ok_or_else(|| {
            cannot("input annotated Embedding nor one required list of strings (the texts)")
        })?;
        let output = signature
            .output_annotated(&Annotation::Embedding)
            .ok_or_else(|| cannot("output annotated Embedding"))?;
        // Predictor parameter → OpenAI field, so errors speak the caller's terms. A single
        // string's only text is `input` itself.
        let mut fields = Vec::new();
        if single {
            fields.push((format!("{}[0]", input.name), "input"));
        }
        fields.push((input.name.clone(), "input"));
        let mut inputs = Inputs::from([(input.name.clone(), Value::List(texts))]);
        if let Some(dimensions) = request.dimensions {
            let param = signature
                .inputs
                .iter()
                .find(|p| matches!(p.annotation, Annotation::EmbeddingDims { .. }))
                .ok_or_else(|| {
                    Error::invalid(
                        "dimensions",
                        format!("The model `{model}` does not support `dimensions`"),
                    )
                })?;
            if let Annotation::EmbeddingDims { min, max } = param.annotation {
                if dimensions < min as i64 || dimensions > max as i64 {
                    return Err(Error::invalid(
                        "dimensions",
                        format!(
                            "Invalid value for `dimensions`: {dimensions}; the model `{model}` \
                             gives between {min} and {max} dimensions"
                        ),
                    ));
                }
            }
            fields.push((param.name.clone(), "dimensions"));
            inputs.insert(param.name.clone(), Value::Int(dimensions));
        }
        let to_openai = |e| in_openai_terms(e, &fields);
        let inputs = signature.validate(inputs).map_err(to_openai)?;
        let mut outputs =
            crate::predict::start(&predictor, inputs, &self.cancel, Default::default())
                .map_err(to_openai)?;
        let results = outputs
            .next()
            .ok_or_else(|| Error::model("the embedding predictor produced no output"))?
            .map_err(to_openai)?;
        let (rows, dims, data) = match results.get(output) {
            Some(Value::Tensor(t)) if t.dtype == Dtype::F32 && t.shape.len() == 2 => {
                let data = t
                    .data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                (t.shape[0], t.shape[1], data)
            }
            other => {
                return Err(Error::internal(format!(
                    "the embedding output of `{model}` is not a float32 [N, D] tensor: {other:?}"
                )))
            }
        };
        let prompt_tokens = signature
            .output_annotated(&Annotation::Usage)
            .and_then(|i| results.get(i))
            .and_then(Value::as_dict)
            .and_then(|u| u.get("prompt_tokens"))
            .and_then(Value::as_i64)
            .unwrap_or(0) as u32;
        Ok(EmbeddingMatrix {
            model: request.model.clone(),
            rows,
            dims,
            data,
            prompt_tokens,
        })
    }
}

/// The texts of `input`, and whether it was a single string. Token ids and other types are
/// invalid-request errors naming the parameter; emptiness and count limits are the
/// predictor's to check.
fn texts_of(input: &EmbeddingInput) -> Result<(Vec<Value>, bool)> {
    use serde_json::Value as J;
    let texts = |v: &[String]| v.iter().map(|s| Value::from(s.as_str())).collect();
    match input {
        EmbeddingInput::One(text) => Ok((vec![Value::from(text.as_str())], true)),
        EmbeddingInput::Many(list) => Ok((texts(list), false)),
        EmbeddingInput::Other(J::Null) => Err(Error::invalid(
            "input",
            "Missing required parameter: `input`",
        )),
        EmbeddingInput::Other(J::Array(items)) => {
            let token_ids = |v: &J| v.is_i64() || v.is_u64();
            if items.iter().all(token_ids)
                || items
                    .iter()
                    .all(|i| i.as_array().is_some_and(|a| a.iter().all(token_ids)))
            {
                return Err(Error::invalid(
                    "input",
                    "Token-id input (a list of integers, or of integer lists) is not \
                     supported by ingle; give `input` as a string or a list of strings. \
                     (LangChain's OpenAIEmbeddings sends tiktoken ids, which are not the local \
                     model's tokens, unless created with `check_embedding_ctx_length=False`.)",
                ));
            }
            let (i, item) = items
                .iter()
                .enumerate()
                .find(|(_, item)| !item.is_string())
                .expect("a list of strings deserializes as Many");
            Err(Error::invalid(
                format!("input[{i}]"),
                format!(
                    "Invalid type for `input[{i}]`: expected a string, got {}",
                    Value::from(item.clone()).type_name()
                ),
            ))
        }
        EmbeddingInput::Other(other) => Err(Error::invalid(
            "input",
            format!(
                "Invalid type for `input`: expected a string or an array of strings, got {}",
                Value::from(other.clone()).type_name()
            ),
        )),
    }
}

/// Whether `p` may hold the texts by its place: a required input with no annotation whose type
/// is a list of strings (or a list whose items are not declared).
fn texts_by_place(p: &Parameter) -> bool {
    p.annotation == Annotation::Generic
        && p.required
        && p.value_type == ValueType::List
        && p.item_type.is_none_or(|t| t == ValueType::String)
}

/// The input an embeddings request puts its texts in: the input annotated `Embedding`, else the
/// one required list of strings without annotation. `None` when there is none, or more than one
/// such list (the [`rules`] say which, by name, at registration).
pub(crate) fn texts_input(signature: &Signature) -> Option<&Parameter> {
    if let Some(annotated) = signature.input_annotated(&Annotation::Embedding) {
        return Some(annotated);
    }
    let mut lists = signature.inputs.iter().filter(|p| texts_by_place(p));
    match (lists.next(), lists.next()) {
        (Some(texts), None) => Some(texts),
        _ => None,
    }
}

/// Embeddings (claimed by an output or input annotated `Embedding`, or an `EmbeddingDims`
/// input): the texts ([`texts_input`]: an input annotated `Embedding`, else the one required
/// list of strings) are required and a list of strings; an `EmbeddingDims` input has a
/// default; the output annotated `Embedding` is the matrix; nothing else is required.
pub(super) fn rules(tag: &str, signature: &Signature) -> Result<()> {
    use super::rules::{nothing_else_required, output, problem};
    let dims = signature
        .inputs
        .iter()
        .find(|p| matches!(p.annotation, Annotation::EmbeddingDims { .. }));
    let claimed = signature.input_annotated(&Annotation::Embedding).is_some()
        || signature.output_annotated(&Annotation::Embedding).is_some()
        || dims.is_some();
    if !claimed {
        return Ok(());
    }
    let method = "embeddings";
    let texts = match texts_input(signature) {
        Some(texts) => texts,
        None => {
            let lists: Vec<&Parameter> = signature
                .inputs
                .iter()
                .filter(|p| texts_by_place(p))
                .collect();
            if let [first, second, ..] = lists.as_slice() {
                return Err(problem(
                    tag,
                    &second.name,
                    format!(
                        "serves embeddings, which gives one list of texts, but `{}` and `{}` \
                         are both required lists of strings: annotate the texts Embedding and \
                         give the other a default",
                        first.name, second.name
                    ),
                ));
            }
            // A list where the texts would be, but of something else, or optional.
            let lists = || {
                signature.inputs.iter().filter(|p| {
                    p.annotation == Annotation::Generic && p.value_type == ValueType::List
                })
            };
            if let Some(list) = lists().find(|p| p.required) {
                return Err(problem(
                    tag,
                    &list.name,
                    format!(
                        "serves embeddings, so its texts `{}` must be a list of strings",
                        list.name
                    ),
                ));
            }
            if let Some(list) = lists().find(|p| p.item_type.is_none_or(|t| t == ValueType::String))
            {
                return Err(problem(
                    tag,
                    &list.name,
                    format!(
                        "serves embeddings, so its texts `{}` must be required (no default)",
                        list.name
                    ),
                ));
            }
            return Err(problem(
                tag,
                "inputs",
                "serves embeddings, so it needs the texts to embed: one required input that is \
                 a list of strings (or an input annotated Embedding)"
                    .into(),
            ));
        }
    };
    if !texts.required {
        return Err(problem(
            tag,
            &texts.name,
            format!(
                "serves embeddings, so its texts `{}` must be required (no default)",
                texts.name
            ),
        ));
    }
    if texts.item_type.is_some_and(|t| t != ValueType::String) {
        return Err(problem(
            tag,
            &texts.name,
            format!("embeds `{}`, which must be a list of strings", texts.name),
        ));
    }
    if let Some(dims) = dims {
        if dims.default.is_none() {
            return Err(problem(
                tag,
                &dims.name,
                format!(
                    "declares `{}` (EmbeddingDims) without a default: callers may leave \
                     `dimensions` out",
                    dims.name
                ),
            ));
        }
    }
    output(tag, signature, &Annotation::Embedding, method)?;
    nothing_else_required(tag, signature, method, &[Some(texts)])
}

#[cfg(test)]
mod tests {
    use super::{rules, texts_input};
    use crate::predict::{Annotation, Parameter, Signature};
    use crate::value::ValueType as T;

    fn texts() -> Parameter {
        Parameter::new("texts", T::List).items(T::String)
    }
    fn dims() -> Parameter {
        Parameter::new("dimensions", T::Int)
            .annotated(Annotation::EmbeddingDims { min: 256, max: 768 })
            .default_value(768)
    }
    fn matrix() -> Parameter {
        Parameter::new("output", T::Tensor).annotated(Annotation::Embedding)
    }
    fn problem(inputs: Vec<Parameter>, outputs: Vec<Parameter>) -> (String, String) {
        let error = rules("@t/e", &Signature::new(inputs, outputs)).unwrap_err();
        (error.param.unwrap_or_default(), error.message)
    }

    /// Seed 000's predictor: texts `list[str]` annotated Generic, `EmbeddingDims` with a
    /// default, the output annotated `Embedding`. The texts are found by their place.
    #[test]
    fn the_seeds_embedding_predictor_is_found_by_its_place() {
        let signature = Signature::new(vec![texts(), dims()], vec![matrix()]);
        rules("@t/e", &signature).unwrap();
        assert_eq!(texts_input(&signature).unwrap().name, "texts");
        // Undeclared items are a list of strings too; so is the texts' place after the dims.
        let any_list = Signature::new(
            vec![dims(), Parameter::new("texts", T::List)],
            vec![matrix()],
        );
        rules("@t/e", &any_list).unwrap();
        assert_eq!(texts_input(&any_list).unwrap().name, "texts");
        // An input annotated Embedding still names the texts, and wins over the place.
        let annotated = Signature::new(
            vec![
                Parameter::new("other", T::List)
                    .items(T::String)
                    .default_value(crate::value::Value::List(vec![])),
                texts().annotated(Annotation::Embedding),
            ],
            vec![matrix()],
        );
        rules("@t/e", &annotated).unwrap();
        assert_eq!(texts_input(&annotated).unwrap().name, "texts");
    }

    #[test]
    fn texts_that_cannot_be_found_are_named() {
        // No list at all.
        let (param, message) = problem(vec![dims()], vec![matrix()]);
        assert_eq!(param, "inputs");
        assert!(message.contains("`@t/e`"), "{message}");
        assert!(
            message.contains("required input that is a list of strings"),
            "{message}"
        );
        // Two lists: which are the texts?
        let (param, message) = problem(
            vec![texts(), Parameter::new("more", T::List).items(T::String)],
            vec![matrix()],
        );
        assert_eq!(param, "more");
        assert!(message.contains("`texts` and `more`"), "{message}");
        // A list of numbers where the texts would be.
        let (param, message) = problem(
            vec![Parameter::new("ids", T::List).items(T::Int)],
            vec![matrix()],
        );
        assert_eq!(param, "ids");
        assert!(message.contains("list of strings"), "{message}");
        // Texts with a default: callers always give them.
        let (param, message) = problem(
            vec![texts().default_value(crate::value::Value::List(vec![]))],
            vec![matrix()],
        );
        assert_eq!(param, "texts");
        assert!(message.contains("must be required"), "{message}");
        // The dims need their default; the matrix is needed.
        let (param, message) = problem(
            vec![
                texts(),
                Parameter::new("dimensions", T::Int)
                    .annotated(Annotation::EmbeddingDims { min: 1, max: 8 }),
            ],
            vec![matrix()],
        );
        assert_eq!(param, "dimensions");
        assert!(message.contains("without a default"), "{message}");
        let (param, message) = problem(vec![texts(), dims()], vec![]);
        assert_eq!(param, "outputs");
        assert!(message.contains("output annotated Embedding"), "{message}");
        // Another required input embeddings cannot give.
        let (param, _) = problem(
            vec![texts(), Parameter::new("mode", T::String)],
            vec![matrix()],
        );
        assert_eq!(param, "mode");
    }

    /// A predictor that claims no embeddings is left alone, lists and all.
    #[test]
    fn lists_alone_claim_nothing() {
        let signature = Signature::new(vec![texts()], vec![Parameter::new("output", T::Tensor)]);
        rules("@t/e", &signature).unwrap();
    }
}
