//! The operations of an http:// target, written once over [`Exchange`]: one request and its
//! whole response, as HTTP/1.1 ([`super::http1`]) or HTTP/2 ([`super::http2`]) carries it.

use std::sync::Arc;

use super::{push_key, status_error, HttpArgs, Server, Status, NO_HEADERS};
use crate::targets::attachment::{self, Attachment, Check};
use crate::vocab::{ErrorClass, HttpOp, NativeOp, Op, OpError, Outcome, ValueKind};

/// One request and its whole response on a session's connection.
pub(super) trait Exchange {
    fn server(&self) -> &Arc<Server>;
    /// The next request's path, built in place, beside the server.
    fn path_at(&mut self) -> (&mut String, &Server);
    fn path(&mut self) -> &mut String {
        self.path_at().0
    }
    /// Send `method` to the path with `headers` and `body` and read the whole response: its
    /// status, and its body kept for [`Exchange::take_body`] when `keep`.
    async fn send<'h>(
        &mut self,
        method: &str,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
        body: &[u8],
        keep: bool,
    ) -> Result<Status, OpError>;
    /// The body the last [`Exchange::send`] kept.
    fn take_body(&mut self) -> Vec<u8>;
    /// GET the path, feeding the response's body to `check` as it arrives: the status, the
    /// check, and the first failure of the check.
    async fn get_checked(
        &mut self,
        check: Check,
    ) -> Result<(Status, Check, Option<OpError>), OpError>;
    /// PUT the attachment of `key` to the path, streamed: its length first, then its body a
    /// piece at a time.
    async fn put_attachment(&mut self, key: &str, a: &Attachment) -> Result<Status, OpError>;
    /// HEAD of the path: the response's `Server` header.
    async fn server_header(&mut self) -> Option<String>;
}

/// Execute one operation (the attachment's too, with `attachment=`).
pub(super) async fn run<E: Exchange>(s: &mut E, op: &Op<'_>) -> Result<Outcome, OpError> {
    let server = Arc::clone(s.server());
    if let (Some(a), Op::Put { key, .. } | Op::Get { key } | Op::Delete { key }) =
        (&server.attachment, *op)
    {
        return attached(s, op, key, a).await.map(Outcome::rows);
    }
    run_plain(s, op).await
}

/// Point the path at `key`'s resource in the kv collection.
fn kv_path<E: Exchange>(s: &mut E, key: &str) {
    let (path, server) = s.path_at();
    path.clear();
    path.push_str(&server.kv_root);
    path.push('/');
    push_key(path, key);
}

/// A request without headers whose body is not kept.
async fn simple<E: Exchange>(s: &mut E, method: &str, body: &[u8]) -> Result<Status, OpError> {
    s.send(method, NO_HEADERS, body, false).await
}

async fn put<E: Exchange>(s: &mut E, value: &[u8]) -> Result<u64, OpError> {
    let mut status = simple(s, "PUT", value).await?;
    if status.code == 409 {
        // WebDAV: the collection is missing and this server does not create it on PUT.
        let (path, server) = s.path_at();
        let file = std::mem::take(path);
        path.push_str(&server.kv_root);
        path.push('/');
        simple(s, "MKCOL", &[]).await?;
        *s.path() = file;
        status = simple(s, "PUT", value).await?;
    }
    created(&status)
}

/// A PUT's status as rows: 2xx is one.
fn created(status: &Status) -> Result<u64, OpError> {
    if (200..300).contains(&status.code) {
        Ok(1)
    } else {
        Err(status_error(None, status))
    }
}

/// GET the attachment of `key` (the path is set) and check its body as it arrives.
async fn get_attachment<E: Exchange>(s: &mut E, key: &str, a: &Attachment) -> Result<u64, OpError> {
    let (status, check, failed) = s.get_checked(a.check(key)?).await?;
    match status.code {
        404 => Err(OpError::new(
            ErrorClass::Protocol,
            format!("attachment of {key} not found"),
        )),
        200 => match failed {
            Some(e) => Err(e),
            None => check.finish().map(|()| 1),
        },
        _ => Err(status_error(Some(200), &status)),
    }
}

