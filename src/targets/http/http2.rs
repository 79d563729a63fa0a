//! HTTP/2 (`http=2`, or `http=auto` where the server picks h2 by ALPN) on the `h2` crate,
//! the implementation hyper builds on: cleartext by prior knowledge (h2c) on http://, h2 over
//! TLS on https://. A connection is opened with the client's preface and SETTINGS, then a
//! PING: the server's SETTINGS come first on its side of the connection, so once its PONG is
//! in, its settings (`SETTINGS_MAX_CONCURRENT_STREAMS` among them) and its acknowledgement of
//! ours have arrived. That exchange is the connection's `http2` phase. The connection is
//! driven by a task of its own on the client thread's runtime.
//!
//! `--pipeline P` puts P client streams on one connection, each a session of its own timed
//! as any client is: up to P requests in flight on it at once, multiplexed. The server's
//! stream limit caps them: a stream beyond it waits (in `h2`) until one of the connection's
//! streams ends, and that wait is in its latency. The limit and the streams are recorded
//! (`connect.http2` in the result).
//!
//! When the server ends a connection gracefully (GOAWAY with NO_ERROR, as nginx does after
//! `keepalive_requests` or an idle timeout), a request it did not take (sent after the GOAWAY
//! or above its last stream) goes once more on a new connection, which the streams of the old
//! one share again; that reconnect is inside the operation's time, as for HTTP/1.1's
//! `Connection: close`.
//!
//! Errors: I/O failures, a closed connection and a GOAWAY with an error code → `connect` (the
//! engine reconnects; a pipelined stream then on a connection of its own); a stream the
//! server resets (RST_STREAM): REFUSED_STREAM (it took no part of the request), CANCEL,
//! INTERNAL_ERROR, ENHANCE_YOUR_CALM, HTTP_1_1_REQUIRED and the rest → `other`,
//! PROTOCOL_ERROR, FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR, COMPRESSION_ERROR and STREAM_CLOSED →
//! `protocol`, SETTINGS_TIMEOUT → `timeout`; the server breaking the protocol (found by `h2`,
//! which then ends the connection) → `protocol`. A cleartext server that answers the preface
//! in HTTP/1.1 fails the connect with a message that says so.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use ::http::uri::{Authority, PathAndQuery, Scheme};
use ::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use bytes::Bytes;
use h2::client::SendRequest;
use h2::{Reason, SendStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::ops::Exchange;
use super::{Server, Status, CONNECT_TIMEOUT};
use crate::targets::attachment::{Attachment, Check};
use crate::targets::tls::NetStream;
use crate::vocab::{ErrorClass, OpError};

/// The flow-control windows loadrig opens: large, so that a response is not held back
/// waiting for a WINDOW_UPDATE (h2load opens 1 GiB ones).
const STREAM_WINDOW: u32 = 16 << 20;
const CONNECTION_WINDOW: u32 = 1 << 30;

/// Open HTTP/2 on a connection just made (TCP, TLS) and hand it to `n` client streams: `n`
/// sessions sharing it.
pub(super) async fn connect(
    server: &Arc<Server>,
    stream: NetStream,
    n: usize,
) -> Result<Vec<Http2Session>, OpError> {
    let link = Rc::new(Link {
        server: Arc::clone(server),
        current: RefCell::new(handshake(server, stream, n).await?),
        generation: Cell::new(0),
        opening: Cell::new(false),
        opened: Notify::new(),
        streams: n,
        scheme: if server.tls.is_on() {
            Scheme::HTTPS
        } else {
            Scheme::HTTP
        },
        authority: Authority::try_from(server.shown.as_str()).map_err(|e| {
            OpError::new(
                ErrorClass::Other,
                format!("{}: not an HTTP/2 authority: {e}", server.shown),
            )
        })?,
    });
    Ok((0..n)
        .map(|_| Http2Session {
            send: link.current.borrow().clone(),
            generation: 0,
            link: Rc::clone(&link),
            path: String::with_capacity(128),
            body: Vec::new(),
            chunk: Vec::new(),
        })
        .collect())
}

/// The preface, SETTINGS and a PING's round trip on `stream`, recorded as the connection's
/// `http2` phase with the stream limit the server set; then the connection is driven by a
/// task of its own.
async fn handshake(
    server: &Server,
    stream: NetStream,
    n: usize,
) -> Result<SendRequest<Bytes>, OpError> {
    let started = Instant::now();
    let first = Arc::new(Mutex::new(Vec::new()));
    let io = Sniffed {
        io: stream,
        first: Some(Arc::clone(&first)),
    };
    let ready = async {
        let (send, mut connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await?;
        let mut ping = connection.ping_pong();
        // Ends once every session and stream of the connection is gone (h2 then says
        // GOAWAY), or the connection fails; its error reaches the streams.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        if let Some(ping) = &mut ping {
            ping.ping(h2::Ping::opaque()).await?;
        }
        Ok::<_, h2::Error>(send)
    };
    let send = match tokio::time::timeout(CONNECT_TIMEOUT, ready).await {
        Ok(Ok(send)) => send,
        Ok(Err(e)) => return Err(preface_error(server, &e, &first)),
        Err(_) => {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "{}: no answer to HTTP/2's preface within {} s",
                    server.shown,
                    CONNECT_TIMEOUT.as_secs()
                ),
            ))
        }
    };
    let allowed = match send.current_max_send_streams() {
        usize::MAX => None,
        n => Some(n as u64),
    };
    server
        .phases
        .record_http2(started.elapsed(), allowed, n as u64);
    Ok(send)
}

