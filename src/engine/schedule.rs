//! An open-loop worker's place in the run's arrival schedule: evenly spaced (every M-th
//! arrival of the run's constant schedule) or Poisson (an independent stream of rate R/M).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};

use super::client::{mix_seed, ClientCtx};
use super::{Arrivals, Mode};
use crate::clock::Instant;

/// One open-loop worker's arrivals: every M-th of the run's constant schedule, or an
/// independent Poisson stream of rate R/M (their superposition is Poisson at rate R), like
/// wrk2 per connection.
struct Schedule {
    poisson: bool,
    per_worker: f64,
    rng: SmallRng,
    exp: Option<Exp<f64>>,
}

impl Schedule {
    fn new(ctx: &ClientCtx<'_>, rate: f64, poisson: bool, workers: usize) -> Self {
        let per_worker = rate / workers as f64;
        Schedule {
            poisson,
            per_worker,
            rng: SmallRng::seed_from_u64(mix_seed(ctx.plan.seed ^ 0xA771_7A15, ctx.stream())),
            exp: Exp::new(per_worker).ok(),
        }
    }

    /// The first arrival since the start: worker k of a constant schedule starts k/R in.
    fn first(&mut self, id: u64, rate: f64) -> Duration {
        if self.poisson {
            self.gap()
        } else {
            Duration::from_secs_f64(id as f64 / rate)
        }
    }

    /// The time to the next arrival.
    fn gap(&mut self) -> Duration {
        match (&self.exp, self.poisson) {
            (Some(e), true) => Duration::from_secs_f64(e.sample(&mut self.rng)),
            _ => Duration::from_secs_f64(1.0 / self.per_worker),
        }
    }
}

/// An open-loop worker's place in the run's schedule: the ordinary client (`open`) and each
/// stream of the batch driver (`engine::pipe`) take their arrivals from here, so both
/// follow the same rate law and seeds.
pub(super) struct Due {
    schedule: Schedule,
    /// The intended start of the next arrival.
    pub(super) intended: Instant,
    /// An operation that starts later than this after its intended start is late.
    pub(super) late_after: Duration,
}

impl Due {
    /// The worker's schedule; `None` in a closed loop.
    pub(super) fn of(ctx: &ClientCtx<'_>) -> Option<Due> {
        let Mode::Open {
            rate,
            arrivals,
            late_after,
            ..
        } = ctx.plan.mode
        else {
            return None;
        };
        let poisson = arrivals == Arrivals::Poisson;
        // A shard's workers take their places in the whole run's schedule; with `--pipeline`
        // every stream of a connection is a worker.
        let (rate, workers) = match ctx.plan.shard {
            Some(shard) => (shard.rate.unwrap_or(rate), shard.clients),
            None => (rate, ctx.plan.clients()),
        };
        let mut schedule = Schedule::new(ctx, rate, poisson, workers);
        let intended = ctx.q0 + schedule.first(ctx.stream(), rate);
        Some(Due {
            schedule,
            intended,
            late_after,
        })
    }

    /// Move on to the next arrival.
    pub(super) fn next(&mut self) {
        self.intended += self.schedule.gap();
    }

    /// The arrivals from the next one up to `deadline` (when the worker is behind schedule
    /// at the end): they never started, and are counted as missed.
    pub(super) fn missed_before(&mut self, deadline: Instant) -> u64 {
        let mut missed = 0;
        while self.intended < deadline {
            missed += 1;
            self.next();
        }
        missed
    }
}
