//! A network fault: a throwaway Redis in a network namespace of its own, loadrig in another,
//! joined by a veth pair whose server end is taken down mid-run for longer than
//! `--op-timeout`, then brought up. (`tc netem` is not available here: the link going down
//! is the fault.) The run goes on: the operations caught by the outage fail as timeouts or
//! connect errors, every operation is counted exactly once, and the run recovers.
//!
//! Needs `ip netns` (root); skipped with a message where it is not permitted. The
//! namespaces (and the veths in them) are removed whatever happens.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Dir, PUT_ONLY};
use loadrig::vocab::ErrorClass;

const PORT: u16 = 6392;
const CLIENTS: u64 = 4;
const OPS: u64 = 1200;

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The two namespaces, the server started in the first; removed and stopped on drop.
struct Net {
    server_ns: String,
    client_ns: String,
    /// The veth end in the server's namespace.
    link: String,
    server: Option<Child>,
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        ip(&["netns", "del", &self.server_ns]);
        ip(&["netns", "del", &self.client_ns]);
    }
}

/// Server 10.214.0.1 and client 10.214.0.2 over one veth pair; `None` when `ip netns` is
/// not permitted here.
fn network(tag: &str, dir: &Dir) -> Option<Net> {
    let (s, c) = (format!("{tag}s"), format!("{tag}c"));
    if !ip(&["netns", "add", &s]) {
        return None;
    }
    let mut net = Net {
        server_ns: s.clone(),
        client_ns: c.clone(),
        link: format!("{tag}b"),
        server: None,
    };
    assert!(ip(&["netns", "add", &c]));
    let (a, b) = (format!("{tag}a"), net.link.clone());
    for args in [
        vec!["link", "add", &a, "type", "veth", "peer", "name", &b],
        vec!["link", "set", &b, "netns", &s],
        vec!["link", "set", &a, "netns", &c],
        vec!["-n", &s, "addr", "add", "10.214.0.1/24", "dev", &b],
        vec!["-n", &c, "addr", "add", "10.214.0.2/24", "dev", &a],
        vec!["-n", &s, "link", "set", &b, "up"],
        vec!["-n", &c, "link", "set", &a, "up"],
        vec!["-n", &s, "link", "set", "lo", "up"],
        vec!["-n", &c, "link", "set", "lo", "up"],
    ] {
        assert!(ip(&args), "ip {args:?}");
    }
    net.server = Some(start_redis(&s, dir));
    let until = Instant::now() + Duration::from_secs(10);
    while redis_cli(&net, &["ping"]) != "PONG" {
        assert!(Instant::now() < until, "redis-server did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(net)
}

fn start_redis(ns: &str, dir: &Dir) -> Child {
    Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "redis-server",
            "--port",
            &PORT.to_string(),
        ])
        .args(["--bind", "0.0.0.0", "--protected-mode", "no", "--save", ""])
        .args(["--appendonly", "no", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server")
}

fn redis_cli(net: &Net, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &net.server_ns, "redis-cli", "-p"])
        .arg(PORT.to_string())
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_link_down_longer_than_the_op_timeout_is_survived_and_every_op_counted_once() {
    let tag = format!("lf{}", std::process::id() % 100_000);
    let d = Dir::new();
    let Some(net) = network(&tag, &d) else {
        eprintln!("skipped: `ip netns add` is not permitted here (needs root)");
        return;
    };
    let workload = d.write("put.toml", PUT_ONLY);
    // 4 clients each doing 300 puts, 10 ms apart: about 3 s of work, with the outage on top.
    let run = Command::new("ip")
        .args(["netns", "exec", &net.client_ns])
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
    assert!(ip(&[
        "-n",
        &net.server_ns,
        "link",
        "set",
        &net.link,
        "down"
    ]));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(ip(&["-n", &net.server_ns, "link", "set", &net.link, "up"]));
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
    // Recovered: the last interval's operations succeeded.
    let last = r.intervals.last().expect("intervals");
    assert!(last.ok > 0 && last.errors == 0, "{last:?}");
    // Every success stored its key. A put that failed as a timeout may still have reached
    // the server (sent before the link went down, its bytes retransmitted once it came back,
    // or sent on a connection made just as the link returned, too late for the limit):
    // never more than one per timeout.
    let keys: u64 = redis_cli(&net, &["dbsize"]).parse().expect("dbsize");
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
