//! The collector: on the calling thread, it merges the client threads' reports into
//! intervals, emits them in order to the [`Observer`], and builds the totals.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::run_data::{ConnectPhase, IntervalData, RunData};
use super::spill::{IntervalBrief, IntervalStore};
use super::timeline::Timeline;
use super::{rig, shelf, INTERRUPTED};
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
    /// One client of `thread` has ended at `end`.
    Done {
        thread: usize,
        end: Duration,
        missed: u64,
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

/// Merges client reports into intervals and emits them in order.
struct Collector<'a> {
    timeline: &'a Timeline,
    n_ops: usize,
    /// Counters of intervals some client has not finished yet.
    pending: BTreeMap<u64, Vec<OpCounters>>,
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
    missed: u64,
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
        let slot = self.pending.entry(finished.index).or_insert(fresh);
        for (a, b) in slot.iter_mut().zip(&finished.counters) {
            a.merge(b);
        }
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
                self.missed += missed;
            }
            Msg::Ready { .. } => {}
        }
    }

    /// Emit the next interval; `cap` ends it early (a run cut short).
    fn emit_next(&mut self, cap: Option<Duration>, observer: &mut dyn Observer) {
        let k = self.emitted;
        let counters = self.pending.remove(&k).unwrap_or_else(|| self.fresh());
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
        let data = IntervalData {
            index: k,
            start,
            end,
            warmup: self.timeline.is_warmup(k),
            ops: counters,
            per_client,
            rig,
        };
        if !data.warmup {
            for (t, c) in self.totals.iter_mut().zip(&data.ops) {
                t.merge(c);
            }
            if let Some(rig) = &data.rig {
                let _ = self.hiccups.add(&rig.hiccups);
            }
        }
        observer.interval(&data);
        let brief = self.store.keep(data);
        self.intervals.push(brief);
        self.emitted += 1;
    }
}

/// Merge the client threads' reports into intervals, in order, until every client is done.
/// `sizes` holds how many clients each thread carries.
#[allow(clippy::too_many_arguments)]
pub(super) fn collect(
    rx: Receiver<Msg>,
    sizes: Vec<usize>,
    timeline: &Timeline,
    n_ops: usize,
    stop: &AtomicBool,
    t0: Instant,
    observer: &mut dyn Observer,
    store: IntervalStore,
) -> Result<RunData> {
    let mut c = Collector {
        timeline,
        n_ops,
        pending: BTreeMap::new(),
        per_client: BTreeMap::new(),
        clients: sizes.iter().sum(),
        monitor: rig::Monitor::start(t0, *timeline),
        next_of: vec![0; sizes.len()],
        left: sizes,
        emitted: 0,
        intervals: Vec::new(),
        store,
        hiccups: new_hist(),
        totals: (0..n_ops).map(|_| OpCounters::default()).collect(),
        run_end: Duration::ZERO,
        missed: 0,
    };
    let mut stopped_at: Option<Instant> = None;
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
        }
        let all_done = c.left.iter().all(|l| *l == 0);
        let abandoned = stopped_at.is_some_and(|s| s.elapsed() > GRACE);
        if all_done || abandoned {
            if let (true, Some(s)) = (abandoned, stopped_at) {
                c.run_end = s.duration_since(t0);
            }
            // The monitor closes the interval it is in, so the last one has its sample.
            c.monitor.finish();
            // A run that reached its deadline keeps the nominal grid; one cut short (Ctrl-C)
            // or ended by an operation count ends its last interval when it really ended.
            let cap = (timeline.deadline.is_none() || stopped_at.is_some()).then_some(c.run_end);
            let last = c
                .pending
                .keys()
                .next_back()
                .copied()
                .unwrap_or(0)
                .max(timeline.index_of(c.run_end));
            while c.emitted <= last {
                c.emit_next(cap, observer);
            }
            let measured_end = c.intervals.last().map_or(Duration::ZERO, |i| i.end);
            return Ok(RunData {
                connect: ConnectPhase::default(),
                measured: measured_end.saturating_sub(timeline.warmup),
                elapsed: c.run_end,
                interrupted: stopped_at.is_some(),
                abandoned: c.left.iter().sum(),
                missed: c.missed,
                late_start: None,
                intervals: c.intervals,
                store: c.store,
                totals: c.totals,
                hiccups: c.hiccups,
            });
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
