//! Study `connections` (seed 000): how fast each backend connects, authenticates, creates a
//! record and fetches one, measured as the seed measured Documentum: one client repeats one
//! operation, and the study counts the operations that succeed in each of K intervals of T.
//! Rows are backends and their authentication methods, each with and without TLS where the
//! server offers it: SQLite as the embedded baseline; PostgreSQL with SCRAM (its keys cached
//! as loadrig's client does, or derived on every connect as libpq's), md5 and trust; MariaDB
//! with mysql_native_password and ed25519; Redis with and without AUTH (its TLS rows from
//! rediss:// URLs: Redis serves TLS on a port of its own); OpenLDAP with a
//! simple bind and anonymous. Columns: the rates, a fetch on a fresh connection against one
//! on the open connection, the handshake's share, a new connection's first query, and the
//! client's and the server's CPU per connect (the server's from its processes in /proc).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
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
const MEASURES: [(&str, &str, &str); 9] = [
    ("connect/s", "ops/s", "a new connection with its full handshake (authentication included), then closed, back to back"),
    ("authenticate/s", "ops/s", "authentication again on the open connection (MariaDB COM_CHANGE_USER, Redis AUTH, an LDAP bind)"),
    ("create/s", "ops/s", "insert one new record (a key-value put of a new key)"),
    ("fetch/s", "ops/s", "read one stored record by id on the open connection"),
    ("fresh fetch/s", "ops/s", "read one stored record by id on a new connection each time (--connection per-op)"),
    ("handshake", "%", "the share of a fresh fetch's time spent on the handshake: 1 - fresh fetch/s / fetch/s"),
    ("first query", "µs", "a new connection's first query: the fresh fetch's mean time less the connect's (each opens and closes a connection), from their runs"),
    ("client CPU/connect", "µs", "CPU time of the rig's client threads per connect in the connect run (the observer's and the rig's monitor threads left out)"),
    ("server CPU/connect", "µs", "CPU time of the server's processes per connect in the connect run, from /proc (docs/observe.md; the observer's own queries included)"),
];
const CONNECT: usize = 0;
const CREATE: usize = 2;
const FETCH: usize = 3;
const FRESH: usize = 4;
const SHARE: usize = 5;
const FIRST_QUERY: usize = 6;
const CLIENT_CPU: usize = 7;
const SERVER_CPU: usize = 8;

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

/// Which of the runs a row makes.
#[derive(Clone, Copy, PartialEq)]
enum Runs {
    /// Every one: a backend's own row.
    All,
    /// All but create: another authentication method or TLS on a backend of a row above,
    /// which changes the connection, not the insert.
    Connection,
    /// The connection's runs, reading what the row above loaded: a login that may not
    /// write (anonymous LDAP), so it neither cleans nor loads.
    ReadOnly,
}

