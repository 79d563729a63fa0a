//! Study `order-entry` (seed 004): the ECperf-like business mix (the built-in workload
//! `order-entry`) driven open loop at injection rate Ir = 1, 2, 4, ... on each database,
//! once with the switches as ECperf shipped them and once with each of the seed's fixes,
//! until a transaction type's p90 passes the limit or too many transactions abort. The
//! table is the seed's graph: BBops/min relative to out of the box at Ir = 1. After every
//! run the study checks the database against the supplier emulator it started itself.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use super::order_entry_experiment;
use super::{
    write_record, Backend, LadderColumn, LadderPoint, LadderTable, Request, RunOutcome, Slot,
    StudyRecord, StudyTable, SupplierCheck, TypeLockWait,
};
use crate::analysis::experiment::record::ExperimentRecord;
use crate::emulate::supplier::{Supplier, SupplierHandle, SupplierStats};
use crate::engine;
use crate::error::InputError;
use crate::observe::{Observation, ObserveConfig, Observer, DEFAULT_SESSION_RATE};
use crate::plan::{Factor, LoadSetting, RunPlan, Value};
use crate::result::RunResult;
use crate::targets::{redact, with_target_type, Target};
use crate::vocab::{NativeOp, SqlOp};
use crate::workload::VerifySpec;

const WORKLOAD: &str = include_str!("../../workloads/order-entry.toml");
const CUSTOMER_DOMAIN: [&str; 5] = [
    "new-order",
    "change-order",
    "order-status",
    "customer-status",
    "cancel-order",
];

/// The study's sizes: the seed's, `--quick`'s, or `--set NAME=VALUE`.
#[derive(Debug, Clone)]
struct Sizes {
    ir_max: u64,
    seconds: u64,
    p90_limit_ms: f64,
    abort_limit: f64,
    rate_per_ir: f64,
    in_flight: u64,
    response_ms: u64,
    delay_ms: u64,
    listen: SocketAddr,
    /// The factorial experiment over the fixes on MariaDB: whether, at which Ir (None: where
    /// out of the box stopped), its runs' seconds and replicates.
    experiment: bool,
    experiment_ir: Option<u64>,
    experiment_seconds: u64,
    replicates: u64,
    quick: bool,
}

const SETTINGS_HELP: &str = "it takes --set ir_max=N (a power of two), seconds=N, p90_limit_ms=N, abort_limit=F (0 to 1), rate_per_ir=F, max_in_flight=N, response_ms=N, delay_ms=N, listen=ADDR, experiment=on|off, experiment_ir=N, experiment_seconds=N, replicates=N";

fn sizes(req: &Request) -> Result<Sizes, InputError> {
    let mut s = Sizes {
        ir_max: if req.quick { 2 } else { 256 },
        seconds: if req.quick { 2 } else { 30 },
        p90_limit_ms: 2000.0,
        abort_limit: 0.1,
        rate_per_ir: 10.0,
        in_flight: 32,
        response_ms: 200,
        delay_ms: 500,
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        experiment: true,
        experiment_ir: None,
        experiment_seconds: if req.quick { 1 } else { 10 },
        replicates: 2,
        quick: req.quick,
    };
    for (name, value) in &req.sets {
        let bad = |what: &str| {
            InputError::new(format!("--set {name}={value}: expected {what}")).help(SETTINGS_HELP)
        };
        let whole = || value.parse::<u64>().ok().filter(|n| *n >= 1);
        let float = || {
            value
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0)
        };
        match name.as_str() {
            "ir_max" => {
                s.ir_max = whole()
                    .filter(|n| n.is_power_of_two())
                    .ok_or_else(|| bad("an injection rate of at least 1, a power of two"))?
            }
            "seconds" => s.seconds = whole().ok_or_else(|| bad("whole seconds, at least 1"))?,
            "p90_limit_ms" => {
                s.p90_limit_ms = float().ok_or_else(|| bad("milliseconds above 0"))?
            }
            "abort_limit" => {
                s.abort_limit = float()
                    .filter(|f| *f <= 1.0)
                    .ok_or_else(|| bad("a share above 0, at most 1"))?
            }
            "rate_per_ir" => {
                s.rate_per_ir = float().ok_or_else(|| bad("transactions/s above 0"))?
            }
            "max_in_flight" => {
                s.in_flight = whole().ok_or_else(|| bad("a whole number, at least 1"))?
            }
            "response_ms" => {
                s.response_ms = value.parse().map_err(|_| bad("whole milliseconds"))?
            }
            "delay_ms" => s.delay_ms = value.parse().map_err(|_| bad("whole milliseconds"))?,
            "listen" => {
                s.listen = value
                    .parse()
                    .map_err(|_| bad("an address such as 127.0.0.1:8098"))?
            }
            "experiment" => {
                s.experiment = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(bad("on or off")),
                }
            }
            "experiment_ir" => {
                s.experiment_ir =
                    Some(whole().ok_or_else(|| bad("an injection rate of at least 1"))?)
            }
            "experiment_seconds" => {
                s.experiment_seconds = whole().ok_or_else(|| bad("whole seconds, at least 1"))?
            }
            "replicates" => {
                s.replicates = whole().ok_or_else(|| bad("a whole number, at least 1"))?
            }
            other => {
                return Err(InputError::new(format!(
                    "--set {other}: the order-entry study has no such setting"
                ))
                .help(SETTINGS_HELP))
            }
        }
    }
    Ok(s)
}

