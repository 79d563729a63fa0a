//! HTTP/1.1 for the engine's batch driver (`engine::pipe`, `--pipeline P` on plain
//! http://): requests are written back to back on one keep-alive connection before their
//! responses arrive (HTTP/1.1 pipelining, RFC 9112 §9.3.2), and the server answers them in
//! order. `frame_len` finds where one response ends (its head by `httparse`, then
//! Content-Length, chunked transfer coding, or no body for 1xx/204/304); `decode` maps its
//! status exactly as the session path does.
//!
//! Not carried (they stay on the session path, so `--pipeline` above 1 refuses them):
//! HEAD (its response's length cannot be told from the response alone), kv `update`
//! (HEAD, then PUT), operations that capture the body, and attachments. A response without
//! Content-Length or chunked coding (delimited by the close) cannot be pipelined: it is a
//! `protocol` error.
//!
//! The codec's functions hold no state; every request carries the target's `Host` and path
//! prefix, which [`connect`] hands over as the connection's context.

use std::sync::{Arc, LazyLock};

use super::{
    escape_key, framing_of, status_error, write_request, Framing, HttpArgs, Server, Status,
};
use crate::spec::OpKind;
use crate::targets::pipelined::{Batched, Codec, Context};
use crate::targets::tls::NetStream;
use crate::vocab::{ErrorClass, NativeOp, Op, OpError, Outcome};

pub static CODEC: Codec = Codec {
    accepts,
    encode,
    frame_len,
    decode,
    closes: Some(closes),
    prepare: crate::targets::pipelined::prepare_nothing,
    one_in_flight: true,
    batch: None,
};

/// Open one plain connection for the batch driver.
pub async fn connect(server: &Arc<Server>) -> Result<Batched, OpError> {
    let NetStream::Plain(stream) = super::open(server).await? else {
        return Err(OpError::new(
            ErrorClass::Other,
            "the batch driver needs a plain TCP connection",
        ));
    };
    Ok(Batched {
        stream,
        shown: server.shown.clone(),
        context: Some(Arc::clone(server) as Arc<Context>),
    })
}

