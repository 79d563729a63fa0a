//! HTTP/2 (`http=2`, `http=auto`) on the http:// and https:// targets against the throwaway
//! nginx (scripts/services.sh): its h2c port (cleartext by prior knowledge), its TLS port
//! with h2 in ALPN, and a port with low limits (2 streams at once, a GOAWAY after 20
//! requests on a connection). Counts are checked against what nginx logged: its `piped` log
//! names each request's connection. Each test uses its own kv collection and tags its
//! requests with its own query (`?t=NAME-TIME`).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common::{self, server_url, Dir};
use loadrig::result::{OpResult, RunResult};
use loadrig::vocab::ErrorClass;

/// The h2c URL (`…?http=2`), the TLS one (`…?ca=…&http=2`) and the HTTP/1.1 one of the same
/// nginx.
fn nginx() -> Option<(String, String, String)> {
    Some((
        server_url("LOADRIG_HTTP2_URL")?,
        server_url("LOADRIG_HTTPS2_URL")?,
        server_url("LOADRIG_HTTP_URL")?,
    ))
}

/// One HTTP/1.1 request on a fresh connection (not loadrig's client): status and body.
fn request(base: &str, method: &str, path: &str) -> (u16, Vec<u8>) {
    let authority = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(authority).expect("connect to nginx");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let status = String::from_utf8_lossy(&response[9..12]).parse().unwrap();
    let body = match response.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(at) => response[at + 4..].to_vec(),
        None => Vec::new(),
    };
    (status, body)
}

/// A tag no earlier run used (nginx's logs outlive test runs).
fn tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t={name}-{nanos}")
}

/// The connections (nginx's `$connection`) of the requests logged with `tag`, one per
/// request, from a log of the `piped` format.
fn connections(log: &str, tag: &str) -> Vec<String> {
    let text = std::fs::read_to_string(log).expect("nginx's log");
    text.lines()
        .filter(|l| l.contains(tag))
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect()
}

fn op<'a>(r: &'a RunResult, name: &str) -> &'a OpResult {
    r.operations.iter().find(|o| o.name == name).unwrap()
}

/// `base` with `&` + `more` after its query (every URL here has one).
fn with(base: &str, more: &str) -> String {
    format!("{base}&{more}")
}

#[test]
fn kv_operations_count_exactly_over_h2c_and_tls() {
    let Some((h2c, tls, plain)) = nginx() else {
        return;
    };
    for (name, url) in [("h2c", h2c), ("tls", tls)] {
        let collection = format!("/dav/loadrig-h2-{name}");
        request(&plain, "DELETE", &format!("{collection}/"));
        let d = Dir::new();
        d.write("w.toml", &common::mixed_kv(300, 100, true));
        // 2 connections of 4 streams each.
        let out = d.ok(&[
            "run",
            "w.toml",
            "--target",
            &with(&url, &format!("kv_path={collection}")),
            "--clients",
            "2",
            "--pipeline",
            "4",
            "--ops",
            "200",
            "-o",
            "r.json",
        ]);
        assert!(out.contains("http/2 streams"), "{out}");
        let r = d.result("r.json");
        assert_eq!((r.total.ok, r.total.errors), (200, 0), "{name}");
        let (gets, puts, updates, deletes) = (
            op(&r, "get"),
            op(&r, "put"),
            op(&r, "update"),
            op(&r, "delete"),
        );
        assert_eq!(gets.rows, gets.ok, "{name}: every get found its resource");
        assert_eq!(
            op(&r, "missing").rows,
            0,
            "{name}: a 404 is a get without rows"
        );
        assert_eq!(
            (puts.rows, updates.rows, deletes.rows),
            (puts.ok, updates.ok, deletes.ok)
        );
        // What nginx holds, read over HTTP/1.1.
        let stored = |key: &str| request(&plain, "GET", &format!("{collection}/{key}"));
        let present = (0..300)
            .filter(|i| stored(&format!("k{i}")).0 == 200)
            .count() as u64;
        assert_eq!(present, 300 - deletes.ok, "{name}");
        let updated = (150..300)
            .filter(|i| stored(&format!("k{i}")).1.len() == 70)
            .count() as u64;
        assert_eq!(updated, updates.ok, "{name}");
        let new = (0..200)
            .filter(|i| stored(&format!("n{i}")).0 == 200)
            .count() as u64;
        assert_eq!(new, puts.ok, "{name}");
        assert!(r
            .target
            .server_version
            .as_deref()
            .is_some_and(|v| v.starts_with("nginx")));
        let connect = r.connect.as_ref().unwrap();
        let h2 = connect.http2.as_ref().expect("connect.http2");
        assert_eq!(
            (h2.streams_per_connection, h2.in_flight_per_connection),
            (4, 4)
        );
        assert_eq!(h2.max_concurrent_streams, Some(128), "nginx's default");
        let phases = connect.phases.as_ref().unwrap();
        let preface = phases.http2.as_ref().expect("the preface's phase");
        // The setup's connection and the run's two.
        assert_eq!(preface.count, 3, "{name}");
        assert_eq!(phases.tls.is_some(), name == "tls");
        // cleanup over HTTP/2 removes the collection.
        let out = d.ok(&[
            "cleanup",
            "--target",
            &with(&url, &format!("kv_path={collection}")),
        ]);
        assert!(out.contains("removed 1 loadrig object(s)"), "{out}");
        assert_eq!(stored("n0").0, 404);
    }
}

