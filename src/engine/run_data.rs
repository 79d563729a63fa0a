//! What a finished run measured: its intervals (their histograms in the spill file), totals,
//! how the clients connected, and how the run ended.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::rig;
use super::spill::{IntervalBrief, IntervalStore};
use crate::stats::{new_hist, Hist, OpCounters};
use crate::vocab::ErrorCounts;

/// One finished interval, merged over all clients.
pub struct IntervalData {
    pub index: u64,
    pub start: Duration,
    pub end: Duration,
    pub warmup: bool,
    pub ops: Vec<OpCounters>,
    /// Operations each client completed (successes and failures), indexed by client id.
    pub per_client: Vec<u64>,
    /// The rig's own CPU, run queue and hiccups over the interval, when the monitor
    /// closed it in time.
    pub rig: Option<rig::RigSample>,
    /// In a run with stages: the stage it belongs to.
    pub stage: Option<Arc<str>>,
    /// A closed loop with client stages: this process's clients running at its end.
    pub clients: Option<u64>,
    /// A closed loop with client stages: this process's first N clients (those the ramp
    /// ran from the interval's start to its end) ran all of it. Its fairness is judged over
    /// them alone: a client that joined or left during it, or did not run, is not starved.
    pub ran_whole: Option<usize>,
    /// An open loop with stages: the arrivals due in it (the integral of the rate over it,
    /// this process's share).
    pub offered: Option<f64>,
}

/// How the clients connected before the run.
#[derive(Debug, Clone, Default)]
pub struct ConnectPhase {
    /// From the first connect to the last client's answer.
    pub time: Duration,
    /// Connections per second they were paced at; `None`: unpaced.
    pub rate: Option<f64>,
    /// Every connection's TCP, TLS and authentication times (before the run, `connect`
    /// operations, reconnects), from targets that time them apart.
    pub phases: Option<crate::stats::connect_phases::ConnectPhases>,
    /// Clients whose connect failed: they start the run without a session and connect on
    /// their first operation, with backoff, like a client whose connection was lost.
    pub failed: usize,
    pub errors: ErrorCounts,
    /// The first failure's message.
    pub first_error: Option<String>,
}

/// What a finished run measured.
pub struct RunData {
    pub connect: ConnectPhase,
    /// Every interval's counts; their histograms are in `store`.
    pub intervals: Vec<IntervalBrief>,
    pub store: IntervalStore,
    pub totals: Vec<OpCounters>,
    /// The rig's hiccups over the measured intervals.
    pub hiccups: Hist,
    pub measured: Duration,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub abandoned: usize,
    pub missed: u64,
    /// `--start-at`: how long after the agreed start this process could start.
    pub late_start: Option<Duration>,
    /// Arrivals never started, by stage (one entry without stages; may be shorter than the
    /// stages: none missed in the rest).
    pub missed_by_stage: Vec<u64>,
    /// `--stop-when` ended the run.
    pub stopped: Option<Stopped>,
}

/// Where `--stop-when` ended a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stopped {
    /// The first of the intervals in a row the condition held in.
    pub from_interval: u64,
    /// When the collector saw it had held long enough, since the start.
    pub at: Duration,
}

impl RunData {
    /// Count the first `k` intervals as warm-up after the fact (`--warmup auto`): they
    /// leave the totals and the measured time. Returns the new end of the warm-up.
    pub fn cut_warmup(&mut self, k: usize) -> Result<Duration> {
        let k = k.min(self.intervals.len());
        for (i, data) in self.intervals.iter_mut().enumerate() {
            data.warmup = i < k;
        }
        let n_ops = self.totals.len();
        let mut totals: Vec<OpCounters> = (0..n_ops).map(|_| OpCounters::default()).collect();
        let mut hiccups = new_hist();
        for i in k..self.intervals.len() {
            let (ops, rig) = self.store.read(i)?;
            for (t, c) in totals.iter_mut().zip(&ops) {
                t.merge(c);
            }
            if let Some(h) = rig {
                let _ = hiccups.add(&h);
            }
        }
        self.totals = totals;
        self.hiccups = hiccups;
        let warmup = self.intervals.get(k).map_or_else(
            || self.intervals.last().map_or(Duration::ZERO, |d| d.end),
            |d| d.start,
        );
        let end = self.intervals.last().map_or(Duration::ZERO, |d| d.end);
        self.measured = end.saturating_sub(warmup);
        Ok(warmup)
    }

    /// `f` of every interval whole, in order, read back one at a time.
    pub fn map_intervals<R>(&self, mut f: impl FnMut(&IntervalData) -> R) -> Result<Vec<R>> {
        let mut out = Vec::with_capacity(self.intervals.len());
        for (k, brief) in self.intervals.iter().enumerate() {
            let back = |e| anyhow!("reading interval {} back: {e}", k + 1);
            let (ops, hiccups) = self.store.read(k).map_err(back)?;
            let rig = match (&brief.rig, hiccups) {
                (Some(r), Some(hiccups)) => Some(rig::RigSample {
                    wall: r.wall,
                    user: r.user,
                    system: r.system,
                    running: r.running,
                    hiccups,
                    threads: self.store.threads(k).map_err(back)?,
                }),
                _ => None,
            };
            out.push(f(&IntervalData {
                index: brief.index,
                start: brief.start,
                end: brief.end,
                warmup: brief.warmup,
                ops,
                per_client: self.store.per_client(k).map_err(back)?,
                rig,
                stage: brief.stage.clone(),
                clients: brief.clients,
                ran_whole: brief.ran_whole,
                offered: brief.offered,
            }));
        }
        Ok(out)
    }
}
