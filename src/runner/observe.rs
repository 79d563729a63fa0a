//! Where a run's finished intervals go while it runs: the console, the `.jsonl` stream, the
//! metrics endpoint, the live dashboard and the collector of a sharded run; and the server's
//! observer (docs/observe.md), started when the
//! clients are at the start line, whose figures join each interval's record before it goes
//! to the console and the stream.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::engine::{IntervalData, Observer};
use crate::live::cpu;
use crate::live::dashboard::Watch;
use crate::live::link::Link;
use crate::observe::{self, Grid, Observation, ObserveConfig, ObservedInterval};
use crate::report::console::Live;
use crate::report::metrics::MetricsServer;
use crate::result::server::ServerIntervalRecord;
use crate::result::IntervalRecord;

/// How long the clients wait at the start line for the observer's first reading.
const READY_LIMIT: Duration = Duration::from_secs(5);

/// Hands each finished interval to the console view and, when asked, the metrics endpoint,
/// the dashboard and the collector, with the server's figures (console, stream and, in a
/// message of their own after the interval's, the dashboard and the collector) when the run
/// observes it.
pub struct Observers<'a> {
    /// The console view; none for a sweep point, which shows only its row.
    pub live: Option<&'a mut Live>,
    pub metrics: Option<&'a MetricsServer>,
    pub dashboard: Option<&'a mut Watch>,
    pub link: Option<&'a Link>,
    /// The operations' names, for the interval records.
    pub names: &'a [String],
    pub server: Option<ServerWatch>,
}

/// The server's observer during a run, and the interval records that wait for its figures.
pub struct ServerWatch {
    config: Option<ObserveConfig>,
    grid: Grid,
    observer: Option<observe::Observer>,
    /// Observed intervals not yet joined to a record, by the engine's index (from 0).
    observed: BTreeMap<u64, ObservedInterval>,
    /// The last interval the observer handed: the records up to it wait no longer.
    latest: Option<u64>,
    /// Records of the live view waiting for their server figures, with when they came.
    waiting: VecDeque<(IntervalRecord, Instant)>,
    names: Vec<String>,
    /// How long a record waits for its figures before it goes without them.
    patience: Duration,
}

impl ServerWatch {
    /// Observe with `config` on the run's `grid`; `names` are the operations' names.
    pub fn new(config: ObserveConfig, grid: Grid, names: Vec<String>) -> ServerWatch {
        let patience = grid
            .interval
            .clamp(Duration::from_millis(200), Duration::from_secs(1));
        ServerWatch {
            config: Some(config),
            grid,
            observer: None,
            observed: BTreeMap::new(),
            latest: None,
            waiting: VecDeque::new(),
            names,
            patience,
        }
    }

    /// Connect and take the baseline; what went wrong, for the console.
    fn start(&mut self) -> Option<String> {
        let config = self.config.take()?;
        match observe::Observer::for_run(config, self.grid.clone()) {
            Ok(mut o) => {
                let ready = o.wait_ready(READY_LIMIT);
                self.observer = Some(o);
                (!ready).then(|| {
                    format!(
                        "note: the server's observer had no first reading after {}s; the run starts without waiting for it",
                        READY_LIMIT.as_secs()
                    )
                })
            }
            Err(e) => Some(format!("note: the server is not observed: {}", e.message)),
        }
    }

    /// Take what the observer handed since the last call; the notes it found.
    fn poll(&mut self) -> Vec<String> {
        let Some(o) = &mut self.observer else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for i in o.new_intervals() {
            notes.extend(i.unavailable.iter().map(|u| format!("note: server: {u}")));
            self.latest = Some(i.index);
            self.observed.insert(i.index, i);
        }
        notes
    }

    /// The records ready to go, in order, each with its server figures where they came.
    fn ready(&mut self, all: bool) -> Vec<IntervalRecord> {
        let mut out = Vec::new();
        while let Some((record, since)) = self.waiting.front() {
            let k = record.index - 1;
            let joined = self.observed.contains_key(&k);
            let passed = self.latest.is_some_and(|l| l >= k);
            if !(all || joined || passed || since.elapsed() >= self.patience) {
                break;
            }
            if let Some((mut record, _)) = self.waiting.pop_front() {
                record.server = self.observed.remove(&k).map(ServerIntervalRecord::from);
                out.push(record);
            }
        }
        out
    }
}

