//! `RunPlan`: everything about one run, resolved and checked before anything connects.
//!
//! Flags and the workload file meet in one place ([`resolve`]); `run`, `sweep` and the
//! studies build `RunPlan`s and hand them to one executor (`crate::runner`). A sweep changes
//! a field of a plan (clients, rate, a parameter, a growth batch) through the setters here,
//! which apply the same rules as resolving flags, so a point can never be a run that
//! `loadrig run` would have refused.

mod given;
mod load;
mod resolve;
mod shard;

use std::path::PathBuf;

pub use given::Given;
pub use resolve::{default_out, resolve, resolve_offline, resolve_workload, same_path, settings};
pub use shard::parse_start_at;

use serde::Serialize;

use crate::analysis::checks::Check;
use crate::engine::{LoadPlan, Mode};
use crate::error::InputError;
use crate::result::WorkloadRecord;
use crate::targets::TargetUrl;
use crate::workload::{self, OpSpec, Setting, Source, Workload};

/// One run, fully resolved. Serialised through [`PlanRecord`]: the compiled workload as
/// the result file records it, the target without its password.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The workload after `--set`; `ops` below are the ones that run.
    pub workload: Workload,
    /// Where the workload came from, so a parameter can be changed and the workload compiled
    /// again (a sweep over a parameter).
    pub source: WorkloadSource,
    /// The operations that run (`--op` may choose some of the workload's).
    pub ops: Vec<OpSpec>,
    pub load: LoadPlan,
    pub target: TargetSpec,
    pub data: DataPolicy,
    pub outputs: Outputs,
    /// Thresholds evaluated on the result (the workload's `checks` and `--check`).
    pub checks: Vec<Check>,
    /// `--warmup auto`: the run starts without a warm-up, and the warm-up is cut from its
    /// start afterwards by MSER-5 (`analysis::steady`).
    pub warmup_auto: bool,
    /// The verdict's thresholds after `--validity`.
    pub thresholds: crate::result::validity::Thresholds,
    /// `--label`: recorded in the result file.
    pub label: Option<String>,
}

/// What a plan says, as data: the same records the result file holds, plus outputs and
/// checks. Never holds a password.
#[derive(Debug, Clone, Serialize)]
pub struct PlanRecord {
    pub workload: WorkloadRecord,
    pub load: LoadPlan,
    /// The target URL with any password replaced by `***`.
    pub target: String,
    pub skip_load: bool,
    pub seq_offset: u64,
    pub result: PathBuf,
    pub report: Option<PathBuf>,
    pub metrics_addr: Option<String>,
    /// Each check as written.
    pub checks: Vec<String>,
}

impl RunPlan {
    pub fn record(&self) -> PlanRecord {
        PlanRecord {
            workload: WorkloadRecord::of(&self.workload, &self.ops),
            load: self.load.clone(),
            target: self.target.shown(),
            skip_load: self.data.skip_load,
            seq_offset: self.data.seq_offset,
            result: self.outputs.result.clone(),
            report: self.outputs.report.clone(),
            metrics_addr: self.outputs.metrics_addr.clone(),
            checks: self.checks.iter().map(|c| c.text.clone()).collect(),
        }
    }
}

impl Serialize for RunPlan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.record().serialize(s)
    }
}

/// The workload file's text and the settings (`--properties`, `--set`) it was compiled with.
#[derive(Debug, Clone)]
pub struct WorkloadSource {
    /// The name used in messages: the file path or `<builtin NAME>`.
    pub name: String,
    pub text: String,
    pub sets: Vec<Setting>,
    /// `--op` names: the operations chosen from the workload (empty: all).
    pub only_ops: Vec<String>,
}

impl WorkloadSource {
    /// The workload, compiled with the settings.
    pub fn compile(&self) -> Result<Workload, InputError> {
        workload::compile(
            &Source {
                path: &self.name,
                text: &self.text,
            },
            &self.sets,
        )
    }

    /// For positions in messages about the file.
    pub fn as_source(&self) -> Source<'_> {
        Source {
            path: &self.name,
            text: &self.text,
        }
    }
}

/// Where the load goes.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// The URL with `${VAR}` expanded. It may hold a password: show [`TargetSpec::shown`].
    pub url: String,
    pub parsed: TargetUrl,
}

