//! The one executor: a [`RunPlan`] in, a [`RunResult`] out. `run`, every sweep point and
//! every study run go through here: connect, load, run the engine, summarise.

pub mod fd_limit;
pub mod growth;
mod load_marker;
mod observe;
mod watch;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::SystemTime;

use anyhow::{Context, Result};

use crate::analysis::steady;
use crate::assemble::{self, RunFacts};
use crate::engine::{self, LoadPlan, Mode, Prepared, Slots};
use crate::error::InputError;
use crate::observe::Grid;
use crate::plan::{Given, LoadMarker, LoadSetting, RunPlan};
use crate::report::console::{self, Live, LoadBar};
use crate::report::host;
use crate::report::metrics::MetricsServer;
use crate::result::{RunResult, VerifyRecord, WarmupAuto};
use crate::targets::peer::PeerTarget;
use crate::targets::{with_target_type, Target};
use crate::vocab::{Family, LdapOp, NativeOp, RunStep, ValueKind};
use crate::workload::{OpKind, OpSpec};
use observe::{Observers, ServerWatch};
use watch::Watchers;

/// How a run shows itself while it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `loadrig run`: a header, interval lines, a progress bar, the `.jsonl` stream.
    Live,
    /// A sweep point or a study run: nothing printed; the caller prints its own rows.
    Quiet,
}

/// Open the plan's target and run the plan on it.
pub fn execute(plan: &RunPlan, view: View) -> Result<RunResult> {
    with_target_type!(plan.target.scheme(), T => {
        let target = T::from_url(&plan.target.parsed, &plan.workload.params)?;
        target.seed_run(plan.load.seed);
        execute_on(Arc::new(target), plan, view)
    })
}

/// Connect, load, run and summarise one run on a target already opened (a growth study
/// keeps one target for all its batches); the caller writes and prints the result.
pub fn execute_on<T: Target>(target: Arc<T>, plan: &RunPlan, view: View) -> Result<RunResult> {
    install_ctrl_c();
    engine::INTERRUPTED.store(false, Ordering::SeqCst);
    let live = view == View::Live;
    let shown_url = plan.target.shown();
    let metrics = match &plan.outputs.metrics_addr {
        Some(addr) => {
            let m = MetricsServer::start(addr, &plan.workload.name, &op_names(&plan.ops))?;
            println!("metrics: http://{}/metrics", m.addr);
            Some(m)
        }
        None => None,
    };
    let started_at = SystemTime::now();
    check_target(plan, &*target)?;
    if live {
        writable_outputs(plan)?;
    }
    let mut watchers = Watchers::open(plan)?;
    // Each client holds the target's files and one session per peer it uses.
    fd_limit::ensure(
        plan.load.connections(),
        target.files_per_client() + plan.workload.peers.len(),
    )?;
    let prepared = prepare(&*target, plan).with_context(|| format!("target {shown_url}"))?;
    if let Some(marker) = &plan.data.marker {
        settle_shards(&*target, marker, live).with_context(|| format!("target {shown_url}"))?;
    }
    if live {
        print_header(plan, &prepared);
        // Once a process: a sweep's points would say it again and again.
        static SAID: AtomicBool = AtomicBool::new(false);
        if let Some(note) = plan.unobserved_note() {
            if !SAID.swap(true, Ordering::Relaxed) {
                println!("{note}");
            }
        }
    }
    let mut live_view = if live {
        Some(live_view(plan, &prepared, started_at)?)
    } else {
        None
    };
    if watchers.link.is_some() {
        let mut header = assemble::stream_header(&facts(plan, prepared.clone(), started_at));
        header.label = plan.label.clone();
        watchers.header(&header);
    }
    let names = op_names(&plan.ops);
    watchers.mark();
    let mut observers = Observers {
        live: live_view.as_mut(),
        metrics: metrics.as_ref(),
        dashboard: watchers.dashboard.as_mut(),
        link: watchers.link.as_ref(),
        names: &names,
        server: server_watch(plan),
    };
    let mut data_run = engine::run(
        Arc::clone(&target),
        Arc::new(peers(plan)?),
        Arc::new(plan.ops.clone()),
        &plan.load,
        Slots {
            seq: plan.workload.seq_slots,
            capture: plan.workload.capture_slots,
            seq_offset: plan.data.seq_offset,
        },
        &mut observers,
        &spill_dir(plan),
    )
    .with_context(|| format!("target {shown_url}"))?;
    let observation = observers.finish();
    drop(observers);
    if let Some(view) = &mut live_view {
        view.finish();
    }
    let verified = engine::verify(&*target, &plan.workload.verify)
        .with_context(|| format!("target {shown_url}"))?;
    let auto = if plan.warmup_auto {
        Some(cut_warmup(plan, &mut data_run)?)
    } else {
        None
    };
    let recorded = auto.as_ref().map_or(plan, |(plan, _)| plan);
    let mut result = assemble::build(facts(recorded, prepared, started_at), &data_run)?;
    if let Some((_, record)) = auto {
        if !record.settled {
            result.notes.push(format!(
                "--warmup auto: {} cut {} intervals, as far as it looks (half the run): the throughput may still have been drifting; run longer",
                record.method, record.intervals_cut
            ));
        }
        result.warmup_auto = Some(record);
    }
    result.label = plan.label.clone();
    if let Some(o) = observation {
        assemble::server::attach(&mut result, o, plan.load.shard.map(|s| s.index));
    } else if plan.observes() && !plan.observes_here() {
        result.notes.push(
            "the server is observed by shard 0 alone: its figures are in shard 0's file and the merged run".into(),
        );
    }
    for (check, values) in plan.workload.verify.iter().zip(verified) {
        let record = VerifyRecord::of(&check.name, values);
        result.notes.extend(record.note());
        result.verify.push(record);
    }
    // A shard's checks are judged on the merged run (`loadrig merge`, a collector), not
    // on its share: recorded for them.
    if plan.load.shard.is_some() {
        result.checks = plan.checks.iter().map(|c| c.text.clone()).collect();
    }
    watchers.finish(&mut result);
    Ok(result)
}

