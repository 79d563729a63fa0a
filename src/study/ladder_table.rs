//! The ladder table (seed 004's graph as a table): for each backend and each setting of the
//! seed's switches, a row per injection rate Ir with the business metric relative to the
//! out-of-the-box setting at Ir = 1, the aborts by class, the response-time limits missed
//! and what the integrity checks found; each point names its run file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Backend;
use crate::report::html::esc;
use crate::report::plot::growths::{chart, Series};
use crate::vocab::ErrorClass;

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LadderTable {
    /// The setting every point is relative to (at Ir = 1, on the same backend).
    pub baseline: String,
    /// A point misses when any transaction type's p90 response time is above this.
    pub p90_limit_ms: f64,
    /// A point fails when more than this share of its transactions aborted.
    pub abort_limit: f64,
    pub columns: Vec<LadderColumn>,
}

/// One backend under one setting of the switches, Ir raised until a limit is missed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LadderColumn {
    #[serde(flatten)]
    pub backend: Backend,
    /// The database's kind (`SQLite`, `PostgreSQL`, `MariaDB`); `backend.name` adds the setting.
    pub database: String,
    pub setting: String,
    /// The switches of this setting, as `--set` takes them.
    pub switches: BTreeMap<String, String>,
    pub points: Vec<LadderPoint>,
    /// Why Ir was not raised further.
    pub stopped: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LadderPoint {
    pub ir: u64,
    /// The run file, relative to the study's folder.
    pub run: String,
    /// (customer-domain transactions completed + work orders completed) per minute.
    pub bbops_per_min: f64,
    /// `bbops_per_min` over the baseline's at Ir = 1 on the same database.
    pub relative: Option<f64>,
    pub customer_ok: u64,
    pub workorders_completed: u64,
    /// Every transaction started, and those that failed, by class.
    pub transactions: u64,
    pub aborted: u64,
    pub aborts_by_class: BTreeMap<ErrorClass, u64>,
    /// Deadlocks by the server's own count over the run, where it keeps one.
    pub server_deadlocks: Option<u64>,
    /// Time the run's transactions waited for locks, per transaction, in milliseconds, as
    /// the server's observer saw it (`lock_waits_from` says how); none where it sees none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_wait_ms_per_tx: Option<f64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lock_waits_from: String,
    /// The server's lock waits by transaction type: each session seen waiting for a lock
    /// given to the type whose statement waited (the run file's
    /// `server.decomposition[].lock_wait_ms`, docs/observe.md); empty where not sampled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lock_waits_by_type: BTreeMap<String, TypeLockWait>,
    /// p90 response time of each transaction type, from its intended start.
    pub p90_ms: BTreeMap<String, f64>,
    /// Transaction types whose p90 is above the limit.
    pub missed: Vec<String>,
    pub supplier: SupplierCheck,
    /// Invariants that did not hold: the run failed.
    pub violations: Vec<String>,
}

/// One transaction type's lock waits at one point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TypeLockWait {
    /// Time per transaction of this type waiting for locks, ms.
    pub ms_per_tx: f64,
    /// Its share of all the lock waits sampled in the run.
    pub share: f64,
}

/// The supplier emulator against the database after the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SupplierCheck {
    /// Purchase orders the supplier received (distinct ids), and again.
    pub received: u64,
    pub duplicates: u64,
    /// Purchase orders the database holds as sent or delivered.
    pub committed_sent: u64,
    /// Received purchase orders the database does not hold as sent: sent inside a
    /// transaction that then rolled back (the seed's problem 2).
    pub orphan_sends: u64,
    /// Deliveries the supplier made, and those of purchase orders the database never held.
    pub delivered: u64,
    pub orphan_deliveries: u64,
}

impl LadderPoint {
    /// The share of transactions that aborted.
    pub fn abort_rate(&self) -> f64 {
        if self.transactions == 0 {
            0.0
        } else {
            self.aborted as f64 / self.transactions as f64
        }
    }

