//! Studies: a seed's experiment as one command (`loadrig study NAME`). A study is a workload
//! file plus a little code on the shared engine: every run is a [`RunPlan`] executed by
//! [`crate::runner`], written as a normal result file into the study's folder; the study
//! adds the table the seed printed (`study.json`, the console) and a report with its plots.
//!
//! This file holds what every study shares: the registry, the server backends (from
//! `--target` or the environment `scripts/services.sh env` prints), the study record and
//! the running of one growth column on one target.

mod backend_table;
mod connections;
mod directory;
mod documents;
mod growth_table;
mod ladder_table;
mod order_entry;
mod order_entry_experiment;
mod report;
mod session_stores;
mod table;
pub mod unindexed_fs;

pub use backend_table::{BackendRow, BackendTable, IntervalCounts, Measure, MeasureCell};
pub use growth_table::{Bound, Cell, Column, GrowthTable};
pub use ladder_table::{LadderColumn, LadderPoint, LadderTable, SupplierCheck, TypeLockWait};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::InputError;
use clap::Parser;

use crate::cli::RunArgs;
use crate::engine;
use crate::observe::{ObserveConfig, Observer};
use crate::plan::{self, RunPlan};
use crate::result::{self, RunResult, RunStatus};
use crate::runner::{self, View};
use crate::targets::{self, Target, TargetUrl};
use crate::vocab::{ErrorClass, OpError};

/// The studies: name, what it reproduces, what it needs.
pub const STUDIES: &[(&str, &str, &str)] = &[
    (
        "connections",
        "seed 000: connect, authenticate, create and fetch, one client, operations counted in each of K intervals of T, on every backend",
        "embedded: sqlite; servers: postgres with SCRAM, md5 and trust, mysql with a native password and ed25519, redis with and without a password, ldap (bound and anonymous), each login also over TLS (verified against LOADRIG_CA_FILE; Redis's from rediss:// URLs), from --target or LOADRIG_PG_URL, LOADRIG_PG_MD5_URL, LOADRIG_PG_TRUST_URL, LOADRIG_MYSQL_URL, LOADRIG_MYSQL_ED25519_URL, LOADRIG_REDIS_URL, LOADRIG_REDIS_TLS_URL, LOADRIG_REDIS_OPEN_URL, LOADRIG_REDIS_OPEN_TLS_URL, LOADRIG_LDAP_URL (with LOADRIG_LDAP_BIND_DN, _PASSWORD, _BASE)",
    ),
    (
        "directory",
        "seed 002: a directory of people loaded into slapd (LDAP adds) and into SQLite and PostgreSQL under back-sql's naive schema and the optimised one, then the prefix search (cn=fname2101*) K times over one connection on each",
        "embedded: sqlite; servers: ldap, postgres from --target or LOADRIG_LDAP_URL (with LOADRIG_LDAP_BIND_DN, _PASSWORD, _BASE), LOADRIG_PG_URL",
    ),
    (
        "documents",
        "seed 001: T clients each create W documents with an attachment, then every document is found and its attachment read back and checked; with a real quantised delay: Nagle's algorithm meeting the server's delayed ACK (WebDAV, nodelay=off) against TCP_NODELAY",
        "embedded: files on tmpfs and on disk, sqlite; servers: postgres and http (WebDAV) from --target or LOADRIG_PG_URL, LOADRIG_HTTP_URL",
    ),
    (
        "order-entry",
        "seed 004: the ECperf-like order-entry mix driven open loop at injection rate Ir = 1, 2, 4, ... out of the box and with the seed's fixes (an outbox agent, a queue; chopping, sorted locks, read committed) until a p90 limit is missed; BBops/min relative to out of the box at Ir = 1, aborts by class, the database checked against the supplier emulator",
        "embedded: sqlite; servers: postgres, mysql and redis (the queue) from --target or LOADRIG_PG_URL, LOADRIG_MYSQL_URL, LOADRIG_REDIS_URL",
    ),
    (
    "session-stores",
    "seed 003: session records added in batches of 1000 up to 50,000, each batch timed against the records already stored, on every store and on a filesystem without directory indexing",
    "embedded: fs, sqlite (and dbm when built in), fs on an ext4 image without directory indexing (root, or --fs-root PATH); servers: postgres, mysql, redis from --target or LOADRIG_PG_URL, LOADRIG_MYSQL_URL, LOADRIG_REDIS_URL",
    ),
];

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub name: String,
    pub targets: Vec<String>,
    pub quick: bool,
    pub out: Option<PathBuf>,
    pub sets: Vec<(String, String)>,
    /// `--only`: the columns to run (name or short name, any case); empty: all.
    pub only: Vec<String>,
    /// `--fs-root`: the session-stores study's unindexed-filesystem columns store here
    /// instead of on the image it mounts.
    pub fs_root: Option<PathBuf>,
}

