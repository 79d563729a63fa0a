//! A shard's side of `--collect`: the stream to the collector, on a thread of its own.
//!
//! The run never waits for it: intervals go into an unbounded channel and the thread sends
//! them when it can. Everything sent is kept, so that after a lost connection (or a
//! collector that was restarted) the thread connects again every two seconds and sends what
//! the collector does not have. A collector that refuses this shard at the start (a wrong
//! token, another run, the index already taken) stops the run before it begins (exit 2);
//! one that cannot be reached is a warning: the shard runs on and keeps its own file.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};

use super::wire::{self, CollectTo, Hello, ServerFigures, ToCollector, ToShard};
use crate::error::InputError;
use crate::result::server::ServerIntervalRecord;
use crate::result::stream::StreamHeader;
use crate::result::{IntervalRecord, RunResult};
use crate::targets::tls::{NetStream, Tls};
use crate::targets::TargetUrl;

/// How often a lost collector is tried again.
const RETRY: Duration = Duration::from_secs(2);
/// How long a connection and its hello may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A line sent at least this often, so the collector can tell a quiet shard (waiting for
/// its start, loading data) from a dead one.
const PING: Duration = Duration::from_secs(1);
/// How long the end waits for the collector to confirm the shard's result.
const FINISH_WAIT: Duration = Duration::from_secs(15);

/// Where the end learns whether the collector confirmed the result (or why not).
type Confirm = oneshot::Sender<Result<(), String>>;

enum Out {
    Line(Arc<Vec<u8>>),
    /// An interval's server figures: kept apart from the lines (whose positions are the
    /// intervals'), sent only to a collector that reads them.
    Server(Arc<Vec<u8>>),
    Result(Arc<Vec<u8>>, Confirm),
}

/// The stream to the collector.
pub struct Link {
    tx: mpsc::UnboundedSender<Out>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: String,
}

/// What the first attempt found.
enum First {
    Connected,
    Unreachable(String),
    Refused(String, Option<String>),
}

struct Peer {
    host: String,
    port: u16,
    tls: Tls,
    addr: String,
}

