//! Switches, `only`, `when`, commit points and the affected-row capture, on SQLite (always
//! there): exact rows written, exact operation counts.

use crate::common::Dir;
use loadrig::vocab::ErrorClass;

fn run(d: &Dir, ops: &str, extra: &[&str]) -> loadrig::result::RunResult {
    let mut more = vec!["-o", "r.json"];
    more.extend_from_slice(extra);
    d.run_ops("w.toml", "sqlite://./t.db", ops, "1", &more);
    d.result("r.json")
}

/// A captured 1 runs a `when` step and a captured 0 does not; so do text true/false values,
/// SQL NULL and a query that returns no row (both empty).
#[test]
fn when_runs_a_step_only_on_a_true_value() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "when"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_w (id INTEGER PRIMARY KEY, s TEXT)"]
[[op]]
name = "claim"
let = { id = "{seq}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1, 'pending')", params = ["{id}"] } },
  { sql = { query = "UPDATE loadrig_w SET s = 'sent' WHERE id = $1 AND s = 'pending'", params = ["{id}"] }, capture = ["claimed"] },
  { sql = { query = "UPDATE loadrig_w SET s = 'twice' WHERE id = $1 AND s = 'pending'", params = ["{id}"] }, capture = ["again"] },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 1000, 'claimed')", params = ["{id}"] }, when = "claimed" },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 2000, 'again')", params = ["{id}"] }, when = "again" },
  { sql = { query = "SELECT NULL, 'FALSE', 'f', 'yes'" }, capture = ["null", "no", "f", "yes"] },
  { sql = { query = "SELECT 1 WHERE 0" }, capture = ["none"] },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 3000, 'null')", params = ["{id}"] }, when = "null" },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 4000, 'no')", params = ["{id}"] }, when = "no" },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 5000, 'f')", params = ["{id}"] }, when = "f" },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 6000, 'none')", params = ["{id}"] }, when = "none" },
  { sql = { query = "INSERT INTO loadrig_w VALUES ($1 + 7000, 'yes')", params = ["{id}"] }, when = "yes" },
]
"#,
    );
    let r = run(&d, "10", &[]);
    let by_s = |s: &str| d.sqlite_count(&format!("SELECT count(*) FROM loadrig_w WHERE s = '{s}'"));
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_w"), 30);
    assert_eq!((by_s("sent"), by_s("claimed"), by_s("yes")), (10, 10, 10));
    let op = &r.operations[0];
    // insert 1, update 1, update 0, insert 1, select 1 row, select 0 rows, insert 1.
    assert_eq!((op.ok, op.errors, op.rows), (10, 0, 50));
}

/// A step skipped by `when` leaves its captures empty: a later step that waits on them is
/// skipped too, instead of reading what an earlier operation captured (the order-entry
/// sender claimed a purchase order, then found none, and posted an empty body).
#[test]
fn a_skipped_step_leaves_its_captures_empty() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "chain"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_c (id INTEGER PRIMARY KEY, s TEXT)"]
[[op]]
name = "chain"
let = { id = "{seq}" }
tx = [
  { sql = { query = "SELECT CASE WHEN $1 % 2 = 1 THEN $2 END", params = ["{id}", "{id}"] }, capture = ["odd"] },
  { sql = { query = "INSERT INTO loadrig_c VALUES ($1, 'claimed')", params = ["{id}"] }, capture = ["claimed"], when = "odd" },
  { sql = { query = "INSERT INTO loadrig_c VALUES ($1 + 1000, 'sent')", params = ["{id}"] }, when = "claimed" },
]
"#,
    );
    let r = run(&d, "10", &[]);
    let by_s = |s: &str| d.sqlite_count(&format!("SELECT count(*) FROM loadrig_c WHERE s = '{s}'"));
    // Ids 1, 3, 5, 7, 9 are claimed and sent; 0, 2, 4, 6, 8 neither.
    assert_eq!((by_s("claimed"), by_s("sent")), (5, 5));
    assert_eq!(r.operations[0].errors, 0);
}