/// Why HTTP/2 could not start: a server that answered in HTTP/1.1 is named as one.
fn preface_error(server: &Server, e: &h2::Error, first: &Mutex<Vec<u8>>) -> OpError {
    let first = first.lock().map(|f| f.clone()).unwrap_or_default();
    if first.starts_with(b"HTTP/1.") {
        let line = first.split(|&b| b == b'\r').next().unwrap_or(&[]);
        return OpError::new(
            ErrorClass::Connect,
            format!(
                "{} does not speak cleartext HTTP/2: it answered the HTTP/2 preface in HTTP/1.1 (\"{}\"); run with http=1.1, or point at its h2c port (nginx: listen … http2), or use https:// where ALPN can choose h2",
                server.shown,
                String::from_utf8_lossy(line)
            ),
        );
    }
    let e = classify(&server.shown, e);
    OpError::new(e.class, format!("HTTP/2 preface: {}", e.message))
}

/// The socket under `h2`, keeping the first bytes the server sent, which tell a server that
/// answered the preface in HTTP/1.1.
struct Sniffed {
    io: NetStream,
    first: Option<Arc<Mutex<Vec<u8>>>>,
}

impl AsyncRead for Sniffed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if this.first.is_some() && buf.filled().len() > before {
            if let Some(first) = this.first.take() {
                let got = &buf.filled()[before..];
                if let Ok(mut f) = first.lock() {
                    f.extend_from_slice(&got[..got.len().min(64)]);
                }
            }
        }
        read
    }
}

impl AsyncWrite for Sniffed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// One connection shared by the sessions of its streams, and its successor when the server
/// ends it gracefully: the stream that finds it ended opens the next, the others wait for it.
struct Link {
    server: Arc<Server>,
    /// The handle that opens streams on the current connection.
    current: RefCell<SendRequest<Bytes>>,
    /// How many times the connection was replaced.
    generation: Cell<u64>,
    /// A stream is opening the next connection.
    opening: Cell<bool>,
    /// Told when it is open (or failed).
    opened: Notify,
    /// The client streams sharing it.
    streams: usize,
    scheme: Scheme,
    authority: Authority,
}

/// Ends a stream's turn at opening its link's next connection, even when its operation is
/// cancelled midway.
struct Opening<'a>(&'a Link);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.0.opening.set(false);
        self.0.opened.notify_waiters();
    }
}

/// One client stream: a session whose requests are streams on its link's connection.
pub struct Http2Session {
    link: Rc<Link>,
    /// This stream's handle on the link's connection of generation `generation`.
    send: SendRequest<Bytes>,
    generation: u64,
    /// The request path being built.
    path: String,
    /// The last response's body, when it was kept.
    body: Vec<u8>,
    /// One piece of an attachment on its way out.
    chunk: Vec<u8>,
}

/// What a request sends as its body.
#[derive(Clone, Copy)]
enum Body<'a> {
    Bytes(&'a [u8]),
    /// An attachment, streamed: the key it belongs to.
    Attachment(&'a str, &'a Attachment),
}

