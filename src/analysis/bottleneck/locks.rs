//! Locks: the share of the server's time its sessions waited for a lock (PostgreSQL's
//! `Lock` wait events, by the object waited on; MySQL's InnoDB row lock time against its
//! statements' time), as a share of the operations' time.

use super::{by_share, pct, pick, sampled_waits, Evidence};
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
        (Some(w), Some(part)) => sampled_waits("locks", share, part, w, |x| x.class == "Lock"),
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
