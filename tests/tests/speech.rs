//! `audio.speech` on the real Piper voice (en_US-joe-medium, ONNX Runtime, espeak-ng
//! phonemes). Encoded audio is decoded with symphonia (not our code) to check rate, channels
//! and duration; Opus, which symphonia cannot decode, is checked in the Python tests with
//! FFmpeg (PyAV) and here by its Ogg headers.

use ingle::openai::SpeechRequest;
use ingle::{ErrorKind, Inputs, Value};
use ingle_tests::{shared, SPEECH_MODEL};
use std::time::Instant;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";
const PARAGRAPH: &str = "Hello from the local inference library. It runs open models inside \
    your own process. Nothing is sent over the network. Every sentence is synthesised as soon \
    as the one before it is done. This is the fifth and last sentence of the paragraph.";

fn request(text: &str) -> SpeechRequest {
    SpeechRequest::new(SPEECH_MODEL, text, "alloy")
}

/// Seconds of raw audio the model makes for `request`.
fn seconds(request: &SpeechRequest) -> f64 {
    let raw = shared().audio.speech.create_samples(request).unwrap();
    assert_eq!((raw.sample_rate, raw.channels), (22_050, 1));
    raw.samples.len() as f64 / 22_050.0
}

/// (sample rate, channels, seconds) of encoded audio, decoded by symphonia.
fn decode(bytes: &[u8], extension: &str) -> (u32, usize, f64) {
    use symphonia::core::codecs::audio::AudioDecoderOptions;
    use symphonia::core::formats::probe::Hint;
    use symphonia::core::formats::{FormatOptions, TrackType};
    use symphonia::core::io::MediaSourceStream;
    use symphonia::core::meta::MetadataOptions;
    let source = MediaSourceStream::new(
        Box::new(std::io::Cursor::new(bytes.to_vec())),
        Default::default(),
    );
    let mut hint = Hint::new();
    hint.with_extension(extension);
    let mut format = symphonia::default::get_probe()
        .probe(
            &hint,
            source,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .unwrap_or_else(|e| panic!("symphonia cannot read the {extension}: {e}"));
    let track = format.default_track(TrackType::Audio).unwrap().clone();
    let params = track
        .codec_params
        .as_ref()
        .unwrap()
        .audio()
        .unwrap()
        .clone();
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .unwrap();
    let (mut frames, mut rate, mut channels) = (0usize, 0u32, 0usize);
    while let Ok(Some(packet)) = format.next_packet() {
        let decoded = decoder.decode(&packet).unwrap();
        let spec = decoded.spec();
        rate = spec.rate();
        channels = spec.channels().count();
        frames += decoded.frames();
    }
    (rate, channels, frames as f64 / rate as f64)
}

#[test]
fn duration_grows_with_the_text_and_shrinks_with_speed() {
    let one = seconds(&request(SENTENCE));
    let paragraph = seconds(&request(PARAGRAPH));
    assert!((2.0..5.0).contains(&one), "one sentence: {one:.2} s");
    assert!(paragraph > 3.0 * one, "{paragraph:.2} s vs {one:.2} s");
    let fast = seconds(&request(PARAGRAPH).speed(2.0));
    let ratio = fast / paragraph;
    assert!(
        (0.425..0.575).contains(&ratio),
        "speed 2.0 gave {ratio:.3} of the time"
    );
    let slow = seconds(&request(PARAGRAPH).speed(0.5)) / paragraph;
    assert!(
        (1.7..2.3).contains(&slow),
        "speed 0.5 gave {slow:.3} of the time"
    );
}

#[test]
fn every_format_decodes_to_the_stated_audio() {
    let speech = &shared().audio.speech;
    for (format, extension, rate) in [
        ("mp3", "mp3", 22_050),
        ("aac", "aac", 22_050),
        ("flac", "flac", 22_050),
        ("wav", "wav", 22_050),
    ] {
        for streamed in [false, true] {
            let request = request(SENTENCE).response_format(format);
            let bytes = if streamed {
                let chunks: Vec<Vec<u8>> = speech
                    .stream(&request)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                chunks.concat()
            } else {
                let audio = speech.create(&request).unwrap();
                assert_eq!(audio.content_type, request.format().unwrap().content_type());
                audio.bytes
            };
            let (decoded_rate, channels, duration) = decode(&bytes, extension);
            assert_eq!(
                (decoded_rate, channels),
                (rate, 1),
                "{format} streamed={streamed}"
            );
            // Lengths vary a little between runs (Piper's durations are sampled): compare
            // with the range one sentence takes, and allow codec padding.
            assert!(
                (2.0..5.0).contains(&duration),
                "{format} streamed={streamed}: {duration:.3} s"
            );
        }
    }
}

#[test]
fn the_whole_response_and_its_decoding_agree_exactly() {
    // One synthesis, encoded every way, must decode to its own length: the raw samples are
    // encoded here with the same encoder the response uses.
    let raw = shared()
        .audio
        .speech
        .create_samples(&request(SENTENCE))
        .unwrap();
    let seconds = raw.samples.len() as f64 / 22_050.0;
    for (format, extension, slack) in [
        ("wav", "wav", 0.0),
        ("flac", "flac", 0.0),
        ("mp3", "mp3", 0.08),
        ("aac", "aac", 0.15),
    ] {
        let format = ingle::audio::AudioFormat::parse(format).unwrap();
        let bytes = ingle::audio::encode(format, 22_050, &raw.samples).unwrap();
        let (_, _, decoded) = decode(&bytes, extension);
        assert!(
            (decoded - seconds).abs() <= slack + 1.0 / 22_050.0 * 2.0,
            "{format:?}: {decoded:.4} s decoded, {seconds:.4} s synthesised"
        );
    }
}

#[test]
fn pcm_is_24khz_s16le_without_header() {
    let speech = &shared().audio.speech;
    let audio = speech
        .create(&request(SENTENCE).response_format("pcm"))
        .unwrap();
    assert_eq!(
        (audio.content_type, audio.sample_rate),
        ("audio/pcm", 24_000)
    );
    assert_eq!(audio.bytes.len() % 2, 0);
    let samples: Vec<i16> = audio
        .bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    let seconds = samples.len() as f64 / 24_000.0;
    assert!((2.0..5.0).contains(&seconds), "{seconds:.3} s");
    // Speech, not silence or noise at full scale: Piper normalises each sentence to its peak.
    let peak = samples.iter().map(|s| s.unsigned_abs()).max().unwrap();
    assert!(peak > 20_000, "peak {peak}");
    assert_ne!(&audio.bytes[..4], b"RIFF");
}

#[test]
fn opus_is_ogg_opus() {
    let audio = shared()
        .audio
        .speech
        .create(&request(SENTENCE).response_format("opus"))
        .unwrap();
    assert_eq!(audio.content_type, "audio/ogg");
    assert_eq!(&audio.bytes[..4], b"OggS");
    let head = audio
        .bytes
        .windows(8)
        .position(|w| w == b"OpusHead")
        .unwrap();
    assert_eq!(audio.bytes[head + 9], 1, "one channel");
    assert!(audio.bytes.windows(8).any(|w| w == b"OpusTags"));
    // The last page's granule position (48 kHz units, minus pre-skip) gives the duration.
    let last = audio.bytes.windows(4).rposition(|w| w == b"OggS").unwrap();
    let granule = u64::from_le_bytes(audio.bytes[last + 6..last + 14].try_into().unwrap());
    let pre_skip = u16::from_le_bytes([audio.bytes[head + 10], audio.bytes[head + 11]]) as u64;
    let seconds = (granule - pre_skip) as f64 / 48_000.0;
    assert!((2.0..5.0).contains(&seconds), "{seconds:.3} s");
    assert_eq!(
        audio.bytes[last + 5] & 4,
        4,
        "end of stream flag on the last page"
    );
}

#[test]
fn sse_events_carry_the_audio_and_then_the_usage() {
    use base64::Engine as _;
    let request = request(PARAGRAPH)
        .response_format("pcm")
        .stream_format("sse");
    let stream = shared().audio.speech.stream(&request).unwrap();
    assert_eq!(stream.content_type(), "text/event-stream");
    let text = String::from_utf8(stream.map(Result::unwrap).collect::<Vec<_>>().concat()).unwrap();
    let events: Vec<serde_json::Value> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    let (done, deltas) = events.split_last().unwrap();
    assert!(
        deltas.len() >= 5,
        "one delta per sentence at least: {}",
        deltas.len()
    );
    let mut pcm = Vec::new();
    for delta in deltas {
        assert_eq!(delta["type"], "speech.audio.delta");
        let audio = delta["audio"].as_str().unwrap();
        pcm.extend(
            base64::engine::general_purpose::STANDARD
                .decode(audio)
                .unwrap(),
        );
    }
    assert_eq!(done["type"], "speech.audio.done");
    let usage = &done["usage"];
    let (input, output) = (
        usage["input_tokens"].as_u64().unwrap(),
        usage["output_tokens"].as_u64().unwrap(),
    );
    assert!(input > 100 && output > 100, "{usage}");
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), input + output);
    // The delta audio is the whole synthesis: output tokens count 256-sample frames at 22050 Hz.
    let seconds = pcm.len() as f64 / 2.0 / 24_000.0;
    let counted = output as f64 * 256.0 / 22_050.0;
    assert!(
        (seconds - counted).abs() < 0.05 * counted,
        "{seconds:.3} s vs {counted:.3} s"
    );
}

