//! Target adapters: the systems loadrig puts load on.
//!
//! An adapter only connects and executes; the engine owns timing, pacing and statistics.
//! Every target implements the `kv` operations so backends compare on the same work, and
//! keeps what it creates inside its own namespace (`loadrig_` tables, a `loadrig_kv` folder).

pub mod attachment;
pub mod dbm;
pub mod endpoint;
pub mod fs;
pub mod grpc;
pub mod http;
pub mod ldap;
pub mod memcached;
pub mod mysql;
pub mod noop;
pub mod ordered;
pub mod peer;
pub mod pipelined;
pub mod postgres;
pub mod readbuf;
pub mod redis;
pub mod sleep;
pub mod socket;
pub mod sql;
pub mod sqlite;
pub mod tls;

use std::collections::BTreeMap;
use std::future::Future;

pub use crate::error::redact;
use crate::error::InputError;
use crate::vocab::{
    ErrorClass, Family, NativeOp, Op, OpError, Outcome, RecordLayout, RecordOp, RunStep, ValueKind,
};

/// A configured system under test. Shared by all clients; each client opens its own session.
pub trait Target: Send + Sync + 'static {
    type Session: Session;
    /// Build the target from its URL; options may also come from workload parameters
    /// of the same name (see [`TargetUrl::option`]). Checks only: nothing connects yet.
    fn from_url(url: &TargetUrl, params: &Params) -> Result<Self, InputError>
    where
        Self: Sized;
    /// The native operation families it runs.
    fn families(&self) -> &'static [Family] {
        &[]
    }
    /// A native operation of one of its families that it still cannot run (a scan where
    /// records have no order); refused before anything runs.
    fn refuses(&self, op: &NativeOp<ValueKind>) -> bool {
        let _ = op;
        false
    }
    /// Blocking targets (SQLite, files) get one OS thread per client and never run
    /// on an async executor thread.
    fn blocking(&self) -> bool;
    /// File descriptors one client session holds open (a socket; a database file and its
    /// journal), so that a run finds a too-low `ulimit -n` before it connects.
    fn files_per_client(&self) -> usize {
        1
    }
    /// Open one client session, outside the timed region.
    fn connect(&self) -> impl Future<Output = Result<Self::Session, OpError>>;
    /// Why its connections cannot carry several operations at once (`--pipeline P` above 1),
    /// or `None` when they can: then [`Target::connect_shared`] must open shared handles.
    /// Checked before anything connects; a target that names a reason may still pipeline
    /// through the batch driver ([`Target::batch_codec`]) when the run can use it.
    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some("its sessions answer one operation at a time")
    }
    /// Open one connection for `n` client streams (`--pipeline n`): `n` sessions, each with
    /// its own state, whose operations may be in flight on the connection together. Only
    /// called on targets whose [`Target::cannot_pipeline`] is `None`.
    fn connect_shared(
        &self,
        n: usize,
    ) -> impl Future<Output = Result<Vec<Self::Session>, OpError>> {
        async move {
            Err(OpError::new(
                ErrorClass::Other,
                format!("this target cannot share a connection between {n} streams"),
            ))
        }
    }
    /// The protocol the engine's batch driver can speak on its connections (`--pipeline`,
    /// plain operations, closed or open loop), or `None`: then every stream runs on a shared
    /// session.
    fn batch_codec(&self) -> Option<&'static pipelined::Codec> {
        None
    }
    /// The option (as the user wrote it) that asks for the batch driver, which a run then
    /// must be able to use: it exits 2 before anything connects when it cannot.
    fn needs_batch_driver(&self) -> Option<&'static str> {
        None
    }
    /// Open one connection for the batch driver; only called when [`Target::batch_codec`]
    /// is `Some`.
    fn connect_batched(&self) -> impl Future<Output = Result<pipelined::Batched, OpError>> {
        async {
            Err(OpError::new(
                ErrorClass::Other,
                "this target has no batched connections",
            ))
        }
    }
    /// Every connection's TCP, TLS and authentication times so far, for targets that
    /// tell them apart (see [`crate::stats::connect_phases`]).
    fn connect_phases(&self) -> Option<crate::stats::connect_phases::ConnectPhases> {
        None
    }
    /// The run's seed (`--seed`, else one from the clock), told once before any session
    /// connects: a simulated target draws what varies from run to run from it.
    fn seed_run(&self, seed: u64) {
        let _ = seed;
    }
}

