//! Factorial experiments (`loadrig experiment`, and any study that wants one): a base plan,
//! factors with levels, a design; every cell is the base plan varied through
//! `RunPlan::vary_all` (load settings, workload parameters, target URL options) and, for
//! server settings, the server changed around the cell's runs ([`settings`]). The runs go
//! through the one runner in a random order, replicates in interleaved blocks, each into its
//! own result file under `DIR/runs/`; `DIR/experiment.json` is rewritten after every run, so
//! the same command resumes an interrupted experiment. The statistics are
//! `crate::analysis::experiment`'s.
//!
//! From code: build [`Inputs`] (factors by name and levels, a design, responses), call
//! [`Experiment::prepare`] with the base plan (everything is checked there, nothing runs)
//! and [`Experiment::run`].

mod file;
mod run;
pub mod settings;

use std::path::PathBuf;

use crate::analysis::experiment::response::{Known, Response};
use crate::analysis::experiment::{design, Design, FactorLevels, Intervals, Scale};
use crate::error::InputError;
use crate::plan::{Factor, LoadSetting, RunPlan, Value};
use crate::runner;
use crate::targets::{with_target_type, Target};
pub use file::{parse_scale, read_file};
pub use run::{Progress, RECORD};
use settings::{ServerFactor, ServerSettings};

/// A factor as given: a name (`clients`, `records`, `url.pipeline_sync`,
/// `server.synchronous_commit`), its levels, a server setting's statements, and where it
/// was given (for messages).
#[derive(Debug, Clone, Default)]
pub struct FactorInput {
    pub name: String,
    pub levels: Vec<String>,
    pub apply: Vec<String>,
    pub at: Option<String>,
}

/// An experiment as given, before it is checked.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub factors: Vec<FactorInput>,
    /// Generators of a fraction (`D=ABC`); empty: every cell.
    pub fraction: Vec<String>,
    pub fraction_at: Option<String>,
    pub replicates: usize,
    pub responses: Vec<String>,
    pub scale: Scale,
    pub intervals: Intervals,
    pub pool: Option<usize>,
    /// The URL with the privilege to change server settings.
    pub settings_url: Option<String>,
    /// The order's seed (else the clock's, or the one an interrupted experiment drew).
    pub seed: Option<u64>,
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            factors: Vec::new(),
            fraction: Vec::new(),
            fraction_at: None,
            replicates: 3,
            responses: vec!["throughput".into(), "p99".into()],
            scale: Scale::Linear,
            intervals: Intervals::Auto,
            pool: None,
            settings_url: None,
            seed: None,
        }
    }
}

/// What a factor changes.
#[derive(Debug, Clone)]
pub enum FactorKind {
    Plan(Factor),
    Server(ServerFactor),
}

impl FactorKind {
    pub fn word(&self) -> &'static str {
        match self {
            FactorKind::Plan(Factor::Load(_)) => "load",
            FactorKind::Plan(Factor::Param(_)) => "param",
            FactorKind::Plan(Factor::Url(_)) => "url",
            FactorKind::Server(_) => "server",
        }
    }
}

/// A checked experiment, ready to run.
pub struct Experiment {
    pub base: RunPlan,
    pub kinds: Vec<FactorKind>,
    pub design: Design,
    pub replicates: usize,
    pub responses: Vec<Response>,
    pub known: Known,
    pub inputs: Inputs,
    /// Each cell's plan (its levels applied; the output and seed are set per run).
    pub cell_plans: Vec<RunPlan>,
    pub settings: Option<ServerSettings>,
    pub dir: PathBuf,
}

fn placed(e: InputError, at: &Option<String>) -> InputError {
    match at {
        Some(place) if e.location.is_none() => e.at(place.clone()),
        _ => e,
    }
}

/// What a factor varies: a server setting (with the privilege's URL given), or something
/// of the plan by its name; refused with the names there are.
fn factor_kind(
    f: &FactorInput,
    base: &RunPlan,
    has_settings_url: bool,
) -> Result<FactorKind, InputError> {
    Ok(if let Some(setting) = f.name.strip_prefix("server.") {
        let s = ServerFactor::new(setting, f.apply.clone()).map_err(|e| placed(e, &f.at))?;
        if !has_settings_url {
            return Err(placed(
                InputError::new(format!(
                    "factor {}: changing a server setting needs --settings-url, a URL of a role allowed to ALTER SYSTEM",
                    f.name
                ))
                .help("e.g. --settings-url \"$LOADRIG_PG_SUPER_URL\" (scripts/services.sh's superuser on the Unix socket)"),
                &f.at,
            ));
        }
        FactorKind::Server(s)
    } else {
        if !f.apply.is_empty() {
            return Err(placed(
                InputError::new(format!(
                    "factor {}: only a server.SETTING factor has apply statements",
                    f.name
                )),
                &f.at,
            ));
        }
        let factor = Factor::named(&f.name, &base.workload).ok_or_else(|| {
            placed(
                InputError::new(format!("factor '{}' names nothing a run can vary", f.name))
                    .help(format!("name {}", what_varies(base))),
                &f.at,
            )
        })?;
        if matches!(factor, Factor::Load(LoadSetting::Seed)) {
            return Err(placed(InputError::new(
                "factor seed: the experiment gives every run its own seed; vary something the system under test does",
            ), &f.at));
        }
        FactorKind::Plan(factor)
    })
}

/// Every name a factor may take, for the message about one that names nothing.
fn what_varies(base: &RunPlan) -> String {
    let settings: Vec<&str> = crate::plan::load::SPECS.iter().map(|s| s.name()).collect();
    let params: Vec<&str> = base.workload.params.keys().map(String::as_str).collect();
    format!(
        "a load setting ({}), a parameter of the workload ({}), url.OPTION (an option of the target's URL) or server.SETTING (with --settings-url)",
        settings.join(", "),
        if params.is_empty() { "it has none".to_string() } else { params.join(", ") }
    )
}

