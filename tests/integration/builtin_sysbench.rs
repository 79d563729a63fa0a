//! The sysbench OLTP built-ins (`oltp_point_select`, `oltp_read_only`, `oltp_read_write`,
//! `oltp_write_only`, `oltp_update_index`, `oltp_update_non_index`, `oltp_insert`,
//! `oltp_delete`) on SQLite and on throwaway PostgreSQL and MariaDB servers
//! (`scripts/services.sh up postgres mariadb`, then `eval "$(scripts/services.sh env)"`;
//! without LOADRIG_PG_URL or LOADRIG_MYSQL_URL those tests say "skipped").
//! Fixed operation counts on 1000 rows: exact transaction counts, sysbench's statements per
//! transaction (from `loadrig ops`), and the row counts sysbench's tests leave, read back
//! from the database itself.

use crate::common::locks::{hold, Shared};

use crate::common::sql::{ints, mysql_row, pg_row, sqlite_row};
use crate::common::{server_url, Dir};
use serde_json::Value;

const BUILTINS: &[&str] = &[
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
];

const OPS: u64 = 300;
const TABLE_SIZE: i64 = 1000;

/// Rows, id range, k range and the lengths of c and pad, as one row.
const TABLE: &str = "SELECT COUNT(*), MIN(id), MAX(id), MIN(k), MAX(k), \
    MIN(LENGTH(c)), MAX(LENGTH(c)), MIN(LENGTH(pad)), MAX(LENGTH(pad)) FROM loadrig_sbtest1";

/// Run every built-in for OPS transactions on `url` (table_size 1000), and the ones with a
/// transaction again with skip_trx=on, and check the table each left behind with `row` (one
/// row of numbers from a query on the same database).
fn every_builtin(url: &str, clients: &str, row: &dyn Fn(&str) -> Vec<i64>) {
    let with_skip_trx = ["oltp_read_only", "oltp_read_write", "oltp_write_only"]
        .map(|name| (name, Some("skip_trx=on")));
    let cases = BUILTINS
        .iter()
        .map(|&name| (name, None))
        .chain(with_skip_trx);
    for (name, set) in cases {
        let d = Dir::new();
        let ops = OPS.to_string();
        let size = format!("table_size={TABLE_SIZE}");
        let mut args = vec![
            "run",
            name,
            "--target",
            url,
            "--set",
            &size,
            "--ops",
            &ops,
            "--clients",
            clients,
            "--seed",
            "5",
            "-o",
            "r.json",
        ];
        if let Some(set) = set {
            args.extend(["--set", set]);
        }
        let out = d.ok(&args);
        let label = format!("{name} {}", set.unwrap_or_default());
        let r = d.result("r.json");
        assert_eq!(r.operations.len(), 1, "{label}");
        let op = &r.operations[0];
        assert_eq!((op.ok, op.errors), (OPS, 0), "{label}: {out}");
        // The range selects' workloads run at the kernel's slice ([load] client_slice), the
        // others at the rig's default where this kernel takes one.
        let slice = loadrig::engine::slice::DEFAULT;
        let rig_default = loadrig::engine::slice::takes(slice).then_some(slice);
        let ranges = matches!(name, "oltp_read_only" | "oltp_read_write");
        let want = if ranges { None } else { rig_default };
        assert_eq!(r.load.client_slice, want, "{label}");
        // oltp_point_select gives each client a thread ([load] threads = "per-client"); the
        // others share one a core.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = match name {
            "oltp_point_select" => clients.parse().expect("a count"),
            _ => cores,
        };
        assert_eq!(r.load.threads, threads, "{label}");
        // sysbench prepare: drop, create, 1000 rows, the index on k; nothing vacuumed or
        // analyzed after it (settle = false), where pgbench's built-ins settle on PostgreSQL.
        assert_eq!(r.setup.as_ref().expect("setup record").statements, 4);
        assert!(r.settled.is_none(), "{label}");
        assert!(!out.contains("vacuumed and analyzed"), "{label}: {out}");
        let table = row(TABLE);
        // k in 1..table_size (index updates add 1 to it, one per transaction at most); c and
        // pad as sysbench's digit groups (119, 59).
        let k_max = match name {
            "oltp_read_write" | "oltp_write_only" | "oltp_update_index" => TABLE_SIZE + OPS as i64,
            _ => TABLE_SIZE,
        };
        assert!(table[3] >= 1 && table[4] <= k_max, "{label}: {table:?}");
        assert_eq!(&table[5..], &[119, 119, 59, 59], "{label}: {table:?}");
        let rows = match name {
            // One new row per transaction.
            "oltp_insert" => TABLE_SIZE + OPS as i64,
            // Each DELETE that found its row (the rows it counted) is one row fewer.
            "oltp_delete" => TABLE_SIZE - op.rows as i64,
            // Delete + insert of the same id keeps table_size rows; the others write none.
            _ => TABLE_SIZE,
        };
        assert_eq!(table[0], rows, "{label}: {table:?}");
        if name != "oltp_delete" {
            assert_eq!(table[1], 1, "{label}: {table:?}");
        }
        if !matches!(name, "oltp_insert" | "oltp_delete") {
            assert_eq!(table[2], TABLE_SIZE, "{label}: {table:?}");
        }
        // Every id a single-row statement names exists: one row each.
        if matches!(
            name,
            "oltp_point_select" | "oltp_update_index" | "oltp_update_non_index" | "oltp_insert"
        ) {
            assert_eq!(op.rows, OPS, "{label}");
        }
        if name == "oltp_delete" {
            assert!(op.rows > 0 && op.rows <= OPS, "{label}: {}", op.rows);
        }
        // sysbench's queries performed, per transaction: read, write, other (BEGIN, COMMIT).
        // With skip_trx=on there is no BEGIN or COMMIT: every statement in autocommit.
        let (read, write, other) = match name {
            "oltp_point_select" => (1, 0, 0),
            "oltp_read_only" => (14, 0, 2),
            "oltp_read_write" => (14, 4, 2),
            "oltp_write_only" => (0, 4, 2),
            _ => (0, 1, 0),
        };
        let other = if set.is_some() { 0 } else { other };
        let s = &op.statements;
        let per_tx = [read, write, other].map(|n| n * OPS);
        if op.retries == 0 {
            assert_eq!([s.read, s.write, s.other], per_tx, "{label}");
        } else {
            // A retried transaction sent some statements twice.
            assert!(
                s.read >= per_tx[0] && s.write >= per_tx[1],
                "{label}: {s:?}"
            );
        }
        assert_eq!(s.total, s.read + s.write + s.other, "{label}");
        assert_eq!(r.total.statements.total, s.total, "{label}");
    }
}

