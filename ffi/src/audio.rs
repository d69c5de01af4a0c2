//! Audio at the C ABI: speech (encoded bytes, raw samples, streamed) and transcription (a file's
//! bytes or raw samples, whole or streamed).

use crate::call::{
    audio_callback_arg, c_string_lossy, callback_arg, client_arg, deliver, ffi_call, give_slice,
    out_arg, str_arg, take_slice, Failure, FfiResult,
};
use crate::methods::unexpected;
use crate::{IngleAudioCallback, IngleChunkCallback, IngleClient, IngleStatus};
use ingle_core::methods::{self, Answer};
use ingle_core::openai::{
    SpeechRequest, TranscriptionAudio, TranscriptionRequest, TranscriptionResponse,
};
use ingle_core::Error;
use std::ffi::{c_char, c_void, CString};

/// Speech as an audio file: the encoded bytes of `ingle_audio_speech_create`, e.g. a whole
/// `.wav` or `.mp3` file; for a request with `"stream_format": "sse"`, the text of its
/// server-sent events. Free it, `data` included, with one call to `ingle_speech_audio_free`.
#[repr(C)]
pub struct IngleSpeechAudio {
    /// `len` bytes of the encoded audio (the request's `response_format`), or of the SSE events'
    /// text (not NUL-terminated), owned by the struct.
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
    /// The MIME type the OpenAI API answers with: `"audio/mpeg"` (mp3), `"audio/ogg"` (opus),
    /// `"audio/aac"`, `"audio/flac"`, `"audio/wav"` or `"audio/pcm"`; `"text/event-stream"` for
    /// SSE. NUL-terminated, owned by the struct.
    pub content_type: *const c_char,
    /// The sample rate of the encoded audio in Hz: 24000 for `pcm` (16-bit little-endian mono,
    /// as OpenAI sends it) and `opus`, otherwise the model's (22050 for the default voice); 0
    /// for server-sent events.
    pub sample_rate: u32,
}

/// Speech as numbers: the float32 samples the model produced, before any encoding. From
/// `ingle_audio_speech_create_samples`; free it, `samples` included, with one call to
/// `ingle_speech_samples_free`.
#[repr(C)]
pub struct IngleSpeechSamples {
    /// `frames * channels` floats in [-1, 1], interleaved when `channels > 1`, owned by the
    /// struct.
    pub samples: *const f32,
    /// Samples per channel: the duration is `frames / sample_rate` seconds.
    pub frames: usize,
    /// 1 for the default voice.
    pub channels: u16,
    /// In Hz, the model's own rate (22050 for the default voice).
    pub sample_rate: u32,
}

/// A transcription: the response body of `ingle_audio_transcriptions_create` (or
/// `_create_samples`) in the request's `response_format`, exactly as the OpenAI API sends it,
/// with its content type. Free it, strings included, with one call to
/// `ingle_transcription_free`.
#[repr(C)]
pub struct IngleTranscription {
    /// The body, NUL-terminated, owned by the struct: the JSON text of `{"text", "usage"}` for
    /// `json` (the default) and of `{"task", "language", "duration", "text", "segments",
    /// "words", "usage"}` for `verbose_json`; the text and a newline for `text`; SubRip cues
    /// for `srt`, WebVTT for `vtt`.
    pub body: *const c_char,
    /// The length of `body` in bytes, without the NUL.
    pub len: usize,
    /// The MIME type the OpenAI API answers with: `"application/json"` (json, verbose_json),
    /// `"text/plain; charset=utf-8"` (text, srt) or `"text/vtt; charset=utf-8"` (vtt).
    /// NUL-terminated, owned by the struct.
    pub content_type: *const c_char,
    /// The transcribed text alone, whatever the format (the `text` of the JSON), UTF-8,
    /// NUL-terminated, owned by the struct.
    pub text: *const c_char,
    /// Seconds of audio transcribed.
    pub duration: f64,
}

