//! A session over loadrig's own extended-protocol client ([`super::wire`]) for plain-TCP
//! PostgreSQL without documents: the engine's client loop runs `tx` steps, captures and
//! conditions here one `execute` at a time, as on tokio-postgres, but each statement is
//! written and its reply read on a socket this session owns (no channel to a connection
//! task, no task wake-up, no per-query allocation for rows it only counts).
//!
//! - Statements are prepared by name on first use (Parse + Describe + Sync, one round trip
//!   per statement and connection); their parameter and column types come back with them.
//! - Arguments convert to the declared types exactly as on tokio-postgres ([`super::convert`]);
//!   result columns come in binary where the type is known, so `capture` renders them with
//!   the same text functions (`text.rs`), NULL as empty; an unknown type comes as the
//!   server's text.
//! - BEGIN and COMMIT are prepared on first use too, as pgbench -M prepared prepares every
//!   command of its script: the server then binds them instead of parsing them each time.
//!   ROLLBACK (rare), setup and cleanup statements are simple Query messages; data loading is
//!   the same binary COPY as tokio-postgres's.
//! - A reply is always read to its ReadyForQuery; an operation dropped before its reply
//!   (an op timeout) leaves the connection unusable, and the next one fails as `connect` so
//!   the engine reconnects.

use std::ops::Range;
use std::rc::Rc;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use tokio::net::TcpStream;
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::{convert, documents, text, wire, Param, Postgres};
use crate::targets::readbuf::ReadBuf;
use crate::targets::socket;
use crate::targets::sql::{self, check_arity, Dialect, Kv, Prepared};
use crate::vocab::{ErrorClass, NativeOp, Op, OpError, Outcome, SqlOp};

/// A statement prepared on this connection.
pub(super) struct Statement {
    name: String,
    /// `None`: a type this client does not know (sent as text).
    params: Vec<Option<Type>>,
    /// Name and type of each result column (`None`: unknown, received as text).
    columns: Vec<(String, Option<Type>)>,
}

pub struct WireSession {
    conn: Conn,
    prepared: Prepared<Rc<Statement>>,
}

/// The two transaction commands a session prepares.
#[derive(Clone, Copy)]
enum Tx {
    Begin = 0,
    Commit = 1,
}

/// The socket, its buffers and what the connection holds.
struct Conn {
    tcp: TcpStream,
    out: BytesMut,
    inbuf: ReadBuf,
    /// Statements named so far (names `s0`, `s1`, ...).
    named: usize,
    /// The session's DateStyle, IntervalStyle and TimeZone, asked on the first capture.
    styles: Option<text::Styles>,
    /// The text of `Begin` (the URL's isolation level in it).
    begin: &'static str,
    /// `Begin` and `Commit` once prepared.
    tx: [Option<Rc<Statement>>; 2],
    /// A request was written and its reply not read to the end.
    pending: bool,
}

/// Open and log in ([`wire::connect`], which times the phases).
pub(super) async fn connect(pg: &Postgres) -> Result<WireSession, OpError> {
    Ok(WireSession {
        conn: Conn {
            tcp: wire::connect(pg).await?,
            out: BytesMut::with_capacity(512),
            inbuf: ReadBuf::new(8192),
            named: 0,
            styles: None,
            begin: pg.begin,
            tx: [None, None],
            pending: false,
        },
        prepared: Prepared::new(Dialect::Postgres),
    })
}

fn lost(why: &str) -> OpError {
    OpError::new(ErrorClass::Connect, format!("connection lost: {why}"))
}