fn accepts(kind: &OpKind) -> bool {
    match kind {
        OpKind::Put { .. } | OpKind::Get { .. } | OpKind::Delete { .. } => true,
        OpKind::Native(step) => {
            matches!(&step.op, NativeOp::Http { method, .. } if method != "HEAD")
                && step.capture.is_empty()
                && step.when.is_empty()
                && step.peer.is_none()
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
    let host = server.shown.as_bytes();
    let kv = |key| kv_path(&server.kv_root, key);
    match *op {
        Op::Put { key, value } => write_request(out, "PUT", host, kv(key), &[], value),
        Op::Get { key } => write_request(out, "GET", host, kv(key), &[], &[]),
        Op::Delete { key } => write_request(out, "DELETE", host, kv(key), &[], &[]),
        Op::Native {
            op:
                NativeOp::Http {
                    method,
                    headers,
                    body,
                    ..
                },
            args,
            capture: false,
        } => {
            let a = HttpArgs::split(headers, body.is_some(), args)?;
            let path = |out: &mut Vec<u8>| {
                out.extend_from_slice(server.prefix.as_bytes());
                out.extend_from_slice(a.path);
            };
            write_request(out, method, host, path, a.headers(), a.body)
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

/// Headers a response is parsed with first: filling the 64 empty headers a response may
/// have cost some 400 instructions a response, and most have fewer than this; one with
/// more is parsed again with 64, so what is accepted does not change.
const FEW_HEADERS: usize = 16;

/// Where the first whole response in `buf` ends (informational 1xx heads before it
/// included).
fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    loop {
        let mut few = [httparse::EMPTY_HEADER; FEW_HEADERS];
        let mut many;
        let mut response = httparse::Response::new(&mut few);
        let mut parsed = response.parse(&buf[at..]);
        if parsed == Err(httparse::Error::TooManyHeaders) {
            many = [httparse::EMPTY_HEADER; 64];
            response = httparse::Response::new(&mut many);
            parsed = response.parse(&buf[at..]);
        }
        let n = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let (framing, _close) = framing_of(&response, false).map_err(|e| e.message)?;
        let code = response.code.unwrap_or(0);
        at += n;
        if code == 101 {
            return Err("the server switched protocols (101)".into());
        }
        if (100..200).contains(&code) {
            continue;
        }
        let rest = buf.len() - at;
        return match framing {
            Framing::None => Ok(Some(at)),
            Framing::Length(len) => Ok((len <= rest as u64).then(|| at + len as usize)),
            Framing::Chunked => Ok(chunked_len(&buf[at..])?.map(|n| at + n)),
            Framing::UntilClose => Err(
                "a response without Content-Length or chunked coding ends only with its connection, so it cannot be pipelined".into(),
            ),
        };
    }
}

/// Whether the server closes the connection after this response (`Connection: close`, or
/// HTTP/1.0 without keep-alive). A scan of the final head's lines: `frame_len` has
/// already parsed it, and this runs on every response, so the head's end and its lines are
/// found with memchr's vectorised search and only lines starting with a `c` are read (a
/// byte-by-byte scan of the whole frame cost 2,800 instructions a response).
fn closes(frame: &[u8]) -> bool {
    // Built once: `memmem::find` builds its searcher on every call (600 instructions).
    static HEAD_END: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\r\n\r\n"));
    let mut rest = frame;
    loop {
        let Some(end) = HEAD_END.find(rest) else {
            return false;
        };
        let (head, after) = rest.split_at(end + 4);
        if head.get(9) == Some(&b'1') && !after.is_empty() {
            rest = after; // an informational head: the final one follows
            continue;
        }
        let http10 = head.starts_with(b"HTTP/1.0");
        let mut close = http10;
        for nl in memchr::memchr_iter(b'\n', head) {
            let line = &head[nl + 1..];
            if line.first().is_none_or(|&b| b | 0x20 != b'c') {
                continue;
            }
            let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
            let Some((name, value)) = line.split_at_checked(11) else {
                continue;
            };
            if name.eq_ignore_ascii_case(b"connection:") {
                for token in value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        close = false;
                    }
                }
            }
        }
        return close;
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

/// The final status of a whole response (as framed by [`frame_len`]): code and reason.
fn final_status(frame: &[u8]) -> Result<(u16, &[u8]), OpError> {
    let mut rest = frame;
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n");
        let code = rest
            .get(9..12)
            .filter(|_| rest.starts_with(b"HTTP/1.") && line_end.is_some())
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse::<u16>().ok())
            .ok_or_else(|| OpError::new(ErrorClass::Protocol, "a response without a status"))?;
        if !(100..200).contains(&code) {
            let reason = rest.get(13..line_end.unwrap_or(0)).unwrap_or(&[]);
            return Ok((code, reason));
        }
        let head_end = rest.windows(4).position(|w| w == b"\r\n\r\n");
        rest = &rest[head_end.map_or(rest.len(), |e| e + 4)..];
    }
}

fn decode(kind: &OpKind, frame: &[u8]) -> Result<Outcome, OpError> {
    let (code, reason) = final_status(frame)?;
    let fail = |expected: Option<u16>| {
        let reason = String::from_utf8_lossy(reason).into_owned();
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
            NativeOp::Http { expect, .. } => {
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
    fn a_head_with_more_headers_than_the_first_parse_takes_still_frames() {
        let head = |n: usize| {
            let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..n {
                r.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
            }
            r.extend_from_slice(b"Content-Length: 2\r\n\r\nokHTTP");
            r
        };
        // Content-Length last, after FEW_HEADERS or more others: parsed again with 64.
        for n in [FEW_HEADERS - 1, FEW_HEADERS, 40, 63] {
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
        // 65 headers in all: refused as before.
        assert_eq!(frame_len(&head(64)), Err("too many headers".into()));
    }

    #[test]
    fn connection_close_ends_the_connection() {
        assert!(closes(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!closes(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n"
        ));
        assert!(closes(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!closes(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n"
        ));
        // Among other headers starting with a c, in lower case, in a token list.
        assert!(closes(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncache-control: no-cache\r\nconnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n"
        ));
        // The final head after an informational one decides; a body's text does not.
        assert!(closes(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!closes(
            b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\nConnection: close\r\n"
        ));
    }

    #[test]
    fn statuses_map_as_on_the_session_path() {
        let key = crate::spec::template::Template::compile("k", &Default::default(), &mut 0);
        let get = OpKind::Get { key: key.unwrap() };
        let not_found = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(decode(&get, not_found).map(|o| o.rows).ok(), Some(0));
        let forbidden = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 Forbidden\r\n\r\n";
        let e = decode(&get, forbidden).unwrap_err();
        assert_eq!(e.class, ErrorClass::Auth);
        assert_eq!(e.message, "expected 200, got 403 Forbidden");
    }
}
