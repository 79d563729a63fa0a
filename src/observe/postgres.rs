//! PostgreSQL, on the observer's own connection (tokio-postgres, TLS as the postgres target
//! does): `pg_stat_database` of the current database, `pg_stat_wal`, the checkpointer and
//! background writer, pg_stat_statements when its extension is in the database, and
//! active-session sampling of `pg_stat_activity` between the boundaries.
//!
//! Every statement the observer sends names the alias `loadrig_observer`, so its own
//! entries in pg_stat_statements are told apart (left out of the statements, counted as its
//! cost). The views are read with `row_to_json`, so each server version's columns come as
//! they are.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::lock_waits::{LockTally, LockWaitSamples};
use super::notes::Notes;
use super::reading::{Reading, StatementTotal};
use super::record::{QueryValue, Role, WaitProfile, WaitShare};
use super::UserQuery;
use crate::error::InputError;
use crate::targets::endpoint::Endpoint;
use crate::targets::tls::Tls;
use crate::targets::TargetUrl;

/// How to reach the server, checked before the observer's thread starts.
pub struct PgPlan {
    config: Config,
    tls: Option<MakeRustlsConnect>,
    pub host: String,
    pub port: u16,
    /// The `application_name` the run's clients carry (the URL's, else `loadrig`).
    pub application_name: String,
}

impl PgPlan {
    pub fn parse(url: &TargetUrl) -> Result<PgPlan, InputError> {
        let on = match url.options.get("sslmode").map(String::as_str) {
            None | Some("disable") => false,
            Some("require" | "verify-ca" | "verify-full") => true,
            Some(other) => {
                return Err(InputError::new(format!(
                    "sslmode={other}: expected disable, require, verify-ca or verify-full"
                )))
            }
        };
        let tls = Tls::from_url(url, on)?;
        let ep = Endpoint::parse(url)?;
        let timeout = Endpoint::connect_timeout(url, Duration::from_secs(5))?;
        let user = ep.user.clone().unwrap_or_else(|| "postgres".to_string());
        let mut config = Config::new();
        config
            .host(&ep.host)
            .port(ep.port.unwrap_or(5432))
            .user(&user)
            .dbname(if ep.path.is_empty() { &user } else { &ep.path })
            .application_name("loadrig-observer")
            // Every transaction of the observer's is read-only, a user's queries' included;
            // set at login, so no statement of its own shows among the server's statements.
            .options("-c default_transaction_read_only=on")
            .connect_timeout(timeout)
            .ssl_mode(if on {
                SslMode::Require
            } else {
                SslMode::Disable
            });
        if let Some(p) = &ep.password {
            config.password(p.as_bytes());
        }
        Ok(PgPlan {
            config,
            tls: tls
                .config()
                .map(|c| MakeRustlsConnect::new(c.as_ref().clone())),
            host: ep.host.clone(),
            port: ep.port.unwrap_or(5432),
            application_name: url
                .options
                .get("application_name")
                .cloned()
                .unwrap_or_else(|| "loadrig".into()),
        })
    }

    async fn client(&self) -> Result<(Client, JoinHandle<()>), tokio_postgres::Error> {
        Ok(match &self.tls {
            None => {
                let (client, conn) = self.config.connect(NoTls).await?;
                (client, tokio::spawn(async move { drop(conn.await) }))
            }
            Some(tls) => {
                let (client, conn) = self.config.connect(tls.clone()).await?;
                (client, tokio::spawn(async move { drop(conn.await) }))
            }
        })
    }
}

/// The server's message for an error (a database error's own text, not the driver's prefix).
fn message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// pg_stat_statements as the observer reads it.
struct Statements {
    totals: Statement,
    texts: Statement,
    text_of: HashMap<String, String>,
    own: HashSet<String>,
    /// The observer's own execution time: at the first reading, and at the latest.
    own_first_ms: Option<f64>,
    own_last_ms: f64,
}

/// Active-session samples since the last boundary.
#[derive(Default)]
struct Tally {
    samples: u64,
    backends: u64,
    active: u64,
    idle_in_transaction: u64,
    hidden: u64,
    by: HashMap<(String, String), u64>,
}

