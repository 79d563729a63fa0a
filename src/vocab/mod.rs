//! The vocabulary every layer shares: an operation as a target receives it ([`Op`],
//! [`NativeOp`], by family in `native/`), what it did ([`Outcome`]), and how it failed
//! ([`OpError`], [`ErrorClass`], counted in [`ErrorCounts`]).
//!
//! This is the bottom layer: it imports nothing from the crate.

mod native;
mod observe;

use std::ops::{AddAssign, Index, IndexMut};

use serde::{Deserialize, Serialize};

pub use native::{grpc, GrpcCall, GrpcOp, GrpcSlot, ReplyPath, Step};
pub use native::{
    Family, HttpOp, LdapOp, MemcachedOp, NativeOp, OpFamily, Piece, RecordLayout, RecordOp,
    RedisOp, Scope, SqlOp, StoreMode, CAPTURES, RECORD_TABLE,
};
pub use observe::UserQuery;

/// How a network target's connections are protected, as the result records it (read from
/// a target URL by `targets::tls::mode_of_url`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    Off,
    /// TLS, the server's certificate checked against the trusted roots and the host name.
    Verified,
    /// TLS with `insecure=true`: any certificate accepted.
    Insecure,
}

impl TlsMode {
    pub fn name(self) -> &'static str {
        match self {
            TlsMode::Off => "off",
            TlsMode::Verified => "verified",
            TlsMode::Insecure => "insecure",
        }
    }
}

/// Why an operation failed, so the engine can count failures by class.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Connect,
    Auth,
    Timeout,
    Deadlock,
    Serialization,
    Constraint,
    Protocol,
    Other,
}

impl ErrorClass {
    /// Every class, each at the index of its discriminant (what [`ErrorCounts`] relies on).
    pub const ALL: [ErrorClass; 8] = [
        ErrorClass::Connect,
        ErrorClass::Auth,
        ErrorClass::Timeout,
        ErrorClass::Deadlock,
        ErrorClass::Serialization,
        ErrorClass::Constraint,
        ErrorClass::Protocol,
        ErrorClass::Other,
    ];

    /// Its name in result files and workloads (`retry.on`), as serde writes it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Auth => "auth",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::Serialization => "serialization",
            ErrorClass::Constraint => "constraint",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Other => "other",
        }
    }
}

/// A failed operation: counted by class and by message, never a reason to stop the run.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{class:?}: {message}")]
pub struct OpError {
    pub class: ErrorClass,
    pub message: String,
}

impl OpError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        OpError {
            class,
            message: message.into(),
        }
    }
}

/// Failed operations counted by class: a fixed array indexed by [`ErrorClass`], so the hot
/// path adds to a slot with no lookup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts([u64; ErrorClass::ALL.len()]);

impl ErrorCounts {
    /// Every class with its count, in [`ErrorClass::ALL`] order, zeros included.
    pub fn iter(&self) -> impl Iterator<Item = (ErrorClass, u64)> + '_ {
        ErrorClass::ALL.into_iter().zip(self.0.iter().copied())
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl Index<ErrorClass> for ErrorCounts {
    type Output = u64;

    #[inline]
    fn index(&self, class: ErrorClass) -> &u64 {
        &self.0[class as usize]
    }
}

impl IndexMut<ErrorClass> for ErrorCounts {
    #[inline]
    fn index_mut(&mut self, class: ErrorClass) -> &mut u64 {
        &mut self.0[class as usize]
    }
}

impl AddAssign<&ErrorCounts> for ErrorCounts {
    fn add_assign(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

/// What a statement sent to the target does, as sysbench counts its queries: reads,
/// writes, and other (transaction control, binds, pings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Read,
    Write,
    Other,
}

impl StatementKind {
    /// SQL by its first keyword: `SELECT`, `SHOW`, `VALUES`, `TABLE`, `WITH` read; `INSERT`,
    /// `UPDATE`, `DELETE`, `REPLACE`, `MERGE` write; the rest (`BEGIN`, `SET`, DDL) is other.
    pub fn of_sql(query: &str) -> StatementKind {
        let word: String = query
            .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect::<String>()
            .to_ascii_uppercase();
        match word.as_str() {
            "SELECT" | "SHOW" | "VALUES" | "TABLE" | "WITH" => StatementKind::Read,
            "INSERT" | "UPDATE" | "DELETE" | "REPLACE" | "MERGE" => StatementKind::Write,
            _ => StatementKind::Other,
        }
    }

