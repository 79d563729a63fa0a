//! Change points in a series of runs (throughput or a percentile, one value per run, in
//! order): where did the level shift, by how much, and how sure is it.
//!
//! # Method
//!
//! E-divisive means (Matteson & James, 2014, "A Nonparametric Approach for Multiple Change
//! Point Analysis of Multivariate Data", JASA 109:505), as MongoDB's CI (Daly et al., 2020,
//! "The Use of Change Point Detection to Identify Software Performance Regressions in a
//! Continuous Integration System", ICPE) and Hunter use it: bisection on the energy
//! distance. For a split of a segment into X (m points) and Y (k points), the statistic is
//!
//! `q = m·k/(m+k) · (2·mean|x−y| − mean|x−x'| − mean|y−y'|)`
//!
//! (exponent α = 1), maximised over the split; the end of the split is the segment's end, as
//! in those tools. The best split over all current segments is tested by permutation: the
//! segment's values are shuffled (seeded, so results are reproducible) and the maximum
//! recomputed; p = (1 + #{shuffled ≥ observed}) / (1 + permutations). Significant at the
//! level asked (5 %): the point is kept, its segment split, and the search repeats; else it
//! stops. Each shift's size is the change of the medians of the segments on either side.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

/// How to search.
#[derive(Debug, Clone)]
pub struct Options {
    /// A change point is kept when its permutation p value is below this.
    pub alpha: f64,
    pub permutations: usize,
    pub seed: u64,
    /// Fewest points on either side of a change point.
    pub min_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.05,
            permutations: 999,
            seed: 0x00C4_A26E,
            min_size: 2,
        }
    }
}

/// A change point: the level shifted between `index − 1` and `index`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    /// The first point of the new level.
    pub index: usize,
    pub p_value: f64,
    /// Medians of the segments just before and after.
    pub before: f64,
    pub after: f64,
    /// `after / before − 1`; none when `before` is zero.
    pub change: Option<f64>,
}

/// The change points of `series`, in order of index.
pub fn find(series: &[f64], opts: &Options) -> Vec<ChangePoint> {
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let min = opts.min_size.max(1);
    let mut cuts: Vec<(usize, f64)> = Vec::new();
    loop {
        let bounds = boundaries(series.len(), &cuts);
        let Some((at, q)) = best_of_segments(series, &bounds, min) else {
            break;
        };
        let p = permutation_p(series, &bounds, q, min, opts.permutations, &mut rng);
        if p >= opts.alpha {
            break;
        }
        cuts.push((at, p));
        cuts.sort_by_key(|c| c.0);
    }
    let bounds = boundaries(series.len(), &cuts);
    cuts.iter()
        .enumerate()
        .map(|(k, &(index, p_value))| {
            let before = median(&series[bounds[k]..index]);
            let after = median(&series[index..bounds[k + 2]]);
            ChangePoint {
                index,
                p_value,
                before,
                after,
                change: (before != 0.0).then(|| after / before - 1.0),
            }
        })
        .collect()
}

/// 0, the cuts, and `n`.
fn boundaries(n: usize, cuts: &[(usize, f64)]) -> Vec<usize> {
    std::iter::once(0)
        .chain(cuts.iter().map(|c| c.0))
        .chain(std::iter::once(n))
        .collect()
}