/// A failure after a commit point rolls back only the part since it: the first part's row
/// stays, the second's does not; a retry resumes at the commit point.
#[test]
fn a_commit_point_keeps_the_first_part_when_the_second_fails() {
    let d = Dir::new();
    let workload = |retry: &str| {
        format!(
            r#"
name = "chopped"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_a (id INTEGER PRIMARY KEY)", "CREATE TABLE IF NOT EXISTS loadrig_b (id INTEGER PRIMARY KEY)"]
[[op]]
name = "two-parts"
{retry}
let = {{ id = "{{seq}}" }}
tx = [
  {{ sql = {{ query = "INSERT INTO loadrig_a VALUES ($1)", params = ["{{id}}"] }} }},
  {{ commit = {{}} }},
  {{ sql = {{ query = "INSERT INTO loadrig_b VALUES ($1)", params = ["{{id}}"] }} }},
  {{ sql = {{ query = "INSERT INTO loadrig_b VALUES ($1)", params = ["{{id}}"] }} }},
]
"#
        )
    };
    d.write("w.toml", &workload(""));
    let r = run(&d, "5", &[]);
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors), (0, 5));
    assert_eq!(op.errors_by_class.get(&ErrorClass::Constraint), Some(&5));
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_a"), 5);
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_b"), 0);

    // Retried from the commit point: the first part is not run again (a redrawn id would
    // add rows to loadrig_a, the same id a constraint error there).
    std::fs::remove_file(d.join("t.db")).unwrap();
    d.write(
        "w.toml",
        &workload("retry = { on = [\"constraint\"], max = 2 }"),
    );
    let r = run(&d, "5", &["--report", "r.html"]);
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors, op.retries), (0, 5, 10));
    // Every retry was of a constraint error, and the summary and the report say so.
    let by_class: Vec<_> = op.retries_by_class.iter().collect();
    assert_eq!(by_class, [(&ErrorClass::Constraint, &10)]);
    let summary = loadrig::report::console::summary(&r);
    let line = format!("retries in {}: constraint 10", op.name);
    assert!(summary.lines().any(|l| l == line), "{summary}");
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("<h3>Retries</h3>"));
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_a"), 5);
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_b"), 0);
}

const SWITCHED: &str = r#"
name = "switched"
[switches]
po_sending = ["inline", "agent", "queue"]
[[op]]
name = "order"
only = { po_sending = "inline" }
tx = [
  { sql = { query = "SELECT 1" } },
  { commit = {}, only = { po_sending = "inline" } },
  { sql = { query = "SELECT 2" } },
]
[[op]]
name = "order"
only = { po_sending = ["agent", "queue"] }
sql = { query = "SELECT 3" }
[[op]]
name = "deliver"
only = { po_sending = "queue" }
nop = {}
"#;

