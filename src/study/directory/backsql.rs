//! The seed's system: slapd's back-sql over PostgreSQL through ODBC (unixODBC and psqlODBC),
//! one slapd per mapping, started by the study on a loopback port and stopped after the
//! mapping's row. The study starts it rather than scripts/services.sh because back-sql reads
//! its mapping (`ldap_oc_mappings`, `ldap_attr_mappings`, `has_ldapinfo_dn_ru`,
//! `subtree_cond`) once, when it opens its database: each of the four mappings needs a slapd
//! started after that mapping's tables exist.
//!
//! Nothing here holds a password: the ODBC data source (`odbc.ini`, named by `ODBCINI`, with
//! `ODBCSYSINI` pointing at the same private folder, so /etc/odbc*.ini are never read) names
//! the server, port and database, and libpq, under psqlODBC, takes the password from
//! `PGPASSWORD` in slapd's environment.

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::filter::{reversed_upper, ATTRS};
use crate::targets::endpoint::Endpoint;
use crate::targets::postgres::backsql::SCHEMA;
use crate::targets::TargetUrl;
use crate::vocab::{ErrorClass, OpError};

/// The people's table and the organizational units' (in the PostgreSQL user's schema, so
/// `loadrig cleanup` finds them beside the other `loadrig_` tables).
pub const PEOPLE: &str = "loadrig_dir_people";
pub const OUS: &str = "loadrig_dir_ous";
/// The ODBC data source's name.
const DSN: &str = "loadrig_backsql";
/// back-sql's object classes: id, name, key table. Two, so that the per-object-class
/// queries the seed describes show: the filter names an attribute only people have.
pub const CLASSES: [(u32, &str, &str); 2] =
    [(1, "inetOrgPerson", PEOPLE), (2, "organizationalUnit", OUS)];

/// The seed's two schema changes, each a switch of its own (a factorial experiment can vary
/// them as two factors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// Pre-upper-cased columns: `ATTR_u` beside each attribute, named in the mapping as
    /// back-sql's `sel_expr_u` (so it compares `cn_u LIKE 'FNAME2101%'` instead of
    /// `upper(cn) LIKE ...`), and `dn_ru`, the DN upper-cased and reversed
    /// (`has_ldapinfo_dn_ru yes`, `subtree_cond "ldap_entries.dn_ru LIKE ?"`: the subtree
    /// becomes a prefix instead of `upper(dn) LIKE '%,OU=PEOPLE,...'`).
    pub upper: bool,
    /// B-tree indexes (`text_pattern_ops`, so a `LIKE 'P%'` can range over them) on the
    /// columns the search compares: the attributes (or their `_u` columns) and `dn_ru`.
    /// back-sql's own schema indexes `ldap_entries` by id, `(oc_map_id, keyval)` and `dn`
    /// in every mapping.
    pub indexes: bool,
}

/// Where the installed pieces are: slapd, its modules (with `back_sql`), its schema files and
/// psqlODBC's driver.
#[derive(Debug, Clone)]
pub struct Install {
    slapd: PathBuf,
    modules: PathBuf,
    schema: PathBuf,
    driver: PathBuf,
    monitor: bool,
}

fn first_existing(candidates: &[PathBuf]) -> Option<PathBuf> {
    candidates.iter().find(|p| p.exists()).cloned()
}

/// Find slapd with back_sql and psqlODBC (Debian's layout first); what is missing, in words.
pub fn find_install() -> Result<Install, String> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("slapd")).collect())
        .unwrap_or_default();
    let slapd = first_existing(&[on_path, vec!["/usr/sbin/slapd".into()]].concat())
        .ok_or("slapd is not installed (Debian: apt-get install slapd)")?;
    let module_dirs: Vec<PathBuf> = [
        "/usr/lib/ldap",
        "/usr/lib64/openldap",
        "/usr/libexec/openldap",
        "/usr/lib/openldap",
        "/usr/local/libexec/openldap",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let modules = module_dirs
        .into_iter()
        .find(|d| d.join("back_sql.so").exists())
        .ok_or("slapd's back_sql module (back_sql.so) is not installed (Debian's slapd has it)")?;
    let schema = first_existing(&[
        "/etc/ldap/schema".into(),
        "/etc/openldap/schema".into(),
        "/usr/local/etc/openldap/schema".into(),
    ])
    .filter(|d| d.join("inetorgperson.schema").exists())
    .ok_or("slapd's schema files (inetorgperson.schema) are not installed")?;
    let mut drivers: Vec<PathBuf> = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("odbc/psqlodbcw.so"))
        .collect();
    drivers.extend(
        ["/usr/lib64/psqlodbcw.so", "/usr/lib/psqlodbcw.so"]
            .iter()
            .map(PathBuf::from),
    );
    let driver = first_existing(&drivers).ok_or(
        "psqlODBC, PostgreSQL's ODBC driver, is not installed (Debian: apt-get install odbc-postgresql)",
    )?;
    let monitor = modules.join("back_monitor.so").exists();
    Ok(Install {
        slapd,
        modules,
        schema,
        driver,
        monitor,
    })
}

