//! The TPC-C-like built-in `tpcc` on SQLite and on throwaway PostgreSQL and MariaDB servers
//! (`scripts/services.sh up postgres mariadb`, then `eval "$(scripts/services.sh env)"`;
//! without LOADRIG_PG_URL or LOADRIG_MYSQL_URL those tests say "skipped"), at a small scale
//! (2 warehouses, 1,000 items, 100 customers per district, the last 30 orders new) for a
//! fixed transaction count with a fixed seed: the loaded cardinalities exactly, the mix
//! within binomial bounds, rolled-back New-Orders counted as such and matching the orders
//! the database kept, the spec's consistency conditions 1-4 (passing, and each failing on a
//! copy of the database tampered to break it), tpmC from the counts, and `loadrig ops`
//! showing a New-Order with its lines and, with `keying=on`, each transaction's pauses.

use crate::common::locks::{hold, Shared};

use std::collections::BTreeMap;

use crate::common::sql::{mysql_row, pg_row, sqlite_row};
use crate::common::{server_url, Dir};
use loadrig::result::RunResult;
use serde_json::Value;

const SCALE: &[&str] = &[
    "--set",
    "warehouses=2",
    "--set",
    "items=1000",
    "--set",
    "customers_per_district=100",
    "--set",
    "new_orders_per_district=30",
];
const W: i64 = 2;
const CUSTOMERS: i64 = W * 10 * 100;
const NEW_ORDERS: i64 = W * 10 * 30;

/// The mix: (operation, share).
const MIX: &[(&str, f64)] = &[
    ("new-order", 0.45),
    ("payment", 0.43),
    ("order-status", 0.04),
    ("delivery", 0.04),
    ("stock-level", 0.04),
];

/// Two-sided normal quantile for significance 0.001 per count.
const Z: f64 = 3.29;

/// The first row of `sql`, its columns as text (NULL as empty).
type Row<'a> = &'a dyn Fn(&str) -> Vec<String>;

fn count(row: Row<'_>, sql: &str) -> i64 {
    row(sql)[0].parse().unwrap()
}

fn run(d: &Dir, url: &str, ops: u64, clients: &str, only: Option<&str>) -> RunResult {
    let mut more = vec!["--seed", "7", "-o", "r.json", "--report", "r.html"];
    more.extend_from_slice(SCALE);
    if let Some(op) = only {
        more.extend(["--op", op]);
    }
    d.run_ops("tpcc", url, &ops.to_string(), clients, &more);
    d.result("r.json")
}

/// The spec's initial population at this scale, exactly, and the consistency conditions
/// on it (a read-only run of Stock-Level leaves it as loaded).
fn loaded_cardinalities(url: &str, row: Row<'_>) {
    let d = Dir::new();
    let r = run(&d, url, 20, "1", Some("stock-level"));
    assert_eq!(r.verify.len(), 4);
    assert!(r.verify.iter().all(|v| v.passed), "{:?}", r.verify);
    let counts = [
        ("loadrig_warehouse", W),
        ("loadrig_district", W * 10),
        ("loadrig_customer", CUSTOMERS),
        ("loadrig_history", CUSTOMERS),
        ("loadrig_orders", CUSTOMERS),
        ("loadrig_new_order", NEW_ORDERS),
        ("loadrig_item", 1000),
        ("loadrig_stock", W * 1000),
    ];
    for (table, n) in counts {
        assert_eq!(
            count(row, &format!("SELECT COUNT(*) FROM {table}")),
            n,
            "{table}"
        );
    }
    // 5 to 15 lines per order, as many as the orders say.
    let lines = row("SELECT COUNT(*), MIN(ol_number), MAX(ol_number) FROM loadrig_order_line");
    let orders = row("SELECT SUM(o_ol_cnt), MIN(o_ol_cnt), MAX(o_ol_cnt) FROM loadrig_orders");
    assert_eq!(lines[0], orders[0]);
    assert_eq!((lines[1].as_str(), lines[2].as_str()), ("1", "15"));
    assert_eq!((orders[1].as_str(), orders[2].as_str()), ("5", "15"));
    // The new orders are each district's last 30, undelivered; the others are delivered.
    assert_eq!(
        row("SELECT MIN(no_o_id), MAX(no_o_id) FROM loadrig_new_order"),
        ["71", "100"]
    );
    assert_eq!(
        count(
            row,
            "SELECT COUNT(*) FROM loadrig_orders WHERE o_carrier_id IS NULL"
        ),
        NEW_ORDERS
    );
    // Every customer has one order: o_c_id is a permutation per district.
    assert_eq!(
        count(
            row,
            "SELECT COUNT(*) FROM (SELECT DISTINCT o_w_id, o_d_id, o_c_id FROM loadrig_orders) t"
        ),
        CUSTOMERS
    );
    // C_LAST from the syllables of c_id - 1 for the first 1,000 customers (the spec's
    // example: 371 is PRICALLYOUGHT).
    assert_eq!(
        row("SELECT c_last FROM loadrig_customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1"),
        ["BARBARBAR"]
    );
    assert_eq!(
        row("SELECT c_last FROM loadrig_customer WHERE c_w_id = 2 AND c_d_id = 3 AND c_id = 100"),
        ["BAREINGEING"]
    );
    assert_eq!(
        count(
            row,
            "SELECT COUNT(*) FROM loadrig_customer WHERE c_credit = 'BC'"
        ),
        CUSTOMERS / 10
    );
}