impl Request {
    /// Check `--only` against the study's columns (name, short name) and say which of them
    /// it leaves out: every unknown name is an input error.
    pub fn chosen(&self, columns: &[(&str, &str)]) -> Result<Vec<bool>, InputError> {
        let matches = |want: &str, (name, slug): &(&str, &str)| {
            want.eq_ignore_ascii_case(name) || want.eq_ignore_ascii_case(slug)
        };
        for want in &self.only {
            if !columns.iter().any(|c| matches(want.trim(), c)) {
                return Err(InputError::new(format!(
                    "--only {want}: the {} study has no such column",
                    self.name
                ))
                .help(format!(
                    "its columns: {}",
                    columns
                        .iter()
                        .map(|(name, slug)| format!("{name} ({slug})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        Ok(columns
            .iter()
            .map(|c| self.only.is_empty() || self.only.iter().any(|w| matches(w.trim(), c)))
            .collect())
    }
    /// Mark the rows `--only` leaves out "not chosen (--only)"; an unknown name is an input
    /// error. `key` gives a row's (name, short name), `url` its URL or why it does not run.
    pub fn leave_out_unchosen<R>(
        &self,
        rows: &mut [R],
        key: impl Fn(&R) -> (&'static str, &'static str),
        url: impl Fn(&mut R) -> &mut Result<String, String>,
    ) -> Result<(), InputError> {
        let names: Vec<(&str, &str)> = rows.iter().map(&key).collect();
        for (row, chosen) in rows.iter_mut().zip(self.chosen(&names)?) {
            if !chosen {
                *url(row) = Err("not chosen (--only)".to_string());
            }
        }
        Ok(())
    }
}

/// `loadrig study --list`.
pub fn list() -> String {
    let mut s =
        String::from("Studies (loadrig study NAME [--quick] [--target URL ...] [-o DIR]):\n");
    for (name, what, needs) in STUDIES {
        s.push_str(&format!(
            "  {name:<16} {what}\n  {:<16} needs: {needs}\n",
            ""
        ));
    }
    s
}

/// Run the study `req.name`: every input is checked before the first run.
pub fn run(req: &Request) -> Result<ExitCode> {
    if req.fs_root.is_some() && req.name != "session-stores" {
        return Err(InputError::new(format!(
            "--fs-root: the {} study stores no files on a filesystem of your choice",
            req.name
        ))
        .help("--fs-root is the session-stores study's")
        .into());
    }
    match req.name.as_str() {
        "connections" => connections::run(req),
        "directory" => directory::run(req),
        "documents" => documents::run(req),
        "order-entry" => order_entry::run(req),
        "session-stores" => session_stores::run(req),
        other => Err(InputError::new(format!("unknown study '{other}'"))
            .help(format!(
                "known studies: {} (loadrig study --list)",
                STUDIES.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            ))
            .into()),
    }
}

/// A server backend a study can use: its key, its URL from the environment that
/// `scripts/services.sh env` prints (if set), and which `--target` URLs are meant for it.
pub struct Slot {
    pub key: &'static str,
    pub from_env: Option<String>,
    pub takes: fn(&TargetUrl) -> bool,
}

impl Slot {
    /// The slot of one kind of server: URLs of these schemes, from the variable `var`.
    pub fn new(key: &'static str, var: &str, takes: fn(&TargetUrl) -> bool) -> Slot {
        Slot {
            key,
            from_env: std::env::var(var).ok().filter(|v| !v.is_empty()),
            takes,
        }
    }
    /// The throwaway PostgreSQL: `LOADRIG_PG_URL`; any postgres:// URL.
    pub fn postgres(key: &'static str) -> Slot {
        Slot::new(key, "LOADRIG_PG_URL", |u| {
            matches!(u.scheme.as_str(), "postgres" | "postgresql")
        })
    }
    /// The throwaway MariaDB: `LOADRIG_MYSQL_URL`; any mysql:// or mariadb:// URL.
    pub fn mysql() -> Slot {
        Slot::new("mysql", "LOADRIG_MYSQL_URL", |u| {
            matches!(u.scheme.as_str(), "mysql" | "mariadb")
        })
    }
    /// The throwaway Redis with a password: `LOADRIG_REDIS_URL`; any redis:// URL.
    pub fn redis() -> Slot {
        Slot::new("redis", "LOADRIG_REDIS_URL", |u| u.scheme == "redis")
    }
    /// The throwaway slapd: `LOADRIG_LDAP_URL` with its bind DN, base and the password by
    /// reference (`${LOADRIG_LDAP_PASSWORD}`, read when the target is made); any ldap:// URL.
    pub fn ldap() -> Slot {
        let from_env = std::env::var("LOADRIG_LDAP_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .map(|url| {
                let var = |v: &str| std::env::var(v).unwrap_or_default();
                format!(
                    "{url}?bind_dn={}&password=${{LOADRIG_LDAP_PASSWORD}}&base={}",
                    var("LOADRIG_LDAP_BIND_DN"),
                    var("LOADRIG_LDAP_BASE")
                )
            });
        Slot {
            key: "ldap",
            from_env,
            takes: |u| u.scheme == "ldap",
        }
    }
}

/// Whether the URL names a password (in its authority or as a `password` option).
pub fn has_password(url: &TargetUrl) -> bool {
    let in_authority = url
        .location
        .rsplit_once('@')
        .and_then(|(login, _)| login.split_once(':'))
        .is_some_and(|(_, pw)| !pw.is_empty());
    in_authority || url.options.get("password").is_some_and(|p| !p.is_empty())
}

/// The server URLs a study may use, by slot key: `--target` first (the first slot that
/// takes it), then the environment. A `--target` no slot takes is an input error.
pub fn servers(
    targets: &[String],
    slots: &[Slot],
    kinds: &str,
) -> Result<BTreeMap<&'static str, String>, InputError> {
    let mut out: BTreeMap<&'static str, String> = slots
        .iter()
        .filter_map(|s| s.from_env.clone().map(|url| (s.key, url)))
        .collect();
    for t in targets {
        let expanded = targets::expand_env(t)?;
        let url = targets::TargetUrl::parse(&expanded)?;
        let Some(slot) = slots.iter().find(|s| (s.takes)(&url)) else {
            return Err(InputError::new(format!(
                "--target {}: this study cannot use {}:// targets",
                targets::redact(t),
                url.scheme
            ))
            .help(format!("it takes {kinds}")));
        };
        out.insert(slot.key, expanded);
    }
    Ok(out)
}

/// A run's plan, through the same flags `loadrig run` takes: the workload, the target and
/// `flags`. A URL the flags refuse is an input error naming the (redacted) target.
pub fn plan_with_flags(
    workload: &Path,
    url: &str,
    flags: &[String],
) -> Result<RunPlan, InputError> {
    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        run: RunArgs,
    }
    let mut args: Vec<String> = ["loadrig", &workload.to_string_lossy(), "--target", url]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(flags.iter().cloned());
    let parsed = Flags::try_parse_from(&args)
        .map_err(|e| InputError::new(format!("target {}: {}", targets::redact(url), e.kind())))?;
    plan::resolve(&parsed.run)
}

/// Make the study's folder (`runs/` and `subdirs` in it) and its workload file, then resolve
/// the plans against that file. When resolving fails, remove what this made (only empty
/// folders in a folder that was there before), so bad input leaves nothing behind.
pub fn prepare<P>(
    dir: &Path,
    file: &str,
    text: &str,
    subdirs: &[&str],
    resolve: impl FnOnce(&Path) -> Result<P, InputError>,
) -> Result<P> {
    let existed = dir.exists();
    for sub in std::iter::once(&"runs").chain(subdirs) {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let workload = dir.join(file);
    std::fs::write(&workload, text)?;
    resolve(&workload).map_err(|e| {
        if existed {
            let _ = std::fs::remove_file(&workload);
            for sub in std::iter::once(&"runs").chain(subdirs) {
                let _ = std::fs::remove_dir(dir.join(sub));
            }
        } else {
            let _ = std::fs::remove_dir_all(dir);
        }
        e.into()
    })
}

/// Whether this build has a target for `scheme` (a target another branch adds appears here
/// once merged).
pub fn has_scheme(scheme: &str) -> bool {
    targets::SCHEMES
        .iter()
        .any(|(s, _)| s.split("://").next() == Some(scheme))
}

/// Where a study stands; Ctrl-C leaves it `interrupted`, with the columns that finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StudyStatus {
    Running,
    Complete,
    Interrupted,
}

impl StudyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StudyStatus::Running => "running",
            StudyStatus::Complete => "complete",
            StudyStatus::Interrupted => "interrupted",
        }
    }
}

