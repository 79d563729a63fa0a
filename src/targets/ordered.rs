//! The connection of loadrig's own Redis and memcached clients: protocols whose server
//! answers in the order of the requests and whose session owns its buffers.
//!
//! [`Server`] is where the server listens (resolved once, when the target is built) and
//! [`Wire`] is one session's connection: its own socket, or one shared with other streams
//! (`--pipeline`, [`super::pipelined`]), with a reusable request buffer and read buffer.
//! What differs between the protocols is only how a reply is framed and how requests go out
//! over TLS, given by a [`Protocol`]; logging in stays with each target.

use std::net::SocketAddr;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::pipelined::{Batched, Context, FrameLen, Inbox, Shared};
use super::readbuf::ReadBuf;
use super::socket;
use super::tls::{NetStream, Tls};
use crate::error::InputError;
use crate::stats::connect_phases::{PhaseClock, PhaseTimes};
use crate::vocab::{ErrorClass, OpError};

/// What the shared connection code needs to know of a protocol.
pub struct Protocol {
    /// The server's name in messages: "Redis", "memcached".
    pub name: &'static str,
    /// Where the first whole reply (or request) in a buffer ends.
    pub frame_len: FrameLen,
    /// Over TLS, write in records that end where requests end (memcached; see
    /// `NetStream::send_records`).
    pub tls_records: bool,
}

/// Where a server listens, and the times of every connection made to it.
pub struct Server {
    pub addrs: Vec<SocketAddr>,
    /// The host as given: the name a TLS certificate must carry.
    pub host: String,
    pub tls: Tls,
    /// Every connection's TCP, TLS and login times.
    pub phases: PhaseClock,
    /// HOST:PORT as given, for messages (never a password).
    pub shown: String,
}

impl Server {
    /// `host:port` resolved; `scheme` names the target in messages.
    pub fn resolve(scheme: &str, host: String, port: u16, tls: Tls) -> Result<Server, InputError> {
        let shown = format!("{host}:{port}");
        let addrs: Vec<SocketAddr> =
            std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
                .map_err(|e| InputError::new(format!("{scheme}:// cannot resolve {shown}: {e}")))?
                .collect();
        if addrs.is_empty() {
            return Err(InputError::new(format!(
                "{scheme}:// {shown} resolves to no address"
            )));
        }
        Ok(Server {
            addrs,
            host,
            tls,
            phases: PhaseClock::default(),
            shown,
        })
    }
}

/// The socket of a session: its own, or one it shares with other streams (`--pipeline`).
enum Link {
    Own(NetStream),
    Shared(Rc<Shared>, Rc<Inbox>),
}

/// One session's connection with its reusable buffers.
pub struct Wire {
    link: Link,
    server: Arc<Server>,
    protocol: &'static Protocol,
    /// The request (or pipeline) being sent.
    pub out: Vec<u8>,
    /// Replies as read.
    pub inbuf: ReadBuf,
}

/// When a new connection's TCP and TLS were done, for its phases once it has logged in.
pub struct Dialed {
    started: Instant,
    tcp: Duration,
    tls: Option<Duration>,
}

impl Dialed {
    /// Record the connection's phases; `logged_in`: the time since TLS was its login's.
    pub fn record(self, server: &Server, logged_in: bool) {
        let before_login = self.tcp + self.tls.unwrap_or_default();
        server.phases.record(PhaseTimes {
            tcp: self.tcp,
            tls: self.tls,
            auth: logged_in.then(|| self.started.elapsed() - before_login),
        });
    }
}

fn io_error(what: &str, e: std::io::Error) -> OpError {
    OpError::new(ErrorClass::Connect, format!("{what}: {e}"))
}

