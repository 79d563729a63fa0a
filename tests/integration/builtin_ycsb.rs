//! The YCSB core built-ins `ycsb-a` .. `ycsb-f`: their mixes from `loadrig ops` against
//! YCSB's proportions (binomial bounds at significance 0.001, fixed seed), the records and
//! keys they send, and a fixed operation count on every target that holds records (SQLite,
//! fs, and the throwaway PostgreSQL, MariaDB and Redis of `scripts/services.sh`; without
//! their URLs those tests say "skipped"), with the records left in the store counted there.

use crate::common;

use std::collections::BTreeMap;

use crate::common::locks::{hold, Shared};
use crate::common::sql::{ints, mysql_row, pg_row};
use crate::common::{server_url, Dir};
use serde_json::Value;

const RECORDS: u64 = 200;
const OPS: u64 = 400;

/// (built-in, [(operation, YCSB's proportion)]) as YCSB's workloads/workloada .. f set them.
const MIXES: &[(&str, &[(&str, f64)])] = &[
    ("ycsb-a", &[("read", 0.5), ("update", 0.5)]),
    ("ycsb-b", &[("read", 0.95), ("update", 0.05)]),
    ("ycsb-c", &[("read", 1.0)]),
    ("ycsb-d", &[("read", 0.95), ("insert", 0.05)]),
    ("ycsb-e", &[("scan", 0.95), ("insert", 0.05)]),
    ("ycsb-f", &[("read", 0.5), ("read-modify-write", 0.5)]),
];

/// Two-sided 0.001 quantile of the normal law: a count k of n draws with probability p lies
/// within n·p ± Z·sqrt(n·p·(1 − p)) (the binomial's normal bound; n·p ≥ 20 here).
const Z: f64 = 3.29;

