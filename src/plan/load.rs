//! The load of a run from the flags and the workload's `[load]`: a flag wins over the file;
//! the stop conditions of the flags replace the file's as a whole. Every value is checked
//! here and reported at its flag or its place in the file.

use std::time::{Duration, SystemTime};

use super::given::{pick, Given};
use super::shard;
use crate::cli::RunArgs;
use crate::duration;
use crate::engine::{slice, Arrivals, Connection, LoadPlan, Mode, THREAD_PER_CONNECTION_MAX};
use crate::error::InputError;
use crate::workload::{self, LoadSection, Refill, Source, ThreadCount};

/// Open loop: a start later than this against the schedule counts as late.
pub const DEFAULT_LATE_AFTER: Duration = Duration::from_millis(1);
/// The reporting interval when neither flag nor file sets one.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// How long a run lasts when nothing says when to stop.
const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// The most clients, in-flight operations or threads one run may have.
const MAX_COUNT: u64 = 10_000;

/// The resolved load of `args` over the workload's `[load]` section.
pub fn resolve_load(
    args: &RunArgs,
    load: &LoadSection,
    op_timeout: Option<Duration>,
    source: &Source<'_>,
) -> Result<LoadPlan, InputError> {
    let open = is_open(args, load, source)?;
    let interval = pick_duration(
        args.interval.as_ref(),
        "--interval",
        load.interval.as_ref(),
        "interval",
        source,
    )?;
    let interval = match interval {
        Some(g) if g.value < Duration::from_millis(1) => {
            return Err(g
                .error("the interval must be at least 1ms")
                .help("for example --interval 1s"))
        }
        Some(g) => g.value,
        None => DEFAULT_INTERVAL,
    };
    // `--warmup auto` runs without one; the runner cuts it afterwards.
    let warmup = if warmup_is_auto(args) {
        Duration::ZERO
    } else {
        pick_duration(
            args.warmup.as_ref(),
            "--warmup",
            load.warmup.as_ref(),
            "warmup",
            source,
        )?
        .map_or(Duration::ZERO, |g| g.value)
    };
    let Stop {
        duration,
        ops,
        samples,
    } = stop_conditions(args, load, interval, source)?;
    let mode = if open {
        open_from(args, load, source)?
    } else {
        closed_from(args, load, source)?
    };
    let seed = pick(
        args.seed.as_ref(),
        "--seed",
        load.seed.as_ref(),
        "seed",
        source,
    )
    .map(|g| g.value);
    let op_timeout = match &args.op_timeout {
        Some(t) => Some(workload::positive(
            duration::parse(t, "--op-timeout")?,
            "--op-timeout",
        )?),
        None => op_timeout,
    };
    let threads = pick(
        args.threads.clone().map(ThreadCount::Word).as_ref(),
        "--threads",
        load.threads.as_ref(),
        "threads",
        source,
    );
    let connect_rate = connect_rate(args, load, source)?;
    let pipeline = pick(
        args.pipeline.as_ref(),
        "--pipeline",
        load.pipeline.as_ref(),
        "pipeline",
        source,
    );
    let mut plan = LoadPlan {
        mode,
        duration,
        ops,
        samples,
        interval,
        warmup,
        seed: 0,
        connection: connection(args, load, source)?,
        op_timeout,
        threads: 0,
        shard: None,
        start_at: None,
        connect_rate,
        pipeline: 1,
        pipeline_refill: 1,
        client_slice: client_slice(args, load, source)?,
    };
    if let Some(g) = pipeline {
        plan.pipeline = checked_pipeline(g, &plan)? as usize;
    }
    let refill = pick(
        args.pipeline_refill.clone().map(Refill::Word).as_ref(),
        "--pipeline-refill",
        load.pipeline_refill.as_ref(),
        "pipeline_refill",
        source,
    );
    if let Some(g) = refill {
        plan.pipeline_refill = pipeline_refill(g, plan.pipeline)?;
    }
    if let Some(text) = &args.shard {
        if warmup_is_auto(args) {
            return Err(InputError::new(
                "--warmup auto cannot be used with --shard: each shard would cut a warm-up of its own",
            )
            .help("give every shard the same --warmup DURATION"));
        }
        shard::apply_shard(&mut plan, shard::parse_shard(text)?)?;
    }
    // After the shard's share: a thread per connection counts this shard's connections.
    plan.threads = match threads {
        Some(g) => thread_count(g, plan.connections())?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if let Some(text) = &args.start_at {
        plan.start_at = Some(shard::parse_start_at(text, interval, SystemTime::now())?);
    }
    // Without a seed, shards take the one they share: the agreed start.
    plan.seed = match (seed, plan.shard, plan.start_at) {
        (Some(seed), _, _) => seed,
        (None, Some(_), Some(at)) => at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        (None, _, _) => time_seed(),
    };
    Ok(plan)
}

/// `--client-slice` or `[load] client_slice`: the slice the client threads will run with,
/// when this kernel takes the request ([`slice::takes`]); `None` for `kernel` or a kernel
/// without custom slices.
fn client_slice(
    args: &RunArgs,
    load: &LoadSection,
    source: &Source<'_>,
) -> Result<Option<Duration>, InputError> {
    let Some(g) = pick(
        args.client_slice.as_ref(),
        "--client-slice",
        load.client_slice.as_ref(),
        "client_slice",
        source,
    ) else {
        return Ok(slice::takes(slice::DEFAULT).then_some(slice::DEFAULT));
    };
    let text = g.value.trim();
    if text == "kernel" {
        return Ok(None);
    }
    let asked = duration::parse(text, &g.name()).map_err(|e| InputError {
        help: e.help,
        ..g.error(e.message)
    })?;
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

/// How many connections a second the clients open before the run, as given; `None`: the
/// engine's default for the number of clients ([`LoadPlan::connect_pace`]).
fn connect_rate(
    args: &RunArgs,
    load: &LoadSection,
    source: &Source<'_>,
) -> Result<Option<f64>, InputError> {
    let flag = match args.connect_rate.as_deref() {
        Some(text) => {
            let text = text.trim();
            let number = text.strip_suffix("/s").unwrap_or(text).trim();
            Some(number.parse::<f64>().map_err(|_| {
                InputError::new(format!(
                    "--connect-rate {text}: expected connections per second, like 2000/s"
                ))
            })?)
        }
        None => None,
    };
    let given = pick(
        flag.as_ref(),
        "--connect-rate",
        load.connect_rate.as_ref(),
        "connect_rate",
        source,
    );
    match given {
        Some(g) if !(g.value.is_finite() && g.value > 0.0) => Err(g
            .error(format!(
                "{} {}: expected connections per second above 0",
                g.name(),
                g.value
            ))
            .help("for example --connect-rate 2000/s, or connect_rate = 2000 in [load]")),
        Some(g) => Ok(Some(g.value)),
        None => Ok(None),
    }
}

/// `--pipeline P`: 1 to [`MAX_COUNT`], with persistent connections, and no more client
/// streams in all than [`MAX_COUNT`].
fn checked_pipeline(g: Given<u64>, plan: &LoadPlan) -> Result<u64, InputError> {
    let p = checked_count(g.clone())?;
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
    Ok(p)
}

/// `--pipeline-refill`: how many of a connection's `p` streams are free before it writes
/// again, 1 to `p` (`each` is 1, `all` is `p`).
fn pipeline_refill(g: Given<Refill>, p: usize) -> Result<usize, InputError> {
    let n = match &g.value {
        Refill::Streams(n) => Some(*n),
        Refill::Word(w) => match w.trim() {
            "each" => Some(1),
            "all" => Some(p as u64),
            text => text.parse().ok(),
        },
    };
    match n {
        Some(n) if (1..=p as u64).contains(&n) => Ok(n as usize),
        _ => {
            let given = match &g.value {
                Refill::Streams(n) => n.to_string(),
                Refill::Word(w) => w.clone(),
            };
            Err(g
                .error(format!(
                    "{} {given}: expected each, all, or a number of streams from 1 to the pipeline's {p}",
                    g.name()
                ))
                .help("for example --pipeline 16 --pipeline-refill all, or pipeline_refill = \"all\" in [load]"))
        }
    }
}

/// `--warmup auto`: the warm-up is found after the run (MSER-5) instead of given.
pub fn warmup_is_auto(args: &RunArgs) -> bool {
    args.warmup
        .as_deref()
        .is_some_and(|w| w.trim().eq_ignore_ascii_case("auto"))
}

/// Whether the run is an open loop, after refusing flags that belong to the other kind.
fn is_open(args: &RunArgs, load: &LoadSection, source: &Source<'_>) -> Result<bool, InputError> {
    if args.rate.is_some() && args.clients.is_some() {
        return Err(InputError::new("--rate and --clients cannot be used together")
            .help("--clients N runs a closed loop (N clients back to back); --rate R runs an open loop, whose concurrency is set with --max-in-flight"));
    }
    let flags_choose = args.rate.is_some() || args.clients.is_some();
    if let (Some(rate), Some(_), false) = (&load.rate, &load.clients, flags_choose) {
        return Err(InputError::new("[load] sets both rate and clients")
            .at(source.at(rate.span().start))
            .help(
                "keep clients for a closed loop, or rate (with max_in_flight) for an open loop",
            ));
    }
    let open = args.rate.is_some() || (args.clients.is_none() && load.rate.is_some());
    let misplaced = if open {
        [(
            args.think_time.is_some(),
            "--think-time applies to closed loops only",
            "an open loop starts operations on its schedule; drop --think-time or use --clients",
        )]
        .to_vec()
    } else {
        vec![
            (
                args.max_in_flight.is_some(),
                "--max-in-flight applies to open loops only",
                "add --rate R, or use --clients N for a closed loop",
            ),
            (
                args.arrivals.is_some(),
                "--arrivals applies to open loops only",
                "add --rate R",
            ),
            (
                args.late_after.is_some(),
                "--late-after applies to open loops only",
                "add --rate R",
            ),
        ]
    };
    match misplaced.into_iter().find(|(given, _, _)| *given) {
        Some((_, message, help)) => Err(InputError::new(message).help(help)),
        None => Ok(open),
    }
}

/// When a run stops: after a time, after a count of operations (whichever comes first), or
/// after exactly `samples` intervals.
struct Stop {
    duration: Option<Duration>,
    ops: Option<u64>,
    samples: Option<u64>,
}

/// `--duration`, `--ops`, `--samples`: the flags replace the file's as a whole. `--samples
/// K` sets the duration to K intervals; nothing at all runs for 10 s.
fn stop_conditions(
    args: &RunArgs,
    load: &LoadSection,
    interval: Duration,
    source: &Source<'_>,
) -> Result<Stop, InputError> {
    let flags = args.duration.is_some() || args.ops.is_some() || args.samples.is_some();
    let (duration, ops, samples) = if flags {
        (
            pick_duration(args.duration.as_ref(), "--duration", None, "", source)?,
            args.ops.map(|n| Given::flag(n, "--ops")),
            args.samples.map(|k| Given::flag(k, "--samples")),
        )
    } else {
        let file = |v: &Option<toml::Spanned<u64>>, field| {
            v.as_ref()
                .map(|s| Given::file(*s.get_ref(), field, s.span(), source))
        };
        let ops = load
            .ops
            .as_ref()
            .map(|s| Given::file(s.get_ref().value(), "ops", s.span(), source));
        (
            pick_duration(None, "", load.duration.as_ref(), "duration", source)?,
            ops,
            file(&load.samples, "samples"),
        )
    };
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

fn closed_from(
    args: &RunArgs,
    load: &LoadSection,
    source: &Source<'_>,
) -> Result<Mode, InputError> {
    let think = pick_duration(
        args.think_time.as_ref(),
        "--think-time",
        load.think_time.as_ref(),
        "think_time",
        source,
    )?
    .map_or(Duration::ZERO, |g| g.value);
    let clients = pick(
        args.clients.as_ref(),
        "--clients",
        load.clients.as_ref(),
        "clients",
        source,
    );
    Ok(Mode::Closed {
        clients: clients.map_or(Ok(1), checked_count)? as usize,
        think,
    })
}

fn open_from(args: &RunArgs, load: &LoadSection, source: &Source<'_>) -> Result<Mode, InputError> {
    let rate = pick(
        args.rate.as_ref(),
        "--rate",
        load.rate.as_ref(),
        "rate",
        source,
    )
    .ok_or_else(|| InputError::new("an open loop needs a rate"))?;
    let arrivals = match pick(
        args.arrivals.as_ref(),
        "--arrivals",
        load.arrivals.as_ref(),
        "arrivals",
        source,
    ) {
        None => Arrivals::Constant,
        Some(g) => match g.value.as_str() {
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
    // The concurrency of an open loop: --max-in-flight, or the file's max_in_flight, or
    // its clients (a closed-loop workload run with --rate keeps its concurrency).
    let workers = pick(
        args.max_in_flight.as_ref(),
        "--max-in-flight",
        load.max_in_flight.as_ref(),
        "max_in_flight",
        source,
    )
    .or_else(|| pick(None, "", load.clients.as_ref(), "clients", source));
    let workers = workers.map_or(Ok(1), checked_count)?;
    let late_after = match &args.late_after {
        Some(t) => duration::parse(t, "--late-after")?,
        None => DEFAULT_LATE_AFTER,
    };
    check_rate(&rate)?;
    open_mode(rate.value, arrivals, workers, late_after)
}

fn check_rate(rate: &Given<f64>) -> Result<(), InputError> {
    if !(rate.value > 0.0 && rate.value.is_finite()) {
        return Err(rate.error(format!(
            "{} {}: expected operations per second above zero",
            rate.name(),
            rate.value
        )));
    }
    Ok(())
}

/// An open loop at `rate` with `workers` in flight, checked.
pub fn open_mode(
    rate: f64,
    arrivals: Arrivals,
    workers: u64,
    late_after: Duration,
) -> Result<Mode, InputError> {
    check_rate(&Given::flag(rate, "--rate"))?;
    check_count(workers, "--max-in-flight")?;
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

fn connection(
    args: &RunArgs,
    load: &LoadSection,
    source: &Source<'_>,
) -> Result<Connection, InputError> {
    let Some(g) = pick(
        args.connection.as_ref(),
        "--connection",
        load.connection.as_ref(),
        "connection",
        source,
    ) else {
        return Ok(Connection::Persistent);
    };
    match g.value.as_str() {
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

/// A duration from a flag, or else from the file (errors at its position).
fn pick_duration(
    flag: Option<&String>,
    flag_name: &'static str,
    field: Option<&toml::Spanned<String>>,
    field_name: &'static str,
    source: &Source<'_>,
) -> Result<Option<Given<Duration>>, InputError> {
    let Some(text) = pick(flag, flag_name, field, field_name, source) else {
        return Ok(None);
    };
    match duration::parse(&text.value, &text.name()) {
        Ok(d) => Ok(Some(text.map(|_| d))),
        Err(e) if text.is_flag() => Err(e),
        Err(e) => Err(InputError {
            location: text.error("").location,
            ..e
        }),
    }
}

/// A count of clients, in-flight operations or threads: 1 to 10,000.
pub fn check_count(n: u64, flag: &str) -> Result<(), InputError> {
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

/// Why a run stops at [`MAX_COUNT`], and where more load comes from.
const BEYOND_ONE_RUN: &str = "one run keeps at most 10,000 clients (or client streams, in-flight operations, threads), each with its own connection, counters and fairness figures; for more load, run shards in several processes or machines (--shard I/N, docs/distributed.md) and merge them";

fn checked_count(g: Given<u64>) -> Result<u64, InputError> {
    check_count(g.value, &g.name()).map_err(|e| InputError {
        help: e.help,
        ..g.error(e.message)
    })?;
    Ok(g.value)
}

/// `--threads` or `[load] threads`: a count, or `per-client` (a thread for each of the
/// `connections`, up to [`THREAD_PER_CONNECTION_MAX`]).
fn thread_count(g: Given<ThreadCount>, connections: usize) -> Result<usize, InputError> {
    let text = match &g.value {
        ThreadCount::Number(n) => return Ok(checked_count(g.clone().map(|_| *n))? as usize),
        ThreadCount::Word(w) => w.trim(),
    };
    if text == "per-client" {
        return Ok(connections.clamp(1, THREAD_PER_CONNECTION_MAX));
    }
    match text.parse::<u64>() {
        Ok(n) => Ok(checked_count(g.map(|_| n))? as usize),
        Err(_) => Err(g
            .error(format!(
                "{} {text}: expected a number of threads or per-client",
                g.name()
            ))
            .help("per-client gives each connection a thread of its own (up to 256)")),
    }
}

/// A seed from the clock, when none is given: every run differs unless asked not to.
fn time_seed() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
