//! `http://HOST[:PORT][/PREFIX][?kv_path=/dav/loadrig]`: an HTTP/1.1 server over one
//! persistent (keep-alive) connection per client; `https://…` the same over TLS (options
//! `ca=PATH`, `insecure=true`: see [`super::tls`]).
//!
//! - `PREFIX`, the URL's path, goes in front of every request path.
//! - native `http = { method, path, headers, body, expect }` sends one request and reads the
//!   whole response body; rows = 1. With `expect`, another status is an error; without it,
//!   any status below 400 counts as success and 400 or above as an error. With `capture`,
//!   the body is the one captured value.
//! - kv operations use WebDAV-style resources in the collection `kv_path` (default
//!   `/dav/loadrig`; its last segment must start with `loadrig`, so cleanup can only ever
//!   delete loadrig's own folder). A key becomes a file name that is safe in any path:
//!   ASCII letters, digits, `-` and `_` stay as they are, every other byte becomes `~XX`
//!   (hex), so `session:42` is `session~3a42`. put = `PUT` (2xx → rows 1; a 409, which
//!   WebDAV sends when the collection is missing, makes one `MKCOL` and one retry);
//!   get = `GET` (200 → rows 1, 404 → rows 0); update = `HEAD`, then `PUT` only if the
//!   resource exists (rows 0 otherwise); delete = `DELETE` (404 → rows 0).
//! - With `attachment=PATH` or `attachment_size=N` (see [`super::attachment`]) a document
//!   has an attachment, the resource of the same name with `.att` added: put sends the
//!   document, then streams the attachment as the body of a second `PUT` (Content-Length
//!   first, then 64 KiB at a time); get reads the document (404 → a `protocol` error), then
//!   the attachment, checking its body piece by piece as it arrives; delete removes both.
//! - `cleanup` sends `DELETE PREFIX/kv_path/` (`Depth: infinity`) and counts 1 if the
//!   collection existed. `server_version` is the `Server` header of `HEAD PREFIX/`.
//! - No `tx` and no `authenticate` (HTTP has no session login); `connect` opens a new
//!   connection, which is the TCP handshake.
//!
//! When the server ends a keep-alive connection (`Connection: close`, as nginx does after
//! `keepalive_requests`), the next operation opens a new one first, as wrk does; that
//! reconnect is inside the operation's time. A reused connection that turns out closed
//! before any byte of the response arrived (an idle timeout) is reopened and the request
//! sent once more.
//!
//! The client is written here on `httparse` (the response parser hyper uses): each request
//! is formatted into the client's reusable buffer and sent with one write, the response is
//! parsed in place in its reusable read buffer (Content-Length, chunked, or until close;
//! no body for HEAD, 1xx, 204 and 304), and nothing is allocated per request unless a body
//! is captured. hyper's client costs several times more CPU per request (a dispatcher task
//! per connection, channels, a HeaderMap per response), which on a machine shared with the
//! server is throughput taken from the server.
//!
//! `--pipeline P` (HTTP/1.1 pipelining) goes through the engine's batch driver with the
//! codec of [`batch`], and so does a run at one request in flight per connection whose
//! every operation the codec carries (it costs fewer system calls than a session).
//!
//! Errors: refused, reset or closed connections and I/O failures → `connect` (the engine
//! reconnects); statuses: 401, 403, 407 → `auth`; 408, 504 → `timeout`; 409, 412 →
//! `constraint`; every other unexpected status → `other`, named in the message ("expected
//! 200, got 404 Not Found"); a response that is not HTTP → `protocol`. Connecting must
//! finish within 5 s.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod batch;
mod head;

use head::Framing;

