//! How a [`Comparison`] is shown: an aligned table for the terminal, Markdown for pull
//! requests, JSON for scripts. The statistics live in `analysis::compare`.

use std::fmt::Write as _;

use crate::analysis::checks;
use crate::analysis::compare::{
    percent_text, Comparison, Method, Metric, MetricChange, RunInfo, Verdict,
};
use crate::analysis::rounds::POWER;
use crate::analysis::shift::{ShiftPoint, ShiftReport};
use crate::duration::human_ns;
use crate::result::RunStatus;

fn value(m: &MetricChange, v: f64) -> String {
    if m.metric == Metric::Throughput {
        if v >= 100.0 {
            format!("{}/s", super::console::thousands(v.round() as u64))
        } else {
            format!("{v:.2}/s")
        }
    } else if v > 0.0 {
        human_ns(v)
    } else {
        "–".into()
    }
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// The change as a signed percentage, or – without one.
pub fn change_text(m: &MetricChange) -> String {
    m.change.map_or_else(|| "–".into(), pct)
}

/// The interval as [low, high] percentages, or – without one.
pub fn interval_text(m: &MetricChange) -> String {
    match (m.ci_low, m.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", pct(lo), pct(hi)),
        _ => "–".into(),
    }
}

fn p_value(m: &MetricChange) -> String {
    match m.p_value {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "–".into(),
    }
}

fn run_line(r: &RunInfo) -> String {
    format!(
        "{}: {} on {}, {} full intervals of {}, started {}{}",
        r.file,
        r.workload,
        r.target,
        r.full_intervals,
        human_ns(r.interval_s * 1e9),
        r.started_at,
        if r.status == RunStatus::Complete {
            String::new()
        } else {
            format!(" ({})", r.status.name())
        }
    )
}

fn method_line(c: &Comparison) -> String {
    match c.method {
        Method::IntervalBootstrap => format!(
            "{:.0}% intervals: circular block bootstrap over measured intervals ({} resamples); throughput tested with Mann-Whitney U (corrected for autocorrelation); run-to-run allowance ±{}%",
            c.confidence * 100.0,
            c.resamples,
            percent_text(c.noise)
        ),
        Method::Rounds => format!(
            "{:.0}% intervals for NEW/BASE: per-run values as units, Welch t on their logarithms, run-to-run and within-run variance apart (Kalibera & Jones 2013); Mann-Whitney over runs as a cross-check; noise band ±{}%",
            c.confidence * 100.0,
            percent_text(c.noise)
        ),
    }
}

/// The runs of each side: one line per run, or one line per side with their count.
fn run_lines(c: &Comparison, line: &mut dyn FnMut(&str, String)) {
    for (side, runs) in [("base", &c.base_runs), ("new ", &c.new_runs)] {
        match runs.as_slice() {
            [one] => line(side, run_line(one)),
            many => line(
                side,
                format!(
                    "{} runs: {}",
                    many.len(),
                    many.iter()
                        .map(|r| r.file.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        }
    }
}

fn rounds_cell(c: &Comparison, m: &MetricChange) -> String {
    match (c.method, m.rounds_needed) {
        (Method::IntervalBootstrap, _) => "–".into(),
        (Method::Rounds, Some(n)) => super::console::thousands(n),
        (Method::Rounds, None) if m.ci_low.is_some() => "never".into(),
        (Method::Rounds, None) => "–".into(),
    }
}

fn mw_cell(m: &MetricChange) -> String {
    match m.mann_whitney_p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "–".into(),
    }
}

/// What "no significant change" means here: no change, or too few rounds to see one.
fn power_line(c: &Comparison) -> Option<String> {
    let side = |n: usize| n.to_string();
    let unchanged: Vec<&MetricChange> = c
        .operations
        .iter()
        .flat_map(|o| &o.metrics)
        .filter(|m| m.verdict == Verdict::NoChange)
        .collect();
    match c.method {
        Method::IntervalBootstrap => Some(
            "power: unknown with one run per side (run-to-run variance cannot be measured from one run)".to_string(),
        ),
        Method::Rounds if unchanged.is_empty() => None,
        Method::Rounds => {
            let ran = c.base_runs.len().min(c.new_runs.len()) as u64;
            let short = unchanged
                .iter()
                .filter(|m| m.rounds_needed.is_none_or(|n| n > ran))
                .count();
            let most = unchanged.iter().filter_map(|m| m.rounds_needed).max();
            Some(format!(
                "power: {} of {} metrics with no significant change would need more than the {} rounds per side run here to detect a ±{}% change with {:.0}% power{}{}",
                short,
                unchanged.len(),
                side(ran as usize),
                percent_text(c.detect),
                POWER * 100.0,
                most.map_or_else(String::new, |n| format!(
                    " (up to {} rounds; 'rounds' column)",
                    super::console::thousands(n)
                )),
                if short < unchanged.len() {
                    "; the others had enough rounds, so for them it means no change of that size"
                } else {
                    ": for them it means not enough rounds, not no change"
                }
            ))
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}

/// The terminal table: a header, the metrics, then the tail (power, notes, checks).
pub fn table(c: &Comparison) -> String {
    let mut out = String::new();
    run_lines(c, &mut |side, text| {
        let _ = writeln!(out, "{side} {text}");
    });
    let _ = writeln!(out, "{}\n", method_line(c));
    metrics_table(&mut out, c);
    if let Some(s) = &c.shift_function {
        shift_table(&mut out, s);
    }
    tail(&mut out, c, false);
    out
}

fn metrics_table(out: &mut String, c: &Comparison) {
    let width = c
        .operations
        .iter()
        .map(|o| o.shown().chars().count())
        .max()
        .unwrap_or(9)
        .clamp(9, 24);
    let rounds = c.method == Method::Rounds;
    let extra = |a: &str, b: &str| {
        if rounds {
            format!("  {a:>7}  {b:>7}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        out,
        "{:<width$}  {:<10}  {:>11}  {:>11}  {:>8}  {:<18}  {:>7}{}  verdict",
        "operation",
        "metric",
        "base",
        "new",
        "change",
        "95% interval",
        "p",
        extra("mw p", "rounds")
    );
    for o in &c.operations {
        for m in &o.metrics {
            let _ = writeln!(
                out,
                "{:<width$}  {:<10}  {:>11}  {:>11}  {:>8}  {:<18}  {:>7}{}  {}",
                truncate(&o.shown(), width),
                m.metric.name(),
                value(m, m.base),
                value(m, m.new),
                change_text(m),
                interval_text(m),
                p_value(m),
                extra(&mw_cell(m), &rounds_cell(c, m)),
                m.verdict.text()
            );
        }
    }
}

fn tail(out: &mut String, c: &Comparison, markdown: bool) {
    let bullet = if markdown { "- " } else { "" };
    let text = |s: &str| if markdown { md(s) } else { s.to_string() };
    if !c.only_in_base.is_empty() {
        let names: Vec<String> = c.only_in_base.iter().map(|n| text(n)).collect();
        let _ = writeln!(out, "\n{bullet}only in base: {}", names.join(", "));
    }
    if !c.only_in_new.is_empty() {
        let names: Vec<String> = c.only_in_new.iter().map(|n| text(n)).collect();
        let _ = writeln!(out, "\n{bullet}only in new: {}", names.join(", "));
    }
    for n in &c.notes {
        let _ = writeln!(out, "{bullet}note: {}", text(n));
    }
    let verdicts = |v: Verdict| {
        c.operations
            .iter()
            .flat_map(|o| &o.metrics)
            .filter(|m| m.verdict == v)
            .count()
    };
    if let Some(line) = power_line(c) {
        let _ = writeln!(out, "\n{bullet}{}", text(&line));
    }
    let _ = writeln!(
        out,
        "\n{bullet}{} regressed, {} improved, {} with no significant change{}",
        verdicts(Verdict::Regressed),
        verdicts(Verdict::Improved),
        verdicts(Verdict::NoChange),
        match verdicts(Verdict::TooLittleData) {
            0 => String::new(),
            n => format!(", {n} with too little data"),
        }
    );
    if !c.checks.is_empty() {
        out.push('\n');
        if markdown {
            for o in &c.checks {
                let _ = writeln!(
                    out,
                    "- check {}: `{}` ({})",
                    if o.passed { "passed" } else { "**FAILED**" },
                    o.check.replace('`', "'"),
                    md(o.reason.as_deref().unwrap_or(&o.actual))
                );
            }
        } else {
            out.push_str(&checks::render(&c.checks));
        }
    }
}

/// Text safe inside a Markdown table cell: no pipes, no HTML.
fn md(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

/// A Markdown table for pull requests and CI summaries.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**loadrig compare**\n");
    run_lines(c, &mut |side, text| {
        let _ = writeln!(out, "- {}: {}", side.trim(), md(&text));
    });
    let _ = writeln!(out, "- {}\n", md(&method_line(c)));
    let rounds = c.method == Method::Rounds;
    let (head, rule) = if rounds {
        (" mw p | rounds |", "---:|---:|")
    } else {
        ("", "")
    };
    let _ = writeln!(
        out,
        "| operation | metric | base | new | change | 95% interval | p |{head} verdict |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---|---:|{rule}---|");
    for o in &c.operations {
        for m in &o.metrics {
            let verdict = match m.verdict {
                Verdict::Regressed | Verdict::Improved => format!("**{}**", m.verdict.text()),
                v => v.text().to_string(),
            };
            let cells = if rounds {
                format!(" {} | {} |", md(&mw_cell(m)), rounds_cell(c, m))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |{cells} {} |",
                md(&o.shown()),
                m.metric.name(),
                value(m, m.base),
                value(m, m.new),
                change_text(m),
                interval_text(m),
                md(&p_value(m)),
                verdict
            );
        }
    }
    if let Some(s) = &c.shift_function {
        shift_markdown(&mut out, s);
    }
    tail(&mut out, c, true);
    out
}

/// `p10`, `p95`, `p99.9`.
fn quantile_name(q: f64) -> String {
    format!("p{}", percent_text(q))
}

/// A latency difference with its sign: `+1.00ms`, `-20.0µs`.
fn signed_ns(x: f64) -> String {
    let sign = if x < 0.0 { "-" } else { "+" };
    format!("{sign}{}", human_ns(x.abs()))
}

fn shift_interval(p: &ShiftPoint) -> String {
    match (p.ci_low_ns, p.ci_high_ns) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", signed_ns(lo), signed_ns(hi)),
        _ => "–".into(),
    }
}

fn moved(p: &ShiftPoint) -> &'static str {
    match (p.ci_low_ns.is_some(), p.moved()) {
        (false, _) => "–",
        (true, true) if p.diff_ns > 0.0 => "slower",
        (true, true) => "faster",
        (true, false) => "no shift",
    }
}

fn shift_heading(s: &ShiftReport) -> String {
    format!(
        "shift function: new − base at each quantile ({}, {} resamples)",
        s.method, s.resamples
    )
}

/// The shift function section of the terminal table.
fn shift_table(out: &mut String, s: &ShiftReport) {
    let _ = writeln!(out, "\n{}", shift_heading(s));
    for o in &s.operations {
        let f = &o.shift;
        let _ = writeln!(
            out,
            "\n{}: Kolmogorov-Smirnov {:.3}, Wasserstein-1 {}",
            o.operation,
            f.ks,
            human_ns(f.wasserstein_ns)
        );
        let _ = writeln!(
            out,
            "  {:<8}  {:>9}  {:>9}  {:>10}  {:<24}  shift",
            "quantile", "base", "new", "difference", "95% interval"
        );
        for p in &f.points {
            let [q, base, new, diff, interval, shift] = shift_cells(p);
            let _ = writeln!(
                out,
                "  {q:<8}  {base:>9}  {new:>9}  {diff:>10}  {interval:<24}  {shift}"
            );
        }
    }
    for n in &s.notes {
        let _ = writeln!(out, "note: {n}");
    }
}

/// One row of the shift function: quantile, base, new, difference, interval, verdict.
fn shift_cells(p: &ShiftPoint) -> [String; 6] {
    [
        quantile_name(p.quantile),
        human_ns(p.base_ns),
        human_ns(p.new_ns),
        signed_ns(p.diff_ns),
        shift_interval(p),
        moved(p).to_string(),
    ]
}

/// The shift function section in Markdown.
fn shift_markdown(out: &mut String, s: &ShiftReport) {
    let _ = writeln!(out, "\n**{}**", md(&shift_heading(s)));
    for o in &s.operations {
        let f = &o.shift;
        let _ = writeln!(
            out,
            "\n{}: Kolmogorov-Smirnov {:.3}, Wasserstein-1 {}\n",
            md(&o.operation),
            f.ks,
            human_ns(f.wasserstein_ns)
        );
        let _ = writeln!(
            out,
            "| quantile | base | new | difference | 95% interval | shift |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---|---|");
        for p in &f.points {
            let _ = writeln!(out, "| {} |", shift_cells(p).join(" | "));
        }
    }
    for n in &s.notes {
        let _ = writeln!(out, "\n- note: {}", md(n));
    }
}

/// The comparison as one JSON document.
pub fn json(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(c).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
