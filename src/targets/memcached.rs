//! `memcached://[USER:PASSWORD@]HOST[:PORT][?commands=auto|meta|classic]`: memcached's text
//! protocol, one TCP connection per client (per P streams with `--pipeline P`);
//! `memcacheds://…` the same over TLS (options `ca=PATH`, `insecure=true`: see [`super::tls`]).
//!
//! - Every key the target writes is `loadrig:` and the key as written, for the kv, native
//!   and record operations alike; cleanup removes exactly those.
//! - kv: with the meta commands (memcached 1.6 and later, `commands=auto`'s choice there):
//!   put = `ms KEY LEN`, get = `mg KEY v`, update = `ms KEY LEN MR` (replace: rows 0 when
//!   the key has no item), delete = `md KEY`. With `commands=classic` (and on servers before
//!   1.6): `set`, `get`, `replace`, `delete`. A get that finds nothing is a miss (rows 0),
//!   not an error. The first connection asks the server's `version` and the result names the
//!   commands used (`memcached 1.6.18 (meta commands)`).
//! - native `memcached.*` (get, gets, gat, gats, set, add, replace, append, prepend, cas,
//!   incr, decr, touch, delete) are the classic commands as written. Rows: items found (the
//!   get family), 1 for `STORED`, `DELETED`, `TOUCHED` or a number, 0 for `NOT_STORED` and
//!   `NOT_FOUND`; `EXISTS` (a `cas` whose token is stale) fails as `serialization`.
//!   `capture`: the get family's values in the order of its keys (a missing key's empty;
//!   `gets`/`gats` each value and then its CAS token), incr and decr's new value.
//! - records: one item per record, `loadrig:KEY` holding a JSON object of its fields
//!   (`{"field0": "...", ...}`, as YCSB's memcached binding stores them). Insert = `set`;
//!   read = `get` (one field: the object's member); update of every field = `replace`; update
//!   of one field = `gets`, then `cas` of the changed object (`EXISTS`: `serialization`).
//!   `record.scan` is refused before anything connects: memcached keeps no key order.
//! - `tx`: memcached has no transactions. A `tx`'s steps run one after another with no
//!   isolation (as YCSB's read-modify-write on memcached), and `Rollback` undoes nothing.
//! - Authentication: memcached 1.6's authfile mode (`memcached -Y FILE`), where the first
//!   command of a connection must be a `set` whose value is `USER PASSWORD`. The first
//!   connection learns from `version` whether the server asks for it; the credentials come
//!   from the URL and are sent only to a server that asks (never stored as an item).
//! - `load` and `load_records` pipeline one store per record, one write per batch.
//!   `cleanup` lists the items with `lru_crawler metadump all` and deletes every key under
//!   `loadrig:` that it lists (never `flush_all`): items stored while the crawl runs, and
//!   items of a server that refuses dumps (`memcached -X`), are not seen.
//! - `--pipeline P`: P streams share each connection (`targets::pipelined`); memcached
//!   answers in order. Plain runs go through the engine's batch driver ([`BATCH_CODEC`]).
//!
//! Errors: refused, reset or closed connections and `SERVER_ERROR too many open
//! connections` → `connect`; `CLIENT_ERROR unauthenticated` and `authentication failure` →
//! `auth`; `ERROR` (a command the server does not know) and replies that are not memcached's
//! → `protocol`; every other `CLIENT_ERROR` and `SERVER_ERROR` (`out of memory storing
//! object`, `object too large for cache`, `cannot increment or decrement non-numeric value`)
//! → `other`, with the server's text. A key memcached cannot hold (over 250 bytes with the
//! prefix, or with spaces or control characters) fails as `other` without being sent.
//!
//! The client is written here: requests go into one reusable buffer and out in one write,
//! and replies are framed and decoded where they lie in the read buffer (no allocation per
//! get or set), which the batch driver and the shared connection need. The crates on
//! crates.io own their socket and read buffer and have no authfile login.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;
use super::ordered::{Protocol, Server, Wire};
use super::pipelined::{plain_step, Batched, Codec, Context};
use super::tls::Tls;
use super::{Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::ConnectPhases;
use crate::vocab::{
    ErrorClass, Family, MemcachedOp, NativeOp, Op, OpError, OpFamily, Outcome, RecordOp, ValueKind,
};
use crate::workload::OpKind;

/// Every key the target writes starts with this; cleanup removes exactly these.
pub const PREFIX: &str = "loadrig:";
/// memcached's default port.
const DEFAULT_PORT: u16 = 11211;
/// The longest key memcached holds, prefix included.
const MAX_KEY: usize = 250;
/// How long connecting (TCP, TLS, the login, the first `version`) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most metadump crawls one cleanup makes (it stops after two in a row find nothing).
const CLEANUP_CRAWLS: usize = 6;
/// Deletes written at once by cleanup.
const DELETE_BATCH: usize = 500;
/// How long cleanup waits for a crawler busy with another request.
const CRAWLER_WAIT: Duration = Duration::from_secs(30);

/// The commands the kv operations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `mg`, `ms`, `md` (memcached 1.6 and later).
    Meta,
    /// `get`, `set`, `replace`, `delete`.
    Classic,
}

/// What the URL's `commands=` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Commands {
    /// The meta commands where the server has them.
    Auto,
    Only(Dialect),
}

/// What the first connection learnt of the server.
#[derive(Debug, Clone)]
struct Probe {
    /// As `version` gives it: `1.6.18`.
    version: String,
    /// It asks for a login (authfile mode).
    auth: bool,
}

/// memcached's text protocol as the shared connection code frames it.
static TEXT: Protocol = Protocol {
    name: "memcached",
    frame_len,
    tls_records: true,
};

/// What every session needs to connect and log in.
struct Login {
    server: Arc<Server>,
    user: Option<String>,
    password: Option<String>,
    commands: Commands,
    probe: OnceLock<Probe>,
}

