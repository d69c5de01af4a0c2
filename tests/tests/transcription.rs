//! `audio.transcriptions` on the real Whisper tiny.en weights (CTranslate2's model.bin, run on
//! ONNX Runtime) and real recordings (moonshine-voice's assets, fetched by scripts/fetch-models).
//! References: `tests/data/whisper_reference.json`, made by faster-whisper 1.2.1 (CTranslate2
//! 4.8.5) on the same weights, greedy, with word timestamps.

use ingle::backends::onnx::whisper::Precision;
use ingle::backends::onnx::TranscriptionPredictor;
use ingle::openai::{SpeechRequest, TranscriptionAudio, TranscriptionEvent, TranscriptionRequest};
use ingle::{Config, ErrorKind, Inputs, PredictorConfig, Value};
use ingle_tests::{shared, SPEECH_MODEL, TRANSCRIPTION_MODEL as MODEL};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::sync::{Arc, Once};

/// MODELS.md's reference: faster-whisper (CTranslate2 int8, greedy) on the same weights.
const BECKETT: &str = "Ever tried, ever failed. No matter. Try again. Fail again. Fail better.";
/// The same weights with float32 linear layers, to compare with CTranslate2's float32 run.
const FLOAT32_MODEL: &str = "@test/whisper-tiny-en-float32";

fn recording(name: &str) -> PathBuf {
    let path = Config::default()
        .resolve(std::path::Path::new("recordings"))
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `ingle pull recordings`",
        path.display()
    );
    path
}

fn file(name: &str) -> TranscriptionAudio {
    TranscriptionAudio::file(std::fs::read(recording(name)).unwrap(), Some(name))
}

fn reference() -> Json {
    serde_json::from_str(include_str!("../data/whisper_reference.json")).unwrap()
}

/// Lower case, letters, digits and apostrophes, single spaces.
fn normalise(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Word-level edit distance between two texts (normalised).
fn word_errors(a: &str, b: &str) -> usize {
    let (a, b) = (normalise(a), normalise(b));
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let substitution = previous + usize::from(x != y);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

fn float32_client() -> &'static ingle::Client {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let config = Config::default();
        let predictor = PredictorConfig::transcription(
            FLOAT32_MODEL,
            ingle::config::DEFAULT_TRANSCRIPTION_FILE,
        );
        let loaded =
            TranscriptionPredictor::load_with_precision(&config, &predictor, Precision::Float32)
                .unwrap();
        shared().register(Arc::new(loaded)).unwrap();
    });
    shared()
}

fn verbose(model: &str, audio: TranscriptionAudio, granularities: &[&str]) -> Json {
    let request = TranscriptionRequest::new(model)
        .response_format("verbose_json")
        .timestamp_granularities(granularities);
    let response = shared()
        .audio
        .transcriptions
        .create(&request, audio)
        .unwrap();
    assert_eq!(response.content_type, "application/json");
    response.json().unwrap()
}