/// The server's observer for this run, when it observes (shard 0 alone under `--shard`),
/// following the run's interval grid: the warm-up's intervals, then the measured ones up to
/// the deadline.
fn server_watch(plan: &RunPlan) -> Option<ServerWatch> {
    if !plan.observes_here() {
        return None;
    }
    let timeline = plan.load.timeline();
    let grid = Grid::of_fn(plan.load.interval, move |k| {
        let end = timeline.last().map(|last| last + 1);
        end.is_none_or(|end| k <= end).then(|| timeline.start_of(k))
    });
    Some(ServerWatch::new(
        plan.observe_config(),
        grid,
        op_names(&plan.ops),
    ))
}

/// What the run was beside the engine's measurements, for its result and its stream: the
/// plan as the result records it, this host, and what happened before the run.
fn facts(plan: &RunPlan, prepared: Prepared, started_at: SystemTime) -> RunFacts<'_> {
    RunFacts {
        workload: &plan.workload,
        ops: &plan.ops,
        plan: &plan.load,
        target_url: plan.target.shown(),
        target_kind: plan.target.scheme().to_string(),
        prepared,
        host: host::facts(),
        started_at,
        thresholds: plan.thresholds,
    }
}

/// `--warmup auto`: cut the warm-up where the successes per full interval settle (MSER-5,
/// `analysis::steady`); the plan that records it, and how it was chosen.
fn cut_warmup(plan: &RunPlan, data: &mut engine::RunData) -> Result<(RunPlan, WarmupAuto)> {
    let full = data
        .intervals
        .iter()
        .take_while(|i| i.end - i.start >= plan.load.interval)
        .count();
    let series: Vec<f64> = data.intervals[..full]
        .iter()
        .map(|i| i.ops.iter().map(|c| c.ok).sum::<u64>() as f64)
        .collect();
    let t = steady::truncation(&series).unwrap_or(steady::Truncation {
        cut: 0,
        batch: 1,
        settled: true,
    });
    let warmup = data.cut_warmup(t.cut)?;
    let mut plan = plan.clone();
    plan.load.warmup = warmup;
    let record = WarmupAuto {
        method: if t.batch == steady::BATCH {
            "MSER-5".into()
        } else {
            "MSER".into()
        },
        series: "successful operations per full interval".into(),
        intervals_cut: t.cut,
        warmup_s: warmup.as_secs_f64(),
        settled: t.settled,
    };
    Ok((plan, record))
}

