//! Each load setting's reader: what its value must be (its checks and their messages, by
//! the flag's name or at its place in the file), its default, and what it becomes in the
//! `LoadPlan`. `resolve_load` calls them in one order, so that of several problems the
//! same one is always reported.

use std::time::Duration;

use super::settings::Settings;
use super::stages::{self, Laid};
use super::table::{LoadSetting as S, Value};
use crate::engine::{
    slice, Arrivals, Connection, LoadPlan, Mode, StageKind, StopWhen, THREAD_PER_CONNECTION_MAX,
};
use crate::error::InputError;
use crate::plan::given::Given;
use crate::workload;

/// Open loop: a start later than this against the schedule counts as late.
pub const DEFAULT_LATE_AFTER: Duration = Duration::from_millis(1);
/// The reporting interval when neither flag nor file sets one.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// How long a run lasts when nothing says when to stop.
const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// The most clients, in-flight operations or threads one run may have.
const MAX_COUNT: u64 = 10_000;

/// Why a run stops at [`MAX_COUNT`], and where more load comes from.
const BEYOND_ONE_RUN: &str = "one run keeps at most 10,000 clients (or client streams, in-flight operations, threads), each with its own connection, counters and fairness figures; for more load, run shards in several processes or machines (--shard I/N, docs/distributed.md) and merge them";

/// Whether the run is an open loop, after refusing flags that belong to the other kind.
pub fn is_open(s: &Settings) -> Result<bool, InputError> {
    let (rate, clients) = (s.get(S::Rate), s.get(S::Clients));
    if let (Some(r), Some(c)) = (rate, clients) {
        if r.is_flag() && c.is_flag() {
            return Err(InputError::new("--rate and --clients cannot be used together")
                .help("--clients N runs a closed loop (N clients back to back); --rate R runs an open loop, whose concurrency is set with --max-in-flight"));
        }
        if !r.is_flag() && !c.is_flag() {
            return Err(r.error("[load] sets both rate and clients").help(
                "keep clients for a closed loop, or rate (with max_in_flight) for an open loop",
            ));
        }
    }
    // A flag chooses the loop; else the file's rate makes it open.
    let open = rate.is_some_and(|r| r.is_flag() || clients.is_none());
    let misplaced = if open {
        vec![(
            S::ThinkTime,
            "--think-time applies to closed loops only",
            "an open loop starts operations on its schedule; drop --think-time or use --clients",
        )]
    } else {
        vec![
            (
                S::MaxInFlight,
                "--max-in-flight applies to open loops only",
                "add --rate R, or use --clients N for a closed loop",
            ),
            (
                S::Arrivals,
                "--arrivals applies to open loops only",
                "add --rate R",
            ),
            (
                S::LateAfter,
                "--late-after applies to open loops only",
                "add --rate R",
            ),
        ]
    };
    match misplaced
        .into_iter()
        .find(|(s_, _, _)| s.flag(*s_).is_some())
    {
        Some((_, message, help)) => Err(InputError::new(message).help(help)),
        None => Ok(open),
    }
}

/// `interval`: at least 1 ms; 1 s when not given.
pub fn interval(s: &Settings) -> Result<Duration, InputError> {
    let Some(g) = s.get(S::Interval) else {
        return Ok(DEFAULT_INTERVAL);
    };
    let d = g.duration()?;
    if d < Duration::from_millis(1) {
        return Err(g
            .error("the interval must be at least 1ms")
            .help("for example --interval 1s"));
    }
    Ok(d)
}

/// `--warmup auto`: the warm-up is found after the run (MSER-5) instead of given. Only the
/// flag takes `auto`.
pub fn warmup_is_auto(s: &Settings) -> bool {
    s.flag(S::Warmup)
        .is_some_and(|g| g.text().trim().eq_ignore_ascii_case("auto"))
}

/// `warmup`: none when not given, nor with `--warmup auto` (the runner cuts it afterwards).
pub fn warmup(s: &Settings) -> Result<Duration, InputError> {
    match s.get(S::Warmup) {
        Some(_) if warmup_is_auto(s) => Ok(Duration::ZERO),
        Some(g) => g.duration(),
        None => Ok(Duration::ZERO),
    }
}

/// When a run stops: after a time, after a count of operations (whichever comes first), or
/// after exactly `samples` intervals.
pub struct Stop {
    pub duration: Option<Duration>,
    pub ops: Option<u64>,
    pub samples: Option<u64>,
}

