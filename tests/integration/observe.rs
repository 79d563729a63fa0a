//! The observer against the real servers of scripts/services.sh: exact counts where the
//! servers count exactly (statements run on a connection of the test's own while the
//! observer watches), wait-event shares from a real lock conflict, each loopback server's
//! process tree, and what is reported as not available. Counts and classes only, never
//! timings. Without a server's URL its tests say "skipped" (or fail under
//! LOADRIG_REQUIRE_ALL=1).

use std::time::{Duration, Instant};

use crate::common::locks::{hold, Held, Shared};
use crate::common::server_url;
use loadrig::observe::{Observation, ObserveConfig, Observer, ProcessFigures, Sessions, UserQuery};
use loadrig::workload::observe::ObserveEntry;

/// Tests that change the loadrig_trust database's connection limit, or need its sessions
/// to be theirs alone, hold the PostgreSQL server: other modules' tests connect to it too.
fn trust_db() -> Held {
    hold(&[Shared::Postgres])
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Observe `config` every `interval` while `work` runs: the observer's first reading comes
/// before the work starts, its last after the work ended and `settle` passed (PostgreSQL
/// publishes a session's counters when it ends).
fn observe_while(
    config: ObserveConfig,
    interval: Duration,
    settle: Duration,
    work: impl FnOnce(),
) -> Observation {
    let mut observer = Observer::start(config, Instant::now(), interval).expect("observer starts");
    assert!(
        observer.wait_ready(Duration::from_secs(30)),
        "the observer took its first reading"
    );
    work();
    std::thread::sleep(settle);
    observer.finish()
}

fn counter(o: &Observation, key: &str) -> f64 {
    o.intervals
        .iter()
        .filter_map(|i| i.target.counters.get(key))
        .sum()
}

fn max_gauge(o: &Observation, key: &str) -> Option<f64> {
    o.intervals
        .iter()
        .filter_map(|i| i.target.gauges.get(key).copied())
        .reduce(f64::max)
}

/// Calls over the whole observation of the statements whose text contains `needle`.
fn calls(o: &Observation, needle: &str) -> u64 {
    o.intervals
        .iter()
        .flat_map(|i| &i.target.statements)
        .filter(|s| s.text.contains(needle))
        .map(|s| s.calls)
        .sum()
}

fn processes(o: &Observation) -> Vec<&ProcessFigures> {
    o.intervals
        .iter()
        .filter_map(|i| i.target.processes.as_ref())
        .collect()
}

fn unavailable<'a>(o: &'a Observation, what: &str) -> Option<&'a loadrig::observe::Unavailable> {
    o.unavailable.iter().find(|u| u.what == what)
}

/// Nothing the test expects to see was reported missing.
fn all_available(o: &Observation, allowed: &[&str]) {
    let missing: Vec<String> = o
        .unavailable
        .iter()
        .filter(|u| !allowed.contains(&u.what.as_str()))
        .map(|u| u.to_string())
        .collect();
    assert!(missing.is_empty(), "unexpectedly unavailable: {missing:#?}");
}

fn config(url: &str, sessions: Sessions) -> ObserveConfig {
    ObserveConfig {
        sessions,
        session_rate: 20.0,
        ..ObserveConfig::new(url)
    }
}

