//! `client.rerank`: documents ordered by their relevance to a query, in the shape of Jina's and
//! Cohere's rerank APIs (llama.cpp's server, LocalAI and vLLM serve the same), or of
//! text-embeddings-inference's `/rerank` when the request gives `texts`.
//!
//! Who scores: a predictor annotated for it (a `RerankQuery` and `RerankDocuments` in, one
//! `RerankScores` per document out: a cross-encoder, or a user's function), else any embedding
//! model, as a bi-encoder: the score is the cosine similarity of the query's embedding and the
//! document's (from -1 to 1; docs/rerank.md).

use super::embeddings::{EmbeddingInput, EmbeddingRequest, Embeddings};
use super::types::OtherFields;
use crate::error::{shown, Error, Result};
use crate::predict::{random_id, Annotation, Cancel, Inputs, Signature};
use crate::registry::Registry;
use crate::value::Value;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

/// Most documents one request may rank.
pub const MAX_RERANK_DOCUMENTS: usize = 10_000;

/// Texts per embeddings call of a bi-encoder ranking (the built-in embedder's most).
const EMBEDDING_BATCH: usize = 2048;

/// A rerank request: Jina's and Cohere's fields (`documents`, `top_n`, `return_documents`), or
/// text-embeddings-inference's (`texts`, `return_text`, `raw_scores`, `truncate`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RerankRequest {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub query: Json,
    /// Strings, or objects with a string `text` (Jina's, Cohere v1's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<Json>,
    /// How many of the best results to return; default: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_n: Option<i64>,
    /// Whether each result carries its document (`{"text"}`); default true, as Jina's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_documents: Option<bool>,
    /// Cohere v2's: accepted; a document longer than the model reads is cut at what it reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_per_doc: Option<i64>,
    /// text-embeddings-inference's documents: the answer is then its bare list of
    /// `{index, score, text?}`, and without `model` the default embedding model ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub texts: Option<Json>,
    /// TEI's: whether each result carries its text; default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_text: Option<bool>,
    /// TEI's: accepted; the scores are what the model gives (a cosine, or a cross-encoder's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_scores: Option<bool>,
    /// TEI's: accepted; a document longer than the model reads is cut at what it reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation_direction: Option<String>,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// A rerank request as [`RerankRequest::check`] finds it.
#[derive(Debug)]
pub struct CheckedRerank<'a> {
    /// The model (the default embedding model for a TEI request without one).
    pub model: &'a str,
    pub query: String,
    pub documents: Vec<String>,
    /// Whether the request is text-embeddings-inference's (`texts`), answered in its shape.
    pub tei: bool,
    /// How many results to return (at most the documents').
    pub top_n: usize,
    pub return_documents: bool,
}

impl RerankRequest {
    pub fn new(
        model: impl Into<String>,
        query: impl Into<String>,
        documents: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        RerankRequest {
            model: model.into(),
            query: Json::String(query.into()),
            documents: Some(Json::Array(
                documents
                    .into_iter()
                    .map(|d| Json::String(d.into()))
                    .collect(),
            )),
            ..RerankRequest::default()
        }
    }

    /// Reads a request from JSON text, errors naming the field.
    pub fn from_json(json: &str) -> Result<Self> {
        super::types::from_json(json)
    }

    /// Whether it is text-embeddings-inference's (`texts`), answered with its bare list.
    pub fn is_tei(&self) -> bool {
        self.texts.is_some() && self.documents.is_none()
    }

    /// The model that ranks: the one named, or for TEI's shape without one (a TEI server
    /// serves one model, so its clients name none) the default embedding model.
    pub fn model_name(&self) -> &str {
        match self.model.as_str() {
            "" if self.is_tei() => crate::config::DEFAULT_EMBEDDING_MODEL,
            model => model,
        }
    }

