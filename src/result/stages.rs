//! A run with stages, as the result file records it: each stage with its own figures and
//! verdict, and what `--stop-when` found (docs/results.md, "Stages").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::validity::Validity;
use super::OpResult;
use crate::engine::StageKind;

/// One stage over its measured part: its operations are those that started in it (open
/// loop: whose arrival was due in it), counted in its intervals only, so the stages'
/// operations add up to the run's.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StageRecord {
    pub name: String,
    /// `rate` (open loop) or `clients` (closed loop).
    pub kind: StageKind,
    /// The load at its start and at its end (equal for a constant stage; linear between).
    pub from: f64,
    pub to: f64,
    /// A `shape = "step"` stage's steps: the stage they were cut from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_of: Option<String>,
    /// Where it starts and ends as planned (s since the start of the run).
    pub start_s: f64,
    pub end_s: f64,
    /// Its part of the warm-up (s): all of it for a warm-up stage, the first part of the
    /// first stage under `--warmup`; 0 for the others.
    pub warmup_s: f64,
    /// Its measured part (s): after the warm-up, up to where the run ended.
    pub measured_s: f64,
    /// `complete`, `cut` (the run ended in it: `--stop-when`, Ctrl-C), or `not_run` (the
    /// run ended before it).
    pub ran: StageRan,
    /// Its measured intervals, by their index (from 1); absent when none was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<[u64; 2]>,
    /// Open loop: the arrivals due in its measured part (the integral of its rate), over
    /// every shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<f64>,
    /// Open loop: arrivals due in it that never started.
    pub missed_starts: u64,
    pub operations: Vec<OpResult>,
    pub total: OpResult,
    /// Its own verdict: a constant stage is judged as a constant run is (every check); a
    /// ramp only on the rig's own figures (CPU, hiccups), since a load that changes has no
    /// steady state to check. Absent for a stage not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
    /// What the verdict judged: `steady` (a constant stage) or `rig` (a ramp).
    pub judged: String,
}

/// How far a run got into a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StageRan {
    Complete,
    Cut,
    NotRun,
}

/// `--stop-when`: whether it ended the run, and the highest load sustained before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreakpointRecord {
    /// As written.
    pub condition: String,
    /// Measured intervals in a row it had to hold in.
    pub consecutive: u32,
    /// Whether it ended the run.
    pub stopped: bool,
    /// The end of the last interval of the run of intervals that ended the run (s since the
    /// start), and the stage it was in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_in: Option<String>,
    /// The highest load (a rate per second, or clients) sustained with the condition not
    /// holding, before the first load that failed: a constant stage passes when the
    /// condition does not hold on its own figures and (open loop) at least 95 % of its
    /// arrivals completed as successes, as a rate of `sweep --find-max` passes; a ramp is
    /// read interval by interval, at the load at each interval's end. Absent when the
    /// first load judged failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained_in: Option<String>,
    /// The first load that failed; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failing: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failing_in: Option<String>,
    /// `ops/s` or `clients`.
    pub unit: String,
    /// A merged run: each shard decided on its own figures when to stop (there is no
    /// collector across shards yet); `sustained` is read from the merged figures.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_shard: bool,
}

impl BreakpointRecord {
    /// What it found, in one sentence (the result's notes, the console).
    pub fn note(&self) -> String {
        let level = |x: f64| {
            if self.unit == "clients" {
                format!("{x:.0} clients")
            } else {
                format!("{} ops/s", crate::stats::thousands(x.round() as u64))
            }
        };
        let mut line = match (self.stopped, self.stopped_at_s) {
            (true, Some(at)) => format!(
                "--stop-when '{}' held in {} intervals in a row and ended the run at {at:.1}s{}",
                self.condition,
                self.consecutive,
                self.stopped_in
                    .as_ref()
                    .map_or(String::new(), |s| format!(" (stage {s})"))
            ),
            _ => format!(
                "--stop-when '{}' never held in {} intervals in a row: the run went to its end",
                self.condition, self.consecutive
            ),
        };
        if self.per_shard {
            line.push_str(" (each shard decided on its own)");
        }
        match (self.sustained, &self.sustained_in) {
            (Some(x), Some(s)) => line.push_str(&format!(
                "; highest load sustained: {} (stage {s})",
                level(x)
            )),
            _ => line.push_str("; no load was sustained"),
        }
        if let (Some(x), Some(s)) = (self.first_failing, &self.first_failing_in) {
            line.push_str(&format!("; first failing: {} (stage {s})", level(x)));
        }
        line
    }
}
