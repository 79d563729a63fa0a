//! A run's measurements in YCSB's text output, as YCSB 0.17 prints them at the end of a run
//! (`TextMeasurementsExporter`, the default `measurementtype=hdrhistogram`), so parsers and
//! plots written for YCSB read loadrig's runs:
//!
//! ```text
//! [OVERALL], RunTime(ms), 10000
//! [OVERALL], Throughput(ops/sec), 1234.5
//! [TOTAL_GCs], Count, 0
//! [TOTAL_GC_TIME], Time(ms), 0
//! [TOTAL_GC_TIME_%], Time(%), 0.0
//! [READ], Operations, 6100
//! [READ], AverageLatency(us), 512.3
//! [READ], MinLatency(us), 301
//! [READ], MaxLatency(us), 2011
//! [READ], 95thPercentileLatency(us), 700
//! [READ], 99thPercentileLatency(us), 901
//! [READ], Return=OK, 6100
//! [READ], Return=ERROR, 12
//! [READ], Return=NOT_FOUND, 3
//! ```
//!
//! Lines and their order follow YCSB's `Client.exportMeasurements` and
//! `OneMeasurementHdrHistogram.exportMeasurements`; numbers are written as Java writes a
//! `long` or a `double`. As YCSB's `DBWrapper.measure` does, an operation's latency lines
//! cover its successful operations, and `[READ-FAILED]` (after `[READ]`; YCSB's own order
//! is its hash map's) has the latencies of the failed ones, with no `Return=` lines of its
//! own; `[READ]`'s `Return=` lines count every outcome. A lookup (`record.read`, `kv.get`)
//! that found no record is YCSB's `NOT_FOUND` (its bindings' answer to a missing key):
//! counted apart from `OK` and out of `Operations`, its latency under `[READ-FAILED]`.
//! Files from before failed latencies were kept have no `-FAILED` lines, and their
//! not-found reads' latencies stay in `[READ]`'s lines. See docs/results.md.

use std::fmt::Write as _;

use anyhow::{anyhow, Result};

use crate::error::InputError;
use crate::result::{EncodedHistogram, OpResult, RunResult};
use crate::stats::{Hist, LatencySummary};
use crate::vocab::ErrorClass;

/// YCSB's return codes that loadrig's outcomes map to, in the order they are written
/// (the order of YCSB's `Status` constants).
const STATUSES: [&str; 6] = [
    "OK",
    "ERROR",
    "NOT_FOUND",
    "BAD_REQUEST",
    "FORBIDDEN",
    "SERVICE_UNAVAILABLE",
];

/// The YCSB return code of a failure of `class`: YCSB's own `Status` names only, so every
/// YCSB parser knows them.
pub fn status_of(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Connect => "SERVICE_UNAVAILABLE",
        ErrorClass::Auth => "FORBIDDEN",
        ErrorClass::Constraint => "BAD_REQUEST",
        ErrorClass::Timeout
        | ErrorClass::Deadlock
        | ErrorClass::Serialization
        | ErrorClass::Protocol
        | ErrorClass::Other => "ERROR",
    }
}

/// The measurement name YCSB would give operation `name`: upper case, YCSB's
/// `READ-MODIFY-WRITE` for its spellings, anything but letters, digits, `-` and `_` as `_`
/// (a `,` or `]` would break the line format).
pub fn measurement_name(name: &str) -> String {
    let upper: String = name
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || c == '-' => c.to_ascii_uppercase(),
            _ => '_',
        })
        .collect();
    match upper.as_str() {
        "READMODIFYWRITE" | "READ_MODIFY_WRITE" | "RMW" => "READ-MODIFY-WRITE".into(),
        _ => upper,
    }
}

/// Names YCSB's output uses for itself, which no operation may take.
const RESERVED: [&str; 3] = ["OVERALL", "TOTAL_GCS", "TOTAL_GC_TIME"];