pub struct Memcached {
    login: Arc<Login>,
}

impl Memcached {
    pub fn open(url: &TargetUrl) -> Result<Memcached, InputError> {
        let mut known = vec!["commands"];
        known.extend(super::tls::OPTIONS);
        url.check_options(&known)?;
        let tls = Tls::from_url(url, url.scheme == "memcacheds")?;
        let commands = match url.options.get("commands").map(String::as_str) {
            None | Some("auto") => Commands::Auto,
            Some("meta") => Commands::Only(Dialect::Meta),
            Some("classic") => Commands::Only(Dialect::Classic),
            Some(other) => {
                return Err(InputError::new(format!(
                    "commands={other}: expected auto, meta or classic"
                ))
                .help("auto uses the meta commands (mg, ms, md) where the server has them (memcached 1.6 and later)"))
            }
        };
        let end = Endpoint::parse(url)?;
        if !end.path.is_empty() {
            return Err(InputError::new(format!(
                "{}: memcached has no databases, so the URL has no path ('/{}')",
                end.shown, end.path
            ))
            .help(
                "write memcached://[USER:PASSWORD@]HOST[:PORT], like memcached://127.0.0.1:11211",
            ));
        }
        if end.user.is_some() != end.password.is_some() {
            return Err(InputError::new(format!(
                "{}: memcached's login (authfile mode) takes a user and a password",
                end.shown
            ))
            .help("write memcached://USER:PASSWORD@HOST:PORT"));
        }
        let port = end.port.unwrap_or(DEFAULT_PORT);
        let server = Server::resolve(&url.scheme, end.host, port, tls)?;
        Ok(Memcached {
            login: Arc::new(Login {
                server: Arc::new(server),
                user: end.user,
                password: end.password,
                commands,
                probe: OnceLock::new(),
            }),
        })
    }
}

impl Target for Memcached {
    type Session = McSession;

    fn from_url(url: &TargetUrl, _params: &super::Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Memcached, Family::Record]
    }

    /// memcached keeps no order of its keys to scan.
    fn refuses(&self, op: &NativeOp<ValueKind>) -> bool {
        matches!(op, NativeOp::Record(RecordOp::Scan { .. }))
    }

    fn blocking(&self) -> bool {
        false
    }

    fn connect(&self) -> impl Future<Output = Result<McSession, OpError>> {
        let login = Arc::clone(&self.login);
        async move {
            let shown = login.server.shown.clone();
            super::connect_within(CONNECT_TIMEOUT, &shown, McSession::open(login)).await
        }
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        // The shared wire waits on a plain socket's readiness, which TLS records hide.
        self.login
            .server
            .tls
            .is_on()
            .then_some("over TLS (memcacheds://) only the batch driver pipelines")
    }

    async fn connect_shared(&self, n: usize) -> Result<Vec<McSession>, OpError> {
        Ok(self.connect().await?.share(n))
    }

    fn batch_codec(&self) -> Option<&'static Codec> {
        Some(&BATCH_CODEC)
    }

    async fn connect_batched(&self) -> Result<Batched, OpError> {
        let session = self.connect().await?;
        let context: Arc<Context> = Arc::new(session.dialect);
        session.wire.into_batched(Some(context))
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.login.server.phases.snapshot()
    }
}

/// One client's connection.
pub struct McSession {
    wire: Wire,
    login: Arc<Login>,
    dialect: Dialect,
}

fn protocol(message: impl Into<String>) -> OpError {
    OpError::new(ErrorClass::Protocol, message)
}

fn other(message: impl Into<String>) -> OpError {
    OpError::new(ErrorClass::Other, message)
}

impl McSession {
    async fn open(login: Arc<Login>) -> Result<McSession, OpError> {
        let (wire, dialed) = Wire::open(&login.server, &TEXT).await?;
        let mut session = McSession {
            wire,
            login,
            dialect: Dialect::Classic,
        };
        let probe = session.probe().await?;
        session.dialect = session.dialect_for(&probe)?;
        dialed.record(&session.login.server, probe.auth);
        Ok(session)
    }

    /// Log in where the server asks for it, learning on the first connection what it is.
    async fn probe(&mut self) -> Result<Probe, OpError> {
        if let Some(p) = self.login.probe.get().cloned() {
            if p.auth {
                self.log_in().await?;
            }
            return Ok(p);
        }
        let probe = match self.version().await {
            Ok(version) => Probe {
                version,
                auth: false,
            },
            Err(e) if e.class == ErrorClass::Auth => {
                self.log_in().await?;
                Probe {
                    version: self.version().await?,
                    auth: true,
                }
            }
            Err(e) => return Err(e),
        };
        Ok(self.login.probe.get_or_init(|| probe).clone())
    }

    /// `version`: `1.6.18`.
    async fn version(&mut self) -> Result<String, OpError> {
        self.wire.out.clear();
        self.wire.out.extend_from_slice(b"version\r\n");
        let range = self.wire.roundtrip().await?;
        let line = first_line(&self.wire.inbuf[range]);
        match line.strip_prefix(b"VERSION ") {
            Some(v) => Ok(String::from_utf8_lossy(v).trim().to_string()),
            None => Err(reply_error(line)),
        }
    }

    /// The authfile login: a `set` whose value is `USER PASSWORD`, the connection's first
    /// command. The key and its numbers are ignored in that mode.
    async fn log_in(&mut self) -> Result<(), OpError> {
        let login = Arc::clone(&self.login);
        let (Some(user), Some(password)) = (&login.user, &login.password) else {
            return Err(OpError::new(
                ErrorClass::Auth,
                format!(
                    "{} asks for a login (memcached -Y): give it in the URL, memcached://USER:PASSWORD@HOST:PORT",
                    login.server.shown
                ),
            ));
        };
        let pair = format!("{user} {password}");
        self.wire.out.clear();
        // exptime -1: were the server to take this for a plain set, the item expires at once.
        push_store(
            &mut self.wire.out,
            b"set",
            b"loadrig:auth",
            pair.as_bytes(),
            b"0",
            b"-1",
            None,
        )?;
        let range = self.wire.roundtrip().await?;
        let line = first_line(&self.wire.inbuf[range]);
        if line == b"STORED" {
            return Ok(());
        }
        let mut e = reply_error(line);
        e.class = ErrorClass::Auth;
        e.message = format!("authentication failed: {}", e.message);
        Err(e)
    }

