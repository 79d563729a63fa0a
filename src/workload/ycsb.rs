//! YCSB 0.17's key choosers and key hash, with its semantics and its quirks: the
//! `ZipfianGenerator` (Gray et al.'s approximation, not an exact Zipf law), the
//! `ScrambledZipfianGenerator`, the `SkewedLatestGenerator`, the `HotspotIntegerGenerator` and
//! `Utils.fnvhash64`.
//!
//! Written from reading YCSB 0.17.0's source (brianfrankcooper/YCSB,
//! `core/src/main/java/site/ycsb/generator/` and `Utils.java`, unchanged since). Every uniform
//! draw is a double in [0, 1) made of 53 random bits, as Java's `nextDouble` and rand's
//! `StandardUniform` both make it; Rust's float-to-integer casts truncate and saturate as
//! Java's do.

use rand::{Rng, RngCore};

/// YCSB's Zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`); its core workload uses no
/// other.
pub const THETA: f64 = 0.99;

/// The scrambled generator's Zipfian: `ZipfianGenerator(0, ITEM_COUNT)` holds ITEM_COUNT + 1
/// numbers, with YCSB's precomputed zeta (`ScrambledZipfianGenerator.ZETAN`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000 + 1;
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME: u64 = 1_099_511_628_211;

/// FNV-1a over the eight bytes of `val`, lowest first (YCSB's loop, without its `abs`).
fn fnv1a(mut val: i64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS;
    for _ in 0..8 {
        hash = (hash ^ (val & 0xff) as u64).wrapping_mul(FNV_PRIME);
        val >>= 8;
    }
    hash
}

/// YCSB's `Utils.fnvhash64`: the hash of a key number under `insertorder=hashed`
/// (keys `user` + this number). Java's `Math.abs` leaves one value, `i64::MIN`, negative;
/// no key number below 2^40 hashes to it (tested), so callers may take the result as `u64`.
pub fn fnvhash64(val: i64) -> i64 {
    (fnv1a(val) as i64).wrapping_abs()
}

/// The generalised harmonic number sum(i^-THETA, i = 1..=n) (YCSB's `zetastatic`), in
/// constant time: the first terms summed, the rest by Euler–Maclaurin. It agrees with YCSB's
/// term-by-term sum to about 1e-12 (tested), far below what any number of draws could show.
pub fn zeta(n: u64) -> f64 {
    const DIRECT: u64 = 50;
    let term = |i: f64| i.powf(-THETA);
    if n < DIRECT {
        return (1..=n).map(|i| term(i as f64)).sum();
    }
    let (m, x) = (DIRECT as f64, n as f64);
    let head: f64 = (1..DIRECT).map(|i| term(i as f64)).sum();
    let integral = (x.powf(1.0 - THETA) - m.powf(1.0 - THETA)) / (1.0 - THETA);
    let d1 = |t: f64| -THETA * t.powf(-THETA - 1.0);
    let d3 = |t: f64| -THETA * (THETA + 1.0) * (THETA + 2.0) * t.powf(-THETA - 3.0);
    head + integral + (term(m) + term(x)) / 2.0 + (d1(x) - d1(m)) / 12.0 - (d3(x) - d3(m)) / 720.0
}

/// YCSB's `ZipfianGenerator` as `nextLong(count)` draws from it: numbers `0..count`, 0 the most
/// frequent. Its `eta` keeps the item count the generator was made for (`first`) while its
/// zeta follows `count`, as YCSB's does when the latest generator's count grows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipfian {
    count: u64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// `ZipfianGenerator(0, items - 1)`.
    pub fn new(items: u64) -> Self {
        Zipfian::grown(items, items, zeta(items))
    }

    fn grown(first: u64, count: u64, zetan: f64) -> Self {
        let eta = (1.0 - (2.0 / first as f64).powf(1.0 - THETA)) / (1.0 - zeta(2) / zetan);
        Zipfian { count, zetan, eta }
    }

    /// The number YCSB maps the uniform `u` (in [0, 1)) to. The formula can reach `count`
    /// only by rounding, for `u` within a few 2^-53 of 1; that one case is kept in range.
    pub fn number(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(THETA) {
            return 1;
        }
        let alpha = 1.0 / (1.0 - THETA);
        let n = (self.count as f64 * (self.eta * u - self.eta + 1.0).powf(alpha)) as u64;
        n.min(self.count.saturating_sub(1))
    }

    pub fn sample<R: RngCore>(&self, rng: &mut R) -> u64 {
        self.number(rng.random::<f64>())
    }

    /// The exact distribution of [`Zipfian::number`] over its first `ranks` numbers: the
    /// lengths of the intervals of `u` that map to each (its inverse, rank by rank).
    #[cfg(test)]
    pub fn pmf(&self, ranks: u64) -> Vec<f64> {
        let (first, second) = (
            (1.0 / self.zetan).min(1.0),
            ((1.0 + 0.5f64.powf(THETA)) / self.zetan).min(1.0),
        );
        // The formula (used from `second` on) gives at least k exactly when u >= from(k).
        let from = |k: u64| {
            let t = 1.0 - (1.0 - (k as f64 / self.count as f64).powf(1.0 - THETA)) / self.eta;
            if k == 0 {
                second
            } else {
                t.clamp(second, 1.0)
            }
        };
        let mut p: Vec<f64> = (0..ranks).map(|k| from(k + 1) - from(k)).collect();
        p[0] += first;
        if ranks > 1 {
            p[1] += second - first;
        }
        p
    }
}

