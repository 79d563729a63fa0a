//! Thresholds on a run: `read.p99 < 20ms`, `errors < 0.1%`, `throughput > 5000/s`.
//!
//! A check is `[OPERATION.]METRIC OPERATOR VALUE`:
//! - OPERATION is an operation name, or `total` (also when omitted) for all operations;
//! - METRIC is `p50`, `p90`, `p99`, `p999` (or `p99.9`), `max`, `mean` (durations with a
//!   unit: ns, us or µs, ms, s), `throughput` (successful operations per second, `/s` may
//!   follow the number) or `errors` (a count, or with `%` a share of attempted operations);
//! - OPERATOR is `<`, `<=`, `>` or `>=`.
//!
//! The one check without an operator is `valid`: the run's own verdict (docs/validity.md)
//! must be `valid`, so CI can refuse figures the rig itself does not trust.
//!
//! In a run with stages, `@STAGE` after the value (or after `valid`) checks one stage's
//! figures: `read.p99 < 20ms @spike`. It comes after the operator, where no operation name
//! can be, and a stage's name holds no `@`, so it never collides with an operation's name.
//!
//! Operation names may contain anything except a line break, so the operator is the last
//! `<` or `>` of the text and the metric is what follows the last dot before it.
//! `loadrig sweep --slo` parses its objective with the same grammar (`analysis::knee::Slo`).
//! Checks are parsed before anything runs (a malformed one is an input error, exit 2) and
//! evaluated on the result file's figures (a failed one exits 1).

use std::fmt;

use serde::Serialize;

use super::TOTAL;
use crate::duration::human_ns;
use crate::error::InputError;
use crate::result::models::LatencyStat;
use crate::result::{OpResult, RunResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckMetric {
    Latency(LatencyStat),
    Throughput,
    Errors,
    /// `valid`: the run's verdict on itself.
    Valid,
}

impl CheckMetric {
    pub fn name(self) -> &'static str {
        match self {
            CheckMetric::Latency(LatencyStat::P50) => "p50",
            CheckMetric::Latency(LatencyStat::P90) => "p90",
            CheckMetric::Latency(LatencyStat::P99) => "p99",
            CheckMetric::Latency(LatencyStat::P999) => "p999",
            CheckMetric::Latency(LatencyStat::Max) => "max",
            CheckMetric::Latency(LatencyStat::Mean) => "mean",
            CheckMetric::Throughput => "throughput",
            CheckMetric::Errors => "errors",
            CheckMetric::Valid => "valid",
        }
    }

    fn parse(word: &str) -> Option<CheckMetric> {
        Some(match word.to_ascii_lowercase().as_str() {
            "p50" | "median" => CheckMetric::Latency(LatencyStat::P50),
            "p90" => CheckMetric::Latency(LatencyStat::P90),
            "p99" => CheckMetric::Latency(LatencyStat::P99),
            "p999" | "p99.9" => CheckMetric::Latency(LatencyStat::P999),
            "max" => CheckMetric::Latency(LatencyStat::Max),
            "mean" => CheckMetric::Latency(LatencyStat::Mean),
            "throughput" => CheckMetric::Throughput,
            "errors" => CheckMetric::Errors,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Cmp::Lt => actual < limit,
            Cmp::Le => actual <= limit,
            Cmp::Gt => actual > limit,
            Cmp::Ge => actual >= limit,
        }
    }
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        })
    }
}

/// A parsed check.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// As written (trimmed).
    pub text: String,
    /// The operation; `None` for all operations together.
    pub op: Option<String>,
    pub metric: CheckMetric,
    pub cmp: Cmp,
    /// Nanoseconds, operations per second, an error count, or an error percentage.
    pub limit: f64,
    /// `errors` given as a percentage of attempted operations.
    pub percent: bool,
    /// `@STAGE`: the stage whose figures it reads; `None`: the whole run.
    pub stage: Option<String>,
}

const HELP: &str = "write [OPERATION.]METRIC OP VALUE, like 'read.p99 < 20ms', 'errors < 0.1%' or 'throughput > 5000/s', or 'valid' alone, and @STAGE after it for one stage ('p99 < 20ms @spike'); metrics: p50 p90 p99 p999 max mean throughput errors; operators: < <= > >=";

/// Parse one check; the error names the check and says what is wrong.
pub fn parse(text: &str) -> Result<Check, InputError> {
    parse_or_why(text)
        .map_err(|why| InputError::new(format!("check '{}': {why}", text.trim())).help(HELP))
}