impl Link {
    /// Connect and say hello now, before the run. A refusal is bad input; an unreachable
    /// collector is said on the console, and tried again while the shard runs.
    pub fn open(to: &CollectTo, hello: Hello) -> Result<Link, InputError> {
        let (host, port) = wire::parse_collector(&to.addr)?;
        let tls = if wire::is_loopback(&host) {
            Tls::off()
        } else {
            collector_tls(&host, port, to)?
        };
        let peer = Peer {
            host,
            port,
            tls,
            addr: to.addr.clone(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| InputError::new(format!("--collect: cannot start a runtime: {e}")))?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("collect".into())
            .spawn(move || runtime.block_on(send_loop(peer, hello, rx, first_tx)))
            .map_err(|e| InputError::new(format!("--collect: cannot start a thread: {e}")))?;
        let first = first_rx
            .recv()
            .unwrap_or(First::Unreachable("it stopped".into()));
        match first {
            First::Connected => println!("collect: streaming to the collector at {}", to.addr),
            First::Unreachable(why) => eprintln!(
                "warning: collect: cannot reach the collector at {}: {why}; this shard runs on and keeps its own file, and tries again every {}s",
                to.addr,
                RETRY.as_secs()
            ),
            First::Refused(message, help) => {
                let _ = thread.join();
                let e = InputError::new(format!(
                    "the collector at {} refused this shard: {message}",
                    to.addr
                ));
                return Err(match help {
                    Some(h) => e.help(h),
                    None => e,
                });
            }
        }
        Ok(Link {
            tx,
            thread: Some(thread),
            addr: to.addr.clone(),
        })
    }

    pub fn header(&self, h: &StreamHeader) {
        let msg = ToCollector::Header(Box::new(h.clone()));
        let _ = self.tx.send(Out::Line(Arc::new(wire::line(&msg))));
    }

    pub fn interval(&self, r: IntervalRecord) {
        let msg = ToCollector::Interval(Box::new(r));
        let _ = self.tx.send(Out::Line(Arc::new(wire::line(&msg))));
    }

    /// Interval `index`'s server figures, once the observer's reading joined it.
    pub fn server(&self, index: u64, figures: ServerIntervalRecord) {
        let msg = ToCollector::Server(Box::new(ServerFigures { index, figures }));
        let _ = self.tx.send(Out::Server(Arc::new(wire::line(&msg))));
    }

    /// Send the shard's result and wait (a while) for the collector to confirm it.
    pub fn finish(mut self, result: &RunResult) {
        let (done, confirmed) = oneshot::channel();
        let msg = ToCollector::Result(Box::new(result.clone()));
        let _ = self.tx.send(Out::Result(Arc::new(wire::line(&msg)), done));
        match confirmed.blocking_recv() {
            Ok(Ok(())) => println!("collect: the collector at {} has this shard's run", self.addr),
            Ok(Err(why)) => eprintln!(
                "warning: collect: the collector at {} did not confirm this shard's result ({why}); the shard's file holds it, for `loadrig merge`",
                self.addr
            ),
            Err(_) => {}
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // Without a result (the run failed): the thread ends once the channel closes.
        let (tx, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// TLS to a collector beyond loopback: verified against `--collect-ca` (or the system's
/// roots), by the name in `--collect`, with the project's rustls configuration.
fn collector_tls(host: &str, port: u16, to: &CollectTo) -> Result<Tls, InputError> {
    let mut url = format!("https://{host}:{port}/");
    if host.contains(':') {
        url = format!("https://[{host}]:{port}/");
    }
    if let Some(ca) = &to.ca {
        url.push_str(&format!("?ca={}", ca.display()));
    }
    let parsed = TargetUrl::parse(&url)
        .map_err(|e| InputError::new(format!("--collect {}: {e}", to.addr)))?;
    Tls::from_url(&parsed, true).map_err(|e| {
        InputError::new(format!("--collect-ca: {}", e.message)).help(
            "give the PEM file of the CA that signed the collector's certificate (--collect-ca FILE)",
        )
    })
}

type Reader = BufReader<ReadHalf<NetStream>>;
type Writer = WriteHalf<NetStream>;

/// Open a connection and say hello: the writer, a task that forwards the collector's
/// replies, how many intervals the collector already has and whether it reads `server`
/// lines.
async fn connect(
    peer: &Peer,
    hello: &Hello,
    replies: mpsc::UnboundedSender<(u64, Option<ToShard>)>,
    generation: u64,
) -> Result<(Writer, u64, bool), First> {
    let attempt = async {
        let tcp = tokio::net::TcpStream::connect((peer.host.as_str(), peer.port))
            .await
            .map_err(|e| First::Unreachable(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let stream = peer
            .tls
            .wrap(&peer.host, tcp, &peer.addr)
            .await
            .map_err(|e| First::Unreachable(e.message))?;
        let (read, mut write) = tokio::io::split(stream);
        let mut read: Reader = BufReader::new(read);
        let msg = ToCollector::Hello(Box::new(hello.clone()));
        write
            .write_all(&wire::line(&msg))
            .await
            .map_err(|e| First::Unreachable(e.to_string()))?;
        let reply = wire::read_line(&mut read, wire::MAX_HELLO)
            .await
            .map_err(|e| First::Unreachable(e.to_string()))?
            .ok_or_else(|| First::Unreachable("it closed the connection".into()))?;
        match serde_json::from_slice::<ToShard>(&reply) {
            Ok(ToShard::Accepted { have, server }) => Ok((read, write, have, server)),
            Ok(ToShard::Refused { message, help }) => Err(First::Refused(message, help)),
            _ => Err(First::Unreachable(
                "it answered something other than a loadrig collector".into(),
            )),
        }
    };
    let (mut read, write, have, server) =
        tokio::time::timeout(CONNECT_TIMEOUT, attempt)
            .await
            .map_err(|_| First::Unreachable("no answer within 5s".into()))??;
    tokio::spawn(async move {
        loop {
            let msg = match wire::read_line(&mut read, wire::MAX_HELLO).await {
                Ok(Some(l)) => serde_json::from_slice::<ToShard>(&l).ok(),
                _ => None,
            };
            let end = msg.is_none();
            let _ = replies.send((generation, msg));
            if end {
                return;
            }
        }
    });
    Ok((write, have, server))
}

/// What the thread holds: every line sent (the header first, then the intervals), the
/// connection if there is one, and the result once the run has ended.
struct Sender {
    peer: Peer,
    hello: Hello,
    sent: Vec<Arc<Vec<u8>>>,
    /// The server figures sent (each again after a reconnection: the collector keeps the
    /// first of each interval).
    servers: Vec<Arc<Vec<u8>>>,
    /// Whether the collector connected now reads them.
    takes_server: bool,
    writer: Option<Writer>,
    generation: u64,
    result: Option<(Arc<Vec<u8>>, Confirm)>,
    gave_up: Option<String>,
    replies_tx: mpsc::UnboundedSender<(u64, Option<ToShard>)>,
}

impl Sender {
    /// Connect; on success send what the collector lacks (every line after the header and
    /// its `have` intervals) and the result if there is one.
    async fn reconnect(&mut self) -> Result<(), First> {
        self.generation += 1;
        let (mut w, have, takes_server) = connect(
            &self.peer,
            &self.hello,
            self.replies_tx.clone(),
            self.generation,
        )
        .await?;
        // Line 0 is the header; line k the k-th interval.
        let from = if self.sent.is_empty() {
            0
        } else {
            1 + have as usize
        };
        let mut lines: Vec<Arc<Vec<u8>>> = self.sent.iter().take(1).cloned().collect();
        lines.extend(self.sent.iter().skip(from.max(1)).cloned());
        if takes_server {
            lines.extend(self.servers.iter().cloned());
        }
        if let Some((r, _)) = &self.result {
            lines.push(Arc::clone(r));
        }
        for l in lines {
            if let Err(e) = w.write_all(&l).await {
                return Err(First::Unreachable(e.to_string()));
            }
        }
        self.writer = Some(w);
        self.takes_server = takes_server;
        Ok(())
    }

    async fn write(&mut self, l: &[u8]) {
        if let Some(w) = &mut self.writer {
            if let Err(e) = w.write_all(l).await {
                self.lost(&e.to_string());
            }
        }
    }

    fn lost(&mut self, why: &str) {
        if self.writer.take().is_some() && self.gave_up.is_none() {
            eprintln!(
                "warning: collect: lost the collector at {}: {why}; this shard runs on, keeps its file and tries again every {}s",
                self.peer.addr,
                RETRY.as_secs()
            );
        }
    }
}

async fn send_loop(
    peer: Peer,
    hello: Hello,
    mut rx: mpsc::UnboundedReceiver<Out>,
    first: std::sync::mpsc::Sender<First>,
) {
    let (replies_tx, mut replies) = mpsc::unbounded_channel();
    let mut s = Sender {
        peer,
        hello,
        sent: Vec::new(),
        servers: Vec::new(),
        takes_server: false,
        writer: None,
        generation: 0,
        result: None,
        gave_up: None,
        replies_tx,
    };
    match s.reconnect().await {
        Ok(()) => {
            let _ = first.send(First::Connected);
        }
        Err(First::Refused(m, h)) => {
            let _ = first.send(First::Refused(m, h));
            return;
        }
        Err(other) => {
            let _ = first.send(other);
        }
    }
    let mut retry = tokio::time::interval(RETRY);
    let mut ping = tokio::time::interval(PING);
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                None => return,
                Some(Out::Line(l)) => {
                    s.sent.push(Arc::clone(&l));
                    s.write(&l).await;
                    ping.reset();
                }
                Some(Out::Server(l)) => {
                    s.servers.push(Arc::clone(&l));
                    if s.takes_server {
                        s.write(&l).await;
                        ping.reset();
                    }
                }
                Some(Out::Result(l, done)) => {
                    s.write(&l).await;
                    s.result = Some((l, done));
                    deadline = Some(tokio::time::Instant::now() + FINISH_WAIT);
                    if s.writer.is_none() && s.gave_up.is_none() {
                        let _ = s.reconnect().await;
                    }
                }
            },
            Some((generation, reply)) = replies.recv() => {
                if generation != s.generation {
                    continue;
                }
                match reply {
                    Some(ToShard::Received {}) => {
                        if let Some((_, done)) = s.result.take() {
                            let _ = done.send(Ok(()));
                        }
                        return;
                    }
                    Some(ToShard::Refused { message, .. }) => {
                        eprintln!("warning: collect: the collector at {} refused this shard: {message}; it keeps its own file", s.peer.addr);
                        s.gave_up = Some(message);
                        s.writer = None;
                    }
                    _ => s.lost("it closed the connection"),
                }
            }
            _ = retry.tick(), if s.writer.is_none() && s.gave_up.is_none() => {
                if let Err(First::Refused(message, _)) = s.reconnect().await {
                    eprintln!("warning: collect: the collector at {} refused this shard: {message}; it keeps its own file", s.peer.addr);
                    s.gave_up = Some(message);
                }
            }
            _ = ping.tick(), if s.writer.is_some() => {
                s.write(&wire::line(&ToCollector::Ping {})).await;
            }
            _ = sleep_until(deadline), if deadline.is_some() => {
                if let Some((_, done)) = s.result.take() {
                    let why = s.gave_up.clone().unwrap_or_else(|| "no answer in time".into());
                    let _ = done.send(Err(why));
                }
                return;
            }
        }
        if s.gave_up.is_some() {
            if let Some((_, done)) = s.result.take() {
                let _ = done.send(Err(s.gave_up.clone().unwrap_or_default()));
                return;
            }
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
