//! `loadrig ab`: two variants, K rounds, interleaved (A B A B …, or a random order per round
//! with `--shuffle`), each run through the one runner into its own result file, then the
//! comparison of several runs per side (`analysis::rounds`) in `DIR/ab.json`.
//!
//! Interleaving spreads the machine's slow drifts (neighbours, frequency, caches) over both
//! variants instead of giving all of one variant's runs the same moment.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Result;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::compare::{build, exit_code, render, Settings};
use crate::analysis::ab::{AbRecord, Variant, SCHEMA_VERSION};
use crate::analysis::compare::{Comparison, MetricChange};
use crate::analysis::TOTAL;
use crate::cli::{AbArgs, Format, RunArgs};
use crate::error::InputError;
use crate::plan::{self, LoadSetting, RunPlan, Value};
use crate::report::comparison::{change_text, interval_text};
use crate::result::{self, RunStatus};
use crate::runner::{self, View};
use crate::targets::{with_target_type, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    A,
    B,
}

impl Side {
    fn letter(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }

    /// The error, saying which variant it is about.
    fn name(self, mut e: InputError) -> InputError {
        e.message = format!("variant {}: {}", self.letter().to_uppercase(), e.message);
        e
    }
}

/// `loadrig ab A [B] [--a-set …] [--b-set …] [--a-target …] [--b-target …] --rounds K -o DIR`.
pub fn ab(args: &AbArgs) -> Result<ExitCode> {
    check_args(args)?;
    let settings = Settings::parse(
        args.verdict.noise.as_deref(),
        &args.verdict.detect,
        &args.run.checks,
    )?;
    let dir = args.run.out.clone().unwrap_or_else(default_dir);
    if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(InputError::new(format!(
            "-o {}: the folder exists and is not empty",
            dir.display()
        ))
        .help("give ab a new or empty folder: it writes a-1.json, b-1.json, … and ab.json there")
        .into());
    }
    // Every plan is resolved before anything runs: bad input exits 2 having run nothing.
    let plans: Vec<[RunPlan; 2]> = (1..=args.rounds)
        .map(|k| {
            Ok([
                plan_of(args, Side::A, k, &dir)?,
                plan_of(args, Side::B, k, &dir)?,
            ])
        })
        .collect::<Result<_, InputError>>()?;
    for (plan, side) in plans[0].iter().zip([Side::A, Side::B]) {
        check_target(plan).map_err(|e| side.name(e))?;
    }
    let orders = orders(args);
    let (mut order, mut files) = (Vec::new(), [Vec::new(), Vec::new()]);
    let mut complete = true;
    'rounds: for (k, (pair, sides)) in plans.iter().zip(&orders).enumerate() {
        for side in sides {
            let plan = &pair[*side as usize];
            let result = runner::execute(plan, View::Quiet)?;
            let path = &plan.outputs.result;
            result::write_atomic(path, &serde_json::to_vec_pretty(&result)?)?;
            order.push(format!("{}-{}", side.letter(), k + 1));
            if result.status == RunStatus::Interrupted {
                complete = false;
                break 'rounds;
            }
            files[*side as usize].push(path.clone());
        }
        let line = progress(k + 1, args.rounds, &files, &settings);
        // With --format json standard output is the document alone.
        if args.verdict.format == Format::Json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    let rounds_done = files[0].len().min(files[1].len());
    if rounds_done == 0 {
        anyhow::bail!("interrupted before a round finished: nothing to compare");
    }
    let (a, b) = (&files[0][..rounds_done], &files[1][..rounds_done]);
    let comparison = build(a, b, &settings)?;
    let record = AbRecord {
        kind: "ab".into(),
        schema_version: SCHEMA_VERSION,
        rounds: args.rounds,
        shuffle: args.shuffle,
        order,
        a: variant(&plans[0][0], &args.a_set, a),
        b: variant(&plans[0][1], &args.b_set, b),
        complete,
        comparison,
    };
    let out = dir.join("ab.json");
    result::write_atomic(&out, &serde_json::to_vec_pretty(&record)?)?;
    if args.verdict.format == Format::Json {
        print!("{}", render(&record.comparison, args.verdict.format));
        eprintln!("ab: {}", out.display());
    } else {
        print!("\n{}", render(&record.comparison, args.verdict.format));
        println!("ab: {}", out.display());
    }
    Ok(if complete {
        exit_code(&record.comparison, args.verdict.fail_on_regression)
    } else {
        ExitCode::from(130)
    })
}

