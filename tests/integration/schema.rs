//! The result contract: the committed JSON Schemas match the types, and files of every
//! schema version this build reads (tests/fixtures/vN) still load, validate and feed
//! `report`, `compare` and `export`.

use std::path::{Path, PathBuf};

use crate::common::Dir;
use loadrig::result::{self, sweep};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compare a schema with its committed file; `LOADRIG_BLESS=1` rewrites the file instead.
fn check_schema(schema: schemars::Schema, file: &str) {
    let path = root().join("docs/schema").join(file);
    let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    if std::env::var_os("LOADRIG_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "docs/schema/{file} differs from the types in src/result: if the change is meant, \
         regenerate it with `LOADRIG_BLESS=1 cargo test --test integration schema::` and commit it \
         (and raise SCHEMA_VERSION if a field changed meaning or went away)"
    );
}

#[test]
fn committed_schemas_match_the_types() {
    check_schema(result::run_schema(), "run.schema.json");
    check_schema(sweep::schema(), "sweep.schema.json");
    check_schema(loadrig::study::schema(), "study.schema.json");
    check_schema(loadrig::analysis::ab::schema(), "ab.schema.json");
    check_schema(
        loadrig::analysis::experiment::record::schema(),
        "experiment.schema.json",
    );
}

/// Every fixture file: (path, is a sweep file).
fn fixtures() -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for version in std::fs::read_dir(root().join("tests/fixtures")).unwrap() {
        for entry in std::fs::read_dir(version.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                let sweep = text.contains("\"kind\": \"sweep\"");
                out.push((path, sweep));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 5, "fixtures missing: {out:?}");
    out
}

fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn fixtures_load_and_write_back_the_same_document() {
    for (path, is_sweep) in fixtures() {
        let original = json_of(&path);
        let again = if is_sweep {
            serde_json::to_value(sweep::read(&path).unwrap()).unwrap()
        } else {
            serde_json::to_value(result::read(&path).unwrap()).unwrap()
        };
        assert!(
            again == original,
            "{}: reading and writing changed the document",
            path.display()
        );
    }
}

#[test]
fn fixtures_feed_report_compare_and_export() {
    let d = Dir::new();
    let runs: Vec<PathBuf> = fixtures()
        .into_iter()
        .filter(|f| !f.1)
        .map(|f| f.0)
        .collect();
    for (k, path) in fixtures().iter().map(|f| &f.0).enumerate() {
        let p = path.to_str().unwrap();
        let html = format!("r{k}.html");
        d.ok(&["report", p, "-o", &html]);
        assert!(std::fs::read_to_string(d.join(&html))
            .unwrap()
            .contains("</html>"));
    }
    let base = runs[0].to_str().unwrap();
    for (k, path) in runs.iter().enumerate() {
        let p = path.to_str().unwrap();
        let csv = format!("csv{k}");
        let log = format!("r{k}.hlog");
        d.ok(&["export", p, "--csv", &csv, "--hdr-log", &log]);
        assert!(d.join(&csv).join("operations.csv").exists());
        assert!(d.join(&log).exists());
        let out = d.ok(&["compare", base, p, "--format", "json"]);
        let c: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(c["new"]["status"], "complete", "{out}");
    }
    let names: Vec<&str> = runs.iter().map(|p| p.to_str().unwrap()).collect();
    let mut args = vec!["report"];
    args.extend(&names);
    args.extend(["-o", "all.html"]);
    d.ok(&args);
}

