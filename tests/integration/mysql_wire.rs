//! loadrig's own MySQL-protocol client (src/targets/mysql/wire.rs, the default on plain TCP)
//! against the throwaway MariaDB (`scripts/services.sh up mariadb`), and beside mysql_async
//! (`client=mysql_async`) where both must give the same result.

use std::time::{Duration, Instant};

use crate::common::locks::{hold, Held, Shared};
use crate::common::sql::mysql_row;
use crate::common::{server_url, Dir};
use loadrig::vocab::ErrorClass;

/// The server, its `loadrig_` tables (which the tests share) emptied and held by this test.
fn server() -> Option<(String, Held)> {
    let url = server_url("LOADRIG_MYSQL_URL")?;
    let held = hold(&[Shared::Mariadb]);
    Dir::new().ok(&["cleanup", "--target", &url]);
    Some((url, held))
}

/// `url` with option `client=NAME`.
fn with_client(url: &str, name: &str) -> String {
    format!("{url}?client={name}")
}

/// Run `workload` on one client of the named MySQL client for `ops` operations, each of
/// which must succeed.
fn run_ok(url: &str, client: &str, workload: &str, ops: u64) -> loadrig::result::RunResult {
    let d = Dir::new();
    d.write("w.toml", workload);
    let (target, count) = (with_client(url, client), ops.to_string());
    let args = ["run", "w.toml", "--target", &target, "--clients", "1"];
    d.ok(&[&args[..], &["--ops", &count, "-o", "r.json"]].concat());
    let r = d.result("r.json");
    assert_eq!(
        (r.total.ok, r.total.errors),
        (ops, 0),
        "{client}: {:?}",
        r.total.error_messages
    );
    r
}

#[test]
fn a_wrong_password_exits_2_as_auth_without_showing_it() {
    let Some((url, _db)) = server() else {
        return;
    };
    let wrong = "not-the-Pw-7731";
    let rest = url.split_once('@').unwrap().1;
    let target = format!("mysql://loadrig:{wrong}@{rest}");
    let d = Dir::new();
    let (stdout, stderr) = d.code(
        2,
        &[
            "run",
            "oltp_point_select",
            "--target",
            &target,
            "--ops",
            "5",
            "-o",
            "r.json",
        ],
    );
    assert!(
        stderr.contains("authentication failed (auth): 1045"),
        "{stderr}"
    );
    assert!(
        !stdout.contains(wrong) && !stderr.contains(wrong),
        "{stdout}{stderr}"
    );
    assert!(d.files().is_empty(), "{:?}", d.files());
    // The right password logs in: a point select per operation, on the own client.
    d.write("w.toml", SELECT_ONE);
    d.ok(&[
        "run", "w.toml", "--target", &url, "--ops", "5", "-o", "ok.json",
    ]);
    let r = d.result("ok.json");
    assert_eq!((r.total.ok, r.total.errors, r.total.rows), (5, 0, 5));
}

const SELECT_ONE: &str = r#"
name = "one"
[[op]]
name = "select"
sql = { query = "SELECT ? + 1", params = ["{seq}"] }
"#;

#[test]
fn inserts_from_three_clients_land_exactly_once() {
    let Some((url, _db)) = server() else {
        return;
    };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "seq-inserts"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_wire (id BIGINT PRIMARY KEY, v VARCHAR(40) NOT NULL)"]
[[op]]
name = "insert"
sql = { query = "INSERT INTO loadrig_wire VALUES (?, ?)", params = ["{seq}", "v{seq}"] }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--clients",
        "3",
        "--ops",
        "600",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors, r.total.rows), (600, 0, 600));
    let row = mysql_row(
        &url,
        "SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id), SUM(v = CONCAT('v', id)) FROM loadrig_wire",
    );
    assert_eq!(row, ["600", "600", "0", "599", "600"]);
}