impl Observers<'_> {
    /// The dashboard and the collector, which take the interval at once, without the
    /// server's figures (those join the console's and the stream's records when they come,
    /// and go to the dashboard then, in `pump`).
    fn watchers(&mut self, data: &IntervalData) {
        if self.dashboard.is_none() && self.link.is_none() {
            return;
        }
        // The collector needs the encoded histograms and each client's count (fairness over
        // every client); the dashboard, handed the histograms, needs neither. What is done
        // for the dashboard alone is its cost.
        let record = self
            .link
            .map(|_| IntervalRecord::of(data, self.names, true));
        if let Some(watch) = self.dashboard.as_deref_mut() {
            let t = cpu::this_thread();
            let hists = data.ops.iter().map(|c| c.latency.clone()).collect();
            let mine = match &record {
                Some(r) => r.clone(),
                None => IntervalRecord::unencoded(data, self.names),
            };
            watch.charge_since(t);
            watch.interval(mine, Some(hists));
        }
        if let (Some(link), Some(r)) = (self.link, record) {
            link.interval(r);
        }
    }

    /// Whether a live view (the console, the dashboard or the collector's) wants the
    /// server's figures as they come; without one the observation is taken whole at the end.
    fn watched(&self) -> bool {
        self.live.is_some() || self.dashboard.is_some() || self.link.is_some()
    }

    fn pump(&mut self, all: bool) {
        if !self.watched() && !all {
            return;
        }
        let Some(watch) = &mut self.server else {
            return;
        };
        let notes = watch.poll();
        let ready = watch.ready(all);
        if let Some(dash) = self.dashboard.as_deref_mut() {
            for r in &ready {
                dash.server(r);
            }
        }
        if let Some(link) = self.link {
            for r in &ready {
                if let Some(figures) = &r.server {
                    link.server(r.index, figures.clone());
                }
            }
        }
        if let Some(live) = self.live.as_deref_mut() {
            for n in notes {
                live.note(&n);
            }
            for r in ready {
                live.record(r);
            }
        }
    }

    /// The run is over: the observer's last reading, the records still waiting sent with
    /// their figures, and the whole observation (none when the run did not observe).
    pub fn finish(&mut self) -> Option<Observation> {
        let watch = self.server.as_mut()?;
        let observation = watch.observer.take()?.finish();
        for i in &observation.intervals {
            watch.latest = Some(i.index);
            watch.observed.entry(i.index).or_insert_with(|| i.clone());
        }
        self.pump(true);
        Some(observation)
    }
}

impl Observer for Observers<'_> {
    fn before_start(&mut self) {
        let Some(watch) = &mut self.server else {
            return;
        };
        let problem = watch.start();
        if let Some(live) = self.live.as_deref_mut() {
            if let Some(p) = problem {
                live.note(&p);
            }
        }
    }

    fn started(&mut self, t0: Instant) {
        if let Some(o) = self.server.as_mut().and_then(|w| w.observer.as_mut()) {
            o.begin(t0);
        }
    }

    fn interval(&mut self, data: &IntervalData) {
        if let Some(m) = self.metrics {
            m.interval(data);
        }
        // The dashboard has the interval before its server figures, which follow.
        self.watchers(data);
        let watched = self.watched();
        match (&mut self.server, self.live.as_deref_mut()) {
            (Some(watch), _) if watched => {
                let record = IntervalRecord::of(data, &watch.names, false);
                watch.waiting.push_back((record, Instant::now()));
                self.pump(false);
            }
            (_, Some(live)) => live.interval(data),
            (_, None) => {}
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        if let Some(live) = self.live.as_deref_mut() {
            live.tick(elapsed);
        }
        self.pump(false);
    }
}
