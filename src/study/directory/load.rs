//! Loading the people into each backend through the targets' own sessions (measured load
//! phases, not runs: a run's operations are templates, and the optimised schema's reversed
//! DN is not one), reading back which entries a search finds, and the SQL query plans.

use std::cell::Cell;
use std::path::Path;
use std::time::Instant;

use ldap3::{LdapConnAsync, Scope, SearchEntry};

use super::filter::{reversed_upper, Schema, ATTRS};
use crate::targets::{Session, Target, TargetUrl};
use crate::vocab::{ErrorClass, LdapOp, NativeOp, Op, OpError, SqlOp, ValueKind};
use crate::workload::import::ldif::{Person, PERSON_CLASSES};

/// SQL rows per transaction while loading.
const BATCH: u64 = 1000;

/// What one load phase needs: the entries (from the generator) and where they go.
pub struct Entries<'a> {
    pub count: u64,
    pub people: &'a str,
    pub seed: u64,
    /// The label of the progress lines.
    pub label: &'a str,
}

impl Entries<'_> {
    fn person(&self, i: u64) -> Person {
        Person::new(i, self.people, self.seed)
    }

    /// A progress line at every tenth of the load, with the rate so far.
    fn progress(&self, done: u64, started: Instant) {
        let tenth = (self.count / 10).max(1);
        if done.is_multiple_of(tenth) || done == self.count {
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            eprintln!(
                "  {}: {done}/{} entries, {rate:.0}/s",
                self.label, self.count
            );
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, OpError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OpError::new(ErrorClass::Other, e.to_string()))
}

fn sql_op(id: usize, query: String, params: usize) -> NativeOp<ValueKind> {
    NativeOp::Sql(SqlOp {
        id,
        query,
        params: vec![ValueKind::Bytes; params],
    })
}

/// The table and its indexes. PostgreSQL's upper-cased columns compare bytes (`COLLATE
/// "C"`), as SQLite's do, so that a prefix is a range of the index.
fn create(schema: Schema, postgres: bool) -> Vec<String> {
    let t = schema.table();
    let c = if postgres { " COLLATE \"C\"" } else { "" };
    let mut columns = vec![
        "id INTEGER PRIMARY KEY".to_string(),
        "dn TEXT NOT NULL".into(),
    ];
    let mut indexed: Vec<String> = Vec::new();
    match schema {
        Schema::Naive => {
            // back-sql's schema: plain columns, indexed, that UPPER() keeps the index from.
            for (_, col) in ATTRS {
                columns.push(format!("{col} TEXT"));
                indexed.push(col.into());
            }
            indexed.push("dn".into());
        }
        Schema::Optimised => {
            columns.push(format!("dn_ru TEXT NOT NULL{c}"));
            indexed.push("dn_ru".into());
            for (_, col) in ATTRS {
                columns.push(format!("{col} TEXT"));
                columns.push(format!("{col}_u TEXT{c}"));
                indexed.push(format!("{col}_u"));
            }
        }
    }
    let mut ddl = vec![format!("CREATE TABLE {t} ({})", columns.join(", "))];
    ddl.extend(
        indexed
            .iter()
            .map(|col| format!("CREATE INDEX {t}_{col} ON {t} ({col})")),
    );
    ddl
}

/// The insert of one person and its arguments, in column order.
fn insert(schema: Schema) -> (String, usize) {
    let mut names = vec!["id", "dn"];
    if schema == Schema::Optimised {
        names.push("dn_ru");
    }
    let mut all: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    for (_, col) in ATTRS {
        all.push(col.to_string());
        if schema == Schema::Optimised {
            all.push(format!("{col}_u"));
        }
    }
    let marks: Vec<String> = (1..=all.len()).map(|k| format!("${k}")).collect();
    let query = format!(
        "INSERT INTO {} ({}) VALUES ({})",
        schema.table(),
        all.join(", "),
        marks.join(", ")
    );
    (query, all.len())
}

fn row_args(schema: Schema, i: u64, p: &Person) -> Vec<Vec<u8>> {
    let mut args = vec![i.to_string().into_bytes(), p.dn.clone().into_bytes()];
    if schema == Schema::Optimised {
        args.push(reversed_upper(&p.dn).into_bytes());
    }
    for (attr, _) in ATTRS {
        let v = p.value(attr).unwrap_or_default();
        args.push(v.as_bytes().to_vec());
        if schema == Schema::Optimised {
            args.push(v.to_uppercase().into_bytes());
        }
    }
    args
}

