//! Predictors, predictions, and the create / stream ways of running them.

mod cancel;
mod declare;
mod generation;
mod metrics;
mod signature;

pub use cancel::{Cancel, CancelOnDrop, OnCancel};
pub use declare::Declaration;
pub(crate) use generation::check_range;
pub use generation::{
    FunctionCallDelta, Generate, GenerationInput, GenerationOptions, GenerationRequest,
    GenerationStep, LogitBias, ResponseFormat, SamplingParams, StepStream, StepUsage, TokenLogprob,
    Tool, ToolCallDelta, ToolChoice, Tools, TopLogprob, MAX_STOP_SEQUENCES, MAX_TOP_LOGPROBS,
    REASONING_EFFORTS,
};
/// The bounds of a text engine's numeric options, which its signature declares.
pub mod bounds {
    pub use super::generation::{
        MAX_TOKENS_MIN, MIN_P_RANGE, PENALTY_RANGE, REPETITION_PENALTY_RANGE, TEMPERATURE_RANGE,
        TOP_K_RANGE, TOP_P_RANGE,
    };
}
pub use metrics::{AtomicHistogram, Histogram, Metrics, HISTOGRAM_BOUNDS};
pub(crate) use signature::same_choice;
pub use signature::{Annotation, GenerationOption, Inputs, Parameter, Signature};

use crate::error::{Error, Result};
use crate::value::Value;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The values of one (partial) output, in the order of the signature's outputs.
pub type Outputs = Vec<Value>;

/// A pull-based stream of partial outputs. Dropping it cancels the prediction.
pub type OutputStream = Box<dyn Iterator<Item = Result<Outputs>> + Send>;

/// `outputs` as a call sees them: holding `predictor` until they end or are dropped (a model
/// with a stream running on it is in use, so a keep-alive counts its idle time from the
/// stream's end; a predictor's own stream may not hold it: llama's holds only its scheduler's
/// channel), ending with a [`crate::ErrorKind::Cancelled`] error once `cancel` is cancelled,
/// and cancelling it when dropped (which tells the predictor, see [`Cancel::on_cancel`]).
pub(crate) fn running<T: 'static>(
    predictor: std::sync::Arc<dyn Predictor>,
    outputs: Box<dyn Iterator<Item = Result<T>> + Send>,
    cancel: &Cancel,
) -> Box<dyn Iterator<Item = Result<T>> + Send> {
    // Fields drop in order: the stream first (cancelling its work), then the cancel, then the
    // predictor, whose drop may wait for its threads (a llama predictor joins its scheduler),
    // so it never waits on the generation this stream still holds.
    struct Running<T> {
        outputs: Option<Box<dyn Iterator<Item = Result<T>> + Send>>,
        cancel: CancelOnDrop,
        _predictor: std::sync::Arc<dyn Predictor>,
    }
    impl<T> Iterator for Running<T> {
        type Item = Result<T>;
        fn next(&mut self) -> Option<Self::Item> {
            let outputs = self.outputs.as_mut()?;
            if let Err(cancelled) = self.cancel.cancel().check() {
                self.outputs = None;
                return Some(Err(cancelled));
            }
            let next = outputs.next();
            if matches!(next, Some(Ok(_))) {
                return next;
            }
            // A predictor that honours the cancel ends early, or fails with its own error
            // (a C predictor returns a code): the call was cancelled, and its caller is told
            // so, not handed cut-off output or a model error. A cancelled error of the door's
            // own (Python's says why its predictor was stopped) is kept as it is.
            let said_cancelled =
                matches!(&next, Some(Err(e)) if e.kind == crate::error::ErrorKind::Cancelled);
            if !said_cancelled {
                if let Err(cancelled) = self.cancel.cancel().check() {
                    self.outputs = None;
                    return Some(Err(cancelled));
                }
            }
            if next.is_none() {
                self.outputs = None;
            }
            next
        }
    }
    Box::new(Running {
        outputs: Some(outputs),
        cancel: cancel.on_drop(),
        _predictor: predictor,
    })
}

/// Starts `predictor` on validated `inputs` as one part of the call `cancel` stops: the
/// prediction gets a child of `cancel` (dropping its stream stops it alone) and `logs`, and its
/// stream is [`running`].
pub fn start(
    predictor: &std::sync::Arc<dyn Predictor>,
    inputs: Inputs,
    cancel: &Cancel,
    logs: Logs,
) -> Result<OutputStream> {
    let context = Context {
        logs,
        cancel: cancel.child(),
    };
    let outputs = predictor.predict(inputs, &context)?;
    Ok(running(
        std::sync::Arc::clone(predictor),
        outputs,
        &context.cancel,
    ))
}

