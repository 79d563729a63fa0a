//! Whether a series was still drifting: the Mann-Kendall trend test with Sen's slope.
//!
//! Mann-Kendall (H. B. Mann, "Nonparametric tests against trend", Econometrica 13, 1945;
//! M. G. Kendall, "Rank Correlation Methods", 1975): S = Σ_{i<j} sign(x_j − x_i), with
//! Var(S) = [n(n−1)(2n+5) − Σ_t t(t−1)(2t+5)] / 18 corrected for groups of t tied values,
//! and Z = (S − sign S) / √Var(S) (continuity correction), two-sided p from the normal.
//!
//! Interval series are autocorrelated (a slow second is followed by another), which makes
//! the plain test see trends that are not there. The variance is corrected by the effective
//! sample size of Yue & Wang, "The Mann-Kendall test modified by effective sample size to
//! detect trend in serially correlated hydrological series", Water Resources Management
//! 18, 2004, 201-218, in its AR(1) form: Var*(S) = Var(S) · n/n*, with
//! n/n* = 1 + 2 Σ_{k=1}^{n−1} (1 − k/n) ρ^k. Yue & Wang estimate ρ from the series
//! detrended by Sen's line; a trend that is not a line (a warming cache: throughput rising
//! as the inverse of a falling latency) leaves a smooth curve there that reads as ρ ≈ 1, and
//! a clear 60-interval ramp measured here got n/n* = 27 and p = 0.25. So ρ is estimated from
//! the first differences instead, which remove any smooth trend: for AR(1) errors the lag-1
//! autocorrelation of the differences is −(1 − ρ)/2, so ρ = 1 + 2 r₁(Δx) (a difference-based
//! estimator as in Hall & Van Keilegom, "Using difference-based methods for inference in
//! nonparametric regression with time series errors", JRSS B 65, 2003), kept within ±0.99.
//! On a smooth, low-noise warm-up the differences are themselves smooth and read as
//! persistence (r₁(Δx) ≈ 0.9 → ρ clamped at 0.99, the variance widened 50-fold at n = 60: a
//! monotone 60-interval ramp came out p = 0.11 in a fresh-clone CI). Two guards: for AR(1)
//! errors r₁(Δx) ≤ 0, so an estimate ρ̂ above 1 is outside the model (sampling error near 1,
//! or a curved trend) and is folded back at the boundary, ρ = 2 − ρ̂; and ρ is also estimated
//! from the differences less Sen's line through them (which removes a quadratic trend, and
//! changes an AR(1) estimate by O(1/n)), the smaller of the two folded estimates being used.
//! n/n* is not let below 1, so a negatively autocorrelated series is never made more
//! significant than the plain test says. Simulated trendless AR(1) series (1,000 each, p <
//! 0.01): φ 0 to 0.8, 20 to 60 observations, 0.5 % to 3.7 % alarms (0.5 % to 3.6 % without
//! the two guards); φ 0.9, 5.6 % to 8.5 % (4.4 % to 7.5 %); φ 0.95 to 0.98, 9 % to 18 % (7 %
//! to 12 %). A 60-interval warm-up ramp (throughput 8/L for a latency L falling linearly
//! from 6 to 2.25 ms, Poisson-like noise of 2 % to 10 % of √count, with or without AR(1)
//! noise of φ 0.9 to 0.95) was flagged in 89 % to 100 % of runs against 0 % to 30 % without
//! them. Alternatives measured the same way: capping ρ at 0.8 (alarms at φ 0.98 up to 34 %),
//! ρ from the residuals of a monotone (PAVA) or running-median fit (up to 48 % at φ 0.9),
//! either guard alone (a ±2 wobble on the ramp beat the fold: p 0.06). Hamed & Rao's
//! (1998) correction alarmed in 16.5 % of φ = 0.5, n = 40 series at the 5 % level.
//!
//! Sen's slope (P. K. Sen, "Estimates of the regression coefficient based on Kendall's
//! tau", JASA 63, 1968): the median of (x_j − x_i)/(j − i) over all pairs i < j.

use statrs::distribution::{ContinuousCDF, Normal};

/// The test needs at least this many observations.
pub const MIN_N: usize = 8;
/// Longer series are averaged into this many consecutive batches first (the test and
/// Sen's slope cost n² pairs).
pub const MAX_N: usize = 1000;

