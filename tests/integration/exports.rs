//! Exports: CSV tables and the HdrHistogram log match the result file; the OpenMetrics
//! endpoint answers during a run with counters that only grow.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::Dir;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use loadrig::report::export::{interval_columns, operation_columns};
use loadrig::vocab::ErrorClass;

/// The columns of `intervals.csv`, in order.
const INTERVAL_COLUMNS: [&str; 22] = [
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
    "errors_connect",
    "errors_auth",
    "errors_timeout",
    "errors_deadlock",
    "errors_serialization",
    "errors_constraint",
    "errors_protocol",
    "errors_other",
];

/// The columns of `operations.csv`, in order.
const OPERATION_COLUMNS: [&str; 30] = [
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
    "errors_connect",
    "errors_auth",
    "errors_timeout",
    "errors_deadlock",
    "errors_serialization",
    "errors_constraint",
    "errors_protocol",
    "errors_other",
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

const TWO_OPS: &str = r#"name = "two, ops"
target = "sleep://?latency=uniform(200us..600us)&errors=0.05"

[[op]]
name = "read it"
weight = 3
nop = {}

[[op]]
name = "write"
nop = {}
"#;

fn two_op_run(d: &Dir) {
    d.write("w.toml", TWO_OPS);
    d.ok(&[
        "run",
        "w.toml",
        "--clients",
        "2",
        "--samples",
        "6",
        "--interval",
        "50ms",
        "--warmup",
        "100ms",
        "-o",
        "r.json",
    ]);
}

#[test]
fn csv_columns_and_rows_match_the_result_file() {
    let d = Dir::new();
    two_op_run(&d);
    let r = d.result("r.json");
    let out = d.ok(&["export", "r.json", "--csv", "csv"]);
    assert!(
        out.contains("intervals.csv") && out.contains("operations.csv"),
        "{out}"
    );

    let mut rd = csv::Reader::from_path(d.join("csv/intervals.csv")).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, INTERVAL_COLUMNS);
    assert_eq!(header, interval_columns());
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), r.intervals.len() * r.operations.len());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    for (row, (i, o)) in rows.iter().zip(
        r.intervals
            .iter()
            .flat_map(|i| i.ops.iter().map(move |o| (i, o))),
    ) {
        assert_eq!(row[col("interval")].parse::<u64>().unwrap(), i.index);
        assert_eq!(&row[col("operation")], o.name);
        assert_eq!(row[col("ok")].parse::<u64>().unwrap(), o.ok);
        assert_eq!(row[col("errors")].parse::<u64>().unwrap(), o.errors);
        assert_eq!(
            row[col("errors_other")].parse::<u64>().unwrap(),
            o.errors_by_class
                .get(&ErrorClass::Other)
                .copied()
                .unwrap_or(0)
        );
        assert_eq!(&row[col("warmup")], if i.warmup { "true" } else { "false" });
        if o.ok > 0 {
            assert_eq!(row[col("p50_ns")].parse::<u64>().unwrap(), o.p50_ns);
            assert_eq!(row[col("p99_ns")].parse::<u64>().unwrap(), o.p99_ns);
            assert_eq!(row[col("max_ns")].parse::<u64>().unwrap(), o.max_ns);
        }
    }
    // Measured rows add up to the summary.
    for op in &r.operations {
        let ok: u64 = rows
            .iter()
            .filter(|x| x[col("operation")] == op.name && &x[col("warmup")] == "false")
            .map(|x| x[col("ok")].parse::<u64>().unwrap())
            .sum();
        assert_eq!(ok, op.ok, "{}", op.name);
    }

    let mut rd = csv::Reader::from_path(d.join("csv/operations.csv")).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, OPERATION_COLUMNS);
    assert_eq!(header, operation_columns());
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), r.operations.len() + 1);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    for (row, op) in rows.iter().zip(r.operations.iter().chain([&r.total])) {
        assert_eq!(&row[col("operation")], op.name);
        assert_eq!(row[col("ok")].parse::<u64>().unwrap(), op.ok);
        assert_eq!(row[col("errors")].parse::<u64>().unwrap(), op.errors);
        assert_eq!(
            row[col("p99_ns")].parse::<u64>().unwrap(),
            op.latency.p99_ns
        );
        assert_eq!(
            row[col("full_intervals")].parse::<usize>().unwrap(),
            op.interval_counts.n
        );
        assert_eq!(
            &row[col("service_p50_ns")],
            "",
            "closed loop: no service time"
        );
    }
}

