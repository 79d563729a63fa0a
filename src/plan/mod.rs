//! `RunPlan`: everything about one run, resolved and checked before anything connects.
//!
//! Flags and the workload file meet in one place ([`resolve`]); `run`, `sweep` and the
//! studies build `RunPlan`s and hand them to one executor (`crate::runner`). A plan is
//! varied in any load setting or workload parameter ([`Factor`]) through
//! [`RunPlan::vary`], which gives the value as its flag would and resolves the plan again
//! through the same checks, so a sweep point (or a growth batch) can never be a run that
//! `loadrig run` would have refused.

mod args;
mod given;
pub mod load;
mod observe;
pub(crate) mod resolve;
mod shard;

use std::path::PathBuf;
use std::time::Duration;

pub use crate::live::wire::CollectTo;
pub use args::RunArgs;
pub use given::Given;
pub use load::{LoadFlags, LoadSetting, Value};
pub use resolve::{default_out, resolve, resolve_offline, resolve_workload, same_path, settings};
pub use shard::parse_start_at;

use serde::Serialize;

use crate::analysis::checks::Check;
use crate::engine::LoadPlan;
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
    /// What `load` was resolved from, so that [`RunPlan::vary`] resolves it again.
    pub load_source: load::LoadSource,
    /// The settings `load` was made of, each with where it was given ([`RunPlan::given`]).
    pub load_settings: load::Settings,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<String>,
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
            dashboard: self.outputs.dashboard.clone(),
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
    /// The workload, compiled with the settings, its `[load]` read as the load settings
    /// read it (a bad value there is refused now, with the rest of the file's problems).
    pub fn compile(&self) -> Result<Workload, InputError> {
        let workload = workload::compile(&self.as_source(), &self.sets)?;
        load::Settings::of_file(&workload, &self.as_source())?;
        Ok(workload)
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

    /// The same target with `?option=value` (replacing the URL's own); whether the target
    /// knows the option is for the target to say when it opens.
    pub fn with_option(&self, option: &str, value: &str) -> Result<TargetSpec, InputError> {
        let (head, query) = match self.url.split_once('?') {
            Some((h, q)) => (h, q),
            None => (self.url.as_str(), ""),
        };
        let mut pairs: Vec<String> = query
            .split('&')
            .filter(|p| !p.is_empty() && p.split('=').next() != Some(option))
            .map(str::to_string)
            .collect();
        pairs.push(format!("{option}={value}"));
        let url = format!("{head}?{}", pairs.join("&"));
        Ok(TargetSpec {
            parsed: TargetUrl::parse(&url)?,
            url,
        })
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
    /// `--dashboard ADDR`: the live page (docs/live.md).
    pub dashboard: Option<String>,
    /// `--collect ADDR`: the collector this shard streams to.
    pub collect: Option<CollectTo>,
}

/// What a plan can be varied in: any load setting, a workload parameter (`--set
/// NAME=VALUE`), or an option of the target's URL (`url.pipeline_sync`: `?pipeline_sync=…`,
/// replacing the URL's own). A sweep varies one; a factorial experiment several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Factor {
    Load(LoadSetting),
    Param(String),
    /// The option's name, without `url.`.
    Url(String),
}

impl Factor {
    /// What `name` (written without dashes) names: `url.OPTION`, a load setting by its
    /// `[load]` key or its flag's name (`think_time`, `late-after`), else one of the
    /// workload's parameters.
    pub fn named(name: &str, workload: &Workload) -> Option<Factor> {
        if let Some(option) = name.strip_prefix("url.").filter(|o| !o.is_empty()) {
            return Some(Factor::Url(option.to_string()));
        }
        match LoadSetting::named(name) {
            Some(setting) => Some(Factor::Load(setting)),
            None => workload
                .params
                .contains_key(name)
                .then(|| Factor::Param(name.to_string())),
        }
    }

    /// The name `named` takes (a URL option's without `url.`).
    pub fn name(&self) -> &str {
        match self {
            Factor::Load(setting) => setting.spec().name(),
            Factor::Param(name) | Factor::Url(name) => name,
        }
    }

