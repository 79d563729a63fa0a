//! The engine against the `sleep` target, whose latency distribution is known.

use crate::common::Dir;
use loadrig::result::RunStatus;
use loadrig::vocab::ErrorClass;

#[test]
fn ops_stop_condition_gives_exact_counts_across_clients() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=200us",
        "--clients",
        "3",
        "--ops",
        "1000",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!(r.total.ok, 1000);
    assert_eq!(r.operations[0].ok, 1000);
    let in_intervals: u64 = r.intervals.iter().filter(|i| !i.warmup).map(|i| i.ok).sum();
    assert_eq!(in_intervals, 1000);
    assert_eq!(r.status, RunStatus::Complete);
}

#[test]
fn ops_count_excludes_warmup() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--clients",
        "2",
        "--ops",
        "300",
        "--warmup",
        "300ms",
        "--interval",
        "100ms",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!(r.total.ok, 300);
    let warm: u64 = r.intervals.iter().filter(|i| i.warmup).map(|i| i.ok).sum();
    assert!(warm > 0, "the warm-up ran operations");
    assert_eq!(r.intervals.iter().filter(|i| i.warmup).count(), 3);
}

#[test]
fn samples_give_exactly_k_intervals_with_warmup_marked() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--samples",
        "5",
        "--interval",
        "200ms",
        "--warmup",
        "300ms",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let measured: Vec<_> = r.intervals.iter().filter(|i| !i.warmup).collect();
    let warm: Vec<_> = r.intervals.iter().filter(|i| i.warmup).collect();
    assert_eq!(measured.len(), 5);
    assert_eq!(
        warm.len(),
        2,
        "300ms of warm-up in 200ms intervals: 200ms + 100ms"
    );
    assert!((warm[1].end_s - warm[1].start_s - 0.1).abs() < 1e-9);
    for (k, i) in measured.iter().enumerate() {
        assert!((i.start_s - (0.3 + 0.2 * k as f64)).abs() < 1e-9);
        assert!((i.end_s - i.start_s - 0.2).abs() < 1e-9);
    }
    assert!((r.measured_s - 1.0).abs() < 1e-9);
    assert_eq!(r.total.interval_counts.n, 5);
    let per_interval: u64 = measured.iter().map(|i| i.ok).sum();
    assert_eq!(per_interval, r.total.ok);
}

#[test]
fn fixed_latency_is_a_floor_and_the_median_is_close() {
    // Tolerance: the median may exceed the configured 2 ms by at most 25 % (timer wake-up).
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=2ms",
        "--clients",
        "2",
        "--ops",
        "400",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let l = &r.total.latency;
    assert_eq!(l.count, 400);
    // The histogram keeps 3 significant digits: a 2.0001 ms latency reads back as the
    // lowest value of its bucket, 1,999,872 ns, so the floor holds to within 0.1 %.
    assert!(
        l.min_ns >= 1_998_000,
        "min {} below the configured 2ms",
        l.min_ns
    );
    assert!(
        l.p50_ns <= 2_500_000,
        "median {} too far above 2ms",
        l.p50_ns
    );
}

#[test]
fn uniform_latency_spreads_over_its_range() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=uniform(1ms..3ms)",
        "--clients",
        "4",
        "--ops",
        "800",
        "-o",
        "r.json",
    ]);
    let l = d.result("r.json").total.latency;
    assert!(l.min_ns >= 1_000_000);
    // The median of U(1ms, 3ms) is 2 ms; allow 15 % sampling and wake-up error.
    assert!(
        (1_850_000..=2_300_000).contains(&l.p50_ns),
        "median {}",
        l.p50_ns
    );
}

#[test]
fn open_loop_stall_shows_in_response_time_not_service_time() {
    // 200 ops/s, one worker, a 500 ms freeze at 1.5 s: about 100 arrivals wait behind it.
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms&stall=500ms@1500ms",
        "--rate",
        "200",
        "--max-in-flight",
        "1",
        "--duration",
        "4s",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = &r.operations[0];
    let service = op.service.as_ref().expect("open loop keeps service time");
    assert!(
        op.latency.p99_ns > 250_000_000,
        "response p99 {} misses the stall",
        op.latency.p99_ns
    );
    assert!(
        service.p99_ns < 20_000_000,
        "service p99 {} shows the stall",
        service.p99_ns
    );
    // The first operation to meet the freeze starts at most one arrival gap (5 ms) after
    // it began, so it waits at least 495 ms: that one operation is the service maximum.
    assert!(
        service.max_ns >= 490_000_000,
        "the one frozen operation is in the service max: {}",
        service.max_ns
    );
    let lag = op.start_lag.as_ref().expect("start lag");
    assert!(lag.max_ns > 300_000_000);
    assert!(op.late_starts.unwrap() >= 50);
    // Every arrival in 4 s at 200/s started, late or not.
    assert_eq!(op.ok + r.missed_starts, 800);
}

#[test]
fn open_loop_counts_arrivals_that_never_started() {
    // 10 ms per op with one in flight serves 100/s; asking 400/s must leave most unstarted.
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=10ms",
        "--rate",
        "400",
        "--max-in-flight",
        "1",
        "--duration",
        "1s",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert!(r.missed_starts > 200, "missed {}", r.missed_starts);
    assert_eq!(r.total.ok + r.missed_starts, 400);
    assert!(r.notes.iter().any(|n| n.contains("never started")));
}

