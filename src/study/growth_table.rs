//! The growth table (seed 003's shape): a row per number of records stored, a column per
//! backend, seconds per 1000 added in the cells; under it each column's fitted class, its
//! slope with the 95 % interval, and the implied upper bound in requests per second. The
//! columns are filled by running the shared growth loop ([`crate::runner::growth`]) on each backend.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{batch_failure, clean, error_class, Backend, BackendState, StudyRecord};
use crate::engine;
use crate::plan::RunPlan;
use crate::report::html::esc;
use crate::report::plot::growths::{self, Series};
use crate::result::sweep::GrowthModel;
use crate::result::{self, RunResult, RunStatus};
use crate::runner::{self, growth, View};
use crate::targets::{with_target_type, Target};
use crate::vocab::ErrorClass;

/// Rows are records stored before a batch; a column per backend.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct GrowthTable {
    /// The table's rows: records stored before a batch.
    pub rows: Vec<u64>,
    pub columns: Vec<Column>,
}

impl GrowthTable {
    /// Add a finished (or not run) column and recompute the rows: every number of records
    /// stored that some column timed a batch at, in order.
    pub fn push(&mut self, col: Column) {
        self.columns.push(col);
        let mut rows: Vec<u64> = self
            .columns
            .iter()
            .flat_map(|c| c.cells.iter().map(|x| x.stored_before))
            .collect();
        rows.sort_unstable();
        rows.dedup();
        self.rows = rows;
    }
}

/// One backend's column: how it went, and its batches.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Column {
    #[serde(flatten)]
    pub backend: Backend,
    pub cells: Vec<Cell>,
    /// The complexity class fitted to seconds per batch against records stored.
    pub model: Option<GrowthModel>,
    /// Records per second the fitted cost allows at these numbers of records stored.
    pub upper_bound_per_s: Vec<Bound>,
}

impl Column {
    pub fn new(backend: Backend) -> Column {
        Column {
            backend,
            cells: Vec::new(),
            model: None,
            upper_bound_per_s: Vec::new(),
        }
    }
}

/// One batch: the records stored before it, what it added, how long it took, its run file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Cell {
    pub stored_before: u64,
    pub added: u64,
    /// The batch's measured time (`measured_s` of its run file).
    pub seconds: f64,
    /// Seconds per 1000 records added: `seconds × 1000 / added`.
    pub per_1000_s: f64,
    /// The run file, relative to the study's folder.
    pub run: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Bound {
    pub stored: u64,
    /// None where the fitted curve predicts no positive cost (a fit with a negative
    /// intercept, far from its data): no bound can be read off it there.
    pub per_s: Option<f64>,
}

/// One growth column to run: its plan (target and connection mode resolved) and sizes.
pub struct GrowthColumn<'a> {
    pub plan: RunPlan,
    pub batch: u64,
    pub limit: u64,
    /// The study's folder; run files go to `runs/SLUG-NNN.json` under it.
    pub dir: &'a Path,
    pub slug: String,
    /// Where the implied upper bound is given.
    pub bounds_at: &'a [u64],
}

/// Run one column on its own target; false when the study was interrupted. Failures go
/// into the column (with their class); only writing files can fail the study.
pub fn run_growth_column(col: &mut Column, g: &GrowthColumn) -> Result<bool> {
    let scheme = g.plan.target.scheme().to_string();
    let outcome: Result<Result<bool, (ErrorClass, String)>> =
        with_target_type!(scheme.as_str(), T => growth_on::<T>(col, g));
    match outcome? {
        Ok(complete) => Ok(complete),
        Err((class, message)) => {
            col.backend.fail(class, message);
            Ok(true)
        }
    }
}

/// The column on targets of type `T`: clean its namespace, then the growth loop. The inner
/// error is a failure of the backend: (class, message).
fn growth_on<T: Target>(
    col: &mut Column,
    g: &GrowthColumn,
) -> Result<Result<bool, (ErrorClass, String)>> {
    let target = match T::from_url(&g.plan.target.parsed, &g.plan.workload.params) {
        Ok(t) => Arc::new(t),
        Err(e) => return Ok(Err((ErrorClass::Other, e.to_string()))),
    };
    if let Err(e) = clean(&*target) {
        return Ok(Err((e.class, e.message)));
    }
    col.backend.state = BackendState::Ran;
    let puts = growth::put_ops(&g.plan);
    let mut failure: Option<(ErrorClass, String)> = None;
    let mut interrupted = false;
    let grown = growth::grow(&g.plan, g.batch, g.limit, 0, |plan, stored| {
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            interrupted = true;
            return Ok(None);
        }
        let k = col.backend.runs.len() + 1;
        let run = format!("runs/{}-{k:03}.json", g.slug);
        let mut plan = plan.clone();
        plan.outputs.result = g.dir.join(&run);
        let r = runner::execute_on(Arc::clone(&target), &plan, View::Quiet)?;
        result::write_atomic(&plan.outputs.result, &serde_json::to_vec_pretty(&r)?)?;
        col.backend.runs.push(run.clone());
        if r.status == RunStatus::Interrupted {
            interrupted = true;
            return Ok(None);
        }
        let added = growth::added(&puts, &r);
        if added == 0 {
            failure = Some(batch_failure(&r));
        } else {
            col.cells.push(cell(stored, added, &r, run));
        }
        Ok(Some(r))
    });
    let grown = match grown {
        Ok(grown) => grown,
        Err(e) => return Ok(Err((error_class(&e), format!("{e:#}")))),
    };
    if let Some(f) = failure {
        return Ok(Err(f));
    }
    if interrupted {
        col.backend.state = BackendState::Interrupted;
    }
    if col.cells.len() >= 2 {
        let model = GrowthModel::new(
            col.backend.name.clone(),
            grown.fit,
            0.0,
            grown.stored as f64,
        );
        col.upper_bound_per_s = g
            .bounds_at
            .iter()
            .map(|&n| Bound {
                stored: n,
                per_s: Some(model.fit.predict(n as f64))
                    .filter(|cost| *cost > 0.0)
                    .map(|cost| g.batch as f64 / cost),
            })
            .collect();
        col.model = Some(model);
    }
    Ok(Ok(!interrupted))
}

