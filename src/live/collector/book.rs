//! What the collector knows of each shard, and what it decides from it: whom to accept,
//! which interval is ready to merge, who stopped sending, when the run is over. No I/O:
//! the loop in `collector::run` feeds it and acts on its answers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::assemble::merge::{differs, RunIdentity};
use crate::live::wire::{self, Hello, ServerFigures};
use crate::result::live::{PartialInterval, Refusal, StoppedShard};
use crate::result::stream::StreamHeader;
use crate::result::{IntervalRecord, RunResult};

/// The first refusals kept with their reasons (every one is counted).
const REFUSALS_KEPT: usize = 20;

#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Not connected yet.
    Waiting,
    /// Sending over connection `conn`.
    Connected { conn: u64 },
    /// It was sending and stopped (why); it may come back.
    Lost { why: String },
    /// It sent its result.
    Finished,
}

pub struct Shard {
    pub state: State,
    /// The process that holds this index (a reconnection brings the same).
    session: Option<String>,
    from: Option<SocketAddr>,
    pub file: String,
    pub header: Option<StreamHeader>,
    pub intervals: BTreeMap<u64, IntervalRecord>,
    pub result: Option<RunResult>,
    last_heard: Instant,
    /// Why it was given up, as the result records it.
    pub stopped: Option<StoppedShard>,
}

/// What [`Book::hello`] decided.
pub enum Verdict {
    /// Accepted: it holds intervals 1..=have already.
    Accept { have: u64 },
    Refuse {
        message: String,
        help: Option<String>,
    },
}

pub struct Book {
    pub count: usize,
    token: Option<String>,
    /// How long the collector waits for a shard that is late or silent before it goes on
    /// without it.
    patience: Duration,
    /// The first shard accepted: the run every other shard must be of.
    pub identity: Option<Hello>,
    pub shards: Vec<Shard>,
    /// The last interval merged live.
    pub merged_upto: u64,
    /// Since when the next interval has waited for a shard.
    waiting_since: Option<Instant>,
    pub refused: u64,
    pub refusals: Vec<Refusal>,
    /// When a shard last changed state (the end waits `patience` after it).
    last_change: Instant,
}

impl Book {
    pub fn new(count: usize, token: Option<String>, patience: Duration, now: Instant) -> Book {
        Book {
            count,
            token,
            patience,
            identity: None,
            shards: (0..count)
                .map(|i| Shard {
                    state: State::Waiting,
                    session: None,
                    from: None,
                    file: format!("shard {i}"),
                    header: None,
                    intervals: BTreeMap::new(),
                    result: None,
                    last_heard: now,
                    stopped: None,
                })
                .collect(),
            merged_upto: 0,
            waiting_since: None,
            refused: 0,
            refusals: Vec::new(),
            last_change: now,
        }
    }

    /// Count a refusal (and keep its reason among the first few).
    pub fn refuse(&mut self, from: SocketAddr, shard: Option<usize>, reason: &str) {
        self.refused += 1;
        if self.refusals.len() < REFUSALS_KEPT {
            self.refusals.push(Refusal {
                from: from.to_string(),
                shard,
                reason: reason.to_string(),
            });
        }
    }

    /// A new stream says who it is: accepted, or refused with why (and counted).
    pub fn hello(&mut self, h: &Hello, from: SocketAddr, conn: u64, now: Instant) -> Verdict {
        let verdict = self.judge(h);
        match &verdict {
            Verdict::Refuse { message, .. } => {
                let shard = (h.shard < self.count).then_some(h.shard);
                self.refuse(from, shard, message);
            }
            Verdict::Accept { .. } => {
                if self.identity.is_none() {
                    self.identity = Some(h.clone());
                }
                let s = &mut self.shards[h.shard];
                s.state = State::Connected { conn };
                s.session = Some(h.session.clone());
                s.from = Some(from);
                s.file = h.file.clone();
                s.last_heard = now;
                s.stopped = None;
                self.last_change = now;
            }
        }
        verdict
    }

