//! The short soak check: a steady open-loop run of 18 s in 100 ms intervals on
//! `sleep://`, whose resident memory must stay flat while every interval is kept. Before
//! the finished intervals' histograms went to a file (src/engine/spill.rs), each interval
//! kept about 500 KB in memory: this run grew by some 60 MB between its first and last
//! third. `LOADRIG_BIN=path` runs another build instead of this one.
//!
//! Also: 10,000 client streams in 50 ms intervals, whose per-client operation counts
//! (80 KB an interval) go to the same file, and the fairness figures read back from it;
//! and what each finished interval still keeps in memory, in heap bytes counted by an
//! allocator (resident memory over many short intervals moves too much in a debug build
//! on a busy machine, whose collector falls behind now and then, to tell 200 bytes an
//! interval from 1 KB).

use std::time::Duration;

use crate::common::locks::{hold, Shared};
use crate::common::Dir;

const SECONDS: u64 = 18;
const INTERVAL_MS: u64 = 100;
/// Growth allowed between the median resident memory of the first and the last third of
/// the run: the allocator's slack, far below what keeping 120 intervals in memory costs.
const GROWTH_KB: i64 = 8 * 1024;

fn rss_kb(pid: u32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn loadrig_bin() -> String {
    std::env::var("LOADRIG_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_loadrig").into())
}

