//! PostgreSQL's extended query protocol spoken directly, for the engine's batch driver
//! (`engine::pipe`): no tokio-postgres client/connection split, so no channel hop, task
//! wake-up or buffer copy per statement (what profiling found between loadrig and pgbench).
//!
//! - Plain TCP only (no `sslmode`), and no documents with attachments: otherwise
//!   [`super::Postgres`] answers no codec and every stream runs on tokio-postgres.
//! - The login (startup, trust, cleartext, md5 or SCRAM-SHA-256) is postgres-protocol's
//!   messages and SCRAM exchange, with the parameters tokio-postgres sends for the same URL.
//! - Every statement of the workload is prepared once per connection by name (`lr_kv_put`,
//!   `lr7` for the workload's statement 7): the Parse messages go out in front of the first
//!   requests, without a Sync of their own, so their replies are part of the first reply.
//! - One operation is Bind (kv arguments in binary, as tokio-postgres sends a `bytea` and a
//!   `varchar`; `sql` arguments as text for the server to parse, with the types it inferred
//!   when it prepared the statement) + Execute + Sync; its reply ends at ReadyForQuery, so
//!   several in flight is pipeline mode (`--pipeline`). With `pipeline_sync=batch`
//!   ([`CODEC_BATCH`]) an operation is Bind + Execute and one Sync closes each write. Statements with an argument of raw
//!   bytes (`{bytes N}`) or a backslash keep the tokio-postgres path, whose binary binding
//!   reads them back unchanged into a bytea. Unlike that path, an empty argument is an
//!   empty text (not NULL), and text that does not parse as its parameter's type fails
//!   with the server's message (22P02, class other).
//! - Rows are the DataRows, or for a statement without rows the count of its command tag
//!   (rows affected), as on the tokio-postgres path; an ErrorResponse is the operation's
//!   error, by SQLSTATE as [`super::sqlstate_error`] classes it.
//!
//! Message layouts: PostgreSQL documentation, "Frontend/Backend Protocol", 55.7 "Message
//! Formats".

use std::time::Instant;

use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::SCRAM_SHA_256;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::scram::Scram;
use super::Postgres;
use crate::stats::connect_phases::PhaseTimes;
use crate::targets::pipelined::{BatchEnd, Batched, Codec, Context};
use crate::targets::sql::{Dialect, Kv};
use crate::targets::tls::NetStream;
use crate::vocab::{ErrorClass, NativeOp, Op, OpError, Outcome, SqlOp};
use crate::workload::{OpKind, OpSpec};

/// The extended protocol for the batch driver, used at `--pipeline 1` too (`one_in_flight`): one
/// future per connection with its own buffers costs less than tokio-postgres's two halves.
pub static CODEC: Codec = Codec {
    accepts,
    encode,
    frame_len,
    decode,
    closes: None,
    prepare,
    one_in_flight: true,
    batch: None,
    tls_records: false,
};

/// `pipeline_sync=batch`: as [`CODEC`], but one Sync closes the requests of each write, as
/// pgbench's `\startpipeline` … `\endpipeline` does. The server then runs the batch as one
/// implicit transaction, skips the rest of it after an error, and flushes its replies once,
/// at the Sync: an operation's reply ends at its CommandComplete (or ErrorResponse), the
/// batch's at ReadyForQuery.
pub static CODEC_BATCH: Codec = Codec {
    accepts,
    encode: bind_execute,
    frame_len: op_frame_len,
    decode,
    closes: None,
    prepare,
    one_in_flight: true,
    batch: Some(BatchEnd {
        trailer: SYNC,
        is_end: ends_batch,
    }),
    tls_records: false,
};

const SYNC: &[u8] = &[b'S', 0, 0, 0, 4];

const KV: [(Kv, &str); 4] = [
    (Kv::Put, "lr_kv_put"),
    (Kv::Get, "lr_kv_get"),
    (Kv::Update, "lr_kv_update"),
    (Kv::Delete, "lr_kv_delete"),
];

fn kv_of(kind: &OpKind) -> Option<Kv> {
    match kind {
        OpKind::Put { .. } => Some(Kv::Put),
        OpKind::Get { .. } => Some(Kv::Get),
        OpKind::Update { .. } => Some(Kv::Update),
        OpKind::Delete { .. } => Some(Kv::Delete),
        _ => None,
    }
}

fn kv_name(kv: Kv) -> &'static str {
    KV.iter().find(|(k, _)| *k == kv).map_or("", |(_, n)| n)
}

