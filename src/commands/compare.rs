//! `loadrig compare`: the change of every metric, its interval and its verdict, from one
//! run per side or several.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::report::labels;
use crate::analysis::checks::{self, Check};
use crate::analysis::compare::{self as comparison, Comparison, Method};
use crate::analysis::{self, rounds, shift};
use crate::cli::{CompareArgs, Format};
use crate::error::InputError;
use crate::result::{self, RunResult};

/// `--noise 2%` (or `2`) as a fraction. Above 100 % is allowed: latencies can grow by more
/// than that (a doubled latency is +100 %), though a fall never goes below −100 %.
pub(super) fn parse_percent(text: &str, flag: &str) -> Result<f64, InputError> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v / 100.0),
        _ => Err(InputError::new(format!(
            "{flag} {text}: expected a percentage of 0 or more, like 2%"
        ))),
    }
}

/// How a comparison is made, whatever its runs.
pub(super) struct Settings {
    /// `--noise`, when given; else the default of the method.
    pub noise: Option<f64>,
    pub detect: f64,
    pub checks: Vec<Check>,
}

impl Settings {
    pub fn parse(noise: Option<&str>, detect: &str, checks: &[String]) -> Result<Settings> {
        Ok(Settings {
            noise: noise.map(|n| parse_percent(n, "--noise")).transpose()?,
            detect: parse_percent(detect, "--detect")?,
            checks: checks
                .iter()
                .map(|t| checks::parse(t))
                .collect::<Result<Vec<_>, _>>()?,
        })
    }
}

/// The two sides of `compare`: `BASE NEW`, or `A1 A2 … -- B1 B2 …`.
fn sides(args: &CompareArgs) -> Result<(Vec<PathBuf>, Vec<PathBuf>), InputError> {
    match (args.base.len(), args.new.is_empty()) {
        (2, true) => Ok((vec![args.base[0].clone()], vec![args.base[1].clone()])),
        (_, true) => Err(InputError::new(format!(
            "compare got {} file(s) and no `--`: which are base runs and which new?",
            args.base.len()
        ))
        .help("write `loadrig compare BASE.json NEW.json`, or `loadrig compare A1.json A2.json -- B1.json B2.json` (options before the --)")),
        _ => Ok((args.base.clone(), args.new.clone())),
    }
}

/// `loadrig compare BASE.json NEW.json` or `loadrig compare A1 A2 … -- B1 B2 …`.
pub fn compare(args: &CompareArgs) -> Result<ExitCode> {
    let settings = Settings::parse(
        args.verdict.noise.as_deref(),
        &args.verdict.detect,
        &args.checks,
    )?;
    let (base, new) = sides(args)?;
    if let Some(out) = &args.report {
        if base.iter().chain(&new).any(|f| f == out) {
            return Err(InputError::new(format!(
                "--report {} would overwrite a compared file",
                out.display()
            ))
            .help("name the page FILE.html")
            .into());
        }
    }
    let c = build(&base, &new, &settings)?;
    if let Some(out) = &args.report {
        let page = crate::report::html::render_comparison(&c)?;
        result::write_atomic(out, page.as_bytes())?;
    }
    print!("{}", render(&c, args.verdict.format));
    Ok(exit_code(&c, args.verdict.fail_on_regression))
}

/// Read both sides' files and compare them: one run per side by its intervals, several by
/// their runs.
pub(super) fn build(base: &[PathBuf], new: &[PathBuf], s: &Settings) -> Result<Comparison> {
    let read = |files: &[PathBuf]| -> Result<Vec<RunResult>> {
        files.iter().map(|f| result::read(f)).collect()
    };
    let (base_runs, new_runs) = (read(base)?, read(new)?);
    let all: Vec<PathBuf> = base.iter().chain(new).cloned().collect();
    let names = labels(&all);
    let (base_names, new_names) = names.split_at(base.len());
    for (r, name) in new_runs.iter().zip(new_names) {
        checks::check_ops(
            &s.checks,
            &analysis::op_names(r),
            &format!("the new run '{name}'"),
        )?;
    }
    let several = base_runs.len() > 1 || new_runs.len() > 1;
    let options = comparison::Options {
        noise: s.noise.unwrap_or(if several {
            comparison::ROUNDS_NOISE
        } else {
            comparison::RUN_TO_RUN_ALLOWANCE
        }),
        detect: s.detect,
        ..comparison::Options::default()
    };
    let mut c = if several {
        let (b, n) = (sided(&base_runs, base_names), sided(&new_runs, new_names));
        rounds::compare_rounds(&b, &n, &options)?
    } else {
        comparison::compare(
            &base_runs[0],
            &base_names[0],
            &new_runs[0],
            &new_names[0],
            &options,
        )?
    };
    c.shift_function = Some(shift::for_runs(
        &base_runs.iter().collect::<Vec<_>>(),
        &new_runs.iter().collect::<Vec<_>>(),
        &shift::Options::default(),
    )?);
    c.server = analysis::server::sides(&base_runs, &new_runs);
    for (r, name) in new_runs.iter().zip(new_names) {
        for mut o in checks::evaluate_all(&s.checks, r) {
            if several {
                o.check = format!("{name}: {}", o.check);
            }
            c.checks.push(o);
        }
    }
    Ok(c)
}

fn sided<'a>(runs: &'a [RunResult], names: &'a [String]) -> Vec<rounds::Run<'a>> {
    runs.iter()
        .zip(names)
        .map(|(result, file)| rounds::Run { result, file })
        .collect()
}

pub(super) fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Table => crate::report::comparison::table(c),
        Format::Markdown => crate::report::comparison::markdown(c),
        Format::Json => crate::report::comparison::json(c),
    }
}

/// 1 for a regression under `--fail-on-regression` or a failed check; a regression judged
/// from one run per side is weak evidence, and standard error says so.
pub(super) fn exit_code(c: &Comparison, fail_on_regression: bool) -> ExitCode {
    if fail_on_regression && c.method == Method::IntervalBootstrap {
        eprintln!(
            "warning: --fail-on-regression on one run per side is weak evidence: run-to-run variance is unknown, so only changes beyond ±{}% can count; compare several runs per side (loadrig ab) for a trustworthy verdict",
            comparison::percent_text(c.noise)
        );
    }
    if (fail_on_regression && c.regressed()) || c.check_failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
