//! HTTP/1.1 for the engine's batch driver (`engine::pipe`, `--pipeline P` on plain
//! http://): requests are written back to back on one keep-alive connection before their
//! responses arrive (HTTP/1.1 pipelining, RFC 9112 §9.3.2), and the server answers them in
//! order. [`frame`] reads each head once ([`super::head`]: httparse, then one walk over its
//! headers) and takes from that one parse where the response ends (Content-Length, chunked
//! transfer coding, or no body for 1xx/204/304) and whether the server closes the
//! connection after it; `decode` maps its status exactly as the session path does, from the
//! status code's three digits.
//!
//! Not carried (they stay on the session path, so `--pipeline` above 1 refuses them):
//! HEAD (its response's length cannot be told from the response alone), kv `update`
//! (HEAD, then PUT), operations that capture the body, and attachments. A response without
//! Content-Length or chunked coding (delimited by the close) cannot be pipelined: it is a
//! `protocol` error.
//!
//! The codec's functions hold no state; every request carries the target's `Host` and path
//! prefix, which [`connect`] hands over as the connection's context: the part after the
//! path ([`Server::line_end`]) is formatted once there.

use std::sync::{Arc, LazyLock};

use super::head::{self, Framing};
use super::{escape_key, status_error, write_request, HttpArgs, Server, Status, NO_HEADERS};
use crate::targets::pipelined::{plain_step, Batched, Codec, Context};
use crate::vocab::{ErrorClass, HttpOp, NativeOp, Op, OpError, Outcome};
use crate::workload::OpKind;

pub static CODEC: Codec = Codec {
    accepts,
    encode,
    frame_len,
    decode,
    closes: Some(frame),
    prepare: crate::targets::pipelined::prepare_nothing,
    one_in_flight: true,
    batch: None,
    tls_records: false,
};

/// Open one connection (TLS for https://) for the batch driver.
pub async fn connect(server: &Arc<Server>) -> Result<Batched, OpError> {
    Ok(Batched {
        stream: super::open(server).await?,
        shown: server.shown.clone(),
        context: Some(Arc::clone(server) as Arc<Context>),
    })
}

fn accepts(kind: &OpKind) -> bool {
    match kind {
        OpKind::Put { .. } | OpKind::Get { .. } | OpKind::Delete { .. } => true,
        OpKind::Native(step) => {
            matches!(&step.op, NativeOp::Http(HttpOp { method, .. }) if method != "HEAD")
                && plain_step(step)
        }
        _ => false,
    }
}

fn encode(op: &Op<'_>, context: Option<&Context>, out: &mut Vec<u8>) -> Result<(), OpError> {
    let Some(server) = context.and_then(|c| c.downcast_ref::<Server>()) else {
        return Err(OpError::new(
            ErrorClass::Other,
            "an HTTP connection of the batch driver without its server",
        ));
    };
    let end = &server.line_end;
    let kv = |key| kv_path(&server.kv_root, key);
    match *op {
        Op::Put { key, value } => write_request(out, "PUT", end, kv(key), NO_HEADERS, value),
        Op::Get { key } => write_request(out, "GET", end, kv(key), NO_HEADERS, &[]),
        Op::Delete { key } => write_request(out, "DELETE", end, kv(key), NO_HEADERS, &[]),
        Op::Native {
            op:
                NativeOp::Http(HttpOp {
                    method,
                    headers,
                    body,
                    ..
                }),
            args,
            capture: false,
        } => {
            let a = HttpArgs::split(headers, body.is_some(), args)?;
            let path = |out: &mut Vec<u8>| {
                out.extend_from_slice(server.prefix.as_bytes());
                out.extend_from_slice(a.path);
            };
            write_request(out, method, end, path, a.headers(), a.body)
        }
        _ => Err(OpError::new(
            ErrorClass::Other,
            "this operation cannot go through the batch driver",
        )),
    }
}

/// The path of `key`'s resource in the collection `root`.
fn kv_path<'a>(root: &'a str, key: &'a str) -> impl FnOnce(&mut Vec<u8>) + 'a {
    move |out| {
        out.extend_from_slice(root.as_bytes());
        out.push(b'/');
        escape_key(key, |b| out.push(b));
    }
}

