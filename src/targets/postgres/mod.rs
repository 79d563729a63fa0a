//! `postgres://USER:PASSWORD@HOST:PORT/DB`: PostgreSQL through tokio-postgres, plain TCP or
//! TLS (rustls, through tokio-postgres-rustls).
//!
//! - A Unix socket, as libpq takes one: a host that is a directory, percent-encoded in the
//!   URL (`postgres://postgres@%2Frun%2Fpostgresql:5432/db`) or given as `?host=/run/postgresql`
//!   (which wins over the URL's host); the socket is `DIR/.s.PGSQL.PORT`. Its sessions run
//!   on tokio-postgres (loadrig's own client speaks TCP), without TLS, as libpq's do.
//! - Options: `connect_timeout` (default 5 s, a duration or plain seconds) bounds the TCP
//!   connect and the whole handshake (SCRAM included); `application_name`; `sslmode`:
//!   `disable` (the default) or `require`, `verify-ca`, `verify-full`, which all encrypt and
//!   verify the server's certificate and name (see [`super::tls`]: `ca=PATH`, and
//!   `insecure=true` for libpq's unverified `require`).
//! - Every connection's phases are recorded: TCP connect; TLS handshake (after the
//!   SSLRequest exchange, which counts in authentication); authentication (startup, SCRAM,
//!   until the server is ready for queries).
//! - kv operations use `loadrig_kv (k VARCHAR(255) PRIMARY KEY, v BYTEA NOT NULL)`, created
//!   by setup: put is an upsert (`ON CONFLICT (k) DO UPDATE`), get reads the value (rows
//!   1 or 0), update and delete count the rows they touched.
//! - Native `sql` statements are prepared once per session, on first use, and cached by
//!   their workload-wide number. Arguments are converted to the parameter types the server
//!   declared: bool, int2/int4/int8, oid, float4/float8 and bytea are sent in binary;
//!   text types as they are; every other type (numeric, date, timestamp, uuid, json, ...)
//!   as text for the server to parse. An empty argument binds NULL for non-text types. A
//!   value that does not parse fails the operation (class other) naming the parameter.
//!   Rows are the rows returned, or for statements that return none the rows affected.
//!   `capture` takes the first row's values as the server's output functions print them
//!   (psql's text), rendered here from the binary results: NULL as empty, bytea raw; dates
//!   and times for the session's DateStyle ISO, IntervalStyle postgres and, for
//!   timestamptz, a UTC TimeZone; another type or setting fails the operation, saying to
//!   cast the column with `::text`. A parameterless statement the server cannot prepare (several
//!   commands in one string, as setup statements may be) runs as a simple query.
//! - Transactions: BEGIN / COMMIT / ROLLBACK. Data loading: binary COPY into a temporary
//!   table, then one upsert into `loadrig_kv`, so loading the same keys again replaces them.
//! - Documents with attachments (`attachment=PATH` or `attachment_size=N`): `kv.put`
//!   stores the value as jsonb and streams the attachment into a large object, `kv.get`
//!   reads it back in pieces and checks it (see `documents.rs`).
//! - Cleanup unlinks the attachments, then drops every table of the current schema whose
//!   name starts with `loadrig_`.
//! - Plain runs (plain TCP, the operations [`wire`] accepts) go through the engine's batch
//!   driver with the extended protocol spoken directly, at every `--pipeline`; every other
//!   session on plain TCP without attachments is a [`PgSession::Wire`] on the same client
//!   ([`wire_session`]). The rest of this file is the tokio-postgres path, for TLS,
//!   documents, connections shared by `--pipeline` streams and `client=tokio-postgres`.
//! - `--pipeline P` on tokio-postgres: P streams share each connection (one `Client`,
//!   `Rc`-shared, each stream with its own prepared statements); tokio-postgres sends the
//!   queries of concurrent calls without waiting for earlier replies, which is
//!   PostgreSQL's pipeline mode on the extended protocol. Transactions (their state belongs to the connection) and
//!   documents with attachments (a transaction per operation) are refused with it.
//! - `pipeline_sync=batch` (URL or workload parameter; default `op`): the batch driver
//!   closes each write with one Sync instead of one per operation ([`wire::CODEC_BATCH`]), as
//!   pgbench's `\endpipeline`; only on loadrig's own client, and a run that cannot use the
//!   driver exits 2 (`Target::needs_batch_driver`).
//! - `authenticate` is not possible on an open PostgreSQL connection: use the `connect`
//!   operation (or `--connection per-op`) to measure the handshake.
//!
//! Errors by SQLSTATE: 40P01 → deadlock, 40001 → serialization, 57014 (statement timeout
//! or cancel) and 55P03 (lock not available) → timeout, 23xxx → constraint, 28xxx → auth,
//! 08xxx, 57P0x (server shutting down) and any error that leaves the connection closed
//! (I/O, end of stream) → connect, so the engine reconnects; a malformed reply → protocol;
//! everything else → other. Messages never contain the password.

pub mod admin;
pub mod backsql;
mod documents;
mod scram;
mod text;
mod wire;
mod wire_session;