/// `duration`, `ops`, `samples` (the flags' replace the file's as a whole when settings are
/// merged). `samples` K sets the duration to K intervals; nothing at all runs for 10 s.
pub fn stop_conditions(s: &Settings, interval: Duration) -> Result<Stop, InputError> {
    let duration = match s.get(S::Duration) {
        Some(g) => {
            let d = g.duration()?;
            Some(g.clone().map(|_| d))
        }
        None => None,
    };
    let count = |setting| match s.get(setting) {
        Some(g) => g.count().map(|n| Some(g.clone().map(|_| n))),
        None => Ok(None),
    };
    let (ops, samples) = (count(S::Ops)?, count(S::Samples)?);
    if let (Some(k), Some(_)) = (&samples, &duration) {
        return Err(k.error("--samples and --duration cannot be used together")
            .help("--samples K --interval T runs exactly K intervals of length T; --duration sets the length directly"));
    }
    if let (Some(k), Some(_)) = (&samples, &ops) {
        return Err(k
            .error("--samples and --ops cannot be used together")
            .help("choose one stop condition"));
    }
    for g in [&samples, &ops].into_iter().flatten() {
        if g.value == 0 {
            return Err(g.error("--samples and --ops must be at least 1"));
        }
    }
    if let Some(d) = duration.as_ref().filter(|d| d.value.is_zero()) {
        return Err(d
            .error("--duration must be above zero")
            .help("for example --duration 30s"));
    }
    let (ops, samples) = (ops.map(|g| g.value), samples.map(|g| g.value));
    let duration = match (samples, duration, ops) {
        (Some(k), _, _) => Some(interval * k.min(u32::MAX as u64) as u32),
        (None, None, None) => Some(DEFAULT_DURATION),
        (None, d, _) => d.map(|g| g.value),
    };
    Ok(Stop {
        duration,
        ops,
        samples,
    })
}

/// A closed loop: `clients` (1) with `think_time` (none) after each operation.
pub fn closed_mode(s: &Settings) -> Result<Mode, InputError> {
    let think = match s.get(S::ThinkTime) {
        Some(g) => g.duration()?,
        None => Duration::ZERO,
    };
    let clients = match s.get(S::Clients) {
        Some(g) => checked_count(g)?,
        None => 1,
    };
    Ok(Mode::Closed {
        clients: clients as usize,
        think,
    })
}

/// An open loop: `rate`, `arrivals`, and as its concurrency `max_in_flight`, or else the
/// file's `clients` (a closed-loop workload run with `--rate` keeps its concurrency).
pub fn open_mode(s: &Settings) -> Result<Mode, InputError> {
    let rate = s
        .get(S::Rate)
        .ok_or_else(|| InputError::new("an open loop needs a rate"))?;
    let per_s = rate.number()?;
    let rate = rate.clone().map(|_| per_s);
    if !(rate.value > 0.0 && rate.value.is_finite()) {
        return Err(rate.error(format!(
            "{} {}: expected operations per second above zero",
            rate.name(),
            rate.value
        )));
    }
    open_at(s, rate.value)
}

/// An open loop whose rate reaches `rate` at most: `arrivals`, and as its concurrency
/// `max_in_flight`, or else the file's `clients`.
fn open_at(s: &Settings, rate: f64) -> Result<Mode, InputError> {
    let arrivals = match s.get(S::Arrivals) {
        None => Arrivals::Constant,
        Some(g) => match g.text().as_str() {
            "constant" => Arrivals::Constant,
            "poisson" => Arrivals::Poisson,
            other => {
                return Err(g.error(format!(
                    "{} {other}: expected constant or poisson",
                    g.name()
                )))
            }
        },
    };
    let workers = match s.get(S::MaxInFlight).or(s.get(S::Clients)) {
        Some(g) => checked_count(g)?,
        None => 1,
    };
    let late_after = match s.get(S::LateAfter) {
        Some(g) => g.duration()?,
        None => DEFAULT_LATE_AFTER,
    };
    if rate / (workers as f64) < 1e-3 {
        return Err(InputError::new(format!(
            "--rate {rate} spread over {workers} in flight is under one operation per 1000 s each"
        ))
        .help("lower --max-in-flight"));
    }
    Ok(Mode::Open {
        rate,
        arrivals,
        workers: workers as usize,
        late_after,
    })
}

