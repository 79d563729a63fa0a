//! `--stop-when`: a condition on one interval's figures (`p99 > 50ms`, `errors > 1%`) that
//! ends the run once it has held in a number of measured intervals in a row. The plan
//! parses it with the checks' grammar (`analysis::checks`); the collector evaluates it on
//! each interval as it emits it, on the interval's own histograms.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{new_hist, OpCounters};

/// The figure of an interval a stop condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopFigure {
    P50,
    P90,
    P99,
    P999,
    Max,
    Mean,
    /// Successful operations per second.
    Throughput,
    /// Failed operations: a count, or with `percent` a share of those completed.
    Errors,
}

/// A condition that ends the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StopWhen {
    /// As written: `p99 > 50ms`.
    pub condition: String,
    /// Measured intervals in a row it must hold in.
    pub consecutive: u32,
    /// The operation it reads; absent: all operations together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    pub figure: StopFigure,
    /// `>` or `>=` (true); `<` or `<=` (false).
    pub above: bool,
    /// `>=` or `<=`.
    pub inclusive: bool,
    /// Nanoseconds, operations per second, a count of errors, or a percentage.
    pub limit: f64,
    #[serde(default)]
    pub percent: bool,
}

impl StopWhen {
    /// Whether it holds over one interval of `seconds` whose operations (named `names`)
    /// counted `ops`; `None` when the interval has nothing to read (no success for a
    /// latency), which neither extends nor breaks a run of intervals.
    pub fn holds(&self, ops: &[OpCounters], names: &[String], seconds: f64) -> Option<bool> {
        let picked;
        let c = match &self.op {
            Some(name) => &ops[names.iter().position(|n| n == name)?],
            None if ops.len() == 1 => &ops[0],
            None => {
                let mut all = OpCounters {
                    latency: new_hist(),
                    ..OpCounters::default()
                };
                for o in ops {
                    all.ok += o.ok;
                    all.errors += &o.errors;
                    let _ = all.latency.add(&o.latency);
                }
                picked = all;
                &picked
            }
        };
        let h = &c.latency;
        let q = |q: f64| h.value_at_quantile(q) as f64;
        let value = match self.figure {
            StopFigure::Throughput => c.ok as f64 / seconds.max(1e-9),
            StopFigure::Errors if self.percent => {
                let done = c.ok + c.error_total();
                if done == 0 {
                    return None;
                }
                c.error_total() as f64 * 100.0 / done as f64
            }
            StopFigure::Errors => c.error_total() as f64,
            _ if h.is_empty() => return None,
            StopFigure::P50 => q(0.5),
            StopFigure::P90 => q(0.9),
            StopFigure::P99 => q(0.99),
            StopFigure::P999 => q(0.999),
            StopFigure::Max => h.max() as f64,
            StopFigure::Mean => h.mean(),
        };
        Some(match (self.above, self.inclusive) {
            (true, false) => value > self.limit,
            (true, true) => value >= self.limit,
            (false, false) => value < self.limit,
            (false, true) => value <= self.limit,
        })
    }
}

/// The collector's count of intervals in a row the condition held in.
#[derive(Debug, Default)]
pub(super) struct Streak {
    held: u32,
    /// The first interval of the run of intervals that ended the run, once it has.
    pub(super) stopped: Option<u64>,
    /// Where the current run of intervals began.
    began: u64,
}

impl Streak {
    /// Count interval `k`: whether the run should stop now.
    pub(super) fn count(&mut self, rule: &StopWhen, k: u64, held: Option<bool>) -> bool {
        match held {
            Some(true) => {
                if self.held == 0 {
                    self.began = k;
                }
                self.held += 1;
            }
            Some(false) => self.held = 0,
            None => {}
        }
        if self.stopped.is_none() && self.held >= rule.consecutive.max(1) {
            self.stopped = Some(self.began);
            return true;
        }
        false
    }
}
