//! The report's plots, drawn as SVG strings with plotters' SVG backend.
//!
//! Every plot reads result files only ([`RunView`] wraps one with its histograms decoded)
//! and overlays several runs when given several. Text passed to plotters (operation names,
//! run labels) is escaped by its SVG backend, so it needs no escaping here.
//!
//! - throughput per interval over time, per operation, warm-up shaded;
//! - latency p50/p90/p99/max per interval over time, one plot per operation;
//! - the latency distribution on a log time axis: histogram bars and a kernel density;
//! - the percentile spectrum, 0 to 99.999 %, on HdrHistogram's `1/(1−q)` axis;
//! - the probability density of per-interval operation counts (histogram and kernel density);
//! - errors per interval by class.

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use std::f64::consts::LN_10;

use crate::analysis::density::{self, Grid, Kde};
use crate::analysis::full_intervals;
use crate::result::{IntervalRecord, RunResult};
use crate::stats::Hist;
use crate::vocab::ErrorClass;

const W: u32 = 960;
const H: u32 = 380;
const FONT: &str = "sans-serif";

/// Tableau 10: distinct, colour-blind-friendly enough, readable on white.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const WARMUP: RGBColor = RGBColor(232, 232, 232);
const GRID_LIGHT: RGBColor = RGBColor(242, 242, 242);
const GRID_BOLD: RGBColor = RGBColor(215, 215, 215);

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One run with its histograms decoded.
pub struct RunView<'a> {
    pub label: String,
    pub r: &'a RunResult,
    /// Latency histogram of each interval and operation: `hists[interval][op]`.
    pub hists: Vec<Vec<Hist>>,
    /// Each operation's measured histogram (the summary's).
    pub op_hists: Vec<Hist>,
}

impl<'a> RunView<'a> {
    pub fn new(label: &str, r: &'a RunResult) -> Result<RunView<'a>> {
        let hists = r
            .intervals
            .iter()
            .map(|i| {
                i.ops
                    .iter()
                    .map(|o| {
                        o.histogram
                            .decode()
                            .map_err(|e| anyhow!("interval {} of '{}': {e}", i.index, o.name))
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let op_hists = r
            .operations
            .iter()
            .map(|o| {
                o.histogram
                    .decode()
                    .map_err(|e| anyhow!("operation '{}': {e}", o.name))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RunView {
            label: label.to_string(),
            r,
            hists,
            op_hists,
        })
    }

    /// When the warm-up ends, in seconds from the start (0 without warm-up).
    fn warmup_end(&self) -> f64 {
        self.r
            .intervals
            .iter()
            .filter(|i| i.warmup)
            .map(|i| i.end_s)
            .fold(0.0, f64::max)
    }
}

/// A finished plot.
pub struct Plot {
    /// Anchor in the page.
    pub id: String,
    pub title: String,
    /// One or two sentences under the plot: what it shows and how to read it.
    pub caption: String,
    pub svg: String,
}

/// A legend label: the operation alone for one run, "run · operation" for several.
fn label(runs: &[RunView], run: &RunView, what: &str) -> String {
    if runs.len() == 1 {
        what.to_string()
    } else {
        format!("{} · {what}", run.label)
    }
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult) -> Result<String> {
    svg_sized(W, H, draw)
}

/// An SVG of `w` × `h` pixels.
fn svg_sized(
    w: u32,
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
        draw(&root).map_err(|e| anyhow!("plot: {e}"))?;
        root.present().map_err(|e| anyhow!("plot: {e}"))?;
    }
    Ok(out)
}

/// A "nothing to show" panel, so every plot slot still holds an SVG.
fn empty(message: &str) -> Result<String> {
    svg(|root| {
        root.draw(&Text::new(
            message.to_string(),
            (W as i32 / 2 - 120, H as i32 / 2),
            (FONT, 16).into_font().color(&RGBColor(120, 120, 120)),
        ))?;
        Ok(())
    })
}

/// Tick positions for a log axis: the finest of 1..9, 1-2-5, 1-3 or 1 per decade that gives
/// at most eight ticks (plotters' own log ticks crowd or vanish on short ranges).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    const SETS: [&[f64]; 4] = [
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 3.0],
        &[1.0],
    ];
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return vec![];
    }
    let mut last = Vec::new();
    for set in SETS {
        let mut ticks = Vec::new();
        let mut e = lo.log10().floor() as i32;
        while 10f64.powi(e) <= hi {
            for m in set {
                let v = m * 10f64.powi(e);
                if v >= lo && v <= hi {
                    ticks.push(v);
                }
            }
            e += 1;
        }
        if ticks.len() <= 8 {
            return ticks;
        }
        last = ticks;
    }
    // Many decades: every other power of ten.
    last.into_iter().step_by(2).collect()
}

/// A count axis label: whole numbers only (no "1 1 1" from rounding 0.8, 1.0, 1.2).
fn count_label(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        String::new()
    }
}

