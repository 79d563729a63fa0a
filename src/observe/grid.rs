//! The run's interval grid as the observer follows it: boundary k is where interval k
//! starts, counted from the run's start. A run's grid is the engine's (its warm-up cut at
//! its end, its last interval ending at the deadline); `loadrig observe`'s is uniform.

use std::sync::Arc;
use std::time::Duration;

type Boundary = dyn Fn(u64) -> Option<Duration> + Send + Sync;

/// Where the observer reads: boundary k at `start + at(k)`; interval k runs from boundary
/// k to boundary k + 1.
#[derive(Clone)]
pub struct Grid {
    /// The nominal interval: a user query's default period, and what a reading taken a
    /// little early is measured against.
    pub interval: Duration,
    boundary: Arc<Boundary>,
}

impl Grid {
    /// A boundary every `interval`, for ever.
    pub fn uniform(interval: Duration) -> Grid {
        Grid {
            interval,
            boundary: Arc::new(move |k| interval.checked_mul(u32::try_from(k).ok()?)),
        }
    }

    /// A run's grid: `boundary(k)` is where interval k starts after the run's start (0 for
    /// k = 0), increasing, and None past the run's end (the last boundary given ends its
    /// last interval).
    pub fn of_fn(
        interval: Duration,
        boundary: impl Fn(u64) -> Option<Duration> + Send + Sync + 'static,
    ) -> Grid {
        Grid {
            interval,
            boundary: Arc::new(boundary),
        }
    }

    /// Boundary k's time after the start; None past the end.
    pub fn at(&self, k: u64) -> Option<Duration> {
        (self.boundary)(k)
    }

    /// The first boundary from `from` on that lies after `elapsed`; None when none does.
    pub fn next_after(&self, elapsed: Duration, from: u64) -> Option<u64> {
        let mut k = from;
        loop {
            match self.at(k) {
                Some(b) if b <= elapsed => k += 1,
                Some(_) => return Some(k),
                None => return None,
            }
        }
    }
}

impl std::fmt::Debug for Grid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grid")
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn uniform_boundaries_go_on() {
        let g = Grid::uniform(S);
        assert_eq!(g.at(3), Some(3 * S));
        assert_eq!(g.next_after(Duration::from_millis(2500), 0), Some(3));
        assert_eq!(
            g.next_after(2 * S, 0),
            Some(3),
            "a boundary belongs to the interval it starts"
        );
    }

    #[test]
    fn a_grid_with_an_end_has_no_boundary_after_it() {
        let g = Grid::of_fn(S, |k| (k <= 2).then(|| S * k as u32));
        assert_eq!(g.next_after(Duration::from_millis(1500), 0), Some(2));
        assert_eq!(g.next_after(Duration::from_millis(2500), 0), None);
    }
}
