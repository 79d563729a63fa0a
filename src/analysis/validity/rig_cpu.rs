//! The rig's own CPU and the machine's run queue: a rig busy on most of its cores measures
//! itself, one that waited for a CPU measures the machine, and one thread of the rig busy
//! all the time is the bottleneck however idle the other cores are.

use anyhow::{anyhow, Result};

use super::{most, Context};
use crate::engine::rig::RigBrief;
use crate::engine::spill::IntervalBrief;
use crate::engine::RunData;
use crate::result::validity::{
    cpu_share, cpu_us_per_op, RigInterval, RigSummary, ThreadShare, CROWDED_MARGIN, IN_PROCESS,
};

/// The judged intervals' rig samples, each interval's threads read back from the run's
/// store one at a time.
pub(super) fn sampled(
    run: &RunData,
    intervals: &[&IntervalBrief],
    cores: usize,
) -> Result<Vec<RigInterval>> {
    let mut sampled = Vec::new();
    for i in intervals {
        if let Some(s) = &i.rig {
            let threads = run
                .store
                .threads(i.index as usize)
                .map_err(|e| anyhow!("reading the rig's threads back: {e}"))?;
            sampled.push(RigInterval::of(s, &threads, completed(i), cores));
        }
    }
    Ok(sampled)
}

fn completed(i: &IntervalBrief) -> u64 {
    i.ops.iter().map(|c| c.ok + c.error_total()).sum()
}

/// The rig's CPU over the measured part, with a reason when most `sampled` intervals were
/// busy, crowded or had one thread saturated (not judged for a target inside the rig's
/// process, whose CPU is the rig's).
pub(super) fn check(
    measured: &[&IntervalBrief],
    sampled: &[RigInterval],
    cx: &Context<'_>,
    cores: usize,
    reasons: &mut Vec<String>,
) -> RigSummary {
    let th = cx.thresholds;
    let measured: Vec<&RigBrief> = measured.iter().filter_map(|i| i.rig.as_ref()).collect();
    let user: f64 = measured.iter().map(|s| s.user.as_secs_f64()).sum();
    let system: f64 = measured.iter().map(|s| s.system.as_secs_f64()).sum();
    let wall: f64 = measured.iter().map(|s| s.wall.as_secs_f64()).sum();
    let busy: Vec<f64> = sampled
        .iter()
        .map(|r| r.cpu_share)
        .filter(|&s| s >= th.busy_share)
        .collect();
    let crowded: Vec<f64> = sampled
        .iter()
        .filter_map(|r| r.procs_running)
        .filter(|&r| r > cores as f64 + CROWDED_MARGIN)
        .collect();
    let judged_cpu = !IN_PROCESS.contains(&cx.target_kind);
    let n = sampled.len();
    if judged_cpu && most(busy.len(), n) {
        reasons.push(format!(
            "the rig used {:.0} % of {cores} core{} in {} of {n} intervals: the figures may measure the client",
            100.0 * busy.iter().sum::<f64>() / busy.len() as f64,
            if cores == 1 { "" } else { "s" },
            busy.len()
        ));
    }
    if judged_cpu && most(crowded.len(), n) {
        reasons.push(format!(
            "the machine had {:.1} runnable threads for {cores} cores in {} of {n} intervals: the rig waited for CPU",
            crowded.iter().sum::<f64>() / crowded.len() as f64,
            crowded.len()
        ));
    }
    let rigs: Vec<&RigInterval> = sampled.iter().collect();
    let saturated = saturated_thread(&rigs, th.thread_busy);
    if judged_cpu && most(saturated.intervals, n) && !most(busy.len(), n) {
        reasons.push(saturated.reason(n, &rigs, cores));
    }
    RigSummary {
        cores,
        cpu_user_s: user,
        cpu_system_s: system,
        cpu_share: cpu_share(user + system, wall, cores),
        cpu_us_per_op: cpu_us_per_op(user + system, cx.done()),
        intervals: n,
        busy_intervals: busy.len(),
        crowded_intervals: crowded.len(),
        saturated_thread_intervals: saturated.intervals,
        busiest_thread: saturated.busiest,
        procs_running_max: sampled
            .iter()
            .filter_map(|r| r.procs_running)
            .reduce(f64::max),
        judged: judged_cpu,
    }
}

/// Intervals in which one thread of the rig was saturated, and the busiest thread seen.
struct Saturated {
    intervals: usize,
    busiest: Option<ThreadShare>,
    mean_busy: f64,
}

fn saturated_thread(rigs: &[&RigInterval], threshold: f64) -> Saturated {
    let hot: Vec<&ThreadShare> = rigs
        .iter()
        .filter_map(|r| r.busiest_load_thread())
        .filter(|t| t.busy() >= threshold)
        .collect();
    Saturated {
        intervals: hot.len(),
        busiest: rigs
            .iter()
            .filter_map(|r| r.busiest_load_thread())
            .max_by(|a, b| a.busy().total_cmp(&b.busy()))
            .cloned(),
        mean_busy: hot.iter().map(|t| t.busy()).sum::<f64>() / hot.len().max(1) as f64,
    }
}

impl Saturated {
    /// `one thread of the rig (clients-0) was busy 99 % of the time ...`.
    fn reason(&self, n: usize, rigs: &[&RigInterval], cores: usize) -> String {
        let process = rigs.iter().map(|r| r.cpu_share).sum::<f64>() / rigs.len().max(1) as f64;
        format!(
            "one thread of the rig ({}) was busy {:.0} % of the time (running or waiting for a CPU) in {} of {n} intervals while the rig used {:.0} % of {cores} core{}: that thread is the bottleneck; spread its clients over more threads (--threads)",
            self.busiest.as_ref().map_or("?", |t| t.name.as_str()),
            100.0 * self.mean_busy,
            self.intervals,
            100.0 * process,
            if cores == 1 { "" } else { "s" },
        )
    }
}
