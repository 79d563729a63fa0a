//! `sleep://`: a simulated server whose latency follows a stated distribution.
//!
//! It is the ground truth for testing the engine: every operation takes a latency drawn
//! from `latency`, optionally fails at `errors` rate, and the whole server can freeze
//! (`stall`) once or periodically, delaying every operation that meets the freeze.
//!
//! ```text
//! sleep://?latency=1ms                               fixed
//! sleep://?latency=uniform(1ms..3ms)                 uniform
//! sleep://?latency=exp(2ms)                          exponential with mean 2 ms
//! sleep://?latency=0.9*1ms,0.1*uniform(100ms..110ms) mixture: weight*distribution, ...
//! sleep://?latency=1ms&stall=500ms@2s                freeze 500 ms at 2 s after opening
//! sleep://?latency=1ms&stall=100ms@1s/5s             ... and again every 5 s
//! sleep://?latency=1ms&errors=0.01                   1 % of operations fail (class other)
//! sleep://?latency=5ms&usl=0.05,0.002                 slower with more sessions (below)
//! sleep://?latency=0ms&growth=linear:2us              puts slower with more records (below)
//! sleep://?latency=1ms&capacity=500                   one server, at most 500 ops/s (below)
//! sleep://?latency=1ms&unfair=3:4s                    the first 3 sessions answered every 4 s
//! sleep://?latency=1ms&warm=4:3s                      4× slower at opening, 1× after 3 s
//! sleep://?latency=1ms&runvar=0.3                    each run 0.7× to 1.3× (drawn per run)
//! sleep://?latency=1ms&extra=2ms                     3 ms: extra adds to every drawn latency
//! ```
//!
//! `extra=D` is the ground truth of factorial experiments (`loadrig experiment`): two
//! factors, `url.latency` and `url.extra`, that add to one latency with known effects. It is
//! added to the drawn latency before `runvar`, `usl` and `warm` scale it.
//!
//! `warm=F:T` is the ground truth of `--warmup auto`: an operation starting s after the
//! target opened takes its latency × (1 + (F − 1)·(1 − s/T)) while s < T, a server
//! warming its caches.
//!
//! `runvar=V` is the ground truth of run-to-run variance (`loadrig ab`, `compare` with
//! several runs per side): each run draws one factor uniformly from [1 − V, 1 + V] and every
//! latency of that run is multiplied by it, as a shared machine makes whole runs faster or
//! slower. The factor comes from the run's seed (`--seed`, else the clock) when a run
//! starts, so a run with `--seed` repeats its factor; a target opened outside a run (tests)
//! draws it from the operating system's entropy.
//!
//! `unfair=K:EVERY` is the ground truth of the fairness figures (docs/validity.md): a
//! session that connects while fewer than K others are open is answered only at multiples
//! of EVERY since the target opened (each of its operations ends at the next one), the
//! others as usual. A closed loop of N clients then has K starved ones.
//!
//! The scaling models, the ground truth of the sweep tests (docs/scaling.md):
//!
//! - `usl=σ,κ`: a drawn latency L is stretched to L·(1 + σ(N−1) + κN(N−1)), N being the
//!   sessions open when the operation starts. A closed loop of N clients with persistent
//!   connections then has N sessions open, each finishing 1/(L·D(N)) ops/s, so its
//!   throughput is the Universal Scalability Law X(N) = λN/D(N) with λ = 1/mean(L).
//! - `growth=KIND:COST`: every `kv.put` (data load included) costs COST·f(n) more, n being
//!   the puts this target has already taken: f = 1 for `const`, log2(1+n) for `log`, n for
//!   `linear`. A batch of B puts from n stored records takes about B·COST·f(n + B/2) more.
//! - `capacity=R`: a single server shared by all sessions serves one operation at a time
//!   for 1/R each, first come first served; an operation waits for its turn, is served,
//!   then takes its drawn latency. Below R nothing waits; above R the queue, and with it the
//!   latency, grows without bound while throughput stays at R.
//! - `--pipeline P`: a connection's P streams wait for their operations together (an async
//!   sleep on the thread's runtime, so at its timer's 1 ms resolution, instead of the
//!   precise blocking sleep): a server that serves every request of a connection at once.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};

use super::{Params, Session, Target, TargetUrl};
use crate::clock::{self, Instant};
use crate::duration;
use crate::error::InputError;
use crate::vocab::{ErrorClass, Family, Op, OpError, Outcome};