#[test]
fn hdr_log_decodes_to_the_same_counts() {
    let d = Dir::new();
    two_op_run(&d);
    let r = d.result("r.json");
    d.ok(&["export", "r.json", "--hdr-log", "r.hlog"]);
    let log = std::fs::read(d.join("r.hlog")).unwrap();
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("#[StartTime: "), "{text}");
    assert!(text.contains("#[BaseTime: "), "{text}");

    let mut untagged = 0u64;
    let mut intervals = 0usize;
    let mut per_tag = std::collections::BTreeMap::<String, u64>::new();
    for entry in IntervalLogIterator::new(&log) {
        if let LogEntry::Interval(h) = entry.expect("log parses") {
            let bytes = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                h.encoded_histogram(),
            )
            .unwrap();
            let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .unwrap();
            match h.tag() {
                None => {
                    untagged += hist.len();
                    intervals += 1;
                }
                Some(t) => *per_tag.entry(t.as_str().to_string()).or_default() += hist.len(),
            }
        }
    }
    assert_eq!(untagged, r.total.ok);
    assert_eq!(intervals, r.intervals.iter().filter(|i| !i.warmup).count());
    assert_eq!(per_tag.get("read_it"), Some(&r.operations[0].ok));
    assert_eq!(per_tag.get("write"), Some(&r.operations[1].ok));
}

#[test]
fn export_needs_something_to_do_and_a_result_file() {
    let d = Dir::new();
    let (_, err) = d.code(2, &["export", "nothing.json", "--csv", "out"]);
    assert!(err.contains("could not read 'nothing.json'"), "{err}");
    d.ok(&["run", "noop", "--ops", "50", "-o", "r.json"]);
    let (_, err) = d.code(2, &["export", "r.json"]);
    assert!(err.contains("nothing to export"), "{err}");
    assert!(!d.join("out").exists());
}

/// GET `path` from `addr`; returns (status line, headers, body).
fn get(addr: &str, path: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP response");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_string(), body.to_string())
}

fn counter(body: &str, name: &str) -> u64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing in\n{body}"))
}

