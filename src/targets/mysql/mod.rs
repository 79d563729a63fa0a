//! `mysql://USER:PASSWORD@HOST:PORT/DB`: MySQL or MariaDB, plain TCP or TLS (rustls; no
//! compression; the server's socket file is never used instead of TCP).
//!
//! - Two clients: on plain TCP loadrig's own ([`wire`]: the protocol spoken directly, one
//!   socket per session); with TLS, with `client=mysql_async`, or when the server asks for
//!   an authentication the own client does not speak (caching_sha2_password's full RSA
//!   exchange, ...), mysql_async. Both speak MariaDB's ed25519 (mysql_common's
//!   `client_ed25519`) and behave as described below.
//! - Options: `connect_timeout` (default 5 s, a duration or plain seconds) bounds the TCP
//!   connect and the whole handshake. The database in the path is required. `ssl-mode`:
//!   `DISABLED` (the default) or `REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`, which all
//!   encrypt and verify the server's certificate and name against `ca=PATH` (else the
//!   Mozilla roots mysql_async carries); `insecure=true` accepts any certificate.
//!   `client`: `loadrig` (the default on plain TCP) or `mysql_async`.
//! - kv operations use `loadrig_kv (k VARCHAR(255) PRIMARY KEY, v LONGBLOB NOT NULL)`,
//!   created by setup: put is an upsert (`ON DUPLICATE KEY UPDATE`, counted as one row),
//!   get reads the value (rows 1 or 0), update and delete count the rows they matched
//!   (the connection sets CLIENT_FOUND_ROWS, so an update to the same value counts, as on
//!   PostgreSQL; this applies to native statements too).
//! - Native `sql` statements are prepared once per session, on first use, and cached by
//!   their workload-wide number. An argument that is one number generator or one number
//!   parameter alone (`{seq}`, `{uniform 1..9}`, `{records}`) is bound as an integer (a
//!   float parameter as a double); every other argument as bytes, which the server
//!   converts to the column types. PostgreSQL's `$1, $2` placeholders (outside quotes) are
//!   sent as `?` and bound by number, so one statement serves every SQL target. Rows are the rows returned, or for statements that
//!   return none the rows affected. `capture` takes the first row's values as text (NULL
//!   as empty, numbers in decimal, dates as `YYYY-MM-DD hh:mm:ss[.ffffff]`, blobs raw).
//! - Transactions: BEGIN / COMMIT / ROLLBACK. Data loading: multi-row
//!   `INSERT ... ON DUPLICATE KEY UPDATE`, so loading the same keys again replaces them.
//! - Cleanup drops every base table of the current database whose name starts with
//!   `loadrig_`.
//! - `authenticate` sends COM_CHANGE_USER with the URL's user and password (a full
//!   re-authentication on the open connection; the server forgets prepared statements,
//!   so they are prepared again on next use; the own client answers
//!   mysql_native_password, caching_sha2_password's fast path or ed25519).
//!
//! Errors: 1213 → deadlock, 1205 (lock wait timeout), 1969 and 3024 (statement time
//! limit) → timeout, SQLSTATE 23xxx (1062 duplicate key, 1451/1452 foreign keys, ...) →
//! constraint, 1045 and SQLSTATE 28xxx → auth, 1040, 1053, 1927, SQLSTATE 08xxx, a closed
//! connection and I/O errors (the client's 2002/2003/2006/2013) → connect, so the engine
//! reconnects; malformed packets → protocol; everything else → other. Messages never
//! contain the password.

mod wire;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{
    ChangeUserOpts, Conn, DriverError, Opts, OptsBuilder, Params, SslOpts, Statement, Value,
};