/// `{ycsb_zipfian A..B}`: YCSB's `ZipfianGenerator(A, B - 1)`, A the most frequent.
#[derive(Debug, Clone)]
pub struct RangeZipfian {
    lo: u64,
    zipf: Zipfian,
}

impl RangeZipfian {
    pub fn new(lo: u64, hi: u64) -> Self {
        RangeZipfian {
            lo,
            zipf: Zipfian::new(hi - lo),
        }
    }

    pub fn sample<R: RngCore>(&self, rng: &mut R) -> u64 {
        self.lo + self.zipf.sample(rng)
    }
}

/// `{ycsb_scrambled A..B}`: YCSB's `ScrambledZipfianGenerator(A, B - 1)`, a Zipfian number out
/// of 10^10 + 1, hashed, modulo the range.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    lo: u64,
    items: u64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    pub fn new(lo: u64, hi: u64) -> Self {
        ScrambledZipfian {
            lo,
            items: hi - lo,
            zipf: Zipfian::grown(SCRAMBLED_ITEMS, SCRAMBLED_ITEMS, SCRAMBLED_ZETAN),
        }
    }

    pub fn sample<R: RngCore>(&self, rng: &mut R) -> u64 {
        self.key(self.zipf.sample(rng))
    }

    /// Where the Zipfian number `n` lands in the range.
    fn key(&self, n: u64) -> u64 {
        self.lo + fnvhash64(n as i64) as u64 % self.items
    }
}

/// `{ycsb_scrambled_keys N OPS INSERT}`: CoreWorkload's key chooser for
/// `requestdistribution=zipfian`. YCSB makes its scrambled Zipfian over the loaded keys plus
/// the inserts it expects, `ScrambledZipfianGenerator(0, N + E)` (max inclusive: N + E + 1
/// numbers), so that inserts do not move the modulus, and `nextKeynum` draws again while the
/// number is above the newest key. The newest key is as for `{ycsb_latest}`.
#[derive(Debug, Clone)]
pub struct ScrambledKeys {
    records: u64,
    scrambled: ScrambledZipfian,
}

impl ScrambledKeys {
    /// `insert_proportion` finite and not negative. None when no key is loaded or the key
    /// count overflows.
    pub fn new(records: u64, operations: u64, insert_proportion: f64) -> Option<Self> {
        let items = records
            .checked_add(expected_new_keys(operations, insert_proportion))?
            .checked_add(1)?;
        (records > 0).then(|| ScrambledKeys {
            records,
            scrambled: ScrambledZipfian::new(0, items),
        })
    }

    /// `seq_newest` and `offset` as for [`SkewedLatest::sample`].
    pub fn sample<R: RngCore>(&self, rng: &mut R, seq_newest: Option<u64>, offset: u64) -> u64 {
        let newest = newest_key(self.records, seq_newest, offset);
        loop {
            let key = self.scrambled.sample(rng);
            if key <= newest {
                return key;
            }
        }
    }
}

/// CoreWorkload's `expectednewkeys = (int) (opcount * insertproportion * 2.0)`, multiplied in
/// Java's order; Rust's cast truncates and saturates as Java's `(int)` does.
pub fn expected_new_keys(operations: u64, insert_proportion: f64) -> u64 {
    (operations as f64 * insert_proportion * 2.0) as i32 as u64
}

/// The newest key number: N - 1 (plus a growth study's offset) until an insert moves it.
/// `seq_newest` is the newest key the process's `{ycsb_counter}` acknowledged, as YCSB's
/// threads share one; without that counter, the largest number the client's own `{seq}`
/// handed out.
fn newest_key(records: u64, seq_newest: Option<u64>, offset: u64) -> u64 {
    let first = records - 1 + offset;
    seq_newest.map_or(first, |n| n.max(first))
}

/// `{ycsb_hotspot A..B HOT_SET HOT_OPN}`: YCSB's `HotspotIntegerGenerator(A, B - 1, HOT_SET,
/// HOT_OPN)`: a fraction HOT_OPN of draws uniform over the first HOT_SET of the range, the rest
/// uniform over the others.
#[derive(Debug, Clone)]
pub struct Hotspot {
    lo: u64,
    hot: u64,
    cold: u64,
    hot_opn: f64,
}