/// One component of the latency distribution.
#[derive(Debug, Clone)]
enum Dist {
    Fixed(Duration),
    Uniform(Duration, Duration),
    Exp(Exp<f64>),
}

impl Dist {
    fn sample(&self, rng: &mut SmallRng) -> Duration {
        match self {
            Dist::Fixed(d) => *d,
            Dist::Uniform(a, b) => {
                Duration::from_nanos(rng.random_range(a.as_nanos() as u64..=b.as_nanos() as u64))
            }
            Dist::Exp(e) => Duration::from_nanos(e.sample(rng) as u64),
        }
    }
}

/// A periodic or one-off freeze of the whole server.
#[derive(Debug, Clone, Copy)]
struct Stall {
    length: Duration,
    at: Duration,
    every: Option<Duration>,
}

impl Stall {
    /// When an operation that starts at `s` (since opening) and needs `d` really ends.
    fn end(&self, s: Duration, d: Duration) -> Duration {
        // The first freeze that ends after s.
        let mut a = self.at;
        if let (Some(p), true) = (self.every, s > self.at) {
            let k = ((s - self.at).as_nanos() / p.as_nanos()) as u32;
            a = self.at + p * k;
            if s >= a + self.length {
                a += p;
            }
        }
        if s >= a && s < a + self.length {
            a + self.length + d
        } else if a > s && a < s + d {
            s + d + self.length
        } else {
            s + d
        }
    }
}

/// How the cost of a put grows with the puts already taken (`growth=KIND:COST`).
#[derive(Debug, Clone, Copy)]
enum Growth {
    Const(Duration),
    Log(Duration),
    Linear(Duration),
}

impl Growth {
    /// The extra cost of a put when `n` puts came before it.
    fn extra(self, n: u64) -> Duration {
        match self {
            Growth::Const(c) => c,
            Growth::Log(c) => c.mul_f64((n as f64).ln_1p() / std::f64::consts::LN_2),
            Growth::Linear(c) => c.saturating_mul(n.min(u32::MAX as u64) as u32),
        }
    }
}

/// One first-come-first-served server with a fixed service time (`capacity=R`).
#[derive(Debug)]
struct Server {
    service: Duration,
    /// When the server is next free, in ns since the target opened.
    free_at: AtomicU64,
}

impl Server {
    /// Queue an operation that arrives at `arrival` (ns since opening); returns when its
    /// service ends.
    fn serve(&self, arrival: u64) -> u64 {
        let service = self.service.as_nanos() as u64;
        let mut free = self.free_at.load(Ordering::Relaxed);
        loop {
            let end = free.max(arrival) + service;
            match self
                .free_at
                .compare_exchange_weak(free, end, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return end,
                Err(now) => free = now,
            }
        }
    }
}

/// The simulated server, shared by all sessions.
struct Model {
    components: Vec<(f64, Dist)>,
    /// `extra=D`: added to every drawn latency.
    extra: Duration,
    total_weight: f64,
    stall: Option<Stall>,
    error_rate: f64,
    opened: Instant,
    /// `usl=σ,κ`.
    usl: Option<(f64, f64)>,
    growth: Option<Growth>,
    server: Option<Server>,
    /// `unfair=K:EVERY`.
    unfair: Option<(u64, Duration)>,
    /// `warm=F:T`.
    warm: Option<(f64, Duration)>,
    /// `runvar=V`, and this run's latency factor (the bits of an f64).
    runvar: Option<f64>,
    factor: AtomicU64,
    /// Sessions open now (the N of the USL model).
    open: AtomicU64,
    /// Puts taken so far (the n of the growth model).
    puts: AtomicU64,
}

pub struct Sleep {
    model: Arc<Model>,
    sessions: AtomicU64,
}

