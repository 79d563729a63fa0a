//! HTTP/1.1 on one keep-alive connection per session, written here on `httparse` (the
//! response parser hyper uses): each request is formatted into the session's reusable buffer
//! and sent with one write, the response is parsed in place in its reusable read buffer
//! (Content-Length, chunked, or until close; no body for HEAD, 1xx, 204 and 304), and nothing
//! is allocated per request unless a body is captured. hyper's client costs several times
//! more CPU per request (a dispatcher task per connection, channels, a HeaderMap per
//! response), which on a machine shared with the server is throughput taken from the server.
//!
//! When the server ends a keep-alive connection (`Connection: close`, as nginx does after
//! `keepalive_requests`), the next operation opens a new one first, as wrk does; that
//! reconnect is inside the operation's time. A reused connection that turns out closed
//! before any byte of the response arrived (an idle timeout) is reopened and the request
//! sent once more.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::head::{self, Framing};
use super::ops::Exchange;
use super::{push_number, write_request, Server, Status, NO_HEADERS};
use crate::targets::attachment::{Attachment, Check};
use crate::targets::readbuf::ReadBuf;
use crate::targets::tls::NetStream;
use crate::vocab::{ErrorClass, OpError};

/// One client's keep-alive connection and its reusable buffers.
pub struct Http1Session {
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

impl Http1Session {
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
        self.stream = super::open(&self.server).await?;
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

    /// PUT the attachment of `key` to the path, streamed: the head with its
    /// Content-Length, then the body a chunk at a time, then the response.
    async fn put_streamed(&mut self, a: &Attachment, key: &str) -> Result<Status, OpError> {
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
        self.receive(false, false).await.map_err(|e| match e {
            Retry::Closed => self.closed(),
            Retry::Failed(e) => e,
        })
    }

    /// A session on a connection just opened.
    pub(super) fn new(server: Arc<Server>, stream: NetStream) -> Http1Session {
        Http1Session {
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
        }
    }
}

impl Exchange for Http1Session {
    fn server(&self) -> &Arc<Server> {
        &self.server
    }

    fn path_at(&mut self) -> (&mut String, &Server) {
        (&mut self.path, &self.server)
    }

    async fn send<'h>(
        &mut self,
        method: &str,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
        body: &[u8],
        keep: bool,
    ) -> Result<Status, OpError> {
        self.format(method, headers, body)?;
        self.exchange(method == "HEAD", keep).await
    }

    fn take_body(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    async fn get_checked(
        &mut self,
        check: Check,
    ) -> Result<(Status, Check, Option<OpError>), OpError> {
        self.check = Some(check);
        self.check_failed = None;
        self.format("GET", NO_HEADERS, &[])?;
        let status = self.exchange(false, false).await;
        let check = self.check.take();
        let status = status?;
        match check {
            Some(check) => Ok((status, check, self.check_failed.take())),
            None => Err(OpError::new(
                ErrorClass::Other,
                "an attachment's check went missing",
            )),
        }
    }

    async fn put_attachment(&mut self, key: &str, a: &Attachment) -> Result<Status, OpError> {
        self.put_streamed(a, key).await
    }

    async fn server_header(&mut self) -> Option<String> {
        self.format("HEAD", NO_HEADERS, &[]).ok()?;
        self.want_server = true;
        let sent = self.exchange(true, false).await;
        self.want_server = false;
        sent.ok()?;
        self.server_header.take()
    }
}

/// Why a round trip failed: closed before any answer (may be retried once), or otherwise.
enum Retry {
    Closed,
    Failed(OpError),
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::Http;
    use crate::targets::{Session, Target, TargetUrl};
    use crate::vocab::{HttpOp, NativeOp, Op, ValueKind};

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
