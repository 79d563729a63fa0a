//! `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`: Redis, one TCP connection per client;
//! `rediss://…` the same over TLS (options `ca=PATH`, `insecure=true`: see [`super::tls`]).
//!
//! - kv operations work on keys `loadrig:KEY`: put = `SET`, get = `GET` (rows 1 when the key
//!   exists), update = `SET … XX` (rows 0 when it does not), delete = `DEL` (rows = keys
//!   removed). Keys without the `loadrig:` prefix are never written by kv operations.
//! - native `redis = ["CMD", "arg", …]` sends the rendered arguments as one command. Rows:
//!   0 for a nil reply, the number of elements for an array, 1 otherwise. `capture` takes
//!   the reply's values as bytes: a scalar is one value, an array gives its elements in
//!   order (so one capture name takes the first), integers as decimal text, nil as empty.
//! - `tx` steps run between `MULTI` and `EXEC` (rollback = `DISCARD`). Queued steps count
//!   0 rows and capture nothing (Redis answers them only at `EXEC`); an `EXEC` that returns
//!   nil (a `WATCH`ed key changed) fails with class `serialization`, and an error inside the
//!   `EXEC` reply fails the transaction with class `other`.
//! - `authenticate` sends `AUTH` again; `connect` opens a connection, `AUTH`, `SELECT`.
//! - `load` pipelines one `SET` per record, one write per batch. `cleanup` walks
//!   `SCAN MATCH loadrig:*` and `UNLINK`s what it finds; it returns the keys removed.
//! - The server version comes from `INFO server` (`redis_version`).
//! - `--pipeline P`: P client streams share each connection (`targets::pipelined`): their
//!   commands go out together and each reads its own replies, in order. Transactions are
//!   refused with it (`MULTI` state belongs to the connection).
//!
//! The `redis` crate parses the URL (user, password, database) and decodes the replies
//! that are read in full (captures, `INFO`, `SCAN`, `EXEC`). Everything else stays on the
//! client's own buffers: commands are written into one reusable buffer and sent with one
//! write, and a small RESP framer in this file finds where a reply ends in the reusable
//! read buffer, so a `GET` or `SET` allocates nothing. There is no multiplexer task between
//! the client and its socket (`aio::MultiplexedConnection` costs a channel hop, a oneshot and
//! an owned reply per command).
//!
//! Errors: refused, reset or closed connections, I/O failures and `LOADING` (a restarted
//! server still reading its data) → `connect` (the engine reconnects); `NOAUTH`,
//! `WRONGPASS`, `NOPERM` → `auth`; an `EXEC` aborted by `WATCH` → `serialization`; a reply
//! that is not RESP → `protocol`; every other server error (`WRONGTYPE`, `OOM`, `ERR …`) →
//! `other`, with the server's text. Connecting (TCP, `AUTH`, `SELECT`) must finish within 5 s.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use ::redis::{IntoConnectionInfo, Value};

