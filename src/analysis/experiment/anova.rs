//! The fit of a balanced factorial: every term's sum of squares and degrees of freedom, its
//! estimate (a contrast for a two-level term, deviations from the grand mean per level
//! combination otherwise), the error from the replicates (and the pooled terms), F and p.
//!
//! A two-level term's effect is the mean response where its sign is + minus the mean where
//! it is − (Box, Hunter & Hunter's "effect"; twice Jain's q), its sum of squares N·(effect/2)²,
//! its standard error 2·s/√N. A term with more levels is fitted by inclusion and exclusion of
//! the marginal means (Jain, ch. 22): α_T(levels) = Σ_{S⊆T} (−1)^{|T|−|S|} mean_S(levels),
//! SS_T = (N / combinations of T's levels) · Σ α_T², df_T = Π (levels − 1), and each α has
//! the standard error s·√(df_T / N).

use statrs::distribution::{ContinuousCDF, FisherSnedecor, StudentsT};

use super::design::{sign, Design, Term};

/// The fitted model of one response on the scale it is analysed on.
#[derive(Debug, Clone)]
pub struct Fit {
    pub grand_mean: f64,
    pub n: usize,
    pub replicates: usize,
    pub terms: Vec<TermFit>,
    /// The error: the replicates' spread plus the pooled terms.
    pub error_ss: f64,
    pub error_df: usize,
    /// Σ (y − grand mean)².
    pub total_ss: f64,
    /// Each observation's fitted value (the model without the pooled terms), cell by cell.
    pub fitted: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct TermFit {
    pub term: Term,
    pub ss: f64,
    pub df: usize,
    /// Pooled into the error (`pool` interactions of that order and above).
    pub pooled: bool,
    /// Two-level terms: the effect (mean at + minus mean at −).
    pub contrast: Option<f64>,
    /// Terms with more levels: α per combination of the term's levels (level indices).
    pub deviations: Vec<(Vec<usize>, f64)>,
}

impl TermFit {
    /// F and its p-value against the error, when there is an error estimate.
    pub fn f_test(&self, fit: &Fit) -> Option<(f64, f64)> {
        if self.pooled || fit.error_df == 0 || self.df == 0 {
            return None;
        }
        let mse = fit.error_ss / fit.error_df as f64;
        let ms = self.ss / self.df as f64;
        if mse <= 0.0 {
            // No noise at all: any effect is infinitely significant, none is not.
            return Some(if ms > 0.0 {
                (f64::INFINITY, 0.0)
            } else {
                (0.0, 1.0)
            });
        }
        let f = ms / mse;
        let dist = FisherSnedecor::new(self.df as f64, fit.error_df as f64).ok()?;
        Some((f, dist.sf(f)))
    }
}

impl Fit {
    /// The standard deviation of the error, when there is an estimate.
    pub fn error_sd(&self) -> Option<f64> {
        (self.error_df > 0).then(|| (self.error_ss / self.error_df as f64).sqrt())
    }

    /// The two-sided t quantile for `confidence` on the error's degrees of freedom.
    pub fn t_quantile(&self, confidence: f64) -> Option<f64> {
        if self.error_df == 0 {
            return None;
        }
        let t = StudentsT::new(0.0, 1.0, self.error_df as f64).ok()?;
        Some(t.inverse_cdf(0.5 + confidence / 2.0))
    }

    /// The standard error of a two-level effect.
    pub fn contrast_se(&self) -> Option<f64> {
        self.error_sd().map(|s| 2.0 * s / (self.n as f64).sqrt())
    }