/// A run of `ops` transactions: the mix within binomial bounds, rolled-back New-Orders
/// counted as such and missing from the database, conditions 1-4, tpmC from the counts.
fn mixed_run(url: &str, ops: u64, clients: &str, row: Row<'_>) {
    let d = Dir::new();
    let r = run(&d, url, ops, clients, None);
    assert_eq!(r.total.ok, ops, "{:?}", r.total.errors_by_class);
    assert_eq!(r.total.errors, 0);
    for (name, share) in MIX {
        let op = r.operations.iter().find(|o| o.name == *name).unwrap();
        let (n, p) = (ops as f64, *share);
        let bound = Z * (n * p * (1.0 - p)).sqrt();
        assert!(
            (op.ok as f64 - n * p).abs() <= bound,
            "{name}: {} of {ops}, expected {} ± {bound:.1}",
            op.ok,
            n * p
        );
    }
    let new_order = &r.operations[0];
    assert_eq!(new_order.name, "new-order");
    // 1 % of New-Orders roll back: some, and the committed ones are exactly the orders the
    // districts numbered and the database kept.
    assert!(new_order.rolled_back >= 1, "no rolled-back new order");
    assert!(new_order.rolled_back * 20 < new_order.ok);
    let committed = (new_order.ok - new_order.rolled_back) as i64;
    assert_eq!(
        count(row, "SELECT SUM(d_next_o_id - 1) FROM loadrig_district"),
        CUSTOMERS + committed
    );
    assert_eq!(
        count(row, "SELECT COUNT(*) FROM loadrig_orders"),
        CUSTOMERS + committed
    );
    let payments = r.operations[1].ok as i64;
    assert_eq!(
        count(row, "SELECT COUNT(*) FROM loadrig_history"),
        CUSTOMERS + payments
    );
    assert_eq!(r.verify.len(), 4);
    assert!(r.verify.iter().all(|v| v.passed), "{:?}", r.verify);
    let tpmc = &r.figures[0];
    assert_eq!((tpmc.name.as_str(), tpmc.completed), ("tpmC", new_order.ok));
    assert!((tpmc.value - new_order.ok as f64 / r.measured_s * 60.0).abs() < 1e-6);
    let efficiency = &r.figures[1];
    assert!((efficiency.value - tpmc.value / (12.86 * W as f64) * 100.0).abs() < 1e-6);
    // The report shows the figures and the checks too.
    let page = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(page.contains(&format!("tpmC: {:.2} per minute", tpmc.value)));
    assert!(page.contains("verify condition 4: sum(O_OL_CNT) = order-line rows: passed"));
}

#[test]
fn tpcc_on_sqlite() {
    let d = Dir::new();
    let db = d.join("tpcc.db");
    let url = format!("sqlite://{}", db.display());
    let row = |sql: &str| sqlite_row(&db, sql);
    loaded_cardinalities(&url, &row);
    mixed_run(&url, 1000, "1", &row);
}

#[test]
fn tpcc_on_postgres() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    let row = |sql: &str| pg_row(&url, sql);
    loaded_cardinalities(&url, &row);
    mixed_run(&url, 600, "4", &row);
}

