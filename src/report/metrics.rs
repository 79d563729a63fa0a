//! `--metrics-addr 127.0.0.1:PORT`: the run's figures as OpenMetrics text, for a scrape.
//!
//! A small std listener thread serves `GET /metrics` (and `/`); it needs no HTTP crate since
//! it answers one path. It reads the state the collector updates once per interval (never
//! the clients' hot path): counters of successful and failed operations since the end of the
//! warm-up, the last interval's rate, and latency summaries (p50, p90, p99, p99.9, count,
//! sum) over the measured part so far, the same figures the result file will hold.
//!
//! ```text
//! loadrig_operations_total{op="read"} 48210
//! loadrig_errors_total{op="read",class="timeout"} 3
//! loadrig_throughput_per_second{op="read"} 9641.0
//! loadrig_latency_seconds{op="read",quantile="0.99"} 0.002103
//! ```

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{IntervalData, Observer};
use crate::error::InputError;
use crate::stats::OpCounters;

/// What the endpoint shows, updated after each interval.
struct State {
    workload: String,
    names: Vec<String>,
    /// Measured (after warm-up) counters so far, per operation.
    totals: Vec<OpCounters>,
    /// Successes per second in the last finished interval, per operation.
    last_rate: Vec<f64>,
    intervals: u64,
    warmup: bool,
}