/// A tick label in nanoseconds, without trailing zeros: "500µs", "2ms", "1.5s".
fn tick_ns(v: f64) -> String {
    let (x, unit) = if v < 1e3 {
        (v, "ns")
    } else if v < 1e6 {
        (v / 1e3, "µs")
    } else if v < 1e9 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

fn pad_range(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, hi + 0.5)
    }
}

macro_rules! mesh {
    ($chart:expr, $x:expr, $y:expr) => {
        $chart
            .configure_mesh()
            .x_desc($x)
            .y_desc($y)
            .light_line_style(GRID_LIGHT)
            .bold_line_style(GRID_BOLD)
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
    };
}

macro_rules! legend {
    ($chart:expr) => {
        legend!($chart, SeriesLabelPosition::UpperRight)
    };
    ($chart:expr, $position:expr) => {
        $chart
            .configure_series_labels()
            .position($position)
            .background_style(WHITE.mix(0.85))
            .border_style(GRID_BOLD)
            .label_font((FONT, 12))
            .draw()?
    };
}

/// Line plus small dots, with its legend entry.
macro_rules! line {
    ($chart:expr, $points:expr, $color:expr, $label:expr) => {{
        let c: RGBColor = $color;
        let pts: Vec<(f64, f64)> = $points;
        $chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
            .label($label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        if pts.len() <= 200 {
            $chart.draw_series(pts.iter().map(|p| Circle::new(*p, 2, c.filled())))?;
        }
    }};
}

/// All plots of the report, in page order.
pub fn all(runs: &[RunView]) -> Result<Vec<Plot>> {
    let mut plots = vec![Plot {
        id: "throughput".into(),
        title: "Throughput per interval".into(),
        caption: "Successful operations per second in each interval. The grey band is the warm-up, left out of every statistic; dashed lines mark where each stage starts.".into(),
        svg: throughput(runs)?,
    }];
    if let Some(svg) = stages::offered(runs) {
        plots.push(Plot {
            id: "offered".into(),
            title: "Throughput against the load offered".into(),
            caption: "Each measured interval of a run with stages: successful operations per second against the arrivals due per second (open loop; dashed: every arrival completing) or the clients running (closed loop). Where the points leave the diagonal, the system stopped keeping up: the knee.".into(),
            svg: svg?,
        });
    }
    let mut names: Vec<String> = Vec::new();
    for run in runs {
        for o in &run.r.operations {
            if !names.contains(&o.name) {
                names.push(o.name.clone());
            }
        }
    }
    for (k, name) in names.iter().enumerate() {
        plots.push(Plot {
            id: format!("latency-{k}"),
            title: format!("Latency over time: {name}"),
            caption: "p50, p90, p99 and maximum response time in each interval (log scale). Warm-up shaded.".into(),
            svg: latency_over_time(runs, name)?,
        });
    }
    plots.push(Plot {
        id: "distribution".into(),
        title: "Latency distribution".into(),
        caption: "Histogram (bars, 20 bins per decade) and kernel density (line) of the measured response times, on a log time axis; the y axis is density per decade.".into(),
        svg: distribution(runs)?,
    });
    plots.push(Plot {
        id: "spectrum".into(),
        title: "Percentile spectrum".into(),
        caption: "Response time at each percentile from 0 to 99.999 %, HdrHistogram style: each step right is ten times rarer. Beyond the number of operations a percentile is the maximum.".into(),
        svg: spectrum(runs)?,
    });
    plots.push(Plot {
        id: "counts".into(),
        title: "Distribution of operations per interval".into(),
        caption: "Probability density of the number of successful operations in each full measured interval: histogram (bars) and kernel density (line). A narrow peak is a steady rate; a wide or double peak is noise or a mode switch.".into(),
        svg: counts_density(runs)?,
    });
    plots.push(Plot {
        id: "errors".into(),
        title: "Errors per interval".into(),
        caption: "Failed operations in each interval, by error class, all operations together."
            .into(),
        svg: errors(runs)?,
    });
    Ok(plots)
}

fn time_range(runs: &[RunView]) -> f64 {
    runs.iter()
        .flat_map(|r| r.r.intervals.iter().map(|i| i.end_s))
        .fold(0.0, f64::max)
        .max(1e-3)
}

fn mid(i: &IntervalRecord) -> f64 {
    (i.start_s + i.end_s) / 2.0
}

pub fn throughput(runs: &[RunView]) -> Result<String> {
    let mut lines = Vec::new();
    for run in runs {
        let names: Vec<&str> = run.r.operations.iter().map(|o| o.name.as_str()).collect();
        for (k, name) in names.iter().enumerate() {
            let pts: Vec<(f64, f64)> = run
                .r
                .intervals
                .iter()
                .filter(|i| i.end_s > i.start_s)
                .map(|i| {
                    let ok = i.ops.get(k).map_or(0, |o| o.ok);
                    (mid(i), ok as f64 / (i.end_s - i.start_s))
                })
                .collect();
            lines.push((label(runs, run, name), pts));
        }
    }
    let t1 = time_range(runs);
    let ymax = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        * 1.3;
    let ymax = if ymax > 0.0 { ymax } else { 1.0 };
    let warm = runs.iter().map(RunView::warmup_end).fold(0.0, f64::max);
    let marks = stages::all_marks(runs);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..t1, 0.0..ymax)?;
        mesh!(chart, "elapsed (s)", "operations / s")
            .y_label_formatter(&|v| {
                if ymax > 20.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            })
            .draw()?;
        if warm > 0.0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, 0.0), (warm, ymax)],
                WARMUP.filled(),
            )))?;
        }
        stages::draw(&mut chart, &marks, 0.0, ymax)?;
        for (i, (name, pts)) in lines.into_iter().enumerate() {
            line!(chart, pts, color(i), name);
        }
        legend!(chart);
        Ok(())
    })
}

