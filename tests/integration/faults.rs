//! Faults against real servers: kill -9 and restart of Redis, PostgreSQL, MariaDB and nginx
//! (HTTP/2) mid-run, SIGSTOP longer than `--op-timeout`, a restart during the data load.
//! Each test starts its own server in its own services dir (scripts/services.sh, needs
//! root), since it kills it: the servers the other tests use are never touched.
//!
//! Every operation is counted exactly once: successes + errors = the operations asked for
//! (`--ops`), and the keys stored are the successes plus at most the operations in flight
//! when the server went away (their answer was lost, not their write).
#![cfg(unix)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::sql::{ints, mysql_row, pg_row};
use crate::common::{needs, Dir};
use loadrig::result::{RunResult, RunStatus};
use loadrig::vocab::ErrorClass;

const CLIENTS: u64 = 4;

/// One throwaway server in a services dir of its own, stopped and removed on drop.
struct Server {
    name: &'static str,
    state: PathBuf,
    env: HashMap<String, String>,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh")
}

impl Server {
    /// Start `name`, or `None` (skipped) when not root; LOADRIG_REQUIRE_ALL=1 fails instead.
    fn up(name: &'static str, test: &str) -> Option<Server> {
        needs::root("to start servers of the test's own with scripts/services.sh")?;
        let state = PathBuf::from(format!("/tmp/loadrig-faults-{}-{test}", std::process::id()));
        let mut server = Server {
            name,
            state,
            env: HashMap::new(),
        };
        server.services(&["up", name]);
        let env = server.services(&["env"]);
        server.env = env
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            // A value with `?` or `&` (nginx's HTTP/2 URLs) comes in single quotes.
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect();
        Some(server)
    }

