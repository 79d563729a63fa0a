//! The points of a running sweep: each a full run of its plan, its row printed and the
//! sweep file rewritten after it; at the end the model that explains the curve.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Result;

use super::course::{fmt_num, point_plan, RATE};
use crate::analysis::knee::{self, Search};
use crate::analysis::usl;
use crate::engine::{self, Mode};
use crate::plan::{Factor, LoadSetting, RunPlan};
use crate::report::{html, sweep as table};
use crate::result::models::{Knee, Slo};
use crate::result::sweep::{
    GrowthModel, KneeModel, SweepPoint, SweepResult, SweepStatus, UslModel,
};
use crate::result::{self, RunResult, RunStatus};
use crate::runner::{self, growth, View};
use crate::targets::Target;

/// The running sweep: its record so far and, for a growth study, its one target.
pub struct Sweeper<T> {
    pub record: SweepResult,
    pub out: PathBuf,
    pub slo: Option<Slo>,
    pub shared: Option<Arc<T>>,
}

impl<T: Target> Sweeper<T> {
    /// Every value `repeat` times, in order; false when interrupted.
    pub fn grid(
        &mut self,
        base: &RunPlan,
        factor: &Factor,
        values: &[String],
        repeat: u32,
    ) -> Result<bool> {
        for value in values {
            let x = value.parse::<f64>().ok();
            for rep in 1..=repeat {
                let plan = point_plan(base, factor, value)?;
                if !self.point(&plan, value, x, rep, None)? {
                    return Ok(false);
                }
            }
        }
        self.grid_models(factor);
        Ok(true)
    }

    /// `--find-max`: rates chosen by the knee search; false when interrupted.
    pub fn search(&mut self, base: &RunPlan, min: f64, max: f64, repeat: u32) -> Result<bool> {
        let mut search = Search::new(min, max);
        let mut complete = true;
        'search: while let Some(rate) = search.next() {
            let value = fmt_num(rate);
            let mut passed = true;
            for rep in 1..=repeat {
                let plan = point_plan(base, &RATE, &value)?;
                if !self.point(&plan, &value, Some(rate), rep, None)? {
                    complete = false;
                    break 'search;
                }
                passed &= self.record.points.last().and_then(|p| p.slo_ok) == Some(true);
            }
            search.record(rate, passed);
        }
        self.knee_model(search.knee(), "search");
        Ok(complete)
    }

    /// Batches against one store until `limit` records are stored; false when interrupted.
    pub fn growth(&mut self, base: &RunPlan, batch: u64, limit: u64, initial: u64) -> Result<bool> {
        let g = growth::grow(base, batch, limit, initial, |plan, stored| {
            let value = stored.to_string();
            if !self.point(plan, &value, Some(stored as f64), 1, Some(stored))? {
                return Ok(None);
            }
            Ok(self.record.points.last().map(|p| p.result.clone()))
        })?;
        self.record.notes.extend(g.notes);
        self.record.models.growth = Some(GrowthModel::new(
            self.record.target.clone(),
            g.fit,
            initial as f64,
            g.stored as f64,
        ));
        Ok(g.complete)
    }

    /// Write the finished sweep, print its summary and its report.
    pub fn finish(mut self, complete: bool, report: Option<&std::path::Path>) -> Result<ExitCode> {
        self.record.status = if complete {
            SweepStatus::Complete
        } else {
            SweepStatus::Interrupted
        };
        self.record.ended_at =
            Some(humantime::format_rfc3339_millis(SystemTime::now()).to_string());
        self.write()?;
        print!("\n{}", table::summary(&self.record));
        println!("sweep result: {}", self.out.display());
        if let Some(report) = report {
            let label = self.out.file_name().map_or_else(
                || self.out.display().to_string(),
                |n| n.to_string_lossy().into(),
            );
            let page = html::render_sweep(&label, &self.record)?;
            result::write_atomic(report, page.as_bytes())?;
            println!("report: {}", report.display());
        }
        Ok(if complete {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(130)
        })
    }

    /// Run one point, print its row and save the sweep; false when it was interrupted.
    fn point(
        &mut self,
        plan: &RunPlan,
        value: &str,
        x: Option<f64>,
        repeat: u32,
        stored_before: Option<u64>,
    ) -> Result<bool> {
        if engine::INTERRUPTED.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let offered = match plan.load.mode {
            Mode::Open { rate, .. } => Some(rate),
            Mode::Closed { .. } => None,
        };
        let result = match &self.shared {
            Some(t) => runner::execute_on(Arc::clone(t), plan, View::Quiet)?,
            None => runner::execute(plan, View::Quiet)?,
        };
        let slo_ok = self.slo.as_ref().map(|slo| {
            slo.holds(&result.total.latency)
                && offered.is_none_or(|r| knee::sustained(r, result.total.throughput_per_s))
        });
        let point = SweepPoint {
            index: self.record.points.len() + 1,
            value: value.to_string(),
            x,
            repeat,
            stored_before,
            ok: result.total.ok,
            errors: result.total.errors,
            throughput_per_s: result.total.throughput_per_s,
            measured_s: result.measured_s,
            latency: result.total.latency.clone(),
            slo_ok,
            result,
        };
        println!("{}", table::row(&point));
        let complete = point.result.status != RunStatus::Interrupted;
        self.record.points.push(point);
        self.write()?;
        Ok(complete)
    }

    fn write(&self) -> Result<()> {
        result::write_atomic(&self.out, &serde_json::to_vec_pretty(&self.record)?)
    }

    /// The models of a grid: USL over clients, the knee over rates.
    fn grid_models(&mut self, factor: &Factor) {
        let xy: Vec<(f64, f64)> = self
            .record
            .points
            .iter()
            .filter_map(|p| p.x.map(|x| (x, p.throughput_per_s)))
            .collect();
        match factor {
            Factor::Load(LoadSetting::Clients) => {
                let max_n = xy.iter().map(|p| p.0).fold(1.0, f64::max);
                self.record.models.usl = Some(UslModel::new(usl::fit(&xy), max_n));
            }
            Factor::Load(LoadSetting::Rate) if self.slo.is_some() => {
                let runs: Vec<(f64, bool)> = self
                    .record
                    .points
                    .iter()
                    .filter_map(|p| Some((p.x?, p.slo_ok?)))
                    .collect();
                self.knee_model(knee::grid(&runs), "grid");
            }
            Factor::Load(LoadSetting::Rate) => self.record.notes.push(
                "add --slo 'p99 < 50ms' (your objective) to find the knee of this rate sweep"
                    .to_string(),
            ),
            Factor::Load(_) | Factor::Param(_) | Factor::Url(_) => {}
        }
    }

    fn knee_model(&mut self, knee: Knee, method: &str) {
        let Some(slo) = self.slo.clone() else { return };
        let at: Vec<&RunResult> = self
            .record
            .points
            .iter()
            .filter(|p| knee.knee_rate.is_some() && p.x == knee.knee_rate)
            .map(|p| &p.result)
            .collect();
        let mean = |f: &dyn Fn(&RunResult) -> f64| {
            (!at.is_empty()).then(|| at.iter().map(|r| f(r)).sum::<f64>() / at.len() as f64)
        };
        self.record.models.knee = Some(KneeModel {
            method: method.to_string(),
            knee_throughput_per_s: mean(&|r| r.total.throughput_per_s),
            knee_latency_ns: mean(&|r| slo.value(&r.total.latency)),
            slo,
            knee,
        });
    }
}
