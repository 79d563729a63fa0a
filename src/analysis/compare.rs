//! `loadrig compare BASE NEW`: did the change make it slower, or is it noise?
//!
//! For each operation (and the total when there are several) four metrics are compared:
//! throughput, p50, p90 and p99 latency. Each gets the relative change `new / base - 1`, a
//! 95 % confidence interval for that change, a significance test, and a verdict.
//!
//! # Methods
//!
//! The unit of resampling is the **measured interval** (after warm-up, full length only):
//! a run of K intervals is K dependent observations, not N independent operations.
//! Operations inside one interval share the same moment of the server (a checkpoint, a
//! garbage collection, a noisy neighbour), and neighbouring intervals resemble each other,
//! so treating operations or intervals as independent would give intervals far too narrow.
//!
//! - **Confidence intervals** come from a *circular block bootstrap* over intervals
//!   (Politis & Romano, 1992): each replicate draws blocks of `b` consecutive intervals
//!   (wrapping around at the end) until it has as many intervals as the run, separately for
//!   BASE and NEW. Throughput is the mean of the resampled per-interval rates; a percentile
//!   is read from the sum of the resampled intervals' HdrHistograms, with HdrHistogram's
//!   own rule (`value_at_quantile`). The interval is the 2.5 % to 97.5 % percentile
//!   interval of the replicates of `new / base - 1` (Efron & Tibshirani, 1993, ch. 13).
//!   2000 replicates by default, from a fixed seed, so the same files give the same output.
//! - **Block length** `b` follows the dependence in each run's throughput series: `m` is the
//!   smallest lag after which the sample autocorrelation stays insignificant for
//!   `K = max(5, √log10 n)` lags (bound `2·√(log10 n / n)`, Politis 2003), and
//!   `b = max(2m, ⌈n^(1/3)⌉)` (the `2m` of Politis & White 2004, the `n^(1/3)` rate of Hall,
//!   Horowitz & Jing 1995), at most `n / 2`.
//! - **Throughput test**: Mann-Whitney U on the per-interval throughputs, normal
//!   approximation with tie and continuity corrections (Lehmann, *Nonparametrics*, 1975).
//!   Dependence between neighbouring intervals is accounted for by inflating the variance
//!   of U by `(1 + ρ) / (1 − ρ)`, where ρ is the lag-1 autocorrelation of the ranks within
//!   each run (pooled, clamped to 0..0.9): the AR(1) effective-sample-size correction
//!   (as used for the t test by Zwiers & von Storch, 1995), applied here to ranks. Each
//!   run's ρ is first corrected for the estimator's small-sample bias,
//!   `E[r₁] ≈ ρ − (1 + 4ρ)/n` (Marriott & Pope, 1954). On simulated AR(1) series (ρ up
//!   to 0.8, 10 to 100 intervals per run) the false alarm rate at 5 % stayed within 5–9 %;
//!   without the bias correction it reached 28 % (ρ = 0.8, 10 intervals).
//! - **Percentile test**: the bootstrap itself; the two-sided p value is twice the share of
//!   replicates on the far side of zero (the test dual to the percentile interval).
//! - **Verdict**: *improved* or *regressed* only when the test is significant at 5 % *and*
//!   the whole confidence interval lies beyond the noise threshold (±2 % by default); else
//!   *no significant change* (criterion.rs's `compare_to_threshold` rule). Higher is better
//!   for throughput, worse for latency. Runs with fewer than [`MIN_INTERVALS`] full
//!   measured intervals get *too little data* instead.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use schemars::JsonSchema;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

use super::{full_intervals, interval_s, op_series_in, shared_ops, OpSeries};
use crate::result::{RunResult, RunStatus};
use crate::stats::Hist;

/// Fewer full measured intervals than this in either run: no verdict.
pub const MIN_INTERVALS: usize = 5;

/// The noise band with several runs per side, whose intervals include run-to-run variance.
pub const ROUNDS_NOISE: f64 = 0.02;

/// The noise band with one run per side: the run-to-run allowance. One run per side cannot
/// measure how much runs differ; on a quiet dedicated machine repeated runs typically agree
/// within a few percent, on a shared one they differ by 10-60 % (issue 17), so a change
/// must exceed this before one pair of runs may call it.
pub const RUN_TO_RUN_ALLOWANCE: f64 = 0.10;

