//! Whisper's long-form transcription, as openai-whisper's `transcribe()` does it: 30-second
//! windows, greedy decoding with timestamps under Whisper's logit rules, temperature fallback,
//! timestamp-based seeking, conditioning on the previous window's text, and word timings from
//! the cross-attention of the alignment heads (`words.rs`).

use super::mel::{content_frames, HOP, N_FRAMES, SAMPLE_RATE};
pub use super::model::Task;
use super::model::WhisperModel;
use super::segments::Segment;
use super::words;
use crate::error::Result;
use crate::predict::Cancel;
use ort::value::DynValue;
use std::collections::VecDeque;
use std::sync::Arc;

/// Tokens sampled per window at most (openai-whisper: half the text context).
const SAMPLE_LEN: usize = 224;
/// Whisper's fallback thresholds.
const COMPRESSION_RATIO_THRESHOLD: f64 = 2.4;
const LOGPROB_THRESHOLD: f64 = -1.0;
const NO_SPEECH_THRESHOLD: f64 = 0.6;
/// A window whose every 20 ms is quieter than this (RMS, -80 dBFS: below the noise of a 16-bit
/// recording's quietest room) is silence, skipped before the encoder runs. Whisper's own no-speech test does not
/// catch digital silence: tiny.en hears " you" in it with an average log-probability of -0.3.
const SILENCE_RMS: f64 = 1e-4;
/// The first timestamp of a window is at most 1 s in.
const MAX_INITIAL_TIMESTAMP_INDEX: usize = 50;
/// Seconds per timestamp token.
const TIME_PRECISION: f64 = 0.02;
/// Mel frames per encoder position.
const INPUT_STRIDE: usize = 2;

/// How to transcribe.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The language's code, one the model knows; `None` on a multilingual model: detected on
    /// the first window with speech, and kept for the whole audio (as faster-whisper does).
    pub language: Option<String>,
    pub task: Task,
    /// The first temperature; on fallback it rises by 0.2 up to 1.0.
    pub temperature: f64,
    /// Text that conditions the first window (names, spelling, style).
    pub prompt: Option<String>,
    /// Time each word (one more decoder run per window; the seek then follows the last word).
    pub word_timestamps: bool,
}

/// One decoded window.
struct Decoded {
    /// Sampled tokens, without the end-of-text token.
    tokens: Vec<u32>,
    avg_logprob: f64,
    no_speech_prob: f64,
    temperature: f64,
    compression_ratio: f64,
}

/// `len(text) / len(zlib(text))` of the stripped text, as faster-whisper computes it: high for
/// text that repeats itself (a decoding loop).
pub fn compression_ratio(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    use std::io::Write as _;
    // Python's zlib.compress(text, level 6), as Whisper computes it.
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    let compressed = encoder
        .write_all(text.as_bytes())
        .and_then(|()| encoder.finish())
        .map(|bytes| bytes.len())
        .unwrap_or(text.len());
    text.len() as f64 / compressed.max(1) as f64
}

fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&x| ((x - max) as f64).exp()).sum();
    let log_sum = max as f64 + sum.ln();
    logits
        .iter()
        .map(|&x| (x as f64 - log_sum) as f32)
        .collect()
}

fn log_sum_exp(values: &[f32]) -> f64 {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let sum: f64 = values.iter().map(|&x| ((x - max) as f64).exp()).sum();
    max as f64 + sum.ln()
}

/// A small generator for sampling at temperature > 0 (splitmix64).
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A transcription in progress: yields segments as their windows are decoded. Dropping it
/// stops before the next window.
pub struct Transcriber {
    model: Arc<WhisperModel>,
    audio: Vec<f32>,
    options: Options,
    max_log: f32,
    content_frames: usize,
    seek: usize,
    all_tokens: Vec<u32>,
    prompt_reset_since: usize,
    last_speech_timestamp: f64,
    next_id: usize,
    pending: VecDeque<Segment>,
    rng: Rng,
    /// The language (given, or detected).
    language: Option<String>,
    /// Windows decoded so far.
    pub windows: usize,
    done: bool,
    /// The call's cancel, asked before each token (a window takes seconds on a large model).
    cancel: Cancel,
}