    fn class(&self, c: ErrorClass) -> u64 {
        self.aborts_by_class.get(&c).copied().unwrap_or(0)
    }

    /// `1.00x  aborts 3 (dl 1, ser 2)` and the marks of missed limits and violations.
    fn cell(&self) -> String {
        let mut s = match self.relative {
            Some(r) => format!("{r:.2}x"),
            None => format!("{:.0}/min", self.bbops_per_min),
        };
        let _ = write!(s, "  ab {}", self.aborted);
        let (dl, ser, to) = (
            self.class(ErrorClass::Deadlock),
            self.class(ErrorClass::Serialization),
            self.class(ErrorClass::Timeout),
        );
        if dl + ser + to > 0 {
            let _ = write!(s, " (dl {dl}, ser {ser}, to {to})");
        }
        if let Some(ms) = self.lock_wait_ms_per_tx {
            let _ = write!(s, " lw {ms:.1}");
        }
        if self.supplier.orphan_sends + self.supplier.orphan_deliveries > 0 {
            let _ = write!(
                s,
                " orphans {}/{}",
                self.supplier.orphan_sends, self.supplier.orphan_deliveries
            );
        }
        if !self.missed.is_empty() {
            s.push_str(" p90!");
        }
        if !self.violations.is_empty() {
            s.push_str(" INVALID");
        }
        s
    }
}

/// The databases in the table that measured something, in column order, each with its
/// columns (the others are only in the notes under the table).
fn by_database(t: &LadderTable) -> Vec<(&str, Vec<&LadderColumn>)> {
    let mut out: Vec<(&str, Vec<&LadderColumn>)> = Vec::new();
    for c in t.columns.iter().filter(|c| !c.points.is_empty()) {
        match out.iter_mut().find(|(d, _)| *d == c.database) {
            Some((_, cols)) => cols.push(c),
            None => out.push((&c.database, vec![c])),
        }
    }
    out
}

/// Every Ir any of `cols` reached, ascending.
fn irs(cols: &[&LadderColumn]) -> Vec<u64> {
    let mut irs: Vec<u64> = cols
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.ir))
        .collect();
    irs.sort_unstable();
    irs.dedup();
    irs
}

fn point(c: &LadderColumn, ir: u64) -> Option<&LadderPoint> {
    c.points.iter().find(|p| p.ir == ir)
}

pub fn render_text(s: &mut String, t: &LadderTable) {
    let _ = writeln!(
        s,
        "BBops/min relative to {} at Ir = 1 on the same database; ab: aborted transactions (dl deadlock, ser serialization, to lock timeout); lw: lock wait per transaction, ms, as the server's observer saw it; orphans: sent/delivered purchase orders the database never committed; p90!: a transaction type's p90 above {:.0} ms",
        t.baseline, t.p90_limit_ms
    );
    for (db, cols) in by_database(t) {
        let _ = write!(s, "\n{db}\n{:>5}", "Ir");
        for c in &cols {
            let _ = write!(s, " | {:<44}", c.setting);
        }
        s.push('\n');
        for ir in irs(&cols) {
            let _ = write!(s, "{ir:>5}");
            for c in &cols {
                let text = point(c, ir).map_or_else(String::new, LadderPoint::cell);
                let _ = write!(s, " | {text:<44}");
            }
            s.push('\n');
        }
        for c in &cols {
            if let Some(why) = &c.stopped {
                let _ = writeln!(s, "  {}: stopped: {why}", c.setting);
            }
        }
        lock_waits_text(s, &cols);
        let base = cols
            .iter()
            .find(|c| c.setting == t.baseline)
            .and_then(|c| limit(c));
        for c in cols.iter().filter(|c| !c.points.is_empty()) {
            let _ = write!(s, "  {}: within the limits up to ", c.setting);
            let _ = match (limit(c), base) {
                (None, _) => write!(s, "no Ir (not even 1)"),
                (Some(ir), _) if c.stopped.is_none() => write!(s, "Ir {ir}, the highest run"),
                (Some(ir), Some(b)) if c.setting != t.baseline => {
                    write!(s, "Ir {ir}, {}x {}'s Ir {b}", ir / b, t.baseline)
                }
                (Some(ir), _) => write!(s, "Ir {ir}"),
            };
            s.push('\n');
        }
    }
}

