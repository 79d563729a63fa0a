//! How a [`History`] is shown: the change points per metric and the runs in order, as a
//! terminal table, Markdown or JSON, and as an HTML page with each metric's series plotted
//! and its change points marked. The statistics live in `analysis::changepoint`.

use std::fmt::Write as _;

use anyhow::Result;

use super::console::rate;
use super::html::{esc, page_head};
use super::plot::{history as hplot, Plot};
use crate::analysis::changepoint::ChangePoint;
use crate::analysis::history::{History, MetricHistory, METRICS};
use crate::duration::human_ns;

fn value(m: &MetricHistory, v: f64) -> String {
    if m.higher_is_better {
        format!("{}/s", rate(v))
    } else {
        human_ns(v)
    }
}

fn change(c: &ChangePoint) -> String {
    c.change
        .map_or_else(|| "–".into(), |x| format!("{:+.1}%", x * 100.0))
}

fn p_value(c: &ChangePoint) -> String {
    if c.p_value < 0.001 {
        "<0.001".into()
    } else {
        format!("{:.3}", c.p_value)
    }
}

/// "worse" or "better" for the metric's direction.
fn direction(m: &MetricHistory, c: &ChangePoint) -> &'static str {
    if (c.after > c.before) == m.higher_is_better {
        "better"
    } else {
        "worse"
    }
}

fn heading(h: &History) -> String {
    let span = match (h.runs.first(), h.runs.last()) {
        (Some(a), Some(b)) => format!(
            ", {} ({}) to {} ({})",
            a.file, a.started_at, b.file, b.started_at
        ),
        _ => String::new(),
    };
    format!(
        "history of {} on {}: {} runs ordered by {}{span}",
        h.workload,
        h.target,
        h.runs.len(),
        h.order
    )
}

fn method_line(h: &History) -> String {
    format!(
        "change points: {} ({} permutations, seed {}), kept at the {}% level; sizes are the medians of the runs between change points",
        h.method,
        h.permutations,
        h.seed,
        h.alpha * 100.0
    )
}

/// One row per change point: metric, where it began, its size and its p value.
fn rows(h: &History) -> Vec<[String; 9]> {
    let mut out = Vec::new();
    for m in &h.metrics {
        for c in &m.change_points {
            let run = &h.runs[c.index];
            out.push([
                m.metric.to_string(),
                format!("#{}", c.index + 1),
                run.file.clone(),
                run.label.clone().unwrap_or_else(|| "–".into()),
                run.started_at.clone(),
                format!("{} → {}", value(m, c.before), value(m, c.after)),
                change(c),
                p_value(c),
                direction(m, c).to_string(),
            ]);
        }
    }
    out
}

fn unchanged(h: &History) -> Vec<&'static str> {
    h.metrics
        .iter()
        .filter(|m| m.change_points.is_empty())
        .map(|m| m.metric)
        .collect()
}

fn run_values(h: &History, k: usize) -> Vec<String> {
    h.metrics
        .iter()
        .enumerate()
        .map(|(j, m)| value(m, h.runs[k].values()[j]))
        .collect()
}

