//! The rig's hiccups (jHiccup's method): a thread that only sleeps and wakes, whose late
//! wakes are pauses every operation in flight would have suffered too.

use crate::result::validity::{HiccupSummary, RigInterval};
use crate::result::EncodedHistogram;
use crate::stats::Hist;

/// `all`: how late the hiccup thread woke over the measured part; a reason when the rig
/// stalled for at least `hiccup_ns` in any of the `sampled` intervals.
pub(super) fn check(
    all: &Hist,
    sampled: &[RigInterval],
    hiccup_ns: u64,
    reasons: &mut Vec<String>,
) -> HiccupSummary {
    let n = sampled.len();
    let stalls: Vec<u64> = sampled
        .iter()
        .map(|r| r.hiccup_max_ns)
        .filter(|&m| m >= hiccup_ns)
        .collect();
    if !stalls.is_empty() {
        reasons.push(format!(
            "the rig itself stalled for up to {:.0} ms (hiccups) in {} of {n} intervals: latencies include the rig's pauses",
            *stalls.iter().max().unwrap_or(&0) as f64 / 1e6,
            stalls.len()
        ));
    }
    HiccupSummary {
        count: all.len(),
        p50_ns: quantile(all, 0.5),
        p99_ns: quantile(all, 0.99),
        p999_ns: quantile(all, 0.999),
        max_ns: max(all),
        stalled_intervals: stalls.len(),
        histogram: EncodedHistogram::encode(all),
    }
}

fn quantile(h: &Hist, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

fn max(h: &Hist) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.max()
    }
}
