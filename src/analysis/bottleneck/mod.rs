//! Where the time went: the bottleneck verdict beside the validity verdict, by the USE
//! method (utilisation, saturation, errors) over the resources loadrig can see, each judged
//! in a file of its own: the server's CPU, its locks, its I/O, its connections and threads,
//! the network and round trips, the server's other waits, and the rig itself (the validity
//! checks). Each says what share of the operations' time went to it where that can be told,
//! with the figures behind it; the verdict names the one the time went to, or says that no
//! single one stands out (docs/observe.md, "Where the time went").
//!
//! The operations' time is split in two by the server's own time for their statements
//! (`server.figures.server_time_share`: pg_stat_statements, performance_schema digests,
//! Redis commandstats), or by the share of the run's PostgreSQL backends that were active
//! when sampled: the server's part, split again by where its sessions waited (PostgreSQL's
//! wait events; MySQL's row lock time and timed I/O waits; the server's processes' CPU),
//! and the rest: the network, the round trips and the client.

mod connections;
mod cpu;
mod io;
mod locks;
mod network;
mod other;
mod rig;

use std::collections::BTreeMap;

use crate::result::bottleneck::{Bottleneck, Resource, Status};
use crate::result::server::ServerRecord;
use crate::result::RunResult;

/// A share from which a resource is where the time went.
pub const MOST: f64 = 0.5;
/// A share from which a resource is the verdict when it is also twice the next one.
pub const LEADING: f64 = 0.3;
/// A share from which a resource is busy.
pub const BUSY: f64 = 0.25;

/// What the checks read: the run, its server record, and the server's time split.
pub(super) struct Evidence<'a> {
    pub r: &'a RunResult,
    pub s: &'a ServerRecord,
    /// The share of the operations' time that was the server's own, and how it was told.
    pub server: Option<(f64, &'static str)>,
    /// Of the server's time: on a CPU, waiting for locks, for I/O; None where the server
    /// does not say.
    pub split: Split,
    /// The server's threads running or waiting to run, as a share of the CPUs it can use
    /// (Redis runs commands on one thread; other servers on every core).
    pub cpu_busy: Option<f64>,
}

/// From this share of the CPUs it can use, the server's CPU is saturated: what the
/// operations spent outside its statements was mostly spent waiting for it.
pub const SATURATED: f64 = 0.9;

impl Evidence<'_> {
    pub fn saturated(&self) -> bool {
        self.cpu_busy.is_some_and(|b| b >= SATURATED)
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Split {
    pub cpu: Option<f64>,
    pub locks: Option<f64>,
    pub io: Option<f64>,
}

impl Evidence<'_> {
    pub fn figure(&self, name: &str) -> Option<f64> {
        self.s.figures.get(name).copied()
    }

    /// `part` of the server's time as a share of the operations' time.
    pub fn of_server(&self, part: Option<f64>) -> Option<f64> {
        Some(self.server?.0 * part?)
    }
}

/// The verdict on `r`, whose server record is `s`.
pub fn judge(r: &RunResult, s: &ServerRecord) -> Bottleneck {
    let server = server_share(s);
    let e = Evidence {
        r,
        s,
        server,
        split: split(s, server.map(|x| x.0)),
        cpu_busy: cpu_busy(r, s),
    };
    let resources = vec![
        rig::check(&e),
        cpu::check(&e),
        locks::check(&e),
        io::check(&e),
        connections::check(&e),
        network::check(&e),
        other::check(&e),
    ];
    verdict(resources)
}

/// Active-session samples from which they tell the server's part of the time.
const ENOUGH_SAMPLES: u64 = 20;

/// The server's part of the operations' time: the share of the run's PostgreSQL backends
/// that were active when sampled (a commit's WAL flush included, which pg_stat_statements
/// does not count when BEGIN and COMMIT come through the extended protocol), else its
/// statements' time against the clients'.
fn server_share(s: &ServerRecord) -> Option<(f64, &'static str)> {
    let sampled = s
        .measured
        .figures
        .waits
        .as_ref()
        .is_some_and(|w| w.backends >= ENOUGH_SAMPLES);
    if let (true, Some(x)) = (sampled, s.figures.get("backend_active_share")) {
        return Some((x.clamp(0.0, 1.0), "active-session samples"));
    }
    if let Some(x) = s.figures.get("server_time_share") {
        let from = if s.measured.figures.waits.is_some() {
            "pg_stat_statements"
        } else if s.figures.contains_key("commands_per_s") {
            "commandstats"
        } else {
            "statement digests"
        };
        return Some((x.clamp(0.0, 1.0), from));
    }
    s.figures
        .get("backend_active_share")
        .map(|x| (x.clamp(0.0, 1.0), "active-session samples"))
}

/// The server's threads on a CPU or waiting for one, over the CPUs it can use.
fn cpu_busy(r: &RunResult, s: &ServerRecord) -> Option<f64> {
    let p = s.measured.figures.processes.as_ref()?;
    let secs = s.measured.seconds;
    let capacity = match r.target.kind.as_str() {
        "redis" | "rediss" => 1.0,
        _ => r.host.cores.max(1) as f64,
    };
    (secs > 0.0).then(|| (p.cpu_s() + p.run_queue_s) / secs / capacity)
}

