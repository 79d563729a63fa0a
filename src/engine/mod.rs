//! The engine: clients, arrival schedules, stop conditions and the interval collector.
//!
//! Every client runs on an OS thread of its own with a single-threaded async runtime, so
//! blocking targets never stall an executor and network targets can still be async. The
//! engine is generic over the target type, so the hot path is monomorphised (no `dyn`).
//! The clients of a thread record into shared counters, which the thread reports once per
//! interval; the collector (the calling thread) merges them exactly, emits interval records
//! in order, and builds the totals.

pub mod client;
mod load_plan;
pub(crate) mod pipe;
pub mod rig;
pub mod shelf;
pub mod slice;
pub mod spill;
pub mod timeline;
pub mod turns;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Result};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::stats::{new_hist, Hist, OpCounters};
use crate::targets::peer::PeerTarget;
use crate::targets::pipelined::{Batched, Codec};
use crate::targets::{Session, Target};
use crate::vocab::{ErrorCounts, NativeOp, Op, OpError, RunStep, ValueKind};
use crate::workload::ycsb::InsertCounters;
use crate::workload::{DataSpec, GenState, OpSpec, VerifySpec};
use client::ClientCtx;
pub use load_plan::{
    share, Arrivals, Connection, LoadPlan, Mode, Shard, DEFAULT_CONNECT_RATE, PACED_FROM,
};
use shelf::Shelf;
use spill::{IntervalBrief, IntervalStore};
use timeline::Timeline;
use turns::Turns;

/// Set by the Ctrl-C handler; the collector turns it into a stop of the current run.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How long clients get to finish their operation after a stop before they are abandoned.
const GRACE: Duration = Duration::from_secs(3);
/// How long every client together gets to connect (besides the time pacing takes).
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

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
}

/// What the collector hands out as the run goes.
pub trait Observer {
    fn interval(&mut self, data: &IntervalData);
    /// Called about ten times a second with the time since the start.
    fn tick(&mut self, _elapsed: Duration) {}
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

/// No client could connect: the run fails (exit status 1), since it would measure nothing.
#[derive(Debug, thiserror::Error)]
#[error("none of the {clients} clients could connect; the first error: {first}")]
pub struct NoClientConnected {
    pub clients: usize,
    pub first: String,
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
            }));
        }
        Ok(out)
    }
}

/// What happened before the measured run: setup, server version, data load.
pub struct Prepared {
    pub server_version: Option<String>,
    pub loaded: Option<(u64, Duration)>,
    /// The setup statements: how many, the rows they changed, and their time.
    pub setup: Option<(usize, u64, Duration)>,
    /// After the setup or load: the tables the target settled ([`Session::settle`]), and
    /// the time it took.
    pub settled: Option<(u64, Duration)>,
    /// The workload's `before_run` steps: what they did, and the time.
    pub before_run: Option<BeforeRun>,
}

/// The `before_run` steps of a run, as carried out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeforeRun {
    /// Tables vacuumed (steps the server had nothing to do for are not counted).
    pub vacuumed: u64,
    pub emptied: u64,
    /// `{ sql = "..." }` steps run.
    pub statements: u64,
    pub took: Duration,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// How far [`prepare`] is, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadProgress {
    /// `done` of `of` setup statements ran, changing `rows` rows so far.
    Setup { done: u64, of: u64, rows: u64 },
    /// `done` of `of` data records loaded.
    Data { done: u64, of: u64 },
}

