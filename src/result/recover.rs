//! The `.jsonl` interval stream and `loadrig recover`: a run killed before it could write
//! its result file (SIGKILL, a crash, the machine going down) is rebuilt from the stream,
//! whose first line holds what the result file holds beside its intervals and whose other
//! lines are the finished intervals, each with its histograms.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::build::RunFacts;
use super::models::LatencyModes;
use super::{
    BeforeRunRecord, DataLoadRecord, HostRecord, IntervalRecord, OpResult, RunResult, RunStatus,
    SettledRecord, SetupRecord, TargetRecord, WorkloadRecord, SCHEMA_VERSION,
};
use crate::engine::LoadPlan;
use crate::error::InputError;
use crate::stats::{Hist, OpCounters};

/// What the stream's header line says it is.
pub const STREAM_KIND: &str = "loadrig-intervals";

/// The first line of the `.jsonl` stream: the run as the result file records it, written
/// before the first interval.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StreamHeader {
    /// Always `loadrig-intervals`; an interval line has no such key.
    pub stream: String,
    pub schema_version: u32,
    pub loadrig_version: String,
    pub workload: WorkloadRecord,
    pub load: LoadPlan,
    pub target: TargetRecord,
    pub host: HostRecord,
    pub started_at: String,
    pub data_load: Option<DataLoadRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<SettledRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_run: Option<BeforeRunRecord>,
    /// `run --label`, so that a recovered run keeps its place in a history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl StreamHeader {
    /// The header of a run about to start: what its result will record beside the intervals.
    pub fn of(facts: &RunFacts<'_>) -> StreamHeader {
        StreamHeader {
            stream: STREAM_KIND.to_string(),
            schema_version: SCHEMA_VERSION,
            loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
            workload: WorkloadRecord::of(facts.workload, facts.ops),
            load: facts.plan.clone(),
            target: TargetRecord {
                url: facts.target_url.clone(),
                kind: facts.target_kind.clone(),
                tls: crate::targets::tls::mode_of_url(&facts.target_url)
                    .map(|m| m.name().to_string()),
                server_version: facts.prepared.server_version.clone(),
            },
            host: facts.host.clone(),
            started_at: humantime::format_rfc3339_millis(facts.started_at).to_string(),
            data_load: DataLoadRecord::of(facts.workload, facts.prepared.loaded),
            setup: facts.prepared.setup.map(SetupRecord::of),
            settled: facts.prepared.settled.map(SettledRecord::of),
            before_run: facts.prepared.before_run.map(BeforeRunRecord::of),
            label: None,
        }
    }
}

/// A stream read back: its header, its whole intervals, and whether a last line was cut.
pub struct Stream {
    pub header: StreamHeader,
    pub intervals: Vec<IntervalRecord>,
    /// The last line did not parse (the process died while writing it): left out.
    pub cut_line: bool,
    /// When the stream was last written (the last interval's end, near enough).
    pub modified: SystemTime,
}

/// Read a stream: a header first, then intervals; only the last line may be damaged.
pub fn read_stream(path: &Path) -> Result<Stream> {
    let bytes =
        std::fs::read(path).with_context(|| format!("could not read '{}'", path.display()))?;
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| SystemTime::now());
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text
        .split('\n')
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let not_a_stream = |why: String| {
        InputError::new(format!(
            "'{}' is not a loadrig interval stream: {why}",
            path.display()
        ))
        .help("give the .jsonl file written beside a result file by `loadrig run` (streams from before loadrig 0.1 have no header line and cannot be recovered)")
    };
    let (_, first) = lines
        .next()
        .ok_or_else(|| not_a_stream("it is empty".into()))?;
    let header: StreamHeader = serde_json::from_str(first)
        .ok()
        .filter(|h: &StreamHeader| h.stream == STREAM_KIND)
        .ok_or_else(|| not_a_stream("its first line is not the stream's header".into()))?;
    if header.schema_version > SCHEMA_VERSION {
        return Err(not_a_stream(format!(
            "it is of schema version {}; this loadrig reads {SCHEMA_VERSION} and older",
            header.schema_version
        ))
        .into());
    }
    let rest: Vec<(usize, &str)> = lines.collect();
    let mut intervals = Vec::with_capacity(rest.len());
    let mut cut_line = false;
    for (k, (n, line)) in rest.iter().enumerate() {
        match serde_json::from_str::<IntervalRecord>(line) {
            Ok(i) => intervals.push(i),
            Err(_) if k + 1 == rest.len() => cut_line = true,
            Err(e) => {
                return Err(InputError::new(format!(
                    "{}:{}: not an interval record: {e}",
                    path.display(),
                    n + 1
                ))
                .help("only the last line of a stream may be damaged (the one being written when the run died)")
                .into())
            }
        }
    }
    check_intervals(path, &header, &intervals)?;
    Ok(Stream {
        header,
        intervals,
        cut_line,
        modified,
    })
}