use super::endpoint::Endpoint;
use super::sql::{
    check_arity, handshake, kv_table, sqlstate_class, Dialect, Isolation, Kv, Prepared,
};
use super::tls::{Tls, TlsMode};
use super::{unsupported, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::{ConnectPhases, PhaseClock};
use crate::vocab::{ErrorClass, Family, NativeOp, Op, OpError, Outcome, RunStep, SqlOp, ValueKind};

/// SQL text per data-loading statement: well under the server's max_allowed_packet.
const LOAD_CHUNK_BYTES: usize = 1 << 20;

/// A MySQL or MariaDB server and how to log in to it.
pub struct Mysql {
    opts: Opts,
    timeout: Duration,
    tls: Tls,
    /// The URL without the password, for messages.
    shown: String,
    /// Sessions speak the protocol themselves ([`wire`]) rather than through mysql_async.
    own: bool,
    /// The own client's connections' TCP and login times (mysql_async does not tell its
    /// phases apart).
    phases: PhaseClock,
}

impl Mysql {
    pub fn open(url: &TargetUrl, params: &super::Params) -> Result<Mysql, InputError> {
        url.check_options(&[
            "connect_timeout",
            "isolation",
            "ssl-mode",
            "ca",
            "insecure",
            "client",
        ])?;
        let tls = Tls::from_url(url, ssl_mode(url)?)?;
        let own = own_client(url)?;
        // `setup` (not `init`): a change_user (re-authentication) resets the session, and
        // the driver runs these again after it.
        let setup: Vec<String> = Isolation::from_options(url, params)?
            .map(|level| format!("SET SESSION TRANSACTION ISOLATION LEVEL {}", level.sql()))
            .into_iter()
            .collect();
        let ep = Endpoint::parse(url)?;
        let timeout = Endpoint::connect_timeout(url, Duration::from_secs(5))?;
        if ep.path.is_empty() {
            return Err(InputError::new(format!(
                "{}: no database; write mysql://USER:PASSWORD@HOST:PORT/DATABASE",
                ep.shown
            )));
        }
        let opts = OptsBuilder::default()
            .ip_or_hostname(ep.host.clone())
            .tcp_port(ep.port.unwrap_or(3306))
            .user(ep.user.clone())
            .pass(ep.password.clone())
            .db_name(Some(ep.path.clone()))
            // Our own per-session cache holds the statements for the session's life.
            .stmt_cache_size(0)
            // Stay on TCP, and skip the settings query the driver would send on connect.
            .prefer_socket(false)
            .max_allowed_packet(Some(64 << 20))
            .wait_timeout(Some(28_800))
            .tcp_nodelay(true)
            .client_found_rows(true)
            .ssl_opts(ssl_opts(&tls))
            .setup(setup);
        Ok(Mysql {
            opts: opts.into(),
            timeout,
            tls,
            shown: ep.shown,
            own,
            phases: PhaseClock::default(),
        })
    }
}

/// Whether sessions use the own client (the default, on plain TCP and TLS) or
/// mysql_async (`client=mysql_async`).
fn own_client(url: &TargetUrl) -> Result<bool, InputError> {
    match url.options.get("client").map(String::as_str) {
        None | Some("loadrig") => Ok(true),
        Some("mysql_async") => Ok(false),
        Some(other) => Err(InputError::new(format!(
            "client={other}: expected loadrig or mysql_async"
        ))),
    }
}

/// Whether `ssl-mode` asks for TLS (MySQL's names, any case); PREFERRED is refused, since
/// a benchmark must know whether it measured TLS.
fn ssl_mode(url: &TargetUrl) -> Result<bool, InputError> {
    let mode = url.options.get("ssl-mode").map(|m| m.to_ascii_uppercase());
    match mode.as_deref() {
        None | Some("DISABLED") => Ok(false),
        Some("REQUIRED" | "VERIFY_CA" | "VERIFY_IDENTITY") => Ok(true),
        Some(other) => Err(InputError::new(format!(
            "ssl-mode={other}: expected DISABLED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
        ))
        .help("PREFERRED would leave it to the server whether TLS is measured")),
    }
}

/// mysql_async's TLS settings for `tls` (it builds its own rustls configuration); the
/// observer's connection uses them too.
pub fn ssl_opts(tls: &Tls) -> Option<SslOpts> {
    match tls.mode {
        TlsMode::Off => None,
        TlsMode::Insecure => Some(
            SslOpts::default()
                .with_danger_accept_invalid_certs(true)
                .with_danger_skip_domain_validation(true),
        ),
        TlsMode::Verified => Some(match &tls.ca {
            Some(path) => SslOpts::default()
                .with_root_certs(vec![PathBuf::from(path).into()])
                .with_disable_built_in_roots(true),
            None => SslOpts::default(),
        }),
    }
}

/// One connection, by either client.
pub enum MysqlSession {
    Driver(DriverSession),
    Wire(WireSession),
}

/// A mysql_async connection and the statements prepared on it.
pub struct DriverSession {
    conn: Conn,
    prepared: Prepared<Statement>,
    placeholders: Natives,
}

/// An own-client connection ([`wire`]) and the statements prepared on it.
pub struct WireSession {
    wire: wire::Wire,
    prepared: Prepared<wire::Stmt>,
    placeholders: Natives,
    /// The login, again for COM_CHANGE_USER.
    opts: Opts,
}

/// Each native statement's `$N` placeholders as `?`, by statement number.
#[derive(Default)]
struct Natives(Vec<Option<Placeholders>>);

impl Natives {
    /// Statement `id`'s placeholders (record statements come with `?` already:
    /// sql::question_marks).
    fn of(&mut self, id: usize, query: &str) -> &Placeholders {
        const PLAIN: &Placeholders = &Placeholders {
            text: None,
            order: Vec::new(),
        };
        if id >= crate::targets::sql::RECORD_IDS {
            return PLAIN;
        }
        if self.0.len() <= id {
            self.0.resize(id + 1, None);
        }
        self.0[id].get_or_insert_with(|| Placeholders::of(query))
    }
}

/// A statement written with PostgreSQL's `$1, $2` placeholders, as MySQL takes it: the text
/// with `?` for each `$N` (outside quotes), and the argument each `?` takes. The pgbench
/// built-ins are written once for PostgreSQL, SQLite and MySQL this way.
#[derive(Debug, Clone, PartialEq)]
struct Placeholders {
    /// `None`: the statement has no `$N` and goes as written.
    text: Option<String>,
    order: Vec<usize>,
}

impl Placeholders {
    fn of(query: &str) -> Placeholders {
        let bytes = query.as_bytes();
        let mut text = String::with_capacity(query.len());
        let mut order = Vec::new();
        let mut quote = None;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match quote {
                Some(q) if b == b'\\' && q != b'`' => {
                    text.push_str(&query[i..(i + 2).min(bytes.len())]);
                    i += 2;
                    continue;
                }
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None if matches!(b, b'\'' | b'"' | b'`') => quote = Some(b),
                None if b == b'$' && (i == 0 || !is_word(bytes[i - 1])) => {
                    let digits = bytes[i + 1..]
                        .iter()
                        .take_while(|d| d.is_ascii_digit())
                        .count();
                    if let Ok(n @ 1..) = query[i + 1..i + 1 + digits].parse::<usize>() {
                        text.push('?');
                        order.push(n - 1);
                        i += 1 + digits;
                        continue;
                    }
                }
                None => {}
            }
            let len = query[i..].chars().next().map_or(1, char::len_utf8);
            text.push_str(&query[i..i + len]);
            i += len;
        }
        Placeholders {
            text: (!order.is_empty()).then_some(text),
            order,
        }
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

impl Target for Mysql {
    fn from_url(url: &TargetUrl, params: &super::Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = MysqlSession;

    fn blocking(&self) -> bool {
        false
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some("the MySQL protocol answers one statement at a time on a connection and has no pipeline mode")
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Sql, Family::Record]
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.phases.snapshot()
    }

    async fn connect(&self) -> Result<MysqlSession, OpError> {
        if self.own {
            let login = login(&self.opts);
            if let Some(wire) = handshake(
                self.timeout,
                wire::connect(&login, &self.tls, &self.phases),
                OpError::clone,
            )
            .await?
            {
                return Ok(MysqlSession::Wire(WireSession {
                    wire,
                    prepared: Prepared::new(Dialect::Mysql),
                    placeholders: Natives::default(),
                    opts: self.opts.clone(),
                }));
            }
            // The server asked for an authentication only mysql_async speaks.
        }
        let conn = handshake(self.timeout, Conn::new(self.opts.clone()), |e| {
            self.tls
                .rustls_failure(&self.shown, e)
                .unwrap_or_else(|| classify(e))
        })
        .await?;
        Ok(MysqlSession::Driver(DriverSession {
            conn,
            prepared: Prepared::new(Dialect::Mysql),
            placeholders: Natives::default(),
        }))
    }
}

/// What the own client's login needs, from the options mysql_async gets.
fn login(opts: &Opts) -> wire::Login<'_> {
    wire::Login {
        host: opts.ip_or_hostname(),
        port: opts.tcp_port(),
        user: opts.user().unwrap_or_default(),
        password: opts.pass(),
        db: opts.db_name(),
        setup: opts.setup(),
    }
}

/// The class of a server's error, by its code and SQLSTATE (both clients).
fn server_class(code: u16, state: &str) -> ErrorClass {
    match code {
        1213 => ErrorClass::Deadlock,
        1205 | 1969 | 3024 => ErrorClass::Timeout,
        1045 => ErrorClass::Auth,
        1040 | 1053 | 1927 => ErrorClass::Connect,
        _ => sqlstate_class(state).unwrap_or(ErrorClass::Other),
    }
}

/// Map a driver error to a class and a message.
fn classify(e: &mysql_async::Error) -> OpError {
    use mysql_async::Error as E;
    let class = match e {
        E::Server(s) => server_class(s.code, &s.state),
        E::Io(_) | E::Driver(DriverError::ConnectionClosed) => ErrorClass::Connect,
        E::Driver(
            DriverError::PacketOutOfOrder
            | DriverError::UnexpectedPacket { .. }
            | DriverError::PacketTooLarge,
        ) => ErrorClass::Protocol,
        _ => ErrorClass::Other,
    };
    let message = match e {
        E::Server(s) => format!("{} ({}): {}", s.code, s.state, s.message),
        E::Driver(DriverError::UnexpectedPacket { .. }) => "unexpected packet".to_string(),
        E::Io(mysql_async::IoError::Io(io)) => format!("I/O error: {io}"),
        other => other.to_string(),
    };
    OpError::new(class, message)
}

fn cl(e: mysql_async::Error) -> OpError {
    classify(&e)
}

/// The text of a value as the server would print it.
fn to_text(v: &Value) -> Vec<u8> {
    match v {
        Value::NULL => Vec::new(),
        Value::Bytes(b) => b.clone(),
        Value::Int(i) => i.to_string().into_bytes(),
        Value::UInt(u) => u.to_string().into_bytes(),
        Value::Float(f) => f.to_string().into_bytes(),
        Value::Double(d) => d.to_string().into_bytes(),
        Value::Date(y, mo, d, h, mi, s, us) => {
            let mut t = format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}");
            if *us > 0 {
                let _ = write!(t, ".{us:06}");
            }
            t.into_bytes()
        }
        Value::Time(neg, days, h, mi, s, us) => {
            let hours = *days * 24 + u32::from(*h);
            let mut t = format!("{}{hours:02}:{mi:02}:{s:02}", if *neg { "-" } else { "" });
            if *us > 0 {
                let _ = write!(t, ".{us:06}");
            }
            t.into_bytes()
        }
    }
}

