//! Whether a run's throughput or p99 was still drifting over its measured intervals: the
//! record of each trend test and the thresholds' defaults. The tests themselves are
//! `analysis::validity::drift` (docs/validity.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A drift is significant below this two-sided p (`drift-p`); with the correction for
/// autocorrelation, trendless AR(1) series (φ = 0.5) fell below it in 2-3 % of simulations.
pub const DRIFT_P: f64 = 0.01;
/// ... and large when Sen's slope changes the series by at least this share of its mean over
/// the intervals judged (`drift`), so a long flat run with a tiny significant slope passes.
pub const DRIFT_CHANGE: f64 = 0.10;

/// The trend test over one series of the intervals judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrendTest {
    /// `throughput` (successful operations per second) or `p99` (of all operations).
    pub series: String,
    /// `Mann-Kendall (Yue-Wang)`: the variance corrected for ties and autocorrelation.
    pub method: String,
    /// Observations tested: the intervals judged, or batch means of them for a long run.
    pub n: usize,
    /// Intervals per observation (1 unless the run had more than 1,000 intervals judged).
    pub batch: usize,
    /// Mann-Kendall's S and Z, and the two-sided p.
    pub s: i64,
    pub z: f64,
    pub p: f64,
    /// Yue & Wang's variance factor n/n* (at least 1).
    pub correction: f64,
    /// Sen's slope as a percentage of the series' mean per minute.
    pub slope_pct_per_min: f64,
    /// Sen's slope over the span of the intervals judged, as a percentage of the mean.
    pub change_pct: f64,
    /// Significant (p below `drift-p`) and large (|change| at least `drift`).
    pub drifting: bool,
}

impl TrendTest {
    /// The verdict's reason: `throughput still drifting: −4 %/min (...)`.
    pub fn reason(&self) -> String {
        let p = if self.p < 0.001 {
            "p < 0.001".to_string()
        } else {
            format!("p = {:.3}", self.p)
        };
        format!(
            "{} still drifting: {:+.1} %/min ({:+.0} % over the intervals judged; Mann-Kendall {p}): the figures depend on when the run stopped; run longer or with a longer warm-up",
            self.series, self.slope_pct_per_min, self.change_pct
        )
    }
}
