//! A run's observation of its server put into its result: each observed interval beside
//! the engine's (by index), the run's server record made from them with what observing cost,
//! and the bottleneck verdict; and the same record made again from the intervals of a
//! merged or recovered run.

use crate::analysis::{bottleneck, server};
use crate::observe::{Observation, ServerInterval};
use crate::result::server::{CostRecord, ServerIntervalRecord, ServerRecord, ServerTotals};
use crate::result::RunResult;

/// Put `observation` into `result`: `shard` is the shard that observed (under `--shard`).
pub fn attach(result: &mut RunResult, observation: Observation, shard: Option<usize>) {
    let Observation {
        target,
        behind,
        intervals,
        unavailable,
        cost,
        ..
    } = observation;
    for o in intervals {
        // The engine numbers its records from 1, the observer its intervals from 0.
        if let Some(i) = result.intervals.iter_mut().find(|i| i.index == o.index + 1) {
            i.server = Some(ServerIntervalRecord::from(o));
        }
    }
    let refused = unavailable
        .iter()
        .find(|u| u.what == "observation")
        .map(|u| u.to_string());
    if let Some(why) = refused {
        result
            .notes
            .push(format!("the server was not observed: {why}"));
    }
    let cost = cost_record(result, cost);
    let base = ServerRecord {
        unavailable,
        cost: Some(cost),
        observed_by_shard: shard,
        ..empty(target, behind)
    };
    finish(result, base);
}

/// Make the server record and the verdict again from the intervals: a merged run keeps
/// the observing shard's record (its URLs and cost), a recovered one starts from its target.
pub fn rebuild(result: &mut RunResult) {
    let observed = result.intervals.iter().any(|i| i.server.is_some());
    let base = match result.server.take() {
        Some(s) => s,
        None if observed => empty(
            result.target.url.clone(),
            result.load.observe_behind.clone(),
        ),
        None => {
            result.bottleneck = None;
            return;
        }
    };
    finish(result, base);
}

fn finish(result: &mut RunResult, base: ServerRecord) {
    let record = server::summarize(result, base);
    result.bottleneck = Some(bottleneck::judge(result, &record));
    result.server = Some(record);
}

fn empty(target: String, behind: Option<String>) -> ServerRecord {
    ServerRecord {
        target,
        behind,
        observed_by_shard: None,
        unavailable: Vec::new(),
        cost: None,
        measured: ServerTotals::default(),
        behind_measured: None,
        figures: Default::default(),
        decomposition: Vec::new(),
        matching: String::new(),
        lock_wait_matching: String::new(),
        unmatched: Vec::new(),
    }
}

/// The observer's cost with its shares of the run's: the rig's CPU over every interval,
/// the server's statement time over every interval (the observer's own added), and the
/// operations completed.
fn cost_record(result: &RunResult, cost: crate::observe::ObserverCost) -> CostRecord {
    let rig_cpu: f64 = result
        .intervals
        .iter()
        .filter_map(|i| i.rig.as_ref())
        .map(|r| r.cpu_user_s + r.cpu_system_s)
        .sum();
    let statements: f64 = result
        .intervals
        .iter()
        .filter_map(|i| i.server.as_ref())
        .map(|s| {
            let time = |x: &ServerInterval| x.all_statement_time_ms().unwrap_or(0.0);
            time(&s.target) + s.behind.as_ref().map_or(0.0, time)
        })
        .sum();
    let done: u64 = result.intervals.iter().map(|i| i.ok + i.errors).sum();
    CostRecord {
        cpu_share: (rig_cpu > 0.0).then(|| cost.cpu_s / rig_cpu),
        server_time_share: cost
            .server_time_ms
            .map(|own| own / (statements + own).max(f64::MIN_POSITIVE)),
        queries_per_op: (done > 0).then(|| cost.queries as f64 / done as f64),
        cost,
    }
}
