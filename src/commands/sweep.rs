//! `loadrig sweep`: one workload at several values of one setting, or batch after batch of a
//! growth study. Every point is a full run through the same path as `loadrig run`, with the
//! same load settings; all of them go into one sweep file, rewritten after every point, and
//! the model that explains the curve (USL, knee, complexity class) is fitted at the end.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;

use crate::analysis::knee::{self, Search};
use crate::analysis::usl;
use crate::cli::{RunArgs, SweepArgs};
use crate::engine::{self, Mode};
use crate::error::InputError;
use crate::plan::{self, default_out, same_path, RunPlan};
use crate::report::{html, sweep as table};
use crate::result::models::{Knee, Slo};
use crate::result::sweep::{
    self, GrowthModel, GrowthSpec, KneeModel, Models, SweepKind, SweepPoint, SweepResult,
    SweepStatus, UslModel, VaryKind, VaryRecord,
};
use crate::result::{self, RunResult, RunStatus};
use crate::runner::{self, describe, View};
use crate::study;
use crate::targets::{with_target_type, Target};
use crate::workload::Workload;

/// At most this many points in one grid.
const MAX_POINTS: usize = 1000;

/// The setting a sweep varies.
#[derive(Debug, Clone, PartialEq)]
enum Setting {
    Clients,
    Rate,
    /// Operations in flight per connection, as with `--pipeline`.
    Pipeline,
    /// The rig's client threads, as with `--threads`.
    Threads,
    /// A workload parameter, as with `--set`.
    Param(String),
}

impl Setting {
    fn name(&self) -> &str {
        match self {
            Setting::Clients => "clients",
            Setting::Rate => "rate",
            Setting::Pipeline => "pipeline",
            Setting::Threads => "threads",
            Setting::Param(p) => p,
        }
    }
}

/// How the sweep goes through its points.
#[derive(Debug, Clone)]
enum Course {
    /// Every value (each `repeat` times), in order.
    Grid {
        setting: Setting,
        values: Vec<String>,
    },
    /// `--find-max`: rates chosen by the knee search between two ends.
    Search { min: f64, max: f64 },
    /// `--growth-batch B --growth-limit M`.
    Growth {
        batch: u64,
        limit: u64,
        initial: u64,
    },
}

/// A validated sweep, ready to run.
struct Plan<'a> {
    args: &'a SweepArgs,
    course: Course,
    slo: Option<Slo>,
    /// The plan of the first point; every other point is this plan with one field changed.
    base: RunPlan,
    /// Every value's plan, named as `--vary NAME=VALUE` (a search: its two ends), checked
    /// against the target and the descriptor limit before the first point runs.
    checked: Vec<(String, RunPlan)>,
    out: PathBuf,
    record: SweepResult,
}

pub fn sweep(args: &SweepArgs) -> Result<ExitCode> {
    if args.run.shard.is_some() || args.run.start_at.is_some() {
        return Err(
            InputError::new("--shard and --start-at apply to loadrig run only")
                .help("split a sweep's points by running each point's `loadrig run` as shards")
                .into(),
        );
    }
    let plan = Plan::new(args)?;
    let scheme = plan.base.target.scheme().to_string();
    with_target_type!(scheme.as_str(), T => plan.run::<T>())
}