use super::ordered::{Protocol, Server, Wire};
use super::pipelined::{plain_step, Batched, Codec, Context};
use super::tls::Tls;
use super::{Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::ConnectPhases;
use crate::vocab::{ErrorClass, Family, NativeOp, Op, OpError, Outcome, RecordOp, ValueKind};
use crate::workload::OpKind;

/// Every key a kv operation touches starts with this; cleanup removes exactly these.
pub const PREFIX: &str = "loadrig:";
/// How long connecting (TCP handshake, AUTH, SELECT) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The sorted set that indexes the records for `record.scan`, as YCSB's Redis binding
/// keeps its `_indices` (inside loadrig's prefix, so cleanup removes it).
pub const RECORD_INDEX: &str = "loadrig:_indices";
/// Keys asked for per SCAN step, and so at most per UNLINK, during cleanup.
const SCAN_COUNT: &str = "1000";

/// RESP as the shared connection code frames it.
static RESP: Protocol = Protocol {
    name: "Redis",
    frame_len,
    tls_records: false,
};

/// What every session needs to log in.
struct Login {
    /// Where the server is, and its connections' phases (the login: AUTH and SELECT).
    server: Arc<Server>,
    username: Option<String>,
    password: Option<String>,
    db: i64,
}

pub struct Redis {
    login: Arc<Login>,
}

impl Redis {
    pub fn open(url: &TargetUrl) -> Result<Redis, InputError> {
        url.check_options(&super::tls::OPTIONS)?;
        let tls = Tls::from_url(url, url.scheme == "rediss")?;
        let shape =
            "expected redis://[:PASSWORD@]HOST[:PORT][/DB], like redis://:secret@127.0.0.1:6379/0";
        let info = format!("redis://{}", url.location)
            .as_str()
            .into_connection_info()
            // The crate's message may quote the URL, password and all: say only what is wrong.
            .map_err(|_| InputError::new(format!("not a Redis URL: {shape}")))?;
        let (host, port) = match info.addr() {
            ::redis::ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
            _ => return Err(InputError::new(format!("not a Redis TCP URL: {shape}"))),
        };
        let settings = info.redis_settings();
        Ok(Redis {
            login: Arc::new(Login {
                server: Arc::new(Server::resolve("redis", host, port, tls)?),
                username: settings.username().map(str::to_string),
                password: settings.password().map(str::to_string),
                db: settings.db(),
            }),
        })
    }
}

impl Target for Redis {
    fn from_url(url: &TargetUrl, _params: &super::Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    type Session = RedisSession;

    fn blocking(&self) -> bool {
        false
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Redis, Family::Record]
    }

    fn connect(&self) -> impl Future<Output = Result<RedisSession, OpError>> {
        let login = Arc::clone(&self.login);
        async move {
            let shown = login.server.shown.clone();
            super::connect_within(CONNECT_TIMEOUT, &shown, RedisSession::open(login)).await
        }
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        // The shared wire drives a plain socket's readiness itself; a TLS stream's records
        // do not map onto that, so over TLS only the batch driver pipelines.
        self.login
            .server
            .tls
            .is_on()
            .then_some("over TLS (rediss://) only the batch driver pipelines")
    }

    async fn connect_shared(&self, n: usize) -> Result<Vec<RedisSession>, OpError> {
        Ok(self.connect().await?.share(n))
    }

    fn batch_codec(&self) -> Option<&'static Codec> {
        Some(&BATCH_CODEC)
    }

    async fn connect_batched(&self) -> Result<Batched, OpError> {
        self.connect().await?.wire.into_batched(None)
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.login.server.phases.snapshot()
    }
}

/// One client's connection.
pub struct RedisSession {
    wire: Wire,
    login: Arc<Login>,
    /// Between MULTI and EXEC/DISCARD.
    in_tx: bool,
}

fn protocol(message: impl Into<String>) -> OpError {
    OpError::new(ErrorClass::Protocol, message)
}

/// A server error line (without the leading '-') as an operation error.
fn server_error(line: &[u8]) -> OpError {
    let text = String::from_utf8_lossy(line);
    let code = text.split(' ').next().unwrap_or("");
    let class = match code {
        "NOAUTH" | "WRONGPASS" | "NOPERM" => ErrorClass::Auth,
        // Sent on accept, then the server closes: the connection was refused.
        "ERR" if text.starts_with("ERR max number of clients reached") => ErrorClass::Connect,
        // A restarted server reading its AOF or RDB: up, but not serving yet.
        "LOADING" => ErrorClass::Connect,
        _ => ErrorClass::Other,
    };
    let message = if class == ErrorClass::Auth {
        format!("authentication failed: {text}")
    } else {
        text.into_owned()
    };
    OpError::new(class, message)
}

