//! The embedded targets leave exactly the records a workload says, in the layout configured.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::{Dir, PUT_ONLY};

fn sqlite_keys(db: &Path) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT k, length(v) FROM loadrig_kv ORDER BY k")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn sqlite_put_workload_leaves_exactly_the_records() {
    let d = Dir::new();
    d.write("w.toml", PUT_ONLY);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--clients",
        "4",
        "--ops",
        "1001",
        "-o",
        "r.json",
    ]);
    let rows = sqlite_keys(&d.join("t.db"));
    assert_eq!(rows.len(), 1001);
    let keys: BTreeSet<String> = rows.iter().map(|(k, _)| k.clone()).collect();
    let expected: BTreeSet<String> = (0..1001).map(|i| format!("r{i}")).collect();
    assert_eq!(
        keys, expected,
        "the clients' sequences interleave without gaps or repeats"
    );
    assert!(rows.iter().all(|(_, len)| *len == 100));
    let r = d.result("r.json");
    assert_eq!(r.total.rows, 1001);
    assert!(r
        .target
        .server_version
        .as_deref()
        .unwrap()
        .starts_with("SQLite 3."));
}

#[test]
fn sqlite_data_load_then_deletes_remove_exactly_those_keys() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "load-then-delete"
[params]
records = 500
[data]
count = "{records}"
key = "k{seq}"
value = "{string 10}"
batch = 64
[[op]]
name = "delete"
kv.delete = { key = "k{seq}" }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--clients",
        "2",
        "--ops",
        "200",
        "-o",
        "r.json",
    ]);
    let keys: BTreeSet<String> = sqlite_keys(&d.join("t.db"))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let expected: BTreeSet<String> = (200..500).map(|i| format!("k{i}")).collect();
    assert_eq!(keys, expected);
    let r = d.result("r.json");
    assert_eq!(r.total.rows, 200, "each delete found its record");
    let load = r.data_load.unwrap();
    assert_eq!(load.records, 500);
    assert!(!load.skipped);

    // --skip-load reuses what is there: deleting again finds nothing under k0..k199.
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "100",
        "--skip-load",
        "-o",
        "r2.json",
    ]);
    let r2 = d.result("r2.json");
    assert_eq!(r2.total.rows, 0);
    assert!(r2.data_load.unwrap().skipped);
}

#[test]
fn sqlite_leaves_other_tables_alone() {
    let d = Dir::new();
    let db = d.join("t.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (42);")
            .unwrap();
    }
    d.write("w.toml", PUT_ONLY);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "10",
        "-o",
        "r.json",
    ]);
    let c = rusqlite::Connection::open(&db).unwrap();
    let x: i64 = c.query_row("SELECT x FROM mine", [], |r| r.get(0)).unwrap();
    assert_eq!(x, 42);
}

fn files_under(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn fs_sharded_layout_puts_each_file_under_its_prefix() {
    let d = Dir::new();
    std::fs::create_dir(d.join("s")).unwrap();
    d.write("s/mine.txt", "not loadrig's");
    d.write("w.toml", PUT_ONLY);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "fs://./s",
        "--set",
        "size=64",
        "--clients",
        "3",
        "--ops",
        "300",
        "-o",
        "r.json",
    ]);
    // Without shards the layout is flat.
    let root = d.join("s/loadrig_kv");
    let files = files_under(&root);
    assert_eq!(files.len(), 300);
    assert!(files.iter().all(|f| f.parent().unwrap() == root));

    let d = Dir::new();
    std::fs::create_dir(d.join("s")).unwrap();
    d.write("s/mine.txt", "not loadrig's");
    // The fs target reads `shards` from a workload parameter when the URL does not set it.
    d.write(
        "w.toml",
        &PUT_ONLY.replace("size = 100", "size = 100\nshards = 1"),
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "fs://./s",
        "--set",
        "shards=256",
        "--clients",
        "3",
        "--ops",
        "300",
        "-o",
        "r.json",
    ]);
    let root = d.join("s/loadrig_kv");
    let dirs: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(dirs.len(), 256);
    assert!(dirs
        .iter()
        .all(|n| n.len() == 2 && n.chars().all(|c| c.is_ascii_hexdigit())));
    let files = files_under(&root);
    assert_eq!(files.len(), 300);
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let shard = f.parent().unwrap().file_name().unwrap().to_str().unwrap();
        assert_eq!(&name[..2], shard);
        assert_eq!(std::fs::metadata(f).unwrap().len(), 100);
    }
    let expected: BTreeSet<_> = (0..300)
        .map(|i| loadrig::targets::fs::file_for(&root, 2, &format!("r{i}")))
        .collect();
    assert_eq!(files.into_iter().collect::<BTreeSet<_>>(), expected);
    assert_eq!(
        std::fs::read_to_string(d.join("s/mine.txt")).unwrap(),
        "not loadrig's"
    );
}