/// How to compare.
#[derive(Debug, Clone)]
pub struct Options {
    /// Changes within ±noise (a fraction: 0.02 is 2 %) are never a verdict.
    pub noise: f64,
    /// Confidence level of the intervals; 1 − confidence is the test's significance level.
    pub confidence: f64,
    /// Bootstrap replicates.
    pub resamples: usize,
    /// Seed of the bootstrap, fixed so the same files give the same output.
    pub seed: u64,
    /// The change size the power calculation is for (0.05 is 5 %).
    pub detect: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            detect: 0.05,
            noise: 0.02,
            confidence: 0.95,
            resamples: 2000,
            seed: 0x10AD_5EED,
        }
    }
}

/// What is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Throughput,
    Mean,
    P50,
    P90,
    P99,
    #[serde(rename = "p99.9")]
    P999,
}

impl Metric {
    pub const ALL: [Metric; 6] = [
        Metric::Throughput,
        Metric::Mean,
        Metric::P50,
        Metric::P90,
        Metric::P99,
        Metric::P999,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Mean => "mean",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Metric::Throughput
    }

    fn quantile(self) -> Option<f64> {
        match self {
            Metric::Throughput | Metric::Mean => None,
            Metric::P50 => Some(0.5),
            Metric::P90 => Some(0.9),
            Metric::P99 => Some(0.99),
            Metric::P999 => Some(0.999),
        }
    }

    /// The metric's value in one histogram (none for throughput, which is a rate).
    pub fn of_hist(self, h: &Hist) -> Option<f64> {
        match (self, self.quantile()) {
            (Metric::Throughput, _) => None,
            _ if h.is_empty() => Some(0.0),
            (Metric::Mean, _) => Some(h.mean()),
            (_, Some(q)) => Some(h.value_at_quantile(q) as f64),
            (_, None) => None,
        }
    }
}

/// The decision for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    NoChange,
    /// Too few intervals (or no operations) to say anything.
    TooLittleData,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no significant change",
            Verdict::TooLittleData => "too little data",
        }
    }
}

/// One metric of one operation, base against new.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MetricChange {
    pub metric: Metric,
    /// "ops/s" for throughput, "ns" for latencies.
    pub unit: &'static str,
    pub base: f64,
    pub new: f64,
    /// `new / base − 1`; none when the base is zero.
    pub change: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: Option<f64>,
    /// "mann-whitney" or "bootstrap" (one run per side), "welch-t" (several: the test on
    /// the logarithms of the per-run values).
    pub test: &'static str,
    pub verdict: Verdict,
    /// Several runs per side: the metric of each run, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_runs: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_runs: Vec<f64>,
    /// Several runs per side: the cross-check, Mann-Whitney U over the per-run values
    /// (exact two-sided p without ties), as benchstat reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mann_whitney_p: Option<f64>,
    /// Several runs per side: the variance components (Kalibera & Jones 2013) as relative
    /// standard deviations of one run's value: between runs, and within a run (from its
    /// intervals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_run_sd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_run_sd: Option<f64>,
    /// Several runs per side: the rounds per side that would detect a change of the
    /// comparison's `detect` size with 80 % power at the noise measured here; none when no
    /// number of rounds would (the change is inside the noise band).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_needed: Option<u64>,
}

/// All metrics of one operation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpComparison {
    pub operation: String,
    /// Runs with stages: the stage both runs have by this name, whose intervals alone are
    /// compared; absent for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    pub base_intervals: usize,
    pub new_intervals: usize,
    /// Bootstrap block lengths, in intervals.
    pub base_block: usize,
    pub new_block: usize,
    pub metrics: Vec<MetricChange>,
}

/// Where a compared run came from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunInfo {
    pub file: String,
    pub workload: String,
    pub target: String,
    pub started_at: String,
    pub status: RunStatus,
    pub full_intervals: usize,
    pub interval_s: f64,
}

impl RunInfo {
    pub fn of(r: &RunResult, file: &str) -> RunInfo {
        RunInfo {
            file: file.to_string(),
            workload: r.workload.name.clone(),
            target: crate::targets::redact(&r.target.url),
            started_at: r.started_at.clone(),
            status: r.status,
            full_intervals: full_intervals(r).len(),
            interval_s: interval_s(r),
        }
    }
}

/// How the intervals were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// One run per side: a bootstrap over each run's intervals, blind to run-to-run
    /// variance; `noise` is then the run-to-run allowance.
    IntervalBootstrap,
    /// Several runs per side: per-run values as the units (`analysis::rounds`).
    Rounds,
}

