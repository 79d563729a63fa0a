//! Peers: steps that run on an http:// or redis:// server beside a SQLite target
//! (`scripts/services.sh up nginx redis`, then `eval "$(scripts/services.sh env)"`).
//! Without LOADRIG_HTTP_URL / LOADRIG_REDIS_URL the tests say "skipped".

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common::locks::{hold, Held, Shared};
use crate::common::{server_url, Dir};
use loadrig::result::RunResult;

fn run(d: &Dir, ops: &str, clients: &str, sets: &[&str]) -> RunResult {
    let mut more = vec!["--seed", "7", "-o", "r.json"];
    for s in sets {
        more.extend(["--set", s]);
    }
    d.run_ops("w.toml", "sqlite://./t.db", ops, clients, &more);
    d.result("r.json")
}

/// The response to `GET path`.
fn get(base: &str, path: &str) -> String {
    let authority = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(authority).expect("connect to nginx");
    let head = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

/// The status of `GET path`.
fn status(base: &str, path: &str) -> u16 {
    get(base, path)[9..12].parse().unwrap()
}

/// The body of a `200` answer to `GET path`.
fn body(base: &str, path: &str) -> String {
    let response = get(base, path);
    assert_eq!(&response[9..12], "200");
    response.split_once("\r\n\r\n").unwrap().1.to_string()
}

#[test]
fn http_steps_run_on_the_peer_and_a_failing_one_rolls_back_the_target() {
    let Some(base) = server_url("LOADRIG_HTTP_URL") else {
        return;
    };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "http-peer"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_o (id INTEGER PRIMARY KEY)", "CREATE TABLE IF NOT EXISTS loadrig_f (id INTEGER PRIMARY KEY)", "CREATE TABLE IF NOT EXISTS loadrig_e (body TEXT)"]
[params]
web = "http://127.0.0.1:1"
[peers]
supplier = "{web}"
[[op]]
name = "order"
let = { id = "{seq}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_o VALUES ($1)", params = ["{id}"] } },
  { http = { method = "PUT", path = "/dav/loadrig-peer/f{id}", body = "{id}", expect = 201 }, on = "supplier" },
]
[[op]]
name = "fail"
let = { id = "{seq}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_f VALUES ($1)", params = ["{id}"] } },
  { http = { path = "/static/missing.txt", expect = 200 }, on = "supplier" },
]
[[op]]
name = "ping"
http = { path = "/static/hello.txt", expect = 200 }
on = "supplier"
[[op]]
name = "echo"
tx = [
  { http = { path = "/static/hello.txt", expect = 200 }, on = "supplier", capture = ["body"] },
  { sql = { query = "INSERT INTO loadrig_e VALUES ($1)", params = ["{body}"] }, when = "body" },
]
"#,
    );
    let r = run(&d, "60", "2", &[&format!("web={base}")]);
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    let (order, fail, ping, echo) = (op("order"), op("fail"), op("ping"), op("echo"));
    assert_eq!(
        (order.errors, ping.errors, fail.ok, echo.errors),
        (0, 0, 0, 0)
    );
    assert_eq!(order.ok + fail.errors + ping.ok + echo.ok, 60);
    assert!(order.ok > 0 && fail.errors > 0 && ping.ok > 0 && echo.ok > 0);
    // The body captured from the peer is what nginx serves.
    let hello = body(&base, "/static/hello.txt");
    assert_eq!(
        d.sqlite_count(&format!(
            "SELECT count(*) FROM loadrig_e WHERE body = '{hello}'"
        )) as u64,
        echo.ok
    );
    assert_eq!(ping.rows, ping.ok);
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_o") as u64,
        order.ok
    );
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_f"), 0);
    let stored = (0..200)
        .filter(|i| status(&base, &format!("/dav/loadrig-peer/f{i}")) == 200)
        .count();
    assert_eq!(stored as u64, order.ok);
    assert_eq!(r.workload.peers["supplier"], base);
    let authority = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(authority).unwrap();
    write!(
        s,
        "DELETE /dav/loadrig-peer/ HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let _ = s.read_to_end(&mut Vec::new());
}

