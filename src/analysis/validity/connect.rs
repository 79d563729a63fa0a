//! Clients that could not connect before the run: the load then came from fewer clients
//! than asked while they kept trying.

use super::Context;
use crate::engine::RunData;
use crate::stats::thousands;

/// A reason when any client's connect failed before the run.
pub(super) fn check(run: &RunData, cx: &Context<'_>, reasons: &mut Vec<String>) {
    if run.connect.failed > 0 {
        reasons.push(format!(
            "{} of {} clients could not connect before the run (the first error: {}): the load came from fewer clients than asked while they kept trying",
            thousands(run.connect.failed as u64),
            thousands(cx.plan.clients() as u64),
            run.connect.first_error.as_deref().unwrap_or("-")
        ));
    }
}
