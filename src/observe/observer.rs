//! The observer's thread: its own OS thread and current-thread runtime, sampling every
//! server at the run's interval boundaries and the active sessions in between, and handing
//! each interval to the run as it ends.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::grid::Grid;
use super::notes::Notes;
use super::record::{
    Observation, ObservedInterval, ObserverCost, Role, ServerInterval, Unavailable,
};
use super::server::{Server, ServerPlan};
use super::{ObserveConfig, UserQuery};
use crate::error::InputError;

enum Event {
    /// The first reading is taken: what happens from now on is observed.
    Ready,
    Interval(Box<ObservedInterval>),
}

/// What the thread hands back when it ends.
struct Ending {
    unavailable: Vec<Unavailable>,
    cost: ObserverCost,
}

/// An observation under way. Dropping it stops the thread without waiting for it.
pub struct Observer {
    events: mpsc::Receiver<Event>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Ending>>,
    intervals: Vec<ObservedInterval>,
    handed: usize,
    ready: bool,
    target: String,
    behind: Option<String>,
    interval: Duration,
    /// A run's observer learns where its grid starts once the clients are at the start
    /// line ([`Observer::begin`]).
    begin: Option<oneshot::Sender<Instant>>,
}

/// Where the grid starts: known, or told later.
enum Start {
    At(Instant),
    Later(oneshot::Receiver<Instant>),
}

impl Observer {
    /// Check the URLs (an input error names what is wrong) and start observing on a thread
    /// of its own: it connects, takes its first reading, then samples at `start + k ×
    /// interval` (k ≥ 0; a boundary at or before its first reading is skipped) until
    /// [`Observer::finish`].
    pub fn start(
        config: ObserveConfig,
        start: Instant,
        interval: Duration,
    ) -> Result<Observer, InputError> {
        Observer::spawn(config, Grid::uniform(interval), Start::At(start), None)
    }

    /// Observe a run on its own grid: connect and take the first reading now (wait for it
    /// with [`Observer::wait_ready`] before the clients start), and follow the grid from the
    /// start given to [`Observer::begin`]. Nothing is sampled before it; the first interval
    /// runs from the first reading. After the grid's last boundary nothing more is read.
    pub fn for_run(config: ObserveConfig, grid: Grid) -> Result<Observer, InputError> {
        let (begin, later) = oneshot::channel();
        Observer::spawn(config, grid, Start::Later(later), Some(begin))
    }

    /// The run starts at `start`: boundary k is at `start + grid.at(k)`.
    pub fn begin(&mut self, start: Instant) {
        if let Some(begin) = self.begin.take() {
            let _ = begin.send(start);
        }
    }

    fn spawn(
        config: ObserveConfig,
        grid: Grid,
        start: Start,
        begin: Option<oneshot::Sender<Instant>>,
    ) -> Result<Observer, InputError> {
        let interval = grid.interval;
        if interval.is_zero() {
            return Err(InputError::new(
                "the observer's interval must be longer than zero",
            ));
        }
        let plans = plans(&config)?;
        let target = plans[0].shown.clone();
        let behind = plans.get(1).map(|p| p.shown.clone());
        let (events_tx, events) = mpsc::channel();
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("loadrig-observer".into())
            .spawn(move || run_thread(config, plans, start, grid, events_tx, stopped))
            .map_err(|e| InputError::new(format!("cannot start the observer's thread: {e}")))?;
        Ok(Observer {
            events,
            stop: Some(stop),
            thread: Some(thread),
            intervals: Vec::new(),
            handed: 0,
            ready: false,
            target,
            behind,
            interval,
            begin,
        })
    }

    fn receive(&mut self, event: Event) {
        match event {
            Event::Ready => self.ready = true,
            Event::Interval(i) => self.intervals.push(*i),
        }
    }