/// The kv operations, and `sql` statements that need nothing back but rows: no captures,
/// no conditions or repeats, not on a peer, and one command (several commands without
/// parameters run as a simple query on the tokio-postgres path).
fn accepts(kind: &OpKind) -> bool {
    match kind {
        OpKind::Native(step) => {
            let NativeOp::Sql(SqlOp { query, params, .. }) = &step.op else {
                return false;
            };
            let one_command =
                !params.is_empty() || !query.trim_end().trim_end_matches(';').contains(';');
            // Arguments go as text: raw bytes (`{bytes}`) or a backslash would not read
            // back the same in a bytea parameter, so those keep the binary binding of the
            // tokio-postgres path.
            let as_text = step
                .templates
                .iter()
                .all(|t| !t.has_bytes() && !t.source().contains('\\'));
            as_text
                && step.capture.is_empty()
                && step.when.is_empty()
                && step.peer.is_none()
                && step.repeat.is_none()
                && one_command
        }
        kind => kv_of(kind).is_some(),
    }
}

/// Parse every statement `ops` use, once each, into `out` (no Sync: their replies come
/// with the first operation's).
fn prepare(ops: &[OpSpec], out: &mut Vec<u8>) {
    let mut buf = BytesMut::new();
    let mut named: Vec<String> = Vec::new();
    for o in ops {
        let (name, query) = match &o.kind {
            OpKind::Native(step) => match &step.op {
                NativeOp::Sql(SqlOp { id, query, .. }) => (format!("lr{id}"), query.as_str()),
                _ => continue,
            },
            kind => match kv_of(kind) {
                Some(kv) => (kv_name(kv).to_string(), Dialect::Postgres.kv(kv)),
                None => continue,
            },
        };
        if named.contains(&name) {
            continue;
        }
        // Fails only on a NUL in the text: the server then answers the first operation
        // with the error of a statement that does not exist.
        let _ = frontend::parse(&name, query, std::iter::empty(), &mut buf);
        named.push(name);
    }
    out.extend_from_slice(&buf);
}

/// Bind + Execute + Sync for `op`.
fn encode(op: &Op<'_>, context: Option<&Context>, out: &mut Vec<u8>) -> Result<(), OpError> {
    bind_execute(op, context, out)?;
    out.extend_from_slice(SYNC);
    Ok(())
}

/// Bind + Execute for `op`, without a Sync.
fn bind_execute(op: &Op<'_>, _: Option<&Context>, out: &mut Vec<u8>) -> Result<(), OpError> {
    let start = out.len();
    out.push(b'B');
    out.extend_from_slice(&[0; 4]);
    out.push(0); // the unnamed portal
    match *op {
        Op::Put { key, value } => bind_binary(out, Kv::Put, &[key.as_bytes(), value]),
        Op::Get { key } => bind_binary(out, Kv::Get, &[key.as_bytes()]),
        Op::Update { key, value } => bind_binary(out, Kv::Update, &[key.as_bytes(), value]),
        Op::Delete { key } => bind_binary(out, Kv::Delete, &[key.as_bytes()]),
        Op::Native {
            op: NativeOp::Sql(SqlOp { id, .. }),
            args,
            ..
        } => {
            // Not `write!`: core::fmt cost more than the rest of the Bind together.
            out.extend_from_slice(b"lr");
            out.extend_from_slice(itoa::Buffer::new().format(*id).as_bytes());
            out.push(0);
            params(out, 0, args.iter().map(Vec::as_slice), args.len())?;
        }
        _ => {
            out.truncate(start);
            return Err(OpError::new(
                ErrorClass::Other,
                "this operation cannot go through the batch driver",
            ));
        }
    }
    // Every result column in binary: fewer bytes than text for numbers and bytea.
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&1i16.to_be_bytes());
    let len = (out.len() - start - 1) as i32;
    out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
    // Execute the unnamed portal, all rows.
    out.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
    Ok(())
}

fn bind_binary(out: &mut Vec<u8>, kv: Kv, args: &[&[u8]]) {
    out.extend_from_slice(kv_name(kv).as_bytes());
    out.push(0);
    // Two arguments at most: never over the limits `params` checks.
    let _ = params(out, 1, args.iter().copied(), args.len());
}

/// The parameter formats (one code for all) and values of a Bind.
fn params<'a>(
    out: &mut Vec<u8>,
    format: i16,
    args: impl Iterator<Item = &'a [u8]>,
    n: usize,
) -> Result<(), OpError> {
    let too_many = || OpError::new(ErrorClass::Other, "over 32767 parameters or a 2 GiB value");
    let n = i16::try_from(n).map_err(|_| too_many())?;
    out.extend_from_slice(&i16::from(n > 0).to_be_bytes());
    if n > 0 {
        out.extend_from_slice(&format.to_be_bytes());
    }
    out.extend_from_slice(&n.to_be_bytes());
    for a in args {
        let len = i32::try_from(a.len()).map_err(|_| too_many())?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(a);
    }
    Ok(())
}

