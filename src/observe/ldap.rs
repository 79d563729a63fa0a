//! OpenLDAP, on the observer's own connection (ldap3, bound as the target URL's `bind_dn`):
//! `cn=Monitor`, when slapd has the monitor backend and lets that DN read it. Operations by
//! type (initiated, completed), statistics (bytes, PDUs, entries) and connections made are
//! counters; threads (active, pending, backload, ...), waiters and current connections are
//! gauges.

use std::time::Duration;

use ldap3::{Ldap, LdapConnAsync, LdapConnSettings, Scope, SearchEntry, StdStream};
use tokio::task::JoinHandle;

use super::reading::{number, Reading};
use crate::error::InputError;
use crate::targets::tls::Tls;
use crate::targets::{expand_env, socket, TargetUrl};

const MONITOR: &str = "cn=Monitor";

pub struct LdapPlan {
    url: String,
    addr: String,
    tls: Tls,
    starttls: bool,
    pub bind_dn: Option<String>,
    password: String,
    pub host: String,
    pub port: u16,
}

impl LdapPlan {
    pub fn parse(url: &TargetUrl) -> Result<LdapPlan, InputError> {
        let starttls = url.options.get("starttls").is_some_and(|v| v == "true");
        let tls = Tls::from_url(url, starttls || url.scheme == "ldaps")?;
        let authority = url.location.trim_end_matches('/').to_string();
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_string(), p.parse().unwrap_or(389)),
            _ => (
                authority.clone(),
                if url.scheme == "ldaps" { 636 } else { 389 },
            ),
        };
        let option = |name: &str| -> Result<Option<String>, InputError> {
            url.options.get(name).map(|v| expand_env(v)).transpose()
        };
        Ok(LdapPlan {
            url: format!("{}://{authority}", url.scheme),
            addr: format!("{host}:{port}"),
            tls,
            starttls,
            bind_dn: option("bind_dn")?.filter(|d| !d.is_empty()),
            password: option("password")?.unwrap_or_default(),
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        })
    }
}

pub struct LdapSource {
    conn: Ldap,
    driver: JoinHandle<()>,
    pub queries_sent: u64,
}

impl Drop for LdapSource {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// What the monitor lacks, as the note's `why` and `enable`.
pub fn monitor_missing(plan: &LdapPlan) -> (String, String) {
    let who = plan.bind_dn.as_deref().unwrap_or("an anonymous bind");
    (
        format!("cn=Monitor is not there or not readable by {who}"),
        format!(
            "the monitor backend in slapd (moduleload back_monitor, database monitor) with an access rule that lets {who} read it"
        ),
    )
}

impl LdapSource {
    pub async fn connect(plan: &LdapPlan) -> Result<LdapSource, String> {
        let open = async {
            let tcp = socket::connect(&plan.addr)
                .await
                .and_then(|t| t.into_std())
                .map_err(|e| e.to_string())?;
            let mut settings = LdapConnSettings::new().set_std_stream(StdStream::Tcp(tcp));
            if let Some(config) = plan.tls.config() {
                settings = settings.set_config(config).set_starttls(plan.starttls);
            }
            let (driver, mut conn) = LdapConnAsync::with_settings(settings, &plan.url)
                .await
                .map_err(|e| e.to_string())?;
            let driver = tokio::spawn(async move {
                let _ = driver.drive().await;
            });
            if let Some(dn) = &plan.bind_dn {
                let bound = conn
                    .simple_bind(dn, &plan.password)
                    .await
                    .and_then(|r| r.success());
                if let Err(e) = bound {
                    driver.abort();
                    return Err(format!("bind as {dn}: {e}"));
                }
            }
            Ok(LdapSource {
                conn,
                driver,
                queries_sent: u64::from(plan.bind_dn.is_some()),
            })
        };
        tokio::time::timeout(Duration::from_secs(5), open)
            .await
            .map_err(|_| "no answer within 5 s".to_string())?
    }

