//! Clusters in a latency distribution, and whether they sit at multiples of a period.
//!
//! Seed 001 found requests "slowed down by 100 ms or even a multiple of 100 ms": a fast
//! cluster, then clusters 100, 200, 300 ms later. A percentile table hides that; this module
//! finds it in the run's HdrHistogram.
//!
//! Method:
//! 1. Kernel density estimate of ln(latency) with a Gaussian kernel and half of Silverman's
//!    robust rule as bandwidth, within [0.01, 0.5]: [`super::density`], the same estimate
//!    the report draws as the latency distribution's curve.
//! 2. Every local maximum of the density on a grid of a fifth of the bandwidth is a
//!    candidate mode; mean-shift steps then place it exactly. Neighbouring candidates are
//!    merged while the dip between them is not significant: with `p` and `v` the expected
//!    counts within one bandwidth of the lower peak and of the valley, the dip must satisfy
//!    p − v ≥ 3·√(p + v) (a Poisson z-test at 3σ) and v ≤ 0.9·p.
//! 3. A mode must hold at least 1 % of the samples and at least 10 of them (the mass of its
//!    basin, between the valleys on either side); smaller ones merge into a neighbour.
//!    Its place is the density's maximum, its share the mass of its basin.
//! 4. Periodicity, with three modes or more: the modes are tested against a lattice
//!    `offset + k·P` for whole k ≤ 10, the model of seed 001's delays: a base latency below
//!    the period plus 0, 1, 2 … periods. First with offset 0 (k ≥ 1: "every 100 ms"), with
//!    candidate periods the modes divided by 1 to 10; then with the offset the fastest mode
//!    leaves below the period, if it is at most half the period (k ≥ 0: "every 100 ms after
//!    3 ms"), with candidate periods the
//!    differences between modes divided by 1 to 10. The largest period that puts every mode
//!    within 4 % of a period from its multiple, each on its own k, wins, and is then refined
//!    by least squares over the modes; the offset is kept only if it brings the modes closer
//!    to their lattice by more than 1 % of the period. Two guards keep evenly spaced clusters that are not
//!    delays (say the 10, 13 and 17 µs of three kinds of operation: k = 3, 4, 5) from being
//!    called periodic: the lattice must start at k ≤ 2, and the multiples must fill at least
//!    two thirds of their span (k = 0, 1, 3 but not 0, 1, 5, since with loose multiples
//!    almost any three numbers fit some lattice).

use super::density::{self, Grid, Kde};
use super::fit::line;
use crate::result::models::{LatencyModes, Mode, Period};
use crate::stats::Hist;

/// Fewer samples than this give no verdict.
pub const MIN_SAMPLES: u64 = 50;
const MIN_SHARE: f64 = 0.01;
const MIN_COUNT: f64 = 10.0;
const Z: f64 = 3.0;
const MAX_VALLEY: f64 = 0.9;
const MAX_MULTIPLE: u32 = 10;
const PERIOD_TOLERANCE: f64 = 0.04;

/// Find the modes of a latency histogram (values in ns).
pub fn find(h: &Hist) -> LatencyModes {
    find_in(&density::ln_points(h))
}

/// Find the modes of weighted samples `(ln ns, count)`, sorted by value.
pub fn find_in(points: &[(f64, f64)]) -> LatencyModes {
    let n: f64 = points.iter().map(|p| p.1).sum();
    if n < MIN_SAMPLES as f64 {
        return LatencyModes {
            shape: "too_few_samples".to_string(),
            samples: n as u64,
            bandwidth: 0.0,
            modes: Vec::new(),
            periodic: None,
        };
    }
    let kde = Kde::latency_of(points.to_vec());
    let grid = search_grid(&kde);
    // Count density per unit of ln(ns): the sum of the kernels of every sample.
    let density = kde.counts(&grid);
    let mut peaks: Vec<usize> = (1..grid.size - 1)
        .filter(|&i| density[i] > density[i - 1] && density[i] >= density[i + 1])
        .collect();
    if peaks.is_empty() {
        peaks.push(argmax(&density, 0, grid.size));
    }
    merge_shallow_dips(&mut peaks, &density, kde.bandwidth());
    let masses = merge_small_basins(&mut peaks, &density, &grid, &kde);
    let modes: Vec<Mode> = peaks
        .iter()
        .zip(&masses)
        .map(|(&i, &m)| Mode {
            at_ns: kde.mean_shift(grid.at(i)).exp(),
            share: m / n,
        })
        .collect();
    let periodic = period(&modes.iter().map(|m| m.at_ns).collect::<Vec<_>>());
    LatencyModes {
        shape: if modes.len() > 1 {
            "multimodal"
        } else {
            "unimodal"
        }
        .to_string(),
        samples: n as u64,
        bandwidth: kde.bandwidth(),
        modes,
        periodic,
    }
}

