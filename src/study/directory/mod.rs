//! Study `directory` (seed 002, OpenLDAP back-sql with 100,000 entries): the same generated
//! people loaded into slapd (LDAP adds, many in flight) and into SQLite and PostgreSQL under
//! two schemas (back-sql's naive one and the seed's optimised one), then the seed's prefix
//! search issued K times over one connection on each. Rows: backend × schema; columns: load
//! time, entries per second, searches per second, and whether the SQL plan uses an index.
//! Every backend must return the entries the generator says match; one that differs fails
//! with class `protocol`.

mod filter;
mod load;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Result;

use self::filter::{Filter, Schema};
use self::load::Entries;
use super::{
    error_class, Backend, BackendRow, BackendState, BackendTable, Measure, MeasureCell, Request,
    Slot, StudyRecord, StudyTable,
};
use crate::engine;
use crate::error::InputError;
use crate::plan::RunPlan;
use crate::result::{self, RunStatus};
use crate::runner::{self, View};
use crate::targets::ldap::Ldap;
use crate::targets::postgres::Postgres;
use crate::targets::sqlite::Sqlite;
use crate::targets::{redact, Target};
use crate::vocab::ErrorClass;
use crate::workload::import::ldif::{self, Person};

const MEASURES: [(&str, &str, &str); 4] = [
    ("load", "s", "time to load the entries (a measured load phase through the target's driver, not a run: SQL in transactions of 1000 rows on one connection, LDAP adds on 8 connections at once)"),
    ("entries/s", "entries/s", "entries loaded per second"),
    ("searches/s", "ops/s", "the search issued K times over one connection (a run of one client)"),
    ("plan", "words", "how the SQL query reaches the rows: index or scan (EXPLAIN below)"),
];
const LOAD: usize = 0;
const RATE: usize = 1;
const SEARCH: usize = 2;
const PLAN: usize = 3;

/// LDAP adds in flight while loading (one connection each).
const IN_FLIGHT: u64 = 8;
/// The telephone numbers' seed: the same entries as `loadrig gen ldif` writes by default.
const SEED: u64 = 1;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Slapd,
    Sqlite,
    Postgres,
}

/// A row: name, short name, backend, schema (none for slapd).
const ROWS: [(&str, &str, Kind, Option<Schema>); 5] = [
    ("OpenLDAP slapd (mdb)", "slapd", Kind::Slapd, None),
    (
        "SQLite naive",
        "sqlite-naive",
        Kind::Sqlite,
        Some(Schema::Naive),
    ),
    (
        "SQLite optimised",
        "sqlite-opt",
        Kind::Sqlite,
        Some(Schema::Optimised),
    ),
    (
        "PostgreSQL naive",
        "pg-naive",
        Kind::Postgres,
        Some(Schema::Naive),
    ),
    (
        "PostgreSQL optimised",
        "pg-opt",
        Kind::Postgres,
        Some(Schema::Optimised),
    ),
];

struct Sizes {
    entries: u64,
    searches: u64,
    filter: Filter,
}

/// Seed 002's number, 210100, cut to one digit fewer than the largest entry number has: it
/// names one entry and the ten whose numbers continue it (11 entries at 1,000 and 100,000).
pub fn seed_filter(entries: u64) -> String {
    let digits = (entries - 1).to_string().len();
    let keep = digits.saturating_sub(1).clamp(1, 6);
    format!("(cn=fname{}*)", &"210100"[..keep])
}

fn sizes(req: &Request) -> Result<Sizes, InputError> {
    let (mut entries, mut searches) = if req.quick {
        (1000, 200)
    } else {
        (100_000, 4000)
    };
    let mut filter_text = None;
    for (name, value) in &req.sets {
        let count = |min: u64, max: u64| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    InputError::new(format!(
                        "--set {name}={value}: expected a whole number from {min} to {max}"
                    ))
                })
        };
        match name.as_str() {
            "entries" => entries = count(10, 100_000_000)?,
            "searches" => searches = count(1, 100_000_000)?,
            "filter" => filter_text = Some(value.clone()),
            other => {
                return Err(InputError::new(format!(
                    "--set {other}: the directory study has no such setting"
                ))
                .help(
                    "it takes --set entries=N, --set searches=K and --set filter='(cn=fname2101*)'",
                ))
            }
        }
    }
    let filter = filter::parse(&filter_text.unwrap_or_else(|| seed_filter(entries)))?;
    Ok(Sizes {
        entries,
        searches,
        filter,
    })
}

/// PostgreSQL (any URL) and slapd (its URL with the bind DN, password and base).
fn slots() -> Vec<Slot> {
    vec![Slot::postgres("pg"), Slot::ldap()]
}

