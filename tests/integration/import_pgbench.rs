//! `loadrig import pgbench`: pgbench's own tpcb-like script translates and runs on SQLite
//! with one account per transaction; every supported meta-command translates; every
//! unsupported construct exits 2 with its line and column.

use crate::common;

use crate::common::locks::{hold, Shared};
use crate::common::Dir;
use serde_json::Value;

/// pgbench's built-in tpcb-like script, as its documentation prints it.
const TPCB: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

fn import(dir: &Dir, script: &str) -> std::process::Output {
    dir.write("script.sql", script);
    dir.loadrig(&["import", "pgbench", "script.sql"])
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The built-in pgbench-tpcb's setup (pgbench -i), to put before a translated script.
fn tpcb_setup() -> String {
    let builtin = include_str!("../../workloads/pgbench-tpcb.toml");
    let start = builtin.find("setup = [").unwrap();
    let end = start + builtin[start..].find("\n]\n").unwrap() + 3;
    builtin[start..end].to_string()
}

/// In t.db: the history rows, the sum of the account balances and of the history deltas.
fn history_and_balances(dir: &Dir) -> (i64, i64, i64) {
    let conn = rusqlite::Connection::open(dir.join("t.db")).unwrap();
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM loadrig_pgbench_history), (SELECT SUM(abalance) FROM loadrig_pgbench_accounts), (SELECT SUM(delta) FROM loadrig_pgbench_history)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

/// Run w.toml for `ops` operations on t.db (SQLite), into r.json; it must succeed.
fn run_on_sqlite(dir: &Dir, ops: u64) {
    let ops = ops.to_string();
    let run = dir.loadrig(&[
        "run",
        "w.toml",
        "--ops",
        &ops,
        "-o",
        "r.json",
        "--target",
        "sqlite://./t.db",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn tpcb_like_translates_and_runs_on_sqlite() {
    let dir = Dir::new();
    let toml = stdout(&import(&dir, TPCB));
    assert!(
        toml.contains(r#"aid = "{uniform 1..100000*scale+1}""#),
        "{toml}"
    );
    assert!(
        toml.contains(r#"delta = "{uniform -5000..5001}""#),
        "{toml}"
    );
    assert_eq!(toml.matches("{ sql = ").count(), 5, "{toml}");
    dir.write("w.toml", &format!("{}\n{toml}", tpcb_setup()));

    let ops = dir.loadrig(&["ops", "w.toml", "--json", "--count", "20"]);
    let text = stdout(&ops);
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 20);
    for op in &lines {
        let steps = op["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 5);
        // The UPDATE's aid ($2) is the SELECT's ($1) and the INSERT's ($3).
        assert_eq!(steps[0]["args"][1], steps[1]["args"][0], "{op}");
        assert_eq!(steps[0]["args"][1], steps[4]["args"][2], "{op}");
    }

    run_on_sqlite(&dir, 50);
    let (n, sa, sh) = history_and_balances(&dir);
    assert_eq!(n, 50);
    assert_eq!(sa, sh);
}

/// Statements without BEGIN commit each on its own in pgbench (autocommit): they become
/// `steps`, which send no BEGIN or COMMIT, with the script's draws shared by both.
#[test]
fn statements_without_begin_commit_each_on_their_own() {
    let dir = Dir::new();
    let script = "\\set aid random(1, 100000 * :scale)
\\set delta random(-5000, 5000)
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);
\\if :aid
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\\endif
";
    let toml = stdout(&import(&dir, script));
    assert!(
        toml.contains("steps = [") && !toml.contains("tx = "),
        "{toml}"
    );
    assert!(toml.contains(r#"when = "aid""#), "{toml}");
    dir.write("w.toml", &format!("{}\n{toml}", tpcb_setup()));
    run_on_sqlite(&dir, 40);
    let r = dir.result("r.json");
    let s = &r.operations[0].statements;
    assert_eq!(
        (s.read, s.write, s.other),
        (40, 80, 0),
        "no BEGIN or COMMIT"
    );
    let (n, sa, sh) = history_and_balances(&dir);
    assert_eq!((n, sa), (40, sh), "one draw of aid and delta per pass");
}

#[test]
fn every_supported_meta_command_translates() {
    let dir = Dir::new();
    let script = "-- a comment
\\set n 10 * :scale + 5
\\set k random(1, :n)
\\set z random_zipfian(1, 1000, 1.5)
\\set g random_gaussian(1, 100, 2.5)
\\set e random_exponential(1, 100, 5)
\\set half (100 / 2) % 7
SELECT :k, :z, :n, :half, :client_id, :scale
  FROM loadrig_t;
\\sleep 5 ms
";
    let toml = stdout(&import(&dir, script));
    assert!(toml.contains(r#"k = "{uniform 1..10*scale+6}""#), "{toml}");
    assert!(toml.contains(r#"z = "{zipf 1..1001 1.5}""#), "{toml}");
    assert!(toml.contains(r#"g = "{gaussian 1..101 2.5}""#), "{toml}");
    assert!(toml.contains(r#"e = "{exponential 1..101 5}""#), "{toml}");
    assert!(
        toml.contains(r#"n = "{uniform 10*scale+5..10*scale+6}""#),
        "{toml}"
    );
    assert!(toml.contains(r#"half = "{uniform 1..2}""#), "{toml}");
    assert!(toml.contains(r#"think_time = "5ms""#), "{toml}");
    assert!(
        toml.contains(r#"params = ["{k}", "{z}", "{n}", "{half}", "{client}", "{scale}"]"#),
        "{toml}"
    );
    assert!(
        !toml.contains("tx = "),
        "one statement without BEGIN is one sql op: {toml}"
    );
    dir.write("w.toml", &toml);
    let ops = dir.loadrig(&["ops", "w.toml", "--json", "--count", "3"]);
    let first: Value = serde_json::from_str(stdout(&ops).lines().next().unwrap()).unwrap();
    assert_eq!(first["args"][2], 15, "{first}");
    assert_eq!(first["args"][3], 1, "{first}");
    // -o writes the same text to a file.
    let out = dir.loadrig(&["import", "pgbench", "script.sql", "-o", "x.toml"]);
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(dir.join("x.toml")).unwrap(), toml);
}

/// pgbench's draws are their minimum plus an offset that depends only on the range's width,
/// so `random(a, b) + c` is the draw over `[a + c, b + c]`: the bounds move, the law stays.
#[test]
fn constants_after_a_draw_move_its_bounds() {
    let dir = Dir::new();
    let script = "\\set n random(1, 10) + 1
\\set d random(-5000, 5000) - 1
\\set m random_zipfian(1, 100, 1.5) - 1 + :scale
\\set g RANDOM_GAUSSIAN(1, 100, 2.5) + 10 * 2
SELECT :n, :d, :m, :g;
";
    let toml = stdout(&import(&dir, script));
    for want in [
        r#"n = "{uniform 2..12}""#,
        r#"d = "{uniform -5001..5000}""#,
        r#"m = "{zipf scale..scale+100 1.5}""#,
        r#"g = "{gaussian 21..121 2.5}""#,
    ] {
        assert!(toml.contains(want), "{want} in {toml}");
    }
    dir.write("w.toml", &toml);
    let ops = dir.loadrig(&["ops", "w.toml", "--json", "--count", "400"]);
    let (mut lo, mut hi) = ([i64::MAX; 4], [i64::MIN; 4]);
    for line in stdout(&ops).lines() {
        let op: Value = serde_json::from_str(line).unwrap();
        for (i, v) in op["args"].as_array().unwrap().iter().enumerate() {
            let v = v.as_i64().unwrap();
            (lo[i], hi[i]) = (lo[i].min(v), hi[i].max(v));
        }
    }
    // Every draw inside the moved bounds (scale = 1), and the uniform one reaches both ends
    // (each is missed by 400 draws with probability 0.9^400).
    assert_eq!((lo[0], hi[0]), (2, 11));
    assert!(lo[1] >= -5001 && hi[1] <= 4999, "{lo:?} {hi:?}");
    assert!(lo[2] == 1 && hi[2] <= 100, "{lo:?} {hi:?}"); // rank 1 is about 40 % of zipf 1.5's draws
    assert!(lo[3] >= 21 && hi[3] <= 120, "{lo:?} {hi:?}");
}

#[test]
fn unsupported_constructs_exit_2_with_line_and_column() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "\\set g random_gaussian(1, 10, 1.5)\nSELECT 1;\n",
            "script.sql:1:31",
            "random_gaussian's parameter 1.5 is out of range",
        ),
        (
            "\\set e random_exponential(1, 10, 0)\nSELECT 1;\n",
            "script.sql:1:34",
            "random_exponential's parameter 0 is out of range",
        ),
        (
            "\\set n random(1, 10) * 2\nSELECT :n;\n",
            "script.sql:1:22",
            "'*' on random()'s draw",
        ),
        (
            "\\set x 1\n  \\syncpipeline\nSELECT 1;\n",
            "script.sql:2:3",
            "\\syncpipeline",
        ),
        (
            "\\startpipeline\nBEGIN;\nSELECT 1;\nEND;\n\\endpipeline\n",
            "script.sql:2:1",
            "a transaction inside \\startpipeline",
        ),
        (
            "\\startpipeline\nSELECT 1;\n",
            "script.sql:1:1",
            "\\startpipeline without \\endpipeline",
        ),
        (
            "SELECT 2;\n\\startpipeline\nSELECT 1;\n\\endpipeline\n",
            "script.sql:1:1",
            "outside \\startpipeline",
        ),
        (
            "\\startpipeline\n\\endpipeline\n",
            "script.sql:2:1",
            "an empty pipeline",
        ),
        (
            "\\if 1\nSELECT 1;\n\\endif\n",
            "script.sql:1:5",
            "\\if takes :NAME",
        ),
        (
            "\\set a random(1, 9)\nBEGIN;\n\\if :a < 5\nSELECT 1;\n\\endif\nEND;\n",
            "script.sql:3:8",
            "compute a comparison in SQL",
        ),
        (
            "BEGIN;\n\\if :nope\nSELECT 1;\n\\endif\nEND;\n",
            "script.sql:2:5",
            ":nope is not set",
        ),
        (
            "\\set a random(1, 9)\nBEGIN;\n\\if :a\n  \\set b 1\n\\endif\nEND;\n",
            "script.sql:4:3",
            "\\set inside \\if",
        ),
        (
            "\\set a random(1, 9)\n\\if :a\nBEGIN;\nSELECT 1;\nEND;\n\\endif\n",
            "script.sql:3:1",
            "BEGIN inside \\if",
        ),
        (
            "\\set a random(1, 9)\nBEGIN;\nSELECT 1;\n \\if :a\nSELECT 2;\n",
            "script.sql:4:2",
            "\\if without \\endif",
        ),
        (
            "\\set a random(1, 9)\nBEGIN;\n\\if :a\n\\else\n\\elif :a\n\\endif\nEND;\n",
            "script.sql:5:1",
            "\\elif after \\else",
        ),
        (
            "BEGIN;\n\\endif\nEND;\n",
            "script.sql:2:1",
            "\\endif without \\if",
        ),
        (
            "SELECT 1 \\gset\n",
            "script.sql:1:10",
            "the column '1' has no name",
        ),
        (
            "BEGIN;\nSELECT sum(abalance) FROM pgbench_accounts \\gset\nEND;\n",
            "script.sql:2:44",
            "write 'sum(abalance) AS name'",
        ),
        (
            "UPDATE pgbench_accounts SET abalance = 0 \\gset\n",
            "script.sql:1:42",
            "must follow a SELECT",
        ),
        (
            "SELECT 1 \\aset\n",
            "script.sql:1:10",
            "\\aset: the column '1' has no name",
        ),
        ("\\shell echo hi\nSELECT 1;\n", "script.sql:1:1", "\\shell"),
        ("\\set a abs(3)\nSELECT 1;\n", "script.sql:1:8", "abs"),
        ("SELECT :nope;\n", "script.sql:1:8", ":nope"),
        ("BEGIN;\nSELECT 1;\n", "script.sql:1:1", "BEGIN without END"),
        (
            "\\set r random(1, 10)\n\\set s :r * 2\nSELECT 1;\n",
            "script.sql:2:8",
            "random value",
        ),
    ];
    for (script, place, what) in cases {
        let dir = Dir::new();
        let out = import(&dir, script);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{script}: {err}");
        assert!(err.contains(place), "{script}: expected {place} in {err}");
        assert!(err.contains(what), "{script}: expected {what} in {err}");
        assert!(err.contains("supported: \\set"), "{script}: {err}");
    }
}

/// The first line of `import`'s stderr, which must exit 2.
fn refusal(script: &str) -> String {
    let dir = Dir::new();
    let out = import(&dir, script);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{script}: {err}");
    assert!(out.stdout.is_empty(), "{script}");
    err.lines().next().unwrap_or("").to_string()
}

/// pgbench matches function names in any case (`RANDOM(1, 10)` runs there).
#[test]
fn function_names_are_case_insensitive() {
    let dir = Dir::new();
    let script = "\\set a RANDOM(1, 10)
\\set z Random_Zipfian(1, 100, 1.5)
\\set g RANDOM_GAUSSIAN(1, 100, 2.5)
\\set e random_Exponential(1, 100, 5)
SELECT :a, :z, :g, :e;
";
    let toml = stdout(&import(&dir, script));
    for t in [
        r#"a = "{uniform 1..11}""#,
        r#"z = "{zipf 1..101 1.5}""#,
        r#"g = "{gaussian 1..101 2.5}""#,
        r#"e = "{exponential 1..101 5}""#,
    ] {
        assert!(toml.contains(t), "{t} in {toml}");
    }
    // A function loadrig has no generator for is named as written.
    assert_eq!(
        refusal("\\set a SQRT(4)\nSELECT 1;\n"),
        "error: script.sql:1:8: function SQRT() is not supported: loadrig has no generator for it"
    );
}

/// pgbench (since PostgreSQL 12) stops a script whose random_zipfian parameter lies outside
/// [1.001, 1000]; the import refuses it at the parameter, and takes both ends.
#[test]
fn random_zipfian_takes_pgbenchs_parameter_range_only() {
    for s in ["1", "0.5", "1.0009", "1000.5", "2000"] {
        assert_eq!(
            refusal(&format!("\\set z random_zipfian(1, 100, {s})\nSELECT :z;\n")),
            format!("error: script.sql:1:31: random_zipfian's parameter {s} is out of range: pgbench stops with \"zipfian parameter must be in range [1.001, 1000]\" (since PostgreSQL 12); use a parameter in that range"),
        );
    }
    let dir = Dir::new();
    let script = "\\set a random_zipfian(1, 100, 1.001)\n\\set b random_zipfian(1, 100, 1000)\nSELECT :a, :b;\n";
    let toml = stdout(&import(&dir, script));
    assert!(toml.contains(r#"a = "{zipf 1..101 1.001}""#), "{toml}");
    assert!(toml.contains(r#"b = "{zipf 1..101 1000}""#), "{toml}");
}

/// pgbench sends a pipeline's statements in order with one draw of each `\set` value;
/// loadrig's pipelined statements are operations of their own, each drawing its own values
/// in an order of its own, so a drawn value two statements share is refused at the second
/// use. A constant, or a value each statement uses alone, translates.
#[test]
fn a_drawn_value_shared_across_a_pipeline_is_refused() {
    let shared = "\\set aid random(1, 10)
\\startpipeline
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\\endpipeline
";
    assert_eq!(
        refusal(shared),
        "error: script.sql:4:51: :aid is drawn once and the statement on line 3 of this pipeline uses it too: loadrig runs each pipelined statement as an operation of its own, with its own draw and in an order of its own, so they would not share the value; to keep them together, replace \\startpipeline … \\endpipeline with BEGIN; … END; (one transaction), or \\set a variable for each statement if separate draws are what you mean"
    );
    // The same statement twice: pgbench sends the one value twice.
    let twice = "\\set aid random(1, 10)\n\\startpipeline\nSELECT :aid;\n  SELECT 1 + :aid;\n\\endpipeline\n";
    assert!(
        refusal(twice)
            .starts_with("error: script.sql:4:14: :aid is drawn once and the statement on line 3"),
        "{}",
        refusal(twice)
    );
    // The fix the message gives translates: one transaction, one draw.
    let dir = Dir::new();
    let tx = shared
        .replace("\\startpipeline", "BEGIN;")
        .replace("\\endpipeline", "END;");
    let toml = stdout(&import(&dir, &tx));
    assert!(
        toml.contains("let = { aid = \"{uniform 1..11}\" }"),
        "{toml}"
    );
    assert!(toml.contains("tx = ["), "{toml}");
    // A constant is the same value everywhere; :scale and :client_id are not drawn.
    let constant = "\\set n 5\n\\startpipeline\nSELECT :n, :scale, :client_id;\nSELECT :n + 1, :scale, :client_id;\n\\endpipeline\n";
    let toml = stdout(&import(&dir, constant));
    assert!(toml.contains("\npipeline = 2 "), "{toml}");
    // pgbench refuses \gset and \aset in a pipeline (the results are not there yet).
    assert_eq!(
        refusal("\\startpipeline\nSELECT 1 AS a \\gset\nSELECT 2;\n\\endpipeline\n"),
        "error: script.sql:2:15: \\gset inside \\startpipeline … \\endpipeline: pgbench does not allow it either, since the results are not there yet when the next command needs them; drop it or the pipeline"
    );
}

/// `\gset` becomes a capture: the fetched columns, named by alias or column with the
/// prefix, are `{name}` parameters of the later statements of the transaction. Ground truth
/// on SQLite: each transaction adds 7 to an account and then the account's new balance to
/// its branch, so the branch holds 7·k(k+1)/2 summed over the accounts touched k times.
#[test]
fn gset_becomes_a_capture_the_later_statements_use() {
    let dir = Dir::new();
    let script = "\\set aid random(1, 1000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + 7 WHERE aid = :aid;
SELECT a.abalance, bid AS branch FROM pgbench_accounts a WHERE aid = :aid \\gset acc_
UPDATE pgbench_branches SET bbalance = bbalance + :acc_abalance WHERE bid = :acc_branch;
END;
";
    let toml = stdout(&import(&dir, script));
    assert!(
        toml.contains(r#"capture = ["acc_abalance", "acc_branch"]"#),
        "{toml}"
    );
    assert!(
        toml.contains(r#"params = ["{acc_abalance}", "{acc_branch}"]"#),
        "{toml}"
    );
    assert!(!toml.contains("acc_abalance = "), "not a let value: {toml}");
    dir.write("w.toml", &format!("{}\n{toml}", tpcb_setup()));
    run_on_sqlite(&dir, 300);
    let conn = rusqlite::Connection::open(dir.join("t.db")).unwrap();
    let (touched, expected): (i64, i64) = conn
        .query_row(
            "SELECT SUM(abalance / 7), SUM(7 * (abalance / 7) * (abalance / 7 + 1) / 2) \
             FROM loadrig_pgbench_accounts",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(touched, 300);
    let branch: i64 = conn
        .query_row(
            "SELECT SUM(bbalance) FROM loadrig_pgbench_branches",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(branch, expected);
}

/// pgbench's pipeline: the statements between `\startpipeline` and `\endpipeline` become
/// operations (one per distinct statement, weighted) with `pipeline` set to their number
/// and one Sync per batch (`pipeline_sync = "batch"`, the `\set` values drawn in place),
/// and the translation runs pipelined on a real PostgreSQL.
#[test]
fn a_pipeline_translates_to_the_pipeline_setting_and_runs() {
    let dir = Dir::new();
    let script = "\\set aid1 random(1, 100000 * :scale)
\\set aid2 random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\startpipeline
SELECT abalance FROM pgbench_accounts WHERE aid = :aid1;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid2;
SELECT bbalance FROM pgbench_branches WHERE bid = :bid;
\\endpipeline
";
    let toml = stdout(&import(&dir, script));
    assert!(toml.contains("\npipeline = 3 "), "{toml}");
    assert_eq!(toml.matches("[[op]]").count(), 2, "{toml}");
    assert!(toml.contains("name = \"script-1\"\nweight = 2\n"), "{toml}");
    assert!(toml.contains("name = \"script-2\"\nweight = 1\n"), "{toml}");
    assert!(toml.contains("\npipeline_sync = \"batch\" "), "{toml}");
    assert!(!toml.contains("let = "), "{toml}");
    assert!(
        toml.contains(r#"params = ["{uniform 1..scale+1}"]"#),
        "{toml}"
    );
    // A value used twice in one statement needs a `let`: a Sync per statement then.
    let twice = "\\set aid random(1, 10)\n\\startpipeline\nSELECT :aid + :aid;\n\\endpipeline\n";
    let twice = stdout(&import(&dir, twice));
    assert!(!twice.contains("\npipeline_sync"), "{twice}");
    assert!(twice.contains("let = { aid = "), "{twice}");
    let Some(url) = common::server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    dir.write("w.toml", &format!("{}\n{toml}", tpcb_setup()));
    let out = dir.loadrig(&[
        "run", "w.toml", "--target", &url, "--ops", "300", "-o", "r.json",
    ]);
    stdout(&out);
    let r = dir.result("r.json");
    assert_eq!(r.load.pipeline, 3);
    assert!(
        r.workload.params.get("pipeline_sync")
            == Some(&loadrig::result::workload::ParamValue::String(
                "batch".into()
            )),
        "{:?}",
        r.workload.params
    );
    assert_eq!(r.total.ok, 300);
    assert_eq!(r.total.errors, 0);
    assert_eq!(r.total.rows, 300, "every select found its row");
}

/// pgbench's conditionals and `\aset` on a script with known effects: `\if`/`\elif`/`\else`
/// on values a `\gset` fetched add 3, 1 or 2 to the account by its aid's remainder mod 3;
/// `\aset` fetches the balance before, and `\if NOT` adds 1 to the branch on an account's
/// first visit only; the teller counts every transaction. One client, so the counts are
/// exact: each account's balance is its visits (history rows) times its step, the branch
/// holds the accounts visited, the teller the transactions.
const CONDITIONAL: &str = "\\set aid random(1, 10)
BEGIN;
SELECT abalance AS before FROM pgbench_accounts WHERE aid = :aid \\aset
SELECT aid % 3 = 0 AS by3, aid % 3 = 1 AS rem1 FROM pgbench_accounts WHERE aid = :aid \\gset
\\if :by3
  UPDATE pgbench_accounts SET abalance = abalance + 3 WHERE aid = :aid;
\\elif :rem1
  UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
\\else
  UPDATE pgbench_accounts SET abalance = abalance + 2 WHERE aid = :aid;
\\endif
\\if NOT :before
  UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;
\\endif
UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, 0, CURRENT_TIMESTAMP);
END;
";

const TXS: i64 = 200;

fn conditional_effects(dir: &Dir, url: &str, row: &dyn Fn(&str) -> Vec<i64>) {
    let toml = stdout(&import(dir, CONDITIONAL));
    assert!(toml.contains(r#"capture = ["before"]"#), "{toml}");
    assert!(toml.contains(r#"when = "by3""#), "{toml}");
    assert!(toml.contains(r#"when = ["!by3", "rem1"]"#), "{toml}");
    assert!(toml.contains(r#"when = ["!by3", "!rem1"]"#), "{toml}");
    assert!(toml.contains(r#"when = "!before""#), "{toml}");
    dir.write("w.toml", &format!("{}\n{toml}", tpcb_setup()));
    let ops = TXS.to_string();
    let run = dir.loadrig(&[
        "run",
        "w.toml",
        "--ops",
        &ops,
        "--clients",
        "1",
        "--seed",
        "4",
        "-o",
        "r.json",
        "--target",
        url,
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = dir.result("r.json");
    assert_eq!(
        (r.operations[0].ok, r.operations[0].errors),
        (TXS as u64, 0)
    );
    let mut visited = 0;
    let mut visits_total = 0;
    for aid in 1..=10 {
        let got = row(&format!(
            "SELECT (SELECT abalance FROM loadrig_pgbench_accounts WHERE aid = {aid}), \
             (SELECT COUNT(*) FROM loadrig_pgbench_history WHERE aid = {aid})"
        ));
        let step = match aid % 3 {
            0 => 3,
            1 => 1,
            _ => 2,
        };
        assert_eq!(got[0], got[1] * step, "aid {aid}: balance, visits {got:?}");
        visited += i64::from(got[1] > 0);
        visits_total += got[1];
    }
    assert_eq!(visits_total, TXS);
    let totals = row(
        "SELECT (SELECT bbalance FROM loadrig_pgbench_branches WHERE bid = 1), \
         (SELECT tbalance FROM loadrig_pgbench_tellers WHERE tid = 1), \
         (SELECT SUM(abalance) FROM loadrig_pgbench_accounts WHERE aid > 10)",
    );
    assert_eq!(totals, vec![visited, TXS, 0]);
    // Every statement ran or was skipped as its branch says: 1 aset + 1 gset + 1 of the
    // three updates + the teller + the history row, and the branch on first visits.
    assert_eq!(r.operations[0].statements.write as i64, 3 * TXS + visited);
}

#[test]
fn conditionals_and_aset_on_sqlite() {
    let dir = Dir::new();
    let db = dir.join("t.db");
    let url = format!("sqlite://{}", db.display());
    conditional_effects(&dir, &url, &|sql| {
        common::sql::ints(common::sql::sqlite_row(&db, sql))
    });
}

#[test]
fn conditionals_and_aset_on_postgres() {
    let Some(url) = common::server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    let dir = Dir::new();
    conditional_effects(&dir, &url, &|sql| {
        common::sql::ints(common::sql::pg_row(&url, sql))
    });
}

/// `!:NAME` is `NOT :NAME`; nested `\if`s join their conditions; `\aset` takes no prefix.
#[test]
fn nested_conditionals_translate() {
    let dir = Dir::new();
    let script = "\\set a random(0, 1)
BEGIN;
SELECT 1 AS one, 0 AS zero \\aset
\\if !:a
  \\if :one
    SELECT 2;
  \\else
    SELECT 3;
  \\endif
\\elif :zero
  SELECT 4;
\\endif
END;
";
    let toml = stdout(&import(&dir, script));
    assert!(toml.contains(r#"capture = ["one", "zero"]"#), "{toml}");
    assert!(
        toml.contains(r#""SELECT 2", params = [] }, when = ["!a", "one"]"#),
        "{toml}"
    );
    assert!(
        toml.contains(r#""SELECT 3", params = [] }, when = ["!a", "!one"]"#),
        "{toml}"
    );
    assert!(
        toml.contains(r#""SELECT 4", params = [] }, when = ["a", "zero"]"#),
        "{toml}"
    );
    dir.write("w.toml", &toml);
    // a = 0 runs SELECT 2 (one holds), a = 1 nothing more (zero does not hold): reads per
    // transaction are the \aset's and, half the time, SELECT 2's; never SELECT 3's or 4's.
    let run = dir.loadrig(&[
        "run",
        "w.toml",
        "--ops",
        "50",
        "--seed",
        "2",
        "-o",
        "r.json",
        "--target",
        "sqlite://./n.db",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = dir.result("r.json");
    let read = r.operations[0].statements.read;
    assert_eq!(r.operations[0].errors, 0);
    assert!(read > 50 && read < 100, "{read}");
}
