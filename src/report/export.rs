//! Exports of a result file for other tools: tidy CSV tables and the HdrHistogram log.
//!
//! - `intervals.csv`: one row per interval and operation (warm-up rows included, marked),
//!   with counts, rate, errors by class and latency percentiles read from that interval's
//!   histogram. Ready for `pandas.read_csv` or a spreadsheet pivot.
//! - `operations.csv`: one row per operation plus `total`, the run's summary.
//! - `figures.csv`, when the workload declares `[[figure]]`s (TPC-C's tpmC and efficiency):
//!   one row per figure, as the result file holds it.
//! - the HdrHistogram interval log (`HistogramLogWriter`'s format): per measured interval
//!   one untagged histogram of all operations and one `Tag=OPERATION` histogram each,
//!   values in nanoseconds, so `HistogramLogProcessor` and friends can read it.
//!
//! Each function returns bytes and does no I/O (hyperfine's exporters work the same way).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Context, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use serde::Serialize;

use crate::result::{write_atomic, ErrorsByClass, FigureRecord, OpResult, RunResult};
use crate::stats::new_hist;
use crate::vocab::ErrorClass;

/// The leading columns of a row of `intervals.csv`; the error columns follow.
#[derive(Serialize)]
struct IntervalRow<'a> {
    interval: u64,
    start_s: f64,
    end_s: f64,
    warmup: bool,
    operation: &'a str,
    ok: u64,
    errors: u64,
    throughput_per_s: f64,
    mean_ns: Option<f64>,
    p50_ns: Option<u64>,
    p90_ns: Option<u64>,
    p99_ns: Option<u64>,
    p999_ns: Option<u64>,
    max_ns: Option<u64>,
}

/// The names of [`IntervalRow`]'s fields, in order.
const INTERVAL_HEAD: [&str; 14] = [
    "interval",
    "start_s",
    "end_s",
    "warmup",
    "operation",
    "ok",
    "errors",
    "throughput_per_s",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
];

/// One column per error class, `errors_CLASS`, in [`ErrorClass::ALL`] order.
fn error_columns() -> impl Iterator<Item = String> {
    ErrorClass::ALL
        .iter()
        .map(|c| format!("errors_{}", c.name()))
}

/// Errors of each class, in [`ErrorClass::ALL`] order (the error columns' values).
fn by_class(counts: &ErrorsByClass) -> Vec<u64> {
    ErrorClass::ALL
        .iter()
        .map(|c| counts.get(c).copied().unwrap_or(0))
        .collect()
}

/// The columns of `intervals.csv`, in order.
pub fn interval_columns() -> Vec<String> {
    INTERVAL_HEAD
        .iter()
        .map(|c| c.to_string())
        .chain(error_columns())
        .collect()
}

/// A CSV writer that has written `columns` as its header; rows follow as tuples.
fn csv_with(columns: Vec<String>) -> Result<csv::Writer<Vec<u8>>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(columns)?;
    Ok(w)
}

/// `intervals.csv`: one row per interval and operation.
pub fn intervals_csv(r: &RunResult) -> Result<Vec<u8>> {
    let mut w = csv_with(interval_columns())?;
    for i in &r.intervals {
        let secs = i.end_s - i.start_s;
        for o in &i.ops {
            let h = o
                .histogram
                .decode()
                .map_err(|e| anyhow!("interval {} of '{}': {e}", i.index, o.name))?;
            let some = |v: u64| (!h.is_empty()).then_some(v);
            let row = IntervalRow {
                interval: i.index,
                start_s: i.start_s,
                end_s: i.end_s,
                warmup: i.warmup,
                operation: &o.name,
                ok: o.ok,
                errors: o.errors,
                throughput_per_s: if secs > 0.0 { o.ok as f64 / secs } else { 0.0 },
                mean_ns: (!h.is_empty()).then(|| h.mean()),
                p50_ns: some(h.value_at_quantile(0.5)),
                p90_ns: some(h.value_at_quantile(0.9)),
                p99_ns: some(h.value_at_quantile(0.99)),
                p999_ns: some(h.value_at_quantile(0.999)),
                max_ns: some(h.max()),
            };
            w.serialize((row, by_class(&o.errors_by_class)))?;
        }
    }
    w.into_inner().map_err(|e| anyhow!("{e}"))
}