    fn dialect_for(&self, probe: &Probe) -> Result<Dialect, OpError> {
        let meta = has_meta(&probe.version);
        match self.login.commands {
            Commands::Auto if meta => Ok(Dialect::Meta),
            Commands::Auto | Commands::Only(Dialect::Classic) => Ok(Dialect::Classic),
            Commands::Only(Dialect::Meta) if meta => Ok(Dialect::Meta),
            Commands::Only(Dialect::Meta) => Err(other(format!(
                "{} is memcached {}, which has no meta commands (1.6 and later): drop commands=meta",
                self.login.server.shown, probe.version
            ))),
        }
    }

    /// This session's connection (logged in) as `n` sessions that share it.
    fn share(self, n: usize) -> Vec<McSession> {
        let (login, dialect) = (self.login, self.dialect);
        self.wire
            .share(n)
            .into_iter()
            .map(|wire| McSession {
                wire,
                login: Arc::clone(&login),
                dialect,
            })
            .collect()
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        match *op {
            Op::Nop | Op::Begin | Op::Commit | Op::Rollback => return Ok(Outcome::rows(0)),
            Op::Put { .. } | Op::Get { .. } | Op::Update { .. } | Op::Delete { .. } => {
                self.wire.out.clear();
                push_kv(&mut self.wire.out, self.dialect, op)?;
            }
            Op::Native {
                op: NativeOp::Memcached(mc),
                args,
                capture,
            } => return self.native(mc, args, capture).await,
            Op::Native {
                op: NativeOp::Record(rec),
                args,
                ..
            } => return self.record(rec, args).await,
            // Every other family: the runner refuses them before anything runs.
            Op::Native { .. } => return Err(super::unsupported(op, "memcached://")),
        }
        let range = self.wire.roundtrip().await?;
        Ok(Outcome::rows(reply_rows(&self.wire.inbuf[range])?))
    }

    async fn native(
        &mut self,
        op: &MemcachedOp<ValueKind>,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        self.wire.out.clear();
        push_native(&mut self.wire.out, op, args)?;
        let range = self.wire.roundtrip().await?;
        let frame = &self.wire.inbuf[range];
        let mut out = Outcome::rows(reply_rows(frame)?);
        if capture {
            out.captured = match op {
                MemcachedOp::Get { cas, .. } => captured_values(frame, args, *cas)?,
                MemcachedOp::Gat { cas, .. } => captured_values(frame, &args[1..], *cas)?,
                // The new value; nothing when the key had no item.
                _ if out.rows > 0 => vec![first_line(frame).to_vec()],
                _ => Vec::new(),
            };
        }
        Ok(out)
    }

    /// A record as one item holding a JSON object of its fields (see the module's notes).
    async fn record(
        &mut self,
        op: &RecordOp<ValueKind>,
        args: &[Vec<u8>],
    ) -> Result<Outcome, OpError> {
        let key = args[0].as_slice();
        let rows = match op {
            RecordOp::Insert { .. } => {
                let doc = record_doc(&args[1..]);
                self.store(b"set", key, &doc).await?
            }
            RecordOp::Update { field: None, .. } => {
                let doc = record_doc(&args[1..]);
                self.store(b"replace", key, &doc).await?
            }
            RecordOp::Read { field, .. } => {
                self.wire.out.clear();
                push_keyed(&mut self.wire.out, b"get", key)?;
                let range = self.wire.roundtrip().await?;
                let frame = &self.wire.inbuf[range];
                match (items(frame)?.first(), field) {
                    (None, _) => 0,
                    (Some(_), None) => 1,
                    (Some(item), Some(_)) => {
                        let name = field_name(&args[1])?;
                        u64::from(record_of(key, item.data)?.contains_key(&name))
                    }
                }
            }
            RecordOp::Update { field: Some(_), .. } => {
                self.update_field(key, &field_name(&args[1])?, &args[2])
                    .await?
            }
            RecordOp::Delete { .. } => {
                self.wire.out.clear();
                push_keyed(&mut self.wire.out, b"delete", key)?;
                let range = self.wire.roundtrip().await?;
                reply_rows(&self.wire.inbuf[range])?
            }
            RecordOp::Scan { .. } => {
                return Err(other(
                    "memcached:// targets cannot scan records: memcached keeps no key order",
                ))
            }
        };
        Ok(Outcome::rows(rows))
    }

    /// One store command of a whole value; its rows.
    async fn store(&mut self, command: &[u8], key: &[u8], value: &[u8]) -> Result<u64, OpError> {
        self.wire.out.clear();
        push_store(&mut self.wire.out, command, key, value, b"0", b"0", None)?;
        let range = self.wire.roundtrip().await?;
        reply_rows(&self.wire.inbuf[range])
    }

