//! `loadrig run`'s flags and the workload file, resolved into a [`RunPlan`].

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Result;

use super::load::{nanos, resolve_load, LoadSetting, LoadSource};
use super::{
    CollectTo, DataPolicy, LoadMarker, Outputs, RunArgs, RunPlan, TargetSpec, WorkloadSource,
};
use crate::analysis::checks::{self, Check};
use crate::engine::LoadPlan;
use crate::error::InputError;
use crate::result::validity::{Thresholds, THRESHOLD_NAMES};
use crate::targets::peer::PeerTarget;
use crate::workload::import::properties;
use crate::workload::{builtin, OpSpec, Setting, Workload};

/// Compile the workload and resolve the flags against it: everything is checked here,
/// before anything connects or is written.
pub fn resolve(args: &RunArgs) -> Result<RunPlan, InputError> {
    let (workload, source) = resolve_workload(args)?;
    let ops = select_ops(&workload, &args.only_ops)?;
    let load_source = LoadSource::new(args.load.clone(), args.shard.clone(), args.start_at.clone());
    let resolved = resolve_load(&load_source, &workload, &source.as_source())?;
    let load = resolved.load;
    let data = data_policy(args, &load, &workload)?;
    let target = match (&args.target, &workload.target) {
        (Some(t), _) => TargetSpec::parse(t)?,
        // A URL from the file is reported where the file writes it.
        (None, Some(t)) => TargetSpec::parse(t).map_err(|e| match workload.target_at {
            Some(at) => e.at(source.as_source().at(at)),
            None => e,
        })?,
        (None, None) => {
            return Err(InputError::new(
                "no target: the workload names none and --target was not given",
            )
            .help("add --target sqlite://./bench.db (or fs://DIR, noop://, sleep://?latency=1ms)"))
        }
    };
    // Targets that keep nothing hold no data to wait for (nor the marker).
    let data = match target.scheme() {
        "noop" | "sleep" => DataPolicy {
            marker: None,
            ..data
        },
        _ => data,
    };
    check_peers(&workload)?;
    let outputs = outputs(args, &workload.name)?;
    let checks = run_checks(args, &workload, &ops)?;
    check_stage_names(&checks, &load)?;
    if let Some(op) = load.stop_when.as_ref().and_then(|w| w.op.as_ref()) {
        if !ops.iter().any(|o| &o.name == op) {
            return Err(InputError::new(format!(
                "--stop-when '{}': --op leaves out '{op}', so it could never be evaluated",
                load.stop_when.as_ref().map_or("", |w| w.condition.as_str())
            ))
            .help("name an operation that runs, or none (all operations together)"));
        }
    }
    let plan = RunPlan {
        workload,
        source,
        ops,
        load,
        target,
        data,
        outputs,
        checks,
        warmup_auto: resolved.warmup_auto,
        thresholds: thresholds(args)?,
        label: label(args)?,
        load_source,
        load_settings: resolved.settings,
    };
    super::observe::check(&plan)?;
    Ok(plan)
}

/// `--label TEXT`: one line of visible text.
fn label(args: &RunArgs) -> Result<Option<String>, InputError> {
    match args.label.as_deref() {
        Some(text) if text.trim().is_empty() || text.chars().any(char::is_control) => {
            Err(InputError::new(format!(
                "--label {text:?}: expected one line of text, like a commit id"
            ))
            .help("give --label a non-empty value without newlines, e.g. --label \"$(git rev-parse --short HEAD)\""))
        }
        other => Ok(other.map(str::to_string)),
    }
}

/// What happens to the data: shards after the first leave setup and load to shard 0, and
/// wait for its marker when there is something to load.
fn data_policy(
    args: &RunArgs,
    load: &LoadPlan,
    workload: &Workload,
) -> Result<DataPolicy, InputError> {
    let follower = load.shard.is_some_and(|s| s.index > 0);
    let loads = !args.skip_load && (!workload.setup.is_empty() || workload.data.is_some());
    let timeout = crate::duration::parse(&args.load_timeout, "--load-timeout")
        .and_then(|d| crate::workload::positive(d, "--load-timeout"))?;
    let marker = match load.shard {
        Some(s) if s.count > 1 && loads => Some(LoadMarker {
            run: marker_run(load),
            writes: s.index == 0,
            timeout,
        }),
        _ => None,
    };
    Ok(DataPolicy {
        skip_load: args.skip_load || follower,
        seq_offset: 0,
        // What an earlier run set up is reused with its data: the built-ins' setup drops
        // and reloads their tables, as sysbench prepare and pgbench -i do.
        skip_setup: args.skip_load || follower,
        marker,
    })
}

