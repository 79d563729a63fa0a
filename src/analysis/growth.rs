//! The complexity class of a cost that grows with the data: seed 003's "time to add another
//! 1000 records" against the records already stored, per backend.
//!
//! Each candidate `t = a + b·f(n)` with f(n) = 1 (O(1), the constant model `t = a`),
//! ln(1+n) (O(log n)), n (O(n)) and n·ln(1+n) (O(n log n)) is fitted by ordinary least
//! squares, and the candidates are ranked by AICc (Hurvich & Tsai 1989; Burnham & Anderson
//! 2002, see [`super::fit::aicc`]). A growing class is chosen only when
//!
//! - its slope b is positive (a cost that shrinks with the data is not a growth class),
//! - its AICc beats the constant model's by more than 2 (Burnham & Anderson §2.6: a
//!   difference under 2 gives both models substantial support, so the simpler one stands),
//! - and the cost it predicts changes by at least 10 % across the measured range: seed 003
//!   calls the sharded layout "O(1) up to 5×10⁵ files" for exactly this reason, since a
//!   growth too small to matter in the range studied is no growth for the reader.
//!
//! Otherwise the class is O(1). A higher growing class must beat every lower one by more than
//! 10 in AICc (Burnham & Anderson §2.6: beyond 10 the weaker model has essentially no
//! support): claiming worse growth takes strong evidence, and over a short range O(n) and
//! O(n log n) are hard to tell apart. The lowest class within 10 of the best is chosen, and
//! the higher ones within reach are named as not ruled out. The fit quality is the chosen model's residual spread: a
//! series with residuals above 10 % of its mean is marked poor.
//!
//! Single batches far slower than the model are set aside and reported (seed 003's "22
//! seconds for 1000 files" after an OS write-back): the candidates are ranked, and a batch
//! whose residual under the best one is above 10 % of the predicted time and above 3.5
//! robust standard deviations (1.4826 × the median absolute residual; Iglewicz & Hoaglin,
//! *How to Detect and Handle Outliers*, ASQC 1993) is set aside, then the candidates are
//! ranked again without it, until no batch goes (three rounds at most). Only slow batches
//! go, because a stall slows a batch and nothing makes one anomalously fast; and when more
//! than a fifth of the batches would go, the series scatters rather than spikes, and none
//! does.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::fit::{aicc, line, mean, r_squared, relative_rmse};
use crate::result::models::{Candidate, Class, GrowthFit, Verdict};
use crate::result::sweep::{CurvePoint, GrowthModel};

/// Fewer batches than this cannot rank four models.
pub const MIN_POINTS: usize = 5;
/// A growth class must change the cost by at least this fraction over the measured range.
const MIN_CHANGE: f64 = 0.10;
/// AICc advantage a growing model needs over the constant one.
const MIN_AICC_GAIN: f64 = 2.0;
/// AICc advantage a higher growing class needs over a lower one.
const CLASS_AICC_GAIN: f64 = 10.0;
/// Residuals above this fraction of the mean batch time make the fit poor.
const GOOD_RMSE: f64 = 0.10;
/// Outliers: modified z-score and relative distance from the running median.
const OUTLIER_Z: f64 = 3.5;
const OUTLIER_REL: f64 = 0.10;
/// More outliers than this fraction of the batches means scatter, not spikes: none is set aside.
const MAX_OUTLIERS: f64 = 0.2;

impl Class {
    /// The regressor f(n) of the class (0 for the constant model, which has no slope).
    pub fn f(self, n: f64) -> f64 {
        let n = n.max(0.0);
        match self {
            Class::Constant => 0.0,
            Class::Log => n.ln_1p(),
            Class::Linear => n,
            Class::NLogN => n * n.ln_1p(),
        }
    }
}

impl GrowthFit {
    pub fn predict(&self, n: f64) -> f64 {
        self.intercept + self.slope * self.class.f(n)
    }

    /// `samples` points of the fitted curve over `[from, to]`, for plots.
    pub fn curve(&self, from: f64, to: f64, samples: usize) -> Vec<(f64, f64)> {
        let samples = samples.max(2);
        (0..samples)
            .map(|i| {
                let n = from + (to - from) * i as f64 / (samples - 1) as f64;
                (n, self.predict(n))
            })
            .collect()
    }
}

