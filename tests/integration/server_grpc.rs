//! The grpc:// target against a real etcd (scripts/services.sh) and against a small gRPC
//! server of this test's own (tonic, in this process, over a real connection) for what etcd
//! has no method for: a server stream with a known number of messages, and every status
//! code. etcd's own counts are read with etcdctl (its Range with a limit, whose reply
//! counts the whole range).

use std::collections::HashMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Command;
use std::time::Duration;

use crate::common::locks::{hold, Shared};
use crate::common::{self, needs, Dir};
use loadrig::result::RunStatus;
use loadrig::vocab::ErrorClass;

/// etcdctl's endpoint for the throwaway etcd (plain), and skip without it.
fn etcd() -> Option<(String, String)> {
    let url = common::server_url("LOADRIG_ETCD_URL")?;
    let port = std::env::var("LOADRIG_ETCD_PORT").ok()?;
    needs::program(
        &["etcdctl"],
        "Debian: apt-get install etcd-client; scripts/services.sh up does",
    )?;
    Some((url, format!("http://127.0.0.1:{port}")))
}

fn etcdctl(endpoint: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "-w", "json"])
        .args(args)
        .output()
        .expect("run etcdctl");
    assert!(
        out.status.success(),
        "etcdctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("etcdctl's JSON")
}

/// The keys under `prefix`, as etcd counts them.
fn count(endpoint: &str, prefix: &str) -> u64 {
    let reply = etcdctl(endpoint, &["get", prefix, "--prefix", "--limit", "1"]);
    reply["count"].as_u64().unwrap_or(0)
}

/// The store's revision: one more for every put and every delete that removed keys.
fn revision(endpoint: &str) -> u64 {
    etcdctl(endpoint, &["get", "loadrig/none"])["header"]["revision"]
        .as_u64()
        .unwrap()
}

fn run(d: &Dir, args: &[&str]) -> loadrig::result::RunResult {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "r.json"]);
    d.ok(&all);
    d.result("r.json")
}

const PUTS_AND_RANGES: &str = r#"
name = "etcd"
[grpc]
proto = "etcd/rpc.proto"
[data]
count = 100
key = "t/k{seq}"
value = "{bytes 32}"
[[op]]
name = "put"
grpc = { method = "etcdserverpb.KV/Put", request = { key = "loadrig/t/p{seq}", value = "{bytes 16}" } }
[[op]]
name = "range"
weight = 2
grpc = { method = "etcdserverpb.KV/Range", request = { key = "loadrig/t/k{uniform 0..100}" }, reply = ["kvs[0].key", "count"] }
capture = ["key", "n"]
"#;