/// One statistic of one run's latency over time.
struct LatencyLine {
    name: String,
    pts: Vec<(f64, f64)>,
    /// Which of p50, p90, p99, max.
    stat: usize,
    run: usize,
}

/// p50, p90, p99 and the maximum of operation `op` in each interval of each run.
fn latency_lines(runs: &[RunView], op: &str) -> Vec<LatencyLine> {
    const STATS: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)];
    let mut lines = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        let Some(k) = run.r.operations.iter().position(|o| o.name == op) else {
            continue;
        };
        for (s, (stat, q)) in STATS.iter().enumerate() {
            let pts: Vec<(f64, f64)> = run
                .r
                .intervals
                .iter()
                .zip(&run.hists)
                .filter_map(|(i, hs)| {
                    let h = hs.get(k)?;
                    if h.is_empty() {
                        return None;
                    }
                    let v = if *q >= 1.0 {
                        h.max()
                    } else {
                        h.value_at_quantile(*q)
                    };
                    Some((mid(i), v.max(1) as f64))
                })
                .collect();
            lines.push(LatencyLine {
                name: label(runs, run, stat),
                pts,
                stat: s,
                run: n,
            });
        }
    }
    lines
}

/// With several runs, a statistic's line: (dash size, gap, width); solid for p50 and max.
fn dash_style(stat: usize) -> (u32, u32, u32) {
    let (size, gap) = [(0, 0), (8, 4), (3, 3), (1, 0)][stat];
    let width = if stat == 3 { 1 } else { 2 };
    (size, gap, width)
}

