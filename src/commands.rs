//! The glue between the command line and the library: resolve flags against the workload,
//! validate everything before anything is written, pick the target type, run, write.

mod sweep;

pub use sweep::sweep;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use std::io::IsTerminal;

use crate::analysis::checks::{self, Check};
use crate::analysis::modes;
use crate::analysis::{self, compare as comparison};
use crate::cli::{CompareArgs, ExportArgs, Format, ReportArgs, RunArgs};
use crate::engine::{self, Connection, IntervalData, LoadPlan, Mode, Observer, Slots};
use crate::error::InputError;
use crate::report::console::{self, Live};
use crate::report::metrics::MetricsServer;
use crate::report::result::{self, DataLoadRecord, OpResult, RunResult, TargetRecord};
use crate::report::{export as exports, host, html};
use crate::spec::{
    self, builtin, duration, LoadSection, OpKind, OpSpec, Source, Step, Template, Workload,
};
use crate::stats::OpCounters;
use crate::targets::{self, expand_env, redact, with_target_type, Params, Target, TargetUrl};
use crate::vocab::{Family, NativeOp, ValueKind};

/// Everything `run` resolved, ready to execute.
struct RunSetup {
    workload: Workload,
    ops: Vec<OpSpec>,
    plan: LoadPlan,
    target_url: String,
    out: PathBuf,
    skip_load: bool,
    checks: Vec<Check>,
    report: Option<PathBuf>,
    metrics_addr: Option<String>,
    /// Where `seq` generators start: a growth study continues them across its batches.
    seq_offset: u64,
}

/// How a run shows itself while it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    /// `loadrig run`: a header, interval lines, a progress bar, the `.jsonl` stream.
    Live,
    /// A sweep point: nothing printed; the sweep prints one row per point.
    Quiet,
}

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let (url, setup) = resolve(args)?;
    let out = setup.out.clone();
    let report = setup.report.clone();
    let checks = setup.checks.clone();
    let result = with_target_type!(url.scheme.as_str(), T => {
        let target = T::from_url(&url, &setup.workload.params)?;
        execute(Arc::new(target), setup, View::Live)
    })?;
    let bytes = serde_json::to_vec_pretty(&result)?;
    result::write_atomic(&out, &bytes)?;
    print!("{}", console::summary(&result));
    println!("result: {}", out.display());
    let checks_passed = after_run(&out, report.as_deref(), &checks)?;
    Ok(if result.status == "interrupted" {
        ExitCode::from(130)
    } else if !checks_passed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Compile the workload and resolve the flags against it: everything is checked here,
/// before anything connects or is written.
fn resolve(args: &RunArgs) -> Result<(TargetUrl, RunSetup)> {
    let (source_name, text) = builtin::resolve(&args.workload)?;
    let source = Source {
        path: &source_name,
        text: &text,
    };
    let workload = spec::compile(&source, &args.set)?;
    let ops = select_ops(&workload, &args.only_ops)?;
    let plan = resolve_plan(args, &workload.load, workload.op_timeout, &source)?;
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
    let checks = run_checks(args, &workload, &ops)?;
    if let Some(report) = &args.report {
        if same_path(report, &out) || same_path(report, &out.with_extension("jsonl")) {
            return Err(InputError::new(format!(
                "--report {}: that is where the result goes",
                report.display()
            ))
            .help("give the report its own name, like run.html")
            .into());
        }
    }
    let setup = RunSetup {
        ops,
        plan,
        target_url,
        out,
        skip_load: args.skip_load,
        workload,
        checks,
        report: args.report.clone(),
        metrics_addr: args.metrics_addr.clone(),
        seq_offset: 0,
    };
    Ok((url, setup))
}

/// `loadrig cleanup --target URL`: drop loadrig's namespace on the target, nothing else.
pub fn cleanup(target: &str) -> Result<ExitCode> {
    let url = TargetUrl::parse(&expand_env(target)?)?;
    let shown = redact(target);
    let no_params = Params::new();
    let removed = with_target_type!(url.scheme.as_str(), T => {
        engine::cleanup(&T::from_url(&url, &no_params)?)
    })
    .with_context(|| format!("target {shown}"))?;
    println!(
        "removed {} loadrig object(s) from {shown}",
        console::thousands(removed)
    );
    Ok(ExitCode::SUCCESS)
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
    op_timeout: Option<Duration>,
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
    let op_timeout = match &args.op_timeout {
        Some(t) => Some(spec::positive(
            duration::parse(t, "--op-timeout")?,
            "--op-timeout",
        )?),
        None => op_timeout,
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
        op_timeout,
        threads: threads as usize,
    })
}

