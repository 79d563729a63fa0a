//! The result contract: the run file (one JSON document per run) and the sweep file, which
//! every other output reads, with their reading and writing. `assemble` builds a run's file,
//! `analysis` and `report` read these types; nothing here depends on them.
//!
//! Described field by field in docs/results.md (run) and docs/scaling.md (sweep); the JSON
//! Schemas generated from these types are docs/schema/run.schema.json and
//! docs/schema/sweep.schema.json. `SCHEMA_VERSION` changes whenever a field changes meaning
//! or goes away. Written atomically (temporary file, fsync, rename).

pub mod bottleneck;
pub mod drift;
mod from_engine;
pub mod histogram;
pub mod live;
pub mod models;
pub mod server;
pub mod stages;
pub mod stream;
pub mod sweep;
pub mod validity;
pub mod workload;

pub use histogram::EncodedHistogram;
/// The stream's old path (`result::recover::STREAM_KIND`), from when recovering lived here.
pub use stream as recover;
pub use workload::WorkloadRecord;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::LoadPlan;
use crate::error::InputError;
use crate::stats::{LatencySummary, SeriesSummary};
use crate::vocab::{ErrorClass, StatementCounts};
use models::LatencyModes;

pub const SCHEMA_VERSION: u32 = 1;

/// A loadrig run result file: one run, everything measured, and what was run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunResult {
    pub schema_version: u32,
    pub loadrig_version: String,
    pub status: RunStatus,
    pub workload: WorkloadRecord,
    pub load: LoadPlan,
    pub target: TargetRecord,
    pub host: HostRecord,
    pub started_at: String,
    pub ended_at: String,
    /// From the start of the measured run (after connect and data load) to its end.
    pub elapsed_s: f64,
    /// The part after warm-up that every statistic covers.
    pub measured_s: f64,
    pub data_load: Option<DataLoadRecord>,
    /// The workload's setup statements, when it has some (the pgbench built-ins load their
    /// tables there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupRecord>,
    /// After the setup or the data load, before the measured run: the `loadrig_` tables the
    /// target vacuumed and analyzed (PostgreSQL, as `pgbench -i` does); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<SettledRecord>,
    /// The workload's `before_run` steps, carried out before the measured run (the pgbench
    /// built-ins vacuum two tables and empty the history); absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_run: Option<BeforeRunRecord>,
    /// How the clients connected before the run; absent from files written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<ConnectRecord>,
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
    /// The workload's `[[verify]]` checks after the run; a failed one fails the run. Left
    /// out when the workload has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<VerifyRecord>,
    /// The workload's `[[figure]]`s (TPC-C's tpmC), computed from `operations`. Left out
    /// when the workload has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<FigureRecord>,
    /// Whether the figures can be trusted: the rig's CPU, hiccups, fairness, Little's law,
    /// the open loop's schedule, and the verdict (docs/validity.md). Absent in files
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<validity::Validity>,
    /// `--warmup auto`: where the warm-up was cut and by which rule; `load.warmup` holds
    /// the warm-up chosen. Left out otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_auto: Option<WarmupAuto>,
    /// `run --label`: what the run stands for, such as a commit id (`loadrig history`
    /// orders runs by it). Left out when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `--start-at`: how long after the agreed start this process could start (0 on time);
    /// its intervals keep the agreed grid. Left out without `--start-at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_start_s: Option<f64>,
    /// A run merged from shard files (`loadrig merge`): which shards, and what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardsRecord>,
    /// Shard runs: the checks (`checks`, `--check`) as written, which `loadrig merge`
    /// evaluates on the merged run instead of each shard on its share.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// A run with stages (`load.stages`): each stage's own figures and verdict, in order.
    /// Left out without stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<stages::StageRecord>,
    /// `--stop-when`: whether it ended the run, and the highest load sustained before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint: Option<stages::BreakpointRecord>,
    /// `--dashboard`: the live page's own cost (docs/live.md). Left out without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<live::DashboardRecord>,
    /// `loadrig collect`: what the collector received from the shards (docs/live.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect: Option<live::CollectRecord>,
    /// The server under test as observed (`--observe`, docs/observe.md): its measured
    /// figures, each operation's time split into the server's and the rest, what could
    /// not be seen, what observing cost. Absent when the run did not observe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<server::ServerRecord>,
    /// Where the time went: the resource that limited the run by the server's figures and
    /// the rig's (docs/observe.md). Absent when the run did not observe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<bottleneck::Bottleneck>,
}

