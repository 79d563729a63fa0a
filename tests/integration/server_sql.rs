//! postgres:// and mysql:// against real throwaway servers (`scripts/services.sh up
//! postgres mariadb`, then `eval "$(scripts/services.sh env)"`). Every test runs on both
//! targets and checks the effect on the server itself, through the driver crates.
//! Without LOADRIG_PG_URL / LOADRIG_MYSQL_URL the tests say "skipped" (or fail under
//! LOADRIG_REQUIRE_ALL=1).

use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::locks::{hold, Held, Shared};
use crate::common::{server_url, Dir, PUT_ONLY};
use loadrig::result::RunResult;
use loadrig::vocab::ErrorClass;

/// One server under test, with its SQL dialect.
struct Db {
    url: String,
    pg: bool,
    _server: Held,
}

impl Db {
    fn pg() -> Option<Db> {
        Db::new("LOADRIG_PG_URL", true)
    }

    fn mysql() -> Option<Db> {
        Db::new("LOADRIG_MYSQL_URL", false)
    }

    fn new(var: &str, pg: bool) -> Option<Db> {
        let url = server_url(var)?;
        let db = Db {
            url,
            pg,
            _server: hold(&[if pg {
                Shared::Postgres
            } else {
                Shared::Mariadb
            }]),
        };
        db.exec("DROP TABLE IF EXISTS mine, loadrigx");
        Dir::new().ok(&["cleanup", "--target", &db.url]);
        Some(db)
    }

    /// The password in the URL: it must never be shown.
    fn password(&self) -> String {
        let rest = self.url.split_once("://").unwrap().1;
        let userinfo = rest.rsplit_once('@').unwrap().0;
        userinfo.split_once(':').unwrap().1.to_string()
    }

    /// The redacted URL, as loadrig shows it.
    fn shown(&self) -> String {
        self.url.replace(&format!(":{}@", self.password()), ":***@")
    }

    /// Placeholder number `n` in this dialect.
    fn p(&self, n: usize) -> String {
        if self.pg {
            format!("${n}")
        } else {
            "?".to_string()
        }
    }

    fn sleep(&self) -> &'static str {
        if self.pg {
            "SELECT pg_sleep(0.05)"
        } else {
            "SELECT SLEEP(0.05)"
        }
    }

    /// Run `sql` directly on the server; every value as text (NULL as "NULL").
    fn query(&self, sql: &str) -> Vec<Vec<String>> {
        server_query(&self.url, self.pg, sql)
    }

    fn exec(&self, sql: &str) {
        self.query(sql);
    }

    fn count(&self, sql: &str) -> i64 {
        self.query(sql)[0][0].parse().unwrap()
    }

    fn tables(&self) -> Vec<String> {
        let sql = if self.pg {
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
        } else {
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1"
        };
        self.query(sql).into_iter().map(|r| r[0].clone()).collect()
    }

    /// `loadrig ARGS --target URL`, checking that the password shows nowhere.
    fn loadrig(&self, d: &Dir, args: &[&str]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--target", &self.url]);
        let out = d.loadrig(&all);
        let pw = self.password();
        for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !String::from_utf8_lossy(text).contains(&pw),
                "the password shows in {what}"
            );
        }
        if let Some(i) = args.iter().position(|a| *a == "-o") {
            if let Ok(text) = std::fs::read_to_string(d.join(args[i + 1])) {
                assert!(!text.contains(&pw), "the password shows in the result file");
            }
        }
        out
    }

    /// Run and insist on success; returns the result file `r.json`.
    fn run(&self, d: &Dir, args: &[&str]) -> RunResult {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-o", "r.json"]);
        let out = self.loadrig(d, &all);
        assert!(
            out.status.success(),
            "loadrig {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let r = d.result("r.json");
        let version = r.target.server_version.clone().unwrap_or_default();
        let expected = if self.pg {
            "PostgreSQL "
        } else {
            "M" // MariaDB or MySQL
        };
        assert!(version.starts_with(expected), "server version {version:?}");
        assert_eq!(r.target.url, self.shown());
        r
    }
}

