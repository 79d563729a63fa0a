//! A network fault: a throwaway Redis in a network namespace of its own, loadrig in another,
//! joined by a veth pair whose server end is taken down mid-run for longer than
//! `--op-timeout`, then brought up. (`tc netem` is not available here: the link going down
//! is the fault.) The run goes on: the operations caught by the outage fail as timeouts or
//! connect errors, every operation is counted exactly once, and the run recovers.
//!
//! Needs `ip netns` (root) and redis-server (`common::needs`: skipped where they are
//! missing, a failure under `LOADRIG_REQUIRE_ALL=1`). The namespaces (and the veths in them)
//! are removed whatever happens.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::netns::Namespaces;
use crate::common::{Dir, PUT_ONLY};
use loadrig::vocab::ErrorClass;

const PORT: u16 = 6392;
const CLIENTS: u64 = 4;
const OPS: u64 = 1200;

/// Server 10.214.0.1 (namespace `{tag}s`, Redis started) and client 10.214.0.2 (`{tag}c`)
/// over one veth pair, whose server end is `{tag}b`; `None` when `ip netns` is not
/// permitted here.
fn network(tag: &str, dir: &Dir) -> Option<Namespaces> {
    let (s, c) = (format!("{tag}s"), format!("{tag}c"));
    let mut net = Namespaces::new(&s)?;
    net.add(&c);
    let (a, b) = (format!("{tag}a"), format!("{tag}b"));
    net.run(&[
        vec!["link", "add", &a, "type", "veth", "peer", "name", &b],
        vec!["link", "set", &b, "netns", &s],
        vec!["link", "set", &a, "netns", &c],
        vec!["-n", &s, "addr", "add", "10.214.0.1/24", "dev", &b],
        vec!["-n", &c, "addr", "add", "10.214.0.2/24", "dev", &a],
        vec!["-n", &s, "link", "set", &b, "up"],
        vec!["-n", &c, "link", "set", &a, "up"],
    ]);
    net.start_redis(PORT, dir);
    Some(net)
}

#[test]
fn a_link_down_longer_than_the_op_timeout_is_survived_and_every_op_counted_once() {
    let tag = format!("lf{}", std::process::id() % 100_000);
    let d = Dir::new();
    let Some(net) = network(&tag, &d) else {
        return;
    };
    let workload = d.write("put.toml", PUT_ONLY);
    // 4 clients each doing 300 puts, 10 ms apart: about 3 s of work, with the outage on top.
    let run = Command::new("ip")
        .args(["netns", "exec", &net.names[1]])
        .arg(env!("CARGO_BIN_EXE_loadrig"))
        .arg("run")
        .arg(&workload)
        .args(["-t", &format!("redis://10.214.0.1:{PORT}/0")])
        .args(["-c", &CLIENTS.to_string(), "--ops", &OPS.to_string()])
        .args(["--think-time", "10ms", "--op-timeout", "300ms"])
        .args(["--interval", "250ms", "-o"])
        .arg(d.join("r.json"))
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loadrig");
    // Once operations flow (the stream has intervals), the link goes down for 1.5 s.
    let stream = d.join("r.jsonl");
    let until = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&stream).map_or(0, |s| s.lines().count()) < 3 {
        assert!(Instant::now() < until, "the run did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let link = format!("{tag}b");
    net.run(&[vec!["-n", net.server(), "link", "set", &link, "down"]]);
    std::thread::sleep(Duration::from_millis(1500));
    net.run(&[vec!["-n", net.server(), "link", "set", &link, "up"]]);
    let out = run.wait_with_output().expect("loadrig ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let r = d.result("r.json");
    // Every operation counted exactly once, as a success or an error.
    assert_eq!(
        r.total.ok + r.total.errors,
        OPS,
        "{:?}",
        r.total.errors_by_class
    );
    let timeouts = r
        .total
        .errors_by_class
        .get(&ErrorClass::Timeout)
        .copied()
        .unwrap_or(0);
    let connects = r
        .total
        .errors_by_class
        .get(&ErrorClass::Connect)
        .copied()
        .unwrap_or(0);
    assert!(
        timeouts > 0,
        "the outage outlasted the op timeout: {:?}",
        r.total.errors_by_class
    );
    assert_eq!(
        timeouts + connects,
        r.total.errors,
        "only timeouts and connect errors"
    );
    assert!(r.total.reconnects > 0, "timed-out sessions were replaced");
    // Recovered: the last interval's operations succeed again. (Mostly, not all: on a
    // crowded machine a 300 ms limit can catch a stray operation after the link is back.)
    let last = r.intervals.last().expect("intervals");
    assert!(last.ok > 0 && last.errors * 4 < last.ok, "{last:?}");
    // Every success stored its key. A put that failed as a timeout may still have reached
    // the server (sent before the link went down, its bytes retransmitted once it came back,
    // or sent on a connection made just as the link returned, too late for the limit):
    // never more than one per timeout.
    let keys: u64 = net.redis_cli(PORT, &["dbsize"]).parse().expect("dbsize");
    eprintln!(
        "link down 1.5 s: ok {}, timeouts {timeouts}, connect errors {connects}, reconnects {}, keys {keys}",
        r.total.ok, r.total.reconnects
    );
    assert!(
        (r.total.ok..=r.total.ok + timeouts).contains(&keys),
        "{keys} keys for {} successful puts and {timeouts} timeouts",
        r.total.ok
    );
}
