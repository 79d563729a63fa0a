//! The residual bootstrap: the intervals to use when the residuals are not normal. Each
//! resample keeps the fitted value of every observation and adds a residual drawn with
//! replacement from all of them (scaled by √(N / error df), which undoes the shrinking of
//! residuals by the fit), then estimates every effect again; the interval is the
//! resamples' percentiles (Efron & Tibshirani, ch. 9). It assumes one noise distribution
//! for every cell, not a normal one. Terms with more than two levels are resampled up to
//! two-factor interactions (their inclusion and exclusion costs grow with the cells).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::anova::{estimates, Fit};
use super::design::{Design, Term};
use super::Options;

pub struct Intervals {
    /// Per term of the fit: a two-level term's interval.
    contrasts: Vec<Option<[f64; 2]>>,
    /// Per term of the fit: each deviation's interval (empty when not resampled).
    deviations: Vec<Vec<[f64; 2]>>,
}

impl Intervals {
    pub fn contrast(&self, term: usize) -> Option<[f64; 2]> {
        self.contrasts.get(term).copied().flatten()
    }

    pub fn deviation(&self, term: usize, level: usize) -> Option<[f64; 2]> {
        self.deviations.get(term)?.get(level).copied()
    }
}

pub fn intervals(
    design: &Design,
    ys: &[Vec<f64>],
    fit: &Fit,
    residuals: &[f64],
    o: &Options,
) -> Intervals {
    let kept: Vec<usize> = (0..fit.terms.len())
        .filter(|&i| {
            let t = &fit.terms[i];
            !t.pooled && (t.contrast.is_some() || t.term.factors.len() <= 2)
        })
        .collect();
    let terms: Vec<Term> = kept.iter().map(|&i| fit.terms[i].term.clone()).collect();
    let scale = (fit.n as f64 / fit.error_df.max(1) as f64).sqrt();
    let mut rng = SmallRng::seed_from_u64(o.seed ^ 0x0b00_7575);
    // samples[k][j]: the kept term k's j-th estimate (its contrast, or its j-th deviation).
    let mut samples: Vec<Vec<Vec<f64>>> = vec![Vec::new(); terms.len()];
    let r = fit.replicates;
    for _ in 0..o.resamples {
        let star: Vec<Vec<f64>> = (0..ys.len())
            .map(|c| {
                (0..r)
                    .map(|k| {
                        let e = residuals[rng.random_range(0..residuals.len())];
                        fit.fitted[c * r + k] + scale * e
                    })
                    .collect()
            })
            .collect();
        for (k, (contrast, deviations)) in estimates(design, &terms, &star).into_iter().enumerate()
        {
            let values: Vec<f64> = match contrast {
                Some(e) => vec![e],
                None => deviations.into_iter().map(|(_, a)| a).collect(),
            };
            if samples[k].is_empty() {
                samples[k] = vec![Vec::with_capacity(o.resamples); values.len()];
            }
            for (j, v) in values.into_iter().enumerate() {
                samples[k][j].push(v);
            }
        }
    }
    let alpha = 1.0 - o.confidence;
    let mut out = Intervals {
        contrasts: vec![None; fit.terms.len()],
        deviations: vec![Vec::new(); fit.terms.len()],
    };
    for (k, &i) in kept.iter().enumerate() {
        let bounds: Vec<[f64; 2]> = samples[k]
            .iter_mut()
            .map(|s| {
                s.sort_by(f64::total_cmp);
                [quantile(s, alpha / 2.0), quantile(s, 1.0 - alpha / 2.0)]
            })
            .collect();
        if fit.terms[i].contrast.is_some() {
            out.contrasts[i] = bounds.first().copied();
        } else {
            out.deviations[i] = bounds;
        }
    }
    out
}

/// The q-quantile of sorted values, interpolated.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
}
