//! `audio.speech.create`: text in, encoded audio out, on any predictor whose signature has a
//! required string input without annotation (the text), an input annotated
//! [`Annotation::AudioVoice`] and an output annotated [`Annotation::Audio`]; `speed` needs an
//! input annotated [`Annotation::AudioSpeed`].
//!
//! OpenAI's voice names (`alloy`, ...) are accepted by every speech model: each maps to the voice
//! the config gives it (`voices = { alloy = "..." }`), else to the model's default voice (the
//! first of its [`Annotation::AudioVoice`] list).

use super::OtherFields;
use crate::audio::{AudioFormat, Encoder};
use crate::error::{shown, Error, Result};
use crate::predict::{Annotation, Cancel, Inputs, Logs, OutputStream, Parameter};
use crate::registry::Registry;
use crate::value::{Value, ValueType};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The voices of the OpenAI API, accepted by every speech model.
pub const OPENAI_VOICES: [&str; 13] = [
    "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse",
    "marin", "cedar",
];
/// Most characters of `input` (OpenAI's limit).
pub const MAX_SPEECH_INPUT: usize = 4096;

/// `audio.speech.create` arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeechRequest {
    pub model: String,
    /// The text to speak: 1 to 4096 characters.
    #[serde(default)]
    pub input: Option<String>,
    /// A voice of the model, or an OpenAI voice name.
    #[serde(default)]
    pub voice: Option<String>,
    /// 0.25 to 4.0; default 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// `mp3` (default), `opus`, `aac`, `flac`, `wav` or `pcm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
    /// `audio` (default: the encoded bytes) or `sse` (server-sent events of base64 audio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_format: Option<String>,
    /// How to speak; only a predictor that takes instructions accepts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Every other field: rejected by name.
    #[serde(flatten)]
    pub other: OtherFields,
}

impl SpeechRequest {
    pub fn new(
        model: impl Into<String>,
        input: impl Into<String>,
        voice: impl Into<String>,
    ) -> Self {
        SpeechRequest {
            model: model.into(),
            input: Some(input.into()),
            voice: Some(voice.into()),
            ..Default::default()
        }
    }

    pub fn speed(mut self, speed: f64) -> Self {
        self.speed = Some(speed);
        self
    }

    pub fn response_format(mut self, format: impl Into<String>) -> Self {
        self.response_format = Some(format.into());
        self
    }

    pub fn stream_format(mut self, format: impl Into<String>) -> Self {
        self.stream_format = Some(format.into());
        self
    }

    /// Parses the JSON body of a request; an error names the field at fault.
    pub fn from_json(json: &str) -> Result<Self> {
        super::types::from_json(json)
    }

    /// The requested audio format (default mp3).
    pub fn format(&self) -> Result<AudioFormat> {
        match self.response_format.as_deref() {
            None => Ok(AudioFormat::Mp3),
            Some(name) => AudioFormat::parse(name),
        }
    }

    /// Whether a stream is server-sent events (`stream_format: "sse"`) rather than bytes.
    pub fn sse(&self) -> Result<bool> {
        match self.stream_format.as_deref() {
            None | Some("audio") => Ok(false),
            Some("sse") => Ok(true),
            Some(other) => Err(Error::invalid(
                "stream_format",
                format!(
                    "Invalid value for `stream_format`: '{}'; supported values are 'audio' and \
                     'sse'",
                    shown(other)
                ),
            )),
        }
    }
}

/// The whole response of `create`: the encoded audio and its content type, and the samples it
/// was encoded from.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechAudio {
    pub bytes: Vec<u8>,
    pub content_type: &'static str,
    pub format: AudioFormat,
    /// The rate of the encoded audio (24000 for `pcm` and `opus`, else the model's).
    pub sample_rate: u32,
    /// The model's float32 samples at the model's rate, before encoding.
    pub raw: SpeechSamples,
}

