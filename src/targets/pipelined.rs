//! One connection shared by several client streams (`--pipeline P`) of a protocol whose
//! replies come back in the order of the requests (Redis' RESP). Every stream appends its
//! requests to one write buffer and reads its own replies as if it had the socket alone;
//! whichever stream is waiting writes everything queued and hands each reply read to the
//! stream that asked for it, in order. All streams of a connection run on one thread
//! (single-threaded runtime), so there are no locks, only `RefCell`s never held across
//! an `.await`.
//!
//! Writes coalesce: a stream yields once before it writes, so the requests the other
//! streams on the thread issue meanwhile go out in the same system call, and one read
//! usually carries the replies of several streams (the amortisation `redis-benchmark -P`
//! gets from batching, here with each operation timed on its own).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::readbuf::ReadBuf;
use super::tls::NetStream;
use crate::vocab::{ErrorClass, Op, OpError, Outcome};
use crate::workload::{OpKind, OpSpec, Step};

/// Append one operation's request, given its connection's context.
pub type Encode = fn(&Op<'_>, Option<&Context>, &mut Vec<u8>) -> Result<(), OpError>;

/// Where a complete reply ends in a buffer: `Ok(None)` when more bytes are needed.
pub type FrameLen = fn(&[u8]) -> Result<Option<usize>, String>;

/// Where a complete reply ends in a buffer, and whether the server ends the connection
/// after it: `Ok(None)` when more bytes are needed.
pub type FrameCloses = fn(&[u8]) -> Result<Option<(usize, bool)>, String>;

/// How the engine's batch driver (`engine::pipe`) speaks a protocol whose replies come
/// back in request order, without a session per stream: it encodes every ready stream's
/// request into one buffer, writes it once, and decodes each reply of a read in place.
pub struct Codec {
    /// Whether operations of this kind can go through the driver (checked before the run;
    /// the driver is used only when every operation of the workload can).
    pub accepts: fn(&OpKind) -> bool,
    /// Append the request of `op` (of a kind it accepts) to the buffer, with what its
    /// connection was opened with ([`Batched::context`]).
    pub encode: Encode,
    pub frame_len: FrameLen,
    /// The outcome of one whole reply to an operation of this kind.
    pub decode: fn(&OpKind, &[u8]) -> Result<Outcome, OpError>,
    /// For a protocol whose server may end the connection after a reply (HTTP's
    /// `Connection: close`): frames a reply as `frame_len` does and says, from the same
    /// parse, whether it is the server's last on the connection; the batch driver then uses
    /// it instead of `frame_len`, reconnects at once after such a reply, and writes the
    /// requests it wrote after that one again on the new connection (the server read none
    /// of them). `None`: no reply ends the connection.
    pub closes: Option<FrameCloses>,
    /// What a new connection sends before its first request, for the workload's
    /// operations (PostgreSQL prepares their statements); its replies must belong to the
    /// first reply frame.
    pub prepare: fn(&[OpSpec], &mut Vec<u8>),
    /// Use the driver with one operation in flight per connection too (`--pipeline 1`),
    /// because it costs less CPU per operation there than a session.
    pub one_in_flight: bool,
    /// `Some`: the requests of one write form a batch closed by one message of its own
    /// (PostgreSQL's Sync with `pipeline_sync=batch`), which the server answers once the
    /// batch is done; `frame_len` then ends every operation's reply and the batch's end.
    pub batch: Option<BatchEnd>,
    /// Over TLS, write each batch in records that end where requests end (`frame_len`
    /// frames the requests too): for a server that reads a record in parts and then waits
    /// on the socket for the rest (memcached; see `NetStream::send_records`).
    pub tls_records: bool,
}

/// How a codec closes a batch of requests written together, and tells the reply to that
/// closing message (the batch's end) from an operation's reply.
pub struct BatchEnd {
    /// Appended after the last request of a write.
    pub trailer: &'static [u8],
    /// Whether a reply frame is the batch's end.
    pub is_end: fn(&[u8]) -> bool,
}

/// Whether a batch driver can run a native step, whatever its protocol: it captures nothing
/// (the driver decodes an outcome only), always runs (no `when`) and runs on the target, not
/// on a peer. A codec's `accepts` adds what its protocol can write.
pub fn plain_step(step: &Step) -> bool {
    step.capture.is_empty() && step.when.is_empty() && step.peer.is_none()
}

/// A codec's `prepare` for protocols without anything to prepare.
pub fn prepare_nothing(_: &[OpSpec], _: &mut Vec<u8>) {}

/// A connection, logged in, handed over to the engine's batch driver.
pub struct Batched {
    pub stream: NetStream,
    /// HOST:PORT, for messages.
    pub shown: String,
    /// What the codec needs to write this connection's requests (HTTP's Host and paths),
    /// handed to every `encode` of the connection.
    pub context: Option<Arc<Context>>,
}

/// A connection's own data for its codec, which holds no state of its own.
pub type Context = dyn Any + Send + Sync;

/// The connection the streams share.
pub struct Shared {
    stream: TcpStream,
    /// HOST:PORT, for messages.
    shown: String,
    frame_len: FrameLen,
    state: RefCell<State>,
    /// A stream is waiting on the socket for everyone (see [`ReaderTurn`]).
    reading: Cell<bool>,
}

/// The waiting on the socket held by one stream. When it ends (its reply came, it failed,
/// or its operation was cancelled) the next stream expecting a reply is woken to take it.
struct ReaderTurn<'a>(&'a Shared);

