//! A run watched from outside while it goes: the live dashboard (`--dashboard`, or the one
//! a command serves for all its runs) and a shard's stream to its collector (`--collect`).
//! Both are opened before anything connects, so that an address that cannot be bound, a
//! collector that refuses the shard, are bad input before the run.

use crate::live::dashboard::{self, RunInfo, Watch};
use crate::live::link::Link;
use crate::live::wire::{self, Hello};
use crate::plan::RunPlan;
use crate::result::stream::StreamHeader;
use crate::result::{RunResult, TargetRecord, WorkloadRecord};
use anyhow::Result;

/// The dashboard's watch of this run and the link to the collector, when there are.
pub struct Watchers {
    pub dashboard: Option<Watch>,
    pub link: Option<Link>,
}

impl Watchers {
    pub fn open(plan: &RunPlan) -> Result<Watchers> {
        let addr = plan.outputs.dashboard.clone().or_else(dashboard::every_run);
        let dashboard = match addr {
            Some(addr) => Some(dashboard::open(&addr)?.begin(info(plan))),
            None => None,
        };
        let link = match (&plan.outputs.collect, plan.load.shard) {
            (Some(to), Some(shard)) => Some(Link::open(to, hello(plan, shard, to.token.clone()))?),
            _ => None,
        };
        Ok(Watchers { dashboard, link })
    }

    /// The run's header, once the setup and the data load are done.
    pub fn header(&self, header: &StreamHeader) {
        if let Some(link) = &self.link {
            link.header(header);
        }
    }

    /// The clients start: the dashboard's cost is measured from here.
    pub fn mark(&mut self) {
        if let Some(w) = &mut self.dashboard {
            w.mark();
        }
    }

    /// The run's result: the dashboard's cost recorded in it, then the result to the
    /// collector and to the pages.
    pub fn finish(self, result: &mut RunResult) {
        if let Some(w) = &self.dashboard {
            result.dashboard = w.record();
        }
        if let Some(link) = self.link {
            link.finish(result);
        }
        if let Some(w) = self.dashboard {
            w.end(result);
        }
    }
}

fn info(plan: &RunPlan) -> RunInfo {
    RunInfo {
        title: format!("{} on {}", plan.workload.name, plan.target.shown()),
        subtitle: super::describe(&plan.load),
        label: plan.label.clone(),
        ops: plan.ops.iter().map(|o| o.name.clone()).collect(),
        interval_s: plan.load.interval.as_secs_f64(),
        warmup_s: plan.load.warmup.as_secs_f64(),
        planned_s: plan.load.duration.map(|d| d.as_secs_f64()),
        shards: None,
    }
}

/// What the collector checks a shard by, before the shard has a result.
fn hello(plan: &RunPlan, shard: crate::engine::Shard, token: Option<String>) -> Hello {
    Hello {
        stream: wire::STREAM.to_string(),
        version: wire::VERSION,
        token,
        session: format!("{:016x}", rand::random::<u64>()),
        shard: shard.index,
        count: shard.count,
        file: plan.outputs.result.display().to_string(),
        loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
        workload: WorkloadRecord::of(&plan.workload, &plan.ops),
        load: plan.load.clone(),
        target: TargetRecord {
            url: plan.target.shown(),
            kind: plan.target.scheme().to_string(),
            server_version: None,
            tls: None,
        },
    }
}