use std::collections::HashMap;
use std::error::Error as _;
use std::future::Future;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Client, Config, Connection, NoTls, SimpleQueryMessage, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::attachment::Attachment;
use super::endpoint::Endpoint;
use super::pipelined::{Batched, Codec};
use super::socket;
use super::sql::{
    check_arity, handshake, kv_table, sqlstate_class, Dialect, Isolation, Kv, Prepared,
};
use super::tls::Tls;
use super::{unsupported, Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::{ConnectPhases, PhaseClock, PhaseTimes};
use crate::vocab::{ErrorClass, Family, NativeOp, Op, OpError, Outcome, RunStep, SqlOp};

/// A PostgreSQL server and how to log in to it.
pub struct Postgres {
    config: Config,
    host: String,
    port: u16,
    /// A Unix socket (`DIR/.s.PGSQL.PORT`) when the host is a directory.
    socket: Option<std::path::PathBuf>,
    /// The URL without the password, for messages.
    shown: String,
    tls: Tls,
    /// tokio-postgres-rustls's connector for `tls` (None: plain TCP).
    rustls: Option<MakeRustlsConnect>,
    phases: Arc<PhaseClock>,
    timeout: Duration,
    attachment: Option<Attachment>,
    /// What `Begin` sends: `BEGIN`, or with the isolation level the option asked for.
    begin: &'static str,
    /// `client=tokio-postgres`: every session on tokio-postgres, none on loadrig's own client.
    tokio_only: bool,
    /// `pipeline_sync=batch`: the batch driver closes each write's requests with one Sync.
    sync_per_batch: bool,
    /// `scram_cache=off`: derive SCRAM's keys on every login, as libpq and JDBC do, instead
    /// of once per password and salt (the connections study's uncached row).
    pub(crate) scram_cache: bool,
}

impl Postgres {
    pub fn open(url: &TargetUrl, params: &Params) -> Result<Postgres, InputError> {
        url.check_options(&[
            "connect_timeout",
            "application_name",
            "attachment",
            "attachment_size",
            "isolation",
            "sslmode",
            "ca",
            "insecure",
            "client",
            "pipeline_sync",
            "scram_cache",
            "host",
        ])?;
        let tokio_only = match url.options.get("client").map(String::as_str) {
            None | Some("loadrig") => false,
            Some("tokio-postgres") => true,
            Some(other) => {
                return Err(InputError::new(format!(
                    "client={other}: expected loadrig (the default) or tokio-postgres"
                )))
            }
        };
        let begin = begin_statement(Isolation::from_options(url, params)?);
        let ep = Endpoint::parse(url)?;
        let timeout = Endpoint::connect_timeout(url, Duration::from_secs(5))?;
        let tls = Tls::from_url(url, ssl_mode(url)?)?;
        let mut config = Config::new();
        // The socket is ours (connect_raw), so its phases can be timed apart.
        config
            .ssl_mode(if tls.is_on() {
                SslMode::Require
            } else {
                SslMode::Disable
            })
            .application_name(
                url.options
                    .get("application_name")
                    .map_or("loadrig", String::as_str),
            );
        let user = ep.user.clone().unwrap_or_else(|| "postgres".to_string());
        config.user(&user);
        config.dbname(if ep.path.is_empty() { &user } else { &ep.path });
        if let Some(p) = &ep.password {
            config.password(p.as_bytes());
        }
        let sync_per_batch = pipeline_sync(url, params)?;
        let scram_cache = match url.options.get("scram_cache").map(String::as_str) {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => {
                return Err(InputError::new(format!(
                    "scram_cache={other}: expected on (the default) or off"
                )))
            }
        };
        let port = ep.port.unwrap_or(5432);
        let socket = ep
            .host
            .starts_with('/')
            .then(|| std::path::Path::new(&ep.host).join(format!(".s.PGSQL.{port}")));
        if socket.is_some() && tls.is_on() {
            return Err(InputError::new(format!(
                "{}: sslmode asks for TLS, and the host is a Unix socket's directory",
                ep.shown
            ))
            .help("leave out sslmode on a Unix socket (libpq does not encrypt one either), or connect over TCP"));
        }
        let pg = Postgres {
            config,
            host: ep.host.clone(),
            port,
            socket,
            shown: ep.shown.clone(),
            rustls: tls
                .config()
                .map(|c| MakeRustlsConnect::new(c.as_ref().clone())),
            tls,
            phases: Arc::default(),
            timeout,
            attachment: Attachment::from_options(url, params)?,
            begin,
            tokio_only,
            sync_per_batch,
            scram_cache,
        };
        if sync_per_batch && !pg.own_client() {
            let why = if pg.tokio_only {
                "client=tokio-postgres"
            } else if pg.socket.is_some() {
                "a Unix socket"
            } else if pg.attachment.is_some() {
                "documents with attachments"
            } else {
                "sslmode (TLS)"
            };
            return Err(InputError::new(format!(
                "pipeline_sync=batch: only loadrig's own client on plain TCP writes its Syncs itself, and {why} runs on tokio-postgres"
            ))
            .help("leave out pipeline_sync (a Sync per operation), or the option that needs tokio-postgres"));
        }
        Ok(pg)
    }
}

/// `pipeline_sync` (URL option or workload parameter): `op`, a Sync after every operation
/// (the default), or `batch`, one Sync per written batch.
fn pipeline_sync(url: &TargetUrl, params: &Params) -> Result<bool, InputError> {
    match url.option("pipeline_sync", params).as_deref().map(str::trim) {
        None | Some("op") => Ok(false),
        Some("batch") => Ok(true),
        Some(other) => Err(InputError::new(format!(
            "pipeline_sync={other}: expected op (a Sync after every operation, the default) or batch (one Sync per written batch, as pgbench's \\startpipeline … \\endpipeline)"
        ))),
    }
}

/// Whether `sslmode` asks for TLS: libpq's names; `prefer` and `allow` are refused, since a
/// benchmark must know whether it measured TLS.
fn ssl_mode(url: &TargetUrl) -> Result<bool, InputError> {
    match url.options.get("sslmode").map(String::as_str) {
        None | Some("disable") => Ok(false),
        Some("require" | "verify-ca" | "verify-full") => Ok(true),
        Some(other) => Err(InputError::new(format!(
            "sslmode={other}: expected disable, require, verify-ca or verify-full"
        ))
        .help("prefer and allow would leave it to the server whether TLS is measured")),
    }
}

fn begin_statement(isolation: Option<Isolation>) -> &'static str {
    match isolation {
        None => "BEGIN",
        Some(Isolation::Serializable) => "BEGIN ISOLATION LEVEL SERIALIZABLE",
        Some(Isolation::RepeatableRead) => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        Some(Isolation::ReadCommitted) => "BEGIN ISOLATION LEVEL READ COMMITTED",
    }
}

