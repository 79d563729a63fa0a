//! Whether a run's figures can be trusted, as the result file records it: the rig's own CPU
//! and the machine's run queue, hiccups of the rig (jHiccup's method), fairness between
//! clients, Little's law, and the open loop's late and missed starts, judged into one
//! verdict; the thresholds and their defaults. The checks that judge are
//! `analysis::validity`; the figures, their thresholds and what to do about a suspect run
//! are in docs/validity.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::drift::{TrendTest, DRIFT_CHANGE, DRIFT_P};
use super::EncodedHistogram;
use crate::engine::rig::{RigBrief, ThreadSample, MONITOR_THREAD};
use crate::stats::thousands;

/// The rig is busy when its CPU time over an interval is at least this share of all cores.
pub const BUSY_SHARE: f64 = 0.9;
/// The machine is crowded when its mean runnable threads exceed the cores by more than this
/// (the monitor thread counts itself when it reads the run queue).
pub const CROWDED_MARGIN: f64 = 1.0;
/// One thread of the rig is saturated when it was busy (on a CPU or waiting for one) at
/// least this share of an interval.
pub const THREAD_BUSY: f64 = 0.9;
/// The busiest threads recorded per interval, of at least `THREAD_MIN_SHARE` of a core.
pub const THREADS_KEPT: usize = 8;
pub const THREAD_MIN_SHARE: f64 = 0.001;
/// A rig stall (hiccup) at least this long makes a run suspect.
pub const HICCUP_NS: u64 = 50_000_000;
/// A client that completed nothing in an interval is starved when the median client
/// completed at least this many operations there.
pub const STARVED_MEDIAN: f64 = 4.0;
/// Little's law may be off by this share before the run is suspect.
pub const LITTLE_TOLERANCE: f64 = 0.15;
/// Little's law is judged only when the clients completed at least this many operations
/// each on average (the operations cut by the start and the end of the measured part skew
/// a shorter run by about one in this many).
pub const LITTLE_MIN_OPS_PER_CLIENT: f64 = 50.0;
/// Jain's index over the clients' totals below this makes a run suspect, when the clients
/// completed at least `JAIN_MIN_OPS_PER_CLIENT` each on average (a fair closed loop whose
/// clients complete μ operations each by chance has an index of about μ/(μ+1)).
pub const JAIN: f64 = 0.8;
pub const JAIN_MIN_OPS_PER_CLIENT: f64 = 20.0;
/// Open loop: a share of late starts above this makes a run suspect.
pub const LATE_SHARE: f64 = 0.05;
/// Targets that run inside the rig's own process: their CPU is the rig's, so the rig's CPU
/// and the run queue are recorded but not judged.
pub const IN_PROCESS: &[&str] = &["sqlite", "fs", "dbm"];

/// The thresholds of the verdict; `--validity NAME=VALUE` changes one (docs/validity.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Thresholds {
    /// `busy`: the rig's CPU share of all cores that makes an interval busy.
    pub busy_share: f64,
    /// `hiccup`: the rig stall (ns) that makes a run suspect.
    pub hiccup_ns: u64,
    /// `starved-median`: the median client's operations in an interval above which a
    /// client that completed none is starved.
    pub starved_median: f64,
    /// `little`: how far off Little's law may be.
    pub little_tolerance: f64,
    /// `late`: the share of late starts an open loop may have.
    pub late_share: f64,
    /// `jain`: the lowest Jain's index over the clients' totals (absent in files written
    /// before it existed: the default).
    #[serde(default = "default_jain")]
    pub jain: f64,
    /// `drift`: the change over the intervals judged (share of the mean, by Sen's slope)
    /// from which a significant trend makes a run suspect (absent in older files: default).
    #[serde(default = "default_drift")]
    pub drift_change: f64,
    /// `drift-p`: the trend test's p below which a trend is significant.
    #[serde(default = "default_drift_p")]
    pub drift_p: f64,
    /// `thread`: the share of an interval one thread of the rig was busy (running or
    /// waiting for a CPU) that makes it saturated (absent in older files: the default).
    #[serde(default = "default_thread_busy")]
    pub thread_busy: f64,
}

