//! HTTP/1.1 pipelining (`--pipeline P` on http://) and the batch driver at one request in
//! flight, against the throwaway nginx (scripts/services.sh): nginx logs every request it
//! answers under /counted/, /close/ and /gzip/ to LOADRIG_HTTP_COUNTED_LOG, one line each,
//! unbuffered, so a run's counts are checked against what the server saw. Each test tags
//! its requests with its own query (`?t=NAME-RUN`).

use crate::common::{server_url, Dir};
use loadrig::engine::Mode;
use loadrig::result::{OpResult, RunResult};
use loadrig::vocab::ErrorClass;

/// nginx's URL and the log of its counted locations.
fn nginx() -> Option<(String, String)> {
    let url = server_url("LOADRIG_HTTP_URL")?;
    let log = std::env::var("LOADRIG_HTTP_COUNTED_LOG")
        .expect("LOADRIG_HTTP_COUNTED_LOG: restart nginx with this scripts/services.sh");
    Some((url, log))
}

/// Requests nginx answered whose line holds `tag`.
fn answered(log: &str, tag: &str) -> u64 {
    let text = std::fs::read_to_string(log).expect("nginx's counted log");
    text.lines().filter(|l| l.contains(tag)).count() as u64
}

/// A tag no earlier run of the test used (the log outlives test runs).
fn tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t={name}-{nanos}")
}

fn run(d: &Dir, url: &str, workload: &str, args: &[&str]) -> RunResult {
    d.write("w.toml", workload);
    let mut all = vec!["run", "w.toml", "--target", url, "-o", "r.json"];
    all.extend_from_slice(args);
    d.ok(&all);
    d.result("r.json")
}

fn op<'a>(r: &'a RunResult, name: &str) -> &'a OpResult {
    r.operations.iter().find(|o| o.name == name).unwrap()
}

#[test]
fn pipelined_requests_are_answered_and_counted_exactly_once() {
    let Some((url, log)) = nginx() else { return };
    let tls = server_url("LOADRIG_HTTPS_URL").expect("LOADRIG_HTTPS_URL beside LOADRIG_HTTP_URL");
    for (scheme, url) in [("http", url), ("https", tls)] {
        pipelined_requests_are_counted_exactly_once_on(&url, &log, scheme);
    }
}

fn pipelined_requests_are_counted_exactly_once_on(url: &str, log: &str, scheme: &str) {
    let t = tag(&format!("exact-{scheme}"));
    let workload = format!(
        r#"
name = "pipelined"
[[op]]
name = "hello"
http = {{ path = "/counted/hello.txt?{t}", expect = 200 }}
[[op]]
name = "missing"
http = {{ path = "/counted/missing.txt?{t}", expect = 200 }}
[[op]]
name = "chunked"
http = {{ path = "/gzip/text.txt?{t}", headers = {{ "Accept-Encoding" = "gzip" }}, expect = 200 }}
"#
    );
    let d = Dir::new();
    let r = run(
        &d,
        url,
        &workload,
        &["--clients", "16", "--pipeline", "8", "--ops", "900"],
    );
    let tls = if scheme == "https" { "verified" } else { "off" };
    assert_eq!(r.target.tls.as_deref(), Some(tls));
    assert_eq!(r.total.ok + r.total.errors, 900);
    assert_eq!(answered(log, &t), 900, "every request answered once");
    for name in ["hello", "chunked"] {
        let o = op(&r, name);
        assert!(o.ok > 0, "{name}");
        assert_eq!((o.errors, o.rows, o.reconnects), (0, o.ok, 0), "{name}");
    }
    // The 404s are errors of their class, and the run went on past them.
    let missing = op(&r, "missing");
    assert!(missing.errors > 0);
    assert_eq!(missing.ok, 0);
    assert_eq!(
        missing.errors_by_class.get(&ErrorClass::Other),
        Some(&missing.errors)
    );
    assert_eq!(
        missing.error_messages[0].message,
        "expected 200, got 404 Not Found"
    );
    assert_eq!(r.total.errors, missing.errors);
}

