//! `audio.transcriptions.create`: audio in (an uploaded file's bytes, or raw samples), text out,
//! on any predictor whose signature has an input annotated [`Annotation::Audio`] and an output
//! annotated [`Annotation::TextDelta`]. `language`, `prompt`, `temperature` and word timestamps
//! need inputs annotated [`Annotation::TranscriptionLanguage`],
//! [`Annotation::TranscriptionPrompt`], `Generation(Temperature)` and
//! [`Annotation::TranscriptionWordTimestamps`]; `srt`, `vtt` and `verbose_json` need an output
//! annotated [`Annotation::TranscriptionSegment`].
//!
//! Response formats are OpenAI's: `json` `{text, usage}`, `text`, `srt`, `vtt` and
//! `verbose_json` `{task, language, duration, text, segments, words, usage}`; `stream: true`
//! gives `transcript.text.delta` events (one per segment) and a `transcript.text.done`.

use super::OtherFields;
use crate::audio::decode_to_mono_for;
use crate::error::{shown, Error, Result};
use crate::predict::{Annotation, Cancel, GenerationOption, Inputs, OutputStream, Signature};
use crate::registry::Registry;
use crate::value::{Audio, Value};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

/// The response formats of `audio.transcriptions`.
pub const TRANSCRIPTION_FORMATS: [&str; 5] = ["json", "text", "srt", "verbose_json", "vtt"];

/// `audio.transcriptions.create` arguments (all but `file`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptionRequest {
    pub model: String,
    /// The language of the audio (ISO-639-1, e.g. `en`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Text to guide the model's style or continue a previous segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json` or `vtt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    /// 0 to 1: the first sampling temperature (raised while a window fails Whisper's checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// `segment` and/or `word`; needs `verbose_json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_granularities: Option<Vec<String>>,
    /// Send the text as events while it is transcribed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Every other field (`include`, `chunking_strategy`, ...): rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

impl TranscriptionRequest {
    pub fn new(model: impl Into<String>) -> Self {
        TranscriptionRequest {
            model: model.into(),
            ..Default::default()
        }
    }

    pub fn response_format(mut self, format: impl Into<String>) -> Self {
        self.response_format = Some(format.into());
        self
    }

    pub fn timestamp_granularities(mut self, granularities: &[&str]) -> Self {
        self.timestamp_granularities = Some(granularities.iter().map(|g| g.to_string()).collect());
        self
    }

    pub fn language(mut self, language: impl Into<String>) -> Self {
        self.language = Some(language.into());
        self
    }

    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Parses the JSON form of the request's fields; an error names the field at fault.
    pub fn from_json(json: &str) -> Result<Self> {
        super::types::from_json(json)
    }

    /// The response format, checked (default `json`).
    pub fn format(&self) -> Result<&str> {
        match self.response_format.as_deref() {
            None => Ok("json"),
            Some(f) if TRANSCRIPTION_FORMATS.contains(&f) => Ok(f),
            Some(other) => Err(Error::invalid(
                "response_format",
                format!(
                    "Invalid value for `response_format`: '{}'; supported values are {}",
                    shown(other),
                    TRANSCRIPTION_FORMATS.map(|f| format!("'{f}'")).join(", ")
                ),
            )),
        }
    }

    /// (segments, words) asked for by `timestamp_granularities`.
    fn granularities(&self, format: &str) -> Result<(bool, bool)> {
        let Some(list) = &self.timestamp_granularities else {
            return Ok((true, false));
        };
        let param = "timestamp_granularities";
        if list.is_empty() {
            return Ok((true, false));
        }
        if let Some(bad) = list.iter().find(|g| *g != "segment" && *g != "word") {
            return Err(Error::invalid(
                param,
                format!(
                    "Invalid value in `{param}`: '{}'; supported values are 'segment' and 'word'",
                    shown(bad)
                ),
            ));
        }
        if format != "verbose_json" {
            return Err(Error::invalid(
                param,
                format!("`{param}` needs `response_format` 'verbose_json' (it is '{format}')"),
            ));
        }
        Ok((
            list.iter().any(|g| g == "segment"),
            list.iter().any(|g| g == "word"),
        ))
    }
}

/// The audio to transcribe: an uploaded file's bytes (any format [`decode_to_mono`] reads),
/// or float32 samples at any rate.
#[derive(Debug, Clone, PartialEq)]
pub enum TranscriptionAudio {
    File {
        bytes: Vec<u8>,
        /// Only a hint for the container (its extension).
        filename: Option<String>,
    },
    Samples(Audio),
}