impl GrowthModel {
    /// The model of `series`, with its curve sampled over `[from, to]` records for plots.
    pub fn new(series: String, fit: GrowthFit, from: f64, to: f64) -> GrowthModel {
        let curve = CurvePoint::all(fit.curve(from, to, 50));
        GrowthModel { series, fit, curve }
    }
}

fn candidate(class: Class, ns: &[f64], ts: &[f64]) -> Option<Candidate> {
    let (intercept, slope, rss) = if class == Class::Constant {
        let a = mean(ts);
        (a, 0.0, ts.iter().map(|t| (t - a).powi(2)).sum())
    } else {
        let fs: Vec<f64> = ns.iter().map(|&n| class.f(n)).collect();
        let l = line(&fs, ts)?;
        (l.intercept, l.slope, l.rss)
    };
    // Parameters: intercept, slope (growing classes) and the residual variance.
    let k = if class == Class::Constant { 2 } else { 3 };
    Some(Candidate {
        class,
        intercept,
        slope,
        rss,
        aicc: aicc(rss, ts.len(), k),
        r_squared: r_squared(ts, rss),
    })
}

/// The candidates fitted to `points`, and the chosen one with its change over the range.
fn rank(points: &[(f64, f64)]) -> (Vec<Candidate>, Candidate, f64) {
    let ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ts: Vec<f64> = points.iter().map(|p| p.1).collect();
    let candidates: Vec<Candidate> = Class::ALL
        .iter()
        .filter_map(|&c| candidate(c, &ns, &ts))
        .collect();
    let constant = candidates
        .iter()
        .find(|c| c.class == Class::Constant)
        .cloned()
        .unwrap_or(Candidate {
            class: Class::Constant,
            intercept: 0.0,
            slope: 0.0,
            rss: 0.0,
            aicc: None,
            r_squared: 0.0,
        });
    let level = mean(&ts).abs();
    let (n_lo, n_hi) = ns
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &n| {
            (a.min(n), b.max(n))
        });
    let change = |c: &Candidate| {
        if level > 0.0 {
            c.slope * (c.class.f(n_hi) - c.class.f(n_lo)) / level
        } else {
            0.0
        }
    };
    let growing: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.class != Class::Constant && c.slope > 0.0 && c.aicc.is_some())
        .collect();
    let best_aicc = growing
        .iter()
        .filter_map(|c| c.aicc)
        .fold(f64::INFINITY, f64::min);
    // Class::ALL is in order of growth, so the first within reach is the lowest.
    let best_growth = growing
        .iter()
        .find(|c| c.aicc.is_some_and(|a| a <= best_aicc + CLASS_AICC_GAIN))
        .copied();
    let change_over_range = best_growth.map_or(0.0, change);
    let chosen = match (best_growth, constant.aicc) {
        (Some(g), Some(c0))
            if g.aicc.is_some_and(|a| a < c0 - MIN_AICC_GAIN)
                && change_over_range >= MIN_CHANGE =>
        {
            g.clone()
        }
        _ => constant,
    };
    (candidates, chosen, change_over_range)
}

/// The positions of batches far slower than `model` predicts; see the module documentation.
fn spikes(points: &[(f64, f64)], model: &Candidate) -> Vec<usize> {
    if points.len() < MIN_POINTS {
        return Vec::new();
    }
    let predicted = |n: f64| model.intercept + model.slope * model.class.f(n);
    let residuals: Vec<f64> = points.iter().map(|&(n, t)| t - predicted(n)).collect();
    let mut abs: Vec<f64> = residuals.iter().map(|r| r.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let m = abs.len();
    let mad = if m % 2 == 1 {
        abs[m / 2]
    } else {
        (abs[m / 2 - 1] + abs[m / 2]) / 2.0
    };
    let scale = 1.4826 * mad;
    let found: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let r = residuals[i];
            r > OUTLIER_REL * predicted(points[i].0).abs() && r > OUTLIER_Z * scale
        })
        .collect();
    // Spikes are rare by definition; a series that scatters everywhere keeps its batches.
    if found.len() as f64 > MAX_OUTLIERS * points.len() as f64 {
        Vec::new()
    } else {
        found
    }
}