/// A port nobody listens on, below the kernel's ephemeral range (an outgoing connection may
/// take a port from that range before slapd binds it), else any free one.
pub fn free_port() -> std::io::Result<u16> {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    if low > 11_000 {
        for _ in 0..200 {
            let port = rand::random_range(10_000..low);
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// A string as an SQL literal.
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl Mapping {
    pub fn column(self, col: &str) -> String {
        if self.upper {
            format!("{col}_u")
        } else {
            col.to_string()
        }
    }

    /// The schema, back-sql's metadata tables (slapd-sql(5)'s layout, ids given by the
    /// loader), the people's and units' tables and, with `indexes`, the indexes: created
    /// before the load, so the load keeps the indexes as it goes.
    pub fn create(self) -> Vec<String> {
        let s = SCHEMA;
        let dn_ru = if self.upper {
            "dn_ru varchar(255), "
        } else {
            ""
        };
        let mut ddl = vec![
            format!("CREATE SCHEMA {s}"),
            format!("CREATE TABLE {s}.ldap_oc_mappings (id integer PRIMARY KEY, name varchar(64) NOT NULL, keytbl varchar(64) NOT NULL, keycol varchar(64) NOT NULL, create_proc varchar(255), delete_proc varchar(255), expect_return integer NOT NULL)"),
            format!("CREATE TABLE {s}.ldap_attr_mappings (id integer PRIMARY KEY, oc_map_id integer NOT NULL REFERENCES {s}.ldap_oc_mappings (id), name varchar(255) NOT NULL, sel_expr varchar(255) NOT NULL, sel_expr_u varchar(255), from_tbls varchar(255) NOT NULL, join_where varchar(255), add_proc varchar(255), delete_proc varchar(255), param_order integer NOT NULL, expect_return integer NOT NULL)"),
            format!("CREATE TABLE {s}.ldap_entries (id integer PRIMARY KEY, dn varchar(255) NOT NULL, {dn_ru}oc_map_id integer NOT NULL REFERENCES {s}.ldap_oc_mappings (id), parent integer NOT NULL, keyval integer NOT NULL, UNIQUE (oc_map_id, keyval), UNIQUE (dn))"),
            format!("CREATE TABLE {s}.ldap_entry_objclasses (entry_id integer NOT NULL REFERENCES {s}.ldap_entries (id), oc_name varchar(64))"),
            format!("CREATE TABLE {OUS} (id integer PRIMARY KEY, ou varchar(255))"),
        ];
        let columns: Vec<String> = ATTRS
            .iter()
            .flat_map(|(_, col)| {
                let mut c = vec![format!("{col} varchar(255)")];
                if self.upper {
                    c.push(format!("{col}_u varchar(255)"));
                }
                c
            })
            .collect();
        ddl.push(format!(
            "CREATE TABLE {PEOPLE} (id integer PRIMARY KEY, {})",
            columns.join(", ")
        ));
        if self.indexes {
            for (_, col) in ATTRS {
                let c = self.column(col);
                ddl.push(format!(
                    "CREATE INDEX {PEOPLE}_{c} ON {PEOPLE} ({c} text_pattern_ops)"
                ));
            }
            if self.upper {
                ddl.push(format!(
                    "CREATE INDEX ldap_entries_dn_ru ON {s}.ldap_entries (dn_ru text_pattern_ops)"
                ));
            }
        }
        ddl
    }

    /// The mapping's rows and the two units above the people (`ou=loadrig,BASE`, the suffix,
    /// and `ou=people` under it), given the units' DNs.
    pub fn metadata(self, loadrig_dn: &str, people_dn: &str) -> Vec<String> {
        let s = SCHEMA;
        let mut rows: Vec<String> = CLASSES
            .iter()
            .map(|(id, name, table)| {
                format!(
                    "INSERT INTO {s}.ldap_oc_mappings VALUES ({id}, {}, {}, 'id', NULL, NULL, 0)",
                    lit(name),
                    lit(table)
                )
            })
            .collect();
        let mut attrs: Vec<(u32, &str, String, Option<String>)> = ATTRS
            .iter()
            .map(|(attr, col)| {
                let upper = self.upper.then(|| format!("{PEOPLE}.{col}_u"));
                (1, *attr, format!("{PEOPLE}.{col}"), upper)
            })
            .collect();
        attrs.push((2, "ou", format!("{OUS}.ou"), None));
        for (k, (oc, name, sel, sel_u)) in attrs.iter().enumerate() {
            let table = if *oc == 1 { PEOPLE } else { OUS };
            rows.push(format!(
                "INSERT INTO {s}.ldap_attr_mappings (id, oc_map_id, name, sel_expr, sel_expr_u, from_tbls, param_order, expect_return) VALUES ({}, {oc}, {}, {}, {}, {}, 3, 0)",
                k + 1,
                lit(name),
                lit(sel),
                sel_u.as_deref().map_or("NULL".into(), lit),
                lit(table)
            ));
        }
        rows.push(format!(
            "INSERT INTO {OUS} VALUES (1, 'loadrig'), (2, 'people')"
        ));
        for (id, dn, parent) in [(1, loadrig_dn, 0), (2, people_dn, 1)] {
            rows.push(self.entry_insert(id, dn, 2, parent, id));
        }
        rows
    }

    fn entry_insert(self, id: u64, dn: &str, oc: u32, parent: u64, keyval: u64) -> String {
        let (col, val) = if self.upper {
            (
                ", dn_ru",
                format!(", {}", lit(&reversed_upper(&super::load::normal_dn(dn)))),
            )
        } else {
            ("", String::new())
        };
        format!(
            "INSERT INTO {SCHEMA}.ldap_entries (id, dn{col}, oc_map_id, parent, keyval) VALUES ({id}, {}{val}, {oc}, {parent}, {keyval})",
            lit(dn)
        )
    }

    /// slapd.conf for this mapping, its files in `dir`.
    fn slapd_conf(self, install: &Install, dir: &Path, suffix: &str, user: &str) -> String {
        let mut c = String::new();
        let _ = writeln!(
            c,
            "# loadrig study directory (seed 002): slapd's back-sql over PostgreSQL through ODBC.\n# Mapping: upper-cased columns {}, indexes {}.",
            on_off(self.upper),
            on_off(self.indexes)
        );
        for file in ["core", "cosine", "inetorgperson"] {
            let _ = writeln!(
                c,
                "include {}",
                install.schema.join(format!("{file}.schema")).display()
            );
        }
        let _ = writeln!(c, "modulepath {}", install.modules.display());
        c.push_str("moduleload back_sql\n");
        if install.monitor {
            c.push_str("moduleload back_monitor\n");
        }
        let _ = writeln!(
            c,
            "pidfile {}\nargsfile {}\n# Searches may return any number of entries (the default stops at 500).\nsizelimit unlimited\n",
            dir.join("slapd.pid").display(),
            dir.join("slapd.args").display()
        );
        let _ = writeln!(
            c,
            "database sql\nsuffix \"{suffix}\"\ndbname {DSN}\ndbuser {user}\n# The password comes from PGPASSWORD in slapd's environment, through libpq.\nupper_func upper\nstrcast_func text\nconcat_pattern \"?||?\""
        );
        if self.upper {
            c.push_str("# The seed's dn_ru: the subtree is a prefix of the reversed, upper-cased DN.\nhas_ldapinfo_dn_ru yes\nsubtree_cond \"ldap_entries.dn_ru LIKE ?\"\n");
        } else {
            c.push_str("has_ldapinfo_dn_ru no\n");
        }
        if install.monitor {
            c.push_str("\n# cn=Monitor, for loadrig's observer.\ndatabase monitor\n");
        }
        c
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// The ODBC data source for PostgreSQL at `pg` (host, port, database; TLS as its `sslmode`
/// and `ca` say), with the search path that finds back-sql's schema, then the user's.
/// psqlODBC's defaults would add a SAVEPOINT and a RELEASE around every statement
/// (statement-level rollback, `Protocol=7.4-2`) and prepare every statement on the server
/// (`UseServerSidePrepare=1`, a DEALLOCATE in its own savepoint when back-sql frees it):
/// both are turned off, so that what PostgreSQL counts is what back-sql sends.
fn odbc_ini(install: &Install, pg: &Endpoint, url: &TargetUrl, user_schema: &str) -> String {
    let mut c = format!(
        "[{DSN}]\nDriver = {}\nServername = {}\nPort = {}\nDatabase = {}\nConnSettings = SET search_path TO {SCHEMA}, \"{}\"\nUseServerSidePrepare = 0\nProtocol = 7.4-1\nDebug = 0\nCommLog = 0\n",
        install.driver.display(),
        pg.host,
        pg.port.unwrap_or(5432),
        pg.path,
        user_schema.replace('"', "\"\"")
    );
    if let Some(mode) = url.options.get("sslmode") {
        let _ = writeln!(c, "SSLMode = {mode}");
    }
    if let Some(ca) = url.options.get("ca") {
        let _ = writeln!(c, "pqopt = sslrootcert={ca}");
    }
    c
}

/// A back-sql slapd the study started; stopped when dropped.
pub struct Slapd {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

/// What starting slapd needs besides the mapping.
pub struct Start<'a> {
    pub install: &'a Install,
    /// The row's folder for slapd.conf, odbc.ini and slapd's log.
    pub dir: &'a Path,
    pub port: u16,
    /// `ou=loadrig,BASE`.
    pub suffix: &'a str,
    /// The PostgreSQL URL (environment references expanded).
    pub pg_url: &'a str,
    pub user_schema: &'a str,
}

fn fail(message: String) -> OpError {
    OpError::new(ErrorClass::Other, message)
}

impl Slapd {
    /// Write the files and start slapd, then wait until it answers an LDAP search of its
    /// suffix (at most 30 s); a slapd that exits first fails with its log's last lines.
    pub fn start(mapping: Mapping, s: &Start) -> Result<Slapd, OpError> {
        let url = TargetUrl::parse(s.pg_url).map_err(|e| fail(e.to_string()))?;
        let pg = Endpoint::parse(&url).map_err(|e| fail(e.to_string()))?;
        let user = pg.user.clone().unwrap_or_else(|| "postgres".into());
        std::fs::create_dir_all(s.dir).map_err(|e| fail(format!("{}: {e}", s.dir.display())))?;
        let write = |name: &str, text: &str| {
            std::fs::write(s.dir.join(name), text)
                .map_err(|e| fail(format!("{}: {e}", s.dir.join(name).display())))
        };
        write(
            "slapd.conf",
            &mapping.slapd_conf(s.install, s.dir, s.suffix, &user),
        )?;
        write("odbc.ini", &odbc_ini(s.install, &pg, &url, s.user_schema))?;
        write("odbcinst.ini", "")?;
        let log = s.dir.join("slapd.log");
        let out =
            std::fs::File::create(&log).map_err(|e| fail(format!("{}: {e}", log.display())))?;
        let err = out.try_clone().map_err(|e| fail(e.to_string()))?;
        let mut cmd = Command::new(&s.install.slapd);
        cmd.args(["-d", "none", "-h"])
            .arg(format!("ldap://127.0.0.1:{}/", s.port))
            .arg("-f")
            .arg(s.dir.join("slapd.conf"))
            .env("ODBCINI", s.dir.join("odbc.ini"))
            .env("ODBCSYSINI", s.dir)
            .env("PGPASSWORD", pg.password.clone().unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        parent_death_signal(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| fail(format!("starting {}: {e}", s.install.slapd.display())))?;
        let mut slapd = Slapd {
            child,
            port: s.port,
            log,
        };
        slapd.wait_ready(Duration::from_secs(30))?;
        Ok(slapd)
    }

    pub fn url(&self) -> String {
        format!("ldap://127.0.0.1:{}", self.port)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(4)..].join(" / ")
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), OpError> {
        let deadline = Instant::now() + limit;
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(fail(format!(
                    "slapd (back-sql) exited while starting ({status}); its log {}: {}",
                    self.log.display(),
                    self.log_tail()
                )));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(fail(format!(
            "slapd (back-sql) did not listen on 127.0.0.1:{} within {} s; its log {}: {}",
            self.port,
            limit.as_secs(),
            self.log.display(),
            self.log_tail()
        )))
    }
}

impl Drop for Slapd {
    /// SIGTERM (slapd's clean shutdown), then SIGKILL after 10 s.
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: signalling our own child, which has not been reaped (so its pid is
            // still its own).
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// slapd gets SIGTERM when the thread that started it ends, so that a study killed outright
/// leaves no slapd behind.
fn parent_death_signal(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: prctl is async-signal-safe and touches only the child's own attributes.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}
