//! The command line (clap derive). No logic here: `commands` resolves and validates. The
//! flags of a run (`RunArgs`, with every load setting's flag) live with the plan that
//! resolves them, in `plan::args`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::plan::RunArgs;

#[derive(Debug, Parser)]
#[command(
    name = "loadrig",
    version,
    about = "Load and microbenchmark rig for databases, directory servers, key-value stores and network services"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload (a file or a built-in name) and write its result file.
    Run(Box<RunArgs>),
    /// Run a workload at several values of one setting and fit the model that explains the
    /// curve: `--vary clients=1,2,4,8` (USL), `--vary rate=… --slo 'p99 < 50ms'` (knee),
    /// `--growth-batch 1000 --growth-limit 50000` (complexity class).
    Sweep(Box<SweepArgs>),
    /// Run a seed's study on every backend the machine offers and print its table:
    /// `loadrig study session-stores --quick`; `loadrig study --list` names them.
    Study(StudyArgs),
    /// List the built-in workloads and the target kinds.
    List,
    /// Remove everything loadrig created on a target (its loadrig_ namespace) and nothing else.
    Cleanup {
        /// The target to clean, e.g. sqlite://./bench.db or postgres://user@127.0.0.1/db.
        #[arg(long, short = 't')]
        target: String,
    },
    /// Print a built-in workload file to start from: `loadrig init session-store > my.toml`.
    Init {
        /// The built-in workload to print.
        name: String,
    },
    /// Write a self-contained HTML report of one or more result files (several are overlaid).
    Report(ReportArgs),
    /// Run two variants K rounds interleaved (A B A B …) and compare them run by run:
    /// `loadrig ab A.toml B.toml`, or one workload with --a-set/--b-set, --a-target/--b-target.
    Ab(Box<AbArgs>),
    /// Run a factorial experiment: every combination of the factors' levels (or a fraction),
    /// replicated, in random order; then each effect and interaction with its interval:
    /// `loadrig experiment insert.toml --factor clients=4,16 --factor url.sslmode=disable,require`.
    Experiment(Box<ExperimentArgs>),
    /// Compare result files: change, 95 % interval, test and verdict for each metric; one
    /// run per side (BASE NEW) or several (A1 A2 … -- B1 B2 …).
    Compare(CompareArgs),
    /// Find where throughput or a percentile shifted across a folder of one workload's
    /// result files (change points by E-divisive means).
    History(HistoryArgs),
    /// Merge the result files of a run's shards (`run --shard I/N --start-at T`) into one
    /// run file: `loadrig merge shard-*.json -o run.json`.
    Merge(MergeArgs),
    /// Take in a sharded run as it goes: the shards (`run --shard I/N --collect ADDR`)
    /// stream their intervals here, merged as they arrive and written as `loadrig merge`
    /// would: `loadrig collect --listen 127.0.0.1:7070 --shards 3 -o run.json`.
    Collect(CollectArgs),
    /// Print Kubernetes manifests that run a workload as N shards started together (a
    /// ConfigMap, a results volume claim and an Indexed Job); `kubectl apply -f -` takes them.
    Kube(Box<KubeArgs>),
    /// The init container of `loadrig kube`'s pods: give the results directory to the
    /// shards' user unless they can write it already.
    #[command(hide = true)]
    KubeResults(KubeResultsArgs),
    /// Rebuild a result file from the `.jsonl` interval stream of a run that was killed
    /// before it wrote one: `loadrig recover loadrig-results/r.jsonl`.
    Recover(RecoverArgs),
    /// Export a result file as CSV tables, an HdrHistogram interval log and/or YCSB's text
    /// output.
    Export(ExportArgs),
    /// Print the first operations each client of a workload would send, with their
    /// parameters bound, without a target: `loadrig ops session-store --count 5`.
    Ops(OpsArgs),
    /// Print a run's load interval by interval without running it: an open loop's arrivals
    /// per interval (with stages, each interval's stage and the integral of the rate), a
    /// closed loop's clients: `loadrig schedule noop --stages 10s:0..1000/s --max-in-flight 4`.
    Schedule(Box<ScheduleArgs>),
    /// Generate test data: `loadrig gen ldif --entries 100000 -o people.ldif`.
    #[command(subcommand)]
    Gen(GenCommand),
    /// Translate another tool's workload: `loadrig import pgbench SCRIPT.sql > workload.toml`.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Serve an emulated external system on loopback until Ctrl-C:
    /// `loadrig emulate supplier --listen 127.0.0.1:0 --delay 5s` (docs/emulate.md).
    #[command(subcommand)]
    Emulate(EmulateCommand),
    /// Watch a server without loading it: what it counts, where its sessions wait and what
    /// its processes spend, every interval (docs/observe.md):
    /// `loadrig observe --target postgres://… --interval 1s --for 1m`.
    Observe(ObserveArgs),
}

