//! One client: owns its session and random generator; runs the operation loop.
//!
//! The hot path holds no shared lock: a client records into its thread's counters (the
//! [`Shelf`], shared only with the clients on the same single-threaded runtime), which hand
//! each interval to the collector once all of the thread's clients have passed its end.
//! Closed loop reads the clock once per operation: the end of one operation is the start
//! of the next, so the client's own work in between (recording the last result, choosing
//! and binding the next operation) counts in the next one's latency; a think time is not
//! counted, as the clock is read again after it. Open loop reads the clock at the actual
//! start and at the end, and measures latency from the intended start.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::schedule::Due;
use super::shelf::Shelf;
use super::stages::{self, Profile};
use super::timeline::Timeline;
use super::turns::Turns;
use super::{Connection, LoadPlan, Mode, Slots};
use crate::clock::{self, Instant};
use crate::stats::OpCounters;
use crate::targets::peer::{PeerSession, PeerTarget};
use crate::targets::{Session, Target};
use crate::vocab::{ErrorClass, ErrorCounts, Op, OpError, Outcome, StatementCounts, StatementKind};
use crate::workload::ycsb::InsertCounters;
use crate::workload::{GenState, OpKind, OpSpec, Repeat, Step, When};

/// Everything a client needs, borrowed from the engine for the run.
pub struct ClientCtx<'a> {
    pub id: usize,
    /// The client's place among its thread's clients (in the shelf).
    pub local: usize,
    /// The counters the thread's clients record into.
    pub shelf: &'a RefCell<Shelf>,
    pub ops: &'a [OpSpec],
    /// The workload's peers, by index (`Step::peer`).
    pub peers: &'a [PeerTarget],
    pub plan: &'a LoadPlan,
    pub timeline: Timeline,
    pub slots: Slots,
    /// The `{ycsb_counter}` counters all clients of the process share.
    pub counters: &'a Arc<InsertCounters>,
    pub stop: &'a AtomicBool,
    /// The start of the run, on the hot loop's clock.
    pub q0: Instant,
    /// The client has its thread to itself, so it may wait with a precise blocking sleep.
    pub exclusive: bool,
    /// The turn queue of the thread's clients.
    pub turns: &'a Turns,
    /// The stages, in a run with stages.
    pub profile: Option<&'a Profile>,
}

impl ClientCtx<'_> {
    /// Wait until `t`: precisely on a thread of our own, on the runtime's timer otherwise.
    pub async fn wait_until(&self, t: Instant) {
        if self.exclusive {
            clock::sleep_until(t);
        } else {
            tokio::time::sleep(t.saturating_duration_since(Instant::now())).await;
        }
    }

    /// This client's number among the whole run's clients (over every shard): its seeds,
    /// `seq` numbers, share of `--ops` and arrivals follow from it.
    pub fn stream(&self) -> u64 {
        (self.plan.first_client() + self.id) as u64
    }

    /// This client's share of `--ops`: the total dealt evenly over the run's clients, the
    /// first ones taking one more of the remainder. `None` without `--ops`.
    pub fn ops_share(&self) -> Option<u64> {
        let clients = self.plan.all_clients() as u64;
        self.plan
            .ops
            .map(|n| n / clients + u64::from(self.stream() < n % clients))
    }

    /// Let the thread's other clients run before the next operation. A client whose
    /// reply is already there when it reads never waits, so without this the first clients
    /// polled ran operation after operation while the rest queued (Jain's index 0.44 over
    /// 2,000 Redis clients); now the ready clients run in turn ([`Turns`]).
    #[inline]
    pub async fn take_turns(&self) {
        if !self.exclusive {
            self.turns.take().await;
        }
    }

    /// A moment on the hot loop's clock that is `d` after the start of the run.
    pub fn at(&self, d: Duration) -> Instant {
        self.q0 + d
    }

    /// The stage `t` falls in (0 without stages).
    pub fn timeline_stage(&self, t: Instant) -> usize {
        self.profile
            .map_or(0, |p| p.stage_at(t.saturating_duration_since(self.q0)))
    }
}

/// Mix a seed and a stream number into an independent seed (SplitMix64 finaliser).
pub fn mix_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a captured value holds when operations are bound without a target: only a server
/// can give the real one.
pub const CAPTURED: &[u8] = b"<captured>";

/// Chooses the next operation by weight and binds its parameters into reusable buffers.
pub struct Chooser<'a> {
    ops: &'a [OpSpec],
    weights: Option<WeightedIndex<f64>>,
    pub rng: SmallRng,
    pub gen: GenState,
    key: String,
    value: Vec<u8>,
    args: Vec<Vec<u8>>,
}