/// A native argument with the type its template produces: integers and floats as numbers
/// (so `? / 2` is exact decimal division and `? = '7.0'` compares numbers), the rest as
/// bytes for the server to convert. Both clients bind these types.
#[derive(Debug, PartialEq)]
enum Param<'a> {
    Int(i64),
    UInt(u64),
    Double(f64),
    Bytes(&'a [u8]),
}

impl<'a> Param<'a> {
    fn of(arg: &'a [u8], kind: ValueKind) -> Param<'a> {
        let number = match kind {
            ValueKind::Integer => integer(arg),
            ValueKind::Float => std::str::from_utf8(arg)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .map(Param::Double),
            ValueKind::Bytes => None,
        };
        number.unwrap_or(Param::Bytes(arg))
    }

    fn value(self) -> Value {
        match self {
            Param::Int(i) => Value::Int(i),
            Param::UInt(u) => Value::UInt(u),
            Param::Double(d) => Value::Double(d),
            Param::Bytes(b) => Value::Bytes(b.to_vec()),
        }
    }
}

/// `arg` as a decimal integer, taken as `str::parse::<i64>`, then `::<u64>`, take it (an
/// optional sign, `-` only for a signed value, then digits), without the UTF-8 check and
/// the two parses: a point select's id was a tenth of the session's instructions.
fn integer(arg: &[u8]) -> Option<Param<'_>> {
    let (negative, digits) = match arg {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, arg),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    match (negative, i64::try_from(n)) {
        (false, Ok(i)) => Some(Param::Int(i)),
        (false, Err(_)) => Some(Param::UInt(n)),
        (true, _) if n <= i64::MIN.unsigned_abs() => {
            Some(Param::Int(0i64.wrapping_sub_unsigned(n)))
        }
        (true, _) => None,
    }
}