/// Raw audio: float32 samples, interleaved when `channels > 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechSamples {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    pub channels: u16,
}

/// `{input_tokens, output_tokens, total_tokens}` of the `speech.audio.done` event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeechUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

/// `client.audio`.
#[derive(Clone)]
pub struct AudioApi {
    pub speech: Speech,
    pub transcriptions: super::Transcriptions,
    pub translations: super::Translations,
}

impl AudioApi {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        AudioApi {
            speech: Speech {
                registry: Arc::clone(&registry),
                cancel: Cancel::default(),
            },
            transcriptions: super::Transcriptions {
                registry: Arc::clone(&registry),
                cancel: Cancel::default(),
            },
            translations: super::Translations {
                registry,
                cancel: Cancel::default(),
            },
        }
    }

    /// Its calls stopped by `cancel` (see [`crate::Client::with_cancel`]).
    pub(crate) fn with_cancel(&self, cancel: &Cancel) -> Self {
        let mut audio = self.clone();
        audio.speech.cancel = cancel.clone();
        audio.transcriptions.cancel = cancel.clone();
        audio.translations.cancel = cancel.clone();
        audio
    }
}

/// `client.audio.speech`.
#[derive(Clone)]
pub struct Speech {
    registry: Arc<Registry>,
    cancel: Cancel,
}

impl Speech {
    /// Synthesises the whole input and encodes it (headers with exact lengths). Its cancel
    /// ([`crate::Client::with_cancel`]) stops it before the next sentence.
    pub fn create(&self, request: &SpeechRequest) -> Result<SpeechAudio> {
        let format = request.format()?;
        request.sse()?;
        let raw = self.create_samples(request)?;
        let mono = to_mono(&raw.samples, raw.channels);
        let sample_rate = format.output_rate(raw.sample_rate);
        let bytes = crate::audio::encode(format, raw.sample_rate, &mono)?;
        Ok(SpeechAudio {
            bytes,
            content_type: format.content_type(),
            format,
            sample_rate,
            raw,
        })
    }

    /// The same request answered with the raw samples, not encoded (`response_format` and
    /// `stream_format` are checked but have nothing to choose).
    pub fn create_samples(&self, request: &SpeechRequest) -> Result<SpeechSamples> {
        request.format()?;
        request.sse()?;
        let mut run = self.start(request)?;
        let mut samples = Vec::new();
        let mut rate_channels = None;
        loop {
            self.cancel.check()?;
            let Some(audio) = run.next_audio()? else {
                break;
            };
            rate_channels.get_or_insert((audio.sample_rate, audio.channels));
            samples.extend_from_slice(&audio.samples);
        }
        let (sample_rate, channels) =
            rate_channels.ok_or_else(|| Error::model("the speech predictor produced no audio"))?;
        Ok(SpeechSamples {
            samples,
            sample_rate,
            channels,
        })
    }

    /// Streams the audio as it is synthesised: encoded bytes sentence by sentence (streaming
    /// forms of the formats), or, with `stream_format: "sse"`, server-sent events
    /// `speech.audio.delta` (base64 audio) then `speech.audio.done` (usage). Dropping the
    /// stream stops synthesis before the next sentence.
    pub fn stream(&self, request: &SpeechRequest) -> Result<SpeechStream> {
        let format = request.format()?;
        let sse = request.sse()?;
        let run = self.start(request)?;
        Ok(SpeechStream {
            run: Some(run),
            format,
            sse,
            encoder: None,
            finished: false,
        })
    }

