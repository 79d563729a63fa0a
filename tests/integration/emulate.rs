//! `loadrig emulate supplier` as a real process over loopback: its HTTP interface
//! (docs/emulate.md), its books, and its refusals. Delay 0 makes a delivery due at once and
//! 1h keeps it from being due within any test, so counts and orders are exact.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Supplier {
    child: Option<Child>,
    addr: String,
}

impl Supplier {
    fn start(delay: &str) -> Supplier {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loadrig"))
            .args(["emulate", "supplier", "--listen", "127.0.0.1:0"])
            .args(["--delay", delay])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start loadrig emulate supplier");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("read the first line");
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .to_string();
        Supplier {
            child: Some(child),
            addr,
        }
    }

    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        request(&self.addr, method, path, body)
    }

    fn post(&self, id: &str) -> (u16, String) {
        self.request("POST", "/po", id)
    }

    fn delivery(&self) -> String {
        let (status, body) = self.request("GET", "/delivery", "");
        assert_eq!(status, 200);
        body
    }

    fn stats(&self) -> serde_json::Value {
        let (status, body) = self.request("GET", "/stats", "");
        assert_eq!(status, 200);
        serde_json::from_str(&body).expect("stats JSON")
    }

    /// SIGTERM: it stops cleanly (status 0) and summarises on stderr.
    fn stop(mut self) -> String {
        let child = self.child.take().expect("running");
        // SAFETY: signalling the child this test started, by its id.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "exit {:?}", out.status);
        String::from_utf8_lossy(&out.stderr).to_string()
    }
}

impl Drop for Supplier {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One request on its own connection: (status, body).
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a header block");
    let status = head
        .split(' ')
        .nth(1)
        .expect("status")
        .parse()
        .expect("code");
    (status, body.to_string())
}

#[test]
fn due_deliveries_come_back_oldest_first_and_once() {
    let s = Supplier::start("0s");
    assert_eq!(s.post("7"), (200, "accepted 7".into()));
    assert_eq!(s.post(" 3\n"), (200, "accepted 3".into()));
    assert_eq!(s.post("7"), (200, "duplicate 7".into()));
    assert_eq!(s.post("11"), (200, "accepted 11".into()));
    assert_eq!(s.delivery(), "7");
    assert_eq!(s.delivery(), "3");
    assert_eq!(s.delivery(), "11");
    assert_eq!(s.delivery(), "");
    assert_eq!(
        s.stats(),
        serde_json::json!({"received": [7, 3, 11], "delivered": [7, 3, 11], "duplicates": 1, "pending": 0})
    );
    let summary = s.stop();
    assert!(
        summary.contains("3 received, 3 delivered, 1 duplicates, 0 pending"),
        "{summary}"
    );
}

#[test]
fn deliveries_not_yet_due_stay_pending() {
    let s = Supplier::start("1h");
    assert_eq!(s.post("1").0, 200);
    assert_eq!(s.post("2").0, 200);
    assert_eq!(s.post("2").0, 200);
    assert_eq!(s.delivery(), "");
    assert_eq!(
        s.stats(),
        serde_json::json!({"received": [1, 2], "delivered": [], "duplicates": 1, "pending": 2})
    );
}

#[test]
fn bad_bodies_are_400_and_unknown_paths_404() {
    let s = Supplier::start("0s");
    assert_eq!(s.post("").0, 400);
    assert_eq!(s.post("po-1").0, 400);
    assert_eq!(s.post("-3").0, 400);
    assert_eq!(s.post(&"9".repeat(100)).0, 400);
    assert_eq!(s.request("GET", "/po", "").0, 404);
    assert_eq!(s.request("POST", "/delivery", "1").0, 404);
    assert_eq!(s.request("GET", "/", "").0, 404);
    assert_eq!(
        s.stats(),
        serde_json::json!({"received": [], "delivered": [], "duplicates": 0, "pending": 0})
    );
}

fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_loadrig"))
        .args(["emulate", "supplier"])
        .args(args)
        .output()
        .expect("run loadrig");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn only_loopback_addresses_are_served() {
    let err = refused(&["--listen", "0.0.0.0:0", "--delay", "1s"]);
    assert!(err.contains("only on loopback"), "{err}");
    let err = refused(&["--listen", "localhost", "--delay", "1s"]);
    assert!(err.contains("not an address"), "{err}");
}

#[test]
fn an_address_in_use_exits_2_with_the_os_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let err = refused(&["--listen", &addr, "--delay", "1s"]);
    assert!(err.contains("cannot bind"), "{err}");
    assert!(err.contains("in use"), "{err}");
    assert!(err.contains("help:"), "{err}");
}

#[test]
fn bad_durations_exit_2() {
    let err = refused(&["--listen", "127.0.0.1:0", "--delay", "soon"]);
    assert!(err.contains("--delay"), "{err}");
    let err = refused(&[
        "--listen",
        "127.0.0.1:0",
        "--delay",
        "1s",
        "--response-time",
        "5",
    ]);
    assert!(err.contains("--response-time"), "{err}");
}

#[test]
fn the_library_supplier_serves_in_process_and_stops_when_dropped() {
    use loadrig::emulate::supplier::{Supplier, SupplierStats};
    use std::time::Duration;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let err = Supplier::start(taken.local_addr().unwrap(), Duration::ZERO, Duration::ZERO)
        .err()
        .expect("an address in use is refused at start");
    assert!(err.message.contains("cannot bind"), "{err}");

    let supplier = Supplier::start(
        "127.0.0.1:0".parse().unwrap(),
        Duration::ZERO,
        Duration::ZERO,
    )
    .expect("start");
    let url = supplier.url();
    let addr = url.strip_prefix("http://").expect("http URL").to_string();
    assert_eq!(request(&addr, "POST", "/po", "5").0, 200);
    assert_eq!(
        request(&addr, "GET", "/delivery", ""),
        (200, "5".to_string())
    );
    assert_eq!(
        supplier.stats(),
        SupplierStats {
            received: vec![5],
            delivered: vec![5],
            duplicates: 0,
            pending: 0
        }
    );
    drop(supplier);
    // Refused at least once in three tries: a connect to a free loopback port in the
    // ephemeral range can succeed by itself (TCP self-connect, when the kernel picks that
    // same port as the source), or another test may bind the freed port; a supplier still
    // listening accepts every try.
    let refused = (0..3).any(|_| {
        let r = TcpStream::connect(&addr).is_err();
        std::thread::sleep(Duration::from_millis(20));
        r
    });
    assert!(refused, "still listening after drop");
}
