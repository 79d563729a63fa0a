//! The growth loop shared by `loadrig sweep --growth-batch` and the studies: batches of a
//! plan run one after another against one store until it holds the limit, each batch timed
//! against the records already stored, and the complexity class fitted to the series. It
//! lives with the executor, below both, so that no command reaches into a study.

use anyhow::Result;

use crate::analysis::growth;
use crate::plan::RunPlan;
use crate::result::models::GrowthFit;
use crate::result::RunResult;
use crate::workload::OpKind;

/// What a growth loop found.
pub struct Growth {
    /// Records stored at the end.
    pub stored: u64,
    /// False when a batch was interrupted (Ctrl-C).
    pub complete: bool,
    /// Why the loop stopped early or counted as it did, for the reader.
    pub notes: Vec<String>,
    pub fit: GrowthFit,
}

/// Run `base` in batches of `batch` operations from `initial` records stored until `limit`
/// are. `run_batch(plan, stored)` runs one batch (on the caller's shared target) and returns
/// its result, or `None` when the study was interrupted.
pub fn grow(
    base: &RunPlan,
    batch: u64,
    limit: u64,
    initial: u64,
    mut run_batch: impl FnMut(&RunPlan, u64) -> Result<Option<RunResult>>,
) -> Result<Growth> {
    let puts = put_ops(base);
    let (mut stored, mut k, mut series) = (initial, 0, Vec::new());
    let (mut complete, mut notes) = (true, Vec::new());
    while stored < limit {
        let plan = base.growth_batch(batch, k)?;
        let Some(result) = run_batch(&plan, stored)? else {
            complete = false;
            break;
        };
        let added = added(&puts, &result);
        if added == 0 {
            notes.push(format!(
                "batch {} stored no record (every operation failed); the study stopped there",
                k + 1
            ));
            break;
        }
        // The batch's cost is that of the records it met on average: its middle.
        series.push((stored as f64 + added as f64 / 2.0, result.measured_s));
        stored += added;
        k += 1;
    }
    if puts.is_empty() {
        notes.push(
            "the workload has no kv.put operation: every successful operation counts as one record stored"
                .to_string(),
        );
    }
    Ok(Growth {
        stored,
        complete,
        notes,
        fit: growth::classify(&series),
    })
}

/// The names of the plan's `kv.put` operations: what adds records.
pub fn put_ops(plan: &RunPlan) -> Vec<String> {
    plan.ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Put { .. }))
        .map(|o| o.name.clone())
        .collect()
}

/// Records a batch added: its successful puts (every success when there are none).
pub fn added(puts: &[String], result: &RunResult) -> u64 {
    if puts.is_empty() {
        result.total.ok
    } else {
        result
            .operations
            .iter()
            .filter(|o| puts.contains(&o.name))
            .map(|o| o.ok)
            .sum()
    }
}