fn cell(stored: u64, added: u64, r: &RunResult, run: String) -> Cell {
    Cell {
        stored_before: stored,
        added,
        seconds: r.measured_s,
        per_1000_s: r.measured_s * 1000.0 / added as f64,
        run,
    }
}

const W: usize = 12;

/// The cell of `col` at `row` records stored, formatted.
fn cell_text(col: &Column, row: u64) -> String {
    col.cells
        .iter()
        .find(|c| c.stored_before == row)
        .map_or_else(|| "-".into(), |c| format!("{:.3}", c.per_1000_s))
}

/// The batch size of the study (the slopes are given per 1000 added, as the cells are).
fn batch(record: &StudyRecord) -> f64 {
    record.sizes.get("batch").copied().unwrap_or(1000) as f64
}

/// The lines under the cells: label and one text per column.
fn footer(t: &GrowthTable, batch: f64) -> Vec<(String, Vec<String>)> {
    let mut lines = vec![
        ("state".to_string(), Vec::new()),
        ("class".to_string(), Vec::new()),
        ("slope".to_string(), Vec::new()),
        ("95% CI".to_string(), Vec::new()),
    ];
    let bounds: Vec<u64> = t
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
    let per_1000 = 1000.0 / batch;
    for c in &t.columns {
        lines[0].1.push(c.backend.state_text());
        let m = c.model.as_ref().map(|m| &m.fit);
        lines[1]
            .1
            .push(m.map_or("-".into(), |f| f.class.name().to_string()));
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

/// The table as text, with what its footer means.
pub fn render_text(s: &mut String, t: &GrowthTable, record: &StudyRecord) {
    let _ = write!(s, "{:>12}", "stored");
    for c in &t.columns {
        let _ = write!(s, " {:>W$}", c.backend.name);
    }
    s.push('\n');
    for row in &t.rows {
        let _ = write!(s, "{row:>12}");
        for c in &t.columns {
            let _ = write!(s, " {:>W$}", cell_text(c, *row));
        }
        s.push('\n');
    }
    for (label, texts) in footer(t, batch(record)) {
        let _ = write!(s, "{label:>12}");
        for t in texts {
            let _ = write!(s, " {t:>W$}");
        }
        s.push('\n');
    }
    s.push_str("slope: seconds per 1000 added per unit of the class's f(n) (n for O(n), ln(1+n) for O(log n)); for O(1) the constant cost; req/s: 1 / the fitted cost of one record\n");
    let max = record.sizes.get("records_max").copied().unwrap_or(0);
    if t.columns
        .iter()
        .any(|c| c.upper_bound_per_s.iter().any(|b| b.stored > max))
    {
        let _ = writeln!(
            s,
            "req/s beyond {max} stored: extrapolated from the fit, not measured"
        );
    }
}

/// The table and the chart of every backend's seconds per 1000 against records stored,
/// with the fitted curves.
pub fn render_html(h: &mut String, t: &GrowthTable, record: &StudyRecord) -> Result<()> {
    let _ = write!(
        h,
        "<h2 id=\"summary\">Table</h2>\n<p>{}</p>\n<table>\n<tr><th>stored</th>",
        esc(&record.unit)
    );
    for c in &t.columns {
        let _ = write!(h, "<th>{}</th>", esc(&c.backend.name));
    }
    h.push_str("</tr>\n");
    for row in &t.rows {
        let _ = write!(h, "<tr><td>{row}</td>");
        for c in &t.columns {
            let _ = write!(h, "<td>{}</td>", cell_text(c, *row));
        }
        h.push_str("</tr>\n");
    }
    for (label, texts) in footer(t, batch(record)) {
        let _ = write!(h, "<tr><th>{}</th>", esc(&label));
        for t in texts {
            let _ = write!(h, "<td>{}</td>", esc(&t));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    let scale = 1000.0 / batch(record);
    let series: Vec<Series> = t
        .columns
        .iter()
        .filter(|c| !c.cells.is_empty())
        .map(|c| Series {
            label: c.backend.name.clone(),
            points: c
                .cells
                .iter()
                .map(|x| (x.stored_before as f64 + x.added as f64 / 2.0, x.per_1000_s))
                .collect(),
            curve: c.model.as_ref().map_or_else(Vec::new, |m| {
                m.curve.iter().map(|p| (p.x, p.y * scale)).collect()
            }),
        })
        .collect();
    let svg = growths::chart(&series, "records stored", "seconds per 1000 added (log)")?;
    let _ = write!(
        h,
        "<h2 id=\"plots\">Plots</h2>\n<figure class=\"plot\" id=\"growth\"><figcaption>Seconds per 1000 records added against the records already stored (the middle of each batch), every backend, with the curve of its fitted complexity class.</figcaption>\n{svg}\n</figure>\n"
    );
    Ok(())
}
