//! What a transcription gives: segments, each with its words when word timestamps are asked.
//! Apart from `transcribe.rs`, which makes them, and `words.rs`, which times the words, so that
//! neither of those two uses the other's definitions.

#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub word: String,
    pub start: f64,
    pub end: f64,
    pub probability: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub id: usize,
    /// The window's start, in mel frames (10 ms).
    pub seek: usize,
    pub start: f64,
    pub end: f64,
    pub text: String,
    pub tokens: Vec<u32>,
    pub temperature: f64,
    pub avg_logprob: f64,
    pub compression_ratio: f64,
    pub no_speech_prob: f64,
    pub words: Vec<Word>,
}
