//! Sweeps and their models against `sleep://` targets whose scaling is known (the models are
//! stated in src/targets/sleep.rs). Only statistical properties are asserted, each with its
//! tolerance; no timing is.

use crate::common::locks::{hold, Shared};
use crate::common::{Dir, PUT_ONLY};
use loadrig::engine::Mode;
use loadrig::result::models::{Class, Verdict};
use loadrig::result::sweep::{self, SweepResult, SweepStatus};

fn sweep_file(d: &Dir, name: &str) -> SweepResult {
    sweep::read(&d.join(name)).expect("sweep file")
}

#[test]
fn usl_sweep_recovers_contention_and_coherency() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    // Truth: latency 5 ms stretched by 1 + σ(N−1) + κN(N−1) with σ = 0.1, κ = 0.005, so
    // λ = 200 ops/s and N* = √(0.9/0.005) ≈ 13.4. Every operation also pays the harness's
    // own overhead ε, which scales λ, σ and κ down by 1/(1 + λε): a few per cent, up to about
    // 13 % on a machine loaded six times over.
    // Tolerances: λ within 15 %, σ within ±0.03, κ within 25 %, N* within 20 %.
    let d = Dir::new();
    let out = d.ok(&[
        "sweep",
        "noop",
        "--target",
        "sleep://?latency=5ms&usl=0.1,0.005",
        "--vary",
        "clients=1,2,4,8,12,16,24",
        "--duration",
        "600ms",
        "-o",
        "usl.json",
    ]);
    let s = sweep_file(&d, "usl.json");
    let u = s.models.usl.as_ref().expect("a USL model");
    let f = &u.fit;
    assert_eq!(f.verdict, Verdict::Good, "{f:?}\n{out}");
    assert!((f.lambda / 200.0 - 1.0).abs() < 0.15, "λ {f:?}");
    assert!((f.sigma - 0.1).abs() < 0.03, "σ {f:?}");
    assert!((f.kappa / 0.005 - 1.0).abs() < 0.25, "κ {f:?}");
    let n_star = (0.9f64 / 0.005).sqrt();
    assert!((f.peak_n.unwrap() / n_star - 1.0).abs() < 0.20, "N* {f:?}");
    assert!(out.contains("USL fit: λ"), "{out}");
    assert!(out.contains("peak at N*"), "{out}");

    // The file holds what a plot needs: every point with its full result, and the curve.
    assert_eq!(s.status, SweepStatus::Complete);
    assert_eq!(
        (s.vary.name.as_str(), s.vary.kind.as_str()),
        ("clients", "clients")
    );
    assert_eq!(s.points.len(), 7);
    for (p, n) in s.points.iter().zip([1, 2, 4, 8, 12, 16, 24]) {
        assert_eq!(p.x, Some(n as f64));
        assert!(
            matches!(p.result.load.mode, Mode::Closed { clients, .. } if clients == n as usize)
        );
        assert_eq!(p.ok, p.result.total.ok);
        assert!(!p.result.total.histogram.as_str().is_empty());
    }
    assert_eq!(u.curve.len(), 100);
    assert!(u.curve.iter().all(|c| c.y > 0.0));
}

/// A growth study of 750 records in batches of 50 on a sleep target with `growth`. The costs
/// are chosen so the signal (tenths of a second per batch) dwarfs what a busy machine adds to
/// each operation's wake-up.
fn growth_study(growth: &str) -> SweepResult {
    let d = Dir::new();
    let workload = d.write("put.toml", PUT_ONLY);
    let target = format!("sleep://?latency=0ms&growth={growth}");
    d.ok(&[
        "sweep",
        workload.to_str().unwrap(),
        "--target",
        &target,
        "--growth-batch",
        "50",
        "--growth-limit",
        "750",
        "-o",
        "g.json",
    ]);
    sweep_file(&d, "g.json")
}

#[test]
fn growth_constant_cost_is_o1() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    let s = growth_study("const:4ms");
    let g = s.models.growth.expect("a growth model");
    assert_eq!(g.fit.class, Class::Constant, "{:?}", g.fit);
    let stored: Vec<Option<u64>> = s.points.iter().map(|p| p.stored_before).collect();
    assert_eq!(stored, (0..15).map(|k| Some(k * 50)).collect::<Vec<_>>());
}

#[test]
fn growth_logarithmic_cost_is_olog() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    // Truth: a batch of 50 puts from n records costs 50 · 1 ms · log2(1+n) more, a slope of
    // 50 · 1 ms / ln 2 ≈ 0.0721 s per unit of ln(1+n). Tolerance: 30 %.
    let s = growth_study("log:1ms");
    let g = s.models.growth.expect("a growth model");
    assert_eq!(g.fit.class, Class::Log, "{:?}", g.fit);
    assert!((g.fit.slope / 0.07213 - 1.0).abs() < 0.3, "{:?}", g.fit);
}

#[test]
fn growth_linear_cost_is_on() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    // Truth: a batch of 50 puts costs 50 · 10 µs = 0.5 ms more per record stored.
    // Tolerance: 20 %.
    let s = growth_study("linear:10us");
    let g = s.models.growth.expect("a growth model");
    assert_eq!(g.fit.class, Class::Linear, "{:?}", g.fit);
    assert!((g.fit.slope / 5e-4 - 1.0).abs() < 0.2, "{:?}", g.fit);
    assert!(!g.curve.is_empty());
}

