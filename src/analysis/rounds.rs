//! Several runs per side (`compare A1 A2 … -- B1 B2 …`, `loadrig ab`): verdicts that hold
//! when the dominant noise is between runs.
//!
//! # Method
//!
//! On a shared machine one run differs from the next by far more than its own intervals
//! vary (thread placement beside the server, neighbours, frequency), so a bootstrap over one
//! run's intervals cannot judge a change. Here the **run** is the unit, as in Kalibera and
//! Jones, "Rigorous Benchmarking in Reasonable Time" (ISMM 2013), a two-level random-effects
//! model: a run's value is the true value × a run effect × its own within-run error.
//!
//! - **Per-run values**: each run's throughput (mean of its interval rates), mean latency and
//!   percentiles (of all its measured operations), taken on the log scale so that a
//!   multiplicative run effect becomes additive and the ratio NEW/BASE a difference.
//! - **Variance components** (Kalibera & Jones §3): the within-run variance of a run's value
//!   is estimated from its intervals (their sample variance over their number, treating the
//!   intervals as independent draws); the between-run variance is the variance of the
//!   per-run values minus the mean within-run part (their T̂₂ = S₂² − T̂₁/n), clamped at
//!   zero. Both are reported as relative standard deviations; when the between-run part
//!   dominates, longer runs do not help, more rounds do.
//! - **Interval for the ratio**: Welch's t interval for the difference of the mean
//!   logarithms (Welch 1947, Welch-Satterthwaite degrees of freedom), exponentiated: a
//!   95 % interval for the ratio of geometric means NEW/BASE. The variance of the per-run
//!   values contains both components, so the interval accounts for run-to-run variance.
//! - **Verdict**: improved or regressed only when the whole interval lies beyond the noise
//!   band ±noise (the rule of [`super::compare::verdict`]).
//! - **Cross-check**: Mann-Whitney U over the per-run values, exact two-sided p without ties
//!   (the null distribution counted by the usual recurrence), normal approximation with the
//!   tie correction otherwise: what benchstat prints. Five runs per side reach p = 0.008 at
//!   best, three only 0.1.
//! - **Power**: the rounds per side at which the verdict rule calls a change of `detect`
//!   with 80 % probability, from the two-sample t approximation
//!   `n = 2 (t₁₋α/₂ + t₁₋β)² σ² / Δ²` with 2n − 2 degrees of freedom (e.g. Montgomery,
//!   *Design and Analysis of Experiments*, §2.4), σ the pooled standard deviation of the
//!   log per-run values and Δ = ln(1 + detect) − ln(1 + noise), the margin by which the
//!   change must clear the noise band.

use anyhow::{anyhow, Result};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::compare::{
    mean, verdict, Comparison, Method, Metric, MetricChange, OpComparison, Options, RunInfo,
    Verdict,
};
use super::{interval_s, op_names, op_series, OpSeries, TOTAL};
use crate::error::InputError;
use crate::result::{RunResult, RunStatus};

/// The power `rounds_needed` is computed for.
pub const POWER: f64 = 0.8;

/// One run's value of every metric (in [`Metric::ALL`] order) and the within-run variance
/// of each value's logarithm.
#[derive(Debug, Clone, Copy)]
pub struct RunSummary {
    pub values: [f64; 6],
    pub within: [f64; 6],
}

/// A run's summary from its series of measured intervals.
pub fn summarize(s: &OpSeries) -> RunSummary {
    let values = super::compare::points(s);
    let within = std::array::from_fn(|k| {
        let m = Metric::ALL[k];
        let per: Vec<f64> = s
            .hists
            .iter()
            .zip(&s.throughput)
            .filter(|(h, _)| m == Metric::Throughput || !h.is_empty())
            .map(|(h, t)| m.of_hist(h).unwrap_or(*t))
            .collect();
        if per.len() < 2 || values[k] <= 0.0 {
            return 0.0;
        }
        // The variance of the run's value, relative (the delta method: var(ln X) ≈ var X / X²).
        sample_var(&per) / per.len() as f64 / values[k].powi(2)
    });
    RunSummary { values, within }
}