/// The shards a merged run was made of (`loadrig merge`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardsRecord {
    /// How many shards the run was split into.
    pub count: usize,
    /// The shard indices merged, and their files.
    pub merged: Vec<usize>,
    pub files: Vec<String>,
    /// Shard indices with no file (`--allow-partial` only).
    pub missing: Vec<usize>,
    /// Shards whose run was interrupted.
    pub interrupted: Vec<usize>,
    /// True when shards are missing or interrupted: the figures under-count the run.
    pub partial: bool,
    /// The latest start of any shard after the agreed `--start-at` (s).
    pub late_start_max_s: f64,
}

/// How `--warmup auto` chose the warm-up (docs/validity.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WarmupAuto {
    /// `MSER-5` (batches of 5 intervals), or `MSER` (single intervals, for a series shorter
    /// than 20 intervals).
    pub method: String,
    /// The series it was applied to: successful operations per full interval.
    pub series: String,
    /// Intervals cut from the start, and the warm-up that makes (s).
    pub intervals_cut: usize,
    pub warmup_s: f64,
    /// False when the rule's minimum fell at the end of the half of the run it searches:
    /// the throughput may still have been drifting there.
    pub settled: bool,
}

/// One `[[figure]]`: `completed` operations of `ops` (their `ok`, rolled-back ones
/// included) per `per` of measured time, divided by `divisor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FigureRecord {
    pub name: String,
    pub description: String,
    pub value: f64,
    pub unit: String,
    pub ops: Vec<String>,
    pub completed: u64,
    /// `second`, `minute` or `hour`.
    pub per: String,
    pub divisor: f64,
}

/// One `[[verify]]` check: each query's first row as text, and whether they were all equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerifyRecord {
    pub name: String,
    pub values: Vec<String>,
    pub passed: bool,
}

impl VerifyRecord {
    pub fn of(name: &str, values: Vec<String>) -> VerifyRecord {
        let passed = values.windows(2).all(|w| w[0] == w[1]);
        VerifyRecord {
            name: name.to_string(),
            values,
            passed,
        }
    }

    /// The note a failed check leaves in the result.
    pub fn note(&self) -> Option<String> {
        (!self.passed).then(|| {
            format!(
                "verify '{}' failed: its queries gave {} where all must be equal",
                self.name,
                self.values.join(" / ")
            )
        })
    }
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// It ran until its stop condition.
    Complete,
    /// Ctrl-C: what was measured until then.
    Interrupted,
    /// Killed before it wrote its result (SIGKILL, a crash); rebuilt by `loadrig recover`
    /// from the `.jsonl` interval stream, up to the last interval written.
    Recovered,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Recovered => "recovered",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TargetRecord {
    /// The URL with any password replaced by ***.
    pub url: String,
    pub kind: String,
    pub server_version: Option<String>,
    /// Network targets: "off", "verified" (TLS, the server's certificate checked) or
    /// "insecure" (TLS with `insecure=true`: any certificate accepted); absent for the others
    /// and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HostRecord {
    pub cpu_model: String,
    pub cores: usize,
    pub os: String,
    pub kernel: String,
    pub arch: String,
}

/// The connect phase: every client's session opened before the run. A client whose
/// connect failed is counted here and runs without a session, connecting again on its
/// operations (with backoff); when no client connects the run fails.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConnectRecord {
    /// Connections opened (with `--pipeline P`, each carries P client streams).
    pub clients: usize,
    /// From the first connect to the last client's answer.
    pub seconds: f64,
    /// The pace they were opened at (`--connect-rate`, `connect_rate`, or the default from
    /// 1,000 clients); null: unpaced.
    pub rate_per_s: Option<f64>,
    /// Where the connections' time went, for targets that time the phases apart: every
    /// connection the target opened (these clients', `connect` operations', reconnects').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<ConnectPhasesRecord>,
    /// Clients that could not connect before the run; left out when all did.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub failed_clients: usize,
    /// Their failures by class; left out when all connected.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by_class: ErrorsByClass,
    /// The first failure's message; left out when all connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// HTTP/2's streams: what the server allowed a connection and what the run put on one;
    /// absent for every other protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Record>,
}

/// The streams of a run's HTTP/2 connections.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Http2Record {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, the fewest any connection was allowed;
    /// absent when the server set no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_streams: Option<u64>,
    /// The client streams one connection carried (`--pipeline`, 1 without).
    pub streams_per_connection: u64,
    /// The most of them in flight on a connection at once: `streams_per_connection` capped by
    /// `max_concurrent_streams` (a stream beyond the cap waits for one of its connection's to
    /// end, and the wait is in its latency).
    pub in_flight_per_connection: u64,
}

