//! Loading the people into each backend through the targets' own sessions (measured load
//! phases, not runs: a run's operations are templates, and neither a reversed DN nor the
//! generator's hashed telephone number is one), reading back which entries a search finds,
//! and PostgreSQL's plans for the statements back-sql sent.

use std::cell::Cell;
use std::time::Instant;

use ldap3::{LdapConnAsync, Scope, SearchEntry};

use super::backsql::{Mapping, PEOPLE};
use super::filter::{reversed_upper, ATTRS};
use crate::targets::postgres::backsql::SCHEMA;
use crate::targets::{Session, Target, TargetUrl};
use crate::vocab::{ErrorClass, LdapOp, NativeOp, Op, OpError, SqlOp, ValueKind};
use crate::workload::import::ldif::{Person, PERSON_CLASSES};

/// People per transaction while loading back-sql's tables.
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

/// One text value: the first column of the first row of `query` (no arguments).
async fn captured<S: Session>(s: &mut S, id: usize, query: &str) -> Result<Vec<u8>, OpError> {
    let op = sql_op(id, query.to_string(), 0);
    let out = s
        .execute(&Op::Native {
            op: &op,
            args: &[],
            capture: true,
        })
        .await?;
    Ok(out.captured.first().cloned().unwrap_or_default())
}

/// The PostgreSQL user's current schema, where the `loadrig_` tables go.
pub fn user_schema<T: Target>(target: &T) -> Result<String, OpError> {
    runtime()?.block_on(async {
        let mut s = target.connect().await?;
        let schema = captured(&mut s, 0, "SELECT current_schema()::text").await?;
        Ok(String::from_utf8_lossy(&schema).into_owned())
    })
}

/// Create back-sql's schema and the people's tables for `mapping`, then load the people,
/// `BATCH` people a transaction on one connection, each as its row and its `ldap_entries`
/// row (the loader fills the upper-cased columns and `dn_ru`, as the seed's triggers
/// would); then `ANALYZE` (not timed), so the planner knows the tables. Returns seconds.
pub fn backsql_load<T: Target>(
    target: &T,
    mapping: Mapping,
    e: &Entries,
    loadrig_dn: &str,
) -> Result<f64, OpError> {
    let setup: Vec<String> = mapping
        .create()
        .into_iter()
        .chain(mapping.metadata(loadrig_dn, e.people))
        .collect();
    let mut people_cols = vec!["id".to_string()];
    for (_, col) in ATTRS {
        people_cols.push(col.to_string());
        if mapping.upper {
            people_cols.push(format!("{col}_u"));
        }
    }
    let marks = |n: usize| {
        (1..=n)
            .map(|k| format!("${k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let person = sql_op(
        setup.len(),
        format!(
            "INSERT INTO {PEOPLE} ({}) VALUES ({})",
            people_cols.join(", "),
            marks(people_cols.len())
        ),
        people_cols.len(),
    );
    let entry_cols = if mapping.upper {
        "id, dn, dn_ru, keyval"
    } else {
        "id, dn, keyval"
    };
    let n_entry = if mapping.upper { 4 } else { 3 };
    let entry = sql_op(
        setup.len() + 1,
        format!(
            "INSERT INTO {SCHEMA}.ldap_entries ({entry_cols}, oc_map_id, parent) VALUES ({}, 1, 2)",
            marks(n_entry)
        ),
        n_entry,
    );
    runtime()?.block_on(async {
        let mut s = target.connect().await?;
        for (id, statement) in setup.iter().enumerate() {
            s.execute(&native(&sql_op(id, statement.clone(), 0), &[]))
                .await?;
        }
        let started = Instant::now();
        for first in (0..e.count).step_by(BATCH as usize) {
            s.execute(&Op::Begin).await?;
            for i in first..(first + BATCH).min(e.count) {
                let p = e.person(i);
                let mut row = vec![i.to_string().into_bytes()];
                for (attr, _) in ATTRS {
                    let v = p.value(attr).unwrap_or_default();
                    row.push(v.as_bytes().to_vec());
                    if mapping.upper {
                        row.push(v.to_uppercase().into_bytes());
                    }
                }
                s.execute(&native(&person, &row)).await?;
                // Ids 1 and 2 are the units above the people.
                let mut ldap = vec![(i + 3).to_string().into_bytes(), p.dn.clone().into_bytes()];
                if mapping.upper {
                    ldap.push(reversed_upper(&normal_dn(&p.dn)).into_bytes());
                }
                ldap.push(i.to_string().into_bytes());
                s.execute(&native(&entry, &ldap)).await?;
                e.progress(i + 1, started);
            }
            s.execute(&Op::Commit).await?;
        }
        let seconds = started.elapsed().as_secs_f64();
        for (k, table) in [PEOPLE.to_string(), format!("{SCHEMA}.ldap_entries")]
            .iter()
            .enumerate()
        {
            let analyze = sql_op(setup.len() + 2 + k, format!("ANALYZE {table}"), 0);
            s.execute(&native(&analyze, &[])).await?;
        }
        Ok(seconds)
    })
}

/// PostgreSQL's plan for `query` (a statement back-sql sent, its literals put back), as
/// back-sql's connection sees the tables: `EXPLAIN (FORMAT JSON)`, one line per node (type,
/// index, table, conditions).
pub fn explain<T: Target>(
    target: &T,
    user_schema: &str,
    query: &str,
) -> Result<(String, serde_json::Value), OpError> {
    let json = runtime()?.block_on(async {
        let mut s = target.connect().await?;
        let path = format!(
            "SET search_path TO {SCHEMA}, \"{}\"",
            user_schema.replace('"', "\"\"")
        );
        s.execute(&native(&sql_op(0, path, 0), &[])).await?;
        captured(&mut s, 1, &format!("EXPLAIN (FORMAT JSON) {query}")).await
    })?;
    let plan: serde_json::Value = serde_json::from_slice(&json)
        .map_err(|e| OpError::new(ErrorClass::Protocol, format!("EXPLAIN's JSON: {e}")))?;
    let root = plan[0]["Plan"].clone();
    let mut lines = Vec::new();
    plan_lines(&root, 0, &mut lines);
    Ok((lines.join("\n"), root))
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