impl Sleep {
    pub fn open(url: &TargetUrl) -> Result<Sleep, InputError> {
        url.check_options(&[
            "latency", "stall", "errors", "usl", "growth", "capacity", "unfair", "warm", "runvar",
            "extra",
        ])?;
        let latency = url
            .options
            .get("latency")
            .map(String::as_str)
            .unwrap_or("0ms");
        let components = parse_mixture(latency)?;
        let extra = match url.options.get("extra") {
            Some(e) => duration::parse(e, "sleep:// extra").map_err(|_| {
                InputError::new(format!("sleep:// extra={e}: expected a duration, like 2ms"))
            })?,
            None => Duration::ZERO,
        };
        let stall = url
            .options
            .get("stall")
            .map(|s| parse_stall(s))
            .transpose()?;
        let error_rate = match url.options.get("errors") {
            Some(e) => match e.parse::<f64>() {
                Ok(x) if (0.0..=1.0).contains(&x) => x,
                _ => {
                    return Err(InputError::new(format!(
                        "sleep:// errors={e}: expected a fraction from 0 to 1, like 0.01"
                    )))
                }
            },
            None => 0.0,
        };
        let option = |name: &str| url.options.get(name).map(String::as_str);
        let runvar = option("runvar").map(parse_runvar).transpose()?;
        let factor = runvar.map_or(1.0, |v| draw_factor(&mut rand::rng(), v));
        Ok(Sleep {
            model: Arc::new(Model {
                total_weight: components.iter().map(|(w, _)| w).sum(),
                components,
                extra,
                stall,
                error_rate,
                opened: Instant::now(),
                usl: option("usl").map(parse_usl).transpose()?,
                growth: option("growth").map(parse_growth).transpose()?,
                server: option("capacity").map(parse_capacity).transpose()?,
                unfair: option("unfair").map(parse_unfair).transpose()?,
                warm: option("warm").map(parse_warm).transpose()?,
                runvar,
                factor: AtomicU64::new(factor.to_bits()),
                open: AtomicU64::new(0),
                puts: AtomicU64::new(0),
            }),
            sessions: AtomicU64::new(0),
        })
    }
}

fn bad_latency(text: &str, why: &str) -> InputError {
    InputError::new(format!("sleep:// latency '{text}': {why}")).help(
        "write a duration (1ms), uniform(1ms..3ms), exp(2ms), or a mixture like 0.9*1ms,0.1*exp(20ms)",
    )
}

fn parse_mixture(text: &str) -> Result<Vec<(f64, Dist)>, InputError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (weight, dist) = match part.split_once('*') {
            Some((w, d)) => (
                w.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|w| *w > 0.0 && w.is_finite())
                    .ok_or_else(|| {
                        bad_latency(text, &format!("weight '{w}' is not a positive number"))
                    })?,
                d.trim(),
            ),
            None => (1.0, part),
        };
        let dist = if let Some(inner) = dist
            .strip_prefix("uniform(")
            .and_then(|s| s.strip_suffix(')'))
        {
            let (a, b) = inner
                .split_once("..")
                .ok_or_else(|| bad_latency(text, "uniform needs A..B"))?;
            let (a, b) = (dur(a, text)?, dur(b, text)?);
            if b < a {
                return Err(bad_latency(text, "uniform(A..B) needs A <= B"));
            }
            Dist::Uniform(a, b)
        } else if let Some(inner) = dist.strip_prefix("exp(").and_then(|s| s.strip_suffix(')')) {
            let mean = dur(inner, text)?;
            if mean.is_zero() {
                return Err(bad_latency(text, "exp(MEAN) needs a mean above zero"));
            }
            Dist::Exp(
                Exp::new(1.0 / mean.as_nanos() as f64)
                    .map_err(|e| bad_latency(text, &e.to_string()))?,
            )
        } else {
            Dist::Fixed(dur(dist, text)?)
        };
        out.push((weight, dist));
    }
    Ok(out)
}

fn dur(s: &str, whole: &str) -> Result<Duration, InputError> {
    duration::parse(s, "sleep:// latency")
        .map_err(|_| bad_latency(whole, &format!("'{s}' is not a duration")))
}

fn parse_stall(text: &str) -> Result<Stall, InputError> {
    let bad = || {
        InputError::new(format!(
            "sleep:// stall '{text}': expected LENGTH@START or LENGTH@START/EVERY"
        ))
        .help("for example stall=500ms@2s (once), stall=100ms@1s/5s (every 5 s)")
    };
    let (length, rest) = text.split_once('@').ok_or_else(bad)?;
    let (at, every) = match rest.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (rest, None),
    };
    let p = |s: &str| duration::parse(s, "sleep:// stall").map_err(|_| bad());
    let stall = Stall {
        length: p(length)?,
        at: p(at)?,
        every: every.map(p).transpose()?,
    };
    if let Some(e) = stall.every {
        if e <= stall.length {
            return Err(bad().help("the period must be longer than the stall"));
        }
    }
    Ok(stall)
}