    fn judge(&self, h: &Hello) -> Verdict {
        let refuse = |message: String, help: &str| Verdict::Refuse {
            message,
            help: (!help.is_empty()).then(|| help.to_string()),
        };
        if h.stream != wire::STREAM || h.version != wire::VERSION {
            return refuse(
                format!(
                    "it speaks stream version {} of '{}'; this collector reads version {} of '{}'",
                    h.version,
                    h.stream,
                    wire::VERSION,
                    wire::STREAM
                ),
                "run the same loadrig version on the shards and the collector",
            );
        }
        match (&self.token, &h.token) {
            (Some(want), Some(got)) if wire::same_token(want, got) => {}
            (Some(_), Some(_)) => {
                return refuse(
                    "wrong token".into(),
                    "give the shard the collector's token (--collect-token-file FILE or LOADRIG_COLLECT_TOKEN)",
                )
            }
            (Some(_), None) => {
                return refuse(
                    "this collector needs a token, and the shard gave none".into(),
                    "give the shard the collector's token (--collect-token-file FILE or LOADRIG_COLLECT_TOKEN)",
                )
            }
            (None, _) => {}
        }
        if h.count != self.count || h.shard >= self.count {
            return refuse(
                format!(
                    "it is shard {} of {}, and this collector waits for {} shards",
                    h.shard, h.count, self.count
                ),
                "start the collector with --shards N as the shards' --shard I/N",
            );
        }
        if let Some(first) = &self.identity {
            if let Some(what) = differs(&identity(first), &identity(h)) {
                return refuse(
                    format!(
                        "it has {what} than the shards already accepted (the shards of one run share it)"
                    ),
                    "send only the shards of one run: the same workload, flags, --shard I/N and --start-at",
                );
            }
        }
        let s = &self.shards[h.shard];
        if let Some(session) = &s.session {
            if session != &h.session {
                let held = s.from.map_or(String::new(), |a| format!(" from {a}"));
                return refuse(
                    format!(
                        "shard {} of {} is already sending{held}: two processes gave the same --shard",
                        h.shard, self.count
                    ),
                    "give each shard its own index I of --shard I/N",
                );
            }
        }
        Verdict::Accept {
            have: consecutive(&s.intervals),
        }
    }

    /// The shard sending over `conn`, if it is still its connection.
    pub fn shard_of(&self, conn: u64) -> Option<usize> {
        self.shards
            .iter()
            .position(|s| s.state == State::Connected { conn })
    }

    pub fn heard(&mut self, i: usize, now: Instant) {
        self.shards[i].last_heard = now;
    }

    /// An interval from shard `i`; an error names what does not fit.
    pub fn interval(&mut self, i: usize, r: IntervalRecord, now: Instant) -> Result<(), String> {
        let names: Vec<&str> = self
            .identity
            .as_ref()
            .map(|h| h.workload.ops.iter().map(|o| o.name.as_str()).collect())
            .unwrap_or_default();
        let ops: Vec<&str> = r.ops.iter().map(|o| o.name.as_str()).collect();
        if ops != names || r.index == 0 {
            return Err(format!(
                "interval {} names the operations {ops:?}, not the run's {names:?}",
                r.index
            ));
        }
        let s = &mut self.shards[i];
        s.last_heard = now;
        s.intervals.insert(r.index, r);
        Ok(())
    }

    /// Interval `f.index`'s server figures from shard `i`, kept in its interval record (so
    /// that a shard that stops is rebuilt with them). Whether they are news: figures for an
    /// interval it has not sent, or sent again after a reconnection, are not.
    pub fn server(&mut self, i: usize, f: ServerFigures, now: Instant) -> bool {
        let s = &mut self.shards[i];
        s.last_heard = now;
        match s.intervals.get_mut(&f.index) {
            Some(r) if r.server.is_none() => {
                r.server = Some(f.figures);
                true
            }
            _ => false,
        }
    }

    /// Shard `i`'s result; an error when it is not this shard's run.
    pub fn result(&mut self, i: usize, r: RunResult, now: Instant) -> Result<(), String> {
        if let Some(first) = &self.identity {
            if let Some(what) = differs(&identity(first), &RunIdentity::of(&r)) {
                return Err(format!("its result has {what} than its stream"));
            }
        }
        if r.load.shard.map(|s| s.index) != Some(i) {
            return Err(format!("its result is not shard {i}'s"));
        }
        let s = &mut self.shards[i];
        s.result = Some(r);
        s.state = State::Finished;
        s.last_heard = now;
        self.last_change = now;
        Ok(())
    }

    /// Connection `conn` ended (`why`): its shard, unless it finished, stopped sending.
    /// Returns the shard and its last interval when that is news.
    pub fn closed(&mut self, conn: u64, why: &str, now: Instant) -> Option<(usize, u64)> {
        let i = self.shard_of(conn)?;
        Some((i, self.lose(i, why, now)))
    }

    fn lose(&mut self, i: usize, why: &str, now: Instant) -> u64 {
        let s = &mut self.shards[i];
        let after = s.intervals.keys().next_back().copied().unwrap_or(0);
        s.state = State::Lost {
            why: why.to_string(),
        };
        s.stopped = Some(StoppedShard {
            shard: i,
            after_interval: after,
            reason: why.to_string(),
        });
        self.last_change = now;
        after
    }