    /// The request checked: every field's type and range, the documents' texts. What
    /// `rerank.create` does before it scores; each error names its field.
    pub fn check(&self) -> Result<CheckedRerank<'_>> {
        if let Some((field, _)) = self.other.iter().find(|(_, v)| !v.is_null()) {
            return Err(Error::invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            ));
        }
        let model = self.model_name();
        if model.is_empty() && self.texts.is_none() {
            return Err(Error::invalid(
                "model",
                "Missing required parameter: `model`",
            ));
        }
        let query = query_of(&self.query)?;
        let (documents, tei) = match (&self.documents, &self.texts) {
            (Some(documents), None) => (texts_of(documents, "documents", true)?, false),
            (None, Some(texts)) => (texts_of(texts, "texts", false)?, true),
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "texts",
                    "Give `documents` (Jina's and Cohere's name) or `texts` \
                     (text-embeddings-inference's), not both",
                ))
            }
            (None, None) => {
                return Err(Error::invalid(
                    "documents",
                    "Missing required parameter: `documents`",
                ))
            }
        };
        let top_n = match self.top_n {
            Some(n) if n < 1 => {
                return Err(Error::invalid(
                    "top_n",
                    format!("Invalid value for `top_n`: {n}; it must be at least 1"),
                ))
            }
            Some(n) => usize::try_from(n)
                .unwrap_or(usize::MAX)
                .min(documents.len()),
            None => documents.len(),
        };
        if let Some(n) = self.max_tokens_per_doc.filter(|&n| n < 1) {
            return Err(Error::invalid(
                "max_tokens_per_doc",
                format!("Invalid value for `max_tokens_per_doc`: {n}; it must be at least 1"),
            ));
        }
        let return_documents = if tei {
            self.return_text.unwrap_or(false)
        } else {
            self.return_documents.unwrap_or(true)
        };
        Ok(CheckedRerank {
            model,
            query,
            documents,
            tei,
            top_n,
            return_documents,
        })
    }
}

/// A document as a result carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankDocument {
    pub text: String,
}

/// One ranked document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankResult {
    /// Its place in the request's `documents`.
    pub index: u32,
    pub relevance_score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<RerankDocument>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RerankUsage {
    pub prompt_tokens: u32,
    pub total_tokens: u32,
}

/// The ranking, most relevant first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankResponse {
    pub id: String,
    pub model: String,
    pub results: Vec<RerankResult>,
    pub usage: RerankUsage,
}

/// One result of text-embeddings-inference's `/rerank`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeiRerankResult {
    pub index: u32,
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl RerankResponse {
    /// The same ranking as text-embeddings-inference answers it.
    pub fn into_tei(self) -> Vec<TeiRerankResult> {
        self.results
            .into_iter()
            .map(|r| TeiRerankResult {
                index: r.index,
                score: r.relevance_score,
                text: r.document.map(|d| d.text),
            })
            .collect()
    }
}

/// `client.rerank`.
#[derive(Clone)]
pub struct Rerank {
    registry: Arc<Registry>,
    embeddings: Embeddings,
    /// What stops its calls ([`crate::Client::with_cancel`]).
    pub(crate) cancel: Cancel,
}

/// A predictor's rerank parameters, by annotation.
struct RerankParams {
    query: String,
    documents: String,
    scores: usize,
}

fn rerank_params(signature: &Signature) -> Option<RerankParams> {
    Some(RerankParams {
        query: signature
            .input_annotated(&Annotation::RerankQuery)?
            .name
            .clone(),
        documents: signature
            .input_annotated(&Annotation::RerankDocuments)?
            .name
            .clone(),
        scores: signature.output_annotated(&Annotation::RerankScores)?,
    })
}

/// The query, as a non-empty string.
fn query_of(query: &Json) -> Result<String> {
    match query {
        Json::String(q) if !q.is_empty() => Ok(q.clone()),
        Json::String(_) => Err(Error::invalid("query", "`query` must not be empty")),
        Json::Null => Err(Error::invalid(
            "query",
            "Missing required parameter: `query`",
        )),
        other => Err(Error::invalid(
            "query",
            format!(
                "Invalid type for `query`: expected a string, got {}",
                Value::from(other.clone()).type_name()
            ),
        )),
    }
}

