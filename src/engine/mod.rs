//! The engine: clients, arrival schedules, stop conditions and the interval collector.
//!
//! Every client runs on an OS thread of its own with a single-threaded async runtime, so
//! blocking targets never stall an executor and network targets can still be async. The
//! engine is generic over the target type, so the hot path is monomorphised (no `dyn`).
//! The clients of a thread record into shared counters, which the thread reports once per
//! interval; the collector (the calling thread) merges them exactly, emits interval records
//! in order, and builds the totals.
//!
//! By job: the resolved load ([`load_plan`]), the sessions outside the measured run
//! ([`prepare()`], [`verify`], [`cleanup`]), the client threads and their start line
//! (`threads`), one client's loop ([`client`]) or a pipelined connection's (`pipe`), an
//! open-loop worker's arrivals (`schedule`), the collector (`collector`), and what a
//! finished run measured ([`RunData`]). [`run`] ties the threads and the collector together.

pub mod client;
mod collector;
pub mod load_plan;
pub(crate) mod pipe;
mod prepare;
pub mod rig;
mod run_data;
mod schedule;
pub mod shelf;
pub mod slice;
pub mod spill;
pub mod stages;
pub mod stop_when;
mod threads;
pub mod timeline;
pub mod turns;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::targets::peer::PeerTarget;
use crate::targets::Target;
use crate::workload::ycsb::InsertCounters;
use crate::workload::OpSpec;
use collector::{collect, Shape};
pub use collector::{Msg, Observer};
pub use load_plan::{
    share, Arrivals, Connection, LoadPlan, Mode, Shard, DEFAULT_CONNECT_RATE, PACED_FROM,
};
pub use prepare::{cleanup, prepare, verify, BeforeRun, LoadProgress, Prepared};
pub use run_data::{ConnectPhase, IntervalData, RunData, Stopped};
pub use schedule::arrivals;
use spill::IntervalStore;
pub use stages::{Profile, Stage, StageKind};
pub use stop_when::{StopFigure, StopWhen};
use threads::{
    await_connections, client_threads, start_at, thread_clients, ClientThread, StartLine,
};
pub use threads::{Slots, THREAD_PER_CONNECTION_MAX};

/// Set by the Ctrl-C handler; the collector turns it into a stop of the current run.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// No client could connect: the run fails (exit status 1), since it would measure nothing.
#[derive(Debug, thiserror::Error)]
#[error("none of the {clients} clients could connect; the first error: {first}")]
pub struct NoClientConnected {
    pub clients: usize,
    pub first: String,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
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
            timeline: timeline.clone(),
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
    let names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let mut data = collect(
        rx,
        sizes,
        Shape {
            timeline: &timeline,
            plan,
            names: &names,
        },
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