/// The text a statement is prepared with, and the order its arguments bind in (`None`:
/// as given), checked against the `params` markers the server counted.
fn binding<'p>(
    ph: &'p Placeholders,
    query: &'p str,
    params: usize,
    args: usize,
) -> Result<Option<&'p [usize]>, OpError> {
    if ph.text.is_some() {
        let used = ph.order.iter().max().map_or(0, |m| m + 1);
        check_arity(query, used, args)?;
        Ok(Some(&ph.order))
    } else {
        check_arity(query, params, args)?;
        Ok(None)
    }
}

/// What the session's operations need of a connection, from either client.
trait Link {
    type Stmt: Clone;
    fn prepared(&mut self) -> &mut Prepared<Self::Stmt>;
    async fn kv(&mut self, op: Kv, args: &[&[u8]]) -> Result<u64, OpError>;
    async fn native(
        &mut self,
        id: usize,
        query: &str,
        kinds: &[ValueKind],
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError>;
    async fn query_drop(&mut self, sql: &str) -> Result<(), OpError>;
    /// The first column of every row, as text.
    async fn query_column(&mut self, sql: &str) -> Result<Vec<String>, OpError>;
    async fn change_user(&mut self) -> Result<(), OpError>;
}

impl Link for DriverSession {
    type Stmt = Statement;

