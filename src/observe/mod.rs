//! The server under test observed interval by interval, on connections of the observer's
//! own: what the server itself counts (PostgreSQL's statistics views and pg_stat_statements,
//! MySQL's global status and performance_schema, Redis's INFO, OpenLDAP's cn=Monitor,
//! nginx's stub_status), where its backends spend their time (PostgreSQL's active-session
//! samples), its processes on this machine (/proc), and a user's own read-only queries.
//!
//! The observer never resets statistics, creates an extension or changes a setting; what it
//! cannot see is reported once, with what would let it, and never fails the run. It runs on
//! a thread of its own ([`Observer::start`]), aligned to the run's interval grid, and hands
//! out plain records ([`ObservedInterval`], [`Observation`]). docs/observe.md says what each
//! target gives and needs.

mod grid;
mod ldap;
mod listen;
mod lock_waits;
mod mysql;
mod nginx;
mod notes;
mod observer;
mod postgres;
mod procfs;
mod query;
mod reading;
mod record;
mod redis;
mod server;
mod sum;

pub use grid::Grid;
pub use lock_waits::{LockWaitSamples, LockWaitStatement};
pub use observer::{check, Observer};
pub use procfs::ServerProcesses;
pub use query::UserQuery;
pub use record::{
    Observation, ObservedInterval, ObserverCost, ProcessFigures, QueryValue, Role, ServerInterval,
    StatementDelta, TimedWait, Unavailable, WaitProfile, WaitShare,
};
pub use sum::{figure, ALL_STATEMENT_TIME};

/// Whether a run on `scheme` observes its server when `--observe` is not given: the network
/// targets whose observer costs under 1 % of the rig's CPU on their standard workloads
/// (docs/performance.md, "Other references"): Redis, HTTP and LDAP. PostgreSQL's
/// (1.06-1.76 %) and MariaDB's (1.28-1.82 %) stayed above it after their cost was cut (the
/// session samples, each boundary's queries and the server's many processes or threads
/// read from /proc weigh most on runs whose clients spend little CPU), so their runs
/// observe only when asked (`--observe on`), and the console says so once.
pub fn observed_by_default(scheme: &str) -> bool {
    matches!(
        scheme,
        "redis" | "rediss" | "http" | "https" | "ldap" | "ldaps"
    )
}

/// Whether targets of `scheme` have a server the observer can read (the network targets);
/// the embedded ones (sqlite, fs, dbm) and the simulated ones (noop, sleep) have none.
pub fn observable(scheme: &str) -> bool {
    matches!(
        scheme,
        "postgres"
            | "postgresql"
            | "mysql"
            | "mariadb"
            | "redis"
            | "rediss"
            | "ldap"
            | "ldaps"
            | "http"
            | "https"
    )
}

/// Active-session samples per second unless told otherwise.
pub const DEFAULT_SESSION_RATE: f64 = 10.0;

/// Which PostgreSQL backends the active-session samples read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sessions {
    /// The run's own: the backends of the target's database whose `application_name` is
    /// the one the run's clients carry (the URL's `application_name`, else `loadrig`). A
    /// server behind the target is sampled whole, as with `All`.
    Run,
    /// Every client backend of the database but the observer's own.
    All,
    /// The backends with this `application_name`.
    Application(String),
}

/// What to observe and how.
#[derive(Debug, Clone)]
pub struct ObserveConfig {
    /// The target's URL, as the run was given it.
    pub target: String,
    /// A server behind the target to observe as well (slapd's back-sql in front of
    /// PostgreSQL).
    pub behind: Option<String>,
    pub sessions: Sessions,
    /// Active-session samples per second (0: none).
    pub session_rate: f64,
    /// The user's `[[observe]]` queries.
    pub queries: Vec<UserQuery>,
}

impl ObserveConfig {
    /// The target alone, the run's own sessions sampled at the default rate, no queries.
    pub fn new(target: impl Into<String>) -> ObserveConfig {
        ObserveConfig {
            target: target.into(),
            behind: None,
            sessions: Sessions::Run,
            session_rate: DEFAULT_SESSION_RATE,
            queries: Vec::new(),
        }
    }
}