impl Conn {
    /// Write what `out` holds and read until `frame` finds a whole reply; where it lies in
    /// `inbuf` (until the next read).
    async fn round_trip(
        &mut self,
        frame: fn(&[u8]) -> Result<Option<usize>, String>,
    ) -> Result<Range<usize>, OpError> {
        if self.pending {
            return Err(lost("an earlier operation's reply never came"));
        }
        self.pending = true;
        if !self.out.is_empty() {
            let written = socket::write_all(&self.tcp, &self.out).await;
            self.out.clear();
            written.map_err(|e| lost(&e.to_string()))?;
        }
        loop {
            match frame(self.inbuf.unread()) {
                Ok(Some(n)) => {
                    self.pending = false;
                    return Ok(self.inbuf.consume(n));
                }
                Ok(None) => {}
                Err(why) => return Err(OpError::new(ErrorClass::Protocol, why)),
            }
            match socket::fill(&self.tcp, &mut self.inbuf).await {
                Ok(0) => return Err(lost("the server closed the connection")),
                Ok(_) => {}
                Err(e) => return Err(lost(&e.to_string())),
            }
        }
    }

    /// Parse + Describe + Sync for `query` under a new name.
    async fn prepare(&mut self, query: &str) -> Result<Rc<Statement>, OpError> {
        let name = format!("s{}", self.named);
        self.named += 1;
        let nul = |_| OpError::new(ErrorClass::Other, "a NUL character in the query");
        frontend::parse(&name, query, std::iter::empty(), &mut self.out).map_err(nul)?;
        frontend::describe(b'S', &name, &mut self.out).map_err(nul)?;
        frontend::sync(&mut self.out);
        let at = self.round_trip(wire::frame_len).await?;
        let reply = &self.inbuf[at];
        if let Some(e) = first_error(reply) {
            return Err(e);
        }
        describe(reply, name)
    }

    /// Run `sql` as a simple query: the count of its last command (or the sum over several)
    /// and up to `keep` rows, each value as the server's text (NULL as empty).
    async fn simple(&mut self, sql: &str, keep: usize) -> Result<Simple, OpError> {
        frontend::query(sql, &mut self.out)
            .map_err(|_| OpError::new(ErrorClass::Other, "a NUL character in the query"))?;
        let at = self.round_trip(wire::frame_len).await?;
        let frame = &self.inbuf[at];
        simple_reply(frame, keep)
    }

    /// BEGIN (`Tx::Begin`) or COMMIT (`Tx::Commit`), prepared on first use.
    async fn tx(&mut self, which: Tx) -> Result<Outcome, OpError> {
        let st = match &self.tx[which as usize] {
            Some(st) => Rc::clone(st),
            None => {
                let sql = match which {
                    Tx::Begin => self.begin,
                    Tx::Commit => "COMMIT",
                };
                let st = self.prepare(sql).await?;
                self.tx[which as usize] = Some(Rc::clone(&st));
                st
            }
        };
        self.exec(&st, std::iter::empty(), false).await
    }

    async fn styles(&mut self) -> Result<text::Styles, OpError> {
        if let Some(s) = &self.styles {
            return Ok(s.clone());
        }
        let reply = self
            .simple(
                "SELECT current_setting('TimeZone'), current_setting('DateStyle'), \
                 current_setting('IntervalStyle')",
                1,
            )
            .await?;
        let row = reply.rows.into_iter().next().unwrap_or_default();
        let get = |i: usize| String::from_utf8_lossy(row.get(i).map_or(&[][..], |v| v)).into();
        let styles = text::Styles {
            timezone: get(0),
            datestyle: get(1),
            intervalstyle: get(2),
        };
        self.styles = Some(styles.clone());
        Ok(styles)
    }

    /// Bind + Execute + Sync for `st` into `out`; on an error `out` is as it was.
    /// One copy of this code for every caller: `params` is a trait object.
    fn bind_execute<'a>(
        &mut self,
        st: &Statement,
        params: &mut dyn Iterator<Item = Result<Param<'a>, OpError>>,
    ) -> Result<(), OpError> {
        let start = self.out.len();
        if let Err(e) = bind(&mut self.out, st, params) {
            self.out.truncate(start);
            return Err(e);
        }
        self.out
            .extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, b'S', 0, 0, 0, 4]);
        Ok(())
    }

    /// A statement prepared before: Bind + Execute + Sync, its rows counted (the first
    /// captured if asked).
    async fn exec(
        &mut self,
        st: &Statement,
        mut params: impl Iterator<Item = Result<Param<'_>, OpError>>,
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let styles = if capture {
            Some(self.styles().await?)
        } else {
            None
        };
        self.bind_execute(st, &mut params)?;
        let at = self.round_trip(wire::frame_len).await?;
        let frame = &self.inbuf[at];
        outcome(frame, st, styles.as_ref())
    }
}

