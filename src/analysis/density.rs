//! Kernel density estimates: the one estimator behind the report's latency-distribution
//! curve and the latency modes ([`super::modes`]), so what is drawn and what is reported
//! cannot disagree.
//!
//! A weighted Gaussian kernel density estimate (Silverman, *Density Estimation for Statistics
//! and Data Analysis*, 1986, §3.4): `f(y) = Σ w·φ((y − x)/h) / h` over the points `(x, w)`.
//! Each kernel is cut at 4 bandwidths, where it has fallen below e⁻⁸ (0.03 %) of its peak.
//!
//! Latencies are estimated on ln(ns), which gives a 1 ms cluster and a 1 s cluster the same
//! relative resolution, with one bandwidth rule ([`latency_bandwidth`]): half of Silverman's
//! robust rule of thumb 0.9·min(sd, IQR/1.34)·n^(−1/5) (ibid., eq. 3.31), kept within
//! [0.01, 0.5] (1 % to 50 % of the value). The rule is tuned to one normal distribution and
//! smooths separate clusters together; half of it keeps them apart.

use std::borrow::Cow;

use crate::stats::Hist;

/// The latency bandwidth's bounds, in units of ln(ns).
const MIN_LATENCY_BW: f64 = 0.01;
const MAX_LATENCY_BW: f64 = 0.5;
/// Kernels are summed out to this many bandwidths from their centre.
const CUT: f64 = 4.0;

/// Evenly spaced points `lo + i·step` for `i < size`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub lo: f64,
    pub step: f64,
    pub size: usize,
}

impl Grid {
    /// `size` points from `lo` to `hi`, both included.
    pub fn between(lo: f64, hi: f64, size: usize) -> Grid {
        let size = size.max(2);
        Grid {
            lo,
            step: (hi - lo) / (size - 1) as f64,
            size,
        }
    }

    pub fn at(&self, i: usize) -> f64 {
        self.lo + i as f64 * self.step
    }

    pub fn points(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.size).map(|i| self.at(i))
    }
}

/// A weighted Gaussian kernel density estimate with a fixed bandwidth.
#[derive(Debug, Clone)]
pub struct Kde {
    /// `(value, weight)`, sorted by value.
    points: Vec<(f64, f64)>,
    n: f64,
    h: f64,
}