impl Drop for ReaderTurn<'_> {
    fn drop(&mut self) {
        self.0.reading.set(false);
        let state = self.0.state.borrow();
        if let Some(next) = state.waiting.iter().find(|i| i.in_recv.get()) {
            next.notify.notify_one();
        }
    }
}

struct State {
    /// Requests not written yet.
    out: Vec<u8>,
    /// Replies as read and not handed out yet.
    inbuf: ReadBuf,
    /// The stream each reply still expected belongs to, in request order.
    waiting: VecDeque<Rc<Inbox>>,
    /// Set once the connection failed: every stream gets this error from then on.
    broken: Option<OpError>,
}

/// One stream's replies, handed over by whichever stream read them.
#[derive(Default)]
pub struct Inbox {
    replies: RefCell<Vec<u8>>,
    error: RefCell<Option<OpError>>,
    /// Woken when a reply (or an error) arrives.
    notify: Notify,
    /// Requests sent whose replies have not been read by the stream.
    expected: Cell<usize>,
    /// Its stream is waiting in [`Shared::recv`] (not cancelled, not between operations).
    in_recv: Cell<bool>,
}

/// Marks an inbox's stream as waiting while it is in [`Shared::recv`].
struct Waiting<'a>(&'a Inbox);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.in_recv.set(false);
    }
}

impl Shared {
    /// Share `stream` between `n` streams: one handle (and inbox) each.
    pub fn split(
        stream: TcpStream,
        shown: String,
        frame_len: FrameLen,
        n: usize,
    ) -> Vec<(Rc<Shared>, Rc<Inbox>)> {
        let shared = Rc::new(Shared {
            stream,
            shown,
            frame_len,
            state: RefCell::new(State {
                out: Vec::with_capacity(4096),
                inbuf: ReadBuf::new(64 * 1024),
                waiting: VecDeque::new(),
                broken: None,
            }),
            reading: Cell::new(false),
        });
        (0..n)
            .map(|_| (Rc::clone(&shared), Rc::new(Inbox::default())))
            .collect()
    }

    /// Queue `requests` (whole frames) of `inbox`'s stream; they are written by the next
    /// stream that waits for a reply.
    pub fn send(&self, inbox: &Rc<Inbox>, requests: &[u8]) -> Result<(), OpError> {
        let mut state = self.state.borrow_mut();
        if let Some(e) = &state.broken {
            return Err(e.clone());
        }
        let mut rest = requests;
        while !rest.is_empty() {
            let n = match (self.frame_len)(rest) {
                Ok(Some(n)) => n,
                _ => return Err(OpError::new(ErrorClass::Other, "an incomplete request")),
            };
            state.waiting.push_back(Rc::clone(inbox));
            inbox.expected.set(inbox.expected.get() + 1);
            rest = &rest[n..];
        }
        state.out.extend_from_slice(requests);
        Ok(())
    }

