//! The records made from what the engine measured: an operation's summary, an interval,
//! the setup and the data load. Plain conversions, judging nothing; `assemble` puts them
//! together into a run's result.

use super::validity::{self, FairnessInterval, RigInterval};
use super::{
    DataLoadRecord, EncodedHistogram, ErrorMessage, ErrorsByClass, IntervalOp, IntervalRecord,
    OpResult, SetupRecord, Statements,
};
use crate::engine::IntervalData;
use crate::stats::{LatencySummary, OpCounters, SeriesSummary};
use crate::vocab::ErrorCounts;
use crate::workload::Workload;

impl SetupRecord {
    /// The setup's statements, the rows they changed and their time.
    pub fn of((statements, rows, t): (usize, u64, std::time::Duration)) -> SetupRecord {
        SetupRecord {
            statements,
            rows,
            seconds: t.as_secs_f64(),
            rows_per_s: rows as f64 / t.as_secs_f64().max(1e-9),
        }
    }
}

impl DataLoadRecord {
    /// The data load of `workload`: `loaded` (records, time) when it ran, else reused.
    pub fn of(workload: &Workload, loaded: Option<(u64, std::time::Duration)>) -> Option<Self> {
        match (&workload.data, loaded) {
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
        }
    }
}

/// The classes counted at least once.
fn by_class(counts: &ErrorCounts) -> ErrorsByClass {
    counts.iter().filter(|(_, n)| *n > 0).collect()
}

impl IntervalRecord {
    /// `per_client`: keep each client's count (shard runs, for `loadrig merge`).
    pub fn of(d: &IntervalData, names: &[String], per_client: bool) -> IntervalRecord {
        IntervalRecord::made(d, names, per_client, true)
    }

    /// The record with its histograms left empty (not encoded), for a reader that is handed
    /// them as they are (the live dashboard).
    pub fn unencoded(d: &IntervalData, names: &[String]) -> IntervalRecord {
        IntervalRecord::made(d, names, false, false)
    }

    fn made(d: &IntervalData, names: &[String], per_client: bool, encode: bool) -> IntervalRecord {
        let completed = d.ops.iter().map(|c| c.ok + c.error_total()).sum();
        IntervalRecord {
            rig: d
                .rig
                .as_ref()
                .map(|s| RigInterval::of(&s.brief(), &s.threads, completed, validity::cores())),
            // A client ramp's interval: the clients that ran all of it.
            fairness: FairnessInterval::of(match d.ran_whole {
                Some(n) => &d.per_client[..n.min(d.per_client.len())],
                None => &d.per_client,
            }),
            per_client: if per_client {
                d.per_client.clone()
            } else {
                Vec::new()
            },
            ran_whole: d.ran_whole.filter(|_| per_client).map(|n| n as u64),
            stage: d.stage.as_deref().map(str::to_string),
            clients: d.clients,
            offered: d.offered,
            server: None,
            index: d.index + 1,
            start_s: d.start.as_secs_f64(),
            end_s: d.end.as_secs_f64(),
            warmup: d.warmup,
            ok: d.ops.iter().map(|c| c.ok).sum(),
            errors: d.ops.iter().map(|c| c.error_total()).sum(),
            ops: d
                .ops
                .iter()
                .zip(names)
                .map(|(c, name)| IntervalOp {
                    name: name.clone(),
                    ok: c.ok,
                    errors: c.error_total(),
                    errors_by_class: by_class(&c.errors),
                    p50_ns: c.latency.value_at_quantile(0.5),
                    p99_ns: c.latency.value_at_quantile(0.99),
                    max_ns: c.latency.max(),
                    histogram: if encode {
                        EncodedHistogram::encode(&c.latency)
                    } else {
                        EncodedHistogram::default()
                    },
                })
                .collect(),
        }
    }
}

impl OpResult {
    /// Summarise `c`, an operation's merged measured counters; `counts` is its number of
    /// successes in each full measured interval.
    pub fn of(
        name: &str,
        c: &OpCounters,
        measured_s: f64,
        counts: &[f64],
        open_loop: bool,
    ) -> OpResult {
        OpResult {
            name: name.to_string(),
            ok: c.ok,
            errors: c.error_total(),
            errors_by_class: by_class(&c.errors),
            error_messages: c
                .messages
                .iter()
                .map(|(class, message, count)| ErrorMessage {
                    class: *class,
                    message: message.clone(),
                    count: *count,
                })
                .collect(),
            rows: c.rows,
            empty: c.empty,
            retries: c.retries.total(),
            retries_by_class: by_class(&c.retries),
            rolled_back: c.rolled_back,
            reconnects: c.reconnects,
            throughput_per_s: if measured_s > 0.0 {
                c.ok as f64 / measured_s
            } else {
                0.0
            },
            latency: LatencySummary::of(&c.latency),
            histogram: EncodedHistogram::encode(&c.latency),
            failed_latency: c.failed.as_deref().map(LatencySummary::of),
            failed_histogram: c.failed.as_deref().map(EncodedHistogram::encode),
            missing_histogram: c.missing.as_deref().map(EncodedHistogram::encode),
            service: open_loop.then(|| LatencySummary::of(&c.service)),
            service_histogram: open_loop.then(|| EncodedHistogram::encode(&c.service)),
            start_lag: open_loop.then(|| LatencySummary::of(&c.lag)),
            start_lag_histogram: open_loop.then(|| EncodedHistogram::encode(&c.lag)),
            late_starts: open_loop.then_some(c.late),
            interval_counts: SeriesSummary::of(counts),
            statements: Statements::of(&c.statements, measured_s),
        }
    }
}
