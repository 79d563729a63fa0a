//! Ground truth for the bottleneck verdict (docs/observe.md): workloads whose bottleneck is
//! known by construction, run on the real servers of scripts/services.sh, and the verdict
//! and the figures behind it checked by class and count, never by timing:
//! - PostgreSQL, every client updating the same row: lock waits (`Lock/transactionid`),
//!   above half of the backends' active time;
//! - PostgreSQL, a CPU-heavy query with few clients: the server's CPU, the rig far from busy;
//! - PostgreSQL, single-row inserts committed with `synchronous_commit` on, on a data
//!   directory that really syncs: WAL waits a clear share, much smaller with it off;
//! - MariaDB, every client updating the same row: row lock waits;
//! - Redis, a Lua script that spins: commandstats give the time to `eval`, and the verdict
//!   is the server's CPU (its one thread saturated, the clients queued for it).

use std::process::Command;

use crate::common::locks::{hold, Shared};
use crate::common::needs::needs;
use crate::common::{redis_db, server_url, Dir};
use loadrig::result::server::ServerRecord;
use loadrig::result::RunResult;

/// Run `workload` (a file's text) on `target` with `args`, observing at 50 samples a second.
fn observed(d: &Dir, name: &str, workload: &str, target: &str, args: &[&str]) -> RunResult {
    d.write(&format!("{name}.toml"), workload);
    let file = format!("{name}.toml");
    let out = format!("{name}.json");
    let mut all = vec![
        "run",
        &file,
        "-t",
        target,
        "--observe",
        "on",
        "--observe-rate",
        "50",
        "-o",
        &out,
    ];
    all.extend(args);
    d.ok(&all);
    d.result(&out)
}

fn server(r: &RunResult) -> &ServerRecord {
    r.server.as_ref().expect("the run observed its server")
}

fn figure(r: &RunResult, name: &str) -> f64 {
    loadrig::analysis::server::figure(r, name)
        .unwrap_or_else(|| panic!("{name} in {:?}", server(r).figures))
}

fn verdict(r: &RunResult) -> &str {
    &r.bottleneck.as_ref().expect("a verdict").verdict
}

/// The first lock event among the backends' waits.
fn top_lock(r: &RunResult) -> Option<String> {
    let w = server(r).measured.figures.waits.as_ref()?;
    w.waits
        .iter()
        .find(|x| x.class == "Lock")
        .map(|x| format!("{}/{}", x.class, x.event))
}

const PG_SAME_ROW: &str = r#"
name = "same-row"
setup = [
  "DROP TABLE IF EXISTS loadrig_obs_row",
  "CREATE TABLE loadrig_obs_row (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)",
  "INSERT INTO loadrig_obs_row VALUES (1, 0)",
]
[[op]]
name = "bump"
tx = [
  { sql = { query = "UPDATE loadrig_obs_row SET n = n + 1 WHERE id = 1" } },
  { sql = { query = "SELECT n FROM loadrig_obs_row WHERE id = 1" } },
]
"#;

#[test]
fn postgres_same_row_updates_wait_for_locks() {
    let Some(pg) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _held = hold(&[Shared::Postgres, Shared::Cpu]);
    let d = Dir::new();
    let r = observed(
        &d,
        "row",
        PG_SAME_ROW,
        &pg,
        &["-c", "8", "-d", "2s", "-w", "500ms"],
    );
    assert_eq!(verdict(&r), "locks", "{:#?}", r.bottleneck);
    assert!(
        figure(&r, "lock_wait_share") > 0.5,
        "{:?}",
        server(&r).figures
    );
    assert_eq!(top_lock(&r).as_deref(), Some("Lock/transactionid"));
    let line = &r.bottleneck.as_ref().unwrap().line;
    assert!(line.contains("Lock/transactionid"), "{line}");
}

#[test]
fn postgres_cpu_heavy_queries_load_the_servers_cpu() {
    let Some(pg) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _held = hold(&[Shared::Postgres, Shared::Cpu]);
    let d = Dir::new();
    let heavy = r#"
name = "heavy"
[[op]]
name = "digest"
sql = { query = "SELECT count(DISTINCT md5(i::text)) FROM generate_series(1, 20000) i" }
"#;
    let r = observed(
        &d,
        "heavy",
        heavy,
        &pg,
        &["-c", "2", "-d", "2s", "-w", "500ms"],
    );
    assert_eq!(verdict(&r), "server_cpu", "{:#?}", r.bottleneck);
    assert!(
        figure(&r, "wait_share.CPU") > 0.8,
        "{:?}",
        server(&r).figures
    );
    let rig = &r.validity.as_ref().unwrap().rig;
    assert!(
        rig.cpu_share < 0.25,
        "the rig far from busy: {}",
        rig.cpu_share
    );
    assert!(
        figure(&r, "cpu_ms_per_op") > 1.0,
        "each query costs the server CPU"
    );
}