/// Where the finished intervals' histograms wait for the result file: beside it when its
/// folder exists, else the temporary folder.
fn spill_dir(plan: &RunPlan) -> std::path::PathBuf {
    match plan.outputs.result.parent() {
        Some(dir) if dir.is_dir() => dir.to_path_buf(),
        Some(dir) if dir.as_os_str().is_empty() => ".".into(),
        _ => std::env::temp_dir(),
    }
}

fn op_names(ops: &[OpSpec]) -> Vec<String> {
    ops.iter().map(|o| o.name.clone()).collect()
}

/// A sharded run's data: shard 0 says its load is done, the others wait for that.
fn settle_shards<T: Target>(target: &T, marker: &LoadMarker, live: bool) -> Result<()> {
    if marker.writes {
        return load_marker::write(target, marker);
    }
    if live {
        println!(
            "waiting for shard 0's data load (at most {})",
            humantime::format_duration(marker.timeout)
        );
    }
    let waited = load_marker::wait(target, marker)?;
    if live {
        println!(
            "shard 0's data is loaded (waited {:.2}s)",
            waited.as_secs_f64()
        );
    }
    Ok(())
}

/// Setup statements, the server's version and the data load, with a progress bar on a
/// terminal (in every view: a study's or a sweep's load can take minutes too). Shard 0 of
/// a sharded run first removes an earlier run's marker.
fn prepare<T: Target>(target: &T, plan: &RunPlan) -> Result<Prepared> {
    if let Some(marker) = plan.data.marker.filter(|m| m.writes) {
        load_marker::clear(target, &marker)?;
    }
    let data = if plan.data.skip_load {
        None
    } else {
        plan.workload.data.as_ref()
    };
    let mut bar = LoadBar::on_terminal();
    let setup = if plan.data.skip_setup {
        &[][..]
    } else {
        &plan.workload.setup[..]
    };
    // Shards after the first leave the tables to shard 0, which readies them before it
    // tells the others to start.
    let follower = plan.data.marker.is_some_and(|m| !m.writes);
    let before_run = if follower {
        &[][..]
    } else {
        &plan.workload.before_run[..]
    };
    let prepared = engine::prepare(
        target,
        setup,
        before_run,
        plan.workload.settle,
        data,
        plan.load.seed,
        &mut |progress| bar.show(progress),
    );
    bar.finish();
    prepared
}

