//! Every run judges itself (docs/validity.md): ground truths for starved clients, the rig's
//! own stalls (hiccups) and saturation, and Little's law. Behaviour only, never timings.

use std::time::Duration;

use crate::common::Dir;
use loadrig::result::validity::{Validity, Verdict};
use loadrig::result::RunResult;

// The runs here judge the machine's load too, so they take turns with every run that
// burns the CPU: a CPU-burning run beside a light one would make the light one's run queue
// long.
use crate::common::locks::{hold, Shared};

fn run(d: &Dir, out: &str, args: &[&str]) -> RunResult {
    let mut full = vec!["run", "noop"];
    full.extend(args);
    full.extend(["-o", out]);
    d.ok(&full);
    d.result(out)
}

fn validity(r: &RunResult) -> &Validity {
    r.validity.as_ref().expect("a new run has a verdict")
}

#[test]
fn unfair_server_starves_exactly_the_clients_it_ignores() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // The first 3 of 10 sessions are answered only at 5 s since the target opened: in a
    // 3 s run they complete nothing in any interval, while the others complete ~900 each.
    let r = run(
        &d,
        "unfair.json",
        &[
            "--target",
            "sleep://?latency=1ms&unfair=3:5s",
            "--clients",
            "10",
            "--duration",
            "3s",
            "--interval",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    assert_eq!(v.fairness.clients, 10);
    assert_eq!(v.fairness.starved_clients, 3, "{v:?}");
    let full: Vec<_> = r
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.end_s - i.start_s >= 0.999)
        .collect();
    assert_eq!(full.len(), 3);
    // The ignored clients' answers come after the deadline, and the engine counts an
    // operation that ends after it in the last interval; the first two show them starved.
    for i in &full[..2] {
        let f = i.fairness.as_ref().expect("fairness per interval");
        assert_eq!((f.starved, f.min), (3, 0), "interval {}: {f:?}", i.index);
    }
    assert_eq!(v.verdict, Verdict::Suspect);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.starts_with("3 of 10 clients were starved")),
        "{:?}",
        v.reasons
    );
    assert!(v.fairness.jain.unwrap() < 0.75, "{v:?}");
    assert!(
        v.reasons.iter().any(|r| r.contains("spread unevenly")),
        "{:?}",
        v.reasons
    );

    // --check valid fails such a run.
    let (out, _) = d.code(
        1,
        &[
            "run",
            "noop",
            "--target",
            "sleep://?latency=1ms&unfair=2:3s",
            "--clients",
            "4",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
            "--check",
            "valid",
            "-o",
            "checked.json",
        ],
    );
    assert!(out.contains("check FAILED: valid"), "{out}");
    assert!(out.contains("2 of 4 clients were starved"), "{out}");

    // compare says when either side is suspect.
    let out = d.ok(&["compare", "unfair.json", "checked.json"]);
    assert!(
        out.contains("the base run judged itself suspect")
            && out.contains("the new run judged itself suspect"),
        "{out}"
    );
}

#[test]
fn a_fair_light_run_is_valid() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let r = run(
        &d,
        "fair.json",
        &[
            "--target",
            "sleep://?latency=2ms",
            "--clients",
            "4",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    assert_eq!(v.fairness.starved_clients, 0);
    assert!(v.fairness.jain.unwrap() > 0.99, "{v:?}");
    assert!(!r.intervals.is_empty());
    assert!(r
        .intervals
        .iter()
        .all(|i| i.rig.is_some() && i.fairness.is_some()));
    assert!(v.rig.cpu_us_per_op.is_some() && v.hiccups.count > 0);
    assert_eq!(v.verdict, Verdict::Valid, "{:?}", v.reasons);
    let summary = d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=2ms",
        "--clients",
        "2",
        "--duration",
        "1s",
        "--interval",
        "500ms",
        "--check",
        "valid",
        "-o",
        "again.json",
    ]);
    assert!(summary.contains("\nvalidity: valid\n"), "{summary}");
    assert!(summary.contains("check passed: valid"), "{summary}");

    // The report's panel.
    d.ok(&["report", "fair.json", "-o", "fair.html"]);
    let html = std::fs::read_to_string(d.join("fair.html")).unwrap();
    assert!(
        html.contains("<h3 id=\"validity\">Validity</h3>"),
        "no panel"
    );
    assert!(html.contains("validity: valid</p>"), "no verdict");
}

