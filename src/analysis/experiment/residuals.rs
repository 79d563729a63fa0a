//! The checks the t intervals and F tests rest on, run on the residuals (observation minus
//! fitted value):
//!
//! - **Normality**: the Anderson-Darling test with the mean and variance estimated
//!   (D'Agostino & Stephens 1986, the modified statistic A*² = A²(1 + 0.75/n + 2.25/n²) and
//!   their p-value approximation). It needs at least 8 residuals.
//! - **Constant variance**: the Brown-Forsythe test (Levene's test on the absolute
//!   deviations from each cell's median, an F test across cells), with 3 replicates or more;
//!   and whether the spread grows with the mean (Spearman's ρ between the cells' means and
//!   standard deviations, p from its t approximation), with 2 replicates or more and at
//!   least 4 cells. A spread that grows with the mean is what a multiplicative effect on the
//!   additive scale looks like: the log scale is then the right one.

use statrs::distribution::{ContinuousCDF, FisherSnedecor, Normal, StudentsT};

use super::anova::mean;

/// The level below which a check fails.
pub const ALPHA: f64 = 0.05;

/// Anderson-Darling's p-value for normality, or None with fewer than 8 values or none spread.
pub fn anderson_darling(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 8 {
        return None;
    }
    let m = mean(values);
    let sd = (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    if sd.is_nan() || sd <= 0.0 || !sd.is_finite() {
        return None;
    }
    let mut z: Vec<f64> = values.iter().map(|v| (v - m) / sd).collect();
    z.sort_by(f64::total_cmp);
    let normal = Normal::new(0.0, 1.0).ok()?;
    let nf = n as f64;
    let s: f64 = (0..n)
        .map(|i| {
            let lo = normal.cdf(z[i]).max(1e-300);
            let hi = normal.sf(z[n - 1 - i]).max(1e-300);
            (2 * i + 1) as f64 * (lo.ln() + hi.ln())
        })
        .sum();
    let a2 = -nf - s / nf;
    let a = a2 * (1.0 + 0.75 / nf + 2.25 / (nf * nf));
    let p = if a >= 0.6 {
        (1.2937 - 5.709 * a + 0.0186 * a * a).exp()
    } else if a >= 0.34 {
        (0.9177 - 4.279 * a - 1.38 * a * a).exp()
    } else if a >= 0.2 {
        1.0 - (-8.318 + 42.796 * a - 59.938 * a * a).exp()
    } else {
        1.0 - (-13.436 + 101.14 * a - 223.73 * a * a).exp()
    };
    Some((a, p.clamp(0.0, 1.0)))
}

/// Brown-Forsythe: F and p of a one-way analysis of variance of |y − the cell's median|;
/// None below 3 replicates or 2 cells, or when nothing varies.
pub fn brown_forsythe(cells: &[Vec<f64>]) -> Option<(f64, f64)> {
    let r = cells.first()?.len();
    if r < 3 || cells.len() < 2 {
        return None;
    }
    let z: Vec<Vec<f64>> = cells
        .iter()
        .map(|c| {
            let m = median(c);
            c.iter().map(|y| (y - m).abs()).collect()
        })
        .collect();
    let all: Vec<f64> = z.iter().flatten().copied().collect();
    let grand = mean(&all);
    let between: f64 = z
        .iter()
        .map(|c| c.len() as f64 * (mean(c) - grand).powi(2))
        .sum();
    let within: f64 = z
        .iter()
        .map(|c| {
            let m = mean(c);
            c.iter().map(|v| (v - m).powi(2)).sum::<f64>()
        })
        .sum();
    let (d1, d2) = ((cells.len() - 1) as f64, (all.len() - cells.len()) as f64);
    if within <= 0.0 {
        return None;
    }
    let f = (between / d1) / (within / d2);
    let p = FisherSnedecor::new(d1, d2).ok()?.sf(f);
    Some((f, p))
}

/// Spearman's ρ between the cells' means and standard deviations, and its one-sided p for
/// ρ > 0; None below 2 replicates or 4 cells.
pub fn spread_with_mean(cells: &[Vec<f64>]) -> Option<(f64, f64)> {
    let r = cells.first()?.len();
    if r < 2 || cells.len() < 4 {
        return None;
    }
    let means: Vec<f64> = cells.iter().map(|c| mean(c)).collect();
    let sds: Vec<f64> = cells
        .iter()
        .map(|c| {
            let m = mean(c);
            (c.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (c.len() - 1) as f64).sqrt()
        })
        .collect();
    let rho = pearson(&ranks(&means), &ranks(&sds))?;
    let n = cells.len() as f64;
    if rho >= 1.0 {
        return Some((rho, 0.0));
    }
    let t = rho * ((n - 2.0) / (1.0 - rho * rho)).sqrt();
    let p = StudentsT::new(0.0, 1.0, n - 2.0).ok()?.sf(t);
    Some((rho, p))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Ranks from 1, ties given their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let (ma, mb) = (mean(a), mean(b));
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Exp, Normal as N};

    #[test]
    fn anderson_darling_tells_normal_from_skewed() {
        let mut rng = SmallRng::seed_from_u64(7);
        let (mut normal_fails, mut exp_fails) = (0, 0);
        for _ in 0..200 {
            let n: Vec<f64> = (0..40)
                .map(|_| N::new(0.0, 1.0).unwrap().sample(&mut rng))
                .collect();
            let e: Vec<f64> = (0..40)
                .map(|_| Exp::new(1.0).unwrap().sample(&mut rng))
                .collect();
            normal_fails += usize::from(anderson_darling(&n).unwrap().1 < ALPHA);
            exp_fails += usize::from(anderson_darling(&e).unwrap().1 < ALPHA);
        }
        // About 5 % of normal samples fail; nearly every exponential one does.
        assert!((2..=22).contains(&normal_fails), "{normal_fails}");
        assert!(exp_fails > 180, "{exp_fails}");
        assert!(anderson_darling(&[1.0; 7]).is_none());
    }

    #[test]
    fn unequal_spread_is_found() {
        let cells: Vec<Vec<f64>> = (1..=6)
            .map(|k| {
                let s = (k * k * k) as f64;
                vec![10.0 * s - s, 10.0 * s, 10.0 * s + s, 10.0 * s + 0.5 * s]
            })
            .collect();
        let (rho, p) = spread_with_mean(&cells).unwrap();
        assert!(rho > 0.99 && p < 0.01, "{rho} {p}");
        let (_, p) = brown_forsythe(&cells).unwrap();
        assert!(p < 0.05, "{p}");
        assert_eq!(ranks(&[3.0, 1.0, 3.0]), [2.5, 1.0, 2.5]);
    }
}