/// What became of one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackendState {
    NotRun,
    Ran,
    Failed,
    Interrupted,
}

impl BackendState {
    /// In words: `not run`, `ran`, `failed`, `interrupted`.
    pub fn words(self) -> &'static str {
        match self {
            BackendState::NotRun => "not run",
            BackendState::Ran => "ran",
            BackendState::Failed => "failed",
            BackendState::Interrupted => "interrupted",
        }
    }
}

/// The version of the study file this build writes.
pub const SCHEMA_VERSION: u32 = 2;

/// The JSON Schema of the study file (committed as docs/schema/study.schema.json).
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(StudyRecord)
}

/// The study file, `DIR/study.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StudyRecord {
    /// The study file's contract version (docs/schema/study.schema.json); it changes when a
    /// field changes meaning or goes away. 2: the table became `table`, with its `kind`.
    pub schema_version: u32,
    pub study: String,
    pub loadrig_version: String,
    pub status: StudyStatus,
    pub quick: bool,
    /// The study's sizes (`batch`, `records_max`; `samples`, `interval_ms`, `records`).
    pub sizes: BTreeMap<String, u64>,
    /// The workload file every run used, in the study's folder.
    pub workload: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// What a cell holds.
    pub unit: String,
    pub table: StudyTable,
}

