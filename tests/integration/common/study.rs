//! Reading a backend-table study's file back in the tests of the studies
//! (the `study_connections`, `study_directory` and `study_documents` modules).
#![allow(dead_code)]

use loadrig::study::{BackendRow, StudyRecord, StudyTable};

use super::Dir;

/// `DIR/study.json` under the test's folder, as the typed study record.
pub fn record(d: &Dir, dir: &str) -> StudyRecord {
    let text = std::fs::read_to_string(d.join(dir).join("study.json")).expect("study.json");
    serde_json::from_str(&text).expect("the typed study record")
}

/// The rows of a study with a backend table.
pub fn rows(s: &StudyRecord) -> &[BackendRow] {
    match &s.table {
        StudyTable::Backends(t) => &t.rows,
        _ => panic!("the {} study has a backend table", s.study),
    }
}

pub fn row<'a>(s: &'a StudyRecord, name: &str) -> &'a BackendRow {
    rows(s)
        .iter()
        .find(|r| r.backend.name == name)
        .unwrap_or_else(|| panic!("row {name} missing"))
}
