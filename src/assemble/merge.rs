//! Shard files (`loadrig run --shard I/N --start-at T`) merged into the run they make
//! together (`loadrig merge`): counts summed, latency histograms added bucket by bucket
//! (HdrHistogram's `add`, so percentiles are those of every recorded value, never averaged)
//! per interval and per operation, fairness over every client, the rig's CPU summed. The
//! shards are checked first: one workload, one plan, one start, every index once, aligned
//! intervals; a missing or interrupted shard is refused unless the merge is asked to be
//! partial, which the result then says.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::analysis::modes;
use crate::analysis::validity::{fairness, with_trends};
use crate::engine::{LoadPlan, Mode, Shard};
use crate::error::InputError;
use crate::result::validity::{
    self, FairnessInterval, FairnessSummary, LittlesLaw, Validity, Verdict,
};
use crate::result::{
    ConnectPhasesRecord, ConnectRecord, EncodedHistogram, ErrorMessage, FigureRecord, Http2Record,
    IntervalOp, IntervalRecord, OpResult, RunResult, RunStatus, ShardsRecord, Statements,
    TargetRecord, WorkloadRecord,
};
use crate::stats::{new_hist, Hist, LatencySummary, SeriesSummary};

/// One shard's result and the file it came from (named in every message about it).
pub struct ShardFile {
    pub path: PathBuf,
    pub result: RunResult,
}

impl ShardFile {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    pub(super) fn shard(&self) -> Shard {
        // `check` refuses files without one before anything reads it.
        self.result.load.shard.unwrap_or(Shard {
            index: 0,
            count: 1,
            first_client: 0,
            clients: self.result.load.clients(),
            rate: None,
        })
    }
}

/// Keep at most this many distinct error messages per operation, as a run does.
const MAX_MESSAGES: usize = 20;