#[derive(Debug, Subcommand)]
pub enum EmulateCommand {
    /// The order-entry study's supplier: `POST /po` takes a purchase order, `GET /delivery`
    /// hands back one whose delay has passed, `GET /stats` tells what it saw.
    Supplier(SupplierArgs),
}

#[derive(Debug, Args)]
pub struct SupplierArgs {
    /// The loopback address to serve on, IP:PORT (port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,

    /// How long after its receipt a purchase order becomes a due delivery (e.g. 5s).
    #[arg(long, value_name = "DURATION")]
    pub delay: String,

    /// How long the supplier takes to answer `POST /po`.
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub response_time: String,
}

#[derive(Debug, Args)]
pub struct ObserveArgs {
    /// The server to observe, as a target URL (postgres, mysql, redis, ldap, http with
    /// `?status=/PATH`).
    #[arg(long, short = 't')]
    pub target: String,

    /// A server behind the target to observe as well (slapd's back-sql's database).
    #[arg(long, value_name = "URL")]
    pub behind: Option<String>,

    /// How often to read the server's counters.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub interval: String,

    /// How long to observe (default: until Ctrl-C).
    #[arg(long = "for", value_name = "DURATION")]
    pub duration: Option<String>,

    /// PostgreSQL's active-session samples per second (0: none).
    #[arg(long, value_name = "N", default_value_t = crate::observe::DEFAULT_SESSION_RATE)]
    pub session_rate: f64,

    /// Sample only the backends with this application_name (default: every client backend
    /// of the database but the observer's).
    #[arg(long, value_name = "NAME")]
    pub application_name: Option<String>,

    /// Print the whole observation as JSON at the end instead of a line per interval.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A pgbench custom script (`pgbench -f`) as a workload file; what loadrig cannot
    /// express exits 2 with the script's line and column.
    Pgbench(PgbenchImportArgs),
}

#[derive(Debug, Args)]
pub struct PgbenchImportArgs {
    /// The pgbench script.
    #[arg(value_name = "SCRIPT.sql")]
    pub script: PathBuf,

    /// Write the workload here (atomically) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// A directory of people as LDIF (seed 002): the `ou=people` entry, then entries with
    /// cn "fname<i> lname<i>", sn, givenName, mail, uid and telephoneNumber.
    Ldif(LdifArgs),
}

#[derive(Debug, Args)]
pub struct LdifArgs {
    /// How many people.
    #[arg(long, default_value_t = 100_000)]
    pub entries: u64,

    /// The DN the `ou=people` folder goes under.
    #[arg(long, default_value = "dc=example,dc=com")]
    pub base: String,

    /// The seed of the telephone numbers (the rest follows from each entry's number).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Write here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// The run, as `loadrig run` takes it (the target is not needed).
    #[command(flatten)]
    pub run: RunArgs,
    /// One JSON object per interval instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct OpsArgs {
    /// A workload file (.toml) or a built-in workload name (`loadrig list`).
    pub workload: String,

    /// Set a workload parameter: --set records=50000 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::workload::parse_set)]
    pub set: Vec<(String, String)>,

    /// Set workload parameters from a Java properties file, as `run --properties` does
    /// (YCSB's -P; repeatable; a later file, then --set, wins).
    #[arg(long = "properties", short = 'P', value_name = "FILE")]
    pub properties: Vec<PathBuf>,

    /// Show only these operations of the workload, chosen as `run --op` chooses (repeatable).
    #[arg(long = "op", value_name = "NAME")]
    pub only_ops: Vec<String>,

    /// This many clients (default: the workload's, as `loadrig run` would have).
    #[arg(long, short = 'c')]
    pub clients: Option<u64>,

    /// Operations shown per client.
    #[arg(long, short = 'n', value_name = "K", default_value_t = 10)]
    pub count: u64,

    /// The seed `loadrig run --seed S` would use (default: the workload's, else 0).
    #[arg(long)]
    pub seed: Option<u64>,

    /// One JSON object per operation and line, with its arguments in full.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The study to run (`loadrig study --list`).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,