/// One client's connection, file handle or simulated server.
pub trait Session {
    /// Create what the workload needs inside loadrig's namespace (idempotent).
    fn setup(&mut self) -> impl Future<Output = Result<(), OpError>> {
        async { Ok(()) }
    }
    /// The server's version, recorded in the result.
    fn server_version(&mut self) -> impl Future<Output = Option<String>> {
        async { None }
    }
    /// Execute one operation: no timing, sleeping or retrying in here.
    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>>;
    /// Authenticate again on this connection (LDAP bind, Redis AUTH, MySQL change user).
    fn authenticate(&mut self) -> impl Future<Output = Result<Outcome, OpError>> {
        async {
            Err(OpError::new(
                ErrorClass::Other,
                "this target has no separate authentication step",
            ))
        }
    }
    /// After a run's setup or data load, before anything is measured: leave what was just
    /// written as a server keeps it settled (PostgreSQL vacuums and analyzes loadrig's
    /// tables, as `pgbench -i` does, so autovacuum's first pass over the fresh rows does not
    /// land in the measured run); returns the tables settled. A workload with `settle =
    /// false` skips it, as the sysbench built-ins do: `sysbench prepare` analyzes nothing.
    fn settle(&mut self) -> impl Future<Output = Result<u64, OpError>> {
        async { Ok(0) }
    }
    /// Carry out a `before_run` step ([`RunStep`]) before the measured run; returns whether
    /// the server had anything to do. Only SQL targets have tables: a workload with steps
    /// is refused on the others before anything runs.
    fn before_run(&mut self, step: &RunStep) -> impl Future<Output = Result<bool, OpError>> {
        let _ = step;
        async {
            Err(OpError::new(
                ErrorClass::Other,
                "this target has no tables to vacuum or empty",
            ))
        }
    }
    /// Remove everything loadrig created (its namespace) and nothing else; returns the
    /// number of objects removed (tables, keys, entries, files).
    fn cleanup(&mut self) -> impl Future<Output = Result<u64, OpError>> {
        async { Ok(0) }
    }
    /// Make the store of `record.*` operations empty, for records of `layout` (the table,
    /// folder or index; SQL targets drop and create `loadrig_usertable`). Runs before a
    /// `[data]` load of a workload with `[records]`.
    fn create_records(
        &mut self,
        layout: RecordLayout,
    ) -> impl Future<Output = Result<(), OpError>> {
        let _ = layout;
        async { Ok(()) }
    }
    /// Store a batch of whole records (key, then each field's value) before the measured
    /// run: one `record.insert` each, unless the target has a faster way.
    fn load_records(
        &mut self,
        records: &[(String, Vec<Vec<u8>>)],
    ) -> impl Future<Output = Result<(), OpError>> {
        insert_records(self, records)
    }
    /// Store a batch of records before the measured run, the fastest way the system offers.
    fn load(&mut self, records: &[(String, Vec<u8>)]) -> impl Future<Output = Result<(), OpError>> {
        async move {
            for (key, value) in records {
                self.execute(&Op::Put { key, value }).await?;
            }
            Ok(())
        }
    }
}

/// One `record.insert` per record, in order.
pub async fn insert_records<S: Session + ?Sized>(
    session: &mut S,
    records: &[(String, Vec<Vec<u8>>)],
) -> Result<(), OpError> {
    let mut args: Vec<Vec<u8>> = Vec::new();
    for (key, values) in records {
        let op = NativeOp::Record(RecordOp::Insert {
            key: ValueKind::Bytes,
            values: vec![ValueKind::Bytes; values.len()],
        });
        args.clear();
        args.push(key.as_bytes().to_vec());
        args.extend(values.iter().cloned());
        session
            .execute(&Op::Native {
                op: &op,
                args: &args,
                capture: false,
            })
            .await?;
    }
    Ok(())
}

/// Workload parameters, which may also carry target options.
pub type Params = BTreeMap<String, toml::Value>;

