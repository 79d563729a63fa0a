//! The server's figures of two sides side by side, for `compare` and `ab`: each named
//! figure's mean over a side's runs, and each side's bottleneck verdict, so that a change
//! that moved the lock waits from 40 % to 5 % shows as such.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::result::RunResult;

/// The figures shown, in this order, when either side has them; then the wait classes.
const SHOWN: &[&str] = &[
    "server_time_share",
    "backend_active_share",
    "lock_wait_share",
    "io_wait_share",
    "wal_wait_share",
    "cpu_wait_share",
    "idle_in_transaction_share",
    "cpu_cores",
    "cpu_share",
    "run_queue_per_cpu_s",
    "cpu_ms_per_op",
    "server_ms_per_op",
    "commits_per_s",
    "questions_per_s",
    "commands_per_s",
    "requests_per_s",
    "row_lock_waits",
    "row_lock_time_ms",
    "lock_wait_ms_per_op",
    "deadlocks",
    "blocks_read_per_op",
    "cache_hit_ratio",
    "wal_bytes_per_op",
    "log_fsyncs_per_op",
    "threads_pending",
];

/// Both sides' server figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerSides {
    /// Each side's bottleneck verdict (the first run's, with how many runs agreed).
    pub base_verdict: Option<String>,
    pub new_verdict: Option<String>,
    pub figures: Vec<FigurePair>,
}

/// One figure on both sides: the mean over the side's runs that have it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FigurePair {
    pub name: String,
    pub base: Option<f64>,
    pub new: Option<f64>,
}

impl FigurePair {
    /// Shares and ratios are shown as percentages.
    pub fn is_share(&self) -> bool {
        self.name.contains("share") || self.name.ends_with("ratio")
    }
}

/// The two sides' figures; None when neither side observed its server.
pub fn sides(base: &[RunResult], new: &[RunResult]) -> Option<ServerSides> {
    if base.iter().chain(new).all(|r| r.server.is_none()) {
        return None;
    }
    let mean = |runs: &[RunResult], name: &str| {
        let v: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.server.as_ref()?.figures.get(name).copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let mut names: Vec<String> = SHOWN.iter().map(|s| s.to_string()).collect();
    for r in base.iter().chain(new) {
        for name in r.server.iter().flat_map(|s| s.figures.keys()) {
            let per_kind = name.starts_with("wait_share.") || name.starts_with("lock_wait_ms.");
            if per_kind && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let figures = names
        .into_iter()
        .filter_map(|name| {
            let (b, n) = (mean(base, &name), mean(new, &name));
            (b.is_some() || n.is_some()).then_some(FigurePair {
                name,
                base: b,
                new: n,
            })
        })
        .collect();
    Some(ServerSides {
        base_verdict: verdict(base),
        new_verdict: verdict(new),
        figures,
    })
}

/// A side's verdict: the one its runs gave, or how they split.
fn verdict(runs: &[RunResult]) -> Option<String> {
    let all: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.bottleneck.as_ref().map(|b| b.verdict.as_str()))
        .collect();
    let first = *all.first()?;
    let same = all.iter().filter(|v| **v == first).count();
    Some(if same == all.len() {
        first.to_string()
    } else {
        format!("{first} in {same} of {} runs", all.len())
    })
}