fn shown(d: &Dir, set: &str) -> Vec<(String, String, String)> {
    let out = d.ok(&["ops", "w.toml", "--count", "40", "--json", "--set", set]);
    out.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            (
                v["op"].as_str().unwrap().to_string(),
                v["kind"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn only_keeps_the_operations_of_the_switch_values() {
    let d = Dir::new();
    d.write("w.toml", SWITCHED);
    let inline = shown(&d, "po_sending=inline");
    assert_eq!(inline.len(), 40);
    assert!(inline.iter().all(|(op, kind, text)| op == "order"
        && kind == "tx"
        && text == "BEGIN; sql \"SELECT 1\"; COMMIT; BEGIN; sql \"SELECT 2\"; COMMIT"));
    let agent = shown(&d, "po_sending=agent");
    assert_eq!(agent.len(), 40);
    assert!(agent
        .iter()
        .all(|(op, kind, _)| op == "order" && kind == "sql"));
    let queue = shown(&d, "po_sending=queue");
    let names: std::collections::BTreeSet<&str> = queue.iter().map(|q| q.0.as_str()).collect();
    assert_eq!(names, ["deliver", "order"].into());
}

#[test]
fn a_bad_switch_value_exits_2_naming_the_switch_and_its_values() {
    let d = Dir::new();
    d.write("w.toml", SWITCHED);
    let (_, stderr) = d.code(2, &["ops", "w.toml", "--set", "po_sending=bogus"]);
    assert!(
        stderr
            .contains("--set po_sending=bogus: switch 'po_sending' is one of inline, agent, queue"),
        "{stderr}"
    );
    let (_, stderr) = d.code(
        2,
        &[
            "run",
            "w.toml",
            "--target",
            "sqlite://./t.db",
            "--ops",
            "1",
            "--set",
            "po_sending=mail",
        ],
    );
    assert!(stderr.contains("switch 'po_sending' is one of"), "{stderr}");
    assert!(!d.join("t.db").exists());
}

#[test]
fn switch_values_are_recorded_with_the_params() {
    let d = Dir::new();
    d.write("w.toml", SWITCHED);
    let r = run(&d, "4", &["--set", "po_sending=agent"]);
    assert_eq!(
        r.workload.params.get("po_sending"),
        Some(&loadrig::result::workload::ParamValue::String(
            "agent".into()
        ))
    );
    assert_eq!(r.total.ok, 4);
}

/// A peer that cannot be reached fails each operation that uses it as `connect`, rolls back
/// the target's transaction, and leaves the target's session alone (no reconnects).
#[test]
fn an_unreachable_peer_fails_the_op_and_rolls_back_the_target() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "no-peer"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_x (id INTEGER PRIMARY KEY)"]
[peers]
gone = "http://127.0.0.1:1"
[[op]]
name = "order"
let = { id = "{seq}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_x VALUES ($1)", params = ["{id}"] } },
  { http = { path = "/" }, on = "gone" },
]
"#,
    );
    let r = run(&d, "4", &[]);
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors, op.reconnects), (0, 4, 0));
    assert_eq!(op.errors_by_class.get(&ErrorClass::Connect), Some(&4));
    assert_eq!(d.sqlite_count("SELECT count(*) FROM loadrig_x"), 0);
    assert_eq!(r.workload.peers["gone"], "http://127.0.0.1:1");
}

const REPEATED: &str = r#"
name = "repeat"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_r (tx INTEGER, pass INTEGER, n INTEGER)"]
[[op]]
name = "lines"
let = { id = "{seq}", n = "{uniform 1..5}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_r VALUES ($1, 0, $2)", params = ["{id}", "{n}"] } },
  { repeat = "{n}", steps = [
    { sql = { query = "INSERT INTO loadrig_r VALUES ($1, $2, $3)", params = ["{id}", "{iteration}", "{n}"] } },
    { sql = { query = "SELECT count(*) FROM loadrig_r WHERE tx = $1", params = ["{id}"] }, capture = ["so_far"] },
  ] },
  { repeat = "2", steps = [
    { sql = { query = "INSERT INTO loadrig_r VALUES ($1, 100 + $2, $3)", params = ["{id}", "{iteration}", "{n}"] } },
  ] },
]
"#;

/// A repeat group runs its steps as many times as its count draws, each pass numbered by
/// `{iteration}` from 1; a constant count runs that many passes.
#[test]
fn a_repeat_group_runs_its_steps_once_per_pass() {
    let d = Dir::new();
    d.write("w.toml", REPEATED);
    let r = run(&d, "50", &[]);
    assert_eq!(r.total.ok, 50);
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_r WHERE pass = 0"),
        50
    );
    // Every transaction wrote passes 1..n exactly once, for its own n.
    let whole = "SELECT count(*) FROM (SELECT tx, n, count(*) c, count(DISTINCT pass) k, \
                 min(pass) lo, max(pass) hi FROM loadrig_r WHERE pass BETWEEN 1 AND 99 \
                 GROUP BY tx) WHERE c = n AND k = n AND lo = 1 AND hi = n";
    assert_eq!(d.sqlite_count(whole), 50);
    assert_eq!(d.sqlite_count("SELECT count(DISTINCT n) FROM loadrig_r"), 4);
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_r WHERE pass = 101"),
        50
    );
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_r WHERE pass = 102"),
        50
    );
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_r WHERE pass > 102"),
        0
    );
}