#[test]
fn requests_behind_a_servers_last_reply_go_again_on_a_new_connection() {
    let Some((url, log)) = nginx() else { return };
    // nginx answers 5 requests per connection under /close/, the 5th with Connection: close.
    let workload = |t: &str| {
        format!(
            "name = \"closing\"\n[[op]]\nname = \"get\"\nhttp = {{ path = \"/close/hello.txt?{t}\", expect = 200 }}\n"
        )
    };
    let d = Dir::new();
    // Four in flight: the three requests written after the 5th were never read by nginx;
    // they go again on the next connection, so every operation is answered exactly once.
    let t = tag("close-p4");
    let r = run(
        &d,
        &url,
        &workload(&t),
        &["--clients", "8", "--pipeline", "4", "--ops", "400"],
    );
    let get = op(&r, "get");
    assert_eq!((get.ok, get.errors), (400, 0), "{:?}", get.error_messages);
    assert_eq!(answered(&log, &t), 400, "answered once each");
    assert!(get.reconnects > 0);
    // One in flight: the driver reconnects after the 5th answer and nothing fails.
    let t = tag("close-p1");
    let r = run(&d, &url, &workload(&t), &["--clients", "4", "--ops", "200"]);
    let get = op(&r, "get");
    assert_eq!((get.ok, get.errors), (200, 0));
    assert_eq!(answered(&log, &t), 200);
    assert!(get.reconnects > 0);
}

#[test]
fn pipelining_what_the_codec_cannot_carry_exits_2_before_connecting() {
    let d = Dir::new();
    let head =
        "name = \"h\"\n[[op]]\nname = \"head\"\nhttp = { method = \"HEAD\", path = \"/\" }\n";
    d.write("w.toml", head);
    // Nothing listens on port 1: a connection attempt would fail with another message.
    for url in ["http://127.0.0.1:1", "https://127.0.0.1:1"] {
        let args = [
            "run",
            "w.toml",
            "--target",
            url,
            "--pipeline",
            "4",
            "-o",
            "r.json",
        ];
        let (_, err) = d.code(2, &args);
        assert!(
            err.contains("targets cannot pipeline this run: only the batch driver pipelines HTTP/1.1 requests, and this run cannot use it: operation 'head' is an operation the batch driver cannot carry"),
            "{err}"
        );
        assert!(!d.join("r.json").exists(), "nothing written");
    }
}

/// `--pipeline-refill all`: a connection writes again only once all P requests are answered,
/// so nginx reads each group of P in one go: the first of a group afresh (`$pipe` `.`), the
/// other P - 1 already behind it (`p`), on every connection, in order.
#[test]
fn refill_all_writes_each_connections_requests_p_at_a_time() {
    let Some((url, _)) = nginx() else { return };
    let log = std::env::var("LOADRIG_HTTP_PIPED_LOG")
        .expect("LOADRIG_HTTP_PIPED_LOG: restart nginx with this scripts/services.sh");
    let t = tag("refill");
    let workload = format!(
        "name = \"refill\"\n[[op]]\nname = \"get\"\nhttp = {{ path = \"/piped/hello.txt?{t}\", expect = 200 }}\n"
    );
    let d = Dir::new();
    let args: Vec<&str> = "-c 3 --pipeline 4 --pipeline-refill all --ops 600"
        .split(' ')
        .collect();
    let r = run(&d, &url, &workload, &args);
    assert_eq!((r.load.pipeline, r.load.pipeline_refill), (4, 4));
    let get = op(&r, "get");
    assert_eq!((get.ok, get.errors), (600, 0));
    // Each line: connection, its request number, $pipe, URI.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut by_connection: std::collections::BTreeMap<&str, Vec<(u64, &str)>> = Default::default();
    for line in text.lines().filter(|l| l.contains(&t)) {
        let f: Vec<&str> = line.split(' ').collect();
        by_connection
            .entry(f[0])
            .or_default()
            .push((f[1].parse().unwrap(), f[2]));
    }
    assert_eq!(by_connection.len(), 3, "{by_connection:?}");
    for requests in by_connection.values_mut() {
        requests.sort();
        assert_eq!(requests.len(), 200);
        for (i, (n, pipe)) in requests.iter().enumerate() {
            assert_eq!(*n, i as u64 + 1);
            let expected = if i % 4 == 0 { "." } else { "p" };
            assert_eq!(*pipe, expected, "request {n}: {requests:?}");
        }
    }
}

/// The run was an open loop at `rate` over `workers` connections of `pipeline` streams, and
/// each operation's latency counted from its intended start: no shorter than the time from
/// its actual write (service) or its lateness against the schedule (start lag).
fn assert_open_loop(r: &RunResult, rate: f64, workers: usize, pipeline: usize) {
    assert_eq!(r.load.pipeline, pipeline);
    assert!(
        matches!(r.load.mode, Mode::Open { rate: x, workers: w, .. } if x == rate && w == workers),
        "{:?}",
        r.load.mode
    );
    let t = &r.total;
    let service = t.service.as_ref().expect("an open loop keeps service time");
    let lag = t.start_lag.as_ref().expect("an open loop keeps start lag");
    assert!(t.late_starts.is_some());
    assert!(t.latency.min_ns >= service.min_ns);
    assert!(t.latency.max_ns >= service.max_ns);
    assert!(t.latency.max_ns >= lag.max_ns);
}