    /// Copy replies of `inbox`'s stream into `buf` (at least one byte), driving the
    /// connection until one arrives.
    pub async fn recv(&self, inbox: &Inbox, buf: &mut [u8]) -> Result<usize, OpError> {
        if inbox.expected.get() == 0 && inbox.replies.borrow().is_empty() {
            return Err(OpError::new(ErrorClass::Other, "no request is waiting"));
        }
        // Let the other streams on this thread queue their requests first: one write.
        tokio::task::yield_now().await;
        // Declared first, dropped last: the turn passes to another waiting stream, never
        // back to this one.
        let mut turn: Option<ReaderTurn<'_>> = None;
        inbox.in_recv.set(true);
        let _waiting = Waiting(inbox);
        loop {
            {
                let mut replies = inbox.replies.borrow_mut();
                if !replies.is_empty() {
                    let n = replies.len().min(buf.len());
                    buf[..n].copy_from_slice(&replies[..n]);
                    replies.drain(..n);
                    return Ok(n);
                }
            }
            if let Some(e) = inbox.error.borrow_mut().take() {
                return Err(e);
            }
            if self.drive()? {
                continue;
            }
            // One stream waits on the socket; the others only for their inbox, so a
            // readable socket wakes one task, not all P.
            if turn.is_none() && !self.reading.get() {
                self.reading.set(true);
                turn = Some(ReaderTurn(self));
            }
            if turn.is_none() {
                inbox.notify.notified().await;
                continue;
            }
            let mut interest = Interest::READABLE;
            if !self.state.borrow().out.is_empty() {
                interest |= Interest::WRITABLE;
            }
            tokio::select! {
                ready = self.stream.ready(interest) => {
                    ready.map_err(|e| self.fail(e))?;
                }
                () = inbox.notify.notified() => {}
            }
        }
    }

    /// Write what is queued and read what has arrived, without waiting; whether anything
    /// moved.
    fn drive(&self) -> Result<bool, OpError> {
        let mut moved = false;
        let mut state = self.state.borrow_mut();
        if let Some(e) = &state.broken {
            return Err(e.clone());
        }
        while !state.out.is_empty() {
            match self.stream.try_write(&state.out) {
                Ok(n) => {
                    state.out.drain(..n);
                    moved = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(self.break_with(&mut state, self.fail(e))),
            }
        }
        match self.stream.try_read(state.inbuf.spare()) {
            Ok(0) => {
                let e = OpError::new(
                    ErrorClass::Connect,
                    format!("{} closed the connection", self.shown),
                );
                return Err(self.break_with(&mut state, e));
            }
            Ok(n) => {
                state.inbuf.advance(n);
                moved = true;
                self.hand_out(&mut state)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(self.break_with(&mut state, self.fail(e))),
        }
        Ok(moved)
    }

    /// Give every complete reply read to the stream that asked for it, in order.
    fn hand_out(&self, state: &mut State) -> Result<(), OpError> {
        loop {
            let n = match (self.frame_len)(state.inbuf.unread()) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => {
                    let e = OpError::new(
                        ErrorClass::Protocol,
                        format!("malformed reply from {}: {e}", self.shown),
                    );
                    return Err(self.break_with(state, e));
                }
            };
            let Some(inbox) = state.waiting.pop_front() else {
                let e = OpError::new(
                    ErrorClass::Protocol,
                    format!("{} sent a reply nobody asked for", self.shown),
                );
                return Err(self.break_with(state, e));
            };
            let frame = state.inbuf.consume(n);
            inbox
                .replies
                .borrow_mut()
                .extend_from_slice(&state.inbuf[frame]);
            inbox.expected.set(inbox.expected.get().saturating_sub(1));
            inbox.notify.notify_one();
        }
        state.inbuf.rewind_if_drained();
        Ok(())
    }

    fn fail(&self, e: std::io::Error) -> OpError {
        OpError::new(ErrorClass::Connect, format!("{}: {e}", self.shown))
    }

    /// Mark the connection failed and tell every stream still waiting on it.
    fn break_with(&self, state: &mut State, e: OpError) -> OpError {
        for inbox in state.waiting.drain(..) {
            *inbox.error.borrow_mut() = Some(e.clone());
            inbox.notify.notify_one();
        }
        state.broken = Some(e.clone());
        e
    }
}
