//! `loadrig ops`: the operations each client would send, without a target. Exact output
//! for a seed, the same seed the same output, the mix against the weights (exact binomial
//! bounds), what a run on SQLite then stores, and bad input.

use std::collections::BTreeMap;

use crate::common::Dir;
use serde_json::Value;
use statrs::distribution::{Binomial, DiscreteCDF};

const TINY: &str = r#"name = "tiny"

[params]
size = 600

[load]
clients = 2

[[op]]
name = "put"
kv.put = { key = "user:{seq 100}", value = "{bytes size}" }

[[op]]
name = "get"
weight = 3
kv.get = { key = "user:{uniform 100..110}" }

[[op]]
name = "by id"
sql = { query = "SELECT v FROM loadrig_t WHERE id = ? AND c = ?", params = ["{uniform 0..10}", "c{client}"] }
"#;

/// `ops ARGS --json`, each line parsed.
fn json_ops(d: &Dir, args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.push("--json");
    d.ok(&all)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_seed_gives_exactly_these_operations() {
    let d = Dir::new();
    d.write("tiny.toml", TINY);
    let out = d.ok(&["ops", "tiny.toml", "--seed", "7", "--count", "4"]);
    assert_eq!(
        out,
        "0 put: kv.put user:100 <600 bytes>\n\
         0 get: kv.get user:107\n\
         0 get: kv.get user:109\n\
         0 get: kv.get user:104\n\
         1 put: kv.put user:101 <600 bytes>\n\
         1 by id: sql \"SELECT v FROM loadrig_t WHERE id = ? AND c = ?\" [2, c1]\n\
         1 get: kv.get user:103\n\
         1 get: kv.get user:105\n"
    );
    let lines = d.ok(&["ops", "tiny.toml", "--seed", "7", "--count", "4", "--json"]);
    let first = lines.lines().next().unwrap();
    assert_eq!(
        first,
        r#"{"client":0,"index":0,"op":"put","kind":"kv.put","key":"user:100","args":["user:100",{"bytes":600}],"text":"kv.put user:100 <600 bytes>"}"#
    );
    let sql: Value = serde_json::from_str(lines.lines().nth(5).unwrap()).unwrap();
    assert_eq!(sql["op"], "by id");
    assert_eq!(
        sql["query"],
        "SELECT v FROM loadrig_t WHERE id = ? AND c = ?"
    );
    assert_eq!(sql["args"], serde_json::json!([2, "c1"]));
    assert_eq!((&sql["client"], &sql["index"]), (&1.into(), &1.into()));
}

#[test]
fn the_same_seed_gives_the_same_operations_and_another_seed_other_keys() {
    let d = Dir::new();
    d.write("tiny.toml", TINY);
    let args = |seed: &'static str| ["ops", "tiny.toml", "--count", "200", "--seed", seed];
    let a = d.ok(&args("1"));
    assert_eq!(a.lines().count(), 400, "2 clients from [load], 200 each");
    assert_eq!(d.ok(&args("1")), a);
    let b = d.ok(&args("2"));
    assert_ne!(b, a);
    let keys = |out: &str| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.split_once(": kv.get ").map(|(_, k)| k.to_string()))
            .collect()
    };
    assert_ne!(keys(&a), keys(&b));
    // Without --seed: the seed is 0, and stderr says so.
    let out = d.loadrig(&["ops", "tiny.toml", "--count", "200"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), d.ok(&args("0")));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seed 0"));
}

#[test]
fn clients_draw_interleaved_sequence_numbers() {
    let d = Dir::new();
    d.write("tiny.toml", TINY);
    let ops = json_ops(&d, &["ops", "tiny.toml", "--clients", "3", "--count", "50"]);
    assert_eq!(ops.len(), 150);
    let mut puts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for o in ops.iter().filter(|o| o["op"] == "put") {
        let key = o["key"].as_str().unwrap();
        let n: u64 = key.strip_prefix("user:").unwrap().parse().unwrap();
        puts.entry(o["client"].as_u64().unwrap())
            .or_default()
            .push(n);
    }
    for (client, numbers) in &puts {
        let expected: Vec<u64> = (0..numbers.len() as u64)
            .map(|k| 100 + client + 3 * k)
            .collect();
        assert_eq!(numbers, &expected, "client {client}");
    }
    assert_eq!(puts.len(), 3);
}