pub fn latency_over_time(runs: &[RunView], op: &str) -> Result<String> {
    let lines = latency_lines(runs, op);
    let (lo, hi) = lines
        .iter()
        .flat_map(|l| l.pts.iter().map(|p| p.1))
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return empty("no successful operations");
    }
    // Headroom above for the legend.
    let (lo, hi) = (lo / 1.5, hi * 3.0);
    let t1 = time_range(runs);
    let warm = runs.iter().map(RunView::warmup_end).fold(0.0, f64::max);
    let ticks = log_ticks(lo, hi);
    let marks = stages::all_marks(runs);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..t1, (lo..hi).log_scale().with_key_points(ticks))?;
        mesh!(chart, "elapsed (s)", "response time")
            .y_label_formatter(&|v| tick_ns(*v))
            .draw()?;
        if warm > 0.0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, lo), (warm, hi)],
                WARMUP.filled(),
            )))?;
        }
        stages::draw(&mut chart, &marks, lo, hi)?;
        let several = runs.len() > 1;
        for LatencyLine {
            name,
            pts,
            stat,
            run,
        } in lines
        {
            if !several {
                line!(chart, pts, color(stat), name);
                continue;
            }
            // Several runs: a colour per run, a dash pattern per statistic.
            let c = color(run);
            let (size, gap, width) = dash_style(stat);
            if size == 0 || gap == 0 {
                chart
                    .draw_series(LineSeries::new(pts, c.stroke_width(width)))?
                    .label(name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(width))
                    });
            } else {
                chart
                    .draw_series(DashedLineSeries::new(pts, size, gap, c.stroke_width(width)))?
                    .label(name)
                    .legend(move |(x, y)| {
                        DashedPathElement::new(
                            vec![(x, y), (x + 18, y)],
                            size,
                            gap,
                            c.stroke_width(width),
                        )
                    });
            }
        }
        legend!(chart);
        Ok(())
    })
}

/// (log10 of the bucket's middle value, count) of each recorded bucket.
fn log_points(h: &Hist) -> Vec<(f64, f64)> {
    h.iter_recorded()
        .map(|v| {
            let x = h.median_equivalent(v.value_iterated_to()).max(1) as f64;
            (x.log10(), v.count_at_value() as f64)
        })
        .collect()
}

/// One data set of a density plot: its histogram bars `(from, to, height)` and its kernel
/// density on the plot's grid.
struct DensitySet {
    name: String,
    bars: Vec<(f64, f64, f64)>,
    curve: Vec<f64>,
}

/// The highest bar or curve point of all sets.
fn top(sets: &[DensitySet]) -> f64 {
    sets.iter()
        .flat_map(|s| s.bars.iter().map(|b| b.2).chain(s.curve.iter().copied()))
        .fold(0.0, f64::max)
}

const BINS_PER_DECADE: f64 = 20.0;

/// Histogram bars of `(log10 value, count)` points, 20 per decade, as density per decade.
fn decade_bars(pts: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    let n: f64 = pts.iter().map(|p| p.1).sum();
    let mut bins: std::collections::BTreeMap<i64, f64> = Default::default();
    for (x, w) in pts {
        *bins
            .entry((x * BINS_PER_DECADE).floor() as i64)
            .or_default() += w;
    }
    bins.into_iter()
        .map(|(b, w)| {
            let a = b as f64 / BINS_PER_DECADE;
            (a, a + 1.0 / BINS_PER_DECADE, w / n * BINS_PER_DECADE)
        })
        .collect()
}

/// A latency density (on ln ns, see [`density`]) as density per decade on a log10 grid.
fn per_decade(kde: &Kde, grid: &Grid) -> Vec<f64> {
    let ln = Grid {
        lo: grid.lo * LN_10,
        step: grid.step * LN_10,
        size: grid.size,
    };
    kde.density(&ln).into_iter().map(|d| d * LN_10).collect()
}

/// The distribution plot's log10 grid over `[x0, x1]`, fine enough for the narrowest of the
/// `bandwidths` (ln ns; a quarter of it a step) that no peak the mode finder sees falls
/// between its points; 301 to 4001 points.
fn decade_grid(x0: f64, x1: f64, bandwidths: impl Iterator<Item = f64>) -> Grid {
    let h = bandwidths.fold(f64::INFINITY, f64::min);
    let size = ((x1 - x0) * LN_10 / (h / 4.0)).ceil();
    let size = if size.is_finite() {
        size as usize + 1
    } else {
        0
    };
    Grid::between(x0, x1, size.clamp(301, 4001))
}

