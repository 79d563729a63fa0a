//! Study `connections` (seed 000): how fast each backend connects, authenticates, creates a
//! record and fetches one, measured as the seed measured Documentum: one client repeats one
//! operation, and the study counts the operations that succeed in each of K intervals of T.
//! Rows are backends (SQLite as the embedded baseline; PostgreSQL with SCRAM, its keys cached
//! as loadrig's client does or derived on every connect as libpq's, and with trust,
//! MariaDB, Redis with and without AUTH, OpenLDAP with a simple bind); columns the rates, a
//! fetch on a fresh connection against one on the open connection, and the handshake's share.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use super::{
    batch_failure, BackendRow, BackendState, BackendTable, IntervalCounts, Measure, MeasureCell,
    Request, RunOutcome, Slot, StudyRecord, StudyTable,
};
use crate::analysis::full_intervals;
use crate::duration;
use crate::error::InputError;
use crate::plan::RunPlan;
use crate::result::RunResult;
use crate::targets::{with_target_type, Target, TargetUrl};
use crate::vocab::ErrorClass;

const WORKLOAD: &str = include_str!("connections.toml");

/// The columns: name, unit, what.
const MEASURES: [(&str, &str, &str); 6] = [
    ("connect/s", "ops/s", "a new connection with its full handshake (authentication included), then closed, back to back"),
    ("authenticate/s", "ops/s", "authentication again on the open connection (MariaDB COM_CHANGE_USER, Redis AUTH, LDAP simple bind)"),
    ("create/s", "ops/s", "insert one new record (a key-value put of a new key)"),
    ("fetch/s", "ops/s", "read one stored record by id on the open connection"),
    ("fresh fetch/s", "ops/s", "read one stored record by id on a new connection each time (--connection per-op)"),
    ("handshake", "%", "the share of a fresh fetch's time spent on the handshake: 1 - fresh fetch/s / fetch/s"),
];
const FETCH: usize = 3;
const FRESH: usize = 4;
const SHARE: usize = 5;

/// One run of a row: the measure it fills, the workload's operation, whether each
/// operation opens its own connection, whether it loads the records first.
struct RunSpec {
    measure: usize,
    op: &'static str,
    per_op: bool,
    load: bool,
}

const RUNS: [RunSpec; 5] = [
    RunSpec {
        measure: 0,
        op: "connect",
        per_op: false,
        load: false,
    },
    RunSpec {
        measure: 1,
        op: "authenticate",
        per_op: false,
        load: false,
    },
    RunSpec {
        measure: 2,
        op: "create",
        per_op: false,
        load: false,
    },
    RunSpec {
        measure: FETCH,
        op: "fetch",
        per_op: false,
        load: true,
    },
    RunSpec {
        measure: FRESH,
        op: "fetch",
        per_op: true,
        load: false,
    },
];

/// How a backend authenticates again on an open connection.
#[derive(Clone, Copy)]
enum Auth {
    /// With the `authenticate` operation.
    Again,
    /// Its protocol cannot: derived from connecting with credentials against without.
    Derived,
    /// Nothing to authenticate, and why.
    Not(&'static str),
}

struct Row {
    name: &'static str,
    slug: &'static str,
    url: Result<String, String>,
    auth: Auth,
}

struct Sizes {
    samples: u64,
    interval: Duration,
    records: u64,
}

/// The seed's shape, smaller (60 × 1 s instead of 1000 × 10 s), `--quick`'s, or `--set`.
fn sizes(req: &Request) -> Result<Sizes, InputError> {
    let mut s = if req.quick {
        Sizes {
            samples: 3,
            interval: Duration::from_millis(200),
            records: 100,
        }
    } else {
        Sizes {
            samples: 60,
            interval: Duration::from_secs(1),
            records: 1000,
        }
    };
    for (name, value) in &req.sets {
        let count = |range: std::ops::RangeInclusive<u64>| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| {
                    InputError::new(format!(
                        "--set {name}={value}: expected a whole number from {} to {}",
                        range.start(),
                        range.end()
                    ))
                })
        };
        match name.as_str() {
            "samples" => s.samples = count(1..=100_000)?,
            "records" => s.records = count(1..=10_000_000)?,
            "interval" => {
                s.interval = duration::parse(value, "--set interval")?;
                if !(Duration::from_millis(10)..=Duration::from_secs(3600)).contains(&s.interval) {
                    return Err(InputError::new(format!(
                        "--set interval={value}: expected from 10ms to 1h"
                    )));
                }
            }
            other => {
                return Err(InputError::new(format!(
                    "--set {other}: the connections study has no such setting"
                ))
                .help("it takes --set samples=K, --set interval=T (like 10s) and --set records=N"))
            }
        }
    }
    Ok(s)
}

