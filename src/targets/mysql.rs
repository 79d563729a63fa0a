//! `mysql://USER:PASSWORD@HOST:PORT/DB`: MySQL or MariaDB through mysql_async, plain TCP or
//! TLS (rustls; no compression; the server's socket file is never used instead of TCP).
//!
//! - Options: `connect_timeout` (default 5 s, a duration or plain seconds) bounds the TCP
//!   connect and the whole handshake. The database in the path is required. `ssl-mode`:
//!   `DISABLED` (the default) or `REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`, which all
//!   encrypt and verify the server's certificate and name against `ca=PATH` (else the
//!   Mozilla roots mysql_async carries); `insecure=true` accepts any certificate.
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
//!   so they are prepared again on next use).
//!
//! Errors: 1213 → deadlock, 1205 (lock wait timeout), 1969 and 3024 (statement time
//! limit) → timeout, SQLSTATE 23xxx (1062 duplicate key, 1451/1452 foreign keys, ...) →
//! constraint, 1045 and SQLSTATE 28xxx → auth, 1040, 1053, 1927, SQLSTATE 08xxx, a closed
//! connection and I/O errors (the client's 2002/2003/2006/2013) → connect, so the engine
//! reconnects; malformed packets → protocol; everything else → other. Messages never
//! contain the password.

use std::fmt::Write as _;
use std::future::Future;
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
use crate::vocab::{ErrorClass, Family, NativeOp, Op, OpError, Outcome, ValueKind};

/// SQL text per data-loading statement: well under the server's max_allowed_packet.
const LOAD_CHUNK_BYTES: usize = 1 << 20;

/// A MySQL or MariaDB server and how to log in to it.
pub struct Mysql {
    opts: Opts,
    timeout: Duration,
    tls: Tls,
    /// The URL without the password, for messages.
    shown: String,
}

impl Mysql {
    pub fn open(url: &TargetUrl, params: &super::Params) -> Result<Mysql, InputError> {
        url.check_options(&["connect_timeout", "isolation", "ssl-mode", "ca", "insecure"])?;
        let tls = Tls::from_url(url, ssl_mode(url)?)?;
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
        })
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

