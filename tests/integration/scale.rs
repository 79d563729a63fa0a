//! Connections at scale against the throwaway Redis and nginx (docs/performance.md, "Many
//! connections"): thousands of clients are served evenly, and 10,000 fit in 200 MB.

use crate::common;

use std::time::Duration;

use crate::common::{server_url, Dir};
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

// The runs of thousands of clients take turns with every run that burns the CPU or judges
// the machine's load: together they would exceed the server's connections and each other's
// CPU. Their keys are in Redis's database 0.
use crate::common::locks::{hold, Shared};

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
    let _cpu = hold(&[Shared::Cpu, Shared::Redis(0)]);
    let d = Dir::new();
    d.write("w.toml", WORKLOAD);
    d.ok(&args("2000", "r.json", &url));
    let r = d.result("r.json");
    assert_eq!(r.total.errors, 0);
    let v = r.validity.as_ref().expect("a verdict");
    assert_even(v, 2000);
    // The verdict judges Jain's index only from 20 operations a client, which a debug
    // build under load may not reach in 3 s: the index itself must still say even.
    let jain = v.fairness.jain.expect("operations were counted");
    assert!(jain >= 0.8, "Jain's index {jain:.2}: {:?}", v.fairness);
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

/// nginx's small static file (scripts/services.sh).
const HTTP_WORKLOAD: &str = r#"
name = "get-file"
[[op]]
name = "get"
http = { path = "/static/hello.txt", expect = 200 }
"#;

#[test]
fn ten_thousand_clients_fit_in_200_mb() {
    let (Some(redis), Some(http)) = (
        server_url("LOADRIG_REDIS_URL"),
        server_url("LOADRIG_HTTP_URL"),
    ) else {
        return;
    };
    let _cpu = hold(&[Shared::Cpu, Shared::Redis(0)]);
    for (url, workload) in [(redis, WORKLOAD), (http, HTTP_WORKLOAD)] {
        ten_thousand_clients_on(&url, workload);
    }
}

fn ten_thousand_clients_on(url: &str, workload: &str) {
    let d = Dir::new();
    d.write("w.toml", workload);
    // What the clients cost: the peak of 10,000 above the peak of one, so that what every
    // run holds whatever its clients (the binary's pages, the threads, the server's
    // observer) is not charged to them.
    let one = peak_of(&d, "1", url);
    let peak = peak_of(&d, "10000", url);
    let r = d.result("r.json");
    assert_eq!(r.total.errors, 0);
    assert!(r.total.ok > 0);
    assert!(
        one > 0 && peak > one && peak - one < 200 * 1024,
        "{url}: peak resident {peak} kB with 10,000 clients, {one} kB with one"
    );
    assert_even(r.validity.as_ref().expect("a verdict"), 10_000);
    // From 1,000 clients the connects are paced by default.
    let c = r.connect.expect("the connect phase");
    assert_eq!((c.clients, c.rate_per_s), (10_000, Some(5000.0)));
}

/// The peak resident memory of a run of `w.toml` with `clients` clients, in kB; the run
/// must succeed (its result in r.json).
fn peak_of(d: &Dir, clients: &str, url: &str) -> u64 {
    let mut child = d.spawn(&args(clients, "r.json", url));
    let peak = peak_rss_kb(&mut child);
    let out = child.wait_with_output().expect("output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    peak
}

#[test]
fn connect_rate_paces_the_connect_phase_and_is_recorded() {
    let Some(url) = server_url("LOADRIG_REDIS_URL") else {
        return;
    };
    let _db = hold(&[Shared::Redis(0)]);
    let d = Dir::new();
    d.write("w.toml", WORKLOAD);
    let mut a = args("200", "r.json", &url);
    a.extend(["--connect-rate", "1000/s"]);
    d.ok(&a);
    let r = d.result("r.json");
    assert_eq!(r.load.connect_rate, Some(1000.0));
    let c = r.connect.expect("the connect phase");
    assert_eq!((c.clients, c.rate_per_s), (200, Some(1000.0)));
    // The last of 200 clients starts connecting 199/1000 s after the first.
    assert!(c.seconds >= 0.199, "{c:?}");

    // The file's value, and the default: unpaced below 1,000 clients.
    d.write(
        "paced.toml",
        &format!("{WORKLOAD}\n[load]\nconnect_rate = 500\nclients = 3\nduration = \"1s\"\n"),
    );
    d.ok(&["run", "paced.toml", "--target", &url, "-o", "p.json"]);
    let c = d.result("p.json").connect.expect("the connect phase");
    assert_eq!((c.clients, c.rate_per_s), (3, Some(500.0)));
    d.ok(&[
        "run", "w.toml", "--target", &url, "-c", "3", "-d", "1s", "-o", "u.json",
    ]);
    let c = d.result("u.json").connect.expect("the connect phase");
    assert_eq!((c.clients, c.rate_per_s), (3, None));
}

#[test]
fn a_bad_connect_rate_exits_2_at_its_place() {
    let d = Dir::new();
    d.write("w.toml", WORKLOAD);
    // One `/s` at most: `100/s/s` is not a rate either.
    for rate in ["fast", "100/s/s"] {
        let (_, err) = d.code(
            2,
            &[
                "run",
                "w.toml",
                "--target",
                "noop://",
                "--connect-rate",
                rate,
            ],
        );
        let says = format!("--connect-rate {rate}: expected connections per second");
        assert!(err.contains(&says), "{err}");
    }
    d.write(
        "bad.toml",
        &format!("{WORKLOAD}\n[load]\nconnect_rate = 0\n"),
    );
    let (_, err) = d.code(2, &["run", "bad.toml", "--target", "noop://"]);
    assert!(
        err.contains("bad.toml:12:16: [load] connect_rate 0"),
        "{err}"
    );
    assert_eq!(d.files(), ["bad.toml", "w.toml"]);
}

/// The open-files limit against a network target: 1,000 Redis clients under a soft limit of
/// 256 raise it to the hard limit and all connect; under a hard limit of 256 the run exits 2
/// before it connects, with the numbers and the fix, and writes no result.
#[test]
fn a_low_open_files_limit_is_raised_or_reported_before_connecting() {
    let Some(url) = server_url("LOADRIG_REDIS_URL") else {
        return;
    };
    let _cpu = hold(&[Shared::Cpu, Shared::Redis(0)]);
    let d = Dir::new();
    d.write("w.toml", WORKLOAD);
    let args = [
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "1000",
        "--ops",
        "3000",
        "-o",
        "r.json",
    ];
    let out = common::under_ulimit(&d, "ulimit -Sn 256", &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (3000, 0));
    assert_eq!(r.connect.as_ref().unwrap().clients, 1000);
    std::fs::remove_file(d.join("r.json")).unwrap();

    let out = common::under_ulimit(&d, "ulimit -Sn 256 && ulimit -Hn 256", &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("1000 client sessions need about")
            && err.contains("at most 256")
            && err.contains("ulimit -n"),
        "{err}"
    );
    assert!(!d.join("r.json").exists());
}
