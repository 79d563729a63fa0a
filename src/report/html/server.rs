//! The report's section on the server under test (docs/observe.md): where the time went
//! (the bottleneck verdict and every resource judged), each operation's time split into
//! the server's and the rest, the server's figures, what observing cost and could not see,
//! and the server's series beside the clients', interval by interval.

use std::fmt::Write as _;

use super::esc;
use crate::analysis::bottleneck::label;
use crate::observe::figure;
use crate::report::plot;
use crate::result::bottleneck::Status;
use crate::result::RunResult;

const CAPTION: &str = "Per interval: the clients' successful operations per second beside the server's own count of its work; the clients' median and 99th percentile (the largest among the operations) beside the server's mean execution time per statement; the server's processes' CPU and the threads waiting for a CPU beside the rig's CPU; and, for PostgreSQL, where the run's backends spent their active time, by wait class (CPU: running or runnable with no wait event), stacked. Warm-up shaded.";

/// The section, for every run that observed its server; nothing when none did.
pub(super) fn section(h: &mut String, runs: &[(String, RunResult)]) {
    let observed: Vec<(usize, &String, &RunResult)> = runs
        .iter()
        .enumerate()
        .filter(|(_, (_, r))| r.server.is_some())
        .map(|(k, (l, r))| (k, l, r))
        .collect();
    if observed.is_empty() {
        return;
    }
    h.push_str("<h3 id=\"server\">The server: where the time went</h3>\n");
    let several = runs.len() > 1;
    for (k, label_, r) in observed {
        if several {
            let _ = writeln!(h, "<h4>{}</h4>", esc(label_));
        }
        verdict(h, r);
        decomposition(h, r);
        lock_waits(h, r);
        figures(h, r);
        chart(h, k, r);
    }
}

fn verdict(h: &mut String, r: &RunResult) {
    let Some(b) = &r.bottleneck else { return };
    let class = if b.verdict == "none" || b.verdict == "unknown" {
        "note"
    } else {
        "bad"
    };
    let _ = writeln!(
        h,
        "<p class=\"{class} bottleneck\">bottleneck: {}</p>",
        esc(&b.line)
    );
    h.push_str("<div class=\"table-wrap\"><table class=\"resources\">\n<thead><tr><th class=\"text\">resource</th><th class=\"text\">status</th><th>share of the time</th><th class=\"text\">what was seen</th></tr></thead>\n<tbody>\n");
    for res in &b.resources {
        let _ = writeln!(
            h,
            "<tr class=\"{}\"><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            res.status.name(),
            esc(label(&res.resource)),
            if res.status == Status::Bottleneck {
                "<strong>bottleneck</strong>"
            } else {
                res.status.name()
            },
            res.share
                .map_or("–".to_string(), |s| format!("{:.0} %", s * 100.0)),
            esc(&res.summary)
        );
    }
    h.push_str("</tbody></table></div>\n");
}

fn decomposition(h: &mut String, r: &RunResult) {
    let Some(s) = &r.server else { return };
    if !s.decomposition.iter().any(|d| d.server_mean_ms.is_some()) {
        return;
    }
    h.push_str("<div class=\"table-wrap\"><table class=\"decomposition\">\n<thead><tr><th class=\"text\">operation</th><th>operations</th><th>client mean</th><th>server mean</th><th>rest</th><th>server share</th><th>statements per op</th></tr></thead>\n<tbody>\n");
    let ms = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.3} ms"));
    for d in &s.decomposition {
        let _ = writeln!(
            h,
            "<tr><td class=\"text\">{}</td><td>{}</td><td>{:.3} ms</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.op),
            figure(d.ops as f64),
            d.client_mean_ms,
            ms(d.server_mean_ms),
            ms(d.rest_ms),
            d.server_share
                .map_or("–".to_string(), |x| format!("{:.0} %", x * 100.0)),
            d.statements_per_op
                .map_or("–".to_string(), |x| format!("{x:.2}")),
        );
    }
    h.push_str("</tbody></table></div>\n");
    let _ = writeln!(h, "<p class=\"caption\">{}.</p>", esc(&s.matching));
    if !s.unmatched.is_empty() {
        let list: Vec<String> = s
            .unmatched
            .iter()
            .take(5)
            .map(|u| format!("{} ({} calls, {:.1} ms)", esc(&u.text), u.calls, u.time_ms))
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"note\">matched no operation: {}</p>",
            list.join("; ")
        );
    }
}

/// The server's sampled lock waits by operation, when it was sampled and any op waited.
fn lock_waits(h: &mut String, r: &RunResult) {
    let Some(s) = &r.server else { return };
    if !s.decomposition.iter().any(|d| d.lock_wait_ms > Some(0.0)) {
        return;
    }
    h.push_str("<div class=\"table-wrap\"><table class=\"lock-waits\">\n<thead><tr><th class=\"text\">operation</th><th>operations</th><th>lock wait per op</th><th>share of the lock waits</th></tr></thead>\n<tbody>\n");
    for d in &s.decomposition {
        let Some(ms) = d.lock_wait_ms else { continue };
        let _ = writeln!(
            h,
            "<tr><td class=\"text\">{}</td><td>{}</td><td>{ms:.3} ms</td><td>{}</td></tr>",
            esc(&d.op),
            figure(d.ops as f64),
            d.lock_wait_share
                .map_or("–".to_string(), |x| format!("{:.0} %", x * 100.0)),
        );
    }
    h.push_str("</tbody></table></div>\n");
    let _ = writeln!(
        h,
        "<p class=\"caption\">{}.</p>",
        esc(&s.lock_wait_matching)
    );
}

fn figures(h: &mut String, r: &RunResult) {
    let Some(s) = &r.server else { return };
    h.push_str("<details><summary>the server's figures over the measured part</summary><div class=\"table-wrap\"><table class=\"kv server-figures\"><tbody>\n");
    for (name, v) in &s.figures {
        let _ = writeln!(
            h,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(name),
            esc(&figure(*v))
        );
    }
    h.push_str("</tbody></table></div></details>\n");
    if let Some(c) = &s.cost {
        let pct = |x: Option<f64>| x.map_or(String::new(), |x| format!(" ({:.2} %)", x * 100.0));
        let _ = writeln!(
            h,
            "<p class=\"caption\">Observing cost {:.3} s of the rig's CPU{}, {} queries, {}.</p>",
            c.cost.cpu_s,
            pct(c.cpu_share),
            c.cost.queries,
            c.cost.server_time_ms.map_or(
                "its server time not counted by this server".to_string(),
                |ms| format!("{ms:.1} ms of server time{}", pct(c.server_time_share))
            )
        );
    }
    for u in &s.unavailable {
        let _ = writeln!(
            h,
            "<p class=\"note\">not observed: {}</p>",
            esc(&u.to_string())
        );
    }
}

fn chart(h: &mut String, k: usize, r: &RunResult) {
    let Some(svg) = plot::server::chart(&r.intervals) else {
        return;
    };
    let svg = svg.unwrap_or_else(|e| format!("<p class=\"bad\">{}</p>", esc(&e.to_string())));
    let _ = write!(
        h,
        "<figure class=\"plot\" id=\"server-{k}\">\n<figcaption><h3>The server over time</h3><p>{CAPTION}</p></figcaption>\n{svg}\n</figure>\n"
    );
}
