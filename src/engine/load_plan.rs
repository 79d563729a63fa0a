//! The resolved load (`LoadPlan`) and the types it is made of, as the result file records
//! them (durations in seconds), with their serde helpers.

use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::stages::{Profile, Stage};
use super::stop_when::StopWhen;
use super::timeline::Timeline;

/// Connections per second before the run when nothing says, from [`PACED_FROM`] clients:
/// a server's accept queue (Redis's 511, the kernel's somaxconn) then never overflows.
pub const DEFAULT_CONNECT_RATE: f64 = 5000.0;
/// Fewer clients than this connect unpaced by default.
pub const PACED_FROM: usize = 1000;

/// Closed loop (clients back to back) or open loop (arrivals on a schedule).
/// Durations are seconds in the result file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    Closed {
        clients: usize,
        #[serde(with = "secs")]
        #[schemars(with = "f64")]
        think: Duration,
    },
    Open {
        rate: f64,
        /// Recorded as `"poisson": true|false`, as before this was an enum.
        #[serde(rename = "poisson", with = "poisson_flag")]
        #[schemars(
            with = "bool",
            description = "true: Poisson arrivals (exponential gaps); false: evenly spaced"
        )]
        arrivals: Arrivals,
        workers: usize,
        #[serde(with = "secs")]
        #[schemars(with = "f64")]
        late_after: Duration,
    },
}

/// How an open loop spaces its arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arrivals {
    /// Evenly spaced, like wrk2.
    #[default]
    Constant,
    /// Exponential gaps: independent users.
    Poisson,
}

mod poisson_flag {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Arrivals;

    pub fn serialize<S: Serializer>(a: &Arrivals, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*a == Arrivals::Poisson)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arrivals, D::Error> {
        Ok(if bool::deserialize(d)? {
            Arrivals::Poisson
        } else {
            Arrivals::Constant
        })
    }
}

/// The resolved load: what `loadrig run` will do, recorded in the result (durations in
/// seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadPlan {
    #[serde(flatten)]
    pub mode: Mode,
    #[serde(with = "opt_secs")]
    #[schemars(with = "Option<f64>")]
    pub duration: Option<Duration>,
    pub ops: Option<u64>,
    pub samples: Option<u64>,
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub interval: Duration,
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub warmup: Duration,
    pub seed: u64,
    pub connection: Connection,
    /// An operation still unanswered after this fails as `timeout`; its session is replaced.
    /// Absent from files written before the limit existed.
    #[serde(with = "opt_secs", default)]
    #[schemars(with = "Option<f64>")]
    pub op_timeout: Option<Duration>,
    /// Threads shared by the clients of an async target.
    pub threads: usize,
    /// Connections opened per second before the run (client k starts connecting k/rate
    /// after the first), as given; absent: the default ([`LoadPlan::connect_pace`]) and in
    /// older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_rate: Option<f64>,
    /// `--shard I/N`: this process runs one share of a run split over N processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// `--start-at`: the wall-clock instant the run starts (after connecting and loading),
    /// the same on every shard; RFC 3339 in the file.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_rfc3339")]
    #[schemars(with = "Option<String>")]
    pub start_at: Option<SystemTime>,
    /// `--pipeline`: operations in flight per connection. Each is a client stream of its own
    /// (its operations, seeds and latencies) sharing the connection; `clients` (open loop:
    /// `workers`) counts connections. Absent: 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub pipeline: usize,
    /// `--pipeline-refill`: how many of a connection's streams must be free (their reply
    /// read) before it writes their next requests. 1 (absent): each as soon as its reply is
    /// in, a closed loop per stream; `pipeline`: once all are answered, as
    /// `redis-benchmark -P`, wrk's pipeline.lua and pgbench's `\endpipeline` do. Only the
    /// batch driver (`engine::pipe`) waits; the runner refuses it elsewhere.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub pipeline_refill: usize,
    /// `--client-slice`: the CPU time slice the client threads ran with ([`slice`]), when
    /// the kernel took the request; absent: the kernel's default (and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_secs")]
    #[schemars(with = "Option<f64>")]
    pub client_slice: Option<Duration>,
    /// `--stages`, `[[load.stage]]`: the load changes during the run, stage after stage,
    /// from its start (the warm-up is the first part); `rate` (open loop) or `clients`
    /// (closed loop) above is then the highest any stage reaches, and `duration` the part
    /// after the warm-up. Absent: one constant load (and in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// `--stop-when`: the run ends once this holds for `consecutive` measured intervals in
    /// a row (a breakpoint search in one run). Absent: the run goes to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_when: Option<StopWhen>,
    /// `--observe on|off` as given; absent: the target's default (on for SQL and LDAP targets,
    /// off for embedded ones) and in older files. Whether the server was observed is the
    /// result's `server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<bool>,
    /// `--observe-rate`: PostgreSQL's active-session samples per second, as given; absent:
    /// the default (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe_rate: Option<f64>,
    /// `--observe-behind`: the server behind the target, observed too; written with any
    /// password replaced by `***`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "redacted"
    )]
    pub observe_behind: Option<String>,
}