impl Kde {
    /// The estimate of weighted `points` with bandwidth `h`.
    pub fn new(mut points: Vec<(f64, f64)>, h: f64) -> Kde {
        if !points.is_sorted_by(|a, b| a.0 <= b.0) {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let n = points.iter().map(|p| p.1).sum();
        Kde { points, n, h }
    }

    /// A latency histogram (ns) on ln(ns), with [`latency_bandwidth`].
    pub fn latency(hist: &Hist) -> Kde {
        Kde::latency_of(ln_points(hist))
    }

    /// Weighted `(ln ns, count)` points, with [`latency_bandwidth`].
    pub fn latency_of(points: Vec<(f64, f64)>) -> Kde {
        let h = latency_bandwidth(&points);
        Kde::new(points, h)
    }

    pub fn bandwidth(&self) -> f64 {
        self.h
    }

    /// The total weight: the number of samples.
    pub fn samples(&self) -> f64 {
        self.n
    }

    /// The points, sorted by value.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Count density on `grid`: expected samples per unit of value (integrates to `n`).
    pub fn counts(&self, grid: &Grid) -> Vec<f64> {
        let mut density = vec![0.0; grid.size];
        let (h, lo, step) = (self.h, grid.lo, grid.step);
        if grid.size == 0 || h <= 0.0 || step <= 0.0 {
            return density;
        }
        let last = grid.size - 1;
        let norm = 1.0 / (h * (2.0 * std::f64::consts::PI).sqrt());
        for &(y, w) in &self.points {
            let from = ((y - CUT * h - lo) / step).floor().max(0.0) as usize;
            let to = (((y + CUT * h - lo) / step).ceil().max(0.0) as usize).min(last);
            for (i, d) in density.iter_mut().enumerate().take(to + 1).skip(from) {
                let u = (lo + i as f64 * step - y) / h;
                *d += w * norm * (-0.5 * u * u).exp();
            }
        }
        density
    }

    /// Probability density on `grid` (integrates to 1).
    pub fn density(&self, grid: &Grid) -> Vec<f64> {
        let n = self.n;
        let mut d = self.counts(grid);
        if n > 0.0 {
            d.iter_mut().for_each(|v| *v /= n);
        }
        d
    }

    /// Move `y` uphill to the density's exact local maximum by mean-shift steps (Comaniciu &
    /// Meer, "Mean shift: a robust approach toward feature space analysis", IEEE PAMI 24,
    /// 2002): a grid only places a peak to within its step.
    pub fn mean_shift(&self, mut y: f64) -> f64 {
        let h = self.h;
        for _ in 0..50 {
            let (mut num, mut den) = (0.0, 0.0);
            for &(x, w) in self.points.iter().filter(|p| (p.0 - y).abs() < CUT * h) {
                let k = w * (-0.5 * ((x - y) / h).powi(2)).exp();
                num += k * x;
                den += k;
            }
            if den <= 0.0 {
                break;
            }
            let next = num / den;
            let done = (next - y).abs() < 1e-6 * h;
            y = next;
            if done {
                break;
            }
        }
        y
    }
}

/// `(ln ns, count)` of each recorded bucket of a latency histogram, by value.
pub fn ln_points(h: &Hist) -> Vec<(f64, f64)> {
    h.iter_recorded()
        .map(|v| {
            let ns = h.median_equivalent(v.value_iterated_to()).max(1) as f64;
            (ns.ln(), v.count_at_value() as f64)
        })
        .collect()
}

/// Silverman's robust rule of thumb for weighted points: 0.9·min(sd, IQR/1.34)·n^(−1/5),
/// with the standard deviation alone when the interquartile range is zero. Zero without
/// points.
pub fn silverman(points: &[(f64, f64)]) -> f64 {
    let n: f64 = points.iter().map(|p| p.1).sum();
    if n <= 0.0 {
        return 0.0;
    }
    let mean = points.iter().map(|(y, w)| y * w).sum::<f64>() / n;
    let var = points
        .iter()
        .map(|(y, w)| w * (y - mean).powi(2))
        .sum::<f64>()
        / n;
    let sorted: Cow<[(f64, f64)]> = if points.is_sorted_by(|a, b| a.0 <= b.0) {
        Cow::Borrowed(points)
    } else {
        let mut v = points.to_vec();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        Cow::Owned(v)
    };
    // The smallest value with at least q·n of the weight at or below it.
    let quantile = |q: f64| {
        let target = q * n;
        let mut seen = 0.0;
        for &(y, w) in sorted.iter() {
            seen += w;
            if seen >= target {
                return y;
            }
        }
        sorted.last().map_or(0.0, |p| p.0)
    };
    let iqr = quantile(0.75) - quantile(0.25);
    let sd = var.sqrt();
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    0.9 * spread * n.powf(-0.2)
}

/// The bandwidth of every latency density, on ln(ns): half of [`silverman`], within
/// [0.01, 0.5]; see the module documentation.
pub fn latency_bandwidth(points: &[(f64, f64)]) -> f64 {
    (0.5 * silverman(points)).clamp(MIN_LATENCY_BW, MAX_LATENCY_BW)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_hist;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, LogNormal, Normal};

    const MS: f64 = 1e6;

    #[test]
    fn silverman_follows_its_formula() {
        // Mean 1.5, sd √1.25; quartiles 0 and 2 (IQR/1.34 = 1.49 > sd), n = 4.
        let pts = [(3.0, 1.0), (0.0, 1.0), (2.0, 1.0), (1.0, 1.0)];
        let expected = 0.9 * 1.25f64.sqrt() * 4f64.powf(-0.2);
        assert!((silverman(&pts) - expected).abs() < 1e-12);
        // Weights count as repeated samples.
        let weighted = [(0.0, 2.0), (1.0, 2.0), (2.0, 2.0), (3.0, 2.0)];
        let repeated: Vec<(f64, f64)> = (0..8).map(|i| ((i / 2) as f64, 1.0)).collect();
        assert!((silverman(&weighted) - silverman(&repeated)).abs() < 1e-12);
        assert_eq!(silverman(&[]), 0.0);
    }