/// The documents' texts: strings, or (not for `texts`) objects with a string `text`.
fn texts_of(documents: &Json, field: &str, objects: bool) -> Result<Vec<String>> {
    let Json::Array(items) = documents else {
        return Err(Error::invalid(
            field,
            format!("`{field}` must be a list of strings"),
        ));
    };
    if items.is_empty() {
        return Err(Error::invalid(
            field,
            format!("`{field}` must not be empty"),
        ));
    }
    if items.len() > MAX_RERANK_DOCUMENTS {
        return Err(Error::invalid(
            field,
            format!(
                "`{field}` holds {} documents; at most {MAX_RERANK_DOCUMENTS} can be ranked at \
                 once",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Json::String(text) => Ok(text.clone()),
            Json::Object(o) if objects => match o.get("text") {
                Some(Json::String(text)) => Ok(text.clone()),
                _ => Err(Error::invalid(
                    format!("{field}[{i}].text"),
                    format!("`{field}[{i}]` must have a string `text`"),
                )),
            },
            other => Err(Error::invalid(
                format!("{field}[{i}]"),
                format!(
                    "Invalid type for `{field}[{i}]`: expected a string{}, got {}",
                    if objects { " or {\"text\": ...}" } else { "" },
                    Value::from(other.clone()).type_name()
                ),
            )),
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|x| *x as f64 * *x as f64).sum::<f64>().sqrt();
    let norms = norm(a) * norm(b);
    if norms > 0.0 {
        // Rounding may take identical texts a hair past 1.
        (dot / norms).clamp(-1.0, 1.0)
    } else {
        0.0
    }
}

impl Rerank {
    pub(crate) fn new(registry: Arc<Registry>, embeddings: Embeddings) -> Self {
        Rerank {
            registry,
            embeddings,
            cancel: Cancel::default(),
        }
    }

    /// This resource with its calls stopped by `cancel`.
    pub(crate) fn with_cancel(&self, cancel: &Cancel) -> Self {
        let mut rerank = self.clone();
        rerank.cancel = cancel.clone();
        rerank.embeddings.cancel = cancel.clone();
        rerank
    }

    /// Ranks the request's documents by their relevance to its query, most relevant first.
    pub fn create(&self, request: &RerankRequest) -> Result<RerankResponse> {
        let CheckedRerank {
            model,
            query,
            documents,
            tei,
            top_n,
            return_documents,
        } = request.check()?;
        let predictor = self.registry.get(model)?;
        let (scores, prompt_tokens) = match rerank_params(predictor.signature()) {
            Some(params) => self.scored_by(&predictor, params, &query, &documents, tei)?,
            None => self.by_embeddings(model, &query, &documents, tei)?,
        };
        let mut order: Vec<usize> = (0..documents.len()).collect();
        // Most relevant first; equal scores in the documents' order.
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let results = order
            .into_iter()
            .take(top_n)
            .map(|i| RerankResult {
                index: i as u32,
                relevance_score: scores[i],
                document: return_documents.then(|| RerankDocument {
                    text: documents[i].clone(),
                }),
            })
            .collect();
        Ok(RerankResponse {
            id: random_id("rerank-"),
            model: model.to_string(),
            results,
            usage: RerankUsage {
                prompt_tokens,
                total_tokens: prompt_tokens,
            },
        })
    }

    /// A predictor annotated for reranking scores the documents itself.
    fn scored_by(
        &self,
        predictor: &Arc<dyn crate::predict::Predictor>,
        params: RerankParams,
        query: &str,
        documents: &[String],
        tei: bool,
    ) -> Result<(Vec<f64>, u32)> {
        let field = if tei { "texts" } else { "documents" };
        let inputs = Inputs::from([
            (params.query.clone(), Value::from(query)),
            (
                params.documents.clone(),
                Value::List(documents.iter().map(|d| Value::from(d.as_str())).collect()),
            ),
        ]);
        let fields = [(params.query, "query"), (params.documents, field)];
        let to_request = |e| super::common::in_openai_terms(e, &fields);
        let inputs = predictor.signature().validate(inputs).map_err(to_request)?;
        let outputs = crate::predict::start(predictor, inputs, &self.cancel, Default::default())
            .map_err(to_request)?;
        let mut last = None;
        for outputs in outputs {
            last = Some(outputs?);
        }
        let tag = shown(predictor.tag());
        let broken = |what: String| {
            Error::internal(format!(
                "The predictor `{tag}` gave {what} as its rerank scores"
            ))
        };
        let scores = last
            .and_then(|mut outputs| {
                (params.scores < outputs.len()).then(|| outputs.swap_remove(params.scores))
            })
            .ok_or_else(|| broken("nothing".into()))?;
        let scores = scores
            .as_list()
            .ok_or_else(|| broken(format!("a {}", scores.type_name())))?
            .iter()
            .map(|s| s.as_f64().filter(|x| x.is_finite()))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| broken("something other than finite numbers".into()))?;
        if scores.len() != documents.len() {
            return Err(broken(format!(
                "{} scores for {} documents",
                scores.len(),
                documents.len()
            )));
        }
        Ok((scores, 0))
    }

    /// An embedding model as a bi-encoder: each document's cosine similarity to the query,
    /// the documents embedded in batches the embedder takes (the query with the first).
    fn by_embeddings(
        &self,
        model: &str,
        query: &str,
        documents: &[String],
        tei: bool,
    ) -> Result<(Vec<f64>, u32)> {
        let field = if tei { "texts" } else { "documents" };
        let mut query_row: Option<Vec<f32>> = None;
        let (mut scores, mut tokens) = (Vec::with_capacity(documents.len()), 0u32);
        let mut start = 0;
        while start < documents.len() {
            // The first batch carries the query: one text fewer of the documents.
            let room = EMBEDDING_BATCH - usize::from(query_row.is_none());
            let end = (start + room).min(documents.len());
            let mut texts = Vec::with_capacity(end - start + 1);
            if query_row.is_none() {
                texts.push(query.to_string());
            }
            texts.extend(documents[start..end].iter().cloned());
            let offset = usize::from(query_row.is_none());
            let request = EmbeddingRequest::new(model, EmbeddingInput::Many(texts.clone()));
            let matrix = self
                .embeddings
                .create_matrix(&request)
                .map_err(|e| in_rerank_terms(e, field, offset, start))?;
            if matrix.rows != texts.len() {
                return Err(Error::internal(format!(
                    "The model `{}` gave {} embeddings for {} texts",
                    shown(model),
                    matrix.rows,
                    texts.len()
                )));
            }
            tokens = tokens.saturating_add(matrix.prompt_tokens);
            let query_row = query_row.get_or_insert_with(|| matrix.row(0).to_vec());
            scores.extend((offset..matrix.rows).map(|i| cosine(query_row, matrix.row(i))));
            start = end;
        }
        Ok((scores, tokens))
    }
}

/// An embeddings error in the rerank request's terms: a batch's `input[i]` is the query (the
/// first batch's `input[0]`) or the document `start + i - offset`.
fn in_rerank_terms(mut e: Error, field: &str, offset: usize, start: usize) -> Error {
    if let Some(param) = e.param.as_deref() {
        let renamed = match param
            .strip_prefix("input[")
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|i| i.parse::<usize>().ok())
        {
            Some(i) if i < offset => Some("query".to_string()),
            Some(i) => Some(format!("{field}[{}]", start + i - offset)),
            None if param == "input" => Some(field.to_string()),
            None => None,
        };
        if let Some(renamed) = renamed {
            e.message = e
                .message
                .replace(&format!("`{param}`"), &format!("`{renamed}`"));
            e.param = Some(renamed);
        }
    }
    if e.message.contains("cannot serve embeddings") {
        e.message = e.message.replace(
            "cannot serve embeddings",
            "cannot serve rerank (neither annotated for it, RerankQuery, RerankDocuments and \
             RerankScores, nor an embedding model)",
        );
    }
    e
}

/// Rerank (claimed by any of its annotations): a required `RerankQuery` string and a required
/// `RerankDocuments` list in, a `RerankScores` list out, nothing else required.
pub(super) fn rules(tag: &str, signature: &Signature) -> Result<()> {
    use super::rules::{nothing_else_required, problem};
    let rerank = [
        Annotation::RerankQuery,
        Annotation::RerankDocuments,
        Annotation::RerankScores,
    ];
    let claimed = signature
        .inputs
        .iter()
        .chain(&signature.outputs)
        .any(|p| rerank.contains(&p.annotation));
    if !claimed {
        return Ok(());
    }
    for (annotation, what) in [
        (
            Annotation::RerankQuery,
            "an input annotated RerankQuery (the query)",
        ),
        (
            Annotation::RerankDocuments,
            "an input annotated RerankDocuments (the documents)",
        ),
    ] {
        let input = signature
            .input_annotated(&annotation)
            .ok_or_else(|| problem(tag, "inputs", format!("serves rerank, so it needs {what}")))?;
        if !input.required {
            return Err(problem(
                tag,
                &input.name,
                format!(
                    "serves rerank, so its input `{}` must be required (no default)",
                    input.name
                ),
            ));
        }
    }
    if signature
        .output_annotated(&Annotation::RerankScores)
        .is_none()
    {
        return Err(problem(
            tag,
            "outputs",
            "serves rerank, so it needs an output annotated RerankScores (one score per \
             document)"
                .into(),
        ));
    }
    nothing_else_required(
        tag,
        signature,
        "rerank",
        &[
            signature.input_annotated(&Annotation::RerankQuery),
            signature.input_annotated(&Annotation::RerankDocuments),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_strings_or_objects_with_text() {
        let read = texts_of(&serde_json::json!(["a", {"text": "b"}]), "documents", true);
        assert_eq!(read.unwrap(), ["a", "b"]);
        let error = texts_of(&serde_json::json!(["a", 3]), "documents", true).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("documents[1]"));
        let error = texts_of(&serde_json::json!([{"text": "a"}]), "texts", false).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("texts[0]"));
        let error = texts_of(&serde_json::json!([]), "documents", true).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("documents"));
        let many = Json::Array(vec![Json::from("x"); MAX_RERANK_DOCUMENTS + 1]);
        assert!(texts_of(&many, "documents", true).is_err());
    }

    #[test]
    fn cosine_of_unit_and_zero_vectors() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-9);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-9);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn a_tei_ranking_carries_score_and_text() {
        let response = RerankResponse {
            id: "x".into(),
            model: "m".into(),
            results: vec![RerankResult {
                index: 1,
                relevance_score: 0.5,
                document: Some(RerankDocument { text: "b".into() }),
            }],
            usage: RerankUsage::default(),
        };
        assert_eq!(
            serde_json::to_value(response.into_tei()).unwrap(),
            serde_json::json!([{"index": 1, "score": 0.5, "text": "b"}])
        );
    }
}