impl<'a> Chooser<'a> {
    pub fn new(
        ops: &'a [OpSpec],
        seed: u64,
        client: u64,
        clients: u64,
        slots: Slots,
        counters: Arc<InsertCounters>,
    ) -> Self {
        let weights = if ops.len() > 1 {
            WeightedIndex::new(ops.iter().map(|o| o.weight)).ok()
        } else {
            None
        };
        let mut gen = GenState::sharing(client, clients, slots.seq, counters);
        gen.captures = vec![Vec::new(); slots.capture];
        gen.offset = slots.seq_offset;
        Chooser {
            ops,
            weights,
            rng: SmallRng::seed_from_u64(mix_seed(seed, client)),
            gen,
            key: String::new(),
            value: Vec::new(),
            args: Vec::new(),
        }
    }

    /// The chooser of the client (or client stream) `ctx` runs.
    pub fn of(ctx: &ClientCtx<'a>) -> Self {
        Chooser::new(
            ctx.ops,
            ctx.plan.seed,
            ctx.stream(),
            ctx.plan.all_clients() as u64,
            ctx.slots,
            Arc::clone(ctx.counters),
        )
    }

    #[inline]
    pub fn pick(&mut self) -> usize {
        match &self.weights {
            Some(w) => w.sample(&mut self.rng),
            None => 0,
        }
    }

    /// Draw operation `i`'s `let` values into their slots: once per attempt, before any of
    /// its templates is bound.
    #[inline]
    pub fn draw_lets(&mut self, i: usize) {
        for l in &self.ops[i].lets {
            let mut value = std::mem::take(&mut self.gen.captures[l.slot]);
            value.clear();
            l.template
                .render_bytes(&mut self.rng, &mut self.gen, &mut value);
            self.gen.captures[l.slot] = value;
        }
    }

