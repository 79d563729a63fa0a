//! `loadrig compare` against the `sleep` target, whose latency is known.
//!
//! The runs being compared go at the same time, so they share whatever else the machine is
//! doing: the comparison judges the target, not the neighbours.

use crate::common::Dir;
use serde_json::Value;

fn metrics(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).expect("compare --format json is JSON");
    assert_eq!(v["operations"].as_array().unwrap().len(), 1);
    assert_eq!(v["operations"][0]["operation"], "nop");
    v["operations"][0]["metrics"].as_array().unwrap().clone()
}

fn get<'a>(ms: &'a [Value], name: &str) -> &'a Value {
    ms.iter().find(|m| m["metric"] == name).expect("metric")
}

/// The 95 % interval overlaps [lo, hi].
fn overlaps(m: &Value, lo: f64, hi: f64) -> bool {
    let (a, b) = (
        m["ci_low"].as_f64().unwrap(),
        m["ci_high"].as_f64().unwrap(),
    );
    a <= hi && lo <= b
}

#[test]
fn same_target_no_change_doubled_sleep_regression_of_about_100_percent() {
    let d = Dir::new();
    d.sleep_runs_together(
        &[("a.json", "2ms"), ("a2.json", "2ms"), ("b.json", "4ms")],
        30,
    );

    // Two runs of the same target: no significant change in the rate or the body of the
    // distribution. The p99 and p99.9 of ~2,800 operations are their worst 28 and 3, which a
    // stall of one process (not the other) moves by more than the one-run allowance on a
    // busy machine: a real difference between the two runs, not a change of the target. So
    // the tails are held to a verdict on well-formed intervals only, and the exit status is
    // not tied to them (tails against known ground truth: the doubled sleep below).
    let out = d.ok(&["compare", "a.json", "a2.json", "--format", "json"]);
    let ms = metrics(&out);
    assert_eq!(ms.len(), 6, "{out}");
    for m in ms {
        assert!(m["ci_low"].as_f64().unwrap() <= m["ci_high"].as_f64().unwrap());
        match m["metric"].as_str().unwrap() {
            "p99" | "p99.9" => assert_ne!(m["verdict"], "too_little_data", "{m}"),
            _ => assert_eq!(m["verdict"], "no_change", "{m}"),
        }
    }

    // The sleep doubled. The truth: each latency goes from 2 ms + e to 4 ms + e, where e is
    // what the rig and the scheduler add (0 to 200 µs here), so the median rises by
    // (4 + e) / (2 + e) − 1, between +90.9 % and +100 %; two closed-loop clients finish
    // half as many operations, a change between −50 % and −47.6 %.
    let (out, _) = d.code(
        1,
        &[
            "compare",
            "a.json",
            "b.json",
            "--format",
            "json",
            "--fail-on-regression",
        ],
    );
    let ms = metrics(&out);
    for name in ["throughput", "p50"] {
        assert_eq!(get(&ms, name)["verdict"], "regressed", "{out}");
    }
    let p50 = get(&ms, "p50");
    let change = p50["change"].as_f64().unwrap();
    assert!((0.85..1.05).contains(&change), "p50 change {change}");
    assert!(overlaps(p50, 4.2 / 2.2 - 1.0, 1.0), "{p50}");
    let thr = get(&ms, "throughput");
    let change = thr["change"].as_f64().unwrap();
    assert!(
        (-0.55..-0.44).contains(&change),
        "throughput change {change}"
    );
    assert!(overlaps(thr, -0.5, 2.2 / 4.2 - 1.0), "{thr}");
    assert_eq!(thr["test"], "mann-whitney");
    assert!(thr["p_value"].as_f64().unwrap() < 0.05);
    // Tails carry the machine's noise as well (a 2 ms sleep can show a 6 ms p99 on a busy
    // machine): their intervals are wide, and their verdicts are never "improved".
    for name in ["p90", "p99"] {
        assert_ne!(get(&ms, name)["verdict"], "improved", "{out}");
    }

    // Without --fail-on-regression a regression is reported, not an exit status.
    let (table, _) = d.code(0, &["compare", "a.json", "b.json"]);
    assert!(table.contains("95% interval"), "{table}");
    assert!(table.contains("regressed"), "{table}");
    assert!(table.contains(" regressed, 0 improved"), "{table}");

    // The other way round everything improved, which never fails.
    let (out, _) = d.code(
        0,
        &[
            "compare",
            "b.json",
            "a.json",
            "--format",
            "json",
            "--fail-on-regression",
        ],
    );
    let ms = metrics(&out);
    for name in ["throughput", "p50"] {
        assert_eq!(get(&ms, name)["verdict"], "improved", "{out}");
    }
    for name in ["p90", "p99"] {
        assert_ne!(get(&ms, name)["verdict"], "regressed", "{out}");
    }

    // Markdown for pull requests.
    let (md, _) = d.code(0, &["compare", "a.json", "b.json", "--format", "markdown"]);
    assert!(
        md.contains("| operation | metric | base | new | change | 95% interval | p | verdict |")
    );
    assert!(md.contains("| nop | p50 |"), "{md}");
    assert!(md.contains("**regressed**"), "{md}");

    // A wide noise threshold swallows even a doubling (+91 % to +100 %, see above).
    let (out, _) = d.code(
        0,
        &[
            "compare",
            "a.json",
            "b.json",
            "--format",
            "json",
            "--noise",
            "120%",
            "--fail-on-regression",
        ],
    );
    let ms = metrics(&out);
    assert_eq!(ms.len(), 6, "{out}");
    for m in ms {
        assert_eq!(m["verdict"], "no_change", "{m}");
    }

    // Thresholds on the new run.
    let (out, _) = d.code(
        1,
        &["compare", "a.json", "b.json", "--check", "nop.p50 < 3ms"],
    );
    assert!(out.contains("check FAILED: nop.p50 < 3ms"), "{out}");
    let (out, _) = d.code(0, &["compare", "a.json", "b.json", "--check", "p50 < 1s"]);
    assert!(out.contains("check passed: p50 < 1s"), "{out}");
}

