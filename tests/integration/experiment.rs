//! `loadrig experiment` end to end on `sleep://`, where the effects are known in advance: two
//! factors that add to one latency (`url.latency`, `url.extra`), a workload parameter that
//! does nothing, run-to-run noise from `runvar` (±10 %, drawn from each run's seed). The
//! response is the median latency, which a busy machine's late wake-ups move least. Bad input exits 2 with its place and the
//! fix and runs nothing; an interrupted experiment continues from the runs it wrote.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::locks::{hold, Shared};
use crate::common::Dir;
use loadrig::analysis::experiment::record::{ExperimentRecord, ExperimentStatus};

const WORKLOAD: &str = r#"
name = "sleepy"
description = "kv gets against sleep://, with a parameter that changes nothing"
target = "sleep://?latency=1ms"

[params]
label = "x"

[[op]]
name = "get"
kv = { get = { key = "k{uniform 1..100}" } }
"#;

fn run(d: &Dir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadrig"))
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", d.join("state"))
        .args(args)
        .output()
        .expect("run loadrig")
}

fn record(dir: &Path) -> ExperimentRecord {
    serde_json::from_str(&std::fs::read_to_string(dir.join("experiment.json")).unwrap()).unwrap()
}

const BASE: &[&str] = &[
    "experiment",
    "sleepy.toml",
    "--target",
    "sleep://?latency=1ms&runvar=0.1",
    "--clients",
    "1",
    "--warmup",
    "0s",
];

#[test]
fn known_effects_fall_inside_their_intervals_and_a_null_factor_is_not_called() {
    let d = Dir::new();
    d.write("sleepy.toml", WORKLOAD);
    let mut args = BASE.to_vec();
    args.extend([
        "--duration",
        "300ms",
        "--factor",
        "url.latency=1ms,6ms",
        "--factor",
        "url.extra=0ms,10ms",
        "--factor",
        "label=a,b",
        "--replicates",
        "3",
        "--response",
        "p50",
        "--seed",
        "7",
        "-o",
        "exp",
    ]);
    let out = {
        let _cpu = hold(&[Shared::Cpu]);
        run(&d, &args)
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("2^3 full factorial, 8 cells × 3 replicates = 24 runs"),
        "{stdout}"
    );
    assert!(stdout.contains("seed 7"), "{stdout}");
    let r = record(&d.join("exp"));
    assert_eq!(r.status, ExperimentStatus::Complete);
    assert_eq!((r.seed, r.runs.len()), (7, 24));
    // Replicates in interleaved blocks: each block holds every cell once.
    for block in 1..=3 {
        let mut cells: Vec<usize> = r
            .runs
            .iter()
            .filter(|x| x.block == block)
            .map(|x| x.cell)
            .collect();
        cells.sort_unstable();
        assert_eq!(cells, (0..8).collect::<Vec<_>>());
    }
    for x in &r.runs {
        assert!(x.done && d.join("exp").join(&x.file).exists(), "{}", x.file);
    }
    let a = &r.analyses[0];
    let effect = |t: &str| a.effects.iter().find(|e| e.term == t).unwrap();
    // The latency rises by exactly the difference of the levels: 5 ms and 10 ms (large
    // beside the late wake-ups of a machine with a long run queue, so both are called).
    for (term, truth) in [("A", 5e6), ("B", 10e6)] {
        let c = effect(term).contrast.clone().unwrap();
        assert!(
            c.low.unwrap() <= truth && truth <= c.high.unwrap(),
            "{term}: {} [{}, {}] should hold {truth}",
            c.estimate,
            c.low.unwrap(),
            c.high.unwrap()
        );
        assert_eq!(
            effect(term).significant,
            Some(true),
            "{term}: {} [{}, {}]",
            c.estimate,
            c.low.unwrap(),
            c.high.unwrap()
        );
    }
    assert_eq!(
        effect("C").significant,
        Some(false),
        "label changes nothing"
    );
    assert!(
        a.summary[0].starts_with("url.extra (0ms → 10ms) explains"),
        "{:?}",
        a.summary
    );
    let page = std::fs::read_to_string(d.join("exp/experiment.html")).unwrap();
    for id in ["main-0", "interaction-0", "allocation-0"] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert_eq!(page.matches("<svg").count(), 3);
}

