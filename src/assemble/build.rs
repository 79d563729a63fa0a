//! A run's result from what the engine measured: summaries per operation and in total,
//! interval records, the latency modes, the figures, the verdict, and notes on anything that
//! limits what the figures mean.

use std::time::SystemTime;

use super::stages;
use crate::analysis::modes;
use crate::analysis::validity::{judge, with_trends, Context};
use crate::engine::{LoadPlan, Prepared, RunData};
use crate::result::stream::{StreamHeader, STREAM_KIND};
use crate::result::validity::{self, Validity};
use crate::result::{
    BeforeRunRecord, ConnectPhasesRecord, ConnectRecord, DataLoadRecord, FigureRecord, HostRecord,
    IntervalRecord, OpResult, RunResult, RunStatus, SettledRecord, SetupRecord, TargetRecord,
    WorkloadRecord, SCHEMA_VERSION,
};
use crate::stats::OpCounters;
use crate::targets::tls::mode_of_url;
use crate::workload::{FigureSpec, OpSpec, Workload};

/// What a run was, beside the engine's measurements.
pub struct RunFacts<'a> {
    pub workload: &'a Workload,
    /// The operations run, in the engine's order.
    pub ops: &'a [OpSpec],
    pub plan: &'a LoadPlan,
    /// The target URL with passwords already replaced (`targets::redact`).
    pub target_url: String,
    /// The target's URL scheme.
    pub target_kind: String,
    /// Server version and data load, from before the measured run.
    pub prepared: Prepared,
    pub host: HostRecord,
    pub started_at: SystemTime,
    /// The verdict's thresholds.
    pub thresholds: validity::Thresholds,
}

/// The result of a run: `run` is what the engine measured.
pub fn build(facts: RunFacts<'_>, run: &RunData) -> anyhow::Result<RunResult> {
    let RunFacts {
        workload,
        ops,
        plan,
        target_url,
        target_kind,
        prepared,
        host,
        started_at,
        thresholds,
    } = facts;
    let names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let measured_s = run.measured.as_secs_f64();
    let open = plan.is_open();
    let counts = |k: Option<usize>| interval_counts(run, plan, k);
    let operations: Vec<OpResult> = names
        .iter()
        .zip(&run.totals)
        .enumerate()
        .map(|(k, (name, c))| OpResult::of(name, c, measured_s, &counts(Some(k)), open))
        .collect();
    let mut all = OpCounters::default();
    for c in &run.totals {
        all.merge(c);
    }
    let total = OpResult::of("total", &all, measured_s, &counts(None), open);
    let mut notes = notes(run, &total);
    let latency_modes = modes::find(&all.latency);
    notes.extend(latency_modes.note());
    let per_client = plan.shard.is_some();
    let intervals = run.map_intervals(|i| IntervalRecord::of(i, &names, per_client))?;
    let mut result = RunResult {
        schema_version: SCHEMA_VERSION,
        loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
        status: if run.interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        },
        workload: WorkloadRecord::of(workload, ops),
        load: plan.clone(),
        target: target_record(target_url, target_kind, prepared.server_version),
        host,
        started_at: humantime::format_rfc3339_millis(started_at).to_string(),
        ended_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        elapsed_s: run.elapsed.as_secs_f64(),
        measured_s,
        data_load: DataLoadRecord::of(workload, prepared.loaded),
        setup: prepared.setup.map(SetupRecord::of),
        settled: prepared.settled.map(SettledRecord::of),
        before_run: prepared.before_run.map(BeforeRunRecord::of),
        connect: Some(ConnectRecord {
            clients: plan.connections(),
            seconds: run.connect.time.as_secs_f64(),
            rate_per_s: run.connect.rate,
            phases: run.connect.phases.as_ref().map(ConnectPhasesRecord::of),
            failed_clients: run.connect.failed,
            errors_by_class: run.connect.errors.iter().filter(|(_, n)| *n > 0).collect(),
            first_error: run.connect.first_error.clone(),
        }),
        missed_starts: run.missed,
        abandoned_clients: run.abandoned,
        operations,
        total,
        intervals,
        latency_modes: Some(latency_modes),
        notes,
        verify: Vec::new(),
        figures: Vec::new(),
        validity: None,
        warmup_auto: None,
        label: None,
        late_start_s: run.late_start.map(|d| d.as_secs_f64()),
        shards: None,
        checks: Vec::new(),
        stages: Vec::new(),
        breakpoint: None,
    };
    result.figures = figures(&workload.figures, &result);
    result.validity = Some(verdict(&result, run, ops, thresholds)?);
    if !plan.stages.is_empty() {
        staged(&mut result, run, ops, thresholds)?;
    }
    Ok(result)
}