/// The leading columns of a row of `operations.csv`; the error columns and then
/// [`OperationTail`]'s follow.
#[derive(Serialize)]
struct OperationHead<'a> {
    operation: &'a str,
    ok: u64,
    errors: u64,
    rows: u64,
    throughput_per_s: f64,
    mean_ns: Option<f64>,
    stdev_ns: Option<f64>,
    min_ns: Option<u64>,
    p50_ns: Option<u64>,
    p90_ns: Option<u64>,
    p99_ns: Option<u64>,
    p999_ns: Option<u64>,
    max_ns: Option<u64>,
}

/// The names of [`OperationHead`]'s fields, in order.
const OPERATION_HEAD: [&str; 13] = [
    "operation",
    "ok",
    "errors",
    "rows",
    "throughput_per_s",
    "mean_ns",
    "stdev_ns",
    "min_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
];

/// The columns of a row of `operations.csv` after the error columns.
#[derive(Serialize)]
struct OperationTail {
    full_intervals: usize,
    ops_per_interval_mean: f64,
    ops_per_interval_stdev: f64,
    ops_per_interval_min: f64,
    ops_per_interval_max: f64,
    service_p50_ns: Option<u64>,
    service_p99_ns: Option<u64>,
    start_lag_p99_ns: Option<u64>,
    late_starts: Option<u64>,
}

/// The names of [`OperationTail`]'s fields, in order.
const OPERATION_TAIL: [&str; 9] = [
    "full_intervals",
    "ops_per_interval_mean",
    "ops_per_interval_stdev",
    "ops_per_interval_min",
    "ops_per_interval_max",
    "service_p50_ns",
    "service_p99_ns",
    "start_lag_p99_ns",
    "late_starts",
];

/// The columns of `operations.csv`, in order.
pub fn operation_columns() -> Vec<String> {
    OPERATION_HEAD
        .iter()
        .map(|c| c.to_string())
        .chain(error_columns())
        .chain(OPERATION_TAIL.iter().map(|c| c.to_string()))
        .collect()
}

/// `operations.csv`: one row per operation, then `total`.
pub fn operations_csv(r: &RunResult) -> Result<Vec<u8>> {
    let mut w = csv_with(operation_columns())?;
    for o in r.operations.iter().chain(std::iter::once(&r.total)) {
        w.serialize(operation_row(o))?;
    }
    w.into_inner().map_err(|e| anyhow!("{e}"))
}

fn operation_row(o: &OpResult) -> (OperationHead<'_>, Vec<u64>, OperationTail) {
    let l = &o.latency;
    let has = l.count > 0;
    let some = |v: u64| has.then_some(v);
    let head = OperationHead {
        operation: &o.name,
        ok: o.ok,
        errors: o.errors,
        rows: o.rows,
        throughput_per_s: o.throughput_per_s,
        mean_ns: has.then_some(l.mean_ns),
        stdev_ns: has.then_some(l.stdev_ns),
        min_ns: some(l.min_ns),
        p50_ns: some(l.p50_ns),
        p90_ns: some(l.p90_ns),
        p99_ns: some(l.p99_ns),
        p999_ns: some(l.p999_ns),
        max_ns: some(l.max_ns),
    };
    let tail = OperationTail {
        full_intervals: o.interval_counts.n,
        ops_per_interval_mean: o.interval_counts.mean,
        ops_per_interval_stdev: o.interval_counts.stdev,
        ops_per_interval_min: o.interval_counts.min,
        ops_per_interval_max: o.interval_counts.max,
        service_p50_ns: o.service.as_ref().map(|s| s.p50_ns),
        service_p99_ns: o.service.as_ref().map(|s| s.p99_ns),
        start_lag_p99_ns: o.start_lag.as_ref().map(|s| s.p99_ns),
        late_starts: o.late_starts,
    };
    (head, by_class(&o.errors_by_class), tail)
}

