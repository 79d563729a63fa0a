//! I/O: the share of the server's time its sessions waited for storage (PostgreSQL's `IO`
//! wait events and the WAL's `LWLock` waits; MySQL's timed I/O waits), with the blocks read
//! and the WAL written per operation beside it.

use super::{by_share, pct, pick, sampled_waits, Evidence};
use crate::result::bottleneck::Resource;

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let figures = pick(
        e,
        &[
            "io_wait_share",
            "wal_wait_share",
            "blocks_read_per_op",
            "cache_hit_ratio",
            "wal_bytes_per_op",
            "buffer_pool_reads_per_op",
            "log_fsyncs_per_op",
            "write_bytes_per_op",
        ],
    );
    let share = e.of_server(e.split.io);
    let summary = match (&e.s.measured.figures.waits, e.split.io) {
        (Some(w), Some(part)) => sampled_waits("I/O", share, part, w, |x| {
            x.class == "IO" || (x.class == "LWLock" && x.event.starts_with("WAL"))
        }),
        (None, Some(part)) => format!(
            "{} of the operations' time waiting for I/O: {} of the statements' time in timed I/O waits",
            pct(share.unwrap_or(0.0)),
            pct(part)
        ),
        _ => "the server does not say what its sessions waited for".to_string(),
    };
    by_share("io", share, summary, figures)
}
