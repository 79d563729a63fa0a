//! The flags of a run: what `loadrig run` takes, and with it `sweep`, `ab` and `kube`,
//! which flatten these. The load settings among them are made from their one table
//! ([`LoadFlags`]); `resolve` turns all of them and the workload into a `RunPlan`.

use std::path::PathBuf;

use clap::Args;

use super::load::LoadFlags;

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// A workload file (.toml) or a built-in workload name (`loadrig list`).
    pub workload: String,

    /// Target URL, overriding the workload's: sqlite://PATH, fs://DIR, noop://, sleep://?latency=1ms.
    #[arg(long, short = 't')]
    pub target: Option<String>,

    /// Set a workload parameter: --set records=50000 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::workload::parse_set)]
    pub set: Vec<(String, String)>,

    /// Set workload parameters from a Java properties file, as YCSB's -P does: each
    /// NAME=VALUE line (also NAME: VALUE, NAME VALUE; # and ! comment lines) as --set
    /// NAME=VALUE, so a YCSB property file works with the ycsb-* built-ins (repeatable; a
    /// later file, then --set, wins).
    #[arg(long = "properties", short = 'P', value_name = "FILE")]
    pub properties: Vec<PathBuf>,

    /// Run only these operations of the workload (repeatable).
    #[arg(long = "op", value_name = "NAME")]
    pub only_ops: Vec<String>,

    /// Every load setting's flag (`--clients`, `--rate`, ... `--seed`), made from the one
    /// table of load settings (`plan::load`).
    #[command(flatten)]
    pub load: LoadFlags,

    /// Write the result here (default loadrig-results/TIME-WORKLOAD.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Do not run the workload's setup or load its [data]: reuse what an earlier run set up
    /// and loaded (sysbench's `run` after `prepare`).
    #[arg(long)]
    pub skip_load: bool,

    /// Also write the HTML report of the result here.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// A threshold checked at the end, like 'read.p99 < 20ms' or 'errors < 0.1%'
    /// (repeatable; adds to the workload's `checks`); a failed one exits 1.
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<String>,

    /// Change a threshold of the run's verdict on itself, NAME=VALUE (repeatable): busy=90%,
    /// hiccup=50ms, starved-median=4, little=15%, late=5%, jain=0.8, drift=10%,
    /// drift-p=0.01, thread=90% (docs/validity.md).
    #[arg(long = "validity", value_name = "NAME=VALUE")]
    pub validity: Vec<String>,

    /// A label recorded in the result file, such as a commit id; `loadrig history` orders
    /// runs by it.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    /// Serve OpenMetrics text on http://IP:PORT/metrics during the run (port 0: any free one).
    #[arg(long, value_name = "IP:PORT")]
    pub metrics_addr: Option<String>,

    /// Serve a live page of the run on http://IP:PORT/ (a bare PORT is on 127.0.0.1; port 0
    /// picks a free one and prints the URL): throughput, latency percentiles, the
    /// distribution so far and the rig's figures, interval by interval (docs/live.md).
    #[arg(long, value_name = "IP:PORT")]
    pub dashboard: Option<String>,

    /// With --shard I/N: stream this shard's finished intervals and its result to the
    /// collector at HOST:PORT (`loadrig collect`), which merges the shards as they run. A
    /// collector beyond loopback is reached over TLS (docs/live.md).
    #[arg(long, value_name = "HOST:PORT", requires = "shard")]
    pub collect: Option<String>,

    /// The collector's shared token, read from FILE (else from the environment variable
    /// LOADRIG_COLLECT_TOKEN).
    #[arg(long, value_name = "FILE", requires = "collect")]
    pub collect_token_file: Option<PathBuf>,

    /// Trust the collector's certificate if this PEM file's CA signed it (default: the
    /// system's roots); TLS is used whenever the collector is not on loopback.
    #[arg(long, value_name = "FILE", requires = "collect")]
    pub collect_ca: Option<PathBuf>,

    /// Run share I (from 0) of a run split over N processes: clients or rate split, `seq`
    /// numbers partitioned, the data loaded by shard 0 only (docs/distributed.md).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// Start the measured run at this wall-clock instant, RFC 3339 (2026-11-24T03:00:00Z)
    /// or from now (+30s); rounded up to a multiple of the interval.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,

    /// With --shard I/N, I > 0: how long to wait for shard 0 to finish the workload's setup
    /// and data load (it leaves a marker on the target) before giving up.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub load_timeout: String,
}