/// Where the first whole response in `buf` ends (informational 1xx heads before it
/// included).
fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    Ok(frame(buf)?.map(|(n, _)| n))
}

/// Where the first whole response in `buf` ends, and whether the server closes the
/// connection after it (`Connection: close`, or HTTP/1.0 without keep-alive, in the final
/// head), both from one parse of each head.
fn frame(buf: &[u8]) -> Result<Option<(usize, bool)>, String> {
    let mut at = 0;
    loop {
        let Some(h) = head::parse(&buf[at..], false, false).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        at += h.len;
        if h.code == 101 {
            return Err("the server switched protocols (101)".into());
        }
        if (100..200).contains(&h.code) {
            continue;
        }
        let rest = buf.len() - at;
        let end = match h.framing {
            Framing::None => Some(at),
            Framing::Length(len) => (len <= rest as u64).then(|| at + len as usize),
            Framing::Chunked => chunked_len(&buf[at..])?.map(|n| at + n),
            Framing::UntilClose => return Err(
                "a response without Content-Length or chunked coding ends only with its connection, so it cannot be pipelined".into(),
            ),
        };
        return Ok(end.map(|end| (end, h.close)));
    }
}

/// The length of a chunked body (chunks, the last chunk, trailers, the empty line).
fn chunked_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    loop {
        let (n, size) = match httparse::parse_chunk_size(&buf[at..]) {
            Ok(httparse::Status::Complete(c)) => c,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err("bad chunk size".into()),
        };
        at += n;
        if size == 0 {
            // Trailer lines, if any, then the empty line.
            loop {
                let Some(end) = buf[at..].windows(2).position(|w| w == b"\r\n") else {
                    return Ok(None);
                };
                at += end + 2;
                if end == 0 {
                    return Ok(Some(at));
                }
            }
        }
        let need = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_add(2))
            .ok_or("a chunk too large")?;
        if buf.len() - at < need {
            return Ok(None);
        }
        if &buf[at + need - 2..at + need] != b"\r\n" {
            return Err("a chunk not followed by CRLF".into());
        }
        at += need;
    }
}

/// The final status code of a whole response (as [`frame`] found it), and the final head
/// (from its status line on): the three digits after "HTTP/1.x " of its first head, or of
/// the first head after the informational ones. `frame` has checked the head, so nothing
/// else of it is read unless the status is an error (the reason phrase, [`reason`]).
fn final_code(frame: &[u8]) -> Result<(u16, &[u8]), OpError> {
    // Built once: `memmem::find` builds its searcher on every call.
    static HEAD_END: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\r\n\r\n"));
    let mut rest = frame;
    loop {
        let code = match rest.get(..12) {
            Some([b'H', b'T', b'T', b'P', b'/', b'1', b'.', _, _, d @ ..])
                if d.iter().all(u8::is_ascii_digit) =>
            {
                d.iter().fold(0, |n, &d| n * 10 + u16::from(d - b'0'))
            }
            _ => {
                return Err(OpError::new(
                    ErrorClass::Protocol,
                    "a response without a status",
                ))
            }
        };
        if !(100..200).contains(&code) {
            return Ok((code, rest));
        }
        rest = &rest[HEAD_END.find(rest).map_or(rest.len(), |e| e + 4)..];
    }
}

/// The reason phrase of a final head's status line (for messages only).
fn reason(head: &[u8]) -> &[u8] {
    let line_end = memchr::memmem::find(head, b"\r\n").unwrap_or(0);
    head.get(13..line_end).unwrap_or(&[])
}

fn decode(kind: &OpKind, frame: &[u8]) -> Result<Outcome, OpError> {
    let (code, head) = final_code(frame)?;
    let fail = |expected: Option<u16>| {
        let reason = String::from_utf8_lossy(reason(head)).into_owned();
        Err(status_error(expected, &Status { code, reason }))
    };
    let rows = match kind {
        OpKind::Get { .. } => match code {
            200 => 1,
            404 => 0,
            _ => return fail(Some(200)),
        },
        OpKind::Put { .. } if (200..300).contains(&code) => 1,
        OpKind::Put { .. } => return fail(None),
        OpKind::Delete { .. } => match code {
            200..=299 => 1,
            404 => 0,
            _ => return fail(Some(204)),
        },
        OpKind::Native(step) => match &step.op {
            NativeOp::Http(HttpOp { expect, .. }) => {
                if expect.map_or(code < 400, |e| code == e) {
                    1
                } else {
                    return fail(*expect);
                }
            }
            _ => return Err(not_carried()),
        },
        _ => return Err(not_carried()),
    };
    Ok(Outcome::rows(rows))
}

