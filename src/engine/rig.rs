//! The rig watching itself while a run goes: its own CPU time, the machine's run queue, and
//! hiccups (the jHiccup method: a thread that sleeps a fixed short period and records how
//! late it wakes, so that stalls of the rig itself — scheduler, page faults, a stopped
//! process — show up apart from the server's latency).
//!
//! One thread does all three, off the hot path: it wakes every [`PERIOD`], and at each
//! interval boundary of the run's grid it reads the process's CPU time (`getrusage`) and
//! leaves the interval's sample where the collector picks it up. The clients are not
//! touched. Each wake costs the process some microseconds of CPU (a timer, two context
//! switches); a 1 ms period cost 1.8 % of a core here, as much as a pgbench-like run's
//! whole difference to pgbench, so the thread wakes every 5 ms (0.4 %). A stall shorter than
//! the period can go unseen, but the verdict only cares about stalls of 50 ms and more.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::timeline::Timeline;
use crate::clock;
use crate::stats::{new_hist, Hist};

/// The monitor thread's name.
pub const MONITOR_THREAD: &str = "rig-monitor";
/// How long the hiccup thread sleeps between wakes.
pub const PERIOD: Duration = Duration::from_millis(5);
/// The run queue is read every this many wakes (it costs a small file read).
const RUNQ_EVERY: u32 = 4;

/// What the rig saw of itself during one interval.
#[derive(Debug, Clone)]
pub struct RigSample {
    /// Wall time the sample covers.
    pub wall: Duration,
    /// CPU time of the whole loadrig process, user and system.
    pub user: Duration,
    pub system: Duration,
    /// Mean of the machine's runnable threads (`procs_running` of /proc/stat, the hiccup
    /// thread itself included), when the OS gives it.
    pub running: Option<f64>,
    /// How late the hiccup thread woke, in ns, corrected for the wakes a stall swallowed.
    pub hiccups: Hist,
    /// Each thread of the process over the interval, where the OS gives it (Linux, at most
    /// `MAX_THREADS` threads); empty otherwise.
    pub threads: Vec<ThreadSample>,
}

/// One thread of the process over an interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSample {
    /// The thread's name (`clients-3`, `rig-monitor`, `loadrig`).
    pub name: String,
    /// User and system CPU time (/proc/self/task/TID/stat, in clock ticks).
    pub cpu: Duration,
    /// Time on a CPU plus time runnable but waiting for one (/proc/self/task/TID/schedstat,
    /// in ns), where the kernel gives it: a thread that never slept has this equal to the
    /// interval even when the machine's other work left it only part of a core.
    pub wanted: Option<Duration>,
}

/// Threads are read only while the process has at most this many (each costs two small
/// file reads per interval; a run with a thread per client can have thousands).
pub const MAX_THREADS: usize = 256;

/// A thread's cumulative times: name, CPU (user + system), and on-CPU + run-queue time.
type ThreadTimes = (String, Duration, Option<Duration>);

/// Every thread of this process now, by thread id; `None` where /proc is missing or the
/// process has more than `MAX_THREADS` threads.
pub fn thread_times() -> Option<BTreeMap<u32, ThreadTimes>> {
    let tasks: Vec<_> = std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .collect();
    if tasks.len() > MAX_THREADS {
        return None;
    }
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tick_ns = if ticks > 0 {
        1_000_000_000 / ticks as u64
    } else {
        10_000_000
    };
    let mut all = BTreeMap::new();
    for task in tasks {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        // A thread that ended since the listing has no files any more: skip it.
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let Some((name, user, system)) = parse_stat(&stat) else {
            continue;
        };
        let wanted = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|t| parse_schedstat(&t));
        let cpu = Duration::from_nanos((user + system).saturating_mul(tick_ns));
        all.insert(tid, (name, cpu, wanted));
    }
    Some(all)
}

/// `TID (COMM) STATE ... UTIME STIME ...` (proc(5)): the name (which may hold spaces and
/// parentheses, so it ends at the last `)`), user and system time in ticks.
fn parse_stat(text: &str) -> Option<(String, u64, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    // Fields 3 (state) to 13 come first; utime and stime are fields 14 and 15.
    let user = rest.nth(11)?.parse().ok()?;
    let system = rest.next()?.parse().ok()?;
    Some((name, user, system))
}

/// `RUN_NS WAIT_NS TIMESLICES`: time on a CPU plus time waiting on a run queue.
fn parse_schedstat(text: &str) -> Option<Duration> {
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    let run = f.next()??;
    let wait = f.next()??;
    Some(Duration::from_nanos(run.saturating_add(wait)))
}

/// Each thread's times between `before` and `now` (a thread born in between counts from 0).
fn thread_deltas(
    before: &BTreeMap<u32, ThreadTimes>,
    now: &BTreeMap<u32, ThreadTimes>,
) -> Vec<ThreadSample> {
    now.iter()
        .map(|(tid, (name, cpu, wanted))| {
            let (b_cpu, b_wanted) = before
                .get(tid)
                .map_or((Duration::ZERO, Some(Duration::ZERO)), |b| (b.1, b.2));
            ThreadSample {
                name: name.clone(),
                cpu: cpu.saturating_sub(b_cpu),
                wanted: wanted.zip(b_wanted).map(|(w, b)| w.saturating_sub(b)),
            }
        })
        .collect()
}