/// The terminal table.
pub fn table(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", heading(h));
    let _ = writeln!(out, "{}\n", method_line(h));
    let rows = rows(h);
    if rows.is_empty() {
        let _ = writeln!(out, "no change point in any metric");
    } else {
        let head = [
            "metric",
            "from",
            "file",
            "label",
            "started",
            "median before → after",
            "change",
            "p",
            "",
        ];
        let widths: Vec<usize> = (0..9)
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([head[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in std::iter::once(head.map(String::from)).chain(rows) {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        let same = unchanged(h);
        if !same.is_empty() {
            let _ = writeln!(out, "no change point: {}", same.join(", "));
        }
    }
    let _ = writeln!(out, "\nruns:");
    let _ = writeln!(
        out,
        "  {:>3}  {:<24}  {:<12}  {}",
        "#",
        "file",
        "label",
        METRICS.map(|m| format!("{:>11}", m.0)).join("")
    );
    for (k, r) in h.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:>3}  {:<24}  {:<12}  {}",
            k + 1,
            r.file,
            r.label.as_deref().unwrap_or("–"),
            run_values(h, k)
                .iter()
                .map(|v| format!("{v:>11}"))
                .collect::<String>()
        );
    }
    if h.runs.len() < 4 {
        let _ = writeln!(
            out,
            "note: a change point needs at least 2 runs on each side: give at least 4"
        );
    }
    out
}

/// Text safe inside a Markdown table cell.
fn md(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Markdown for pull requests and CI summaries.
pub fn markdown(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**loadrig history**\n\n- {}\n- {}\n",
        md(&heading(h)),
        md(&method_line(h))
    );
    let rows = rows(h);
    if rows.is_empty() {
        let _ = writeln!(out, "No change point in any metric.");
    } else {
        let _ = writeln!(
            out,
            "| metric | from | file | label | started | median before → after | change | p | |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---:|---:|---|");
        for r in rows {
            let cells: Vec<String> = r.iter().map(|c| md(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let same = unchanged(h);
        if !same.is_empty() {
            let _ = writeln!(out, "\nNo change point: {}.", same.join(", "));
        }
    }
    out
}

/// The history as one JSON document.
pub fn json(h: &History) -> String {
    let mut s = serde_json::to_string_pretty(h).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// The HTML page: the change points, then one plot per metric.
pub fn html(h: &History) -> Result<String> {
    let title = format!("loadrig history: {} on {}", h.workload, h.target);
    let mut page = String::new();
    page_head(&mut page, &title);
    let _ = writeln!(
        page,
        "<h1>{}</h1>\n<p>{}</p>\n<p>{}</p>",
        esc(&title),
        esc(&heading(h)),
        esc(&method_line(h))
    );
    page.push_str("<h2 id=\"changes\">Change points</h2>\n");
    let rows = rows(h);
    if rows.is_empty() {
        page.push_str("<p>No change point in any metric.</p>\n");
    } else {
        page.push_str("<div class=\"table-wrap\"><table><thead><tr><th>metric</th><th>from</th><th>file</th><th>label</th><th>started</th><th>median before → after</th><th>change</th><th>p</th><th></th></tr></thead><tbody>\n");
        for r in rows {
            let cells: String = r.iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
            let _ = writeln!(page, "<tr>{cells}</tr>");
        }
        page.push_str("</tbody></table></div>\n");
    }
    page.push_str("<h2 id=\"plots\">Plots</h2>\n");
    for p in plots(h)? {
        let _ = write!(
            page,
            "<figure class=\"plot\" id=\"{}\">\n<figcaption><h3>{}</h3><p>{}</p></figcaption>\n{}\n</figure>\n",
            esc(&p.id),
            esc(&p.title),
            esc(&p.caption),
            p.svg
        );
    }
    let _ = write!(
        page,
        "<footer>Generated by loadrig {} from {} result files. The page is self-contained and makes no network request.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        h.runs.len()
    );
    Ok(page)
}

fn plots(h: &History) -> Result<Vec<Plot>> {
    h.metrics
        .iter()
        .enumerate()
        .map(|(j, m)| {
            let ys: Vec<f64> = h.runs.iter().map(|r| r.values()[j]).collect();
            Ok(Plot {
                id: format!("metric-{}", m.metric.replace('.', "")),
                title: format!("{} across runs", m.metric),
                caption: format!(
                    "{} of all operations together in each run (dots, in {} order); a dashed red line marks where a change point's new level begins, and the grey steps the medians between change points.",
                    if m.higher_is_better { "Successful operations per second" } else { "Latency" },
                    h.order
                ),
                svg: hplot::chart(&ys, &m.change_points, m.metric, m.higher_is_better)?,
            })
        })
        .collect()
}