/// The unbiased sample variance (n − 1); zero for fewer than two values.
pub fn sample_var(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = mean(x);
    x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64
}

/// What the runs of both sides say about one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Ratio of geometric means NEW/BASE − 1, and its interval.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Welch's two-sided p for "no change".
    pub p: f64,
    /// Pooled standard deviation of the log per-run values (both components).
    pub sd: f64,
    pub between_sd: f64,
    pub within_sd: f64,
}

/// The interval and tests for per-run values `base` and `new` (all above zero, at least two
/// each); `within` is the mean within-run variance of the log values.
pub fn estimate(base: &[f64], new: &[f64], within: f64, confidence: f64) -> Option<Estimate> {
    if base.len() < 2 || new.len() < 2 || !base.iter().chain(new).all(|v| *v > 0.0) {
        return None;
    }
    let lb: Vec<f64> = base.iter().map(|v| v.ln()).collect();
    let ln: Vec<f64> = new.iter().map(|v| v.ln()).collect();
    let (nb, nn) = (lb.len() as f64, ln.len() as f64);
    let (vb, vn) = (sample_var(&lb), sample_var(&ln));
    let d = mean(&ln) - mean(&lb);
    let se2 = vb / nb + vn / nn;
    let (half, p) = if se2 > 0.0 {
        let df = se2.powi(2) / ((vb / nb).powi(2) / (nb - 1.0) + (vn / nn).powi(2) / (nn - 1.0));
        let t = StudentsT::new(0.0, 1.0, df).ok()?;
        let se = se2.sqrt();
        let q = t.inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
        (q * se, 2.0 * (1.0 - t.cdf((d / se).abs())))
    } else {
        (0.0, if d == 0.0 { 1.0 } else { 0.0 })
    };
    let pooled = ((nb - 1.0) * vb + (nn - 1.0) * vn) / (nb + nn - 2.0);
    Some(Estimate {
        change: d.exp() - 1.0,
        low: (d - half).exp() - 1.0,
        high: (d + half).exp() - 1.0,
        p,
        sd: pooled.sqrt(),
        between_sd: (pooled - within).max(0.0).sqrt(),
        within_sd: within.max(0.0).sqrt(),
    })
}

/// Rounds per side for the verdict rule to call a change of `detect` (a fraction) with
/// probability [`POWER`], at `sd` (of the log per-run values) and a noise band of `noise`;
/// none when the change does not clear the band.
pub fn rounds_needed(sd: f64, detect: f64, noise: f64, confidence: f64) -> Option<u64> {
    let effect = (1.0 + detect).ln() - (1.0 + noise).ln();
    if effect.is_nan() || effect <= 0.0 || !sd.is_finite() {
        return None;
    }
    if sd <= 0.0 {
        return Some(2);
    }
    let alpha = 1.0 - confidence;
    let z = Normal::standard();
    let normal = z.inverse_cdf(1.0 - alpha / 2.0) + z.inverse_cdf(POWER);
    // The normal approximation is a lower bound; the t quantiles only add to it.
    let start = (2.0 * (normal * sd / effect).powi(2)).floor().max(2.0) as u64;
    if start > 100_000 {
        return Some(start);
    }
    (start..start + 1000).find(|&n| {
        let t = StudentsT::new(0.0, 1.0, (2 * n - 2) as f64).expect("df above zero");
        let need = t.inverse_cdf(1.0 - alpha / 2.0) + t.inverse_cdf(POWER);
        need * sd * (2.0 / n as f64).sqrt() <= effect
    })
}