/// Run `sql` on the server at `url` through the driver crates; values as text.
fn server_query(url: &str, pg: bool, sql: &str) -> Vec<Vec<String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if pg {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            let mut rows = Vec::new();
            for m in client.simple_query(sql).await.unwrap() {
                if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                    rows.push(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect(),
                    );
                }
            }
            rows
        } else {
            use mysql_async::prelude::Queryable;
            let opts = mysql_async::Opts::from_url(url).unwrap();
            let opts = mysql_async::OptsBuilder::from_opts(opts).prefer_socket(false);
            let mut conn = mysql_async::Conn::new(opts).await.unwrap();
            let rows: Vec<mysql_async::Row> = conn.query(sql).await.unwrap();
            let out = rows
                .into_iter()
                .map(|r| {
                    r.unwrap()
                        .into_iter()
                        .map(|v| match v {
                            mysql_async::Value::NULL => "NULL".to_string(),
                            mysql_async::Value::Bytes(b) => {
                                String::from_utf8_lossy(&b).into_owned()
                            }
                            other => format!("{other:?}"),
                        })
                        .collect()
                })
                .collect();
            conn.disconnect().await.unwrap();
            out
        }
    })
}

fn both(test: fn(&Db)) {
    if let Some(db) = Db::pg() {
        test(&db);
    }
    if let Some(db) = Db::mysql() {
        test(&db);
    }
}

fn op<'a>(r: &'a RunResult, name: &str) -> &'a loadrig::result::OpResult {
    r.operations.iter().find(|o| o.name == name).unwrap()
}

const KV_MIX: &str = r#"
name = "kv-mix"
[data]
count = 500
key = "k{seq}"
value = "{bytes 100}"
batch = 128

[[op]]
name = "get"
weight = 2
kv.get = { key = "k{uniform 0..249}" }

[[op]]
name = "put"
kv.put = { key = "p{seq}", value = "{bytes 40}" }

[[op]]
name = "update"
kv.update = { key = "k{seq}", value = "{bytes 30}" }

[[op]]
name = "delete"
kv.delete = { key = "k{seq 250}" }
"#;

fn kv_load_then_mixed_ops(db: &Db) {
    let d = Dir::new();
    d.write("w.toml", KV_MIX);
    let r = db.run(&d, &["run", "w.toml", "--clients", "4", "--ops", "400"]);
    assert_eq!(r.data_load.as_ref().unwrap().records, 500);
    assert_eq!((r.total.ok, r.total.errors), (400, 0));
    let (get, put, update, delete) = (
        op(&r, "get"),
        op(&r, "put"),
        op(&r, "update"),
        op(&r, "delete"),
    );
    // Gets read keys that are never deleted; updates and deletes each hit a loaded record.
    assert_eq!(get.rows, get.ok);
    assert_eq!(update.rows, update.ok);
    assert_eq!(delete.rows, delete.ok);
    assert_eq!(put.rows, put.ok);
    let len = if db.pg {
        "octet_length(v)"
    } else {
        "length(v)"
    };
    let count = |filter: &str| -> i64 {
        db.count(&format!("SELECT count(*) FROM loadrig_kv WHERE {filter}"))
    };
    assert_eq!(
        count("k LIKE 'k%'"),
        500 - delete.ok as i64,
        "deletes removed exactly their records"
    );
    assert_eq!(
        count(&format!("k LIKE 'k%' AND {len} = 30")),
        update.ok as i64
    );
    assert_eq!(
        count(&format!("k LIKE 'k%' AND {len} = 100")),
        500 - delete.ok as i64 - update.ok as i64
    );
    assert_eq!(count("k LIKE 'p%'"), put.ok as i64);
    assert_eq!(count(&format!("k LIKE 'p%' AND {len} = 40")), put.ok as i64);

    // Loading the same keys again replaces them instead of failing.
    d.write(
        "l.toml",
        &KV_MIX.replace("kv.get = { key = \"k{uniform 0..249}\" }", "nop = {}"),
    );
    let r = db.run(&d, &["run", "l.toml", "--op", "get", "--ops", "1"]);
    assert_eq!(r.data_load.unwrap().records, 500);
    assert_eq!(count(&format!("k LIKE 'k%' AND {len} = 100")), 500);
}

#[test]
fn kv_load_then_mixed_ops_leave_exactly_their_effect() {
    both(kv_load_then_mixed_ops);
}