#[test]
fn metrics_endpoint_answers_during_a_run_with_growing_counters() {
    let d = Dir::new();
    let mut child = d.spawn(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--samples",
        "30",
        "--interval",
        "100ms",
        "--metrics-addr",
        "127.0.0.1:0",
        "-o",
        "r.json",
    ]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("a metrics line").unwrap();
        if let Some(rest) = line.strip_prefix("metrics: http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    // Keep reading stdout so the run never blocks on a full pipe.
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());

    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < 8 && Instant::now() < deadline {
        let (status, headers, body) = get(&addr, "/metrics");
        assert!(status.contains("200"), "{status}");
        assert!(
            headers.contains("application/openmetrics-text; version=1.0.0"),
            "{headers}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
        assert!(
            body.contains("# TYPE loadrig_latency_seconds summary"),
            "{body}"
        );
        assert!(
            body.contains("loadrig_errors_total{op=\"nop\",class=\"timeout\"} 0"),
            "{body}"
        );
        seen.push((
            counter(&body, "loadrig_operations_total{op=\"nop\"}"),
            counter(&body, "loadrig_latency_seconds_count{op=\"nop\"}"),
            counter(&body, "loadrig_intervals_total"),
        ));
        std::thread::sleep(Duration::from_millis(250));
    }
    let (status, _, _) = get(&addr, "/elsewhere");
    assert!(status.contains("404"), "{status}");

    let status = child.wait().unwrap();
    assert!(status.success());
    let printed = rest.join().unwrap();
    assert!(
        printed.iter().any(|l| l.starts_with("result: ")),
        "{printed:?}"
    );

    assert!(seen.len() >= 4, "scraped {} times", seen.len());
    for pair in seen.windows(2) {
        assert!(pair[0].0 <= pair[1].0, "operations went down: {seen:?}");
        assert!(pair[0].1 <= pair[1].1, "latency count went down: {seen:?}");
        assert!(pair[0].2 <= pair[1].2, "intervals went down: {seen:?}");
    }
    let (first, last) = (seen[0], seen[seen.len() - 1]);
    assert!(last.0 > first.0, "operations grew during the run: {seen:?}");
    assert!(last.0 <= d.result("r.json").total.ok);
}

#[test]
fn a_busy_metrics_port_is_an_input_error() {
    let d = Dir::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (_, err) = d.code(
        2,
        &[
            "run",
            "noop",
            "--ops",
            "10",
            "-o",
            "r.json",
            "--metrics-addr",
            &addr,
        ],
    );
    assert!(err.contains("cannot listen there"), "{err}");
    let (_, err) = d.code(
        2,
        &[
            "run",
            "noop",
            "--ops",
            "10",
            "-o",
            "r.json",
            "--metrics-addr",
            "localhost",
        ],
    );
    assert!(err.contains("expected IP:PORT"), "{err}");
    assert!(d.files().is_empty(), "{:?}", d.files());
}

const YCSB_OPS: &str = r#"name = "ycsb-like"
target = "sleep://?latency=uniform(200us..600us)&errors=0.2"

[[op]]
name = "read"
weight = 3
nop = {}

[[op]]
name = "read-modify-write"
nop = {}

[[op]]
name = "never"
weight = 0.000001
nop = {}
"#;

/// YCSB's text output parsed back: (metric, measurement, value) per line, in order.
fn parse_ycsb(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .map(|l| {
            let (metric, rest) = l
                .strip_prefix('[')
                .and_then(|l| l.split_once("], "))
                .unwrap_or_else(|| panic!("not a YCSB line: {l}"));
            let (measurement, value) = rest.split_once(", ").expect("MEASUREMENT, VALUE");
            (metric.into(), measurement.into(), value.into())
        })
        .collect()
}

#[test]
fn ycsb_text_reads_back_as_the_run() {
    let d = Dir::new();
    d.write("w.toml", YCSB_OPS);
    d.ok(&[
        "run",
        "w.toml",
        "--clients",
        "2",
        "--ops",
        "600",
        "--seed",
        "5",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let out = d.ok(&["export", "r.json", "--ycsb", "r.ycsb"]);
    assert!(out.contains("wrote "), "{out}");
    let lines = parse_ycsb(&std::fs::read_to_string(d.join("r.ycsb")).unwrap());
    let value = |metric: &str, measurement: &str| -> &str {
        &lines
            .iter()
            .find(|(m, s, _)| m == metric && s == measurement)
            .unwrap_or_else(|| panic!("no [{metric}], {measurement}"))
            .2
    };
    let int = |metric: &str, measurement: &str| value(metric, measurement).parse::<u64>().unwrap();

    // The exact lines, in YCSB's order; `never` did not run, so it has no measurement.
    let (read, rmw, never) = (&r.operations[0], &r.operations[1], &r.operations[2]);
    assert_eq!(never.ok + never.errors, 0, "the seed leaves `never` out");
    // About 30 failures expected for the rarer operation: never none.
    assert!(read.errors > 0 && rmw.errors > 0, "errors for both");
    let per_op = [
        "Operations",
        "AverageLatency(us)",
        "MinLatency(us)",
        "MaxLatency(us)",
        "95thPercentileLatency(us)",
        "99thPercentileLatency(us)",
        "Return=OK",
        "Return=ERROR",
    ];
    let mut expected: Vec<(&str, &str)> = vec![
        ("OVERALL", "RunTime(ms)"),
        ("OVERALL", "Throughput(ops/sec)"),
        ("TOTAL_GCs", "Count"),
        ("TOTAL_GC_TIME", "Time(ms)"),
        ("TOTAL_GC_TIME_%", "Time(%)"),
    ];
    for (name, failed) in [
        ("READ", "READ-FAILED"),
        ("READ-MODIFY-WRITE", "READ-MODIFY-WRITE-FAILED"),
    ] {
        expected.extend(per_op.iter().map(|m| (name, *m)));
        // YCSB's failures: the latency lines, no return codes.
        expected.extend(per_op[..6].iter().map(|m| (failed, *m)));
    }
    let got: Vec<(&str, &str)> = lines
        .iter()
        .map(|(m, s, _)| (m.as_str(), s.as_str()))
        .collect();
    assert_eq!(got, expected);

    // Counts, the run time and the throughput over every operation.
    let runtime = int("OVERALL", "RunTime(ms)");
    assert_eq!(runtime, (r.measured_s * 1000.0).round() as u64);
    let throughput: f64 = value("OVERALL", "Throughput(ops/sec)").parse().unwrap();
    assert_eq!(throughput, 1000.0 * 600.0 / runtime as f64);
    for (name, o) in [("READ", read), ("READ-MODIFY-WRITE", rmw)] {
        assert_eq!(int(name, "Operations"), o.ok);
        assert_eq!(int(name, "Return=OK"), o.ok);
        assert_eq!(
            int(name, "Return=ERROR"),
            o.errors,
            "sleep's errors are class other"
        );
        // Latencies in whole microseconds, from the run file's own figures.
        let l = &o.latency;
        assert_eq!(int(name, "MinLatency(us)"), l.min_ns / 1000);
        assert_eq!(int(name, "MaxLatency(us)"), l.max_ns / 1000);
        assert_eq!(int(name, "99thPercentileLatency(us)"), l.p99_ns / 1000);
        let h = o.histogram.decode().unwrap();
        assert_eq!(
            int(name, "95thPercentileLatency(us)"),
            h.value_at_quantile(0.95) / 1000
        );
        let mean: f64 = value(name, "AverageLatency(us)").parse().unwrap();
        assert_eq!(mean, l.mean_ns / 1000.0);
        // In microseconds: at least the simulated server's 200 µs floor (no upper bound:
        // a busy machine may take any time).
        assert!(mean >= 200.0, "{mean}");

        // The failures' own latencies, which sleep:// draws as it draws the successes'.
        let failed = &format!("{name}-FAILED");
        assert_eq!(int(failed, "Operations"), o.errors);
        let l = o.failed_latency.as_ref().expect("failures' latencies kept");
        assert_eq!(l.count, o.errors);
        assert_eq!(int(failed, "MinLatency(us)"), l.min_ns / 1000);
        assert_eq!(int(failed, "MaxLatency(us)"), l.max_ns / 1000);
        assert_eq!(int(failed, "99thPercentileLatency(us)"), l.p99_ns / 1000);
        let mean: f64 = value(failed, "AverageLatency(us)").parse().unwrap();
        assert_eq!(mean, l.mean_ns / 1000.0);
        assert!(l.min_ns >= 200_000, "{l:?}");
    }
    assert!(never.failed_latency.is_none() && never.failed_histogram.is_none());
}

/// Reads of keys half of which were never stored: YCSB's `NOT_FOUND` for the misses, out of
/// `Operations` and `Return=OK`; each hit is one row, so the misses are `ok - rows`.
#[test]
fn ycsb_reads_of_missing_keys_are_not_found() {
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"name = "misses"
[data]
count = 50
key = "k{seq}"
value = "{bytes 8}"
[[op]]
name = "read"
kv.get = { key = "k{uniform 0..100}" }
"#,
    );
    d.ok(&[
        "run",
        "w.toml",
        "--target",
        "sqlite://./t.db",
        "--ops",
        "400",
        "--seed",
        "3",
        "-o",
        "r.json",
    ]);
    let r = d.result("r.json");
    let read = &r.operations[0];
    assert_eq!((read.ok, read.errors), (400, 0));
    assert_eq!(read.empty, read.ok - read.rows, "a miss reads no row");
    assert!(read.empty > 0 && read.rows > 0, "hits and misses: {read:?}");
    d.ok(&["export", "r.json", "--ycsb", "r.ycsb"]);
    let lines = parse_ycsb(&std::fs::read_to_string(d.join("r.ycsb")).unwrap());
    let int = |measurement: &str| -> u64 {
        let line = lines
            .iter()
            .find(|(m, s, _)| m == "READ" && s == measurement);
        line.unwrap_or_else(|| panic!("no [READ], {measurement}"))
            .2
            .parse()
            .unwrap()
    };
    assert_eq!(int("Operations"), read.rows);
    assert_eq!(int("Return=OK"), read.rows);
    assert_eq!(int("Return=NOT_FOUND"), read.empty);
    // The misses' latencies are YCSB's [READ-FAILED], and out of [READ]'s.
    let missing = read
        .missing_histogram
        .as_ref()
        .expect("misses' latencies kept");
    let missing = missing.decode().unwrap();
    assert_eq!(missing.len(), read.empty);
    let failed: Vec<_> = lines
        .iter()
        .filter(|(m, _, _)| m == "READ-FAILED")
        .collect();
    assert_eq!(failed[0].1, "Operations");
    assert_eq!(failed[0].2, read.empty.to_string());
    assert_eq!(failed[2].1, "MinLatency(us)");
    assert_eq!(failed[2].2, (missing.min() / 1000).to_string());
    assert_eq!(failed.len(), 6, "latency lines only: {failed:?}");
    let mut hits = read.histogram.decode().unwrap();
    hits.subtract(&missing).unwrap();
    assert_eq!(hits.len(), read.rows);
    assert_eq!(
        int("MaxLatency(us)"),
        hits.max() / 1000,
        "the hits' latencies"
    );
    assert!(read.failed_histogram.is_none(), "no read failed");
}

#[test]
fn ycsb_export_refuses_names_that_would_clash() {
    let d = Dir::new();
    d.write(
        "w.toml",
        "name = \"clash\"\n[[op]]\nname = \"read it\"\nnop = {}\n[[op]]\nname = \"READ_IT\"\nnop = {}\n",
    );
    d.ok(&[
        "run", "w.toml", "--target", "noop://", "--ops", "20", "-o", "r.json",
    ]);
    let (_, err) = d.code(2, &["export", "r.json", "--ycsb", "r.ycsb", "--csv", "csv"]);
    assert!(
        err.contains("[READ_IT]") && err.contains("'read it'"),
        "{err}"
    );
    // An operation's failures are `[NAME-FAILED]`: no operation may take that name.
    d.write(
        "f.toml",
        "name = \"clash\"\n[[op]]\nname = \"read\"\nnop = {}\n[[op]]\nname = \"read-failed\"\nnop = {}\n",
    );
    d.ok(&[
        "run", "f.toml", "--target", "noop://", "--ops", "20", "-o", "f.json",
    ]);
    let (_, err) = d.code(2, &["export", "f.json", "--ycsb", "f.ycsb"]);
    assert!(
        err.contains("[READ-FAILED]") && err.contains("'read'") && err.contains("-FAILED"),
        "{err}"
    );
    assert!(!d.join("f.ycsb").exists());
    let (_, err) = d.code(2, &["export", "r.json", "--ycsb", "r.json"]);
    assert!(err.contains("the result file itself"), "{err}");
    assert!(
        !d.join("r.ycsb").exists() && !d.join("csv").exists(),
        "nothing written"
    );
}
