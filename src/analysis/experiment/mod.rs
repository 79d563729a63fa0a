//! Factorial experiments, on numbers only: the designs ([`design`]), the fit of a balanced
//! factorial ([`anova`]), the residual checks, the bootstrap, and the record of
//! `experiment.json` ([`record`]). `loadrig experiment` runs the cells
//! (`crate::experiment`); this module is handed each cell's responses and says which factor
//! and which interaction moved them, by how much, and how sure that is.
//!
//! [`analyse`] takes one response's values, cell by cell, replicates in the same number
//! everywhere, and gives every main effect and interaction with its interval (t on the
//! error's degrees of freedom; a residual bootstrap when the residuals are not normal), the
//! allocation of variation, the ANOVA table, the residual checks, the best cell and the
//! analysis in words. With one replicate there is no error estimate unless the highest
//! interactions are pooled into one (`Options::pool`), which happens only when asked.

mod anova;
mod bootstrap;
pub mod design;
pub mod record;
mod residuals;
pub mod response;
pub mod summary;

pub use design::{Design, FactorLevels};
pub use record::{
    Better, ExperimentRecord, IntervalMethod, ResponseAnalysis, Scale, SCHEMA_VERSION,
};

use anova::{mean, Fit};
use record::{
    BestCell, CellSummary, EffectRecord, ErrorRecord, Estimate, FactorMeans, LevelEstimate,
    ResidualChecks, Test,
};
use residuals::ALPHA;

/// Which intervals judge significance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intervals {
    /// t, or the bootstrap when the residuals fail the normality check.
    Auto,
    T,
    Bootstrap,
}

/// How to analyse one response.
#[derive(Debug, Clone)]
pub struct Options {
    pub response: String,
    pub unit: String,
    pub better: Better,
    pub scale: Scale,
    /// Of the intervals: 0.95.
    pub confidence: f64,
    /// Interactions of this many factors and more join the error.
    pub pool: Option<usize>,
    pub intervals: Intervals,
    /// The bootstrap's seed and resamples.
    pub seed: u64,
    pub resamples: usize,
}

impl Options {
    pub fn new(response: &str, unit: &str, better: Better, scale: Scale) -> Options {
        Options {
            response: response.to_string(),
            unit: unit.to_string(),
            better,
            scale,
            confidence: 0.95,
            pool: None,
            intervals: Intervals::Auto,
            seed: 0,
            resamples: 2000,
        }
    }
}

