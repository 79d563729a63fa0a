//! The pgbench built-ins (`pgbench-tpcb`, `pgbench-simple-update`, `pgbench-select-only`) on
//! SQLite and on throwaway PostgreSQL and MariaDB servers (`scripts/services.sh up postgres
//! mariadb`, then `eval "$(scripts/services.sh env)"`; without LOADRIG_PG_URL or
//! LOADRIG_MYSQL_URL those tests say "skipped").
//! Fixed operation counts, scale 1 (pgbench's 100,000 accounts): exact counts, pgbench's
//! rows per transaction and its balance check, read back from the database itself.

use crate::common::locks::{hold, Shared};

use crate::common::sql::{ints, mysql_row, pg_row, sqlite_row};
use crate::common::{server_url, Dir};
use serde_json::Value;

/// (workload, statements per transaction: the rows each one touches).
const BUILTINS: &[(&str, u64)] = &[
    ("pgbench-tpcb", 5),
    ("pgbench-simple-update", 3),
    ("pgbench-select-only", 1),
];

const OPS: u64 = 120;

/// The four sums pgbench's check compares, and the history's length.
const SUMS: &str = "SELECT (SELECT SUM(abalance) FROM loadrig_pgbench_accounts), \
    (SELECT SUM(bbalance) FROM loadrig_pgbench_branches), \
    (SELECT SUM(tbalance) FROM loadrig_pgbench_tellers), \
    (SELECT COALESCE(SUM(delta), 0) FROM loadrig_pgbench_history), \
    (SELECT COUNT(*) FROM loadrig_pgbench_history), \
    (SELECT COUNT(*) FROM loadrig_pgbench_accounts), \
    (SELECT COUNT(*) FROM loadrig_pgbench_tellers), \
    (SELECT COUNT(*) FROM loadrig_pgbench_branches)";

/// Run every built-in for OPS transactions on `url` and check what it left behind with
/// `row` (one row of numbers from a query on the same database).
fn every_builtin(url: &str, clients: &str, row: &dyn Fn(&str) -> Vec<i64>) {
    for &(name, statements) in BUILTINS {
        let d = Dir::new();
        let ops = OPS.to_string();
        let out = d.run_ops(name, url, &ops, clients, &["--seed", "5", "-o", "r.json"]);
        let r = d.result("r.json");
        assert_eq!(r.operations.len(), 1, "{name}");
        let op = &r.operations[0];
        assert_eq!((op.ok, op.errors), (OPS, 0), "{name}: {out}");
        // pgbench's statements per transaction, each touching one row.
        assert_eq!(op.rows, statements * OPS, "{name}");
        // pgbench -i: 11 statements generate 1 + 10 + 100,000 rows, and 3 more make the
        // total of the history emptied before later runs (one row, 0).
        let setup = r.setup.as_ref().expect("setup record");
        assert_eq!((setup.statements, setup.rows), (14, 100_012), "{name}");
        // As pgbench -i, on PostgreSQL only: the loaded tables vacuumed and analyzed.
        let on_postgres = url.starts_with("postgres");
        assert_eq!(
            out.contains("vacuumed and analyzed"),
            on_postgres,
            "{name}: {out}"
        );
        assert_eq!(
            r.settled.as_ref().map(|s| s.tables >= 4),
            on_postgres.then_some(true),
            "{name}: the four tables at least"
        );
        let sums = row(SUMS);
        // pgbench -i at scale 1: 100,000 accounts, 10 tellers, 1 branch.
        assert_eq!(&sums[5..], &[100_000, 10, 1], "{name}");
        let history = if name == "pgbench-select-only" {
            0
        } else {
            OPS as i64
        };
        assert_eq!(sums[4], history, "{name}: history rows");
        match name {
            "pgbench-tpcb" => {
                assert!(sums[..4].iter().all(|s| *s == sums[0]), "{name}: {sums:?}");
                assert_eq!(r.verify.len(), 1);
                assert!(r.verify[0].passed, "{:?}", r.verify);
                assert!(out.contains("verify balances: passed"), "{out}");
                // The result file records the let values the statements use.
                assert_eq!(r.workload.ops[0].lets["aid"], "{uniform 1..100000*scale+1}");
                assert_eq!(r.workload.ops[0].lets["delta"], "{uniform -5000..5001}");
            }
            "pgbench-simple-update" => {
                assert_eq!(sums[0], sums[3], "{name}: {sums:?}");
                assert_eq!((sums[1], sums[2]), (0, 0), "{name}: {sums:?}");
                assert!(r.verify[0].passed, "{:?}", r.verify);
            }
            _ => {
                assert_eq!(sums[..4], [0, 0, 0, 0], "{name}");
                assert!(r.verify.is_empty());
            }
        }
        again_on_the_same_tables(&d, name, url, clients, row, &sums);
    }
}

