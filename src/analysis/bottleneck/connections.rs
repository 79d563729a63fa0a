//! Connections and threads: a server's worker pool that has operations waiting for a
//! thread (OpenLDAP's pending operations against its active ones), and clients the server
//! refused. No share of the time can be told from these: the pool is judged by saturation.

use super::{pick, Evidence};
use crate::result::bottleneck::{Resource, Status};

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let figures = pick(
        e,
        &[
            "threads_active",
            "threads_pending",
            "threads_max",
            "threads_running",
            "active_connections",
        ],
    );
    let refused = e.r.connect.as_ref().map_or(0, |c| c.failed_clients);
    let pending = e.figure("threads_pending");
    let active = e.figure("threads_active");
    let (status, summary) = match (pending, active) {
        _ if refused > 0 => (
            Status::Busy,
            format!("{refused} clients could not connect before the run"),
        ),
        (Some(p), Some(a)) if p >= 1.0 && p >= a => (
            Status::Busy,
            format!(
                "operations waited for a worker thread: {p:.1} pending on average against {a:.1} active{}",
                e.figure("threads_max")
                    .map(|m| format!(" (at most {m:.0} threads)"))
                    .unwrap_or_default()
            ),
        ),
        (Some(p), Some(a)) => (
            Status::Fine,
            format!("{p:.1} operations pending for a thread on average, {a:.1} active"),
        ),
        _ if !figures.is_empty() => (
            Status::Fine,
            "no waits for a connection or a thread seen".to_string(),
        ),
        _ => (
            Status::Unknown,
            "the server does not say whether operations wait for a connection or a thread"
                .to_string(),
        ),
    };
    Resource {
        resource: "connections".to_string(),
        status,
        share: None,
        summary,
        figures,
    }
}
