//! The engine in-process, against `noop`, `sleep` (a known latency, stalls, injected errors)
//! and a recording target. Runs last tens of milliseconds; assertions are on what the engine
//! decides exactly (counts, the interval grid, error classes, the arrival schedule), never on
//! how long something took beyond what a stall or a fixed latency guarantees.

use std::future::{ready, Future};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::error::InputError;
use crate::targets::noop::Noop;
use crate::targets::sleep::Sleep;
use crate::targets::{Params, Session, Target, TargetUrl};
use crate::vocab::{ErrorClass, Op, OpError, Outcome};
use crate::workload::{self, Source, Workload};

const MS: Duration = Duration::from_millis(1);

/// One operation that does nothing.
const NOP: &str = "name = \"t\"\n[[op]]\nname = \"nop\"\nnop = {}\n";

fn workload(toml: &str) -> Workload {
    let source = Source {
        path: "test.toml",
        text: toml,
    };
    workload::compile(&source, &[]).unwrap_or_else(|e| panic!("{e:?}"))
}

fn sleep(options: &str) -> Sleep {
    let url = TargetUrl::parse(&format!("sleep://?{options}")).unwrap();
    Sleep::open(&url).unwrap()
}

/// A closed loop of `clients` with no stop condition yet: set one with struct update syntax.
fn closed(clients: usize) -> LoadPlan {
    LoadPlan {
        mode: Mode::Closed {
            clients,
            think: Duration::ZERO,
        },
        duration: None,
        ops: None,
        samples: None,
        interval: 10 * MS,
        warmup: Duration::ZERO,
        seed: 1,
        connection: Connection::Persistent,
        op_timeout: None,
        threads: 1,
        shard: None,
        start_at: None,
        connect_rate: None,
        pipeline: 1,
        pipeline_refill: 1,
        client_slice: None,
        stages: Vec::new(),
        stop_when: None,
    }
}

/// An open loop of `rate` ops/s over `workers`, constant arrivals, for `duration`.
fn open(rate: f64, workers: usize, late_after: Duration, duration: Duration) -> LoadPlan {
    LoadPlan {
        mode: Mode::Open {
            rate,
            arrivals: Arrivals::Constant,
            workers,
            late_after,
        },
        duration: Some(duration),
        ..closed(workers)
    }
}

/// `--samples k --interval interval`, as the command line resolves it.
fn samples(plan: LoadPlan, k: u64, interval: Duration) -> LoadPlan {
    LoadPlan {
        samples: Some(k),
        duration: Some(interval * k as u32),
        interval,
        ..plan
    }
}

/// What the observer saw of one interval.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    index: u64,
    start: Duration,
    end: Duration,
    warmup: bool,
    ok: u64,
}

#[derive(Default)]
struct Recorder(Vec<Seen>);

impl Observer for Recorder {
    fn interval(&mut self, d: &IntervalData) {
        self.0.push(Seen {
            index: d.index,
            start: d.start,
            end: d.end,
            warmup: d.warmup,
            ok: d.ops.iter().map(|c| c.ok).sum(),
        });
    }
}

/// Prepare and run `w` on `target` as `loadrig run` does; the observer's view alongside.
fn drive<T: Target>(target: T, w: &Workload, plan: &LoadPlan) -> (RunData, Vec<Seen>) {
    prepare(
        &target,
        &w.setup,
        &w.before_run,
        w.settle,
        w.data.as_ref(),
        plan.seed,
        &mut |_| {},
    )
    .unwrap();
    let slots = Slots {
        seq: w.seq_slots,
        capture: w.capture_slots,
        seq_offset: 0,
    };
    let mut seen = Recorder::default();
    let ops = Arc::new(w.ops.clone());
    let peers = w
        .peers
        .iter()
        .map(|p| PeerTarget::open(&p.url).unwrap())
        .collect();
    let data = run(
        Arc::new(target),
        Arc::new(peers),
        ops,
        plan,
        slots,
        &mut seen,
        &std::env::temp_dir(),
    )
    .unwrap();
    assert!(!data.interrupted && data.abandoned == 0);
    (data, seen.0)
}

fn measured_ok(seen: &[Seen]) -> u64 {
    seen.iter().filter(|s| !s.warmup).map(|s| s.ok).sum()
}