/// Over 4 clients × 5,000 operations of session-store, each operation's count must lie in
/// the two-sided acceptance region of Binomial(20,000, weight / total weight) at
/// significance 0.001 / 4 each (Bonferroni: 0.001 for the four together). Fixed seed.
#[test]
fn the_mix_follows_the_weights() {
    let d = Dir::new();
    let ops = json_ops(
        &d,
        &[
            "ops",
            "session-store",
            "--clients",
            "4",
            "--count",
            "5000",
            "--seed",
            "42",
            "--set",
            "value_size=8",
        ],
    );
    let n = ops.len() as u64;
    assert_eq!(n, 20_000);
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for o in &ops {
        *counts
            .entry(o["op"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let weights = [
        ("create", 10.0),
        ("read", 70.0),
        ("touch", 15.0),
        ("expire", 5.0),
    ];
    let alpha = 0.001 / weights.len() as f64;
    for (name, weight) in weights {
        let b = Binomial::new(weight / 100.0, n).unwrap();
        let (lo, hi) = (b.inverse_cdf(alpha / 2.0), b.inverse_cdf(1.0 - alpha / 2.0));
        let count = counts.get(name).copied().unwrap_or(0);
        assert!(
            (lo..=hi).contains(&count),
            "{name}: {count} outside [{lo}, {hi}] ({counts:?})"
        );
    }
    assert_eq!(counts.values().sum::<u64>(), n);
    // Reads, touches and expiries address stored sessions; creates go past them.
    for o in &ops {
        let key = o["key"].as_str().unwrap();
        let k: u64 = key.strip_prefix("session:").unwrap().parse().unwrap();
        assert_eq!(o["op"] == "create", k >= 10_000, "{o}");
    }
}

/// What a run on SQLite with the same seed and clients stores is exactly what `ops` says
/// the clients put (keys and values), as far as the run went.
#[test]
fn a_run_with_the_same_seed_stores_what_ops_shows() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"name = "puts and gets"
[[op]]
name = "put"
kv.put = { key = "k{seq}", value = "{string 12}" }
[[op]]
name = "get"
weight = 2
kv.get = { key = "k{uniform 0..50}" }
"#,
    );
    let (clients, per_client) = (3, 20);
    let total = (clients * per_client).to_string();
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./kv.db",
        "--clients",
        &clients.to_string(),
        "--ops",
        &total,
        "--seed",
        "9",
        "-o",
        "r.json",
    ]);
    let db = rusqlite::Connection::open(d.join("kv.db")).unwrap();
    let mut stmt = db.prepare("SELECT k, v FROM loadrig_kv").unwrap();
    let mut stored: Vec<(String, String)> = stmt
        .query_map([], |row| {
            let v: Vec<u8> = row.get(1)?;
            Ok((row.get(0)?, String::from_utf8(v).unwrap()))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    stored.sort();
    let ops = json_ops(
        &d,
        &[
            "ops",
            "w.toml",
            "--clients",
            &clients.to_string(),
            "--count",
            &per_client.to_string(),
            "--seed",
            "9",
        ],
    );
    let mut put: Vec<(String, String)> = ops
        .iter()
        .filter(|o| o["kind"] == "kv.put")
        .map(|o| {
            let text = |v: &Value| v.as_str().unwrap().to_string();
            (text(&o["args"][0]), text(&o["args"][1]))
        })
        .collect();
    put.sort();
    assert!(!put.is_empty());
    assert_eq!(stored, put);
}

#[test]
fn bad_input_exits_2() {
    let d = Dir::new();
    d.write("tiny.toml", TINY);
    let (_, err) = d.code(2, &["ops", "no-such-workload"]);
    assert!(
        err.contains("no workload file or built-in workload named"),
        "{err}"
    );
    let (_, err) = d.code(2, &["ops", "tiny.toml", "--count", "0"]);
    assert!(err.contains("--count 0"), "{err}");
    let (_, err) = d.code(2, &["ops", "tiny.toml", "--op", "scan"]);
    assert!(err.contains("no such operation"), "{err}");
    let (_, err) = d.code(2, &["ops", "tiny.toml", "--set", "nope=1"]);
    assert!(err.contains("no parameter 'nope'"), "{err}");
    let (_, err) = d.code(2, &["ops", "tiny.toml", "--clients", "0"]);
    assert!(err.contains("--clients 0"), "{err}");
    assert_eq!(d.files(), ["tiny.toml"], "nothing written");
}
