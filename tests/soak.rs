//! The short soak check: a steady open-loop run of 18 s in 100 ms intervals on
//! `sleep://`, whose resident memory must stay flat while every interval is kept. Before
//! the finished intervals' histograms went to a file (src/engine/spill.rs), each interval
//! kept about 500 KB in memory: this run grew by some 60 MB between its first and last
//! third. `LOADRIG_BIN=path` runs another build instead of this one.

mod common;

use std::time::Duration;

use common::Dir;

const SECONDS: u64 = 18;
const INTERVAL_MS: u64 = 100;
/// Growth allowed between the median resident memory of the first and the last third of
/// the run: the allocator's slack, far below what keeping 120 intervals in memory costs.
const GROWTH_KB: i64 = 8 * 1024;

fn rss_kb(pid: u32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn resident_memory_stays_flat_and_no_interval_is_missing() {
    let d = Dir::new();
    let workload = d.write(
        "soak.toml",
        "name = \"soak\"\ndescription = \"new keys and reads of them\"\n\
         [[op]]\nname = \"put\"\nkv.put = { key = \"s{seq}\", value = \"{bytes 100}\" }\n\
         [[op]]\nname = \"get\"\nkv.get = { key = \"s{uniform 0..1000}\" }\n",
    );
    let bin = std::env::var("LOADRIG_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_loadrig").into());
    let mut child = std::process::Command::new(bin)
        .current_dir(d.path())
        .args([
            "run",
            workload.to_str().unwrap(),
            "--target",
            "sleep://?latency=1ms",
            "--rate",
            "500",
            "--duration",
            &format!("{SECONDS}s"),
            "--interval",
            &format!("{INTERVAL_MS}ms"),
            "-o",
            "soak.json",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start loadrig");
    let mut rss = Vec::new();
    while child.try_wait().expect("wait").is_none() {
        if let Some(kb) = rss_kb(child.id()) {
            rss.push(kb);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("loadrig ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(rss.len() >= 30, "{} samples of resident memory", rss.len());
    let third = rss.len() / 3;
    let first = median(&mut rss[..third].to_vec());
    let last = median(&mut rss[rss.len() - third..].to_vec());
    assert!(
        last - first < GROWTH_KB,
        "resident memory grew from {first} kB to {last} kB over the run: {rss:?}"
    );

    let r = d.result("soak.json");
    let want = SECONDS * 1000 / INTERVAL_MS;
    let index: Vec<u64> = r.intervals.iter().map(|i| i.index).collect();
    assert_eq!(
        index,
        (1..=want).collect::<Vec<_>>(),
        "every interval, in order"
    );
    let ok: u64 = r.intervals.iter().map(|i| i.ok).sum();
    assert_eq!(ok, r.total.ok, "the intervals hold every success");
    assert!(r.total.ok > 0 && r.total.errors == 0);
}
