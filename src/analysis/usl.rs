//! The Universal Scalability Law: how throughput grows with concurrency, and where it peaks.
//!
//! Gunther, *Guerrilla Capacity Planning* (Springer, 2007), chapters 4–6: with N clients,
//!
//! ```text
//! X(N) = λN / (1 + σ(N−1) + κN(N−1))
//! ```
//!
//! where λ is the throughput of one client, σ the contention (the serialised fraction, as in
//! Amdahl's law) and κ the coherency cost (crosstalk between every pair of clients). With
//! κ > 0 throughput peaks at N* = √((1−σ)/κ) and falls beyond it; with κ = 0 it levels off
//! at λ/σ.
//!
//! The fit is nonlinear least squares on the measured throughputs. For fixed (σ, κ) the
//! model is linear in λ, so λ has a closed form and only (σ, κ) are searched: the variable
//! projection idea of Golub & Pereyra, "The differentiation of pseudo-inverses and nonlinear
//! least squares problems whose variables separate", SIAM J. Numer. Anal. 10 (1973). The
//! search is a grid over σ ∈ [0, 1] and κ ∈ [0, 1] (logarithmic steps, zero included); the
//! best grid point starts a Levenberg–Marquardt refinement of all three parameters
//! (Marquardt, "An algorithm for least-squares estimation of nonlinear parameters",
//! J. SIAM 11, 1963, with the diagonal scaling of that paper), each step projected back onto
//! σ, κ ∈ [0, 1]. The grid finds the right valley; LM follows it, however narrow, to the
//! bottom.

use super::fit::{mean, r_squared, relative_rmse};
use crate::result::models::{UslFit, Verdict};
use crate::result::sweep::{CurvePoint, UslModel};

/// Fewer distinct client counts than this cannot tell σ from κ.
pub const MIN_DISTINCT_N: usize = 4;
/// A fit whose residuals stay within this fraction of the mean throughput is good …
const GOOD_RMSE: f64 = 0.05;
/// … and so is one that explains this much of the variance with residuals under 10 %.
const GOOD_R2: f64 = 0.95;
const FAIR_RMSE: f64 = 0.10;

impl UslFit {
    /// The model's throughput at concurrency `n`.
    pub fn throughput(&self, n: f64) -> f64 {
        model(self.lambda, self.sigma, self.kappa, n)
    }

    /// `samples` points of the fitted curve from N = 1 to `to`, for plots.
    pub fn curve(&self, to: f64, samples: usize) -> Vec<(f64, f64)> {
        let samples = samples.max(2);
        (0..samples)
            .map(|i| {
                let n = 1.0 + (to - 1.0).max(0.0) * i as f64 / (samples - 1) as f64;
                (n, self.throughput(n))
            })
            .collect()
    }
}

impl UslModel {
    /// The model of a clients sweep whose largest client count is `max_n`, with its curve
    /// sampled for plots when the fit is good.
    pub fn new(fit: UslFit, max_n: f64) -> UslModel {
        // Out to the peak when it is near the measured range, so a plot shows it.
        let to = match fit.peak_n {
            Some(p) if p <= 2.0 * max_n => max_n.max(p) * 1.1,
            _ => max_n * 1.1,
        };
        let curve = if fit.verdict == Verdict::Good {
            CurvePoint::all(fit.curve(to, 100))
        } else {
            Vec::new()
        };
        UslModel { fit, curve }
    }
}