/// Evaluate `$body` with `$T` naming the target type for the URL scheme `$scheme`: the one
/// place that maps schemes to types, shared by `run`, `sweep` and `cleanup`, so the engine
/// stays monomorphised per target. An unknown scheme is an input error.
macro_rules! with_target_type {
    ($scheme:expr, $T:ident => $body:expr) => {
        match $scheme {
            "noop" => {
                type $T = $crate::targets::noop::Noop;
                $body
            }
            "sleep" => {
                type $T = $crate::targets::sleep::Sleep;
                $body
            }
            "sqlite" => {
                type $T = $crate::targets::sqlite::Sqlite;
                $body
            }
            "fs" => {
                type $T = $crate::targets::fs::Fs;
                $body
            }
            "dbm" => {
                type $T = $crate::targets::dbm::Dbm;
                $body
            }
            "postgres" | "postgresql" => {
                type $T = $crate::targets::postgres::Postgres;
                $body
            }
            "mysql" | "mariadb" => {
                type $T = $crate::targets::mysql::Mysql;
                $body
            }
            "redis" | "rediss" => {
                type $T = $crate::targets::redis::Redis;
                $body
            }
            "http" | "https" => {
                type $T = $crate::targets::http::Http;
                $body
            }
            "ldap" | "ldaps" => {
                type $T = $crate::targets::ldap::Ldap;
                $body
            }
            "grpc" | "grpcs" => {
                type $T = $crate::targets::grpc::Grpc;
                $body
            }
            "memcached" | "memcacheds" => {
                type $T = $crate::targets::memcached::Memcached;
                $body
            }
            other => Err($crate::targets::unknown_scheme(other).into()),
        }
    };
}

pub(crate) use with_target_type;

