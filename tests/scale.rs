//! Connections at scale against the throwaway Redis (docs/performance.md, "Many
//! connections"): thousands of clients are served evenly, and 10,000 fit in 200 MB.

mod common;

use std::time::Duration;

use common::{server_url, Dir};
use loadrig::result::validity::Validity;

const WORKLOAD: &str = r#"
name = "get-set"
description = "GET and SET of small values on 1,000 keys"
[[op]]
name = "get"
kv.get = { key = "scale:{uniform 0..1000}" }
[[op]]
name = "set"
kv.put = { key = "scale:{uniform 0..1000}", value = "{bytes 3}" }
"#;

fn args<'a>(clients: &'a str, out: &'a str, url: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "w.toml",
        "--target",
        url,
        "--clients",
        clients,
        "--duration",
        "3s",
        "--interval",
        "1s",
        "--warmup",
        "0s",
        "-o",
        out,
    ]
}

/// The fairness figures say nothing is uneven: no reason about it, no starved client.
fn assert_even(v: &Validity, clients: usize) {
    assert_eq!(v.fairness.clients, clients);
    assert!(v.fairness.min > 0, "a client completed nothing: {v:?}");
    assert_eq!(v.fairness.starved_clients, 0, "{v:?}");
    assert!(
        !v.reasons
            .iter()
            .any(|r| r.contains("unevenly") || r.contains("starved")),
        "{:?}",
        v.reasons
    );
}

#[test]
fn two_thousand_clients_are_served_evenly() {
    let Some(url) = server_url("LOADRIG_REDIS_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", WORKLOAD);
    d.ok(&args("2000", "r.json", &url));
    let r = d.result("r.json");
    assert_eq!(r.total.errors, 0);
    let v = r.validity.as_ref().expect("a verdict");
    assert_even(v, 2000);
}

/// Peak resident memory of a running child, sampled until it exits.
fn peak_rss_kb(child: &mut std::process::Child) -> u64 {
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().expect("wait").is_none() {
        if let Ok(text) = std::fs::read_to_string(&status) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    peak
}

#[test]
fn ten_thousand_clients_fit_in_200_mb() {
    let Some(url) = server_url("LOADRIG_REDIS_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", WORKLOAD);
    let mut child = d.spawn(&args("10000", "r.json", &url));
    let peak = peak_rss_kb(&mut child);
    let out = child.wait_with_output().expect("output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = d.result("r.json");
    assert_eq!(r.total.errors, 0);
    assert!(r.total.ok > 0);
    assert!(peak > 0 && peak < 200 * 1024, "peak resident {peak} kB");
    assert_even(r.validity.as_ref().expect("a verdict"), 10_000);
}