fn parse_usl(text: &str) -> Result<(f64, f64), InputError> {
    let bad = || {
        InputError::new(format!(
            "sleep:// usl '{text}': expected SIGMA,KAPPA, two numbers from 0 to 1"
        ))
        .help("for example usl=0.05,0.002 (contention 5 %, coherency 0.2 %)")
    };
    let (s, k) = text.split_once(',').ok_or_else(bad)?;
    let p = |v: &str| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| (0.0..=1.0).contains(x))
            .ok_or_else(bad)
    };
    Ok((p(s)?, p(k)?))
}

fn parse_growth(text: &str) -> Result<Growth, InputError> {
    let bad = || {
        InputError::new(format!(
            "sleep:// growth '{text}': expected KIND:COST with KIND const, log or linear"
        ))
        .help("for example growth=linear:2us (each put 2 µs slower per record already stored)")
    };
    let (kind, cost) = text.split_once(':').ok_or_else(bad)?;
    let cost = duration::parse(cost.trim(), "sleep:// growth").map_err(|_| bad())?;
    match kind.trim() {
        "const" => Ok(Growth::Const(cost)),
        "log" => Ok(Growth::Log(cost)),
        "linear" => Ok(Growth::Linear(cost)),
        _ => Err(bad()),
    }
}

fn parse_unfair(text: &str) -> Result<(u64, Duration), InputError> {
    let bad = || {
        InputError::new(format!(
            "sleep:// unfair '{text}': expected SESSIONS:EVERY, a count and a duration above zero"
        ))
        .help("for example unfair=3:4s (the first 3 sessions are answered only every 4 s)")
    };
    let (k, every) = text.split_once(':').ok_or_else(bad)?;
    let k: u64 = k.trim().parse().map_err(|_| bad())?;
    let every = duration::parse(every.trim(), "sleep:// unfair").map_err(|_| bad())?;
    if every.is_zero() {
        return Err(bad());
    }
    Ok((k, every))
}

fn parse_warm(text: &str) -> Result<(f64, Duration), InputError> {
    let bad = || {
        InputError::new(format!(
            "sleep:// warm '{text}': expected FACTOR:DURATION, a factor of at least 1 and a duration above zero"
        ))
        .help("for example warm=4:3s (4× the latency at opening, falling to 1× after 3 s)")
    };
    let (f, t) = text.split_once(':').ok_or_else(bad)?;
    let f: f64 = f.trim().parse().map_err(|_| bad())?;
    let t = duration::parse(t.trim(), "sleep:// warm").map_err(|_| bad())?;
    if !(f >= 1.0 && f.is_finite()) || t.is_zero() {
        return Err(bad());
    }
    Ok((f, t))
}

fn parse_runvar(text: &str) -> Result<f64, InputError> {
    match text.trim().parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(InputError::new(format!(
            "sleep:// runvar '{text}': expected a fraction from 0 up to (not including) 1"
        ))
        .help("for example runvar=0.3: each run's latencies are 0.7× to 1.3× the stated ones")),
    }
}

/// One run's latency factor, uniform within [1 − v, 1 + v].
fn draw_factor(rng: &mut impl Rng, v: f64) -> f64 {
    if v > 0.0 {
        rng.random_range(1.0 - v..=1.0 + v)
    } else {
        1.0
    }
}

fn parse_capacity(text: &str) -> Result<Server, InputError> {
    match text.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() && r <= 1e9 => Ok(Server {
            service: Duration::from_secs_f64(1.0 / r),
            free_at: AtomicU64::new(0),
        }),
        _ => Err(InputError::new(format!(
            "sleep:// capacity '{text}': expected operations per second above zero, like 500"
        ))),
    }
}

pub struct SleepSession {
    model: Arc<Model>,
    rng: SmallRng,
    /// `unfair`: answered only at multiples of this since the target opened.
    every: Option<Duration>,
    /// One of several streams on a connection (`--pipeline`): waits without blocking.
    shared: bool,
}

