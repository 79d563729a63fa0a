//! `loadrig collect --listen ADDR --shards N`: a sharded run taken in as it goes.
//!
//! Each shard (`run --shard I/N --collect ADDR`) streams its finished intervals and, at its
//! end, its result. The collector merges each interval across the shards as soon as every
//! shard has sent it (or has stopped, or kept it waiting past the patience), with the merge
//! `loadrig merge` uses (`assemble::merge::merge_interval`), prints it and shows it on the
//! dashboard. At the end it merges the shards' results with `assemble::merge` itself, so
//! its result is the one `loadrig merge` makes of the shards' files; a shard that stopped
//! sending counts with the intervals it sent (as `loadrig recover` would rebuild them), and
//! the result says which intervals lack it. The observing shard's server figures follow
//! their intervals; the dashboard gets them once per merged interval.

mod book;
mod conn;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use tokio::sync::mpsc;

use super::dashboard::{self, RunInfo, Watch};
use super::wire::{self, ToShard};
use crate::assemble::merge::{merge_interval, whole_load};
use crate::assemble::{self, ShardFile};
use crate::engine::LoadPlan;
use crate::error::InputError;
use crate::report::console;
use crate::result::live::CollectRecord;
use crate::result::stream::Stream;
use crate::result::{IntervalRecord, RunResult, RunStatus};
use book::{Book, State, Verdict};
use conn::Event;

/// What `loadrig collect` was told.
pub struct Config {
    pub listen: SocketAddr,
    pub shards: usize,
    pub token: Option<String>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// How long to wait for a shard that is late or silent before going on without it.
    pub patience: Duration,
    pub dashboard: Option<String>,
    /// The load in words, for the dashboard (the runner's description).
    pub describe: fn(&LoadPlan) -> String,
    /// Set by Ctrl-C: end now with what there is.
    pub interrupted: &'static AtomicBool,
}

/// Bind the listener now, so that an address that cannot be bound is bad input before
/// anything else.
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, InputError> {
    let l = std::net::TcpListener::bind(addr).map_err(|e| {
        InputError::new(format!("--listen {addr}: cannot listen there: {e}"))
            .help("pick another port, or 127.0.0.1:0 for any free one")
    })?;
    l.set_nonblocking(true)
        .map_err(|e| InputError::new(format!("--listen {addr}: {e}")))?;
    Ok(l)
}

/// Take the shards' streams in until the run is over; the merged run.
pub fn run(cfg: Config, listener: std::net::TcpListener) -> Result<RunResult> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(collect(cfg, listener))
}

/// How many merged intervals wait for their server figures at most (the observer's
/// reading follows its interval by about one interval; one that never comes is let go).
const AWAIT_SERVER: u64 = 64;

struct Collector {
    cfg: Config,
    book: Book,
    answers: HashMap<u64, mpsc::UnboundedSender<ToShard>>,
    watch: Option<Watch>,
    /// Intervals shown on the dashboard before their server figures came, by index.
    awaiting_server: BTreeMap<u64, IntervalRecord>,
    listen: String,
}

async fn collect(cfg: Config, listener: std::net::TcpListener) -> Result<RunResult> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let listen = listener.local_addr()?.to_string();
    let dash = cfg.dashboard.as_deref().map(dashboard::open).transpose()?;
    println!(
        "collect: listening on {listen} for {} shard(s), stream version {}{}{}",
        cfg.shards,
        wire::VERSION,
        if cfg.token.is_some() {
            ", a token required"
        } else {
            ""
        },
        if cfg.tls.is_some() { ", over TLS" } else { "" },
    );
    let now = Instant::now();
    let mut c = Collector {
        book: Book::new(cfg.shards, cfg.token.clone(), cfg.patience, now),
        cfg,
        answers: HashMap::new(),
        watch: None,
        awaiting_server: BTreeMap::new(),
        listen,
    };
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut next_conn = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, from)) = accepted else { continue };
                next_conn += 1;
                tokio::spawn(conn::serve(tcp, from, c.cfg.tls.clone(), next_conn, events_tx.clone()));
            }
            Some(e) = events.recv() => c.event(e, dash.as_ref()),
            _ = tick.tick() => {
                c.tick();
                if c.book.over(Instant::now()) || c.cfg.interrupted.load(Ordering::SeqCst) {
                    break;
                }
            }
        }
    }
    c.finish()
}