    /// A level written as text (`4`, `2.5`, `5ms`, `batch`), as the setting's flag, `--set`
    /// or the URL would take it.
    pub fn level(&self, text: &str) -> Result<Value, InputError> {
        use load::Syntax;
        let Factor::Load(setting) = self else {
            return Ok(Value::Text(text.to_string()));
        };
        let spec = setting.spec();
        match spec.syntax {
            Syntax::Count | Syntax::CountOrParam(_) => {
                text.trim().parse::<u64>().map(Value::Count).map_err(|_| {
                    InputError::new(format!(
                        "{} {text}: expected a whole number from 0",
                        spec.flag
                    ))
                })
            }
            Syntax::Number => {
                text.trim().parse::<f64>().map(Value::Number).map_err(|_| {
                    InputError::new(format!("{} {text}: expected a number", spec.flag))
                })
            }
            Syntax::Text
            | Syntax::CountOrWord(_)
            | Syntax::PerSecond
            | Syntax::Stages
            | Syntax::OnOff => Ok(Value::Text(text.to_string())),
        }
    }
}

impl RunPlan {
    /// The same plan with `factor` at `value`: a load setting given as its flag would give
    /// it (replacing the command line's; a stop condition replaces the file's), a parameter
    /// as `--set` would (the workload compiled again and its operations chosen again), and
    /// the load resolved again through every check of resolving the flags.
    pub fn vary(&self, factor: &Factor, value: &Value) -> Result<RunPlan, InputError> {
        self.vary_all(&[(factor.clone(), value.clone())])
    }

    /// The same plan with every factor at its value, resolved once (so that settings that
    /// belong together, a rate and its concurrency, change together). Stages and a constant
    /// load replace each other: varying the stages drops the command line's rate, clients
    /// and stop conditions, and varying one of those drops its stages.
    pub fn vary_all(&self, levels: &[(Factor, Value)]) -> Result<RunPlan, InputError> {
        let mut plan = self.clone();
        let mut params = false;
        let constant = [
            LoadSetting::Rate,
            LoadSetting::Clients,
            LoadSetting::Duration,
            LoadSetting::Ops,
            LoadSetting::Samples,
        ];
        for (factor, value) in levels {
            match factor {
                Factor::Load(setting) => {
                    let flags = &mut plan.load_source.flags;
                    if *setting == LoadSetting::Stages {
                        constant.iter().for_each(|s| drop(flags.remove(*s)));
                    } else if constant.contains(setting) {
                        flags.remove(LoadSetting::Stages);
                    }
                    flags.set(*setting, value.clone());
                }
                Factor::Url(option) => {
                    plan.target = plan.target.with_option(option, &value.to_string())?
                }
                Factor::Param(name) => {
                    plan.source.sets.retain(|s| &s.name != name);
                    plan.source
                        .sets
                        .push(Setting::flag(name, &value.to_string()));
                    params = true;
                }
            }
        }
        if params {
            plan.workload = plan.source.compile()?;
            plan.ops = resolve::select_ops(&plan.workload, &plan.source.only_ops)?;
        }
        let resolved =
            load::resolve_load(&plan.load_source, &plan.workload, &plan.source.as_source())?;
        plan.load = resolved.load;
        plan.warmup_auto = resolved.warmup_auto;
        plan.load_settings = resolved.settings;
        if let Some(marker) = &mut plan.data.marker {
            marker.run = resolve::marker_run(&plan.load);
        }
        observe::check(&plan)?;
        Ok(plan)
    }

    /// Batch `k` of a growth study: exactly `batch` operations (`ops` varied, the other stop
    /// conditions dropped, the file's with them), no warm-up, the setup run and the data loaded by the first
    /// batch only, `seq` generators continuing where the last batch ended.
    pub fn growth_batch(&self, batch: u64, k: u64) -> Result<RunPlan, InputError> {
        let mut whole = self.clone();
        for stop in [LoadSetting::Duration, LoadSetting::Samples] {
            whole.load_source.flags.remove(stop);
        }
        let mut plan = whole.vary_all(&[
            (Factor::Load(LoadSetting::Ops), Value::Count(batch)),
            (
                Factor::Load(LoadSetting::Warmup),
                Value::Duration(Duration::ZERO),
            ),
        ])?;
        plan.data.skip_load = self.data.skip_load || k > 0;
        plan.data.skip_setup = self.data.skip_setup || k > 0;
        plan.data.seq_offset = k * batch;
        Ok(plan)
    }

    /// A load setting's value with where it was given (a flag, a varied value, or a place
    /// in the workload file), for messages about it; `None` when it took its default.
    pub fn given(&self, setting: LoadSetting) -> Option<&Given<Value>> {
        self.load_settings.get(setting)
    }
}

#[cfg(test)]
mod stage_tests;
#[cfg(test)]
mod tests;
