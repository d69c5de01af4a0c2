//! `audio.translations.create`: speech in any language in, English text out (Whisper's
//! `translate` task), on any predictor that serves `audio.transcriptions` and has an input
//! annotated [`crate::predict::Annotation::TranscriptionTask`], which gets `translate`.
//!
//! The request is a transcription request: OpenAI's fields (`model`, `prompt`,
//! `response_format` json, text, srt, verbose_json or vtt, `temperature`), and ingle also
//! takes `language` (the audio's, when it is known: detection is skipped) and
//! `timestamp_granularities`. It does not stream. `json` is `{text}`, and `verbose_json` says
//! `task: "translate"` and `language: "english"` (the output's), as OpenAI's do.

use super::transcription::{TranscriptionAudio, TranscriptionRequest, TranscriptionResponse};
use super::Transcriptions;
use crate::error::Result;
use crate::predict::Cancel;
use crate::registry::Registry;
use std::sync::Arc;

/// `client.audio.translations`.
#[derive(Clone)]
pub struct Translations {
    pub(crate) registry: Arc<Registry>,
    /// What stops its calls ([`crate::Client::with_cancel`]).
    pub(crate) cancel: Cancel,
}

impl Translations {
    /// Translates the whole audio into English and answers in the requested format. A model
    /// that cannot translate (an English-only Whisper) is an invalid-request error naming it.
    /// Its cancel stops it as a transcription's does.
    pub fn create(
        &self,
        request: &TranscriptionRequest,
        audio: TranscriptionAudio,
    ) -> Result<TranscriptionResponse> {
        let transcriptions = Transcriptions {
            registry: Arc::clone(&self.registry),
            cancel: self.cancel.clone(),
        };
        transcriptions.whole(request, audio, Some("translate"))
    }
}