fn is_scheme(u: &TargetUrl, schemes: &[&str]) -> bool {
    schemes.contains(&u.scheme.as_str())
}

/// The server backends: a PostgreSQL or Redis URL with a password is the authenticated row,
/// one without is the other.
fn slots() -> Vec<Slot> {
    vec![
        Slot::new("pg", "LOADRIG_PG_URL", |u| {
            is_scheme(u, &["postgres", "postgresql"]) && super::has_password(u)
        }),
        Slot::new("pg-trust", "LOADRIG_PG_TRUST_URL", |u| {
            is_scheme(u, &["postgres", "postgresql"]) && !super::has_password(u)
        }),
        Slot::new("mysql", "LOADRIG_MYSQL_URL", |u| {
            is_scheme(u, &["mysql", "mariadb"])
        }),
        Slot::new("redis", "LOADRIG_REDIS_URL", |u| {
            u.scheme == "redis" && super::has_password(u)
        }),
        Slot::new("redis-open", "LOADRIG_REDIS_OPEN_URL", |u| {
            u.scheme == "redis" && !super::has_password(u)
        }),
        Slot::ldap(),
    ]
}

fn rows(req: &Request, dir: &Path) -> Result<Vec<Row>, InputError> {
    let servers = super::servers(
        &req.targets,
        &slots(),
        "postgres (with a password: the SCRAM row; without: the trust row), mysql, redis (with or without a password), ldap",
    )?;
    let server = |key: &str| {
        servers
            .get(key)
            .cloned()
            .ok_or_else(|| "no URL".to_string())
    };
    let row = |name, slug, url, auth| Row {
        name,
        slug,
        url,
        auth,
    };
    let sqlite = format!("sqlite://{}/sqlite/connections.db", dir.display());
    let mut all = vec![
        row(
            "SQLite",
            "sqlite",
            Ok(sqlite),
            Auth::Not("SQLite has no authentication"),
        ),
        row(
            "PostgreSQL scram-sha-256",
            "pg",
            server("pg"),
            Auth::Derived,
        ),
        row(
            "PostgreSQL scram-sha-256 uncached",
            "pg-uncached",
            server("pg").map(|u| {
                let sep = if u.contains('?') { '&' } else { '?' };
                format!("{u}{sep}scram_cache=off")
            }),
            Auth::Derived,
        ),
        row(
            "PostgreSQL trust",
            "pg-trust",
            server("pg-trust"),
            Auth::Not("trust: the server asks for no credentials"),
        ),
        row("MariaDB password", "mysql", server("mysql"), Auth::Again),
        row("Redis AUTH", "redis", server("redis"), Auth::Again),
        row(
            "Redis no AUTH",
            "redis-open",
            server("redis-open"),
            Auth::Not("no password: nothing to authenticate"),
        ),
        row("OpenLDAP simple bind", "ldap", server("ldap"), Auth::Again),
    ];
    req.leave_out_unchosen(&mut all, |r| (r.name, r.slug), |r| &mut r.url)?;
    Ok(all)
}