/// Parse `NAME=VALUES`: a list `a,b,c`, a range `a..b:step` (both ends included), or with
/// `ranged` a bare range `a..b` (its two ends).
fn parse_vary(text: &str, find_max: bool) -> Result<(String, Vec<String>), InputError> {
    let bad = |why: &str| {
        InputError::new(format!("--vary {text}: {why}")).help(
            "write NAME=V1,V2,... or NAME=FROM..TO:STEP, e.g. --vary clients=1,2,4,8 or --vary records=0..50000:5000",
        )
    };
    let (name, values) = text
        .split_once('=')
        .ok_or_else(|| bad("expected NAME=VALUES"))?;
    let name = name.trim().to_string();
    if name.is_empty() {
        return Err(bad("the name is empty"));
    }
    let values = values.trim();
    let Some((from, rest)) = values.split_once("..") else {
        let list: Vec<String> = values
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        if list.is_empty() {
            return Err(bad("no values"));
        }
        if find_max {
            return Err(bad("--find-max searches a range: write rate=LOW..HIGH"));
        }
        return Ok((name, list));
    };
    let num = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad(&format!("'{}' is not a number", s.trim())))
    };
    let (to, step) = match rest.split_once(':') {
        Some((to, step)) => (num(to)?, Some(num(step)?)),
        None => (num(rest)?, None),
    };
    let from = num(from)?;
    if to < from {
        return Err(bad("the range ends below its start"));
    }
    match (step, find_max) {
        (None, true) => Ok((name, vec![fmt_num(from), fmt_num(to)])),
        (Some(_), true) => Err(bad("--find-max chooses its own steps: drop ':STEP'")),
        (None, false) => Err(bad("a range needs a step, FROM..TO:STEP (or --find-max)")),
        (Some(step), false) => {
            if step <= 0.0 {
                return Err(bad("the step must be above zero"));
            }
            let count = ((to - from) / step + 1e-9).floor() as usize + 1;
            if count > MAX_POINTS {
                return Err(bad(&format!(
                    "{count} points; at most {MAX_POINTS} in one sweep"
                )));
            }
            Ok((
                name,
                (0..count)
                    .map(|i| fmt_num(from + step * i as f64))
                    .collect(),
            ))
        }
    }
}

/// A number as people write it: `5000`, not `5000.0`.
fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{}", (x * 1e6).round() / 1e6)
    }
}

/// The plan of a grid point: the base plan with the varied setting at `value` (resolved
/// again from the flags `args` with that setting's flag at `value`, for the pipeline and the
/// threads, whose checks and derived settings depend on the rest). Errors name the point.
fn point_plan(
    base: &RunPlan,
    args: &RunArgs,
    setting: &Setting,
    value: &str,
) -> Result<RunPlan, InputError> {
    let what = format!("--vary {}={value}", setting.name());
    // Clients, pipeline depths and threads are counts.
    let count = || {
        value
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                InputError::new(format!(
                    "--vary {}: '{value}' is not a whole number of at least 1",
                    setting.name()
                ))
            })
    };
    if matches!(setting, Setting::Pipeline | Setting::Threads) {
        let n = count()?;
        let mut a = args.clone();
        a.report = None;
        match setting {
            Setting::Pipeline => a.pipeline = Some(n),
            _ => a.threads = Some(n.to_string()),
        }
        let mut plan = plan::resolve(&a).map_err(|e| InputError::new(format!("{what}: {e}")))?;
        // The same seeds and outputs as every other point.
        plan.load.seed = base.load.seed;
        plan.outputs = base.outputs.clone();
        return Ok(plan);
    }
    let number = || {
        value.parse::<f64>().ok().ok_or_else(|| {
            InputError::new(format!(
                "--vary {}: '{value}' is not a number",
                setting.name()
            ))
        })
    };
    let mut plan = match setting {
        Setting::Param(name) => base.with_param(name, value),
        _ => Ok(base.clone()),
    }
    .map_err(|e| InputError::new(format!("{what}: {e}")))?;
    match setting {
        Setting::Clients => plan.set_clients(count()?),
        Setting::Rate => plan.set_rate(number()?),
        Setting::Param(_) | Setting::Pipeline | Setting::Threads => Ok(()),
    }
    .map_err(|e| InputError::new(format!("{what}: {e}")))?;
    Ok(plan)
}

/// The flags of the first point: the loop kind the varied setting asks for, so that flags
/// of that kind (`--max-in-flight` on a rate sweep) resolve. The sweep's report is the
/// sweep's, written at its end.
fn base_args(base: &RunArgs, course: &Course) -> RunArgs {
    let mut a = base.clone();
    a.report = None;
    let first = |values: &[String]| values[0].parse::<f64>().ok();
    match course {
        Course::Grid {
            setting: Setting::Clients,
            values,
        } => {
            a.clients = first(values)
                .filter(|n| *n >= 1.0)
                .map(|n| n as u64)
                .or(Some(1))
        }
        Course::Grid {
            setting: Setting::Rate,
            values,
        } => a.rate = first(values).or(Some(1.0)),
        Course::Search { min, .. } => a.rate = Some(*min),
        Course::Grid { .. } => {}
        // Any stop flag replaces the file's: the batches set their own.
        Course::Growth { .. } => a.ops = Some(1),
    }
    a
}