#[test]
fn the_first_audio_of_a_paragraph_comes_well_before_the_end() {
    let start = Instant::now();
    let mut stream = shared()
        .audio
        .speech
        .stream(&request(PARAGRAPH).response_format("wav"))
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    let first_at = start.elapsed();
    assert_eq!(&first[..4], b"RIFF");
    let rest: usize = stream.map(|c| c.unwrap().len()).sum();
    let total = start.elapsed();
    assert!(rest > first.len(), "later sentences carry audio too");
    assert!(
        first_at < total / 2,
        "first bytes after {first_at:?} of {total:?}"
    );
}

#[test]
fn dropping_a_stream_stops_synthesis() {
    let client = shared();
    let before = client.metrics(SPEECH_MODEL).unwrap();
    let mut stream = client
        .audio
        .speech
        .stream(&request(PARAGRAPH).response_format("pcm"))
        .unwrap();
    stream.next().unwrap().unwrap();
    drop(stream);
    let after = client.metrics(SPEECH_MODEL).unwrap();
    assert!(after.cancelled_requests > before.cancelled_requests);
    // Other tests run beside this one; what this stream synthesised is at most 2 of 5.
    assert!(after.generated_tokens - before.generated_tokens < 5 + 20);
}

#[test]
fn bad_requests_name_the_parameter_and_the_client_stays_usable() {
    let speech = &shared().audio.speech;
    let long = "a".repeat(4097);
    let cases: Vec<(SpeechRequest, &str)> = vec![
        (request(""), "input"),
        (request(&long), "input"),
        (
            SpeechRequest {
                input: None,
                ..request("hi")
            },
            "input",
        ),
        (
            SpeechRequest {
                voice: None,
                ..request("hi")
            },
            "voice",
        ),
        (SpeechRequest::new(SPEECH_MODEL, "hi", "nobody"), "voice"),
        (request("hi").speed(4.5), "speed"),
        (request("hi").speed(0.2), "speed"),
        (request("hi").response_format("ogg"), "response_format"),
        (request("hi").stream_format("json"), "stream_format"),
        (
            SpeechRequest {
                instructions: Some("Speak like a pirate".into()),
                ..request("hi")
            },
            "instructions",
        ),
        (
            SpeechRequest {
                model: String::new(),
                ..request("hi")
            },
            "model",
        ),
        (request("...!?"), "input"),
    ];
    for (bad, param) in cases {
        for error in [
            speech.create(&bad).unwrap_err(),
            speech.stream(&bad).err().unwrap(),
        ] {
            assert_eq!(error.kind, ErrorKind::InvalidRequest, "{param}: {error}");
            assert_eq!(error.param.as_deref(), Some(param), "{error}");
        }
    }
    let unknown =
        SpeechRequest::from_json(r#"{"model": "m", "input": "hi", "voice": "alloy", "pitch": 2}"#)
            .unwrap();
    assert_eq!(
        speech.create(&unknown).unwrap_err().param.as_deref(),
        Some("pitch")
    );
    let error = speech
        .create(&SpeechRequest::new("@nobody/nothing", "hi", "alloy"))
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::NotFound);
    let error = speech
        .create(&SpeechRequest::new(ingle_tests::MODEL, "hi", "alloy"))
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("model"), "{error}");
    // Unknown voices list the model's own.
    let error = speech
        .create(&SpeechRequest::new(SPEECH_MODEL, "hi", "nobody"))
        .unwrap_err();
    assert!(
        error.message.contains("joe") && error.message.contains("alloy"),
        "{error}"
    );
    // Still usable.
    assert!(!speech
        .create(&request("Still here."))
        .unwrap()
        .bytes
        .is_empty());
}