impl TranscriptionAudio {
    pub fn file(bytes: impl Into<Vec<u8>>, filename: Option<&str>) -> Self {
        TranscriptionAudio::File {
            bytes: bytes.into(),
            filename: filename.map(str::to_string),
        }
    }

    /// Interleaved float32 samples.
    pub fn samples(samples: Vec<f32>, sample_rate: u32, channels: u16) -> Self {
        TranscriptionAudio::Samples(Audio {
            samples,
            sample_rate,
            channels,
        })
    }
}

/// The English name of a language given as a code or a name (`fr` → `french`), as
/// `verbose_json` shows it.
fn language_name(language: &str) -> String {
    use crate::backends::onnx::whisper::languages;
    match languages::code(language) {
        Some(code) => languages::name(code).to_string(),
        None => language.trim().to_ascii_lowercase(),
    }
}

/// `{type: "duration", seconds}`.
fn usage(seconds: f64) -> serde_json::Value {
    json!({"type": "duration", "seconds": (seconds * 1000.0).round() / 1000.0})
}

/// A whole transcription in the requested format.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptionResponse {
    /// `json`, `text`, `srt`, `verbose_json` or `vtt`.
    pub format: String,
    /// The response body: JSON for `json` and `verbose_json`, else the text.
    pub body: String,
    /// `application/json`, `text/plain; charset=utf-8` or `text/vtt; charset=utf-8`.
    pub content_type: &'static str,
    /// The whole text.
    pub text: String,
    /// Seconds of audio.
    pub duration: f64,
    /// The language's code (or name) the predictor reported: the one given, or the one it
    /// detected.
    pub language: Option<String>,
}

impl TranscriptionResponse {
    /// The body as JSON (`json` and `verbose_json` only).
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_str(&self.body).ok()
    }
}

/// One event of a streamed transcription.
#[derive(Debug, Clone, PartialEq)]
pub enum TranscriptionEvent {
    /// `{"type": "transcript.text.delta", "delta"}`: the text of a segment.
    Delta(String),
    /// `{"type": "transcript.text.done", "text", "usage"}`.
    Done { text: String, seconds: f64 },
}

impl TranscriptionEvent {
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            TranscriptionEvent::Delta(delta) => {
                json!({"type": "transcript.text.delta", "delta": delta})
            }
            TranscriptionEvent::Done { text, seconds } => {
                json!({"type": "transcript.text.done", "text": text, "usage": usage(*seconds)})
            }
        }
    }
}

/// `client.audio.transcriptions`.
#[derive(Clone)]
pub struct Transcriptions {
    pub(crate) registry: Arc<Registry>,
    /// What stops its calls ([`crate::Client::with_cancel`]).
    pub(crate) cancel: Cancel,
}

/// A started transcription: where its text and segments are.
struct Run {
    outputs: OutputStream,
    text: usize,
    segment: Option<usize>,
    duration: f64,
    /// Where the language the predictor reports is, if it reports one.
    language: Option<usize>,
    /// The last language it reported.
    reported_language: Option<String>,
    /// Nothing sent yet: the first text loses its leading space (Whisper's segments start
    /// with one; OpenAI's text does not).
    at_start: bool,
    /// One of the process's transcription slots, held until the run is dropped.
    _slot: super::slots::Slot,
}

impl Run {
    /// The next segment: (its text, its segment dict if the predictor gives one).
    fn next_segment(&mut self) -> Result<Option<(String, Option<serde_json::Value>)>> {
        loop {
            let Some(outputs) = self.outputs.next().transpose()? else {
                return Ok(None);
            };
            let mut text = match outputs.get(self.text) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => {
                    return Err(Error::internal(format!(
                        "the transcription predictor's text output is {}",
                        other.type_name()
                    )))
                }
            };
            if let Some(Value::String(language)) = self.language.and_then(|i| outputs.get(i)) {
                if !language.trim().is_empty() {
                    self.reported_language = Some(language.trim().to_string());
                }
            }
            let segment = match self.segment.and_then(|i| outputs.get(i)) {
                Some(Value::Null) | None => None,
                Some(value) => Some(value.to_json()?),
            };
            if self.at_start {
                text = text.trim_start().to_string();
            }
            if text.is_empty() && segment.is_none() {
                continue;
            }
            if !text.is_empty() {
                self.at_start = false;
            }
            return Ok(Some((text, segment)));
        }
    }
}

impl Transcriptions {
    /// Transcribes the whole audio and answers in the requested format. Its cancel
    /// ([`crate::Client::with_cancel`]) stops the wait for a slot, the audio's decoding and the
    /// model (between tokens), with a [`crate::ErrorKind::Cancelled`] error.
    pub fn create(
        &self,
        request: &TranscriptionRequest,
        audio: TranscriptionAudio,
    ) -> Result<TranscriptionResponse> {
        self.whole(request, audio, None)
    }