fn print_header(plan: &RunPlan, prepared: &Prepared) {
    println!(
        "loadrig {}: {} on {} — {}",
        env!("CARGO_PKG_VERSION"),
        plan.workload.name,
        plan.target.shown(),
        describe(&plan.load)
    );
    if let Some((statements, rows, t)) = prepared.setup {
        println!(
            "set up: {statements} statement(s), {} rows in {:.2}s ({} rows/s)",
            console::thousands(rows),
            t.as_secs_f64(),
            console::thousands((rows as f64 / t.as_secs_f64().max(1e-9)) as u64)
        );
    }
    if let Some((n, t)) = prepared.loaded {
        println!(
            "loaded {} records in {:.2}s ({} records/s)",
            console::thousands(n),
            t.as_secs_f64(),
            console::thousands((n as f64 / t.as_secs_f64().max(1e-9)) as u64)
        );
    }
    if let Some((n, t)) = prepared.settled {
        println!(
            "vacuumed and analyzed {n} loadrig_ table(s) in {:.2}s, as pgbench -i does",
            t.as_secs_f64()
        );
    }
    if let Some(b) = prepared.before_run {
        let done: Vec<String> = [
            ("vacuumed", b.vacuumed, "table(s)"),
            ("emptied", b.emptied, "table(s)"),
            ("ran", b.statements, "statement(s)"),
        ]
        .iter()
        .filter(|(_, n, _)| *n > 0)
        .map(|(what, n, of)| format!("{what} {n} {of}"))
        .collect();
        let done = if done.is_empty() {
            "nothing for this target to do".to_string()
        } else {
            done.join(", ")
        };
        println!("before the run: {done} in {:.2}s", b.took.as_secs_f64());
    }
}

/// Find an output that cannot be written before the setup and the load: make its folder
/// and open the stream file for writing without changing it, then remove what was made, so
/// that a run that fails later leaves nothing behind.
fn writable_outputs(plan: &RunPlan) -> Result<()> {
    let jsonl = plan.outputs.result.with_extension("jsonl");
    // The folders that do not exist yet, deepest first.
    let made: Vec<&std::path::Path> = jsonl
        .ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    output_folder(plan)?;
    let existed = jsonl.exists();
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&jsonl)
        .with_context(|| format!("cannot write '{}'", jsonl.display()));
    if !existed && opened.is_ok() {
        let _ = std::fs::remove_file(&jsonl);
    }
    for dir in made {
        let _ = std::fs::remove_dir(dir);
    }
    opened.map(drop)
}

/// Make the folder the result goes to.
fn output_folder(plan: &RunPlan) -> Result<()> {
    if let Some(dir) = plan
        .outputs
        .result
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("could not create folder '{}'", dir.display()))?;
    }
    Ok(())
}

/// The console view of a live run, streaming every interval to the `.jsonl` file beside
/// the result, after a header line that lets `loadrig recover` rebuild the result.
fn live_view(plan: &RunPlan, prepared: &Prepared, started_at: SystemTime) -> Result<Live> {
    output_folder(plan)?;
    let jsonl_path = plan.outputs.result.with_extension("jsonl");
    let mut jsonl = std::fs::File::create(&jsonl_path)
        .with_context(|| format!("could not create '{}'", jsonl_path.display()))?;
    let mut header = assemble::stream_header(&facts(plan, prepared.clone(), started_at));
    header.label = plan.label.clone();
    let mut line = serde_json::to_vec(&header)?;
    line.push(b'\n');
    jsonl
        .write_all(&line)
        .with_context(|| format!("could not write '{}'", jsonl_path.display()))?;
    let total_time = plan.load.duration.map(|d| d + plan.load.warmup);
    Ok(Live::new(op_names(&plan.ops), total_time, Some(jsonl)))
}

/// Ctrl-C (and SIGTERM) set `engine::INTERRUPTED`; a second one leaves at once. An
/// experiment installs it before it changes a server setting, so that the first one restores.
pub fn install_ctrl_c() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            engine::CTRL_C_COUNT.fetch_add(1, Ordering::SeqCst);
            if engine::INTERRUPTED.swap(true, Ordering::SeqCst) {
                // A second Ctrl-C: the user wants out now.
                std::process::exit(130);
            }
        });
    });
}

