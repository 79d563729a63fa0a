//! Whether a run's throughput or p99 was still drifting over its measured intervals: the
//! Mann-Kendall trend test with Sen's slope (`stats::trend`), judged by significance and by
//! size (docs/validity.md). Read from the result's interval records only, so it works the
//! same on a fresh run, a merged one and a file read back.

use crate::result::drift::TrendTest;
use crate::result::validity::{Validity, Verdict};
use crate::result::IntervalRecord;
use crate::stats::trend::{self, MannKendall};
use crate::stats::{new_hist, Hist};

/// `v` with the trend tests over the measured intervals of full length (`interval_s`), and a
/// reason for each series still drifting.
pub fn with_trends(mut v: Validity, intervals: &[IntervalRecord], interval_s: f64) -> Validity {
    let th = v.thresholds;
    v.trends = trends(intervals, interval_s, th.drift_p, th.drift_change);
    v.reasons.extend(
        v.trends
            .iter()
            .filter(|t| t.drifting)
            .map(TrendTest::reason),
    );
    v.verdict = Verdict::of(&v.reasons);
    v
}

/// The trend tests of throughput and p99 over the measured intervals of full length
/// (`interval_s` long), with the verdict's thresholds; none for a run with fewer than
/// `trend::MIN_N` of them.
pub fn trends(
    intervals: &[IntervalRecord],
    interval_s: f64,
    max_p: f64,
    min_change: f64,
) -> Vec<TrendTest> {
    let judged: Vec<&IntervalRecord> = intervals
        .iter()
        .filter(|i| !i.warmup && i.end_s - i.start_s >= interval_s * 0.999)
        .collect();
    let throughput: Vec<f64> = judged
        .iter()
        .map(|i| i.ok as f64 / (i.end_s - i.start_s))
        .collect();
    let p99: Vec<f64> = judged
        .iter()
        .filter(|i| i.ok > 0)
        .filter_map(|i| interval_p99(i))
        .collect();
    [("throughput", throughput), ("p99", p99)]
        .into_iter()
        .filter_map(|(name, series)| test(name, &series, interval_s, max_p, min_change))
        .collect()
}

fn test(
    name: &str,
    series: &[f64],
    interval_s: f64,
    max_p: f64,
    min_change: f64,
) -> Option<TrendTest> {
    let (x, batch) = trend::batched(series);
    let MannKendall {
        n,
        s,
        z,
        p,
        correction,
        slope,
        ..
    } = trend::mann_kendall(&x)?;
    let mean = x.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return None;
    }
    let per_interval = slope / batch as f64;
    let slope_pct_per_min = 100.0 * per_interval / mean * 60.0 / interval_s;
    let change_pct = 100.0 * per_interval * (n * batch) as f64 / mean;
    Some(TrendTest {
        series: name.to_string(),
        method: "Mann-Kendall (Yue-Wang)".to_string(),
        n,
        batch,
        s,
        z,
        p,
        correction,
        slope_pct_per_min,
        change_pct,
        drifting: p < max_p && change_pct.abs() >= 100.0 * min_change,
    })
}

/// The p99 of all operations in one interval (ns): the operation's own figure when there is
/// one, else from the merged histograms.
fn interval_p99(i: &IntervalRecord) -> Option<f64> {
    match i.ops.as_slice() {
        [one] => Some(one.p99_ns as f64),
        ops => {
            let mut all: Hist = new_hist();
            for op in ops {
                all.add(op.histogram.decode().ok()?).ok()?;
            }
            (!all.is_empty()).then(|| all.value_at_quantile(0.99) as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::drift::{DRIFT_CHANGE, DRIFT_P};

    /// A deterministic jitter in [−1, 1) (a linear congruential generator).
    fn jitter(i: usize) -> f64 {
        let x = (i as u64)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    #[test]
    fn a_tiny_significant_slope_over_a_long_run_is_not_drifting() {
        // 600 intervals of 1 s around 1,000/s, rising by 5 over the run (0.5 %).
        let x: Vec<f64> = (0..600)
            .map(|i| 1000.0 + i as f64 / 120.0 + jitter(i))
            .collect();
        let t = test("throughput", &x, 1.0, DRIFT_P, DRIFT_CHANGE).unwrap();
        assert!(t.p < 0.001, "{t:?}");
        assert!((t.change_pct - 0.5).abs() < 0.1, "{t:?}");
        assert!(!t.drifting);
    }

    #[test]
    fn a_large_significant_slope_is_drifting_and_says_so() {
        // 20 intervals of 0.5 s falling from 1,000/s by 2 % per interval.
        let x: Vec<f64> = (0..20)
            .map(|i| 1000.0 - 20.0 * i as f64 + jitter(i))
            .collect();
        let t = test("throughput", &x, 0.5, DRIFT_P, DRIFT_CHANGE).unwrap();
        assert!(t.drifting, "{t:?}");
        // −20 per interval of a mean of 810: −2.47 % per interval, ×120 intervals a minute.
        assert!((t.slope_pct_per_min + 296.3).abs() < 2.0, "{t:?}");
        assert!(
            t.reason().starts_with("throughput still drifting: -29"),
            "{}",
            t.reason()
        );
        assert!(
            t.reason().contains("Mann-Kendall p < 0.001"),
            "{}",
            t.reason()
        );
    }
}
