//! The rig itself: the validity checks' view of the rig's CPU. A rig busy on most of its
//! cores, crowded out by other threads, or with one thread saturated measures itself, and
//! is the verdict whatever the server's figures say.

use std::collections::BTreeMap;

use super::{pct, Evidence};
use crate::result::bottleneck::{Resource, Status};

pub(super) fn check(e: &Evidence<'_>) -> Resource {
    let Some(v) = &e.r.validity else {
        return Resource {
            resource: "rig".to_string(),
            status: Status::Unknown,
            share: None,
            summary: "the run has no validity verdict (a recovered run)".to_string(),
            figures: BTreeMap::new(),
        };
    };
    let rig = &v.rig;
    let most = |k: usize| rig.intervals > 0 && k * 2 >= rig.intervals;
    // A crowded machine slows the server as much as the rig: it is the CPU's saturation,
    // judged there; the rig is the limit when it is busy itself.
    let limited = rig.judged && (most(rig.busy_intervals) || most(rig.saturated_thread_intervals));
    let crowded = rig.judged && most(rig.crowded_intervals);
    let figures: BTreeMap<String, f64> = [
        ("rig_cpu_share", rig.cpu_share),
        ("busy_intervals", rig.busy_intervals as f64),
        ("crowded_intervals", rig.crowded_intervals as f64),
        (
            "saturated_thread_intervals",
            rig.saturated_thread_intervals as f64,
        ),
        ("intervals", rig.intervals as f64),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let cores = rig.cores;
    let (status, summary) = if limited {
        (
            Status::Bottleneck,
            format!(
                "the rig limited the run ({}): its figures measure the client; {} of {cores} cores",
                v.line(),
                pct(rig.cpu_share)
            ),
        )
    } else if crowded {
        (
            Status::Busy,
            format!(
                "the rig used {} of {cores} cores, but the machine had more runnable threads than cores in {} of {} intervals: the rig and the server waited for a CPU",
                pct(rig.cpu_share),
                rig.crowded_intervals,
                rig.intervals
            ),
        )
    } else {
        (
            Status::Fine,
            format!(
                "the rig used {} of {cores} cores, busy in {} of {} intervals",
                pct(rig.cpu_share),
                rig.busy_intervals,
                rig.intervals
            ),
        )
    };
    Resource {
        resource: "rig".to_string(),
        status,
        share: None,
        summary,
        figures,
    }
}
