//! The shift function: how far NEW's latency distribution lies from BASE's at each decile and
//! at p95, p99 and p99.9, each difference with a simultaneous 95 % interval, so that "only
//! the tail moved" and "everything moved by 20 µs" look different. Beside it, two summary
//! distances between the whole distributions: Kolmogorov-Smirnov and Wasserstein-1.
//!
//! # Methods
//!
//! - **Quantiles**: the Harrell-Davis estimator (Harrell & Davis, 1982), a weighted mean of
//!   all order statistics with Beta(q(n+1), (1−q)(n+1)) weights, as in Wilcox's shift
//!   function (Doksum & Sievers, 1976; Wilcox, 1995; Rousselet, Pernet & Wilcox, 2017,
//!   "Beyond differences in means"). A histogram holds `c` copies of each bucket's value, so
//!   a bucket's weight is the Beta CDF's increase across its cumulative counts,
//!   `I(C_i/n) − I(C_{i−1}/n)`: exact for the expanded sample, one incomplete Beta per bucket
//!   boundary instead of one per value, and only near the quantile, where the weights are
//!   not negligible (found by binary search on the Beta CDF).
//! - **Intervals**: a two-level bootstrap (Davison & Hinkley, 1997, §3.8): each replicate
//!   draws runs with replacement, then each drawn run's measured intervals with replacement,
//!   so run-to-run noise counts whenever a side has several runs. The intervals hold for all
//!   twelve quantiles at once: the sup-t band (Montiel Olea & Plagborg-Møller, 2019), the
//!   difference ± c·se where se is each difference's bootstrap standard error and c the 95th
//!   percentile of the largest standardised deviation across the quantiles. Wilcox's own
//!   shift function reaches simultaneity with a fitted critical value for the nine deciles;
//!   the sup-t band does the same for any set of quantiles, the tail included.
//! - **Distances**: the two-sample Kolmogorov-Smirnov statistic `sup |F_base − F_new|` and the
//!   Wasserstein-1 distance `∫ |F_base − F_new| dx` (the area between the two CDFs, in ns:
//!   how far, on average, the latency mass had to move), both on the merged histograms.

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use schemars::JsonSchema;
use serde::Serialize;
use statrs::function::beta::beta_reg;

use super::{op_series, shared_ops};
use crate::result::RunResult;
use crate::stats::Hist;

/// The quantiles the shift function is evaluated at: the deciles, then the tail.
pub const QUANTILES: [f64; 12] = [
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999,
];

/// Fewer resampling units (measured intervals, over all runs) than this on a side: the
/// differences are printed without intervals.
pub const MIN_UNITS: usize = 5;

/// Harrell-Davis weights smaller than this, in all, are left out at each end.
const NEGLIGIBLE: f64 = 1e-12;

/// How to estimate the shift function.
#[derive(Debug, Clone)]
pub struct Options {
    pub confidence: f64,
    pub resamples: usize,
    /// Fixed, so the same files give the same intervals.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            confidence: 0.95,
            resamples: 1000,
            seed: 0x0005_41F7,
        }
    }
}

/// One quantile: both sides' Harrell-Davis estimates and their difference (ns).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShiftPoint {
    pub quantile: f64,
    pub base_ns: f64,
    pub new_ns: f64,
    /// `new − base`: positive is slower.
    pub diff_ns: f64,
    /// The simultaneous interval of `diff_ns`; none with too few intervals to resample.
    pub ci_low_ns: Option<f64>,
    pub ci_high_ns: Option<f64>,
}

impl ShiftPoint {
    /// True when the interval excludes zero: this quantile moved.
    pub fn moved(&self) -> bool {
        matches!((self.ci_low_ns, self.ci_high_ns), (Some(lo), Some(hi)) if lo > 0.0 || hi < 0.0)
    }
}

/// The shift function of one operation, and the distances between the two distributions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShiftFunction {
    pub base_runs: usize,
    pub new_runs: usize,
    /// Latencies in each side's merged histogram.
    pub base_count: u64,
    pub new_count: u64,
    pub points: Vec<ShiftPoint>,
    /// Kolmogorov-Smirnov statistic, 0 (same distribution) to 1 (no overlap).
    pub ks: f64,
    /// Wasserstein-1 distance (ns).
    pub wasserstein_ns: f64,
}

/// One operation's shift function, as `compare` prints it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpShift {
    pub operation: String,
    #[serde(flatten)]
    pub shift: ShiftFunction,
}