/// Two-sided Mann-Whitney p for samples `x` and `y`: exact without ties (up to 20 × 20),
/// exact over every split of the mid-ranks with ties (up to 200,000 splits: per-run
/// percentiles often tie on a histogram bucket), else the normal approximation with tie and
/// continuity corrections.
pub fn mann_whitney_p(x: &[f64], y: &[f64]) -> f64 {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let u: f64 = x
        .iter()
        .flat_map(|a| y.iter().map(move |b| (a, b)))
        .map(|(a, b)| match a.total_cmp(b) {
            std::cmp::Ordering::Greater => 1.0,
            std::cmp::Ordering::Equal => 0.5,
            std::cmp::Ordering::Less => 0.0,
        })
        .sum();
    let mut all: Vec<f64> = x.iter().chain(y).copied().collect();
    all.sort_by(f64::total_cmp);
    let tie_term: f64 = all
        .chunk_by(|a, b| a == b)
        .map(|g| (g.len() as f64).powi(3) - g.len() as f64)
        .sum();
    if tie_term == 0.0 && n1 <= 20 && n2 <= 20 {
        return exact_mann_whitney_p(n1, n2, u as usize);
    }
    if let Some(p) = permutation_mann_whitney_p(x, y, u) {
        return p;
    }
    let (a, b, n) = (n1 as f64, n2 as f64, (n1 + n2) as f64);
    let var = a * b / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let d = u - a * b / 2.0;
    let z = (d.abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * (1.0 - Normal::standard().cdf(z))).min(1.0)
}

/// Exact two-sided p of U = `u` with ties: U over every way of choosing which |x| of the
/// pooled mid-ranks belong to x; none when there are too many ways.
fn permutation_mann_whitney_p(x: &[f64], y: &[f64], u: f64) -> Option<f64> {
    let (n1, n) = (x.len(), x.len() + y.len());
    let ways = (0..n1).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    if ways > 200_000.0 {
        return None;
    }
    let mut all: Vec<f64> = x.iter().chain(y).copied().collect();
    all.sort_by(f64::total_cmp);
    // Mid-rank of each pooled value.
    let ranks: Vec<f64> = all
        .iter()
        .map(|v| {
            let below = all.iter().filter(|w| *w < v).count() as f64;
            let equal = all.iter().filter(|w| *w == v).count() as f64;
            below + (equal + 1.0) / 2.0
        })
        .collect();
    let offset = (n1 * (n1 + 1)) as f64 / 2.0;
    let (mut below, mut above, mut total) = (0.0, 0.0, 0.0);
    let mut visit = |rank_sum: f64| {
        let v = rank_sum - offset;
        total += 1.0;
        if v <= u + 1e-9 {
            below += 1.0;
        }
        if v >= u - 1e-9 {
            above += 1.0;
        }
    };
    choose(&ranks, n1, 0, 0.0, &mut visit);
    Some((2.0 * f64::min(below, above) / total).min(1.0))
}

/// Call `visit` with the sum of every choice of `k` of `ranks[from..]` (plus `sum`).
fn choose(ranks: &[f64], k: usize, from: usize, sum: f64, visit: &mut impl FnMut(f64)) {
    if k == 0 {
        visit(sum);
        return;
    }
    for i in from..=ranks.len() - k {
        choose(ranks, k - 1, i + 1, sum + ranks[i], visit);
    }
}

/// Exact two-sided p of U = `u` under no difference: `f(m, k)[u]`, the number of orderings
/// of m x's and k y's with U = u, follows f(m, k)[u] = f(m − 1, k)[u − k] + f(m, k − 1)[u]
/// (the largest value is an x, beating all k y's, or a y).
fn exact_mann_whitney_p(n1: usize, n2: usize, u: usize) -> f64 {
    let mut f: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n2 + 1]; n1 + 1];
    for m in 0..=n1 {
        for k in 0..=n2 {
            f[m][k] = if m == 0 || k == 0 {
                vec![1.0]
            } else {
                (0..=m * k)
                    .map(|v| {
                        let x = if v >= k { f[m - 1][k].get(v - k) } else { None };
                        x.unwrap_or(&0.0) + f[m][k - 1].get(v).unwrap_or(&0.0)
                    })
                    .collect()
            };
        }
    }
    let counts = &f[n1][n2];
    let total: f64 = counts.iter().sum();
    let below: f64 = counts[..=u].iter().sum();
    let above: f64 = counts[u..].iter().sum();
    (2.0 * below.min(above) / total).min(1.0)
}

