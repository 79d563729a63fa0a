//! The server under test as the run observed it (docs/observe.md; field by field in
//! docs/results.md): each interval's figures beside the clients' (`intervals[].server`), and
//! the run's whole (`server`): the measured intervals added up, named figures, each
//! operation's time split into the server's and the rest, what could not be seen, and what
//! observing cost.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::observe::{ObservedInterval, ObserverCost, ServerInterval, StatementDelta, Unavailable};

/// One interval as the server saw it (`intervals[].server`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerIntervalRecord {
    /// When the two readings that bound it were taken, seconds from the run's start: the
    /// interval's own bounds, but for a first reading taken after the start, a last one at
    /// the end, or a late reading (which then spans the intervals it missed).
    pub start_s: f64,
    pub end_s: f64,
    /// The target's figures.
    pub target: ServerInterval,
    /// The server behind the target (`--observe-behind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<ServerInterval>,
    /// What was found unavailable while this interval was observed (each thing once, in
    /// the interval where it was found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
}

impl From<ObservedInterval> for ServerIntervalRecord {
    fn from(o: ObservedInterval) -> Self {
        ServerIntervalRecord {
            start_s: o.start_s,
            end_s: o.end_s,
            target: o.target,
            behind: o.behind,
            unavailable: o.unavailable,
        }
    }
}

/// The run's server side (`server`): present when the run observed its server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerRecord {
    /// The target's URL, without its password.
    pub target: String,
    /// The server behind it, when one was observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<String>,
    /// Under `--shard`: the shard that observed the server (shard 0; the others do not, so
    /// that `loadrig merge` holds the server's counters once, not once per shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_by_shard: Option<usize>,
    /// What could not be observed, why, and what would enable it; each thing once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
    /// What observing cost; absent in a recovered run (the stream does not carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostRecord>,
    /// The target's measured intervals added up (warm-up left out): counters, waits,
    /// timed waits, statements and processes summed; gauges are means.
    pub measured: ServerTotals,
    /// The same for the server behind the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_measured: Option<ServerTotals>,
    /// Named figures of the measured part, by stable names (docs/results.md lists them):
    /// what `compare`, `ab` and the verdict read, and what an experiment may name as a
    /// response. Only the figures the server let the observer see are present.
    #[serde(default)]
    pub figures: BTreeMap<String, f64>,
    /// Each operation's client-measured time beside the server's own execution time for
    /// the statements (or commands) matched to it, the rest as the difference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decomposition: Vec<OpTime>,
    /// How statements were matched to operations, in words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub matching: String,
    /// How the sampled lock waits were given to operations (`decomposition[].lock_wait_ms`),
    /// in words; empty when the server's lock waits were not sampled.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lock_wait_matching: String,
    /// The statements (or commands) that ran in the measured part and matched no
    /// operation, most time first (up to 10): the observer's are never among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched: Vec<StatementDelta>,
}

/// A server's measured intervals added up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerTotals {
    /// Measured intervals that had figures, and the seconds their readings spanned.
    pub intervals: usize,
    pub seconds: f64,
    #[serde(flatten)]
    pub figures: ServerInterval,
}

/// What observing cost, with its shares of the run's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CostRecord {
    #[serde(flatten)]
    pub cost: ObserverCost,
    /// `cpu_s` as a share of the rig's CPU time over the run (every interval, warm-up
    /// included): what observing took from the rig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// `server_time_ms` as a share of the server time of every statement over the run
    /// (the observer's own included): what observing took from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_time_share: Option<f64>,
    /// `queries` per operation the run completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries_per_op: Option<f64>,
}

/// One operation's time: the client's mean beside the server's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpTime {
    pub op: String,
    /// Operations completed in the measured part (successes and failures).
    pub ops: u64,
    /// The client-measured mean response time (successes), ms.
    pub client_mean_ms: f64,
    /// The server's execution time of the matched statements per operation, ms; absent
    /// when none matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_mean_ms: Option<f64>,
    /// `client_mean_ms - server_mean_ms`: the network, the round trips, queueing outside
    /// the server's statements, the protocol and the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_ms: Option<f64>,
    /// `server_mean_ms / client_mean_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_share: Option<f64>,
    /// Server statements (or commands) per operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements_per_op: Option<f64>,
    /// The server's keys of the statements matched (`queryid`, digest, command).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
    /// The time per operation its statements waited for locks on the server, ms, estimated
    /// from the session samples (`server.lock_wait_matching` says how); absent when the
    /// server's lock waits were not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_wait_ms: Option<f64>,
    /// This operation's share of every session-sample that waited for a lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_wait_share: Option<f64>,
}
