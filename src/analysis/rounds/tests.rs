//! Ground truth for the rounds method, on synthetic per-run values with known run effects.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

/// Simulated comparisons per case: at 2000 the binomial standard error of a 5 % rate is
/// 0.49 %, so the allowance below (2.33 standard errors, one-sided 1 %) is 1.1 points.
const SIMULATIONS: usize = 2000;

fn allowance(p: f64) -> f64 {
    2.33 * (p * (1.0 - p) / SIMULATIONS as f64).sqrt()
}

/// One run's summary: every metric at its true value times this run's effect `factor` and a
/// little within-run noise (throughput divided by it: a slower run serves fewer).
fn run(rng: &mut SmallRng, truth: [f64; 6], factor: f64) -> RunSummary {
    let values = std::array::from_fn(|k| {
        let jitter = 1.0 + rng.random_range(-0.005..0.005);
        if Metric::ALL[k] == Metric::Throughput {
            truth[k] / factor * jitter
        } else {
            truth[k] * factor * jitter
        }
    });
    RunSummary {
        values,
        within: [0.003f64.powi(2); 6],
    }
}

/// The verdict and interval of metric `k` from the runs of both sides.
fn judged(k: usize, a: &[RunSummary], b: &[RunSummary], opts: &Options) -> (Verdict, f64, f64) {
    let values = |s: &[RunSummary]| -> Vec<f64> { s.iter().map(|r| r.values[k]).collect() };
    let (e, v) = judge(Metric::ALL[k], &values(a), &values(b), a[0].within[k], opts).unwrap();
    (v, e.low, e.high)
}

const TRUTH: [f64; 6] = [10_000.0, 1.0e6, 0.9e6, 1.8e6, 3.0e6, 6.0e6];

/// A run effect uniform within ±`spread` (an offset of up to 10-50 %).
fn offset(rng: &mut SmallRng, spread: f64) -> f64 {
    rng.random_range(1.0 - spread..1.0 + spread)
}

fn side(rng: &mut SmallRng, k: usize, spread: f64, scale: f64) -> Vec<RunSummary> {
    let mut truth = TRUTH;
    for (j, t) in truth.iter_mut().enumerate() {
        if Metric::ALL[j] == Metric::Throughput {
            *t /= scale;
        } else {
            *t *= scale;
        }
    }
    (0..k)
        .map(|_| {
            let f = offset(rng, spread);
            run(rng, truth, f)
        })
        .collect()
}

#[test]
fn a_a_with_run_offsets_of_10_to_50_percent_rarely_alarms_at_five_rounds() {
    let opts = Options::default();
    for (case, spread) in [0.1, 0.3, 0.5].into_iter().enumerate() {
        let mut rng = SmallRng::seed_from_u64(1700 + case as u64);
        let mut alarms = [0usize; 6];
        let mut covered = [0usize; 6];
        for _ in 0..SIMULATIONS {
            let (a, b) = (
                side(&mut rng, 5, spread, 1.0),
                side(&mut rng, 5, spread, 1.0),
            );
            for k in 0..Metric::ALL.len() {
                let (verdict, low, high) = judged(k, &a, &b, &opts);
                if verdict != Verdict::NoChange {
                    alarms[k] += 1;
                }
                if low <= 0.0 && 0.0 <= high {
                    covered[k] += 1;
                }
            }
        }
        for (k, m) in Metric::ALL.iter().enumerate() {
            let rate = alarms[k] as f64 / SIMULATIONS as f64;
            assert!(
                rate <= 0.05 + allowance(0.05),
                "±{spread}: {} false alarms {rate}",
                m.name()
            );
            // The interval is a 95 % interval for the ratio: it holds the truth that often.
            let cover = covered[k] as f64 / SIMULATIONS as f64;
            assert!(
                cover >= 0.95 - allowance(0.05),
                "±{spread}: {} coverage {cover}",
                m.name()
            );
        }
    }
}

#[test]
fn a_true_ten_percent_change_is_found_at_the_rounds_the_power_calculation_asks_for() {
    let opts = Options {
        detect: 0.10,
        ..Options::default()
    };
    let spread = 0.3;
    // The noise the calculation is given: the standard deviation of the log run effect,
    // measured over many runs (what a user's measured noise estimates).
    let mut rng = SmallRng::seed_from_u64(99);
    let logs: Vec<f64> = (0..200_000)
        .map(|_| offset(&mut rng, spread).ln())
        .collect();
    let sd = sample_var(&logs).sqrt();
    let k = rounds_needed(sd, opts.detect, opts.noise, opts.confidence).unwrap() as usize;
    assert!((20..200).contains(&k), "rounds {k} at sd {sd}");
    let mut found = [0usize; 6];
    for _ in 0..SIMULATIONS {
        let (a, b) = (
            side(&mut rng, k, spread, 1.0),
            side(&mut rng, k, spread, 1.1),
        );
        for (j, n) in found.iter_mut().enumerate() {
            if judged(j, &a, &b, &opts).0 == Verdict::Regressed {
                *n += 1;
            }
        }
    }
    for (j, m) in Metric::ALL.iter().enumerate() {
        let power = found[j] as f64 / SIMULATIONS as f64;
        assert!(
            power >= POWER - allowance(POWER),
            "{}: power {power} at {k} rounds",
            m.name()
        );
    }
}

