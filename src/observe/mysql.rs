//! MySQL and MariaDB, on the observer's own connection (mysql_async): `SHOW GLOBAL STATUS`,
//! and when `performance_schema` is on and readable, statement digests, wait summaries and
//! the observer's own statements' time (by its thread).
//!
//! Every performance_schema statement of the observer names the alias `loadrig_observer`,
//! which digests keep, so its own digests are left out of the statements; `SHOW GLOBAL
//! STATUS` has no place for an alias, so the observer's own calls are taken off its digest.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use super::lock_waits::{LockTally, LockWaitSamples};
use super::notes::Notes;
use super::reading::{number, Reading, StatementTotal};
use super::record::{QueryValue, Role};
use super::UserQuery;
use crate::error::InputError;
use crate::targets::endpoint::Endpoint;
use crate::targets::mysql::ssl_opts;
use crate::targets::tls::Tls;
use crate::targets::TargetUrl;

/// `SHOW GLOBAL STATUS` variables recorded as counters (deltas), besides every `Handler_*`.
const COUNTERS: &[&str] = &[
    "Questions",
    "Queries",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_commit",
    "Com_rollback",
    "Connections",
    "Aborted_connects",
    "Bytes_received",
    "Bytes_sent",
    "Slow_queries",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Innodb_deadlocks",
    "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_wait_free",
    "Innodb_data_reads",
    "Innodb_data_writes",
    "Innodb_data_fsyncs",
    "Innodb_os_log_fsyncs",
    "Innodb_log_writes",
    "Innodb_log_waits",
    "Innodb_rows_read",
    "Innodb_rows_inserted",
    "Innodb_rows_updated",
    "Innodb_rows_deleted",
    "Table_locks_immediate",
    "Table_locks_waited",
    "Created_tmp_tables",
    "Created_tmp_disk_tables",
    "Select_full_join",
    "Select_scan",
    "Sort_merge_passes",
];

/// ... and as gauges (values at the boundary).
const GAUGES: &[&str] = &[
    "Threads_running",
    "Threads_connected",
    "Innodb_row_lock_current_waits",
    "Innodb_buffer_pool_pages_dirty",
    "Innodb_buffer_pool_pages_free",
];

pub struct MysqlPlan {
    opts: Opts,
    timeout: Duration,
    pub host: String,
    pub port: u16,
}

impl MysqlPlan {
    pub fn parse(url: &TargetUrl) -> Result<MysqlPlan, InputError> {
        let mode = url.options.get("ssl-mode").map(|m| m.to_ascii_uppercase());
        let on = match mode.as_deref() {
            None | Some("DISABLED") => false,
            Some("REQUIRED" | "VERIFY_CA" | "VERIFY_IDENTITY") => true,
            Some(other) => {
                return Err(InputError::new(format!(
                    "ssl-mode={other}: expected DISABLED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
                )))
            }
        };
        let tls = Tls::from_url(url, on)?;
        let ep = Endpoint::parse(url)?;
        let timeout = Endpoint::connect_timeout(url, Duration::from_secs(5))?;
        let port = ep.port.unwrap_or(3306);
        let opts = OptsBuilder::default()
            .ip_or_hostname(ep.host.clone())
            .tcp_port(port)
            .user(ep.user.clone())
            .pass(ep.password.clone())
            .db_name((!ep.path.is_empty()).then(|| ep.path.clone()))
            .prefer_socket(false)
            .stmt_cache_size(32)
            // Every transaction of the observer's is read-only, a user's queries' included.
            .init(vec!["SET SESSION TRANSACTION READ ONLY"])
            .ssl_opts(ssl_opts(&tls));
        Ok(MysqlPlan {
            opts: opts.into(),
            timeout,
            host: ep.host,
            port,
        })
    }
}

fn message(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => format!("{} ({})", s.message, s.code),
        other => other.to_string(),
    }
}

/// performance_schema as the observer reads it.
struct Schema {
    /// The observer's own thread, for its cost.
    thread: u64,
    /// Rows of the digest table last seen from this `LAST_SEEN` on are fetched again.
    since: String,
    digests: HashMap<String, StatementTotal>,
    /// Each prepared statement's executions and time as last read, by its instance.
    prepared: HashMap<u64, (f64, f64)>,
    /// Prepared statements' executions and time, by text, summed since the first reading
    /// over every instance (which leave the table when their connection closes).
    prepared_totals: HashMap<String, StatementTotal>,
    own_first_ms: Option<f64>,
    own_last_ms: f64,
}

