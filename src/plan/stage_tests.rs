//! Stages and `--stop-when`: the flag, the file's `[[load.stage]]`, the rules between them
//! and the other settings, and `vary`, in-process.

use std::time::Duration;

use clap::Parser;

use super::*;
use crate::engine::{Mode, StageKind, StopFigure};

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    run: RunArgs,
}

fn args(flags: &[&str]) -> RunArgs {
    let mut argv = vec!["loadrig"];
    argv.extend_from_slice(flags);
    Flags::try_parse_from(argv).expect("flags parse").run
}

/// A workload whose `[load]` is `load` followed by `stages` (its `[[load.stage]]` tables).
fn with_file(load: &str, stages: &str, flags: &[&str]) -> Result<RunPlan, InputError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("w.toml");
    std::fs::write(
        &path,
        format!("name = \"w\"\ntarget = \"noop://\"\n\n[load]\n{load}\n\n{stages}\n[[op]]\nname = \"nop\"\nnop = {{}}\n"),
    )
    .expect("write workload");
    let mut all = vec![path.to_str().expect("utf-8 path")];
    all.extend_from_slice(flags);
    resolve(&args(&all))
}

fn plan(flags: &[&str]) -> Result<RunPlan, InputError> {
    resolve(&args(flags))
}

fn err(flags: &[&str]) -> String {
    let e = plan(flags).expect_err("should be refused");
    format!("{e}")
}

const S: Duration = Duration::from_secs(1);

#[test]
fn the_flag_sets_the_loop_the_length_and_the_peak() {
    let p = plan(&[
        "noop",
        "--stages",
        "30s:0..2000/s,ramp=1m:2000/s",
        "--max-in-flight",
        "4",
    ])
    .unwrap();
    assert!(matches!(p.load.mode, Mode::Open { rate, workers: 4, .. } if rate == 2000.0));
    assert_eq!(p.load.duration, Some(90 * S));
    assert_eq!(p.load.stages.len(), 2);
    assert_eq!(p.load.stages[0].name, "1");
    assert_eq!(p.load.stages[1].name, "ramp");
    let p = plan(&["noop", "--stages", "1m:1..64c,5m:64..8c", "--warmup", "10s"]).unwrap();
    assert!(matches!(p.load.mode, Mode::Closed { clients: 64, .. }));
    assert_eq!((p.load.warmup, p.load.duration), (10 * S, Some(350 * S)));
    let steps = plan(&["noop", "--stages", "step=40s:100..400/s:steps=4"]).unwrap();
    let levels: Vec<(String, f64)> = (steps.load.stages.iter())
        .map(|s| (s.name.clone(), s.from))
        .collect();
    assert_eq!(
        levels,
        [
            ("step.1".to_string(), 100.0),
            ("step.2".to_string(), 200.0),
            ("step.3".to_string(), 300.0),
            ("step.4".to_string(), 400.0)
        ]
    );
    assert_eq!(steps.load.timeline().last(), Some(39));
}

#[test]
fn stages_refuse_what_they_replace_and_the_other_loop() {
    for (flags, fragment) in [
        (vec!["--duration", "10s"], "the stages set the run's length"),
        (vec!["--ops", "100"], "the stages set the run's length"),
        (vec!["--samples", "3"], "the stages set the run's length"),
        (vec!["--clients", "4"], "--clients with rate stages"),
        (vec!["--think-time", "1ms"], "--think-time with rate stages"),
        (vec!["--warmup", "auto"], "--warmup auto cannot be used"),
        (vec!["--warmup", "20s"], "takes the whole of the stages"),
    ] {
        let mut all = vec!["noop", "--stages", "10s:100/s,10s:200/s"];
        all.extend(flags.iter());
        assert!(err(&all).contains(fragment), "{flags:?}: {}", err(&all));
    }
    for (flags, fragment) in [
        (vec!["--rate", "10"], "--rate with client stages"),
        (
            vec!["--max-in-flight", "3"],
            "--max-in-flight with client stages",
        ),
        (vec!["--pipeline", "2"], "cannot be used with client stages"),
    ] {
        let mut all = vec!["noop", "--stages", "10s:1..4c"];
        all.extend(flags.iter());
        assert!(err(&all).contains(fragment), "{flags:?}: {}", err(&all));
    }
    for (stages, fragment) in [
        ("10s:100/s,0s:200/s", "its duration is zero"),
        ("10s:100/s,10s:4c", "one run is an open loop"),
        ("a=10s:100/s,a=10s:200/s", "used twice"),
        ("1a=10s:100/s", "starts with a letter"),
        ("10s:0/s", "nothing would run"),
        ("10s:100..400/s:steps=1", "expected 2 to 1000"),
    ] {
        let e = err(&["noop", "--stages", stages]);
        assert!(e.contains(fragment), "{stages}: {e}");
    }
}