/// A PostgreSQL connection of the test's own, carrying `app` as its application_name.
async fn pg(url: &str, app: &str) -> tokio_postgres::Client {
    let mut cfg: tokio_postgres::Config = url.parse().expect("a postgres URL");
    cfg.application_name(app);
    let (client, conn) = cfg.connect(tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(conn);
    client
}

fn query(name: &str, sql: &str) -> UserQuery {
    UserQuery::new(&ObserveEntry {
        name: name.into(),
        sql: sql.into(),
        every: None,
    })
    .expect("a well-formed [[observe]] query")
}

// --- PostgreSQL ------------------------------------------------------------------------

#[test]
fn postgres_counts_statements_exactly_and_finds_its_processes() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    const N: u64 = 25;
    let o = observe_while(
        config(&url, Sessions::Application("observe_exact".into())),
        Duration::from_millis(200),
        Duration::from_millis(600),
        || {
            runtime().block_on(async {
                let c = pg(&url, "observe_exact").await;
                // The backend lives across a boundary, so the tree is seen to gain and
                // lose it.
                tokio::time::sleep(Duration::from_millis(700)).await;
                for i in 0..N {
                    c.query("SELECT $1::int4 AS observe_exact_count", &[&(i as i32)])
                        .await
                        .expect("select");
                }
            })
        },
    );
    all_available(&o, &["pg_stat_statements of other roles"]);
    assert_eq!(
        calls(&o, "observe_exact_count"),
        N,
        "pg_stat_statements counts every call"
    );
    assert!(counter(&o, "pg_stat_database.xact_commit") >= N as f64);
    assert!(
        o.intervals.iter().all(|i| i
            .target
            .statements
            .iter()
            .all(|s| !s.text.contains("loadrig_observer"))),
        "the observer's own statements are left out"
    );
    let procs = processes(&o);
    assert!(!procs.is_empty(), "the server's processes were read");
    assert!(
        procs.iter().all(|p| p.processes >= 2),
        "the postmaster and its children: {procs:?}"
    );
    assert!(
        procs.iter().any(|p| p.started >= 1),
        "the test's backend started: {procs:?}"
    );
    assert!(
        procs.iter().any(|p| p.ended >= 1),
        "... and ended: {procs:?}"
    );
    assert!(o.cost.queries > 0);
    assert!(
        o.cost.server_time_ms.is_some(),
        "pg_stat_statements counts the observer's own time"
    );
    assert!(o.cost.cpu_s > 0.0);
}

#[test]
fn postgres_lock_waits_are_the_backends_time() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let app = "observe_lock";
    let rt = runtime();
    let holder = rt.block_on(async {
        let c = pg(&url, app).await;
        c.batch_execute(
            "DROP TABLE IF EXISTS loadrig_observe_lock; \
             CREATE TABLE loadrig_observe_lock (id int PRIMARY KEY, n int); \
             INSERT INTO loadrig_observe_lock SELECT g, 0 FROM generate_series(1, 3) AS g",
        )
        .await
        .expect("table");
        c
    });
    let o = observe_while(
        config(&url, Sessions::Application(app.into())),
        Duration::from_millis(300),
        Duration::from_millis(100),
        || {
            rt.block_on(async {
                // Each blocked backend wants a row of its own, so each waits for the
                // holder's transaction (several on one row would queue on its tuple lock).
                holder
                    .batch_execute("BEGIN; UPDATE loadrig_observe_lock SET n = n + 1")
                    .await
                    .expect("hold the rows");
                let mut blocked = Vec::new();
                for id in 1..=3 {
                    let c = pg(&url, app).await;
                    blocked.push(tokio::spawn(async move {
                        c.execute(
                            "UPDATE loadrig_observe_lock SET n = n + 1 WHERE id = $1",
                            &[&id],
                        )
                        .await
                        .expect("update after the holder commits")
                    }));
                }
                tokio::time::sleep(Duration::from_millis(1500)).await;
                holder.batch_execute("COMMIT").await.expect("commit");
                for b in blocked {
                    assert_eq!(b.await.unwrap(), 1);
                }
            })
        },
    );
    rt.block_on(holder.batch_execute("DROP TABLE loadrig_observe_lock"))
        .expect("drop");
    let (mut active, mut lock, mut idle) = (0, 0, 0);
    let profiles: Vec<_> = o
        .intervals
        .iter()
        .filter_map(|i| i.target.waits.as_ref())
        .collect();
    for w in &profiles {
        active += w.active;
        idle += w.idle_in_transaction;
        lock += w
            .waits
            .iter()
            .filter(|s| s.class == "Lock" && s.event == "transactionid")
            .map(|s| s.samples)
            .sum::<u64>();
    }
    assert!(active > 0, "the blocked backends were sampled");
    assert!(
        lock as f64 > 0.5 * active as f64,
        "Lock/transactionid holds {lock} of {active} active backend-samples: {profiles:#?}"
    );
    assert!(idle > 0, "the holder sat idle in its transaction");
}

/// `postgres://loadrig:PW@HOST:PORT/loadrig` → the same role in database loadrig_trust.
fn in_trust_db(url: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a database in the URL");
    format!("{base}/loadrig_trust")
}