pub struct MysqlSource {
    role: Role,
    conn: Conn,
    schema: Option<Schema>,
    /// `SHOW GLOBAL STATUS` calls so far, taken off its digest.
    status_calls: f64,
    deadlocks_noted: bool,
    /// Whether InnoDB's transactions can be read (PROCESS) for the lock waits by statement.
    samples_locks: bool,
    locks: LockTally,
    pub queries_sent: u64,
    /// The server's process as its pid file says, when that file is readable here.
    pub server_pid: Option<u32>,
    /// When `INNODB_TRX` was last read.
    last_lock_sample: Option<Instant>,
}

/// The shortest time between two readings of `INNODB_TRX`. InnoDB serves its
/// information_schema transaction tables from a copy it refreshes only when nobody has read
/// it for 100 ms: a reader every 100 ms or less (the default 10 session samples a second,
/// or two observers at 5) would read the same stale copy for as long as it keeps reading,
/// and see no lock wait that began after it started. Read at most every 150 ms, every read
/// finds a fresh copy (5 a second at the default rate).
const LOCK_SAMPLE_GAP: Duration = Duration::from_millis(150);

/// The statement of every transaction waiting for a row lock (InnoDB's own view).
const LOCK_WAITS: &str = "SELECT trx_query FROM information_schema.INNODB_TRX AS loadrig_observer \
     WHERE trx_state = 'LOCK WAIT'";

impl MysqlSource {
    pub async fn connect(
        plan: &MysqlPlan,
        role: Role,
        notes: &mut Notes,
    ) -> Result<MysqlSource, String> {
        let mut conn = tokio::time::timeout(plan.timeout, Conn::new(plan.opts.clone()))
            .await
            .map_err(|_| format!("no answer within {:?}", plan.timeout))?
            .map_err(|e| message(&e))?;
        let first: Option<(i64, Option<String>)> = conn
            .query_first("SELECT @@performance_schema, @@pid_file")
            .await
            .map_err(|e| message(&e))?;
        let on = first.as_ref().map(|f| f.0);
        // The server's own pid file, where the observer finds its process at once when it
        // runs on this machine (readable or not, the search goes on without it).
        let server_pid = first
            .and_then(|f| f.1)
            .and_then(|file| std::fs::read_to_string(file).ok())
            .and_then(|text| text.trim().parse().ok());
        let mut source = MysqlSource {
            role,
            conn,
            schema: None,
            status_calls: 0.0,
            deadlocks_noted: false,
            samples_locks: false,
            locks: LockTally::default(),
            queries_sent: 3,
            server_pid,
            last_lock_sample: None,
        };
        match source.conn.query::<Option<String>, _>(LOCK_WAITS).await {
            Ok(_) => {
                source.samples_locks = true;
                source.last_lock_sample = Some(Instant::now());
            }
            Err(e) => notes.add(
                role,
                "lock waits by statement",
                format!("information_schema.INNODB_TRX: {}", message(&e)),
                "GRANT PROCESS ON *.* TO the observer's user (it lets the user see every session's statement)",
            ),
        }
        let enable = "performance_schema = ON in the server's configuration (a restart), and SELECT ON performance_schema.* for the observer's user";
        if on != Some(1) {
            notes.add(
                role,
                "performance_schema",
                "performance_schema is off: no statement digests, wait summaries or the observer's own server time",
                enable,
            );
            return Ok(source);
        }
        source.queries_sent += 1;
        let thread: Result<Option<u64>, _> = source
            .conn
            .query_first(
                "SELECT THREAD_ID FROM performance_schema.threads AS loadrig_observer WHERE PROCESSLIST_ID = CONNECTION_ID()",
            )
            .await;
        match thread {
            Ok(Some(thread)) => {
                source.schema = Some(Schema {
                    thread,
                    since: "1970-01-01 00:00:00".into(),
                    digests: HashMap::new(),
                    prepared: HashMap::new(),
                    prepared_totals: HashMap::new(),
                    own_first_ms: None,
                    own_last_ms: 0.0,
                })
            }
            Ok(None) => notes.add(
                role,
                "performance_schema",
                "the observer's thread is not instrumented",
                enable,
            ),
            Err(e) => notes.add(role, "performance_schema", message(&e), enable),
        }
        Ok(source)
    }