/// The target's streams ride few connections; steps on an HTTP/2 peer capture a body and
/// send it on.
#[test]
fn streams_share_few_connections_and_captures_pass_between_steps() {
    let Some((h2c, _, plain)) = nginx() else {
        return;
    };
    let log = std::env::var("LOADRIG_HTTP_PIPED_LOG").expect("LOADRIG_HTTP_PIPED_LOG");
    let t = tag("h2-streams");
    let collection = "/dav/loadrig-h2-capture";
    request(&plain, "DELETE", &format!("{collection}/"));
    let d = Dir::new();
    d.write(
        "w.toml",
        &format!(
            r#"
name = "h2-streams"
[peers]
web = "${{LOADRIG_HTTP2_URL}}"
[[op]]
name = "hello"
weight = 3
http = {{ path = "/piped/hello.txt?{t}", expect = 200 }}
[[op]]
name = "copy"
weight = 1
steps = [
  {{ http = {{ path = "/static/hello.txt", expect = 200 }}, on = "web", capture = ["greeting"] }},
  {{ http = {{ method = "PUT", path = "{collection}/c{{seq}}", body = "{{greeting}}", expect = 201 }}, on = "web" }},
]
"#
        ),
    );
    // 2 connections of 8 streams: 400 operations.
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &h2c,
        "--clients",
        "2",
        "--pipeline",
        "8",
        "--ops",
        "400",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (400, 0));
    let seen = connections(&log, &t);
    assert_eq!(
        seen.len() as u64,
        op(&r, "hello").ok,
        "every GET nginx answered, once"
    );
    let distinct: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(
        distinct.len(),
        2,
        "16 streams on 2 connections: {distinct:?}"
    );
    // The captured body went back as the PUT's body, on the peer's HTTP/2 sessions.
    let copies: Vec<Vec<u8>> = (0..800)
        .map(|i| request(&plain, "GET", &format!("{collection}/c{i}")))
        .filter(|(status, _)| *status == 200)
        .map(|(_, body)| body)
        .collect();
    assert_eq!(copies.len() as u64, op(&r, "copy").ok);
    assert!(copies.iter().all(|b| b == b"hello from loadrig\n"));
    request(&plain, "DELETE", &format!("{collection}/"));
}

#[test]
fn the_servers_stream_limit_caps_the_pipeline_and_goaways_cost_nothing() {
    let Some(url) = server_url("LOADRIG_HTTP2_LIMITS_URL") else {
        return;
    };
    let log = std::env::var("LOADRIG_HTTP2_LIMITS_LOG").expect("LOADRIG_HTTP2_LIMITS_LOG");
    let t = tag("h2-limits");
    let d = Dir::new();
    d.write(
        "w.toml",
        &format!("name = \"limits\"\n[[op]]\nname = \"hello\"\nhttp = {{ path = \"/static/hello.txt?{t}\", expect = 200 }}\n"),
    );
    // 6 streams on one connection the server allows 2 at once, and ends after 20 requests.
    let out = d.ok(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "1",
        "--pipeline",
        "6",
        "--ops",
        "300",
        "-o",
        "r.json",
    ]);
    assert!(out.contains("capped at 2 in flight"), "{out}");
    let r = d.result("r.json");
    assert_eq!(
        (r.total.ok, r.total.errors),
        (300, 0),
        "GOAWAYs resend what they refused"
    );
    let h2 = r.connect.as_ref().unwrap().http2.clone().unwrap();
    assert_eq!(
        (
            h2.max_concurrent_streams,
            h2.streams_per_connection,
            h2.in_flight_per_connection
        ),
        (Some(2), 6, 2)
    );
    let seen = connections(&log, &t);
    assert_eq!(seen.len(), 300, "each request answered once");
    let distinct: BTreeSet<&String> = seen.iter().collect();
    assert!(
        distinct.len() >= 15,
        "nginx ended each connection after 20: {}",
        distinct.len()
    );
    let per_connection = distinct
        .iter()
        .map(|c| seen.iter().filter(|s| s == c).count())
        .max()
        .unwrap();
    assert!(per_connection <= 20, "{per_connection}");
}

