//! The http:// target against a real nginx (scripts/services.sh): WebDAV kv resources,
//! native requests with `expect`, error classes, cleanup of loadrig's collection only.
//! Each test uses its own kv collection (`kv_path=/dav/loadrig-NAME`).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common::{server_url, Dir};
use loadrig::vocab::ErrorClass;

/// One request on a fresh connection (not loadrig's client): status and body length.
fn request(base: &str, method: &str, path: &str, body: &[u8]) -> (u16, usize) {
    let authority = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(authority).expect("connect to nginx");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response);
    let status = text[9..12].parse().expect("status");
    let length = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    (status, length)
}

fn http_url() -> Option<String> {
    server_url("LOADRIG_HTTP_URL")
}

#[test]
fn load_and_mixed_kv_leave_exactly_the_expected_resources() {
    let Some(base) = http_url() else { return };
    let target = format!("{base}?kv_path=/dav/loadrig-mixed");
    request(&base, "DELETE", "/dav/loadrig-mixed/", b"");
    let d = Dir::new();
    d.write("w.toml", &common::mixed_kv(600, 100, true));
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &target,
        "--clients",
        "2",
        "--ops",
        "200",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    assert_eq!((r.total.ok, r.total.errors), (200, 0));
    let (gets, puts, updates, deletes) = (op("get"), op("put"), op("update"), op("delete"));
    assert_eq!(gets.rows, gets.ok, "every get found its resource");
    assert_eq!(op("missing").rows, 0, "a 404 is a get without rows");
    assert_eq!(puts.rows, puts.ok);
    assert_eq!(updates.rows, updates.ok);
    assert_eq!(deletes.rows, deletes.ok);

    let size = |name: &str| request(&base, "GET", &format!("/dav/loadrig-mixed/{name}"), b"");
    let mut sizes = std::collections::BTreeMap::new();
    for i in 0..600 {
        let (status, len) = size(&format!("k{i}"));
        assert!(status == 200 || status == 404);
        if status == 200 {
            sizes.insert(i, len);
        }
    }
    assert_eq!(sizes.len() as u64, 600 - deletes.ok);
    assert!((0..300).filter(|i| !sizes.contains_key(i)).count() as u64 == deletes.ok);
    let updated = sizes
        .iter()
        .filter(|(i, l)| **l == 70 && **i >= 300)
        .count();
    assert_eq!(updated as u64, updates.ok);
    assert_eq!(
        sizes.values().filter(|l| **l == 100).count() as u64,
        600 - deletes.ok - updates.ok
    );
    let new: Vec<usize> = (0..400)
        .map(|i| size(&format!("n{i}")))
        .filter(|(s, _)| *s == 200)
        .map(|(_, l)| l)
        .collect();
    assert_eq!(new.len() as u64, puts.ok);
    assert!(!new.is_empty(), "some puts ran");
    assert!(new.iter().all(|l| *l == 50));
    assert!(r
        .target
        .server_version
        .as_deref()
        .is_some_and(|v| v.starts_with("nginx")));
    request(&base, "DELETE", "/dav/loadrig-mixed/", b"");
}

