//! A sharded run collected as it goes (`loadrig collect`, `run --shard I/N --collect ADDR`):
//! the collector's result is `loadrig merge`'s of the shards' files; a shard killed mid-run
//! is named and the intervals without it are marked; streams that are not of the run (a
//! wrong token, a shard index already sending, another run) are refused alone, and the
//! refused shard runs nothing; a collector that cannot be reached costs the shard nothing;
//! a collector killed mid-run and started again rebuilds the run from the shards.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Dir;
use loadrig::result::RunResult;

pub const SLEEP: &str = "sleep://?latency=1ms";

pub use crate::common::start_in;

/// `loadrig ARGS` in `dir`, its output into `dir/NAME.out` (read while it runs).
pub fn spawn_logged(dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> Child {
    let out = std::fs::File::create(dir.join(format!("{name}.out"))).unwrap();
    let err = out.try_clone().unwrap();
    Command::new(env!("CARGO_BIN_EXE_loadrig"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("LOADRIG_COLLECT_TOKEN")
        .envs(env.iter().copied())
        .args(args)
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .expect("start loadrig")
}

/// What `dir/NAME.out` holds so far.
pub fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap_or_default()
}

/// Wait until `dir/NAME.out` holds `text` (`count` times); its text then.
pub fn wait_for(dir: &Path, name: &str, text: &str, count: usize) -> String {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let l = log(dir, name);
        if l.matches(text).count() >= count {
            return l;
        }
        assert!(Instant::now() < until, "no {text:?} in {name}:\n{l}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A collector started in `dir` on `listen`: the child and the address it prints.
pub fn collector(
    dir: &Path,
    listen: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Child, String) {
    let mut args = vec!["collect", "--listen", listen];
    args.extend(extra);
    let child = spawn_logged(dir, "collect", &args, env);
    let text = wait_for(dir, "collect", " for ", 1);
    let addr = text
        .split("listening on ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .expect("the collector's address")
        .to_string();
    (child, addr)
}

/// Shard `i` of `n`: `loadrig run ARGS --shard i/n --start-at AT --collect ADDR -o sI.json`,
/// its output in `sI.out`.
pub fn shard(
    dir: &Path,
    i: usize,
    n: usize,
    at: &str,
    addr: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Child {
    shard_as(dir, &format!("s{i}"), i, n, at, addr, args, env)
}

/// [`shard`] writing `NAME.json` and `NAME.out`.
#[allow(clippy::too_many_arguments)]
pub fn shard_as(
    dir: &Path,
    name: &str,
    i: usize,
    n: usize,
    at: &str,
    addr: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let shard = format!("{i}/{n}");
    let out = format!("{name}.json");
    let mut all = vec!["run"];
    all.extend(args);
    all.extend([
        "--shard",
        &shard,
        "--start-at",
        at,
        "--collect",
        addr,
        "-o",
        &out,
    ]);
    spawn_logged(dir, name, &all, env)
}

pub fn succeeded(mut c: Child, dir: &Path, name: &str) {
    let status = c.wait().expect("ran");
    assert!(
        status.success(),
        "{name} failed with {status}:\n{}",
        log(dir, name)
    );
}

/// `loadrig merge FILES -o merged.json [EXTRA]`, and the merged run.
pub fn merge(d: &Dir, files: &[&str], extra: &[&str]) -> RunResult {
    let mut args = vec!["merge"];
    args.extend(files);
    args.extend(["-o", "merged.json"]);
    args.extend(extra);
    d.ok(&args);
    d.result("merged.json")
}

/// The collector's run is the merge's, field for field, but for what only the collector
/// records; and interval for interval, histogram for histogram.
pub fn same_as_merge(collected: &RunResult, merged: &RunResult) {
    let plain = |r: &RunResult| {
        let mut v = serde_json::to_value(r).unwrap();
        if let Value::Object(m) = &mut v {
            m.remove("collect");
            m.remove("dashboard");
        }
        v
    };
    assert_eq!(collected.intervals.len(), merged.intervals.len());
    for (a, b) in collected.intervals.iter().zip(&merged.intervals) {
        for (x, y) in a.ops.iter().zip(&b.ops) {
            assert_eq!(
                x.histogram.decode().unwrap(),
                y.histogram.decode().unwrap(),
                "interval {}, {}",
                a.index,
                x.name
            );
        }
    }
    assert_eq!(
        collected.total.histogram.decode().unwrap(),
        merged.total.histogram.decode().unwrap()
    );
    assert_eq!(plain(collected), plain(merged));
}

const LOAD: &[&str] = &[
    "noop", "--target", SLEEP, "-c", "6", "-d", "3s", "--warmup", "1s",
];

#[test]
fn a_shard_killed_mid_run_is_named_and_the_intervals_without_it_marked() {
    let d = Dir::new();
    #[rustfmt::skip]
    let (col, addr) = collector(d.path(), "127.0.0.1:0", &["--shards", "3", "-o", "run.json", "--patience", "3s"], &[]);
    let at = start_in(2);
    let load = ["noop", "--target", SLEEP, "-c", "6", "-d", "4s"];
    let mut shards: Vec<Child> = (0..3)
        .map(|i| shard(d.path(), i, 3, &at, &addr, &load, &[]))
        .collect();
    // Once shard 1 has finished two intervals (its own stream holds them): it dies.
    let until = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(d.join("s1.jsonl")).map_or(0, |t| t.lines().count()) < 3 {
        assert!(Instant::now() < until, "shard 1 never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    shards[1].kill().unwrap();
    let _ = shards[1].wait();
    for i in [2, 0] {
        succeeded(shards.remove(i), d.path(), &format!("s{i}"));
    }
    succeeded(col, d.path(), "collect");
    let said = log(d.path(), "collect");
    eprintln!(
        "$ loadrig collect --listen 127.0.0.1:0 --shards 3 -o run.json --patience 3s\n{said}"
    );
    let r = d.result("run.json");
    let c = r.collect.clone().expect("collect record");
    assert_eq!(c.finished, [0, 2]);
    assert_eq!(c.stopped.len(), 1, "{c:?}");
    let stopped = &c.stopped[0];
    assert_eq!(stopped.shard, 1);
    assert!(stopped.after_interval >= 1, "{stopped:?}");
    assert!(
        said.contains(&format!(
            "shard 1 stopped sending after interval {}: its connection closed",
            stopped.after_interval
        )),
        "{said}"
    );
    // Every later interval is marked as lacking shard 1, and none before.
    let last = r.intervals.last().unwrap().index;
    let partial: Vec<u64> = c.partial_intervals.iter().map(|p| p.index).collect();
    assert_eq!(
        partial,
        ((stopped.after_interval + 1)..=last).collect::<Vec<_>>()
    );
    assert!(c.partial_intervals.iter().all(|p| p.missing_shards == [1]));
    let shards = r.shards.clone().expect("shards");
    assert!(shards.partial && shards.interrupted == [1], "{shards:?}");
    // Nothing lost: the living shards' files, and shard 1's intervals up to its last one
    // sent (its own stream holds the same).
    let stream = std::fs::read_to_string(d.join("s1.jsonl")).unwrap();
    let sent: u64 = stream
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|i| i["index"].as_u64().unwrap() <= stopped.after_interval && i["warmup"] == false)
        .map(|i| i["ok"].as_u64().unwrap())
        .sum();
    let files = d.result("s0.json").total.ok + d.result("s2.json").total.ok;
    assert_eq!(r.total.ok, files + sent);
    assert!(sent > 0);
}

#[test]
fn three_shards_collected_equal_their_merge_and_streams_not_of_the_run_are_refused_alone() {
    let d = Dir::new();
    d.write("token", "right-token\n");
    d.write("wrong", "wrong-token\n");
    #[rustfmt::skip]
    let (col, addr) = collector(d.path(), "127.0.0.1:0", &["--shards", "3", "-o", "run.json", "--token-file", "token"], &[]);
    let at = start_in(4);
    let env = [("LOADRIG_COLLECT_TOKEN", "right-token")];
    let shards: Vec<Child> = (0..3)
        .map(|i| shard(d.path(), i, 3, &at, &addr, LOAD, &env))
        .collect();
    wait_for(d.path(), "collect", "connected from", 3);
    let refused = |name: &str, i: usize, n: usize, args: &[&str], env: &[(&str, &str)]| {
        let mut c = shard_as(d.path(), name, i, n, &at, &addr, args, env);
        let status = c.wait().unwrap();
        let said = log(d.path(), name);
        assert_eq!(status.code(), Some(2), "{name}: {said}");
        said
    };
    // Index 1 again, from another process.
    let said = refused("dup", 1, 3, LOAD, &env);
    assert!(
        said.contains("refused this shard: shard 1 of 3 is already sending from 127.0.0.1:"),
        "{said}"
    );
    let said = refused("count", 1, 4, LOAD, &env);
    assert!(
        said.contains("it is shard 1 of 4, and this collector waits for 3 shards"),
        "{said}"
    );
    let mut args = LOAD.to_vec();
    args.extend(["--collect-token-file", "wrong"]);
    let said = refused("token", 2, 3, &args, &[]);
    assert!(said.contains("refused this shard: wrong token"), "{said}");
    let said = refused("none", 2, 3, LOAD, &[]);
    assert!(
        said.contains("this collector needs a token, and the shard gave none"),
        "{said}"
    );
    let other = [
        "noop",
        "--target",
        "sleep://?latency=2ms",
        "-c",
        "6",
        "-d",
        "3s",
        "--warmup",
        "1s",
    ];
    let said = refused("other", 2, 3, &other, &env);
    assert!(
        said.contains("another target (sleep://?latency=2ms)"),
        "{said}"
    );
    let other = [
        "ycsb-c", "--target", SLEEP, "-c", "6", "-d", "3s", "--warmup", "1s",
    ];
    let said = refused("workload", 2, 3, &other, &env);
    assert!(said.contains("another workload ('ycsb-c'"), "{said}");
    // The refused runs ran nothing and wrote nothing but their logs.
    for (i, s) in shards.into_iter().enumerate() {
        succeeded(s, d.path(), &format!("s{i}"));
    }
    succeeded(col, d.path(), "collect");
    let said = log(d.path(), "collect");
    eprintln!("{said}");
    let files: Vec<String> = d
        .files()
        .into_iter()
        .filter(|f| f.ends_with(".json"))
        .collect();
    assert_eq!(files, ["run.json", "s0.json", "s1.json", "s2.json"]);
    for i in 0..3 {
        assert!(
            said.contains(&format!("shard {i} of 3 connected")),
            "{said}"
        );
        assert!(log(d.path(), &format!("s{i}")).contains("streaming to the collector"));
    }
    assert!(said.contains("collected 3 of 3 shards\n"), "{said}");
    let collected = d.result("run.json");
    let c = collected.collect.clone().expect("collect record");
    assert_eq!(c.finished, [0, 1, 2]);
    assert_eq!(c.shards, 3);
    assert!(c.stopped.is_empty() && c.partial_intervals.is_empty());
    // Fairness over every client of every shard.
    assert_eq!(
        collected
            .validity
            .as_ref()
            .expect("validity")
            .fairness
            .clients,
        6
    );
    assert_eq!(c.refused, 6, "{c:?}");
    assert_eq!(c.refusals.len(), 6);
    assert!(c.refusals.iter().any(|r| r.reason == "wrong token"));
    same_as_merge(
        &collected,
        &merge(&d, &["s0.json", "s1.json", "s2.json"], &[]),
    );
}

#[test]
fn a_collector_that_cannot_be_reached_costs_the_shard_nothing() {
    let d = Dir::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let at = start_in(1);
    #[rustfmt::skip]
    let (out, err) = d.code(0, &[
        "run", "noop", "--target", SLEEP, "-c", "2", "--ops", "200", "--shard", "0/1",
        "--start-at", &at, "--collect", &addr, "-o", "s0.json",
    ]);
    assert!(
        err.contains(&format!("cannot reach the collector at {addr}")),
        "{err}"
    );
    assert!(err.contains("runs on and keeps its own file"), "{err}");
    assert!(out.contains("result: s0.json"), "{out}");
    assert_eq!(d.result("s0.json").total.ok, 200);
}

#[test]
fn a_collector_killed_mid_run_and_started_again_rebuilds_the_run() {
    let d = Dir::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let (mut first, addr) = collector(d.path(), &listen, &["--shards", "2", "-o", "run.json"], &[]);
    let at = start_in(2);
    let load = ["noop", "--target", SLEEP, "-c", "4", "-d", "5s"];
    let shards: Vec<Child> = (0..2)
        .map(|i| shard(d.path(), i, 2, &at, &addr, &load, &[]))
        .collect();
    wait_for(d.path(), "collect", "       2 ", 1);
    first.kill().unwrap();
    let _ = first.wait();
    std::fs::rename(d.join("collect.out"), d.join("first.out")).unwrap();
    let (second, _) = collector(d.path(), &listen, &["--shards", "2", "-o", "run.json"], &[]);
    for (i, s) in shards.into_iter().enumerate() {
        succeeded(s, d.path(), &format!("s{i}"));
        assert!(log(d.path(), &format!("s{i}")).contains("lost the collector"));
    }
    succeeded(second, d.path(), "collect");
    let said = log(d.path(), "collect");
    eprintln!("{said}");
    let collected = d.result("run.json");
    same_as_merge(&collected, &merge(&d, &["s0.json", "s1.json"], &[]));
    assert!(collected.collect.unwrap().partial_intervals.is_empty());
}

#[test]
fn bad_collector_input_exits_2_before_anything() {
    let d = Dir::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (_, err) = d.code(
        2,
        &[
            "collect", "--listen", &addr, "--shards", "2", "-o", "r.json",
        ],
    );
    assert!(
        err.contains(&format!("--listen {addr}: cannot listen there")),
        "{err}"
    );
    let (_, err) = d.code(
        2,
        &[
            "collect",
            "--listen",
            "0.0.0.0:0",
            "--shards",
            "2",
            "-o",
            "r.json",
        ],
    );
    assert!(err.contains("needs") || err.contains("token"), "{err}");
    d.write("t", "x\n");
    #[rustfmt::skip]
    let (_, err) = d.code(2, &["collect", "--listen", "0.0.0.0:0", "--shards", "2", "-o", "r.json", "--token-file", "t"]);
    assert!(err.contains("over TLS"), "{err}");
    let (_, err) = d.code(
        2,
        &[
            "collect",
            "--listen",
            "127.0.0.1:0",
            "--shards",
            "0",
            "-o",
            "r.json",
        ],
    );
    assert!(err.contains("--shards 0"), "{err}");
    #[rustfmt::skip]
    let (_, err) = d.code(2, &["collect", "--listen", "127.0.0.1:0", "--shards", "2", "-o", "r.json", "--dashboard", &addr]);
    assert!(err.contains("cannot listen there"), "{err}");
    // A shard's side: --collect needs --start-at, an address, a readable token file.
    #[rustfmt::skip]
    let (_, err) = d.code(2, &["run", "noop", "--target", "noop://", "-c", "2", "--ops", "5", "--shard", "0/2", "--collect", "127.0.0.1:1"]);
    assert!(err.contains("needs --start-at"), "{err}");
    #[rustfmt::skip]
    let (_, err) = d.code(2, &["run", "noop", "--target", "noop://", "-c", "2", "--ops", "5", "--shard", "0/2", "--start-at", "+1s", "--collect", "nowhere"]);
    assert!(err.contains("expected HOST:PORT"), "{err}");
    #[rustfmt::skip]
    let (_, err) = d.code(2, &["run", "noop", "--target", "noop://", "-c", "2", "--ops", "5", "--shard", "0/2", "--start-at", "+1s", "--collect", "127.0.0.1:1", "--collect-token-file", "absent"]);
    assert!(err.contains("token file absent: cannot read it"), "{err}");
    assert_eq!(d.files(), ["t"]);
}
