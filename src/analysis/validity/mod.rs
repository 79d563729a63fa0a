//! Whether a run's figures can be trusted, judged as the run ends from what the engine
//! measured: each check in a file of its own, run in order by [`judge`], each adding its
//! reasons to the verdict; the trend tests ([`drift`]) run on the interval records, so
//! that a merged run is judged by them too. The records, the thresholds and their defaults
//! are the result file's (`result::validity`); what the figures mean and what to do about a
//! suspect run is in docs/validity.md.

mod connect;
pub mod drift;
pub mod fairness;
mod hiccups;
mod littles_law;
mod rig_cpu;
mod schedule;

use anyhow::Result;

pub use drift::with_trends;

use crate::engine::spill::IntervalBrief;
use crate::engine::{LoadPlan, RunData};
use crate::result::validity::{cores, Thresholds, Validity, Verdict};

/// What [`judge`] needs from the run beside the engine's data.
pub struct Context<'a> {
    pub plan: &'a LoadPlan,
    pub target_kind: &'a str,
    /// Whether any operation pauses (keying or think time inside the workload).
    pub pauses: bool,
    pub measured_s: f64,
    /// Over all operations, measured part: successes, failures and mean latency (ns).
    pub ok: u64,
    pub errors: u64,
    pub mean_latency_ns: f64,
    /// Open loop: started late, and arrivals never started.
    pub late_starts: Option<u64>,
    pub missed_starts: u64,
    pub thresholds: Thresholds,
}

impl Context<'_> {
    /// Operations completed in the measured part, successes and failures.
    fn done(&self) -> u64 {
        self.ok + self.errors
    }
}

/// The run judging itself: the rig's CPU and the machine's run queue, the rig's hiccups,
/// the clients that could not connect, fairness between the clients, Little's law and the
/// open loop's schedule, in this order (the order of the verdict's reasons).
pub fn judge(run: &RunData, cx: &Context<'_>) -> Result<Validity> {
    let th = cx.thresholds;
    let cores = cores();
    let intervals = judged(run, cx.plan);
    let sampled = rig_cpu::sampled(run, &intervals, cores)?;
    let mut reasons = Vec::new();
    let rig = rig_cpu::check(run, &sampled, cx, cores, &mut reasons);
    let hiccups = hiccups::check(&run.hiccups, &sampled, th.hiccup_ns, &mut reasons);
    connect::check(run, cx, &mut reasons);
    let fairness = fairness::check(run, &intervals, cx, &mut reasons)?;
    let littles_law = littles_law::check(cx, &mut reasons);
    schedule::check(cx, &mut reasons);
    Ok(Validity {
        verdict: Verdict::of(&reasons),
        reasons,
        rig,
        hiccups,
        fairness,
        littles_law,
        thresholds: th,
        trends: Vec::new(),
    })
}

/// The intervals the verdict looks at: measured and of full length (all measured ones
/// when none is full, as in a short run ended by an operation count).
fn judged<'a>(run: &'a RunData, plan: &LoadPlan) -> Vec<&'a IntervalBrief> {
    let measured: Vec<&IntervalBrief> = run.intervals.iter().filter(|i| !i.warmup).collect();
    let full: Vec<&IntervalBrief> = measured
        .iter()
        .copied()
        .filter(|i| (i.end - i.start).as_secs_f64() >= plan.interval.as_secs_f64() * 0.999)
        .collect();
    if full.is_empty() {
        measured
    } else {
        full
    }
}

/// Half or more of `n` intervals, and at least one.
fn most(k: usize, n: usize) -> bool {
    n > 0 && k * 2 >= n
}
