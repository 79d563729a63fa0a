//! The engine: clients, arrival schedules, stop conditions and the interval collector.
//!
//! Every client runs on an OS thread of its own with a single-threaded async runtime, so
//! blocking targets never stall an executor and network targets can still be async. The
//! engine is generic over the target type, so the hot path is monomorphised (no `dyn`).
//! Clients report their counters once per interval; the collector (the calling thread)
//! merges them exactly, emits interval records in order, and builds the totals.

pub mod client;
pub mod pace;
pub mod timeline;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::spec::{DataSpec, GenState, OpSpec};
use crate::stats::OpCounters;
use crate::targets::{OpError, Session, Target};
use client::ClientCtx;
use timeline::Timeline;

/// Set by the Ctrl-C handler; the collector turns it into a stop of the current run.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How long clients get to finish their operation after a stop before they are abandoned.
const GRACE: Duration = Duration::from_secs(3);
/// How long every client together gets to connect.
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// Closed loop (clients back to back) or open loop (arrivals on a schedule).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    Closed {
        clients: usize,
        #[serde(with = "secs")]
        think: Duration,
    },
    Open {
        rate: f64,
        poisson: bool,
        workers: usize,
        #[serde(with = "secs")]
        late_after: Duration,
    },
}

/// The resolved load: what `loadrig run` will do, recorded in the result.
#[derive(Debug, Clone, Serialize)]
pub struct LoadPlan {
    #[serde(flatten)]
    pub mode: Mode,
    #[serde(with = "opt_secs")]
    pub duration: Option<Duration>,
    pub ops: Option<u64>,
    pub samples: Option<u64>,
    #[serde(with = "secs")]
    pub interval: Duration,
    #[serde(with = "secs")]
    pub warmup: Duration,
    pub seed: u64,
}

impl LoadPlan {
    pub fn clients(&self) -> usize {
        match self.mode {
            Mode::Closed { clients, .. } => clients,
            Mode::Open { workers, .. } => workers,
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self.mode, Mode::Open { .. })
    }

