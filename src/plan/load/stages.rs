//! `--stages` and `[[load.stage]]`: the stages as written (the flag's compact form, the
//! file's tables with each field's place), checked and laid out into the engine's stages;
//! and `--stop-when`, the condition that ends such a run.
//!
//! The compact form is a comma-separated list of `[NAME=]DURATION:LEVEL[:steps=N]`, where a
//! LEVEL is a rate ending in `/s` (an open loop) or a client count ending in `c` (a closed
//! loop, as `-c`), constant (`2000/s`, `64c`) or a linear ramp (`0..2000/s`, `1..64c`): a
//! number without its unit is refused, so a rate is never read as clients or the reverse.

use std::collections::BTreeMap;
use std::time::Duration;

use toml::Spanned;

use super::settings::Settings;
use super::table::{LoadSetting as S, Value};
use crate::analysis::checks::{self, CheckMetric};
use crate::duration;
use crate::engine::{Stage, StageKind, StopFigure, StopWhen};
use crate::error::InputError;
use crate::plan::given::Given;
use crate::result::models::LatencyStat;
use crate::workload::load::StageSection;
use crate::workload::Source;

/// The compact form, for messages.
const FORM: &str = "write stages as [NAME=]DURATION:LEVEL, comma-separated: a rate ends in /s (open loop), clients in c (closed loop), a ramp is FROM..TO; e.g. --stages 30s:0..2000/s,2m:2000/s,spike=10s:8000/s or --stages 1m:1..64c,5m:64c; :steps=N cuts a ramp into N constant steps";

/// The most steps one stage is cut into.
const MAX_STEPS: u64 = 1000;

/// One stage as written, before it is checked against the others and the run.
#[derive(Debug, Clone, PartialEq)]
pub struct StageInput {
    /// As `--stages` writes it, for messages and `Value`'s display.
    pub written: String,
    /// How messages name it: `--stages, stage 2 (10s:2000..8000/s)` or `[[load.stage]] 2`.
    pub label: String,
    /// Its place in the file, and each field's by the field's name.
    pub at: Option<String>,
    pub places: BTreeMap<&'static str, String>,
    pub name: Option<String>,
    pub start: Option<Duration>,
    pub duration: Duration,
    pub kind: StageKind,
    pub from: f64,
    pub to: f64,
    /// Cut into this many constant steps from `from` to `to`.
    pub steps: Option<u64>,
    pub warmup: bool,
}

impl StageInput {
    /// An error about this stage (or its `field`), at its place in the file when it has one.
    fn error(&self, field: &str, message: impl Into<String>) -> InputError {
        let e = InputError::new(format!("{}: {}", self.label, message.into()));
        match self.places.get(field).or(self.at.as_ref()) {
            Some(at) => e.at(at.clone()),
            None => e,
        }
    }
}

/// `--stages TEXT`, each stage read.
pub fn parse_compact(text: &str) -> Result<Vec<StageInput>, InputError> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| parse_one(i + 1, part))
        .collect()
}

fn parse_one(n: usize, part: &str) -> Result<StageInput, InputError> {
    let label = format!("--stages, stage {n} ({part})");
    let bad = |why: String| InputError::new(format!("{label}: {why}")).help(FORM);
    if part.is_empty() {
        return Err(bad("empty (two commas in a row, or one at an end)".into()));
    }
    let (name, rest) = match part.split_once('=') {
        Some((name, rest)) if !name.contains(':') => (Some(name.trim().to_string()), rest),
        _ => (None, part),
    };
    let pieces: Vec<&str> = rest.split(':').map(str::trim).collect();
    let (duration, level, steps) = match pieces[..] {
        [d, l] => (d, l, None),
        [d, l, s] => (d, l, Some(s)),
        _ => return Err(bad("expected DURATION:LEVEL".into())),
    };
    let duration = duration::parse(duration, &label).map_err(|e| e.help(FORM))?;
    let (kind, from, to) = parse_level(level).map_err(bad)?;
    let steps = match steps {
        None => None,
        Some(s) => {
            let n = s
                .strip_prefix("steps=")
                .and_then(|n| n.trim().parse::<u64>().ok())
                .ok_or_else(|| bad(format!("'{s}': expected steps=N after the level")))?;
            Some(n)
        }
    };
    Ok(StageInput {
        written: part.to_string(),
        label,
        at: None,
        places: BTreeMap::new(),
        name,
        start: None,
        duration,
        kind,
        from,
        to,
        steps,
        warmup: false,
    })
}