fn default_thread_busy() -> f64 {
    THREAD_BUSY
}

fn default_jain() -> f64 {
    JAIN
}

fn default_drift() -> f64 {
    DRIFT_CHANGE
}

fn default_drift_p() -> f64 {
    DRIFT_P
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            busy_share: BUSY_SHARE,
            hiccup_ns: HICCUP_NS,
            starved_median: STARVED_MEDIAN,
            little_tolerance: LITTLE_TOLERANCE,
            late_share: LATE_SHARE,
            jain: JAIN,
            drift_change: DRIFT_CHANGE,
            drift_p: DRIFT_P,
            thread_busy: THREAD_BUSY,
        }
    }
}

/// The names `--validity` takes, with an example each.
pub const THRESHOLD_NAMES: &str =
    "busy=90%, hiccup=50ms, starved-median=4, little=15%, late=5%, jain=0.8, drift=10%, drift-p=0.01, thread=90%";

impl Thresholds {
    /// Apply one `NAME=VALUE`; the error says what was expected.
    pub fn set(&mut self, text: &str) -> Result<(), String> {
        let (name, value) = text
            .split_once('=')
            .map(|(n, v)| (n.trim(), v.trim()))
            .ok_or_else(|| format!("'{text}' is not NAME=VALUE"))?;
        let percent = |v: &str| -> Result<f64, String> {
            let n = v
                .strip_suffix('%')
                .ok_or_else(|| format!("{name}={v}: expected a percentage, like 90%"))?
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("{name}={v}: expected a percentage, like 90%"))?;
            if !(0.0..=1000.0).contains(&n) {
                return Err(format!(
                    "{name}={v}: expected a percentage from 0% to 1000%"
                ));
            }
            Ok(n / 100.0)
        };
        match name {
            "busy" => self.busy_share = percent(value)?,
            "little" => self.little_tolerance = percent(value)?,
            "late" => self.late_share = percent(value)?,
            "drift" => self.drift_change = percent(value)?,
            "thread" => self.thread_busy = percent(value)?,
            "drift-p" => {
                self.drift_p = value
                    .parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && *p < 1.0)
                    .ok_or_else(|| {
                        format!("drift-p={value}: expected a p-value between 0 and 1, like 0.01")
                    })?
            }
            "hiccup" => {
                self.hiccup_ns = crate::duration::parse(value, "--validity hiccup")
                    .map_err(|_| format!("hiccup={value}: expected a duration, like 50ms"))?
                    .as_nanos() as u64
            }
            "jain" => {
                self.jain = value
                    .parse::<f64>()
                    .ok()
                    .filter(|j| (0.0..=1.0).contains(j))
                    .ok_or_else(|| {
                        format!("jain={value}: expected an index from 0 to 1, like 0.8")
                    })?
            }
            "starved-median" => {
                self.starved_median = value
                    .parse::<f64>()
                    .ok()
                    .filter(|n| *n >= 1.0 && n.is_finite())
                    .ok_or_else(|| {
                        format!("starved-median={value}: expected a count of at least 1, like 4")
                    })?
            }
            _ => return Err(format!("unknown threshold '{name}'")),
        }
        Ok(())
    }
}

/// The rig itself over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RigInterval {
    /// CPU time of the loadrig process, user and system, in seconds.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// (user + system) / (wall time × cores available): 1 is every core busy.
    pub cpu_share: f64,
    /// CPU microseconds per completed operation; null when none completed.
    pub cpu_us_per_op: Option<f64>,
    /// Mean runnable threads of the whole machine (/proc/stat procs_running, sampled every
    /// 10 ms); left out where the OS does not give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procs_running: Option<f64>,
    /// How late the hiccup thread woke (ns): 99th percentile and maximum.
    pub hiccup_p99_ns: u64,
    pub hiccup_max_ns: u64,
    /// The busiest threads of the rig over the interval, busiest first (up to 8, of at
    /// least 0.1 % of a core); left out where the OS does not give them (or the process had
    /// more than 256 threads) and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadShare>,
}