fn bank(db: &Db) -> String {
    let (create, seed) = if db.pg {
        (
            "CREATE TABLE IF NOT EXISTS loadrig_acct (id INT PRIMARY KEY, balance NUMERIC(12,2) NOT NULL)",
            "INSERT INTO loadrig_acct VALUES (1, 1000), (2, 1000) ON CONFLICT (id) DO NOTHING",
        )
    } else {
        (
            "CREATE TABLE IF NOT EXISTS loadrig_acct (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL) ENGINE=InnoDB",
            "INSERT IGNORE INTO loadrig_acct VALUES (1, 1000), (2, 1000)",
        )
    };
    format!(
        r#"
name = "bank"
setup = ["{create}", "{seed}"]

[[op]]
name = "transfer"
tx = [
  {{ sql = {{ query = "SELECT balance, id FROM loadrig_acct WHERE id = {p1} FOR UPDATE", params = ["1"] }}, capture = ["b1", "id1"] }},
  {{ sql = {{ query = "UPDATE loadrig_acct SET balance = {minus} WHERE id = {p2}", params = ["{{b1}}", "{{id1}}"] }} }},
  {{ sql = {{ query = "UPDATE loadrig_acct SET balance = balance + 1 WHERE id = {p1}", params = ["2"] }} }},
]
"#,
        p1 = db.p(1),
        p2 = db.p(2),
        // PostgreSQL would infer `$1 - 1` as an integer; the captured value is a numeric.
        minus = if db.pg { "$1::numeric - 1" } else { "? - 1" },
    )
}

fn sql_transactions_with_captures(db: &Db) {
    let d = Dir::new();
    d.write("bank.toml", &bank(db));
    let r = db.run(&d, &["run", "bank.toml", "--clients", "4", "--ops", "200"]);
    assert_eq!((r.total.ok, r.total.errors), (200, 0));
    // select (1 row) + two updates (1 row each)
    assert_eq!(r.total.rows, 600);
    let balances = db.query("SELECT id, balance FROM loadrig_acct ORDER BY id");
    assert_eq!(
        balances,
        [["1", "800.00"], ["2", "1200.00"]],
        "each transfer read the balance under a row lock and wrote it back minus one"
    );
}

#[test]
fn sql_transactions_pass_captured_values_between_steps() {
    both(sql_transactions_with_captures);
}

fn deadlock_workload(db: &Db, retry: bool) -> String {
    let (create, seed) = if db.pg {
        (
            "CREATE TABLE IF NOT EXISTS loadrig_dl (id INT PRIMARY KEY, n INT NOT NULL)",
            "INSERT INTO loadrig_dl VALUES (0, 0), (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0",
        )
    } else {
        (
            "CREATE TABLE IF NOT EXISTS loadrig_dl (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
            "REPLACE INTO loadrig_dl VALUES (0, 0), (1, 0)",
        )
    };
    // Client 0 locks row 0 then row 1; client 1 locks row 1 then row 0.
    format!(
        r#"
name = "deadlock"
setup = ["{create}", "{seed}"]

[[op]]
name = "cross"
{retry}
tx = [
  {{ sql = {{ query = "UPDATE loadrig_dl SET n = n + 1 WHERE id = {p1}", params = ["{{client}}"] }} }},
  {{ sql = {{ query = "{sleep}" }} }},
  {{ sql = {{ query = "UPDATE loadrig_dl SET n = n + 1 WHERE id = 1 - {p1}", params = ["{{client}}"] }} }},
]
"#,
        retry = if retry {
            r#"retry = { on = ["deadlock"], max = 10, backoff = "1ms" }"#
        } else {
            ""
        },
        sleep = db.sleep(),
        p1 = db.p(1),
    )
}

fn deadlocks(db: &Db) {
    let d = Dir::new();
    d.write("dl.toml", &deadlock_workload(db, false));
    let r = db.run(&d, &["run", "dl.toml", "--clients", "2", "--ops", "4"]);
    let dl = r
        .total
        .errors_by_class
        .get(&ErrorClass::Deadlock)
        .copied()
        .unwrap_or(0);
    assert!(
        dl > 0,
        "no deadlock was classified: {:?}",
        r.total.error_messages
    );
    assert_eq!(dl, r.total.errors, "{:?}", r.total.error_messages);

    d.write("dlr.toml", &deadlock_workload(db, true));
    let r = db.run(&d, &["run", "dlr.toml", "--clients", "2", "--ops", "6"]);
    assert_eq!(
        (r.total.ok, r.total.errors),
        (6, 0),
        "{:?}",
        r.total.error_messages
    );
    assert!(r.total.retries > 0, "no transaction was retried");
    // Each committed transfer incremented both rows once; victims left nothing behind.
    assert_eq!(db.count("SELECT sum(n) FROM loadrig_dl"), 12);
}

#[test]
fn deadlocks_are_classified_and_retried() {
    both(deadlocks);
}