    /// Wait until the first reading is taken (connections made, baselines read), at most
    /// `limit`; whether it was. The run starts its clients after this, so that nothing it
    /// does falls before the observer's baseline.
    pub fn wait_ready(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.ready {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) => self.receive(e),
                Err(_) => break,
            }
        }
        self.ready
    }

    /// The intervals that ended since the last call (for the run's live stream).
    pub fn new_intervals(&mut self) -> Vec<ObservedInterval> {
        while let Ok(e) = self.events.try_recv() {
            self.receive(e);
        }
        let fresh = self.intervals[self.handed..].to_vec();
        self.handed = self.intervals.len();
        fresh
    }

    /// Stop: the last, partial interval is read, and everything is handed back with what
    /// was unavailable and what observing cost.
    pub fn finish(mut self) -> Observation {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let ending = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(ending)) => ending,
            _ => Ending {
                unavailable: vec![Unavailable {
                    server: Role::Target,
                    what: "observation".into(),
                    why: "the observer's thread failed".into(),
                    enable: String::new(),
                }],
                cost: ObserverCost::default(),
            },
        };
        while let Ok(e) = self.events.try_recv() {
            self.receive(e);
        }
        Observation {
            target: std::mem::take(&mut self.target),
            behind: self.behind.take(),
            interval_s: self.interval.as_secs_f64(),
            intervals: std::mem::take(&mut self.intervals),
            unavailable: ending.unavailable,
            cost: ending.cost,
        }
    }
}

/// Check a configuration without starting anything: the URLs (each scheme must have a
/// server to observe) and the sampling rate.
pub fn check(config: &ObserveConfig) -> Result<(), InputError> {
    plans(config).map(drop)
}

fn plans(config: &ObserveConfig) -> Result<Vec<ServerPlan>, InputError> {
    if !(config.session_rate >= 0.0 && config.session_rate.is_finite()) {
        return Err(InputError::new(format!(
            "a session sampling rate of {} per second: expected 0 (off) or more",
            config.session_rate
        )));
    }
    let mut plans = vec![ServerPlan::parse(&config.target, Role::Target)?];
    if let Some(behind) = &config.behind {
        plans.push(ServerPlan::parse(behind, Role::Behind)?);
    }
    Ok(plans)
}

impl Drop for Observer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// CPU time of the calling thread, seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn run_thread(
    config: ObserveConfig,
    plans: Vec<ServerPlan>,
    start: Start,
    grid: Grid,
    events: mpsc::Sender<Event>,
    stopped: oneshot::Receiver<()>,
) -> Ending {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = events.send(Event::Ready);
            return Ending {
                unavailable: vec![Unavailable {
                    server: Role::Target,
                    what: "observation".into(),
                    why: format!("no runtime for the observer: {e}"),
                    enable: String::new(),
                }],
                cost: ObserverCost::default(),
            };
        }
    };
    let mut ending = runtime.block_on(async {
        let mut notes = Notes::default();
        let mut servers = Vec::new();
        for plan in plans {
            servers.push(Server::open(plan, &config.sessions, &mut notes).await);
        }
        let (at, later) = match start {
            Start::At(t) => (t, None),
            Start::Later(later) => (Instant::now(), Some(later)),
        };
        let mut walk = Walk {
            config: &config,
            servers,
            notes,
            start: at,
            grid,
            events: &events,
            last_run: HashMap::new(),
            failed: Vec::new(),
        };
        walk.run(stopped, later).await;
        walk.ending()
    });
    drop(runtime);
    ending.cost.cpu_s = thread_cpu_s();
    ending
}

/// The observer's walk along the grid.
struct Walk<'a> {
    config: &'a ObserveConfig,
    servers: Vec<Server>,
    notes: Notes,
    start: Instant,
    grid: Grid,
    events: &'a mpsc::Sender<Event>,
    /// When each user query last ran.
    last_run: HashMap<String, Instant>,
    /// User queries that failed (reported once, not run again).
    failed: Vec<String>,
}

