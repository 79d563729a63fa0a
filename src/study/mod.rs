//! Studies: a seed's experiment as one command (`loadrig study NAME`). A study is a workload
//! file plus a little code on the shared engine: every run is a [`RunPlan`] executed by
//! [`crate::runner`], written as a normal result file into the study's folder; the study
//! adds the table the seed printed (`study.json`, the console) and a report with its plots.
//!
//! This file holds what every study shares: the registry, the server backends (from
//! `--target` or the environment `scripts/services.sh env` prints), the study record and
//! the running of one growth column on one target.

pub mod growth;
mod report;
mod session_stores;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine;
use crate::error::InputError;
use crate::plan::RunPlan;
use crate::result::sweep::GrowthModel;
use crate::result::{self, RunResult, RunStatus};
use crate::runner::{self, View};
use crate::targets::{self, with_target_type, Target};
use crate::vocab::{ErrorClass, OpError};

/// The studies: name, what it reproduces, what it needs.
pub const STUDIES: &[(&str, &str, &str)] = &[(
    "session-stores",
    "seed 003: session records added in batches of 1000 up to 50,000, each batch timed against the records already stored, on every store",
    "embedded: fs, sqlite (and dbm when built in); servers: postgres, mysql, redis from --target or LOADRIG_PG_URL, LOADRIG_MYSQL_URL, LOADRIG_REDIS_URL",
)];

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
    match req.name.as_str() {
        "session-stores" => session_stores::run(req),
        other => Err(InputError::new(format!("unknown study '{other}'"))
            .help(format!(
                "known studies: {} (loadrig study --list)",
                STUDIES.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            ))
            .into()),
    }
}

/// The server URLs a study may use, by kind (`postgres`, `mysql`, `redis`): `--target`
/// first, then the environment. A `--target` of another kind is an input error.
pub fn servers(targets: &[String], kinds: &[&str]) -> Result<BTreeMap<String, String>, InputError> {
    let mut out = BTreeMap::new();
    for (kind, var) in [
        ("postgres", "LOADRIG_PG_URL"),
        ("mysql", "LOADRIG_MYSQL_URL"),
        ("redis", "LOADRIG_REDIS_URL"),
    ] {
        if let Ok(url) = std::env::var(var) {
            if kinds.contains(&kind) && !url.is_empty() {
                out.insert(kind.to_string(), url);
            }
        }
    }
    for t in targets {
        let url = targets::TargetUrl::parse(&targets::expand_env(t)?)?;
        let kind = match url.scheme.as_str() {
            "postgresql" => "postgres",
            "mariadb" => "mysql",
            s => s,
        };
        if !kinds.contains(&kind) {
            return Err(InputError::new(format!(
                "--target {}: this study cannot use {}:// targets",
                targets::redact(t),
                url.scheme
            ))
            .help(format!("it takes {}", kinds.join(", "))));
        }
        out.insert(kind.to_string(), targets::expand_env(t)?);
    }
    Ok(out)
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

/// What became of one backend's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ColumnState {
    NotRun,
    Ran,
    Failed,
    Interrupted,
}

impl ColumnState {
    /// In words: `not run`, `ran`, `failed`, `interrupted`.
    pub fn words(self) -> &'static str {
        match self {
            ColumnState::NotRun => "not run",
            ColumnState::Ran => "ran",
            ColumnState::Failed => "failed",
            ColumnState::Interrupted => "interrupted",
        }
    }
}

/// The version of the study file this build writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema of the study file (committed as docs/schema/study.schema.json).
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(StudyRecord)
}

/// The study file, `DIR/study.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StudyRecord {
    /// The study file's contract version (docs/schema/study.schema.json); it changes when a
    /// field changes meaning or goes away.
    pub schema_version: u32,
    pub study: String,
    pub loadrig_version: String,
    pub status: StudyStatus,
    pub quick: bool,
    /// The study's sizes (`batch`, `records_max`).
    pub sizes: BTreeMap<String, u64>,
    /// The workload file every run used, in the study's folder.
    pub workload: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// What a cell holds.
    pub unit: String,
    /// The table's rows: records stored before a batch.
    pub rows: Vec<u64>,
    pub columns: Vec<Column>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Column {
    pub name: String,
    /// The target URL, password replaced by ***; none when not run for want of one.
    pub target: Option<String>,
    pub state: ColumnState,
    /// Why not run or why failed, in words.
    pub note: Option<String>,
    /// The class of the error that failed the column (`auth`, `connect`, ...).
    pub error_class: Option<ErrorClass>,
    /// Every run file the column wrote, relative to the study's folder (a batch that
    /// stored nothing has a file but no cell).
    pub runs: Vec<String>,
    pub cells: Vec<Cell>,
    /// The complexity class fitted to seconds per batch against records stored.
    pub model: Option<GrowthModel>,
    /// Records per second the fitted cost allows at these numbers of records stored.
    pub upper_bound_per_s: Vec<Bound>,
}

impl Column {
    pub fn new(name: &str, target: Option<String>) -> Column {
        Column {
            name: name.to_string(),
            target,
            state: ColumnState::NotRun,
            note: None,
            error_class: None,
            runs: Vec::new(),
            cells: Vec::new(),
            model: None,
            upper_bound_per_s: Vec::new(),
        }
    }