fn bad_credentials_and_closed_ports(db: &Db) {
    let d = Dir::new();
    d.write("w.toml", PUT_ONLY);
    let pw = db.password();
    let wrong = db.url.replace(&format!(":{pw}@"), ":wrongpw123@");
    let out = d.loadrig(&["run", "w.toml", "--target", &wrong, "--ops", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("authentication failed (auth)"), "{err}");
    assert!(!err.contains("wrongpw123") && !err.contains(&pw), "{err}");

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let scheme = if db.pg { "postgres" } else { "mysql" };
    let closed = format!("{scheme}://loadrig:{pw}@127.0.0.1:{port}/loadrig");
    let started = Instant::now();
    let out = d.loadrig(&["run", "w.toml", "--target", &closed, "--ops", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("connection failed (connect)"), "{err}");
    assert!(
        err.contains(&format!("{scheme}://loadrig:***@127.0.0.1:{port}/loadrig")),
        "{err}"
    );
    assert!(!err.contains(&pw), "{err}");
    // Bounded by connect_timeout (5 s by default), not by the OS's TCP retries.
    assert!(started.elapsed() < Duration::from_secs(30));

    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &format!("{}?sslmode=off", db.url),
        "--ops",
        "5",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // PostgreSQL knows sslmode (docs/targets.md "TLS") but not that value; MySQL's is ssl-mode.
    if db.pg {
        assert!(
            err.contains("sslmode=off: expected disable, require"),
            "{err}"
        );
    } else {
        assert!(err.contains("unknown option 'sslmode'"), "{err}");
    }
}

#[test]
fn bad_password_and_closed_port_exit_2_without_the_secret() {
    both(bad_credentials_and_closed_ports);
}

fn connections(db: &Db) {
    let d = Dir::new();
    d.write("w.toml", PUT_ONLY);
    let r = db.run(
        &d,
        &[
            "run",
            "w.toml",
            "--connection",
            "per-op",
            "--clients",
            "2",
            "--ops",
            "50",
        ],
    );
    assert_eq!((r.total.ok, r.total.errors), (50, 0));
    assert_eq!(db.count("SELECT count(*) FROM loadrig_kv"), 50);

    d.write(
        "c.toml",
        "name = \"c\"\n[[op]]\nname = \"connect\"\nconnect = {}\n[[op]]\nname = \"auth\"\nauthenticate = {}\n",
    );
    let r = db.run(
        &d,
        &[
            "run",
            "c.toml",
            "--op",
            "connect",
            "--clients",
            "2",
            "--ops",
            "30",
        ],
    );
    assert_eq!((r.total.ok, r.total.errors), (30, 0));
    assert_eq!(r.workload.ops[0].kind, "connect");

    let r = db.run(&d, &["run", "c.toml", "--op", "auth", "--ops", "20"]);
    if db.pg {
        // No re-authentication on an open PostgreSQL connection: a clear error, counted.
        assert_eq!((r.total.ok, r.total.errors), (0, 20));
        let m = &r.total.error_messages[0].message;
        assert!(
            m.contains("use the `connect` operation") || m.contains("with the `connect` operation"),
            "{m}"
        );
    } else {
        // COM_CHANGE_USER; prepared statements are prepared again afterwards.
        assert_eq!((r.total.ok, r.total.errors), (20, 0));
    }
}

#[test]
fn per_op_connections_connect_and_authenticate_operations() {
    both(connections);
}

fn cleanup(db: &Db) {
    // Whatever else the database holds (pgbench's tables, say) must stay as it is.
    let others = db.tables();
    assert!(others.iter().all(|t| !t.starts_with("loadrig_")));
    db.exec("CREATE TABLE mine (x INT)");
    db.exec("CREATE TABLE loadrigx (y INT)");
    db.exec("INSERT INTO mine VALUES (42)");
    let d = Dir::new();
    d.write("w.toml", PUT_ONLY);
    d.write("bank.toml", &bank(db));
    db.run(&d, &["run", "w.toml", "--ops", "5"]);
    db.run(&d, &["run", "bank.toml", "--ops", "5"]);
    let with = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = others
            .iter()
            .cloned()
            .chain(extra.iter().map(|s| s.to_string()))
            .collect();
        v.sort();
        v
    };
    let mut tables = db.tables();
    tables.sort();
    assert_eq!(
        tables,
        with(&["loadrig_acct", "loadrig_kv", "loadrigx", "mine"])
    );
    let out = db.loadrig(&d, &["cleanup"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("removed 2 loadrig object(s)"), "{stdout}");
    assert!(stdout.contains(&db.shown()), "{stdout}");
    let mut tables = db.tables();
    tables.sort();
    assert_eq!(tables, with(&["loadrigx", "mine"]));
    assert_eq!(db.query("SELECT x FROM mine"), [["42"]]);
    db.exec("DROP TABLE mine, loadrigx");
}

#[test]
fn cleanup_drops_only_the_loadrig_tables() {
    both(cleanup);
}

fn native_params_and_errors(db: &Db) {
    let d = Dir::new();
    let (create, fill) = if db.pg {
        (
            "CREATE TABLE IF NOT EXISTS loadrig_t (id INT8 PRIMARY KEY, flag BOOL, ratio FLOAT8, name TEXT, price NUMERIC(8,2), data BYTEA)",
            "INSERT INTO loadrig_t VALUES ($1, $2, $3, $4, $5, $6)",
        )
    } else {
        (
            "CREATE TABLE IF NOT EXISTS loadrig_t (id BIGINT PRIMARY KEY, flag BOOL, ratio DOUBLE, name TEXT, price DECIMAL(8,2), data LONGBLOB)",
            "INSERT INTO loadrig_t VALUES (?, ?, ?, ?, ?, ?)",
        )
    };
    let flag = if db.pg { "true" } else { "1" };
    d.write(
        "n.toml",
        &format!(
            r#"
name = "native"
setup = ["{create}"]

[[op]]
name = "insert"
sql = {{ query = "{fill}", params = ["{{seq 1}}", "{flag}", "0.5", "n{{seq 1}}", "12.34", "{{bytes 16}}"] }}

[[op]]
name = "read"
sql = {{ query = "SELECT id FROM loadrig_t WHERE id <= {p1}", params = ["3"] }}

[[op]]
name = "dup"
sql = {{ query = "{fill}", params = ["1", "{flag}", "0.5", "x", "1", "y"] }}

[[op]]
name = "bad"
sql = {{ query = "SELECT id FROM loadrig_t WHERE id = {p1}", params = ["twelve"] }}
"#,
            p1 = db.p(1)
        ),
    );
    let r = db.run(
        &d,
        &[
            "run",
            "n.toml",
            "--op",
            "insert",
            "--clients",
            "2",
            "--ops",
            "10",
        ],
    );
    assert_eq!((r.total.ok, r.total.rows), (10, 10));
    assert_eq!(
        db.query("SELECT name, price FROM loadrig_t WHERE id = 7"),
        [["n7", "12.34"]]
    );
    let r = db.run(&d, &["run", "n.toml", "--op", "read", "--ops", "4"]);
    assert_eq!(
        (r.total.ok, r.total.rows),
        (4, 12),
        "rows returned by a SELECT"
    );
    let r = db.run(&d, &["run", "n.toml", "--op", "dup", "--ops", "3"]);
    assert_eq!(
        r.total.errors_by_class.get(&ErrorClass::Constraint),
        Some(&3)
    );
    if db.pg {
        // A parameter that does not parse as its declared type: the server's error (the
        // batch driver sends the text for the server to parse), naming the value.
        let r = db.run(&d, &["run", "n.toml", "--op", "bad", "--ops", "2"]);
        assert_eq!(r.total.errors_by_class.get(&ErrorClass::Other), Some(&2));
        let m = &r.total.error_messages[0].message;
        assert!(
            m.contains("22P02 invalid input syntax for type bigint: \"twelve\""),
            "{m}"
        );
    }
}

#[test]
fn native_sql_binds_parameters_and_classifies_constraints() {
    both(native_params_and_errors);
}

fn lost_connections(db: &Db) {
    // Kill our own sessions from another connection in the middle of a run: the ops in
    // flight fail as `connect`, the clients reconnect and the run goes on.
    let d = Dir::new();
    d.write(
        "s.toml",
        &format!(
            "name = \"slow\"\n[[op]]\nname = \"nap\"\nsql = {{ query = \"{}\" }}\n",
            db.sleep()
        ),
    );
    let url = db.url.clone();
    let pg = db.pg;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        if pg {
            server_query(
                &url,
                pg,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = 'loadrig' AND pid <> pg_backend_pid()",
            );
        } else {
            for row in server_query(
                &url,
                pg,
                "SELECT id FROM information_schema.processlist \
                 WHERE info LIKE 'SELECT SLEEP%' AND id <> CONNECTION_ID()",
            ) {
                // A session may end by itself in between: KILL then fails, which is fine.
                let kill = format!("KILL {}", row[0]);
                let _ = std::panic::catch_unwind(|| server_query(&url, pg, &kill));
            }
        }
    });
    let r = db.run(&d, &["run", "s.toml", "--clients", "2", "--duration", "2s"]);
    killer.join().unwrap();
    assert!(r.total.ok > 0);
    assert!(
        r.total
            .errors_by_class
            .get(&ErrorClass::Connect)
            .copied()
            .unwrap_or(0)
            > 0,
        "{:?}",
        r.total.error_messages
    );
    assert!(r.total.reconnects > 0);
}

