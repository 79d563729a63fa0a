//! The collector: on the calling thread, it merges the client threads' reports into
//! intervals, emits them in order to the [`Observer`], and builds the totals.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::run_data::{ConnectPhase, IntervalData, RunData, Stopped};
use super::spill::{IntervalBrief, IntervalStore};
use super::stages::{rank, Profile, StageKind};
use super::stop_when::Streak;
use super::timeline::Timeline;
use super::{rig, shelf, LoadPlan, INTERRUPTED};
use crate::stats::{new_hist, Hist, OpCounters};
use crate::vocab::OpError;

/// How long clients get to finish their operation after a stop before they are abandoned.
const GRACE: Duration = Duration::from_secs(3);

/// From client threads to the collector.
pub enum Msg {
    Ready {
        client: usize,
        result: Result<(), OpError>,
    },
    /// Every client of `thread` has moved on to interval `next` or later: the intervals
    /// before it that they recorded something in.
    Progress {
        thread: usize,
        /// The thread's client ids, in the order of each `per_client`.
        clients: Arc<[usize]>,
        finished: Vec<shelf::Finished>,
        next: u64,
    },
    /// One client of `thread` has ended at `end`, with arrivals it never started (by
    /// stage).
    Done {
        thread: usize,
        end: Duration,
        missed: Vec<u64>,
    },
}

/// What the collector hands out as the run goes.
pub trait Observer {
    /// The clients are connected and wait at the start line: what must be ready before the
    /// first operation (the server's observer, its baseline) gets ready now.
    fn before_start(&mut self) {}
    /// The run starts at `t0`, the origin of its interval grid.
    fn started(&mut self, _t0: Instant) {}
    fn interval(&mut self, data: &IntervalData);
    /// Called about ten times a second with the time since the start.
    fn tick(&mut self, _elapsed: Duration) {}
}

/// What the collector needs of the run beside the clients' reports: its grid, its plan
/// (stages, `--stop-when`) and its operations' names.
pub(super) struct Shape<'a> {
    pub(super) timeline: &'a Timeline,
    pub(super) plan: &'a LoadPlan,
    pub(super) names: &'a [String],
}

/// Merges client reports into intervals and emits them in order.
struct Collector<'a> {
    timeline: &'a Timeline,
    plan: &'a LoadPlan,
    names: &'a [String],
    /// The stages, their names, and this process's share of their load.
    stages: Option<(Profile, Vec<std::sync::Arc<str>>, f64)>,
    /// Each of this process's clients' rank in a closed loop's ramp (`stages::rank`),
    /// rising with its id.
    ranks: Vec<u64>,
    /// `--stop-when`: the intervals in a row it has held in.
    streak: Streak,
    stop_at: Option<Duration>,
    n_ops: usize,
    /// Counters of intervals some client has not finished yet, and their running clients.
    pending: BTreeMap<u64, (Vec<OpCounters>, u64)>,
    /// Operations completed per client in intervals not emitted yet.
    per_client: BTreeMap<u64, Vec<u64>>,
    clients: usize,
    monitor: rig::Monitor,
    /// The first interval each thread has not reported yet (`u64::MAX` when done).
    next_of: Vec<u64>,
    /// Clients of each thread that have not ended yet.
    left: Vec<usize>,
    emitted: u64,
    intervals: Vec<IntervalBrief>,
    store: IntervalStore,
    totals: Vec<OpCounters>,
    /// The rig's hiccups over the measured intervals.
    hiccups: Hist,
    run_end: Duration,
    missed: Vec<u64>,
}

