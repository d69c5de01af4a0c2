//! Sentence embeddings: a BERT-style encoder (all-MiniLM-L6-v2) on ONNX Runtime, its output
//! mean-pooled over the attention mask and L2-normalised (the sentence-transformers recipe).
//!
//! Texts are tokenized with the model's `tokenizer.json` (its own padding is turned off, and
//! truncation set to `max_length`), sorted by length and run in sub-batches padded to their
//! longest text, so short texts do not pay for long ones. Padding is masked out, so a text's
//! vector does not depend on what it is batched with.
//!
//! Concurrent requests are batched together ("group commit"): each request queues its texts;
//! if no batch is running, it becomes the runner and runs every queued request as one batch,
//! else it waits; a finished run hands each request its rows and wakes them all at once. So
//! many callers embedding one sentence each share batches instead of taking turns.
//!
//! Callers that just got their rows come straight back with their next sentence, so the
//! runner of a new batch waits briefly for as many requests as were in flight during the last
//! cycle (at most half of the last run's time, never more than a few milliseconds, never for a
//! lone caller). Without it, 8 callers split into batches of 1 to 3 and ran at 0.55x the
//! throughput of batches of 32; see docs/speed.md.

use super::{environment, load_session, ort_error, Graph};
use crate::config::{Config, Pooling, PredictorConfig};
use crate::error::{Error, Result};
use crate::predict::{
    Annotation, Context, Inputs, Metrics, OutputStream, Parameter, Predictor, PredictorKind,
    Signature,
};
use crate::value::{Tensor, Value, ValueType};
use ort::session::Session;
use ort::value::{TensorRef, ValueType as OrtType};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokenizers::{Tokenizer, TruncationParams};

/// Default token window per input: all-MiniLM-L6-v2 was trained on 256 (its
/// `sentence_bert_config.json`), though its tokenizer.json says 128.
pub const DEFAULT_MAX_LENGTH: u32 = 256;
/// Most texts one request may embed (the OpenAI API's limit too).
pub const MAX_INPUTS: usize = 2048;
/// Texts run through the model at once; more are split into sub-batches of this size.
const SUB_BATCH: usize = 32;
/// Most tokens of one sub-batch, padding included. This bounds the working memory of any
/// request: activations grow with batch × length (attention with length²), and ONNX Runtime's
/// arena keeps the high-water mark of the largest run. 2048 inputs of ~230 tokens left the
/// process 939 MB larger with sub-batches of 32 texts (its arena off: peak +508 MB at 2048
/// tokens per sub-batch, +99 MB at 1024, +62 MB at 512, which was also the fastest: 44.8 s
/// against 49.7 and 93.8 s). At 512 with the arena on: +105 MB, kept, and 4% more short
/// sentences/s than with it off (scripts/bench memory, 2 cores). Short texts still run 32 at once.
const SUB_BATCH_TOKENS: usize = 512;
/// Longest a runner waits for the callers it expects: a bound on what a burst that ends costs.
const MAX_LINGER: Duration = Duration::from_millis(5);
/// After this long without a run, earlier concurrency says nothing about the next request.
const STALE_AFTER: Duration = Duration::from_millis(100);

/// A loaded embedding model, shared by every predictor (of any client) of the same files.
struct EmbeddingModel {
    tokenizer: Tokenizer,
    /// `Session::run` needs `&mut`; runs are serialised (each already uses every core) by
    /// `Batching::running`, so this lock is never contended.
    session: Mutex<Session>,
    batching: Mutex<Batching>,
    /// A request was queued (the runner may be waiting for more).
    arrived: Condvar,
    /// A run ended: its requests have their rows, and the next may run.
    finished: Condvar,
    /// Whether the graph takes `token_type_ids` (BERT exports do; some others do not).
    token_type_ids: bool,
    /// Which output is the hidden state `[batch, sequence, dims]`.
    hidden_state: usize,
    dims: usize,
    pooling: Pooling,
    /// The most bytes of a text tokenized: what `max_length` tokens can take
    /// ([`BYTES_PER_TOKEN`] each).
    read_bytes: usize,
}

/// Bytes of text that a token of a text encoder can stand for, at most in practice: a word
/// piece is a few bytes; a word over 100 characters (WordPiece's bound) is one unknown token.
/// A text is cut to `max_length` times this before tokenizing: the tokenizer would otherwise
/// split all of a 10 MB document (seconds, and hundreds of MB) to keep its first 256 tokens.
const BYTES_PER_TOKEN: usize = 128;