#[test]
fn fs_sync_each_and_batch_write_the_same_records() {
    for sync in ["each", "batch"] {
        let d = Dir::new();
        d.write("w.toml", PUT_ONLY);
        let target = format!("fs://./s?shards=16&sync={sync}&batch=10");
        d.ok(&[
            "run", "w.toml", "--target", &target, "--ops", "50", "-o", "r.json",
        ]);
        assert_eq!(
            files_under(&d.join("s/loadrig_kv")).len(),
            50,
            "sync={sync}"
        );
    }
}

#[test]
fn session_store_runs_on_both_embedded_targets() {
    let d = Dir::new();
    let out = d.ok(&[
        "run",
        "session-store",
        "--set",
        "records=2000",
        "--duration",
        "1s",
        "--interval",
        "250ms",
        "-o",
        "a.json",
    ]);
    assert!(out.contains("loaded 2,000 records"));
    let rows = sqlite_keys(&d.join("loadrig-sessions.db"));
    assert!(
        rows.len() >= 1500,
        "loaded sessions are there, less the expired ones"
    );
    let r = d.result("a.json");
    let names: Vec<&str> = r.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["create", "read", "touch", "expire"]);
    assert!(r.operations.iter().all(|o| o.ok > 0 && o.errors == 0));

    d.ok(&[
        "run",
        "session-store",
        "--target",
        "fs://./sessions",
        "--set",
        "shards=256",
        "--set",
        "records=1000",
        "--duration",
        "1s",
        "-o",
        "b.json",
    ]);
    assert_eq!(
        std::fs::read_dir(d.join("sessions/loadrig_kv"))
            .unwrap()
            .count(),
        256
    );
    assert!(d.result("b.json").total.ok > 0);
}

#[test]
fn same_seed_same_operation_sequence() {
    let w = r#"
name = "random-keys"
[[op]]
name = "put"
kv.put = { key = "k{uniform 0..1000000000}", value = "{string 8}" }
"#;
    let run = |seed: &str, db: &str| {
        let d = Dir::new();
        d.write("w.toml", w);
        d.ok(&[
            "run",
            "w.toml",
            "--target",
            &format!("sqlite://./{db}"),
            "--ops",
            "200",
            "--seed",
            seed,
            "-o",
            "r.json",
        ]);
        let c = rusqlite::Connection::open(d.join(db)).unwrap();
        let mut st = c
            .prepare("SELECT k || ':' || v FROM loadrig_kv ORDER BY k")
            .unwrap();
        st.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect::<Vec<_>>()
    };
    let a = run("42", "a.db");
    assert_eq!(a.len(), 200);
    assert_eq!(a, run("42", "b.db"));
    assert_ne!(a, run("43", "c.db"));
}

const BANK: &str = r#"
name = "bank"
description = "read-modify-write transfers: captures and transactions"
setup = [
  "CREATE TABLE IF NOT EXISTS loadrig_acct (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)",
  "INSERT OR IGNORE INTO loadrig_acct VALUES (1, 1000), (2, 1000)",
]