fn not_carried() -> OpError {
    OpError::new(
        ErrorClass::Other,
        "this operation cannot go through the batch driver",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_length_chunked_informational_and_bodiless_responses() {
        let length = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1";
        assert_eq!(frame_len(length), Ok(Some(41)));
        assert_eq!(frame_len(&length[..40]), Ok(None));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\nT: 1\r\n\r\nnext";
        let whole = chunked.len() - 4;
        assert_eq!(frame_len(chunked), Ok(Some(whole)));
        for cut in [20, 50, 55, whole - 1] {
            assert_eq!(frame_len(&chunked[..cut]), Ok(None), "cut at {cut}");
        }
        let early =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n";
        assert_eq!(frame_len(early), Ok(Some(early.len())));
        assert!(frame_len(b"HTTP/1.1 200 OK\r\n\r\nbody").is_err());
        assert!(frame_len(b"SSH-2.0\r\n\r\n").is_err());
        assert!(frame_len(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err());
    }

    #[test]
    fn a_head_with_many_headers_frames_up_to_64() {
        let head = |n: usize| {
            let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..n {
                r.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
            }
            r.extend_from_slice(b"Content-Length: 2\r\n\r\nokHTTP");
            r
        };
        // Content-Length last, after up to 63 others.
        for n in [15, 16, 40, 63] {
            let r = head(n);
            assert_eq!(
                frame_len(&r),
                Ok(Some(r.len() - 4)),
                "{n} headers before it"
            );
            assert_eq!(
                frame_len(&r[..r.len() - 5]),
                Ok(None),
                "{n}, cut in the body"
            );
            assert_eq!(
                frame_len(&r[..r.len() - 30]),
                Ok(None),
                "{n}, cut in the head"
            );
        }
        // 65 headers in all: refused.
        assert_eq!(frame_len(&head(64)), Err("too many headers".into()));
    }

    /// Whether the server closes the connection after the first response of `buf`.
    fn closes(buf: &[u8]) -> bool {
        frame(buf).unwrap().unwrap().1
    }

    #[test]
    fn connection_close_ends_the_connection() {
        assert!(closes(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!closes(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(closes(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!closes(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"
        ));
        // Among other headers starting with a c, in lower case, in a token list.
        assert!(closes(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncache-control: no-cache\r\nconnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n"
        ));
        // The final head after an informational one decides; a body's text does not, nor
        // does the next response's head.
        assert!(closes(
            b"HTTP/1.1 100 Continue\r\nConnection: keep-alive\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!closes(
            b"HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
        ));
        assert!(!closes(
            b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\nConnection: close\r\n"
        ));
        assert!(!closes(
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
        ));
        // A chunked response with Connection: close, whole and cut.
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        assert_eq!(frame(chunked), Ok(Some((chunked.len(), true))));
        assert_eq!(frame(&chunked[..chunked.len() - 1]), Ok(None));
    }

    #[test]
    fn statuses_map_as_on_the_session_path() {
        let key = crate::workload::template::Template::compile("k", &Default::default(), &mut 0);
        let get = OpKind::Get { key: key.unwrap() };
        let not_found = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(decode(&get, not_found).map(|o| o.rows).ok(), Some(0));
        let forbidden = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 Forbidden\r\n\r\n";
        let e = decode(&get, forbidden).unwrap_err();
        assert_eq!(e.class, ErrorClass::Auth);
        assert_eq!(e.message, "expected 200, got 403 Forbidden");
        let bare = decode(&get, b"HTTP/1.1 500\r\nContent-Length: 0\r\n\r\n").unwrap_err();
        assert_eq!(bare.message, "expected 200, got 500 ");
        let not_http = decode(&get, b"HTTP/2.0 200 OK\r\n\r\n").unwrap_err();
        assert_eq!(not_http.class, ErrorClass::Protocol);
    }
}
