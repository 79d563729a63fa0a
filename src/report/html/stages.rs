//! A run with stages in the report: one row per stage (its load, how far the run got, its
//! figures and its own verdict, with a suspect stage's reasons under the table) and what
//! `--stop-when` found.

use std::fmt::Write as _;

use super::esc;
use crate::duration::human_ns;
use crate::engine::StageKind;
use crate::report::console::{rate, thousands};
use crate::result::stages::StageRan;
use crate::result::validity::Verdict;
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
    h.push_str("<th class=\"text\">stage</th><th>time (s)</th><th class=\"text\">load</th><th class=\"text\">ran</th><th>ok</th><th>errors</th><th>ops/s</th><th>due done</th><th>never started</th><th>p50</th><th>p99</th><th>max</th><th class=\"text\">verdict</th></tr></thead>\n<tbody>\n");
    // Each suspect stage's reasons, listed under the table (a cell is too narrow for them).
    let mut reasons: Vec<String> = Vec::new();
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
            let level = |x: f64| match s.kind {
                StageKind::Rate => format!("{}/s", rate(x)),
                StageKind::Clients => format!("{x:.0}c"),
            };
            let load = if s.from == s.to {
                level(s.from)
            } else {
                format!("{} → {}", level(s.from), level(s.to))
            };
            let ran = match s.ran {
                StageRan::Complete => "complete",
                StageRan::Cut => "cut short",
                StageRan::NotRun => "not run",
            };
            let done = match s.offered {
                Some(due) if due > 0.0 => format!(
                    "{:.0}&nbsp;%",
                    100.0 * (s.total.ok + s.total.errors) as f64 / due
                ),
                _ => "–".into(),
            };
            let verdict = match &s.validity {
                Some(v) if v.verdict == Verdict::Valid => format!("valid ({})", s.judged),
                Some(v) => {
                    let who = if several {
                        format!("{label}, stage {}", s.name)
                    } else {
                        format!("stage {}", s.name)
                    };
                    reasons.push(format!("{who}: {}", v.reasons.join("; ")));
                    format!("<span class=\"bad\">suspect</span> ({})", s.judged)
                }
                None => "–".to_string(),
            };
            let _ = writeln!(
                h,
                "<td class=\"text\">{}</td><td>{:.1}–{:.1}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
                esc(&s.name),
                s.start_s,
                s.end_s,
                esc(&load),
                ran,
                thousands(s.total.ok),
                thousands(s.total.errors),
                rate(s.total.throughput_per_s),
                done,
                thousands(s.missed_starts),
                t(l.p50_ns as f64),
                t(l.p99_ns as f64),
                t(l.max_ns as f64),
                verdict,
            );
        }
    }
    h.push_str("</tbody></table></div>\n");
    if !reasons.is_empty() {
        h.push_str("<ul class=\"stage-reasons\">\n");
        for r in reasons {
            let _ = writeln!(h, "<li>{}</li>", esc(&r));
        }
        h.push_str("</ul>\n");
    }
}