impl Http2Record {
    pub fn of(p: &crate::stats::connect_phases::ConnectPhases) -> Option<Http2Record> {
        let s = p.http2_streams?;
        Some(Http2Record {
            max_concurrent_streams: s.allowed,
            streams_per_connection: s.streams,
            in_flight_per_connection: s.allowed.map_or(s.streams, |a| a.min(s.streams)),
        })
    }
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

/// Each phase of a connection over every connection the target opened, in ns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConnectPhasesRecord {
    /// From the socket's connect() to the TCP handshake's end.
    pub tcp: LatencySummary,
    /// The TLS handshake; absent without TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<LatencySummary>,
    /// From the end of TLS (or TCP) until the session is ready: the protocol's startup and
    /// login (SCRAM, AUTH, ...); absent where the target has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<LatencySummary>,
    /// HTTP/2's connection preface and SETTINGS exchange, after TCP and TLS (until the server's
    /// SETTINGS and its acknowledgement of loadrig's have arrived); absent for other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<LatencySummary>,
}

impl ConnectPhasesRecord {
    pub fn of(p: &crate::stats::connect_phases::ConnectPhases) -> ConnectPhasesRecord {
        let some = |h: &crate::stats::Hist| (!h.is_empty()).then(|| LatencySummary::of(h));
        ConnectPhasesRecord {
            tcp: LatencySummary::of(&p.tcp),
            tls: some(&p.tls),
            auth: some(&p.auth),
            http2: some(&p.http2),
        }
    }
}

/// The tables settled after a run's setup or load, and the time it took.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SettledRecord {
    pub tables: u64,
    pub seconds: f64,
}

impl SettledRecord {
    pub fn of((tables, t): (u64, std::time::Duration)) -> SettledRecord {
        SettledRecord {
            tables,
            seconds: t.as_secs_f64(),
        }
    }
}

/// The `before_run` steps of a run: the tables vacuumed and emptied, and their time.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BeforeRunRecord {
    pub vacuumed: u64,
    pub emptied: u64,
    /// `{ sql = "..." }` steps run.
    #[serde(default)]
    pub statements: u64,
    pub seconds: f64,
}

impl BeforeRunRecord {
    pub fn of(b: crate::engine::BeforeRun) -> BeforeRunRecord {
        BeforeRunRecord {
            vacuumed: b.vacuumed,
            emptied: b.emptied,
            statements: b.statements,
            seconds: b.took.as_secs_f64(),
        }
    }
}

/// The setup statements of a run: how many, the rows they changed (as each target counts
/// them: inserted, updated or deleted), and their time.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SetupRecord {
    pub statements: usize,
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DataLoadRecord {
    pub records: u64,
    pub seconds: f64,
    pub records_per_s: f64,
    /// True when `--skip-load` reused data already there.
    pub skipped: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorMessage {
    pub class: ErrorClass,
    pub message: String,
    pub count: u64,
}

/// Failed operations by class; classes without failures are left out.
pub type ErrorsByClass = BTreeMap<ErrorClass, u64>;

/// One operation over the measured part of the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OpResult {
    pub name: String,
    pub ok: u64,
    pub errors: u64,
    pub errors_by_class: ErrorsByClass,
    pub error_messages: Vec<ErrorMessage>,
    pub rows: u64,
    /// Successful operations that read or wrote no row (counted in `ok`): a read of a key
    /// that is not there, an update that matched nothing; left out when 0 and absent from
    /// older files.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty: u64,
    /// Attempts repeated under the operation's retry policy (deadlocks, serialization failures).
    pub retries: u64,
    /// The same by the class of the error that was retried; left out when none was.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub retries_by_class: ErrorsByClass,
    /// Connections replaced after one was lost.
    pub reconnects: u64,
    /// Successful operations (counted in `ok`) that ended at a rollback step of their `tx`
    /// (TPC-C's New-Orders with an unused item); left out when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rolled_back: u64,
    /// Successful operations per second of measured time.
    pub throughput_per_s: f64,
    /// Response time in ns: from the intended start in open loop, from the send in closed loop.
    pub latency: LatencySummary,
    /// `latency` as a histogram.
    pub histogram: EncodedHistogram,
    /// Response time of the failed operations (counted in `errors`), measured as `latency`
    /// is (YCSB's `[READ-FAILED]`); left out when none failed, absent from older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_latency: Option<LatencySummary>,
    /// `failed_latency` as a histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_histogram: Option<EncodedHistogram>,
    /// Response times of the lookups (`kv.get`, `record.read`) that found no record,
    /// counted in `empty` and also in `histogram` (YCSB's `NOT_FOUND`, which YCSB keeps
    /// under `[READ-FAILED]`); left out when there were none, absent from older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_histogram: Option<EncodedHistogram>,
    /// Open loop only: time from the actual send.
    pub service: Option<LatencySummary>,
    pub service_histogram: Option<EncodedHistogram>,
    /// Open loop only: how late operations started against the schedule.
    pub start_lag: Option<LatencySummary>,
    /// `start_lag` as a histogram (so that shards merge it exactly); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_lag_histogram: Option<EncodedHistogram>,
    pub late_starts: Option<u64>,
    /// Successful operations per full measured interval: mean, stdev, min, max.
    pub interval_counts: SeriesSummary,
    /// Statements sent to the target, as sysbench counts its queries; left out when none
    /// were (`nop`, `connect`).
    #[serde(default, skip_serializing_if = "Statements::is_none")]
    pub statements: Statements,
}

