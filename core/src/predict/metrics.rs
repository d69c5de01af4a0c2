//! Load figures of a predictor ([`Metrics`]): what `ingle serve`'s `/metrics` exports, what
//! tests read to see batching and cancellation. Counters count since the predictor loaded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Load figures of a predictor, for monitoring and for tests that must see cancellation.
/// Figures a predictor does not keep are 0 (an empty histogram).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Predictions running now.
    pub active_requests: usize,
    /// Predictions waiting for a free slot.
    pub queued_requests: usize,
    /// Tokens (or steps) produced since the predictor loaded.
    pub generated_tokens: u64,
    /// Of `generated_tokens`, those a grammar forced and that were decoded in a batch rather
    /// than sampled one by one (jump-forward decoding of constrained output).
    pub forced_tokens: u64,
    /// Tokens proposed by speculative decoding, and those of them the model accepted (the
    /// acceptance rate is their ratio).
    pub draft_tokens: u64,
    pub accepted_draft_tokens: u64,
    /// Prompt tokens taken in since the predictor loaded (embedding inputs' tokens included).
    pub prompt_tokens: u64,
    /// Predictions stopped because their consumer went away.
    pub cancelled_requests: u64,
    /// KV-cache cells (token positions) held by running sequences, and the cache's size:
    /// a chat model's load as routers read it (vLLM's `kv_cache_usage_perc`).
    pub kv_cells_used: u64,
    pub kv_cells_total: u64,
    /// Milliseconds of audio taken in (transcription) and made (speech).
    pub audio_input_ms: u64,
    pub audio_output_ms: u64,
    /// Bytes the model takes in memory: a chat model's weights and KV cache, an ONNX model's
    /// weights file (0: not known).
    pub memory_bytes: u64,
    /// From a request's arrival to its start (a free sequence slot).
    pub queue_wait: Histogram,
    /// From a request's arrival to its first generated token.
    pub time_to_first_token: Histogram,
    /// Per request: the time between its output tokens after the first.
    pub time_per_output_token: Histogram,
}

impl Metrics {
    /// The figures as JSON (what the Python and Node `metrics()` return): counts as numbers,
    /// audio in seconds, each histogram as `{count, sum_seconds, buckets: [[le, cumulative]]}`
    /// (`le` null for +Inf).
    pub fn to_json(&self) -> serde_json::Value {
        let histogram = |h: &Histogram| {
            let buckets: Vec<serde_json::Value> = h
                .cumulative()
                .into_iter()
                .map(|(le, n)| serde_json::json!([le.is_finite().then_some(le), n]))
                .collect();
            serde_json::json!({"count": h.count(), "sum_seconds": h.sum_seconds(), "buckets": buckets})
        };
        serde_json::json!({
            "active_requests": self.active_requests,
            "queued_requests": self.queued_requests,
            "generated_tokens": self.generated_tokens,
            "forced_tokens": self.forced_tokens,
            "draft_tokens": self.draft_tokens,
            "accepted_draft_tokens": self.accepted_draft_tokens,
            "prompt_tokens": self.prompt_tokens,
            "cancelled_requests": self.cancelled_requests,
            "kv_cells_used": self.kv_cells_used,
            "kv_cells_total": self.kv_cells_total,
            "audio_input_seconds": self.audio_input_ms as f64 / 1000.0,
            "audio_output_seconds": self.audio_output_ms as f64 / 1000.0,
            "memory_bytes": self.memory_bytes,
            "queue_wait": histogram(&self.queue_wait),
            "time_to_first_token": histogram(&self.time_to_first_token),
            "time_per_output_token": histogram(&self.time_per_output_token),
        })
    }
}

/// Upper bounds of the [`Histogram`] buckets, in seconds (Prometheus' `le`); a last bucket,
/// `+Inf`, takes the rest.
pub const HISTOGRAM_BOUNDS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Durations counted into the buckets of [`HISTOGRAM_BOUNDS`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Observations per bucket (not cumulative): `counts[i]` fell at or under
    /// `HISTOGRAM_BOUNDS[i]` and over the bound before; the last one is over every bound.
    pub counts: [u64; HISTOGRAM_BOUNDS.len() + 1],
    /// The sum of the observations, in microseconds.
    pub sum_micros: u64,
}

impl Histogram {
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn sum_seconds(&self) -> f64 {
        self.sum_micros as f64 / 1e6
    }

    /// `(upper bound, observations at or under it)`, the `+Inf` bucket last: Prometheus'
    /// cumulative buckets.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        HISTOGRAM_BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts)
            .map(|(bound, count)| {
                total += count;
                (bound, total)
            })
            .collect()
    }
}

/// A [`Histogram`] that threads record into without a lock.
#[derive(Debug, Default)]
pub struct AtomicHistogram {
    counts: [AtomicU64; HISTOGRAM_BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

impl AtomicHistogram {
    pub fn record(&self, duration: Duration) {
        let seconds = duration.as_secs_f64();
        let bucket = HISTOGRAM_BOUNDS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(HISTOGRAM_BOUNDS.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add(duration.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Histogram {
        Histogram {
            counts: std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)),
            sum_micros: self.sum_micros.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_puts_each_duration_in_the_first_bucket_that_holds_it() {
        let histogram = AtomicHistogram::default();
        for ms in [0, 1, 2, 70, 70_000] {
            histogram.record(Duration::from_millis(ms));
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count(), 5);
        assert_eq!(snapshot.sum_micros, 70_073_000);
        let cumulative = snapshot.cumulative();
        assert_eq!(cumulative[0], (0.001, 2)); // 0 and 1 ms: `le` is inclusive
        assert_eq!(cumulative[1], (0.0025, 3));
        assert_eq!(cumulative[5], (0.05, 3));
        assert_eq!(cumulative[6], (0.1, 4));
        assert_eq!(cumulative[14], (60.0, 4));
        assert_eq!(cumulative[15], (f64::INFINITY, 5));
    }
}
