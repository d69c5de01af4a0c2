//! Text to speech with a Piper voice: a VITS model on ONNX Runtime, fed espeak-ng phonemes.
//!
//! The recipe is Piper's (piper-tts 1.8): espeak-ng turns the text into IPA phonemes clause by
//! clause; a clause's punctuation is appended to its phonemes, and clauses are grouped into
//! sentences at `.`, `?` and `!`. Each sentence's phonemes become ids through the voice's
//! `phoneme_id_map` (`^` first, `$` last, the pad `_` after every phoneme; phonemes the map
//! lacks are dropped) and one model run gives its audio. The predictor is a generator: it
//! yields each sentence's audio as soon as it is synthesised, so a stream's first audio comes
//! after the first sentence, and dropping the stream stops before the next one.

use super::{environment, load_session, ort_error, Graph};
use crate::backends::espeak;
use crate::config::{Config, PredictorConfig, SpeechOptions};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::predict::{
    Annotation, Context, Inputs, Metrics, OutputStream, Parameter, Predictor, PredictorKind,
    Signature,
};
use crate::value::{Audio, Value, ValueType};
use ort::session::Session;
use ort::value::TensorRef;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Speed bounds (OpenAI's).
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 4.0;
/// Most characters of one input (OpenAI's limit).
pub const MAX_INPUT_CHARS: usize = 4096;
/// Most phonemes synthesised in one model run (about 10 s of speech). The decoder's working
/// memory grows with the length of the run (one unpunctuated 4096-character input, about
/// 3300 phonemes, took 4.9 GB in one run), so longer sentences are split at clause
/// boundaries, and clauses between words. Ordinary sentences are far shorter.
const MAX_RUN_PHONEMES: usize = 250;
/// Samples per acoustic frame of a Piper VITS decoder: what `output_tokens` counts.
const HOP_LENGTH: usize = 256;

/// The voice's `.onnx.json`, as far as synthesis needs it.
#[derive(Debug, Deserialize)]
struct VoiceConfig {
    audio: AudioConfig,
    espeak: EspeakConfig,
    inference: InferenceConfig,
    #[serde(default)]
    phoneme_type: Option<String>,
    phoneme_id_map: HashMap<String, Vec<i64>>,
    #[serde(default = "one")]
    num_speakers: u32,
    #[serde(default)]
    speaker_id_map: BTreeMap<String, i64>,
    #[serde(default)]
    dataset: Option<String>,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
struct AudioConfig {
    sample_rate: u32,
}

#[derive(Debug, Deserialize)]
struct EspeakConfig {
    voice: String,
}

#[derive(Debug, Deserialize)]
struct InferenceConfig {
    noise_scale: f32,
    length_scale: f32,
    noise_w: f32,
}

/// A loaded voice model.
struct VoiceModel {
    /// `Session::run` needs `&mut`; runs are serialised (each already uses every core).
    session: Mutex<Session>,
    config: VoiceConfig,
    /// Whether the graph takes a speaker id (`sid`).
    takes_speaker: bool,
    /// The voices, in speaker-id order; the first is the default.
    voices: Vec<(String, i64)>,
    /// How long a sentence lasts at each length scale, relative to scale 1 (see
    /// [`VoiceModel::calibrate_speed`]); measured when a speed other than 1 is first asked for.
    lengths: OnceLock<SpeedCurve>,
}

/// A Piper voice: text, voice and speed in, float32 audio out, sentence by sentence.
pub struct SpeechPredictor {
    tag: String,
    signature: Signature,
    model: Arc<VoiceModel>,
    active: Arc<AtomicUsize>,
    sentences: Arc<AtomicU64>,
    cancelled: Arc<AtomicU64>,
    /// Milliseconds of audio made since load.
    audio_ms: Arc<AtomicU64>,
    /// The weights file's size: what the session holds in memory, roughly.
    weights_bytes: u64,
}

/// Where a voice's config is: its `voice_config`, else the model path + `.json`.
pub fn voice_config_path(
    config: &Config,
    predictor: &PredictorConfig,
    options: &SpeechOptions,
) -> PathBuf {
    match &options.voice_config {
        Some(path) => config.resolve(path),
        None => {
            let mut path = config.model_path(predictor).into_os_string();
            path.push(".json");
            PathBuf::from(path)
        }
    }
}

impl SpeechPredictor {
    pub fn load(config: &Config, predictor: &PredictorConfig) -> Result<Self> {
        let tag = &predictor.tag;
        let model_path = config.model_path(predictor);
        let options = predictor.speech_options().cloned().unwrap_or_default();
        let config_path = voice_config_path(config, predictor, &options);
        for (what, path) in [("model file", &model_path), ("voice config", &config_path)] {
            super::check_file(what, path, tag)?;
        }
        let text = std::fs::read_to_string(&config_path).map_err(|e| {
            Error::model(format!(
                "Cannot read the voice config {}: {e}",
                config_path.display()
            ))
        })?;
        let voice: VoiceConfig = serde_json::from_str(&text).map_err(|e| {
            Error::model(format!(
                "{} is not a Piper voice config: {e}",
                config_path.display()
            ))
            .with_code(ErrorCode::ModelFileInvalid)
        })?;
        if voice.phoneme_type.as_deref().is_some_and(|t| t != "espeak") {
            return Err(Error::model(format!(
                "The voice {} uses `{}` phonemes; ingle reads espeak ones",
                config_path.display(),
                voice.phoneme_type.as_deref().unwrap_or_default()
            )));
        }
        for symbol in ["^", "$", "_"] {
            if !voice.phoneme_id_map.contains_key(symbol) {
                return Err(Error::model(format!(
                    "The voice config {} has no id for `{symbol}` in its phoneme_id_map",
                    config_path.display()
                )));
            }
        }
        // Fail at load, not at the first request, when espeak-ng is missing.
        espeak::load(&voice.espeak.voice)?;
        let voices: Vec<(String, i64)> = if voice.num_speakers > 1 {
            let mut voices: Vec<_> = voice.speaker_id_map.clone().into_iter().collect();
            voices.sort_by_key(|(_, id)| *id);
            voices
        } else {
            vec![(voice.dataset.clone().unwrap_or_else(|| "default".into()), 0)]
        };
        if let Some((alias, name)) = options
            .voices
            .iter()
            .find(|(_, name)| !voices.iter().any(|(v, _)| v == *name))
        {
            return Err(Error::invalid(
                format!("voices.{alias}"),
                format!(
                    "`voices.{alias}` of `{}` is `{}`, which is not a voice of the model; its \
                     voices: {}",
                    crate::error::shown(tag),
                    crate::error::shown(name),
                    names(&voices)
                ),
            ));
        }
        let threads = crate::backends::cores::capped_threads(predictor.threads, tag) as usize;
        let environment = environment(&super::runtime_library(config))?;
        let loading = || format!("Cannot load {} for `{tag}`", model_path.display());
        let session = load_session(
            &environment,
            threads,
            false,
            &loading(),
            Graph::File(&model_path),
        )?;
        let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for needed in ["input", "input_lengths", "scales"] {
            if !inputs.contains(&needed) {
                return Err(Error::model(format!(
                    "{} is not a Piper voice: it has no input `{needed}` (its inputs: {})",
                    model_path.display(),
                    inputs.join(", ")
                )));
            }
        }
        let takes_speaker = inputs.contains(&"sid");
        let model = VoiceModel {
            session: Mutex::new(session),
            config: voice,
            takes_speaker,
            voices,
            lengths: OnceLock::new(),
        };
        Ok(SpeechPredictor {
            tag: tag.clone(),
            signature: signature(
                model.voices.iter().map(|(v, _)| v.clone()).collect(),
                model.config.audio.sample_rate,
            ),
            model: Arc::new(model),
            active: Arc::default(),
            sentences: Arc::default(),
            cancelled: Arc::default(),
            audio_ms: Arc::default(),
            weights_bytes: super::file_bytes(&model_path),
        })
    }

    /// The model input of each sentence of `text`: the phoneme ids it synthesises one by one.
    pub fn phoneme_ids(&self, text: &str) -> Result<Vec<Vec<i64>>> {
        self.model.sentences(text)
    }

    /// The rate of the audio this voice produces.
    pub fn sample_rate(&self) -> u32 {
        self.model.config.audio.sample_rate
    }
}

fn names(voices: &[(String, i64)]) -> String {
    let names: Vec<&str> = voices.iter().map(|(v, _)| v.as_str()).collect();
    names.join(", ")
}

/// The signature of a speech predictor with these voices (the first is the default).
pub fn signature(voices: Vec<String>, sample_rate: u32) -> Signature {
    Signature::new(
        vec![
            Parameter::new("text", ValueType::String).describe(format!(
                "The text to speak: 1 to {MAX_INPUT_CHARS} characters."
            )),
            Parameter::new("voice", ValueType::String)
                .annotated(Annotation::AudioVoice { voices })
                .describe("The voice to speak with."),
            Parameter::new("speed", ValueType::Float)
                .default_value(1.0)
                .range(Some(MIN_SPEED), Some(MAX_SPEED))
                .annotated(Annotation::AudioSpeed {
                    min: MIN_SPEED,
                    max: MAX_SPEED,
                })
                .describe("Speaking speed: 2.0 speaks twice as fast, 0.5 half as fast."),
        ],
        vec![
            Parameter::new("audio", ValueType::Audio)
                .annotated(Annotation::Audio { sample_rate })
                .describe(
                    "float32 mono samples of the sentence synthesised since the last output.",
                ),
            Parameter::new("usage", ValueType::Dict)
                .optional()
                .annotated(Annotation::Usage)
                .describe(
                    "{input_tokens, output_tokens} on the last output: phoneme ids read, \
                     acoustic frames (256 samples) written.",
                ),
        ],
    )
}

impl VoiceModel {
    /// The sentences of `text`, as phoneme ids.
    fn sentences(&self, text: &str) -> Result<Vec<Vec<i64>>> {
        let clauses = espeak::clauses(text, &self.config.espeak.voice)?;
        let mut sentences = Vec::new();
        let mut phonemes = String::new();
        let mut flush = |phonemes: &mut String| {
            // A sentence of only punctuation has nothing to say.
            if phonemes.chars().any(|c| !" .,?!:;".contains(c)) {
                sentences.push(self.phoneme_ids(phonemes));
            }
            phonemes.clear();
        };
        let last = clauses.len().saturating_sub(1);
        for (i, clause) in clauses.iter().enumerate() {
            let clause_text = format!("{}{}", clause.phonemes, clause.terminator.punctuation);
            // A sentence too long for one run ends at a clause boundary instead.
            let length = |text: &str| text.chars().count();
            if !phonemes.is_empty() && length(&phonemes) + length(&clause_text) > MAX_RUN_PHONEMES {
                flush(&mut phonemes);
            }
            if length(&clause_text) > MAX_RUN_PHONEMES {
                // Even one clause is too long (espeak-ng cuts unpunctuated text only every
                // 800 bytes): split it between words.
                for word in clause_text.split_inclusive(' ') {
                    if !phonemes.is_empty() && length(&phonemes) + length(word) > MAX_RUN_PHONEMES {
                        flush(&mut phonemes);
                    }
                    phonemes.push_str(word);
                }
            } else {
                phonemes.push_str(&clause_text);
            }
            if clause.terminator.ends_sentence || i == last {
                flush(&mut phonemes);
            }
        }
        Ok(sentences)
    }

    /// Piper's id sequence: `^`, each phoneme followed by the pad, `$`.
    fn phoneme_ids(&self, phonemes: &str) -> Vec<i64> {
        use unicode_normalization::UnicodeNormalization;
        let map = &self.config.phoneme_id_map;
        let mut ids = map["^"].clone();
        ids.extend_from_slice(&map["_"]);
        let mut buffer = [0u8; 4];
        for phoneme in phonemes.nfd() {
            if let Some(id) = map.get(phoneme.encode_utf8(&mut buffer) as &str) {
                ids.extend_from_slice(id);
                ids.extend_from_slice(&map["_"]);
            }
        }
        ids.extend_from_slice(&map["$"]);
        ids
    }

    /// Measures how long one sentence lasts, without duration noise, at each of
    /// [`CALIBRATION_SCALES`] (six short runs, about 0.3 s, once per loaded voice).
    fn calibrate_speed(&self) -> Result<SpeedCurve> {
        let ids = self.sentences("The quick brown fox jumps over the lazy dog, then rests.")?;
        let ids = ids
            .first()
            .ok_or_else(|| Error::model("espeak-ng gave no phonemes"))?;
        let mut lengths = Vec::new();
        for scale in CALIBRATION_SCALES {
            let audio = self.run(ids, 0, [self.config.inference.noise_scale, scale, 0.0])?;
            lengths.push(audio.len() as f32);
        }
        let at_one = lengths[CALIBRATION_SCALES
            .iter()
            .position(|&s| s == 1.0)
            .unwrap_or(0)];
        Ok(SpeedCurve {
            points: CALIBRATION_SCALES
                .iter()
                .zip(&lengths)
                .map(|(&scale, &length)| (scale, length / at_one.max(1.0)))
                .collect(),
        })
    }

    /// One model run: the audio of one sentence, `speed` times as fast as the voice speaks.
    fn synthesise(&self, ids: &[i64], speaker: i64, speed: f32) -> Result<Vec<f32>> {
        let inference = &self.config.inference;
        let (scale, stretch) = if speed == 1.0 {
            (1.0, 1.0)
        } else {
            let curve = match self.lengths.get() {
                Some(curve) => curve,
                None => {
                    let curve = self.calibrate_speed()?;
                    self.lengths.get_or_init(|| curve)
                }
            };
            curve.scale_for(1.0 / speed)
        };
        let scales = [
            inference.noise_scale,
            inference.length_scale * scale,
            inference.noise_w,
        ];
        let audio = self.run(ids, speaker, scales)?;
        let audio = if stretch < 0.99 {
            crate::audio::stretch::time_stretch(&audio, stretch, self.config.audio.sample_rate)
        } else {
            audio
        };
        Ok(normalise(&audio))
    }

    /// The raw model output for `ids` with these `[noise_scale, length_scale, noise_w]`.
    fn run(&self, ids: &[i64], speaker: i64, scales: [f32; 3]) -> Result<Vec<f32>> {
        let running = "Cannot run the voice model";
        let lengths = [ids.len() as i64];
        let speakers = [speaker];
        let mut inputs = ort::inputs![
            "input" => TensorRef::from_array_view(([1, ids.len()], ids)).map_err(ort_error(running))?,
            "input_lengths" => TensorRef::from_array_view(([1], &lengths[..])).map_err(ort_error(running))?,
            "scales" => TensorRef::from_array_view(([3], &scales[..])).map_err(ort_error(running))?,
        ];
        if self.takes_speaker {
            inputs.push((
                "sid".into(),
                TensorRef::from_array_view(([1], &speakers[..]))
                    .map_err(ort_error(running))?
                    .into(),
            ));
        }
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let outputs = session.run(inputs).map_err(ort_error(running))?;
        let (_, audio) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(ort_error(running))?;
        Ok(audio.to_vec())
    }
}

/// Length scales measured at load, fastest first. Below 0.25 phonemes lose their shape (most
/// are down to one 12 ms frame), so faster speech is time-stretched instead.
const CALIBRATION_SCALES: [f32; 6] = [0.25, 0.375, 0.5, 0.75, 1.0, 1.5];

/// Sentence length against Piper's `length_scale`. The model rounds every phoneme's frame
/// count up after scaling it, so the length is not proportional to the scale:
/// `length_scale = 1 / speed` makes speed 2.0 last 0.6 of the time, not half, and no scale
/// gets below about 0.44. This curve finds the scale for a wanted length, and says how much
/// time-stretching must do past the fastest scale.
#[derive(Debug, Default)]
struct SpeedCurve {
    /// (length scale, length relative to scale 1), by increasing scale.
    points: Vec<(f32, f32)>,
}

impl SpeedCurve {
    /// (length scale, time stretch factor) that make a sentence last `ratio` of its length at
    /// speed 1.
    fn scale_for(&self, ratio: f32) -> (f32, f32) {
        let (Some(&first), Some(&last)) = (self.points.first(), self.points.last()) else {
            return (ratio, 1.0); // not calibrated: Piper's own mapping
        };
        if ratio <= first.1 {
            return (first.0, ratio / first.1);
        }
        // Between two measured points, or past the last (both straight lines).
        let pair = self
            .points
            .windows(2)
            .find(|w| ratio <= w[1].1)
            .unwrap_or(&self.points[self.points.len() - 2..]);
        let ((s0, r0), (s1, r1)) = (pair[0], pair[1]);
        if r1 <= r0 {
            return (last.0 * ratio / last.1, 1.0);
        }
        (s0 + (ratio - r0) * (s1 - s0) / (r1 - r0), 1.0)
    }
}

/// Piper's output step: scaled so the loudest sample is at full scale (silence stays silent).
fn normalise(audio: &[f32]) -> Vec<f32> {
    let peak = audio.iter().fold(0f32, |peak, x| peak.max(x.abs()));
    if peak < 1e-8 {
        return vec![0.0; audio.len()];
    }
    audio.iter().map(|x| (x / peak).clamp(-1.0, 1.0)).collect()
}

impl Predictor for SpeechPredictor {
    fn tag(&self) -> &str {
        &self.tag
    }

    fn kind(&self) -> PredictorKind {
        PredictorKind::Generator
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, inputs: Inputs, _context: &Context) -> Result<OutputStream> {
        let text = inputs.get("text").and_then(Value::as_str).unwrap_or("");
        let chars = text.chars().count();
        if text.trim().is_empty() || chars > MAX_INPUT_CHARS {
            return Err(Error::invalid(
                "text",
                format!(
                    "The text to speak must have 1 to {MAX_INPUT_CHARS} characters, not {}",
                    if text.trim().is_empty() { 0 } else { chars }
                ),
            ));
        }
        let voice = inputs.get("voice").and_then(Value::as_str).unwrap_or("");
        let speaker = match self.model.voices.iter().find(|(v, _)| v == voice) {
            Some((_, id)) => *id,
            None => {
                return Err(Error::invalid(
                    "voice",
                    format!(
                        "Unknown voice `{}`; the voices of `{}`: {}",
                        crate::error::shown(voice),
                        self.tag,
                        names(&self.model.voices)
                    ),
                ))
            }
        };
        let speed = inputs.get("speed").and_then(Value::as_f64).unwrap_or(1.0) as f32;
        let sentences = self.model.sentences(text)?;
        if sentences.is_empty() {
            return Err(Error::invalid(
                "text",
                "The text has nothing to speak (no letters or digits espeak-ng can read)",
            ));
        }
        self.active.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Synthesis {
            model: Arc::clone(&self.model),
            sentences: sentences.into_iter(),
            speaker,
            speed,
            input_tokens: 0,
            output_tokens: 0,
            done: false,
            active: Arc::clone(&self.active),
            counted: Arc::clone(&self.sentences),
            cancelled: Arc::clone(&self.cancelled),
            audio_ms: Arc::clone(&self.audio_ms),
        }))
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            active_requests: self.active.load(Ordering::Relaxed),
            queued_requests: 0,
            generated_tokens: self.sentences.load(Ordering::Relaxed),
            cancelled_requests: self.cancelled.load(Ordering::Relaxed),
            audio_output_ms: self.audio_ms.load(Ordering::Relaxed),
            memory_bytes: self.weights_bytes,
            ..Metrics::default()
        }
    }
}

