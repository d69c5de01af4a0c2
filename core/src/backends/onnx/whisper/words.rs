//! Word timings, as openai-whisper's `timing.py` finds them: one decoder run over the window's
//! text gives the cross-attention of the alignment heads; softmax over the window's frames,
//! normalised per frame, median-filtered, averaged over heads; dynamic time warping then
//! aligns tokens to frames, and tokens are grouped into words.

use super::model::WhisperModel;
use super::segments::{Segment, Word};
use crate::error::Result;
use ort::value::DynValue;

const ASCII_PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const MEDFILT_WIDTH: usize = 7;
/// Encoder positions per second.
const TOKENS_PER_SECOND: f64 = 50.0;
const PREPEND_PUNCTUATIONS: &str = "\"'“¿([{-";
const APPEND_PUNCTUATIONS: &str = "\"'.。,，!！?？:：”)]}、";

struct Timing {
    word: String,
    tokens: Vec<u32>,
    start: f64,
    end: f64,
    probability: f64,
}

/// Median over a sliding window of `width` along `row`, reflecting at the edges.
fn median_filter(row: &mut [f32], width: usize) {
    let pad = width / 2;
    if row.len() <= pad {
        return;
    }
    let n = row.len() as isize;
    let reflect = |i: isize| -> usize {
        let i = if i < 0 { -i } else { i };
        let i = if i >= n { 2 * (n - 1) - i } else { i };
        i.clamp(0, n - 1) as usize
    };
    let source = row.to_vec();
    let mut window = vec![0f32; width];
    for (t, out) in row.iter_mut().enumerate() {
        for (k, w) in window.iter_mut().enumerate() {
            *w = source[reflect(t as isize + k as isize - pad as isize)];
        }
        window.sort_by(f32::total_cmp);
        *out = window[pad];
    }
}

