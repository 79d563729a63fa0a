//! One metric across the runs of a history: each run's value as a dot, the medians between
//! change points as grey steps, and each change point as a dashed red line where the new
//! level begins.

use anyhow::Result;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{empty, pad_range, svg, tick_ns, FONT, GRID_BOLD, GRID_LIGHT, PALETTE};
use crate::analysis::changepoint::{median, ChangePoint};

const SHIFT: RGBColor = RGBColor(214, 39, 40);
const LEVEL: RGBColor = RGBColor(150, 150, 150);

/// The chart of `ys` (one value per run, in order) with its change points.
pub fn chart(ys: &[f64], points: &[ChangePoint], metric: &str, rate: bool) -> Result<String> {
    if ys.is_empty() {
        return empty("no runs");
    }
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    let (y0, y1) = pad_range((lo * 0.9).min(lo), hi * 1.1);
    let x1 = ys.len() as f64 + 0.5;
    let mut bounds = vec![0];
    bounds.extend(points.iter().map(|c| c.index));
    bounds.push(ys.len());
    let y_desc = if rate {
        format!("{metric} (operations/s)")
    } else {
        format!("{metric} latency")
    };
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.5..x1, y0..y1)?;
        mesh!(chart, "run (in order)", y_desc.as_str())
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| if rate { format!("{v:.0}") } else { tick_ns(*v) })
            .draw()?;
        for w in bounds.windows(2) {
            let level = median(&ys[w[0]..w[1]]);
            let (a, b) = (w[0] as f64 + 0.5, w[1] as f64 + 0.5);
            chart.draw_series(LineSeries::new(
                [(a, level), (b, level)],
                LEVEL.stroke_width(2),
            ))?;
        }
        for c in points {
            let x = c.index as f64 + 0.5;
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(x, y0), (x, y1)],
                6,
                4,
                SHIFT.stroke_width(2),
            )))?;
        }
        let c = PALETTE[0];
        chart.draw_series(LineSeries::new(
            ys.iter().enumerate().map(|(k, &y)| (k as f64 + 1.0, y)),
            c.stroke_width(1),
        ))?;
        chart.draw_series(
            ys.iter()
                .enumerate()
                .map(|(k, &y)| Circle::new((k as f64 + 1.0, y), 4, c.filled())),
        )?;
        Ok(())
    })
}
