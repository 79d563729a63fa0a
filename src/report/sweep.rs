//! The sweep result file and its console view: every point's full run result, what was
//! varied, and the fitted models with curves sampled for plotting, in one JSON document
//! that a report can be drawn from alone. Described field by field in docs/scaling.md.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::console::{thousands, truncate};
use super::result::RunResult;
use crate::analysis::fit::Verdict;
use crate::analysis::growth::{Class, GrowthFit};
use crate::analysis::knee::{Knee, Slo};
use crate::analysis::usl::UslFit;
use crate::spec::duration::human_ns;
use crate::stats::LatencySummary;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepResult {
    pub schema_version: u32,
    /// Always "sweep": tells this file from a run result.
    pub kind: String,
    pub loadrig_version: String,
    /// "running" (rewritten after every point), "complete" or "interrupted".
    pub status: String,
    pub workload: String,
    /// The target URL, passwords replaced by ***.
    pub target: String,
    pub vary: VaryRecord,
    pub repeat: u32,
    pub slo: Option<Slo>,
    pub find_max: bool,
    pub growth: Option<GrowthSpec>,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// In the order they ran.
    pub points: Vec<SweepPoint>,
    pub models: Models,
    pub notes: Vec<String>,
}

/// What the sweep varied.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VaryRecord {
    /// `clients`, `rate`, a workload parameter, or `records` for a growth study.
    pub name: String,
    /// `clients`, `rate`, `param` or `growth`.
    pub kind: String,
    /// As written after --vary (empty for a growth study).
    pub spec: String,
    /// The values of a grid, in order; the range's ends for --find-max.
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrowthSpec {
    /// Operations per batch.
    pub batch: u64,
    /// The study stops once this many records are stored.
    pub limit: u64,
    /// Records the workload's [data] stored before the first batch.
    pub initial_records: u64,
}

/// One run of the sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepPoint {
    /// From 1, in the order the runs happened.
    pub index: usize,
    /// The varied setting's value, as given.
    pub value: String,
    /// The value as a number for plotting (growth: records stored before the batch); null
    /// for a value that is not a number.
    pub x: Option<f64>,
    /// From 1.
    pub repeat: u32,
    /// Growth studies: records stored before this batch.
    pub stored_before: Option<u64>,
    pub ok: u64,
    pub errors: u64,
    pub throughput_per_s: f64,
    /// The measured time of the run: for a growth batch, the time the batch took.
    pub measured_s: f64,
    /// Latency of all operations together (`result.total.latency`).
    pub latency: LatencySummary,
    /// Whether the --slo held (and, on an open loop, 95 % of the rate completed).
    pub slo_ok: Option<bool>,
    /// The point's complete run result, as `loadrig run` would have written it.
    pub result: RunResult,
}

/// The models fitted to the points; each is present only when it applies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Models {
    pub usl: Option<UslModel>,
    pub knee: Option<KneeModel>,
    pub growth: Option<GrowthModel>,
}

/// One sample of a fitted curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub x: f64,
    pub y: f64,
}

fn curve(samples: Vec<(f64, f64)>) -> Vec<CurvePoint> {
    samples
        .into_iter()
        .map(|(x, y)| CurvePoint { x, y })
        .collect()
}

/// The USL over a clients sweep; `curve` (throughput against clients) only for a good fit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UslModel {
    #[serde(flatten)]
    pub fit: UslFit,
    pub curve: Vec<CurvePoint>,
}

impl UslModel {
    pub fn new(fit: UslFit, max_n: f64) -> UslModel {
        // Out to the peak when it is near the measured range, so a plot shows it.
        let to = match fit.peak_n {
            Some(p) if p <= 2.0 * max_n => max_n.max(p) * 1.1,
            _ => max_n * 1.1,
        };
        let curve = if fit.verdict == Verdict::Good {
            curve(fit.curve(to, 100))
        } else {
            Vec::new()
        };
        UslModel { fit, curve }
    }
}