    /// Checks the request, maps it onto the predictor by annotation, and starts it.
    fn start(&self, request: &SpeechRequest) -> Result<Run> {
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
        let input = request
            .input
            .as_deref()
            .ok_or_else(|| Error::invalid("input", "Missing required parameter: `input`"))?;
        let chars = input.chars().count();
        if chars == 0 || chars > MAX_SPEECH_INPUT {
            return Err(Error::invalid(
                "input",
                format!(
                    "Invalid value for `input`: it has {chars} characters; it must have 1 to \
                     {MAX_SPEECH_INPUT}"
                ),
            ));
        }
        let voice = request
            .voice
            .as_deref()
            .ok_or_else(|| Error::invalid("voice", "Missing required parameter: `voice`"))?;
        let predictor = self.registry.get(model)?;
        let shown_model = shown(model);
        let signature = predictor.signature();
        let cannot = |what: &str| {
            Error::invalid(
                "model",
                format!(
                    "The model `{shown_model}` cannot serve audio.speech: its predictor has no \
                     {what}"
                ),
            )
        };
        let texts: Vec<&Parameter> = signature
            .inputs
            .iter()
            .filter(|p| {
                p.required
                    && p.value_type == ValueType::String
                    && p.annotation == Annotation::Generic
            })
            .collect();
        let [text] = texts[..] else {
            return Err(cannot(
                "single text input (a required string input without annotation)",
            ));
        };
        let output = signature
            .outputs
            .iter()
            .position(|p| matches!(p.annotation, Annotation::Audio { .. }))
            .ok_or_else(|| cannot("output annotated Audio"))?;
        let mut fields = vec![(text.name.clone(), "input")];
        let mut inputs = Inputs::from([(text.name.clone(), Value::from(input))]);

        let voice_param = signature
            .inputs
            .iter()
            .find(|p| matches!(p.annotation, Annotation::AudioVoice { .. }))
            .ok_or_else(|| {
                Error::invalid(
                    "voice",
                    format!("The model `{shown_model}` does not take a `voice`"),
                )
            })?;
        let Annotation::AudioVoice { voices } = &voice_param.annotation else {
            unreachable!("found by this annotation")
        };
        let chosen = if voices.iter().any(|v| v == voice) {
            voice.to_string()
        } else if OPENAI_VOICES.contains(&voice) {
            match self.registry.voice_alias(model, voice) {
                Some(alias) => alias,
                None => voices.first().cloned().ok_or_else(|| {
                    Error::invalid(
                        "voice",
                        format!("The model `{shown_model}` lists no voices"),
                    )
                })?,
            }
        } else {
            return Err(Error::invalid(
                "voice",
                format!(
                    "Unknown voice `{}` for `{shown_model}`; its voices: {}, and the OpenAI voices \
                     {}",
                    shown(voice),
                    voices.join(", "),
                    OPENAI_VOICES.join(", ")
                ),
            ));
        };
        fields.push((voice_param.name.clone(), "voice"));
        inputs.insert(voice_param.name.clone(), Value::from(chosen));

        if let Some(speed) = request.speed {
            let param = signature
                .inputs
                .iter()
                .find(|p| matches!(p.annotation, Annotation::AudioSpeed { .. }))
                .ok_or_else(|| {
                    Error::invalid(
                        "speed",
                        format!("The model `{shown_model}` does not take a `speed`"),
                    )
                })?;
            if let Annotation::AudioSpeed { min, max } = param.annotation {
                if !(min..=max).contains(&speed) {
                    return Err(Error::invalid(
                        "speed",
                        format!(
                            "Invalid value for `speed`: {speed}; it must be between {min} and {max}"
                        ),
                    ));
                }
            }
            fields.push((param.name.clone(), "speed"));
            inputs.insert(param.name.clone(), Value::Float(speed));
        }
        // No annotation means instructions: no predictor can take them yet, and ignoring them
        // would change what the caller asked for without saying so.
        if request
            .instructions
            .as_deref()
            .is_some_and(|i| !i.is_empty())
        {
            return Err(Error::invalid(
                "instructions",
                format!("The model `{shown_model}` does not take `instructions`"),
            ));
        }
        let to_openai = |e| super::common::in_openai_terms(e, &fields);
        let inputs = signature.validate(inputs).map_err(to_openai)?;
        let outputs = crate::predict::start(&predictor, inputs, &self.cancel, Logs::default())
            .map_err(to_openai)?;
        Ok(Run {
            outputs,
            audio: output,
            usage: signature.output_annotated(&Annotation::Usage),
            last_usage: None,
        })
    }
}