impl TargetSpec {
    pub fn parse(text: &str) -> Result<TargetSpec, InputError> {
        let url = crate::targets::expand_env(text)?;
        let parsed = TargetUrl::parse(&url)?;
        // An unknown scheme is an input error now, not when the run starts.
        let known: Result<(), InputError> =
            crate::targets::with_target_type!(parsed.scheme.as_str(), _T => Ok(()));
        known?;
        Ok(TargetSpec { url, parsed })
    }

    /// The URL with any password replaced by `***`: what output and results show.
    pub fn shown(&self) -> String {
        crate::targets::redact(&self.url)
    }

    pub fn scheme(&self) -> &str {
        &self.parsed.scheme
    }
}

/// What happens to the workload's `[data]` before the measured run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataPolicy {
    /// `--skip-load`: reuse what an earlier run loaded (its setup is skipped too).
    pub skip_load: bool,
    /// Where `seq` generators start: a growth study continues them across its batches.
    pub seq_offset: u64,
    /// `--skip-load`, and shards after the first (`--shard I/N`, I > 0), which leave the
    /// setup statements and the data to shard 0.
    pub skip_setup: bool,
    /// A sharded run whose workload has setup statements or `[data]`: shard 0 leaves a
    /// marker on the target when they are done, the others wait for it.
    pub marker: Option<LoadMarker>,
}

/// The marker that tells a sharded run's shards that shard 0 has loaded the data: the kv
/// key `_load:RUN` in the target's namespace (`loadrig:_load:RUN` on Redis, a row of
/// `loadrig_kv` on SQL targets), RUN the agreed start in nanoseconds (else the seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadMarker {
    pub run: u64,
    /// Shard 0 writes it; the others wait for it, at most `timeout`.
    pub writes: bool,
    pub timeout: std::time::Duration,
}

impl LoadMarker {
    /// The kv key, inside the target's own namespace.
    pub fn key(&self) -> String {
        format!("_load:{}", self.run)
    }
}

/// Where a run writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// The result file; its `.jsonl` stream goes beside it.
    pub result: PathBuf,
    pub report: Option<PathBuf>,
    pub metrics_addr: Option<String>,
}

impl RunPlan {
    /// Closed loop with `n` clients, as `--clients n` would give (think time kept).
    pub fn set_clients(&mut self, n: u64) -> Result<(), InputError> {
        load::check_count(n, "--clients")?;
        let think = match self.load.mode {
            Mode::Closed { think, .. } => think,
            Mode::Open { .. } => Default::default(),
        };
        self.load.mode = Mode::Closed {
            clients: n as usize,
            think,
        };
        Ok(())
    }

    /// Open loop at `rate` per second, as `--rate` would give; an open plan keeps its
    /// arrivals and concurrency, a closed one becomes open with its clients as the
    /// concurrency.
    pub fn set_rate(&mut self, rate: f64) -> Result<(), InputError> {
        self.load.mode = match self.load.mode {
            Mode::Open {
                arrivals,
                workers,
                late_after,
                ..
            } => load::open_mode(rate, arrivals, workers as u64, late_after)?,
            Mode::Closed { clients, .. } => load::open_mode(
                rate,
                Default::default(),
                clients as u64,
                load::DEFAULT_LATE_AFTER,
            )?,
        };
        Ok(())
    }

    /// The same plan with workload parameter `name` set to `value`, as `--set` would give:
    /// the workload is compiled again, and its operations chosen again.
    pub fn with_param(&self, name: &str, value: &str) -> Result<RunPlan, InputError> {
        let mut source = self.source.clone();
        source.sets.retain(|s| s.name != name);
        source.sets.push(Setting::flag(name, value));
        let workload = source.compile()?;
        let ops = resolve::select_ops(&workload, &source.only_ops)?;
        Ok(RunPlan {
            workload,
            source,
            ops,
            ..self.clone()
        })
    }

    /// Batch `k` of a growth study: exactly `batch` operations, no warm-up, the setup run and
    /// the data loaded by the first batch only, `seq` generators continuing where the last batch ended.
    pub fn growth_batch(&self, batch: u64, k: u64) -> RunPlan {
        let mut plan = self.clone();
        plan.load.ops = Some(batch);
        plan.load.duration = None;
        plan.load.samples = None;
        plan.load.warmup = Default::default();
        plan.warmup_auto = false;
        plan.data.skip_load = self.data.skip_load || k > 0;
        plan.data.skip_setup = self.data.skip_setup || k > 0;
        plan.data.seq_offset = k * batch;
        plan
    }
}

#[cfg(test)]
mod tests;