/// A run with stages: its loop by the stages' kind (refusing the other loop's settings and
/// the stop conditions, which the stages replace), its warm-up (`--warmup`, or the leading
/// `warmup = true` stages) and its length, the stages' sum.
pub fn staged(s: &Settings, laid: &Laid) -> Result<(Mode, Duration, Stop), InputError> {
    let name = laid.given.name();
    for setting in [S::Duration, S::Ops, S::Samples] {
        if let Some(g) = s.get(setting) {
            return Err(g
                .error(format!(
                    "{} cannot be used with {name}: the stages set the run's length",
                    g.name()
                ))
                .help("drop it, or change the stages' durations"));
        }
    }
    let peak = laid.stages.iter().map(|st| st.peak()).fold(0.0, f64::max);
    let from_file = !laid.given.is_flag();
    let mode = match laid.kind {
        StageKind::Rate => {
            if let Some(g) = s.flag(S::Clients).or(s.flag(S::ThinkTime)) {
                return Err(g
                    .error(format!("{} with rate stages ({name}): a rate stage runs an open loop", g.name()))
                    .help("an open loop's concurrency is --max-in-flight; for a closed loop, give the stages clients (1m:1..64c)"));
            }
            if let (true, Some(g)) = (from_file, s.get(S::Clients).filter(|g| !g.is_flag())) {
                return Err(laid.given.error(format!("a rate stage in a closed-loop workload: {} makes it a closed loop", g.name()))
                    .help("give the stages clients (clients = N), or [load] max_in_flight instead of clients"));
            }
            open_at(s, peak)?
        }
        StageKind::Clients => {
            for setting in [S::Rate, S::MaxInFlight, S::Arrivals, S::LateAfter] {
                if let Some(g) = s.flag(setting) {
                    return Err(g
                        .error(format!(
                            "{} with client stages ({name}): a client stage runs a closed loop",
                            g.name()
                        ))
                        .help("for an open loop, give the stages rates (30s:0..2000/s)"));
                }
            }
            if let (true, Some(g)) = (from_file, s.get(S::Rate)) {
                return Err(laid
                    .given
                    .error(format!(
                        "a client stage in an open-loop workload: {} makes it an open loop",
                        g.name()
                    ))
                    .help("give the stages rates (rate = R), or drop the rate"));
            }
            check_count(peak as u64, &name).map_err(|e| laid.given.place(e))?;
            let think = match s.get(S::ThinkTime) {
                Some(g) => g.duration()?,
                None => Duration::ZERO,
            };
            Mode::Closed {
                clients: peak as usize,
                think,
            }
        }
    };
    if warmup_is_auto(s) {
        return Err(InputError::new(format!(
            "--warmup auto cannot be used with {name}: a load that changes has no steady state to find"
        ))
        .help("give the warm-up as a duration (the first part of the first stage) or as a stage of its own (warmup = true)"));
    }
    let total: Duration = laid.stages.iter().map(|st| st.duration).sum();
    let warmup = match (laid.warmup, s.get(S::Warmup)) {
        (Some(_), Some(g)) => {
            return Err(g
                .error(format!(
                    "{} and a warm-up stage (warmup = true) both give the warm-up",
                    g.name()
                ))
                .help("keep one"))
        }
        (Some(w), None) => w,
        (None, Some(g)) => g.duration()?,
        (None, None) => Duration::ZERO,
    };
    if warmup >= total {
        return Err(laid.given.error(format!(
            "the warm-up ({}) takes the whole of the stages ({}): nothing would be measured",
            humantime::format_duration(warmup),
            humantime::format_duration(total)
        )));
    }
    let stop = Stop {
        duration: Some(total - warmup),
        ops: None,
        samples: None,
    };
    Ok((mode, warmup, stop))
}

/// `stop_when`: only for a run with stages, on figures an interval has, holding in no more
/// intervals in a row than the run measures. `ops`: the workload's operations.
pub fn stop_when(
    s: &Settings,
    plan: &LoadPlan,
    ops: &[String],
) -> Result<Option<StopWhen>, InputError> {
    let Some(rule) = stages::stop_when(s, ops)? else {
        return Ok(None);
    };
    let Some(g) = s.get(S::StopWhen) else {
        return Ok(None);
    };
    if plan.stages.is_empty() {
        return Err(g
            .error(format!("{} ends a run whose load changes, and this run has no stages", g.name()))
            .help("add --stages (a step test: --stages 30s:1000/s,30s:2000/s,30s:3000/s); for a constant load, judge the run with --check"));
    }
    let timeline = plan.timeline();
    let measured = timeline.last().map_or(0, |l| l + 1) - timeline.warm;
    if u64::from(rule.consecutive) > measured {
        return Err(g
            .error(format!(
                "{} '{}' must hold in {} intervals in a row, and the run measures {measured}: it can never end the run",
                g.name(),
                rule.condition,
                rule.consecutive
            ))
            .help("ask for fewer intervals in a row, a shorter --interval, or longer stages"));
    }
    Ok(Some(rule))
}

