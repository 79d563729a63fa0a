//! The experiment file, `DIR/experiment.json` (docs/schema/experiment.schema.json): the
//! design, the order the runs ran in and the seed that drew it, each run's file, and the
//! analysis of every response. It is rewritten after every run, so an interrupted experiment
//! resumes from it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::design::FactorLevels;

/// The experiment file's version; raised when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// `DIR/experiment.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentRecord {
    /// Always "experiment".
    pub kind: String,
    pub schema_version: u32,
    pub loadrig_version: String,
    pub status: ExperimentStatus,
    pub workload: String,
    /// The target URL without its password.
    pub target: String,
    /// The base load in words (the runs' load before the factors vary it).
    pub base_load: String,
    pub design: DesignRecord,
    /// The seed of the run order, and from which every run's `--seed` is made (seed + run
    /// number − 1).
    pub seed: u64,
    /// Every run in the order it runs (or ran): replicate blocks one after the other, the
    /// cells in a fresh random order within each block.
    pub runs: Vec<RunEntry>,
    /// Runs × (warm-up + duration) before it started, in seconds; absent when the runs stop
    /// on an operation count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_s: Option<f64>,
    /// The server settings the experiment changes, their values before it, and whether they
    /// were restored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_settings: Vec<SettingRecord>,
    /// The responses as asked for (`--response`).
    pub responses: Vec<String>,
    /// One analysis per response, over the complete replicate blocks.
    pub analyses: Vec<ResponseAnalysis>,
    pub notes: Vec<String>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExperimentStatus {
    Running,
    Complete,
    /// Stopped by Ctrl-C or a failed run: the same command continues it.
    Interrupted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DesignRecord {
    /// `full` or `fractional`.
    pub kind: String,
    pub factors: Vec<FactorRecord>,
    /// Each cell's levels, factor by factor, in standard order (the first factor changes
    /// fastest); a run names its cell by its index here.
    pub cells: Vec<Vec<String>>,
    pub replicates: usize,
    /// A fraction's generators, `D = ABC`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<String>,
    /// A fraction's defining relation, `I = ABCD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defining_relation: Option<String>,
    /// A fraction's resolution (its shortest word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<usize>,
    /// A fraction's alias chains, `A = BCD`: each estimate is the sum of its chain's effects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

/// A factor: its design name and levels, and what it varies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FactorRecord {
    #[serde(flatten)]
    pub factor: FactorLevels,
    /// `load` (a load setting), `param` (a workload parameter), `url` (a target URL
    /// option) or `server` (a server setting).
    pub kind: String,
}

/// One run of the experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunEntry {
    /// From 1, in running order.
    pub run: usize,
    /// The replicate block (from 1).
    pub block: usize,
    /// The cell's index in `design.cells`.
    pub cell: usize,
    /// The run's `--seed`.
    pub seed: u64,
    /// The result file, relative to the experiment's folder.
    pub file: String,
    /// Whether its result file is complete (absent: not run yet).
    #[serde(default)]
    pub done: bool,
    /// Each response's value in this run, on the response's own scale.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub responses: BTreeMap<String, f64>,
}

/// A server setting the experiment varies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SettingRecord {
    pub name: String,
    /// What it read before the experiment changed it.
    pub prior: String,
    /// Its value in postgresql.auto.conf before (`ALTER SYSTEM`), or none: then it is
    /// restored with `ALTER SYSTEM RESET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit: Option<String>,
    /// Restored at the end (or after the interruption).
    pub restored: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Effects add: the response analysed as it is.
    Linear,
    /// Effects multiply: the natural logarithm of the response analysed, every effect a
    /// factor.
    Log,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// Which intervals an effect's significance is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IntervalMethod {
    /// Student's t on the error's degrees of freedom.
    T,
    /// Percentiles of a residual bootstrap (chosen when the residuals are not normal).
    Bootstrap,
    /// No error estimate: no interval.
    None,
}

/// The analysis of one response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResponseAnalysis {
    pub response: String,
    /// `ns`, `ops/s`, `share` (a fraction of attempts), a figure's unit, or empty.
    pub unit: String,
    pub scale: Scale,
    /// Which way is better, for the best cell.
    pub better: Better,
    /// Of the intervals, 0.95.
    pub confidence: f64,
    /// Replicates analysed per cell (the complete blocks).
    pub replicates: usize,
    /// On the analysed scale (a log for `log`).
    pub grand_mean: f64,
    pub intervals: IntervalMethod,
    /// Every main effect and interaction (a fraction: every alias chain), main effects first.
    pub effects: Vec<EffectRecord>,
    pub error: ErrorRecord,
    /// Σ (y − mean)² on the analysed scale, and its degrees of freedom (N − 1).
    pub total_ss: f64,
    pub total_df: usize,
    pub residuals: ResidualChecks,
    /// Each cell's runs on the response's own scale.
    pub cells: Vec<CellSummary>,
    /// Each factor's mean response at each of its levels (the main-effects plot).
    pub main_effects: Vec<FactorMeans>,
    pub best: BestCell,
    /// The analysis in plain words, a sentence a line.
    pub summary: Vec<String>,
    /// What the checks found wrong, and what could not be computed.
    pub warnings: Vec<String>,
}

/// One main effect or interaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EffectRecord {
    /// In letters: `A`, `AB`.
    pub term: String,
    /// In factor names: `clients × synchronous_commit`.
    pub name: String,
    /// 1 for a main effect, 2 for a two-factor interaction, ...
    pub order: usize,
    /// In a fraction, the effects it cannot be told apart from (`BCD`, `−ABCE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub ss: f64,
    pub df: usize,
    /// Its share of the total variation (the allocation of variation).
    pub share: f64,
    /// Pooled into the error (`--pool`): no test of its own.
    pub pooled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// Told apart from noise at the confidence (by the chosen intervals; F's p for a term
    /// with more than one degree of freedom); absent without an error estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub significant: Option<bool>,
    /// A two-level term: its effect and intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast: Option<Estimate>,
    /// A term with more levels: the deviation from the grand mean at each combination of its
    /// factors' levels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelEstimate>,
}

/// An estimate on the analysed scale with its intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Estimate {
    pub estimate: f64,
    /// The chosen interval (t or bootstrap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_interval: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_interval: Option<[f64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LevelEstimate {
    /// The term's factors' levels.
    pub levels: Vec<String>,
    #[serde(flatten)]
    pub estimate: Estimate,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorRecord {
    pub ss: f64,
    pub df: usize,
    /// Its share of the total variation.
    pub share: f64,
    /// The error's standard deviation on the analysed scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<f64>,
    /// The interactions pooled into it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pooled: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ResidualChecks {
    /// Anderson-Darling's A*² and p for normality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normality: Option<Test>,
    /// Brown-Forsythe's F and p for equal variance across cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equal_variance: Option<Test>,
    /// Spearman's ρ between the cells' means and spreads, and the one-sided p of ρ > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_with_mean: Option<Test>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Test {
    pub statistic: f64,
    pub p: f64,
    /// p at or above 0.05.
    pub passed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellSummary {
    pub cell: usize,
    pub levels: Vec<String>,
    pub values: Vec<f64>,
    pub mean: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FactorMeans {
    pub factor: String,
    pub levels: Vec<String>,
    /// The mean response over every run at each level (the response's own scale).
    pub means: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BestCell {
    pub cell: usize,
    pub levels: Vec<String>,
    pub mean: f64,
}

/// The JSON Schema of the experiment file (docs/schema/experiment.schema.json).
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(ExperimentRecord)
}
