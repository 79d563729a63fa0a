//! The batch driver: the P client streams of one `--pipeline` connection run as ONE future,
//! for targets whose replies come back in request order ([`Codec`]: Redis, PostgreSQL,
//! HTTP/1.1). Each turn, every stream without an operation in flight chooses and encodes
//! its next one into one buffer, the buffer goes out in one write, and every reply of one
//! read is decoded in place and recorded on the stream that sent the request, all with one
//! clock read: no session, task wake-up, channel or copy per operation (what
//! `redis-benchmark -P` saves by batching), while each operation is still timed on its own,
//! from its own send (the previous reply of its stream, as in the closed loop) to the read
//! that delivered its reply. Each stream keeps its own random generator, `{seq}` numbers
//! and share of `--ops`, exactly as when it runs on a shared session (`client::run`). With
//! `--pipeline-refill N` a turn writes only once N streams are free, so a server that
//! answers a few replies per read (nginx) still gets its requests N at a time, and the
//! client makes one write per N operations, as `redis-benchmark -P` and wrk's pipeline.lua
//! do; a free stream's next operation starts when it is written.
//!
//! In an open loop (`--rate`) each stream takes its arrivals from the schedule an ordinary
//! client would have (`schedule::Due`: the same rate law, seeds and share of the rate), so a
//! connection has at most P arrivals in flight, one per stream; an arrival whose stream is
//! still busy waits for it and starts late, and every operation is timed from its intended
//! start (no coordinated omission), with its service time from its first write and its
//! lag counted as an ordinary client's. A turn then writes the streams whose arrival has
//! come, and waits for replies or the next arrival, whichever is first.
//!
//! Not used with think times, time limits, or `--pipeline-refill` in an open loop, and
//! only when every operation of the workload is one the codec accepts; otherwise the
//! streams run on shared sessions (`targets::pipelined::Shared`). With one stream per
//! connection (`--pipeline 1`) only for codecs that say it is cheaper there
//! (`Codec::one_in_flight`). A reply the codec says ends the connection (`Codec::closes`)
//! makes the driver reconnect at once and write again the requests the server left unread
//! behind it, each still timed from its first write (closed loop) or its intended start
//! (open loop).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::client::{
    record, record_open, Chooser, ClientCtx, Intervals, RECONNECT_FIRST, RECONNECT_MAX,
};
use super::schedule::Due;
use super::{Connection, LoadPlan, Mode};
use crate::clock::Instant;
use crate::targets::pipelined::{BatchEnd, Batched, Codec, Context};
use crate::targets::readbuf::ReadBuf;
use crate::targets::tls::NetStream;
use crate::targets::Target;
use crate::vocab::{ErrorClass, OpError, Outcome};
use crate::workload::OpSpec;

/// The target's codec when this run's streams can go through the batch driver.
pub fn codec_for<T: Target>(target: &T, plan: &LoadPlan, ops: &[OpSpec]) -> Option<&'static Codec> {
    batch_driver(target, plan, ops).ok()
}

/// The target's codec for this run, or why the batch driver cannot run it (for a target
/// option that needs the driver: `Target::needs_batch_driver`).
pub fn batch_driver<T: Target>(
    target: &T,
    plan: &LoadPlan,
    ops: &[OpSpec],
) -> Result<&'static Codec, String> {
    let codec = target
        .batch_codec()
        .ok_or("the target has no batch driver here")?;
    if plan.pipeline <= 1 && !codec.one_in_flight {
        return Err("--pipeline 1".into());
    }
    match plan.mode {
        Mode::Closed { think, .. } if !think.is_zero() => return Err("a think time".into()),
        Mode::Closed { .. } if !plan.stages.is_empty() => {
            return Err("client stages (--stages), whose clients join and leave".into())
        }
        Mode::Open { .. } if plan.pipeline_refill > 1 => {
            return Err("an open loop (--rate) writes each arrival when it comes".into())
        }
        Mode::Closed { .. } | Mode::Open { .. } => {}
    }
    if plan.op_timeout.is_some() {
        return Err("an operation time limit (--op-timeout)".into());
    }
    if plan.connection != Connection::Persistent {
        return Err("--connection per-op".into());
    }
    for o in ops {
        let what = if o.retry.is_some() {
            "has a retry policy"
        } else if !o.lets.is_empty() {
            "has a let"
        } else if o.pause.is_some() {
            "has a pause"
        } else if !(codec.accepts)(&o.kind) {
            "is an operation the batch driver cannot carry (a tx, capture, when, repeat, peer, {bytes} or backslash argument, several commands)"
        } else {
            continue;
        };
        return Err(format!("operation '{}' {what}", o.name));
    }
    Ok(codec)
}

