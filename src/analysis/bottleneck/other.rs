//! The server's other waits: what remains of the server's time after its CPU, its locks
//! and its I/O (PostgreSQL's `LWLock`, `IPC`, `BufferPin`, `Client` waits inside a
//! statement...), named by its largest waits.

use super::{by_share, pct, Evidence};
use crate::result::bottleneck::Resource;

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let split = e.split;
    let part = split
        .cpu
        .map(|cpu| (1.0 - cpu - split.locks.unwrap_or(0.0) - split.io.unwrap_or(0.0)).max(0.0));
    let share = e.of_server(part);
    let waits: Vec<String> =
        e.s.measured
            .figures
            .waits
            .iter()
            .flat_map(|w| &w.waits)
            .filter(|x| !matches!(x.class.as_str(), "CPU" | "Lock" | "IO"))
            .filter(|x| !(x.class == "LWLock" && x.event.starts_with("WAL")))
            .take(3)
            .map(|x| format!("{}/{} {}", x.class, x.event, pct(x.share)))
            .collect();
    let summary = match share {
        Some(s) if waits.is_empty() => format!(
            "{} of the operations' time in the server neither on a CPU nor waiting for locks or I/O",
            pct(s)
        ),
        Some(s) => format!(
            "{} of the operations' time in the server's other waits: {}",
            pct(s),
            waits.join(", ")
        ),
        None => "the server does not say what its sessions waited for".to_string(),
    };
    by_share("server_other", share, summary, Default::default())
}
