//! PostgreSQL sessions on loadrig's own extended-protocol client (what the engine's client
//! loop runs `tx` steps, captures and conditions on over plain TCP), on the throwaway server:
//! the same captured values and conditions as on tokio-postgres (`client=tokio-postgres`),
//! a server error inside a transaction rolled back without a cascade, terminated connections
//! replaced, BEGIN and COMMIT prepared, and rigs started together all set up (with and
//! without attachments).
//! The `builtin_pgbench` tests run pgbench's tpcb-like (balances and transaction counts)
//! through it.

use crate::common::locks::{hold, Shared};
use crate::common::sql::{ints, pg_row, terminate_run_backends};
use crate::common::{server_url, Dir};
use loadrig::vocab::ErrorClass;

fn with_option(url: &str, option: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{option}")
}

/// 20 rows of assorted types (NULLs in every fifth), and an empty log.
fn capture_tables(url: &str) {
    pg_row(
        url,
        "DROP TABLE IF EXISTS loadrig_sess_src, loadrig_sess_log",
    );
    pg_row(
        url,
        "CREATE TABLE loadrig_sess_src (id INT PRIMARY KEY, v INT, d DATE, b BYTEA, \
         n NUMERIC, ts TIMESTAMP, f FLOAT8, iv INTERVAL, t TEXT)",
    );
    pg_row(
        url,
        "INSERT INTO loadrig_sess_src SELECT i, i, DATE '2024-02-27' + i, \
         decode(lpad(to_hex(i * 7919), 6, '0'), 'hex'), i / 7.0, \
         TIMESTAMP '2024-12-31 23:59:58.25' + i * INTERVAL '1 second', i / 3.0, \
         i * INTERVAL '1 day 2 hours', CASE WHEN i % 5 = 0 THEN NULL ELSE 'row ' || i END \
         FROM generate_series(1, 20) i",
    );
    pg_row(
        url,
        "CREATE TABLE loadrig_sess_log (id INT, v TEXT, d TEXT, b BYTEA, n TEXT, ts TEXT, \
         f TEXT, iv TEXT, t TEXT, big TEXT, branch TEXT)",
    );
}

const PROBE: &str = r#"
name = "probe"
[[op]]
name = "probe"
let = { id = "{uniform 1..21}" }
tx = [
  { sql = { query = "SELECT v, d, b, n, ts, f, iv, t FROM loadrig_sess_src WHERE id = $1", params = ["{id}"] }, capture = ["v", "d", "b", "n", "ts", "f", "iv", "t"] },
  { sql = { query = "UPDATE loadrig_sess_src SET v = v WHERE id = $1 AND v > 10", params = ["{id}"] }, capture = ["big"] },
  { sql = { query = "INSERT INTO loadrig_sess_log VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'big')", params = ["{id}", "{v}", "{d}", "{b}", "{n}", "{ts}", "{f}", "{iv}", "{t}", "{big}"] }, when = "big" },
  { sql = { query = "INSERT INTO loadrig_sess_log VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'small')", params = ["{id}", "{v}", "{d}", "{b}", "{n}", "{ts}", "{f}", "{iv}", "{t}", "{big}"] }, when = "!big" },
]
"#;

/// The log of 80 probes through `target` with seed 7, as rows of text.
fn probe_log(url: &str, target: &str) -> Vec<String> {
    pg_row(url, "TRUNCATE loadrig_sess_log");
    let d = Dir::new();
    d.write("w.toml", PROBE);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        target,
        "--clients",
        "1",
        "--ops",
        "80",
        "--seed",
        "7",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (80, 0));
    pg_row(
        url,
        "SELECT string_agg(concat_ws('|', id, v, d, encode(b, 'hex'), n, ts, f, iv, \
         coalesce(t, '<null>'), big, branch), E'\\n' ORDER BY id, branch) FROM loadrig_sess_log",
    )
}