#[test]
fn a_stopped_rig_shows_its_stall_as_a_hiccup() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let child = d.spawn(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--clients",
        "2",
        "--duration",
        "3s",
        "--interval",
        "500ms",
        "--warmup",
        "0s",
        "-o",
        "stopped.json",
    ]);
    let pid = child.id() as libc::pid_t;
    // Mid-run: once the first interval is streamed (a fixed wait lost the race on a busy
    // machine), stop the whole process for 300 ms.
    let stream = d.join("stopped.jsonl");
    let waited = std::time::Instant::now();
    while std::fs::read_to_string(&stream).map_or(0, |t| t.lines().count()) < 2 {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "no interval streamed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child process by its id.
    unsafe {
        assert_eq!(libc::kill(pid, libc::SIGSTOP), 0);
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::kill(pid, libc::SIGCONT), 0);
    }
    let out = child.wait_with_output().expect("loadrig ends");
    assert!(out.status.success(), "{out:?}");
    let r = d.result("stopped.json");
    let v = validity(&r);
    assert!(v.hiccups.max_ns >= 250_000_000, "{:?}", v.hiccups.max_ns);
    assert_eq!(v.hiccups.stalled_intervals, 1, "{v:?}");
    assert_eq!(v.verdict, Verdict::Suspect);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.contains("stalled") && r.contains("hiccups")),
        "{:?}",
        v.reasons
    );
    let stalled: Vec<_> = r
        .intervals
        .iter()
        .filter(|i| i.rig.as_ref().unwrap().hiccup_max_ns >= 250_000_000)
        .collect();
    assert_eq!(stalled.len(), 1);
}

#[test]
fn a_saturated_rig_is_flagged() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // Two spinning noop clients per core: the rig's threads are the whole run.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let clients = (2 * cores).to_string();
    let r = run(
        &d,
        "busy.json",
        &[
            "--clients",
            &clients,
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    assert_eq!(v.verdict, Verdict::Suspect);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.starts_with("the rig used") || r.contains("runnable threads")),
        "{:?}",
        v.reasons
    );
    assert!(v.rig.judged && v.rig.intervals == 4, "{:?}", v.rig);
}

#[test]
fn a_closed_loop_on_sleep_holds_littles_law() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    for (name, think) in [("plain.json", "0s"), ("think.json", "5ms")] {
        let r = run(
            &d,
            name,
            &[
                "--target",
                "sleep://?latency=5ms",
                "--clients",
                "4",
                "--think-time",
                think,
                "--duration",
                "2s",
                "--interval",
                "500ms",
                "--warmup",
                "0s",
            ],
        );
        let l = validity(&r).littles_law.clone().expect("a law to check");
        assert!(l.judged, "{l:?}");
        assert_eq!(l.actual, 4.0);
        assert!(l.deviation.abs() < 0.05, "{name}: {l:?}");
    }
}

#[test]
fn warmup_auto_cuts_a_warming_server_near_the_end_of_its_ramp() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let args = |target: &'static str| {
        [
            "--target",
            target,
            "--clients",
            "2",
            "--duration",
            "6s",
            "--interval",
            "125ms",
            "--warmup",
            "auto",
        ]
    };
    // 4× slower at opening, 1× from 1.5 s on: MSER-5 (batches of 5 intervals of 125 ms)
    // cuts at a batch boundary near the end of the ramp: 1.875 s on a quiet machine; once,
    // with the shared machine busy, 2.5 s (the edge of the half it searches, so unsettled).
    let warm = run(&d, "warm.json", &args("sleep://?latency=2ms&warm=4:1500ms"));
    let a = warm.warmup_auto.clone().expect("the cut is recorded");
    assert_eq!(a.method, "MSER-5");
    assert!((1.25..=2.5).contains(&a.warmup_s), "{a:?}");
    assert_eq!(warm.load.warmup, Duration::from_secs_f64(a.warmup_s));
    assert_eq!(
        warm.intervals.iter().filter(|i| i.warmup).count(),
        a.intervals_cut
    );
    assert!((warm.measured_s - (6.0 - a.warmup_s)).abs() < 1e-6);
    // The totals cover only what follows the cut.
    let after: u64 = warm
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.ok)
        .sum();
    assert_eq!(warm.total.ok, after);

    // A flat server: a short cut, or a cut that says it did not settle. Something else on
    // this shared machine (a build starting) can slow a flat server's first second, and
    // MSER-5 then rightly cuts it (seen once: 1.25 s, settled): up to three runs, one of
    // which must show the short cut.
    let mut long = Vec::new();
    for k in 0..3 {
        let flat = run(&d, &format!("flat{k}.json"), &args("sleep://?latency=2ms"));
        let a = flat.warmup_auto.clone().expect("the cut is recorded");
        if a.warmup_s <= 0.625 || !a.settled {
            return;
        }
        long.push(a);
    }
    panic!("a flat server cut long in every run: {long:?}");
}