/// The observer saw the intervals the run returned, in order and back to back from 0.
fn check_grid(data: &RunData, seen: &[Seen]) {
    assert_eq!(seen.len(), data.intervals.len());
    let mut at = Duration::ZERO;
    for (k, (s, i)) in seen.iter().zip(&data.intervals).enumerate() {
        assert_eq!(
            (s.index, s.start, s.end, s.warmup),
            (k as u64, i.start, i.end, i.warmup)
        );
        assert_eq!(s.start, at, "interval {k} starts where the last ended");
        assert!(s.end >= s.start);
        at = s.end;
    }
}

#[test]
fn ops_stop_gives_exact_counts_across_clients() {
    let w = workload(NOP);
    let plan = LoadPlan {
        ops: Some(10_000),
        ..closed(3)
    };
    let (data, seen) = drive(Noop, &w, &plan);
    assert_eq!(data.totals[0].ok, 10_000);
    assert_eq!(measured_ok(&seen), 10_000);
    assert_eq!(data.totals[0].latency.len(), 10_000);
    check_grid(&data, &seen);
    // Ended by a count: the last interval ends when the run did.
    assert_eq!(seen.last().unwrap().end, data.elapsed);
    assert_eq!(data.measured, data.elapsed);
}

#[test]
fn ops_stop_counts_only_measured_operations() {
    // 30 ms of warm-up in 10 ms intervals: three warm-up intervals, then 60 measured ops.
    let w = workload(NOP);
    let plan = LoadPlan {
        ops: Some(60),
        warmup: 30 * MS,
        ..closed(2)
    };
    let (data, seen) = drive(sleep("latency=1ms"), &w, &plan);
    check_grid(&data, &seen);
    assert_eq!(seen.iter().filter(|s| s.warmup).count(), 3);
    assert!(seen.iter().take(3).all(|s| s.warmup));
    assert_eq!(seen[2].end, 30 * MS);
    assert_eq!(
        data.totals[0].ok, 60,
        "warm-up operations stay out of the totals"
    );
    assert_eq!(measured_ok(&seen), 60);
    assert_eq!(data.measured, data.elapsed - 30 * MS);
}

#[test]
fn samples_give_exactly_k_intervals_after_a_marked_warmup() {
    // 50 ms of warm-up in 40 ms intervals: 40 ms + 10 ms, then exactly 3 of 40 ms.
    let w = workload(NOP);
    let plan = samples(
        LoadPlan {
            warmup: 50 * MS,
            ..closed(2)
        },
        3,
        40 * MS,
    );
    let (data, seen) = drive(sleep("latency=1ms"), &w, &plan);
    check_grid(&data, &seen);
    let bounds: Vec<(Duration, Duration, bool)> =
        seen.iter().map(|s| (s.start, s.end, s.warmup)).collect();
    assert_eq!(
        bounds,
        [
            (Duration::ZERO, 40 * MS, true),
            (40 * MS, 50 * MS, true),
            (50 * MS, 90 * MS, false),
            (90 * MS, 130 * MS, false),
            (130 * MS, 170 * MS, false),
        ]
    );
    assert_eq!(data.measured, 120 * MS);
    assert!(seen.iter().filter(|s| s.warmup).map(|s| s.ok).sum::<u64>() > 0);
    assert_eq!(data.totals[0].ok, measured_ok(&seen));
    assert_eq!(plan.timeline().last(), Some(4));
}

#[test]
fn duration_stop_ends_the_last_interval_at_the_deadline() {
    // 50 ms in 20 ms intervals: 20, 20 and a last one cut at 50 ms.
    let w = workload(NOP);
    let plan = LoadPlan {
        duration: Some(50 * MS),
        interval: 20 * MS,
        ..closed(2)
    };
    let (data, seen) = drive(sleep("latency=1ms"), &w, &plan);
    check_grid(&data, &seen);
    let ends: Vec<Duration> = seen.iter().map(|s| s.end).collect();
    assert_eq!(ends, [20 * MS, 40 * MS, 50 * MS]);
    assert!(seen.iter().all(|s| !s.warmup));
    assert_eq!(data.measured, 50 * MS);
    assert!(
        data.elapsed >= 50 * MS,
        "clients stop at the deadline, not before"
    );
    assert_eq!(data.totals[0].ok, measured_ok(&seen));
}

