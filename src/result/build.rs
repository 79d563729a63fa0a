//! A run's result from what the engine measured: summaries per operation and in total,
//! interval records, notes on anything that limits what the figures mean.

use std::time::SystemTime;

use super::models::LatencyModes;
use super::validity::{self, Context, FairnessInterval, RigInterval, Validity};
use super::{
    BeforeRunRecord, ConnectPhasesRecord, ConnectRecord, DataLoadRecord, EncodedHistogram,
    ErrorMessage, ErrorsByClass, FigureRecord, HostRecord, IntervalOp, IntervalRecord, OpResult,
    RunResult, RunStatus, SettledRecord, SetupRecord, Statements, TargetRecord, WorkloadRecord,
    SCHEMA_VERSION,
};
use crate::engine::{IntervalData, LoadPlan, Prepared, RunData};
use crate::stats::{Hist, LatencySummary, OpCounters, SeriesSummary};
use crate::vocab::ErrorCounts;
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

impl RunResult {
    /// The result of a run: `run` is what the engine measured; `find_modes` finds the
    /// clusters of a latency histogram (`analysis::modes::find`), applied to all operations
    /// together.
    pub fn build(
        facts: RunFacts<'_>,
        run: &RunData,
        find_modes: impl FnOnce(&Hist) -> LatencyModes,
    ) -> anyhow::Result<RunResult> {
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
        let latency_modes = find_modes(&all.latency);
        notes.extend(latency_modes.note());
        let per_client = plan.shard.is_some();
        let intervals = run.map_intervals(|i| IntervalRecord::of(i, &names, per_client))?;
        RunResult {
            schema_version: SCHEMA_VERSION,
            loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
            status: if run.interrupted {
                RunStatus::Interrupted
            } else {
                RunStatus::Complete
            },
            workload: WorkloadRecord::of(workload, ops),
            load: plan.clone(),
            target: TargetRecord {
                kind: target_kind,
                tls: crate::targets::tls::mode_of_url(&target_url).map(|m| m.name().to_string()),
                url: target_url,
                server_version: prepared.server_version,
            },
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
        }
        .with_figures(&workload.figures)
        .with_validity(run, ops, thresholds)
    }

    /// The run judging itself (docs/validity.md), with the open loop's notes folded in.
    fn with_validity(
        mut self,
        run: &RunData,
        ops: &[OpSpec],
        thresholds: validity::Thresholds,
    ) -> anyhow::Result<RunResult> {
        let cx = Context {
            plan: &self.load,
            target_kind: &self.target.kind,
            pauses: ops.iter().any(|o| o.pause.is_some()),
            measured_s: self.measured_s,
            ok: self.total.ok,
            errors: self.total.errors,
            mean_latency_ns: self.total.latency.mean_ns,
            late_starts: self.total.late_starts,
            missed_starts: self.missed_starts,
            thresholds,
        };
        let interval_s = self.load.interval.as_secs_f64();
        self.validity = Some(Validity::judge(run, &cx)?.with_trends(&self.intervals, interval_s));
        Ok(self)
    }

