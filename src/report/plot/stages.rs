//! A run with stages in the report's plots: each stage's start drawn on every time series
//! (a dashed line and its name), and throughput against the load offered (an open loop's
//! arrivals due, a closed loop's clients), where the curve leaving the diagonal is the
//! knee.

use anyhow::Result;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{color, label, svg, RunView, FONT, GRID_BOLD, GRID_LIGHT};
use crate::result::IntervalRecord;

const MARK: RGBColor = RGBColor(90, 90, 90);

/// Where each stage starts (s) and its name, from the intervals (each records its stage).
pub fn marks(intervals: &[IntervalRecord]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for i in intervals {
        let Some(stage) = &i.stage else { continue };
        if out.last().is_none_or(|(_, s)| s != stage) {
            out.push((i.start_s, stage.clone()));
        }
    }
    out
}

/// The stages of every run shown, each start once.
pub fn all_marks(runs: &[RunView]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for run in runs {
        for m in marks(&run.r.intervals) {
            if !out.iter().any(|o| (o.0 - m.0).abs() < 1e-9 && o.1 == m.1) {
                out.push(m);
            }
        }
    }
    out
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Draw each stage's start as a dashed line from `y0` to `y1`, its name beside it at the
/// top (a stage starting at 0 has its name only).
pub fn draw<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    marks: &[(f64, String)],
    y0: f64,
    y1: f64,
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    if marks.is_empty() {
        return Ok(());
    }
    chart.draw_series(marks.iter().filter(|(x, _)| *x > 0.0).map(|(x, _)| {
        DashedPathElement::new(vec![(*x, y0), (*x, y1)], 5, 4, MARK.stroke_width(1))
    }))?;
    chart.draw_series(marks.iter().map(|(x, name)| {
        EmptyElement::at((*x, y1))
            + Text::new(name.clone(), (4, 4), (FONT, 12).into_font().color(&MARK))
    }))?;
    Ok(())
}

/// Successful operations per second against the load offered in each measured interval of
/// a run with stages: the arrivals due per second (open loop, with the diagonal: all of
/// them completing) or the clients running (closed loop); `None` without stages.
pub fn offered(runs: &[RunView]) -> Option<Result<String>> {
    let mut lines = Vec::new();
    let mut open = false;
    for run in runs {
        let pts: Vec<(f64, f64)> = (run.r.intervals.iter())
            .filter(|i| !i.warmup && i.end_s > i.start_s)
            .filter_map(|i| {
                let secs = i.end_s - i.start_s;
                let x = match (i.offered, i.clients) {
                    (Some(due), _) => {
                        open = true;
                        due / secs
                    }
                    (None, Some(c)) => c as f64,
                    (None, None) => return None,
                };
                Some((x, i.ok as f64 / secs))
            })
            .collect();
        if !pts.is_empty() {
            lines.push((label(runs, run, "throughput"), pts));
        }
    }
    if lines.is_empty() {
        return None;
    }
    let xmax = (lines.iter())
        .flat_map(|(_, p)| p.iter().map(|p| p.0))
        .fold(1.0, f64::max)
        * 1.05;
    let ymax = (lines.iter())
        .flat_map(|(_, p)| p.iter().map(|p| p.1))
        .fold(if open { xmax } else { 1.0 }, f64::max)
        * 1.1;
    let x_desc = if open {
        "offered: arrivals due per second"
    } else {
        "clients running"
    };
    Some(svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        mesh!(chart, x_desc, "operations / s").draw()?;
        if open {
            let c = MARK;
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    vec![(0.0, 0.0), (xmax, xmax)],
                    5,
                    4,
                    c.stroke_width(1),
                )))?
                .label("all offered completing")
                .legend(move |(x, y)| {
                    DashedPathElement::new(vec![(x, y), (x + 18, y)], 5, 4, c.stroke_width(1))
                });
        }
        for (k, (name, pts)) in lines.into_iter().enumerate() {
            let c = color(k);
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?
                .label(name)
                .legend(move |(x, y)| Circle::new((x + 9, y), 3, c.filled()));
        }
        legend!(chart, SeriesLabelPosition::UpperLeft);
        Ok(())
    }))
}
