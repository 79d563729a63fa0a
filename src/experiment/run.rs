//! Running an experiment: the order (replicate blocks, the cells shuffled within each from
//! the seed), each run through the runner into `DIR/runs/`, the server settings applied and
//! restored around it, `experiment.json` rewritten after each, an interrupted experiment
//! continued from the runs already written, and the analysis over the complete blocks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::{Experiment, FactorKind};
use crate::analysis::experiment::record::{
    DesignRecord, ExperimentRecord, ExperimentStatus, FactorRecord, RunEntry,
};
use crate::analysis::experiment::{analyse, Options, SCHEMA_VERSION};
use crate::engine;
use crate::error::InputError;
use crate::plan::{Factor, LoadSetting, Value};
use crate::result::{self, RunStatus};
use crate::runner::{self, describe, View};

pub const RECORD: &str = "experiment.json";

/// Where the experiment's lines go: the console (`loadrig experiment`), or a study's own.
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// Every run in order: block b holds every cell once, in an order drawn from the seed.
fn order(seed: u64, cells: usize, replicates: usize) -> Vec<RunEntry> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xe4_9e71);
    let mut runs = Vec::new();
    for block in 1..=replicates {
        let mut shuffled: Vec<usize> = (0..cells).collect();
        shuffled.shuffle(&mut rng);
        for cell in shuffled {
            let run = runs.len() + 1;
            runs.push(RunEntry {
                run,
                block,
                cell,
                seed: seed.wrapping_add(run as u64 - 1),
                file: format!("runs/cell{cell}-block{block}.json"),
                done: false,
                responses: BTreeMap::new(),
            });
        }
    }
    runs
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