    /// A whole transcription (`task` None) or translation (`task` `translate`) in the
    /// requested format.
    pub(super) fn whole(
        &self,
        request: &TranscriptionRequest,
        audio: TranscriptionAudio,
        task: Option<&str>,
    ) -> Result<TranscriptionResponse> {
        let translate = task == Some("translate");
        if request.stream == Some(true) {
            let message = if translate {
                "audio.translations does not stream: leave `stream` out"
            } else {
                "`stream: true` asks for events: use `stream`, not `create`"
            };
            return Err(Error::invalid("stream", message));
        }
        let format = request.format()?.to_string();
        let (want_segments, want_words) = request.granularities(&format)?;
        let mut run = self.start(request, audio, &format, want_words, task)?;
        let mut text = String::new();
        let mut segments = Vec::new();
        loop {
            self.cancel.check()?;
            let Some((delta, segment)) = run.next_segment()? else {
                break;
            };
            text.push_str(&delta);
            segments.extend(segment);
        }
        let text = text.trim_end().to_string();
        let duration = run.duration;
        let (body, content_type) = match format.as_str() {
            "text" => (format!("{text}\n"), "text/plain; charset=utf-8"),
            "srt" => (super::srt(&segments), "text/plain; charset=utf-8"),
            "vtt" => (super::vtt(&segments), "text/vtt; charset=utf-8"),
            "verbose_json" => {
                let mut words = Vec::new();
                let mut shown_segments = Vec::new();
                for mut s in segments {
                    if let Some(serde_json::Value::Array(ws)) =
                        s.as_object_mut().and_then(|o| o.remove("words"))
                    {
                        for w in ws {
                            words.push(json!({
                                "word": w["word"].as_str().unwrap_or("").trim(),
                                "start": w["start"],
                                "end": w["end"],
                            }));
                        }
                    }
                    shown_segments.push(s);
                }
                // OpenAI's `language`: the English name of the audio's language, and of the
                // output's (English) for a translation.
                let language = if translate {
                    "english".to_string()
                } else {
                    run.reported_language
                        .as_deref()
                        .or(request.language.as_deref().filter(|l| !l.trim().is_empty()))
                        .map_or_else(|| "english".to_string(), language_name)
                };
                let mut body = json!({
                    "task": if translate { "translate" } else { "transcribe" },
                    "language": language,
                    "duration": (duration * 1000.0).round() / 1000.0,
                    "text": text,
                });
                if want_segments {
                    body["segments"] = serde_json::Value::Array(shown_segments);
                }
                if want_words {
                    body["words"] = serde_json::Value::Array(words);
                }
                if !translate {
                    body["usage"] = usage(duration);
                }
                (body.to_string(), "application/json")
            }
            // OpenAI's translation is `{text}` alone.
            _ if translate => (json!({ "text": text }).to_string(), "application/json"),
            _ => (
                json!({"text": text, "usage": usage(duration)}).to_string(),
                "application/json",
            ),
        };
        Ok(TranscriptionResponse {
            format,
            body,
            content_type,
            text,
            duration,
            language: run.reported_language.clone(),
        })
    }

    /// Streams `transcript.text.delta` events, one per segment as its window is decoded, then
    /// `transcript.text.done`. Its cancel ([`crate::Client::with_cancel`]) stops the call
    /// while it waits for a slot and decodes the audio (a long upload takes seconds), and the
    /// stream after (the model between tokens); so does dropping the stream.
    pub fn stream(
        &self,
        request: &TranscriptionRequest,
        audio: TranscriptionAudio,
    ) -> Result<TranscriptionStream> {
        let format = request.format()?.to_string();
        if format != "json" && format != "text" {
            return Err(Error::invalid(
                "stream",
                format!("`stream` works with `response_format` 'json' or 'text', not '{format}'"),
            ));
        }
        request.granularities(&format)?;
        let run = self.start(request, audio, &format, false, None)?;
        Ok(TranscriptionStream {
            run: Some(run),
            text: String::new(),
        })
    }

