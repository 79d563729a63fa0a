//! `dbm://PATH`: an embedded key-value store of the dbm family, redb (pure Rust, one file).
//!
//! Records live in the table `loadrig_kv` (key text, value bytes) of the database file at
//! PATH; other tables in the file are never touched. `reopen=each` opens the file for every
//! operation, does it in one transaction and closes the file again, as seed 003's Dbm
//! opened its Berkeley DB table for each record; `reopen=never` (the default) keeps it open.
//! redb lets a process hold a file open once, so sessions share one open database, and with
//! `reopen=each` the opens of one process take turns (like the seed's DbmSession, one at a
//! time). Every write transaction commits durably; `sync=none` commits with
//! `Durability::None`, made durable when the file closes (so at each close with
//! `reopen=each`). Options come from the URL query or from workload parameters.
//! Errors: the file held by another process → timeout, a file that is not a redb database
//! or whose table has other types → protocol, I/O and everything else → other; failing to
//! open when a session connects → connect.

use std::future::{ready, Future};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    TableError,
};

use super::{Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::vocab::{ErrorClass, Op, OpError, Outcome};

/// The table that holds everything this target creates.
pub const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("loadrig_kv");

/// The crate and version recorded as the server version (a unit test checks Cargo.lock).
pub const ENGINE: &str = "redb 4.6.0";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reopen {
    Each,
    Never,
}

pub struct Dbm {
    path: PathBuf,
    reopen: Reopen,
    durability: Durability,
    /// The file as this target's sessions have it open: shared while any session holds it
    /// (`reopen=never`); held locked for the whole of each operation with `reopen=each`.
    open: Arc<Mutex<Weak<Database>>>,
}

impl Dbm {
    pub fn open(url: &TargetUrl, params: &Params) -> Result<Dbm, InputError> {
        url.check_options(&["reopen", "sync"])?;
        if url.location.is_empty() {
            return Err(InputError::new(
                "dbm:// needs a file path, like dbm://./sessions.redb",
            ));
        }
        let reopen = match url.option("reopen", params).as_deref() {
            None | Some("never") => Reopen::Never,
            Some("each") => Reopen::Each,
            Some(other) => {
                return Err(InputError::new(format!(
                    "dbm:// reopen={other}: expected each (open and close the file for every operation) or never"
                )))
            }
        };
        let durability = match url.option("sync", params).as_deref() {
            None | Some("each") => Durability::Immediate,
            Some("none") => Durability::None,
            Some(other) => {
                return Err(InputError::new(format!(
                    "dbm:// sync={other}: expected each (every commit durable) or none"
                )))
            }
        };
        Ok(Dbm {
            path: PathBuf::from(&url.location),
            reopen,
            durability,
            open: Arc::new(Mutex::new(Weak::new())),
        })
    }
}

/// The error class of a redb failure.
fn classify(e: redb::Error) -> OpError {
    let class = match e {
        redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch => ErrorClass::Timeout,
        redb::Error::Corrupted(_)
        | redb::Error::UpgradeRequired(_)
        | redb::Error::TableTypeMismatch { .. }
        | redb::Error::TableIsMultimap(_)
        | redb::Error::TypeDefinitionChanged { .. } => ErrorClass::Protocol,
        _ => ErrorClass::Other,
    };
    OpError::new(class, e.to_string())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A client that panicked holding the lock left nothing half-done in it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct DbmSession {
    path: PathBuf,
    durability: Durability,
    /// The shared open file with `reopen=never`; `None` with `reopen=each`.
    db: Option<Arc<Database>>,
    open: Arc<Mutex<Weak<Database>>>,
    buf: Vec<u8>,
}

impl Target for Dbm {
    fn from_url(url: &TargetUrl, params: &Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = DbmSession;

    fn blocking(&self) -> bool {
        true
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some("an embedded store: a client is a thread calling redb, with no connection to keep several operations on")
    }

    /// The database file and its lock.
    fn files_per_client(&self) -> usize {
        2
    }

    /// Opens the file (creating it); with `reopen=each` only to check that it opens.
    fn connect(&self) -> impl Future<Output = Result<DbmSession, OpError>> {
        let connected = || -> Result<DbmSession, redb::Error> {
            let mut shared = lock(&self.open);
            let db = match self.reopen {
                Reopen::Each => {
                    Database::create(&self.path)?.close()?;
                    None
                }
                Reopen::Never => Some(match shared.upgrade() {
                    Some(db) => db,
                    None => {
                        let db = Arc::new(Database::create(&self.path)?);
                        *shared = Arc::downgrade(&db);
                        db
                    }
                }),
            };
            Ok(DbmSession {
                path: self.path.clone(),
                durability: self.durability,
                db,
                open: self.open.clone(),
                buf: Vec::new(),
            })
        };
        ready(connected().map_err(|e| {
            let mut err = classify(e);
            err.class = ErrorClass::Connect;
            err.message = format!("cannot open {}: {}", self.path.display(), err.message);
            err
        }))
    }
}

impl DbmSession {
    /// Run `work` on the open database; with `reopen=each`, open the file for it and close
    /// it after, holding the lock so that no other session of this process opens it meanwhile.
    fn with_db<R>(
        &self,
        work: impl FnOnce(&Database) -> Result<R, redb::Error>,
    ) -> Result<R, redb::Error> {
        if let Some(db) = &self.db {
            return work(db);
        }
        let _turn = lock(&self.open);
        let db = Database::create(&self.path)?;
        let out = work(&db)?;
        db.close()?;
        Ok(out)
    }

    /// One write transaction, committed when `work` reports a change (a count above 0).
    fn write(
        &self,
        work: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<u64, redb::Error>,
    ) -> Result<u64, redb::Error> {
        let durability = self.durability;
        self.with_db(|db| {
            let mut tx = db.begin_write()?;
            tx.set_durability(durability)?;
            let rows = work(&mut tx.open_table(TABLE)?)?;
            if rows > 0 {
                tx.commit()?;
            }
            Ok(rows)
        })
    }

    fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let rows = match *op {
            Op::Nop => Ok(0),
            Op::Native { .. } | Op::Begin | Op::Commit | Op::Rollback => {
                return Err(super::unsupported(op, "dbm://"))
            }
            Op::Put { key, value } => self.write(|t| {
                t.insert(key, value)?;
                Ok(1)
            }),
            // As fs:// does: updating a key that is not there changes nothing (0 rows).
            Op::Update { key, value } => self.write(|t| {
                if t.get(key)?.is_none() {
                    return Ok(0);
                }
                t.insert(key, value)?;
                Ok(1)
            }),
            Op::Delete { key } => self.write(|t| Ok(u64::from(t.remove(key)?.is_some()))),
            Op::Get { key } => self.get(key),
        };
        Ok(Outcome::rows(rows.map_err(classify)?))
    }

    /// Read one record into the session's buffer; 0 rows when it (or the table) is missing.
    fn get(&mut self, key: &str) -> Result<u64, redb::Error> {
        let mut buf = std::mem::take(&mut self.buf);
        let found = self.with_db(|db| {
            let table = match db.begin_read()?.open_table(TABLE) {
                Ok(t) => t,
                Err(TableError::TableDoesNotExist(_)) => return Ok(0),
                Err(e) => return Err(e.into()),
            };
            Ok(match table.get(key)? {
                Some(v) => {
                    buf.clear();
                    buf.extend_from_slice(v.value());
                    1
                }
                None => 0,
            })
        });
        self.buf = buf;
        found
    }

    /// Drop `loadrig_kv`; returns how many records it held.
    fn drop_table(&self) -> Result<u64, redb::Error> {
        self.with_db(|db| {
            let tx = db.begin_write()?;
            // A loadrig_kv of other types (not ours to read) still goes.
            let records = match tx.open_table(TABLE) {
                Ok(t) => t.len()?,
                Err(TableError::TableTypeMismatch { .. }) => 0,
                Err(e) => return Err(e.into()),
            };
            tx.delete_table(TABLE)?;
            tx.commit()?;
            Ok(records)
        })
    }
}

impl Session for DbmSession {
    fn setup(&mut self) -> impl Future<Output = Result<(), OpError>> {
        // Opening the table in a write transaction creates it; 1 makes it commit.
        ready(self.write(|_| Ok(1)).map(drop).map_err(classify))
    }

    fn server_version(&mut self) -> impl Future<Output = Option<String>> {
        ready(Some(ENGINE.to_string()))
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        ready(self.run(op))
    }

    /// Remove the `loadrig_kv` table; other tables, and the file itself, stay.
    fn cleanup(&mut self) -> impl Future<Output = Result<u64, OpError>> {
        ready(self.drop_table().map_err(classify))
    }

    /// One write transaction for the whole batch.
    fn load(&mut self, records: &[(String, Vec<u8>)]) -> impl Future<Output = Result<(), OpError>> {
        let stored = self.write(|t| {
            for (k, v) in records {
                t.insert(k.as_str(), v.as_slice())?;
            }
            Ok(records.len() as u64)
        });
        ready(stored.map(drop).map_err(classify))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_names_the_locked_redb_version() {
        let lock = include_str!("../../Cargo.lock");
        let version = lock
            .split("[[package]]")
            .find(|p| p.contains("\nname = \"redb\"\n"))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .expect("redb in Cargo.lock");
        assert_eq!(ENGINE, format!("redb {}", version.trim_matches('"')));
    }

    #[test]
    fn options_are_checked() {
        let url = |u: &str| TargetUrl::parse(u).unwrap();
        let none = Params::new();
        let d = Dbm::open(&url("dbm://./s.redb?reopen=each&sync=none"), &none).unwrap();
        assert_eq!(d.reopen, Reopen::Each);
        assert!(matches!(d.durability, Durability::None));
        assert!(Dbm::open(&url("dbm://./s.redb?reopen=sometimes"), &none).is_err());
        assert!(Dbm::open(&url("dbm://./s.redb?sync=full"), &none).is_err());
        assert!(Dbm::open(&url("dbm://./s.redb?shards=4"), &none).is_err());
        assert!(Dbm::open(&url("dbm://"), &none).is_err());
    }
}
