//! The `isolation` target option and the classes of lock errors, on real throwaway servers
//! (`scripts/services.sh up postgres mariadb`, then `eval "$(scripts/services.sh env)"`).
//! Two sessions of the library's own targets are interleaved step by step, so each
//! conflict happens by construction, not by timing. Without LOADRIG_PG_URL /
//! LOADRIG_MYSQL_URL the server tests say "skipped".

use std::future::Future;

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use loadrig::targets::mysql::Mysql;
use loadrig::targets::postgres::Postgres;
use loadrig::targets::sqlite::Sqlite;
use loadrig::targets::{Params, Session, Target, TargetUrl};
use loadrig::vocab::{ErrorClass, NativeOp, Op, OpError, SqlOp, ValueKind};

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// The target at `url` with `query` options and workload `params`.
fn target<T: Target>(url: &str, query: &str, params: &Params) -> T {
    let url = if query.is_empty() {
        url.to_string()
    } else {
        format!("{url}?{query}")
    };
    T::from_url(&TargetUrl::parse(&url).expect("url"), params)
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

/// One SQL statement without parameters; `id` numbers it for the statement cache.
async fn sql<S: Session>(s: &mut S, id: usize, query: &str) -> Result<Vec<String>, OpError> {
    let op: NativeOp<ValueKind> = NativeOp::Sql(SqlOp {
        id,
        query: query.to_string(),
        params: Vec::new(),
    });
    let capture = query.starts_with("SELECT") || query.starts_with("SHOW");
    let out = s
        .execute(&Op::Native {
            op: &op,
            args: &[],
            capture,
        })
        .await?;
    Ok(out
        .captured
        .iter()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect())
}

async fn ok<S: Session>(s: &mut S, id: usize, query: &str) -> Vec<String> {
    sql(s, id, query)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e:?}"))
}

async fn op<S: Session>(s: &mut S, op: Op<'_>) {
    s.execute(&op).await.expect("transaction control");
}

/// The level a transaction runs at, as the server names it.
async fn level_in_a_transaction<S: Session>(s: &mut S, show: &str) -> String {
    op(s, Op::Begin).await;
    let level = ok(s, 1, show).await.remove(0);
    op(s, Op::Rollback).await;
    level
}

fn levels<T: Target>(url: &str, show: &str, default: &str, names: [&str; 3]) {
    let cases = [
        ("", default),
        ("isolation=serializable", names[0]),
        ("isolation=repeatable-read", names[1]),
        ("isolation=read-committed", names[2]),
    ];
    for (query, expected) in cases {
        let t: T = target(url, query, &Params::new());
        block_on(async {
            let mut s = t.connect().await.expect("connect");
            assert_eq!(
                level_in_a_transaction(&mut s, show).await,
                expected,
                "{query}"
            );
        });
    }
    // The same option as a workload parameter.
    let params = Params::from([("isolation".to_string(), "serializable".into())]);
    let t: T = target(url, "", &params);
    block_on(async {
        let mut s = t.connect().await.expect("connect");
        assert_eq!(level_in_a_transaction(&mut s, show).await, names[0]);
    });
}

#[test]
fn postgres_transactions_begin_at_the_isolation_asked_for() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    levels::<Postgres>(
        &url,
        "SHOW transaction_isolation",
        "read committed",
        ["serializable", "repeatable read", "read committed"],
    );
}

#[test]
fn mariadb_sessions_run_at_the_isolation_asked_for_even_after_change_user() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    // MariaDB 10.11 names it tx_isolation (transaction_isolation came in 11.1).
    let show = "SELECT @@tx_isolation";
    levels::<Mysql>(
        &url,
        show,
        "REPEATABLE-READ",
        ["SERIALIZABLE", "REPEATABLE-READ", "READ-COMMITTED"],
    );
    let t: Mysql = target(&url, "isolation=read-committed", &Params::new());
    block_on(async {
        let mut s = t.connect().await.expect("connect");
        s.authenticate().await.expect("change user");
        assert_eq!(level_in_a_transaction(&mut s, show).await, "READ-COMMITTED");
        // Outside a transaction too: the session's level, not only BEGIN's.
        assert_eq!(ok(&mut s, 1, show).await, ["READ-COMMITTED"]);
    });
}