    /// A server backend's URL (postgres://, mysql://, redis://), overriding the environment's
    /// (LOADRIG_PG_URL, LOADRIG_MYSQL_URL, LOADRIG_REDIS_URL). Repeatable.
    #[arg(long = "target", short = 't', value_name = "URL")]
    pub targets: Vec<String>,

    /// Smaller sizes, so that the whole study runs in well under a minute.
    #[arg(long)]
    pub quick: bool,

    /// The study's folder: its run files, study.json and report.html (default: study-NAME-TIME).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// A size of the study: --set records_max=50000, --set batch=1000.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::workload::parse_set)]
    pub set: Vec<(String, String)>,

    /// Run only these columns (names or short names, comma-separated, e.g. --only FS,pg2);
    /// the others are listed as not chosen.
    #[arg(long, value_name = "COLUMNS", value_delimiter = ',')]
    pub only: Vec<String>,

    /// session-stores: run the FS noindex and FS2 noindex columns in this folder (on a
    /// filesystem you mounted) instead of on the ext4 image without dir_index the study
    /// mounts when it runs as root.
    #[arg(long, value_name = "PATH")]
    pub fs_root: Option<PathBuf>,

    /// Name the studies and what each needs.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,

    /// Serve a live page on http://IP:PORT/ that shows each run of the study as it goes
    /// (docs/live.md).
    #[arg(long, value_name = "IP:PORT")]
    pub dashboard: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (.json) written by `loadrig run`, or one sweep file of `loadrig sweep`.
    #[arg(required = true, value_name = "RUN.json")]
    pub runs: Vec<PathBuf>,

    /// Write the report here (default: RUN.html beside a single run, report.html for several).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// How `compare` prints its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for the terminal.
    Table,
    /// One JSON document, for scripts and CI.
    Json,
    /// A Markdown table, for pull requests.
    Markdown,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference run(s): BASE.json NEW.json for one run per side, or several base runs,
    /// then `--`, then several new runs (options go before the `--`).
    #[arg(value_name = "BASE.json", required = true)]
    pub base: Vec<PathBuf>,

    /// After `--`: the runs to judge (after the change), A1.json A2.json -- B1.json B2.json.
    #[arg(value_name = "NEW.json", last = true)]
    pub new: Vec<PathBuf>,

    #[command(flatten)]
    pub verdict: VerdictArgs,

    /// A threshold on NEW, like 'read.p99 < 20ms' (repeatable); a failed one exits 1. With
    /// several new runs, each is checked.
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<String>,

    /// Also write the comparison as a self-contained HTML page, with the shift function of
    /// each operation plotted.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

/// How `history` orders the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryOrder {
    /// By start time.
    Time,
    /// By `run --label`, numbers in labels compared as numbers (v9 before v10).
    Label,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// A folder of result files (.json) written by `loadrig run`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Follow this workload (needed when the folder holds several).
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,

    /// Follow runs on this target, its URL without options (needed when the workload ran on
    /// several).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,

    /// Order the runs by start time or by their labels.
    #[arg(long, value_enum, default_value_t = HistoryOrder::Time)]
    pub order: HistoryOrder,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Also write an HTML page with each metric's series and its change points marked.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AbArgs {
    /// The load of every run, as for `loadrig run` (WORKLOAD is variant A's); -o names the
    /// folder the runs and ab.json go into (default ab-TIME).
    #[command(flatten)]
    pub run: RunArgs,

    /// Variant B's workload file or built-in (default: A's).
    #[arg(value_name = "B")]
    pub b_workload: Option<String>,

    /// A workload parameter of variant A only: --a-set value_size=100 (repeatable).
    #[arg(long = "a-set", value_name = "NAME=VALUE", value_parser = crate::workload::parse_set)]
    pub a_set: Vec<(String, String)>,

    /// A workload parameter of variant B only (repeatable).
    #[arg(long = "b-set", value_name = "NAME=VALUE", value_parser = crate::workload::parse_set)]
    pub b_set: Vec<(String, String)>,

    /// Variant A's target URL (default: --target, else the workload's).
    #[arg(long = "a-target", value_name = "URL")]
    pub a_target: Option<String>,

    /// Variant B's target URL.
    #[arg(long = "b-target", value_name = "URL")]
    pub b_target: Option<String>,

    /// Rounds: each runs A once and B once.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub rounds: u32,

