//! A run split into shards (`run --shard I/N --start-at T`) and merged (`loadrig merge`):
//! the merged run is exactly the sum of its shards, an unsplit run's schedule and keys are
//! partitioned among them, and what would merge into a wrong run is refused.

use crate::common;

use std::time::{Duration, SystemTime};

use crate::common::locks::{hold, Shared};
use crate::common::{run_shards, start_in, Dir, PUT_ONLY};
use loadrig::result::RunResult;
use loadrig::stats::{new_hist, Hist};

const SLEEP: &str = "sleep://?latency=2ms";

fn merge(d: &Dir, files: &[String], extra: &[&str]) -> RunResult {
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", "merged.json"]);
    args.extend(extra);
    d.ok(&args);
    d.result("merged.json")
}

fn hist(r: &RunResult) -> Hist {
    r.total.histogram.decode().expect("histogram")
}

#[test]
fn closed_loop_shards_merge_exactly() {
    // 4 processes spinning their sleeps' ends burn the CPU: it takes turns with the tests
    // that judge timings.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let load = ["-c", "8", "-d", "2s", "--seed", "7"];
    let mut single = vec!["run", "noop", "-t", SLEEP, "-o", "single.json"];
    single.extend(load);
    d.ok(&single);
    let mut args = vec!["run", "noop", "-t", SLEEP];
    args.extend(load);
    let files = run_shards(&d, 4, &args);
    let shards: Vec<RunResult> = files.iter().map(|f| d.result(f)).collect();
    for (i, s) in shards.iter().enumerate() {
        let shard = s.load.shard.expect("shard record");
        assert_eq!((shard.index, shard.count, shard.clients), (i, 4, 8));
        assert_eq!((shard.first_client, s.load.clients()), (2 * i, 2));
        assert!(s.late_start_s.is_some());
    }
    let merged = merge(&d, &files, &[]);
    assert_eq!(merged.load.clients(), 8);
    assert!(merged.load.shard.is_none());
    let record = merged.shards.as_ref().expect("shards record");
    assert_eq!(
        (record.count, &record.merged, record.partial),
        (4, &vec![0, 1, 2, 3], false)
    );
    // Counts summed, exactly; per interval too.
    let ok: u64 = shards.iter().map(|s| s.total.ok).sum();
    assert_eq!(merged.total.ok, ok);
    assert_eq!(merged.operations[0].ok, ok);
    assert!(!merged.intervals.is_empty());
    for (k, i) in merged.intervals.iter().enumerate() {
        let sum: u64 = shards.iter().map(|s| s.intervals[k].ok).sum();
        assert_eq!(i.ok, sum, "interval {}", i.index);
        let shard_starts: Vec<f64> = shards.iter().map(|s| s.intervals[k].start_s).collect();
        assert!(shard_starts.iter().all(|&s| s == i.start_s));
    }
    // The merged histogram is the union of every recorded value: the same percentiles as
    // a histogram built from the shards' own.
    let mut union = new_hist();
    for s in &shards {
        union.add(hist(s)).unwrap();
    }
    assert_eq!(hist(&merged), union);
    assert_eq!(merged.total.latency.count, ok);
    assert_eq!(merged.total.latency.p50_ns, union.value_at_quantile(0.5));
    assert_eq!(merged.total.latency.p99_ns, union.value_at_quantile(0.99));
    assert_eq!(merged.total.latency.max_ns, union.max());
    // Fairness over all 8 clients, from the shards' per-client counts.
    let fairness = &merged.validity.as_ref().expect("validity").fairness;
    assert_eq!(fairness.clients, 8);
    // Known ground truth: a 2 ms sleep never answers sooner (within the histogram's 3
    // significant digits: 2 ms is recorded in a bucket from 1,999,872 ns).
    let single = d.result("single.json");
    for r in [&single, &merged] {
        assert!(r.total.latency.min_ns >= 1_998_000, "{:?}", r.total.latency);
    }
    // The merged file is a run file like any other.
    d.ok(&["report", "merged.json", "-o", "merged.html"]);
    d.ok(&["compare", "single.json", "merged.json"]);
}

