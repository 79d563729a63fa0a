//! Thresholds: `--check` on `run` and `compare`, and `checks = [...]` in a workload file.

use crate::common::Dir;
use loadrig::result::RunStatus;

const RUN: [&str; 8] = [
    "run",
    "noop",
    "--target",
    "sleep://?latency=1ms",
    "--samples",
    "3",
    "--interval",
    "50ms",
];

fn run_with(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<&str> = RUN.to_vec();
    args.extend_from_slice(&["-o", "r.json"]);
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn passing_checks_exit_0_and_are_printed() {
    let d = Dir::new();
    let a = run_with(&[
        "--check",
        "nop.p99 < 1s",
        "--check",
        "errors < 0.1%",
        "--check",
        "throughput > 10/s",
        "--check",
        "total.max <= 10s",
    ]);
    let (out, _) = d.code(0, &args(&a));
    assert!(out.contains("check passed: nop.p99 < 1s  (p99 = "), "{out}");
    assert!(
        out.contains("check passed: errors < 0.1%  (errors = 0.000% (0 of "),
        "{out}"
    );
    assert!(out.contains("check passed: throughput > 10/s"), "{out}");
    assert!(out.contains("checks: 4 passed, 0 failed"), "{out}");
}

#[test]
fn a_failing_check_exits_1_after_writing_the_result() {
    let d = Dir::new();
    let a = run_with(&["--check", "p50 < 10us", "--check", "throughput > 1000000/s"]);
    let (out, _) = d.code(1, &args(&a));
    assert!(out.contains("check FAILED: p50 < 10us  (p50 = "), "{out}");
    assert!(
        out.contains("check FAILED: throughput > 1000000/s"),
        "{out}"
    );
    assert!(out.contains("checks: 0 passed, 2 failed"), "{out}");
    assert_eq!(d.result("r.json").status, RunStatus::Complete);
}

#[test]
fn error_checks_count_failed_operations() {
    let d = Dir::new();
    let (out, _) = d.code(
        1,
        &[
            "run",
            "noop",
            "--target",
            "sleep://?latency=100us&errors=0.5",
            "--ops",
            "400",
            "-o",
            "r.json",
            "--check",
            "errors < 10%",
            "--check",
            "errors >= 1",
        ],
    );
    assert!(out.contains("check FAILED: errors < 10%"), "{out}");
    assert!(out.contains("check passed: errors >= 1"), "{out}");
}

#[test]
fn malformed_checks_exit_2_before_anything_runs() {
    for (check, fragment) in [
        ("nop.p99 20ms", "no comparison operator"),
        ("nop.p98 < 20ms", "unknown metric 'p98'"),
        ("nop.p99 < 20", "has no unit"),
        ("throughput > quick", "is not a rate"),
        ("errors < 200%", "at most 100%"),
        ("read.p99 < 1ms", "has no operation 'read'"),
    ] {
        let d = Dir::new();
        let a = run_with(&["--check", check]);
        let (out, err) = d.code(2, &args(&a));
        assert!(err.contains(fragment), "{check}: {err}");
        assert!(err.contains(&format!("check '{check}'")), "{check}: {err}");
        assert!(err.contains("help:"), "{check}: {err}");
        assert!(out.is_empty(), "{check}: nothing ran: {out}");
        assert!(
            d.files().is_empty(),
            "{check}: nothing written: {:?}",
            d.files()
        );
    }
}

const WORKLOAD: &str = r#"name = "checked"
target = "sleep://?latency=1ms"
checks = ["get.p99 < 1s", CHECK]

[load]
samples = 3
interval = "50ms"

[[op]]
name = "get"
weight = 3
nop = {}

[[op]]
name = "put"
nop = {}
"#;

#[test]
fn workload_file_checks_run_and_point_at_their_line() {
    let d = Dir::new();
    d.write("ok.toml", &WORKLOAD.replace("CHECK", "\"errors < 1%\""));
    let (out, _) = d.code(0, &["run", "ok.toml", "-o", "r.json"]);
    assert!(out.contains("check passed: get.p99 < 1s"), "{out}");
    assert!(out.contains("check passed: errors < 1%"), "{out}");

    // --check adds to the file's checks.
    let (out, _) = d.code(
        1,
        &[
            "run",
            "ok.toml",
            "-o",
            "r.json",
            "--check",
            "put.mean < 1ns",
        ],
    );
    assert!(out.contains("checks: 2 passed, 1 failed"), "{out}");

    // A workload check on an operation that --op leaves out is skipped, not an error.
    let (out, _) = d.code(0, &["run", "ok.toml", "-o", "r.json", "--op", "put"]);
    assert!(out.contains("check 'get.p99 < 1s' skipped"), "{out}");

    d.write("bad.toml", &WORKLOAD.replace("CHECK", "\"put.p50 < soon\""));
    let (_, err) = d.code(2, &["run", "bad.toml", "-o", "bad.json"]);
    assert!(err.contains("bad.toml:3:"), "{err}");
    assert!(err.contains("check 'put.p50 < soon'"), "{err}");
    assert!(!d.join("bad.json").exists());

    d.write(
        "unknown.toml",
        &WORKLOAD.replace("CHECK", "\"post.p50 < 1s\""),
    );
    let (_, err) = d.code(2, &["run", "unknown.toml", "-o", "bad.json"]);
    assert!(err.contains("unknown.toml:3:"), "{err}");
    assert!(err.contains("has no operation 'post'"), "{err}");
    assert!(err.contains("get, put"), "{err}");

    d.write("typed.toml", &WORKLOAD.replace("CHECK", "3"));
    let (_, err) = d.code(2, &["run", "typed.toml", "-o", "bad.json"]);
    assert!(err.contains("typed.toml:3:"), "{err}");
}
