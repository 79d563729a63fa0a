//! `sqlite://PATH`: the embedded default, SQLite (bundled) in WAL mode.
//!
//! Records live in the table `loadrig_kv(k TEXT PRIMARY KEY, v BLOB)`; loadrig touches no
//! other table. Each client opens its own connection on its own thread (SQLite blocks).
//! Options: `sync=off|normal|full` (PRAGMA synchronous, default normal); `attachment=PATH`
//! or `attachment_size=N` (see [`super::attachment`]): each document's attachment is kept
//! in `loadrig_attachment(k, n, chunk)`, one row per 64 KiB piece, written in the document's
//! transaction and read back row by row, so no client holds a whole attachment.
//! Errors: SQLITE_BUSY/LOCKED → timeout, constraint violations → constraint,
//! CANTOPEN/NOTADB → connect, everything else → other.

use std::future::{ready, Future};
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::attachment::{self, Attachment};
use super::sql::{self, Dialect, Isolation, Kv};
use super::{Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::vocab::{ErrorClass, Family, NativeOp, Op, OpError, Outcome, RunStep, SqlOp};

pub struct Sqlite {
    path: PathBuf,
    synchronous: &'static str,
    attachment: Option<Attachment>,
}

const CREATE_ATTACHMENT: &str = "CREATE TABLE IF NOT EXISTS loadrig_attachment (k TEXT NOT NULL, n INTEGER NOT NULL, chunk BLOB NOT NULL, PRIMARY KEY (k, n))";

impl Sqlite {
    pub fn open(url: &TargetUrl, params: &Params) -> Result<Sqlite, InputError> {
        url.check_options(&["sync", "attachment", "attachment_size", "isolation"])?;
        match Isolation::from_options(url, params)? {
            None | Some(Isolation::Serializable) => {}
            Some(weaker) => {
                return Err(InputError::new(format!(
                    "sqlite:// isolation={}: SQLite has no weaker isolation between connections",
                    weaker.name()
                ))
                .help("SQLite serializes writers: every transaction is serializable; leave the option out or write isolation=serializable"))
            }
        }
        if url.location.is_empty() {
            return Err(InputError::new(
                "sqlite:// needs a file path, like sqlite://./bench.db",
            ));
        }
        let synchronous = match url.options.get("sync").map(String::as_str) {
            None | Some("normal") => "NORMAL",
            Some("off") => "OFF",
            Some("full") => "FULL",
            Some(other) => {
                return Err(InputError::new(format!(
                    "sqlite:// sync={other}: expected off, normal or full"
                )))
            }
        };
        Ok(Sqlite {
            path: PathBuf::from(&url.location),
            synchronous,
            attachment: Attachment::from_options(url, params)?,
        })
    }
}

fn classify(e: rusqlite::Error) -> OpError {
    let class = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => ErrorClass::Timeout,
        Some(ErrorCode::ConstraintViolation) => ErrorClass::Constraint,
        Some(ErrorCode::CannotOpen | ErrorCode::NotADatabase | ErrorCode::PermissionDenied) => {
            ErrorClass::Connect
        }
        _ => ErrorClass::Other,
    };
    OpError::new(class, e.to_string())
}

pub struct SqliteSession {
    conn: Connection,
    /// Record statements by shape.
    records: sql::RecordCache,
    attachment: Option<Attachment>,
    chunk: Vec<u8>,
}

impl Target for Sqlite {
    fn from_url(url: &TargetUrl, params: &Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = SqliteSession;

    fn blocking(&self) -> bool {
        true
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some("an embedded database: a client is a thread calling SQLite, with no connection to keep several operations on")
    }

    /// The database file, its WAL and its shared-memory index.
    fn files_per_client(&self) -> usize {
        3
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Sql, Family::Record]
    }