    /// `gets` the record, change one field, `cas` it back: 0 rows when it is missing, a
    /// `serialization` failure when another client changed it in between.
    async fn update_field(
        &mut self,
        key: &[u8],
        field: &str,
        value: &[u8],
    ) -> Result<u64, OpError> {
        self.wire.out.clear();
        push_keyed(&mut self.wire.out, b"gets", key)?;
        let range = self.wire.roundtrip().await?;
        let frame = &self.wire.inbuf[range];
        let found = items(frame)?;
        let Some(item) = found.first() else {
            return Ok(0);
        };
        let token = item
            .cas
            .ok_or_else(|| protocol("gets answered without a CAS token"))?
            .to_vec();
        let mut doc = record_of(key, item.data)?;
        doc.insert(
            field.to_string(),
            serde_json::Value::String(String::from_utf8_lossy(value).into_owned()),
        );
        let bytes = serde_json::to_vec(&doc).map_err(|e| other(e.to_string()))?;
        self.wire.out.clear();
        push_store(
            &mut self.wire.out,
            b"cas",
            key,
            &bytes,
            b"0",
            b"0",
            Some(&token),
        )?;
        let range = self.wire.roundtrip().await?;
        reply_rows(&self.wire.inbuf[range])
    }

    /// Write `out` (one request per entry of `n`) and read every reply; the first error.
    async fn pipeline(&mut self, n: usize) -> Result<u64, OpError> {
        self.wire.send().await?;
        let mut first_error = None;
        let mut rows = 0;
        for _ in 0..n {
            let range = self.wire.read_reply().await?;
            match reply_rows(&self.wire.inbuf[range]) {
                Ok(r) => rows += r,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(rows), Err)
    }

    /// Every key under `loadrig:` that `lru_crawler metadump all` lists.
    async fn loadrig_keys(&mut self) -> Result<Vec<Vec<u8>>, OpError> {
        let started = Instant::now();
        loop {
            self.wire.out.clear();
            self.wire
                .out
                .extend_from_slice(b"lru_crawler metadump all\r\n");
            self.wire.send().await?;
            if let Some(keys) = self.read_metadump().await? {
                return Ok(keys);
            }
            if started.elapsed() > CRAWLER_WAIT {
                return Err(other(format!(
                    "{}'s LRU crawler stayed busy for {} s: run cleanup again later",
                    self.login.server.shown,
                    CRAWLER_WAIT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The keys of one metadump under loadrig's prefix, or `None` when the crawler was busy.
    async fn read_metadump(&mut self) -> Result<Option<Vec<Vec<u8>>>, OpError> {
        let mut keys = Vec::new();
        loop {
            while let Some(nl) = memchr::memchr(b'\n', self.wire.inbuf.unread()) {
                let range = self.wire.inbuf.consume(nl + 1);
                let line = first_line(&self.wire.inbuf[range]);
                if line == b"END" {
                    return Ok(Some(keys));
                }
                if line.starts_with(b"BUSY") {
                    return Ok(None);
                }
                let Some(rest) = line.strip_prefix(b"key=") else {
                    let e = reply_error(line);
                    return Err(other(format!(
                        "cleanup lists loadrig's keys with lru_crawler metadump, which {} refused ({}): its loadrig: keys stay",
                        self.login.server.shown, e.message
                    )));
                };
                let encoded = rest.split(|&b| b == b' ').next().unwrap_or_default();
                let key = percent_decode(encoded);
                if key.starts_with(PREFIX.as_bytes()) {
                    keys.push(key);
                }
            }
            self.wire.fill().await?;
        }
    }
}

impl Session for McSession {
    async fn server_version(&mut self) -> Option<String> {
        let probe = self.login.probe.get()?;
        let commands = match self.dialect {
            Dialect::Meta => "meta commands",
            Dialect::Classic => "classic commands",
        };
        let login = if probe.auth { ", authfile login" } else { "" };
        Some(format!("memcached {} ({commands}{login})", probe.version))
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    /// One pipeline per batch: every store written at once, then every reply read.
    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        self.wire.out.clear();
        for (key, value) in records {
            push_kv(&mut self.wire.out, self.dialect, &Op::Put { key, value })?;
        }
        self.pipeline(records.len()).await.map(|_| ())
    }

    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        self.wire.out.clear();
        for (key, values) in records {
            let doc = record_doc(values);
            push_store(
                &mut self.wire.out,
                b"set",
                key.as_bytes(),
                &doc,
                b"0",
                b"0",
                None,
            )?;
        }
        self.pipeline(records.len()).await.map(|_| ())
    }

    /// memcached cannot tell a record from a kv item: every `loadrig:` key the crawler
    /// lists goes.
    async fn create_records(&mut self, _layout: crate::vocab::RecordLayout) -> Result<(), OpError> {
        self.cleanup().await.map(|_| ())
    }

    /// Delete every `loadrig:` key the crawler lists; returns those deleted (a key that
    /// expired or was evicted since the crawl is not counted). One metadump right after a
    /// run can miss items memcached has not yet linked where the crawler walks, so the
    /// crawl is repeated until two in a row find nothing more to delete (one empty crawl
    /// was seen to leave items the LRU maintainer was moving between its queues).
    async fn cleanup(&mut self) -> Result<u64, OpError> {
        let (mut removed, mut empty) = (0, 0);
        for _ in 0..CLEANUP_CRAWLS {
            let keys = self.loadrig_keys().await?;
            let mut this_crawl = 0;
            for batch in keys.chunks(DELETE_BATCH) {
                self.wire.out.clear();
                for key in batch {
                    self.wire.out.extend_from_slice(b"delete ");
                    self.wire.out.extend_from_slice(key);
                    self.wire.out.extend_from_slice(b"\r\n");
                }
                this_crawl += self.pipeline(batch.len()).await?;
            }
            removed += this_crawl;
            empty = if this_crawl == 0 { empty + 1 } else { 0 };
            if empty == 2 {
                break;
            }
        }
        Ok(removed)
    }
}

/// memcached 1.6 and later have the meta commands.
fn has_meta(version: &str) -> bool {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 6)
}

// --- requests ------------------------------------------------------------------------

/// Append `loadrig:KEY`, refusing a key memcached cannot hold.
fn push_key(out: &mut Vec<u8>, key: &[u8]) -> Result<(), OpError> {
    if PREFIX.len() + key.len() > MAX_KEY {
        return Err(other(format!(
            "key of {} bytes: memcached holds keys of up to {MAX_KEY} bytes, '{PREFIX}' included",
            key.len()
        )));
    }
    if let Some(bad) = key.iter().find(|&&b| b <= b' ' || b == 0x7f) {
        return Err(other(format!(
            "key '{}' holds byte 0x{bad:02x}: memcached keys have no spaces or control characters",
            String::from_utf8_lossy(key)
        )));
    }
    out.extend_from_slice(PREFIX.as_bytes());
    out.extend_from_slice(key);
    Ok(())
}

fn push_number(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `COMMAND loadrig:KEY\r\n` (get, gets, delete, md).
fn push_keyed(out: &mut Vec<u8>, command: &[u8], key: &[u8]) -> Result<(), OpError> {
    out.extend_from_slice(command);
    out.push(b' ');
    push_key(out, key)?;
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// `COMMAND loadrig:KEY FLAGS EXPTIME LEN [CAS]\r\nVALUE\r\n`.
fn push_store(
    out: &mut Vec<u8>,
    command: &[u8],
    key: &[u8],
    value: &[u8],
    flags: &[u8],
    exptime: &[u8],
    cas: Option<&[u8]>,
) -> Result<(), OpError> {
    out.extend_from_slice(command);
    out.push(b' ');
    push_key(out, key)?;
    for word in [flags, exptime] {
        out.push(b' ');
        out.extend_from_slice(word);
    }
    out.push(b' ');
    push_number(out, value.len());
    if let Some(c) = cas {
        out.push(b' ');
        out.extend_from_slice(c);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// A kv operation in the session's dialect.
fn push_kv(out: &mut Vec<u8>, dialect: Dialect, op: &Op<'_>) -> Result<(), OpError> {
    match (*op, dialect) {
        (Op::Put { key, value }, Dialect::Classic) => {
            push_store(out, b"set", key.as_bytes(), value, b"0", b"0", None)
        }
        (Op::Update { key, value }, Dialect::Classic) => {
            push_store(out, b"replace", key.as_bytes(), value, b"0", b"0", None)
        }
        (Op::Get { key }, Dialect::Classic) => push_keyed(out, b"get", key.as_bytes()),
        (Op::Delete { key }, Dialect::Classic) => push_keyed(out, b"delete", key.as_bytes()),
        (Op::Put { key, value } | Op::Update { key, value }, Dialect::Meta) => {
            out.extend_from_slice(b"ms ");
            push_key(out, key.as_bytes())?;
            out.push(b' ');
            push_number(out, value.len());
            // MR: replace, only an existing item.
            let tail: &[u8] = if matches!(op, Op::Update { .. }) {
                b" MR\r\n"
            } else {
                b"\r\n"
            };
            out.extend_from_slice(tail);
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
            Ok(())
        }
        (Op::Get { key }, Dialect::Meta) => {
            out.extend_from_slice(b"mg ");
            push_key(out, key.as_bytes())?;
            out.extend_from_slice(b" v\r\n");
            Ok(())
        }
        (Op::Delete { key }, Dialect::Meta) => push_keyed(out, b"md", key.as_bytes()),
        _ => Err(other("not a kv operation")),
    }
}

/// A number memcached reads on its command line: digits (and a leading `-` if `signed`).
fn number<'a>(what: &str, arg: &'a [u8], signed: bool) -> Result<&'a [u8], OpError> {
    let digits = match arg {
        [b'-', rest @ ..] if signed => rest,
        _ => arg,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(other(format!(
            "{what} '{}' is not a whole number",
            String::from_utf8_lossy(arg)
        )));
    }
    Ok(arg)
}

/// A native command, its arguments in `MemcachedOp::map_args` order.
fn push_native(
    out: &mut Vec<u8>,
    op: &MemcachedOp<ValueKind>,
    args: &[Vec<u8>],
) -> Result<(), OpError> {
    let verb = op.label().trim_start_matches("memcached.").as_bytes();
    match op {
        MemcachedOp::Get { .. } | MemcachedOp::Gat { .. } => {
            out.extend_from_slice(verb);
            let keys = match op {
                MemcachedOp::Gat { .. } => {
                    out.push(b' ');
                    out.extend_from_slice(number("exptime", &args[0], true)?);
                    &args[1..]
                }
                _ => args,
            };
            for key in keys {
                out.push(b' ');
                push_key(out, key)?;
            }
            out.extend_from_slice(b"\r\n");
            Ok(())
        }
        MemcachedOp::Store { .. } | MemcachedOp::Cas { .. } => {
            let flags = number("flags", &args[2], false)?;
            let exptime = number("exptime", &args[3], true)?;
            let cas = match args.get(4) {
                Some(c) => Some(number("cas", c, false)?),
                None => None,
            };
            push_store(out, verb, &args[0], &args[1], flags, exptime, cas)
        }
        MemcachedOp::Arith { .. } | MemcachedOp::Touch { .. } => {
            let (what, signed) = match op {
                MemcachedOp::Touch { .. } => ("exptime", true),
                _ => ("by", false),
            };
            out.extend_from_slice(verb);
            out.push(b' ');
            push_key(out, &args[0])?;
            out.push(b' ');
            out.extend_from_slice(number(what, &args[1], signed)?);
            out.extend_from_slice(b"\r\n");
            Ok(())
        }
        MemcachedOp::Delete { .. } => push_keyed(out, verb, &args[0]),
    }
}

// --- replies -------------------------------------------------------------------------

/// The first line of `buf`, without its line end.
fn first_line(buf: &[u8]) -> &[u8] {
    let line = match memchr::memchr(b'\n', buf) {
        Some(nl) => &buf[..nl],
        None => buf,
    };
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The `n`th space-separated word of a line (from 0).
fn word(line: &[u8], n: usize) -> Option<&[u8]> {
    line.split(|&b| b == b' ').filter(|w| !w.is_empty()).nth(n)
}

fn size(text: Option<&[u8]>) -> Result<usize, String> {
    text.and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| {
            format!(
                "bad length '{}'",
                String::from_utf8_lossy(text.unwrap_or_default())
            )
        })
}

/// Where the first whole request or reply in `buf` ends, `None` if more bytes are needed:
/// a line, or a line and the data block whose length it gives (a store request, `ms`, `VA`),
/// or `VALUE` blocks up to `END`. Requests are framed too, for the shared connection's
/// count of the replies it expects.
fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let Some(nl) = memchr::memchr(b'\n', buf) else {
        return Ok(None);
    };
    let line = first_line(buf);
    let data = match word(line, 0).unwrap_or_default() {
        b"VALUE" => return values_len(buf),
        b"VA" => size(word(line, 1))?,
        b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" => size(word(line, 4))?,
        b"ms" => size(word(line, 2))?,
        _ => return Ok(Some(nl + 1)),
    };
    block_end(buf, nl + 1, data)
}

/// The end of a data block of `len` bytes at `at` and its line end.
fn block_end(buf: &[u8], at: usize, len: usize) -> Result<Option<usize>, String> {
    let end = at + len + 2;
    match buf.get(end - 2..end) {
        None => Ok(None),
        Some(b"\r\n") => Ok(Some(end)),
        Some(_) => Err("a data block not ended by CRLF".into()),
    }
}

/// The end of `VALUE` blocks and their `END`.
fn values_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    loop {
        let Some(nl) = memchr::memchr(b'\n', &buf[at..]) else {
            return Ok(None);
        };
        let line = first_line(&buf[at..]);
        match word(line, 0) {
            Some(b"END") => return Ok(Some(at + nl + 1)),
            Some(b"VALUE") => match block_end(buf, at + nl + 1, size(word(line, 3))?)? {
                Some(end) => at = end,
                None => return Ok(None),
            },
            _ => {
                return Err(format!(
                    "'{}' among VALUE lines",
                    String::from_utf8_lossy(line)
                ))
            }
        }
    }
}

/// One item of a `VALUE` reply.
struct Item<'a> {
    key: &'a [u8],
    data: &'a [u8],
    cas: Option<&'a [u8]>,
}

/// The items of a whole classic get reply (`VALUE` blocks and `END`); errors as errors.
fn items(frame: &[u8]) -> Result<Vec<Item<'_>>, OpError> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let line = first_line(&frame[at..]);
        let next = at + line.len() + 2;
        match word(line, 0) {
            Some(b"END") => return Ok(out),
            Some(b"VALUE") => {
                let len = size(word(line, 3)).map_err(protocol)?;
                let data = frame
                    .get(next..next + len)
                    .ok_or_else(|| protocol("a VALUE block cut short"))?;
                out.push(Item {
                    key: word(line, 1).unwrap_or_default(),
                    data,
                    cas: word(line, 4),
                });
                at = next + len + 2;
            }
            _ => return Err(reply_error(line)),
        }
    }
}

/// What a get family's `capture` takes: each asked key's value (and CAS token) in order,
/// empty for a key not found.
fn captured_values(frame: &[u8], keys: &[Vec<u8>], cas: bool) -> Result<Vec<Vec<u8>>, OpError> {
    let found = items(frame)?;
    let mut used = vec![false; found.len()];
    let mut out = Vec::new();
    for key in keys {
        let hit = found.iter().enumerate().position(|(i, item)| {
            !used[i]
                && item.key.len() == PREFIX.len() + key.len()
                && item.key.starts_with(PREFIX.as_bytes())
                && item.key.ends_with(key)
        });
        if let Some(i) = hit {
            used[i] = true;
        }
        let item = hit.map(|i| &found[i]);
        out.push(item.map_or_else(Vec::new, |it| it.data.to_vec()));
        if cas {
            out.push(item.and_then(|it| it.cas).unwrap_or_default().to_vec());
        }
    }
    Ok(out)
}

/// The rows of a whole reply: items found, 1 for a store, delete, touch or incr done, 0
/// for a miss; memcached's errors as errors.
fn reply_rows(frame: &[u8]) -> Result<u64, OpError> {
    let line = first_line(frame);
    Ok(match word(line, 0).unwrap_or_default() {
        b"STORED" | b"HD" | b"DELETED" | b"TOUCHED" | b"VA" => 1,
        b"NOT_STORED" | b"NS" | b"NOT_FOUND" | b"NF" | b"END" | b"EN" => 0,
        b"VALUE" => items(frame)?.len() as u64,
        b"EXISTS" | b"EX" => {
            return Err(OpError::new(
                ErrorClass::Serialization,
                "EXISTS: the item changed since its CAS token was read",
            ))
        }
        w if !w.is_empty() && w.iter().all(u8::is_ascii_digit) => 1,
        _ => return Err(reply_error(line)),
    })
}

/// An error line (or any line that is not a reply) as an operation error.
fn reply_error(line: &[u8]) -> OpError {
    let text = String::from_utf8_lossy(line).into_owned();
    let class = if text.starts_with("CLIENT_ERROR unauthenticated")
        || text.starts_with("CLIENT_ERROR authentication failure")
    {
        ErrorClass::Auth
    } else if text.starts_with("SERVER_ERROR too many open connections") {
        // Sent on accept, then the server closes: the connection was refused.
        ErrorClass::Connect
    } else if text.starts_with("CLIENT_ERROR") || text.starts_with("SERVER_ERROR") {
        ErrorClass::Other
    } else if text == "ERROR" {
        return protocol("ERROR: the server does not know the command");
    } else {
        return protocol(format!("unexpected reply from memcached: '{text}'"));
    };
    OpError::new(class, text)
}

/// A metadump key, as memcached URL-encodes it (`%3A` for `:`).
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = (text[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(text[i]);
                i += 1;
            }
        }
    }
    out
}

