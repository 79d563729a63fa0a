//! The vocabulary every layer shares: an operation as a target receives it ([`Op`],
//! [`NativeOp`]), what it did ([`Outcome`]), and how it failed ([`OpError`], [`ErrorClass`],
//! counted in [`ErrorCounts`]).
//!
//! This is the bottom layer: it imports nothing from the crate.

use std::ops::{AddAssign, Index, IndexMut};

use serde::{Deserialize, Serialize};

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

/// The families of native operations; a target runs some of them ([`NativeOp::family`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Sql,
    Redis,
    Ldap,
    Http,
    /// `record.*`: YCSB's record operations, which each store that holds records (SQL,
    /// Redis, files) maps onto its own layout.
    Record,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Sql,
        Family::Redis,
        Family::Ldap,
        Family::Http,
        Family::Record,
    ];

    /// Its name as users write it: "sql", "redis", "ldap", "http" or "record".
    pub fn name(self) -> &'static str {
        match self {
            Family::Sql => "sql",
            Family::Redis => "redis",
            Family::Ldap => "ldap",
            Family::Http => "http",
            Family::Record => "record",
        }
    }
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

/// LDAP search scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Base,
    One,
    Sub,
}

/// An operation native to one family of systems, generic over its argument slots `A`: the
/// workload compiles `NativeOp<Template>`, and a target receives `NativeOp<ValueKind>`, the
/// same shape with each argument's kind, beside the rendered arguments (see [`Op::Native`]).
#[derive(Debug, Clone, PartialEq)]
pub enum NativeOp<A> {
    /// `id` numbers the workload's statements, so sessions can cache prepared statements.
    Sql {
        id: usize,
        query: String,
        params: Vec<A>,
    },
    Redis {
        args: Vec<A>,
    },
    LdapSearch {
        base: A,
        scope: Scope,
        filter: A,
        attrs: Vec<String>,
    },
    LdapBind {
        dn: A,
        password: A,
    },
    LdapAdd {
        dn: A,
        attrs: Vec<(String, Vec<A>)>,
    },
    LdapModify {
        dn: A,
        replace: Vec<(String, Vec<A>)>,
    },
    LdapDelete {
        dn: A,
    },
    Http {
        method: String,
        path: A,
        headers: Vec<(String, A)>,
        body: Option<A>,
        expect: Option<u16>,
    },
    /// YCSB's `insert`: a new record, `values` its fields in order (field0, field1, ...).
    RecordInsert {
        key: A,
        values: Vec<A>,
    },
    /// YCSB's `read`: every field, or the one field numbered `field`.
    RecordRead {
        key: A,
        field: Option<A>,
    },
    /// YCSB's `update`: every field (`values` holds one per field), or the one field
    /// numbered `field` (`values` holds one).
    RecordUpdate {
        key: A,
        field: Option<A>,
        values: Vec<A>,
    },
    /// YCSB's `scan`: `count` records from `key` on, in the store's key order; every field
    /// or the one numbered `field`.
    RecordScan {
        key: A,
        count: A,
        field: Option<A>,
    },
    /// YCSB's `delete`.
    RecordDelete {
        key: A,
    },
}

/// The table (SQL), hash prefix (Redis) or folder (files) that holds the records of the
/// `record.*` operations: loadrig's name for YCSB's `usertable`.
pub const RECORD_TABLE: &str = "loadrig_usertable";

/// A record's fields as the `record.*` operations and `[records]` lay them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLayout {
    /// YCSB's `fieldcount`: fields `field0` .. `field{fields-1}`.
    pub fields: usize,
}

impl<A> NativeOp<A> {
    /// The family of systems that run it.
    pub fn family(&self) -> Family {
        match self {
            NativeOp::Sql { .. } => Family::Sql,
            NativeOp::Redis { .. } => Family::Redis,
            NativeOp::LdapSearch { .. }
            | NativeOp::LdapBind { .. }
            | NativeOp::LdapAdd { .. }
            | NativeOp::LdapModify { .. }
            | NativeOp::LdapDelete { .. } => Family::Ldap,
            NativeOp::Http { .. } => Family::Http,
            NativeOp::RecordInsert { .. }
            | NativeOp::RecordRead { .. }
            | NativeOp::RecordUpdate { .. }
            | NativeOp::RecordScan { .. }
            | NativeOp::RecordDelete { .. } => Family::Record,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            NativeOp::Sql { .. } => "sql",
            NativeOp::Redis { .. } => "redis",
            NativeOp::LdapSearch { .. } => "ldap.search",
            NativeOp::LdapBind { .. } => "ldap.bind",
            NativeOp::LdapAdd { .. } => "ldap.add",
            NativeOp::LdapModify { .. } => "ldap.modify",
            NativeOp::LdapDelete { .. } => "ldap.delete",
            NativeOp::Http { .. } => "http",
            NativeOp::RecordInsert { .. } => "record.insert",
            NativeOp::RecordRead { .. } => "record.read",
            NativeOp::RecordUpdate { .. } => "record.update",
            NativeOp::RecordScan { .. } => "record.scan",
            NativeOp::RecordDelete { .. } => "record.delete",
        }
    }

