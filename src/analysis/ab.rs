//! The ab file (`DIR/ab.json` of `loadrig ab`): which run files each variant wrote, in
//! which order they ran, and their comparison (the structure `compare` prints with
//! `--format json` for several runs per side).

use schemars::JsonSchema;
use serde::Serialize;

use super::compare::Comparison;

/// The ab file's version; raised when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// `DIR/ab.json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AbRecord {
    /// Always "ab".
    pub kind: String,
    pub schema_version: u32,
    /// Rounds asked for; each ran A once and B once.
    pub rounds: u32,
    /// Each round's order drawn at random (`--shuffle`) rather than A then B.
    pub shuffle: bool,
    /// The runs in the order they ran: "a-1", "b-1", "b-2", "a-2", …
    pub order: Vec<String>,
    pub a: Variant,
    pub b: Variant,
    /// All rounds ran (false after Ctrl-C: the comparison covers the finished rounds).
    pub complete: bool,
    pub comparison: Comparison,
}

/// One side of the experiment.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Variant {
    pub workload: String,
    /// The target URL without its password.
    pub target: String,
    /// This variant's own `--a-set`/`--b-set` parameters, NAME=VALUE.
    pub set: Vec<String>,
    /// Its result files, relative to the ab file's folder, round by round.
    pub files: Vec<String>,
}

/// The JSON Schema of the ab file (docs/schema/ab.schema.json).
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(AbRecord)
}