    /// Render a native step's arguments into the reusable buffers.
    pub fn bind_step(&mut self, step: &'a Step) -> Op<'_> {
        let n = step.templates.len();
        if self.args.len() < n {
            self.args.resize_with(n, Vec::new);
        }
        for (t, buf) in step.templates.iter().zip(self.args.iter_mut()) {
            buf.clear();
            t.render_bytes(&mut self.rng, &mut self.gen, buf);
        }
        Op::Native {
            op: step.op_now(&self.gen.captures),
            args: &self.args[..n],
            capture: !step.capture.is_empty(),
        }
    }

    /// Store what a step captured into its slots; a slot it returned no value for (no row)
    /// becomes empty.
    pub fn keep(&mut self, step: &Step, captured: Vec<Vec<u8>>) {
        let mut values = captured.into_iter();
        for slot in &step.capture {
            self.gen.captures[*slot] = values.next().unwrap_or_default();
        }
    }

    /// Whether a `when` step runs: its value is not empty (a missing row, SQL NULL, a Redis
    /// nil) and not `0`, `f` or `false` in any case.
    pub fn holds(&self, step: &Step) -> bool {
        step.when.iter().all(|w| self.true_now(*w))
    }

    /// Whether a `when` value is true (negated for `!NAME`).
    fn true_now(&self, w: When) -> bool {
        let v = self.gen.captures[w.slot].as_slice();
        let truth = !(v.is_empty()
            || v == b"0"
            || v.eq_ignore_ascii_case(b"f")
            || v.eq_ignore_ascii_case(b"false"));
        truth != w.negate
    }

    /// Whether the rollback step after `step` (if it has one) is taken now.
    pub fn rolls_back(&self, step: &Step) -> bool {
        match step.rollback_after {
            None => false,
            Some(None) => true,
            Some(Some(w)) => self.true_now(w),
        }
    }

    /// Choose and bind the next operation without a target (`loadrig ops`): `send` gets
    /// every [`Op`] the client's session would receive for it, in order (a transaction's
    /// `Begin`, steps and `Commit`, `steps` without them; nothing for `connect` and
    /// `authenticate`, which send no `Op`), as if every step succeeded at its first attempt. Values a step captures come
    /// from a server, so each capture slot holds [`CAPTURED`] instead. Returns the
    /// operation's index. The choices and draws are the ones [`run`] makes.
    pub fn next_offline(&mut self, send: &mut impl FnMut(&Op<'_>)) -> usize {
        // The operation before has ended.
        self.gen.acknowledge();
        let i = self.pick();
        self.draw_lets(i);
        let ops = self.ops;
        match &ops[i].kind {
            OpKind::Connect | OpKind::Authenticate => {}
            OpKind::Native(step) => self.step_offline(step, send),
            OpKind::Tx(steps) | OpKind::Steps(steps) => {
                let transaction = matches!(ops[i].kind, OpKind::Tx(_));
                if transaction {
                    send(&Op::Begin);
                }
                let mut k = 0;
                while k < steps.len() {
                    if steps[k].commit_before {
                        send(&Op::Commit);
                        send(&Op::Begin);
                    }
                    let (passes, len) = self.passes(&steps[k]);
                    for pass in 1..=passes {
                        self.gen.iteration = pass;
                        for step in &steps[k..k + len] {
                            self.step_offline(step, send);
                            if self.rolls_back(step) {
                                send(&Op::Rollback);
                                return i;
                            }
                        }
                    }
                    k += len;
                }
                if transaction {
                    send(&Op::Commit);
                }
            }
            _ => send(&self.bind(i)),
        }
        i
    }

    /// How many passes over how many steps from `step`: a `repeat` group's count, drawn
    /// now, and length; one pass over `step` alone otherwise.
    pub fn passes(&mut self, step: &Step) -> (u64, usize) {
        let Some(Repeat { count, len }) = &step.repeat else {
            return (1, 1);
        };
        let mut text = std::mem::take(&mut self.key);
        text.clear();
        count.render_str(&mut self.rng, &mut self.gen, &mut text);
        // The compiler admits only whole numbers; a let value that is not one runs no pass.
        let passes = text.trim().parse().unwrap_or(0);
        self.key = text;
        (passes, *len)
    }

    fn step_offline(&mut self, step: &'a Step, send: &mut impl FnMut(&Op<'_>)) {
        send(&self.bind_step(step));
        self.keep(step, vec![CAPTURED.to_vec(); step.capture.len()]);
    }

    /// Bind the parameters of a kv operation `i` (other kinds bind nothing here).
    #[inline(always)]
    pub fn bind(&mut self, i: usize) -> Op<'_> {
        let kind = &self.ops[i].kind;
        self.key.clear();
        self.value.clear();
        match kind {
            OpKind::Nop
            | OpKind::Connect
            | OpKind::Authenticate
            | OpKind::Tx(_)
            | OpKind::Steps(_) => return Op::Nop,
            OpKind::Native(step) => return self.bind_step(step),
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

/// The client's interval bookkeeping; its counters are its thread's [`Shelf`].
pub(super) struct Intervals<'a> {
    ctx: &'a ClientCtx<'a>,
    current: u64,
    next_boundary: Instant,
    last: u64,
    /// The last interval of the stage the operation in hand belongs to: the client does not
    /// move past it before the operation is recorded, so that an operation counts in the
    /// stage of its (intended) start. `u64::MAX` without stages.
    cap: u64,
    /// The stage `cap` is the last interval of.
    held: Option<usize>,
    /// A closed loop with client stages: the client is running (not waiting to join), so
    /// the intervals whose end it passes count it among their clients.
    pub(super) active: bool,
}

impl<'a> Intervals<'a> {
    pub(super) fn new(ctx: &'a ClientCtx<'a>) -> Self {
        Intervals {
            ctx,
            current: 0,
            next_boundary: ctx.at(ctx.timeline.end_of(0)),
            last: ctx.timeline.last().unwrap_or(u64::MAX),
            cap: u64::MAX,
            held: None,
            active: false,
        }
    }

    /// Move on to the interval `now` is in if it has passed the current one's end (not past
    /// the stage of the operation in hand).
    #[inline]
    pub(super) fn roll(&mut self, now: Instant) {
        if now >= self.next_boundary && self.current < self.last.min(self.cap) {
            let next = self
                .ctx
                .timeline
                .index_of(now.saturating_duration_since(self.ctx.q0))
                .min(self.cap);
            self.ctx
                .shelf
                .borrow_mut()
                .advance(self.ctx.local, next, self.active);
            self.current = next;
            self.next_boundary = self.ctx.at(self.ctx.timeline.end_of(next));
        }
    }

    /// The operation in hand belongs to stage `stage`; `None`: the client may move on freely.
    #[inline]
    pub(super) fn hold(&mut self, stage: Option<usize>) {
        if self.held != stage {
            self.held = stage;
            self.cap = stage.map_or(u64::MAX, |s| self.ctx.timeline.last_of_stage(s));
        }
    }

    /// Record one completed operation `i` into the current interval's counters.
    #[inline]
    pub(super) fn record<R>(&self, i: usize, f: impl FnOnce(&mut OpCounters) -> R) -> R {
        f(self.ctx.shelf.borrow_mut().record(self.ctx.local, i))
    }

    /// The end of the current interval.
    pub(super) fn next_boundary(&self) -> Instant {
        self.next_boundary
    }

    pub(super) fn measuring(&self) -> bool {
        !self.ctx.timeline.is_warmup(self.current)
    }

    /// The client ends at `end`; `missed`: its arrivals never started, by stage.
    pub(super) fn finish(self, end: Instant, missed: Vec<u64>) {
        let end = end.saturating_duration_since(self.ctx.q0);
        self.ctx
            .shelf
            .borrow_mut()
            .finish(self.ctx.local, end, missed, self.active);
    }
}

/// Owns the client's session and runs one whole operation: binding, transactions,
/// retries, per-operation connections and reconnects with backoff.
struct Worker<'a, T: Target> {
    target: &'a T,
    session: Option<T::Session>,
    per_op: bool,
    chooser: Chooser<'a>,
    /// Retries (by the class retried), reconnects and statements since the caller last
    /// took them.
    retries: ErrorCounts,
    reconnects: u64,
    statements: StatementCounts,
    /// After a failed reconnect, the next try waits until then.
    next_connect: Option<Instant>,
    backoff: Duration,
    peer_targets: &'a [PeerTarget],
    /// Sessions to the peers, opened on first use.
    peers: Vec<Option<PeerSession>>,
    /// The last failure came from a peer: the target's session is still good.
    peer_failed: bool,
    /// A chopped transaction's progress during one operation: the step after its last
    /// commit point (where a retry resumes) and the rows of the parts committed.
    resume: (usize, u64),
}

/// A lost connection is reopened after this, doubling up to `RECONNECT_MAX` while it fails
/// (a client's own session and the batch driver's shared one alike).
pub(super) const RECONNECT_FIRST: Duration = Duration::from_millis(10);
pub(super) const RECONNECT_MAX: Duration = Duration::from_secs(1);

impl<'a, T: Target> Worker<'a, T> {
    /// Run operation `i` in full, within the operation time limit if there is one.
    async fn perform(&mut self, i: usize, ctx: &ClientCtx<'_>) -> Result<Outcome, OpError> {
        let Some(limit) = ctx.plan.op_timeout else {
            return self.complete(i, ctx).await;
        };
        let answered = if self.target.blocking() {
            // A blocking operation cannot be interrupted: it is judged when it ends.
            let start = Instant::now();
            let result = self.complete(i, ctx).await;
            (start.elapsed() <= limit).then_some(result)
        } else {
            tokio::time::timeout(limit, self.complete(i, ctx))
                .await
                .ok()
        };
        answered.unwrap_or_else(|| {
            // The sessions' protocol state is unknown: replace them before the next operation.
            self.session = None;
            self.peers.iter_mut().for_each(|p| *p = None);
            Err(OpError::new(
                ErrorClass::Timeout,
                format!(
                    "no answer within {} (op timeout)",
                    humantime::format_duration(limit)
                ),
            ))
        })
    }

