//! A connection for statements outside any run: an experiment's server settings
//! (`crate::experiment`) read, changed and restored on the URL the user gave for them, on
//! tokio-postgres as the target's other sessions are (TLS and Unix sockets included).
//! Simple queries only, every value as text.

use tokio_postgres::SimpleQueryMessage;

use super::{Postgres, TokioSession};
use crate::error::InputError;
use crate::targets::{Params, TargetUrl};

pub struct Admin {
    // Dropped before the runtime it runs on.
    session: TokioSession,
    runtime: tokio::runtime::Runtime,
}

impl Admin {
    /// Connect as `url` says; a bad URL is an input error, a refused connection an error
    /// with the server's message (never the password).
    pub fn connect(url: &TargetUrl) -> anyhow::Result<Admin> {
        let pg = Postgres::open(url, &Params::new())?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let session = runtime
            .block_on(pg.connect_tokio())
            .map_err(|e| anyhow::anyhow!("{}: {}", pg.shown, e.message))?;
        Ok(Admin { session, runtime })
    }

    /// Run `sql` (one or more statements); the rows of every statement, each value as text.
    pub fn query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        let client = &self.session.client;
        let messages = self
            .runtime
            .block_on(client.simple_query(sql))
            .map_err(|e| match e.as_db_error() {
                Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
                None => e.to_string(),
            })?;
        Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    }
}

/// Whether `url` names PostgreSQL through a form [`Admin`] can use.
pub fn check(url: &TargetUrl) -> Result<(), InputError> {
    Postgres::open(url, &Params::new()).map(drop)
}
