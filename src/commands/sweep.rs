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

use super::{default_out, describe, execute, resolve, same_path, RunSetup, View};
use crate::analysis::knee::{self, Search};
use crate::analysis::{growth, usl};
use crate::cli::{RunArgs, SweepArgs};
use crate::engine::{self, Mode};
use crate::error::InputError;
use crate::report::{html, sweep as table};
use crate::result::models::{Knee, Slo};
use crate::result::sweep::{
    self, GrowthModel, GrowthSpec, KneeModel, Models, SweepKind, SweepPoint, SweepResult,
    SweepStatus, UslModel, VaryRecord,
};
use crate::result::{self, RunResult, RunStatus};
use crate::spec::{self, builtin, OpKind, Source, Workload};
use crate::targets::{redact, with_target_type, Target, TargetUrl};

/// At most this many points in one grid.
const MAX_POINTS: usize = 1000;

/// The setting a sweep varies.
#[derive(Debug, Clone, PartialEq)]
enum Setting {
    Clients,
    Rate,
    /// A workload parameter, as with `--set`.
    Param(String),
}

impl Setting {
    fn name(&self) -> &str {
        match self {
            Setting::Clients => "clients",
            Setting::Rate => "rate",
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
    url: TargetUrl,
    /// The first point, resolved: its workload opens a shared target, its plan is shown.
    first: RunSetup,
    out: PathBuf,
    record: SweepResult,
}

pub fn sweep(args: &SweepArgs) -> Result<ExitCode> {
    let plan = Plan::new(args)?;
    let scheme = plan.url.scheme.clone();
    with_target_type!(scheme.as_str(), T => plan.run(|url, w| T::from_url(url, &w.params)))
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

/// The run arguments of one grid point.
fn point_args(base: &RunArgs, setting: &Setting, value: &str) -> Result<RunArgs, InputError> {
    let mut a = base.clone();
    // The sweep's report is the sweep's, written at its end.
    a.report = None;
    let number = || {
        value.parse::<f64>().ok().ok_or_else(|| {
            InputError::new(format!(
                "--vary {}: '{value}' is not a number",
                setting.name()
            ))
        })
    };
    match setting {
        Setting::Clients => {
            let n = number()?;
            if n.fract() != 0.0 || n < 1.0 {
                return Err(InputError::new(format!(
                    "--vary clients: '{value}' is not a whole number of clients"
                )));
            }
            a.clients = Some(n as u64);
        }
        Setting::Rate => a.rate = Some(number()?),
        Setting::Param(name) => {
            a.set.retain(|(n, _)| n != name);
            a.set.push((name.clone(), value.to_string()));
        }
    }
    Ok(a)
}

/// The run arguments of growth batch `k`: exactly `batch` operations, no warm-up, the data
/// loaded by the first batch only.
fn growth_args(base: &RunArgs, batch: u64, k: u64) -> RunArgs {
    let mut a = base.clone();
    a.report = None;
    a.ops = Some(batch);
    a.duration = None;
    a.samples = None;
    a.warmup = Some("0s".to_string());
    a.skip_load = base.skip_load || k > 0;
    a
}

/// Check one point's arguments, naming the point in the error.
fn check(args: &RunArgs, what: &str) -> Result<(), InputError> {
    resolve(args)
        .map(|_| ())
        .map_err(|e| InputError::new(format!("{what}: {e:#}")))
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
        let (source_name, text) = builtin::resolve(&base.workload)?;
        let workload = spec::compile(
            &Source {
                path: &source_name,
                text: &text,
            },
            &base.set,
        )?;
        let growth = args.growth_batch.is_some() || args.growth_limit.is_some();
        let course = if growth {
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
                .help("raise --growth-limit, or lower the data count (e.g. --set records=0)"));
            }
            if (limit - initial).div_ceil(batch) as usize > MAX_POINTS {
                return Err(InputError::new(format!(
                    "--growth-limit {limit} in batches of {batch} makes more than {MAX_POINTS} batches"
                ))
                .help("raise --growth-batch"));
            }
            check(&growth_args(base, batch, 0), "growth batch")?;
            Course::Growth {
                batch,
                limit,
                initial,
            }
        } else {
            let Some(vary) = &args.vary else {
                return Err(InputError::new("sweep needs something to vary").help(
                    "add --vary clients=1,2,4,8 (or rate=…, or a workload parameter), or a growth study with --growth-batch B --growth-limit RECORDS",
                ));
            };
            let (name, values) = parse_vary(vary, args.find_max)?;
            let setting = match name.as_str() {
                "clients" => Setting::Clients,
                "rate" => Setting::Rate,
                p if workload.params.contains_key(p) => Setting::Param(p.to_string()),
                other => {
                    let params: Vec<&str> = workload.params.keys().map(String::as_str).collect();
                    return Err(InputError::new(format!(
                        "--vary {other}: '{other}' is neither a load setting nor a parameter of the workload '{}'",
                        workload.name
                    ))
                    .help(if params.is_empty() {
                        "vary clients or rate (this workload declares no [params])".to_string()
                    } else {
                        format!(
                            "vary clients, rate, or one of the workload's parameters: {}",
                            params.join(", ")
                        )
                    }));
                }
            };
            let flag_given = match &setting {
                Setting::Clients => base.clients.is_some(),
                Setting::Rate => base.rate.is_some(),
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
            if args.find_max {
                if setting != Setting::Rate {
                    return Err(InputError::new(
                        "--find-max searches rates: use --vary rate=LOW..HIGH",
                    ));
                }
                if slo.is_none() {
                    return Err(
                        InputError::new("--find-max needs an objective to search for")
                            .help("add --slo 'p99 < 50ms'"),
                    );
                }
            }
            for value in &values {
                check(
                    &point_args(base, &setting, value)?,
                    &format!("--vary {}={value}", setting.name()),
                )?;
            }
            match (args.find_max, values.as_slice()) {
                (true, [min, max]) => {
                    let (min, max) = (
                        min.parse::<f64>().unwrap_or(0.0),
                        max.parse::<f64>().unwrap_or(0.0),
                    );
                    if min <= 0.0 {
                        return Err(InputError::new(
                            "--find-max: the lowest rate must be above zero",
                        ));
                    }
                    Course::Search { min, max }
                }
                _ => Course::Grid { setting, values },
            }
        };

        let (vary_name, kind, spec, values) = match &course {
            Course::Grid { setting, values } => (
                setting.name().to_string(),
                match setting {
                    Setting::Clients => "clients",
                    Setting::Rate => "rate",
                    Setting::Param(_) => "param",
                },
                args.vary.clone().unwrap_or_default(),
                values.clone(),
            ),
            Course::Search { min, max } => (
                "rate".to_string(),
                "rate",
                args.vary.clone().unwrap_or_default(),
                vec![fmt_num(*min), fmt_num(*max)],
            ),
            Course::Growth { .. } => ("records".to_string(), "growth", String::new(), Vec::new()),
        };
        let (url, first) = resolve(&match &course {
            Course::Grid { setting, values } => point_args(base, setting, &values[0])?,
            Course::Search { min, .. } => point_args(base, &Setting::Rate, &fmt_num(*min))?,
            Course::Growth { batch, .. } => growth_args(base, *batch, 0),
        })
        .map_err(|e| InputError::new(format!("{e:#}")))?;
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
        let record = SweepResult {
            schema_version: sweep::SCHEMA_VERSION,
            kind: SweepKind::Sweep,
            loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
            status: SweepStatus::Running,
            workload: workload.name.clone(),
            target: redact(&first.target_url),
            vary: VaryRecord {
                name: vary_name,
                kind: kind.to_string(),
                spec,
                values,
            },
            repeat: args.repeat,
            slo: slo.clone(),
            find_max: args.find_max,
            growth: match course {
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
        };
        Ok(Plan {
            args,
            course,
            slo,
            url,
            first,
            out,
            record,
        })
    }

    /// Run every point on targets of type `T`, opened by `open` (once for a growth study,
    /// whose batches must meet the same store; otherwise afresh for every point, like
    /// separate runs).
    fn run<T: Target>(
        self,
        open: impl Fn(&TargetUrl, &Workload) -> Result<T, InputError>,
    ) -> Result<ExitCode> {
        let shared = match self.course {
            Course::Growth { .. } => Some(Arc::new(open(&self.url, &self.first.workload)?)),
            _ => None,
        };
        let mut s = Sweeper {
            record: self.record,
            out: self.out,
            slo: self.slo,
            shared,
            open,
        };
        let base = &self.args.run;
        let repeat = self.args.repeat;
        let first = &self.first;
        println!(
            "loadrig {} sweep: {} on {} — {}; first point: {}",
            env!("CARGO_PKG_VERSION"),
            s.record.workload,
            s.record.target,
            match &self.course {
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
                Course::Growth { batch, limit, .. } =>
                    format!("growth study, batches of {batch} up to {limit} records"),
            },
            describe(&first.plan)
        );
        println!("{}", table::header(&s.record.vary.name, s.slo.is_some()));

        let mut interrupted = false;
        match self.course.clone() {
            Course::Grid { setting, values } => {
                'grid: for value in &values {
                    let x = value.parse::<f64>().ok();
                    for rep in 1..=repeat {
                        let args = point_args(base, &setting, value)?;
                        if !s.point(&args, 0, value, x, rep, None)? {
                            interrupted = true;
                            break 'grid;
                        }
                    }
                }
                s.grid_models(&setting);
            }
            Course::Search { min, max } => {
                let mut search = Search::new(min, max);
                'search: while let Some(rate) = search.next() {
                    let value = fmt_num(rate);
                    let mut passed = true;
                    for rep in 1..=repeat {
                        let args = point_args(base, &Setting::Rate, &value)?;
                        if !s.point(&args, 0, &value, Some(rate), rep, None)? {
                            interrupted = true;
                            break 'search;
                        }
                        passed &= s.record.points.last().and_then(|p| p.slo_ok) == Some(true);
                    }
                    search.record(rate, passed);
                }
                s.knee_model(search.knee(), "search");
            }
            Course::Growth {
                batch,
                limit,
                initial,
            } => {
                let puts: Vec<String> = first
                    .ops
                    .iter()
                    .filter(|o| matches!(o.kind, OpKind::Put { .. }))
                    .map(|o| o.name.clone())
                    .collect();
                let mut stored = initial;
                let mut k = 0;
                let mut series = Vec::new();
                while stored < limit {
                    let args = growth_args(base, batch, k);
                    let value = stored.to_string();
                    if !s.point(
                        &args,
                        k * batch,
                        &value,
                        Some(stored as f64),
                        1,
                        Some(stored),
                    )? {
                        interrupted = true;
                        break;
                    }
                    let Some(p) = s.record.points.last() else {
                        break;
                    };
                    let added: u64 = if puts.is_empty() {
                        p.result.total.ok
                    } else {
                        p.result
                            .operations
                            .iter()
                            .filter(|o| puts.contains(&o.name))
                            .map(|o| o.ok)
                            .sum()
                    };
                    if added == 0 {
                        s.record.notes.push(format!(
                            "batch {} stored no record (every operation failed); the study stopped there",
                            k + 1
                        ));
                        break;
                    }
                    // The batch's cost is that of the records it met on average: its middle.
                    series.push((stored as f64 + added as f64 / 2.0, p.measured_s));
                    stored += added;
                    k += 1;
                }
                if puts.is_empty() {
                    s.record.notes.push(
                        "the workload has no kv.put operation: every successful operation counts as one record stored"
                            .to_string(),
                    );
                }
                let fit = growth::classify(&series);
                let (from, to) = (initial as f64, stored as f64);
                s.record.models.growth =
                    Some(GrowthModel::new(s.record.target.clone(), fit, from, to));
            }
        }

        s.record.status = if interrupted {
            SweepStatus::Interrupted
        } else {
            SweepStatus::Complete
        };
        s.record.ended_at = Some(humantime::format_rfc3339_millis(SystemTime::now()).to_string());
        s.write()?;
        print!("\n{}", table::summary(&s.record));
        println!("sweep result: {}", s.out.display());
        if let Some(report) = &base.report {
            let label = s.out.file_name().map_or_else(
                || s.out.display().to_string(),
                |n| n.to_string_lossy().into(),
            );
            let page = html::render_sweep(&label, &s.record)?;
            result::write_atomic(report, page.as_bytes())?;
            println!("report: {}", report.display());
        }
        Ok(if interrupted {
            ExitCode::from(130)
        } else {
            ExitCode::SUCCESS
        })
    }
}