    fn prepared(&mut self) -> &mut Prepared<Statement> {
        &mut self.prepared
    }

    async fn kv(&mut self, op: Kv, args: &[&[u8]]) -> Result<u64, OpError> {
        let conn = &mut self.conn;
        let st = self
            .prepared
            .kv(op, |sql| conn.prep(sql))
            .await
            .map_err(cl)?;
        let params = Params::Positional(args.iter().map(|a| Value::Bytes(a.to_vec())).collect());
        if op == Kv::Get {
            let mut result = self.conn.exec_iter(&st, params).await.map_err(cl)?;
            let mut n = 0;
            while result.next().await.map_err(cl)?.is_some() {
                n += 1;
            }
            result.drop_result().await.map_err(cl)?;
            Ok(n)
        } else {
            self.conn.exec_drop(&st, params).await.map_err(cl)?;
            Ok(if op == Kv::Put {
                1
            } else {
                self.conn.affected_rows()
            })
        }
    }

    async fn native(
        &mut self,
        id: usize,
        query: &str,
        kinds: &[ValueKind],
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let DriverSession {
            conn,
            prepared,
            placeholders,
        } = self;
        let ph = placeholders.of(id, query);
        let text = ph.text.as_deref().unwrap_or(query);
        let st = prepared.native(id, || conn.prep(text)).await.map_err(cl)?;
        let order = binding(ph, query, usize::from(st.num_params()), args.len())?;
        let bind = |i: usize| Param::of(&args[i], kinds[i]).value();
        let params = match order {
            Some(order) => Params::Positional(order.iter().map(|&i| bind(i)).collect()),
            None if args.is_empty() => Params::Empty,
            None => Params::Positional((0..args.len()).map(bind).collect()),
        };
        let mut result = conn.exec_iter(&st, params).await.map_err(cl)?;
        let mut out = Outcome::default();
        if result.columns_ref().is_empty() {
            out = crate::targets::sql::affected(result.affected_rows(), capture);
        } else {
            while let Some(row) = result.next().await.map_err(cl)? {
                if capture && out.rows == 0 {
                    out.captured = (0..row.len())
                        .map(|c| row.as_ref(c).map_or_else(Vec::new, to_text))
                        .collect();
                }
                out.rows += 1;
            }
        }
        result.drop_result().await.map_err(cl)?;
        Ok(out)
    }

    async fn query_drop(&mut self, sql: &str) -> Result<(), OpError> {
        self.conn.query_drop(sql).await.map_err(cl)
    }

    async fn query_column(&mut self, sql: &str) -> Result<Vec<String>, OpError> {
        self.conn.query(sql).await.map_err(cl)
    }

