//! The audio methods: speech, and transcriptions and translations of an upload.

use super::{post, Answer, Door, Gives, Operation, Param, ParamType, Spec, Streamed, Takes};
use crate::error::{Error, Result};
use crate::openai::{SpeechRequest, TranscriptionAudio, TranscriptionRequest};
use crate::Client;

/// `audio.speech.create`: whole speech. (Its HTTP route is [`AudioSpeechStream`]'s, which
/// sends the audio as it is made.)
pub struct AudioSpeechCreate;

impl Operation for AudioSpeechCreate {
    type Request = SpeechRequest;
    const SPEC: Spec = Spec {
        name: "audio.speech.create",
        summary: "Create speech, whole",
        answer: "The audio file (or every SSE event with `stream_format: sse`)",
        gives: Gives::Body,
        required: &["model", "input", "voice"],
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        SpeechRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        // The format first, as `audio.speech.stream` (and `Speech::create`) check it.
        request.format()?;
        if !request.sse()? {
            return Ok(Answer::Speech(client.audio.speech.create(&request)?));
        }
        // Every event of the stream, as `POST /v1/audio/speech` would send them.
        let stream = client.audio.speech.stream(&request)?;
        let content_type = stream.content_type();
        let mut body = Vec::new();
        for chunk in stream {
            body.extend_from_slice(&chunk?);
        }
        Ok(Answer::Body { content_type, body })
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

/// `audio.speech.stream`: speech sent as it is made, what `POST /v1/audio/speech` answers.
pub struct AudioSpeechStream;

impl Operation for AudioSpeechStream {
    type Request = SpeechRequest;
    const SPEC: Spec = Spec {
        name: "audio.speech.stream",
        summary: "Create speech",
        answer: "The audio, sent as it is synthesised (or SSE events with `stream_format: sse`)",
        gives: Gives::Audio,
        route: post("/audio/speech"),
        ..AudioSpeechCreate::SPEC
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        SpeechRequest::from_json(json)
    }

    fn run(client: &Client, request: Self::Request, _: Door) -> Result<Answer> {
        Ok(Answer::Audio(client.audio.speech.stream(&request)?))
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.model)
    }
}

/// A transcription's (or translation's) request and its audio.
fn upload(
    json: &str,
    audio: Option<TranscriptionAudio>,
) -> Result<(TranscriptionRequest, TranscriptionAudio)> {
    let request = TranscriptionRequest::from_json(json)?;
    let audio = audio.ok_or_else(|| Error::invalid("file", "The audio (`file`) is missing"))?;
    Ok((request, audio))
}

/// The upload parts both audio methods take beside `file` and `model`.
const LANGUAGE: Param = Param {
    name: "language",
    kind: ParamType::Text {
        one_of: &[],
        description: "ISO-639-1 (`fr`) or an English name (`french`); detected on a multilingual model when left out",
    },
};
const PROMPT: Param = Param {
    name: "prompt",
    kind: ParamType::TEXT,
};
const RESPONSE_FORMAT: Param = Param {
    name: "response_format",
    kind: ParamType::one_of(&crate::openai::TRANSCRIPTION_FORMATS),
};
const TEMPERATURE: Param = Param {
    name: "temperature",
    kind: ParamType::Number {
        minimum: 0,
        maximum: 1,
    },
};

/// `audio.transcriptions.create` and `audio.transcriptions.stream`.
pub struct AudioTranscriptionsCreate;

impl Operation for AudioTranscriptionsCreate {
    type Request = (TranscriptionRequest, TranscriptionAudio);
    const SPEC: Spec = Spec {
        name: "audio.transcriptions.create",
        summary: "Create a transcription",
        answer: "The transcription in its `response_format`: JSON (`json`, `verbose_json`), text (`text`, `srt`) or WebVTT (`vtt`); with `stream: true`, `transcript.text.delta` events then `transcript.text.done`",
        takes: Takes::Upload,
        gives: Gives::Body,
        required: &["file", "model"],
        route: post("/audio/transcriptions"),
        params: &[
            LANGUAGE,
            PROMPT,
            RESPONSE_FORMAT,
            TEMPERATURE,
            Param {
                name: "timestamp_granularities[]",
                kind: ParamType::TextList {
                    one_of: &["word", "segment"],
                },
            },
            Param {
                name: "stream",
                kind: ParamType::Boolean,
            },
        ],
        ..Spec::DEFAULT
    };

    fn parse(json: &str, audio: Option<TranscriptionAudio>) -> Result<Self::Request> {
        upload(json, audio)
    }

    fn run(client: &Client, (request, audio): Self::Request, _: Door) -> Result<Answer> {
        Ok(Answer::Transcription(
            client.audio.transcriptions.create(&request, audio)?,
        ))
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.0.model)
    }
}

impl Streamed for AudioTranscriptionsCreate {
    const STREAM: Spec = Spec {
        name: "audio.transcriptions.stream",
        summary: "Stream a transcription",
        answer: "`transcript.text.delta` events, then `transcript.text.done`",
        gives: Gives::Events,
        params: &[],
        ..Self::SPEC
    };

    fn wants_stream(request: &Self::Request) -> bool {
        request.0.stream == Some(true)
    }

    fn stream(client: &Client, (request, audio): Self::Request) -> Result<Answer> {
        let events = client.audio.transcriptions.stream(&request, audio)?;
        Ok(Answer::Stream(Box::new(
            events.map(|event| event.map(|e| e.to_json().to_string())),
        )))
    }
}

/// `audio.translations.create`.
pub struct AudioTranslationsCreate;

impl Operation for AudioTranslationsCreate {
    type Request = (TranscriptionRequest, TranscriptionAudio);
    const SPEC: Spec = Spec {
        name: "audio.translations.create",
        summary: "Create a translation into English (a multilingual model such as `@local/whisper-base`; an English-only model is a 400 naming it)",
        answer: "The translation in its `response_format`",
        takes: Takes::Upload,
        gives: Gives::Body,
        required: &["file", "model"],
        route: post("/audio/translations"),
        params: &[
            Param {
                name: "language",
                kind: ParamType::Text {
                    one_of: &[],
                    description: "The audio's language (ISO-639-1 `fr` or a name); detected when left out",
                },
            },
            PROMPT,
            RESPONSE_FORMAT,
            TEMPERATURE,
        ],
        ..Spec::DEFAULT
    };

    fn parse(json: &str, audio: Option<TranscriptionAudio>) -> Result<Self::Request> {
        upload(json, audio)
    }

    fn run(client: &Client, (request, audio): Self::Request, _: Door) -> Result<Answer> {
        Ok(Answer::Transcription(
            client.audio.translations.create(&request, audio)?,
        ))
    }

    fn model(request: &Self::Request) -> Option<&str> {
        Some(&request.0.model)
    }
}