#[test]
fn a_lost_connection_is_class_connect_and_reconnected() {
    both(lost_connections);
}

fn op_timeouts(db: &Db) {
    // Even operations sleep 3 s, odd ones answer at once: with a 200 ms limit exactly the
    // even ones fail as timeout, and each odd one that follows succeeds on a new connection.
    let query = if db.pg {
        "SELECT pg_sleep(CASE WHEN $1::int % 2 = 0 THEN 3 ELSE 0 END)"
    } else {
        "SELECT SLEEP(IF(? % 2 = 0, 3, 0))"
    };
    let d = Dir::new();
    d.write(
        "t.toml",
        &format!(
            "name = \"t\"\n[[op]]\nname = \"nap\"\nsql = {{ query = \"{query}\", params = [\"{{seq}}\"] }}\n"
        ),
    );
    let r = db.run(
        &d,
        &["run", "t.toml", "--ops", "6", "--op-timeout", "200ms"],
    );
    assert_eq!((r.total.ok, r.total.errors), (3, 3));
    assert_eq!(r.total.errors_by_class[&ErrorClass::Timeout], 3);
    assert_eq!(
        r.total.error_messages[0].message,
        "no answer within 200ms (op timeout)"
    );
    assert_eq!(r.total.reconnects, 3);
    assert_eq!(r.load.op_timeout.map(|t| t.as_secs_f64()), Some(0.2));
}