/// The file system type of the directory `pid` runs in (PostgreSQL runs in its data
/// directory): `tmpfs` never syncs.
fn fs_type_of(pid: u32) -> String {
    let out = Command::new("stat")
        .args(["-f", "-c", "%T", &format!("/proc/{pid}/cwd/.")])
        .output()
        .expect("stat");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn postgres_synchronous_commits_wait_for_the_wal() {
    let Some(pg) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _held = hold(&[Shared::Postgres, Shared::Cpu]);
    let d = Dir::new();
    // Each transaction sets synchronous_commit for itself (SET LOCAL): nothing else of the
    // shared server changes.
    let inserts = |sync: &str| {
        format!(
            r#"
name = "inserts"
setup = [
  "DROP TABLE IF EXISTS loadrig_obs_wal",
  "CREATE TABLE loadrig_obs_wal (id BIGSERIAL PRIMARY KEY, v INTEGER NOT NULL)",
]
[[op]]
name = "insert"
tx = [
  {{ sql = {{ query = "SET LOCAL synchronous_commit TO {sync}" }} }},
  {{ sql = {{ query = "INSERT INTO loadrig_obs_wal (v) VALUES (1)" }} }},
]
"#
        )
    };
    let load = ["-c", "4", "-d", "2s", "-w", "500ms"];
    let mut url = pg.clone();
    let mut on = observed(&d, "on", &inserts("on"), &url, &load);
    let pid = server(&on)
        .measured
        .figures
        .processes
        .as_ref()
        .map(|p| p.pid);
    if pid.is_some_and(|p| fs_type_of(p) == "tmpfs") {
        // A data directory in memory never waits for a sync: the test needs one on disk.
        let Some(disk) = needs(
            "LOADRIG_PG_DISK_URL (a PostgreSQL whose data directory is on a disk)",
            "the throwaway PostgreSQL's data directory is on tmpfs; start one on disk and export its URL",
            std::env::var("LOADRIG_PG_DISK_URL").ok(),
        ) else {
            return;
        };
        url = disk;
        on = observed(&d, "on", &inserts("on"), &url, &load);
    }
    let off = observed(&d, "off", &inserts("off"), &url, &load);
    // Committed without waiting, the backends may be found active in no sample at all:
    // then no share was waiting for the WAL.
    let samples = server(&off)
        .measured
        .figures
        .waits
        .as_ref()
        .map(|w| w.samples);
    assert!(samples.is_some_and(|n| n > 0), "the sessions were sampled");
    let wal_off = server(&off)
        .figures
        .get("wal_wait_share")
        .copied()
        .unwrap_or(0.0);
    let wal_on = figure(&on, "wal_wait_share");
    assert!(
        wal_on > 0.2,
        "a clear share with synchronous_commit on: {:?}",
        server(&on).figures
    );
    assert!(
        wal_off * 3.0 < wal_on,
        "much smaller with it off: {wal_off} against {wal_on}"
    );
    let io = |r: &RunResult| {
        r.bottleneck
            .as_ref()
            .unwrap()
            .resources
            .iter()
            .find(|x| x.resource == "io")
            .and_then(|x| x.share)
            .unwrap_or(0.0)
    };
    assert!(
        io(&on) > io(&off),
        "{:#?}\n{:#?}",
        on.bottleneck,
        off.bottleneck
    );
}

#[test]
fn mariadb_same_row_updates_wait_for_row_locks() {
    let Some(my) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _held = hold(&[Shared::Mariadb, Shared::Cpu]);
    let d = Dir::new();
    // Each transaction holds its row lock over a second statement, as an application that
    // reads after it writes does.
    let same_row = r#"
name = "same-row"
setup = [
  "DROP TABLE IF EXISTS loadrig_obs_row",
  "CREATE TABLE loadrig_obs_row (id INTEGER PRIMARY KEY, n BIGINT NOT NULL) ENGINE = InnoDB",
  "INSERT INTO loadrig_obs_row VALUES (1, 0)",
]
[[op]]
name = "bump"
tx = [
  { sql = { query = "UPDATE loadrig_obs_row SET n = n + 1 WHERE id = 1" } },
  { sql = { query = "SELECT SLEEP(0.005)" } },
]
"#;
    let r = observed(
        &d,
        "row",
        same_row,
        &my,
        &["-c", "6", "-d", "2s", "-w", "500ms"],
    );
    let s = server(&r);
    let waits = s.measured.figures.counters["global_status.Innodb_row_lock_waits"];
    assert!(
        waits >= r.total.ok as f64 / 2.0,
        "{waits} waits for {} updates",
        r.total.ok
    );
    assert!(figure(&r, "lock_wait_share") > 0.5, "{:?}", s.figures);
    assert_eq!(verdict(&r), "locks", "{:#?}", r.bottleneck);
}

#[test]
fn redis_a_spinning_script_is_the_servers_cpu() {
    let Some(url) = redis_db(13) else {
        return;
    };
    let _held = hold(&[Shared::Redis(13), Shared::Cpu]);
    let d = Dir::new();
    let spin = r#"
name = "spin"
[[op]]
name = "spin"
redis = ["EVAL", "local i = 0 while i < 300000 do i = i + 1 end return i", "0"]
"#;
    // Eight clients keep Redis's one thread busy: each waits for the others' scripts, so
    // the thread has a script queued even when the clients are slow to send the next one
    // (a machine busy with other work).
    let r = observed(
        &d,
        "spin",
        spin,
        &url,
        &["-c", "8", "-d", "2s", "-w", "500ms"],
    );
    let s = server(&r);
    let eval = &s.measured.figures.statements[0];
    assert_eq!(
        eval.id, "eval",
        "the most time: {:?}",
        s.measured.figures.statements
    );
    // The server's counts and the clients' are read at slightly different instants: at
    // each end of the measured part each of the 8 clients' calls may fall on either side.
    let ok = r.total.ok as i64;
    assert!(
        (eval.calls as i64 - ok).abs() <= 2 * 8,
        "{} calls for {ok} operations",
        eval.calls
    );
    let op = loadrig::analysis::server::operation(&r, "spin").expect("spin's time");
    assert_eq!(op.matched, vec!["eval".to_string()]);
    assert!(
        op.statements_per_op.is_some_and(|n| (n - 1.0).abs() < 0.05),
        "{op:?}"
    );
    assert_eq!(verdict(&r), "server_cpu", "{:#?}", r.bottleneck);
}