/// The whole comparison, as printed, as `--format json` and inside `ab.json`. Sections are
/// fields, so that a new kind of comparison adds a field rather than a new shape.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Comparison {
    pub method: Method,
    /// The first run of each side (the only one with one run per side).
    pub base: RunInfo,
    pub new: RunInfo,
    /// Every run of each side.
    pub base_runs: Vec<RunInfo>,
    pub new_runs: Vec<RunInfo>,
    /// The noise band: a verdict needs the whole interval beyond ±noise.
    pub noise: f64,
    /// The change size the `rounds_needed` of each metric is for (`--detect`).
    pub detect: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub operations: Vec<OpComparison>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    pub notes: Vec<String>,
    /// `--check` thresholds evaluated on NEW (empty when none were given).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<super::checks::Outcome>,
    /// The latency distributions quantile by quantile (`analysis::shift`), when computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shift_function: Option<super::shift::ShiftReport>,
}

impl OpComparison {
    /// The operation as tables show it: `read`, or `read @spike` for one stage.
    pub fn shown(&self) -> String {
        match &self.stage {
            Some(stage) => format!("{} @{stage}", self.operation),
            None => self.operation.clone(),
        }
    }
}

impl Comparison {
    /// True if any metric of any operation regressed.
    pub fn regressed(&self) -> bool {
        self.operations
            .iter()
            .flat_map(|o| &o.metrics)
            .any(|m| m.verdict == Verdict::Regressed)
    }

    /// True if any `--check` failed.
    pub fn check_failed(&self) -> bool {
        self.checks.iter().any(|c| !c.passed)
    }
}

/// Compare two runs read from `base_file` and `new_file`.
pub fn compare(
    base: &RunResult,
    base_file: &str,
    new: &RunResult,
    new_file: &str,
    opts: &Options,
) -> anyhow::Result<Comparison> {
    let (ops, only_in_base, only_in_new) = shared_ops(base, new);
    let mut operations = Vec::new();
    // The whole runs, then each stage both have by name, its intervals alone.
    let stages = base
        .stages
        .iter()
        .map(|s| s.name.as_str())
        .filter(|name| new.stages.iter().any(|s| s.name == *name));
    let scopes: Vec<Option<&str>> = std::iter::once(None).chain(stages.map(Some)).collect();
    for (j, stage) in scopes.iter().enumerate() {
        for (k, op) in ops.iter().enumerate() {
            let b =
                op_series_in(base, op, *stage).map_err(|e| anyhow::anyhow!("{base_file}: {e}"))?;
            let n =
                op_series_in(new, op, *stage).map_err(|e| anyhow::anyhow!("{new_file}: {e}"))?;
            let mut o = opts.clone();
            o.seed = opts.seed.wrapping_add((j * ops.len() + k) as u64);
            let mut c = compare_series(&b, &n, &o);
            c.stage = stage.map(str::to_string);
            operations.push(c);
        }
    }
    let mut notes = vec![format!(
        "one run per side: run-to-run variance is unknown, and the intervals cover only the variation inside each run; a verdict needs the whole interval beyond the run-to-run allowance ±{}% (--noise). For evidence, compare several runs per side (loadrig ab, or compare A1 A2 … -- B1 B2 …)",
        percent_text(opts.noise)
    )];
    for (r, which) in [(base, "base"), (new, "new")] {
        if r.status != RunStatus::Complete {
            notes.push(format!(
                "the {which} run is marked '{}': it covers only part of what was planned",
                r.status.name()
            ));
        }
        if let Some(v) = r.validity.as_ref().filter(|v| !v.reasons.is_empty()) {
            notes.push(format!(
                "the {which} run judged itself suspect (docs/validity.md): {}",
                v.reasons.join("; ")
            ));
        }
        let k = full_intervals(r).len();
        if k < MIN_INTERVALS {
            notes.push(format!("the {which} run has {k} full measured interval(s); a verdict needs at least {MIN_INTERVALS}: run longer or with a shorter --interval (e.g. --samples 30)"));
        }
    }
    if (interval_s(base) - interval_s(new)).abs() > 1e-9 {
        notes.push("the runs used different interval lengths: throughput compares rates per second, percentiles compare all operations; the tests still hold, but per-interval spread differs".to_string());
    }
    if base.target.kind != new.target.kind {
        notes.push(format!(
            "the runs used different targets ({} and {})",
            base.target.kind, new.target.kind
        ));
    }
    Ok(Comparison {
        method: Method::IntervalBootstrap,
        base: RunInfo::of(base, base_file),
        new: RunInfo::of(new, new_file),
        base_runs: vec![RunInfo::of(base, base_file)],
        new_runs: vec![RunInfo::of(new, new_file)],
        noise: opts.noise,
        detect: opts.detect,
        confidence: opts.confidence,
        resamples: opts.resamples,
        operations,
        only_in_base,
        only_in_new,
        notes,
        checks: Vec::new(),
        shift_function: None,
    })
}