    async fn change_user(&mut self) -> Result<(), OpError> {
        self.conn
            .change_user(ChangeUserOpts::default())
            .await
            .map_err(cl)
    }
}

impl Link for WireSession {
    type Stmt = wire::Stmt;

    fn prepared(&mut self) -> &mut Prepared<wire::Stmt> {
        &mut self.prepared
    }

    async fn kv(&mut self, op: Kv, args: &[&[u8]]) -> Result<u64, OpError> {
        let wire = &mut self.wire;
        let st = self.prepared.kv(op, |sql| wire.prepare(sql)).await?;
        let out = self.wire.execute(&st, args, None, None, false).await?;
        // An upsert counts one row (the server says 2 when it replaced one).
        Ok(if op == Kv::Put { 1 } else { out.rows })
    }

    async fn native(
        &mut self,
        id: usize,
        query: &str,
        kinds: &[ValueKind],
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let WireSession {
            wire,
            prepared,
            placeholders,
            ..
        } = self;
        let ph = placeholders.of(id, query);
        let text = ph.text.as_deref().unwrap_or(query);
        let st = prepared.native(id, || wire.prepare(text)).await?;
        let order = binding(ph, query, st.num_params(), args.len())?;
        wire.execute(&st, args, Some(kinds), order, capture).await
    }

    async fn query_drop(&mut self, sql: &str) -> Result<(), OpError> {
        self.wire.query(sql, |_| ()).await
    }

    async fn query_column(&mut self, sql: &str) -> Result<Vec<String>, OpError> {
        let mut column = Vec::new();
        self.wire
            .query(sql, |row| column.push(wire::first_text(row)))
            .await?;
        Ok(column)
    }