/// One client stream of the connection.
struct Stream<'a> {
    ctx: &'a ClientCtx<'a>,
    chooser: Chooser<'a>,
    /// `None` once the stream has ended.
    iv: Option<Intervals<'a>>,
    quota: Option<u64>,
    /// The operation in flight, and when its latency began: its send in a closed loop, its
    /// intended start in an open loop.
    op: Option<(usize, Instant)>,
    /// Open loop: the stream's arrivals, as an ordinary client's (`client::open`).
    due: Option<Due>,
    /// When the operation in flight was first written.
    sent: Instant,
    /// In a batch closed by one message (`Codec::batch`): its operation's reply and when it
    /// was read, kept until the batch ends.
    reply: Option<(Result<Outcome, OpError>, Instant)>,
    /// Its request in flight as written, where the server may end the connection after
    /// an earlier reply (`Codec::closes`): sent again on the next connection.
    request: Vec<u8>,
    /// The connection was replaced since its last operation was recorded.
    reconnected: bool,
}

impl<'a> Stream<'a> {
    fn new(ctx: &'a ClientCtx<'a>) -> Self {
        let chooser = Chooser::of(ctx);
        Stream {
            ctx,
            chooser,
            iv: Some(Intervals::new(ctx)),
            quota: ctx.ops_share(),
            op: None,
            due: Due::of(ctx),
            sent: ctx.q0,
            reply: None,
            request: Vec::new(),
            reconnected: false,
        }
    }

    /// Whether it ends here (Ctrl-C, its share of `--ops` done, the deadline passed, in an
    /// open loop its next arrival at or after the deadline); ending closes its intervals
    /// at `now`. An open-loop stream still behind schedule at the deadline counts the
    /// arrivals left before it as missed, as an ordinary client does.
    fn ends(&mut self, now: Instant, deadline: Option<Instant>) -> bool {
        if self.iv.is_none() {
            return true;
        }
        let mut missed = Vec::new();
        let end = self.ctx.stop.load(Ordering::Relaxed)
            || self.quota == Some(0)
            || match (deadline, self.due.as_mut()) {
                (None, _) => false,
                (Some(d), None) => now >= d,
                (Some(d), Some(due)) if due.intended >= d => true,
                (Some(d), Some(due)) => {
                    let behind = now >= d;
                    if behind {
                        due.missed_before(d, &mut missed);
                    }
                    behind
                }
            };
        if end {
            if let Some(iv) = self.iv.take() {
                iv.finish(now, missed);
            }
        }
        end
    }

    /// Open loop: when its next arrival comes, if not by `now`.
    fn waits(&self, now: Instant) -> Option<Instant> {
        self.due
            .as_ref()
            .map(|due| due.intended)
            .filter(|&at| at > now)
    }

    /// Choose its next operation, written at `now`: its latency counts from `now` in a
    /// closed loop, from the arrival's intended start in an open loop.
    fn start(&mut self, now: Instant) -> usize {
        let i = self.chooser.pick();
        let from = match self.due.as_mut() {
            Some(due) => {
                let intended = due.intended;
                if let (Some(iv), false) = (self.iv.as_mut(), self.ctx.plan.stages.is_empty()) {
                    // It counts in the stage of its intended start.
                    iv.hold(Some(due.stage));
                }
                due.next();
                intended
            }
            None => now,
        };
        self.op = Some((i, from));
        self.sent = now;
        i
    }