/// The split of `x` with the largest statistic (its index and value), with at least `min`
/// points on each side; none when `x` is too short.
///
/// Moving the split one point right moves point t from Y to X: X's within-sum gains t's
/// distances to X, Y's loses t's distances to the rest of Y, and the cross-sum changes by
/// the difference, so all splits cost O(n²) together.
fn best_split(x: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = x.len();
    if n < 2 * min {
        return None;
    }
    let to = |t: usize, r: std::ops::Range<usize>| r.map(|j| (x[t] - x[j]).abs()).sum::<f64>();
    let (mut within_x, mut cross) = (0.0, 0.0);
    let mut within_y = (0..n).map(|t| to(t, t + 1..n)).sum::<f64>();
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..=n - min {
        let t = tau - 1;
        let (left, right) = (to(t, 0..t), to(t, tau..n));
        within_x += left;
        within_y -= right;
        cross += right - left;
        if tau < min {
            continue;
        }
        let (m, k) = (tau as f64, (n - tau) as f64);
        let pairs = |c: f64| if c > 1.0 { c * (c - 1.0) / 2.0 } else { 1.0 };
        let e = 2.0 * cross / (m * k) - within_x / pairs(m) - within_y / pairs(k);
        let q = m * k / (m + k) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The best split over all segments (between consecutive `bounds`): its index in `series`
/// and its statistic.
fn best_of_segments(series: &[f64], bounds: &[usize], min: usize) -> Option<(usize, f64)> {
    bounds
        .windows(2)
        .filter_map(|w| best_split(&series[w[0]..w[1]], min).map(|(tau, q)| (w[0] + tau, q)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The permutation p value of the best split's statistic `q`: each segment shuffled within
/// itself, and the best split over all of them taken, as the observed one was (Matteson &
/// James, 2014, §3.1).
fn permutation_p(
    series: &[f64],
    bounds: &[usize],
    q: f64,
    min: usize,
    permutations: usize,
    rng: &mut SmallRng,
) -> f64 {
    let mut shuffled = series.to_vec();
    let mut as_large = 0;
    for _ in 0..permutations {
        for w in bounds.windows(2) {
            shuffled[w[0]..w[1]].shuffle(rng);
        }
        if best_of_segments(&shuffled, bounds, min).is_some_and(|(_, s)| s >= q - 1e-12 * q.abs()) {
            as_large += 1;
        }
    }
    (1 + as_large) as f64 / (1 + permutations) as f64
}

/// The median of a non-empty slice.
pub fn median(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    fn noisy(seed: u64, levels: &[(usize, f64)]) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let noise = Normal::new(0.0, 1.0).unwrap();
        levels
            .iter()
            .flat_map(|&(n, level)| (0..n).map(|_| level).collect::<Vec<_>>())
            .map(|l| l + noise.sample(&mut rng))
            .collect()
    }

    #[test]
    fn one_step_is_found_at_its_index_with_its_size() {
        // 100 ± 1 for 12 runs, then 110 ± 1 for 8.
        let x = noisy(1, &[(12, 100.0), (8, 110.0)]);
        let found = find(&x, &Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 12);
        assert!(found[0].p_value < 0.01, "{found:?}");
        assert!((found[0].change.unwrap() - 0.10).abs() < 0.01, "{found:?}");
        assert!((found[0].before - 100.0).abs() < 1.0 && (found[0].after - 110.0).abs() < 1.0);
    }

    #[test]
    fn two_steps_are_both_found() {
        let x = noisy(2, &[(10, 100.0), (10, 80.0), (10, 95.0)]);
        let found = find(&x, &Options::default());
        let at: Vec<usize> = found.iter().map(|c| c.index).collect();
        assert_eq!(at, [10, 20], "{found:?}");
        assert!(found[0].change.unwrap() < -0.15 && found[1].change.unwrap() > 0.15);
    }

    #[test]
    fn a_flat_history_has_no_change_point_at_the_five_percent_level() {
        // Under no change the first test rejects with probability ≤ 5 % (an exact
        // permutation test), so over 100 independent histories the count of any finding is
        // at most Binomial(100, 0.05): P(X ≥ 12) ≈ 0.004. More than 11 means the test is
        // miscalibrated.
        let opts = Options {
            permutations: 199,
            ..Options::default()
        };
        let false_alarms = (0..100)
            .filter(|&seed| {
                let x = noisy(1000 + seed, &[(20, 50.0)]);
                !find(
                    &x,
                    &Options {
                        seed,
                        ..opts.clone()
                    },
                )
                .is_empty()
            })
            .count();
        assert!(
            false_alarms <= 11,
            "{false_alarms} of 100 flat histories had a change point"
        );
    }

    #[test]
    fn the_split_statistic_matches_its_definition() {
        // x = [0, 0, 3]: split at 2, X = {0, 0}, Y = {3}: cross mean 3, X within 0, Y within
        // 0 (one point): q = 2·1/3 · 2·3 = 4.
        assert_eq!(best_split(&[0.0, 0.0, 3.0], 1), Some((2, 4.0)));
        assert_eq!(best_split(&[1.0, 2.0, 3.0], 2), None);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