/// `loadrig ops` shows every pass of a group, with the same draws a run makes: n passes
/// numbered 1..n for the n the transaction drew, then the constant group's 2.
#[test]
fn ops_shows_each_pass_of_a_repeat_group() {
    let d = Dir::new();
    d.write("w.toml", REPEATED);
    let out = d.ok(&["ops", "w.toml", "--count", "20", "--json"]);
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let steps = v["steps"].as_array().unwrap();
        let n = steps[0]["args"][1].as_u64().unwrap();
        let passes = |query: &str| -> Vec<u64> {
            steps
                .iter()
                .filter(|s| s["query"] == query)
                .map(|s| s["args"][1].as_u64().unwrap())
                .collect()
        };
        assert!((1..=4).contains(&n), "{line}");
        assert_eq!(
            passes("INSERT INTO loadrig_r VALUES ($1, $2, $3)"),
            (1..=n).collect::<Vec<_>>()
        );
        assert_eq!(
            passes("INSERT INTO loadrig_r VALUES ($1, 100 + $2, $3)"),
            [1, 2]
        );
        assert_eq!(steps.len() as u64, 1 + 2 * n + 2);
    }
}

#[test]
fn a_bad_repeat_group_exits_2_with_its_place() {
    let cases = [
        (
            "tx = [ { sql = { query = \"SELECT $1\", params = [\"{iteration}\"] } } ]",
            "w.toml:4:",
            "{iteration} has a value only in the steps of a repeat group",
        ),
        (
            "tx = [ { repeat = \"many\", steps = [ { sql = \"SELECT 1\" } ] } ]",
            "w.toml:4:",
            "repeat = \"many\": expected a whole number of passes",
        ),
        (
            "tx = [ { repeat = \"2\", steps = [ { sql = \"SELECT 1\" }, { commit = {} } ] } ]",
            "w.toml:4:",
            "a repeat group holds native steps only",
        ),
        (
            "tx = [ { repeat = \"2\", sql = \"SELECT 1\", steps = [ { sql = \"SELECT 1\" } ] } ]",
            "w.toml:4:",
            "a repeat group is { repeat = \"COUNT\", steps = [ ... ] }",
        ),
    ];
    for (tx, place, message) in cases {
        let d = Dir::new();
        d.write(
            "w.toml",
            &format!("name = \"bad\"\n[[op]]\nname = \"t\"\n{tx}\n"),
        );
        let (_, stderr) = d.code(2, &["ops", "w.toml"]);
        assert!(
            stderr.contains(place) && stderr.contains(message),
            "{tx}\n{stderr}"
        );
    }
}

const ROLLBACK: &str = r#"
name = "rollback"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_rb (tx INTEGER, line INTEGER)", "CREATE TABLE IF NOT EXISTS loadrig_item (id INTEGER PRIMARY KEY)", "INSERT INTO loadrig_item SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3"]
[[op]]
name = "order"
weight = 3
let = { id = "{seq}", bad = "{uniform 0..4}" }
tx = [
  { sql = { query = "INSERT INTO loadrig_rb VALUES ($1, 0)", params = ["{id}"] } },
  { repeat = "3", steps = [
    # Line 3 of one transaction in four names item 4, which does not exist.
    { sql = { query = "SELECT id FROM loadrig_item WHERE id = CASE WHEN $1 + 0 = 3 AND $2 + 0 = 0 THEN 4 ELSE $1 + 0 END", params = ["{iteration}", "{bad}"] }, capture = ["item"] },
    { rollback = {}, when = "!item" },
    { sql = { query = "INSERT INTO loadrig_rb VALUES ($1, $2)", params = ["{id}", "{item}"] } },
  ] },
]
[[op]]
name = "other"
nop = {}

[[figure]]
name = "orders per minute"
ops = ["order"]
per = "minute"

[[figure]]
name = "share"
description = "orders per second, as a share of 40"
ops = ["order", "other"]
per = "second"
divide_by = "{limit}/100"
unit = "%"

[params]
limit = 40
"#;