impl WireSession {
    async fn kv(&mut self, op: Kv, args: &[&[u8]]) -> Result<Outcome, OpError> {
        let conn = &mut self.conn;
        let st = self.prepared.kv(op, |sql| conn.prepare(sql)).await?;
        let params = args.iter().map(|a| Ok(Param::Raw(a)));
        self.conn.exec(&st, params, false).await
    }

    async fn native(
        &mut self,
        id: usize,
        query: &str,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let conn = &mut self.conn;
        let st = match self.prepared.native(id, || conn.prepare(query)).await {
            Ok(st) => st,
            // "cannot insert multiple commands into a prepared statement".
            Err(e) if args.is_empty() && e.message.starts_with("42601") => {
                let reply = self.conn.simple(query, usize::from(capture)).await?;
                return Ok(Outcome {
                    rows: reply.count,
                    captured: reply.rows.into_iter().next().unwrap_or_default(),
                    rolled_back: false,
                });
            }
            Err(e) => return Err(e),
        };
        check_arity(query, st.params.len(), args.len())?;
        self.conn.exec(&st, converted(args, &st), capture).await
    }

    /// Run `op`. A statement this connection has prepared is bound without an await
    /// ([`Self::ready`]) and its reply read at the one await below, so a transaction's
    /// round trips (BEGIN, each statement, COMMIT) all run one copy of the round trip's
    /// code: inlined at each await of `exec`, the copies made the hot loop's code too large
    /// for the CPU's instruction cache (docs/performance.md). The rest (a first use that
    /// prepares, ROLLBACK, a multi-command text) runs boxed, out of the loop's way.
    pub(super) async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let Some((st, capture)) = self.ready(op)? else {
            return Box::pin(self.run_cold(op)).await;
        };
        let at = self.conn.round_trip(wire::frame_len).await?;
        let styles = if capture {
            self.conn.styles.as_ref()
        } else {
            None
        };
        outcome(&self.conn.inbuf[at], &st, styles)
    }

    /// Bind `op` into the connection's output if its statement is prepared here (and, for a
    /// capture, the session's styles known): the statement and whether to capture; `None`
    /// when it needs [`Self::run_cold`].
    fn ready(&mut self, op: &Op<'_>) -> Result<Option<(Rc<Statement>, bool)>, OpError> {
        let conn = &mut self.conn;
        let (st, capture) = match *op {
            Op::Begin | Op::Commit => {
                let which = if matches!(op, Op::Begin) {
                    Tx::Begin
                } else {
                    Tx::Commit
                };
                let Some(st) = conn.tx[which as usize].clone() else {
                    return Ok(None);
                };
                conn.bind_execute(&st, &mut std::iter::empty())?;
                (st, false)
            }
            Op::Put { .. } | Op::Get { .. } | Op::Update { .. } | Op::Delete { .. } => {
                let (kv, key, value) = match *op {
                    Op::Put { key, value } => (Kv::Put, key, Some(value)),
                    Op::Update { key, value } => (Kv::Update, key, Some(value)),
                    Op::Get { key } => (Kv::Get, key, None),
                    Op::Delete { key } => (Kv::Delete, key, None),
                    _ => return Ok(None),
                };
                let Some(st) = self.prepared.kv_ready(kv) else {
                    return Ok(None);
                };
                let args = std::iter::once(key.as_bytes()).chain(value);
                conn.bind_execute(&st, &mut args.map(|a| Ok(Param::Raw(a))))?;
                (st, false)
            }
            Op::Native {
                op: NativeOp::Sql(SqlOp { id, query, .. }),
                args,
                capture,
            } => {
                let Some(st) = self.prepared.native_ready(*id) else {
                    return Ok(None);
                };
                if capture && conn.styles.is_none() {
                    return Ok(None);
                }
                check_arity(query, st.params.len(), args.len())?;
                conn.bind_execute(&st, &mut converted(args, &st))?;
                (st, capture)
            }
            Op::Native {
                op: NativeOp::Record(op),
                args,
                ..
            } => {
                let plan = self.prepared.records.plan(op, args, false)?;
                let Some(st) = self.prepared.native_ready(plan.id) else {
                    return Ok(None);
                };
                let args = plan.args(args);
                check_arity(&plan.query, st.params.len(), args.len())?;
                conn.bind_execute(&st, &mut converted(&args, &st))?;
                (st, false)
            }
            _ => return Ok(None),
        };
        Ok(Some((st, capture)))
    }

    /// [`Self::run`]'s way for what is not [`Self::ready`].
    async fn run_cold(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        match *op {
            Op::Nop => Ok(Outcome::default()),
            Op::Put { key, value } => self.kv(Kv::Put, &[key.as_bytes(), value]).await,
            Op::Get { key } => self.kv(Kv::Get, &[key.as_bytes()]).await,
            Op::Update { key, value } => self.kv(Kv::Update, &[key.as_bytes(), value]).await,
            Op::Delete { key } => self.kv(Kv::Delete, &[key.as_bytes()]).await,
            Op::Native {
                op: NativeOp::Sql(SqlOp { id, query, .. }),
                args,
                capture,
            } => self.native(*id, query, args, capture).await,
            Op::Native {
                op: NativeOp::Record(op),
                args,
                ..
            } => {
                let plan = self.prepared.records.plan(op, args, false)?;
                self.native(plan.id, &plan.query, &plan.args(args), false)
                    .await
            }
            Op::Native { .. } => Err(crate::targets::unsupported(op, "postgres://")),
            Op::Begin => self.conn.tx(Tx::Begin).await,
            Op::Commit => self.conn.tx(Tx::Commit).await,
            Op::Rollback => self.batch("ROLLBACK").await.map(|()| Outcome::default()),
        }
    }

    pub(super) async fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        self.conn.simple(sql, 0).await.map(drop)
    }

    pub(super) async fn server_version(&mut self) -> Option<String> {
        let reply = self.conn.simple("SHOW server_version", 1).await.ok()?;
        let v = reply.rows.first()?.first()?;
        Some(format!("PostgreSQL {}", String::from_utf8_lossy(v)))
    }

    /// loadrig's tables in the current schema.
    pub(super) async fn namespace_tables(&mut self) -> Result<Vec<String>, OpError> {
        let reply = self
            .conn
            .simple(Dialect::Postgres.list_tables(), usize::MAX)
            .await?;
        Ok(reply
            .rows
            .iter()
            .map(|r| String::from_utf8_lossy(r.first().map_or(&[][..], |v| v)).into_owned())
            .collect())
    }

    pub(super) async fn cleanup(&mut self) -> Result<u64, OpError> {
        let schema = self.drop_backsql_schema().await?;
        let names = self.namespace_tables().await?;
        if names.is_empty() {
            return Ok(schema);
        }
        if names.iter().any(|n| n == "loadrig_documents") {
            self.batch(documents::UNLINK_ALL).await?;
        }
        self.batch(&Dialect::Postgres.drop_tables(&names)).await?;
        Ok(names.len() as u64 + schema)
    }

    /// The directory study's back-sql schema, when it exists: 1 dropped, else 0.
    async fn drop_backsql_schema(&mut self) -> Result<u64, OpError> {
        if self
            .conn
            .simple(super::backsql::EXISTS, 1)
            .await?
            .rows
            .is_empty()
        {
            return Ok(0);
        }
        self.batch(&super::backsql::drop_statement()).await?;
        Ok(1)
    }

    /// [`super::COPY_BEGIN`], the binary COPY of `records`, then [`super::COPY_MERGE`]
    /// (rolled back on an error), as on tokio-postgres.
    pub(super) async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        let data = super::copy_data(records)?;
        self.batch(super::COPY_BEGIN).await?;
        let result = self.conn.copy_in(&data).await;
        let result = match result {
            Ok(()) => self.batch(super::COPY_MERGE).await,
            Err(e) => Err(e),
        };
        if result.is_err() && !self.conn.pending {
            let _ = self.batch("ROLLBACK").await;
        }
        result
    }

    pub(super) async fn load_records(
        &mut self,
        records: &[(String, Vec<Vec<u8>>)],
    ) -> Result<(), OpError> {
        self.batch("BEGIN").await?;
        let mut done = Ok(());
        for (query, args) in super::insert_statements(records) {
            let id = self.prepared.record_id(&query);
            if let Err(e) = self.native(id, &query, &args, false).await {
                done = Err(e);
                break;
            }
        }
        self.batch(if done.is_ok() { "COMMIT" } else { "ROLLBACK" })
            .await?;
        done
    }
}