fn runs_each(repeat: u32) -> String {
    if repeat > 1 {
        format!(" ({repeat} runs each)")
    } else {
        String::new()
    }
}

/// The running sweep: its record so far and where its points' targets come from.
struct Sweeper<T, F> {
    record: SweepResult,
    out: PathBuf,
    slo: Option<Slo>,
    shared: Option<Arc<T>>,
    open: F,
}

impl<T: Target, F: Fn(&TargetUrl, &Workload) -> Result<T, InputError>> Sweeper<T, F> {
    /// Run one point, print its row and save the sweep; false when it was interrupted.
    fn point(
        &mut self,
        args: &RunArgs,
        seq_offset: u64,
        value: &str,
        x: Option<f64>,
        repeat: u32,
        stored_before: Option<u64>,
    ) -> Result<bool> {
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let (url, mut setup) = resolve(args)?;
        setup.seq_offset = seq_offset;
        let offered = match setup.plan.mode {
            Mode::Open { rate, .. } => Some(rate),
            Mode::Closed { .. } => None,
        };
        let target = match &self.shared {
            Some(t) => Arc::clone(t),
            None => Arc::new((self.open)(&url, &setup.workload)?),
        };
        let result = execute(target, setup, View::Quiet)?;
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
            Setting::Param(_) => {}
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