#[test]
fn an_open_loop_that_cannot_keep_its_schedule_is_suspect() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // 2 workers of 10 ms operations serve at most 200/s: at 1000/s most arrivals start late
    // or never.
    let r = run(
        &d,
        "behind.json",
        &[
            "--target",
            "sleep://?latency=10ms",
            "--rate",
            "1000",
            "--max-in-flight",
            "2",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    assert_eq!(v.verdict, Verdict::Suspect);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.contains("late against the schedule")),
        "{:?}",
        v.reasons
    );
    assert!(
        v.reasons.iter().any(|r| r.contains("never started")),
        "{:?}",
        v.reasons
    );
    // A rate the workers keep up with is not.
    let r = run(
        &d,
        "kept.json",
        &[
            "--target",
            "sleep://?latency=2ms",
            "--rate",
            "100",
            "--max-in-flight",
            "4",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    assert!(
        !v.reasons.iter().any(|r| r.contains("never started")),
        "{:?}",
        v.reasons
    );
}

#[test]
fn thresholds_change_with_the_validity_flag() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // Every wake is at least a nanosecond late: a 1 ns hiccup threshold flags every interval.
    let r = run(
        &d,
        "strict.json",
        &[
            "--target",
            "sleep://?latency=1ms",
            "--clients",
            "2",
            "--duration",
            "1s",
            "--interval",
            "500ms",
            "--validity",
            "hiccup=1ns",
        ],
    );
    let v = validity(&r);
    assert_eq!(v.thresholds.hiccup_ns, 1);
    assert_eq!(v.hiccups.stalled_intervals, 2, "{v:?}");
    assert!(v.reasons.iter().any(|r| r.contains("hiccups")), "{v:?}");

    let (_, err) = d.code(2, &["run", "noop", "--validity", "busy=0.9"]);
    assert!(
        err.contains("--validity busy=0.9") && err.contains("expected a percentage, like 90%"),
        "{err}"
    );
    let (_, err) = d.code(2, &["run", "noop", "--validity", "speed=1"]);
    assert!(err.contains("unknown threshold 'speed'"), "{err}");
}

/// The run's trend tests, by series.
fn trend<'a>(r: &'a RunResult, series: &str) -> &'a loadrig::result::drift::TrendTest {
    validity(r)
        .trends
        .iter()
        .find(|t| t.series == series)
        .unwrap_or_else(|| panic!("no {series} trend in {:?}", validity(r).trends))
}

#[test]
fn a_warming_server_is_still_drifting_and_flat_runs_are_not() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // 6× the latency at opening, 1× after 8 s: over a 6 s run the latency falls from 6 ms to
    // 2.25 ms, so the throughput more than doubles, over 60 intervals (the test needs them:
    // the noise of a shared machine is autocorrelated, and the variance is widened for it).
    // A low-noise ramp's differences are smooth and once read as persistence that hid it
    // (the autocorrelation estimate at its clamp, p 0.11 three times in a fresh-clone CI):
    // src/stats/trend.rs guards against that, and this is its ground truth.
    let r = run(
        &d,
        "ramp.json",
        &[
            "--target",
            "sleep://?latency=1ms&warm=6:8s",
            "--clients",
            "8",
            "--duration",
            "6s",
            "--interval",
            "100ms",
            "--warmup",
            "0s",
        ],
    );
    let t = trend(&r, "throughput");
    assert_eq!((t.n, t.batch), (60, 1), "{t:?}");
    assert!(t.drifting && t.p < 0.01 && t.s > 0, "{t:?}");
    assert!(t.change_pct > 20.0 && t.slope_pct_per_min > 0.0, "{t:?}");
    let v = validity(&r);
    assert_eq!(v.verdict, Verdict::Suspect);
    assert!(
        v.reasons
            .iter()
            .any(|r| r.starts_with("throughput still drifting: +") && r.contains("Mann-Kendall p")),
        "{:?}",
        v.reasons
    );

    // Flat runs, three seeds: no series drifts (each test would alarm by chance about once
    // in a hundred).
    for seed in ["1", "2", "3"] {
        let r = run(
            &d,
            &format!("flat{seed}.json"),
            &[
                "--target",
                "sleep://?latency=exp(2ms)",
                "--clients",
                "4",
                "--duration",
                "2s",
                "--interval",
                "100ms",
                "--warmup",
                "0s",
                "--seed",
                seed,
            ],
        );
        for series in ["throughput", "p99"] {
            let t = trend(&r, series);
            assert!(!t.drifting, "seed {seed}: {t:?}");
        }
    }
}

