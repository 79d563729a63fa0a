//! The server's side of a run, from its result file: the measured intervals' server figures
//! added up ([`totals`]), the named figures the verdict, `compare` and the report read
//! ([`figures`]), and each operation's time split into the server's and the rest
//! ([`decompose`]). Everything is recomputed from the file, so a merged or recovered run
//! gets it as a built one does.

mod figures;
mod lock_waits;
mod matching;
mod sides;

use crate::observe::ServerInterval;
use crate::result::server::{OpTime, ServerRecord, ServerTotals};
use crate::result::{IntervalRecord, RunResult};

pub use figures::{client_time_ms, figures};
pub use matching::{decompose, normalise, Decomposition};
pub use sides::{sides, FigurePair, ServerSides};

/// One operation's time beside the server's from a finished run (`server.decomposition`):
/// the client's mean, the server's for the statements matched to it, the rest, and the
/// server's statements (or commands) per operation. None when the run did not observe its
/// server or has no operation of that name. What a study reads per operation.
pub fn operation<'a>(r: &'a RunResult, op: &str) -> Option<&'a OpTime> {
    r.server.as_ref()?.decomposition.iter().find(|o| o.op == op)
}

/// One of the server's named figures of a finished run (`server.figures`, docs/results.md
/// lists them: `lock_wait_share`, `cpu_ms_per_op`, `wal_wait_share`, ...). None when the
/// run did not observe its server or the server did not let the observer see it.
pub fn figure(r: &RunResult, name: &str) -> Option<f64> {
    r.server.as_ref()?.figures.get(name).copied()
}

/// Which server of an interval: the target or the one behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Target,
    Behind,
}

/// One server's figures added up over the measured intervals that have them; gauges are
/// their means. None when no measured interval has any.
pub fn totals(intervals: &[IntervalRecord], which: Which) -> Option<ServerTotals> {
    let mut sum = ServerInterval::default();
    let mut gauges: std::collections::BTreeMap<String, (f64, usize)> = Default::default();
    let (mut n, mut seconds) = (0, 0.0);
    for i in intervals.iter().filter(|i| !i.warmup) {
        let Some(s) = &i.server else { continue };
        let one = match which {
            Which::Target => Some(&s.target),
            Which::Behind => s.behind.as_ref(),
        };
        let Some(one) = one else { continue };
        n += 1;
        seconds += (s.end_s - s.start_s).max(0.0);
        sum.absorb(one);
        for (k, v) in &one.gauges {
            let g = gauges.entry(k.clone()).or_insert((0.0, 0));
            g.0 += v;
            g.1 += 1;
        }
    }
    if n == 0 {
        return None;
    }
    sum.gauges = gauges
        .into_iter()
        .map(|(k, (total, count))| (k, total / count as f64))
        .collect();
    Some(ServerTotals {
        intervals: n,
        seconds,
        figures: sum,
    })
}

/// The run's server record made again from its intervals: the measured totals, the
/// figures and the decomposition; what the intervals cannot say (the URLs, the cost, the
/// observing shard) is kept from `base`.
pub fn summarize(r: &RunResult, base: ServerRecord) -> ServerRecord {
    let measured = totals(&r.intervals, Which::Target).unwrap_or_default();
    let behind_measured = totals(&r.intervals, Which::Behind);
    let mut d = decompose(r, &measured);
    let lock_wait_matching = lock_waits::attribute(r, &measured, &mut d.ops);
    let mut unavailable = base.unavailable;
    for i in &r.intervals {
        for u in i.server.iter().flat_map(|s| &s.unavailable) {
            if !unavailable.contains(u) {
                unavailable.push(u.clone());
            }
        }
    }
    let mut record = ServerRecord {
        unavailable,
        measured,
        behind_measured,
        decomposition: d.ops,
        matching: d.matching,
        lock_wait_matching,
        unmatched: d.unmatched,
        figures: Default::default(),
        ..base
    };
    record.figures = figures(r, &record);
    record
}