    /// A Redis command by its name: the common read commands read, connection and
    /// transaction control is other, everything else writes.
    pub fn of_redis(command: &str) -> StatementKind {
        const READS: &[&str] = &[
            "GET",
            "MGET",
            "GETRANGE",
            "STRLEN",
            "EXISTS",
            "TTL",
            "PTTL",
            "TYPE",
            "HGET",
            "HMGET",
            "HGETALL",
            "HEXISTS",
            "HLEN",
            "HKEYS",
            "HVALS",
            "HSCAN",
            "LRANGE",
            "LLEN",
            "LINDEX",
            "SMEMBERS",
            "SISMEMBER",
            "SCARD",
            "SSCAN",
            "ZRANGE",
            "ZRANGEBYSCORE",
            "ZRANGEBYLEX",
            "ZREVRANGE",
            "ZREVRANGEBYSCORE",
            "ZSCORE",
            "ZCARD",
            "ZCOUNT",
            "ZRANK",
            "ZSCAN",
            "SCAN",
            "KEYS",
            "DBSIZE",
            "XRANGE",
            "XLEN",
            "XREAD",
        ];
        const OTHER: &[&str] = &[
            "PING", "ECHO", "AUTH", "SELECT", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH",
            "CLIENT", "HELLO", "INFO",
        ];
        let name = command.to_ascii_uppercase();
        if READS.contains(&name.as_str()) {
            StatementKind::Read
        } else if OTHER.contains(&name.as_str()) {
            StatementKind::Other
        } else {
            StatementKind::Write
        }
    }
}

/// Statements sent to the target, by [`StatementKind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatementCounts {
    pub read: u64,
    pub write: u64,
    pub other: u64,
}

impl StatementCounts {
    #[inline]
    pub fn add(&mut self, kind: StatementKind) {
        match kind {
            StatementKind::Read => self.read += 1,
            StatementKind::Write => self.write += 1,
            StatementKind::Other => self.other += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.read + self.write + self.other
    }
}

impl AddAssign<&StatementCounts> for StatementCounts {
    fn add_assign(&mut self, other: &StatementCounts) {
        self.read += other.read;
        self.write += other.write;
        self.other += other.other;
    }
}

/// What a successful operation did: rows (or keys, entries, files) read or written, and
/// when asked (`capture`), the values of the first row or reply, one per column.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub rows: u64,
    pub captured: Vec<Vec<u8>>,
    /// The operation ended at a rollback step of its `tx` (the engine sets it; targets
    /// leave it false).
    pub rolled_back: bool,
}

impl Outcome {
    pub fn rows(rows: u64) -> Outcome {
        Outcome {
            rows,
            captured: Vec::new(),
            rolled_back: false,
        }
    }
}

/// One operation with its parameters bound, borrowed from the client's buffers.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Does nothing on any target: the harness cost, or pure latency on `sleep`.
    Nop,
    Put {
        key: &'a str,
        value: &'a [u8],
    },
    Get {
        key: &'a str,
    },
    Update {
        key: &'a str,
        value: &'a [u8],
    },
    Delete {
        key: &'a str,
    },
    /// A native operation: its shape, with each argument's kind, and `args`, its arguments
    /// rendered in [`NativeOp::map_args`] order. `capture` asks for the first row's values
    /// in [`Outcome::captured`].
    Native {
        op: &'a NativeOp<ValueKind>,
        args: &'a [Vec<u8>],
        capture: bool,
    },
    Begin,
    Commit,
    Rollback,
}

/// What a native argument's values are, so a driver can bind them with their own type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// One number generator (`{seq}`, `{uniform ..}`, `{zipf ..}`, `{client}`) or one
    /// integer parameter, alone.
    Integer,
    /// One float parameter, alone.
    Float,
    /// Anything else: literal text, strings, bytes, captures, mixtures.
    Bytes,
}

