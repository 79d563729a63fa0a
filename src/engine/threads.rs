//! The client threads: how many carry the clients and which clients each carries, their
//! connections, the start line they meet at with the collector, and the run of their clients.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Result};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::client::{self, ClientCtx};
use super::collector::Msg;
use super::prepare::with_class;
use super::run_data::ConnectPhase;
use super::shelf::Shelf;
use super::timeline::Timeline;
use super::turns::Turns;
use super::{pipe, runtime, slice, LoadPlan, INTERRUPTED};
use crate::targets::peer::PeerTarget;
use crate::targets::pipelined::{Batched, Codec};
use crate::targets::Target;
use crate::vocab::OpError;
use crate::workload::ycsb::InsertCounters;
use crate::workload::OpSpec;

/// How long every client together gets to connect (besides the time pacing takes).
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// Sizes the per-client generator state needs.
#[derive(Debug, Clone, Copy)]
pub struct Slots {
    pub seq: usize,
    pub capture: usize,
    /// Where every `seq` generator starts (0, except in the later batches of a growth study).
    pub seq_offset: u64,
}

/// Wait for the wall-clock instant `at` and return it on the monotonic clock. A process
/// that gets there late starts now, on the grid of `at` (its first intervals are short or
/// empty), so that interval k spans the same wall-clock time in every shard; it returns by
/// how much it was late.
pub(super) fn start_at(at: SystemTime) -> (Instant, Duration) {
    let (wall, now) = (SystemTime::now(), Instant::now());
    match at.duration_since(wall) {
        Ok(left) => {
            // The instant on the monotonic clock, read once, so the grid is exactly `at`.
            let t0 = now + left;
            crate::clock::precise_timers_for_this_thread();
            loop {
                let now = Instant::now();
                if now >= t0 {
                    return (t0, Duration::ZERO);
                }
                if INTERRUPTED.load(Ordering::Relaxed) {
                    return (now, Duration::ZERO);
                }
                // Short steps, so that Ctrl-C is not ignored for the whole wait.
                std::thread::sleep((t0 - now).min(Duration::from_millis(100)));
            }
        }
        Err(e) => {
            let late = e.duration();
            (now.checked_sub(late).unwrap_or(now), late)
        }
    }
}

/// The client streams thread `t` of `threads` carries: every `threads`-th connection's,
/// so that the streams sharing a connection (`--pipeline`) share its thread.
pub(super) fn thread_clients(plan: &LoadPlan, t: usize, threads: usize) -> Vec<usize> {
    (t..plan.connections())
        .step_by(threads)
        .flat_map(|c| plan.streams_of(c))
        .collect()
}

/// The most connections that get a thread each: open-loop workers, and closed-loop clients
/// under `--threads per-client`.
pub const THREAD_PER_CONNECTION_MAX: usize = 256;

/// How many threads carry the clients (a connection's streams are never split).
pub(super) fn client_threads<T: Target>(target: &T, plan: &LoadPlan) -> usize {
    let n = plan.connections();
    // Open-loop workers keep a thread each (up to 256), so they can wait for their next
    // arrival with a precise sleep instead of the async runtime's 1 ms timer.
    if target.blocking() || (plan.is_open() && n <= THREAD_PER_CONNECTION_MAX) {
        n
    } else {
        plan.threads.clamp(1, n)
    }
}

/// What the client threads share with the collector to start and stop together.
#[derive(Clone)]
pub(super) struct StartLine {
    /// Set when the run should end (Ctrl-C); clients finish their operation and stop.
    pub(super) stop: Arc<AtomicBool>,
    /// The start of the run, set once every client has connected.
    pub(super) t0: Arc<OnceLock<Instant>>,
    /// Every client thread and the collector meet here before the start.
    pub(super) barrier: Arc<Barrier>,
    /// Set when no client could connect: the threads leave at the barrier.
    pub(super) abort: Arc<AtomicBool>,
    /// When the clients began to connect: client k starts k/rate after it when paced.
    pub(super) connecting: Instant,
}

impl StartLine {
    pub(super) fn new(threads: usize) -> StartLine {
        StartLine {
            stop: Arc::new(AtomicBool::new(false)),
            t0: Arc::new(OnceLock::new()),
            barrier: Arc::new(Barrier::new(threads + 1)),
            abort: Arc::new(AtomicBool::new(false)),
            connecting: Instant::now(),
        }
    }
}