/// Replies many times the client's 16 KiB read buffer (1.5 MB of binary rows) are walked
/// across many reads: every row counted, the first one captured, on either client.
#[test]
fn replies_longer_than_the_read_buffer_count_every_row() {
    let Some((url, _db)) = server() else {
        return;
    };
    // The check finds its one row only if the scan captured the first row's values.
    let workload = r#"
name = "long replies"
[[op]]
name = "scan"
let = { n = "{seq 2990}" }
tx = [
  { sql = { query = "SELECT seq, REPEAT('x', 500) FROM seq_1_to_3000 WHERE seq <= ?", params = ["{n}"] }, capture = ["first", "pad"] },
  { sql = { query = "SELECT seq FROM seq_1_to_10 WHERE seq = ? AND ? = REPEAT('x', 500)", params = ["{first}", "{pad}"] } },
]
"#;
    for client in ["loadrig", "mysql_async"] {
        let r = run_ok(&url, client, workload, 3);
        // The scans of 2990, 2991 and 2992 rows, and one row per check.
        assert_eq!(r.total.rows, 2990 + 2991 + 2992 + 3, "{client}");
    }
}

#[test]
fn a_duplicate_key_is_a_constraint_error_and_the_run_goes_on() {
    let Some((url, _db)) = server() else {
        return;
    };
    let d = Dir::new();
    // 40 inserts of 8 possible keys: at least 32 collide.
    d.write(
        "w.toml",
        r#"
name = "dupes"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_dup (id INT PRIMARY KEY)"]
[[op]]
name = "insert"
sql = { query = "INSERT INTO loadrig_dup VALUES (?)", params = ["{uniform 0..8}"] }
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
        "40",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let stored: u64 = mysql_row(&url, "SELECT COUNT(*) FROM loadrig_dup")[0]
        .parse()
        .unwrap();
    assert_eq!(r.total.ok, stored);
    assert_eq!(r.total.ok + r.total.errors, 40);
    assert_eq!(
        r.total.errors_by_class.get(&ErrorClass::Constraint),
        Some(&(40 - stored)),
        "{:?}",
        r.total.error_messages
    );
    assert!(r
        .total
        .error_messages
        .iter()
        .any(|m| m.message.contains("1062")));
}

/// A `tx` whose captures (every common column type, NULL, an affected-row count) are written
/// back as text and steer `when` steps: the same table through either client.
#[test]
fn captures_and_conditions_match_mysql_async() {
    let Some((url, _db)) = server() else {
        return;
    };
    let workload = r#"
name = "captures"
setup = [
  "CREATE TABLE IF NOT EXISTS loadrig_src (id INT PRIMARY KEY, i BIGINT, u BIGINT UNSIGNED, d DECIMAL(10,3), f DOUBLE, dt DATETIME(6), day DATE, t TIME, s VARCHAR(20), b VARBINARY(8), n INT)",
  "REPLACE INTO loadrig_src VALUES (1, -42, 18446744073709551615, 12.5, 0.25, '2024-02-09 07:05:03.000500', '2024-02-29', '-26:03:04', 'héllo', X'00ff41', NULL), (2, 7, 0, -0.001, -3.75, '1999-12-31 23:59:59', '1000-01-01', '00:00:00', '', X'', 3)",
  "CREATE TABLE IF NOT EXISTS loadrig_out (k VARCHAR(20), id INT, v VARBINARY(100), PRIMARY KEY (k, id))",
]
[[op]]
name = "copy"
let = { id = "{seq 1}" }
tx = [
  { sql = { query = "SELECT i, u, d, f, dt, day, t, s, b, n FROM loadrig_src WHERE id = ?", params = ["{id}"] }, capture = ["i", "u", "d", "f", "dt", "day", "t", "s", "b", "n"] },
  { sql = { query = "INSERT INTO loadrig_out VALUES ('i', ?, ?), ('u', ?, ?), ('d', ?, ?), ('f', ?, ?), ('dt', ?, ?), ('day', ?, ?), ('t', ?, ?), ('s', ?, ?), ('b', ?, ?)", params = ["{id}", "{i}", "{id}", "{u}", "{id}", "{d}", "{id}", "{f}", "{id}", "{dt}", "{id}", "{day}", "{id}", "{t}", "{id}", "{s}", "{id}", "{b}"] } },
  { sql = { query = "SELECT ? * 2, CAST(? AS CHAR)", params = ["{id}", "{id}"] }, capture = ["twice", "same"] },
  { sql = { query = "INSERT INTO loadrig_out VALUES ('twice', ?, ?), ('same', ?, ?)", params = ["{id}", "{twice}", "{id}", "{same}"] } },
  { sql = { query = "UPDATE loadrig_src SET n = n + 1 WHERE id = ? AND n IS NOT NULL", params = ["{id}"] }, capture = ["touched"] },
  { sql = { query = "INSERT INTO loadrig_out VALUES ('touched', ?, ?)", params = ["{id}", "{touched}"] }, when = "touched" },
  { sql = { query = "INSERT INTO loadrig_out VALUES ('null', ?, 'n')", params = ["{id}"] }, when = "n" },
]
"#;
    let mut tables = Vec::new();
    for client in ["loadrig", "mysql_async"] {
        Dir::new().ok(&["cleanup", "--target", &url]);
        run_ok(&url, client, workload, 2);
        let table = mysql_row(
            &url,
            "SELECT GROUP_CONCAT(CONCAT(k, ':', id, '=', HEX(v)) ORDER BY k, id SEPARATOR ' ') FROM loadrig_out",
        );
        tables.push(table[0].clone());
    }
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02X}")).collect::<String>();
    // Spot checks of the text (the rest is equal to mysql_async's).
    for expected in [
        format!("i:1={}", hex("-42")),
        format!("u:1={}", hex("18446744073709551615")),
        format!("d:2={}", hex("-0.001")),
        format!("dt:1={}", hex("2024-02-09 07:05:03.000500")),
        format!("t:1={}", hex("-26:03:04")),
        "b:1=00FF41".to_string(),
        format!("touched:2={}", hex("1")),
        "null:2=6E".to_string(),
        // The second execution's row, whose columns MariaDB does not send again.
        format!("twice:2={}", hex("4")),
        format!("same:2={}", hex("2")),
    ] {
        assert!(tables[0].contains(&expected), "{expected} in {}", tables[0]);
    }
    assert!(!tables[0].contains("touched:1") && !tables[0].contains("null:1"));
    assert_eq!(tables[0], tables[1], "own client, then mysql_async");
}