/// Every interval names the header's operations, in order, and follows the one before.
fn check_intervals(path: &Path, h: &StreamHeader, intervals: &[IntervalRecord]) -> Result<()> {
    let names: Vec<&str> = h.workload.ops.iter().map(|o| o.name.as_str()).collect();
    for (k, i) in intervals.iter().enumerate() {
        let ops: Vec<&str> = i.ops.iter().map(|o| o.name.as_str()).collect();
        let bad = if ops != names {
            Some(format!(
                "its operations {ops:?} are not the header's {names:?}"
            ))
        } else if i.index != k as u64 + 1 {
            Some(format!(
                "it is numbered {} where {} was due",
                i.index,
                k + 1
            ))
        } else if !(i.start_s.is_finite() && i.end_s.is_finite() && i.end_s >= i.start_s) {
            Some(format!(
                "its times {} to {} are not an interval",
                i.start_s, i.end_s
            ))
        } else {
            None
        };
        if let Some(why) = bad {
            return Err(InputError::new(format!(
                "'{}': interval {}: {why}",
                path.display(),
                k + 1
            ))
            .into());
        }
    }
    Ok(())
}

impl RunResult {
    /// The result rebuilt from a stream: every operation's totals are the exact merge of its
    /// measured intervals (counts, errors by class, latency histograms). What the stream
    /// does not carry (error messages, rows, retries, reconnects, statements, the open
    /// loop's service and lag histograms, the validity verdict) is left empty, and a note
    /// says so.
    pub fn recovered(
        s: &Stream,
        find_modes: impl FnOnce(&Hist) -> LatencyModes,
    ) -> Result<RunResult> {
        let h = &s.header;
        let measured: Vec<&IntervalRecord> = s.intervals.iter().filter(|i| !i.warmup).collect();
        let measured_s: f64 = measured.iter().map(|i| i.end_s - i.start_s).sum();
        let full: Vec<&&IntervalRecord> = measured
            .iter()
            .filter(|i| i.end_s - i.start_s >= h.load.interval.as_secs_f64() - 1e-9)
            .collect();
        let mut all = OpCounters::default();
        let mut operations = Vec::new();
        for (k, op) in h.workload.ops.iter().enumerate() {
            let c = merged(&measured, k)?;
            let counts: Vec<f64> = full.iter().map(|i| i.ops[k].ok as f64).collect();
            operations.push(OpResult::of(&op.name, &c, measured_s, &counts, false));
            all.merge(&c);
        }
        let counts: Vec<f64> = full.iter().map(|i| i.ok as f64).collect();
        let total = OpResult::of("total", &all, measured_s, &counts, false);
        let latency_modes = find_modes(&all.latency);
        let mut notes = vec![recovery_note(s)];
        notes.extend(latency_modes.note());
        let elapsed_s = s.intervals.last().map_or(0.0, |i| i.end_s);
        Ok(RunResult {
            schema_version: SCHEMA_VERSION,
            loadrig_version: h.loadrig_version.clone(),
            status: RunStatus::Recovered,
            workload: h.workload.clone(),
            load: h.load.clone(),
            target: h.target.clone(),
            host: h.host.clone(),
            started_at: h.started_at.clone(),
            ended_at: humantime::format_rfc3339_millis(s.modified).to_string(),
            elapsed_s,
            measured_s,
            data_load: h.data_load.clone(),
            setup: h.setup.clone(),
            settled: h.settled.clone(),
            before_run: h.before_run.clone(),
            missed_starts: 0,
            abandoned_clients: 0,
            operations,
            total,
            intervals: s.intervals.clone(),
            latency_modes: Some(latency_modes),
            notes,
            verify: Vec::new(),
            figures: Vec::new(),
            validity: None,
            warmup_auto: None,
            label: h.label.clone(),
            late_start_s: None,
            shards: None,
            checks: Vec::new(),
            connect: None,
        })
    }
}

fn recovery_note(s: &Stream) -> String {
    let last = s.intervals.last().map_or(0.0, |i| i.end_s);
    format!(
        "recovered by `loadrig recover` from the interval stream: the run died after {} intervals ({}){}; error messages, rows, retries, reconnects, statements, open-loop service times and the validity verdict are not in the stream",
        s.intervals.len(),
        humantime::format_duration(Duration::from_millis((last * 1e3) as u64)),
        if s.cut_line {
            ", and a last interval cut short in the writing is left out"
        } else {
            ""
        }
    )
}

/// Operation `k`'s counters over `intervals`, merged exactly (histograms added).
fn merged(intervals: &[&IntervalRecord], k: usize) -> Result<OpCounters> {
    let mut c = OpCounters::default();
    for i in intervals {
        let op = &i.ops[k];
        let hist = op.histogram.decode().map_err(|e| {
            InputError::new(format!(
                "interval {}, operation '{}': {e}",
                i.index, op.name
            ))
        })?;
        if hist.len() != op.ok {
            return Err(InputError::new(format!(
                "interval {}, operation '{}': its histogram holds {} latencies for {} successes",
                i.index,
                op.name,
                hist.len(),
                op.ok
            ))
            .into());
        }
        let mut one = OpCounters {
            ok: op.ok,
            latency: hist,
            ..OpCounters::default()
        };
        for (class, n) in &op.errors_by_class {
            one.errors[*class] += n;
        }
        c.merge(&one);
    }
    Ok(c)
}