/// A [`RigSample`] without its histogram and its threads: what the run keeps in memory of
/// it (fixed-size numbers; the rest goes to src/engine/spill.rs).
#[derive(Debug, Clone)]
pub struct RigBrief {
    pub wall: Duration,
    pub user: Duration,
    pub system: Duration,
    pub running: Option<f64>,
    pub hiccup_p99_ns: u64,
    pub hiccup_max_ns: u64,
}

impl RigSample {
    pub fn brief(&self) -> RigBrief {
        let (p99, max) = if self.hiccups.is_empty() {
            (0, 0)
        } else {
            (self.hiccups.value_at_quantile(0.99), self.hiccups.max())
        };
        RigBrief {
            wall: self.wall,
            user: self.user,
            system: self.system,
            running: self.running,
            hiccup_p99_ns: p99,
            hiccup_max_ns: max,
        }
    }
}

/// User and system CPU time of this process.
pub fn process_cpu() -> (Duration, Duration) {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage; RUSAGE_SELF is always accepted.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// The machine's runnable threads now, where the OS gives them: the kernel's `nr_running`,
/// read from /proc/loadavg (`0.50 0.40 0.30 RUNNING/TOTAL LASTPID`), which is the same count
/// as `procs_running` in /proc/stat but costs far less to generate than that whole file.
pub fn procs_running() -> Option<u32> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .0
        .parse()
        .ok()
}

/// The running monitor thread.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<BTreeMap<u64, RigSample>>>,
    handle: Option<JoinHandle<()>>,
}

impl Monitor {
    /// Start watching from `t0`, the start of the run, on the run's interval grid.
    pub fn start(t0: Instant, timeline: Timeline) -> Monitor {
        // Not in the thread: a calibration there would come after `t0`'s interval began.
        clock::calibrate();
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(BTreeMap::new()));
        let handle = {
            let stop = Arc::clone(&stop);
            let samples = Arc::clone(&samples);
            std::thread::Builder::new()
                .name(MONITOR_THREAD.into())
                .spawn(move || watch(t0, timeline, &stop, &samples))
                .ok()
        };
        Monitor {
            stop,
            samples,
            handle,
        }
    }

    /// The sample of interval `k`, waiting up to `wait` for the thread to close it; none
    /// at once if the thread has already closed a later interval (a stall made it skip
    /// `k`). The collector asks for the intervals in order, so samples of earlier intervals
    /// that came too late are dropped here: kept, each would hold a hiccup histogram for the
    /// rest of the run.
    pub fn take(&self, k: u64, wait: Duration) -> Option<RigSample> {
        let until = Instant::now() + wait;
        loop {
            {
                let mut samples = self.samples.lock().ok()?;
                let found = samples.remove(&k);
                let passed = samples.keys().next_back().is_some_and(|&i| i > k);
                samples.retain(|&i, _| i > k);
                if found.is_some() || passed {
                    return found;
                }
            }
            if Instant::now() >= until || self.handle.is_none() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Stop the thread; it closes the interval it is in first.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.finish();
    }
}