/// Speech: `request_json` is an OpenAI speech request (`{"model": "@local/piper-en-us-joe-medium",
/// "input": "Hello there.", "voice": "alloy", "response_format": "wav", "speed": 1.0}`; `voice` is
/// one of the model's voices (`"joe"`) or any OpenAI voice name, `response_format` is `mp3`
/// (default), `opus`, `aac`, `flac`, `wav` or `pcm`, `speed` 0.25 to 4). `*out` receives the whole
/// encoded file (headers with exact lengths), to free with `ingle_speech_audio_free` (NULL on
/// failure); with `"stream_format": "sse"`, every server-sent event of
/// `ingle_audio_speech_stream` (`text/event-stream`, `sample_rate` 0). Errors name the field
/// at fault in `ingle_last_error_json()`'s `param`.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_speech_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out: *mut *mut IngleSpeechAudio,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let request = str_arg(request_json, "request_json")?;
        let (bytes, content_type, sample_rate) =
            match methods::method("audio.speech.create")?.call(client, request, None)? {
                Answer::Speech(audio) => (audio.bytes, audio.content_type, audio.sample_rate),
                Answer::Body { content_type, body } => (body, content_type, 0),
                other => return Err(unexpected("audio.speech.create", &other)),
            };
        let content_type = c_string_lossy(content_type.to_string()).into_raw();
        let (data, len) = give_slice(bytes);
        *out = Box::into_raw(Box::new(IngleSpeechAudio {
            data,
            len,
            content_type,
            sample_rate,
        }));
        Ok(())
    })
}

/// Frees audio from `ingle_audio_speech_create`, its data and content type. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_speech_audio_free(audio: *mut IngleSpeechAudio) {
    if !audio.is_null() {
        let audio = Box::from_raw(audio);
        take_slice(audio.data, audio.len);
        drop(CString::from_raw(audio.content_type as *mut c_char));
    }
}

/// Streams speech as it is synthesised, sentence by sentence: `on_chunk` receives the encoded
/// bytes (see `IngleAudioCallback`) for the same request as `ingle_audio_speech_create`, plus
/// `"stream_format": "sse"` for server-sent events. Errors in the request are returned before
/// any chunk. Returns when the audio ends, fails, or `on_chunk` returns non-zero
/// (`INGLE_ERROR_CANCELLED`: synthesis stops before the next sentence). `user_data` is passed to
/// `on_chunk` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_speech_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_chunk: IngleAudioCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = audio_callback_arg(on_chunk)?;
        let request = SpeechRequest::from_json(str_arg(request_json, "request_json")?)?;
        // Each chunk is dropped, and with the stream the synthesis, on the way out.
        for chunk in client.audio.speech.stream(&request)? {
            let chunk = chunk?;
            match on_chunk(chunk.as_ptr(), chunk.len(), user_data) {
                0 => {}
                returned => return Err(Failure::cancelled(returned)),
            }
        }
        Ok(())
    })
}

/// The same request as `ingle_audio_speech_create`, answered with the model's float32 samples
/// instead of an encoded file (`response_format` is checked but has nothing to choose).
/// `*out` receives them, to free with `ingle_speech_samples_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_speech_create_samples(
    client: *mut IngleClient,
    request_json: *const c_char,
    out: *mut *mut IngleSpeechSamples,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let request = SpeechRequest::from_json(str_arg(request_json, "request_json")?)?;
        let raw = client.audio.speech.create_samples(&request)?;
        let channels = raw.channels.max(1);
        let frames = raw.samples.len() / channels as usize;
        let mut samples = raw.samples;
        samples.truncate(frames * channels as usize); // whole frames only
        let (samples, _) = give_slice(samples);
        *out = Box::into_raw(Box::new(IngleSpeechSamples {
            samples,
            frames,
            channels,
            sample_rate: raw.sample_rate,
        }));
        Ok(())
    })
}

/// Frees samples from `ingle_audio_speech_create_samples`, the samples included. NULL is a
/// no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_speech_samples_free(samples: *mut IngleSpeechSamples) {
    if !samples.is_null() {
        let samples = Box::from_raw(samples);
        take_slice(
            samples.samples,
            samples.frames * samples.channels.max(1) as usize,
        );
    }
}