/// The shift functions of every operation two sets of runs share.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShiftReport {
    pub method: String,
    pub confidence: f64,
    pub resamples: usize,
    pub operations: Vec<OpShift>,
    pub notes: Vec<String>,
}

/// The shift function of every operation the first runs of both sides share (and of all
/// operations together when there are several), over all the runs given per side.
pub fn for_runs(base: &[&RunResult], new: &[&RunResult], opts: &Options) -> Result<ShiftReport> {
    let (Some(b0), Some(n0)) = (base.first(), new.first()) else {
        return Err(anyhow!("a shift function needs at least one run per side"));
    };
    let (ops, _, _) = shared_ops(b0, n0);
    let mut operations = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        let (b, n) = (side_hists(base, op)?, side_hists(new, op)?);
        let o = Options {
            seed: opts.seed.wrapping_add(k as u64),
            ..opts.clone()
        };
        if let Some(shift) = shift_function(&b, &n, &o) {
            operations.push(OpShift {
                operation: op.clone(),
                shift,
            });
        }
    }
    let mut notes = Vec::new();
    if base.len() < 2 || new.len() < 2 {
        notes.push("one run on a side: the intervals cover the noise within that run, not between runs (repeat runs per side for that)".to_string());
    }
    Ok(ShiftReport {
        method: format!("Harrell-Davis quantiles; simultaneous {:.0}% sup-t intervals from a bootstrap over runs, then intervals within runs", opts.confidence * 100.0),
        confidence: opts.confidence,
        resamples: opts.resamples,
        operations,
        notes,
    })
}

/// Each run's measured interval histograms of `op`; a run without full intervals counts as
/// one unit, its operation's whole histogram.
fn side_hists(runs: &[&RunResult], op: &str) -> Result<Vec<Vec<Hist>>> {
    runs.iter()
        .map(|r| {
            let s = op_series(r, op)?;
            if !s.is_empty() {
                return Ok(s.hists);
            }
            let whole = if op == super::TOTAL {
                Some(&r.total)
            } else {
                r.operations.iter().find(|o| o.name == op)
            };
            match whole {
                Some(o) => Ok(vec![o
                    .histogram
                    .decode()
                    .map_err(|e| anyhow!("operation '{op}': {e}"))?]),
                None => Ok(Vec::new()),
            }
        })
        .collect()
}

/// The shift function between `base` and `new`, each a list of runs, each run a list of its
/// intervals' histograms (ns). None when a side has no latencies at all.
pub fn shift_function(
    base: &[Vec<Hist>],
    new: &[Vec<Hist>],
    opts: &Options,
) -> Option<ShiftFunction> {
    let grid = Grid::of(base.iter().chain(new).flatten());
    let (sb, sn) = (grid.side(base), grid.side(new));
    let (cb, cn) = (sb.all(grid.len()), sn.all(grid.len()));
    let (nb, nn) = (cb.iter().sum::<u64>(), cn.iter().sum::<u64>());
    if nb == 0 || nn == 0 {
        return None;
    }
    let (hb, hn) = (grid.harrell_davis(&cb), grid.harrell_davis(&cn));
    let diffs: Vec<f64> = hn.iter().zip(&hb).map(|(n, b)| n - b).collect();
    let band = (sb.units() >= MIN_UNITS && sn.units() >= MIN_UNITS)
        .then(|| sup_t_band(&grid, &sb, &sn, &diffs, opts));
    let points = QUANTILES
        .iter()
        .enumerate()
        .map(|(j, &q)| ShiftPoint {
            quantile: q,
            base_ns: hb[j],
            new_ns: hn[j],
            diff_ns: diffs[j],
            ci_low_ns: band.as_ref().map(|(c, se)| diffs[j] - c * se[j]),
            ci_high_ns: band.as_ref().map(|(c, se)| diffs[j] + c * se[j]),
        })
        .collect();
    let (ks, wasserstein_ns) = grid.distances(&cb, &cn);
    Some(ShiftFunction {
        base_runs: sb.runs.len(),
        new_runs: sn.runs.len(),
        base_count: nb,
        new_count: nn,
        points,
        ks,
        wasserstein_ns,
    })
}

