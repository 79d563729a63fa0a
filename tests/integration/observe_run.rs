//! Runs that observe their server (`--observe`, docs/observe.md): the settings and their
//! bad input, `[[observe]]` queries (malformed: exit 2 at file:line:column; failing: named
//! once with the server's message), the server's figures in every interval of the result
//! and of the `.jsonl` stream (so `loadrig recover` keeps them), shards whose merge holds
//! the server's counters once (and whose collector's page shows them, once), and the
//! report's server section in a browser. Counts and classes only, never timings.

use std::time::{Duration, Instant};

use crate::collect;
use crate::common::browser::Browser;
use crate::common::locks::{hold, Shared};
use crate::common::{redis_db, server_url, Dir};
use loadrig::result::RunResult;

/// A workload that only reads: a point select on a table the setup fills.
const PG_READ: &str = r#"
name = "observed"
setup = [
  "DROP TABLE IF EXISTS loadrig_obs_read",
  "CREATE TABLE loadrig_obs_read (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)",
  "INSERT INTO loadrig_obs_read SELECT i, i FROM generate_series(1, 100) i",
]
[[op]]
name = "read"
sql = { query = "SELECT v FROM loadrig_obs_read WHERE id = $1", params = ["{uniform 1..101}"] }
"#;

fn observed_intervals(r: &RunResult) -> usize {
    r.intervals.iter().filter(|i| i.server.is_some()).count()
}

#[test]
fn a_network_run_is_observed_and_explained() {
    let Some(pg) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _held = hold(&[Shared::Postgres]);
    let d = Dir::new();
    d.write(
        "w.toml",
        &format!(
            r#"{PG_READ}
[[observe]]
name = "answer"
sql = "SELECT 41 + 1"

[[observe]]
name = "broken"
sql = "SELECT n FROM loadrig_obs_no_such_table"
every = "500ms"
"#
        ),
    );
    let out = d.ok(&[
        "run",
        "w.toml",
        "-t",
        &pg,
        "-c",
        "2",
        "-d",
        "2s",
        "-w",
        "1s",
        "-i",
        "500ms",
        "-o",
        "r.json",
        "--observe",
        "on",
    ]);
    let r = d.result("r.json");
    let s = r.server.as_ref().expect("observed when asked");
    assert!(observed_intervals(&r) >= 4, "{out}");
    // Warm-up intervals are observed too, and marked as the run's are.
    assert!(r.intervals.iter().any(|i| i.warmup && i.server.is_some()));
    assert!(s.measured.intervals >= 3);
    // The query that works has its value in the intervals it ran in; the one that fails is
    // reported once, by name, with the server's message, and not run again.
    let answers: Vec<f64> = r
        .intervals
        .iter()
        .filter_map(|i| i.server.as_ref())
        .flat_map(|s| &s.target.queries)
        .filter(|q| q.name == "answer")
        .filter_map(|q| q.value)
        .collect();
    assert!(
        answers.len() >= 4 && answers.iter().all(|v| *v == 42.0),
        "{answers:?}"
    );
    let broken: Vec<_> = s
        .unavailable
        .iter()
        .filter(|u| u.what == "[[observe]] broken")
        .collect();
    assert_eq!(broken.len(), 1, "{:?}", s.unavailable);
    assert!(
        broken[0].why.contains("does not exist"),
        "{}",
        broken[0].why
    );
    assert_eq!(
        out.matches("[[observe]] broken").count(),
        2,
        "once live, once in the summary: {out}"
    );
    // The statement is matched to its operation, and its time sits beside the client's.
    let read = &s.decomposition[0];
    assert_eq!(read.op, "read");
    assert!(
        read.server_mean_ms.is_some() && read.matched.len() == 1,
        "{read:?}"
    );
    assert!(
        read.statements_per_op
            .is_some_and(|n| (n - 1.0).abs() < 0.05),
        "{read:?}"
    );
    assert!(s.figures.contains_key("backend_active_share"));
    assert!(
        s.figures.contains_key("cpu_cores"),
        "loopback: the server's processes"
    );
    let cost = s.cost.as_ref().expect("the observer's cost");
    assert!(cost.cost.queries > 0 && cost.cpu_share.is_some());
    assert!(r.bottleneck.is_some());
    assert!(out.contains("bottleneck: "), "{out}");
    assert!(
        out.contains("\n  server "),
        "a server line under each interval: {out}"
    );
    // Integer counters are integers in the stream and the result.
    let text = std::fs::read_to_string(d.join("r.json")).unwrap();
    assert!(
        text.contains("\"pg_stat_database.xact_commit\": "),
        "{text:.200}"
    );
    assert!(!text.contains("\"pg_stat_database.numbackends\": 2.0"));
    // The stream's interval lines carry the same figures.
    let stream = std::fs::read_to_string(d.join("r.jsonl")).unwrap();
    let streamed = stream
        .lines()
        .skip(1)
        .filter(|l| l.contains("\"server\":"))
        .count();
    assert_eq!(streamed, observed_intervals(&r), "{stream:.300}");
    // Not asked: PostgreSQL's observer costs more than 1 % of the rig's CPU on its
    // standard workloads, so its runs are observed only when asked, and the console says
    // so, once.
    let unasked = d.ok(&[
        "run", "w.toml", "-t", &pg, "-c", "1", "--ops", "20", "-o", "u.json",
    ]);
    assert!(d.result("u.json").server.is_none());
    assert_eq!(
        unasked.matches("the server is not observed").count(),
        1,
        "{unasked}"
    );
    assert!(unasked.contains("--observe on"), "{unasked}");
    // Off: no observation at all; a rate of 0 samples no sessions.
    d.ok(&[
        "run",
        "w.toml",
        "-t",
        &pg,
        "-c",
        "1",
        "--ops",
        "20",
        "--observe",
        "off",
        "-o",
        "off.json",
    ]);
    let off = d.result("off.json");
    assert!(off.server.is_none() && off.bottleneck.is_none() && observed_intervals(&off) == 0);
    d.ok(&[
        "run",
        "w.toml",
        "-t",
        &pg,
        "-c",
        "1",
        "-d",
        "1s",
        "--observe",
        "on",
        "--observe-rate",
        "0",
        "-o",
        "nosamples.json",
    ]);
    let none = d.result("nosamples.json");
    assert!(none
        .server
        .as_ref()
        .unwrap()
        .measured
        .figures
        .waits
        .is_none());
}

