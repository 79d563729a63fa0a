//! Load that changes during a run (`--stages`, `[[load.stage]]`): the stages as the plan
//! records them, and what the clients and the collector read from them: the cumulative
//! arrivals of an open loop (Λ, and the time at which it reaches a count), and which clients
//! a closed loop runs at each moment.
//!
//! An open loop's arrivals follow the integral of its piecewise-linear rate exactly: arrival
//! j of the whole run is due where Λ(t) = j (Λ inverted stage by stage; within a linear
//! ramp, the root of a quadratic), dealt over the workers as a constant rate's are (worker k
//! of M serves arrivals k, k + M, …); Poisson arrivals are unit-rate exponential gaps mapped
//! through Λ⁻¹ (the time change of a non-homogeneous Poisson process). A closed loop's
//! client count at a moment is `from` plus the whole steps its ramp has made, so the clients
//! join (or leave) at evenly spaced instants, in integer nanoseconds; client of rank r runs
//! while the count is above r.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::load_plan::{secs, share};

/// What a stage holds: an open loop's rate, or a closed loop's clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    /// Arrivals per second (open loop).
    Rate,
    /// Clients running operations back to back (closed loop).
    Clients,
}

impl StageKind {
    pub fn unit(self) -> &'static str {
        match self {
            StageKind::Rate => "/s",
            StageKind::Clients => "c",
        }
    }
}

/// One stage: for `duration`, the rate (or client count) goes linearly from `from` to `to`
/// (equal for a constant stage).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stage {
    /// Its name as given, else its number from 1.
    pub name: String,
    pub kind: StageKind,
    pub from: f64,
    pub to: f64,
    /// Seconds in the result file.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub duration: Duration,
    /// A `shape = "step"` stage is run as constant steps: the name of the stage it was cut
    /// from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_of: Option<String>,
}

impl Stage {
    /// The load is the same from its start to its end.
    pub fn is_constant(&self) -> bool {
        self.from == self.to
    }

    /// The highest rate or client count it reaches.
    pub fn peak(&self) -> f64 {
        self.from.max(self.to)
    }

    /// As `--stages` writes it: `30s:0..2000/s`, `spike=10s:64c`.
    pub fn compact(&self) -> String {
        let d = humantime::format_duration(self.duration);
        let unit = self.kind.unit();
        let level = if self.is_constant() {
            format!("{}{unit}", self.from)
        } else {
            format!("{}..{}{unit}", self.from, self.to)
        };
        format!("{}={d}:{level}", self.name)
    }
}

/// The stages laid end to end from the start of the run.
#[derive(Debug, Clone)]
pub struct Profile {
    stages: Vec<Stage>,
    /// When each stage starts, and after the last, the end of the run.
    starts: Vec<Duration>,
    /// Λ (arrivals of the whole run) at each stage's start, and after the last, in all.
    lambda: Vec<f64>,
}

impl Profile {
    pub fn new(stages: &[Stage]) -> Profile {
        let mut starts = vec![Duration::ZERO];
        let mut lambda = vec![0.0];
        for s in stages {
            starts.push(starts[starts.len() - 1] + s.duration);
            let arrivals = (s.from + s.to) / 2.0 * s.duration.as_secs_f64();
            lambda.push(lambda[lambda.len() - 1] + arrivals);
        }
        Profile {
            stages: stages.to_vec(),
            starts,
            lambda,
        }
    }

    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// Where stage `i` starts (`i` = the number of stages: the end of the run).
    pub fn start(&self, i: usize) -> Duration {
        self.starts[i.min(self.stages.len())]
    }

    pub fn end(&self) -> Duration {
        self.starts[self.stages.len()]
    }

    /// The stage that holds the moment `t` after the start (the last one from its end on).
    pub fn stage_at(&self, t: Duration) -> usize {
        let after = self.starts[1..].partition_point(|&s| s <= t);
        after.min(self.stages.len().saturating_sub(1))
    }

    /// Λ(t): the arrivals of the whole run due before `t`, as a real number.
    pub fn lambda(&self, t: Duration) -> f64 {
        if self.stages.is_empty() {
            return 0.0;
        }
        if t >= self.end() {
            return self.lambda[self.stages.len()];
        }
        let i = self.stage_at(t);
        let s = &self.stages[i];
        let tau = (t - self.starts[i]).as_secs_f64();
        let d = s.duration.as_secs_f64();
        self.lambda[i] + s.from * tau + (s.to - s.from) * tau * tau / (2.0 * d)
    }

    /// All the arrivals of the run, as a real number.
    pub fn arrivals(&self) -> f64 {
        self.lambda[self.stages.len()]
    }