    /// What `complete` and `attempt` do for a transaction that needs no retry, time limit or
    /// connect, without their layers of futures, which made a transaction's code too large for the instruction cache
    /// (docs/performance.md).
    async fn tx_alone(&mut self, i: usize, steps: &'a [Step]) -> Result<Outcome, OpError> {
        self.resume = (0, 0);
        self.peer_failed = false;
        self.chooser.draw_lets(i);
        let result = self.tx(steps, true).await;
        if self.lost_session(&result) {
            self.session = None;
        }
        result
    }

    /// `result` lost the target's session (not a peer's), which is then replaced before the
    /// next operation.
    fn lost_session(&self, result: &Result<Outcome, OpError>) -> bool {
        matches!(result, Err(e) if e.class == ErrorClass::Connect) && !self.peer_failed
    }

    /// Run operation `i` in full: connecting first if needed, transactions, retries.
    async fn complete(&mut self, i: usize, ctx: &ClientCtx<'_>) -> Result<Outcome, OpError> {
        if self.session.is_none() {
            if let Some(at) = self.next_connect {
                ctx.wait_until(at).await;
            }
            // Boxed, here and at the other connects: a connect (TCP, TLS, the login) is the
            // largest state of an operation's future and rare, and inline it doubled the
            // future that every transaction allocates and copies (4,680 bytes against 2,560).
            match Box::pin(self.target.connect()).await {
                Ok(s) => {
                    self.session = Some(s);
                    if !self.per_op {
                        self.reconnects += 1;
                    }
                    self.next_connect = None;
                    self.backoff = RECONNECT_FIRST;
                }
                Err(e) => {
                    if !self.per_op {
                        self.next_connect = Some(Instant::now() + self.backoff);
                        self.backoff = (self.backoff * 2).min(RECONNECT_MAX);
                    }
                    return Err(e);
                }
            }
        }
        let spec = &self.chooser.ops[i];
        let mut attempt = 0;
        self.resume = (0, 0);
        let result = loop {
            let result = self.attempt(i).await;
            match (&result, &spec.retry) {
                (Err(e), Some(retry)) if retry.on.contains(&e.class) && attempt < retry.max => {
                    attempt += 1;
                    self.retries[e.class] += 1;
                    ctx.wait_until(Instant::now() + retry.backoff * attempt)
                        .await;
                }
                _ => break result,
            }
        };
        if self.per_op || self.lost_session(&result) {
            // A lost connection is replaced before the next operation.
            self.session = None;
        }
        result
    }