/// Compare one operation's series: the core of [`compare`], usable on synthetic data.
pub fn compare_series(base: &OpSeries, new: &OpSeries, opts: &Options) -> OpComparison {
    let (nb, nn) = (base.len(), new.len());
    let (bb, bn) = (
        block_length(&base.throughput),
        block_length(&new.throughput),
    );
    let (pb, pn) = (points(base), points(new));
    let enough = nb >= MIN_INTERVALS && nn >= MIN_INTERVALS;
    let metrics = if enough {
        let mut reps = bootstrap(base, new, bb, bn, opts);
        let mw = mann_whitney(&base.throughput, &new.throughput);
        Metric::ALL
            .iter()
            .enumerate()
            .map(|(k, &m)| decide(m, pb[k], pn[k], &mut reps[k], mw.p, opts))
            .collect()
    } else {
        Metric::ALL
            .iter()
            .enumerate()
            .map(|(k, &m)| MetricChange::undecided(m, pb[k], pn[k], relative(pb[k], pn[k])))
            .collect()
    };
    OpComparison {
        operation: base.name.clone(),
        stage: None,
        base_intervals: nb,
        new_intervals: nn,
        base_block: bb,
        new_block: bn,
        metrics,
    }
}

impl MetricChange {
    /// A change without interval or test: too little data for a verdict.
    fn undecided(metric: Metric, base: f64, new: f64, change: Option<f64>) -> MetricChange {
        MetricChange {
            metric,
            unit: unit(metric),
            base,
            new,
            change,
            ci_low: None,
            ci_high: None,
            p_value: None,
            test: test_name(metric),
            verdict: Verdict::TooLittleData,
            base_runs: Vec::new(),
            new_runs: Vec::new(),
            mann_whitney_p: None,
            between_run_sd: None,
            within_run_sd: None,
            rounds_needed: None,
        }
    }
}

/// The point estimate of every metric (in [`Metric::ALL`] order) over the whole series.
pub fn points(s: &OpSeries) -> [f64; 6] {
    let h = s.merged();
    Metric::ALL.map(|m| m.of_hist(&h).unwrap_or_else(|| mean(&s.throughput)))
}

/// Bootstrap replicates of `new / base − 1`, one list per metric (in [`Metric::ALL`] order).
///
/// One bootstrap for all metrics: each replicate resamples intervals once per run.
fn bootstrap(
    base: &OpSeries,
    new: &OpSeries,
    bb: usize,
    bn: usize,
    opts: &Options,
) -> Vec<Vec<f64>> {
    let (nb, nn) = (base.len(), new.len());
    let quantiles: Vec<f64> = Metric::ALL.iter().filter_map(|m| m.quantile()).collect();
    let sb = Sparse::of(&base.hists);
    let sn = Sparse::of(&new.hists);
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let mut reps: Vec<Vec<f64>> = vec![Vec::with_capacity(opts.resamples); Metric::ALL.len()];
    let (mut ib, mut inn) = (Vec::with_capacity(nb), Vec::with_capacity(nn));
    let (mut qb, mut qn) = (vec![0.0; quantiles.len()], vec![0.0; quantiles.len()]);
    let (mut cb, mut cn) = (Vec::new(), Vec::new());
    for _ in 0..opts.resamples {
        circular_blocks(&mut rng, nb, bb, &mut ib);
        circular_blocks(&mut rng, nn, bn, &mut inn);
        let tb = ib.iter().map(|&i| base.throughput[i]).sum::<f64>() / nb as f64;
        let tn = inn.iter().map(|&i| new.throughput[i]).sum::<f64>() / nn as f64;
        let mb = sb.quantiles(&ib, &quantiles, &mut cb, &mut qb);
        let mn = sn.quantiles(&inn, &quantiles, &mut cn, &mut qn);
        for (k, m) in Metric::ALL.iter().enumerate() {
            let r = match (m, mb.zip(mn)) {
                (Metric::Throughput, _) if tb > 0.0 => Some(tn / tb - 1.0),
                (Metric::Throughput, _) | (_, None) => None,
                (Metric::Mean, Some((b, n))) => (b > 0.0).then(|| n / b - 1.0),
                (_, Some(_)) => {
                    // Quantile metrics follow throughput and mean in `Metric::ALL`.
                    let j = k - 2;
                    (qb[j] > 0.0).then(|| qn[j] / qb[j] - 1.0)
                }
            };
            if let Some(r) = r {
                reps[k].push(r);
            }
        }
    }
    reps
}

