//! Where a connection's time goes: TCP connect, TLS handshake, authentication, and for
//! HTTP/2 its connection preface and SETTINGS exchange (with the streams its server allowed).
//!
//! A target that can tell its phases apart keeps one [`PhaseClock`] shared by all its
//! sessions and records every connection it opens (before the run, `connect` operations,
//! reconnects); the engine reads it once after the run for the result's `connect.phases`.
//! Here, below the targets, so that the result can summarise it.

use std::sync::Mutex;
use std::time::Duration;

use super::{new_hist, Hist};

/// The phases of one connection; `None` for a phase this connection did not have.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseTimes {
    pub tcp: Duration,
    pub tls: Option<Duration>,
    pub auth: Option<Duration>,
}

/// Each phase's distribution over every connection a target opened, in nanoseconds.
#[derive(Debug, Clone)]
pub struct ConnectPhases {
    pub tcp: Hist,
    pub tls: Hist,
    pub auth: Hist,
    /// HTTP/2's connection preface and SETTINGS exchange, after TCP and TLS.
    pub http2: Hist,
    /// HTTP/2's streams, once a connection spoke it.
    pub http2_streams: Option<Http2Streams>,
}

/// What HTTP/2 connections allowed and carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2Streams {
    /// The fewest concurrent streams a server allowed on one connection
    /// (SETTINGS_MAX_CONCURRENT_STREAMS); `None` while no server set a limit.
    pub allowed: Option<u64>,
    /// The most client streams one connection carried (`--pipeline`, 1 without).
    pub streams: u64,
}

impl ConnectPhases {
    fn new() -> ConnectPhases {
        ConnectPhases {
            tcp: new_hist(),
            tls: new_hist(),
            auth: new_hist(),
            http2: new_hist(),
            http2_streams: None,
        }
    }
}

/// The shared recorder: a mutex is fine, a connection costs thousands of times its lock.
pub struct PhaseClock {
    phases: Mutex<ConnectPhases>,
}

impl Default for PhaseClock {
    fn default() -> Self {
        PhaseClock {
            phases: Mutex::new(ConnectPhases::new()),
        }
    }
}

impl PhaseClock {
    pub fn record(&self, times: PhaseTimes) {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        let mut p = self.phases.lock().unwrap_or_else(|e| e.into_inner());
        // Histograms that resize never refuse a value.
        let _ = p.tcp.record(ns(times.tcp));
        if let Some(t) = times.tls {
            let _ = p.tls.record(ns(t));
        }
        if let Some(a) = times.auth {
            let _ = p.auth.record(ns(a));
        }
    }

    /// One HTTP/2 connection's preface and SETTINGS exchange, the concurrent streams its
    /// server allowed (`None`: no limit) and the client streams it carries.
    pub fn record_http2(&self, took: Duration, allowed: Option<u64>, streams: u64) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let mut p = self.phases.lock().unwrap_or_else(|e| e.into_inner());
        let _ = p.http2.record(ns);
        let before = p.http2_streams.unwrap_or(Http2Streams {
            allowed: None,
            streams: 0,
        });
        p.http2_streams = Some(Http2Streams {
            allowed: match (before.allowed, allowed) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            streams: before.streams.max(streams),
        });
    }

    /// What was recorded so far; `None` before any connection.
    pub fn snapshot(&self) -> Option<ConnectPhases> {
        let p = self.phases.lock().unwrap_or_else(|e| e.into_inner());
        (!p.tcp.is_empty()).then(|| p.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_the_phases_a_connection_had() {
        let clock = PhaseClock::default();
        assert!(clock.snapshot().is_none());
        let ms = Duration::from_millis;
        clock.record(PhaseTimes {
            tcp: ms(1),
            tls: Some(ms(2)),
            auth: Some(ms(3)),
        });
        clock.record(PhaseTimes {
            tcp: ms(1),
            tls: None,
            auth: Some(ms(5)),
        });
        let p = clock.snapshot().unwrap();
        assert_eq!((p.tcp.len(), p.tls.len(), p.auth.len()), (2, 1, 2));
        assert!(p.tls.equivalent(p.tls.max(), 2_000_000));
        assert!(p.http2.is_empty() && p.http2_streams.is_none());
        clock.record_http2(ms(1), Some(128), 16);
        clock.record_http2(ms(1), Some(100), 1);
        clock.record_http2(ms(1), None, 4);
        let p = clock.snapshot().unwrap();
        assert_eq!(p.http2.len(), 3);
        assert_eq!(
            p.http2_streams,
            Some(Http2Streams {
                allowed: Some(100),
                streams: 16
            })
        );
    }
}