/// A started prediction and where its audio and usage are.
struct Run {
    outputs: OutputStream,
    audio: usize,
    usage: Option<usize>,
    last_usage: Option<SpeechUsage>,
}

impl Run {
    /// The next partial audio; `None` when the predictor is done.
    fn next_audio(&mut self) -> Result<Option<crate::value::Audio>> {
        loop {
            let Some(outputs) = self.outputs.next().transpose()? else {
                return Ok(None);
            };
            if let Some(usage) = self
                .usage
                .and_then(|i| outputs.get(i))
                .and_then(Value::as_dict)
            {
                let count = |key: &str| usage.get(key).and_then(Value::as_i64).unwrap_or(0) as u64;
                let (input, output) = (count("input_tokens"), count("output_tokens"));
                self.last_usage = Some(SpeechUsage {
                    input_tokens: input,
                    output_tokens: output,
                    total_tokens: input + output,
                });
            }
            match outputs.into_iter().nth(self.audio) {
                Some(Value::Audio(audio)) if audio.channels > 0 && audio.sample_rate > 0 => {
                    return Ok(Some(audio))
                }
                Some(Value::Null) => continue,
                other => {
                    return Err(Error::internal(format!(
                        "the speech predictor's audio output is not audio: {}",
                        other.as_ref().map_or("nothing", Value::type_name)
                    )))
                }
            }
        }
    }
}

/// Interleaved samples averaged to one channel (the encoders write mono).
fn to_mono(samples: &[f32], channels: u16) -> Vec<f32> {
    if channels <= 1 {
        return samples.to_vec();
    }
    let mut mono = Vec::with_capacity(samples.len() / channels as usize);
    crate::audio::down_mix_into(samples, channels.into(), &mut mono);
    mono
}

/// The chunks of a streamed speech response: encoded audio bytes, or SSE-framed events
/// (`data: {...}\n\n`) when the request asked for `stream_format: "sse"`.
pub struct SpeechStream {
    run: Option<Run>,
    format: AudioFormat,
    sse: bool,
    encoder: Option<Encoder>,
    finished: bool,
}

impl SpeechStream {
    /// `text/event-stream` for SSE, else the audio format's.
    pub fn content_type(&self) -> &'static str {
        if self.sse {
            "text/event-stream"
        } else {
            self.format.content_type()
        }
    }

    pub fn format(&self) -> AudioFormat {
        self.format
    }

    /// Whether the chunks are SSE events (`stream_format: "sse"`) rather than audio bytes.
    pub fn is_sse(&self) -> bool {
        self.sse
    }

    /// Bytes as the caller receives them: raw, or wrapped in a delta event.
    fn deliver(&self, bytes: Vec<u8>) -> Vec<u8> {
        if !self.sse {
            return bytes;
        }
        let event = serde_json::json!({
            "type": "speech.audio.delta",
            "audio": base64::engine::general_purpose::STANDARD.encode(&bytes),
        });
        format!("data: {event}\n\n").into_bytes()
    }

    fn step(&mut self) -> Result<Option<Vec<u8>>> {
        let Some(run) = self.run.as_mut() else {
            return Ok(None);
        };
        while let Some(audio) = run.next_audio()? {
            let encoder = match &mut self.encoder {
                Some(encoder) => encoder,
                None => self
                    .encoder
                    .insert(Encoder::new(self.format, audio.sample_rate, true)?),
            };
            let bytes = encoder.push(&to_mono(&audio.samples, audio.channels))?;
            if !bytes.is_empty() {
                return Ok(Some(self.deliver(bytes)));
            }
        }
        // The predictor is done: flush the encoder, then (SSE) say so with the usage.
        let usage = run.last_usage.unwrap_or_default();
        self.run = None;
        let tail = match self.encoder.as_mut() {
            Some(encoder) => encoder.finish()?,
            None => return Err(Error::model("the speech predictor produced no audio")),
        };
        let mut out = if tail.is_empty() {
            Vec::new()
        } else {
            self.deliver(tail)
        };
        if self.sse {
            let done = serde_json::json!({"type": "speech.audio.done", "usage": usage});
            out.extend_from_slice(format!("data: {done}\n\n").as_bytes());
        }
        Ok((!out.is_empty()).then_some(out))
    }
}