fn check_clients(n: u64, flag: &str) -> Result<(), InputError> {
    if n == 0 || n > 10_000 {
        return Err(InputError::new(format!("{flag} {n}: expected 1 to 10000")));
    }
    Ok(())
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

/// Connect, load, run and summarise one run; the caller writes and prints the result, and
/// runs its checks and report.
fn execute<T: Target>(target: Arc<T>, setup: RunSetup, view: View) -> Result<RunResult> {
    install_ctrl_c();
    engine::INTERRUPTED.store(false, Ordering::SeqCst);
    let RunSetup {
        workload,
        ops,
        plan,
        target_url,
        out,
        skip_load,
        metrics_addr,
        seq_offset,
        ..
    } = setup;
    let live = view == View::Live;
    let shown_url = redact(&target_url);
    let op_names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let metrics = match &metrics_addr {
        Some(addr) => {
            let m = MetricsServer::start(addr, &workload.name, &op_names)?;
            println!("metrics: http://{}/metrics", m.addr);
            Some(m)
        }
        None => None,
    };
    let kind = target_url.split("://").next().unwrap_or("").to_string();
    let started_at = SystemTime::now();

    let data = if skip_load {
        None
    } else {
        workload.data.as_ref()
    };
    let bar = (live && data.is_some() && std::io::stderr().is_terminal())
        .then(|| ProgressBar::new(data.map_or(0, |d| d.count)));
    check_families(&ops, &workload.setup, target.families(), &kind)?;
    let prepared = engine::prepare(
        &*target,
        &workload.setup,
        data,
        plan.seed,
        &mut |done, _| {
            if let Some(b) = &bar {
                b.set_position(done)
            }
        },
    )
    .with_context(|| format!("target {shown_url}"))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    if live {
        println!(
            "loadrig {}: {} on {} — {}",
            env!("CARGO_PKG_VERSION"),
            workload.name,
            shown_url,
            describe(&plan)
        );
    }
    if let (Some((n, t)), true) = (prepared.loaded, live) {
        println!(
            "loaded {} records in {:.2}s ({} records/s)",
            console::thousands(n),
            t.as_secs_f64(),
            console::thousands((n as f64 / t.as_secs_f64().max(1e-9)) as u64)
        );
    }

    let names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let mut live_view = if live {
        let jsonl_path = out.with_extension("jsonl");
        if let Some(dir) = jsonl_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("could not create folder '{}'", dir.display()))?;
        }
        let jsonl = std::fs::File::create(&jsonl_path)
            .with_context(|| format!("could not create '{}'", jsonl_path.display()))?;
        let total_time = plan.duration.map(|d| d + plan.warmup);
        Some(Live::new(names.clone(), total_time, Some(jsonl)))
    } else {
        None
    };
    let n_ops = ops.len();
    let data_run = engine::run(
        target,
        Arc::new(ops.clone()),
        &plan,
        Slots {
            seq: workload.seq_slots,
            capture: workload.capture_slots,
            seq_offset,
        },
        &mut Observers {
            live: live_view.as_mut(),
            metrics: metrics.as_ref(),
        },
    )
    .with_context(|| format!("target {shown_url}"))?;
    if let Some(view) = &mut live_view {
        view.finish();
    }

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
    let latency_modes = modes::find(&all.latency);
    notes.extend(latency_modes.note());

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
        latency_modes: Some(latency_modes),
        notes,
    };
    Ok(result)
}

fn native_record(op: &NativeOp<ValueKind>, templates: &[Template]) -> serde_json::Value {
    let args: Vec<&str> = templates.iter().map(|t| t.source()).collect();
    match op {
        NativeOp::Sql { query, .. } => serde_json::json!({"sql": query, "params": args}),
        NativeOp::Redis { .. }
        | NativeOp::LdapSearch { .. }
        | NativeOp::LdapBind { .. }
        | NativeOp::LdapAdd { .. }
        | NativeOp::LdapModify { .. }
        | NativeOp::LdapDelete { .. }
        | NativeOp::Http { .. } => serde_json::json!({"kind": op.label(), "args": args}),
    }
}