/// Run `loadrig ARGS` in `d`, sampling its resident memory (kB) every `every` until it ends;
/// insists on success.
fn run_sampled(d: &Dir, args: &[&str], every: Duration) -> Vec<i64> {
    let mut child = std::process::Command::new(loadrig_bin())
        .current_dir(d.path())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start loadrig");
    let mut rss = Vec::new();
    while child.try_wait().expect("wait").is_none() {
        if let Some(kb) = rss_kb(child.id()) {
            rss.push(kb);
        }
        std::thread::sleep(every);
    }
    let out = child.wait_with_output().expect("loadrig ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rss
}

const ONE_OP: &str = "name = \"one\"\ndescription = \"new keys\"\n\
    [[op]]\nname = \"put\"\nkv.put = { key = \"s{seq}\", value = \"{bytes 10}\" }\n";

/// Growth allowed between the median resident memory of the second and the last quarter
/// of the many-clients run. Keeping each interval's 10,000 counters in memory grew it by
/// about 80 KB an interval: some 6 MB between those quarters' middles (4 s apart).
const MANY_CLIENTS_GROWTH_KB: i64 = 3 * 1024;

#[test]
fn per_client_counts_of_many_clients_stay_out_of_memory() {
    // 10,000 streams in 50 ms intervals burn the CPU, and the collector must keep up.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    let workload = d.write("one.toml", ONE_OP);
    // Two connections of 5,000 streams each: two client threads, so that the collector
    // keeps up with 20 intervals a second in a debug build; a 1 s latency keeps the
    // operations few (10,000 a second) while every stream completes some.
    let rss = run_sampled(
        &d,
        &[
            "run",
            workload.to_str().unwrap(),
            "--target",
            "sleep://?latency=1s",
            "--clients",
            "2",
            "--pipeline",
            "5000",
            "--duration",
            "8s",
            "--interval",
            "50ms",
            "-o",
            "many.json",
        ],
        Duration::from_millis(100),
    );
    assert!(rss.len() >= 40, "{} samples of resident memory", rss.len());
    let q = rss.len() / 4;
    let second = median(&mut rss[q..2 * q].to_vec());
    let last = median(&mut rss[3 * q..].to_vec());
    assert!(
        last - second < MANY_CLIENTS_GROWTH_KB,
        "resident memory grew from {second} kB to {last} kB: {rss:?}"
    );
    let r = d.result("many.json");
    assert_eq!(r.intervals.len(), 160, "every interval");
    let ok: u64 = r.intervals.iter().map(|i| i.ok).sum();
    assert_eq!(ok, r.total.ok, "the intervals hold every success");
    // Every stream completed an operation a second, read back from the file for the verdict.
    let fairness = r.validity.expect("a verdict").fairness;
    assert_eq!(fairness.clients, 10_000);
    assert!(fairness.min >= 6, "{fairness:?}");
}

/// The median of `sorted`, as the result file gives it.
fn median_of(sorted: &[u64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0
    }
}

/// Jain's index, (Σx)² / (n·Σx²), summed in client order as the rig does.
fn jain_of(xs: &[u64]) -> Option<f64> {
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let squares: f64 = xs.iter().map(|&x| (x as f64).powi(2)).sum();
    (squares > 0.0).then(|| sum * sum / (xs.len() as f64 * squares))
}

fn same_jain(got: Option<f64>, want: Option<f64>) {
    match (got, want) {
        // Within what parsing the file's shortest decimal back can move (an ulp or two).
        (Some(g), Some(w)) => assert!((g - w).abs() <= w * 1e-15, "Jain {g} for {w}"),
        _ => assert_eq!(got, want),
    }
}

#[test]
fn fairness_figures_equal_those_of_the_per_client_counts() {
    let d = Dir::new();
    let workload = d.write("one.toml", ONE_OP);
    // A shard run (of one) records each client's count per interval beside the figures.
    d.ok(&[
        "run",
        workload.to_str().unwrap(),
        "--target",
        "sleep://?latency=5ms",
        "--clients",
        "12",
        "--duration",
        "2s",
        "--interval",
        "50ms",
        "--shard",
        "0/1",
        "-o",
        "shard.json",
    ]);
    let r = d.result("shard.json");
    assert_eq!(r.intervals.len(), 40);
    let mut totals = [0u64; 12];
    for i in &r.intervals {
        assert_eq!(i.per_client.len(), 12, "interval {}", i.index);
        assert_eq!(i.per_client.iter().sum::<u64>(), i.ok + i.errors);
        let mut sorted = i.per_client.clone();
        sorted.sort_unstable();
        let f = i.fairness.as_ref().expect("fairness");
        assert_eq!((f.min, f.max), (sorted[0], sorted[11]));
        assert_eq!(f.median, median_of(&sorted));
        same_jain(f.jain, jain_of(&i.per_client));
        let starved = if f.median >= 4.0 {
            sorted.iter().filter(|&&c| c == 0).count()
        } else {
            0
        };
        assert_eq!(f.starved, starved);
        if !i.warmup {
            for (t, c) in totals.iter_mut().zip(&i.per_client) {
                *t += c;
            }
        }
    }
    let v = r.validity.expect("a verdict");
    // Starved: completed nothing in at least half of the judged (measured, full) intervals
    // while the median client completed the threshold or more.
    let full: Vec<_> = r
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.end_s - i.start_s >= 0.05 * 0.999)
        .collect();
    let mut starved_in = [0usize; 12];
    for i in &full {
        let mut sorted = i.per_client.clone();
        sorted.sort_unstable();
        if median_of(&sorted) >= v.thresholds.starved_median {
            for (s, &c) in starved_in.iter_mut().zip(&i.per_client) {
                *s += usize::from(c == 0);
            }
        }
    }
    let s = v.fairness;
    assert_eq!(s.starved_client_intervals, starved_in.iter().sum::<usize>());
    assert_eq!(
        s.starved_clients,
        starved_in
            .iter()
            .filter(|&&n| n > 0 && n * 2 >= full.len())
            .count()
    );
    let mut sorted = totals.to_vec();
    sorted.sort_unstable();
    assert_eq!(s.clients, 12);
    assert_eq!((s.min, s.max), (sorted[0], sorted[11]));
    assert_eq!(s.median, median_of(&sorted));
    assert!(
        s.median > 100.0,
        "each client completed some 400: {totals:?}"
    );
    same_jain(s.jain, jain_of(&totals));
}

#[test]
fn resident_memory_stays_flat_and_no_interval_is_missing() {
    let d = Dir::new();
    let workload = d.write(
        "soak.toml",
        "name = \"soak\"\ndescription = \"new keys and reads of them\"\n\
         [[op]]\nname = \"put\"\nkv.put = { key = \"s{seq}\", value = \"{bytes 100}\" }\n\
         [[op]]\nname = \"get\"\nkv.get = { key = \"s{uniform 0..1000}\" }\n",
    );
    let rss = run_sampled(
        &d,
        &[
            "run",
            workload.to_str().unwrap(),
            "--target",
            "sleep://?latency=1ms",
            "--rate",
            "500",
            "--duration",
            &format!("{SECONDS}s"),
            "--interval",
            &format!("{INTERVAL_MS}ms"),
            "-o",
            "soak.json",
        ],
        Duration::from_millis(200),
    );
    assert!(rss.len() >= 30, "{} samples of resident memory", rss.len());
    let third = rss.len() / 3;
    let first = median(&mut rss[..third].to_vec());
    let last = median(&mut rss[rss.len() - third..].to_vec());
    assert!(
        last - first < GROWTH_KB,
        "resident memory grew from {first} kB to {last} kB over the run: {rss:?}"
    );

    let r = d.result("soak.json");
    let want = SECONDS * 1000 / INTERVAL_MS;
    let index: Vec<u64> = r.intervals.iter().map(|i| i.index).collect();
    assert_eq!(
        index,
        (1..=want).collect::<Vec<_>>(),
        "every interval, in order"
    );
    let ok: u64 = r.intervals.iter().map(|i| i.ok).sum();
    assert_eq!(ok, r.total.ok, "the intervals hold every success");
    assert!(r.total.ok > 0 && r.total.errors == 0);
}