#[test]
fn postgres_says_what_an_unprivileged_role_cannot_see() {
    let Some(trust) = server_url("LOADRIG_PG_TRUST_URL") else {
        return;
    };
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _one = trust_db();
    // Another role's session in loadrig_trust's database, connected the whole time (its
    // state is hidden whatever it is).
    let other = in_trust_db(&url);
    let (connected, connected_rx) = std::sync::mpsc::channel();
    let (done, done_rx) = std::sync::mpsc::channel::<()>();
    let sleeper = std::thread::spawn(move || {
        runtime().block_on(async {
            let c = pg(&other, "observe_other_role").await;
            connected.send(()).unwrap();
            let _ = done_rx.recv();
            drop(c);
        })
    });
    connected_rx.recv().expect("the other role connected");
    let d = crate::common::Dir::new();
    let out = d.ok(&[
        "observe",
        "--target",
        &trust,
        "--interval",
        "200ms",
        "--for",
        "1s",
        "--json",
    ]);
    done.send(()).unwrap();
    sleeper.join().unwrap();
    let o: Observation = serde_json::from_str(&out).expect("the observation as JSON");
    let pgss = unavailable(&o, "pg_stat_statements").expect("pg_stat_statements is reported");
    assert!(
        pgss.why.contains("not installed in database loadrig_trust"),
        "{pgss}"
    );
    assert!(
        pgss.enable.contains("CREATE EXTENSION pg_stat_statements"),
        "{pgss}"
    );
    let hidden = unavailable(&o, "wait events of other roles' backends")
        .expect("hidden backends are reported");
    assert!(hidden.enable.contains("pg_read_all_stats"), "{hidden}");
    let hidden_samples: u64 = o
        .intervals
        .iter()
        .filter_map(|i| i.target.waits.as_ref())
        .map(|w| w.hidden)
        .sum();
    assert!(hidden_samples > 0);
    assert_eq!(
        o.unavailable
            .iter()
            .filter(|u| u.what == "pg_stat_statements")
            .count(),
        1,
        "each thing is reported once"
    );
    let noted: usize = o.intervals.iter().map(|i| i.unavailable.len()).sum();
    assert_eq!(
        noted,
        o.unavailable.len(),
        "each note rides on one interval"
    );
}

/// Lifts loadrig_trust's connection limit however the test ends: a connection may be
/// refused while the held one's backend is still going away, so it tries for a while.
struct LiftLimit {
    url: String,
}

