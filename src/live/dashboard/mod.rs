//! `--dashboard ADDR`: one page that shows the run while it goes.
//!
//! The page and its script are in the binary (`page.html`, `page.css`, `page.js`; no
//! third-party code, the plots drawn as SVG by the script). hyper serves them on a thread
//! of its own with a single-threaded runtime: `/` the page, `/events` the run as
//! server-sent events (everything so far first, so a page opened mid-run catches up, then
//! each interval as it finishes), `/report/N.html` and `/result/N.json` the finished run
//! N's HTML report (the one `--report` writes) and result.
//!
//! One dashboard per address serves every run of the process: the runner begins a run on
//! it ([`Dashboard::begin`]) for `run`, each sweep point, each study or experiment run, so
//! a page left open follows them all. Its cost is measured: the dashboard thread's CPU
//! clock and the time the runner's collector thread spends handing it intervals, against
//! the process's CPU over the same span ([`Watch::record`]), recorded in the result.

mod board;
mod events;
mod server;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use super::cpu::{self, ThreadClock};
use crate::error::InputError;
use crate::result::live::DashboardRecord;
use crate::result::{IntervalRecord, RunResult};
use crate::stats::Hist;
use board::{Board, Counters};

/// What a run shows at its top while it goes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunInfo {
    /// `WORKLOAD on TARGET` (the target without its password).
    pub title: String,
    /// The load in words, and for a sweep point or a study run what it is.
    pub subtitle: String,
    /// `run --label`, a sweep point's value, a study's run name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub ops: Vec<String>,
    pub interval_s: f64,
    pub warmup_s: f64,
    /// The measured part, when a duration is planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_s: Option<f64>,
    /// `collect`: how many shards make the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<usize>,
}

/// What the dashboard thread is handed.
pub(crate) enum Feed {
    Begin(Box<RunInfo>),
    Interval(Box<IntervalRecord>, Option<Vec<Hist>>),
    /// An interval's record again, once the server's figures have joined it.
    Server(Box<IntervalRecord>),
    /// The collector's view of its shards, shown as a table (any JSON).
    Shards(serde_json::Value),
    /// A line for the page's log ("shard 1 stopped sending after interval 4").
    Note(String),
    End(Box<RunResult>),
    /// The process is ending: tell the pages, close their streams, then answer.
    Bye(oneshot::Sender<()>),
}

/// A running dashboard. One per address per process ([`open`]).
pub struct Dashboard {
    pub addr: SocketAddr,
    feed: mpsc::UnboundedSender<Feed>,
    board: Arc<Mutex<Board>>,
    clock: Option<ThreadClock>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The dashboards of this process, by the address asked for.
type Registry = Mutex<Vec<(String, Arc<Dashboard>)>>;

fn registry() -> &'static Registry {
    static ALL: OnceLock<Registry> = OnceLock::new();
    ALL.get_or_init(Default::default)
}

/// The dashboard on `addr` (`--dashboard ADDR`): the one this process already serves there,
/// or a new one, bound now (an address that cannot be bound is bad input, before anything
/// runs) with its URL printed.
pub fn open(addr: &str) -> Result<Arc<Dashboard>, InputError> {
    let mut all = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, d)) = all.iter().find(|(a, _)| a == addr) {
        return Ok(Arc::clone(d));
    }
    let wanted = parse_addr(addr)?;
    let d = Arc::new(Dashboard::start(wanted, addr)?);
    println!("dashboard: http://{}/", d.addr);
    if !d.addr.ip().is_loopback() {
        println!(
            "dashboard: listening on {} beyond loopback: anyone who can reach this machine can watch the run (it asks no password); --dashboard 127.0.0.1:PORT keeps it to this machine",
            d.addr
        );
    }
    all.push((addr.to_string(), Arc::clone(&d)));
    Ok(d)
}

