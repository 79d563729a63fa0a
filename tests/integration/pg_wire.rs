//! PostgreSQL through the batch driver's own extended-protocol client (plain runs, at
//! `--pipeline 1` and above), on the throwaway server (scripts/services.sh: SCRAM-SHA-256
//! for TCP, one trust database): login, exact row counts against the table, statement
//! errors counted in their class while the run goes on, replies reaching the stream that
//! asked, and connections the server terminates being replaced.

use crate::common::locks::{hold, Shared};
use crate::common::sql::{ints, pg_row, terminate_run_backends};
use crate::common::{server_url, Dir};

/// The table `name`, dropped and created empty.
fn fresh_table(url: &str, name: &str) {
    pg_row(url, &format!("DROP TABLE IF EXISTS {name}"));
    pg_row(
        url,
        &format!("CREATE TABLE {name} (k TEXT PRIMARY KEY, who BIGINT NOT NULL)"),
    );
}

fn inserts(table: &str, key: &str) -> String {
    format!(
        r#"
name = "inserts"
[[op]]
name = "insert"
sql = {{ query = "INSERT INTO {table} VALUES ($1, $2)", params = ["{key}", "{{client}}"] }}
"#
    )
}

fn run(d: &Dir, url: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "w.toml", "--target", url, "-o", "r.json"];
    args.extend_from_slice(extra);
    d.ok(&args)
}

#[test]
fn scram_login_and_inserts_store_exactly_the_rows_counted() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    fresh_table(&url, "loadrig_wire_ins");
    let d = Dir::new();
    d.write("w.toml", &inserts("loadrig_wire_ins", "k{seq}"));
    run(&d, &url, &["--clients", "3", "--ops", "600"]);
    let r = d.result("r.json");
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors, op.rows), (600, 0, 600));
    let row = ints(pg_row(
        &url,
        "SELECT count(*), count(DISTINCT who) FROM loadrig_wire_ins",
    ));
    assert_eq!(row, vec![600, 3], "one row per operation, from 3 clients");
    pg_row(&url, "DROP TABLE loadrig_wire_ins");
}

#[test]
fn trust_login_counts_selected_rows() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_TRUST_URL") else {
        return;
    };
    let d = Dir::new();
    // generate_series: exactly $1 rows each, so rows = 3 × the operations.
    d.write(
        "w.toml",
        r#"
name = "series"
[[op]]
name = "three"
sql = { query = "SELECT generate_series(1, $1::int)", params = ["3"] }
[[op]]
name = "none"
sql = { query = "SELECT 1 WHERE $1::int = 0", params = ["1"] }
"#,
    );
    run(&d, &url, &["--clients", "2", "--ops", "400"]);
    let r = d.result("r.json");
    let (three, none) = (&r.operations[0], &r.operations[1]);
    assert_eq!(three.ok + none.ok, 400);
    assert_eq!((three.errors, none.errors), (0, 0));
    assert_eq!(three.rows, 3 * three.ok);
    assert_eq!(none.rows, 0);
}

#[test]
fn a_wrong_password_is_an_auth_error_without_the_password() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let wrong = "Wr0ngSecret-xyz";
    let Some((scheme_user, rest)) = url.rsplit_once('@') else {
        panic!("no user in {url}")
    };
    let user = scheme_user.rsplit_once(':').map_or(scheme_user, |(u, _)| u);
    let bad = format!("{user}:{wrong}@{rest}");
    let d = Dir::new();
    d.write("w.toml", &inserts("loadrig_wire_never", "k{seq}"));
    let (stdout, stderr) = d.code(2, &["run", "w.toml", "--target", &bad, "--ops", "10"]);
    assert!(
        stderr.contains("authentication failed (auth): 28P01"),
        "{stderr}"
    );
    assert!(!stdout.contains(wrong) && !stderr.contains(wrong));
    assert!(!d.join("r.json").exists());
}

#[test]
fn a_unique_violation_is_counted_as_constraint_and_the_run_goes_on() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    fresh_table(&url, "loadrig_wire_dup");
    let d = Dir::new();
    // 300 inserts of 40 possible keys: each key's first insert succeeds, the rest violate
    // the primary key.
    d.write("w.toml", &inserts("loadrig_wire_dup", "d{uniform 0..40}"));
    run(&d, &url, &["--clients", "2", "--ops", "300", "--seed", "3"]);
    let r = d.result("r.json");
    let op = &r.operations[0];
    let stored = ints(pg_row(&url, "SELECT count(*) FROM loadrig_wire_dup"))[0] as u64;
    assert_eq!(op.ok, stored, "every success is a stored row");
    assert_eq!(op.ok + op.errors, 300);
    assert!(op.errors > 200, "{} errors", op.errors);
    let by_class: u64 = op.errors_by_class.values().sum();
    assert_eq!(by_class, op.errors);
    assert_eq!(
        op.errors_by_class
            .get(&loadrig::vocab::ErrorClass::Constraint)
            .copied(),
        Some(op.errors)
    );
    pg_row(&url, "DROP TABLE loadrig_wire_dup");
}

#[test]
fn pipelined_kv_replies_reach_the_stream_that_asked() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let d = Dir::new();
    // The kv table keeps keys of other tests: these are this test's own.
    d.write(
        "w.toml",
        r#"
name = "hits-and-misses"
[data]
count = 300
key = "wire-hit{seq}"
value = "{bytes 50}"
batch = 100
[[op]]
name = "hit"
kv.get = { key = "wire-hit{uniform 0..300}" }
[[op]]
name = "miss"
kv.get = { key = "wire-absent{uniform 0..300}" }
[[op]]
name = "put"
kv.put = { key = "wire-put{seq}", value = "{bytes 20}" }
"#,
    );
    run(
        &d,
        &url,
        &["--clients", "2", "--pipeline", "16", "--ops", "3200"],
    );
    let r = d.result("r.json");
    let (hit, miss, put) = (&r.operations[0], &r.operations[1], &r.operations[2]);
    assert_eq!(hit.ok + miss.ok + put.ok, 3200);
    assert_eq!((hit.errors, miss.errors, put.errors), (0, 0, 0));
    assert!(hit.ok > 800 && miss.ok > 800 && put.ok > 800);
    assert_eq!(hit.rows, hit.ok, "every hit found its key");
    assert_eq!(miss.rows, 0, "no miss found one");
    assert_eq!(put.rows, put.ok);
    let stored = ints(pg_row(
        &url,
        "SELECT count(*) FROM loadrig_kv WHERE k LIKE 'wire-put%'",
    ));
    assert_eq!(stored, vec![put.ok as i64]);
    pg_row(&url, "DELETE FROM loadrig_kv WHERE k LIKE 'wire-%'");
}

#[test]
fn terminated_connections_are_replaced_and_the_run_ends_normally() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let app = "loadrig_wire_terminate";
    let rig_url = format!("{url}?application_name={app}");
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "selects"
[[op]]
name = "select"
sql = { query = "SELECT $1::int", params = ["{uniform 1..100}"] }
"#,
    );
    let child = d.spawn(&[
        "run",
        "w.toml",
        "--target",
        &rig_url,
        "--clients",
        "2",
        "--pipeline",
        "4",
        "--duration",
        "3s",
        "-o",
        "r.json",
    ]);
    let (r, _) = terminate_run_backends(&d, child, &url, app, "SELECT $1::int", 2);
    assert!(r.total.ok > 0);
}