#[test]
fn weighted_mix_follows_the_weights() {
    let w = workload(
        "name = \"mix\"\n\
         [[op]]\nname = \"a\"\nweight = 6\nnop = {}\n\
         [[op]]\nname = \"b\"\nweight = 3\nnop = {}\n\
         [[op]]\nname = \"c\"\nweight = 1\nnop = {}\n",
    );
    let n = 60_000u64;
    let plan = LoadPlan {
        ops: Some(n),
        seed: 3,
        ..closed(3)
    };
    let (data, _) = drive(Noop, &w, &plan);
    let counts: Vec<u64> = data.totals.iter().map(|c| c.ok).collect();
    assert_eq!(counts.iter().sum::<u64>(), n);
    for (count, p) in counts.iter().zip([0.6, 0.3, 0.1]) {
        // Binomial(n, p): within 5 standard deviations (fixed seed, so no flakiness).
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (*count as f64 - n as f64 * p).abs() < 5.0 * sd,
            "{counts:?} against p = {p}"
        );
    }
    // Every client's choices come from the seed alone: a second run picks the same.
    let (again, _) = drive(Noop, &w, &plan);
    let again: Vec<u64> = again.totals.iter().map(|c| c.ok).collect();
    assert_eq!(counts, again);
}

#[test]
fn injected_errors_are_counted_by_class() {
    let w = workload(NOP);
    let n = 2_000u64;
    let plan = LoadPlan {
        ops: Some(n),
        ..closed(2)
    };
    let (data, _) = drive(sleep("latency=0ms&errors=0.3"), &w, &plan);
    let c = &data.totals[0];
    assert_eq!(c.ok + c.error_total(), n, "every attempt is counted once");
    assert_eq!(c.errors[ErrorClass::Other], c.error_total());
    // Binomial(2000, 0.3): sd about 20.5; 5 sd either side.
    assert!(
        (500..=700).contains(&c.error_total()),
        "{}",
        c.error_total()
    );
    assert_eq!(c.latency.len(), c.ok, "failures have no latency");
    assert_eq!(
        c.messages,
        [(
            ErrorClass::Other,
            "injected error".to_string(),
            c.error_total()
        )]
    );
}

#[test]
fn operations_over_the_time_limit_fail_as_timeout() {
    // A blocking operation is judged when it ends; each timed-out session is replaced.
    let w = workload(NOP);
    let plan = LoadPlan {
        ops: Some(3),
        op_timeout: Some(5 * MS),
        ..closed(1)
    };
    let (data, _) = drive(sleep("latency=20ms"), &w, &plan);
    let c = &data.totals[0];
    assert_eq!((c.ok, c.error_total()), (0, 3));
    assert_eq!(c.errors[ErrorClass::Timeout], 3);
    assert_eq!(c.reconnects, 2);
}

#[test]
fn open_loop_counts_late_and_missed_starts_of_an_overloaded_target() {
    // 10 ms per operation, one in flight, 400 arrivals/s for 101 ms: the schedule has 41
    // arrivals (0, 2.5 … 100 ms). At most 11 can start (one every 10 ms from 0 before
    // 101 ms); every one after the first starts at least 7.5 ms late; the rest never start.
    let w = workload(NOP);
    let plan = open(400.0, 1, MS, 101 * MS);
    let (data, _) = drive(sleep("latency=10ms"), &w, &plan);
    let c = &data.totals[0];
    assert_eq!(c.ok + data.missed, 41, "each arrival starts or is missed");
    assert!((1..=11).contains(&c.ok), "{}", c.ok);
    assert!(data.missed >= 30);
    assert!(
        c.late == c.ok || c.late == c.ok - 1,
        "late {} of {}",
        c.late,
        c.ok
    );
    assert_eq!((c.lag.len(), c.service.len()), (c.ok, c.ok));
}