// --- records -------------------------------------------------------------------------

/// A record's item: a JSON object of `field0`, `field1`, ... in order.
fn record_doc(values: &[Vec<u8>]) -> Vec<u8> {
    let doc: serde_json::Map<String, serde_json::Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let text = String::from_utf8_lossy(v).into_owned();
            (format!("field{i}"), serde_json::Value::String(text))
        })
        .collect();
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// The fields of a record's item.
fn record_of(
    key: &[u8],
    data: &[u8],
) -> Result<serde_json::Map<String, serde_json::Value>, OpError> {
    serde_json::from_slice(data).map_err(|_| {
        protocol(format!(
            "{PREFIX}{} holds no record (a JSON object of fields)",
            String::from_utf8_lossy(key)
        ))
    })
}

/// `fieldN` for the field number a record operation names.
fn field_name(arg: &[u8]) -> Result<String, OpError> {
    let text = String::from_utf8_lossy(arg);
    text.trim()
        .parse::<usize>()
        .map(|n| format!("field{n}"))
        .map_err(|_| other(format!("record field '{text}' is not a field number")))
}

// --- the batch driver ----------------------------------------------------------------

/// memcached's text protocol for the engine's batch driver (`--pipeline`): kv operations
/// and native commands that capture nothing. The connection's context is its [`Dialect`].
static BATCH_CODEC: Codec = Codec {
    accepts: batch_accepts,
    encode: batch_encode,
    frame_len,
    decode: batch_decode,
    closes: None,
    prepare: super::pipelined::prepare_nothing,
    one_in_flight: false,
    batch: None,
    tls_records: true,
};

