//! Runs with stages (`--stages`, `[[load.stage]]`) against known ground truth: an open
//! loop's arrivals follow the integral of a ramp's rate (constant spacing and Poisson
//! alike), a closed loop's clients follow a ramp of clients, `--stop-when` finds the step
//! a `sleep://` target of known capacity cannot carry, stages split a run's operations
//! exactly (also when sharded and merged), and bad stages exit 2 before anything runs.

use loadrig::result::stages::{StageRan, StageRecord};
use loadrig::result::RunResult;
use loadrig::stats::new_hist;
use serde_json::Value;
use statrs::distribution::{DiscreteCDF, Poisson};

use crate::common::locks::{hold, Shared};
use crate::common::{run_shards, Dir};

/// 0 → 400/s over 3 s, then 400/s for 1 s, in 500 ms intervals: 600 + 400 arrivals.
const RAMP: &str = "up=3s:0..400/s,hold=1s:400/s";
const RATE: f64 = 400.0;
const RAMP_S: f64 = 3.0;

/// The arrivals due between 0 and `t` (s) of [`RAMP`]: the integral of its rate.
fn due_by(t: f64) -> f64 {
    if t <= RAMP_S {
        RATE / RAMP_S * t * t / 2.0
    } else {
        RATE * RAMP_S / 2.0 + RATE * (t - RAMP_S)
    }
}

/// `loadrig schedule ... --json`: one object per interval.
fn schedule(d: &Dir, extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "schedule",
        "noop",
        "--stages",
        RAMP,
        "--max-in-flight",
        "2",
        "-i",
        "500ms",
        "--json",
    ];
    args.extend(extra);
    d.ok(&args)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Every interval in exactly one stage, inside it, and the stages' operations adding up to
/// the run's (each operation's histogram too).
fn assert_stages_split(r: &RunResult) {
    let stage_of = |name: &str| r.stages.iter().find(|s| s.name == name).expect("stage");
    for i in &r.intervals {
        let s = stage_of(i.stage.as_deref().expect("every interval has its stage"));
        assert!(
            i.start_s >= s.start_s - 1e-9 && i.end_s <= s.end_s + 1e-9,
            "interval {}..{} outside stage {} ({}..{})",
            i.start_s,
            i.end_s,
            s.name,
            s.start_s,
            s.end_s
        );
    }
    let ok: u64 = r.stages.iter().map(|s| s.total.ok).sum();
    let counted: u64 = r.stages.iter().map(|s| s.total.latency.count).sum();
    assert_eq!(ok, r.total.ok, "the stages' operations are the run's");
    assert_eq!(counted, r.total.latency.count);
    let by_intervals: u64 = r.intervals.iter().filter(|i| !i.warmup).map(|i| i.ok).sum();
    assert_eq!(by_intervals, r.total.ok);
}

