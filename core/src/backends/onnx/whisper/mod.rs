//! Whisper speech-to-text on ONNX Runtime, from CTranslate2 weights.
//!
//! The weights are the `model.bin` faster-whisper loads (CTranslate2's format); ingle reads it
//! (`ct2.rs`), builds an encoder graph and a decoder graph with a KV cache from it
//! (`graphs.rs`, written with the small protobuf writer in `onnx_proto.rs`) and hands them to
//! ONNX Runtime at load: nothing converts the model beforehand, and no Python is involved.
//! `mel.rs` computes Whisper's log-mel, `transcribe.rs` runs Whisper's long-form decoding and
//! `words.rs` its word timings, into the `segments.rs` types.

pub(crate) mod ct2;
mod graphs;
pub mod languages;
mod mel;
mod model;
mod onnx_proto;
mod segments;
mod transcribe;
mod words;

pub use graphs::Precision;
pub use segments::{Segment, Word};
pub use transcribe::{compression_ratio, Options, Task};

use super::environment;
use crate::config::{Config, PredictorConfig};
use crate::error::{Error, Result};
use crate::predict::{
    Annotation, Context, GenerationOption, Inputs, Metrics, OutputStream, Parameter, Predictor,
    PredictorKind, Signature,
};
use crate::value::{Value, ValueType};
use model::WhisperModel;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The rate Whisper hears at.
pub const SAMPLE_RATE: u32 = mel::SAMPLE_RATE as u32;

/// The files of a Whisper model whose `model.bin` is `model`.
pub fn whisper_files(model: &Path) -> Vec<PathBuf> {
    let dir = model.parent().unwrap_or(Path::new("."));
    vec![dir.join("config.json"), dir.join("tokenizer.json")]
}

/// Whisper: 16 kHz audio in, text out, segment by segment.
pub struct TranscriptionPredictor {
    tag: String,
    signature: Signature,
    model: Arc<WhisperModel>,
    active: Arc<AtomicUsize>,
    windows: Arc<AtomicU64>,
    cancelled: Arc<AtomicU64>,
    /// Milliseconds of audio taken in since load.
    audio_ms: AtomicU64,
    /// The weights file's size: what the sessions hold in memory, roughly.
    weights_bytes: u64,
}

/// The signature of a Whisper predictor (`multilingual`: whether it knows more than English).
pub fn signature(multilingual: bool) -> Signature {
    let language = if multilingual {
        "The language of the audio: an ISO-639-1 code (`fr`) or an English name (`french`); \
         detected on the first 30 s with speech when left out."
    } else {
        "The language of the audio: `en` (this model is English-only)."
    };
    Signature {
        inputs: vec![
            Parameter::new("audio", ValueType::Audio)
                .describe("Speech to transcribe: float32 samples (resampled to 16 kHz mono).")
                .annotated(Annotation::Audio {
                    sample_rate: SAMPLE_RATE,
                }),
            Parameter::new("language", ValueType::String)
                .optional()
                .describe(language)
                .annotated(Annotation::TranscriptionLanguage),
            Parameter::new("task", ValueType::String)
                .default_value("transcribe")
                .describe("`transcribe` (the speech in its own language) or `translate` (into English; multilingual models only).")
                .annotated(Annotation::TranscriptionTask),
            Parameter::new("prompt", ValueType::String)
                .optional()
                .describe("Text that conditions the first window: names, spelling, style.")
                .annotated(Annotation::TranscriptionPrompt),
            Parameter::new("temperature", ValueType::Float)
                .default_value(0.0)
                .range(Some(0.0), Some(1.0))
                .describe("First sampling temperature; raised by 0.2 when a window fails Whisper's checks.")
                .annotated(Annotation::Generation(GenerationOption::Temperature)),
            Parameter::new("word_timestamps", ValueType::Bool)
                .default_value(false)
                .describe("Time each word (from cross-attention alignment).")
                .annotated(Annotation::TranscriptionWordTimestamps),
        ],
        outputs: vec![
            Parameter::new("text", ValueType::String)
                .describe("The text of the segment.")
                .annotated(Annotation::TextDelta),
            Parameter::new("segment", ValueType::Dict)
                .optional()
                .describe("The segment with its times, tokens and scores (null on the last output).")
                .annotated(Annotation::TranscriptionSegment),
            Parameter::new("usage", ValueType::Dict)
                .optional()
                .describe("`{seconds}` of audio, on the last output.")
                .annotated(Annotation::Usage),
            Parameter::new("language", ValueType::String)
                .optional()
                .describe("The language's ISO-639-1 code: the one given, else the one detected (after `usage`, so the earlier outputs keep their places).")
                .annotated(Annotation::TranscriptionLanguage),
        ],
    }
}