impl Drop for SleepSession {
    fn drop(&mut self) {
        self.model.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Target for Sleep {
    fn from_url(url: &TargetUrl, _params: &Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    type Session = SleepSession;

    fn blocking(&self) -> bool {
        true
    }

    /// A simulated server: nothing is opened.
    fn files_per_client(&self) -> usize {
        0
    }

    /// Every native family: any workload can run against a known latency distribution.
    fn families(&self) -> &'static [Family] {
        &Family::ALL
    }

    fn seed_run(&self, seed: u64) {
        if let Some(v) = self.model.runvar {
            let mut rng = SmallRng::seed_from_u64(seed ^ 0x7275_6e76_6172);
            let f = draw_factor(&mut rng, v);
            self.model.factor.store(f.to_bits(), Ordering::Relaxed);
        }
    }

    fn connect(&self) -> impl Future<Output = Result<SleepSession, OpError>> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed);
        let others = self.model.open.fetch_add(1, Ordering::Relaxed);
        let every = self
            .model
            .unfair
            .and_then(|(k, every)| (others < k).then_some(every));
        std::future::ready(Ok(SleepSession {
            model: Arc::clone(&self.model),
            rng: SmallRng::seed_from_u64(0x5eed_0000 + n),
            every,
            shared: false,
        }))
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        None
    }

    async fn connect_shared(&self, n: usize) -> Result<Vec<SleepSession>, OpError> {
        let mut sessions = Vec::with_capacity(n);
        for _ in 0..n {
            let mut session = self.connect().await?;
            session.shared = true;
            sessions.push(session);
        }
        Ok(sessions)
    }
}

