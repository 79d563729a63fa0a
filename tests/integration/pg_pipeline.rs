//! PostgreSQL's pipeline with one Sync per written batch (`pipeline_sync=batch`, as
//! pgbench's `\startpipeline` … `\endpipeline`), on the throwaway server: exact counts
//! against the rows the server kept, a batch with a failing statement counted as the
//! protocol defines it (one implicit transaction, the rest skipped after the error), and
//! the option's bad values and the runs that cannot use it refused with exit status 2.

use crate::common::locks::{hold, Shared};
use crate::common::sql::{ints, pg_row};
use crate::common::{server_url, Dir};
use loadrig::vocab::ErrorClass;

/// Inserts of `k{seq}` into `loadrig_pipe`, made empty by setup apart from `taken`.
fn inserts(taken: &[&str]) -> String {
    let mut setup = vec![
        "DROP TABLE IF EXISTS loadrig_pipe".to_string(),
        "CREATE TABLE loadrig_pipe (k TEXT PRIMARY KEY)".to_string(),
    ];
    for k in taken {
        setup.push(format!("INSERT INTO loadrig_pipe VALUES ('{k}')"));
    }
    let setup: Vec<String> = setup.iter().map(|s| format!("{s:?}")).collect();
    format!(
        r#"
name = "pipe-inserts"
setup = [{}]
[[op]]
name = "insert"
sql = {{ query = "INSERT INTO loadrig_pipe VALUES ($1)", params = ["k{{seq}}"] }}
"#,
        setup.join(", ")
    )
}

fn batch_url(url: &str) -> String {
    format!("{url}?pipeline_sync=batch")
}

#[test]
fn batches_of_16_store_exactly_the_operations_counted() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", &inserts(&[]));
    let target = batch_url(&url);
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        &target,
        "--clients",
        "2",
        "--pipeline",
        "16",
        "--ops",
        "1000",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    assert_eq!((r.total.ok, r.total.errors, r.total.rows), (1000, 0, 1000));
    assert!(
        r.target.url.ends_with("?pipeline_sync=batch"),
        "the result names the mode: {}",
        r.target.url
    );
    let row = ints(pg_row(
        &url,
        "SELECT count(*), count(DISTINCT k) FROM loadrig_pipe",
    ));
    assert_eq!(row, vec![1000, 1000], "one row per operation");
    pg_row(&url, "DROP TABLE loadrig_pipe");
}

/// One connection of 4 streams: every batch is the 4 streams' next inserts, `k4t` to
/// `k4t+3` (each stream its own interleaved `{seq}`), and all 4 end together at the
/// batch's ReadyForQuery. `k5` and `k18` exist already, so batches 1 and 4 fail on them:
/// in batch 1, `k4` is rolled back and `k6`, `k7` skipped; in batch 4, `k16`, `k17`
/// rolled back and `k19` skipped. A Sync per operation fails only the two duplicates.
#[test]
fn a_failing_statement_fails_its_whole_batch_and_keeps_no_row_of_it() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", &inserts(&["k5", "k18"]));
    let args = |target: &str| {
        let run = [
            "run",
            "w.toml",
            "--target",
            target,
            "--clients",
            "1",
            "--pipeline",
            "4",
            "--ops",
            "40",
            "-o",
            "r.json",
        ];
        d.ok(&run);
        d.result("r.json")
    };
    let r = args(&batch_url(&url));
    let t = &r.total;
    assert_eq!((t.ok, t.errors), (32, 8), "ok + errors = the 40 issued");
    assert_eq!(t.errors_by_class.get(&ErrorClass::Constraint), Some(&2));
    assert_eq!(t.errors_by_class.get(&ErrorClass::Other), Some(&6));
    let count = |start: &str| {
        t.error_messages
            .iter()
            .filter(|m| m.message.starts_with(start))
            .map(|m| m.count)
            .sum::<u64>()
    };
    assert_eq!(count("rolled back in a pipeline batch that failed"), 3);
    assert_eq!(count("skipped in a pipeline batch that failed"), 3);
    assert_eq!(count("23505 "), 2, "{:?}", t.error_messages);
    let kept = pg_row(
        &url,
        "SELECT count(*), count(*) FILTER (WHERE k IN ('k4','k6','k7','k16','k17','k19')) FROM loadrig_pipe",
    );
    assert_eq!(
        ints(kept),
        vec![34, 0],
        "the 8 good batches and the 2 rows there before"
    );

    let r = args(&url);
    assert_eq!(
        (r.total.ok, r.total.errors),
        (38, 2),
        "a Sync per operation"
    );
    let kept = ints(pg_row(&url, "SELECT count(*) FROM loadrig_pipe"));
    assert_eq!(kept, vec![40]);
    pg_row(&url, "DROP TABLE loadrig_pipe");
}