/// One backend message at the start of `buf`: its tag and its whole length.
pub(super) fn message(buf: &[u8]) -> Result<Option<(u8, usize)>, String> {
    let Some(header) = buf.get(..5) else {
        return Ok(None);
    };
    let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if len < 4 {
        return Err(format!("a message '{}' of length {len}", header[0] as char));
    }
    let whole = len as usize + 1;
    Ok((buf.len() >= whole).then_some((header[0], whole)))
}

/// A reply ends with ReadyForQuery ('Z').
pub(super) fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    while let Some((tag, len)) = message(&buf[at..])? {
        at += len;
        if tag == b'Z' {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

/// In a batch closed by one Sync: an operation's reply ends at its CommandComplete ('C'),
/// EmptyQueryResponse ('I') or ErrorResponse ('E', after which the server skips the rest of
/// the batch); the batch's at ReadyForQuery ('Z'). The ParseCompletes of a new
/// connection's statements come in front of the first operation's reply.
fn op_frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    while let Some((tag, len)) = message(&buf[at..])? {
        at += len;
        if matches!(tag, b'C' | b'I' | b'E' | b'Z') {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

/// Whether a reply frame of [`op_frame_len`] is the batch's end (ReadyForQuery).
fn ends_batch(frame: &[u8]) -> bool {
    let mut at = 0;
    let mut last = 0;
    while let Ok(Some((tag, len))) = message(&frame[at..]) {
        (last, at) = (tag, at + len);
    }
    last == b'Z'
}

/// Rows read (DataRow) or affected (the command tag's count), or the server's error.
fn decode(_kind: &OpKind, frame: &[u8]) -> Result<Outcome, OpError> {
    let (mut rows, mut tagged) = (0u64, 0u64);
    let mut at = 0;
    while let Ok(Some((tag, len))) = message(&frame[at..]) {
        let body = &frame[at + 5..at + len];
        match tag {
            b'D' => rows += 1,
            b'C' => tagged = command_count(body),
            b'E' => return Err(server_error(body)),
            _ => {}
        }
        at += len;
    }
    Ok(Outcome::rows(if rows > 0 { rows } else { tagged }))
}

/// The count at the end of a command tag (`UPDATE 3`, `INSERT 0 1`, `SELECT 0`); 0 for a
/// tag without one (`CREATE TABLE`).
pub(super) fn command_count(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or_default();
    // Digits folded by hand: `str::parse` is several times this code on every statement.
    let digits = |n: u64, &b: &u8| {
        let d = b.checked_sub(b'0').filter(|d| *d < 10)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    };
    match last {
        [] => 0,
        _ => last.iter().try_fold(0, digits).unwrap_or(0),
    }
}

/// An ErrorResponse's SQLSTATE ('C') and message ('M') as the operation's error.
pub(super) fn server_error(body: &[u8]) -> OpError {
    let (mut code, mut text) = ("", std::borrow::Cow::Borrowed(""));
    for field in body.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        match field[0] {
            b'C' => code = std::str::from_utf8(&field[1..]).unwrap_or(""),
            b'M' => text = String::from_utf8_lossy(&field[1..]),
            _ => {}
        }
    }
    OpError::new(super::sqlstate_error(code), format!("{code} {text}"))
}

/// Open and log in a connection of loadrig's own client, timing its phases as
/// [`Postgres::connect`] does.
pub async fn connect(pg: &Postgres) -> Result<TcpStream, OpError> {
    let started = Instant::now();
    let mut tcp = pg.tcp().await?;
    let tcp_time = started.elapsed();
    let left = pg.timeout.saturating_sub(tcp_time);
    match tokio::time::timeout(left, login(pg, &mut tcp)).await {
        Ok(Ok(())) => {}
        Ok(Err(mut e)) => {
            if e.class != ErrorClass::Auth {
                e.class = ErrorClass::Connect;
            }
            let what = if e.class == ErrorClass::Auth {
                "authentication failed"
            } else {
                "connection failed"
            };
            e.message = format!("{what} ({}): {}", e.class.name(), e.message);
            return Err(e);
        }
        Err(_) => {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "connection failed (connect): no complete handshake within {left:?} (option connect_timeout)"
                ),
            ))
        }
    }
    pg.phases.record(PhaseTimes {
        tcp: tcp_time,
        tls: None,
        auth: Some(started.elapsed() - tcp_time),
    });
    Ok(tcp)
}