    /// Whether lock waits are sampled between boundaries.
    pub fn samples_sessions(&self) -> bool {
        self.samples_locks
    }

    /// One sample of the transactions waiting for a row lock, by their statement.
    pub async fn sample_sessions(&mut self) -> Result<(), String> {
        if !self.samples_locks
            || self
                .last_lock_sample
                .is_some_and(|t| t.elapsed() < LOCK_SAMPLE_GAP)
        {
            return Ok(());
        }
        self.last_lock_sample = Some(Instant::now());
        self.queries_sent += 1;
        let texts: Vec<Option<String>> =
            self.conn.query(LOCK_WAITS).await.map_err(|e| message(&e))?;
        self.locks.sample(
            texts
                .iter()
                .flatten()
                .map(String::as_str)
                .filter(|t| !t.contains("loadrig_observer")),
        );
        Ok(())
    }

    /// The lock waits by statement seen since the last call.
    pub fn take_lock_waits(&mut self) -> Option<LockWaitSamples> {
        self.locks.take("INNODB_TRX")
    }

    /// Global status, and from performance_schema the digests, waits and own time.
    pub async fn read(&mut self, notes: &mut Notes) -> Result<Reading, String> {
        let mut r = Reading::default();
        self.queries_sent += 1;
        self.status_calls += 1.0;
        let rows: Vec<(String, String)> = self
            .conn
            .query("SHOW GLOBAL STATUS")
            .await
            .map_err(|e| message(&e))?;
        for (name, value) in rows {
            let Some(v) = number(&value) else { continue };
            if GAUGES.contains(&name.as_str()) {
                r.gauges.insert(format!("global_status.{name}"), v);
            } else if COUNTERS.contains(&name.as_str()) || name.starts_with("Handler_") {
                r.counters.insert(format!("global_status.{name}"), v);
            }
        }
        if !r.counters.contains_key("global_status.Innodb_deadlocks") && !self.deadlocks_noted {
            self.deadlocks_noted = true;
            notes.add(
                self.role,
                "deadlocks",
                "this server's SHOW GLOBAL STATUS has no Innodb_deadlocks (MySQL counts them in information_schema.INNODB_METRICS, which needs PROCESS)",
                "",
            );
        }
        if self.schema.is_some() {
            self.read_schema(&mut r).await?;
        }
        Ok(r)
    }