/// Analyse one response: `values[c]` holds cell c's replicates (on the response's own
/// scale), as many in every cell.
pub fn analyse(
    design: &Design,
    values: &[Vec<f64>],
    o: &Options,
) -> Result<ResponseAnalysis, String> {
    let r = values.first().map_or(0, Vec::len);
    if values.len() != design.cells.len() || r == 0 || values.iter().any(|c| c.len() != r) {
        return Err(format!(
            "{}: every cell needs the same number of runs (at least one)",
            o.response
        ));
    }
    if let Some(v) = values.iter().flatten().find(|v| !v.is_finite()) {
        return Err(format!("{}: a run gave {v}", o.response));
    }
    let ys: Vec<Vec<f64>> = match o.scale {
        Scale::Linear => values.to_vec(),
        Scale::Log => {
            if let Some(v) = values.iter().flatten().find(|v| **v <= 0.0) {
                return Err(format!(
                    "{}: the log scale needs responses above zero, and a run gave {v}; analyse it with --scale linear",
                    o.response
                ));
            }
            values
                .iter()
                .map(|c| c.iter().map(|v| v.ln()).collect())
                .collect()
        }
    };
    let fit = anova::fit(design, &ys, o.pool);
    let mut warnings = Vec::new();
    let observed: Vec<f64> = ys.iter().flatten().copied().collect();
    let residuals: Vec<f64> = observed
        .iter()
        .zip(&fit.fitted)
        .map(|(y, f)| y - f)
        .collect();
    let checks = residual_checks(&ys, &residuals, &fit, o, &mut warnings);
    let boot = if fit.error_df > 0 && o.intervals != Intervals::T {
        Some(bootstrap::intervals(design, &ys, &fit, &residuals, o))
    } else {
        None
    };
    let method = match (fit.error_df, o.intervals, &checks.normality, &boot) {
        (0, _, _, _) => IntervalMethod::None,
        (_, Intervals::T, _, _) | (_, _, _, None) => IntervalMethod::T,
        (_, Intervals::Bootstrap, _, Some(_)) => IntervalMethod::Bootstrap,
        (_, Intervals::Auto, Some(t), Some(_)) if !t.passed => IntervalMethod::Bootstrap,
        _ => IntervalMethod::T,
    };
    if method == IntervalMethod::None {
        warnings.push(no_error_note(design, r, o.pool));
    }
    let effects = effect_records(design, &fit, boot.as_ref(), method, o);
    let pooled: Vec<String> = effects
        .iter()
        .filter(|e| e.pooled)
        .map(|e| e.term.clone())
        .collect();
    let share = |ss: f64| {
        if fit.total_ss > 0.0 {
            ss / fit.total_ss
        } else {
            0.0
        }
    };
    let error = ErrorRecord {
        ss: fit.error_ss,
        df: fit.error_df,
        share: share(fit.error_ss),
        sd: fit.error_sd(),
        pooled,
    };
    let cells: Vec<CellSummary> = values
        .iter()
        .enumerate()
        .map(|(c, v)| CellSummary {
            cell: c,
            levels: design.cell_levels(c),
            values: v.clone(),
            mean: mean(v),
        })
        .collect();
    let best = best_cell(&cells, o.better);
    let mut analysis = ResponseAnalysis {
        response: o.response.clone(),
        unit: o.unit.clone(),
        scale: o.scale,
        better: o.better,
        confidence: o.confidence,
        replicates: r,
        grand_mean: fit.grand_mean,
        intervals: method,
        effects,
        error,
        total_ss: fit.total_ss,
        total_df: fit.n - 1,
        residuals: checks,
        main_effects: main_effects(design, values),
        cells,
        best,
        summary: Vec::new(),
        warnings,
    };
    analysis.summary = summary::sentences(design, &analysis);
    Ok(analysis)
}

fn no_error_note(design: &Design, r: usize, pool: Option<usize>) -> String {
    let k = design.factors.len();
    let mut note = format!(
        "no error estimate: {} run{} per cell and nothing pooled, so no interval, F or p; the shares of variation stand alone",
        r,
        if r == 1 { "" } else { "s" }
    );
    if pool.is_none() && k >= 3 {
        note.push_str(&format!(
            "; --replicates 2 or more measures the noise, or --pool {k} takes the {k}-factor interaction as noise (assuming it is none)"
        ));
    } else {
        note.push_str("; run --replicates 2 or more");
    }
    note
}

fn residual_checks(
    ys: &[Vec<f64>],
    residuals: &[f64],
    fit: &Fit,
    o: &Options,
    warnings: &mut Vec<String>,
) -> ResidualChecks {
    let test = |(statistic, p): (f64, f64)| Test {
        statistic,
        p,
        passed: p >= ALPHA,
    };
    let checks = ResidualChecks {
        normality: if fit.error_df > 0 {
            residuals::anderson_darling(residuals).map(test)
        } else {
            None
        },
        equal_variance: residuals::brown_forsythe(ys).map(test),
        spread_with_mean: residuals::spread_with_mean(ys).map(test),
    };
    if let Some(t) = checks.normality.as_ref().filter(|t| !t.passed) {
        warnings.push(format!(
            "the residuals are not normal (Anderson-Darling A*² = {:.2}, p = {:.3}){}",
            t.statistic,
            t.p,
            match o.intervals {
                Intervals::T => ": the t intervals may mislead; --intervals bootstrap",
                _ => ": the intervals are the bootstrap's",
            }
        ));
    }
    if let Some(t) = checks.equal_variance.as_ref().filter(|t| !t.passed) {
        warnings.push(format!(
            "the cells' spreads differ (Brown-Forsythe F = {:.2}, p = {:.3}): the intervals assume one noise level for every cell",
            t.statistic, t.p
        ));
    }
    if let Some(t) = checks.spread_with_mean.as_ref().filter(|t| !t.passed) {
        if o.scale == Scale::Linear {
            warnings.push(format!(
                "the spread grows with the response (Spearman ρ = {:.2}, p = {:.3}): the effects may multiply rather than add; try --scale log",
                t.statistic, t.p
            ));
        }
    }
    checks
}

