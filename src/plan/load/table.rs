//! The load settings, each declared once: its flag, its `[load]` key, the syntax both take
//! and its help. The flags (`LoadFlags`), the workload file's `[load]` (`Settings::of_file`)
//! and `RunPlan::vary` all read a setting through its row here; what its value must be
//! and where it lands in the [`crate::engine::LoadPlan`] is its reader in `read.rs`.

use std::fmt;
use std::time::Duration;

/// A load setting: what `--clients`, `[load] clients` and `vary(clients)` all set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LoadSetting {
    Clients,
    ThinkTime,
    Rate,
    Arrivals,
    MaxInFlight,
    LateAfter,
    Connection,
    OpTimeout,
    Threads,
    ConnectRate,
    Pipeline,
    PipelineRefill,
    ClientSlice,
    Duration,
    Ops,
    Samples,
    Interval,
    Warmup,
    Seed,
    Stages,
    StopWhen,
    Observe,
    ObserveRate,
    ObserveBehind,
}

/// How a setting is written on the command line and in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// A whole number from 0: `--clients 4`, `clients = 4`.
    Count,
    /// A number: `--rate 2.5`, `rate = 2.5` (or a whole number).
    Number,
    /// Text: a duration or a word, `--think-time 5ms`, `think_time = "5ms"`.
    Text,
    /// Text on the command line; in the file a whole number or a string (`threads = 4`,
    /// `threads = "per-client"`). The words say what both may be, for a file's error.
    CountOrWord(&'static str),
    /// A count, which the file may also give as `"{param}"` naming an integer parameter.
    CountOrParam(&'static str),
    /// Per second: text on the command line (`2000/s` or `2000`), a number in the file.
    PerSecond,
    /// Stages: one text on the command line (`30s:0..2000/s,2m:2000/s`), an array of
    /// tables in the file (`[[load.stage]]`).
    Stages,
    /// `on` or `off` on the command line; in the file a boolean or one of those words.
    OnOff,
}

/// One row of the table.
#[derive(Debug)]
pub struct Spec {
    pub setting: LoadSetting,
    /// The flag, `--clients`.
    pub flag: &'static str,
    pub short: Option<char>,
    /// What the flag's value is called in the help, `<DURATION>`.
    pub value_name: &'static str,
    /// The key in `[load]`; `None` for a flag without one (`--op-timeout`'s default is the
    /// workload's top-level `op_timeout`, which the workload compiler reads).
    pub key: Option<&'static str>,
    pub syntax: Syntax,
    /// The flag's help in `loadrig run --help`.
    pub help: &'static str,
}

impl Spec {
    /// The setting's name where a name is written without dashes (`--vary NAME=…`): its
    /// `[load]` key, else the flag's name.
    pub fn name(&self) -> &'static str {
        self.key.unwrap_or(&self.flag[2..])
    }
}

impl LoadSetting {
    pub fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    /// The setting a name written without dashes names: a `[load]` key (`think_time`) or a
    /// flag's name (`think-time`, `late-after`).
    pub fn named(name: &str) -> Option<LoadSetting> {
        SPECS
            .iter()
            .find(|s| s.key == Some(name) || &s.flag[2..] == name)
            .map(|s| s.setting)
    }

    /// The stop conditions: flags among them replace the file's as a whole. Stages set a
    /// run's length too.
    pub fn is_stop(self) -> bool {
        matches!(
            self,
            LoadSetting::Duration | LoadSetting::Ops | LoadSetting::Samples | LoadSetting::Stages
        )
    }
}

/// A setting's value as a flag, the file or a program gives it; what it must be is checked
/// where the setting is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A whole number: clients, ops, a seed.
    Count(u64),
    /// A number: a rate.
    Number(f64),
    /// A duration, as a program gives one (flags and files write durations as text).
    Duration(Duration),
    /// As written: a duration, a word (`per-client`, `poisson`), or a number in words.
    Text(String),
    /// `[[load.stage]]` tables as the file gives them, each field with its place.
    Stages(Vec<super::stages::StageInput>),
}