/// The run a sharded run's load marker names: the agreed start in nanoseconds, else the seed.
pub fn marker_run(load: &LoadPlan) -> u64 {
    load.start_at.map_or(load.seed, nanos)
}

/// The verdict's thresholds with every `--validity NAME=VALUE` applied.
fn thresholds(args: &RunArgs) -> Result<Thresholds, InputError> {
    let mut t = Thresholds::default();
    for text in &args.validity {
        t.set(text).map_err(|why| {
            InputError::new(format!("--validity {text}: {why}"))
                .help(format!("thresholds and their defaults: {THRESHOLD_NAMES}"))
        })?;
    }
    Ok(t)
}

/// What `loadrig ops` needs of a run: the workload, the operations `--op` chose and the
/// load, resolved and checked as [`resolve`] does, without a target or outputs. With neither
/// `--seed` nor a `[load]` seed the seed is 0, where a run would take one from the clock.
pub fn resolve_offline(args: &RunArgs) -> Result<(Workload, Vec<OpSpec>, LoadPlan), InputError> {
    let (workload, source) = resolve_workload(args)?;
    let ops = select_ops(&workload, &args.only_ops)?;
    let from = LoadSource {
        clock_seed: 0,
        ..LoadSource::new(args.load.clone(), args.shard.clone(), args.start_at.clone())
    };
    let mut resolved = resolve_load(&from, &workload, &source.as_source())?;
    if resolved.settings.get(LoadSetting::Seed).is_none() {
        resolved.load.seed = 0;
    }
    Ok((workload, ops, resolved.load))
}

/// The workload of `args` (a file or a built-in) compiled with its `--properties` files
/// and `--set` flags.
pub fn resolve_workload(args: &RunArgs) -> Result<(Workload, WorkloadSource), InputError> {
    let (name, text) = builtin::resolve(&args.workload)?;
    let source = WorkloadSource {
        name,
        text,
        sets: settings(args)?,
        only_ops: args.only_ops.clone(),
    };
    let workload = source.compile()?;
    Ok((workload, source))
}

/// The parameter settings of `args` in the order they apply: each `--properties` file's
/// lines, then the `--set` flags, so that a later file and the command line win, as YCSB's
/// `-p` wins over its `-P`.
pub fn settings(args: &RunArgs) -> Result<Vec<Setting>, InputError> {
    let mut settings = Vec::new();
    for file in &args.properties {
        settings.extend(properties::read(file)?);
    }
    settings.extend(
        args.set
            .iter()
            .map(|(name, value)| Setting::flag(name, value)),
    );
    Ok(settings)
}

/// Open each peer (a bad URL or an unset `${VAR}` is an input error now, not when the run
/// starts) and check that it runs the steps sent to it.
fn check_peers(workload: &Workload) -> Result<(), InputError> {
    for (i, peer) in workload.peers.iter().enumerate() {
        let family = PeerTarget::open(&peer.url)
            .map_err(|e| e.at(peer.location.clone()))?
            .family();
        for op in &workload.ops {
            if let Some(s) = op
                .kind
                .native_steps()
                .iter()
                .find(|s| s.peer == Some(i) && s.op.family() != family)
            {
                return Err(InputError::new(format!(
                    "operation '{}' sends {} steps to peer '{}', a {}:// system",
                    op.name,
                    s.op.family().name(),
                    peer.name,
                    family.name()
                ))
                .at(peer.location.clone()));
            }
        }
    }
    Ok(())
}

fn outputs(args: &RunArgs, workload: &str) -> Result<Outputs, InputError> {
    let result = args.out.clone().unwrap_or_else(|| default_out(workload));
    if let Some(report) = &args.report {
        if same_path(report, &result) || same_path(report, &result.with_extension("jsonl")) {
            return Err(InputError::new(format!(
                "--report {}: that is where the result goes",
                report.display()
            ))
            .help("give the report its own name, like run.html"));
        }
    }
    if let Some(addr) = &args.dashboard {
        crate::live::dashboard::parse_addr(addr)?;
    }
    Ok(Outputs {
        result,
        report: args.report.clone(),
        metrics_addr: args.metrics_addr.clone(),
        dashboard: args.dashboard.clone(),
        collect: collect_to(args)?,
    })
}