#[test]
fn an_operation_over_the_op_timeout_fails_as_timeout_and_the_run_goes_on() {
    both(op_timeouts);
}

#[test]
fn mysql_binds_number_generators_as_numbers_and_text_as_bytes() {
    let Some(db) = Db::mysql() else { return };
    // Bound as a string, 7 would compare as text ('7' = '7.0' is false) and divide as a
    // double (3.5); bound as an integer it compares as a number and divides exactly (3.5000).
    let d = Dir::new();
    d.write(
        "b.toml",
        r#"
name = "binds"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_bind (name VARCHAR(20) PRIMARY KEY, v VARCHAR(40), n BIGINT)"]
[params]
seven = 7
half = 0.5
[[op]]
name = "bind"
tx = [
  { sql = { query = "INSERT INTO loadrig_bind VALUES ('int eq', ? = '7.0', NULL)", params = ["{uniform 7..8}"] } },
  { sql = { query = "INSERT INTO loadrig_bind VALUES ('int div', ? / 2, NULL)", params = ["{seven}"] } },
  { sql = { query = "INSERT INTO loadrig_bind VALUES ('float eq', ? = '0.50', NULL)", params = ["{half}"] } },
  { sql = { query = "INSERT INTO loadrig_bind VALUES ('text eq', ? = '7.0', NULL)", params = ["7"] } },
  { sql = { query = "INSERT INTO loadrig_bind VALUES ('text div', ? / 2, NULL)", params = ["7"] } },
  { sql = { query = "INSERT INTO loadrig_bind VALUES ('seq', ? + 0, ?)", params = ["{seq 41}", "{seq 41}"] } },
]
"#,
    );
    let r = db.run(&d, &["run", "b.toml", "--ops", "1"]);
    assert_eq!(
        (r.total.ok, r.total.errors),
        (1, 0),
        "{:?}",
        r.total.error_messages
    );
    let mut rows = db.query("SELECT name, v, COALESCE(n, '') FROM loadrig_bind ORDER BY name");
    // Decimal division keeps at least div_precision_increment (4) digits: MySQL shows
    // 3.5000, MariaDB's prepared statements more.
    let div = rows[1][1].clone();
    assert!(
        div.starts_with("3.5000") && div.trim_end_matches('0') == "3.5",
        "{div}"
    );
    rows[1][1] = "decimal 3.5".into();
    assert_eq!(
        rows,
        [
            ["float eq", "1", ""],
            ["int div", "decimal 3.5", ""],
            ["int eq", "1", ""],
            ["seq", "41", "41"],
            ["text div", "3.5", ""],
            ["text eq", "0", ""],
        ]
    );
}