/// A connection for the batch driver.
pub async fn connect_batched(pg: &Postgres) -> Result<Batched, OpError> {
    Ok(Batched {
        stream: NetStream::Plain(connect(pg).await?),
        shown: format!("{}:{}", pg.host, pg.port),
        context: None,
    })
}

/// Startup and authentication, until the server is ready for queries.
async fn login(pg: &Postgres, tcp: &mut TcpStream) -> Result<(), OpError> {
    let c = &pg.config;
    let user = c.get_user().unwrap_or("postgres");
    let mut params = vec![("client_encoding", "UTF8"), ("user", user)];
    if let Some(db) = c.get_dbname() {
        params.push(("database", db));
    }
    if let Some(app) = c.get_application_name() {
        params.push(("application_name", app));
    }
    let mut out = BytesMut::new();
    frontend::startup_message(params, &mut out).map_err(io_error)?;
    let mut inbuf = BytesMut::with_capacity(1024);
    let mut scram: Option<Scram> = None;
    let password = || {
        c.get_password().ok_or_else(|| {
            OpError::new(
                ErrorClass::Auth,
                "the server asks for a password and the target URL has none",
            )
        })
    };
    loop {
        if !out.is_empty() {
            tcp.write_all(&out).await.map_err(io_error)?;
            out.clear();
        }
        let msg = loop {
            // The server refused: its error as an operation's (28P01: class auth).
            if let Ok(Some((b'E', len))) = message(&inbuf) {
                return Err(server_error(&inbuf[5..len]));
            }
            if let Some(m) = Message::parse(&mut inbuf).map_err(io_error)? {
                break m;
            }
            if tcp.read_buf(&mut inbuf).await.map_err(io_error)? == 0 {
                return Err(OpError::new(
                    ErrorClass::Connect,
                    "the server closed the connection during the handshake",
                ));
            }
        };
        match msg {
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(password()?, &mut out).map_err(io_error)?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = md5_hash(user.as_bytes(), password()?, body.salt());
                frontend::password_message(hash.as_bytes(), &mut out).map_err(io_error)?;
            }
            // Over plain TCP the only mechanism is SCRAM-SHA-256 (the -PLUS variant binds
            // to a TLS channel).
            Message::AuthenticationSasl(_) => {
                let (s, first) = Scram::start();
                frontend::sasl_initial_response(SCRAM_SHA_256, &first, &mut out)
                    .map_err(io_error)?;
                scram = Some(s);
            }
            Message::AuthenticationSaslContinue(body) => {
                let s = scram.as_mut().ok_or_else(|| unexpected("SASL continue"))?;
                let answer = s
                    .answer(body.data(), password()?, pg.scram_cache)
                    .map_err(auth_error)?;
                frontend::sasl_response(&answer, &mut out).map_err(io_error)?;
            }
            Message::AuthenticationSaslFinal(body) => {
                let s = scram.as_ref().ok_or_else(|| unexpected("SASL final"))?;
                s.verify(body.data()).map_err(auth_error)?;
            }
            Message::ReadyForQuery(_) => return Ok(()),
            Message::AuthenticationOk
            | Message::ParameterStatus(_)
            | Message::BackendKeyData(_)
            | Message::NoticeResponse(_) => {}
            _ => return Err(unexpected("message during the handshake")),
        }
    }
}

fn io_error(e: std::io::Error) -> OpError {
    OpError::new(ErrorClass::Connect, e.to_string())
}

fn auth_error(e: String) -> OpError {
    OpError::new(ErrorClass::Auth, format!("SCRAM: {e}"))
}