/// The error for a URL scheme no target answers to.
pub fn unknown_scheme(scheme: &str) -> InputError {
    InputError::new(format!("unknown target scheme '{scheme}://'")).help(format!(
        "known targets: {}",
        SCHEMES
            .iter()
            .map(|(s, _)| s.split("://").next().unwrap_or(s))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// A target address split into scheme, location and query options.
#[derive(Debug, Clone)]
pub struct TargetUrl {
    pub scheme: String,
    pub location: String,
    pub options: BTreeMap<String, String>,
}

impl TargetUrl {
    pub fn parse(url: &str) -> Result<TargetUrl, InputError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(InputError::new(format!(
                "target '{}' is not a URL: expected SCHEME://LOCATION, for example sqlite://./bench.db",
                redact(url)
            )));
        };
        let (location, query) = match rest.split_once('?') {
            Some((l, q)) => (l, Some(q)),
            None => (rest, None),
        };
        let mut options = BTreeMap::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            options.insert(k.to_string(), v.to_string());
        }
        Ok(TargetUrl {
            scheme: scheme.to_string(),
            location: location.to_string(),
            options,
        })
    }

    /// An option from the URL query, or else from a workload parameter of the same name.
    /// A workload parameter may read the environment (`password = "${LDAP_PW}"`); it is
    /// expanded here, so the secret never enters the recorded parameters.
    pub fn option(&self, name: &str, params: &BTreeMap<String, toml::Value>) -> Option<String> {
        if let Some(v) = self.options.get(name) {
            return Some(v.clone());
        }
        params.get(name).map(|v| match v {
            toml::Value::String(s) => expand_env(s).unwrap_or_else(|_| s.clone()),
            other => other.to_string(),
        })
    }

    /// Fail on URL query options the target does not know.
    pub fn check_options(&self, known: &[&str]) -> Result<(), InputError> {
        for key in self.options.keys() {
            if !known.contains(&key.as_str()) {
                return Err(InputError::new(format!(
                    "unknown option '{key}' for {}:// targets; known options: {}",
                    self.scheme,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }
}

/// The schemes loadrig knows, with what each is for (`loadrig list`).
pub const SCHEMES: &[(&str, &str)] = &[
    ("noop://", "does nothing: measures the harness itself"),
    (
        "sleep://?latency=DIST&stall=D@T[/P]&usl=S,K&growth=KIND:C&capacity=R",
        "simulated server with a known latency distribution: the ground truth for tests",
    ),
    (
        "sqlite://PATH[?sync=off|normal|full&isolation=serializable]",
        "embedded SQLite database (WAL), table loadrig_kv",
    ),
    (
        "fs://DIR[?shards=N&sync=none|each|batch]",
        "one file per key under DIR/loadrig_kv, flat or in N shard folders",
    ),
    (
        "dbm://PATH[?reopen=each|never&sync=each|none]",
        "embedded key-value file (redb), table loadrig_kv; reopen=each opens it per operation",
    ),
    (
        "postgres://USER:PASSWORD@HOST:PORT/DB[?isolation=LEVEL&sslmode=verify-full&ca=PATH&client=tokio-postgres]",
        "PostgreSQL (its own extended-protocol client, or tokio-postgres), table loadrig_kv, native sql",
    ),
    (
        "mysql://USER:PASSWORD@HOST:PORT/DB[?isolation=LEVEL&ssl-mode=VERIFY_IDENTITY&ca=PATH&client=mysql_async]",
        "MySQL or MariaDB (its own protocol client, or mysql_async), table loadrig_kv, native sql",
    ),
    (
        "redis://[:PASSWORD@]HOST[:PORT][/DB]",
        "Redis: keys loadrig:KEY, native command arrays, MULTI/EXEC transactions",
    ),
    (
        "http://HOST[:PORT][/PREFIX][?kv_path=P&http=1.1|2]",
        "HTTP/1.1 keep-alive, or HTTP/2 by prior knowledge (http=2): native requests; kv as WebDAV resources under kv_path",
    ),
    (
        "ldap://HOST[:PORT]?bind_dn=&password=&base=[&starttls=true]",
        "LDAP: kv as entries under ou=loadrig,BASE; native search, bind, add, modify, delete",
    ),
    (
        "rediss://[:PASSWORD@]HOST[:PORT][/DB][?ca=PATH|insecure=true]",
        "Redis over TLS (rustls); every TLS target verifies the certificate unless insecure=true",
    ),
    (
        "https://HOST[:PORT][/PREFIX][?ca=PATH|insecure=true&http=1.1|2|auto]",
        "HTTP/1.1 or HTTP/2 (h2 by ALPN) over TLS (rustls), as http://",
    ),
    (
        "ldaps://HOST[:PORT]?bind_dn=&password=&base=[&ca=PATH|insecure=true]",
        "LDAP over TLS (rustls), as ldap://",
    ),
    (
        "grpc://HOST:PORT[?deadline=D]",
        "gRPC over HTTP/2: methods of the workload's [grpc] proto files; kv as etcd keys under loadrig/",
    ),
    (
        "grpcs://HOST:PORT[?ca=PATH|insecure=true&deadline=D]",
        "gRPC over TLS (rustls, ALPN h2), as grpc://",
    ),
    (
        "memcached://[USER:PASSWORD@]HOST[:PORT][?commands=auto|meta|classic]",
        "memcached's text protocol (meta commands from 1.6): keys loadrig:KEY, native memcached.*",
    ),
    (
        "memcacheds://[USER:PASSWORD@]HOST[:PORT][?ca=PATH|insecure=true]",
        "memcached over TLS (rustls), as memcached://",
    ),
];

/// Replace `${VAR}` with the environment variable VAR (credentials stay out of files).
pub fn expand_env(text: &str) -> Result<String, InputError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find('}') else {
            return Err(InputError::new(format!(
                "unclosed '${{' in '{}'",
                redact(text)
            )));
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = std::env::var(name).map_err(|_| {
            InputError::new(format!(
                "the target refers to ${{{name}}}, which is not set"
            ))
            .help(format!("export {name}=... first"))
        })?;
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Bound a connection attempt, naming the target (already redacted) when it takes too long.
pub async fn connect_within<S>(
    limit: std::time::Duration,
    shown: &str,
    connecting: impl Future<Output = Result<S, OpError>>,
) -> Result<S, OpError> {
    match tokio::time::timeout(limit, connecting).await {
        Ok(result) => result,
        Err(_) => Err(OpError::new(
            ErrorClass::Connect,
            format!("no answer from {shown} within {} s", limit.as_secs()),
        )),
    }
}

/// The error for an operation a target cannot run (checked before the run, so rare).
pub fn unsupported(op: &Op<'_>, target: &str) -> OpError {
    let what = match op {
        Op::Native { op, .. } => op.label(),
        Op::Begin | Op::Commit | Op::Rollback => "a transaction",
        Op::Nop | Op::Put { .. } | Op::Get { .. } | Op::Update { .. } | Op::Delete { .. } => {
            "this operation"
        }
    };
    OpError::new(
        ErrorClass::Other,
        format!("{target} targets do not run {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_userinfo_password_and_secret_options() {
        assert_eq!(
            redact("postgres://bob:hunter2@127.0.0.1:5432/db?sslmode=off&password=x"),
            "postgres://bob:***@127.0.0.1:5432/db?sslmode=off&password=***"
        );
        assert_eq!(redact("sqlite://./a.db"), "sqlite://./a.db");
        assert_eq!(redact("redis://:pw@h/0"), "redis://:***@h/0");
    }

    #[test]
    fn parses_options() {
        let u = TargetUrl::parse("fs://./s?shards=256&sync=each").unwrap();
        assert_eq!(u.scheme, "fs");
        assert_eq!(u.location, "./s");
        assert_eq!(u.options["shards"], "256");
        assert!(u.check_options(&["shards"]).is_err());
    }
}