    /// The same operation with every argument replaced by `f` of it, `f` called in the
    /// order the rendered arguments are handed to a target: SQL parameters and Redis
    /// arguments as written; search base, filter; bind DN, password; add or modify DN, then
    /// each attribute's values; delete DN; HTTP path, header values, body; a record's key,
    /// then (scan) the count, then the field number if one, then the values.
    pub fn map_args<B>(self, mut f: impl FnMut(A) -> B) -> NativeOp<B> {
        match self {
            NativeOp::Sql { id, query, params } => NativeOp::Sql {
                id,
                query,
                params: params.into_iter().map(f).collect(),
            },
            NativeOp::Redis { args } => NativeOp::Redis {
                args: args.into_iter().map(f).collect(),
            },
            NativeOp::LdapSearch {
                base,
                scope,
                filter,
                attrs,
            } => {
                let base = f(base);
                NativeOp::LdapSearch {
                    base,
                    scope,
                    filter: f(filter),
                    attrs,
                }
            }
            NativeOp::LdapBind { dn, password } => {
                let dn = f(dn);
                NativeOp::LdapBind {
                    dn,
                    password: f(password),
                }
            }
            NativeOp::LdapAdd { dn, attrs } => {
                let dn = f(dn);
                NativeOp::LdapAdd {
                    dn,
                    attrs: map_values(attrs, &mut f),
                }
            }
            NativeOp::LdapModify { dn, replace } => {
                let dn = f(dn);
                NativeOp::LdapModify {
                    dn,
                    replace: map_values(replace, &mut f),
                }
            }
            NativeOp::LdapDelete { dn } => NativeOp::LdapDelete { dn: f(dn) },
            NativeOp::Http {
                method,
                path,
                headers,
                body,
                expect,
            } => {
                let path = f(path);
                let headers = headers.into_iter().map(|(k, v)| (k, f(v))).collect();
                NativeOp::Http {
                    method,
                    path,
                    headers,
                    body: body.map(f),
                    expect,
                }
            }
            NativeOp::RecordInsert { key, values } => {
                let key = f(key);
                NativeOp::RecordInsert {
                    key,
                    values: values.into_iter().map(f).collect(),
                }
            }
            NativeOp::RecordRead { key, field } => {
                let key = f(key);
                NativeOp::RecordRead {
                    key,
                    field: field.map(f),
                }
            }
            NativeOp::RecordUpdate { key, field, values } => {
                let key = f(key);
                let field = field.map(&mut f);
                NativeOp::RecordUpdate {
                    key,
                    field,
                    values: values.into_iter().map(f).collect(),
                }
            }
            NativeOp::RecordScan { key, count, field } => {
                let key = f(key);
                let count = f(count);
                NativeOp::RecordScan {
                    key,
                    count,
                    field: field.map(f),
                }
            }
            NativeOp::RecordDelete { key } => NativeOp::RecordDelete { key: f(key) },
        }
    }
}

/// An LDAP entry's attribute values, mapped in order.
fn map_values<A, B>(
    attrs: Vec<(String, Vec<A>)>,
    f: &mut impl FnMut(A) -> B,
) -> Vec<(String, Vec<B>)> {
    attrs
        .into_iter()
        .map(|(name, v)| (name, v.into_iter().map(&mut *f).collect()))
        .collect()
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
    fn families_have_their_names() {
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["sql", "redis", "ldap", "http", "record"]);
    }

    #[test]
    fn native_ops_know_their_family() {
        let search = NativeOp::LdapSearch {
            base: (),
            scope: Scope::Sub,
            filter: (),
            attrs: Vec::new(),
        };
        assert_eq!(
            (search.family(), search.label()),
            (Family::Ldap, "ldap.search")
        );
        let redis = NativeOp::Redis { args: vec![(); 2] };
        assert_eq!((redis.family(), redis.label()), (Family::Redis, "redis"));
    }

    /// The numbers of the arguments `map_args` visits, in visiting order.
    fn visit_order(op: NativeOp<u32>) -> Vec<u32> {
        let mut seen = Vec::new();
        op.map_args(|a| seen.push(a));
        seen
    }

    #[test]
    fn map_args_visits_arguments_in_the_documented_order() {
        let add = NativeOp::LdapAdd {
            dn: 0,
            attrs: vec![("cn".into(), vec![1, 2]), ("sn".into(), vec![3])],
        };
        assert_eq!(visit_order(add), [0, 1, 2, 3]);
        let search = NativeOp::LdapSearch {
            base: 0,
            scope: Scope::One,
            filter: 1,
            attrs: vec!["cn".into()],
        };
        assert_eq!(visit_order(search), [0, 1]);
        let http = NativeOp::Http {
            method: "POST".into(),
            path: 0,
            headers: vec![("a".into(), 1), ("b".into(), 2)],
            body: Some(3),
            expect: None,
        };
        assert_eq!(visit_order(http.clone()), [0, 1, 2, 3]);
        // The shape survives the mapping.
        let kinds = http.map_args(|_| ValueKind::Bytes);
        assert_eq!(
            kinds,
            NativeOp::Http {
                method: "POST".into(),
                path: ValueKind::Bytes,
                headers: vec![
                    ("a".into(), ValueKind::Bytes),
                    ("b".into(), ValueKind::Bytes)
                ],
                body: Some(ValueKind::Bytes),
                expect: None,
            }
        );
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