    /// Choose its next operation and append its request to `out` ([`Stream::start`]).
    fn issue(
        &mut self,
        now: Instant,
        codec: &Codec,
        context: Option<&Context>,
        out: &mut Vec<u8>,
    ) -> Result<(), OpError> {
        let i = self.start(now);
        let op = self.chooser.bind(i);
        let at = out.len();
        (codec.encode)(&op, context, out)?;
        if codec.closes.is_some() {
            self.request.clear();
            self.request.extend_from_slice(&out[at..]);
        }
        Ok(())
    }

    /// Record the outcome of its operation in flight, which ended at `now`.
    fn complete(&mut self, result: Result<Outcome, OpError>, now: Instant) {
        self.reply = None;
        self.chooser.gen.acknowledge();
        let (Some((i, from)), Some(iv)) = (self.op.take(), self.iv.as_ref()) else {
            return;
        };
        let kind = self.ctx.ops[i].kind.statement_kind();
        let lookup = self.ctx.ops[i].lookup;
        let reconnected = std::mem::take(&mut self.reconnected);
        let (due, sent) = (self.due.as_ref(), self.sent);
        iv.record(i, |c| {
            match due {
                Some(due) => record_open(c, result, from, sent, now, due.late_after, lookup),
                None => record(c, result, now - from, lookup),
            }
            c.reconnects += u64::from(reconnected);
            if let Some(kind) = kind {
                c.statements.add(kind);
            }
        });
        if let Some(q) = self.quota.as_mut() {
            if iv.measuring() {
                *q = q.saturating_sub(1);
            }
        }
        if let (Some(due), Some(iv), false) = (
            self.due.as_ref(),
            self.iv.as_mut(),
            self.ctx.plan.stages.is_empty(),
        ) {
            // Free again: it may move on to the stage of its next arrival.
            iv.hold(Some(due.stage));
        }
    }
}

/// The socket and the replies read from it.
struct Wire {
    stream: NetStream,
    shown: String,
    context: Option<Arc<Context>>,
    inbuf: ReadBuf,
}

impl Wire {
    fn new(b: Batched) -> Wire {
        Wire {
            stream: b.stream,
            shown: b.shown,
            context: b.context,
            inbuf: ReadBuf::new(64 * 1024),
        }
    }

    fn fail(&self, e: std::io::Error) -> OpError {
        OpError::new(ErrorClass::Connect, format!("{}: {e}", self.shown))
    }