fn check_args(args: &AbArgs) -> Result<(), InputError> {
    if args.rounds == 0 {
        return Err(InputError::new("--rounds 0: ab needs at least one round")
            .help("--rounds 5 (the default) or more; one round per side cannot measure run-to-run variance"));
    }
    if args.run.report.is_some() || args.run.metrics_addr.is_some() {
        return Err(InputError::new(
            "ab writes neither a per-run --report nor a --metrics-addr endpoint",
        )
        .help("drop them, then `loadrig report DIR/a-1.json DIR/b-1.json` for pages"));
    }
    Ok(())
}

/// `ab-STAMP` here.
fn default_dir() -> PathBuf {
    let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    PathBuf::from(format!("ab-{stamp}"))
}

/// The load flags of one run of a variant: its workload, its `--X-set`s after the shared
/// `--set`s, its target, and with `--seed S` the seed S + k − 1 for round k (so rounds
/// differ as runs without `--seed` do, and A and B of a round share one).
fn plan_of(args: &AbArgs, side: Side, round: u32, dir: &Path) -> Result<RunPlan, InputError> {
    let mut run: RunArgs = args.run.clone();
    let (set, target) = match side {
        Side::A => (&args.a_set, &args.a_target),
        Side::B => (&args.b_set, &args.b_target),
    };
    if let (Side::B, Some(w)) = (side, &args.b_workload) {
        run.workload = w.clone();
    }
    run.set.extend(set.iter().cloned());
    if target.is_some() {
        run.target = target.clone();
    }
    if let Some(seed) = args.run.load.count(LoadSetting::Seed) {
        let seed = seed.wrapping_add(u64::from(round - 1));
        run.load.set(LoadSetting::Seed, Value::Count(seed));
    }
    run.out = Some(dir.join(format!("{}-{round}.json", side.letter())));
    run.checks.clear();
    plan::resolve(&run).map_err(|e| side.name(e))
}

/// The target's options, checked before anything runs (opening one only checks them).
fn check_target(plan: &RunPlan) -> Result<(), InputError> {
    with_target_type!(plan.target.scheme(), T => {
        T::from_url(&plan.target.parsed, &plan.workload.params).map(|_| ())
    })
}

/// Each round's order: A then B, or drawn at random (`--shuffle`, from `--seed` when given).
fn orders(args: &AbArgs) -> Vec<[Side; 2]> {
    let mut rng = match args.run.load.count(LoadSetting::Seed) {
        Some(s) => SmallRng::seed_from_u64(s ^ 0x0ab0_0ab0),
        None => SmallRng::from_rng(&mut rand::rng()),
    };
    (0..args.rounds)
        .map(|_| {
            if args.shuffle && rng.random_bool(0.5) {
                [Side::B, Side::A]
            } else {
                [Side::A, Side::B]
            }
        })
        .collect()
}

/// "round 2/5: throughput −8.4 % [−10.2 %, −6.7 %], mean +9.3 % [...]": the estimate so far.
fn progress(round: usize, rounds: u32, files: &[Vec<PathBuf>; 2], s: &Settings) -> String {
    let head = format!("round {round}/{rounds}");
    let quiet = Settings {
        noise: s.noise,
        detect: s.detect,
        checks: Vec::new(),
    };
    match build(&files[0], &files[1], &quiet) {
        Ok(c) => format!("{head}: B against A so far, {}", estimate_text(&c)),
        Err(e) => format!("{head}: no estimate yet ({e})"),
    }
}

fn estimate_text(c: &Comparison) -> String {
    let op = c
        .operations
        .iter()
        .find(|o| o.operation == TOTAL)
        .or(c.operations.first());
    let Some(op) = op else {
        return "no shared operations".into();
    };
    let show = |m: &MetricChange| {
        format!(
            "{} {} {}",
            m.metric.name(),
            change_text(m),
            interval_text(m)
        )
    };
    op.metrics
        .iter()
        .take(2)
        .map(show)
        .collect::<Vec<_>>()
        .join(", ")
}

fn variant(plan: &RunPlan, set: &[(String, String)], files: &[PathBuf]) -> Variant {
    Variant {
        workload: plan.workload.name.clone(),
        target: plan.target.shown(),
        set: set.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        files: files
            .iter()
            .map(|f| {
                f.file_name()
                    .map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into())
            })
            .collect(),
    }
}
