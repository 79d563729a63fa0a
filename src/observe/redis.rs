//! Redis, on the observer's own connection: `INFO all` at each boundary, whose `stats` and
//! `cpu` sections are counters, `clients` and `memory`'s main figures gauges, and
//! `commandstats` the calls and microseconds per command. The observer's own `INFO` calls
//! are taken off the `info` command and counted as its cost.

use std::time::Duration;

use redis::IntoConnectionInfo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::reading::{number, Reading, StatementTotal};
use crate::error::InputError;
use crate::targets::socket;
use crate::targets::tls::{NetStream, Tls};
use crate::targets::TargetUrl;

/// `stats` fields that are not counters but values at the moment.
const STATS_GAUGES: &[&str] = &[
    "pubsub_channels",
    "pubsub_patterns",
    "pubsubshard_channels",
    "latest_fork_usec",
    "migrate_cached_sockets",
    "slave_expires_tracked_keys",
    "expired_stale_perc",
    "tracking_total_keys",
    "tracking_total_items",
    "tracking_total_prefixes",
    "current_eviction_exceeded_time",
    "current_active_defrag_time",
    "active_defrag_running",
];

/// Gauges of the `clients` and `memory` sections.
const GAUGES: &[&str] = &[
    "connected_clients",
    "blocked_clients",
    "clients_in_timeout_table",
    "used_memory",
    "used_memory_rss",
];

pub struct RedisPlan {
    host: String,
    port: u16,
    tls: Tls,
    username: Option<String>,
    password: Option<String>,
    timeout: Duration,
    pub shown: String,
}