impl Tally {
    fn take(&mut self) -> Option<WaitProfile> {
        let t = std::mem::take(self);
        if t.samples == 0 {
            return None;
        }
        let mut waits: Vec<WaitShare> =
            t.by.into_iter()
                .map(|((class, event), samples)| WaitShare {
                    class,
                    event,
                    samples,
                    share: samples as f64 / t.active.max(1) as f64,
                })
                .collect();
        waits.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| (&a.class, &a.event).cmp(&(&b.class, &b.event)))
        });
        Some(WaitProfile {
            samples: t.samples,
            backends: t.backends,
            active: t.active,
            idle_in_transaction: t.idle_in_transaction,
            hidden: t.hidden,
            waits,
        })
    }
}

pub struct PgSource {
    role: Role,
    client: Client,
    _conn: JoinHandle<()>,
    user: String,
    database: String,
    views: Statement,
    /// The view each column of `views` holds.
    view_names: Vec<&'static str>,
    ash: Statement,
    /// Sample only backends with this `application_name` (None: every client backend of the
    /// database but the observer's own).
    application_name: Option<String>,
    statements: Option<Statements>,
    tally: Tally,
    /// The statements of the backends that waited for a lock, since the last boundary.
    locks: LockTally,
    pub queries_sent: u64,
    /// The process serving the observer's connection: on this machine, a child of the
    /// server's root process (where the observer looks for it first).
    pub backend_pid: u32,
}

/// What the observer learns about the server when it connects.
struct Facts {
    version: i32,
    db_oid: i64,
    database: String,
    user: String,
    has_wal: bool,
    has_checkpointer: bool,
    pgss_schema: Option<String>,
    backend_pid: i32,
}

async fn facts(client: &Client) -> Result<Facts, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT current_setting('server_version_num')::int4, \
             (SELECT oid FROM pg_database WHERE datname = current_database())::int8, \
             current_database()::text, current_user::text, \
             to_regclass('pg_catalog.pg_stat_wal') IS NOT NULL, \
             to_regclass('pg_catalog.pg_stat_checkpointer') IS NOT NULL, \
             (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace \
              WHERE e.extname = 'pg_stat_statements') AS loadrig_observer, pg_backend_pid()",
            &[],
        )
        .await?;
    Ok(Facts {
        version: row.get(0),
        db_oid: row.get(1),
        database: row.get(2),
        user: row.get(3),
        has_wal: row.get(4),
        has_checkpointer: row.get(5),
        pgss_schema: row.get(6),
        backend_pid: row.get(7),
    })
}

/// The one statement that reads the statistics views at a boundary, and the view each of
/// its columns holds.
fn views_sql(f: &Facts) -> (String, Vec<&'static str>) {
    let mut names = vec!["pg_stat_database", "pg_stat_bgwriter"];
    let mut sql = format!(
        "SELECT (SELECT row_to_json(d)::text FROM pg_stat_database d WHERE d.datid = {}) AS loadrig_observer, \
         (SELECT row_to_json(b)::text FROM pg_stat_bgwriter b)",
        f.db_oid
    );
    for (has, view) in [
        (f.has_wal, "pg_stat_wal"),
        (f.has_checkpointer, "pg_stat_checkpointer"),
    ] {
        if has {
            sql.push_str(&format!(", (SELECT row_to_json(v)::text FROM {view} v)"));
            names.push(view);
        }
    }
    (sql, names)
}

impl PgSource {
    /// Connect and prepare; `Err` is the server's refusal (the run goes on without this
    /// source). `sample_app`: the `application_name` of the backends to sample, if any.
    pub async fn connect(
        plan: &PgPlan,
        role: Role,
        sample_app: Option<String>,
        notes: &mut Notes,
    ) -> Result<PgSource, String> {
        let (client, conn) = plan.client().await.map_err(|e| message(&e))?;
        let f = facts(&client).await.map_err(|e| message(&e))?;
        let (sql, view_names) = views_sql(&f);
        let views = client.prepare(&sql).await.map_err(|e| message(&e))?;
        let ash = client
            .prepare(&format!(
                "SELECT state, wait_event_type, wait_event, application_name, \
                 CASE WHEN wait_event_type = 'Lock' THEN query END FROM pg_stat_activity AS loadrig_observer \
                 WHERE datid = {} AND pid <> pg_backend_pid() \
                 AND (backend_type IN ('client backend', 'parallel worker') OR state IS NULL)",
                f.db_oid
            ))
            .await
            .map_err(|e| message(&e))?;
        let mut source = PgSource {
            role,
            client,
            _conn: conn,
            user: f.user.clone(),
            database: f.database.clone(),
            views,
            view_names,
            ash,
            application_name: sample_app,
            statements: None,
            tally: Tally::default(),
            locks: LockTally::default(),
            queries_sent: 3,
            backend_pid: u32::try_from(f.backend_pid).unwrap_or(0),
        };
        source.statements = source.prepare_statements(&f, notes).await;
        Ok(source)
    }