    /// The standard error of one deviation of a term with `df` degrees of freedom.
    pub fn deviation_se(&self, df: usize) -> Option<f64> {
        self.error_sd()
            .map(|s| s * (df as f64 / self.n as f64).sqrt())
    }
}

/// A term's estimates: its contrast (two-level terms only) and its deviations, each with
/// the levels it belongs to.
pub type TermEstimate = (Option<f64>, Vec<(Vec<usize>, f64)>);

/// The estimates of every term from the observations (cell by cell, the same number in
/// each): what both the fit and each bootstrap resample compute.
pub fn estimates(design: &Design, terms: &[Term], ys: &[Vec<f64>]) -> Vec<TermEstimate> {
    let means: Vec<f64> = ys.iter().map(|c| mean(c)).collect();
    terms
        .iter()
        .map(|t| {
            if t.factors
                .iter()
                .all(|&f| design.factors[f].levels.len() == 2)
            {
                (Some(contrast(design, &t.factors, &means)), Vec::new())
            } else {
                (None, deviations(design, &t.factors, &means))
            }
        })
        .collect()
}

/// Fit every term; `pool`: interactions of this many factors or more join the error.
pub fn fit(design: &Design, ys: &[Vec<f64>], pool: Option<usize>) -> Fit {
    let terms = design.terms();
    let r = ys.first().map_or(0, Vec::len);
    let n = ys.len() * r;
    let all: Vec<f64> = ys.iter().flatten().copied().collect();
    let grand_mean = mean(&all);
    let total_ss = all.iter().map(|y| (y - grand_mean).powi(2)).sum();
    let pure_ss: f64 = ys
        .iter()
        .map(|c| {
            let m = mean(c);
            c.iter().map(|y| (y - m).powi(2)).sum::<f64>()
        })
        .sum();
    let mut error_ss = pure_ss;
    let mut error_df = ys.len() * r.saturating_sub(1);
    let mut fits = Vec::new();
    for (term, (contrast, deviations)) in terms.iter().zip(estimates(design, &terms, ys)) {
        let (ss, df) = match contrast {
            Some(e) => (n as f64 * (e / 2.0).powi(2), 1),
            None => {
                let combos = deviations.len() as f64;
                let ss = n as f64 / combos * deviations.iter().map(|(_, a)| a * a).sum::<f64>();
                let df = term
                    .factors
                    .iter()
                    .map(|&f| design.factors[f].levels.len() - 1)
                    .product();
                (ss, df)
            }
        };
        let pooled = pool.is_some_and(|p| term.factors.len() >= p && term.factors.len() > 1);
        if pooled {
            error_ss += ss;
            error_df += df;
        }
        fits.push(TermFit {
            term: term.clone(),
            ss,
            df,
            pooled,
            contrast,
            deviations,
        });
    }
    let fitted = ys
        .iter()
        .enumerate()
        .flat_map(|(c, cell)| {
            let f = grand_mean
                + fits
                    .iter()
                    .filter(|t| !t.pooled)
                    .map(|t| part(t, &design.cells[c]))
                    .sum::<f64>();
            std::iter::repeat_n(f, cell.len())
        })
        .collect();
    Fit {
        grand_mean,
        n,
        replicates: r,
        terms: fits,
        error_ss,
        error_df,
        total_ss,
        fitted,
    }
}

/// What a term adds to a cell's fitted value.
fn part(t: &TermFit, cell: &[usize]) -> f64 {
    match t.contrast {
        Some(e) => e / 2.0 * sign(cell, &t.term.factors),
        None => {
            let at: Vec<usize> = t.term.factors.iter().map(|&f| cell[f]).collect();
            t.deviations
                .iter()
                .find(|(combo, _)| *combo == at)
                .map_or(0.0, |(_, a)| *a)
        }
    }
}

pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// Mean where the sign of `factors` is + minus the mean where it is −, from cell means
/// (every cell has as many observations).
fn contrast(design: &Design, factors: &[usize], means: &[f64]) -> f64 {
    let (mut plus, mut minus, mut np, mut nm) = (0.0, 0.0, 0usize, 0usize);
    for (cell, m) in design.cells.iter().zip(means) {
        if sign(cell, factors) > 0.0 {
            plus += m;
            np += 1;
        } else {
            minus += m;
            nm += 1;
        }
    }
    plus / np.max(1) as f64 - minus / nm.max(1) as f64
}

/// α of a term of a full factorial at every combination of its levels, by inclusion and
/// exclusion of the marginal means of the cell means.
fn deviations(design: &Design, factors: &[usize], means: &[f64]) -> Vec<(Vec<usize>, f64)> {
    let sizes: Vec<usize> = factors
        .iter()
        .map(|&f| design.factors[f].levels.len())
        .collect();
    let count: usize = sizes.iter().product();
    (0..count)
        .map(|mut k| {
            let combo: Vec<usize> = sizes
                .iter()
                .map(|s| {
                    let l = k % s;
                    k /= s;
                    l
                })
                .collect();
            let mut alpha = 0.0;
            for subset in 0..1usize << factors.len() {
                let chosen: Vec<usize> = (0..factors.len())
                    .filter(|i| subset >> i & 1 == 1)
                    .collect();
                let inside: Vec<f64> = design
                    .cells
                    .iter()
                    .zip(means)
                    .filter(|(cell, _)| chosen.iter().all(|&i| cell[factors[i]] == combo[i]))
                    .map(|(_, m)| *m)
                    .collect();
                let sign = if (factors.len() - chosen.len()).is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                };
                alpha += sign * mean(&inside);
            }
            (combo, alpha)
        })
        .collect()
}