#[test]
fn puts_ranges_and_kv_operations_count_exactly() {
    let Some((url, ctl)) = etcd() else { return };
    let _etcd = hold(&[Shared::Etcd]);
    let d = Dir::new();
    d.ok(&["cleanup", "--target", &url]);
    d.write("w.toml", PUTS_AND_RANGES);
    let before = revision(&ctl);
    let r = run(
        &d,
        &["w.toml", "--target", &url, "--clients", "2", "--ops", "300"],
    );
    assert_eq!((r.total.ok, r.total.errors), (300, 0));
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    let (puts, ranges) = (op("put"), op("range"));
    assert_eq!(puts.ok + ranges.ok, 300);
    assert!(puts.ok > 0 && ranges.ok > 0);
    assert_eq!(ranges.rows, ranges.ok, "a unary call is one reply");
    assert_eq!(
        count(&ctl, "loadrig/t/p"),
        puts.ok,
        "every put stored its key"
    );
    assert_eq!(
        count(&ctl, "loadrig/t/k"),
        100,
        "the data load stored 100 keys"
    );
    assert_eq!(
        revision(&ctl) - before,
        1 + puts.ok,
        "the load is one Txn (up to 128 puts), then one revision per put"
    );
    assert_eq!(
        r.target.server_version.as_deref().map(|v| &v[..5]),
        Some("etcd ")
    );

    // Streams of one connection (--pipeline): the same counts.
    let before = revision(&ctl);
    let r = run(
        &d,
        &[
            "w.toml",
            "--target",
            &url,
            "--clients",
            "1",
            "--pipeline",
            "4",
            "--ops",
            "200",
            "--skip-load",
        ],
    );
    assert_eq!((r.total.ok, r.total.errors), (200, 0));
    let puts = r.operations.iter().find(|o| o.name == "put").unwrap().ok;
    assert_eq!(revision(&ctl) - before, puts);
    // The server's stream limit and each connection's settings exchange, as on HTTP/2.
    let connect = r.connect.as_ref().unwrap();
    let h2 = connect.http2.as_ref().expect("connect.http2");
    assert!(h2.max_concurrent_streams.is_some(), "etcd sets a limit");
    assert_eq!(
        (h2.streams_per_connection, h2.in_flight_per_connection),
        (4, 4)
    );
    let phases = connect.phases.as_ref().unwrap();
    let preface = phases
        .http2
        .as_ref()
        .expect("the settings exchange's phase");
    assert_eq!(preface.count, phases.tcp.count, "every connection's");

    // The kv vocabulary on etcd: keys under loadrig/, exact rows.
    d.write("kv.toml", &common::mixed_kv(400, 100, true));
    let r = run(
        &d,
        &[
            "kv.toml",
            "--target",
            &url,
            "--clients",
            "2",
            "--ops",
            "300",
        ],
    );
    assert_eq!(r.total.errors, 0);
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    assert_eq!(op("get").rows, op("get").ok, "every get found its key");
    assert_eq!(
        op("missing").rows,
        0,
        "keys that never existed are not found"
    );
    assert_eq!(
        op("update").rows,
        op("update").ok,
        "every update found its key"
    );
    assert_eq!(
        op("delete").rows,
        op("delete").ok,
        "every delete removed a key"
    );
    assert_eq!(count(&ctl, "loadrig/n"), op("put").ok);
    assert_eq!(count(&ctl, "loadrig/k"), 400 - op("delete").ok);
    d.ok(&["cleanup", "--target", &url]);
}

#[test]
fn the_etcd_kv_builtin_runs_and_cleanup_removes_exactly_its_prefix() {
    let Some((url, ctl)) = etcd() else { return };
    let _etcd = hold(&[Shared::Etcd]);
    let d = Dir::new();
    d.ok(&["cleanup", "--target", &url]);
    etcdctl(&ctl, &["put", "loadrig-not/mine", "kept"]);
    etcdctl(&ctl, &["put", "other/mine", "kept"]);
    let r = run(
        &d,
        &[
            "etcd-kv",
            "--target",
            &url,
            "--set",
            "keys=200",
            "--clients",
            "2",
            "--ops",
            "150",
        ],
    );
    assert_eq!((r.total.ok, r.total.errors), (150, 0));
    assert_eq!(
        count(&ctl, "loadrig/k"),
        200,
        "two Txns loaded 128 and 72 keys; puts overwrite loaded keys"
    );
    let out = d.ok(&["cleanup", "--target", &url]);
    assert!(out.contains("removed 200 loadrig object(s)"), "{out}");
    assert_eq!(count(&ctl, "loadrig/"), 0);
    assert_eq!(
        count(&ctl, "loadrig-not/"),
        1,
        "a key beside the prefix survives"
    );
    assert_eq!(count(&ctl, "other/"), 1);
    etcdctl(&ctl, &["del", "loadrig-not/mine"]);
    etcdctl(&ctl, &["del", "other/mine"]);
}