/// Two rows, ids 0 and 1, in a fresh `loadrig_iso_rows`.
async fn two_rows<S: Session>(s: &mut S) {
    ok(s, 10, "DROP TABLE IF EXISTS loadrig_iso_rows").await;
    ok(
        s,
        11,
        "CREATE TABLE loadrig_iso_rows (id INT PRIMARY KEY, n INT NOT NULL)",
    )
    .await;
    ok(s, 12, "INSERT INTO loadrig_iso_rows VALUES (0, 0), (1, 0)").await;
}

const BUMP_0: &str = "UPDATE loadrig_iso_rows SET n = n + 1 WHERE id = 0";
const BUMP_1: &str = "UPDATE loadrig_iso_rows SET n = n + 1 WHERE id = 1";

/// The second update of a crossing pair; the victim rolls back at once, so the survivor's
/// wait ends and it commits.
async fn cross<S: Session>(s: &mut S, id: usize, query: &str) -> Result<Vec<String>, OpError> {
    let r = sql(s, id, query).await;
    let end = if r.is_ok() { Op::Commit } else { Op::Rollback };
    op(s, end).await;
    r
}

/// Each session locks one row, then wants the other's: the server breaks the cycle by
/// failing one of them, which must be class deadlock; the other commits.
async fn deadlock<T: Target>(t: &T) {
    let (mut a, mut b) = (t.connect().await.unwrap(), t.connect().await.unwrap());
    two_rows(&mut a).await;
    op(&mut a, Op::Begin).await;
    op(&mut b, Op::Begin).await;
    ok(&mut a, 20, BUMP_0).await;
    ok(&mut b, 21, BUMP_1).await;
    let (ra, rb) = tokio::join!(cross(&mut a, 21, BUMP_1), cross(&mut b, 20, BUMP_0));
    let failed: Vec<&OpError> = [&ra, &rb]
        .into_iter()
        .filter_map(|r| r.as_ref().err())
        .collect();
    assert_eq!(failed.len(), 1, "exactly one victim: {ra:?} {rb:?}");
    assert_eq!(failed[0].class, ErrorClass::Deadlock, "{:?}", failed[0]);
    let sum = ok(&mut a, 22, "SELECT SUM(n) FROM loadrig_iso_rows").await;
    assert_eq!(
        sum,
        ["2"],
        "the survivor's two updates, none of the victim's"
    );
    ok(&mut a, 10, "DROP TABLE IF EXISTS loadrig_iso_rows").await;
}

#[test]
fn a_postgres_deadlock_is_class_deadlock() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    block_on(deadlock(&target::<Postgres>(&url, "", &Params::new())));
}

#[test]
fn a_mariadb_deadlock_is_class_deadlock() {
    let Some(url) = server_url("LOADRIG_MYSQL_URL") else {
        return;
    };
    let _db = hold(&[Shared::Mariadb]);
    block_on(deadlock(&target::<Mysql>(&url, "", &Params::new())));
}

/// A reads row 0 (its snapshot), B updates row 0 and commits, then A updates row 0: under
/// repeatable read PostgreSQL refuses (40001, class serialization); under read committed
/// A updates the new version.
async fn lost_update(t: &Postgres) -> Result<Vec<String>, OpError> {
    let (mut a, mut b) = (t.connect().await.unwrap(), t.connect().await.unwrap());
    two_rows(&mut a).await;
    op(&mut a, Op::Begin).await;
    ok(&mut a, 30, "SELECT n FROM loadrig_iso_rows WHERE id = 0").await;
    ok(&mut b, 20, BUMP_0).await;
    let r = sql(&mut a, 20, BUMP_0).await;
    op(&mut a, Op::Rollback).await;
    ok(&mut a, 10, "DROP TABLE IF EXISTS loadrig_iso_rows").await;
    r
}

