//! Study `directory` (seed 002, OpenLDAP's back-sql with 100,000 entries): the seed's system
//! itself, slapd's back-sql over PostgreSQL through ODBC, first with the naive mapping
//! back-sql's SQL defeats, then with the seed's two changes one at a time (pre-upper-cased
//! columns; indexes) and together, beside slapd's own back-mdb. Every row is searched through
//! slapd over LDAP (the seed's search K times over one connection), so the rows compare like
//! with like. Columns: load time, searches per second, the SQL statements back-sql sent
//! PostgreSQL per search (counted by the server) and how PostgreSQL reached the people for
//! the statement that finds them (its plan); then the server's time per search: slapd's CPU
//! (from /proc, as the search run's observer read it), PostgreSQL's execution time of those
//! statements (pg_stat_statements) and its processes' CPU. Every row must return the entries
//! the generator says match; one that differs fails with class `protocol`.

mod backsql;
mod filter;
mod load;
mod statements;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Result;

use self::backsql::{Install, Mapping, Slapd};
use self::filter::Filter;
use self::load::Entries;
use super::{
    error_class, Backend, BackendRow, BackendState, BackendTable, Measure, MeasureCell, Request,
    Slot, StudyRecord, StudyTable,
};
use crate::engine;
use crate::error::InputError;
use crate::observe::{Observation, ObserveConfig, Observer, ProcessFigures, Role};
use crate::plan::RunPlan;
use crate::result::{self, RunResult, RunStatus};
use crate::runner::{self, View};
use crate::targets::ldap::Ldap;
use crate::targets::postgres::Postgres;
use crate::targets::{expand_env, redact, Target, TargetUrl};
use crate::vocab::{ErrorClass, OpError};
use crate::workload::import::ldif::{self, Person};

const MEASURES: [(&str, &str, &str); 7] = [
    ("load", "s", "time to load the entries, a measured load phase through the target's driver, not a run: back-mdb by LDAP adds on 8 connections at once; back-sql by SQL inserts into its tables, 1000 people a transaction on one connection"),
    ("searches/s", "ops/s", "the search issued K times over one LDAP connection to slapd (a run of one client)"),
    ("SQL/search", "statements", "SQL statements back-sql sent PostgreSQL per LDAP search, as pg_stat_statements counted them (read by loadrig's observer); those naming back-sql's tables: the BEGIN and ROLLBACK around each search name none and are left out"),
    ("plan", "words", "how PostgreSQL reaches the people in the statement back-sql sent to find them (its text from pg_stat_statements, EXPLAINed): index, or scan when no index condition names the filter's column"),
    ("slapd CPU", "µs", "slapd's CPU time (user and system, its every thread) per search, from /proc as the search run's observer read it over the run"),
    ("PG exec", "µs", "PostgreSQL's execution time per search for the statements back-sql sent (pg_stat_statements' total time of the statements counted in SQL/search)"),
    ("PG CPU", "µs", "PostgreSQL's CPU time per search: its whole process tree (the backend serving back-sql, the observer's and the background processes) from /proc over the search run's observation"),
];
const LOAD: usize = 0;
const SEARCH: usize = 1;
const SQL: usize = 2;
const PLAN: usize = 3;
const SLAPD_CPU: usize = 4;
const PG_EXEC: usize = 5;
const PG_CPU: usize = 6;

/// LDAP adds in flight while loading back-mdb (one connection each).
const IN_FLIGHT: u64 = 8;
/// The telephone numbers' seed: the same entries as `loadrig gen ldif` writes by default.
const SEED: u64 = 1;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mdb,
    BackSql(Mapping),
}

const fn sql(upper: bool, indexes: bool) -> Kind {
    Kind::BackSql(Mapping { upper, indexes })
}