    async fn change_user(&mut self) -> Result<(), OpError> {
        self.wire.change_user(&login(&self.opts)).await
    }
}

async fn run<L: Link>(link: &mut L, op: &Op<'_>) -> Result<Outcome, OpError> {
    let rows = match *op {
        Op::Nop => 0,
        Op::Put { key, value } => link.kv(Kv::Put, &[key.as_bytes(), value]).await?,
        Op::Get { key } => link.kv(Kv::Get, &[key.as_bytes()]).await?,
        Op::Update { key, value } => link.kv(Kv::Update, &[value, key.as_bytes()]).await?,
        Op::Delete { key } => link.kv(Kv::Delete, &[key.as_bytes()]).await?,
        Op::Native {
            op: NativeOp::Record(op),
            args,
            ..
        } => {
            let plan = link.prepared().records.plan(op, args, true)?;
            return link
                .native(plan.id, &plan.query, &plan.kinds, &plan.args(args), false)
                .await;
        }
        Op::Native {
            op: NativeOp::Sql(SqlOp { id, query, params }),
            args,
            capture,
        } => return link.native(*id, query, params, args, capture).await,
        // Every other family: the runner refuses them before anything runs.
        Op::Native { .. } => return Err(unsupported(op, "mysql://")),
        Op::Begin => return text(link, "BEGIN").await,
        Op::Commit => return text(link, "COMMIT").await,
        Op::Rollback => return text(link, "ROLLBACK").await,
    };
    Ok(Outcome::rows(rows))
}

async fn text<L: Link>(link: &mut L, sql: &str) -> Result<Outcome, OpError> {
    link.query_drop(sql).await?;
    Ok(Outcome::default())
}

/// A batch of records as multi-row INSERTs ([`crate::targets::sql::insert_chunks`]).
async fn insert_rows<L: Link>(
    link: &mut L,
    records: &[(String, Vec<Vec<u8>>)],
) -> Result<(), OpError> {
    for chunk in crate::targets::sql::insert_chunks(records) {
        let fields = chunk[0].1.len();
        let query = crate::targets::sql::question_marks(&crate::targets::sql::insert_rows(
            fields,
            chunk.len(),
        ));
        let args: Vec<Vec<u8>> = chunk
            .iter()
            .flat_map(|(k, v)| std::iter::once(k.as_bytes().to_vec()).chain(v.iter().cloned()))
            .collect();
        let kinds = vec![ValueKind::Bytes; args.len()];
        let id = link.prepared().record_id(&query);
        link.native(id, &query, &kinds, &args, false).await?;
    }
    Ok(())
}

/// Multi-row upserts of at most [`LOAD_CHUNK_BYTES`] of SQL each, keys and values as
/// hex literals (no escaping questions, any bytes).
async fn insert_batch<L: Link>(link: &mut L, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
    const HEAD: &str = concat!("INSERT INTO ", kv_table!(), " (k, v) VALUES ");
    const TAIL: &str = " ON DUPLICATE KEY UPDATE v = VALUES(v)";
    let mut sql = String::with_capacity(LOAD_CHUNK_BYTES + 4096);
    let mut rows = 0;
    for (k, v) in records {
        if rows == 0 {
            sql.clear();
            sql.push_str(HEAD);
        } else {
            sql.push(',');
        }
        sql.push_str("(X'");
        hex(&mut sql, k.as_bytes());
        sql.push_str("',X'");
        hex(&mut sql, v);
        sql.push_str("')");
        rows += 1;
        if sql.len() >= LOAD_CHUNK_BYTES {
            sql.push_str(TAIL);
            link.query_drop(&sql).await?;
            rows = 0;
        }
    }
    if rows > 0 {
        sql.push_str(TAIL);
        link.query_drop(&sql).await?;
    }
    Ok(())
}

async fn drop_namespace<L: Link>(link: &mut L) -> Result<u64, OpError> {
    let names = link.query_column(Dialect::Mysql.list_tables()).await?;
    if names.is_empty() {
        return Ok(0);
    }
    // One statement, so references between loadrig tables do not matter.
    link.query_drop(&Dialect::Mysql.drop_tables(&names)).await?;
    Ok(names.len() as u64)
}

async fn server_version<L: Link>(link: &mut L) -> Option<String> {
    let v = link.query_column("SELECT VERSION()").await.ok()?.pop()?;
    Some(if v.contains("MariaDB") {
        format!("MariaDB {}", v.replacen("-MariaDB", "", 1))
    } else {
        format!("MySQL {v}")
    })
}

async fn authenticate<L: Link>(link: &mut L) -> Result<Outcome, OpError> {
    // The server drops this session's prepared statements on COM_CHANGE_USER.
    link.prepared().clear();
    link.change_user().await?;
    Ok(Outcome::rows(1))
}

async fn create_records<L: Link>(link: &mut L, fields: usize) -> Result<(), OpError> {
    for statement in crate::targets::sql::create_records(fields) {
        link.query_drop(&statement).await?;
    }
    Ok(())
}

/// One transaction per batch, of multi-row INSERTs.
async fn load_records<L: Link>(
    link: &mut L,
    records: &[(String, Vec<Vec<u8>>)],
) -> Result<(), OpError> {
    link.query_drop("BEGIN").await?;
    let done = insert_rows(link, records).await;
    link.query_drop(if done.is_ok() { "COMMIT" } else { "ROLLBACK" })
        .await?;
    done
}

fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

/// `$body` with `$l` the session's connection, whichever client it is.
macro_rules! on_link {
    ($session:expr, $l:ident => $body:expr) => {
        match $session {
            MysqlSession::Driver($l) => $body,
            MysqlSession::Wire($l) => $body,
        }
    };
}

impl Session for MysqlSession {
    async fn setup(&mut self) -> Result<(), OpError> {
        on_link!(self, l => l.query_drop(Dialect::Mysql.create_kv()).await)
    }

    async fn server_version(&mut self) -> Option<String> {
        on_link!(self, l => server_version(l).await)
    }

    async fn execute(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        on_link!(self, l => run(l, op).await)
    }

    async fn authenticate(&mut self) -> Result<Outcome, OpError> {
        on_link!(self, l => authenticate(l).await)
    }

    async fn before_run(&mut self, step: &RunStep) -> Result<bool, OpError> {
        let Some(sql) = Dialect::Mysql.run_step(step) else {
            return Ok(false);
        };
        on_link!(self, l => l.query_drop(&sql).await)?;
        Ok(true)
    }

    async fn cleanup(&mut self) -> Result<u64, OpError> {
        on_link!(self, l => drop_namespace(l).await)
    }

    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        on_link!(self, l => insert_batch(l, records).await)
    }

