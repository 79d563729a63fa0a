//! The server beside the clients, interval by interval (docs/observe.md): the clients'
//! throughput with the server's own count of work, the clients' latency with the server's
//! time per statement, the server's CPU and its run-queue wait beside the rig's CPU, and
//! where the run's PostgreSQL backends spent their active time, by wait class, as a stacked
//! area; one panel each on a shared time axis.

use anyhow::Result;
use plotters::prelude::*;

use super::rig::{panel, shade, Area, DrawResult};
use super::{pad_range, svg_sized, FONT, GRID_BOLD, GRID_LIGHT, PALETTE, W};
use crate::result::IntervalRecord;

/// The server's counters that count its work, in the order they are looked for, with the
/// label of their rate.
const RATES: &[(&str, &str)] = &[
    ("pg_stat_database.xact_commit", "server: commits/s"),
    ("global_status.Questions", "server: questions/s"),
    ("stats.total_commands_processed", "server: commands/s"),
    ("operations.completed", "server: LDAP operations/s"),
    ("stub_status.requests", "server: requests/s"),
];

/// Wait classes in the order they are stacked (CPU at the bottom), each with its colour.
const CLASSES: &[&str] = &[
    "CPU",
    "Lock",
    "LWLock",
    "IO",
    "IPC",
    "Client",
    "BufferPin",
    "Activity",
    "Extension",
    "Timeout",
];

/// One interval's figures as plotted.
pub struct ServerPoint {
    pub index: u64,
    pub t: f64,
    pub warmup: bool,
    pub ok_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub server_rate: Option<f64>,
    pub server_ms_per_call: Option<f64>,
    pub cpu_cores: Option<f64>,
    pub run_queue: Option<f64>,
    pub rig_cores: Option<f64>,
    /// Share of the backends' active time by wait class, in [`CLASSES`] order (others last).
    pub waits: Vec<(String, f64)>,
}

/// The counter whose rate the throughput panel shows, from the first interval that has one.
fn rate_key(intervals: &[IntervalRecord]) -> Option<(&'static str, &'static str)> {
    RATES.iter().copied().find(|(key, _)| {
        intervals
            .iter()
            .filter_map(|i| i.server.as_ref())
            .any(|s| s.target.counters.contains_key(*key))
    })
}

/// The label of the server's rate the throughput panel shows (`server: commits/s`), when
/// some interval has its counter.
pub fn rate_label(intervals: &[IntervalRecord]) -> Option<&'static str> {
    rate_key(intervals).map(|(_, label)| label)
}

/// The plotted figures of each interval that has the server's.
pub fn points(intervals: &[IntervalRecord]) -> Vec<ServerPoint> {
    let rate = rate_key(intervals).map(|(k, _)| k);
    intervals
        .iter()
        .filter_map(|i| {
            let s = i.server.as_ref()?;
            let secs = (i.end_s - i.start_s).max(1e-9);
            let span = (s.end_s - s.start_s).max(1e-9);
            let worst = |f: fn(&crate::result::IntervalOp) -> u64| {
                i.ops.iter().map(f).max().unwrap_or(0) as f64 / 1e6
            };
            let calls: u64 = s.target.statements.iter().map(|x| x.calls).sum();
            let p = s.target.processes.as_ref();
            Some(ServerPoint {
                index: i.index,
                t: (i.start_s + i.end_s) / 2.0,
                warmup: i.warmup,
                ok_per_s: i.ok as f64 / secs,
                p50_ms: worst(|o| o.p50_ns),
                p99_ms: worst(|o| o.p99_ns),
                server_rate: rate
                    .and_then(|k| s.target.counters.get(k))
                    .map(|v| v / span),
                server_ms_per_call: s
                    .target
                    .statement_time_ms()
                    .filter(|_| calls > 0)
                    .map(|ms| ms / calls as f64),
                cpu_cores: p.map(|p| p.cpu_s() / span),
                run_queue: p.map(|p| p.run_queue_s / span),
                rig_cores: i
                    .rig
                    .as_ref()
                    .map(|r| (r.cpu_user_s + r.cpu_system_s) / secs),
                waits: waits(&s.target),
            })
        })
        .collect()
}

fn waits(s: &crate::observe::ServerInterval) -> Vec<(String, f64)> {
    let Some(w) = &s.waits else {
        return Vec::new();
    };
    let mut by = w.by_class();
    by.sort_by_key(|(c, _)| CLASSES.iter().position(|x| x == c).unwrap_or(CLASSES.len()));
    by
}

/// The panels for one run; `None` when no interval has the server's figures.
pub fn chart(intervals: &[IntervalRecord]) -> Option<Result<String>> {
    let pts = points(intervals);
    if pts.is_empty() {
        return None;
    }
    let t1 = intervals.iter().map(|i| i.end_s).fold(1e-3, f64::max);
    let warm = intervals
        .iter()
        .filter(|i| i.warmup)
        .map(|i| i.end_s)
        .fold(0.0, f64::max);
    let rate = rate_label(intervals);
    let stacked = pts.iter().any(|p| !p.waits.is_empty());
    let n = 3 + usize::from(stacked);
    Some(svg_sized(W, 220 * n as u32, |root| {
        let panels = root.split_evenly((n, 1));
        throughput_panel(&panels[0], &pts, rate, t1, warm)?;
        latency_panel(&panels[1], &pts, t1, warm)?;
        cpu_panel(&panels[2], &pts, t1, warm)?;
        if stacked {
            waits_panel(&panels[3], &pts, t1, warm)?;
        }
        Ok(())
    }))
}

fn top(values: impl Iterator<Item = f64>, floor: f64) -> f64 {
    let hi = values.fold(floor, f64::max) * 1.15;
    pad_range(0.0, hi).1
}

