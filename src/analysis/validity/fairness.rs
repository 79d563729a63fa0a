//! Fairness between the clients: Jain's index over their totals, and clients starved
//! (completing nothing while the median client completed several) in the intervals judged.

use anyhow::{anyhow, Result};

use super::{Context, Scope};
use crate::engine::spill::IntervalBrief;
use crate::engine::RunData;
use crate::result::validity::{
    jain, median, median_text, starved_in, FairnessSummary, JAIN_MIN_OPS_PER_CLIENT,
};
use crate::stats::thousands;

/// The run's fairness, with a reason when Jain's index is below the `jain` threshold (for
/// clients that completed enough each) and one when any client was starved.
pub(super) fn check(
    run: &RunData,
    scope: &Scope<'_>,
    intervals: &[&IntervalBrief],
    cx: &Context<'_>,
    reasons: &mut Vec<String>,
) -> Result<FairnessSummary> {
    let th = cx.thresholds;
    let clients = scope.clients.len();
    let (fairness, all) = run_fairness(run, scope, intervals, th.starved_median)
        .map_err(|e| anyhow!("reading the per-client counts back: {e}"))?;
    let starved_clients = fairness.starved_clients;
    let per_client = all as f64 / clients.max(1) as f64;
    if let Some(j) = fairness
        .jain
        .filter(|&j| j < th.jain && per_client >= JAIN_MIN_OPS_PER_CLIENT)
    {
        reasons.push(format!(
            "operations were spread unevenly over the clients: Jain's index {j:.2} (per client min {}, median {}, max {})",
            thousands(fairness.min),
            median_text(fairness.median),
            thousands(fairness.max)
        ));
    }
    if starved_clients > 0 {
        reasons.push(format!(
            "{} of {} clients were starved (completed nothing in at least half of the intervals while the median client completed {:.0} or more; Jain's index {})",
            thousands(starved_clients as u64),
            thousands(clients as u64),
            th.starved_median,
            fairness.jain.map_or("-".to_string(), |j| format!("{j:.2}"))
        ));
    }
    Ok(fairness)
}

/// Over `totals`, each client's operations over the measured part, and `judged`, each
/// judged interval's operations per client (in the same client order).
pub fn summary(totals: &[u64], judged: &[&[u64]], starved_median: f64) -> FairnessSummary {
    let mut starved = Starved::new(totals.len(), starved_median);
    for counts in judged {
        starved.add(counts, |_| true);
    }
    summary_with(totals, starved)
}

fn summary_with(totals: &[u64], starved: Starved) -> FairnessSummary {
    let starved_clients = starved
        .count
        .iter()
        .filter(|&&s| s > 0 && s * 2 >= starved.intervals)
        .count();
    let mut sorted = totals.to_vec();
    sorted.sort_unstable();
    FairnessSummary {
        clients: totals.len(),
        min: sorted.first().copied().unwrap_or(0),
        median: median(&sorted),
        max: sorted.last().copied().unwrap_or(0),
        jain: jain(totals),
        starved_clients,
        starved_client_intervals: starved.client_intervals,
    }
}

/// Starved clients counted one judged interval at a time, so that a run's per-client
/// counts need not all be in memory at once.
struct Starved {
    /// Intervals each client was starved in.
    count: Vec<usize>,
    client_intervals: usize,
    intervals: usize,
    threshold: f64,
}

impl Starved {
    fn new(clients: usize, threshold: f64) -> Starved {
        Starved {
            count: vec![0; clients],
            client_intervals: 0,
            intervals: 0,
            threshold,
        }
    }

    /// One interval's counts; `ran(c)`: client `c` ran all of it (the others, which joined
    /// or left during it or did not run, are neither judged nor in the median).
    fn add(&mut self, counts: &[u64], ran: impl Fn(usize) -> bool) {
        let mut sorted: Vec<u64> = (counts.iter().enumerate())
            .filter(|(c, _)| ran(*c))
            .map(|(_, &n)| n)
            .collect();
        sorted.sort_unstable();
        for c in starved_in(counts, median(&sorted), self.threshold) {
            if !ran(c) {
                continue;
            }
            if let Some(s) = self.count.get_mut(c) {
                *s += 1;
            }
            self.client_intervals += 1;
        }
        self.intervals += 1;
    }
}

/// The fairness of the scope's clients: each interval's per-client counts read back from
/// the run's store (src/engine/spill.rs) one at a time, the measured ones summed, the
/// `judged` ones searched for starved clients. Also returns the measured operations of
/// all of them.
fn run_fairness(
    run: &RunData,
    scope: &Scope<'_>,
    judged: &[&IntervalBrief],
    starved_median: f64,
) -> std::io::Result<(FairnessSummary, u64)> {
    let mine = |counts: Vec<u64>| -> Vec<u64> {
        scope
            .clients
            .iter()
            .map(|&c| counts.get(c).copied().unwrap_or(0))
            .collect()
    };
    let mut totals = vec![0u64; scope.clients.len()];
    for i in &scope.measured {
        for (t, c) in totals
            .iter_mut()
            .zip(mine(run.store.per_client(i.index as usize)?))
        {
            *t += c;
        }
    }
    let mut starved = Starved::new(scope.clients.len(), starved_median);
    for i in judged {
        // A client ramp's interval: only the clients that ran all of it.
        let ran_whole = i.ran_whole.unwrap_or(usize::MAX);
        starved.add(&mine(run.store.per_client(i.index as usize)?), |k| {
            scope.clients[k] < ran_whole
        });
    }
    let all = totals.iter().sum();
    Ok((summary_with(&totals, starved), all))
}