/// A rollback step undoes its transaction and ends the operation: a success counted as
/// rolled back, whose rows are gone, while the other transactions keep theirs; `when =
/// "!NAME"` runs it when the value is empty. Figures count the operations' successes.
#[test]
fn a_rollback_step_undoes_the_transaction_and_counts_it_as_rolled_back() {
    let d = Dir::new();
    d.write("w.toml", ROLLBACK);
    let r = run(&d, "200", &["--seed", "4"]);
    let op = &r.operations[0];
    assert_eq!(op.errors, 0);
    assert!(
        op.rolled_back > 0 && op.rolled_back < op.ok,
        "{}",
        op.rolled_back
    );
    assert_eq!(r.total.rolled_back, op.rolled_back);
    // Every committed transaction holds its header and three lines; a rolled-back one nothing.
    let committed = op.ok - op.rolled_back;
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_rb WHERE line = 0") as u64,
        committed
    );
    assert_eq!(
        d.sqlite_count("SELECT count(*) FROM loadrig_rb") as u64,
        4 * committed
    );
    assert_eq!(r.figures.len(), 2);
    let per_minute = &r.figures[0];
    assert_eq!(
        (per_minute.completed, per_minute.unit.as_str()),
        (op.ok, "per minute")
    );
    assert!((per_minute.value - op.ok as f64 / r.measured_s * 60.0).abs() < 1e-6);
    let share = &r.figures[1];
    assert_eq!(share.completed, 200);
    assert!((share.value - 200.0 / r.measured_s / 0.4).abs() < 1e-6);
    assert_eq!(share.divisor, 0.4);
    // loadrig ops shows the transactions as if no rollback step were taken: the item is
    // captured there, so "!item" is false.
    let out = d.ok(&["ops", "w.toml", "--count", "5", "--op", "order"]);
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(out.lines().all(|l| l.ends_with("; COMMIT")), "{out}");
}

/// A rollback step on a `let` value is decided in `loadrig ops` as in a run: those
/// transactions end with ROLLBACK there.
#[test]
fn ops_shows_a_rollback_step_taken_on_a_let_value() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "rb"
[[op]]
name = "maybe"
let = { keep = "{uniform 0..2}" }
tx = [
  { sql = { query = "SELECT $1", params = ["{keep}"] } },
  { rollback = {}, when = "!keep" },
  { sql = "SELECT 2" },
]
"#,
    );
    let out = d.ok(&["ops", "w.toml", "--count", "40"]);
    let rolled = out.lines().filter(|l| l.ends_with("; ROLLBACK")).count();
    let committed = out.lines().filter(|l| l.ends_with("; COMMIT")).count();
    assert_eq!(rolled + committed, 40, "{out}");
    assert!(rolled > 0 && committed > 0, "{out}");
    assert!(out
        .lines()
        .filter(|l| l.ends_with("; ROLLBACK"))
        .all(|l| l.contains("[0]") && !l.contains("SELECT 2")));
    let r = run(&d, "40", &["--seed", "0"]);
    assert_eq!(r.operations[0].rolled_back as usize, rolled);
}

/// `pause`: a keying time before each operation and a think time after it, outside its
/// latency, kept only for the switch value its `only` names.
#[test]
fn a_pause_waits_around_each_operation_outside_its_latency() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "pause"
target = "noop://"
[switches]
keying = ["off", "on"]
[[op]]
name = "typed"
pause = { keying = "300ms", think = "100ms", only = { keying = "on" } }
nop = {}
"#,
    );
    let go = |set: &str| {
        d.ok(&[
            "run",
            "w.toml",
            "--duration",
            "1s",
            "--clients",
            "1",
            "--set",
            set,
            "-o",
            "r.json",
        ]);
        d.result("r.json")
    };
    let r = go("keying=on");
    let op = &r.operations[0];
    // At least 300 ms of keying before each: at most 3 in a second, each far quicker itself.
    assert!((1..=3).contains(&op.ok), "{}", op.ok);
    assert!(op.latency.max_ns < 300_000_000, "{}", op.latency.max_ns);
    let r = go("keying=off");
    assert!(r.operations[0].ok > 100, "{}", r.operations[0].ok);
}
