//! One client: owns its session, random generator and counters; runs the operation loop.
//!
//! The hot path holds no shared lock: counters are local, and at each interval boundary the
//! client hands its counters to the collector over a channel and starts fresh ones.
//! Closed loop reads the clock once per operation (the end of one is the start of the
//! next) unless the operation binds parameters first; open loop reads it at the actual
//! start and at the end, and measures latency from the intended start.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::Exp;

use super::pace;
use super::timeline::Timeline;
use super::{LoadPlan, Mode, Msg};
use crate::spec::{GenState, OpKind, OpSpec};
use crate::stats::OpCounters;
use crate::targets::{Op, Session};

/// Everything a client needs, borrowed from the engine for the run.
pub struct ClientCtx<'a> {
    pub id: usize,
    pub ops: &'a [OpSpec],
    pub plan: &'a LoadPlan,
    pub timeline: Timeline,
    pub seq_slots: usize,
    pub stop: &'a AtomicBool,
    pub t0: Instant,
    pub tx: Sender<Msg>,
}

/// Mix a seed and a stream number into an independent seed (SplitMix64 finaliser).
pub fn mix_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Chooses the next operation by weight and binds its parameters into reusable buffers.
pub struct Chooser<'a> {
    ops: &'a [OpSpec],
    weights: Option<WeightedIndex<f64>>,
    pub rng: SmallRng,
    pub gen: GenState,
    key: String,
    value: Vec<u8>,
}

impl<'a> Chooser<'a> {
    pub fn new(ops: &'a [OpSpec], seed: u64, client: u64, clients: u64, seq_slots: usize) -> Self {
        let weights = if ops.len() > 1 {
            WeightedIndex::new(ops.iter().map(|o| o.weight)).ok()
        } else {
            None
        };
        Chooser {
            ops,
            weights,
            rng: SmallRng::seed_from_u64(mix_seed(seed, client)),
            gen: GenState::new(client, clients, seq_slots),
            key: String::new(),
            value: Vec::new(),
        }
    }

    #[inline]
    pub fn pick(&mut self) -> usize {
        match &self.weights {
            Some(w) => w.sample(&mut self.rng),
            None => 0,
        }
    }

    /// Bind the parameters of operation `i`.
    #[inline]
    pub fn bind(&mut self, i: usize) -> Op<'_> {
        let kind = &self.ops[i].kind;
        self.key.clear();
        self.value.clear();
        match kind {
            OpKind::Nop => return Op::Nop,
            OpKind::Put { key, value } | OpKind::Update { key, value } => {
                key.render_str(&mut self.rng, &mut self.gen, &mut self.key);
                value.render_bytes(&mut self.rng, &mut self.gen, &mut self.value);
            }
            OpKind::Get { key } | OpKind::Delete { key } => {
                key.render_str(&mut self.rng, &mut self.gen, &mut self.key)
            }
        }
        let (key, value) = (self.key.as_str(), self.value.as_slice());
        match kind {
            OpKind::Put { .. } => Op::Put { key, value },
            OpKind::Update { .. } => Op::Update { key, value },
            OpKind::Get { .. } => Op::Get { key },
            _ => Op::Delete { key },
        }
    }
}

/// The client's interval bookkeeping.
struct Intervals<'a> {
    ctx: &'a ClientCtx<'a>,
    counters: Vec<OpCounters>,
    current: u64,
    next_boundary: Instant,
    last: u64,
}

impl<'a> Intervals<'a> {
    fn new(ctx: &'a ClientCtx<'a>) -> Self {
        Intervals {
            ctx,
            counters: fresh(ctx.ops.len()),
            current: 0,
            next_boundary: ctx.t0 + ctx.timeline.end_of(0),
            last: ctx.timeline.last().unwrap_or(u64::MAX),
        }
    }

    /// Hand the finished interval to the collector if `now` has passed its end.
    #[inline]
    fn roll(&mut self, now: Instant) {
        if now >= self.next_boundary && self.current < self.last {
            let next = self.ctx.timeline.index_of(now - self.ctx.t0);
            let counters = std::mem::replace(&mut self.counters, fresh(self.ctx.ops.len()));
            let _ = self.ctx.tx.send(Msg::Interval {
                client: self.ctx.id,
                index: self.current,
                counters,
                next,
            });
            self.current = next;
            self.next_boundary = self.ctx.t0 + self.ctx.timeline.end_of(next);
        }
    }

    fn measuring(&self) -> bool {
        !self.ctx.timeline.is_warmup(self.current)
    }

    fn finish(self, end: Instant, missed: u64) {
        let _ = self.ctx.tx.send(Msg::Done {
            client: self.ctx.id,
            index: self.current,
            counters: self.counters,
            end: end.saturating_duration_since(self.ctx.t0),
            missed,
        });
    }
}

fn fresh(n: usize) -> Vec<OpCounters> {
    (0..n).map(|_| OpCounters::default()).collect()
}

