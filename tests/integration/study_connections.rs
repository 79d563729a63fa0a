//! `loadrig study connections` (seed 000) end to end on every backend the machine offers (the
//! throwaway servers of scripts/services.sh, required under LOADRIG_REQUIRE_ALL=1): every row
//! (each authentication method, with and without TLS) in the table, every cell recomputed
//! from the run file it names, the derived cells from the cells they come from, every
//! connection of a TLS row with its TLS handshake and of a login row with its login, the
//! report in headless Chromium with one plot per operation, a backend with a wrong password
//! failing alone, and bad input exiting 2 before anything runs. Nothing here asserts a
//! timing (the one comparison is of CPU time per connect, SCRAM's key derivation against
//! its cache).

use crate::common::browser;
use crate::common::study;

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use browser::{check_page, Browser};
use loadrig::study::BackendRow;
use study::{record, row, rows};

/// Which runs a row makes: every one, all but create (another login or TLS on a backend of
/// a row above), or those and reading without loading (anonymous LDAP).
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    All,
    Connection,
    ReadOnly,
}
use Kind::{All, Connection, ReadOnly};

/// Row name, the variable its URL comes from (none: embedded), whether it re-authenticates,
/// its kind, whether it connects over TLS.
const ROWS: [(&str, Option<&str>, bool, Kind, bool); 20] = [
    ("SQLite", None, false, All, false),
    (
        "PostgreSQL scram-sha-256",
        Some("LOADRIG_PG_URL"),
        false,
        All,
        false,
    ),
    (
        "PostgreSQL scram-sha-256 uncached",
        Some("LOADRIG_PG_URL"),
        false,
        All,
        false,
    ),
    (
        "PostgreSQL scram-sha-256 TLS",
        Some("LOADRIG_PG_URL"),
        false,
        Connection,
        true,
    ),
    (
        "PostgreSQL md5",
        Some("LOADRIG_PG_MD5_URL"),
        false,
        Connection,
        false,
    ),
    (
        "PostgreSQL md5 TLS",
        Some("LOADRIG_PG_MD5_URL"),
        false,
        Connection,
        true,
    ),
    (
        "PostgreSQL trust",
        Some("LOADRIG_PG_TRUST_URL"),
        false,
        All,
        false,
    ),
    (
        "PostgreSQL trust TLS",
        Some("LOADRIG_PG_TRUST_URL"),
        false,
        Connection,
        true,
    ),
    (
        "MariaDB native password",
        Some("LOADRIG_MYSQL_URL"),
        true,
        All,
        false,
    ),
    (
        "MariaDB native password TLS",
        Some("LOADRIG_MYSQL_URL"),
        true,
        Connection,
        true,
    ),
    (
        "MariaDB ed25519",
        Some("LOADRIG_MYSQL_ED25519_URL"),
        true,
        Connection,
        false,
    ),
    (
        "MariaDB ed25519 TLS",
        Some("LOADRIG_MYSQL_ED25519_URL"),
        true,
        Connection,
        true,
    ),
    ("Redis AUTH", Some("LOADRIG_REDIS_URL"), true, All, false),
    (
        "Redis AUTH TLS",
        Some("LOADRIG_REDIS_TLS_URL"),
        true,
        Connection,
        true,
    ),
    (
        "Redis no AUTH",
        Some("LOADRIG_REDIS_OPEN_URL"),
        false,
        All,
        false,
    ),
    (
        "Redis no AUTH TLS",
        Some("LOADRIG_REDIS_OPEN_TLS_URL"),
        false,
        Connection,
        true,
    ),
    (
        "OpenLDAP simple bind",
        Some("LOADRIG_LDAP_URL"),
        true,
        All,
        false,
    ),
    (
        "OpenLDAP simple StartTLS",
        Some("LOADRIG_LDAP_URL"),
        true,
        Connection,
        true,
    ),
    (
        "OpenLDAP anonymous",
        Some("LOADRIG_LDAP_URL"),
        true,
        ReadOnly,
        false,
    ),
    (
        "OpenLDAP anonymous StartTLS",
        Some("LOADRIG_LDAP_URL"),
        true,
        ReadOnly,
        true,
    ),
];

const MEASURES: [&str; 9] = [
    "connect/s",
    "authenticate/s",
    "create/s",
    "fetch/s",
    "fresh fetch/s",
    "handshake",
    "first query",
    "client CPU/connect",
    "server CPU/connect",
];

/// The intervals the test's runs take (`--quick` with 2 intervals of 100 ms).
const SAMPLES: usize = 2;

/// The rows the test runs (within the test command's time): every method and a TLS row of
/// each server, and what the derived cells need; the others are printed "not chosen".
const ONLY: &str = "sqlite,pg,pg-uncached,pg-md5-tls,pg-trust,mysql,mysql-ed25519-tls,redis,redis-tls,ldap,ldap-anon-tls";