    fn services(&self, args: &[&str]) -> String {
        let out = Command::new(script())
            .args(args)
            .env("LOADRIG_SERVICES_DIR", &self.state)
            .env("LOADRIG_SERVICES_DURABLE", "1")
            .output()
            .expect("run scripts/services.sh");
        assert!(
            out.status.success(),
            "services.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn var(&self, name: &str) -> &str {
        &self.env[name]
    }

    fn signal(&self, signal: i32) {
        let pid: i32 = self.services(&["pid", self.name]).trim().parse().unwrap();
        // nginx's workers outlive their master and go on serving: signal the whole process
        // group (services.sh starts each server in a session of its own).
        let pid = if self.name == "nginx" { -pid } else { pid };
        // SAFETY: kill(2) on the server this test started (services.sh checked the pid).
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    fn restart(&self) {
        self.services(&["restart", self.name]);
    }

    /// The records in the namespace.
    fn stored(&self) -> u64 {
        match self.name {
            "redis" => {
                let out = Command::new("redis-cli")
                    .args(["-p", self.var("LOADRIG_REDIS_PORT"), "--no-auth-warning"])
                    .args(["-a", self.var("LOADRIG_REDIS_PASSWORD"), "dbsize"])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
            }
            // One file per key in the http:// target's default kv collection.
            "nginx" => std::fs::read_dir(self.state.join("nginx/www/dav/loadrig"))
                .map_or(0, |d| d.count() as u64),
            "postgres" => ints(pg_row(
                self.var("LOADRIG_PG_URL"),
                "SELECT count(*) FROM loadrig_kv",
            ))[0] as u64,
            _ => ints(mysql_row(
                self.var("LOADRIG_MYSQL_URL"),
                "SELECT count(*) FROM loadrig_kv",
            ))[0] as u64,
        }
    }

    fn url(&self) -> &str {
        match self.name {
            "redis" => self.var("LOADRIG_REDIS_URL"),
            "postgres" => self.var("LOADRIG_PG_URL"),
            "nginx" => self.var("LOADRIG_HTTP2_URL"),
            _ => self.var("LOADRIG_MYSQL_URL"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("down")
            .env("LOADRIG_SERVICES_DIR", &self.state)
            .output();
        let _ = std::fs::remove_file(self.state.with_extension("lock"));
    }
}

/// Each operation stores a new key; clients take interleaved numbers, so no two collide.
const PUTS: &str = r#"
name = "puts"
[[op]]
name = "put"
kv.put = { key = "r{seq}", value = "v{seq}" }
"#;

/// Start `ops` puts against the server; return once the stream shows `intervals`.
fn start_puts(d: &Dir, s: &Server, ops: u64, extra: &[&str]) -> std::process::Child {
    d.write("puts.toml", PUTS);
    let ops = ops.to_string();
    let clients = CLIENTS.to_string();
    let mut args = vec![
        "run",
        "puts.toml",
        "--target",
        s.url(),
        "--clients",
        &clients,
        "--think-time",
        "1ms",
        "--ops",
        &ops,
        "--interval",
        "200ms",
        "-o",
        "r.json",
    ];
    args.extend_from_slice(extra);
    let child = d.spawn(&args);
    let started = Instant::now();
    while std::fs::read_to_string(d.join("r.jsonl")).map_or(0, |t| t.lines().count()) < 4 {
        assert!(started.elapsed() < Duration::from_secs(60), "run starts");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn finish(d: &Dir, child: std::process::Child) -> RunResult {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    d.result("r.json")
}

/// Nothing lost, nothing counted twice, errors by class per interval adding up.
fn assert_counted_once(r: &RunResult, s: &Server, ops: u64, classes: &[ErrorClass]) {
    assert_eq!(r.status, RunStatus::Complete);
    assert_eq!(
        r.total.ok + r.total.errors,
        ops,
        "every operation counted once"
    );
    assert!(r.total.errors > 0, "the fault was seen");
    for class in r.total.errors_by_class.keys() {
        assert!(classes.contains(class), "unexpected class {class:?}: {r:?}");
    }
    let per_interval: u64 = r.intervals.iter().map(|i| i.errors).sum();
    assert_eq!(per_interval, r.total.errors);
    let by_class: u64 = r
        .intervals
        .iter()
        .flat_map(|i| i.ops.iter().flat_map(|o| o.errors_by_class.values()))
        .sum();
    assert_eq!(by_class, r.total.errors);
    assert!(r.total.reconnects > 0, "sessions were replaced");
    assert_recovered(r);
    let stored = s.stored();
    assert!(
        stored >= r.total.ok,
        "a success was lost: {stored} < {}",
        r.total.ok
    );
    assert!(
        stored <= r.total.ok + r.total.errors.min(CLIENTS * 2),
        "stored {stored}, ok {}, errors {}",
        r.total.ok,
        r.total.errors
    );
}

/// The run went on after the fault: an interval from the last one with errors on has
/// successes. Not "the last interval has": a run ends where its last client finishes, and the
/// interval that holds that moment may be a sliver that completed nothing (one CI run in
/// some forty).
fn assert_recovered(r: &RunResult) {
    let last_fault = (r.intervals.iter())
        .rposition(|i| i.errors > 0)
        .expect("the fault shows in the intervals");
    assert!(
        r.intervals[last_fault..].iter().any(|i| i.ok > 0),
        "no success from the fault's last interval on: {:?}",
        (r.intervals.iter())
            .map(|i| (i.start_s, i.end_s, i.ok, i.errors))
            .collect::<Vec<_>>()
    );
}

fn kill_and_restart(name: &'static str, ops: u64) {
    let Some(s) = Server::up(name, &format!("kill-{name}")) else {
        return;
    };
    let d = Dir::new();
    let child = start_puts(&d, &s, ops, &[]);
    s.signal(libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(500));
    s.restart();
    let r = finish(&d, child);
    assert_counted_once(&r, &s, ops, &[ErrorClass::Connect]);
}

#[test]
fn redis_killed_and_restarted_mid_run() {
    kill_and_restart("redis", 8_000);
}

#[test]
fn postgres_killed_and_restarted_mid_run() {
    kill_and_restart("postgres", 6_000);
}

#[test]
fn mariadb_killed_and_restarted_mid_run() {
    kill_and_restart("mariadb", 6_000);
}

/// HTTP/2 (h2c), two streams on each connection: they fail together when nginx goes, and
/// at most those in flight (2 a connection) stored a key whose answer was lost.
#[test]
fn nginx_killed_and_restarted_mid_run_over_http2() {
    let Some(s) = Server::up("nginx", "kill-nginx") else {
        return;
    };
    let d = Dir::new();
    // Enough operations that the run is still going when the kill comes (a quiet
    // machine finished 1,000 before it).
    let ops = 8_000;
    let child = start_puts(&d, &s, ops, &["--pipeline", "2"]);
    s.signal(libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(500));
    s.restart();
    let r = finish(&d, child);
    assert_counted_once(&r, &s, ops, &[ErrorClass::Connect]);
}

/// A server that stops answering (SIGSTOP) for longer than `--op-timeout`: operations time
/// out, their sessions are replaced, and the run carries on once it answers again.
#[test]
fn a_stopped_server_times_out_and_the_run_recovers() {
    let Some(s) = Server::up("redis", "stop") else {
        return;
    };
    let d = Dir::new();
    let ops = 8_000;
    let child = start_puts(&d, &s, ops, &["--op-timeout", "200ms"]);
    s.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1_500));
    s.signal(libc::SIGCONT);
    let r = finish(&d, child);
    assert!(r.total.errors_by_class[&ErrorClass::Timeout] >= CLIENTS);
    assert_eq!(r.total.ok + r.total.errors, ops);
    assert!(r.total.reconnects > 0);
    assert_recovered(&r);
    // A timed-out write may still be applied when the server resumes.
    let stored = s.stored();
    assert!(stored >= r.total.ok && stored <= r.total.ok + r.total.errors);
}

/// A server restarted during the data load: the run stops with a message that says how far
/// the load got, exit 2, and no result file; never a run on a silently short data set.
fn restart_during_load(name: &'static str) {
    let Some(s) = Server::up(name, &format!("load-{name}")) else {
        return;
    };
    let d = Dir::new();
    d.write(
        "load.toml",
        r#"
name = "load"
[data]
count = 3000000
key = "k{seq}"
value = "v"
batch = 100
[[op]]
name = "get"
kv.get = { key = "k{uniform 0..3000000}" }
"#,
    );
    let child = d.spawn(&[
        "run",
        "load.toml",
        "-t",
        s.url(),
        "--ops",
        "100",
        "-o",
        "r.json",
    ]);
    std::thread::sleep(Duration::from_millis(1_500));
    s.signal(libc::SIGKILL);
    s.restart();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("loading data after"), "{stderr}");
    assert!(!d.join("r.json").exists());
    assert!(!stderr.contains(s.var(if name == "redis" {
        "LOADRIG_REDIS_PASSWORD"
    } else {
        "LOADRIG_PG_PASSWORD"
    })));
}

#[test]
fn redis_restarted_during_the_load_fails_clearly() {
    restart_during_load("redis");
}

#[test]
fn postgres_restarted_during_the_load_fails_clearly() {
    restart_during_load("postgres");
}