#[test]
fn open_loop_stall_makes_the_arrivals_behind_it_late() {
    // 500 arrivals/s (every 2 ms) for 151 ms: 76 arrivals. The target freezes for 60 ms
    // from 40 ms after it opened; every arrival due in the freeze but its last 5 ms starts
    // more than 5 ms late: about 27 (at least 20 allows 12 ms of scheduling noise).
    let w = workload(NOP);
    let plan = open(500.0, 1, 5 * MS, 151 * MS);
    let (data, _) = drive(sleep("latency=0ms&stall=60ms@40ms"), &w, &plan);
    let c = &data.totals[0];
    assert_eq!(c.ok + data.missed, 76, "each arrival starts or is missed");
    assert!(c.late >= 20, "late {}", c.late);
    assert!(c.late <= c.ok);
    assert!(
        c.lag.max() >= (40 * MS).as_nanos() as u64,
        "{}",
        c.lag.max()
    );
    // The one operation that met the freeze waited for it; the latency, from the intended
    // start, holds it too.
    assert!(c.service.max() >= (40 * MS).as_nanos() as u64);
    assert!(c.latency.max() >= c.service.max());
}

#[test]
fn poisson_arrivals_depend_on_the_seed_alone() {
    // The arrivals before the deadline (started or missed) come from the seeded stream:
    // the same in two runs, and about rate × duration (Poisson(100): sd 10, 5 sd allowed).
    let w = workload(NOP);
    let plan = LoadPlan {
        mode: Mode::Open {
            rate: 2_000.0,
            arrivals: Arrivals::Poisson,
            workers: 2,
            late_after: MS,
        },
        seed: 5,
        ..open(2_000.0, 2, MS, 50 * MS)
    };
    let arrivals = || {
        let (data, _) = drive(Noop, &w, &plan);
        data.totals[0].ok + data.missed
    };
    let first = arrivals();
    assert!((50..=150).contains(&first), "{first}");
    assert_eq!(arrivals(), first);
}

/// A target that writes down every operation each session receives.
#[derive(Default)]
struct Log {
    sessions: Arc<Mutex<Vec<Vec<String>>>>,
}

struct LogSession {
    sessions: Arc<Mutex<Vec<Vec<String>>>>,
    id: usize,
}

impl Target for Log {
    type Session = LogSession;

    fn from_url(_url: &TargetUrl, _params: &Params) -> Result<Self, InputError> {
        Ok(Log::default())
    }

    /// Async, so its clients share the runtime threads.
    fn blocking(&self) -> bool {
        false
    }

    fn connect(&self) -> impl Future<Output = Result<LogSession, OpError>> {
        let mut all = self.sessions.lock().unwrap();
        all.push(Vec::new());
        ready(Ok(LogSession {
            sessions: Arc::clone(&self.sessions),
            id: all.len() - 1,
        }))
    }
}

/// How [`Log`] writes down an operation.
fn logged(op: &Op<'_>) -> String {
    match op {
        Op::Get { key } => format!("get {key}"),
        Op::Put { key, value } => format!("put {key} {}", String::from_utf8_lossy(value)),
        other => format!("{other:?}"),
    }
}

impl Session for LogSession {
    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.sessions.lock().unwrap()[self.id].push(logged(op));
        ready(Ok(Outcome::rows(1)))
    }
}

#[test]
fn the_same_seed_gives_the_same_operations() {
    let w = workload(
        "name = \"kv\"\n\
         [[op]]\nname = \"put\"\nweight = 1\n\
         kv.put = { key = \"k{seq}\", value = \"{string 6}\" }\n\
         [[op]]\nname = \"get\"\nweight = 3\nkv.get = { key = \"k{uniform 0..1000000}\" }\n",
    );
    // Which session a client gets depends on who connects first, so compare the set of
    // per-client sequences.
    let sequences = |seed: u64| {
        let plan = LoadPlan {
            ops: Some(400),
            seed,
            threads: 2,
            ..closed(3)
        };
        let target = Log::default();
        let sessions = Arc::clone(&target.sessions);
        drive(target, &w, &plan);
        let mut all: Vec<Vec<String>> = std::mem::take(&mut *sessions.lock().unwrap());
        all.retain(|s| !s.is_empty());
        all.sort();
        all
    };
    let a = sequences(7);
    assert_eq!(a.iter().map(Vec::len).sum::<usize>(), 400);
    assert_eq!(a.len(), 3);
    assert_eq!(sequences(7), a);
    assert_ne!(sequences(8), a);
    // Clients draw interleaved sequence numbers: no key is put twice.
    let mut puts: Vec<&str> = a
        .iter()
        .flatten()
        .filter_map(|l| l.strip_prefix("put ")?.split(' ').next())
        .collect();
    let n = puts.len();
    puts.sort();
    puts.dedup();
    assert!(n > 0 && puts.len() == n);
}

