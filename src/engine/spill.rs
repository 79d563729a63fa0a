//! Finished intervals kept on disk while the run goes: their histograms (an operation's
//! latency, service time and start lag, the rig's hiccups) take hundreds of KB each, so a
//! long run that kept them in memory grew by that much per interval (an hour of 1 s
//! intervals: 1.5 GB). The run keeps each interval's counts in memory ([`IntervalBrief`])
//! and writes its histograms to an unnamed temporary file beside the result, from which
//! the result file's interval records are built one at a time when it is written.
//!
//! What stays in memory per interval is a few fixed-size numbers: the rig's per-thread
//! samples (a name and two times for each thread) also go to the file, since keeping them
//! (with 8 threads, 872 bytes an interval in all; now 224) made an hour's resident memory
//! rise 15 % (docs/performance.md, the soak).
//!
//! Writing may fail (a full disk): the intervals from then on stay in memory, as before
//! the file existed, and the run loses nothing.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

use super::rig::{RigBrief, ThreadSample};
use super::IntervalData;
use crate::stats::{Hist, OpCounters};
use crate::vocab::{ErrorClass, ErrorCounts, StatementCounts};

/// What the run keeps in memory of one finished interval: everything but its histograms,
/// its per-client counts and its per-thread samples.
#[derive(Debug, Clone)]
pub struct IntervalBrief {
    pub index: u64,
    pub start: Duration,
    pub end: Duration,
    pub warmup: bool,
    pub ops: Vec<OpTally>,
    pub rig: Option<RigBrief>,
    /// Its stage, clients, clients that ran all of it and offered arrivals
    /// ([`IntervalData`]).
    pub stage: Option<std::sync::Arc<str>>,
    pub clients: Option<u64>,
    pub ran_whole: Option<usize>,
    pub offered: Option<f64>,
}

/// One operation's counts in an interval.
#[derive(Debug, Clone, Copy)]
pub struct OpTally {
    pub ok: u64,
    pub errors: u64,
}

impl OpTally {
    pub fn error_total(&self) -> u64 {
        self.errors
    }
}

/// The parts of an interval that stay out of memory.
struct Heavy {
    ops: Vec<OpCounters>,
    hiccups: Option<Hist>,
    per_client: Vec<u64>,
    threads: Vec<ThreadSample>,
}

enum Place {
    /// The histograms in `len` bytes at `at` in the file, the per-client counts in the
    /// `counts` bytes after them, the per-thread samples in the `threads` bytes after those.
    Disk {
        at: u64,
        len: usize,
        counts: usize,
        threads: usize,
    },
    /// Kept in memory: the file could not be made or written. Boxed, so that the places
    /// of intervals on disk stay small.
    Memory(Box<Heavy>),
}

/// The finished intervals' histograms, in order.
pub struct IntervalStore {
    file: Option<File>,
    /// A write failed: the file still holds the intervals before, the rest stay in memory.
    full: bool,
    written: u64,
    places: Vec<Place>,
}

impl IntervalStore {
    /// A store writing to an unnamed file in `dir` (removed when the store is dropped or
    /// the process dies); in memory when the file cannot be made.
    pub fn new(dir: &Path) -> IntervalStore {
        let file = tempfile::tempfile_in(dir)
            .or_else(|_| tempfile::tempfile())
            .ok();
        IntervalStore {
            file,
            full: false,
            written: 0,
            places: Vec::new(),
        }
    }

    /// Keep interval `data` (the next one): its histograms go to the file, its counts are
    /// returned.
    pub fn keep(&mut self, data: IntervalData) -> IntervalBrief {
        let brief = IntervalBrief {
            index: data.index,
            start: data.start,
            end: data.end,
            warmup: data.warmup,
            ops: data
                .ops
                .iter()
                .map(|c| OpTally {
                    ok: c.ok,
                    errors: c.error_total(),
                })
                .collect(),
            rig: data.rig.as_ref().map(|s| s.brief()),
            stage: data.stage.clone(),
            clients: data.clients,
            ran_whole: data.ran_whole,
            offered: data.offered,
        };
        let (hiccups, threads) = data
            .rig
            .map_or((None, Vec::new()), |s| (Some(s.hiccups), s.threads));
        let heavy = Heavy {
            ops: data.ops,
            hiccups,
            per_client: data.per_client,
            threads,
        };
        let place = self.write(&heavy).unwrap_or_else(|e| {
            if !std::mem::replace(&mut self.full, true) {
                eprintln!("warning: finished intervals stay in memory from interval {}: the temporary file failed: {e}", brief.index + 1);
            }
            Place::Memory(Box::new(heavy))
        });
        self.places.push(place);
        brief
    }

    fn write(&mut self, heavy: &Heavy) -> io::Result<Place> {
        let Some(file) = self.file.as_mut().filter(|_| !self.full) else {
            return Err(io::Error::other("no file"));
        };
        let mut bytes = serde_json::to_vec(&Spilled::of(heavy))?;
        let len = bytes.len();
        serde_json::to_writer(&mut bytes, &heavy.per_client)?;
        let counts = bytes.len() - len;
        let threads: Vec<Thread> = heavy.threads.iter().map(Thread::of).collect();
        serde_json::to_writer(&mut bytes, &threads)?;
        file.write_all(&bytes)?;
        let place = Place::Disk {
            at: self.written,
            len,
            counts,
            threads: bytes.len() - len - counts,
        };
        self.written += bytes.len() as u64;
        Ok(place)
    }