/// A run with stages: each stage's figures and verdict (their reasons folded into the
/// run's), and what `--stop-when` found.
fn staged(
    result: &mut RunResult,
    run: &RunData,
    ops: &[OpSpec],
    thresholds: validity::Thresholds,
) -> anyhow::Result<()> {
    let names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let facts = stages::StageFacts {
        plan: &result.load,
        names: &names,
        target_kind: &result.target.kind,
        pauses: ops.iter().any(|o| o.pause.is_some()),
        thresholds,
        intervals: &result.intervals,
    };
    let records = stages::records(run, &facts)?;
    if let Some(v) = result.validity.as_mut() {
        stages::fold_reasons(v, &records);
    }
    let stopped = run.stopped.map(|s| s.at.as_secs_f64());
    result.breakpoint =
        stages::breakpoint(&result.load, &records, &result.intervals, stopped, false);
    result.stages = records;
    if let Some(b) = &result.breakpoint {
        result.notes.push(b.note());
    }
    Ok(())
}

/// The header of a run's interval stream, written before the run starts: what its result
/// will record beside the intervals.
pub fn stream_header(facts: &RunFacts<'_>) -> StreamHeader {
    let prepared = &facts.prepared;
    StreamHeader {
        stream: STREAM_KIND.to_string(),
        schema_version: SCHEMA_VERSION,
        loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
        workload: WorkloadRecord::of(facts.workload, facts.ops),
        load: facts.plan.clone(),
        target: target_record(
            facts.target_url.clone(),
            facts.target_kind.clone(),
            prepared.server_version.clone(),
        ),
        host: facts.host.clone(),
        started_at: humantime::format_rfc3339_millis(facts.started_at).to_string(),
        data_load: DataLoadRecord::of(facts.workload, prepared.loaded),
        setup: prepared.setup.map(SetupRecord::of),
        settled: prepared.settled.map(SettledRecord::of),
        before_run: prepared.before_run.map(BeforeRunRecord::of),
        label: None,
    }
}

/// The target as the result records it: its URL (passwords replaced), scheme, TLS mode and
/// server version.
fn target_record(url: String, kind: String, server_version: Option<String>) -> TargetRecord {
    TargetRecord {
        kind,
        tls: mode_of_url(&url).map(|m| m.name().to_string()),
        url,
        server_version,
    }
}

/// The run judging itself (docs/validity.md), with the open loop's notes folded in.
fn verdict(
    result: &RunResult,
    run: &RunData,
    ops: &[OpSpec],
    thresholds: validity::Thresholds,
) -> anyhow::Result<Validity> {
    let cx = Context {
        plan: &result.load,
        target_kind: &result.target.kind,
        pauses: ops.iter().any(|o| o.pause.is_some()),
        measured_s: result.measured_s,
        ok: result.total.ok,
        errors: result.total.errors,
        mean_latency_ns: result.total.latency.mean_ns,
        late_starts: result.total.late_starts,
        missed_starts: result.missed_starts,
        thresholds,
    };
    let interval_s = result.load.interval.as_secs_f64();
    let v = judge(run, &cx)?;
    if !result.load.stages.is_empty() {
        // A load that changes drifts by design: each constant stage has its trend tests.
        return Ok(v);
    }
    Ok(with_trends(v, &result.intervals, interval_s))
}

/// The workload's figures from the measured operation counts.
fn figures(figures: &[FigureSpec], result: &RunResult) -> Vec<FigureRecord> {
    figures
        .iter()
        .map(|f| {
            let completed = result
                .operations
                .iter()
                .filter(|o| f.ops.contains(&o.name))
                .map(|o| o.ok)
                .sum();
            FigureRecord {
                name: f.name.clone(),
                description: f.description.clone(),
                value: f.value(completed, result.measured_s),
                unit: f.unit.clone(),
                ops: f.ops.clone(),
                completed,
                per: f.per.clone(),
                divisor: f.divisor,
            }
        })
        .collect()
}

/// Successes of operation `k` (of all operations with `None`) in each full measured
/// interval: a short last interval would pull the spread down.
fn interval_counts(run: &RunData, plan: &LoadPlan, k: Option<usize>) -> Vec<f64> {
    run.intervals
        .iter()
        .filter(|i| !i.warmup && (i.end - i.start) >= plan.interval)
        .map(|i| match k {
            Some(k) => i.ops[k].ok as f64,
            None => i.ops.iter().map(|c| c.ok).sum::<u64>() as f64,
        })
        .collect()
}

/// What limits the figures: Ctrl-C, abandoned clients, an open loop that fell behind.
fn notes(run: &RunData, total: &OpResult) -> Vec<String> {
    let mut notes = Vec::new();
    if run.interrupted {
        notes.push("interrupted by Ctrl-C: the figures cover the run until then".to_string());
    }
    if run.abandoned > 0 {
        notes.push(format!("{} client(s) were still in an operation when the run ended; those operations are not counted", run.abandoned));
    }
    if run.missed > 0 {
        notes.push(format!("{} scheduled arrivals never started: the target (or --max-in-flight) could not keep up with the rate", run.missed));
    }
    if let Some(late) = run.late_start.filter(|d| !d.is_zero()) {
        notes.push(format!("this process started {:.3}s after the agreed --start-at (connecting and loading took that long); its intervals keep the agreed grid, the first ones short of operations", late.as_secs_f64()));
    }
    if let Some(late) = total.late_starts.filter(|&n| n > 0) {
        notes.push(format!("{late} operations started late against the schedule; their waiting is in the latency figures"));
    }
    notes
}
