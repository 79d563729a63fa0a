//! Durations as people write them ("30s", "500ms", "2m", "1h 30m", read with humantime) and
//! as the console and reports show them ("81.9µs"). A bottom-layer module of its own, so that
//! formatting a number imports nothing but this.
//!
//! It imports nothing of the crate but `error`.

use std::time::Duration;

use crate::error::InputError;

/// Parse a duration, naming `what` (a flag or field) in the error.
pub fn parse(text: &str, what: &str) -> Result<Duration, InputError> {
    humantime::parse_duration(text.trim()).map_err(|e| {
        InputError::new(format!("{what}: '{text}' is not a duration ({e})"))
            .help("write a number with a unit, like 500ms, 30s, 2m or 1h")
    })
}

/// Format a duration compactly for console output: "812ns", "81.9µs", "1.20ms", "2.31s".
pub fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_and_formats() {
        assert_eq!(super::parse("1m 30s", "x").unwrap().as_secs(), 90);
        assert!(super::parse("ten", "--duration")
            .unwrap_err()
            .message
            .contains("--duration"));
        assert_eq!(super::human_ns(81_900.0), "81.9µs");
        assert_eq!(super::human_ns(1_200_000.0), "1.20ms");
    }
}
