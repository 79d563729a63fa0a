//! The plots of an experiment's response: the main effects (the mean response at each level
//! of each factor, a panel per factor along one axis), the interaction plot of the largest
//! two-factor interaction (or of the first two factors), and the allocation of variation
//! (each term's share of the total and the noise's, as bars).

use anyhow::Result;
use plotters::prelude::*;

use super::{color, empty, pad_range, svg, FONT, GRID_BOLD, GRID_LIGHT};
use crate::analysis::experiment::record::{DesignRecord, ResponseAnalysis};
use crate::analysis::experiment::summary::{percent, value_text};

fn y_label(a: &ResponseAnalysis) -> String {
    if a.unit.is_empty() {
        a.response.clone()
    } else {
        format!("{} ({})", a.response, a.unit)
    }
}

/// The y range of some means, with room above.
fn y_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    let (lo, hi) = pad_range(lo, hi);
    let span = hi - lo;
    (
        (lo - span * 0.15).max(if lo >= 0.0 { 0.0 } else { f64::MIN }),
        hi + span * 0.35,
    )
}

/// Each factor's level means, a segment per factor, side by side.
pub fn main_effects(a: &ResponseAnalysis) -> Result<String> {
    if a.main_effects.is_empty() {
        return empty("no factors");
    }
    // Factor f's level l sits at x = offset(f) + l, with a gap of one between factors.
    let mut x = 0.0;
    let mut series = Vec::new();
    let mut labels: Vec<(f64, String)> = Vec::new();
    for m in &a.main_effects {
        let pts: Vec<(f64, f64)> = m
            .means
            .iter()
            .enumerate()
            .map(|(l, v)| (x + l as f64, *v))
            .collect();
        for (l, level) in m.levels.iter().enumerate() {
            labels.push((x + l as f64, format!("{}={level}", m.factor)));
        }
        x += m.levels.len() as f64 + 1.0;
        series.push((m.factor.clone(), pts));
    }
    let (y0, y1) = y_range(a.main_effects.iter().flat_map(|m| m.means.iter().copied()));
    let grand = a.cells.iter().map(|c| c.mean).sum::<f64>() / a.cells.len().max(1) as f64;
    let unit = a.unit.clone();
    let ylabel = y_label(a);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(52)
            .y_label_area_size(86)
            .build_cartesian_2d(-0.5..x - 1.5, y0..y1)?;
        let label_of = |v: &f64| {
            labels
                .iter()
                .find(|(p, _)| (p - v).abs() < 0.05)
                .map_or_else(String::new, |(_, t)| t.clone())
        };
        chart
            .configure_mesh()
            .x_desc("factor = level")
            .y_desc(ylabel.as_str())
            .light_line_style(GRID_LIGHT)
            .bold_line_style(GRID_BOLD)
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .x_labels((x as usize) * 2 + 2)
            .x_label_formatter(&label_of)
            .y_label_formatter(&|v| value_text(&unit, *v))
            .disable_x_mesh()
            .draw()?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-0.5, grand), (x - 1.5, grand)],
                6,
                4,
                RGBColor(150, 150, 150).stroke_width(1),
            ))?
            .label("mean of all runs")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RGBColor(150, 150, 150)));
        for (i, (name, pts)) in series.into_iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(3)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3))
                });
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 5, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(GRID_BOLD)
            .label_font((FONT, 12))
            .draw()?;
        Ok(())
    })
}

/// The two factors to draw together: the largest two-factor interaction's that is
/// distinguishable from noise, else the two largest main effects'. None with one factor.
pub fn interaction_pair(a: &ResponseAnalysis, d: &DesignRecord) -> Option<(usize, usize)> {
    if d.factors.len() < 2 {
        return None;
    }
    let index = |letter: char| {
        d.factors
            .iter()
            .position(|f| f.factor.letter.starts_with(letter))
    };
    let mut mains: Vec<_> = a.effects.iter().filter(|e| e.order == 1).collect();
    mains.sort_by(|x, y| y.share.total_cmp(&x.share));
    let largest = || -> Option<(usize, usize)> {
        let f = index(mains.first()?.term.chars().next()?)?;
        let g = index(mains.get(1)?.term.chars().next()?)?;
        Some((f.min(g), f.max(g)))
    };
    a.effects
        .iter()
        .filter(|e| e.order == 2 && e.significant == Some(true))
        .max_by(|x, y| x.share.total_cmp(&y.share))
        .and_then(|e| {
            let mut letters = e.term.chars();
            Some((index(letters.next()?)?, index(letters.next()?)?))
        })
        .or_else(largest)
        .or(Some((0, 1)))
}