#[test]
fn captures_and_conditions_match_tokio_postgres() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    capture_tables(&url);
    let tokio = probe_log(&url, &with_option(&url, "client=tokio-postgres"));
    let own = probe_log(&url, &url);
    assert_eq!(own, tokio);
    let lines: Vec<&str> = own[0].lines().collect();
    assert_eq!(lines.len(), 80, "one log row per probe");
    // Every captured value is what the server's output function prints (NULL as empty),
    // and the branch taken is the one the value calls for.
    let wrong = ints(pg_row(
        &url,
        "SELECT count(*) FROM loadrig_sess_log l JOIN loadrig_sess_src s USING (id) \
         WHERE (l.v, l.d, l.b, l.n, l.ts, l.f, l.iv, l.t, l.big, l.branch) IS DISTINCT FROM \
         (s.v::text, s.d::text, s.b, s.n::text, s.ts::text, s.f::text, s.iv::text, \
          coalesce(s.t, ''), (s.v > 10)::int::text, CASE WHEN s.v > 10 THEN 'big' ELSE 'small' END)",
    ));
    assert_eq!(wrong, vec![0], "{own:?}");
    let branches = ints(pg_row(
        &url,
        "SELECT count(DISTINCT branch), count(*) FILTER (WHERE t = '') FROM loadrig_sess_log",
    ));
    assert_eq!(branches[0], 2, "both branches taken");
    assert!(branches[1] > 0, "a NULL captured");
    pg_row(&url, "DROP TABLE loadrig_sess_src, loadrig_sess_log");
}

#[test]
fn begin_and_commit_are_prepared_statements_as_pgbench_m_prepared_sends_them() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    pg_row(&url, "DROP TABLE IF EXISTS loadrig_sess_prep");
    pg_row(&url, "CREATE TABLE loadrig_sess_prep (statement TEXT)");
    let d = Dir::new();
    // Each transaction logs what its own session has prepared of BEGIN and COMMIT: BEGIN
    // from the first one on (prepared before it runs), COMMIT from the second.
    d.write(
        "w.toml",
        r#"
name = "prep"
[[op]]
name = "prep"
tx = [
  { sql = { query = "INSERT INTO loadrig_sess_prep SELECT statement FROM pg_prepared_statements WHERE statement IN ('BEGIN', 'COMMIT', 'BEGIN ISOLATION LEVEL SERIALIZABLE')" } },
]
"#,
    );
    for (target, begin) in [
        (url.clone(), "BEGIN"),
        (
            with_option(&url, "isolation=serializable"),
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
        ),
    ] {
        pg_row(&url, "TRUNCATE loadrig_sess_prep");
        d.run_ops("w.toml", &target, "3", "1", &["-o", "r.json"]);
        let r = d.result("r.json");
        assert_eq!((r.total.ok, r.total.errors), (3, 0));
        let seen = pg_row(
            &url,
            "SELECT string_agg(statement || ':' || n, ',' ORDER BY statement) FROM \
             (SELECT statement, count(*) AS n FROM loadrig_sess_prep GROUP BY statement) s",
        );
        assert_eq!(seen, vec![format!("{begin}:3,COMMIT:2")], "{begin}");
    }
    pg_row(&url, "DROP TABLE loadrig_sess_prep");
}

#[test]
fn rigs_started_together_on_a_database_without_loadrig_kv_all_set_up() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let workload = "name = \"one\"\n[[op]]\nname = \"one\"\nsql = \"SELECT 1\"\n";
    let drop = "DROP TABLE IF EXISTS loadrig_kv";
    rigs_started_together_all_set_up(&url, &url, workload, drop);
}

#[test]
fn rigs_started_together_with_attachments_all_set_up_the_documents_table() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    // Documents with attachments run on tokio-postgres and create loadrig_documents
    // beside loadrig_kv; its CREATE raced the same way until it went under the same lock.
    // A put inserts, so each run puts keys of its own (a seed of its own).
    let workload = "name = \"put\"\n[[op]]\nname = \"put\"\n\
                    kv.put = { key = \"k{uniform 0..1000000000}\", value = \"{{\\\"a\\\": 1}}\" }\n";
    // The attachments are large objects outside the table: unlink them before it goes.
    let drop = "DO $$ BEGIN IF to_regclass('loadrig_documents') IS NOT NULL THEN \
                PERFORM lo_unlink(attachment) FROM loadrig_documents; END IF; END $$; \
                DROP TABLE IF EXISTS loadrig_documents, loadrig_kv";
    let target = with_option(&url, "attachment_size=1000");
    rigs_started_together_all_set_up(&url, &target, workload, drop);
    pg_row(&url, drop);
}