/// The test on one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannKendall {
    pub n: usize,
    /// Mann-Kendall's S.
    pub s: i64,
    /// Var(S) with the tie correction, before the autocorrelation correction.
    pub var_s: f64,
    /// Yue & Wang's n/n* as used (at least 1).
    pub correction: f64,
    pub z: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Sen's slope, per observation.
    pub slope: f64,
}

/// Mann-Kendall with Yue & Wang's correction and Sen's slope; `None` for fewer than
/// `MIN_N` observations or any that is not finite.
pub fn mann_kendall(x: &[f64]) -> Option<MannKendall> {
    let n = x.len();
    if n < MIN_N || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += sign(x[j] - x[i]);
        }
    }
    let nf = n as f64;
    let ties: f64 = tie_groups(x)
        .into_iter()
        .map(|t| {
            let t = t as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let slope = sen_slope(x);
    let correction = effective_size_factor(x).max(1.0);
    let var = var_s * correction;
    let z = if s == 0 || var <= 0.0 {
        0.0
    } else {
        (s - s.signum()) as f64 / var.sqrt()
    };
    let normal = Normal::new(0.0, 1.0).ok()?;
    let p = (2.0 * normal.sf(z.abs())).min(1.0);
    Some(MannKendall {
        n,
        s,
        var_s,
        correction,
        z,
        p,
        slope,
    })
}

fn sign(d: f64) -> i64 {
    if d > 0.0 {
        1
    } else if d < 0.0 {
        -1
    } else {
        0
    }
}

/// Sizes of the groups of equal values (of two or more).
fn tie_groups(x: &[f64]) -> Vec<usize> {
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
        .chunk_by(|a, b| a == b)
        .map(<[f64]>::len)
        .filter(|&t| t > 1)
        .collect()
}

/// Sen's slope: the median of the pairwise slopes.
pub fn sen_slope(x: &[f64]) -> f64 {
    let n = x.len();
    let mut slopes = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            slopes.push((x[j] - x[i]) / (j - i) as f64);
        }
    }
    if slopes.is_empty() {
        return 0.0;
    }
    slopes.sort_by(f64::total_cmp);
    let m = slopes.len();
    if m % 2 == 1 {
        slopes[m / 2]
    } else {
        (slopes[m / 2 - 1] + slopes[m / 2]) / 2.0
    }
}

/// Yue & Wang's n/n* for AR(1) errors, with ρ the smaller of the folded difference-based
/// estimates from the first differences and from those less Sen's line (unfloored).
fn effective_size_factor(x: &[f64]) -> f64 {
    let n = x.len();
    let diffs: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let b = sen_slope(&diffs);
    let detrended: Vec<f64> = diffs
        .iter()
        .enumerate()
        .map(|(i, d)| d - b * i as f64)
        .collect();
    let rho = match (folded_rho(&diffs), folded_rho(&detrended)) {
        (Some(a), Some(b)) => a.min(b),
        (Some(r), None) | (None, Some(r)) => r,
        (None, None) => return 1.0,
    }
    .clamp(-0.99, 0.99);
    let nf = n as f64;
    1.0 + 2.0
        * (1..n)
            .map(|k| (1.0 - k as f64 / nf) * rho.powi(k as i32))
            .sum::<f64>()
}

/// ρ = 1 + 2 r₁ from the lag-1 autocorrelation r₁ of differences, folded below 1 (see the
/// module's doc); `None` when they do not vary.
fn folded_rho(diffs: &[f64]) -> Option<f64> {
    let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
    let dev: Vec<f64> = diffs.iter().map(|d| d - mean).collect();
    let denom: f64 = dev.iter().map(|d| d * d).sum();
    if denom <= 0.0 {
        return None;
    }
    let r1 = dev.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / denom;
    let raw = 1.0 + 2.0 * r1;
    Some(if raw > 1.0 { 2.0 - raw } else { raw })
}