/// Each client's operations as a run on [`Log`] received them, against what
/// `Chooser::next_offline` (`loadrig ops`) says the clients send: the same, for kv, native
/// transaction and `steps` operations, with several clients sharing `seq` generators.
#[test]
fn offline_binding_sends_what_a_run_sends() {
    let w = workload(
        "name = \"mixed\"\n\
         [[op]]\nname = \"put\"\nweight = 2\n\
         kv.put = { key = \"k{seq}\", value = \"{string 4}\" }\n\
         [[op]]\nname = \"get\"\nweight = 3\nkv.get = { key = \"k{zipf 0..100}\" }\n\
         [[op]]\nname = \"nop\"\nnop = {}\n\
         [[op]]\nname = \"incr\"\nredis = [\"INCRBY\", \"c{uniform 0..9}\", \"{seq 5}\"]\n\
         [[op]]\nname = \"move\"\ntx = [\n\
           { sql = { query = \"UPDATE loadrig_a SET n = n - 1 WHERE id = ?\", params = [\"{uniform 0..50}\"] } },\n\
           { sql = { query = \"UPDATE loadrig_a SET n = n + 1 WHERE id = ?\", params = [\"{client}\"] } },\n\
         ]\n\
         [[op]]\nname = \"chopped\"\nlet = { go = \"{uniform 1..2}\" }\ntx = [\n\
           { sql = { query = \"UPDATE loadrig_a SET n = 0 WHERE id = ?\", params = [\"{uniform 0..50}\"] } },\n\
           { commit = {} },\n\
           { sql = { query = \"UPDATE loadrig_b SET n = ? WHERE id = 1\", params = [\"{go}\"] }, when = \"go\" },\n\
         ]\n\
         [[op]]\nname = \"autocommit\"\nsteps = [\n\
           { repeat = \"{uniform 1..4}\", steps = [ { sql = { query = \"UPDATE loadrig_c SET n = ? WHERE id = ?\", params = [\"{iteration}\", \"{uniform 0..50}\"] } } ] },\n\
         ]\n",
    );
    let (clients, per_client) = (3, 40);
    let plan = LoadPlan {
        ops: Some(clients * per_client),
        seed: 11,
        threads: 2,
        ..closed(clients as usize)
    };
    let target = Log::default();
    let sessions = Arc::clone(&target.sessions);
    drive(target, &w, &plan);
    let mut received: Vec<Vec<String>> = std::mem::take(&mut *sessions.lock().unwrap());
    received.retain(|s| !s.is_empty());
    received.sort();

    let slots = Slots {
        seq: w.seq_slots,
        capture: w.capture_slots,
        seq_offset: 0,
    };
    let mut offline: Vec<Vec<String>> = (0..clients)
        .map(|c| {
            let counters = std::sync::Arc::new(crate::workload::ycsb::InsertCounters::new(
                w.seq_slots,
                0,
                1,
            ));
            let mut chooser = client::Chooser::new(&w.ops, plan.seed, c, clients, slots, counters);
            let mut sent = Vec::new();
            for _ in 0..per_client {
                chooser.next_offline(&mut |op| sent.push(logged(op)));
            }
            sent
        })
        .collect();
    offline.sort();
    assert_eq!(offline, received);
    let all = offline.concat();
    for kind in ["put k", "get k", "Nop", "Redis", "Begin", "Sql", "Commit"] {
        assert!(all.iter().any(|l| l.contains(kind)), "no {kind} in {all:?}");
    }
}