/// One thread of the rig over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadShare {
    /// The thread's name: `clients-K` for the K-th client thread, `loadrig` for the
    /// collector (the main thread), `rig-monitor`.
    pub name: String,
    /// CPU time (user + system) over the interval's wall time: 1 is one core.
    pub cpu_share: f64,
    /// Time on a CPU or runnable waiting for one, over the wall time: 1 when the thread
    /// never slept, however little of a core the machine left it. Null where the kernel
    /// does not give it (/proc/TID/schedstat).
    pub busy_share: Option<f64>,
}

impl ThreadShare {
    /// How busy the thread was: `busy_share`, else its CPU share.
    pub fn busy(&self) -> f64 {
        self.busy_share.unwrap_or(self.cpu_share)
    }
}

/// Operations completed per client in one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FairnessInterval {
    pub min: u64,
    pub median: f64,
    pub max: u64,
    /// Jain's fairness index, (Σx)² / (n·Σx²): 1 when every client completed as many, 1/n
    /// when one did everything; null when none completed anything.
    pub jain: Option<f64>,
    /// Clients that completed nothing while the median client completed at least
    /// `STARVED_MEDIAN` (4; the verdict's `starved-median` threshold may differ).
    pub starved: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Valid,
    Suspect,
}

impl Verdict {
    /// Valid when nothing gave a reason to doubt the figures.
    pub fn of(reasons: &[String]) -> Verdict {
        if reasons.is_empty() {
            Verdict::Valid
        } else {
            Verdict::Suspect
        }
    }
}

/// The run judging itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    pub verdict: Verdict,
    /// Why the run is suspect, one sentence each; empty when valid.
    pub reasons: Vec<String>,
    pub rig: RigSummary,
    pub hiccups: HiccupSummary,
    pub fairness: FairnessSummary,
    /// Null when the run completed nothing.
    pub littles_law: Option<LittlesLaw>,
    /// The thresholds the verdict used (`--validity` changes them).
    #[serde(default)]
    pub thresholds: Thresholds,
    /// Whether throughput and p99 were still drifting over the intervals judged (a trend
    /// test each); absent in older files and for runs of fewer than 8 full intervals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trends: Vec<TrendTest>,
}

impl Validity {
    /// The console's closing line: `valid`, or `suspect: REASON; REASON`.
    pub fn line(&self) -> String {
        match self.verdict {
            Verdict::Valid => "valid".to_string(),
            Verdict::Suspect => format!("suspect: {}", self.reasons.join("; ")),
        }
    }
}

/// The rig's CPU over the measured part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RigSummary {
    /// Cores available to the process.
    pub cores: usize,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub cpu_share: f64,
    pub cpu_us_per_op: Option<f64>,
    /// The intervals judged (measured, full length, with a sample).
    pub intervals: usize,
    /// Of those, the ones where the rig's CPU share reached the `busy` threshold (90 %).
    pub busy_intervals: usize,
    /// Of those, the ones where the machine's mean runnable threads exceeded the cores + 1.
    pub crowded_intervals: usize,
    /// Of those, the ones where one thread of the rig was busy at least the `thread`
    /// threshold (90 %) of the interval (absent in older files: 0).
    #[serde(default)]
    pub saturated_thread_intervals: usize,
    /// The busiest thread's name and busy share over those intervals, at its busiest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_thread: Option<ThreadShare>,
    pub procs_running_max: Option<f64>,
    /// False for a target inside the rig's process (sqlite, fs, dbm): its CPU is the rig's,
    /// so busy and crowded intervals do not make the run suspect.
    pub judged: bool,
}