use super::attachment::{self, Attachment, Check};
use super::pipelined::{Batched, Codec};
use super::readbuf::ReadBuf;
use super::socket;
use super::tls::{NetStream, Tls};
use super::{Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::{ConnectPhases, PhaseClock, PhaseTimes};
use crate::vocab::{ErrorClass, Family, HttpOp, NativeOp, Op, OpError, Outcome, ValueKind};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The kv collection unless `kv_path` says otherwise.
pub const DEFAULT_KV_PATH: &str = "/dav/loadrig";

/// What every session shares.
struct Server {
    addrs: Vec<SocketAddr>,
    /// The host as given: the name a TLS certificate must carry.
    host: String,
    /// https:// (options `ca=`, `insecure=`) or off.
    tls: Tls,
    /// Every connection's TCP and TLS times.
    phases: PhaseClock,
    /// HOST:PORT, for messages and the Host header.
    shown: String,
    /// What follows the path in every request: the request line's end and the Host header
    /// (" HTTP/1.1\r\nHost: HOST:PORT\r\n"), written once here instead of per request.
    line_end: Vec<u8>,
    /// The URL's path without a trailing slash ("" for none).
    prefix: String,
    /// PREFIX + kv_path, without a trailing slash.
    kv_root: String,
    attachment: Option<Attachment>,
}

pub struct Http {
    server: Arc<Server>,
}

impl Http {
    pub fn open(
        url: &TargetUrl,
        params: &BTreeMap<String, toml::Value>,
    ) -> Result<Http, InputError> {
        // `status` names nginx's stub_status page for the server's observer (docs/observe.md).
        let mut known = vec!["kv_path", "attachment", "attachment_size", "status"];
        known.extend(super::tls::OPTIONS);
        url.check_options(&known)?;
        let tls = Tls::from_url(url, url.scheme == "https")?;
        let default_port = if tls.is_on() { 443 } else { 80 };
        let (authority, path) = match url.location.find('/') {
            Some(i) => url.location.split_at(i),
            None => (url.location.as_str(), ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(InputError::new(
                "http:// needs HOST[:PORT] without user or password, like http://127.0.0.1:8080",
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                let port = p.parse::<u16>().map_err(|_| {
                    InputError::new(format!("http://{authority}: '{p}' is not a port number"))
                })?;
                (h.trim_start_matches('[').trim_end_matches(']'), port)
            }
            _ => (
                authority.trim_start_matches('[').trim_end_matches(']'),
                default_port,
            ),
        };
        let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .map_err(|e| InputError::new(format!("http:// cannot resolve {authority}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(InputError::new(format!(
                "http:// {authority} resolves to no address"
            )));
        }
        if !authority.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(InputError::new(format!(
                "http://{authority}: not a valid host"
            )));
        }
        let prefix = path.trim_end_matches('/').to_string();
        let kv_path = url
            .option("kv_path", params)
            .unwrap_or_else(|| DEFAULT_KV_PATH.to_string());
        let kv_path = kv_path.trim_end_matches('/');
        let last = kv_path.rsplit('/').next().unwrap_or("");
        if !kv_path.starts_with('/') || !last.starts_with("loadrig") || last.contains("..") {
            return Err(InputError::new(format!(
                "http:// kv_path={kv_path}: expected a path whose last folder starts with 'loadrig', like /dav/loadrig"
            ))
            .help("cleanup deletes that whole folder, so it must be loadrig's own"));
        }
        let safe = |p: &str| {
            p.bytes()
                .all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#')
        };
        if !safe(&prefix) || !safe(kv_path) {
            return Err(InputError::new(
                "http:// paths may not hold spaces, '?' or '#'",
            ));
        }
        Ok(Http {
            server: Arc::new(Server {
                addrs,
                host: host.to_string(),
                tls,
                phases: PhaseClock::default(),
                shown: authority.to_string(),
                line_end: format!(" HTTP/1.1\r\nHost: {authority}\r\n").into_bytes(),
                kv_root: format!("{prefix}{kv_path}"),
                prefix,
                attachment: Attachment::from_options(url, params)?,
            }),
        })
    }
}

impl Target for Http {
    fn from_url(url: &TargetUrl, params: &super::Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = HttpSession;

    fn blocking(&self) -> bool {
        false
    }

    /// Its sessions never share a connection: `--pipeline` goes through the batch driver
    /// only ([`batch`]), which the runner checks the run can use.
    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some(if self.server.attachment.is_some() {
            "HTTP/1.1 pipelining does not carry attachments"
        } else {
            "only the batch driver pipelines HTTP/1.1 requests"
        })
    }

    fn batch_codec(&self) -> Option<&'static Codec> {
        self.server.attachment.is_none().then_some(&batch::CODEC)
    }

    fn connect_batched(&self) -> impl Future<Output = Result<Batched, OpError>> {
        batch::connect(&self.server)
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Http]
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.server.phases.snapshot()
    }

    fn connect(&self) -> impl Future<Output = Result<HttpSession, OpError>> {
        let server = Arc::clone(&self.server);
        async move {
            let stream = open(&server).await?;
            Ok(HttpSession {
                stream,
                server,
                path: String::with_capacity(128),
                out: Vec::with_capacity(512),
                inbuf: ReadBuf::new(16 * 1024),
                body: Vec::new(),
                reopen: false,
                used: false,
                want_server: false,
                server_header: None,
                check: None,
                check_failed: None,
                chunk: Vec::new(),
            })
        }
    }
}

