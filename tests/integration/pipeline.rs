//! `--pipeline P`: P client streams share each connection, with their operations in flight
//! together. Exact counts and effects on real servers (scripts/services.sh), replies reaching
//! the stream that asked, the overlap itself against the simulated server's known latency,
//! and the refusals (exit 2, before anything connects).

use crate::common;

use crate::common::locks::{hold, Shared};
use crate::common::{redis_db, redis_flushed, server_url, Dir};

/// The run's per-client counts, summarised (`validity.fairness`).
fn fairness(d: &Dir, file: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(d.join(file)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["validity"]["fairness"].clone()
}

const PUTS: &str = r#"
name = "pipelined-puts"
[[op]]
name = "put"
kv.put = { key = "p{seq}", value = "{bytes 100}" }
"#;

/// Half the gets find a loaded key (1 row), half look for one that never exists (0 rows):
/// a reply handed to the wrong stream shows up in the other operation's rows.
const HITS_AND_MISSES: &str = r#"
name = "hits-and-misses"
[data]
count = 500
key = "k{seq}"
value = "{bytes 50}"
batch = 100
[[op]]
name = "hit"
kv.get = { key = "k{uniform 0..500}" }
[[op]]
name = "miss"
kv.get = { key = "absent{uniform 0..500}" }
"#;

/// Run [`PUTS`] on 2 connections x 16 streams with `extra` flags, into r.json: its output.
fn pipelined_puts(d: &Dir, url: &str, extra: &[&str]) -> String {
    d.write("w.toml", PUTS);
    let mut args = vec![
        "run",
        "w.toml",
        "--target",
        url,
        "--clients",
        "2",
        "--pipeline",
        "16",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", "r.json"]);
    d.ok(&args)
}

#[test]
fn redis_pipelined_puts_store_exactly_the_keys_counted() {
    let Some(url) = redis_db(13) else { return };
    let _db = hold(&[Shared::Redis(13)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    let out = pipelined_puts(&d, &url, &["--ops", "3200", "--seed", "7"]);
    assert!(out.contains("x 16 on each connection"), "{out}");
    let r = d.result("r.json");
    assert_eq!(r.load.pipeline, 16);
    assert_eq!(r.load.clients(), 32, "2 connections x 16 streams");
    assert_eq!(r.connect.as_ref().unwrap().clients, 2, "connections opened");
    assert_eq!(r.operations[0].ok, 3200);
    assert_eq!(r.operations[0].errors, 0);
    assert_eq!(r.operations[0].rows, 3200);
    // Every stream ran its exact share of --ops.
    let fairness = &fairness(&d, "r.json");
    assert_eq!(fairness["clients"], 32);
    assert_eq!(
        (fairness["min"].as_u64(), fairness["max"].as_u64()),
        (Some(100), Some(100))
    );
    assert_only_puts_stored(&mut c, 3200);
}

/// The database holds exactly the keys of [`PUTS`]'s first `n` operations; then emptied.
fn assert_only_puts_stored(c: &mut redis::Connection, n: u64) {
    let mut names: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    names.sort();
    let mut expected: Vec<String> = (0..n).map(|i| format!("loadrig:p{i}")).collect();
    expected.sort();
    assert_eq!(names, expected);
    redis::cmd("FLUSHDB").exec(c).unwrap();
}

/// Over TLS only the batch driver pipelines (rediss://), in a closed loop and an open one
/// (`--rate`): each stream's arrivals on the connection it shares, every stream its exact
/// share of `--ops`.
#[test]
fn rediss_pipelined_puts_store_exactly_the_keys_counted() {
    let (Some(tls), Some(plain)) = (server_url("LOADRIG_REDIS_TLS_URL"), redis_db(15)) else {
        return;
    };
    let _db = hold(&[Shared::Redis(15)]);
    let url = tls.replace("/0?", "/15?");
    let mut c = redis_flushed(&plain);
    let d = Dir::new();
    pipelined_puts(&d, &url, &["--ops", "1600", "--pipeline-refill", "all"]);
    let r = d.result("r.json");
    assert_eq!(r.target.tls.as_deref(), Some("verified"));
    let puts = &r.operations[0];
    assert_eq!((puts.ok, puts.errors, puts.rows), (1600, 0, 1600));
    assert_only_puts_stored(&mut c, 1600);
    d.write("w.toml", PUTS);
    let args = "--rate 4000 --max-in-flight 2 --pipeline 4 --ops 800 -o r.json";
    let mut run = vec!["run", "w.toml", "--target", &url];
    run.extend(args.split(' '));
    d.ok(&run);
    let r = d.result("r.json");
    assert!(r.load.is_open());
    assert_eq!((r.load.connections(), r.load.pipeline), (2, 4));
    let puts = &r.operations[0];
    assert_eq!((puts.ok, puts.errors, puts.rows), (800, 0, 800));
    assert!(puts.service.is_some(), "timed as an open loop");
    assert_only_puts_stored(&mut c, 800);
}

/// `--pipeline-refill N`: streams wait for N free before writing, and still run their exact
/// share of `--ops` when it does not divide into N (the last streams to end never wait for
/// streams that have ended).
#[test]
fn redis_refill_keeps_every_streams_share_of_ops() {
    let Some(url) = redis_db(10) else { return };
    let _db = hold(&[Shared::Redis(10)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    let out = pipelined_puts(&d, &url, &["--pipeline-refill", "5", "--ops", "3201"]);
    assert!(
        out.contains("x 16 on each connection (--pipeline), written again once 5 are answered"),
        "{out}"
    );
    let r = d.result("r.json");
    assert_eq!((r.load.pipeline, r.load.pipeline_refill), (16, 5));
    assert_eq!((r.operations[0].ok, r.operations[0].errors), (3201, 0));
    let fairness = &fairness(&d, "r.json");
    assert_eq!(
        (fairness["min"].as_u64(), fairness["max"].as_u64()),
        (Some(100), Some(101))
    );
    let keys: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(keys, 3201);
    redis::cmd("FLUSHDB").exec(&mut c).unwrap();
}

#[test]
fn redis_pipelined_replies_reach_the_stream_that_asked() {
    let Some(url) = redis_db(14) else { return };
    let _db = hold(&[Shared::Redis(14)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write("w.toml", HITS_AND_MISSES);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "3",
        "--pipeline",
        "16",
        "--ops",
        "9600",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let (hit, miss) = (&r.operations[0], &r.operations[1]);
    assert_eq!(hit.ok + miss.ok, 9600);
    assert_eq!((hit.errors, miss.errors), (0, 0));
    assert!(hit.ok > 4000 && miss.ok > 4000, "{} {}", hit.ok, miss.ok);
    assert_eq!(hit.rows, hit.ok, "every hit found its key");
    assert_eq!(miss.rows, 0, "no miss found one");
    redis::cmd("FLUSHDB").exec(&mut c).unwrap();
}

#[test]
fn redis_refuses_a_transaction_or_authentication_with_pipeline() {
    let Some(url) = redis_db(13) else { return };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "tx"
[[op]]
name = "pair"
tx = [{ redis = ["SET", "loadrig:a", "1"] }, { redis = ["SET", "loadrig:b", "2"] }]
"#,
    );
    let (_, err) = d.code(2, &["run", "w.toml", "--target", &url, "--pipeline", "4"]);
    assert!(err.contains("'pair' is a transaction"), "{err}");
    assert!(!d.files().iter().any(|f| f.ends_with(".json")));
    d.write(
        "a.toml",
        "name = \"a\"\n[[op]]\nname = \"again\"\nauthenticate = {}\n",
    );
    let (_, err) = d.code(2, &["run", "a.toml", "--target", &url, "--pipeline", "4"]);
    assert!(err.contains("'again' authenticates again"), "{err}");
}

/// The simulated server answers after 2 ms: one connection with 8 operations in flight
/// completes about 8 times as many as one with one (its streams wait on the runtime's
/// millisecond timer, so somewhat fewer), and every stream is served.
#[test]
fn pipelining_overlaps_operations_on_the_simulated_server() {
    let d = Dir::new();
    let run = |p: &str, file: &str| {
        d.ok(&[
            "run",
            "noop",
            "--target",
            "sleep://?latency=2ms",
            "--clients",
            "1",
            "--pipeline",
            p,
            "--samples",
            "5",
            "--interval",
            "100ms",
            "--seed",
            "1",
            "-o",
            file,
        ]);
        d.result(file)
    };
    let one = run("1", "one.json");
    let eight = run("8", "eight.json");
    let ratio = eight.total.ok as f64 / one.total.ok as f64;
    assert!((3.5..=8.5).contains(&ratio), "8 in flight / 1: {ratio}");
    let fairness = &fairness(&d, "eight.json");
    assert_eq!(fairness["clients"], 8);
    assert!(fairness["min"].as_u64().unwrap() > 0, "{fairness}");
    // Each operation still takes the server's 2 ms: latency is per operation, not per batch.
    assert!(eight.total.latency.min_ns >= 2_000_000);
}

#[test]
fn targets_that_cannot_pipeline_exit_2_before_connecting() {
    let d = Dir::new();
    // Nothing listens on port 1: a connection attempt would fail with another message.
    for (url, name) in [
        ("mysql://u:secret@127.0.0.1:1/db", "mysql://"),
        ("http://127.0.0.1:1/", "http://"),
    ] {
        let (_, err) = d.code(2, &["run", "noop", "--target", url, "--pipeline", "4"]);
        assert!(
            err.contains(&format!("{name} targets cannot pipeline")),
            "{err}"
        );
        assert!(!err.contains("secret"));
    }
    let (_, err) = d.code(
        2,
        &[
            "run",
            "noop",
            "--target",
            "sqlite://./t.db",
            "--pipeline",
            "2",
        ],
    );
    assert!(err.contains("sqlite:// targets cannot pipeline"), "{err}");
    assert!(err.contains("embedded"), "{err}");
    assert!(!d.join("t.db").exists(), "nothing was created");
}

#[test]
fn a_bad_pipeline_in_the_workload_is_reported_at_its_place() {
    let d = Dir::new();
    d.write(
        "w.toml",
        "name = \"w\"\n[load]\nclients = 2\npipeline = 0\n[[op]]\nname = \"n\"\nnop = {}\n",
    );
    let (_, err) = d.code(2, &["run", "w.toml", "--target", "sleep://?latency=1ms"]);
    assert!(err.contains("w.toml:4:12"), "{err}");
    assert!(err.contains("[load] pipeline 0: expected 1 to"), "{err}");
    // A depth the file gives that the target cannot take is named as the file's, at its place.
    d.write(
        "w4.toml",
        "name = \"w\"\n[load]\npipeline = 4\n[[op]]\nname = \"n\"\nnop = {}\n",
    );
    let (_, err) = d.code(2, &["run", "w4.toml", "--target", "sqlite://t.db"]);
    assert!(err.contains("w4.toml:3:12"), "{err}");
    assert!(
        err.contains("[load] pipeline 4: sqlite:// targets cannot pipeline"),
        "{err}"
    );
    let (_, err) = d.code(
        2,
        &[
            "run",
            "w4.toml",
            "--target",
            "sqlite://t.db",
            "--pipeline",
            "2",
        ],
    );
    assert!(err.contains("--pipeline 2: sqlite://"), "{err}");
    assert!(!d.join("t.db").exists(), "nothing was created");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "w.toml",
            "--target",
            "sleep://",
            "--pipeline",
            "2",
            "--connection",
            "per-op",
        ],
    );
    assert!(err.contains("--connection per-op"), "{err}");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "noop",
            "--target",
            "sleep://",
            "-c",
            "100",
            "--pipeline",
            "101",
        ],
    );
    assert!(err.contains("10100 client streams; at most 10000"), "{err}");
    // --pipeline-refill: each, all or 1 to P, and only where the batch driver runs.
    d.write(
        "r.toml",
        "name = \"w\"\n[load]\npipeline = 4\npipeline_refill = 5\n[[op]]\nname = \"n\"\nnop = {}\n",
    );
    let (_, err) = d.code(2, &["run", "r.toml", "--target", "sleep://"]);
    assert!(err.contains("r.toml:4:19"), "{err}");
    assert!(
        err.contains("[load] pipeline_refill 5: expected each, all, or a number of streams from 1 to the pipeline's 4"),
        "{err}"
    );
    let refill = |value: &str| {
        let args = [
            "run",
            "noop",
            "--target",
            "sleep://",
            "--pipeline",
            "4",
            "--pipeline-refill",
            value,
        ];
        d.code(2, &args).1
    };
    assert!(refill("some").contains("--pipeline-refill some: expected each, all"));
    assert!(refill("0").contains("--pipeline-refill 0: expected each, all"));
    let err = refill("all");
    assert!(
        err.contains("--pipeline-refill all: only the batch driver waits for several replies before writing, and this run cannot use it"),
        "{err}"
    );
}

#[test]
fn postgres_pipelined_inserts_store_exactly_the_rows_counted() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    common::sql::pg_row(&url, "DROP TABLE IF EXISTS loadrig_pipe");
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "pipelined-inserts"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_pipe (id BIGINT PRIMARY KEY, who BIGINT NOT NULL)"]
[[op]]
name = "insert"
sql = { query = "INSERT INTO loadrig_pipe VALUES ($1, $2)", params = ["{seq}", "{client}"] }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "1",
        "--pipeline",
        "16",
        "--ops",
        "1600",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.operations[0].ok, r.operations[0].errors), (1600, 0));
    assert_eq!(r.operations[0].rows, 1600);
    let row = common::sql::ints(common::sql::pg_row(
        &url,
        "SELECT count(*), count(DISTINCT id), min(id), max(id), count(DISTINCT who) FROM loadrig_pipe",
    ));
    assert_eq!(
        row,
        vec![1600, 1600, 0, 1599, 16],
        "one row per operation, from 16 streams"
    );
    let per_stream = common::sql::ints(common::sql::pg_row(
        &url,
        "SELECT min(n), max(n) FROM (SELECT count(*) AS n FROM loadrig_pipe GROUP BY who) s",
    ));
    assert_eq!(per_stream, vec![100, 100]);
    common::sql::pg_row(&url, "DROP TABLE loadrig_pipe");
}