impl Iterator for SpeechStream {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Result<Vec<u8>>> {
        if self.finished {
            return None;
        }
        match self.step() {
            Ok(Some(bytes)) => Some(Ok(bytes)),
            Ok(None) => {
                self.finished = true;
                None
            }
            Err(error) => {
                // Release the predictor now; a failed stream yields nothing more.
                self.finished = true;
                self.run = None;
                Some(Err(error))
            }
        }
    }
}

/// Speech (claimed by an `AudioVoice` or `AudioSpeed` input, or an `Audio` output with no
/// `Audio` input): one required string input without annotation (the text), a required
/// `AudioVoice` input, an `AudioSpeed` input with a default, an output annotated `Audio`.
pub(super) fn rules(tag: &str, signature: &crate::predict::Signature) -> Result<()> {
    use super::rules::{nothing_else_required, problem};
    let find = |inputs: bool, f: fn(&Annotation) -> bool| {
        let params = if inputs {
            &signature.inputs
        } else {
            &signature.outputs
        };
        params.iter().find(|p| f(&p.annotation))
    };
    let is_audio = |a: &Annotation| matches!(a, Annotation::Audio { .. });
    let voice = find(true, |a| matches!(a, Annotation::AudioVoice { .. }));
    let speed = find(true, |a| matches!(a, Annotation::AudioSpeed { .. }));
    let audio_out = find(false, is_audio);
    let claimed = voice.is_some()
        || speed.is_some()
        || (audio_out.is_some() && find(true, is_audio).is_none());
    if !claimed {
        return Ok(());
    }
    let method = "audio.speech";
    let texts: Vec<&Parameter> = signature
        .inputs
        .iter()
        .filter(|p| p.value_type == ValueType::String && p.annotation == Annotation::Generic)
        .collect();
    let text = match texts.iter().filter(|p| p.required).count() {
        1 => texts.iter().find(|p| p.required).copied(),
        _ => None,
    }
    .ok_or_else(|| {
        problem(
            tag,
            texts.first().map_or("inputs", |p| p.name.as_str()),
            format!(
                "serves audio.speech, so it needs exactly one required string input without \
                 annotation (the text to speak); it has {}",
                match texts.len() {
                    0 => "none".to_string(),
                    _ => texts
                        .iter()
                        .map(|p| format!(
                            "`{}`{}",
                            p.name,
                            if p.required { "" } else { " (optional)" }
                        ))
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            ),
        )
    })?;
    let voice = voice.ok_or_else(|| {
        problem(
            tag,
            "inputs",
            "serves audio.speech, so it needs a required input annotated AudioVoice".into(),
        )
    })?;
    if !voice.required {
        return Err(problem(
            tag,
            &voice.name,
            format!(
                "serves audio.speech, so its voice `{}` must be required (no default)",
                voice.name
            ),
        ));
    }
    if let Some(speed) = speed.filter(|p| p.default.is_none()) {
        return Err(problem(
            tag,
            &speed.name,
            format!(
                "declares `{}` (AudioSpeed) without a default: callers may leave `speed` out",
                speed.name
            ),
        ));
    }
    if audio_out.is_none() {
        return Err(problem(
            tag,
            "outputs",
            "serves audio.speech, so it needs an output annotated Audio".into(),
        ));
    }
    nothing_else_required(tag, signature, method, &[Some(text), Some(voice)])
}