impl Conn {
    async fn copy_in(&mut self, data: &[u8]) -> Result<(), OpError> {
        frontend::query(super::COPY_IN, &mut self.out).map_err(|e| lost(&e.to_string()))?;
        // The reply to COPY FROM STDIN is CopyInResponse ('G'), or an error and ReadyForQuery.
        let at = self.round_trip(copy_or_ready).await?;
        let frame = &self.inbuf[at];
        if last_tag(frame) != Some(b'G') {
            return simple_reply(frame, 0).map(drop);
        }
        let len = i32::try_from(data.len() + 4).map_err(|_| {
            OpError::new(
                ErrorClass::Other,
                "a load batch over 2 GiB: load smaller batches",
            )
        })?;
        self.out.extend_from_slice(b"d");
        self.out.extend_from_slice(&len.to_be_bytes());
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(&[b'c', 0, 0, 0, 4]);
        let at = self.round_trip(wire::frame_len).await?;
        let frame = &self.inbuf[at];
        simple_reply(frame, 0).map(drop)
    }
}

/// `args` converted to `st`'s parameter types; an unknown type goes as text (NULL if empty).
fn converted<'a>(
    args: &'a [Vec<u8>],
    st: &'a Statement,
) -> impl Iterator<Item = Result<Param<'a>, OpError>> {
    args.iter()
        .zip(&st.params)
        .enumerate()
        .map(|(i, (a, ty))| match ty {
            Some(ty) => convert(i, a, ty),
            None if a.is_empty() => Ok(Param::Null),
            None => Ok(Param::Text(a)),
        })
}