/// Interval, test and verdict of one metric from its bootstrap replicates `reps`;
/// `mw_p` is the Mann-Whitney p value of the throughputs.
fn decide(m: Metric, b: f64, n: f64, reps: &mut [f64], mw_p: f64, opts: &Options) -> MetricChange {
    let change = relative(b, n);
    // A metric whose base is zero in too many replicates has no relative change.
    if change.is_none() || reps.len() < opts.resamples / 2 {
        return MetricChange::undecided(m, b, n, change);
    }
    let alpha = 1.0 - opts.confidence;
    reps.sort_by(f64::total_cmp);
    let lo = quantile_sorted(reps, alpha / 2.0);
    let hi = quantile_sorted(reps, 1.0 - alpha / 2.0);
    let p = match m {
        Metric::Throughput => mw_p,
        _ => bootstrap_p(reps),
    };
    MetricChange {
        ci_low: Some(lo),
        ci_high: Some(hi),
        p_value: Some(p),
        verdict: verdict(lo, hi, p < alpha, opts.noise, m.higher_is_better()),
        ..MetricChange::undecided(m, b, n, change)
    }
}

fn unit(m: Metric) -> &'static str {
    if m == Metric::Throughput {
        "ops/s"
    } else {
        "ns"
    }
}

fn test_name(m: Metric) -> &'static str {
    if m == Metric::Throughput {
        "mann-whitney"
    } else {
        "bootstrap"
    }
}

/// A fraction as a percentage without trailing zeros: 0.1 → "10", 0.025 → "2.5".
pub fn percent_text(x: f64) -> String {
    let s = format!("{:.3}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn relative(base: f64, new: f64) -> Option<f64> {
    (base > 0.0).then(|| new / base - 1.0)
}

/// The verdict rule: significant and the whole interval beyond ±noise.
pub fn verdict(lo: f64, hi: f64, significant: bool, noise: f64, higher_is_better: bool) -> Verdict {
    let up = significant && lo > noise;
    let down = significant && hi < -noise;
    match (up, down, higher_is_better) {
        (true, _, true) | (_, true, false) => Verdict::Improved,
        (true, _, false) | (_, true, true) => Verdict::Regressed,
        _ => Verdict::NoChange,
    }
}

pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// Sample autocorrelation of `x` at `lag` (the usual biased estimator, divided by n).
pub fn autocorrelation(x: &[f64], lag: usize) -> f64 {
    let n = x.len();
    if lag >= n || n < 2 {
        return 0.0;
    }
    let m = mean(x);
    let var: f64 = x.iter().map(|v| (v - m).powi(2)).sum();
    if var <= 0.0 {
        return 0.0;
    }
    let cov: f64 = (0..n - lag).map(|i| (x[i] - m) * (x[i + lag] - m)).sum();
    cov / var
}

/// The bootstrap block length for a series (see the module docs).
pub fn block_length(x: &[f64]) -> usize {
    let n = x.len();
    if n < 4 {
        return 1;
    }
    let nf = n as f64;
    let bound = 2.0 * (nf.log10().max(0.0) / nf).sqrt();
    let k_n = (nf.log10().max(0.0).sqrt().ceil() as usize).max(5);
    let max_lag = (n / 2).max(1);
    let mut m = max_lag;
    'search: for cand in 0..max_lag {
        for k in 1..=k_n {
            if cand + k >= n {
                break;
            }
            if autocorrelation(x, cand + k).abs() >= bound {
                continue 'search;
            }
        }
        m = cand;
        break;
    }
    let rate = nf.cbrt().ceil() as usize;
    (2 * m).max(rate).clamp(1, (n / 2).max(1))
}

/// Fill `out` with `n` interval indices drawn as circular blocks of length `b`.
pub fn circular_blocks(rng: &mut SmallRng, n: usize, b: usize, out: &mut Vec<usize>) {
    out.clear();
    let b = b.clamp(1, n.max(1));
    while out.len() < n {
        let start = rng.random_range(0..n);
        for j in 0..b {
            if out.len() == n {
                break;
            }
            out.push((start + j) % n);
        }
    }
}

/// Linear interpolation between order statistics (type 7 of Hyndman & Fan).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Two-sided bootstrap p value for "no change": twice the share on the far side of zero.
fn bootstrap_p(sorted: &[f64]) -> f64 {
    let n = sorted.len() as f64;
    let below = sorted.iter().filter(|r| **r <= 0.0).count() as f64;
    let above = sorted.iter().filter(|r| **r >= 0.0).count() as f64;
    (2.0 * below.min(above) / n).min(1.0)
}

/// The result of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (x, y) with x > y, ties counting half.
    pub u: f64,
    pub z: f64,
    /// Two-sided p value, normal approximation.
    pub p: f64,
    /// The lag-1 autocorrelation of the ranks used to inflate the variance.
    pub rho: f64,
}