    fn bytes(&self, at: u64, len: usize) -> io::Result<Vec<u8>> {
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| io::Error::other("closed"))?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, at)?;
        Ok(bytes)
    }

    /// The histograms of interval `k`: its operations' counters and the rig's hiccups.
    pub fn read(&self, k: usize) -> io::Result<(Vec<OpCounters>, Option<Hist>)> {
        match self.places.get(k) {
            Some(Place::Memory(h)) => Ok((h.ops.clone(), h.hiccups.clone())),
            Some(&Place::Disk { at, len, .. }) => {
                serde_json::from_slice::<Spilled>(&self.bytes(at, len)?)?.heavy()
            }
            None => Err(io::Error::other(format!("no interval {k}"))),
        }
    }

    /// The operations each client completed in interval `k`, indexed by client id.
    pub fn per_client(&self, k: usize) -> io::Result<Vec<u64>> {
        match self.places.get(k) {
            Some(Place::Memory(h)) => Ok(h.per_client.clone()),
            Some(&Place::Disk {
                at, len, counts, ..
            }) => Ok(serde_json::from_slice(
                &self.bytes(at + len as u64, counts)?,
            )?),
            None => Err(io::Error::other(format!("no interval {k}"))),
        }
    }

    /// The rig's per-thread samples of interval `k` (none when the OS gave none).
    pub fn threads(&self, k: usize) -> io::Result<Vec<ThreadSample>> {
        match self.places.get(k) {
            Some(Place::Memory(h)) => Ok(h.threads.clone()),
            Some(&Place::Disk {
                at,
                len,
                counts,
                threads,
            }) => {
                let bytes = self.bytes(at + (len + counts) as u64, threads)?;
                let threads: Vec<Thread> = serde_json::from_slice(&bytes)?;
                Ok(threads.into_iter().map(Thread::sample).collect())
            }
            None => Err(io::Error::other(format!("no interval {k}"))),
        }
    }
}

/// [`ThreadSample`] as the file holds it (times as serde's Duration: exact).
#[derive(Serialize, Deserialize)]
struct Thread {
    name: String,
    cpu: Duration,
    wanted: Option<Duration>,
}

impl Thread {
    fn of(t: &ThreadSample) -> Thread {
        Thread {
            name: t.name.clone(),
            cpu: t.cpu,
            wanted: t.wanted,
        }
    }

    fn sample(self) -> ThreadSample {
        ThreadSample {
            name: self.name,
            cpu: self.cpu,
            wanted: self.wanted,
        }
    }
}

/// A histogram as text: HdrHistogram V2 without DEFLATE, which would cost the collector
/// thread a compression per histogram every interval (V2's run-length counts are already
/// about as small: the file takes about what the interval stream takes).
fn encode(h: &Hist) -> String {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail for a valid histogram.
    let _ = V2Serializer::new().serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A histogram made on demand ([`OpCounters::failed`]), if it was.
fn boxed(text: Option<String>) -> io::Result<Option<Box<Hist>>> {
    text.map(|t| decode(&t).map(Box::new)).transpose()
}

fn decode(text: &str) -> io::Result<Hist> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(io::Error::other)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| io::Error::other(format!("{e:?}")))
}

/// [`OpCounters`] as the file holds them.
#[derive(Serialize, Deserialize)]
struct Counters {
    ok: u64,
    errors: Vec<u64>,
    rows: u64,
    empty: u64,
    latency: String,
    service: String,
    lag: String,
    late: u64,
    retries: Vec<u64>,
    reconnects: u64,
    statements: [u64; 3],
    rolled_back: u64,
    messages: Vec<(ErrorClass, String, u64)>,
    failed: Option<String>,
    missing: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Spilled {
    ops: Vec<Counters>,
    hiccups: Option<String>,
}

impl Spilled {
    fn of(h: &Heavy) -> Spilled {
        Spilled {
            ops: h
                .ops
                .iter()
                .map(|c| Counters {
                    ok: c.ok,
                    errors: c.errors.iter().map(|(_, n)| n).collect(),
                    rows: c.rows,
                    empty: c.empty,
                    latency: encode(&c.latency),
                    service: encode(&c.service),
                    lag: encode(&c.lag),
                    late: c.late,
                    retries: c.retries.iter().map(|(_, n)| n).collect(),
                    reconnects: c.reconnects,
                    statements: [c.statements.read, c.statements.write, c.statements.other],
                    rolled_back: c.rolled_back,
                    messages: c.messages.clone(),
                    failed: c.failed.as_deref().map(encode),
                    missing: c.missing.as_deref().map(encode),
                })
                .collect(),
            hiccups: h.hiccups.as_ref().map(encode),
        }
    }