/// Exit 2, a message with its place and its fix, and nothing written.
fn refused(d: &Dir, extra: &[&str], says: &[&str]) {
    let mut args = BASE.to_vec();
    args.extend(["--duration", "100ms", "-o", "never"]);
    args.extend(extra);
    let out = run(d, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
    for s in says {
        assert!(stderr.contains(s), "{extra:?}: missing {s:?} in\n{stderr}");
    }
    assert!(stderr.contains("help:"), "{extra:?}: no fix in\n{stderr}");
    assert!(!d.join("never").exists(), "{extra:?} wrote something");
}

#[test]
fn bad_input_exits_2_with_the_place_and_the_fix_and_runs_nothing() {
    let d = Dir::new();
    d.write("sleepy.toml", WORKLOAD);
    let two = [
        "--factor",
        "url.latency=1ms,2ms",
        "--factor",
        "url.extra=0ms,1ms",
    ];
    refused(
        &d,
        &["--factor", "clients=4"],
        &["--factor clients=4", "has 1 level"],
    );
    d.write("one.toml", "[[factor]]\nname = \"clients\"\nlevels = [4]\n");
    refused(
        &d,
        &["--design", "one.toml"],
        &["one.toml:3:10", "has 1 level"],
    );
    refused(
        &d,
        &["--factor", "colour=red,blue"],
        &[
            "--factor colour=red,blue",
            "names nothing a run can vary",
            "label",
        ],
    );
    refused(
        &d,
        &["--factor", "url.colour=red,blue"],
        &["url.colour=red", "unknown option 'colour'"],
    );
    refused(
        &d,
        &["--factor", "clients=one,two"],
        &["--clients one: expected a whole number"],
    );
    let mut four = two.to_vec();
    four.extend(["--factor", "label=a,b", "--factor", "clients=1,2"]);
    let mut bad = four.clone();
    bad.extend(["--fraction", "D=A"]);
    refused(
        &d,
        &bad,
        &["--fraction", "generator 'D=A'", "at least two letters"],
    );
    let mut bad = four.clone();
    bad.extend(["--fraction", "D=ABC", "--fraction", "C=AB"]);
    refused(&d, &bad, &["--fraction", "cannot stand on the right"]);
    let mut bad = two.to_vec();
    bad.extend(["--response", "put.p99"]);
    refused(
        &d,
        &bad,
        &["--response put.p99", "no operation 'put'", "get"],
    );
    let mut bad = two.to_vec();
    bad.extend(["--response", "tpmC"]);
    refused(&d, &bad, &["--response tpmC", "neither a metric"]);
    let mut bad = two.to_vec();
    bad.extend(["--response", "servr.commits"]);
    refused(&d, &bad, &["--response servr.commits", "no field 'servr'"]);
    refused(
        &d,
        &["--factor", "server.synchronous_commit=on,off"],
        &["needs --settings-url"],
    );
}

#[test]
fn an_interrupted_experiment_continues_from_the_runs_it_wrote() {
    let d = Dir::new();
    d.write("sleepy.toml", WORKLOAD);
    let mut args = BASE.to_vec();
    args.extend([
        "--duration",
        "400ms",
        "--factor",
        "url.latency=1ms,2ms",
        "--factor",
        "url.extra=0ms,1ms",
        "--replicates",
        "2",
        "--response",
        "mean",
        "-o",
        "exp",
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadrig"))
        .current_dir(d.path())
        .env("XDG_STATE_HOME", d.join("state"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done = std::fs::read_to_string(d.join("exp/experiment.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<ExperimentRecord>(&t).ok())
            .map_or(0, |r| r.runs.iter().filter(|x| x.done).count());
        if done >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "no two runs in a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let first = record(&d.join("exp"));
    assert_eq!(first.status, ExperimentStatus::Interrupted);
    let done: Vec<_> = first.runs.iter().filter(|x| x.done).cloned().collect();
    assert!(done.len() >= 2 && done.len() < 8, "{}", done.len());
    let stamps: Vec<_> = done
        .iter()
        .map(|x| {
            std::fs::metadata(d.join("exp").join(&x.file))
                .unwrap()
                .modified()
                .unwrap()
        })
        .collect();
    let out = run(&d, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{} of 8 runs done, {} to go",
            done.len(),
            8 - done.len()
        )),
        "{stdout}"
    );
    let second = record(&d.join("exp"));
    assert_eq!(second.status, ExperimentStatus::Complete);
    assert_eq!((second.seed, &second.design), (first.seed, &first.design));
    for (x, stamp) in done.iter().zip(stamps) {
        let now = std::fs::metadata(d.join("exp").join(&x.file))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(now, stamp, "{} was run again", x.file);
    }
    assert_eq!(second.analyses[0].replicates, 2);
}