/// The load in words: "closed loop, 4 clients, 10s after 2s warm-up".
pub fn describe(plan: &LoadPlan) -> String {
    if !plan.stages.is_empty() {
        return describe_stages(plan);
    }
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
    let pipelined = match (plan.pipeline, plan.pipeline_refill) {
        (0 | 1, _) => String::new(),
        (p, 0 | 1) => format!(" x {p} on each connection (--pipeline)"),
        (p, r) if r == p => {
            format!(
                " x {p} on each connection (--pipeline), written again once all {p} are answered"
            )
        }
        (p, r) => {
            format!(" x {p} on each connection (--pipeline), written again once {r} are answered")
        }
    };
    match plan.mode {
        Mode::Closed { clients, think } => format!(
            "closed loop, {clients} client{}{pipelined}{}, {stop}{warm}",
            if clients == 1 { "" } else { "s" },
            if think.is_zero() {
                String::new()
            } else {
                format!(", think {}", humantime::format_duration(think))
            }
        ),
        Mode::Open {
            rate,
            arrivals,
            workers,
            ..
        } => format!(
            "open loop, {rate} ops/s {}, up to {workers} in flight{pipelined}, {stop}{warm}",
            match arrivals {
                crate::engine::Arrivals::Poisson => "Poisson",
                crate::engine::Arrivals::Constant => "constant",
            }
        ),
    }
}

/// A run with stages in words: "open loop in 3 stages (30s:0..2000/s, ...), up to 4 in
/// flight, 1m40s with 10s warm-up".
fn describe_stages(plan: &LoadPlan) -> String {
    let list: Vec<String> = plan.stages.iter().map(|s| s.compact()).collect();
    let total: std::time::Duration = plan.stages.iter().map(|s| s.duration).sum();
    let warm = if plan.warmup.is_zero() {
        String::new()
    } else {
        format!(
            ", the first {} warm-up",
            humantime::format_duration(plan.warmup)
        )
    };
    let how = match plan.mode {
        Mode::Closed { think, .. } if !think.is_zero() => {
            format!("closed loop, think {}", humantime::format_duration(think))
        }
        Mode::Closed { .. } => "closed loop".to_string(),
        Mode::Open {
            arrivals, workers, ..
        } => format!(
            "open loop, {} arrivals, up to {workers} in flight",
            match arrivals {
                crate::engine::Arrivals::Poisson => "Poisson",
                crate::engine::Arrivals::Constant => "constant",
            }
        ),
    };
    let stop = plan.stop_when.as_ref().map_or(String::new(), |w| {
        format!(", until '{}' for {} intervals", w.condition, w.consecutive)
    });
    format!(
        "{how}, {} stage{} over {}{warm}{stop}: {}",
        plan.stages.len(),
        if plan.stages.len() == 1 { "" } else { "s" },
        humantime::format_duration(total),
        list.join(",")
    )
}

/// Every native operation must be one the target runs; say which does not, before the run.
/// The workload's peers, opened (nothing connects yet).
fn peers(plan: &RunPlan) -> Result<Vec<PeerTarget>, InputError> {
    plan.workload
        .peers
        .iter()
        .map(|p| PeerTarget::open(&p.url).map_err(|e| e.at(p.location.clone())))
        .collect()
}

/// Whether `target` can run `plan` at all: the operations' families, the pipeline depth,
/// operations it refuses. Nothing is connected; a sweep checks every point with it before
/// the first runs.
pub fn check_target<T: Target>(plan: &RunPlan, target: &T) -> Result<(), InputError> {
    check_families(
        &plan.ops,
        &plan.workload.setup,
        &plan.workload.before_run,
        target.families(),
        plan.target.scheme(),
    )?;
    check_pipeline(plan, target)?;
    check_refused(&plan.ops, target, plan.target.scheme())
}

