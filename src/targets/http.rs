//! `http://HOST[:PORT][/PREFIX][?kv_path=/dav/loadrig]`: an HTTP/1.1 server over one
//! persistent (keep-alive) connection per client, driven by hyper.
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
//! - `cleanup` sends `DELETE PREFIX/kv_path/` (`Depth: infinity`) and counts 1 if the
//!   collection existed. `server_version` is the `Server` header of `HEAD PREFIX/`.
//! - No `tx` and no `authenticate` (HTTP has no session login); `connect` opens a new
//!   connection, which is the TCP handshake.
//!
//! When the server ends a keep-alive connection (`Connection: close`, as nginx does after
//! `keepalive_requests`, or an idle timeout), the next operation opens a new one first, as
//! wrk does; that reconnect is inside the operation's time.
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
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderName, HeaderValue, CONNECTION, HOST, SERVER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::{ErrorClass, Op, OpError, Outcome, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::spec::NativeOp;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The kv collection unless `kv_path` says otherwise.
pub const DEFAULT_KV_PATH: &str = "/dav/loadrig";

/// What every session shares.
struct Server {
    addrs: Vec<SocketAddr>,
    /// HOST:PORT, for messages and the Host header.
    shown: String,
    host: HeaderValue,
    /// The URL's path without a trailing slash ("" for none).
    prefix: String,
    /// PREFIX + kv_path, without a trailing slash.
    kv_root: String,
}

pub struct Http {
    server: Arc<Server>,
}

impl Http {
    pub fn open(
        url: &TargetUrl,
        params: &BTreeMap<String, toml::Value>,
    ) -> Result<Http, InputError> {
        url.check_options(&["kv_path"])?;
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
            _ => (authority.trim_start_matches('[').trim_end_matches(']'), 80),
        };
        let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .map_err(|e| InputError::new(format!("http:// cannot resolve {authority}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(InputError::new(format!(
                "http:// {authority} resolves to no address"
            )));
        }
        let host_header = HeaderValue::from_str(authority)
            .map_err(|_| InputError::new(format!("http://{authority}: not a valid host")))?;
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
                shown: authority.to_string(),
                host: host_header,
                kv_root: format!("{prefix}{kv_path}"),
                prefix,
            }),
        })
    }
}

impl Target for Http {
    type Session = HttpSession;

    fn blocking(&self) -> bool {
        false
    }

    fn families(&self) -> &'static [&'static str] {
        &["http"]
    }

    fn connect(&self) -> impl Future<Output = Result<HttpSession, OpError>> {
        let server = Arc::clone(&self.server);
        async move {
            let (sender, driver) = open(&server).await?;
            Ok(HttpSession {
                sender,
                driver,
                server,
                path: String::with_capacity(128),
                reopen: false,
            })
        }
    }
}

/// Open one connection; its driver runs as a task on the client's runtime.
async fn open(server: &Server) -> Result<(SendRequest<Full<Bytes>>, JoinHandle<()>), OpError> {
    let connect = async {
        let mut last = None;
        for addr in &server.addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(|| "no address".to_string(), |e| e.to_string()))
    };
    let stream = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!("cannot connect to {}: {e}", server.shown),
            ))
        }
        Err(_) => {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "no answer from {} within {} s",
                    server.shown,
                    CONNECT_TIMEOUT.as_secs()
                ),
            ))
        }
    };
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| OpError::new(ErrorClass::Connect, format!("{}: {e}", server.shown)))?;
    // The connection ends when the sender is dropped or the server closes it; its error,
    // if any, reaches the next request through the sender.
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((sender, driver))
}