impl StudyRecord {
    /// A study that is starting: status running, started now.
    pub fn start(
        study: &str,
        req: &Request,
        sizes: BTreeMap<String, u64>,
        unit: String,
        table: StudyTable,
    ) -> StudyRecord {
        StudyRecord {
            schema_version: SCHEMA_VERSION,
            study: study.into(),
            loadrig_version: env!("CARGO_PKG_VERSION").into(),
            status: StudyStatus::Running,
            quick: req.quick,
            sizes,
            workload: format!("{study}.toml"),
            started_at: now(),
            ended_at: None,
            unit,
            table,
        }
    }
}

/// The study's table, in the seed's shape.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StudyTable {
    /// Seed 003's: a row per number of records stored, a column per backend.
    Growth(GrowthTable),
    /// Seed 000's: a row per backend, a column per measure.
    Backends(BackendTable),
    /// Seed 004's: per database and setting, a row per injection rate.
    Ladder(LadderTable),
}

impl StudyTable {
    pub fn backends(&self) -> Vec<&Backend> {
        match self {
            StudyTable::Growth(t) => t.columns.iter().map(|c| &c.backend).collect(),
            StudyTable::Backends(t) => t.rows.iter().map(|r| &r.backend).collect(),
            StudyTable::Ladder(t) => t.columns.iter().map(|c| &c.backend).collect(),
        }
    }
}