/// An open loop (`--rate`) goes through the batch driver too, a Sync per batch or per
/// operation: each stream's arrivals, every one stored once.
#[test]
fn an_open_loop_stores_exactly_the_operations_counted() {
    let _db = hold(&[Shared::Postgres]);
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", &inserts(&[]));
    for target in [batch_url(&url), url.clone()] {
        let args = "--rate 4000 --max-in-flight 2 --pipeline 8 --ops 800 -o r.json";
        let mut run = vec!["run", "w.toml", "--target", &target];
        run.extend(args.split(' '));
        d.ok(&run);
        let r = d.result("r.json");
        assert!(r.load.is_open(), "{target}");
        assert_eq!((r.total.ok, r.total.errors, r.total.rows), (800, 0, 800));
        assert!(r.total.service.is_some(), "timed as an open loop");
        let row = ints(pg_row(
            &url,
            "SELECT count(*), count(DISTINCT k) FROM loadrig_pipe",
        ));
        assert_eq!(row, vec![800, 800], "{target}: one row per operation");
    }
    pg_row(&url, "DROP TABLE loadrig_pipe");
}

#[test]
fn a_bad_value_exits_2_with_the_values_allowed() {
    let d = Dir::new();
    d.write("w.toml", &inserts(&[]));
    let target = "postgres://loadrig@127.0.0.1:9/loadrig?pipeline_sync=sometimes";
    let (_, err) = d.code(2, &["run", "w.toml", "--target", target, "--ops", "1"]);
    assert!(
        err.contains("pipeline_sync=sometimes: expected op"),
        "{err}"
    );
    assert!(err.contains("or batch"), "{err}");
    assert!(d.files() == vec!["w.toml".to_string()], "nothing written");
}

/// What the batch driver cannot run, and the targets that do not use it, refuse the mode
/// before anything connects (the port is closed: a connect would fail with status 1).
#[test]
fn runs_that_cannot_sync_per_batch_exit_2_saying_why() {
    let d = Dir::new();
    d.write("w.toml", &inserts(&[]));
    d.write(
        "tx.toml",
        r#"
name = "tx"
[[op]]
name = "pair"
tx = [{ sql = { query = "SELECT 1" } }, { sql = { query = "SELECT 2" } }]
"#,
    );
    let url = "postgres://loadrig@127.0.0.1:9/loadrig?pipeline_sync=batch";
    let tls = format!("{url}&sslmode=require&insecure=true");
    let tokio = format!("{url}&client=tokio-postgres");
    let cases: [(&str, &str, &[&str], &str); 6] = [
        ("w.toml", url, &["--op-timeout", "1s"], "--op-timeout"),
        ("w.toml", url, &["--think-time", "1ms"], "a think time"),
        (
            "w.toml",
            url,
            &[
                "--rate",
                "100",
                "--pipeline",
                "2",
                "--pipeline-refill",
                "all",
            ],
            "an open loop (--rate) writes each arrival when it comes",
        ),
        (
            "tx.toml",
            url,
            &[],
            "operation 'pair' is an operation the batch driver cannot carry",
        ),
        ("w.toml", &tls, &[], "sslmode (TLS)"),
        ("w.toml", &tokio, &[], "client=tokio-postgres"),
    ];
    for (file, target, extra, why) in cases {
        let mut args = vec!["run", file, "--target", target, "--duration", "1s"];
        args.extend_from_slice(extra);
        let (_, err) = d.code(2, &args);
        assert!(err.contains("pipeline_sync=batch"), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
}
