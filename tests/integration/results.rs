//! The result file: round trip, histograms, atomic write, the .jsonl stream, Ctrl-C.

use std::time::{Duration, Instant};

use crate::common::Dir;
use loadrig::engine::Mode;
use loadrig::result::{IntervalRecord, RunResult, RunStatus};

#[test]
fn result_round_trips_through_the_schema_types() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=100us",
        "--ops",
        "300",
        "--interval",
        "20ms",
        "-o",
        "out/r.json",
    ]);
    let text = std::fs::read_to_string(d.join("out/r.json")).unwrap();
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    let typed: RunResult = serde_json::from_value(original.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), original);
    assert_eq!(typed.schema_version, 1);
    assert_eq!(typed.workload.name, "noop");
    assert!(matches!(typed.load.mode, Mode::Closed { .. }));
    assert_eq!(typed.target.kind, "sleep");
    assert!(typed.host.cores >= 1);
    assert!(!typed.loadrig_version.is_empty());
}

#[test]
fn write_is_atomic_and_the_jsonl_stream_matches() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--samples",
        "4",
        "--interval",
        "100ms",
        "-o",
        "out/r.json",
    ]);
    let names: Vec<String> = std::fs::read_dir(d.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec!["r.json", "r.jsonl"],
        "no temporary file is left"
    );
    let r = d.result("out/r.json");
    // The first line is the header `loadrig recover` reads; then one line per interval.
    let lines: Vec<IntervalRecord> = std::fs::read_to_string(d.join("out/r.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), r.intervals.len());
    assert_eq!(
        serde_json::to_value(&lines).unwrap(),
        serde_json::to_value(&r.intervals).unwrap()
    );
}

#[test]
fn default_output_goes_to_loadrig_results() {
    let d = Dir::new();
    let stdout = d.ok(&["run", "noop", "--ops", "10"]);
    let files: Vec<_> = std::fs::read_dir(d.join("loadrig-results"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 2);
    assert!(stdout.contains("result: loadrig-results/"));
    assert!(stdout.contains("-noop.json"));
}

#[test]
fn credentials_never_reach_output_or_result() {
    let d = Dir::new();
    let out = d.loadrig(&[
        "run",
        "noop",
        "--target",
        "noop://user:S3cretPw@here?password=S3cretPw",
        "--ops",
        "5",
        "-o",
        "r.json",
    ]);
    // noop:// takes no options: the run fails, and the error must not print the secret.
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("S3cretPw"), "{all}");

    let out = d.ok(&[
        "run",
        "noop",
        "--target",
        "noop://user:S3cretPw@here",
        "--ops",
        "5",
        "-o",
        "r.json",
    ]);
    assert!(!out.contains("S3cretPw"));
    let file = std::fs::read_to_string(d.join("r.json")).unwrap();
    assert!(!file.contains("S3cretPw"));
    assert!(file.contains("noop://user:***@here"));
}

/// Stop a 60 s run with `signal` after 1.5 s: it writes a complete result marked interrupted.
#[cfg(unix)]
fn interrupted_by(signal: i32) {
    let d = Dir::new();
    let bin = assert_cmd::cargo::cargo_bin("loadrig");
    let mut child = std::process::Command::new(bin)
        .current_dir(d.path())
        .args([
            "run",
            "noop",
            "--target",
            "sleep://?latency=1ms",
            "--clients",
            "2",
            "--duration",
            "60s",
            "--interval",
            "200ms",
            "-o",
            "r.json",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "stopped within the grace period"
    );
    assert_eq!(status.code(), Some(130));
    let r = d.result("r.json");
    assert_eq!(r.status, RunStatus::Interrupted);
    assert!(r.total.ok > 100);
    assert!(
        r.measured_s > 1.0 && r.measured_s < 10.0,
        "measured {}",
        r.measured_s
    );
    let in_intervals: u64 = r.intervals.iter().map(|i| i.ok).sum();
    assert_eq!(in_intervals, r.total.ok);
    let lines = std::fs::read_to_string(d.join("r.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(lines, 1 + r.intervals.len(), "a header and the intervals");
}

#[cfg(unix)]
#[test]
fn ctrl_c_writes_a_valid_interrupted_result() {
    interrupted_by(libc::SIGINT);
}

/// SIGTERM (what `kill`, systemd and Kubernetes send) is treated as Ctrl-C.
#[cfg(unix)]
#[test]
fn sigterm_writes_a_valid_interrupted_result() {
    interrupted_by(libc::SIGTERM);
}

/// `-o` naming a pipe (or a device such as /dev/null) writes into it: renaming a temporary
/// file over it, as a plain result file is written, would replace the device with a file.
#[cfg(unix)]
#[test]
fn a_result_sent_to_a_pipe_leaves_the_pipe_a_pipe() {
    use std::os::unix::fs::FileTypeExt;
    let d = Dir::new();
    let fifo = d.join("out.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    d.ok(&["run", "noop", "--ops", "10", "-o", "out.fifo"]);
    // Checked before joining: had the pipe been replaced, its reader would wait forever.
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let text = reader.join().unwrap();
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["total"]["ok"], 10);
}