/// Prepared point selects alone: MariaDB's statement digests leave out prepared statements'
/// executions, so the run has no digest of its own (as sysbench's oltp_point_select).
const MY_PREPARED: &str = r#"
name = "observed-prepared"
setup = [
  "DROP TABLE IF EXISTS loadrig_obs_prepared",
  "CREATE TABLE loadrig_obs_prepared (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)",
  "INSERT INTO loadrig_obs_prepared VALUES (1, 1), (2, 2), (3, 3)",
]
[[op]]
name = "read"
sql = { query = "SELECT v FROM loadrig_obs_prepared WHERE id = $1", params = ["{uniform 1..4}"] }
"#;

#[test]
fn the_observers_server_share_counts_prepared_statements() {
    let Some(my) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _held = hold(&[Shared::Mariadb]);
    let d = Dir::new();
    d.write("w.toml", MY_PREPARED);
    let out = d.ok(&[
        "run",
        "w.toml",
        "-t",
        &my,
        "-c",
        "2",
        "--ops",
        "3000",
        "-i",
        "500ms",
        "-o",
        "r.json",
        "--observe",
        "on",
    ]);
    let r = d.result("r.json");
    let s = r.server.as_ref().expect("observed");
    let all = s.measured.figures.counters["performance_schema.statements"];
    assert!(all >= 3000.0, "every execution counted: {all}");
    assert!(
        s.measured
            .figures
            .statements
            .iter()
            .all(|x| !x.text.contains("loadrig_obs_prepared")),
        "the digests hold none of the run's prepared executions: {:?}",
        s.measured.figures.statements
    );
    // The observer's statements against every statement, the run's prepared ones among
    // them: not the whole (it printed 100 % when only the digests were summed).
    let cost = s.cost.as_ref().expect("the observer's cost");
    let share = cost.server_time_share.expect("performance_schema times it");
    assert!(share > 0.0 && share < 0.5, "{share}: {out}");
    d.ok(&["cleanup", "-t", &my]);
}