/// A row: name, short name (`--only`), what it runs on.
const ROWS: [(&str, &str, Kind); 5] = [
    ("slapd back-mdb", "mdb", Kind::Mdb),
    ("back-sql naive", "backsql", sql(false, false)),
    ("back-sql upper-cased", "backsql-upper", sql(true, false)),
    ("back-sql indexed", "backsql-indexed", sql(false, true)),
    (
        "back-sql upper+indexed",
        "backsql-upper-indexed",
        sql(true, true),
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
            "entries" => entries = count(10, 10_000_000)?,
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

/// slapd (its URL with the bind DN, password and base) and the PostgreSQL behind back-sql.
fn slots() -> Vec<Slot> {
    vec![Slot::ldap(), Slot::postgres("pg")]
}

/// One row: what it is, the URL its searches go to (or why it does not run).
struct Row {
    name: &'static str,
    slug: &'static str,
    kind: Kind,
    url: Result<String, String>,
}

/// What the back-sql rows share: the installed pieces, the port their slapd listens on and
/// the PostgreSQL behind it.
struct BackSqlSetup {
    install: Install,
    port: u16,
    pg_url: String,
}

fn backsql_setup(servers: &BTreeMap<&str, String>) -> Result<BackSqlSetup, String> {
    let pg_url = servers
        .get("pg")
        .cloned()
        .ok_or("no URL of the PostgreSQL behind back-sql")?;
    let install = backsql::find_install()?;
    let port = backsql::free_port().map_err(|e| format!("no free port for slapd: {e}"))?;
    Ok(BackSqlSetup {
        install,
        port,
        pg_url,
    })
}

fn rows(
    req: &Request,
    servers: &BTreeMap<&str, String>,
    setup: &Result<BackSqlSetup, String>,
) -> Result<Vec<Row>, InputError> {
    let names: Vec<(&str, &str)> = ROWS.iter().map(|r| (r.0, r.1)).collect();
    let chosen = req.chosen(&names)?;
    Ok(ROWS
        .iter()
        .zip(chosen)
        .map(|(&(name, slug, kind), chosen)| {
            let url = match (kind, setup) {
                (Kind::Mdb, _) => servers
                    .get("ldap")
                    .cloned()
                    .ok_or_else(|| "no URL".to_string()),
                (Kind::BackSql(_), Ok(s)) => Ok(format!("ldap://127.0.0.1:{}", s.port)),
                (Kind::BackSql(_), Err(why)) => Err(why.clone()),
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
                url,
            }
        })
        .collect())
}

/// The base DN: the slapd URL's `base`, else dc=example,dc=com; the people go under
/// `ou=people,ou=loadrig,BASE` in every row (the ldap target's namespace on back-mdb, the
/// suffix of the study's back-sql slapd), so every row returns the same DNs.
fn base(servers: &BTreeMap<&str, String>) -> Result<String, InputError> {
    let base = match servers.get("ldap") {
        Some(url) => {
            let url = TargetUrl::parse(&expand_env(url)?)?;
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

/// The workload of the search runs: the one search, one operation per kind of slapd.
fn workload(people: &str, f: &Filter) -> String {
    let mut text = format!(
        "# The directory study (seed 002): the search each row issues K times over one LDAP connection.\n# `loadrig study directory` wrote this file; its runs used it with --op NAME --ops K.\nname = \"directory\"\ndescription = \"seed 002: the prefix search {}, on slapd's back-mdb and back-sql\"\ntarget = \"ldap://127.0.0.1:389\"\n\n[load]\nclients = 1\n",
        f.text.replace('"', "'"),
    );
    for op in ["mdb", "backsql"] {
        text.push_str(&format!(
            "\n[[op]]\nname = \"{op}\"\nldap.search = {{ base = {}, scope = \"sub\", filter = {}, attrs = [\"uid\"] }}\n",
            literal(people),
            literal(&f.text)
        ));
    }
    text
}

fn search_plan(
    row: &Row,
    url: &str,
    workload: &Path,
    dir: &Path,
    s: &Sizes,
) -> Result<RunPlan, InputError> {
    let op = match row.kind {
        Kind::Mdb => "mdb",
        Kind::BackSql(_) => "backsql",
    };
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
        // The search run observes slapd (its cn=Monitor and processes) whether or not LDAP
        // targets are observed by default (docs/observe.md).
        "--observe",
        "on",
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
    let servers = super::servers(&req.targets, &slots(), "ldap, postgres")?;
    let setup = backsql_setup(&servers);
    let rows = rows(req, &servers, &setup)?;
    let loadrig_dn = base(&servers)?;
    let people = ldif::people_dn(&loadrig_dn);
    let text = workload(&people, &s.filter);
    // Every plan is resolved before anything runs: bad input exits 2 with nothing loaded.
    let plans = super::prepare(&dir, "directory.toml", &text, &["backsql"], |w| {
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
    let study = Study {
        s: &s,
        dir: &dir,
        loadrig_dn: &loadrig_dn,
        people: &people,
        expected: &expected,
        setup: setup.as_ref().ok(),
    };
    let mut table = BackendTable {
        measures: Measure::all(&MEASURES),
        rows: Vec::new(),
    };
    let mut complete = true;
    let mut pg: Option<Arc<Postgres>> = None;
    for (row, plan) in rows.iter().zip(&plans) {
        let (Ok(url), Some(plan), true) = (&row.url, plan, complete) else {
            let why = match &row.url {
                Err(why) => why.clone(),
                Ok(_) => "interrupted before it started".into(),
            };
            table.rows.push(empty_row(Backend::not_run(row.name, &why)));
            continue;
        };
        println!("{}: {}", row.name, redact(url));
        let mut cells = empty_row(Backend::new(row.name, Some(redact(url))));
        complete &= match row.kind {
            Kind::Mdb => study.mdb(row, plan, &mut cells)?,
            Kind::BackSql(mapping) => study.backsql(row, mapping, plan, &mut pg, &mut cells)?,
        };
        if let Some(note) = &cells.backend.note {
            println!("  {}: {note}", row.name);
        }
        table.rows.push(cells);
        record.table = StudyTable::Backends(table.clone());
        super::write_record(&record, &dir)?;
    }
    // The study's teardown: back-sql's schema and the people's tables go.
    if let Some(pg) = pg {
        if let Err(e) = super::clean(&*pg) {
            eprintln!(
                "  could not drop back-sql's schema and tables: {}",
                e.message
            );
        }
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
            "{} entries loaded; the subtree search {} issued {} times over one LDAP connection",
            s.entries, s.filter.text, s.searches
        ),
        StudyTable::Backends(BackendTable::default()),
    )
}

fn empty_row(backend: Backend) -> BackendRow {
    BackendRow::new(backend, MEASURES.len())
}

/// How the search run went.
enum Searched {
    Ran(Box<RunResult>),
    Failed,
    Interrupted,
}

/// What explaining back-sql's statements needs.
struct Explain<'a> {
    pg: &'a Postgres,
    user_schema: &'a str,
    mapping: Mapping,
}

/// The observer of slapd and the PostgreSQL behind it, its first reading taken; none (and
/// said why) when it could not start.
fn observer(slapd: &Slapd, pg_url: &str) -> Option<Observer> {
    let mut config = ObserveConfig::new(slapd.url());
    config.behind = Some(pg_url.to_string());
    super::start_observer(config)
}

/// What every row shares.
struct Study<'a> {
    s: &'a Sizes,
    dir: &'a Path,
    /// `ou=loadrig,BASE`: back-sql's suffix.
    loadrig_dn: &'a str,
    people: &'a str,
    expected: &'a [String],
    setup: Option<&'a BackSqlSetup>,
}

fn cell(value: f64) -> MeasureCell {
    MeasureCell {
        value: Some(value),
        ..MeasureCell::default()
    }
}

impl Study<'_> {
    fn entries<'b>(&'b self, label: &'b str) -> Entries<'b> {
        Entries {
            count: self.s.entries,
            people: self.people,
            seed: SEED,
            label,
        }
    }

    /// back-mdb on the services' slapd: clean, load by LDAP adds, check the entries found,
    /// then the search run. False when interrupted.
    fn mdb(&self, row: &Row, plan: &RunPlan, cells: &mut BackendRow) -> Result<bool> {
        let Some(target) = super::open_clean::<Ldap>(&mut cells.backend, plan) else {
            return Ok(true);
        };
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            cells.backend.state = BackendState::Interrupted;
            return Ok(false);
        }
        let loaded =
            load::ldap_load(&*target, &self.entries(row.name), IN_FLIGHT).and_then(|seconds| {
                cells.cells[LOAD] = cell(seconds);
                load::ldap_found(&plan.target.parsed, self.people, &self.s.filter.text)
            });
        if let Err(e) = loaded.and_then(|found| self.check(found)) {
            cells.backend.fail(e.class, e.message);
            return Ok(true);
        }
        for c in [SQL, PG_EXEC, PG_CPU] {
            cells.cells[c] = MeasureCell::empty("back-mdb sends no SQL");
        }
        Ok(!matches!(
            self.search(target, row, plan, cells)?,
            Searched::Interrupted
        ))
    }

    /// One back-sql mapping: clean, create and load its tables, start its slapd, check the
    /// entries found, then the search run under observation, the statements counted and
    /// the one that finds the people explained. False when interrupted.
    fn backsql(
        &self,
        row: &Row,
        mapping: Mapping,
        plan: &RunPlan,
        pg: &mut Option<Arc<Postgres>>,
        cells: &mut BackendRow,
    ) -> Result<bool> {
        let setup = self.setup.expect("a back-sql row with a URL has its setup");
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            cells.backend.state = BackendState::Interrupted;
            return Ok(false);
        }
        let pg_url = match expand_env(&setup.pg_url) {
            Ok(u) => u,
            Err(e) => {
                cells.backend.fail(ErrorClass::Other, e.to_string());
                return Ok(true);
            }
        };
        let target = match pg.clone() {
            Some(t) => t,
            None => {
                let pg_plan = TargetUrl::parse(&pg_url)
                    .map_err(|e| OpError::new(ErrorClass::Other, e.to_string()))
                    .and_then(|u| {
                        Postgres::from_url(&u, &plan.workload.params)
                            .map_err(|e| OpError::new(ErrorClass::Other, e.to_string()))
                    });
                match pg_plan {
                    Ok(t) => pg.insert(Arc::new(t)).clone(),
                    Err(e) => {
                        cells.backend.fail(e.class, e.message);
                        return Ok(true);
                    }
                }
            }
        };
        cells.backend.state = BackendState::Ran;
        let started = self.start_backsql(row, mapping, &target, &pg_url, setup, cells);
        let (slapd, user_schema) = match started {
            Ok(s) => s,
            Err(e) => {
                cells.backend.fail(e.class, e.message);
                return Ok(true);
            }
        };
        let ldap = match Ldap::from_url(&plan.target.parsed, &plan.workload.params) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                cells.backend.fail(ErrorClass::Other, e.to_string());
                return Ok(true);
            }
        };
        let observer = observer(&slapd, &pg_url);
        let searched = self.search(ldap, row, plan, cells)?;
        let observation = observer.map(Observer::finish);
        drop(slapd);
        match searched {
            Searched::Interrupted => return Ok(false),
            Searched::Failed => return Ok(true),
            Searched::Ran(run) if cells.backend.state == BackendState::Ran => {
                let searches = run.operations.first().map_or(0, |op| op.ok + op.errors);
                let explain = Explain {
                    pg: &target,
                    user_schema: &user_schema,
                    mapping,
                };
                self.statements(row, &explain, observation, searches, cells)?;
            }
            Searched::Ran(_) => {}
        }
        Ok(true)
    }

    /// Clean, create and load back-sql's tables for `mapping`, start its slapd and check the
    /// entries it finds; the slapd and the PostgreSQL user's schema.
    fn start_backsql(
        &self,
        row: &Row,
        mapping: Mapping,
        pg: &Postgres,
        pg_url: &str,
        setup: &BackSqlSetup,
        cells: &mut BackendRow,
    ) -> Result<(Slapd, String), OpError> {
        super::clean(pg)?;
        let user_schema = load::user_schema(pg)?;
        let seconds = load::backsql_load(pg, mapping, &self.entries(row.name), self.loadrig_dn)?;
        cells.cells[LOAD] = cell(seconds);
        let slapd = Slapd::start(
            mapping,
            &backsql::Start {
                install: &setup.install,
                dir: &self.dir.join("backsql").join(row.slug),
                port: setup.port,
                suffix: self.loadrig_dn,
                pg_url,
                user_schema: &user_schema,
            },
        )?;
        let url = TargetUrl::parse(&slapd.url())
            .map_err(|e| OpError::new(ErrorClass::Other, e.to_string()))?;
        self.check(load::ldap_found(&url, self.people, &self.s.filter.text)?)?;
        Ok((slapd, user_schema))
    }

    /// The statements back-sql sent per search (the observation written beside the run
    /// file) and the plan of the one that finds the people.
    fn statements(
        &self,
        row: &Row,
        x: &Explain,
        observation: Option<Observation>,
        searches: u64,
        cells: &mut BackendRow,
    ) -> Result<()> {
        let mapping = x.mapping;
        let Some(obs) = observation else {
            cells.cells[SQL] = MeasureCell::empty("the observer did not start");
            return Ok(());
        };
        let file = format!("runs/{}-observe.json", row.slug);
        result::write_atomic(&self.dir.join(&file), &serde_json::to_vec_pretty(&obs)?)?;
        let sent = match statements::sent(&obs) {
            Ok(sent) => sent,
            Err(why) => {
                cells.cells[SQL] = MeasureCell::empty(why);
                return Ok(());
            }
        };
        let total: u64 = sent.iter().map(|s| s.calls).sum();
        let per_search = |value: f64| MeasureCell {
            value: Some(value / searches.max(1) as f64),
            run: Some(file.clone()),
            note: None,
            label: None,
        };
        cells.cells[SQL] = per_search(total as f64);
        cells.cells[PG_EXEC] = per_search(sent.iter().map(|s| s.time_ms * 1e3).sum());
        cells.cells[PG_CPU] = match behind_processes(&obs) {
            Some(p) => per_search(p.cpu_s() * 1e6),
            None => MeasureCell::empty(
                obs.unavailable
                    .iter()
                    .find(|u| u.server == Role::Behind && u.what == "processes")
                    .map_or_else(
                        || "PostgreSQL's processes were not read".into(),
                        |u| u.to_string(),
                    ),
            ),
        };
        let base_ndn = load::normal_dn(self.people);
        let search = statements::Search {
            mapping,
            base_ndn: &base_ndn,
            filter: &self.s.filter,
        };
        let mut text = format!(
            "SQL per search ({searches} searches, {total} statements), each statement's PostgreSQL execution time and calls per search:\n{}",
            statements::per_search_lines(&sent, searches)
        );
        let column = mapping.column(self.s.filter.column);
        let explained = [
            (
                "the people's candidates",
                statements::people_query(&sent),
                search.candidate_values(),
            ),
            (
                "the base lookup",
                statements::base_lookup(&sent),
                search.base_values(),
            ),
        ];
        for (k, (what, st, values)) in explained.into_iter().enumerate() {
            let Some(st) = st else {
                text.push_str(&format!("\n{what}: not among the statements sent\n"));
                continue;
            };
            let plan = statements::substitute(&st.text, &values).and_then(|q| {
                load::explain(x.pg, x.user_schema, &q)
                    .map(|(lines, json)| (q, lines, json))
                    .map_err(|e| e.message)
            });
            match plan {
                Ok((q, lines, json)) => {
                    text.push_str(&format!("\n{what}, explained:\n{q}\n{lines}\n"));
                    if k == 0 {
                        cells.cells[PLAN] = MeasureCell {
                            label: Some(statements::plan_kind(&json, &column).into()),
                            ..MeasureCell::default()
                        };
                    }
                }
                Err(why) => {
                    text.push_str(&format!("\n{what}: not explained: {why}\n{}\n", st.text))
                }
            }
        }
        cells.plan = Some(text);
        Ok(())
    }

    /// The entries found against the generator's: the same set, or a `protocol` failure.
    fn check(&self, mut found: Vec<String>) -> Result<(), OpError> {
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
        Err(OpError::new(
            ErrorClass::Protocol,
            format!(
                "{} returned {} entries, expected {} ({missing} missing, {extra} not matching)",
                self.s.filter.text,
                found.len(),
                self.expected.len()
            ),
        ))
    }

    /// The search run, its result file written and its cell filled.
    fn search<T: Target>(
        &self,
        target: Arc<T>,
        row: &Row,
        plan: &RunPlan,
        cells: &mut BackendRow,
    ) -> Result<Searched> {
        let run = format!("runs/{}-search.json", row.slug);
        let mut plan = plan.clone();
        plan.outputs.result = self.dir.join(&run);
        let r = match runner::execute_on(target, &plan, View::Quiet) {
            Err(e) => {
                cells.backend.fail(error_class(&e), format!("{e:#}"));
                return Ok(Searched::Failed);
            }
            Ok(r) => r,
        };
        result::write_atomic(&plan.outputs.result, &serde_json::to_vec_pretty(&r)?)?;
        cells.backend.runs.push(run.clone());
        if r.status == RunStatus::Interrupted {
            cells.backend.state = BackendState::Interrupted;
            return Ok(Searched::Interrupted);
        }
        match r.operations.first() {
            Some(op) if op.ok > 0 => {
                cells.cells[SLAPD_CPU] = server_cpu_cell(&r, op.ok + op.errors, &run);
                cells.cells[SEARCH] = MeasureCell {
                    value: Some(op.throughput_per_s),
                    run: Some(run),
                    note: (op.errors > 0)
                        .then(|| format!("{} of {} searches failed", op.errors, op.ok + op.errors)),
                    ..MeasureCell::default()
                };
            }
            _ => {
                let (class, message) = super::batch_failure(&r);
                cells.backend.fail(class, message);
            }
        }
        Ok(Searched::Ran(Box::new(r)))
    }
}

/// The server's CPU per search (µs) from the search run's own observation of slapd (its
/// measured part), or why there is none.
fn server_cpu_cell(r: &RunResult, searches: u64, run: &str) -> MeasureCell {
    let Some(server) = &r.server else {
        return MeasureCell::empty("the search run did not observe slapd");
    };
    match &server.measured.figures.processes {
        Some(p) => MeasureCell {
            value: Some(p.cpu_s() * 1e6 / searches.max(1) as f64),
            run: Some(run.to_string()),
            ..MeasureCell::default()
        },
        None => MeasureCell::empty(
            server
                .unavailable
                .iter()
                .find(|u| u.what == "processes")
                .map_or_else(
                    || "slapd's processes were not read".into(),
                    |u| u.to_string(),
                ),
        ),
    }
}

/// The processes of the server behind slapd, summed over the whole observation.
fn behind_processes(obs: &Observation) -> Option<ProcessFigures> {
    let mut sum: Option<ProcessFigures> = None;
    for p in obs
        .intervals
        .iter()
        .filter_map(|i| i.behind.as_ref()?.processes.as_ref())
    {
        match &mut sum {
            Some(s) => s.absorb(p),
            None => sum = Some(p.clone()),
        }
    }
    sum
}