/// `2000/s`, `0..2000/s`, `64c`, `1..64c`: the kind by the unit, and both ends.
fn parse_level(level: &str) -> Result<(StageKind, f64, f64), String> {
    let (kind, body) = if let Some(b) = level.strip_suffix("/s") {
        (StageKind::Rate, b)
    } else if let Some(b) = level.strip_suffix('c') {
        (StageKind::Clients, b)
    } else {
        return Err(format!(
            "'{level}' has no unit: write a rate as 2000/s (open loop) or clients as 64c (closed loop)"
        ));
    };
    let unit = kind.unit();
    let number = |text: &str| -> Result<f64, String> {
        let text = text.trim();
        let text = text.strip_suffix(unit).unwrap_or(text).trim();
        let x: f64 = text
            .replace('_', "")
            .parse()
            .map_err(|_| format!("'{text}' is not a number"))?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(format!("'{text}': expected a number from 0"));
        }
        if kind == StageKind::Clients && x.fract() != 0.0 {
            return Err(format!("'{text}': clients are a whole number"));
        }
        Ok(x)
    };
    match body.split_once("..") {
        Some((a, b)) => Ok((kind, number(a)?, number(b)?)),
        None => {
            let x = number(body)?;
            Ok((kind, x, x))
        }
    }
}

/// The file's `[[load.stage]]` tables, each read with its fields' places.
pub fn of_file(
    tables: &[Spanned<StageSection>],
    source: &Source<'_>,
) -> Result<Vec<StageInput>, InputError> {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| table(i + 1, t, source))
        .collect()
}

fn table(
    n: usize,
    t: &Spanned<StageSection>,
    source: &Source<'_>,
) -> Result<StageInput, InputError> {
    let st = t.get_ref();
    let at = source.at(t.span().start);
    let name = st.name.as_ref().map(|s| s.get_ref().clone());
    let label = match &name {
        Some(name) => format!("[[load.stage]] '{name}'"),
        None => format!("[[load.stage]] {n}"),
    };
    let mut places = BTreeMap::new();
    let mut place = |field: &'static str, span: std::ops::Range<usize>| {
        places.insert(field, source.at(span.start));
    };
    macro_rules! note {
        ($($field:ident),*) => {$(
            if let Some(v) = &st.$field {
                place(stringify!($field), v.span());
            }
        )*};
    }
    note!(
        name,
        start,
        duration,
        rate,
        rate_from,
        rate_to,
        clients,
        clients_from,
        clients_to,
        shape,
        steps,
        warmup
    );
    let err = |field: &str, message: String| {
        let e = InputError::new(format!("{label}: {message}"))
            .help("a stage has a duration and a rate (rate, or rate_from and rate_to) or clients (clients, or clients_from and clients_to); see docs/load.md, \"Stages\"");
        match places.get(field) {
            Some(p) => e.at(p.clone()),
            None => e.at(at.clone()),
        }
    };
    let Some(d) = &st.duration else {
        return Err(err("", "no duration (like duration = \"30s\")".into()));
    };
    let duration = duration::parse(d.get_ref(), &format!("{label} duration"))
        .map_err(|e| e.at(source.at(d.span().start)))?;
    let start = match &st.start {
        Some(s) => Some(
            duration::parse(s.get_ref(), &format!("{label} start"))
                .map_err(|e| e.at(source.at(s.span().start)))?,
        ),
        None => None,
    };
    let rate = level_of(&st.rate, &st.rate_from, &st.rate_to, |x| *x, RATE);
    let clients = level_of(
        &st.clients,
        &st.clients_from,
        &st.clients_to,
        |n| *n as f64,
        CLIENTS,
    );
    let (kind, (from, to)) = match (rate, clients) {
        (Some(r), None) => (StageKind::Rate, r.map_err(|f| err(f, half("rate")))?),
        (None, Some(c)) => (StageKind::Clients, c.map_err(|f| err(f, half("clients")))?),
        (Some(_), Some(_)) => {
            return Err(err(
                "clients",
                "gives both a rate and clients: a stage is an open loop (rate) or a closed loop (clients)".into(),
            ))
        }
        (None, None) => return Err(err("", "no rate and no clients".into())),
    };
    if kind == StageKind::Rate && !(from.is_finite() && from >= 0.0 && to.is_finite() && to >= 0.0)
    {
        return Err(err("rate", "a rate is a number from 0".into()));
    }
    let steps =
        match (st.shape.as_ref().map(|s| s.get_ref().as_str()), &st.steps) {
            (None | Some("linear"), None) => None,
            (Some("step"), Some(n)) => Some(*n.get_ref()),
            (Some("step"), None) => return Err(err(
                "shape",
                "shape = \"step\" needs steps = N, the constant levels from the first to the last"
                    .into(),
            )),
            (None | Some("linear"), Some(_)) => {
                return Err(err("steps", "steps = N goes with shape = \"step\"".into()))
            }
            (Some(other), _) => {
                return Err(err(
                    "shape",
                    format!("shape \"{other}\": expected \"linear\" or \"step\""),
                ))
            }
        };
    Ok(StageInput {
        written: compact(name.as_deref(), duration, kind, (from, to), steps),
        label,
        at: Some(at),
        places,
        name,
        start,
        duration,
        kind,
        from,
        to,
        steps,
        warmup: st.warmup.as_ref().is_some_and(|w| *w.get_ref()),
    })
}