    pub fn timeline(&self) -> Timeline {
        Timeline::new(self.interval, self.warmup, self.duration)
    }
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

mod opt_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &Option<std::time::Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

/// From clients to the collector.
pub enum Msg {
    Ready {
        client: usize,
        result: Result<(), OpError>,
    },
    Interval {
        client: usize,
        index: u64,
        counters: Vec<OpCounters>,
        next: u64,
    },
    Done {
        client: usize,
        index: u64,
        counters: Vec<OpCounters>,
        end: Duration,
        missed: u64,
    },
}

/// One finished interval, merged over all clients.
pub struct IntervalData {
    pub index: u64,
    pub start: Duration,
    pub end: Duration,
    pub warmup: bool,
    pub ops: Vec<OpCounters>,
}

/// What the collector hands out as the run goes.
pub trait Observer {
    fn interval(&mut self, data: &IntervalData);
    /// Called about ten times a second with the time since the start.
    fn tick(&mut self, _elapsed: Duration) {}
}

/// What a finished run measured.
pub struct RunData {
    pub intervals: Vec<IntervalData>,
    pub totals: Vec<OpCounters>,
    pub measured: Duration,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub abandoned: usize,
    pub missed: u64,
}

/// What happened before the measured run: setup, server version, data load.
pub struct Prepared {
    pub server_version: Option<String>,
    pub loaded: Option<(u64, Duration)>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Connect once, create the namespace, read the server version and load the data.
pub fn prepare<T: Target>(
    target: &T,
    data: Option<&DataSpec>,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Prepared> {
    runtime()?.block_on(async {
        let mut session = target
            .connect()
            .await
            .map_err(|e| anyhow!("{}", e.message))?;
        session
            .setup()
            .await
            .map_err(|e| anyhow!("setting up: {}", e.message))?;
        let server_version = session.server_version().await;
        let loaded = match data {
            Some(d) => {
                let started = Instant::now();
                let mut rng = SmallRng::seed_from_u64(client::mix_seed(seed, u64::MAX));
                let mut gen = GenState::new(0, 1, 8);
                let mut batch = Vec::with_capacity(d.batch);
                let mut done = 0;
                while done < d.count {
                    batch.clear();
                    let n = (d.count - done).min(d.batch as u64);
                    for _ in 0..n {
                        let mut key = String::new();
                        let mut value = Vec::new();
                        d.key.render_str(&mut rng, &mut gen, &mut key);
                        d.value.render_bytes(&mut rng, &mut gen, &mut value);
                        batch.push((key, value));
                    }
                    session
                        .load(&batch)
                        .await
                        .map_err(|e| anyhow!("loading data after {done} records: {}", e.message))?;
                    done += n;
                    progress(done, d.count);
                }
                Some((done, started.elapsed()))
            }
            None => None,
        };
        Ok(Prepared {
            server_version,
            loaded,
        })
    })
}

/// Run the measured part: start the clients, collect their intervals, return the data.
pub fn run<T: Target>(
    target: Arc<T>,
    ops: Arc<Vec<OpSpec>>,
    plan: &LoadPlan,
    seq_slots: usize,
    observer: &mut dyn Observer,
) -> Result<RunData> {
    let n = plan.clients();
    let timeline = plan.timeline();
    let stop = Arc::new(AtomicBool::new(false));
    let t0_cell = Arc::new(OnceLock::<Instant>::new());
    let start_line = Arc::new(Barrier::new(n + 1));
    let abort = Arc::new(AtomicBool::new(false));
    let (tx, rx) = channel::<Msg>();

    for id in 0..n {
        let (target, ops, plan) = (Arc::clone(&target), Arc::clone(&ops), plan.clone());
        let (stop, t0_cell, start_line, abort, tx) = (
            Arc::clone(&stop),
            Arc::clone(&t0_cell),
            Arc::clone(&start_line),
            Arc::clone(&abort),
            tx.clone(),
        );
        std::thread::Builder::new()
            .name(format!("client-{id}"))
            .spawn(move || {
                pace::precise_timers_for_this_thread();
                let rt = match runtime() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Msg::Ready {
                            client: id,
                            result: Err(OpError::new(
                                crate::targets::ErrorClass::Other,
                                e.to_string(),
                            )),
                        });
                        start_line.wait();
                        return;
                    }
                };
                rt.block_on(async {
                    let session = target.connect().await;
                    let ok = session.is_ok();
                    let _ = tx.send(Msg::Ready {
                        client: id,
                        result: session.as_ref().map(|_| ()).map_err(Clone::clone),
                    });
                    start_line.wait();
                    let (Ok(mut session), true) = (session, ok && !abort.load(Ordering::SeqCst))
                    else {
                        return;
                    };
                    let Some(&t0) = t0_cell.get() else { return };
                    let ctx = ClientCtx {
                        id,
                        ops: &ops,
                        plan: &plan,
                        timeline,
                        seq_slots,
                        stop: &stop,
                        t0,
                        tx,
                    };
                    client::run(&mut session, &ctx).await;
                });
            })?;
    }
    drop(tx);

    // Wait until every client has connected, or give up naming the first failure.
    let mut ready = 0;
    let mut failure: Option<OpError> = None;
    let connect_deadline = Instant::now() + CONNECT_LIMIT;
    while ready < n {
        let left = connect_deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Msg::Ready { result, .. }) => {
                ready += 1;
                if let Err(e) = result {
                    failure.get_or_insert(e);
                }
            }
            Ok(_) => {}
            Err(_) => {
                return Err(anyhow!(
                    "{ready} of {n} clients connected within {}s",
                    CONNECT_LIMIT.as_secs()
                ))
            }
        }
    }
    if let Some(e) = failure {
        abort.store(true, Ordering::SeqCst);
        start_line.wait();
        return Err(anyhow!("a client could not connect: {}", e.message));
    }
    let t0 = Instant::now();
    let _ = t0_cell.set(t0);
    start_line.wait();

    collect(rx, n, &timeline, ops.len(), &stop, t0, observer)
}