    async fn attempt(&mut self, i: usize) -> Result<Outcome, OpError> {
        self.peer_failed = false;
        let ops = self.chooser.ops;
        if self.resume.0 == 0 {
            self.chooser.draw_lets(i);
        }
        match &ops[i].kind {
            OpKind::Tx(steps) => return self.tx(steps, true).await,
            OpKind::Steps(steps) => return self.tx(steps, false).await,
            OpKind::Native(step) if step.peer.is_some() => {
                let out = self.step(step).await?.unwrap_or_default();
                return Ok(self.kept(step, out));
            }
            _ => {}
        }
        let Worker {
            target,
            session,
            chooser,
            statements,
            ..
        } = self;
        let Some(session) = session.as_mut() else {
            return Err(not_connected());
        };
        if let Some(kind) = ops[i].kind.statement_kind() {
            statements.add(kind);
        }
        match &ops[i].kind {
            OpKind::Connect => Box::pin(target.connect())
                .await
                .map(|_closed_on_drop| Outcome::rows(1)),
            OpKind::Authenticate => session.authenticate().await,
            OpKind::Native(step) => {
                let op = chooser.bind_step(step);
                let out = session.execute(&op).await?;
                Ok(if step.capture.is_empty() {
                    out
                } else {
                    let rows = out.rows;
                    chooser.keep(step, out.captured);
                    Outcome::rows(rows)
                })
            }
            _ => {
                let op = chooser.bind(i);
                session.execute(&op).await
            }
        }
    }

    /// Store a step's captures; the operation's outcome is its rows.
    fn kept(&mut self, step: &Step, out: Outcome) -> Outcome {
        if !step.capture.is_empty() {
            self.chooser.keep(step, out.captured);
        }
        Outcome::rows(out.rows)
    }

    /// Run a transaction's steps from `self.resume`: at a commit point commit and begin
    /// again, so a failure after it rolls back only the part since, and a retry resumes there.
    /// Without a `transaction` (`steps`) the same walk sends no BEGIN, COMMIT or ROLLBACK:
    /// each statement commits on its own, and a retry starts over (no commit points).
    async fn tx(&mut self, steps: &'a [Step], transaction: bool) -> Result<Outcome, OpError> {
        let (from, mut rows) = self.resume;
        if transaction {
            self.primary(&Op::Begin).await?;
        }
        let mut k = from;
        while k < steps.len() {
            if steps[k].commit_before && k > from {
                self.commit().await?;
                self.resume = (k, rows);
                self.primary(&Op::Begin).await?;
            }
            let (passes, len) = self.chooser.passes(&steps[k]);
            for pass in 1..=passes {
                self.chooser.gen.iteration = pass;
                for step in &steps[k..k + len] {
                    match self.step(step).await {
                        Ok(Some(out)) => rows += self.kept(step, out).rows,
                        Ok(None) => {}
                        Err(e) => {
                            if transaction {
                                let _ = self.primary(&Op::Rollback).await;
                            }
                            return Err(e);
                        }
                    }
                    if self.chooser.rolls_back(step) {
                        // A rollback step: the transaction (since its last commit point) is
                        // undone and the operation ends here, a success counted as rolled back.
                        self.primary(&Op::Rollback).await?;
                        return Ok(Outcome {
                            rolled_back: true,
                            ..Outcome::rows(rows)
                        });
                    }
                }
            }
            k += len;
        }
        if transaction {
            self.commit().await?;
        }
        Ok(Outcome::rows(rows))
    }

    async fn commit(&mut self) -> Result<(), OpError> {
        if let Err(e) = self.primary(&Op::Commit).await {
            let _ = self.primary(&Op::Rollback).await;
            return Err(e);
        }
        Ok(())
    }

    /// Send `op` on the target's session.
    async fn primary(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        self.statements.add(StatementKind::Other);
        match self.session.as_mut() {
            Some(s) => s.execute(op).await,
            None => Err(not_connected()),
        }
    }

