//! What the result file records of a run watched live: the dashboard's own cost
//! (`--dashboard`), and a sharded run collected as it went (`loadrig collect`): which shards
//! sent what, which stopped, which streams were refused, which intervals lack a shard.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The live dashboard of this run (`--dashboard ADDR`, docs/live.md): its own CPU against
/// the run's, and how many pages watched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DashboardRecord {
    /// The address it served on (`http://ADDR/`).
    pub addr: String,
    /// CPU time of the dashboard (its thread, and the work of handing it each interval) from
    /// the run's start to its end, in seconds.
    pub cpu_s: f64,
    /// CPU time of the whole loadrig process over the same span, the dashboard's included.
    pub run_cpu_s: f64,
    /// `cpu_s / run_cpu_s`: the dashboard's share of what the run cost.
    pub cpu_share: f64,
    /// The most pages open at once, and pages opened in all, during the run.
    pub pages_max: usize,
    pub pages_opened: usize,
    /// Server-sent events written during the run (to all pages), and their bytes.
    pub events_sent: u64,
    pub bytes_sent: u64,
}

/// A run collected from its shards as it went (`loadrig collect`, docs/live.md): what the
/// collector received. The figures themselves are `loadrig merge`'s of what it received.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CollectRecord {
    /// The address the collector listened on.
    pub listen: String,
    /// The version of the shards' stream it read.
    pub stream_version: u32,
    /// How many shards it waited for.
    pub shards: usize,
    /// Shards that sent their whole run (their final result), by index.
    pub finished: Vec<usize>,
    /// Shards that stopped sending before their end: their intervals up to then are in the
    /// result, the rest are not (`partial_intervals`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<StoppedShard>,
    /// Shards that never connected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never_connected: Vec<usize>,
    /// Intervals some shard's figures are missing from, with those shards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_intervals: Vec<PartialInterval>,
    /// Connections refused (a wrong token, another run's shard, a shard index already
    /// sending, another stream version, not a stream at all).
    pub refused: u64,
    /// The first refusals, each with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<Refusal>,
}

/// A shard that stopped sending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoppedShard {
    pub shard: usize,
    /// The last interval it sent (0: none).
    pub after_interval: u64,
    /// Why the collector gave it up: its connection closed, or it sent nothing for a while.
    pub reason: String,
}

/// An interval of the collected run without some shard's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PartialInterval {
    pub index: u64,
    pub missing_shards: Vec<usize>,
}

/// A stream the collector refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Refusal {
    /// The peer's address.
    pub from: String,
    /// The shard index it said it was, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<usize>,
    pub reason: String,
}