impl Drop for LiftLimit {
    fn drop(&mut self) {
        for _ in 0..50 {
            let lifted = runtime().block_on(async {
                let mut cfg: tokio_postgres::Config = self.url.parse().ok()?;
                cfg.application_name("observe_limit");
                let (c, conn) = cfg.connect(tokio_postgres::NoTls).await.ok()?;
                tokio::spawn(conn);
                c.batch_execute("ALTER DATABASE loadrig_trust CONNECTION LIMIT -1")
                    .await
                    .ok()
            });
            if lifted.is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not lift loadrig_trust's connection limit: ALTER DATABASE loadrig_trust CONNECTION LIMIT -1");
    }
}

#[test]
fn postgres_refusing_the_observer_leaves_the_run_unobserved_and_says_so() {
    let Some(trust) = server_url("LOADRIG_PG_TRUST_URL") else {
        return;
    };
    let _one = trust_db();
    let rt = runtime();
    let _lift = LiftLimit { url: trust.clone() };
    // The one connection the limit allows, held by the test while the observer tries.
    let held = rt.block_on(async {
        let c = pg(&trust, "observe_limit").await;
        c.batch_execute("ALTER DATABASE loadrig_trust CONNECTION LIMIT 1")
            .await
            .expect("the owner sets its database's connection limit");
        c
    });
    let o = observe_while(
        config(&trust, Sessions::All),
        Duration::from_millis(200),
        Duration::from_millis(500),
        || {},
    );
    rt.block_on(held.batch_execute("ALTER DATABASE loadrig_trust CONNECTION LIMIT -1"))
        .expect("lift the limit");
    let refused = unavailable(&o, "observation").expect("the refusal is reported");
    assert!(refused.why.contains("too many connections"), "{refused}");
    assert!(refused.enable.contains("connection"), "{refused}");
    assert!(o.intervals.iter().all(|i| i.target.counters.is_empty()));
    assert!(!processes(&o).is_empty(), "the processes are still read");
}

#[test]
fn postgres_user_queries_run_read_only_and_a_failing_one_is_named() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let mut cfg = config(&url, Sessions::All);
    cfg.queries = vec![
        query("answer", "SELECT 42, 'second column'"),
        query(
            "read_only",
            "SELECT current_setting('transaction_read_only')",
        ),
        query("broken", "SELECT * FROM loadrig_observe_no_such_table"),
        query("write", "SELECT nextval('loadrig_observe_seq')"),
    ];
    let rt = runtime();
    let c = rt.block_on(pg(&url, "observe_queries"));
    rt.block_on(c.batch_execute("CREATE SEQUENCE IF NOT EXISTS loadrig_observe_seq"))
        .expect("sequence");
    let o = observe_while(
        cfg,
        Duration::from_millis(200),
        Duration::from_millis(700),
        || {},
    );
    rt.block_on(c.batch_execute("DROP SEQUENCE loadrig_observe_seq"))
        .expect("drop");
    let write = unavailable(&o, "[[observe]] write").expect("a write is refused");
    assert!(write.why.contains("read-only transaction"), "{write}");
    let values: Vec<_> = o.intervals.iter().flat_map(|i| &i.target.queries).collect();
    assert!(
        values
            .iter()
            .any(|v| v.name == "answer" && v.value == Some(42.0)),
        "{values:?}"
    );
    assert!(
        values
            .iter()
            .any(|v| v.name == "read_only" && v.text.as_deref() == Some("on")),
        "{values:?}"
    );
    assert!(values.iter().all(|v| v.name != "broken"));
    let broken = unavailable(&o, "[[observe]] broken").expect("the failing query is named");
    assert!(
        broken.why.contains("loadrig_observe_no_such_table"),
        "{broken}"
    );
}

// --- MariaDB ---------------------------------------------------------------------------

async fn mysql(url: &str) -> mysql_async::Conn {
    let opts = mysql_async::Opts::from_url(url).expect("a mysql URL");
    mysql_async::Conn::new(mysql_async::OptsBuilder::from_opts(opts).prefer_socket(false))
        .await
        .expect("connect")
}

#[test]
fn mariadb_counts_questions_and_digests_exactly() {
    use mysql_async::prelude::Queryable;
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    const N: u64 = 20;
    let o = observe_while(
        config(&url, Sessions::All),
        Duration::from_millis(200),
        Duration::from_millis(300),
        || {
            runtime().block_on(async {
                let mut c = mysql(&url).await;
                for i in 0..N {
                    c.query_drop(format!("SELECT {i} AS observe_exact_count"))
                        .await
                        .expect("select");
                }
                c.disconnect().await.expect("disconnect");
            })
        },
    );
    all_available(&o, &[]);
    assert_eq!(
        calls(&o, "observe_exact_count"),
        N,
        "the digest counts every call"
    );
    assert!(counter(&o, "global_status.Questions") >= N as f64);
    assert!(o.intervals.iter().all(|i| i
        .target
        .statements
        .iter()
        .all(|s| !s.text.contains("loadrig_observer"))));
    let procs = processes(&o);
    assert!(
        !procs.is_empty() && procs.iter().all(|p| p.processes == 1 && p.threads > 1),
        "{procs:?}"
    );
    assert!(
        o.cost.server_time_ms.is_some(),
        "performance_schema counts the observer's own time"
    );
}

