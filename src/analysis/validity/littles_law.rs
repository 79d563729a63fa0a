//! Little's law, L = λW: the clients (open loop: the arrivals) the throughput and the mean
//! latency imply, against those there were. Off by much, the latencies miss time the
//! operations spent elsewhere (in the rig), or reach beyond the measured part.

use super::Context;
use crate::engine::Mode;
use crate::result::validity::{LittlesLaw, LITTLE_MIN_OPS_PER_CLIENT};

/// The law over the measured part (none when nothing completed), with a reason when it is
/// judged and off by more than the `little` tolerance.
pub(super) fn check(cx: &Context<'_>, reasons: &mut Vec<String>) -> Option<LittlesLaw> {
    let littles_law = law(cx);
    if let Some(l) = littles_law.as_ref().filter(|l| l.judged) {
        if l.deviation.abs() > cx.thresholds.little_tolerance {
            let what = match cx.plan.mode {
                Mode::Closed { .. } if l.deviation > 0.0 => format!(
                    "throughput × (latency + think time) gives {:.2} clients busy of {:.0}: latencies reach beyond the measured part (operations that ended after it)",
                    l.expected, l.actual
                ),
                Mode::Closed { .. } => format!(
                    "throughput × (latency + think time) gives {:.2} clients busy of {:.0}: operations spent time outside the measured latency (in the rig)",
                    l.expected, l.actual
                ),
                Mode::Open { .. } => format!(
                    "operations completed at {:+.0} % of the arrival rate",
                    l.deviation * 100.0
                ),
            };
            reasons.push(format!(
                "Little's law is off by {:.0} %: {what}",
                l.deviation.abs() * 100.0
            ));
        }
    }
    littles_law
}

fn law(cx: &Context<'_>) -> Option<LittlesLaw> {
    let done = cx.done();
    let clients = cx.plan.clients();
    (done > 0 && cx.measured_s > 0.0).then(|| {
        let x = done as f64 / cx.measured_s;
        let w = cx.mean_latency_ns / 1e9;
        let (expected, actual) = match cx.plan.mode {
            // Every client stream (`--pipeline` of them per connection) is one in flight.
            Mode::Closed { think, .. } => (x * (w + think.as_secs_f64()), clients as f64),
            Mode::Open { rate, .. } => (x * w, rate * w),
        };
        let deviation = if actual > 0.0 {
            (expected - actual) / actual
        } else {
            0.0
        };
        let judged = !cx.pauses
            && done as f64 >= LITTLE_MIN_OPS_PER_CLIENT * clients.max(1) as f64
            && actual > 0.0;
        LittlesLaw {
            expected,
            actual,
            deviation,
            judged,
        }
    })
}