#[test]
fn growth_batches_continue_the_key_sequence() {
    // On files: 7 batches of 30 must leave 200 distinct files (the last batch is cut at the
    // limit's batch boundary: 7 × 30 = 210 ≥ 200), none overwritten by a later batch.
    let d = Dir::new();
    let workload = d.write("put.toml", PUT_ONLY);
    d.ok(&[
        "sweep",
        workload.to_str().unwrap(),
        "--target",
        "fs://./store",
        "--clients",
        "3",
        "--growth-batch",
        "30",
        "--growth-limit",
        "200",
        "-o",
        "g.json",
    ]);
    let s = sweep_file(&d, "g.json");
    assert_eq!(s.points.len(), 7);
    let files = walk(&d.join("store/loadrig_kv"));
    assert_eq!(files, 210);
}

fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        walk(&p)
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn delays_at_multiples_of_100ms_are_reported_periodic() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    // Tolerance: three modes within 5 % of 100, 200 and 300 ms (a busy machine delays every
    // wake-up a little), the period within 3 % of 100 ms.
    let d = Dir::new();
    let out = d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=0.34*100ms,0.33*200ms,0.33*300ms",
        "--clients",
        "20",
        "--duration",
        "1500ms",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let m = r.latency_modes.expect("latency modes");
    assert_eq!(m.shape, "multimodal");
    assert_eq!(m.modes.len(), 3, "{m:?}");
    for (mode, at) in m.modes.iter().zip([100e6, 200e6, 300e6]) {
        assert!((mode.at_ns / at - 1.0).abs() < 0.05, "{m:?}");
    }
    let p = m.periodic.expect("periodic");
    assert!((p.period_ns / 100e6 - 1.0).abs() < 0.03, "{p:?}");
    assert_eq!(p.multiples, vec![1, 2, 3]);
    let note = out
        .lines()
        .find(|l| l.starts_with("note: latency modes at"))
        .unwrap_or_else(|| panic!("no modes note in:\n{out}"));
    assert!(note.contains(": periodic, every"), "{note}");
    assert!(r.notes.iter().any(|n| n.starts_with("latency modes at")));
}

#[test]
fn a_single_distribution_is_reported_unimodal() {
    let d = Dir::new();
    let out = d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=exp(3ms)",
        "--clients",
        "4",
        "--duration",
        "1s",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let m = r.latency_modes.expect("latency modes");
    assert_eq!(m.shape, "unimodal", "{m:?}");
    assert_eq!(m.modes.len(), 1);
    assert!(m.periodic.is_none());
    assert!(!out.contains("latency modes at"), "{out}");
}

#[test]
fn rate_search_finds_the_knee_of_a_known_capacity() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    // Truth: one server of 400 ops/s. Above it the queue grows by (rate − 400) per second, so
    // within a 600 ms point p90 < 25 ms holds up to about 415 ops/s; below it nothing waits.
    // p90 rather than p99: with a few hundred samples p99 is nearly the maximum, and one
    // scheduler hiccup on a busy machine would decide it.
    // Tolerance: the knee within −15 % / +10 % of 400 ops/s.
    let d = Dir::new();
    let out = d.ok(&[
        "sweep",
        "noop",
        "--target",
        "sleep://?latency=1ms&capacity=400",
        "--vary",
        "rate=200..1000",
        "--find-max",
        "--slo",
        "p90 < 25ms",
        "--max-in-flight",
        "8",
        "--duration",
        "600ms",
        "-o",
        "knee.json",
    ]);
    let s = sweep_file(&d, "knee.json");
    let k = s.models.knee.expect("a knee");
    assert_eq!(k.method, "search");
    assert_eq!(k.knee.verdict, "between", "{k:?}\n{out}");
    let knee = k.knee.knee_rate.unwrap();
    assert!((340.0..=440.0).contains(&knee), "{k:?}\n{out}");
    let fail = k.knee.first_failing_rate.unwrap();
    assert!(fail > knee && (fail - knee) / knee <= 0.03 + 1e-9, "{k:?}");
    // It narrowed in: fewer runs than a grid at that precision would take.
    assert!(s.points.len() <= 12, "{}", s.points.len());
    assert_eq!(s.points[0].x, Some(200.0));
    assert_eq!(s.points[1].x, Some(1000.0));
    assert!(out.contains("knee (p90 < 25ms, search)"), "{out}");
}

#[test]
fn varying_a_parameter_the_workload_lacks_is_an_input_error() {
    let d = Dir::new();
    let out = d.loadrig(&[
        "sweep",
        "session-store",
        "--target",
        "sleep://?latency=1ms",
        "--vary",
        "bogus=1,2",
        "-o",
        "s.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--vary bogus"), "{err}");
    assert!(
        err.contains(
            "clients, rate, pipeline, threads, or one of the workload's parameters: records, shards, value_size"
        ),
        "{err}"
    );
    assert!(!d.join("s.json").exists());

    for (args, fragment) in [
        (
            vec!["--vary", "rate=1..5", "--find-max"],
            "--find-max needs an objective",
        ),
        (vec!["--vary", "clients=1,2", "--clients", "2"], "keep one"),
        (
            vec!["--vary", "rate=1..5", "--slo", "p99 > 5ms"],
            "--slo 'p99 > 5ms': an objective is an upper bound",
        ),
        (
            vec!["--vary", "rate=1..5", "--slo", "p99 < 5"],
            "--slo 'p99 < 5': '5' has no unit",
        ),
        (vec!["--growth-batch", "10"], "--growth-limit"),
        (vec![], "sweep needs something to vary"),
    ] {
        let mut full = vec!["sweep", "noop", "--target", "sleep://?latency=1ms"];
        full.extend(args);
        let out = d.loadrig(&full);
        assert_eq!(out.status.code(), Some(2), "{full:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(fragment), "{full:?}: {err}");
    }
}