/// Create the schema's table and load the people into it, `BATCH` rows a transaction, one
/// connection; then `ANALYZE` (not timed) so the planner knows the table. Returns seconds.
pub fn sql_load<T: Target>(
    target: &T,
    schema: Schema,
    postgres: bool,
    e: &Entries,
) -> Result<f64, OpError> {
    runtime()?.block_on(async {
        let mut s = target.connect().await?;
        let ddl = create(schema, postgres);
        for (id, statement) in ddl.iter().enumerate() {
            s.execute(&native(&sql_op(id, statement.clone(), 0), &[]))
                .await?;
        }
        let (query, n) = insert(schema);
        let insert = sql_op(ddl.len(), query, n);
        let started = Instant::now();
        for first in (0..e.count).step_by(BATCH as usize) {
            s.execute(&Op::Begin).await?;
            for i in first..(first + BATCH).min(e.count) {
                let args = row_args(schema, i, &e.person(i));
                s.execute(&native(&insert, &args)).await?;
                e.progress(i + 1, started);
            }
            s.execute(&Op::Commit).await?;
        }
        let seconds = started.elapsed().as_secs_f64();
        let analyze = sql_op(ddl.len() + 1, format!("ANALYZE {}", schema.table()), 0);
        s.execute(&native(&analyze, &[])).await?;
        Ok(seconds)
    })
}

fn native<'a>(op: &'a NativeOp<ValueKind>, args: &'a [Vec<u8>]) -> Op<'a> {
    Op::Native {
        op,
        args,
        capture: false,
    }
}

fn ldap_add(attrs: &[(&str, usize)]) -> NativeOp<ValueKind> {
    NativeOp::Ldap(LdapOp::Add {
        dn: ValueKind::Bytes,
        attrs: attrs
            .iter()
            .map(|(name, n)| (name.to_string(), vec![ValueKind::Bytes; *n]))
            .collect(),
    })
}

/// Add the `ou=people` entry, then the people over `in_flight` connections at once (each
/// adds every `in_flight`-th person, one at a time), so that many adds are in flight. Returns
/// the seconds the people took.
pub fn ldap_load<T: Target>(target: &T, e: &Entries, in_flight: u64) -> Result<f64, OpError> {
    runtime()?.block_on(async {
        let mut first = target.connect().await?;
        first.setup().await?;
        let ou = ldap_add(&[("objectClass", 2), ("ou", 1)]);
        let args: Vec<Vec<u8>> = [e.people, "top", "organizationalUnit", "people"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        first.execute(&native(&ou, &args)).await?;
        let mut shape = vec![("objectClass", PERSON_CLASSES.len())];
        shape.extend(ATTRS.iter().map(|(name, _)| (*name, 1)));
        let person = ldap_add(&shape);
        let mut sessions = vec![first];
        for _ in 1..in_flight.min(e.count) {
            sessions.push(target.connect().await?);
        }
        let done = Cell::new(0u64);
        let started = Instant::now();
        let stride = sessions.len() as u64;
        let adds = sessions.iter_mut().enumerate().map(|(k, s)| {
            let (person, done) = (&person, &done);
            async move {
                for i in (k as u64..e.count).step_by(stride as usize) {
                    let p = e.person(i);
                    let mut args = vec![p.dn.clone().into_bytes()];
                    args.extend(PERSON_CLASSES.iter().map(|c| c.as_bytes().to_vec()));
                    args.extend(
                        ATTRS
                            .iter()
                            .map(|(a, _)| p.value(a).unwrap_or_default().as_bytes().to_vec()),
                    );
                    s.execute(&native(person, &args)).await?;
                    done.set(done.get() + 1);
                    e.progress(done.get(), started);
                }
                Ok::<(), OpError>(())
            }
        });
        for r in futures_util::future::join_all(adds).await {
            r?;
        }
        Ok(started.elapsed().as_secs_f64())
    })
}

/// The DNs an SQL search returns, read in one row: the query as the search runs it, its
/// DNs joined by line breaks (`group_concat` on SQLite, `string_agg` on PostgreSQL).
pub fn sql_found<T: Target>(
    target: &T,
    query: &str,
    args: &[String],
    postgres: bool,
) -> Result<Vec<String>, OpError> {
    let agg = if postgres {
        "string_agg(dn, chr(10))"
    } else {
        "group_concat(dn, char(10))"
    };
    let op = sql_op(
        0,
        format!("SELECT {agg} FROM ({query}) AS found"),
        args.len(),
    );
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    runtime()?.block_on(async {
        let mut s = target.connect().await?;
        let out = s
            .execute(&Op::Native {
                op: &op,
                args: &args,
                capture: true,
            })
            .await?;
        let joined = out.captured.first().cloned().unwrap_or_default();
        Ok(String::from_utf8_lossy(&joined)
            .split('\n')
            .filter(|d| !d.is_empty())
            .map(normal_dn)
            .collect())
    })
}

/// The DNs an LDAP subtree search returns, read with ldap3 itself (the target's search
/// counts entries; the study needs them all).
pub fn ldap_found(url: &TargetUrl, base: &str, filter: &str) -> Result<Vec<String>, OpError> {
    let fail = |e: ldap3::LdapError| {
        OpError::new(ErrorClass::Other, format!("reading back the search: {e}"))
    };
    runtime()?.block_on(async {
        let address = format!("ldap://{}", url.location.trim_end_matches('/'));
        let (conn, mut ldap) = LdapConnAsync::new(&address).await.map_err(fail)?;
        let driver = tokio::spawn(async move {
            let _ = conn.drive().await;
        });
        if let Some(dn) = url.options.get("bind_dn") {
            let password = url.options.get("password").cloned().unwrap_or_default();
            ldap.simple_bind(dn, &password)
                .await
                .and_then(|r| r.success())
                .map_err(fail)?;
        }
        let (entries, _) = ldap
            .search(base, Scope::Subtree, filter, vec!["uid"])
            .await
            .and_then(|r| r.success())
            .map_err(fail)?;
        let _ = ldap.unbind().await;
        driver.abort();
        Ok(entries
            .into_iter()
            .map(|e| normal_dn(&SearchEntry::construct(e).dn))
            .collect())
    })
}

/// A DN to compare: lower case, no spaces around the separators.
pub fn normal_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| rdn.split('=').map(str::trim).collect::<Vec<_>>().join("="))
        .collect::<Vec<_>>()
        .join(",")
        .to_lowercase()
}

