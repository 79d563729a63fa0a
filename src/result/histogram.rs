//! A latency histogram as the result file holds it: HdrHistogram V2 + DEFLATE, base64,
//! readable by every HdrHistogram port.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::Hist;

/// An encoded histogram (nanoseconds). Kept encoded as read: a file whose histogram is
/// damaged still loads, and only what needs the counts fails, saying which one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(description = "HdrHistogram V2 + DEFLATE, base64; values in nanoseconds.")]
pub struct EncodedHistogram(String);

impl EncodedHistogram {
    pub fn encode(h: &Hist) -> EncodedHistogram {
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail for a valid histogram.
        let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
        EncodedHistogram(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn decode(&self) -> Result<Hist, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.0)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))
    }

    /// The base64 text, as in the file.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_hist;

    #[test]
    fn histogram_round_trips_with_same_counts() {
        let mut h = new_hist();
        for v in [1u64, 50, 1_000, 123_456, 9_000_000_000] {
            h.record(v).unwrap();
        }
        let back = EncodedHistogram::encode(&h).decode().unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back, h);
    }

    #[test]
    fn damage_is_reported_on_decode() {
        let bad = EncodedHistogram("not base64!".into());
        assert!(bad.decode().unwrap_err().contains("not base64"));
        let empty = EncodedHistogram("AAAA".into());
        assert!(empty.decode().unwrap_err().contains("does not decode"));
    }
}
