//! `loadrig recover`: the result of a run killed before it could write it, rebuilt from its
//! interval stream (`result::stream`).

use std::time::Duration;

use anyhow::Result;

use crate::analysis::modes;
use crate::error::InputError;
use crate::result::stages::{StageRan, StageRecord};
use crate::result::stream::Stream;
use crate::result::{IntervalRecord, OpResult, RunResult, RunStatus, SCHEMA_VERSION};
use crate::stats::OpCounters;

/// The result rebuilt from a stream: every operation's totals are the exact merge of its
/// measured intervals (counts, errors by class, latency histograms). What the stream does
/// not carry (error messages, rows, retries, reconnects, statements, the open loop's
/// service and lag histograms, the validity verdict) is left empty, and a note says so.
pub fn recover(s: &Stream) -> Result<RunResult> {
    let h = &s.header;
    let measured: Vec<&IntervalRecord> = s.intervals.iter().filter(|i| !i.warmup).collect();
    let measured_s: f64 = measured.iter().map(|i| i.end_s - i.start_s).sum();
    let full: Vec<&&IntervalRecord> = measured
        .iter()
        .filter(|i| i.end_s - i.start_s >= h.load.interval.as_secs_f64() - 1e-9)
        .collect();
    let mut all = OpCounters::default();
    let mut operations = Vec::new();
    for (k, op) in h.workload.ops.iter().enumerate() {
        let c = merged(&measured, k)?;
        let counts: Vec<f64> = full.iter().map(|i| i.ops[k].ok as f64).collect();
        operations.push(OpResult::of(&op.name, &c, measured_s, &counts, false));
        all.merge(&c);
    }
    let counts: Vec<f64> = full.iter().map(|i| i.ok as f64).collect();
    let total = OpResult::of("total", &all, measured_s, &counts, false);
    let latency_modes = modes::find(&all.latency);
    let mut notes = vec![recovery_note(s)];
    notes.extend(latency_modes.note());
    let elapsed_s = s.intervals.last().map_or(0.0, |i| i.end_s);
    let stages = stages(s)?;
    let breakpoint = super::stages::breakpoint(&h.load, &stages, &s.intervals, None, false);
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        loadrig_version: h.loadrig_version.clone(),
        status: RunStatus::Recovered,
        workload: h.workload.clone(),
        load: h.load.clone(),
        target: h.target.clone(),
        host: h.host.clone(),
        started_at: h.started_at.clone(),
        ended_at: humantime::format_rfc3339_millis(s.modified).to_string(),
        elapsed_s,
        measured_s,
        data_load: h.data_load.clone(),
        setup: h.setup.clone(),
        settled: h.settled.clone(),
        before_run: h.before_run.clone(),
        missed_starts: 0,
        abandoned_clients: 0,
        operations,
        total,
        intervals: s.intervals.clone(),
        latency_modes: Some(latency_modes),
        notes,
        verify: Vec::new(),
        figures: Vec::new(),
        validity: None,
        warmup_auto: None,
        label: h.label.clone(),
        late_start_s: None,
        shards: None,
        checks: Vec::new(),
        connect: None,
        stages,
        breakpoint,
    })
}

/// A run with stages: each stage rebuilt from its intervals as the run's totals are (the
/// stream does not carry the stages' verdicts or missed starts).
fn stages(s: &Stream) -> Result<Vec<StageRecord>> {
    let load = &s.header.load;
    let profile = load.profile();
    let interval_s = load.interval.as_secs_f64();
    let mut out = Vec::new();
    for (k, st) in load.stages.iter().enumerate() {
        let mine: Vec<&IntervalRecord> = (s.intervals.iter())
            .filter(|i| i.stage.as_deref() == Some(st.name.as_str()))
            .collect();
        let measured: Vec<&IntervalRecord> = mine.iter().copied().filter(|i| !i.warmup).collect();
        let measured_s: f64 = measured.iter().map(|i| i.end_s - i.start_s).sum();
        let full: Vec<&&IntervalRecord> = (measured.iter())
            .filter(|i| i.end_s - i.start_s >= interval_s - 1e-9)
            .collect();
        let mut all = OpCounters::default();
        let mut operations = Vec::new();
        for (j, op) in s.header.workload.ops.iter().enumerate() {
            let c = merged(&measured, j)?;
            let counts: Vec<f64> = full.iter().map(|i| i.ops[j].ok as f64).collect();
            operations.push(OpResult::of(&op.name, &c, measured_s, &counts, false));
            all.merge(&c);
        }
        let counts: Vec<f64> = full.iter().map(|i| i.ok as f64).collect();
        let (start, end) = (profile.start(k), profile.start(k + 1));
        let ran = match mine.last() {
            None => StageRan::NotRun,
            Some(i) if i.end_s < end.as_secs_f64() - 1e-9 => StageRan::Cut,
            Some(_) => StageRan::Complete,
        };
        out.push(StageRecord {
            name: st.name.clone(),
            kind: st.kind,
            from: st.from,
            to: st.to,
            step_of: st.step_of.clone(),
            start_s: start.as_secs_f64(),
            end_s: end.as_secs_f64(),
            warmup_s: (load.warmup.clamp(start, end) - start).as_secs_f64(),
            measured_s,
            ran,
            intervals: measured
                .first()
                .zip(measured.last())
                .map(|(a, b)| [a.index, b.index]),
            offered: load
                .is_open()
                .then(|| measured.iter().filter_map(|i| i.offered).sum()),
            missed_starts: 0,
            operations,
            total: OpResult::of("total", &all, measured_s, &counts, false),
            validity: None,
            judged: if st.is_constant() { "steady" } else { "rig" }.to_string(),
        });
    }
    Ok(out)
}

fn recovery_note(s: &Stream) -> String {
    let last = s.intervals.last().map_or(0.0, |i| i.end_s);
    format!(
        "recovered by `loadrig recover` from the interval stream: the run died after {} intervals ({}){}; error messages, rows, retries, reconnects, statements, open-loop service times and the validity verdict are not in the stream",
        s.intervals.len(),
        humantime::format_duration(Duration::from_millis((last * 1e3) as u64)),
        if s.cut_line {
            ", and a last interval cut short in the writing is left out"
        } else {
            ""
        }
    )
}

/// Operation `k`'s counters over `intervals`, merged exactly (histograms added).
fn merged(intervals: &[&IntervalRecord], k: usize) -> Result<OpCounters> {
    let mut c = OpCounters::default();
    for i in intervals {
        let op = &i.ops[k];
        let hist = op.histogram.decode().map_err(|e| {
            InputError::new(format!(
                "interval {}, operation '{}': {e}",
                i.index, op.name
            ))
        })?;
        if hist.len() != op.ok {
            return Err(InputError::new(format!(
                "interval {}, operation '{}': its histogram holds {} latencies for {} successes",
                i.index,
                op.name,
                hist.len(),
                op.ok
            ))
            .into());
        }
        let mut one = OpCounters {
            ok: op.ok,
            latency: hist,
            ..OpCounters::default()
        };
        for (class, n) in &op.errors_by_class {
            one.errors[*class] += n;
        }
        c.merge(&one);
    }
    Ok(c)
}