fn unexpected(what: &str) -> OpError {
    OpError::new(ErrorClass::Protocol, format!("unexpected {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_reply_ends_at_ready_for_query() {
        let mut reply = [msg(b'2', b""), msg(b'D', b"\0\x01\0\0\0\x01x")].concat();
        reply.extend(msg(b'C', b"SELECT 1\0"));
        assert_eq!(frame_len(&reply), Ok(None), "no ReadyForQuery yet");
        reply.extend(msg(b'Z', b"I"));
        let whole = reply.len();
        reply.extend(msg(b'2', b""));
        assert_eq!(frame_len(&reply), Ok(Some(whole)));
        assert_eq!(frame_len(&reply[..3]), Ok(None));
        assert!(frame_len(&msg(b'D', b"")[..4]).is_ok());
        assert!(frame_len(&[b'D', 0, 0, 0, 1]).is_err(), "a length under 4");
    }

    #[test]
    fn rows_are_data_rows_else_the_tag_count() {
        let get = OpKind::Nop;
        let rows = |parts: &[Vec<u8>]| decode(&get, &parts.concat()).map(|o| o.rows).ok();
        let d = msg(b'D', b"\0\0");
        let z = msg(b'Z', b"I");
        assert_eq!(
            rows(&[d.clone(), d, msg(b'C', b"SELECT 2\0"), z.clone()]),
            Some(2)
        );
        assert_eq!(rows(&[msg(b'C', b"INSERT 0 5\0"), z.clone()]), Some(5));
        assert_eq!(rows(&[msg(b'C', b"UPDATE 0\0"), z.clone()]), Some(0));
        assert_eq!(rows(&[msg(b'C', b"CREATE TABLE\0"), z.clone()]), Some(0));
        for (tag, count) in [
            (&b"SELECT 18446744073709551615\0"[..], u64::MAX),
            (b"SELECT 18446744073709551616\0", 0),
            (b"UPDATE \0", 0),
            (b"MOVE 1x\0", 0),
            (b"7\0", 7),
            (b"", 0),
        ] {
            assert_eq!(
                command_count(tag),
                count,
                "{:?}",
                String::from_utf8_lossy(tag)
            );
        }
        let e = msg(b'E', b"SERROR\0C40001\0Mcould not serialize access\0\0");
        let err = decode(&get, &[e, z].concat()).unwrap_err();
        assert_eq!(err.class, ErrorClass::Serialization);
        assert_eq!(err.message, "40001 could not serialize access");
    }

    #[test]
    fn an_operation_is_bind_execute_sync() {
        let mut out = Vec::new();
        encode(&Op::Get { key: "k1" }, None, &mut out).unwrap();
        let bind = b"B\0\0\0\x1f\0lr_kv_get\0\0\x01\0\x01\0\x01\0\0\0\x02k1\0\x01\0\x01";
        assert_eq!(&out[..bind.len()], bind);
        assert_eq!(&out[bind.len()..], b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04");
        assert!(encode(&Op::Begin, None, &mut out).is_err());
        assert_eq!(out.len(), bind.len() + 15, "nothing of a refused operation");
    }

    #[test]
    fn a_batched_operation_has_no_sync_and_the_batch_one() {
        let mut op = Vec::new();
        encode(&Op::Get { key: "k1" }, None, &mut op).unwrap();
        let mut batched = Vec::new();
        (CODEC_BATCH.encode)(&Op::Get { key: "k1" }, None, &mut batched).unwrap();
        assert_eq!(
            batched,
            op[..op.len() - 5],
            "the same Bind + Execute, no Sync"
        );
        let end = CODEC_BATCH.batch.as_ref().unwrap();
        assert_eq!(end.trailer, b"S\0\0\0\x04", "one Sync closes the batch");
        assert!(
            CODEC.batch.is_none(),
            "the default keeps a Sync per operation"
        );
    }

    #[test]
    fn in_a_batch_replies_end_at_command_complete_or_error_and_the_batch_at_ready() {
        let frame = CODEC_BATCH.frame_len;
        let is_end = CODEC_BATCH.batch.as_ref().unwrap().is_end;
        // Two ParseCompletes of a new connection, then the first operation's reply.
        let first = [
            msg(b'1', b""),
            msg(b'1', b""),
            msg(b'2', b""),
            msg(b'D', b"\0\x01\0\0\0\x01x"),
            msg(b'C', b"SELECT 1\0"),
        ]
        .concat();
        // An error whose text holds a 'Z' where a ReadyForQuery's tag would sit.
        let error = msg(b'E', b"SERROR\0C23505\0MZ\0\0\0\0\0");
        let ready = [msg(b'N', b"\0"), msg(b'Z', b"I")].concat();
        let all = [first.clone(), error.clone(), ready.clone()].concat();
        assert_eq!(frame(&all), Ok(Some(first.len())));
        assert_eq!(frame(&all[first.len()..]), Ok(Some(error.len())));
        assert_eq!(frame(&ready), Ok(Some(ready.len())));
        assert_eq!(frame(&ready[..ready.len() - 1]), Ok(None));
        assert!(!is_end(&first) && !is_end(&error) && is_end(&ready));
        assert_eq!(
            frame(&msg(b'I', b"")),
            Ok(Some(5)),
            "an empty query ends too"
        );
        let decoded = decode(&OpKind::Nop, &first).map(|o| o.rows).ok();
        assert_eq!(decoded, Some(1));
        let failed = decode(&OpKind::Nop, &error).unwrap_err();
        assert_eq!(failed.class, ErrorClass::Constraint);
    }
}