#[test]
fn mariadb_row_lock_waits_are_counted() {
    use mysql_async::prelude::Queryable;
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    // Alone on the server: another test's observer reads INNODB_TRX too.
    let _held = hold(&[Shared::Mariadb]);
    const BLOCKED: u64 = 2;
    let rt = runtime();
    let mut holder = rt.block_on(async {
        let mut c = mysql(&url).await;
        c.query_drop("DROP TABLE IF EXISTS loadrig_observe_lock")
            .await
            .unwrap();
        c.query_drop("CREATE TABLE loadrig_observe_lock (id INT PRIMARY KEY, n INT) ENGINE=InnoDB")
            .await
            .unwrap();
        c.query_drop("INSERT INTO loadrig_observe_lock VALUES (1, 0)")
            .await
            .unwrap();
        c
    });
    // A second observer beside the first, as a study's beside its run's: InnoDB serves
    // INNODB_TRX from a copy refreshed only after 100 ms without a read, so readers that
    // together read it more often saw a stale copy with no wait in it.
    let mut second = Observer::start(
        config(&url, Sessions::All),
        Instant::now(),
        Duration::from_millis(300),
    )
    .expect("observer starts");
    assert!(second.wait_ready(Duration::from_secs(30)));
    let o = observe_while(
        config(&url, Sessions::All),
        Duration::from_millis(300),
        Duration::from_millis(300),
        || {
            rt.block_on(async {
                holder.query_drop("BEGIN").await.unwrap();
                holder
                    .query_drop("UPDATE loadrig_observe_lock SET n = n + 1 WHERE id = 1")
                    .await
                    .unwrap();
                let mut blocked = Vec::new();
                for _ in 0..BLOCKED {
                    let mut c = mysql(&url).await;
                    blocked.push(tokio::spawn(async move {
                        c.query_drop("UPDATE loadrig_observe_lock SET n = n + 1 WHERE id = 1")
                            .await
                            .unwrap();
                    }));
                }
                tokio::time::sleep(Duration::from_millis(1200)).await;
                holder.query_drop("COMMIT").await.unwrap();
                for b in blocked {
                    b.await.unwrap();
                }
            })
        },
    );
    rt.block_on(holder.query_drop("DROP TABLE loadrig_observe_lock"))
        .unwrap();
    let second = second.finish();
    assert!(counter(&o, "global_status.Innodb_row_lock_waits") >= BLOCKED as f64);
    assert!(max_gauge(&o, "global_status.Innodb_row_lock_current_waits").unwrap_or(0.0) >= 1.0);
    // Both saw the blocked statements waiting, through the 1.2 s the lock was held.
    for (who, o) in [("first", &o), ("second", &second)] {
        let waiting: u64 = o
            .intervals
            .iter()
            .filter_map(|i| i.target.lock_waits.as_ref())
            .flat_map(|l| &l.statements)
            .filter(|s| s.text.contains("UPDATE loadrig_observe_lock"))
            .map(|s| s.samples)
            .sum();
        assert!(
            waiting >= BLOCKED,
            "{who} observer: {waiting} waiting samples"
        );
    }
}

#[test]
fn mariadb_user_queries_are_read_only() {
    use mysql_async::prelude::Queryable;
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let rt = runtime();
    let mut c = rt.block_on(async {
        let mut c = mysql(&url).await;
        c.query_drop("DROP TABLE IF EXISTS loadrig_observe_ro")
            .await
            .unwrap();
        c.query_drop("CREATE TABLE loadrig_observe_ro (n INT) ENGINE=InnoDB")
            .await
            .unwrap();
        c.query_drop("INSERT INTO loadrig_observe_ro VALUES (0)")
            .await
            .unwrap();
        c
    });
    let mut cfg = config(&url, Sessions::All);
    cfg.queries = vec![
        query("answer", "SELECT 42"),
        query("write", "UPDATE loadrig_observe_ro SET n = n + 1"),
    ];
    let o = observe_while(
        cfg,
        Duration::from_millis(200),
        Duration::from_millis(500),
        || {},
    );
    let n: Option<i64> = rt
        .block_on(c.query_first("SELECT n FROM loadrig_observe_ro"))
        .unwrap();
    rt.block_on(c.query_drop("DROP TABLE loadrig_observe_ro"))
        .unwrap();
    assert_eq!(n, Some(0), "the observer wrote nothing");
    let write = unavailable(&o, "[[observe]] write").expect("a write is refused");
    assert!(
        write.why.to_ascii_uppercase().contains("READ ONLY"),
        "{write}"
    );
    let answers: Vec<_> = o.intervals.iter().flat_map(|i| &i.target.queries).collect();
    assert!(
        !answers.is_empty()
            && answers
                .iter()
                .all(|v| v.name == "answer" && v.value == Some(42.0)),
        "{answers:?}"
    );
}

// --- Redis -----------------------------------------------------------------------------

