//! `loadrig experiment WORKLOAD --factor NAME=L1,L2 … [--fraction D=ABC] [--replicates R]
//! [--response R …] [--scale log] -o DIR`: the flags (and `--design FILE`) made into
//! `experiment::Inputs`, the base plan resolved as `loadrig run` resolves it, everything
//! checked before the first run; then the runs (`crate::experiment`), the tables and the page.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::analysis::experiment::Intervals;
use crate::cli::ExperimentArgs;
use crate::error::InputError;
use crate::experiment::{parse_scale, read_file, Experiment, FactorInput, Inputs};
use crate::plan::{self, LoadSetting};
use crate::report::experiment as table;
use crate::result;

pub fn experiment(args: &ExperimentArgs) -> Result<ExitCode> {
    check_args(args)?;
    let inputs = inputs(args)?;
    let mut run = args.run.clone();
    run.out = None;
    let base = plan::resolve(&run)?;
    let dir = args
        .run
        .out
        .clone()
        .unwrap_or_else(|| default_dir(args, &base.workload.name));
    let experiment = Experiment::prepare(base, inputs, dir.clone())?;
    if args.dry_run {
        let (record, _) = experiment.record()?;
        for line in table::plan_lines(&record) {
            println!("{line}");
        }
        println!("{}", table::order_lines(&record));
        println!("--dry-run: nothing ran");
        return Ok(ExitCode::SUCCESS);
    }
    let (record, complete) = experiment.run(&mut |line| println!("{line}"))?;
    print!("\n{}", table::render(&record));
    let page = dir.join("experiment.html");
    result::write_atomic(
        &page,
        crate::report::html::render_experiment(&record)?.as_bytes(),
    )?;
    println!(
        "experiment: {}",
        dir.join(crate::experiment::RECORD).display()
    );
    println!("report: {}", page.display());
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        println!("interrupted: the same command continues it");
        ExitCode::from(130)
    })
}

fn check_args(args: &ExperimentArgs) -> Result<(), InputError> {
    let r = &args.run;
    if r.report.is_some() || r.metrics_addr.is_some() || !r.checks.is_empty() {
        return Err(InputError::new(
            "an experiment writes neither a per-run --report, --check nor --metrics-addr",
        )
        .help(
            "it writes DIR/experiment.html; `loadrig report DIR/runs/FILE.json` makes a run's page",
        ));
    }
    if r.shard.is_some() || r.start_at.is_some() {
        return Err(InputError::new(
            "--shard and --start-at apply to loadrig run only",
        ));
    }
    Ok(())
}

/// The experiment as given: the file first, the flags after (they add factors and win).
fn inputs(args: &ExperimentArgs) -> Result<Inputs, InputError> {
    let mut inputs = Inputs::default();
    if let Some(file) = &args.design {
        read_file(file, &mut inputs)?;
    }
    for text in &args.factors {
        inputs.factors.push(factor_flag(text)?);
    }
    if !args.fraction.is_empty() {
        inputs.fraction = args.fraction.clone();
        inputs.fraction_at = Some("--fraction".into());
    }
    if let Some(r) = args.replicates {
        inputs.replicates = r;
    }
    if !args.responses.is_empty() {
        inputs.responses = args.responses.clone();
    }
    if let Some(scale) = &args.scale {
        inputs.scale = parse_scale(scale).map_err(|e| e.at("--scale"))?;
    }
    inputs.intervals = match args.intervals.as_str() {
        "auto" => Intervals::Auto,
        "t" => Intervals::T,
        "bootstrap" => Intervals::Bootstrap,
        other => {
            return Err(InputError::new(format!(
                "--intervals {other}: expected auto, t or bootstrap"
            )))
        }
    };
    if let Some(p) = args.pool {
        if p < 2 {
            return Err(InputError::new(format!(
                "--pool {p}: interactions have 2 factors or more"
            ))
            .help("--pool 3 takes every interaction of three factors or more as noise"));
        }
        inputs.pool = Some(p);
    }
    if args.settings_url.is_some() {
        inputs.settings_url = args.settings_url.clone();
    }
    if let Some(seed) = args.run.load.count(LoadSetting::Seed) {
        inputs.seed = Some(seed);
    }
    if inputs.factors.is_empty() {
        return Err(
            InputError::new("no factor: an experiment varies at least one").help(
                "--factor clients=4,16 (repeatable), or --design FILE with [[factor]] tables",
            ),
        );
    }
    Ok(inputs)
}

/// `--factor NAME=L1,L2`.
fn factor_flag(text: &str) -> Result<FactorInput, InputError> {
    let (name, levels) = text.split_once('=').ok_or_else(|| {
        InputError::new(format!("--factor {text}: expected NAME=LEVEL,LEVEL"))
            .help("e.g. --factor clients=4,16 or --factor url.pipeline_sync=op,batch")
    })?;
    let levels: Vec<String> = levels
        .split(',')
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    if levels.len() < 2 {
        return Err(InputError::new(format!(
            "--factor {text}: factor {} has {} level: a factor needs at least two levels to have an effect",
            name.trim(),
            levels.len()
        ))
        .help(format!("give it two or more, like --factor {}=A,B, or leave it out", name.trim())));
    }
    Ok(FactorInput {
        name: name.trim().to_string(),
        levels,
        apply: Vec::new(),
        at: Some(format!("--factor {text}")),
    })
}

/// `loadrig-results/experiment-WORKLOAD-HASH`: the hash of what decides the runs, so the
/// same command finds its own folder again.
fn default_dir(args: &ExperimentArgs, workload: &str) -> PathBuf {
    let what = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}",
        args.run, args.factors, args.design, args.fraction, args.replicates, args.settings_url
    );
    let hash = &sha1_smol::Sha1::from(what).digest().to_string()[..10];
    let name = crate::plan::resolve::file_part(workload);
    PathBuf::from("loadrig-results").join(format!("experiment-{name}-{hash}"))
}