impl Walk<'_> {
    /// The first boundary index from `from` on whose time is after `t`; None past the end.
    fn next_index(&self, t: Instant, from: u64) -> Option<u64> {
        self.grid
            .next_after(t.saturating_duration_since(self.start), from)
            .map(|k| if t < self.start { 0 } else { k })
    }

    fn at(&self, k: u64) -> Option<Instant> {
        self.grid.at(k).map(|d| self.start + d)
    }

    fn seconds(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }

    async fn run(
        &mut self,
        mut stopped: oneshot::Receiver<()>,
        later: Option<oneshot::Receiver<Instant>>,
    ) {
        for s in &mut self.servers {
            s.boundary(&mut self.notes).await;
        }
        let _ = self.events.send(Event::Ready);
        let mut last = Instant::now();
        if let Some(later) = later {
            tokio::select! {
                start = later => match start {
                    Ok(start) => self.start = start,
                    Err(_) => return,
                },
                _ = &mut stopped => return,
            }
        }
        let mut k = self.next_index(Instant::now(), 0);
        let every = (self.config.session_rate > 0.0)
            .then(|| Duration::from_secs_f64(1.0 / self.config.session_rate));
        let sampling = every.is_some() && self.servers.iter().any(Server::samples_sessions);
        let mut next_sample = Instant::now() + every.unwrap_or_default();
        // After the grid's last boundary there is nothing more to read.
        while let Some(boundary) = k.and_then(|k| self.at(k)) {
            let stop = loop {
                let wake = if sampling {
                    next_sample.min(boundary)
                } else {
                    boundary
                };
                tokio::select! {
                    _ = tokio::time::sleep_until(wake.into()) => {}
                    _ = &mut stopped => break true,
                }
                let now = Instant::now();
                if now >= boundary {
                    break false;
                }
                for s in &mut self.servers {
                    s.sample_sessions(&mut self.notes).await;
                }
                // Samples that came late are skipped, not made up back to back.
                let every = every.unwrap_or_default();
                next_sample += every;
                if next_sample <= Instant::now() {
                    next_sample = Instant::now() + every;
                }
            };
            let now = Instant::now();
            // Boundary 0 is the run's start: what came before it is no interval of the
            // run. A stop ends the interval the last boundary began.
            let current = k.unwrap_or(0);
            self.boundary(current.checked_sub(1), last, now).await;
            last = now;
            if stop {
                return;
            }
            // A reading that came late skips the boundaries it missed.
            k = self.next_index(Instant::now(), current + 1);
        }
        let _ = stopped.await;
    }

    /// Read every server and hand the interval from `from` to `to` on (nothing for the
    /// lead-in before the run's start, `index` None).
    async fn boundary(&mut self, index: Option<u64>, from: Instant, to: Instant) {
        let mut figures = Vec::new();
        for s in &mut self.servers {
            figures.push(s.boundary(&mut self.notes).await.unwrap_or_default());
        }
        self.user_queries(to, &mut figures).await;
        let Some(index) = index.filter(|_| to > self.start) else {
            return;
        };
        let mut figures = figures.into_iter();
        let interval = ObservedInterval {
            index,
            start_s: self.seconds(from.max(self.start)),
            end_s: self.seconds(to),
            target: figures.next().unwrap_or_default(),
            behind: figures.next(),
            unavailable: self.notes.fresh(),
        };
        let _ = self.events.send(Event::Interval(Box::new(interval)));
    }

    /// The user queries that are due, on the first server that runs SQL.
    async fn user_queries(&mut self, now: Instant, figures: &mut [ServerInterval]) {
        let Some(at) = self.servers.iter().position(Server::runs_sql) else {
            for q in &self.config.queries {
                self.notes.add(
                    Role::Target,
                    &format!("[[observe]] {}", q.name),
                    "neither the target nor the server behind it runs SQL",
                    "",
                );
            }
            return;
        };
        let due: Vec<&UserQuery> = self
            .config
            .queries
            .iter()
            .filter(|q| !self.failed.contains(&q.name))
            .filter(|q| {
                let every = q.every.unwrap_or(self.grid.interval);
                // Half an interval of slack: a boundary read a little early still counts.
                self.last_run
                    .get(&q.name)
                    .is_none_or(|&t| now + self.grid.interval / 2 >= t + every)
            })
            .collect();
        for q in due {
            self.last_run.insert(q.name.clone(), now);
            match self.servers[at].user_query(q).await {
                Some(Ok(v)) => figures[at].queries.push(v),
                Some(Err(why)) => {
                    self.failed.push(q.name.clone());
                    let role = self.servers[at].role();
                    self.notes
                        .add(role, &format!("[[observe]] {}", q.name), why, "");
                }
                None => {}
            }
        }
    }

    fn ending(&self) -> Ending {
        let mut cost = ObserverCost {
            queries: self.servers.iter().map(Server::queries_sent).sum(),
            ..ObserverCost::default()
        };
        for s in &self.servers {
            if let Some((ms, from)) = s.own_time_ms() {
                *cost.server_time_ms.get_or_insert(0.0) += ms;
                cost.server_time_from
                    .push(format!("{}: {from}", s.role().name()));
            }
        }
        Ending {
            unavailable: self.notes.all().to_vec(),
            cost,
        }
    }
}