/// The start of `text`, at most `bytes` long, cut at a character boundary.
fn leading(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The queue of requests and what the last runs saw of concurrency.
#[derive(Default)]
struct Batching {
    queue: Vec<Arc<Job>>,
    /// Whether some request is running a batch now.
    running: bool,
    /// Requests queued or running.
    in_flight: usize,
    /// Most requests in flight since the current (or last) run started.
    peak: usize,
    last_run: Duration,
    last_end: Option<Instant>,
}

/// Models by (model file, tokenizer file, threads, max_length, pooling): loaded once per process.
type ModelKey = (PathBuf, PathBuf, usize, usize, Pooling);
static MODELS: Mutex<Option<HashMap<ModelKey, Weak<EmbeddingModel>>>> = Mutex::new(None);

/// An embedding predictor: texts in, a float32 `[N, D]` matrix of unit vectors out.
pub struct EmbeddingPredictor {
    tag: String,
    signature: Signature,
    model: Arc<EmbeddingModel>,
    /// Requests embedding now (running, or waiting for the session).
    active: AtomicUsize,
    /// Texts embedded since load.
    embedded: AtomicU64,
    /// Input tokens embedded since load.
    prompt_tokens: AtomicU64,
    /// The weights file's size: what the session holds in memory, roughly.
    weights_bytes: u64,
}

impl EmbeddingPredictor {
    /// Loads the model (or shares the one already loaded from the same files).
    pub fn load(config: &Config, predictor: &PredictorConfig) -> Result<Self> {
        let tag = &predictor.tag;
        let model_path = config.model_path(predictor);
        let options = predictor.embedding_options().cloned().unwrap_or_default();
        let tokenizer_path = options.tokenizer.as_ref().map(|t| config.resolve(t));
        let tokenizer_path = tokenizer_path.ok_or_else(|| {
            Error::invalid(
                "config",
                format!("The embedding predictor `{tag}` needs a `tokenizer` (a tokenizer.json)"),
            )
        })?;
        for (what, path) in [("model file", &model_path), ("tokenizer", &tokenizer_path)] {
            super::check_file(what, path, tag)?;
        }
        let threads = crate::backends::cores::capped_threads(predictor.threads, tag) as usize;
        let max_length = options.max_length.unwrap_or(DEFAULT_MAX_LENGTH) as usize;
        if threads == 0 || max_length < 2 {
            return Err(Error::invalid(
                "config",
                format!("`threads` of `{tag}` must be at least 1 and `max_length` at least 2"),
            ));
        }
        let pooling = options.pooling.unwrap_or(Pooling::Mean);
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let key = (
            canonical(&model_path),
            canonical(&tokenizer_path),
            threads,
            max_length,
            pooling,
        );
        let mut models = MODELS.lock().unwrap_or_else(PoisonError::into_inner);
        let models = models.get_or_insert_with(HashMap::new);
        models.retain(|_, model| model.strong_count() > 0);
        let model = match models.get(&key).and_then(Weak::upgrade) {
            Some(model) => model,
            None => {
                let library = super::runtime_library(config);
                let model = Arc::new(EmbeddingModel::load(
                    &library,
                    &model_path,
                    &tokenizer_path,
                    threads,
                    max_length,
                    pooling,
                    tag,
                )?);
                models.insert(key, Arc::downgrade(&model));
                model
            }
        };
        Ok(EmbeddingPredictor {
            tag: tag.clone(),
            signature: signature(model.dims as u32),
            model,
            active: AtomicUsize::new(0),
            embedded: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            weights_bytes: super::file_bytes(&model_path),
        })
    }

    /// The embedding size of the model (384 for all-MiniLM-L6-v2).
    pub fn dims(&self) -> usize {
        self.model.dims
    }
}

/// The signature of an embedding predictor whose model gives `dims`-long vectors.
pub fn signature(dims: u32) -> Signature {
    Signature::new(
        vec![
            Parameter::new("texts", ValueType::List)
                .annotated(Annotation::Embedding)
                .describe(format!(
                    "Texts to embed: 1 to {MAX_INPUTS} non-empty strings. Each is truncated \
                     to the model's token window."
                )),
            Parameter::new("dimensions", ValueType::Int)
                .default_value(dims as i64)
                .range(Some(1.0), Some(dims as f64))
                .annotated(Annotation::EmbeddingDims { min: 1, max: dims })
                .describe(
                    "Length of the returned vectors: the first `dimensions` components, \
                     normalised again (Matryoshka truncation).",
                ),
        ],
        vec![
            Parameter::new("embeddings", ValueType::Tensor)
                .annotated(Annotation::Embedding)
                .describe("float32 [N, dimensions]: one unit-length row per text, in order."),
            Parameter::new("usage", ValueType::Dict)
                .annotated(Annotation::Usage)
                .describe("{prompt_tokens}: the tokens the model read, special tokens included."),
        ],
    )
}

impl EmbeddingModel {
    fn load(
        library: &Path,
        model_path: &Path,
        tokenizer_path: &Path,
        threads: usize,
        max_length: usize,
        pooling: Pooling,
        tag: &str,
    ) -> Result<Self> {
        let environment = environment(library)?;
        let mut tokenizer = Tokenizer::from_file(tokenizer_path).map_err(|e| {
            Error::model(format!(
                "Cannot read the tokenizer {} of `{tag}`: {e}",
                tokenizer_path.display()
            ))
        })?;
        // Its own padding (all-MiniLM's pads every text to 128) would make us run padding
        // tokens; batches are padded here, to their longest text.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..Default::default()
            }))
            .map_err(|e| Error::invalid("config", format!("`max_length` of `{tag}`: {e}")))?;
        let loading = || format!("Cannot load {} for `{tag}`", model_path.display());
        // Spinning left on: the embedding runner batches requests back to back.
        let session = load_session(
            &environment,
            threads,
            true,
            &loading(),
            Graph::File(model_path),
        )?;
        let input_names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !input_names.contains(&needed) {
                return Err(Error::model(format!(
                    "{} is not a text encoder ingle can run: it has no input `{needed}` \
                     (its inputs: {})",
                    model_path.display(),
                    input_names.join(", ")
                )));
            }
        }
        let token_type_ids = input_names.contains(&"token_type_ids");
        let outputs = session.outputs();
        let hidden_state = outputs
            .iter()
            .position(|o| o.name() == "last_hidden_state")
            .unwrap_or(0);
        let dims = match outputs.get(hidden_state).map(|o| o.dtype()) {
            Some(OrtType::Tensor { shape, .. }) if shape.len() == 3 && shape[2] > 0 => {
                shape[2] as usize
            }
            other => {
                return Err(Error::model(format!(
                    "{} is not a text encoder ingle can run: its output should be a \
                     [batch, sequence, dims] hidden state, not {other:?}",
                    model_path.display()
                )))
            }
        };
        Ok(EmbeddingModel {
            tokenizer,
            session: Mutex::new(session),
            batching: Mutex::new(Batching::default()),
            arrived: Condvar::new(),
            finished: Condvar::new(),
            token_type_ids,
            hidden_state,
            dims,
            pooling,
            read_bytes: max_length.saturating_mul(BYTES_PER_TOKEN),
        })
    }

    /// Embeds `texts` into a row-major `[texts.len(), dims]` matrix of unit vectors; also
    /// returns how many tokens the model read.
    fn embed(&self, texts: &[&str], dims: usize) -> Result<(Vec<f32>, usize)> {
        let encodings = self
            .tokenizer
            .encode_batch_fast(
                texts.iter().map(|t| leading(t, self.read_bytes)).collect(),
                true,
            )
            .map_err(|e| Error::model(format!("Cannot tokenize the input: {e}")))?;
        let tokens = encodings.iter().map(|e| e.len()).sum();
        let job = Arc::new(Job {
            encodings,
            dims,
            result: Mutex::new(None),
        });
        let mut state = lock(&self.batching);
        state.queue.push(Arc::clone(&job));
        state.in_flight += 1;
        state.peak = state.peak.max(state.in_flight);
        self.arrived.notify_one();
        loop {
            if let Some(result) = job.take_result() {
                return result.map(|matrix| (matrix, tokens));
            }
            if state.running {
                state = self
                    .finished
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // No batch is running and this request's rows are not in: it runs the queue.
            state.running = true;
            state = self.linger(state);
            let jobs = take_queued(&mut state.queue);
            if jobs.is_empty() {
                // Cannot happen: a request stays queued until a runner takes it, and a runner
                // hands it its rows before it clears `running`. Were it to happen, this request
                // leaves (uncounted, so later runners do not wait for it) rather than spin.
                state.running = false;
                state.in_flight -= 1;
                self.finished.notify_all();
                return Err(Error::internal("an embedding request left the queue unrun"));
            }
            state.peak = state.in_flight;
            drop(state);
            let started = Instant::now();
            let outcome = {
                let mut session = lock(&self.session);
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.run_jobs(&mut session, &jobs)
                }))
                .unwrap_or_else(|_| Err(Error::internal("the embedding model panicked")))
            };
            match outcome {
                Ok(matrices) => {
                    for (queued, matrix) in jobs.iter().zip(matrices) {
                        *lock(&queued.result) = Some(Ok(matrix));
                    }
                }
                Err(error) => {
                    for queued in &jobs {
                        *lock(&queued.result) = Some(Err(error.clone()));
                    }
                }
            }
            state = lock(&self.batching);
            state.running = false;
            state.in_flight -= jobs.len();
            state.last_run = started.elapsed();
            state.last_end = Some(Instant::now());
            self.finished.notify_all();
        }
    }

    /// Before a run: waits (up to half the last run's time, at most [`MAX_LINGER`]) until as
    /// many requests are queued as were in flight during the last cycle, or a full sub-batch.
    fn linger<'a>(&self, mut state: MutexGuard<'a, Batching>) -> MutexGuard<'a, Batching> {
        let recent = state
            .last_end
            .is_some_and(|end| end.elapsed() < STALE_AFTER);
        if !recent {
            return state;
        }
        let expected = state.peak;
        let deadline = Instant::now() + (state.last_run / 2).min(MAX_LINGER);
        loop {
            let texts: usize = state.queue.iter().map(|job| job.encodings.len()).sum();
            let now = Instant::now();
            if state.queue.len() >= expected || texts >= SUB_BATCH || now >= deadline {
                return state;
            }
            state = self
                .arrived
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Runs the texts of `jobs` as one batch, shortest first in sub-batches; returns each job's
    /// matrix of normalised rows.
    fn run_jobs(&self, session: &mut Session, jobs: &[Arc<Job>]) -> Result<Vec<Vec<f32>>> {
        let mut texts: Vec<(usize, usize)> = jobs
            .iter()
            .enumerate()
            .flat_map(|(j, job)| (0..job.encodings.len()).map(move |i| (j, i)))
            .collect();
        texts.sort_by_key(|&(j, i)| jobs[j].encodings[i].len());
        let mut matrices: Vec<Vec<f32>> = jobs
            .iter()
            .map(|job| vec![0f32; job.encodings.len() * job.dims])
            .collect();
        // Sorted shortest first, so the last text of a sub-batch is its longest: cut a new one
        // at SUB_BATCH texts or when the padded batch would pass SUB_BATCH_TOKENS.
        let mut batches = Vec::new();
        let mut start = 0;
        for end in 1..=texts.len() {
            let (j, i) = texts[end - 1];
            let padded = (end - start) * jobs[j].encodings[i].len().max(1);
            if end - start > 1 && (end - start > SUB_BATCH || padded > SUB_BATCH_TOKENS) {
                batches.push(&texts[start..end - 1]);
                start = end - 1;
            }
        }
        if start < texts.len() {
            batches.push(&texts[start..]);
        }
        for batch in batches {
            let rows: Vec<&tokenizers::Encoding> =
                batch.iter().map(|&(j, i)| &jobs[j].encodings[i]).collect();
            let pooled = self.run(session, &rows)?;
            for (row, &(j, i)) in pooled.chunks_exact(self.dims).zip(batch) {
                let dims = jobs[j].dims;
                let out = &mut matrices[j][i * dims..(i + 1) * dims];
                out.copy_from_slice(&row[..dims]);
                normalize(out);
            }
        }
        Ok(matrices)
    }

    /// Runs one padded batch; returns its rows pooled: the mean over their real tokens, or
    /// their first token's state.
    fn run(&self, session: &mut Session, rows: &[&tokenizers::Encoding]) -> Result<Vec<f32>> {
        let width = rows.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let shape = [rows.len(), width];
        let mut ids = vec![0i64; rows.len() * width];
        let mut mask = vec![0i64; rows.len() * width];
        for (r, encoding) in rows.iter().enumerate() {
            for (t, &id) in encoding.get_ids().iter().enumerate() {
                ids[r * width + t] = id as i64;
                mask[r * width + t] = 1;
            }
        }
        let type_ids = vec![0i64; if self.token_type_ids { ids.len() } else { 0 }];
        let running = "Cannot run the embedding model";
        fn tensor(shape: [usize; 2], data: &[i64]) -> Result<TensorRef<'_, i64>> {
            TensorRef::from_array_view((shape, data))
                .map_err(ort_error("Cannot run the embedding model"))
        }
        let mut inputs = vec![
            ("input_ids", tensor(shape, &ids)?),
            ("attention_mask", tensor(shape, &mask)?),
        ];
        if self.token_type_ids {
            inputs.push(("token_type_ids", tensor(shape, &type_ids)?));
        }
        let outputs = session.run(inputs).map_err(ort_error(running))?;
        let (out_shape, hidden) = outputs[self.hidden_state]
            .try_extract_tensor::<f32>()
            .map_err(ort_error(running))?;
        let expected = [rows.len() as i64, width as i64, self.dims as i64];
        if **out_shape != expected {
            return Err(Error::model(format!(
                "The embedding model returned a hidden state of shape {:?}, expected {expected:?}",
                &**out_shape
            )));
        }
        let mut pooled = vec![0f32; rows.len() * self.dims];
        for (r, encoding) in rows.iter().enumerate() {
            if self.pooling == Pooling::Cls {
                let start = r * width * self.dims;
                pooled[r * self.dims..(r + 1) * self.dims]
                    .copy_from_slice(&hidden[start..start + self.dims]);
                continue;
            }
            let n = encoding.len().max(1);
            let sum = &mut pooled[r * self.dims..(r + 1) * self.dims];
            for t in 0..encoding.len() {
                let start = (r * width + t) * self.dims;
                for (s, h) in sum.iter_mut().zip(&hidden[start..start + self.dims]) {
                    *s += h;
                }
            }
            sum.iter_mut().for_each(|s| *s /= n as f32);
        }
        Ok(pooled)
    }
}

