//! Counters and latency histograms: recorded by each client without locks, merged per interval.
//!
//! Latencies are nanoseconds in auto-resizing HdrHistograms (3 significant digits), so a
//! histogram stays small for fast operations and still holds an hour-long stall.

pub mod connect_phases;
pub mod trend;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::{ErrorClass, ErrorCounts, OpError, StatementCounts};

pub type Hist = Histogram<u64>;

/// An empty latency histogram (nanoseconds, 3 significant digits, grows as needed).
pub fn new_hist() -> Hist {
    // Creation only fails for sigfig > 5; 3 is a constant.
    Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"))
}

/// Keep at most this many distinct error messages per operation.
const MAX_MESSAGES: usize = 20;

/// What one client saw of one operation in one interval (or, merged, in a whole run).
#[derive(Debug, Clone)]
pub struct OpCounters {
    /// Successful operations; their latencies are in `latency`.
    pub ok: u64,
    /// Failed operations by class.
    pub errors: ErrorCounts,
    pub rows: u64,
    /// Successful operations that read or wrote no row (a read of a missing key).
    pub empty: u64,
    /// Response time: from the intended start (open loop) or the send (closed loop).
    pub latency: Hist,
    /// Open loop only: from the actual send.
    pub service: Hist,
    /// Open loop only: how late each operation started against its schedule.
    pub lag: Hist,
    /// Open loop only: starts later than the late threshold.
    pub late: u64,
    /// Attempts repeated under the operation's retry policy, by the class of the error
    /// that was retried.
    pub retries: ErrorCounts,
    /// Connections replaced after one was lost.
    pub reconnects: u64,
    /// Statements sent to the target (a tx's steps, its begin and commit), by kind.
    pub statements: StatementCounts,
    /// Successful operations (counted in `ok`) that ended at a rollback step of their `tx`.
    pub rolled_back: u64,
    pub messages: Vec<(ErrorClass, String, u64)>,
    /// Response times of the failed operations (as YCSB keeps them under `[READ-FAILED]`);
    /// made at the first failure, so a run without failures holds none.
    pub failed: Option<Box<Hist>>,
    /// Response times of the lookups (`kv.get`, `record.read`) that found no record, also
    /// in `latency` (YCSB's `NOT_FOUND` moves them to `[READ-FAILED]`); made at the first.
    pub missing: Option<Box<Hist>>,
}

impl Default for OpCounters {
    fn default() -> Self {
        OpCounters {
            ok: 0,
            errors: ErrorCounts::default(),
            rows: 0,
            empty: 0,
            latency: new_hist(),
            service: new_hist(),
            lag: new_hist(),
            late: 0,
            retries: ErrorCounts::default(),
            rolled_back: 0,
            reconnects: 0,
            statements: StatementCounts::default(),
            messages: Vec::new(),
            failed: None,
            missing: None,
        }
    }
}

impl OpCounters {
    pub fn error_total(&self) -> u64 {
        self.errors.total()
    }

    #[inline]
    pub fn record_error(&mut self, e: &OpError) {
        self.errors[e.class] += 1;
        self.count_message(e.class, &e.message, 1);
    }

    /// Count a failure of `e`'s class that took `ns` nanoseconds.
    #[inline]
    pub fn record_failure(&mut self, e: &OpError, ns: u64) {
        self.record_error(e);
        let _ = self.failed.get_or_insert_with(boxed_hist).record(ns);
    }

    /// A lookup that found no record took `ns` nanoseconds (it is also in `latency`).
    #[inline]
    pub fn record_missing(&mut self, ns: u64) {
        let _ = self.missing.get_or_insert_with(boxed_hist).record(ns);
    }

    fn count_message(&mut self, class: ErrorClass, message: &str, n: u64) {
        if let Some(m) = self
            .messages
            .iter_mut()
            .find(|(c, text, _)| *c == class && text == message)
        {
            m.2 += n;
        } else if self.messages.len() < MAX_MESSAGES {
            self.messages.push((class, message.to_string(), n));
        }
    }

    /// Add another's counts into this one (exact: histograms add bucket by bucket).
    pub fn merge(&mut self, other: &OpCounters) {
        self.ok += other.ok;
        self.errors += &other.errors;
        self.rows += other.rows;
        self.empty += other.empty;
        // Adding auto-resizing histograms of the same precision cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.lag.add(&other.lag);
        self.late += other.late;
        self.retries += &other.retries;
        self.reconnects += other.reconnects;
        self.statements += &other.statements;
        self.rolled_back += other.rolled_back;
        for (class, text, n) in &other.messages {
            self.count_message(*class, text, *n);
        }
        add_boxed(&mut self.failed, &other.failed);
        add_boxed(&mut self.missing, &other.missing);
    }
}

fn boxed_hist() -> Box<Hist> {
    Box::new(new_hist())
}

/// Add a histogram made on demand into another, making it if need be.
fn add_boxed(into: &mut Option<Box<Hist>>, other: &Option<Box<Hist>>) {
    if let Some(o) = other {
        let _ = into.get_or_insert_with(boxed_hist).add(&**o);
    }
}

/// Percentiles of a latency histogram, in nanoseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    pub fn of(h: &Hist) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            mean_ns: h.mean(),
            stdev_ns: h.stdev(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// Mean, standard deviation and range of a series (per-interval counts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct SeriesSummary {
    pub n: usize,
    pub mean: f64,
    pub stdev: f64,
    pub min: f64,
    pub max: f64,
}

impl SeriesSummary {
    pub fn of(values: &[f64]) -> SeriesSummary {
        let n = values.len();
        if n == 0 {
            return SeriesSummary::default();
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        SeriesSummary {
            n,
            mean,
            stdev: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// A count with thousands separators: 1234567 → "1,234,567" (what every printed count uses).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_messages() {
        let mut a = OpCounters::default();
        let mut b = OpCounters::default();
        a.ok = 2;
        a.latency.record(10).unwrap();
        b.ok = 3;
        b.latency.record(20).unwrap();
        b.record_failure(&OpError::new(ErrorClass::Timeout, "slow"), 1_000);
        b.record_failure(&OpError::new(ErrorClass::Timeout, "slow"), 3_000);
        b.record_missing(7);
        a.merge(&b);
        assert_eq!(a.ok, 5);
        assert_eq!(a.latency.len(), 2);
        let failed = a.failed.as_deref().expect("made by b's failures");
        assert_eq!(failed.len(), 2);
        assert!(failed.equivalent(failed.max(), 3_000));
        assert_eq!(a.missing.as_deref().map(|h| h.len()), Some(1));
        assert_eq!(a.errors[ErrorClass::Timeout], 2);
        assert_eq!(
            a.messages,
            vec![(ErrorClass::Timeout, "slow".to_string(), 2)]
        );
    }

    #[test]
    fn series_summary_uses_sample_stdev() {
        let s = SeriesSummary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.mean, 5.0);
        assert!((s.stdev - 2.138).abs() < 1e-3);
        assert_eq!((s.min, s.max), (2.0, 9.0));
    }
}