/// The knee of a rate sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KneeModel {
    pub slo: Slo,
    /// `grid` (the --vary values) or `search` (--find-max).
    pub method: String,
    #[serde(flatten)]
    pub knee: Knee,
    /// Mean throughput and SLO figure over the runs at the knee rate.
    pub knee_throughput_per_s: Option<f64>,
    pub knee_latency_ns: Option<f64>,
}

/// The complexity class of a growth study; `curve` is seconds per batch against records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrowthModel {
    /// The series' name (the target).
    pub series: String,
    #[serde(flatten)]
    pub fit: GrowthFit,
    pub curve: Vec<CurvePoint>,
}

impl GrowthModel {
    pub fn new(series: String, fit: GrowthFit, from: f64, to: f64) -> GrowthModel {
        let curve = curve(fit.curve(from, to, 50));
        GrowthModel { series, fit, curve }
    }
}

/// Read a sweep file back.
pub fn read(path: &Path) -> Result<SweepResult> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read '{}'", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("'{}' is not a loadrig sweep file", path.display()))
}

/// The table header; `name` is the varied setting.
pub fn header(name: &str, slo: bool) -> String {
    format!(
        "{:>10} {:>4} {:>10} {:>11} {:>9} {:>9} {:>9} {:>9} {:>8}{}",
        truncate(name, 10),
        "run",
        "ok",
        "ops/s",
        "mean",
        "p50",
        "p99",
        "max",
        "errors",
        if slo { "  slo" } else { "" }
    )
}

/// One table row per run; growth batches also show their time.
pub fn row(p: &SweepPoint) -> String {
    let l = &p.latency;
    let t = |ns: f64| {
        if l.count > 0 {
            human_ns(ns)
        } else {
            "-".into()
        }
    };
    let mut line = format!(
        "{:>10} {:>4} {:>10} {:>11} {:>9} {:>9} {:>9} {:>9} {:>8}",
        truncate(&p.value, 10),
        p.repeat,
        thousands(p.ok),
        format!("{:.1}", p.throughput_per_s),
        t(l.mean_ns),
        t(l.p50_ns as f64),
        t(l.p99_ns as f64),
        t(l.max_ns as f64),
        thousands(p.errors),
    );
    if let Some(ok) = p.slo_ok {
        line.push_str(if ok { "  met" } else { "  MISSED" });
    }
    if p.stored_before.is_some() {
        let _ = write!(line, "  batch {:.3}s", p.measured_s);
    }
    if let Some(m) = p
        .result
        .latency_modes
        .as_ref()
        .filter(|m| m.modes.len() > 1)
    {
        let at: Vec<String> = m.modes.iter().map(|m| human_ns(m.at_ns)).collect();
        let _ = write!(line, "  modes {}", at.join(" "));
        if let Some(period) = &m.periodic {
            let _ = write!(line, " (every {})", human_ns(period.period_ns));
        }
    }
    line
}