[[op]]
name = "transfer"
retry = { on = ["timeout"], max = 10, backoff = "1ms" }
tx = [
  { sql = { query = "SELECT balance FROM loadrig_acct WHERE id = 1" }, capture = ["b1"] },
  { sql = { query = "UPDATE loadrig_acct SET balance = ?1 - 1 WHERE id = 1", params = ["{b1}"] } },
  { sql = { query = "UPDATE loadrig_acct SET balance = balance + 1 WHERE id = 2" } },
]
"#;

#[test]
fn sql_transactions_pass_captured_values_between_steps() {
    let d = Dir::new();
    d.write("bank.toml", BANK);
    d.ok(&[
        "run",
        "bank.toml",
        "--target",
        "sqlite://./t.db",
        "--clients",
        "2",
        "--ops",
        "200",
        "-o",
        "r.json",
    ]);
    let c = rusqlite::Connection::open(d.join("t.db")).unwrap();
    let balance = |id: i64| -> i64 {
        c.query_row(
            "SELECT balance FROM loadrig_acct WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    // Each transfer read the balance and wrote it back minus one: lost updates would show.
    assert_eq!(balance(1), 800);
    assert_eq!(balance(2), 1200);
    let r = d.result("r.json");
    assert_eq!(r.total.ok, 200);
    assert_eq!(r.total.errors, 0);
    assert_eq!(r.workload.ops[0].kind, "tx");
}

#[test]
fn cleanup_removes_exactly_the_loadrig_namespace() {
    let d = Dir::new();
    {
        let c = rusqlite::Connection::open(d.join("t.db")).unwrap();
        c.execute_batch("CREATE TABLE mine (x); CREATE TABLE loadrigx (y);")
            .unwrap();
    }
    d.write("bank.toml", BANK);
    d.write("w.toml", PUT_ONLY);
    d.ok(&[
        "run",
        "bank.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "5",
        "-o",
        "r.json",
    ]);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "5",
        "-o",
        "r.json",
    ]);
    let out = d.ok(&["cleanup", "--target", "sqlite://./t.db"]);
    assert!(out.contains("removed 2 loadrig object(s)"), "{out}");
    let c = rusqlite::Connection::open(d.join("t.db")).unwrap();
    let mut st = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    let tables: Vec<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(tables, ["loadrigx", "mine"]);

    std::fs::create_dir(d.join("s")).unwrap();
    d.write("s/mine.txt", "keep");
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "fs://./s?shards=16",
        "--ops",
        "20",
        "-o",
        "r.json",
    ]);
    let out = d.ok(&["cleanup", "--target", "fs://./s"]);
    assert!(out.contains("removed 20 loadrig object(s)"), "{out}");
    assert!(!d.join("s/loadrig_kv").exists());
    assert_eq!(
        std::fs::read_to_string(d.join("s/mine.txt")).unwrap(),
        "keep"
    );
}

#[test]
fn per_op_connections_and_connect_operations_run() {
    let d = Dir::new();
    d.write("w.toml", PUT_ONLY);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--connection",
        "per-op",
        "--ops",
        "50",
        "-o",
        "r.json",
    ]);
    assert_eq!(sqlite_keys(&d.join("t.db")).len(), 50);
    d.write(
        "c.toml",
        "name = \"c\"\n[[op]]\nname = \"connect\"\nconnect = {}\n",
    );
    d.ok(&[
        "run",
        "c.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "30",
        "-o",
        "c.json",
    ]);
    let r = d.result("c.json");
    assert_eq!(r.total.ok, 30);
    assert_eq!(r.workload.ops[0].kind, "connect");
}

