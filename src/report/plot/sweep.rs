//! The plots of a sweep file: throughput and latency against the varied value (with the
//! fitted USL curve, the objective and the knee when there are some) and, for a growth study,
//! the time per batch against the records stored with the fitted class curve. Built on the
//! run plots' helpers, styles and palette.

use anyhow::Result;
use plotters::prelude::*;

use super::{color, empty, log_ticks, pad_range, svg, tick_ns, FONT, GRID_BOLD, GRID_LIGHT};
use crate::result::models::Class;
use crate::result::sweep::{SweepResult, VaryKind};

const KNEE: RGBColor = RGBColor(44, 160, 44);
const SLO: RGBColor = RGBColor(214, 39, 40);

/// Each point's position on the x axis: its value as a number, or (for a value that is not
/// a number) its rank among the distinct values, from 1.
pub fn xs(s: &SweepResult) -> Vec<f64> {
    let mut distinct: Vec<&str> = Vec::new();
    s.points
        .iter()
        .map(|p| match p.x {
            Some(x) if x.is_finite() => x,
            _ => {
                let k = distinct
                    .iter()
                    .position(|v| *v == p.value)
                    .unwrap_or_else(|| {
                        distinct.push(&p.value);
                        distinct.len() - 1
                    });
                (k + 1) as f64
            }
        })
        .collect()
}

/// The mean y at each distinct x, in x order.
fn mean_by_x(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut sorted = pts.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64, usize)> = Vec::new();
    for (x, y) in sorted {
        match out.last_mut() {
            Some(last) if last.0 == x => {
                last.1 += y;
                last.2 += 1;
            }
            _ => out.push((x, y, 1)),
        }
    }
    out.into_iter().map(|(x, y, n)| (x, y / n as f64)).collect()
}

fn x_desc(s: &SweepResult) -> String {
    match s.vary.kind {
        VaryKind::Clients => "clients".into(),
        VaryKind::Rate => "offered rate (ops/s)".into(),
        VaryKind::Pipeline => "operations in flight per connection (--pipeline)".into(),
        VaryKind::Threads => "client threads (--threads)".into(),
        VaryKind::Growth => "records stored".into(),
        VaryKind::Param => s.vary.name.clone(),
    }
}

fn x_range(xs: &[f64], extra: impl Iterator<Item = f64>) -> (f64, f64) {
    let hi = xs.iter().copied().chain(extra).fold(0.0, f64::max);
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let (lo, hi) = pad_range(lo, hi);
    (lo, hi + (hi - lo) * 0.05)
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

macro_rules! marker_legend {
    ($series:expr, $c:expr, $label:expr) => {{
        let c: RGBColor = $c;
        $series
            .label($label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }};
}

/// Throughput of every run against the varied value, the mean per value joined, the USL
/// curve over them when there is one, and the knee of a rate sweep.
pub fn throughput(s: &SweepResult) -> Result<String> {
    let xs = xs(s);
    let pts: Vec<(f64, f64)> = xs
        .iter()
        .zip(&s.points)
        .map(|(x, p)| (*x, p.throughput_per_s))
        .collect();
    if pts.is_empty() {
        return empty("no points");
    }
    let usl = s.models.usl.as_ref().filter(|u| !u.curve.is_empty());
    let curve: Vec<(f64, f64)> = usl
        .map(|u| u.curve.iter().map(|c| (c.x, c.y)).collect())
        .unwrap_or_default();
    let (x0, x1) = x_range(&xs, curve.iter().map(|c| c.0));
    let ymax = pts.iter().chain(&curve).map(|p| p.1).fold(0.0, f64::max) * 1.3;
    let ymax = if ymax > 0.0 { ymax } else { 1.0 };
    let knee = s.models.knee.as_ref().and_then(|k| k.knee.knee_rate);
    let several = s.repeat > 1;
    let desc = x_desc(s);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, 0.0..ymax)?;
        mesh!(chart, desc.as_str(), "operations / s")
            .x_label_formatter(&|v| number(*v))
            .y_label_formatter(&|v| number(*v))
            .draw()?;
        // The fitted curve first, the measured points over it.
        if let Some(u) = usl {
            let c = color(1);
            let s = chart.draw_series(LineSeries::new(curve.iter().copied(), c.stroke_width(2)))?;
            marker_legend!(s, c, format!("USL fit (R² {:.3})", u.fit.r_squared));
            if let (Some(n), Some(x)) = (u.fit.peak_n, u.fit.peak_throughput) {
                if n <= x1 {
                    let s = chart.draw_series(std::iter::once(Cross::new(
                        (n, x),
                        6,
                        c.stroke_width(2),
                    )))?;
                    marker_legend!(s, c, format!("peak: N* = {n:.1}, {x:.1} ops/s"));
                }
            }
            let c = color(0);
            let dots = chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
            marker_legend!(dots, c, "measured".to_string());
        } else {
            line!(
                chart,
                mean_by_x(&pts),
                color(0),
                if several {
                    "measured (mean of the runs)".to_string()
                } else {
                    "measured".to_string()
                }
            );
            if several {
                chart.draw_series(
                    pts.iter()
                        .map(|p| Circle::new(*p, 3, color(0).stroke_width(1))),
                )?;
            }
        }
        if let Some(k) = knee {
            let s = chart.draw_series(DashedLineSeries::new(
                vec![(k, 0.0), (k, ymax)],
                6,
                4,
                KNEE.stroke_width(2),
            ))?;
            marker_legend!(s, KNEE, format!("knee: {k:.1} ops/s"));
        }
        legend!(chart);
        Ok(())
    })
}

