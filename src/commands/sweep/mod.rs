//! `loadrig sweep`: one workload at several values of one setting, or batch after batch of a
//! growth study. Every point is a full run through the same path as `loadrig run`, with the
//! same load settings: the base plan varied in one factor (`RunPlan::vary`). All of them go
//! into one sweep file, rewritten after every point, and the model that explains the curve
//! (USL, knee, complexity class) is fitted at the end.

mod course;
mod points;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;

use crate::cli::SweepArgs;
use crate::error::InputError;
use crate::plan::{self, default_out, same_path, Factor, LoadSetting, RunPlan};
use crate::report::sweep as table;
use crate::result::models::Slo;
use crate::result::sweep::{
    self, GrowthSpec, Models, SweepKind, SweepResult, SweepStatus, VaryKind, VaryRecord,
};
use crate::runner::{self, describe};
use crate::targets::{with_target_type, Target};
use course::{base_args, fmt_num, grid_course, growth_course, point_plan, Course, RATE};
use points::Sweeper;

/// A validated sweep, ready to run.
struct Sweep<'a> {
    args: &'a SweepArgs,
    course: Course,
    slo: Option<Slo>,
    /// The plan of the first point; every other point is this plan varied.
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
    let sweep = Sweep::new(args)?;
    let scheme = sweep.base.target.scheme().to_string();
    with_target_type!(scheme.as_str(), T => sweep.run::<T>())
}

/// Resolve the base plan: the flags with the loop kind the sweep needs; a growth study's
/// first batch.
fn resolve_base(args: &SweepArgs, course: &Course) -> Result<RunPlan, InputError> {
    let plan = plan::resolve(&base_args(&args.run, course))?;
    match course {
        Course::Growth { batch, .. } => plan.growth_batch(*batch, 0),
        _ => Ok(plan),
    }
}

/// Every point's plan, checked before the first runs.
fn checked_points(base: &RunPlan, course: &Course) -> Result<Vec<(String, RunPlan)>, InputError> {
    let (factor, values) = match course {
        Course::Grid { factor, values } => (factor, values.clone()),
        Course::Search { min, max } => (&RATE, vec![fmt_num(*min), fmt_num(*max)]),
        Course::Growth { .. } => return Ok(Vec::new()),
    };
    values
        .iter()
        .map(|value| {
            let plan = point_plan(base, factor, value)?;
            Ok((format!("--vary {}={value}", factor.name()), plan))
        })
        .collect()
}

/// The sweep's own flags, before anything about its points.
fn check_flags(args: &SweepArgs) -> Result<(), InputError> {
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
    Ok(())
}

impl<'a> Sweep<'a> {
    fn new(args: &'a SweepArgs) -> Result<Sweep<'a>, InputError> {
        check_flags(args)?;
        let base = &args.run;
        let slo = args.slo.as_deref().map(Slo::parse).transpose()?;
        // The workload alone: the base flags need not make a run (a rate sweep has no --rate).
        let (workload, _) = plan::resolve_workload(base)?;
        let course = if args.growth_batch.is_some() || args.growth_limit.is_some() {
            growth_course(args, &workload)?
        } else {
            grid_course(args, &workload, slo.is_some())?
        };
        let first = resolve_base(args, &course)?;
        let checked = checked_points(&first, &course)?;
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
        Ok(Sweep {
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
            factor: Factor::Load(LoadSetting::Threads),
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
            Course::Grid { factor, values } => s.grid(&self.base, &factor, &values, repeat)?,
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

/// The sweep file as it starts: what is varied and how, no points yet.
fn record(args: &SweepArgs, course: &Course, slo: &Option<Slo>, first: &RunPlan) -> SweepResult {
    let (vary_name, kind, spec, values) = match course {
        Course::Grid { factor, values } => (
            factor.name().to_string(),
            match factor {
                Factor::Load(LoadSetting::Clients) => VaryKind::Clients,
                Factor::Load(LoadSetting::Rate) => VaryKind::Rate,
                Factor::Load(LoadSetting::Pipeline) => VaryKind::Pipeline,
                Factor::Load(_) => VaryKind::Threads,
                Factor::Param(_) | Factor::Url(_) => VaryKind::Param,
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
        Course::Grid { factor, values } => format!(
            "{} over {}{}",
            factor.name(),
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