/// One connection: the client half of tokio-postgres (its I/O half runs as a task on the
/// client's runtime) and the statements prepared on it.
pub struct TokioSession {
    /// Shared by the streams of one connection (`--pipeline`).
    client: Rc<Client>,
    prepared: Prepared<Statement>,
    /// The connection's I/O task, stopped when its last stream lets go.
    io: Rc<IoTask>,
    styles: text::Styles,
    attachment: Option<Attachment>,
    /// The documents' statements, prepared on first use.
    documents: Option<documents::Statements>,
    begin: &'static str,
}

/// A connection's I/O task.
struct IoTask(tokio::task::JoinHandle<()>);

impl Drop for IoTask {
    /// Close the socket at once, even with a reply still due (an operation that timed out).
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl TokioSession {
    /// This session's connection as `n` sessions that share it, each preparing its own
    /// statements.
    fn share(self, n: usize) -> Vec<TokioSession> {
        (0..n)
            .map(|_| TokioSession {
                client: Rc::clone(&self.client),
                prepared: Prepared::new(Dialect::Postgres),
                io: Rc::clone(&self.io),
                styles: self.styles.clone(),
                attachment: None,
                documents: None,
                begin: self.begin,
            })
            .collect()
    }
}

impl Target for Postgres {
    fn from_url(url: &TargetUrl, params: &Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = PgSession;

    fn blocking(&self) -> bool {
        false
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Sql, Family::Record]
    }

    async fn connect(&self) -> Result<PgSession, OpError> {
        if self.own_client() {
            return wire_session::connect(self).await.map(PgSession::Wire);
        }
        self.connect_tokio().await.map(PgSession::Tokio)
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.phases.snapshot()
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        self.attachment.as_ref().map(|_| {
            "documents with attachments run a transaction per operation, and a transaction's state belongs to the connection"
        })
    }

    /// Streams sharing a connection (`--pipeline`) run on tokio-postgres, which matches
    /// each reply to its caller.
    async fn connect_shared(&self, n: usize) -> Result<Vec<PgSession>, OpError> {
        let shared = self.connect_tokio().await?.share(n);
        Ok(shared.into_iter().map(PgSession::Tokio).collect())
    }

    /// The extended protocol spoken directly ([`wire`]), on plain TCP without attachments.
    fn batch_codec(&self) -> Option<&'static Codec> {
        let codec = if self.sync_per_batch {
            &wire::CODEC_BATCH
        } else {
            &wire::CODEC
        };
        self.own_client().then_some(codec)
    }

    fn needs_batch_driver(&self) -> Option<&'static str> {
        self.sync_per_batch.then_some("pipeline_sync=batch")
    }

    fn connect_batched(&self) -> impl Future<Output = Result<Batched, OpError>> {
        wire::connect_batched(self)
    }
}

impl Postgres {
    /// Whether loadrig's own client can run this target's sessions: plain TCP, no
    /// documents, and not `client=tokio-postgres`.
    fn own_client(&self) -> bool {
        self.rustls.is_none()
            && self.attachment.is_none()
            && !self.tokio_only
            && self.socket.is_none()
    }

    /// A session on tokio-postgres (TLS, documents, shared connections).
    async fn connect_tokio(&self) -> Result<TokioSession, OpError> {
        let started = Instant::now();
        if let Some(path) = &self.socket {
            let unix = self.unix(path).await?;
            let connect_time = started.elapsed();
            let left = self.timeout.saturating_sub(connect_time);
            let (client, connection) =
                handshake(left, self.config.connect_raw(unix, NoTls), classify).await?;
            self.phases.record(PhaseTimes {
                tcp: connect_time,
                tls: None,
                auth: Some(started.elapsed() - connect_time),
            });
            return Ok(self.session(client, connection));
        }
        let tcp = self.tcp().await?;
        let tcp_time = started.elapsed();
        let left = self.timeout.saturating_sub(tcp_time);
        let Some(rustls) = &self.rustls else {
            let (client, connection) =
                handshake(left, self.config.connect_raw(tcp, NoTls), classify).await?;
            self.phases.record(PhaseTimes {
                tcp: tcp_time,
                tls: None,
                auth: Some(started.elapsed() - tcp_time),
            });
            return Ok(self.session(client, connection));
        };
        let timed = TimedTls {
            inner: match MakeTlsConnect::<TcpStream>::make_tls_connect(
                &mut rustls.clone(),
                &self.host,
            ) {
                Ok(c) => c,
                Err(never) => match never {},
            },
            took: Arc::default(),
        };
        let took = Arc::clone(&timed.took);
        let (client, connection) = handshake(left, self.config.connect_raw(tcp, timed), |e| {
            self.tls
                .rustls_failure(&self.shown, e)
                .unwrap_or_else(|| classify(e))
        })
        .await?;
        let tls_time = took.get().copied().unwrap_or_default();
        self.phases.record(PhaseTimes {
            tcp: tcp_time,
            tls: Some(tls_time),
            auth: Some(started.elapsed().saturating_sub(tcp_time + tls_time)),
        });
        Ok(self.session(client, connection))
    }
}