/// A setting of the seed's switches: out of the box, and the two fixes the seed made.
struct Setting {
    name: &'static str,
    po_sending: &'static str,
    isolation: &'static str,
    chopping: &'static str,
    lock_order: &'static str,
}

const SETTINGS: [Setting; 3] = [
    Setting {
        name: "out-of-box",
        po_sending: "inline",
        isolation: "serializable",
        chopping: "off",
        lock_order: "arbitrary",
    },
    Setting {
        name: "agent",
        po_sending: "agent",
        isolation: "read-committed",
        chopping: "on",
        lock_order: "sorted",
    },
    Setting {
        name: "queue",
        po_sending: "queue",
        isolation: "read-committed",
        chopping: "on",
        lock_order: "sorted",
    },
];

/// A database: its name, short name and URL (or why it does not run).
struct Database {
    name: &'static str,
    slug: &'static str,
    url: Result<String, String>,
}

impl Database {
    fn is_sqlite(&self) -> bool {
        self.slug == "sqlite"
    }
}

/// The databases, and the Redis of the queue setting (or why there is none).
fn databases(req: &Request, dir: &Path) -> Result<(Vec<Database>, Result<String, String>)> {
    let servers = super::servers(
        &req.targets,
        &[Slot::postgres("postgres"), Slot::mysql(), Slot::redis()],
        "postgres, mysql (the databases) and redis (the queue)",
    )?;
    let server = |k: &str| servers.get(k).cloned().ok_or_else(|| "no URL".to_string());
    let mut all = vec![
        Database {
            name: "SQLite",
            slug: "sqlite",
            url: Ok(format!("sqlite://{}/sqlite/order-entry.db", dir.display())),
        },
        Database {
            name: "PostgreSQL",
            slug: "pg",
            url: server("postgres"),
        },
        Database {
            name: "MariaDB",
            slug: "mysql",
            url: server("mysql"),
        },
    ];
    req.leave_out_unchosen(&mut all, |d| (d.name, d.slug), |d| &mut d.url)?;
    let queue = server("redis").map_err(|_| "no Redis URL for the queue".to_string());
    Ok((all, queue))
}

/// The injection rates of the ladder: 1, 2, 4, ... up to `ir_max`.
fn ladder(ir_max: u64) -> Vec<u64> {
    std::iter::successors(Some(1u64), |ir| ir.checked_mul(2))
        .take_while(|ir| *ir <= ir_max)
        .collect()
}

