//! `sqlite://PATH`: the embedded default, SQLite (bundled) in WAL mode.
//!
//! Records live in the table `loadrig_kv(k TEXT PRIMARY KEY, v BLOB)`; loadrig touches no
//! other table. Each client opens its own connection on its own thread (SQLite blocks).
//! Options: `sync=off|normal|full` (PRAGMA synchronous, default normal).
//! Errors: SQLITE_BUSY/LOCKED → timeout, constraint violations → constraint,
//! CANTOPEN/NOTADB → connect, everything else → other.

use std::future::{ready, Future};
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::sql::{Dialect, Kv};
use super::{Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::vocab::{ErrorClass, Family, NativeOp, Op, OpError, Outcome};

pub struct Sqlite {
    path: PathBuf,
    synchronous: &'static str,
}

impl Sqlite {
    pub fn open(url: &TargetUrl) -> Result<Sqlite, InputError> {
        url.check_options(&["sync"])?;
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
}

impl Target for Sqlite {
    fn from_url(url: &TargetUrl, _params: &Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    type Session = SqliteSession;

    fn blocking(&self) -> bool {
        true
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Sql]
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
            conn.set_prepared_statement_cache_capacity(32);
            Ok(SqliteSession { conn })
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
                op: NativeOp::Sql { query, .. },
                args,
                capture,
            } => return self.sql(query, args, capture),
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
            } => return Err(rusqlite::Error::InvalidQuery),
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

    /// Run one statement; arguments bind as text, or as a blob when they are not UTF-8.
    fn sql(
        &mut self,
        query: &str,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, rusqlite::Error> {
        let mut st = self.conn.prepare_cached(query)?;
        for (i, a) in args.iter().enumerate() {
            match std::str::from_utf8(a) {
                Ok(text) => st.raw_bind_parameter(i + 1, text)?,
                Err(_) => st.raw_bind_parameter(i + 1, a.as_slice())?,
            }
        }
        if st.column_count() == 0 {
            let changed = st.raw_execute()?;
            return Ok(Outcome::rows(changed as u64));
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
        ready(
            self.conn
                .execute_batch(Dialect::Sqlite.create_kv())
                .map_err(classify),
        )
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
        ready(self.run(op).map_err(classify))
    }

    fn load(&mut self, records: &[(String, Vec<u8>)]) -> impl Future<Output = Result<(), OpError>> {
        ready(self.load_batch(records).map_err(classify))
    }
}
