//! What a person sees: one line per interval while the run goes, a progress bar on a
//! terminal, and the summary table at the end. Piped output stays plain lines.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::duration::human_ns;
use crate::engine::{IntervalData, LoadProgress, Observer, StageKind};
use crate::result::stages::{StageRan, StageRecord};
use crate::result::validity::Validity;
use crate::result::{
    ConnectRecord, ErrorsByClass, FigureRecord, IntervalOp, IntervalRecord, OpResult, RunResult,
    RunStatus,
};
use crate::stats::LatencySummary;

pub const INTERVAL_HEADER: &str =
    "interval   elapsed          ok        ops/s   errors       p50       p99       max";

pub use crate::stats::thousands;

/// Operations per second: grouped digits from 100 up, two decimals below.
pub fn rate(x: f64) -> String {
    if x >= 100.0 {
        thousands(x.round() as u64)
    } else {
        format!("{x:.2}")
    }
}

/// The header of a run with stages: the stage and its load at the end of each line.
pub const STAGED_HEADER: &str =
    "interval   elapsed          ok        ops/s   errors       p50       p99       max  stage";

pub fn interval_line(r: &IntervalRecord) -> String {
    let mut line = plain_interval_line(r);
    if let Some(stage) = &r.stage {
        let secs = r.end_s - r.start_s;
        let _ = write!(line, "  {stage}");
        if let Some(due) = r.offered.filter(|_| secs > 0.0) {
            let _ = write!(line, " ({}/s due)", rate(due / secs));
        }
        if let Some(c) = r.clients {
            let _ = write!(line, " ({c} client{})", if c == 1 { "" } else { "s" });
        }
    }
    line
}

fn plain_interval_line(r: &IntervalRecord) -> String {
    let secs = r.end_s - r.start_s;
    let ok = r.ok;
    let worst = |f: fn(&IntervalOp) -> u64| r.ops.iter().map(f).max().unwrap_or(0);
    // With several operations the line shows the largest p50/p99/max among them.
    format!(
        "{:>8} {:>8.2}s {:>11} {:>12} {:>8} {:>9} {:>9} {:>9}{}",
        r.index,
        r.end_s,
        thousands(ok),
        rate(if secs > 0.0 { ok as f64 / secs } else { 0.0 }),
        thousands(r.errors),
        if ok > 0 {
            human_ns(worst(|o| o.p50_ns) as f64)
        } else {
            "-".into()
        },
        if ok > 0 {
            human_ns(worst(|o| o.p99_ns) as f64)
        } else {
            "-".into()
        },
        if ok > 0 {
            human_ns(worst(|o| o.max_ns) as f64)
        } else {
            "-".into()
        },
        if r.warmup { "  warm-up" } else { "" }
    )
}