/// Starts a checked generation on `predictor`'s typed entry ([`Predictor::generation`]), as
/// [`start`] starts a prediction; `None` for a predictor without one.
pub fn generate(
    predictor: &std::sync::Arc<dyn Predictor>,
    request: GenerationRequest,
    cancel: &Cancel,
) -> Option<Result<StepStream>> {
    let engine = predictor.generation()?;
    let context = Context {
        logs: Logs::default(),
        cancel: cancel.child(),
    };
    Some(
        engine
            .generate(request, &context)
            .map(|steps| running(std::sync::Arc::clone(predictor), steps, &context.cancel)),
    )
}

/// What a prediction runs with besides its inputs.
#[derive(Clone, Default)]
pub struct Context {
    /// Where the predictor's own output goes (what a Python predictor prints, a traceback),
    /// which `predictions` report. Built-in predictors log nothing.
    pub logs: Logs,
    /// Set when the caller stops (see [`Cancel`]). The stream's consumer asks it between
    /// outputs; a predictor that works long inside one output asks it there too, or registers
    /// [`Cancel::on_cancel`] to stop code it cannot ask from.
    pub cancel: Cancel,
}

/// Whether a predictor returns one value or yields partial values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredictorKind {
    /// Yields exactly one output.
    Eager,
    /// Yields any number of partial outputs.
    Generator,
}

/// A unit of work: a tagged function with a typed signature.
pub trait Predictor: Send + Sync {
    fn tag(&self) -> &str;
    fn kind(&self) -> PredictorKind;
    fn signature(&self) -> &Signature;
    /// Starts a prediction on inputs already validated against [`Self::signature`].
    /// Errors that can be found before any output (a prompt too long, say) are returned here.
    fn predict(&self, inputs: Inputs, context: &Context) -> Result<OutputStream>;
    fn metrics(&self) -> Metrics {
        Metrics::default()
    }
    /// Checks validated inputs beyond what the signature says, without starting the work:
    /// what callers run before costly preparation (decoding an upload). [`Self::predict`]
    /// checks again.
    fn check_inputs(&self, inputs: &Inputs) -> Result<()> {
        let _ = inputs;
        Ok(())
    }
    /// How many predictions run at once; more wait in a queue (`None`: no fixed bound).
    fn concurrency(&self) -> Option<usize> {
        None
    }
    /// A built-in text engine's typed entry, which the OpenAI layer uses instead of the
    /// annotation protocol ([`generate`]); `None` for every other predictor.
    fn generation(&self) -> Option<&dyn Generate> {
        None
    }
    /// A text model's own tokenizer (`tokenize` / `detokenize`); `None` for every other
    /// predictor.
    fn tokenizer(&self) -> Option<&dyn Tokenizer> {
        None
    }
}

/// A text model's tokenizer, as its engine reads and writes text.
pub trait Tokenizer: Send + Sync {
    /// How many tokens the vocabulary holds: ids are `0..vocab_size()`.
    fn vocab_size(&self) -> usize;
    /// `text`'s token ids; `add_special` adds what the model puts around a prompt (BOS),
    /// `parse_special` reads special tokens written in the text as such.
    fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32>;
    /// A token's bytes (a special token's text too). `token` is below [`Self::vocab_size`].
    fn piece(&self, token: u32) -> Vec<u8>;
    /// The tokens' bytes, joined as the engine joins them. Each is below [`Self::vocab_size`].
    fn detokenize(&self, tokens: &[u32]) -> Vec<u8>;
}

/// Most bytes of logs a prediction keeps; later text is dropped, and the logs say so.
pub const MAX_LOG_BYTES: usize = 1 << 20;

/// The log of one prediction, shared by the predictor (which writes) and its prediction stream
/// (which reports it). Cheap to clone; safe from any thread.
#[derive(Debug, Clone, Default)]
pub struct Logs(Arc<std::sync::Mutex<LogText>>);

#[derive(Debug, Default)]
struct LogText {
    text: String,
    dropped: usize,
}

impl Logs {
    /// Appends `text`, up to [`MAX_LOG_BYTES`] in all.
    pub fn write(&self, text: &str) {
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = MAX_LOG_BYTES.saturating_sub(log.text.len());
        if text.len() <= room && log.dropped == 0 {
            log.text.push_str(text);
            return;
        }
        let mut end = room.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if log.dropped == 0 {
            log.text.push_str(&text[..end]);
        }
        log.dropped += text.len() - end;
    }