/// One prediction: the sentences left to synthesise.
struct Synthesis {
    model: Arc<VoiceModel>,
    sentences: std::vec::IntoIter<Vec<i64>>,
    speaker: i64,
    speed: f32,
    input_tokens: usize,
    output_tokens: usize,
    done: bool,
    active: Arc<AtomicUsize>,
    counted: Arc<AtomicU64>,
    cancelled: Arc<AtomicU64>,
    audio_ms: Arc<AtomicU64>,
}

impl Iterator for Synthesis {
    type Item = Result<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let ids = self.sentences.next()?;
        let samples = match self.model.synthesise(&ids, self.speaker, self.speed) {
            Ok(samples) => samples,
            Err(error) => {
                self.done = true;
                return Some(Err(error));
            }
        };
        self.counted.fetch_add(1, Ordering::Relaxed);
        let sample_rate = self.model.config.audio.sample_rate.max(1) as u64;
        self.audio_ms
            .fetch_add(samples.len() as u64 * 1000 / sample_rate, Ordering::Relaxed);
        self.input_tokens += ids.len();
        self.output_tokens += samples.len().div_ceil(HOP_LENGTH);
        let last = self.sentences.len() == 0;
        self.done = last;
        let usage = if last {
            Value::Dict(crate::value::Dict::from([
                (
                    "input_tokens".to_string(),
                    Value::from(self.input_tokens as i64),
                ),
                (
                    "output_tokens".to_string(),
                    Value::from(self.output_tokens as i64),
                ),
            ]))
        } else {
            Value::Null
        };
        let audio = Audio {
            samples,
            sample_rate: self.model.config.audio.sample_rate,
            channels: 1,
        };
        Some(Ok(vec![Value::Audio(audio), usage]))
    }
}

impl Drop for Synthesis {
    fn drop(&mut self) {
        if !self.done {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
        self.active.fetch_sub(1, Ordering::Relaxed);
    }
}