fn ops_json(d: &Dir, name: &str, extra: &[&str]) -> Vec<Value> {
    let records = format!("recordcount={RECORDS}");
    let count = OPS.to_string();
    let mut args = vec![
        "ops", name, "--count", &count, "--json", "--seed", "7", "--set", &records,
    ];
    args.extend_from_slice(extra);
    d.ok(&args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn counts(ops: &[Value]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for op in ops {
        *out.entry(op["op"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    out
}

fn within_binomial(name: &str, op: &str, k: u64, n: u64, p: f64) {
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (k as f64 - mean).abs() <= Z * sd,
        "{name}: {op} {k} of {n}, expected {mean} ± {:.1}",
        Z * sd
    );
}

#[test]
fn mixes_match_ycsbs_proportions() {
    let d = Dir::new();
    for (name, mix) in MIXES {
        let ops = ops_json(&d, name, &[]);
        assert_eq!(ops.len() as u64, OPS, "{name}");
        let got = counts(&ops);
        let names: Vec<&str> = mix.iter().map(|(op, _)| *op).collect();
        assert_eq!(
            got.keys().map(String::as_str).collect::<Vec<_>>(),
            {
                let mut sorted = names.clone();
                sorted.sort();
                sorted
            },
            "{name}: operations of proportion 0 are left out"
        );
        for (op, p) in *mix {
            let k = got[*op];
            if *p == 1.0 {
                assert_eq!(k, OPS, "{name}");
            } else {
                within_binomial(name, op, k, OPS, *p);
            }
        }
    }
    // A YCSB property file's proportions carry over with --set.
    let ops = ops_json(
        &d,
        "ycsb-a",
        &[
            "--set",
            "readproportion=0.2",
            "--set",
            "updateproportion=0.3",
            "--set",
            "insertproportion=0.5",
        ],
    );
    let got = counts(&ops);
    within_binomial("ycsb-a", "read", got["read"], OPS, 0.2);
    within_binomial("ycsb-a", "update", got["update"], OPS, 0.3);
    within_binomial("ycsb-a", "insert", got["insert"], OPS, 0.5);
}

#[test]
fn operations_and_keys_are_ycsbs() {
    let d = Dir::new();
    // Reads of all fields (readallfields=true), updates of one field (writeallfields=false)
    // of fieldlength characters, keys user + FNV-64 of a number below recordcount.
    let ops = ops_json(&d, "ycsb-a", &[]);
    let hashes: std::collections::HashSet<String> =
        (0..RECORDS).map(|n| format!("user{}", fnv(n))).collect();
    for op in &ops {
        let key = op["key"].as_str().unwrap();
        assert!(hashes.contains(key), "{key} is not a loaded key");
        match op["op"].as_str().unwrap() {
            "read" => assert!(op["text"].as_str().unwrap().ends_with("fields=all"), "{op}"),
            "update" => {
                let args = op["args"].as_array().unwrap();
                assert_eq!(args.len(), 3, "{op}");
                assert!(args[1].as_u64().unwrap() < 10);
                assert_eq!(args[2].as_str().unwrap().len(), 100);
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!(fnv(0), 6284781860667377211, "YCSB's key for number 0");
    // insertorder=ordered: user + the number; readallfields=false: one field.
    let ops = ops_json(
        &d,
        "ycsb-c",
        &[
            "--set",
            "insertorder=ordered",
            "--set",
            "readallfields=false",
        ],
    );
    for op in &ops {
        let n: u64 = op["key"].as_str().unwrap()[4..].parse().unwrap();
        assert!(n < RECORDS);
        assert!(op["text"].as_str().unwrap().contains(" field="), "{op}");
    }
    // Inserts continue after the loaded records (client 0 of 1: recordcount, +1, ...);
    // workload D reads the newest most.
    let ops = ops_json(&d, "ycsb-d", &["--set", "insertorder=ordered"]);
    let inserts: Vec<u64> = ops
        .iter()
        .filter(|o| o["op"] == "insert")
        .map(|o| o["key"].as_str().unwrap()[4..].parse().unwrap())
        .collect();
    assert_eq!(
        inserts,
        (RECORDS..RECORDS + inserts.len() as u64).collect::<Vec<_>>()
    );
    let fields = ops.iter().find(|o| o["op"] == "insert").unwrap()["args"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(fields, 11, "the key and fieldcount values");
    let newest = ops
        .iter()
        .filter(|o| o["op"] == "read")
        .filter(|o| o["key"].as_str().unwrap()[4..].parse::<u64>().unwrap() + 5 >= RECORDS)
        .count();
    assert!(
        newest * 3 > ops.len(),
        "latest: {newest} of {} reads near the newest",
        ops.len()
    );
    // E's scans: 1 to maxscanlength records; F's read-modify-write reads and updates one key
    // in one transaction.
    for op in ops_json(&d, "ycsb-e", &["--set", "maxscanlength=10"]) {
        if op["op"] == "scan" {
            let count = op["args"][1].as_u64().unwrap();
            assert!((1..=10).contains(&count), "{op}");
        }
    }
    for op in ops_json(&d, "ycsb-f", &[]) {
        if op["op"] == "read-modify-write" {
            let steps = op["steps"].as_array().unwrap();
            let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
            assert_eq!(kinds, ["record.read", "record.update"], "{op}");
            assert!(op["text"].as_str().unwrap().starts_with("BEGIN; "), "{op}");
            assert_eq!(steps[0]["args"][0], steps[1]["args"][0], "{op}");
        }
    }
}

#[test]
fn zipfian_keys_are_ycsbs_key_chooser() {
    let d = Dir::new();
    // No inserts (A): YCSB's ScrambledZipfianGenerator(0, recordcount) has recordcount + 1
    // numbers and number recordcount is drawn again, so every key is a loaded one and the
    // hottest is where number 0 hashes: fnvhash64(0) % 201 = 57 (% 200 would be 11).
    let count = "2000";
    let args = [
        "ops",
        "ycsb-a",
        "--count",
        count,
        "--json",
        "--seed",
        "7",
        "--set",
        "recordcount=200",
        "--set",
        "insertorder=ordered",
    ];
    let ops: Vec<Value> = d
        .ok(&args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ops.len(), 2000);
    let mut hits = vec![0u32; RECORDS as usize];
    for op in &ops {
        let n: u64 = op["key"].as_str().unwrap()[4..].parse().unwrap();
        assert!(n < RECORDS, "{op} is not a loaded key");
        hits[n as usize] += 1;
    }
    assert_eq!((0..RECORDS).max_by_key(|&n| hits[n as usize]), Some(57));
    assert_eq!((fnv(0) % 201, fnv(0) % 200), (57, 11));
    // With inserts (E): every scan starts at or below the newest key this client has
    // inserted so far, and some start above the loaded ones.
    let ops = ops_json(
        &d,
        "ycsb-e",
        &["--set", "insertorder=ordered", "--set", "maxscanlength=5"],
    );
    let mut newest = RECORDS - 1;
    let mut above = 0;
    for op in &ops {
        let n: u64 = op["key"].as_str().unwrap()[4..].parse().unwrap();
        match op["op"].as_str().unwrap() {
            "insert" => newest = n,
            "scan" => {
                assert!(n <= newest, "{op} after inserts up to {newest}");
                above += u32::from(n >= RECORDS);
            }
            other => panic!("{other}"),
        }
    }
    assert!(above > 0, "no scan of an inserted key");
}

/// YCSB's `Utils.fnvhash64`.
fn fnv(n: u64) -> u64 {
    let mut hash: i64 = 0xCBF29CE484222325u64 as i64;
    let mut val = n as i64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(1099511628211);
    }
    hash.unsigned_abs()
}

#[test]
fn unknown_properties_and_scans_on_files_exit_2() {
    let d = Dir::new();
    let (_, err) = d.code(2, &["ops", "ycsb-a", "--set", "threadcount=4"]);
    assert!(err.contains("no parameter 'threadcount'"), "{err}");
    assert!(
        err.contains("recordcount") && err.contains("requestdistribution"),
        "{err}"
    );
    let target = format!("fs://{}", d.join("files").display());
    let (_, err) = d.code(2, &["run", "ycsb-e", "--target", &target]);
    assert!(
        err.contains("operation 'scan' uses record.scan, which fs:// targets cannot do"),
        "{err}"
    );
    assert!(
        !d.join("files").join("loadrig_usertable").exists(),
        "nothing ran"
    );
    let (_, err) = d.code(
        2,
        &["run", "ycsb-a", "--target", "ldap://127.0.0.1:1?base=dc=x"],
    );
    assert!(
        err.contains("record, which ldap:// targets do not run"),
        "{err}"
    );
}

/// Run every built-in (but those `skip` names) for OPS operations on RECORDS records and
/// check, per operation, that none failed, that every read found its record, and that the
/// store holds the loaded records plus the inserted ones (`count` reads it).
fn pg_count(url: &str, sql: &str) -> i64 {
    ints(pg_row(url, sql))[0]
}

fn mysql_count(url: &str, sql: &str) -> i64 {
    ints(mysql_row(url, sql))[0]
}

fn every_builtin(url: &str, skip: &[&str], count: &dyn Fn() -> i64) {
    for (name, mix) in MIXES {
        if skip.contains(name) {
            continue;
        }
        let d = Dir::new();
        let records = format!("recordcount={RECORDS}");
        let ops = format!("operationcount={OPS}");
        let out = d.ok(&[
            "run", name, "--target", url, "--set", &records, "--set", &ops, "--seed", "3", "-o",
            "r.json",
        ]);
        let r = d.result("r.json");
        let mut total = 0;
        let mut inserted = 0;
        for op in &r.operations {
            assert_eq!(op.errors, 0, "{name} {}: {out}", op.name);
            total += op.ok;
            // Statements as YCSB's operations: a read or scan is one read, an insert or
            // update one write; read-modify-write one of each between BEGIN and COMMIT.
            let s = &op.statements;
            let expected = match op.name.as_str() {
                "read" | "scan" => [op.ok, 0, 0],
                "insert" | "update" => [0, op.ok, 0],
                _ => [op.ok, op.ok, 2 * op.ok],
            };
            assert_eq!([s.read, s.write, s.other], expected, "{name} {}", op.name);
            match op.name.as_str() {
                "insert" => inserted = op.ok,
                // One record each (a queued read inside a Redis MULTI counts none).
                "read" => assert_eq!(op.rows, op.ok, "{name}: every read finds its record"),
                "update" => assert_eq!(op.rows, op.ok, "{name}"),
                _ => {}
            }
        }
        assert_eq!(total, OPS, "{name}: {out}");
        // The run's mix, as loadrig ops shows it: YCSB's proportions.
        for (op, p) in *mix {
            let k = r
                .operations
                .iter()
                .find(|o| o.name == *op)
                .map_or(0, |o| o.ok);
            if *p == 1.0 {
                assert_eq!(k, OPS, "{name}");
            } else {
                within_binomial(name, op, k, OPS, *p);
            }
        }
        assert_eq!(count(), (RECORDS + inserted) as i64, "{name}: records left");
    }
}

/// Workload D with several clients: they share one insert counter and read only keys whose
/// insert has ended (YCSB's acknowledged counter), so every read finds its record. With a
/// counter per client 17 % of the reads at 4 clients found nothing.
fn latest_reads_find_their_records(url: &str, clients: &str) {
    let d = Dir::new();
    let out = d.ok(&[
        "run",
        "ycsb-d",
        "--target",
        url,
        "--set",
        &format!("recordcount={RECORDS}"),
        "--set",
        "operationcount=3000",
        "--set",
        "insertproportion=0.2",
        "--set",
        "readproportion=0.8",
        "--clients",
        clients,
        "--seed",
        "5",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let op = |name: &str| r.operations.iter().find(|o| o.name == name).unwrap();
    let (read, insert) = (op("read"), op("insert"));
    assert_eq!(read.errors + insert.errors, 0, "{out}");
    assert!(insert.ok > 400, "{out}");
    assert_eq!(
        read.empty, 0,
        "{clients} clients: reads of keys not inserted yet: {out}"
    );
    assert_eq!(read.rows, read.ok, "{out}");
}

#[test]
fn latest_follows_the_inserts_every_client_acknowledged() {
    let d = Dir::new();
    let url = format!("sqlite://{}", d.join("t.db").display());
    latest_reads_find_their_records(&url, "4");
    if let Some(url) = common::redis_db(10) {
        let _db = hold(&[Shared::Redis(10)]);
        common::redis_flushed(&url);
        latest_reads_find_their_records(&url, "16");
    }
    // `ops` shows the clients one after another: the second takes its insert keys after
    // the first's, from the one counter.
    let ops = ops_json(
        &d,
        "ycsb-d",
        &["--set", "insertorder=ordered", "--clients", "2"],
    );
    let inserts: Vec<(u64, u64)> = ops
        .iter()
        .filter(|o| o["op"] == "insert")
        .map(|o| {
            let key: u64 = o["key"].as_str().unwrap()[4..].parse().unwrap();
            (o["client"].as_u64().unwrap(), key)
        })
        .collect();
    let keys: Vec<u64> = inserts.iter().map(|i| i.1).collect();
    assert_eq!(
        keys,
        (RECORDS..RECORDS + keys.len() as u64).collect::<Vec<_>>()
    );
    assert!(inserts.first().unwrap().0 == 0 && inserts.last().unwrap().0 == 1);
}

#[test]
fn builtins_on_sqlite() {
    let d = Dir::new();
    let db = d.join("t.db");
    let url = format!("sqlite://{}", db.display());
    every_builtin(&url, &[], &|| {
        d.sqlite_count("SELECT COUNT(*) FROM loadrig_usertable")
    });
    // The record as YCSB's JDBC binding lays it out; key number 0 hashed.
    let one = d.sqlite_count(
        "SELECT COUNT(*) FROM loadrig_usertable WHERE YCSB_KEY = 'user6284781860667377211' \
         AND LENGTH(FIELD0) = 100 AND LENGTH(FIELD9) = 100",
    );
    assert_eq!(one, 1);
    d.ok(&["cleanup", "--target", &url]);
    assert_eq!(
        d.sqlite_count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'loadrig_usertable'"),
        0
    );
}

#[test]
fn builtins_on_files() {
    let d = Dir::new();
    let dir = d.join("files");
    let url = format!("fs://{}", dir.display());
    let folder = dir.join("loadrig_usertable");
    every_builtin(&url, &["ycsb-e"], &|| {
        std::fs::read_dir(&folder).unwrap().count() as i64
    });
    d.ok(&["cleanup", "--target", &url]);
    assert!(!folder.exists());
}

#[test]
fn builtins_on_postgres() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    every_builtin(&url, &[], &|| pg_count(&url, COUNT));
    assert_eq!(
        pg_count(&url, RECORD_ZERO),
        1,
        "key number 0, hashed, ten fields of 100"
    );
    Dir::new().ok(&["cleanup", "--target", &url]);
    let left = "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'loadrig_usertable'";
    assert_eq!(pg_count(&url, left), 0, "cleanup drops the record table");
}

#[test]
fn builtins_on_mariadb() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    every_builtin(&url, &[], &|| mysql_count(&url, COUNT));
    assert_eq!(
        mysql_count(&url, RECORD_ZERO),
        1,
        "key number 0, hashed, ten fields of 100"
    );
    Dir::new().ok(&["cleanup", "--target", &url]);
    let left = "SELECT COUNT(*) FROM information_schema.tables \
        WHERE table_schema = DATABASE() AND table_name = 'loadrig_usertable'";
    assert_eq!(mysql_count(&url, left), 0, "cleanup drops the record table");
}

#[test]
fn builtins_on_redis() {
    let Some(url) = common::redis_db(9) else {
        return;
    };
    let _db = hold(&[Shared::Redis(9)]);
    let conn = std::cell::RefCell::new(common::redis_flushed(&url));
    every_builtin(&url, &[], &|| {
        let mut c = conn.borrow_mut();
        let hashes: Vec<String> = redis::cmd("KEYS")
            .arg("loadrig:user*")
            .query(&mut *c)
            .unwrap();
        let indexed: i64 = redis::cmd("ZCARD")
            .arg("loadrig:_indices")
            .query(&mut *c)
            .unwrap();
        assert_eq!(hashes.len() as i64, indexed, "every record is in the index");
        indexed
    });
    // The record of key number 0 as YCSB's Redis binding lays it out, and its index entry.
    let record: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg("loadrig:user6284781860667377211")
        .query(&mut *conn.borrow_mut())
        .unwrap();
    assert_eq!(record.len(), 10);
    assert!(record
        .iter()
        .all(|(k, v)| k.starts_with("field") && v.len() == 100));
    let score: f64 = redis::cmd("ZSCORE")
        .arg("loadrig:_indices")
        .arg("user6284781860667377211")
        .query(&mut *conn.borrow_mut())
        .unwrap();
    assert_eq!(score, -594971599.0, "Java's hashCode of the key");
    let d = Dir::new();
    d.ok(&["cleanup", "--target", &url]);
    let left: i64 = redis::cmd("DBSIZE").query(&mut *conn.borrow_mut()).unwrap();
    assert_eq!(left, 0);
}

const COUNT: &str = "SELECT COUNT(*) FROM loadrig_usertable";
/// The record of key number 0 as YCSB's JDBC binding lays it out.
const RECORD_ZERO: &str =
    "SELECT COUNT(*) FROM loadrig_usertable WHERE YCSB_KEY = 'user6284781860667377211' \
    AND LENGTH(FIELD0) = 100 AND LENGTH(FIELD9) = 100";