/// p50 and p99 of every run against the varied value (log scale), with the objective and
/// the knee when the sweep has them.
pub fn latency(s: &SweepResult) -> Result<String> {
    let xs = xs(s);
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    for (x, p) in xs.iter().zip(&s.points) {
        if p.latency.count == 0 {
            continue;
        }
        p50.push((*x, (p.latency.p50_ns.max(1)) as f64));
        p99.push((*x, (p.latency.p99_ns.max(1)) as f64));
    }
    if p50.is_empty() {
        return empty("no successful operations");
    }
    let slo = s
        .slo
        .as_ref()
        .map(|o| (o.text.clone(), o.threshold_ns as f64));
    let (lo, hi) = p50
        .iter()
        .chain(&p99)
        .map(|p| p.1)
        .chain(slo.iter().map(|o| o.1).filter(|v| *v > 0.0))
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    // Headroom above for the legend.
    let (lo, hi) = (lo / 1.5, hi * 3.0);
    let ticks = log_ticks(lo, hi);
    let (x0, x1) = x_range(&xs, std::iter::empty());
    let knee = s.models.knee.as_ref().and_then(|k| k.knee.knee_rate);
    let several = s.repeat > 1;
    let desc = x_desc(s);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, (lo..hi).log_scale().with_key_points(ticks))?;
        mesh!(chart, desc.as_str(), "response time")
            .x_label_formatter(&|v| number(*v))
            .y_label_formatter(&|v| tick_ns(*v))
            .draw()?;
        for (i, (name, pts)) in [("p50", &p50), ("p99", &p99)].into_iter().enumerate() {
            line!(chart, mean_by_x(pts), color(i), name.to_string());
            if several {
                chart.draw_series(
                    pts.iter()
                        .map(|p| Circle::new(*p, 3, color(i).stroke_width(1))),
                )?;
            }
        }
        if let Some((text, limit)) = &slo {
            if *limit > 0.0 {
                let s = chart.draw_series(DashedLineSeries::new(
                    vec![(x0, *limit), (x1, *limit)],
                    6,
                    4,
                    SLO.stroke_width(2),
                ))?;
                marker_legend!(s, SLO, format!("objective: {text}"));
            }
        }
        if let Some(k) = knee {
            let s = chart.draw_series(DashedLineSeries::new(
                vec![(k, lo), (k, hi)],
                6,
                4,
                KNEE.stroke_width(2),
            ))?;
            marker_legend!(s, KNEE, format!("knee: {k:.1} ops/s"));
        }
        legend!(chart);
        Ok(())
    })
}

