//! The backend table (seed 000's shape): a row per backend, a column per measure (an
//! operation's rate, or a figure derived from two of them), each cell naming the run file it
//! came from; with each run's count of operations per interval, drawn as probability
//! densities in the report (the seed's figures).

use std::fmt::Write as _;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::path::Path;

use super::{write_record, Backend, StudyRecord, StudyTable};
use crate::report::html::esc;
use crate::report::plot;
use crate::targets::redact;

/// A row per backend, a column per measure.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct BackendTable {
    pub measures: Vec<Measure>,
    pub rows: Vec<BackendRow>,
}

/// A column: its short name, its unit (`ops/s`, `%`) and what it is, in words.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Measure {
    pub name: String,
    pub unit: String,
    pub what: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BackendRow {
    #[serde(flatten)]
    pub backend: Backend,
    /// One per measure, in the measures' order.
    pub cells: Vec<MeasureCell>,
    /// Successful operations in each full measured interval of each run.
    pub samples: Vec<IntervalCounts>,
    /// The query and the database's plan for it (EXPLAIN), when the row is an SQL search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

/// Each backend in turn, as the backend-table studies run them: one without a URL or plans,
/// or any after an interruption, is a row "not run: WHY"; the others go through `run_row`
/// (which fills the row and says whether the study may go on), and the study file is written
/// after each row, so a crash loses at most the row in progress.
pub fn run_rows<P>(
    record: &mut StudyRecord,
    dir: &Path,
    mut table: BackendTable,
    rows: Vec<(&'static str, &Result<String, String>, Option<P>)>,
    mut run_row: impl FnMut(&mut BackendRow, &str, P) -> anyhow::Result<bool>,
) -> anyhow::Result<(BackendTable, bool)> {
    let measures = table.measures.len();
    let mut complete = true;
    for (name, url, plans) in rows {
        let (Ok(url), Some(plans), true) = (url, plans, complete) else {
            let why = match (url, complete) {
                (Err(why), _) => why.clone(),
                _ => "interrupted before it started".into(),
            };
            table
                .rows
                .push(BackendRow::new(Backend::not_run(name, &why), measures));
            continue;
        };
        println!("{name}: {}", redact(url));
        let mut row = BackendRow::new(Backend::new(name, Some(redact(url))), measures);
        complete &= run_row(&mut row, url, plans)?;
        if let Some(note) = &row.backend.note {
            println!("  {note}");
        }
        table.rows.push(row);
        record.table = StudyTable::Backends(table.clone());
        write_record(record, dir)?;
    }
    Ok((table, complete))
}

impl Measure {
    /// The columns of a table from (name, unit, what).
    pub fn all(spec: &[(&str, &str, &str)]) -> Vec<Measure> {
        spec.iter()
            .map(|(name, unit, what)| Measure {
                name: (*name).into(),
                unit: (*unit).into(),
                what: (*what).into(),
            })
            .collect()
    }
}

impl BackendRow {
    /// A row with `measures` empty cells.
    pub fn new(backend: Backend, measures: usize) -> BackendRow {
        BackendRow {
            backend,
            cells: vec![MeasureCell::default(); measures],
            samples: Vec::new(),
            plan: None,
        }
    }
}

/// A cell: its value (none when not measured), the run file it was read from (none when
/// derived from other cells), and why it is empty or how it was derived.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct MeasureCell {
    pub value: Option<f64>,
    pub run: Option<String>,
    pub note: Option<String>,
    /// A value in words (`index`, `scan`), shown instead of a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// The operations that succeeded in each full measured interval of one run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IntervalCounts {
    /// The measure the run was for.
    pub measure: String,
    pub run: String,
    pub interval_s: f64,
    pub counts: Vec<u64>,
}

impl MeasureCell {
    pub fn empty(note: impl Into<String>) -> MeasureCell {
        MeasureCell {
            note: Some(note.into()),
            ..MeasureCell::default()
        }
    }

    fn text(&self, unit: &str) -> String {
        if let Some(label) = &self.label {
            return label.clone();
        }
        match (self.value, unit) {
            (None, _) => if self.note.is_some() { "n/a" } else { "-" }.to_string(),
            (Some(v), "%") => format!("{v:.1}%"),
            (Some(v), "s") if v < 100.0 => format!("{v:.2}"),
            (Some(v), _) if v >= 100.0 => format!("{v:.0}"),
            (Some(v), _) => format!("{v:.1}"),
        }
    }
}

const NAME_W: usize = 28;
const W: usize = 13;

/// The table as text: a row per backend with its state, then what each measure is and the
/// notes of cells that are empty or derived.
pub fn render_text(s: &mut String, t: &BackendTable) {
    let _ = write!(s, "{:<NAME_W$}", "backend");
    for m in &t.measures {
        let _ = write!(s, " {:>W$}", m.name);
    }
    let _ = writeln!(s, " {:>W$}", "state");
    for r in &t.rows {
        let _ = write!(s, "{:<NAME_W$}", r.backend.name);
        for (c, m) in r.cells.iter().zip(&t.measures) {
            let _ = write!(s, " {:>W$}", c.text(&m.unit));
        }
        let _ = writeln!(s, " {:>W$}", r.backend.state_text());
    }
    for m in &t.measures {
        let _ = writeln!(s, "{}: {} ({})", m.name, m.what, m.unit);
    }
    for (row, measure, note) in cell_notes(t) {
        let _ = writeln!(s, "{row}, {measure}: {note}");
    }
    for r in &t.rows {
        if let Some(plan) = &r.plan {
            let _ = writeln!(
                s,
                "{} plan:\n  {}",
                r.backend.name,
                plan.replace('\n', "\n  ")
            );
        }
    }
}

/// (row, measure, note) of every cell with a note.
fn cell_notes(t: &BackendTable) -> impl Iterator<Item = (&str, &str, &str)> {
    t.rows.iter().flat_map(move |r| {
        r.cells.iter().zip(&t.measures).filter_map(move |(c, m)| {
            Some((r.backend.name.as_str(), m.name.as_str(), c.note.as_deref()?))
        })
    })
}

/// The table, then one density plot per measure that has interval counts: each backend's
/// counts divided by their mean, so that rates orders of magnitude apart share an axis and
/// the spread (the seed's point: a steady rate or not) reads the same for all.
pub fn render_html(h: &mut String, t: &BackendTable) -> Result<()> {
    h.push_str("<h2 id=\"summary\">Table</h2>\n<table>\n<tr><th>backend</th>");
    for m in &t.measures {
        let _ = write!(h, "<th title=\"{}\">{}</th>", esc(&m.what), esc(&m.name));
    }
    h.push_str("<th>state</th></tr>\n");
    for r in &t.rows {
        let _ = write!(h, "<tr><th>{}</th>", esc(&r.backend.name));
        for (c, m) in r.cells.iter().zip(&t.measures) {
            let _ = write!(h, "<td>{}</td>", esc(&c.text(&m.unit)));
        }
        let _ = writeln!(h, "<td>{}</td></tr>", esc(&r.backend.state_text()));
    }
    h.push_str("</table>\n<ul>\n");
    for m in &t.measures {
        let _ = writeln!(
            h,
            "<li>{}: {} ({})</li>",
            esc(&m.name),
            esc(&m.what),
            esc(&m.unit)
        );
    }
    for (row, measure, note) in cell_notes(t) {
        let _ = writeln!(h, "<li>{}, {}: {}</li>", esc(row), esc(measure), esc(note));
    }
    h.push_str("</ul>\n");
    render_plans(h, t);
    h.push_str("<h2 id=\"plots\">Plots</h2>\n");
    for (k, m) in t.measures.iter().enumerate() {
        let sets = relative_counts(t, &m.name);
        if sets.is_empty() {
            continue;
        }
        let svg =
            plot::density_chart(&sets, "operations per interval ÷ the backend's mean", false)?;
        let _ = write!(
            h,
            "<figure class=\"plot\" id=\"counts-{k}\"><figcaption>{}: probability density of the operations that succeeded in each interval, one client, each backend's counts divided by their mean (the mean per interval is in the legend).</figcaption>\n{svg}\n</figure>\n",
            esc(&m.name)
        );
    }
    Ok(())
}

/// Each row's query and its plan (EXPLAIN), when it has one.
fn render_plans(h: &mut String, t: &BackendTable) {
    let plans: Vec<(&str, &str)> = t
        .rows
        .iter()
        .filter_map(|r| Some((r.backend.name.as_str(), r.plan.as_deref()?)))
        .collect();
    if plans.is_empty() {
        return;
    }
    h.push_str("<h2 id=\"plans\">Query plans</h2>\n");
    for (name, plan) in plans {
        let _ = writeln!(h, "<h3>{}</h3>\n<pre>{}</pre>", esc(name), esc(plan));
    }
}

/// Each backend's interval counts for `measure`, divided by their mean, labelled with it.
fn relative_counts(t: &BackendTable, measure: &str) -> Vec<(String, Vec<f64>)> {
    t.rows
        .iter()
        .flat_map(|r| r.samples.iter().map(move |s| (r, s)))
        .filter(|(_, s)| s.measure == measure && !s.counts.is_empty())
        .filter_map(|(r, s)| {
            let mean = s.counts.iter().sum::<u64>() as f64 / s.counts.len() as f64;
            (mean > 0.0).then(|| {
                (
                    format!("{} (mean {mean:.0} per {}s)", r.backend.name, s.interval_s),
                    s.counts.iter().map(|c| *c as f64 / mean).collect(),
                )
            })
        })
        .collect()
}