/// The head of one reply.
#[derive(Debug, PartialEq, Eq)]
enum Reply<'a> {
    Status(&'a [u8]),
    Int(i64),
    Bulk(Option<&'a [u8]>),
    Array(Option<usize>),
    /// RESP3 types this client never asks for, counted as one value.
    Other,
}

impl RedisSession {
    async fn open(login: Arc<Login>) -> Result<RedisSession, OpError> {
        let (wire, dialed) = Wire::open(&login.server, &RESP).await?;
        let mut session = RedisSession {
            wire,
            login,
            in_tx: false,
        };
        if session.login.password.is_some() {
            session.auth().await?;
        }
        if session.login.db != 0 {
            let db = session.login.db.to_string();
            session.command(&[b"SELECT", db.as_bytes()]).await?;
        }
        let logged_in = session.login.password.is_some() || session.login.db != 0;
        dialed.record(&session.login.server, logged_in);
        Ok(session)
    }

    /// This session's connection (logged in, its database selected) as `n` sessions that
    /// share it, each with buffers of its own.
    fn share(self, n: usize) -> Vec<RedisSession> {
        let login = self.login;
        self.wire
            .share(n)
            .into_iter()
            .map(|wire| RedisSession {
                wire,
                login: Arc::clone(&login),
                in_tx: false,
            })
            .collect()
    }

    async fn auth(&mut self) -> Result<(), OpError> {
        let login = Arc::clone(&self.login);
        let Some(password) = login.password.as_deref() else {
            return Err(OpError::new(
                ErrorClass::Auth,
                "the target URL has no password to authenticate with",
            ));
        };
        let result = match login.username.as_deref().filter(|u| !u.is_empty()) {
            Some(user) => {
                self.command(&[b"AUTH", user.as_bytes(), password.as_bytes()])
                    .await
            }
            None => self.command(&[b"AUTH", password.as_bytes()]).await,
        };
        match result {
            Ok(_) => Ok(()),
            // "ERR invalid password" (Redis before 6) or any refusal of AUTH is about auth.
            Err(mut e) => {
                if e.class == ErrorClass::Other {
                    e.class = ErrorClass::Auth;
                    e.message = format!("authentication failed: {}", e.message);
                }
                Err(e)
            }
        }
    }

    /// Send one command and return its reply's range; server errors become `Err`.
    async fn command(&mut self, args: &[&[u8]]) -> Result<Range<usize>, OpError> {
        self.wire.out.clear();
        push_header(&mut self.wire.out, b'*', args.len());
        for a in args {
            push_bulk(&mut self.wire.out, a);
        }
        let range = self.wire.roundtrip().await?;
        head(&self.wire.inbuf[range.clone()])?;
        Ok(range)
    }

    /// Decode a whole reply with the redis crate.
    fn value(&self, range: Range<usize>) -> Result<Value, OpError> {
        ::redis::parse_redis_value(&self.wire.inbuf[range])
            .map_err(|e| protocol(format!("malformed reply from Redis: {e}")))
    }

    /// A kv command on `loadrig:KEY`, with an optional value and trailing word.
    fn kv_command(&mut self, verb: &[u8], key: &str, value: Option<&[u8]>, tail: Option<&[u8]>) {
        self.wire.out.clear();
        push_kv(&mut self.wire.out, verb, key, value, tail);
    }

    /// Rows for a plain reply: 0 for nil, elements of an array, else 1; `QUEUED` is 0.
    fn rows_of(&self, range: Range<usize>) -> Result<u64, OpError> {
        native_rows(&self.wire.inbuf[range])
    }

    async fn native(&mut self, args: &[Vec<u8>], capture: bool) -> Result<Outcome, OpError> {
        self.wire.out.clear();
        push_header(&mut self.wire.out, b'*', args.len());
        for a in args {
            push_bulk(&mut self.wire.out, a);
        }
        let range = self.wire.roundtrip().await?;
        let rows = self.rows_of(range.clone())?;
        let mut out = Outcome::rows(rows);
        if capture && !self.in_tx {
            match self.value(range)? {
                Value::Array(items) | Value::Set(items) => {
                    out.captured = items.into_iter().map(value_bytes).collect()
                }
                v => out.captured.push(value_bytes(v)),
            }
        }
        Ok(out)
    }

    async fn exec(&mut self) -> Result<Outcome, OpError> {
        self.in_tx = false;
        let range = self.command(&[b"EXEC"]).await?;
        match self.value(range)? {
            Value::Nil => Err(OpError::new(
                ErrorClass::Serialization,
                "EXEC aborted: a WATCHed key changed",
            )),
            Value::Array(items) => {
                for item in &items {
                    if let Value::ServerError(e) = item {
                        return Err(OpError::new(
                            ErrorClass::Other,
                            format!(
                                "in EXEC: {}",
                                e.details().map_or_else(
                                    || e.code().to_string(),
                                    |d| format!("{} {d}", e.code())
                                )
                            ),
                        ));
                    }
                }
                Ok(Outcome::rows(items.len() as u64))
            }
            _ => Ok(Outcome::rows(0)),
        }
    }

    /// A record operation as YCSB's Redis binding does it: a hash `loadrig:KEY` with fields
    /// `field0`, ... and the sorted set [`RECORD_INDEX`] of the keys scored by Java's
    /// `String.hashCode` of the key (insert: HSET + ZADD; read: HGETALL or HMGET; update:
    /// HSET; scan: ZRANGEBYSCORE from the start key's score, LIMIT count, then a read of each;
    /// delete: DEL + ZREM). Rows: records read or written.
    async fn record(
        &mut self,
        op: &RecordOp<ValueKind>,
        args: &[Vec<u8>],
    ) -> Result<Outcome, OpError> {
        let key = [PREFIX.as_bytes(), &args[0]].concat();
        let field = |at: usize| -> Result<Vec<u8>, OpError> {
            let text = String::from_utf8_lossy(&args[at]);
            match text.trim().parse::<usize>() {
                Ok(n) => Ok(format!("field{n}").into_bytes()),
                Err(_) => Err(OpError::new(
                    ErrorClass::Other,
                    format!("record field '{text}' is not a field number"),
                )),
            }
        };
        let rows = match op {
            RecordOp::Insert { .. } => {
                let names: Vec<Vec<u8>> = (0..args.len() - 1)
                    .map(|i| format!("field{i}").into_bytes())
                    .collect();
                let mut cmd: Vec<&[u8]> = vec![b"HSET", &key];
                for (name, value) in names.iter().zip(&args[1..]) {
                    cmd.push(name);
                    cmd.push(value);
                }
                self.command(&cmd).await?;
                let score = java_hash(&args[0]).to_string();
                self.command(&[b"ZADD", RECORD_INDEX.as_bytes(), score.as_bytes(), &args[0]])
                    .await?;
                1
            }
            RecordOp::Read { field: f, .. } => {
                let one = match f {
                    Some(_) => Some(field(1)?),
                    None => None,
                };
                self.read_record(&key, one.as_deref()).await?
            }
            RecordOp::Update { field: f, .. } => {
                let names: Vec<Vec<u8>> = match f {
                    Some(_) => vec![field(1)?],
                    None => (0..args.len() - 1)
                        .map(|i| format!("field{i}").into_bytes())
                        .collect(),
                };
                let values = &args[args.len() - names.len()..];
                let mut cmd: Vec<&[u8]> = vec![b"HSET", &key];
                for (name, value) in names.iter().zip(values) {
                    cmd.push(name);
                    cmd.push(value);
                }
                self.command(&cmd).await?;
                1
            }
            RecordOp::Scan { field: f, .. } => {
                if self.in_tx {
                    return Err(OpError::new(
                        ErrorClass::Other,
                        "record.scan cannot run inside a Redis transaction (MULTI queues the index lookup)",
                    ));
                }
                let one = match f {
                    Some(_) => Some(field(2)?),
                    None => None,
                };
                let score = java_hash(&args[0]).to_string();
                let range = self
                    .command(&[
                        b"ZRANGEBYSCORE",
                        RECORD_INDEX.as_bytes(),
                        score.as_bytes(),
                        b"+inf",
                        b"LIMIT",
                        b"0",
                        &args[1],
                    ])
                    .await?;
                let keys = match self.value(range)? {
                    Value::Array(items) => items,
                    _ => return Err(protocol("unexpected ZRANGEBYSCORE reply")),
                };
                let mut rows = 0;
                for k in keys {
                    if let Value::BulkString(k) = k {
                        let full = [PREFIX.as_bytes(), &k].concat();
                        rows += self.read_record(&full, one.as_deref()).await?;
                    }
                }
                rows
            }
            RecordOp::Delete { .. } => {
                let range = self.command(&[b"DEL", &key]).await?;
                let rows = self.rows_of(range)?;
                self.command(&[b"ZREM", RECORD_INDEX.as_bytes(), &args[0]])
                    .await?;
                rows
            }
        };
        Ok(Outcome::rows(if self.in_tx { 0 } else { rows }))
    }

    /// HGETALL (every field) or HMGET (one): 1 when the record exists, else 0 (0 when queued).
    async fn read_record(&mut self, key: &[u8], field: Option<&[u8]>) -> Result<u64, OpError> {
        let range = match field {
            Some(f) => self.command(&[b"HMGET", key, f]).await?,
            None => self.command(&[b"HGETALL", key]).await?,
        };
        Ok(match head(&self.wire.inbuf[range.clone()])? {
            Reply::Array(Some(0)) | Reply::Status(_) => 0,
            Reply::Array(Some(_)) if field.is_some() => match self.value(range)? {
                Value::Array(items) => u64::from(items.iter().any(|v| *v != Value::Nil)),
                _ => 0,
            },
            Reply::Array(Some(_)) => 1,
            _ => 0,
        })
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let (verb, key, value, tail): KvParts<'_> = match *op {
            Op::Nop => return Ok(Outcome::rows(0)),
            Op::Put { key, value } => (b"SET", key, Some(value), None),
            Op::Get { key } => (b"GET", key, None, None),
            Op::Update { key, value } => (b"SET", key, Some(value), Some(b"XX")),
            Op::Delete { key } => (b"DEL", key, None, None),
            Op::Native {
                op: NativeOp::Redis(_),
                args,
                capture,
            } => return self.native(args, capture).await,
            Op::Native {
                op: NativeOp::Record(op),
                args,
                ..
            } => return self.record(op, args).await,
            // Every other family: the runner refuses them before anything runs.
            Op::Native { .. } => return Err(super::unsupported(op, "redis://")),
            Op::Begin => {
                self.command(&[b"MULTI"]).await?;
                self.in_tx = true;
                return Ok(Outcome::rows(0));
            }
            Op::Commit => return self.exec().await,
            Op::Rollback => {
                if self.in_tx {
                    self.in_tx = false;
                    self.command(&[b"DISCARD"]).await?;
                }
                return Ok(Outcome::rows(0));
            }
        };
        self.kv_command(verb, key, value, tail);
        let range = self.wire.roundtrip().await?;
        Ok(Outcome::rows(kv_rows(&self.wire.inbuf[range])?))
    }
}