/// A file's stage as `--stages` would write it: `ramp=30s:0..2000/s:steps=4`.
fn compact(
    name: Option<&str>,
    duration: Duration,
    kind: StageKind,
    (from, to): (f64, f64),
    steps: Option<u64>,
) -> String {
    let mut written = format!("{}:{from}", humantime::format_duration(duration));
    if from != to {
        written.push_str(&format!("..{to}"));
    }
    written.push_str(kind.unit());
    if let Some(n) = steps {
        written.push_str(&format!(":steps={n}"));
    }
    match name {
        Some(name) => format!("{name}={written}"),
        None => written,
    }
}

const RATE: [&str; 3] = ["rate", "rate_from", "rate_to"];
const CLIENTS: [&str; 3] = ["clients", "clients_from", "clients_to"];

/// A level from its constant field or its two ends; `Err(field)`: the field that does not
/// go with the others (`names`: the constant field's, then the ends').
fn level_of<T>(
    at: &Option<Spanned<T>>,
    from: &Option<Spanned<T>>,
    to: &Option<Spanned<T>>,
    f: impl Fn(&T) -> f64,
    names: [&'static str; 3],
) -> Option<Result<(f64, f64), &'static str>> {
    match (at, from, to) {
        (None, None, None) => None,
        (Some(x), None, None) => Some(Ok((f(x.get_ref()), f(x.get_ref())))),
        (None, Some(a), Some(b)) => Some(Ok((f(a.get_ref()), f(b.get_ref())))),
        (Some(_), _, _) => Some(Err(names[0])),
        (None, Some(_), None) => Some(Err(names[1])),
        (None, None, Some(_)) => Some(Err(names[2])),
    }
}

fn half(what: &str) -> String {
    format!("give {what} alone (constant), or both {what}_from and {what}_to (a ramp)")
}

/// The stages of a run, checked and laid out: the engine's stages, the warm-up the stages
/// make (leading `warmup = true` stages), and where they were given (for messages).
pub struct Laid {
    pub stages: Vec<Stage>,
    pub kind: StageKind,
    pub warmup: Option<Duration>,
    pub given: Given<()>,
}