/// The measurement name of every operation, refusing two that would share one (an
/// operation's failures take its name and `-FAILED`).
fn measurement_names(r: &RunResult) -> Result<Vec<String>, InputError> {
    let mut names: Vec<String> = Vec::new();
    let taken = |names: &[String], name: &str| {
        r.operations.iter().zip(names).find_map(|(earlier, n)| {
            (n == name || failed_name(n) == name || *n == failed_name(name))
                .then(|| format!("operation '{}'", earlier.name))
        })
    };
    for o in &r.operations {
        let name = measurement_name(&o.name);
        let clash = taken(&names, &name).or_else(|| {
            RESERVED
                .contains(&name.as_str())
                .then(|| "YCSB's own".into())
        });
        if let Some(other) = clash {
            return Err(InputError::new(format!(
                "operation '{}' becomes [{name}] in YCSB's format, which clashes with {other} (failures add -FAILED)",
                o.name
            ))
            .help("YCSB names measurements by upper-cased operation names; export --csv keeps loadrig's names"));
        }
        names.push(name);
    }
    Ok(names)
}

/// The measurement YCSB keeps an operation's failures under.
fn failed_name(name: &str) -> String {
    format!("{name}-FAILED")
}

/// YCSB's text output of a run's measured part.
pub fn text(r: &RunResult) -> Result<Vec<u8>> {
    let names = measurement_names(r)?;
    let mut out = String::new();
    // YCSB's run time is whole milliseconds, and its throughput counts every operation.
    let runtime_ms = (r.measured_s.max(0.0) * 1000.0).round() as u64;
    let done = r.total.ok.saturating_add(r.total.errors);
    line(&mut out, "OVERALL", "RunTime(ms)", runtime_ms);
    let throughput = 1000.0 * done as f64 / runtime_ms as f64;
    line(
        &mut out,
        "OVERALL",
        "Throughput(ops/sec)",
        java_double(throughput),
    );
    // YCSB reports the JVM's garbage collections; loadrig has no garbage collector.
    line(&mut out, "TOTAL_GCs", "Count", 0);
    line(&mut out, "TOTAL_GC_TIME", "Time(ms)", 0);
    line(&mut out, "TOTAL_GC_TIME_%", "Time(%)", java_double(0.0));
    for (o, name) in r.operations.iter().zip(&names) {
        // YCSB has a measurement only for operations that ran.
        if o.ok.saturating_add(o.errors) > 0 {
            let not_found = if looks_up(r, &o.name) { o.empty } else { 0 };
            measurement(&mut out, name, o, not_found)?;
        }
    }
    Ok(out.into_bytes())
}

/// Whether every operation named `op` looks a record up by its key, so that one that read
/// no row found none (elsewhere no row may be the whole answer: a `nop`, an update).
fn looks_up(r: &RunResult, op: &str) -> bool {
    let mut kinds = r.workload.ops.iter().filter(|o| o.name == op).peekable();
    kinds.peek().is_some() && kinds.all(|o| o.kind == "record.read" || o.kind == "kv.get")
}

/// One operation's measurements: its successes' counts and latencies and its return
/// codes, then its failures' latencies (`not_found` of its successes are YCSB's
/// `NOT_FOUND`, which YCSB counts as failures).
fn measurement(out: &mut String, name: &str, o: &OpResult, not_found: u64) -> Result<()> {
    let decode = |h: &EncodedHistogram| {
        h.decode()
            .map_err(|e| anyhow!("the histogram of '{}': {e}", o.name))
    };
    let mut ok = decode(&o.histogram)?;
    // Files from before not-found latencies were kept have them among the successes.
    let missing = match (&o.missing_histogram, not_found) {
        (Some(h), 1..) => Some(decode(h)?),
        _ => None,
    };
    if let Some(m) = &missing {
        ok.subtract(m)
            .map_err(|e| anyhow!("the histograms of '{}' disagree: {e:?}", o.name))?;
    }
    // YCSB's reads of a missing key return NOT_FOUND, which is not OK.
    let summary = match missing {
        Some(_) => LatencySummary::of(&ok),
        // The run file's own figures (a mean recomputed from the decoded histogram may
        // differ in its last bit).
        None => o.latency.clone(),
    };
    latency_lines(out, name, o.ok - not_found, &summary, &ok);
    for status in STATUSES {
        let n = if status == "OK" {
            o.ok - not_found
        } else if status == "NOT_FOUND" {
            not_found
        } else {
            o.errors_by_class
                .iter()
                .filter(|(class, _)| status_of(**class) == status)
                .map(|(_, n)| n)
                .sum()
        };
        if n > 0 {
            line(out, name, &format!("Return={status}"), n);
        }
    }
    let failed = o.failed_histogram.as_ref().map(decode).transpose()?;
    // The run file's own figures unless the not-found reads join the failures.
    let (failed, summary) = match (failed, missing) {
        (Some(mut f), Some(m)) => {
            let _ = f.add(&m);
            let l = LatencySummary::of(&f);
            (Some(f), Some(l))
        }
        (Some(f), None) => (Some(f), o.failed_latency.clone()),
        (None, m) => (m, None),
    };
    if let Some(f) = failed {
        let summary = summary.unwrap_or_else(|| LatencySummary::of(&f));
        latency_lines(out, &failed_name(name), f.len(), &summary, &f);
    }
    Ok(())
}