#[test]
fn errors_count_by_class_and_a_closed_port_fails_fast() {
    let Some((url, _)) = etcd() else { return };
    let d = Dir::new();
    // A service the server does not have: UNIMPLEMENTED, a protocol error.
    d.write(
        "other.proto",
        "syntax = \"proto3\";\npackage etcdserverpb;\nimport \"etcd/rpc.proto\";\nservice Nope { rpc Range(RangeRequest) returns (RangeResponse); }\n",
    );
    d.write(
        "w.toml",
        r#"
name = "errors"
[grpc]
proto = ["etcd/rpc.proto", "other.proto"]
[[op]]
name = "nope"
grpc = { method = "etcdserverpb.Nope/Range", request = { key = "loadrig/x" } }
[[op]]
name = "range"
grpc = { method = "etcdserverpb.KV/Range", request = { key = "loadrig/x" } }
"#,
    );
    let r = run(
        &d,
        &["w.toml", "--target", &url, "--op", "nope", "--ops", "20"],
    );
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors), (0, 20));
    assert_eq!(op.errors_by_class.get(&ErrorClass::Protocol), Some(&20));
    assert!(
        op.error_messages[0].message.starts_with("UNIMPLEMENTED"),
        "{:?}",
        op.error_messages
    );
    assert_eq!(
        r.total.reconnects, 0,
        "a refused method keeps its connection"
    );

    // A deadline the server cannot meet: DEADLINE_EXCEEDED (or Go's UNKNOWN with the same
    // text), counted as timeouts.
    let late = format!("{url}?deadline=1us");
    let r = run(
        &d,
        &["w.toml", "--target", &late, "--op", "range", "--ops", "20"],
    );
    assert_eq!(r.total.ok + r.total.errors, 20);
    assert!(r.total.errors >= 15, "{:?}", r.total);
    assert_eq!(
        r.total.errors_by_class.len(),
        1,
        "{:?}",
        r.total.errors_by_class
    );
    assert!(r.total.errors_by_class.contains_key(&ErrorClass::Timeout));

    // Nothing listens: the run stops before it starts, naming the target.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("grpc://127.0.0.1:{port}");
    let (_, err) = d.code(
        2,
        &[
            "run", "w.toml", "--target", &closed, "--op", "range", "--ops", "5", "-o", "x.json",
        ],
    );
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("refused"),
        "{err}"
    );
    assert!(!d.join("x.json").exists());
}

#[test]
fn tls_verifies_the_servers_certificate() {
    let Some(tls_url) = common::server_url("LOADRIG_ETCD_TLS_URL") else {
        return;
    };
    let Some(wrong) = common::server_url("LOADRIG_WRONG_CA_FILE") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", PUTS_AND_RANGES);
    let r = run(
        &d,
        &[
            "w.toml",
            "--target",
            &tls_url,
            "--op",
            "range",
            "--ops",
            "20",
            "--skip-load",
        ],
    );
    assert_eq!((r.total.ok, r.total.errors), (20, 0));
    let phases = r.connect.and_then(|c| c.phases).expect("connection phases");
    assert!(phases.tls.is_some(), "the TLS handshake is timed");
    // The same server through a CA that did not sign its certificate: refused, with why.
    let port = tls_url
        .split(':')
        .nth(2)
        .unwrap()
        .split('?')
        .next()
        .unwrap();
    let bad = format!("grpcs://127.0.0.1:{port}?ca={wrong}");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "w.toml",
            "--target",
            &bad,
            "--op",
            "range",
            "--ops",
            "5",
            "--skip-load",
        ],
    );
    assert!(err.contains("not signed by the CA"), "{err}");
    let insecure = format!("grpcs://127.0.0.1:{port}?insecure=true");
    let r = run(
        &d,
        &[
            "w.toml",
            "--target",
            &insecure,
            "--op",
            "range",
            "--ops",
            "5",
            "--skip-load",
        ],
    );
    assert_eq!(r.total.ok, 5);
}