fn throughput_panel(
    area: &Area<'_>,
    pts: &[ServerPoint],
    rate: Option<&str>,
    t1: f64,
    warm: f64,
) -> DrawResult {
    let y1 = top(
        pts.iter()
            .flat_map(|p| [Some(p.ok_per_s), p.server_rate])
            .flatten(),
        1.0,
    );
    let mut chart = panel(area, t1, 0.0..y1)?;
    mesh!(chart, "elapsed (s)", "per second").draw()?;
    shade(&mut chart, warm, 0.0, y1)?;
    line!(
        chart,
        pts.iter().map(|p| (p.t, p.ok_per_s)).collect(),
        PALETTE[0],
        "clients: successful operations/s".to_string()
    );
    let server: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|p| p.server_rate.map(|r| (p.t, r)))
        .collect();
    if let (Some(label), false) = (rate, server.is_empty()) {
        line!(chart, server, PALETTE[1], label.to_string());
    }
    legend!(chart, SeriesLabelPosition::LowerRight);
    Ok(())
}

fn latency_panel(area: &Area<'_>, pts: &[ServerPoint], t1: f64, warm: f64) -> DrawResult {
    let y1 = top(
        pts.iter()
            .flat_map(|p| [Some(p.p99_ms), p.server_ms_per_call])
            .flatten(),
        0.001,
    );
    let mut chart = panel(area, t1, 0.0..y1)?;
    mesh!(chart, "elapsed (s)", "ms").draw()?;
    shade(&mut chart, warm, 0.0, y1)?;
    line!(
        chart,
        pts.iter().map(|p| (p.t, p.p99_ms)).collect(),
        PALETTE[3],
        "clients: p99".to_string()
    );
    line!(
        chart,
        pts.iter().map(|p| (p.t, p.p50_ms)).collect(),
        PALETTE[0],
        "clients: p50".to_string()
    );
    let server: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|p| p.server_ms_per_call.map(|m| (p.t, m)))
        .collect();
    if !server.is_empty() {
        line!(
            chart,
            server,
            PALETTE[1],
            "server: execution time per statement (mean)".to_string()
        );
    }
    legend!(chart, SeriesLabelPosition::UpperRight);
    Ok(())
}

fn cpu_panel(area: &Area<'_>, pts: &[ServerPoint], t1: f64, warm: f64) -> DrawResult {
    let y1 = top(
        pts.iter()
            .flat_map(|p| [p.cpu_cores, p.run_queue, p.rig_cores])
            .flatten(),
        0.1,
    );
    let mut chart = panel(area, t1, 0.0..y1)?;
    mesh!(chart, "elapsed (s)", "cores").draw()?;
    shade(&mut chart, warm, 0.0, y1)?;
    let series = [
        (
            pts.iter()
                .filter_map(|p| p.cpu_cores.map(|c| (p.t, c)))
                .collect::<Vec<_>>(),
            PALETTE[2],
            "server: CPU (cores busy)",
        ),
        (
            pts.iter()
                .filter_map(|p| p.run_queue.map(|c| (p.t, c)))
                .collect(),
            PALETTE[3],
            "server: waiting for a CPU (threads, mean)",
        ),
        (
            pts.iter()
                .filter_map(|p| p.rig_cores.map(|c| (p.t, c)))
                .collect(),
            PALETTE[7],
            "rig: CPU (cores busy)",
        ),
    ];
    let mut drawn = false;
    for (line, color, label) in series {
        if !line.is_empty() {
            line!(chart, line, color, label.to_string());
            drawn = true;
        }
    }
    if drawn {
        legend!(chart, SeriesLabelPosition::UpperRight);
    }
    Ok(())
}

/// The backends' active time by wait class, stacked to 100 %.
fn waits_panel(area: &Area<'_>, pts: &[ServerPoint], t1: f64, warm: f64) -> DrawResult {
    let mut chart = panel(area, t1, 0.0..1.0)?;
    mesh!(chart, "elapsed (s)", "share of active time")
        .y_label_formatter(&|v| format!("{:.0} %", v * 100.0))
        .draw()?;
    shade(&mut chart, warm, 0.0, 1.0)?;
    let mut classes: Vec<String> = Vec::new();
    for p in pts {
        for (c, _) in &p.waits {
            if !classes.contains(c) {
                classes.push(c.clone());
            }
        }
    }
    classes.sort_by_key(|c| CLASSES.iter().position(|x| x == c).unwrap_or(CLASSES.len()));
    // Each band's top: the shares of its class and those below it; the tallest drawn first.
    let tops: Vec<Vec<(f64, f64)>> = (0..classes.len())
        .map(|j| {
            pts.iter()
                .filter(|p| !p.waits.is_empty())
                .map(|p| {
                    let below: f64 = p
                        .waits
                        .iter()
                        .filter(|(c, _)| classes[..=j].contains(c))
                        .map(|(_, s)| s)
                        .sum();
                    (p.t, below)
                })
                .collect()
        })
        .collect();
    for j in (0..classes.len()).rev() {
        let c = class_color(&classes[j], j);
        chart
            .draw_series(AreaSeries::new(
                tops[j].iter().copied(),
                0.0,
                c.mix(0.85).filled(),
            ))?
            .label(format!("{} (wait class)", classes[j]))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
    }
    legend!(chart, SeriesLabelPosition::UpperRight);
    Ok(())
}

fn class_color(class: &str, j: usize) -> RGBColor {
    match class {
        "CPU" => PALETTE[2],
        "Lock" => PALETTE[3],
        "LWLock" => PALETTE[1],
        "IO" => PALETTE[0],
        "IPC" => PALETTE[4],
        "Client" => PALETTE[7],
        _ => PALETTE[(5 + j) % PALETTE.len()],
    }
}