#[test]
fn errors_are_counted_by_class_and_the_run_goes_on() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=0ms&errors=0.5",
        "--ops",
        "2000",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = &r.operations[0];
    assert_eq!(op.ok + op.errors, 2000, "every attempt is counted once");
    assert!(
        (800..1200).contains(&op.errors),
        "about half fail: {}",
        op.errors
    );
    assert_eq!(op.errors_by_class[&ErrorClass::Other], op.errors);
    assert_eq!(op.error_messages[0].message, "injected error");
}

#[test]
fn operations_over_the_op_timeout_fail_as_timeout_and_the_flag_wins() {
    // The sleep target blocks its thread: each 300 ms operation is judged when it ends.
    let d = Dir::new();
    d.write(
        "w.toml",
        "name = \"w\"\nop_timeout = \"100ms\"\n[[op]]\nname = \"nap\"\nnop = {}\n",
    );
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "w.toml",
            "--target",
            "sleep://?latency=300ms",
            "--ops",
            "3",
            "-o",
            "r.json",
        ];
        args.extend(extra);
        let out = d.ok(&args);
        (d.result("r.json"), out)
    };
    let (r, out) = run(&[]);
    assert!(
        out.contains("errors in nap: timeout 3 (failed after p50 "),
        "{out}"
    );
    assert_eq!((r.total.ok, r.total.errors), (0, 3));
    assert_eq!(r.total.errors_by_class[&ErrorClass::Timeout], 3);
    // A timed-out operation failed no sooner than its limit.
    let failed = r
        .total
        .failed_latency
        .as_ref()
        .expect("failures' latencies");
    assert_eq!(failed.count, 3);
    assert!(failed.min_ns >= 99_000_000, "{failed:?}");
    assert_eq!(
        r.total.error_messages[0].message,
        "no answer within 100ms (op timeout)"
    );
    // Each timed-out session is replaced before the next operation.
    assert_eq!(r.total.reconnects, 2);
    assert_eq!(r.load.op_timeout.map(|t| t.as_secs_f64()), Some(0.1));
    let (r, _) = run(&["--op-timeout", "2s"]);
    assert_eq!((r.total.ok, r.total.errors), (3, 0));
    assert_eq!(r.load.op_timeout.map(|t| t.as_secs_f64()), Some(2.0));
}

#[test]
fn weighted_mix_follows_the_weights() {
    let d = Dir::new();
    d.write(
        "mix.toml",
        r#"
name = "mix"
target = "noop://"
[[op]]
name = "a"
weight = 9
nop = {}
[[op]]
name = "b"
weight = 1
nop = {}
"#,
    );
    d.ok(&[
        "run", "mix.toml", "--ops", "100000", "--seed", "3", "-o", "r.json",
    ]);
    let r = d.result("r.json");
    let a = r.operations.iter().find(|o| o.name == "a").unwrap().ok as f64;
    assert_eq!(r.total.ok, 100_000);
    // Binomial(100000, 0.9): standard deviation about 95, so 1 % is over 10 sigma.
    assert!(
        (a / 100_000.0 - 0.9).abs() < 0.01,
        "share of a: {}",
        a / 100_000.0
    );
}

#[test]
fn histograms_decode_to_the_counts() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=100us",
        "--clients",
        "2",
        "--ops",
        "500",
        "--interval",
        "50ms",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!(r.total.histogram.decode().unwrap().len(), 500);
    for i in &r.intervals {
        for op in &i.ops {
            assert_eq!(op.histogram.decode().unwrap().len(), op.ok);
        }
    }
}

/// The ids of `pid`'s threads named `clients-K`, once they have all started.
fn client_threads(pid: u32, expected: usize) -> Vec<i32> {
    for _ in 0..500 {
        let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|dir| {
                dir.flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|c| c.starts_with("clients-"))
                    })
                    .filter_map(|t| t.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        if tids.len() == expected {
            return tids;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{expected} client threads never showed up in /proc/{pid}/task");
}

#[test]
fn client_threads_run_with_the_slice_the_result_records() {
    use loadrig::engine::slice;
    use std::time::Duration;
    // A kernel without custom slices (before 6.12) gives none, and the result says none.
    let custom = slice::takes(slice::DEFAULT);
    for (flag, asked) in [
        (None, Some(slice::DEFAULT)),
        (Some("2ms"), Some(Duration::from_millis(2))),
        (Some("kernel"), None),
    ] {
        let d = Dir::new();
        let mut args = vec![
            "run",
            "noop",
            "--target",
            "sleep://?latency=1ms",
            "--clients",
            "3",
            "--duration",
            "1500ms",
            "-o",
            "r.json",
        ];
        if let Some(f) = flag {
            args.extend(["--client-slice", f]);
        }
        // The sleep target is a blocking one: a thread per client.
        let child = d.spawn(&args);
        let seen: Vec<_> = client_threads(child.id(), 3)
            .into_iter()
            .map(slice::slice_of)
            .collect();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{flag:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ran = asked.filter(|_| custom);
        assert_eq!(d.result("r.json").load.client_slice, ran, "{flag:?}");
        match ran {
            Some(s) => assert_eq!(seen, [Some(s); 3], "{flag:?}"),
            // The kernel's default slice, whatever this kernel makes it, not one asked for.
            None => assert!(seen.iter().all(|s| *s != Some(slice::DEFAULT)), "{flag:?}"),
        }
    }
}