#[test]
fn builtins_on_sqlite() {
    let d = Dir::new();
    let db = d.join("sysbench.db");
    let url = format!("sqlite://{}", db.display());
    every_builtin(&url, "1", &|sql| ints(sqlite_row(&db, sql)));
    // k is spread over 1..table_size as sysbench's random k is: about 1 - 1/e of the values
    // appear (632 expected for 1000 rows; the hash is fixed, so the count is exact).
    let size = format!("table_size={TABLE_SIZE}");
    d.ok(&[
        "run",
        "oltp_read_only",
        "--target",
        &url,
        "--set",
        &size,
        "--ops",
        "1",
    ]);
    let distinct = ints(sqlite_row(
        &db,
        "SELECT COUNT(DISTINCT k) FROM loadrig_sbtest1",
    ))[0];
    assert_eq!(distinct, 630);
}

#[test]
fn builtins_on_postgres() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    every_builtin(&url, "4", &|sql| ints(pg_row(&url, sql)));
    // The last built-in's table, set up afresh, was never vacuumed or analyzed by the rig.
    let settled = ints(pg_row(
        &url,
        "SELECT COUNT(*), COUNT(last_vacuum), COUNT(last_analyze) FROM pg_stat_user_tables \
         WHERE relname = 'loadrig_sbtest1'",
    ));
    assert_eq!(settled, [1, 0, 0]);
}

/// MariaDB takes the same statements: the target turns `$N` into `?`.
#[test]
fn builtins_on_mariadb() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    every_builtin(&url, "4", &|sql| ints(mysql_row(&url, sql)));
}