impl fmt::Display for Value {
    /// As the flag would be written: `4`, `2.5`, `5ms`, `per-client`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Number(x) => write!(f, "{x}"),
            Value::Duration(d) => write!(f, "{}", humantime::format_duration(*d)),
            Value::Text(t) => f.write_str(t),
            Value::Stages(stages) => {
                let parts: Vec<String> = stages.iter().map(|s| s.written.clone()).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

/// The table: one row per setting, in the order of [`LoadSetting`] and of `--help`.
pub static SPECS: [Spec; 24] = [
    Spec {
        setting: LoadSetting::Clients,
        flag: "--clients",
        short: Some('c'),
        value_name: "CLIENTS",
        key: Some("clients"),
        syntax: Syntax::Count,
        help: "Closed loop: this many clients, each running operations back to back",
    },
    Spec {
        setting: LoadSetting::ThinkTime,
        flag: "--think-time",
        short: None,
        value_name: "DURATION",
        key: Some("think_time"),
        syntax: Syntax::Text,
        help: "Closed loop: pause after each operation, like a user thinking (e.g. 100ms)",
    },
    Spec {
        setting: LoadSetting::Rate,
        flag: "--rate",
        short: Some('r'),
        value_name: "RATE",
        key: Some("rate"),
        syntax: Syntax::Number,
        help: "Open loop: start operations at this rate per second, whatever the response time",
    },
    Spec {
        setting: LoadSetting::Arrivals,
        flag: "--arrivals",
        short: None,
        value_name: "constant|poisson",
        key: Some("arrivals"),
        syntax: Syntax::Text,
        help: "Open loop: constant spacing or Poisson arrivals",
    },
    Spec {
        setting: LoadSetting::MaxInFlight,
        flag: "--max-in-flight",
        short: None,
        value_name: "N",
        key: Some("max_in_flight"),
        syntax: Syntax::Count,
        help: "Open loop: at most this many operations in flight (one session each)",
    },
    Spec {
        setting: LoadSetting::LateAfter,
        flag: "--late-after",
        short: None,
        value_name: "DURATION",
        key: None,
        syntax: Syntax::Text,
        help: "Open loop: a start later than this against the schedule counts as late",
    },
    Spec {
        setting: LoadSetting::Connection,
        flag: "--connection",
        short: None,
        value_name: "persistent|per-op",
        key: Some("connection"),
        syntax: Syntax::Text,
        help: "Connect once per client (persistent, the default) or for every operation (per-op)",
    },
    Spec {
        setting: LoadSetting::OpTimeout,
        flag: "--op-timeout",
        short: None,
        value_name: "DURATION",
        key: None,
        syntax: Syntax::Text,
        help: "Give up on an operation that takes longer than this: it counts as a `timeout` \
               error and its connection is replaced (overrides the workload's `op_timeout`)",
    },
    Spec {
        setting: LoadSetting::Threads,
        flag: "--threads",
        short: None,
        value_name: "N|per-client",
        key: Some("threads"),
        syntax: Syntax::CountOrWord("a number of threads, or \"per-client\""),
        help: "Threads shared by the clients of a network target (default: one per core), or \
               per-client: a thread for each connection (up to 256)",
    },
    Spec {
        setting: LoadSetting::ConnectRate,
        flag: "--connect-rate",
        short: None,
        value_name: "N/s",
        key: Some("connect_rate"),
        syntax: Syntax::PerSecond,
        help: "Open the clients' connections at most this fast before the run: N per second \
               (N or N/s). Default: unpaced below 1,000 clients, 5,000/s from 1,000",
    },
    Spec {
        setting: LoadSetting::Pipeline,
        flag: "--pipeline",
        short: None,
        value_name: "P",
        key: Some("pipeline"),
        syntax: Syntax::Count,
        help: "Up to P operations in flight on each connection, each from a client stream of \
               its own (Redis pipelining, PostgreSQL pipeline mode, HTTP/1.1 pipelining, LDAP \
               message ids): --clients C opens C connections and runs C x P streams; in an open \
               loop --max-in-flight M opens M, and the rate is dealt over the M x P streams. \
               Default 1",
    },
    Spec {
        setting: LoadSetting::PipelineRefill,
        flag: "--pipeline-refill",
        short: None,
        value_name: "each|all|N",
        key: Some("pipeline_refill"),
        syntax: Syntax::CountOrWord("a number of streams, or \"each\" or \"all\""),
        help: "When a pipelined connection writes again: `each` (default) sends a stream's next \
               operation as soon as its reply is read; `all` waits until all P are answered, as \
               redis-benchmark -P, wrk's pipeline.lua and pgbench's \\endpipeline do; N waits \
               until N are. Each operation is still timed from its own send. Closed loop only: \
               an open loop writes each arrival when it comes",
    },
    Spec {
        setting: LoadSetting::ClientSlice,
        flag: "--client-slice",
        short: None,
        value_name: "DURATION|kernel",
        key: Some("client_slice"),
        syntax: Syntax::Text,
        help: "The CPU time slice the client threads ask the kernel for (Linux 6.12+), from \
               100us to 100ms, or `kernel` for the kernel's default. A short slice lets a \
               client woken by a reply run before the task on its CPU has used up its own \
               slice, so the rig's wake-up delay stays out of the latencies it measures; it \
               gives the rig no larger CPU share. Default 300us; the result records the slice \
               the threads ran with",
    },
    Spec {
        setting: LoadSetting::Duration,
        flag: "--duration",
        short: Some('d'),
        value_name: "DURATION",
        key: Some("duration"),
        syntax: Syntax::Text,
        help: "Stop after this long (after the warm-up)",
    },
    Spec {
        setting: LoadSetting::Ops,
        flag: "--ops",
        short: None,
        value_name: "N",
        key: Some("ops"),
        syntax: Syntax::CountOrParam(
            "a number of operations, or \"{param}\" naming an integer parameter",
        ),
        help: "Stop after this many measured operations (split exactly across clients)",
    },
    Spec {
        setting: LoadSetting::Samples,
        flag: "--samples",
        short: None,
        value_name: "K",
        key: Some("samples"),
        syntax: Syntax::Count,
        help: "Stop after exactly this many measured intervals (with --interval)",
    },
    Spec {
        setting: LoadSetting::Interval,
        flag: "--interval",
        short: Some('i'),
        value_name: "DURATION",
        key: Some("interval"),
        syntax: Syntax::Text,
        help: "Length of one reporting interval (default 1s)",
    },
    Spec {
        setting: LoadSetting::Warmup,
        flag: "--warmup",
        short: Some('w'),
        value_name: "DURATION|auto",
        key: Some("warmup"),
        syntax: Syntax::Text,
        help: "Run this long first without counting it in any statistic; `auto` finds where \
               the throughput settles (MSER-5) and cuts the warm-up there after the run",
    },
    Spec {
        setting: LoadSetting::Seed,
        flag: "--seed",
        short: None,
        value_name: "SEED",
        key: Some("seed"),
        syntax: Syntax::Count,
        help: "Seed for every random choice: the same seed gives the same operation sequence",
    },
    Spec {
        setting: LoadSetting::Stages,
        flag: "--stages",
        short: None,
        value_name: "STAGES",
        key: Some("stage"),
        syntax: Syntax::Stages,
        help: "Load that changes during the run, stage after stage, comma-separated: \
               [NAME=]DURATION:RATE/s or FROM..TO/s (open loop; with --max-in-flight), \
               [NAME=]DURATION:Nc or FROM..TOc (closed loop, N clients), ramps linear; \
               e.g. 30s:0..2000/s,2m:2000/s,spike=10s:8000/s. Sets the run's length \
               (no --duration, --ops, --samples); each stage is judged on its own \
               (docs/load.md, \"Stages\")",
    },
    Spec {
        setting: LoadSetting::StopWhen,
        flag: "--stop-when",
        short: None,
        value_name: "CONDITION",
        key: Some("stop_when"),
        syntax: Syntax::Text,
        help: "With --stages: end the run once this holds in 2 measured intervals in a row \
               ('p99 > 50ms', 'errors > 1%', 'read.p99 > 20ms for 3 intervals'), and report \
               the highest load sustained before it (a breakpoint search in one run)",
    },
    Spec {
        setting: LoadSetting::Observe,
        flag: "--observe",
        short: None,
        value_name: "on|off",
        key: Some("observe"),
        syntax: Syntax::OnOff,
        help: "Observe the server under test on a connection of its own, interval by interval: \
               what it counts, where its sessions wait, its statements' own time, its \
               processes' CPU; the result explains the run with them (docs/observe.md). \
               Default: on for network targets (SQL, LDAP, Redis, HTTP), off for embedded ones",
    },
    Spec {
        setting: LoadSetting::ObserveRate,
        flag: "--observe-rate",
        short: None,
        value_name: "N/s",
        key: Some("observe_rate"),
        syntax: Syntax::PerSecond,
        help: "While observing: PostgreSQL's active-session samples per second (N or N/s; \
               default 10, 0 for none)",
    },
    Spec {
        setting: LoadSetting::ObserveBehind,
        flag: "--observe-behind",
        short: None,
        value_name: "URL",
        key: Some("observe_behind"),
        syntax: Syntax::Text,
        help: "While observing: a server behind the target to observe as well (slapd's \
               back-sql in front of PostgreSQL), as a target URL; ${VAR} is read from the \
               environment",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_in_its_settings_place() {
        for (i, spec) in SPECS.iter().enumerate() {
            assert_eq!(spec.setting as usize, i, "{}", spec.flag);
            assert!(spec.flag.starts_with("--"));
            assert_eq!(LoadSetting::named(spec.name()), Some(spec.setting));
        }
    }
}