/// One backend of a study (a column of the growth table, a row of the backend table): its
/// target, how it went and the run files it wrote.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Backend {
    pub name: String,
    /// The target URL, password replaced by ***; none when not run for want of one.
    pub target: Option<String>,
    pub state: BackendState,
    /// Why not run or why failed, in words.
    pub note: Option<String>,
    /// The class of the error that failed the backend (`auth`, `connect`, ...).
    pub error_class: Option<ErrorClass>,
    /// Every run file the backend wrote, relative to the study's folder.
    pub runs: Vec<String>,
}

impl Backend {
    pub fn new(name: &str, target: Option<String>) -> Backend {
        Backend {
            name: name.to_string(),
            target,
            state: BackendState::NotRun,
            note: None,
            error_class: None,
            runs: Vec::new(),
        }
    }

    pub fn not_run(name: &str, why: &str) -> Backend {
        Backend {
            note: Some(format!("not run: {why}")),
            ..Backend::new(name, None)
        }
    }

    pub fn fail(&mut self, class: ErrorClass, message: String) {
        self.state = BackendState::Failed;
        self.error_class = Some(class);
        self.note = Some(format!("failed ({}): {message}", class.name()));
    }

    /// `ran`, `failed:auth`, ...
    pub fn state_text(&self) -> String {
        match (self.state, self.error_class) {
            (BackendState::Failed, Some(class)) => format!("failed:{}", class.name()),
            (s, _) => s.words().to_string(),
        }
    }
}

/// The target of one backend, made from its first plan, with loadrig's namespace emptied so
/// the backend starts from nothing; none when that failed, the backend failed with its class.
pub fn open_clean<T: Target>(backend: &mut Backend, plan: &RunPlan) -> Option<Arc<T>> {
    let target = match T::from_url(&plan.target.parsed, &plan.workload.params) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            backend.fail(ErrorClass::Other, e.to_string());
            return None;
        }
    };
    if let Err(e) = clean(&*target) {
        backend.fail(e.class, e.message);
        return None;
    }
    backend.state = BackendState::Ran;
    Some(target)
}

/// What became of one of a backend's runs.
pub enum RunOutcome {
    /// It ran; its result file is written and named in the backend's runs.
    Done(Box<RunResult>),
    /// It could not run: the error's class and message.
    Failed(ErrorClass, String),
    /// Ctrl-C (before or during it): the backend is marked interrupted.
    Interrupted,
}

/// Run `plan` on the backend's target, its result file at `DIR/run` (relative name `run`).
pub fn run_one<T: Target>(
    target: &Arc<T>,
    plan: &RunPlan,
    dir: &Path,
    run: &str,
    backend: &mut Backend,
) -> Result<RunOutcome> {
    run_one_then(target, plan, dir, run, backend, || {})
}