#[test]
fn bad_input_exits_2_with_its_place_before_anything_runs() {
    let d = Dir::new();
    d.write(
        "broken.proto",
        "syntax = \"proto3\";\npackage p;\nmessage A {\n  int64 n = 1\n}\n",
    );
    d.write("ok.proto", "syntax = \"proto3\";\npackage p;\nmessage A { int64 n = 1; bytes b = 2; }\nservice S { rpc Get(A) returns (A); rpc Chat(stream A) returns (stream A); }\n");
    let cases = [
        (
            "broken.proto",
            r#"{ method = "p.S/Get" }"#,
            "broken.proto:5:1",
            "expected ';'",
        ),
        (
            "missing.proto",
            r#"{ method = "p.S/Get" }"#,
            "w.toml:4:9",
            "cannot find 'missing.proto'",
        ),
        (
            "ok.proto",
            r#"{ method = "p.S/Put" }"#,
            "w.toml:7:19",
            "service p.S has no method 'Put'",
        ),
        (
            "ok.proto",
            r#"{ method = "p.S/Chat" }"#,
            "w.toml:7:19",
            "bidirectional streaming",
        ),
        (
            "ok.proto",
            r#"{ method = "p.S/Get", request = { n = "x{seq}" } }"#,
            "w.toml:7:46",
            "request.n: \"x{seq}\" does not make an int64",
        ),
        (
            "ok.proto",
            r#"{ method = "p.S/Get", request = { m = 1 } }"#,
            "w.toml:7:42",
            "p.A has no field 'm'",
        ),
        (
            "ok.proto",
            r#"{ method = "p.S/Get", reply = ["n[0]"] }"#,
            "w.toml:7:39",
            "n is one int64",
        ),
    ];
    for (proto, op, place, message) in cases {
        d.write("w.toml", &format!("name = \"bad\"\n[grpc]\ninclude = []\nproto = \"{proto}\"\n[[op]]\nname = \"a\"\ngrpc = {op}\n"));
        let (_, err) = d.code(
            2,
            &[
                "run",
                "w.toml",
                "--target",
                "grpc://127.0.0.1:1",
                "-o",
                "r.json",
            ],
        );
        assert!(
            err.contains(place) && err.contains(message),
            "{proto} {op}: {err}"
        );
        assert!(err.contains("help:"), "{err}");
        assert!(!d.join("r.json").exists(), "nothing ran");
    }
}

/// etcd killed (-9) mid-run and started again on the same data: every call counted once,
/// the failures as `connect`, and etcd holds every acknowledged put (and at most the ones
/// in flight besides).
#[test]
fn etcd_killed_mid_run_counts_every_call_once() {
    let Some(s) = OwnEtcd::up("kill") else { return };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "puts"
[grpc]
proto = "etcd/rpc.proto"
[[op]]
name = "put"
grpc = { method = "etcdserverpb.KV/Put", request = { key = "loadrig/r{seq}", value = "v" } }
"#,
    );
    let url = s.env["LOADRIG_ETCD_URL"].clone();
    let ops = 3000;
    let child = d.spawn(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "4",
        "--think-time",
        "1ms",
        "--ops",
        &ops.to_string(),
        "--interval",
        "200ms",
        "-o",
        "r.json",
    ]);
    let started = std::time::Instant::now();
    while std::fs::read_to_string(d.join("r.jsonl")).map_or(0, |t| t.lines().count()) < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run starts"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: i32 = s.services(&["pid", "etcd"]).trim().parse().unwrap();
    // SAFETY: kill(2) on the etcd this test started (services.sh checked the pid).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    std::thread::sleep(Duration::from_millis(500));
    s.services(&["restart", "etcd"]);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = d.result("r.json");
    assert_eq!(r.status, RunStatus::Complete);
    assert_eq!(r.total.ok + r.total.errors, ops, "every call counted once");
    assert!(r.total.errors > 0, "the kill was seen");
    assert_eq!(
        r.total.errors_by_class.keys().collect::<Vec<_>>(),
        [&ErrorClass::Connect]
    );
    assert!(r.total.reconnects > 0);
    let stored = count(
        &format!("http://127.0.0.1:{}", s.env["LOADRIG_ETCD_PORT"]),
        "loadrig/r",
    );
    assert!(
        stored >= r.total.ok,
        "an acknowledged put was lost: {stored} < {}",
        r.total.ok
    );
    assert!(
        stored <= r.total.ok + 8,
        "stored {stored}, ok {}",
        r.total.ok
    );
}