fn batch_accepts(kind: &OpKind) -> bool {
    match kind {
        OpKind::Put { .. } | OpKind::Get { .. } | OpKind::Update { .. } | OpKind::Delete { .. } => {
            true
        }
        OpKind::Native(step) => matches!(step.op, NativeOp::Memcached(_)) && plain_step(step),
        _ => false,
    }
}

fn batch_encode(op: &Op<'_>, context: Option<&Context>, out: &mut Vec<u8>) -> Result<(), OpError> {
    match op {
        Op::Native {
            op: NativeOp::Memcached(mc),
            args,
            capture: false,
        } => push_native(out, mc, args),
        _ => {
            let dialect = context
                .and_then(|c| c.downcast_ref::<Dialect>())
                .copied()
                .unwrap_or(Dialect::Classic);
            push_kv(out, dialect, op)
        }
    }
}

fn batch_decode(_: &OpKind, frame: &[u8]) -> Result<Outcome, OpError> {
    reply_rows(frame).map(Outcome::rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_requests_and_replies() {
        assert_eq!(frame_len(b"STORED\r\n"), Ok(Some(8)));
        assert_eq!(frame_len(b"STORED\r"), Ok(None));
        assert_eq!(frame_len(b"END\r\nEND\r\n"), Ok(Some(5)));
        let hit = b"VALUE loadrig:a 0 3\r\nabc\r\nEND\r\n";
        assert_eq!(frame_len(hit), Ok(Some(hit.len())));
        assert_eq!(frame_len(&hit[..hit.len() - 1]), Ok(None));
        // A value that holds "END\r\n" is data, not the end.
        let tricky =
            b"VALUE loadrig:a 0 5\r\nEND\r\n\r\nVALUE loadrig:b 0 1 7\r\nx\r\nEND\r\nNF\r\n";
        assert_eq!(frame_len(tricky), Ok(Some(tricky.len() - 4)));
        assert_eq!(frame_len(b"VA 2 f0\r\nhi\r\nEN\r\n"), Ok(Some(13)));
        assert_eq!(frame_len(b"VA 2\r\nhi"), Ok(None));
        assert_eq!(
            frame_len(b"set loadrig:k 0 0 2\r\nhi\r\nget x\r\n"),
            Ok(Some(25))
        );
        assert_eq!(frame_len(b"ms loadrig:k 2 MR\r\nhi\r\n"), Ok(Some(23)));
        assert_eq!(frame_len(b"mg loadrig:k v\r\n"), Ok(Some(16)));
        assert!(frame_len(b"VA 2\r\nhiXX").is_err());
        assert!(frame_len(b"VALUE k 0 x\r\n").is_err());
    }

    #[test]
    fn encodes_kv_in_both_dialects_under_the_prefix() {
        let mut out = Vec::new();
        let put = Op::Put {
            key: "s:1",
            value: b"abc",
        };
        push_kv(&mut out, Dialect::Classic, &put).unwrap();
        assert_eq!(out, b"set loadrig:s:1 0 0 3\r\nabc\r\n");
        out.clear();
        push_kv(&mut out, Dialect::Meta, &put).unwrap();
        assert_eq!(out, b"ms loadrig:s:1 3\r\nabc\r\n");
        out.clear();
        let update = Op::Update {
            key: "s:1",
            value: b"x",
        };
        push_kv(&mut out, Dialect::Meta, &update).unwrap();
        assert_eq!(out, b"ms loadrig:s:1 1 MR\r\nx\r\n");
        out.clear();
        push_kv(&mut out, Dialect::Classic, &update).unwrap();
        assert_eq!(out, b"replace loadrig:s:1 0 0 1\r\nx\r\n");
        out.clear();
        push_kv(&mut out, Dialect::Meta, &Op::Get { key: "s:1" }).unwrap();
        push_kv(&mut out, Dialect::Meta, &Op::Delete { key: "s:1" }).unwrap();
        push_kv(&mut out, Dialect::Classic, &Op::Get { key: "s:1" }).unwrap();
        push_kv(&mut out, Dialect::Classic, &Op::Delete { key: "s:1" }).unwrap();
        assert_eq!(
            out,
            b"mg loadrig:s:1 v\r\nmd loadrig:s:1\r\nget loadrig:s:1\r\ndelete loadrig:s:1\r\n"
        );
    }

    #[test]
    fn refuses_keys_memcached_cannot_hold() {
        let mut out = Vec::new();
        assert!(push_key(&mut out, b"a b").is_err());
        assert!(push_key(&mut out, b"a\nb").is_err());
        assert!(push_key(&mut out, &[b'k'; 243]).is_err());
        assert!(push_key(&mut out, &[b'k'; 242]).is_ok());
        assert_eq!(out.len(), MAX_KEY);
    }

    #[test]
    fn encodes_native_commands() {
        let enc = |op: MemcachedOp<ValueKind>, args: &[&str]| {
            let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
            let mut out = Vec::new();
            push_native(&mut out, &op, &args).map(|()| String::from_utf8(out).unwrap())
        };
        let b = ValueKind::Bytes;
        let get = MemcachedOp::Get {
            keys: vec![b, b],
            cas: true,
        };
        assert_eq!(
            enc(get, &["a", "b"]).unwrap(),
            "gets loadrig:a loadrig:b\r\n"
        );
        let gat = MemcachedOp::Gat {
            exptime: b,
            keys: vec![b],
            cas: false,
        };
        assert_eq!(
            enc(gat.clone(), &["-1", "a"]).unwrap(),
            "gat -1 loadrig:a\r\n"
        );
        assert!(enc(gat, &["soon", "a"]).is_err());
        let add = MemcachedOp::Store {
            mode: crate::vocab::StoreMode::Add,
            key: b,
            value: b,
            flags: b,
            exptime: b,
        };
        assert_eq!(
            enc(add, &["k", "hello", "7", "60"]).unwrap(),
            "add loadrig:k 7 60 5\r\nhello\r\n"
        );
        let cas = MemcachedOp::Cas {
            key: b,
            value: b,
            flags: b,
            exptime: b,
            cas: b,
        };
        assert_eq!(
            enc(cas, &["k", "v", "0", "0", "42"]).unwrap(),
            "cas loadrig:k 0 0 1 42\r\nv\r\n"
        );
        let decr = MemcachedOp::Arith {
            decr: true,
            key: b,
            by: b,
        };
        assert_eq!(
            enc(decr.clone(), &["n", "3"]).unwrap(),
            "decr loadrig:n 3\r\n"
        );
        assert!(enc(decr, &["n", "-3"]).is_err());
        let touch = MemcachedOp::Touch { key: b, exptime: b };
        assert_eq!(enc(touch, &["n", "10"]).unwrap(), "touch loadrig:n 10\r\n");
        let delete = MemcachedOp::Delete { key: b };
        assert_eq!(enc(delete, &["n"]).unwrap(), "delete loadrig:n\r\n");
    }

    #[test]
    fn replies_count_rows_and_errors_by_class() {
        let rows = |r: &[u8]| reply_rows(r).map_err(|e| e.class);
        assert_eq!(rows(b"STORED\r\n"), Ok(1));
        assert_eq!(rows(b"HD\r\n"), Ok(1));
        assert_eq!(rows(b"NOT_STORED\r\n"), Ok(0));
        assert_eq!(rows(b"EN\r\n"), Ok(0));
        assert_eq!(rows(b"END\r\n"), Ok(0));
        assert_eq!(rows(b"VA 1\r\nx\r\n"), Ok(1));
        assert_eq!(
            rows(b"VALUE loadrig:a 0 1\r\nx\r\nVALUE loadrig:b 0 1\r\ny\r\nEND\r\n"),
            Ok(2)
        );
        assert_eq!(rows(b"42\r\n"), Ok(1));
        assert_eq!(rows(b"EXISTS\r\n"), Err(ErrorClass::Serialization));
        assert_eq!(rows(b"ERROR\r\n"), Err(ErrorClass::Protocol));
        assert_eq!(rows(b"HTTP/1.1 400\r\n"), Err(ErrorClass::Protocol));
        assert_eq!(
            rows(b"CLIENT_ERROR unauthenticated\r\n"),
            Err(ErrorClass::Auth)
        );
        assert_eq!(
            rows(b"SERVER_ERROR out of memory storing object\r\n"),
            Err(ErrorClass::Other)
        );
        assert_eq!(
            rows(b"SERVER_ERROR too many open connections\r\n"),
            Err(ErrorClass::Connect)
        );
        let e = reply_rows(b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Other);
        assert!(e.message.contains("non-numeric"), "{}", e.message);
    }

    #[test]
    fn captures_values_in_the_order_of_the_keys() {
        let frame = b"VALUE loadrig:b 0 2 9\r\nbb\r\nVALUE loadrig:a 0 1 8\r\na\r\nEND\r\n";
        let keys = [b"a".to_vec(), b"zz".to_vec(), b"b".to_vec()];
        let got = captured_values(frame, &keys, true).unwrap();
        let want: Vec<&[u8]> = vec![b"a", b"8", b"", b"", b"bb", b"9"];
        assert_eq!(got, want);
    }

    #[test]
    fn decodes_metadump_keys_and_versions() {
        assert_eq!(percent_decode(b"loadrig%3Ak%2520x"), b"loadrig:k%20x");
        assert_eq!(percent_decode(b"plain%zz"), b"plain%zz");
        assert!(has_meta("1.6.18"));
        assert!(has_meta("1.10.0"));
        assert!(!has_meta("1.5.22"));
        assert!(!has_meta("garbage"));
    }

    #[test]
    fn records_are_json_objects_of_numbered_fields() {
        let doc = record_doc(&[b"x".to_vec(), b"y\"z".to_vec()]);
        assert_eq!(doc, br#"{"field0":"x","field1":"y\"z"}"#);
        let back = record_of(b"k", &doc).unwrap();
        assert_eq!(back["field1"], "y\"z");
        assert!(record_of(b"k", b"not json").is_err());
        assert_eq!(field_name(b" 3").unwrap(), "field3");
    }
}