#[test]
fn postgres_captures_give_the_text_the_server_prints() {
    let Some(db) = Db::pg() else { return };
    // Each column is captured, written back into a text column, and compared with the
    // server's own text of the same value.
    let columns: &[(&str, &str, [&str; 3])] = &[
        ("b", "bool", ["true", "false", "NULL"]),
        ("i2", "int2", ["'-32768'", "7", "NULL"]),
        ("i4", "int4", ["2147483647", "-1", "NULL"]),
        ("i8", "int8", ["'-9223372036854775808'", "0", "NULL"]),
        ("f4", "real", ["1234567", "0.1", "'-Infinity'"]),
        ("f8", "float8", ["0.1", "1e15", "'NaN'"]),
        ("f8b", "float8", ["0.00001", "-0.0", "123456789012345"]),
        ("n", "numeric", ["12345.6789", "-0.000100", "'NaN'"]),
        (
            "d",
            "date",
            ["'2024-02-29'", "'0044-03-15 BC'", "'infinity'"],
        ),
        (
            "t",
            "time",
            ["'23:59:59.999999'", "'00:00:00'", "'12:30:00.5'"],
        ),
        (
            "tz",
            "timetz",
            ["'12:00:00+05:30'", "'01:02:03-08'", "'00:00:00.25+00'"],
        ),
        (
            "ts",
            "timestamp",
            [
                "'2024-02-29 13:45:06.5'",
                "'0001-01-01 00:00:00 BC'",
                "'-infinity'",
            ],
        ),
        (
            "tstz",
            "timestamptz",
            [
                "'2024-02-29 13:45:06.123456+00'",
                "'1969-12-31 23:59:59+02'",
                "'infinity'",
            ],
        ),
        (
            "iv",
            "interval",
            [
                "'1 year 2 mons 3 days 04:05:06.789'",
                "'-1 days +02:00:00'",
                "'-00:00:01.5'",
            ],
        ),
        (
            "u",
            "uuid",
            [
                "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
                "'00000000-0000-0000-0000-000000000000'",
                "NULL",
            ],
        ),
        ("j", "json", [r#"'{"a": [1, 2]}'"#, "'null'", "NULL"]),
        (
            "jb",
            "jsonb",
            [r#"'{"b": 1, "a": "x y"}'"#, "'[1, 2.50]'", "NULL"],
        ),
        (
            "ia",
            "int[]",
            ["'{1,2,NULL}'", "'{{1,2},{3,4}}'", "'[0:1]={7,8}'"],
        ),
        (
            "ta",
            "text[]",
            [
                r#"'{"a b","",NULL,"q\"x",plain,"null"}'"#,
                "'{}'",
                r#"'{"\\x"}'"#,
            ],
        ),
        (
            "fa",
            "float8[]",
            ["'{1e15,0.00001,-0,NaN,-Infinity}'", "'{1.5}'", "NULL"],
        ),
        ("da", "date[]", ["'{2024-01-01,infinity}'", "NULL", "NULL"]),
        (
            "tsa",
            "timestamptz[]",
            [r#"'{"2024-01-01 00:00:00+00"}'"#, "NULL", "NULL"],
        ),
        (
            "iva",
            "interval[]",
            [r#"'{"1 day","00:00:00"}'"#, "NULL", "NULL"],
        ),
        ("ba", "bytea[]", [r#"'{"\\x0102"}'"#, "NULL", "NULL"]),
    ];
    let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let create = format!(
        "CREATE TABLE IF NOT EXISTS loadrig_types (id int PRIMARY KEY, {})",
        columns
            .iter()
            .map(|(n, t, _)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let back = format!(
        "CREATE TABLE IF NOT EXISTS loadrig_back (id int PRIMARY KEY, {})",
        names
            .iter()
            .map(|n| format!("{n} text"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    db.exec(&create);
    db.exec(&back);
    for row in 0..3 {
        db.exec(&format!(
            "INSERT INTO loadrig_types VALUES ({row}, {})",
            columns
                .iter()
                .map(|(_, t, v)| format!("{}::{t}", v[row]))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let list = names.join(", ");
    let placeholders: Vec<String> = (2..names.len() + 2).map(|i| format!("${i}")).collect();
    let captures: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let params: Vec<String> = names.iter().map(|n| format!("\"{{{n}}}\"")).collect();
    let d = Dir::new();
    d.write(
        "c.toml",
        &format!(
            r#"
name = "captures"
[[op]]
name = "copy"
tx = [
  {{ sql = {{ query = "SELECT {list} FROM loadrig_types WHERE id = $1", params = ["{{seq}}"] }}, capture = [{}] }},
  {{ sql = {{ query = "INSERT INTO loadrig_back (id, {list}) VALUES ($1, {})", params = ["{{seq}}", {}] }} }},
]
"#,
            captures.join(", "),
            placeholders.join(", "),
            params.join(", ")
        ),
    );
    let r = db.run(&d, &["run", "c.toml", "--ops", "3"]);
    assert_eq!(
        (r.total.ok, r.total.errors),
        (3, 0),
        "{:?}",
        r.total.error_messages
    );
    // A NULL is captured as empty text.
    let texts = |sql: String| -> Vec<Vec<String>> {
        db.query(&sql)
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|v| if v == "NULL" { String::new() } else { v })
                    .collect()
            })
            .collect()
    };
    // The server's own text for each value: its output functions, as the simple query
    // protocol returns them and psql prints them (`::text` agrees, except that it spells
    // booleans true/false).
    let server = texts(format!("SELECT {list} FROM loadrig_types ORDER BY id"));
    let captured = texts(format!("SELECT {list} FROM loadrig_back ORDER BY id"));
    for (row, (s, c)) in server.iter().zip(&captured).enumerate() {
        for (k, name) in names.iter().enumerate() {
            assert_eq!(c[k], s[k], "row {row}, column {name}");
        }
    }
    assert_eq!(captured.len(), 3);
}

/// `when` steps and a commit point, on each server: an UPDATE captures its affected-row
/// count (1, then 0), NULL and false (`f` on PostgreSQL, `0` on MySQL) skip a step.
fn when_and_commit_points(db: &Db) {
    let engine = if db.pg { "" } else { " ENGINE=InnoDB" };
    let p = |n| db.p(n);
    let d = Dir::new();
    d.write(
        "w.toml",
        &format!(
            r#"
name = "claims"
setup = ["CREATE TABLE IF NOT EXISTS loadrig_claims (id INT PRIMARY KEY, s VARCHAR(20)){engine}", "CREATE TABLE IF NOT EXISTS loadrig_cb (id INT PRIMARY KEY){engine}"]
[[op]]
name = "claim"
let = {{ id = "{{seq}}" }}
tx = [
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1}, 'pending')", params = ["{{id}}"] }} }},
  {{ sql = {{ query = "UPDATE loadrig_claims SET s = 'sent' WHERE id = {p1} AND s = 'pending'", params = ["{{id}}"] }}, capture = ["claimed"] }},
  {{ sql = {{ query = "UPDATE loadrig_claims SET s = 'twice' WHERE id = {p1} AND s = 'pending'", params = ["{{id}}"] }}, capture = ["again"] }},
  {{ sql = {{ query = "SELECT NULL, 1 = 0, 1 = 1" }}, capture = ["nothing", "no", "yes"] }},
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1} + 1000, 'claimed')", params = ["{{id}}"] }}, when = "claimed" }},
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1} + 2000, 'again')", params = ["{{id}}"] }}, when = "again" }},
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1} + 3000, 'null')", params = ["{{id}}"] }}, when = "nothing" }},
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1} + 4000, 'no')", params = ["{{id}}"] }}, when = "no" }},
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1} + 5000, 'yes')", params = ["{{id}}"] }}, when = "yes" }},
]
[[op]]
name = "chopped"
let = {{ id = "{{seq}}" }}
tx = [
  {{ sql = {{ query = "INSERT INTO loadrig_claims VALUES ({p1} + 10000, 'first')", params = ["{{id}}"] }} }},
  {{ commit = {{}} }},
  {{ sql = {{ query = "INSERT INTO loadrig_cb VALUES ({p1})", params = ["{{id}}"] }} }},
  {{ sql = {{ query = "INSERT INTO loadrig_cb VALUES ({p1})", params = ["{{id}}"] }} }},
]
"#,
            p1 = p(1)
        ),
    );
    let r = db.run(
        &d,
        &[
            "run",
            "w.toml",
            "--op",
            "claim",
            "--clients",
            "2",
            "--ops",
            "10",
        ],
    );
    let claim = op(&r, "claim");
    // insert 1, updates 1 and 0, select 1 row, two inserts.
    assert_eq!((claim.ok, claim.errors, claim.rows), (10, 0, 50));
    let by_s = db.query("SELECT s, COUNT(*) FROM loadrig_claims GROUP BY s ORDER BY s");
    assert_eq!(by_s, [["claimed", "10"], ["sent", "10"], ["yes", "10"]]);
    let r = db.run(
        &d,
        &[
            "run",
            "w.toml",
            "--op",
            "chopped",
            "--clients",
            "1",
            "--ops",
            "5",
        ],
    );
    let chopped = op(&r, "chopped");
    assert_eq!((chopped.ok, chopped.errors), (0, 5));
    assert_eq!(
        chopped.errors_by_class.get(&ErrorClass::Constraint),
        Some(&5)
    );
    let first = db.query("SELECT COUNT(*) FROM loadrig_claims WHERE s = 'first'");
    assert_eq!(first, [["5"]]);
    assert_eq!(db.query("SELECT COUNT(*) FROM loadrig_cb"), [["0"]]);
}

#[test]
fn when_steps_read_affected_rows_and_commit_points_keep_earlier_parts() {
    both(when_and_commit_points);
}
