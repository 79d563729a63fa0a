//! The result of a run, from the plan and what the engine measured.

use std::time::SystemTime;

use crate::analysis::modes;
use crate::engine::{Prepared, RunData};
use crate::plan::RunPlan;
use crate::report::host;
use crate::result::{RunFacts, RunResult};

pub fn result(
    plan: &RunPlan,
    data_run: &RunData,
    prepared: Prepared,
    started_at: SystemTime,
) -> anyhow::Result<RunResult> {
    RunResult::build(
        RunFacts {
            workload: &plan.workload,
            ops: &plan.ops,
            plan: &plan.load,
            target_url: plan.target.shown(),
            target_kind: plan.target.scheme().to_string(),
            prepared,
            host: host::facts(),
            started_at,
            thresholds: plan.thresholds,
        },
        data_run,
        modes::find,
    )
}
