//! The server's CPU: its processes' busy share of the machine's cores (utilisation), the
//! time their threads waited for a CPU (saturation), and the share of the operations' time
//! the server spent on a CPU or waiting for one.

use std::fmt::Write as _;

use super::{by_share, pct, pick, Evidence};
use crate::analysis::server::client_time_ms;
use crate::result::bottleneck::{Resource, Status};

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let figures = pick(
        e,
        &[
            "cpu_cores",
            "cpu_share",
            "run_queue_per_cpu_s",
            "cpu_ms_per_op",
            "wait_share.CPU",
        ],
    );
    // Without the server's time: its CPU against the operations' time.
    let direct = || {
        let cpu = e.figure("cpu_s")?;
        let client = client_time_ms(e.r);
        (client > 0.0).then(|| (cpu * 1e3 / client).min(1.0))
    };
    let own = e.of_server(e.split.cpu).or_else(direct);
    // Saturated, the server's CPU holds the operations that wait for it too: the time
    // outside its statements is mostly that queue.
    let share = match (own, e.server) {
        (Some(x), Some((server, _))) if e.saturated() => Some((x + 1.0 - server).min(1.0)),
        (x, _) => x,
    };
    let cores = e.r.host.cores;
    let busy = match (e.figure("cpu_cores"), e.figure("cpu_share")) {
        (Some(c), Some(s)) => format!("{c:.2} of {cores} cores busy ({})", pct(s)),
        _ => "its processes not seen".to_string(),
    };
    let waited = e
        .figure("run_queue_per_cpu_s")
        .map(|q| format!(", {q:.2} s waiting for a CPU per CPU second"))
        .unwrap_or_default();
    let summary = match share {
        Some(s) => format!(
            "{} of the operations' time on the server's CPU or waiting for one; {busy}{waited}",
            pct(s)
        ),
        None => format!("the server's time is not known; {busy}{waited}"),
    };
    let mut r = by_share("server_cpu", share, summary, figures);
    if let Some(busy) = e.cpu_busy.filter(|_| e.saturated()) {
        r.status = Status::Busy;
        let _ = write!(
            r.summary,
            "; saturated: its threads ran or waited to run {} of the time on the CPUs it can use{}",
            pct(busy),
            if e.r.target.kind.starts_with("redis") {
                " (Redis runs commands on one thread), so operations queued for it"
            } else {
                ", so operations queued for them"
            }
        );
        r.figures.insert("cpu_busy_share".into(), busy);
    }
    if r.status == Status::Unknown && e.figure("cpu_s").is_some() {
        r.status = Status::Fine;
    }
    r
}