/// An etcd of this test's own, in a services dir of its own (it is killed).
struct OwnEtcd {
    state: PathBuf,
    env: HashMap<String, String>,
}

impl OwnEtcd {
    fn up(test: &str) -> Option<OwnEtcd> {
        needs::root("to start an etcd of the test's own with scripts/services.sh")?;
        needs::program(&["etcd"], "Debian: apt-get install etcd-server")?;
        needs::program(&["etcdctl"], "Debian: apt-get install etcd-client")?;
        let state = PathBuf::from(format!("/tmp/loadrig-grpc-{}-{test}", std::process::id()));
        let mut s = OwnEtcd {
            state,
            env: HashMap::new(),
        };
        s.services(&["up", "etcd"]);
        s.env = s
            .services(&["env"])
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect();
        Some(s)
    }

    fn services(&self, args: &[&str]) -> String {
        let out =
            Command::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh"))
                .args(args)
                .env("LOADRIG_SERVICES_DIR", &self.state)
                .output()
                .expect("run scripts/services.sh");
        assert!(
            out.status.success(),
            "services.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for OwnEtcd {
    fn drop(&mut self) {
        let _ = Command::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh"))
            .arg("down")
            .env("LOADRIG_SERVICES_DIR", &self.state)
            .output();
        let _ = std::fs::remove_file(self.state.with_extension("lock"));
    }
}

/// The test server's messages, as prost derives them (the `.proto` the workload reads says
/// the same).
mod messages {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Ask {
        /// Count: how many messages to stream. Fail: the status code to answer with.
        #[prost(uint32, tag = "1")]
        pub n: u32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Item {
        #[prost(uint32, tag = "1")]
        pub i: u32,
    }
}

const TEST_PROTO: &str = r#"syntax = "proto3";
package loadrig.test;
message Ask { uint32 n = 1; }
message Item { uint32 i = 1; }
service Counter {
  rpc Count(Ask) returns (stream Item);
  rpc Fail(Ask) returns (Item);
}
"#;

/// `loadrig.test.Counter`: Count streams n messages (i = 0..n); Fail answers status n.
#[derive(Clone)]
struct Counter;

type Boxed<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;
type Items =
    Pin<Box<dyn futures_util::Stream<Item = Result<messages::Item, tonic::Status>> + Send>>;

impl tonic::server::NamedService for Counter {
    const NAME: &'static str = "loadrig.test.Counter";
}

struct Count;

impl tower_service::Service<tonic::Request<messages::Ask>> for Count {
    type Response = tonic::Response<Items>;
    type Error = tonic::Status;
    type Future = Boxed<Result<Self::Response, tonic::Status>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), tonic::Status>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, ask: tonic::Request<messages::Ask>) -> Self::Future {
        let n = ask.into_inner().n;
        let items = futures_util::stream::iter((0..n).map(|i| Ok(messages::Item { i })));
        Box::pin(async move { Ok(tonic::Response::new(Box::pin(items) as Items)) })
    }
}

struct Fail;

impl tower_service::Service<tonic::Request<messages::Ask>> for Fail {
    type Response = tonic::Response<messages::Item>;
    type Error = tonic::Status;
    type Future = Boxed<Result<Self::Response, tonic::Status>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), tonic::Status>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, ask: tonic::Request<messages::Ask>) -> Self::Future {
        let code = tonic::Code::from_i32(ask.into_inner().n as i32);
        Box::pin(async move { Err(tonic::Status::new(code, "as asked")) })
    }
}

