//! What the models of `analysis` found, as result files hold it: the latency modes of a run,
//! and the USL, knee and complexity class of a sweep. `analysis` computes these; here they
//! are only data, with the words that describe them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::human_ns;
use crate::stats::LatencySummary;

/// One cluster of latencies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Mode {
    /// Where the density peaks.
    pub at_ns: f64,
    /// The fraction of samples in the cluster.
    pub share: f64,
}

/// Modes that sit at `offset + k·period`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Period {
    pub period_ns: f64,
    /// 0 when the modes are whole multiples of the period; else the fastest mode.
    pub offset_ns: f64,
    /// The multiple k of each mode, in mode order.
    pub multiples: Vec<u32>,
}

/// What the latency distribution looks like (`analysis::modes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyModes {
    /// `unimodal`, `multimodal`, or `too_few_samples`.
    pub shape: String,
    pub samples: u64,
    /// Kernel bandwidth in units of ln(ns).
    pub bandwidth: f64,
    /// From the fastest.
    pub modes: Vec<Mode>,
    pub periodic: Option<Period>,
}

impl LatencyModes {
    /// A one-line finding for the run summary, when there is more than one mode.
    pub fn note(&self) -> Option<String> {
        if self.modes.len() < 2 {
            return None;
        }
        let list: Vec<String> = self
            .modes
            .iter()
            .map(|m| format!("{} ({:.0}%)", human_ns(m.at_ns), m.share * 100.0))
            .collect();
        Some(format!(
            "latency modes at {}: {}",
            list.join(", "),
            self.verdict()
        ))
    }

    /// The report's line, when there is more than one mode:
    /// "latency modes at 100.00ms, 200.00ms, 300.00ms — periodic, every 100.00ms".
    pub fn summary_line(&self) -> Option<String> {
        if self.modes.len() < 2 {
            return None;
        }
        let at: Vec<String> = self.modes.iter().map(|m| human_ns(m.at_ns)).collect();
        Some(format!(
            "latency modes at {} — {}",
            at.join(", "),
            self.verdict()
        ))
    }

    /// Periodic (with its period), not periodic, or two clusters.
    fn verdict(&self) -> String {
        match &self.periodic {
            Some(p) if p.offset_ns > 0.0 => format!(
                "periodic, every {} after {}",
                human_ns(p.period_ns),
                human_ns(p.offset_ns)
            ),
            Some(p) => format!("periodic, every {}", human_ns(p.period_ns)),
            None if self.modes.len() >= 3 => "not periodic".to_string(),
            None => "two clusters".to_string(),
        }
    }
}

/// Whether a fitted model can be believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The model describes the points; its parameters mean something.
    Good,
    /// The points do not follow the model: parameters are kept for diagnosis only.
    Poor,
    /// Too few points to fit at all.
    Insufficient,
}

/// A fitted Universal Scalability Law and how well it holds (`analysis::usl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UslFit {
    pub verdict: Verdict,
    /// Why the verdict is not `good`, in words.
    pub reason: Option<String>,
    /// Throughput of one client (ops/s).
    pub lambda: f64,
    /// Contention.
    pub sigma: f64,
    /// Coherency.
    pub kappa: f64,
    pub r_squared: f64,
    /// Root mean square residual over the mean throughput.
    pub relative_rmse: f64,
    /// Measured points used (repeats count one each).
    pub points: usize,
    pub distinct_n: usize,
    /// The concurrency of peak throughput, when κ > 0 and σ < 1.
    pub peak_n: Option<f64>,
    pub peak_throughput: Option<f64>,
    /// With κ = 0: the throughput the curve levels off at (λ/σ), when σ > 0.
    pub ceiling: Option<f64>,
}

/// A complexity class, in order of growth.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Class {
    #[serde(rename = "O(1)")]
    Constant,
    #[serde(rename = "O(log n)")]
    Log,
    #[serde(rename = "O(n)")]
    Linear,
    #[serde(rename = "O(n log n)")]
    NLogN,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Constant, Class::Log, Class::Linear, Class::NLogN];

    pub fn name(self) -> &'static str {
        match self {
            Class::Constant => "O(1)",
            Class::Log => "O(log n)",
            Class::Linear => "O(n)",
            Class::NLogN => "O(n log n)",
        }
    }

    /// What the slope is per, for people.
    pub fn slope_unit(self) -> &'static str {
        match self {
            Class::Constant => "",
            Class::Log => "per unit of ln(1+n)",
            Class::Linear => "per record stored",
            Class::NLogN => "per unit of n·ln(1+n)",
        }
    }
}

/// One candidate model fitted to the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Candidate {
    pub class: Class,
    pub intercept: f64,
    pub slope: f64,
    pub rss: f64,
    pub aicc: Option<f64>,
    pub r_squared: f64,
}

/// The complexity class of one series (`analysis::growth`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GrowthFit {
    pub class: Class,
    pub verdict: Verdict,
    /// Why the verdict is not `good`, in words.
    pub reason: Option<String>,
    /// t = intercept + slope·f(n), t in the unit of the input (seconds per batch).
    pub intercept: f64,
    pub slope: f64,
    /// 95 % confidence interval of the slope (Student t), for the growing classes.
    pub slope_ci95: Option<(f64, f64)>,
    pub r_squared: f64,
    /// Root mean square residual over the mean time.
    pub relative_rmse: f64,
    /// How much the best growing candidate's cost changes across the measured range,
    /// as a fraction of the mean time (what decides O(1) against a growth class).
    pub change_over_range: f64,
    /// Batches fitted (outliers excluded).
    pub points: usize,
    /// The n of every batch set aside as an outlier.
    pub outliers: Vec<f64>,
    /// Higher classes not ruled out (AICc within 10 of the chosen one's).
    pub also_fits: Vec<Class>,
    /// Every candidate, for the reader who wants to see the ranking.
    pub candidates: Vec<Candidate>,
}

/// A latency figure of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LatencyStat {
    P50,
    P90,
    P99,
    P999,
    Max,
    Mean,
}

impl LatencyStat {
    /// This figure of a latency summary, in ns.
    pub fn of(self, l: &LatencySummary) -> f64 {
        match self {
            LatencyStat::P50 => l.p50_ns as f64,
            LatencyStat::P90 => l.p90_ns as f64,
            LatencyStat::P99 => l.p99_ns as f64,
            LatencyStat::P999 => l.p999_ns as f64,
            LatencyStat::Max => l.max_ns as f64,
            LatencyStat::Mean => l.mean_ns,
        }
    }
}

/// A latency objective such as `p99 < 50ms` on all operations together, bounded from
/// above (`analysis::knee` parses and applies it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Slo {
    /// As the user wrote it.
    pub text: String,
    pub metric: LatencyStat,
    pub threshold_ns: u64,
    /// `<=` rather than `<`.
    pub inclusive: bool,
}

/// Where the knee of a rate sweep lies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Knee {
    /// The highest passing rate, when the lowest one passed.
    pub knee_rate: Option<f64>,
    /// The lowest failing rate above it, when one failed.
    pub first_failing_rate: Option<f64>,
    /// `between`: the knee lies in [knee_rate, first_failing_rate);
    /// `above_range`: every rate tried passed; `below_range`: the lowest rate failed.
    pub verdict: String,
}