pub fn model(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// For fixed σ, κ: the best λ and the residual sum of squares.
fn profile(points: &[(f64, f64)], sigma: f64, kappa: f64) -> (f64, f64) {
    let g: Vec<f64> = points
        .iter()
        .map(|&(n, _)| model(1.0, sigma, kappa, n))
        .collect();
    let gg: f64 = g.iter().map(|g| g * g).sum();
    let gx: f64 = g.iter().zip(points).map(|(g, (_, x))| g * x).sum();
    let lambda = if gg > 0.0 { gx / gg } else { 0.0 };
    let rss = g
        .iter()
        .zip(points)
        .map(|(g, (_, x))| (x - lambda * g).powi(2))
        .sum();
    (lambda, rss)
}

/// Levenberg–Marquardt from (σ, κ) with λ at its best, within σ, κ ∈ [0, 1].
fn refine(points: &[(f64, f64)], sigma: f64, kappa: f64) -> (f64, f64, f64, f64) {
    let sse = |p: [f64; 3]| -> f64 {
        points
            .iter()
            .map(|&(n, x)| (x - model(p[0], p[1], p[2], n)).powi(2))
            .sum()
    };
    let mut p = [profile(points, sigma, kappa).0, sigma, kappa];
    let mut err = sse(p);
    let mut mu = 1e-3;
    for _ in 0..200 {
        // Normal equations JᵀJ δ = Jᵀr of the residuals r = x − X(N).
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        for &(n, x) in points {
            let d = 1.0 + p[1] * (n - 1.0) + p[2] * n * (n - 1.0);
            let j = [
                n / d,
                -p[0] * n * (n - 1.0) / (d * d),
                -p[0] * n * n * (n - 1.0) / (d * d),
            ];
            let r = x - p[0] * n / d;
            for a in 0..3 {
                jtr[a] += j[a] * r;
                for b in 0..3 {
                    jtj[a][b] += j[a] * j[b];
                }
            }
        }
        let mut improved = false;
        while mu < 1e12 {
            let mut m = jtj;
            for (a, row) in m.iter_mut().enumerate() {
                row[a] += mu * jtj[a][a].max(1e-300);
            }
            let Some(delta) = solve3(m, jtr) else {
                mu *= 10.0;
                continue;
            };
            let trial = [
                p[0] + delta[0],
                (p[1] + delta[1]).clamp(0.0, 1.0),
                (p[2] + delta[2]).clamp(0.0, 1.0),
            ];
            let e = sse(trial);
            if e < err {
                let gain = (err - e) / err.max(f64::MIN_POSITIVE);
                (p, err, mu) = (trial, e, (mu / 10.0).max(1e-12));
                improved = gain > 1e-15;
                break;
            }
            mu *= 10.0;
        }
        if !improved {
            break;
        }
    }
    (p[0], p[1], p[2], err)
}

/// Solve a 3×3 linear system by Cramer's rule; `None` when it is singular.
fn solve3(m: [[f64; 3]; 3], b: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(m);
    if d == 0.0 || !d.is_finite() {
        return None;
    }
    let mut out = [0.0; 3];
    for (c, o) in out.iter_mut().enumerate() {
        let mut mc = m;
        for r in 0..3 {
            mc[r][c] = b[r];
        }
        *o = det(mc) / d;
    }
    Some(out)
}

/// `0` followed by `count` logarithmically spaced values from `lo` to `hi`.
fn log_grid(lo: f64, hi: f64, count: usize) -> impl Iterator<Item = f64> {
    let (a, b) = (lo.ln(), hi.ln());
    std::iter::once(0.0)
        .chain((0..count).map(move |i| (a + (b - a) * i as f64 / (count - 1) as f64).exp()))
}

/// Fit the USL to `(clients, throughput)` points; repeated client counts are welcome.
/// Points with a non-finite value, N < 1 or negative throughput are ignored.
pub fn fit(points: &[(f64, f64)]) -> UslFit {
    let points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(n, x)| n.is_finite() && x.is_finite() && *n >= 1.0 && *x >= 0.0)
        .collect();
    let mut ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    let distinct_n = ns.len();

    // Coarse grid, then compass refinement from the best grid point.
    let mut best = (f64::INFINITY, 0.0, 0.0);
    for sigma in log_grid(1e-4, 1.0, 41) {
        for kappa in log_grid(1e-7, 1.0, 57) {
            let (_, rss) = profile(&points, sigma, kappa);
            if rss < best.0 {
                best = (rss, sigma, kappa);
            }
        }
    }
    let (_, sigma, kappa) = best;
    let (lambda, sigma, kappa, rss) = refine(&points, sigma, kappa);

    let xs: Vec<f64> = points.iter().map(|p| p.1).collect();
    let r2 = r_squared(&xs, rss);
    let rel = relative_rmse(&xs, rss);
    let (verdict, reason) = if distinct_n < MIN_DISTINCT_N {
        (
            Verdict::Insufficient,
            Some(format!(
                "{distinct_n} different client counts; the USL needs at least {MIN_DISTINCT_N}"
            )),
        )
    } else if mean(&xs) <= 0.0 {
        (
            Verdict::Insufficient,
            Some("no operation succeeded at any point".to_string()),
        )
    } else if rel <= GOOD_RMSE || (r2 >= GOOD_R2 && rel <= FAIR_RMSE) {
        (Verdict::Good, None)
    } else {
        (
            Verdict::Poor,
            Some(format!(
                "R² {r2:.2}, residuals {:.0}% of the mean throughput: the points do not follow the USL",
                rel * 100.0
            )),
        )
    };
    let (peak_n, peak_throughput) = if kappa > 0.0 && sigma < 1.0 {
        let n = ((1.0 - sigma) / kappa).sqrt();
        (Some(n), Some(model(lambda, sigma, kappa, n)))
    } else {
        (None, None)
    };
    UslFit {
        verdict,
        reason,
        lambda,
        sigma,
        kappa,
        r_squared: r2,
        relative_rmse: rel,
        points: points.len(),
        distinct_n,
        peak_n,
        peak_throughput,
        ceiling: (kappa == 0.0 && sigma > 0.0).then(|| lambda / sigma),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    const NS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0];

    fn points(lambda: f64, sigma: f64, kappa: f64) -> Vec<(f64, f64)> {
        NS.iter()
            .map(|&n| (n, model(lambda, sigma, kappa, n)))
            .collect()
    }

    #[test]
    fn recovers_exact_parameters() {
        // Tolerance: 0.1 % relative on every parameter for noiseless data.
        for (l, s, k) in [
            (1000.0, 0.05, 0.002),
            (200.0, 0.1, 0.0001),
            (50.0, 0.3, 0.01),
        ] {
            let f = fit(&points(l, s, k));
            assert_eq!(f.verdict, Verdict::Good, "{f:?}");
            assert!((f.lambda / l - 1.0).abs() < 1e-3, "λ {f:?}");
            assert!((f.sigma / s - 1.0).abs() < 1e-3, "σ {f:?}");
            assert!((f.kappa / k - 1.0).abs() < 1e-3, "κ {f:?}");
            let n_star = ((1.0 - s) / k).sqrt();
            assert!((f.peak_n.unwrap() / n_star - 1.0).abs() < 1e-3);
            assert!(f.r_squared > 0.999_999);
        }
    }

    #[test]
    fn linear_and_amdahl_cases_have_zero_coherency() {
        // Tolerance: absolute 1e-6 on the parameters that are zero.
        let f = fit(&points(100.0, 0.0, 0.0));
        assert!(f.sigma < 1e-6 && f.kappa < 1e-6, "{f:?}");
        assert_eq!(f.peak_n, None);
        let f = fit(&points(100.0, 0.2, 0.0));
        assert!((f.sigma - 0.2).abs() < 1e-4 && f.kappa < 1e-6, "{f:?}");
        assert!((f.ceiling.unwrap() - 500.0).abs() < 0.5);
    }

    #[test]
    fn recovers_parameters_under_noise() {
        // 2 % multiplicative noise, three repeats per point, fixed seed.
        // Tolerance: λ within 5 %, σ within ±0.02, κ within 25 %, N* within 15 %.
        let mut rng = SmallRng::seed_from_u64(7);
        let mut pts = Vec::new();
        for _ in 0..3 {
            for (n, x) in points(500.0, 0.05, 0.002) {
                pts.push((n, x * (1.0 + rng.random_range(-0.02..0.02))));
            }
        }
        let f = fit(&pts);
        assert_eq!(f.verdict, Verdict::Good, "{f:?}");
        assert!((f.lambda / 500.0 - 1.0).abs() < 0.05, "{f:?}");
        assert!((f.sigma - 0.05).abs() < 0.02, "{f:?}");
        assert!((f.kappa / 0.002 - 1.0).abs() < 0.25, "{f:?}");
        let n_star = (0.95f64 / 0.002).sqrt();
        assert!((f.peak_n.unwrap() / n_star - 1.0).abs() < 0.15, "{f:?}");
    }

    #[test]
    fn says_when_the_points_do_not_follow_the_law() {
        // A saw-tooth: throughput jumps up and down with N.
        let pts: Vec<(f64, f64)> = NS
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, if i % 2 == 0 { 100.0 } else { 1000.0 }))
            .collect();
        let f = fit(&pts);
        assert_eq!(f.verdict, Verdict::Poor, "{f:?}");
        assert!(f.reason.unwrap().contains("do not follow"));
        let few = fit(&[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0)]);
        assert_eq!(few.verdict, Verdict::Insufficient);
    }

    #[test]
    fn flat_throughput_is_full_contention() {
        // Tolerance: σ within 0.05 of 1 when throughput does not grow with N at all.
        let pts: Vec<(f64, f64)> = NS.iter().map(|&n| (n, 300.0)).collect();
        let f = fit(&pts);
        assert_eq!(f.verdict, Verdict::Good);
        assert!(f.sigma > 0.95, "{f:?}");
    }
}