    /// Run one native step where it goes, the target or a peer; `None` when its `when`
    /// value says to skip it. A skipped step's captures become empty, so a later `when` on
    /// them skips too instead of reading what an earlier operation left there.
    async fn step(&mut self, step: &'a Step) -> Result<Option<Outcome>, OpError> {
        if !self.chooser.holds(step) {
            self.chooser.keep(step, Vec::new());
            return Ok(None);
        }
        let Some(p) = step.peer else {
            let Worker {
                session,
                chooser,
                statements,
                ..
            } = self;
            let Some(session) = session.as_mut() else {
                return Err(not_connected());
            };
            statements.add(step.statement);
            return session.execute(&chooser.bind_step(step)).await.map(Some);
        };
        if self.peers[p].is_none() {
            match Box::pin(self.peer_targets[p].connect()).await {
                Ok(s) => self.peers[p] = Some(s),
                Err(e) => {
                    self.peer_failed = true;
                    return Err(e);
                }
            }
        }
        let Worker { peers, chooser, .. } = self;
        let Some(peer) = peers[p].as_mut() else {
            return Err(not_connected());
        };
        // Boxed: a peer may be any target, and the largest of their sessions' futures (2 KB)
        // was, inline, part of the future every transaction allocates (`Worker::perform`):
        // with this box and tokio-postgres's (`PgSession::execute`), 792 bytes, not 2,560.
        let result = Box::pin(peer.execute(&chooser.bind_step(step))).await;
        if let Err(e) = &result {
            self.peer_failed = true;
            if e.class == ErrorClass::Connect {
                self.peers[p] = None;
            }
        }
        result.map(Some)
    }