/// The plans of one row's runs, resolved before anything runs.
fn row_plans(
    row: &Row,
    url: &str,
    workload: &Path,
    dir: &Path,
    s: &Sizes,
) -> Result<Vec<(usize, RunPlan)>, InputError> {
    let mut plans = Vec::new();
    for spec in &RUNS {
        if spec.op == "authenticate" && !matches!(row.auth, Auth::Again) {
            continue;
        }
        let mut flags: Vec<String> = vec![
            "--op".into(),
            spec.op.into(),
            "--samples".into(),
            s.samples.to_string(),
            "--interval".into(),
            format!("{}ms", s.interval.as_millis()),
            "--set".into(),
            format!("records={}", s.records),
            "--seed".into(),
            "3".into(),
            "-o".into(),
            dir.join("runs/plan.json").to_string_lossy().into_owned(),
        ];
        if spec.per_op {
            flags.extend(["--connection", "per-op"].map(String::from));
        }
        if !spec.load {
            flags.push("--skip-load".into());
        }
        plans.push((spec.measure, super::plan_with_flags(workload, url, &flags)?));
    }
    Ok(plans)
}

pub fn run(req: &Request) -> Result<ExitCode> {
    let s = sizes(req)?;
    let dir = super::out_dir(req);
    let rows = rows(req, &dir)?;
    // Every plan is resolved before the first run: a bad URL exits 2 with nothing run.
    let plans = super::prepare(
        &dir,
        "connections.toml",
        WORKLOAD,
        &["sqlite"],
        |workload| {
            rows.iter()
                .map(|r| match &r.url {
                    Ok(url) => row_plans(r, url, workload, &dir, &s).map(Some),
                    Err(_) => Ok(None),
                })
                .collect::<Result<Vec<_>, InputError>>()
        },
    )?;
    let mut record = StudyRecord::start(
        "connections",
        req,
        BTreeMap::from([
            ("samples".into(), s.samples),
            ("interval_ms".into(), s.interval.as_millis() as u64),
            ("records".into(), s.records),
        ]),
        format!(
            "operations per second, one client, from {} intervals of {}",
            s.samples,
            humantime::format_duration(s.interval)
        ),
        StudyTable::Backends(BackendTable::default()),
    );
    println!(
        "loadrig {} study connections: {} intervals of {} per operation, {} backends; into {}",
        env!("CARGO_PKG_VERSION"),
        s.samples,
        humantime::format_duration(s.interval),
        rows.len(),
        dir.display()
    );
    let table = BackendTable {
        measures: Measure::all(&MEASURES),
        rows: Vec::new(),
    };
    let each = rows
        .iter()
        .zip(plans)
        .map(|(r, plans)| (r.name, &r.url, plans.map(|p| (r, p))))
        .collect();
    let (mut table, complete) =
        super::backend_table::run_rows(&mut record, &dir, table, each, |row, _, (r, plans)| {
            if let Auth::Not(why) = r.auth {
                row.cells[1] = MeasureCell::empty(format!("not applicable: {why}"));
            }
            let scheme = plans[0].1.target.scheme().to_string();
            let go_on =
                with_target_type!(scheme.as_str(), T => row_on::<T>(row, &plans, &dir, r.slug))?;
            derive_share(row);
            Ok(go_on)
        })?;
    derive_auth(&mut table, &rows);
    record.table = StudyTable::Backends(table);
    super::finish(&mut record, &dir, complete)
}