/// Parse one check, or say why it is not one (the caller names it: a check, an objective).
pub fn parse_or_why(text: &str) -> Result<Check, String> {
    let text = text.trim();
    if text.contains('\n') {
        return Err("a check is one line".into());
    }
    // `valid`, or `valid @STAGE`: no operator anywhere.
    let verdict = text
        .get(..5)
        .is_some_and(|w| w.eq_ignore_ascii_case("valid"));
    if verdict && !text.contains(['<', '>']) {
        let rest = &text[5..];
        if rest.trim().is_empty() || rest.trim_start().starts_with('@') {
            let (_, stage) = split_stage(rest)?;
            return Ok(Check {
                text: text.to_string(),
                op: None,
                metric: CheckMetric::Valid,
                cmp: Cmp::Ge,
                limit: 1.0,
                percent: false,
                stage,
            });
        }
    }
    let (lhs, cmp, rhs) = split_at_operator(text)?;
    let (op, metric) = parse_subject(lhs)?;
    let (rhs, stage) = split_stage(rhs)?;
    let (limit, percent) = parse_limit(metric, rhs)?;
    Ok(Check {
        text: text.to_string(),
        op,
        metric,
        cmp,
        limit,
        percent,
        stage,
    })
}

/// `VALUE @STAGE`: the value and the stage, if one is named.
fn split_stage(rhs: &str) -> Result<(&str, Option<String>), String> {
    let Some((value, stage)) = rhs.split_once('@') else {
        return Ok((rhs.trim(), None));
    };
    let stage = stage.trim();
    if stage.is_empty() || stage.contains(char::is_whitespace) || stage.contains('@') {
        return Err(format!(
            "'@{stage}': name one stage after @, like @spike (or its number, @2)"
        ));
    }
    Ok((value.trim(), Some(stage.to_string())))
}

/// `LHS OP RHS` at the last comparison operator, both sides trimmed and not empty.
fn split_at_operator(text: &str) -> Result<(&str, Cmp, &str), String> {
    let Some(at) = text.rfind(['<', '>']) else {
        return Err("no comparison operator (<, <=, > or >=)".into());
    };
    let greater = text[at..].starts_with('>');
    let or_equal = text[at + 1..].starts_with('=');
    let cmp = match (greater, or_equal) {
        (false, false) => Cmp::Lt,
        (false, true) => Cmp::Le,
        (true, false) => Cmp::Gt,
        (true, true) => Cmp::Ge,
    };
    let lhs = text[..at].trim();
    let rhs = text[at + 1 + usize::from(or_equal)..].trim();
    if lhs.is_empty() {
        return Err("nothing to check before the operator".into());
    }
    if rhs.is_empty() {
        return Err("no value after the operator".into());
    }
    Ok((lhs, cmp, rhs))
}

/// `OP.METRIC`, `METRIC`, or `OP.p99.9`; the operation is none for the total.
fn parse_subject(lhs: &str) -> Result<(Option<String>, CheckMetric), String> {
    let (op, metric) = if let Some(m) = CheckMetric::parse(lhs) {
        (None, m)
    } else if let Some(stem) = lhs.strip_suffix("p99.9").and_then(|s| s.strip_suffix('.')) {
        (Some(stem), CheckMetric::Latency(LatencyStat::P999))
    } else {
        match lhs.rsplit_once('.') {
            Some((op, word)) => match CheckMetric::parse(word.trim()) {
                Some(m) => (Some(op.trim()), m),
                None => return Err(format!("unknown metric '{}'", word.trim())),
            },
            None => return Err(format!("unknown metric '{lhs}'")),
        }
    };
    let op = match op {
        Some("") => return Err("the operation name before '.' is empty".into()),
        Some(TOTAL) | None => None,
        Some(name) => Some(name.to_string()),
    };
    Ok((op, metric))
}

/// The limit in the metric's unit, and whether it is an error percentage.
fn parse_limit(metric: CheckMetric, rhs: &str) -> Result<(f64, bool), String> {
    match metric {
        CheckMetric::Valid => Err("'valid' stands alone, without an operator or a value".into()),
        CheckMetric::Latency(_) => Ok((parse_duration_ns(rhs)?, false)),
        CheckMetric::Throughput => {
            let number = rhs
                .strip_suffix("ops/s")
                .or_else(|| rhs.strip_suffix("/s"))
                .unwrap_or(rhs)
                .trim();
            let rate = parse_number(number).map_err(|_| {
                format!(
                    "throughput '{rhs}' is not a rate: write operations per second, like 5000/s"
                )
            })?;
            Ok((rate, false))
        }
        CheckMetric::Errors => match rhs.strip_suffix('%') {
            Some(p) => {
                let v = parse_number(p.trim())
                    .map_err(|_| format!("errors '{rhs}' is not a percentage, like 0.1%"))?;
                if v > 100.0 {
                    return Err(format!("errors '{rhs}': a percentage is at most 100%"));
                }
                Ok((v, true))
            }
            None => {
                let count = parse_number(rhs).map_err(|_| {
                    format!(
                        "errors '{rhs}' is neither a count (like 10) nor a percentage (like 0.1%)"
                    )
                })?;
                Ok((count, false))
            }
        },
    }
}