#[test]
fn errors_are_classified_over_http2() {
    let Some((h2c, _, _)) = nginx() else { return };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "h2-errors"
[[op]]
name = "missing"
http = { path = "/static/missing.txt", expect = 200 }
[[op]]
name = "forbidden"
http = { path = "/dav/", expect = 200 }
[[op]]
name = "wrong-method"
http = { method = "PATCH", path = "/static/hello.txt" }
[[op]]
name = "absent-key"
kv.get = { key = "absent{seq}" }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &with(&h2c, "kv_path=/dav/loadrig-h2-errors"),
        "--clients",
        "2",
        "--ops",
        "200",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!(r.total.ok + r.total.errors, 200);
    let only = |o: &OpResult, class: ErrorClass| {
        assert!(
            o.errors > 0 && o.ok == 0,
            "{}: {} ok, {} errors",
            o.name,
            o.ok,
            o.errors
        );
        assert_eq!(o.errors_by_class.get(&class), Some(&o.errors), "{}", o.name);
    };
    only(op(&r, "missing"), ErrorClass::Other);
    assert_eq!(
        op(&r, "missing").error_messages[0].message,
        "expected 200, got 404 Not Found"
    );
    only(op(&r, "forbidden"), ErrorClass::Auth);
    let wrong = op(&r, "wrong-method");
    only(wrong, ErrorClass::Other);
    assert!(
        wrong.error_messages[0].message.starts_with("got 405"),
        "{}",
        wrong.error_messages[0].message
    );
    let absent = op(&r, "absent-key");
    assert_eq!(
        (absent.errors, absent.rows),
        (0, 0),
        "a 404 is a get without rows"
    );
    // A refused connection: exit 2 before the run, naming the address.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let closed = format!("http://127.0.0.1:{port}?http=2");
    let (_, err) = d.code(
        2,
        &[
            "run", "w.toml", "--target", &closed, "--ops", "10", "-o", "c.json",
        ],
    );
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("connect"),
        "{err}"
    );
    assert!(!d.join("c.json").exists());
}

#[test]
fn http2_asked_of_a_server_without_it_exits_2_before_the_run() {
    let Some((_, _, plain)) = nginx() else { return };
    let Some(tls) = server_url("LOADRIG_HTTPS_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    // Cleartext: nginx's HTTP/1.1 port answers the preface with a 400 in HTTP/1.1.
    let (_, err) = d.code(
        2,
        &[
            "run",
            "w.toml",
            "--target",
            &format!("{plain}?http=2"),
            "-o",
            "r.json",
        ],
    );
    assert!(
        err.contains("does not speak cleartext HTTP/2") && err.contains("http=1.1"),
        "{err}"
    );
    // TLS: that port's ALPN offers http/1.1 only.
    let (_, err) = d.code(
        2,
        &[
            "run",
            "w.toml",
            "--target",
            &with(&tls, "http=2"),
            "-o",
            "r.json",
        ],
    );
    assert!(
        err.contains("does not speak HTTP/2 over TLS") && err.contains("it chose http/1.1"),
        "{err}"
    );
    assert!(!d.join("r.json").exists(), "nothing ran");
    let (_, err) = d.code(
        2,
        &["run", "w.toml", "--target", &format!("{plain}?http=3")],
    );
    assert!(err.contains("http=3: expected 1.1, 2 or auto"), "{err}");
}

#[test]
fn auto_takes_what_alpn_chooses() {
    let Some((_, tls2, _)) = nginx() else { return };
    let Some(tls1) = server_url("LOADRIG_HTTPS_URL") else {
        return;
    };
    let d = Dir::new();
    d.write(
        "w.toml",
        "name = \"auto\"\n[[op]]\nname = \"hello\"\nhttp = { path = \"/static/hello.txt\", expect = 200 }\n",
    );
    let auto2 = tls2.replace("http=2", "http=auto");
    for (url, h2, file) in [
        (auto2, true, "h2.json"),
        (with(&tls1, "http=auto"), false, "h1.json"),
    ] {
        d.ok(&[
            "run",
            "w.toml",
            "--target",
            &url,
            "--clients",
            "2",
            "--pipeline",
            "4",
            "--ops",
            "100",
            "-o",
            file,
        ]);
        let r = d.result(file);
        assert_eq!((r.total.ok, r.total.errors), (100, 0), "{url}");
        let connect = r.connect.as_ref().unwrap();
        assert_eq!(connect.http2.is_some(), h2, "{url}");
        assert_eq!(
            connect.phases.as_ref().unwrap().http2.is_some(),
            h2,
            "{url}"
        );
    }
    // compare and the HTML report show each side's phases and HTTP/2's streams.
    let table = d.ok(&["compare", "h1.json", "h2.json"]);
    let line = |side: &str| {
        table
            .lines()
            .find(|l| l.starts_with(side) && l.contains("connection phases: tcp"))
            .unwrap_or_else(|| panic!("no {side} phases in {table}"))
            .to_string()
    };
    assert!(!line("base").contains("http/2"), "{table}");
    let new = line("new");
    assert!(
        new.contains("tls p50") && new.contains("http/2 preface p50"),
        "{new}"
    );
    assert!(
        new.contains("http/2 streams: 4 a connection (the server allows 128 at once)"),
        "{new}"
    );
    d.ok(&["report", "h2.json", "-o", "h2.html"]);
    let html = std::fs::read_to_string(d.join("h2.html")).unwrap();
    assert!(
        html.contains("http/2 preface p50") && html.contains("http/2 streams"),
        "the report's connections table"
    );
}
