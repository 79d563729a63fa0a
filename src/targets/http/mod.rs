//! `http://HOST[:PORT][/PREFIX][?kv_path=/dav/loadrig&http=1.1|2|auto]`: an HTTP server over
//! one persistent connection per client; `https://…` the same over TLS (options `ca=PATH`,
//! `insecure=true`: see [`super::tls`]).
//!
//! - `http=` the protocol: `1.1` (the default: HTTP/1.1 keep-alive, [`http1`]), `2` (HTTP/2,
//!   [`http2`]: by prior knowledge on http://, h2 by ALPN on https://) or `auto` (https://:
//!   what the server picks by ALPN between h2 and http/1.1, asked once before the run; on
//!   http:// it is 1.1). A server that refuses HTTP/2 asked of it fails the connect with a
//!   message that says so, so the run stops before it starts (exit 2).
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
//!   document, then streams the attachment as the body of a second `PUT` (its length
//!   first, then 64 KiB at a time); get reads the document (404 → a `protocol` error), then
//!   the attachment, checking its body piece by piece as it arrives; delete removes both.
//! - `cleanup` sends `DELETE PREFIX/kv_path/` (`Depth: infinity`) and counts 1 if the
//!   collection existed. `server_version` is the `Server` header of `HEAD PREFIX/`.
//! - No `tx` and no `authenticate` (HTTP has no session login); `connect` opens a new
//!   connection: the TCP handshake (TLS, HTTP/2's preface and settings when asked).
//!
//! The operations are written once ([`ops`]) over one request-response exchange that each
//! protocol carries in its own way. `--pipeline P` on HTTP/1.1 (pipelining) goes through the
//! engine's batch driver with the codec of [`batch`], and so does a run at one request in
//! flight per connection whose every operation the codec carries (it costs fewer system
//! calls than a session); on HTTP/2 it is P streams multiplexed on each connection, each a
//! session of its own.
//!
//! Errors: refused, reset or closed connections and I/O failures → `connect` (the engine
//! reconnects); statuses: 401, 403, 407 → `auth`; 408, 504 → `timeout`; 409, 412 →
//! `constraint`; every other unexpected status → `other`, named in the message ("expected
//! 200, got 404 Not Found"); a response that is not HTTP → `protocol`; HTTP/2's resets and
//! GOAWAYs as [`http2`] says. Connecting must finish within 5 s.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

mod batch;
mod head;
mod http1;
mod http2;
mod ops;