/// The models in words, after the table.
pub fn summary(r: &SweepResult) -> String {
    let mut out = String::new();
    if let Some(u) = &r.models.usl {
        let f = &u.fit;
        match f.verdict {
            Verdict::Good => {
                let _ = writeln!(
                    out,
                    "USL fit: λ {:.1} ops/s per client, σ {:.4} (contention), κ {:.6} (coherency); R² {:.3}, residuals {:.1}%",
                    f.lambda,
                    f.sigma,
                    f.kappa,
                    f.r_squared,
                    f.relative_rmse * 100.0
                );
                match (f.peak_n, f.peak_throughput, f.ceiling) {
                    (Some(n), Some(x), _) => {
                        let max_n = r.points.iter().filter_map(|p| p.x).fold(0.0, f64::max);
                        let _ = writeln!(
                            out,
                            "  peak at N* = {n:.1} clients, {x:.1} ops/s{}",
                            if n > 2.0 * max_n {
                                " (far beyond the measured range: an extrapolation)"
                            } else {
                                ""
                            }
                        );
                    }
                    (_, _, Some(c)) => {
                        let _ = writeln!(
                            out,
                            "  no peak (κ = 0): throughput levels off towards {c:.1} ops/s"
                        );
                    }
                    _ => {
                        let _ = writeln!(out, "  no peak: throughput grows linearly with N");
                    }
                }
            }
            _ => {
                let _ = writeln!(
                    out,
                    "USL fit: {} — {}; no parameters reported",
                    if f.verdict == Verdict::Poor {
                        "poor"
                    } else {
                        "not possible"
                    },
                    f.reason.as_deref().unwrap_or("")
                );
            }
        }
    }
    if let Some(k) = &r.models.knee {
        let rate = |x: f64| format!("{x:.1} ops/s");
        let line = match (k.knee.knee_rate, k.knee.first_failing_rate) {
            (Some(pass), Some(fail)) => format!(
                "knee ({}, {}): sustains {} and meets the objective; {} does not",
                k.slo.text,
                k.method,
                rate(pass),
                rate(fail)
            ),
            (Some(pass), None) => format!(
                "knee ({}): every rate up to {} met the objective; the knee lies higher",
                k.slo.text,
                rate(pass)
            ),
            (None, Some(fail)) => format!(
                "knee ({}): even the lowest rate, {}, missed the objective; the knee lies lower",
                k.slo.text,
                rate(fail)
            ),
            (None, None) => format!("knee ({}): no run", k.slo.text),
        };
        let _ = writeln!(out, "{line}");
        if let (Some(x), Some(l)) = (k.knee_throughput_per_s, k.knee_latency_ns) {
            let _ = writeln!(
                out,
                "  at the knee: {x:.1} ops/s completed, {} {}",
                serde_json::to_value(k.slo.metric)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                human_ns(l)
            );
        }
    }
    if let Some(g) = &r.models.growth {
        let f = &g.fit;
        let _ = write!(
            out,
            "growth ({}): {} per batch of {}",
            g.series,
            f.class.name(),
            r.growth.as_ref().map_or(0, |s| s.batch)
        );
        if f.class == Class::Constant {
            let _ = write!(out, ", {:.4}s each", f.intercept);
        } else {
            let _ = write!(out, ", slope {:.3e} s {}", f.slope, f.class.slope_unit());
            if let Some((lo, hi)) = f.slope_ci95 {
                let _ = write!(out, " (95% CI {lo:.3e} to {hi:.3e})");
            }
        }
        if f.class == Class::Constant {
            let _ = write!(out, "; residuals {:.1}%", f.relative_rmse * 100.0);
            if f.change_over_range > 0.0 {
                let _ = writeln!(
                    out,
                    "; the best growing model would change it {:+.0}% over the range",
                    f.change_over_range * 100.0
                );
            } else {
                let _ = writeln!(out, "; no growing model fits better");
            }
        } else {
            let _ = writeln!(
                out,
                "; R² {:.3}, residuals {:.1}%, {:+.0}% over the range",
                f.r_squared,
                f.relative_rmse * 100.0,
                f.change_over_range * 100.0
            );
        }
        if !f.also_fits.is_empty() {
            let names: Vec<&str> = f.also_fits.iter().map(|c| c.name()).collect();
            let _ = writeln!(
                out,
                "  {} not ruled out (AICc within 10): more batches or a longer range would tell",
                names.join(" and ")
            );
        }
        if !f.outliers.is_empty() {
            let at: Vec<String> = f.outliers.iter().map(|n| format!("{n:.0}")).collect();
            let _ = writeln!(
                out,
                "  {} batch(es) set aside as outliers, far off their neighbours: at {} records",
                f.outliers.len(),
                at.join(", ")
            );
        }
        if f.verdict != Verdict::Good {
            let _ = writeln!(out, "  fit {}", f.reason.as_deref().unwrap_or("poor"));
        }
    }
    for note in &r.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}