/// The dashboard a command serves for every run it makes (`study --dashboard`), whatever
/// each run's plan says.
static EVERY_RUN: OnceLock<String> = OnceLock::new();

/// Serve the dashboard on `addr` now, and show every run of this process on it.
pub fn serve_every_run(addr: &str) -> Result<Arc<Dashboard>, InputError> {
    let d = open(addr)?;
    let _ = EVERY_RUN.set(addr.to_string());
    Ok(d)
}

/// The address [`serve_every_run`] was given.
pub fn every_run() -> Option<String> {
    EVERY_RUN.get().cloned()
}

/// Before the process exits: every dashboard tells its pages the process is ending and
/// waits (a few seconds at most) until they have what was sent to them.
pub fn shutdown_all() {
    let all: Vec<Arc<Dashboard>> = registry()
        .lock()
        .map(|mut v| v.drain(..).map(|(_, d)| d).collect())
        .unwrap_or_default();
    for d in all {
        d.shutdown();
    }
}

/// `--dashboard ADDR`: `IP:PORT`, `[IPv6]:PORT`, `localhost:PORT`, or a bare `PORT` (on
/// 127.0.0.1). Port 0 picks a free one.
pub fn parse_addr(addr: &str) -> Result<SocketAddr, InputError> {
    let bad = || {
        InputError::new(format!("--dashboard {addr}: expected IP:PORT or PORT"))
            .help("for example --dashboard 127.0.0.1:0 (any free port on this machine only)")
    };
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = addr.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|_| bad())?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    addr.parse::<SocketAddr>().map_err(|_| bad())
}