pub fn distribution(runs: &[RunView]) -> Result<String> {
    let mut sets = Vec::new();
    for run in runs {
        for (k, o) in run.r.operations.iter().enumerate() {
            let h = &run.op_hists[k];
            if !h.is_empty() {
                sets.push((label(runs, run, &o.name), log_points(h), Kde::latency(h)));
            }
        }
    }
    if sets.is_empty() {
        return empty("no successful operations");
    }
    let xs = || sets.iter().flat_map(|(_, p, _)| p.iter().map(|p| p.0));
    let lo = xs().fold(f64::INFINITY, f64::min);
    let hi = xs().fold(f64::NEG_INFINITY, f64::max);
    let (x0, x1) = (
        (lo * BINS_PER_DECADE).floor() / BINS_PER_DECADE - 0.1,
        (hi * BINS_PER_DECADE).ceil() / BINS_PER_DECADE + 0.1,
    );
    let grid = decade_grid(x0, x1, sets.iter().map(|(_, _, kde)| kde.bandwidth()));
    let drawn: Vec<DensitySet> = sets
        .iter()
        .map(|(name, pts, kde)| DensitySet {
            name: name.clone(),
            bars: decade_bars(pts),
            curve: per_decade(kde, &grid),
        })
        .collect();
    let ymax = top(&drawn) * 1.25;
    let ten = |x: f64| 10f64.powf(x);
    let ticks = log_ticks(ten(x0), ten(x1));
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(
                (ten(x0)..ten(x1)).log_scale().with_key_points(ticks),
                0.0..ymax,
            )?;
        mesh!(chart, "response time (log scale)", "density per decade")
            .x_label_formatter(&|v| tick_ns(*v))
            .y_label_formatter(&|v| format!("{v:.2}"))
            .draw()?;
        for (i, set) in drawn.into_iter().enumerate() {
            let c = color(i);
            chart.draw_series(set.bars.iter().map(|(a, b, y)| {
                Rectangle::new([(ten(*a), 0.0), (ten(*b), *y)], c.mix(0.25).filled())
            }))?;
            let pts: Vec<(f64, f64)> = grid.points().map(ten).zip(set.curve).collect();
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))?
                .label(set.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        legend!(chart);
        Ok(())
    })
}

/// "99.9%" for the spectrum axis position `x = 1 / (1 − q)`.
fn percent_label(x: f64) -> String {
    if x <= 1.0 {
        return "0%".into();
    }
    let q = (1.0 - 1.0 / x) * 100.0;
    let digits = (x.log10().ceil() as i32 - 2).max(0) as usize;
    format!("{q:.digits$}%")
}

pub fn spectrum(runs: &[RunView]) -> Result<String> {
    const TOP: f64 = 1e5; // 99.999 %
    let mut lines = Vec::new();
    for run in runs {
        for (k, o) in run.r.operations.iter().enumerate() {
            let h = &run.op_hists[k];
            if h.is_empty() {
                continue;
            }
            let pts: Vec<(f64, f64)> = (0..=100)
                .map(|i| {
                    let x = 10f64.powf(i as f64 / 20.0);
                    let q = 1.0 - 1.0 / x;
                    (x, h.value_at_quantile(q).max(1) as f64)
                })
                .collect();
            lines.push((label(runs, run, &o.name), pts));
        }
    }
    if lines.is_empty() {
        return empty("no successful operations");
    }
    let (lo, hi) = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.1))
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    let ticks = log_ticks(lo, hi);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(
                (1.0..TOP)
                    .log_scale()
                    .with_key_points(vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5]),
                (lo..hi).log_scale().with_key_points(ticks),
            )?;
        mesh!(chart, "percentile", "response time")
            .x_label_formatter(&|v| percent_label(*v))
            .y_label_formatter(&|v| tick_ns(*v))
            .draw()?;
        for (i, (name, pts)) in lines.into_iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        legend!(chart, SeriesLabelPosition::UpperLeft);
        Ok(())
    })
}

/// Each run's and operation's successful operations in each full measured interval.
fn count_sets(runs: &[RunView]) -> Vec<(String, Vec<f64>)> {
    let mut sets = Vec::new();
    for run in runs {
        let full = full_intervals(run.r);
        for o in &run.r.operations {
            let counts: Vec<f64> = full
                .iter()
                .map(|i| i.ops.iter().find(|x| x.name == o.name).map_or(0, |x| x.ok) as f64)
                .collect();
            if !counts.is_empty() {
                sets.push((label(runs, run, &o.name), counts));
            }
        }
    }
    sets
}