/// A step a workload takes before every measured run (`before_run`), as pgbench vacuums
/// its branches and tellers and empties its history before each run (unless `-n`). Each
/// touches only `loadrig_` tables; SQL targets carry them out in their own dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStep {
    /// Reclaim the dead rows of a table (PostgreSQL's VACUUM; nothing where the server
    /// purges them by itself).
    Vacuum(String),
    /// Delete every row of a table (TRUNCATE; DELETE on SQLite).
    Empty(String),
    /// One SQL statement on `loadrig_` tables, as written (parameters substituted).
    Sql(String),
}

impl RunStep {
    /// What the step does, for messages: "vacuuming loadrig_x".
    pub fn describe(&self) -> String {
        match self {
            RunStep::Vacuum(t) => format!("vacuuming {t}"),
            RunStep::Empty(t) => format!("emptying {t}"),
            RunStep::Sql(s) => format!("running \"{s}\""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_counts_index_by_class() {
        let mut a = ErrorCounts::default();
        a[ErrorClass::Timeout] += 2;
        a[ErrorClass::Other] += 1;
        assert_eq!((a[ErrorClass::Timeout], a[ErrorClass::Connect]), (2, 0));
        assert_eq!(a.total(), 3);
        let listed: Vec<(ErrorClass, u64)> = a.iter().filter(|(_, n)| *n > 0).collect();
        assert_eq!(
            listed,
            [(ErrorClass::Timeout, 2), (ErrorClass::Other, 1)],
            "in ErrorClass::ALL order"
        );
        assert_eq!(a.iter().count(), ErrorClass::ALL.len(), "zeros included");
        let mut b = ErrorCounts::default();
        b[ErrorClass::Timeout] = 5;
        b[ErrorClass::Auth] = 1;
        a += &b;
        assert_eq!((a[ErrorClass::Timeout], a[ErrorClass::Auth]), (7, 1));
        assert_eq!(a.total(), 9);
    }

    #[test]
    fn every_error_class_is_listed_at_its_own_index() {
        for (i, class) in ErrorClass::ALL.iter().enumerate() {
            assert_eq!(*class as usize, i, "{class:?}");
        }
        // The schema lists every variant serde knows, so a class missing from ALL shows.
        let schema = schemars::schema_for!(ErrorClass);
        let names: Vec<&str> = schema.as_value()["enum"]
            .as_array()
            .expect("a string enum")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        let all: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, all);
    }

    #[test]
    fn error_classes_round_trip_by_name() {
        for class in ErrorClass::ALL {
            let text = serde_json::to_string(&class).unwrap();
            assert_eq!(text, format!("\"{}\"", class.name()));
            assert_eq!(serde_json::from_str::<ErrorClass>(&text).unwrap(), class);
        }
        assert_eq!(
            serde_json::to_string(&ErrorClass::Serialization).unwrap(),
            "\"serialization\""
        );
        assert!(serde_json::from_str::<ErrorClass>("\"Timeout\"").is_err());
        let map: std::collections::HashMap<ErrorClass, u64> =
            serde_json::from_str(r#"{"deadlock": 3}"#).unwrap();
        assert_eq!(map[&ErrorClass::Deadlock], 3, "usable as a map key");
    }

    #[test]
    fn statements_are_told_apart_by_their_first_word() {
        use StatementKind::{Other, Read, Write};
        for (sql, kind) in [
            ("SELECT c FROM t WHERE id=$1", Read),
            ("  (select 1)", Read),
            ("WITH x AS (SELECT 1) SELECT * FROM x", Read),
            ("update t set k=k+1", Write),
            ("INSERT INTO t VALUES (1)", Write),
            ("DELETE FROM t", Write),
            ("REPLACE INTO t VALUES (1)", Write),
            ("BEGIN", Other),
            ("CREATE TABLE loadrig_t (id int)", Other),
            ("", Other),
        ] {
            assert_eq!(StatementKind::of_sql(sql), kind, "{sql}");
        }
        for (cmd, kind) in [
            ("get", Read),
            ("HGETALL", Read),
            ("ZRANGEBYSCORE", Read),
            ("SET", Write),
            ("hset", Write),
            ("PING", Other),
            ("EXEC", Other),
        ] {
            assert_eq!(StatementKind::of_redis(cmd), kind, "{cmd}");
        }
        let mut c = StatementCounts::default();
        c.add(Read);
        c.add(Write);
        c.add(Write);
        c += &c.clone();
        assert_eq!((c.read, c.write, c.other, c.total()), (2, 4, 0, 6));
    }
}