    fn connect(&self) -> impl Future<Output = Result<SqliteSession, OpError>> {
        let open = || -> Result<SqliteSession, rusqlite::Error> {
            let conn = Connection::open_with_flags(
                &self.path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            conn.busy_timeout(Duration::from_secs(5))?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", self.synchronous)?;
            // Room for the record statements too: one per field read or updated alone.
            conn.set_prepared_statement_cache_capacity(256);
            Ok(SqliteSession {
                conn,
                records: sql::RecordCache::default(),
                attachment: self.attachment.clone(),
                chunk: Vec::new(),
            })
        };
        ready(open().map_err(|e| {
            let mut err = classify(e);
            err.class = ErrorClass::Connect;
            err.message = format!("cannot open {}: {}", self.path.display(), err.message);
            err
        }))
    }
}

impl SqliteSession {
    fn run(&mut self, op: &Op<'_>) -> Result<Outcome, rusqlite::Error> {
        let rows = match *op {
            Op::Nop => 0,
            Op::Native {
                op: NativeOp::Sql(SqlOp { query, .. }),
                args,
                capture,
            } => return self.sql(query, args, capture),
            Op::Native {
                op: NativeOp::Record(op),
                args,
                ..
            } => {
                let plan = self
                    .records
                    .plan(op, args, false)
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.message.into()))?;
                return self.sql(&plan.query, &plan.args(args), false);
            }
            // Every other family: the runner refuses them before anything runs.
            Op::Native { .. } => return Err(rusqlite::Error::InvalidQuery),
            Op::Begin => {
                self.conn.execute_batch("BEGIN IMMEDIATE")?;
                0
            }
            Op::Commit => {
                self.conn.execute_batch("COMMIT")?;
                0
            }
            Op::Rollback => {
                self.conn.execute_batch("ROLLBACK")?;
                0
            }
            Op::Put { key, value } => self
                .conn
                .prepare_cached(Dialect::Sqlite.kv(Kv::Put))?
                .execute(params![key, value])? as u64,
            Op::Get { key } => self
                .conn
                .prepare_cached(Dialect::Sqlite.kv(Kv::Get))?
                .query_row(params![key], |_| Ok(()))
                .optional()?
                .map_or(0, |_| 1),
            Op::Update { key, value } => self
                .conn
                .prepare_cached(Dialect::Sqlite.kv(Kv::Update))?
                .execute(params![key, value])? as u64,
            Op::Delete { key } => self
                .conn
                .prepare_cached(Dialect::Sqlite.kv(Kv::Delete))?
                .execute(params![key])? as u64,
        };
        Ok(Outcome::rows(rows))
    }

    /// A put with its attachment, in one transaction (the caller's, if one is open).
    fn put_attached(&mut self, key: &str, value: &[u8], a: &Attachment) -> Result<u64, OpError> {
        let own = self.conn.is_autocommit();
        if own {
            self.conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(classify)?;
        }
        let mut write = || -> Result<u64, OpError> {
            let n = self
                .conn
                .prepare_cached(Dialect::Sqlite.kv(Kv::Put))
                .and_then(|mut st| st.execute(params![key, value]))
                .map_err(classify)?;
            self.conn
                .prepare_cached("DELETE FROM loadrig_attachment WHERE k = ?1")
                .and_then(|mut st| st.execute([key]))
                .map_err(classify)?;
            let mut insert = self
                .conn
                .prepare_cached("INSERT INTO loadrig_attachment (k, n, chunk) VALUES (?1, ?2, ?3)")
                .map_err(classify)?;
            let mut chunks = a.chunks(key)?;
            let mut i = 0i64;
            while chunks.next_into(&mut self.chunk)? {
                insert
                    .execute(params![key, i, &self.chunk[..]])
                    .map_err(classify)?;
                i += 1;
            }
            Ok(n as u64)
        };
        let result = write();
        if own {
            let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
            self.conn.execute_batch(end).map_err(classify)?;
        }
        result
    }

    /// A get that reads the attachment back row by row and checks it.
    fn get_attached(&mut self, key: &str, a: &Attachment) -> Result<u64, OpError> {
        let found = self
            .conn
            .prepare_cached(Dialect::Sqlite.kv(Kv::Get))
            .and_then(|mut st| st.query_row([key], |_| Ok(())).optional())
            .map_err(classify)?;
        if found.is_none() {
            return Err(attachment::missing(key));
        }
        let mut check = a.check(key)?;
        let mut st = self
            .conn
            .prepare_cached("SELECT chunk FROM loadrig_attachment WHERE k = ?1 ORDER BY n")
            .map_err(classify)?;
        let mut rows = st.query([key]).map_err(classify)?;
        while let Some(row) = rows.next().map_err(classify)? {
            let piece = row.get_ref(0).map_err(classify)?.as_blob().map_err(|e| {
                OpError::new(ErrorClass::Protocol, format!("attachment of {key}: {e}"))
            })?;
            check.feed(piece)?;
        }
        check.finish()?;
        Ok(1)
    }

    /// The kv operations on documents with attachments; none for any other operation.
    fn attached(&mut self, op: &Op<'_>) -> Option<Result<Outcome, OpError>> {
        let a = self.attachment.take()?;
        let result = match *op {
            Op::Put { key, value } => Some(self.put_attached(key, value, &a)),
            Op::Get { key } => Some(self.get_attached(key, &a)),
            Op::Delete { key } => Some(
                self.run(op)
                    .and_then(|o| {
                        self.conn
                            .execute("DELETE FROM loadrig_attachment WHERE k = ?1", [key])
                            .map(|_| o.rows)
                    })
                    .map_err(classify),
            ),
            _ => None,
        };
        self.attachment = Some(a);
        result.map(|r| r.map(Outcome::rows))
    }

    /// Run one statement; arguments bind as text, or as a blob when they are not UTF-8.
    /// `$N` is argument N wherever it stands: SQLite numbers named parameters in the order
    /// they first appear, so `... $2 ... $1 ...` would otherwise bind them swapped.
    fn sql(
        &mut self,
        query: &str,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, rusqlite::Error> {
        let mut st = self.conn.prepare_cached(query)?;
        if args.len() > st.parameter_count() {
            return Err(rusqlite::Error::InvalidParameterCount(
                args.len(),
                st.parameter_count(),
            ));
        }
        for index in 1..=st.parameter_count() {
            let n = st
                .parameter_name(index)
                .and_then(|name| name.strip_prefix('$')?.parse::<usize>().ok())
                .unwrap_or(index);
            let Some(a) = n.checked_sub(1).and_then(|k| args.get(k)) else {
                continue;
            };
            match std::str::from_utf8(a) {
                Ok(text) => st.raw_bind_parameter(index, text)?,
                Err(_) => st.raw_bind_parameter(index, a.as_slice())?,
            }
        }
        if st.column_count() == 0 {
            // SQLite's count of changed rows is the last INSERT, UPDATE or DELETE's: after
            // a CREATE or DROP it is stale. Only a statement that changed rows has its own.
            let before = self.conn.total_changes();
            let changed = st.raw_execute()?;
            let changed = if self.conn.total_changes() == before {
                0
            } else {
                changed
            };
            return Ok(sql::affected(changed as u64, capture));
        }
        let columns = st.column_count();
        let mut rows = st.raw_query();
        let mut out = Outcome::default();
        while let Some(row) = rows.next()? {
            if capture && out.rows == 0 {
                for c in 0..columns {
                    out.captured.push(match row.get_ref(c)? {
                        ValueRef::Null => Vec::new(),
                        ValueRef::Integer(i) => i.to_string().into_bytes(),
                        ValueRef::Real(f) => f.to_string().into_bytes(),
                        ValueRef::Text(t) | ValueRef::Blob(t) => t.to_vec(),
                    });
                }
            }
            out.rows += 1;
        }
        Ok(out)
    }

    fn load_batch(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), rusqlite::Error> {
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(Dialect::Sqlite.kv(Kv::Put))?;
            for (k, v) in records {
                insert.execute(params![k, v])?;
            }
        }
        tx.commit()
    }
}