/// The decision for one metric from the per-run summaries of both sides.
pub fn decide(m: Metric, base: &[RunSummary], new: &[RunSummary], opts: &Options) -> MetricChange {
    let k = Metric::ALL.iter().position(|x| *x == m).unwrap_or(0);
    let bv: Vec<f64> = base.iter().map(|s| s.values[k]).collect();
    let nv: Vec<f64> = new.iter().map(|s| s.values[k]).collect();
    let within = mean(
        &base
            .iter()
            .chain(new)
            .map(|s| s.within[k])
            .collect::<Vec<_>>(),
    );
    let (gb, gn) = (geometric_mean(&bv), geometric_mean(&nv));
    let mut c = MetricChange {
        metric: m,
        unit: if m == Metric::Throughput {
            "ops/s"
        } else {
            "ns"
        },
        base: gb,
        new: gn,
        change: (gb > 0.0).then(|| gn / gb - 1.0),
        ci_low: None,
        ci_high: None,
        p_value: None,
        test: "welch-t",
        verdict: Verdict::TooLittleData,
        base_runs: bv.clone(),
        new_runs: nv.clone(),
        mann_whitney_p: None,
        between_run_sd: None,
        within_run_sd: None,
        rounds_needed: None,
    };
    if let Some((e, v)) = judge(m, &bv, &nv, within, opts) {
        c.change = Some(e.change);
        c.ci_low = Some(e.low);
        c.ci_high = Some(e.high);
        c.p_value = Some(e.p);
        c.mann_whitney_p = Some(mann_whitney_p(&bv, &nv));
        c.between_run_sd = Some(e.between_sd);
        c.within_run_sd = Some(e.within_sd);
        c.rounds_needed = rounds_needed(e.sd, opts.detect, opts.noise, opts.confidence);
        c.verdict = v;
    }
    c
}

/// The interval and the verdict of metric `m` from per-run values (the core of [`decide`],
/// without its cross-check and power figures).
pub fn judge(
    m: Metric,
    base: &[f64],
    new: &[f64],
    within: f64,
    opts: &Options,
) -> Option<(Estimate, Verdict)> {
    let e = estimate(base, new, within, opts.confidence)?;
    let significant = e.p < 1.0 - opts.confidence;
    let v = verdict(e.low, e.high, significant, opts.noise, m.higher_is_better());
    Some((e, v))
}

/// The geometric mean of positive values; zero when any is not.
pub fn geometric_mean(x: &[f64]) -> f64 {
    if x.is_empty() || !x.iter().all(|v| *v > 0.0) {
        return 0.0;
    }
    mean(&x.iter().map(|v| v.ln()).collect::<Vec<_>>()).exp()
}

/// A run of a side, read from its file.
pub struct Run<'a> {
    pub result: &'a RunResult,
    pub file: &'a str,
}

/// Compare several runs per side (at least two each).
pub fn compare_rounds(base: &[Run], new: &[Run], opts: &Options) -> Result<Comparison> {
    for (side, runs) in [("base", base), ("new", new)] {
        check_side(side, runs)?;
    }
    let all: Vec<&Run> = base.iter().chain(new).collect();
    let (ops, only_in_base, only_in_new) = op_sets(base, new);
    let mut operations = Vec::new();
    for op in &ops {
        let summaries = |runs: &[Run]| -> Result<Vec<RunSummary>> {
            runs.iter()
                .map(|r| {
                    op_series(r.result, op)
                        .map(|s| summarize(&s))
                        .map_err(|e| anyhow!("{}: {e}", r.file))
                })
                .collect()
        };
        let (sb, sn) = (summaries(base)?, summaries(new)?);
        let intervals = |runs: &[Run]| -> usize {
            runs.iter()
                .map(|r| super::full_intervals(r.result).len())
                .sum()
        };
        operations.push(OpComparison {
            operation: op.clone(),
            stage: None,
            base_intervals: intervals(base),
            new_intervals: intervals(new),
            base_block: 0,
            new_block: 0,
            metrics: Metric::ALL
                .iter()
                .map(|&m| decide(m, &sb, &sn, opts))
                .collect(),
        });
    }
    let info = |runs: &[Run]| -> Vec<RunInfo> {
        runs.iter().map(|r| RunInfo::of(r.result, r.file)).collect()
    };
    let (base_runs, new_runs) = (info(base), info(new));
    Ok(Comparison {
        method: Method::Rounds,
        base: base_runs[0].clone(),
        new: new_runs[0].clone(),
        base_runs,
        new_runs,
        noise: opts.noise,
        detect: opts.detect,
        confidence: opts.confidence,
        resamples: 0,
        notes: notes(&all, &operations),
        operations,
        only_in_base,
        only_in_new,
        checks: Vec::new(),
        shift_function: None,
    })
}

