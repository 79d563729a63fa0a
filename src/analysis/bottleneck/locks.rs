//! Locks: the share of the server's time its sessions waited for a lock (PostgreSQL's
//! `Lock` wait events, by the object waited on; MySQL's InnoDB row lock time against its
//! statements' time), as a share of the operations' time.

use super::{by_share, pct, pick, Evidence};
use crate::result::bottleneck::Resource;

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let figures = pick(
        e,
        &[
            "lock_wait_share",
            "row_lock_waits",
            "row_lock_time_ms",
            "deadlocks",
        ],
    );
    let share = e.of_server(e.split.locks);
    let summary = match (&e.s.measured.figures.waits, e.split.locks) {
        (Some(w), Some(part)) => {
            let events: Vec<String> = w
                .waits
                .iter()
                .filter(|x| x.class == "Lock")
                .take(3)
                .map(|x| format!("Lock/{} {}", x.event, pct(x.share)))
                .collect();
            format!(
                "{} of the operations' time waiting for locks: {} of the backends' active time{}",
                pct(share.unwrap_or(0.0)),
                pct(part),
                if events.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", events.join(", "))
                }
            )
        }
        (None, Some(part)) => format!(
            "{} of the operations' time waiting for row locks: {} waits, {:.0} ms, {} of the statements' time",
            pct(share.unwrap_or(0.0)),
            e.figure("row_lock_waits").unwrap_or(0.0),
            e.figure("row_lock_time_ms").unwrap_or(0.0),
            pct(part)
        ),
        _ => "the server does not say what its sessions waited for".to_string(),
    };
    by_share("locks", share, summary, figures)
}
