//! `loadrig schedule WORKLOAD [load flags]`: a run's load interval by interval before it
//! runs: an open loop's arrivals per interval (the engine's own schedule, dealt to its
//! workers as a run deals them) beside the integral of the rate they follow, or a closed
//! loop's clients; with stages, each interval's stage.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::cli::ScheduleArgs;
use crate::engine::{self, LoadPlan, Mode};
use crate::plan;
use crate::report::console::thousands;

/// One interval of the schedule.
#[derive(Debug, Serialize)]
struct Row {
    interval: u64,
    start_s: f64,
    end_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stage: Option<String>,
    warmup: bool,
    /// Open loop: the integral of the rate over the interval, and the arrivals scheduled.
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrivals: Option<u64>,
    /// Closed loop: the clients running at its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    clients: Option<u64>,
}

pub fn schedule(args: &ScheduleArgs) -> Result<ExitCode> {
    let (workload, _, load) = plan::resolve_offline(&args.run)?;
    let rows = rows(&load);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        for r in &rows {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "{}: {}", workload.name, crate::runner::describe(&load))?;
    let open = load.is_open();
    writeln!(
        out,
        "interval    start      end  {:<12} {:>12} {:>10}",
        "stage",
        if open { "due" } else { "" },
        if open { "arrivals" } else { "clients" }
    )?;
    for r in &rows {
        let stage = r.stage.clone().unwrap_or_else(|| "-".into());
        let due = r.due.map_or(String::new(), |d| format!("{d:.1}"));
        let count = r.arrivals.or(r.clients).map_or(String::new(), thousands);
        writeln!(
            out,
            "{:>8} {:>8.2} {:>8.2}  {:<12} {:>12} {:>10}{}",
            r.interval,
            r.start_s,
            r.end_s,
            stage,
            due,
            count,
            if r.warmup { "  warm-up" } else { "" }
        )?;
    }
    if open {
        let due: f64 = rows.iter().filter_map(|r| r.due).sum();
        let n: u64 = rows.iter().filter_map(|r| r.arrivals).sum();
        writeln!(
            out,
            "{:>8} {:>8} {:>8}  {:<12} {:>12.1} {:>10}",
            "total",
            "",
            "",
            "",
            due,
            thousands(n)
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

const NS: std::time::Duration = std::time::Duration::from_nanos(1);

/// Every interval of the run (a run without a deadline: none).
fn rows(load: &LoadPlan) -> Vec<Row> {
    let timeline = load.timeline();
    let Some(last) = timeline.last() else {
        return Vec::new();
    };
    let end = timeline.end_of(last);
    let profile = load.profile();
    let staged = !load.stages.is_empty();
    let mut arrivals = vec![0u64; last as usize + 1];
    if load.is_open() {
        for c in 0..load.clients() {
            engine::arrivals(load, load.first_client() + c, end, |at, _| {
                arrivals[timeline.index_of(at) as usize] += 1;
            });
        }
    }
    (0..=last)
        .map(|k| {
            let (start, stop) = (timeline.start_of(k), timeline.end_of(k));
            let due = match load.mode {
                Mode::Open { rate, .. } if !staged => {
                    Some(rate * load.share() * (stop - start).as_secs_f64())
                }
                Mode::Open { .. } => {
                    Some((profile.lambda(stop) - profile.lambda(start)) * load.share())
                }
                Mode::Closed { .. } => None,
            };
            let clients = match load.mode {
                Mode::Closed { clients, .. } if !staged => Some(clients as u64),
                // The clients that ran up to its end, as a run records them.
                Mode::Closed { .. } => Some(profile.clients_at(stop.saturating_sub(NS))),
                Mode::Open { .. } => None,
            };
            Row {
                interval: k + 1,
                start_s: start.as_secs_f64(),
                end_s: stop.as_secs_f64(),
                stage: timeline
                    .stage_of(k)
                    .and_then(|i| load.stages.get(i))
                    .map(|s| s.name.clone()),
                warmup: timeline.is_warmup(k),
                due,
                arrivals: load.is_open().then(|| arrivals[k as usize]),
                clients,
            }
        })
        .collect()
}