/// What becomes of a response's body.
enum Sink<'a> {
    Drop,
    Keep,
    /// Fed to an attachment's check; its first failure kept.
    Check(&'a mut Check, &'a mut Option<OpError>),
}

/// Why a round trip failed: the server took no part of the request (send it once more on a
/// new connection; the error if that is not possible), or an error of its class.
enum Failed {
    Unsent(OpError),
    Op(OpError),
}

impl Http2Session {
    /// Take the link's current connection if another stream replaced this one's.
    fn follow(&mut self) {
        let generation = self.link.generation.get();
        if generation != self.generation {
            self.send = self.link.current.borrow().clone();
            self.generation = generation;
        }
    }

    /// This stream's connection was ended gracefully: move to its successor, opening it
    /// unless another stream of the link is.
    async fn reopen(&mut self) -> Result<(), OpError> {
        let link = Rc::clone(&self.link);
        while link.opening.get() {
            link.opened.notified().await;
        }
        if link.generation.get() == self.generation {
            link.opening.set(true);
            let _turn = Opening(&link);
            let stream = super::open(&link.server).await?;
            let send = handshake(&link.server, stream, link.streams).await?;
            *link.current.borrow_mut() = send;
            link.generation.set(self.generation + 1);
        }
        self.follow();
        Ok(())
    }

    /// The request's URI: the connection's scheme and authority, the path built.
    fn uri(&self) -> Result<Uri, OpError> {
        let path = PathAndQuery::try_from(self.path.as_str()).map_err(|_| {
            OpError::new(
                ErrorClass::Other,
                format!(
                    "the path '{}' holds spaces or control characters",
                    self.path.escape_debug()
                ),
            )
        })?;
        let mut parts = ::http::uri::Parts::default();
        parts.scheme = Some(self.link.scheme.clone());
        parts.authority = Some(self.link.authority.clone());
        parts.path_and_query = Some(path);
        Uri::from_parts(parts).map_err(|e| OpError::new(ErrorClass::Other, e.to_string()))
    }

    /// Send one request and read its whole response, once more on a new connection when
    /// the server ended this one before it took the request.
    async fn exchange(
        &mut self,
        method: &Method,
        headers: &HeaderMap,
        body: Body<'_>,
        sink: &mut Sink<'_>,
    ) -> Result<::http::response::Parts, OpError> {
        let uri = self.uri()?;
        self.follow();
        match self.round(method, &uri, headers, body, sink).await {
            Ok(parts) => return Ok(parts),
            Err(Failed::Op(e)) => return Err(e),
            Err(Failed::Unsent(_)) => self.reopen().await?,
        }
        match self.round(method, &uri, headers, body, sink).await {
            Ok(parts) => Ok(parts),
            Err(Failed::Op(e) | Failed::Unsent(e)) => Err(e),
        }
    }

    async fn round(
        &mut self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Body<'_>,
        sink: &mut Sink<'_>,
    ) -> Result<::http::response::Parts, Failed> {
        let shown = &self.link.server.shown;
        poll_fn(|cx| self.send.poll_ready(cx))
            .await
            .map_err(|e| failed(shown, &e))?;
        let mut request = Request::new(());
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri.clone();
        *request.version_mut() = ::http::Version::HTTP_2;
        *request.headers_mut() = headers.clone();
        let ends = matches!(body, Body::Bytes(b) if b.is_empty());
        let (response, mut out) = self
            .send
            .send_request(request, ends)
            .map_err(|e| failed(shown, &e))?;
        match body {
            Body::Bytes([]) => {}
            Body::Bytes(b) => out
                .send_data(Bytes::copy_from_slice(b), true)
                .map_err(|e| failed(shown, &e))?,
            Body::Attachment(key, a) => stream_attachment(&mut out, key, a, &mut self.chunk)
                .await
                .map_err(|e| match e {
                    Streamed::Failed(e) => failed(shown, &e),
                    Streamed::Op(e) => Failed::Op(e),
                })?,
        }
        let response = response.await.map_err(|e| failed(shown, &e))?;
        let (parts, mut recv) = response.into_parts();
        self.body.clear();
        while !recv.is_end_stream() {
            let Some(data) = recv.data().await else { break };
            let data = data.map_err(|e| Failed::Op(classify(shown, &e)))?;
            let _ = recv.flow_control().release_capacity(data.len());
            match sink {
                Sink::Drop => {}
                Sink::Keep => self.body.extend_from_slice(&data),
                Sink::Check(check, failed) => {
                    if failed.is_none() {
                        if let Err(e) = check.feed(&data) {
                            **failed = Some(e);
                        }
                    }
                }
            }
        }
        Ok(parts)
    }
}

