//! `loadrig study`: the session-stores study end to end on every backend the machine offers
//! (the throwaway servers of scripts/services.sh, required under LOADRIG_REQUIRE_ALL=1), its
//! table checked against the run files it names, its report in headless Chromium, a backend
//! with a wrong password failing alone, `--list`, and bad input exiting 2 before anything
//! runs. Nothing here asserts a timing.

use crate::common::browser;
use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use browser::{check_page, Browser};
use serde_json::Value;

const COLUMNS: [&str; 13] = [
    "FS",
    "FS2 no_sync",
    "FS2 sync",
    "Dbm",
    "SQLite",
    "mysql",
    "mysql2",
    "pg",
    "pg2",
    "Redis",
    "FS noindex",
    "FS2 noindex",
    "memcached",
];

fn study_json(d: &Dir, dir: &str) -> Value {
    let text = std::fs::read_to_string(d.join(dir).join("study.json")).expect("study.json");
    serde_json::from_str(&text).expect("json")
}

fn column<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["table"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("column {name} missing"))
}

#[test]
fn session_stores_quick_runs_every_backend_and_its_cells_come_from_the_run_files() {
    let servers: Vec<(&str, Option<String>)> = [
        ("mysql", "LOADRIG_MYSQL_URL"),
        ("pg", "LOADRIG_PG_URL"),
        ("Redis", "LOADRIG_REDIS_URL"),
        ("memcached", "LOADRIG_MEMCACHED_URL"),
    ]
    .into_iter()
    .map(|(c, v)| (c, server_url(v)))
    .collect();
    let _servers = hold(&[
        Shared::Postgres,
        Shared::Mariadb,
        Shared::Redis(0),
        Shared::Memcached,
    ]);
    let d = Dir::new();
    let out = d.ok(&["study", "session-stores", "--quick", "-o", "st"]);
    for name in COLUMNS {
        assert!(out.contains(name), "{name} in the printed table:\n{out}");
    }
    let s = study_json(&d, "st");
    assert_eq!(s["status"], "complete");
    assert_eq!(s["schema_version"], 2);
    assert_eq!(s["table"]["kind"], "growth");
    assert_eq!(
        s["table"]["columns"].as_array().unwrap().len(),
        COLUMNS.len()
    );
    // The file reads back as the typed study record (docs/schema/study.schema.json).
    let typed: loadrig::study::StudyRecord = serde_json::from_value(s.clone()).unwrap();
    let loadrig::study::StudyTable::Growth(table) = &typed.table else {
        panic!("a growth table")
    };
    assert_eq!(table.columns.len(), COLUMNS.len());
    assert_eq!(table.rows, (0..10).map(|k| 100 * k).collect::<Vec<u64>>());
    let mut ran = Vec::new();
    for name in COLUMNS {
        let c = column(&s, name);
        let server = servers.iter().find(|(n, _)| name.starts_with(n));
        match (c["state"].as_str().unwrap(), server) {
            ("ran", _) => ran.push(name),
            ("not_run", Some((_, None))) => {
                assert_eq!(c["note"], "not run: no URL", "{c}");
                continue;
            }
            ("not_run", None) if name == "Dbm" => {
                assert!(c["note"].as_str().unwrap().starts_with("not run: "), "{c}");
                continue;
            }
            // Not root: the unindexed image cannot be mounted (study_unindexed_fs runs it).
            ("not_run", None) if name.ends_with("noindex") => {
                assert_eq!(
                    c["note"], "not run: needs root to mount, or --fs-root",
                    "{c}"
                );
                continue;
            }
            (state, _) => panic!("{name}: {state}: {c}"),
        }
        let cells = c["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 10, "{name}: batches of 100 up to 1000");
        let runs = c["runs"].as_array().unwrap();
        assert!(
            cells.iter().all(|x| runs.contains(&x["run"])),
            "every cell's run is named"
        );
        assert!(
            c["model"]["class"].is_string(),
            "{name}: a class is fitted: {c}"
        );
        assert_eq!(c["upper_bound_per_s"].as_array().unwrap().len(), 2);
        // Recompute the cells from the run files they name.
        for (k, cell) in cells.iter().enumerate().step_by(3) {
            assert_eq!(cell["stored_before"], 100 * k as u64);
            let run = loadrig::result::read(&d.join("st").join(cell["run"].as_str().unwrap()))
                .expect("run file");
            let create = run.operations.iter().find(|o| o.name == "create").unwrap();
            assert_eq!(cell["added"], create.ok, "{name} batch {k}");
            assert_eq!(cell["seconds"].as_f64().unwrap(), run.measured_s);
            let per_1000 = run.measured_s * 1000.0 / create.ok as f64;
            assert!((cell["per_1000_s"].as_f64().unwrap() - per_1000).abs() < 1e-9);
            assert!(
                out.contains(&format!("{per_1000:.3}")),
                "{per_1000:.3} printed"
            );
        }
    }
    for must in ["FS", "FS2 no_sync", "FS2 sync", "SQLite"] {
        assert!(ran.contains(&must), "{must} always runs");
    }
    // The session ids are 32 hex digits: a flat fs store holds one file per id.
    let files = std::fs::read_dir(d.join("st/fs/loadrig_kv"))
        .unwrap()
        .count();
    assert_eq!(files, 1000);

    let page = std::fs::read_to_string(d.join("st/report.html")).unwrap();
    assert_eq!(page.matches("<svg").count(), 1);
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &d.join("st/report.html"), 1, 1);
    for name in COLUMNS {
        assert!(text.contains(name), "{name} in the report");
    }
}