impl Experiment {
    pub fn design_record(&self) -> DesignRecord {
        let d = &self.design;
        DesignRecord {
            kind: if d.is_fractional() {
                "fractional"
            } else {
                "full"
            }
            .into(),
            factors: d
                .factors
                .iter()
                .zip(&self.kinds)
                .map(|(f, k)| FactorRecord {
                    factor: f.clone(),
                    kind: k.word().into(),
                })
                .collect(),
            cells: (0..d.cells.len()).map(|c| d.cell_levels(c)).collect(),
            replicates: self.replicates,
            generators: d.generator_texts(),
            defining_relation: d.defining_text(),
            resolution: d.resolution(),
            aliases: if d.is_fractional() {
                d.terms().iter().map(|t| d.alias_text(t)).collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Runs × (warm-up + duration), when the runs stop on time.
    pub fn estimated_s(&self) -> Option<f64> {
        let l = &self.base.load;
        let per = l.duration? + l.warmup;
        Some(per.as_secs_f64() * (self.design.cells.len() * self.replicates) as f64)
    }

    /// The record of a new experiment, or of the interrupted one in the folder (which must be
    /// this experiment).
    pub fn record(&self) -> Result<(ExperimentRecord, bool)> {
        let path = self.dir.join(RECORD);
        let design = self.design_record();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let old: ExperimentRecord = serde_json::from_str(&text)
                .with_context(|| format!("'{}' is not an experiment file", path.display()))?;
            if old.design != design
                || old.workload != self.base.workload.name
                || old.target != self.base.target.shown()
            {
                return Err(InputError::new(format!(
                    "{} holds another experiment (its workload, target, factors, levels, fraction or replicates differ)",
                    self.dir.display()
                ))
                .help("give this experiment a folder of its own with -o DIR; the same command with the same folder continues an interrupted one")
                .into());
            }
            if let Some(seed) = self.inputs.seed.filter(|s| *s != old.seed) {
                return Err(InputError::new(format!(
                    "--seed {seed}: the experiment in {} was started with seed {}",
                    self.dir.display(),
                    old.seed
                ))
                .help("continue it with its own seed (or without --seed), or start another in a new folder")
                .into());
            }
            let mut record = old;
            record.status = ExperimentStatus::Running;
            record.responses = self.inputs.responses.clone();
            // The runs written count; each response is read from them again (the responses
            // asked for now may be others).
            for run in &mut record.runs {
                run.responses.clear();
                let written = result::read(&self.dir.join(&run.file))
                    .ok()
                    .filter(|r| r.status == RunStatus::Complete);
                run.done = written.is_some();
                for r in written.iter() {
                    for resp in &self.responses {
                        if let Ok(v) = resp.value(r) {
                            run.responses.insert(resp.text.clone(), v);
                        }
                    }
                }
            }
            return Ok((record, true));
        }
        if std::fs::read_dir(&self.dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(InputError::new(format!(
                "-o {}: the folder exists, is not empty and holds no experiment.json",
                self.dir.display()
            ))
            .help("give the experiment a new or empty folder")
            .into());
        }
        let seed = self.inputs.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Ok((
            ExperimentRecord {
                kind: "experiment".into(),
                schema_version: SCHEMA_VERSION,
                loadrig_version: env!("CARGO_PKG_VERSION").into(),
                status: ExperimentStatus::Running,
                workload: self.base.workload.name.clone(),
                target: self.base.target.shown(),
                base_load: describe(&self.base.load),
                design,
                seed,
                runs: order(seed, self.design.cells.len(), self.replicates),
                estimated_s: self.estimated_s(),
                server_settings: Vec::new(),
                responses: self.inputs.responses.clone(),
                analyses: Vec::new(),
                notes: Vec::new(),
                started_at: now(),
                ended_at: None,
            },
            false,
        ))
    }

    /// Run every run not yet done, in order; then analyse. Returns the record and whether
    /// every run is done.
    pub fn run(mut self, say: Progress) -> Result<(ExperimentRecord, bool)> {
        let (mut record, resumed) = self.record()?;
        std::fs::create_dir_all(self.dir.join("runs"))
            .with_context(|| format!("could not create '{}'", self.dir.display()))?;
        let left: Vec<usize> = (0..record.runs.len())
            .filter(|&i| !record.runs[i].done)
            .collect();
        if resumed {
            say(&format!(
                "continuing the experiment in {}: {} of {} runs done, {} to go (seed {})",
                self.dir.display(),
                record.runs.len() - left.len(),
                record.runs.len(),
                left.len(),
                record.seed
            ));
        }
        for line in crate::report::experiment::plan_lines(&record) {
            say(&line);
        }
        runner::install_ctrl_c();
        engine::INTERRUPTED.store(false, Ordering::SeqCst);
        if let Some(s) = &mut self.settings {
            if !left.is_empty() {
                s.begin(&self.dir)?;
                say(&format!(
                    "server settings: {} read and journalled in {}; if this process is killed, `loadrig cleanup --target {}` restores them",
                    s.records().iter().map(|r| format!("{} = {}", r.name, r.prior)).collect::<Vec<_>>().join(", "),
                    self.dir.join(super::settings::JOURNAL).display(),
                    s.shown()
                ));
            }
        }
        write(&self.dir, &record)?;
        let outcome = self.run_left(&mut record, &left, say);
        // Whatever happened, the server's settings go back.
        let restored = match &mut self.settings {
            Some(s) => {
                let r = s.finish();
                record.server_settings = s.records();
                if let Err(e) = &r {
                    for setting in &mut record.server_settings {
                        setting.restored = false;
                    }
                    record.notes.push(format!("the server settings were not restored: {e:#}; run loadrig cleanup --target {}", s.shown()));
                }
                r
            }
            None => Ok(()),
        };
        let complete = record.runs.iter().all(|r| r.done);
        record.status = if complete {
            ExperimentStatus::Complete
        } else {
            ExperimentStatus::Interrupted
        };
        record.ended_at = Some(now());
        self.analyse(&mut record);
        write(&self.dir, &record)?;
        outcome?;
        restored?;
        Ok((record, complete))
    }

    fn run_left(
        &mut self,
        record: &mut ExperimentRecord,
        left: &[usize],
        say: Progress,
    ) -> Result<()> {
        let started = Instant::now();
        // Each run clears INTERRUPTED as it starts: a Ctrl-C while a setting was applied or
        // a target opened would be lost, the count is not.
        let ctrl_c = engine::CTRL_C_COUNT.load(Ordering::SeqCst);
        let stopped = || {
            engine::INTERRUPTED.load(Ordering::SeqCst)
                || engine::CTRL_C_COUNT.load(Ordering::SeqCst) != ctrl_c
        };
        for (k, &i) in left.iter().enumerate() {
            if stopped() {
                return Ok(());
            }
            let entry = record.runs[i].clone();
            let mut plan = self.cell_plans[entry.cell]
                .vary(&Factor::Load(LoadSetting::Seed), &Value::Count(entry.seed))?;
            plan.outputs.result = self.dir.join(&entry.file);
            plan.outputs.report = None;
            plan.outputs.metrics_addr = None;
            if let Some(s) = &self.settings {
                if let Err(e) = s.apply(&self.server_levels(entry.cell)) {
                    record.notes.push(format!("run {}: {e:#}", entry.run));
                    return Err(e);
                }
            }
            let result = runner::execute(&plan, View::Quiet);
            if let Some(s) = &mut self.settings {
                s.restore()?;
            }
            let result = result
                .with_context(|| format!("run {} ({})", entry.run, self.cell_text(entry.cell)))?;
            result::write_atomic(&plan.outputs.result, &serde_json::to_vec_pretty(&result)?)?;
            let run = &mut record.runs[i];
            run.done = result.status == RunStatus::Complete;
            for r in &self.responses {
                match r.value(&result) {
                    Ok(v) => {
                        run.responses.insert(r.text.clone(), v);
                    }
                    Err(why) => record
                        .notes
                        .push(format!("run {}: {}: {why}", entry.run, r.text)),
                }
            }
            write(&self.dir, record)?;
            let per = started.elapsed().as_secs_f64() / (k + 1) as f64;
            let eta = per * (left.len() - k - 1) as f64;
            say(&progress_line(self, record, i, eta));
            if result.status == RunStatus::Interrupted || stopped() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Analyse each response over the complete blocks.
    fn analyse(&self, record: &mut ExperimentRecord) {
        record.analyses.clear();
        let cells = self.design.cells.len();
        for r in &self.responses {
            let mut values: Vec<Vec<f64>> = vec![Vec::new(); cells];
            let mut blocks: BTreeMap<usize, Vec<(usize, Option<f64>)>> = BTreeMap::new();
            for run in record.runs.iter().filter(|run| run.done) {
                blocks
                    .entry(run.block)
                    .or_default()
                    .push((run.cell, run.responses.get(&r.text).copied()));
            }
            let mut complete = 0;
            for runs in blocks.values() {
                if runs.len() == cells && runs.iter().all(|(_, v)| v.is_some()) {
                    complete += 1;
                    for (cell, v) in runs {
                        values[*cell].push(v.expect("checked"));
                    }
                }
            }
            if complete == 0 {
                record.notes.push(format!(
                    "{}: no complete block of runs, so no analysis",
                    r.text
                ));
                continue;
            }
            let mut o = Options::new(&r.text, &r.unit(&self.known), r.better(), self.inputs.scale);
            o.pool = self.inputs.pool;
            o.intervals = self.inputs.intervals;
            o.seed = record.seed;
            match analyse(&self.design, &values, &o) {
                Ok(mut a) => {
                    if complete < self.replicates {
                        a.warnings.push(format!(
                            "{complete} of {} replicate blocks complete: the analysis covers those",
                            self.replicates
                        ));
                    }
                    record.analyses.push(a);
                }
                Err(why) => record.notes.push(why),
            }
        }
    }
}

fn write(dir: &Path, record: &ExperimentRecord) -> Result<()> {
    result::write_atomic(&dir.join(RECORD), &serde_json::to_vec_pretty(record)?)
}

/// `run 3/24 (block 1) cell 5 clients=16, url.extra=1ms: throughput 4,120 ops/s; 2m10s left`.
fn progress_line(e: &Experiment, record: &ExperimentRecord, i: usize, eta: f64) -> String {
    let run = &record.runs[i];
    let values: Vec<String> = e
        .responses
        .iter()
        .filter_map(|r| {
            run.responses.get(&r.text).map(|v| {
                format!(
                    "{} {}",
                    r.text,
                    crate::analysis::experiment::summary::value_text(&r.unit(&e.known), *v)
                )
            })
        })
        .collect();
    format!(
        "run {}/{} (block {}) cell {} {}: {}{}",
        run.run,
        record.runs.len(),
        run.block,
        run.cell,
        e.cell_text(run.cell),
        if run.done {
            values.join(", ")
        } else {
            "interrupted".into()
        },
        if eta >= 1.0 {
            format!(
                "; about {} left",
                humantime::format_duration(std::time::Duration::from_secs(eta.round() as u64))
            )
        } else {
            String::new()
        }
    )
}

impl FactorKind {
    /// Whether the factor changes the server rather than the plan.
    pub fn is_server(&self) -> bool {
        matches!(self, FactorKind::Server(_))
    }
}
