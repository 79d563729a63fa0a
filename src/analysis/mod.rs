//! Analysis of result files: the statistics behind `loadrig compare` and the threshold checks,
//! and the models that explain a sweep and the shape of a latency distribution.
//!
//! Everything here reads [`RunResult`]s or numbers taken from them (never a live run), so any
//! figure can be recomputed later from the files; the one exception is [`validity`]'s
//! `judge`, which reads the engine's data as a run ends, for the figures a file does not
//! keep (each client's counts, the rig's threads). This module holds what compare and checks
//! both need: the measured interval series of one operation, decoded once.
//!
//! - [`compare`]: relative change, confidence intervals, tests and verdicts between two runs.
//! - [`changepoint`]: change points in a history of runs (E-divisive means).
//! - [`history`]: a workload's runs in order and the change points of each metric.
//! - [`checks`]: `read.p99 < 20ms`-style thresholds on one run.
//! - [`usl`]: the Universal Scalability Law fitted to a concurrency sweep.
//! - [`growth`]: the complexity class of a cost that grows with the data (O(1) … O(n log n)).
//! - [`knee`]: latency objectives and the highest rate that meets one.
//! - [`modes`]: clusters in a latency distribution, and whether they repeat at a period.
//! - [`shift`]: the shift function (quantile by quantile differences) and distribution distances.
//! - [`density`]: the kernel density estimate the modes and the report's latency plot share.
//! - [`fit`]: least squares and goodness of fit shared by the models.
//! - [`validity`]: the checks that judge whether a run's figures can be trusted, one file
//!   each, and the trend tests over its interval records.

pub mod ab;
pub mod changepoint;
pub mod checks;
pub mod compare;
pub mod density;
pub mod fit;
pub mod growth;
pub mod history;
pub mod knee;
pub mod modes;
pub mod rounds;
pub mod shift;
pub mod steady;
pub mod usl;
pub mod validity;

use anyhow::{anyhow, Result};

use crate::result::{IntervalRecord, RunResult};
use crate::stats::{new_hist, Hist};

/// The name that stands for all operations together, as in the result file's `total`.
pub const TOTAL: &str = "total";

/// One operation's measured series: the full-length intervals after warm-up, in order.
///
/// The last interval of a run stopped by an operation count or by Ctrl-C is shorter than
/// the others; it is left out so every point of the series covers the same time.
#[derive(Debug, Clone)]
pub struct OpSeries {
    pub name: String,
    /// Successful operations per second in each interval.
    pub throughput: Vec<f64>,
    /// Successful operations in each interval.
    pub counts: Vec<u64>,
    /// Each interval's latency histogram (ns).
    pub hists: Vec<Hist>,
}

impl OpSeries {
    pub fn len(&self) -> usize {
        self.throughput.len()
    }

    pub fn is_empty(&self) -> bool {
        self.throughput.is_empty()
    }

    /// All intervals' histograms added together.
    pub fn merged(&self) -> Hist {
        let mut all = new_hist();
        for h in &self.hists {
            // Adding auto-resizing histograms of the same precision cannot fail.
            let _ = all.add(h);
        }
        all
    }
}

/// The nominal interval length of a run in seconds (from its resolved load).
pub fn interval_s(r: &RunResult) -> f64 {
    r.load.interval.as_secs_f64()
}

/// The measured (not warm-up) intervals of full length.
pub fn full_intervals(r: &RunResult) -> Vec<&IntervalRecord> {
    let nominal = interval_s(r);
    r.intervals
        .iter()
        .filter(|i| !i.warmup && i.end_s - i.start_s >= nominal - 1e-9 && nominal > 0.0)
        .collect()
}

/// The names of a run's operations, in the file's order.
pub fn op_names(r: &RunResult) -> Vec<String> {
    r.operations.iter().map(|o| o.name.clone()).collect()
}

/// Decode the series of operation `op` (or [`TOTAL`] for all operations together).
pub fn op_series(r: &RunResult, op: &str) -> Result<OpSeries> {
    op_series_in(r, op, None)
}

/// [`op_series`] over the intervals of one stage (`None`: the whole run).
pub fn op_series_in(r: &RunResult, op: &str, stage: Option<&str>) -> Result<OpSeries> {
    let mut s = OpSeries {
        name: op.to_string(),
        throughput: Vec::new(),
        counts: Vec::new(),
        hists: Vec::new(),
    };
    let intervals = full_intervals(r).into_iter();
    for i in intervals.filter(|i| stage.is_none() || i.stage.as_deref() == stage) {
        let mut h = new_hist();
        let mut ok = 0;
        for o in i.ops.iter().filter(|o| op == TOTAL || o.name == op) {
            let part = o
                .histogram
                .decode()
                .map_err(|e| anyhow!("interval {} of operation '{}': {e}", i.index, o.name))?;
            let _ = h.add(&part);
            ok += o.ok;
        }
        s.counts.push(ok);
        s.throughput.push(ok as f64 / (i.end_s - i.start_s));
        s.hists.push(h);
    }
    Ok(s)
}

/// The operation names two runs share, in the base run's order, then [`TOTAL`] when there
/// is more than one; and the names found in only one of them.
pub fn shared_ops(base: &RunResult, new: &RunResult) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (b, n) = (op_names(base), op_names(new));
    let shared: Vec<String> = b.iter().filter(|x| n.contains(x)).cloned().collect();
    let only_base = b.iter().filter(|x| !n.contains(x)).cloned().collect();
    let only_new = n.iter().filter(|x| !b.contains(x)).cloned().collect();
    let mut all = shared.clone();
    if b.len() > 1 || n.len() > 1 {
        all.push(TOTAL.to_string());
    }
    (all, only_base, only_new)
}