/// The grid candidate modes are searched on: a fifth of the bandwidth, from 4 bandwidths
/// below the fastest sample to 4 above the slowest.
fn search_grid(kde: &Kde) -> Grid {
    let h = kde.bandwidth();
    let points = kde.points();
    let lo = points.first().map_or(0.0, |p| p.0) - 4.0 * h;
    let hi = points.last().map_or(0.0, |p| p.0) + 4.0 * h;
    let size = (((hi - lo) / (h / 5.0)).ceil() as usize + 1).clamp(16, 20_000);
    Grid::between(lo, hi, size)
}

/// Merge neighbouring peaks, weakest dip first, while the dip between them is not
/// significant (step 2 of the method); the higher peak of a pair stays.
fn merge_shallow_dips(peaks: &mut Vec<usize>, density: &[f64], h: f64) {
    // Expected count within one bandwidth of a point with this density.
    let count = |d: f64| d * 2.0 * h;
    loop {
        let weakest = (0..peaks.len().saturating_sub(1))
            .map(|j| {
                let (a, b) = (peaks[j], peaks[j + 1]);
                let v = density[argmin(density, a, b + 1)];
                let p = density[a].min(density[b]);
                let (pc, vc) = (count(p), count(v));
                let z = (pc - vc) / (pc + vc).sqrt().max(1e-12);
                (j, z, v <= MAX_VALLEY * p)
            })
            .filter(|(_, z, deep)| *z < Z || !deep)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((j, _, _)) = weakest else { return };
        if density[peaks[j]] < density[peaks[j + 1]] {
            peaks.remove(j);
        } else {
            peaks.remove(j + 1);
        }
    }
}

/// Drop the peak with the lightest basin while one is below the minimum mass (step 3), so
/// its samples go to a neighbour's basin; returns the mass of each remaining peak's basin.
fn merge_small_basins(peaks: &mut Vec<usize>, density: &[f64], grid: &Grid, kde: &Kde) -> Vec<f64> {
    let n = kde.samples();
    loop {
        let masses = basin_masses(density, peaks, grid, kde.points());
        let small = masses
            .iter()
            .enumerate()
            .filter(|(_, &m)| m < (MIN_SHARE * n).max(MIN_COUNT))
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(j, _)| j);
        match small {
            Some(j) if peaks.len() > 1 => {
                peaks.remove(j);
            }
            _ => return masses,
        }
    }
}

/// The samples in each peak's basin: from the valley before it to the valley after it.
fn basin_masses(density: &[f64], peaks: &[usize], grid: &Grid, points: &[(f64, f64)]) -> Vec<f64> {
    basins(density, peaks)
        .iter()
        .map(|&(a, b)| {
            let (ya, yb) = (grid.at(a), grid.at(b));
            points
                .iter()
                .filter(|p| p.0 >= ya && (p.0 < yb || b == grid.size - 1))
                .map(|p| p.1)
                .sum()
        })
        .collect()
}

fn argmax(v: &[f64], from: usize, to: usize) -> usize {
    (from..to)
        .max_by(|&a, &b| v[a].total_cmp(&v[b]))
        .unwrap_or(from)
}

fn argmin(v: &[f64], from: usize, to: usize) -> usize {
    (from..to)
        .min_by(|&a, &b| v[a].total_cmp(&v[b]))
        .unwrap_or(from)
}

/// Grid index ranges `[start, end)` of each peak's basin.
fn basins(density: &[f64], peaks: &[usize]) -> Vec<(usize, usize)> {
    let mut cuts = vec![0];
    for w in peaks.windows(2) {
        cuts.push(argmin(density, w[0], w[1] + 1));
    }
    cuts.push(density.len() - 1);
    cuts.windows(2).map(|c| (c[0], c[1])).collect()
}