impl Dashboard {
    fn start(wanted: SocketAddr, asked: &str) -> Result<Dashboard, InputError> {
        let listener = std::net::TcpListener::bind(wanted).map_err(|e| {
            InputError::new(format!("--dashboard {asked}: cannot listen there: {e}"))
                .help("pick another port, or 127.0.0.1:0 for any free one")
        })?;
        let addr = listener
            .local_addr()
            .and_then(|a| listener.set_nonblocking(true).map(|()| a))
            .map_err(|e| InputError::new(format!("--dashboard {asked}: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| InputError::new(format!("cannot start the dashboard's runtime: {e}")))?;
        let board = Arc::new(Mutex::new(Board::default()));
        let (feed, fed) = mpsc::unbounded_channel();
        let (clock_tx, clock_rx) = std::sync::mpsc::channel();
        let serving = Arc::clone(&board);
        let thread = std::thread::Builder::new()
            .name("dashboard".into())
            .spawn(move || {
                let _ = clock_tx.send(ThreadClock::current());
                runtime.block_on(server::serve(listener, serving, fed));
            })
            .map_err(|e| InputError::new(format!("cannot start the dashboard's thread: {e}")))?;
        let clock = clock_rx.recv().ok().flatten();
        Ok(Dashboard {
            addr,
            feed,
            board,
            clock,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A run begins: the pages clear and show `info`. The returned [`Watch`] feeds the
    /// run's intervals and measures what the dashboard costs meanwhile.
    pub fn begin(self: &Arc<Self>, info: RunInfo) -> Watch {
        self.send(Feed::Begin(Box::new(info)));
        Watch {
            dash: Arc::clone(self),
            caller: Duration::ZERO,
            mark: None,
            ended: false,
        }
    }

    pub(crate) fn send(&self, f: Feed) {
        // The thread only ends at shutdown; a send after it is dropped.
        let _ = self.feed.send(f);
    }

    fn counters(&self) -> Counters {
        self.board
            .lock()
            .map(|b| b.counters.clone())
            .unwrap_or_default()
    }

    fn own_cpu(&self) -> Duration {
        self.clock.map_or(Duration::ZERO, ThreadClock::read)
    }

    fn shutdown(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Feed::Bye(tx));
        // The thread answers once the pages' streams are closed (or gives up on them).
        let _ = rx.blocking_recv();
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }
}

/// One run on a dashboard: feeds it, and measures its cost from [`Watch::mark`] on.
pub struct Watch {
    dash: Arc<Dashboard>,
    /// CPU the feeding threads spent on the dashboard's behalf since the mark.
    caller: Duration,
    mark: Option<Mark>,
    ended: bool,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.ended {
            self.dash.send(Feed::Note(
                "the run stopped without a result (the console says why)".into(),
            ));
        }
    }
}

/// The clocks when the measured span began.
struct Mark {
    own: Duration,
    process: Duration,
    counters: Counters,
}

impl Watch {
    pub fn addr(&self) -> SocketAddr {
        self.dash.addr
    }

    /// Start measuring here (the run's clients start); the pages counted from here too.
    pub fn mark(&mut self) {
        let counters = self
            .dash
            .board
            .lock()
            .map(|mut b| {
                b.counters.pages_max = b.counters.pages_now;
                b.counters.clone()
            })
            .unwrap_or_default();
        self.caller = Duration::ZERO;
        self.mark = Some(Mark {
            own: self.dash.own_cpu(),
            process: cpu::process(),
            counters,
        });
    }

    /// A finished interval. `hists`, the operations' latency histograms when the caller has
    /// them, spare the dashboard decoding the record's.
    pub fn interval(&mut self, record: IntervalRecord, hists: Option<Vec<Hist>>) {
        let t = cpu::this_thread();
        self.dash.send(Feed::Interval(Box::new(record), hists));
        self.caller += cpu::this_thread().saturating_sub(t);
    }

    /// Count the calling thread's CPU from `since` (its own `cpu::this_thread()` reading)
    /// as the dashboard's: what it spent making a record only the dashboard needs.
    pub fn charge_since(&mut self, since: Duration) {
        self.caller += cpu::this_thread().saturating_sub(since);
    }

    /// A finished interval's record with the server's figures joined (after its
    /// [`Watch::interval`]); one without them is not sent.
    pub fn server(&mut self, record: &IntervalRecord) {
        if record.server.is_none() {
            return;
        }
        let t = cpu::this_thread();
        self.dash.send(Feed::Server(Box::new(record.clone())));
        self.caller += cpu::this_thread().saturating_sub(t);
    }

    pub fn shards(&self, table: serde_json::Value) {
        self.dash.send(Feed::Shards(table));
    }

    pub fn note(&self, line: String) {
        self.dash.send(Feed::Note(line));
    }

    /// What the dashboard cost from the mark until now.
    pub fn record(&self) -> Option<DashboardRecord> {
        let m = self.mark.as_ref()?;
        let now = self.dash.counters();
        let cpu_s = (self.dash.own_cpu().saturating_sub(m.own) + self.caller).as_secs_f64();
        let run_cpu_s = cpu::process().saturating_sub(m.process).as_secs_f64();
        Some(DashboardRecord {
            addr: self.dash.addr.to_string(),
            cpu_s,
            run_cpu_s,
            cpu_share: if run_cpu_s > 0.0 {
                cpu_s / run_cpu_s
            } else {
                0.0
            },
            pages_max: now.pages_max,
            pages_opened: now.pages_opened - m.counters.pages_opened,
            events_sent: now.events_sent - m.counters.events_sent,
            bytes_sent: now.bytes_sent - m.counters.bytes_sent,
        })
    }

    /// The run ended with `result`: the pages show its summary and offer its report.
    pub fn end(mut self, result: &RunResult) {
        self.ended = true;
        self.dash.send(Feed::End(Box::new(result.clone())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(parse_addr("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(
            parse_addr("localhost:0").unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert_eq!(parse_addr("0.0.0.0:80").unwrap().to_string(), "0.0.0.0:80");
        for bad in ["", "host:80", "127.0.0.1", "127.0.0.1:99999"] {
            assert!(parse_addr(bad).is_err(), "{bad}");
        }
    }
}