/// The sup-t band's critical value and each difference's bootstrap standard error.
fn sup_t_band(grid: &Grid, sb: &Side, sn: &Side, diffs: &[f64], opts: &Options) -> (f64, Vec<f64>) {
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let (mut cb, mut cn) = (vec![0; grid.len()], vec![0; grid.len()]);
    let mut reps: Vec<Vec<f64>> = Vec::with_capacity(opts.resamples);
    for _ in 0..opts.resamples {
        sb.resample(&mut rng, &mut cb);
        sn.resample(&mut rng, &mut cn);
        if cb.iter().all(|&c| c == 0) || cn.iter().all(|&c| c == 0) {
            continue;
        }
        let (hb, hn) = (grid.harrell_davis(&cb), grid.harrell_davis(&cn));
        reps.push(hn.iter().zip(&hb).map(|(n, b)| n - b).collect());
    }
    let m = reps.len().max(1) as f64;
    let se: Vec<f64> = (0..diffs.len())
        .map(|j| {
            let mean = reps.iter().map(|r| r[j]).sum::<f64>() / m;
            (reps.iter().map(|r| (r[j] - mean).powi(2)).sum::<f64>() / (m - 1.0).max(1.0)).sqrt()
        })
        .collect();
    let mut maxima: Vec<f64> = reps
        .iter()
        .map(|r| {
            (0..diffs.len())
                .filter(|&j| se[j] > 0.0)
                .map(|j| (r[j] - diffs[j]).abs() / se[j])
                .fold(0.0, f64::max)
        })
        .collect();
    maxima.sort_by(f64::total_cmp);
    let k =
        ((opts.confidence * maxima.len() as f64).ceil() as usize).clamp(1, maxima.len().max(1)) - 1;
    (maxima.get(k).copied().unwrap_or(0.0), se)
}

/// The values every histogram of both sides holds (each bucket's median equivalent), sorted,
/// so that histograms become count vectors on one axis.
struct Grid {
    values: Vec<f64>,
    index: BTreeMap<u64, usize>,
}

/// One side: its runs, each a list of sparse intervals (grid index, count).
struct Side {
    runs: Vec<Vec<Vec<(usize, u64)>>>,
}

