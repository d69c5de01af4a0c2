//! Whisper's 80-bin log-mel spectrogram, computed exactly as openai-whisper does: 25 ms
//! periodic-Hann frames every 10 ms (n_fft 400, hop 160) with reflect padding at the start,
//! power spectrum, librosa's Slaney mel filter bank, log10 clamped at 1e-10, floored at the
//! global maximum minus 8, then `(x + 4) / 4`.
//!
//! The global maximum is taken over the whole recording (one pass that keeps nothing), and
//! each 30-second window is computed when the decoder gets to it, so memory does not grow
//! with the length of the audio. Frames past the end of the audio are 0.0, as Whisper's
//! `pad_or_trim` leaves them.

use realfft::{RealFftPlanner, RealToComplex};
use std::sync::Arc;

pub const SAMPLE_RATE: usize = 16_000;
pub const N_FFT: usize = 400;
pub const HOP: usize = 160;
/// Frames in a 30-second window.
pub const N_FRAMES: usize = 3000;

/// The mel filter bank, stored sparsely (each filter covers a few FFT bins).
pub struct MelFilters {
    n_mels: usize,
    /// Per mel bin: the first FFT bin and the weights from there.
    rows: Vec<(usize, Vec<f32>)>,
    window: Vec<f32>,
    fft: Arc<dyn RealToComplex<f32>>,
}

fn hz_to_mel(hz: f64) -> f64 {
    // Slaney: linear below 1 kHz, logarithmic above.
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / log_step
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (log_step * (mel - min_log_mel)).exp()
    } else {
        f_sp * mel
    }
}

/// librosa.filters.mel(sr=16000, n_fft=400, n_mels) with Slaney scale and normalisation, as a
/// dense [n_mels, n_fft/2 + 1] matrix.
pub fn filter_bank(n_mels: usize) -> Vec<Vec<f64>> {
    let bins = N_FFT / 2 + 1;
    let fft_freqs: Vec<f64> = (0..bins)
        .map(|k| k as f64 * SAMPLE_RATE as f64 / N_FFT as f64)
        .collect();
    let (low, high) = (hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE as f64 / 2.0));
    let mel_freqs: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(low + (high - low) * i as f64 / (n_mels + 1) as f64))
        .collect();
    (0..n_mels)
        .map(|m| {
            let (left, center, right) = (mel_freqs[m], mel_freqs[m + 1], mel_freqs[m + 2]);
            let norm = 2.0 / (right - left);
            fft_freqs
                .iter()
                .map(|&f| {
                    let lower = (f - left) / (center - left);
                    let upper = (right - f) / (right - center);
                    lower.min(upper).max(0.0) * norm
                })
                .collect()
        })
        .collect()
}

impl MelFilters {
    pub fn new(n_mels: usize) -> Self {
        let rows = filter_bank(n_mels)
            .into_iter()
            .map(|row| {
                let first = row.iter().position(|w| *w > 0.0).unwrap_or(0);
                let last = row.iter().rposition(|w| *w > 0.0).unwrap_or(0);
                let weights = row[first..=last.max(first)]
                    .iter()
                    .map(|w| *w as f32)
                    .collect();
                (first, weights)
            })
            .collect();
        let window = (0..N_FFT)
            .map(|n| {
                (0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos()) as f32
            })
            .collect();
        MelFilters {
            n_mels,
            rows,
            window,
            fft: RealFftPlanner::<f32>::new().plan_fft_forward(N_FFT),
        }
    }

    /// The mel power of frame `frame` of `audio` (frames are centred on `frame * HOP`; the
    /// signal is reflected at its start and zero past its end), into `out` [n_mels].
    fn frame_power(&self, audio: &[f32], frame: usize, scratch: &mut Scratch, out: &mut [f32]) {
        let centre = (frame * HOP) as isize;
        let half = (N_FFT / 2) as isize;
        for (n, slot) in scratch.input.iter_mut().enumerate() {
            let mut i = centre - half + n as isize;
            if i < 0 {
                i = -i; // torch.stft(center=True, pad_mode="reflect")
            }
            let sample = audio.get(i as usize).copied().unwrap_or(0.0);
            *slot = sample * self.window[n];
        }
        // The FFT of 400 real values cannot fail with buffers of the planned sizes.
        let _ = self.fft.process_with_scratch(
            &mut scratch.input,
            &mut scratch.spectrum,
            &mut scratch.fft,
        );
        for (power, c) in scratch.power.iter_mut().zip(&scratch.spectrum) {
            *power = c.re * c.re + c.im * c.im;
        }
        for (value, (first, weights)) in out.iter_mut().zip(&self.rows) {
            *value = weights
                .iter()
                .zip(&scratch.power[*first..])
                .map(|(w, p)| w * p)
                .sum();
        }
    }

