//! A run with stages in the report: one row per stage (its load, how far the run got, its
//! figures and its own verdict) and what `--stop-when` found.

use std::fmt::Write as _;

use super::esc;
use crate::duration::human_ns;
use crate::report::console::{rate, stage_heading, thousands};
use crate::result::RunResult;

/// The stages' table under the summary; nothing for runs without stages.
pub fn table(h: &mut String, runs: &[(String, RunResult)]) {
    if runs.iter().all(|(_, r)| r.stages.is_empty()) {
        return;
    }
    let several = runs.len() > 1;
    h.push_str("<h3 id=\"stages\">Stages</h3>\n");
    for (label, r) in runs {
        if let Some(b) = &r.breakpoint {
            let prefix = if several {
                format!("{}: ", esc(label))
            } else {
                String::new()
            };
            let _ = writeln!(h, "<p class=\"figure\">{prefix}{}</p>", esc(&b.note()));
        }
    }
    h.push_str("<div class=\"table-wrap\"><table class=\"stages\">\n<thead><tr>");
    if several {
        h.push_str("<th class=\"text\">run</th>");
    }
    h.push_str("<th class=\"text\">stage</th><th class=\"text\">load</th><th>measured</th><th>ok</th><th>errors</th><th>ops/s</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>never started</th><th class=\"text\">verdict</th></tr></thead>\n<tbody>\n");
    for (label, r) in runs {
        for s in &r.stages {
            h.push_str("<tr>");
            if several {
                let _ = write!(h, "<td class=\"text\">{}</td>", esc(label));
            }
            let l = &s.total.latency;
            let t = |ns: f64| {
                if l.count > 0 {
                    esc(&human_ns(ns))
                } else {
                    "–".into()
                }
            };
            // The heading without the name: `0.0s to 30.0s, 0/s to 2,000/s (linear), complete`.
            let heading = stage_heading(s);
            let load = heading
                .split_once(": ")
                .map_or(heading.as_str(), |(_, rest)| rest);
            let verdict = match &s.validity {
                Some(v) => format!("{} ({})", v.line(), s.judged),
                None => "–".to_string(),
            };
            let _ = writeln!(
                h,
                "<td class=\"text\">{}</td><td class=\"wrap\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>",
                esc(&s.name),
                esc(load),
                esc(&human_ns(s.measured_s * 1e9)),
                thousands(s.total.ok),
                thousands(s.total.errors),
                rate(s.total.throughput_per_s),
                t(l.mean_ns),
                t(l.p50_ns as f64),
                t(l.p99_ns as f64),
                t(l.p999_ns as f64),
                t(l.max_ns as f64),
                thousands(s.missed_starts),
                esc(&verdict),
            );
        }
    }
    h.push_str("</tbody></table></div>\n");
}