#[test]
fn tpcc_on_mariadb() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    let row = |sql: &str| mysql_row(&url, sql);
    loaded_cardinalities(&url, &row);
    mixed_run(&url, 600, "4", &row);
}

/// `loadrig ops tpcc` shows a New-Order with its 5 to 15 order lines, numbered from 1, each
/// an item lookup, a stock update and an order-line insert, inside one transaction.
#[test]
fn ops_shows_a_new_order_with_its_lines() {
    let d = Dir::new();
    let out = d.ok(&[
        "ops",
        "tpcc",
        "--op",
        "new-order",
        "--count",
        "5",
        "--seed",
        "2",
        "--json",
    ]);
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "tx", "{line}");
        assert!(v["text"].as_str().unwrap().ends_with("; COMMIT"), "{line}");
        let steps = v["steps"].as_array().unwrap();
        let query = |prefix: &str| -> Vec<&Value> {
            steps
                .iter()
                .filter(|s| s["query"].as_str().is_some_and(|q| q.starts_with(prefix)))
                .collect()
        };
        let inserts = query("INSERT INTO loadrig_order_line");
        let n = inserts.len();
        assert!((5..=15).contains(&n), "{n} lines: {line}");
        let numbers: Vec<u64> = inserts
            .iter()
            .map(|s| s["args"][3].as_u64().unwrap())
            .collect();
        assert_eq!(numbers, (1..=n as u64).collect::<Vec<_>>());
        assert_eq!(query("SELECT i_id").len(), n);
        assert_eq!(query("UPDATE loadrig_stock").len(), n);
        assert_eq!(query("INSERT INTO loadrig_orders").len(), 1);
        assert_eq!(query("INSERT INTO loadrig_new_order").len(), 1);
        // The orders row says how many lines it has.
        let order = query("INSERT INTO loadrig_orders")[0];
        assert_eq!(order["args"][4].as_u64(), Some(n as u64), "{line}");
    }
}

/// `loadrig export --csv` writes the workload's figures (tpmC, efficiency) as
/// `figures.csv`, one row each with the result file's values; a run without figures gets no
/// such file.
#[test]
fn figures_in_csv() {
    let d = Dir::new();
    let url = format!("sqlite://{}", d.join("tpcc.db").display());
    let r = run(&d, &url, 200, "1", None);
    let out = d.ok(&["export", "r.json", "--csv", "csv"]);
    assert!(out.contains("figures.csv"), "{out}");
    let mut rd = csv::Reader::from_path(d.join("csv/figures.csv")).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        loadrig::report::export::FIGURE_COLUMNS.map(String::from)
    );
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    let new_order = r.operations.iter().find(|o| o.name == "new-order").unwrap();
    for (row, f) in rows.iter().zip(&r.figures) {
        assert_eq!(&row[0], f.name);
        assert_eq!(row[1].parse::<f64>().unwrap(), f.value);
        assert_eq!(&row[2], f.unit);
        assert_eq!(row[3].parse::<u64>().unwrap(), new_order.ok);
        assert_eq!(&row[4], "minute");
        assert_eq!(row[6].parse::<f64>().unwrap(), r.measured_s);
        assert_eq!(&row[7], "new-order");
    }
    assert_eq!((&rows[0][0], &rows[1][0]), ("tpmC", "efficiency"));
    // tpmC is New-Orders per measured minute; efficiency divides it by 12.86 per warehouse.
    let tpmc = rows[0][1].parse::<f64>().unwrap();
    assert!((tpmc - new_order.ok as f64 / r.measured_s * 60.0).abs() < 1e-6);
    let efficiency = rows[1][1].parse::<f64>().unwrap();
    assert!((efficiency - tpmc / (12.86 * W as f64) * 100.0).abs() < 1e-6);
    assert_eq!(rows[1][5].parse::<f64>().unwrap(), 12.86 * W as f64 / 100.0);

    d.ok(&[
        "run", "noop", "--target", "noop://", "--ops", "10", "-o", "n.json",
    ]);
    let out = d.ok(&["export", "n.json", "--csv", "ncsv"]);
    assert!(
        !out.contains("figures.csv") && !d.join("ncsv/figures.csv").exists(),
        "{out}"
    );
}

