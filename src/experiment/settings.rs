//! Server settings as factors: the one place where loadrig changes what it did not create,
//! so only when the user names the setting (`server.NAME`) and gives a URL with the
//! privilege (`--settings-url`, for PostgreSQL a superuser or a role granted ALTER SYSTEM
//! on it).
//!
//! Before any change each setting's value is read (`current_setting`), with its explicit
//! value in postgresql.auto.conf if it has one (`pg_file_settings`), and written to a
//! journal, `DIR/settings-journal.json`, synced to disk, with a pointer to it under the
//! user's state directory (`$XDG_STATE_HOME/loadrig/settings-journals/`, else
//! `~/.local/state/…`) named by the server. A cell applies its levels (the factor's `apply`
//! statements, by default `ALTER SYSTEM SET NAME = '{value}'` and `SELECT pg_reload_conf()`)
//! and the values are restored after it, after a failed run and after Ctrl-C or SIGTERM:
//! `ALTER SYSTEM SET NAME = 'EXPLICIT'`, or `ALTER SYSTEM RESET NAME` where the setting had
//! no explicit value, then a reload. After a SIGKILL (or a second Ctrl-C, which leaves at
//! once) the journal is left behind: `loadrig cleanup --target URL` finds it through the
//! pointer and restores the same way; an experiment refuses to start on a server with a
//! journal pending, since the values it would read as the priors are the changed ones.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use crate::analysis::experiment::record::SettingRecord;
use crate::error::InputError;
use crate::targets::endpoint::Endpoint;
use crate::targets::postgres::admin::Admin;
use crate::targets::{expand_env, redact, TargetUrl};

pub const JOURNAL: &str = "settings-journal.json";

/// A server setting varied by an experiment.
#[derive(Debug, Clone)]
pub struct ServerFactor {
    pub setting: String,
    /// Statements with `{value}` for the level.
    pub apply: Vec<String>,
}

impl ServerFactor {
    /// `server.NAME` with its `apply` statements (PostgreSQL's ALTER SYSTEM when none).
    pub fn new(setting: &str, apply: Vec<String>) -> Result<ServerFactor, InputError> {
        if setting.is_empty()
            || !setting
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(InputError::new(format!(
                "server.{setting}: a setting's name is letters, digits, '_' and '.'"
            )));
        }
        let apply = if apply.is_empty() {
            vec![
                format!("ALTER SYSTEM SET {setting} = '{{value}}'"),
                "SELECT pg_reload_conf()".to_string(),
            ]
        } else {
            apply
        };
        if !apply.iter().any(|s| s.contains("{value}")) {
            return Err(InputError::new(format!(
                "server.{setting}: no apply statement uses {{value}}, so the levels would change nothing"
            ))
            .help("write apply = [\"ALTER SYSTEM SET NAME = '{value}'\", \"SELECT pg_reload_conf()\"]"));
        }
        Ok(ServerFactor {
            setting: setting.to_string(),
            apply,
        })
    }
}

/// The journal: what to put back, on which server.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    kind: String,
    /// The settings URL without its password.
    server: String,
    key: String,
    experiment: PathBuf,
    pid: u32,
    settings: Vec<SettingRecord>,
}

/// The pointer under the state directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pointer {
    journal: PathBuf,
    server: String,
    key: String,
}

/// The settings of one experiment on one server.
pub struct ServerSettings {
    url: TargetUrl,
    shown: String,
    key: String,
    factors: Vec<ServerFactor>,
    priors: Vec<SettingRecord>,
    journal: PathBuf,
    pointer: PathBuf,
}

/// The server's identity for journals: its host (or socket directory) and port.
fn server_key(url: &TargetUrl) -> Result<String, InputError> {
    let ep = Endpoint::parse(url)?;
    Ok(format!(
        "{}://{}:{}",
        url.scheme,
        ep.host.to_ascii_lowercase(),
        ep.port.unwrap_or(5432)
    ))
}

fn state_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("loadrig/settings-journals")
}

fn short_hash(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()[..12].to_string()
}

/// Write `bytes` to `path` and sync it and its folder, so that it outlives a crash.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::result::write_atomic(path, bytes)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("could not sync folder '{}'", dir.display()))?;
    }
    Ok(())
}

fn quote(value: &str) -> String {
    value.replace('\'', "''")
}