/// `--pipeline P` above 1 needs a target whose connections carry several operations at
/// once, and operations that hold no state on the connection between their steps.
fn check_pipeline<T: Target>(plan: &RunPlan, target: &T) -> Result<(), InputError> {
    // Whether this run can use the engine's batch driver, and if not, why.
    let driver = crate::engine::pipe::batch_driver(target, &plan.load, &plan.ops);
    if let Some(option) = target.needs_batch_driver() {
        if let Err(why) = &driver {
            return Err(InputError::new(format!(
                "{option}: only the batch driver can run it, and this run cannot use the driver: {why}"
            ))
            .help(format!("leave out {option}, or run plain operations without think times or time limits (docs/targets.md, PostgreSQL's own client)")));
        }
    }
    let p = plan.load.pipeline;
    if p <= 1 {
        return Ok(());
    }
    let refill = plan.load.pipeline_refill;
    if refill > 1 {
        if let Err(why) = &driver {
            let shown = if refill == p {
                "all".to_string()
            } else {
                refill.to_string()
            };
            return Err(InputError::new(format!(
                "--pipeline-refill {shown}: only the batch driver waits for several replies before writing, and this run cannot use it: {why}"
            ))
            .help("leave out --pipeline-refill (each stream writes as soon as its reply is in), or run a closed loop of plain operations on Redis, PostgreSQL or HTTP (docs/load.md, \"Pipelining\")"));
        }
    }
    let scheme = plan.target.scheme();
    let given = pipeline_given(plan);
    let named = given.name();
    // A target whose sessions cannot share a connection may still pipeline through the
    // engine's batch driver, when this run can use it (http://).
    if let (Some(why), Err(no_driver)) = (target.cannot_pipeline(), &driver) {
        // Name what keeps the driver out, where the target has one.
        let because = match target.batch_codec() {
            Some(_) => format!(", and this run cannot use it: {no_driver}"),
            None => String::new(),
        };
        return Err(given
            .error(format!(
                "{named} {p}: {scheme}:// targets cannot pipeline this run: {why}{because}"
            ))
            .help("run with --pipeline 1, and more --clients for more operations in flight"));
    }
    for op in plan.ops.iter() {
        let what = match &op.kind {
            OpKind::Tx(_) => "is a transaction, and a transaction's state",
            OpKind::Authenticate => "authenticates again, and who is logged in",
            OpKind::Native(step) if matches!(step.op, NativeOp::Ldap(LdapOp::Bind { .. })) => {
                "binds, and who is bound"
            }
            _ => continue,
        };
        return Err(given
            .error(format!(
                "{named} {p}: operation '{}' {what} belongs to its connection, which pipelining shares between {p} client streams",
                op.name
            ))
            .help(format!("leave '{}' out (--op), or run it with --pipeline 1", op.name)));
    }
    Ok(())
}

/// The pipeline depth as the user gave it, for messages: by its flag, or at its place in the
/// workload file when the file gave it.
fn pipeline_given(plan: &RunPlan) -> Given<usize> {
    let p = plan.load.pipeline;
    match plan.given(LoadSetting::Pipeline) {
        Some(g) => g.clone().map(|_| p),
        None => Given::flag(p, "--pipeline"),
    }
}

/// An operation of a family the target runs that it still cannot do (a scan on files).
fn check_refused<T: Target>(ops: &[OpSpec], target: &T, scheme: &str) -> Result<(), InputError> {
    for op in ops {
        if let Some(step) = op
            .kind
            .native_steps()
            .iter()
            .find(|s| s.peer.is_none() && target.refuses(&s.op))
        {
            return Err(InputError::new(format!(
                "operation '{}' uses {}, which {scheme}:// targets cannot do",
                op.name,
                step.op.label()
            ))
            .help(
                "leave it out (--op, or its weight set to 0 with --set) or pick a target that can",
            ));
        }
    }
    Ok(())
}

fn check_families(
    ops: &[OpSpec],
    setup: &[NativeOp<ValueKind>],
    before_run: &[RunStep],
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
        .chain(setup.iter().map(|s| ("setup", s.family())))
        // Vacuuming, emptying tables and statements are SQL.
        .chain((!before_run.is_empty()).then_some(("before_run", Family::Sql)));
    for (name, family) in needs {
        if !families.contains(&family) {
            let family = family.name();
            return Err(InputError::new(format!("operation '{name}' uses {family}, which {scheme}:// targets do not run"))
                .help("kv.* operations run on every target; pick a target of the right kind, or --op to run only some operations"));
        }
    }
    Ok(())
}