/// The bar of the setup statements and the data load, on stderr when it is a terminal:
/// how many of how many, and rows (or records) per second since the phase began.
pub struct LoadBar {
    bar: Option<ProgressBar>,
    phase: Option<(&'static str, Instant)>,
}

impl LoadBar {
    pub fn on_terminal() -> LoadBar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        });
        LoadBar { bar, phase: None }
    }

    pub fn show(&mut self, progress: LoadProgress) {
        let Some(bar) = &self.bar else { return };
        let (name, done, of, rows, unit) = match progress {
            LoadProgress::Setup { done, of, rows } => ("setting up", done, of, rows, "rows"),
            LoadProgress::Data { done, of } => ("loading", done, of, done, "records"),
        };
        let started = match self.phase {
            Some((phase, started)) if phase == name => started,
            _ => {
                let now = Instant::now();
                self.phase = Some((name, now));
                bar.set_length(of);
                bar.set_prefix(name);
                now
            }
        };
        let per_s = rows as f64 / started.elapsed().as_secs_f64().max(1e-9);
        bar.set_position(done);
        bar.set_message(format!(
            "{} {unit} ({} {unit}/s)",
            thousands(rows),
            thousands(per_s as u64)
        ));
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The live view: interval lines on stdout, a progress bar on stderr when it is a terminal,
/// and each interval appended to the `.jsonl` stream.
pub struct Live {
    names: Vec<String>,
    bar: Option<ProgressBar>,
    jsonl: Option<std::fs::File>,
    total: Option<Duration>,
    printed_header: bool,
}

impl Live {
    pub fn new(names: Vec<String>, total: Option<Duration>, jsonl: Option<std::fs::File>) -> Live {
        let bar = std::io::stderr().is_terminal().then(|| match total {
            Some(t) => {
                let bar = ProgressBar::new(t.as_millis() as u64);
                bar.set_style(
                    ProgressStyle::with_template("{spinner} [{bar:40}] {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar
            }
            None => ProgressBar::new_spinner(),
        });
        Live {
            names,
            bar,
            jsonl,
            total,
            printed_header: false,
        }
    }

    fn print(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Live {
    fn interval(&mut self, data: &IntervalData) {
        let record = IntervalRecord::of(data, &self.names, false);
        if !self.printed_header {
            self.print(if record.stage.is_some() {
                STAGED_HEADER
            } else {
                INTERVAL_HEADER
            });
            self.printed_header = true;
        }
        self.print(&interval_line(&record));
        if let Some(f) = &mut self.jsonl {
            if let Ok(mut line) = serde_json::to_vec(&record) {
                line.push(b'\n');
                // Losing the stream must not stop the run; the result file still has it all.
                // After a failed write (a full disk) the stream stops, so that a line cut
                // short stays its last and `loadrig recover` can still read it.
                if let Err(e) = f.write_all(&line) {
                    eprintln!("warning: the interval stream stops at interval {}: {e}; the result file will hold every interval", record.index);
                    self.jsonl = None;
                }
            }
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        if let Some(bar) = &self.bar {
            match self.total {
                Some(t) => {
                    bar.set_position(elapsed.min(t).as_millis() as u64);
                    let left = t.saturating_sub(elapsed).as_secs();
                    bar.set_message(format!("{left}s left"));
                }
                None => {
                    bar.set_message(format!("{:.0}s", elapsed.as_secs_f64()));
                    bar.tick();
                }
            }
        }
    }
}

/// The closing summary: one row per operation and the total.
pub fn summary(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} on {} — {} measured{}",
        r.workload.name,
        r.target.url,
        human_ns(r.measured_s * 1e9),
        match r.status {
            RunStatus::Complete => String::new(),
            status => format!(" ({})", status.name()),
        }
    );
    let mut rows: Vec<&OpResult> = r.operations.iter().collect();
    if r.operations.len() > 1 {
        rows.push(&r.total);
    }
    summary_table(&mut out, &rows);
    for op in rows.iter().filter(|op| op.rolled_back > 0) {
        let _ = writeln!(
            out,
            "rolled back in {}: {} of its {} ok (a rollback step of its tx)",
            op.name,
            thousands(op.rolled_back),
            thousands(op.ok)
        );
    }
    error_lines(&mut out, &rows);
    retry_lines(&mut out, &rows);
    statement_line(&mut out, &r.total);
    open_loop_lines(&mut out, r);
    let c = &r.total.interval_counts;
    if c.n > 0 {
        let _ = writeln!(
            out,
            "ops per interval ({} full intervals): mean {:.1}, stdev {:.1}, min {}, max {}",
            c.n,
            c.mean,
            c.stdev,
            thousands(c.min as u64),
            thousands(c.max as u64)
        );
    }
    for f in &r.figures {
        let _ = writeln!(out, "{}", figure_line(f));
    }
    for note in &r.notes {
        let _ = writeln!(out, "note: {note}");
    }
    if let Some(c) = &r.connect {
        for (what, line) in connect_rows(c) {
            let _ = writeln!(out, "{what}: {line}");
        }
    }
    stage_blocks(&mut out, r);
    if let Some(v) = &r.validity {
        let _ = writeln!(out, "{}", rig_line(v));
        let _ = writeln!(out, "validity: {}", v.line());
    }
    out
}

/// A run with stages: one block per stage, its load, how far the run got, its table and
/// its verdict.
fn stage_blocks(out: &mut String, r: &RunResult) {
    for s in &r.stages {
        let _ = writeln!(out, "\n{}", stage_heading(s));
        if s.measured_s <= 0.0 {
            continue;
        }
        let mut rows: Vec<&OpResult> = s.operations.iter().collect();
        if s.operations.len() > 1 {
            rows.push(&s.total);
        }
        summary_table(out, &rows);
        if let Some(v) = &s.validity {
            let _ = writeln!(out, "validity ({}): {}", s.judged, v.line());
        }
    }
}

/// `stage ramp: 30s, 0..2,000/s (linear), complete; 60.0% of 28,500 due ...`.
pub fn stage_heading(s: &StageRecord) -> String {
    let level = |x: f64| match s.kind {
        StageKind::Rate if x >= 100.0 => format!("{}/s", rate(x)),
        StageKind::Rate => format!("{x}/s"),
        StageKind::Clients if x == 1.0 => "1 client".to_string(),
        StageKind::Clients => format!("{x:.0} clients"),
    };
    let load = if s.from == s.to {
        level(s.from)
    } else {
        format!("{} to {} (linear)", level(s.from), level(s.to))
    };
    let ran = match s.ran {
        StageRan::Complete => "complete",
        StageRan::Cut => "cut short",
        StageRan::NotRun => "not run",
    };
    let mut line = format!(
        "stage {}: {:.1}s to {:.1}s, {load}, {ran}",
        s.name, s.start_s, s.end_s
    );
    if s.warmup_s > 0.0 {
        let _ = write!(line, ", {:.1}s of warm-up", s.warmup_s);
    }
    if let Some(due) = s.offered.filter(|_| s.measured_s > 0.0) {
        let _ = write!(
            line,
            "; {} of {} due completed",
            thousands(s.total.ok + s.total.errors),
            thousands(due.round() as u64)
        );
    }
    if s.missed_starts > 0 {
        let _ = write!(line, ", {} never started", thousands(s.missed_starts));
    }
    line
}

/// The connect phase in rows (console lines, the report's table): the clients and their
/// pace, those that could not connect, and each phase of every connection the target
/// timed (TCP, TLS, login).
pub fn connect_rows(c: &ConnectRecord) -> Vec<(&'static str, String)> {
    let pace = c.rate_per_s.map_or_else(
        || "unpaced".to_string(),
        |r| format!("paced at {}/s", thousands(r as u64)),
    );
    let mut rows = vec![(
        "connect",
        format!(
            "{} clients in {} ({pace})",
            thousands(c.clients as u64),
            human_ns(c.seconds * 1e9)
        ),
    )];
    if c.failed_clients > 0 {
        let mut line = format!(
            "{} clients ({})",
            thousands(c.failed_clients as u64),
            by_class(&c.errors_by_class)
        );
        if let Some(first) = &c.first_error {
            let _ = write!(line, "; first: {first}");
        }
        rows.push(("could not connect", line));
    }
    if let Some(p) = &c.phases {
        let phase = |name: &str, s: &LatencySummary| {
            format!(
                "{name} p50 {} p99 {} max {}",
                human_ns(s.p50_ns as f64),
                human_ns(s.p99_ns as f64),
                human_ns(s.max_ns as f64)
            )
        };
        let mut parts = vec![phase("tcp", &p.tcp)];
        parts.extend(p.tls.as_ref().map(|s| phase("tls", s)));
        parts.extend(p.auth.as_ref().map(|s| phase("auth", s)));
        rows.push((
            "connection phases",
            format!(
                "{} over {} connections",
                parts.join(", "),
                thousands(p.tcp.count)
            ),
        ));
    }
    rows
}

/// The rig's own figures in one line: CPU, hiccups, fairness, Little's law.
pub fn rig_line(v: &Validity) -> String {
    let mut line = format!(
        "rig: CPU {:.0} % of {} core{}",
        v.rig.cpu_share * 100.0,
        v.rig.cores,
        if v.rig.cores == 1 { "" } else { "s" }
    );
    if let Some(us) = v.rig.cpu_us_per_op {
        let _ = write!(line, " ({us:.1} µs/op)");
    }
    if let Some(t) = &v.rig.busiest_thread {
        let _ = write!(
            line,
            ", busiest thread {} {:.0} %",
            t.name,
            t.busy() * 100.0
        );
    }
    let _ = write!(
        line,
        ", hiccups p99 {} max {}",
        human_ns(v.hiccups.p99_ns as f64),
        human_ns(v.hiccups.max_ns as f64)
    );
    if let Some(j) = v.fairness.jain {
        let _ = write!(
            line,
            ", per client min {} median {} max {} (Jain {j:.2})",
            thousands(v.fairness.min),
            crate::result::validity::median_text(v.fairness.median),
            thousands(v.fairness.max)
        );
    }
    if let Some(l) = &v.littles_law {
        let _ = write!(line, ", Little's law {:+.1} %", l.deviation * 100.0);
    }
    line
}

/// A workload figure as one line: `tpmC: 1234.56 per minute (DESCRIPTION; 226 completed
/// new-order)`.
pub fn figure_line(f: &FigureRecord) -> String {
    format!(
        "{}: {:.2} {} ({}{} completed {})",
        f.name,
        f.value,
        f.unit,
        if f.description.is_empty() {
            String::new()
        } else {
            format!("{}; ", f.description)
        },
        thousands(f.completed),
        f.ops.join(" + ")
    )
}

/// The table of the summary: its heading and one row per operation.
fn summary_table(out: &mut String, rows: &[&OpResult]) {
    let _ = writeln!(
        out,
        "{:<16} {:>11} {:>8} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "operation", "ok", "errors", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    for op in rows {
        let l = &op.latency;
        let t = |ns: u64| {
            if l.count > 0 {
                human_ns(ns as f64)
            } else {
                "-".into()
            }
        };
        let _ = writeln!(
            out,
            "{:<16} {:>11} {:>8} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            truncate(&op.name, 16),
            thousands(op.ok),
            thousands(op.errors),
            rate(op.throughput_per_s),
            if l.count > 0 {
                human_ns(l.mean_ns)
            } else {
                "-".into()
            },
            t(l.p50_ns),
            t(l.p90_ns),
            t(l.p99_ns),
            t(l.p999_ns),
            t(l.max_ns),
        );
    }
}

/// For each operation that failed: its errors by class and its first three messages.
fn error_lines(out: &mut String, rows: &[&OpResult]) {
    for op in rows.iter().filter(|op| op.errors > 0) {
        let classes = by_class(&op.errors_by_class);
        // How long failures took tells a refused connection from a timeout.
        let took = op.failed_latency.as_ref().map_or_else(String::new, |l| {
            format!(
                " (failed after p50 {}, p99 {}, max {})",
                human_ns(l.p50_ns as f64),
                human_ns(l.p99_ns as f64),
                human_ns(l.max_ns as f64)
            )
        });
        let _ = writeln!(out, "errors in {}: {classes}{took}", op.name);
        for m in op.error_messages.iter().take(3) {
            let _ = writeln!(
                out,
                "  {} × {}: {}",
                thousands(m.count),
                m.class.name(),
                truncate(&m.message, 120)
            );
        }
    }
}

/// For each operation retried under its retry policy: the retries by the class retried
/// (an operation that succeeded after a retry is in `ok`, so the table does not show them).
fn retry_lines(out: &mut String, rows: &[&OpResult]) {
    for op in rows.iter().filter(|op| op.retries > 0) {
        let classes = by_class(&op.retries_by_class);
        let _ = writeln!(out, "retries in {}: {classes}", op.name);
    }
}

/// Counts by class as the summary writes them: `deadlock 3, serialization 1`.
fn by_class(counts: &ErrorsByClass) -> String {
    let parts: Vec<String> = counts
        .iter()
        .map(|(class, n)| format!("{} {}", class.name(), thousands(*n)))
        .collect();
    parts.join(", ")
}

/// Statements sent, as sysbench prints its queries, when operations are more than one
/// statement each (transactions); with one statement per operation the table says it all.
fn statement_line(out: &mut String, total: &OpResult) {
    let s = &total.statements;
    let ops = total.ok + total.errors;
    if s.total == 0 || s.total == ops {
        return;
    }
    let _ = writeln!(
        out,
        "statements: {} ({}/s), read {}, write {}, other {}; {:.1} per operation",
        thousands(s.total),
        rate(s.per_s),
        thousands(s.read),
        thousands(s.write),
        thousands(s.other),
        s.total as f64 / ops.max(1) as f64
    );
}

/// An open loop's service time and start lag, which the latency above does not show.
fn open_loop_lines(out: &mut String, r: &RunResult) {
    let (Some(service), Some(lag)) = (r.total.service.as_ref(), r.total.start_lag.as_ref()) else {
        return;
    };
    let _ = writeln!(
        out,
        "open loop: latency above counts from the intended start; service time p50 {} p99 {} max {}",
        human_ns(service.p50_ns as f64),
        human_ns(service.p99_ns as f64),
        human_ns(service.max_ns as f64)
    );
    let _ = writeln!(
        out,
        "start lag p50 {} p99 {} max {}; {} late starts; {} arrivals never started",
        human_ns(lag.p50_ns as f64),
        human_ns(lag.p99_ns as f64),
        human_ns(lag.max_ns as f64),
        thousands(r.total.late_starts.unwrap_or(0)),
        thousands(r.missed_starts)
    );
}

/// At most `n` characters, with an ellipsis when cut.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(1234), "1,234");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