/// The tag of a frame's last message.
fn last_tag(frame: &[u8]) -> Option<u8> {
    let (mut at, mut last) = (0, None);
    while let Ok(Some((tag, len))) = wire::message(&frame[at..]) {
        last = Some(tag);
        at += len;
    }
    last
}

/// A reply to COPY FROM STDIN ends at CopyInResponse or at ReadyForQuery.
fn copy_or_ready(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    while let Some((tag, len)) = wire::message(&buf[at..])? {
        at += len;
        if tag == b'G' || tag == b'Z' {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

/// The first ErrorResponse of a frame as the operation's error.
fn first_error(frame: &[u8]) -> Option<OpError> {
    let mut at = 0;
    while let Ok(Some((tag, len))) = wire::message(&frame[at..]) {
        if tag == b'E' {
            return Some(wire::server_error(&frame[at + 5..at + len]));
        }
        at += len;
    }
    None
}

/// A statement from its ParameterDescription ('t') and RowDescription ('T') messages.
fn describe(frame: &[u8], name: String) -> Result<Rc<Statement>, OpError> {
    let bad = || OpError::new(ErrorClass::Protocol, "a malformed statement description");
    let mut st = Statement {
        name,
        params: Vec::new(),
        columns: Vec::new(),
    };
    let mut at = 0;
    while let Ok(Some((tag, len))) = wire::message(&frame[at..]) {
        let mut body = Reader(&frame[at + 5..at + len]);
        at += len;
        if tag == b't' {
            for _ in 0..body.i16().ok_or_else(bad)? {
                st.params.push(Type::from_oid(body.u32().ok_or_else(bad)?));
            }
        } else if tag == b'T' {
            for _ in 0..body.i16().ok_or_else(bad)? {
                let name = body.cstr().ok_or_else(bad)?;
                body.skip(6).ok_or_else(bad)?; // table oid, column number
                let oid = body.u32().ok_or_else(bad)?;
                body.skip(8).ok_or_else(bad)?; // size, modifier, format
                st.columns.push((name, Type::from_oid(oid)));
            }
        }
    }
    Ok(Rc::new(st))
}

/// Big-endian fields read off a message body.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(drop)
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn cstr(&mut self) -> Option<String> {
        let end = self.0.iter().position(|&b| b == 0)?;
        let s = String::from_utf8_lossy(&self.0[..end]).into_owned();
        self.0 = &self.0[end + 1..];
        Some(s)
    }
}

/// A simple query's reply.
struct Simple {
    count: u64,
    rows: Vec<Vec<Vec<u8>>>,
}

fn simple_reply(frame: &[u8], keep: usize) -> Result<Simple, OpError> {
    let mut reply = Simple {
        count: 0,
        rows: Vec::new(),
    };
    let mut at = 0;
    while let Ok(Some((tag, len))) = wire::message(&frame[at..]) {
        let body = &frame[at + 5..at + len];
        match tag {
            b'D' if reply.rows.len() < keep => {
                reply.rows.push(
                    row_values(body)?
                        .into_iter()
                        .map(|v| v.unwrap_or_default().to_vec())
                        .collect(),
                );
            }
            b'C' => reply.count += wire::command_count(body),
            b'E' => return Err(wire::server_error(body)),
            _ => {}
        }
        at += len;
    }
    Ok(reply)
}

/// A DataRow's values (`None`: NULL).
fn row_values(body: &[u8]) -> Result<Vec<Option<&[u8]>>, OpError> {
    let bad = || OpError::new(ErrorClass::Protocol, "a malformed DataRow");
    let n = i16::from_be_bytes(
        body.get(..2)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    );
    let mut at = 2;
    let mut values = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n {
        let len = i32::from_be_bytes(
            body.get(at..at + 4)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        at += 4;
        if len < 0 {
            values.push(None);
            continue;
        }
        let end = at + len as usize;
        values.push(Some(body.get(at..end).ok_or_else(bad)?));
        at = end;
    }
    Ok(values)
}

/// Rows read (or affected, for a statement without columns), the first captured with
/// `styles`; or the server's error.
fn outcome(
    frame: &[u8],
    st: &Statement,
    styles: Option<&text::Styles>,
) -> Result<Outcome, OpError> {
    let (mut rows, mut tagged) = (0u64, 0u64);
    let mut captured = Vec::new();
    let mut at = 0;
    while let Ok(Some((tag, len))) = wire::message(&frame[at..]) {
        let body = &frame[at + 5..at + len];
        match tag {
            b'D' => {
                if let (Some(styles), 0) = (styles, rows) {
                    captured = capture(st, body, styles)?;
                }
                rows += 1;
            }
            b'C' => tagged = wire::command_count(body),
            b'E' => return Err(wire::server_error(body)),
            _ => {}
        }
        at += len;
    }
    if st.columns.is_empty() {
        return Ok(sql::affected(tagged, styles.is_some()));
    }
    Ok(Outcome {
        rows,
        captured,
        rolled_back: false,
    })
}

/// A row's values as the text the server prints for them, as [`super::captured`] does.
fn capture(st: &Statement, body: &[u8], styles: &text::Styles) -> Result<Vec<Vec<u8>>, OpError> {
    let values = row_values(body)?;
    let mut out = Vec::with_capacity(values.len());
    for (value, (name, ty)) in values.into_iter().zip(&st.columns) {
        out.push(match (value, ty) {
            (None, _) => Vec::new(),
            (Some(raw), None) => raw.to_vec(),
            (Some(raw), Some(ty)) => {
                text::to_text(ty, raw, styles).map_err(|why| super::uncapturable(name, &why))?
            }
        });
    }
    Ok(out)
}

/// Bind `params` to `st` in the unnamed portal; results in binary where the type is known.
fn bind<'a>(
    out: &mut BytesMut,
    st: &Statement,
    params: &mut dyn Iterator<Item = Result<Param<'a>, OpError>>,
) -> Result<(), OpError> {
    let too_many = || OpError::new(ErrorClass::Other, "over 32767 parameters or a 2 GiB value");
    let start = out.len();
    out.extend_from_slice(&[b'B', 0, 0, 0, 0, 0]);
    out.extend_from_slice(st.name.as_bytes());
    out.extend_from_slice(&[0]);
    let n = i16::try_from(st.params.len()).map_err(|_| too_many())?;
    out.extend_from_slice(&n.to_be_bytes());
    // The format codes, filled in as each value's conversion decides.
    let formats = out.len();
    out.resize(formats + 2 * n as usize, 0);
    out.extend_from_slice(&n.to_be_bytes());
    for (i, p) in params.enumerate() {
        let p = p?;
        let binary = !matches!(p, Param::Text(_));
        out[formats + 2 * i + 1] = u8::from(binary);
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        let len = match p.to_sql(&Type::BYTEA, out) {
            Ok(IsNull::Yes) => -1,
            Ok(IsNull::No) => i32::try_from(out.len() - at - 4).map_err(|_| too_many())?,
            Err(e) => return Err(OpError::new(ErrorClass::Other, e.to_string())),
        };
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    let cols = i16::try_from(st.columns.len()).map_err(|_| too_many())?;
    out.extend_from_slice(&cols.to_be_bytes());
    for (_, ty) in &st.columns {
        out.extend_from_slice(&i16::from(ty.is_some()).to_be_bytes());
    }
    let len = i32::try_from(out.len() - start - 1).map_err(|_| too_many())?;
    out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_sends_each_value_in_its_format_and_known_columns_in_binary() {
        let st = Statement {
            name: "s0".into(),
            params: vec![Some(Type::INT4), Some(Type::NUMERIC)],
            columns: vec![("a".into(), Some(Type::INT4)), ("b".into(), None)],
        };
        let args: [&[u8]; 2] = [b"7", b"1.5"];
        let mut params = args
            .iter()
            .zip(&st.params)
            .enumerate()
            .map(|(i, (a, ty))| convert(i, a, ty.as_ref().unwrap()));
        let mut out = BytesMut::new();
        bind(&mut out, &st, &mut params).unwrap();
        let mut body: Vec<u8> = b"\0s0\0".to_vec();
        body.extend_from_slice(&[0, 2, 0, 1, 0, 0]); // formats: int4 binary, numeric text
        body.extend_from_slice(&[0, 2, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 3]);
        body.extend_from_slice(b"1.5");
        body.extend_from_slice(&[0, 2, 0, 1, 0, 0]); // results: int4 binary, unknown text
        let mut expected = vec![b'B'];
        expected.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        expected.extend_from_slice(&body);
        assert_eq!(&out[..], &expected[..]);
        let bad = [Ok(Param::Null), Err(OpError::new(ErrorClass::Other, "no"))];
        assert!(bind(&mut BytesMut::new(), &st, &mut bad.into_iter()).is_err());
    }

    #[test]
    fn data_row_values_and_nulls() {
        let row = [0, 2, 0, 0, 0, 1, b'x', 0xff, 0xff, 0xff, 0xff];
        assert_eq!(row_values(&row).unwrap(), vec![Some(&b"x"[..]), None]);
        assert!(row_values(&row[..6]).is_err(), "a value cut short");
    }
}