#[test]
fn native_operations_need_a_target_that_runs_them() {
    let d = Dir::new();
    d.write("bank.toml", BANK);
    let out = d.loadrig(&["run", "bank.toml", "--target", "fs://./s", "--ops", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("operation 'transfer' uses sql, which fs:// targets do not run"),
        "{err}"
    );
    // noop:// runs everything: a dry run of the harness.
    d.ok(&[
        "run",
        "bank.toml",
        "--target",
        "noop://",
        "--ops",
        "5",
        "-o",
        "r.json",
    ]);
    let out = d.loadrig(&[
        "run",
        "bank.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "5",
    ]);
    assert!(out.status.success());
    d.write(
        "bad.toml",
        &BANK.replace("loadrig_acct VALUES", "accounts VALUES"),
    );
    let out = d.loadrig(&[
        "run",
        "bad.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("setup statements may only create objects named loadrig_"));
    // A statement that mentions loadrig_ but creates an object outside it is refused too.
    d.write(
        "index.toml",
        &BANK.replace(
            "  \"INSERT OR IGNORE",
            "  \"CREATE INDEX k_1 ON loadrig_acct (balance)\",\n  \"INSERT OR IGNORE",
        ),
    );
    let (_, stderr) = d.code(2, &["ops", "index.toml"]);
    assert!(
        stderr
            .contains("setup statements may only create objects named loadrig_... ('k_1' is not)"),
        "{stderr}"
    );
}

/// `before_run` steps vacuum and empty tables: a target without tables refuses the workload
/// before it touches anything, and on SQLite `empty` leaves the table there, empty.
#[test]
fn before_run_empties_on_sqlite_and_is_refused_where_there_are_no_tables() {
    let d = Dir::new();
    d.write(
        "w.toml",
        "name = \"w\"\nbefore_run = [{ vacuum = \"loadrig_kv\" }, { empty = \"loadrig_kv\" }]\n\
         [[op]]\nname = \"put\"\nkv.put = { key = \"k{seq}\", value = \"v\" }\n",
    );
    let (_, stderr) = d.code(
        2,
        &["run", "w.toml", "--target", "fs://./files", "--ops", "3"],
    );
    assert!(
        stderr.contains("operation 'before_run' uses sql, which fs:// targets do not run"),
        "{stderr}"
    );
    assert!(!d.join("files").exists(), "nothing made");
    for ops in ["7", "4"] {
        let out = d.run_ops("w.toml", "sqlite://./t.db", ops, "1", &["-o", "r.json"]);
        // SQLite has no dead rows to vacuum: only the table emptied counts.
        assert!(
            out.contains("before the run: emptied 1 table(s) in "),
            "{out}"
        );
        assert_eq!(
            d.sqlite_count("SELECT COUNT(*) FROM loadrig_kv"),
            ops.parse::<i64>().unwrap()
        );
    }
    let r = d.result("r.json");
    let steps = r.before_run.expect("before_run record");
    assert_eq!((steps.vacuumed, steps.emptied), (0, 1));
}

/// Every record in `loadrig_kv` of a redb file, read with the crate directly: key → value length.
fn dbm_records(file: &Path) -> std::collections::BTreeMap<String, usize> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::create(file).unwrap();
    let tx = db.begin_read().unwrap();
    let table = tx.open_table(loadrig::targets::dbm::TABLE).unwrap();
    table
        .iter()
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.value().to_string(), v.value().len())
        })
        .collect()
}