/// Histogram bars of counts, `width` wide and centred on `lo + k·width`, as a density.
fn count_bars(counts: &[f64], lo: f64, width: f64) -> Vec<(f64, f64, f64)> {
    let n = counts.len() as f64;
    let mut bins: std::collections::BTreeMap<i64, f64> = Default::default();
    for c in counts {
        *bins
            .entry(((c - lo) / width + 0.5).floor() as i64)
            .or_default() += 1.0;
    }
    bins.into_iter()
        .map(|(b, k)| {
            let centre = lo + b as f64 * width;
            (centre - width / 2.0, centre + width / 2.0, k / n / width)
        })
        .collect()
}

/// The kernel density of values on their own linear scale: Silverman's rule, made for one
/// steady rate's roughly normal counts, and at least `min_bandwidth` (half a count for whole
/// numbers) so that they do not draw as spikes.
fn count_curve(counts: &[f64], grid: &Grid, min_bandwidth: f64) -> Vec<f64> {
    let pts: Vec<(f64, f64)> = counts.iter().map(|c| (*c, 1.0)).collect();
    let h = density::silverman(&pts).max(min_bandwidth);
    Kde::new(pts, h).density(grid)
}

pub fn counts_density(runs: &[RunView]) -> Result<String> {
    let sets = count_sets(runs);
    if sets.is_empty() {
        return empty("no full measured intervals");
    }
    density_chart(&sets, "successful operations per interval", true)
}

/// The probability density of each set of values on one linear axis: kernel density lines,
/// and for counts (`whole`) histogram bars too, by whole numbers while that gives at most 40
/// bins, and smoothed over at least half a count. Other values get lines only: the bars of
/// several sets of ratios would hide each other.
pub fn density_chart(sets: &[(String, Vec<f64>)], x_desc: &str, whole: bool) -> Result<String> {
    let all = || sets.iter().flat_map(|(_, c)| c.iter().copied());
    if all().next().is_none() {
        return empty("no values");
    }
    let lo = all().fold(f64::INFINITY, f64::min);
    let hi = all().fold(f64::NEG_INFINITY, f64::max);
    let width = match whole {
        true if hi - lo <= 40.0 => 1.0,
        true => ((hi - lo) / 30.0).ceil(),
        false => ((hi - lo) / 30.0)
            .max(hi.abs() * 1e-3)
            .max(f64::MIN_POSITIVE),
    };
    let (x0, x1) = pad_range(lo - 2.0 * width, hi + 2.0 * width);
    let grid = Grid::between(x0, x1, 301);
    let min_bandwidth = if whole { 0.5 } else { width / 2.0 };
    let drawn: Vec<DensitySet> = sets
        .iter()
        .map(|(name, values)| DensitySet {
            name: name.clone(),
            bars: if whole {
                count_bars(values, lo, width)
            } else {
                Vec::new()
            },
            curve: count_curve(values, &grid, min_bandwidth),
        })
        .collect();
    let ymax = top(&drawn);
    let ymax = if ymax > 0.0 { ymax * 1.25 } else { 1.0 };
    let decimals = if whole { 0 } else { 2 };
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, 0.0..ymax)?;
        mesh!(chart, x_desc, "probability density")
            .x_label_formatter(&|v| format!("{v:.decimals$}"))
            .y_label_formatter(&|v| format!("{v:.3}"))
            .draw()?;
        for (i, set) in drawn.into_iter().enumerate() {
            let c = color(i);
            chart.draw_series(
                set.bars
                    .iter()
                    .map(|(a, b, y)| Rectangle::new([(*a, 0.0), (*b, *y)], c.mix(0.25).filled())),
            )?;
            chart
                .draw_series(LineSeries::new(
                    grid.points().zip(set.curve),
                    c.stroke_width(2),
                ))?
                .label(set.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        legend!(chart);
        Ok(())
    })
}