/// (CPU seconds, operations) over a run's full intervals: of the client threads, or of the
/// server's processes.
fn cpu_of(file: &loadrig::result::RunResult, server: bool) -> (f64, u64) {
    let (mut s, mut ops) = (0.0, 0);
    for i in loadrig::analysis::full_intervals(file) {
        let cpu = if server {
            let Some(p) = i.server.as_ref().and_then(|s| s.target.processes.as_ref()) else {
                continue;
            };
            p.user_s + p.system_s
        } else {
            let Some(rig) = &i.rig else { continue };
            let share: f64 = rig
                .threads
                .iter()
                .filter(|t| t.name.starts_with("clients-"))
                .map(|t| t.cpu_share)
                .sum();
            share * (i.end_s - i.start_s)
        };
        s += cpu;
        ops += i.ok;
    }
    (s, ops)
}

/// Every cell that names a run holds what that run's file gives (its throughput, or the CPU
/// per connect of the connect run), and its interval counts are the run's full intervals.
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
        if k >= 7 {
            assert!(run.ends_with("-connect.json"), "{run}");
            let (cpu, ops) = cpu_of(&file, k == 8);
            let want = cpu * 1e6 / ops as f64;
            assert!(
                (cell.value.unwrap() - want).abs() < 1e-6,
                "{}: {run}",
                MEASURES[k]
            );
            continue;
        }
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
        assert_eq!(counts.len(), SAMPLES, "{run}: the intervals asked for");
    }
}

/// The connections of a row's connect run: every one with a TLS handshake on a TLS row and
/// none on a plain one, and a login phase on each unless the row has nothing to log in
/// with; the first query is the fresh fetch's mean less the connect's.
fn check_connections(d: &Dir, dir: &str, r: &BackendRow, tls: bool) {
    let name = &r.backend.name;
    let file = |run: &str| loadrig::result::read(&d.join(dir).join(run)).expect("run file");
    let connect = file(r.cells[0].run.as_ref().unwrap());
    let op = &connect.operations[0];
    assert_eq!(op.errors, 0, "{name}: every connect succeeded");
    let phases = connect.connect.as_ref().and_then(|c| c.phases.as_ref());
    let phases = phases.unwrap_or_else(|| panic!("{name}: connect phases"));
    assert!(phases.tcp.count > op.ok, "{name}: each connect timed");
    let tls_count = phases.tls.as_ref().map(|t| t.count);
    assert_eq!(tls_count, tls.then_some(phases.tcp.count), "{name}: TLS");
    let logs_in = !(name.contains("anonymous") || name.starts_with("Redis no AUTH"));
    let auth_count = phases.auth.as_ref().map(|a| a.count);
    assert_eq!(
        auth_count,
        logs_in.then_some(phases.tcp.count),
        "{name}: login"
    );
    let fresh = file(r.cells[4].run.as_ref().unwrap());
    let first = (fresh.operations[0].latency.mean_ns - op.latency.mean_ns) / 1e3;
    assert!(
        (r.cells[6].value.unwrap() - first).abs() < 1e-6,
        "{name}: first query"
    );
}

/// Whether the test runs the row (its short name in [`ONLY`]).
fn chosen(name: &str) -> bool {
    let slug = match name {
        "SQLite" => "sqlite",
        "PostgreSQL scram-sha-256" => "pg",
        "PostgreSQL scram-sha-256 uncached" => "pg-uncached",
        "PostgreSQL md5 TLS" => "pg-md5-tls",
        "PostgreSQL trust" => "pg-trust",
        "MariaDB native password" => "mysql",
        "MariaDB ed25519 TLS" => "mysql-ed25519-tls",
        "Redis AUTH" => "redis",
        "Redis AUTH TLS" => "redis-tls",
        "OpenLDAP simple bind" => "ldap",
        "OpenLDAP anonymous StartTLS" => "ldap-anon-tls",
        _ => return false,
    };
    ONLY.split(',').any(|o| o == slug)
}