/// A URL as the result shows it: any password replaced by `***`.
fn redacted<S: serde::Serializer>(url: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(u) => s.serialize_some(&crate::error::redact(u)),
        None => s.serialize_none(),
    }
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// One share of a run split over `count` processes. Clients (open loop: workers) are
/// numbered over the whole run, and this shard runs `first_client ..` of them: each
/// client's seed, `seq` numbers, share of `--ops` and place in the arrival schedule follow
/// from its number among `clients`, so the union of the shards is the unsplit run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Shard {
    /// From 0.
    pub index: usize,
    pub count: usize,
    /// The number of this shard's first client stream among the whole run's.
    pub first_client: usize,
    /// The whole run's client streams: connections (open loop: workers in flight) times
    /// `--pipeline`.
    pub clients: usize,
    /// Open loop: the whole run's rate (`rate` in `load` is this shard's share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// `n` split over `count` as evenly as possible: (the first of share `i`, its size).
pub fn share(n: usize, count: usize, i: usize) -> (usize, usize) {
    let (base, rest) = (n / count, n % count);
    (i * base + i.min(rest), base + usize::from(i < rest))
}

/// When clients connect: once for the run, or for every operation (seed 003's `mysql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Connection {
    Persistent,
    PerOp,
}

impl LoadPlan {
    /// Client streams: connections times the operations in flight on each (`--pipeline`).
    /// Seeds, `--ops` shares, arrivals and fairness count these.
    pub fn clients(&self) -> usize {
        self.connections() * self.pipeline.max(1)
    }

    /// Connections: `--clients` (open loop: `--max-in-flight`).
    pub fn connections(&self) -> usize {
        match self.mode {
            Mode::Closed { clients, .. } => clients,
            Mode::Open { workers, .. } => workers,
        }
    }

    /// The client streams that share connection `c` (consecutive numbers).
    pub fn streams_of(&self, c: usize) -> std::ops::Range<usize> {
        let p = self.pipeline.max(1);
        c * p..(c + 1) * p
    }

    pub fn is_open(&self) -> bool {
        matches!(self.mode, Mode::Open { .. })
    }

    pub fn timeline(&self) -> Timeline {
        if self.stages.is_empty() {
            return Timeline::new(self.interval, self.warmup, self.duration);
        }
        let profile = self.profile();
        let starts: Vec<Duration> = (0..self.stages.len()).map(|i| profile.start(i)).collect();
        Timeline::staged(self.interval, self.warmup, &starts, profile.end())
    }

    /// The stages laid end to end; empty without stages.
    pub fn profile(&self) -> Profile {
        Profile::new(&self.stages)
    }

    /// This process's share of the whole run's load: its clients (open loop: workers) over
    /// all of them; 1 unsharded.
    pub fn share(&self) -> f64 {
        self.clients() as f64 / self.all_clients().max(1) as f64
    }

    /// Connections per second before the run: the given rate, else unpaced below
    /// [`PACED_FROM`] clients and [`DEFAULT_CONNECT_RATE`] from there.
    pub fn connect_pace(&self) -> Option<f64> {
        self.connect_rate
            .or((self.connections() >= PACED_FROM).then_some(DEFAULT_CONNECT_RATE))
    }

    /// The number of this process's first client among the whole run's (0 unsharded).
    pub fn first_client(&self) -> usize {
        self.shard.map_or(0, |s| s.first_client)
    }

    /// The whole run's clients (open loop: workers), over every shard.
    pub fn all_clients(&self) -> usize {
        self.shard.map_or_else(|| self.clients(), |s| s.clients)
    }

    /// Open loop: the whole run's rate, over every shard.
    pub fn all_rate(&self) -> Option<f64> {
        match self.mode {
            Mode::Open { rate, .. } => Some(self.shard.and_then(|s| s.rate).unwrap_or(rate)),
            Mode::Closed { .. } => None,
        }
    }
}

/// An instant as RFC 3339 (nanoseconds, UTC), both ways.
mod opt_rfc3339 {
    use std::time::SystemTime;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&humantime::format_rfc3339_nanos(*t).to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| humantime::parse_rfc3339_weak(&text).map_err(D::Error::custom))
            .transpose()
    }
}

/// A duration as seconds (f64), both ways; reading rounds to the nearest nanosecond, so
/// what was written reads back as the same duration.
pub(crate) mod secs {
    use std::time::Duration;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs)
            .map_err(|e| D::Error::custom(format!("{secs} seconds: {e}")))
    }
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Secs(#[serde(with = "super::secs")] Duration);
        Ok(Option::<Secs>::deserialize(d)?.map(|s| s.0))
    }
}