fn step_record(step: &Step) -> serde_json::Value {
    native_record(&step.op, &step.templates)
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
            OpKind::Native(step) => step_record(step),
            OpKind::Tx(steps) => {
                serde_json::json!({"steps": steps.iter().map(step_record).collect::<Vec<_>>()})
            }
        }
    };
    serde_json::json!({
        "name": w.name,
        "description": w.description,
        "source": w.source_name,
        "params": serde_json::to_value(&w.params).unwrap_or_default(),
        "setup": w.setup.iter().map(|s| native_record(s, &[])).collect::<Vec<_>>(),
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
    setup: &[NativeOp<ValueKind>],
    families: &[Family],
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
            let family = family.name();
            return Err(InputError::new(format!("operation '{name}' uses {family}, which {scheme}:// targets do not run"))
                .help("kv.* operations run on every target; pick a target of the right kind, or --op to run only some operations"));
        }
    }
    Ok(())
}

/// Hands each finished interval to the console view and, when asked, the metrics endpoint.
struct Observers<'a> {
    /// The console view; none for a sweep point, which shows only its row.
    live: Option<&'a mut Live>,
    metrics: Option<&'a MetricsServer>,
}

impl Observer for Observers<'_> {
    fn interval(&mut self, data: &IntervalData) {
        if let Some(live) = self.live.as_deref_mut() {
            live.interval(data);
        }
        if let Some(m) = self.metrics {
            m.interval(data);
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        if let Some(live) = self.live.as_deref_mut() {
            live.tick(elapsed);
        }
    }
}

/// The workload file's `checks` and the `--check` flags, parsed and matched against the
/// operations before anything runs. A workload check on an operation that `--op` left out
/// is skipped with a note; any other unknown operation is an input error.
fn run_checks(args: &RunArgs, workload: &Workload, ops: &[OpSpec]) -> Result<Vec<Check>> {
    let selected: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let all: Vec<String> = workload.ops.iter().map(|o| o.name.clone()).collect();
    let context = format!("the workload '{}'", workload.name);
    let mut out = Vec::new();
    for c in &workload.checks {
        let check = checks::parse(&c.text).map_err(|e| e.at(c.location.clone()))?;
        checks::check_ops(std::slice::from_ref(&check), &all, &context)
            .map_err(|e| e.at(c.location.clone()))?;
        match &check.op {
            Some(op) if !selected.contains(op) => {
                println!(
                    "note: check '{}' skipped: --op leaves out '{op}'",
                    check.text
                )
            }
            _ => out.push(check),
        }
    }
    for text in &args.checks {
        let check = checks::parse(text)?;
        checks::check_ops(std::slice::from_ref(&check), &selected, &context)?;
        out.push(check);
    }
    Ok(out)
}

/// After the result is written: the `--report` and the checks, both computed from the file
/// just written. Returns false when a check failed.
fn after_run(out: &Path, report: Option<&Path>, checks: &[Check]) -> Result<bool> {
    if report.is_none() && checks.is_empty() {
        return Ok(true);
    }
    let written = result::read(out)?;
    if let Some(path) = report {
        let label = out.file_name().map_or_else(
            || out.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let page = html::render(&[(label, written.clone())])?;
        result::write_atomic(path, page.as_bytes())?;
        println!("report: {}", path.display());
    }
    let outcomes = checks::evaluate_all(checks, &written);
    print!("{}", checks::render(&outcomes));
    Ok(outcomes.iter().all(|o| o.passed))
}

fn same_path(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => {
            // Not there yet: compare the absolute spellings.
            let abs = |p: &Path| std::env::current_dir().map(|d| d.join(p)).ok();
            abs(a).is_some() && abs(a) == abs(b)
        }
    }
}

/// Labels for result files: the file name, or the whole path when names repeat.
fn labels(paths: &[PathBuf]) -> Vec<String> {
    let name = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    paths
        .iter()
        .map(|p| {
            let n = name(p);
            if paths.iter().filter(|q| name(q) == n).count() > 1 {
                p.display().to_string()
            } else {
                n
            }
        })
        .collect()
}