impl Session for SleepSession {
    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        let t = &*self.model;
        let start = Instant::now();
        let mut pick = self.rng.random_range(0.0..t.total_weight);
        let mut d = Duration::ZERO;
        for (w, dist) in &t.components {
            if pick < *w {
                d = dist.sample(&mut self.rng);
                break;
            }
            pick -= w;
        }
        d += t.extra;
        if t.runvar.is_some() {
            d = d.mul_f64(f64::from_bits(t.factor.load(Ordering::Relaxed)));
        }
        if let Some((sigma, kappa)) = t.usl {
            let n = t.open.load(Ordering::Relaxed).max(1) as f64;
            d = d.mul_f64(1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0));
        }
        if let (Some(g), Op::Put { .. }) = (t.growth, op) {
            d += g.extra(t.puts.fetch_add(1, Ordering::Relaxed));
        }
        let s = start - t.opened;
        if let Some((factor, until)) = t.warm {
            if s < until {
                let left = 1.0 - s.as_secs_f64() / until.as_secs_f64();
                d = d.mul_f64(1.0 + (factor - 1.0) * left);
            }
        }
        if let Some(server) = &t.server {
            let served = server.serve(s.as_nanos() as u64);
            d += Duration::from_nanos(served).saturating_sub(s);
        }
        let mut end = match t.stall {
            Some(stall) => stall.end(s, d),
            None => s + d,
        };
        if let Some(every) = self.every {
            let every_ns = every.as_nanos().max(1);
            end = Duration::from_nanos((end.as_nanos().div_ceil(every_ns) * every_ns) as u64);
        }
        let (until, shared) = (t.opened + end, self.shared);
        let fail = t.error_rate > 0.0 && self.rng.random_bool(t.error_rate);
        async move {
            if shared {
                let now = Instant::now();
                if until > now {
                    tokio::time::sleep(until - now).await;
                }
            } else {
                clock::sleep_until(until);
            }
            if fail {
                Err(OpError::new(ErrorClass::Other, "injected error"))
            } else {
                Ok(Outcome::default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn stall_delays_operations_that_meet_it() {
        let once = Stall {
            length: 100 * MS,
            at: 1000 * MS,
            every: None,
        };
        assert_eq!(once.end(Duration::ZERO, MS), MS);
        assert_eq!(once.end(1050 * MS, MS), 1101 * MS);
        assert_eq!(once.end(999 * MS, 2 * MS), 1101 * MS);
        assert_eq!(once.end(2000 * MS, MS), 2001 * MS);
        let periodic = Stall {
            length: 100 * MS,
            at: 1000 * MS,
            every: Some(1000 * MS),
        };
        assert_eq!(periodic.end(3050 * MS, MS), 3101 * MS);
        assert_eq!(periodic.end(3500 * MS, MS), 3501 * MS);
    }

    #[test]
    fn parses_distributions() {
        assert_eq!(
            parse_mixture("0.9*1ms,0.1*uniform(2ms..3ms)")
                .unwrap()
                .len(),
            2
        );
        assert!(parse_mixture("exp(0ms)").is_err());
        assert!(parse_mixture("x*1ms").is_err());
        assert!(parse_stall("100ms@1s/50ms").is_err());
        assert!(parse_stall("100ms@1s/5s").is_ok());
        assert_eq!(parse_usl("0.05, 0.002").unwrap(), (0.05, 0.002));
        assert!(parse_usl("0.05").is_err() && parse_usl("2,0").is_err());
        assert!(matches!(parse_growth("log:1ms"), Ok(Growth::Log(_))));
        assert!(parse_growth("cubic:1ms").is_err() && parse_growth("linear").is_err());
        assert!(parse_capacity("0").is_err() && parse_capacity("500").is_ok());
        assert_eq!(parse_unfair("3:4s").unwrap(), (3, Duration::from_secs(4)));
        assert!(parse_unfair("3").is_err() && parse_unfair("x:1s").is_err());
        assert!(parse_unfair("1:0s").is_err());
        assert_eq!(parse_warm("4:3s").unwrap(), (4.0, Duration::from_secs(3)));
        assert!(parse_warm("0.5:3s").is_err() && parse_warm("2:0s").is_err());
    }

    #[test]
    fn growth_cost_follows_its_kind() {
        let us = Duration::from_micros(1);
        assert_eq!(Growth::Const(us).extra(1000), us);
        assert_eq!(Growth::Linear(us).extra(1000), 1000 * us);
        assert_eq!(Growth::Log(us).extra(1023), 10 * us);
    }

    #[test]
    fn server_queues_arrivals_beyond_its_capacity() {
        // 1000 ops/s: 1 ms of service each, first come first served.
        let s = parse_capacity("1000").unwrap();
        let ms = 1_000_000;
        assert_eq!(s.serve(0), ms);
        assert_eq!(s.serve(0), 2 * ms, "the second waits for the first");
        assert_eq!(s.serve(10 * ms), 11 * ms, "an idle server serves at once");
    }

    #[test]
    fn usl_latency_grows_with_open_sessions() {
        // Fixed 1 ms, σ = 0.5, κ = 0: with 3 sessions open, 1 ms · (1 + 0.5·2) = 2 ms.
        let url = TargetUrl::parse("sleep://?latency=1ms&usl=0.5,0").unwrap();
        let target = Sleep::open(&url).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut sessions: Vec<SleepSession> = (0..3)
            .map(|_| rt.block_on(target.connect()).unwrap())
            .collect();
        assert_eq!(target.model.open.load(Ordering::Relaxed), 3);
        let t = Instant::now();
        rt.block_on(sessions[0].execute(&Op::Nop)).unwrap();
        assert!(t.elapsed() >= 2 * MS);
        sessions.truncate(1);
        assert_eq!(target.model.open.load(Ordering::Relaxed), 1);
    }

    fn factor(t: &Sleep) -> f64 {
        f64::from_bits(t.model.factor.load(Ordering::Relaxed))
    }

    #[test]
    fn runvar_draws_one_factor_per_run_from_its_seed() {
        let url = TargetUrl::parse("sleep://?latency=1ms&runvar=0.3").unwrap();
        let t = Sleep::open(&url).unwrap();
        let mut seen = Vec::new();
        for seed in 0..400 {
            t.seed_run(seed);
            let f = factor(&t);
            assert!((0.7..=1.3).contains(&f), "{f}");
            t.seed_run(seed);
            assert_eq!(factor(&t), f, "the same seed, the same factor");
            seen.push(f);
        }
        // Uniform on [0.7, 1.3]: mean 1, standard deviation 0.6/√12 = 0.173; over 400 runs
        // the mean is within 4 standard errors (0.035) of 1.
        let mean = seen.iter().sum::<f64>() / seen.len() as f64;
        assert!((mean - 1.0).abs() < 0.035, "{mean}");
        let sd = (seen.iter().map(|f| (f - mean).powi(2)).sum::<f64>() / 399.0).sqrt();
        assert!((0.15..0.2).contains(&sd), "{sd}");
        // Without runvar nothing varies.
        let plain = Sleep::open(&TargetUrl::parse("sleep://?latency=1ms").unwrap()).unwrap();
        plain.seed_run(5);
        assert_eq!(factor(&plain), 1.0);
        for bad in ["1", "-0.1", "x"] {
            let url = TargetUrl::parse(&format!("sleep://?runvar={bad}")).unwrap();
            let e = Sleep::open(&url).err().expect("refused");
            assert!(e.message.contains("runvar"), "{}", e.message);
        }
    }
}