/// Merge client reports into intervals, in order, until every client is done.
fn collect(
    rx: std::sync::mpsc::Receiver<Msg>,
    n: usize,
    timeline: &Timeline,
    n_ops: usize,
    stop: &AtomicBool,
    t0: Instant,
    observer: &mut dyn Observer,
) -> Result<RunData> {
    let fresh = || {
        (0..n_ops)
            .map(|_| OpCounters::default())
            .collect::<Vec<_>>()
    };
    let mut pending: BTreeMap<u64, Vec<OpCounters>> = BTreeMap::new();
    let mut next_of = vec![0u64; n];
    let mut done = vec![false; n];
    let mut emitted = 0u64;
    let mut intervals = Vec::new();
    let mut totals = fresh();
    let mut run_end = Duration::ZERO;
    let mut missed = 0;
    let mut stopped_at: Option<Instant> = None;
    let mut interrupted = false;
    let mut last_tick = Instant::now();

    let emit = |k: u64,
                counters: Vec<OpCounters>,
                end_cap: Option<Duration>,
                intervals: &mut Vec<IntervalData>,
                totals: &mut Vec<OpCounters>,
                observer: &mut dyn Observer| {
        let warmup = timeline.is_warmup(k);
        let mut end = timeline.end_of(k);
        if let Some(cap) = end_cap {
            end = end.min(cap).max(timeline.start_of(k));
        }
        let data = IntervalData {
            index: k,
            start: timeline.start_of(k),
            end,
            warmup,
            ops: counters,
        };
        if !warmup {
            for (t, c) in totals.iter_mut().zip(&data.ops) {
                t.merge(c);
            }
        }
        observer.interval(&data);
        intervals.push(data);
    };

    let merge_into =
        |pending: &mut BTreeMap<u64, Vec<OpCounters>>, index: u64, counters: Vec<OpCounters>| {
            let slot = pending.entry(index).or_insert_with(fresh);
            for (a, b) in slot.iter_mut().zip(&counters) {
                a.merge(b);
            }
        };

    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Interval {
                client,
                index,
                counters,
                next,
            }) => {
                merge_into(&mut pending, index, counters);
                next_of[client] = next;
            }
            Ok(Msg::Done {
                client,
                index,
                counters,
                end,
                missed: m,
            }) => {
                merge_into(&mut pending, index, counters);
                done[client] = true;
                next_of[client] = u64::MAX;
                run_end = run_end.max(end);
                missed += m;
            }
            Ok(Msg::Ready { .. }) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                // Every client thread is gone; those that did not say Done died.
                for d in done.iter_mut() {
                    *d = true;
                }
            }
        }
        if INTERRUPTED.load(Ordering::Relaxed) && stopped_at.is_none() {
            stop.store(true, Ordering::Relaxed);
            stopped_at = Some(Instant::now());
            interrupted = true;
        }
        let all_done = done.iter().all(|d| *d);
        let abandoned = stopped_at.is_some_and(|s| s.elapsed() > GRACE);
        let reached = next_of.iter().copied().min().unwrap_or(u64::MAX);
        while emitted < reached && (!all_done && !abandoned) {
            let counters = pending.remove(&emitted).unwrap_or_else(fresh);
            emit(
                emitted,
                counters,
                None,
                &mut intervals,
                &mut totals,
                observer,
            );
            emitted += 1;
        }
        if all_done || abandoned {
            if abandoned {
                run_end = stopped_at.map_or(run_end, |s| s.duration_since(t0));
            }
            let last = pending
                .keys()
                .next_back()
                .copied()
                .unwrap_or(0)
                .max(timeline.index_of(run_end));
            while emitted <= last {
                let counters = pending.remove(&emitted).unwrap_or_else(fresh);
                emit(
                    emitted,
                    counters,
                    Some(run_end),
                    &mut intervals,
                    &mut totals,
                    observer,
                );
                emitted += 1;
            }
            let measured_end = intervals.last().map_or(Duration::ZERO, |i| i.end);
            return Ok(RunData {
                measured: measured_end.saturating_sub(timeline.warmup),
                elapsed: run_end,
                interrupted,
                abandoned: done.iter().filter(|d| !**d).count(),
                missed,
                intervals,
                totals,
            });
        }
        if last_tick.elapsed() >= Duration::from_millis(100) {
            observer.tick(t0.elapsed());
            last_tick = Instant::now();
        }
    }
}