/// A second run with `--skip-load`, as pgbench runs again after one `pgbench -i`: pgbench's
/// step before each run (the branches and tellers vacuumed where the server has dead rows to
/// reclaim, the history emptied, its deltas kept in a total of loadrig's own for the check).
fn again_on_the_same_tables(
    d: &Dir,
    name: &str,
    url: &str,
    clients: &str,
    row: &dyn Fn(&str) -> Vec<i64>,
    before: &[i64],
) {
    const AGAIN: i64 = 80;
    let more = ["--seed", "6", "--skip-load", "-o", "s.json"];
    let out = d.run_ops(name, url, &AGAIN.to_string(), clients, &more);
    let r = d.result("s.json");
    assert!(r.setup.is_none(), "{name}: --skip-load sets nothing up");
    let select_only = name == "pgbench-select-only";
    let steps = r.before_run.as_ref().expect("before_run record");
    let vacuumed = if url.starts_with("postgres") { 2 } else { 0 };
    assert_eq!(
        (steps.vacuumed, steps.emptied, steps.statements),
        (vacuumed, 1, 1),
        "{name}"
    );
    assert!(out.contains("before the run: "), "{out}");
    let after = row(SUMS);
    // The history holds this run's transactions only.
    assert_eq!(after[4], if select_only { 0 } else { AGAIN }, "{name}");
    // What the balances gained is exactly this run's deltas, the history's sum now.
    let gained: Vec<i64> = (0..3).map(|i| after[i] - before[i]).collect();
    // The first run's history went into the total before it was emptied.
    let emptied = row("SELECT delta_sum FROM loadrig_pgbench_history_emptied")[0];
    assert_eq!(emptied, before[3], "{name}");
    if select_only {
        assert_eq!(gained, [0, 0, 0], "{name}");
        return;
    }
    let history = after[3] + emptied;
    if name == "pgbench-tpcb" {
        assert_eq!(gained, [after[3]; 3], "{name}: {before:?} then {after:?}");
        assert_eq!(after[..3], [history; 3], "{name}");
        assert_eq!(r.verify[0].values, vec![history.to_string(); 4]);
    } else {
        assert_eq!(
            gained,
            [after[3], 0, 0],
            "{name}: {before:?} then {after:?}"
        );
        assert_eq!(r.verify[0].values, vec![history.to_string(); 2]);
    }
    assert!(r.verify[0].passed, "{:?}", r.verify);
}

/// The tpcb-like workload with one more operation that moves an account's balance alone:
/// pgbench's check must then fail the run.
fn broken_tpcb(d: &Dir) -> std::path::PathBuf {
    let text = d.ok(&["init", "pgbench-tpcb"]);
    d.write(
        "broken.toml",
        &format!(
            "{text}\n[[op]]\nname = \"skew\"\nsql = {{ query = \"UPDATE loadrig_pgbench_accounts SET abalance = abalance + 7 WHERE aid = 1\" }}\n"
        ),
    )
}

