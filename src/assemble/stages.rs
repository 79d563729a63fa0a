//! A run with stages: each stage's figures and verdict, built from its own intervals (so
//! nothing is counted twice and the stages add up to the run), and what `--stop-when`
//! found: the highest load sustained before the first that failed.

use anyhow::{anyhow, Result};

use crate::analysis::knee::SUSTAINED;
use crate::analysis::validity::{judge_scope, with_trends, Context, Scope};
use crate::engine::spill::IntervalBrief;
use crate::engine::stages::rank;
use crate::engine::{LoadPlan, Mode, RunData, Stage, StageKind, StopFigure, StopWhen};
use crate::result::stages::{BreakpointRecord, StageRan, StageRecord};
use crate::result::validity::Thresholds;
use crate::result::{IntervalRecord, OpResult};
use crate::stats::{new_hist, LatencySummary, OpCounters};

/// What the stages' verdicts need beside the engine's data.
pub struct StageFacts<'a> {
    pub plan: &'a LoadPlan,
    pub names: &'a [String],
    pub target_kind: &'a str,
    /// Whether any operation pauses (keying or think time inside the workload).
    pub pauses: bool,
    pub thresholds: Thresholds,
    /// The run's interval records, for the stages' trend tests.
    pub intervals: &'a [IntervalRecord],
}

/// Each stage of the run, in order, over its measured intervals.
pub fn records(run: &RunData, f: &StageFacts<'_>) -> Result<Vec<StageRecord>> {
    let profile = f.plan.profile();
    let ended_early = run.interrupted || run.stopped.is_some();
    let last_stage = run.intervals.last().and_then(|i| i.stage.clone());
    let mut out = Vec::new();
    for (i, st) in f.plan.stages.iter().enumerate() {
        let mine: Vec<&IntervalBrief> = run
            .intervals
            .iter()
            .filter(|b| b.stage.as_deref() == Some(st.name.as_str()))
            .collect();
        let measured: Vec<&IntervalBrief> = mine.iter().copied().filter(|b| !b.warmup).collect();
        let (start, end) = (profile.start(i), profile.start(i + 1));
        let warmup = f.plan.warmup.clamp(start, end) - start;
        let planned_end = mine.last().is_some_and(|b| b.end >= end);
        let ran = if mine.is_empty() {
            StageRan::NotRun
        } else if ended_early && last_stage.as_deref() == Some(st.name.as_str()) || !planned_end {
            StageRan::Cut
        } else {
            StageRan::Complete
        };
        let mut record = measure(run, f, st, &measured)?;
        record.start_s = start.as_secs_f64();
        record.end_s = end.as_secs_f64();
        record.warmup_s = warmup.as_secs_f64();
        record.ran = ran;
        record.missed_starts = run.missed_by_stage.get(i).copied().unwrap_or(0);
        if !measured.is_empty() {
            record.validity = Some(verdict(run, f, st, &measured, &record)?);
        }
        out.push(record);
    }
    Ok(out)
}

/// A stage's figures over its measured intervals, their histograms read back one at a time.
fn measure(
    run: &RunData,
    f: &StageFacts<'_>,
    st: &Stage,
    measured: &[&IntervalBrief],
) -> Result<StageRecord> {
    let open = f.plan.is_open();
    let mut totals: Vec<OpCounters> = f.names.iter().map(|_| OpCounters::default()).collect();
    for b in measured {
        let (ops, _) = run
            .store
            .read(b.index as usize)
            .map_err(|e| anyhow!("reading interval {} back: {e}", b.index + 1))?;
        for (t, c) in totals.iter_mut().zip(&ops) {
            t.merge(c);
        }
    }
    let measured_s: f64 = measured
        .iter()
        .map(|b| (b.end - b.start).as_secs_f64())
        .sum();
    let full: Vec<&&IntervalBrief> = measured
        .iter()
        .filter(|b| b.end - b.start >= f.plan.interval)
        .collect();
    let counts = |k: Option<usize>| -> Vec<f64> {
        full.iter()
            .map(|b| match k {
                Some(k) => b.ops[k].ok as f64,
                None => b.ops.iter().map(|c| c.ok).sum::<u64>() as f64,
            })
            .collect()
    };
    let operations: Vec<OpResult> = (f.names.iter().zip(&totals).enumerate())
        .map(|(k, (name, c))| OpResult::of(name, c, measured_s, &counts(Some(k)), open))
        .collect();
    let mut all = OpCounters::default();
    for c in &totals {
        all.merge(c);
    }
    let total = OpResult::of("total", &all, measured_s, &counts(None), open);
    // `+ 0.0` turns an empty sum's -0.0 into 0.
    let offered = (open && !measured.is_empty())
        .then(|| measured.iter().filter_map(|b| b.offered).sum::<f64>() + 0.0);
    let intervals = match (measured.first(), measured.last()) {
        (Some(a), Some(b)) => Some([a.index + 1, b.index + 1]),
        _ => None,
    };
    Ok(StageRecord {
        name: st.name.clone(),
        kind: st.kind,
        from: st.from,
        to: st.to,
        step_of: st.step_of.clone(),
        start_s: 0.0,
        end_s: 0.0,
        warmup_s: 0.0,
        measured_s,
        ran: StageRan::NotRun,
        intervals,
        offered,
        missed_starts: 0,
        operations,
        total,
        validity: None,
        judged: if st.is_constant() { "steady" } else { "rig" }.to_string(),
    })
}