/// The rows of loadrig_sbtest1 whose c is no longer the one the load gave them (the load's
/// hash of the id, as the built-ins' setup computes it).
fn c_changed() -> String {
    let groups: Vec<String> = [3, 7, 11, 13, 17, 19, 23, 29, 31, 37]
        .iter()
        .map(|m| format!("x * {m} % 89999999999 + 10000000000"))
        .collect();
    format!(
        "SELECT COUNT(*) FROM (SELECT c, id * 2654435761 % 89999999999 + 10000000000 AS x \
         FROM loadrig_sbtest1) t WHERE c <> CONCAT({})",
        groups.join(", '-', ")
    )
}

/// sysbench's oltp_update_index and oltp_update_non_index send their UPDATEs alone, each in
/// autocommit: with index_updates=3 (non_index_updates=2) each transaction is exactly 3 (2)
/// statements, all writes, no BEGIN or COMMIT ("other"), each finding its row; the sum of k
/// rises by exactly the number of index updates, and the rows whose c changed are exactly
/// the ids the non-index updates named (from `loadrig ops` with the same seed and clients).
/// Single-row autocommit UPDATEs cannot deadlock, so nothing is retried.
fn updates_in_autocommit(url: &str, clients: u64, row: &dyn Fn(&str) -> Vec<i64>) {
    let d = Dir::new();
    let size = format!("table_size={TABLE_SIZE}");
    let (ops, n) = (OPS.to_string(), clients.to_string());
    // sysbench prepare: a point-select run loads the table and changes nothing.
    d.ok(&[
        "run",
        "oltp_point_select",
        "--target",
        url,
        "--set",
        &size,
        "--ops",
        "1",
    ]);
    let k_loaded = row("SELECT SUM(k) FROM loadrig_sbtest1")[0];
    assert_eq!(row(&c_changed())[0], 0, "the load's c");
    for (name, set, per_tx) in [
        ("oltp_update_index", "index_updates=3", 3),
        ("oltp_update_non_index", "non_index_updates=2", 2),
    ] {
        let args = ["run", name, "--target", url, "--set", &size, "--set", set];
        let more = [
            "--skip-load",
            "--ops",
            &ops,
            "--clients",
            &n,
            "--seed",
            "5",
            "-o",
            "r.json",
        ];
        let out = d.ok(&[&args[..], &more].concat());
        let r = d.result("r.json");
        let op = &r.operations[0];
        assert_eq!((op.ok, op.errors, op.retries), (OPS, 0, 0), "{name}: {out}");
        let s = &op.statements;
        let updates = per_tx * OPS;
        assert_eq!(
            [s.read, s.write, s.other, s.total],
            [0, updates, 0, updates],
            "{name}"
        );
        assert_eq!(op.rows, updates, "{name}");
        assert!(
            out.contains(&format!("other 0; {per_tx}.0 per operation")),
            "{name}: {out}"
        );
    }
    let k_now = row("SELECT SUM(k) FROM loadrig_sbtest1")[0];
    assert_eq!(k_now - k_loaded, 3 * OPS as i64);
    // The ids the non-index updates named, client by client as the run split the OPS.
    let count = (OPS / clients).to_string();
    let sent = d.ok(&[
        "ops",
        "oltp_update_non_index",
        "--set",
        &size,
        "--set",
        "non_index_updates=2",
        "--clients",
        &n,
        "--count",
        &count,
        "--seed",
        "5",
        "--json",
    ]);
    let mut ids = std::collections::BTreeSet::new();
    for line in sent.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "steps", "{line}");
        for step in v["steps"].as_array().unwrap() {
            ids.insert(step["args"][1].as_i64().unwrap());
        }
    }
    assert_eq!(row(&c_changed())[0], ids.len() as i64);
}

#[test]
fn updates_in_autocommit_on_sqlite() {
    let d = Dir::new();
    let db = d.join("sysbench.db");
    let url = format!("sqlite://{}", db.display());
    updates_in_autocommit(&url, 1, &|sql| ints(sqlite_row(&db, sql)));
}

#[test]
fn updates_in_autocommit_on_postgres() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    updates_in_autocommit(&url, 4, &|sql| ints(pg_row(&url, sql)));
}

