//! The interval grid of a run: warm-up intervals first, then measured ones.
//!
//! The warm-up is cut into intervals of the run's length (the last one may be shorter), so
//! that no interval mixes warm-up and measured operations. A run with a deadline ends its
//! last interval exactly there: `--samples K --interval T` gives exactly K measured intervals.

use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Timeline {
    pub interval: Duration,
    pub warmup: Duration,
    /// Warm-up intervals.
    pub warm: u64,
    /// End of the run since its start, when it has a deadline.
    pub deadline: Option<Duration>,
    /// Where the grid starts again: at the start, at the end of the warm-up, and at each
    /// stage's start, so that no interval spans two of them.
    segments: Arc<[Segment]>,
}

/// A part of the run cut into whole intervals from its start (the last one may be short).
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: Duration,
    /// The index of its first interval.
    first: u64,
    /// The stage it belongs to, in a run with stages.
    stage: Option<usize>,
}

impl Timeline {
    pub fn new(interval: Duration, warmup: Duration, measured: Option<Duration>) -> Timeline {
        let deadline = measured.map(|m| warmup + m);
        Timeline::cut(interval, warmup, deadline, &[])
    }

    /// A run with stages: `starts` holds each stage's start; the run ends at `end`, its
    /// first `warmup` counting as warm-up.
    pub fn staged(
        interval: Duration,
        warmup: Duration,
        starts: &[Duration],
        end: Duration,
    ) -> Self {
        Timeline::cut(interval, warmup, Some(end), starts)
    }

    fn cut(
        interval: Duration,
        warmup: Duration,
        deadline: Option<Duration>,
        stages: &[Duration],
    ) -> Timeline {
        let stage_at = |t: Duration| {
            (!stages.is_empty()).then(|| stages.partition_point(|&s| s <= t).saturating_sub(1))
        };
        let mut cuts: Vec<Duration> = stages.to_vec();
        cuts.push(Duration::ZERO);
        if !warmup.is_zero() {
            cuts.push(warmup);
        }
        cuts.retain(|&c| deadline.is_none_or(|d| c < d) || c.is_zero());
        cuts.sort();
        cuts.dedup();
        let mut segments: Vec<Segment> = Vec::with_capacity(cuts.len());
        for (i, &start) in cuts.iter().enumerate() {
            let first = match i {
                0 => 0,
                _ => {
                    let before = &segments[i - 1];
                    before.first + intervals_in(start - before.start, interval)
                }
            };
            segments.push(Segment {
                start,
                first,
                stage: stage_at(start),
            });
        }
        let warm = segments
            .iter()
            .find(|s| s.start == warmup)
            .map_or(0, |s| s.first);
        Timeline {
            interval,
            warmup,
            warm,
            deadline,
            segments: segments.into(),
        }
    }

    /// The segment that holds interval `k`.
    fn segment_of(&self, k: u64) -> (usize, &Segment) {
        let i = self
            .segments
            .partition_point(|s| s.first <= k)
            .saturating_sub(1);
        (i, &self.segments[i])
    }

    /// Where segment `i` ends: the next one's start, or the deadline.
    fn segment_end(&self, i: usize) -> Option<Duration> {
        self.segments.get(i + 1).map(|s| s.start).or(self.deadline)
    }

    /// The last interval index, for runs with a deadline.
    pub fn last(&self) -> Option<u64> {
        self.deadline.map(|d| {
            let s = self.segments[self.segments.len() - 1];
            (s.first + intervals_in(d.saturating_sub(s.start), self.interval)).saturating_sub(1)
        })
    }

    pub fn is_warmup(&self, k: u64) -> bool {
        k < self.warm
    }

    /// The stage interval `k` belongs to, in a run with stages.
    pub fn stage_of(&self, k: u64) -> Option<usize> {
        self.segment_of(k).1.stage
    }

    /// The last interval of stage `stage` (the last of the run for a stage past the end).
    pub fn last_of_stage(&self, stage: usize) -> u64 {
        match self.segments.iter().find(|s| s.stage > Some(stage)) {
            Some(next) => next.first.saturating_sub(1),
            None => self.last().unwrap_or(u64::MAX),
        }
    }

    /// The interval that holds the moment `elapsed` after the start.
    pub fn index_of(&self, elapsed: Duration) -> u64 {
        let i = self
            .segments
            .partition_point(|s| s.start <= elapsed)
            .saturating_sub(1);
        let s = &self.segments[i];
        let k = s.first + whole(elapsed - s.start, self.interval);
        match self.last() {
            Some(last) => k.min(last),
            None => k,
        }
    }