fn text(model: &str, audio: TranscriptionAudio) -> String {
    let request = TranscriptionRequest::new(model);
    let response = shared()
        .audio
        .transcriptions
        .create(&request, audio)
        .unwrap();
    response.json().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn beckett_transcribes_to_the_reference_text() {
    let request = TranscriptionRequest::new(MODEL);
    let response = shared()
        .audio
        .transcriptions
        .create(&request, file("beckett.wav"))
        .unwrap();
    let body = response.json().unwrap();
    // int8 CTranslate2 hears "No matter. Try again."; CTranslate2 in float32 and ingle (int8 or
    // float32) hear "No matter, try again.": the words are the reference's exactly.
    assert_eq!(
        normalise(body["text"].as_str().unwrap()),
        normalise(BECKETT)
    );
    assert_eq!(body["text"], response.text);
    assert_eq!(body["usage"]["type"], "duration");
    assert!(
        (body["usage"]["seconds"].as_f64().unwrap() - 9.963).abs() < 0.01,
        "{body}"
    );
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
}

#[test]
fn float32_reproduces_ctranslate2_float32() {
    float32_client();
    let reference = reference();
    // endgame_nagg_nell.wav is at 24 kHz: faster-whisper resamples it with FFmpeg's
    // swresample, ingle with rubato, and one word in 71 comes out differently ("heartly").
    let endgame = verbose(FLOAT32_MODEL, file("endgame_nagg_nell.wav"), &["segment"]);
    let expected = reference["float32"]["endgame_nagg_nell.wav"]["text"]
        .as_str()
        .unwrap();
    let errors = word_errors(endgame["text"].as_str().unwrap(), expected);
    assert!(errors <= 2, "{errors} word errors: {endgame}");
    // beckett (16 kHz) and two_cities (48 kHz: an integer ratio) are heard exactly as
    // CTranslate2 hears them.
    for name in ["beckett.wav", "two_cities.wav"] {
        let expected = &reference["float32"][name];
        let body = verbose(FLOAT32_MODEL, file(name), &["segment", "word"]);
        assert_eq!(body["text"], expected["text"], "{name}");
        let (ours, theirs) = (
            body["segments"].as_array().unwrap(),
            expected["segments"].as_array().unwrap(),
        );
        assert_eq!(ours.len(), theirs.len(), "{name}: {body}");
        for (a, b) in ours.iter().zip(theirs) {
            assert_eq!(a["text"], b["text"], "{name}");
            assert_eq!(a["seek"], b["seek"], "{name}");
            if name == "beckett.wav" {
                // The same mel, the same graph, the same decoding rules: the same tokens.
                assert_eq!(a["tokens"], b["tokens"], "{name}");
                let close = |k: &str, tolerance: f64| {
                    (a[k].as_f64().unwrap() - b[k].as_f64().unwrap()).abs() <= tolerance
                };
                assert!(
                    close("avg_logprob", 0.01) && close("no_speech_prob", 0.01),
                    "{a} {b}"
                );
                assert!(close("compression_ratio", 0.1), "{a} {b}");
            }
            for key in ["start", "end"] {
                let (x, y) = (a[key].as_f64().unwrap(), b[key].as_f64().unwrap());
                assert!((x - y).abs() <= 0.1, "{name} {key}: {x} vs {y}");
            }
        }
        // Word timings from the same alignment heads: within 0.1 s of CTranslate2's.
        let theirs_words: Vec<&Json> = theirs
            .iter()
            .flat_map(|s| s["words"].as_array().unwrap())
            .collect();
        let ours_words = body["words"].as_array().unwrap();
        assert_eq!(ours_words.len(), theirs_words.len(), "{name}");
        let mut off = 0;
        for (a, b) in ours_words.iter().zip(&theirs_words) {
            assert_eq!(
                a["word"].as_str().unwrap(),
                b["word"].as_str().unwrap().trim()
            );
            for key in ["start", "end"] {
                let (x, y) = (a[key].as_f64().unwrap(), b[key].as_f64().unwrap());
                if (x - y).abs() > 0.1 {
                    off += 1;
                }
            }
        }
        assert!(
            off * 20 <= ours_words.len() * 2,
            "{name}: {off} word times off by more than 0.1 s"
        );
    }
}

#[test]
fn prompt_conditions_the_first_window() {
    let client = float32_client();
    let _ = &client;
    let expected = &reference()["beckett_prompt"];
    let request = TranscriptionRequest::new(FLOAT32_MODEL)
        .response_format("verbose_json")
        .timestamp_granularities(&["segment", "word"])
        .prompt(expected["initial_prompt"].as_str().unwrap());
    let body = client
        .audio
        .transcriptions
        .create(&request, file("beckett.wav"))
        .unwrap()
        .json()
        .unwrap();
    let (ours, theirs) = (&body["segments"][0], &expected["segments"][0]);
    // Without the prompt the window splits into four segments; with it, one (as CTranslate2).
    assert_eq!(ours["text"], theirs["text"], "{body}");
    assert_eq!(ours["end"], theirs["end"], "{body}");
    assert_eq!(ours["tokens"], theirs["tokens"], "{body}");
}

#[test]
fn long_audio_goes_window_by_window() {
    let body = verbose(MODEL, file("two_cities.wav"), &["segment"]);
    let text = body["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "It was the best of times, it was the worst of times. It was the age of wisdom, it was \
             the age of foolishness."
        ),
        "{text}"
    );
    let duration = body["duration"].as_f64().unwrap();
    assert!((duration - 44.4).abs() < 0.1, "{duration}");
    let segments = body["segments"].as_array().unwrap();
    let mut seeks: Vec<i64> = segments
        .iter()
        .map(|s| s["seek"].as_i64().unwrap())
        .collect();
    seeks.dedup();
    // Two windows; the second starts at the last timestamp of the first, not at 30 s.
    assert_eq!(seeks.len(), 2, "{seeks:?}");
    let first_window_end = segments
        .iter()
        .filter(|s| s["seek"] == 0)
        .map(|s| s["end"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((2000..3000).contains(&seeks[1]), "{seeks:?}");
    assert_eq!(
        seeks[1],
        (first_window_end * 100.0).round() as i64,
        "{seeks:?}"
    );
    let mut previous_end = 0.0;
    for (i, segment) in segments.iter().enumerate() {
        let (start, end) = (
            segment["start"].as_f64().unwrap(),
            segment["end"].as_f64().unwrap(),
        );
        assert_eq!(segment["id"], i as i64);
        assert!(
            start >= previous_end && end > start,
            "segment {i}: {start}..{end} after {previous_end}"
        );
        previous_end = end;
    }
    assert!(segments[0]["start"].as_f64().unwrap() < 2.0);
    assert!(
        previous_end > 40.0 && previous_end <= duration,
        "{previous_end}"
    );
}

#[test]
fn speech_comes_back_as_its_sentence() {
    let sentence =
        "Hello from the local inference library. The quick brown fox jumps over the lazy dog.";
    let speech = shared()
        .audio
        .speech
        .create_samples(&SpeechRequest::new(SPEECH_MODEL, sentence, "alloy"))
        .unwrap();
    // The voice samples its durations (noise_w), so each synthesis is a slightly different
    // utterance that Whisper tiny can mishear by a word ("quit brown fox"); more is a failure.
    let audio = TranscriptionAudio::samples(speech.samples, speech.sample_rate, speech.channels);
    let heard = text(MODEL, audio);
    assert!(word_errors(&heard, sentence) <= 1, "heard: {heard}");
    // The same speech as an encoded file.
    let wav = shared()
        .audio
        .speech
        .create(&SpeechRequest::new(SPEECH_MODEL, sentence, "alloy").response_format("mp3"))
        .unwrap();
    let audio = TranscriptionAudio::file(wav.bytes, Some("speech.mp3"));
    let heard = text(MODEL, audio);
    assert!(word_errors(&heard, sentence) <= 1, "heard: {heard}");
}

#[test]
fn samples_at_any_rate_and_channel_count() {
    let bytes = std::fs::read(recording("beckett.wav")).unwrap();
    let mono = ingle::audio::decode_to_mono(&bytes, None, 16_000)
        .unwrap()
        .samples;
    // 48 kHz stereo: each sample held three times, on both channels.
    let stereo: Vec<f32> = mono.iter().flat_map(|&x| [x; 6]).collect();
    let audio = TranscriptionAudio::samples(stereo, 48_000, 2);
    assert_eq!(normalise(&text(MODEL, audio)), normalise(BECKETT));
}

#[test]
fn other_containers_transcribe_the_same() {
    if std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_err()
    {
        panic!("ffmpeg is missing: scripts/setup --tests installs it");
    }
    let dir = std::env::temp_dir().join(format!("ingle-transcribe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, args) in [
        ("beckett.mp3", &["-b:a", "64k"][..]),
        ("beckett.opus", &["-c:a", "libopus", "-b:a", "32k"][..]),
        ("beckett.webm", &["-c:a", "libopus"][..]),
        ("beckett.m4a", &["-c:a", "aac"][..]),
        ("beckett.ogg", &["-c:a", "libvorbis"][..]),
        ("beckett.flac", &["-ar", "44100", "-ac", "2"][..]),
    ] {
        let out = dir.join(name);
        let status = std::process::Command::new("ffmpeg")
            .args(["-y", "-loglevel", "error", "-i"])
            .arg(recording("beckett.wav"))
            .args(args)
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "ffmpeg {name}");
        let audio = TranscriptionAudio::file(std::fs::read(&out).unwrap(), Some(name));
        assert_eq!(normalise(&text(MODEL, audio)), normalise(BECKETT), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_response_format_parses() {
    let create = |format: &str| {
        let request = TranscriptionRequest::new(MODEL).response_format(format);
        shared()
            .audio
            .transcriptions
            .create(&request, file("beckett.wav"))
            .unwrap()
    };
    let json = create("json");
    let text = create("text");
    assert_eq!(text.content_type, "text/plain; charset=utf-8");
    assert_eq!(text.body, format!("{}\n", json.text));
    let srt = create("srt");
    assert_eq!(srt.content_type, "text/plain; charset=utf-8");
    let vtt = create("vtt");
    assert_eq!(vtt.content_type, "text/vtt; charset=utf-8");
    let vtt_body = vtt
        .body
        .strip_prefix("WEBVTT\n\n")
        .expect("a WEBVTT header");
    let mut cues = Vec::new();
    for (i, block) in srt.body.trim_end().split("\n\n").enumerate() {
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[0], (i + 1).to_string(), "{block}");
        let (start, end) = lines[1].split_once(" --> ").unwrap();
        let seconds = |t: &str, sep: char| {
            let (hms, ms) = t.split_once(sep).unwrap();
            let parts: Vec<f64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
            assert_eq!((parts.len(), ms.len()), (3, 3), "{t}");
            parts[0] * 3600.0 + parts[1] * 60.0 + parts[2] + ms.parse::<f64>().unwrap() / 1000.0
        };
        cues.push((seconds(start, ','), seconds(end, ','), lines[2..].join(" ")));
    }
    let vtt_cues: Vec<(f64, f64, String)> = vtt_body
        .trim_end()
        .split("\n\n")
        .map(|block| {
            let lines: Vec<&str> = block.lines().collect();
            let (start, end) = lines[0].split_once(" --> ").unwrap();
            let seconds = |t: &str| {
                let (hms, ms) = t.split_once('.').unwrap();
                let parts: Vec<f64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
                parts[0] * 3600.0 + parts[1] * 60.0 + parts[2] + ms.parse::<f64>().unwrap() / 1000.0
            };
            (seconds(start), seconds(end), lines[1..].join(" "))
        })
        .collect();
    assert_eq!(cues, vtt_cues);
    assert!(cues.windows(2).all(|w| w[0].1 <= w[1].0));
    let joined: Vec<String> = cues.iter().map(|c| c.2.clone()).collect();
    assert_eq!(joined.join(" "), json.text);
}

#[test]
fn stream_events_concatenate_to_the_text() {
    let request = TranscriptionRequest::new(MODEL);
    let whole = shared()
        .audio
        .transcriptions
        .create(&request, file("two_cities.wav"))
        .unwrap();
    let mut deltas = Vec::new();
    let mut done = None;
    for event in shared()
        .audio
        .transcriptions
        .stream(&request, file("two_cities.wav"))
        .unwrap()
    {
        let event = event.unwrap();
        let kind = event.to_json()["type"].as_str().unwrap().to_string();
        assert!(kind.starts_with("transcript.text."), "{kind}");
        match event {
            TranscriptionEvent::Delta(delta) => deltas.push(delta),
            TranscriptionEvent::Done { text, seconds } => {
                assert!((seconds - 44.4).abs() < 0.1);
                done = Some(text)
            }
        }
    }
    assert!(deltas.len() >= 5, "one delta per segment: {deltas:?}");
    assert_eq!(deltas.concat(), whole.text);
    assert_eq!(done.unwrap(), whole.text);
}

#[test]
fn dropping_a_stream_stops_before_the_next_window() {
    let before = shared().metrics(MODEL).unwrap();
    let mut stream = shared()
        .audio
        .transcriptions
        .stream(&TranscriptionRequest::new(MODEL), file("two_cities.wav"))
        .unwrap();
    assert!(matches!(
        stream.next(),
        Some(Ok(TranscriptionEvent::Delta(_)))
    ));
    drop(stream);
    let after = shared().metrics(MODEL).unwrap();
    assert!(after.cancelled_requests > before.cancelled_requests);
}

#[test]
fn predictions_join_the_segments() {
    let bytes = std::fs::read(recording("beckett.wav")).unwrap();
    let samples = ingle::audio::decode_to_mono(&bytes, None, 16_000)
        .unwrap()
        .samples;
    let inputs = Inputs::from([(
        "audio".to_string(),
        Value::Audio(ingle::Audio {
            samples,
            sample_rate: 16_000,
            channels: 1,
        }),
    )]);
    let results = shared()
        .predictions
        .create(MODEL, inputs)
        .unwrap()
        .into_result()
        .unwrap();
    let Value::String(text) = &results[0] else {
        panic!("{results:?}")
    };
    assert_eq!(normalise(text), normalise(BECKETT));
    // The language output: an English-only model's is English.
    assert_eq!(results[3], Value::from("en"));
    let seconds = results[2].as_dict().unwrap()["seconds"].as_f64().unwrap();
    assert!((seconds - 9.963).abs() < 0.01);
}

#[test]
fn bad_requests_name_their_parameter() {
    let transcriptions = &shared().audio.transcriptions;
    let good = || TranscriptionRequest::new(MODEL);
    let with = |field: &str, value: Json| {
        let mut request = good();
        request.other.insert(field.to_string(), value);
        request
    };
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    let cases: Vec<(TranscriptionRequest, TranscriptionAudio, &str)> = vec![
        (
            good(),
            TranscriptionAudio::file(Vec::new(), Some("a.wav")),
            "file",
        ),
        (good(), TranscriptionAudio::file(png, Some("a.png")), "file"),
        (
            good(),
            TranscriptionAudio::file(b"RIFF\x10\0\0\0WAVEfmt ".to_vec(), Some("a.wav")),
            "file",
        ),
        (
            good(),
            TranscriptionAudio::file(vec![7u8; 5000], None),
            "file",
        ),
        (
            good(),
            TranscriptionAudio::samples(Vec::new(), 16_000, 1),
            "file",
        ),
        (
            good(),
            TranscriptionAudio::samples(vec![0.0, f32::NAN, 0.0], 16_000, 1),
            "file",
        ),
        (
            good(),
            TranscriptionAudio::samples(vec![0.0; 16_000], 1, 1),
            "file",
        ),
        (
            good(),
            TranscriptionAudio::samples(vec![0.0; 16_000], 16_000, 0),
            "file",
        ),
        (
            good(),
            TranscriptionAudio::samples(vec![0.0; 3], 16_000, 2),
            "file",
        ),
        (good().language("de"), file("beckett.wav"), "language"),
        (
            good().response_format("docx"),
            file("beckett.wav"),
            "response_format",
        ),
        (
            good().timestamp_granularities(&["word"]),
            file("beckett.wav"),
            "timestamp_granularities",
        ),
        (
            good()
                .response_format("verbose_json")
                .timestamp_granularities(&["sentence"]),
            file("beckett.wav"),
            "timestamp_granularities",
        ),
        (good().temperature(1.5), file("beckett.wav"), "temperature"),
        (good().temperature(-0.1), file("beckett.wav"), "temperature"),
        (
            with("include", serde_json::json!(["logprobs"])),
            file("beckett.wav"),
            "include",
        ),
        (
            with("chunking_strategy", serde_json::json!("auto")),
            file("beckett.wav"),
            "chunking_strategy",
        ),
        (TranscriptionRequest::new(""), file("beckett.wav"), "model"),
        (
            TranscriptionRequest {
                stream: Some(true),
                ..good()
            },
            file("beckett.wav"),
            "stream",
        ),
    ];
    for (request, audio, param) in cases {
        let error = transcriptions.create(&request, audio).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidRequest, "{param}: {error:?}");
        assert_eq!(error.param.as_deref(), Some(param), "{error:?}");
        if param == "file" && !error.message.contains("sample") {
            assert!(
                error.message.contains("Supported formats: flac, m4a, mp3"),
                "{}",
                error.message
            );
        }
    }
    let error = transcriptions
        .stream(&good().response_format("srt"), file("beckett.wav"))
        .err()
        .unwrap();
    assert_eq!(error.param.as_deref(), Some("stream"));
    let unknown = transcriptions
        .create(
            &TranscriptionRequest::new("@local/nope"),
            file("beckett.wav"),
        )
        .unwrap_err();
    assert_eq!(unknown.kind, ErrorKind::NotFound);
    let chat = transcriptions
        .create(
            &TranscriptionRequest::new(ingle_tests::MODEL),
            file("beckett.wav"),
        )
        .unwrap_err();
    assert_eq!(chat.param.as_deref(), Some("model"), "{chat:?}");
    let translation = shared()
        .audio
        .translations
        .create(&good(), file("beckett.wav"))
        .unwrap_err();
    assert_eq!(
        (translation.kind, translation.param.as_deref()),
        (ErrorKind::InvalidRequest, Some("model"))
    );
    assert!(translation.message.contains("English-only"));
    // Still serving.
    assert_eq!(
        normalise(&text(MODEL, file("beckett.wav"))),
        normalise(BECKETT)
    );
    let english = good().language("English");
    assert!(transcriptions.create(&english, file("beckett.wav")).is_ok());
}

#[test]
fn request_fields_parse_from_json() {
    let request = TranscriptionRequest::from_json(
        r#"{"model": "m", "response_format": "srt", "temperature": 0.2, "timestamp_granularities": ["word"]}"#,
    )
    .unwrap();
    assert_eq!(request.response_format.as_deref(), Some("srt"));
    let error =
        TranscriptionRequest::from_json(r#"{"model": "m", "temperature": "hot"}"#).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("temperature"));
}

#[test]
fn broken_model_files_are_model_errors() {
    let source = Config::default().resolve(std::path::Path::new("whisper-tiny-en"));
    let dir = std::env::temp_dir().join(format!("ingle-whisper-broken-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("whisper-tiny-en")).unwrap();
    for name in ["config.json", "tokenizer.json"] {
        std::fs::copy(source.join(name), dir.join("whisper-tiny-en").join(name)).unwrap();
    }
    let model = std::fs::read(source.join("model.bin")).unwrap();
    std::fs::write(
        dir.join("whisper-tiny-en/model.bin"),
        &model[..model.len() / 3],
    )
    .unwrap();
    let mut config = Config::default();
    config.onnxruntime = Some(config.onnxruntime_path());
    config.models_dir = Some(dir.clone());
    let predictor = PredictorConfig::transcription("@test/broken", "whisper-tiny-en/model.bin");
    let load = || {
        TranscriptionPredictor::load(&config, &predictor)
            .err()
            .unwrap()
    };
    let error = load();
    assert_eq!(
        (error.kind, error.code.map(ingle::ErrorCode::as_str)),
        (ErrorKind::Model, Some("model_file_invalid"))
    );
    assert!(error.message.contains("model.bin"), "{}", error.message);
    std::fs::remove_file(dir.join("whisper-tiny-en/tokenizer.json")).unwrap();
    let error = load();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("model_file_missing"),
        "{error:?}"
    );
    assert!(
        error.message.contains("tokenizer.json"),
        "{}",
        error.message
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_options_are_refused_before_the_audio_is_decoded() {
    // Undecodable bytes: had decoding come first, each error would be about `file`.
    let garbage = || TranscriptionAudio::file(vec![7u8; 5000], None);
    let transcriptions = &shared().audio.transcriptions;
    let cases = [
        (TranscriptionRequest::new(MODEL).language("fr"), "language"),
        (
            TranscriptionRequest::new(MODEL).temperature(5.0),
            "temperature",
        ),
    ];
    for (request, param) in cases {
        let error = transcriptions.create(&request, garbage()).unwrap_err();
        assert_eq!(error.param.as_deref(), Some(param), "{error}");
        let error = transcriptions.stream(&request, garbage()).err().unwrap();
        assert_eq!(error.param.as_deref(), Some(param), "{error}");
    }
}

#[test]
fn a_cancel_stops_the_decoder_inside_a_window() {
    // Whisper's decoder asks the call's cancel before each token: a caller that stops while a
    // 30 s window decodes (hundreds of milliseconds on tiny.en) does not wait for its end.
    let client = ingle::Client::from_config(&ingle_tests::config()).unwrap();
    let cancel = ingle::Cancel::new();
    let mut stream = client
        .with_cancel(&cancel)
        .audio
        .transcriptions
        .stream(&TranscriptionRequest::new(MODEL), file("two_cities.wav"))
        .unwrap();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            cancel.cancel();
        })
    };
    let first = stream.next().unwrap();
    canceller.join().unwrap();
    let Err(error) = first else {
        panic!("the first window was decoded to its end: {first:?}")
    };
    assert_eq!(error.kind, ErrorKind::Cancelled, "{error}");
    drop(stream);
    let metrics = client.metrics(MODEL).unwrap();
    // Windows count when their decoding starts: the first, stopped inside.
    assert_eq!(metrics.generated_tokens, 1, "{metrics:?}");
    assert_eq!(metrics.cancelled_requests, 1, "{metrics:?}");
    assert_eq!(metrics.active_requests, 0, "{metrics:?}");
}

#[test]
fn a_transcription_stops_while_decoding_when_its_caller_goes() {
    // The caller says stop once, while the audio decodes (the first time it is asked); had
    // decoding not asked, the windows would have run to the end.
    let wav = ingle::audio::encode(
        ingle::audio::AudioFormat::Wav,
        16_000,
        &vec![0.0; 16_000 * 60],
    )
    .unwrap();
    let wav = &wav[..];
    // A client of its own, whose metrics no other test moves.
    let client = ingle::Client::from_config(&ingle_tests::config()).unwrap();
    let stop_when_first_asked = || {
        let asked = std::sync::atomic::AtomicUsize::new(0);
        ingle::Cancel::polled(move || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0)
    };
    let error = client
        .with_cancel(&stop_when_first_asked())
        .audio
        .transcriptions
        .create(
            &TranscriptionRequest::new(MODEL),
            TranscriptionAudio::file(wav, Some("a.wav")),
        )
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Cancelled, "{error}");
    // Stopped in decoding: the model never got the audio (the checks between windows, and
    // the decoder's between tokens, come after the predictor has started on it).
    assert_eq!(client.metrics(MODEL).unwrap().audio_input_ms, 0);

    // The same for a stream: its call decodes before it returns the stream.
    let stream = client
        .with_cancel(&stop_when_first_asked())
        .audio
        .transcriptions
        .stream(
            &TranscriptionRequest::new(MODEL),
            TranscriptionAudio::file(wav, Some("a.wav")),
        );
    let Err(error) = stream else {
        panic!("the stream started")
    };
    assert_eq!(error.kind, ErrorKind::Cancelled, "{error}");
    assert_eq!(client.metrics(MODEL).unwrap().audio_input_ms, 0);
}

#[test]
fn silence_is_skipped_not_heard_as_you() {
    // Whisper's no-speech test keeps tiny.en's " you" on digital silence (no-speech 0.95 but an
    // average log-probability of -0.3); windows below -80 dBFS are skipped before the encoder.
    let silence = TranscriptionAudio::samples(vec![0.0; 16_000 * 95], 16_000, 1);
    let v = verbose(MODEL, silence, &["segment"]);
    assert_eq!(v["text"], "", "{v}");
    assert_eq!(v["duration"], 95.0);
    // Speech between long silences is still heard, at its time.
    let bytes = std::fs::read(recording("beckett.wav")).unwrap();
    let speech = ingle::audio::decode_to_mono(&bytes, None, 16_000)
        .unwrap()
        .samples;
    let mut samples = vec![0.0; 16_000 * 40];
    samples.extend(&speech);
    samples.extend(vec![0.0; 16_000 * 50]);
    let v = verbose(
        MODEL,
        TranscriptionAudio::samples(samples, 16_000, 1),
        &["segment"],
    );
    let text = v["text"].as_str().unwrap();
    assert!(
        word_errors(&normalise(text), &normalise(BECKETT)) <= 2,
        "{text}"
    );
    let first = v["segments"][0]["start"].as_f64().unwrap();
    assert!((30.0..=41.0).contains(&first), "{v}");
}