/// Each of the spec's consistency conditions 1-4 fails on a database that breaks it: a copy
/// of a freshly loaded database is tampered in one place (w_ytd + 1 in one warehouse;
/// d_next_o_id + 1 in one district; a new-order row from the middle of one district's
/// undelivered orders deleted; one order line deleted), and a read-only Stock-Level run on
/// it exits 1 with `verify condition N …: FAILED`, one violating warehouse or district
/// counted, and the other three conditions passed.
#[test]
fn each_condition_fails_on_a_database_that_breaks_it() {
    let d = Dir::new();
    let db = d.join("tpcc.db");
    let url = format!("sqlite://{}", db.display());
    let loaded = run(&d, &url, 1, "1", Some("stock-level"));
    assert_eq!(loaded.verify.len(), 4);
    assert!(
        loaded.verify.iter().all(|v| v.passed),
        "{:?}",
        loaded.verify
    );
    let tampers = [
        "UPDATE loadrig_warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2",
        "UPDATE loadrig_district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 3",
        // The undelivered orders are 71..100 in every district.
        "DELETE FROM loadrig_new_order WHERE no_w_id = 2 AND no_d_id = 7 AND no_o_id = 85",
        "DELETE FROM loadrig_order_line WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = 10 AND ol_number = 2",
    ];
    for (i, tamper) in tampers.iter().enumerate() {
        let broken = i + 1;
        let copy = d.join(&format!("broken{broken}.db"));
        // A consistent copy whatever the WAL holds.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
            .unwrap();
        let conn = rusqlite::Connection::open(&copy).unwrap();
        assert_eq!(conn.execute(tamper, []).unwrap(), 1, "{tamper}");
        drop(conn);
        let target = format!("sqlite://{}", copy.display());
        let out = format!("r{broken}.json");
        let mut args = vec![
            "run",
            "tpcc",
            "--target",
            &target,
            "--skip-load",
            "--op",
            "stock-level",
            "--ops",
            "1",
            "--seed",
            "7",
            "-o",
            &out,
        ];
        args.extend_from_slice(SCALE);
        let (stdout, _) = d.code(1, &args);
        let r = d.result(&out);
        assert_eq!(r.verify.len(), 4);
        for (k, v) in r.verify.iter().enumerate() {
            let n = k + 1;
            assert!(
                v.name.starts_with(&format!("condition {n}: ")),
                "{}",
                v.name
            );
            let (verdict, values) = if n == broken {
                ("FAILED", ["1", "0"])
            } else {
                ("passed", ["0", "0"])
            };
            assert_eq!(v.passed, n != broken, "{tamper}: {v:?}");
            assert_eq!(v.values, values, "{tamper}: {}", v.name);
            let line = format!(
                "verify {}: {verdict} ({} / {})",
                v.name, values[0], values[1]
            );
            assert!(stdout.contains(&line), "{tamper}: no {line:?} in\n{stdout}");
        }
    }
}

/// `--set keying=on` gives every transaction the spec's keying time and mean think time
/// (clause 5.2.5.7), as `loadrig ops` shows them from the workload a run compiles; by default
/// no transaction pauses.
#[test]
fn keying_on_gives_each_transaction_its_keying_and_think_times() {
    let expected: BTreeMap<&str, (f64, f64)> = [
        ("new-order", (18.0, 12.0)),
        ("payment", (3.0, 12.0)),
        ("order-status", (2.0, 10.0)),
        ("delivery", (2.0, 5.0)),
        ("stock-level", (2.0, 5.0)),
    ]
    .into();
    let d = Dir::new();
    let ops = |keying: &str| {
        let set = format!("keying={keying}");
        let args = [
            "ops", "tpcc", "--set", &set, "--count", "200", "--seed", "3",
        ];
        d.ok(&[&args[..], &["--json"]].concat())
    };
    let mut seen = BTreeMap::new();
    for line in ops("on").lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let name = v["op"].as_str().unwrap();
        let (keying, think) = expected[name];
        assert_eq!(v["pause"]["keying_s"].as_f64(), Some(keying), "{name}");
        assert_eq!(v["pause"]["think_s"].as_f64(), Some(think), "{name}");
        let text = v["text"].as_str().unwrap();
        let shown = format!("(keying {keying}s, think {think}s mean)");
        assert!(
            text.ends_with(&shown),
            "{name}: {shown} not at the end of {text}"
        );
        *seen.entry(name.to_string()).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    for line in ops("off").lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v.get("pause").is_none(), "{line}");
        assert!(!v["text"].as_str().unwrap().contains("(keying"), "{line}");
    }
}