/// A direct connection to database 7 of the redis server, emptied first, and its port;
/// the database is held by this test until the [`Held`] drops.
fn redis_db7() -> Option<(redis::Connection, String, Held)> {
    server_url("LOADRIG_REDIS_URL")?;
    let guard = hold(&[Shared::Redis(7)]);
    let port = std::env::var("LOADRIG_REDIS_PORT").expect("LOADRIG_REDIS_PORT");
    let password = std::env::var("LOADRIG_REDIS_PASSWORD").expect("LOADRIG_REDIS_PASSWORD");
    let mut c = redis::Client::open(format!("redis://default:{password}@127.0.0.1:{port}/7"))
        .expect("redis url")
        .get_connection()
        .expect("connect to redis");
    redis::cmd("FLUSHDB").exec(&mut c).expect("flushdb");
    Some((c, port, guard))
}

const QUEUE: &str = r#"
name = "queue-peer"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_po (id INTEGER PRIMARY KEY, s TEXT)", "CREATE TABLE IF NOT EXISTS loadrig_c (id INTEGER PRIMARY KEY, r INTEGER)", "CREATE TABLE IF NOT EXISTS loadrig_d (id INTEGER PRIMARY KEY, r INTEGER, n INTEGER CHECK (n > 1))"]
[switches]
side = ["send", "receive", "chopped"]
[params]
redis_port = 0
[peers]
queue = "redis://:${LOADRIG_REDIS_PASSWORD}@127.0.0.1:{redis_port}/7"
[[op]]
name = "send"
only = { side = "send" }
let = { id = "{seq}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_po VALUES ($1, 'queued')", params = ["{id}"] } },
  { redis = ["LPUSH", "loadrig:po", "po-{id}"], on = "queue" },
]
[[op]]
name = "receive"
only = { side = "receive" }
tx = [
  { redis = ["RPOP", "loadrig:po"], on = "queue", capture = ["po"] },
  { sql = { query = "UPDATE loadrig_po SET s = 'received' WHERE id = CAST(substr($1, 4) AS INTEGER)", params = ["{po}"] }, when = "po" },
]
[[op]]
name = "chopped"
only = { side = "chopped" }
let = { id = "{seq}", r = "{uniform 0..1000000000}" }
retry = { on = ["constraint"], max = 3 }
tx = [
  { sql = { query = "INSERT INTO loadrig_c VALUES ($1, $2)", params = ["{id}", "{r}"] } },
  { commit = {} },
  { redis = ["INCR", "loadrig:tries:{id}"], on = "queue", capture = ["n"] },
  { sql = { query = "INSERT INTO loadrig_d VALUES ($1, $2, $3)", params = ["{id}", "{r}", "{n}"] } },
]
"#;

#[test]
fn a_redis_peer_queues_and_a_nil_pop_skips_the_when_step() {
    let Some((mut c, port, _db)) = redis_db7() else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", QUEUE);
    let port = format!("redis_port={port}");
    let r = run(&d, "20", "2", &[&port, "side=send"]);
    assert_eq!((r.total.ok, r.total.errors), (20, 0));
    let len: i64 = redis::cmd("LLEN").arg("loadrig:po").query(&mut c).unwrap();
    assert_eq!(len, 20);
    let r = run(&d, "25", "1", &[&port, "side=receive"]);
    let receive = &r.operations[0];
    // 20 pops with a value and their updates; 5 nil pops (0 rows) whose update is skipped.
    // (The values are "po-N": a bare 0 would count as false.)
    assert_eq!((receive.ok, receive.errors, receive.rows), (25, 0, 40));
    let len: i64 = redis::cmd("LLEN").arg("loadrig:po").query(&mut c).unwrap();
    assert_eq!(len, 0);
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_po WHERE s = 'received'"),
        20
    );
    let password = std::env::var("LOADRIG_REDIS_PASSWORD").unwrap();
    let text = std::fs::read_to_string(d.join("r.json")).unwrap();
    assert!(!text.contains(&password));
    let port = port.trim_start_matches("redis_port=");
    assert_eq!(
        r.workload.peers["queue"],
        format!("redis://:***@127.0.0.1:{port}/7")
    );
}

/// The second part fails once (the CHECK wants the second INCR); the retry resumes at the
/// commit point with the same `let` values: one row per op in each table, the same `r`.
#[test]
fn a_retry_resumes_at_the_commit_point_with_the_same_let_values() {
    let Some((_c, port, _db)) = redis_db7() else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", QUEUE);
    let r = run(
        &d,
        "10",
        "1",
        &[&format!("redis_port={port}"), "side=chopped"],
    );
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors, op.retries), (10, 0, 10));
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_c"), 10);
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_c JOIN loadrig_d USING (id, r) WHERE n = 2"),
        10
    );
}
