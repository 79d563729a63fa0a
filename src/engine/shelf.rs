//! One thread's counters: every client the thread carries records into the same counters per
//! interval, so 10,000 clients hold a few sets of histograms instead of 10,000 (a latency
//! HdrHistogram is some 100 KB once it has seen a range of latencies). An interval goes to
//! the collector once every client of the thread has moved past it; the collector merges the
//! threads' counters exactly as it merged the clients' (histograms add bucket by bucket), so
//! the totals are the same. What each client completed per interval is still counted apart,
//! for the fairness figures.
//!
//! The thread's clients run on one single-threaded runtime and never hold the shelf across
//! an `await`, so a `RefCell` is all the sharing needs.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use super::Msg;
use crate::stats::OpCounters;

/// One interval's counters of one thread.
pub struct Finished {
    pub index: u64,
    /// Per operation, over the thread's clients.
    pub counters: Vec<OpCounters>,
    /// Operations each client completed, in the order of the thread's client ids.
    pub per_client: Vec<u64>,
    /// A closed loop with client stages: the thread's clients running at the interval's end.
    pub active: u64,
}

/// What one thread's clients recorded in the intervals some of them are still in.
pub struct Shelf {
    thread: usize,
    n_ops: usize,
    /// The clients' ids; a client's place here is its `local` number.
    clients: Arc<[usize]>,
    open: BTreeMap<u64, Finished>,
    /// The interval each client records into (`u64::MAX` once it is done).
    current: Vec<u64>,
    /// How many clients are in each interval: the smallest key is the thread's progress.
    at: BTreeMap<u64, usize>,
    /// The progress the collector was last told.
    reported: u64,
    tx: Sender<Msg>,
}

impl Shelf {
    pub fn new(thread: usize, n_ops: usize, clients: Arc<[usize]>, tx: Sender<Msg>) -> Shelf {
        let n = clients.len();
        Shelf {
            thread,
            n_ops,
            clients,
            open: BTreeMap::new(),
            current: vec![0; n],
            at: BTreeMap::from([(0, n)]),
            reported: 0,
            tx,
        }
    }

    /// The counters of operation `i` in the interval client `local` is in, counting one
    /// completed operation for the client.
    #[inline]
    pub fn record(&mut self, local: usize, i: usize) -> &mut OpCounters {
        let index = self.current[local];
        let slot = self.slot(index);
        slot.per_client[local] += 1;
        &mut slot.counters[i]
    }

    fn slot(&mut self, index: u64) -> &mut Finished {
        let (n_ops, n) = (self.n_ops, self.current.len());
        self.open.entry(index).or_insert_with(|| Finished {
            index,
            counters: (0..n_ops).map(|_| OpCounters::default()).collect(),
            per_client: vec![0; n],
            active: 0,
        })
    }

    /// Client `local` moves on to interval `next` (`u64::MAX`: it is done); the intervals
    /// no client of the thread is in any more go to the collector. `active`: the client was
    /// running at the end of each interval it leaves behind.
    pub fn advance(&mut self, local: usize, next: u64, active: bool) {
        let was = std::mem::replace(&mut self.current[local], next);
        if was == next {
            return;
        }
        if active {
            // The intervals whose end it passed running; once done, the one it was in.
            let upto = if next == u64::MAX { was + 1 } else { next };
            for k in was..upto {
                self.slot(k).active += 1;
            }
        }
        if let Entry::Occupied(mut e) = self.at.entry(was) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
        if next != u64::MAX {
            *self.at.entry(next).or_insert(0) += 1;
        }
        let progress = self.at.keys().next().copied().unwrap_or(u64::MAX);
        if progress > self.reported {
            let later = self.open.split_off(&progress);
            let finished = std::mem::replace(&mut self.open, later);
            let _ = self.tx.send(Msg::Progress {
                thread: self.thread,
                clients: Arc::clone(&self.clients),
                finished: finished.into_values().collect(),
                next: progress,
            });
            self.reported = progress;
        }
    }

    /// Client `local` has ended at `end` (since the start) with `missed` arrivals never
    /// started (by stage); `active`: it was running to the end.
    pub fn finish(&mut self, local: usize, end: Duration, missed: Vec<u64>, active: bool) {
        self.advance(local, u64::MAX, active);
        let _ = self.tx.send(Msg::Done {
            thread: self.thread,
            end,
            missed,
        });
    }
}
