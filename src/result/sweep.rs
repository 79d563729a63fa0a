//! The sweep file: every point's full run result, what was varied, and the fitted models
//! with curves sampled for plotting, in one JSON document that a report can be drawn from
//! alone. Described field by field in docs/scaling.md; its JSON Schema is
//! docs/schema/sweep.schema.json.

use std::path::Path;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::models::{GrowthFit, Knee, Slo, UslFit};
use super::RunResult;
use crate::stats::LatencySummary;

pub const SCHEMA_VERSION: u32 = 1;

/// A loadrig sweep file: the runs of a sweep, each a full run result, and the models fitted
/// to them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SweepResult {
    pub schema_version: u32,
    /// Always "sweep": tells this file from a run result.
    pub kind: SweepKind,
    pub loadrig_version: String,
    /// Rewritten after every point while `running`.
    pub status: SweepStatus,
    pub workload: String,
    /// The target URL, passwords replaced by ***.
    pub target: String,
    pub vary: VaryRecord,
    pub repeat: u32,
    pub slo: Option<Slo>,
    pub find_max: bool,
    pub growth: Option<GrowthSpec>,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// In the order they ran.
    pub points: Vec<SweepPoint>,
    pub models: Models,
    pub notes: Vec<String>,
}

/// What kind of file: a sweep file says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SweepKind {
    Sweep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SweepStatus {
    /// Points are still being added.
    Running,
    Complete,
    /// Ctrl-C: the points until then.
    Interrupted,
}

impl SweepStatus {
    pub fn name(self) -> &'static str {
        match self {
            SweepStatus::Running => "running",
            SweepStatus::Complete => "complete",
            SweepStatus::Interrupted => "interrupted",
        }
    }
}

/// What kind of setting a sweep varied; written as `clients`, `rate`, `param`, `growth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VaryKind {
    Clients,
    Rate,
    /// Operations in flight per connection (`--pipeline`).
    Pipeline,
    /// The rig's client threads (`--threads`).
    Threads,
    /// A workload parameter.
    Param,
    /// A growth study: the records stored.
    Growth,
}

impl VaryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VaryKind::Clients => "clients",
            VaryKind::Rate => "rate",
            VaryKind::Pipeline => "pipeline",
            VaryKind::Threads => "threads",
            VaryKind::Param => "param",
            VaryKind::Growth => "growth",
        }
    }
}

/// What the sweep varied.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VaryRecord {
    /// `clients`, `rate`, a workload parameter, or `records` for a growth study.
    pub name: String,
    pub kind: VaryKind,
    /// As written after --vary (empty for a growth study).
    pub spec: String,
    /// The values of a grid, in order; the range's ends for --find-max.
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GrowthSpec {
    /// Operations per batch.
    pub batch: u64,
    /// The study stops once this many records are stored.
    pub limit: u64,
    /// Records the workload's [data] stored before the first batch.
    pub initial_records: u64,
}

/// One run of the sweep.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SweepPoint {
    /// From 1, in the order the runs happened.
    pub index: usize,
    /// The varied setting's value, as given.
    pub value: String,
    /// The value as a number for plotting (growth: records stored before the batch); null
    /// for a value that is not a number.
    pub x: Option<f64>,
    /// From 1.
    pub repeat: u32,
    /// Growth studies: records stored before this batch.
    pub stored_before: Option<u64>,
    pub ok: u64,
    pub errors: u64,
    pub throughput_per_s: f64,
    /// The measured time of the run: for a growth batch, the time the batch took.
    pub measured_s: f64,
    /// Latency of all operations together (`result.total.latency`).
    pub latency: LatencySummary,
    /// Whether the --slo held (and, on an open loop, 95 % of the rate completed).
    pub slo_ok: Option<bool>,
    /// The point's complete run result, as `loadrig run` would have written it.
    pub result: RunResult,
}

/// The models fitted to the points; each is present only when it applies.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Models {
    pub usl: Option<UslModel>,
    pub knee: Option<KneeModel>,
    pub growth: Option<GrowthModel>,
}

/// One sample of a fitted curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CurvePoint {
    pub x: f64,
    pub y: f64,
}

impl CurvePoint {
    /// Samples `(x, y)` as curve points.
    pub fn all(samples: Vec<(f64, f64)>) -> Vec<CurvePoint> {
        samples
            .into_iter()
            .map(|(x, y)| CurvePoint { x, y })
            .collect()
    }
}

/// The USL over a clients sweep; `curve` (throughput against clients) only for a good fit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UslModel {
    #[serde(flatten)]
    pub fit: UslFit,
    pub curve: Vec<CurvePoint>,
}

/// The knee of a rate sweep.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct KneeModel {
    pub slo: Slo,
    /// `grid` (the --vary values) or `search` (--find-max).
    pub method: String,
    #[serde(flatten)]
    pub knee: Knee,
    /// Mean throughput and SLO figure over the runs at the knee rate.
    pub knee_throughput_per_s: Option<f64>,
    pub knee_latency_ns: Option<f64>,
}

/// The complexity class of a growth study; `curve` is seconds per batch against records.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GrowthModel {
    /// The series' name (the target).
    pub series: String,
    #[serde(flatten)]
    pub fit: GrowthFit,
    pub curve: Vec<CurvePoint>,
}

/// The JSON Schema of the sweep file, as docs/schema/sweep.schema.json holds it.
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(SweepResult)
}

/// Read a sweep file back: a file of a newer schema says which version it needs.
pub fn read(path: &Path) -> Result<SweepResult> {
    super::read_versioned(path, SCHEMA_VERSION, "sweep file")
}