/// Append a kv command on `loadrig:KEY`, with an optional value and trailing word.
fn push_kv(out: &mut Vec<u8>, verb: &[u8], key: &str, value: Option<&[u8]>, tail: Option<&[u8]>) {
    push_header(
        out,
        b'*',
        2 + usize::from(value.is_some()) + usize::from(tail.is_some()),
    );
    push_bulk(out, verb);
    push_header(out, b'$', PREFIX.len() + key.len());
    out.extend_from_slice(PREFIX.as_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\r\n");
    if let Some(v) = value {
        push_bulk(out, v);
    }
    if let Some(t) = tail {
        push_bulk(out, t);
    }
}

/// Rows of a kv command's reply: DEL's count, 0 for nil, else 1.
fn kv_rows(frame: &[u8]) -> Result<u64, OpError> {
    Ok(match head(frame)? {
        Reply::Int(n) => n.max(0) as u64,
        Reply::Status(b"QUEUED") | Reply::Bulk(None) | Reply::Array(None) => 0,
        _ => 1,
    })
}

/// Rows for a native command's reply: 0 for nil, elements of an array, else 1; `QUEUED` is 0.
fn native_rows(frame: &[u8]) -> Result<u64, OpError> {
    Ok(match head(frame)? {
        Reply::Status(b"QUEUED") => 0,
        Reply::Bulk(None) | Reply::Array(None) => 0,
        Reply::Array(Some(n)) => n as u64,
        _ => 1,
    })
}

/// RESP for the engine's batch driver (`--pipeline`): kv operations and native commands
/// that capture nothing.
static BATCH_CODEC: Codec = Codec {
    accepts: batch_accepts,
    encode: batch_encode,
    frame_len,
    decode: batch_decode,
    closes: None,
    prepare: super::pipelined::prepare_nothing,
    one_in_flight: false,
    batch: None,
    tls_records: false,
};

fn batch_accepts(kind: &OpKind) -> bool {
    match kind {
        OpKind::Put { .. } | OpKind::Get { .. } | OpKind::Update { .. } | OpKind::Delete { .. } => {
            true
        }
        OpKind::Native(step) => matches!(step.op, NativeOp::Redis(_)) && plain_step(step),
        _ => false,
    }
}

fn batch_encode(op: &Op<'_>, _: Option<&Context>, out: &mut Vec<u8>) -> Result<(), OpError> {
    match *op {
        Op::Put { key, value } => push_kv(out, b"SET", key, Some(value), None),
        Op::Get { key } => push_kv(out, b"GET", key, None, None),
        Op::Update { key, value } => push_kv(out, b"SET", key, Some(value), Some(b"XX")),
        Op::Delete { key } => push_kv(out, b"DEL", key, None, None),
        Op::Native {
            op: NativeOp::Redis(_),
            args,
            capture: false,
        } => {
            push_header(out, b'*', args.len());
            for a in args {
                push_bulk(out, a);
            }
        }
        _ => {
            return Err(OpError::new(
                ErrorClass::Other,
                "this operation cannot go through the batch driver",
            ))
        }
    }
    Ok(())
}

fn batch_decode(kind: &OpKind, frame: &[u8]) -> Result<Outcome, OpError> {
    let rows = match kind {
        OpKind::Native(_) => native_rows(frame)?,
        _ => kv_rows(frame)?,
    };
    Ok(Outcome::rows(rows))
}

/// A kv command: verb, key, value, trailing word.
type KvParts<'a> = (
    &'static [u8],
    &'a str,
    Option<&'a [u8]>,
    Option<&'static [u8]>,
);

