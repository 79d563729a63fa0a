//! The glue between the command line and the library: resolve flags against the workload,
//! validate everything before anything is written, pick the target type, run, write.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use std::io::IsTerminal;

use crate::cli::RunArgs;
use crate::engine::{self, Connection, LoadPlan, Mode, Slots};
use crate::error::InputError;
use crate::report::console::{self, Live};
use crate::report::host;
use crate::report::result::{self, DataLoadRecord, OpResult, RunResult, TargetRecord};
use crate::spec::{
    self, builtin, duration, LoadSection, NativeOp, OpKind, OpSpec, Source, Workload,
};
use crate::stats::OpCounters;
use crate::targets::{
    self, fs::Fs, http::Http, ldap::Ldap, noop::Noop, redact, redis::Redis, sleep::Sleep,
    sqlite::Sqlite, Target, TargetUrl,
};

/// Everything `run` resolved, ready to execute.
struct RunSetup {
    workload: Workload,
    ops: Vec<OpSpec>,
    plan: LoadPlan,
    target_url: String,
    out: PathBuf,
    skip_load: bool,
}

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let (source_name, text) = builtin::resolve(&args.workload)?;
    let source = Source {
        path: &source_name,
        text: &text,
    };
    let workload = spec::compile(&source, &args.set)?;
    let ops = select_ops(&workload, &args.only_ops)?;
    let plan = resolve_plan(args, &workload.load, &source)?;
    let target_text = match (&args.target, &workload.target) {
        (Some(t), _) | (None, Some(t)) => t.clone(),
        (None, None) => {
            return Err(InputError::new(
                "no target: the workload names none and --target was not given",
            )
            .help("add --target sqlite://./bench.db (or fs://DIR, noop://, sleep://?latency=1ms)")
            .into())
        }
    };
    let target_url = expand_env(&target_text)?;
    let url = TargetUrl::parse(&target_url)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&workload.name));
    let setup = RunSetup {
        ops,
        plan,
        target_url,
        out,
        skip_load: args.skip_load,
        workload,
    };
    match url.scheme.as_str() {
        "noop" => execute(Noop::open(&url)?, setup),
        "sleep" => execute(Sleep::open(&url)?, setup),
        "sqlite" => execute(Sqlite::open(&url)?, setup),
        "fs" => execute(Fs::open(&url, &setup.workload.params)?, setup),
        "redis" => execute(Redis::open(&url)?, setup),
        "http" => execute(Http::open(&url, &setup.workload.params)?, setup),
        "ldap" => execute(Ldap::open(&url, &setup.workload.params)?, setup),
        other => Err(unknown_scheme(other).into()),
    }
}

/// `loadrig cleanup --target URL`: drop loadrig's namespace on the target, nothing else.
pub fn cleanup(target: &str) -> Result<ExitCode> {
    let url = TargetUrl::parse(&expand_env(target)?)?;
    let no_params = Default::default();
    let shown = redact(target);
    let removed = match url.scheme.as_str() {
        "noop" => engine::cleanup(&Noop::open(&url)?),
        "sleep" => engine::cleanup(&Sleep::open(&url)?),
        "sqlite" => engine::cleanup(&Sqlite::open(&url)?),
        "fs" => engine::cleanup(&Fs::open(&url, &no_params)?),
        "redis" => engine::cleanup(&Redis::open(&url)?),
        "http" => engine::cleanup(&Http::open(&url, &no_params)?),
        "ldap" => engine::cleanup(&Ldap::open(&url, &no_params)?),
        other => return Err(unknown_scheme(other).into()),
    }
    .with_context(|| format!("target {shown}"))?;
    println!(
        "removed {} loadrig object(s) from {shown}",
        console::thousands(removed)
    );
    Ok(ExitCode::SUCCESS)
}