fn parse_number(s: &str) -> Result<f64, ()> {
    let s = s.replace('_', "");
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && !s.starts_with('+') => Ok(v),
        _ => Err(()),
    }
}

/// `20ms`, `1.5s`, `250us`, `250µs`, `800ns` → nanoseconds.
fn parse_duration_ns(s: &str) -> Result<f64, String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (number, unit) = (s[..split].trim(), s[split..].trim());
    if number.is_empty() {
        return Err(format!("'{s}' is not a duration, like 20ms"));
    }
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => {
            return Err(format!(
                "'{s}' has no unit: write a duration like 20ms, 250us or 1.5s"
            ))
        }
        other => {
            return Err(format!(
                "unknown time unit '{other}' in '{s}': use ns, us (µs), ms or s"
            ))
        }
    };
    let v = parse_number(number).map_err(|_| format!("'{s}' is not a duration, like 20ms"))?;
    Ok(v * scale)
}

/// Every check must name an operation the run has (or all of them).
pub fn check_ops(checks: &[Check], names: &[String], context: &str) -> Result<(), InputError> {
    for c in checks {
        if let Some(op) = &c.op {
            if !names.contains(op) {
                return Err(InputError::new(format!(
                    "check '{}': {context} has no operation '{op}'",
                    c.text
                ))
                .help(format!(
                    "its operations are: {} (or 'total', or no operation, for all of them)",
                    names.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// A check against one run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Outcome {
    pub check: String,
    pub passed: bool,
    /// The measured figure, formatted (`2.10ms`, `968/s`, `0.05% (3 of 6,000)`).
    pub actual: String,
    /// Why it failed when the figure does not exist (no operations).
    pub reason: Option<String>,
}

fn op_of<'a>(
    ops: &'a [OpResult],
    total: &'a OpResult,
    op: &Option<String>,
) -> Option<&'a OpResult> {
    match op {
        None => Some(if ops.len() == 1 { &ops[0] } else { total }),
        Some(name) => ops.iter().find(|o| &o.name == name),
    }
}

/// Evaluate a check on a run's figures.
pub fn evaluate(c: &Check, r: &RunResult) -> Outcome {
    let fail = |reason: String| Outcome {
        check: c.text.clone(),
        passed: false,
        actual: "-".into(),
        reason: Some(reason),
    };
    // `@STAGE`: that stage's figures and verdict.
    let (ops, total, validity) = match &c.stage {
        None => (&r.operations, &r.total, r.validity.as_ref()),
        Some(name) => match r.stages.iter().find(|s| &s.name == name) {
            Some(s) if s.measured_s > 0.0 => (&s.operations, &s.total, s.validity.as_ref()),
            Some(_) => return fail(format!("stage '{name}' did not run (or was all warm-up)")),
            None => return fail(format!("the run has no stage '{name}'")),
        },
    };
    let Some(o) = op_of(ops, total, &c.op) else {
        return fail(format!(
            "the run has no operation '{}'",
            c.op.as_deref().unwrap_or("")
        ));
    };
    let (actual, shown) = match c.metric {
        CheckMetric::Valid => {
            let Some(v) = validity else {
                return fail(
                    "the result has no verdict: it was written before loadrig judged its runs"
                        .into(),
                );
            };
            let valid = v.verdict == crate::result::validity::Verdict::Valid;
            (f64::from(u8::from(valid)), v.line())
        }
        CheckMetric::Latency(stat) => {
            if o.latency.count == 0 {
                return fail("no successful operations, so no latency".into());
            }
            let v = stat.of(&o.latency);
            (v, format!("{} = {}", c.metric.name(), human_ns(v)))
        }
        CheckMetric::Throughput => (
            o.throughput_per_s,
            format!("throughput = {:.1}/s", o.throughput_per_s),
        ),
        CheckMetric::Errors => {
            let attempts = o.ok + o.errors;
            if c.percent {
                let pct = if attempts == 0 {
                    0.0
                } else {
                    o.errors as f64 * 100.0 / attempts as f64
                };
                (
                    pct,
                    format!("errors = {pct:.3}% ({} of {attempts})", o.errors),
                )
            } else {
                (o.errors as f64, format!("errors = {}", o.errors))
            }
        }
    };
    Outcome {
        check: c.text.clone(),
        passed: c.cmp.holds(actual, c.limit),
        actual: shown,
        reason: None,
    }
}

/// Evaluate all checks.
pub fn evaluate_all(checks: &[Check], r: &RunResult) -> Vec<Outcome> {
    checks.iter().map(|c| evaluate(c, r)).collect()
}

/// The closing lines: one per check, passed or FAILED.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        let status = if o.passed { "passed" } else { "FAILED" };
        let why = o.reason.as_deref().unwrap_or(&o.actual);
        out.push_str(&format!("check {status}: {}  ({why})\n", o.check));
    }
    if !outcomes.is_empty() {
        let failed = outcomes.iter().filter(|o| !o.passed).count();
        out.push_str(&format!(
            "checks: {} passed, {failed} failed\n",
            outcomes.len() - failed
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        let c = parse("read.p99 < 20ms").unwrap();
        assert_eq!(c.op.as_deref(), Some("read"));
        assert_eq!(c.metric, CheckMetric::Latency(LatencyStat::P99));
        assert_eq!(c.cmp, Cmp::Lt);
        assert_eq!(c.limit, 20e6);

        let c = parse("errors < 0.1%").unwrap();
        assert_eq!(
            (c.op.clone(), c.metric, c.percent),
            (None, CheckMetric::Errors, true)
        );
        assert!((c.limit - 0.1).abs() < 1e-12);

        let c = parse("throughput > 5000/s").unwrap();
        assert_eq!(
            (c.metric, c.cmp, c.limit),
            (CheckMetric::Throughput, Cmp::Gt, 5000.0)
        );

        let c = parse("total.mean>=1.5s").unwrap();
        assert_eq!((c.op.clone(), c.cmp, c.limit), (None, Cmp::Ge, 1.5e9));
        assert_eq!(parse("x.p99.9 <= 250µs").unwrap().limit, 250e3);
        assert_eq!(
            parse("x.p99.9 <= 250us").unwrap().metric,
            CheckMetric::Latency(LatencyStat::P999)
        );
        assert_eq!(parse("errors <= 10").unwrap().limit, 10.0);
    }

    #[test]
    fn operation_names_may_hold_dots_and_angle_brackets() {
        let c = parse("<script>alert(1)</script>.p50 < 1s").unwrap();
        assert_eq!(c.op.as_deref(), Some("<script>alert(1)</script>"));
        let c = parse("kv.get.max < 1ms").unwrap();
        assert_eq!(c.op.as_deref(), Some("kv.get"));
    }

    #[test]
    fn a_stage_comes_after_the_value() {
        let c = parse("read.p99 < 20ms @spike").unwrap();
        assert_eq!(
            (c.op.as_deref(), c.stage.as_deref(), c.limit),
            (Some("read"), Some("spike"), 20e6)
        );
        // An operation's name may hold an @ (or anything): it is before the operator.
        let c = parse("a@b.p50 < 1ms").unwrap();
        assert_eq!((c.op.as_deref(), c.stage), (Some("a@b"), None));
        let c = parse("valid @2").unwrap();
        assert_eq!(
            (c.metric, c.stage.as_deref()),
            (CheckMetric::Valid, Some("2"))
        );
        assert!(parse("p99 < 20ms @").is_err());
        assert!(parse("p99 < 20ms @a b").is_err());
        assert_eq!(
            parse("validation.p99 < 1ms").unwrap().op.as_deref(),
            Some("validation")
        );
    }

    #[test]
    fn valid_is_a_check_of_its_own() {
        let c = parse(" Valid ").unwrap();
        assert_eq!(
            (c.metric, c.op, c.text.as_str()),
            (CheckMetric::Valid, None, "Valid")
        );
        assert!(parse("valid < 1").is_err());
    }

    #[test]
    fn malformed_checks_say_what_is_wrong() {
        for (text, fragment) in [
            ("read.p99 20ms", "no comparison operator"),
            ("read.p98 < 20ms", "unknown metric 'p98'"),
            ("read.p99 < 20", "has no unit"),
            ("read.p99 < 20parsecs", "unknown time unit 'parsecs'"),
            ("read.p99 <", "no value"),
            ("< 3ms", "nothing to check"),
            ("throughput > fast", "is not a rate"),
            ("errors < lots", "neither a count"),
            ("errors < 120%", "at most 100%"),
            ("read.p99 < -1ms", "is not a duration"),
            (".p99 < 1ms", "operation name before '.' is empty"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(fragment), "{text}: {e}");
            assert!(e.contains(text), "{text}: {e}");
        }
    }
}