    /// Write all of `out`, then read what has arrived (waiting for at least one byte), or
    /// stop waiting at `until` (open loop: a stream's next arrival): whether it read. With
    /// `defer` the write waits until the thread's other connections have read what the
    /// same wake-up brought them (see [`drive`]).
    async fn exchange(
        &mut self,
        codec: &Codec,
        out: &mut Vec<u8>,
        until: Option<Instant>,
        defer: bool,
    ) -> Result<bool, OpError> {
        if defer && !out.is_empty() {
            tokio::task::yield_now().await;
        }
        let written = if codec.tls_records {
            self.stream.send_records(out, codec.frame_len).await
        } else {
            self.stream.send_all(out).await
        };
        out.clear();
        written.map_err(|e| self.fail(e))?;
        let read = match until {
            None => self.stream.fill(&mut self.inbuf).await,
            // `fill` reads nothing until it returns, so the wait may end it.
            Some(t) => tokio::select! {
                biased;
                read = self.stream.fill(&mut self.inbuf) => read,
                () = tokio::time::sleep(t.saturating_duration_since(Instant::now())) => {
                    return Ok(false)
                }
            },
        };
        match read {
            Ok(0) => {
                let closed = format!("{} closed the connection", self.shown);
                Err(OpError::new(ErrorClass::Connect, closed))
            }
            Ok(_) => Ok(true),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Where the next whole reply read lies in `inbuf`, if there is one, and whether the
    /// server ends the connection after it (`Codec::closes`, from the same parse).
    fn next_reply(&mut self, codec: &Codec) -> Result<Option<(Range<usize>, bool)>, OpError> {
        let unread = self.inbuf.unread();
        let framed = match codec.closes {
            Some(frame) => frame(unread),
            None => (codec.frame_len)(unread).map(|n| n.map(|n| (n, false))),
        };
        match framed {
            Ok(Some((n, last))) => Ok(Some((self.inbuf.consume(n), last))),
            Ok(None) => Ok(None),
            Err(e) => Err(OpError::new(
                ErrorClass::Protocol,
                format!("malformed reply from {}: {e}", self.shown),
            )),
        }
    }
}

/// Run the streams of `ctxs` on one connection to the end of the run. `conn` is `None`
/// when it could not be opened: the driver reconnects first. What the codec sends ahead on
/// a new connection (`Codec::prepare`: PostgreSQL's statements) goes out with its first
/// requests.
pub async fn drive<T: Target>(
    target: &T,
    codec: &'static Codec,
    conn: Option<Batched>,
    ctxs: &[ClientCtx<'_>],
) {
    let Some(first) = ctxs.first() else { return };
    let deadline = first.timeline.deadline.map(|d| first.at(d));
    let mut streams: Vec<Stream<'_>> = ctxs.iter().map(Stream::new).collect();
    let refill_at = first.plan.pipeline_refill.clamp(1, streams.len());
    // One request in flight, in a closed loop, with other connections on the thread: a
    // connection writes its next request only after the others have read what the same
    // wake-up brought them (a yield: tokio polls the socket poller again before the
    // connection resumes), as wrk writes on its next pass over the ready sockets. Against
    // nginx at 50 connections this took loadrig from 0.90x to 1.03x wrk's rate and from
    // 1.13x to 0.98x its client CPU a request (docs/performance.md, "A connection's next
    // request after its thread's reads"). Each operation is still timed from its choice,
    // before the yield. Not pipelined: a write of many requests is a batch already, and
    // Redis's pipelined rate fell from 1.12x to 1.02x redis-benchmark's with the yield.
    let defer = matches!(first.plan.mode, Mode::Closed { .. })
        && first.plan.pipeline <= 1
        && !first.exclusive;
    let mut wire = conn.map(Wire::new);
    // Streams with a request written or queued, in request order: replies come in this order.
    let mut fifo: VecDeque<usize> = VecDeque::with_capacity(streams.len());
    // With `Codec::batch`: the operations of each batch written and not ended, oldest first.
    let mut batches: VecDeque<Batch> = VecDeque::new();
    // Streams whose request the server left unread when it ended the connection, in order.
    let mut resend: Vec<usize> = Vec::new();
    let mut out = Vec::with_capacity(4096);
    if wire.is_some() {
        (codec.prepare)(first.ops, &mut out);
    }
    let mut now = Instant::now();
    loop {
        let Some(w) = wire.as_mut() else {
            match reconnect(target, &mut streams, deadline).await {
                Some(w) => wire = Some(w),
                None => return,
            }
            (codec.prepare)(first.ops, &mut out);
            // A stream whose operation failed while reconnecting has none left to send.
            for k in resend.drain(..).filter(|&k| streams[k].op.is_some()) {
                out.extend_from_slice(&streams[k].request);
                fifo.push_back(k);
            }
            now = Instant::now();
            continue;
        };
        let mut result = Ok(());
        let mut issued = 0;
        // Open loop: the first arrival still to come of a free stream.
        let mut next: Option<Instant> = None;
        // `--pipeline-refill`: write again only once enough streams are free. Ended streams
        // count as free, so the last replies of a run never wait for streams that are gone.
        let refill = streams.len() - fifo.len() >= refill_at;
        for (k, s) in streams.iter_mut().enumerate() {
            if !refill || s.op.is_some() || s.ends(now, deadline) {
                continue;
            }
            if let Some(at) = s.waits(now) {
                next = Some(next.map_or(at, |n| n.min(at)));
                continue;
            }
            fifo.push_back(k);
            issued += 1;
            if let Err(e) = s.issue(now, codec, w.context.as_deref(), &mut out) {
                result = Err(e);
            }
        }
        if fifo.is_empty() {
            let Some(at) = next else { return };
            // Nothing in flight: wait for the next arrival, waking at each interval's end
            // to hand it over, as an ordinary open-loop client does.
            let boundary = streams.iter().filter_map(|s| s.iv.as_ref());
            let boundary = boundary.map(Intervals::next_boundary).min();
            first.wait_until(boundary.map_or(at, |b| at.min(b))).await;
            now = Instant::now();
            roll(&mut streams, now);
            continue;
        }
        if let (Some(end), true) = (&codec.batch, issued > 0) {
            out.extend_from_slice(end.trailer);
            batches.push_back(Batch::of(issued));
        }
        let mut replied = true;
        if result.is_ok() {
            result = (w.exchange(codec, &mut out, next, defer).await).map(|r| replied = r);
        }
        // One clock read for every reply of this read.
        now = Instant::now();
        if !replied {
            // A free stream's arrival came before any reply: write it now.
            continue;
        }
        let mut closed = false;
        if result.is_ok() {
            roll(&mut streams, now);
            result = match &codec.batch {
                None => hand_out(w, codec, &mut streams, &mut fifo, now).map(|c| closed = c),
                Some(end) => {
                    hand_out_batched(w, codec, end, &mut streams, &mut fifo, &mut batches, now)
                }
            };
        }
        if closed {
            // The server ended the connection after a reply (`Connection: close`), so it
            // read none of the requests behind it: they go again on the next connection,
            // as RFC 9112 §9.3.2 asks, each still timed from its first send.
            resend.extend(fifo.drain(..));
            out.clear();
            wire = None;
            continue;
        }
        if let Err(e) = result {
            // The connection's state is unknown: every operation in flight fails with it.
            for k in fifo.drain(..) {
                streams[k].complete(Err(e.clone()), now);
            }
            batches.clear();
            out.clear();
            wire = None;
        }
    }
}

/// Record every whole reply read on the stream whose request it answers: whether the
/// server ends the connection after the last of them.
fn hand_out(
    w: &mut Wire,
    codec: &Codec,
    streams: &mut [Stream<'_>],
    fifo: &mut VecDeque<usize>,
    now: Instant,
) -> Result<bool, OpError> {
    while let Some((reply, last)) = w.next_reply(codec)? {
        let reply = &w.inbuf[reply];
        let Some(k) = fifo.pop_front() else {
            return Err(unasked(w));
        };
        let s = &mut streams[k];
        let kind = s.op.map(|(i, _)| &s.ctx.ops[i].kind);
        let result = kind.map_or(Ok(Outcome::rows(0)), |kind| (codec.decode)(kind, reply));
        s.complete(result, now);
        if last {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Move every stream's intervals up to `now`, before recording the replies of a read.
fn roll(streams: &mut [Stream<'_>], now: Instant) {
    for s in streams.iter_mut() {
        if let Some(iv) = s.iv.as_mut() {
            iv.roll(now);
        }
    }
}

fn unasked(w: &Wire) -> OpError {
    OpError::new(
        ErrorClass::Protocol,
        format!("{} sent a reply nobody asked for", w.shown),
    )
}

/// A batch of requests written together and closed by one message (`Codec::batch`).
struct Batch {
    ops: usize,
    /// Its operations whose reply has been read, in request order.
    replied: usize,
    /// One of them failed: the server skipped the rest and undid the others.
    failed: bool,
}

impl Batch {
    fn of(ops: usize) -> Batch {
        Batch {
            ops,
            replied: 0,
            failed: false,
        }
    }
}

/// [`hand_out`] for batches closed by one message, as PostgreSQL's pipeline with one Sync
/// per batch: each operation's reply is decoded when it is read (its latency ends there),
/// and the batch's operations are recorded when the batch's end is read. The batch runs
/// as one implicit transaction, and after an error the server skips every message up to
/// the Sync ("Frontend/Backend Protocol", 55.2.4 Pipelining): so when one operation fails,
/// the ones before it are counted as rolled back and the ones after it as skipped, each an
/// error of class other, and the batch's operations always add up to ok + errors.
fn hand_out_batched(
    w: &mut Wire,
    codec: &Codec,
    end: &BatchEnd,
    streams: &mut [Stream<'_>],
    fifo: &mut VecDeque<usize>,
    batches: &mut VecDeque<Batch>,
    now: Instant,
) -> Result<(), OpError> {
    while let Some((reply, _)) = w.next_reply(codec)? {
        let reply = &w.inbuf[reply];
        let Some(batch) = batches.front_mut() else {
            return Err(unasked(w));
        };
        if (end.is_end)(reply) {
            let Batch {
                ops,
                replied,
                failed,
            } = *batch;
            if !failed && replied < ops {
                return Err(OpError::new(
                    ErrorClass::Protocol,
                    format!(
                        "{} ended a batch before answering all its operations",
                        w.shown
                    ),
                ));
            }
            batches.pop_front();
            for k in fifo.drain(..ops) {
                let s = &mut streams[k];
                let (result, at) = match s.reply.take() {
                    Some((Ok(_), _)) if failed => (Err(in_failed_batch("rolled back")), now),
                    Some(reply) => reply,
                    None => (Err(in_failed_batch("skipped")), now),
                };
                s.complete(result, at);
            }
            continue;
        }
        if batch.failed || batch.replied == batch.ops {
            return Err(unasked(w));
        }
        let s = &mut streams[fifo[batch.replied]];
        batch.replied += 1;
        let kind = s.op.map(|(i, _)| &s.ctx.ops[i].kind);
        let result = kind.map_or(Ok(Outcome::rows(0)), |kind| (codec.decode)(kind, reply));
        batch.failed |= result.is_err();
        s.reply = Some((result, now));
    }
    Ok(())
}

/// An operation of a batch in which another failed.
fn in_failed_batch(what: &str) -> OpError {
    OpError::new(
        ErrorClass::Other,
        format!("{what} in a pipeline batch that failed (another operation of the batch failed)"),
    )
}

/// Open the connection again, with a doubling backoff; every failed attempt counts as a
/// failed operation on each stream, as it does for a stream on its own session. `None`
/// when the run ended first (every stream is then closed).
async fn reconnect<T: Target>(
    target: &T,
    streams: &mut [Stream<'_>],
    deadline: Option<Instant>,
) -> Option<Wire> {
    let mut backoff = RECONNECT_FIRST;
    loop {
        let now = Instant::now();
        let mut live = 0;
        for s in streams.iter_mut() {
            live += usize::from(!s.ends(now, deadline));
        }
        if live == 0 {
            return None;
        }
        match target.connect_batched().await {
            Ok(b) => {
                streams.iter_mut().for_each(|s| s.reconnected = true);
                return Some(Wire::new(b));
            }
            Err(e) => {
                let now = Instant::now();
                for s in streams.iter_mut() {
                    let Some(iv) = s.iv.as_mut() else { continue };
                    iv.roll(now);
                    // A request waiting to go again fails here; the others fail a new one
                    // (in an open loop, only once its arrival has come).
                    if s.op.is_none() {
                        if s.waits(now).is_some() {
                            continue;
                        }
                        s.start(now);
                    }
                    s.complete(Err(e.clone()), now);
                }
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(RECONNECT_MAX);
    }
}