/// mysql_async's TLS settings for `tls` (it builds its own rustls configuration).
fn ssl_opts(tls: &Tls) -> Option<SslOpts> {
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

/// One connection and the statements prepared on it.
pub struct MysqlSession {
    conn: Conn,
    prepared: Prepared<Statement>,
    /// Each native statement's `$N` placeholders as `?`, by statement number.
    placeholders: Vec<Option<Placeholders>>,
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

    async fn connect(&self) -> Result<MysqlSession, OpError> {
        let conn = handshake(self.timeout, Conn::new(self.opts.clone()), |e| {
            self.tls
                .rustls_failure(&self.shown, e)
                .unwrap_or_else(|| classify(e))
        })
        .await?;
        Ok(MysqlSession {
            conn,
            prepared: Prepared::new(Dialect::Mysql),
            placeholders: Vec::new(),
        })
    }
}

/// Map a driver error to a class and a message.
fn classify(e: &mysql_async::Error) -> OpError {
    use mysql_async::Error as E;
    let class = match e {
        E::Server(s) => match s.code {
            1213 => ErrorClass::Deadlock,
            1205 | 1969 | 3024 => ErrorClass::Timeout,
            1045 => ErrorClass::Auth,
            1040 | 1053 | 1927 => ErrorClass::Connect,
            _ => sqlstate_class(&s.state).unwrap_or(ErrorClass::Other),
        },
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

fn params(args: &[&[u8]]) -> Params {
    if args.is_empty() {
        Params::Empty
    } else {
        Params::Positional(args.iter().map(|a| Value::Bytes(a.to_vec())).collect())
    }
}

/// A native argument with the type its template produces: integers and floats as numbers
/// (so `? / 2` is exact decimal division and `? = '7.0'` compares numbers), the rest as
/// bytes for the server to convert.
fn typed(arg: &[u8], kind: ValueKind) -> Value {
    let text = std::str::from_utf8(arg).ok();
    match kind {
        ValueKind::Integer => match text.and_then(|t| t.parse::<i64>().ok()) {
            Some(i) => Value::Int(i),
            None => match text.and_then(|t| t.parse::<u64>().ok()) {
                Some(u) => Value::UInt(u),
                None => Value::Bytes(arg.to_vec()),
            },
        },
        ValueKind::Float => match text.and_then(|t| t.parse::<f64>().ok()) {
            Some(f) => Value::Double(f),
            None => Value::Bytes(arg.to_vec()),
        },
        ValueKind::Bytes => Value::Bytes(arg.to_vec()),
    }
}

impl MysqlSession {
    async fn kv(&mut self, op: Kv, args: &[&[u8]]) -> Result<u64, OpError> {
        let conn = &mut self.conn;
        let st = self
            .prepared
            .kv(op, |sql| conn.prep(sql))
            .await
            .map_err(cl)?;
        if op == Kv::Get {
            let mut result = self.conn.exec_iter(&st, params(args)).await.map_err(cl)?;
            let mut n = 0;
            while result.next().await.map_err(cl)?.is_some() {
                n += 1;
            }
            result.drop_result().await.map_err(cl)?;
            Ok(n)
        } else {
            self.conn.exec_drop(&st, params(args)).await.map_err(cl)?;
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
        let MysqlSession {
            conn,
            prepared,
            placeholders,
        } = self;
        // Record statements come with `?` already (sql::question_marks).
        let mut plain = Placeholders {
            text: None,
            order: Vec::new(),
        };
        let ph = if id >= crate::targets::sql::RECORD_IDS {
            &mut plain
        } else {
            if placeholders.len() <= id {
                placeholders.resize(id + 1, None);
            }
            placeholders[id].get_or_insert_with(|| Placeholders::of(query))
        };
        let text = ph.text.as_deref().unwrap_or(query);
        let st = prepared.native(id, || conn.prep(text)).await.map_err(cl)?;
        let params = if ph.text.is_some() {
            let used = ph.order.iter().max().map_or(0, |m| m + 1);
            check_arity(query, used, args.len())?;
            Params::Positional(
                ph.order
                    .iter()
                    .map(|&i| typed(&args[i], kinds[i]))
                    .collect(),
            )
        } else if args.is_empty() {
            check_arity(query, usize::from(st.num_params()), 0)?;
            Params::Empty
        } else {
            check_arity(query, usize::from(st.num_params()), args.len())?;
            Params::Positional(
                args.iter()
                    .zip(kinds)
                    .map(|(a, kind)| typed(a, *kind))
                    .collect(),
            )
        };
        let mut result = self.conn.exec_iter(&st, params).await.map_err(cl)?;
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

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let rows = match *op {
            Op::Nop => 0,
            Op::Put { key, value } => self.kv(Kv::Put, &[key.as_bytes(), value]).await?,
            Op::Get { key } => self.kv(Kv::Get, &[key.as_bytes()]).await?,
            Op::Update { key, value } => self.kv(Kv::Update, &[value, key.as_bytes()]).await?,
            Op::Delete { key } => self.kv(Kv::Delete, &[key.as_bytes()]).await?,
            Op::Native {
                op:
                    op @ (NativeOp::RecordInsert { .. }
                    | NativeOp::RecordRead { .. }
                    | NativeOp::RecordUpdate { .. }
                    | NativeOp::RecordScan { .. }
                    | NativeOp::RecordDelete { .. }),
                args,
                ..
            } => {
                let plan = self.prepared.records.plan(op, args, true)?;
                return self
                    .native(plan.id, &plan.query, &plan.kinds, &plan.args(args), false)
                    .await;
            }
            Op::Native {
                op: NativeOp::Sql { id, query, params },
                args,
                capture,
            } => return self.native(*id, query, params, args, capture).await,
            // Every other family's operation, by name: a new variant of a family this
            // target runs must be handled above before this compiles.
            Op::Native {
                op:
                    NativeOp::Redis { .. }
                    | NativeOp::LdapSearch { .. }
                    | NativeOp::LdapBind { .. }
                    | NativeOp::LdapAdd { .. }
                    | NativeOp::LdapModify { .. }
                    | NativeOp::LdapDelete { .. }
                    | NativeOp::Http { .. },
                ..
            } => return Err(unsupported(op, "mysql://")),
            Op::Begin => return self.text("BEGIN").await,
            Op::Commit => return self.text("COMMIT").await,
            Op::Rollback => return self.text("ROLLBACK").await,
        };
        Ok(Outcome::rows(rows))
    }

    /// A batch of records as multi-row INSERTs ([`crate::targets::sql::insert_chunks`]).
    async fn insert_rows(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
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
            let id = self.prepared.record_id(&query);
            self.native(id, &query, &kinds, &args, false).await?;
        }
        Ok(())
    }

    async fn text(&mut self, sql: &str) -> Result<Outcome, OpError> {
        self.conn.query_drop(sql).await.map_err(cl)?;
        Ok(Outcome::default())
    }

    /// Multi-row upserts of at most [`LOAD_CHUNK_BYTES`] of SQL each, keys and values as
    /// hex literals (no escaping questions, any bytes).
    async fn insert_batch(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
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
                self.conn.query_drop(sql.as_str()).await.map_err(cl)?;
                rows = 0;
            }
        }
        if rows > 0 {
            sql.push_str(TAIL);
            self.conn.query_drop(sql.as_str()).await.map_err(cl)?;
        }
        Ok(())
    }

    async fn drop_namespace(&mut self) -> Result<u64, OpError> {
        let names: Vec<String> = self
            .conn
            .query(Dialect::Mysql.list_tables())
            .await
            .map_err(cl)?;
        if names.is_empty() {
            return Ok(0);
        }
        // One statement, so references between loadrig tables do not matter.
        self.conn
            .query_drop(Dialect::Mysql.drop_tables(&names))
            .await
            .map_err(cl)?;
        Ok(names.len() as u64)
    }
}

fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

impl Session for MysqlSession {
    async fn setup(&mut self) -> Result<(), OpError> {
        self.conn
            .query_drop(Dialect::Mysql.create_kv())
            .await
            .map_err(cl)
    }

    async fn server_version(&mut self) -> Option<String> {
        let v: String = self.conn.query_first("SELECT VERSION()").await.ok()??;
        Some(if v.contains("MariaDB") {
            format!("MariaDB {}", v.replacen("-MariaDB", "", 1))
        } else {
            format!("MySQL {v}")
        })
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    async fn authenticate(&mut self) -> Result<Outcome, OpError> {
        // The server drops this session's prepared statements on COM_CHANGE_USER.
        self.prepared.clear();
        self.conn
            .change_user(ChangeUserOpts::default())
            .await
            .map_err(cl)?;
        Ok(Outcome::rows(1))
    }

    async fn cleanup(&mut self) -> Result<u64, OpError> {
        self.drop_namespace().await
    }

    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        self.insert_batch(records).await
    }

    async fn create_records(&mut self, layout: crate::vocab::RecordLayout) -> Result<(), OpError> {
        for statement in crate::targets::sql::create_records(layout.fields) {
            self.text(&statement).await?;
        }
        Ok(())
    }

    /// One transaction per batch, of multi-row INSERTs.
    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        self.text("BEGIN").await?;
        let done = self.insert_rows(records).await;
        self.text(if done.is_ok() { "COMMIT" } else { "ROLLBACK" })
            .await?;
        done
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
        assert_eq!(typed(b"-7", ValueKind::Integer), Value::Int(-7));
        assert_eq!(
            typed(b"18446744073709551615", ValueKind::Integer),
            Value::UInt(u64::MAX)
        );
        assert_eq!(typed(b"0.5", ValueKind::Float), Value::Double(0.5));
        assert_eq!(typed(b"7", ValueKind::Bytes), Value::Bytes(b"7".to_vec()));
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
    }
}