/// Heap bytes allocated and not yet freed by the current thread (the store under test
/// lives on one thread; the other tests run on theirs). The allocator is the whole test
/// binary's, so every test's allocations go through it: one thread-local count each.
mod live_bytes {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<i64> = const { Cell::new(0) };
    }

    pub struct Counting;

    // SAFETY: every call is passed on to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = LIVE.try_with(|l| l.set(l.get() + layout.size() as i64));
            // SAFETY: the caller's layout, as given.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            let _ = LIVE.try_with(|l| l.set(l.get() - layout.size() as i64));
            // SAFETY: the caller's pointer and layout, as given.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    pub fn now() -> i64 {
        LIVE.with(Cell::get)
    }
}

#[global_allocator]
static COUNTING: live_bytes::Counting = live_bytes::Counting;

/// Intervals kept, and heap bytes each may keep in memory: its counts, the rig's CPU times
/// and its place in the file (some 250 bytes). Keeping the rig's per-thread samples (a name
/// and two times for each thread: here 8) and an in-memory place as large as a whole
/// interval's histograms took about 1 KB an interval, which grew the hour-long soak's
/// resident memory by 15 % (docs/performance.md).
const KEPT: u64 = 1024;
const KEPT_BYTES: i64 = 400;

fn an_interval(k: u64) -> loadrig::engine::IntervalData {
    use loadrig::engine::rig::{RigSample, ThreadSample};
    use loadrig::stats::{new_hist, OpCounters};
    let mut ops = vec![OpCounters::default(), OpCounters::default()];
    ops[0].ok = 5;
    ops[0].latency.record(1_000 + k).unwrap();
    let mut hiccups = new_hist();
    hiccups.record(5_000).unwrap();
    loadrig::engine::IntervalData {
        index: k,
        start: Duration::from_millis(10 * k),
        end: Duration::from_millis(10 * k + 10),
        warmup: false,
        ops,
        per_client: vec![1; 64],
        rig: Some(RigSample {
            wall: Duration::from_millis(10),
            user: Duration::from_millis(1),
            system: Duration::ZERO,
            running: Some(1.0),
            hiccups,
            threads: (0..8)
                .map(|t| ThreadSample {
                    name: format!("clients-{t}"),
                    cpu: Duration::from_millis(t),
                    wanted: Some(Duration::from_millis(t + 1)),
                })
                .collect(),
        }),
        stage: None,
        clients: None,
        ran_whole: None,
        offered: None,
    }
}

#[test]
fn many_short_intervals_keep_a_few_numbers_each() {
    let d = Dir::new();
    let mut store = loadrig::engine::spill::IntervalStore::new(d.path());
    let mut briefs = Vec::new();
    // The first KEPT intervals grow what is made once (buffers, the file) and leave the
    // lists of briefs and places full: the next KEPT double them, so that what they hold
    // is what each interval costs.
    for k in 0..KEPT {
        briefs.push(store.keep(an_interval(k)));
    }
    let before = live_bytes::now();
    for k in KEPT..2 * KEPT {
        let data = an_interval(k);
        briefs.push(store.keep(data));
    }
    let per_interval = (live_bytes::now() - before) / KEPT as i64;
    eprintln!("each interval kept {per_interval} bytes in memory");
    assert!(
        per_interval < KEPT_BYTES,
        "each interval kept {per_interval} bytes in memory"
    );
    // All of it read back from the file: the last interval's threads and counts.
    let k = 2 * KEPT as usize - 1;
    let want = an_interval(k as u64).rig.unwrap().threads;
    assert_eq!(store.threads(k).unwrap(), want);
    assert_eq!(store.per_client(k).unwrap(), vec![1; 64]);
    assert_eq!(briefs[k].ops[0].ok, 5);
}