/// Connect once, create the namespace, read the server version, load the data and, unless
/// `settle` is false, settle what the setup and load wrote ([`Session::settle`]).
pub fn prepare<T: Target>(
    target: &T,
    setup: &[NativeOp<ValueKind>],
    before_run: &[RunStep],
    settle: bool,
    data: Option<&DataSpec>,
    seed: u64,
    progress: &mut dyn FnMut(LoadProgress),
) -> Result<Prepared> {
    runtime()?.block_on(async {
        let mut session = connect(target).await?;
        session
            .setup()
            .await
            .map_err(|e| anyhow!("setting up: {}", e.message))?;
        let started = Instant::now();
        let mut rows = 0;
        if !setup.is_empty() {
            progress(LoadProgress::Setup {
                done: 0,
                of: setup.len() as u64,
                rows,
            });
        }
        for (i, statement) in setup.iter().enumerate() {
            let op = Op::Native {
                op: statement,
                args: &[],
                capture: false,
            };
            rows += session
                .execute(&op)
                .await
                .map_err(|e| anyhow!("setup statement failed: {}", e.message))?
                .rows;
            progress(LoadProgress::Setup {
                done: i as u64 + 1,
                of: setup.len() as u64,
                rows,
            });
        }
        let setup = (!setup.is_empty()).then(|| (setup.len(), rows, started.elapsed()));
        let server_version = session.server_version().await;
        let loaded =
            match data {
                Some(d) => {
                    let started = Instant::now();
                    let mut rng = SmallRng::seed_from_u64(client::mix_seed(seed, u64::MAX));
                    let mut gen = GenState::new(0, 1, 8);
                    let mut batch = Vec::with_capacity(d.batch);
                    let mut done = 0;
                    progress(LoadProgress::Data { done, of: d.count });
                    if let Some(layout) = d.records {
                        session
                            .create_records(layout)
                            .await
                            .map_err(|e| anyhow!("making the record store: {}", e.message))?;
                        let mut records: Vec<(String, Vec<Vec<u8>>)> = Vec::with_capacity(d.batch);
                        while done < d.count {
                            records.clear();
                            let n = (d.count - done).min(d.batch as u64);
                            for _ in 0..n {
                                let mut key = String::new();
                                d.key.render_str(&mut rng, &mut gen, &mut key);
                                let values = (0..layout.fields)
                                    .map(|_| {
                                        let mut value = Vec::new();
                                        d.value.render_bytes(&mut rng, &mut gen, &mut value);
                                        value
                                    })
                                    .collect();
                                records.push((key, values));
                            }
                            session.load_records(&records).await.map_err(|e| {
                                anyhow!("loading records after {done}: {}", e.message)
                            })?;
                            done += n;
                            progress(LoadProgress::Data { done, of: d.count });
                        }
                    }
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
                        session.load(&batch).await.map_err(|e| {
                            anyhow!("loading data after {done} records: {}", e.message)
                        })?;
                        done += n;
                        progress(LoadProgress::Data { done, of: d.count });
                    }
                    Some((done, started.elapsed()))
                }
                None => None,
            };
        let settled = if settle && (setup.is_some() || loaded.is_some()) {
            let started = Instant::now();
            let n = session
                .settle()
                .await
                .map_err(|e| anyhow!("settling the loaded tables: {}", e.message))?;
            (n > 0).then(|| (n, started.elapsed()))
        } else {
            None
        };
        let before_run = if before_run.is_empty() {
            None
        } else {
            let started = Instant::now();
            let (mut vacuumed, mut emptied, mut statements) = (0, 0, 0);
            for step in before_run {
                let done = session
                    .before_run(step)
                    .await
                    .map_err(|e| anyhow!("before the run, {}: {}", step.describe(), e.message))?;
                match step {
                    RunStep::Vacuum(_) => vacuumed += u64::from(done),
                    RunStep::Empty(_) => emptied += u64::from(done),
                    RunStep::Sql(_) => statements += u64::from(done),
                }
            }
            Some(BeforeRun {
                vacuumed,
                emptied,
                statements,
                took: started.elapsed(),
            })
        };
        Ok(Prepared {
            server_version,
            loaded,
            setup,
            settled,
            before_run,
        })
    })
}