/// Resolve the base plan: the flags with the loop kind the sweep needs.
fn resolve_base(args: &RunArgs, course: &Course) -> Result<RunPlan, InputError> {
    let mut plan = plan::resolve(&base_args(args, course))?;
    if let Course::Growth { batch, .. } = course {
        plan = plan.growth_batch(*batch, 0);
    }
    Ok(plan)
}

impl<'a> Plan<'a> {
    fn new(args: &'a SweepArgs) -> Result<Plan<'a>, InputError> {
        let base = &args.run;
        if !base.checks.is_empty() || base.metrics_addr.is_some() {
            return Err(InputError::new(
                "--check and --metrics-addr apply to `loadrig run`, not to sweeps",
            )
            .help(
                "the sweep file keeps every point's full result, for reports and checks afterwards",
            ));
        }
        if args.repeat == 0 || args.repeat > 1000 {
            return Err(InputError::new(format!(
                "--repeat {}: expected 1 to 1000",
                args.repeat
            )));
        }
        let slo = args.slo.as_deref().map(Slo::parse).transpose()?;
        // The workload alone: the base flags need not make a run (a rate sweep has no --rate).
        let (workload, _) = plan::resolve_workload(base)?;
        let course = if args.growth_batch.is_some() || args.growth_limit.is_some() {
            growth_course(args, &workload)?
        } else {
            grid_course(args, &workload, slo.is_some())?
        };
        let first = resolve_base(base, &course)?;
        // Every point is checked before the first runs.
        let mut checked = Vec::new();
        let mut check = |setting: &Setting, value: &str| -> Result<(), InputError> {
            let plan = point_plan(&first, base, setting, value)?;
            checked.push((format!("--vary {}={value}", setting.name()), plan));
            Ok(())
        };
        match &course {
            Course::Grid { setting, values } => {
                for value in values {
                    check(setting, value)?;
                }
            }
            Course::Search { min, max } => {
                for rate in [min, max] {
                    check(&Setting::Rate, &fmt_num(*rate))?;
                }
            }
            Course::Growth { .. } => {}
        }
        let out = base
            .out
            .clone()
            .unwrap_or_else(|| default_out(&format!("{}-sweep", workload.name)));
        if let Some(report) = &base.report {
            if same_path(report, &out) {
                return Err(InputError::new(format!(
                    "--report {}: that is where the sweep file goes",
                    report.display()
                ))
                .help("give the report its own name, like sweep.html"));
            }
        }
        let record = record(args, &course, &slo, &first);
        Ok(Plan {
            args,
            course,
            slo,
            base: first,
            checked,
            out,
            record,
        })
    }

    /// Run every point on targets of type `T`: one target for a growth study, whose batches
    /// must meet the same store; otherwise a fresh one for every point, like separate runs.
    fn run<T: Target>(self) -> Result<ExitCode> {
        // Too few file descriptors for the widest point, or a point the target cannot run
        // (a pipeline on MySQL's protocol), fail the sweep before its first point, not after
        // the points below it have run.
        let target = T::from_url(&self.base.target.parsed, &self.base.workload.params)?;
        let widest = self
            .checked
            .iter()
            .map(|(_, p)| p.load.connections())
            .fold(self.base.load.connections(), usize::max);
        crate::runner::fd_limit::ensure(
            widest,
            target.files_per_client() + self.base.workload.peers.len(),
        )?;
        if let Course::Grid {
            setting: Setting::Threads,
            ..
        } = &self.course
        {
            if target.blocking() {
                return Err(InputError::new(format!(
                    "--vary threads: {}:// targets run every client on a thread of its own, so --threads does not change them",
                    self.base.target.scheme()
                ))
                .help("vary clients instead, or sweep the threads on a network target")
                .into());
            }
        }
        for (point, plan) in &self.checked {
            runner::check_target(plan, &target).map_err(|mut e| {
                e.message = format!("{point}: {}", e.message);
                e
            })?;
        }
        let shared = match self.course {
            Course::Growth { .. } => Some(Arc::new(T::from_url(
                &self.base.target.parsed,
                &self.base.workload.params,
            )?)),
            _ => None,
        };
        let mut s = Sweeper {
            args: self.args.run.clone(),
            record: self.record,
            out: self.out,
            slo: self.slo,
            shared,
        };
        let repeat = self.args.repeat;
        println!(
            "loadrig {} sweep: {} on {} — {}; first point: {}",
            env!("CARGO_PKG_VERSION"),
            s.record.workload,
            s.record.target,
            course_words(&self.course, repeat),
            describe(&self.base.load)
        );
        println!("{}", table::header(&s.record.vary.name, s.slo.is_some()));
        let complete = match self.course.clone() {
            Course::Grid { setting, values } => s.grid(&self.base, &setting, &values, repeat)?,
            Course::Search { min, max } => s.search(&self.base, min, max, repeat)?,
            Course::Growth {
                batch,
                limit,
                initial,
            } => s.growth(&self.base, batch, limit, initial)?,
        };
        s.finish(complete, self.args.run.report.as_deref())
    }
}

/// `--growth-batch B --growth-limit N`, checked against the other flags and the workload.
fn growth_course(args: &SweepArgs, workload: &Workload) -> Result<Course, InputError> {
    let base = &args.run;
    let (Some(batch), Some(limit)) = (args.growth_batch, args.growth_limit) else {
        return Err(InputError::new(
            "a growth study needs both --growth-batch B and --growth-limit RECORDS",
        )
        .help("for example --growth-batch 1000 --growth-limit 50000 (seed 003)"));
    };
    if args.vary.is_some() || args.find_max {
        return Err(InputError::new(
            "a growth study varies the records stored: drop --vary and --find-max",
        ));
    }
    if args.repeat > 1 {
        return Err(InputError::new(
            "--repeat does not apply to a growth study: its batches keep adding to one store",
        )
        .help("run the sweep again on a fresh target to repeat it"));
    }
    for (given, flag) in [
        (base.duration.is_some(), "--duration"),
        (base.ops.is_some(), "--ops"),
        (base.samples.is_some(), "--samples"),
        (base.warmup.is_some(), "--warmup"),
    ] {
        if given {
            return Err(InputError::new(format!(
                "{flag} does not apply to a growth study: every batch runs exactly --growth-batch operations"
            )));
        }
    }
    if batch == 0 || limit == 0 {
        return Err(InputError::new(
            "--growth-batch and --growth-limit must be at least 1",
        ));
    }
    let initial = match (&workload.data, base.skip_load) {
        (Some(d), false) => d.count,
        _ => 0,
    };
    if initial >= limit {
        return Err(InputError::new(format!(
            "--growth-limit {limit}: the workload's [data] already stores {initial} records"
        ))
        .help("raise --growth-limit, or start from an empty store with --skip-load (its [data] is then not loaded)"));
    }
    if (limit - initial).div_ceil(batch) as usize > MAX_POINTS {
        return Err(InputError::new(format!(
            "--growth-limit {limit} in batches of {batch} makes more than {MAX_POINTS} batches"
        ))
        .help("raise --growth-batch"));
    }
    Ok(Course::Growth {
        batch,
        limit,
        initial,
    })
}

/// `--vary NAME=VALUES` (with `--find-max`, a search), checked against the workload.
fn grid_course(args: &SweepArgs, workload: &Workload, has_slo: bool) -> Result<Course, InputError> {
    let Some(vary) = &args.vary else {
        return Err(InputError::new("sweep needs something to vary").help(
            "add --vary clients=1,2,4,8 (or rate=…, or a workload parameter), or a growth study with --growth-batch B --growth-limit RECORDS",
        ));
    };
    let (name, values) = parse_vary(vary, args.find_max)?;
    let setting = setting(&name, workload)?;
    let base = &args.run;
    let flag_given = match &setting {
        Setting::Clients => base.clients.is_some(),
        Setting::Rate => base.rate.is_some(),
        Setting::Pipeline => base.pipeline.is_some(),
        Setting::Threads => base.threads.is_some(),
        Setting::Param(p) => base.set.iter().any(|(n, _)| n == p),
    };
    if flag_given {
        let flag = match &setting {
            Setting::Param(p) => format!("--set {p}"),
            s => format!("--{}", s.name()),
        };
        return Err(InputError::new(format!(
            "--vary {} and {flag} both set it: keep one",
            setting.name()
        )));
    }
    if !args.find_max {
        return Ok(Course::Grid { setting, values });
    }
    if setting != Setting::Rate {
        return Err(InputError::new(
            "--find-max searches rates: use --vary rate=LOW..HIGH",
        ));
    }
    if !has_slo {
        return Err(
            InputError::new("--find-max needs an objective to search for")
                .help("add --slo 'p99 < 50ms'"),
        );
    }
    let end = |i: usize| values[i].parse::<f64>().unwrap_or(0.0);
    let (min, max) = (end(0), end(1));
    if min <= 0.0 {
        return Err(InputError::new(
            "--find-max: the lowest rate must be above zero",
        ));
    }
    Ok(Course::Search { min, max })
}

/// What `--vary NAME` names: a load setting or one of the workload's parameters.
fn setting(name: &str, workload: &Workload) -> Result<Setting, InputError> {
    Ok(match name {
        "clients" => Setting::Clients,
        "rate" => Setting::Rate,
        "pipeline" => Setting::Pipeline,
        "threads" => Setting::Threads,
        p if workload.params.contains_key(p) => Setting::Param(p.to_string()),
        other => {
            let params: Vec<&str> = workload.params.keys().map(String::as_str).collect();
            return Err(InputError::new(format!(
                "--vary {other}: '{other}' is neither a load setting nor a parameter of the workload '{}'",
                workload.name
            ))
            .help(if params.is_empty() {
                "vary clients, rate, pipeline or threads (this workload declares no [params])"
                    .to_string()
            } else {
                format!(
                    "vary clients, rate, pipeline, threads, or one of the workload's parameters: {}",
                    params.join(", ")
                )
            }));
        }
    })
}

/// The sweep file as it starts: what is varied and how, no points yet.
fn record(args: &SweepArgs, course: &Course, slo: &Option<Slo>, first: &RunPlan) -> SweepResult {
    let (vary_name, kind, spec, values) = match course {
        Course::Grid { setting, values } => (
            setting.name().to_string(),
            match setting {
                Setting::Clients => VaryKind::Clients,
                Setting::Rate => VaryKind::Rate,
                Setting::Pipeline => VaryKind::Pipeline,
                Setting::Threads => VaryKind::Threads,
                Setting::Param(_) => VaryKind::Param,
            },
            args.vary.clone().unwrap_or_default(),
            values.clone(),
        ),
        Course::Search { min, max } => (
            "rate".to_string(),
            VaryKind::Rate,
            args.vary.clone().unwrap_or_default(),
            vec![fmt_num(*min), fmt_num(*max)],
        ),
        Course::Growth { .. } => (
            "records".to_string(),
            VaryKind::Growth,
            String::new(),
            Vec::new(),
        ),
    };
    SweepResult {
        schema_version: sweep::SCHEMA_VERSION,
        kind: SweepKind::Sweep,
        loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
        status: SweepStatus::Running,
        workload: first.workload.name.clone(),
        target: first.target.shown(),
        vary: VaryRecord {
            name: vary_name,
            kind,
            spec,
            values,
        },
        repeat: args.repeat,
        slo: slo.clone(),
        find_max: args.find_max,
        growth: match *course {
            Course::Growth {
                batch,
                limit,
                initial,
            } => Some(GrowthSpec {
                batch,
                limit,
                initial_records: initial,
            }),
            _ => None,
        },
        started_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        ended_at: None,
        points: Vec::new(),
        models: Models::default(),
        notes: Vec::new(),
    }
}

fn course_words(course: &Course, repeat: u32) -> String {
    match course {
        Course::Grid { setting, values } => format!(
            "{} over {}{}",
            setting.name(),
            values.join(", "),
            runs_each(repeat)
        ),
        Course::Search { min, max } => format!(
            "searching rates {}..{} for the knee{}",
            fmt_num(*min),
            fmt_num(*max),
            runs_each(repeat)
        ),
        Course::Growth { batch, limit, .. } => {
            format!("growth study, batches of {batch} up to {limit} records")
        }
    }
}

fn runs_each(repeat: u32) -> String {
    if repeat > 1 {
        format!(" ({repeat} runs each)")
    } else {
        String::new()
    }
}

/// The running sweep: its record so far and, for a growth study, its one target.
struct Sweeper<T> {
    /// The flags every point starts from.
    args: RunArgs,
    record: SweepResult,
    out: PathBuf,
    slo: Option<Slo>,
    shared: Option<Arc<T>>,
}

impl<T: Target> Sweeper<T> {
    /// Every value `repeat` times, in order; false when interrupted.
    fn grid(
        &mut self,
        base: &RunPlan,
        setting: &Setting,
        values: &[String],
        repeat: u32,
    ) -> Result<bool> {
        for value in values {
            let x = value.parse::<f64>().ok();
            for rep in 1..=repeat {
                let plan = point_plan(base, &self.args, setting, value)?;
                if !self.point(&plan, value, x, rep, None)? {
                    return Ok(false);
                }
            }
        }
        self.grid_models(setting);
        Ok(true)
    }

