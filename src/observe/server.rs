//! One observed server: its source (the connection that reads what the server counts) and
//! its processes when it runs on this machine, read at each boundary into one interval's
//! figures.

use super::ldap::{self, LdapPlan, LdapSource};
use super::mysql::{MysqlPlan, MysqlSource};
use super::nginx::{HttpPlan, NginxSource};
use super::notes::Notes;
use super::postgres::{PgPlan, PgSource};
use super::procfs::{self, ServerProcesses};
use super::reading::Reading;
use super::record::{QueryValue, Role, ServerInterval};
use super::{Sessions, UserQuery};
use crate::error::{redact, InputError};
use crate::targets::TargetUrl;

/// How long one reading of a server may take before it is given up.
const READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How to reach a server's counters, by its URL's scheme.
enum SourcePlan {
    Postgres(PgPlan),
    Mysql(MysqlPlan),
    Redis(super::redis::RedisPlan),
    Ldap(LdapPlan),
    Http(HttpPlan),
}

/// A server to observe, checked before the observer's thread starts.
pub struct ServerPlan {
    pub role: Role,
    /// The URL without its password.
    pub shown: String,
    host: String,
    port: u16,
    source: SourcePlan,
}

impl ServerPlan {
    pub fn parse(url: &str, role: Role) -> Result<ServerPlan, InputError> {
        let parsed = TargetUrl::parse(url)?;
        let source = match parsed.scheme.as_str() {
            "postgres" | "postgresql" => SourcePlan::Postgres(PgPlan::parse(&parsed)?),
            "mysql" | "mariadb" => SourcePlan::Mysql(MysqlPlan::parse(&parsed)?),
            "redis" | "rediss" => SourcePlan::Redis(super::redis::RedisPlan::parse(&parsed)?),
            "ldap" | "ldaps" => SourcePlan::Ldap(LdapPlan::parse(&parsed)?),
            "http" | "https" => SourcePlan::Http(HttpPlan::parse(&parsed)?),
            other => {
                return Err(InputError::new(format!(
                    "{other}:// has no server to observe: observation is for network targets (postgres, mysql, redis, ldap, http)"
                )))
            }
        };
        let (host, port) = match &source {
            SourcePlan::Postgres(p) => (p.host.clone(), p.port),
            SourcePlan::Mysql(p) => (p.host.clone(), p.port),
            SourcePlan::Redis(p) => (p.host().to_string(), p.port()),
            SourcePlan::Ldap(p) => (p.host.clone(), p.port),
            SourcePlan::Http(p) => (p.host.clone(), p.port),
        };
        Ok(ServerPlan {
            role,
            shown: redact(url),
            host,
            port,
            source,
        })
    }
}

enum Source {
    Postgres(Box<PgSource>),
    Mysql(MysqlSource),
    Redis(super::redis::RedisSource),
    Ldap(LdapSource),
    Nginx(NginxSource),
}

/// One server as the observer holds it.
pub struct Server {
    plan: ServerPlan,
    sessions: Option<String>,
    source: Option<Source>,
    /// The source had a connection and lost it: try again at the next boundary.
    lost: bool,
    before: Option<Reading>,
    processes: Option<ServerProcesses>,
    /// Statements sent by sources that were dropped.
    queries_before: u64,
}

impl Server {
    /// Connect and find the processes; what fails is noted, never an error.
    pub async fn open(plan: ServerPlan, sessions: &Sessions, notes: &mut Notes) -> Server {
        let sessions = match (&plan.source, sessions, plan.role) {
            (SourcePlan::Postgres(p), Sessions::Run, Role::Target) => {
                Some(p.application_name.clone())
            }
            (_, Sessions::Application(name), _) => Some(name.clone()),
            _ => None,
        };
        let mut server = Server {
            plan,
            sessions,
            source: None,
            lost: false,
            before: None,
            processes: None,
            queries_before: 0,
        };
        if let Err(why) = server.connect(notes).await {
            let enable = if why.contains("too many") || why.contains("connection limit") {
                "a connection to spare for the observer (the server's connection limit, or fewer clients)"
            } else {
                ""
            };
            notes.add(
                server.plan.role,
                "observation",
                format!(
                    "the server refused the observer's connection ({why}): the run goes on without the server's counters"
                ),
                enable,
            );
        }
        server.find_processes(notes);
        server
    }