impl Session for SqliteSession {
    fn setup(&mut self) -> impl Future<Output = Result<(), OpError>> {
        let mut result = self.conn.execute_batch(Dialect::Sqlite.create_kv());
        if self.attachment.is_some() {
            result = result.and_then(|()| self.conn.execute_batch(CREATE_ATTACHMENT));
        }
        ready(result.map_err(classify))
    }

    fn before_run(&mut self, step: &RunStep) -> impl Future<Output = Result<bool, OpError>> {
        let done = match Dialect::Sqlite.run_step(step) {
            Some(sql) => self.conn.execute_batch(&sql).map(|()| true),
            None => Ok(false),
        };
        ready(done.map_err(classify))
    }

    fn cleanup(&mut self) -> impl Future<Output = Result<u64, OpError>> {
        let drop_all = || -> Result<u64, rusqlite::Error> {
            let names: Vec<String> = self
                .conn
                .prepare(Dialect::Sqlite.list_tables())?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            // SQLite drops one table a statement.
            for name in &names {
                self.conn
                    .execute_batch(&Dialect::Sqlite.drop_tables(std::slice::from_ref(name)))?;
            }
            Ok(names.len() as u64)
        };
        ready(drop_all().map_err(classify))
    }

    fn server_version(&mut self) -> impl Future<Output = Option<String>> {
        ready(Some(format!("SQLite {}", rusqlite::version())))
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        ready(match self.attached(op) {
            Some(result) => result,
            None => self.run(op).map_err(classify),
        })
    }

    fn load(&mut self, records: &[(String, Vec<u8>)]) -> impl Future<Output = Result<(), OpError>> {
        ready(self.load_batch(records).map_err(classify))
    }

    fn create_records(
        &mut self,
        layout: crate::vocab::RecordLayout,
    ) -> impl Future<Output = Result<(), OpError>> {
        let [drop, create] = sql::create_records(layout.fields);
        ready(
            self.conn
                .execute_batch(&drop)
                .and_then(|()| self.conn.execute_batch(&create))
                .map_err(classify),
        )
    }

    /// One transaction per batch.
    async fn load_records(&mut self, records: &[(String, Vec<Vec<u8>>)]) -> Result<(), OpError> {
        self.conn.execute_batch("BEGIN").map_err(classify)?;
        let done = super::insert_records(self, records).await;
        let end = if done.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.conn.execute_batch(end).map_err(classify)?;
        done
    }
}