/// A document's kv operation, then the same on its attachment.
async fn attached<E: Exchange>(
    s: &mut E,
    op: &Op<'_>,
    key: &str,
    a: &Attachment,
) -> Result<u64, OpError> {
    let rows = run_plain(s, op).await?.rows;
    kv_path(s, key);
    s.path().push_str(".att");
    match *op {
        Op::Put { .. } => created(&s.put_attachment(key, a).await?),
        Op::Get { .. } if rows == 0 => Err(attachment::missing(key)),
        Op::Get { .. } => get_attachment(s, key, a).await,
        _ => {
            simple(s, "DELETE", &[]).await?;
            Ok(rows)
        }
    }
}

async fn native<E: Exchange>(
    s: &mut E,
    method: &str,
    headers: &[(String, ValueKind)],
    has_body: bool,
    expect: Option<u16>,
    args: &[Vec<u8>],
    capture: bool,
) -> Result<Outcome, OpError> {
    let a = HttpArgs::split(headers, has_body, args)?;
    let (path, server) = s.path_at();
    path.clear();
    path.push_str(&server.prefix);
    path.push_str(&String::from_utf8_lossy(a.path));
    let status = s.send(method, a.headers(), a.body, capture).await?;
    let ok = match expect {
        Some(e) => status.code == e,
        None => status.code < 400,
    };
    if !ok {
        return Err(status_error(expect, &status));
    }
    let mut out = Outcome::rows(1);
    if capture {
        out.captured.push(s.take_body());
    }
    Ok(out)
}

async fn run_plain<E: Exchange>(s: &mut E, op: &Op<'_>) -> Result<Outcome, OpError> {
    let rows = match *op {
        Op::Nop => 0,
        Op::Put { key, value } => {
            kv_path(s, key);
            put(s, value).await?
        }
        Op::Get { key } => {
            kv_path(s, key);
            match simple(s, "GET", &[]).await? {
                st if st.code == 200 => 1,
                st if st.code == 404 => 0,
                other => return Err(status_error(Some(200), &other)),
            }
        }
        Op::Update { key, value } => {
            kv_path(s, key);
            match simple(s, "HEAD", &[]).await? {
                st if st.code == 200 => put(s, value).await?,
                st if st.code == 404 => 0,
                other => return Err(status_error(Some(200), &other)),
            }
        }
        Op::Delete { key } => {
            kv_path(s, key);
            match simple(s, "DELETE", &[]).await? {
                st if (200..300).contains(&st.code) => 1,
                st if st.code == 404 => 0,
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
        } => return native(s, method, headers, body.is_some(), *expect, args, capture).await,
        // Every other family (the runner refuses them before anything runs), and
        // transactions, which HTTP has none of.
        Op::Native { .. } | Op::Begin | Op::Commit | Op::Rollback => {
            return Err(crate::targets::unsupported(op, "http://"))
        }
    };
    Ok(Outcome::rows(rows))
}

/// The server's `Server` header, from `HEAD PREFIX/`.
pub(super) async fn server_version<E: Exchange>(s: &mut E) -> Option<String> {
    let (path, server) = s.path_at();
    path.clear();
    path.push_str(&server.prefix);
    path.push('/');
    s.server_header().await
}

/// Delete the kv collection (`PREFIX/kv_path/`); counts 1 if it existed.
pub(super) async fn cleanup<E: Exchange>(s: &mut E) -> Result<u64, OpError> {
    let (path, server) = s.path_at();
    path.clear();
    path.push_str(&server.kv_root);
    path.push('/');
    let status = s
        .send("DELETE", [("Depth", &b"infinity"[..])], &[], false)
        .await?;
    match status.code {
        200..=299 => Ok(1),
        404 => Ok(0),
        _ => Err(OpError::new(
            status_error(Some(204), &status).class,
            format!("DELETE {}: expected 204, got {status}", s.path()),
        )),
    }
}
