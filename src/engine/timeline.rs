//! The interval grid of a run: warm-up intervals first, then measured ones.
//!
//! The warm-up is cut into intervals of the run's length (the last one may be shorter), so
//! that no interval mixes warm-up and measured operations. A run with a deadline ends its
//! last interval exactly there: `--samples K --interval T` gives exactly K measured intervals.

use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    pub interval: Duration,
    pub warmup: Duration,
    /// Warm-up intervals.
    pub warm: u64,
    /// End of the run since its start, when it has a deadline.
    pub deadline: Option<Duration>,
}

impl Timeline {
    pub fn new(interval: Duration, warmup: Duration, measured: Option<Duration>) -> Timeline {
        let warm = warmup.as_nanos().div_ceil(interval.as_nanos()) as u64;
        Timeline {
            interval,
            warmup,
            warm,
            deadline: measured.map(|m| warmup + m),
        }
    }

    /// The last interval index, for runs with a deadline.
    pub fn last(&self) -> Option<u64> {
        self.deadline.map(|d| {
            let measured = (d - self.warmup)
                .as_nanos()
                .div_ceil(self.interval.as_nanos()) as u64;
            (self.warm + measured).saturating_sub(1)
        })
    }

    pub fn is_warmup(&self, k: u64) -> bool {
        k < self.warm
    }

    /// The interval that holds the moment `elapsed` after the start.
    pub fn index_of(&self, elapsed: Duration) -> u64 {
        let k = if elapsed < self.warmup {
            (elapsed.as_nanos() / self.interval.as_nanos()) as u64
        } else {
            self.warm + ((elapsed - self.warmup).as_nanos() / self.interval.as_nanos()) as u64
        };
        match self.last() {
            Some(last) => k.min(last),
            None => k,
        }
    }

    pub fn start_of(&self, k: u64) -> Duration {
        if k == 0 {
            Duration::ZERO
        } else {
            self.end_of(k - 1)
        }
    }

    pub fn end_of(&self, k: u64) -> Duration {
        let end = if k < self.warm {
            (self.interval * (k as u32 + 1)).min(self.warmup)
        } else {
            self.warmup + self.interval * ((k - self.warm) as u32 + 1)
        };
        match self.deadline {
            Some(d) => end.min(d),
            None => end,
        }
    }
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
    fn runs_without_deadline_go_on() {
        let t = Timeline::new(S, Duration::ZERO, None);
        assert_eq!(t.index_of(100 * S), 100);
        assert_eq!(t.last(), None);
    }
}