/// Mann-Whitney U with tie and continuity corrections, the variance inflated for
/// autocorrelated samples (see the module docs). Without dependence it is the textbook test
/// (e.g. SciPy's `mannwhitneyu(method="asymptotic")`).
pub fn mann_whitney(x: &[f64], y: &[f64]) -> MannWhitney {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return MannWhitney {
            u: 0.0,
            z: 0.0,
            p: 1.0,
            rho: 0.0,
        };
    }
    let n = n1 + n2;
    let mut all: Vec<(f64, usize)> = x
        .iter()
        .chain(y)
        .copied()
        .enumerate()
        .map(|(i, v)| (v, i))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for item in &all[i..=j] {
            ranks[item.1] = rank;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = ranks[..n1].iter().sum();
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = r1 - n1f * (n1f + 1.0) / 2.0;
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    // Pooled lag-1 autocorrelation of the ranks inside each sample, each corrected for the
    // small-sample bias of the estimator, E[r1] ≈ ρ − (1 + 4ρ)/n (Marriott & Pope, 1954).
    let unbiased = |r: &[f64]| {
        let m = r.len() as f64;
        if r.len() > 8 {
            (m * autocorrelation(r, 1) + 1.0) / (m - 4.0)
        } else {
            autocorrelation(r, 1)
        }
    };
    let (rx, ry) = (&ranks[..n1], &ranks[n1..]);
    let w = ((n1.saturating_sub(1)) + (n2.saturating_sub(1))).max(1) as f64;
    let rho = ((n1.saturating_sub(1)) as f64 * unbiased(rx)
        + (n2.saturating_sub(1)) as f64 * unbiased(ry))
        / w;
    let rho = rho.clamp(0.0, 0.9);
    let inflated = var * (1.0 + rho) / (1.0 - rho);
    if inflated <= 0.0 {
        return MannWhitney {
            u,
            z: 0.0,
            p: 1.0,
            rho,
        };
    }
    let d = u - mu;
    let z = (d - 0.5 * d.signum()) / inflated.sqrt();
    let p = (2.0 * (1.0 - Normal::standard().cdf(z.abs()))).clamp(0.0, 1.0);
    MannWhitney { u, z, p, rho }
}

/// Per-interval histograms as sparse counts over one table of bucket values, so a bootstrap
/// replicate adds a few hundred numbers per interval instead of whole histograms.
struct Sparse {
    /// Distinct recorded values (highest equivalent value of each bucket), ascending.
    values: Vec<u64>,
    /// For each interval: (index into `values`, count).
    intervals: Vec<Vec<(u32, u64)>>,
}

impl Sparse {
    fn of(hists: &[Hist]) -> Sparse {
        let mut values: Vec<u64> = hists
            .iter()
            .flat_map(|h| {
                h.iter_recorded()
                    .map(|v| h.highest_equivalent(v.value_iterated_to()))
            })
            .collect();
        values.sort_unstable();
        values.dedup();
        let intervals = hists
            .iter()
            .map(|h| {
                h.iter_recorded()
                    .map(|v| {
                        let value = h.highest_equivalent(v.value_iterated_to());
                        let k = values.binary_search(&value).unwrap_or(0) as u32;
                        (k, v.count_at_value())
                    })
                    .collect()
            })
            .collect();
        Sparse { values, intervals }
    }