/// Run each `[[verify]]`'s queries on one session after the run: per check, the first row of
/// each query as text (its columns joined by `,`).
pub fn verify<T: Target>(target: &T, checks: &[VerifySpec]) -> Result<Vec<Vec<String>>> {
    if checks.is_empty() {
        // No session: some targets (redb) allow only one open at a time.
        return Ok(Vec::new());
    }
    runtime()?.block_on(async {
        let mut session = connect(target).await?;
        let mut out = Vec::new();
        for check in checks {
            let mut rows = Vec::new();
            for query in &check.queries {
                let op = Op::Native {
                    op: query,
                    args: &[],
                    capture: true,
                };
                let got = session
                    .execute(&op)
                    .await
                    .map_err(|e| anyhow!("verify '{}' query failed: {}", check.name, e.message))?;
                let text: Vec<String> = got
                    .captured
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect();
                rows.push(text.join(","));
            }
            out.push(rows);
        }
        Ok(out)
    })
}

/// Sizes the per-client generator state needs.
#[derive(Debug, Clone, Copy)]
pub struct Slots {
    pub seq: usize,
    pub capture: usize,
    /// Where every `seq` generator starts (0, except in the later batches of a growth study).
    pub seq_offset: u64,
}

/// A connect failure's message with its error class, unless the target's message has it.
fn with_class(e: &OpError) -> String {
    let tag = format!("({})", e.class.name());
    if e.message.contains(&tag) {
        e.message.clone()
    } else {
        format!("{} {tag}", e.message)
    }
}

/// One session outside the measured run (setup, data load, cleanup).
async fn connect<T: Target>(target: &T) -> Result<T::Session> {
    target
        .connect()
        .await
        .map_err(|e| anyhow!("{}", with_class(&e)))
}

/// Remove loadrig's namespace from the target; returns how many objects went.
pub fn cleanup<T: Target>(target: &T) -> Result<u64> {
    runtime()?.block_on(async {
        let mut session = connect(target).await?;
        session
            .cleanup()
            .await
            .map_err(|e| anyhow!("cleanup: {}", e.message))
    })
}

/// Run the measured part: start the clients, collect their intervals, return the data.
///
/// Blocking targets get one thread per client. Async targets share `plan.threads` threads,
/// each running its clients concurrently on one single-threaded runtime. The finished
/// intervals' histograms go to a temporary file in `spill_dir` ([`spill`]).
pub fn run<T: Target>(
    target: Arc<T>,
    peers: Arc<Vec<PeerTarget>>,
    ops: Arc<Vec<OpSpec>>,
    plan: &LoadPlan,
    slots: Slots,
    observer: &mut dyn Observer,
    spill_dir: &Path,
) -> Result<RunData> {
    let n = plan.clients();
    let threads = client_threads(&*target, plan);
    let timeline = plan.timeline();
    let start = StartLine::new(threads);
    let (tx, rx) = channel::<Msg>();
    let (shard, shards) = plan.shard.map_or((0, 1), |s| (s.index, s.count));
    let counters = Arc::new(InsertCounters::new(slots.seq, shard as u64, shards as u64));
    for t in 0..threads {
        let thread = ClientThread {
            thread: t,
            ids: thread_clients(plan, t, threads),
            target: Arc::clone(&target),
            peers: Arc::clone(&peers),
            ops: Arc::clone(&ops),
            plan: plan.clone(),
            slots,
            counters: Arc::clone(&counters),
            timeline,
            start: start.clone(),
            tx: tx.clone(),
        };
        std::thread::Builder::new()
            .name(format!("clients-{t}"))
            .spawn(move || thread.run())?;
    }
    drop(tx);

    let pace = plan.connect_pace();
    let mut connect = await_connections(&rx, n, pace)?;
    if connect.failed == n {
        start.abort.store(true, Ordering::SeqCst);
        start.barrier.wait();
        return Err(NoClientConnected {
            clients: n,
            first: connect.first_error.unwrap_or_default(),
        }
        .into());
    }
    connect.time = start.connecting.elapsed();
    crate::clock::calibrate();
    let (t0, late) = match plan.start_at {
        Some(at) => start_at(at),
        None => (Instant::now(), Duration::ZERO),
    };
    let _ = start.t0.set(t0);
    start.barrier.wait();

    let sizes = (0..threads)
        .map(|t| thread_clients(plan, t, threads).len())
        .collect();
    let store = IntervalStore::new(spill_dir);
    let mut data = collect(
        rx,
        sizes,
        &timeline,
        ops.len(),
        &start.stop,
        t0,
        observer,
        store,
    )?;
    data.connect = connect;
    data.connect.phases = target.connect_phases();
    data.late_start = plan.start_at.map(|_| late);
    Ok(data)
}