#[test]
fn redis_commandstats_count_each_command_exactly() {
    let Some(url) = server_url("LOADRIG_REDIS_URL") else {
        return;
    };
    const N: u64 = 30;
    // commandstats count the whole server's commands: no other test's run (whose observer
    // sends INFO) beside this one, so every database of the Redis is held.
    let _all = hold(&(0..16).map(Shared::Redis).collect::<Vec<_>>());
    let o = observe_while(
        config(&url, Sessions::All),
        Duration::from_millis(200),
        Duration::from_millis(300),
        || {
            let mut c = redis::Client::open(url.replacen("redis://:", "redis://default:", 1))
                .unwrap()
                .get_connection()
                .unwrap();
            for _ in 0..N {
                let _: u64 = redis::cmd("STRLEN")
                    .arg("loadrig:observe-test")
                    .query(&mut c)
                    .unwrap();
            }
        },
    );
    all_available(&o, &[]);
    let strlen: u64 = o
        .intervals
        .iter()
        .flat_map(|i| &i.target.statements)
        .filter(|s| s.id == "strlen")
        .map(|s| s.calls)
        .sum();
    assert_eq!(strlen, N);
    let info: u64 = o
        .intervals
        .iter()
        .flat_map(|i| &i.target.statements)
        .filter(|s| s.id == "info")
        .map(|s| s.calls)
        .sum();
    assert_eq!(info, 0, "the observer's own INFO calls are left out");
    assert!(counter(&o, "stats.total_commands_processed") >= N as f64);
    assert!(o
        .intervals
        .iter()
        .any(|i| i.target.counters.contains_key("cpu.used_cpu_user")));
    assert!(!processes(&o).is_empty());
}

// --- OpenLDAP --------------------------------------------------------------------------

fn ldap_url() -> Option<(String, String, String, String)> {
    Some((
        server_url("LOADRIG_LDAP_URL")?,
        server_url("LOADRIG_LDAP_BIND_DN")?,
        server_url("LOADRIG_LDAP_PASSWORD")?,
        server_url("LOADRIG_LDAP_BASE")?,
    ))
}

#[test]
fn openldap_monitor_counts_operations() {
    let Some((url, dn, pw, base)) = ldap_url() else {
        return;
    };
    const N: u64 = 10;
    let target = format!("{url}?bind_dn={dn}&password={pw}");
    let o = observe_while(
        config(&target, Sessions::All),
        Duration::from_millis(200),
        Duration::from_millis(300),
        || {
            runtime().block_on(async {
                let (driver, mut ldap) = ldap3::LdapConnAsync::new(&url).await.expect("connect");
                ldap3::drive!(driver);
                ldap.simple_bind("", "")
                    .await
                    .expect("bind")
                    .success()
                    .expect("anonymous");
                for _ in 0..N {
                    ldap.search(&base, ldap3::Scope::Base, "(objectClass=*)", vec!["dc"])
                        .await
                        .expect("search")
                        .success()
                        .expect("found");
                }
                ldap.unbind().await.expect("unbind");
            })
        },
    );
    all_available(&o, &[]);
    assert!(counter(&o, "operations.search.initiated") >= N as f64);
    assert!(
        counter(&o, "operations.bind.completed") >= 1.0,
        "the test's anonymous bind"
    );
    assert!(max_gauge(&o, "threads.max").is_some());
    assert!(!processes(&o).is_empty());
}

#[test]
fn openldap_without_a_readable_monitor_says_how_to_get_one() {
    let Some((url, ..)) = ldap_url() else { return };
    let o = observe_while(
        config(&url, Sessions::All),
        Duration::from_millis(200),
        Duration::ZERO,
        || {},
    );
    let m = unavailable(&o, "cn=Monitor").expect("an anonymous bind cannot read cn=Monitor");
    assert!(m.enable.contains("database monitor"), "{m}");
}

// --- nginx and what is not on this machine ----------------------------------------------