    /// pg_stat_statements' statements, or a note saying why not.
    async fn prepare_statements(&mut self, f: &Facts, notes: &mut Notes) -> Option<Statements> {
        let enable = format!(
            "shared_preload_libraries = 'pg_stat_statements' in postgresql.conf, a restart, and CREATE EXTENSION pg_stat_statements in database {} (as a superuser; the observer never creates it)",
            f.database
        );
        let Some(schema) = &f.pgss_schema else {
            notes.add(
                self.role,
                "pg_stat_statements",
                format!("the extension is not installed in database {}", f.database),
                enable,
            );
            return None;
        };
        let time = if f.version >= 130000 {
            "total_exec_time"
        } else {
            "total_time"
        };
        let totals = format!(
            "SELECT queryid::text, sum(calls)::float8, sum({time})::float8 FROM \"{schema}\".pg_stat_statements(false) AS loadrig_observer \
             WHERE dbid = {} GROUP BY queryid",
            f.db_oid
        );
        let texts = format!(
            "SELECT queryid::text, min(query) FROM \"{schema}\".pg_stat_statements(true) AS loadrig_observer \
             WHERE dbid = {} AND queryid::text = ANY($1) GROUP BY queryid",
            f.db_oid
        );
        self.queries_sent += 3;
        let prepared = async {
            let totals = self.client.prepare(&totals).await?;
            let texts = self.client.prepare(&texts).await?;
            // Prepared statements are checked only when they run: the library may be missing.
            self.client.query(&totals, &[]).await?;
            Ok::<_, tokio_postgres::Error>((totals, texts))
        };
        match prepared.await {
            Ok((totals, texts)) => Some(Statements {
                totals,
                texts,
                text_of: HashMap::new(),
                own: HashSet::new(),
                own_first_ms: None,
                own_last_ms: 0.0,
            }),
            Err(e) => {
                notes.add(self.role, "pg_stat_statements", message(&e), enable);
                None
            }
        }
    }

    /// One active-session sample.
    pub async fn sample_sessions(&mut self, notes: &mut Notes) -> Result<(), String> {
        self.queries_sent += 1;
        let rows = self
            .client
            .query(&self.ash, &[])
            .await
            .map_err(|e| message(&e))?;
        let t = &mut self.tally;
        t.samples += 1;
        let mut waiting: Vec<&str> = Vec::new();
        for row in &rows {
            let state: Option<&str> = row.get(0);
            let app: Option<&str> = row.get(3);
            if let (Some(want), Some(app)) = (&self.application_name, app) {
                if want != app {
                    continue;
                }
            }
            t.backends += 1;
            match state {
                None => t.hidden += 1,
                Some("active" | "fastpath function call") => {
                    t.active += 1;
                    let class: Option<&str> = row.get(1);
                    let event: Option<&str> = row.get(2);
                    if let Some(text) = row.get::<_, Option<&str>>(4) {
                        waiting.push(text);
                    }
                    let key = match (class, event) {
                        (Some(c), Some(e)) => (c.to_string(), e.to_string()),
                        _ => ("CPU".to_string(), "CPU".to_string()),
                    };
                    *t.by.entry(key).or_default() += 1;
                }
                Some(s) if s.starts_with("idle in transaction") => t.idle_in_transaction += 1,
                Some(_) => {}
            }
        }
        self.locks.sample(waiting);
        if t.hidden > 0 {
            notes.add(
                self.role,
                "wait events of other roles' backends",
                format!(
                    "role {} is not a member of pg_read_all_stats, so backends of other roles in database {} show no state or wait event (counted as hidden)",
                    self.user, self.database
                ),
                format!("GRANT pg_read_all_stats TO {} (as a superuser)", self.user),
            );
        }
        Ok(())
    }

    /// The active-session samples since the last call.
    pub fn take_waits(&mut self) -> Option<WaitProfile> {
        self.tally.take()
    }

    /// The lock waits by statement seen in those samples.
    pub fn take_lock_waits(&mut self) -> Option<LockWaitSamples> {
        self.locks.take("pg_stat_activity")
    }