/// One row: what it is, its URL (or why not), its search run's plan.
struct Row {
    name: &'static str,
    slug: &'static str,
    kind: Kind,
    schema: Option<Schema>,
    url: Result<String, String>,
}

fn rows(req: &Request, dir: &Path) -> Result<Vec<Row>, InputError> {
    let servers = super::servers(&req.targets, &slots(), "postgres, ldap")?;
    let names: Vec<(&str, &str)> = ROWS.iter().map(|r| (r.0, r.1)).collect();
    let chosen = req.chosen(&names)?;
    Ok(ROWS
        .iter()
        .zip(chosen)
        .map(|(&(name, slug, kind, schema), chosen)| {
            let url = match kind {
                Kind::Sqlite => Ok(format!("sqlite://{}/sqlite/directory.db", dir.display())),
                Kind::Postgres => servers
                    .get("pg")
                    .cloned()
                    .ok_or_else(|| "no URL".to_string()),
                Kind::Slapd => servers
                    .get("ldap")
                    .cloned()
                    .ok_or_else(|| "no URL".to_string()),
            };
            let url = if chosen {
                url
            } else {
                Err("not chosen (--only)".to_string())
            };
            Row {
                name,
                slug,
                kind,
                schema,
                url,
            }
        })
        .collect())
}