/// `stages`, when given: every stage checked, in order (a zero-length stage, a start that
/// is not where the stage before ends, a second kind of load, names used twice), steps cut
/// into constant stages, and unnamed stages named by their number from 1.
pub fn read(s: &Settings) -> Result<Option<Laid>, InputError> {
    let Some(g) = s.get(S::Stages) else {
        return Ok(None);
    };
    let inputs = match &g.value {
        Value::Stages(inputs) => inputs.clone(),
        other => parse_compact(&other.to_string())?,
    };
    let given = g.clone().map(|_| ());
    if inputs.is_empty() {
        return Err(given
            .error(format!("{}: no stages", given.name()))
            .help(FORM));
    }
    let kind = inputs[0].kind;
    let mut stages = Vec::new();
    let mut end = Duration::ZERO;
    let mut warm: Option<Duration> = None;
    let mut leading = true;
    for (i, st) in inputs.iter().enumerate() {
        if st.duration.is_zero() {
            return Err(st.error("duration", "its duration is zero").help(
                "every stage lasts a while: give it a duration above zero, or leave it out",
            ));
        }
        if st.kind != kind {
            let (what, other) = match kind {
                StageKind::Rate => ("clients", "rate"),
                StageKind::Clients => ("a rate", "clients"),
            };
            return Err(st.error(
                if st.kind == StageKind::Rate { "rate" } else { "clients" },
                format!("gives {what} where the stages before it give {other}: one run is an open loop (every stage a rate) or a closed loop (every stage clients)"),
            ).help("run the two kinds of load as two runs"));
        }
        if let Some(start) = st.start {
            if start != end {
                let how = if start < end {
                    "overlaps the stage before it, which ends"
                } else {
                    "leaves a gap after the stage before it, which ends"
                };
                return Err(st
                    .error(
                        "start",
                        format!(
                            "starts at {} and {how} at {}",
                            humantime::format_duration(start),
                            humantime::format_duration(end)
                        ),
                    )
                    .help(format!(
                        "stages follow each other: start = \"{}\", or leave start out",
                        humantime::format_duration(end)
                    )));
            }
        }
        if let Some(name) = &st.name {
            check_name(name).map_err(|why| st.error("name", why))?;
        }
        if st.warmup {
            if !leading {
                return Err(st.error("warmup", "a warm-up stage after a measured one: only the first stages may be warm-up").help("move it first, or drop warmup = true"));
            }
            warm = Some(warm.unwrap_or_default() + st.duration);
        } else {
            leading = false;
        }
        let name = st.name.clone().unwrap_or_else(|| (i + 1).to_string());
        match st.steps {
            None => stages.push(Stage {
                name,
                kind,
                from: st.from,
                to: st.to,
                duration: st.duration,
                step_of: None,
            }),
            Some(n) => stages.extend(steps(st, &name, n)?),
        }
        end += st.duration;
    }
    for (i, a) in stages.iter().enumerate() {
        if let Some(b) = stages[..i].iter().find(|b| b.name == a.name) {
            let st = inputs
                .iter()
                .find(|s| s.name.as_deref() == Some(&a.name))
                .unwrap_or(&inputs[0]);
            return Err(st
                .error("name", format!("the name '{}' is used twice", b.name))
                .help(
                    "give each stage a name of its own (a --check names it: 'p99 < 20ms @NAME')",
                ));
        }
    }
    if stages.iter().all(|s| s.peak() == 0.0) {
        return Err(given
            .error(format!(
                "{}: every stage is at 0: nothing would run",
                given.name()
            ))
            .help(FORM));
    }
    Ok(Some(Laid {
        stages,
        kind,
        warmup: warm,
        given,
    }))
}

/// A stage's name: a letter or `_` first, then letters, digits, `_`, `-` and `.`.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        Ok(())
    } else {
        Err(format!("the name '{name}': a stage's name starts with a letter or _ and holds letters, digits, _, - and . (an unnamed stage is called by its number)"))
    }
}

/// A `shape = "step"` stage cut into `n` constant steps of equal length, from its first
/// level to its last, named `NAME.1` … `NAME.n`.
fn steps(st: &StageInput, name: &str, n: u64) -> Result<Vec<Stage>, InputError> {
    if !(2..=MAX_STEPS).contains(&n) {
        return Err(st.error(
            "steps",
            format!("steps = {n}: expected 2 to {MAX_STEPS} levels"),
        ));
    }
    let each = st.duration / n as u32;
    if each.is_zero() {
        return Err(st.error("steps", "its steps would last no time"));
    }
    Ok((0..n)
        .map(|k| {
            let level = st.from + (st.to - st.from) * k as f64 / (n - 1) as f64;
            let level = match st.kind {
                StageKind::Clients => level.round(),
                StageKind::Rate => level,
            };
            // The last step takes what the division left over.
            let duration = if k + 1 == n {
                st.duration - each * (n - 1) as u32
            } else {
                each
            };
            Stage {
                name: format!("{name}.{}", k + 1),
                kind: st.kind,
                from: level,
                to: level,
                duration,
                step_of: Some(name.to_string()),
            }
        })
        .collect())
}