#[test]
fn decide_fills_the_cross_check_and_the_power_figures() {
    let mut rng = SmallRng::seed_from_u64(4);
    let (a, b) = (side(&mut rng, 5, 0.3, 1.0), side(&mut rng, 5, 0.3, 1.5));
    let opts = Options::default();
    for (k, m) in Metric::ALL.iter().enumerate() {
        let c = decide(*m, &a, &b, &opts);
        let (verdict, low, high) = judged(k, &a, &b, &opts);
        assert_eq!(
            (c.verdict, c.ci_low, c.ci_high),
            (verdict, Some(low), Some(high))
        );
        assert_eq!(c.base_runs.len(), 5);
        let values = |s: &[RunSummary]| -> Vec<f64> { s.iter().map(|r| r.values[k]).collect() };
        assert_eq!(
            c.mann_whitney_p,
            Some(mann_whitney_p(&values(&a), &values(&b)))
        );
        assert!(c.rounds_needed.is_some() && c.between_run_sd.unwrap() > c.within_run_sd.unwrap());
    }
}

#[test]
fn too_few_rounds_say_so_through_the_power_line() {
    // 5 % sought, ±2 % band, 20 % run-to-run noise: far more than 5 rounds.
    let k = rounds_needed(0.2, 0.05, 0.02, 0.95).unwrap();
    assert!(k > 100, "{k}");
    // A change inside the noise band is never a verdict, at any number of rounds.
    assert_eq!(rounds_needed(0.2, 0.02, 0.02, 0.95), None);
    assert_eq!(rounds_needed(0.0, 0.05, 0.02, 0.95), Some(2));
    // Less noise, fewer rounds.
    assert!(rounds_needed(0.01, 0.05, 0.02, 0.95).unwrap() < k);
}

#[test]
fn mann_whitney_exact_on_known_data() {
    // Complete separation of 5 and 5: one ordering of 252 at each extreme, p = 2/252.
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    let y = [6.0, 7.0, 8.0, 9.0, 10.0];
    assert!((mann_whitney_p(&x, &y) - 2.0 / 252.0).abs() < 1e-12);
    assert!((mann_whitney_p(&y, &x) - 2.0 / 252.0).abs() < 1e-12);
    // 3 and 3 can never be significant: 2/20.
    assert!((mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
    // U = 1 of 2 × 2: P(U <= 1) = 2/6, two-sided 4/6.
    assert!((mann_whitney_p(&[1.0, 3.0], &[2.0, 4.0]) - 4.0 / 6.0).abs() < 1e-12);
    // Interleaved: no evidence.
    assert_eq!(mann_whitney_p(&[1.0, 4.0, 5.0], &[2.0, 3.0, 6.0]), 1.0);
    // Ties: exact over the splits of the mid-ranks [1, 2.5, 2.5, 4]. x = {1, 2}, y = {2, 3}:
    // U = 0.5; the 6 splits give U = 0.5, 0.5, 2, 2, 3.5, 3.5, so P(U ≤ 0.5) = 2/6 and the
    // two-sided p is 4/6.
    assert!((mann_whitney_p(&[1.0, 2.0], &[2.0, 3.0]) - 4.0 / 6.0).abs() < 1e-12);
    // Three tied runs a side can never reach below 2/20.
    assert!(mann_whitney_p(&[1.0, 1.0, 1.0], &[2.0, 2.0, 2.0]) >= 0.1 - 1e-12);
    assert_eq!(mann_whitney_p(&[5.0; 4], &[5.0; 4]), 1.0);
}

#[test]
fn welch_interval_on_known_data() {
    // log values 0, 0.2 against 0.1, 0.3 (exp): d = 0.1, variances 0.02 each, se = 0.1414,
    // df = 2, t(0.975, 2) = 4.3027: the interval exp(0.1 ± 0.6085) − 1.
    let e = |x: f64| x.exp();
    let r = estimate(&[e(0.0), e(0.2)], &[e(0.1), e(0.3)], 0.0, 0.95).unwrap();
    assert!((r.change - (0.1f64.exp() - 1.0)).abs() < 1e-12);
    assert!(
        (r.low - ((0.1 - 0.608_51f64).exp() - 1.0)).abs() < 1e-4,
        "{r:?}"
    );
    assert!(
        (r.high - ((0.1 + 0.608_51f64).exp() - 1.0)).abs() < 1e-4,
        "{r:?}"
    );
    assert!((r.sd - 0.02f64.sqrt()).abs() < 1e-12);
    // Within-run variance takes its part of the total; the rest is between runs.
    let r = estimate(&[e(0.0), e(0.2)], &[e(0.1), e(0.3)], 0.015, 0.95).unwrap();
    assert!((r.between_sd - 0.005f64.sqrt()).abs() < 1e-12);
    // One run a side is not enough for this method.
    assert!(estimate(&[1.0], &[1.0, 2.0], 0.0, 0.95).is_none());
}
