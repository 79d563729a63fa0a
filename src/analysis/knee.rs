//! The knee of a rate sweep: the highest injection rate the system sustains while a stated
//! latency objective holds (seed 004: throughput collapsed beyond injection rate 2).
//!
//! A rate *passes* when the objective holds on the run's latency (open loop: from the
//! intended start, so queueing behind an overloaded server counts) and the system sustains
//! it: at least 95 % of the offered rate completes successfully. Above capacity an open loop
//! queues without bound, so both fail together on a real knee.
//!
//! On a grid of rates the knee is the highest rate below the first failing one (a rate with
//! repeats passes only if every repeat does). [`Search`] narrows in instead: it tries the
//! lowest and the highest rate, then bisects between the highest passing and the lowest
//! failing rate until they are within 3 % of each other (Press et al., *Numerical Recipes*,
//! 3rd ed., §9.1, bisection, which assumes one pass-to-fail change in the interval).

use super::checks::{self, CheckMetric, Cmp};
use crate::error::InputError;
use crate::result::models::{Knee, Slo};
use crate::stats::LatencySummary;

/// At least this fraction of the offered rate must complete for the rate to be sustained.
pub const SUSTAINED: f64 = 0.95;
/// The search stops when (lowest failing − highest passing) / highest passing is below this.
pub const PRECISION: f64 = 0.03;
/// … or after this many runs.
pub const MAX_STEPS: usize = 12;

/// A latency objective is a check (see [`checks`]) on a latency figure of all operations
/// together, bounded from above.
impl Slo {
    /// Parse with the checks' grammar, then keep to what an objective can be.
    pub fn parse(text: &str) -> Result<Slo, InputError> {
        let bad = |why: String| {
            InputError::new(format!("--slo '{}': {why}", text.trim()))
                .help("write METRIC < DURATION, e.g. --slo 'p99 < 50ms'; metrics: mean, p50, p90, p99, p99.9, max")
        };
        let check = checks::parse_or_why(text).map_err(bad)?;
        let CheckMetric::Latency(metric) = check.metric else {
            return Err(bad(format!(
                "'{}' is not a latency figure: an objective bounds one",
                check.metric.name()
            )));
        };
        if let Some(op) = &check.op {
            return Err(bad(format!(
                "an objective covers all operations together, not '{op}' alone"
            )));
        }
        let inclusive = match check.cmp {
            Cmp::Lt => false,
            Cmp::Le => true,
            Cmp::Gt | Cmp::Ge => {
                return Err(bad(
                    "an objective is an upper bound on latency: use < or <=".into(),
                ))
            }
        };
        if check.limit < 1.0 {
            return Err(bad("the limit must be above zero".into()));
        }
        Ok(Slo {
            text: check.text,
            metric,
            threshold_ns: check.limit.min(u64::MAX as f64) as u64,
            inclusive,
        })
    }

    /// The constrained figure of a latency summary, in ns.
    pub fn value(&self, l: &LatencySummary) -> f64 {
        self.metric.of(l)
    }

    /// Whether the objective holds (never on a run without a successful operation).
    pub fn holds(&self, l: &LatencySummary) -> bool {
        let v = self.value(l);
        let t = self.threshold_ns as f64;
        l.count > 0 && if self.inclusive { v <= t } else { v < t }
    }
}

/// Whether `throughput` sustains the offered `rate`.
pub fn sustained(rate: f64, throughput: f64) -> bool {
    throughput >= SUSTAINED * rate
}

impl Knee {
    fn of(pass: Option<f64>, fail: Option<f64>) -> Knee {
        let verdict = match (pass, fail) {
            (Some(_), Some(_)) => "between",
            (Some(_), None) => "above_range",
            _ => "below_range",
        };
        Knee {
            knee_rate: pass,
            first_failing_rate: fail,
            verdict: verdict.to_string(),
        }
    }
}

/// The knee of a grid of `(rate, passed)` runs, repeats included.
pub fn grid(runs: &[(f64, bool)]) -> Knee {
    let mut rates: Vec<f64> = runs.iter().map(|r| r.0).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let mut pass = None;
    for rate in rates {
        if runs.iter().filter(|r| r.0 == rate).all(|r| r.1) {
            pass = Some(rate);
        } else {
            return Knee::of(pass, Some(rate));
        }
    }
    Knee::of(pass, None)
}