/// Why streaming an attachment stopped: HTTP/2 failed, or reading the attachment did.
enum Streamed {
    Failed(h2::Error),
    Op(OpError),
}

/// Send an attachment as a request's body, a piece at a time as the server's flow-control
/// window opens, then end the stream.
async fn stream_attachment(
    out: &mut SendStream<Bytes>,
    key: &str,
    a: &Attachment,
    chunk: &mut Vec<u8>,
) -> Result<(), Streamed> {
    let mut chunks = a.chunks(key).map_err(Streamed::Op)?;
    while chunks.next_into(chunk).map_err(Streamed::Op)? {
        let mut piece = Bytes::copy_from_slice(chunk);
        while !piece.is_empty() {
            out.reserve_capacity(piece.len());
            let room = match poll_fn(|cx| out.poll_capacity(cx)).await {
                Some(room) => room.map_err(Streamed::Failed)?,
                None => {
                    return Err(Streamed::Op(OpError::new(
                        ErrorClass::Connect,
                        "the stream closed while its body was on its way",
                    )))
                }
            };
            let part = piece.split_to(room.min(piece.len()));
            out.send_data(part, false).map_err(Streamed::Failed)?;
        }
    }
    out.send_data(Bytes::new(), true).map_err(Streamed::Failed)
}

/// A failed stream: not taken by a server that ended the connection gracefully (unsent),
/// or an error of its class.
fn failed(shown: &str, e: &h2::Error) -> Failed {
    if e.is_go_away() && e.is_remote() && e.reason() == Some(Reason::NO_ERROR) {
        Failed::Unsent(OpError::new(
            ErrorClass::Connect,
            format!("{shown} ended the connection (GOAWAY) before it took the request, twice"),
        ))
    } else {
        Failed::Op(classify(shown, e))
    }
}

/// An HTTP/2 error as loadrig's classes (see the module's documentation).
fn classify(shown: &str, e: &h2::Error) -> OpError {
    let reason = e.reason().unwrap_or(Reason::INTERNAL_ERROR);
    if e.is_io() || (e.is_go_away() && e.is_remote()) {
        let why = match e.get_io() {
            Some(io) => io.to_string(),
            None => format!("GOAWAY {reason:?}"),
        };
        return OpError::new(
            ErrorClass::Connect,
            format!("{shown} ended the connection: {why}"),
        );
    }
    if e.is_reset() && e.is_remote() {
        let class = match reason {
            Reason::PROTOCOL_ERROR
            | Reason::FLOW_CONTROL_ERROR
            | Reason::FRAME_SIZE_ERROR
            | Reason::COMPRESSION_ERROR
            | Reason::STREAM_CLOSED => ErrorClass::Protocol,
            Reason::SETTINGS_TIMEOUT => ErrorClass::Timeout,
            _ => ErrorClass::Other,
        };
        let note = match reason {
            Reason::REFUSED_STREAM => " (it took no part of the request)",
            Reason::HTTP_1_1_REQUIRED => " (it wants this request in HTTP/1.1: http=1.1)",
            _ => "",
        };
        return OpError::new(
            class,
            format!("{shown} reset the stream: RST_STREAM {reason:?}{note}"),
        );
    }
    if e.is_go_away() || e.is_reset() {
        // Found by h2 on this side: the server broke the protocol.
        return OpError::new(
            ErrorClass::Protocol,
            format!("{shown} broke HTTP/2 ({reason:?}): {e}"),
        );
    }
    OpError::new(ErrorClass::Other, format!("HTTP/2 request: {e}"))
}

/// A request's headers: the operation's, then Content-Length where there is a body (or the
/// method sends one), as HTTP/1.1 writes them.
fn header_map<'h>(
    method: &str,
    headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
    body_len: u64,
) -> Result<HeaderMap, OpError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let bad = || {
            OpError::new(
                ErrorClass::Other,
                format!("bad header '{}'", name.escape_debug()),
            )
        };
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let value = HeaderValue::from_bytes(value).map_err(|_| bad())?;
        map.append(name, value);
    }
    if body_len > 0 || matches!(method, "PUT" | "POST" | "PATCH") {
        map.insert(::http::header::CONTENT_LENGTH, HeaderValue::from(body_len));
    }
    Ok(map)
}