/// What a setting sets, as `--set` takes it; SQLite has no isolation weaker than serializable.
fn switches(setting: &Setting, db: &Database) -> BTreeMap<String, String> {
    let isolation = if db.is_sqlite() {
        "serializable"
    } else {
        setting.isolation
    };
    [
        ("po_sending", setting.po_sending),
        ("isolation", isolation),
        ("chopping", setting.chopping),
        ("lock_order", setting.lock_order),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// One column's plans, one per Ir, all resolved before anything runs. The business
/// transactions arrive at `rate_per_ir` x Ir in every setting: where the switches add a
/// sender of purchase orders (`send-po`), the total rate grows by its share of the mix.
fn column_plans(
    url: &str,
    switches: &BTreeMap<String, String>,
    workload: &Path,
    s: &Sizes,
    supplier: &str,
    queue: &str,
) -> Result<Vec<(u64, RunPlan)>, InputError> {
    // Ir 1 from the flags; every other Ir is that plan varied (its `ir` and its rate).
    let mut flags: Vec<String> = Vec::new();
    let sets = [
        ("ir", "1".to_string()),
        ("supplier_url", supplier.to_string()),
        ("queue_url", queue.to_string()),
    ];
    let sets = switches
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .chain(sets);
    for (k, v) in sets {
        flags.extend(["--set".to_string(), format!("{k}={v}")]);
    }
    // Each point's run observes its server for the lock waits by transaction type, whether
    // or not the target is observed by default (docs/observe.md); SQLite has no server.
    let scheme = url.split("://").next().unwrap_or_default();
    if crate::observe::observable(scheme) {
        flags.extend(["--observe", "on"].map(String::from));
    }
    flags.extend(
        [
            "--rate",
            &s.rate_per_ir.to_string(),
            "--max-in-flight",
            &s.in_flight.to_string(),
            "--duration",
            &format!("{}s", s.seconds),
            // The same choices and draws at every point, so a rerun repeats the study.
            "--seed",
            "1",
        ]
        .map(String::from),
    );
    let first = super::plan_with_flags(workload, url, &flags)?;
    let weight = |keep: fn(&str) -> bool| -> f64 {
        first
            .ops
            .iter()
            .filter(|o| keep(&o.name))
            .map(|o| o.weight)
            .sum()
    };
    let scale = weight(|_| true) / weight(|name| name != "send-po");
    ladder(s.ir_max)
        .into_iter()
        .map(|ir| {
            let rate = s.rate_per_ir * ir as f64 * scale;
            let plan = first.vary_all(&[
                (Factor::Param("ir".into()), Value::Count(ir)),
                (Factor::Load(LoadSetting::Rate), Value::Number(rate)),
            ])?;
            Ok((ir, plan))
        })
        .collect()
}

/// A column to run: the database, the setting, its switches and plans (none: why not).
struct Planned<'a> {
    db: &'a Database,
    setting: &'a Setting,
    switches: BTreeMap<String, String>,
    plans: Result<Vec<(u64, RunPlan)>, String>,
}

pub fn run(req: &Request) -> Result<ExitCode> {
    let s = sizes(req)?;
    let dir = super::out_dir(req);
    let (dbs, queue) = databases(req, &dir)?;
    // Bound before anything runs: an address that cannot be bound is bad input.
    let supplier = Supplier::start(
        s.listen,
        Duration::from_millis(s.delay_ms),
        Duration::from_millis(s.response_ms),
    )?;
    let supplier_url = supplier.url();
    let queue_url = queue
        .clone()
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let columns = super::prepare(
        &dir,
        "order-entry.toml",
        WORKLOAD,
        &["sqlite"],
        |workload| {
            let mut out = Vec::new();
            for db in &dbs {
                for setting in &SETTINGS {
                    let switches = switches(setting, db);
                    let plans = match (&db.url, &queue, setting.po_sending) {
                        (Err(why), _, _) => Err(why.clone()),
                        (Ok(_), Err(why), "queue") => Err(why.clone()),
                        (Ok(url), _, _) => Ok(column_plans(
                            url,
                            &switches,
                            workload,
                            &s,
                            &supplier_url,
                            &queue_url,
                        )?),
                    };
                    out.push(Planned {
                        db,
                        setting,
                        switches,
                        plans,
                    });
                }
            }
            Ok(out)
        },
    )?;
    let mut record = new_record(req, &s);
    println!(
        "loadrig {} study order-entry: Ir 1..{} at {} tx/s per Ir, {} s a point, supplier emulator at {supplier_url}; into {}",
        env!("CARGO_PKG_VERSION"),
        s.ir_max,
        s.rate_per_ir,
        s.seconds,
        dir.display()
    );
    let mut table = LadderTable {
        baseline: SETTINGS[0].name.to_string(),
        p90_limit_ms: s.p90_limit_ms,
        abort_limit: s.abort_limit,
        columns: Vec::new(),
    };
    let mut complete = true;
    let mut valid = true;
    for planned in columns {
        let column = run_column(planned, &s, &dir, &supplier, &queue, &table, &mut complete)?;
        valid &= column.points.iter().all(|p| p.violations.is_empty());
        table.columns.push(column);
        record.table = StudyTable::Ladder(table.clone());
        write_record(&record, &dir)?;
    }
    let experiment = match complete && s.experiment {
        true => experiment(&dbs, &table, &s, &dir, &supplier_url, &queue_url)?,
        false => None,
    };
    let code = super::finish(&mut record, &dir, complete)?;
    if let Some(e) = &experiment {
        print!("\n{}", order_entry_experiment::render(e, &dir));
    }
    if complete && !valid {
        eprintln!("order-entry: an invariant did not hold (INVALID in the table): see study.json");
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

/// Each fix's share: the factorial experiment on MariaDB at the Ir where out of the box
/// stopped (or `experiment_ir`, else `ir_max`), when MariaDB is there.
fn experiment(
    dbs: &[Database],
    table: &LadderTable,
    s: &Sizes,
    dir: &Path,
    supplier: &str,
    queue: &str,
) -> Result<Option<ExperimentRecord>> {
    let Some(db) = dbs.iter().find(|d| d.slug == "mysql") else {
        return Ok(None);
    };
    let Ok(url) = &db.url else {
        println!("experiment: not run: no MariaDB");
        return Ok(None);
    };
    let stopped = table
        .columns
        .iter()
        .find(|c| c.database == "MariaDB" && c.setting == SETTINGS[0].name)
        .filter(|c| c.stopped.is_some())
        .and_then(|c| c.points.last())
        .map(|p| p.ir);
    let ir = s.experiment_ir.or(stopped).unwrap_or(s.ir_max);
    let sizes = Sizes {
        ir_max: ir.next_power_of_two(),
        seconds: s.experiment_seconds,
        ..s.clone()
    };
    let workload = dir.join("order-entry.toml");
    let plans = column_plans(
        url,
        &switches(&SETTINGS[0], db),
        &workload,
        &sizes,
        supplier,
        queue,
    )?;
    let Some((ir, base)) = plans.into_iter().rfind(|(i, _)| *i <= ir) else {
        return Ok(None);
    };
    println!(
        "experiment: each fix on its own on MariaDB at Ir {ir}, {} s a run: {}",
        s.experiment_seconds,
        dir.join("experiment").display()
    );
    let design = order_entry_experiment::Design {
        quick: s.quick,
        replicates: s.replicates as usize,
    };
    order_entry_experiment::run(base, &design, dir)
}

fn new_record(req: &Request, s: &Sizes) -> StudyRecord {
    let sizes = BTreeMap::from([
        ("ir_max".to_string(), s.ir_max),
        ("seconds".to_string(), s.seconds),
        ("max_in_flight".to_string(), s.in_flight),
        ("response_ms".to_string(), s.response_ms),
        ("delay_ms".to_string(), s.delay_ms),
    ]);
    StudyRecord::start(
        "order-entry",
        req,
        sizes,
        format!(
            "BBops/min relative to out-of-box at Ir = 1, {} tx/s per Ir, open loop",
            s.rate_per_ir
        ),
        StudyTable::Ladder(LadderTable::default()),
    )
}

/// Run one column's ladder (or mark why it does not run).
fn run_column(
    planned: Planned<'_>,
    s: &Sizes,
    dir: &Path,
    supplier: &SupplierHandle,
    queue: &Result<String, String>,
    table: &LadderTable,
    complete: &mut bool,
) -> Result<LadderColumn> {
    let name = format!("{} {}", planned.db.name, planned.setting.name);
    let url = planned.db.url.as_ref().ok().map(|u| redact(u));
    let mut column = LadderColumn {
        backend: Backend::new(&name, url),
        database: planned.db.name.to_string(),
        setting: planned.setting.name.to_string(),
        switches: planned.switches,
        points: Vec::new(),
        stopped: None,
    };
    let plans = match (planned.plans, *complete) {
        (Err(why), _) => {
            column.backend = Backend::not_run(&name, &why);
            return Ok(column);
        }
        (_, false) => {
            column.backend = Backend::not_run(&name, "interrupted before it started");
            return Ok(column);
        }
        (Ok(plans), true) => plans,
    };
    println!("{name}: {}", column.backend.target.as_deref().unwrap_or(""));
    // Relative to out of the box at Ir = 1 on this database (this column's own when it is that).
    let baseline = table
        .columns
        .iter()
        .find(|c| c.database == column.database && c.setting == table.baseline)
        .and_then(|c| c.points.first())
        .map(|p| p.bbops_per_min);
    let scheme = plans[0].1.target.scheme().to_string();
    let url = planned.db.url.clone().unwrap_or_default();
    let queue = queue
        .as_ref()
        .ok()
        .filter(|_| planned.setting.po_sending == "queue");
    *complete &= with_target_type!(scheme.as_str(), T => {
        ladder_on::<T>(&mut column, &plans, &url, dir, s, supplier, queue, baseline)
    })?;
    if let Some(note) = &column.backend.note {
        println!("  {note}");
    }
    Ok(column)
}

/// Raise Ir on one target until a limit is missed; false when interrupted.
#[allow(clippy::too_many_arguments)]
fn ladder_on<T: Target>(
    column: &mut LadderColumn,
    plans: &[(u64, RunPlan)],
    url: &str,
    dir: &Path,
    s: &Sizes,
    supplier: &SupplierHandle,
    queue: Option<&String>,
    baseline: Option<f64>,
) -> Result<bool> {
    let Some(target) = super::open_clean::<T>(&mut column.backend, &plans[0].1) else {
        return Ok(true);
    };
    let mut baseline = baseline;
    for (ir, plan) in plans {
        supplier.reset();
        if let Some(url) = queue {
            empty_queue(url)?;
        }
        let kind = Kind::of(plan);
        let deadlocks_before = server_deadlocks(&*target, kind);
        let observer = observer(url, kind);
        let run = format!(
            "runs/{}-{}-ir{ir}.json",
            column.database.to_lowercase(),
            column.setting
        );
        let outcome = super::run_one(&target, plan, dir, &run, &mut column.backend)?;
        let observation = observer.map(Observer::finish);
        let r = match outcome {
            RunOutcome::Done(r) => r,
            RunOutcome::Failed(class, message) => {
                column.backend.fail(class, message);
                return Ok(true);
            }
            RunOutcome::Interrupted => return Ok(false),
        };
        let deadlocks_after = server_deadlocks(&*target, kind);
        let mut p = measure(&r, *ir, run, s);
        p.server_deadlocks = deadlocks_before
            .zip(deadlocks_after)
            .map(|(a, b)| b.saturating_sub(a));
        p.lock_waits_by_type = by_type(&r);
        if let Some((ms, from)) = observation.and_then(|o| lock_wait_ms(&o, kind)) {
            p.lock_wait_ms_per_tx = (p.transactions > 0).then(|| ms / p.transactions as f64);
            p.lock_waits_from = from.to_string();
        }
        check(
            &*target,
            &supplier.stats(),
            &column.switches,
            r.measured_s,
            &mut p,
        )?;
        let rate = p.bbops_per_min;
        let base = *baseline.get_or_insert(rate);
        p.relative = (base > 0.0).then(|| rate / base);
        println!(
            "  Ir {ir}: {:.0} BBops/min, {} of {} aborted{}{}",
            p.bbops_per_min,
            p.aborted,
            p.transactions,
            if p.missed.is_empty() {
                ""
            } else {
                ", p90 limit missed"
            },
            if p.violations.is_empty() {
                ""
            } else {
                ", INVALID"
            }
        );
        let stop = stop_reason(&p, s);
        column.points.push(p);
        if stop.is_some() {
            column.stopped = stop;
            break;
        }
    }
    Ok(true)
}

/// Why Ir goes no higher after this point, if it does not.
fn stop_reason(p: &LadderPoint, s: &Sizes) -> Option<String> {
    if !p.violations.is_empty() {
        Some(format!("invariants failed at Ir {}", p.ir))
    } else if !p.missed.is_empty() {
        Some(format!(
            "p90 of {} above {:.0} ms at Ir {}",
            p.missed.join(", "),
            s.p90_limit_ms,
            p.ir
        ))
    } else if p.abort_rate() > s.abort_limit {
        Some(format!(
            "{:.1} % of transactions aborted at Ir {} (limit {:.1} %)",
            p.abort_rate() * 100.0,
            p.ir,
            s.abort_limit * 100.0
        ))
    } else {
        None
    }
}

/// A point's figures from its run file (the work orders completed come from the database).
fn measure(r: &RunResult, ir: u64, run: String, s: &Sizes) -> LadderPoint {
    let customer_ok = r
        .operations
        .iter()
        .filter(|o| CUSTOMER_DOMAIN.contains(&o.name.as_str()))
        .map(|o| o.ok)
        .sum();
    let p90_ms: BTreeMap<String, f64> = r
        .operations
        .iter()
        .filter(|o| o.ok > 0)
        .map(|o| (o.name.clone(), o.latency.p90_ns as f64 / 1e6))
        .collect();
    let missed = p90_ms
        .iter()
        .filter(|(_, ms)| **ms > s.p90_limit_ms)
        .map(|(name, _)| name.clone())
        .collect();
    let mut violations: Vec<String> = r
        .verify
        .iter()
        .filter(|v| !v.passed)
        .map(|v| format!("{}: {}", v.name, v.values.join(" vs ")))
        .collect();
    if r.abandoned_clients > 0 {
        violations.push(format!("{} clients did not finish", r.abandoned_clients));
    }
    LadderPoint {
        ir,
        run,
        customer_ok,
        transactions: r.total.ok + r.total.errors,
        aborted: r.total.errors,
        aborts_by_class: r.total.errors_by_class.clone(),
        p90_ms,
        missed,
        violations,
        ..LadderPoint::default()
    }
}

/// Which server's deadlock counter to read.
#[derive(Clone, Copy)]
enum Kind {
    Postgres,
    Mysql,
    Other,
}

impl Kind {
    fn of(plan: &RunPlan) -> Kind {
        match plan.target.scheme() {
            "postgres" | "postgresql" => Kind::Postgres,
            "mysql" | "mariadb" => Kind::Mysql,
            _ => Kind::Other,
        }
    }
}

/// The server's own count of deadlocks, where it keeps one. PostgreSQL's backends report
/// theirs when they end, so it is read until two reads a moment apart agree.
fn server_deadlocks<T: Target>(target: &T, kind: Kind) -> Option<u64> {
    let query = match kind {
        Kind::Postgres => {
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        }
        Kind::Mysql => {
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_DEADLOCKS'"
        }
        Kind::Other => return None,
    };
    let read = || -> Option<u64> {
        first_values(target, &[query.to_string()]).ok()?[0]
            .parse()
            .ok()
    };
    let mut last = read()?;
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(300));
        let now = read()?;
        if now == last {
            return Some(now);
        }
        last = now;
    }
    Some(last)
}

/// The observer of the database under one point's run, its first reading taken; none for
/// SQLite (no server to observe) or when it could not start (said why).
fn observer(url: &str, kind: Kind) -> Option<Observer> {
    let mut config = ObserveConfig::new(url);
    match kind {
        Kind::Other => return None,
        // MariaDB's figure is Innodb_row_lock_time, which needs no session sample; the
        // run's own observer samples INNODB_TRX, and a second reader would share InnoDB's
        // cached copy of it with that one (docs/observe.md, "Lock waits by operation").
        Kind::Mysql => config.session_rate = 0.0,
        Kind::Postgres => {}
    }
    super::start_observer(config)
}

/// The time the run's transactions spent waiting for locks over the run, in milliseconds,
/// and where it comes from: MariaDB times its row-lock waits itself
/// (`Innodb_row_lock_time`, over the whole server); PostgreSQL's is estimated from the
/// active-session samples of the run's backends that waited on a lock (class `Lock`), each
/// standing for 1/rate of a second.
fn lock_wait_ms(o: &Observation, kind: Kind) -> Option<(f64, &'static str)> {
    let servers = o.intervals.iter().map(|i| &i.target);
    match kind {
        Kind::Mysql => {
            let key = "global_status.Innodb_row_lock_time";
            let times: Vec<f64> = servers
                .filter_map(|s| s.counters.get(key).copied())
                .collect();
            (!times.is_empty()).then(|| (times.iter().sum(), "Innodb_row_lock_time"))
        }
        Kind::Postgres => {
            let profiles: Vec<_> = servers.filter_map(|s| s.waits.as_ref()).collect();
            let lock_samples: u64 = profiles
                .iter()
                .flat_map(|w| &w.waits)
                .filter(|w| w.class == "Lock")
                .map(|w| w.samples)
                .sum();
            let ms = lock_samples as f64 * 1000.0 / DEFAULT_SESSION_RATE;
            (!profiles.is_empty()).then_some((ms, "active-session samples, class Lock"))
        }
        Kind::Other => None,
    }
}

/// The server's lock waits by transaction type, from the run's own observation.
fn by_type(r: &RunResult) -> BTreeMap<String, TypeLockWait> {
    r.server
        .iter()
        .flat_map(|s| &s.decomposition)
        .filter_map(|o| {
            let w = TypeLockWait {
                ms_per_tx: o.lock_wait_ms?,
                share: o.lock_wait_share.unwrap_or(0.0),
            };
            Some((o.op.clone(), w))
        })
        .collect()
}

/// The first row of each query (its columns joined by `,`), on one new session.
fn first_values<T: Target>(target: &T, queries: &[String]) -> Result<Vec<String>> {
    let check = VerifySpec {
        name: "order-entry".into(),
        queries: queries
            .iter()
            .enumerate()
            .map(|(id, q)| {
                NativeOp::Sql(SqlOp {
                    id,
                    query: q.clone(),
                    params: Vec::new(),
                })
            })
            .collect(),
    };
    Ok(engine::verify(target, &[check])?.pop().unwrap_or_default())
}

/// `(1, 2, 3)`, or `(-1)` for none (ids are positive).
fn id_list(ids: &[u64]) -> String {
    if ids.is_empty() {
        return "(-1)".into();
    }
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("({})", list.join(", "))
}

/// The database against the supplier: purchase orders sent and delivered on both sides.
/// Fills the point's work orders completed, BBops/min and violations.
fn check<T: Target>(
    target: &T,
    stats: &SupplierStats,
    switches: &BTreeMap<String, String>,
    measured_s: f64,
    p: &mut LadderPoint,
) -> Result<()> {
    let (received, delivered) = (id_list(&stats.received), id_list(&stats.delivered));
    let po = "SELECT COUNT(*) FROM loadrig_oe_po WHERE";
    let queries = [
        "SELECT COUNT(*) FROM loadrig_oe_workorder WHERE status = 3".to_string(),
        format!("{po} status IN ('sent', 'delivered')"),
        format!("{po} status IN ('sent', 'delivered') AND id IN {received}"),
        format!("{po} status = 'delivered'"),
        format!("{po} status = 'delivered' AND id IN {delivered}"),
        format!("{po} id IN {delivered}"),
    ];
    let n: Vec<u64> = first_values(target, &queries)?
        .iter()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let [completed, sent, sent_received, db_delivered, db_delivered_matched, known] = n[..] else {
        anyhow::bail!("the integrity queries gave {} values, not 6", n.len());
    };
    p.workorders_completed = completed;
    let minutes = measured_s / 60.0;
    p.bbops_per_min = if minutes > 0.0 {
        (p.customer_ok + completed) as f64 / minutes
    } else {
        0.0
    };
    p.supplier = SupplierCheck {
        received: stats.received.len() as u64,
        duplicates: stats.duplicates,
        committed_sent: sent,
        orphan_sends: (stats.received.len() as u64).saturating_sub(sent_received),
        delivered: stats.delivered.len() as u64,
        orphan_deliveries: (stats.delivered.len() as u64).saturating_sub(known),
    };
    if sent > sent_received {
        p.violations.push(format!(
            "{} purchase orders committed as sent never reached the supplier",
            sent - sent_received
        ));
    }
    if db_delivered > db_delivered_matched {
        p.violations.push(format!(
            "{} purchase orders delivered in the database were never delivered by the supplier",
            db_delivered - db_delivered_matched
        ));
    }
    // Sending inside the transaction (inline) makes orphans: the seed's problem 2, reported.
    // The fixes send only what was committed, so an orphan there is a failure.
    let inline = switches.get("po_sending").map(String::as_str) == Some("inline");
    let c = &p.supplier;
    if !inline && c.orphan_sends + c.orphan_deliveries + c.duplicates > 0 {
        p.violations.push(format!(
            "the supplier received {} purchase orders the database never committed as sent, {} twice, and delivered {} it never held",
            c.orphan_sends, c.duplicates, c.orphan_deliveries
        ));
    }
    Ok(())
}

/// Remove what an earlier run left on the queue (loadrig's own keys only).
fn empty_queue(url: &str) -> Result<()> {
    use crate::targets::redis::Redis;
    let target = Redis::from_url(&crate::targets::TargetUrl::parse(url)?, &Default::default())?;
    super::clean(&target).map_err(|e| anyhow::anyhow!("emptying the queue: {}", e.message))?;
    Ok(())
}
