//! `loadrig report SWEEP.json`: the page of a sweep file, as self-contained as a run's: the
//! points in a table, the fitted models in the words of the console summary, and plots of
//! throughput and latency against the varied value (the USL curve, the objective and the
//! knee drawn in) and of a growth study's time per batch against the records stored.

use std::fmt::Write as _;

use anyhow::Result;

use super::{esc, kv_table, CSP, CSS};
use crate::report::console::{rate, thousands};
use crate::report::plot::{sweep as splot, Plot};
use crate::report::sweep::summary;
use crate::result::sweep::{SweepResult, SweepStatus};
use crate::spec::duration::human_ns;

/// The console summary in blocks: a line that does not start with a space opens one.
fn blocks(s: &SweepResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in summary(s).lines() {
        match out.last_mut() {
            Some(b) if line.starts_with(' ') => {
                b.push('\n');
                b.push_str(line.trim());
            }
            _ => out.push(line.to_string()),
        }
    }
    out
}

fn model_text(blocks: &[String], prefix: &str) -> Option<String> {
    blocks.iter().find(|b| b.starts_with(prefix)).cloned()
}

/// Paragraphs of a block, escaped, one line each.
fn paragraphs(block: &str, class: &str) -> String {
    block
        .lines()
        .map(|l| format!("<p class=\"{class}\">{}</p>", esc(l)))
        .collect()
}

/// Render the page of one sweep file, labelled (usually) by its file name.
pub fn render_sweep(label: &str, s: &SweepResult) -> Result<String> {
    let growth = s.models.growth.is_some() || s.vary.kind == "growth";
    let title = if growth {
        format!("loadrig report: growth study of {}", s.workload)
    } else {
        format!(
            "loadrig report: sweep of {} over {}",
            s.workload, s.vary.name
        )
    };
    let blocks = blocks(s);
    let x_name = if growth {
        "records stored".to_string()
    } else {
        s.vary.name.clone()
    };

    let mut plots = vec![
        Plot {
            id: "throughput".into(),
            title: format!("Throughput against {x_name}"),
            caption: if s.models.usl.as_ref().is_some_and(|u| !u.curve.is_empty()) {
                format!("Successful operations per second of each run against {x_name} (dots), and the curve of the Universal Scalability Law fitted to them (line).")
            } else {
                format!("Successful operations per second of each run against {x_name}; the line joins the mean at each value.")
            },
            svg: splot::throughput(s)?,
        },
        Plot {
            id: "latency".into(),
            title: format!("Latency against {x_name}"),
            caption: format!(
                "p50 and p99 response time of all operations together in each run, on a log scale.{}",
                if s.slo.is_some() {
                    " The dashed red line is the objective; the green one the knee."
                } else {
                    ""
                }
            ),
            svg: splot::latency(s)?,
        },
    ];
    if let Some(svg) = splot::growth(s)? {
        let series = s
            .models
            .growth
            .as_ref()
            .map_or(String::new(), |g| g.series.clone());
        plots.push(Plot {
            id: "growth".into(),
            title: format!("Time per batch against records stored: {series}"),
            caption: "Seconds each batch took against the records already stored (the middle of the batch), with the curve of the fitted complexity class.".into(),
            svg,
        });
    }
    let model_of = |id: &str| match id {
        "throughput" => model_text(&blocks, "USL fit"),
        "latency" => model_text(&blocks, "knee"),
        "growth" => model_text(&blocks, "growth"),
        _ => None,
    };

    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"loadrig {}\">\n<link rel=\"icon\" href=\"data:,\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&title)
    );
    let _ = write!(
        h,
        "<header>\n<h1>{}</h1>\n<p>{} on {} · {} runs · {} · {}</p>\n",
        esc(&title),
        esc(&s.workload),
        esc(&s.target),
        s.points.len(),
        s.status.name(),
        esc(&s.started_at)
    );
    h.push_str("<nav><a href=\"#summary\">Summary</a><a href=\"#points\">Points</a>");
    for p in &plots {
        let _ = write!(h, "<a href=\"#{}\">{}</a>", esc(&p.id), esc(&p.title));
    }
    h.push_str("<a href=\"#setup\">Sweep, target, host</a></nav>\n</header>\n");

    // Summary: the models and notes, as the console says them.
    h.push_str("<h2 id=\"summary\">Summary</h2>\n");
    if blocks.is_empty() {
        h.push_str("<p class=\"muted\">No model applies to this sweep.</p>\n");
    }
    for b in &blocks {
        let class = if b.starts_with("note:") {
            "note"
        } else {
            "model"
        };
        h.push_str(&paragraphs(b, class));
        h.push('\n');
    }
    if s.status != SweepStatus::Complete {
        let _ = writeln!(
            h,
            "<p class=\"bad\">{}: the sweep is marked {}</p>",
            esc(label),
            s.status.name()
        );
    }

    points_table(&mut h, s);

    h.push_str("<h2 id=\"plots\">Plots</h2>\n");
    for p in &plots {
        let model = model_of(&p.id)
            .map(|m| paragraphs(&m, "model"))
            .unwrap_or_default();
        let _ = write!(
            h,
            "<figure class=\"plot\" id=\"{}\">\n<figcaption><h3>{}</h3><p>{}</p>{model}</figcaption>\n{}\n</figure>\n",
            esc(&p.id),
            esc(&p.title),
            esc(&p.caption),
            p.svg
        );
    }

    h.push_str("<h2 id=\"setup\">Sweep, target and host</h2>\n");
    let mut rows: Vec<(&str, String)> = vec![
        ("workload", s.workload.clone()),
        ("target", s.target.clone()),
        ("varied", format!("{} ({})", s.vary.name, s.vary.kind)),
        ("values", s.vary.values.join(", ")),
        ("runs per value", s.repeat.to_string()),
        (
            "objective",
            s.slo.as_ref().map_or("–".into(), |o| o.text.clone()),
        ),
        (
            "search",
            if s.find_max { "--find-max" } else { "grid" }.into(),
        ),
        ("status", s.status.name().to_string()),
        ("started", s.started_at.clone()),
        ("ended", s.ended_at.clone().unwrap_or_else(|| "–".into())),
        ("loadrig", s.loadrig_version.clone()),
    ];
    if !s.vary.spec.is_empty() {
        rows.insert(3, ("--vary", s.vary.spec.clone()));
    }
    if let Some(g) = &s.growth {
        rows.push((
            "growth study",
            format!(
                "batches of {} operations up to {} records ({} stored before the first)",
                thousands(g.batch),
                thousands(g.limit),
                thousands(g.initial_records)
            ),
        ));
    }
    kv_table(&mut h, &rows);
    if let Some(p) = s.points.first() {
        let r = &p.result;
        h.push_str("<h3>Host</h3>\n");
        kv_table(
            &mut h,
            &[
                ("CPU", r.host.cpu_model.clone()),
                ("cores", r.host.cores.to_string()),
                ("OS", r.host.os.clone()),
                ("kernel", r.host.kernel.clone()),
                ("architecture", r.host.arch.clone()),
            ],
        );
    }

    let _ = write!(
        h,
        "<footer>Generated by loadrig {} from {}. Every figure is computed from the sweep file; the page is self-contained and makes no network request.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(label)
    );
    Ok(h)
}