impl Postgres {
    /// A TCP connection to the server (no delay), within the connect timeout.
    async fn tcp(&self) -> Result<TcpStream, OpError> {
        let connecting = socket::connect((self.host.as_str(), self.port));
        let tcp = match tokio::time::timeout(self.timeout, connecting).await {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => {
                return Err(OpError::new(
                    ErrorClass::Connect,
                    format!("connection failed (connect): {}: {e}", self.shown),
                ))
            }
            Err(_) => {
                return Err(OpError::new(
                    ErrorClass::Connect,
                    format!(
                        "connection failed (connect): no answer from {} within {:?}",
                        self.shown, self.timeout
                    ),
                ))
            }
        };
        Ok(tcp)
    }
}

impl Postgres {
    /// A connection to the server's Unix socket, within the connect timeout.
    async fn unix(&self, path: &std::path::Path) -> Result<tokio::net::UnixStream, OpError> {
        match tokio::time::timeout(self.timeout, tokio::net::UnixStream::connect(path)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "connection failed (connect): {} ({}): {e}",
                    self.shown,
                    path.display()
                ),
            )),
            Err(_) => Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "connection failed (connect): no answer from {} within {:?}",
                    self.shown, self.timeout
                ),
            )),
        }
    }
}

/// A TLS connector that notes how long its handshake took.
struct TimedTls<T> {
    inner: T,
    took: Arc<OnceLock<Duration>>,
}

impl<S, T> TlsConnect<S> for TimedTls<T>
where
    T: TlsConnect<S> + Send + 'static,
    T::Future: Send,
    S: Send + 'static,
{
    type Stream = T::Stream;
    type Error = T::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<T::Stream, T::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let started = Instant::now();
            let result = self.inner.connect(stream).await;
            let _ = self.took.set(started.elapsed());
            result
        })
    }
}

impl Postgres {
    /// A session on a connection that finished its handshake.
    fn session<S, T>(&self, client: Client, connection: Connection<S, T>) -> TokioSession
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        // The connection's I/O half: it ends when the client is dropped or the server
        // goes away (then every call on the client fails as closed).
        let setting = |name: &str| connection.parameter(name).unwrap_or_default().to_string();
        let styles = text::Styles {
            timezone: setting("TimeZone"),
            datestyle: setting("DateStyle"),
            intervalstyle: setting("IntervalStyle"),
        };
        let io = tokio::spawn(async move {
            let _ = connection.await;
        });
        TokioSession {
            client: Rc::new(client),
            prepared: Prepared::new(Dialect::Postgres),
            io: Rc::new(IoTask(io)),
            styles,
            attachment: self.attachment.clone(),
            documents: None,
            begin: self.begin,
        }
    }
}

/// Map a driver error to a class and a message (SQLSTATE first when there is one).
fn classify(e: &tokio_postgres::Error) -> OpError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return OpError::new(sqlstate_error(code), format!("{code} {}", db.message()));
    }
    // Everything else is the driver's own: an I/O error, a closed connection, bad replies.
    let mut message = e.to_string();
    let mut source = e.source();
    let mut io = false;
    while let Some(s) = source {
        io |= s.is::<std::io::Error>();
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    let class = if io || e.is_closed() {
        ErrorClass::Connect
    } else if message.starts_with("unexpected message") || message.starts_with("error parsing") {
        ErrorClass::Protocol
    } else {
        ErrorClass::Other
    };
    OpError::new(class, message)
}

/// The class of a server error by its SQLSTATE.
fn sqlstate_error(code: &str) -> ErrorClass {
    match code {
        "40P01" => ErrorClass::Deadlock,
        "40001" => ErrorClass::Serialization,
        "57014" | "55P03" => ErrorClass::Timeout,
        // 57P01 to 57P05: the server is shutting down or cannot take the session.
        c if c.starts_with("57P0") => ErrorClass::Connect,
        c => sqlstate_class(c).unwrap_or(ErrorClass::Other),
    }
}

