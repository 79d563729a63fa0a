//! An experiment on the console: the plan before it runs (design, aliases, runs, time), and
//! after it, per response, the effects with their intervals, the ANOVA table, the residual
//! checks and the summary in words. Everything is read from `experiment.json`.

use std::fmt::Write as _;

use crate::analysis::experiment::record::{EffectRecord, ExperimentRecord, IntervalMethod};
use crate::analysis::experiment::summary::{estimate_text, percent, value_text};
use crate::analysis::experiment::{ResponseAnalysis, Scale};

/// What the experiment is and what it will cost.
pub fn plan_lines(r: &ExperimentRecord) -> Vec<String> {
    let d = &r.design;
    let sizes: Vec<String> = d
        .factors
        .iter()
        .map(|f| f.factor.levels.len().to_string())
        .collect();
    let mut out = vec![format!(
        "loadrig {} experiment: {} on {}; each run {}",
        r.loadrig_version, r.workload, r.target, r.base_load
    )];
    let kind = if d.kind == "fractional" {
        let p = d.generators.len();
        format!("2^({}−{p}) fractional factorial", d.factors.len())
    } else if d.factors.iter().all(|f| f.factor.levels.len() == 2) {
        format!("2^{} full factorial", d.factors.len())
    } else {
        format!("{} full factorial", sizes.join("×"))
    };
    out.push(format!(
        "design: {kind}, {} cells × {} replicates = {} runs",
        d.cells.len(),
        d.replicates,
        r.runs.len()
    ));
    for f in &d.factors {
        out.push(format!(
            "  {} {} ({}): {}",
            f.factor.letter,
            f.factor.name,
            f.kind,
            f.factor.levels.join(", ")
        ));
    }
    if d.kind == "fractional" {
        out.push(format!(
            "generators: {}; defining relation {}; resolution {}",
            d.generators.join(", "),
            d.defining_relation.as_deref().unwrap_or("-"),
            d.resolution.map_or("-".into(), roman)
        ));
        out.push(format!(
            "aliases (each estimate is its chain's sum): {}",
            d.aliases.join("; ")
        ));
    }
    let left = r.runs.iter().filter(|x| !x.done).count();
    out.push(match r.estimated_s {
        Some(s) => format!(
            "time: about {} for {left} runs (each run's warm-up and duration), plus each run's setup and data load",
            humantime::format_duration(std::time::Duration::from_secs((s * left as f64 / r.runs.len().max(1) as f64).round() as u64))
        ),
        None => format!("time: {left} runs, each until its operation count (no estimate)"),
    });
    out.push(format!(
        "order: replicates in interleaved blocks, cells shuffled in each, seed {} (DIR/experiment.json lists it)",
        r.seed
    ));
    out
}

/// `block 1: 3 0 2 1; block 2: …`: the order by cell.
pub fn order_lines(r: &ExperimentRecord) -> String {
    let mut out = String::from("order by cell:");
    let mut block = 0;
    for run in &r.runs {
        if run.block != block {
            block = run.block;
            let _ = write!(out, "\n  block {block}:");
        }
        let _ = write!(out, " {}", run.cell);
    }
    out
}

fn roman(n: usize) -> String {
    ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII"]
        .get(n)
        .map_or_else(|| n.to_string(), |s| s.to_string())
}

fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "-".into(),
    }
}

/// The effect column: a contrast with its interval, or the level means' range.
pub fn effect_cell(a: &ResponseAnalysis, e: &EffectRecord) -> String {
    match &e.contrast {
        Some(c) => estimate_text(a, c),
        None => format!("{} levels", e.levels.len()),
    }
}

pub fn verdict(e: &EffectRecord) -> &'static str {
    match (e.pooled, e.significant) {
        (true, _) => "pooled",
        (_, Some(true)) => "yes",
        (_, Some(false)) => "no (noise)",
        (_, None) => "-",
    }
}

/// Every response's table and words.
pub fn render(r: &ExperimentRecord) -> String {
    let mut out = String::new();
    for a in &r.analyses {
        out.push_str(&response_table(a));
        out.push('\n');
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

pub fn scale_words(a: &ResponseAnalysis) -> &'static str {
    match a.scale {
        Scale::Linear => "linear scale (effects add; the default)",
        Scale::Log => "log scale (effects multiply: each is a factor)",
    }
}

pub fn interval_words(a: &ResponseAnalysis) -> String {
    match a.intervals {
        IntervalMethod::T => format!("{:.0} % t intervals", a.confidence * 100.0),
        IntervalMethod::Bootstrap => format!("{:.0} % bootstrap intervals", a.confidence * 100.0),
        IntervalMethod::None => "no intervals (no error estimate)".into(),
    }
}

fn response_table(a: &ResponseAnalysis) -> String {
    let mut out = format!(
        "{}{}: {}; {}; {} replicate{}\n",
        a.response,
        if a.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", a.unit)
        },
        scale_words(a),
        interval_words(a),
        a.replicates,
        if a.replicates == 1 { "" } else { "s" }
    );
    let rows: Vec<[String; 7]> = a
        .effects
        .iter()
        .map(|e| {
            [
                e.term.clone(),
                e.name.clone(),
                effect_cell(a, e),
                percent(e.share),
                e.f.map_or("-".into(), |f| format!("{f:.1}")),
                p_text(e.p),
                verdict(e).into(),
            ]
        })
        .chain(std::iter::once([
            "".into(),
            "noise (error)".into(),
            a.error.sd.map_or("-".into(), |sd| match a.scale {
                Scale::Linear => format!("sd {}", value_text(&a.unit, sd)),
                Scale::Log => format!("sd {:.3} (log)", sd),
            }),
            percent(a.error.share),
            format!("df {}", a.error.df),
            String::new(),
            String::new(),
        ]))
        .collect();
    let head = [
        "term",
        "factors",
        "effect [interval]",
        "share",
        "F",
        "p",
        "significant",
    ];
    let widths: Vec<usize> = (0..7)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([head[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 7]| {
        let mut l = String::from(" ");
        for (c, cell) in cells.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            let _ = write!(l, " {cell}{}", " ".repeat(pad));
        }
        l.trim_end().to_string() + "\n"
    };
    out.push_str(&line(head));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]]));
    }
    for s in &a.summary {
        let _ = writeln!(out, "  {s}");
    }
    for w in &a.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}