/// One client's keep-alive connection.
pub struct HttpSession {
    sender: SendRequest<Full<Bytes>>,
    driver: JoinHandle<()>,
    server: Arc<Server>,
    /// The request path being built.
    path: String,
    /// The server said it closes the connection: open a new one before the next request.
    reopen: bool,
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// The error for an unexpected status.
fn status_error(expected: Option<u16>, got: StatusCode) -> OpError {
    let class = match got.as_u16() {
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

fn send_error(server: &Server, e: hyper::Error) -> OpError {
    let class = if e.is_parse() || e.is_parse_status() {
        ErrorClass::Protocol
    } else {
        ErrorClass::Connect
    };
    OpError::new(class, format!("{}: {e}", server.shown))
}

/// Append `key` to `path` as a file name: letters, digits, '-' and '_' as they are, every
/// other byte as `~XX`, so no key can name another folder ("..", "/") or a query.
pub fn push_key(path: &mut String, key: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in key.as_bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            path.push(b as char);
        } else {
            path.push('~');
            path.push(HEX[(b >> 4) as usize] as char);
            path.push(HEX[(b & 15) as usize] as char);
        }
    }
}

impl HttpSession {
    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.driver.abort();
        let (sender, driver) = open(&self.server).await?;
        self.sender = sender;
        self.driver = driver;
        self.reopen = false;
        Ok(())
    }