    /// Λ⁻¹(x): when the run's arrivals reach `x`, and in which stage; `None` at or beyond
    /// the run's end. `from` is the stage to search from (arrivals come in order, so a
    /// worker keeps it between calls).
    pub fn time_of(&self, x: f64, from: usize) -> Option<(Duration, usize)> {
        let mut i = from;
        while i < self.stages.len() && self.lambda[i + 1] <= x {
            i += 1;
        }
        let s = self.stages.get(i)?;
        let left = (x - self.lambda[i]).max(0.0);
        let d = s.duration.as_secs_f64();
        // Λ within the stage: from·τ + a·τ², a = (to − from)/2d; the root of a·τ² + from·τ
        // − left = 0 written so that it stays exact as a → 0 (and for ramps down).
        let a = (s.to - s.from) / (2.0 * d);
        let disc = (s.from * s.from + 4.0 * a * left).max(0.0);
        let denom = s.from + disc.sqrt();
        let tau = if denom > 0.0 { 2.0 * left / denom } else { 0.0 };
        let at = self.starts[i] + Duration::from_secs_f64(tau.clamp(0.0, d));
        // Rounding may place it a nanosecond past the stage: it still belongs to stage i.
        Some((
            at.min(self.starts[i + 1].saturating_sub(Duration::from_nanos(1))),
            i,
        ))
    }

    /// The clients of the whole run that a closed loop runs at `t`.
    pub fn clients_at(&self, t: Duration) -> u64 {
        if self.stages.is_empty() {
            return 0;
        }
        let i = self.stage_at(t);
        let s = &self.stages[i];
        let (a, b) = (s.from as u64, s.to as u64);
        if t >= self.end() {
            return b;
        }
        let tau = (t - self.starts[i]).as_nanos();
        let d = s.duration.as_nanos().max(1);
        if b >= a {
            a + ((b - a) as u128 * tau / d) as u64
        } else {
            a - ((a - b) as u128 * tau / d) as u64
        }
    }

    /// When the client of rank `rank` (it runs while the count is above its rank) runs next,
    /// from `t` on: `Some((join, leave))`, with `join` at or before `t` when it runs at `t`;
    /// `None` when it does not run again.
    pub fn span_of(&self, rank: u64, t: Duration) -> Option<(Duration, Duration)> {
        let mut join: Option<Duration> = None;
        for i in self.stage_at(t)..self.stages.len() {
            let (start, end) = (self.starts[i], self.starts[i + 1]);
            let (on_from, on_until) = self.on_in(i, rank);
            match join {
                // Running at the end of the stage before: it goes on only if this stage
                // runs it from its start.
                Some(j) if on_from > start || on_until <= start => return Some((j, start)),
                Some(j) if on_until < end => return Some((j, on_until)),
                Some(_) => {}
                None => {
                    let from = on_from.max(t);
                    if on_until > from {
                        if on_until < end {
                            return Some((from, on_until));
                        }
                        join = Some(from);
                    }
                }
            }
        }
        join.map(|j| (j, Duration::MAX))
    }

    /// The part of stage `i` in which rank `rank` runs: (from, until), empty when from ≥
    /// until. A ramp up adds rank r at the (r − from + 1)-th of its even steps, a ramp down
    /// removes it at the (from − r)-th.
    fn on_in(&self, i: usize, rank: u64) -> (Duration, Duration) {
        let s = &self.stages[i];
        let (start, end) = (self.starts[i], self.starts[i + 1]);
        let (a, b) = (s.from as u64, s.to as u64);
        let d = s.duration.as_nanos();
        let at =
            |steps: u64, of: u64| start + nanos((d * steps as u128).div_ceil(of.max(1) as u128));
        let never = (end, end);
        if b >= a {
            match rank {
                r if r < a => (start, end),
                r if r >= b => never,
                r => (at(r - a + 1, b - a), end),
            }
        } else {
            match rank {
                r if r < b => (start, end),
                r if r >= a => never,
                r => (start, at(a - r, a - b)),
            }
        }
    }
}

fn nanos(n: u128) -> Duration {
    Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32)
}