    /// `--find-max`: rates chosen by the knee search; false when interrupted.
    fn search(&mut self, base: &RunPlan, min: f64, max: f64, repeat: u32) -> Result<bool> {
        let mut search = Search::new(min, max);
        let mut complete = true;
        'search: while let Some(rate) = search.next() {
            let value = fmt_num(rate);
            let mut passed = true;
            for rep in 1..=repeat {
                let plan = point_plan(base, &self.args, &Setting::Rate, &value)?;
                if !self.point(&plan, &value, Some(rate), rep, None)? {
                    complete = false;
                    break 'search;
                }
                passed &= self.record.points.last().and_then(|p| p.slo_ok) == Some(true);
            }
            search.record(rate, passed);
        }
        self.knee_model(search.knee(), "search");
        Ok(complete)
    }

    /// Batches against one store until `limit` records are stored; false when interrupted.
    fn growth(&mut self, base: &RunPlan, batch: u64, limit: u64, initial: u64) -> Result<bool> {
        let g = study::growth::grow(base, batch, limit, initial, |plan, stored| {
            let value = stored.to_string();
            if !self.point(plan, &value, Some(stored as f64), 1, Some(stored))? {
                return Ok(None);
            }
            Ok(self.record.points.last().map(|p| p.result.clone()))
        })?;
        self.record.notes.extend(g.notes);
        self.record.models.growth = Some(GrowthModel::new(
            self.record.target.clone(),
            g.fit,
            initial as f64,
            g.stored as f64,
        ));
        Ok(g.complete)
    }