/// Merge `files` into one run; `allow_partial` accepts missing or interrupted shards.
pub fn merge(mut files: Vec<ShardFile>, allow_partial: bool) -> Result<RunResult, InputError> {
    let (missing, interrupted) = check(&mut files, allow_partial)?;
    let refs: Vec<&RunResult> = files.iter().map(|f| &f.result).collect();
    let first = refs[0];
    let load = whole_load(&first.load);
    let intervals = merge_intervals(&files)?;
    let measured_s = refs.iter().map(|r| r.measured_s).fold(0.0, f64::max);
    let open = load.is_open();
    let counts = |k: Option<usize>| interval_counts(&intervals, &load, k);
    let operations = (0..first.operations.len())
        .map(|k| {
            let ops: Vec<&OpResult> = refs.iter().map(|r| &r.operations[k]).collect();
            merge_op(&ops, measured_s, &counts(Some(k)), open)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let totals: Vec<&OpResult> = refs.iter().map(|r| &r.total).collect();
    let total = merge_op(&totals, measured_s, &counts(None), open)?;
    let all = decode(&total.histogram, "total")?;
    let latency_modes = modes::find(&all);
    let count = first.load.shard.map_or(1, |s| s.count);
    let mut notes = shard_notes(&files, count, &missing, &interrupted);
    notes.extend(latency_modes.note());
    let shards = shards_record(&files, count, missing, interrupted);
    let partial = shards.partial;
    let loader = refs
        .iter()
        .find(|r| r.load.shard.is_some_and(|s| s.index == 0))
        .unwrap_or(&first);
    let last = refs
        .iter()
        .max_by(|a, b| a.ended_at.cmp(&b.ended_at))
        .unwrap_or(&first);
    let mut merged = RunResult {
        status: if partial {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        },
        load: load.clone(),
        started_at: refs
            .iter()
            .map(|r| r.started_at.clone())
            .min()
            .unwrap_or_default(),
        ended_at: last.ended_at.clone(),
        elapsed_s: refs.iter().map(|r| r.elapsed_s).fold(0.0, f64::max),
        measured_s,
        data_load: loader.data_load.clone(),
        setup: loader.setup.clone(),
        settled: loader.settled.clone(),
        before_run: loader.before_run.clone(),
        missed_starts: refs.iter().map(|r| r.missed_starts).sum(),
        abandoned_clients: refs.iter().map(|r| r.abandoned_clients).sum(),
        operations,
        total,
        latency_modes: Some(latency_modes),
        notes,
        // The checks of the state left behind, from the shard that ended last.
        verify: last.verify.clone(),
        late_start_s: None,
        shards: Some(shards),
        validity: None,
        warmup_auto: None,
        intervals: Vec::new(),
        connect: merge_connect(&refs),
        // A shard's own dashboard is not the merged run's; a collector records its own.
        dashboard: None,
        collect: None,
        ..first.clone()
    };
    let interval_s = merged.load.interval.as_secs_f64();
    let view = View {
        parts: (files.iter())
            .filter_map(|f| f.result.validity.as_ref().map(|v| (f, v)))
            .collect(),
        intervals: intervals.iter().collect(),
        stage: None,
        mode: merged.load.mode,
        interval: merged.load.interval,
        total: &merged.total,
        measured_s,
        steady: merged.load.stages.is_empty(),
    };
    // Every shard's verdict, or none (files from before verdicts were kept).
    merged.validity = (view.parts.len() == files.len())
        .then(|| merged_validity(&view))
        .flatten()
        .map(|v| match view.steady {
            true => with_trends(v, &intervals, interval_s),
            false => v,
        });
    super::merge_stages::merge_stages(&files, &intervals, &mut merged)?;
    merged.intervals = intervals;
    // The observing shard's record (its URLs and cost), the rest made from the intervals.
    merged.server = refs.iter().find_map(|r| r.server.clone());
    super::server::rebuild(&mut merged);
    merged.figures = merged
        .figures
        .iter()
        .map(|f| figure(f, &merged.operations, measured_s))
        .collect();
    Ok(merged)
}

/// The connections every shard opened before its run: counted, their failures summed, the
/// time the slowest shard took, and the phases bounded ([`summary_bound`]).
fn merge_connect(refs: &[&RunResult]) -> Option<ConnectRecord> {
    let parts: Vec<&ConnectRecord> = refs.iter().filter_map(|r| r.connect.as_ref()).collect();
    if parts.is_empty() {
        return None;
    }
    let phases: Vec<&ConnectPhasesRecord> =
        parts.iter().filter_map(|c| c.phases.as_ref()).collect();
    let phase = |f: fn(&ConnectPhasesRecord) -> Option<&LatencySummary>| {
        let of: Vec<&LatencySummary> = phases.iter().filter_map(|p| f(p)).collect();
        (!of.is_empty()).then(|| summary_bound(&of))
    };
    let mut errors_by_class = BTreeMap::new();
    for c in &parts {
        for (class, n) in &c.errors_by_class {
            *errors_by_class.entry(*class).or_insert(0) += n;
        }
    }
    Some(ConnectRecord {
        clients: parts.iter().map(|c| c.clients).sum(),
        seconds: parts.iter().map(|c| c.seconds).fold(0.0, f64::max),
        // Each shard paced its own: together, the sum.
        rate_per_s: parts.iter().map(|c| c.rate_per_s).sum(),
        phases: phase(|p| Some(&p.tcp)).map(|tcp| ConnectPhasesRecord {
            tcp,
            tls: phase(|p| p.tls.as_ref()),
            auth: phase(|p| p.auth.as_ref()),
            http2: phase(|p| p.http2.as_ref()),
        }),
        failed_clients: parts.iter().map(|c| c.failed_clients).sum(),
        errors_by_class,
        first_error: parts.iter().find_map(|c| c.first_error.clone()),
        http2: merge_http2(&parts),
    })
}

/// The shards' HTTP/2 streams: the fewest the server allowed, the most a connection carried.
fn merge_http2(parts: &[&ConnectRecord]) -> Option<Http2Record> {
    let of: Vec<&Http2Record> = parts.iter().filter_map(|c| c.http2.as_ref()).collect();
    let streams = of.iter().map(|h| h.streams_per_connection).max()?;
    let allowed = of.iter().filter_map(|h| h.max_concurrent_streams).min();
    Some(Http2Record {
        max_concurrent_streams: allowed,
        streams_per_connection: streams,
        in_flight_per_connection: of.iter().map(|h| h.in_flight_per_connection).max()?,
    })
}

fn shards_record(
    files: &[ShardFile],
    count: usize,
    missing: Vec<usize>,
    interrupted: Vec<usize>,
) -> ShardsRecord {
    ShardsRecord {
        count,
        merged: files.iter().map(|f| f.shard().index).collect(),
        files: files.iter().map(ShardFile::name).collect(),
        partial: !missing.is_empty() || !interrupted.is_empty(),
        missing,
        interrupted,
        late_start_max_s: files
            .iter()
            .filter_map(|f| f.result.late_start_s)
            .fold(0.0, f64::max),
    }
}

/// The whole run's load from a shard's: every client (worker) and the whole rate.
pub fn whole_load(load: &LoadPlan) -> LoadPlan {
    let mut whole = load.clone();
    if let Some(shard) = load.shard {
        // The shard counts client streams, the mode connections.
        let connections = shard.clients / load.pipeline.max(1);
        match &mut whole.mode {
            Mode::Closed { clients, .. } => *clients = connections,
            Mode::Open { rate, workers, .. } => {
                *workers = connections;
                *rate = shard.rate.unwrap_or(*rate);
            }
        }
    }
    whole.shard = None;
    whole
}

/// Refuse what would merge into a wrong run; sort the files by shard index. Returns the
/// missing and the interrupted shard indices (empty unless `allow_partial`).
fn check(
    files: &mut [ShardFile],
    allow_partial: bool,
) -> Result<(Vec<usize>, Vec<usize>), InputError> {
    if files.is_empty() {
        return Err(InputError::new("no shard files to merge")
            .help("loadrig merge shard-*.json -o run.json"));
    }
    for f in files.iter() {
        if f.result.load.shard.is_none() {
            return Err(InputError::new(format!(
                "{}: not a shard's result (its load has no shard)",
                f.name()
            ))
            .help("merge the files of `loadrig run --shard I/N --start-at TIME`"));
        }
        if f.result.load.start_at.is_none() {
            return Err(InputError::new(format!(
                "{}: run without --start-at, so its intervals cannot be aligned with the other shards'",
                f.name()
            ))
            .help("start every shard with the same --start-at TIME"));
        }
    }
    files.sort_by_key(|f| f.shard().index);
    let (head, rest) = files
        .split_first()
        .unwrap_or_else(|| unreachable!("not empty"));
    for f in rest {
        same_run(head, f)?;
    }
    for pair in files.windows(2) {
        if pair[0].shard().index == pair[1].shard().index {
            return Err(InputError::new(format!(
                "{} and {}: both are shard {} of {}",
                pair[0].name(),
                pair[1].name(),
                pair[0].shard().index,
                pair[0].shard().count
            ))
            .help("give each shard's file once"));
        }
    }
    let count = head.shard().count;
    let present: Vec<usize> = files.iter().map(|f| f.shard().index).collect();
    let missing: Vec<usize> = (0..count).filter(|i| !present.contains(i)).collect();
    let interrupted: Vec<usize> = files
        .iter()
        .filter(|f| f.result.status == RunStatus::Interrupted)
        .map(|f| f.shard().index)
        .collect();
    if !allow_partial {
        if let Some(&i) = missing.first() {
            let more = if missing.len() > 1 {
                format!(" (and {} more: {})", missing.len() - 1, list(&missing[1..]))
            } else {
                String::new()
            };
            return Err(InputError::new(format!("shard {i} of {count} is missing{more}"))
                .help("give every shard's file, or --allow-partial to merge what there is (the result then says it is partial)"));
        }
        if let Some(f) = files
            .iter()
            .find(|f| f.result.status == RunStatus::Interrupted)
        {
            return Err(InputError::new(format!(
                "{}: shard {} of {count} was interrupted: its figures cover only part of the run",
                f.name(),
                f.shard().index
            ))
            .help("run it again, or --allow-partial to merge what there is (the result then says it is partial)"));
        }
    }
    Ok((missing, interrupted))
}

fn list(xs: &[usize]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `f` is a shard of the same run as `head`: count, workload, load, start, target.
fn same_run(head: &ShardFile, f: &ShardFile) -> Result<(), InputError> {
    match differs(&RunIdentity::of(&head.result), &RunIdentity::of(&f.result)) {
        None => Ok(()),
        Some(what) => Err(InputError::new(format!(
            "{}: {what} than {} (the shards of one run share it)",
            f.name(),
            head.name()
        ))
        .help(
            "merge only the files of one run: the same workload, flags, --shard I/N and --start-at",
        )),
    }
}

/// What the shards of one run share: how many they are, the workload, the whole run's load
/// (its start included) and the target. `loadrig collect` checks a shard's stream by it
/// before the shard has a result.
pub struct RunIdentity<'a> {
    pub workload: &'a WorkloadRecord,
    pub load: &'a LoadPlan,
    pub target: &'a TargetRecord,
}

impl<'a> RunIdentity<'a> {
    pub fn of(r: &'a RunResult) -> RunIdentity<'a> {
        RunIdentity {
            workload: &r.workload,
            load: &r.load,
            target: &r.target,
        }
    }
}

/// What `b` has other than `a` ("another workload (...)"), or None when they are shards
/// of one run.
pub fn differs(a: &RunIdentity, b: &RunIdentity) -> Option<String> {
    let count = |l: &LoadPlan| l.shard.map(|s| s.count);
    if count(a.load) != count(b.load) {
        return Some(format!(
            "a shard of {} rather of {}",
            count(b.load).unwrap_or(1),
            count(a.load).unwrap_or(1)
        ));
    }
    let json = |w| serde_json::to_value(w).ok();
    if json(a.workload) != json(b.workload) {
        return Some(format!(
            "another workload ('{}', or other parameters or operations)",
            b.workload.name
        ));
    }
    // Threads and the slice they ran with are each machine's own.
    let plain = |l: &LoadPlan| LoadPlan {
        threads: 0,
        client_slice: None,
        ..whole_load(l)
    };
    if plain(a.load) != plain(b.load) {
        return Some("another load plan (clients, rate, duration, interval, seed...)".into());
    }
    if a.target.kind != b.target.kind || a.target.url != b.target.url {
        return Some(format!("another target ({})", b.target.url));
    }
    None
}

/// Per interval index, the shards' intervals summed; refuses intervals that do not align.
fn merge_intervals(files: &[ShardFile]) -> Result<Vec<IntervalRecord>, InputError> {
    let mut by_index: BTreeMap<u64, Vec<&IntervalRecord>> = BTreeMap::new();
    // Each shard's cores, beside its intervals, for the rigs' CPU share.
    let mut cores: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for f in files {
        for i in &f.result.intervals {
            cores.entry(i.index).or_default().push(f.result.host.cores);
            let same = by_index.entry(i.index).or_default();
            if let Some(o) = same.first() {
                // The ends may differ where a shard's run ended (an operation count reached).
                if (o.start_s - i.start_s).abs() > 1e-6 {
                    return Err(InputError::new(format!(
                        "{}: interval {} starts at {:.6} s where another shard's starts at {:.6} s: the shards' intervals do not align",
                        f.name(), i.index, i.start_s, o.start_s
                    ))
                    .help("run every shard with the same --interval, --warmup and --start-at"));
                }
            }
            same.push(i);
        }
    }
    by_index
        .into_iter()
        .map(|(k, same)| merge_interval(&same, &cores[&k]))
        .collect()
}

/// One interval of the run from the shards' (`cores`: each one's machine's cores, for the
/// rigs' CPU share): counts summed, histograms added, fairness over every client.
pub fn merge_interval(
    same: &[&IntervalRecord],
    cores: &[usize],
) -> Result<IntervalRecord, InputError> {
    let first = same[0];
    let ops = (0..first.ops.len())
        .map(|k| {
            let mut h = new_hist();
            for i in same {
                let _ = h.add(decode(&i.ops[k].histogram, &i.ops[k].name)?);
            }
            let mut errors_by_class = BTreeMap::new();
            for i in same {
                for (class, n) in &i.ops[k].errors_by_class {
                    *errors_by_class.entry(*class).or_insert(0) += n;
                }
            }
            Ok(IntervalOp {
                name: first.ops[k].name.clone(),
                ok: same.iter().map(|i| i.ops[k].ok).sum(),
                errors: same.iter().map(|i| i.ops[k].errors).sum(),
                errors_by_class,
                p50_ns: quantile(&h, 0.5),
                p99_ns: quantile(&h, 0.99),
                max_ns: if h.is_empty() { 0 } else { h.max() },
                histogram: EncodedHistogram::encode(&h),
            })
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let per_client: Vec<u64> = same.iter().flat_map(|i| whole(i)).copied().collect();
    let ok: u64 = same.iter().map(|i| i.ok).sum();
    let errors: u64 = same.iter().map(|i| i.errors).sum();
    let end_s = same.iter().map(|i| i.end_s).fold(first.end_s, f64::max);
    Ok(IntervalRecord {
        index: first.index,
        start_s: first.start_s,
        end_s,
        warmup: first.warmup,
        ok,
        errors,
        ops,
        rig: merge_rig(same, cores, ok + errors, end_s - first.start_s),
        fairness: FairnessInterval::of(&per_client),
        per_client: Vec::new(),
        ran_whole: None,
        stage: first.stage.clone(),
        clients: first
            .clients
            .map(|_| same.iter().filter_map(|i| i.clients).sum()),
        offered: first
            .offered
            .map(|_| same.iter().filter_map(|i| i.offered).sum()),
        // One shard observes the server (shard 0): its figures are the server's, once.
        server: same.iter().find_map(|i| i.server.clone()),
    })
}

/// The rigs' CPU summed over the shards (a share of all their cores together); the
/// machines' run queues and hiccups at their worst.
fn merge_rig(
    same: &[&IntervalRecord],
    cores: &[usize],
    completed: u64,
    wall: f64,
) -> Option<validity::RigInterval> {
    let rigs: Vec<&validity::RigInterval> = same.iter().filter_map(|i| i.rig.as_ref()).collect();
    if rigs.len() != same.len() {
        return None;
    }
    let user: f64 = rigs.iter().map(|r| r.cpu_user_s).sum();
    let system: f64 = rigs.iter().map(|r| r.cpu_system_s).sum();
    let all_cores: usize = cores.iter().sum();
    Some(validity::RigInterval {
        cpu_user_s: user,
        cpu_system_s: system,
        cpu_share: validity::cpu_share(user + system, wall, all_cores),
        cpu_us_per_op: validity::cpu_us_per_op(user + system, completed),
        procs_running: rigs.iter().filter_map(|r| r.procs_running).reduce(f64::max),
        hiccup_p99_ns: rigs.iter().map(|r| r.hiccup_p99_ns).max().unwrap_or(0),
        hiccup_max_ns: rigs.iter().map(|r| r.hiccup_max_ns).max().unwrap_or(0),
        threads: busiest_threads(&rigs),
    })
}

/// The busiest threads of all the shards' rigs together.
fn busiest_threads(rigs: &[&validity::RigInterval]) -> Vec<validity::ThreadShare> {
    let mut all: Vec<validity::ThreadShare> = rigs
        .iter()
        .flat_map(|r| r.threads.iter().cloned())
        .collect();
    all.sort_by(|a, b| b.busy().total_cmp(&a.busy()));
    all.truncate(validity::THREADS_KEPT);
    all
}

/// Successes per full measured interval of operation `k` (all with `None`).
pub(super) fn interval_counts(
    intervals: &[IntervalRecord],
    load: &LoadPlan,
    k: Option<usize>,
) -> Vec<f64> {
    intervals
        .iter()
        .filter(|i| !i.warmup && i.end_s - i.start_s >= load.interval.as_secs_f64() * 0.999)
        .map(|i| match k {
            Some(k) => i.ops[k].ok as f64,
            None => i.ok as f64,
        })
        .collect()
}

fn decode(h: &EncodedHistogram, what: &str) -> Result<Hist, InputError> {
    h.decode()
        .map_err(|e| InputError::new(format!("the histogram of '{what}': {e}")))
}

fn quantile(h: &Hist, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// One operation over every shard: counts summed, histograms added.
pub(super) fn merge_op(
    ops: &[&OpResult],
    measured_s: f64,
    counts: &[f64],
    open: bool,
) -> Result<OpResult, InputError> {
    let name = ops[0].name.clone();
    let add = |pick: fn(&OpResult) -> Option<&EncodedHistogram>| -> Result<Hist, InputError> {
        let mut h = new_hist();
        for op in ops {
            if let Some(e) = pick(op) {
                let _ = h.add(decode(e, &op.name)?);
            }
        }
        Ok(h)
    };
    let latency = add(|o| Some(&o.histogram))?;
    let service = add(|o| o.service_histogram.as_ref())?;
    // Histograms made on demand: summed where every shard that counted such operations
    // kept one (files from before they were kept did not: then none, rather than a part).
    let on_demand = |pick: fn(&OpResult) -> Option<&EncodedHistogram>,
                     counted: fn(&OpResult) -> u64|
     -> Result<Option<Hist>, InputError> {
        let kept = ops.iter().any(|o| pick(o).is_some())
            && ops.iter().all(|o| counted(o) == 0 || pick(o).is_some());
        kept.then(|| add(pick)).transpose()
    };
    let failed = on_demand(|o| o.failed_histogram.as_ref(), |o| o.errors)?;
    let missing = on_demand(|o| o.missing_histogram.as_ref(), |o| o.empty)?;
    // The start lag exactly where every shard kept its histogram (older files did not).
    let (lag, lag_histogram) = if ops.iter().all(|o| o.start_lag_histogram.is_some()) {
        let h = add(|o| o.start_lag_histogram.as_ref())?;
        (
            LatencySummary::of(&h),
            open.then(|| EncodedHistogram::encode(&h)),
        )
    } else {
        let lags: Vec<&LatencySummary> = ops.iter().filter_map(|o| o.start_lag.as_ref()).collect();
        (summary_bound(&lags), None)
    };
    let sum = |f: fn(&OpResult) -> u64| ops.iter().map(|o| f(o)).sum::<u64>();
    let ok = sum(|o| o.ok);
    let mut errors_by_class = BTreeMap::new();
    let mut retries_by_class = BTreeMap::new();
    let mut messages: Vec<ErrorMessage> = Vec::new();
    for op in ops {
        for (class, n) in &op.errors_by_class {
            *errors_by_class.entry(*class).or_insert(0) += n;
        }
        for (class, n) in &op.retries_by_class {
            *retries_by_class.entry(*class).or_insert(0) += n;
        }
        for m in &op.error_messages {
            let full = messages.len() >= MAX_MESSAGES;
            match messages
                .iter_mut()
                .find(|x| x.class == m.class && x.message == m.message)
            {
                Some(x) => x.count += m.count,
                None if !full => messages.push(m.clone()),
                None => {}
            }
        }
    }
    let statements = |f: fn(&Statements) -> u64| ops.iter().map(|o| f(&o.statements)).sum::<u64>();
    let total_statements = statements(|s| s.total);
    Ok(OpResult {
        name,
        ok,
        errors: sum(|o| o.errors),
        errors_by_class,
        error_messages: messages,
        rows: sum(|o| o.rows),
        empty: sum(|o| o.empty),
        retries: sum(|o| o.retries),
        retries_by_class,
        reconnects: sum(|o| o.reconnects),
        rolled_back: sum(|o| o.rolled_back),
        throughput_per_s: per_s(ok, measured_s),
        latency: LatencySummary::of(&latency),
        histogram: EncodedHistogram::encode(&latency),
        failed_latency: failed.as_ref().map(LatencySummary::of),
        failed_histogram: failed.as_ref().map(EncodedHistogram::encode),
        missing_histogram: missing.as_ref().map(EncodedHistogram::encode),
        service: open.then(|| LatencySummary::of(&service)),
        service_histogram: open.then(|| EncodedHistogram::encode(&service)),
        start_lag: open.then_some(lag),
        start_lag_histogram: lag_histogram,
        late_starts: open.then(|| sum(|o| o.late_starts.unwrap_or(0))),
        interval_counts: SeriesSummary::of(counts),
        statements: Statements {
            read: statements(|s| s.read),
            write: statements(|s| s.write),
            other: statements(|s| s.other),
            total: total_statements,
            per_s: per_s(total_statements, measured_s),
        },
    })
}

fn per_s(n: u64, measured_s: f64) -> f64 {
    if measured_s > 0.0 {
        n as f64 / measured_s
    } else {
        0.0
    }
}

/// Summaries without their histograms (the start lag of files written before
/// `start_lag_histogram`, the connect phases) over shards: count, mean, min and max are
/// exact, each percentile is the highest of the shards' (an upper bound).
fn summary_bound(lags: &[&LatencySummary]) -> LatencySummary {
    let count: u64 = lags.iter().map(|l| l.count).sum();
    let top = |f: fn(&LatencySummary) -> u64| lags.iter().map(|l| f(l)).max().unwrap_or(0);
    LatencySummary {
        count,
        mean_ns: if count > 0 {
            lags.iter().map(|l| l.mean_ns * l.count as f64).sum::<f64>() / count as f64
        } else {
            0.0
        },
        // Pooled within-shard variance only: a lower bound when the shards' means differ.
        stdev_ns: lags.iter().map(|l| l.stdev_ns).fold(0.0, f64::max),
        min_ns: lags
            .iter()
            .filter(|l| l.count > 0)
            .map(|l| l.min_ns)
            .min()
            .unwrap_or(0),
        p50_ns: top(|l| l.p50_ns),
        p90_ns: top(|l| l.p90_ns),
        p99_ns: top(|l| l.p99_ns),
        p999_ns: top(|l| l.p999_ns),
        max_ns: top(|l| l.max_ns),
    }
}

/// A workload figure again from the merged operation counts.
fn figure(f: &FigureRecord, ops: &[OpResult], measured_s: f64) -> FigureRecord {
    let completed = ops
        .iter()
        .filter(|o| f.ops.contains(&o.name))
        .map(|o| o.ok)
        .sum();
    let per_s = match f.per.as_str() {
        "minute" => 60.0,
        "hour" => 3600.0,
        _ => 1.0,
    };
    FigureRecord {
        completed,
        value: if measured_s > 0.0 {
            completed as f64 / measured_s * per_s / f.divisor
        } else {
            0.0
        },
        ..f.clone()
    }
}

/// The shards' notes, each under its shard, and what the merge itself found.
fn shard_notes(
    files: &[ShardFile],
    count: usize,
    missing: &[usize],
    interrupted: &[usize],
) -> Vec<String> {
    let mut notes = Vec::new();
    if !missing.is_empty() {
        notes.push(format!(
            "partial: shard(s) {} of {count} missing; the figures under-count the run",
            list(missing)
        ));
    }
    if !interrupted.is_empty() {
        notes.push(format!(
            "partial: shard(s) {} of {count} interrupted; their figures cover only part of the run",
            list(interrupted)
        ));
    }
    for f in files {
        for n in &f.result.notes {
            notes.push(format!("shard {}: {n}", f.shard().index));
        }
    }
    notes
}

/// What a verdict over the shards covers: the whole run, or one stage of a run with stages.
pub(super) struct View<'a> {
    /// Each shard's file and its own verdict of the scope.
    pub parts: Vec<(&'a ShardFile, &'a Validity)>,
    /// The merged intervals in the scope.
    pub intervals: Vec<&'a IntervalRecord>,
    /// The stage, when the scope is one.
    pub stage: Option<&'a str>,
    /// The load at the scope's level (a stage's clients or rate, over every shard).
    pub mode: Mode,
    pub interval: std::time::Duration,
    pub total: &'a OpResult,
    pub measured_s: f64,
    /// A constant load: fairness and Little's law are judged.
    pub steady: bool,
}

impl View<'_> {
    /// A shard's measured intervals in the scope.
    fn mine<'f>(&self, f: &'f ShardFile) -> impl Iterator<Item = &'f IntervalRecord> + use<'f, '_> {
        f.result.intervals.iter().filter(move |i| {
            !i.warmup && (self.stage.is_none() || i.stage.as_deref() == self.stage)
        })
    }

    /// The clients of a shard its fairness counts: those a closed-loop stage ran.
    fn counts(&self, f: &ShardFile, local: usize) -> bool {
        match (self.stage, self.mode) {
            (Some(_), Mode::Closed { clients, .. }) => {
                let s = f.shard();
                crate::engine::stages::rank(s.first_client + local, s.clients, s.count)
                    < clients as u64
            }
            _ => true,
        }
    }
}

/// The verdict over the shards: fairness over every client and Little's law recomputed
/// exactly from the merged figures; the rigs' CPU summed and their hiccups added; the
/// verdict the worst of the shards', with each shard's reasons under its name.
pub(super) fn merged_validity(view: &View<'_>) -> Option<Validity> {
    let all: Vec<&Validity> = view.parts.iter().map(|(_, v)| *v).collect();
    let first = *all.first()?;
    let mut rig = first.rig.clone();
    rig.cores = all.iter().map(|v| v.rig.cores).sum();
    rig.cpu_user_s = all.iter().map(|v| v.rig.cpu_user_s).sum();
    rig.cpu_system_s = all.iter().map(|v| v.rig.cpu_system_s).sum();
    let cpu = rig.cpu_user_s + rig.cpu_system_s;
    let capacity: f64 = view
        .parts
        .iter()
        .map(|(f, _)| {
            let measured: f64 = view.mine(f).map(|i| i.end_s - i.start_s).sum();
            measured * f.result.host.cores as f64
        })
        .sum();
    rig.cpu_share = if capacity > 0.0 { cpu / capacity } else { 0.0 };
    let done = view.total.ok + view.total.errors;
    rig.cpu_us_per_op = validity::cpu_us_per_op(cpu, done);
    rig.intervals = all.iter().map(|v| v.rig.intervals).max().unwrap_or(0);
    rig.busy_intervals = all.iter().map(|v| v.rig.busy_intervals).max().unwrap_or(0);
    rig.crowded_intervals = all
        .iter()
        .map(|v| v.rig.crowded_intervals)
        .max()
        .unwrap_or(0);
    rig.saturated_thread_intervals = all
        .iter()
        .map(|v| v.rig.saturated_thread_intervals)
        .max()
        .unwrap_or(0);
    rig.busiest_thread = all
        .iter()
        .filter_map(|v| v.rig.busiest_thread.as_ref())
        .max_by(|a, b| a.busy().total_cmp(&b.busy()))
        .cloned();
    rig.procs_running_max = all
        .iter()
        .filter_map(|v| v.rig.procs_running_max)
        .reduce(f64::max);
    rig.judged = all.iter().any(|v| v.rig.judged);
    let mut hiccup = new_hist();
    for v in &all {
        let _ = hiccup.add(v.hiccups.histogram.decode().ok()?);
    }
    let hiccups = validity::HiccupSummary {
        count: hiccup.len(),
        p50_ns: quantile(&hiccup, 0.5),
        p99_ns: quantile(&hiccup, 0.99),
        p999_ns: quantile(&hiccup, 0.999),
        max_ns: if hiccup.is_empty() { 0 } else { hiccup.max() },
        stalled_intervals: all
            .iter()
            .map(|v| v.hiccups.stalled_intervals)
            .max()
            .unwrap_or(0),
        histogram: EncodedHistogram::encode(&hiccup),
    };
    let fairness = merged_fairness(view, first.thresholds.starved_median);
    let littles_law = view.steady.then(|| littles_law(&all, view, done)).flatten();
    let reasons: Vec<String> = view
        .parts
        .iter()
        .flat_map(|(f, v)| {
            let i = f.shard().index;
            v.reasons.iter().map(move |r| format!("shard {i}: {r}"))
        })
        .collect();
    Some(Validity {
        verdict: Verdict::of(&reasons),
        reasons,
        rig,
        hiccups,
        fairness,
        littles_law,
        thresholds: first.thresholds,
        trends: Vec::new(),
    })
}

/// A shard's per-client counts of the clients that ran all of the interval (a client ramp's
/// joining and departing clients are not starved).
fn whole(i: &IntervalRecord) -> &[u64] {
    match i.ran_whole {
        Some(n) => &i.per_client[..(n as usize).min(i.per_client.len())],
        None => &i.per_client,
    }
}

/// Fairness over every client of every shard, from the shards' per-client interval counts.
fn merged_fairness(view: &View<'_>, starved_median: f64) -> FairnessSummary {
    let mut totals: Vec<u64> = Vec::new();
    for (f, _) in &view.parts {
        let mut mine = vec![0u64; f.result.load.clients()];
        for i in view.mine(f) {
            for (t, c) in mine.iter_mut().zip(&i.per_client) {
                *t += c;
            }
        }
        totals.extend(
            (0..mine.len())
                .filter(|&c| view.counts(f, c))
                .map(|c| mine[c]),
        );
    }
    let full = view.interval.as_secs_f64() * 0.999;
    let judged: Vec<Vec<u64>> = (view.intervals.iter())
        .filter(|i| !i.warmup && i.end_s - i.start_s >= full)
        .map(|i| {
            (view.parts.iter())
                .flat_map(|(f, _)| {
                    let x = f.result.intervals.iter().find(|x| x.index == i.index);
                    let counts = x.map_or_else(Vec::new, |x| whole(x).to_vec());
                    (0..counts.len())
                        .filter(|&c| view.counts(f, c))
                        .map(move |c| counts[c])
                })
                .collect()
        })
        .collect();
    let judged: Vec<&[u64]> = judged.iter().map(|v| &v[..]).collect();
    fairness::summary(&totals, &judged, starved_median)
}

/// Little's law over the scope: L = λW with the merged throughput and mean latency.
fn littles_law(all: &[&Validity], view: &View<'_>, done: u64) -> Option<LittlesLaw> {
    if done == 0 || view.measured_s <= 0.0 {
        return None;
    }
    let x = done as f64 / view.measured_s;
    let w = view.total.latency.mean_ns / 1e9;
    let (expected, actual) = match view.mode {
        Mode::Closed { clients, think } => (x * (w + think.as_secs_f64()), clients as f64),
        Mode::Open { rate, .. } => (x * w, rate * w),
    };
    Some(LittlesLaw {
        expected,
        actual,
        deviation: if actual > 0.0 {
            (expected - actual) / actual
        } else {
            0.0
        },
        judged: all
            .iter()
            .all(|v| v.littles_law.as_ref().is_some_and(|l| l.judged)),
    })
}
