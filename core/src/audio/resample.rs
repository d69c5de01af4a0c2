//! Band-limited resampling of mono f32 (rubato's FFT resampler), fed in pieces of any size.

use crate::error::{Error, Result};
use rubato::audioadapter_buffers::direct::SequentialSlice;
use rubato::{Fft, FixedSync, Resampler as _};

/// Input frames per FFT chunk, roughly (46 ms at 22.05 kHz): little is held back between pushes.
const CHUNK: usize = 1024;

/// A resampler usable incrementally: the state carries across [`process`](Self::process) calls,
/// so chunk boundaries leave no clicks. The output is aligned with the input (the filter's delay
/// is dropped), and [`finish`](Self::finish) flushes the tail: n input samples give
/// round(n · to / from) output samples in all.
pub struct Resampler {
    /// `None` when the rates are equal.
    fft: Option<Fft<f32>>,
    from: u64,
    to: u64,
    /// Input not yet making a whole chunk.
    pending: Vec<f32>,
    input_total: u64,
    output_total: u64,
    /// Output frames of filter delay still to drop.
    skip: usize,
}

impl Resampler {
    pub fn new(from: u32, to: u32) -> Result<Self> {
        if from == 0 || to == 0 {
            return Err(Error::internal(format!(
                "cannot resample {from} Hz to {to} Hz"
            )));
        }
        let fft = if from == to {
            None
        } else {
            // The chunk is a whole number of `from / gcd` blocks; an even number, so the sinc
            // filter's centre (chunk / 2 input frames) is exactly the output_delay() we drop.
            let block = (from / gcd(from, to)) as usize;
            let chunk = CHUNK.div_ceil(block).next_multiple_of(2) * block;
            let fft = Fft::new(from as usize, to as usize, chunk, 1, FixedSync::Both)
                .map_err(|e| Error::internal(format!("resampler {from} -> {to} Hz: {e}")))?;
            Some(fft)
        };
        Ok(Resampler {
            skip: fft.as_ref().map_or(0, |fft| fft.output_delay()),
            fft,
            from: from.into(),
            to: to.into(),
            pending: Vec::new(),
            input_total: 0,
            output_total: 0,
        })
    }

    /// Resamples these samples; returns the output ready now.
    pub fn process(&mut self, input: &[f32]) -> Vec<f32> {
        self.input_total += input.len() as u64;
        let Some(fft) = &mut self.fft else {
            self.output_total += input.len() as u64;
            return input.to_vec();
        };
        self.pending.extend_from_slice(input);
        let chunk = fft.input_frames_next();
        let mut out = Vec::new();
        let mut start = 0;
        while self.pending.len() - start >= chunk {
            run(
                fft,
                &self.pending[start..start + chunk],
                &mut self.skip,
                &mut out,
            );
            start += chunk;
        }
        self.pending.drain(..start);
        self.output_total += out.len() as u64;
        out
    }

    /// Flushes the tail (zeros pushed through the filter, output cut at the exact length);
    /// the resampler is then ready for a new signal.
    pub fn finish(&mut self) -> Vec<f32> {
        let expected = (2 * self.input_total * self.to + self.from) / (2 * self.from);
        let mut out = Vec::new();
        if let Some(fft) = &mut self.fft {
            let chunk = fft.input_frames_next();
            while self.output_total + (out.len() as u64) < expected {
                self.pending.resize(chunk, 0.0);
                run(fft, &self.pending, &mut self.skip, &mut out);
                self.pending.clear();
            }
            fft.reset();
            self.skip = fft.output_delay();
        }
        out.truncate((expected - self.output_total.min(expected)) as usize);
        self.pending.clear();
        self.input_total = 0;
        self.output_total = 0;
        out
    }
}

/// Resamples one whole chunk, dropping the first `skip` output frames.
fn run(fft: &mut Fft<f32>, chunk: &[f32], skip: &mut usize, out: &mut Vec<f32>) {
    // Both unwraps hold by construction: a mono slice of exactly input_frames_next frames.
    let input = SequentialSlice::new(chunk, 1, chunk.len()).expect("mono chunk");
    let resampled = fft.process(&input, None).expect("whole chunk").take_data();
    let dropped = (*skip).min(resampled.len());
    *skip -= dropped;
    out.extend_from_slice(&resampled[dropped..]);
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
