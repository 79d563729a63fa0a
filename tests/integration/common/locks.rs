//! What the tests of this one test binary share, and one lock for each shared thing. Tests
//! of different modules run side by side in one process, so a lock per module (as when each
//! file was its own binary) no longer keeps them apart; a lock per thing does, and lets two
//! tests that share nothing run together.
//!
//! A test names everything it shares in one [`hold`] call, taken all at once: no test waits
//! for one thing while holding another, so no two tests can wait for each other. A test
//! that fails while holding its things gives them back as it unwinds.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

/// A thing tests share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shared {
    /// The throwaway PostgreSQL (both its databases): tests drop and create `loadrig_` tables
    /// and `loadrig cleanup` drops all of them, every kv run creates `loadrig_kv` where it is
    /// missing (two sessions racing on `CREATE TABLE IF NOT EXISTS` can fail), and some tests
    /// count what the server's statistics say of every `loadrig_` table.
    Postgres,
    /// The throwaway MariaDB's database, for the same reasons.
    Mariadb,
    /// One database of the throwaway Redis (`common::redis_db`): tests flush it and count
    /// its keys. The URL as `scripts/services.sh env` gives it is database 0.
    Redis(u32),
    /// slapd, side by side with other tests that write under a base of their own
    /// (`ou=NAME`), but never beside a [`Shared::SlapdAlone`] test.
    Slapd,
    /// slapd to this test alone: slapd 2.5 (Debian 12) segfaulted when an RFC 5805
    /// transaction ran while other connections wrote (1 run in ~25 on a loaded machine, see
    /// docs/targets.md), and the default subtree `ou=loadrig`, which runs create where it is
    /// missing and `cleanup` removes, belongs to one test at a time.
    SlapdAlone,
    /// nginx's WebDAV collections that more than one test fills and removes: the default
    /// `/dav/loadrig` and the documents study's `/dav/loadrig-documents` (a test that names a
    /// collection of its own, `kv_path=/dav/loadrig-NAME`, shares nothing).
    Dav,
    /// The throwaway etcd's keys under `loadrig/`: tests count them, and `cleanup` deletes
    /// all of them.
    Etcd,
    /// The throwaway memcached: tests count every `loadrig:` item on it and `loadrig cleanup`
    /// removes all of them.
    Memcached,
    /// The machine's CPU: runs that burn it (thousands of clients, processes spinning their
    /// sleeps' ends) and tests that judge timings or the machine's load (a long run queue
    /// makes a light run look starved, a model fitted to latencies drifts) take turns, so
    /// no judge sees another's load. Other tests stay side by side with them.
    Cpu,
}

impl Shared {
    /// The lock this stands for: slapd's two ways of holding it are one lock.
    fn lock(self) -> Shared {
        match self {
            Shared::SlapdAlone => Shared::Slapd,
            other => other,
        }
    }

    /// Whether this is held by one test only, or beside others holding it the same way.
    fn alone(self) -> bool {
        self != Shared::Slapd
    }
}

/// Who holds each lock: the number of tests sharing it, or `None` when one test holds it alone.
static HOLDERS: Mutex<BTreeMap<Shared, Option<usize>>> = Mutex::new(BTreeMap::new());
static RELEASED: Condvar = Condvar::new();

thread_local! {
    /// Whether this thread (one test) holds something now: a second `hold` would wait for
    /// what the first one took.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// The things a test holds until it drops this.
#[must_use = "the things are released when this is dropped"]
pub struct Held {
    what: Vec<Shared>,
}

/// Wait until every one of `what` is free for this test (all at once), and hold them until
/// the returned [`Held`] drops.
pub fn hold(what: &[Shared]) -> Held {
    assert!(
        !HOLDING.with(Cell::get),
        "a test names everything it shares in one hold() call (it held something already)"
    );
    let mut what = what.to_vec();
    what.sort();
    what.dedup();
    let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
    while !what.iter().all(|w| free(&holders, *w)) {
        holders = RELEASED.wait(holders).unwrap_or_else(|e| e.into_inner());
    }
    for w in &what {
        let slot = holders.entry(w.lock()).or_insert(Some(0));
        *slot = if w.alone() { None } else { slot.map(|n| n + 1) };
    }
    HOLDING.with(|h| h.set(true));
    Held { what }
}

fn free(holders: &BTreeMap<Shared, Option<usize>>, w: Shared) -> bool {
    match holders.get(&w.lock()) {
        None | Some(Some(0)) => true,
        Some(Some(_)) => !w.alone(),
        Some(None) => false,
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        for w in &self.what {
            if w.alone() {
                holders.remove(&w.lock());
            } else if let Some(Some(n)) = holders.get_mut(&w.lock()) {
                *n -= 1;
            }
        }
        HOLDING.with(|h| h.set(false));
        RELEASED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::{hold, Shared};
    use std::sync::mpsc;
    use std::time::Duration;

    /// Whether another thread gets `what` within 200 ms while this one holds `held`.
    fn gets_beside(held: &[Shared], what: &'static [Shared]) -> bool {
        let mine = hold(held);
        let (tx, rx) = mpsc::channel();
        let other = std::thread::spawn(move || {
            let _theirs = hold(what);
            tx.send(()).unwrap();
        });
        let got = rx.recv_timeout(Duration::from_millis(200)).is_ok();
        drop(mine);
        other.join().unwrap();
        got
    }

    #[test]
    fn tests_that_share_nothing_or_share_slapd_run_together_and_the_rest_wait() {
        // Redis databases no test uses, so only this test decides the answers.
        let (a, b) = (Shared::Redis(1000), Shared::Redis(1001));
        assert!(gets_beside(&[a], &[Shared::Redis(1001)]));
        assert!(!gets_beside(&[a, b], &[Shared::Redis(1001)]));
        // slapd: side by side with the tests in bases of their own, never beside one alone.
        assert!(gets_beside(&[Shared::Slapd], &[Shared::Slapd]));
        assert!(!gets_beside(&[Shared::Slapd], &[Shared::SlapdAlone]));
        assert!(!gets_beside(&[Shared::SlapdAlone], &[Shared::Slapd]));
    }

    #[test]
    #[should_panic(expected = "in one hold() call")]
    fn a_second_hold_in_one_test_fails_instead_of_waiting() {
        let _first = hold(&[Shared::Redis(1002)]);
        let _second = hold(&[Shared::Redis(1003)]);
    }
}