#[test]
fn observe_settings_and_queries_are_checked_before_the_run() {
    let d = Dir::new();
    // Embedded targets are not observed unless asked, and cannot be.
    d.write(
        "kv.toml",
        "name = \"kv\"\n[[op]]\nname = \"get\"\nkv.get = { key = \"k1\" }\n",
    );
    d.ok(&[
        "run",
        "kv.toml",
        "-t",
        "sqlite://t.db",
        "--ops",
        "10",
        "-o",
        "s.json",
    ]);
    assert!(d.result("s.json").server.is_none());
    let (_, err) = d.code(
        2,
        &["run", "kv.toml", "-t", "sqlite://t.db", "--observe", "on"],
    );
    assert!(
        err.contains("--observe on: sqlite:// targets have no server to observe"),
        "{err}"
    );
    let (_, err) = d.code(
        2,
        &["run", "kv.toml", "-t", "noop://", "--observe", "maybe"],
    );
    assert!(err.contains("--observe maybe: expected on or off"), "{err}");
    let (_, err) = d.code(2, &["run", "kv.toml", "-t", "noop://", "--observe-rate=-1"]);
    assert!(err.contains("--observe-rate"), "{err}");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "kv.toml",
            "-t",
            "redis://127.0.0.1:1/0",
            "--observe",
            "off",
            "--observe-behind",
            "postgres://u@127.0.0.1/db",
        ],
    );
    assert!(err.contains("--observe-behind"), "{err}");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "kv.toml",
            "-t",
            "redis://127.0.0.1:1/0",
            "--observe-behind",
            "sqlite://x.db",
        ],
    );
    assert!(err.contains("sqlite:// has no server to observe"), "{err}");
    // [load] observe takes a boolean or on/off, at its place in the file.
    d.write(
        "bad_load.toml",
        "name = \"kv\"\n[load]\nobserve = 3\n[[op]]\nname = \"get\"\nkv.get = { key = \"k1\" }\n",
    );
    let (_, err) = d.code(2, &["run", "bad_load.toml", "-t", "noop://"]);
    assert!(err.contains("bad_load.toml:3:11"), "{err}");
    assert!(
        err.contains("expected true, false, \"on\" or \"off\""),
        "{err}"
    );
    // A malformed [[observe]] is an input error at its place, before anything runs.
    for (name, entry, at, says) in [
        (
            "name.toml",
            "name = \"a b\"\nsql = \"SELECT 1\"",
            "name.toml:6:1",
            "expected letters, digits",
        ),
        (
            "two.toml",
            "name = \"x\"\nsql = \"SELECT 1; DELETE FROM t\"",
            "two.toml:6:1",
            "more than one statement",
        ),
        (
            "every.toml",
            "name = \"x\"\nsql = \"SELECT 1\"\nevery = \"soon\"",
            "every.toml:6:1",
            "soon",
        ),
        (
            "key.toml",
            "name = \"x\"\nquery = \"SELECT 1\"",
            "key.toml:8:1",
            "unknown field `query`",
        ),
    ] {
        d.write(
            name,
            &format!("name = \"kv\"\n[[op]]\nname = \"get\"\nkv.get = {{ key = \"k1\" }}\n\n[[observe]]\n{entry}\n"),
        );
        let (_, err) = d.code(2, &["run", name, "-t", "sqlite://t.db"]);
        assert!(err.contains(at) && err.contains(says), "{name}: {err}");
    }
    d.write(
        "twice.toml",
        "name = \"kv\"\n[[op]]\nname = \"get\"\nkv.get = { key = \"k1\" }\n[[observe]]\nname = \"x\"\nsql = \"SELECT 1\"\n[[observe]]\nname = \"x\"\nsql = \"SELECT 2\"\n",
    );
    let (_, err) = d.code(2, &["run", "twice.toml", "-t", "sqlite://t.db"]);
    assert!(
        err.contains("twice.toml:8:1") && err.contains("used twice"),
        "{err}"
    );
    assert!(
        d.files().iter().all(|f| f.ends_with(".toml")
            || f == "s.json"
            || f == "s.jsonl"
            || f == "t.db"
            || f.starts_with("t.db")),
        "{:?}",
        d.files()
    );
}