/// `steps` runs a tx's walk without the transaction: the session receives the statements
/// alone (a repeat group's passes included), never BEGIN, COMMIT or ROLLBACK, and the
/// statement counts have no "other". The same steps as a `tx` add BEGIN and COMMIT.
#[test]
fn steps_send_their_statements_without_a_transaction() {
    let op = |form: &str| {
        format!(
            "name = \"s\"\n[[op]]\nname = \"u\"\n{form} = [\n\
               {{ sql = {{ query = \"SELECT n FROM loadrig_a WHERE id = 1\" }}, capture = [\"n\"] }},\n\
               {{ repeat = \"3\", steps = [ {{ sql = {{ query = \"UPDATE loadrig_a SET n = ? WHERE id = ?\", params = [\"{{n}}\", \"{{iteration}}\"] }} }} ] }},\n\
             ]\n"
        )
    };
    let plan = LoadPlan {
        ops: Some(10),
        ..closed(1)
    };
    for (form, other) in [("steps", 0), ("tx", 2)] {
        let w = workload(&op(form));
        let target = Log::default();
        let sessions = Arc::clone(&target.sessions);
        let (data, _) = drive(target, &w, &plan);
        let sent = sessions.lock().unwrap().concat();
        let (begins, commits) = (
            sent.iter().filter(|l| *l == "Begin").count(),
            sent.iter().filter(|l| *l == "Commit").count(),
        );
        assert_eq!(
            (begins, commits),
            (10 * other / 2, 10 * other / 2),
            "{form}"
        );
        assert!(sent.iter().all(|l| l != "Rollback"), "{form}");
        assert_eq!(sent.len() - begins - commits, 10 * 4, "{form}");
        let s = &data.totals[0].statements;
        assert_eq!(
            (s.read, s.write, s.other),
            (10, 30, 10 * other as u64),
            "{form}"
        );
        assert_eq!(data.totals[0].ok, 10, "{form}");
    }
}

#[test]
fn prepare_reports_each_setup_statement_then_each_data_batch() {
    let dir = tempfile::tempdir().unwrap();
    let url = TargetUrl::parse(&format!("sqlite://{}/p.db", dir.path().display())).unwrap();
    let target = crate::targets::sqlite::Sqlite::open(&url, &Params::default()).unwrap();
    let w = workload(
        r#"
name = "t"
setup = [
  "CREATE TABLE IF NOT EXISTS loadrig_p (v INTEGER)",
  "INSERT INTO loadrig_p VALUES (1), (2), (3)",
]
[data]
count = 5
key = "k{seq}"
value = "v"
batch = 2
[[op]]
name = "get"
kv.get = { key = "k1" }
"#,
    );
    let mut seen = Vec::new();
    let prepared = prepare(
        &target,
        &w.setup,
        &w.before_run,
        w.settle,
        w.data.as_ref(),
        1,
        &mut |p| seen.push(p),
    )
    .unwrap();
    assert_eq!(
        seen,
        [
            LoadProgress::Setup {
                done: 0,
                of: 2,
                rows: 0
            },
            LoadProgress::Setup {
                done: 1,
                of: 2,
                rows: 0
            },
            LoadProgress::Setup {
                done: 2,
                of: 2,
                rows: 3
            },
            LoadProgress::Data { done: 0, of: 5 },
            LoadProgress::Data { done: 2, of: 5 },
            LoadProgress::Data { done: 4, of: 5 },
            LoadProgress::Data { done: 5, of: 5 },
        ]
    );
    assert_eq!(prepared.setup.map(|(n, rows, _)| (n, rows)), Some((2, 3)));
    assert_eq!(prepared.loaded.map(|(n, _)| n), Some(5));
}

/// A server that refuses every connection.
struct Refusing;

impl Target for Refusing {
    type Session = LogSession;

    fn from_url(_url: &TargetUrl, _params: &Params) -> Result<Self, InputError> {
        Ok(Refusing)
    }

    fn blocking(&self) -> bool {
        false
    }

    fn connect(&self) -> impl Future<Output = Result<LogSession, OpError>> {
        ready(Err(OpError::new(ErrorClass::Connect, "connection refused")))
    }
}

#[test]
fn a_run_no_client_could_join_fails_naming_the_first_error() {
    let w = workload(NOP);
    let plan = LoadPlan {
        ops: Some(10),
        ..closed(3)
    };
    let slots = Slots {
        seq: w.seq_slots,
        capture: w.capture_slots,
        seq_offset: 0,
    };
    let ops = Arc::new(w.ops.clone());
    let peers = Arc::new(Vec::new());
    let mut seen = Recorder::default();
    let dir = std::env::temp_dir();
    let Err(e) = run(
        Arc::new(Refusing),
        peers,
        ops,
        &plan,
        slots,
        &mut seen,
        &dir,
    ) else {
        panic!("a run with no client connected");
    };
    let none = e
        .downcast_ref::<NoClientConnected>()
        .expect("NoClientConnected");
    assert_eq!(
        (none.clients, none.first.as_str()),
        (3, "connection refused (connect)")
    );
    assert!(seen.0.is_empty(), "no interval ran");
}