#[test]
fn too_few_intervals_give_no_verdict() {
    let d = Dir::new();
    for (file, latency) in [("a.json", "1ms"), ("b.json", "3ms")] {
        let target = format!("sleep://?latency={latency}");
        d.ok(&[
            "run",
            "noop",
            "--target",
            &target,
            "--samples",
            "3",
            "--interval",
            "50ms",
            "-o",
            file,
        ]);
    }
    let (out, _) = d.code(
        0,
        &[
            "compare",
            "a.json",
            "b.json",
            "--format",
            "json",
            "--fail-on-regression",
        ],
    );
    let ms = metrics(&out);
    assert_eq!(ms.len(), 6, "{out}");
    for m in ms {
        assert_eq!(m["verdict"], "too_little_data", "{m}");
    }
    assert!(out.contains("a verdict needs at least 5"), "{out}");
}

#[test]
fn bad_compare_input_exits_2_with_a_message() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "noop://",
        "--samples",
        "2",
        "--interval",
        "20ms",
        "-o",
        "a.json",
    ]);
    d.write("not.json", "{\"hello\": 1}");
    for (args, fragment) in [
        (
            vec!["compare", "a.json", "missing.json"],
            "could not read 'missing.json'",
        ),
        (
            vec!["compare", "a.json", "not.json"],
            "'not.json' is not a loadrig result file",
        ),
        (
            vec!["compare", "a.json", "a.json", "--noise", "lots"],
            "--noise lots",
        ),
        (
            vec!["compare", "a.json", "a.json", "--noise=-5%"],
            "--noise -5%: expected a percentage of 0 or more",
        ),
        (
            vec!["compare", "a.json", "a.json", "--format", "xml"],
            "invalid value 'xml'",
        ),
        (
            vec!["compare", "a.json", "a.json", "--check", "nop.p99 <"],
            "no value after the operator",
        ),
        (
            vec!["compare", "a.json", "a.json", "--check", "read.p99 < 1ms"],
            "has no operation 'read'",
        ),
    ] {
        let (_, err) = d.code(2, &args);
        assert!(err.contains(fragment), "{args:?}: {err}");
    }
}