    pub fn not_run(name: &str, why: &str) -> Column {
        Column {
            note: Some(format!("not run: {why}")),
            ..Column::new(name, None)
        }
    }

    fn fail(&mut self, class: ErrorClass, message: String) {
        self.state = ColumnState::Failed;
        self.error_class = Some(class);
        self.note = Some(format!("failed ({}): {message}", class.name()));
    }
}

/// One batch: the records stored before it, what it added, how long it took, its run file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Cell {
    pub stored_before: u64,
    pub added: u64,
    /// The batch's measured time (`measured_s` of its run file).
    pub seconds: f64,
    /// Seconds per 1000 records added: `seconds × 1000 / added`.
    pub per_1000_s: f64,
    /// The run file, relative to the study's folder.
    pub run: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Bound {
    pub stored: u64,
    /// None where the fitted curve predicts no positive cost (a fit with a negative
    /// intercept, far from its data): no bound can be read off it there.
    pub per_s: Option<f64>,
}

/// One growth column to run: its plan (target and connection mode resolved) and sizes.
pub struct GrowthColumn<'a> {
    pub plan: RunPlan,
    pub batch: u64,
    pub limit: u64,
    /// The study's folder; run files go to `runs/SLUG-NNN.json` under it.
    pub dir: &'a Path,
    pub slug: String,
    /// Where the implied upper bound is given.
    pub bounds_at: &'a [u64],
}

/// Run one column on its own target; false when the study was interrupted. Failures go
/// into the column (with their class); only writing files can fail the study.
pub fn run_growth_column(col: &mut Column, g: &GrowthColumn) -> Result<bool> {
    let scheme = g.plan.target.scheme().to_string();
    let outcome: Result<Result<bool, (ErrorClass, String)>> =
        with_target_type!(scheme.as_str(), T => growth_on::<T>(col, g));
    match outcome? {
        Ok(complete) => Ok(complete),
        Err((class, message)) => {
            col.fail(class, message);
            Ok(true)
        }
    }
}

/// The column on targets of type `T`: clean its namespace, then the growth loop. The inner
/// error is a failure of the backend: (class, message).
fn growth_on<T: Target>(
    col: &mut Column,
    g: &GrowthColumn,
) -> Result<Result<bool, (ErrorClass, String)>> {
    let target = match T::from_url(&g.plan.target.parsed, &g.plan.workload.params) {
        Ok(t) => Arc::new(t),
        Err(e) => return Ok(Err((ErrorClass::Other, e.to_string()))),
    };
    if let Err(e) = clean(&*target) {
        return Ok(Err((e.class, e.message)));
    }
    col.state = ColumnState::Ran;
    let puts = growth::put_ops(&g.plan);
    let mut failure: Option<(ErrorClass, String)> = None;
    let mut interrupted = false;
    let grown = growth::grow(&g.plan, g.batch, g.limit, 0, |plan, stored| {
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            interrupted = true;
            return Ok(None);
        }
        let k = col.runs.len() + 1;
        let run = format!("runs/{}-{k:03}.json", g.slug);
        let mut plan = plan.clone();
        plan.outputs.result = g.dir.join(&run);
        let r = runner::execute_on(Arc::clone(&target), &plan, View::Quiet)?;
        result::write_atomic(&plan.outputs.result, &serde_json::to_vec_pretty(&r)?)?;
        col.runs.push(run.clone());
        if r.status == RunStatus::Interrupted {
            interrupted = true;
            return Ok(None);
        }
        let added = growth::added(&puts, &r);
        if added == 0 {
            failure = Some(batch_failure(&r));
        } else {
            col.cells.push(cell(stored, added, &r, run));
        }
        Ok(Some(r))
    });
    let grown = match grown {
        Ok(grown) => grown,
        Err(e) => return Ok(Err((error_class(&e), format!("{e:#}")))),
    };
    if let Some(f) = failure {
        return Ok(Err(f));
    }
    if interrupted {
        col.state = ColumnState::Interrupted;
    }
    if col.cells.len() >= 2 {
        let model = GrowthModel::new(col.name.clone(), grown.fit, 0.0, grown.stored as f64);
        col.upper_bound_per_s = g
            .bounds_at
            .iter()
            .map(|&n| Bound {
                stored: n,
                per_s: Some(model.fit.predict(n as f64))
                    .filter(|cost| *cost > 0.0)
                    .map(|cost| g.batch as f64 / cost),
            })
            .collect();
        col.model = Some(model);
    }
    Ok(Ok(!interrupted))
}

fn cell(stored: u64, added: u64, r: &RunResult, run: String) -> Cell {
    Cell {
        stored_before: stored,
        added,
        seconds: r.measured_s,
        per_1000_s: r.measured_s * 1000.0 / added as f64,
        run,
    }
}

/// The class and first message of a batch in which every operation failed.
fn batch_failure(r: &RunResult) -> (ErrorClass, String) {
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
fn error_class(e: &anyhow::Error) -> ErrorClass {
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
fn clean<T: Target>(target: &T) -> Result<u64, OpError> {
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