    /// Move the retries and reconnects counted since the last call into `c`.
    #[inline]
    fn settle(&mut self, c: &mut OpCounters) {
        if self.reconnects > 0 || self.retries != ErrorCounts::default() {
            c.retries += &std::mem::take(&mut self.retries);
            c.reconnects += std::mem::take(&mut self.reconnects);
        }
        c.statements += &std::mem::take(&mut self.statements);
    }
}

fn not_connected() -> OpError {
    OpError::new(ErrorClass::Connect, "not connected")
}

/// Record an operation that took `latency`; `lookup`: it reads a record by its key
/// ([`OpKind::is_lookup`]), so no row read means no record found.
#[inline]
pub(super) fn record(
    c: &mut OpCounters,
    result: Result<Outcome, OpError>,
    latency: Duration,
    lookup: bool,
) {
    let ns = latency.as_nanos() as u64;
    match result {
        Ok(outcome) => {
            c.ok += 1;
            c.rolled_back += u64::from(outcome.rolled_back);
            c.rows += outcome.rows;
            c.empty += u64::from(outcome.rows == 0);
            let _ = c.latency.record(ns);
            if lookup && outcome.rows == 0 {
                c.record_missing(ns);
            }
        }
        Err(e) => c.record_failure(&e, ns),
    }
}

/// Run operation `i` on `worker`. The common case (one plain operation, its `let` values
/// if any, no retry policy, no time limit, an open persistent session) is written out in
/// place so it compiles into the client loop; a transaction that needs nothing more (an
/// open session, no retry policy, no time limit) goes through [`Worker::tx_alone`], and
/// everything else through [`Worker::perform`] (three nested futures, each a state machine
/// polled per operation), both boxed: inline, their states (retries, reconnects,
/// transactions, the time limit) made every client's future 4,832 bytes instead of 2,104
/// for Redis, and at 10,000 clients on a thread each poll of a client missed the cache on
/// them.
macro_rules! perform {
    ($worker:expr, $i:expr, $ctx:expr) => {{
        let w = &mut *$worker;
        let ops = w.chooser.ops;
        let spec = &ops[$i];
        // Nothing of `Worker::complete` needed: no connect, retry or time limit.
        let simple =
            w.session.is_some() && spec.retry.is_none() && $ctx.plan.op_timeout.is_none();
        let result = if simple && spec.kind.is_plain() {
            let kind = spec.kind.statement_kind();
            let Worker {
                session,
                chooser,
                statements,
                ..
            } = w;
            match session.as_mut() {
                Some(s) => {
                    if let Some(kind) = kind {
                        statements.add(kind);
                    }
                    // As `Worker::attempt` does: the lets first, then the operation's values.
                    chooser.draw_lets($i);
                    let op = chooser.bind($i);
                    let result = s.execute(&op).await;
                    if matches!(&result, Err(e) if e.class == ErrorClass::Connect) {
                        // A lost connection is replaced before the next operation.
                        *session = None;
                    }
                    result
                }
                None => Err(OpError::new(ErrorClass::Connect, "not connected")),
            }
        } else if let (true, OpKind::Tx(steps)) = (simple, &spec.kind) {
            Box::pin(w.tx_alone($i, steps)).await
        } else {
            Box::pin(w.perform($i, $ctx)).await
        };
        // Its inserts have ended, failed or not (as YCSB acknowledges in a `finally`).
        w.chooser.gen.acknowledge();
        result
    }};
}

/// Run one client to the end of the run.
pub async fn run<T: Target>(target: &T, session: Option<T::Session>, ctx: &ClientCtx<'_>) {
    let per_op = ctx.plan.connection == Connection::PerOp;
    let mut worker = Worker {
        target,
        // Per-operation connections are opened inside each timed operation.
        session: if per_op { None } else { session },
        per_op,
        chooser: Chooser::of(ctx),
        retries: ErrorCounts::default(),
        statements: StatementCounts::default(),
        reconnects: 0,
        next_connect: None,
        backoff: RECONNECT_FIRST,
        peer_targets: ctx.peers,
        peers: ctx.peers.iter().map(|_| None).collect(),
        peer_failed: false,
        resume: (0, 0),
    };
    let quota = ctx.ops_share();
    let deadline = ctx.timeline.deadline.map(|d| ctx.at(d));
    match ctx.plan.mode {
        Mode::Closed { think, .. } => closed(&mut worker, ctx, quota, deadline, think).await,
        Mode::Open { .. } => open(&mut worker, ctx, quota, deadline).await,
    }
}

async fn closed<T: Target>(
    worker: &mut Worker<'_, T>,
    ctx: &ClientCtx<'_>,
    mut quota: Option<u64>,
    deadline: Option<Instant>,
    think: Duration,
) {
    let mut iv = Intervals::new(ctx);
    let mut now = Instant::now();
    // Think times of operations with a `pause`, drawn apart from the operations' values.
    let mut pauses = SmallRng::seed_from_u64(mix_seed(ctx.plan.seed ^ 0x7A1C_C0DE, ctx.stream()));
    // Client stages: when this client runs (it joins and leaves with the ramp).
    let mut turn = Turn::of(ctx);
    loop {
        if ctx.stop.load(Ordering::Relaxed)
            || quota == Some(0)
            || deadline.is_some_and(|d| now >= d)
        {
            break;
        }
        if let Some(t) = turn.as_mut() {
            match t.running(ctx, &mut iv, now, deadline).await {
                Some(at) => now = at,
                None => break,
            }
            if !iv.active {
                continue;
            }
        }
        let i = worker.chooser.pick();
        let pause = worker.chooser.ops[i].pause;
        if let Some(p) = pause.filter(|p| !p.keying.is_zero()) {
            // Keying time: before the operation, outside its latency.
            now = pause_until(ctx, &mut iv, now + p.keying, deadline).await;
            if ctx.stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) {
                break;
            }
        }
        // The end of one operation is the start of the next: one clock read per operation.
        let start = now;
        if turn.is_some() {
            // It counts in the stage it starts in.
            iv.roll(start);
            iv.hold(Some(ctx.timeline_stage(start)));
        }
        let result = perform!(worker, i, ctx);
        now = Instant::now();
        iv.roll(now);
        let lookup = worker.chooser.ops[i].lookup;
        iv.record(i, |c| {
            record(c, result, now - start, lookup);
            worker.settle(c);
        });
        if turn.is_some() {
            iv.hold(None);
            iv.roll(now);
        }
        if let Some(q) = quota.as_mut() {
            if iv.measuring() {
                *q -= 1;
            }
        }
        ctx.take_turns().await;
        if !think.is_zero() {
            ctx.wait_until(now + think).await;
            now = Instant::now();
        }
        if let Some(p) = pause.filter(|p| !p.think.is_zero()) {
            // A negative exponential of mean `think`, cut at ten times the mean.
            let u: f64 = pauses.random();
            let t = p.think.mul_f64((-(1.0 - u).ln()).min(10.0));
            now = pause_until(ctx, &mut iv, now + t, deadline).await;
        }
    }
    iv.finish(now, Vec::new());
}

/// When a closed-loop client runs in a run with client stages: from its join to its leave,
/// by its rank in the ramp (`stages::rank`). It connected before the run with the others;
/// waiting to join, it sends nothing.
struct Turn<'a> {
    profile: &'a Profile,
    rank: u64,
    /// Its current or next span of running, since the start; `None`: it does not run again.
    span: Option<(Duration, Duration)>,
}