impl ServerSettings {
    /// Check the URL, the privilege and every setting (it exists, and changes without a
    /// restart) before anything runs; nothing is changed.
    pub fn check(url_text: &str, factors: Vec<ServerFactor>, dir: &Path) -> Result<ServerSettings> {
        let url = TargetUrl::parse(&expand_env(url_text)?)?;
        let shown = redact(url_text);
        if url.scheme != "postgres" {
            return Err(InputError::new(format!(
                "--settings-url {shown}: server settings are changed on PostgreSQL only"
            ))
            .help("give a postgres:// URL of a superuser, e.g. postgres://postgres@%2Frun%2Fpostgresql/DB")
            .into());
        }
        crate::targets::postgres::admin::check(&url)?;
        let admin = Admin::connect(&url)
            .with_context(|| format!("--settings-url {shown}: could not connect"))?;
        for f in &factors {
            let rows = admin
                .query(&format!(
                    "SELECT context FROM pg_settings WHERE name = lower('{}')",
                    quote(&f.setting)
                ))
                .map_err(|e| anyhow!("--settings-url {shown}: {e}"))?;
            match rows.first().and_then(|r| r[0].as_deref()) {
                None => {
                    return Err(InputError::new(format!(
                        "factor server.{}: the server has no setting '{}'",
                        f.setting, f.setting
                    ))
                    .help("name a setting as SHOW ALL lists it")
                    .into())
                }
                Some(context @ ("postmaster" | "internal")) => {
                    return Err(InputError::new(format!(
                        "factor server.{}: a setting of context '{context}' takes effect only when the server restarts, which an experiment does not do",
                        f.setting
                    ))
                    .into())
                }
                Some(_) => {}
            }
            let may = admin
                .query(&format!(
                    "SELECT current_setting('is_superuser') = 'on' OR has_parameter_privilege('{}', 'ALTER SYSTEM')",
                    quote(&f.setting)
                ))
                .or_else(|_| admin.query("SELECT current_setting('is_superuser') = 'on'"))
                .map_err(|e| anyhow!("--settings-url {shown}: {e}"))?;
            if may.first().and_then(|r| r[0].as_deref()) != Some("t") {
                return Err(InputError::new(format!(
                    "factor server.{}: the role of --settings-url {shown} may not ALTER SYSTEM it",
                    f.setting
                ))
                .help("give a superuser's URL (scripts/services.sh: LOADRIG_PG_SUPER_URL, on the server's Unix socket), or GRANT ALTER SYSTEM ON PARAMETER to the role")
                .into());
            }
        }
        let key = server_key(&url)?;
        let journal = std::path::absolute(dir.join(JOURNAL))?;
        let pointer = state_dir().join(format!(
            "{}-{}.json",
            short_hash(&key),
            short_hash(&journal.to_string_lossy())
        ));
        if let Some(other) = pending(&key)?.into_iter().find(|p| p.journal != journal) {
            return Err(InputError::new(format!(
                "the settings of {} were changed by an experiment that did not finish ({}), so their values now are not the ones to restore",
                other.server,
                other.journal.display()
            ))
            .help(format!("restore them first: loadrig cleanup --target {}", other.server))
            .into());
        }
        Ok(ServerSettings {
            url,
            shown,
            key,
            factors,
            priors: Vec::new(),
            journal,
            pointer,
        })
    }

    /// Read every setting's value and write the journal, before the first change. A journal
    /// this experiment left (it was killed) is restored first and its values kept.
    pub fn begin(&mut self, dir: &Path) -> Result<()> {
        if let Ok(text) = std::fs::read_to_string(&self.journal) {
            let old: Journal = serde_json::from_str(&text).with_context(|| {
                format!("'{}' is not a settings journal", self.journal.display())
            })?;
            self.priors = old.settings;
            self.restore()?;
            return Ok(());
        }
        let admin = self.admin()?;
        for f in &self.factors {
            let name = quote(&f.setting);
            let rows = admin.query(&format!(
                "SELECT current_setting('{name}'), (SELECT setting FROM pg_file_settings WHERE lower(name) = lower('{name}') AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1)"
            )).map_err(|e| anyhow!("{}: {e}", self.shown))?;
            let row = rows
                .first()
                .ok_or_else(|| anyhow!("{}: no value for {}", self.shown, f.setting))?;
            self.priors.push(SettingRecord {
                name: f.setting.clone(),
                prior: row[0].clone().unwrap_or_default(),
                explicit: row[1].clone(),
                restored: false,
            });
        }
        let journal = Journal {
            kind: "loadrig settings journal".into(),
            server: redact(&format!("{}://{}", self.url.scheme, self.url.location)),
            key: self.key.clone(),
            experiment: std::path::absolute(dir)?,
            pid: std::process::id(),
            settings: self.priors.clone(),
        };
        write_synced(&self.journal, &serde_json::to_vec_pretty(&journal)?)?;
        let pointer = Pointer {
            journal: self.journal.clone(),
            server: journal.server.clone(),
            key: self.key.clone(),
        };
        write_synced(&self.pointer, &serde_json::to_vec_pretty(&pointer)?)
    }