/// How late the hiccup thread woke over the measured part, in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HiccupSummary {
    /// Wakes recorded (with the ones a stall swallowed filled in).
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Intervals judged whose longest hiccup reached the `hiccup` threshold (50 ms).
    pub stalled_intervals: usize,
    pub histogram: EncodedHistogram,
}

/// Operations completed per client over the measured part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FairnessSummary {
    pub clients: usize,
    pub min: u64,
    pub median: f64,
    pub max: u64,
    pub jain: Option<f64>,
    /// Clients starved in at least half of the intervals judged.
    pub starved_clients: usize,
    /// Starved clients summed over the intervals judged.
    pub starved_client_intervals: usize,
}

/// Little's law, L = λW. Closed loop: `expected` is throughput × (mean latency + think
/// time), `actual` the clients. Open loop: `expected` is the completion rate × mean
/// latency, `actual` the arrival rate × mean latency (the mean in flight the schedule
/// implies); the rig does not count operations in flight, which would cost the hot path a
/// shared counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LittlesLaw {
    pub expected: f64,
    pub actual: f64,
    /// (expected − actual) / actual.
    pub deviation: f64,
    /// False when the run is too short for the law to hold closely, or its operations
    /// pause (keying and think times of `pause`), which the latency does not include.
    pub judged: bool,
}

/// Cores available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU seconds as a share of `cores` cores over `wall` seconds (0 when no time passed).
pub fn cpu_share(cpu_s: f64, wall_s: f64, cores: usize) -> f64 {
    if wall_s > 0.0 {
        cpu_s / (wall_s * cores.max(1) as f64)
    } else {
        0.0
    }
}

/// Microseconds of CPU per completed operation, when any completed.
pub fn cpu_us_per_op(cpu_s: f64, done: u64) -> Option<f64> {
    (done > 0).then(|| cpu_s * 1e6 / done as f64)
}

impl RigInterval {
    /// `threads`: the interval's per-thread samples (kept apart from `s`, on disk).
    pub fn of(s: &RigBrief, threads: &[ThreadSample], completed: u64, cores: usize) -> RigInterval {
        let cpu = s.user + s.system;
        let wall = s.wall.as_secs_f64();
        RigInterval {
            cpu_user_s: s.user.as_secs_f64(),
            cpu_system_s: s.system.as_secs_f64(),
            cpu_share: cpu_share(cpu.as_secs_f64(), wall, cores),
            cpu_us_per_op: cpu_us_per_op(cpu.as_secs_f64(), completed),
            procs_running: s.running,
            hiccup_p99_ns: s.hiccup_p99_ns,
            hiccup_max_ns: s.hiccup_max_ns,
            threads: thread_shares(threads, wall),
        }
    }

    /// The busiest thread, if the threads were read.
    pub fn busiest_thread(&self) -> Option<&ThreadShare> {
        self.threads.first()
    }

    /// The busiest thread that carries the load (any but the monitor, which only sleeps
    /// and wakes: on a crowded machine it waits for a CPU at every wake).
    pub fn busiest_load_thread(&self) -> Option<&ThreadShare> {
        self.threads.iter().find(|t| t.name != MONITOR_THREAD)
    }
}

/// The busiest threads over `wall` seconds, busiest first.
fn thread_shares(threads: &[ThreadSample], wall: f64) -> Vec<ThreadShare> {
    if wall <= 0.0 {
        return Vec::new();
    }
    let mut shares: Vec<ThreadShare> = threads
        .iter()
        .map(|t| ThreadShare {
            name: t.name.clone(),
            cpu_share: t.cpu.as_secs_f64() / wall,
            busy_share: t.wanted.map(|w| w.as_secs_f64() / wall),
        })
        .filter(|t| t.cpu_share.max(t.busy()) >= THREAD_MIN_SHARE)
        .collect();
    shares.sort_by(|a, b| b.busy().total_cmp(&a.busy()));
    shares.truncate(THREADS_KEPT);
    shares
}