impl Collector<'_> {
    fn fresh(&self) -> Vec<OpCounters> {
        (0..self.n_ops).map(|_| OpCounters::default()).collect()
    }

    fn merge(&mut self, clients: &[usize], finished: shelf::Finished) {
        let n = self.clients;
        let counts = self
            .per_client
            .entry(finished.index)
            .or_insert_with(|| vec![0; n]);
        for (&id, done) in clients.iter().zip(&finished.per_client) {
            if let Some(slot) = counts.get_mut(id) {
                *slot += done;
            }
        }
        let fresh = self.fresh();
        let slot = self.pending.entry(finished.index).or_insert((fresh, 0));
        for (a, b) in slot.0.iter_mut().zip(&finished.counters) {
            a.merge(b);
        }
        slot.1 += finished.active;
    }

    fn receive(&mut self, msg: Msg) {
        match msg {
            Msg::Progress {
                thread,
                clients,
                finished,
                next,
            } => {
                for f in finished {
                    self.merge(&clients, f);
                }
                self.next_of[thread] = next;
            }
            Msg::Done {
                thread,
                end,
                missed,
                ..
            } => {
                self.left[thread] = self.left[thread].saturating_sub(1);
                self.run_end = self.run_end.max(end);
                if self.missed.len() < missed.len() {
                    self.missed.resize(missed.len(), 0);
                }
                for (m, n) in self.missed.iter_mut().zip(missed) {
                    *m += n;
                }
            }
            Msg::Ready { .. } => {}
        }
    }

    /// Emit the next interval; `cap` ends it early (a run cut short).
    fn emit_next(&mut self, cap: Option<Duration>, observer: &mut dyn Observer) {
        let k = self.emitted;
        let (counters, active) = self.pending.remove(&k).unwrap_or_else(|| (self.fresh(), 0));
        let start = self.timeline.start_of(k);
        let end = match cap {
            Some(cap) => self.timeline.end_of(k).min(cap).max(start),
            None => self.timeline.end_of(k),
        };
        let per_client = self
            .per_client
            .remove(&k)
            .unwrap_or_else(|| vec![0; self.clients]);
        // The monitor closes an interval within its wake period (5 ms) of the end, on the
        // clients' clock; a client reports it at the end, so the sample is normally there
        // already or a few ms away. A starved monitor thread is waited for a little longer.
        let rig = self.monitor.take(k, Duration::from_millis(250));
        let (mut stage, mut clients, mut offered, mut ran_whole) = (None, None, None, None);
        if let Some((profile, names, share)) = &self.stages {
            let i = self.timeline.stage_of(k).unwrap_or(0);
            stage = names.get(i).cloned();
            match profile.stages()[i].kind {
                StageKind::Clients => {
                    clients = Some(active);
                    // The ramp runs the ranks below its level; over the interval (in one
                    // stage, so the level moves one way) the lower of its ends.
                    let last = end.saturating_sub(Duration::from_nanos(1)).max(start);
                    let level = profile.clients_at(start).min(profile.clients_at(last));
                    // A process's clients join in the order of their ids: the first ones.
                    ran_whole = Some(self.ranks.iter().take_while(|&&r| r < level).count());
                }
                StageKind::Rate => {
                    let due = profile.lambda(end) - profile.lambda(start);
                    offered = Some(due * share);
                }
            }
        }
        let data = IntervalData {
            index: k,
            start,
            end,
            warmup: self.timeline.is_warmup(k),
            ops: counters,
            per_client,
            rig,
            stage,
            clients,
            ran_whole,
            offered,
        };
        if !data.warmup {
            for (t, c) in self.totals.iter_mut().zip(&data.ops) {
                t.merge(c);
            }
            if let Some(rig) = &data.rig {
                let _ = self.hiccups.add(&rig.hiccups);
            }
        }
        if let (Some(rule), false) = (&self.plan.stop_when, data.warmup) {
            let seconds = (data.end - data.start).as_secs_f64();
            let held = rule.holds(&data.ops, self.names, seconds);
            if self.streak.count(rule, k, held) {
                self.stop_at = Some(data.end);
            }
        }
        observer.interval(&data);
        let brief = self.store.keep(data);
        self.intervals.push(brief);
        self.emitted += 1;
    }
    /// The run has ended: emit what is left (up to the run's real end when it was cut
    /// short) and hand over the run's data.
    fn finish(
        mut self,
        stopped_at: Option<Instant>,
        interrupted: bool,
        observer: &mut dyn Observer,
    ) -> RunData {
        // The monitor closes the interval it is in, so the last one has its sample.
        self.monitor.finish();
        // A run that reached its deadline keeps the nominal grid; one cut short (Ctrl-C)
        // or ended by an operation count ends its last interval when it really ended.
        let cap =
            (self.timeline.deadline.is_none() || stopped_at.is_some()).then_some(self.run_end);
        let last = self
            .pending
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(self.timeline.index_of(self.run_end));
        while self.emitted <= last {
            self.emit_next(cap, observer);
        }
        let measured_end = self.intervals.last().map_or(Duration::ZERO, |i| i.end);
        let stopped = self.streak.stopped.map(|from_interval| Stopped {
            from_interval,
            at: self.stop_at.unwrap_or(self.run_end),
        });
        RunData {
            connect: ConnectPhase::default(),
            measured: measured_end.saturating_sub(self.timeline.warmup),
            elapsed: self.run_end,
            interrupted,
            abandoned: self.left.iter().sum(),
            missed: self.missed.iter().sum(),
            missed_by_stage: self.missed,
            stopped,
            late_start: None,
            intervals: self.intervals,
            store: self.store,
            totals: self.totals,
            hiccups: self.hiccups,
        }
    }
}

