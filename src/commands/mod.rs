//! One file per command; this file only dispatches. Each command resolves its input (a
//! `RunPlan` for the commands that run load), hands it on, and chooses the exit status.

mod ab;
mod compare;
mod emulate;
mod export;
mod gen;
mod history;
mod import;
mod kube;
mod merge;
mod observe;
mod ops;
mod recover;
mod report;
mod run;
mod schedule;
mod study;
mod sweep;
mod targets;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Run a parsed command line. Errors exit with status 2; failed checks and regressions
/// (`--fail-on-regression`) exit with 1.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Study(args) => study::study(&args),
        Command::List => targets::list(),
        Command::Cleanup { target } => targets::cleanup(&target),
        Command::Init { name } => targets::init(&name),
        Command::Report(args) => report::report(&args),
        Command::Ab(args) => ab::ab(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::History(args) => history::history(&args),
        Command::Merge(args) => merge::merge(&args),
        Command::Kube(args) => kube::kube(&args),
        Command::KubeResults(args) => kube::results_dir(&args),
        Command::Export(args) => export::export(&args),
        Command::Recover(args) => recover::recover(&args),
        Command::Ops(args) => ops::ops(&args),
        Command::Schedule(args) => schedule::schedule(&args),
        Command::Gen(what) => gen::gen(&what),
        Command::Import(what) => import::import(&what),
        Command::Emulate(what) => emulate::emulate(&what),
        Command::Observe(args) => observe::observe(&args),
    }
}
