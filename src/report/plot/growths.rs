//! Several growth series on one chart (a study's backends): each backend's cost per batch
//! against the records stored, its measured batches as dots and its fitted class as a line,
//! on a log scale so that backends orders of magnitude apart stay readable.

use anyhow::Result;
use plotters::prelude::*;

use super::{color, empty, svg, FONT, GRID_BOLD, GRID_LIGHT};

/// One backend: its name, its measured points and its fitted curve, (records, seconds).
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub curve: Vec<(f64, f64)>,
}

/// Every series on one chart; `x_desc` names the x axis (records stored, Ir), `y_desc` the cost.
pub fn chart(series: &[Series], x_desc: &str, y_desc: &str) -> Result<String> {
    let ys = || {
        series
            .iter()
            .flat_map(|s| s.points.iter().chain(&s.curve))
            .map(|p| p.1)
            .filter(|y| *y > 0.0 && y.is_finite())
    };
    if ys().next().is_none() {
        return empty("no batch finished");
    }
    let y0 = ys().fold(f64::INFINITY, f64::min) / 1.5;
    let y1 = ys().fold(0.0, f64::max) * 1.5;
    let x1 = series
        .iter()
        .flat_map(|s| s.points.iter().chain(&s.curve))
        .map(|p| p.0)
        .fold(1.0, f64::max)
        * 1.05;
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..x1, (y0..y1).log_scale())?;
        mesh!(chart, x_desc, y_desc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.3}"))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            let positive = |p: &&(f64, f64)| p.1 > 0.0;
            chart.draw_series(LineSeries::new(
                s.curve.iter().filter(positive).copied(),
                c.stroke_width(2),
            ))?;
            chart
                .draw_series(
                    s.points
                        .iter()
                        .filter(positive)
                        .map(|p| Circle::new(*p, 3, c.filled())),
                )?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        legend!(chart, SeriesLabelPosition::UpperLeft);
        Ok(())
    })
}