impl TranscriptionPredictor {
    /// Loads with the default precision ([`precision`]).
    pub fn load(config: &Config, predictor: &PredictorConfig) -> Result<Self> {
        Self::load_with_precision(config, predictor, precision())
    }

    /// Loads with linear layers in `precision` (float32 reproduces CTranslate2's float32
    /// tokens; int8 is the fast default).
    pub fn load_with_precision(
        config: &Config,
        predictor: &PredictorConfig,
        precision: Precision,
    ) -> Result<Self> {
        let tag = &predictor.tag;
        let model_path = config.model_path(predictor);
        super::check_file("model file", &model_path, tag)?;
        for file in whisper_files(&model_path) {
            super::check_file("model file", &file, tag)?;
        }
        let threads = crate::backends::cores::capped_threads(predictor.threads, tag) as usize;
        let environment = environment(&super::runtime_library(config))?;
        let dir = model_path.parent().unwrap_or(Path::new("."));
        let model = WhisperModel::load(&environment, dir, threads, precision)?;
        Ok(TranscriptionPredictor {
            tag: tag.clone(),
            signature: signature(model.languages.multilingual()),
            model: Arc::new(model),
            active: Arc::default(),
            windows: Arc::default(),
            cancelled: Arc::default(),
            audio_ms: AtomicU64::new(0),
            weights_bytes: super::file_bytes(&model_path),
        })
    }
}

/// The precision of the linear layers: int8 unless `INGLE_WHISPER_PRECISION=float32`.
/// int8 runs beckett.wav in 0.15 s against 0.43 s in float32 (2 cores) with the same text;
/// float32 reproduces CTranslate2's float32 tokens exactly (docs/architecture.md).
pub fn precision() -> Precision {
    match std::env::var("INGLE_WHISPER_PRECISION").as_deref() {
        Ok("float32") => Precision::Float32,
        _ => Precision::Int8,
    }
}

/// `audio` as mono 16 kHz samples (averaging channels, resampling with a band-limited
/// resampler).
pub fn to_mono_16k(audio: crate::value::Audio, param: &str) -> Result<Vec<f32>> {
    crate::audio::to_mono(audio, SAMPLE_RATE, param)
}

impl TranscriptionPredictor {
    /// The language (its code) and the task the inputs ask for, checked against the model.
    fn language_and_task(&self, inputs: &Inputs) -> Result<(Option<String>, Task)> {
        let languages = &self.model.languages;
        let language = match inputs
            .get("language")
            .and_then(Value::as_str)
            .map(str::trim)
        {
            None | Some("") => None,
            Some(language) => Some(languages.resolve(language, "language")?.to_string()),
        };
        let task = match inputs.get("task").and_then(Value::as_str) {
            None | Some("transcribe") => Task::Transcribe,
            Some("translate") if languages.multilingual() => Task::Translate,
            Some("translate") => {
                return Err(Error::invalid(
                    "task",
                    format!(
                        "The model `{}` is an English-only Whisper (a `.en` model): it cannot \
                         translate; use a multilingual model such as `@local/whisper-base`, or \
                         audio.transcriptions for English audio",
                        crate::error::shown(&self.tag)
                    ),
                ))
            }
            Some(other) => {
                return Err(Error::invalid(
                    "task",
                    format!(
                        "`task` is `{}`; it is `transcribe` or `translate`",
                        crate::error::shown(other)
                    ),
                ))
            }
        };
        Ok((language, task))
    }
}

impl Predictor for TranscriptionPredictor {
    fn tag(&self) -> &str {
        &self.tag
    }