#[test]
fn updates_in_autocommit_on_mariadb() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    updates_in_autocommit(&url, 4, &|sql| ints(mysql_row(&url, sql)));
}

/// The statements of the first transaction `loadrig ops` shows, by the first word that tells
/// them apart (`SELECT c ... =`, `BETWEEN`, `SUM`, `ORDER`, `DISTINCT`, `UPDATE k`, ...).
fn statement_kinds(name: &str, sets: &[&str]) -> (Vec<&'static str>, String) {
    let d = Dir::new();
    let mut args = vec!["ops", name, "--count", "1", "--seed", "3", "--json"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let out = d.ok(&args);
    let line: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let queries: Vec<String> = match line["steps"].as_array() {
        // Commit points (skip_trx=on) are steps without a query.
        Some(steps) => steps
            .iter()
            .filter_map(|s| s["query"].as_str().map(str::to_string))
            .collect(),
        None => vec![line["query"].as_str().unwrap().to_string()],
    };
    let kinds = queries
        .iter()
        .map(|q| match q {
            q if q.starts_with("SELECT DISTINCT c") => "distinct",
            q if q.starts_with("SELECT SUM(k)") => "sum",
            q if q.ends_with("ORDER BY c") => "order",
            q if q.contains("BETWEEN") => "simple",
            q if q.starts_with("SELECT c") => "point",
            q if q.starts_with("UPDATE loadrig_sbtest1 SET k") => "index",
            q if q.starts_with("UPDATE loadrig_sbtest1 SET c") => "non_index",
            q if q.starts_with("DELETE") => "delete",
            q if q.starts_with("INSERT") => "insert",
            other => panic!("unexpected statement {other}"),
        })
        .collect();
    (kinds, line["text"].as_str().unwrap().to_string())
}

/// (statement kind, how many in a row), in a transaction's order.
type Groups = Vec<(&'static str, usize)>;

/// sysbench's statements per transaction, in its order, for the defaults and for changed
/// options (oltp_common.lua: execute_point_selects, the four ranges, the updates, the
/// delete + insert pairs).
#[test]
fn statements_per_transaction_follow_the_options() {
    let reads = |p, s, u, o, d| {
        vec![
            ("point", p),
            ("simple", s),
            ("sum", u),
            ("order", o),
            ("distinct", d),
        ]
    };
    let writes = |i, n, di| vec![("index", i), ("non_index", n), ("delete_insert", di)];
    let expand = |groups: Groups| {
        let mut out = Vec::new();
        for (k, n) in groups {
            match k {
                "delete_insert" => {
                    for _ in 0..n {
                        out.extend(["delete", "insert"]);
                    }
                }
                _ => out.extend(std::iter::repeat_n(k, n)),
            }
        }
        out
    };
    let cases: Vec<(&str, Vec<&str>, Groups)> = vec![
        ("oltp_point_select", vec![], vec![("point", 1)]),
        // oltp_point_select ignores point_selects, as sysbench does.
        (
            "oltp_point_select",
            vec!["point_selects=5"],
            vec![("point", 1)],
        ),
        ("oltp_read_only", vec![], reads(10, 1, 1, 1, 1)),
        (
            "oltp_read_only",
            vec!["point_selects=3"],
            reads(3, 1, 1, 1, 1),
        ),
        (
            "oltp_read_only",
            vec![
                "simple_ranges=2",
                "sum_ranges=0",
                "order_ranges=3",
                "distinct_ranges=2",
            ],
            reads(10, 2, 0, 3, 2),
        ),
        (
            "oltp_read_write",
            vec![],
            [reads(10, 1, 1, 1, 1), writes(1, 1, 1)].concat(),
        ),
        (
            "oltp_read_write",
            vec!["point_selects=3", "index_updates=2", "delete_inserts=3"],
            [reads(3, 1, 1, 1, 1), writes(2, 1, 3)].concat(),
        ),
        ("oltp_write_only", vec![], writes(1, 1, 1)),
        (
            "oltp_write_only",
            vec!["index_updates=0", "non_index_updates=4", "delete_inserts=2"],
            writes(0, 4, 2),
        ),
        ("oltp_update_index", vec![], vec![("index", 1)]),
        (
            "oltp_update_index",
            vec!["index_updates=3"],
            vec![("index", 3)],
        ),
        ("oltp_update_non_index", vec![], vec![("non_index", 1)]),
        (
            "oltp_update_non_index",
            vec!["non_index_updates=2"],
            vec![("non_index", 2)],
        ),
        ("oltp_insert", vec![], vec![("insert", 1)]),
        ("oltp_delete", vec![], vec![("delete", 1)]),
    ];
    for (name, sets, groups) in cases {
        let (kinds, _) = statement_kinds(name, &sets);
        assert_eq!(kinds, expand(groups), "{name} {sets:?}");
    }
}

/// `rand_type=special` draws ids as sysbench 1.0 does by default: three in four on the 1 %
/// of the ids just above the middle (49,750..=50,501 of 100,000; the generator's own test
/// holds the whole distribution), against about 1 % there with the default uniform draw.
/// Bounds at more than six standard deviations of 2,000 draws.
#[test]
fn rand_type_special_is_sysbench_1_0s_default_draw() {
    let d = Dir::new();
    let hot_share = |rand_type: &str| {
        let set = format!("rand_type={rand_type}");
        let args = [
            "ops",
            "oltp_point_select",
            "--set",
            "table_size=100000",
            "--set",
            &set,
        ];
        let out = d.ok(&[&args[..], &["--count", "2000", "--json"]].concat());
        let ids: Vec<u64> = (out.lines())
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["args"][0]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ids.len(), 2000);
        assert!(ids.iter().all(|id| (1..=100_000).contains(id)), "{ids:?}");
        ids.iter()
            .filter(|id| (49_750..=50_501).contains(*id))
            .count() as f64
            / 2000.0
    };
    let special = hot_share("special");
    assert!((0.70..0.82).contains(&special), "{special}");
    let uniform = hot_share("uniform");
    assert!(uniform < 0.03, "{uniform}");
    let (_, err) = d.code(
        2,
        &["ops", "oltp_point_select", "--set", "rand_type=pareto"],
    );
    assert!(
        err.contains("rand_type") && err.contains("special"),
        "{err}"
    );
}

/// Ids in 1..table_size; a range reads range_size ids from its start; the delete and the
/// insert of a pair name the same id; a new c is sysbench's ten groups of eleven digits.
#[test]
fn values_follow_sysbench() {
    let d = Dir::new();
    let out = d.ok(&[
        "ops",
        "oltp_read_write",
        "--set",
        "table_size=50",
        "--set",
        "range_size=7",
        "--count",
        "40",
        "--json",
    ]);
    assert_eq!(out.lines().count(), 40);
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let steps = v["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 18);
        for s in steps {
            let q = s["query"].as_str().unwrap();
            let args = s["args"].as_array().unwrap();
            let id = if q.starts_with("UPDATE loadrig_sbtest1 SET c") {
                let c = args[0].as_str().unwrap();
                let groups: Vec<&str> = c.split('-').collect();
                assert_eq!(groups.len(), 10, "{c}");
                assert!(groups
                    .iter()
                    .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
                &args[1]
            } else {
                &args[0]
            };
            assert!((1..=50).contains(&id.as_i64().unwrap()), "{q} {args:?}");
            if q.contains("BETWEEN") {
                assert_eq!(args[1].as_i64(), Some(7), "{q}");
            }
        }
        // DELETE then INSERT of the same id, a new k and 119 + 59 characters of c and pad.
        assert_eq!(steps[16]["args"][0], steps[17]["args"][0]);
        let insert = steps[17]["args"].as_array().unwrap();
        assert_eq!(insert[2].as_str().unwrap().len(), 119);
        assert_eq!(insert[3].as_str().unwrap().len(), 59);
    }
}

/// skip_trx=on is sysbench's --skip_trx: the same statements with no BEGIN or COMMIT at
/// all, each in autocommit (`steps`); the default runs one transaction. oltp_update_index
/// and oltp_update_non_index send their updates alone either way, as sysbench does.
#[test]
fn skip_trx() {
    let kind = |name: &str, sets: &[&str]| {
        let d = Dir::new();
        let mut args = vec!["ops", name, "--count", "1", "--json"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let v: Value = serde_json::from_str(d.ok(&args).lines().next().unwrap()).unwrap();
        v["kind"].as_str().unwrap().to_string()
    };
    let (kinds, text) = statement_kinds("oltp_read_write", &[]);
    assert_eq!(kinds.len(), 18);
    assert!(
        text.starts_with("BEGIN; ") && text.ends_with("; COMMIT"),
        "{text}"
    );
    assert_eq!(text.matches("COMMIT; BEGIN").count(), 0, "{text}");
    for name in ["oltp_read_only", "oltp_read_write", "oltp_write_only"] {
        assert_eq!(kind(name, &[]), "tx", "{name}");
        for on in ["skip_trx=on", "skip_trx=true", "skip_trx=1"] {
            assert_eq!(kind(name, &[on]), "steps", "{name} {on}");
        }
        let (with, _) = statement_kinds(name, &[]);
        let (without, text) = statement_kinds(name, &["skip_trx=on"]);
        assert_eq!(with, without, "{name}");
        assert!(
            !text.contains("BEGIN") && !text.contains("COMMIT"),
            "{text}"
        );
    }
    for name in ["oltp_update_index", "oltp_update_non_index"] {
        let three = ["index_updates=3", "non_index_updates=3"];
        for (sets, updates) in [(&[][..], 1), (&["skip_trx=on"], 1), (&three, 3)] {
            let (kinds, text) = statement_kinds(name, sets);
            assert_eq!(kind(name, sets), "steps", "{name} {sets:?}");
            assert!(
                !text.contains("BEGIN") && !text.contains("COMMIT"),
                "{text}"
            );
            assert_eq!(kinds.len(), updates, "{name} {sets:?}");
        }
    }
}

/// The number of the table (`loadrig_sbtestN`) a statement names.
fn table_of(query: &str) -> usize {
    let rest = &query[query.find("loadrig_sbtest").expect(query) + "loadrig_sbtest".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().expect(query)
}

/// Two-sided bounds for a Binomial(n, p) count at significance `alpha`, by the normal
/// approximation (n·p ≥ 100 here): mean ± z·sd with z the standard normal's 1 − alpha/2
/// quantile, found by bisection on the complementary error function.
fn binomial_bounds(n: u64, p: f64, alpha: f64) -> (f64, f64) {
    // Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: ample for a bound.
    let erfc = |x: f64| {
        let t = 1.0 / (1.0 + 0.3275911 * x);
        let poly = t
            * (0.254829592
                + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
        poly * (-x * x).exp()
    };
    let (mut lo, mut hi) = (0.0, 10.0);
    for _ in 0..100 {
        let z = (lo + hi) / 2.0;
        // P(|Z| > z) = erfc(z / sqrt 2)
        if erfc(z / std::f64::consts::SQRT_2) > alpha {
            lo = z;
        } else {
            hi = z;
        }
    }
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    (mean - hi * sd, mean + hi * sd)
}

#[test]
fn binomial_bounds_are_the_normal_quantiles() {
    // z = 3.2905 for two-sided 0.001.
    let (lo, hi) = binomial_bounds(10_000, 0.5, 0.001);
    assert!((hi - 5000.0 - 3.2905 * 50.0).abs() < 0.1, "{lo} {hi}");
    assert!((5000.0 - lo - 3.2905 * 50.0).abs() < 0.1, "{lo} {hi}");
}

/// sysbench's `--tables=N` (oltp_common.lua's get_table_num): every statement group of a
/// transaction (the point selects, each range kind, the index updates, the non-index
/// updates, the delete + insert pairs) draws its table uniformly from 1..N, and all the
/// statements of a group use it. Over 2000 transactions from `loadrig ops`, each group's
/// count per table lies within Binomial(2000, 1/4) bounds at significance 0.001 (Bonferroni
/// over the 8 groups × 4 tables), and two groups' tables are independent: the point selects
/// and the index updates share a table in Binomial(2000, 1/4) bounds of transactions.
#[test]
fn tables_are_drawn_per_statement_group() {
    const TX: u64 = 2000;
    let d = Dir::new();
    let count = TX.to_string();
    let out = d.ok(&[
        "ops",
        "oltp_read_write",
        "--set",
        "tables=4",
        "--set",
        "point_selects=3",
        "--set",
        "delete_inserts=2",
        "--count",
        &count,
        "--seed",
        "11",
        "--json",
    ]);
    let mut per_group: std::collections::BTreeMap<&str, [u64; 4]> = Default::default();
    let mut same = 0;
    let mut transactions = 0;
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let steps = v["steps"].as_array().unwrap();
        let queries: Vec<&str> = steps.iter().filter_map(|s| s["query"].as_str()).collect();
        assert_eq!(queries.len(), 3 + 4 + 2 + 4);
        let groups: [(&str, &[&str]); 8] = [
            ("point", &queries[0..3]),
            ("simple", &queries[3..4]),
            ("sum", &queries[4..5]),
            ("order", &queries[5..6]),
            ("distinct", &queries[6..7]),
            ("index", &queries[7..8]),
            ("non_index", &queries[8..9]),
            ("delete_insert", &queries[9..13]),
        ];
        for (name, qs) in groups {
            let t = table_of(qs[0]);
            assert!((1..=4).contains(&t), "{}", qs[0]);
            assert!(qs.iter().all(|q| table_of(q) == t), "{name}: {qs:?}");
            per_group.entry(name).or_default()[t - 1] += 1;
        }
        if table_of(queries[0]) == table_of(queries[7]) {
            same += 1;
        }
        transactions += 1;
    }
    assert_eq!(transactions, TX);
    let (lo, hi) = binomial_bounds(TX, 0.25, 0.001 / 32.0);
    for (name, counts) in &per_group {
        assert_eq!(counts.iter().sum::<u64>(), TX, "{name}");
        for c in counts {
            assert!(
                (lo..=hi).contains(&(*c as f64)),
                "{name}: {counts:?} outside {lo:.0}..{hi:.0}"
            );
        }
    }
    let (lo, hi) = binomial_bounds(TX, 0.25, 0.001);
    assert!(
        (lo..=hi).contains(&(same as f64)),
        "{same} outside {lo:.0}..{hi:.0}"
    );
}

/// `tables` below 1 exits 2: `--set` by the parameter's floor, a file without the floor at
/// the place that uses it; a number of tables above what a statement can be written for
/// exits 2 too.
#[test]
fn tables_below_one_are_refused() {
    let d = Dir::new();
    let text = d
        .ok(&["init", "oltp_insert"])
        .replace("tables = { value = 1, min = 1 }", "tables = 0");
    let path = d.write("w.toml", &text);
    let (_, stderr) = d.code(2, &["ops", path.to_str().unwrap()]);
    let (line, col) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("\"{tables}\"").map(|c| (i + 1, c + 1)))
        .unwrap();
    assert!(
        stderr.contains(&format!(
            "w.toml:{line}:{col}: repeat = \"{{tables}}\" is 0"
        )),
        "{stderr}"
    );
    for name in BUILTINS {
        let (_, stderr) = d.code(2, &["ops", name, "--set", "tables=0"]);
        assert!(
            stderr.contains("--set tables=0: the workload")
                && stderr.contains("needs tables of 1 or more"),
            "{name}: {stderr}"
        );
        let (_, stderr) = d.code(2, &["ops", name, "--set", "tables=1001"]);
        assert!(stderr.contains("takes 1001 values"), "{name}: {stderr}");
    }
}

const TABLES: u64 = 3;

/// The rows in each of the TABLES tables (one query, one row).
fn rows_per_table(row: &dyn Fn(&str) -> Vec<i64>) -> Vec<i64> {
    let counts: Vec<String> = (1..=TABLES)
        .map(|t| format!("(SELECT COUNT(*) FROM loadrig_sbtest{t})"))
        .collect();
    row(&format!("SELECT {}", counts.join(", ")))
}

/// With `tables=3`, `sysbench prepare` loads each table; oltp_insert's new rows are spread
/// over them (each table's share within Binomial(OPS, 1/3) bounds at significance 0.001,
/// Bonferroni over the tables; the total exact); oltp_read_write leaves each table at
/// table_size rows; oltp_delete's found rows are exactly the rows gone; `loadrig cleanup`
/// drops every table.
fn several_tables(url: &str, row: &dyn Fn(&str) -> Vec<i64>, tables_left: &dyn Fn() -> i64) {
    let d = Dir::new();
    let run = |name: &str| {
        let ops = OPS.to_string();
        let size = format!("table_size={TABLE_SIZE}");
        let tables = format!("tables={TABLES}");
        let out = d.ok(&[
            "run",
            name,
            "--target",
            url,
            "--set",
            &size,
            "--set",
            &tables,
            "--ops",
            &ops,
            "--clients",
            "2",
            "--seed",
            "9",
            "-o",
            "r.json",
        ]);
        let r = d.result("r.json");
        assert_eq!(
            (r.operations[0].ok, r.operations[0].errors),
            (OPS, 0),
            "{name}: {out}"
        );
        // drop, create, rows, index: four statements per table
        assert_eq!(
            r.setup.as_ref().unwrap().statements,
            4 * TABLES as usize,
            "{name}"
        );
        r.operations[0].rows
    };
    run("oltp_insert");
    let counts = rows_per_table(row);
    let added: Vec<i64> = counts.iter().map(|c| c - TABLE_SIZE).collect();
    assert_eq!(added.iter().sum::<i64>(), OPS as i64, "{counts:?}");
    let (lo, hi) = binomial_bounds(OPS, 1.0 / TABLES as f64, 0.001 / TABLES as f64);
    for a in &added {
        assert!(
            (lo..=hi).contains(&(*a as f64)),
            "{added:?} outside {lo:.0}..{hi:.0}"
        );
    }
    run("oltp_read_write");
    assert_eq!(rows_per_table(row), vec![TABLE_SIZE; TABLES as usize]);
    let found = run("oltp_delete");
    let left: i64 = rows_per_table(row).iter().sum();
    assert_eq!(left, TABLES as i64 * TABLE_SIZE - found as i64);
    assert!(found > 0);
    d.ok(&["cleanup", "--target", url]);
    assert_eq!(tables_left(), 0);
}

#[test]
fn several_tables_on_sqlite() {
    let d = Dir::new();
    let db = d.join("sysbench.db");
    let url = format!("sqlite://{}", db.display());
    let row = |sql: &str| ints(sqlite_row(&db, sql));
    several_tables(&url, &row, &|| {
        row("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'loadrig_sbtest%'")[0]
    });
}

#[test]
fn several_tables_on_postgres() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    let row = |sql: &str| ints(pg_row(&url, sql));
    several_tables(&url, &row, &|| {
        row("SELECT COUNT(*) FROM pg_tables WHERE tablename LIKE 'loadrig_sbtest%' AND schemaname = current_schema()")[0]
    });
}

#[test]
fn several_tables_on_mariadb() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    let row = |sql: &str| ints(mysql_row(&url, sql));
    several_tables(&url, &row, &|| {
        row("SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'loadrig_sbtest%' AND table_schema = DATABASE()")[0]
    });
}

/// `--skip-load` is sysbench's `run` after one `prepare`: the setup that drops and reloads
/// the tables is skipped, and the run reads what the earlier run loaded.
#[test]
fn skip_load_reuses_the_tables_an_earlier_run_set_up() {
    let d = Dir::new();
    let db = d.join("sysbench.db");
    let url = format!("sqlite://{}", db.display());
    let run = |size: &str, more: &[&str]| {
        let size = format!("table_size={size}");
        let args = ["run", "oltp_point_select", "--target", &url, "--set", &size];
        d.ok(&[&args[..], &["--ops", "20", "-o", "r.json"], more].concat());
        d.result("r.json")
    };
    let count = || ints(sqlite_row(&db, "SELECT COUNT(*) FROM loadrig_sbtest1"))[0];
    assert!(run("300", &[]).setup.is_some());
    assert_eq!(count(), 300);
    // A reload would leave 100 rows; the selects of ids up to 100 all find theirs.
    let r = run("100", &["--skip-load"]);
    assert_eq!(count(), 300);
    assert_eq!((r.total.ok, r.total.errors, r.total.rows), (20, 0, 20));
    assert!(r.setup.is_none(), "{:?}", r.setup);
    assert!(r.data_load.is_none_or(|l| l.skipped));
}