fn check_fails(url: &str) {
    let d = Dir::new();
    let broken = broken_tpcb(&d);
    let broken = broken.to_str().unwrap();
    // The tpcb-like transactions alone leave the balances consistent...
    d.ok(&[
        "run",
        broken,
        "--target",
        url,
        "--op",
        "tpcb-like",
        "--ops",
        "20",
        "-o",
        "ok.json",
    ]);
    assert!(d.result("ok.json").verify[0].passed);
    // ...three lone account updates do not: exit 1, the values and a note in the result.
    let (stdout, _) = d.code(
        1,
        &[
            "run", broken, "--target", url, "--op", "skew", "--ops", "3", "-o", "bad.json",
        ],
    );
    assert!(
        stdout.contains("verify balances: FAILED (21 / 0 / 0 / 0)"),
        "{stdout}"
    );
    let r = d.result("bad.json");
    assert!(!r.verify[0].passed);
    assert_eq!(r.verify[0].values, ["21", "0", "0", "0"]);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("verify 'balances' failed")),
        "{:?}",
        r.notes
    );
}

#[test]
fn builtins_on_sqlite() {
    let d = Dir::new();
    let db = d.join("pgbench.db");
    let url = format!("sqlite://{}", db.display());
    every_builtin(&url, "1", &|sql| ints(sqlite_row(&db, sql)));
    check_fails(&url);
}

#[test]
fn builtins_on_postgres() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    every_builtin(&url, "4", &|sql| ints(pg_row(&url, sql)));
    // The load was vacuumed and analyzed before the measured run, as pgbench -i does.
    let settled = ints(pg_row(
        &url,
        "SELECT COUNT(*) FROM pg_stat_user_tables WHERE relname LIKE 'loadrig|_pgbench|_%' ESCAPE '|' \
         AND last_vacuum IS NOT NULL AND last_analyze IS NOT NULL",
    ));
    assert_eq!(
        settled,
        [5],
        "the four tables and the history's emptied total"
    );
    check_fails(&url);
}

/// MariaDB takes the same statements: the target turns `$N` into `?`.
#[test]
fn builtins_on_mariadb() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    every_builtin(&url, "4", &|sql| ints(mysql_row(&url, sql)));
    check_fails(&url);
}