    fn kind(&self) -> PredictorKind {
        PredictorKind::Generator
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn check_inputs(&self, inputs: &Inputs) -> Result<()> {
        self.language_and_task(inputs).map(drop)
    }

    fn predict(&self, mut inputs: Inputs, context: &Context) -> Result<OutputStream> {
        let Some(Value::Audio(audio)) = inputs.remove("audio") else {
            return Err(Error::invalid(
                "audio",
                "`audio` is required: float32 samples",
            ));
        };
        let (language, task) = self.language_and_task(&inputs)?;
        let samples = to_mono_16k(audio, "audio")?;
        if samples.is_empty() {
            return Err(Error::invalid("audio", "`audio` has no samples"));
        }
        let options = Options {
            language,
            task,
            temperature: inputs
                .get("temperature")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            prompt: inputs
                .get("prompt")
                .and_then(Value::as_str)
                .map(str::to_string),
            word_timestamps: matches!(inputs.get("word_timestamps"), Some(Value::Bool(true))),
        };
        let transcriber = transcribe::Transcriber::new(
            Arc::clone(&self.model),
            samples,
            options,
            context.cancel.clone(),
        );
        self.active.fetch_add(1, Ordering::Relaxed);
        self.audio_ms.fetch_add(
            (transcriber.duration() * 1000.0).round() as u64,
            Ordering::Relaxed,
        );
        Ok(Box::new(Transcription {
            duration: transcriber.duration(),
            transcriber,
            finished: false,
            counted_windows: 0,
            active: Arc::clone(&self.active),
            windows: Arc::clone(&self.windows),
            cancelled: Arc::clone(&self.cancelled),
        }))
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            active_requests: self.active.load(Ordering::Relaxed),
            queued_requests: 0,
            generated_tokens: self.windows.load(Ordering::Relaxed),
            cancelled_requests: self.cancelled.load(Ordering::Relaxed),
            audio_input_ms: self.audio_ms.load(Ordering::Relaxed),
            memory_bytes: self.weights_bytes,
            ..Metrics::default()
        }
    }
}

/// A segment as the predictor outputs it (and `verbose_json` shows it).
pub fn segment_value(segment: &Segment) -> Value {
    let round = |x: f64| Value::Float((x * 1e6).round() / 1e6);
    let words: Vec<Value> = segment
        .words
        .iter()
        .map(|w| {
            Value::Dict(crate::value::Dict::from([
                ("word".to_string(), Value::from(w.word.clone())),
                ("start".to_string(), round(w.start)),
                ("end".to_string(), round(w.end)),
                ("probability".to_string(), round(w.probability)),
            ]))
        })
        .collect();
    Value::Dict(crate::value::Dict::from([
        ("id".to_string(), Value::from(segment.id as i64)),
        ("seek".to_string(), Value::from(segment.seek as i64)),
        ("start".to_string(), round(segment.start)),
        ("end".to_string(), round(segment.end)),
        ("text".to_string(), Value::from(segment.text.clone())),
        (
            "tokens".to_string(),
            Value::List(
                segment
                    .tokens
                    .iter()
                    .map(|&t| Value::from(t as i64))
                    .collect(),
            ),
        ),
        ("temperature".to_string(), round(segment.temperature)),
        ("avg_logprob".to_string(), round(segment.avg_logprob)),
        (
            "compression_ratio".to_string(),
            round(segment.compression_ratio),
        ),
        ("no_speech_prob".to_string(), round(segment.no_speech_prob)),
        ("words".to_string(), Value::List(words)),
    ]))
}

/// One prediction: segments as windows are decoded, then a last output with the usage.
struct Transcription {
    transcriber: transcribe::Transcriber,
    duration: f64,
    finished: bool,
    counted_windows: usize,
    active: Arc<AtomicUsize>,
    windows: Arc<AtomicU64>,
    cancelled: Arc<AtomicU64>,
}

impl Transcription {
    /// The language output: its code once known (given, or detected on the first window with
    /// speech), else null.
    fn language(&self) -> Value {
        self.transcriber
            .language()
            .map_or(Value::Null, |code| Value::from(code.to_string()))
    }
}

impl Iterator for Transcription {
    type Item = Result<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        let next = self.transcriber.next();
        let windows = self.transcriber.windows;
        self.windows
            .fetch_add((windows - self.counted_windows) as u64, Ordering::Relaxed);
        self.counted_windows = windows;
        match next {
            Some(Ok(segment)) => Some(Ok(vec![
                Value::from(segment.text.clone()),
                segment_value(&segment),
                Value::Null,
                self.language(),
            ])),
            Some(Err(error)) => {
                self.finished = true;
                // Stopped by its cancel (the decoder asks it between tokens): a cancellation.
                if error.kind == crate::ErrorKind::Cancelled {
                    self.cancelled.fetch_add(1, Ordering::Relaxed);
                }
                Some(Err(error))
            }
            None => {
                self.finished = true;
                let usage = Value::Dict(crate::value::Dict::from([(
                    "seconds".to_string(),
                    Value::Float(self.duration),
                )]));
                Some(Ok(vec![
                    Value::from(String::new()),
                    Value::Null,
                    usage,
                    self.language(),
                ]))
            }
        }
    }
}

impl Drop for Transcription {
    fn drop(&mut self) {
        if !self.finished {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
        self.active.fetch_sub(1, Ordering::Relaxed);
    }
}