#[test]
fn one_saturated_client_thread_is_flagged_and_a_light_run_is_not() {
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // One spinning noop client: its thread never sleeps, while the process uses about one
    // core of all of them (less when the machine is shared).
    let r = run(
        &d,
        "one.json",
        &[
            "--clients",
            "1",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    let busiest = v.rig.busiest_thread.as_ref().expect("threads were read");
    assert_eq!(busiest.name, "clients-0");
    assert!(busiest.busy() >= 0.9, "{busiest:?}");
    assert!(v.rig.saturated_thread_intervals >= 2, "{:?}", v.rig);
    // The client thread is named in the intervals it spun through (it is gone by the
    // time the monitor closes the last one). An interval whose sample the monitor, itself
    // waiting for a CPU on a crowded machine, closed too late for the collector has none.
    let spun: Vec<_> = r.intervals[..3]
        .iter()
        .filter_map(|i| i.rig.as_ref().map(|rig| (i, rig)))
        .collect();
    assert!(spun.len() >= 2, "{:?}", r.intervals);
    for (i, rig) in &spun {
        let first = rig.busiest_load_thread().unwrap();
        assert_eq!(first.name, "clients-0", "interval {}: {rig:?}", i.index);
    }
    // Busy through all of an interval, but for the first, which the thread may have
    // entered late (the monitor starts before the clients).
    let saturated = spun
        .iter()
        .filter(|(_, rig)| rig.busiest_load_thread().unwrap().busy() >= 0.9)
        .count();
    assert!(saturated + 1 >= spun.len(), "{spun:?}");
    assert_eq!(v.verdict, Verdict::Suspect);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores >= 2 && v.rig.busy_intervals * 2 < v.rig.intervals {
        assert!(
            v.reasons
                .iter()
                .any(|r| r.starts_with("one thread of the rig (clients-0) was busy")),
            "{:?}",
            v.reasons
        );
    }

    // The report plots the rig over time under the validity table, with the figures it
    // plotted folded beneath: one row per interval, as the result file has them.
    d.ok(&["report", "one.json", "-o", "one.html"]);
    let html = std::fs::read_to_string(d.join("one.html")).unwrap();
    let at = html
        .find("<figure class=\"plot\" id=\"rig-0\">")
        .expect("the rig plot");
    assert!(at > html.find("<h3 id=\"validity\">").unwrap());
    let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
    assert!(figure.contains("<svg"), "no SVG");
    for legend in [
        "rig process, % of",
        "busiest thread, busy % of one core",
        "machine&apos;s run queue",
        "hiccup max",
        "hiccup p99",
    ] {
        assert!(figure.contains(legend), "no legend {legend}");
    }
    let sampled = r.intervals.iter().filter(|i| i.rig.is_some()).count();
    assert_eq!(figure.matches("<tr><td>").count(), sampled);
    for (i, rig) in &spun {
        let row = format!(
            "<tr><td>{}</td><td>{:.2}</td><td>{:.1} %</td><td class=\"text\">clients-0</td><td>{:.0} %</td>",
            i.index,
            (i.start_s + i.end_s) / 2.0,
            rig.cpu_share * 100.0,
            rig.busiest_load_thread().unwrap().busy() * 100.0
        );
        assert!(figure.contains(&row), "no row {row}");
    }

    // Four clients on a 2 ms sleep: every thread sleeps most of the time.
    let r = run(
        &d,
        "light.json",
        &[
            "--target",
            "sleep://?latency=2ms",
            "--clients",
            "4",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--warmup",
            "0s",
        ],
    );
    let v = validity(&r);
    assert_eq!(v.rig.saturated_thread_intervals, 0, "{:?}", v.rig);
    assert!(!v.reasons.iter().any(|r| r.contains("one thread")));
    let names: std::collections::BTreeSet<&str> = r
        .intervals
        .iter()
        .filter_map(|i| i.rig.as_ref())
        .flat_map(|rig| rig.threads.iter().map(|t| t.name.as_str()))
        .collect();
    assert!(
        names.contains("clients-0") && names.contains("clients-3"),
        "{names:?}"
    );
}
