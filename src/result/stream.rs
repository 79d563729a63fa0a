//! The `.jsonl` interval stream `loadrig run` writes beside the result file, and reading it
//! back: its first line holds what the result file holds beside its intervals, its other
//! lines are the finished intervals, each with its histograms. A run killed before it could
//! write its result file (SIGKILL, a crash, the machine going down) is rebuilt from it
//! (`loadrig recover`, `assemble::recover`).

use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context as _, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    BeforeRunRecord, DataLoadRecord, HostRecord, IntervalRecord, SettledRecord, SetupRecord,
    TargetRecord, WorkloadRecord, SCHEMA_VERSION,
};
use crate::engine::LoadPlan;
use crate::error::InputError;

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