/// `stop_when`: the condition, in the checks' grammar, on one interval's figures, and how
/// many measured intervals in a row it must hold in (`for N intervals`; 2 by default).
/// `ops` are the workload's operations, which it may name.
pub fn stop_when(s: &Settings, ops: &[String]) -> Result<Option<StopWhen>, InputError> {
    let Some(g) = s.get(S::StopWhen) else {
        return Ok(None);
    };
    let text = g.text();
    let name = g.name();
    let bad = |why: String| {
        g.error(format!("{name} '{}': {why}", text.trim()))
            .help("write a condition on one interval's figures, like 'p99 > 50ms', 'errors > 1%' or 'read.p99 > 20ms for 3 intervals' (2 in a row by default)")
    };
    let (condition, consecutive) = split_for(&text).map_err(bad)?;
    let check = checks::parse_or_why(condition).map_err(bad)?;
    if check.stage.is_some() {
        return Err(bad(
            "it applies to every interval of the run, so it names no stage".into(),
        ));
    }
    let figure = match check.metric {
        CheckMetric::Valid => {
            return Err(bad(
                "'valid' is the verdict on a whole run, which no interval has".into(),
            ))
        }
        CheckMetric::Latency(stat) => match stat {
            LatencyStat::P50 => StopFigure::P50,
            LatencyStat::P90 => StopFigure::P90,
            LatencyStat::P99 => StopFigure::P99,
            LatencyStat::P999 => StopFigure::P999,
            LatencyStat::Max => StopFigure::Max,
            LatencyStat::Mean => StopFigure::Mean,
        },
        CheckMetric::Throughput => StopFigure::Throughput,
        CheckMetric::Errors => StopFigure::Errors,
    };
    if let Some(op) = check.op.as_ref().filter(|op| !ops.contains(op)) {
        return Err(bad(format!(
            "the workload has no operation '{op}'; its operations are: {}",
            ops.join(", ")
        )));
    }
    use crate::analysis::checks::Cmp;
    Ok(Some(StopWhen {
        condition: condition.trim().to_string(),
        consecutive,
        op: check.op,
        figure,
        above: matches!(check.cmp, Cmp::Gt | Cmp::Ge),
        inclusive: matches!(check.cmp, Cmp::Ge | Cmp::Le),
        limit: check.limit,
        percent: check.percent,
    }))
}

/// `CONDITION for N intervals`: the condition and N (2 without the suffix).
fn split_for(text: &str) -> Result<(&str, u32), String> {
    let t = text.trim();
    let Some((condition, tail)) = t.rsplit_once(" for ") else {
        return Ok((t, 2));
    };
    let tail = tail.trim();
    let n = tail
        .strip_suffix("intervals")
        .or_else(|| tail.strip_suffix("interval"))
        .map(str::trim)
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or_else(|| format!("'for {tail}': expected 'for N intervals'"))?;
    if n == 0 {
        return Err("'for 0 intervals': it must hold in at least one".into());
    }
    Ok((condition, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compact_form_says_which_loop() {
        let st = parse_compact("30s:0..2000/s, 2m:2000/s,spike=10s:2000..8000/s").unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!(
            (st[0].kind, st[0].from, st[0].to, st[0].duration),
            (StageKind::Rate, 0.0, 2000.0, Duration::from_secs(30))
        );
        assert_eq!(st[2].name.as_deref(), Some("spike"));
        let c = parse_compact("1m:1..64c,5m:64c:steps=4").unwrap();
        assert_eq!((c[0].kind, c[0].to), (StageKind::Clients, 64.0));
        assert_eq!(c[1].steps, Some(4));
        for (text, fragment) in [
            ("30s:2000", "has no unit"),
            ("30s", "expected DURATION:LEVEL"),
            ("30s:1.5c", "whole number"),
            ("soon:100/s", "is not a duration"),
            ("30s:100/s,", "empty"),
            ("30s:100/s:steps", "steps=N"),
        ] {
            let e = parse_compact(text).unwrap_err();
            assert!(e.message.contains(fragment), "{text}: {}", e.message);
        }
    }

    #[test]
    fn stop_conditions_read_their_count() {
        assert_eq!(split_for("p99 > 50ms").unwrap(), ("p99 > 50ms", 2));
        assert_eq!(
            split_for("read.p99 > 50ms for 3 intervals").unwrap(),
            ("read.p99 > 50ms", 3)
        );
        assert!(split_for("p99 > 50ms for ever").is_err());
        assert!(split_for("p99 > 50ms for 0 intervals").is_err());
    }
}