    /// Draw each round's order (A B or B A) at random instead of always A then B.
    #[arg(long)]
    pub shuffle: bool,

    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// How `compare` and `ab` reach and print their verdicts.
#[derive(Debug, Args)]
pub struct VerdictArgs {
    /// The noise band: changes whose whole 95 % interval is not beyond ±this are never a
    /// verdict. Default 2% with several runs per side; 10% with one (the run-to-run
    /// allowance, since one run per side cannot measure run-to-run variance).
    #[arg(long, value_name = "PERCENT")]
    pub noise: Option<String>,

    /// With several runs per side: report how many rounds would detect a change of this
    /// size at 80 % power at the measured noise.
    #[arg(long, default_value = "5%", value_name = "PERCENT")]
    pub detect: String,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Exit with status 1 when any metric of any operation regressed (base to new, A to B).
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, Args)]
pub struct KubeArgs {
    /// The load of the whole run, as for `loadrig run` (split over the shards); without
    /// --target the URL comes from the Secret --target-secret.
    #[command(flatten)]
    pub run: RunArgs,

    /// How many shards (pods) share the load.
    #[arg(long, value_name = "N")]
    pub shards: usize,

    /// The container image holding loadrig (see the Dockerfile).
    #[arg(long, default_value = "loadrig:latest")]
    pub image: String,

    /// The namespace of the objects.
    #[arg(long, default_value = "default")]
    pub namespace: String,

    /// The Secret whose key `url` holds the target URL with its password.
    #[arg(long, default_value = "loadrig-target", value_name = "NAME")]
    pub target_secret: String,

    /// An existing ReadWriteMany volume claim for the shards' results (default: one made
    /// with the manifests).
    #[arg(long, value_name = "NAME")]
    pub results_claim: Option<String>,

    /// The user and group the shards run as. Unless 0:0, an init container running as root
    /// with only CAP_CHOWN first gives them the results directory (a hostPath or an NFS
    /// export owned by root refuses them otherwise; fsGroup does not reach those).
    #[arg(long, default_value = "65534:65534", value_name = "UID:GID")]
    pub run_as: String,

    /// For a cluster on one machine whose target listens on its loopback: the pods use the
    /// node's network, and serve no metrics (N pods would share one port).
    #[arg(long)]
    pub host_network: bool,

    /// Also run a collector (`loadrig collect`, a Job of one pod) that the shards stream
    /// to and that writes the merged run to the results volume as collected.json: on the
    /// node's 127.0.0.1 with --host-network, else behind a Service, the stream with the
    /// token and over TLS from the Secret --collect-secret.
    #[arg(long)]
    pub collector: bool,

    /// With --collector on the pod network: the Secret whose keys `token`, `tls.crt`,
    /// `tls.key` (the collector's, for NAME-collect.NAMESPACE.svc) and `ca.crt` (the CA
    /// that signed it) the collector and the shards share.
    #[arg(long, default_value = "loadrig-collect", value_name = "NAME")]
    pub collect_secret: String,
}

#[derive(Debug, Args)]
pub struct KubeResultsArgs {
    /// The mounted results directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// The shards' user and group, as `loadrig kube --run-as` gives them.
    #[arg(long, value_name = "UID:GID")]
    pub owner: String,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result files.
    #[arg(required = true, value_name = "SHARD.json")]
    pub shards: Vec<PathBuf>,

    /// Write the merged run file here.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,

    /// Merge even when shards are missing or were interrupted; the result says partial.
    #[arg(long)]
    pub allow_partial: bool,

    /// A threshold on the merged run, like 'read.p99 < 20ms' (repeatable; adds to the
    /// checks the shards recorded); a failed one exits 1.
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Where the shards connect, IP:PORT (port 0: any free one, printed). Beyond loopback
    /// it needs a token and --tls-cert/--tls-key.
    #[arg(long, value_name = "IP:PORT")]
    pub listen: String,

    /// How many shards make the run (their --shard I/N's N).
    #[arg(long, value_name = "N")]
    pub shards: usize,

    /// Write the merged run file here.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,

    /// Serve the live page of the whole run on http://IP:PORT/ (docs/live.md).
    #[arg(long, value_name = "IP:PORT")]
    pub dashboard: Option<String>,

    /// The shared token the shards must give, read from FILE (else from the environment
    /// variable LOADRIG_COLLECT_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// The collector's certificate chain (PEM), for TLS.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// How long to wait for a shard that is late or silent before going on without it, and
    /// after the last shard stopped before ending.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub patience: String,

    /// A threshold on the merged run, like 'read.p99 < 20ms' (repeatable; adds to the
    /// checks the shards recorded); a failed one exits 1.
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The interval stream written beside the result file (`RUN.jsonl`).
    #[arg(value_name = "RUN.jsonl")]
    pub stream: PathBuf,