#[test]
fn native_requests_check_expect_and_classify_statuses() {
    let Some(base) = http_url() else { return };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "native"
[[op]]
name = "hello"
http = { path = "/static/hello.txt", expect = 200 }
[[op]]
name = "missing"
http = { path = "/static/missing.txt", expect = 200 }
[[op]]
name = "forbidden"
http = { method = "GET", path = "/dav/", expect = 200 }
[[op]]
name = "any"
http = { path = "/static/missing.txt" }
[[op]]
name = "put"
http = { method = "PUT", path = "/dav/loadrig-native/f{seq}", headers = { "X-Test" = "{seq}" }, body = "{bytes 33}", expect = 201 }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &base,
        "--clients",
        "3",
        "--ops",
        "600",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    let hello = op("hello");
    assert!(hello.ok > 0);
    assert_eq!((hello.errors, hello.rows), (0, hello.ok));
    let missing = op("missing");
    assert_eq!(missing.ok, 0);
    assert!(missing.errors > 0);
    assert_eq!(
        missing.errors_by_class.get(&ErrorClass::Other),
        Some(&missing.errors)
    );
    assert_eq!(
        missing.error_messages[0].message,
        "expected 200, got 404 Not Found"
    );
    let forbidden = op("forbidden");
    assert_eq!(
        forbidden.errors_by_class.get(&ErrorClass::Auth),
        Some(&forbidden.errors)
    );
    assert!(forbidden.errors > 0 && forbidden.ok == 0);
    let any = op("any");
    assert_eq!(
        any.errors_by_class.get(&ErrorClass::Other),
        Some(&any.errors),
        "404 without expect is an error"
    );
    let put = op("put");
    assert_eq!((put.ok > 0, put.errors), (true, 0));
    assert_eq!(r.total.ok + r.total.errors, 600);
    let stored = (0..600)
        .map(|i| request(&base, "GET", &format!("/dav/loadrig-native/f{i}"), b""))
        .filter(|r| r.0 == 200)
        .collect::<Vec<_>>();
    assert_eq!(stored.len() as u64, put.ok);
    assert!(stored.iter().all(|r| r.1 == 33));
    request(&base, "DELETE", "/dav/loadrig-native/", b"");
}

#[test]
fn connect_and_per_op_connections_count() {
    let Some(base) = http_url() else { return };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "handshakes"
[[op]]
name = "connect"
connect = {}
[[op]]
name = "hello"
http = { path = "/static/hello.txt", expect = 200 }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &base,
        "--op",
        "connect",
        "--clients",
        "2",
        "--ops",
        "200",
        "-o",
        "r.json",
    ]);
    assert_eq!(d.result("r.json").total.ok, 200);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &base,
        "--op",
        "hello",
        "--clients",
        "2",
        "--ops",
        "200",
        "--connection",
        "per-op",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (200, 0));
    // Past nginx's keepalive_requests (1000) the client reconnects by itself: no errors.
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &base,
        "--op",
        "hello",
        "--clients",
        "1",
        "--ops",
        "2500",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (2500, 0));
}

#[test]
fn closed_port_and_bad_options_fail_fast() {
    let Some(_) = http_url() else { return };
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &format!("http://127.0.0.1:{port}"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("http://127.0.0.1:{port}")) && err.contains("connect"),
        "{err}"
    );
    for bad in ["?kv_path=/dav", "?kv_path=/dav/..", "?token=x"] {
        let out = d.loadrig(&[
            "run",
            "w.toml",
            "--target",
            &format!("http://127.0.0.1:{port}{bad}"),
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("token=x"),
            "secret-looking options are redacted: {err}"
        );
    }
}

#[test]
fn cleanup_removes_only_loadrigs_collection() {
    let Some(base) = http_url() else { return };
    assert_eq!(
        request(&base, "PUT", "/dav/mine.txt", b"my own file").0 / 100,
        2
    );
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    let target = format!("{base}?kv_path=/dav/loadrig-cleanup");
    d.ok(&[
        "run", "w.toml", "--target", &target, "--ops", "50", "-o", "r.json",
    ]);
    assert_eq!(
        request(&base, "GET", "/dav/loadrig-cleanup/r49", b""),
        (200, 100)
    );
    let out = d.ok(&["cleanup", "--target", &target]);
    assert!(out.contains("removed 1 loadrig object(s)"), "{out}");
    assert_eq!(
        request(&base, "GET", "/dav/loadrig-cleanup/r49", b"").0,
        404
    );
    assert_eq!(request(&base, "GET", "/dav/mine.txt", b""), (200, 11));
    let out = d.ok(&["cleanup", "--target", &target]);
    assert!(out.contains("removed 0 loadrig object(s)"), "{out}");
    request(&base, "DELETE", "/dav/mine.txt", b"");
}
