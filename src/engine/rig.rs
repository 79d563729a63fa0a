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
use crate::stats::{new_hist, Hist};

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
}

/// A [`RigSample`] without its histogram: what the run keeps in memory of it.
#[derive(Debug, Clone, Copy)]
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
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(BTreeMap::new()));
        let handle = {
            let stop = Arc::clone(&stop);
            let samples = Arc::clone(&samples);
            std::thread::Builder::new()
                .name("rig-monitor".into())
                .spawn(move || watch(t0, timeline, &stop, &samples))
                .ok()
        };
        Monitor {
            stop,
            samples,
            handle,
        }
    }

    /// The sample of interval `k`, waiting up to `wait` for the thread to close it.
    pub fn take(&self, k: u64, wait: Duration) -> Option<RigSample> {
        let until = Instant::now() + wait;
        loop {
            if let Some(s) = self.samples.lock().ok()?.remove(&k) {
                return Some(s);
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
    let period_ns = PERIOD.as_nanos() as u64;
    let mut k = timeline.index_of(t0.elapsed());
    let mut since = Instant::now();
    let mut cpu = process_cpu();
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
        let at = timeline.index_of(now.duration_since(t0));
        if at > k || stopping {
            let now_cpu = process_cpu();
            let sample = RigSample {
                wall: now.duration_since(since),
                user: now_cpu.0.saturating_sub(cpu.0),
                system: now_cpu.1.saturating_sub(cpu.1),
                running: (runq_n > 0).then(|| runq_sum as f64 / f64::from(runq_n)),
                hiccups: std::mem::replace(&mut hiccups, new_hist()),
            };
            if let Ok(mut s) = samples.lock() {
                s.insert(k, sample);
            }
            k = at;
            since = now;
            cpu = now_cpu;
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
        let (u0, s0) = process_cpu();
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let (u1, s1) = process_cpu();
        assert!(u1 + s1 > u0 + s0 + Duration::from_millis(10));
    }

    #[test]
    fn closes_each_interval_with_a_sample() {
        let timeline = Timeline::new(Duration::from_millis(20), Duration::ZERO, None);
        let mut m = Monitor::start(Instant::now(), timeline);
        let first = m
            .take(0, Duration::from_secs(5))
            .expect("interval 0 closed");
        assert!(first.wall >= Duration::from_millis(15), "{:?}", first.wall);
        assert!(!first.hiccups.is_empty());
        m.finish();
    }
}
