//! The redis:// target against a real Redis (scripts/services.sh): exact effects on the
//! server, native commands and transactions, errors, cleanup, no secrets in the output.
//! Each test works in its own database number, so tests can run side by side.

use crate::common;

use std::collections::BTreeMap;

use crate::common::locks::{hold, Shared};
use crate::common::{redis_db, redis_flushed, Dir};
use loadrig::vocab::ErrorClass;

fn password() -> String {
    std::env::var("LOADRIG_REDIS_PASSWORD").unwrap_or_default()
}

/// Every key with its value's length.
fn keys(c: &mut redis::Connection) -> BTreeMap<String, usize> {
    let names: Vec<String> = redis::cmd("KEYS").arg("*").query(c).expect("keys");
    names
        .into_iter()
        .map(|k| {
            let len: usize = redis::cmd("STRLEN").arg(&k).query(c).expect("strlen");
            (k, len)
        })
        .collect()
}

fn no_secret(d: &Dir, out: &std::process::Output, result: Option<&str>) {
    let pw = password();
    assert!(pw.len() >= 8, "the test servers have a real password");
    for text in [&out.stdout, &out.stderr] {
        assert!(
            !String::from_utf8_lossy(text).contains(&pw),
            "password leaked"
        );
    }
    if let Some(name) = result {
        let file = std::fs::read_to_string(d.join(name)).unwrap();
        assert!(!file.contains(&pw), "password in the result file");
        assert!(file.contains("***"));
    }
}

