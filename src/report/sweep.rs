//! The console view of a sweep: one table row per point while it runs, and the fitted
//! models in words at the end. The sweep file itself is [`crate::result::sweep`].

use std::fmt::Write as _;

use super::console::{thousands, truncate};
use crate::duration::human_ns;
use crate::result::models::{Class, Verdict};
use crate::result::sweep::{GrowthModel, KneeModel, SweepPoint, SweepResult, UslModel};

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
        usl(&mut out, u, r);
    }
    if let Some(k) = &r.models.knee {
        knee(&mut out, k);
    }
    if let Some(g) = &r.models.growth {
        growth(&mut out, g, r.growth.as_ref().map_or(0, |s| s.batch));
    }
    for note in &r.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn usl(out: &mut String, u: &UslModel, r: &SweepResult) {
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

fn knee(out: &mut String, k: &KneeModel) {
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

/// A growth study's class; `batch` is its operations per batch.
fn growth(out: &mut String, g: &GrowthModel, batch: u64) {
    let f = &g.fit;
    let _ = write!(
        out,
        "growth ({}): {} per batch of {}",
        g.series,
        f.class.name(),
        batch
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