/// Test the modes (ns, ascending) against `offset + k·P`; see the module documentation.
pub fn period(modes: &[f64]) -> Option<Period> {
    if modes.len() < 3 {
        return None;
    }
    let fits = |p: f64, offset: f64| -> Option<Vec<u32>> {
        let mut ks: Vec<u32> = Vec::new();
        for &m in modes {
            let r = (m - offset) / p;
            let k = r.round();
            if k < 0.0 || k > MAX_MULTIPLE as f64 || (r - k).abs() > PERIOD_TOLERANCE {
                return None;
            }
            if ks.last().is_some_and(|&last| last >= k as u32) {
                return None;
            }
            ks.push(k as u32);
        }
        let (k_lo, k_hi) = (ks[0], ks[ks.len() - 1]);
        let filled = 3 * ks.len() as u32 >= 2 * (k_hi - k_lo + 1);
        (filled && k_lo <= 2 && (offset > 0.0 || k_lo >= 1)).then_some(ks)
    };
    let divided = |bases: Vec<f64>| -> Vec<f64> {
        let mut c: Vec<f64> = bases
            .iter()
            .flat_map(|&b| (1..=MAX_MULTIPLE).map(move |j| b / j as f64))
            .filter(|p| *p > 0.0)
            .collect();
        c.sort_by(|a, b| b.total_cmp(a));
        c
    };
    let from_zero = divided(modes.to_vec())
        .into_iter()
        .find_map(|p| fits(p, 0.0).map(|ks| (ks, 0.0)));
    let with_offset = || {
        divided(modes[1..].iter().map(|m| m - modes[0]).collect())
            .into_iter()
            .find_map(|p| {
                let offset = modes[0] - (modes[0] / p).floor() * p;
                // A base latency well below the period, as delays on top of it have.
                (offset <= p / 2.0)
                    .then(|| fits(p, offset).map(|ks| (ks, offset)))
                    .flatten()
            })
    };
    // Refine each lattice by least squares; keep its rms residual.
    let refine = |(ks, offset): (Vec<u32>, f64)| -> Option<(Period, f64)> {
        let kf: Vec<f64> = ks.iter().map(|&k| k as f64).collect();
        let (period_ns, offset_ns) = if offset == 0.0 {
            let num: f64 = kf.iter().zip(modes).map(|(k, m)| k * m).sum();
            let den: f64 = kf.iter().map(|k| k * k).sum();
            (num / den, 0.0)
        } else {
            let l = line(&kf, modes)?;
            (l.slope, l.intercept.max(0.0))
        };
        let rms = (kf
            .iter()
            .zip(modes)
            .map(|(k, m)| (m - offset_ns - k * period_ns).powi(2))
            .sum::<f64>()
            / modes.len() as f64)
            .sqrt();
        let p = Period {
            period_ns,
            offset_ns,
            multiples: ks,
        };
        Some((p, rms))
    };
    match (from_zero.and_then(refine), with_offset().and_then(refine)) {
        // The offset earns its place only if it fits clearly better: by 1 % of the period.
        (Some((_, zr)), Some((o, or))) if zr - or > 0.01 * o.period_ns => Some(o),
        (Some((z, _)), _) => Some(z),
        (None, o) => o.map(|(o, _)| o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duration::human_ns;
    use crate::stats::new_hist;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn summary_line_lists_the_modes_and_the_verdict() {
        let mode = |ms: f64| Mode {
            at_ns: ms * 1e6,
            share: 1.0 / 3.0,
        };
        let mut m = LatencyModes {
            shape: "multimodal".into(),
            samples: 300,
            bandwidth: 0.1,
            modes: vec![mode(100.0), mode(200.0), mode(300.0)],
            periodic: Some(Period {
                period_ns: 100e6,
                offset_ns: 0.0,
                multiples: vec![1, 2, 3],
            }),
        };
        assert_eq!(
            m.summary_line().unwrap(),
            "latency modes at 100.00ms, 200.00ms, 300.00ms — periodic, every 100.00ms"
        );
        assert!(m.note().unwrap().ends_with(": periodic, every 100.00ms"));
        m.modes.truncate(1);
        m.periodic = None;
        assert_eq!(m.summary_line(), None);
    }
    use rand_distr::{Distribution, LogNormal, Normal};

    const MS: f64 = 1e6;

    fn hist(values: impl IntoIterator<Item = f64>) -> Hist {
        let mut h = new_hist();
        for v in values {
            h.record(v.max(1.0) as u64).unwrap();
        }
        h
    }

    /// `count` samples around `at` with a relative spread `rel` (normal).
    fn cluster(rng: &mut SmallRng, at: f64, rel: f64, count: usize) -> Vec<f64> {
        let d = Normal::new(at, at * rel).unwrap();
        (0..count).map(|_| d.sample(rng)).collect()
    }

    #[test]
    fn delays_at_multiples_of_100ms_are_periodic() {
        // Tolerance: each mode within 2 % of its true place; the period within 2 % of 100 ms.
        let mut rng = SmallRng::seed_from_u64(1);
        let mut v = cluster(&mut rng, 100.0 * MS, 0.003, 340);
        v.extend(cluster(&mut rng, 200.0 * MS, 0.003, 330));
        v.extend(cluster(&mut rng, 300.0 * MS, 0.003, 330));
        let m = find(&hist(v));
        assert_eq!(m.shape, "multimodal");
        assert_eq!(m.modes.len(), 3, "{m:?}");
        for (mode, at) in m.modes.iter().zip([100.0, 200.0, 300.0]) {
            assert!((mode.at_ns / (at * MS) - 1.0).abs() < 0.02, "{m:?}");
        }
        let p = m.periodic.as_ref().expect("periodic");
        assert!((p.period_ns / (100.0 * MS) - 1.0).abs() < 0.02, "{p:?}");
        assert_eq!(p.multiples, vec![1, 2, 3]);
        let note = m.note().unwrap();
        assert!(note.starts_with("latency modes at "), "{note}");
        assert!(note.contains("(34%)"), "{note}");
        assert!(
            note.ends_with(&format!(": periodic, every {}", human_ns(p.period_ns))),
            "{note}"
        );
    }

    #[test]
    fn seed_001_fast_cluster_plus_delays_is_periodic_after_an_offset() {
        // 90 % around 3 ms (lognormal), 6 % at +100 ms, 4 % at +200 ms.
        // Tolerance: period within 3 % of 100 ms, offset within 1 ms of 3 ms.
        let mut rng = SmallRng::seed_from_u64(2);
        let fast = LogNormal::new((3.0 * MS).ln(), 0.2).unwrap();
        let mut v: Vec<f64> = (0..9000).map(|_| fast.sample(&mut rng)).collect();
        v.extend(cluster(&mut rng, 103.0 * MS, 0.01, 600));
        v.extend(cluster(&mut rng, 203.0 * MS, 0.01, 400));
        let m = find(&hist(v));
        assert_eq!(m.modes.len(), 3, "{m:?}");
        let p = m.periodic.as_ref().expect("periodic");
        assert!((p.period_ns / (100.0 * MS) - 1.0).abs() < 0.03, "{p:?}");
        assert!((p.offset_ns - 3.0 * MS).abs() < 1.0 * MS, "{p:?}");
        assert_eq!(p.multiples, vec![0, 1, 2]);
        assert!(m.note().unwrap().contains("after"));
    }

    #[test]
    fn unimodal_distributions_have_one_mode() {
        // Lognormal, exponential-like and narrow normal, several sample sizes and seeds.
        for seed in 0..5 {
            let mut rng = SmallRng::seed_from_u64(seed);
            for n in [200, 2_000, 50_000] {
                let d = LogNormal::new((2.0 * MS).ln(), 0.6).unwrap();
                let m = find(&hist((0..n).map(|_| d.sample(&mut rng))));
                assert_eq!(m.shape, "unimodal", "lognormal n={n} seed={seed}: {m:?}");
                let e = rand_distr::Exp::new(1.0 / (3.0 * MS)).unwrap();
                let m = find(&hist((0..n).map(|_| e.sample(&mut rng))));
                assert_eq!(m.shape, "unimodal", "exp n={n} seed={seed}: {m:?}");
                let m = find(&hist(cluster(&mut rng, 2.0 * MS, 0.02, n)));
                assert_eq!(m.shape, "unimodal", "normal n={n} seed={seed}: {m:?}");
                assert!(m.note().is_none());
            }
        }
    }

    #[test]
    fn irregular_modes_are_not_periodic_and_few_samples_give_no_verdict() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut v = cluster(&mut rng, 1.0 * MS, 0.01, 500);
        v.extend(cluster(&mut rng, 7.3 * MS, 0.01, 500));
        v.extend(cluster(&mut rng, 31.0 * MS, 0.01, 500));
        let m = find(&hist(v));
        assert_eq!(m.modes.len(), 3, "{m:?}");
        assert_eq!(m.periodic, None, "{m:?}");
        assert!(m.note().unwrap().ends_with("not periodic"));
        let m = find(&hist([1.0, 2.0, 3.0]));
        assert_eq!(m.shape, "too_few_samples");
    }

    #[test]
    fn period_needs_every_mode_on_the_lattice() {
        let p = period(&[100.0, 200.0, 300.0, 400.0]).unwrap();
        assert_eq!(p.multiples, vec![1, 2, 3, 4]);
        assert!((p.period_ns - 100.0).abs() < 1e-9);
        let p = period(&[100.0, 200.0, 300.0, 350.0]).unwrap();
        assert_eq!(p.multiples, vec![2, 4, 6, 7]);
        assert!(
            period(&[100.0, 200.0, 350.0]).is_none(),
            "k = 2, 4, 7 leave gaps"
        );
        assert!(period(&[100.0, 200.0]).is_none());
        assert!(period(&[100.0, 173.0, 411.0]).is_none());
        // Evenly spaced, but the spacing is shorter than the latency it would delay.
        assert!(period(&[10_000.0, 13_300.0, 16_700.0]).is_none());
        assert!(period(&[300.0, 400.0, 500.0]).is_none());
        assert!(
            period(&[200.0, 300.0, 400.0]).is_some(),
            "2P, 3P, 4P from zero"
        );
        // Every cluster a little late (a busy machine): 100 ms delays on top of 6 ms.
        let p = period(&[106.0, 206.0, 306.0]).unwrap();
        assert_eq!(p.multiples, vec![1, 2, 3]);
        assert!((p.period_ns - 100.0).abs() < 1e-9 && (p.offset_ns - 6.0).abs() < 1e-9);
    }
}