/// `Operations` and the latency lines of `l`, histogram `h` summarised (for its 95th
/// percentile), in whole microseconds (as YCSB records them, nanoseconds / 1000 rounded
/// down; the average unrounded), zeros for none.
fn latency_lines(out: &mut String, name: &str, operations: u64, l: &LatencySummary, h: &Hist) {
    let us = |ns: u64| ns / 1000;
    let p95 = if h.is_empty() {
        0
    } else {
        h.value_at_quantile(0.95)
    };
    line(out, name, "Operations", operations);
    line(
        out,
        name,
        "AverageLatency(us)",
        java_double(l.mean_ns / 1000.0),
    );
    line(out, name, "MinLatency(us)", us(l.min_ns));
    line(out, name, "MaxLatency(us)", us(l.max_ns));
    line(out, name, "95thPercentileLatency(us)", us(p95));
    line(out, name, "99thPercentileLatency(us)", us(l.p99_ns));
}

/// `[METRIC], MEASUREMENT, VALUE` and a line end, as `TextMeasurementsExporter.write`.
fn line(out: &mut String, metric: &str, measurement: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "[{metric}], {measurement}, {value}");
}

/// A number as Java's `Double.toString` writes it: `0.0`, `512.25`, `1.0E7`, `5.0E-4`,
/// `NaN`, `Infinity` (decimal from 10⁻³ up to 10⁷, otherwise scientific with at least one
/// digit after the point).
pub fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let magnitude = x.abs();
    if magnitude == 0.0 || (1e-3..1e7).contains(&magnitude) {
        // Rust's Debug form is decimal with a ".0" in this range, and the shortest digits.
        return format!("{x:?}");
    }
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_are_written_as_java_writes_them() {
        let cases = [
            (0.0, "0.0"),
            (1.0, "1.0"),
            (512.25, "512.25"),
            (0.001, "0.001"),
            (9_999_999.5, "9999999.5"),
            (1e7, "1.0E7"),
            (12_345_678.9, "1.23456789E7"),
            (0.0005, "5.0E-4"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
        ];
        for (x, java) in cases {
            assert_eq!(java_double(x), java, "{x}");
        }
    }

    #[test]
    fn operations_take_ycsb_names() {
        assert_eq!(measurement_name("read"), "READ");
        assert_eq!(measurement_name("Update"), "UPDATE");
        assert_eq!(measurement_name("read-modify-write"), "READ-MODIFY-WRITE");
        assert_eq!(measurement_name("read_modify_write"), "READ-MODIFY-WRITE");
        assert_eq!(measurement_name("readmodifywrite"), "READ-MODIFY-WRITE");
        assert_eq!(measurement_name("read it, now]"), "READ_IT__NOW_");
        assert_eq!(measurement_name("new_order"), "NEW_ORDER");
    }

    #[test]
    fn every_error_class_has_a_ycsb_status() {
        for class in ErrorClass::ALL {
            assert!(STATUSES[1..].contains(&status_of(class)), "{class:?}");
        }
        assert_eq!(status_of(ErrorClass::Connect), "SERVICE_UNAVAILABLE");
        assert_eq!(status_of(ErrorClass::Deadlock), "ERROR");
    }
}
