//! The result file: one JSON document per run, the contract every other output reads.
//!
//! Described field by field in docs/results.md; `SCHEMA_VERSION` changes whenever a field
//! changes meaning or goes away. Written atomically (temporary file, fsync, rename).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analysis::modes::LatencyModes;
use crate::engine::IntervalData;
use crate::stats::{encode_hist, LatencySummary, OpCounters, SeriesSummary};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub loadrig_version: String,
    /// "complete" or "interrupted" (Ctrl-C: what was measured until then).
    pub status: String,
    pub workload: serde_json::Value,
    pub load: serde_json::Value,
    pub target: TargetRecord,
    pub host: HostRecord,
    pub started_at: String,
    pub ended_at: String,
    /// From the start of the measured run (after connect and data load) to its end.
    pub elapsed_s: f64,
    /// The part after warm-up that every statistic covers.
    pub measured_s: f64,
    pub data_load: Option<DataLoadRecord>,
    /// Open loop: arrivals scheduled before the end that never started (target too slow).
    pub missed_starts: u64,
    /// Clients still busy when the run had to end; their last operation is not counted.
    pub abandoned_clients: usize,
    pub operations: Vec<OpResult>,
    pub total: OpResult,
    pub intervals: Vec<IntervalRecord>,
    /// Clusters in the latency distribution of all operations together, and whether they
    /// repeat at a period (seed 001); null before this field existed.
    #[serde(default)]
    pub latency_modes: Option<LatencyModes>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetRecord {
    /// The URL with any password replaced by ***.
    pub url: String,
    pub kind: String,
    pub server_version: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostRecord {
    pub cpu_model: String,
    pub cores: usize,
    pub os: String,
    pub kernel: String,
    pub arch: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DataLoadRecord {
    pub records: u64,
    pub seconds: f64,
    pub records_per_s: f64,
    /// True when `--skip-load` reused data already there.
    pub skipped: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorMessage {
    pub class: String,
    pub message: String,
    pub count: u64,
}

/// One operation over the measured part of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpResult {
    pub name: String,
    pub ok: u64,
    pub errors: u64,
    pub errors_by_class: BTreeMap<String, u64>,
    pub error_messages: Vec<ErrorMessage>,
    pub rows: u64,
    /// Attempts repeated under the operation's retry policy (deadlocks, serialization failures).
    pub retries: u64,
    /// Connections replaced after one was lost.
    pub reconnects: u64,
    /// Successful operations per second of measured time.
    pub throughput_per_s: f64,
    /// Response time in ns: from the intended start in open loop, from the send in closed loop.
    pub latency: LatencySummary,
    /// `latency` as HdrHistogram V2+DEFLATE, base64.
    pub histogram: String,
    /// Open loop only: time from the actual send.
    pub service: Option<LatencySummary>,
    pub service_histogram: Option<String>,
    /// Open loop only: how late operations started against the schedule.
    pub start_lag: Option<LatencySummary>,
    pub late_starts: Option<u64>,
    /// Successful operations per full measured interval: mean, stdev, min, max.
    pub interval_counts: SeriesSummary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// From 1.
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub warmup: bool,
    pub ok: u64,
    pub errors: u64,
    pub ops: Vec<IntervalOp>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalOp {
    pub name: String,
    pub ok: u64,
    pub errors: u64,
    pub errors_by_class: BTreeMap<String, u64>,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub histogram: String,
}

pub fn errors_by_class(c: &OpCounters) -> BTreeMap<String, u64> {
    c.errors
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(class, n)| (class.name().to_string(), n))
        .collect()
}

impl IntervalRecord {
    pub fn of(d: &IntervalData, names: &[String]) -> IntervalRecord {
        IntervalRecord {
            index: d.index + 1,
            start_s: d.start.as_secs_f64(),
            end_s: d.end.as_secs_f64(),
            warmup: d.warmup,
            ok: d.ops.iter().map(|c| c.ok).sum(),
            errors: d.ops.iter().map(|c| c.error_total()).sum(),
            ops: d
                .ops
                .iter()
                .zip(names)
                .map(|(c, name)| IntervalOp {
                    name: name.clone(),
                    ok: c.ok,
                    errors: c.error_total(),
                    errors_by_class: errors_by_class(c),
                    p50_ns: c.latency.value_at_quantile(0.5),
                    p99_ns: c.latency.value_at_quantile(0.99),
                    max_ns: c.latency.max(),
                    histogram: encode_hist(&c.latency),
                })
                .collect(),
        }
    }
}

impl OpResult {
    /// Summarise `c`, an operation's merged measured counters; `counts` is its number of
    /// successes in each full measured interval.
    pub fn of(
        name: &str,
        c: &OpCounters,
        measured_s: f64,
        counts: &[f64],
        open_loop: bool,
    ) -> OpResult {
        OpResult {
            name: name.to_string(),
            ok: c.ok,
            errors: c.error_total(),
            errors_by_class: errors_by_class(c),
            error_messages: c
                .messages
                .iter()
                .map(|(class, message, count)| ErrorMessage {
                    class: class.name().to_string(),
                    message: message.clone(),
                    count: *count,
                })
                .collect(),
            rows: c.rows,
            retries: c.retries,
            reconnects: c.reconnects,
            throughput_per_s: if measured_s > 0.0 {
                c.ok as f64 / measured_s
            } else {
                0.0
            },
            latency: LatencySummary::of(&c.latency),
            histogram: encode_hist(&c.latency),
            service: open_loop.then(|| LatencySummary::of(&c.service)),
            service_histogram: open_loop.then(|| encode_hist(&c.service)),
            start_lag: open_loop.then(|| LatencySummary::of(&c.lag)),
            late_starts: open_loop.then_some(c.late),
            interval_counts: SeriesSummary::of(counts),
        }
    }
}

/// Write `bytes` to `path` atomically: a temporary file beside it, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("could not create folder '{}'", dir.display()))?;
    }
    let tmp = temp_path(path);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write()
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .with_context(|| format!("could not write '{}'", path.display()))
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Read a result file back.
pub fn read(path: &Path) -> Result<RunResult> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read '{}'", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("'{}' is not a loadrig result file", path.display()))
}
