//! `loadrig observe`: watch a server without loading it, through the same observer a run
//! uses: a line per interval (or the whole observation as JSON at the end), what is not
//! available on standard error as it is found.

use std::io::Write;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::ObserveArgs;
use crate::duration;
use crate::error::InputError;
use crate::observe::{ObserveConfig, ObservedInterval, Observer, ServerInterval, Sessions};

/// Counters shown in a line when the server has them: what tells its load at a glance.
const HEADLINE: &[(&str, &str)] = &[
    ("pg_stat_database.xact_commit", "commits"),
    ("pg_stat_database.xact_rollback", "rollbacks"),
    ("pg_stat_database.blks_read", "blocks read"),
    ("global_status.Questions", "questions"),
    ("global_status.Innodb_row_lock_waits", "row lock waits"),
    ("stats.total_commands_processed", "commands"),
    ("operations.initiated", "operations"),
    ("stub_status.requests", "requests"),
];

pub fn observe(args: &ObserveArgs) -> Result<ExitCode> {
    let interval = duration::parse(&args.interval, "--interval")?;
    if interval < Duration::from_millis(10) {
        return Err(InputError::new(format!("--interval {}: at least 10ms", args.interval)).into());
    }
    let until = args
        .duration
        .as_deref()
        .map(|d| duration::parse(d, "--for"))
        .transpose()?;
    let mut config = ObserveConfig::new(crate::targets::expand_env(&args.target)?);
    config.behind = args
        .behind
        .as_deref()
        .map(crate::targets::expand_env)
        .transpose()?;
    config.session_rate = args.session_rate;
    config.sessions = match &args.application_name {
        Some(name) => Sessions::Application(name.clone()),
        None => Sessions::All,
    };
    let (stop, stopped) = mpsc::channel();
    if until.is_none() {
        ctrlc::set_handler(move || {
            let _ = stop.send(());
        })?;
    }
    let start = Instant::now();
    let mut observer = Observer::start(config, start, interval)?;
    observer.wait_ready(Duration::from_secs(30));
    eprintln!(
        "observing {} every {} ({})",
        crate::error::redact(&args.target),
        args.interval,
        match &args.duration {
            Some(d) => format!("for {d}"),
            None => "Ctrl-C stops".into(),
        }
    );
    let deadline = until.map(|d| start + d);
    let mut shown = 0;
    loop {
        let wait = deadline.map_or(Duration::from_millis(200), |d| {
            d.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(200))
        });
        let interrupted = stopped.recv_timeout(wait).is_ok();
        shown += show(&observer.new_intervals(), args.json)?;
        if interrupted || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    let observation = observer.finish();
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &observation)?;
        writeln!(out)?;
    } else {
        show(
            &observation.intervals[shown.min(observation.intervals.len())..],
            false,
        )?;
        let c = &observation.cost;
        let server = c
            .server_time_ms
            .map(|ms| {
                format!(
                    ", {ms:.1} ms of server time ({})",
                    c.server_time_from.join(", ")
                )
            })
            .unwrap_or_default();
        eprintln!(
            "observer: {:.3} s of CPU, {} queries{server}",
            c.cpu_s, c.queries
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Print intervals (lines; nothing for JSON) and the notes they carry; how many.
fn show(intervals: &[ObservedInterval], json: bool) -> Result<usize> {
    for i in intervals {
        for note in &i.unavailable {
            eprintln!("note: {note}");
        }
        if !json {
            println!("{}", line(i));
            std::io::stdout().flush()?;
        }
    }
    Ok(intervals.len())
}

/// One interval in a line: the headline counters, the main waits, the costliest statement,
/// the processes' CPU.
fn line(i: &ObservedInterval) -> String {
    let mut out = format!("{:7.1}s  {}", i.end_s, server_line(&i.target));
    if let Some(b) = &i.behind {
        out.push_str(&format!("  | behind: {}", server_line(b)));
    }
    out
}

fn server_line(s: &ServerInterval) -> String {
    let mut parts: Vec<String> = HEADLINE
        .iter()
        .filter_map(|(key, name)| s.counters.get(*key).map(|v| format!("{name} {v:.0}")))
        .collect();
    if let Some(w) = &s.waits {
        let top: Vec<String> = w
            .waits
            .iter()
            .take(3)
            .map(|x| {
                let what = if x.class == x.event {
                    x.class.clone()
                } else {
                    format!("{}/{}", x.class, x.event)
                };
                format!("{what} {:.0} %", x.share * 100.0)
            })
            .collect();
        if !top.is_empty() {
            parts.push(format!("waits: {}", top.join(", ")));
        }
    }
    if let Some(st) = s.statements.first() {
        let text: String = st.text.chars().take(40).collect();
        parts.push(format!(
            "top: {} calls {:.1} ms \"{text}\"",
            st.calls, st.time_ms
        ));
    }
    if let Some(p) = &s.processes {
        parts.push(format!(
            "{} processes: cpu {:.2} s, run queue {:.2} s",
            p.processes,
            p.user_s + p.system_s,
            p.run_queue_s
        ));
    }
    for q in &s.queries {
        match (&q.value, &q.text) {
            (Some(v), _) => parts.push(format!("{} = {v}", q.name)),
            (None, Some(t)) => parts.push(format!("{} = {t}", q.name)),
            (None, None) => parts.push(format!("{} = NULL", q.name)),
        }
    }
    if parts.is_empty() {
        "nothing observed".into()
    } else {
        parts.join("; ")
    }
}
