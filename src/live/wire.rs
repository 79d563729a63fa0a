//! The stream from a shard to the collector: one JSON document per line, over TCP (TLS
//! when the collector is not on loopback).
//!
//! ```text
//! shard → {"hello": {"stream": "loadrig-collect", "version": 1, "token": …, "session": …,
//!                    "shard": I, "count": N, "file": …, "workload": …, "load": …, "target": …}}
//! collector → {"accepted": {"have": K, "server": true}}
//!                                               (it holds this shard's intervals 1..=K;
//!                                                `server`: it reads `server` lines)
//!           | {"refused": {"message": …, "help": …}}   (then it closes the connection)
//! shard → {"header": STREAM HEADER}             (as the .jsonl stream's first line)
//!         {"interval": INTERVAL RECORD}          (each finished interval, with per_client)
//!         {"server": {"index": K, "figures": …}} (interval K's server figures, once the
//!                                                 observer's reading joined it; only to a
//!                                                 collector that said `server`)
//!         {"ping": {}}                           (when there was nothing to send for a while)
//!         {"result": RUN RESULT}                 (the shard's result file, at its end)
//! collector → {"received": {}}
//! ```
//!
//! `version` changes whenever a message changes meaning; a collector refuses a stream of
//! another version, naming both. A message added later goes only to a collector whose
//! `accepted` says it reads it (an older collector's does not: `server` is absent, read as
//! false), so a newer shard and an older collector still speak version 1; an older shard
//! just sends no `server` lines. The token is compared in constant time and never logged.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::engine::LoadPlan;
use crate::error::InputError;
use crate::result::server::ServerIntervalRecord;
use crate::result::stream::StreamHeader;
use crate::result::{IntervalRecord, RunResult, TargetRecord, WorkloadRecord};

/// Where a shard sends its intervals (`--collect`), with what to show the collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectTo {
    /// `HOST:PORT` as given.
    pub addr: String,
    /// The shared token (`--collect-token-file`, else `LOADRIG_COLLECT_TOKEN`); never
    /// printed or recorded.
    pub token: Option<String>,
    /// `--collect-ca`: the CA that signed the collector's certificate.
    pub ca: Option<PathBuf>,
}

pub const STREAM: &str = "loadrig-collect";
pub const VERSION: u32 = 1;
/// Where the token comes from when no file names it.
pub const TOKEN_ENV: &str = "LOADRIG_COLLECT_TOKEN";
/// The longest first line a collector reads before it knows who is talking.
pub const MAX_HELLO: usize = 1 << 20;
/// The longest line after that (a long run's result, every interval's histograms in it).
pub const MAX_LINE: usize = 512 << 20;

/// Who is sending: the shard, its run (as `loadrig merge` compares shards) and a session
/// number that tells a reconnection of the same process from another process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub stream: String,
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub session: String,
    pub shard: usize,
    pub count: usize,
    /// The shard's own result file, as it was given (`-o`).
    pub file: String,
    pub loadrig_version: String,
    pub workload: WorkloadRecord,
    pub load: LoadPlan,
    pub target: TargetRecord,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToCollector {
    Hello(Box<Hello>),
    Header(Box<StreamHeader>),
    Interval(Box<IntervalRecord>),
    Server(Box<ServerFigures>),
    Ping {},
    Result(Box<RunResult>),
}

/// An interval's server figures, sent after the interval (the observer's reading joins
/// it later); `index` is the interval record's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerFigures {
    pub index: u64,
    pub figures: ServerIntervalRecord,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToShard {
    Accepted {
        have: u64,
        /// It reads `server` lines (absent from an older collector's answer).
        #[serde(default)]
        server: bool,
    },
    Refused {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        help: Option<String>,
    },
    Received {},
}

/// One message as a line.
pub fn line<T: Serialize>(m: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec(m).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Read one line of at most `max` bytes (without its newline): `None` at the end of the
/// stream, an error for a longer line or a read error.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!out.is_empty()).then_some(out));
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if out.len() + take > max.saturating_add(1) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {max} bytes"),
            ));
        }
        out.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            out.pop();
            return Ok(Some(out));
        }
    }
}

/// `--collect HOST:PORT` (or `[IPv6]:PORT`): the host and the port.
pub fn parse_collector(addr: &str) -> Result<(String, u16), InputError> {
    let bad = || {
        InputError::new(format!("--collect {addr}: expected HOST:PORT"))
            .help("the address `loadrig collect --listen` prints, e.g. --collect 127.0.0.1:7070")
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// Whether `host` names this machine's loopback (then the stream may go without TLS).
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The shared token: the file's first line when a file is named, else the environment's
/// `LOADRIG_COLLECT_TOKEN`; none when neither holds one.
pub fn read_token(file: Option<&Path>) -> Result<Option<String>, InputError> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            InputError::new(format!(
                "token file {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        let token = text.lines().next().unwrap_or("").trim().to_string();
        if token.is_empty() {
            return Err(InputError::new(format!(
                "token file {}: it is empty",
                path.display()
            ))
            .help("put the shared token on its first line (for example: openssl rand -hex 32 > FILE)"));
        }
        return Ok(Some(token));
    }
    Ok(std::env::var(TOKEN_ENV)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty()))
}

/// Equal tokens, compared without stopping at the first difference.
pub fn same_token(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_addresses() {
        assert_eq!(
            parse_collector("127.0.0.1:7070").unwrap(),
            ("127.0.0.1".into(), 7070)
        );
        assert_eq!(parse_collector("[::1]:9").unwrap(), ("::1".into(), 9));
        assert_eq!(
            parse_collector("collect.ns.svc:7070").unwrap(),
            ("collect.ns.svc".into(), 7070)
        );
        for bad in ["", "7070", "host:", ":80", "h:0", "h:x"] {
            assert!(parse_collector(bad).is_err(), "{bad}");
        }
        assert!(is_loopback("127.0.0.2") && is_loopback("::1") && is_loopback("localhost"));
        assert!(!is_loopback("10.0.0.1") && !is_loopback("collect.ns.svc"));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "abcd"));
        assert!(!same_token("", "a"));
    }

    #[test]
    fn an_older_collectors_acceptance_reads_as_no_server_lines() {
        let old: ToShard = serde_json::from_str(r#"{"accepted":{"have":3}}"#).unwrap();
        assert!(matches!(
            old,
            ToShard::Accepted {
                have: 3,
                server: false
            }
        ));
        let new = line(&ToShard::Accepted {
            have: 0,
            server: true,
        });
        assert_eq!(new, b"{\"accepted\":{\"have\":0,\"server\":true}}\n");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lines_are_read_whole_and_bounded() {
        let mut r = tokio::io::BufReader::with_capacity(4, &b"one\ntwo-long\nlast"[..]);
        assert_eq!(read_line(&mut r, 100).await.unwrap().unwrap(), b"one");
        assert_eq!(read_line(&mut r, 100).await.unwrap().unwrap(), b"two-long");
        assert_eq!(read_line(&mut r, 100).await.unwrap().unwrap(), b"last");
        assert!(read_line(&mut r, 100).await.unwrap().is_none());
        let mut r = tokio::io::BufReader::new(&b"0123456789\n"[..]);
        assert!(read_line(&mut r, 5).await.is_err());
    }
}
