//! The server's side of a run as a person reads it (docs/observe.md): a line under each
//! interval while the run goes, and at the end the server's figures, each operation's time
//! split into the server's and the rest, the bottleneck verdict and what observing cost.

use std::fmt::Write as _;

use crate::analysis::bottleneck::label;
use crate::observe::{figure, ServerInterval};
use crate::result::bottleneck::Status;
use crate::result::server::{ServerIntervalRecord, ServerRecord};
use crate::result::RunResult;

/// Counters shown when the server has them: what tells its load at a glance.
const HEADLINE: &[(&str, &str)] = &[
    ("pg_stat_database.xact_commit", "commits"),
    ("pg_stat_database.blks_read", "blocks read"),
    ("global_status.Questions", "questions"),
    ("global_status.Innodb_row_lock_waits", "row lock waits"),
    ("stats.total_commands_processed", "commands"),
    ("operations.completed", "operations"),
    ("stub_status.requests", "requests"),
];

/// The line under an interval: the server's CPU, where its sessions were, its counters.
pub fn interval_line(s: &ServerIntervalRecord) -> String {
    let mut line = format!("{:>8} {}", "server", brief(&s.target));
    if let Some(b) = &s.behind {
        let _ = write!(line, " | behind: {}", brief(b));
    }
    line
}

fn brief(s: &ServerInterval) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &s.processes {
        parts.push(format!(
            "cpu {:.2} s, run queue {:.2} s",
            p.cpu_s(),
            p.run_queue_s
        ));
    }
    if let Some(w) = &s.waits {
        let classes: Vec<String> = w
            .by_class()
            .iter()
            .take(3)
            .map(|(c, x)| format!("{c} {:.0} %", x * 100.0))
            .collect();
        if w.backends > 0 {
            parts.push(format!(
                "active {:.0} %{}{}",
                100.0 * w.active as f64 / w.backends as f64,
                if classes.is_empty() { "" } else { ": " },
                classes.join(", ")
            ));
        }
    }
    for (key, name) in HEADLINE {
        if let Some(v) = s.counters.get(*key) {
            parts.push(format!("{name} {}", figure(*v)));
        }
    }
    if let Some(ms) = s.statement_time_ms() {
        let calls: u64 = s.statements.iter().map(|x| x.calls).sum();
        parts.push(format!("{} statements, {ms:.1} ms", figure(calls as f64)));
    }
    for q in &s.queries {
        match (&q.value, &q.text) {
            (Some(v), _) => parts.push(format!("{} = {}", q.name, figure(*v))),
            (None, Some(t)) => parts.push(format!("{} = {t}", q.name)),
            (None, None) => parts.push(format!("{} = NULL", q.name)),
        }
    }
    if parts.is_empty() {
        "nothing observed".to_string()
    } else {
        parts.join(" · ")
    }
}

/// The closing lines: the server's figures, the time per operation, the verdict, the cost
/// and what could not be seen.
pub fn summary(r: &RunResult) -> String {
    let mut out = String::new();
    let Some(s) = &r.server else {
        return out;
    };
    let _ = writeln!(out, "server: {}", figures_line(s));
    if s.decomposition.iter().any(|d| d.server_mean_ms.is_some()) {
        let _ = writeln!(
            out,
            "{:<20} {:>12} {:>12} {:>12} {:>8}",
            "time per op (ms)", "client", "server", "rest", "server %"
        );
        for d in &s.decomposition {
            let opt = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.3}"));
            let _ = writeln!(
                out,
                "{:<20} {:>12.3} {:>12} {:>12} {:>8}",
                d.op,
                d.client_mean_ms,
                opt(d.server_mean_ms),
                opt(d.rest_ms),
                d.server_share
                    .map_or("–".to_string(), |x| format!("{:.0}", x * 100.0))
            );
        }
        if let Some(u) = s.unmatched.first() {
            let text: String = u.text.chars().take(60).collect();
            let _ = writeln!(
                out,
                "unmatched: {} statement(s) matched no operation, the largest {:.1} ms: \"{text}\"",
                s.unmatched.len(),
                u.time_ms
            );
        }
    }
    if s.decomposition.iter().any(|d| d.lock_wait_ms > Some(0.0)) {
        let _ = writeln!(
            out,
            "{:<20} {:>12} {:>8}",
            "lock wait per op", "ms", "share %"
        );
        for d in &s.decomposition {
            let Some(ms) = d.lock_wait_ms else { continue };
            let share = d.lock_wait_share.unwrap_or(0.0) * 100.0;
            let _ = writeln!(out, "{:<20} {ms:>12.3} {share:>8.0}", d.op);
        }
    }
    for u in &s.unavailable {
        let _ = writeln!(out, "note: server: {u}");
    }
    if let Some(c) = &s.cost {
        let share = |x: Option<f64>, of: &str| {
            x.map_or(String::new(), |x| format!(" ({:.2} % of {of})", x * 100.0))
        };
        let _ = writeln!(
            out,
            "observer: {:.3} s of CPU{}, {} queries, {}",
            c.cost.cpu_s,
            share(c.cpu_share, "the rig's"),
            c.cost.queries,
            match c.cost.server_time_ms {
                Some(ms) => format!(
                    "{ms:.1} ms of server time{}",
                    share(c.server_time_share, "the statements'")
                ),
                None => "its server time not counted by this server".to_string(),
            }
        );
    }
    if let Some(b) = &r.bottleneck {
        let _ = writeln!(out, "bottleneck: {}", b.line);
        for res in b
            .resources
            .iter()
            .filter(|x| x.status == Status::Busy && x.resource != b.verdict)
        {
            let _ = writeln!(
                out,
                "  also busy: {}: {}",
                label(&res.resource),
                res.summary
            );
        }
    }
    out
}

/// The figures that matter most, in a line.
fn figures_line(s: &ServerRecord) -> String {
    let f = |n: &str| s.figures.get(n).copied();
    let mut parts = Vec::new();
    if let (Some(c), Some(share)) = (f("cpu_cores"), f("cpu_share")) {
        parts.push(format!(
            "cpu {c:.2} cores ({:.0} % of the machine)",
            share * 100.0
        ));
    }
    if let Some(q) = f("run_queue_per_cpu_s") {
        parts.push(format!("run queue {q:.2} s per cpu s"));
    }
    if let Some(a) = f("backend_active_share") {
        let classes: Vec<String> = s
            .measured
            .figures
            .waits
            .iter()
            .flat_map(|w| w.by_class())
            .take(4)
            .map(|(c, x)| format!("{c} {:.0} %", x * 100.0))
            .collect();
        parts.push(format!(
            "backends active {:.0} % ({})",
            a * 100.0,
            classes.join(", ")
        ));
    }
    for (name, shown) in [
        ("server_ms_per_op", "server ms/op"),
        ("commits_per_s", "commits/s"),
        ("questions_per_s", "questions/s"),
        ("row_lock_waits", "row lock waits"),
        ("commands_per_s", "commands/s"),
        ("requests_per_s", "requests/s"),
        ("threads_pending", "threads pending"),
    ] {
        if let Some(v) = f(name) {
            parts.push(format!("{shown} {}", figure(round(v))));
        }
    }
    if parts.is_empty() {
        "nothing observed in the measured part".to_string()
    } else {
        parts.join(", ")
    }
}

/// Rates and means to three significant digits, so that a line stays short.
fn round(v: f64) -> f64 {
    if v.abs() >= 100.0 {
        v.round()
    } else if v.abs() >= 1.0 {
        (v * 100.0).round() / 100.0
    } else {
        (v * 1000.0).round() / 1000.0
    }
}