    /// Checks the request, decodes the audio, maps both onto the predictor by annotation and
    /// starts it.
    fn start(
        &self,
        request: &TranscriptionRequest,
        audio: TranscriptionAudio,
        format: &str,
        want_words: bool,
        task: Option<&str>,
    ) -> Result<Run> {
        if let Some((field, _)) = request.other.iter().find(|(_, v)| !v.is_null()) {
            return Err(Error::invalid(
                field,
                format!("Unrecognized request argument supplied: {}", shown(field)),
            ));
        }
        let model = request.model.as_str();
        if model.is_empty() {
            return Err(Error::invalid(
                "model",
                "Missing required parameter: `model`",
            ));
        }
        let predictor = self.registry.get(model)?;
        let shown_model = shown(model);
        let signature: &Signature = predictor.signature();
        let method = if task.is_some() {
            "audio.translations"
        } else {
            "audio.transcriptions"
        };
        let cannot = |what: &str| {
            Error::invalid(
                "model",
                format!(
                    "The model `{shown_model}` cannot serve {method}: its predictor has no {what}"
                ),
            )
        };
        let audio_param = signature
            .inputs
            .iter()
            .find(|p| matches!(p.annotation, Annotation::Audio { .. }))
            .ok_or_else(|| cannot("input annotated Audio"))?;
        let Annotation::Audio { sample_rate } = audio_param.annotation else {
            unreachable!("found by this annotation")
        };
        let text = signature
            .output_annotated(&Annotation::TextDelta)
            .ok_or_else(|| cannot("output annotated TextDelta"))?;
        let segment = signature.output_annotated(&Annotation::TranscriptionSegment);
        if segment.is_none() && format != "json" && format != "text" {
            return Err(Error::invalid(
                "response_format",
                format!(
                    "The model `{shown_model}` gives no segments, so no '{format}': use 'json' \
                     or 'text'"
                ),
            ));
        }
        let language = signature.outputs.iter().position(|p| {
            matches!(p.annotation, Annotation::TranscriptionLanguage)
                && p.value_type == crate::value::ValueType::String
        });
        let mut fields = vec![(audio_param.name.clone(), "file")];
        let mut inputs = Inputs::new();
        // The predictor's task input gets the task, `transcribe` too (whatever its default);
        // a translation needs one, and its errors are the model's.
        let task_param = signature
            .inputs
            .iter()
            .find(|p| matches!(p.annotation, Annotation::TranscriptionTask));
        match (task, task_param) {
            (Some(_), None) => return Err(cannot("input annotated TranscriptionTask")),
            (task, Some(param)) => {
                fields.push((param.name.clone(), "model"));
                inputs.insert(
                    param.name.clone(),
                    Value::from(task.unwrap_or("transcribe")),
                );
            }
            (None, None) => {}
        }
        // Each option's annotation as a test (`matches!`), not an `Annotation` value compared
        // with `==`: a unit variant built on the stack leaves its payload bytes unset, which
        // the optimised comparison reads (harmless, but valgrind reports it).
        type Is = fn(&Annotation) -> bool;
        let optional: [(Is, &str, Option<Value>); 4] = [
            (
                |a| matches!(a, Annotation::TranscriptionLanguage),
                "language",
                request
                    .language
                    .as_deref()
                    .filter(|l| !l.is_empty())
                    .map(Value::from),
            ),
            (
                |a| matches!(a, Annotation::TranscriptionPrompt),
                "prompt",
                request
                    .prompt
                    .as_deref()
                    .filter(|p| !p.is_empty())
                    .map(Value::from),
            ),
            (
                |a| matches!(a, Annotation::Generation(GenerationOption::Temperature)),
                "temperature",
                request.temperature.map(Value::Float),
            ),
            (
                |a| matches!(a, Annotation::TranscriptionWordTimestamps),
                "timestamp_granularities",
                want_words.then_some(Value::Bool(true)),
            ),
        ];
        for (is, field, value) in optional {
            let Some(value) = value else { continue };
            let param = signature
                .inputs
                .iter()
                .find(|p| is(&p.annotation))
                .ok_or_else(|| {
                    Error::invalid(
                        field,
                        format!("The model `{shown_model}` does not take `{field}`"),
                    )
                })?;
            fields.push((param.name.clone(), field));
            inputs.insert(param.name.clone(), value);
        }
        // Bad requests fail before the audio is decoded: the options are checked with one
        // sample standing in for the audio, by the signature and by the predictor.
        let to_openai = |e| super::common::in_openai_terms(e, &fields);
        let mut stand_in = inputs.clone();
        let one_sample = Audio {
            samples: vec![0.0],
            sample_rate,
            channels: 1,
        };
        stand_in.insert(audio_param.name.clone(), Value::Audio(one_sample));
        let stand_in = signature.validate(stand_in).map_err(to_openai)?;
        predictor.check_inputs(&stand_in).map_err(to_openai)?;
        let slot = super::slots::TRANSCRIPTION_SLOTS.take(&self.cancel)?;
        let duration;
        let samples = match audio {
            TranscriptionAudio::File { bytes, filename } => {
                let decoded =
                    decode_to_mono_for(&bytes, filename.as_deref(), sample_rate, &self.cancel)?;
                duration = decoded.duration;
                Audio {
                    samples: decoded.samples,
                    sample_rate,
                    channels: 1,
                }
            }
            TranscriptionAudio::Samples(audio) => {
                let frames = audio.samples.len() / audio.channels.max(1) as usize;
                if audio.sample_rate == 0 || frames == 0 {
                    return Err(Error::invalid(
                        "file",
                        format!(
                            "The audio has {} samples at {} Hz: there is nothing to transcribe",
                            audio.samples.len(),
                            audio.sample_rate
                        ),
                    ));
                }
                duration = frames as f64 / audio.sample_rate as f64;
                // Every predictor gets mono samples at the rate its annotation declares.
                let samples =
                    crate::audio::to_mono(audio, sample_rate, "file").map_err(to_openai)?;
                Audio {
                    samples,
                    sample_rate,
                    channels: 1,
                }
            }
        };
        inputs.insert(audio_param.name.clone(), Value::Audio(samples));
        let inputs = signature.validate(inputs).map_err(to_openai)?;
        let outputs = crate::predict::start(&predictor, inputs, &self.cancel, Default::default())
            .map_err(to_openai)?;
        Ok(Run {
            outputs,
            text,
            segment,
            language,
            reported_language: None,
            duration,
            at_start: true,
            _slot: slot,
        })
    }
}