struct Row {
    name: &'static str,
    slug: &'static str,
    url: Result<String, String>,
    auth: Auth,
    runs: Runs,
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
/// one without is the other. The md5 and ed25519 logins come from the environment only
/// (their URLs look like the SCRAM and native-password ones).
fn slots() -> Vec<Slot> {
    vec![
        Slot::new("pg", "LOADRIG_PG_URL", |u| {
            is_scheme(u, &["postgres", "postgresql"]) && super::has_password(u)
        }),
        Slot::new("pg-trust", "LOADRIG_PG_TRUST_URL", |u| {
            is_scheme(u, &["postgres", "postgresql"]) && !super::has_password(u)
        }),
        Slot::new("pg-md5", "LOADRIG_PG_MD5_URL", |_| false),
        Slot::new("mysql", "LOADRIG_MYSQL_URL", |u| {
            is_scheme(u, &["mysql", "mariadb"])
        }),
        Slot::new("mysql-ed25519", "LOADRIG_MYSQL_ED25519_URL", |_| false),
        Slot::new("redis", "LOADRIG_REDIS_URL", |u| {
            u.scheme == "redis" && super::has_password(u)
        }),
        Slot::new("redis-open", "LOADRIG_REDIS_OPEN_URL", |u| {
            u.scheme == "redis" && !super::has_password(u)
        }),
        // Redis serves TLS on a port of its own, so its TLS rows cannot be made from the
        // plain URL: they take rediss:// URLs (scripts/services.sh's name its CA).
        Slot::new("redis-tls", "LOADRIG_REDIS_TLS_URL", |u| {
            u.scheme == "rediss" && super::has_password(u)
        }),
        Slot::new("redis-open-tls", "LOADRIG_REDIS_OPEN_TLS_URL", |u| {
            u.scheme == "rediss" && !super::has_password(u)
        }),
        Slot::ldap(),
    ]
}

/// `url` with `option` added to its query.
fn with_option(url: &str, option: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{option}")
}

/// The same login over TLS, the server verified against the CA in `LOADRIG_CA_FILE`
/// (scripts/services.sh's): PostgreSQL's and MariaDB's TLS, StartTLS on LDAP's port.
fn with_tls(url: &Result<String, String>) -> Result<String, String> {
    let url = url.as_ref().map_err(Clone::clone)?;
    let ca = std::env::var("LOADRIG_CA_FILE")
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or("no CA: the TLS rows verify the server against LOADRIG_CA_FILE (scripts/services.sh env sets it)")?;
    let tls = match url.split("://").next().unwrap_or_default() {
        "postgres" | "postgresql" => "sslmode=verify-full",
        "mysql" | "mariadb" => "ssl-mode=VERIFY_IDENTITY",
        _ => "starttls=true",
    };
    Ok(with_option(url, &format!("{tls}&ca={ca}")))
}

/// The LDAP login without its bind DN and password: anonymous.
fn anonymous(url: &Result<String, String>) -> Result<String, String> {
    let url = url.as_ref().map_err(Clone::clone)?;
    let Some((base, query)) = url.split_once('?') else {
        return Ok(url.clone());
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|o| !o.starts_with("bind_dn=") && !o.starts_with("password="))
        .collect();
    Ok(format!("{base}?{}", kept.join("&")))
}

fn rows(req: &Request, dir: &Path) -> Result<Vec<Row>, InputError> {
    let servers = super::servers(
        &req.targets,
        &slots(),
        "postgres (with a password: the SCRAM row; without: the trust row), mysql, redis and rediss (with or without a password), ldap",
    )?;
    let server = |key: &str| {
        servers
            .get(key)
            .cloned()
            .ok_or_else(|| "no URL".to_string())
    };
    let sqlite = format!("sqlite://{}/sqlite/connections.db", dir.display());
    let (pg, md5, trust) = (server("pg"), server("pg-md5"), server("pg-trust"));
    let trusted = Auth::Not("trust: the server asks for no credentials");
    let (all, conn) = (Runs::All, Runs::Connection);
    let mut rows = vec![
        row(
            "SQLite",
            "sqlite",
            Ok(sqlite),
            Auth::Not("SQLite has no authentication"),
            all,
        ),
        row(
            "PostgreSQL scram-sha-256",
            "pg",
            pg.clone(),
            Auth::Derived,
            all,
        ),
        row(
            "PostgreSQL scram-sha-256 uncached",
            "pg-uncached",
            pg.as_ref()
                .map(|u| with_option(u, "scram_cache=off"))
                .map_err(Clone::clone),
            Auth::Derived,
            all,
        ),
        row(
            "PostgreSQL scram-sha-256 TLS",
            "pg-tls",
            with_tls(&pg),
            Auth::Derived,
            conn,
        ),
        row("PostgreSQL md5", "pg-md5", md5.clone(), Auth::Derived, conn),
        row(
            "PostgreSQL md5 TLS",
            "pg-md5-tls",
            with_tls(&md5),
            Auth::Derived,
            conn,
        ),
        row("PostgreSQL trust", "pg-trust", trust.clone(), trusted, all),
        row(
            "PostgreSQL trust TLS",
            "pg-trust-tls",
            with_tls(&trust),
            trusted,
            conn,
        ),
    ];
    rows.extend(mysql_rows(server("mysql"), server("mysql-ed25519")));
    rows.extend(redis_rows(
        server("redis"),
        server("redis-tls"),
        server("redis-open"),
        server("redis-open-tls"),
    ));
    rows.extend(ldap_rows(server("ldap")));
    req.leave_out_unchosen(&mut rows, |r| (r.name, r.slug), |r| &mut r.url)?;
    Ok(rows)
}

/// A row of the table.
fn row(
    name: &'static str,
    slug: &'static str,
    url: Result<String, String>,
    auth: Auth,
    runs: Runs,
) -> Row {
    Row {
        name,
        slug,
        url,
        auth,
        runs,
    }
}

/// MariaDB's rows, from its URLs.
fn mysql_rows(native: Result<String, String>, ed25519: Result<String, String>) -> Vec<Row> {
    let (all, conn) = (Runs::All, Runs::Connection);
    vec![
        row(
            "MariaDB native password",
            "mysql",
            native.clone(),
            Auth::Again,
            all,
        ),
        row(
            "MariaDB native password TLS",
            "mysql-tls",
            with_tls(&native),
            Auth::Again,
            conn,
        ),
        row(
            "MariaDB ed25519",
            "mysql-ed25519",
            ed25519.clone(),
            Auth::Again,
            conn,
        ),
        row(
            "MariaDB ed25519 TLS",
            "mysql-ed25519-tls",
            with_tls(&ed25519),
            Auth::Again,
            conn,
        ),
    ]
}

/// Redis's rows: with and without a password, each in the clear and over TLS (its
/// rediss:// URL as given: the TLS port and the CA are in it).
fn redis_rows(
    auth: Result<String, String>,
    auth_tls: Result<String, String>,
    open: Result<String, String>,
    open_tls: Result<String, String>,
) -> Vec<Row> {
    let none = Auth::Not("no password: nothing to authenticate");
    let (all, conn) = (Runs::All, Runs::Connection);
    vec![
        row("Redis AUTH", "redis", auth, Auth::Again, all),
        row("Redis AUTH TLS", "redis-tls", auth_tls, Auth::Again, conn),
        row("Redis no AUTH", "redis-open", open, none, all),
        row("Redis no AUTH TLS", "redis-open-tls", open_tls, none, conn),
    ]
}

/// OpenLDAP's rows, from its URL: a simple bind and anonymous, each also with StartTLS.
fn ldap_rows(ldap: Result<String, String>) -> Vec<Row> {
    vec![
        row(
            "OpenLDAP simple bind",
            "ldap",
            ldap.clone(),
            Auth::Again,
            Runs::All,
        ),
        row(
            "OpenLDAP simple StartTLS",
            "ldap-tls",
            with_tls(&ldap),
            Auth::Again,
            Runs::Connection,
        ),
        row(
            "OpenLDAP anonymous",
            "ldap-anon",
            anonymous(&ldap),
            Auth::Again,
            Runs::ReadOnly,
        ),
        row(
            "OpenLDAP anonymous StartTLS",
            "ldap-anon-tls",
            with_tls(&anonymous(&ldap)),
            Auth::Again,
            Runs::ReadOnly,
        ),
    ]
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
        if spec.measure == CREATE && row.runs != Runs::All {
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
        if !spec.load || row.runs == Runs::ReadOnly {
            flags.push("--skip-load".into());
        }
        if !url.starts_with("sqlite:") {
            // The server's processes, for its CPU per connect (Redis is not observed by
            // default).
            flags.extend(["--observe", "on"].map(String::from));
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
            let go_on = with_target_type!(scheme.as_str(), T => row_on::<T>(row, &plans, &dir, r))?;
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
    r: &Row,
) -> Result<bool> {
    let opened = if r.runs == Runs::ReadOnly {
        open_as_is::<T>(&mut row.backend, &plans[0].1)
    } else {
        super::open_clean::<T>(&mut row.backend, &plans[0].1)
    };
    let Some(target) = opened else {
        return Ok(true);
    };
    // Each run's mean time per operation, for the first query's.
    let mut mean_ns = [None; MEASURES.len()];
    for (measure, plan) in plans {
        let run = format!("runs/{}-{}.json", r.slug, measure_slug(*measure));
        let failure = match super::run_one(&target, plan, dir, &run, &mut row.backend)? {
            RunOutcome::Interrupted => return Ok(false),
            RunOutcome::Failed(class, message) => Some((class, message)),
            RunOutcome::Done(r) => {
                mean_ns[*measure] = r.operations.first().map(|o| o.latency.mean_ns);
                fill(row, *measure, &r, run)
            }
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
    // Both operations open and close a connection: what the fresh fetch adds is its query.
    if let (Some(fresh), Some(connect)) = (mean_ns[FRESH], mean_ns[CONNECT]) {
        row.cells[FIRST_QUERY].value = Some((fresh - connect) / 1e3);
    }
    Ok(true)
}

/// The target of a row that may not write, its namespace left as the row above left it.
fn open_as_is<T: Target>(backend: &mut super::Backend, plan: &RunPlan) -> Option<Arc<T>> {
    match T::from_url(&plan.target.parsed, &plan.workload.params) {
        Ok(t) => {
            backend.state = BackendState::Ran;
            Some(Arc::new(t))
        }
        Err(e) => {
            backend.fail(ErrorClass::Other, e.to_string());
            None
        }
    }
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
        run: run.clone(),
        interval_s: crate::analysis::interval_s(r),
        counts,
    });
    if measure == CONNECT {
        // The connect run: what one connection costs each side.
        row.cells[CLIENT_CPU] = per_connect(
            client_cpu(r),
            &run,
            "the run recorded no CPU of its client threads",
        );
        row.cells[SERVER_CPU] = per_connect(server_cpu(r), &run, "the server's processes were not observed (not on this machine, not readable, or no server: docs/observe.md)");
    }
    None
}

/// A CPU cell in µs per connect from (CPU seconds, connects), or empty with why.
fn per_connect(cpu: Option<(f64, u64)>, run: &str, why: &str) -> MeasureCell {
    match cpu {
        Some((s, ops)) if ops > 0 => MeasureCell {
            value: Some(s * 1e6 / ops as f64),
            run: Some(run.to_string()),
            note: None,
            label: None,
        },
        _ => MeasureCell::empty(why),
    }
}

/// The CPU seconds of the rig's client threads (`clients-K`) over the full measured
/// intervals, and the operations completed in them.
fn client_cpu(r: &RunResult) -> Option<(f64, u64)> {
    let mut sum = None;
    for i in full_intervals(r) {
        let Some(rig) = &i.rig else { continue };
        let share: f64 = rig
            .threads
            .iter()
            .filter(|t| t.name.starts_with("clients-"))
            .map(|t| t.cpu_share)
            .sum();
        let (s, ops) = sum.get_or_insert((0.0, 0));
        *s += share * (i.end_s - i.start_s);
        *ops += i.ok;
    }
    sum
}

/// The CPU seconds of the server's process tree over the full measured intervals it was
/// observed in, and the operations completed in them.
fn server_cpu(r: &RunResult) -> Option<(f64, u64)> {
    let mut sum = None;
    for i in full_intervals(r) {
        let Some(p) = i.server.as_ref().and_then(|s| s.target.processes.as_ref()) else {
            continue;
        };
        let (s, ops) = sum.get_or_insert((0.0, 0));
        *s += p.user_s + p.system_s;
        *ops += i.ok;
    }
    sum
}

fn measure_slug(measure: usize) -> &'static str {
    match measure {
        CONNECT => "connect",
        1 => "authenticate",
        CREATE => "create",
        FETCH => "fetch",
        _ => "fetch-fresh",
    }
}

/// The handshake's share of a fresh fetch: 1 - (fresh fetches per second / fetches per second).
fn derive_share(row: &mut BackendRow) {
    if let (Some(fresh), Some(pooled)) = (row.cells[FRESH].value, row.cells[FETCH].value) {
        row.cells[SHARE].value = Some(100.0 * (1.0 - fresh / pooled).max(0.0));
    }
}

/// PostgreSQL cannot authenticate again on an open connection: its authentication rate is
/// read off the difference between a connect with the row's method (SCRAM with its keys
/// cached, or derived on every connect as libpq does; md5) and one with trust, over TLS
/// when the row is (1 / the extra time per connect), when both rows ran.
fn derive_auth(table: &mut BackendTable, rows: &[Row]) {
    let connect = |slug: &str| {
        rows.iter()
            .position(|r| r.slug == slug)
            .and_then(|i| table.rows.get(i))
            .and_then(|r| r.cells[0].value)
    };
    let (trust_plain, trust_tls) = (connect("pg-trust"), connect("pg-trust-tls"));
    for (i, r) in rows.iter().enumerate() {
        if !matches!(r.auth, Auth::Derived) || table.rows[i].backend.state != BackendState::Ran {
            continue;
        }
        // Like with like: a TLS row against trust over TLS.
        let trust = if r.slug.ends_with("-tls") {
            trust_tls
        } else {
            trust_plain
        };
        let scram = table.rows[i].cells[0].value;
        let cell = &mut table.rows[i].cells[1];
        *cell = match (scram, trust) {
            (Some(a), Some(b)) if a < b => MeasureCell {
                value: Some(1.0 / (1.0 / a - 1.0 / b)),
                run: None,
                note: Some("derived: PostgreSQL cannot authenticate again on an open connection, so 1 / (1/connect - 1/connect with trust)".into()),
                label: None,
            },
            (Some(_), Some(_)) => MeasureCell::empty("derived: connect was not slower than with trust, so no authentication cost can be read off"),
            _ => MeasureCell::empty("PostgreSQL cannot authenticate again on an open connection; derived from connect against trust (over TLS for a TLS row), which needs that trust row"),
        };
    }
}
