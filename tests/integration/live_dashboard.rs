//! `--dashboard`: headless Chromium, with every address but the page's own blocked, loads
//! the page while a `sleep://` run goes and sees its intervals arrive (the count in the
//! page grows while the run goes), then the summary and the report the page keeps; the
//! result records what the dashboard cost. An address that cannot be bound exits 2 before
//! anything runs. An observed run's page gets the server's series and the stage boundaries.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::browser::Browser;
use crate::common::locks::{hold, Shared};
use crate::common::needs::server_url;
use crate::common::Dir;

/// A port nobody listens on now (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Wait until something listens on `port`.
fn listening(port: u16, within: Duration) {
    let until = Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Where the final page's screenshot goes, to be looked at.
fn shot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("live")
        .join(name)
}

/// The page logged no error; its screenshot is saved under `name` to be looked at.
fn no_console_errors_then_shot(b: &Browser, name: &str) {
    let errors: Vec<Value> = b
        .log("browser")
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let to = shot(name);
    b.screenshot(&to);
    eprintln!("the page's screenshot: {}", to.display());
}

/// Chromium sends everything through a proxy that does not exist, but for the page's own
/// address and port; names resolve to nothing.
fn blocked_but(port: u16) -> Vec<String> {
    vec![
        "--proxy-server=http://127.0.0.1:9".into(),
        format!("--proxy-bypass-list=<-loopback>;127.0.0.1:{port}"),
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1".into(),
    ]
}

