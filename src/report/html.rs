//! `loadrig report RUN.json... -o RUN.html`: one self-contained HTML page per report.
//!
//! The page has no script and asks for nothing over the network: the CSS is inlined
//! (`assets/report.css`), the plots are inline SVG from [`super::plot`], and a
//! Content-Security-Policy forbids every external or script source, so it opens offline and
//! a string from a workload cannot run even if it slipped through. Every string that comes
//! from a result file (names, descriptions, targets, error messages) goes through [`esc`].
//! Several runs are overlaid in each plot and listed side by side in the tables.

use std::fmt::Write as _;

use anyhow::Result;

use super::console::{connect_rows, rate, thousands};
use super::plot::{self, Plot, RunView};
use crate::duration::human_ns;
use crate::result::validity::Validity;
use crate::result::{OpResult, RunResult, RunStatus};
use crate::targets::redact;

mod compare;
mod stages;
mod sweep;
pub use compare::render_comparison;
pub use sweep::render_sweep;

const CSS: &str = include_str!("assets/report.css");

/// Forbid everything but the page's own inline styles and inline images: no script, no
/// request. (Inline SVG is part of the document, not a fetched image.)
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// Escape text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn workload_name(r: &RunResult) -> &str {
    &r.workload.name
}

/// Render the report of one or more runs, each with its label (usually the file name).
pub fn render(runs: &[(String, RunResult)]) -> Result<String> {
    let views = runs
        .iter()
        .map(|(label, r)| RunView::new(label, r).map_err(|e| anyhow::anyhow!("{label}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let plots = plot::all(&views)?;

    let mut names: Vec<&str> = Vec::new();
    for (_, r) in runs {
        let n = workload_name(r);
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let title = format!("loadrig report: {}", names.join(", "));

    let mut h = String::new();
    page_head(&mut h, &title);
    header(&mut h, &title, runs, &plots);

    h.push_str("<h2 id=\"summary\">Summary</h2>\n");
    summary_table(&mut h, runs);
    stages::table(&mut h, runs);
    errors_table(&mut h, runs);
    retries_table(&mut h, runs);
    run_notes(&mut h, runs);
    interval_counts_table(&mut h, runs);
    validity_table(&mut h, runs);

    h.push_str("<h2 id=\"plots\">Plots</h2>\n");
    plot_figures(&mut h, &plots);

    h.push_str("<h2 id=\"setup\">Workload, load, target and host</h2>\n");
    for (label, r) in runs {
        if runs.len() > 1 {
            let _ = writeln!(h, "<h3>{}</h3>", esc(label));
        }
        setup(&mut h, r);
    }

    footer(&mut h, runs);
    Ok(h)
}

/// The page up to `<main>`: the policy, the inlined CSS and the title. A sweep's page
/// starts the same way.
pub(crate) fn page_head(h: &mut String, title: &str) {
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"loadrig {}\">\n<link rel=\"icon\" href=\"data:,\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    );
}

/// The title, what was run (or which runs are overlaid), and links to each section.
fn header(h: &mut String, title: &str, runs: &[(String, RunResult)], plots: &[Plot]) {
    let _ = write!(h, "<header>\n<h1>{}</h1>\n<p>", esc(title));
    if runs.len() == 1 {
        let r = &runs[0].1;
        let _ = write!(
            h,
            "{} on {} · {} measured · {}",
            esc(workload_name(r)),
            esc(&redact(&r.target.url)),
            esc(&human_ns(r.measured_s * 1e9)),
            esc(&r.started_at)
        );
    } else {
        let _ = write!(h, "{} runs overlaid: ", runs.len());
        let labels: Vec<String> = runs.iter().map(|(l, _)| esc(l)).collect();
        h.push_str(&labels.join(", "));
    }
    h.push_str("</p>\n<nav><a href=\"#summary\">Summary</a><a href=\"#plots\">Plots</a>");
    for p in plots {
        let _ = write!(h, "<a href=\"#{}\">{}</a>", esc(&p.id), esc(&p.title));
    }
    h.push_str("<a href=\"#setup\">Workload, load, target, host</a></nav>\n</header>\n");
}

/// Under the summary tables: each run's latency modes, its notes, and a run that did not
/// complete.
fn run_notes(h: &mut String, runs: &[(String, RunResult)]) {
    for (label, r) in runs {
        // With several runs each line says which run it is about.
        let prefix = if runs.len() > 1 {
            format!("{}: ", esc(label))
        } else {
            String::new()
        };
        for f in &r.figures {
            let _ = writeln!(
                h,
                "<p class=\"figure\">{prefix}{}</p>",
                esc(&super::console::figure_line(f))
            );
        }
        for v in &r.verify {
            let (class, verdict) = if v.passed {
                ("note", "passed")
            } else {
                ("bad", "FAILED")
            };
            let _ = writeln!(
                h,
                "<p class=\"{class}\">{prefix}verify {}: {verdict} ({})</p>",
                esc(&v.name),
                esc(&v.values.join(" / "))
            );
        }
        let modes = r.latency_modes.as_ref();
        if let Some(line) = modes.and_then(|m| m.summary_line()) {
            let _ = writeln!(h, "<p class=\"modes\">{prefix}{}</p>", esc(&line));
        }
        // The modes' note says the same as the line above.
        let modes_note = modes.and_then(|m| m.note());
        for note in r.notes.iter().filter(|n| Some(*n) != modes_note.as_ref()) {
            let _ = writeln!(h, "<p class=\"note\">{prefix}note: {}</p>", esc(note));
        }
        if r.status != RunStatus::Complete {
            let _ = writeln!(
                h,
                "<p class=\"bad\">{}: the run is marked {}</p>",
                esc(label),
                r.status.name()
            );
        }
    }
}

fn plot_figures(h: &mut String, plots: &[Plot]) {
    for p in plots {
        let _ = write!(
            h,
            "<figure class=\"plot\" id=\"{}\">\n<figcaption><h3>{}</h3><p>{}</p></figcaption>\n{}\n</figure>\n",
            esc(&p.id),
            esc(&p.title),
            esc(&p.caption),
            p.svg
        );
    }
}

/// Where the figures come from, and the end of the page.
fn footer(h: &mut String, runs: &[(String, RunResult)]) {
    let _ = write!(
        h,
        "<footer>Generated by loadrig {} from {}. Every figure is computed from the result file{}; the page is self-contained and makes no network request.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        runs.iter()
            .map(|(l, _)| esc(l))
            .collect::<Vec<_>>()
            .join(", "),
        if runs.len() > 1 { "s" } else { "" }
    );
}

fn op_rows(r: &RunResult) -> Vec<&OpResult> {
    let mut rows: Vec<&OpResult> = r.operations.iter().collect();
    if r.operations.len() > 1 {
        rows.push(&r.total);
    }
    rows
}

fn summary_table(h: &mut String, runs: &[(String, RunResult)]) {
    let several = runs.len() > 1;
    h.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">operation</th><th>ok</th><th>errors</th><th>ops/s</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead>\n<tbody>\n");
    for (label, r) in runs {
        for o in op_rows(r) {
            let l = &o.latency;
            let t = |ns: f64| {
                if l.count > 0 {
                    esc(&human_ns(ns))
                } else {
                    "–".into()
                }
            };
            h.push_str("<tr>");
            if several {
                let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
            }
            let _ = writeln!(
                h,
                "<td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&o.name),
                thousands(o.ok),
                thousands(o.errors),
                rate(o.throughput_per_s),
                t(l.mean_ns),
                t(l.p50_ns as f64),
                t(l.p90_ns as f64),
                t(l.p99_ns as f64),
                t(l.p999_ns as f64),
                t(l.max_ns as f64),
            );
        }
    }
    h.push_str("</tbody></table></div>\n");
}

fn errors_table(h: &mut String, runs: &[(String, RunResult)]) {
    let any = runs
        .iter()
        .any(|(_, r)| r.operations.iter().any(|o| o.errors > 0));
    if !any {
        h.push_str("<p class=\"muted\">No failed operations.</p>\n");
        return;
    }
    let several = runs.len() > 1;
    h.push_str("<h3>Errors</h3>\n<div class=\"table-wrap\"><table>\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">operation</th><th class=\"text\">class</th><th>count</th><th class=\"text\">message</th></tr></thead>\n<tbody>\n");
    for (label, r) in runs {
        for o in r.operations.iter().filter(|o| o.errors > 0) {
            let rows: Vec<(&str, u64, String)> = if o.error_messages.is_empty() {
                o.errors_by_class
                    .iter()
                    .map(|(c, n)| (c.name(), *n, String::new()))
                    .collect()
            } else {
                o.error_messages
                    .iter()
                    .map(|m| (m.class.name(), m.count, m.message.clone()))
                    .collect()
            };
            for (class, n, message) in rows {
                h.push_str("<tr>");
                if several {
                    let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
                }
                let _ = writeln!(
                    h,
                    "<td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>",
                    esc(&o.name),
                    esc(class),
                    thousands(n),
                    esc(&message)
                );
            }
        }
    }
    h.push_str("</tbody></table></div>\n");
    failure_times_table(h, runs, several);
}

/// How long the failed operations took, per operation: a refused connection fails at once,
/// a timeout at its limit.
fn failure_times_table(h: &mut String, runs: &[(String, RunResult)], several: bool) {
    // Files from before failures' times were kept have none to show.
    if !runs
        .iter()
        .any(|(_, r)| r.operations.iter().any(|o| o.failed_latency.is_some()))
    {
        return;
    }
    h.push_str("<h4>How long failures took</h4>\n<div class=\"table-wrap\"><table>\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">operation</th><th>failures</th><th>p50</th><th>p99</th><th>max</th></tr></thead>\n<tbody>\n");
    for (label, r) in runs {
        for o in &r.operations {
            let Some(l) = &o.failed_latency else { continue };
            h.push_str("<tr>");
            if several {
                let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
            }
            let _ = writeln!(
                h,
                "<td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&o.name),
                thousands(l.count),
                esc(&human_ns(l.p50_ns as f64)),
                esc(&human_ns(l.p99_ns as f64)),
                esc(&human_ns(l.max_ns as f64))
            );
        }
    }
    h.push_str("</tbody></table></div>\n");
}

/// Attempts repeated under the operations' retry policies, by the class retried.
fn retries_table(h: &mut String, runs: &[(String, RunResult)]) {
    if !runs
        .iter()
        .any(|(_, r)| r.operations.iter().any(|o| o.retries > 0))
    {
        return;
    }
    let several = runs.len() > 1;
    h.push_str("<h3>Retries</h3>\n<div class=\"table-wrap\"><table>\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">operation</th><th class=\"text\">class retried</th><th>retries</th></tr></thead>\n<tbody>\n");
    for (label, r) in runs {
        for o in r.operations.iter().filter(|o| o.retries > 0) {
            for (class, n) in &o.retries_by_class {
                h.push_str("<tr>");
                if several {
                    let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
                }
                let _ = writeln!(
                    h,
                    "<td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td></tr>",
                    esc(&o.name),
                    class.name(),
                    thousands(*n)
                );
            }
        }
    }
    h.push_str("</tbody></table></div>\n");
}

fn interval_counts_table(h: &mut String, runs: &[(String, RunResult)]) {
    let several = runs.len() > 1;
    h.push_str("<h3>Operations per interval</h3>\n<div class=\"table-wrap\"><table>\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">operation</th><th>full intervals</th><th>interval</th><th>mean</th><th>stdev</th><th>min</th><th>max</th></tr></thead>\n<tbody>\n");
    for (label, r) in runs {
        let interval = crate::analysis::interval_s(r);
        for o in op_rows(r) {
            let c = &o.interval_counts;
            h.push_str("<tr>");
            if several {
                let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
            }
            let _ = writeln!(
                h,
                "<td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
                esc(&o.name),
                c.n,
                esc(&human_ns(interval * 1e9)),
                c.mean,
                c.stdev,
                thousands(c.min.max(0.0) as u64),
                thousands(c.max.max(0.0) as u64)
            );
        }
    }
    h.push_str("</tbody></table></div>\n");
}

/// The runs' verdicts on themselves (docs/validity.md): the verdict with its reasons, and
/// the rig's figures beside it. Files written before the verdict existed have no row.
fn validity_table(h: &mut String, runs: &[(String, RunResult)]) {
    let judged: Vec<_> = runs
        .iter()
        .filter_map(|(label, r)| r.validity.as_ref().map(|v| (label, v)))
        .collect();
    if judged.is_empty() {
        return;
    }
    h.push_str("<h3 id=\"validity\">Validity</h3>\n");
    let several = runs.len() > 1;
    for (label, v) in &judged {
        let prefix = if several {
            format!("{}: ", esc(label))
        } else {
            String::new()
        };
        let class = if v.reasons.is_empty() { "note" } else { "bad" };
        let _ = writeln!(
            h,
            "<p class=\"{class}\">{prefix}validity: {}</p>",
            esc(&v.line())
        );
    }
    h.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">verdict</th><th>rig CPU</th><th>CPU per op</th><th>busy intervals</th><th>hiccup p99</th><th>hiccup max</th><th>per client min / median / max</th><th>Jain</th><th>starved clients</th><th>Little's law</th></tr></thead>\n<tbody>\n");
    for (label, v) in &judged {
        h.push_str("<tr>");
        if several {
            let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
        }
        let verdict = if v.reasons.is_empty() {
            "valid"
        } else {
            "suspect"
        };
        let _ = writeln!(
            h,
            "<td class=\"text\">{verdict}</td><td>{:.0} % of {} cores</td><td>{}</td><td>{} of {}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td><td>{}</td><td>{} of {}</td><td>{}</td></tr>",
            v.rig.cpu_share * 100.0,
            v.rig.cores,
            v.rig
                .cpu_us_per_op
                .map_or("–".to_string(), |us| format!("{us:.1} µs")),
            v.rig.busy_intervals,
            v.rig.intervals,
            esc(&human_ns(v.hiccups.p99_ns as f64)),
            esc(&human_ns(v.hiccups.max_ns as f64)),
            thousands(v.fairness.min),
            v.fairness.median,
            thousands(v.fairness.max),
            v.fairness.jain.map_or("–".to_string(), |j| format!("{j:.2}")),
            thousands(v.fairness.starved_clients as u64),
            thousands(v.fairness.clients as u64),
            v.littles_law
                .as_ref()
                .map_or("–".to_string(), |l| format!("{:+.1} %", l.deviation * 100.0)),
        );
    }
    h.push_str("</tbody></table></div>\n");
    for (k, (label, r)) in runs.iter().enumerate() {
        if let Some(v) = &r.validity {
            rig_over_time(h, k, label, r, v, several);
        }
    }
}

const RIG_CAPTION: &str = "The rig's own CPU (the whole process as a share of all cores; its busiest thread as the share of the interval it was on a CPU or waiting for one), the machine's runnable threads, and how late the 5 ms hiccup thread woke, per interval. Dashed red: the verdict's thresholds. Warm-up shaded.";

/// The rig's CPU, the run queue and the hiccups per interval: the plot and, folded under
/// it, its figures.
fn rig_over_time(
    h: &mut String,
    k: usize,
    label: &str,
    r: &RunResult,
    v: &Validity,
    several: bool,
) {
    let Some(svg) = plot::rig::chart(&r.intervals, v) else {
        return;
    };
    let svg = svg.unwrap_or_else(|e| format!("<p class=\"bad\">{}</p>", esc(&e.to_string())));
    let title = if several {
        format!("The rig over time: {label}")
    } else {
        "The rig over time".to_string()
    };
    let _ = write!(
        h,
        "<figure class=\"plot\" id=\"rig-{k}\">\n<figcaption><h3>{}</h3><p>{RIG_CAPTION}</p></figcaption>\n{svg}\n",
        esc(&title),
    );
    h.push_str("<details><summary>figures per interval</summary><div class=\"table-wrap\"><table class=\"rig-figures\">\n<thead><tr><th>interval</th><th>elapsed (s)</th><th>rig CPU</th><th class=\"text\">busiest thread</th><th>busy</th><th>runnable threads</th><th>hiccup p99</th><th>hiccup max</th></tr></thead>\n<tbody>\n");
    let sampled = r.intervals.iter().filter(|i| i.rig.is_some());
    for (i, p) in sampled.zip(plot::rig::points(&r.intervals)) {
        let (name, busy) = p
            .thread
            .as_ref()
            .map_or(("–".to_string(), "–".to_string()), |(n, b)| {
                (esc(n), format!("{b:.0} %"))
            });
        let _ = writeln!(
            h,
            "<tr><td>{}{}</td><td>{:.2}</td><td>{:.1} %</td><td class=\"text\">{name}</td><td>{busy}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i.index,
            if p.warmup { " (warm-up)" } else { "" },
            p.t,
            p.cpu_pct,
            p.runq.map_or("–".to_string(), |q| format!("{q:.1}")),
            esc(&human_ns(p.hiccup_p99_ns)),
            esc(&human_ns(p.hiccup_max_ns)),
        );
    }
    h.push_str("</tbody></table></div></details>\n</figure>\n");
}

/// A JSON scalar as text; other values as compact JSON.
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".into(),
        other => other.to_string(),
    }
}

fn kv_table(h: &mut String, rows: &[(&str, String)]) {
    h.push_str("<div class=\"table-wrap\"><table class=\"kv\"><tbody>\n");
    for (k, v) in rows {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    h.push_str("</tbody></table></div>\n");
}

fn setup(h: &mut String, r: &RunResult) {
    let w = &r.workload;
    let mut rows: Vec<(&str, String)> = vec![
        ("workload", w.name.clone()),
        ("description", w.description.clone()),
        ("source", w.source.clone()),
        ("target", redact(&r.target.url)),
        ("target kind", r.target.kind.clone()),
        (
            "server version",
            r.target
                .server_version
                .clone()
                .unwrap_or_else(|| "–".into()),
        ),
        ("status", r.status.name().to_string()),
        ("started", r.started_at.clone()),
        ("ended", r.ended_at.clone()),
        ("elapsed", human_ns(r.elapsed_s * 1e9)),
        ("measured", human_ns(r.measured_s * 1e9)),
        ("missed starts", thousands(r.missed_starts)),
        ("loadrig", r.loadrig_version.clone()),
    ];
    if let Some(d) = &r.data_load {
        rows.push((
            "data load",
            if d.skipped {
                format!("{} records, reused (--skip-load)", thousands(d.records))
            } else {
                format!(
                    "{} records in {:.2}s ({} records/s)",
                    thousands(d.records),
                    d.seconds,
                    thousands(d.records_per_s as u64)
                )
            },
        ));
    }
    kv_table(h, &rows);

    if let Some(c) = &r.connect {
        h.push_str("<h3>Connections</h3>\n");
        kv_table(h, &connect_rows(c));
    }

    h.push_str("<h3>Load</h3>\n");
    // Every field of the load as the file has it, in name order.
    let load: Vec<(String, String)> = match serde_json::to_value(&r.load) {
        Ok(serde_json::Value::Object(m)) => {
            m.iter().map(|(k, v)| (k.clone(), json_text(v))).collect()
        }
        _ => Vec::new(),
    };
    let load_rows: Vec<(&str, String)> =
        load.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    kv_table(h, &load_rows);

    h.push_str("<h3>Host</h3>\n");
    kv_table(
        h,
        &[
            ("CPU", r.host.cpu_model.clone()),
            ("cores", r.host.cores.to_string()),
            ("OS", r.host.os.clone()),
            ("kernel", r.host.kernel.clone()),
            ("architecture", r.host.arch.clone()),
        ],
    );

    h.push_str("<h3>Resolved workload</h3>\n");
    // Keys in name order, as reports have always shown them.
    let text = serde_json::to_value(&r.workload)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_default();
    let _ = writeln!(h, "<pre>{}</pre>", esc(&text));
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            super::esc("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
    }
}