/// A stage's verdict: as a constant run of its load (this process's share) is judged, or
/// for a ramp on the rig's own figures.
fn verdict(
    run: &RunData,
    f: &StageFacts<'_>,
    st: &Stage,
    measured: &[&IntervalBrief],
    record: &StageRecord,
) -> Result<crate::result::validity::Validity> {
    let plan = f.plan;
    let mut hiccups = new_hist();
    for b in measured {
        if let (_, Some(h)) = run
            .store
            .read(b.index as usize)
            .map_err(|e| anyhow!("reading interval {} back: {e}", b.index + 1))?
        {
            let _ = hiccups.add(&h);
        }
    }
    // The clients a closed loop ran in the stage: those of rank below its peak.
    let (shards, all) = plan
        .shard
        .map_or((1, plan.clients()), |s| (s.count, s.clients));
    let clients: Vec<usize> = (0..plan.clients())
        .filter(|&c| match st.kind {
            StageKind::Rate => true,
            StageKind::Clients => (rank(plan.first_client() + c, all, shards) as f64) < st.peak(),
        })
        .collect();
    let mut as_run = plan.clone();
    as_run.stages = Vec::new();
    match &mut as_run.mode {
        Mode::Closed { clients: n, .. } => *n = clients.len(),
        Mode::Open { rate, .. } => *rate = st.from * plan.share(),
    }
    let t = &record.total;
    let cx = Context {
        plan: &as_run,
        target_kind: f.target_kind,
        pauses: f.pauses,
        measured_s: record.measured_s,
        ok: t.ok,
        errors: t.errors,
        mean_latency_ns: t.latency.mean_ns,
        late_starts: t.late_starts,
        missed_starts: record.missed_starts,
        thresholds: f.thresholds,
    };
    let scope = Scope {
        measured: measured.to_vec(),
        hiccups,
        clients,
        steady: st.is_constant(),
        whole: false,
    };
    let v = judge_scope(run, &scope, &cx)?;
    if !st.is_constant() {
        return Ok(v);
    }
    let mine: Vec<IntervalRecord> = (f.intervals.iter())
        .filter(|i| i.stage.as_deref() == Some(st.name.as_str()))
        .cloned()
        .collect();
    Ok(with_trends(v, &mine, plan.interval.as_secs_f64()))
}

/// The whole run's verdict with each stage's reasons under its name (a run with stages is
/// judged on the rig's own figures as a whole, and each stage on its own).
/// A stage's reason that the run's own says already (the rig busy or crowded over the
/// run, with other numbers) is not repeated.
pub fn fold_reasons(v: &mut crate::result::validity::Validity, stages: &[StageRecord]) {
    let words = |r: &str| -> String {
        r.chars()
            .filter(|c| c.is_alphabetic() || *c == ' ')
            .collect()
    };
    let run: Vec<String> = v.reasons.iter().map(|r| words(r)).collect();
    for s in stages {
        let Some(sv) = &s.validity else { continue };
        for r in sv.reasons.iter().filter(|r| !run.contains(&words(r))) {
            v.reasons.push(format!("stage {}: {r}", s.name));
        }
    }
    v.verdict = crate::result::validity::Verdict::of(&v.reasons);
}

