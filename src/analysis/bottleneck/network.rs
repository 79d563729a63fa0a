//! The network and the round trips: the share of the operations' time outside the
//! server's own time for their statements (the network, the round trips, the protocol and
//! the client), which is where a chatty operation or a far server shows.

use super::{by_share, pct, pick, Evidence};
use crate::analysis::server::client_time_ms;
use crate::result::bottleneck::Resource;

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let figures = pick(
        e,
        &[
            "server_time_share",
            "server_ms_per_op",
            "backend_active_share",
        ],
    );
    // With the server's CPU saturated the rest is mostly operations queued for it.
    let share = e.server.filter(|_| !e.saturated()).map(|(s, _)| 1.0 - s);
    let done = (e.r.total.ok + e.r.total.errors) as f64;
    let client = if done > 0.0 {
        client_time_ms(e.r) / done
    } else {
        0.0
    };
    let summary = match (e.server, share) {
        (Some((_, from)), Some(rest)) => match e.figure("server_ms_per_op") {
            Some(server) => format!(
                "{} of the operations' time outside the server's statements (the network, round trips, the protocol, the client): {client:.3} ms per operation at the client against {server:.3} ms in the server ({from})",
                pct(rest)
            ),
            None => format!(
                "{} of the operations' time outside the server: the run's backends were idle, waiting for their client, {} of the time ({from})",
                pct(rest),
                pct(rest)
            ),
        },
        _ if e.saturated() => "not told apart from the operations queued for the server's saturated CPU".to_string(),
        _ => "the server's own time is not known".to_string(),
    };
    by_share("network", share, summary, figures)
}
