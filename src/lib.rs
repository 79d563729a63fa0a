//! loadrig: a load and microbenchmark rig for databases, directory servers, key-value and
//! session stores, and network services.
//!
//! # Layout
//! - [`analysis`]: the models behind sweeps (USL, complexity class, knee) and latency modes.
//! - [`cli`]: the command line, parsed by clap; [`commands`] resolves and runs it.
//! - [`vocab`], [`clock`], [`error`], [`duration`]: the bottom layer every other module
//!   shares: the operation vocabulary, the hot loop's clock, input errors, durations as
//!   people write and read them.
//! - [`workload`]: the workload language: workload files (TOML with positions), parameters, generators, built-ins, and the importers of other tools' files.
//! - [`engine`]: clients, closed and open loops, stop conditions, the interval collector.
//! - [`stats`]: per-client counters and HdrHistograms, exact merges, summaries.
//! - [`targets`]: one file per system under test, behind the `Target`/`Session` traits.
//! - [`emulate`]: stand-ins for the systems a workload talks to besides its target.
//! - [`observe`]: the server under test observed interval by interval on connections of its
//!   own (its counters, wait events, statements and processes).
//! - [`result`]: the run file and the sweep file, the contract every output reads, with
//!   their JSON Schemas in docs/schema/.
//! - [`report`]: the console view, the summary, and what is computed from result files
//!   alone: the HTML report with its SVG plots, CSV and HdrHistogram log exports, and the
//!   live OpenMetrics endpoint.
//! - [`analysis`]: statistics on result files: `compare` (tests, intervals, verdicts) and
//!   threshold checks; the checks that judge a run's validity as it ends.
//! - [`assemble`]: a run's result file built from what the engine measured, merged from
//!   shard files, or recovered from the interval stream of a run that died.
//! - [`live`]: watching a run as it goes: the live dashboard (`--dashboard`), a shard's
//!   stream to a collector (`--collect`) and the collector (`loadrig collect`).
//! - [`fuzzing`]: the parsers of hostile input as the fuzz targets (`fuzz/`) and
//!   `tests/integration/fuzz_corpus.rs` call them.

pub mod analysis;
pub mod assemble;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod duration;
pub mod emulate;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod fuzzing;
pub mod live;
pub mod observe;
pub mod plan;
pub mod report;
pub mod result;
pub mod runner;
pub mod stats;
pub mod study;
pub mod targets;
pub mod vocab;
pub mod workload;

use std::process::ExitCode;

/// Run a parsed command line. Errors exit with status 2; failed checks and regressions
/// (`--fail-on-regression`) exit with 1.
pub fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    commands::dispatch(cli)
}