/// Run one row's plans on one target, created once; false when the study was interrupted.
/// A failure to connect or authenticate fails the row (with its class); any other failure
/// leaves its cell empty with the reason, and the row goes on.
fn row_on<T: Target>(
    row: &mut BackendRow,
    plans: &[(usize, RunPlan)],
    dir: &Path,
    slug: &str,
) -> Result<bool> {
    let Some(target) = super::open_clean::<T>(&mut row.backend, &plans[0].1) else {
        return Ok(true);
    };
    for (measure, plan) in plans {
        let run = format!("runs/{slug}-{}.json", measure_slug(*measure));
        let failure = match super::run_one(&target, plan, dir, &run, &mut row.backend)? {
            RunOutcome::Interrupted => return Ok(false),
            RunOutcome::Failed(class, message) => Some((class, message)),
            RunOutcome::Done(r) => fill(row, *measure, &r, run),
        };
        if let Some((class, message)) = failure {
            if matches!(class, ErrorClass::Auth | ErrorClass::Connect) {
                row.backend.fail(class, message);
                return Ok(true);
            }
            row.cells[*measure] =
                MeasureCell::empty(format!("failed ({}): {message}", class.name()));
        }
    }
    Ok(true)
}

/// The cell and interval counts of one run; the failure when no operation succeeded.
fn fill(
    row: &mut BackendRow,
    measure: usize,
    r: &RunResult,
    run: String,
) -> Option<(ErrorClass, String)> {
    let op = r.operations.first()?;
    if op.ok == 0 {
        return Some(batch_failure(r));
    }
    row.cells[measure] = MeasureCell {
        value: Some(op.throughput_per_s),
        run: Some(run.clone()),
        note: (op.errors > 0)
            .then(|| format!("{} of {} operations failed", op.errors, op.ok + op.errors)),
        label: None,
    };
    let counts = full_intervals(r)
        .iter()
        .map(|i| i.ops.iter().find(|o| o.name == op.name).map_or(0, |o| o.ok))
        .collect();
    row.samples.push(IntervalCounts {
        measure: MEASURES[measure].0.to_string(),
        run,
        interval_s: crate::analysis::interval_s(r),
        counts,
    });
    None
}

fn measure_slug(measure: usize) -> &'static str {
    [
        "connect",
        "authenticate",
        "create",
        "fetch",
        "fetch-fresh",
        "share",
    ][measure]
}

/// The handshake's share of a fresh fetch: 1 - (fresh fetches per second / fetches per second).
fn derive_share(row: &mut BackendRow) {
    if let (Some(fresh), Some(pooled)) = (row.cells[FRESH].value, row.cells[FETCH].value) {
        row.cells[SHARE].value = Some(100.0 * (1.0 - fresh / pooled).max(0.0));
    }
}

/// PostgreSQL cannot authenticate again on an open connection: its authentication rate is
/// read off the difference between a connect with SCRAM (the row's own: keys cached, or
/// derived on every connect as libpq does) and one with trust (1 / the extra time per
/// connect), when both rows ran.
fn derive_auth(table: &mut BackendTable, rows: &[Row]) {
    let connect = |slug: &str| {
        rows.iter()
            .position(|r| r.slug == slug)
            .and_then(|i| table.rows.get(i))
            .and_then(|r| r.cells[0].value)
    };
    let trust = connect("pg-trust");
    for (i, r) in rows.iter().enumerate() {
        if !matches!(r.auth, Auth::Derived) || table.rows[i].backend.state != BackendState::Ran {
            continue;
        }
        let scram = table.rows[i].cells[0].value;
        let cell = &mut table.rows[i].cells[1];
        *cell = match (scram, trust) {
            (Some(a), Some(b)) if a < b => MeasureCell {
                value: Some(1.0 / (1.0 / a - 1.0 / b)),
                run: None,
                note: Some("derived: PostgreSQL cannot authenticate again on an open connection, so 1 / (1/connect with SCRAM - 1/connect with trust)".into()),
                label: None,
            },
            (Some(_), Some(_)) => MeasureCell::empty("derived: connect with SCRAM was not slower than with trust, so no authentication cost can be read off"),
            _ => MeasureCell::empty("PostgreSQL cannot authenticate again on an open connection; derived from connect with SCRAM against trust, which needs the trust row"),
        };
    }
}
