//! One response head, parsed once: httparse reads the status line and the headers, and one
//! walk over the headers it found takes what loadrig needs (Content-Length,
//! Transfer-Encoding, Connection and, when asked, Server), comparing only the names of the
//! right length. Both the session path and the batch codec read heads here, so they frame
//! and close alike.
//!
//! The header array is handed to httparse uninitialised (`MaybeUninit`): filling 64 empty
//! headers per response cost some 400 instructions, and httparse writes only the ones the
//! head has; 64 is the most a head may have, as before.

use std::mem::MaybeUninit;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// What loadrig takes from one response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head<'b> {
    /// The head's length in bytes, up to and including its empty line.
    pub len: usize,
    pub code: u16,
    pub reason: &'b str,
    pub framing: Framing,
    /// The server closes the connection after this response (`Connection: close`, or
    /// HTTP/1.0 without keep-alive).
    pub close: bool,
    /// The `Server` header, when asked for.
    pub server: Option<&'b [u8]>,
}

/// Why a head cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bad {
    /// Not HTTP/1.x as httparse reads it.
    Malformed(httparse::Error),
    BadLength,
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Malformed(e) => e.fmt(f),
            Bad::BadLength => f.write_str("bad Content-Length"),
        }
    }
}

/// The most headers a head may have.
const MAX_HEADERS: usize = 64;

/// Parse the response head at the start of `buf`; `Ok(None)` when it is not all there yet.
/// `to_head`: it answers a HEAD request (no body whatever the headers say); `server`: keep
/// the `Server` header.
pub fn parse(buf: &[u8], to_head: bool, server: bool) -> Result<Option<Head<'_>>, Bad> {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Bad::Malformed(e)),
    };
    let code = response.code.unwrap_or(0);
    let http10 = response.version == Some(0);
    let mut head = Head {
        len,
        code,
        reason: response.reason.unwrap_or(""),
        framing: Framing::UntilClose,
        close: http10,
        server: None,
    };
    let mut length = None;
    let mut chunked = false;
    for h in response.headers.iter() {
        // The length first: most headers are none of these, and are passed over on it.
        match h.name.len() {
            14 if h.name.eq_ignore_ascii_case("content-length") => {
                length = Some(content_length(h.value).ok_or(Bad::BadLength)?);
            }
            17 if h.name.eq_ignore_ascii_case("transfer-encoding") => {
                chunked = tokens(h.value).any(|t| t.eq_ignore_ascii_case(b"chunked"));
            }
            10 if h.name.eq_ignore_ascii_case("connection") => {
                for token in tokens(h.value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        head.close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        head.close = false;
                    }
                }
            }
            6 if server && head.server.is_none() && h.name.eq_ignore_ascii_case("server") => {
                head.server = Some(h.value);
            }
            _ => {}
        }
    }
    head.framing = if to_head || (100..200).contains(&code) || code == 204 || code == 304 {
        Framing::None
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok(Some(head))
}

/// A header value's comma-separated tokens, without the spaces around them.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

/// A Content-Length value: the digits read directly when that is all it is (httparse has
/// trimmed it), anything else as `str::parse` takes it after `str::trim`, as before.
fn content_length(value: &[u8]) -> Option<u64> {
    if !value.is_empty() && value.len() <= 19 && value.iter().all(u8::is_ascii_digit) {
        return Some(value.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')));
    }
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &[u8]) -> Head<'_> {
        parse(text, false, true).unwrap().unwrap()
    }

    #[test]
    fn takes_length_coding_connection_and_server_from_one_parse() {
        let h = head(b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 19\r\nConnection: keep-alive\r\n\r\nbody");
        assert_eq!((h.len, h.code, h.reason), (78, 200, "OK"));
        assert_eq!((h.framing, h.close), (Framing::Length(19), false));
        assert_eq!(h.server, Some(&b"nginx"[..]));
        let h = head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\ncontent-length: 3\r\nCONNECTION: keep-alive, close\r\n\r\n");
        assert_eq!(
            (h.framing, h.close, h.server),
            (Framing::Chunked, true, None)
        );
        let h = head(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n");
        assert_eq!((h.framing, h.close), (Framing::UntilClose, false));
        assert!(head(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").close);
        for bodiless in [
            &b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"[..],
            b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
        ] {
            assert_eq!(head(bodiless).framing, Framing::None);
        }
        let to_head = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true, false);
        assert_eq!(to_head.unwrap().unwrap().framing, Framing::None);
    }

    #[test]
    fn content_length_is_read_as_before() {
        for (value, n) in [
            ("0", Some(0)),
            ("19", Some(19)),
            ("+7", Some(7)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("1 2", None),
            ("x", None),
            ("9999999999999999999", Some(9_999_999_999_999_999_999)),
        ] {
            assert_eq!(content_length(value.as_bytes()), n, "{value}");
        }
        let bad = parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            false,
            false,
        );
        assert_eq!(bad, Err(Bad::BadLength));
        assert_eq!(bad.unwrap_err().to_string(), "bad Content-Length");
    }

    #[test]
    fn partial_and_malformed_heads() {
        let whole = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut], false, false), Ok(None), "cut at {cut}");
        }
        assert!(matches!(
            parse(b"SSH-2.0\r\n\r\n", false, false),
            Err(Bad::Malformed(_))
        ));
        let many = |n: usize| {
            let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..n {
                r.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
            }
            r.extend_from_slice(b"\r\n");
            r
        };
        assert!(parse(&many(MAX_HEADERS), false, false).unwrap().is_some());
        let e = parse(&many(MAX_HEADERS + 1), false, false).unwrap_err();
        assert_eq!(e.to_string(), "too many headers");
    }
}