#[test]
fn shards_merge_the_servers_counters_once() {
    let Some(url) = redis_db(11) else {
        return;
    };
    let _held = hold(&[Shared::Redis(11)]);
    let d = Dir::new();
    // Collected as they go, on the collector's page.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let page = format!("127.0.0.1:{port}");
    #[rustfmt::skip]
    let (col, addr) = collect::collector(d.path(), "127.0.0.1:0", &["--shards", "3", "-o", "run.json", "--dashboard", &page], &[]);
    let events = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    });
    let at = collect::start_in(2);
    // Redis is observed only when asked (its observer's cost).
    let load = ["noop", "-t", &url, "-c", "3", "-d", "2s", "--observe", "on"];
    let shards: Vec<_> = (0..3)
        .map(|i| collect::shard(d.path(), i, 3, &at, &addr, &load, &[]))
        .collect();
    for (i, s) in shards.into_iter().enumerate() {
        collect::succeeded(s, d.path(), &format!("s{i}"));
    }
    collect::succeeded(col, d.path(), "collect");
    let s0 = d.result("s0.json");
    let observed = s0.server.as_ref().expect("shard 0 observes");
    assert_eq!(observed.observed_by_shard, Some(0));
    for other in ["s1.json", "s2.json"] {
        let s = d.result(other);
        assert!(
            s.server.is_none() && observed_intervals(&s) == 0,
            "{other} does not observe"
        );
        assert!(
            s.notes.iter().any(|n| n.contains("observed by shard 0")),
            "{:?}",
            s.notes
        );
    }
    let m = collect::merge(&d, &["s0.json", "s1.json", "s2.json"], &[]);
    let merged = m
        .server
        .as_ref()
        .expect("the merged run keeps the server's figures");
    assert_eq!(merged.observed_by_shard, Some(0));
    let commands = |s: &loadrig::result::server::ServerRecord| {
        s.measured.figures.counters["stats.total_commands_processed"]
    };
    assert_eq!(
        commands(merged),
        commands(observed),
        "once, not once per shard"
    );
    assert_eq!(observed_intervals(&m), observed_intervals(&s0));
    assert!(m.bottleneck.is_some());
    // The collector's run is the merge's, server figures included; its page got each
    // observed interval's figures once, after the interval.
    collect::same_as_merge(&d.result("run.json"), &m);
    let text = events.join().unwrap();
    assert_eq!(
        text.matches("event: server\n").count(),
        observed_intervals(&m),
        "{text}"
    );
    let first = |e: &str| text.find(e).unwrap();
    assert!(first("event: interval\n") < first("event: server\n"));
    assert!(text.contains("event: end\n"), "{text}");
}

#[test]
fn a_killed_observed_run_is_recovered_with_its_server_series() {
    let Some(url) = redis_db(12) else {
        return;
    };
    let _held = hold(&[Shared::Redis(12)]);
    let d = Dir::new();
    d.write(
        "get.toml",
        "name = \"get\"\n[[op]]\nname = \"get\"\nkv.get = { key = \"k1\" }\n",
    );
    let mut child = d.spawn(&[
        "run",
        "get.toml",
        "-t",
        &url,
        "-c",
        "2",
        "-d",
        "60s",
        "-i",
        "200ms",
        "--observe",
        "on",
        "-o",
        "k.json",
    ]);
    let stream = d.join("k.jsonl");
    let started = Instant::now();
    while std::fs::read_to_string(&stream).map_or(0, |t| t.lines().count()) <= 4 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the stream grows"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    d.ok(&["recover", "k.jsonl", "-o", "k.json"]);
    let r = d.result("k.json");
    assert!(
        observed_intervals(&r) >= 3,
        "the stream's server series are kept"
    );
    let s = r.server.as_ref().expect("the server record is made again");
    assert!(s.cost.is_none(), "the stream does not carry the cost");
    assert!(s.measured.figures.counters["stats.total_commands_processed"] > 0.0);
    let get = s.decomposition.iter().find(|o| o.op == "get").unwrap();
    assert_eq!(get.matched, vec!["get".to_string()]);
}

#[test]
fn the_report_shows_the_server_beside_the_clients() {
    let Some(pg) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _held = hold(&[Shared::Postgres]);
    let d = Dir::new();
    d.write("w.toml", PG_READ);
    d.ok(&[
        "run",
        "w.toml",
        "-t",
        &pg,
        "-c",
        "2",
        "-d",
        "2s",
        "-i",
        "500ms",
        "--observe",
        "on",
        "--observe-rate",
        "50",
        "-o",
        "r.json",
        "--report",
        "r.html",
    ]);
    let page = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(page.contains("id=\"server\"") && page.contains("The server over time"));
    assert!(page.contains("class=\"resources\"") && page.contains("class=\"decomposition\""));
    let Some(b) = Browser::start() else { return };
    b.goto(&d.join("r.html"));
    let n = |q: &str| {
        b.eval(&format!("return document.querySelectorAll('{q}').length"))
            .as_u64()
            .unwrap()
    };
    assert_eq!(n("table.resources tbody tr"), 7, "every resource judged");
    assert_eq!(n("#server-0 svg"), 1);
    // Four panels (throughput, latency, CPU, the waits stacked), each with its legend.
    let legends = b.eval(
        "return Array.from(document.querySelectorAll('#server-0 svg text')).map(t => t.textContent)",
    );
    let texts: Vec<&str> = legends
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .map(str::trim)
        .collect();
    for want in [
        "clients: successful operations/s",
        "server: commits/s",
        "clients: p99",
        "server: CPU (cores busy)",
    ] {
        assert!(texts.contains(&want), "{want} in {texts:?}");
    }
    // Which wait classes the samples found depends on the machine's load: at least one.
    assert!(
        texts.iter().any(|t| t.ends_with("(wait class)")),
        "a wait class in {texts:?}"
    );
    b.screenshot(&d.join("server.png"));
}