    /// Everything logged so far; `None` when nothing was.
    pub fn text(&self) -> Option<String> {
        let log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match (log.text.is_empty(), log.dropped) {
            (true, 0) => None,
            (_, 0) => Some(log.text.clone()),
            (_, dropped) => Some(format!(
                "{}\n…({dropped} more bytes of logs dropped)",
                log.text
            )),
        }
    }
}

/// The result of running a predictor, or one partial result of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// `pred_…`, shared by every partial prediction of one stream.
    pub id: String,
    pub tag: String,
    /// Unix time in seconds when the prediction started.
    pub created: i64,
    /// The output values, in signature order; `None` when the prediction failed.
    pub results: Option<Vec<Value>>,
    /// Milliseconds from the start of the prediction to this (partial) result.
    pub latency: f64,
    /// Why the prediction failed, if it did after it started.
    pub error: Option<Error>,
    /// Text the predictor logged while running, if any.
    pub logs: Option<String>,
}

impl Prediction {
    /// The results, or the error the prediction failed with.
    pub fn into_result(self) -> Result<Vec<Value>> {
        match (self.error, self.results) {
            (Some(error), _) => Err(error),
            (None, Some(results)) => Ok(results),
            (None, None) => Err(Error::internal("prediction has neither results nor error")),
        }
    }

    /// `{id, tag, created, results, latency, error, logs}`, where `error` is the inner OpenAI
    /// error object `{message, type, param, code}`. Values without a JSON form are an error.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        let results = match &self.results {
            Some(values) => {
                serde_json::Value::Array(values.iter().map(Value::to_json).collect::<Result<_>>()?)
            }
            None => serde_json::Value::Null,
        };
        let error = self.error.as_ref().map(|e| e.to_openai()["error"].clone());
        Ok(serde_json::json!({
            "id": self.id,
            "tag": self.tag,
            "created": self.created,
            "results": results,
            "latency": self.latency,
            "error": error,
            "logs": self.logs,
        }))
    }
}

/// Parses prediction inputs given as a JSON object of parameter names to values.
pub fn inputs_from_json(json: &str) -> Result<Inputs> {
    let parsed: serde_json::Value = crate::json::parse_one(json).map_err(|problem| {
        let message = match problem {
            crate::json::JsonProblem::Syntax(message) => message,
            crate::json::JsonProblem::Data { message, .. } => message,
        };
        Error::invalid(
            "inputs",
            format!("The inputs are not valid JSON: {message}"),
        )
    })?;
    match parsed {
        serde_json::Value::Object(map) => Ok(map.into_iter().map(|(k, v)| (k, v.into())).collect()),
        other => Err(Error::invalid(
            "inputs",
            format!(
                "inputs must be a JSON object of parameter names to values, not {}",
                json_type_name(&other)
            ),
        )),
    }
}

fn json_type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Yields one [`Prediction`] per partial output. A failure mid-stream is yielded as a
/// prediction with `error` set, and ends the stream. Dropping it cancels the prediction.
pub struct PredictionStream {
    id: String,
    tag: String,
    created: i64,
    start: Instant,
    outputs: Option<OutputStream>,
    /// Outputs that are deltas (text or audio since the last partial output), which
    /// [`last_prediction`] joins into the whole.
    deltas: Vec<usize>,
    logs: Logs,
}

impl PredictionStream {
    pub(crate) fn new(tag: &str, signature: &Signature, outputs: OutputStream, logs: Logs) -> Self {
        let deltas = signature
            .outputs
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                matches!(
                    p.annotation,
                    Annotation::TextDelta | Annotation::Audio { .. }
                )
            })
            .map(|(i, _)| i)
            .collect();
        PredictionStream {
            id: random_id("pred_"),
            tag: tag.to_string(),
            created: unix_now(),
            start: Instant::now(),
            outputs: Some(outputs),
            deltas,
            logs,
        }
    }

    fn prediction(&self, results: Option<Vec<Value>>, error: Option<Error>) -> Prediction {
        Prediction {
            id: self.id.clone(),
            tag: self.tag.clone(),
            created: self.created,
            results,
            latency: self.start.elapsed().as_secs_f64() * 1000.0,
            error,
            logs: self.logs.text(),
        }
    }
}

impl Iterator for PredictionStream {
    type Item = Prediction;

    fn next(&mut self) -> Option<Prediction> {
        let item = self.outputs.as_mut()?.next();
        match item {
            Some(Ok(outputs)) => Some(self.prediction(Some(outputs), None)),
            Some(Err(error)) => {
                self.outputs = None; // release the predictor's resources now
                Some(self.prediction(None, Some(error)))
            }
            None => {
                self.outputs = None;
                None
            }
        }
    }
}