/// `--op-timeout`, else the workload's `op_timeout` (checked when it was compiled).
pub fn op_timeout(s: &Settings, file: Option<Duration>) -> Result<Option<Duration>, InputError> {
    match s.get(S::OpTimeout) {
        Some(g) => Ok(Some(workload::positive(g.duration()?, &g.name())?)),
        None => Ok(file),
    }
}

/// How many connections a second the clients open before the run, as given; `None`: the
/// engine's default for the number of clients ([`LoadPlan::connect_pace`]).
pub fn connect_rate(s: &Settings) -> Result<Option<f64>, InputError> {
    let Some(g) = s.get(S::ConnectRate) else {
        return Ok(None);
    };
    let rate = match &g.value {
        Value::Text(text) => {
            let text = text.trim();
            let number = text.strip_suffix("/s").unwrap_or(text).trim();
            number.parse::<f64>().map_err(|_| {
                g.error(format!(
                    "{} {text}: expected connections per second, like 2000/s",
                    g.name()
                ))
            })?
        }
        _ => g.number()?,
    };
    if !(rate.is_finite() && rate > 0.0) {
        return Err(g
            .error(format!(
                "{} {rate}: expected connections per second above 0",
                g.name()
            ))
            .help("for example --connect-rate 2000/s, or connect_rate = 2000 in [load]"));
    }
    Ok(Some(rate))
}

/// `connection`: `persistent` (the default) or `per-op`.
pub fn connection(s: &Settings) -> Result<Connection, InputError> {
    let Some(g) = s.get(S::Connection) else {
        return Ok(Connection::Persistent);
    };
    match g.text().as_str() {
        "persistent" => Ok(Connection::Persistent),
        "per-op" => Ok(Connection::PerOp),
        other => Err(g
            .error(format!(
                "{} {other}: expected persistent or per-op",
                g.name()
            ))
            .help("per-op opens (and authenticates) a new connection inside every operation")),
    }
}

/// `client_slice`: the slice the client threads will run with, when this kernel takes the
/// request ([`slice::takes`]); `None` for `kernel` or a kernel without custom slices.
pub fn client_slice(s: &Settings) -> Result<Option<Duration>, InputError> {
    let Some(g) = s.get(S::ClientSlice) else {
        return Ok(slice::takes(slice::DEFAULT).then_some(slice::DEFAULT));
    };
    let text = g.text();
    let text = text.trim();
    if text == "kernel" {
        return Ok(None);
    }
    let asked = g.duration()?;
    if !(slice::SHORTEST..=slice::LONGEST).contains(&asked) {
        return Err(g
            .error(format!(
                "{} {text}: the kernel takes slices from 100us to 100ms",
                g.name()
            ))
            .help("for example 100us, or kernel for the kernel's default"));
    }
    Ok(slice::takes(asked).then_some(asked))
}

/// `pipeline` P: 1 to [`MAX_COUNT`], with persistent connections, and no more client
/// streams in all than [`MAX_COUNT`]; 1 when not given.
pub fn pipeline(s: &Settings, plan: &LoadPlan) -> Result<usize, InputError> {
    let Some(g) = s.get(S::Pipeline) else {
        return Ok(1);
    };
    let p = checked_count(g)?;
    if p > 1 && !plan.stages.is_empty() && !plan.is_open() {
        return Err(g
            .error(format!(
                "{} {p} cannot be used with client stages: a stage adds and removes whole clients, not the streams of a shared connection",
                g.name()
            ))
            .help("run client stages with --pipeline 1, or give the stages rates (an open loop pipelines)"));
    }
    if p > 1 && plan.connection == Connection::PerOp {
        return Err(g
            .error(format!(
                "{} {p} cannot be used with --connection per-op: an operation that opens its own connection has nothing to share it with",
                g.name()
            ))
            .help("drop one of them"));
    }
    let streams = p.saturating_mul(plan.connections() as u64);
    if streams > MAX_COUNT {
        return Err(g
            .error(format!(
                "{} {p} with {} connections makes {streams} client streams; at most {MAX_COUNT}",
                g.name(),
                plan.connections()
            ))
            .help(format!(
                "fewer --clients (or --max-in-flight), or a smaller --pipeline; {BEYOND_ONE_RUN}"
            )));
    }
    Ok(p as usize)
}