/// Takes queued requests, in order, up to [`MAX_INPUTS`] texts (at least one request).
fn take_queued(queue: &mut Vec<Arc<Job>>) -> Vec<Arc<Job>> {
    let mut texts = 0;
    let take = queue
        .iter()
        .take_while(|job| {
            texts += job.encodings.len();
            texts <= MAX_INPUTS
        })
        .count()
        .max(1)
        .min(queue.len());
    queue.drain(..take).collect()
}

/// One request's texts, waiting in the queue, and its rows once run.
struct Job {
    encodings: Vec<tokenizers::Encoding>,
    dims: usize,
    result: Mutex<Option<Result<Vec<f32>>>>,
}

impl Job {
    fn take_result(&self) -> Option<Result<Vec<f32>>> {
        lock(&self.result).take()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Scales `v` to unit length (a zero vector stays zero).
fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The texts of the `texts` input: 1 to [`MAX_INPUTS`] non-empty strings.
fn texts_of(value: &Value) -> Result<Vec<&str>> {
    let list = value.as_list().unwrap_or_default();
    if list.is_empty() {
        return Err(Error::invalid(
            "texts",
            "`texts` must contain at least one text",
        ));
    }
    if list.len() > MAX_INPUTS {
        return Err(Error::invalid(
            "texts",
            format!(
                "`texts` has {} texts; at most {MAX_INPUTS} can be embedded in one request",
                list.len()
            ),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, text)| match text {
            Value::String(s) if !s.is_empty() => Ok(s.as_str()),
            Value::String(_) => Err(Error::invalid(
                format!("texts[{i}]"),
                format!("`texts[{i}]` is an empty string; every text must have content"),
            )),
            other => Err(Error::invalid(
                format!("texts[{i}]"),
                format!(
                    "Invalid type for `texts[{i}]`: expected a string, got {}",
                    other.type_name()
                ),
            )),
        })
        .collect()
}

/// Counts a request as active while it lives.
struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Predictor for EmbeddingPredictor {
    fn tag(&self) -> &str {
        &self.tag
    }

    fn kind(&self) -> PredictorKind {
        PredictorKind::Eager
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, inputs: Inputs, _context: &Context) -> Result<OutputStream> {
        let texts = texts_of(inputs.get("texts").unwrap_or(&Value::Null))?;
        let dims = inputs
            .get("dimensions")
            .and_then(Value::as_i64)
            .unwrap_or(self.model.dims as i64) as usize;
        self.active.fetch_add(1, Ordering::Relaxed);
        let _busy = Busy(&self.active);
        let (matrix, tokens) = self.model.embed(&texts, dims)?;
        self.embedded
            .fetch_add(texts.len() as u64, Ordering::Relaxed);
        self.prompt_tokens
            .fetch_add(tokens as u64, Ordering::Relaxed);
        let tensor = Tensor::from_f32(vec![texts.len(), dims], &matrix)?;
        let usage = Value::Dict(crate::value::Dict::from([(
            "prompt_tokens".to_string(),
            Value::Int(tokens as i64),
        )]));
        Ok(Box::new(std::iter::once(Ok(vec![
            Value::Tensor(tensor),
            usage,
        ]))))
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            active_requests: self.active.load(Ordering::Relaxed),
            queued_requests: lock(&self.model.batching).queue.len(),
            generated_tokens: self.embedded.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            memory_bytes: self.weights_bytes,
            ..Metrics::default()
        }
    }
}