impl<'a> Turn<'a> {
    fn of(ctx: &ClientCtx<'a>) -> Option<Turn<'a>> {
        let profile = ctx.profile?;
        if !matches!(ctx.plan.mode, Mode::Closed { .. }) {
            return None;
        }
        let (shards, all) = ctx
            .plan
            .shard
            .map_or((1, ctx.plan.clients()), |s| (s.count, s.clients));
        let rank = stages::rank(ctx.stream() as usize, all, shards);
        Some(Turn {
            profile,
            rank,
            span: profile.span_of(rank, Duration::ZERO),
        })
    }

    /// Whether the client runs at `now`: it joins when its span has begun (waiting for it if
    /// need be, its intervals handed on meanwhile) and leaves once it has ended (between
    /// operations, so an operation in hand is never cut). Returns the time it checked, or
    /// `None` when it does not run again before the end.
    async fn running(
        &mut self,
        ctx: &ClientCtx<'_>,
        iv: &mut Intervals<'_>,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Option<Instant> {
        let since = now.saturating_duration_since(ctx.q0);
        let (join, leave) = self.span?;
        if since >= leave {
            iv.roll(now);
            iv.active = false;
            self.span = self.profile.span_of(self.rank, since);
            return Some(now);
        }
        if since >= join {
            if !iv.active {
                iv.roll(now);
                iv.active = true;
            }
            return Some(now);
        }
        let at = pause_until(ctx, iv, ctx.at(join), deadline).await;
        if deadline.is_some_and(|d| at >= d) {
            return None;
        }
        Some(at)
    }
}

/// Wait until `until` (at most until the deadline or Ctrl-C), handing each interval that
/// ends on the way to the collector, so that a keying or think time of seconds holds up
/// neither the interval report nor the end of the run. Returns the time it stopped waiting.
async fn pause_until(
    ctx: &ClientCtx<'_>,
    iv: &mut Intervals<'_>,
    until: Instant,
    deadline: Option<Instant>,
) -> Instant {
    let until = deadline.map_or(until, |d| until.min(d));
    loop {
        let now = Instant::now();
        iv.roll(now);
        if now >= until || ctx.stop.load(Ordering::Relaxed) {
            return now;
        }
        let step = if iv.next_boundary > now {
            until.min(iv.next_boundary)
        } else {
            until
        };
        // Wake at least once a second to notice Ctrl-C.
        ctx.wait_until(step.min(now + Duration::from_secs(1))).await;
    }
}

/// Record an open-loop operation: response time from the intended start, service time from
/// the actual one, and how late it started.
#[inline]
pub(super) fn record_open(
    c: &mut OpCounters,
    result: Result<Outcome, OpError>,
    intended: Instant,
    start: Instant,
    end: Instant,
    late_after: Duration,
    lookup: bool,
) {
    if result.is_ok() {
        let _ = c.service.record((end - start).as_nanos() as u64);
    }
    record(c, result, end - intended, lookup);
    let lag = start.saturating_duration_since(intended);
    let _ = c.lag.record(lag.as_nanos() as u64);
    if lag > late_after {
        c.late += 1;
    }
}

async fn open<T: Target>(
    worker: &mut Worker<'_, T>,
    ctx: &ClientCtx<'_>,
    mut quota: Option<u64>,
    deadline: Option<Instant>,
) {
    let Some(mut due) = Due::of(ctx) else {
        return;
    };
    let staged = !ctx.plan.stages.is_empty();
    let mut iv = Intervals::new(ctx);
    let mut now = Instant::now();
    let mut missed = Vec::new();
    loop {
        if ctx.stop.load(Ordering::Relaxed) || quota == Some(0) {
            if staged {
                // Ended early (`--stop-when`, Ctrl-C): the arrivals already due never started.
                due.missed_before(Instant::now(), &mut missed);
            }
            break;
        }
        let intended = due.intended;
        if staged {
            // The operation counts in the stage of its intended start.
            iv.hold(Some(due.stage));
        }
        if let Some(d) = deadline {
            if intended >= d {
                break;
            }
            if now >= d {
                // Behind schedule at the end: count the arrivals that never started.
                due.missed_before(d, &mut missed);
                break;
            }
        }
        if now < intended {
            ctx.wait_until(intended.min(iv.next_boundary)).await;
            now = Instant::now();
            iv.roll(now);
            continue;
        }
        let i = worker.chooser.pick();
        let start = Instant::now();
        let result = perform!(worker, i, ctx);
        now = Instant::now();
        iv.roll(now);
        let lookup = worker.chooser.ops[i].lookup;
        iv.record(i, |c| {
            record_open(c, result, intended, start, now, due.late_after, lookup);
            worker.settle(c);
        });
        if let Some(q) = quota.as_mut() {
            if iv.measuring() {
                *q -= 1;
            }
        }
        ctx.take_turns().await;
        due.next();
    }
    iv.finish(now, missed);
}