    async fn connect(&mut self, notes: &mut Notes) -> Result<(), String> {
        let role = self.plan.role;
        self.source = Some(match &self.plan.source {
            SourcePlan::Postgres(p) => Source::Postgres(Box::new(
                PgSource::connect(p, role, self.sessions.clone(), notes).await?,
            )),
            SourcePlan::Mysql(p) => Source::Mysql(MysqlSource::connect(p, role, notes).await?),
            SourcePlan::Redis(p) => Source::Redis(super::redis::RedisSource::connect(p).await?),
            SourcePlan::Ldap(p) => Source::Ldap(LdapSource::connect(p).await?),
            SourcePlan::Http(p) => {
                let Some(path) = &p.status else {
                    notes.add(
                        role,
                        "nginx stub_status",
                        "the target names no status page",
                        "?status=/PATH on the target URL, where nginx serves `stub_status;` (loopback only)",
                    );
                    return Ok(());
                };
                Source::Nginx(NginxSource::connect(p, path).await?)
            }
        });
        Ok(())
    }

    fn find_processes(&mut self, notes: &mut Notes) {
        let role = self.plan.role;
        if !procfs::is_local(&self.plan.host, self.plan.port) {
            notes.add(
                role,
                "processes",
                format!("{} is not this machine", self.plan.host),
                "running loadrig on the server's machine",
            );
            return;
        }
        let hint = match &self.source {
            Some(Source::Postgres(s)) => Some(s.backend_pid),
            Some(Source::Mysql(s)) => s.server_pid,
            _ => None,
        };
        match procfs::find_server(self.plan.port, hint) {
            Ok(pid) => {
                let p = ServerProcesses::new(pid);
                if !p.io_readable() {
                    notes.add(
                        role,
                        "bytes read and written",
                        format!("/proc/{pid}/io is readable only by the server's user and root"),
                        "running loadrig as the server's user or as root",
                    );
                }
                self.processes = Some(p);
            }
            Err(e) => notes.add(role, "processes", e.why, e.enable),
        }
    }

    /// Whether active sessions are sampled between boundaries.
    pub fn samples_sessions(&self) -> bool {
        match &self.source {
            Some(Source::Postgres(_)) => true,
            Some(Source::Mysql(m)) => m.samples_sessions(),
            _ => false,
        }
    }

    pub async fn sample_sessions(&mut self, notes: &mut Notes) {
        let sampled = match &mut self.source {
            Some(Source::Postgres(pg)) => pg.sample_sessions(notes).await,
            Some(Source::Mysql(m)) => m.sample_sessions().await,
            _ => Ok(()),
        };
        if let Err(why) = sampled {
            self.drop_source(why, notes);
        }
    }

    fn drop_source(&mut self, why: String, notes: &mut Notes) {
        self.queries_before += self.source.as_ref().map_or(0, queries_of);
        self.source = None;
        self.before = None;
        self.lost = true;
        notes.add(
            self.plan.role,
            "connection",
            format!("the observer's connection failed ({why}); it reconnects at the next boundary"),
            "",
        );
    }