#[test]
fn an_open_loop_ramp_follows_the_integral_of_its_rate() {
    let d = Dir::new();
    // Constant arrivals: each interval within ±1 of the integral over it.
    let constant = schedule(&d, &[]);
    assert_eq!(constant.len(), 8);
    let mut total = 0;
    for iv in &constant {
        let (a, b) = (
            iv["start_s"].as_f64().unwrap(),
            iv["end_s"].as_f64().unwrap(),
        );
        let due = due_by(b) - due_by(a);
        let n = iv["arrivals"].as_u64().unwrap();
        assert!((iv["due"].as_f64().unwrap() - due).abs() < 1e-6, "{iv}");
        assert!(
            (n as f64 - due).abs() <= 1.0,
            "{n} arrivals, {due} due: {iv}"
        );
        let stage = if b <= RAMP_S { "up" } else { "hold" };
        assert_eq!(iv["stage"], stage, "{iv}");
        total += n;
    }
    assert!(total.abs_diff(1000) <= 1, "{total} arrivals for 1,000 due");

    // Poisson with a fixed seed: each interval's count inside the 99.9 % interval of a
    // Poisson count of the integral.
    let poisson = schedule(&d, &["--arrivals", "poisson", "--seed", "7"]);
    let mut poisson_total = 0;
    for iv in &poisson {
        let due = iv["due"].as_f64().unwrap();
        let n = iv["arrivals"].as_u64().unwrap();
        let p = Poisson::new(due).unwrap();
        let (lo, hi) = (p.inverse_cdf(0.0005), p.inverse_cdf(0.9995));
        assert!(
            (lo..=hi).contains(&n),
            "{n} arrivals outside {lo}..={hi}: {iv}"
        );
        poisson_total += n;
    }
    let p = Poisson::new(1000.0).unwrap();
    assert!((p.inverse_cdf(0.0005)..=p.inverse_cdf(0.9995)).contains(&poisson_total));

    // The engine deals the same arrivals: the run completes exactly the schedule's, each in
    // the stage of its intended start.
    for (extra, expected) in [
        (vec![], total),
        (vec!["--arrivals", "poisson", "--seed", "7"], poisson_total),
    ] {
        let mut args = vec![
            "run",
            "noop",
            "--stages",
            RAMP,
            "--max-in-flight",
            "2",
            "-i",
            "500ms",
            "-o",
            "r.json",
        ];
        args.extend(extra.iter().copied());
        d.ok(&args);
        let r = d.result("r.json");
        // Each arrival started or, its worker behind at the end, was counted as missed.
        let missed: u64 = r.stages.iter().map(|s| s.missed_starts).sum();
        assert_eq!(r.total.ok + r.total.errors + missed, expected, "{extra:?}");
        assert!(missed * 20 < expected, "{missed} missed on noop://");
        let names: Vec<&str> = r.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["up", "hold"]);
        assert!(r.stages.iter().all(|s| s.ran == StageRan::Complete));
        let offered: f64 = r.stages.iter().map(|s| s.offered.unwrap()).sum();
        assert!((offered - 1000.0).abs() < 1e-6, "{offered}");
        assert_eq!(
            (r.stages[0].judged.as_str(), r.stages[1].judged.as_str()),
            ("rig", "steady")
        );
        assert_eq!(r.intervals.len(), 8);
        for i in &r.intervals {
            let due = due_by(i.end_s) - due_by(i.start_s);
            assert!((i.offered.unwrap() - due).abs() < 1e-6);
        }
        assert_stages_split(&r);
    }
}

#[test]
fn a_closed_loop_ramp_adds_its_clients_at_an_even_pace() {
    let d = Dir::new();
    // 1 → 4 clients over 2 s, then 4 for 1 s: a client joins every 2/3 s; then one leaves
    // (at 3.5 s) and 3 run on.
    d.ok(&[
        "run",
        "noop",
        "-t",
        "sleep://?latency=5ms",
        "--stages",
        "2s:1..4c,top=1s:4c,down=500ms:4..3c,rest=750ms:3c",
        "-i",
        "250ms",
        "-o",
        "c.json",
        "--report",
        "c.html",
    ]);
    let r = d.result("c.json");
    // The report has the stages' table (a row each) and throughput against the clients.
    let page = std::fs::read_to_string(d.join("c.html")).unwrap();
    assert!(page.contains("<table class=\"stages\">") && page.contains("id=\"offered\""));
    assert!(page.contains("<td class=\"text\">top</td>"));
    assert_eq!(r.intervals.len(), 17);
    let mut last = 0;
    for i in &r.intervals[..12] {
        let running = i.clients.expect("clients per interval");
        let ramp = (1.0 + 3.0 * i.end_s.min(2.0) / 2.0 + 1e-9).floor() as u64;
        // The count at the interval's end: the ramp's, or one behind at a join's instant.
        assert!(
            running <= ramp && running + 1 >= ramp && running >= last,
            "{running} clients at {}s, the ramp says {ramp}",
            i.end_s
        );
        last = running;
    }
    let seen: Vec<u64> = r.intervals.iter().filter_map(|i| i.clients).collect();
    for n in 1..=4 {
        assert!(seen.contains(&n), "{n} clients never ran: {seen:?}");
    }
    assert!(r.intervals[8..12].iter().all(|i| i.clients == Some(4)));
    assert!(r.intervals[14..].iter().all(|i| i.clients == Some(3)));
    // Fairness is judged over the clients that ran a whole interval: each of them
    // completes dozens of 5 ms sleeps in 250 ms, and none that has not joined yet or has
    // left (the fourth, after 3.5 s, beside three that complete dozens) counts as starved.
    for i in &r.intervals {
        let f = i.fairness.as_ref().expect("fairness per interval");
        assert!(f.starved == 0 && f.min > 0, "interval {}: {f:?}", i.index);
    }
    let v = r.validity.as_ref().expect("validity");
    assert_eq!(v.fairness.starved_client_intervals, 0, "{:?}", v.fairness);
    assert_eq!(r.stages[1].name, "top");
    assert_eq!(r.stages[1].judged, "steady");
    assert_stages_split(&r);
}