/// The server kills the rig's connection mid-run: the client reconnects and the run ends
/// normally, the lost operation counted as a connect error.
#[test]
fn a_killed_connection_is_replaced() {
    let Some((url, _db)) = server() else {
        return;
    };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "killed"
[[op]]
name = "nap"
sql = { query = "SELECT /* lr_wire_kill */ SLEEP(0.02)" }
"#,
    );
    let child = d.spawn(&[
        "run",
        "w.toml",
        "--target",
        &url,
        "--duration",
        "3s",
        "-o",
        "r.json",
    ]);
    let started = Instant::now();
    let mut killed = false;
    while !killed && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(100));
        let id = mysql_row(
            &url,
            "SELECT COALESCE(MAX(id), 0) FROM information_schema.PROCESSLIST \
             WHERE info LIKE '%lr_wire_kill%' AND info NOT LIKE '%PROCESSLIST%'",
        );
        if id[0] != "0" {
            kill(&url, &id[0]);
            killed = true;
        }
    }
    assert!(
        killed,
        "the rig's connection never showed up in the process list"
    );
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = d.result("r.json");
    assert_eq!(r.total.reconnects, 1, "{:?}", r.total.error_messages);
    assert_eq!(
        r.total.errors_by_class.keys().collect::<Vec<_>>(),
        [&ErrorClass::Connect],
        "{:?}",
        r.total.error_messages
    );
    assert!(r.total.ok > 10);
}

/// KILL CONNECTION `id` through mysql_async.
fn kill(url: &str, id: &str) {
    use mysql_async::prelude::Queryable;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = mysql_async::Opts::from_url(url).unwrap();
        let opts = mysql_async::OptsBuilder::from_opts(opts).prefer_socket(false);
        let mut conn = mysql_async::Conn::new(opts).await.unwrap();
        conn.query_drop(format!("KILL CONNECTION {id}"))
            .await
            .unwrap();
    });
}