#[test]
fn load_and_mixed_kv_leave_exactly_the_expected_keys() {
    let Some(url) = redis_db(1) else { return };
    let _db = hold(&[Shared::Redis(1)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write("w.toml", &common::mixed_kv(2000, 500, false));
    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "2",
        "--ops",
        "400",
        "-o",
        "r.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    no_secret(&d, &out, Some("r.json"));
    let r = d.result("r.json");
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    assert_eq!(r.total.errors, 0);
    assert_eq!(r.total.ok, 400);
    let (gets, puts, updates, deletes) = (op("get"), op("put"), op("update"), op("delete"));
    assert_eq!(gets.rows, gets.ok, "every get found its key");
    assert_eq!(puts.rows, puts.ok);
    assert_eq!(updates.rows, updates.ok, "every update found its key");
    assert_eq!(deletes.rows, deletes.ok, "every delete removed one key");

    let keys = keys(&mut c);
    assert!(keys.keys().all(|k| k.starts_with("loadrig:")));
    let k: BTreeMap<u64, usize> = keys
        .iter()
        .filter_map(|(name, len)| Some((name.strip_prefix("loadrig:k")?.parse().ok()?, *len)))
        .collect();
    let n: Vec<usize> = keys
        .iter()
        .filter(|(name, _)| name.starts_with("loadrig:n"))
        .map(|(_, len)| *len)
        .collect();
    assert_eq!(n.len() as u64, puts.ok);
    assert!(!n.is_empty(), "some puts ran");
    assert!(n.iter().all(|len| *len == 50));
    assert_eq!(k.len() as u64, 2000 - deletes.ok);
    assert!((0..1000).filter(|i| !k.contains_key(i)).count() as u64 == deletes.ok);
    let updated: Vec<u64> = k
        .iter()
        .filter(|(_, l)| **l == 70)
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(updated.len() as u64, updates.ok);
    assert!(!updated.is_empty(), "some updates ran");
    assert!(updated.iter().all(|i| *i >= 1000));
    assert_eq!(
        k.values().filter(|l| **l == 100).count() as u64,
        2000 - deletes.ok - updates.ok
    );
    assert_eq!(keys.len(), k.len() + n.len());
    assert!(r
        .target
        .server_version
        .as_deref()
        .is_some_and(|v| v.starts_with("Redis ")));
    let loaded = r.data_load.unwrap();
    assert_eq!(loaded.records, 2000);
}

#[test]
fn native_commands_and_transactions_count_exactly() {
    let Some(url) = redis_db(2) else { return };
    let _db = hold(&[Shared::Redis(2)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "native"
[[op]]
name = "incr"
redis = ["INCR", "loadrig:counter"]
[[op]]
name = "pair"
tx = [
  { redis = ["INCR", "loadrig:a"] },
  { redis = ["INCRBY", "loadrig:b", "2"] },
]
[[op]]
name = "read"
redis = ["MGET", "loadrig:counter", "loadrig:none"]
capture = ["first"]
"#,
    );
    for (name, ops) in [("incr", "1000"), ("pair", "300"), ("read", "10")] {
        let out = d.loadrig(&[
            "run",
            "w.toml",
            "--target",
            &url,
            "--op",
            name,
            "--clients",
            "4",
            "--ops",
            ops,
            "-o",
            "r.json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = d.result("r.json");
        assert_eq!(r.total.ok.to_string(), ops);
        assert_eq!(r.total.errors, 0);
        if name == "read" {
            assert_eq!(r.total.rows, 20, "MGET of two keys is two rows");
        }
    }
    let get =
        |c: &mut redis::Connection, k: &str| -> i64 { redis::cmd("GET").arg(k).query(c).unwrap() };
    assert_eq!(get(&mut c, "loadrig:counter"), 1000);
    assert_eq!(get(&mut c, "loadrig:a"), 300);
    assert_eq!(get(&mut c, "loadrig:b"), 600);

    // A command the server refuses counts as an error of class other, with its text.
    d.write(
        "bad.toml",
        r#"
name = "bad"
[[op]]
name = "wrongtype"
redis = ["LPUSH", "loadrig:counter", "x"]
"#,
    );
    let out = d.loadrig(&[
        "run", "bad.toml", "--target", &url, "--ops", "5", "-o", "b.json",
    ]);
    assert!(out.status.success());
    let r = d.result("b.json");
    assert_eq!(r.total.errors, 5);
    assert_eq!(r.total.errors_by_class.get(&ErrorClass::Other), Some(&5));
    assert!(r.operations[0].error_messages[0]
        .message
        .contains("WRONGTYPE"));
}

#[test]
fn connect_authenticate_and_per_op_connections_count() {
    let Some(url) = redis_db(3) else { return };
    let _db = hold(&[Shared::Redis(3)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "handshakes"
[[op]]
name = "connect"
connect = {}
[[op]]
name = "auth"
authenticate = {}
[[op]]
name = "put"
kv.put = { key = "p{seq}", value = "{bytes 10}" }
"#,
    );
    for op in ["connect", "auth"] {
        let out = d.loadrig(&[
            "run",
            "w.toml",
            "--target",
            &url,
            "--op",
            op,
            "--clients",
            "2",
            "--ops",
            "100",
            "-o",
            "r.json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = d.result("r.json");
        assert_eq!((r.total.ok, r.total.errors), (100, 0), "{op}");
    }
    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--op",
        "put",
        "--clients",
        "2",
        "--ops",
        "100",
        "--connection",
        "per-op",
        "-o",
        "r.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(d.result("r.json").total.ok, 100);
    assert_eq!(keys(&mut c).len(), 100);
}

#[test]
fn wrong_password_and_closed_port_fail_fast_without_secrets() {
    let Some(url) = redis_db(4) else { return };
    let _db = hold(&[Shared::Redis(4)]);
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    let pw = password();
    let wrong = url.replacen(&pw, "not-the-password-x", 1);
    let out = d.loadrig(&["run", "w.toml", "--target", &wrong, "--ops", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("authentication"), "{err}");
    assert!(!err.contains("not-the-password-x"));

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let closed = format!("redis://:{pw}@127.0.0.1:{port}/0");
    let out = d.loadrig(&["run", "w.toml", "--target", &closed, "--ops", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("redis://:***@127.0.0.1:{port}/0")),
        "{err}"
    );
    assert!(err.contains("connect"), "{err}");
    no_secret(&d, &out, None);

    let out = d.loadrig(&["run", "w.toml", "--target", &format!("{url}?x=1")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option 'x'"));
}

#[test]
fn cleanup_removes_only_loadrig_keys() {
    let Some(url) = redis_db(5) else { return };
    let _db = hold(&[Shared::Redis(5)]);
    let mut c = redis_flushed(&url);
    redis::cmd("SET")
        .arg("mykey")
        .arg("mine")
        .exec(&mut c)
        .unwrap();
    redis::cmd("SET")
        .arg("loadrigx")
        .arg("mine too")
        .exec(&mut c)
        .unwrap();
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    let out = d.loadrig(&[
        "run", "w.toml", "--target", &url, "--ops", "2500", "-o", "r.json",
    ]);
    assert!(out.status.success());
    assert_eq!(keys(&mut c).len(), 2502);
    let out = d.loadrig(&["cleanup", "--target", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("removed 2,500 loadrig object(s)"), "{text}");
    no_secret(&d, &out, None);
    let left = keys(&mut c);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["loadrigx", "mykey"]);
    let out = d.loadrig(&["cleanup", "--target", &url]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 0 loadrig object(s)"));
}

#[test]
fn an_operation_over_the_op_timeout_fails_as_timeout_and_its_connection_is_replaced() {
    // Odd lists hold an element, even ones never do: BLPOP on an even list would wait 3 s,
    // so with a 200 ms limit exactly the even operations time out, and the odd ones that
    // follow each succeed on a new connection.
    let Some(url) = redis_db(6) else { return };
    let _db = hold(&[Shared::Redis(6)]);
    let mut c = redis_flushed(&url);
    for n in [1, 3, 5] {
        redis::cmd("RPUSH")
            .arg(format!("loadrig:q{n}"))
            .arg("x")
            .exec(&mut c)
            .unwrap();
    }
    let d = Dir::new();
    d.write(
        "w.toml",
        "name = \"block\"\n[[op]]\nname = \"pop\"\nredis = [\"BLPOP\", \"loadrig:q{seq}\", \"3\"]\n",
    );
    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--ops",
        "6",
        "--op-timeout",
        "200ms",
        "-o",
        "r.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    no_secret(&d, &out, Some("r.json"));
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (3, 3));
    assert_eq!(r.total.errors_by_class[&ErrorClass::Timeout], 3);
    assert_eq!(r.total.reconnects, 3);
    assert_eq!(
        r.total.rows, 6,
        "each BLPOP that answered gave key and value"
    );
    let left: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(left, 0, "the odd lists were popped");
}
