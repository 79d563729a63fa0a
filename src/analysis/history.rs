//! `loadrig history`: one workload's runs on one target, in order, and the change points
//! ([`super::changepoint`]) of throughput and of each percentile across them.

use serde::Serialize;

use super::changepoint::{self, ChangePoint};
use crate::result::RunResult;

/// The metrics followed, with whether higher is better.
pub const METRICS: [(&str, bool); 5] = [
    ("throughput", true),
    ("p50", false),
    ("p90", false),
    ("p99", false),
    ("p99.9", false),
];

/// One run of the history: all operations together.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryRun {
    pub file: String,
    pub label: Option<String>,
    pub started_at: String,
    pub throughput_per_s: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
}

impl HistoryRun {
    pub fn of(file: &str, r: &RunResult) -> HistoryRun {
        let l = &r.total.latency;
        HistoryRun {
            file: file.to_string(),
            label: r.label.clone(),
            started_at: r.started_at.clone(),
            throughput_per_s: r.total.throughput_per_s,
            p50_ns: l.p50_ns as f64,
            p90_ns: l.p90_ns as f64,
            p99_ns: l.p99_ns as f64,
            p999_ns: l.p999_ns as f64,
        }
    }

    /// The figures in [`METRICS`] order.
    pub fn values(&self) -> [f64; 5] {
        [
            self.throughput_per_s,
            self.p50_ns,
            self.p90_ns,
            self.p99_ns,
            self.p999_ns,
        ]
    }
}

/// One metric's change points.
#[derive(Debug, Clone, Serialize)]
pub struct MetricHistory {
    pub metric: &'static str,
    /// "ops/s" or "ns".
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub change_points: Vec<ChangePoint>,
}

/// The whole history, as printed and as `--format json`.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub workload: String,
    /// The target URL without its options (passwords removed).
    pub target: String,
    /// "time" or "label".
    pub order: String,
    pub method: String,
    pub alpha: f64,
    pub permutations: usize,
    pub seed: u64,
    pub runs: Vec<HistoryRun>,
    pub metrics: Vec<MetricHistory>,
}

/// The change points of every metric over `runs` (already in order).
pub fn analyse(
    workload: &str,
    target: &str,
    order: &str,
    runs: Vec<HistoryRun>,
    opts: &changepoint::Options,
) -> History {
    let metrics = METRICS
        .iter()
        .enumerate()
        .map(|(k, &(metric, higher_is_better))| {
            let series: Vec<f64> = runs.iter().map(|r| r.values()[k]).collect();
            MetricHistory {
                metric,
                unit: if higher_is_better { "ops/s" } else { "ns" },
                higher_is_better,
                change_points: changepoint::find(&series, opts),
            }
        })
        .collect();
    History {
        workload: workload.to_string(),
        target: target.to_string(),
        order: order.to_string(),
        method: "E-divisive means (Matteson & James 2014), permutation test".to_string(),
        alpha: opts.alpha,
        permutations: opts.permutations,
        seed: opts.seed,
        runs,
        metrics,
    }
}