#[test]
fn a_wrong_password_fails_its_backend_alone_with_class_auth() {
    let Some(url) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    // postgres://USER:PASSWORD@HOST...: the same server, a wrong password.
    let (head, host) = url.split_once('@').unwrap();
    let user = head.rsplit_once(':').unwrap().0;
    let wrong = format!("{user}:wrong@{host}");
    let d = Dir::new();
    let out = d.ok(&[
        "study",
        "session-stores",
        "--quick",
        "--only",
        "pg,pg2,sqlite",
        "--set",
        "records_max=300",
        "--target",
        &wrong,
        "-o",
        "st",
    ]);
    assert!(out.contains("failed:auth"), "{out}");
    assert!(
        !out.contains("wrong"),
        "the password is never shown:\n{out}"
    );
    let s = study_json(&d, "st");
    for name in ["pg", "pg2"] {
        let c = column(&s, name);
        assert_eq!(c["state"], "failed", "{c}");
        assert_eq!(c["error_class"], "auth", "{c}");
    }
    // The backend beside them still ran.
    let c = column(&s, "SQLite");
    assert_eq!(c["state"], "ran", "{c}");
    assert_eq!(c["cells"].as_array().unwrap().len(), 3);
}

#[test]
fn only_runs_the_chosen_columns() {
    let d = Dir::new();
    d.ok(&[
        "study",
        "session-stores",
        "--quick",
        "--only",
        "FS,sqlite",
        "--set",
        "records_max=300",
        "-o",
        "st",
    ]);
    let s = study_json(&d, "st");
    assert_eq!(
        s["table"]["columns"].as_array().unwrap().len(),
        COLUMNS.len()
    );
    for name in COLUMNS {
        let c = column(&s, name);
        if name == "FS" || name == "SQLite" {
            assert_eq!(c["state"], "ran", "{c}");
            assert_eq!(c["cells"].as_array().unwrap().len(), 3, "{c}");
        } else {
            assert_eq!(c["state"], "not_run", "{c}");
            assert_eq!(c["note"], "not run: not chosen (--only)", "{c}");
            assert!(c["runs"].as_array().unwrap().is_empty(), "{c}");
        }
    }
    let (_, err) = d.code(
        2,
        &["study", "session-stores", "--only", "FS,tape", "-o", "x"],
    );
    assert!(err.contains("--only tape"), "{err}");
    assert!(err.contains("FS2 no_sync (fs2)"), "{err}");
    assert!(!d.join("x").exists(), "nothing is written for bad input");
}

#[test]
fn list_names_the_studies() {
    let d = Dir::new();
    let out = d.ok(&["study", "--list"]);
    assert!(out.contains("session-stores"), "{out}");
    assert!(out.contains("connections"), "{out}");
    assert!(out.contains("needs:"), "{out}");
}

#[test]
fn bad_input_exits_2_before_anything_runs() {
    let d = Dir::new();
    for (args, says) in [
        (vec!["study", "no-such-study", "-o", "x"], "unknown study"),
        (
            vec![
                "study",
                "session-stores",
                "--target",
                "http://127.0.0.1:1",
                "-o",
                "x",
            ],
            "cannot use http://",
        ),
        (
            vec![
                "study",
                "session-stores",
                "--set",
                "records_max=0",
                "-o",
                "x",
            ],
            "records_max=0",
        ),
        (
            vec!["study", "session-stores", "--set", "batch=lots", "-o", "x"],
            "batch=lots",
        ),
        (
            vec![
                "study",
                "session-stores",
                "--set",
                "batch=500",
                "--set",
                "records_max=100",
                "-o",
                "x",
            ],
            "above records_max",
        ),
        (
            vec!["study", "session-stores", "--set", "clients=4", "-o", "x"],
            "no such setting",
        ),
        (vec!["study"], "<NAME>"),
    ] {
        let (_, err) = d.code(2, &args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!d.join("x").exists(), "nothing written");
}