#[test]
fn postgres_refuses_a_transaction_with_pipeline() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let d = Dir::new();
    let (_, err) = d.code(
        2,
        &[
            "run",
            "pgbench-tpcb",
            "--target",
            &url,
            "--pipeline",
            "4",
            "--set",
            "scale=1",
        ],
    );
    assert!(err.contains("is a transaction"), "{err}");
    assert!(err.contains("--pipeline 1"), "{err}");
}

/// Run an OpenLDAP client tool as the test server's admin.
fn ldap_tool(tool: &str, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let var = |v: &str| std::env::var(v).unwrap_or_default();
    let mut child = std::process::Command::new(tool)
        .args([
            "-x",
            "-H",
            &var("LOADRIG_LDAP_URL"),
            "-D",
            &var("LOADRIG_LDAP_BIND_DN"),
        ])
        .args(["-w", &var("LOADRIG_LDAP_PASSWORD")])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ldap tool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("ldap tool");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn ldap_pipelined_streams_multiplex_one_connection_exactly() {
    let Some(url) = server_url("LOADRIG_LDAP_URL") else {
        return;
    };
    let root = std::env::var("LOADRIG_LDAP_BASE").unwrap();
    let bind = std::env::var("LOADRIG_LDAP_BIND_DN").unwrap();
    let base = format!("ou=pipe,{root}");
    let _slapd = hold(&[Shared::Slapd]);
    ldap_tool("ldapdelete", &["-r", &base], "");
    ldap_tool(
        "ldapadd",
        &[],
        &format!("dn: {base}\nobjectClass: organizationalUnit\nou: pipe\n"),
    );
    let target = format!("{url}?bind_dn={bind}&password=${{LOADRIG_LDAP_PASSWORD}}&base={base}");
    let d = Dir::new();
    d.write("puts.toml", PUTS);
    d.ok(&[
        "run",
        "puts.toml",
        "--target",
        &target,
        "--clients",
        "2",
        "--pipeline",
        "8",
        "--ops",
        "160",
        "-o",
        "p.json",
    ]);
    let r = d.result("p.json");
    assert_eq!((r.total.ok, r.total.errors), (160, 0));
    let dns = ldap_tool(
        "ldapsearch",
        &["-LLL", "-b", &format!("ou=loadrig,{base}"), "1.1"],
        "",
    );
    let mut cns: Vec<&str> = dns
        .lines()
        .filter_map(|l| l.strip_prefix("dn: cn="))
        .collect();
    cns.sort();
    let mut expected: Vec<String> = (0..160)
        .map(|i| format!("p{i},ou=loadrig,{base}"))
        .collect();
    expected.sort();
    assert_eq!(cns, expected);

    // The entries just stored are the hits.
    d.write(
        "w.toml",
        &HITS_AND_MISSES.replace("500", "160").replace("k{", "p{"),
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &target,
        "--clients",
        "2",
        "--pipeline",
        "8",
        "--ops",
        "1600",
        "--skip-load",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let (hit, miss) = (&r.operations[0], &r.operations[1]);
    assert_eq!((hit.ok + miss.ok, hit.errors + miss.errors), (1600, 0));
    assert_eq!(hit.rows, hit.ok, "every hit found its entry");
    assert_eq!(miss.rows, 0, "no miss found one");
    ldap_tool("ldapdelete", &["-r", &base], "");
}

/// Open loop: the rate is dealt over every stream (connections x pipeline), so the run
/// delivers the asked rate, not P times it; latency counts from the intended start.
#[test]
fn an_open_loop_deals_its_rate_over_every_stream() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=2ms",
        "--rate",
        "400",
        "--max-in-flight",
        "2",
        "--pipeline",
        "4",
        "--samples",
        "3",
        "--interval",
        "100ms",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!(r.load.clients(), 8);
    // 400/s over 0.3 s: 120 arrivals scheduled, whatever the machine: those a busy machine
    // could not start by the end are counted as missed.
    let scheduled = r.total.ok + r.missed_starts;
    assert!((100..=121).contains(&scheduled), "{scheduled}");
    assert!(r.total.latency.min_ns >= 2_000_000);
}

/// Native commands go through the batch driver too: every stream's `{seq}` numbers are its
/// own (each pushed exactly once), each reply is counted on the operation that sent it
/// (RPUSH answers with the list's length: 1 row each), and every stream ran its exact share.
#[test]
fn redis_pipelined_native_commands_keep_each_streams_numbers() {
    let Some(url) = redis_db(11) else { return };
    let _db = hold(&[Shared::Redis(11)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "pushes"
[[op]]
name = "push"
weight = 3
redis = ["RPUSH", "loadrig:list", "{seq}"]
[[op]]
name = "count"
redis = ["LLEN", "loadrig:list"]
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "2",
        "--pipeline",
        "16",
        "--ops",
        "4000",
        "--seed",
        "3",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let (push, count) = (&r.operations[0], &r.operations[1]);
    assert_eq!((push.errors, count.errors), (0, 0));
    assert_eq!(push.ok + count.ok, 4000);
    assert_eq!(push.rows, push.ok, "one row per RPUSH");
    assert_eq!(count.rows, count.ok, "one row per LLEN");
    let fairness = &fairness(&d, "r.json");
    assert_eq!(
        (fairness["min"].as_u64(), fairness["max"].as_u64()),
        (Some(125), Some(125))
    );
    let mut list: Vec<u64> = redis::cmd("LRANGE")
        .arg("loadrig:list")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(list.len() as u64, push.ok);
    list.sort_unstable();
    list.dedup();
    assert_eq!(list.len() as u64, push.ok, "no {{seq}} number pushed twice");
    redis::cmd("FLUSHDB").exec(&mut c).unwrap();
}

/// The server drops the pipelined connection during the run: the operations in flight
/// fail with class `connect`, the streams go on over a new connection (counted as
/// reconnects) and the run ends normally.
#[test]
fn redis_pipelined_streams_reconnect_after_the_server_drops_them() {
    let Some(url) = redis_db(12) else { return };
    let _db = hold(&[Shared::Redis(12)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write("w.toml", PUTS);
    let run = d.spawn(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "1",
        "--pipeline",
        "8",
        "--duration",
        "2s",
        "-o",
        "r.json",
    ]);
    let me: u64 = redis::cmd("CLIENT").arg("ID").query(&mut c).unwrap();
    let mut killed = 0;
    for _ in 0..500 {
        // Only once puts arrive: the connection before them is the setup's, whose loss
        // fails the run before it starts (as it should).
        let stored: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        if stored == 0 {
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
        for line in list.lines().filter(|l| l.contains(" db=12 ")) {
            let id = line.split(' ').find_map(|f| f.strip_prefix("id="));
            let id: u64 = id.and_then(|i| i.parse().ok()).unwrap();
            if id != me {
                killed += redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("ID")
                    .arg(id)
                    .query::<u64>(&mut c)
                    .unwrap();
            }
        }
        if killed > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(killed, 1, "the run's one connection was found and dropped");
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = d.result("r.json");
    let put = &r.operations[0];
    assert!(put.errors >= 1 && put.errors <= 8, "{}", put.errors);
    assert_eq!(put.errors_by_class.values().sum::<u64>(), put.errors);
    assert_eq!(
        put.errors,
        put.errors_by_class[&loadrig::vocab::ErrorClass::Connect]
    );
    assert_eq!(
        put.reconnects, 8,
        "each of the 8 streams went on over the new connection"
    );
    assert!(put.ok > 0);
    redis::cmd("FLUSHDB").exec(&mut c).unwrap();
}

/// `sweep --vary pipeline`: each point runs at its depth on the simulated server (2 ms an
/// operation), so one connection with 4 in flight completes several times what it does
/// with 1, and each point's file says its depth and streams.
#[test]
fn a_sweep_varies_the_pipeline_depth() {
    let d = Dir::new();
    d.ok(&[
        "sweep",
        "noop",
        "--target",
        "sleep://?latency=2ms",
        "--clients",
        "1",
        "--vary",
        "pipeline=1,4",
        "--samples",
        "4",
        "--interval",
        "100ms",
        "--seed",
        "1",
        "-o",
        "s.json",
    ]);
    let s = loadrig::result::sweep::read(&d.join("s.json")).unwrap();
    assert_eq!(
        (s.vary.name.as_str(), s.vary.kind.as_str()),
        ("pipeline", "pipeline")
    );
    let depths: Vec<_> = s
        .points
        .iter()
        .map(|p| (p.x, p.result.load.pipeline, p.result.load.clients()))
        .collect();
    assert_eq!(depths, [(Some(1.0), 1, 1), (Some(4.0), 4, 4)]);
    let ratio = s.points[1].ok as f64 / s.points[0].ok as f64;
    assert!((1.8..=4.3).contains(&ratio), "4 in flight / 1: {ratio}");
    assert!(s.points[1].latency.min_ns >= 2_000_000, "still 2 ms each");
}

/// A depth the target cannot run, threads on a target that has a thread per client, or the
/// setting given twice: exit 2 before the first point, no sweep file, no password shown.
#[test]
fn a_sweep_refuses_points_the_target_cannot_run_before_the_first() {
    let d = Dir::new();
    let sweep = |target: &str, vary: &str, extra: &[&str]| {
        let mut args = vec!["sweep", "noop", "--target", target, "--vary", vary];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--ops", "10", "-o", "s.json"]);
        let (_, err) = d.code(2, &args);
        assert!(!d.join("s.json").exists(), "no sweep file: {err}");
        err
    };
    let err = sweep("mysql://u:secret@127.0.0.1:1/db", "pipeline=1,4", &[]);
    assert!(err.contains("--vary pipeline=4"), "{err}");
    assert!(err.contains("mysql:// targets cannot pipeline"), "{err}");
    assert!(!err.contains("secret"), "{err}");
    let err = sweep("sqlite://./t.db", "threads=1,2", &[]);
    assert!(
        err.contains("--vary threads") && err.contains("thread of its own"),
        "{err}"
    );
    assert!(!d.join("t.db").exists(), "nothing was created");
    let err = sweep("sleep://?latency=1ms", "pipeline=1,2", &["--pipeline", "2"]);
    assert!(err.contains("both set it"), "{err}");
    let err = sweep("sleep://?latency=1ms", "pipeline=1,0", &[]);
    assert!(err.contains("'0' is not a whole number"), "{err}");
}

/// On Redis, a sweep over the depth and one over the rig's threads: every point runs its
/// exact --ops on its own depth or threads.
#[test]
fn redis_sweeps_over_pipeline_and_threads_run_every_point_exactly() {
    let Some(url) = redis_db(13) else { return };
    let _db = hold(&[Shared::Redis(13)]);
    let mut c = redis_flushed(&url);
    let d = Dir::new();
    d.write("w.toml", PUTS);
    for (vary, field) in [("pipeline=1,8", "pipeline"), ("threads=1,2", "threads")] {
        d.ok(&[
            "sweep",
            "w.toml",
            "--target",
            &url,
            "--clients",
            "2",
            "--vary",
            vary,
            "--ops",
            "800",
            "--seed",
            "3",
            "-o",
            "s.json",
        ]);
        let s = loadrig::result::sweep::read(&d.join("s.json")).unwrap();
        assert_eq!(s.vary.name, field);
        for p in &s.points {
            let load = &p.result.load;
            let got = if field == "pipeline" {
                load.pipeline
            } else {
                load.threads
            };
            assert_eq!(Some(got as f64), p.x, "{vary}");
            assert_eq!((p.ok, p.errors), (800, 0), "{vary} at {}", p.value);
            assert_eq!(p.result.operations[0].rows, 800);
        }
        assert_eq!(s.points.len(), 2);
    }
    assert_only_puts_stored(&mut c, 800);
}
