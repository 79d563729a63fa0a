//! An open-loop worker's place in the run's arrival schedule: evenly spaced (every M-th
//! arrival of the run's constant schedule) or Poisson (an independent stream of rate R/M);
//! with stages, the same dealt over the cumulative arrivals of the stages (`stages`).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};

use super::client::{mix_seed, ClientCtx};
use super::stages::Profile;
use super::{Arrivals, LoadPlan, Mode};
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
    fn new(seed: u64, stream: u64, rate: f64, poisson: bool, workers: usize) -> Self {
        let per_worker = rate / workers as f64;
        Schedule {
            poisson,
            per_worker,
            rng: SmallRng::seed_from_u64(mix_seed(seed ^ 0xA771_7A15, stream)),
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

/// One open-loop worker's arrivals in a run with stages: arrival j of the whole run is due
/// where Λ(t) = j; worker k of M takes j = k, k + M, … (constant), or its own unit-rate
/// exponential gaps scaled by M (Poisson: a stream of rate λ(t)/M, whose superposition over
/// the workers is the non-homogeneous process of rate λ(t)).
struct Staged {
    profile: Profile,
    /// The next arrival's place on the run's Λ.
    next: f64,
    /// Between arrivals on Λ: M, or for Poisson M times a unit exponential.
    workers: f64,
    poisson: Option<(SmallRng, Exp<f64>)>,
    /// The stage of the next arrival (arrivals come in order, so the search starts here).
    stage: usize,
}

impl Staged {
    fn step(&mut self) -> f64 {
        match &mut self.poisson {
            Some((rng, exp)) => self.workers * exp.sample(rng),
            None => self.workers,
        }
    }

    /// The next arrival's time since the start; `None` after the last.
    fn next(&mut self) -> Option<Duration> {
        let (at, stage) = self.profile.time_of(self.next, self.stage)?;
        self.stage = stage;
        self.next += self.step();
        Some(at)
    }
}

/// How a worker's arrivals are laid: at one rate, or over the stages.
enum Law {
    Steady(Schedule),
    Staged(Box<Staged>),
}

/// An open-loop worker's place in the run's schedule: the ordinary client (`open`) and each
/// stream of the batch driver (`engine::pipe`) take their arrivals from here, so both
/// follow the same rate law and seeds.
pub(super) struct Due {
    law: Law,
    /// The start of the run.
    q0: Instant,
    /// The intended start of the next arrival.
    pub(super) intended: Instant,
    /// An operation that starts later than this after its intended start is late.
    pub(super) late_after: Duration,
    /// The stage of the next arrival (0 without stages).
    pub(super) stage: usize,
}

impl Due {
    /// The worker's schedule; `None` in a closed loop.
    pub(super) fn of(ctx: &ClientCtx<'_>) -> Option<Due> {
        Due::of_stream(ctx.plan, ctx.stream(), ctx.q0)
    }

    /// The schedule of client stream `stream` (numbered over the whole run) of `plan`, for a
    /// run started at `q0`.
    fn of_stream(plan: &LoadPlan, stream: u64, q0: Instant) -> Option<Due> {
        let Mode::Open {
            rate,
            arrivals,
            late_after,
            ..
        } = plan.mode
        else {
            return None;
        };
        let poisson = arrivals == Arrivals::Poisson;
        // A shard's workers take their places in the whole run's schedule; with `--pipeline`
        // every stream of a connection is a worker.
        let (rate, workers) = match plan.shard {
            Some(shard) => (shard.rate.unwrap_or(rate), shard.clients),
            None => (rate, plan.clients()),
        };
        let mut schedule = Schedule::new(plan.seed, stream, rate, poisson, workers);
        if plan.stages.is_empty() {
            return Some(Due {
                q0,
                intended: q0 + schedule.first(stream, rate),
                law: Law::Steady(schedule),
                late_after,
                stage: 0,
            });
        }
        let mut staged = Staged {
            profile: plan.profile(),
            next: stream as f64,
            workers: workers as f64,
            poisson: poisson.then(|| (schedule.rng, Exp::new(1.0).expect("rate 1 > 0"))),
            stage: 0,
        };
        if staged.poisson.is_some() {
            staged.next = staged.step();
        }
        let mut due = Due {
            q0,
            intended: q0,
            law: Law::Staged(Box::new(staged)),
            late_after,
            stage: 0,
        };
        due.next();
        Some(due)
    }

    /// Move on to the next arrival.
    pub(super) fn next(&mut self) {
        match &mut self.law {
            Law::Steady(schedule) => self.intended += schedule.gap(),
            Law::Staged(staged) => match staged.next() {
                Some(at) => {
                    self.intended = self.q0 + at;
                    self.stage = staged.stage;
                }
                // After the last arrival: the end of the run, which no arrival reaches.
                None => self.intended = self.q0 + staged.profile.end(),
            },
        }
    }

    /// The arrivals from the next one up to `deadline` (when the worker is behind schedule
    /// at the end): they never started, and are counted as missed, by stage (`missed[0]`
    /// without stages).
    pub(super) fn missed_before(&mut self, deadline: Instant, missed: &mut Vec<u64>) {
        while self.intended < deadline {
            if missed.len() <= self.stage {
                missed.resize(self.stage + 1, 0);
            }
            missed[self.stage] += 1;
            self.next();
        }
    }
}

/// The arrivals of open-loop client stream `stream` (numbered over the whole run) before
/// `end`, each given to `f` as its time since the start and its stage: what the engine's
/// worker is given, without running it (`loadrig schedule`).
pub fn arrivals(plan: &LoadPlan, stream: usize, end: Duration, mut f: impl FnMut(Duration, usize)) {
    let q0 = Instant::now();
    if let Some(mut due) = Due::of_stream(plan, stream as u64, q0) {
        while due.intended < q0 + end {
            f(due.intended - q0, due.stage);
            due.next();
        }
    }
}