/// Run one client to the end of the run.
pub async fn run<S: Session>(session: &mut S, ctx: &ClientCtx<'_>) {
    let clients = ctx.plan.clients() as u64;
    let mut chooser = Chooser::new(
        ctx.ops,
        ctx.plan.seed,
        ctx.id as u64,
        clients,
        ctx.seq_slots,
    );
    let quota = ctx
        .plan
        .ops
        .map(|n| n / clients + u64::from((ctx.id as u64) < n % clients));
    let deadline = ctx.timeline.deadline.map(|d| ctx.t0 + d);
    match ctx.plan.mode {
        Mode::Closed { think, .. } => {
            closed(session, ctx, &mut chooser, quota, deadline, think).await
        }
        Mode::Open { .. } => open(session, ctx, &mut chooser, quota, deadline).await,
    }
}

async fn closed<S: Session>(
    session: &mut S,
    ctx: &ClientCtx<'_>,
    chooser: &mut Chooser<'_>,
    mut quota: Option<u64>,
    deadline: Option<Instant>,
    think: Duration,
) {
    let mut iv = Intervals::new(ctx);
    let mut now = Instant::now();
    loop {
        if ctx.stop.load(Ordering::Relaxed)
            || quota == Some(0)
            || deadline.is_some_and(|d| now >= d)
        {
            break;
        }
        let i = chooser.pick();
        let fresh_clock = ctx.ops[i].kind.has_params();
        let op = chooser.bind(i);
        let start = if fresh_clock { Instant::now() } else { now };
        let result = session.execute(&op).await;
        now = Instant::now();
        iv.roll(now);
        let c = &mut iv.counters[i];
        match result {
            Ok(outcome) => {
                c.ok += 1;
                c.rows += outcome.rows;
                let _ = c.latency.record((now - start).as_nanos() as u64);
            }
            Err(e) => c.record_error(&e),
        }
        if let Some(q) = quota.as_mut() {
            if iv.measuring() {
                *q -= 1;
            }
        }
        if !think.is_zero() {
            pace::sleep_until(now + think);
            now = Instant::now();
        }
    }
    iv.finish(now, 0);
}

async fn open<S: Session>(
    session: &mut S,
    ctx: &ClientCtx<'_>,
    chooser: &mut Chooser<'_>,
    mut quota: Option<u64>,
    deadline: Option<Instant>,
) {
    let Mode::Open {
        rate,
        poisson,
        workers,
        late_after,
    } = ctx.plan.mode
    else {
        return;
    };
    // Worker k of M serves every M-th arrival (constant) or an independent Poisson stream
    // of rate R/M (their superposition is Poisson at rate R), like wrk2 per connection.
    let per_worker = rate / workers as f64;
    let mut arrivals =
        SmallRng::seed_from_u64(mix_seed(ctx.plan.seed ^ 0xA771_7A15, ctx.id as u64));
    let exp = Exp::new(per_worker).ok();
    let mut gap = || -> Duration {
        match (&exp, poisson) {
            (Some(e), true) => Duration::from_secs_f64(e.sample(&mut arrivals)),
            _ => Duration::from_secs_f64(1.0 / per_worker),
        }
    };
    let mut intended = ctx.t0
        + if poisson {
            gap()
        } else {
            Duration::from_secs_f64(ctx.id as f64 / rate)
        };
    let mut iv = Intervals::new(ctx);
    let mut now = Instant::now();
    let mut missed = 0;
    loop {
        if ctx.stop.load(Ordering::Relaxed) || quota == Some(0) {
            break;
        }
        if let Some(d) = deadline {
            if intended >= d {
                break;
            }
            if now >= d {
                // Behind schedule at the end: count the arrivals that never started.
                while intended < d {
                    missed += 1;
                    intended += gap();
                }
                break;
            }
        }
        if now < intended {
            pace::sleep_until(intended.min(iv.next_boundary));
            now = Instant::now();
            iv.roll(now);
            continue;
        }
        let i = chooser.pick();
        let op = chooser.bind(i);
        let start = Instant::now();
        let result = session.execute(&op).await;
        now = Instant::now();
        iv.roll(now);
        let c = &mut iv.counters[i];
        let lag = start.saturating_duration_since(intended);
        match result {
            Ok(outcome) => {
                c.ok += 1;
                c.rows += outcome.rows;
                let _ = c.latency.record((now - intended).as_nanos() as u64);
                let _ = c.service.record((now - start).as_nanos() as u64);
            }
            Err(e) => c.record_error(&e),
        }
        let _ = c.lag.record(lag.as_nanos() as u64);
        if lag > late_after {
            c.late += 1;
        }
        if let Some(q) = quota.as_mut() {
            if iv.measuring() {
                *q -= 1;
            }
        }
        intended += gap();
    }
    iv.finish(now, missed);
}
