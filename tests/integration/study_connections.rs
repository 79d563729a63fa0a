//! `loadrig study connections` (seed 000) end to end on every backend the machine offers (the
//! throwaway servers of scripts/services.sh, required under LOADRIG_REQUIRE_ALL=1): every row
//! in the table, every cell recomputed from the run file it names, the derived cells from the
//! cells they come from, the report in headless Chromium with one plot per operation, a
//! backend with a wrong password failing alone, and bad input exiting 2 before anything
//! runs. Nothing here asserts a timing.

use crate::common::browser;
use crate::common::study;

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use browser::{check_page, Browser};
use loadrig::study::BackendRow;
use study::{record, row, rows};

/// Row name, the variable its URL comes from (none: embedded), whether it re-authenticates.
const ROWS: [(&str, Option<&str>, bool); 8] = [
    ("SQLite", None, false),
    ("PostgreSQL scram-sha-256", Some("LOADRIG_PG_URL"), false),
    (
        "PostgreSQL scram-sha-256 uncached",
        Some("LOADRIG_PG_URL"),
        false,
    ),
    ("PostgreSQL trust", Some("LOADRIG_PG_TRUST_URL"), false),
    ("MariaDB password", Some("LOADRIG_MYSQL_URL"), true),
    ("Redis AUTH", Some("LOADRIG_REDIS_URL"), true),
    ("Redis no AUTH", Some("LOADRIG_REDIS_OPEN_URL"), false),
    ("OpenLDAP simple bind", Some("LOADRIG_LDAP_URL"), true),
];

const MEASURES: [&str; 6] = [
    "connect/s",
    "authenticate/s",
    "create/s",
    "fetch/s",
    "fresh fetch/s",
    "handshake",
];

/// Every cell that names a run holds that run's throughput, and its interval counts are
/// the run's full intervals.
fn check_cells_against_runs(d: &Dir, dir: &str, r: &BackendRow) {
    for (k, cell) in r.cells.iter().enumerate() {
        let Some(run) = &cell.run else { continue };
        assert!(
            r.backend.runs.contains(run),
            "{run} is one of the row's runs"
        );
        let file = loadrig::result::read(&d.join(dir).join(run)).expect("run file");
        assert_eq!(file.operations.len(), 1, "{run}: one operation per run");
        let op = &file.operations[0];
        assert_eq!(
            cell.value,
            Some(op.throughput_per_s),
            "{}: {run}",
            MEASURES[k]
        );
        let sample = r
            .samples
            .iter()
            .find(|s| &s.run == run)
            .expect("interval counts of every run");
        assert_eq!(sample.measure, MEASURES[k]);
        let counts: Vec<u64> = loadrig::analysis::full_intervals(&file)
            .iter()
            .map(|i| i.ops[0].ok)
            .collect();
        assert_eq!(sample.counts, counts, "{run}");
        assert_eq!(counts.len(), 3, "{run}: --quick takes 3 intervals");
    }
}

#[test]
fn connections_quick_runs_every_backend_and_its_cells_come_from_the_run_files() {
    let present: Vec<bool> = ROWS
        .iter()
        .map(|(_, var, _)| var.is_none_or(|v| server_url(v).is_some()))
        .collect();
    let _servers = hold(&[
        Shared::Postgres,
        Shared::Mariadb,
        Shared::Redis(0),
        Shared::SlapdAlone,
    ]);
    let d = Dir::new();
    let out = d.ok(&["study", "connections", "--quick", "-o", "cs"]);
    for (name, _, _) in ROWS {
        assert!(out.contains(name), "{name} in the printed table:\n{out}");
    }
    for m in MEASURES {
        assert!(out.contains(m), "{m} in the printed table");
    }
    let s = record(&d, "cs");
    assert_eq!(s.schema_version, 2);
    assert_eq!(s.sizes["samples"], 3);
    assert_eq!(rows(&s).len(), ROWS.len());
    for ((name, _, reauth), present) in ROWS.iter().zip(&present) {
        let r = row(&s, name);
        if !present {
            assert_eq!(r.backend.note.as_deref(), Some("not run: no URL"));
            continue;
        }
        assert_eq!(
            r.backend.state.words(),
            "ran",
            "{name}: {:?}",
            r.backend.note
        );
        check_cells_against_runs(&d, "cs", r);
        // Every operation ran; authenticate only where the protocol can do it again.
        let measured: Vec<bool> = r.cells.iter().map(|c| c.run.is_some()).collect();
        assert_eq!(measured, [true, *reauth, true, true, true, false], "{name}");
        assert_eq!(r.backend.runs.len(), 4 + usize::from(*reauth), "{name}");
        let v = |k: usize| r.cells[k].value.unwrap();
        let share = 100.0 * (1.0 - v(4) / v(3)).max(0.0);
        assert!((v(5) - share).abs() < 1e-9, "{name}: handshake share");
        if !reauth && !name.starts_with("PostgreSQL scram-sha-256") {
            let note = r.cells[1].note.as_deref().unwrap_or_default();
            assert!(note.starts_with("not applicable: "), "{name}: {note}");
        }
    }
    // PostgreSQL's authentication is derived from connect with SCRAM against with trust.
    // Each SCRAM row against trust: keys cached (loadrig's client) and derived on every
    // connect (scram_cache=off, as libpq and JDBC do).
    if present[1] && present[3] {
        let trust = row(&s, ROWS[3].0).cells[0].value.unwrap();
        for k in [1, 2] {
            let scram = row(&s, ROWS[k].0).cells[0].value.unwrap();
            let auth = &row(&s, ROWS[k].0).cells[1];
            assert!(
                auth.note.as_deref().unwrap().starts_with("derived"),
                "{auth:?}"
            );
            match auth.value {
                Some(v) => assert!((v - 1.0 / (1.0 / scram - 1.0 / trust)).abs() < 1e-6),
                None => assert!(scram >= trust),
            }
        }
        // The uncached row pays the 4096-round PBKDF2 on the client at every connect.
        let uncached = row(&s, ROWS[2].0);
        let runs = &uncached.backend.runs;
        assert!(
            runs.iter().any(|r| r.starts_with("runs/pg-uncached-")),
            "{runs:?}"
        );
    }
    // The fetches read the records loaded for them: 100 under --quick, each found.
    let fetch = loadrig::result::read(&d.join("cs/runs/sqlite-fetch.json")).unwrap();
    assert_eq!(fetch.data_load.as_ref().map(|l| l.records), Some(100));
    assert_eq!(fetch.operations[0].rows, fetch.operations[0].ok);

    let page = std::fs::read_to_string(d.join("cs/report.html")).unwrap();
    // One plot per operation that some backend measured: connect, create, fetch and the
    // fresh fetch always (SQLite), authenticate when a backend that re-authenticates ran.
    let reauth_ran = ROWS.iter().zip(&present).any(|((_, _, re), p)| *re && *p);
    let plots = 4 + usize::from(reauth_ran);
    assert_eq!(page.matches("<svg").count(), plots);
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &d.join("cs/report.html"), plots, 1);
    for (name, _, _) in ROWS {
        assert!(text.contains(name), "{name} in the report");
    }
}