    /// The largest log10 mel value over the whole of `audio` (Whisper's floor is 8 below it).
    pub fn global_max_log(&self, audio: &[f32]) -> f32 {
        let mut scratch = Scratch::new(self);
        let mut mel = vec![0f32; self.n_mels];
        // Frames whose window reaches into the audio; later ones are silence.
        let frames = (audio.len() + N_FFT / 2).div_ceil(HOP).max(1);
        let mut peak = 1e-10f32;
        for frame in 0..frames {
            self.frame_power(audio, frame, &mut scratch, &mut mel);
            peak = mel.iter().fold(peak, |a, &b| a.max(b));
        }
        peak.log10()
    }

    /// The normalised log-mel window of frames `seek .. seek + count` (count ≤ N_FRAMES),
    /// zero-padded to N_FRAMES: [n_mels, N_FRAMES], row-major, as the encoder takes it.
    pub fn window(&self, audio: &[f32], seek: usize, count: usize, max_log: f32) -> Vec<f32> {
        let mut out = vec![0f32; self.n_mels * N_FRAMES];
        let mut scratch = Scratch::new(self);
        let mut mel = vec![0f32; self.n_mels];
        let floor = max_log - 8.0;
        for t in 0..count.min(N_FRAMES) {
            self.frame_power(audio, seek + t, &mut scratch, &mut mel);
            for (m, value) in mel.iter().enumerate() {
                let log = value.max(1e-10).log10().max(floor);
                out[m * N_FRAMES + t] = (log + 4.0) / 4.0;
            }
        }
        out
    }
}

struct Scratch {
    input: Vec<f32>,
    spectrum: Vec<realfft::num_complex::Complex<f32>>,
    fft: Vec<realfft::num_complex::Complex<f32>>,
    power: Vec<f32>,
}

impl Scratch {
    fn new(filters: &MelFilters) -> Self {
        Scratch {
            input: filters.fft.make_input_vec(),
            spectrum: filters.fft.make_output_vec(),
            fft: filters.fft.make_scratch_vec(),
            power: vec![0.0; N_FFT / 2 + 1],
        }
    }
}

/// Frames of content in `samples` samples of 16 kHz audio.
pub fn content_frames(samples: usize) -> usize {
    samples / HOP
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> serde_json::Value {
        let text = include_str!("../../../../../tests/data/whisper_mel_beckett.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn filter_bank_is_librosas_slaney_bank() {
        // Rows of openai-whisper's mel_filters.npz (librosa.filters.mel(16000, 400, 80)).
        let reference = reference();
        let bank = filter_bank(80);
        for (bin, pairs) in reference["filterbank"]["rows"].as_object().unwrap() {
            let row = &bank[bin.parse::<usize>().unwrap()];
            let nonzero: Vec<(usize, f64)> = row
                .iter()
                .enumerate()
                .filter(|(_, w)| **w > 0.0)
                .map(|(i, w)| (i, *w))
                .collect();
            let pairs = pairs.as_array().unwrap();
            assert_eq!(nonzero.len(), pairs.len(), "mel bin {bin}");
            for ((i, w), pair) in nonzero.iter().zip(pairs) {
                assert_eq!(*i as u64, pair[0].as_u64().unwrap(), "mel bin {bin}");
                assert!(
                    (w - pair[1].as_f64().unwrap()).abs() < 1e-7,
                    "mel bin {bin}"
                );
            }
        }
    }

    #[test]
    fn log_mel_of_a_recording_is_whispers() {
        let dir = std::env::var_os("INGLE_MODELS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(crate::config::default_models_dir);
        let path = dir.join("recordings/beckett.wav");
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!(
                "skipped: {} is missing (`ingle pull recordings`)",
                path.display()
            );
            return;
        };
        let audio = crate::audio::decode_to_mono(&bytes, None, 16_000)
            .unwrap()
            .samples;
        let filters = MelFilters::new(80);
        let reference = reference();
        let window = &reference["transcribe_window"];
        let max = filters.global_max_log(&audio);
        assert!(
            (max as f64 - window["global_max_log10_padding160"].as_f64().unwrap()).abs() < 1e-4
        );
        let frames = content_frames(audio.len());
        assert_eq!(frames as u64, window["content_frames"].as_u64().unwrap());
        let mel = filters.window(&audio, 0, frames, max);
        let mut worst = 0f64;
        for (frame, values) in window["values"].as_object().unwrap() {
            let frame: usize = frame.parse().unwrap();
            for (m, value) in values.as_array().unwrap().iter().enumerate() {
                let ours = mel[m * N_FRAMES + frame] as f64;
                worst = worst.max((ours - value.as_f64().unwrap()).abs());
            }
        }
        // The reference is rounded to 6 decimals and computed in float32 by numpy.
        assert!(worst < 2e-4, "largest difference {worst}");
    }
}
