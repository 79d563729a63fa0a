//! `loadrig compare BASE NEW`: the change of every metric, its interval and its verdict.

use std::process::ExitCode;

use anyhow::Result;

use super::report::labels;
use crate::analysis::checks;
use crate::analysis::{self, compare as comparison, shift};
use crate::cli::{CompareArgs, Format};
use crate::error::InputError;
use crate::result;

/// `--noise 2%` (or `2`) as a fraction. Above 100 % is allowed: latencies can grow by more
/// than that (a doubled latency is +100 %), though a fall never goes below −100 %.
fn parse_noise(text: &str) -> Result<f64, InputError> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v / 100.0),
        _ => Err(InputError::new(format!(
            "--noise {text}: expected a percentage of 0 or more, like 2%"
        ))),
    }
}

/// `loadrig compare BASE.json NEW.json`.
pub fn compare(args: &CompareArgs) -> Result<ExitCode> {
    let noise = parse_noise(&args.noise)?;
    let parsed = args
        .checks
        .iter()
        .map(|t| checks::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let base = result::read(&args.base)?;
    let new = result::read(&args.new)?;
    checks::check_ops(
        &parsed,
        &analysis::op_names(&new),
        &format!("the new run '{}'", args.new.display()),
    )?;
    let names = labels(&[args.base.clone(), args.new.clone()]);
    let options = comparison::Options {
        noise,
        ..comparison::Options::default()
    };
    let mut c = comparison::compare(&base, &names[0], &new, &names[1], &options)?;
    c.checks = checks::evaluate_all(&parsed, &new);
    c.shift_function = Some(shift::for_runs(
        &[&base],
        &[&new],
        &shift::Options::default(),
    )?);
    let text = match args.format {
        Format::Table => crate::report::comparison::table(&c),
        Format::Markdown => crate::report::comparison::markdown(&c),
        Format::Json => crate::report::comparison::json(&c),
    };
    print!("{text}");
    Ok(
        if (args.fail_on_regression && c.regressed()) || c.check_failed() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}