impl Collector {
    fn event(&mut self, e: Event, dash: Option<&Arc<dashboard::Dashboard>>) {
        let now = Instant::now();
        match e {
            Event::Hello {
                conn,
                from,
                hello,
                answer,
            } => {
                let first = self.book.identity.is_none();
                match self.book.hello(&hello, from, conn, now) {
                    Verdict::Accept { have } => {
                        println!(
                            "collect: shard {} of {} connected from {from} ({}){}",
                            hello.shard,
                            hello.count,
                            hello.file,
                            if have > 0 {
                                format!(", again: it has sent intervals 1 to {have}")
                            } else {
                                String::new()
                            }
                        );
                        let _ = answer.send(ToShard::Accepted { have, server: true });
                        self.answers.insert(conn, answer);
                        if first {
                            self.begin(&hello, dash);
                        }
                    }
                    Verdict::Refuse { message, help } => {
                        println!(
                            "collect: refused a stream from {from} (shard {} of {}): {message} ({} refused so far)",
                            hello.shard, hello.count, self.book.refused
                        );
                        let _ = answer.send(ToShard::Refused { message, help });
                    }
                }
                self.show_shards();
            }
            Event::Refused { from, reason } => {
                self.book.refuse(from, None, &reason);
                println!(
                    "collect: refused a stream from {from}: {reason} ({} refused so far)",
                    self.book.refused
                );
                self.show_shards();
            }
            Event::Header(conn, h) => {
                if let Some(i) = self.book.shard_of(conn) {
                    self.book.heard(i, now);
                    self.book.shards[i].header = Some(*h);
                }
            }
            Event::Ping(conn) => {
                if let Some(i) = self.book.shard_of(conn) {
                    self.book.heard(i, now);
                }
            }
            Event::Interval(conn, r) => {
                if let Some(i) = self.book.shard_of(conn) {
                    if let Err(why) = self.book.interval(i, *r, now) {
                        self.drop_conn(conn, i, &why, now);
                    }
                }
            }
            Event::Server(conn, f) => {
                if let Some(i) = self.book.shard_of(conn) {
                    let k = f.index;
                    if self.book.server(i, *f, now) {
                        self.show_server(i, k);
                    }
                }
            }
            Event::Result(conn, r) => {
                if let Some(i) = self.book.shard_of(conn) {
                    match self.book.result(i, *r, now) {
                        Ok(()) => {
                            println!("collect: shard {i} sent its run");
                            if let Some(a) = self.answers.remove(&conn) {
                                let _ = a.send(ToShard::Received {});
                            }
                            self.show_shards();
                        }
                        Err(why) => self.drop_conn(conn, i, &why, now),
                    }
                }
            }
            Event::Closed(conn, why) => {
                self.answers.remove(&conn);
                if let Some((i, after)) = self.book.closed(conn, &why, now) {
                    self.stopped(i, after, &why);
                }
            }
        }
    }

    /// Refuse what a shard sent that does not fit, and stop listening to it.
    fn drop_conn(&mut self, conn: u64, i: usize, why: &str, now: Instant) {
        if let Some(a) = self.answers.remove(&conn) {
            let _ = a.send(ToShard::Refused {
                message: why.to_string(),
                help: None,
            });
        }
        let after = self
            .book
            .closed(conn, &format!("refused: {why}"), now)
            .map_or(0, |(_, a)| a);
        self.stopped(i, after, &format!("refused: {why}"));
    }

    fn stopped(&mut self, i: usize, after: u64, why: &str) {
        let line = format!("shard {i} stopped sending after interval {after}: {why}");
        println!("collect: {line}");
        if let Some(w) = &self.watch {
            w.note(line);
        }
        self.show_shards();
    }

    /// The first shard accepted: the dashboard shows the whole run.
    fn begin(&mut self, h: &wire::Hello, dash: Option<&Arc<dashboard::Dashboard>>) {
        let Some(d) = dash else { return };
        let whole = whole_load(&h.load);
        let mut w = d.begin(RunInfo {
            title: format!("{} on {}", h.workload.name, h.target.url),
            subtitle: format!(
                "{}; collected from {} shards",
                (self.cfg.describe)(&whole),
                self.cfg.shards
            ),
            label: None,
            ops: h.workload.ops.iter().map(|o| o.name.clone()).collect(),
            interval_s: whole.interval.as_secs_f64(),
            warmup_s: whole.warmup.as_secs_f64(),
            planned_s: whole.duration.map(|d| d.as_secs_f64()),
            shards: Some(self.cfg.shards),
        });
        w.mark();
        self.watch = Some(w);
    }

    fn show_shards(&self) {
        if let Some(w) = &self.watch {
            w.shards(self.book.table());
        }
    }

    /// Every 200 ms: silent shards given up, ready intervals merged and shown.
    fn tick(&mut self) {
        let now = Instant::now();
        let interval = self
            .book
            .identity
            .as_ref()
            .map_or(Duration::from_secs(1), |h| h.load.interval);
        let silence = self.cfg.patience.max(interval * 3);
        for (i, conn, after) in self.book.silent(silence, now) {
            self.answers.remove(&conn);
            let why = format!("it sent nothing for {}s", silence.as_secs());
            self.stopped(i, after, &why);
        }
        while let Some((k, have, missing)) = self.book.next_ready(now, false) {
            self.show_interval(k, &have, &missing);
        }
    }