/// The bytes of an uploaded audio file; NULL is an error whatever `len` is.
unsafe fn bytes_arg<'a>(data: *const u8, len: usize, name: &str) -> FfiResult<&'a [u8]> {
    if data.is_null() {
        return Err(Failure::null_argument(name));
    }
    if len > isize::MAX as usize {
        return Err(Failure::from(Error::invalid(
            format!("{name}_len"),
            format!("`{name}_len` is {len}: more bytes than any buffer can hold"),
        )));
    }
    Ok(std::slice::from_raw_parts(data, len))
}

/// The audio file of a transcription function (`filename` may be NULL).
unsafe fn transcription_file(
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
) -> FfiResult<TranscriptionAudio> {
    let bytes = bytes_arg(file, file_len, "file")?;
    let filename = if filename.is_null() {
        None
    } else {
        Some(str_arg(filename, "filename")?)
    };
    Ok(TranscriptionAudio::file(bytes, filename))
}

/// Runs `method` of the table (`audio.transcriptions.create` or `audio.translations.create`)
/// on `request_json` and an uploaded file, its response given to `*out`.
unsafe fn transcribe_file(
    client: *mut IngleClient,
    method: &str,
    request_json: *const c_char,
    (file, file_len, filename): (*const u8, usize, *const c_char),
    out: *mut *mut IngleTranscription,
) -> FfiResult<()> {
    let out = out_arg(out, "out")?;
    let client = client_arg(client)?;
    let audio = transcription_file(file, file_len, filename)?;
    let request = str_arg(request_json, "request_json")?;
    match methods::method(method)?.call(client, request, Some(audio))? {
        Answer::Transcription(response) => {
            give_transcription(out, response);
            Ok(())
        }
        other => Err(unexpected(method, &other)),
    }
}

fn give_transcription(out: &mut *mut IngleTranscription, response: TranscriptionResponse) {
    let body = c_string_lossy(response.body);
    let len = body.as_bytes().len();
    *out = Box::into_raw(Box::new(IngleTranscription {
        body: body.into_raw(),
        len,
        content_type: c_string_lossy(response.content_type.to_string()).into_raw(),
        text: c_string_lossy(response.text).into_raw(),
        duration: response.duration,
    }));
}

/// Transcription: `request_json` holds the fields of an OpenAI transcription request other than
/// the file (`{"model": "@local/whisper-tiny-en", "language": "en", "prompt": ...,
/// "response_format": "json", "temperature": 0, "timestamp_granularities": ["segment",
/// "word"]}`; `response_format` is `json` (default), `text`, `srt`, `verbose_json` or `vtt`;
/// `timestamp_granularities` needs `verbose_json`; no `"stream": true`, which is
/// `ingle_audio_transcriptions_stream`). `file` is the audio file's `file_len` bytes (wav,
/// flac, mp3, ogg vorbis or opus, webm, m4a), borrowed for the call; `filename` (NULL, or e.g.
/// `"speech.mp3"`) only hints at its format. `*out` receives the response body and its content
/// type, to free with `ingle_transcription_free` (NULL on failure). Errors name the field or
/// argument at fault in `ingle_last_error_json()`'s `param`: audio that cannot be decoded is
/// `"file"`, a language the model does not speak `"language"`. On a multilingual model a
/// missing `language` is detected; `verbose_json` reports it (`"language": "french"`).
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_transcriptions_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
    out: *mut *mut IngleTranscription,
) -> IngleStatus {
    ffi_call(|| {
        let file = (file, file_len, filename);
        transcribe_file(
            client,
            "audio.transcriptions.create",
            request_json,
            file,
            out,
        )
    })
}

/// Translation into English (Whisper's translate task, on a multilingual model such as
/// `@local/whisper-base`): as `ingle_audio_transcriptions_create`, with the fields of an OpenAI
/// translation request (`{"model": "@local/whisper-base", "prompt": ..., "response_format":
/// "json", "temperature": 0}`, and ingle's `language`, the audio's, which skips detection). A
/// `json` body is `{"text": ...}`; `verbose_json` says `"task": "translate"` and `"language":
/// "english"`. A model that cannot translate (an English-only `.en` Whisper) fails with `param`
/// `"model"`.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_translations_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
    out: *mut *mut IngleTranscription,
) -> IngleStatus {
    ffi_call(|| {
        let file = (file, file_len, filename);
        transcribe_file(client, "audio.translations.create", request_json, file, out)
    })
}

