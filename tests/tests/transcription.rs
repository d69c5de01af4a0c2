//! `audio.transcriptions` on the real Whisper tiny.en weights (CTranslate2's model.bin, run on
//! ONNX Runtime) and real recordings (moonshine-voice's assets, fetched by scripts/fetch-models).

use ingle::openai::{TranscriptionAudio, TranscriptionEvent, TranscriptionRequest};
use ingle::{ErrorKind, Inputs, Value};
use ingle_tests::{shared, TRANSCRIPTION_MODEL as MODEL};
use serde_json::Value as Json;
use std::path::PathBuf;

/// MODELS.md's reference: faster-whisper (CTranslate2 int8, greedy) on the same weights.
const BECKETT: &str = "Ever tried, ever failed. No matter. Try again. Fail again. Fail better.";

fn recording(name: &str) -> PathBuf {
    let config = ingle::Config::default();
    let path = config.resolve(std::path::Path::new("recordings")).join(name);
    assert!(path.is_file(), "{} is missing: run scripts/fetch-models", path.display());
    path
}

fn file(name: &str) -> TranscriptionAudio {
    TranscriptionAudio::file(std::fs::read(recording(name)).unwrap(), Some(name))
}

fn reference() -> Json {
    let text = include_str!("../data/whisper_reference.json");
    serde_json::from_str(text).unwrap()
}

/// Lower case, letters, digits and single spaces.
fn normalise(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn verbose(name: &str, granularities: &[&str]) -> Json {
    let request = TranscriptionRequest::new(MODEL)
        .response_format("verbose_json")
        .timestamp_granularities(granularities);
    let response = shared().audio.transcriptions.create(&request, file(name)).unwrap();
    assert_eq!(response.content_type, "application/json");
    response.json().unwrap()
}

#[test]
fn beckett_transcribes_to_the_reference_text() {
    let request = TranscriptionRequest::new(MODEL);
    let response = shared().audio.transcriptions.create(&request, file("beckett.wav")).unwrap();
    let body = response.json().unwrap();
    eprintln!("{body}");
    assert_eq!(normalise(body["text"].as_str().unwrap()), normalise(BECKETT));
    assert_eq!(body["usage"]["type"], "duration");
    assert!((body["usage"]["seconds"].as_f64().unwrap() - 9.963).abs() < 0.01);
}

#[test]
fn verbose_json_has_segments_and_words() {
    let body = verbose("beckett.wav", &["segment", "word"]);
    eprintln!("{body:#}");
    assert_eq!(body["task"], "transcribe");
    assert_eq!(body["language"], "english");
    let segments = body["segments"].as_array().unwrap();
    assert!(!segments.is_empty());
    let words = body["words"].as_array().unwrap();
    assert_eq!(words.len(), 12, "{words:?}");
}

#[test]
fn stream_events_concatenate_to_the_text() {
    let request = TranscriptionRequest::new(MODEL);
    let whole = shared().audio.transcriptions.create(&request, file("two_cities.wav")).unwrap();
    let mut joined = String::new();
    let mut done = None;
    for event in shared().audio.transcriptions.stream(&request, file("two_cities.wav")).unwrap() {
        match event.unwrap() {
            TranscriptionEvent::Delta(delta) => joined.push_str(&delta),
            TranscriptionEvent::Done { text, .. } => done = Some(text),
        }
    }
    assert_eq!(joined, whole.text);
    assert_eq!(done.unwrap(), whole.text);
}
