//! The command line (clap derive). No logic here: `commands` resolves and validates.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Compare two result files: change, 95 % interval, test and verdict for each metric.
    Compare(CompareArgs),
    /// Rebuild a result file from the `.jsonl` interval stream of a run that was killed
    /// before it wrote one: `loadrig recover loadrig-results/r.jsonl`.
    Recover(RecoverArgs),
    /// Export a result file as CSV tables, an HdrHistogram interval log and/or YCSB's text
    /// output.
    Export(ExportArgs),
    /// Print the first operations each client of a workload would send, with their
    /// parameters bound, without a target: `loadrig ops session-store --count 5`.
    Ops(OpsArgs),
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
pub struct OpsArgs {
    /// A workload file (.toml) or a built-in workload name (`loadrig list`).
    pub workload: String,

    /// Set a workload parameter: --set records=50000 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::spec::parse_set)]
    pub set: Vec<(String, String)>,

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
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::spec::parse_set)]
    pub set: Vec<(String, String)>,

    /// Run only these columns (names or short names, comma-separated, e.g. --only FS,pg2);
    /// the others are listed as not chosen.
    #[arg(long, value_name = "COLUMNS", value_delimiter = ',')]
    pub only: Vec<String>,

    /// Name the studies and what each needs.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
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
    /// The reference run (before the change).
    #[arg(value_name = "BASE.json")]
    pub base: PathBuf,

    /// The run to judge (after the change).
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,

    /// Changes whose whole 95 % interval stays within ±this are never a verdict (e.g. 2%).
    #[arg(long, default_value = "2%", value_name = "PERCENT")]
    pub noise: String,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Exit with status 1 when any metric of any operation regressed.
    #[arg(long)]
    pub fail_on_regression: bool,

    /// A threshold on NEW, like 'read.p99 < 20ms' (repeatable); a failed one exits 1.
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

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// A workload file (.toml) or a built-in workload name (`loadrig list`).
    pub workload: String,

    /// Target URL, overriding the workload's: sqlite://PATH, fs://DIR, noop://, sleep://?latency=1ms.
    #[arg(long, short = 't')]
    pub target: Option<String>,

    /// Set a workload parameter: --set records=50000 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::spec::parse_set)]
    pub set: Vec<(String, String)>,

    /// Run only these operations of the workload (repeatable).
    #[arg(long = "op", value_name = "NAME")]
    pub only_ops: Vec<String>,

    /// Closed loop: this many clients, each running operations back to back.
    #[arg(long, short = 'c')]
    pub clients: Option<u64>,

    /// Closed loop: pause after each operation, like a user thinking (e.g. 100ms).
    #[arg(long, value_name = "DURATION")]
    pub think_time: Option<String>,

    /// Open loop: start operations at this rate per second, whatever the response time.
    #[arg(long, short = 'r')]
    pub rate: Option<f64>,

    /// Open loop: constant spacing or Poisson arrivals.
    #[arg(long, value_name = "constant|poisson")]
    pub arrivals: Option<String>,

    /// Open loop: at most this many operations in flight (one session each).
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<u64>,

    /// Open loop: a start later than this against the schedule counts as late.
    #[arg(long, value_name = "DURATION")]
    pub late_after: Option<String>,

    /// Connect once per client (persistent, the default) or for every operation (per-op).
    #[arg(long, value_name = "persistent|per-op")]
    pub connection: Option<String>,

    /// Give up on an operation that takes longer than this: it counts as a `timeout` error
    /// and its connection is replaced (overrides the workload's `op_timeout`).
    #[arg(long, value_name = "DURATION")]
    pub op_timeout: Option<String>,

    /// Threads shared by the clients of a network target (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,

    /// Stop after this long (after the warm-up).
    #[arg(long, short = 'd', value_name = "DURATION")]
    pub duration: Option<String>,

    /// Stop after this many measured operations (split exactly across clients).
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// Stop after exactly this many measured intervals (with --interval).
    #[arg(long, value_name = "K")]
    pub samples: Option<u64>,

    /// Length of one reporting interval (default 1s).
    #[arg(long, short = 'i', value_name = "DURATION")]
    pub interval: Option<String>,

    /// Run this long first without counting it in any statistic; `auto` finds where the
    /// throughput settles (MSER-5) and cuts the warm-up there after the run.
    #[arg(long, short = 'w', value_name = "DURATION|auto")]
    pub warmup: Option<String>,

    /// Seed for every random choice: the same seed gives the same operation sequence.
    #[arg(long)]
    pub seed: Option<u64>,

    /// Write the result here (default loadrig-results/TIME-WORKLOAD.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Do not load the workload's [data]: reuse what an earlier run loaded.
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
    /// hiccup=50ms, starved-median=4, little=15%, late=5%, jain=0.8 (docs/validity.md).
    #[arg(long = "validity", value_name = "NAME=VALUE")]
    pub validity: Vec<String>,

    /// Serve OpenMetrics text on http://IP:PORT/metrics during the run (port 0: any free one).
    #[arg(long, value_name = "IP:PORT")]
    pub metrics_addr: Option<String>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The load of every point, as for `loadrig run`; --out names the sweep file.
    #[command(flatten)]
    pub run: RunArgs,

    /// What to vary: clients, rate, or a workload parameter, over a list (clients=1,2,4,8)
    /// or a range (records=0..50000:5000; rate=100..2000 with --find-max).
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