    pub fn start_of(&self, k: u64) -> Duration {
        let (_, s) = self.segment_of(k);
        s.start + times(self.interval, k - s.first)
    }

    pub fn end_of(&self, k: u64) -> Duration {
        let (i, s) = self.segment_of(k);
        let end = s.start + times(self.interval, k - s.first + 1);
        match self.segment_end(i) {
            Some(d) => end.min(d),
            None => end,
        }
    }
}

/// Whole intervals of `interval` in `d`.
fn whole(d: Duration, interval: Duration) -> u64 {
    (d.as_nanos() / interval.as_nanos().max(1)) as u64
}

/// Intervals of `interval` that cover `d` (the last one may be short).
fn intervals_in(d: Duration, interval: Duration) -> u64 {
    d.as_nanos().div_ceil(interval.as_nanos().max(1)) as u64
}

fn times(interval: Duration, n: u64) -> Duration {
    let ns = interval.as_nanos() * u128::from(n);
    Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn samples_give_exactly_k_measured_intervals() {
        let t = Timeline::new(10 * S, Duration::ZERO, Some(30 * S));
        assert_eq!(t.last(), Some(2));
        assert_eq!(t.index_of(29 * S), 2);
        assert_eq!(t.index_of(31 * S), 2);
        assert_eq!(t.end_of(2), 30 * S);
    }

    #[test]
    fn warmup_is_cut_at_its_end() {
        let t = Timeline::new(2 * S, 3 * S, Some(4 * S));
        assert_eq!(t.warm, 2);
        assert_eq!((t.start_of(1), t.end_of(1)), (2 * S, 3 * S));
        assert_eq!((t.start_of(2), t.end_of(2)), (3 * S, 5 * S));
        assert!(t.is_warmup(1) && !t.is_warmup(2));
        assert_eq!(t.index_of(Duration::from_millis(3500)), 2);
        assert_eq!(t.last(), Some(3));
        assert_eq!(t.end_of(3), 7 * S);
    }

    #[test]
    fn a_deadline_between_boundaries_cuts_the_last_interval() {
        // 2.5 s in 1 s intervals: three intervals, the last one half long.
        let t = Timeline::new(S, Duration::ZERO, Some(S * 5 / 2));
        assert_eq!(t.last(), Some(2));
        assert_eq!((t.start_of(2), t.end_of(2)), (2 * S, S * 5 / 2));
        assert_eq!(t.index_of(S * 5 / 2), 2);
    }

    #[test]
    fn a_boundary_belongs_to_the_interval_it_starts() {
        let t = Timeline::new(2 * S, 4 * S, None);
        assert_eq!(t.warm, 2, "a warm-up of whole intervals is not cut");
        assert_eq!(t.index_of(2 * S), 1);
        assert_eq!(t.index_of(4 * S), 2);
        assert!(t.is_warmup(1) && !t.is_warmup(2));
        assert_eq!((t.start_of(2), t.end_of(2)), (4 * S, 6 * S));
    }

    #[test]
    fn stages_cut_the_grid_and_name_each_interval() {
        // Stages at 0, 2.5 s and 4 s, ending at 6 s, 1 s intervals, 1.5 s of warm-up.
        let t = Timeline::staged(S, S * 3 / 2, &[Duration::ZERO, S * 5 / 2, 4 * S], 6 * S);
        let spans: Vec<(f64, f64, Option<usize>)> = (0..=t.last().unwrap())
            .map(|k| {
                (
                    t.start_of(k).as_secs_f64(),
                    t.end_of(k).as_secs_f64(),
                    t.stage_of(k),
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                (0.0, 1.0, Some(0)),
                (1.0, 1.5, Some(0)),
                (1.5, 2.5, Some(0)),
                (2.5, 3.5, Some(1)),
                (3.5, 4.0, Some(1)),
                (4.0, 5.0, Some(2)),
                (5.0, 6.0, Some(2)),
            ]
        );
        assert_eq!(t.warm, 2);
        assert_eq!(t.index_of(S * 5 / 2), 3);
        assert_eq!(t.index_of(4 * S - Duration::from_nanos(1)), 4);
        assert_eq!(
            (t.last_of_stage(0), t.last_of_stage(1), t.last_of_stage(2)),
            (2, 4, 6)
        );
        assert_eq!(t.index_of(60 * S), 6);
    }

    #[test]
    fn runs_without_deadline_go_on() {
        let t = Timeline::new(S, Duration::ZERO, None);
        assert_eq!(t.index_of(100 * S), 100);
        assert_eq!(t.last(), None);
    }
}
