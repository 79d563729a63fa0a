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
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};

use super::{ErrorClass, Op, OpError, Outcome, Session, Target, TargetUrl};
use crate::engine::pace;
use crate::error::InputError;
use crate::spec::duration;

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

/// The simulated server, shared by all sessions.
struct Model {
    components: Vec<(f64, Dist)>,
    total_weight: f64,
    stall: Option<Stall>,
    error_rate: f64,
    opened: Instant,
}

pub struct Sleep {
    model: Arc<Model>,
    sessions: AtomicU64,
}

impl Sleep {
    pub fn open(url: &TargetUrl) -> Result<Sleep, InputError> {
        url.check_options(&["latency", "stall", "errors"])?;
        let latency = url
            .options
            .get("latency")
            .map(String::as_str)
            .unwrap_or("0ms");
        let components = parse_mixture(latency)?;
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
        Ok(Sleep {
            model: Arc::new(Model {
                total_weight: components.iter().map(|(w, _)| w).sum(),
                components,
                stall,
                error_rate,
                opened: Instant::now(),
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

pub struct SleepSession {
    model: Arc<Model>,
    rng: SmallRng,
}

impl Target for Sleep {
    type Session = SleepSession;

    fn blocking(&self) -> bool {
        true
    }

    /// Every native family: any workload can run against a known latency distribution.
    fn families(&self) -> &'static [&'static str] {
        &["sql", "redis", "ldap", "http"]
    }

    fn connect(&self) -> impl Future<Output = Result<SleepSession, OpError>> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed);
        std::future::ready(Ok(SleepSession {
            model: Arc::clone(&self.model),
            rng: SmallRng::seed_from_u64(0x5eed_0000 + n),
        }))
    }
}

impl Session for SleepSession {
    fn execute(&mut self, _op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
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
        let s = start - t.opened;
        let end = match t.stall {
            Some(stall) => stall.end(s, d),
            None => s + d,
        };
        pace::sleep_until(t.opened + end);
        let fail = t.error_rate > 0.0 && self.rng.random_bool(t.error_rate);
        std::future::ready(if fail {
            Err(OpError::new(ErrorClass::Other, "injected error"))
        } else {
            Ok(Outcome::default())
        })
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
    }
}