/// The events of a streamed transcription.
pub struct TranscriptionStream {
    run: Option<Run>,
    text: String,
}

impl Iterator for TranscriptionStream {
    type Item = Result<TranscriptionEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        let run = self.run.as_mut()?;
        loop {
            match run.next_segment() {
                Ok(Some((delta, _))) if delta.is_empty() => continue,
                Ok(Some((delta, _))) => {
                    self.text.push_str(&delta);
                    return Some(Ok(TranscriptionEvent::Delta(delta)));
                }
                Ok(None) => {
                    let seconds = run.duration;
                    self.run = None;
                    return Some(Ok(TranscriptionEvent::Done {
                        text: self.text.trim_end().to_string(),
                        seconds,
                    }));
                }
                Err(error) => {
                    self.run = None;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// Transcription (claimed by an `Audio` input with no `Audio` output, or a transcription
/// annotation): a required `Audio` input, text deltas out, nothing else required.
pub(super) fn rules(tag: &str, signature: &Signature) -> Result<()> {
    use super::rules::{generation_options, nothing_else_required, output, problem};
    let is_audio =
        |p: &&crate::predict::Parameter| matches!(p.annotation, Annotation::Audio { .. });
    let audio = signature.inputs.iter().find(is_audio);
    let transcription_annotated = signature.inputs.iter().chain(&signature.outputs).any(|p| {
        matches!(
            p.annotation,
            Annotation::TranscriptionLanguage
                | Annotation::TranscriptionPrompt
                | Annotation::TranscriptionTask
                | Annotation::TranscriptionWordTimestamps
                | Annotation::TranscriptionSegment
        )
    });
    let claimed = transcription_annotated
        || (audio.is_some() && !signature.outputs.iter().any(|p| is_audio(&p)));
    if !claimed {
        return Ok(());
    }
    let method = "audio.transcriptions";
    let audio = audio.ok_or_else(|| {
        problem(
            tag,
            "inputs",
            "serves audio.transcriptions, so it needs an input annotated Audio".into(),
        )
    })?;
    if !audio.required {
        return Err(problem(
            tag,
            &audio.name,
            format!(
                "serves audio.transcriptions, so its audio `{}` must be required",
                audio.name
            ),
        ));
    }
    output(tag, signature, &Annotation::TextDelta, method)?;
    generation_options(tag, signature)?;
    nothing_else_required(tag, signature, method, &[Some(audio)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granularities_need_verbose_json() {
        let request = TranscriptionRequest::new("m").timestamp_granularities(&["word"]);
        let error = request.granularities("json").unwrap_err();
        assert_eq!(error.param.as_deref(), Some("timestamp_granularities"));
        assert_eq!(
            request.granularities("verbose_json").unwrap(),
            (false, true)
        );
        let bad = TranscriptionRequest::new("m").timestamp_granularities(&["sentence"]);
        assert!(bad.granularities("verbose_json").is_err());
        assert!(TranscriptionRequest::new("m")
            .response_format("docx")
            .format()
            .is_err());
    }
}