/// The monotonic path through `cost` [n, m] of least total cost (openai-whisper's dtw_cpu):
/// (text index, time index) pairs from the start.
fn dtw(x: &[f32], n: usize, m: usize) -> (Vec<usize>, Vec<usize>) {
    let inf = f32::INFINITY;
    let mut cost = vec![inf; (n + 1) * (m + 1)];
    let mut trace = vec![-1i8; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    cost[0] = 0.0;
    for j in 1..=m {
        for i in 1..=n {
            let c0 = cost[at(i - 1, j - 1)];
            let c1 = cost[at(i - 1, j)];
            let c2 = cost[at(i, j - 1)];
            let (c, t) = if c0 < c1 && c0 < c2 {
                (c0, 0)
            } else if c1 < c0 && c1 < c2 {
                (c1, 1)
            } else {
                (c2, 2)
            };
            cost[at(i, j)] = x[(i - 1) * m + (j - 1)] + c;
            trace[at(i, j)] = t;
        }
    }
    for j in 0..=m {
        trace[at(0, j)] = 2;
    }
    for i in 0..=n {
        trace[at(i, 0)] = 1;
    }
    let (mut i, mut j) = (n, m);
    let mut path = Vec::new();
    while i > 0 || j > 0 {
        path.push((i.saturating_sub(1), j.saturating_sub(1)));
        match trace[at(i, j)] {
            0 => {
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            _ => j -= 1,
        }
    }
    path.reverse();
    path.into_iter().unzip()
}

/// Splits tokens where they decode to whole characters, then into words: a word starts at a
/// space, a punctuation mark or a special token.
fn split_words(model: &WhisperModel, tokens: &[u32]) -> (Vec<String>, Vec<Vec<u32>>) {
    let decode = |ts: &[u32]| -> String {
        let mut out = String::new();
        let mut text = Vec::new();
        for &t in ts {
            if t < model.special.eot {
                text.push(t);
            } else {
                out.push_str(&model.tokenizer.decode(&text, false).unwrap_or_default());
                text.clear();
                out.push_str(&model.tokenizer.id_to_token(t).unwrap_or_default());
            }
        }
        out.push_str(&model.tokenizer.decode(&text, false).unwrap_or_default());
        out
    };
    let full: Vec<char> = decode(tokens).chars().collect();
    let mut subwords: Vec<String> = Vec::new();
    let mut subword_tokens: Vec<Vec<u32>> = Vec::new();
    let mut current = Vec::new();
    let mut offset = 0;
    for &token in tokens {
        current.push(token);
        let decoded = decode(&current);
        let chars: Vec<char> = decoded.chars().collect();
        let whole = match chars.iter().position(|&c| c == '\u{fffd}') {
            None => true,
            Some(at) => full.get(offset + at) == Some(&'\u{fffd}'),
        };
        if whole {
            offset += chars.len();
            subwords.push(decoded);
            subword_tokens.push(std::mem::take(&mut current));
        }
    }
    let mut words: Vec<String> = Vec::new();
    let mut word_tokens: Vec<Vec<u32>> = Vec::new();
    for (subword, tokens) in subwords.into_iter().zip(subword_tokens) {
        let special = tokens[0] >= model.special.eot;
        let with_space = subword.starts_with(' ');
        let trimmed = subword.trim();
        // Python's `subword.strip() in string.punctuation`: a substring test ("" included).
        let punctuation = ASCII_PUNCTUATION.contains(trimmed);
        if special || with_space || punctuation || words.is_empty() {
            words.push(subword);
            word_tokens.push(tokens);
        } else if let (Some(w), Some(t)) = (words.last_mut(), word_tokens.last_mut()) {
            w.push_str(&subword);
            t.extend(tokens);
        }
    }
    (words, word_tokens)
}

fn find_alignment(
    model: &WhisperModel,
    sot_sequence: &[u32],
    text_tokens: &[u32],
    cross: &[DynValue],
    num_frames: usize,
) -> Result<Vec<Timing>> {
    if text_tokens.is_empty() {
        return Ok(Vec::new());
    }
    let special = model.special;
    let mut tokens: Vec<i64> = sot_sequence.iter().map(|&t| t as i64).collect();
    tokens.push(special.no_timestamps as i64);
    tokens.extend(text_tokens.iter().map(|&t| t as i64));
    tokens.push(special.eot as i64);
    let sot_len = sot_sequence.len();
    // Logits at position i predict token i + 1: the text tokens' own probabilities.
    let positions: Vec<i64> = (sot_len..sot_len + text_tokens.len())
        .map(|p| p as i64)
        .collect();
    let step = model.decode(&tokens, &positions, &model.empty_cache()?, cross, true)?;
    let vocab = model.dims.vocab;
    let eot = special.eot as usize;
    let probabilities: Vec<f64> = step
        .logits
        .chunks_exact(vocab)
        .zip(text_tokens)
        .map(|(row, &t)| {
            let row = &row[..eot];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
            (row[t as usize] as f64 - max).exp() / sum
        })
        .collect();
    let scores = step.alignment.unwrap_or_default();
    let heads = model.alignment_heads;
    let n = tokens.len();
    let audio_ctx = model.dims.n_audio_ctx;
    let frames = (num_frames / 2).clamp(1, audio_ctx);
    // weights[h][t][f]: softmax over the window's frames.
    let mut weights = vec![0f32; heads * n * frames];
    for h in 0..heads {
        for t in 0..n {
            let source = &scores[(h * n + t) * audio_ctx..][..frames];
            let max = source.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let target = &mut weights[(h * n + t) * frames..][..frames];
            let mut sum = 0f32;
            for (w, s) in target.iter_mut().zip(source) {
                *w = (s - max).exp();
                sum += *w;
            }
            target.iter_mut().for_each(|w| *w /= sum);
        }
        // Normalise each frame over tokens (std_mean, biased), then median-filter each row.
        for f in 0..frames {
            let column = |t: usize| weights[(h * n + t) * frames + f];
            let mean = (0..n).map(column).sum::<f32>() / n as f32;
            let var = (0..n).map(|t| (column(t) - mean).powi(2)).sum::<f32>() / n as f32;
            let std = var.sqrt();
            for t in 0..n {
                let w = &mut weights[(h * n + t) * frames + f];
                *w = (*w - mean) / std;
            }
        }
        for t in 0..n {
            median_filter(
                &mut weights[(h * n + t) * frames..][..frames],
                MEDFILT_WIDTH,
            );
        }
    }
    // The mean over heads, rows sot_len .. n-1 (the no-timestamps token and the text).
    let rows = n - 1 - sot_len;
    let mut matrix = vec![0f32; rows * frames];
    for (r, row) in matrix.chunks_exact_mut(frames).enumerate() {
        for h in 0..heads {
            let source = &weights[(h * n + sot_len + r) * frames..][..frames];
            for (m, w) in row.iter_mut().zip(source) {
                *m += w / heads as f32;
            }
        }
        row.iter_mut().for_each(|m| *m = -*m);
    }
    let (text_indices, time_indices) = dtw(&matrix, rows, frames);
    let mut with_eot = text_tokens.to_vec();
    with_eot.push(special.eot);
    let (words, word_tokens) = split_words(model, &with_eot);
    if word_tokens.len() <= 1 {
        return Ok(Vec::new());
    }
    let mut boundaries = vec![0usize];
    for t in &word_tokens[..word_tokens.len() - 1] {
        boundaries.push(boundaries.last().copied().unwrap_or(0) + t.len());
    }
    let jump_times: Vec<f64> = (0..text_indices.len())
        .filter(|&i| i == 0 || text_indices[i] != text_indices[i - 1])
        .map(|i| time_indices[i] as f64 / TOKENS_PER_SECOND)
        .collect();
    let time = |i: usize| {
        jump_times
            .get(i)
            .or(jump_times.last())
            .copied()
            .unwrap_or(0.0)
    };
    let mut timings = Vec::new();
    for (k, (word, tokens)) in words.into_iter().zip(word_tokens).enumerate() {
        if k + 1 >= boundaries.len() {
            break; // the end-of-text "word"
        }
        let (i, j) = (boundaries[k], boundaries[k + 1]);
        let p = &probabilities[i.min(probabilities.len())..j.min(probabilities.len())];
        timings.push(Timing {
            word,
            tokens,
            start: time(i),
            end: time(j),
            probability: if p.is_empty() {
                0.0
            } else {
                p.iter().sum::<f64>() / p.len() as f64
            },
        });
    }
    Ok(timings)
}

fn merge_punctuations(alignment: &mut [Timing]) {
    if alignment.len() < 2 {
        return;
    }
    // Opening marks join the word after them.
    let mut i = alignment.len() as isize - 2;
    let mut j = alignment.len() - 1;
    while i >= 0 {
        let iu = i as usize;
        let previous = &alignment[iu];
        if previous.word.starts_with(' ') && PREPEND_PUNCTUATIONS.contains(previous.word.trim()) {
            let word = std::mem::take(&mut alignment[iu].word);
            let tokens = std::mem::take(&mut alignment[iu].tokens);
            let following = &mut alignment[j];
            following.word = word + &following.word;
            following.tokens.splice(0..0, tokens);
        } else {
            j = iu;
        }
        i -= 1;
    }
    // Closing marks join the word before them.
    let (mut i, mut j) = (0, 1);
    while j < alignment.len() {
        // Substring tests, as openai-whisper's `in` (an emptied word counts).
        let following_is_mark = APPEND_PUNCTUATIONS.contains(alignment[j].word.as_str());
        if !alignment[i].word.ends_with(' ') && following_is_mark {
            let word = std::mem::take(&mut alignment[j].word);
            let tokens = std::mem::take(&mut alignment[j].tokens);
            alignment[i].word.push_str(&word);
            alignment[i].tokens.extend(tokens);
        } else {
            i = j;
        }
        j += 1;
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Times the words of a window's `segments`; returns the new last-speech time.
pub fn add_word_timestamps(
    model: &WhisperModel,
    sot_sequence: &[u32],
    segments: &mut [Segment],
    cross: &[DynValue],
    num_frames: usize,
    mut last_speech_timestamp: f64,
) -> Result<f64> {
    if segments.is_empty() {
        return Ok(last_speech_timestamp);
    }
    let eot = model.special.eot;
    let per_segment: Vec<Vec<u32>> = segments
        .iter()
        .map(|s| s.tokens.iter().copied().filter(|&t| t < eot).collect())
        .collect();
    let text_tokens: Vec<u32> = per_segment.iter().flatten().copied().collect();
    let mut alignment = find_alignment(model, sot_sequence, &text_tokens, cross, num_frames)?;
    let mut durations: Vec<f64> = alignment
        .iter()
        .map(|t| t.end - t.start)
        .filter(|d| *d != 0.0)
        .collect();
    durations.sort_by(f64::total_cmp);
    let median = match durations.len() {
        0 => 0.0,
        n if n % 2 == 1 => durations[n / 2],
        n => (durations[n / 2 - 1] + durations[n / 2]) / 2.0,
    };
    let median_duration = median.min(0.7);
    let max_duration = median_duration * 2.0;
    if !durations.is_empty() {
        // Long words at sentence boundaries are truncated.
        let marks = [".", "。", "!", "！", "?", "？"];
        for i in 1..alignment.len() {
            if alignment[i].end - alignment[i].start > max_duration {
                if marks.contains(&alignment[i].word.as_str()) {
                    alignment[i].end = alignment[i].start + max_duration;
                } else if marks.contains(&alignment[i - 1].word.as_str()) {
                    alignment[i].start = alignment[i].end - max_duration;
                }
            }
        }
    }
    merge_punctuations(&mut alignment);
    let time_offset = (segments[0].seek * super::mel::HOP) as f64 / super::mel::SAMPLE_RATE as f64;
    let mut word_index = 0;
    for (segment, text_tokens) in segments.iter_mut().zip(&per_segment) {
        let mut saved_tokens = 0;
        let mut words: Vec<Word> = Vec::new();
        while word_index < alignment.len() && saved_tokens < text_tokens.len() {
            let timing = &alignment[word_index];
            if !timing.word.is_empty() {
                words.push(Word {
                    word: timing.word.clone(),
                    start: round2(time_offset + timing.start),
                    end: round2(time_offset + timing.end),
                    probability: timing.probability,
                });
            }
            saved_tokens += timing.tokens.len();
            word_index += 1;
        }
        if let Some(first) = words.first().cloned() {
            // The first word after a pause is not longer than twice the median.
            let long_first = first.end - first.start > max_duration
                || (words.len() > 1 && words[1].end - first.start > max_duration * 2.0);
            if first.end - last_speech_timestamp > median_duration * 4.0 && long_first {
                if words.len() > 1 && words[1].end - words[1].start > max_duration {
                    let boundary = (words[1].end / 2.0).max(words[1].end - max_duration);
                    words[0].end = boundary;
                    words[1].start = boundary;
                }
                words[0].start = (words[0].end - max_duration).max(0.0);
            }
            // Prefer the segment's own start when the first word is too long.
            if segment.start < words[0].end && segment.start - 0.5 > words[0].start {
                words[0].start = (words[0].end - median_duration).min(segment.start).max(0.0);
            } else {
                segment.start = words[0].start;
            }
            let last = words.len() - 1;
            if segment.end > words[last].start && segment.end + 0.5 < words[last].end {
                words[last].end = (words[last].start + median_duration).max(segment.end);
            } else {
                segment.end = words[last].end;
            }
            last_speech_timestamp = segment.end;
        }
        segment.words = words;
    }
    Ok(last_speech_timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtw_takes_openai_whispers_path() {
        // openai-whisper's dtw_cpu on the same 4 × 7 matrix (ties go to the left step).
        let x = [
            1.76, 0.4, 0.98, 2.24, 1.87, -0.98, 0.95, -0.15, -0.1, 0.41, 0.14, 1.45, 0.76, 0.12,
            0.44, 0.33, 1.49, -0.21, 0.31, -0.85, -2.55, 0.65, 0.86, -0.74, 2.27, -1.45, 0.05,
            -0.19,
        ];
        let (text, time) = dtw(&x, 4, 7);
        assert_eq!(text, vec![0, 1, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(time, vec![0, 0, 1, 2, 3, 4, 5, 6, 6]);
        let (text, time) = dtw(&[-1.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, -1.0], 2, 4);
        assert_eq!((text, time), (vec![0, 0, 1, 1, 1], vec![0, 1, 1, 2, 3]));
    }

    #[test]
    fn median_filter_reflects_at_the_edges() {
        let mut row = [5.0, 1.0, 1.0, 9.0, 1.0];
        median_filter(&mut row, 3);
        assert_eq!(row, [1.0, 1.0, 1.0, 1.0, 9.0]);
    }
}
