//! The shift function of one operation (`analysis::shift`): NEW − BASE at each decile and at
//! p95, p99 and p99.9, with its simultaneous interval as a band, the zero line, and the
//! noise band (± the comparison's noise share of BASE's quantile), on an even quantile axis.

use anyhow::Result;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{pad_range, svg, tick_ns, FONT, GRID_BOLD, GRID_LIGHT, PALETTE};
use crate::analysis::shift::{ShiftFunction, ShiftPoint};

const NOISE: RGBColor = RGBColor(225, 225, 225);
const ZERO: RGBColor = RGBColor(90, 90, 90);

/// `p10`, `p95`, `p99.9`.
pub fn quantile_label(q: f64) -> String {
    let p = q * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("p{p:.0}")
    } else {
        format!("p{p}")
    }
}

/// A signed latency tick: `+20µs`, `-1.5ms`, `0`.
fn signed_ns(v: f64) -> String {
    if v.abs() < 1e-9 {
        "0".into()
    } else if v > 0.0 {
        format!("+{}", tick_ns(v))
    } else {
        format!("-{}", tick_ns(-v))
    }
}

/// The outline of ± `noise` × BASE's quantile, along the top and back along the bottom.
fn noise_band(pts: &[ShiftPoint], noise: f64) -> Vec<(f64, f64)> {
    let top = pts
        .iter()
        .enumerate()
        .map(|(k, p)| (k as f64, noise * p.base_ns));
    let bottom = pts
        .iter()
        .enumerate()
        .rev()
        .map(|(k, p)| (k as f64, -noise * p.base_ns));
    top.chain(bottom).collect()
}

/// The chart; `noise` is the comparison's noise band as a share (0.02 for ±2 %), and
/// `confidence` the interval's level (0.95).
pub fn chart(s: &ShiftFunction, noise: f64, confidence: f64) -> Result<String> {
    let pts = &s.points;
    let n = pts.len().max(1);
    let lows = pts
        .iter()
        .map(|p| p.ci_low_ns.unwrap_or(p.diff_ns).min(-noise * p.base_ns));
    let highs = pts
        .iter()
        .map(|p| p.ci_high_ns.unwrap_or(p.diff_ns).max(noise * p.base_ns));
    let lo = lows.fold(0.0, f64::min);
    let hi = highs.fold(0.0, f64::max);
    let (y0, y1) = pad_range(lo * 1.1, hi * 1.1);
    let x1 = n as f64 - 0.5;
    let labels: Vec<String> = pts.iter().map(|p| quantile_label(p.quantile)).collect();
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..x1, y0..y1)?;
        mesh!(chart, "quantile", "NEW − BASE")
            .x_labels(n)
            .x_label_formatter(&|x| {
                let k = x.round();
                if (x - k).abs() < 1e-6 && k >= 0.0 {
                    labels.get(k as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| signed_ns(*v))
            .draw()?;
        chart
            .draw_series(std::iter::once(Polygon::new(
                noise_band(pts, noise),
                NOISE.filled(),
            )))?
            .label(format!("noise band ±{:.0} % of BASE", noise * 100.0))
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], NOISE.filled()));
        chart.draw_series(std::iter::once(DashedPathElement::new(
            vec![(-0.5, 0.0), (x1, 0.0)],
            6,
            4,
            ZERO.stroke_width(1),
        )))?;
        let c = PALETTE[0];
        let bars: Vec<(f64, f64, f64)> = pts
            .iter()
            .enumerate()
            .filter_map(|(k, p)| Some((k as f64, p.ci_low_ns?, p.ci_high_ns?)))
            .collect();
        if !bars.is_empty() {
            chart
                .draw_series(bars.iter().map(|&(x, lo, hi)| {
                    PathElement::new(vec![(x, lo), (x, hi)], c.mix(0.5).stroke_width(6))
                }))?
                .label(format!("simultaneous {:.0} % interval", confidence * 100.0))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.mix(0.5).stroke_width(6))
                });
        }
        line!(
            chart,
            pts.iter()
                .enumerate()
                .map(|(k, p)| (k as f64, p.diff_ns))
                .collect(),
            c,
            "difference of quantiles (Harrell-Davis)".to_string()
        );
        legend!(chart, SeriesLabelPosition::UpperLeft);
        Ok(())
    })
}