#[test]
fn stop_when_ends_a_step_test_in_the_step_beyond_capacity() {
    // Timing decides where the latency breaks: no other test's load beside it.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    // 4 workers × 1/50ms: 80/s. 40/s and 60/s are carried, 200/s is not (each worker falls
    // 1.5 s behind a second, so p99 passes 400 ms within its first interval); the limit
    // stays far above what a busy machine's scheduling adds to a 50 ms sleep.
    let (stdout, _) = d.code(
        0,
        &[
            "run",
            "noop",
            "-t",
            "sleep://?latency=50ms",
            "--stages",
            "low=2s:40/s,mid=2s:60/s,over=3s:200/s,after=1s:10/s",
            "--max-in-flight",
            "4",
            "-i",
            "500ms",
            "--stop-when",
            "p99 > 400ms",
            "-o",
            "b.json",
        ],
    );
    let r = d.result("b.json");
    let b = r.breakpoint.as_ref().expect("breakpoint");
    let p99s: Vec<(&str, u64, u64)> = (r.stages.iter())
        .map(|s| (s.name.as_str(), s.total.ok, s.total.latency.p99_ns))
        .collect();
    eprintln!("{b:?}\nstages (name, ok, p99 ns): {p99s:?}");
    assert!(b.stopped, "{b:?}");
    assert_eq!(b.consecutive, 2);
    assert_eq!(b.stopped_in.as_deref(), Some("over"));
    assert_eq!(
        (b.sustained, b.sustained_in.as_deref()),
        (Some(60.0), Some("mid"))
    );
    assert_eq!(
        (b.first_failing, b.first_failing_in.as_deref()),
        (Some(200.0), Some("over"))
    );
    let ran: Vec<StageRan> = r.stages.iter().map(|s| s.ran).collect();
    use StageRan::*;
    assert_eq!(ran, [Complete, Complete, Cut, NotRun]);
    assert!(r.stages[3].offered.is_none() && r.stages[3].total.ok == 0);
    // The arrivals the overloaded step left behind never started, and are counted.
    assert!(
        r.stages[2].missed_starts > 0,
        "{:?}",
        r.stages[2].missed_starts
    );
    assert!(r
        .intervals
        .iter()
        .all(|i| i.stage.as_deref() != Some("after")));
    assert!(
        stdout.contains("highest load sustained: 60 ops/s (stage mid)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("stage over: 4.0s to 7.0s, 200/s, cut short"),
        "{stdout}"
    );
    assert_stages_split(&r);
}

#[test]
fn sharded_stages_merge_into_their_union() {
    let d = Dir::new();
    run_shards(
        &d,
        2,
        &[
            "run",
            "noop",
            "--stages",
            "a=1s:0..200/s,b=1s:200/s",
            "--max-in-flight",
            "2",
            "-i",
            "500ms",
            "--seed",
            "3",
        ],
    );
    d.ok(&["merge", "s0.json", "s1.json", "-o", "m.json"]);
    let shards = [d.result("s0.json"), d.result("s1.json")];
    let m = d.result("m.json");
    // 100 + 200 arrivals over both shards, each shard following its half of every stage.
    let started = |s: &StageRecord| s.total.ok + s.missed_starts;
    for (k, s) in m.stages.iter().enumerate() {
        let parts: Vec<_> = shards.iter().map(|r| &r.stages[k]).collect();
        assert!(parts.iter().all(|p| p.name == s.name));
        assert_eq!(s.total.ok, parts.iter().map(|p| p.total.ok).sum::<u64>());
        let mut union = new_hist();
        for p in &parts {
            union.add(p.total.histogram.decode().unwrap()).unwrap();
        }
        assert_eq!(
            s.total.histogram.decode().unwrap(),
            union,
            "stage {}",
            s.name
        );
    }
    assert_eq!((started(&m.stages[0]), started(&m.stages[1])), (100, 200));
    assert_stages_split(&m);
}

#[test]
fn bad_stages_exit_2_at_their_place_and_nothing_runs() {
    let d = Dir::new();
    let file = d.write(
        "staged.toml",
        "name = \"staged\"\ndescription = \"stages\"\ntarget = \"noop://\"\n\n[[op]]\nname = \"nop\"\nnop = {}\n\n\
         [[load.stage]]\nduration = \"10s\"\nrate = 100\n\n\
         [[load.stage]]\nduration = \"0s\"\nrate = 200\n",
    );
    let file = file.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 7] = [
        (vec![file], "staged.toml:14:12"),
        (vec!["noop", "--stages", "10s:100/s,10s:4c"], "closed loop"),
        (
            vec!["noop", "--stages", "10s:100/s", "--duration", "5s"],
            "--duration",
        ),
        (vec!["noop", "--stages", "10s:100"], "no unit"),
        (vec!["noop", "--stop-when", "p99 > 50ms"], "--stages"),
        (
            vec![
                "noop",
                "--stages",
                "3s:10/s",
                "--stop-when",
                "p99 > 5ms for 9 intervals",
            ],
            "it can never end the run",
        ),
        (
            vec!["noop", "--stages", "a=10s:100/s", "--check", "p99 < 1ms @b"],
            "no stage 'b'",
        ),
    ];
    for (args, fragment) in cases {
        let mut all = vec!["run"];
        all.extend(&args);
        all.extend(["-o", "never.json"]);
        let (_, stderr) = d.code(2, &all);
        assert!(stderr.contains(fragment), "{args:?}: {stderr}");
    }
    assert!(!d.join("never.json").exists(), "nothing runs");
}