    /// The figures since the last boundary (None at the first, or right after reconnecting).
    pub async fn boundary(&mut self, notes: &mut Notes) -> Option<ServerInterval> {
        if self.lost && self.source.is_none() && self.connect(notes).await.is_ok() {
            self.lost = false;
        }
        let read = async {
            match &mut self.source {
                Some(Source::Postgres(s)) => s.read(notes).await.map(Some),
                Some(Source::Mysql(s)) => s.read(notes).await.map(Some),
                Some(Source::Redis(s)) => s.read().await.map(Some),
                Some(Source::Ldap(s)) => s.read().await,
                Some(Source::Nginx(s)) => match &self.plan.source {
                    SourcePlan::Http(p) => s.read(p).await.map(Some),
                    _ => Ok(None),
                },
                None => Ok(None),
            }
        };
        // A server that stopped answering (SIGSTOP, a lost link) must not hold the run's
        // intervals or its end: the reading is given up and the connection made again.
        let reading = match tokio::time::timeout(READ_LIMIT, read).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {}s", READ_LIMIT.as_secs())),
        };
        let reading = match reading {
            Ok(r) => r,
            Err(why) => {
                self.drop_source(why, notes);
                None
            }
        };
        if reading.is_none() {
            if let (Some(Source::Ldap(_)), SourcePlan::Ldap(p)) = (&self.source, &self.plan.source)
            {
                let (why, enable) = ldap::monitor_missing(p);
                notes.add(self.plan.role, "cn=Monitor", why, enable);
            }
        }
        let mut figures = match (&reading, &self.before) {
            (Some(now), Some(before)) => Some(now.since(before)),
            _ => None,
        };
        if let Some(r) = reading {
            self.before = Some(r);
        }
        let (waits, lock_waits) = match &mut self.source {
            Some(Source::Postgres(pg)) => (pg.take_waits(), pg.take_lock_waits()),
            Some(Source::Mysql(m)) => (None, m.take_lock_waits()),
            _ => (None, None),
        };
        if let Some(f) = &mut figures {
            f.waits = waits;
            f.lock_waits = lock_waits;
        }
        self.processes_into(&mut figures, notes);
        figures
    }

    fn processes_into(&mut self, figures: &mut Option<ServerInterval>, notes: &mut Notes) {
        let Some(p) = &mut self.processes else { return };
        match p.sample() {
            Ok(Some(f)) => {
                figures
                    .get_or_insert_with(ServerInterval::default)
                    .processes = Some(f)
            }
            Ok(None) => {}
            Err(why) => {
                notes.add(self.plan.role, "processes", why, "");
                self.processes = None;
            }
        }
    }

    /// Whether user queries can run here.
    pub fn runs_sql(&self) -> bool {
        matches!(
            self.plan.source,
            SourcePlan::Postgres(_) | SourcePlan::Mysql(_)
        )
    }

    pub async fn user_query(&mut self, q: &UserQuery) -> Option<Result<QueryValue, String>> {
        match &mut self.source {
            Some(Source::Postgres(s)) => Some(s.user_query(q).await),
            Some(Source::Mysql(s)) => Some(s.user_query(q).await),
            _ => None,
        }
    }

    pub fn queries_sent(&self) -> u64 {
        self.queries_before + self.source.as_ref().map_or(0, queries_of)
    }

    /// The server time of the observer's own statements, and where it was read.
    pub fn own_time_ms(&self) -> Option<(f64, &'static str)> {
        match &self.source {
            Some(Source::Postgres(s)) => s.own_time_ms().map(|t| (t, "pg_stat_statements")),
            Some(Source::Mysql(s)) => s.own_time_ms().map(|t| (t, "performance_schema")),
            Some(Source::Redis(s)) => s.own_time_ms().map(|t| (t, "commandstats")),
            _ => None,
        }
    }

    pub fn role(&self) -> Role {
        self.plan.role
    }
}

fn queries_of(source: &Source) -> u64 {
    match source {
        Source::Postgres(s) => s.queries_sent,
        Source::Mysql(s) => s.queries_sent,
        Source::Redis(s) => s.queries_sent,
        Source::Ldap(s) => s.queries_sent,
        Source::Nginx(s) => s.queries_sent,
    }
}