#[test]
fn a_postgres_serialization_failure_is_class_serialization() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let _db = hold(&[Shared::Postgres]);
    let strict = target::<Postgres>(&url, "isolation=repeatable-read", &Params::new());
    let e = block_on(lost_update(&strict)).expect_err("a serialization failure");
    assert_eq!(e.class, ErrorClass::Serialization, "{e:?}");
    let loose = target::<Postgres>(&url, "isolation=read-committed", &Params::new());
    block_on(lost_update(&loose)).expect("read committed updates the new version");
}

/// A holds row 0; B, with a short lock wait limit, waits for it and gives up.
async fn lock_wait<T: Target>(t: &T, limit: &str) -> OpError {
    let (mut a, mut b) = (t.connect().await.unwrap(), t.connect().await.unwrap());
    two_rows(&mut a).await;
    op(&mut a, Op::Begin).await;
    ok(&mut a, 20, BUMP_0).await;
    ok(&mut b, 40, limit).await;
    let e = sql(&mut b, 20, BUMP_0)
        .await
        .expect_err("the lock wait times out");
    op(&mut a, Op::Rollback).await;
    ok(&mut a, 10, "DROP TABLE IF EXISTS loadrig_iso_rows").await;
    e
}

#[test]
fn lock_waits_that_time_out_are_class_timeout() {
    if let Some(url) = server_url("LOADRIG_PG_URL") {
        let _db = hold(&[Shared::Postgres]);
        let t = target::<Postgres>(&url, "", &Params::new());
        // 55P03 lock_not_available
        let e = block_on(lock_wait(&t, "SET lock_timeout = '20ms'"));
        assert_eq!(e.class, ErrorClass::Timeout, "{e:?}");
    }
    if let Some(url) = server_url("LOADRIG_MYSQL_URL") {
        let _db = hold(&[Shared::Mariadb]);
        let t = target::<Mysql>(&url, "", &Params::new());
        // 1205 lock wait timeout exceeded (the shortest wait InnoDB takes is 1 s)
        let e = block_on(lock_wait(&t, "SET SESSION innodb_lock_wait_timeout = 1"));
        assert_eq!(e.class, ErrorClass::Timeout, "{e:?}");
    }
}

#[test]
fn sqlite_accepts_serializable_and_refuses_weaker_levels() {
    let d = Dir::new();
    let db = format!("sqlite://{}", d.join("x.db").display());
    let _: Sqlite = target(&db, "isolation=serializable", &Params::new());
    for level in ["read-committed", "repeatable-read"] {
        let (_, err) = d.code(
            2,
            &[
                "run",
                "session-store",
                "--ops",
                "1",
                "--target",
                &format!("{db}?isolation={level}"),
            ],
        );
        assert!(err.contains("no weaker isolation"), "{err}");
        assert!(err.contains("serializes writers"), "{err}");
    }
    assert!(!d.join("x.db").exists(), "refused before opening the file");
}

#[test]
fn an_unknown_isolation_exits_2_naming_the_three() {
    let d = Dir::new();
    let db = format!("sqlite://{}", d.join("x.db").display());
    for target in [
        format!("{db}?isolation=snapshot"),
        "postgres://u:p@127.0.0.1:1/db?isolation=read-uncommitted".to_string(),
        "mysql://u:p@127.0.0.1:1/db?isolation=SERIALIZABLE".to_string(),
    ] {
        let (_, err) = d.code(
            2,
            &["run", "session-store", "--ops", "1", "--target", &target],
        );
        assert!(err.contains("unknown isolation level"), "{err}");
        assert!(
            err.contains("serializable, repeatable-read or read-committed"),
            "{err}"
        );
    }
}