/// The endpoint: a listener thread and the state it serves.
pub struct MetricsServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Bind `addr` (port 0 picks a free port) and start serving.
    pub fn start(
        addr: &str,
        workload: &str,
        names: &[String],
    ) -> Result<MetricsServer, InputError> {
        let parsed: SocketAddr = addr.parse().map_err(|_| {
            InputError::new(format!("--metrics-addr {addr}: expected IP:PORT"))
                .help("for example --metrics-addr 127.0.0.1:9464")
        })?;
        let listener = TcpListener::bind(parsed).map_err(|e| {
            InputError::new(format!("--metrics-addr {addr}: cannot listen there: {e}"))
                .help("pick another port, or 127.0.0.1:0 for any free one")
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| InputError::new(format!("--metrics-addr {addr}: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| InputError::new(format!("--metrics-addr {addr}: {e}")))?;
        let state = Arc::new(Mutex::new(State {
            workload: workload.to_string(),
            names: names.to_vec(),
            totals: names.iter().map(|_| OpCounters::default()).collect(),
            last_rate: vec![0.0; names.len()],
            intervals: 0,
            warmup: true,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (Arc::clone(&state), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || serve(listener, state, stop))
                .map_err(|e| InputError::new(format!("--metrics-addr {addr}: {e}")))?
        };
        Ok(MetricsServer {
            addr: bound,
            state,
            stop,
            thread: Some(thread),
        })
    }

    /// Take in one finished interval.
    pub fn interval(&self, data: &IntervalData) {
        let Ok(mut s) = self.state.lock() else { return };
        s.intervals += 1;
        s.warmup = data.warmup;
        let secs = (data.end - data.start).as_secs_f64();
        for (k, c) in data.ops.iter().enumerate().take(s.names.len()) {
            s.last_rate[k] = if secs > 0.0 { c.ok as f64 / secs } else { 0.0 };
            if !data.warmup {
                s.totals[k].merge(c);
            }
        }
    }
}

impl Observer for MetricsServer {
    fn interval(&mut self, data: &IntervalData) {
        MetricsServer::interval(self, data);
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, state: Arc<Mutex<State>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                // One short request at a time; a slow client cannot hold the run.
                let _ = answer(stream, &state);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn answer(mut stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&request);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            let body = match state.lock() {
                Ok(s) => render(&s),
                Err(_) => String::from("# EOF\n"),
            };
            (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                body,
            )
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "loadrig serves /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "GET /metrics\n".to_string(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}

/// A label value with `\`, `"` and line breaks escaped (OpenMetrics ABNF).
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The whole exposition: each metric family in turn, then the closing `# EOF`.
fn render(s: &State) -> String {
    let mut out = String::new();
    run_families(&mut out, s);
    count_families(&mut out, s);
    throughput_family(&mut out, s);
    latency_family(&mut out, s);
    out.push_str("# EOF\n");
    out
}

/// The run itself: version and workload, warm-up, intervals finished.
fn run_families(out: &mut String, s: &State) {
    let _ = writeln!(out, "# TYPE loadrig info");
    let _ = writeln!(out, "# HELP loadrig The running loadrig and its workload.");
    let _ = writeln!(
        out,
        "loadrig_info{{version=\"{}\",workload=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        escape_label(&s.workload)
    );
    let _ = writeln!(out, "# TYPE loadrig_warmup gauge");
    let _ = writeln!(
        out,
        "# HELP loadrig_warmup 1 while the last finished interval was warm-up."
    );
    let _ = writeln!(out, "loadrig_warmup {}", u8::from(s.warmup));
    let _ = writeln!(out, "# TYPE loadrig_intervals counter");
    let _ = writeln!(
        out,
        "# HELP loadrig_intervals Finished intervals, warm-up included."
    );
    let _ = writeln!(out, "loadrig_intervals_total {}", s.intervals);
}

/// Successful operations per operation, and failed ones per operation and class.
fn count_families(out: &mut String, s: &State) {
    let _ = writeln!(out, "# TYPE loadrig_operations counter");
    let _ = writeln!(
        out,
        "# HELP loadrig_operations Successful operations after the warm-up."
    );
    for (name, c) in s.names.iter().zip(&s.totals) {
        let _ = writeln!(
            out,
            "loadrig_operations_total{{op=\"{}\"}} {}",
            escape_label(name),
            c.ok
        );
    }
    let _ = writeln!(out, "# TYPE loadrig_errors counter");
    let _ = writeln!(
        out,
        "# HELP loadrig_errors Failed operations after the warm-up, by class."
    );
    for (name, c) in s.names.iter().zip(&s.totals) {
        for (class, n) in c.errors.iter() {
            let _ = writeln!(
                out,
                "loadrig_errors_total{{op=\"{}\",class=\"{}\"}} {n}",
                escape_label(name),
                class.name()
            );
        }
    }
}

fn throughput_family(out: &mut String, s: &State) {
    let _ = writeln!(out, "# TYPE loadrig_throughput_per_second gauge");
    let _ = writeln!(
        out,
        "# HELP loadrig_throughput_per_second Successful operations per second in the last finished interval."
    );
    for (name, r) in s.names.iter().zip(&s.last_rate) {
        let _ = writeln!(
            out,
            "loadrig_throughput_per_second{{op=\"{}\"}} {r:.3}",
            escape_label(name)
        );
    }
}

/// A summary per operation: quantiles (when there is any latency), sum and count.
fn latency_family(out: &mut String, s: &State) {
    let _ = writeln!(out, "# TYPE loadrig_latency_seconds summary");
    let _ = writeln!(out, "# UNIT loadrig_latency_seconds seconds");
    let _ = writeln!(
        out,
        "# HELP loadrig_latency_seconds Response time of successful operations after the warm-up."
    );
    for (name, c) in s.names.iter().zip(&s.totals) {
        let label = escape_label(name);
        let h = &c.latency;
        if !h.is_empty() {
            for q in [0.5, 0.9, 0.99, 0.999] {
                let _ = writeln!(
                    out,
                    "loadrig_latency_seconds{{op=\"{label}\",quantile=\"{q}\"}} {:.9}",
                    h.value_at_quantile(q) as f64 / 1e9
                );
            }
        }
        let sum = if h.is_empty() {
            0.0
        } else {
            h.mean() * h.len() as f64 / 1e9
        };
        let _ = writeln!(
            out,
            "loadrig_latency_seconds_sum{{op=\"{label}\"}} {sum:.9}"
        );
        let _ = writeln!(
            out,
            "loadrig_latency_seconds_count{{op=\"{label}\"}} {}",
            h.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn renders_counters_and_summaries() {
        let mut c = OpCounters {
            ok: 3,
            ..OpCounters::default()
        };
        for v in [1_000_000u64, 2_000_000, 3_000_000] {
            c.latency.record(v).unwrap();
        }
        let s = State {
            workload: "w".into(),
            names: vec!["re\"ad".into()],
            totals: vec![c],
            last_rate: vec![30.0],
            intervals: 2,
            warmup: false,
        };
        let text = render(&s);
        assert!(text.contains("loadrig_operations_total{op=\"re\\\"ad\"} 3\n"));
        assert!(text.contains("loadrig_latency_seconds_count{op=\"re\\\"ad\"} 3\n"));
        assert!(text.contains("quantile=\"0.5\"} 0.002"));
        assert!(text.ends_with("# EOF\n"));
    }
}