#[test]
fn a_wrong_redis_password_fails_that_row_alone_with_class_auth() {
    let Some(url) = server_url("LOADRIG_REDIS_URL") else {
        return;
    };
    // redis://:PASSWORD@HOST...: the same server, a wrong password.
    let host = url.split_once('@').unwrap().1;
    let wrong = format!("redis://:wrong-pw@{host}");
    let d = Dir::new();
    let out = d.ok(&[
        "study",
        "connections",
        "--quick",
        "--only",
        "sqlite,redis",
        "--target",
        &wrong,
        "-o",
        "cs",
    ]);
    assert!(out.contains("failed:auth"), "{out}");
    assert!(
        !out.contains("wrong-pw"),
        "the password is never shown:\n{out}"
    );
    let s = record(&d, "cs");
    let redis = row(&s, "Redis AUTH");
    assert_eq!(redis.backend.state.words(), "failed");
    assert_eq!(redis.backend.error_class.map(|c| c.name()), Some("auth"));
    assert!(!redis.cells.is_empty());
    assert!(redis.cells.iter().all(|c| c.value.is_none()));
    let sqlite = row(&s, "SQLite");
    assert_eq!(sqlite.backend.state.words(), "ran");
    check_cells_against_runs(&d, "cs", sqlite);
    assert_eq!(
        row(&s, "PostgreSQL trust").backend.note.as_deref(),
        Some("not run: not chosen (--only)")
    );
    let json = std::fs::read_to_string(d.join("cs/study.json")).unwrap();
    assert!(!json.contains("wrong-pw"), "nor in the study file");
}

#[test]
fn bad_input_exits_2_before_anything_runs() {
    let d = Dir::new();
    for (args, says) in [
        (vec!["--target", "http://127.0.0.1:1"], "cannot use http://"),
        (vec!["--set", "samples=0"], "samples=0"),
        (vec!["--set", "interval=5ms"], "interval=5ms"),
        (vec!["--set", "interval=soon"], "not a duration"),
        (vec!["--set", "records_max=10"], "no such setting"),
        (vec!["--only", "tape"], "--only tape"),
    ] {
        let mut full = vec!["study", "connections", "--quick", "-o", "x"];
        full.extend(args);
        let (_, err) = d.code(2, &full);
        assert!(err.contains(says), "{full:?}: {err}");
        assert!(
            !d.join("x").exists(),
            "{full:?}: nothing is written for bad input"
        );
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_study_with_what_finished_marked_interrupted() {
    let d = Dir::new();
    let bin = assert_cmd::cargo::cargo_bin("loadrig");
    let child = std::process::Command::new(bin)
        .current_dir(d.path())
        .args([
            "study",
            "connections",
            "--only",
            "sqlite",
            "--set",
            "samples=1000",
            "--set",
            "interval=100ms",
            "-o",
            "cs",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first run (connect, 100 s) is under way once the study's folder holds its workload.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !d.join("cs/connections.toml").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("INTERRUPTED"), "{text}");
    let s = record(&d, "cs");
    assert_eq!(s.status.as_str(), "interrupted");
    let sqlite = row(&s, "SQLite");
    assert_eq!(sqlite.backend.state.words(), "interrupted");
    assert_eq!(sqlite.backend.runs, ["runs/sqlite-connect.json"]);
    let run = loadrig::result::read(&d.join("cs/runs/sqlite-connect.json")).unwrap();
    assert_eq!(run.status.name(), "interrupted");
    assert!(
        run.total.ok > 0,
        "the interrupted run still counts what it did"
    );
    assert!(d.join("cs/report.html").exists());
}