/// A load of 600 records then 300 mixed operations on `target`, checked record by record.
fn dbm_mixed_run_has_exact_effects(d: &Dir, target: &str, file: &str) {
    d.write("w.toml", &common::mixed_kv(600, 128, true));
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        target,
        "--clients",
        "3",
        "--ops",
        "300",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    assert_eq!((r.total.ok, r.total.errors), (300, 0), "{target}");
    let (gets, puts, updates, deletes) = (op("get"), op("put"), op("update"), op("delete"));
    assert_eq!(gets.rows, gets.ok, "every get found its key");
    assert_eq!(puts.rows, puts.ok);
    assert_eq!(updates.rows, updates.ok, "every update found its key");
    assert_eq!(deletes.rows, deletes.ok, "every delete removed one key");
    assert_eq!(
        op("missing").rows,
        0,
        "a missing key is 0 rows, not an error"
    );
    assert_eq!(r.data_load.as_ref().unwrap().records, 600);
    assert_eq!(
        r.target.server_version.as_deref(),
        Some(loadrig::targets::dbm::ENGINE)
    );

    // Clients take `seq` values in turn, so which keys went is known by count and range.
    let records = dbm_records(&d.join(file));
    let k: std::collections::BTreeMap<u64, usize> = records
        .iter()
        .filter_map(|(key, len)| Some((key.strip_prefix('k')?.parse().ok()?, *len)))
        .collect();
    let n: Vec<usize> = records
        .iter()
        .filter(|(key, _)| key.starts_with('n'))
        .map(|(_, len)| *len)
        .collect();
    assert_eq!(
        records.len(),
        k.len() + n.len(),
        "{target}: only k and n keys"
    );
    assert_eq!(n.len() as u64, puts.ok);
    assert!(!n.is_empty(), "{target}: some puts ran");
    assert!(n.iter().all(|len| *len == 50));
    assert_eq!(k.len() as u64, 600 - deletes.ok);
    assert_eq!(
        (0..300).filter(|i| !k.contains_key(i)).count() as u64,
        deletes.ok
    );
    let updated: Vec<u64> = k
        .iter()
        .filter(|(_, l)| **l == 70)
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(updated.len() as u64, updates.ok);
    assert!(!updated.is_empty(), "{target}: some updates ran");
    assert!(updated.iter().all(|i| *i >= 300));
    assert_eq!(
        k.values().filter(|l| **l == 100).count() as u64,
        600 - deletes.ok - updates.ok
    );
}

#[test]
fn dbm_load_and_mixed_run_leave_exactly_the_expected_records() {
    let d = Dir::new();
    dbm_mixed_run_has_exact_effects(&d, "dbm://./s.redb", "s.redb");
    // The seed's way: the file opened and closed for every operation, same records.
    let d = Dir::new();
    dbm_mixed_run_has_exact_effects(&d, "dbm://./s.redb?reopen=each", "s.redb");
    let d = Dir::new();
    dbm_mixed_run_has_exact_effects(&d, "dbm://./s.redb?reopen=each&sync=none", "s.redb");
    // Options may also come from workload parameters.
    let d = Dir::new();
    d.write(
        "w.toml",
        &PUT_ONLY.replace("size = 100", "size = 100\nreopen = \"never\""),
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "dbm://./p.redb",
        "--set",
        "reopen=each",
        "--clients",
        "2",
        "--ops",
        "40",
        "-o",
        "r.json",
    ]);
    assert_eq!(dbm_records(&d.join("p.redb")).len(), 40);
}

#[test]
fn dbm_cleanup_removes_only_its_table() {
    use redb::{ReadableDatabase, TableDefinition};
    const MINE: TableDefinition<u64, u64> = TableDefinition::new("mine");
    let d = Dir::new();
    {
        let db = redb::Database::create(d.join("s.redb")).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(MINE).unwrap().insert(1, 42).unwrap();
        tx.commit().unwrap();
    }
    d.write("w.toml", PUT_ONLY);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "dbm://./s.redb",
        "--ops",
        "25",
        "-o",
        "r.json",
    ]);
    assert_eq!(dbm_records(&d.join("s.redb")).len(), 25);
    let out = d.ok(&["cleanup", "--target", "dbm://./s.redb?reopen=each"]);
    assert!(out.contains("removed 25 loadrig object(s)"), "{out}");
    let db = redb::Database::create(d.join("s.redb")).unwrap();
    let tx = db.begin_read().unwrap();
    let names: Vec<String> = tx
        .list_tables()
        .unwrap()
        .map(|t| redb::TableHandle::name(&t).to_string())
        .collect();
    assert_eq!(names, ["mine"]);
    assert_eq!(
        tx.open_table(MINE)
            .unwrap()
            .get(1)
            .unwrap()
            .unwrap()
            .value(),
        42
    );
}