fn watch(
    t0: Instant,
    timeline: Timeline,
    stop: &AtomicBool,
    samples: &Mutex<BTreeMap<u64, RigSample>>,
) {
    crate::clock::precise_timers_for_this_thread();
    // Interval boundaries on the clients' clock (the time-stamp counter, calibrated once per
    // process), not the kernel's: the two can disagree (a calibration's error adds up over a
    // long run), and then the samples land in the wrong intervals or miss them altogether.
    let q0 = clock::from_std(t0);
    let period_ns = PERIOD.as_nanos() as u64;
    let mut k = timeline.index_of(clock::Instant::now().duration_since(q0));
    let mut since = Instant::now();
    let mut cpu = process_cpu();
    let mut threads = thread_times();
    let mut hiccups = new_hist();
    let (mut runq_sum, mut runq_n) = (0u64, 0u32);
    let mut wakes = 0u32;
    loop {
        let before = Instant::now();
        std::thread::sleep(PERIOD);
        let now = Instant::now();
        let late = now.duration_since(before).saturating_sub(PERIOD);
        // jHiccup: a stall of S also swallowed the wakes that should have come during it.
        let _ = hiccups.record_correct(late.as_nanos() as u64, period_ns);
        wakes = wakes.wrapping_add(1);
        if wakes.is_multiple_of(RUNQ_EVERY) {
            if let Some(r) = procs_running() {
                runq_sum += u64::from(r);
                runq_n += 1;
            }
        }
        let stopping = stop.load(Ordering::Relaxed);
        let at = timeline.index_of(clock::Instant::now().duration_since(q0));
        if at > k || stopping {
            let now_cpu = process_cpu();
            let now_threads = thread_times();
            let sample = RigSample {
                wall: now.duration_since(since),
                user: now_cpu.0.saturating_sub(cpu.0),
                system: now_cpu.1.saturating_sub(cpu.1),
                running: (runq_n > 0).then(|| runq_sum as f64 / f64::from(runq_n)),
                hiccups: std::mem::replace(&mut hiccups, new_hist()),
                threads: match (&threads, &now_threads) {
                    (Some(b), Some(n)) => thread_deltas(b, n),
                    _ => Vec::new(),
                },
            };
            if let Ok(mut s) = samples.lock() {
                s.insert(k, sample);
            }
            k = at;
            since = now;
            cpu = now_cpu;
            threads = now_threads;
            (runq_sum, runq_n) = (0, 0);
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_cpu_time() {
        // Spins until the clock shows 10 ms of CPU, not for a wall time: on a busy machine
        // 30 ms of wall time may bring this thread almost no CPU. The wall limit only ends
        // a reader that never advances.
        let (u0, s0) = process_cpu();
        let mut x = 0u64;
        let t = Instant::now();
        let advanced = loop {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
            let (u1, s1) = process_cpu();
            if u1 + s1 > u0 + s0 + Duration::from_millis(10) {
                break true;
            }
            if t.elapsed() > Duration::from_secs(60) {
                break false;
            }
        };
        std::hint::black_box(x);
        assert!(advanced, "the process's CPU time did not advance by 10 ms in 60 s of spinning");
    }

    #[test]
    fn reads_its_threads_by_name() {
        let stat = "4242 (clients 0) (x)) R 1 2 3 4 5 6 7 8 9 10 250 31 0 0 20 0 1 0";
        assert_eq!(
            parse_stat(stat),
            Some(("clients 0) (x)".to_string(), 250, 31))
        );
        assert_eq!(
            parse_schedstat("246639948 440008598 100\n"),
            Some(Duration::from_nanos(686_648_546))
        );
        let spinner = std::thread::Builder::new()
            .name("spin-test".into())
            .spawn(|| {
                let t = Instant::now();
                let mut x = 0u64;
                while t.elapsed() < Duration::from_millis(100) {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
                std::hint::black_box(x);
                thread_times()
            })
            .unwrap();
        let seen = spinner
            .join()
            .unwrap()
            .expect("Linux gives /proc/self/task");
        let (_, cpu, wanted) = seen
            .values()
            .find(|(name, _, _)| name == "spin-test")
            .expect("the spinning thread by its name");
        // Spinning, it was on a CPU or waiting for one the whole time, so the time it wanted
        // holds its CPU time (stat's ticks are 10 ms). Not compared with the 100 ms of wall
        // time: time the hypervisor took from the VM counts in neither (a shared host once
        // gave 74 ms of the 100).
        let wanted = wanted.expect("schedstat");
        assert!(
            wanted + Duration::from_millis(20) >= *cpu,
            "{wanted:?} {cpu:?}"
        );
        assert!(*cpu <= Duration::from_millis(130), "{cpu:?}");
    }

    #[test]
    fn closes_each_interval_with_a_sample() {
        let timeline = Timeline::new(Duration::from_millis(20), Duration::ZERO, None);
        let mut m = Monitor::start(Instant::now(), timeline);
        // The thread begins in the interval it starts in: on a loaded machine (the test
        // command's other tests) that can be after interval 0, which it then never closes,
        // as a stall makes it skip one in a run. Its first sample may cover part of an
        // interval; the next covers a whole one.
        let mut closed = (0..100).filter_map(|k| m.take(k, Duration::from_secs(5)));
        closed.next().expect("an interval closed");
        let whole = closed.next().expect("a second interval closed");
        assert!(whole.wall >= Duration::from_millis(15), "{:?}", whole.wall);
        assert!(!whole.hiccups.is_empty());
        m.finish();
    }

    /// A sample the collector missed (it came after the collector stopped waiting) must not
    /// stay: an hour's run lost one a second and grew by 90 KB a second.
    #[test]
    fn samples_of_intervals_already_emitted_are_dropped() {
        let sample = |_| RigSample {
            wall: Duration::from_secs(1),
            user: Duration::ZERO,
            system: Duration::ZERO,
            running: None,
            hiccups: new_hist(),
            threads: Vec::new(),
        };
        let m = Monitor {
            stop: Arc::new(AtomicBool::new(false)),
            samples: Arc::new(Mutex::new((0..6).map(|k| (k, sample(k))).collect())),
            // A thread to wait for, as in a run (it has nothing to do).
            handle: std::thread::Builder::new().spawn(|| ()).ok(),
        };
        assert!(m.take(3, Duration::ZERO).is_some());
        // Interval 4's sample is there, so 2's will never come: answered without waiting
        // out the minute (microseconds against a minute, not a speed check).
        let t = Instant::now();
        assert!(m.take(2, Duration::from_secs(60)).is_none());
        assert!(t.elapsed() < Duration::from_secs(30));
        let left: Vec<u64> = m.samples.lock().unwrap().keys().copied().collect();
        assert_eq!(left, vec![4, 5]);
        assert!(m.take(9, Duration::ZERO).is_none());
        assert!(m.samples.lock().unwrap().is_empty());
    }
}
