//! The study's table as text, in the seed's shape (the growth table of seed 003, the
//! backend table of seed 000), with the notes of backends that did not run or failed.

use std::fmt::Write as _;

use super::{backend_table, growth_table, ladder_table, StudyRecord, StudyStatus, StudyTable};

pub fn render(record: &StudyRecord) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} study{}: {}{}",
        record.study,
        if record.quick { " (--quick sizes)" } else { "" },
        record.unit,
        if record.status == StudyStatus::Interrupted {
            " — INTERRUPTED: the table holds what finished"
        } else {
            ""
        }
    );
    match &record.table {
        StudyTable::Growth(t) => growth_table::render_text(&mut s, t, record),
        StudyTable::Backends(t) => backend_table::render_text(&mut s, t),
        StudyTable::Ladder(t) => ladder_table::render_text(&mut s, t),
    }
    for b in record.table.backends() {
        if let Some(note) = &b.note {
            let _ = writeln!(s, "{}: {note}", b.name);
        }
    }
    s
}