    /// Connected shards silent for longer than `silence`: given up as stopped (their
    /// connections to be closed). Returns them with their connections and last intervals.
    pub fn silent(&mut self, silence: Duration, now: Instant) -> Vec<(usize, u64, u64)> {
        let quiet: Vec<(usize, u64)> = self
            .shards
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.state {
                State::Connected { conn } if now.duration_since(s.last_heard) > silence => {
                    Some((i, conn))
                }
                _ => None,
            })
            .collect();
        quiet
            .into_iter()
            .map(|(i, conn)| {
                let why = format!("it sent nothing for {}s", silence.as_secs());
                (i, conn, self.lose(i, &why, now))
            })
            .collect()
    }

    /// The next interval, when it can be merged: every shard has it, or has finished
    /// without it, or stopped, or has kept it waiting for longer than the patience. The
    /// intervals to merge, their shards, and the shards whose figures it lacks. `force`:
    /// wait for nobody (the end).
    pub fn next_ready(
        &mut self,
        now: Instant,
        force: bool,
    ) -> Option<(u64, Vec<usize>, Vec<usize>)> {
        let k = self.merged_upto + 1;
        let have: Vec<usize> = (0..self.count)
            .filter(|&i| self.shards[i].intervals.contains_key(&k))
            .collect();
        if have.is_empty() {
            self.waiting_since = None;
            return None;
        }
        let since = *self.waiting_since.get_or_insert(now);
        let late = force || now.duration_since(since) >= self.patience;
        let blocking = (0..self.count).filter(|i| !have.contains(i)).any(|i| {
            let s = &self.shards[i];
            let ended_before = s.state == State::Finished;
            let gone = matches!(s.state, State::Lost { .. });
            !(ended_before || gone || late)
        });
        if blocking {
            return None;
        }
        self.merged_upto = k;
        self.waiting_since = None;
        let missing = (0..self.count)
            .filter(|i| !have.contains(i) && self.shards[*i].state != State::Finished)
            .collect();
        Some((k, have, missing))
    }

    /// Whether the run is over: every shard finished, or none is sending any more and
    /// nothing has changed for the patience (a shard that stopped may still come back).
    pub fn over(&self, now: Instant) -> bool {
        let finished = self.shards.iter().all(|s| s.state == State::Finished);
        let sending = self
            .shards
            .iter()
            .any(|s| matches!(s.state, State::Connected { .. }));
        let any_came = self.shards.iter().any(|s| s.state != State::Waiting);
        finished || (!sending && any_came && now.duration_since(self.last_change) >= self.patience)
    }

    /// The shards as the dashboard's table shows them.
    pub fn table(&self) -> Value {
        let rows: Vec<Value> = self
            .shards
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let state = match &s.state {
                    State::Waiting => "waiting".to_string(),
                    State::Connected { .. } => "sending".to_string(),
                    State::Lost { why } => format!("stopped: {why}"),
                    State::Finished => "finished".to_string(),
                };
                json!({
                    "shard": i, "state": state,
                    "from": s.from.map(|a| a.to_string()).unwrap_or_default(),
                    "file": s.file,
                    "intervals": s.intervals.len(),
                })
            })
            .collect();
        json!({
            "shards": rows,
            "line": format!("{} of {} shards finished; {} stream(s) refused",
                self.shards.iter().filter(|s| s.state == State::Finished).count(), self.count, self.refused),
        })
    }

    /// Every interval index of the merged run that lacks some unfinished shard's figures.
    pub fn partial_intervals(&self, last: u64) -> Vec<PartialInterval> {
        (1..=last)
            .filter_map(|k| {
                let missing: Vec<usize> = (0..self.count)
                    .filter(|&i| {
                        let s = &self.shards[i];
                        s.state != State::Finished && !s.intervals.contains_key(&k)
                    })
                    .collect();
                (!missing.is_empty()).then_some(PartialInterval {
                    index: k,
                    missing_shards: missing,
                })
            })
            .collect()
    }
}

fn identity(h: &Hello) -> RunIdentity<'_> {
    RunIdentity {
        workload: &h.workload,
        load: &h.load,
        target: &h.target,
    }
}

/// How many intervals from the first are held without a gap.
fn consecutive(intervals: &BTreeMap<u64, IntervalRecord>) -> u64 {
    let mut k = 0;
    while intervals.contains_key(&(k + 1)) {
        k += 1;
    }
    k
}