/// Failed operations' latencies (YCSB's `[READ-FAILED]`) merge as the successes' do: the
/// merged histogram is the union of the shards'.
#[test]
fn failures_latencies_merge_exactly() {
    let d = Dir::new();
    let args = [
        "run",
        "noop",
        "-t",
        "sleep://?latency=1ms&errors=0.3",
        "-c",
        "4",
        "--ops",
        "400",
        "--seed",
        "3",
    ];
    let files = run_shards(&d, 2, &args);
    let shards: Vec<RunResult> = files.iter().map(|f| d.result(f)).collect();
    let merged = merge(&d, &files, &[]);
    let op = &merged.operations[0];
    let mut union = new_hist();
    for s in &shards {
        let h = s.operations[0].failed_histogram.as_ref().expect("failures");
        union.add(h.decode().unwrap()).unwrap();
    }
    let errors: u64 = shards.iter().map(|s| s.operations[0].errors).sum();
    assert_eq!((op.errors, union.len()), (errors, errors));
    assert_eq!(op.ok + op.errors, 400);
    let h = op.failed_histogram.as_ref().expect("merged failures");
    assert_eq!(h.decode().unwrap(), union);
    let l = op.failed_latency.as_ref().expect("merged summary");
    assert_eq!((l.count, l.max_ns), (errors, union.max()));
    // Ground truth: a failure takes its 1 ms sleep too.
    assert!(l.min_ns >= 998_000, "{l:?}");
}

/// The same closed loop as one process and as 4 shards on a target of known latency: the
/// merged median equals the single run's within a few of HdrHistogram's buckets. A 50 ms
/// sleep is long beside its overshoot (the precise sleep spins its last stretch), so both
/// medians fall in one 32.8 µs bucket of the histogram's 3 significant digits or the next
/// on a quiet machine; under the test command's other tests the single process's median
/// once came 2 buckets (65 µs) later. Higher up they are two different loads on the
/// machine, not two views of one: 4 processes spinning their sleeps' ends on 2 cores are
/// preempted more often than one, and their p90 came out 0.26 % to 0.5 % later in every try
/// on a busy machine (the merge itself is exact: `closed_loop_shards_merge_exactly` checks it
/// against the union of the shards).
#[test]
fn one_process_and_four_shards_agree_within_histogram_precision() {
    // It judges timings, and its 4 processes spin their sleeps' ends: it takes turns with
    // the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let load = ["-c", "8", "-d", "2s", "--seed", "11"];
    let target = "sleep://?latency=50ms";
    let mut single = vec!["run", "noop", "-t", target, "-o", "single.json"];
    single.extend(load);
    d.ok(&single);
    let mut args = vec!["run", "noop", "-t", target];
    args.extend(load);
    let files = run_shards(&d, 4, &args);
    let merged = merge(&d, &files, &[]);
    let single = d.result("single.json");
    let (a, b) = (single.total.latency.p50_ns, merged.total.latency.p50_ns);
    let bucket = hist(&single).equivalent_range(a);
    assert!(
        a.abs_diff(b) <= 4 * bucket,
        "p50: one process {a} ns, four shards {b} ns, bucket {bucket} ns"
    );
    let (a, b) = (single.total.latency.p90_ns, merged.total.latency.p90_ns);
    assert!(
        a.abs_diff(b) * 100 <= a,
        "p90: one process {a} ns, four shards {b} ns"
    );
}

#[test]
fn open_loop_shards_deliver_the_whole_schedule() {
    // 4 processes spinning their sleeps' ends burn the CPU: it takes turns with the tests
    // that judge timings.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let load = [
        "--rate",
        "400",
        "--max-in-flight",
        "8",
        "-d",
        "2s",
        "--seed",
        "3",
    ];
    let mut single = vec!["run", "noop", "-t", SLEEP, "-o", "single.json"];
    single.extend(load);
    d.ok(&single);
    let mut args = vec!["run", "noop", "-t", SLEEP];
    args.extend(load);
    let files = run_shards(&d, 4, &args);
    for f in &files {
        let s = d.result(f);
        let shard = s.load.shard.expect("shard");
        assert_eq!(shard.rate, Some(400.0));
        assert_eq!(s.load.all_rate(), Some(400.0));
        assert!(
            matches!(s.load.mode, loadrig::engine::Mode::Open { rate, workers: 2, .. } if rate == 100.0)
        );
    }
    let merged = merge(&d, &files, &[]);
    let single = d.result("single.json");
    // Constant arrivals: 400/s for 2 s is 800 arrivals, started or counted as missed.
    let arrivals = |r: &RunResult| r.total.ok + r.total.errors + r.missed_starts;
    assert_eq!(arrivals(&single), 800);
    assert_eq!(arrivals(&merged), arrivals(&single));
    assert_eq!(merged.load.all_rate(), Some(400.0));
    // The start lag merges exactly too: the union of the shards' histograms.
    let mut union = new_hist();
    for f in &files {
        let lag = d
            .result(f)
            .total
            .start_lag_histogram
            .expect("lag histogram");
        union.add(lag.decode().unwrap()).unwrap();
    }
    let merged_lag = merged.total.start_lag_histogram.expect("merged lag");
    assert_eq!(merged_lag.decode().unwrap(), union);
    assert_eq!(
        merged.total.start_lag.unwrap().p99_ns,
        union.value_at_quantile(0.99)
    );
}