/// Merge the client threads' reports into intervals, in order, until every client is done.
/// `sizes` holds how many clients each thread carries.
pub(super) fn collect(
    rx: Receiver<Msg>,
    sizes: Vec<usize>,
    shape: Shape<'_>,
    stop: &AtomicBool,
    t0: Instant,
    observer: &mut dyn Observer,
    store: IntervalStore,
) -> Result<RunData> {
    let Shape {
        timeline,
        plan,
        names,
    } = shape;
    let n_ops = names.len();
    let stages = (!plan.stages.is_empty()).then(|| {
        let names = plan.stages.iter().map(|s| s.name.as_str().into()).collect();
        (plan.profile(), names, plan.share())
    });
    let (shards, all) = plan
        .shard
        .map_or((1, plan.clients()), |s| (s.count, s.clients));
    let clients: usize = sizes.iter().sum();
    let ramps = stages
        .as_ref()
        .is_some_and(|(p, _, _)| (p.stages().iter()).any(|s| matches!(s.kind, StageKind::Clients)));
    let ranks = match ramps {
        true => (0..clients)
            .map(|c| rank(plan.first_client() + c, all, shards))
            .collect(),
        false => Vec::new(),
    };
    let mut c = Collector {
        timeline,
        plan,
        names,
        stages,
        ranks,
        streak: Streak::default(),
        stop_at: None,
        n_ops,
        pending: BTreeMap::new(),
        per_client: BTreeMap::new(),
        clients,
        monitor: rig::Monitor::start(t0, timeline.clone()),
        next_of: vec![0; sizes.len()],
        left: sizes,
        emitted: 0,
        intervals: Vec::new(),
        store,
        hiccups: new_hist(),
        totals: (0..n_ops).map(|_| OpCounters::default()).collect(),
        run_end: Duration::ZERO,
        missed: Vec::new(),
    };
    let mut stopped_at: Option<Instant> = None;
    let mut interrupted = false;
    let mut last_tick = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(msg) => c.receive(msg),
            Err(RecvTimeoutError::Timeout) => {}
            // Every client thread is gone; any that did not say Done died.
            Err(RecvTimeoutError::Disconnected) => c.left.iter_mut().for_each(|l| *l = 0),
        }
        if INTERRUPTED.load(Ordering::Relaxed) && stopped_at.is_none() {
            stop.store(true, Ordering::Relaxed);
            stopped_at = Some(Instant::now());
            interrupted = true;
        }
        if c.stop_at.is_some() && stopped_at.is_none() {
            // `--stop-when` held long enough: the clients finish their operations and end.
            stop.store(true, Ordering::Relaxed);
            stopped_at = Some(Instant::now());
        }
        let all_done = c.left.iter().all(|l| *l == 0);
        let abandoned = stopped_at.is_some_and(|s| s.elapsed() > GRACE);
        if all_done || abandoned {
            if let (true, Some(s)) = (abandoned, stopped_at) {
                c.run_end = s.duration_since(t0);
            }
            return Ok(c.finish(stopped_at, interrupted, observer));
        }
        // A thread whose clients have all recorded their last operation has ended once
        // their `Done`s (right behind) arrive; until then it holds the emission back, so the
        // end is handled above with the run's end.
        let reached = c
            .next_of
            .iter()
            .zip(&c.left)
            .map(|(&next, &left)| {
                if left > 0 && next == u64::MAX {
                    c.emitted
                } else {
                    next
                }
            })
            .min()
            .unwrap_or(u64::MAX);
        while c.emitted < reached {
            c.emit_next(None, observer);
        }
        if last_tick.elapsed() >= Duration::from_millis(100) {
            observer.tick(t0.elapsed());
            last_tick = Instant::now();
        }
    }
}