/// Open one connection (TCP, then TLS for https://), within the connect timeout.
async fn open(server: &Server) -> Result<NetStream, OpError> {
    let connect = async {
        let started = Instant::now();
        let mut last = None;
        for addr in &server.addrs {
            match socket::connect(addr).await {
                Ok(s) => {
                    let tcp = started.elapsed();
                    let stream = server.tls.wrap(&server.host, s, &server.shown).await?;
                    server.phases.record(PhaseTimes {
                        tcp,
                        tls: server.tls.is_on().then(|| started.elapsed() - tcp),
                        auth: None,
                    });
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(OpError::new(
            ErrorClass::Connect,
            format!(
                "cannot connect to {}: {}",
                server.shown,
                last.map_or_else(|| "no address".to_string(), |e| e.to_string())
            ),
        ))
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(result) => result,
        Err(_) => Err(OpError::new(
            ErrorClass::Connect,
            format!(
                "no answer from {} within {} s",
                server.shown,
                CONNECT_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// One client's keep-alive connection and its reusable buffers.
pub struct HttpSession {
    stream: NetStream,
    server: Arc<Server>,
    /// The request path being built.
    path: String,
    /// The request being sent.
    out: Vec<u8>,
    /// Responses as read.
    inbuf: ReadBuf,
    /// The last response's body, when it was kept.
    body: Vec<u8>,
    /// The server said it closes the connection: open a new one before the next request.
    reopen: bool,
    /// A request has been answered on this connection (so it may have timed out idle).
    used: bool,
    /// Keep the next response's `Server` header in `server_header`.
    want_server: bool,
    server_header: Option<String>,
    /// The attachment being read back, checked as the body arrives, and its first failure.
    check: Option<Check>,
    check_failed: Option<OpError>,
    /// One piece of an attachment on its way out.
    chunk: Vec<u8>,
}

/// A response's status line, as far as loadrig needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: u16,
    pub reason: String,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.reason)
    }
}

/// The error for an unexpected status.
fn status_error(expected: Option<u16>, got: &Status) -> OpError {
    let class = match got.code {
        401 | 403 | 407 => ErrorClass::Auth,
        408 | 504 => ErrorClass::Timeout,
        409 | 412 => ErrorClass::Constraint,
        _ => ErrorClass::Other,
    };
    let message = match expected {
        Some(e) => format!("expected {e}, got {got}"),
        None => format!("got {got}"),
    };
    OpError::new(class, message)
}

/// Append `key` to `path` as a file name: letters, digits, '-' and '_' as they are, every
/// other byte as `~XX`, so no key can name another folder ("..", "/") or a query.
pub fn push_key(path: &mut String, key: &str) {
    escape_key(key, |b| path.push(b as char));
}

/// The bytes of `key` as a file name (see [`push_key`]), one at a time to `push`.
fn escape_key(key: &str, mut push: impl FnMut(u8)) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in key.as_bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            push(b);
        } else {
            push(b'~');
            push(HEX[(b >> 4) as usize]);
            push(HEX[(b & 15) as usize]);
        }
    }
}

/// Bytes that may not appear in a request line or header: they would end it early.
fn breaks_line(text: &[u8]) -> bool {
    text.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0)
}

/// A request without headers of its own.
const NO_HEADERS: [(&str, &[u8]); 0] = [];

/// Append a decimal number.
fn push_number(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// An `http` operation's arguments as its request takes them: the path, then each header's
/// value, then the body when the operation sends one.
struct HttpArgs<'a> {
    path: &'a [u8],
    names: &'a [(String, ValueKind)],
    values: &'a [Vec<u8>],
    body: &'a [u8],
}

impl<'a> HttpArgs<'a> {
    fn split(
        headers: &'a [(String, ValueKind)],
        has_body: bool,
        args: &'a [Vec<u8>],
    ) -> Result<HttpArgs<'a>, OpError> {
        let Some((path, rest)) = args.split_first() else {
            return Err(OpError::new(ErrorClass::Other, "http op without a path"));
        };
        if headers.len() > 16 {
            return Err(OpError::new(
                ErrorClass::Other,
                "an http op sends at most 16 headers",
            ));
        }
        let body: &[u8] = match (has_body, rest.get(headers.len())) {
            (true, Some(b)) => b,
            _ => &[],
        };
        Ok(HttpArgs {
            path,
            names: headers,
            values: rest,
            body,
        })
    }

    /// Each header's name and value, in the operation's order.
    fn headers(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> {
        let names = self.names.iter().map(|(name, _)| name.as_str());
        names.zip(self.values.iter().map(Vec::as_slice))
    }
}

/// Append one request: the method, the path (appended by `path`), the server's `line_end`
/// (see [`Server::line_end`]), `headers`, `Content-Length` when there is a body (or the
/// method sends one), the empty line, the body. Keep-alive is HTTP/1.1's default, so no
/// `Connection` header. On an error nothing is appended.
fn write_request<'h>(
    out: &mut Vec<u8>,
    method: &str,
    line_end: &[u8],
    path: impl FnOnce(&mut Vec<u8>),
    headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
    body: &[u8],
) -> Result<(), OpError> {
    let start = out.len();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    let path_start = out.len();
    path(out);
    let written = &out[path_start..];
    if written.is_empty() || written.iter().any(|&b| b <= b' ' || b == 0x7f) {
        let e = OpError::new(
            ErrorClass::Other,
            format!(
                "the path '{}' holds spaces or control characters",
                String::from_utf8_lossy(written).escape_debug()
            ),
        );
        out.truncate(start);
        return Err(e);
    }
    out.extend_from_slice(line_end);
    for (name, value) in headers {
        if name.is_empty()
            || breaks_line(name.as_bytes())
            || name.contains(':')
            || breaks_line(value)
        {
            out.truncate(start);
            return Err(OpError::new(
                ErrorClass::Other,
                format!("bad header '{}'", name.escape_debug()),
            ));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || matches!(method, "PUT" | "POST" | "PATCH") {
        out.extend_from_slice(b"Content-Length: ");
        push_number(out, body.len());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(())
}

impl HttpSession {
    fn closed(&self) -> OpError {
        OpError::new(
            ErrorClass::Connect,
            format!("{} closed the connection", self.server.shown),
        )
    }

    fn io_error(&self, e: std::io::Error) -> OpError {
        OpError::new(ErrorClass::Connect, format!("{}: {e}", self.server.shown))
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.stream = open(&self.server).await?;
        self.inbuf.clear();
        self.reopen = false;
        self.used = false;
        Ok(())
    }

    /// Format a request for `self.path` into `self.out`.
    fn format<'h>(
        &mut self,
        method: &str,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
        body: &[u8],
    ) -> Result<(), OpError> {
        self.out.clear();
        write_request(
            &mut self.out,
            method,
            &self.server.line_end,
            |out| out.extend_from_slice(self.path.as_bytes()),
            headers,
            body,
        )
    }

    /// Read more bytes into the buffer; `Ok(false)` at the end of the stream.
    async fn fill(&mut self) -> Result<bool, OpError> {
        let n = match self.stream.read(self.inbuf.spare()).await {
            Ok(n) => n,
            Err(e) => return Err(self.io_error(e)),
        };
        self.inbuf.advance(n);
        Ok(n > 0)
    }

    /// Send `self.out` and read the whole response; returns its status. The body is kept
    /// in `self.body` when `keep` is set. `head` says the request was a HEAD (no body).
    async fn exchange(&mut self, head: bool, keep: bool) -> Result<Status, OpError> {
        if self.reopen {
            self.reconnect().await?;
        }
        let retry = self.used;
        match self.round(head, keep).await {
            // A reused connection closed before answering: the server dropped it idle.
            Err(Retry::Closed) if retry => {
                self.reconnect().await?;
                self.round(head, keep).await.map_err(|e| match e {
                    Retry::Closed => self.closed(),
                    Retry::Failed(e) => e,
                })
            }
            Err(Retry::Closed) => Err(self.closed()),
            Err(Retry::Failed(e)) => Err(e),
            Ok(status) => Ok(status),
        }
    }

    async fn round(&mut self, head: bool, keep: bool) -> Result<Status, Retry> {
        self.inbuf.rewind_if_drained();
        if let Err(e) = self.stream.write_all(&self.out).await {
            return Err(match e.kind() {
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                    Retry::Closed
                }
                _ => Retry::Failed(self.io_error(e)),
            });
        }
        self.receive(head, keep).await
    }

    /// Read one response (its head, then its body); the request has been sent.
    async fn receive(&mut self, head: bool, keep: bool) -> Result<Status, Retry> {
        let started = self.inbuf.filled();
        // The response head; informational (1xx) heads are skipped.
        let (status, framing, close) = loop {
            let parsed = match head::parse(self.inbuf.unread(), head, self.want_server) {
                Ok(Some(h)) => {
                    if self.want_server {
                        self.server_header = h.server.map(|v| String::from_utf8_lossy(v).into());
                    }
                    let status = Status {
                        code: h.code,
                        reason: h.reason.to_string(),
                    };
                    Some(Ok((h.len, status, h.framing, h.close)))
                }
                Ok(None) => None,
                Err(head::Bad::BadLength) => Some(Err(OpError::new(
                    ErrorClass::Protocol,
                    "bad Content-Length",
                ))),
                Err(head::Bad::Malformed(e)) => Some(Err(OpError::new(
                    ErrorClass::Protocol,
                    format!("{}: malformed response: {e}", self.server.shown),
                ))),
            };
            match parsed {
                Some(Ok((n, status, framing, close))) => {
                    self.inbuf.consume(n);
                    if (100..200).contains(&status.code) && status.code != 101 {
                        continue;
                    }
                    break (status, framing, close);
                }
                Some(Err(e)) => return Err(Retry::Failed(e)),
                None => match self.fill().await {
                    Ok(true) => {}
                    Ok(false) if self.inbuf.filled() == started => return Err(Retry::Closed),
                    Ok(false) => return Err(Retry::Failed(self.closed())),
                    Err(e) if self.inbuf.filled() == started => {
                        let _ = e;
                        return Err(Retry::Closed);
                    }
                    Err(e) => return Err(Retry::Failed(e)),
                },
            }
        };
        self.body.clear();
        self.read_body(framing, keep).await.map_err(Retry::Failed)?;
        self.used = true;
        if close || framing == Framing::UntilClose {
            self.reopen = true;
        }
        Ok(status)
    }

    /// Take `n` buffered bytes of body (all of them if fewer are there); returns how many.
    fn take(&mut self, n: u64, keep: bool) -> u64 {
        let have = (self.inbuf.unread().len() as u64).min(n) as usize;
        let taken = self.inbuf.consume(have);
        if keep {
            self.body.extend_from_slice(&self.inbuf[taken]);
        } else if self.check_failed.is_none() {
            if let Some(check) = &mut self.check {
                if let Err(e) = check.feed(&self.inbuf[taken]) {
                    self.check_failed = Some(e);
                }
            }
        }
        have as u64
    }

    async fn read_body(&mut self, framing: Framing, keep: bool) -> Result<(), OpError> {
        match framing {
            Framing::None => Ok(()),
            Framing::Length(mut left) => {
                while left > 0 {
                    left -= self.take(left, keep);
                    if left > 0 && !self.fill().await? {
                        return Err(self.closed());
                    }
                }
                Ok(())
            }
            Framing::UntilClose => loop {
                self.take(u64::MAX, keep);
                if !self.fill().await? {
                    return Ok(());
                }
            },
            Framing::Chunked => loop {
                let size = loop {
                    match httparse::parse_chunk_size(self.inbuf.unread()) {
                        Ok(httparse::Status::Complete((n, size))) => {
                            self.inbuf.consume(n);
                            break size;
                        }
                        Ok(httparse::Status::Partial) => {
                            if !self.fill().await? {
                                return Err(self.closed());
                            }
                        }
                        Err(_) => {
                            return Err(OpError::new(
                                ErrorClass::Protocol,
                                format!("{}: bad chunk size", self.server.shown),
                            ))
                        }
                    }
                };
                if size == 0 {
                    // Trailers, if any, end with an empty line.
                    loop {
                        let rest = self.inbuf.unread();
                        if let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
                            self.inbuf.consume(end + 2);
                            if end == 0 {
                                return Ok(());
                            }
                        } else if !self.fill().await? {
                            return Err(self.closed());
                        }
                    }
                }
                let mut left = size;
                while left > 0 {
                    left -= self.take(left, keep);
                    if left > 0 && !self.fill().await? {
                        return Err(self.closed());
                    }
                }
                // The CRLF after the chunk's data.
                let mut crlf = 2;
                while crlf > 0 {
                    crlf -= self.take(crlf, false);
                    if crlf > 0 && !self.fill().await? {
                        return Err(self.closed());
                    }
                }
            },
        }
    }

    fn kv_path(&mut self, key: &str) {
        self.path.clear();
        self.path.push_str(&self.server.kv_root);
        self.path.push('/');
        push_key(&mut self.path, key);
    }

    /// A request without headers whose body is not kept.
    async fn simple(&mut self, method: &str, body: &[u8]) -> Result<Status, OpError> {
        self.format(method, NO_HEADERS, body)?;
        self.exchange(method == "HEAD", false).await
    }

    async fn put(&mut self, value: &[u8]) -> Result<u64, OpError> {
        let mut status = self.simple("PUT", value).await?;
        if status.code == 409 {
            // WebDAV: the collection is missing and this server does not create it on PUT.
            let file = std::mem::take(&mut self.path);
            self.path.push_str(&self.server.kv_root);
            self.path.push('/');
            self.simple("MKCOL", &[]).await?;
            self.path = file;
            status = self.simple("PUT", value).await?;
        }
        if (200..300).contains(&status.code) {
            Ok(1)
        } else {
            Err(status_error(None, &status))
        }
    }

    /// PUT the attachment of `key` (the path is set), streamed: the head with its
    /// Content-Length, then the body a chunk at a time, then the response.
    async fn put_attachment(&mut self, key: &str, a: &Attachment) -> Result<u64, OpError> {
        if self.reopen {
            self.reconnect().await?;
        }
        self.format("PUT", NO_HEADERS, &[])?;
        // format wrote "Content-Length: 0" for the empty body: the real length instead.
        let zero = b"Content-Length: 0\r\n\r\n";
        if !self.out.ends_with(zero) {
            return Err(OpError::new(
                ErrorClass::Other,
                "a PUT head without its length",
            ));
        }
        self.out.truncate(self.out.len() - 5);
        push_number(&mut self.out, a.size() as usize);
        self.out.extend_from_slice(b"\r\n\r\n");
        self.inbuf.rewind_if_drained();
        self.stream
            .write_all(&self.out)
            .await
            .map_err(|e| self.io_error(e))?;
        let mut chunks = a.chunks(key)?;
        while chunks.next_into(&mut self.chunk)? {
            if let Err(e) = self.stream.write_all(&self.chunk).await {
                return Err(self.io_error(e));
            }
        }
        let status = self.receive(false, false).await.map_err(|e| match e {
            Retry::Closed => self.closed(),
            Retry::Failed(e) => e,
        })?;
        if (200..300).contains(&status.code) {
            Ok(1)
        } else {
            Err(status_error(None, &status))
        }
    }

    /// GET the attachment of `key` (the path is set) and check its body as it arrives.
    async fn get_attachment(&mut self, key: &str, a: &Attachment) -> Result<u64, OpError> {
        self.check = Some(a.check(key)?);
        self.check_failed = None;
        let status = self.simple("GET", &[]).await;
        let check = self.check.take();
        match status? {
            s if s.code == 404 => Err(OpError::new(
                ErrorClass::Protocol,
                format!("attachment of {key} not found"),
            )),
            s if s.code != 200 => Err(status_error(Some(200), &s)),
            _ => match (self.check_failed.take(), check) {
                (Some(e), _) => Err(e),
                (None, Some(check)) => check.finish().map(|()| 1),
                (None, None) => Ok(1),
            },
        }
    }

    /// A document's kv operation, then the same on its attachment.
    async fn attached(&mut self, op: &Op<'_>, key: &str, a: &Attachment) -> Result<u64, OpError> {
        let rows = self.run_plain(op).await?.rows;
        self.kv_path(key);
        self.path.push_str(".att");
        match *op {
            Op::Put { .. } => self.put_attachment(key, a).await,
            Op::Get { .. } if rows == 0 => Err(attachment::missing(key)),
            Op::Get { .. } => self.get_attachment(key, a).await,
            _ => {
                self.simple("DELETE", &[]).await?;
                Ok(rows)
            }
        }
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let server = Arc::clone(&self.server);
        if let (Some(a), Op::Put { key, .. } | Op::Get { key } | Op::Delete { key }) =
            (&server.attachment, *op)
        {
            return self.attached(op, key, a).await.map(Outcome::rows);
        }
        self.run_plain(op).await
    }

    async fn native(
        &mut self,
        method: &str,
        headers: &[(String, ValueKind)],
        has_body: bool,
        expect: Option<u16>,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let a = HttpArgs::split(headers, has_body, args)?;
        self.path.clear();
        self.path.push_str(&self.server.prefix);
        self.path.push_str(&String::from_utf8_lossy(a.path));
        self.format(method, a.headers(), a.body)?;
        let status = self.exchange(method == "HEAD", capture).await?;
        let ok = match expect {
            Some(e) => status.code == e,
            None => status.code < 400,
        };
        if !ok {
            return Err(status_error(expect, &status));
        }
        let mut out = Outcome::rows(1);
        if capture {
            out.captured.push(std::mem::take(&mut self.body));
        }
        Ok(out)
    }

    async fn run_plain(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let rows = match *op {
            Op::Nop => 0,
            Op::Put { key, value } => {
                self.kv_path(key);
                self.put(value).await?
            }
            Op::Get { key } => {
                self.kv_path(key);
                match self.simple("GET", &[]).await? {
                    s if s.code == 200 => 1,
                    s if s.code == 404 => 0,
                    other => return Err(status_error(Some(200), &other)),
                }
            }
            Op::Update { key, value } => {
                self.kv_path(key);
                match self.simple("HEAD", &[]).await? {
                    s if s.code == 200 => self.put(value).await?,
                    s if s.code == 404 => 0,
                    other => return Err(status_error(Some(200), &other)),
                }
            }
            Op::Delete { key } => {
                self.kv_path(key);
                match self.simple("DELETE", &[]).await? {
                    s if (200..300).contains(&s.code) => 1,
                    s if s.code == 404 => 0,
                    other => return Err(status_error(Some(204), &other)),
                }
            }
            Op::Native {
                op:
                    NativeOp::Http(HttpOp {
                        method,
                        headers,
                        body,
                        expect,
                        ..
                    }),
                args,
                capture,
            } => {
                return self
                    .native(method, headers, body.is_some(), *expect, args, capture)
                    .await
            }
            // Every other family (the runner refuses them before anything runs), and
            // transactions, which HTTP has none of.
            Op::Native { .. } | Op::Begin | Op::Commit | Op::Rollback => {
                return Err(super::unsupported(op, "http://"))
            }
        };
        Ok(Outcome::rows(rows))
    }
}