/// `loadrig report RUN.json... [-o OUT.html]`.
pub fn report(args: &ReportArgs) -> Result<ExitCode> {
    let out = args.out.clone().unwrap_or_else(|| {
        if args.runs.len() == 1 {
            args.runs[0].with_extension("html")
        } else {
            PathBuf::from("report.html")
        }
    });
    if let Some(p) = args.runs.iter().find(|p| same_path(p, &out)) {
        return Err(InputError::new(format!(
            "the report would overwrite its input '{}'",
            p.display()
        ))
        .help("name the report with -o FILE.html")
        .into());
    }
    let names = labels(&args.runs);
    let sweeps: Vec<&PathBuf> = args.runs.iter().filter(|p| is_sweep(p)).collect();
    let page = if let Some(first) = sweeps.first() {
        if args.runs.len() > 1 {
            return Err(InputError::new(format!(
                "'{}' is a sweep file: a sweep is reported alone",
                first.display()
            ))
            .help("loadrig report SWEEP.json -o SWEEP.html")
            .into());
        }
        html::render_sweep(&names[0], &crate::report::sweep::read(first)?)?
    } else {
        let mut runs = Vec::new();
        for (path, label) in args.runs.iter().zip(names) {
            runs.push((label, result::read(path)?));
        }
        html::render(&runs)?
    };
    result::write_atomic(&out, page.as_bytes())?;
    println!("report: {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Whether a file is a sweep file (`"kind": "sweep"`) rather than a run result; false for
/// anything unreadable, which the run reader then reports.
fn is_sweep(path: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Kind>(&t).ok())
        .is_some_and(|k| k.kind.as_deref() == Some("sweep"))
}

/// `--noise 2%` (or `2`) as a fraction.
fn parse_noise(text: &str) -> Result<f64, InputError> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    match number.parse::<f64>() {
        Ok(v) if (0.0..100.0).contains(&v) => Ok(v / 100.0),
        _ => Err(InputError::new(format!(
            "--noise {text}: expected a percentage from 0 to under 100, like 2%"
        ))),
    }
}

/// `loadrig compare BASE.json NEW.json`.
pub fn compare(args: &CompareArgs) -> Result<ExitCode> {
    let noise = parse_noise(&args.noise)?;
    let parsed = args
        .checks
        .iter()
        .map(|t| checks::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let base = result::read(&args.base)?;
    let new = result::read(&args.new)?;
    checks::check_ops(
        &parsed,
        &analysis::op_names(&new),
        &format!("the new run '{}'", args.new.display()),
    )?;
    let names = labels(&[args.base.clone(), args.new.clone()]);
    let options = comparison::Options {
        noise,
        ..comparison::Options::default()
    };
    let mut c = comparison::compare(&base, &names[0], &new, &names[1], &options)?;
    c.checks = checks::evaluate_all(&parsed, &new);
    let text = match args.format {
        Format::Table => crate::report::comparison::table(&c),
        Format::Markdown => crate::report::comparison::markdown(&c),
        Format::Json => crate::report::comparison::json(&c),
    };
    print!("{text}");
    Ok(
        if (args.fail_on_regression && c.regressed()) || c.check_failed() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// `loadrig export RUN.json --csv DIR --hdr-log FILE`.
pub fn export(args: &ExportArgs) -> Result<ExitCode> {
    if args.csv.is_none() && args.hdr_log.is_none() {
        return Err(InputError::new("nothing to export")
            .help("give --csv DIR (intervals.csv, operations.csv) and/or --hdr-log FILE")
            .into());
    }
    if let Some(log) = &args.hdr_log {
        if same_path(log, &args.run) {
            return Err(InputError::new(format!(
                "--hdr-log {}: that is the result file itself",
                log.display()
            ))
            .into());
        }
    }
    let r = result::read(&args.run)?;
    // Build everything first, so a failure writes nothing.
    let log = args
        .hdr_log
        .as_ref()
        .map(|_| exports::hdr_log(&r))
        .transpose()?;
    if let Some(dir) = &args.csv {
        for path in exports::write_csv(&r, dir)? {
            println!("wrote {}", path.display());
        }
    }
    if let (Some(path), Some(bytes)) = (&args.hdr_log, log) {
        result::write_atomic(path, &bytes)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