/// Wait until every client has tried to connect: how many failed, by class; an error if
/// they took longer than [`CONNECT_LIMIT`] besides the pacing.
pub(super) fn await_connections(
    rx: &Receiver<Msg>,
    n: usize,
    pace: Option<f64>,
) -> Result<ConnectPhase> {
    let mut ready = 0;
    let mut phase = ConnectPhase {
        rate: pace,
        ..ConnectPhase::default()
    };
    let paced = pace.map_or(Duration::ZERO, |r| Duration::from_secs_f64(n as f64 / r));
    let connect_deadline = Instant::now() + paced + CONNECT_LIMIT;
    while ready < n {
        let left = connect_deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Msg::Ready { result, .. }) => {
                ready += 1;
                if let Err(e) = result {
                    phase.failed += 1;
                    phase.errors[e.class] += 1;
                    if phase.first_error.is_none() {
                        phase.first_error = Some(with_class(&e));
                    }
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
    Ok(phase)
}

/// One OS thread's share of the clients, with what it needs to run them.
pub(super) struct ClientThread<T: Target> {
    pub(super) thread: usize,
    pub(super) ids: Vec<usize>,
    pub(super) target: Arc<T>,
    pub(super) peers: Arc<Vec<PeerTarget>>,
    pub(super) ops: Arc<Vec<OpSpec>>,
    pub(super) plan: LoadPlan,
    pub(super) slots: Slots,
    pub(super) counters: Arc<InsertCounters>,
    pub(super) timeline: Timeline,
    pub(super) start: StartLine,
    pub(super) tx: Sender<Msg>,
}

impl<T: Target> ClientThread<T> {
    pub(super) fn run(self) {
        crate::clock::precise_timers_for_this_thread();
        if let Some(s) = self.plan.client_slice {
            slice::request(s);
        }
        match runtime() {
            Ok(rt) => rt.block_on(self.clients()),
            Err(e) => {
                for &id in &self.ids {
                    let error = OpError::new(crate::vocab::ErrorClass::Other, e.to_string());
                    let _ = self.tx.send(Msg::Ready {
                        client: id,
                        result: Err(error),
                    });
                }
                self.start.barrier.wait();
            }
        }
    }

    /// Open the thread's connections, `--pipeline` streams to each, telling the collector
    /// each client's result.
    async fn connect_all(&self) -> Opened<T::Session> {
        let codec = pipe::codec_for(&*self.target, &self.plan, &self.ops);
        let (mut sessions, mut batched) = (Vec::new(), Vec::new());
        let pace = self.plan.connect_pace();
        let p = self.plan.pipeline.max(1);
        for group in self.ids.chunks(p) {
            let connection = group[0] / p;
            if let Some(rate) = pace {
                let at = self.start.connecting + Duration::from_secs_f64(connection as f64 / rate);
                tokio::time::sleep_until(at.into()).await;
            }
            let opened = match codec {
                Some(_) => self.target.connect_batched().await.map(|b| {
                    batched.push(Some(b));
                }),
                None => open_shared(&*self.target, p).await.map(|shared| {
                    sessions.extend(shared.into_iter().map(Some));
                }),
            };
            for &id in group {
                let _ = self.tx.send(Msg::Ready {
                    client: id,
                    result: opened.clone(),
                });
            }
            if opened.is_err() {
                batched.push(None);
                sessions.extend(group.iter().map(|_| None));
            }
        }
        match codec {
            Some(codec) => Opened::Batched(codec, batched),
            None => Opened::Sessions(sessions),
        }
    }

    /// Connect every client, wait at the start line, then run them all to the end.
    async fn clients(&self) {
        let opened = self.connect_all().await;
        self.start.barrier.wait();
        if self.start.abort.load(Ordering::SeqCst) {
            return;
        }
        let Some(&t0) = self.start.t0.get() else {
            return;
        };
        // The start on the hot loop's clock, as the rig monitor places it.
        let q0 = crate::clock::from_std(t0);
        // A client alone on its thread may wait with a blocking sleep; so may the batch
        // driver's connection (its streams run as one future) when it is alone there.
        let alone = match &opened {
            Opened::Batched(..) => self.plan.pipeline.max(1),
            Opened::Sessions(_) => 1,
        };
        let exclusive = self.ids.len() == alone;
        let ids: Arc<[usize]> = self.ids.as_slice().into();
        let shelf = RefCell::new(Shelf::new(
            self.thread,
            self.ops.len(),
            ids,
            self.tx.clone(),
        ));
        let turns = Turns::default();
        let profile = (!self.plan.stages.is_empty()).then(|| self.plan.profile());
        let ctxs: Vec<ClientCtx<'_>> = (self.ids.iter().enumerate())
            .map(|(local, &id)| ClientCtx {
                id,
                local,
                shelf: &shelf,
                ops: &self.ops,
                peers: &self.peers,
                plan: &self.plan,
                timeline: self.timeline.clone(),
                slots: self.slots,
                counters: &self.counters,
                stop: &self.start.stop,
                q0,
                exclusive,
                turns: &turns,
                profile: profile.as_ref(),
            })
            .collect();
        let target = &*self.target;
        match opened {
            Opened::Sessions(sessions) => {
                let clients = ctxs.iter().zip(sessions);
                // Only the clients woken are polled, as for the batch driver below: at 30 or
                // fewer, `join_all` polls every one on each wake-up (HTTP/2 with 25 clients
                // a thread: docs/performance.md).
                let mut clients: FuturesUnordered<_> = clients
                    .map(|(ctx, session)| client::run(target, session, ctx))
                    .collect();
                turns
                    .run(async { while clients.next().await.is_some() {} })
                    .await;
            }
            Opened::Batched(codec, conns) => {
                let p = self.plan.pipeline.max(1);
                let conns = ctxs.chunks(p).zip(conns);
                let conns = conns.map(|(group, conn)| pipe::drive(target, codec, conn, group));
                // Only the connections woken are polled: `join_all` polls all of its (up to
                // 30) futures whenever one is woken (25 a thread at 50 connections); this
                // took 0.86x its user time a request pipelined (docs/performance.md).
                let mut conns: FuturesUnordered<_> = conns.collect();
                while conns.next().await.is_some() {}
            }
        }
    }
}

/// A thread's connections: sessions (one per client stream), or connections for the batch
/// driver (one per `--pipeline` group of streams).
enum Opened<S> {
    Sessions(Vec<Option<S>>),
    Batched(&'static Codec, Vec<Option<Batched>>),
}

/// One connection for `p` client streams: a session of its own when `p` is 1, else `p`
/// handles on one shared connection (`--pipeline`).
async fn open_shared<T: Target>(target: &T, p: usize) -> Result<Vec<T::Session>, OpError> {
    if p == 1 {
        return target.connect().await.map(|s| vec![s]);
    }
    let shared = target.connect_shared(p).await?;
    if shared.len() != p {
        return Err(OpError::new(
            crate::vocab::ErrorClass::Other,
            format!("the target opened {} handles for {p} streams", shared.len()),
        ));
    }
    Ok(shared)
}