/// The base DN: the slapd URL's `base`, else dc=example,dc=com; the people go under
/// `ou=people,ou=loadrig,BASE` everywhere (the ldap target's namespace).
fn base(rows: &[Row]) -> Result<String, InputError> {
    let from_ldap = rows
        .iter()
        .filter(|r| r.kind == Kind::Slapd)
        .find_map(|r| r.url.as_ref().ok());
    let base = match from_ldap {
        Some(url) => {
            let url = crate::targets::TargetUrl::parse(&crate::targets::expand_env(url)?)?;
            url.options.get("base").cloned().unwrap_or_default()
        }
        None => String::new(),
    };
    let base = if base.is_empty() {
        "dc=example,dc=com".to_string()
    } else {
        base
    };
    Ok(format!("ou=loadrig,{}", ldif::check_base(&base)?))
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A template that stands for itself (braces doubled).
fn literal(s: &str) -> String {
    toml_str(&s.replace('{', "{{").replace('}', "}}"))
}

/// The workload of the search runs: one operation per backend kind.
fn workload(people: &str, f: &Filter) -> Result<String, InputError> {
    let mut text = format!(
        "# The directory study (seed 002): the search each row issues K times over one connection.\n# `loadrig study directory` wrote this file; its runs used it with --op NAME --ops K.\nname = \"directory\"\ndescription = \"seed 002: the prefix search {}, on slapd and on SQL under two schemas\"\ntarget = \"sqlite://./loadrig-directory.db\"\n\n[load]\nclients = 1\n\n[[op]]\nname = \"ldap\"\nldap.search = {{ base = {}, scope = \"sub\", filter = {}, attrs = [\"uid\"] }}\n",
        f.text.replace('"', "'"),
        literal(people),
        literal(&f.text)
    );
    for schema in [Schema::Naive, Schema::Optimised] {
        let (query, args) = f.sql(schema, people)?;
        let args: Vec<String> = args.iter().map(|a| literal(a)).collect();
        text.push_str(&format!(
            "\n[[op]]\nname = \"{}\"\nsql = {{ query = {}, params = [{}] }}\n",
            schema.name(),
            toml_str(&query),
            args.join(", ")
        ));
    }
    Ok(text)
}

fn search_plan(
    row: &Row,
    url: &str,
    workload: &Path,
    dir: &Path,
    s: &Sizes,
) -> Result<RunPlan, InputError> {
    let op = row.schema.map_or("ldap", Schema::name);
    let flags: Vec<String> = [
        "--op",
        op,
        "--ops",
        &s.searches.to_string(),
        "--clients",
        "1",
        "--skip-load",
        "--seed",
        "1",
        "-o",
        &dir.join("runs/plan.json").to_string_lossy(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    super::plan_with_flags(workload, url, &flags)
}

pub fn run(req: &Request) -> Result<ExitCode> {
    let s = sizes(req)?;
    let dir = super::out_dir(req);
    let rows = rows(req, &dir)?;
    let people = ldif::people_dn(&base(&rows)?);
    let text = workload(&people, &s.filter)?;
    // Every plan is resolved before anything runs: bad input exits 2 with nothing loaded.
    let plans = super::prepare(&dir, "directory.toml", &text, &["sqlite"], |w| {
        rows.iter()
            .map(|r| {
                r.url
                    .as_ref()
                    .ok()
                    .map(|u| search_plan(r, u, w, &dir, &s))
                    .transpose()
            })
            .collect::<Result<Vec<_>, InputError>>()
    })?;
    let expected: Vec<String> = (0..s.entries)
        .map(|i| Person::new(i, &people, SEED))
        .filter(|p| s.filter.matches(p))
        .map(|p| load::normal_dn(&p.dn))
        .collect();
    let mut record = new_record(req, &s);
    println!(
        "loadrig {} study directory: {} entries, {} × {} under {people}, {} matching; into {}",
        env!("CARGO_PKG_VERSION"),
        s.entries,
        s.searches,
        s.filter.text,
        expected.len(),
        dir.display()
    );
    let mut table = new_table(&rows);
    let study = Study {
        s: &s,
        dir: &dir,
        people: &people,
        expected: &expected,
    };
    let mut complete = true;
    for kind in [Kind::Slapd, Kind::Sqlite, Kind::Postgres] {
        complete &= study.kind(kind, &rows, &plans, &mut table, complete)?;
        record.table = StudyTable::Backends(table.clone());
        super::write_record(&record, &dir)?;
    }
    record.table = StudyTable::Backends(table);
    super::finish(&mut record, &dir, complete)
}

fn new_record(req: &Request, s: &Sizes) -> StudyRecord {
    StudyRecord::start(
        "directory",
        req,
        BTreeMap::from([
            ("entries".into(), s.entries),
            ("searches".into(), s.searches),
        ]),
        format!(
            "{} entries loaded; the subtree search {} issued {} times over one connection",
            s.entries, s.filter.text, s.searches
        ),
        StudyTable::Backends(BackendTable::default()),
    )
}

fn new_table(rows: &[Row]) -> BackendTable {
    BackendTable {
        measures: Measure::all(&MEASURES),
        rows: rows
            .iter()
            .map(|r| empty_row(Backend::new(r.name, None)))
            .collect(),
    }
}

fn empty_row(backend: Backend) -> BackendRow {
    BackendRow::new(backend, MEASURES.len())
}

/// What every backend shares.
struct Study<'a> {
    s: &'a Sizes,
    dir: &'a Path,
    people: &'a str,
    expected: &'a [String],
}

impl Study<'_> {
    /// The rows of one kind of backend (`go`: nothing was interrupted before); false when
    /// interrupted.
    fn kind(
        &self,
        kind: Kind,
        rows: &[Row],
        plans: &[Option<RunPlan>],
        table: &mut BackendTable,
        go: bool,
    ) -> Result<bool> {
        let idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].kind == kind).collect();
        for &i in &idx {
            table.rows[i] = match (&rows[i].url, go) {
                (Ok(url), true) => empty_row(Backend::new(rows[i].name, Some(redact(url)))),
                (Err(why), _) => empty_row(Backend::not_run(rows[i].name, why)),
                (Ok(_), false) => empty_row(Backend::not_run(
                    rows[i].name,
                    "interrupted before it started",
                )),
            };
        }
        let live: Vec<usize> = idx
            .into_iter()
            .filter(|&i| rows[i].url.is_ok() && go)
            .collect();
        if live.is_empty() {
            return Ok(go);
        }
        let group: Vec<(&Row, &RunPlan)> = live
            .iter()
            .map(|&i| {
                (
                    &rows[i],
                    plans[i].as_ref().expect("a plan per row with a URL"),
                )
            })
            .collect();
        let mut out: Vec<BackendRow> = live.iter().map(|&i| table.rows[i].clone()).collect();
        let complete = match kind {
            Kind::Slapd => self.backend::<Ldap>(&group, &mut out)?,
            Kind::Sqlite => self.backend::<Sqlite>(&group, &mut out)?,
            Kind::Postgres => self.backend::<Postgres>(&group, &mut out)?,
        };
        for (&i, row) in live.iter().zip(out) {
            if let Some(note) = &row.backend.note {
                println!("  {}: {note}", row.backend.name);
            }
            table.rows[i] = row;
        }
        Ok(complete)
    }

    /// One backend's rows (slapd's one, or an SQL server's two schemas) on one target:
    /// clean, load, check the entries found, EXPLAIN, then the search run. False when
    /// interrupted.
    fn backend<T: Target>(
        &self,
        group: &[(&Row, &RunPlan)],
        out: &mut [BackendRow],
    ) -> Result<bool> {
        let first = group[0].1;
        let target = match T::from_url(&first.target.parsed, &first.workload.params) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                out.iter_mut()
                    .for_each(|r| r.backend.fail(ErrorClass::Other, e.to_string()));
                return Ok(true);
            }
        };
        if let Err(e) = super::clean(&*target) {
            out.iter_mut()
                .for_each(|r| r.backend.fail(e.class, e.message.clone()));
            return Ok(true);
        }
        for ((row, plan), cells) in group.iter().zip(out.iter_mut()) {
            if engine::INTERRUPTED.load(Ordering::SeqCst) {
                cells.backend.state = BackendState::Interrupted;
                return Ok(false);
            }
            println!("{}: {}", row.name, redact(&plan.target.url));
            cells.backend.state = BackendState::Ran;
            if let Err(e) = self.load_and_check(&*target, row, plan, cells) {
                cells.backend.fail(e.class, e.message);
                continue;
            }
            if !self.search(Arc::clone(&target), row, plan, cells)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn entries<'b>(&'b self, label: &'b str) -> Entries<'b> {
        Entries {
            count: self.s.entries,
            people: self.people,
            seed: SEED,
            label,
        }
    }

    /// Load, then check that the search finds exactly the expected entries, then (SQL) the
    /// plan.
    fn load_and_check<T: Target>(
        &self,
        target: &T,
        row: &Row,
        plan: &RunPlan,
        cells: &mut BackendRow,
    ) -> Result<(), crate::vocab::OpError> {
        let e = self.entries(row.name);
        let postgres = row.kind == Kind::Postgres;
        let (seconds, found) = match row.schema {
            None => (
                load::ldap_load(target, &e, IN_FLIGHT)?,
                load::ldap_found(&plan.target.parsed, self.people, &self.s.filter.text)?,
            ),
            Some(schema) => {
                let seconds = load::sql_load(target, schema, postgres, &e)?;
                let (query, args) =
                    self.s.filter.sql(schema, self.people).map_err(|e| {
                        crate::vocab::OpError::new(ErrorClass::Other, e.to_string())
                    })?;
                let found = load::sql_found(target, &query, &args, postgres)?;
                let explained = if postgres {
                    load::postgres_plan(target, &query, &args)?
                } else {
                    load::sqlite_plan(&self.dir.join("sqlite/directory.db"), &query, &args)?
                };
                cells.cells[PLAN] = MeasureCell {
                    label: Some(load::plan_kind(&explained).to_string()),
                    ..MeasureCell::default()
                };
                cells.plan = Some(format!("{query}\n{explained}"));
                (seconds, found)
            }
        };
        cells.cells[LOAD] = MeasureCell {
            value: Some(seconds),
            ..MeasureCell::default()
        };
        cells.cells[RATE] = MeasureCell {
            value: Some(self.s.entries as f64 / seconds.max(1e-9)),
            ..MeasureCell::default()
        };
        self.check(found)
    }

    /// The entries found against the generator's: the same set, or a `protocol` failure.
    fn check(&self, mut found: Vec<String>) -> Result<(), crate::vocab::OpError> {
        found.sort();
        if found == self.expected {
            return Ok(());
        }
        let missing = self
            .expected
            .iter()
            .filter(|d| found.binary_search(d).is_err())
            .count();
        let extra = found
            .iter()
            .filter(|d| self.expected.binary_search(d).is_err())
            .count();
        Err(crate::vocab::OpError::new(
            ErrorClass::Protocol,
            format!(
                "{} returned {} entries, expected {} ({missing} missing, {extra} not matching)",
                self.s.filter.text,
                found.len(),
                self.expected.len()
            ),
        ))
    }

    /// The search run; false when interrupted.
    fn search<T: Target>(
        &self,
        target: Arc<T>,
        row: &Row,
        plan: &RunPlan,
        cells: &mut BackendRow,
    ) -> Result<bool> {
        let run = format!("runs/{}-search.json", row.slug);
        let mut plan = plan.clone();
        plan.outputs.result = self.dir.join(&run);
        match runner::execute_on(target, &plan, View::Quiet) {
            Err(e) => cells.backend.fail(error_class(&e), format!("{e:#}")),
            Ok(r) => {
                result::write_atomic(&plan.outputs.result, &serde_json::to_vec_pretty(&r)?)?;
                cells.backend.runs.push(run.clone());
                if r.status == RunStatus::Interrupted {
                    cells.backend.state = BackendState::Interrupted;
                    return Ok(false);
                }
                match r.operations.first() {
                    Some(op) if op.ok > 0 => {
                        cells.cells[SEARCH] = MeasureCell {
                            value: Some(op.throughput_per_s),
                            run: Some(run),
                            note: (op.errors > 0).then(|| {
                                format!("{} of {} searches failed", op.errors, op.ok + op.errors)
                            }),
                            ..MeasureCell::default()
                        };
                    }
                    _ => {
                        let (class, message) = super::batch_failure(&r);
                        cells.backend.fail(class, message);
                    }
                }
            }
        }
        Ok(true)
    }
}