impl Wire {
    /// TCP to the first address that answers, then TLS where the target asks for it.
    pub async fn open(
        server: &Arc<Server>,
        protocol: &'static Protocol,
    ) -> Result<(Wire, Dialed), OpError> {
        let started = Instant::now();
        let mut last = None;
        let mut stream = None;
        for addr in &server.addrs {
            match socket::connect(addr).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(stream) = stream else {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "cannot connect to {}: {}",
                    server.shown,
                    last.map_or_else(|| "no address".to_string(), |e| e.to_string())
                ),
            ));
        };
        let tcp = started.elapsed();
        let stream = server.tls.wrap(&server.host, stream, &server.shown).await?;
        let tls = server.tls.is_on().then(|| started.elapsed() - tcp);
        let wire = Wire::new(Link::Own(stream), Arc::clone(server), protocol);
        Ok((wire, Dialed { started, tcp, tls }))
    }

    fn new(link: Link, server: Arc<Server>, protocol: &'static Protocol) -> Wire {
        Wire {
            link,
            server,
            protocol,
            out: Vec::with_capacity(256),
            inbuf: ReadBuf::new(16 * 1024),
        }
    }

    /// This connection (logged in) as `n` wires that share it, each with buffers of its
    /// own; over TLS it stays one wire (the shared connection waits on a plain socket's
    /// readiness, which TLS records hide).
    pub fn share(self, n: usize) -> Vec<Wire> {
        let Link::Own(NetStream::Plain(stream)) = self.link else {
            return vec![self];
        };
        Shared::split(
            stream,
            self.server.shown.clone(),
            self.protocol.frame_len,
            n,
        )
        .into_iter()
        .map(|(shared, inbox)| {
            Wire::new(
                Link::Shared(shared, inbox),
                Arc::clone(&self.server),
                self.protocol,
            )
        })
        .collect()
    }

    /// The connection handed to the engine's batch driver, with its codec's context.
    pub fn into_batched(self, context: Option<Arc<Context>>) -> Result<Batched, OpError> {
        match self.link {
            Link::Own(stream) => Ok(Batched {
                stream,
                shown: self.server.shown.clone(),
                context,
            }),
            Link::Shared(..) => Err(OpError::new(
                ErrorClass::Other,
                "the batch driver needs a connection of its own",
            )),
        }
    }

    /// Send `out` and read one reply; returns where it lies in `inbuf`.
    pub async fn roundtrip(&mut self) -> Result<Range<usize>, OpError> {
        self.send().await?;
        self.read_reply().await
    }

    pub async fn send(&mut self) -> Result<(), OpError> {
        self.inbuf.rewind_if_drained();
        let Wire {
            link,
            out,
            server,
            protocol,
            ..
        } = self;
        match link {
            // Over TLS, records end where requests end: memcached leaves the rest of a
            // record it read in part unread until more bytes arrive.
            Link::Own(stream) if protocol.tls_records => stream
                .send_records(out, protocol.frame_len)
                .await
                .map_err(|e| io_error(&server.shown, e)),
            Link::Own(stream) => stream
                .write_all(out)
                .await
                .map_err(|e| io_error(&server.shown, e)),
            Link::Shared(shared, inbox) => shared.send(inbox, out),
        }
    }

    /// Read until one whole reply is buffered; returns its range and moves past it.
    pub async fn read_reply(&mut self) -> Result<Range<usize>, OpError> {
        loop {
            match (self.protocol.frame_len)(self.inbuf.unread()) {
                Ok(Some(n)) => return Ok(self.inbuf.consume(n)),
                Ok(None) => {}
                Err(e) => {
                    return Err(OpError::new(
                        ErrorClass::Protocol,
                        format!("malformed reply from {}: {e}", self.protocol.name),
                    ))
                }
            }
            self.fill().await?;
        }
    }

    /// Read what has arrived into `inbuf` (at least one byte).
    pub async fn fill(&mut self) -> Result<(), OpError> {
        let n = match &mut self.link {
            Link::Own(stream) => stream
                .read(self.inbuf.spare())
                .await
                .map_err(|e| io_error(&self.server.shown, e))?,
            Link::Shared(shared, inbox) => shared.recv(inbox, self.inbuf.spare()).await?,
        };
        if n == 0 {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!("{} closed the connection", self.server.shown),
            ));
        }
        self.inbuf.advance(n);
        Ok(())
    }
}