    /// The workload's figures from the measured operation counts.
    fn with_figures(mut self, figures: &[FigureSpec]) -> RunResult {
        self.figures = figures
            .iter()
            .map(|f| {
                let completed = self
                    .operations
                    .iter()
                    .filter(|o| f.ops.contains(&o.name))
                    .map(|o| o.ok)
                    .sum();
                FigureRecord {
                    name: f.name.clone(),
                    description: f.description.clone(),
                    value: f.value(completed, self.measured_s),
                    unit: f.unit.clone(),
                    ops: f.ops.clone(),
                    completed,
                    per: f.per.clone(),
                    divisor: f.divisor,
                }
            })
            .collect();
        self
    }
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

impl SetupRecord {
    /// The setup's statements, the rows they changed and their time.
    pub(super) fn of((statements, rows, t): (usize, u64, std::time::Duration)) -> SetupRecord {
        SetupRecord {
            statements,
            rows,
            seconds: t.as_secs_f64(),
            rows_per_s: rows as f64 / t.as_secs_f64().max(1e-9),
        }
    }
}

impl DataLoadRecord {
    /// The data load of `workload`: `loaded` (records, time) when it ran, else reused.
    pub(super) fn of(
        workload: &Workload,
        loaded: Option<(u64, std::time::Duration)>,
    ) -> Option<Self> {
        match (&workload.data, loaded) {
            (_, Some((n, t))) => Some(DataLoadRecord {
                records: n,
                seconds: t.as_secs_f64(),
                records_per_s: n as f64 / t.as_secs_f64().max(1e-9),
                skipped: false,
            }),
            (Some(d), None) => Some(DataLoadRecord {
                records: d.count,
                seconds: 0.0,
                records_per_s: 0.0,
                skipped: true,
            }),
            (None, None) => None,
        }
    }
}

/// The classes counted at least once.
fn by_class(counts: &ErrorCounts) -> ErrorsByClass {
    counts.iter().filter(|(_, n)| *n > 0).collect()
}

impl IntervalRecord {
    /// `per_client`: keep each client's count (shard runs, for `loadrig merge`).
    pub fn of(d: &IntervalData, names: &[String], per_client: bool) -> IntervalRecord {
        let completed = d.ops.iter().map(|c| c.ok + c.error_total()).sum();
        IntervalRecord {
            rig: d
                .rig
                .as_ref()
                .map(|s| RigInterval::of(&s.brief(), &s.threads, completed, validity::cores())),
            fairness: FairnessInterval::of(&d.per_client),
            per_client: if per_client {
                d.per_client.clone()
            } else {
                Vec::new()
            },
            index: d.index + 1,
            start_s: d.start.as_secs_f64(),
            end_s: d.end.as_secs_f64(),
            warmup: d.warmup,
            ok: d.ops.iter().map(|c| c.ok).sum(),
            errors: d.ops.iter().map(|c| c.error_total()).sum(),
            ops: d
                .ops
                .iter()
                .zip(names)
                .map(|(c, name)| IntervalOp {
                    name: name.clone(),
                    ok: c.ok,
                    errors: c.error_total(),
                    errors_by_class: by_class(&c.errors),
                    p50_ns: c.latency.value_at_quantile(0.5),
                    p99_ns: c.latency.value_at_quantile(0.99),
                    max_ns: c.latency.max(),
                    histogram: EncodedHistogram::encode(&c.latency),
                })
                .collect(),
        }
    }
}

impl OpResult {
    /// Summarise `c`, an operation's merged measured counters; `counts` is its number of
    /// successes in each full measured interval.
    pub(super) fn of(
        name: &str,
        c: &OpCounters,
        measured_s: f64,
        counts: &[f64],
        open_loop: bool,
    ) -> OpResult {
        OpResult {
            name: name.to_string(),
            ok: c.ok,
            errors: c.error_total(),
            errors_by_class: by_class(&c.errors),
            error_messages: c
                .messages
                .iter()
                .map(|(class, message, count)| ErrorMessage {
                    class: *class,
                    message: message.clone(),
                    count: *count,
                })
                .collect(),
            rows: c.rows,
            empty: c.empty,
            retries: c.retries.total(),
            retries_by_class: by_class(&c.retries),
            rolled_back: c.rolled_back,
            reconnects: c.reconnects,
            throughput_per_s: if measured_s > 0.0 {
                c.ok as f64 / measured_s
            } else {
                0.0
            },
            latency: LatencySummary::of(&c.latency),
            histogram: EncodedHistogram::encode(&c.latency),
            failed_latency: c.failed.as_deref().map(LatencySummary::of),
            failed_histogram: c.failed.as_deref().map(EncodedHistogram::encode),
            missing_histogram: c.missing.as_deref().map(EncodedHistogram::encode),
            service: open_loop.then(|| LatencySummary::of(&c.service)),
            service_histogram: open_loop.then(|| EncodedHistogram::encode(&c.service)),
            start_lag: open_loop.then(|| LatencySummary::of(&c.lag)),
            start_lag_histogram: open_loop.then(|| EncodedHistogram::encode(&c.lag)),
            late_starts: open_loop.then_some(c.late),
            interval_counts: SeriesSummary::of(counts),
            statements: Statements::of(&c.statements, measured_s),
        }
    }
}