    async fn create_records(&mut self, layout: crate::vocab::RecordLayout) -> Result<(), OpError> {
        on_link!(self, l => create_records(l, layout.fields).await)
    }

    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        on_link!(self, l => load_records(l, records).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_placeholders_become_question_marks_outside_quotes() {
        let p = Placeholders::of("UPDATE t SET b = b + $1 WHERE a = $2 AND c <> '$1' AND d$1 = $1");
        assert_eq!(
            p.text.as_deref(),
            Some("UPDATE t SET b = b + ? WHERE a = ? AND c <> '$1' AND d$1 = ?")
        );
        assert_eq!(p.order, [0, 1, 0]);
        let p = Placeholders::of("SELECT 'it\\'s $1', `$2`, \"$3\", $10");
        assert_eq!(
            p.text.as_deref(),
            Some("SELECT 'it\\'s $1', `$2`, \"$3\", ?")
        );
        assert_eq!(p.order, [9]);
        let p = Placeholders::of("SELECT v FROM t WHERE k = ? AND p = '$' AND q = $0");
        assert_eq!((p.text, p.order), (None, vec![]));
    }

    #[test]
    fn values_read_as_text() {
        assert_eq!(to_text(&Value::NULL), b"");
        assert_eq!(to_text(&Value::Int(-3)), b"-3");
        assert_eq!(
            to_text(&Value::Date(2024, 2, 9, 7, 5, 3, 0)),
            b"2024-02-09 07:05:03"
        );
        assert_eq!(
            to_text(&Value::Time(true, 1, 2, 3, 4, 500)),
            b"-26:03:04.000500"
        );
        assert_eq!(Param::of(b"-7", ValueKind::Integer), Param::Int(-7));
        assert_eq!(
            Param::of(b"18446744073709551615", ValueKind::Integer),
            Param::UInt(u64::MAX)
        );
        assert_eq!(Param::of(b"x7", ValueKind::Integer), Param::Bytes(b"x7"));
        // Integers read as str::parse::<i64>, then ::<u64>, read them.
        fn parsed(t: &str) -> Param<'_> {
            t.parse::<i64>()
                .map(Param::Int)
                .or_else(|_| t.parse::<u64>().map(Param::UInt))
                .unwrap_or(Param::Bytes(t.as_bytes()))
        }
        for t in [
            "0",
            "-0",
            "+0",
            "7",
            "+7",
            "-7",
            "007",
            "",
            "-",
            "+",
            "--1",
            "+-1",
            " 1",
            "1 ",
            "1.0",
            "1e3",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "+18446744073709551615",
            "18446744073709551616",
            "-18446744073709551615",
            "99999999999999999999999",
            "١",
        ] {
            assert_eq!(
                Param::of(t.as_bytes(), ValueKind::Integer),
                parsed(t),
                "{t:?}"
            );
        }
        assert_eq!(Param::of(b"0.5", ValueKind::Float), Param::Double(0.5));
        assert_eq!(Param::of(b"7", ValueKind::Bytes), Param::Bytes(b"7"));
        assert_eq!(
            Param::of(b"7", ValueKind::Bytes).value(),
            Value::Bytes(b"7".to_vec())
        );
        let mut s = String::new();
        hex(&mut s, b"\x00\xffA");
        assert_eq!(s, "00ff41");
    }

    #[test]
    fn a_database_is_required_and_options_are_checked() {
        let url = TargetUrl::parse("mysql://u:secret@127.0.0.1:3306").unwrap();
        let e = Mysql::open(&url, &Default::default()).err().unwrap();
        assert!(e.message.contains("no database") && !e.message.contains("secret"));
        let url = TargetUrl::parse("mysql://u:p@127.0.0.1/db?sslmode=off").unwrap();
        assert!(Mysql::open(&url, &Default::default()).is_err());
        let own = |q: &str| {
            let url = TargetUrl::parse(&format!("mysql://u:p@127.0.0.1/db{q}")).unwrap();
            Mysql::open(&url, &Default::default()).map(|m| m.own)
        };
        assert!(own("").unwrap());
        assert!(!own("?client=mysql_async").unwrap());
        // TLS runs on the own client too, unless asked otherwise.
        assert!(own("?ssl-mode=REQUIRED&insecure=true").unwrap());
        assert!(own("?ssl-mode=REQUIRED&insecure=true&client=loadrig").unwrap());
        assert!(!own("?ssl-mode=REQUIRED&insecure=true&client=mysql_async").unwrap());
        assert!(own("?client=libmysql").is_err());
    }
}
