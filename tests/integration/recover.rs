//! `loadrig recover`: a run killed with SIGKILL is rebuilt from its `.jsonl` stream, with
//! totals that are the exact sums of the streamed intervals, and `report`, `compare` and
//! `export` read the rebuilt file. A stream without a header, or with garbage before its
//! last line, is refused with exit 2.
#![cfg(unix)]

use std::time::{Duration, Instant};

use crate::common::Dir;
use loadrig::result::recover::STREAM_KIND;
use loadrig::result::{IntervalRecord, RunStatus};

/// Start a long run, wait until the stream holds `intervals` intervals, SIGKILL it.
fn killed_run(d: &Dir, name: &str, intervals: usize) {
    let mut child = d.spawn(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--clients",
        "2",
        "--duration",
        "60s",
        "--interval",
        "100ms",
        "-o",
        name,
    ]);
    let stream = d.join(name).with_extension("jsonl");
    let started = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&stream).map_or(0, |t| t.lines().count());
        if lines > intervals {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "stream grows");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no handler runs, no result file is written.
    child.wait().unwrap();
    assert!(!d.join(name).exists(), "a killed run writes no result");
}

fn streamed(d: &Dir, stream: &str) -> Vec<IntervalRecord> {
    let text = std::fs::read_to_string(d.join(stream)).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["stream"], STREAM_KIND);
    assert_eq!(header["target"]["url"], "sleep://?latency=1ms");
    lines.filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[test]
fn a_killed_run_is_recovered_with_exact_totals() {
    let d = Dir::new();
    killed_run(&d, "a.json", 5);
    let intervals = streamed(&d, "a.jsonl");
    let out = d.ok(&["recover", "a.jsonl"]);
    assert!(out.contains("(recovered)"), "{out}");
    let r = d.result("a.json");
    assert_eq!(r.status, RunStatus::Recovered);
    assert_eq!(r.workload.name, "noop");
    assert_eq!(r.intervals.len(), intervals.len());
    let ok: u64 = intervals.iter().filter(|i| !i.warmup).map(|i| i.ok).sum();
    assert!(ok > 0);
    assert_eq!(r.total.ok, ok);
    assert_eq!(r.operations[0].ok, ok);
    assert_eq!(
        r.total.latency.count, ok,
        "every success's latency is merged"
    );
    // The sleep target answers in 1 ms: the merged histogram says so.
    assert!(r.total.latency.p50_ns >= 1_000_000, "{:?}", r.total.latency);
    let measured: f64 = intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.end_s - i.start_s)
        .sum();
    assert!((r.measured_s - measured).abs() < 1e-9);
    assert!(r.notes.iter().any(|n| n.contains("recovered")));

    // Every reader takes it.
    d.ok(&["report", "a.json", "-o", "a.html"]);
    let page = std::fs::read_to_string(d.join("a.html")).unwrap();
    assert!(page.contains("recovered"));
    killed_run(&d, "b.json", 6);
    d.ok(&["recover", "b.jsonl"]);
    let cmp = d.ok(&["compare", "a.json", "b.json"]);
    assert!(cmp.contains("marked 'recovered'"), "{cmp}");
    d.ok(&["export", "a.json", "--csv", "csv"]);
    // An existing result is never replaced.
    let (_, err) = d.code(2, &["recover", "a.jsonl"]);
    assert!(err.contains("already exists"), "{err}");
}

#[test]
fn a_last_line_cut_in_the_writing_is_left_out() {
    let d = Dir::new();
    killed_run(&d, "a.json", 4);
    let text = std::fs::read_to_string(d.join("a.jsonl")).unwrap();
    let whole: Vec<&str> = text.lines().collect();
    // Cut the last interval line in half, as a process killed in its write leaves it.
    let last = whole[whole.len() - 1];
    let cut = format!(
        "{}\n{}",
        whole[..whole.len() - 1].join("\n"),
        &last[..last.len() / 2]
    );
    d.write("cut.jsonl", &cut);
    let out = d.ok(&["recover", "cut.jsonl", "-o", "cut.json"]);
    assert!(out.contains("cut short"), "{out}");
    let r = d.result("cut.json");
    let kept = &streamed(&d, "cut.jsonl");
    assert_eq!(
        kept.len(),
        whole.len() - 2,
        "header and the cut line left out"
    );
    assert_eq!(r.intervals.len(), kept.len());
    assert_eq!(
        r.total.ok,
        kept.iter().filter(|i| !i.warmup).map(|i| i.ok).sum::<u64>()
    );
}

#[test]
fn garbage_and_headerless_streams_are_refused() {
    let d = Dir::new();
    killed_run(&d, "a.json", 3);
    let text = std::fs::read_to_string(d.join("a.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A stream from before the header existed: intervals only.
    d.write("old.jsonl", &(lines[1..].join("\n") + "\n"));
    let (_, err) = d.code(2, &["recover", "old.jsonl"]);
    assert!(
        err.contains("first line is not the stream's header"),
        "{err}"
    );
    d.write("empty.jsonl", "");
    let (_, err) = d.code(2, &["recover", "empty.jsonl"]);
    assert!(err.contains("it is empty"), "{err}");
    d.write("bin.jsonl", "\u{0}\u{1}garbage{{{\n");
    d.code(2, &["recover", "bin.jsonl"]);
    // Garbage in the middle is not a cut last line.
    let mid = format!("{}\n{}\nnot json\n{}\n", lines[0], lines[1], lines[2]);
    d.write("mid.jsonl", &mid);
    let (_, err) = d.code(2, &["recover", "mid.jsonl"]);
    assert!(err.contains("mid.jsonl:3: not an interval record"), "{err}");
    for name in ["old.json", "empty.json", "bin.json", "mid.json"] {
        assert!(!d.join(name).exists(), "nothing written for {name}");
    }
}