impl Transcriber {
    /// `audio`: mono 16 kHz samples. Once `cancel` is cancelled, decoding stops at the next
    /// token with a [`crate::ErrorKind::Cancelled`] error.
    pub fn new(
        model: Arc<WhisperModel>,
        audio: Vec<f32>,
        options: Options,
        cancel: Cancel,
    ) -> Self {
        let max_log = model.mel.global_max_log(&audio);
        let mut all_tokens = Vec::new();
        if let Some(prompt) = options
            .prompt
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            all_tokens = model.encode_text(&format!(" {prompt}"));
        }
        // A fixed seed: a window that falls back to sampling gives the same text on every run
        // of the same audio (as CTranslate2's fixed default seed does for faster-whisper).
        let seed = 0x5eed;
        let language = options.language.clone();
        Transcriber {
            content_frames: content_frames(audio.len()),
            model,
            audio,
            options,
            max_log,
            seek: 0,
            all_tokens,
            prompt_reset_since: 0,
            last_speech_timestamp: 0.0,
            next_id: 0,
            pending: VecDeque::new(),
            rng: Rng(seed),
            language,
            cancel,
            windows: 0,
            done: false,
        }
    }

    /// The language's code: the one given, else the one detected (`None` until the first
    /// window with speech on a multilingual model; `en` on an English-only one).
    pub fn language(&self) -> Option<&str> {
        if !self.model.languages.multilingual() {
            return Some("en");
        }
        self.language.as_deref()
    }

    /// The tokens a window's decoding starts with.
    fn sot_sequence(&self) -> Result<Vec<u32>> {
        self.model
            .sot_sequence(self.language.as_deref(), self.options.task)
    }

    /// Seconds of audio.
    pub fn duration(&self) -> f64 {
        self.audio.len() as f64 / SAMPLE_RATE as f64
    }

    /// Whisper's logit rules for the next token after `sampled` (the tokens of this window
    /// so far).
    fn apply_rules(&self, logits: &mut [f32], sampled: &[u32]) {
        let special = self.model.special;
        let begin = special.timestamp_begin as usize;
        let eot = special.eot as usize;
        let inf = f32::NEG_INFINITY;
        if sampled.is_empty() {
            for &t in &self.model.suppress_begin {
                if let Some(l) = logits.get_mut(t as usize) {
                    *l = inf;
                }
            }
        }
        for &t in &self.model.suppress {
            if let Some(l) = logits.get_mut(t as usize) {
                *l = inf;
            }
        }
        logits[special.no_timestamps as usize] = inf;
        let is_timestamp = |t: &u32| *t as usize >= begin;
        let last_was_timestamp = sampled.last().is_some_and(is_timestamp);
        let penultimate_was_timestamp =
            sampled.len() < 2 || is_timestamp(&sampled[sampled.len() - 2]);
        if last_was_timestamp {
            if penultimate_was_timestamp {
                // Timestamps come in pairs: after a pair, text.
                logits[begin..].fill(inf);
            } else {
                // After a lone timestamp: another timestamp or the end.
                logits[..eot].fill(inf);
            }
        }
        if let Some(&last) = sampled.iter().rev().find(|t| is_timestamp(t)) {
            // Timestamps never go back (and a new pair starts after the last one).
            let last = last as usize;
            let floor = if last_was_timestamp && !penultimate_was_timestamp {
                last
            } else {
                last + 1
            };
            let end = floor.min(logits.len());
            logits[begin..end].fill(inf);
        }
        if sampled.is_empty() {
            // A window starts with a timestamp, at most 1 s in.
            logits[..begin].fill(inf);
            let last_allowed = begin + MAX_INITIAL_TIMESTAMP_INDEX;
            if last_allowed + 1 < logits.len() {
                logits[last_allowed + 1..].fill(inf);
            }
        }
        // When all timestamps together are likelier than any text token, take a timestamp.
        let logprobs = log_softmax(logits);
        let timestamp_logprob = log_sum_exp(&logprobs[begin..]);
        let max_text = logprobs[..begin]
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max) as f64;
        if timestamp_logprob > max_text {
            logits[..begin].fill(inf);
        }
    }

    fn pick(&mut self, logits: &[f32], temperature: f64) -> usize {
        if temperature <= 0.0 {
            // The first of equal maxima, as torch's argmax.
            let mut best = 0;
            for (i, &l) in logits.iter().enumerate() {
                if l > logits[best] {
                    best = i;
                }
            }
            return best;
        }
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let weights: Vec<f64> = logits
            .iter()
            .map(|&l| ((l as f64 - max) / temperature).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut target = self.rng.next_f64() * total;
        for (i, w) in weights.iter().enumerate() {
            if *w > 0.0 {
                if target < *w {
                    return i;
                }
                target -= w;
            }
        }
        weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
    }

    /// Decodes one window at one temperature.
    fn decode(&mut self, cross: &[DynValue], prompt: &[u32], temperature: f64) -> Result<Decoded> {
        let special = self.model.special;
        let vocab = self.model.dims.vocab;
        let mut tokens: Vec<u32> = Vec::new();
        if !prompt.is_empty() {
            tokens.push(special.sot_prev);
            let keep = self.model.dims.n_text_ctx / 2 - 1;
            tokens.extend_from_slice(&prompt[prompt.len().saturating_sub(keep)..]);
        }
        let sot_index = tokens.len();
        tokens.extend(self.sot_sequence()?);
        let sample_begin = tokens.len();
        let ids: Vec<i64> = tokens.iter().map(|&t| t as i64).collect();
        let step = self.model.decode(
            &ids,
            &[sot_index as i64, ids.len() as i64 - 1],
            &self.model.empty_cache()?,
            cross,
            false,
        )?;
        let at_sot = log_softmax(&step.logits[..vocab]);
        let no_speech_prob = (at_sot[special.no_speech as usize] as f64).exp();
        let mut logits = step.logits[vocab..2 * vocab].to_vec();
        let mut cache = step.cache;
        let mut sum_logprob = 0f64;
        let mut ended = false;
        for _ in 0..SAMPLE_LEN {
            self.cancel.check()?;
            self.apply_rules(&mut logits, &tokens[sample_begin..]);
            let token = self.pick(&logits, temperature);
            sum_logprob += log_softmax(&logits)[token] as f64;
            tokens.push(token as u32);
            if token as u32 == special.eot {
                ended = true;
                break;
            }
            if tokens.len() >= self.model.dims.n_text_ctx {
                break;
            }
            let step = self
                .model
                .decode(&[token as i64], &[0], &cache, cross, false)?;
            logits = step.logits;
            cache = step.cache;
        }
        let mut sampled = tokens.split_off(sample_begin);
        if ended {
            sampled.pop();
        }
        let text = self.model.text(&sampled).trim().to_string();
        Ok(Decoded {
            avg_logprob: sum_logprob / (sampled.len() + 1) as f64,
            compression_ratio: compression_ratio(&text),
            tokens: sampled,
            no_speech_prob,
            temperature,
        })
    }

    /// Decodes a window, raising the temperature while the result looks like a loop or
    /// like noise.
    fn decode_with_fallback(&mut self, cross: &[DynValue], prompt: &[u32]) -> Result<Decoded> {
        let mut temperature = self.options.temperature;
        loop {
            let decoded = self.decode(cross, prompt, temperature)?;
            let mut fallback = decoded.compression_ratio > COMPRESSION_RATIO_THRESHOLD
                || decoded.avg_logprob < LOGPROB_THRESHOLD;
            if decoded.no_speech_prob > NO_SPEECH_THRESHOLD
                && decoded.avg_logprob < LOGPROB_THRESHOLD
            {
                fallback = false; // silence: keep it (it is skipped)
            }
            let next = ((temperature + 0.2) * 10.0).round() / 10.0;
            if !fallback || next > 1.0 + 1e-9 {
                return Ok(decoded);
            }
            temperature = next;
        }
    }

    fn segment(&self, seek: usize, start: f64, end: f64, tokens: &[u32], d: &Decoded) -> Segment {
        Segment {
            id: 0,
            seek,
            start,
            end,
            text: self.model.text(tokens),
            tokens: tokens.to_vec(),
            temperature: d.temperature,
            avg_logprob: d.avg_logprob,
            compression_ratio: d.compression_ratio,
            no_speech_prob: d.no_speech_prob,
            words: Vec::new(),
        }
    }

    /// Decodes the window at `self.seek`, queues its segments and moves the seek on.
    fn window(&mut self) -> Result<()> {
        let seek = self.seek;
        let segment_size = N_FRAMES.min(self.content_frames - seek);
        let time_offset = (seek * HOP) as f64 / SAMPLE_RATE as f64;
        let segment_duration = (segment_size * HOP) as f64 / SAMPLE_RATE as f64;
        let samples = &self.audio[(seek * HOP).min(self.audio.len())
            ..((seek + segment_size) * HOP).min(self.audio.len())];
        // The loudest 20 ms, not the window's mean: a short quiet word in 30 s is not silence.
        let loudest = samples
            .chunks(SAMPLE_RATE / 50)
            .map(|frame| {
                (frame
                    .iter()
                    .map(|&x| f64::from(x) * f64::from(x))
                    .sum::<f64>()
                    / frame.len() as f64)
                    .sqrt()
            })
            .fold(0.0, f64::max);
        if loudest < SILENCE_RMS {
            self.seek += segment_size;
            return Ok(());
        }
        let mel = self
            .model
            .mel
            .window(&self.audio, seek, segment_size, self.max_log);
        let cross = self.model.encode(&mel)?;
        drop(mel);
        self.windows += 1;
        if self.language.is_none() && self.model.languages.multilingual() {
            let (language, _probability) = self.model.detect_language(&cross)?;
            self.language = Some(language);
        }
        let prompt = self.all_tokens[self.prompt_reset_since..].to_vec();
        let decoded = self.decode_with_fallback(&cross, &prompt)?;
        if decoded.no_speech_prob > NO_SPEECH_THRESHOLD && decoded.avg_logprob <= LOGPROB_THRESHOLD
        {
            self.seek += segment_size; // silence
            if self.options.language.is_none() {
                // No speech here: a language detected on it (noise, music) is not the audio's,
                // so the next window detects again.
                self.language = None;
            }
            return Ok(());
        }
        let tokens = &decoded.tokens;
        let begin = self.model.special.timestamp_begin;
        let is_ts: Vec<bool> = tokens.iter().map(|&t| t >= begin).collect();
        let single_timestamp_ending =
            is_ts.len() >= 2 && !is_ts[is_ts.len() - 2] && is_ts[is_ts.len() - 1];
        let consecutive: Vec<usize> = (1..is_ts.len())
            .filter(|&i| is_ts[i - 1] && is_ts[i])
            .collect();
        let mut segments = Vec::new();
        if !consecutive.is_empty() {
            let mut slices = consecutive;
            if single_timestamp_ending {
                slices.push(tokens.len());
            }
            let mut last_slice = 0;
            for &current in &slices {
                let sliced = &tokens[last_slice..current];
                let start = (sliced[0] - begin) as f64 * TIME_PRECISION;
                let end = (sliced[sliced.len() - 1] - begin) as f64 * TIME_PRECISION;
                segments.push(self.segment(
                    seek,
                    time_offset + start,
                    time_offset + end,
                    sliced,
                    &decoded,
                ));
                last_slice = current;
            }
            if single_timestamp_ending {
                self.seek += segment_size;
            } else {
                let last_timestamp = (tokens[last_slice - 1] - begin) as usize;
                self.seek += last_timestamp * INPUT_STRIDE;
            }
        } else {
            let mut duration = segment_duration;
            if let Some(&last) = tokens.iter().rev().find(|&&t| t >= begin) {
                if last != begin {
                    duration = (last - begin) as f64 * TIME_PRECISION;
                }
            }
            segments.push(self.segment(
                seek,
                time_offset,
                time_offset + duration,
                tokens,
                &decoded,
            ));
            self.seek += segment_size;
        }
        if self.options.word_timestamps {
            self.last_speech_timestamp = words::add_word_timestamps(
                &self.model,
                &self.sot_sequence()?,
                &mut segments,
                &cross,
                segment_size,
                self.last_speech_timestamp,
            )?;
            if !single_timestamp_ending {
                if let Some(end) = last_end(&segments) {
                    if end > time_offset {
                        self.seek = (end * 100.0).round_ties_even() as usize;
                    }
                }
            }
            if let Some(end) = last_end(&segments) {
                self.last_speech_timestamp = end;
            }
        }
        // A window always moves the seek forward (a decoding that ends at its own first
        // timestamp would otherwise repeat forever).
        if self.seek <= seek {
            self.seek = seek + segment_size;
        }
        for segment in &mut segments {
            if segment.start == segment.end || segment.text.trim().is_empty() {
                segment.text.clear();
                segment.tokens.clear();
                segment.words.clear();
            }
        }
        for segment in &segments {
            self.all_tokens.extend_from_slice(&segment.tokens);
        }
        if decoded.temperature > 0.5 {
            self.prompt_reset_since = self.all_tokens.len();
        }
        // Whisper's last timestamp can fall a little past the end of the audio (a window's
        // timestamps count from its start in 20 ms steps).
        // Floored to 10 ms, the precision times are shown with (subtitles show milliseconds).
        let duration = (self.duration() * 100.0).floor() / 100.0;
        for mut segment in segments {
            segment.start = segment.start.min(duration);
            segment.end = segment.end.min(duration);
            for word in &mut segment.words {
                word.start = word.start.min(duration);
                word.end = word.end.min(duration);
            }
            if segment.text.is_empty() {
                continue; // openai-whisper keeps empty segments; the API shows none
            }
            segment.id = self.next_id;
            self.next_id += 1;
            self.pending.push_back(segment);
        }
        Ok(())
    }
}

/// The end of the last word, else of the last segment.
fn last_end(segments: &[Segment]) -> Option<f64> {
    segments
        .iter()
        .rev()
        .find_map(|s| s.words.last().map(|w| w.end))
        .or_else(|| segments.last().map(|s| s.end))
}

impl Iterator for Transcriber {
    type Item = Result<Segment>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(segment) = self.pending.pop_front() {
                return Some(Ok(segment));
            }
            if self.done || self.seek >= self.content_frames {
                self.done = true;
                return None;
            }
            if let Err(error) = self.window() {
                self.done = true;
                return Some(Err(error));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_ratio_is_zlibs() {
        // Python: len(t) / len(zlib.compress(t)) = 71 / 61.
        let text = "Ever tried, ever failed. No matter, try again. Fail again. Fail better.";
        assert!((compression_ratio(text) - 71.0 / 61.0).abs() < 1e-9);
        let looping = "I'm not going to do that. ".repeat(20);
        assert!(compression_ratio(&looping) > COMPRESSION_RATIO_THRESHOLD);
        assert_eq!(compression_ratio(""), 0.0);
    }
}