impl RedisPlan {
    pub fn parse(url: &TargetUrl) -> Result<RedisPlan, InputError> {
        let tls = Tls::from_url(url, url.scheme == "rediss")?;
        let info = format!("redis://{}", url.location)
            .as_str()
            .into_connection_info()
            .map_err(|_| {
                InputError::new("not a Redis URL: expected redis://[:PASSWORD@]HOST[:PORT][/DB]")
            })?;
        let (host, port) = match info.addr() {
            redis::ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
            _ => return Err(InputError::new("not a Redis TCP URL")),
        };
        let settings = info.redis_settings();
        Ok(RedisPlan {
            shown: format!("{host}:{port}"),
            host,
            port,
            tls,
            username: settings.username().map(str::to_string),
            password: settings.password().map(str::to_string),
            timeout: Duration::from_secs(5),
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

/// A command as a RESP array.
fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// One reply: a simple string, an error (as `Err`) or a bulk string, read whole.
async fn reply(stream: &mut NetStream) -> Result<String, String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
            let head = String::from_utf8_lossy(&buf[1..end]).into_owned();
            match buf[0] {
                b'+' => return Ok(head),
                b'-' => return Err(head),
                b'$' => {
                    let len: usize = head.parse().map_err(|_| "a malformed reply".to_string())?;
                    if buf.len() >= end + 2 + len + 2 {
                        return Ok(
                            String::from_utf8_lossy(&buf[end + 2..end + 2 + len]).into_owned()
                        );
                    }
                }
                _ => return Err("an unexpected reply".into()),
            }
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

pub struct RedisSource {
    stream: NetStream,
    /// `INFO` calls so far, taken off the `info` command's.
    info_calls: f64,
    own_first_ms: Option<f64>,
    own_last_ms: f64,
    pub queries_sent: u64,
}

impl RedisSource {
    pub async fn connect(plan: &RedisPlan) -> Result<RedisSource, String> {
        let open = async {
            let tcp = socket::connect((plan.host.as_str(), plan.port))
                .await
                .map_err(|e| e.to_string())?;
            let mut stream = plan
                .tls
                .wrap(&plan.host, tcp, &plan.shown)
                .await
                .map_err(|e| e.message.to_string())?;
            if let Some(pw) = &plan.password {
                let auth = match &plan.username {
                    Some(user) => command(&["AUTH", user, pw]),
                    None => command(&["AUTH", pw]),
                };
                stream.write_all(&auth).await.map_err(|e| e.to_string())?;
                reply(&mut stream).await?;
            }
            Ok::<_, String>(stream)
        };
        let stream = tokio::time::timeout(plan.timeout, open)
            .await
            .map_err(|_| format!("no answer within {:?}", plan.timeout))??;
        Ok(RedisSource {
            stream,
            info_calls: 0.0,
            own_first_ms: None,
            own_last_ms: 0.0,
            queries_sent: u64::from(plan.password.is_some()),
        })
    }

    pub async fn read(&mut self) -> Result<Reading, String> {
        self.queries_sent += 1;
        self.info_calls += 1.0;
        self.stream
            .write_all(&command(&["INFO", "all"]))
            .await
            .map_err(|e| e.to_string())?;
        let text = reply(&mut self.stream).await?;
        let mut r = parse_info(&text);
        // The reply was built while this call ran: it is counted from the next one on.
        if let Some(info) = r.statements.get_mut("info") {
            let own_calls = self.info_calls - 1.0;
            let own_ms = if info.calls > 0.0 {
                info.time_ms * own_calls.min(info.calls) / info.calls
            } else {
                0.0
            };
            info.calls = (info.calls - own_calls).max(0.0);
            info.time_ms = (info.time_ms - own_ms).max(0.0);
            self.own_first_ms.get_or_insert(own_ms);
            self.own_last_ms = own_ms;
        }
        Ok(r)
    }

    /// The server time of the observer's own `INFO` calls (their share of the command's
    /// time) since its first reading.
    pub fn own_time_ms(&self) -> Option<f64> {
        Some(self.own_last_ms - self.own_first_ms?)
    }
}

/// `INFO all` as a reading.
fn parse_info(text: &str) -> Reading {
    let mut r = Reading::default();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("# ") {
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match section.as_str() {
            "stats" => {
                if let Some(v) = number(value) {
                    let k = format!("stats.{key}");
                    if STATS_GAUGES.contains(&key) || key.starts_with("instantaneous_") {
                        r.gauges.insert(k, v);
                    } else {
                        r.counters.insert(k, v);
                    }
                }
            }
            "cpu" => {
                if let Some(v) = number(value) {
                    r.counters.insert(format!("cpu.{key}"), v);
                }
            }
            "clients" | "memory" if GAUGES.contains(&key) => {
                if let Some(v) = number(value) {
                    r.gauges.insert(format!("{section}.{key}"), v);
                }
            }
            "commandstats" => {
                if let Some((name, total)) = command_stat(key, value) {
                    r.statements.insert(name, total);
                }
            }
            _ => {}
        }
    }
    r
}

/// `cmdstat_get:calls=5,usec=12,usec_per_call=2.40,...` as the command's totals.
fn command_stat(key: &str, value: &str) -> Option<(String, StatementTotal)> {
    let name = key.strip_prefix("cmdstat_")?.to_string();
    let field = |f: &str| {
        value
            .split(',')
            .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('=').and_then(number))
    };
    Some((
        name.clone(),
        StatementTotal {
            text: name,
            calls: field("calls")?,
            time_ms: field("usec")? / 1000.0,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_sections() {
        let text = "# Stats\r\ntotal_commands_processed:10\r\ninstantaneous_ops_per_sec:3\r\n\
                    # CPU\r\nused_cpu_sys:1.50\r\n# Clients\r\nconnected_clients:2\r\n\
                    # Commandstats\r\ncmdstat_get:calls=5,usec=12,usec_per_call=2.40,rejected_calls=0\r\n";
        let r = parse_info(text);
        assert_eq!(r.counters["stats.total_commands_processed"], 10.0);
        assert_eq!(r.gauges["stats.instantaneous_ops_per_sec"], 3.0);
        assert_eq!(r.counters["cpu.used_cpu_sys"], 1.5);
        assert_eq!(r.gauges["clients.connected_clients"], 2.0);
        assert_eq!(r.statements["get"].calls, 5.0);
        assert_eq!(r.statements["get"].time_ms, 0.012);
    }
}