/// [`run_one`], with `ended` called as soon as the run ends, before its file is written (a
/// reading that must not count the file's writing).
pub fn run_one_then<T: Target>(
    target: &Arc<T>,
    plan: &RunPlan,
    dir: &Path,
    run: &str,
    backend: &mut Backend,
    ended: impl FnOnce(),
) -> Result<RunOutcome> {
    if engine::INTERRUPTED.load(Ordering::SeqCst) {
        backend.state = BackendState::Interrupted;
        return Ok(RunOutcome::Interrupted);
    }
    let mut plan = plan.clone();
    plan.outputs.result = dir.join(run);
    let r = runner::execute_on(Arc::clone(target), &plan, View::Quiet);
    ended();
    let r = match r {
        Ok(r) => r,
        Err(e) => return Ok(RunOutcome::Failed(error_class(&e), format!("{e:#}"))),
    };
    result::write_atomic(&plan.outputs.result, &serde_json::to_vec_pretty(&r)?)?;
    backend.runs.push(run.to_string());
    if r.status == RunStatus::Interrupted {
        backend.state = BackendState::Interrupted;
        return Ok(RunOutcome::Interrupted);
    }
    Ok(RunOutcome::Done(Box::new(r)))
}

/// The class and first message of a batch in which every operation failed.
pub(crate) fn batch_failure(r: &RunResult) -> (ErrorClass, String) {
    let class = r
        .total
        .errors_by_class
        .iter()
        .max_by_key(|(_, n)| **n)
        .map_or(ErrorClass::Other, |(c, _)| *c);
    let message = r
        .total
        .error_messages
        .first()
        .map_or_else(|| "every operation failed".into(), |m| m.message.clone());
    (class, message)
}

/// The class of an error from the runner: an `OpError` in its chain, else a guess from
/// the words of a driver's message, else `other`.
pub(crate) fn error_class(e: &anyhow::Error) -> ErrorClass {
    if let Some(op) = e.chain().find_map(|c| c.downcast_ref::<OpError>()) {
        return op.class;
    }
    let text = format!("{e:#}").to_lowercase();
    if text.contains("password") || text.contains("authentication") {
        ErrorClass::Auth
    } else if text.contains("connect") || text.contains("refused") {
        ErrorClass::Connect
    } else {
        ErrorClass::Other
    }
}

/// Connect and remove loadrig's namespace, so that the study starts from zero stored. The
/// error keeps its class (a wrong password is `auth`).
pub(crate) fn clean<T: Target>(target: &T) -> Result<u64, OpError> {
    use crate::targets::Session as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OpError::new(crate::vocab::ErrorClass::Other, e.to_string()))?;
    rt.block_on(async {
        let mut session = target.connect().await?;
        session.cleanup().await
    })
}

/// The study's folder: `-o DIR`, or `study-NAME-STAMP` here.
pub fn out_dir(req: &Request) -> PathBuf {
    req.out.clone().unwrap_or_else(|| {
        let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
            .to_string()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        PathBuf::from(format!("study-{}-{stamp}", req.name))
    })
}

pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Write `study.json` and `report.html`, print the table; exit 130 when interrupted.
pub fn finish(record: &mut StudyRecord, dir: &Path, complete: bool) -> Result<ExitCode> {
    record.status = if complete {
        StudyStatus::Complete
    } else {
        StudyStatus::Interrupted
    };
    record.ended_at = Some(now());
    write_record(record, dir)?;
    let page = report::render(record)?;
    result::write_atomic(&dir.join("report.html"), page.as_bytes())?;
    print!("\n{}", table::render(record));
    println!("study: {}", dir.join("study.json").display());
    println!("report: {}", dir.join("report.html").display());
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(130)
    })
}

pub fn write_record(record: &StudyRecord, dir: &Path) -> Result<()> {
    result::write_atomic(&dir.join("study.json"), &serde_json::to_vec_pretty(record)?)
}

/// The observer of a study row's servers (docs/observe.md) on a 1 s grid from now, its
/// first reading taken; none, and said why, when it could not start.
fn start_observer(config: ObserveConfig) -> Option<Observer> {
    match Observer::start(config, std::time::Instant::now(), OBSERVE_EVERY) {
        Ok(mut o) => {
            o.wait_ready(std::time::Duration::from_secs(10));
            Some(o)
        }
        Err(e) => {
            eprintln!("  the observer did not start: {e}");
            None
        }
    }
}

/// The grid of a study row's observer.
const OBSERVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