#[test]
fn the_files_stages_are_checked_at_their_place() {
    let table = |body: &str| format!("[[load.stage]]\n{body}\n");
    let ok = with_file(
        "max_in_flight = 2",
        &(table("name = \"ramp\"\nduration = \"10s\"\nrate_from = 0\nrate_to = 100")
            + &table("duration = \"5s\"\nrate = 100\nstart = \"10s\"")),
        &[],
    )
    .unwrap();
    assert_eq!(ok.load.stages[0].name, "ramp");
    assert_eq!(ok.load.stages[1].name, "2");
    for (stages, fragment, line) in [
        (
            table("duration = \"10s\"\nrate = 10")
                + &table("duration = \"5s\"\nrate = 10\nstart = \"5s\""),
            "overlaps the stage before it",
            13,
        ),
        (
            table("duration = \"0s\"\nrate = 10"),
            "its duration is zero",
            8,
        ),
        (
            table("duration = \"10s\"\nrate = 10\nclients = 3"),
            "both a rate and clients",
            10,
        ),
        (
            table("duration = \"10s\"\nrate_from = 10"),
            "rate_from and rate_to",
            9,
        ),
        (
            table("duration = \"10s\"\nrate = 10\nshape = \"sine\""),
            "expected \"linear\" or \"step\"",
            10,
        ),
        (
            table("duration = \"10s\"\nrates = 10"),
            "unknown field `rates`",
            9,
        ),
        (table("rate = 10"), "no duration", 7),
    ] {
        let e = with_file("", &stages, &[]).expect_err(fragment);
        let at = e.location.clone().unwrap_or_default();
        assert!(e.message.contains(fragment), "{}", e.message);
        assert!(
            at.contains(&format!("w.toml:{line}:")),
            "{fragment}: at {at}"
        );
    }
    // A rate stage in a workload whose [load] runs clients.
    let e = with_file("clients = 4", &table("duration = \"10s\"\nrate = 10"), &[]).unwrap_err();
    assert!(
        e.message.contains("a rate stage in a closed-loop workload"),
        "{}",
        e.message
    );
    // The flags win: --rate drops the file's stages, --stages the file's rate.
    let p = with_file(
        "",
        &table("duration = \"10s\"\nrate = 10"),
        &["--rate", "5"],
    )
    .unwrap();
    assert!(p.load.stages.is_empty());
    let p = with_file("rate = 7\nduration = \"3s\"", "", &["--stages", "2s:3/s"]).unwrap();
    assert_eq!(p.load.stages[0].from, 3.0);
}

#[test]
fn stop_when_reads_one_interval_and_needs_stages() {
    let p = plan(&[
        "noop",
        "--stages",
        "10s:100/s,10s:200/s",
        "--stop-when",
        "nop.p99 > 50ms for 3 intervals",
    ])
    .unwrap();
    let w = p.load.stop_when.unwrap();
    assert_eq!(
        (w.figure, w.consecutive, w.op.as_deref(), w.limit),
        (StopFigure::P99, 3, Some("nop"), 50e6)
    );
    assert!(w.above && !w.inclusive);
    for (flags, fragment) in [
        (vec!["--stop-when", "p99 > 50ms"], "this run has no stages"),
        (
            vec![
                "--stages",
                "3s:10/s",
                "--stop-when",
                "p99 > 50ms for 4 intervals",
            ],
            "it can never end the run",
        ),
        (
            vec!["--stages", "3s:10/s", "--stop-when", "valid"],
            "'valid' is the verdict on a whole run",
        ),
        (
            vec!["--stages", "3s:10/s", "--stop-when", "read.p99 > 1ms"],
            "no operation 'read'",
        ),
        (
            vec!["--stages", "3s:10/s", "--stop-when", "p99 > 1ms @1"],
            "names no stage",
        ),
    ] {
        let mut all = vec!["noop"];
        all.extend(flags.iter());
        assert!(err(&all).contains(fragment), "{flags:?}: {}", err(&all));
    }
}

#[test]
fn checks_name_stages_that_exist() {
    assert!(plan(&[
        "noop",
        "--stages",
        "spike=3s:10/s",
        "--check",
        "p99 < 1s @spike"
    ])
    .is_ok());
    let e = err(&[
        "noop",
        "--stages",
        "spike=3s:10/s",
        "--check",
        "p99 < 1s @spik",
    ]);
    assert!(e.contains("no stage 'spik'") && e.contains("spike"), "{e}");
    let e = err(&["noop", "--check", "p99 < 1s @spike"]);
    assert!(e.contains("this run has no stages"), "{e}");
}

#[test]
fn stages_vary_as_the_flag() {
    let p = plan(&["noop", "--rate", "100", "-d", "3s"]).unwrap();
    let staged = p
        .vary(
            &Factor::named("stages", &p.workload).unwrap(),
            &Value::Text("a=2s:0..50/s,b=1s:50/s".into()),
        )
        .unwrap();
    assert_eq!(staged.load.stages.len(), 2);
    assert_eq!(staged.load.stages[0].kind, StageKind::Rate);
    // Stages and a constant load replace each other, the later one winning.
    let back = staged
        .vary(&Factor::Load(LoadSetting::Rate), &Value::Number(20.0))
        .unwrap();
    assert!(back.load.stages.is_empty());
    assert!(matches!(back.load.mode, Mode::Open { rate, .. } if rate == 20.0));
    // A varied plan keeps every check.
    let bad = p.vary(
        &Factor::Load(LoadSetting::Stages),
        &Value::Text("2s:5/s,1s:3c".into()),
    );
    assert!(bad.is_err());
}