use super::attachment::Attachment;
use super::pipelined::{Batched, Codec};
use super::socket;
use super::tls::{NetStream, Tls};
use super::{Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::{ConnectPhases, PhaseClock, PhaseTimes};
use crate::vocab::{ErrorClass, Family, Op, OpError, Outcome, ValueKind};
use http1::Http1Session;
use http2::Http2Session;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The kv collection unless `kv_path` says otherwise.
pub const DEFAULT_KV_PATH: &str = "/dav/loadrig";
/// What ALPN offers when HTTP/2 may be spoken, in order of preference: http/1.1 too, so that
/// a server without h2 says so by choosing it rather than by ending the handshake.
const ALPN_H2: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The protocol a target speaks (`http=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    One,
    Two,
    /// Over TLS: what the server picks by ALPN.
    Auto,
}

impl Version {
    fn name(self) -> &'static str {
        match self {
            Version::One => "HTTP/1.1",
            Version::Two => "HTTP/2",
            Version::Auto => "auto",
        }
    }
}

/// What every session shares.
struct Server {
    addrs: Vec<SocketAddr>,
    /// The host as given: the name a TLS certificate must carry.
    host: String,
    /// https:// (options `ca=`, `insecure=`) or off.
    tls: Tls,
    /// `http=` as asked (`Auto` only over TLS).
    version: Version,
    /// With `http=auto`: what the server chose by ALPN on the first connection, which every
    /// later connection must choose too.
    chosen: OnceLock<Version>,
    /// Every connection's TCP and TLS times (and HTTP/2's preface).
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
    /// `nodelay=off`: Nagle's algorithm left on (no TCP_NODELAY). An attachment's PUT
    /// writes its head, then its body: the body waits for the ACK of the head, which the
    /// server delays (40 ms at least on Linux), the documents study's quantised delay.
    nagle: bool,
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
        let mut known = vec![
            "kv_path",
            "attachment",
            "attachment_size",
            "http",
            "nodelay",
            "status",
        ];
        known.extend(super::tls::OPTIONS);
        url.check_options(&known)?;
        let tls = Tls::from_url(url, url.scheme == "https")?;
        let version = version_option(url, params, tls.is_on())?;
        let tls = match version {
            Version::One => tls,
            Version::Two | Version::Auto => tls.with_alpn(&ALPN_H2),
        };
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
        let nagle = match url.option("nodelay", params).as_deref() {
            None | Some("on") => false,
            Some("off") => true,
            Some(other) => {
                return Err(InputError::new(format!(
                    "http:// nodelay={other}: expected on or off"
                )))
            }
        };
        Ok(Http {
            server: Arc::new(Server {
                nagle,
                addrs,
                host: host.to_string(),
                tls,
                version,
                chosen: OnceLock::new(),
                phases: PhaseClock::default(),
                shown: authority.to_string(),
                line_end: format!(" HTTP/1.1\r\nHost: {authority}\r\n").into_bytes(),
                kv_root: format!("{prefix}{kv_path}"),
                prefix,
                attachment: Attachment::from_options(url, params)?,
            }),
        })
    }

    /// The protocol this run speaks: `http=` as asked, or with `auto` what the server picks
    /// by ALPN, learnt from one connection opened here if none has been yet (on a thread of
    /// its own, so that no caller's runtime is in the way). When that connection fails, 1.1
    /// for now: the run's first connect then reports the failure.
    fn protocol(&self) -> Version {
        let server = &self.server;
        if server.version != Version::Auto {
            return server.version;
        }
        if let Some(&v) = server.chosen.get() {
            return v;
        }
        std::thread::scope(|scope| {
            let probe = scope.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                rt.block_on(open(server)).ok().map(drop)
            });
            let _ = probe.join();
        });
        server.chosen.get().copied().unwrap_or(Version::One)
    }
}

/// `http=` (from the URL or a workload parameter): 1.1 unless it says otherwise.
fn version_option(
    url: &TargetUrl,
    params: &BTreeMap<String, toml::Value>,
    tls: bool,
) -> Result<Version, InputError> {
    match url.option("http", params).as_deref() {
        None | Some("1.1" | "1") => Ok(Version::One),
        Some("2") => Ok(Version::Two),
        Some("auto") if tls => Ok(Version::Auto),
        // Cleartext has nothing to negotiate with (no ALPN; h2c's Upgrade is not offered).
        Some("auto") => Ok(Version::One),
        Some(other) => Err(InputError::new(format!(
            "http={other}: expected 1.1, 2 or auto"
        ))
        .help("http=2 speaks HTTP/2 (by prior knowledge on http://, h2 by ALPN on https://); auto lets an https:// server choose")),
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

    /// HTTP/2 multiplexes streams, each a session; HTTP/1.1 sessions never share a
    /// connection: `--pipeline` goes through the batch driver only ([`batch`]), which the
    /// runner checks the run can use.
    fn cannot_pipeline(&self) -> Option<&'static str> {
        match self.protocol() {
            Version::Two => None,
            _ if self.server.attachment.is_some() => {
                Some("HTTP/1.1 pipelining does not carry attachments")
            }
            _ if self.server.nagle => Some("nodelay=off times one request at a time"),
            _ => Some("only the batch driver pipelines HTTP/1.1 requests"),
        }
    }

    fn connect_shared(&self, n: usize) -> impl Future<Output = Result<Vec<HttpSession>, OpError>> {
        let server = Arc::clone(&self.server);
        async move {
            let stream = open(&server).await?;
            if protocol_of(&server, &stream) != Version::Two {
                return Err(OpError::new(
                    ErrorClass::Connect,
                    format!(
                        "{}: the server chose HTTP/1.1, whose requests cannot share a connection as streams",
                        server.shown
                    ),
                ));
            }
            let sessions = http2::connect(&server, stream, n).await?;
            Ok(sessions.into_iter().map(HttpSession::Two).collect())
        }
    }

    fn batch_codec(&self) -> Option<&'static Codec> {
        (self.server.attachment.is_none() && !self.server.nagle && self.protocol() == Version::One)
            .then_some(&batch::CODEC)
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
            Ok(match protocol_of(&server, &stream) {
                Version::Two => {
                    let mut one = http2::connect(&server, stream, 1).await?;
                    match one.pop() {
                        Some(s) => HttpSession::Two(s),
                        None => return Err(OpError::new(ErrorClass::Other, "no HTTP/2 session")),
                    }
                }
                _ => HttpSession::One(Http1Session::new(server, stream)),
            })
        }
    }
}

/// The protocol a connection just opened speaks (what [`open`] found ALPN chose, or asked).
fn protocol_of(server: &Server, stream: &NetStream) -> Version {
    match server.version {
        Version::Auto if stream.alpn() == Some(b"h2") => Version::Two,
        Version::Auto => Version::One,
        v => v,
    }
}

/// Open one connection (TCP, then TLS for https://), within the connect timeout; with
/// HTTP/2 over TLS, the server must have chosen h2 by ALPN (with `auto`, what the first
/// connection chose).
async fn open(server: &Server) -> Result<NetStream, OpError> {
    let connect = async {
        let started = Instant::now();
        let mut last = None;
        for addr in &server.addrs {
            match socket::connect(addr).await {
                Ok(s) => {
                    if server.nagle {
                        s.set_nodelay(false).map_err(|e| {
                            OpError::new(ErrorClass::Connect, format!("{}: {e}", server.shown))
                        })?;
                    }
                    let tcp = started.elapsed();
                    let stream = server.tls.wrap(&server.host, s, &server.shown).await?;
                    server.phases.record(PhaseTimes {
                        tcp,
                        tls: server.tls.is_on().then(|| started.elapsed() - tcp),
                        auth: None,
                    });
                    check_alpn(server, &stream)?;
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

/// What the server chose by ALPN against what the target asked: `http=2` over TLS needs
/// h2; `auto` needs every connection to choose as the first did.
fn check_alpn(server: &Server, stream: &NetStream) -> Result<(), OpError> {
    if !server.tls.is_on() {
        return Ok(());
    }
    let chose = match stream.alpn() {
        Some(p) => String::from_utf8_lossy(p).into_owned(),
        None => "nothing".to_string(),
    };
    match server.version {
        Version::Two if stream.alpn() != Some(b"h2") => Err(OpError::new(
            ErrorClass::Connect,
            format!(
                "{} does not speak HTTP/2 over TLS: offered h2 and http/1.1 by ALPN, it chose {chose}; run with http=1.1 (or http=auto), or enable HTTP/2 on that port (nginx: listen … ssl http2)",
                server.shown
            ),
        )),
        Version::Auto => {
            let now = protocol_of(server, stream);
            let first = *server.chosen.get_or_init(|| now);
            if first == now {
                Ok(())
            } else {
                Err(OpError::new(
                    ErrorClass::Connect,
                    format!(
                        "{} chose {chose} by ALPN where its first connection chose {}: a run keeps one protocol",
                        server.shown,
                        first.name()
                    ),
                ))
            }
        }
        _ => Ok(()),
    }
}

/// One client's session: on a keep-alive HTTP/1.1 connection of its own, or a stream of
/// an HTTP/2 connection. One per client, so the smaller variant's unused bytes cost nothing
/// worth a box (and its indirection on every operation).
#[allow(clippy::large_enum_variant)]
pub enum HttpSession {
    One(Http1Session),
    Two(Http2Session),
}

impl Session for HttpSession {
    async fn server_version(&mut self) -> Option<String> {
        match self {
            HttpSession::One(s) => ops::server_version(s).await,
            HttpSession::Two(s) => ops::server_version(s).await,
        }
    }

    async fn execute(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        match self {
            HttpSession::One(s) => ops::run(s, op).await,
            HttpSession::Two(s) => ops::run(s, op).await,
        }
    }

    async fn cleanup(&mut self) -> Result<u64, OpError> {
        match self {
            HttpSession::One(s) => ops::cleanup(s).await,
            HttpSession::Two(s) => ops::cleanup(s).await,
        }
    }
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
}