/// Why a round trip failed: closed before any answer (may be retried once), or otherwise.
enum Retry {
    Closed,
    Failed(OpError),
}

impl Session for HttpSession {
    async fn server_version(&mut self) -> Option<String> {
        self.path.clear();
        self.path.push_str(&self.server.prefix);
        self.path.push('/');
        self.format("HEAD", NO_HEADERS, &[]).ok()?;
        self.want_server = true;
        let sent = self.exchange(true, false).await;
        self.want_server = false;
        sent.ok()?;
        self.server_header.take()
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    /// Delete the kv collection (`PREFIX/kv_path/`); counts 1 if it existed.
    async fn cleanup(&mut self) -> Result<u64, OpError> {
        self.path.clear();
        self.path.push_str(&self.server.kv_root);
        self.path.push('/');
        self.format("DELETE", [("Depth", &b"infinity"[..])], &[])?;
        let status = self.exchange(false, false).await?;
        match status.code {
            200..=299 => Ok(1),
            404 => Ok(0),
            _ => Err(OpError::new(
                status_error(Some(204), &status).class,
                format!("DELETE {}: expected 204, got {status}", self.path),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_safe_file_names() {
        let mut p = String::new();
        push_key(&mut p, "session:42");
        assert_eq!(p, "session~3a42");
        p.clear();
        push_key(&mut p, "../x/~y");
        assert_eq!(p, "~2e~2e~2fx~2f~7ey");
    }

    #[test]
    fn kv_path_must_be_loadrigs_own() {
        let params = BTreeMap::new();
        let url = |s: &str| TargetUrl::parse(s).unwrap();
        assert!(Http::open(&url("http://127.0.0.1:1?kv_path=/dav"), &params).is_err());
        assert!(Http::open(&url("http://127.0.0.1:1?kv_path=/dav/loadrig"), &params).is_ok());
        assert!(Http::open(&url("http://127.0.0.1:1?other=1"), &params).is_err());
        let h = Http::open(&url("http://127.0.0.1:1/api/"), &params).unwrap();
        assert_eq!(h.server.prefix, "/api");
        assert_eq!(h.server.kv_root, "/api/dav/loadrig");
    }

    /// A one-connection-at-a-time server on 127.0.0.1:0 that answers each request with the
    /// next canned response, closing the connection after it when told; `None` closes the
    /// connection without answering.
    fn fixture(
        responses: Vec<(Option<&'static str>, bool)>,
    ) -> (u16, std::thread::JoinHandle<Vec<String>>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut responses = responses.into_iter();
            'conns: while let Ok((mut s, _)) = listener.accept() {
                loop {
                    let mut req = Vec::new();
                    let mut byte = [0u8; 1];
                    while !req.ends_with(b"\r\n\r\n") {
                        match s.read(&mut byte) {
                            Ok(1) => req.push(byte[0]),
                            _ => continue 'conns,
                        }
                    }
                    seen.push(String::from_utf8_lossy(&req).into_owned());
                    match responses.next() {
                        Some((Some(r), close)) => {
                            s.write_all(r.as_bytes()).unwrap();
                            if responses.len() == 0 {
                                break 'conns;
                            }
                            if close {
                                continue 'conns;
                            }
                        }
                        Some((None, _)) => continue 'conns,
                        None => break 'conns,
                    }
                }
            }
            seen
        });
        (port, handle)
    }

    /// `GET` of the path given as the first argument.
    fn get() -> NativeOp<ValueKind> {
        NativeOp::Http(HttpOp {
            method: "GET".into(),
            path: ValueKind::Bytes,
            headers: Vec::new(),
            body: None,
            expect: Some(200),
        })
    }

    #[test]
    fn reads_chunked_informational_close_and_until_close_responses() {
        let (port, server) = fixture(vec![
            (Some("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\nT: 1\r\n\r\n"), false),
            (Some("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"), true),
            (Some("HTTP/1.1 200 OK\r\n\r\nuntil close"), true),
            (Some("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"), false),
            // The server drops the kept-alive connection: the client sends once more.
            (None, true),
            (Some("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), true),
        ]);
        let url = TargetUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let target = Http::open(&url, &BTreeMap::new()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let bodies = rt.block_on(async {
            let mut s = target.connect().await.unwrap();
            let mut bodies = Vec::new();
            for path in ["/a", "/b", "/c", "/d", "/e"] {
                let native = get();
                let args = [path.as_bytes().to_vec()];
                let r = s
                    .execute(&Op::Native {
                        op: &native,
                        args: &args,
                        capture: true,
                    })
                    .await;
                bodies.push(
                    r.map(|o| String::from_utf8(o.captured[0].clone()).unwrap())
                        .map_err(|e| e.message),
                );
            }
            bodies
        });
        assert_eq!(
            bodies,
            [
                Ok("hello, world".to_string()),
                Ok("abc".to_string()),
                Ok("until close".to_string()),
                Err("expected 200, got 404 Not Found".to_string()),
                Ok("ok".to_string()),
            ]
        );
        let seen = server.join().unwrap();
        assert_eq!(seen.len(), 6, "the dropped request was sent again");
        assert!(seen[0].starts_with("GET /a HTTP/1.1\r\nHost: 127.0.0.1:"));
    }
}