fn method(name: &str) -> Result<Method, OpError> {
    Method::from_bytes(name.as_bytes()).map_err(|_| {
        OpError::new(
            ErrorClass::Other,
            format!("'{}' is not an HTTP method", name.escape_debug()),
        )
    })
}

/// A response's status as loadrig reads it; HTTP/2 has no reason phrase, so the standard
/// one stands in (for messages).
fn status(parts: &::http::response::Parts) -> Status {
    Status {
        code: parts.status.as_u16(),
        reason: parts.status.canonical_reason().unwrap_or("").into(),
    }
}

impl Exchange for Http2Session {
    fn server(&self) -> &Arc<Server> {
        &self.link.server
    }

    fn path_at(&mut self) -> (&mut String, &Server) {
        (&mut self.path, &self.link.server)
    }

    async fn send<'h>(
        &mut self,
        method_name: &str,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
        body: &[u8],
        keep: bool,
    ) -> Result<Status, OpError> {
        let headers = header_map(method_name, headers, body.len() as u64)?;
        let sink = &mut if keep { Sink::Keep } else { Sink::Drop };
        let parts = self
            .exchange(&method(method_name)?, &headers, Body::Bytes(body), sink)
            .await?;
        Ok(status(&parts))
    }

    fn take_body(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    async fn get_checked(
        &mut self,
        mut check: Check,
    ) -> Result<(Status, Check, Option<OpError>), OpError> {
        let mut failed = None;
        let sink = &mut Sink::Check(&mut check, &mut failed);
        let parts = self
            .exchange(&Method::GET, &HeaderMap::new(), Body::Bytes(&[]), sink)
            .await?;
        Ok((status(&parts), check, failed))
    }

    async fn put_attachment(&mut self, key: &str, a: &Attachment) -> Result<Status, OpError> {
        let headers = header_map("PUT", super::NO_HEADERS, a.size())?;
        let body = Body::Attachment(key, a);
        let parts = self
            .exchange(&Method::PUT, &headers, body, &mut Sink::Drop)
            .await?;
        Ok(status(&parts))
    }

    async fn server_header(&mut self) -> Option<String> {
        let parts = self
            .exchange(
                &Method::HEAD,
                &HeaderMap::new(),
                Body::Bytes(&[]),
                &mut Sink::Drop,
            )
            .await
            .ok()?;
        let server = parts.headers.get(::http::header::SERVER)?;
        Some(String::from_utf8_lossy(server.as_bytes()).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use ::http::Response;

    use super::super::{Http, HttpSession};
    use super::*;
    use crate::targets::{Session, Target, TargetUrl};
    use crate::vocab::{HttpOp, NativeOp, Op, ValueKind};

    /// An HTTP/2 server (h2's own) on 127.0.0.1:0, on a thread of its own, allowing 3
    /// streams at once: `/ok` answers "ok", `/refused` and `/broken` reset the stream
    /// (REFUSED_STREAM, PROTOCOL_ERROR), `/bye` answers and ends the connection gracefully
    /// (GOAWAY), `/die` drops the connection unanswered. The count of connections accepted.
    fn server() -> (u16, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                listener.set_nonblocking(true).unwrap();
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((tcp, _)) = listener.accept().await {
                    count.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(tcp));
                }
            });
        });
        (port, accepted)
    }

    async fn serve(tcp: tokio::net::TcpStream) {
        let Ok(mut conn) = h2::server::Builder::new()
            .max_concurrent_streams(3)
            .handshake::<_, Bytes>(tcp)
            .await
        else {
            return;
        };
        while let Some(Ok((request, mut respond))) = conn.accept().await {
            let ok = |respond: &mut h2::server::SendResponse<Bytes>| {
                if let Ok(mut out) = respond.send_response(Response::new(()), false) {
                    let _ = out.send_data(Bytes::from_static(b"ok"), true);
                }
            };
            match request.uri().path() {
                "/refused" => respond.send_reset(Reason::REFUSED_STREAM),
                "/broken" => respond.send_reset(Reason::PROTOCOL_ERROR),
                "/bye" => {
                    ok(&mut respond);
                    conn.graceful_shutdown();
                }
                "/die" => return,
                _ => ok(&mut respond),
            }
        }
    }

    fn get() -> NativeOp<ValueKind> {
        NativeOp::Http(HttpOp {
            method: "GET".into(),
            path: ValueKind::Bytes,
            headers: Vec::new(),
            body: None,
            expect: Some(200),
        })
    }

    /// GET `path` on `s`: the body, or the error's class and message.
    async fn fetch(s: &mut HttpSession, path: &str) -> Result<String, (ErrorClass, String)> {
        let native = get();
        let args = [path.as_bytes().to_vec()];
        let op = Op::Native {
            op: &native,
            args: &args,
            capture: true,
        };
        match s.execute(&op).await {
            Ok(o) => Ok(String::from_utf8_lossy(&o.captured[0]).into_owned()),
            Err(e) => Err((e.class, e.message)),
        }
    }

    fn target(port: u16) -> Http {
        let url = TargetUrl::parse(&format!("http://127.0.0.1:{port}?http=2")).unwrap();
        Http::open(&url, &BTreeMap::new()).unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn resets_goaway_and_a_dropped_connection_are_classified() {
        let (port, accepted) = server();
        let target = target(port);
        let got = runtime().block_on(async {
            let mut s = target.connect().await.unwrap();
            let mut got = Vec::new();
            for path in [
                "/ok", "/refused", "/broken", "/ok", "/bye", "/ok", "/ok", "/die",
            ] {
                got.push(fetch(&mut s, path).await.map_err(|(class, _)| class));
            }
            got
        });
        let ok = || Ok("ok".to_string());
        assert_eq!(
            got,
            [
                ok(),
                Err(ErrorClass::Other),
                Err(ErrorClass::Protocol),
                ok(),
                ok(),
                // After the GOAWAY: sent again on a new connection, without an error.
                ok(),
                ok(),
                Err(ErrorClass::Connect),
            ]
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        let phases = target.connect_phases().unwrap();
        assert_eq!(phases.http2.len(), 2, "both connections' preface timed");
        assert_eq!(
            phases.http2_streams,
            Some(crate::stats::connect_phases::Http2Streams {
                allowed: Some(3),
                streams: 1
            })
        );
    }

    #[test]
    fn a_refused_stream_says_so() {
        let (port, _) = server();
        let target = target(port);
        let e = runtime().block_on(async {
            let mut s = target.connect().await.unwrap();
            fetch(&mut s, "/refused").await.unwrap_err()
        });
        assert_eq!(
            e.1,
            format!("127.0.0.1:{port} reset the stream: RST_STREAM REFUSED_STREAM (it took no part of the request)")
        );
    }

    #[test]
    fn streams_of_a_connection_move_to_its_successor_together() {
        let (port, accepted) = server();
        let target = target(port);
        let results = runtime().block_on(async {
            let mut streams = target.connect_shared(6).await.unwrap();
            // Six streams, three at a time (the server's limit); one of the first ends the
            // connection, and every request after it goes on one new connection.
            let rounds = streams.iter_mut().enumerate().map(|(i, s)| async move {
                let mut got = Vec::new();
                for round in 0..4 {
                    let path = if i == 2 && round == 1 { "/bye" } else { "/ok" };
                    got.push(fetch(s, path).await);
                }
                got
            });
            futures_util::future::join_all(rounds).await
        });
        for got in results {
            assert!(got.iter().all(|r| r.as_deref() == Ok("ok")), "{got:?}");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        let streams = target.connect_phases().unwrap().http2_streams.unwrap();
        assert_eq!((streams.allowed, streams.streams), (Some(3), 6));
    }

    #[test]
    fn a_server_answering_the_preface_in_http1_is_named() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut preface = [0u8; 24];
                let _ = s.read_exact(&mut preface);
                let _ = s.write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        let target = target(port);
        let e = match runtime().block_on(target.connect()) {
            Err(e) => e,
            Ok(_) => panic!("an HTTP/1.1 server cannot be spoken to in HTTP/2"),
        };
        assert_eq!(e.class, ErrorClass::Connect);
        assert!(
            e.message.contains("does not speak cleartext HTTP/2")
                && e.message.contains("\"HTTP/1.1 400 Bad Request\"")
                && e.message.contains("http=1.1"),
            "{}",
            e.message
        );
    }
}
