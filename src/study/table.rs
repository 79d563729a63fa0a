//! The study's table as the seed printed it: a row per number of records stored, a column
//! per backend, seconds per 1000 added in the cells; under it each column's fitted class,
//! its slope with the 95 % interval, and the implied upper bound in requests per second.

use std::fmt::Write as _;

use super::{Column, ColumnState, StudyRecord, StudyStatus};

const W: usize = 12;

/// The cell of `col` at `row` records stored, formatted.
fn cell(col: &Column, row: u64) -> String {
    col.cells
        .iter()
        .find(|c| c.stored_before == row)
        .map_or_else(|| "-".into(), |c| format!("{:.3}", c.per_1000_s))
}

/// The lines under the cells: label and one text per column.
pub fn footer(record: &StudyRecord) -> Vec<(String, Vec<String>)> {
    let batch = record.sizes.get("batch").copied().unwrap_or(1000) as f64;
    let mut lines = vec![
        ("state".to_string(), Vec::new()),
        ("class".to_string(), Vec::new()),
        ("slope".to_string(), Vec::new()),
        ("95% CI".to_string(), Vec::new()),
    ];
    let bounds: Vec<u64> = record
        .columns
        .iter()
        .flat_map(|c| c.upper_bound_per_s.iter().map(|b| b.stored))
        .fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        });
    for n in &bounds {
        lines.push((format!("req/s @{n}"), Vec::new()));
    }
    for c in &record.columns {
        let state = match (c.state, c.error_class) {
            (ColumnState::Failed, Some(class)) => format!("failed:{}", class.name()),
            (s, _) => s.words().to_string(),
        };
        lines[0].1.push(state);
        let m = c.model.as_ref().map(|m| &m.fit);
        lines[1]
            .1
            .push(m.map_or("-".into(), |f| f.class.name().to_string()));
        // Slopes per 1000 added, as the cells are.
        let per_1000 = 1000.0 / batch;
        lines[2].1.push(m.map_or("-".into(), |f| {
            if f.class == crate::result::models::Class::Constant {
                format!("{:.3}", f.intercept * per_1000)
            } else {
                format!("{:.2e}", f.slope * per_1000)
            }
        }));
        lines[3]
            .1
            .push(m.and_then(|f| f.slope_ci95).map_or("-".into(), |(a, b)| {
                format!("{:.1e}..{:.1e}", a * per_1000, b * per_1000)
            }));
        for (i, n) in bounds.iter().enumerate() {
            let b = c.upper_bound_per_s.iter().find(|b| b.stored == *n);
            lines[4 + i].1.push(
                b.and_then(|b| b.per_s)
                    .map_or("-".into(), |v| format!("{v:.0}")),
            );
        }
    }
    lines
}

/// The whole table as text, with the notes of columns that did not run or failed.
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
    let _ = write!(s, "{:>12}", "stored");
    for c in &record.columns {
        let _ = write!(s, " {:>W$}", c.name);
    }
    s.push('\n');
    for row in &record.rows {
        let _ = write!(s, "{row:>12}");
        for c in &record.columns {
            let _ = write!(s, " {:>W$}", cell(c, *row));
        }
        s.push('\n');
    }
    for (label, texts) in footer(record) {
        let _ = write!(s, "{label:>12}");
        for t in texts {
            let _ = write!(s, " {t:>W$}");
        }
        s.push('\n');
    }
    s.push_str("slope: seconds per 1000 added per unit of the class's f(n) (n for O(n), ln(1+n) for O(log n)); for O(1) the constant cost; req/s: 1 / the fitted cost of one record\n");
    let max = record.sizes.get("records_max").copied().unwrap_or(0);
    if record
        .columns
        .iter()
        .any(|c| c.upper_bound_per_s.iter().any(|b| b.stored > max))
    {
        let _ = writeln!(
            s,
            "req/s beyond {max} stored: extrapolated from the fit, not measured"
        );
    }
    for c in &record.columns {
        if let Some(note) = &c.note {
            let _ = writeln!(s, "{}: {note}", c.name);
        }
    }
    s
}