    /// Write the finished sweep, print its summary and its report.
    fn finish(mut self, complete: bool, report: Option<&std::path::Path>) -> Result<ExitCode> {
        self.record.status = if complete {
            SweepStatus::Complete
        } else {
            SweepStatus::Interrupted
        };
        self.record.ended_at =
            Some(humantime::format_rfc3339_millis(SystemTime::now()).to_string());
        self.write()?;
        print!("\n{}", table::summary(&self.record));
        println!("sweep result: {}", self.out.display());
        if let Some(report) = report {
            let label = self.out.file_name().map_or_else(
                || self.out.display().to_string(),
                |n| n.to_string_lossy().into(),
            );
            let page = html::render_sweep(&label, &self.record)?;
            result::write_atomic(report, page.as_bytes())?;
            println!("report: {}", report.display());
        }
        Ok(if complete {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(130)
        })
    }

    /// Run one point, print its row and save the sweep; false when it was interrupted.
    fn point(
        &mut self,
        plan: &RunPlan,
        value: &str,
        x: Option<f64>,
        repeat: u32,
        stored_before: Option<u64>,
    ) -> Result<bool> {
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let offered = match plan.load.mode {
            Mode::Open { rate, .. } => Some(rate),
            Mode::Closed { .. } => None,
        };
        let result = match &self.shared {
            Some(t) => runner::execute_on(Arc::clone(t), plan, View::Quiet)?,
            None => runner::execute(plan, View::Quiet)?,
        };
        let slo_ok = self.slo.as_ref().map(|slo| {
            slo.holds(&result.total.latency)
                && offered.is_none_or(|r| knee::sustained(r, result.total.throughput_per_s))
        });
        let point = SweepPoint {
            index: self.record.points.len() + 1,
            value: value.to_string(),
            x,
            repeat,
            stored_before,
            ok: result.total.ok,
            errors: result.total.errors,
            throughput_per_s: result.total.throughput_per_s,
            measured_s: result.measured_s,
            latency: result.total.latency.clone(),
            slo_ok,
            result,
        };
        println!("{}", table::row(&point));
        let complete = point.result.status != RunStatus::Interrupted;
        self.record.points.push(point);
        self.write()?;
        Ok(complete)
    }