    /// Where to write the result (default: the stream's name with `.json`; an existing file
    /// is never replaced).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The result file to export.
    #[arg(value_name = "RUN.json")]
    pub run: PathBuf,

    /// Write intervals.csv and operations.csv into this folder.
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,

    /// Write the HdrHistogram interval log (HistogramLogProcessor's input) to this file.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,

    /// Write the measurements as YCSB 0.17 prints them (its text exporter, hdrhistogram
    /// measurements) to this file.
    #[arg(long, value_name = "FILE")]
    pub ycsb: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The load of every point, as for `loadrig run`; --out names the sweep file.
    #[command(flatten)]
    pub run: RunArgs,

    /// What to vary: clients, rate, pipeline, threads, or a workload parameter, over a list
    /// (clients=1,2,4,8) or a range (records=0..50000:5000; rate=100..2000 with --find-max).
    #[arg(long, value_name = "NAME=VALUES")]
    pub vary: Option<String>,

    /// Run every point this many times (default 1); the models use every run.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub repeat: u32,

    /// A latency objective each point is judged by, e.g. 'p99 < 50ms'; on a rate sweep
    /// the highest rate that meets it (and completes 95 % of its arrivals) is the knee.
    #[arg(long, value_name = "OBJECTIVE")]
    pub slo: Option<String>,

    /// Rate sweeps: narrow in on the knee between the range's ends instead of a grid
    /// (needs --vary rate=LOW..HIGH and --slo).
    #[arg(long)]
    pub find_max: bool,

    /// Growth study: run the workload in batches of B operations against one target and
    /// time each batch against the records already stored (needs --growth-limit).
    #[arg(long, value_name = "B")]
    pub growth_batch: Option<u64>,

    /// Growth study: stop once this many records are stored.
    #[arg(long, value_name = "RECORDS")]
    pub growth_limit: Option<u64>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The base load of every run, as for `loadrig run`; -o names the experiment's folder
    /// (default loadrig-results/experiment-WORKLOAD-HASH, the same for the same command, so
    /// that running it again continues an interrupted experiment).
    #[command(flatten)]
    pub run: RunArgs,

    /// A factor and its levels, NAME=L1,L2[,…] (repeatable): a load setting
    /// (clients=4,16), a workload parameter (records=1000,100000), a target URL option
    /// (url.pipeline_sync=op,batch) or a server setting (server.synchronous_commit=on,off,
    /// with --settings-url).
    #[arg(long = "factor", value_name = "NAME=LEVELS")]
    pub factors: Vec<String>,

    /// An experiment file: [[factor]] tables (name, levels, apply) and the design's
    /// settings; the flags add to it and win over it (docs/experiment.md).
    #[arg(long, value_name = "FILE")]
    pub design: Option<PathBuf>,

    /// A generator of a two-level fraction, D=ABC (repeatable; factors are lettered A, B, …
    /// in the order given); without one every cell runs.
    #[arg(long = "fraction", value_name = "GENERATOR")]
    pub fraction: Vec<String>,

    /// Runs per cell (default 3), in interleaved blocks.
    #[arg(long, value_name = "R")]
    pub replicates: Option<usize>,

    /// What each run is judged by (repeatable; default throughput and p99): throughput,
    /// p50…p999, mean, max, errors, OP.METRIC, a workload figure (tpmC), or a path in the
    /// result file (figures.tpmC.value).
    #[arg(long = "response", value_name = "RESPONSE")]
    pub responses: Vec<String>,

    /// linear (effects add; the default) or log (effects multiply).
    #[arg(long, value_name = "SCALE")]
    pub scale: Option<String>,

    /// Which intervals judge an effect: auto (t, or the bootstrap when the residuals are
    /// not normal; the default), t, or bootstrap.
    #[arg(long, value_name = "KIND", default_value = "auto")]
    pub intervals: String,

    /// Take interactions of this many factors and more as noise (with one replicate the
    /// only error estimate; only when asked).
    #[arg(long, value_name = "ORDER")]
    pub pool: Option<usize>,

    /// A URL with the privilege to change the server settings that are factors (for
    /// PostgreSQL a superuser, e.g. on its Unix socket: postgres://postgres@%2Frun%2Fpostgresql/DB).
    #[arg(long, value_name = "URL")]
    pub settings_url: Option<String>,

    /// Print the design, the aliases, the runs and the time they take, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
}