/// SQLite's plan for the query (`EXPLAIN QUERY PLAN`, with the arguments bound), one line
/// per step.
pub fn sqlite_plan(path: &Path, query: &str, args: &[String]) -> Result<String, OpError> {
    let fail =
        |e: rusqlite::Error| OpError::new(ErrorClass::Other, format!("EXPLAIN QUERY PLAN: {e}"));
    let conn = rusqlite::Connection::open(path).map_err(fail)?;
    let mut st = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
        .map_err(fail)?;
    let lines: Vec<String> = st
        .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
        .map_err(fail)?
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    Ok(lines.join("\n"))
}

/// PostgreSQL's plan for the query (`EXPLAIN (FORMAT JSON)` with the arguments bound, as
/// the runs prepare it), one line per node: type, index, table.
pub fn postgres_plan<T: Target>(
    target: &T,
    query: &str,
    args: &[String],
) -> Result<String, OpError> {
    let op = sql_op(0, format!("EXPLAIN (FORMAT JSON) {query}"), args.len());
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let json = runtime()?.block_on(async {
        let mut s = target.connect().await?;
        let out = s
            .execute(&Op::Native {
                op: &op,
                args: &args,
                capture: true,
            })
            .await?;
        Ok::<_, OpError>(out.captured.first().cloned().unwrap_or_default())
    })?;
    let plan: serde_json::Value = serde_json::from_slice(&json)
        .map_err(|e| OpError::new(ErrorClass::Protocol, format!("EXPLAIN's JSON: {e}")))?;
    let mut lines = Vec::new();
    plan_lines(&plan[0]["Plan"], 0, &mut lines);
    Ok(lines.join("\n"))
}

fn plan_lines(node: &serde_json::Value, depth: usize, out: &mut Vec<String>) {
    let field = |k: &str| node[k].as_str().map(str::to_string);
    let mut line = format!(
        "{}{}",
        "  ".repeat(depth),
        field("Node Type").unwrap_or_default()
    );
    if let Some(index) = field("Index Name") {
        line.push_str(&format!(" using {index}"));
    }
    if let Some(table) = field("Relation Name") {
        line.push_str(&format!(" on {table}"));
    }
    for key in ["Index Cond", "Filter"] {
        if let Some(cond) = field(key) {
            line.push_str(&format!(" ({key}: {cond})"));
        }
    }
    out.push(line);
    for child in node["Plans"].as_array().into_iter().flatten() {
        plan_lines(child, depth + 1, out);
    }
}

/// `index` when the plan reaches the table through an index (SQLite's `SEARCH`,
/// PostgreSQL's index and bitmap index scans), else `scan`.
pub fn plan_kind(plan: &str) -> &'static str {
    let by_index = plan.lines().any(|l| {
        l.trim_start().starts_with("SEARCH")
            || l.contains("Index Scan")
            || l.contains("Index Only Scan")
    });
    if by_index {
        "index"
    } else {
        "scan"
    }
}
