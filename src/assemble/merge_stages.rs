//! The stages of a sharded run merged exactly (`loadrig merge`): each stage's operations
//! over every shard (counts summed, histograms added), its verdict over the shards, and
//! the breakpoint read again from the merged figures, each shard having decided on its own
//! when to stop.

use super::merge::{merge_op, merged_validity, ShardFile, View};
use super::stages::breakpoint;
use crate::analysis::validity::with_trends;
use crate::engine::Mode;
use crate::error::InputError;
use crate::result::stages::{StageRan, StageRecord};
use crate::result::{IntervalRecord, OpResult, RunResult};

/// `merged`'s stages from the shards' (each shard ran its share of every stage).
pub(super) fn merge_stages(
    files: &[ShardFile],
    intervals: &[IntervalRecord],
    merged: &mut RunResult,
) -> Result<(), InputError> {
    let first = &files[0].result;
    merged.stages = Vec::new();
    merged.breakpoint = None;
    if first.stages.is_empty() {
        return Ok(());
    }
    let mut out = Vec::new();
    for (k, st) in first.stages.iter().enumerate() {
        let parts: Vec<&StageRecord> = files
            .iter()
            .map(|f| {
                f.result
                    .stages
                    .get(k)
                    .filter(|s| s.name == st.name)
                    .ok_or_else(|| {
                        InputError::new(format!(
                            "{}: its stages are not {}'s (stage {} is '{}' there)",
                            f.path.display(),
                            files[0].path.display(),
                            k + 1,
                            st.name
                        ))
                    })
            })
            .collect::<Result<_, _>>()?;
        out.push(merge_stage(files, intervals, merged, &parts)?);
    }
    merged.stages = out;
    let stopped = files
        .iter()
        .filter_map(|f| f.result.breakpoint.as_ref().and_then(|b| b.stopped_at_s))
        .reduce(f64::min);
    merged.breakpoint = breakpoint(&merged.load, &merged.stages, intervals, stopped, true);
    if let Some(b) = &merged.breakpoint {
        merged.notes.push(b.note());
    }
    Ok(())
}

/// One stage over every shard.
fn merge_stage(
    files: &[ShardFile],
    intervals: &[IntervalRecord],
    merged: &RunResult,
    parts: &[&StageRecord],
) -> Result<StageRecord, InputError> {
    let st = parts[0];
    let open = merged.load.is_open();
    let mine: Vec<&IntervalRecord> = intervals
        .iter()
        .filter(|i| !i.warmup && i.stage.as_deref() == Some(st.name.as_str()))
        .collect();
    let measured_s = parts.iter().map(|p| p.measured_s).fold(0.0, f64::max);
    let full = merged.load.interval.as_secs_f64() * 0.999;
    let counts = |k: Option<usize>| -> Vec<f64> {
        (mine.iter())
            .filter(|i| i.end_s - i.start_s >= full)
            .map(|i| match k {
                Some(k) => i.ops[k].ok as f64,
                None => i.ok as f64,
            })
            .collect()
    };
    let operations = (0..st.operations.len())
        .map(|k| {
            let ops: Vec<&OpResult> = parts.iter().map(|p| &p.operations[k]).collect();
            merge_op(&ops, measured_s, &counts(Some(k)), open)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let totals: Vec<&OpResult> = parts.iter().map(|p| &p.total).collect();
    let total = merge_op(&totals, measured_s, &counts(None), open)?;
    let ran = if parts.iter().any(|p| p.ran == StageRan::Cut) {
        StageRan::Cut
    } else if parts.iter().all(|p| p.ran == StageRan::NotRun) {
        StageRan::NotRun
    } else {
        StageRan::Complete
    };
    let steady = st.from == st.to;
    let mode = match merged.load.mode {
        Mode::Closed { think, .. } => Mode::Closed {
            clients: st.from.max(st.to) as usize,
            think,
        },
        Mode::Open {
            arrivals,
            workers,
            late_after,
            ..
        } => Mode::Open {
            rate: st.from,
            arrivals,
            workers,
            late_after,
        },
    };
    let view = View {
        parts: (files.iter().zip(parts))
            .filter_map(|(f, p)| p.validity.as_ref().map(|v| (f, v)))
            .collect(),
        intervals: mine.clone(),
        stage: Some(&st.name),
        mode,
        interval: merged.load.interval,
        total: &total,
        measured_s,
        steady,
    };
    let validity = (view.parts.len() == files.len())
        .then(|| merged_validity(&view))
        .flatten()
        .map(|v| match steady {
            true => {
                let records: Vec<IntervalRecord> = mine.iter().map(|i| (*i).clone()).collect();
                with_trends(v, &records, merged.load.interval.as_secs_f64())
            }
            false => v,
        });
    Ok(StageRecord {
        measured_s,
        ran,
        offered: open.then(|| parts.iter().filter_map(|p| p.offered).sum()),
        missed_starts: parts.iter().map(|p| p.missed_starts).sum(),
        operations,
        total,
        validity,
        ..st.clone()
    })
}