    fn heavy(self) -> io::Result<(Vec<OpCounters>, Option<Hist>)> {
        let ops = self
            .ops
            .into_iter()
            .map(|c| {
                let by_class = |counts: Vec<u64>| {
                    let mut by = ErrorCounts::default();
                    for (class, n) in ErrorClass::ALL.into_iter().zip(counts) {
                        by[class] = n;
                    }
                    by
                };
                let errors = by_class(c.errors);
                Ok(OpCounters {
                    ok: c.ok,
                    errors,
                    rows: c.rows,
                    empty: c.empty,
                    latency: decode(&c.latency)?,
                    service: decode(&c.service)?,
                    lag: decode(&c.lag)?,
                    late: c.late,
                    retries: by_class(c.retries),
                    reconnects: c.reconnects,
                    statements: StatementCounts {
                        read: c.statements[0],
                        write: c.statements[1],
                        other: c.statements[2],
                    },
                    rolled_back: c.rolled_back,
                    messages: c.messages,
                    failed: boxed(c.failed)?,
                    missing: boxed(c.missing)?,
                })
            })
            .collect::<io::Result<_>>()?;
        let hiccups = self.hiccups.as_deref().map(decode).transpose()?;
        Ok((ops, hiccups))
    }
}

#[cfg(test)]
mod tests {
    use hdrhistogram::serialization::V2DeflateSerializer;

    use super::*;
    use crate::engine::rig::RigSample;
    use crate::stats::new_hist;
    use crate::vocab::OpError;

    /// The encoding the result file holds (`EncodedHistogram`).
    fn bytes(h: &Hist) -> Vec<u8> {
        let mut out = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut out).unwrap();
        out
    }

    fn interval(k: u64) -> IntervalData {
        let mut c = OpCounters::default();
        for v in [1_000, 2_500, 1_000_000 + k, 3_600_000_000_000] {
            c.latency.record(v).unwrap();
            c.service.record(v / 2).unwrap();
        }
        c.lag.record(17).unwrap();
        c.ok = 4;
        c.record_failure(
            &OpError::new(ErrorClass::Timeout, "no answer in 1s"),
            1_000_000_000,
        );
        c.record_missing(800 + k);
        c.rows = 9;
        c.statements.write = 3;
        let mut hiccups = new_hist();
        hiccups.record(5_000 + k).unwrap();
        IntervalData {
            index: k,
            start: Duration::from_millis(100 * k),
            end: Duration::from_millis(100 * k + 100),
            warmup: k == 0,
            ops: vec![c, OpCounters::default()],
            per_client: vec![k, 2],
            rig: Some(RigSample {
                wall: Duration::from_millis(100),
                user: Duration::from_millis(3),
                system: Duration::from_millis(1),
                running: Some(1.5),
                hiccups,
                threads: vec![
                    ThreadSample {
                        name: format!("clients-{k} (x)"),
                        cpu: Duration::from_millis(10 + k),
                        wanted: Some(Duration::from_nanos(12_345_678_901 + k)),
                    },
                    ThreadSample {
                        name: "rig-monitor".into(),
                        cpu: Duration::ZERO,
                        wanted: None,
                    },
                ],
            }),
            stage: None,
            clients: None,
            ran_whole: None,
            offered: None,
        }
    }

    fn same(store: &IntervalStore, k: u64) {
        let want = interval(k);
        let (ops, hiccups) = store.read(k as usize).unwrap();
        for (a, b) in want.ops.iter().zip(&ops) {
            assert_eq!(bytes(&a.latency), bytes(&b.latency));
            assert_eq!(bytes(&a.service), bytes(&b.service));
            assert_eq!(bytes(&a.lag), bytes(&b.lag));
            let made = |h: &Option<Box<Hist>>| h.as_deref().map(bytes);
            assert_eq!(made(&a.failed), made(&b.failed));
            assert_eq!(made(&a.missing), made(&b.missing));
            assert_eq!((a.ok, a.errors, a.rows), (b.ok, b.errors, b.rows));
            assert_eq!((a.statements, &a.messages), (b.statements, &b.messages));
        }
        assert_eq!(store.per_client(k as usize).unwrap(), want.per_client);
        let rig = want.rig.unwrap();
        assert_eq!(bytes(&rig.hiccups), bytes(&hiccups.unwrap()));
        assert_eq!(store.threads(k as usize).unwrap(), rig.threads);
    }

    #[test]
    fn intervals_read_back_encode_to_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = IntervalStore::new(dir.path());
        for k in 0..3 {
            let brief = store.keep(interval(k));
            assert_eq!((brief.ops[0].ok, brief.ops[0].errors), (4, 1));
            assert_eq!(
                brief.rig.unwrap().hiccup_max_ns,
                interval(k).rig.unwrap().brief().hiccup_max_ns
            );
        }
        assert!(matches!(store.places[2], Place::Disk { .. }));
        for k in [2, 0, 1] {
            same(&store, k);
        }
    }

    #[test]
    fn without_a_file_intervals_stay_in_memory() {
        let mut store = IntervalStore {
            file: None,
            full: false,
            written: 0,
            places: Vec::new(),
        };
        store.keep(interval(0));
        assert!(matches!(store.places[0], Place::Memory(_)));
        same(&store, 0);
    }
}