impl tower_service::Service<http::Request<tonic::body::Body>> for Counter {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = Boxed<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let codec = || tonic_prost::ProstCodec::<messages::Item, messages::Ask>::default();
        match request.uri().path() {
            "/loadrig.test.Counter/Count" => Box::pin(async move {
                Ok(tonic::server::Grpc::new(codec())
                    .server_streaming(Count, request)
                    .await)
            }),
            "/loadrig.test.Counter/Fail" => {
                Box::pin(
                    async move { Ok(tonic::server::Grpc::new(codec()).unary(Fail, request).await) },
                )
            }
            _ => Box::pin(async { Ok(tonic::Status::unimplemented("no such method").into_http()) }),
        }
    }
}

/// The test server on a loopback port of its own, on a thread of its own, for the rest of
/// the test process.
fn counter() -> u16 {
    static PORT: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *PORT.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let incoming =
                    tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap())
                        .unwrap();
                tx.send(incoming.local_addr().unwrap().port()).unwrap();
                tonic::transport::Server::builder()
                    .serve_with_incoming(Counter, incoming)
                    .await
                    .unwrap();
            });
        });
        rx.recv().unwrap()
    })
}

#[test]
fn a_server_stream_counts_each_message_and_statuses_count_by_class() {
    let d = Dir::new();
    d.write("counter.proto", TEST_PROTO);
    d.write(
        "w.toml",
        r#"
name = "stream"
[grpc]
proto = "counter.proto"
[[op]]
name = "two"
grpc = { method = "loadrig.test.Counter/Count", request = { n = 2 } }
[[op]]
name = "five"
grpc = { method = "loadrig.test.Counter/Count", request = { n = 5 }, reply = ["i"] }
capture = ["first"]
[[op]]
name = "none"
grpc = { method = "loadrig.test.Counter/Count", request = { n = 0 } }
"#,
    );
    let url = format!("grpc://127.0.0.1:{}", counter());
    let r = run(
        &d,
        &["w.toml", "--target", &url, "--clients", "2", "--ops", "300"],
    );
    assert_eq!((r.total.ok, r.total.errors), (300, 0));
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    assert_eq!(
        op("two").rows,
        2 * op("two").ok,
        "each message of a stream is a row"
    );
    assert_eq!(op("five").rows, 5 * op("five").ok);
    assert_eq!(op("none").rows, 0, "an empty stream is a call without rows");
    assert!(op("none").ok > 0);

    // Each status code as the table in docs/targets.md classes it.
    let fail = |code: u32| {
        format!("[[op]]\nname = \"c{code}\"\ngrpc = {{ method = \"loadrig.test.Counter/Fail\", request = {{ n = {code} }} }}\n")
    };
    let mut text = "name = \"codes\"\n[grpc]\nproto = \"counter.proto\"\n".to_string();
    for code in 1..=16 {
        text.push_str(&fail(code));
    }
    d.write("codes.toml", &text);
    let r = run(&d, &["codes.toml", "--target", &url, "--ops", "320"]);
    assert_eq!((r.total.ok, r.total.errors), (0, 320));
    let class = |code: u32| {
        let op = r
            .operations
            .iter()
            .find(|o| o.name == format!("c{code}"))
            .unwrap();
        assert_eq!(op.errors_by_class.len(), 1, "{:?}", op.errors_by_class);
        *op.errors_by_class.keys().next().unwrap()
    };
    use ErrorClass::*;
    let expected = [
        (1, Other),
        (2, Other),
        (3, Protocol),
        (4, Timeout),
        (5, Other),
        (6, Constraint),
        (7, Auth),
        (8, Other),
        (9, Constraint),
        (10, Serialization),
        (11, Constraint),
        (12, Protocol),
        (13, Other),
        (14, Connect),
        (15, Other),
        (16, Auth),
    ];
    for (code, want) in expected {
        assert_eq!(class(code), want, "status code {code}");
    }
}