impl Experiment {
    /// Check everything before anything runs: the factors and their levels, the design, the
    /// responses, every cell's plan against the target, and the server settings' privilege.
    pub fn prepare(base: RunPlan, inputs: Inputs, dir: PathBuf) -> anyhow::Result<Experiment> {
        let letters = design::letters(inputs.factors.len()).map_err(InputError::new)?;
        let mut kinds = Vec::new();
        let mut server = Vec::new();
        let mut levels = Vec::new();
        for (f, letter) in inputs.factors.iter().zip(letters) {
            let kind = factor_kind(f, &base, inputs.settings_url.is_some())?;
            if let FactorKind::Server(s) = &kind {
                server.push(s.clone());
            }
            kinds.push(kind);
            levels.push(FactorLevels {
                name: f.name.clone(),
                letter,
                levels: f.levels.clone(),
            });
        }
        let design = if inputs.fraction.is_empty() {
            Design::full(levels)
        } else {
            Design::fractional(levels, &inputs.fraction)
        }
        .map_err(|why| {
            let e = InputError::new(why);
            // A factor's own problem is reported where the factor was given.
            let factor = inputs
                .factors
                .iter()
                .find(|f| e.message.contains(&format!("factor {} ", f.name)));
            let e = match factor {
                Some(_) => e.help("give each factor once, with two or more different levels"),
                None => e.help(
                    "a generator gives a factor's letter (A, B, … in the order the factors are given) as the product of two or more other letters, each factor generated once: with four factors, --fraction D=ABC (docs/experiment.md)",
                ),
            };
            placed(e, factor.map_or(&inputs.fraction_at, |f| &f.at))
        })?;
        if inputs.replicates == 0 {
            return Err(InputError::new("--replicates 0: every cell needs at least one run")
                .help("--replicates 3 (the default) measures the noise each effect is judged against")
                .into());
        }
        let known = Known {
            ops: base.ops.iter().map(|o| o.name.clone()).collect(),
            figures: base
                .workload
                .figures
                .iter()
                .map(|f| (f.name.clone(), f.unit.clone()))
                .collect(),
        };
        let responses = inputs
            .responses
            .iter()
            .map(|r| Response::parse(r, &known).map_err(|why| {
                InputError::new(format!("--response {r}: {why}"))
                    .help("name a metric (throughput, p99, insert.p99, errors), a figure of the workload, or a path in the result file (docs/experiment.md)")
            }))
            .collect::<Result<Vec<_>, _>>()?;
        if responses.is_empty() {
            return Err(
                InputError::new("no response: an experiment measures at least one")
                    .help("--response throughput (or p99, errors, a figure)")
                    .into(),
            );
        }
        let cell_plans = cell_plans(&base, &kinds, &design, &inputs)?;
        let settings = match (&inputs.settings_url, server.is_empty()) {
            (Some(url), false) => Some(ServerSettings::check(url, server, &dir)?),
            _ => None,
        };
        Ok(Experiment {
            replicates: inputs.replicates,
            base,
            kinds,
            design,
            responses,
            known,
            inputs,
            cell_plans,
            settings,
            dir,
        })
    }

    /// The server factors' levels in a cell, in the order of the server factors.
    fn server_levels(&self, cell: usize) -> Vec<String> {
        self.kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| matches!(k, FactorKind::Server(_)))
            .map(|(f, _)| self.design.factors[f].levels[self.design.cells[cell][f]].clone())
            .collect()
    }

    /// `clients=16, url.extra=1ms`.
    pub fn cell_text(&self, cell: usize) -> String {
        self.design
            .factors
            .iter()
            .zip(&self.design.cells[cell])
            .map(|(f, &l)| format!("{}={}", f.name, f.levels[l]))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Every cell's plan, each checked against the target as `loadrig run` would.
fn cell_plans(
    base: &RunPlan,
    kinds: &[FactorKind],
    design: &Design,
    inputs: &Inputs,
) -> Result<Vec<RunPlan>, InputError> {
    let mut plans = Vec::new();
    for cell in &design.cells {
        let mut levels: Vec<(Factor, Value)> = Vec::new();
        let mut text = Vec::new();
        for (f, kind) in kinds.iter().enumerate() {
            let level = &design.factors[f].levels[cell[f]];
            text.push(format!("{}={level}", design.factors[f].name));
            if let FactorKind::Plan(factor) = kind {
                let value = factor.level(level).map_err(|e| {
                    placed(
                        InputError::new(format!(
                            "factor {}: {}",
                            design.factors[f].name, e.message
                        )),
                        &inputs.factors[f].at,
                    )
                    .help(e.help.unwrap_or_else(|| {
                        "each level is written as the setting's flag takes it (clients=4,16, think_time=0s,10ms)".into()
                    }))
                })?;
                levels.push((factor.clone(), value));
            }
        }
        let name = |e: InputError| {
            let mut e = e;
            e.message = format!("the cell {}: {}", text.join(", "), e.message);
            if e.help.is_none() {
                e.help = Some("each cell is the base plan with its levels, as `loadrig run` would take them: check the factor's name and levels".into());
            }
            e
        };
        let plan = base.vary_all(&levels).map_err(name)?;
        let checked: Result<(), InputError> = with_target_type!(plan.target.scheme(), T => {
            let target = T::from_url(&plan.target.parsed, &plan.workload.params).map_err(name)?;
            runner::check_target(&plan, &target).map_err(name)
        });
        checked?;
        plans.push(plan);
    }
    Ok(plans)
}