/// Classify a series of `(records stored, time of the batch)` points.
pub fn classify(points: &[(f64, f64)]) -> GrowthFit {
    let mut points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(n, t)| n.is_finite() && t.is_finite() && *n >= 0.0)
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (outliers, (candidates, chosen, change_over_range)) = set_spikes_aside(&mut points);
    let ts: Vec<f64> = points.iter().map(|p| p.1).collect();
    let ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    let also_fits = also_fits(&candidates, &chosen);
    let rel = relative_rmse(&ts, chosen.rss);
    let (verdict, reason) = quality(points.len(), rel, chosen.class);
    GrowthFit {
        class: chosen.class,
        verdict,
        reason,
        intercept: chosen.intercept,
        slope: chosen.slope,
        slope_ci95: slope_ci95(chosen.class, &ns, &ts),
        r_squared: chosen.r_squared,
        relative_rmse: rel,
        change_over_range,
        points: points.len(),
        outliers,
        also_fits,
        candidates,
    }
}

/// Rank the candidates, then up to three times remove the spikes of the chosen model and
/// rank again. Returns the `n` of the removed points (sorted) and the last ranking.
fn set_spikes_aside(points: &mut Vec<(f64, f64)>) -> (Vec<f64>, (Vec<Candidate>, Candidate, f64)) {
    let mut outliers = Vec::new();
    let mut ranked = rank(points);
    for _ in 0..3 {
        let slow = spikes(points, &ranked.1);
        if slow.is_empty()
            || outliers.len() + slow.len() > (MAX_OUTLIERS * points.len() as f64) as usize
        {
            break;
        }
        outliers.extend(slow.iter().map(|&i| points[i].0));
        let mut i = 0;
        points.retain(|_| {
            i += 1;
            !slow.contains(&(i - 1))
        });
        ranked = rank(points);
    }
    outliers.sort_by(f64::total_cmp);
    (outliers, ranked)
}

/// Higher growing classes whose AICc is within [`CLASS_AICC_GAIN`] of the chosen one's.
fn also_fits(candidates: &[Candidate], chosen: &Candidate) -> Vec<Class> {
    match chosen.aicc {
        Some(a) if chosen.class != Class::Constant => candidates
            .iter()
            .filter(|c| c.class > chosen.class && c.slope > 0.0)
            .filter(|c| c.aicc.is_some_and(|b| b - a <= CLASS_AICC_GAIN))
            .map(|c| c.class)
            .collect(),
        _ => Vec::new(),
    }
}

/// The verdict on a fit of `points` batches with relative RMSE `rel`, and why when not good.
fn quality(points: usize, rel: f64, class: Class) -> (Verdict, Option<String>) {
    if points < MIN_POINTS {
        (
            Verdict::Insufficient,
            Some(format!(
                "{points} batches; a complexity class needs at least {MIN_POINTS}"
            )),
        )
    } else if rel > GOOD_RMSE {
        (
            Verdict::Poor,
            Some(format!(
                "batch times scatter {:.0}% around the {} curve: the class is a rough guide only",
                rel * 100.0,
                class.name()
            )),
        )
    } else {
        (Verdict::Good, None)
    }
}