/// `pipeline_refill`: how many of a connection's `p` streams are free before it writes
/// again, 1 to `p` (`each` is 1, `all` is `p`); 1 when not given.
pub fn pipeline_refill(s: &Settings, p: usize) -> Result<usize, InputError> {
    let Some(g) = s.get(S::PipelineRefill) else {
        return Ok(1);
    };
    let given = g.text();
    let n = match given.trim() {
        "each" => Some(1),
        "all" => Some(p as u64),
        text => text.parse().ok(),
    };
    match n {
        Some(n) if (1..=p as u64).contains(&n) => Ok(n as usize),
        _ => Err(g
            .error(format!(
                "{} {given}: expected each, all, or a number of streams from 1 to the pipeline's {p}",
                g.name()
            ))
            .help("for example --pipeline 16 --pipeline-refill all, or pipeline_refill = \"all\" in [load]")),
    }
}

/// `threads`: a count, or `per-client` (a thread for each of the `connections`, up to
/// [`THREAD_PER_CONNECTION_MAX`]); one per core when not given.
pub fn threads(s: &Settings, connections: usize) -> Result<usize, InputError> {
    let Some(g) = s.get(S::Threads) else {
        return Ok(std::thread::available_parallelism().map_or(1, |n| n.get()));
    };
    if let Value::Count(_) = g.value {
        return Ok(checked_count(g)? as usize);
    }
    let text = g.text();
    let text = text.trim();
    if text == "per-client" {
        return Ok(connections.clamp(1, THREAD_PER_CONNECTION_MAX));
    }
    match text.parse::<u64>() {
        Ok(n) => Ok(checked_count(&g.clone().map(|_| Value::Count(n)))? as usize),
        Err(_) => Err(g
            .error(format!(
                "{} {text}: expected a number of threads or per-client",
                g.name()
            ))
            .help("per-client gives each connection a thread of its own (up to 256)")),
    }
}

/// `observe`: on or off as given; None leaves it to the target (on for SQL and LDAP targets).
pub fn observe(s: &Settings) -> Result<Option<bool>, InputError> {
    let Some(g) = s.get(S::Observe) else {
        return Ok(None);
    };
    match g.text().trim() {
        "on" | "true" => Ok(Some(true)),
        "off" | "false" => Ok(Some(false)),
        other => Err(g
            .error(format!("{} {other}: expected on or off", g.name()))
            .help("--observe off runs without observing the server; observe = false in [load]")),
    }
}

/// `observe_rate`: active-session samples per second, from 0 (none) to 1000.
pub fn observe_rate(s: &Settings) -> Result<Option<f64>, InputError> {
    let Some(g) = s.get(S::ObserveRate) else {
        return Ok(None);
    };
    let rate = match &g.value {
        Value::Text(text) => {
            let text = text.trim();
            let number = text.strip_suffix("/s").unwrap_or(text).trim();
            number.parse::<f64>().map_err(|_| {
                g.error(format!(
                    "{} {text}: expected samples per second, like 10/s",
                    g.name()
                ))
            })?
        }
        _ => g.number()?,
    };
    if !(rate.is_finite() && (0.0..=1000.0).contains(&rate)) {
        return Err(g
            .error(format!(
                "{} {rate}: expected samples per second from 0 (none) to 1000",
                g.name()
            ))
            .help("for example --observe-rate 20/s, or observe_rate = 20 in [load]"));
    }
    Ok(Some(rate))
}

/// `observe_behind`: a URL (`${VAR}` expanded); the observer's check reads it before the run.
pub fn observe_behind(s: &Settings) -> Result<Option<String>, InputError> {
    let Some(g) = s.get(S::ObserveBehind) else {
        return Ok(None);
    };
    crate::targets::expand_env(g.text().trim())
        .map(Some)
        .map_err(|e| g.place(e))
}

/// `seed`, if given.
pub fn seed(s: &Settings) -> Result<Option<u64>, InputError> {
    s.get(S::Seed).map(Given::count).transpose()
}

/// A count of clients, in-flight operations or threads: 1 to 10,000, refused by the
/// setting's name (at its place in the file).
fn checked_count(g: &Given<Value>) -> Result<u64, InputError> {
    let n = g.count()?;
    check_count(n, &g.name()).map_err(|e| InputError {
        help: e.help,
        ..g.error(e.message)
    })?;
    Ok(n)
}

/// A count of clients, in-flight operations or threads: 1 to 10,000.
fn check_count(n: u64, flag: &str) -> Result<(), InputError> {
    if n == 0 {
        return Err(InputError::new(format!(
            "{flag} {n}: expected 1 to {MAX_COUNT}"
        )));
    }
    if n > MAX_COUNT {
        return Err(
            InputError::new(format!("{flag} {n}: expected 1 to {MAX_COUNT}")).help(BEYOND_ONE_RUN),
        );
    }
    Ok(())
}
