//! What the observer hands out: plain serde records, one per interval of the run's grid,
//! and at the end everything together with what was unavailable and what observing cost.
//! Counters are deltas over the interval, gauges the value at its end (docs/observe.md names
//! each source's figures and their units).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which server a figure is from: the target, or the server behind it (slapd's back-sql in
/// front of PostgreSQL).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Target,
    Behind,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Target => "target",
            Role::Behind => "behind",
        }
    }
}

/// One interval of the run's grid as the server saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObservedInterval {
    /// The run's interval this record belongs to: the one from `index × interval` to
    /// `(index + 1) × interval` after the run's start.
    pub index: u64,
    /// When the two samples that bound it were taken, in seconds from the run's start: the
    /// grid's boundaries, except for a first interval that began after the run did, a last
    /// one cut short by the end, or a sample that came late (then it spans the intervals
    /// it missed, and `index` is the last of them).
    pub start_s: f64,
    pub end_s: f64,
    pub target: ServerInterval,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<ServerInterval>,
    /// What was found unavailable while this interval was observed; each thing is reported
    /// once, in the interval where it was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
}

/// One server's figures over one interval. Only what its sources could see is present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerInterval {
    /// Deltas of the server's cumulative counters, by `SOURCE.NAME` as the server names
    /// them (`pg_stat_database.xact_commit`, `global_status.Questions`, `stats.keyspace_hits`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "super::sum::whole::serialize"
    )]
    pub counters: BTreeMap<String, f64>,
    /// Values at the interval's end (`pg_stat_database.numbackends`, `global_status.Threads_running`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "super::sum::whole::serialize"
    )]
    pub gauges: BTreeMap<String, f64>,
    /// Active-session samples (PostgreSQL): where the run's backends spent their time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits: Option<WaitProfile>,
    /// The run's sessions seen waiting for a lock at each session sample, by the statement
    /// they were running (PostgreSQL's active-session samples, InnoDB's `INNODB_TRX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_waits: Option<super::LockWaitSamples>,
    /// Wait events the server times itself (MySQL's performance_schema), most time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timed_waits: Vec<TimedWait>,
    /// Calls and execution time per statement (pg_stat_statements, performance_schema
    /// digests, Redis commandstats), the observer's own left out; most time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementDelta>,
    /// The server's processes on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<ProcessFigures>,
    /// The values of the user's `[[observe]]` queries that ran in this interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<QueryValue>,
}

/// Active-session sampling over one interval: each sample reads the state of every backend
/// of the run; an active backend counts in the class and event it waits on, or in `CPU`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WaitProfile {
    /// Samples taken.
    pub samples: u64,
    /// The run's backends seen, summed over the samples (divide by `samples` for the mean).
    pub backends: u64,
    /// Backend-samples in which a backend was active (running a statement): the shares'
    /// denominator.
    pub active: u64,
    /// Backend-samples idle inside a transaction (waiting for the client while holding
    /// what the transaction holds).
    pub idle_in_transaction: u64,
    /// Backend-samples whose state the observer's role may not see (another role's).
    pub hidden: u64,
    /// By class and event, most samples first.
    pub waits: Vec<WaitShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WaitShare {
    /// `wait_event_type` (`Lock`, `LWLock`, `IO`, `IPC`, `Client`, ...), or `CPU` for an
    /// active backend that waits on nothing.
    pub class: String,
    /// `wait_event` (`transactionid`, `WALWrite`, ...), or `CPU`.
    pub event: String,
    pub samples: u64,
    /// `samples / active`.
    pub share: f64,
}

/// A wait event the server timed (MySQL's `events_waits_summary_global_by_event_name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimedWait {
    pub event: String,
    pub count: u64,
    pub time_ms: f64,
}

/// One statement's (or Redis command's) calls and server time over the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatementDelta {
    /// The server's key: pg_stat_statements' `queryid`, MySQL's `SCHEMA/DIGEST`, the Redis
    /// command's name.
    pub id: String,
    /// The normalised text the server keeps for it (its placeholders, not the values).
    pub text: String,
    pub calls: u64,
    /// Execution time as the server measured it, in milliseconds.
    pub time_ms: f64,
}

/// The server's process tree over one interval, from /proc (docs/observe.md says how
/// processes that start and end inside an interval are counted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessFigures {
    /// The process holding the listening socket (the tree's root).
    pub pid: u32,
    /// Processes and threads in the tree at the interval's end.
    pub processes: u64,
    pub threads: u64,
    /// Processes that appeared and that ended since the interval's start.
    pub started: u64,
    pub ended: u64,
    /// CPU time in user and kernel mode, seconds (ended processes' included, through the
    /// times their parents collected).
    pub user_s: f64,
    pub system_s: f64,
    /// Time its threads were ready to run but waited for a CPU, seconds (schedstat).
    pub run_queue_s: f64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// Bytes read from and written to storage (/proc/PID/io), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes: Option<u64>,
    /// Time its threads waited for block I/O to complete, seconds (/proc/PID/task/TID/stat,
    /// `delayacct_blkio_ticks`): present only while the kernel's delay accounting is on
    /// (`sysctl kernel.task_delayacct=1`; off by default since Linux 5.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_wait_s: Option<f64>,
}

/// A user's `[[observe]]` query's value: the first column of its first row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryValue {
    pub name: String,
    /// The value as a number, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The value as text, when it is not a number (absent for NULL and no rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Something the observer could not see, why, and what would let it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Unavailable {
    pub server: Role,
    /// What could not be observed (`pg_stat_statements`, `processes`, `observation`).
    pub what: String,
    pub why: String,
    /// What enables it (empty when nothing on the rig's side can).
    pub enable: String,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} not available: {}",
            self.server.name(),
            self.what,
            self.why
        )?;
        if !self.enable.is_empty() {
            write!(f, "; enable it with {}", self.enable)?;
        }
        Ok(())
    }
}

/// What observing cost, measured directly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObserverCost {
    /// CPU time of the observer's thread in the rig, seconds.
    pub cpu_s: f64,
    /// Statements, commands, searches and requests the observer sent to the servers.
    pub queries: u64,
    /// The server time those took where the servers count it, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_time_ms: Option<f64>,
    /// Where `server_time_ms` was read (`pg_stat_statements`, `performance_schema`,
    /// `commandstats`), for each server that counted it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_time_from: Vec<String>,
}

/// A whole observation: every interval, what was unavailable, and the cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Observation {
    /// The target and the server behind it, as URLs without their passwords.
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<String>,
    /// The grid's interval, seconds.
    pub interval_s: f64,
    pub intervals: Vec<ObservedInterval>,
    pub unavailable: Vec<Unavailable>,
    pub cost: ObserverCost,
}