/// Streams a transcription as the audio is decoded, 30 seconds at a time: `on_chunk` receives
/// each event as JSON, `{"type": "transcript.text.delta", "delta": "..."}` once per segment, then
/// `{"type": "transcript.text.done", "text": "...", "usage": {"type": "duration", "seconds":
/// ...}}` (the deltas joined make `text`, without its trailing space). The same request and
/// audio as `ingle_audio_transcriptions_create`, with `response_format` `json` or `text`, and
/// `"stream": true` allowed. Errors in the request or the audio are returned before any event.
/// Returns when the transcription ends, fails, or `on_chunk` returns non-zero
/// (`INGLE_ERROR_CANCELLED`: transcription stops before the next 30-second window, and no done
/// event comes). `user_data` is passed to `on_chunk` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_transcriptions_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    file: *const u8,
    file_len: usize,
    filename: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_chunk = callback_arg(on_chunk)?;
        let audio = transcription_file(file, file_len, filename)?;
        let request = str_arg(request_json, "request_json")?;
        let method = methods::method("audio.transcriptions.stream")?;
        // Dropping the stream on the way out (an error, or the callback's stop) stops it.
        for event in method.call(client, request, Some(audio))?.into_stream()? {
            deliver(event?, on_chunk, user_data)?;
        }
        Ok(())
    })
}

/// The same request as `ingle_audio_transcriptions_create`, on raw audio instead of a file:
/// `samples` is `n_samples` float32 samples in [-1, 1] (all channels together, interleaved
/// when `channels > 1`; whole frames only), at `sample_rate` Hz (any rate: resampled to the
/// model's 16 kHz), borrowed for the call. `*out` receives the response, to free with
/// `ingle_transcription_free` (NULL on failure). Errors about the audio name `"samples"`,
/// `"sample_rate"` or `"channels"`.
#[no_mangle]
pub unsafe extern "C" fn ingle_audio_transcriptions_create_samples(
    client: *mut IngleClient,
    request_json: *const c_char,
    samples: *const f32,
    n_samples: usize,
    sample_rate: u32,
    channels: u16,
    out: *mut *mut IngleTranscription,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        if samples.is_null() {
            return Err(Failure::null_argument("samples"));
        }
        let request = TranscriptionRequest::from_json(str_arg(request_json, "request_json")?)?;
        if n_samples > isize::MAX as usize / size_of::<f32>() {
            return Err(Error::invalid(
                "n_samples",
                format!("`n_samples` is more than any buffer can hold ({n_samples})"),
            )
            .into());
        }
        if sample_rate == 0 {
            return Err(Error::invalid("sample_rate", "`sample_rate` must be above 0 Hz").into());
        }
        if channels == 0 {
            return Err(Error::invalid("channels", "`channels` must be at least 1").into());
        }
        if n_samples == 0 || !n_samples.is_multiple_of(channels as usize) {
            return Err(Error::invalid(
                "samples",
                format!(
                    "`n_samples` is {n_samples}: the audio must be one or more whole frames of \
                     {channels} samples"
                ),
            )
            .into());
        }
        let samples = std::slice::from_raw_parts(samples, n_samples).to_vec();
        let audio = TranscriptionAudio::samples(samples, sample_rate, channels);
        let response = client
            .audio
            .transcriptions
            .create(&request, audio)
            .map_err(|mut error| {
                // The core names the audio as the OpenAI form field; here it is `samples`.
                if error.param.as_deref() == Some("file") {
                    error.param = Some("samples".into());
                    error.message = error.message.replace("`file`", "`samples`");
                }
                error
            })?;
        give_transcription(out, response);
        Ok(())
    })
}

/// Frees a transcription from `ingle_audio_transcriptions_create` or `_create_samples`, its
/// body, content type and text. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_transcription_free(transcription: *mut IngleTranscription) {
    if !transcription.is_null() {
        let transcription = Box::from_raw(transcription);
        drop(CString::from_raw(transcription.body as *mut c_char));
        drop(CString::from_raw(transcription.content_type as *mut c_char));
        drop(CString::from_raw(transcription.text as *mut c_char));
    }
}
