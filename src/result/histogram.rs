//! A latency histogram as the result file holds it: HdrHistogram V2 + DEFLATE, base64,
//! readable by every HdrHistogram port.

use std::io::Read;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::Hist;

/// An encoded histogram (nanoseconds). Kept encoded as read: a file whose histogram is
/// damaged still loads, and only what needs the counts fails, saying which one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
        let plain = bounded_v2(&bytes)?;
        Deserializer::new()
            .deserialize(&mut plain.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))
    }
}

/// The V2 cookies (HdrHistogram's `V2EncodingCookieBase` and its compressed form, with the
/// word-size bits the Rust port sets).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The V2 header: cookie, payload length, normalizing offset, significant figures, lowest
/// and highest trackable values, conversion ratio.
const V2_HEADER: usize = 40;
/// Far beyond any real histogram's encoding (a few KB), and little enough to allocate.
const MAX_INFLATED: u64 = 16 << 20;

/// The uncompressed V2 encoding of `bytes`, refusing before any large allocation what a
/// hostile file may claim: a deflate stream that inflates without end, or a payload
/// length beyond the bytes there are (the deserializer would allocate that length first).
fn bounded_v2(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let damaged = |why: &str| format!("histogram does not decode: {why}");
    let plain = match word(bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => {
            let len = word(bytes, 4).ok_or_else(|| damaged("truncated header"))? as usize;
            let deflated = bytes
                .get(8..8usize.saturating_add(len))
                .ok_or_else(|| damaged("shorter than its length says"))?;
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(deflated)
                .take(MAX_INFLATED + 1)
                .read_to_end(&mut out)
                .map_err(|e| damaged(&e.to_string()))?;
            if out.len() as u64 > MAX_INFLATED {
                return Err(damaged("inflates beyond 16 MiB"));
            }
            out
        }
        Some(V2_COOKIE) => bytes.to_vec(),
        _ => return Err(damaged("not an HdrHistogram V2 encoding")),
    };
    if word(&plain, 0) != Some(V2_COOKIE) {
        return Err(damaged("not an HdrHistogram V2 encoding"));
    }
    let payload = word(&plain, 4).ok_or_else(|| damaged("truncated header"))? as usize;
    if plain.len() < V2_HEADER || payload > plain.len() - V2_HEADER {
        return Err(damaged("its payload is shorter than its header says"));
    }
    Ok(plain)
}

impl EncodedHistogram {
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