#[test]
fn a_sharded_client_ramp_merges_with_no_departed_client_starved() {
    let d = Dir::new();
    // Each shard ramps 1 → 4 clients, holds 4, then lets one go: intervals in which clients
    // join or leave hold clients with nothing done that are not starved.
    run_shards(
        &d,
        2,
        &[
            "run",
            "noop",
            "-t",
            "sleep://?latency=5ms",
            "--stages",
            "1500ms:2..8c,top=750ms:8c,down=500ms:8..6c,rest=750ms:6c",
            "-i",
            "250ms",
        ],
    );
    let shards = [d.result("s0.json"), d.result("s1.json")];
    // The shards say which of their clients ran whole intervals of the ramps.
    assert!(
        shards
            .iter()
            .all(|s| s.intervals.iter().any(|i| i.ran_whole.is_some())),
        "no shard recorded the clients that ran whole intervals"
    );
    d.ok(&["merge", "s0.json", "s1.json", "-o", "m.json"]);
    let m = d.result("m.json");
    let departed = m
        .intervals
        .iter()
        .filter(|i| i.stage.as_deref() == Some("rest"))
        .count();
    assert!(departed >= 2, "{departed} intervals after the ramp down");
    for i in &m.intervals {
        let f = i.fairness.as_ref().expect("fairness per interval");
        assert!(f.starved == 0 && f.min > 0, "interval {}: {f:?}", i.index);
    }
    let v = m.validity.as_ref().expect("validity");
    assert_eq!(v.fairness.starved_client_intervals, 0, "{:?}", v.fairness);
}