/// The mean response at each level of the first factor, a line per level of the second.
pub fn interaction(a: &ResponseAnalysis, d: &DesignRecord) -> Result<String> {
    let Some((f, g)) = interaction_pair(a, d) else {
        return empty("one factor: no interaction");
    };
    let (fl, gl) = (&d.factors[f].factor.levels, &d.factors[g].factor.levels);
    let mean_at = |i: usize, j: usize| {
        let v: Vec<f64> = a
            .cells
            .iter()
            .filter(|c| c.levels[f] == fl[i] && c.levels[g] == gl[j])
            .flat_map(|c| c.values.iter().copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let lines: Vec<(String, Vec<(f64, f64)>)> = (0..gl.len())
        .map(|j| {
            let pts = (0..fl.len())
                .filter_map(|i| mean_at(i, j).map(|m| (i as f64, m)))
                .collect();
            (format!("{}={}", d.factors[g].factor.name, gl[j]), pts)
        })
        .collect();
    let (y0, y1) = y_range(lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)));
    let xdesc = d.factors[f].factor.name.clone();
    let levels = fl.clone();
    let unit = a.unit.clone();
    let ylabel = y_label(a);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(52)
            .y_label_area_size(86)
            .build_cartesian_2d(-0.3..(levels.len() as f64 - 0.7), y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(xdesc.as_str())
            .y_desc(ylabel.as_str())
            .light_line_style(GRID_LIGHT)
            .bold_line_style(GRID_BOLD)
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .x_labels(levels.len() * 4 + 4)
            .x_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() < 0.05 && i >= 0.0 {
                    levels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| value_text(&unit, *v))
            .disable_x_mesh()
            .draw()?;
        for (i, (name, pts)) in lines.into_iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(3)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3))
                });
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 5, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(GRID_BOLD)
            .label_font((FONT, 12))
            .draw()?;
        Ok(())
    })
}

/// Each term's share of the total variation, and the noise's, largest first.
pub fn allocation(a: &ResponseAnalysis) -> Result<String> {
    let mut bars: Vec<(String, f64, bool)> = a
        .effects
        .iter()
        .filter(|e| !e.pooled)
        .map(|e| {
            (
                format!("{} {}", e.term, e.name),
                e.share,
                e.significant == Some(true),
            )
        })
        .collect();
    bars.sort_by(|x, y| y.1.total_cmp(&x.1));
    bars.push(("noise".into(), a.error.share, false));
    let n = bars.len();
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let h = (60 + 34 * n as u32).max(220);
    super::svg_sized(super::W, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(260)
            .build_cartesian_2d(0.0..1.05, -0.5..(n as f64 - 0.5))?;
        chart
            .configure_mesh()
            .x_desc("share of the total variation")
            .light_line_style(GRID_LIGHT)
            .bold_line_style(GRID_BOLD)
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .x_label_formatter(&|v: &f64| format!("{:.0} %", v * 100.0))
            .y_labels(n * 4 + 2)
            .y_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() < 0.05 && i >= 0.0 {
                    names.get(n - 1 - i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .disable_y_mesh()
            .draw()?;
        for (k, (_, share, significant)) in bars.iter().enumerate() {
            let y = (n - 1 - k) as f64;
            let c = if k == n - 1 {
                RGBColor(170, 170, 170)
            } else if *significant {
                color(0)
            } else {
                RGBColor(158, 202, 225)
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.32), (*share, y + 0.32)],
                c.filled(),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                percent(*share),
                (share + 0.01, y + 0.1),
                (FONT, 12).into_font(),
            )))?;
        }
        Ok(())
    })
}