/// 95 % Student t interval of the slope of `ts` against `class.f(ns)`, for growing classes.
fn slope_ci95(class: Class, ns: &[f64], ts: &[f64]) -> Option<(f64, f64)> {
    if class == Class::Constant || ts.len() <= 2 {
        return None;
    }
    let fs: Vec<f64> = ns.iter().map(|&n| class.f(n)).collect();
    let l = line(&fs, ts)?;
    let dof = (ts.len() - 2) as f64;
    let se = (l.rss / dof / l.sxx).sqrt();
    let t = StudentsT::new(0.0, 1.0, dof).ok()?.inverse_cdf(0.975);
    Some((l.slope - t * se, l.slope + t * se))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Batches of 1000 up to 50,000 records, as in seed 003, with multiplicative noise
    /// uniform within ±`noise`.
    fn noisy(f: impl Fn(f64) -> f64, seed: u64, noise: f64) -> Vec<(f64, f64)> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..50)
            .map(|k| {
                let n = 500.0 + 1000.0 * k as f64;
                (n, f(n) * (1.0 + rng.random_range(-noise..noise)))
            })
            .collect()
    }

    /// … with ±3 % noise.
    fn series(f: impl Fn(f64) -> f64, seed: u64) -> Vec<(f64, f64)> {
        noisy(f, seed, 0.03)
    }

    #[test]
    fn classifies_each_class_under_noise() {
        // Every class from five seeds; the slope within 10 % of the truth for the growing ones.
        for seed in 0..5 {
            let c = classify(&series(|_| 0.5, seed));
            assert_eq!(c.class, Class::Constant, "{c:?}");
            assert_eq!(c.verdict, Verdict::Good);

            let c = classify(&series(|n| 0.2 + 0.05 * n.ln_1p(), seed));
            assert_eq!(c.class, Class::Log, "{c:?}");
            assert!((c.slope / 0.05 - 1.0).abs() < 0.1, "{c:?}");

            let c = classify(&series(|n| 0.35 + 2e-4 * n, seed));
            assert_eq!(c.class, Class::Linear, "{c:?}");
            assert!((c.slope / 2e-4 - 1.0).abs() < 0.1, "{c:?}");
            let (lo, hi) = c.slope_ci95.unwrap();
            assert!(lo < c.slope && c.slope < hi);

            // O(n log n) is told from O(n) with ±1 % noise; with ±3 % it may only be named.
            let c = classify(&noisy(|n| 0.1 + 1e-6 * n * n.ln_1p(), seed, 0.01));
            assert_eq!(c.class, Class::NLogN, "{c:?}");
            let c = classify(&series(|n| 0.1 + 1e-6 * n * n.ln_1p(), seed));
            assert!(
                c.class == Class::NLogN
                    || (c.class == Class::Linear && c.also_fits == vec![Class::NLogN]),
                "{c:?}"
            );
        }
    }

    #[test]
    fn near_ties_go_to_the_lower_class_and_are_named() {
        // Over 1000..2000, n·ln(1+n) is nearly a straight line: data exactly linear must not
        // be called O(n log n), and O(n log n) is named as not ruled out.
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|k| {
                let n = 1000.0 + 100.0 * k as f64;
                (n, 0.1 + 1e-4 * n + if k % 2 == 0 { 1e-3 } else { -1e-3 })
            })
            .collect();
        let c = classify(&pts);
        assert_eq!(c.class, Class::Linear, "{c:?}");
        assert_eq!(c.also_fits, vec![Class::NLogN], "{c:?}");
    }

    #[test]
    fn small_growth_within_the_range_is_constant() {
        // Exactly linear, but only 4 % more over the whole range: O(1) for the reader.
        let pts: Vec<(f64, f64)> = (0..20)
            .map(|k| (1000.0 * k as f64, 1.0 + 0.04 * k as f64 / 19.0))
            .collect();
        let c = classify(&pts);
        assert_eq!(c.class, Class::Constant, "{c:?}");
        assert!((c.change_over_range - 0.04).abs() < 0.005);
    }

    #[test]
    fn shrinking_cost_is_not_growth_and_noise_is_poor() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|k| (k as f64 * 100.0, 10.0 - k as f64))
            .collect();
        assert_eq!(classify(&pts).class, Class::Constant);
        // Alternating fast and slow batches: no model holds.
        let pts: Vec<(f64, f64)> = (0..30)
            .map(|k| (k as f64 * 1000.0, if k % 2 == 0 { 1.0 } else { 0.5 }))
            .collect();
        let c = classify(&pts);
        assert_eq!(c.verdict, Verdict::Poor, "{c:?}");
        assert!(c.outliers.is_empty());
        assert_eq!(classify(&pts[..3]).verdict, Verdict::Insufficient);
    }

    #[test]
    fn isolated_spikes_are_set_aside() {
        // Seed 003's FS2: linear growth with two write-back stalls, one of 22 s.
        let mut pts = series(|n| 0.35 + 2e-5 * n, 9);
        pts[20].1 += 22.0;
        pts[35].1 += 3.0;
        let c = classify(&pts);
        assert_eq!(c.outliers, vec![pts[20].0, pts[35].0], "{c:?}");
        assert_eq!(c.class, Class::Linear, "{c:?}");
        assert_eq!(c.verdict, Verdict::Good);
        assert_eq!(c.points, 48);
        // A steep start is not a spike: the first batches of a log growth stay.
        let log: Vec<(f64, f64)> = (0..15)
            .map(|k| {
                let n = 50.0 + 100.0 * k as f64;
                (n, 0.1 + 0.02 * n.ln_1p())
            })
            .collect();
        let c = classify(&log);
        assert!(c.outliers.is_empty(), "{c:?}");
        assert_eq!(c.class, Class::Log);
    }
}