/// Where the server's time went, by what the server says.
fn split(s: &ServerRecord, server: Option<f64>) -> Split {
    let f = |n: &str| s.figures.get(n).copied();
    if let Some(w) = &s.measured.figures.waits {
        if w.active == 0 {
            return Split::default();
        }
        let share = |keep: &dyn Fn(&str, &str) -> bool| {
            w.waits
                .iter()
                .filter(|x| keep(&x.class, &x.event))
                .map(|x| x.samples)
                .sum::<u64>() as f64
                / w.active as f64
        };
        return Split {
            cpu: Some(share(&|c, _| c == "CPU")),
            locks: Some(share(&|c, _| c == "Lock")),
            io: Some(share(&|c, e| {
                c == "IO" || (c == "LWLock" && e.starts_with("WAL"))
            })),
        };
    }
    // Without samples: the processes' CPU against the statements' time, bounded by what
    // the locks and I/O took.
    let locks = f("lock_wait_share");
    let io = f("io_wait_share");
    let cpu = match (f("cpu_s"), f("server_time_ms")) {
        (Some(cpu), Some(ms)) if ms > 0.0 && server.is_some() => {
            let room = 1.0 - locks.unwrap_or(0.0) - io.unwrap_or(0.0);
            Some((cpu * 1e3 / ms).min(room.max(0.0)))
        }
        _ => None,
    };
    Split { cpu, locks, io }
}

/// A resource judged by its share of the operations' time.
pub(super) fn by_share(
    resource: &str,
    share: Option<f64>,
    summary: String,
    figures: BTreeMap<String, f64>,
) -> Resource {
    let status = match share {
        None => Status::Unknown,
        Some(x) if x >= BUSY => Status::Busy,
        Some(_) => Status::Fine,
    };
    Resource {
        resource: resource.to_string(),
        status,
        share,
        summary,
        figures,
    }
}

/// `0.634` as `63 %`.
pub(super) fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// The figures named, those present.
pub(super) fn pick(e: &Evidence<'_>, names: &[&str]) -> BTreeMap<String, f64> {
    names
        .iter()
        .filter_map(|n| e.figure(n).map(|v| (n.to_string(), v)))
        .collect()
}

/// What each resource is called in the verdict's line.
pub fn label(resource: &str) -> &str {
    match resource {
        "server_cpu" => "the server's CPU",
        "locks" => "locks",
        "io" => "I/O",
        "connections" => "connections and threads",
        "network" => "the network and round trips",
        "server_other" => "the server's other waits",
        "rig" => "the rig itself",
        other => other,
    }
}

/// The verdict: the rig when it is saturated (its figures measure itself); else the
/// resource with most of the time, or one clearly ahead; else a saturated pool; else none.
fn verdict(mut resources: Vec<Resource>) -> Bottleneck {
    let rig = resources
        .iter()
        .position(|r| r.resource == "rig" && r.status == Status::Bottleneck);
    let named = rig.or_else(|| {
        let mut ranked: Vec<(usize, f64)> = resources
            .iter()
            .enumerate()
            .filter_map(|(k, r)| r.share.map(|s| (k, s)))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let first = ranked.first().copied();
        let second = ranked.get(1).map_or(0.0, |x| x.1);
        match first {
            Some((k, s)) if s >= MOST || (s >= LEADING && s >= 2.0 * second) => Some(k),
            _ => resources
                .iter()
                .position(|r| r.resource == "connections" && r.status == Status::Busy),
        }
    });
    let known = resources.iter().any(|r| r.share.is_some());
    let (verdict, line) = match named {
        Some(k) => {
            resources[k].status = Status::Bottleneck;
            let r = &resources[k];
            (
                r.resource.clone(),
                format!("{}: {}", label(&r.resource), r.summary),
            )
        }
        None if known => {
            let mut shares: Vec<&Resource> =
                resources.iter().filter(|r| r.share.is_some()).collect();
            shares.sort_by(|a, b| b.share.unwrap_or(0.0).total_cmp(&a.share.unwrap_or(0.0)));
            let parts: Vec<String> = shares
                .iter()
                .take(3)
                .map(|r| format!("{} {}", label(&r.resource), pct(r.share.unwrap_or(0.0))))
                .collect();
            (
                "none".to_string(),
                format!(
                    "no single bottleneck: {} of the operations' time",
                    parts.join(", ")
                ),
            )
        }
        None => (
            "unknown".to_string(),
            "too little was seen to say where the time went (the target reports no server time and no waits)".to_string(),
        ),
    };
    Bottleneck {
        verdict,
        line,
        resources,
    }
}

#[cfg(test)]
mod tests;

/// What the sessions' samples say of a wait: `share` of the operations' time, `part` of the
/// backends' active time, and the three largest wait events `keep` picks.
fn sampled_waits(
    what: &str,
    share: Option<f64>,
    part: f64,
    waits: &crate::observe::WaitProfile,
    keep: impl Fn(&crate::observe::WaitShare) -> bool,
) -> String {
    let events: Vec<String> = waits
        .waits
        .iter()
        .filter(|x| keep(x))
        .take(3)
        .map(|x| format!("{}/{} {}", x.class, x.event, pct(x.share)))
        .collect();
    format!(
        "{} of the operations' time waiting for {what}: {} of the backends' active time{}",
        pct(share.unwrap_or(0.0)),
        pct(part),
        if events.is_empty() {
            String::new()
        } else {
            format!(" ({})", events.join(", "))
        }
    )
}