/// `x` averaged into at most `MAX_N` consecutive batches of equal length (a trailing part
/// batch left out), with the batch length.
pub fn batched(x: &[f64]) -> (Vec<f64>, usize) {
    let b = x.len().div_ceil(MAX_N).max(1);
    if b == 1 {
        return (x.to_vec(), 1);
    }
    let means = x
        .chunks_exact(b)
        .map(|c| c.iter().sum::<f64>() / b as f64)
        .collect();
    (means, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The expected values were computed independently from the formulas alone by this
    // Python script (standard library only), printing mk(x) for each series:
    //
    //   import math
    //   from collections import Counter
    //   def sign(x): return (x>0)-(x<0)
    //   def sen(x):
    //       n=len(x); s=sorted((x[j]-x[i])/(j-i) for i in range(n) for j in range(i+1,n))
    //       m=len(s); return s[m//2] if m%2 else (s[m//2-1]+s[m//2])/2
    //   def mk(x):
    //       n=len(x); S=sum(sign(x[j]-x[i]) for i in range(n) for j in range(i+1,n))
    //       ties=[t for t in Counter(x).values() if t>1]
    //       var=(n*(n-1)*(2*n+5)-sum(t*(t-1)*(2*t+5) for t in ties))/18
    //       def folded(d):
    //           m=sum(d)/len(d); den=sum((v-m)**2 for v in d)
    //           if den<=0: return None
    //           r=1+2*sum((d[i]-m)*(d[i+1]-m) for i in range(len(d)-1))/den
    //           return 2-r if r>1 else r
    //       d=[x[i+1]-x[i] for i in range(n-1)]; b=sen(d)
    //       rs=[r for r in (folded(d),folded([v-b*i for i,v in enumerate(d)])) if r is not None]
    //       rho=min(max(min(rs),-0.99),0.99) if rs else 0.0
    //       ratio=max(1.0,1+2*sum((1-k/n)*rho**k for k in range(1,n)))
    //       z=(S-sign(S))/math.sqrt(var*ratio) if S!=0 else 0.0
    //       return dict(S=S,var=repr(var),rho=repr(rho),ratio=repr(ratio),z=repr(z),p=repr(math.erfc(abs(z)/math.sqrt(2))),slope=sen(x))

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn a_rising_series_matches_the_reference() {
        // S 58, Var 212.667 (no ties), ρ −0.372 so n/n* is floored at 1, z 3.90864, p 9.2819e-5.
        let x = [10., 12., 11., 14., 13., 15., 17., 16., 18., 20., 19., 22.];
        let t = mann_kendall(&x).unwrap();
        assert_eq!((t.n, t.s), (12, 58));
        assert!(close(t.var_s, 212.666_666_666_666_66), "{t:?}");
        assert_eq!(t.correction, 1.0);
        assert!(close(t.z, 3.908_635_243_545_327_3), "{t:?}");
        assert!(close(t.p, 9.281_898_133_684_64e-5), "{t:?}");
        assert_eq!(t.slope, 1.0);
    }

    #[test]
    fn ties_lower_the_variance_of_a_flat_series() {
        // S 4, Var 294.667 (333.667 without ties), z 0.174766, p 0.861264, slope 0.
        let x = [5., 3., 5., 4., 5., 6., 4., 5., 3., 5., 4., 6., 5., 4.];
        let t = mann_kendall(&x).unwrap();
        assert_eq!(t.s, 4);
        assert!(close(t.var_s, 294.666_666_666_666_7), "{t:?}");
        assert!(close(t.z, 0.174_765_518_410_638_9), "{t:?}");
        assert!(close(t.p, 0.861_263_883_621_308_9), "{t:?}");
        assert_eq!(t.slope, 0.0);
    }

    #[test]
    fn autocorrelation_widens_the_variance() {
        // A slope of 0.3 under AR(1) noise (φ 0.6, σ 2): S 97, Var 949 (one tie), ρ 0.867911,
        // n/n* 9.459470, z 1.013222, p 0.310954 (the plain test: p 0.0017), slope 0.26.
        let x = [
            0.1, 1.3, 0.3, 1.4, 3.4, 3.6, 6.2, 3.0, 3.1, 1.7, 0.8, 1.6, 3.0, 4.4, 5.5, 9.8, 9.7,
            4.8, 5.7, 4.6,
        ];
        let t = mann_kendall(&x).unwrap();
        assert_eq!(t.s, 97);
        assert!(close(t.var_s, 949.0), "{t:?}");
        assert!(close(t.correction, 9.459_470_072_846_477), "{t:?}");
        assert!(close(t.z, 1.013_222_261_368_009_5), "{t:?}");
        assert!(close(t.p, 0.310_954_009_612_738_67), "{t:?}");
        assert!(close(t.slope, 0.26), "{t:?}");
    }

    #[test]
    fn a_smooth_warm_up_is_not_taken_for_persistence() {
        // Operations per 100 ms of 8 clients whose latency falls linearly from 6 to 2.25 ms
        // over 6 s, with a ±2 wobble: S 1749, ρ 0.041295 (the first differences alone, folded:
        // 0.969; unfolded: clamped at 0.99, n/n* 49.6 and p 0.11), n/n* 1.084650, z 10.706269,
        // p 9.5119e-27.
        let x: Vec<f64> = (0..60)
            .map(|i| {
                let latency = 6.0 - 5.0 * (i as f64 / 10.0 + 0.05) / 8.0;
                (800.0 / latency).round() + ((i * 7) % 5) as f64 - 2.0
            })
            .collect();
        let t = mann_kendall(&x).unwrap();
        assert_eq!(t.s, 1749);
        assert!(close(t.var_s, 24_576.333_333_333_332), "{t:?}");
        assert!(close(t.correction, 1.084_649_682_800_913_8), "{t:?}");
        assert!(close(t.z, 10.706_268_656_533_386), "{t:?}");
        assert!(
            (t.p / 9.511_873_489_768_012e-27 - 1.0).abs() < 1e-6,
            "{t:?}"
        );
    }

    #[test]
    fn too_short_or_not_finite_gives_nothing() {
        assert_eq!(mann_kendall(&[1.0; 7]), None);
        assert_eq!(mann_kendall(&[1., 2., 3., 4., 5., 6., 7., f64::NAN]), None);
        // All equal: no trend at all.
        let t = mann_kendall(&[3.0; 10]).unwrap();
        assert_eq!((t.s, t.z, t.p, t.slope), (0, 0.0, 1.0, 0.0));
    }

    #[test]
    fn long_series_are_batched() {
        let x: Vec<f64> = (0..2500).map(|i| i as f64).collect();
        let (b, len) = batched(&x);
        assert_eq!((b.len(), len), (833, 3));
        assert_eq!(b[0], 1.0);
        assert_eq!(batched(&x[..10]).0.len(), 10);
    }
}

#[cfg(test)]
mod false_alarms {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    /// The share of `runs` AR(1) series (x_t = φ x_{t−1} + e_t) of length `n` that the test
    /// calls trending at p < 0.01, the verdict's level.
    fn alarm_rate(phi: f64, n: usize, runs: usize) -> f64 {
        let mut rng = StdRng::seed_from_u64(17);
        let alarms = (0..runs)
            .filter(|_| {
                let mut x = 0.0;
                let series: Vec<f64> = (0..n)
                    .map(|_| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        x = phi * x + e;
                        x
                    })
                    .collect();
                mann_kendall(&series).unwrap().p < 0.01
            })
            .count();
        alarms as f64 / runs as f64
    }

    /// The simulation in the module's comment: white noise is called trending at most at
    /// the level, an AR(1) series with φ = 0.5 at most three times, φ = 0.8 five times as often.
    #[test]
    fn no_trend_is_seen_about_as_often_as_the_level_says() {
        let white = alarm_rate(0.0, 20, 2000);
        assert!(white <= 0.012, "white noise: {white}");
        for (phi, most) in [(0.5, 0.03), (0.8, 0.05), (0.9, 0.10)] {
            let ar = alarm_rate(phi, 40, 2000);
            assert!(ar <= most, "AR(1) {phi}: {ar}");
        }
    }

    /// The ground truth the guards were made for: a 60-interval warm-up (8 clients, latency
    /// falling linearly from 6 to 2.25 ms, operations per 100 ms) under low noise, with and
    /// without slow AR(1) wander, is flagged nearly always (without the guards: never to 30 %).
    #[test]
    fn a_low_noise_warm_up_is_flagged() {
        let mut rng = StdRng::seed_from_u64(5);
        for (noise, phi, wander) in [(0.02, 0.0, 0.0), (0.05, 0.0, 0.0), (0.1, 0.9, 0.01)] {
            let flagged = (0..200)
                .filter(|_| {
                    let mut a = 0.0;
                    let series: Vec<f64> = (0..60)
                        .map(|i| {
                            let latency = 6.0 - 5.0 * (i as f64 / 10.0 + 0.05) / 8.0;
                            let mean = 800.0 / latency;
                            let e: f64 = StandardNormal.sample(&mut rng);
                            let u: f64 = StandardNormal.sample(&mut rng);
                            a = phi * a + wander * e;
                            mean * (1.0 + a) + noise * mean.sqrt() * u
                        })
                        .collect();
                    mann_kendall(&series).unwrap().p < 0.01
                })
                .count();
            assert!(flagged >= 180, "noise {noise}, φ {phi}: {flagged} of 200");
        }
    }
}