/// `--collect ADDR` with its token and CA, checked now: a shard that cannot read them
/// would run unheard.
fn collect_to(args: &RunArgs) -> Result<Option<CollectTo>, InputError> {
    let Some(addr) = &args.collect else {
        return Ok(None);
    };
    if args.start_at.is_none() {
        return Err(InputError::new(format!(
            "--collect {addr}: the collector aligns the shards' intervals, which needs --start-at"
        ))
        .help("start every shard with the same --start-at TIME (docs/distributed.md)"));
    }
    crate::live::wire::parse_collector(addr)?;
    let token = crate::live::wire::read_token(args.collect_token_file.as_deref())?;
    if let Some(ca) = &args.collect_ca {
        if let Err(e) = std::fs::metadata(ca) {
            return Err(InputError::new(format!(
                "--collect-ca {}: cannot read it: {e}",
                ca.display()
            )));
        }
    }
    Ok(Some(CollectTo {
        addr: addr.clone(),
        token,
        ca: args.collect_ca.clone(),
    }))
}

/// The operations `--op` chose (all when it was not given), in the order asked.
pub fn select_ops(workload: &Workload, only: &[String]) -> Result<Vec<OpSpec>, InputError> {
    if only.is_empty() {
        return Ok(workload.ops.clone());
    }
    only.iter()
        .map(|name| {
            workload
                .ops
                .iter()
                .find(|o| &o.name == name)
                .cloned()
                .ok_or_else(|| {
                    InputError::new(format!(
                        "--op {name}: the workload '{}' has no such operation",
                        workload.name
                    ))
                    .help(format!(
                        "its operations are: {}",
                        workload
                            .ops
                            .iter()
                            .map(|o| o.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
}

/// The workload file's `checks` and the `--check` flags, parsed and matched against the
/// operations before anything runs. A workload check on an operation that `--op` left out
/// is skipped with a note; any other unknown operation is an input error.
fn run_checks(
    args: &RunArgs,
    workload: &Workload,
    ops: &[OpSpec],
) -> Result<Vec<Check>, InputError> {
    let selected: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let all: Vec<String> = workload.ops.iter().map(|o| o.name.clone()).collect();
    let context = format!("the workload '{}'", workload.name);
    let mut out = Vec::new();
    for c in &workload.checks {
        let check = checks::parse(&c.text).map_err(|e| e.at(c.location.clone()))?;
        checks::check_ops(std::slice::from_ref(&check), &all, &context)
            .map_err(|e| e.at(c.location.clone()))?;
        match &check.op {
            Some(op) if !selected.contains(op) => {
                println!(
                    "note: check '{}' skipped: --op leaves out '{op}'",
                    check.text
                )
            }
            _ => out.push(check),
        }
    }
    for text in &args.checks {
        let check = checks::parse(text)?;
        checks::check_ops(std::slice::from_ref(&check), &selected, &context)?;
        out.push(check);
    }
    Ok(out)
}

/// Every check that names a stage (`@STAGE`) names one of the run's.
pub fn check_stage_names(checks: &[Check], load: &LoadPlan) -> Result<(), InputError> {
    let names: Vec<&str> = load.stages.iter().map(|s| s.name.as_str()).collect();
    for c in checks {
        let Some(stage) = &c.stage else { continue };
        if names.contains(&stage.as_str()) {
            continue;
        }
        let help = if names.is_empty() {
            "this run has no stages: drop @STAGE, or add --stages".to_string()
        } else {
            format!(
                "its stages are: {} (an unnamed stage is called by its number from 1)",
                names.join(", ")
            )
        };
        return Err(InputError::new(format!(
            "check '{}': the run has no stage '{stage}'",
            c.text
        ))
        .help(help));
    }
    Ok(())
}

/// `loadrig-results/TIME-WORKLOAD.json`.
pub fn default_out(workload: &str) -> PathBuf {
    let stamp: String = humantime::format_rfc3339_millis(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name = file_part(workload);
    PathBuf::from("loadrig-results").join(format!("{stamp}-{name}.json"))
}

/// A workload's name as part of a file name: letters, digits and '-' as they are, every
/// other character '_'.
pub fn file_part(workload: &str) -> String {
    workload
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether two paths name the same file, existing or not yet.
pub fn same_path(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => {
            // Not there yet: compare the absolute spellings.
            let abs = |p: &Path| std::env::current_dir().map(|d| d.join(p)).ok();
            abs(a).is_some() && abs(a) == abs(b)
        }
    }
}