/// Wait for the wall-clock instant `at` and return it on the monotonic clock. A process
/// that gets there late starts now, on the grid of `at` (its first intervals are short or
/// empty), so that interval k spans the same wall-clock time in every shard; it returns by
/// how much it was late.
fn start_at(at: SystemTime) -> (Instant, Duration) {
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
fn thread_clients(plan: &LoadPlan, t: usize, threads: usize) -> Vec<usize> {
    (t..plan.connections())
        .step_by(threads)
        .flat_map(|c| plan.streams_of(c))
        .collect()
}

/// The most connections that get a thread each: open-loop workers, and closed-loop clients
/// under `--threads per-client`.
pub const THREAD_PER_CONNECTION_MAX: usize = 256;

/// How many threads carry the clients (a connection's streams are never split).
fn client_threads<T: Target>(target: &T, plan: &LoadPlan) -> usize {
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
struct StartLine {
    /// Set when the run should end (Ctrl-C); clients finish their operation and stop.
    stop: Arc<AtomicBool>,
    /// The start of the run, set once every client has connected.
    t0: Arc<OnceLock<Instant>>,
    /// Every client thread and the collector meet here before the start.
    barrier: Arc<Barrier>,
    /// Set when no client could connect: the threads leave at the barrier.
    abort: Arc<AtomicBool>,
    /// When the clients began to connect: client k starts k/rate after it when paced.
    connecting: Instant,
}

impl StartLine {
    fn new(threads: usize) -> StartLine {
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
fn await_connections(rx: &Receiver<Msg>, n: usize, pace: Option<f64>) -> Result<ConnectPhase> {
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
struct ClientThread<T: Target> {
    thread: usize,
    ids: Vec<usize>,
    target: Arc<T>,
    peers: Arc<Vec<PeerTarget>>,
    ops: Arc<Vec<OpSpec>>,
    plan: LoadPlan,
    slots: Slots,
    counters: Arc<InsertCounters>,
    timeline: Timeline,
    start: StartLine,
    tx: Sender<Msg>,
}

impl<T: Target> ClientThread<T> {
    fn run(self) {
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
        let ctxs: Vec<ClientCtx<'_>> = (self.ids.iter().enumerate())
            .map(|(local, &id)| ClientCtx {
                id,
                local,
                shelf: &shelf,
                ops: &self.ops,
                peers: &self.peers,
                plan: &self.plan,
                timeline: self.timeline,
                slots: self.slots,
                counters: &self.counters,
                stop: &self.start.stop,
                q0,
                exclusive,
                turns: &turns,
            })
            .collect();
        let target = &*self.target;
        match opened {
            Opened::Sessions(sessions) => {
                let clients = ctxs.iter().zip(sessions);
                let clients = clients.map(|(ctx, session)| client::run(target, session, ctx));
                turns.run(futures_util::future::join_all(clients)).await;
            }
            Opened::Batched(codec, conns) => {
                let p = self.plan.pipeline.max(1);
                let conns = ctxs.chunks(p).zip(conns);
                let conns = conns.map(|(group, conn)| pipe::drive(target, codec, conn, group));
                futures_util::future::join_all(conns).await;
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
fn collect(
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