/// `loadrig ops`: a transaction's values are drawn once and used in every statement, within
/// pgbench's ranges; and a run with the same seed stores exactly those values.
#[test]
fn a_transaction_draws_its_values_once() {
    let d = Dir::new();
    let out = d.ok(&[
        "ops",
        "pgbench-tpcb",
        "--count",
        "3",
        "--seed",
        "9",
        "--json",
    ]);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let mut expected = Vec::new();
    for line in &lines {
        let steps = line["steps"].as_array().unwrap();
        let args: Vec<Vec<i64>> = steps
            .iter()
            .map(|s| {
                s["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_i64().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(steps.len(), 5);
        let (delta, aid) = (args[0][0], args[0][1]);
        let (tid, bid) = (args[2][1], args[3][1]);
        assert_eq!(
            args[1],
            [aid],
            "the SELECT reads the account the UPDATE changed"
        );
        assert_eq!((args[2][0], args[3][0]), (delta, delta));
        assert_eq!(args[4], [tid, bid, aid, delta]);
        assert!((1..=100_000).contains(&aid) && (1..=10).contains(&tid) && bid == 1);
        assert!((-5000..=5000).contains(&delta));
        expected.push(args[4].clone());
    }
    // Drawn per transaction, not once per run.
    assert!(expected[0] != expected[1] || expected[1] != expected[2]);

    let db = d.join("p.db");
    let url = format!("sqlite://{}", db.display());
    d.ok(&[
        "run",
        "pgbench-tpcb",
        "--target",
        &url,
        "--ops",
        "3",
        "--seed",
        "9",
        "-o",
        "r.json",
    ]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut st = conn
        .prepare("SELECT tid, bid, aid, delta FROM loadrig_pgbench_history ORDER BY rowid")
        .unwrap();
    let stored: Vec<Vec<i64>> = st
        .query_map([], |r| (0..4).map(|i| r.get(i)).collect())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(stored, expected);
}

/// `--set scale=2` loads pgbench's sizes for two branches.
#[test]
fn scale_sets_the_sizes() {
    let d = Dir::new();
    let db = d.join("s.db");
    let url = format!("sqlite://{}", db.display());
    d.ok(&[
        "run",
        "pgbench-select-only",
        "--target",
        &url,
        "--set",
        "scale=2",
        "--ops",
        "10",
        "-o",
        "r.json",
    ]);
    assert_eq!(&ints(sqlite_row(&db, SUMS))[5..], &[200_000, 20, 2]);
    let bids = ints(sqlite_row(
        &db,
        "SELECT COUNT(DISTINCT bid), MIN(bid), MAX(bid) FROM loadrig_pgbench_accounts",
    ));
    assert_eq!(bids, [2, 1, 2]);
}

/// What the pgbench built-ins added to the workload language, and its mistakes (exit 2).
#[test]
fn let_verify_and_setup_in_workload_files() {
    let d = Dir::new();
    let w = |body: &str| {
        d.write(
            "w.toml",
            &format!("name = \"w\"\n{body}\n[params]\nn = 4\n\n[[op]]\nname = \"get\"\nlet = {{ k = \"{{uniform 0..n*2}}\" }}\nkv.put = {{ key = \"k{{k}}\", value = \"v{{k}}\" }}\n"),
        )
    };
    // A let value is drawn once per operation and shared by its key and value.
    w("");
    let out = d.ok(&["ops", "w.toml", "--count", "20", "--json"]);
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = v["key"].as_str().unwrap();
        assert_eq!(v["args"][1].as_str().unwrap(), key.replacen('k', "v", 1));
        assert!((0..8).contains(&key[1..].parse::<i64>().unwrap()), "{key}");
    }
    let cases = [
        (
            "setup = [\"CREATE TABLE loadrig_x (v INTEGER) -- {uniform 0..3}\"]",
            "setup statements may use {parameters} but no generators",
        ),
        (
            "setup = [\"CREATE TABLE loadrig_{nope} (v INTEGER)\"]",
            "unknown generator or parameter 'nope'",
        ),
        (
            "[[verify]]\nname = \"one\"\nsql = [\"SELECT 1 FROM loadrig_x\"]\n",
            "verify 'one' needs at least two queries",
        ),
    ];
    for (body, message) in cases {
        // [[verify]] must follow the other tables: put it after the operation.
        let text = if body.starts_with("[[verify]]") {
            std::fs::read_to_string(w("")).unwrap() + "\n" + body
        } else {
            std::fs::read_to_string(w(body)).unwrap()
        };
        d.write("w.toml", &text);
        let (_, stderr) = d.code(2, &["ops", "w.toml"]);
        assert!(stderr.contains(message), "{body}: {stderr}");
    }
    let clash = std::fs::read_to_string(w(""))
        .unwrap()
        .replace("k = ", "n = ");
    d.write("w.toml", &clash);
    let (_, stderr) = d.code(2, &["ops", "w.toml"]);
    assert!(
        stderr.contains("capture name 'n' is also a parameter"),
        "{stderr}"
    );
}

/// A retried operation draws its `let` values again: a transaction that only commits for
/// v = 1 always ends committed, after retries, where a value kept across retries would fail.
#[test]
fn a_retry_draws_let_values_again() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "redraw"
setup = [
  "DROP TABLE IF EXISTS loadrig_redraw",
  "CREATE TABLE loadrig_redraw (n INTEGER, v INTEGER CHECK (v = 1))",
]

[[op]]
name = "insert"
let = { v = "{uniform 0..2}" }
retry = { on = ["constraint"], max = 60, backoff = "1us" }
tx = [
  { sql = { query = "INSERT INTO loadrig_redraw (n, v) VALUES (1, $1)", params = ["{v}"] } },
]
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./r.db",
        "--ops",
        "40",
        "--seed",
        "3",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors), (40, 0));
    // Half the draws are 0: with 40 operations some were retried (probability 1 - 2^-40).
    assert!(op.retries > 0);
    assert_eq!(
        ints(sqlite_row(
            &d.join("r.db"),
            "SELECT COUNT(*), MIN(v) FROM loadrig_redraw"
        )),
        [40, 1]
    );
}