/// Each setting's transaction types that waited for locks, by Ir: ms per transaction of
/// the type (its share of the run's lock waits).
fn lock_waits_text(s: &mut String, cols: &[&LadderColumn]) {
    let irs = irs(cols);
    let mut head = false;
    for c in cols {
        let mut types: Vec<&String> = c
            .points
            .iter()
            .flat_map(|p| p.lock_waits_by_type.iter())
            .filter(|(_, w)| w.ms_per_tx > 0.0)
            .map(|(t, _)| t)
            .collect();
        types.sort();
        types.dedup();
        for t in types {
            if !head {
                head = true;
                let _ = write!(s, "  lock wait by transaction type, ms per transaction (share of the run's lock waits)\n  {:<12} {:<20}", "setting", "type");
                for ir in &irs {
                    let _ = write!(s, " {:>14}", format!("Ir {ir}"));
                }
                s.push('\n');
            }
            let _ = write!(s, "  {:<12} {t:<20}", c.setting);
            for ir in &irs {
                let cell = point(c, *ir)
                    .and_then(|p| p.lock_waits_by_type.get(t))
                    .map_or(String::new(), |w| {
                        format!("{:.1} ({:.0} %)", w.ms_per_tx, w.share * 100.0)
                    });
                let _ = write!(s, " {cell:>14}");
            }
            s.push('\n');
        }
    }
}

/// The highest Ir at which a column stayed within its limits (the point that stopped the
/// ladder is the first that did not).
pub fn limit(c: &LadderColumn) -> Option<u64> {
    let within = c
        .points
        .len()
        .saturating_sub(usize::from(c.stopped.is_some()));
    c.points[..within].last().map(|p| p.ir)
}

pub fn render_html(h: &mut String, t: &LadderTable) -> Result<()> {
    let _ = write!(
        h,
        "<h2 id=\"summary\">Table</h2>\n<p>BBops/min relative to {} at Ir = 1 on the same database; ab: aborted transactions (dl deadlock, ser serialization, to lock timeout); lw: lock wait per transaction, ms, as the server's observer saw it; orphans: purchase orders sent or delivered that the database never committed; p90!: a transaction type's p90 response time above {:.0} ms.</p>\n",
        esc(&t.baseline),
        t.p90_limit_ms
    );
    for (db, cols) in by_database(t) {
        let _ = write!(h, "<h3>{}</h3>\n<table>\n<tr><th>Ir</th>", esc(db));
        for c in &cols {
            let _ = write!(h, "<th>{}</th>", esc(&c.setting));
        }
        h.push_str("</tr>\n");
        for ir in irs(&cols) {
            let _ = write!(h, "<tr><td>{ir}</td>");
            for c in &cols {
                let text = point(c, ir).map_or_else(String::new, LadderPoint::cell);
                let _ = write!(h, "<td>{}</td>", esc(&text));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
        let series: Vec<Series> = cols
            .iter()
            .filter(|c| c.points.iter().any(|p| p.relative.is_some()))
            .map(|c| {
                let xy: Vec<(f64, f64)> = c
                    .points
                    .iter()
                    .filter_map(|p| Some((p.ir as f64, p.relative?)))
                    .collect();
                Series {
                    label: c.setting.clone(),
                    points: xy.clone(),
                    curve: xy,
                }
            })
            .collect();
        h.push_str(&chart(
            &series,
            "injection rate Ir",
            "BBops/min relative to out of the box at Ir = 1 (log)",
        )?);
    }
    Ok(())
}