    /// The statistics views and pg_stat_statements, cumulative.
    pub async fn read(&mut self, notes: &mut Notes) -> Result<Reading, String> {
        self.queries_sent += 1;
        // The views and pg_stat_statements' totals go out together, answered in one round
        // trip (the client pipelines queries polled at once).
        let totals = async {
            match &self.statements {
                Some(s) => Some(self.client.query(&s.totals, &[]).await),
                None => None,
            }
        };
        let (row, totals) = tokio::join!(self.client.query_one(&self.views, &[]), totals);
        let row = row.map_err(|e| message(&e))?;
        let mut r = Reading::default();
        for (col, prefix) in self.view_names.iter().enumerate() {
            let text: Option<String> = row.get(col);
            if let Some(obj) = text.and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            {
                if let Some(obj) = obj.as_object() {
                    r.add_json(prefix, obj, &["numbackends"], &["datid"]);
                }
            }
        }
        if let Some(rows) = totals {
            let rows = rows.map_err(|e| message(&e))?;
            self.read_statements(rows, &mut r, notes).await?;
        }
        Ok(r)
    }

    async fn read_statements(
        &mut self,
        rows: Vec<tokio_postgres::Row>,
        r: &mut Reading,
        notes: &mut Notes,
    ) -> Result<(), String> {
        let Some(s) = &mut self.statements else {
            return Ok(());
        };
        self.queries_sent += 1;
        let totals: Vec<(Option<String>, f64, f64)> = rows
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
        let unknown: Vec<String> = totals
            .iter()
            .filter_map(|(id, _, _)| id.clone())
            .filter(|id| !s.text_of.contains_key(id))
            .collect();
        if !unknown.is_empty() {
            self.queries_sent += 1;
            for row in self
                .client
                .query(&s.texts, &[&unknown])
                .await
                .map_err(|e| message(&e))?
            {
                let id: String = row.get(0);
                let text: Option<String> = row.get(1);
                let text = text.unwrap_or_default();
                if text.contains("loadrig_observer") {
                    s.own.insert(id.clone());
                }
                s.text_of.insert(id, text);
            }
        }
        let mut own_ms = 0.0;
        for (id, calls, time_ms) in totals {
            let Some(id) = id else {
                notes.add(
                    self.role,
                    "pg_stat_statements of other roles",
                    format!(
                        "role {} is not a member of pg_read_all_stats: other roles' statements are summed into one entry, `hidden`",
                        self.user
                    ),
                    format!("GRANT pg_read_all_stats TO {} (as a superuser)", self.user),
                );
                r.statements.insert(
                    "hidden".into(),
                    StatementTotal {
                        text: "<insufficient privilege>".into(),
                        calls,
                        time_ms,
                    },
                );
                continue;
            };
            if s.own.contains(&id) {
                own_ms += time_ms;
                continue;
            }
            let text = s.text_of.get(&id).cloned().unwrap_or_default();
            r.statements.insert(
                id,
                StatementTotal {
                    text,
                    calls,
                    time_ms,
                },
            );
        }
        s.own_first_ms.get_or_insert(own_ms);
        s.own_last_ms = own_ms;
        Ok(())
    }

    /// The server time of the observer's own statements since its first reading, when
    /// pg_stat_statements counts it.
    pub fn own_time_ms(&self) -> Option<f64> {
        let s = self.statements.as_ref()?;
        Some(s.own_last_ms - s.own_first_ms?)
    }

    /// A user's query in a (read-only) transaction of its own: the first column of its
    /// first row.
    pub async fn user_query(&mut self, q: &UserQuery) -> Result<QueryValue, String> {
        self.queries_sent += 1;
        // As text, whatever its type: the row as JSON, its first field (json keeps order).
        // The connection is read-only (its startup options), so this transaction is too.
        let sql = format!(
            "SELECT value FROM (SELECT row_to_json(q) AS r FROM ({}) AS q LIMIT 1) AS loadrig_observer_q, \
             json_each_text(loadrig_observer_q.r) LIMIT 1",
            q.sql
        );
        let rows = self
            .client
            .query(&sql, &[])
            .await
            .map_err(|e| message(&e))?;
        let text: Option<String> = rows.first().and_then(|row| row.get(0));
        Ok(QueryValue::from_text(&q.name, text))
    }
}