#[test]
fn a_killed_shard_is_named_and_partial_only_when_asked() {
    let d = Dir::new();
    let at = start_in(2);
    let mut children: Vec<_> = (0..4)
        .map(|i| {
            let shard = format!("{i}/4");
            let out = format!("s{i}.json");
            d.spawn(&[
                "run",
                "noop",
                "-t",
                SLEEP,
                "-c",
                "4",
                "-d",
                "3s",
                "--shard",
                &shard,
                "--start-at",
                &at,
                "-o",
                &out,
            ])
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let killed = children.remove(2);
    let mut killed = killed;
    killed.kill().expect("SIGKILL");
    let _ = killed.wait();
    for c in children {
        assert!(c.wait_with_output().expect("ran").status.success());
    }
    assert!(
        !d.join("s2.json").exists(),
        "a killed shard writes no result"
    );
    let files = ["s0.json", "s1.json", "s3.json", "-o", "m.json"];
    let mut args = vec!["merge"];
    args.extend(files);
    let (_, err) = d.code(2, &args);
    assert!(err.contains("shard 2 of 4 is missing"), "{err}");
    assert!(!d.join("m.json").exists());
    args.push("--allow-partial");
    d.ok(&args);
    let merged = d.result("m.json");
    let record = merged.shards.expect("shards");
    assert!(record.partial);
    assert_eq!((record.missing, record.merged), (vec![2], vec![0, 1, 3]));
    assert!(merged.notes.iter().any(|n| n.contains("partial")));
    let ok: u64 = ["s0.json", "s1.json", "s3.json"]
        .iter()
        .map(|f| d.result(f).total.ok)
        .sum();
    assert_eq!(merged.total.ok, ok);
}

#[test]
fn wrong_shard_sets_are_refused_with_the_file_and_the_reason() {
    let d = Dir::new();
    let args = ["run", "noop", "-t", SLEEP, "-c", "2", "--ops", "40"];
    let files = run_shards(&d, 2, &args);
    let other = d.write(
        "other.toml",
        "name = \"other\"\n[[op]]\nname = \"nop\"\nnop = {}\n",
    );
    let other = other.to_str().unwrap();
    let at = start_in(0);
    d.ok(&[
        "run",
        other,
        "-t",
        SLEEP,
        "-c",
        "2",
        "--ops",
        "40",
        "--shard",
        "1/2",
        "--start-at",
        &at,
        "-o",
        "x1.json",
    ]);
    d.write("bad.json", "{\"schema_version\": 1, \"status\": ");
    let text = std::fs::read_to_string(d.join("s1.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["intervals"][0]["start_s"] = serde_json::json!(0.25);
    d.write("shifted.json", &v.to_string());
    std::fs::copy(d.join("s1.json"), d.join("s1-again.json")).unwrap();
    d.ok(&[
        "run",
        "noop",
        "-t",
        SLEEP,
        "-c",
        "2",
        "--ops",
        "40",
        "-o",
        "plain.json",
    ]);
    for (second, reason) in [
        ("bad.json", "bad.json' is not a loadrig result file"),
        ("x1.json", "x1.json: another workload ('other'"),
        (
            "s1-again.json",
            "s1.json and s1-again.json: both are shard 1 of 2",
        ),
        (
            "shifted.json",
            "shifted.json: interval 1 starts at 0.250000 s",
        ),
        ("plain.json", "plain.json: not a shard's result"),
    ] {
        let mut args = vec!["merge", &files[0], &files[1]];
        if second == "x1.json" || second == "shifted.json" {
            args.pop();
        }
        args.extend([second, "-o", "m.json"]);
        let (_, err) = d.code(2, &args);
        assert!(err.contains(reason), "{second}: {err}");
        assert!(!d.join("m.json").exists());
    }
    // Bad --shard and --start-at flags.
    for (flags, reason) in [
        (vec!["--shard", "2/2"], "the share must be 0 to 1 of 2"),
        (vec!["--shard", "one"], "expected I/N"),
        (vec!["--shard", "0/3"], "2 clients for 3 shards"),
        (vec!["--start-at", "noon"], "not an RFC 3339 time"),
        (
            vec!["--shard", "0/2", "--warmup", "auto"],
            "each shard would cut",
        ),
    ] {
        let mut args = vec!["run", "noop", "-t", SLEEP, "-c", "2", "--ops", "4"];
        args.extend(flags);
        let (_, err) = d.code(2, &args);
        assert!(err.contains(reason), "{err}");
    }
    let (_, err) = d.code(
        2,
        &[
            "sweep",
            "noop",
            "-t",
            SLEEP,
            "--vary",
            "clients=2,4",
            "--shard",
            "0/2",
        ],
    );
    assert!(err.contains("apply to loadrig run only"), "{err}");
}

#[test]
fn seq_keys_are_partitioned_among_shards() {
    let d = Dir::new();
    let w = d.write("put.toml", PUT_ONLY);
    let w = w.to_str().unwrap();
    // Shards one after another: SQLite takes one writer at a time; the keys each shard
    // writes do not depend on when it runs.
    for i in 0..4 {
        let shard = format!("{i}/4");
        d.ok(&[
            "run",
            w,
            "-t",
            "sqlite://t.db",
            "-c",
            "8",
            "--ops",
            "400",
            "--shard",
            &shard,
            "-o",
            "s.json",
        ]);
        assert_eq!(d.result("s.json").total.ok, 100);
    }
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_kv"), 400);
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_kv WHERE k >= 'r0' AND k < 's'"),
        400
    );
}

#[test]
fn a_late_shard_keeps_the_grid_and_records_how_late() {
    let d = Dir::new();
    // An agreed start already 2 s past (rounding to the interval keeps it past).
    let at = humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(2));
    let out = d.ok(&[
        "run",
        "noop",
        "-t",
        SLEEP,
        "-c",
        "2",
        "-d",
        "4s",
        "--start-at",
        &at.to_string(),
        "-o",
        "late.json",
    ]);
    assert!(out.contains("after the agreed --start-at"), "{out}");
    let r = d.result("late.json");
    let late = r.late_start_s.expect("late_start_s");
    assert!(late >= 1.0, "{late}");
    // Interval 1 (the agreed start's first second) had passed before the run began.
    assert_eq!(r.intervals[0].ok, 0);
    assert_eq!(r.intervals.len(), 4);
    assert!(r.intervals.iter().skip(3).all(|i| i.ok > 0));
}

/// A workload with data to load: 3000 records, read back by every shard.
const LOADED: &str = r#"
name = "loaded"
[data]
count = 3000
key = "d{seq}"
value = "{bytes 64}"
[[op]]
name = "get"
kv.get = { key = "d{uniform 0..3000}" }
"#;

/// Shard 1 started before shard 0, with a start shard 0's load overruns: it waits for
/// shard 0's marker, then runs on the loaded data (every read finds its record), and both
/// start late by the load; `loadrig cleanup` removes the marker. `check_marker` says
/// whether the marker is on the target.
fn followers_wait_for_the_load(url: &str, check_marker: &dyn Fn() -> bool) {
    let d = Dir::new();
    let w = d.write("loaded.toml", LOADED);
    let w = w.to_str().unwrap();
    let at = start_in(1);
    let shard = |i: usize| {
        let (shard, out) = (format!("{i}/2"), format!("s{i}.json"));
        d.spawn(&[
            "run",
            w,
            "-t",
            url,
            "-c",
            "2",
            "--ops",
            "200",
            "--seed",
            "3",
            "--shard",
            &shard,
            "--start-at",
            &at,
            "-o",
            &out,
        ])
    };
    let follower = shard(1);
    // Shard 0 begins its load after the agreed start.
    std::thread::sleep(Duration::from_millis(2500));
    let leader = shard(0);
    for (name, child) in [("shard 1", follower), ("shard 0", leader)] {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if name == "shard 1" {
            assert!(
                stdout.contains("waiting for shard 0's data load"),
                "{stdout}"
            );
            assert!(stdout.contains("shard 0's data is loaded"), "{stdout}");
        }
    }
    let follower = d.result("s1.json");
    assert!(follower.data_load.as_ref().is_some_and(|l| l.skipped));
    assert_eq!(follower.total.ok, 100);
    // Every read found its record: the data was there when shard 1 ran.
    assert_eq!(follower.total.rows, 100);
    assert!(
        follower.late_start_s.unwrap_or(0.0) > 0.0,
        "{:?}",
        follower.late_start_s
    );
    assert_eq!(d.result("s0.json").total.rows, 100);
    assert!(check_marker(), "the marker is on the target after the run");
    d.ok(&["cleanup", "--target", url]);
    assert!(!check_marker(), "cleanup removes the marker");
}

#[test]
fn shards_wait_for_the_load_on_sqlite() {
    let d = Dir::new();
    let db = d.join("t.db");
    let url = format!("sqlite://{}", db.display());
    followers_wait_for_the_load(&url, &|| {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'loadrig_kv'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            > 0
            && conn
                .query_row(
                    "SELECT COUNT(*) FROM loadrig_kv WHERE k LIKE '\\_load:%' ESCAPE '\\'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
                == 1
    });
}

#[test]
fn shards_wait_for_the_load_on_redis() {
    let Some(url) = common::redis_db(13) else {
        return;
    };
    let _db = hold(&[Shared::Redis(13)]);
    let c = std::cell::RefCell::new(common::redis_flushed(&url));
    followers_wait_for_the_load(&url, &|| {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("loadrig:_load:*")
            .query(&mut *c.borrow_mut())
            .unwrap();
        keys.len() == 1
    });
}

/// A shard after the first whose shard 0 never loads gives up after --load-timeout, says
/// so, and writes no result.
#[test]
fn a_follower_without_its_loader_times_out() {
    let d = Dir::new();
    let w = d.write("loaded.toml", LOADED);
    let (_, stderr) = d.code(
        2,
        &[
            "run",
            w.to_str().unwrap(),
            "-t",
            "sqlite://t.db",
            "-c",
            "2",
            "--ops",
            "10",
            "--shard",
            "1/2",
            "--load-timeout",
            "1s",
            "-o",
            "s1.json",
        ],
    );
    assert!(
        stderr.contains("shard 0 did not finish loading within 1s"),
        "{stderr}"
    );
    assert!(!d.join("s1.json").exists());
    let (_, stderr) = d.code(
        2,
        &[
            "run",
            w.to_str().unwrap(),
            "-t",
            "sqlite://t.db",
            "-c",
            "2",
            "--shard",
            "1/2",
            "--load-timeout",
            "0s",
        ],
    );
    assert!(stderr.contains("--load-timeout"), "{stderr}");
}

/// `--pipeline` with `--shard`: the shards split the connections, each with its P streams
/// numbered as in the unsharded run, so the shards' pipelined puts store exactly the keys of
/// the whole run's `--ops`, and the merge is the whole run (its connections, its streams).
#[test]
fn pipelined_shards_split_connections_and_store_the_whole_runs_keys() {
    let Some(url) = common::redis_db(7) else {
        return;
    };
    let _db = hold(&[Shared::Redis(7)]);
    let mut c = common::redis_flushed(&url);
    let d = Dir::new();
    let w = d.write("puts.toml", PUT_ONLY);
    let files = run_shards(
        &d,
        2,
        &[
            "run",
            w.to_str().unwrap(),
            "--target",
            &url,
            "--clients",
            "3",
            "--pipeline",
            "8",
            "--ops",
            "2400",
            "--seed",
            "4",
        ],
    );
    let shards: Vec<RunResult> = files.iter().map(|f| d.result(f)).collect();
    // 3 connections over 2 shards: 2 and 1, with their 8 streams each.
    let streams: Vec<usize> = shards.iter().map(|r| r.load.clients()).collect();
    assert_eq!(streams, [16, 8]);
    let opened: Vec<usize> = shards
        .iter()
        .map(|r| r.connect.as_ref().unwrap().clients)
        .collect();
    assert_eq!(opened, [2, 1]);
    let merged = merge(&d, &files, &[]);
    assert_eq!(merged.load.clients(), 24, "3 connections x 8 streams");
    assert_eq!(merged.load.connections(), 3);
    assert_eq!(merged.load.pipeline, 8);
    assert_eq!(
        merged.connect.as_ref().unwrap().clients,
        3,
        "every shard's connections"
    );
    assert_eq!((merged.total.ok, merged.total.errors), (2400, 0));
    let mut names: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    names.sort();
    let mut expected: Vec<String> = (0..2400).map(|i| format!("loadrig:r{i}")).collect();
    expected.sort();
    assert_eq!(names, expected, "every stream's seq numbers, once");
    redis::cmd("FLUSHDB").exec(&mut c).unwrap();
}