#[test]
fn the_page_shows_the_run_as_it_goes_with_nothing_but_its_own_address() {
    let port = free_port();
    let Some(b) = Browser::start_with(&blocked_but(port)) else {
        return;
    };
    // The block holds: another loopback port, which a listener watches, is not reached.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    let _ = b.try_open(&format!("http://127.0.0.1:{other_port}/"));
    let _ = b.try_open("http://example.com/");
    assert!(
        other.accept().is_err(),
        "the browser reached 127.0.0.1:{other_port} past the block"
    );

    let d = Dir::new();
    let addr = format!("127.0.0.1:{port}");
    #[rustfmt::skip]
    let run = d.spawn(&[
        "run", "ycsb-a", "--target", "sleep://?latency=2ms", "-c", "4", "-d", "4s",
        "--warmup", "1s", "--set", "recordcount=100", "--dashboard", &addr, "-o", "r.json",
    ]);
    listening(port, Duration::from_secs(60));
    b.log("performance");
    b.log("browser");
    let url = format!("http://127.0.0.1:{port}/");
    b.open(&url);
    let count = || {
        b.eval("return Number(document.getElementById('interval-count').textContent)")
            .as_u64()
            .unwrap_or(0)
    };
    let state = || b.eval("return document.body.dataset.state");
    // The count seen while the run goes, until the page says it ended.
    let mut seen = vec![];
    let until = Instant::now() + Duration::from_secs(120);
    while state() != "ended" {
        let n = count();
        if seen.last() != Some(&n) {
            seen.push(n);
        }
        assert!(Instant::now() < until, "the page never ended: {seen:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        seen.len() >= 3 && seen.windows(2).all(|w| w[0] < w[1]),
        "the interval count grows while the run goes: {seen:?}"
    );
    // The report is fetched and kept in the page, before the process may end.
    let until = Instant::now() + Duration::from_secs(30);
    while b.eval("return document.getElementById('report-links').dataset.ready") != "1" {
        assert!(Instant::now() < until, "the report never came");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = run.wait_with_output().expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains(&format!("dashboard: {url}")), "{stdout}");
    let r = d.result("r.json");
    assert_eq!(
        count() as usize,
        r.intervals.len(),
        "every interval arrived"
    );
    let summary = b
        .eval("return document.getElementById('summary').innerText")
        .as_str()
        .unwrap_or("")
        .to_string();
    for op in ["read", "update", "total"] {
        assert!(summary.contains(op), "{summary}");
    }
    let bytes: u64 = b
        .eval("return document.getElementById('report-links').dataset.bytes")
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    assert!(bytes > 20_000, "the report kept in the page: {bytes} bytes");
    // One chart per operation, each drawn.
    let drawn = b.eval(
        "return Array.from(document.querySelectorAll('#c-latency svg')).filter(s => \
         s.querySelectorAll('polyline').length === 5).length",
    );
    assert_eq!(drawn, 2, "p50, p90, p99, p99.9 and max of read and update");

    // Nothing but the page's own address was asked for; no console error.
    let sent: Vec<String> = b
        .log("performance")
        .iter()
        .filter_map(|e| {
            let m: Value = serde_json::from_str(e["message"].as_str()?).ok()?;
            (m["message"]["method"] == "Network.requestWillBeSent")
                .then(|| {
                    m["message"]["params"]["request"]["url"]
                        .as_str()
                        .map(String::from)
                })
                .flatten()
        })
        .collect();
    assert!(sent.iter().any(|u| u.ends_with("/events")), "{sent:?}");
    let strangers: Vec<&String> = sent
        .iter()
        .filter(|u| !u.starts_with(&url) && !u.starts_with("blob:") && !u.starts_with("data:"))
        .collect();
    assert!(strangers.is_empty(), "requests elsewhere: {strangers:?}");
    no_console_errors_then_shot(&b, "dashboard-final.png");

    // What the dashboard cost, with one page open.
    let dash = r.dashboard.expect("the dashboard's record");
    assert_eq!(dash.addr, addr);
    // The page may have opened before the measured span began (pages_opened counts from it).
    assert!(dash.pages_max >= 1, "{dash:?}");
    assert!(dash.events_sent >= r.intervals.len() as u64, "{dash:?}");
    assert!(dash.cpu_s > 0.0 && dash.run_cpu_s > dash.cpu_s, "{dash:?}");
}

#[test]
fn a_page_opened_after_the_start_first_gets_the_intervals_so_far() {
    let d = Dir::new();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    #[rustfmt::skip]
    let run = d.spawn(&[
        "run", "noop", "--target", "sleep://?latency=1ms", "-c", "2", "--samples", "8",
        "--interval", "250ms", "--dashboard", &addr, "-o", "r.json",
    ]);
    listening(port, Duration::from_secs(60));
    // Once two intervals have gone (the stream beside the result holds them), a late page
    // reads the stream from its start.
    let until = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(d.join("r.jsonl")).map_or(0, |t| t.lines().count()) < 3 {
        assert!(Instant::now() < until, "no interval streamed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::Write;
    stream
        .write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let out = run.wait_with_output().expect("run");
    assert!(out.status.success());
    let mut text = String::new();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.read_to_string(&mut text);
    let r = d.result("r.json");
    let intervals = text.matches("event: interval\n").count();
    assert_eq!(intervals, r.intervals.len(), "{text}");
    assert!(text.contains("event: run\n") && text.contains("event: end\n"));
    assert!(text.find("event: run").unwrap() < text.find("event: interval").unwrap());
    assert!(
        text.find("event: end").unwrap() < text.find("event: bye").unwrap(),
        "{text}"
    );
}

#[test]
fn an_address_that_cannot_be_bound_stops_the_run_before_it_starts() {
    let d = Dir::new();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    #[rustfmt::skip]
    let (_, err) = d.code(2, &[
        "run", "noop", "--target", "sleep://?latency=1ms", "--ops", "10",
        "--dashboard", &addr, "-o", "r.json",
    ]);
    assert!(
        err.contains(&format!("--dashboard {addr}: cannot listen there")),
        "{err}"
    );
    assert!(d.files().is_empty(), "nothing written: {:?}", d.files());
    for bad in ["localhost", "somewhere:80", "127.0.0.1:70000"] {
        #[rustfmt::skip]
        let (_, err) = d.code(2, &[
            "run", "noop", "--target", "noop://", "--ops", "10", "--dashboard", bad,
        ]);
        assert!(err.contains("expected IP:PORT or PORT"), "{bad}: {err}");
    }
    assert!(d.files().is_empty());
}

#[test]
fn a_sweep_shows_each_point_on_one_page() {
    let d = Dir::new();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    #[rustfmt::skip]
    let sweep = d.spawn(&[
        "sweep", "noop", "--target", "sleep://?latency=1ms", "--vary", "clients=1,2",
        "--samples", "3", "--interval", "200ms", "--dashboard", &addr, "-o", "sw.json",
    ]);
    listening(port, Duration::from_secs(60));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::Write;
    stream
        .write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let out = sweep.wait_with_output().expect("sweep");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut text = String::new();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.read_to_string(&mut text);
    assert_eq!(text.matches("event: end\n").count(), 2, "{text}");
    assert!(
        text.contains("\"id\":2,"),
        "the second point is run 2: {text}"
    );
}

/// An observed run on PostgreSQL with two stages: the server's figures of each interval
/// reach the page (the report's server panels drawn from them, every number of the server's
/// record among the other series) and the stage boundary is marked on the charts; a page
/// that connects late gets the same server events as one there from the start.
#[test]
fn the_page_shows_the_servers_series_and_the_stages() {
    let Some(pg) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let port = free_port();
    let Some(b) = Browser::start_with(&blocked_but(port)) else {
        return;
    };
    let _held = hold(&[Shared::Postgres]);
    let d = Dir::new();
    let addr = format!("127.0.0.1:{port}");
    #[rustfmt::skip]
    let run = d.spawn(&[
        "run", "ycsb-a", "--target", &pg, "--stages", "one=1500ms:2c,two=1500ms:2c",
        "-i", "500ms", "--set", "recordcount=100", "--observe", "on", "--dashboard", &addr,
        "-o", "r.json",
    ]);
    listening(port, Duration::from_secs(60));
    let url = format!("http://127.0.0.1:{port}/");
    b.log("browser");
    b.open(&url);
    // A late page, raw: it connects once two intervals have gone.
    let until = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(d.join("r.jsonl")).map_or(0, |t| t.lines().count()) < 3 {
        assert!(Instant::now() < until, "no interval streamed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut late = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::Write;
    late.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let until = Instant::now() + Duration::from_secs(120);
    while b.eval("return document.body.dataset.state") != "ended" {
        assert!(Instant::now() < until, "the page never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = run.wait_with_output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let r = d.result("r.json");
    let observed = r.intervals.iter().filter(|i| i.server.is_some()).count();
    assert!(observed >= 4, "the run was observed: {observed} intervals");
    // Drawn at most every 200 ms: wait for the last drawing.
    std::thread::sleep(Duration::from_millis(400));
    let n = |js: &str| b.eval(&format!("return {js}")).as_u64().unwrap_or(0) as usize;
    assert_eq!(
        n("Number(document.getElementById('observed-count').textContent)"),
        observed,
        "every interval's server figures reached the page"
    );
    let lines = |id: &str| -> Vec<String> {
        let v = b.eval(&format!(
            "return Array.from(document.querySelectorAll('#{id} svg title')).map(t => t.textContent)"
        ));
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let rate = lines("c-srv-rate");
    assert!(
        rate.contains(&"clients: successful operations/s".to_string())
            && rate.contains(&"server: commits/s".to_string()),
        "{rate:?}"
    );
    let latency = lines("c-srv-latency");
    assert!(
        latency.contains(&"server: execution time per statement (mean)".to_string()),
        "{latency:?}"
    );
    assert!(
        lines("c-srv-cpu").contains(&"server: CPU (cores busy)".to_string()),
        "{:?}",
        lines("c-srv-cpu")
    );
    // A band per wait class the result's intervals sampled.
    let mut classes: Vec<String> = r
        .intervals
        .iter()
        .filter_map(|i| i.server.as_ref()?.target.waits.as_ref())
        .flat_map(|w| {
            w.by_class()
                .into_iter()
                .map(|(c, _)| format!("{c} (wait class)"))
        })
        .collect();
    classes.sort();
    classes.dedup();
    let mut bands = lines("c-srv-waits");
    bands.sort();
    assert_eq!(bands, classes);
    // The server's own numbers among the other series.
    assert!(
        n("Array.from(document.querySelectorAll('#c-server figcaption')).filter(c => c.textContent.startsWith('server.target.counters.')).length") > 0
    );
    // The stage boundary, marked on the charts (the first stage begins left of the first
    // interval's point, where the time axis starts).
    for id in ["c-throughput", "c-srv-rate"] {
        let marks = b.eval(&format!(
            "return Array.from(document.querySelectorAll('#{id} .mark-label')).map(t => t.textContent)"
        ));
        assert_eq!(marks, serde_json::json!(["two"]), "{id}");
    }
    no_console_errors_then_shot(&b, "dashboard-observed.png");
    // The late page got every server event too, each after its interval's.
    let mut text = String::new();
    late.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = late.read_to_string(&mut text);
    assert_eq!(text.matches("event: server\n").count(), observed);
    let first = |e: &str| text.find(e).unwrap();
    assert!(first("event: interval\n") < first("event: server\n"));
}