    async fn read_schema(&mut self, r: &mut Reading) -> Result<(), String> {
        let Some(s) = &mut self.schema else {
            return Ok(());
        };
        self.queries_sent += 4;
        type Digest = (
            Option<String>,
            Option<String>,
            Option<String>,
            u64,
            u64,
            String,
        );
        let rows: Vec<Digest> = self
            .conn
            .exec(
                "SELECT SCHEMA_NAME, DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, \
                 DATE_FORMAT(LAST_SEEN, '%Y-%m-%d %H:%i:%s.%f') \
                 FROM performance_schema.events_statements_summary_by_digest AS loadrig_observer \
                 WHERE LAST_SEEN >= TIMESTAMP(?) - INTERVAL 1 SECOND",
                (s.since.clone(),),
            )
            .await
            .map_err(|e| message(&e))?;
        for (schema, digest, text, calls, picos, seen) in rows {
            let text = text.unwrap_or_default();
            if text.contains("loadrig_observer") {
                continue;
            }
            if seen > s.since {
                s.since = seen;
            }
            let id = format!(
                "{}/{}",
                schema.unwrap_or_default(),
                digest.unwrap_or_default()
            );
            let mut calls = calls as f64;
            if text.trim() == "SHOW GLOBAL STATUS" {
                calls = (calls - self.status_calls).max(0.0);
            }
            s.digests.insert(
                id,
                StatementTotal {
                    text,
                    calls,
                    time_ms: picos as f64 / 1e9,
                },
            );
        }
        r.statements = s.digests.clone();
        // Statements executed as prepared statements (the binary protocol, as loadrig's
        // client sends them) are not in the digest table: each prepared statement's own
        // figures, added up by text.
        type Prepared = (u64, Option<String>, u64, u64);
        let rows: Vec<Prepared> = self
            .conn
            .query(
                "SELECT OBJECT_INSTANCE_BEGIN, SQL_TEXT, COUNT_EXECUTE, SUM_TIMER_EXECUTE \
                 FROM performance_schema.prepared_statements_instances AS loadrig_observer",
            )
            .await
            .map_err(|e| message(&e))?;
        let mut now = HashMap::with_capacity(rows.len());
        for (instance, text, calls, picos) in rows {
            let text = text.unwrap_or_default();
            if text.contains("loadrig_observer") {
                continue;
            }
            let (calls, ms) = (calls as f64, picos as f64 / 1e9);
            let (c0, t0) = s.prepared.get(&instance).copied().unwrap_or((0.0, 0.0));
            // An instance whose figures fell was deallocated and its address used again.
            let (dc, dt) = if calls >= c0 {
                (calls - c0, ms - t0)
            } else {
                (calls, ms)
            };
            let total = s
                .prepared_totals
                .entry(text.clone())
                .or_insert_with(|| StatementTotal {
                    text,
                    calls: 0.0,
                    time_ms: 0.0,
                });
            total.calls += dc;
            total.time_ms += dt.max(0.0);
            now.insert(instance, (calls, ms));
        }
        s.prepared = now;
        for (text, total) in &s.prepared_totals {
            r.statements
                .insert(format!("prepared/{:016x}", text_hash(text)), total.clone());
        }
        let waits: Vec<(String, u64, u64)> = self
            .conn
            .query(
                "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT \
                 FROM performance_schema.events_waits_summary_global_by_event_name AS loadrig_observer \
                 WHERE COUNT_STAR > 0",
            )
            .await
            .map_err(|e| message(&e))?;
        for (event, count, picos) in waits {
            r.timed_waits
                .insert(event, (count as f64, picos as f64 / 1e9));
        }
        // The observer's own statements' time (by its thread) and every statement's,
        // prepared statements' executions included (MariaDB keeps no figures of their own
        // for those), in one round trip.
        type Times = (Option<f64>, Option<f64>, Option<f64>);
        let times: Option<Times> = self
            .conn
            .exec_first(
                "SELECT (SELECT SUM(SUM_TIMER_WAIT) + 0e0 \
                 FROM performance_schema.events_statements_summary_by_thread_by_event_name AS loadrig_observer \
                 WHERE THREAD_ID = ?), SUM(COUNT_STAR) + 0e0, SUM(SUM_TIMER_WAIT) + 0e0 \
                 FROM performance_schema.events_statements_summary_global_by_event_name \
                 WHERE EVENT_NAME LIKE 'statement/%'",
                (s.thread,),
            )
            .await
            .map_err(|e| message(&e))?;
        let (own, calls, picos) = times.unwrap_or_default();
        let own_ms = own.unwrap_or(0.0) / 1e9;
        s.own_first_ms.get_or_insert(own_ms);
        s.own_last_ms = own_ms;
        // The observer's own taken off.
        if let (Some(calls), Some(picos)) = (calls, picos) {
            r.counters.insert(
                super::sum::ALL_STATEMENT_TIME.into(),
                (picos / 1e9 - own_ms).max(0.0),
            );
            r.counters
                .insert("performance_schema.statements".into(), calls);
        }
        Ok(())
    }

    /// The server time of the observer's own statements since its first reading.
    pub fn own_time_ms(&self) -> Option<f64> {
        let s = self.schema.as_ref()?;
        Some(s.own_last_ms - s.own_first_ms?)
    }

    /// A user's query in a (read-only) transaction of its own: the first column of its
    /// first row.
    pub async fn user_query(&mut self, q: &UserQuery) -> Result<QueryValue, String> {
        self.queries_sent += 1;
        // A prepared statement: one statement only, whatever the text holds; read-only, as
        // every transaction of the observer's session.
        let row: Option<mysql_async::Row> = self
            .conn
            .exec_first(q.sql.as_str(), ())
            .await
            .map_err(|e| message(&e))?;
        let text = row
            .and_then(|row| row.as_ref(0).cloned())
            .and_then(|v| match v {
                mysql_async::Value::NULL => None,
                mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                mysql_async::Value::Int(i) => Some(i.to_string()),
                mysql_async::Value::UInt(u) => Some(u.to_string()),
                mysql_async::Value::Float(f) => Some(f.to_string()),
                mysql_async::Value::Double(f) => Some(f.to_string()),
                other => Some(other.as_sql(true)),
            });
        Ok(QueryValue::from_text(&q.name, text))
    }
}

/// A stable key for a prepared statement's text (FNV-1a).
fn text_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