/// The fitted class in a few words, for the growth plot's legend.
pub fn growth_label(s: &SweepResult) -> Option<String> {
    let g = s.models.growth.as_ref()?;
    let f = &g.fit;
    Some(if f.class == Class::Constant {
        format!(
            "{} fit: {:.4}s per batch, residuals {:.1}%",
            f.class.name(),
            f.intercept,
            f.relative_rmse * 100.0
        )
    } else {
        format!(
            "{} fit: slope {:.3e} s {}, R² {:.3}",
            f.class.name(),
            f.slope,
            f.class.slope_unit(),
            f.r_squared
        )
    })
}

/// A growth study: seconds per batch against the records stored (the middle of each
/// batch, as fitted), with the fitted class curve.
pub fn growth(s: &SweepResult) -> Result<Option<String>> {
    let Some(model) = &s.models.growth else {
        return Ok(None);
    };
    let batch = s.growth.as_ref().map_or(0, |g| g.batch) as f64;
    let stored: Vec<Option<f64>> = s
        .points
        .iter()
        .map(|p| p.stored_before.map(|n| n as f64))
        .collect();
    let mut pts = Vec::new();
    for (k, p) in s.points.iter().enumerate() {
        let Some(before) = stored[k] else { continue };
        let added = match stored.get(k + 1).copied().flatten() {
            Some(next) if next >= before => next - before,
            _ => batch,
        };
        pts.push((before + added / 2.0, p.measured_s));
    }
    if pts.is_empty() {
        return empty("no batch").map(Some);
    }
    let curve: Vec<(f64, f64)> = model.curve.iter().map(|c| (c.x, c.y)).collect();
    let all_x: Vec<f64> = pts.iter().chain(&curve).map(|p| p.0).collect();
    let (x0, x1) = x_range(&all_x, std::iter::empty());
    let ymax = pts.iter().chain(&curve).map(|p| p.1).fold(0.0, f64::max) * 1.3;
    let ymax = if ymax > 0.0 { ymax } else { 1.0 };
    let label = growth_label(s).unwrap_or_default();
    let series = model.series.clone();
    let outliers = model.fit.outliers.clone();
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, 0.0..ymax)?;
        mesh!(chart, "records stored", "time per batch")
            .x_label_formatter(&|v| number(*v))
            .y_label_formatter(&|v| tick_ns(*v * 1e9))
            .draw()?;
        // The fitted curve first, the measured batches over it.
        let c = color(1);
        let s = chart.draw_series(LineSeries::new(curve, c.stroke_width(2)))?;
        marker_legend!(s, c, label);
        let c = color(0);
        let dots = chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
        marker_legend!(dots, c, series);
        if !outliers.is_empty() {
            let out: Vec<(f64, f64)> = pts
                .iter()
                .copied()
                .filter(|p| {
                    outliers
                        .iter()
                        .any(|o| (o - p.0).abs() <= batch.max(1.0) / 2.0)
                })
                .collect();
            let s = chart.draw_series(
                out.into_iter()
                    .map(|p| Cross::new(p, 6, color(3).stroke_width(2))),
            )?;
            marker_legend!(s, color(3), "set aside as outliers".to_string());
        }
        legend!(chart, SeriesLabelPosition::UpperLeft);
        Ok(())
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_averaged_in_x_order() {
        let pts = [(4.0, 10.0), (1.0, 2.0), (4.0, 20.0), (2.0, 5.0)];
        assert_eq!(mean_by_x(&pts), vec![(1.0, 2.0), (2.0, 5.0), (4.0, 15.0)]);
        assert_eq!(number(4.0), "4");
        assert_eq!(number(2.5), "2.50");
        assert_eq!(number(1234.5), "1234");
    }
}