    /// Percentiles (HdrHistogram's `value_at_quantile` rule) of the sum of the chosen
    /// intervals into `out`; returns their mean, none when they hold no operation.
    fn quantiles(
        &self,
        chosen: &[usize],
        qs: &[f64],
        counts: &mut Vec<u64>,
        out: &mut [f64],
    ) -> Option<f64> {
        counts.clear();
        counts.resize(self.values.len(), 0);
        let mut total = 0u64;
        for &i in chosen {
            for &(k, c) in &self.intervals[i] {
                counts[k as usize] += c;
                total += c;
            }
        }
        if total == 0 {
            return None;
        }
        let sum: f64 = counts
            .iter()
            .zip(&self.values)
            .map(|(c, v)| *c as f64 * *v as f64)
            .sum();
        let mut k = 0;
        let mut seen = 0u64;
        for (j, q) in qs.iter().enumerate() {
            let target = ((q * total as f64).ceil() as u64).max(1);
            while seen + counts[k] < target && k + 1 < counts.len() {
                seen += counts[k];
                k += 1;
            }
            out[j] = self.values[k] as f64;
        }
        Some(sum / total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_hist;
    use rand_distr::{Distribution, Exp, Normal as RNormal};

    #[test]
    fn mann_whitney_matches_the_textbook_on_known_data() {
        // Complete separation: U = 0, z = (0 - 12.5 + 0.5) / sqrt(25 * 11 / 12) = -2.5067,
        // p = 0.01219 before the dependence correction.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [6.0, 7.0, 8.0, 9.0, 10.0];
        let r = mann_whitney(&x, &y);
        assert_eq!(r.u, 0.0);
        assert!(r.rho > 0.0, "ranks rise inside each sample");
        let plain = 2.0 * (1.0 - Normal::standard().cdf(2.5067));
        assert!((plain - 0.01219).abs() < 1e-4);
        assert!(r.p > plain, "autocorrelated ranks widen the test");

        // Ties, in an order with no positive autocorrelation (so no inflation).
        // Ranks of x: 8, 1.5, 8, 1.5, 4.5, 4.5 -> R1 = 28, U = 28 - 21 = 7.
        // Tie groups 2, 4, 3, 2, 1: sum(t^3 - t) = 6 + 60 + 24 + 6 = 96,
        // var = 36 / 12 * (13 - 96 / 132) = 36.818, z = (7 - 18 + 0.5) / 6.068 = -1.7304,
        // p = 0.08355.
        let x = [3.0, 1.0, 3.0, 1.0, 2.0, 2.0];
        let y = [2.0, 4.0, 2.0, 4.0, 3.0, 5.0];
        let r = mann_whitney(&x, &y);
        assert_eq!(r.u, 7.0);
        assert_eq!(r.rho, 0.0);
        assert!((r.z + 1.73045).abs() < 1e-4, "z = {}", r.z);
        assert!((r.p - 0.08355).abs() < 1e-4, "p = {}", r.p);
    }

    #[test]
    fn identical_samples_are_not_significant() {
        let x = [5.0; 10];
        let r = mann_whitney(&x, &x);
        assert_eq!(r.p, 1.0);
    }

    fn ar1(rng: &mut SmallRng, n: usize, mean: f64, sd: f64, rho: f64) -> Vec<f64> {
        let e = RNormal::new(0.0, sd * (1.0 - rho * rho).sqrt()).unwrap();
        let mut v = RNormal::new(0.0, sd).unwrap().sample(rng);
        (0..n)
            .map(|_| {
                let x = mean + v;
                v = rho * v + e.sample(rng);
                x
            })
            .collect()
    }

    #[test]
    fn dependence_correction_keeps_false_alarms_near_five_percent() {
        // Two runs with the same mean and strongly autocorrelated intervals (AR(1), ρ = 0.6):
        // the plain test would reject far more often than 5 %.
        let mut rng = SmallRng::seed_from_u64(7);
        let reps = 400;
        let mut rejected = 0;
        for _ in 0..reps {
            let x = ar1(&mut rng, 40, 1000.0, 20.0, 0.6);
            let y = ar1(&mut rng, 40, 1000.0, 20.0, 0.6);
            if mann_whitney(&x, &y).p < 0.05 {
                rejected += 1;
            }
        }
        let rate = rejected as f64 / reps as f64;
        assert!((0.02..0.09).contains(&rate), "false alarm rate {rate}");
    }

    #[test]
    fn block_length_grows_with_dependence() {
        let mut rng = SmallRng::seed_from_u64(3);
        let iid = ar1(&mut rng, 200, 0.0, 1.0, 0.0);
        let dep = ar1(&mut rng, 200, 0.0, 1.0, 0.9);
        let (bi, bd) = (block_length(&iid), block_length(&dep));
        assert_eq!(bi, 6, "iid: the n^(1/3) floor");
        assert!(bd > 2 * bi, "dependent: {bd}");
    }

    /// Interval histograms of `n` intervals with `per` exponential latencies of mean `scale`.
    fn series(rng: &mut SmallRng, n: usize, per: usize, scale: f64, rho: f64) -> OpSeries {
        let throughput = ar1(rng, n, 1000.0 / scale * 1e6, 30.0, rho);
        let exp = Exp::new(1.0 / scale).unwrap();
        let hists = (0..n)
            .map(|_| {
                let mut h = new_hist();
                for _ in 0..per {
                    h.record(exp.sample(rng).max(1.0) as u64).unwrap();
                }
                h
            })
            .collect();
        OpSeries {
            name: "op".into(),
            counts: throughput.iter().map(|t| *t as u64).collect(),
            throughput,
            hists,
        }
    }

    #[test]
    fn intervals_cover_the_known_truth() {
        // NEW is 30 % slower at every percentile (exponential scale ×1.3) and its
        // throughput, an AR(1) series, is lower by a known ratio. Count how often the
        // 95 % intervals contain the truth over many synthetic comparisons.
        let mut rng = SmallRng::seed_from_u64(11);
        let opts = Options {
            resamples: 400,
            ..Options::default()
        };
        let reps = 60;
        let mut covered = [0usize; 6];
        for r in 0..reps {
            let base = series(&mut rng, 30, 40, 2e6, 0.4);
            let new = series(&mut rng, 30, 40, 2.6e6, 0.4);
            let c = compare_series(
                &base,
                &new,
                &Options {
                    seed: r,
                    ..opts.clone()
                },
            );
            let truth = [
                (1000.0 / 2.6) / (1000.0 / 2.0) - 1.0,
                0.3,
                0.3,
                0.3,
                0.3,
                0.3,
            ];
            for (k, m) in c.metrics.iter().enumerate() {
                let (lo, hi) = (m.ci_low.unwrap(), m.ci_high.unwrap());
                // Histogram resolution is 0.1 %; allow it on both sides.
                if lo - 2e-3 <= truth[k] && truth[k] <= hi + 2e-3 {
                    covered[k] += 1;
                }
            }
        }
        for (k, n) in covered.iter().enumerate() {
            let rate = *n as f64 / reps as f64;
            assert!(rate >= 0.85, "{}: coverage {rate}", Metric::ALL[k].name());
        }
    }

    #[test]
    fn a_clear_slowdown_is_a_regression_everywhere() {
        let mut rng = SmallRng::seed_from_u64(12);
        let base = series(&mut rng, 30, 200, 2e6, 0.4);
        let new = series(&mut rng, 30, 200, 2.6e6, 0.4);
        let c = compare_series(&base, &new, &Options::default());
        assert_eq!(
            c.metrics.len(),
            Metric::ALL.len(),
            "a verdict for every metric"
        );
        for m in &c.metrics {
            assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
        }
        let back = compare_series(&new, &base, &Options::default());
        assert_eq!(
            back.metrics.len(),
            Metric::ALL.len(),
            "a verdict for every metric"
        );
        for m in &back.metrics {
            assert_eq!(m.verdict, Verdict::Improved, "{m:?}");
        }
    }

    #[test]
    fn same_distribution_gives_no_change() {
        let mut rng = SmallRng::seed_from_u64(5);
        let base = series(&mut rng, 30, 50, 2e6, 0.3);
        let new = series(&mut rng, 30, 50, 2e6, 0.3);
        let c = compare_series(&base, &new, &Options::default());
        assert_eq!(
            c.metrics.len(),
            Metric::ALL.len(),
            "a verdict for every metric"
        );
        for m in &c.metrics {
            assert_eq!(m.verdict, Verdict::NoChange, "{:?}", m);
        }
    }

    #[test]
    fn bootstrap_quantiles_follow_hdrhistogram() {
        let mut rng = SmallRng::seed_from_u64(9);
        let s = series(&mut rng, 8, 100, 1e6, 0.0);
        let sparse = Sparse::of(&s.hists);
        let all: Vec<usize> = (0..8).collect();
        let qs = [0.5, 0.9, 0.99];
        let (mut counts, mut out) = (Vec::new(), [0.0; 3]);
        assert!(sparse.quantiles(&all, &qs, &mut counts, &mut out).is_some());
        let merged = s.merged();
        for (q, v) in qs.iter().zip(out) {
            assert_eq!(v as u64, merged.value_at_quantile(*q));
        }
    }

    #[test]
    fn too_few_intervals_give_no_verdict() {
        let mut rng = SmallRng::seed_from_u64(1);
        let base = series(&mut rng, 3, 20, 1e6, 0.0);
        let new = series(&mut rng, 3, 20, 3e6, 0.0);
        let c = compare_series(&base, &new, &Options::default());
        assert_eq!(
            c.metrics.len(),
            Metric::ALL.len(),
            "a verdict for every metric"
        );
        assert!(c
            .metrics
            .iter()
            .all(|m| m.verdict == Verdict::TooLittleData));
    }

    #[test]
    fn verdict_needs_significance_and_the_whole_interval_beyond_noise() {
        assert_eq!(verdict(0.05, 0.2, true, 0.02, false), Verdict::Regressed);
        assert_eq!(verdict(0.05, 0.2, true, 0.02, true), Verdict::Improved);
        assert_eq!(verdict(0.01, 0.2, true, 0.02, false), Verdict::NoChange);
        assert_eq!(verdict(0.05, 0.2, false, 0.02, false), Verdict::NoChange);
        assert_eq!(verdict(-0.2, -0.05, true, 0.02, true), Verdict::Regressed);
        assert_eq!(verdict(-0.2, -0.05, true, 0.02, false), Verdict::Improved);
    }
}