/// Five rounds of four runs of `workload` on `target` started at once, each round after
/// `drop` on `url`, whose setups all create their tables at once: without the setup's lock,
/// two of them missed a table together about half the time and one failed on the catalog's
/// unique index.
fn rigs_started_together_all_set_up(url: &str, target: &str, workload: &str, drop: &str) {
    let d = Dir::new();
    d.write("w.toml", workload);
    for round in 0..5 {
        pg_row(url, drop);
        let runs: Vec<_> = (0..4)
            .map(|k| {
                let (out, seed) = (format!("r{k}.json"), k.to_string());
                d.spawn(&[
                    "run",
                    "w.toml",
                    "--target",
                    target,
                    "--ops",
                    "2",
                    "--clients",
                    "1",
                    "--seed",
                    &seed,
                    "-o",
                    &out,
                ])
            })
            .collect();
        for (k, run) in runs.into_iter().enumerate() {
            let done = run.wait_with_output().unwrap();
            assert!(
                done.status.success(),
                "round {round}, run {k}: {}",
                String::from_utf8_lossy(&done.stderr)
            );
            assert_eq!(d.result(&format!("r{k}.json")).total.ok, 2);
        }
    }
}

#[test]
fn a_unique_violation_inside_a_transaction_rolls_it_back_and_the_run_goes_on() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    pg_row(
        &url,
        "DROP TABLE IF EXISTS loadrig_sess_dup, loadrig_sess_seen",
    );
    pg_row(&url, "CREATE TABLE loadrig_sess_dup (k INT PRIMARY KEY)");
    pg_row(&url, "CREATE TABLE loadrig_sess_seen (k INT)");
    let d = Dir::new();
    // 200 transactions on 30 keys: the first insert of each key commits both rows; every
    // later one fails at its second statement, which must roll back its first.
    d.write(
        "w.toml",
        r#"
name = "dup"
[[op]]
name = "dup"
let = { k = "{uniform 0..30}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_sess_seen VALUES ($1)", params = ["{k}"] } },
  { sql = { query = "INSERT INTO loadrig_sess_dup VALUES ($1)", params = ["{k}"] } },
  { sql = { query = "SELECT 1" } },
]
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "2",
        "--ops",
        "200",
        "--seed",
        "5",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = &r.operations[0];
    let row = ints(pg_row(
        &url,
        "SELECT (SELECT count(*) FROM loadrig_sess_dup), (SELECT count(*) FROM loadrig_sess_seen)",
    ));
    assert_eq!(
        row[0] as u64, op.ok,
        "every committed transaction is one key"
    );
    assert_eq!(row[1], row[0], "nothing of a failed transaction stayed");
    assert_eq!(op.ok + op.errors, 200);
    assert!(op.errors > 100, "{} errors", op.errors);
    assert_eq!(
        op.errors_by_class.get(&ErrorClass::Constraint).copied(),
        Some(op.errors),
        "only unique violations, no 'current transaction is aborted': {:?}",
        op.errors_by_class
    );
    pg_row(&url, "DROP TABLE loadrig_sess_dup, loadrig_sess_seen");
}

#[test]
fn terminated_sessions_are_replaced_and_the_run_ends_normally() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let app = "loadrig_sess_terminate";
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "tx"
[[op]]
name = "tx"
let = { x = "{uniform 1..100}" }
tx = [
  { sql = { query = "SELECT $1::int", params = ["{x}"] }, capture = ["y"] },
  { sql = { query = "SELECT $1::int + 1", params = ["{y}"] } },
]
"#,
    );
    let child = d.spawn(&[
        "run",
        "w.toml",
        "--target",
        &with_option(&url, &format!("application_name={app}")),
        "--clients",
        "2",
        "--duration",
        "3s",
        "-o",
        "r.json",
    ]);
    let (r, killed) = terminate_run_backends(&d, child, &url, app, "SELECT $1::int%", 2);
    assert!(r.total.errors >= 1 && r.total.errors <= killed as u64);
}

#[test]
fn an_unknown_client_exits_2_naming_the_choices() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", PROBE);
    let (_, stderr) = d.code(
        2,
        &[
            "run",
            "w.toml",
            "--target",
            &with_option(&url, "client=libpq"),
            "--ops",
            "1",
        ],
    );
    assert!(
        stderr.contains("client=libpq: expected loadrig (the default) or tokio-postgres"),
        "{stderr}"
    );
    assert!(!d.join("r.json").exists());
}