fn unknown_scheme(scheme: &str) -> InputError {
    InputError::new(format!("unknown target scheme '{scheme}://'")).help(format!(
        "known targets: {}",
        targets::SCHEMES
            .iter()
            .map(|(s, _)| s.split("://").next().unwrap_or(s))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

pub fn list() -> Result<ExitCode> {
    println!("Built-in workloads (loadrig run NAME; loadrig init NAME > my.toml):");
    for (name, text) in builtin::BUILTIN {
        let source = Source { path: name, text };
        let description = spec::compile(&source, &[])
            .map(|w| w.description)
            .unwrap_or_default();
        println!("  {name:<16} {description}");
    }
    println!("\nTargets (--target URL):");
    for (scheme, what) in targets::SCHEMES {
        println!("  {scheme:<44} {what}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn init(name: &str) -> Result<ExitCode> {
    let text = builtin::text(name).ok_or_else(|| {
        InputError::new(format!("no built-in workload named '{name}'")).help(format!(
            "built-in workloads: {}",
            builtin::BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn select_ops(workload: &Workload, only: &[String]) -> Result<Vec<OpSpec>, InputError> {
    if only.is_empty() {
        return Ok(workload.ops.clone());
    }
    let mut ops = Vec::new();
    for name in only {
        match workload.ops.iter().find(|o| &o.name == name) {
            Some(op) => ops.push(op.clone()),
            None => {
                return Err(InputError::new(format!(
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
                )))
            }
        }
    }
    Ok(ops)
}

/// A duration from a flag, or else from the workload's `[load]` (with its position).
fn pick_duration(
    flag: &Option<String>,
    flag_name: &str,
    field: &Option<toml::Spanned<String>>,
    field_name: &str,
    source: &Source<'_>,
) -> Result<Option<Duration>, InputError> {
    if let Some(text) = flag {
        return duration::parse(text, flag_name).map(Some);
    }
    match field {
        Some(s) => duration::parse(s.get_ref(), &format!("[load] {field_name}"))
            .map(Some)
            .map_err(|e| InputError {
                location: Some(source.at(s.span().start)),
                ..e
            }),
        None => Ok(None),
    }
}

fn resolve_plan(
    args: &RunArgs,
    load: &LoadSection,
    source: &Source<'_>,
) -> Result<LoadPlan, InputError> {
    if args.rate.is_some() && args.clients.is_some() {
        return Err(InputError::new("--rate and --clients cannot be used together")
            .help("--clients N runs a closed loop (N clients back to back); --rate R runs an open loop, whose concurrency is set with --max-in-flight"));
    }
    if load.rate.is_some()
        && load.clients.is_some()
        && args.rate.is_none()
        && args.clients.is_none()
    {
        return Err(InputError::new("[load] sets both rate and clients")
            .at(source.path.to_string())
            .help(
                "keep clients for a closed loop, or rate (with max_in_flight) for an open loop",
            ));
    }
    let rate = args.rate.or(if args.clients.is_some() {
        None
    } else {
        load.rate
    });
    let open = rate.is_some();
    if !open {
        if args.max_in_flight.is_some() {
            return Err(
                InputError::new("--max-in-flight applies to open loops only")
                    .help("add --rate R, or use --clients N for a closed loop"),
            );
        }
        if args.arrivals.is_some() {
            return Err(
                InputError::new("--arrivals applies to open loops only").help("add --rate R")
            );
        }
        if args.late_after.is_some() {
            return Err(
                InputError::new("--late-after applies to open loops only").help("add --rate R")
            );
        }
    } else if args.think_time.is_some() {
        return Err(InputError::new("--think-time applies to closed loops only")
            .help("an open loop starts operations on its schedule; drop --think-time or use --clients"));
    }

    let think = pick_duration(
        &args.think_time,
        "--think-time",
        &load.think_time,
        "think_time",
        source,
    )?
    .unwrap_or_default();
    let interval = pick_duration(
        &args.interval,
        "--interval",
        &load.interval,
        "interval",
        source,
    )?
    .unwrap_or(Duration::from_secs(1));
    if interval < Duration::from_millis(1) {
        return Err(
            InputError::new("the interval must be at least 1ms").help("for example --interval 1s")
        );
    }
    let warmup = pick_duration(&args.warmup, "--warmup", &load.warmup, "warmup", source)?
        .unwrap_or_default();

    // Stop conditions: flags replace the workload's as a whole.
    let flag_stop = args.duration.is_some() || args.ops.is_some() || args.samples.is_some();
    let (duration_v, ops, samples) = if flag_stop {
        (
            pick_duration(&args.duration, "--duration", &None, "", source)?,
            args.ops,
            args.samples,
        )
    } else {
        (
            pick_duration(&None, "", &load.duration, "duration", source)?,
            load.ops,
            load.samples,
        )
    };
    if samples.is_some() && duration_v.is_some() {
        return Err(InputError::new("--samples and --duration cannot be used together")
            .help("--samples K --interval T runs exactly K intervals of length T; --duration sets the length directly"));
    }
    if samples.is_some() && ops.is_some() {
        return Err(
            InputError::new("--samples and --ops cannot be used together")
                .help("choose one stop condition"),
        );
    }
    if samples == Some(0) || ops == Some(0) {
        return Err(InputError::new("--samples and --ops must be at least 1"));
    }
    if duration_v.is_some_and(|d| d.is_zero()) {
        return Err(
            InputError::new("--duration must be above zero").help("for example --duration 30s")
        );
    }
    let duration_v = match (samples, duration_v, ops) {
        (Some(k), _, _) => Some(interval * k.min(u32::MAX as u64) as u32),
        (None, None, None) => Some(Duration::from_secs(10)),
        (None, d, _) => d,
    };

    let seed = args.seed.or(load.seed).unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });

    let mode = if let Some(rate) = rate {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(InputError::new(format!(
                "--rate {rate}: expected operations per second above zero"
            )));
        }
        let arrivals = args
            .arrivals
            .clone()
            .or(load.arrivals.as_ref().map(|a| a.get_ref().clone()));
        let poisson = match arrivals.as_deref() {
            None | Some("constant") => false,
            Some("poisson") => true,
            Some(other) => {
                return Err(InputError::new(format!(
                    "--arrivals {other}: expected constant or poisson"
                )))
            }
        };
        let workers = args
            .max_in_flight
            .or(load.max_in_flight)
            .or(load.clients)
            .unwrap_or(1);
        check_clients(workers, "--max-in-flight")?;
        if rate / (workers as f64) < 1e-3 {
            return Err(InputError::new(format!("--rate {rate} spread over {workers} in flight is under one operation per 1000 s each")).help("lower --max-in-flight"));
        }
        let late_after = match &args.late_after {
            Some(t) => duration::parse(t, "--late-after")?,
            None => Duration::from_millis(1),
        };
        Mode::Open {
            rate,
            poisson,
            workers: workers as usize,
            late_after,
        }
    } else {
        let clients = args.clients.or(load.clients).unwrap_or(1);
        check_clients(clients, "--clients")?;
        Mode::Closed {
            clients: clients as usize,
            think,
        }
    };
    let connection = match args
        .connection
        .clone()
        .or(load.connection.as_ref().map(|c| c.get_ref().clone()))
        .as_deref()
    {
        None | Some("persistent") => Connection::Persistent,
        Some("per-op") => Connection::PerOp,
        Some(other) => {
            return Err(InputError::new(format!(
                "--connection {other}: expected persistent or per-op"
            ))
            .help("per-op opens (and authenticates) a new connection inside every operation"))
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let threads = args.threads.or(load.threads).unwrap_or(cores);
    check_clients(threads, "--threads")?;
    Ok(LoadPlan {
        mode,
        duration: duration_v,
        ops,
        samples,
        interval,
        warmup,
        seed,
        connection,
        threads: threads as usize,
    })
}

fn check_clients(n: u64, flag: &str) -> Result<(), InputError> {
    if n == 0 || n > 10_000 {
        return Err(InputError::new(format!("{flag} {n}: expected 1 to 10000")));
    }
    Ok(())
}

/// Replace `${VAR}` with the environment variable VAR (credentials stay out of files).
pub fn expand_env(text: &str) -> Result<String, InputError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find('}') else {
            return Err(InputError::new(format!(
                "unclosed '${{' in target '{}'",
                redact(text)
            )));
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = std::env::var(name).map_err(|_| {
            InputError::new(format!(
                "the target refers to ${{{name}}}, which is not set"
            ))
            .help(format!("export {name}=... first"))
        })?;
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

fn default_out(workload: &str) -> PathBuf {
    let stamp: String = humantime::format_rfc3339_millis(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name: String = workload
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("loadrig-results").join(format!("{stamp}-{name}.json"))
}

fn install_ctrl_c() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if engine::INTERRUPTED.swap(true, Ordering::SeqCst) {
                // A second Ctrl-C: the user wants out now.
                std::process::exit(130);
            }
        });
    });
}

fn describe(plan: &LoadPlan) -> String {
    let stop = match (plan.samples, plan.duration, plan.ops) {
        (Some(k), _, _) => format!(
            "{k} intervals of {}",
            humantime::format_duration(plan.interval)
        ),
        (None, Some(d), Some(n)) => format!("{} or {n} ops", humantime::format_duration(d)),
        (None, Some(d), None) => format!("{}", humantime::format_duration(d)),
        (None, None, Some(n)) => format!("{n} ops"),
        (None, None, None) => String::new(),
    };
    let warm = if plan.warmup.is_zero() {
        String::new()
    } else {
        format!(" after {} warm-up", humantime::format_duration(plan.warmup))
    };
    match plan.mode {
        Mode::Closed { clients, think } => format!(
            "closed loop, {clients} client{}{}, {stop}{warm}",
            if clients == 1 { "" } else { "s" },
            if think.is_zero() {
                String::new()
            } else {
                format!(", think {}", humantime::format_duration(think))
            }
        ),
        Mode::Open {
            rate,
            poisson,
            workers,
            ..
        } => format!(
            "open loop, {rate} ops/s {}, up to {workers} in flight, {stop}{warm}",
            if poisson { "Poisson" } else { "constant" }
        ),
    }
}

fn execute<T: Target>(target: T, setup: RunSetup) -> Result<ExitCode> {
    install_ctrl_c();
    engine::INTERRUPTED.store(false, Ordering::SeqCst);
    let RunSetup {
        workload,
        ops,
        plan,
        target_url,
        out,
        skip_load,
    } = setup;
    let shown_url = redact(&target_url);
    let kind = target_url.split("://").next().unwrap_or("").to_string();
    let started_at = SystemTime::now();

    let data = if skip_load {
        None
    } else {
        workload.data.as_ref()
    };
    let bar = (data.is_some() && std::io::stderr().is_terminal())
        .then(|| ProgressBar::new(data.map_or(0, |d| d.count)));
    check_families(&ops, &workload.setup, target.families(), &kind)?;
    let prepared = engine::prepare(&target, &workload.setup, data, plan.seed, &mut |done, _| {
        if let Some(b) = &bar {
            b.set_position(done)
        }
    })
    .with_context(|| format!("target {shown_url}"))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    println!(
        "loadrig {}: {} on {} — {}",
        env!("CARGO_PKG_VERSION"),
        workload.name,
        shown_url,
        describe(&plan)
    );
    if let Some((n, t)) = prepared.loaded {
        println!(
            "loaded {} records in {:.2}s ({} records/s)",
            console::thousands(n),
            t.as_secs_f64(),
            console::thousands((n as f64 / t.as_secs_f64().max(1e-9)) as u64)
        );
    }

    let jsonl_path = out.with_extension("jsonl");
    if let Some(dir) = jsonl_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("could not create folder '{}'", dir.display()))?;
    }
    let jsonl = std::fs::File::create(&jsonl_path)
        .with_context(|| format!("could not create '{}'", jsonl_path.display()))?;
    let names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let total_time = plan.duration.map(|d| d + plan.warmup);
    let mut live = Live::new(names.clone(), total_time, Some(jsonl));
    let n_ops = ops.len();
    let data_run = engine::run(
        Arc::new(target),
        Arc::new(ops.clone()),
        &plan,
        Slots {
            seq: workload.seq_slots,
            capture: workload.capture_slots,
        },
        &mut live,
    )
    .with_context(|| format!("target {shown_url}"))?;
    live.finish();

    let measured_s = data_run.measured.as_secs_f64();
    let full: Vec<&engine::IntervalData> = data_run
        .intervals
        .iter()
        .filter(|i| !i.warmup && (i.end - i.start) >= plan.interval)
        .collect();
    let counts = |k: Option<usize>| -> Vec<f64> {
        full.iter()
            .map(|i| match k {
                Some(k) => i.ops[k].ok as f64,
                None => i.ops.iter().map(|c| c.ok).sum::<u64>() as f64,
            })
            .collect()
    };
    let operations: Vec<OpResult> = (0..n_ops)
        .map(|k| {
            OpResult::of(
                &names[k],
                &data_run.totals[k],
                measured_s,
                &counts(Some(k)),
                plan.is_open(),
            )
        })
        .collect();
    let mut all = OpCounters::default();
    for c in &data_run.totals {
        all.merge(c);
    }
    let total = OpResult::of("total", &all, measured_s, &counts(None), plan.is_open());

    let mut notes = Vec::new();
    if data_run.interrupted {
        notes.push("interrupted by Ctrl-C: the figures cover the run until then".to_string());
    }
    if data_run.abandoned > 0 {
        notes.push(format!("{} client(s) were still in an operation when the run ended; those operations are not counted", data_run.abandoned));
    }
    if data_run.missed > 0 {
        notes.push(format!("{} scheduled arrivals never started: the target (or --max-in-flight) could not keep up with the rate", data_run.missed));
    }
    if let (Some(late), true) = (total.late_starts, plan.is_open()) {
        if late > 0 {
            notes.push(format!("{late} operations started late against the schedule; their waiting is in the latency figures"));
        }
    }

    let result = RunResult {
        schema_version: result::SCHEMA_VERSION,
        loadrig_version: env!("CARGO_PKG_VERSION").to_string(),
        status: if data_run.interrupted {
            "interrupted"
        } else {
            "complete"
        }
        .to_string(),
        workload: workload_record(&workload, &ops),
        load: serde_json::to_value(&plan)?,
        target: TargetRecord {
            url: shown_url,
            kind,
            server_version: prepared.server_version,
        },
        host: host::facts(),
        started_at: humantime::format_rfc3339_millis(started_at).to_string(),
        ended_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        elapsed_s: data_run.elapsed.as_secs_f64(),
        measured_s,
        data_load: match (&workload.data, prepared.loaded) {
            (_, Some((n, t))) => Some(DataLoadRecord {
                records: n,
                seconds: t.as_secs_f64(),
                records_per_s: n as f64 / t.as_secs_f64().max(1e-9),
                skipped: false,
            }),
            (Some(d), None) => Some(DataLoadRecord {
                records: d.count,
                seconds: 0.0,
                records_per_s: 0.0,
                skipped: true,
            }),
            (None, None) => None,
        },
        missed_starts: data_run.missed,
        abandoned_clients: data_run.abandoned,
        operations,
        total,
        intervals: data_run
            .intervals
            .iter()
            .map(|i| result::IntervalRecord::of(i, &names))
            .collect(),
        notes,
    };
    let bytes = serde_json::to_vec_pretty(&result)?;
    result::write_atomic(&out, &bytes)?;
    print!("{}", console::summary(&result));
    println!("result: {}", out.display());
    Ok(if data_run.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn native_record(op: &NativeOp) -> serde_json::Value {
    let args: Vec<&str> = op.templates().iter().map(|t| t.source()).collect();
    match op {
        NativeOp::Sql { query, .. } => serde_json::json!({"sql": query, "params": args}),
        _ => serde_json::json!({"kind": op.label(), "args": args}),
    }
}

fn workload_record(w: &Workload, ops: &[OpSpec]) -> serde_json::Value {
    let args = |k: &OpKind| -> serde_json::Value {
        match k {
            OpKind::Nop | OpKind::Connect | OpKind::Authenticate => serde_json::json!({}),
            OpKind::Put { key, value } | OpKind::Update { key, value } => {
                serde_json::json!({"key": key.source(), "value": value.source()})
            }
            OpKind::Get { key } | OpKind::Delete { key } => {
                serde_json::json!({"key": key.source()})
            }
            OpKind::Native(step) => native_record(&step.op),
            OpKind::Tx(steps) => {
                serde_json::json!({"steps": steps.iter().map(|s| native_record(&s.op)).collect::<Vec<_>>()})
            }
        }
    };
    serde_json::json!({
        "name": w.name,
        "description": w.description,
        "source": w.source_name,
        "params": serde_json::to_value(&w.params).unwrap_or_default(),
        "setup": w.setup.iter().map(native_record).collect::<Vec<_>>(),
        "data": w.data.as_ref().map(|d| serde_json::json!({"count": d.count, "key": d.key.source(), "value": d.value.source(), "batch": d.batch})),
        "ops": ops.iter().map(|o| serde_json::json!({
            "name": o.name,
            "weight": o.weight,
            "kind": o.kind.label(),
            "args": args(&o.kind),
            "retry": o.retry.as_ref().map(|r| serde_json::json!({"on": r.on.iter().map(|c| c.name()).collect::<Vec<_>>(), "max": r.max, "backoff_s": r.backoff.as_secs_f64()})),
        })).collect::<Vec<_>>(),
    })
}

/// Every native operation must be one the target runs; say which does not, before the run.
fn check_families(
    ops: &[OpSpec],
    setup: &[NativeOp],
    families: &[&str],
    scheme: &str,
) -> Result<(), InputError> {
    let needs = ops
        .iter()
        .flat_map(|o| {
            o.kind
                .families()
                .into_iter()
                .map(move |f| (o.name.as_str(), f))
        })
        .chain(setup.iter().map(|s| ("setup", s.family())));
    for (name, family) in needs {
        if !families.contains(&family) {
            return Err(InputError::new(format!("operation '{name}' uses {family}, which {scheme}:// targets do not run"))
                .help("kv.* operations run on every target; pick a target of the right kind, or --op to run only some operations"));
        }
    }
    Ok(())
}