    #[test]
    fn a_normal_samples_bandwidth_matches_the_rule() {
        // ln(latency) normal with sd 0.3 and n = 20 000: sd and IQR/1.34 both estimate 0.3,
        // so the rule gives 0.9·0.3·n^(−1/5) = 0.0374; the latency bandwidth half of it.
        // Tolerance 3 %: the standard error of a sample sd of 20 000 is 0.5 %.
        let mut rng = SmallRng::seed_from_u64(11);
        let d = Normal::new(2.0, 0.3).unwrap();
        let pts: Vec<(f64, f64)> = (0..20_000).map(|_| (d.sample(&mut rng), 1.0)).collect();
        let rule = 0.9 * 0.3 * 20_000f64.powf(-0.2);
        assert!(
            (silverman(&pts) / rule - 1.0).abs() < 0.03,
            "{}",
            silverman(&pts)
        );
        assert!((latency_bandwidth(&pts) / (rule / 2.0) - 1.0).abs() < 0.03);
        assert_eq!(
            Kde::latency_of(pts.clone()).bandwidth(),
            latency_bandwidth(&pts)
        );
    }

    #[test]
    fn the_latency_bandwidth_stays_within_its_bounds() {
        assert_eq!(latency_bandwidth(&[(5.0, 1000.0)]), MIN_LATENCY_BW);
        let wide: Vec<(f64, f64)> = (0..10).map(|i| (i as f64 * 10.0, 1.0)).collect();
        assert_eq!(latency_bandwidth(&wide), MAX_LATENCY_BW);
    }

    #[test]
    fn the_density_integrates_to_one_and_counts_to_n() {
        let pts: Vec<(f64, f64)> = (0..50).map(|i| ((i % 7) as f64, 1.0)).collect();
        let kde = Kde::new(pts, 0.3);
        let grid = Grid::between(-10.0, 10.0, 2001);
        let area: f64 = kde.density(&grid).iter().sum::<f64>() * grid.step;
        assert!((area - 1.0).abs() < 1e-3, "area {area}");
        let counts: f64 = kde.counts(&grid).iter().sum::<f64>() * grid.step;
        assert!((counts - 50.0).abs() < 0.05, "counts {counts}");
    }

    #[test]
    fn a_bimodal_samples_peaks_are_found_where_they_are() {
        // Equal clusters around 1 ms and 10 ms (lognormal, 10 % spread): the density has two
        // local maxima, which mean-shift places within 2 % of 1 ms and 10 ms, and the valley
        // between them is nearly empty.
        let mut rng = SmallRng::seed_from_u64(5);
        let mut h = new_hist();
        for at in [1.0 * MS, 10.0 * MS] {
            let d = LogNormal::new(at.ln(), 0.1).unwrap();
            for _ in 0..5_000 {
                h.record(d.sample(&mut rng) as u64).unwrap();
            }
        }
        let kde = Kde::latency(&h);
        assert_eq!(kde.samples(), 10_000.0);
        let h_bw = kde.bandwidth();
        let (lo, hi) = (kde.points()[0].0, kde.points().last().unwrap().0);
        let grid = Grid::between(lo - 4.0 * h_bw, hi + 4.0 * h_bw, 2000);
        let d = kde.density(&grid);
        let peaks: Vec<usize> = (1..d.len() - 1)
            .filter(|&i| d[i] > d[i - 1] && d[i] >= d[i + 1])
            .collect();
        assert_eq!(peaks.len(), 2, "bandwidth {h_bw}: peaks at {peaks:?}");
        for (&i, at) in peaks.iter().zip([1.0 * MS, 10.0 * MS]) {
            let found = kde.mean_shift(grid.at(i)).exp();
            assert!((found / at - 1.0).abs() < 0.02, "{found} for {at}");
        }
        let valley = d[peaks[0]..peaks[1]]
            .iter()
            .copied()
            .fold(f64::MAX, f64::min);
        assert!(valley < 1e-3 * d[peaks[0]]);
    }
}
