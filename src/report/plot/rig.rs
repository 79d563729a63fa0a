//! The rig over time, under the validity table (docs/validity.md): its CPU (the process, of
//! all cores; its busiest thread, of one core) with the `busy` and `thread` thresholds, the
//! machine's runnable threads against its cores, and how late the hiccup thread woke (p99
//! and maximum) against the `hiccup` threshold, one panel each on a shared time axis.

use anyhow::Result;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{pad_range, svg_sized, tick_ns, FONT, GRID_BOLD, GRID_LIGHT, PALETTE, W};
use crate::result::validity::Validity;
use crate::result::IntervalRecord;

const LIMIT: RGBColor = RGBColor(214, 39, 40);
const WARMUP: RGBColor = RGBColor(232, 232, 232);

/// One interval's figures as plotted: elapsed (mid-interval, s), the process's CPU (% of all
/// cores), the busiest load-carrying thread's busy share (% of one core) and name, the
/// machine's runnable threads, hiccup p99 and maximum (ns).
pub struct RigPoint {
    pub t: f64,
    pub warmup: bool,
    pub cpu_pct: f64,
    pub thread: Option<(String, f64)>,
    pub runq: Option<f64>,
    pub hiccup_p99_ns: f64,
    pub hiccup_max_ns: f64,
}

/// The plotted figures of each interval that has the rig's sample.
pub fn points(intervals: &[IntervalRecord]) -> Vec<RigPoint> {
    intervals
        .iter()
        .filter_map(|i| {
            let r = i.rig.as_ref()?;
            Some(RigPoint {
                t: (i.start_s + i.end_s) / 2.0,
                warmup: i.warmup,
                cpu_pct: r.cpu_share * 100.0,
                thread: r
                    .busiest_load_thread()
                    .map(|t| (t.name.clone(), t.busy() * 100.0)),
                runq: r.procs_running,
                hiccup_p99_ns: r.hiccup_p99_ns as f64,
                hiccup_max_ns: r.hiccup_max_ns as f64,
            })
        })
        .collect()
}

/// The three panels for one run; `None` when no interval has the rig's sample.
pub fn chart(intervals: &[IntervalRecord], v: &Validity) -> Option<Result<String>> {
    let pts = points(intervals);
    if pts.is_empty() {
        return None;
    }
    let t1 = intervals.iter().map(|i| i.end_s).fold(1e-3, f64::max);
    let warm = intervals
        .iter()
        .filter(|i| i.warmup)
        .map(|i| i.end_s)
        .fold(0.0, f64::max);
    let marks = super::stages::marks(intervals);
    Some(svg_sized(W, 640, |root| {
        let panels = root.split_evenly((3, 1));
        cpu_panel(&panels[0], &pts, v, t1, warm, &marks)?;
        runq_panel(&panels[1], &pts, v, t1, warm, &marks)?;
        hiccup_panel(&panels[2], &pts, v, t1, warm, &marks)?;
        Ok(())
    }))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;
type Panel<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One panel's chart: elapsed seconds `0..t1` across, `y` up, so the three panels align.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    t1: f64,
    y: std::ops::Range<f64>,
) -> std::result::Result<Panel<'a, 'b>, Box<dyn std::error::Error>> {
    Ok(ChartBuilder::on(area)
        .margin(10)
        .margin_right(40)
        .x_label_area_size(30)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..t1, y)?)
}

/// A threshold as a dashed red line across the chart.
macro_rules! limit {
    ($chart:expr, $y:expr, $t1:expr) => {
        $chart.draw_series(std::iter::once(DashedPathElement::new(
            vec![(0.0, $y), ($t1, $y)],
            6,
            4,
            LIMIT.stroke_width(1),
        )))?
    };
}