/// Drains a stream into its final prediction: the last partial one (or the first failure),
/// with delta outputs (text, audio) joined over every partial output, so a generator's final
/// value is the whole text or audio.
pub(crate) fn last_prediction(stream: PredictionStream) -> Prediction {
    let mut fallback = stream.prediction(None, None);
    let deltas = stream.deltas.clone();
    let logs = stream.logs.clone();
    let mut joined: Vec<Option<Value>> = vec![None; deltas.len()];
    let mut last: Option<Prediction> = None;
    for prediction in stream {
        if let Some(results) = &prediction.results {
            for (slot, &i) in joined.iter_mut().zip(&deltas) {
                join(slot, results.get(i));
            }
        }
        last = Some(prediction);
    }
    let Some(mut last) = last else {
        fallback.error = Some(Error::model("the predictor produced no output"));
        fallback.logs = logs.text();
        return fallback;
    };
    last.logs = logs.text();
    if let Some(results) = last.results.as_mut() {
        for (value, &i) in joined.into_iter().zip(&deltas) {
            if let (Some(value), Some(slot)) = (value, results.get_mut(i)) {
                *slot = value;
            }
        }
    }
    last
}

/// Appends a delta to what came before it (texts concatenate, audio samples follow).
fn join(whole: &mut Option<Value>, delta: Option<&Value>) {
    match (whole.as_mut(), delta) {
        (_, None | Some(Value::Null)) => {}
        (Some(Value::String(text)), Some(Value::String(more))) => text.push_str(more),
        (Some(Value::Audio(audio)), Some(Value::Audio(more)))
            if audio.sample_rate == more.sample_rate && audio.channels == more.channels =>
        {
            audio.samples.extend_from_slice(&more.samples)
        }
        (_, Some(delta)) => *whole = Some(delta.clone()),
    }
}

type EagerFn = dyn Fn(Inputs) -> Result<Outputs> + Send + Sync;
type GeneratorFn = dyn Fn(Inputs) -> Result<OutputStream> + Send + Sync;

enum Body {
    Eager(Arc<EagerFn>),
    Generator(Box<GeneratorFn>),
}

/// A predictor made from a Rust function: register your own code next to the models.
pub struct FnPredictor {
    tag: String,
    signature: Signature,
    body: Body,
}

impl FnPredictor {
    /// An eager predictor: `f` returns the one output. It runs when the stream is first pulled.
    pub fn eager(
        tag: impl Into<String>,
        signature: Signature,
        f: impl Fn(Inputs) -> Result<Outputs> + Send + Sync + 'static,
    ) -> Self {
        FnPredictor {
            tag: tag.into(),
            signature,
            body: Body::Eager(Arc::new(f)),
        }
    }

    /// A generator: `f` returns an iterator of partial outputs, pulled one at a time.
    pub fn generator(
        tag: impl Into<String>,
        signature: Signature,
        f: impl Fn(Inputs) -> Result<OutputStream> + Send + Sync + 'static,
    ) -> Self {
        FnPredictor {
            tag: tag.into(),
            signature,
            body: Body::Generator(Box::new(f)),
        }
    }
}

impl Predictor for FnPredictor {
    fn tag(&self) -> &str {
        &self.tag
    }

    fn kind(&self) -> PredictorKind {
        match self.body {
            Body::Eager(_) => PredictorKind::Eager,
            Body::Generator(_) => PredictorKind::Generator,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, inputs: Inputs, _context: &Context) -> Result<OutputStream> {
        match &self.body {
            Body::Eager(f) => {
                let f = Arc::clone(f);
                let mut inputs = Some(inputs);
                Ok(Box::new(std::iter::from_fn(move || {
                    inputs.take().map(|i| f(i))
                })))
            }
            Body::Generator(f) => f(inputs),
        }
    }
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `prefix` + 24 random alphanumerics, for prediction and completion ids.
pub fn random_id(prefix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::with_capacity(prefix.len() + 24);
    id.push_str(prefix);
    let state = std::collections::hash_map::RandomState::new();
    let mut word = 0u64;
    for i in 0..24 {
        if i % 8 == 0 {
            let mut hasher = state.build_hasher();
            hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
            hasher.write_u128(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            word = hasher.finish();
        }
        id.push(ALPHABET[(word % ALPHABET.len() as u64) as usize] as char);
        word /= ALPHABET.len() as u64;
    }
    id
}
