//! The result directory on a full file system (a small tmpfs, mounted as root): a clear
//! error, a non-zero exit, and no result file at all rather than a truncated one; the
//! stream holds whole lines only, so `loadrig recover` rebuilds what fitted.
#![cfg(unix)]

use std::process::Command;

use crate::common::{needs, Dir};
use loadrig::result::RunStatus;

/// A tmpfs of `size` mounted at DIR/full, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(d: &Dir, size: &str) -> Option<Tmpfs> {
        needs::root("to mount a small tmpfs")?;
        let at = d.join("full");
        std::fs::create_dir(&at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount a tmpfs");
        Some(Tmpfs(at))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn run_into_full(d: &Dir, size: &str) -> Option<(Tmpfs, String)> {
    let fs = Tmpfs::mount(d, size)?;
    let out = d.loadrig(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--samples",
        "40",
        "--interval",
        "50ms",
        "-o",
        "full/r.json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains("loadrig recover"), "{stderr}");
    let mut names: Vec<String> = std::fs::read_dir(&fs.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["r.jsonl"],
        "no result and no temporary file is left"
    );
    Some((fs, stderr))
}

/// The stream fits (80 KiB: the stream takes about 36 in whole pages, the run's temporary
/// file of finished intervals, histograms and rig samples, about as much; the result about
/// 60), the result does not: recover rebuilds all 40 intervals.
#[test]
fn a_result_that_does_not_fit_is_not_written_and_the_stream_recovers_it() {
    let d = Dir::new();
    let Some((_fs, _)) = run_into_full(&d, "80k") else {
        return;
    };
    d.ok(&["recover", "full/r.jsonl", "-o", "r.json"]);
    let r = d.result("r.json");
    assert_eq!(r.status, RunStatus::Recovered);
    assert_eq!(r.intervals.len(), 40);
    assert_eq!(r.total.ok, r.intervals.iter().map(|i| i.ok).sum::<u64>());
}

/// The disk fills during the run (8 KiB): the stream stops with a warning at the interval
/// it could not write, and holds whole lines but the last, which recover leaves out.
#[test]
fn a_stream_that_fills_the_disk_stops_and_still_recovers() {
    let d = Dir::new();
    let Some((_fs, stderr)) = run_into_full(&d, "8k") else {
        return;
    };
    assert!(
        stderr.contains("the interval stream stops at interval"),
        "{stderr}"
    );
    d.ok(&["recover", "full/r.jsonl", "-o", "r.json"]);
    let r = d.result("r.json");
    assert!(
        !r.intervals.is_empty() && r.intervals.len() < 40,
        "{}",
        r.intervals.len()
    );
    assert_eq!(r.total.ok, r.intervals.iter().map(|i| i.ok).sum::<u64>());
}
