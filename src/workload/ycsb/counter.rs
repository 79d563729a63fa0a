//! `{ycsb_counter START}`: YCSB's `AcknowledgedCounterGenerator`, as CoreWorkload uses it
//! for `transactioninsertkeysequence`. The clients of a process share one counter of insert
//! key numbers. A number is acknowledged when the operation that drew it has ended (whether
//! it succeeded or not, as CoreWorkload acknowledges in a `finally`), and the newest key the
//! `latest`, `exponential` and `zipfian` choosers see is the highest number below which every
//! number is acknowledged. So a read never picks a key whose insert has not ended, however
//! the clients interleave: with a counter per client, ycsb-d at 4 clients read 17 % of its
//! keys before they were inserted.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// The shared counters of one process, one per `{ycsb_counter}` of the workload (indexed by
/// its `seq` slot; the slots of other generators stay unused).
#[derive(Debug)]
pub struct InsertCounters {
    /// Shard `shard` of `shards` takes the numbers START + shard, START + shard + shards, …:
    /// shards never insert the same key, and each shard's newest key follows its own
    /// acknowledgements (shards share nothing while they run).
    shard: u64,
    shards: u64,
    slots: Box<[Counter]>,
}

#[derive(Debug, Default)]
struct Counter {
    /// The next number of this shard's own order.
    next: AtomicU64,
    /// The newest acknowledged key plus one; 0 before the first.
    newest: AtomicU64,
    window: Mutex<Window>,
}

#[derive(Debug, Default)]
struct Window {
    /// Numbers 0 .. contiguous of this shard's order are all acknowledged.
    contiguous: u64,
    /// Acknowledged numbers above the first that is not.
    ahead: BTreeSet<u64>,
}

/// A number drawn and not acknowledged yet.
#[derive(Debug, Clone, Copy)]
pub struct Drawn {
    slot: usize,
    n: u64,
    base: u64,
}

impl InsertCounters {
    /// `slots`: the workload's `seq` slots; shard `shard` of `shards` (0 of 1 unsharded).
    pub fn new(slots: usize, shard: u64, shards: u64) -> Self {
        InsertCounters {
            shard,
            shards: shards.max(1),
            slots: (0..slots).map(|_| Counter::default()).collect(),
        }
    }

    /// The next key of the counter in `slot`, which starts at `base`.
    pub fn draw(&self, slot: usize, base: u64) -> (u64, Drawn) {
        let n = self.slots[slot].next.fetch_add(1, Ordering::Relaxed);
        (self.key(base, n), Drawn { slot, n, base })
    }

    fn key(&self, base: u64, n: u64) -> u64 {
        base + self.shard + n * self.shards
    }

    /// The operation that drew `d` has ended.
    pub fn acknowledge(&self, d: Drawn) {
        let counter = &self.slots[d.slot];
        let mut w = counter
            .window
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if d.n != w.contiguous {
            w.ahead.insert(d.n);
            return;
        }
        let mut next = d.n + 1;
        while w.ahead.remove(&next) {
            next += 1;
        }
        w.contiguous = next;
        counter
            .newest
            .store(self.key(d.base, next - 1) + 1, Ordering::Release);
    }

    /// The newest key below which every drawn key is acknowledged, over all counters; None
    /// before the first acknowledgement.
    pub fn newest(&self) -> Option<u64> {
        let newest = self.slots.iter().map(|c| c.newest.load(Ordering::Acquire));
        newest.max().filter(|&k| k > 0).map(|k| k - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_key_waits_for_every_key_before_it() {
        let c = InsertCounters::new(1, 0, 1);
        let drawn: Vec<_> = (0..4).map(|_| c.draw(0, 1000)).collect();
        let keys: Vec<u64> = drawn.iter().map(|d| d.0).collect();
        assert_eq!(keys, [1000, 1001, 1002, 1003]);
        assert_eq!(c.newest(), None);
        c.acknowledge(drawn[1].1);
        c.acknowledge(drawn[3].1);
        assert_eq!(c.newest(), None, "1000 has not ended");
        c.acknowledge(drawn[0].1);
        assert_eq!(c.newest(), Some(1001), "1002 has not ended");
        c.acknowledge(drawn[2].1);
        assert_eq!(c.newest(), Some(1003));
    }

    #[test]
    fn shards_take_interleaved_keys() {
        let c = InsertCounters::new(2, 1, 3);
        let keys: Vec<u64> = (0..3).map(|_| c.draw(1, 10).0).collect();
        assert_eq!(keys, [11, 14, 17]);
        assert_eq!(c.draw(0, 0).0, 1, "each counter keeps its own numbers");
    }
}