#[test]
fn predictions_give_the_whole_audio_or_each_sentence() {
    let client = shared();
    let inputs = Inputs::from([
        ("text".to_string(), Value::from(PARAGRAPH)),
        ("voice".to_string(), Value::from("joe")),
    ]);
    let partial: Vec<_> = client
        .predictions
        .stream(SPEECH_MODEL, inputs.clone())
        .unwrap()
        .collect();
    assert_eq!(partial.len(), 5, "one partial prediction per sentence");
    let whole = client.predictions.create(SPEECH_MODEL, inputs).unwrap();
    let results = whole.results.as_ref().unwrap();
    let Value::Audio(audio) = &results[0] else {
        panic!("not audio: {:?}", results[0].type_name())
    };
    assert_eq!(audio.sample_rate, 22_050);
    let seconds = audio.samples.len() as f64 / 22_050.0;
    assert!(
        seconds > 10.0,
        "the whole paragraph, not its last sentence: {seconds:.2} s"
    );
    let json = whole.to_json().unwrap();
    assert_eq!(json["results"][0]["sample_rate"], 22_050);
    assert!(json["results"][1]["input_tokens"].as_i64().unwrap() > 0);
}

#[test]
fn openai_voices_map_through_the_config() {
    use ingle::{Client, PredictorConfig};
    let base = ingle_tests::config();
    let speech = |voices: &[(&str, &str)]| {
        let mut predictor =
            PredictorConfig::speech(SPEECH_MODEL, ingle::config::DEFAULT_SPEECH_FILE);
        for (alias, voice) in voices {
            predictor = predictor.voice(*alias, *voice);
        }
        ingle::Config {
            predictors: vec![predictor],
            ..base.clone()
        }
    };
    let client = Client::from_config(&speech(&[("nova", "joe")])).unwrap();
    assert!(client
        .audio
        .speech
        .create(&SpeechRequest::new(SPEECH_MODEL, "Hi.", "nova").response_format("wav"))
        .is_ok());
    let client = Client::from_config(&speech(&[("nova", "jane")])).unwrap();
    let error = client
        .audio
        .speech
        .create(&SpeechRequest::new(SPEECH_MODEL, "Hi.", "nova"))
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("voices.nova"), "{error}");
}