#[test]
fn a_newer_schema_version_names_the_version_it_needs() {
    let d = Dir::new();
    for (path, is_sweep) in fixtures() {
        let mut doc = json_of(&path);
        doc["schema_version"] = 2.into();
        doc["loadrig_version"] = "9.9.9".into();
        // A newer file may hold what this build's types cannot.
        doc["status"] = "resumed".into();
        let name = format!("new-{}", path.file_name().unwrap().to_str().unwrap());
        d.write(&name, &doc.to_string());
        let commands: Vec<Vec<&str>> = if is_sweep {
            vec![vec!["report", &name, "-o", "x.html"]]
        } else {
            vec![
                vec!["report", &name, "-o", "x.html"],
                vec!["compare", &name, &name],
                vec!["export", &name, "--csv", "csv"],
            ]
        };
        for args in commands {
            let (_, err) = d.code(2, &args);
            let what = if is_sweep {
                "sweep file"
            } else {
                "result file"
            };
            assert!(
                err.contains(&format!(
                    "'{name}' is a {what} of schema version 2; this loadrig"
                )) && err.contains("reads schema version 1 and older")
                    && err.contains(
                        "read it with a loadrig that reads schema version 2, such as the one that wrote it (loadrig 9.9.9)"
                    ),
                "{args:?}: {err}"
            );
        }
        assert!(!d.join("x.html").exists() && !d.join("csv").exists());
    }
}

#[test]
fn a_file_that_is_not_a_result_says_so() {
    let d = Dir::new();
    d.write("hello.json", "{\"hello\": 1}");
    d.write("version.json", "{\"schema_version\": 1}");
    for file in ["hello.json", "version.json"] {
        let (_, err) = d.code(2, &["export", file, "--csv", "csv"]);
        assert!(
            err.contains(&format!("'{file}' is not a loadrig result file")),
            "{err}"
        );
    }
    d.write("sweep.json", "{\"kind\": \"sweep\", \"schema_version\": 1}");
    let (_, err) = d.code(2, &["report", "sweep.json", "-o", "s.html"]);
    assert!(
        err.contains("'sweep.json' is not a loadrig sweep file"),
        "{err}"
    );
}

/// Fail unless `new` has the keys and value types of `old` at every level (an array by
/// its first element; null matches anything, since optional values come and go). `new`
/// may have more keys: fields may be added within a schema version (docs/results.md), and
/// the fixtures stay as that version first wrote them.
fn same_shape(old: &serde_json::Value, new: &serde_json::Value, at: &str) {
    use serde_json::Value::*;
    match (old, new) {
        (Null, _) | (_, Null) => {}
        (Object(a), Object(b)) => {
            let missing: Vec<_> = a.keys().filter(|k| !b.contains_key(*k)).collect();
            assert!(missing.is_empty(), "keys at {at}: {missing:?} went away");
            for (k, v) in a {
                same_shape(v, &b[k], &format!("{at}.{k}"));
            }
        }
        (Array(a), Array(b)) => {
            if let (Some(x), Some(y)) = (a.first(), b.first()) {
                same_shape(x, y, &format!("{at}[0]"));
            }
        }
        (Number(a), Number(b)) => assert_eq!(a.is_f64(), b.is_f64(), "number kind at {at}"),
        (Bool(_), Bool(_)) | (String(_), String(_)) => {}
        _ => panic!("{at}: {old} then {new}"),
    }
}

#[test]
fn a_new_run_writes_the_shape_of_the_fixtures() {
    let d = Dir::new();
    let fixtures = root().join("tests/fixtures/v1");
    let native = fixtures.join("native.toml");
    let runs: [(&str, Vec<&str>); 4] = [
        ("run", vec!["noop", "--ops", "200", "--clients", "2"]),
        (
            "open",
            vec![
                "noop",
                "--target",
                "sleep://?latency=1ms",
                "--rate",
                "200",
                "--duration",
                "1s",
            ],
        ),
        (
            "errors",
            vec![
                "session-store",
                "--target",
                "sleep://?latency=100us&errors=0.2",
                "--set",
                "records=100",
                "--skip-load",
                "--clients",
                "2",
                "--duration",
                "1s",
                "--warmup",
                "0s",
            ],
        ),
        (
            "native",
            vec![
                native.to_str().unwrap(),
                "--target",
                "sleep://?latency=100us",
                "--ops",
                "100",
                "--clients",
                "1",
            ],
        ),
    ];
    for (name, args) in runs {
        let out = format!("{name}.json");
        let mut full = vec!["run"];
        full.extend(args);
        full.extend(["-o", &out]);
        d.ok(&full);
        let new = json_of(&d.join(&out));
        same_shape(&json_of(&fixtures.join(&out)), &new, name);
    }
}
