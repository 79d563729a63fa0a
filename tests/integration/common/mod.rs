//! Helpers shared by the integration tests: run the real binary in a temp folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use loadrig::result::{self, RunResult};

pub mod browser;
pub mod locks;
pub mod needs;
pub mod netns;
pub mod sql;
pub mod study;

pub use needs::server_url;

pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The integer the query's first row holds, read from the SQLite file `t.db` here.
    pub fn sqlite_count(&self, sql: &str) -> i64 {
        let c = rusqlite::Connection::open(self.join("t.db")).expect("open t.db");
        c.query_row(sql, [], |r| r.get(0)).expect(sql)
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// Run `loadrig ARGS` in this folder.
    pub fn loadrig(&self, args: &[&str]) -> Output {
        assert_cmd::Command::cargo_bin("loadrig")
            .expect("binary")
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .expect("run loadrig")
    }

    /// Run and insist on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.loadrig(args);
        assert!(
            out.status.success(),
            "loadrig {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `loadrig run WORKLOAD --target TARGET --ops OPS --clients CLIENTS` and `more`,
    /// insisting on success; returns stdout.
    pub fn run_ops(
        &self,
        workload: &str,
        target: &str,
        ops: &str,
        clients: &str,
        more: &[&str],
    ) -> String {
        let mut args = vec![
            "run",
            workload,
            "--target",
            target,
            "--ops",
            ops,
            "--clients",
            clients,
        ];
        args.extend_from_slice(more);
        self.ok(&args)
    }

    /// Start `loadrig ARGS` in this folder without waiting, stdout piped.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        std::process::Command::new(env!("CARGO_BIN_EXE_loadrig"))
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start loadrig")
    }

    /// Run `sleep://?latency=L` for each (file, L) at the same time, 2 clients and `samples`
    /// intervals of 100 ms each, so the runs share whatever else the machine is doing.
    pub fn sleep_runs_together(&self, runs: &[(&str, &str)], samples: u32) {
        let samples = samples.to_string();
        let children: Vec<_> = runs
            .iter()
            .map(|(file, latency)| {
                let target = format!("sleep://?latency={latency}");
                self.spawn(&[
                    "run",
                    "noop",
                    "--target",
                    &target,
                    "--clients",
                    "2",
                    "--samples",
                    &samples,
                    "--interval",
                    "100ms",
                    "-o",
                    file,
                ])
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Run and insist on exit status `code`; returns (stdout, stderr).
    pub fn code(&self, code: i32, args: &[&str]) -> (String, String) {
        let out = self.loadrig(args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(
            out.status.code(),
            Some(code),
            "loadrig {args:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        (stdout, stderr)
    }

    /// The names in this folder, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path())
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    pub fn result(&self, name: &str) -> RunResult {
        result::read(&self.join(name)).expect("result file")
    }
}

/// A workload that only writes `count`-free sequential keys: every op stores one new record.
pub const PUT_ONLY: &str = r#"
name = "put-only"
description = "each operation stores a new record"

[params]
size = 100

[[op]]
name = "put"
kv.put = { key = "r{seq}", value = "{bytes size}" }
"#;

/// The throwaway Redis's URL with database `db` instead of the one given, so a test file
/// has a database of its own beside the others.
#[track_caller]
pub fn redis_db(db: u32) -> Option<String> {
    let url = server_url("LOADRIG_REDIS_URL")?;
    let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
    Some(format!("{base}/{db}"))
}

/// A direct connection to the Redis database of `url`, emptied first.
pub fn redis_flushed(url: &str) -> redis::Connection {
    let mut c = redis::Client::open(url.replacen("redis://:", "redis://default:", 1))
        .expect("redis url")
        .get_connection()
        .expect("connect to redis");
    redis::cmd("FLUSHDB").exec(&mut c).expect("flushdb");
    c
}

/// The mixed kv workload the server tests share: `records` loaded (keys `k0..`), then gets
/// of the upper half, new puts (`n0..`), updates of the upper half from its start, deletes
/// from `k0` up, and with `missing` also gets of keys that never exist (`absent0..`).
pub fn mixed_kv(records: u64, batch: u64, missing: bool) -> String {
    let half = records / 2;
    let mut text = format!(
        r#"
name = "mixed"
[data]
count = {records}
key = "k{{seq}}"
value = "{{bytes 100}}"
batch = {batch}
[[op]]
name = "get"
weight = 4
kv.get = {{ key = "k{{uniform {half}..{records}}}" }}
[[op]]
name = "put"
weight = 2
kv.put = {{ key = "n{{seq}}", value = "{{bytes 50}}" }}
[[op]]
name = "update"
weight = 1
kv.update = {{ key = "k{{seq {half}}}", value = "{{bytes 70}}" }}
[[op]]
name = "delete"
weight = 1
kv.delete = {{ key = "k{{seq}}" }}
"#
    );
    if missing {
        text.push_str(
            r#"[[op]]
name = "missing"
weight = 1
kv.get = { key = "absent{seq}" }
"#,
        );
    }
    text
}

/// Run loadrig under `ulimit` settings (a shell sets them, then becomes loadrig).
pub fn under_ulimit(d: &Dir, limits: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{limits} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_loadrig"))
        .args(args)
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run sh")
}

/// An RFC 3339 instant `secs` from now, the one `--start-at` every shard is given.
pub fn start_in(secs: u64) -> String {
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Run `shards` shard processes of `loadrig run ARGS` together, each writing `sI.json`.
pub fn run_shards(d: &Dir, shards: usize, args: &[&str]) -> Vec<String> {
    let at = start_in(2);
    let children: Vec<_> = (0..shards)
        .map(|i| {
            let shard = format!("{i}/{shards}");
            let out = format!("s{i}.json");
            let mut all: Vec<&str> = args.to_vec();
            all.extend(["--shard", &shard, "--start-at", &at, "-o", &out]);
            d.spawn(&all)
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("shard ran");
        assert!(
            out.status.success(),
            "shard failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (0..shards).map(|i| format!("s{i}.json")).collect()
}