/// Whether the condition holds on figures over `seconds` (a stage's total, or one
/// interval's); `None` when there is nothing to read (no success for a latency).
fn holds_on(
    rule: &StopWhen,
    l: &LatencySummary,
    ok: u64,
    errors: u64,
    seconds: f64,
) -> Option<bool> {
    let value = match rule.figure {
        StopFigure::Throughput => ok as f64 / seconds.max(1e-9),
        StopFigure::Errors if rule.percent => {
            if ok + errors == 0 {
                return None;
            }
            errors as f64 * 100.0 / (ok + errors) as f64
        }
        StopFigure::Errors => errors as f64,
        _ if l.count == 0 => return None,
        StopFigure::P50 => l.p50_ns as f64,
        StopFigure::P90 => l.p90_ns as f64,
        StopFigure::P99 => l.p99_ns as f64,
        StopFigure::P999 => l.p999_ns as f64,
        StopFigure::Max => l.max_ns as f64,
        StopFigure::Mean => l.mean_ns,
    };
    Some(match (rule.above, rule.inclusive) {
        (true, false) => value > rule.limit,
        (true, true) => value >= rule.limit,
        (false, false) => value < rule.limit,
        (false, true) => value <= rule.limit,
    })
}

/// One interval's figures for the condition: its operation's, or all together.
fn interval_figures(rule: &StopWhen, i: &IntervalRecord) -> Option<(LatencySummary, u64, u64)> {
    let ops: Vec<_> = i
        .ops
        .iter()
        .filter(|o| rule.op.as_ref().is_none_or(|name| &o.name == name))
        .collect();
    let mut h = new_hist();
    for o in &ops {
        let _ = h.add(o.histogram.decode().ok()?);
    }
    let ok = ops.iter().map(|o| o.ok).sum();
    let errors = ops.iter().map(|o| o.errors).sum();
    Some((LatencySummary::of(&h), ok, errors))
}

/// Where `--stop-when` left the run: whether it stopped it, and walking the stages in
/// order, the highest load that passed before the first that failed (constant stages whole,
/// ramps interval by interval). `stopped`: the end of the interval that ended the run.
pub fn breakpoint(
    plan: &LoadPlan,
    stages: &[StageRecord],
    intervals: &[IntervalRecord],
    stopped: Option<f64>,
    per_shard: bool,
) -> Option<BreakpointRecord> {
    let rule = plan.stop_when.as_ref()?;
    let open = plan.is_open();
    let mut pass: Option<(f64, String)> = None;
    let mut fail: Option<(f64, String)> = None;
    'stages: for s in stages.iter().filter(|s| s.measured_s > 0.0) {
        if s.from == s.to {
            let op = match &rule.op {
                Some(name) => s.operations.iter().find(|o| &o.name == name)?,
                None => &s.total,
            };
            let held = holds_on(rule, &op.latency, op.ok, op.errors, s.measured_s);
            let delivered = !open || s.offered.is_none_or(|due| op.ok as f64 >= SUSTAINED * due);
            if held == Some(false) && delivered {
                pass = Some((s.from, s.name.clone()));
            } else {
                fail = Some((s.from, s.name.clone()));
                break;
            }
            continue;
        }
        let span = (s.end_s - s.start_s).max(1e-9);
        for i in intervals
            .iter()
            .filter(|i| !i.warmup && i.stage.as_deref() == Some(s.name.as_str()))
        {
            let level = s.from + (s.to - s.from) * ((i.end_s - s.start_s) / span).clamp(0.0, 1.0);
            let Some((l, ok, errors)) = interval_figures(rule, i) else {
                continue;
            };
            let held = holds_on(rule, &l, ok, errors, i.end_s - i.start_s);
            let delivered = !open || i.offered.is_none_or(|due| ok as f64 >= SUSTAINED * due);
            match held {
                Some(false) if delivered => pass = Some((level, s.name.clone())),
                None => {}
                _ => {
                    fail = Some((level, s.name.clone()));
                    break 'stages;
                }
            }
        }
    }
    let stopped_in = stopped.and_then(|at| {
        intervals
            .iter()
            .find(|i| (i.end_s - at).abs() < 1e-9 || (i.start_s < at && at <= i.end_s))
            .and_then(|i| i.stage.clone())
    });
    Some(BreakpointRecord {
        condition: rule.condition.clone(),
        consecutive: rule.consecutive,
        stopped: stopped.is_some(),
        stopped_at_s: stopped,
        stopped_in,
        sustained: pass.as_ref().map(|p| p.0),
        sustained_in: pass.map(|p| p.1),
        first_failing: fail.as_ref().map(|p| p.0),
        first_failing_in: fail.map(|p| p.1),
        unit: if open { "ops/s" } else { "clients" }.to_string(),
        per_shard,
    })
}