/// `--rate` with `--pipeline`: the batch driver writes each arrival on its stream of a
/// connection, and nginx answers exactly the operations counted, over TLS too.
#[test]
fn an_open_loop_pipelines_each_arrival_and_counts_it_exactly_once() {
    let Some((url, log)) = nginx() else { return };
    let tls = server_url("LOADRIG_HTTPS_URL").expect("LOADRIG_HTTPS_URL beside LOADRIG_HTTP_URL");
    for (scheme, url) in [("http", url), ("https", tls)] {
        let t = tag(&format!("open-{scheme}"));
        let workload = format!(
            "name = \"open\"\n[[op]]\nname = \"get\"\nhttp = {{ path = \"/counted/hello.txt?{t}\", expect = 200 }}\n"
        );
        let d = Dir::new();
        let args = "--rate 4000 --max-in-flight 3 --pipeline 8 --ops 1200";
        let args: Vec<&str> = args.split(' ').collect();
        let r = run(&d, &url, &workload, &args);
        let get = op(&r, "get");
        assert_eq!((get.ok, get.errors), (1200, 0), "{:?}", get.error_messages);
        assert_eq!(
            answered(&log, &t),
            1200,
            "{scheme}: every arrival answered once"
        );
        assert_eq!(r.missed_starts, 0);
        assert_open_loop(&r, 4000.0, 3, 8);
    }
}

/// In an open loop too, the requests nginx left unread behind its `Connection: close` go
/// again on the next connection, and each is answered exactly once.
#[test]
fn an_open_loop_writes_again_what_a_closing_server_left_unread() {
    let Some((url, log)) = nginx() else { return };
    let t = tag("open-close");
    let workload = format!(
        "name = \"closing\"\n[[op]]\nname = \"get\"\nhttp = {{ path = \"/close/hello.txt?{t}\", expect = 200 }}\n"
    );
    let d = Dir::new();
    let args: Vec<&str> = "--rate 4000 --max-in-flight 2 --pipeline 4 --ops 400"
        .split(' ')
        .collect();
    let r = run(&d, &url, &workload, &args);
    let get = op(&r, "get");
    assert_eq!((get.ok, get.errors), (400, 0), "{:?}", get.error_messages);
    assert_eq!(answered(&log, &t), 400, "answered once each");
    assert!(get.reconnects > 0);
    assert_open_loop(&r, 4000.0, 2, 4);
}

/// Far more arrivals than one connection can answer: every arrival of the constant
/// schedule (200,000/s for 0.5 s) is either answered, exactly as often as nginx logged, or
/// counted as never started, and the waiting of those that started late is in their
/// latency, which counts from their intended start (no coordinated omission).
#[test]
fn an_overloaded_open_loop_counts_every_arrival_and_times_the_wait() {
    let Some((url, log)) = nginx() else { return };
    let t = tag("open-overload");
    let workload = format!(
        "name = \"overload\"\n[[op]]\nname = \"get\"\nhttp = {{ path = \"/counted/hello.txt?{t}\", expect = 200 }}\n"
    );
    let d = Dir::new();
    let args: Vec<&str> = "--rate 200000 --max-in-flight 1 --pipeline 2 --duration 500ms"
        .split(' ')
        .collect();
    let r = run(&d, &url, &workload, &args);
    let get = op(&r, "get");
    assert_eq!(get.errors, 0, "{:?}", get.error_messages);
    assert_eq!(answered(&log, &t), get.ok);
    assert_eq!(get.ok + r.missed_starts, 100_000);
    // Two requests in flight cannot be answered every 10 µs on any machine.
    assert!(r.missed_starts > 0);
    assert!(get.late_starts.unwrap() > 0);
    assert_open_loop(&r, 200_000.0, 1, 2);
}

/// `--pipeline-refill` holds arrivals back, which an open loop does not do: exit 2 before
/// connecting, saying why.
#[test]
fn refill_in_an_open_loop_exits_2_before_connecting() {
    let d = Dir::new();
    let get = "name = \"g\"\n[[op]]\nname = \"get\"\nhttp = { path = \"/\" }\n";
    d.write("w.toml", get);
    // Nothing listens on port 1: a connection attempt would fail with another message.
    let args = "run w.toml --target http://127.0.0.1:1 --rate 100 --pipeline 4 --pipeline-refill all -o r.json";
    let args: Vec<&str> = args.split(' ').collect();
    let (_, err) = d.code(2, &args);
    assert!(
        err.contains("--pipeline-refill all: only the batch driver waits for several replies before writing, and this run cannot use it: an open loop (--rate) writes each arrival when it comes"),
        "{err}"
    );
    assert!(!d.join("r.json").exists(), "nothing written");
}
