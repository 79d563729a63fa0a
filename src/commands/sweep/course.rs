//! How a sweep goes through its points: `--vary NAME=VALUES` (a grid, or with `--find-max`
//! a search between two rates) or `--growth-batch B --growth-limit M`, checked against the
//! other flags and the workload; and the plan of each point, the base plan varied.

use crate::cli::{RunArgs, SweepArgs};
use crate::error::InputError;
use crate::plan::{Factor, LoadSetting, RunPlan, Value};
use crate::workload::Workload;

/// At most this many points in one grid.
pub const MAX_POINTS: usize = 1000;

/// How the sweep goes through its points.
#[derive(Debug, Clone)]
pub enum Course {
    /// Every value (each `repeat` times), in order.
    Grid { factor: Factor, values: Vec<String> },
    /// `--find-max`: rates chosen by the knee search between two ends.
    Search { min: f64, max: f64 },
    /// `--growth-batch B --growth-limit M`.
    Growth {
        batch: u64,
        limit: u64,
        initial: u64,
    },
}

/// The rate, which a search varies.
pub const RATE: Factor = Factor::Load(LoadSetting::Rate);

/// Parse `NAME=VALUES`: a list `a,b,c`, a range `a..b:step` (both ends included), or with
/// `find_max` a bare range `a..b` (its two ends).
pub fn parse_vary(text: &str, find_max: bool) -> Result<(String, Vec<String>), InputError> {
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
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{}", (x * 1e6).round() / 1e6)
    }
}

/// A point's value as the factor takes it: clients, pipeline depths and threads are counts,
/// a rate a number, a parameter as `--set` gives it.
fn point_value(factor: &Factor, value: &str) -> Result<Value, InputError> {
    match factor {
        Factor::Load(LoadSetting::Rate) => value.parse::<f64>().map(Value::Number).map_err(|_| {
            InputError::new(format!(
                "--vary {}: '{value}' is not a number",
                factor.name()
            ))
        }),
        Factor::Load(_) => value
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .map(Value::Count)
            .ok_or_else(|| {
                InputError::new(format!(
                    "--vary {}: '{value}' is not a whole number of at least 1",
                    factor.name()
                ))
            }),
        Factor::Param(_) | Factor::Url(_) => Ok(Value::Text(value.to_string())),
    }
}

/// The plan of a grid point: the base plan with the factor at `value`, through the same
/// checks as the flags. Errors name the point.
pub fn point_plan(base: &RunPlan, factor: &Factor, value: &str) -> Result<RunPlan, InputError> {
    let level = point_value(factor, value)?;
    base.vary(factor, &level)
        .map_err(|e| InputError::new(format!("--vary {}={value}: {e}", factor.name())))
}

/// The flags of the first point: the loop kind the varied setting asks for, so that flags
/// of that kind (`--max-in-flight` on a rate sweep) resolve; a growth study's batch count
/// (any stop flag replaces the file's). The sweep's report is the sweep's, written at its
/// end.
pub fn base_args(base: &RunArgs, course: &Course) -> RunArgs {
    let mut a = base.clone();
    a.report = None;
    let first = |values: &[String]| values[0].parse::<f64>().ok();
    let (setting, value) = match course {
        Course::Grid {
            factor: Factor::Load(LoadSetting::Clients),
            values,
        } => (
            LoadSetting::Clients,
            Value::Count(first(values).filter(|n| *n >= 1.0).map_or(1, |n| n as u64)),
        ),
        Course::Grid {
            factor: Factor::Load(LoadSetting::Rate),
            values,
        } => (
            LoadSetting::Rate,
            Value::Number(first(values).unwrap_or(1.0)),
        ),
        Course::Search { min, .. } => (LoadSetting::Rate, Value::Number(*min)),
        Course::Growth { batch, .. } => (LoadSetting::Ops, Value::Count(*batch)),
        Course::Grid { .. } => return a,
    };
    a.load.set(setting, value);
    a
}

/// `--growth-batch B --growth-limit N`, checked against the other flags and the workload.
pub fn growth_course(args: &SweepArgs, workload: &Workload) -> Result<Course, InputError> {
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
    for setting in [
        LoadSetting::Duration,
        LoadSetting::Ops,
        LoadSetting::Samples,
        LoadSetting::Warmup,
    ] {
        if base.load.get(setting).is_some() {
            return Err(InputError::new(format!(
                "{} does not apply to a growth study: every batch runs exactly --growth-batch operations",
                setting.spec().flag
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
pub fn grid_course(
    args: &SweepArgs,
    workload: &Workload,
    has_slo: bool,
) -> Result<Course, InputError> {
    let Some(vary) = &args.vary else {
        return Err(InputError::new("sweep needs something to vary").help(
            "add --vary clients=1,2,4,8 (or rate=…, or a workload parameter), or a growth study with --growth-batch B --growth-limit RECORDS",
        ));
    };
    let (name, values) = parse_vary(vary, args.find_max)?;
    let factor = factor(&name, workload)?;
    let base = &args.run;
    let (given, flag) = match &factor {
        Factor::Load(s) => (base.load.get(*s).is_some(), s.spec().flag.to_string()),
        Factor::Param(p) => (base.set.iter().any(|(n, _)| n == p), format!("--set {p}")),
        Factor::Url(o) => (false, format!("the target's ?{o}")),
    };
    if given {
        return Err(InputError::new(format!(
            "--vary {} and {flag} both set it: keep one",
            factor.name()
        )));
    }
    if !args.find_max {
        return Ok(Course::Grid { factor, values });
    }
    if factor != RATE {
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

/// What `--vary NAME` names: the load settings a sweep's models read (clients, rate, the
/// pipeline, the threads) or one of the workload's parameters.
fn factor(name: &str, workload: &Workload) -> Result<Factor, InputError> {
    use LoadSetting::{Clients, Pipeline, Rate, Threads};
    match LoadSetting::named(name) {
        Some(s @ (Clients | Rate | Pipeline | Threads)) if s.spec().key == Some(name) => {
            return Ok(Factor::Load(s))
        }
        _ if workload.params.contains_key(name) => return Ok(Factor::Param(name.to_string())),
        _ => {}
    }
    let params: Vec<&str> = workload.params.keys().map(String::as_str).collect();
    Err(InputError::new(format!(
        "--vary {name}: '{name}' is neither a load setting nor a parameter of the workload '{}'",
        workload.name
    ))
    .help(if params.is_empty() {
        "vary clients, rate, pipeline or threads (this workload declares no [params])".to_string()
    } else {
        format!(
            "vary clients, rate, pipeline, threads, or one of the workload's parameters: {}",
            params.join(", ")
        )
    }))
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
