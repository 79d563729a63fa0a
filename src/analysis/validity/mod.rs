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
use crate::stats::Hist;

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

/// What one verdict covers: the whole run, or one stage of a run with stages.
pub struct Scope<'a> {
    /// Its measured intervals.
    pub measured: Vec<&'a IntervalBrief>,
    /// The rig's hiccups over them.
    pub hiccups: Hist,
    /// The clients (by their id in this process) whose fairness it judges.
    pub clients: Vec<usize>,
    /// A constant load: fairness, Little's law and the schedule are judged too; otherwise
    /// (a ramp, or a whole run with stages) only the rig's own figures.
    pub steady: bool,
    /// The whole run: the clients that could not connect are judged too.
    pub whole: bool,
}

impl<'a> Scope<'a> {
    /// The whole run: steady unless its load changes (stages).
    pub fn whole(run: &'a RunData, plan: &LoadPlan) -> Scope<'a> {
        Scope {
            measured: run.intervals.iter().filter(|i| !i.warmup).collect(),
            hiccups: run.hiccups.clone(),
            clients: (0..plan.clients()).collect(),
            steady: plan.stages.is_empty(),
            whole: true,
        }
    }
}

/// The run judging itself: the rig's CPU and the machine's run queue, the rig's hiccups,
/// the clients that could not connect, fairness between the clients, Little's law and the
/// open loop's schedule, in this order (the order of the verdict's reasons).
pub fn judge(run: &RunData, cx: &Context<'_>) -> Result<Validity> {
    judge_scope(run, &Scope::whole(run, cx.plan), cx)
}

/// The verdict over `scope` ([`judge`] for the whole run): a load that changes is judged
/// only on the rig's own figures, the steady-state checks' figures kept without reasons.
pub fn judge_scope(run: &RunData, scope: &Scope<'_>, cx: &Context<'_>) -> Result<Validity> {
    let th = cx.thresholds;
    let cores = cores();
    let intervals = judged(&scope.measured, cx.plan);
    let sampled = rig_cpu::sampled(run, &intervals, cores)?;
    let mut reasons = Vec::new();
    let rig = rig_cpu::check(&scope.measured, &sampled, cx, cores, &mut reasons);
    let hiccups = hiccups::check(&scope.hiccups, &sampled, th.hiccup_ns, &mut reasons);
    if scope.whole {
        connect::check(run, cx, &mut reasons);
    }
    // A changing load's fairness is kept as a figure, not judged.
    let mut unjudged = Vec::new();
    let steady = if scope.steady {
        &mut reasons
    } else {
        &mut unjudged
    };
    let fairness = fairness::check(run, scope, &intervals, cx, steady)?;
    let littles_law = scope
        .steady
        .then(|| littles_law::check(cx, &mut reasons))
        .flatten();
    if scope.steady {
        schedule::check(cx, &mut reasons);
    }
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
fn judged<'a>(measured: &[&'a IntervalBrief], plan: &LoadPlan) -> Vec<&'a IntervalBrief> {
    let measured = measured.to_vec();
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