#[test]
fn session_store_and_a_growth_study_run_on_dbm() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "session-store",
        "--target",
        "dbm://./s.redb",
        "--set",
        "records=500",
        "--ops",
        "200",
        "--warmup",
        "0s",
        "-o",
        "a.json",
    ]);
    let r = d.result("a.json");
    assert_eq!((r.total.ok, r.total.errors), (200, 0));
    let names: Vec<&str> = r.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["create", "read", "touch", "expire"]);
    let creates = r.operations[0].ok;
    let expires = r.operations[3].rows;
    assert_eq!(
        dbm_records(&d.join("s.redb")).len() as u64,
        500 + creates - expires
    );
    // A growth study (seed 003's shape) against the file opened per record: it completes.
    let out = d.ok(&[
        "sweep",
        "session-store",
        "--op",
        "create",
        "--set",
        "records=1",
        "--target",
        "dbm://./g.redb?reopen=each",
        "--growth-batch",
        "20",
        "--growth-limit",
        "60",
        "-o",
        "g.json",
    ]);
    assert!(out.contains("growth (dbm://./g.redb?reopen=each)"), "{out}");
    assert_eq!(dbm_records(&d.join("g.redb")).len(), 61);
}

/// 40 SQLite clients hold about 3 × 40 files: under a soft limit of 100 the run raises it to
/// the hard limit and completes; under a hard limit of 100 it exits 2 before anything runs,
/// with the numbers and the fix, and writes no result.
#[test]
fn a_too_low_open_files_limit_is_raised_or_reported_before_the_run() {
    let d = Dir::new();
    let args = [
        "run",
        "session-store",
        "--target",
        "sqlite://./t.db",
        "--set",
        "records=100",
        "--clients",
        "40",
        "--ops",
        "200",
        "-o",
        "r.json",
    ];
    let out = common::under_ulimit(&d, "ulimit -Sn 100", &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors), (200, 0));

    std::fs::remove_file(d.join("r.json")).unwrap();
    let out = common::under_ulimit(&d, "ulimit -Sn 100 && ulimit -Hn 100", &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("40 client sessions need about 184 open files")
            && err.contains("at most 100")
            && err.contains("ulimit -n 184"),
        "{err}"
    );
    assert!(!d.join("r.json").exists());

    // A sweep checks its widest point before its first: 2 clients would fit, 40 do not,
    // so nothing runs (the database is never created).
    let sweep = [
        "sweep",
        "session-store",
        "--target",
        "sqlite://./s.db",
        "--set",
        "records=100",
        "--vary",
        "clients=2,40",
        "--ops",
        "20",
        "-o",
        "s.json",
    ];
    let out = common::under_ulimit(&d, "ulimit -Sn 100 && ulimit -Hn 100", &sweep);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("40 client sessions need about 184 open files"),
        "{err}"
    );
    assert!(!d.join("s.json").exists() && !d.join("s.db").exists());
}

/// An output path that cannot be written is found before the setup and the data load:
/// exit 2, the database never created, no stream file left behind.
#[test]
fn an_unwritable_output_is_found_before_anything_runs() {
    let d = Dir::new();
    d.write("afile", "not a folder");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "session-store",
            "--target",
            "sqlite://./t.db",
            "--set",
            "records=50",
            "--ops",
            "10",
            "-o",
            "afile/r.json",
        ],
    );
    assert!(err.contains("could not create folder 'afile'"), "{err}");
    assert!(!d.join("t.db").exists());
    // A folder where the stream file would go: refused too, and nothing is written.
    std::fs::create_dir(d.join("out")).unwrap();
    std::fs::create_dir(d.join("out/r.jsonl")).unwrap();
    let (_, err) = d.code(2, &["run", "noop", "--ops", "10", "-o", "out/r.json"]);
    assert!(err.contains("cannot write 'out/r.jsonl'"), "{err}");
    assert!(!d.join("out/r.json").exists());
}
