//! The result of a run, from the plan and what the engine measured.

use std::time::SystemTime;

use anyhow::Result;

use super::op_names;
use crate::analysis::modes;
use crate::engine::{self, Prepared, RunData};
use crate::plan::RunPlan;
use crate::report::host;
use crate::report::result::{self, DataLoadRecord, OpResult, RunResult, TargetRecord};
use crate::spec::{OpKind, OpSpec, Step, Template, Workload};
use crate::stats::OpCounters;
use crate::vocab::{NativeOp, ValueKind};

pub fn result(
    plan: &RunPlan,
    data_run: &RunData,
    prepared: Prepared,
    started_at: SystemTime,
) -> Result<RunResult> {
    let names = op_names(&plan.ops);
    let measured_s = data_run.measured.as_secs_f64();
    let open = plan.load.is_open();
    let operations: Vec<OpResult> = (0..plan.ops.len())
        .map(|k| {
            OpResult::of(
                &names[k],
                &data_run.totals[k],
                measured_s,
                &interval_counts(plan, data_run, Some(k)),
                open,
            )
        })
        .collect();
    let mut all = OpCounters::default();
    for c in &data_run.totals {
        all.merge(c);
    }
    let total = OpResult::of(
        "total",
        &all,
        measured_s,
        &interval_counts(plan, data_run, None),
        open,
    );
    let mut notes = notes(plan, data_run, &total);
    let latency_modes = modes::find(&all.latency);
    notes.extend(latency_modes.note());
    Ok(RunResult {
        schema_version: result::SCHEMA_VERSION,
        loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
        status: if data_run.interrupted {
            "interrupted"
        } else {
            "complete"
        }
        .to_string(),
        workload: workload_record(&plan.workload, &plan.ops),
        load: serde_json::to_value(&plan.load)?,
        target: TargetRecord {
            url: plan.target.shown(),
            kind: plan.target.scheme().to_string(),
            server_version: prepared.server_version,
        },
        host: host::facts(),
        started_at: humantime::format_rfc3339_millis(started_at).to_string(),
        ended_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        elapsed_s: data_run.elapsed.as_secs_f64(),
        measured_s,
        data_load: data_load(plan, prepared.loaded),
        missed_starts: data_run.missed,
        abandoned_clients: data_run.abandoned,
        operations,
        total,
        intervals: data_run
            .intervals
            .iter()
            .map(|i| result::IntervalRecord::of(i, &names))
            .collect(),
        latency_modes: Some(latency_modes),
        notes,
    })
}

/// Successes of operation `k` (of all operations with `None`) in each full measured interval.
fn interval_counts(plan: &RunPlan, data_run: &RunData, k: Option<usize>) -> Vec<f64> {
    data_run
        .intervals
        .iter()
        .filter(|i: &&engine::IntervalData| !i.warmup && (i.end - i.start) >= plan.load.interval)
        .map(|i| match k {
            Some(k) => i.ops[k].ok as f64,
            None => i.ops.iter().map(|c| c.ok).sum::<u64>() as f64,
        })
        .collect()
}

fn notes(plan: &RunPlan, data_run: &RunData, total: &OpResult) -> Vec<String> {
    let mut notes = Vec::new();
    if data_run.interrupted {
        notes.push("interrupted by Ctrl-C: the figures cover the run until then".to_string());
    }
    if data_run.abandoned > 0 {
        notes.push(format!("{} client(s) were still in an operation when the run ended; those operations are not counted", data_run.abandoned));
    }
    if data_run.missed > 0 {
        notes.push(format!("{} scheduled arrivals never started: the target (or --max-in-flight) could not keep up with the rate", data_run.missed));
    }
    if let (Some(late), true) = (total.late_starts, plan.load.is_open()) {
        if late > 0 {
            notes.push(format!("{late} operations started late against the schedule; their waiting is in the latency figures"));
        }
    }
    notes
}

fn data_load(plan: &RunPlan, loaded: Option<(u64, std::time::Duration)>) -> Option<DataLoadRecord> {
    match (&plan.workload.data, loaded) {
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

fn native_record(op: &NativeOp<ValueKind>, templates: &[Template]) -> serde_json::Value {
    let args: Vec<&str> = templates.iter().map(|t| t.source()).collect();
    match op {
        NativeOp::Sql { query, .. } => serde_json::json!({"sql": query, "params": args}),
        NativeOp::Redis { .. }
        | NativeOp::LdapSearch { .. }
        | NativeOp::LdapBind { .. }
        | NativeOp::LdapAdd { .. }
        | NativeOp::LdapModify { .. }
        | NativeOp::LdapDelete { .. }
        | NativeOp::Http { .. } => serde_json::json!({"kind": op.label(), "args": args}),
    }
}

fn step_record(step: &Step) -> serde_json::Value {
    native_record(&step.op, &step.templates)
}

fn workload_record(w: &Workload, ops: &[OpSpec]) -> serde_json::Value {
    let args = |k: &OpKind| -> serde_json::Value {
        match k {
            OpKind::Nop | OpKind::Connect | OpKind::Authenticate => serde_json::json!({}),
            OpKind::Put { key, value } | OpKind::Update { key, value } => {
                serde_json::json!({"key": key.source(), "value": value.source()})
            }
            OpKind::Get { key } | OpKind::Delete { key } => {
                serde_json::json!({"key": key.source()})
            }
            OpKind::Native(step) => step_record(step),
            OpKind::Tx(steps) => {
                serde_json::json!({"steps": steps.iter().map(step_record).collect::<Vec<_>>()})
            }
        }
    };
    serde_json::json!({
        "name": w.name,
        "description": w.description,
        "source": w.source_name,
        "params": serde_json::to_value(&w.params).unwrap_or_default(),
        "setup": w.setup.iter().map(|s| native_record(s, &[])).collect::<Vec<_>>(),
        "data": w.data.as_ref().map(|d| serde_json::json!({"count": d.count, "key": d.key.source(), "value": d.value.source(), "batch": d.batch})),
        "ops": ops.iter().map(|o| serde_json::json!({
            "name": o.name,
            "weight": o.weight,
            "kind": o.kind.label(),
            "args": args(&o.kind),
            "retry": o.retry.as_ref().map(|r| serde_json::json!({"on": r.on.iter().map(|c| c.name()).collect::<Vec<_>>(), "max": r.max, "backoff_s": r.backoff.as_secs_f64()})),
        })).collect::<Vec<_>>(),
    })
}