/// One argument, converted for the type the server declared for its parameter.
#[derive(Debug)]
enum Param<'a> {
    Null,
    Bool(bool),
    I16(i16),
    I32(i32),
    I64(i64),
    Oid(u32),
    F32(f32),
    F64(f64),
    /// Sent as it is in binary format: bytea and the text types.
    Raw(&'a [u8]),
    /// Sent in text format: the server parses it for its type.
    Text(&'a [u8]),
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Bool(b) => out.extend_from_slice(&[u8::from(b)]),
            Param::I16(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::I32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::I64(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::Oid(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::F32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::F64(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::Raw(b) | Param::Text(b) => out.extend_from_slice(b),
        }
        Ok(IsNull::No)
    }

    /// Conversion already happened against the statement's declared types.
    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> tokio_postgres::types::Format {
        match self {
            Param::Text(_) => tokio_postgres::types::Format::Text,
            _ => tokio_postgres::types::Format::Binary,
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

/// Convert argument `i` (0-based) to the parameter type `ty`.
fn convert<'a>(i: usize, arg: &'a [u8], ty: &Type) -> Result<Param<'a>, OpError> {
    if *ty == Type::BYTEA || text::is_text_type(ty) {
        return Ok(Param::Raw(arg));
    }
    if arg.is_empty() {
        return Ok(Param::Null);
    }
    let bad = |why: String| {
        let text = String::from_utf8_lossy(arg);
        let shown: String = text.chars().take(40).collect();
        let more = if text.chars().count() > 40 { "..." } else { "" };
        OpError::new(
            ErrorClass::Other,
            format!(
                "parameter ${} ('{shown}{more}') is not a valid {}: {why}",
                i + 1,
                ty.name()
            ),
        )
    };
    if let Some(n) = plain_integer(arg) {
        // The common case, without `str::parse`'s code on every parameter of every statement.
        let fits = match *ty {
            Type::INT2 => i16::try_from(n).ok().map(Param::I16),
            Type::INT4 => i32::try_from(n).ok().map(Param::I32),
            Type::INT8 => Some(Param::I64(n)),
            _ => None,
        };
        if let Some(p) = fits {
            return Ok(p);
        }
    }
    let text = || std::str::from_utf8(arg).map(str::trim);
    macro_rules! number {
        ($t:ty, $variant:ident) => {
            match text() {
                Ok(s) => s
                    .parse::<$t>()
                    .map(Param::$variant)
                    .map_err(|e| bad(e.to_string())),
                Err(e) => Err(bad(e.to_string())),
            }
        };
    }
    match *ty {
        Type::BOOL => match text().map(str::to_ascii_lowercase).as_deref() {
            Ok("t" | "true" | "1" | "yes" | "y" | "on") => Ok(Param::Bool(true)),
            Ok("f" | "false" | "0" | "no" | "n" | "off") => Ok(Param::Bool(false)),
            _ => Err(bad("expected true or false".into())),
        },
        Type::INT2 => number!(i16, I16),
        Type::INT4 => number!(i32, I32),
        Type::INT8 => number!(i64, I64),
        Type::OID => number!(u32, Oid),
        Type::FLOAT4 => number!(f32, F32),
        Type::FLOAT8 => number!(f64, F64),
        _ => Ok(Param::Text(arg)),
    }
}

/// `arg` if it is an optional `-` and 1 to 18 ASCII digits (no overflow possible), else
/// `None` and the caller parses it in full.
fn plain_integer(arg: &[u8]) -> Option<i64> {
    let (negative, digits) = match arg {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, arg),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: i64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + i64::from(d);
    }
    Some(if negative { -n } else { n })
}

/// A column value as the server sent it (binary format), for captures.
struct RawValue<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for RawValue<'a> {
    fn from_sql(
        _ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(Some(raw)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// A row's values as the text the server prints for them (NULL as empty), for `capture`.
fn captured(row: &tokio_postgres::Row, styles: &text::Styles) -> Result<Vec<Vec<u8>>, OpError> {
    let mut values = Vec::with_capacity(row.len());
    for (c, column) in row.columns().iter().enumerate() {
        let value = row
            .try_get::<_, RawValue<'_>>(c)
            .map_err(|e| classify(&e))?;
        let text = match value.0 {
            Some(raw) => text::to_text(column.type_(), raw, styles)
                .map_err(|why| uncapturable(column.name(), &why))?,
            None => Vec::new(),
        };
        values.push(text);
    }
    Ok(values)
}

/// A column `capture` cannot render, and how to get it anyway.
fn uncapturable(column: &str, why: &str) -> OpError {
    OpError::new(
        ErrorClass::Other,
        format!("cannot capture column '{column}': {why}; cast it in the query ({column}::text)"),
    )
}

/// Data loading: a temporary table, filled by COPY, merged into loadrig_kv.
const COPY_BEGIN: &str =
    "BEGIN; CREATE TEMP TABLE IF NOT EXISTS loadrig_load (k VARCHAR(255), v BYTEA) \
     ON COMMIT DELETE ROWS";
const COPY_IN: &str = "COPY loadrig_load (k, v) FROM STDIN (FORMAT binary)";
const COPY_MERGE: &str = concat!(
    "INSERT INTO ",
    kv_table!(),
    " (k, v) SELECT k, v FROM loadrig_load ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v; COMMIT"
);

/// `records` in COPY's binary format; a key given twice keeps its last value (an upsert
/// cannot touch a row twice in one statement).
fn copy_data(records: &[(String, Vec<u8>)]) -> Result<BytesMut, OpError> {
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(records.len());
    for (i, (k, _)) in records.iter().enumerate() {
        last.insert(k.as_str(), i);
    }
    let mut buf = BytesMut::with_capacity(64 + records.len() * 32);
    buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    buf.extend_from_slice(&0i32.to_be_bytes()); // flags
    buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
    for (i, (k, v)) in records.iter().enumerate() {
        if last.get(k.as_str()) != Some(&i) {
            continue;
        }
        let (klen, vlen) = match (i32::try_from(k.len()), i32::try_from(v.len())) {
            (Ok(a), Ok(b)) => (a, b),
            _ => {
                return Err(OpError::new(
                    ErrorClass::Other,
                    "a record is over 2 GiB: PostgreSQL cannot store it",
                ))
            }
        };
        buf.extend_from_slice(&2i16.to_be_bytes());
        buf.extend_from_slice(&klen.to_be_bytes());
        buf.extend_from_slice(k.as_bytes());
        buf.extend_from_slice(&vlen.to_be_bytes());
        buf.extend_from_slice(v);
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    Ok(buf)
}

/// A batch of records as multi-row INSERTs ([`crate::targets::sql::insert_chunks`]): each
/// statement's text and arguments.
fn insert_statements(
    records: &[(String, Vec<Vec<u8>>)],
) -> impl Iterator<Item = (String, Vec<Vec<u8>>)> + '_ {
    crate::targets::sql::insert_chunks(records)
        .into_iter()
        .map(|chunk| {
            let query = crate::targets::sql::insert_rows(chunk[0].1.len(), chunk.len());
            let args = chunk
                .iter()
                .flat_map(|(k, v)| std::iter::once(k.as_bytes().to_vec()).chain(v.iter().cloned()))
                .collect();
            (query, args)
        })
}

impl TokioSession {
    async fn kv(&mut self, op: Kv, params: &[Param<'_>]) -> Result<u64, OpError> {
        let client = &self.client;
        let st = self
            .prepared
            .kv(op, |sql| client.prepare(sql))
            .await
            .map_err(|e| classify(&e))?;
        if op == Kv::Get {
            let rows = self
                .client
                .query_raw(&st, params)
                .await
                .map_err(|e| classify(&e))?;
            let mut rows = std::pin::pin!(rows);
            let mut n = 0;
            while let Some(row) = rows.next().await {
                row.map_err(|e| classify(&e))?;
                n += 1;
            }
            Ok(n)
        } else {
            self.client
                .execute_raw(&st, params)
                .await
                .map_err(|e| classify(&e))
        }
    }

    async fn native(
        &mut self,
        id: usize,
        query: &str,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let client = &self.client;
        let st = match self.prepared.native(id, || client.prepare(query)).await {
            Ok(st) => st,
            Err(e) if args.is_empty() && e.code().is_some_and(|c| c.code() == "42601") => {
                // "cannot insert multiple commands into a prepared statement".
                return self.simple(query, capture).await;
            }
            Err(e) => return Err(classify(&e)),
        };
        let types = st.params();
        check_arity(query, types.len(), args.len())?;
        let params = args
            .iter()
            .zip(types)
            .enumerate()
            .map(|(i, (a, ty))| convert(i, a, ty))
            .collect::<Result<Vec<_>, _>>()?;
        if st.columns().is_empty() {
            let n = self
                .client
                .execute_raw(&st, &params)
                .await
                .map_err(|e| classify(&e))?;
            return Ok(crate::targets::sql::affected(n, capture));
        }
        let rows = self
            .client
            .query_raw(&st, &params)
            .await
            .map_err(|e| classify(&e))?;
        let mut rows = std::pin::pin!(rows);
        let mut out = Outcome::default();
        while let Some(row) = rows.next().await {
            let row = row.map_err(|e| classify(&e))?;
            if capture && out.rows == 0 {
                out.captured = captured(&row, &self.styles)?;
            }
            out.rows += 1;
        }
        Ok(out)
    }

    /// Run text with the simple query protocol (several commands allowed, no parameters).
    async fn simple(&mut self, query: &str, capture: bool) -> Result<Outcome, OpError> {
        let messages = self
            .client
            .simple_query(query)
            .await
            .map_err(|e| classify(&e))?;
        let mut out = Outcome::default();
        for m in messages {
            match m {
                SimpleQueryMessage::Row(row) if capture && out.captured.is_empty() => {
                    out.captured = (0..row.len())
                        .map(|c| row.get(c).unwrap_or("").as_bytes().to_vec())
                        .collect();
                }
                SimpleQueryMessage::CommandComplete(n) => out.rows += n,
                _ => {}
            }
        }
        Ok(out)
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        if let Some(a) = self.attachment.clone() {
            let rows = match *op {
                Op::Put { key, value } => Some(self.put_document(key, value, &a).await?),
                Op::Get { key } => Some(self.get_document(key, &a).await?),
                Op::Delete { key } => Some(self.delete_document(key).await?),
                _ => None,
            };
            if let Some(rows) = rows {
                return Ok(Outcome::rows(rows));
            }
        }
        let rows = match *op {
            Op::Nop => 0,
            Op::Put { key, value } => {
                self.kv(Kv::Put, &[Param::Raw(key.as_bytes()), Param::Raw(value)])
                    .await?
            }
            Op::Get { key } => self.kv(Kv::Get, &[Param::Raw(key.as_bytes())]).await?,
            Op::Update { key, value } => {
                self.kv(Kv::Update, &[Param::Raw(key.as_bytes()), Param::Raw(value)])
                    .await?
            }
            Op::Delete { key } => self.kv(Kv::Delete, &[Param::Raw(key.as_bytes())]).await?,
            Op::Native {
                op: NativeOp::Sql(SqlOp { id, query, .. }),
                args,
                capture,
            } => return self.native(*id, query, args, capture).await,
            Op::Native {
                op: NativeOp::Record(op),
                args,
                ..
            } => {
                let plan = self.prepared.records.plan(op, args, false)?;
                return self
                    .native(plan.id, &plan.query, &plan.args(args), false)
                    .await;
            }
            // Every other family: the runner refuses them before anything runs.
            Op::Native { .. } => return Err(unsupported(op, "postgres://")),
            Op::Begin => return self.batch(self.begin).await,
            Op::Commit => return self.batch("COMMIT").await,
            Op::Rollback => return self.batch("ROLLBACK").await,
        };
        Ok(Outcome::rows(rows))
    }

    async fn insert_rows(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        for (query, args) in insert_statements(records) {
            let id = self.prepared.record_id(&query);
            self.native(id, &query, &args, false).await?;
        }
        Ok(())
    }

    async fn batch(&mut self, sql: &str) -> Result<Outcome, OpError> {
        self.client
            .batch_execute(sql)
            .await
            .map_err(|e| classify(&e))?;
        Ok(Outcome::default())
    }

    /// Binary COPY of `records` into a temporary table, then one upsert into loadrig_kv.
    async fn copy_batch(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        let buf = copy_data(records)?;
        let c = &self.client;
        let cl = |e: tokio_postgres::Error| classify(&e);
        c.batch_execute(COPY_BEGIN).await.map_err(cl)?;
        let result = async {
            let sink = c.copy_in::<_, Bytes>(COPY_IN).await.map_err(cl)?;
            let mut sink = std::pin::pin!(sink);
            sink.send(buf.freeze()).await.map_err(cl)?;
            sink.as_mut().finish().await.map_err(cl)?;
            c.batch_execute(COPY_MERGE).await.map_err(cl)
        }
        .await;
        if result.is_err() {
            let _ = c.batch_execute("ROLLBACK").await;
        }
        result
    }

    /// loadrig's tables in the current schema.
    async fn namespace_tables(&mut self) -> Result<Vec<String>, OpError> {
        let rows = self
            .client
            .query(Dialect::Postgres.list_tables(), &[])
            .await
            .map_err(|e| classify(&e))?;
        rows.iter()
            .map(|r| r.try_get::<_, String>(0))
            .collect::<Result<_, _>>()
            .map_err(|e| classify(&e))
    }

    async fn drop_namespace(&mut self) -> Result<u64, OpError> {
        let schema = self.drop_backsql_schema().await?;
        let names = self.namespace_tables().await?;
        if names.is_empty() {
            return Ok(schema);
        }
        if names.iter().any(|n| n == "loadrig_documents") {
            self.client
                .batch_execute(documents::UNLINK_ALL)
                .await
                .map_err(|e| classify(&e))?;
        }
        // One statement, so references between loadrig tables do not matter; no CASCADE,
        // so an object of someone else's that depends on them stops the drop instead.
        self.client
            .batch_execute(&Dialect::Postgres.drop_tables(&names))
            .await
            .map_err(|e| classify(&e))?;
        Ok(names.len() as u64 + schema)
    }

    /// The directory study's back-sql schema, when it exists: 1 dropped, else 0.
    async fn drop_backsql_schema(&mut self) -> Result<u64, OpError> {
        let found = self
            .client
            .query(backsql::EXISTS, &[])
            .await
            .map_err(|e| classify(&e))?;
        if found.is_empty() {
            return Ok(0);
        }
        self.client
            .batch_execute(&backsql::drop_statement())
            .await
            .map_err(|e| classify(&e))?;
        Ok(1)
    }
}

impl TokioSession {
    async fn setup(&mut self) -> Result<(), OpError> {
        // The documents table goes in the same simple query as the kv table, so under the
        // same advisory lock: rigs started together would otherwise race on its CREATE too.
        let create = match self.attachment {
            Some(_) => format!("{}; {}", Dialect::Postgres.create_kv(), documents::CREATE),
            None => Dialect::Postgres.create_kv().to_string(),
        };
        self.client
            .batch_execute(&create)
            .await
            .map_err(|e| classify(&e))
    }

    async fn server_version(&mut self) -> Option<String> {
        let messages = self.client.simple_query("SHOW server_version").await.ok()?;
        messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(|v| format!("PostgreSQL {v}")),
            _ => None,
        })
    }

    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        self.batch("BEGIN").await?;
        let done = self.insert_rows(records).await;
        self.batch(if done.is_ok() { "COMMIT" } else { "ROLLBACK" })
            .await?;
        done
    }
}

/// A session: on loadrig's own client ([`wire_session`]) where it can run the target's
/// sessions ([`Postgres::own_client`]), else on tokio-postgres.
pub enum PgSession {
    Tokio(TokioSession),
    Wire(wire_session::WireSession),
}

impl Session for PgSession {
    async fn setup(&mut self) -> Result<(), OpError> {
        match self {
            PgSession::Tokio(s) => s.setup().await,
            PgSession::Wire(s) => s.batch(Dialect::Postgres.create_kv()).await,
        }
    }

    async fn server_version(&mut self) -> Option<String> {
        match self {
            PgSession::Tokio(s) => s.server_version().await,
            PgSession::Wire(s) => s.server_version().await,
        }
    }

    async fn execute(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        match self {
            // Boxed: tokio-postgres's query futures are large; inline they made the future
            // every transaction allocates (`Worker::perform`) 2,184 bytes instead of 792,
            // too large for the allocator's per-thread cache, on the wire session too.
            PgSession::Tokio(s) => Box::pin(s.run(op)).await,
            PgSession::Wire(s) => s.run(op).await,
        }
    }

    async fn authenticate(&mut self) -> Result<Outcome, OpError> {
        Err(OpError::new(
            ErrorClass::Other,
            "PostgreSQL cannot authenticate again on an open connection: measure the handshake \
             with the `connect` operation (or --connection per-op)",
        ))
    }

    async fn settle(&mut self) -> Result<u64, OpError> {
        let names = match self {
            PgSession::Tokio(s) => s.namespace_tables().await?,
            PgSession::Wire(s) => s.namespace_tables().await?,
        };
        if names.is_empty() {
            return Ok(0);
        }
        let vacuum = vacuum_analyze(&names);
        match self {
            PgSession::Tokio(s) => drop(s.batch(&vacuum).await?),
            PgSession::Wire(s) => s.batch(&vacuum).await?,
        }
        Ok(names.len() as u64)
    }

    async fn before_run(&mut self, step: &RunStep) -> Result<bool, OpError> {
        let Some(sql) = Dialect::Postgres.run_step(step) else {
            return Ok(false);
        };
        match self {
            PgSession::Tokio(s) => drop(s.batch(&sql).await?),
            PgSession::Wire(s) => s.batch(&sql).await?,
        }
        Ok(true)
    }

    async fn cleanup(&mut self) -> Result<u64, OpError> {
        match self {
            PgSession::Tokio(s) => s.drop_namespace().await,
            PgSession::Wire(s) => s.cleanup().await,
        }
    }

    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        match self {
            PgSession::Tokio(s) => s.copy_batch(records).await,
            PgSession::Wire(s) => s.load(records).await,
        }
    }

    async fn create_records(&mut self, layout: crate::vocab::RecordLayout) -> Result<(), OpError> {
        for statement in crate::targets::sql::create_records(layout.fields) {
            match self {
                PgSession::Tokio(s) => drop(s.batch(&statement).await?),
                PgSession::Wire(s) => s.batch(&statement).await?,
            }
        }
        Ok(())
    }

    /// One transaction per batch, of multi-row INSERTs.
    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        match self {
            PgSession::Tokio(s) => s.load_records(records).await,
            PgSession::Wire(s) => s.load_records(records).await,
        }
    }
}

/// One `VACUUM (ANALYZE)` of the named tables.
fn vacuum_analyze(names: &[String]) -> String {
    format!("VACUUM (ANALYZE) {}", Dialect::Postgres.table_list(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vacuum_names_every_table_quoted() {
        let names = ["loadrig_a".to_string(), "loadrig_\"b".to_string()];
        assert_eq!(
            vacuum_analyze(&names),
            r#"VACUUM (ANALYZE) "loadrig_a", "loadrig_""b""#
        );
    }

    #[test]
    fn arguments_convert_to_declared_types() {
        assert!(matches!(
            convert(0, b" 42 ", &Type::INT4),
            Ok(Param::I32(42))
        ));
        assert!(matches!(
            convert(0, b"TRUE", &Type::BOOL),
            Ok(Param::Bool(true))
        ));
        assert!(matches!(convert(0, b"", &Type::INT8), Ok(Param::Null)));
        assert!(matches!(convert(0, b"", &Type::TEXT), Ok(Param::Raw(b""))));
        assert!(matches!(
            convert(0, b"1.50", &Type::NUMERIC),
            Ok(Param::Text(_))
        ));
        // The plain-integer shortcut gives what `str::parse` gives, and leaves the rest to it.
        for (arg, want) in [
            (&b"-7"[..], Some(-7)),
            (b"0", Some(0)),
            (b"-0", Some(0)),
            (b"+5", Some(5)),
            (b"2147483647", Some(i32::MAX)),
            (b"-2147483648", Some(i32::MIN)),
            (b"2147483648", None),
            (b"-", None),
            (b"1 2", None),
            (b"\xd9\xa3", None),
        ] {
            let got = match convert(0, arg, &Type::INT4) {
                Ok(Param::I32(n)) => Some(n),
                Ok(_) => panic!("not an int4"),
                Err(_) => None,
            };
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(arg));
        }
        assert!(matches!(
            convert(0, b"32768", &Type::INT2),
            Err(e) if e.message.contains("too large")
        ));
        assert!(matches!(
            convert(0, b"-9223372036854775808", &Type::INT8),
            Ok(Param::I64(i64::MIN))
        ));
        assert_eq!(
            plain_integer(b"999999999999999999"),
            Some(999_999_999_999_999_999)
        );
        assert_eq!(
            plain_integer(b"1000000000000000000"),
            None,
            "19 digits: parse"
        );
        let e = convert(1, b"12x", &Type::INT2).unwrap_err();
        assert_eq!(e.class, ErrorClass::Other);
        assert!(
            e.message
                .starts_with("parameter $2 ('12x') is not a valid int2"),
            "{}",
            e.message
        );
    }
}