fn cpu_panel(
    area: &Area<'_>,
    pts: &[RigPoint],
    v: &Validity,
    t1: f64,
    warm: f64,
    marks: &[(f64, String)],
) -> DrawResult {
    let top = pts
        .iter()
        .map(|p| p.cpu_pct.max(p.thread.as_ref().map_or(0.0, |t| t.1)))
        .fold(100.0, f64::max)
        * 1.1;
    let mut chart = panel(area, t1, 0.0..top)?;
    mesh!(chart, "elapsed (s)", "CPU (%)").draw()?;
    shade(&mut chart, warm, 0.0, top)?;
    super::stages::draw(&mut chart, marks, 0.0, top)?;
    let busy = v.thresholds.busy_share * 100.0;
    let thread = v.thresholds.thread_busy * 100.0;
    limit!(chart, busy, t1);
    if (thread - busy).abs() > 0.5 {
        limit!(chart, thread, t1);
    }
    let cores = v.rig.cores;
    line!(
        chart,
        pts.iter().map(|p| (p.t, p.cpu_pct)).collect(),
        PALETTE[0],
        format!("rig process, % of {cores} cores")
    );
    let thread_pts: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|p| p.thread.as_ref().map(|t| (p.t, t.1)))
        .collect();
    if !thread_pts.is_empty() {
        line!(
            chart,
            thread_pts,
            PALETTE[1],
            "busiest thread, busy % of one core".to_string()
        );
    }
    legend!(chart, SeriesLabelPosition::UpperLeft);
    Ok(())
}

fn runq_panel(
    area: &Area<'_>,
    pts: &[RigPoint],
    v: &Validity,
    t1: f64,
    warm: f64,
    marks: &[(f64, String)],
) -> DrawResult {
    let runq: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|p| p.runq.map(|r| (p.t, r)))
        .collect();
    let cores = v.rig.cores as f64;
    let top = runq.iter().map(|p| p.1).fold(cores + 1.0, f64::max) * 1.2;
    let mut chart = panel(area, t1, 0.0..top)?;
    mesh!(chart, "elapsed (s)", "runnable threads").draw()?;
    shade(&mut chart, warm, 0.0, top)?;
    super::stages::draw(&mut chart, marks, 0.0, top)?;
    limit!(chart, cores + 1.0, t1);
    if !runq.is_empty() {
        line!(
            chart,
            runq,
            PALETTE[2],
            format!("machine's run queue ({cores:.0} cores)")
        );
        legend!(chart, SeriesLabelPosition::UpperLeft);
    }
    Ok(())
}

fn hiccup_panel(
    area: &Area<'_>,
    pts: &[RigPoint],
    v: &Validity,
    t1: f64,
    warm: f64,
    marks: &[(f64, String)],
) -> DrawResult {
    let limit = v.thresholds.hiccup_ns as f64;
    let hi = pts.iter().map(|p| p.hiccup_max_ns).fold(limit, f64::max);
    let (y0, y1) = pad_range(0.0, hi * 1.1);
    let mut chart = panel(area, t1, y0..y1)?;
    mesh!(chart, "elapsed (s)", "hiccup")
        .y_label_formatter(&|v| tick_ns(*v))
        .draw()?;
    shade(&mut chart, warm, y0, y1)?;
    super::stages::draw(&mut chart, marks, y0, y1)?;
    limit!(chart, limit, t1);
    line!(
        chart,
        pts.iter().map(|p| (p.t, p.hiccup_max_ns)).collect(),
        PALETTE[3],
        "hiccup max".to_string()
    );
    line!(
        chart,
        pts.iter().map(|p| (p.t, p.hiccup_p99_ns)).collect(),
        PALETTE[4],
        "hiccup p99".to_string()
    );
    legend!(chart, SeriesLabelPosition::UpperLeft);
    Ok(())
}

fn shade<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    warm: f64,
    y0: f64,
    y1: f64,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if warm > 0.0 {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y0), (warm, y1)],
            WARMUP.filled(),
        )))?;
    }
    Ok(())
}