#[test]
fn connections_quick_runs_every_backend_and_its_cells_come_from_the_run_files() {
    let present: Vec<bool> = ROWS
        .iter()
        .map(|(name, var, _, _, tls)| {
            chosen(name)
                && var.is_none_or(|v| server_url(v).is_some())
                && (!tls || server_url("LOADRIG_CA_FILE").is_some())
        })
        .collect();
    let _servers = hold(&[
        Shared::Postgres,
        Shared::Mariadb,
        Shared::Redis(0),
        Shared::SlapdAlone,
    ]);
    let d = Dir::new();
    let out = d.ok(&[
        "study",
        "connections",
        "--quick",
        "--set",
        "samples=2",
        "--set",
        "interval=100ms",
        "--only",
        ONLY,
        "-o",
        "cs",
    ]);
    for (name, ..) in ROWS {
        assert!(out.contains(name), "{name} in the printed table:\n{out}");
    }
    for m in MEASURES {
        assert!(out.contains(m), "{m} in the printed table");
    }
    let s = record(&d, "cs");
    assert_eq!(s.schema_version, 2);
    assert_eq!(s.sizes["samples"], SAMPLES as u64);
    assert_eq!(rows(&s).len(), ROWS.len());
    for ((name, _, reauth, kind, tls), present) in ROWS.iter().zip(&present) {
        let r = row(&s, name);
        if !chosen(name) {
            let note = r.backend.note.as_deref();
            assert_eq!(note, Some("not run: not chosen (--only)"), "{name}");
            continue;
        }
        if !present {
            assert!(
                r.backend
                    .note
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("not run: no "),
                "{name}: {:?}",
                r.backend.note
            );
            continue;
        }
        assert_eq!(
            r.backend.state.words(),
            "ran",
            "{name}: {:?}",
            r.backend.note
        );
        check_cells_against_runs(&d, "cs", r);
        // Every operation ran; authenticate only where the protocol can do it again, create
        // on a backend's own row; the CPU cells come from the connect run, the server's
        // where there is a server.
        let measured: Vec<bool> = r.cells.iter().map(|c| c.run.is_some()).collect();
        let server = *name != "SQLite";
        assert_eq!(
            measured,
            [
                true,
                *reauth,
                *kind == All,
                true,
                true,
                false,
                false,
                true,
                server
            ],
            "{name}"
        );
        let runs = 3 + usize::from(*reauth) + usize::from(*kind == All);
        assert_eq!(r.backend.runs.len(), runs, "{name}");
        let v = |k: usize| r.cells[k].value.unwrap();
        let share = 100.0 * (1.0 - v(4) / v(3)).max(0.0);
        assert!((v(5) - share).abs() < 1e-9, "{name}: handshake share");
        if server {
            check_connections(&d, "cs", r, *tls);
        }
        if !reauth
            && !name.starts_with("PostgreSQL scram-sha-256")
            && !name.starts_with("PostgreSQL md5")
        {
            let note = r.cells[1].note.as_deref().unwrap_or_default();
            assert!(note.starts_with("not applicable: "), "{name}: {note}");
        }
    }
    // The anonymous rows read what the simple-bind rows loaded, and found it.
    if present[19] {
        let anon = row(&s, ROWS[19].0);
        let fetch =
            loadrig::result::read(&d.join("cs").join(anon.cells[3].run.as_ref().unwrap())).unwrap();
        let load = fetch.data_load.as_ref();
        assert_eq!(
            load.map(|l| l.skipped),
            Some(true),
            "anonymous loads nothing"
        );
        assert_eq!(fetch.operations[0].rows, fetch.operations[0].ok);
    }
    // PostgreSQL's authentication is derived from connect with a login against with trust
    // (over TLS for a TLS row). Each SCRAM row against trust: keys cached (loadrig's
    // client) and derived on every connect (scram_cache=off, as libpq and JDBC do).
    if present[1] && present[6] {
        for (k, trust) in [(1, 6), (2, 6), (3, 7), (4, 6), (5, 7)] {
            if !present[k] || !present[trust] {
                continue;
            }
            let login = row(&s, ROWS[k].0).cells[0].value.unwrap();
            let trust = row(&s, ROWS[trust].0).cells[0].value.unwrap();
            let auth = &row(&s, ROWS[k].0).cells[1];
            assert!(
                auth.note.as_deref().unwrap().starts_with("derived"),
                "{auth:?}"
            );
            match auth.value {
                Some(v) => assert!((v - 1.0 / (1.0 / login - 1.0 / trust)).abs() < 1e-6),
                None => assert!(login >= trust),
            }
        }
        // The uncached row pays the 4096-round PBKDF2 on the client at every connect: more
        // of the client's CPU per connect than with the keys cached (CPU time, not wall
        // time, so a busy machine does not turn it over).
        let cpu = |k: usize| row(&s, ROWS[k].0).cells[7].value.unwrap();
        assert!(
            cpu(2) > cpu(1),
            "uncached {} against cached {} µs",
            cpu(2),
            cpu(1)
        );
    }
    // The fetches read the records loaded for them: 100 under --quick, each found.
    let fetch = loadrig::result::read(&d.join("cs/runs/sqlite-fetch.json")).unwrap();
    assert_eq!(fetch.data_load.as_ref().map(|l| l.records), Some(100));
    assert_eq!(fetch.operations[0].rows, fetch.operations[0].ok);

    let page = std::fs::read_to_string(d.join("cs/report.html")).unwrap();
    // One plot per operation that some backend measured: connect, create, fetch and the
    // fresh fetch always (SQLite), authenticate when a backend that re-authenticates ran.
    let reauth_ran = ROWS
        .iter()
        .zip(&present)
        .any(|((_, _, re, ..), p)| *re && *p);
    let plots = 4 + usize::from(reauth_ran);
    assert_eq!(page.matches("<svg").count(), plots);
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &d.join("cs/report.html"), plots, 1);
    for (name, ..) in ROWS {
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
        "--set",
        "samples=2",
        "--set",
        "interval=100ms",
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