    fn admin(&self) -> Result<Admin> {
        Admin::connect(&self.url).with_context(|| format!("settings: {}", self.shown))
    }

    /// Set each server factor to its level (`values` in the order of the factors), and wait
    /// until this session reads the new value.
    pub fn apply(&self, values: &[String]) -> Result<()> {
        let admin = self.admin()?;
        for (f, value) in self.factors.iter().zip(values) {
            for statement in &f.apply {
                let sql = statement.replace("{value}", &quote(value));
                admin
                    .query(&sql)
                    .map_err(|e| anyhow!("server.{} = {value}: {sql}: {e}", f.setting))?;
            }
            settle(&admin, &f.setting, value);
        }
        Ok(())
    }

    /// Put every setting back as it was.
    pub fn restore(&mut self) -> Result<()> {
        let admin = self.admin()?;
        for p in &mut self.priors {
            let sql = match &p.explicit {
                Some(v) => format!("ALTER SYSTEM SET {} = '{}'", p.name, quote(v)),
                None => format!("ALTER SYSTEM RESET {}", p.name),
            };
            admin
                .query(&sql)
                .and_then(|_| admin.query("SELECT pg_reload_conf()"))
                .map_err(|e| anyhow!("restoring {}: {sql}: {e}", p.name))?;
            settle(&admin, &p.name, &p.prior);
            p.restored = true;
        }
        Ok(())
    }

    /// Restored for good: the journal and its pointer go.
    pub fn finish(&mut self) -> Result<()> {
        self.restore()?;
        for path in [&self.pointer, &self.journal] {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("could not remove '{}'", path.display()))
                }
                _ => {}
            }
        }
        Ok(())
    }

    pub fn records(&self) -> Vec<SettingRecord> {
        self.priors.clone()
    }

    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// A reload is asynchronous: wait (at most 2 s) until this session reads `value`.
fn settle(admin: &Admin, name: &str, value: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let now = admin
            .query(&format!("SELECT current_setting('{}')", quote(name)))
            .ok()
            .and_then(|rows| rows.first().and_then(|r| r[0].clone()));
        if now.is_some_and(|v| v.eq_ignore_ascii_case(value)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The journals waiting on the server with this key.
fn pending(key: &str) -> Result<Vec<Pointer>> {
    Ok(all_pending()?
        .into_iter()
        .filter(|p| p.key == key)
        .collect())
}

/// Every journal waiting, on any server.
fn all_pending() -> Result<Vec<Pointer>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(state_dir()) else {
        return Ok(out);
    };
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let Ok(p) = serde_json::from_str::<Pointer>(&text) else {
            continue;
        };
        if !p.journal.exists() {
            // Its experiment finished after all: the pointer is stale.
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        out.push(p);
    }
    Ok(out)
}

/// `loadrig cleanup --target URL`: restore every setting a journal holds for this server,
/// then remove the journals. Returns a line per setting restored, and notes about journals
/// of other servers.
pub fn cleanup(url: &TargetUrl) -> Result<Vec<String>> {
    if url.scheme != "postgres" {
        return Ok(Vec::new());
    }
    let key = server_key(url)?;
    let mut lines = Vec::new();
    for p in pending(&key)? {
        let text = std::fs::read_to_string(&p.journal)?;
        let journal: Journal = serde_json::from_str(&text)
            .with_context(|| format!("'{}' is not a settings journal", p.journal.display()))?;
        let mut settings = ServerSettings {
            url: url.clone(),
            shown: redact(&format!("{}://{}", url.scheme, url.location)),
            key: key.clone(),
            factors: Vec::new(),
            priors: journal.settings,
            journal: p.journal.clone(),
            pointer: PathBuf::new(),
        };
        settings.restore().with_context(|| {
            format!(
                "restoring the settings journal {} needs a URL with the privilege to ALTER SYSTEM",
                p.journal.display()
            )
        })?;
        for s in &settings.priors {
            lines.push(format!(
                "restored {} to {} ({}), from {}",
                s.name,
                s.prior,
                if s.explicit.is_some() {
                    "ALTER SYSTEM SET"
                } else {
                    "ALTER SYSTEM RESET"
                },
                p.journal.display()
            ));
        }
        std::fs::remove_file(&p.journal)?;
        for entry in std::fs::read_dir(state_dir())?.flatten() {
            let same = std::fs::read_to_string(entry.path())
                .ok()
                .and_then(|t| serde_json::from_str::<Pointer>(&t).ok())
                .is_some_and(|q| q.journal == p.journal);
            if same {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    for other in all_pending()? {
        lines.push(format!(
            "note: the settings journal {} waits for another server: loadrig cleanup --target {} (with the privilege to ALTER SYSTEM)",
            other.journal.display(),
            other.server
        ));
    }
    Ok(lines)
}