/// A reply value as bytes, the way a capture stores it.
fn value_bytes(v: Value) -> Vec<u8> {
    match v {
        Value::Nil => Vec::new(),
        Value::Int(i) => i.to_string().into_bytes(),
        Value::BulkString(b) => b,
        Value::SimpleString(s) => s.into_bytes(),
        Value::Okay => b"OK".to_vec(),
        Value::Double(d) => d.to_string().into_bytes(),
        Value::Boolean(b) => (if b { "1" } else { "0" }).as_bytes().to_vec(),
        Value::VerbatimString { text, .. } => text.into_bytes(),
        Value::Array(mut items) | Value::Set(mut items) if !items.is_empty() => {
            value_bytes(items.swap_remove(0))
        }
        other => format!("{other:?}").into_bytes(),
    }
}

impl Session for RedisSession {
    /// Check that commands are accepted (a server that wants a password says NOAUTH here).
    async fn setup(&mut self) -> Result<(), OpError> {
        self.command(&[b"PING"]).await.map(|_| ())
    }

    async fn server_version(&mut self) -> Option<String> {
        let range = self.command(&[b"INFO", b"server"]).await.ok()?;
        let Ok(Value::BulkString(info)) = self.value(range) else {
            return None;
        };
        let info = String::from_utf8_lossy(&info);
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(|v| format!("Redis {}", v.trim()))
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    async fn authenticate(&mut self) -> Result<Outcome, OpError> {
        self.auth().await.map(|()| Outcome::rows(1))
    }

    /// One pipeline per batch: every SET is written at once, then every reply read.
    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        let mut pipeline = std::mem::take(&mut self.wire.out);
        pipeline.clear();
        for (key, value) in records {
            self.kv_command(b"SET", key, Some(value), None);
            pipeline.extend_from_slice(&self.wire.out);
        }
        self.wire.out = pipeline;
        self.wire.send().await?;
        let mut first_error = None;
        for _ in records {
            let range = self.wire.read_reply().await?;
            if let Err(e) = head(&self.wire.inbuf[range]) {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One pipeline per batch: each record's HSET and ZADD written at once, then every
    /// reply read.
    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        let mut pipeline = std::mem::take(&mut self.wire.out);
        pipeline.clear();
        let names: Vec<Vec<u8>> = (0..records.first().map_or(0, |r| r.1.len()))
            .map(|i| format!("field{i}").into_bytes())
            .collect();
        for (key, values) in records {
            push_header(&mut pipeline, b'*', 2 + 2 * values.len());
            push_bulk(&mut pipeline, b"HSET");
            push_bulk(&mut pipeline, &[PREFIX.as_bytes(), key.as_bytes()].concat());
            for (name, value) in names.iter().zip(values) {
                push_bulk(&mut pipeline, name);
                push_bulk(&mut pipeline, value);
            }
            let score = java_hash(key.as_bytes()).to_string();
            push_header(&mut pipeline, b'*', 4);
            for arg in [
                b"ZADD".as_slice(),
                RECORD_INDEX.as_bytes(),
                score.as_bytes(),
                key.as_bytes(),
            ] {
                push_bulk(&mut pipeline, arg);
            }
        }
        self.wire.out = pipeline;
        self.wire.send().await?;
        let mut first_error = None;
        for _ in 0..2 * records.len() {
            let range = self.wire.read_reply().await?;
            if let Err(e) = head(&self.wire.inbuf[range]) {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Remove the records [`RECORD_INDEX`] lists, then the index itself.
    async fn create_records(&mut self, _layout: crate::vocab::RecordLayout) -> Result<(), OpError> {
        loop {
            let range = self
                .command(&[
                    b"ZRANGE",
                    RECORD_INDEX.as_bytes(),
                    b"0",
                    SCAN_COUNT.as_bytes(),
                ])
                .await?;
            let members = match self.value(range)? {
                Value::Array(items) => items,
                _ => return Err(protocol("unexpected ZRANGE reply")),
            };
            let keys: Vec<Vec<u8>> = members
                .into_iter()
                .filter_map(|m| match m {
                    Value::BulkString(k) => Some(k),
                    _ => None,
                })
                .collect();
            if keys.is_empty() {
                break;
            }
            let full: Vec<Vec<u8>> = keys
                .iter()
                .map(|k| [PREFIX.as_bytes(), k].concat())
                .collect();
            let mut unlink: Vec<&[u8]> = vec![b"UNLINK"];
            unlink.extend(full.iter().map(Vec::as_slice));
            self.command(&unlink).await?;
            let mut zrem: Vec<&[u8]> = vec![b"ZREM", RECORD_INDEX.as_bytes()];
            zrem.extend(keys.iter().map(Vec::as_slice));
            self.command(&zrem).await?;
        }
        self.command(&[b"DEL", RECORD_INDEX.as_bytes()]).await?;
        Ok(())
    }

    /// `SCAN MATCH loadrig:*` and `UNLINK` each batch found; returns the keys removed.
    async fn cleanup(&mut self) -> Result<u64, OpError> {
        let pattern = format!("{PREFIX}*");
        let mut cursor = b"0".to_vec();
        let mut removed = 0u64;
        loop {
            let range = self
                .command(&[
                    b"SCAN",
                    &cursor,
                    b"MATCH",
                    pattern.as_bytes(),
                    b"COUNT",
                    SCAN_COUNT.as_bytes(),
                ])
                .await?;
            let (next, keys) = match self.value(range)? {
                Value::Array(mut parts) if parts.len() == 2 => {
                    let keys = parts.pop();
                    let next = parts.pop();
                    match (next, keys) {
                        (Some(Value::BulkString(next)), Some(Value::Array(keys))) => (next, keys),
                        _ => return Err(protocol("unexpected SCAN reply")),
                    }
                }
                _ => return Err(protocol("unexpected SCAN reply")),
            };
            let keys: Vec<Vec<u8>> = keys
                .into_iter()
                .filter_map(|k| match k {
                    Value::BulkString(k) if k.starts_with(PREFIX.as_bytes()) => Some(k),
                    _ => None,
                })
                .collect();
            if !keys.is_empty() {
                let mut args: Vec<&[u8]> = vec![b"UNLINK"];
                args.extend(keys.iter().map(Vec::as_slice));
                let range = self.command(&args).await?;
                if let Reply::Int(n) = head(&self.wire.inbuf[range])? {
                    removed += n.max(0) as u64;
                }
            }
            if next == b"0" {
                return Ok(removed);
            }
            cursor = next;
        }
    }
}

/// Java's `String.hashCode` of the key (as UTF-16 code units), the score YCSB's Redis
/// binding gives a key in its index.
pub fn java_hash(key: &[u8]) -> i32 {
    String::from_utf8_lossy(key)
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Append `*N\r\n` or `$N\r\n`.
fn push_header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn push_bulk(out: &mut Vec<u8>, arg: &[u8]) {
    push_header(out, b'$', arg.len());
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

/// The line at the start of `buf` (without CRLF) and the length including CRLF.
fn line(buf: &[u8]) -> Option<(&[u8], usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    Some((&buf[..end], end + 2))
}

fn number(text: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("bad length '{}'", String::from_utf8_lossy(text)))
}

/// The length of the first complete reply in `buf`, `None` if more bytes are needed.
fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    // Values still to read: nested aggregates add their elements.
    let mut pending: u64 = 1;
    while pending > 0 {
        let Some((text, n)) = line(&buf[at..]) else {
            return Ok(None);
        };
        let Some((&kind, rest)) = text.split_first() else {
            return Err("empty line".into());
        };
        at += n;
        pending -= 1;
        match kind {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
            b'$' | b'!' | b'=' => {
                let len = number(rest)?;
                if len >= 0 {
                    let end = at + len as usize + 2;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    at = end;
                }
            }
            b'*' | b'~' | b'>' => pending += number(rest)?.max(0) as u64,
            b'%' | b'|' => pending += 2 * number(rest)?.max(0) as u64,
            other => return Err(format!("unknown reply type '{}'", other as char)),
        }
    }
    Ok(Some(at))
}

/// What a complete reply is, at a glance; server errors become `Err`.
fn head(frame: &[u8]) -> Result<Reply<'_>, OpError> {
    let Some((text, n)) = line(frame) else {
        return Err(protocol("truncated reply"));
    };
    let Some((&kind, rest)) = text.split_first() else {
        return Err(protocol("empty reply"));
    };
    Ok(match kind {
        b'+' => Reply::Status(rest),
        b'-' => return Err(server_error(rest)),
        b':' => Reply::Int(number(rest).map_err(protocol)?),
        b'$' => {
            let len = number(rest).map_err(protocol)?;
            if len < 0 {
                Reply::Bulk(None)
            } else {
                Reply::Bulk(frame.get(n..n + len as usize))
            }
        }
        b'*' => {
            let len = number(rest).map_err(protocol)?;
            Reply::Array((len >= 0).then_some(len as usize))
        }
        b'_' => Reply::Bulk(None),
        _ => Reply::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_end_where_the_reply_ends() {
        assert_eq!(frame_len(b"+OK\r\n"), Ok(Some(5)));
        assert_eq!(frame_len(b"+OK\r"), Ok(None));
        assert_eq!(frame_len(b"$3\r\nabc\r\n+OK\r\n"), Ok(Some(9)));
        assert_eq!(frame_len(b"$3\r\nab"), Ok(None));
        assert_eq!(frame_len(b"$-1\r\n"), Ok(Some(5)));
        assert_eq!(
            frame_len(b"*2\r\n$1\r\n0\r\n*1\r\n$3\r\nabc\r\n"),
            Ok(Some(24))
        );
        assert_eq!(frame_len(b"*2\r\n$1\r\n0\r\n*1\r\n$3\r\nab"), Ok(None));
        assert_eq!(frame_len(b"*-1\r\n"), Ok(Some(5)));
        assert!(frame_len(b"?x\r\n").is_err());
    }

    #[test]
    fn index_scores_are_javas_string_hash_codes() {
        // As Java computes them: "".hashCode() == 0, "a" == 97, and the sum wraps at 32 bits.
        assert_eq!(java_hash(b""), 0);
        assert_eq!(java_hash(b"a"), 97);
        assert_eq!(java_hash(b"user1"), 111578566);
        assert_eq!(java_hash(b"user6284781860667377211"), -594971599);
    }

    #[test]
    fn heads_and_errors() {
        assert_eq!(head(b"$3\r\nabc\r\n").unwrap(), Reply::Bulk(Some(b"abc")));
        assert_eq!(head(b":42\r\n").unwrap(), Reply::Int(42));
        let e = head(b"-WRONGPASS invalid username-password pair\r\n").unwrap_err();
        assert_eq!(e.class, ErrorClass::Auth);
        assert!(e.message.contains("authentication"));
        assert_eq!(head(b"-ERR x\r\n").unwrap_err().class, ErrorClass::Other);
        let full = head(b"-ERR max number of clients reached\r\n").unwrap_err();
        assert_eq!(full.class, ErrorClass::Connect);
        let loading = head(b"-LOADING Redis is loading the dataset in memory\r\n").unwrap_err();
        assert_eq!(loading.class, ErrorClass::Connect);
        assert!(loading.message.starts_with("LOADING"));
    }

    #[test]
    fn encodes_kv_commands_with_the_prefix() {
        let mut out = Vec::new();
        push_header(&mut out, b'*', 2);
        push_bulk(&mut out, b"GET");
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n");
        let mut big = Vec::new();
        push_header(&mut big, b'$', 1234567);
        assert_eq!(big, b"$1234567\r\n");
    }
}