/// The narrowing search of `--find-max`: ask [`Search::next`] for a rate, run it, tell
/// [`Search::record`] whether it passed, until `next` says `None`.
#[derive(Debug, Clone)]
pub struct Search {
    min: f64,
    max: f64,
    pass: Option<f64>,
    fail: Option<f64>,
    steps: usize,
}

impl Search {
    pub fn new(min: f64, max: f64) -> Search {
        Search {
            min,
            max,
            pass: None,
            fail: None,
            steps: 0,
        }
    }

    /// The next rate to try, or `None` when the knee is pinned down.
    pub fn next(&self) -> Option<f64> {
        if self.steps >= MAX_STEPS {
            return None;
        }
        match (self.pass, self.fail) {
            (None, None) => Some(self.min),
            (None, Some(_)) => None,
            (Some(p), None) if p < self.max => Some(self.max),
            (Some(_), None) => None,
            (Some(p), Some(f)) if (f - p) / p > PRECISION => Some(round4((p + f) / 2.0)),
            _ => None,
        }
    }

    pub fn record(&mut self, rate: f64, passed: bool) {
        self.steps += 1;
        if passed {
            self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
    }

    pub fn knee(&self) -> Knee {
        Knee::of(self.pass, self.fail)
    }
}

/// Round to four significant digits, so rates print as people would choose them.
fn round4(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(3 - x.log10().floor() as i32);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::models::LatencyStat;

    #[test]
    fn parses_objectives() {
        let s = Slo::parse("p99 < 50ms").unwrap();
        assert_eq!(
            (s.metric, s.threshold_ns, s.inclusive),
            (LatencyStat::P99, 50_000_000, false)
        );
        let s = Slo::parse(" p99.9<=1s ").unwrap();
        assert_eq!((s.metric, s.inclusive), (LatencyStat::P999, true));
        assert_eq!(s.text, "p99.9<=1s");
        let s = Slo::parse("total.mean < 250us").unwrap();
        assert_eq!((s.metric, s.threshold_ns), (LatencyStat::Mean, 250_000));
        for (bad, why) in [
            ("p99 50ms", "no comparison operator"),
            ("p42 < 1ms", "unknown metric 'p42'"),
            ("p99 < soon", "'soon' is not a duration"),
            ("p99 < 5", "has no unit"),
            ("max < 0ms", "above zero"),
            ("p99 > 5ms", "upper bound"),
            ("throughput < 5/s", "not a latency figure"),
            ("read.p99 < 5ms", "not 'read' alone"),
        ] {
            let e = Slo::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--slo '{bad}': ")), "{e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn holds_compares_the_metric() {
        let s = Slo::parse("p99 < 10ms").unwrap();
        let mut l = LatencySummary {
            count: 10,
            p99_ns: 9_000_000,
            ..Default::default()
        };
        assert!(s.holds(&l));
        l.p99_ns = 10_000_000;
        assert!(!s.holds(&l));
        assert!(!s.holds(&LatencySummary::default()), "no samples, no pass");
    }

    #[test]
    fn grid_knee_is_below_the_first_failure() {
        let k = grid(&[(100.0, true), (200.0, true), (200.0, false), (300.0, true)]);
        assert_eq!(
            (k.knee_rate, k.first_failing_rate),
            (Some(100.0), Some(200.0))
        );
        assert_eq!(k.verdict, "between");
        assert_eq!(grid(&[(1.0, true), (2.0, true)]).verdict, "above_range");
        assert_eq!(grid(&[(1.0, false)]).verdict, "below_range");
    }

    #[test]
    fn search_narrows_to_within_precision() {
        // A system that passes up to 437 ops/s. Tolerance: the knee within PRECISION below it.
        let capacity = 437.0;
        let mut s = Search::new(50.0, 2000.0);
        let mut tried = Vec::new();
        while let Some(rate) = s.next() {
            tried.push(rate);
            s.record(rate, rate <= capacity);
        }
        let k = s.knee();
        let knee = k.knee_rate.unwrap();
        assert!(
            knee <= capacity && knee >= capacity * (1.0 - PRECISION),
            "{k:?} {tried:?}"
        );
        assert!(tried.len() <= MAX_STEPS);
        assert_eq!(&tried[..2], &[50.0, 2000.0]);

        let mut s = Search::new(10.0, 20.0);
        s.record(10.0, true);
        s.record(20.0, true);
        assert_eq!(s.next(), None);
        assert_eq!(s.knee().verdict, "above_range");
    }
}