#[test]
fn phonemes_follow_piper() {
    // Piper's recipe (clauses, punctuation, sentence ends, ids) over the same espeak-ng, for
    // 29 texts of punctuation, numbers, abbreviations, quotes, dashes, ellipses and newlines.
    let config = ingle_tests::config();
    let predictor = config
        .predictors
        .iter()
        .find(|p| p.tag == SPEECH_MODEL)
        .unwrap();
    let voice = ingle::backends::onnx::SpeechPredictor::load(&config, predictor).unwrap();
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("../data/piper_phoneme_ids.json")).unwrap();
    for case in reference["inputs"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<Vec<i64>> = serde_json::from_value(case["sentences"].clone()).unwrap();
        let ours = voice.phoneme_ids(text).unwrap();
        if expected.iter().all(|ids| ids.len() <= 2 * 250 + 3) {
            assert_eq!(ours, expected, "{text:?}");
        } else {
            // A sentence longer than one run is split between words: the same phonemes.
            let inner = |runs: &[Vec<i64>]| -> Vec<i64> {
                runs.iter()
                    .flat_map(|ids| ids[2..ids.len() - 1].to_vec())
                    .collect()
            };
            assert!(ours.len() > expected.len(), "{text:?} is split");
            assert_eq!(inner(&ours), inner(&expected), "{text:?}");
        }
    }
    // A long text without punctuation is synthesised in runs of bounded length (one run of
    // 4096 characters took 4.9 GB), split between words.
    let long = "word ".repeat(819);
    let runs = voice.phoneme_ids(&long).unwrap();
    assert!(runs.len() >= 10, "{} runs", runs.len());
    assert!(runs.iter().all(|ids| ids.len() <= 2 * 250 + 3));
}