/// Statements sent to the target during the measured part: each step of a tx, its begin
/// and commit (or rollback), each attempt of a single operation. Reads are SELECTs, GETs,
/// LDAP searches and HTTP GETs; writes change data; other is transaction control, binds
/// and pings (sysbench's "queries performed: read, write, other").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Statements {
    pub read: u64,
    pub write: u64,
    pub other: u64,
    pub total: u64,
    /// `total` per second of measured time (sysbench's queries per second).
    pub per_s: f64,
}

impl Statements {
    pub fn is_none(&self) -> bool {
        self.total == 0
    }

    pub fn of(c: &StatementCounts, measured_s: f64) -> Statements {
        Statements {
            read: c.read,
            write: c.write,
            other: c.other,
            total: c.total(),
            per_s: if measured_s > 0.0 {
                c.total() as f64 / measured_s
            } else {
                0.0
            },
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IntervalRecord {
    /// From 1.
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub warmup: bool,
    pub ok: u64,
    pub errors: u64,
    pub ops: Vec<IntervalOp>,
    /// The rig's own CPU, the machine's run queue and the rig's hiccups over the interval;
    /// absent in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rig: Option<validity::RigInterval>,
    /// Operations completed per client over the interval; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness: Option<validity::FairnessInterval>,
    /// Shard runs only: operations completed by each of the shard's clients over the
    /// interval, so that `loadrig merge` judges fairness over every client exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_client: Vec<u64>,
    /// Shard runs with a closed-loop client ramp: the first N of `per_client` ran all of the
    /// interval (the others joined or left during it), so `loadrig merge` judges fairness
    /// over them alone; absent in older files and without client stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_whole: Option<u64>,
    /// A run with stages: the stage it belongs to (no interval spans two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// A closed loop with client stages: the clients running at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u64>,
    /// An open loop with stages: the arrivals due in it (the integral of the rate over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<f64>,
    /// The server under test over the interval, when the run observed it (docs/observe.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<server::ServerIntervalRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IntervalOp {
    pub name: String,
    pub ok: u64,
    pub errors: u64,
    pub errors_by_class: ErrorsByClass,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub histogram: EncodedHistogram,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Write `bytes` to `path` atomically: a temporary file beside it, fsync, rename. A device
/// or a pipe (`-o /dev/null`, a FIFO) is written in place: renaming over it would replace
/// the device with a plain file (as root, /dev/null itself).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .with_context(|| format!("could not write '{}'", path.display()));
    }
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

/// The JSON Schema of the run file, as docs/schema/run.schema.json holds it.
pub fn run_schema() -> schemars::Schema {
    schemars::schema_for!(RunResult)
}

/// Read a result file back: every schema version up to this build's; a newer file says
/// which version it needs.
pub fn read(path: &Path) -> Result<RunResult> {
    read_versioned(path, SCHEMA_VERSION, "result file")
}

/// Read a `what` (run or sweep file) of at most schema version `supported`.
fn read_versioned<T: DeserializeOwned>(path: &Path, supported: u32, what: &str) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read '{}'", path.display()))?;
    parse_versioned(&text, path, supported, what)
}

/// A run file's text, as [`read`] reads it from `path` (named in errors).
pub fn parse(text: &str, path: &Path) -> Result<RunResult> {
    parse_versioned(text, path, SCHEMA_VERSION, "result file")
}

fn parse_versioned<T: DeserializeOwned>(
    text: &str,
    path: &Path,
    supported: u32,
    what: &str,
) -> Result<T> {
    // Only the version first: a newer file may not parse as this build's types at all.
    #[derive(Deserialize)]
    struct Header {
        schema_version: Option<u64>,
        loadrig_version: Option<String>,
    }
    if let Ok(Header {
        schema_version: Some(version),
        loadrig_version,
    }) = serde_json::from_str::<Header>(text)
    {
        if version > u64::from(supported) {
            let writer = loadrig_version.map_or_else(String::new, |v| {
                format!(", such as the one that wrote it (loadrig {v})")
            });
            return Err(InputError::new(format!(
                "'{}' is a {what} of schema version {version}; this loadrig ({}) reads schema version {supported} and older",
                path.display(),
                env!("CARGO_PKG_VERSION")
            ))
            .help(format!(
                "read it with a loadrig that reads schema version {version}{writer}"
            ))
            .into());
        }
    }
    serde_json::from_str(text)
        .with_context(|| format!("'{}' is not a loadrig {what}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::{Arrivals, Connection, Mode};
    use crate::workload::{self, Source};

    fn json<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn statuses_and_error_classes_are_written_as_names() {
        assert_eq!(json(&RunStatus::Complete), "\"complete\"");
        assert_eq!(json(&RunStatus::Interrupted), "\"interrupted\"");
        assert_eq!(json(&sweep::SweepStatus::Running), "\"running\"");
        assert_eq!(json(&sweep::SweepKind::Sweep), "\"sweep\"");
        let counts: ErrorsByClass = [(ErrorClass::Timeout, 3), (ErrorClass::Connect, 1)].into();
        assert_eq!(json(&counts), r#"{"connect":1,"timeout":3}"#);
        let back: ErrorsByClass = serde_json::from_str(r#"{"timeout":3,"connect":1}"#).unwrap();
        assert_eq!(back, counts);
        assert_eq!(
            RunStatus::Interrupted.name(),
            json(&RunStatus::Interrupted).trim_matches('"')
        );
    }

    #[test]
    fn load_durations_read_back_as_written() {
        let plan = LoadPlan {
            mode: Mode::Open {
                rate: 1234.5,
                arrivals: Arrivals::Poisson,
                workers: 8,
                late_after: Duration::from_nanos(1_000_001),
            },
            duration: Some(Duration::new(86_400, 999_999_999)),
            ops: None,
            samples: Some(3),
            interval: Duration::from_millis(20),
            warmup: Duration::from_nanos(1),
            seed: u64::MAX,
            connection: Connection::PerOp,
            op_timeout: Some(Duration::from_micros(333)),
            threads: 2,
            shard: None,
            start_at: None,
            connect_rate: Some(2500.5),
            pipeline: 4,
            pipeline_refill: 4,
            client_slice: Some(Duration::from_micros(100)),
            stages: Vec::new(),
            stop_when: None,
            observe: None,
            observe_rate: None,
            observe_behind: None,
        };
        let text = serde_json::to_string(&plan).unwrap();
        assert!(text.contains(r#""mode":"open""#), "{text}");
        assert!(text.contains(r#""poisson":true"#), "{text}");
        assert!(text.contains(r#""interval":0.02"#), "{text}");
        let back: LoadPlan = serde_json::from_str(&text).unwrap();
        assert_eq!(back, plan);
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // Files from before `op_timeout` existed.
        let old = text.replace(r#""op_timeout":0.000333,"#, "");
        assert_ne!(old, text);
        let back: LoadPlan = serde_json::from_str(&old).unwrap();
        assert_eq!(back.op_timeout, None);
        // Files from before `client_slice` existed, or runs on the kernel's default slice.
        assert!(text.ends_with(r#","client_slice":0.0001}"#), "{text}");
        let old = text.replace(r#","client_slice":0.0001"#, "");
        let back: LoadPlan = serde_json::from_str(&old).unwrap();
        assert_eq!(back.client_slice, None);
    }

    #[test]
    fn workload_record_has_the_v1_shape() {
        let text = include_str!("../../tests/fixtures/v1/native.toml");
        let source = Source {
            path: "native.toml",
            text,
        };
        let w = workload::compile(&source, &[]).unwrap();
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/v1/native.json")).unwrap();
        let record = serde_json::to_value(WorkloadRecord::of(&w, &w.ops)).unwrap();
        assert_eq!(record, fixture["workload"]);
    }
}