/// The median of `sorted`; 0 when empty.
pub fn median(sorted: &[u64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2] as f64,
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
    }
}

/// Jain's fairness index of `xs`, (Σx)² / (n·Σx²); none when all are zero.
pub fn jain(xs: &[u64]) -> Option<f64> {
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let squares: f64 = xs.iter().map(|&x| (x as f64).powi(2)).sum();
    (squares > 0.0).then(|| sum * sum / (xs.len() as f64 * squares))
}

/// The clients starved in `counts`: none completed while the median reached the threshold.
pub fn starved_in(counts: &[u64], median: f64, threshold: f64) -> impl Iterator<Item = usize> + '_ {
    let starving = median >= threshold;
    counts
        .iter()
        .enumerate()
        .filter(move |(_, &c)| starving && c == 0)
        .map(|(i, _)| i)
}

impl FairnessInterval {
    pub fn of(counts: &[u64]) -> Option<FairnessInterval> {
        if counts.is_empty() {
            return None;
        }
        let mut sorted = counts.to_vec();
        sorted.sort_unstable();
        let median = median(&sorted);
        Some(FairnessInterval {
            min: sorted[0],
            median,
            max: sorted[sorted.len() - 1],
            jain: jain(counts),
            starved: starved_in(counts, median, STARVED_MEDIAN).count(),
        })
    }
}

/// A median of counts (a whole number or a half) with separators: `313,726` or `1,204.5`.
pub fn median_text(m: f64) -> String {
    let whole = thousands(m.max(0.0).floor() as u64);
    if m.fract() == 0.0 {
        whole
    } else {
        format!("{whole}.5")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_does_all() {
        assert_eq!(jain(&[5, 5, 5, 5]), Some(1.0));
        assert_eq!(jain(&[8, 0, 0, 0]), Some(0.25));
        assert_eq!(jain(&[0, 0]), None);
    }

    #[test]
    fn starved_needs_a_busy_median() {
        let f = FairnessInterval::of(&[0, 0, 5, 6, 7]).unwrap();
        assert_eq!((f.min, f.median, f.max, f.starved), (0, 5.0, 7, 2));
        // The median client did too little to call anyone starved.
        assert_eq!(FairnessInterval::of(&[0, 1, 2, 3]).unwrap().starved, 0);
    }

    #[test]
    fn thresholds_are_set_by_name() {
        let mut t = Thresholds::default();
        t.set("busy=95%").unwrap();
        t.set("hiccup = 200ms").unwrap();
        t.set("starved-median=10").unwrap();
        t.set("jain=0.5").unwrap();
        t.set("drift=20%").unwrap();
        t.set("thread=80%").unwrap();
        assert_eq!(t.thread_busy, 0.8);
        t.set("drift-p=0.01").unwrap();
        assert_eq!((t.drift_change, t.drift_p), (0.2, 0.01));
        assert!(t.set("drift-p=1").unwrap_err().contains("between 0 and 1"));
        assert_eq!(t.jain, 0.5);
        assert!(t.set("jain=2").is_err());
        assert_eq!(
            (t.busy_share, t.hiccup_ns, t.starved_median),
            (0.95, 200_000_000, 10.0)
        );
        assert!(t.set("busy=0.95").unwrap_err().contains("percentage"));
        assert!(t
            .set("speed=1")
            .unwrap_err()
            .contains("unknown threshold 'speed'"));
        assert!(t.set("hiccup").unwrap_err().contains("NAME=VALUE"));
    }

    #[test]
    fn thousands_has_separators() {
        assert_eq!(median_text(313726.0), "313,726");
        assert_eq!(median_text(1204.5), "1,204.5");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(10_000_000), "10,000,000");
        assert_eq!(thousands(12), "12");
    }
}