    /// `Ok(None)`: cn=Monitor is not there or not readable; `Err`: the connection failed.
    pub async fn read(&mut self) -> Result<Option<Reading>, String> {
        self.queries_sent += 1;
        let attrs = [
            "monitorOpInitiated",
            "monitorOpCompleted",
            "monitorCounter",
            "monitoredInfo",
        ];
        // Not the entry per open connection: with thousands of clients that is thousands.
        let filter = "(|(monitorOpInitiated=*)(objectClass=monitorCounterObject)\
                      (&(objectClass=monitoredObject)(monitoredInfo=*)))";
        let found = self
            .conn
            .search(MONITOR, Scope::Subtree, filter, attrs.to_vec())
            .await
            .map_err(|e| e.to_string())?;
        let (entries, result) = (found.0, found.1);
        if result.rc != 0 || entries.is_empty() {
            return Ok(None);
        }
        let mut r = Reading::default();
        for entry in entries {
            let e = SearchEntry::construct(entry);
            add_entry(&mut r, &e.dn, &e.attrs);
        }
        Ok(Some(r))
    }
}

/// `cn=Bind,cn=Operations,cn=Monitor` → `["operations", "bind"]`, lowercase, spaces as `_`.
fn path(dn: &str) -> Vec<String> {
    let mut parts: Vec<String> = dn
        .split(',')
        .filter_map(|rdn| {
            rdn.split_once('=')
                .map(|(_, v)| v.trim().to_ascii_lowercase().replace(' ', "_"))
        })
        .collect();
    parts.pop(); // monitor
    parts.reverse();
    parts
}

fn add_entry(r: &mut Reading, dn: &str, attrs: &std::collections::HashMap<String, Vec<String>>) {
    let first = |name: &str| {
        attrs
            .get(name)
            .and_then(|v| v.first())
            .and_then(|v| number(v))
    };
    let p = path(dn);
    let name = p.join(".");
    match p.first().map(String::as_str) {
        Some("operations") => {
            for (attr, what) in [
                ("monitorOpInitiated", "initiated"),
                ("monitorOpCompleted", "completed"),
            ] {
                if let Some(v) = first(attr) {
                    r.counters.insert(format!("{name}.{what}"), v);
                }
            }
        }
        Some("statistics") => {
            if let Some(v) = first("monitorCounter") {
                r.counters.insert(name, v);
            }
        }
        Some("connections") if p.len() == 2 => match (p[1].as_str(), first("monitorCounter")) {
            ("total", Some(v)) => {
                r.counters.insert(name, v);
            }
            ("current", Some(v)) => {
                r.gauges.insert(name, v);
            }
            _ => {}
        },
        Some("waiters") => {
            if let Some(v) = first("monitorCounter") {
                r.gauges.insert(name, v);
            }
        }
        Some("threads") if p.len() == 2 => {
            if let Some(v) = first("monitoredInfo") {
                r.gauges.insert(name, v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_entries_by_their_dn() {
        let mut r = Reading::default();
        let attrs = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
                .collect()
        };
        add_entry(
            &mut r,
            "cn=Search,cn=Operations,cn=Monitor",
            &attrs(&[("monitorOpInitiated", "7"), ("monitorOpCompleted", "6")]),
        );
        add_entry(
            &mut r,
            "cn=Max Pending,cn=Threads,cn=Monitor",
            &attrs(&[("monitoredInfo", "0")]),
        );
        add_entry(
            &mut r,
            "cn=State,cn=Threads,cn=Monitor",
            &attrs(&[("monitoredInfo", "unknown")]),
        );
        add_entry(
            &mut r,
            "cn=Current,cn=Connections,cn=Monitor",
            &attrs(&[("monitorCounter", "3")]),
        );
        add_entry(
            &mut r,
            "cn=Read,cn=Waiters,cn=Monitor",
            &attrs(&[("monitorCounter", "1")]),
        );
        add_entry(
            &mut r,
            "cn=Bytes,cn=Statistics,cn=Monitor",
            &attrs(&[("monitorCounter", "99")]),
        );
        assert_eq!(r.counters["operations.search.initiated"], 7.0);
        assert_eq!(r.counters["operations.search.completed"], 6.0);
        assert_eq!(r.counters["statistics.bytes"], 99.0);
        assert_eq!(r.gauges["threads.max_pending"], 0.0);
        assert_eq!(r.gauges["connections.current"], 3.0);
        assert_eq!(r.gauges["waiters.read"], 1.0);
        assert!(!r.gauges.contains_key("threads.state"));
    }
}
