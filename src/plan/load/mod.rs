//! The load of a run, from its flags and the workload's `[load]`: low-level settings first,
//! then the `LoadPlan` made of them (ripgrep's low-level and high-level arguments).
//!
//! Every load setting is declared once, in `table.rs`: its flag, its `[load]` key, the
//! syntax both take and its help. The flags ([`LoadFlags`], flattened into `RunArgs`) and
//! the file ([`Settings::of_file`]) give values of that one [`Value`] type, each with where
//! it came from; a flag wins over the file, and the flags' stop conditions replace the
//! file's as a whole ([`Settings::merge`]). Each setting's reader (`read.rs`) checks its
//! value, reported at its flag or at its place in the file, and [`resolve_load`] builds the
//! `LoadPlan` from them. `RunPlan::vary` goes through the same path: it gives a setting as
//! its flag would, and resolves the load again.

mod flags;
mod read;
mod settings;
pub mod stages;
mod table;

use std::time::{Duration, SystemTime};

pub use flags::LoadFlags;
pub use settings::Settings;
pub use table::{LoadSetting, Spec, Syntax, Value, SPECS};

use super::shard;
use crate::engine::LoadPlan;
use crate::error::InputError;
use crate::workload::{Source, Workload};

/// What a plan's load is resolved from, kept in the plan so that `RunPlan::vary` resolves
/// it again with one setting changed.
#[derive(Debug, Clone)]
pub struct LoadSource {
    /// The load flags of the command line, then each `vary`'s.
    pub flags: LoadFlags,
    /// `--shard I/N`, as written.
    pub shard: Option<String>,
    /// `--start-at TIME`, as written.
    pub start_at: Option<String>,
    /// When the plan was first resolved: `--start-at +30s` counts from here.
    pub resolved_at: SystemTime,
    /// The seed when neither `--seed` nor `[load] seed` gives one: drawn from the clock
    /// once, so that a varied plan keeps it.
    pub clock_seed: u64,
}

impl LoadSource {
    pub fn new(flags: LoadFlags, shard: Option<String>, start_at: Option<String>) -> Self {
        let resolved_at = SystemTime::now();
        LoadSource {
            flags,
            shard,
            start_at,
            resolved_at,
            clock_seed: nanos(resolved_at),
        }
    }
}

/// A resolved load: the plan, whether its warm-up is found after the run, and the settings
/// it was made of (where each came from, for messages about them later).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub load: LoadPlan,
    pub warmup_auto: bool,
    pub settings: Settings,
}

/// The load of `from`'s flags over the workload's `[load]`, every value checked.
pub fn resolve_load(
    from: &LoadSource,
    workload: &Workload,
    source: &Source<'_>,
) -> Result<Resolved, InputError> {
    let settings = Settings::merge(
        Settings::of_file(workload, source)?,
        Settings::of_flags(&from.flags),
    );
    let ops: Vec<String> = workload.ops.iter().map(|o| o.name.clone()).collect();
    let load = load_plan(&settings, from, workload.op_timeout, &ops)?;
    Ok(Resolved {
        warmup_auto: read::warmup_is_auto(&settings),
        load,
        settings,
    })
}

/// The high-level step: the settings read in one order (so that of several problems the
/// same one is reported), and the rules between them: the loop's kind, the stop
/// conditions, the pipeline against the connections, a shard's share, its seed.
fn load_plan(
    s: &Settings,
    from: &LoadSource,
    file_op_timeout: Option<Duration>,
    op_names: &[String],
) -> Result<LoadPlan, InputError> {
    let laid = stages::read(s)?;
    let interval = read::interval(s)?;
    let (
        mode,
        warmup,
        read::Stop {
            duration,
            ops,
            samples,
        },
    ) = match &laid {
        Some(laid) => read::staged(s, laid)?,
        None => {
            let open = read::is_open(s)?;
            let warmup = read::warmup(s)?;
            let stop = read::stop_conditions(s, interval)?;
            let mode = if open {
                read::open_mode(s)?
            } else {
                read::closed_mode(s)?
            };
            (mode, warmup, stop)
        }
    };
    let seed = read::seed(s)?;
    let op_timeout = read::op_timeout(s, file_op_timeout)?;
    let connect_rate = read::connect_rate(s)?;
    let mut plan = LoadPlan {
        mode,
        duration,
        ops,
        samples,
        interval,
        warmup,
        seed: 0,
        connection: read::connection(s)?,
        op_timeout,
        threads: 0,
        shard: None,
        start_at: None,
        connect_rate,
        pipeline: 1,
        pipeline_refill: 1,
        client_slice: read::client_slice(s)?,
        stages: laid.map(|l| l.stages).unwrap_or_default(),
        stop_when: None,
    };
    plan.stop_when = read::stop_when(s, &plan, op_names)?;
    plan.pipeline = read::pipeline(s, &plan)?;
    plan.pipeline_refill = read::pipeline_refill(s, plan.pipeline)?;
    if let Some(text) = &from.shard {
        if read::warmup_is_auto(s) {
            return Err(InputError::new(
                "--warmup auto cannot be used with --shard: each shard would cut a warm-up of its own",
            )
            .help("give every shard the same --warmup DURATION"));
        }
        shard::apply_shard(&mut plan, shard::parse_shard(text)?)?;
    }
    // After the shard's share: a thread per connection counts this shard's connections.
    plan.threads = read::threads(s, plan.connections())?;
    if let Some(text) = &from.start_at {
        plan.start_at = Some(shard::parse_start_at(text, interval, from.resolved_at)?);
    }
    // Without a seed, shards take the one they share: the agreed start.
    plan.seed = match (seed, plan.shard, plan.start_at) {
        (Some(seed), _, _) => seed,
        (None, Some(_), Some(at)) => nanos(at),
        (None, _, _) => from.clock_seed,
    };
    Ok(plan)
}

/// Nanoseconds since 1970: a seed from the clock, or a run's agreed start as one.
pub fn nanos(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