fn points_table(h: &mut String, s: &SweepResult) {
    let slo = s.points.iter().any(|p| p.slo_ok.is_some());
    let batch = s.points.iter().any(|p| p.stored_before.is_some());
    let modes = s.points.iter().any(|p| {
        p.result
            .latency_modes
            .as_ref()
            .is_some_and(|m| m.modes.len() > 1)
    });
    h.push_str("<h2 id=\"points\">Points</h2>\n<div class=\"table-wrap\"><table>\n<thead><tr>");
    let _ = write!(
        h,
        "<th>{}</th><th>run</th><th>ok</th><th>errors</th><th>ops/s</th><th>mean</th><th>p50</th><th>p99</th><th>max</th>",
        esc(if batch { "records stored" } else { &s.vary.name })
    );
    if slo {
        h.push_str("<th class=\"text\">objective</th>");
    }
    if batch {
        h.push_str("<th>batch time</th>");
    }
    if modes {
        h.push_str("<th class=\"text\">latency modes</th>");
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for p in &s.points {
        let l = &p.latency;
        let t = |ns: f64| {
            if l.count > 0 {
                esc(&human_ns(ns))
            } else {
                "–".into()
            }
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&p.value),
            p.repeat,
            thousands(p.ok),
            thousands(p.errors),
            rate(p.throughput_per_s),
            t(l.mean_ns),
            t(l.p50_ns as f64),
            t(l.p99_ns as f64),
            t(l.max_ns as f64),
        );
        if slo {
            let _ = write!(
                h,
                "<td class=\"text\">{}</td>",
                match p.slo_ok {
                    Some(true) => "met",
                    Some(false) => "<span class=\"bad\">missed</span>",
                    None => "–",
                }
            );
        }
        if batch {
            let _ = write!(h, "<td>{}</td>", esc(&human_ns(p.measured_s * 1e9)));
        }
        if modes {
            let line = p
                .result
                .latency_modes
                .as_ref()
                .and_then(|m| m.summary_line())
                .map(|l| l.trim_start_matches("latency modes at ").to_string())
                .unwrap_or_else(|| "–".into());
            let _ = write!(h, "<td class=\"text\">{}</td>", esc(&line));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
}