    /// Send a request for `self.path` and return the response head, body still to read.
    async fn send(
        &mut self,
        method: &Method,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<Response<Incoming>, OpError> {
        if self.reopen || self.sender.is_closed() {
            self.reconnect().await?;
        }
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(self.path.as_str())
            .header(HOST, self.server.host.clone());
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|e| OpError::new(ErrorClass::Other, format!("bad request: {e}")))?;
        let response = match self.sender.try_send_request(request).await {
            Ok(r) => r,
            // Never sent: the connection was gone already (idle timeout). Try once more.
            Err(mut e) => match e.take_message() {
                Some(request) => {
                    self.reconnect().await?;
                    self.sender
                        .send_request(request)
                        .await
                        .map_err(|e| send_error(&self.server, e))?
                }
                None => return Err(send_error(&self.server, e.into_error())),
            },
        };
        if response
            .headers()
            .get(CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"))
        {
            self.reopen = true;
        }
        Ok(response)
    }

    /// Read the whole body; keep it only when asked.
    async fn drain(&mut self, body: Incoming, keep: bool) -> Result<Option<Bytes>, OpError> {
        let shown = &self.server.shown;
        let read_error = |e: hyper::Error| {
            OpError::new(
                ErrorClass::Connect,
                format!("{shown}: reading the body: {e}"),
            )
        };
        if keep {
            let all = body.collect().await.map_err(read_error)?;
            return Ok(Some(all.to_bytes()));
        }
        let mut body = body;
        while let Some(frame) = body.frame().await {
            frame.map_err(read_error)?;
        }
        Ok(None)
    }

    /// A request whose body is not kept; returns the status.
    async fn exchange(
        &mut self,
        method: &Method,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<StatusCode, OpError> {
        let response = self.send(method, headers, body).await?;
        let status = response.status();
        self.drain(response.into_body(), false).await?;
        Ok(status)
    }

    fn kv_path(&mut self, key: &str) {
        self.path.clear();
        self.path.push_str(&self.server.kv_root);
        self.path.push('/');
        push_key(&mut self.path, key);
    }

    async fn put(&mut self, value: &[u8]) -> Result<u64, OpError> {
        let body = Bytes::copy_from_slice(value);
        let mut status = self.exchange(&Method::PUT, &[], body.clone()).await?;
        if status == StatusCode::CONFLICT {
            // WebDAV: the collection is missing and this server does not create it on PUT.
            let file = std::mem::take(&mut self.path);
            self.path.clear();
            self.path.push_str(&self.server.kv_root);
            self.path.push('/');
            let mkcol = Method::from_bytes(b"MKCOL").unwrap_or(Method::PUT);
            self.exchange(&mkcol, &[], Bytes::new()).await?;
            self.path = file;
            status = self.exchange(&Method::PUT, &[], body).await?;
        }
        if status.is_success() {
            Ok(1)
        } else {
            Err(status_error(None, status))
        }
    }

    async fn native(
        &mut self,
        method: &str,
        headers: &[(String, crate::spec::Template)],
        has_body: bool,
        expect: Option<u16>,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let Some((path, rest)) = args.split_first() else {
            return Err(OpError::new(ErrorClass::Other, "http op without a path"));
        };
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|_| OpError::new(ErrorClass::Other, format!("bad method {method}")))?;
        self.path.clear();
        self.path.push_str(&self.server.prefix);
        self.path.push_str(&String::from_utf8_lossy(path));
        let mut pairs = Vec::with_capacity(headers.len());
        for ((name, _), value) in headers.iter().zip(rest) {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                OpError::new(ErrorClass::Other, format!("bad header name '{name}'"))
            })?;
            let value = HeaderValue::from_bytes(value).map_err(|_| {
                OpError::new(ErrorClass::Other, format!("bad value for header '{name}'"))
            })?;
            pairs.push((name, value));
        }
        let body = match (has_body, rest.get(headers.len())) {
            (true, Some(b)) => Bytes::copy_from_slice(b),
            _ => Bytes::new(),
        };
        let response = self.send(&method, &pairs, body).await?;
        let status = response.status();
        let kept = self.drain(response.into_body(), capture).await?;
        let ok = match expect {
            Some(e) => status.as_u16() == e,
            None => status.as_u16() < 400,
        };
        if !ok {
            return Err(status_error(expect, status));
        }
        let mut out = Outcome::rows(1);
        if let Some(body) = kept {
            out.captured.push(body.to_vec());
        }
        Ok(out)
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let rows = match *op {
            Op::Nop => 0,
            Op::Put { key, value } => {
                self.kv_path(key);
                self.put(value).await?
            }
            Op::Get { key } => {
                self.kv_path(key);
                match self.exchange(&Method::GET, &[], Bytes::new()).await? {
                    StatusCode::OK => 1,
                    StatusCode::NOT_FOUND => 0,
                    other => return Err(status_error(Some(200), other)),
                }
            }
            Op::Update { key, value } => {
                self.kv_path(key);
                match self.exchange(&Method::HEAD, &[], Bytes::new()).await? {
                    StatusCode::OK => self.put(value).await?,
                    StatusCode::NOT_FOUND => 0,
                    other => return Err(status_error(Some(200), other)),
                }
            }
            Op::Delete { key } => {
                self.kv_path(key);
                match self.exchange(&Method::DELETE, &[], Bytes::new()).await? {
                    s if s.is_success() => 1,
                    StatusCode::NOT_FOUND => 0,
                    other => return Err(status_error(Some(204), other)),
                }
            }
            Op::Native {
                op:
                    NativeOp::Http {
                        method,
                        headers,
                        body,
                        expect,
                        ..
                    },
                args,
                capture,
            } => {
                return self
                    .native(method, headers, body.is_some(), *expect, args, capture)
                    .await
            }
            Op::Native { .. } | Op::Begin | Op::Commit | Op::Rollback => {
                return Err(super::unsupported(op, "http://"))
            }
        };
        Ok(Outcome::rows(rows))
    }
}

impl Session for HttpSession {
    async fn server_version(&mut self) -> Option<String> {
        self.path.clear();
        self.path.push_str(&self.server.prefix);
        self.path.push('/');
        let response = self.send(&Method::HEAD, &[], Bytes::new()).await.ok()?;
        let server = response
            .headers()
            .get(SERVER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        self.drain(response.into_body(), false).await.ok()?;
        server
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    /// Delete the kv collection (`PREFIX/kv_path/`); counts 1 if it existed.
    async fn cleanup(&mut self) -> Result<u64, OpError> {
        self.path.clear();
        self.path.push_str(&self.server.kv_root);
        self.path.push('/');
        let depth = [(
            HeaderName::from_static("depth"),
            HeaderValue::from_static("infinity"),
        )];
        match self.exchange(&Method::DELETE, &depth, Bytes::new()).await? {
            s if s.is_success() => Ok(1),
            StatusCode::NOT_FOUND => Ok(0),
            other => Err(OpError::new(
                status_error(Some(204), other).class,
                format!("DELETE {}: expected 204, got {other}", self.path),
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
}