impl Grid {
    fn of<'a>(hists: impl Iterator<Item = &'a Hist>) -> Grid {
        let mut keys = std::collections::BTreeSet::new();
        for h in hists {
            for v in h.iter_recorded() {
                keys.insert(h.median_equivalent(v.value_iterated_to()));
            }
        }
        let index = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        Grid {
            values: keys.into_iter().map(|k| k as f64).collect(),
            index,
        }
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn side(&self, runs: &[Vec<Hist>]) -> Side {
        let sparse = |h: &Hist| {
            h.iter_recorded()
                .map(|v| {
                    let key = h.median_equivalent(v.value_iterated_to());
                    (self.index[&key], v.count_at_value())
                })
                .collect()
        };
        // A run without intervals (the operation absent from it) has nothing to draw.
        Side {
            runs: runs
                .iter()
                .filter(|r| !r.is_empty())
                .map(|r| r.iter().map(sparse).collect())
                .collect(),
        }
    }

    /// The Harrell-Davis estimate at every one of [`QUANTILES`] of a count vector.
    fn harrell_davis(&self, counts: &[u64]) -> Vec<f64> {
        // The occupied buckets with their cumulative counts, so each quantile starts at
        // its window by binary search.
        let mut cum = Vec::new();
        let mut total = 0u64;
        for (i, &c) in counts.iter().enumerate().filter(|(_, &c)| c > 0) {
            total += c;
            cum.push((i, total));
        }
        let n = total as f64;
        QUANTILES
            .iter()
            .map(|&q| {
                let (a, b) = (q * (n + 1.0), (1.0 - q) * (n + 1.0));
                // The window where the weights are not negligible: from the first bucket whose
                // upper edge has Beta CDF above ε (binary search, the CDF is monotone) to the
                // first whose CDF reaches 1 − ε.
                let cdf = |c: u64| beta_reg(a, b, (c as f64 / n).min(1.0));
                let first = cum.partition_point(|&(_, c)| cdf(c) < NEGLIGIBLE);
                let mut below = match first {
                    0 => 0.0,
                    k => cdf(cum[k - 1].1),
                };
                let (mut sum, mut weight) = (0.0, 0.0);
                for &(i, c) in &cum[first..] {
                    let upper = cdf(c);
                    sum += (upper - below) * self.values[i];
                    weight += upper - below;
                    below = upper;
                    if upper > 1.0 - NEGLIGIBLE {
                        break;
                    }
                }
                if weight > 0.0 {
                    sum / weight
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// Kolmogorov-Smirnov statistic and Wasserstein-1 distance between two count vectors.
    fn distances(&self, a: &[u64], b: &[u64]) -> (f64, f64) {
        let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
        let (mut ca, mut cb, mut ks, mut w1) = (0u64, 0u64, 0.0f64, 0.0);
        for i in 0..self.len() {
            ca += a[i];
            cb += b[i];
            let gap = (ca as f64 / na - cb as f64 / nb).abs();
            ks = ks.max(gap);
            if let Some(next) = self.values.get(i + 1) {
                w1 += gap * (next - self.values[i]);
            }
        }
        (ks, w1)
    }
}

impl Side {
    /// How many resampling units (intervals) the side has.
    fn units(&self) -> usize {
        self.runs.iter().map(Vec::len).sum()
    }

    /// Every interval of every run added into one count vector.
    fn all(&self, len: usize) -> Vec<u64> {
        let mut counts = vec![0; len];
        for (i, c) in self.runs.iter().flatten().flatten() {
            counts[*i] += c;
        }
        counts
    }

    /// One two-level bootstrap draw: runs with replacement, then each drawn run's intervals.
    fn resample(&self, rng: &mut SmallRng, counts: &mut [u64]) {
        counts.fill(0);
        for _ in 0..self.runs.len() {
            let run = &self.runs[rng.random_range(0..self.runs.len())];
            for _ in 0..run.len() {
                for (i, c) in &run[rng.random_range(0..run.len())] {
                    counts[*i] += c;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_hist;
    use rand_distr::{Distribution, Uniform};

    /// Fewer replicates than a user gets, so the debug-build tests stay quick; the sup-t
    /// critical value is already stable at a few hundred.
    fn fast() -> Options {
        Options {
            resamples: 400,
            ..Options::default()
        }
    }

    /// `runs` runs of `intervals` intervals of `per` latencies each, uniform on 1–2 ms, with
    /// `bump(x)` applied to each.
    fn side(
        seed: u64,
        runs: usize,
        intervals: usize,
        per: usize,
        bump: impl Fn(u64) -> u64,
    ) -> Vec<Vec<Hist>> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let u = Uniform::new(1_000_000u64, 2_000_000).unwrap();
        (0..runs)
            .map(|_| {
                (0..intervals)
                    .map(|_| {
                        let mut h = new_hist();
                        for _ in 0..per {
                            h.record(bump(u.sample(&mut rng))).unwrap();
                        }
                        h
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_shift_of_the_top_decile_only_is_found_there_and_nowhere_else() {
        // Everything above 1.9 ms (the top decile) is 1 ms slower in NEW.
        let base = side(1, 2, 10, 2000, |x| x);
        let new = side(2, 2, 10, 2000, |x| {
            if x > 1_900_000 {
                x + 1_000_000
            } else {
                x
            }
        });
        let s = shift_function(&base, &new, &fast()).unwrap();
        for p in &s.points {
            let (lo, hi) = (p.ci_low_ns.unwrap(), p.ci_high_ns.unwrap());
            if p.quantile <= 0.8 {
                assert!(
                    lo < 0.0 && hi > 0.0,
                    "q{}: [{lo}, {hi}] should hold 0",
                    p.quantile
                );
                assert!(p.diff_ns.abs() < 20_000.0, "q{}: {}", p.quantile, p.diff_ns);
            } else if p.quantile >= 0.95 {
                assert!(p.moved(), "q{} should have moved: [{lo}, {hi}]", p.quantile);
                assert!(
                    (p.diff_ns - 1e6).abs() < 50_000.0,
                    "q{}: {}",
                    p.quantile,
                    p.diff_ns
                );
            }
        }
        // A tenth of the mass moved by 1 ms: W1 = 0.1 × 1 ms; the CDFs differ by 0.1 at most.
        assert!(
            (s.wasserstein_ns - 100_000.0).abs() < 5_000.0,
            "{}",
            s.wasserstein_ns
        );
        assert!((s.ks - 0.1).abs() < 0.01, "{}", s.ks);
    }

    #[test]
    fn an_even_shift_moves_every_quantile_by_the_same_amount() {
        let base = side(3, 1, 8, 1000, |x| x);
        let new = side(4, 1, 8, 1000, |x| x + 500_000);
        let s = shift_function(&base, &new, &fast()).unwrap();
        assert_eq!(s.points.len(), QUANTILES.len());
        for p in &s.points {
            assert!(p.moved(), "q{}", p.quantile);
            let tol = if p.quantile > 0.95 {
                60_000.0
            } else {
                25_000.0
            };
            assert!(
                (p.diff_ns - 500_000.0).abs() < tol,
                "q{}: {}",
                p.quantile,
                p.diff_ns
            );
        }
    }

    #[test]
    fn harrell_davis_on_a_histogram_equals_it_on_the_expanded_sample() {
        // 1..=9 once each and 10 five times: the expanded sample's Harrell-Davis median by
        // its definition, one Beta weight per value.
        let mut h = new_hist();
        let mut values: Vec<u64> = (1..=9).collect();
        values.extend([10; 5]);
        for &v in &values {
            h.record(v).unwrap();
        }
        let grid = Grid::of(std::iter::once(&h));
        let counts = grid.side(&[vec![h.clone()]]).all(grid.len());
        let n = values.len() as f64;
        for (j, &q) in QUANTILES.iter().enumerate() {
            let (a, b) = (q * (n + 1.0), (1.0 - q) * (n + 1.0));
            let expected: f64 = values
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    (beta_reg(a, b, (i + 1) as f64 / n) - beta_reg(a, b, i as f64 / n)) * v as f64
                })
                .sum();
            let got = grid.harrell_davis(&counts)[j];
            assert!((got - expected).abs() < 1e-6, "q{q}: {got} vs {expected}");
        }
    }

    #[test]
    fn ks_and_wasserstein_on_known_distributions() {
        // 1000..1500 once each against the same shifted by 250: KS 0.5, W1 250 exactly
        // (values below 2048 are exact in a 3-digit histogram).
        let (mut a, mut b) = (new_hist(), new_hist());
        for v in 1000..1500u64 {
            a.record(v).unwrap();
            b.record(v + 250).unwrap();
        }
        let s = shift_function(&[vec![a.clone()]], &[vec![b]], &fast()).unwrap();
        assert!((s.ks - 0.5).abs() < 1e-12, "{}", s.ks);
        assert!(
            (s.wasserstein_ns - 250.0).abs() < 1e-6,
            "{}",
            s.wasserstein_ns
        );
        // Point masses at 1000 and 2000: no overlap, W1 is the gap.
        let (mut p, mut q) = (new_hist(), new_hist());
        p.record_n(1000, 10).unwrap();
        q.record_n(2000, 30).unwrap();
        let s = shift_function(&[vec![p]], &[vec![q]], &fast()).unwrap();
        assert_eq!(s.ks, 1.0);
        assert!((s.wasserstein_ns - 1000.0).abs() < 1e-9);
        // Identical: zero, and one unit per side is too few for intervals.
        let s = shift_function(&[vec![a.clone()]], &[vec![a]], &fast()).unwrap();
        assert_eq!((s.ks, s.wasserstein_ns), (0.0, 0.0));
        assert_eq!(s.points.len(), QUANTILES.len());
        assert!(s
            .points
            .iter()
            .all(|p| p.diff_ns == 0.0 && p.ci_low_ns.is_none()));
    }

    #[test]
    fn a_run_without_intervals_is_left_out_and_an_empty_side_gives_nothing() {
        let mut base = side(11, 2, 6, 200, |x| x);
        base.push(Vec::new());
        let new = side(12, 2, 6, 200, |x| x);
        let s = shift_function(&base, &new, &fast()).unwrap();
        assert_eq!((s.base_runs, s.base_count), (2, 2 * 6 * 200));
        assert_eq!(s.points.len(), QUANTILES.len());
        assert!(s.points.iter().all(|p| p.ci_low_ns.is_some()));
        assert!(shift_function(&[Vec::new()], &new, &fast()).is_none());
        assert!(shift_function(&[vec![new_hist()]], &new, &fast()).is_none());
    }

    #[test]
    fn run_to_run_noise_widens_the_intervals() {
        // Two runs per side, one of them 30 % slower: the same pooled data as without the
        // offsets would give far narrower intervals if runs were not resampled.
        let slow = |x: u64| x * 13 / 10;
        let mut base = side(5, 1, 10, 1000, |x| x);
        base.extend(side(6, 1, 10, 1000, slow));
        let mut new = side(7, 1, 10, 1000, |x| x);
        new.extend(side(8, 1, 10, 1000, slow));
        let s = shift_function(&base, &new, &fast()).unwrap();
        let flat = shift_function(
            &side(9, 1, 20, 1000, |x| x),
            &side(10, 1, 20, 1000, |x| x),
            &fast(),
        )
        .unwrap();
        let width =
            |s: &ShiftFunction| s.points[4].ci_high_ns.unwrap() - s.points[4].ci_low_ns.unwrap();
        assert!(
            width(&s) > 3.0 * width(&flat),
            "{} vs {}",
            width(&s),
            width(&flat)
        );
        assert!(!s.points[4].moved());
    }
}
