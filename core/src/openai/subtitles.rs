//! The subtitle formats of `audio.transcriptions` and `audio.translations`: SubRip (`srt`) and
//! WebVTT (`vtt`), one cue per segment.

pub(super) fn hms(seconds: f64, decimal: char) -> String {
    let ms = (seconds.max(0.0) * 1000.0).round() as u64;
    format!(
        "{:02}:{:02}:{:02}{decimal}{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

fn cue_text(segment: &serde_json::Value) -> String {
    segment["text"]
        .as_str()
        .unwrap_or("")
        .trim()
        .replace("-->", "->")
}

/// SubRip cues, one per segment.
pub fn srt(segments: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for (i, s) in segments.iter().enumerate() {
        let (start, end) = (
            s["start"].as_f64().unwrap_or(0.0),
            s["end"].as_f64().unwrap_or(0.0),
        );
        out.push_str(&format!(
            "{}\n{} --> {}\n{}\n\n",
            i + 1,
            hms(start, ','),
            hms(end, ','),
            cue_text(s)
        ));
    }
    out
}

/// WebVTT cues, one per segment.
pub fn vtt(segments: &[serde_json::Value]) -> String {
    let mut out = String::from("WEBVTT\n\n");
    for s in segments {
        let (start, end) = (
            s["start"].as_f64().unwrap_or(0.0),
            s["end"].as_f64().unwrap_or(0.0),
        );
        out.push_str(&format!(
            "{} --> {}\n{}\n\n",
            hms(start, '.'),
            hms(end, '.'),
            cue_text(s)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subtitle_times_are_zero_padded() {
        assert_eq!(hms(3723.4567, ','), "01:02:03,457");
        assert_eq!(hms(0.0, '.'), "00:00:00.000");
        let segments = vec![json!({"start": 0.0, "end": 2.74, "text": " a --> b"})];
        assert_eq!(
            srt(&segments),
            "1\n00:00:00,000 --> 00:00:02,740\na -> b\n\n"
        );
        assert_eq!(
            vtt(&segments),
            "WEBVTT\n\n00:00:00.000 --> 00:00:02.740\na -> b\n\n"
        );
    }
}