/// A row of `figures.csv`: a workload figure as the result file holds it, with the
/// measured seconds it is computed over; `ops` joined by `;`.
#[derive(Serialize)]
struct FigureRow<'a> {
    figure: &'a str,
    value: f64,
    unit: &'a str,
    completed: u64,
    per: &'a str,
    divisor: f64,
    measured_s: f64,
    ops: String,
    description: &'a str,
}

/// The columns of `figures.csv`, in order.
pub const FIGURE_COLUMNS: [&str; 9] = [
    "figure",
    "value",
    "unit",
    "completed",
    "per",
    "divisor",
    "measured_s",
    "ops",
    "description",
];

/// `figures.csv`: one row per workload figure (tpmC, efficiency), `None` for a run without.
pub fn figures_csv(r: &RunResult) -> Result<Option<Vec<u8>>> {
    if r.figures.is_empty() {
        return Ok(None);
    }
    let mut w = csv_with(FIGURE_COLUMNS.iter().map(|c| c.to_string()).collect())?;
    for f in &r.figures {
        let FigureRecord {
            name,
            description,
            value,
            unit,
            ops,
            completed,
            per,
            divisor,
        } = f;
        w.serialize(FigureRow {
            figure: name,
            value: *value,
            unit,
            completed: *completed,
            per,
            divisor: *divisor,
            measured_s: r.measured_s,
            ops: ops.join(";"),
            description,
        })?;
    }
    Ok(Some(w.into_inner().map_err(|e| anyhow!("{e}"))?))
}