fn effect_records(
    design: &Design,
    fit: &Fit,
    boot: Option<&bootstrap::Intervals>,
    method: IntervalMethod,
    o: &Options,
) -> Vec<EffectRecord> {
    let t = fit.t_quantile(o.confidence);
    fit.terms
        .iter()
        .enumerate()
        .map(|(i, tf)| {
            let test = tf.f_test(fit);
            let interval = |estimate: f64, se: Option<f64>, b: Option<[f64; 2]>| {
                let t_interval = t
                    .zip(se)
                    .filter(|_| !tf.pooled)
                    .map(|(t, se)| [estimate - t * se, estimate + t * se]);
                let b = b.filter(|_| !tf.pooled);
                let chosen = match method {
                    IntervalMethod::Bootstrap => b.or(t_interval),
                    IntervalMethod::T => t_interval,
                    IntervalMethod::None => None,
                };
                Estimate {
                    estimate,
                    low: chosen.map(|c| c[0]),
                    high: chosen.map(|c| c[1]),
                    t_interval,
                    bootstrap_interval: b,
                }
            };
            let contrast = tf
                .contrast
                .map(|e| interval(e, fit.contrast_se(), boot.and_then(|b| b.contrast(i))));
            let levels = tf
                .deviations
                .iter()
                .enumerate()
                .map(|(j, (combo, a))| LevelEstimate {
                    levels: combo
                        .iter()
                        .zip(&tf.term.factors)
                        .map(|(&l, &f)| design.factors[f].levels[l].clone())
                        .collect(),
                    estimate: interval(
                        *a,
                        fit.deviation_se(tf.df),
                        boot.and_then(|b| b.deviation(i, j)),
                    ),
                })
                .collect();
            let significant = match (&contrast, test) {
                _ if tf.pooled || method == IntervalMethod::None => None,
                (Some(c), _) => c.low.zip(c.high).map(|(lo, hi)| lo > 0.0 || hi < 0.0),
                (None, Some((_, p))) => Some(p < 1.0 - o.confidence),
                (None, None) => None,
            };
            EffectRecord {
                term: design.letters_of(&tf.term.factors),
                name: design.names_of(&tf.term.factors),
                order: tf.term.factors.len(),
                aliases: tf
                    .term
                    .aliases
                    .iter()
                    .map(|w| {
                        format!(
                            "{}{}",
                            if w.negative { "−" } else { "" },
                            design.letters_of(&w.factors)
                        )
                    })
                    .collect(),
                ss: tf.ss,
                df: tf.df,
                share: if fit.total_ss > 0.0 {
                    tf.ss / fit.total_ss
                } else {
                    0.0
                },
                pooled: tf.pooled,
                f: test.map(|t| t.0).filter(|f| f.is_finite()),
                p: test.map(|t| t.1),
                significant,
                contrast,
                levels,
            }
        })
        .collect()
}

fn best_cell(cells: &[CellSummary], better: Better) -> BestCell {
    let best = cells
        .iter()
        .max_by(|a, b| match better {
            Better::Higher => a.mean.total_cmp(&b.mean),
            Better::Lower => b.mean.total_cmp(&a.mean),
        })
        .expect("a design has cells");
    BestCell {
        cell: best.cell,
        levels: best.levels.clone(),
        mean: best.mean,
    }
}

fn main_effects(design: &Design, values: &[Vec<f64>]) -> Vec<FactorMeans> {
    design
        .factors
        .iter()
        .enumerate()
        .map(|(f, factor)| FactorMeans {
            factor: factor.name.clone(),
            levels: factor.levels.clone(),
            means: (0..factor.levels.len())
                .map(|l| {
                    let at: Vec<f64> = design
                        .cells
                        .iter()
                        .zip(values)
                        .filter(|(cell, _)| cell[f] == l)
                        .flat_map(|(_, v)| v.iter().copied())
                        .collect();
                    mean(&at)
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