    fn write(&self) -> Result<()> {
        result::write_atomic(&self.out, &serde_json::to_vec_pretty(&self.record)?)
    }

    /// The models of a grid: USL over clients, the knee over rates.
    fn grid_models(&mut self, setting: &Setting) {
        let xy: Vec<(f64, f64)> = self
            .record
            .points
            .iter()
            .filter_map(|p| p.x.map(|x| (x, p.throughput_per_s)))
            .collect();
        match setting {
            Setting::Clients => {
                let max_n = xy.iter().map(|p| p.0).fold(1.0, f64::max);
                self.record.models.usl = Some(UslModel::new(usl::fit(&xy), max_n));
            }
            Setting::Rate if self.slo.is_some() => {
                let runs: Vec<(f64, bool)> = self
                    .record
                    .points
                    .iter()
                    .filter_map(|p| Some((p.x?, p.slo_ok?)))
                    .collect();
                self.knee_model(knee::grid(&runs), "grid");
            }
            Setting::Rate => self.record.notes.push(
                "add --slo 'p99 < 50ms' (your objective) to find the knee of this rate sweep"
                    .to_string(),
            ),
            Setting::Param(_) | Setting::Pipeline | Setting::Threads => {}
        }
    }

    fn knee_model(&mut self, knee: Knee, method: &str) {
        let Some(slo) = self.slo.clone() else { return };
        let at: Vec<&RunResult> = self
            .record
            .points
            .iter()
            .filter(|p| knee.knee_rate.is_some() && p.x == knee.knee_rate)
            .map(|p| &p.result)
            .collect();
        let mean = |f: &dyn Fn(&RunResult) -> f64| {
            (!at.is_empty()).then(|| at.iter().map(|r| f(r)).sum::<f64>() / at.len() as f64)
        };
        self.record.models.knee = Some(KneeModel {
            method: method.to_string(),
            knee_throughput_per_s: mean(&|r| r.total.throughput_per_s),
            knee_latency_ns: mean(&|r| slo.value(&r.total.latency)),
            slo,
            knee,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(
            parse_vary("clients=1,2, 4", false).unwrap(),
            ("clients".into(), vec!["1".into(), "2".into(), "4".into()])
        );
        let (_, v) = parse_vary("records=0..50000:5000", false).unwrap();
        assert_eq!(v.len(), 11);
        assert_eq!((v[0].as_str(), v[10].as_str()), ("0", "50000"));
        let (_, v) = parse_vary("rate=0.5..2:0.5", false).unwrap();
        assert_eq!(v, vec!["0.5", "1", "1.5", "2"]);
        assert_eq!(
            parse_vary("rate=100..2000", true).unwrap().1,
            vec!["100", "2000"]
        );
        for bad in [
            "clients",
            "=1,2",
            "rate=100..2000",
            "rate=5..1:1",
            "rate=1..5:0",
            "rate=1..x:1",
            "records=0..1e9:1",
        ] {
            assert!(parse_vary(bad, false).is_err(), "{bad}");
        }
        assert!(parse_vary("rate=1,2", true).is_err());
        assert!(parse_vary("rate=1..2:1", true).is_err());
    }
}