/// Write `intervals.csv`, `operations.csv` and, for a run with figures, `figures.csv` into
/// `dir` (created if needed); each file is written atomically.
pub fn write_csv(r: &RunResult, dir: &Path) -> Result<Vec<PathBuf>> {
    let intervals = intervals_csv(r)?;
    let operations = operations_csv(r)?;
    let figures = figures_csv(r)?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("could not create folder '{}'", dir.display()))?;
    let mut written = Vec::new();
    let tables = [("intervals.csv", intervals), ("operations.csv", operations)];
    let figures = figures.map(|bytes| ("figures.csv", bytes));
    for (name, bytes) in tables.into_iter().chain(figures) {
        let path = dir.join(name);
        write_atomic(&path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

/// An HdrHistogram tag for an operation name: tags cannot hold ',', ' ', CR or LF.
pub fn tag_of(name: &str) -> String {
    let t: String = name
        .chars()
        .map(|c| match c {
            ',' | ' ' | '\r' | '\n' => '_',
            c => c,
        })
        .collect();
    if t.is_empty() {
        "_".into()
    } else {
        t
    }
}

/// When the measured run started: its end minus its elapsed time.
fn run_start(r: &RunResult) -> SystemTime {
    let end = humantime::parse_rfc3339_weak(&r.ended_at)
        .or_else(|_| humantime::parse_rfc3339(&r.ended_at))
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Duration::try_from_secs_f64(r.elapsed_s)
        .ok()
        .and_then(|elapsed| end.checked_sub(elapsed))
        .unwrap_or(end)
}

/// Longer than any run (about 30 years): a time beyond it comes from a damaged file.
const LONGEST_S: f64 = 1e9;

/// An interval's start and length, or an error for times no run has (a damaged or
/// hostile file: negative, infinite, reversed, or beyond any clock).
fn span(i: &crate::result::IntervalRecord) -> Result<(Duration, Duration)> {
    let (start, end) = (i.start_s, i.end_s);
    if !(0.0..=LONGEST_S).contains(&start) || !(start..=LONGEST_S).contains(&end) {
        return Err(anyhow!(
            "interval {}: its times {start} s to {end} s are not an interval of a run",
            i.index
        ));
    }
    Ok((
        Duration::from_secs_f64(start),
        Duration::from_secs_f64(end - start),
    ))
}

/// The HdrHistogram interval log of the measured intervals (warm-up left out, as in every
/// statistic): untagged histograms hold all operations, `Tag=OP` ones a single operation.
pub fn hdr_log(r: &RunResult) -> Result<Vec<u8>> {
    let start = run_start(r);
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut builder = IntervalLogWriterBuilder::new();
        builder
            .add_comment(&format!(
                "loadrig {}: {} on {}",
                r.loadrig_version,
                r.workload.name,
                crate::targets::redact(&r.target.url)
            ))
            .add_comment("Values are nanoseconds; the max column is in milliseconds.")
            .add_comment(
                "Warm-up intervals are left out. Untagged: all operations; Tag=OP: one operation.",
            )
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(1e6);
        let mut log = builder.begin_log_with(&mut buf, &mut serializer)?;
        let tags: Vec<String> = r.operations.iter().map(|o| tag_of(&o.name)).collect();
        for i in r.intervals.iter().filter(|i| !i.warmup) {
            let (at, length) = span(i)?;
            let mut all = new_hist();
            let mut parts = Vec::new();
            for o in &i.ops {
                let h = o
                    .histogram
                    .decode()
                    .map_err(|e| anyhow!("interval {} of '{}': {e}", i.index, o.name))?;
                let _ = all.add(&h);
                parts.push((o.name.as_str(), h));
            }
            log.write_histogram(&all, at, length, None)
                .map_err(|e| anyhow!("HdrHistogram log: {e}"))?;
            for (name, h) in &parts {
                let tag = r
                    .operations
                    .iter()
                    .position(|o| o.name == *name)
                    .map_or_else(|| tag_of(name), |k| tags[k].clone());
                log.write_histogram(h, at, length, Tag::new(&tag))
                    .map_err(|e| anyhow!("HdrHistogram log: {e}"))?;
            }
        }
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header csv writes for `row` from its fields' names.
    fn header_of<T: Serialize>(row: T) -> Vec<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(row).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        text.lines()
            .next()
            .unwrap()
            .split(',')
            .map(String::from)
            .collect()
    }

    #[test]
    fn column_names_are_the_rows_field_names() {
        let interval = IntervalRow {
            interval: 1,
            start_s: 0.0,
            end_s: 1.0,
            warmup: false,
            operation: "op",
            ok: 0,
            errors: 0,
            throughput_per_s: 0.0,
            mean_ns: None,
            p50_ns: None,
            p90_ns: None,
            p99_ns: None,
            p999_ns: None,
            max_ns: None,
        };
        assert_eq!(header_of(interval), INTERVAL_HEAD);
        let o = OpResult {
            name: "op".into(),
            ok: 0,
            errors: 0,
            errors_by_class: ErrorsByClass::new(),
            error_messages: Vec::new(),
            rows: 0,
            empty: 0,
            retries: 0,
            retries_by_class: ErrorsByClass::new(),
            reconnects: 0,
            rolled_back: 0,
            throughput_per_s: 0.0,
            latency: Default::default(),
            histogram: crate::result::EncodedHistogram::encode(&new_hist()),
            failed_latency: None,
            failed_histogram: None,
            missing_histogram: None,
            service: None,
            service_histogram: None,
            start_lag: None,
            start_lag_histogram: None,
            late_starts: None,
            interval_counts: Default::default(),
            statements: Default::default(),
        };
        let (head, errors, tail) = operation_row(&o);
        assert_eq!(header_of(head), OPERATION_HEAD);
        assert_eq!(header_of(tail), OPERATION_TAIL);
        assert_eq!(errors.len(), ErrorClass::ALL.len());
        let columns = operation_columns();
        assert_eq!(columns.len(), 13 + ErrorClass::ALL.len() + 9);
        assert_eq!(columns[13], "errors_connect");
    }

    #[test]
    fn tags_lose_forbidden_characters() {
        assert_eq!(super::tag_of("a b,c"), "a_b_c");
        assert_eq!(super::tag_of(""), "_");
        assert!(
            hdrhistogram::serialization::interval_log::Tag::new(&super::tag_of("x y\n")).is_some()
        );
    }
}