/// The rank of client stream `stream` (numbered over the whole run) in the order clients
/// join a closed loop's ramp: the shards' clients take turns (the first client of each
/// shard, then the second of each, …), so that each shard runs its share of every stage;
/// unsharded, a client's rank is its number.
pub fn rank(stream: usize, all: usize, shards: usize) -> u64 {
    let shards = shards.max(1);
    let Some(i) = (0..shards).find(|&i| {
        let (first, n) = share(all, shards, i);
        (first..first + n).contains(&stream)
    }) else {
        return stream as u64;
    };
    let j = stream - share(all, shards, i).0;
    let before: usize = (0..shards)
        .map(|k| {
            let n = share(all, shards, k).1;
            n.min(j) + usize::from(k < i && n > j)
        })
        .sum();
    before as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn stage(kind: StageKind, from: f64, to: f64, secs: u64) -> Stage {
        Stage {
            name: "s".into(),
            kind,
            from,
            to,
            duration: S * secs as u32,
            step_of: None,
        }
    }

    #[test]
    fn a_ramp_from_zero_schedules_half_its_peak_times_its_length() {
        let p = Profile::new(&[stage(StageKind::Rate, 0.0, 1000.0, 10)]);
        assert!((p.arrivals() - 5000.0).abs() < 1e-9);
        let mut at = 0;
        let mut last = Duration::ZERO;
        let mut n = 0;
        while let Some((t, i)) = p.time_of(n as f64, at) {
            assert!(t >= last, "arrivals in order");
            last = t;
            at = i;
            n += 1;
        }
        assert_eq!(n, 5000);
        // Λ(5 s) = 1000 · 25 / 20 = 1250: arrivals 0..1249 are before 5 s.
        let (t, _) = p.time_of(1250.0, 0).unwrap();
        assert!((t.as_secs_f64() - 5.0).abs() < 1e-9, "{t:?}");
        assert!((p.lambda(5 * S) - 1250.0).abs() < 1e-9);
    }

    #[test]
    fn inverse_and_integral_agree_across_stages() {
        let p = Profile::new(&[
            stage(StageKind::Rate, 100.0, 100.0, 2),
            stage(StageKind::Rate, 100.0, 400.0, 3),
            stage(StageKind::Rate, 400.0, 0.0, 1),
            stage(StageKind::Rate, 0.0, 0.0, 1),
            stage(StageKind::Rate, 50.0, 50.0, 2),
        ]);
        for x in [0.0, 1.0, 199.5, 200.0, 500.0, 949.0, 1150.0, 1199.0, 1249.9] {
            let (t, i) = p.time_of(x, 0).unwrap();
            assert!((p.lambda(t) - x).abs() < 1e-6, "{x}: {t:?} in {i}");
        }
        // Nothing is due in the stage at rate 0: the arrival after it waits for the next.
        assert_eq!(p.time_of(1150.0, 0).map(|(t, i)| (i, t)), Some((4, 7 * S)));
        assert_eq!(p.time_of(1200.0, 0).map(|(t, i)| (i, t)), Some((4, 8 * S)));
        assert!(p.time_of(p.arrivals(), 0).is_none());
    }

    #[test]
    fn a_client_ramp_adds_clients_at_even_steps() {
        let p = Profile::new(&[
            stage(StageKind::Clients, 1.0, 4.0, 3),
            stage(StageKind::Clients, 4.0, 4.0, 1),
            stage(StageKind::Clients, 4.0, 2.0, 2),
        ]);
        let counts: Vec<u64> = (0..7).map(|s| p.clients_at(S * s)).collect();
        assert_eq!(counts, [1, 2, 3, 4, 4, 3, 2]);
        assert_eq!(
            p.span_of(0, Duration::ZERO),
            Some((Duration::ZERO, Duration::MAX))
        );
        assert_eq!(p.span_of(1, Duration::ZERO), Some((S, Duration::MAX)));
        assert_eq!(p.span_of(3, Duration::ZERO), Some((3 * S, 5 * S)));
        assert_eq!(p.span_of(2, Duration::ZERO), Some((2 * S, Duration::MAX)));
        assert_eq!(p.span_of(3, 5 * S), None);
        // Every moment: the ranks running are exactly the count.
        for ms in (0..6000).step_by(250) {
            let t = Duration::from_millis(ms);
            let running = (0..4)
                .filter(|&r| p.span_of(r, t).is_some_and(|(j, l)| j <= t && t < l))
                .count() as u64;
            assert_eq!(running, p.clients_at(t), "at {t:?}");
        }
    }

    #[test]
    fn shards_take_turns_in_the_ramp() {
        // 5 clients over 2 shards: shard 0 has 0, 1, 2 and shard 1 has 3, 4.
        let ranks: Vec<u64> = (0..5).map(|c| rank(c, 5, 2)).collect();
        assert_eq!(ranks, [0, 2, 4, 1, 3]);
        assert_eq!(
            (0..4).map(|c| rank(c, 4, 1)).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }
}