    fn show_interval(&mut self, k: u64, have: &[usize], missing: &[usize]) {
        let shards = &self.book.shards;
        let same: Vec<&crate::result::IntervalRecord> =
            have.iter().map(|&i| &shards[i].intervals[&k]).collect();
        let cores: Vec<usize> = have
            .iter()
            .map(|&i| shards[i].header.as_ref().map_or(1, |h| h.host.cores))
            .collect();
        let merged = match merge_interval(&same, &cores) {
            Ok(m) => m,
            Err(e) => {
                println!("collect: interval {k} could not be merged: {e}");
                return;
            }
        };
        if k == 1 {
            println!("{}", console::INTERVAL_HEADER);
        }
        let partial = if missing.is_empty() {
            String::new()
        } else {
            format!("  without shard(s) {}", list(missing))
        };
        println!("{}{partial}", console::interval_line(&merged));
        if let Some(w) = &mut self.watch {
            // Figures that came before the interval was merged are in it (the first
            // shard's that has them, as `merge` takes them); else they are awaited.
            let server = merged.server.is_some();
            w.interval(merged.clone(), None);
            if server {
                w.server(&merged);
            } else {
                self.awaiting_server.insert(k, merged);
                let old = k.saturating_sub(AWAIT_SERVER);
                self.awaiting_server = self.awaiting_server.split_off(&old);
            }
        }
    }

    /// Shard `i`'s server figures for interval `k` came after `k` was shown: shown now,
    /// once (the same server observed by several shards counts once, as in `merge`).
    fn show_server(&mut self, i: usize, k: u64) {
        let (Some(w), Some(mut merged)) = (&mut self.watch, self.awaiting_server.remove(&k)) else {
            return;
        };
        merged.server = self.book.shards[i].intervals[&k].server.clone();
        w.server(&merged);
    }

    /// The run: the shards' results merged as `loadrig merge` merges their files, the
    /// stopped shards with what they sent.
    fn finish(mut self) -> Result<RunResult> {
        // What is still waiting is shown as it is.
        while let Some((k, have, missing)) = self.book.next_ready(Instant::now(), true) {
            self.show_interval(k, &have, &missing);
        }
        let files = self.shard_files()?;
        if files.is_empty() {
            return Err(InputError::new("no shard sent anything: there is no run to write")
                .help("start the shards with --collect pointing at this collector's --listen address")
                .into());
        }
        let mut merged = assemble::merge(files, true)?;
        let last = merged.intervals.last().map_or(0, |i| i.index);
        let book = &self.book;
        merged.collect = Some(CollectRecord {
            listen: self.listen.clone(),
            stream_version: wire::VERSION,
            shards: book.count,
            finished: (0..book.count)
                .filter(|&i| book.shards[i].state == State::Finished)
                .collect(),
            stopped: book
                .shards
                .iter()
                .filter_map(|s| s.stopped.clone())
                .collect(),
            never_connected: (0..book.count)
                .filter(|&i| book.shards[i].state == State::Waiting)
                .collect(),
            partial_intervals: book.partial_intervals(last),
            refused: book.refused,
            refusals: book.refusals.clone(),
        });
        if let Some(w) = self.watch.take() {
            merged.dashboard = w.record();
            w.end(&merged);
        }
        Ok(merged)
    }

    /// Each shard's result, or for a shard that stopped, its stream rebuilt as `loadrig
    /// recover` rebuilds one (marked interrupted, so that the merge says it is partial).
    fn shard_files(&mut self) -> Result<Vec<ShardFile>> {
        let mut files = Vec::new();
        for s in &mut self.book.shards {
            let result = match (s.result.take(), &s.header) {
                (Some(r), _) => r,
                (None, Some(h)) if !s.intervals.is_empty() => {
                    let stream = Stream {
                        header: h.clone(),
                        intervals: s.intervals.values().cloned().collect(),
                        cut_line: false,
                        modified: SystemTime::now(),
                    };
                    let mut r = assemble::recover(&stream)?;
                    r.status = RunStatus::Interrupted;
                    let after = s.intervals.keys().next_back().copied().unwrap_or(0);
                    let why = s
                        .stopped
                        .as_ref()
                        .map_or("it stopped sending".to_string(), |st| st.reason.clone());
                    r.notes = vec![format!(
                        "the collector has this shard's intervals up to {after} only ({why}); error messages, rows, retries, statements and its validity verdict are not in its stream"
                    )];
                    r
                }
                _ => continue,
            };
            files.push(ShardFile {
                path: PathBuf::from(&s.file),
                result,
            });
        }
        Ok(files)
    }
}

fn list(xs: &[usize]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
