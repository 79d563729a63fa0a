//! Least squares pieces shared by the models: a straight-line fit and goodness of fit. The
//! verdict a model carries, so that nobody reads parameters from a fit that does not hold,
//! is [`crate::result::models::Verdict`].

/// Ordinary least squares fit of `y = a + b·x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
    /// Residual sum of squares.
    pub rss: f64,
    /// Sum of squared deviations of x from its mean (for the slope's standard error).
    pub sxx: f64,
}

/// Fit `y = a + b·x` by ordinary least squares. `None` with fewer than two points or when
/// every x is the same.
pub fn line(xs: &[f64], ys: &[f64]) -> Option<Line> {
    let m = xs.len().min(ys.len());
    if m < 2 {
        return None;
    }
    let mx = mean(&xs[..m]);
    let my = mean(&ys[..m]);
    let sxx: f64 = xs[..m].iter().map(|x| (x - mx).powi(2)).sum();
    if sxx <= 0.0 || !sxx.is_finite() {
        return None;
    }
    let sxy: f64 = xs[..m]
        .iter()
        .zip(&ys[..m])
        .map(|(x, y)| (x - mx) * (y - my))
        .sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let rss = xs[..m]
        .iter()
        .zip(&ys[..m])
        .map(|(x, y)| (y - intercept - slope * x).powi(2))
        .sum();
    Some(Line {
        intercept,
        slope,
        rss,
        sxx,
    })
}

pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Coefficient of determination: 1 − RSS/TSS. Zero when the points do not vary at all.
pub fn r_squared(ys: &[f64], rss: f64) -> f64 {
    let my = mean(ys);
    let tss: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
    if tss > 0.0 {
        1.0 - rss / tss
    } else {
        0.0
    }
}

/// Root mean square residual as a fraction of the mean of `ys` (0 when the mean is 0).
pub fn relative_rmse(ys: &[f64], rss: f64) -> f64 {
    let my = mean(ys);
    if ys.is_empty() || my == 0.0 {
        0.0
    } else {
        (rss / ys.len() as f64).sqrt() / my.abs()
    }
}

/// Akaike's information criterion with the small-sample correction, for a least squares fit
/// with `k` parameters (the residual variance counted among them) to `m` points.
/// Hurvich & Tsai, "Regression and time series model selection in small samples",
/// Biometrika 76 (1989); Burnham & Anderson, *Model Selection and Multimodel Inference*
/// (2nd ed., 2002), §2.4. `None` when `m ≤ k + 1`.
pub fn aicc(rss: f64, m: usize, k: usize) -> Option<f64> {
    if m <= k + 1 {
        return None;
    }
    let (m, k) = (m as f64, k as f64);
    // An exact fit has RSS 0; the floor keeps the logarithm finite and the order right.
    let rss = rss.max(f64::MIN_POSITIVE);
    Some(m * (rss / m).ln() + 2.0 * k + 2.0 * k * (k + 1.0) / (m - k - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_recovers_exact_coefficients() {
        // Tolerance 1e-12: the data lie exactly on y = 3 + 2x.
        let xs = [0.0, 1.0, 2.0, 5.0];
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 + 2.0 * x).collect();
        let l = line(&xs, &ys).unwrap();
        assert!((l.intercept - 3.0).abs() < 1e-12);
        assert!((l.slope - 2.0).abs() < 1e-12);
        assert!(l.rss < 1e-20);
        assert!((r_squared(&ys, l.rss) - 1.0).abs() < 1e-12);
        assert!(line(&[1.0, 1.0], &[2.0, 3.0]).is_none());
    }

    #[test]
    fn aicc_prefers_fewer_parameters_at_equal_fit() {
        let a = aicc(1.0, 10, 2).unwrap();
        let b = aicc(1.0, 10, 3).unwrap();
        assert!(a < b);
        assert!(aicc(1.0, 3, 2).is_none());
    }
}
