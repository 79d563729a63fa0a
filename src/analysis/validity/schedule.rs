//! The open loop's schedule: operations that started late, and arrivals that never
//! started, mean the rate asked for was not the rate delivered.

use super::Context;
use crate::engine::Mode;
use crate::stats::thousands;

/// A reason when more than the `late` share of the operations started late, and one when
/// any scheduled arrival never started.
pub(super) fn check(cx: &Context<'_>, reasons: &mut Vec<String>) {
    let done = cx.done();
    if let Some(late) = cx.late_starts {
        if done > 0 && late as f64 > cx.thresholds.late_share * done as f64 {
            let after = match cx.plan.mode {
                Mode::Open { late_after, .. } => late_after,
                Mode::Closed { .. } => Default::default(),
            };
            reasons.push(format!(
                "{} of {} operations started more than {} late against the schedule",
                thousands(late),
                thousands(done),
                humantime::format_duration(after)
            ));
        }
    }
    if cx.missed_starts > 0 {
        reasons.push(format!(
            "{} scheduled arrivals never started: the rate was not delivered",
            thousands(cx.missed_starts)
        ));
    }
}