impl Hotspot {
    /// None when the hot or the cold set would be empty (YCSB would divide by zero).
    pub fn new(lo: u64, hi: u64, hot_set: f64, hot_opn: f64) -> Option<Self> {
        let range = hi - lo;
        // Java's `(int) (interval * hotsetFraction)`: truncated, and saturated at i32::MAX.
        let hot = (range as f64 * hot_set) as i32 as u64;
        let cold = range.checked_sub(hot)?;
        (hot > 0 && cold > 0).then_some(Hotspot {
            lo,
            hot,
            cold,
            hot_opn,
        })
    }

    pub fn sample<R: RngCore>(&self, rng: &mut R) -> u64 {
        // Java's `Math.abs(nextLong())`; its one negative result (2^-64) is taken as 2^63.
        if rng.random::<f64>() < self.hot_opn {
            self.lo + (rng.next_u64() as i64).unsigned_abs() % self.hot
        } else {
            self.lo + self.hot + (rng.next_u64() as i64).unsigned_abs() % self.cold
        }
    }
}

/// `{ycsb_latest N}`: YCSB's `SkewedLatestGenerator`: the newest key number minus a YCSB Zipfian
/// number over that many. Keys 0..N are the loaded ones (a growth study adds its offset); the
/// newest is N - 1 until an insert's `{ycsb_counter}` is acknowledged above it (without one,
/// until the client's own `{seq}` hands out a larger number). As in YCSB, key 0 is never
/// chosen and the Zipfian's eta keeps the count it was made for.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    records: u64,
}

/// A client's Zipfian for `{ycsb_latest}`, made again when its newest key moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatestZipfian {
    first: u64,
    newest: u64,
    zipf: Zipfian,
}

impl SkewedLatest {
    /// `records` at least 3: YCSB's eta needs more than two keys.
    pub fn new(records: u64) -> Self {
        SkewedLatest { records }
    }

    /// `seq_newest`: the newest acknowledged insert (see [`newest_key`]); `offset`: where a
    /// growth study's batch continues the sequences.
    pub fn sample<R: RngCore>(
        &self,
        rng: &mut R,
        seq_newest: Option<u64>,
        offset: u64,
        cache: &mut Option<LatestZipfian>,
    ) -> u64 {
        let first = self.records - 1 + offset;
        let newest = newest_key(self.records, seq_newest, offset);
        let zipf = match cache {
            Some(c) if c.first == first && c.newest == newest => c.zipf,
            _ => {
                let zipf = Zipfian::grown(first, newest, zeta(newest));
                *cache = Some(LatestZipfian {
                    first,
                    newest,
                    zipf,
                });
                zipf
            }
        };
        newest - zipf.sample(rng)
    }
}

/// `{ycsb_exponential N PERCENTILE FRAC}`: YCSB's `ExponentialGenerator(PERCENTILE, N * FRAC)`
/// as CoreWorkload uses it for `requestdistribution=exponential`: the newest key number minus
/// an exponential draw whose rate puts PERCENTILE % of the draws within the newest N * FRAC
/// keys, drawn again while the key would fall below 0. The newest key is as for
/// `{ycsb_latest}`.
#[derive(Debug, Clone)]
pub struct ExponentialLatest {
    records: u64,
    gamma: f64,
}

impl ExponentialLatest {
    /// None unless 0 < PERCENTILE < 100 and N * FRAC > 0 (YCSB's gamma would not be finite).
    pub fn new(records: u64, percentile: f64, frac: f64) -> Option<Self> {
        let range = records as f64 * frac;
        let gamma = -(1.0 - percentile / 100.0).ln() / range;
        (percentile > 0.0 && percentile < 100.0 && range > 0.0 && gamma.is_finite())
            .then_some(ExponentialLatest { records, gamma })
    }

    pub fn sample<R: RngCore>(&self, rng: &mut R, seq_newest: Option<u64>, offset: u64) -> u64 {
        let newest = newest_key(self.records, seq_newest, offset);
        loop {
            // YCSB's `(long) (-log(u) / gamma)` with u in (0, 1], so the draw is finite.
            let u = 1.0 - rng.random::<f64>();
            let back = (-u.ln() / self.gamma) as u64;
            if back <= newest {
                return newest - back;
            }
        }
    }
}

/// `{ycsb_sequential A..B}`: YCSB's `SequentialGenerator(A, B - 1)`: A, A + 1, ... B - 1, then
/// A again. YCSB's one counter is shared by all threads; here client c of N takes the numbers
/// c, c + N, ... of that cycle, so the clients together walk it in order.
#[derive(Debug, Clone)]
pub struct Sequential {
    pub lo: u64,
    pub hi: u64,
}

impl Sequential {
    /// The `n`-th number the whole cycle hands out.
    pub fn nth(&self, n: u64) -> u64 {
        self.lo + n % (self.hi - self.lo)
    }
}

mod counter;
pub use counter::{Drawn, InsertCounters};

#[cfg(test)]
mod java_reference;
#[cfg(test)]
mod tests;