#[test]
fn nginx_stub_status_counts_requests_and_its_workers() {
    let Some(url) = server_url("LOADRIG_HTTP_URL") else {
        return;
    };
    const N: u64 = 15;
    let target = format!("{url}?status=/nginx_status");
    let o = observe_while(
        config(&target, Sessions::All),
        Duration::from_millis(200),
        Duration::from_millis(300),
        || {
            for _ in 0..N {
                ureq::get(&format!("{url}/static/hello.txt"))
                    .call()
                    .expect("get");
            }
        },
    );
    all_available(&o, &[]);
    assert!(counter(&o, "stub_status.requests") >= N as f64);
    let procs = processes(&o);
    assert!(
        !procs.is_empty() && procs.iter().all(|p| p.processes == 3),
        "the master and its 2 workers: {procs:?}"
    );
}

#[test]
fn a_server_elsewhere_has_no_processes_here() {
    let d = crate::common::Dir::new();
    // TEST-NET-1: nothing to connect to (no status page named), and not this machine.
    let out = d.ok(&[
        "observe",
        "--target",
        "http://192.0.2.1:9",
        "--interval",
        "100ms",
        "--for",
        "300ms",
        "--json",
    ]);
    let o: Observation = serde_json::from_str(&out).expect("JSON");
    let p = unavailable(&o, "processes").expect("processes are reported");
    assert!(p.why.contains("not this machine"), "{p}");
    assert!(unavailable(&o, "nginx stub_status").is_some());
    assert!(processes(&o).is_empty());
}

#[test]
fn embedded_targets_have_nothing_to_observe() {
    let d = crate::common::Dir::new();
    let (_, err) = d.code(
        2,
        &["observe", "--target", "sqlite://./x.db", "--for", "1s"],
    );
    assert!(err.contains("no server to observe"), "{err}");
}

#[test]
fn a_server_behind_the_target_is_observed_too() {
    let Some((url, dn, pw, _)) = ldap_url() else {
        return;
    };
    let Some(pg_url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let target = format!("{url}?bind_dn={dn}&password={pw}");
    let d = crate::common::Dir::new();
    let out = d.ok(&[
        "observe",
        "--target",
        &target,
        "--behind",
        &pg_url,
        "--interval",
        "200ms",
        "--for",
        "700ms",
        "--json",
    ]);
    let o: Observation = serde_json::from_str(&out).expect("JSON");
    assert!(!o.intervals.is_empty());
    assert!(
        o.behind.as_deref().is_some_and(|b| b.contains(":***@")),
        "the password is not shown"
    );
    assert!(!out.contains(&pw), "the LDAP password is not shown");
    for i in &o.intervals {
        let behind = i
            .behind
            .as_ref()
            .expect("the server behind is in every interval");
        assert!(behind.counters.contains_key("pg_stat_database.xact_commit"));
        assert!(i
            .target
            .counters
            .contains_key("operations.search.initiated"));
        let (t, b) = (i.target.processes.as_ref(), behind.processes.as_ref());
        assert!(
            t.zip(b).is_some_and(|(t, b)| t.pid != b.pid),
            "each server's own processes"
        );
    }
}

#[test]
fn the_intervals_follow_the_runs_grid() {
    // Not the Redis whose commands another test counts.
    let Some(url) = server_url("LOADRIG_REDIS_OPEN_URL") else {
        return;
    };
    // Readings 150 ms apart are late on a machine whose run queue is long.
    let _cpu = hold(&[Shared::Cpu]);
    // The run starts after the observer is ready, as a run that waits for it would.
    let start = Instant::now() + Duration::from_millis(400);
    let mut observer = Observer::start(
        config(&url, Sessions::All),
        start,
        Duration::from_millis(150),
    )
    .expect("observer starts");
    assert!(observer.wait_ready(Duration::from_secs(30)));
    while Instant::now() < start + Duration::from_millis(700) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let live = observer.new_intervals();
    let o = observer.finish();
    assert!(!live.is_empty() && live.len() <= o.intervals.len());
    assert_eq!(
        o.intervals[..live.len()],
        live[..],
        "the live intervals are the observation's"
    );
    let first = &o.intervals[0];
    assert_eq!(first.index, 0, "the first interval is the run's first");
    assert!(first.start_s >= 0.0, "nothing before the run's start");
    for pair in o.intervals.windows(2) {
        assert!(
            pair[1].index > pair[0].index,
            "{:?}",
            o.intervals
                .iter()
                .map(|i| (i.index, i.start_s, i.end_s))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            pair[1].start_s, pair[0].end_s,
            "each interval begins where the last ended"
        );
    }
}