/// Runs of one side repeat one workload: different workloads are not rounds of one thing.
fn check_side(side: &str, runs: &[Run]) -> Result<(), InputError> {
    if runs.len() < 2 {
        return Err(InputError::new(format!(
            "the {side} side has {} run; several runs per side need at least two on each side",
            runs.len()
        ))
        .help("give one file per side (compare BASE.json NEW.json) or two or more on each side of the --"));
    }
    let first = &runs[0];
    if let Some(other) = runs
        .iter()
        .find(|r| r.result.workload.name != first.result.workload.name)
    {
        return Err(InputError::new(format!(
            "the {side} side mixes workloads: {} runs '{}', {} runs '{}'",
            first.file, first.result.workload.name, other.file, other.result.workload.name
        ))
        .help("the files of one side must be repeated runs of the same workload"));
    }
    Ok(())
}

/// The operations every run has (then the total when there are several), and those only
/// some runs of one side have.
fn op_sets(base: &[Run], new: &[Run]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let in_all = |runs: &[Run], op: &String| runs.iter().all(|r| op_names(r.result).contains(op));
    let names = |runs: &[Run]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in runs {
            for n in op_names(r.result) {
                if !v.contains(&n) {
                    v.push(n);
                }
            }
        }
        v
    };
    let (b, n) = (names(base), names(new));
    let shared: Vec<String> = b
        .iter()
        .filter(|op| in_all(base, op) && in_all(new, op))
        .cloned()
        .collect();
    let only_base = b.iter().filter(|x| !shared.contains(x)).cloned().collect();
    let only_new = n.iter().filter(|x| !shared.contains(x)).cloned().collect();
    let mut ops = shared;
    if b.len() > 1 || n.len() > 1 {
        ops.push(TOTAL.to_string());
    }
    (ops, only_base, only_new)
}

fn notes(all: &[&Run], operations: &[OpComparison]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in all {
        if r.result.status != RunStatus::Complete {
            notes.push(format!(
                "{} is marked '{}': it covers only part of what was planned",
                r.file,
                r.result.status.name()
            ));
        }
        if let Some(v) = r.result.validity.as_ref().filter(|v| !v.reasons.is_empty()) {
            notes.push(format!(
                "{} judged itself suspect (docs/validity.md): {}",
                r.file,
                v.reasons.join("; ")
            ));
        }
    }
    if all
        .iter()
        .any(|r| (interval_s(r.result) - interval_s(all[0].result)).abs() > 1e-9)
    {
        notes.push("the runs used different interval lengths: the within-run variances are not comparable between runs".to_string());
    }
    // Kalibera & Jones: where the variance lies says what to repeat.
    let throughput = operations
        .last()
        .and_then(|o| o.metrics.iter().find(|m| m.metric == Metric::Throughput));
    if let Some((b, w)) = throughput.and_then(|m| m.between_run_sd.zip(m.within_run_sd)) {
        if b > 2.0 * w {
            notes.push(format!(
                "throughput varies {:.1} % from run to run against {:.1} % within a run: more rounds narrow the interval, longer runs hardly do",
                b * 100.0,
                w * 100.0
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests;