pub fn errors(runs: &[RunView]) -> Result<String> {
    let mut lines = Vec::new();
    for run in runs {
        for class in ErrorClass::ALL {
            let pts: Vec<(f64, f64)> = run
                .r
                .intervals
                .iter()
                .map(|i| {
                    let n: u64 = i
                        .ops
                        .iter()
                        .map(|o| o.errors_by_class.get(&class).copied().unwrap_or(0))
                        .sum();
                    (mid(i), n as f64)
                })
                .collect();
            if pts.iter().any(|p| p.1 > 0.0) {
                lines.push((label(runs, run, class.name()), pts));
            }
        }
    }
    let t1 = time_range(runs);
    let ymax = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let ymax = (ymax * 1.3).max(5.0);
    let warm = runs.iter().map(RunView::warmup_end).fold(0.0, f64::max);
    let none = lines.is_empty();
    let marks = stages::all_marks(runs);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..t1, 0.0..ymax)?;
        mesh!(chart, "elapsed (s)", "failed operations")
            .y_label_formatter(&count_label)
            .draw()?;
        if warm > 0.0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, 0.0), (warm, ymax)],
                WARMUP.filled(),
            )))?;
        }
        stages::draw(&mut chart, &marks, 0.0, ymax)?;
        if none {
            chart.draw_series(std::iter::once(Text::new(
                "no errors".to_string(),
                (t1 * 0.45, ymax * 0.55),
                (FONT, 16).into_font().color(&RGBColor(120, 120, 120)),
            )))?;
            return Ok(());
        }
        for (i, (name, pts)) in lines.into_iter().enumerate() {
            line!(chart, pts, color(i), name);
        }
        legend!(chart);
        Ok(())
    })
}

pub mod growths;
pub mod history;
pub mod rig;
pub mod shift;
pub mod stages;
pub mod sweep;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spectrum_axis_labels_read_as_percentiles() {
        assert_eq!(percent_label(1.0), "0%");
        assert_eq!(percent_label(10.0), "90%");
        assert_eq!(percent_label(100.0), "99%");
        assert_eq!(percent_label(1000.0), "99.9%");
        assert_eq!(percent_label(1e5), "99.999%");
        assert_eq!(percent_label(200.0), "99.5%");
    }

    #[test]
    fn log_ticks_stay_few_and_inside() {
        let t = log_ticks(1.4e6, 24e6);
        assert_eq!(t, vec![2e6, 5e6, 1e7, 2e7]);
        let t = log_ticks(1.3e6, 3.5e6);
        assert_eq!(t, vec![2e6, 3e6]);
        assert!(log_ticks(1.0, 1e12).len() <= 8);
        assert_eq!(tick_ns(2e6), "2ms");
        assert_eq!(tick_ns(1.5e9), "1.5s");
        assert_eq!(tick_ns(500e3), "500µs");
    }

    #[test]
    fn the_drawn_density_peaks_at_the_latency_modes() {
        // Clusters at 2 ms and 20 ms. The curve is the mode finder's own estimate: each
        // reported mode is one of its local maxima (within a grid step), the highest one
        // among them is the larger cluster's, and it integrates to one.
        use rand::rngs::SmallRng;
        use rand::SeedableRng;
        use rand_distr::{Distribution, LogNormal};
        let mut rng = SmallRng::seed_from_u64(9);
        let mut h = crate::stats::new_hist();
        for (at, n) in [(2e6f64, 3_000), (20e6, 1_000)] {
            let d = LogNormal::new(at.ln(), 0.08).unwrap();
            for _ in 0..n {
                h.record(d.sample(&mut rng) as u64).unwrap();
            }
        }
        let kde = Kde::latency(&h);
        let grid = decade_grid(5.5, 8.0, std::iter::once(kde.bandwidth()));
        let curve = per_decade(&kde, &grid);
        let area: f64 = curve.iter().sum::<f64>() * grid.step;
        assert!((area - 1.0).abs() < 1e-3, "area {area}");
        let peaks: Vec<usize> = (1..curve.len() - 1)
            .filter(|&i| curve[i] > curve[i - 1] && curve[i] >= curve[i + 1])
            .collect();
        let modes = crate::analysis::modes::find(&h);
        assert_eq!(modes.modes.len(), 2, "{modes:?}");
        assert_eq!(modes.bandwidth, kde.bandwidth());
        let at: Vec<usize> = modes
            .modes
            .iter()
            .map(|m| {
                let x = m.at_ns.log10();
                let near = peaks
                    .iter()
                    .copied()
                    .find(|&i| (grid.at(i) - x).abs() <= grid.step);
                near.unwrap_or_else(|| panic!("no peak of the curve at {m:?}: {peaks:?}"))
            })
            .collect();
        let highest = peaks
            .iter()
            .copied()
            .max_by(|&a, &b| curve[a].total_cmp(&curve[b]));
        assert_eq!(highest, Some(at[0]));
    }
}
