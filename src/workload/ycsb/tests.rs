//! Each chooser against ground truth: many draws through the workload language with a fixed
//! seed, key frequencies compared with the reference distribution by Pearson's chi-square test
//! at significance 0.001 (adjacent keys merged until each bin expects at least 5 draws).

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::*;
use crate::workload::template::{GenState, Template};

const ALPHA: f64 = 0.001;

/// Pairs of counts summed over adjacent bins until `enough` holds for the sums; what is left
/// at the end joins the last bin.
pub(super) fn merged(
    pairs: impl Iterator<Item = (f64, f64)>,
    enough: impl Fn(f64, f64) -> bool,
) -> Vec<(f64, f64)> {
    let mut bins: Vec<(f64, f64)> = Vec::new();
    let (mut x, mut y) = (0.0, 0.0);
    for (a, b) in pairs {
        x += a;
        y += b;
        if enough(x, y) {
            bins.push((x, y));
            (x, y) = (0.0, 0.0);
        }
    }
    match bins.last_mut() {
        Some(last) => {
            last.0 += x;
            last.1 += y;
        }
        None => bins.push((x, y)),
    }
    bins
}

/// The p-value of Pearson's chi-square test of `observed` counts against the probabilities
/// `expected` (summing to 1), adjacent bins merged until each expects at least 5.
fn chi_square_p(observed: &[u64], expected: &[f64]) -> f64 {
    assert_eq!(observed.len(), expected.len());
    let total = observed.iter().sum::<u64>() as f64;
    let pairs = observed.iter().zip(expected);
    let bins = merged(pairs.map(|(&o, &p)| (o as f64, p * total)), |_, e| e >= 5.0);
    let statistic: f64 = bins.iter().map(|(o, e)| (o - e) * (o - e) / e).sum();
    let df = (bins.len() - 1) as f64;
    ChiSquared::new(df).unwrap().sf(statistic)
}

/// `n` numbers drawn by the template `source` for the client `st`, with seed `seed`.
fn draws(source: &str, n: usize, seed: u64, st: &mut GenState) -> Vec<u64> {
    let mut params = BTreeMap::new();
    params.insert("records".to_string(), toml::Value::Integer(1000));
    let t = Template::compile(source, &params, &mut 0).unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut text = String::new();
    (0..n)
        .map(|_| {
            text.clear();
            t.render_str(&mut rng, st, &mut text);
            text.parse().unwrap()
        })
        .collect()
}

/// How often each of `lo..lo + len` was drawn; every draw must be in that range.
fn counts(values: &[u64], lo: u64, len: usize) -> Vec<u64> {
    let mut c = vec![0; len];
    for &v in values {
        assert!((lo..lo + len as u64).contains(&v), "{v} outside {lo}..");
        c[(v - lo) as usize] += 1;
    }
    c
}

/// The Zipf law over `n` ranks with exponent `s`: rank k (from 0) has weight (k + 1)^-s.
fn zipf_law(n: usize, s: f64) -> Vec<f64> {
    let w: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|x| x / sum).collect()
}

#[test]
fn fnvhash64_makes_ycsbs_hashed_keys() {
    // The first keys YCSB's load phase inserts with insertorder=hashed (its BasicDB output).
    let ycsb = [
        6284781860667377211,
        8517097267634966620,
        1820151046732198393,
    ];
    for (keynum, key) in ycsb.iter().enumerate() {
        assert_eq!(fnvhash64(keynum as i64), *key);
    }
    let keys = draws("{fnvhash64 seq}", 3, 1, &mut GenState::new(0, 1, 1));
    assert_eq!(keys, ycsb.map(|k| k as u64));
}

/// The numbers below 2^40 whose FNV-1a hash is `target`, met in the middle: the two lowest
/// bytes forward from the offset basis, the other six (the top three zero) back from `target`.
fn preimages_below_2_40(target: u64) -> Vec<u64> {
    let mut inverse = FNV_PRIME;
    for _ in 0..6 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(FNV_PRIME.wrapping_mul(inverse)));
    }
    assert_eq!(FNV_PRIME.wrapping_mul(inverse), 1);
    let step = |h: u64, byte: u64| (h ^ byte).wrapping_mul(FNV_PRIME);
    let mut forward: Vec<(u64, u64)> = (0..1u64 << 16)
        .map(|low| (step(step(FNV_OFFSET_BASIS, low & 0xff), low >> 8), low))
        .collect();
    forward.sort_unstable();
    let mut seen = vec![false; 1 << 20];
    for (h, _) in &forward {
        seen[(h >> 44) as usize] = true;
    }
    let back = |h: u64, byte: u64| h.wrapping_mul(inverse) ^ byte;
    let above = back(back(back(target, 0), 0), 0);
    let mut found = Vec::new();
    for b4 in 0..256 {
        let h4 = back(above, b4);
        for b3 in 0..256 {
            let h3 = back(h4, b3);
            for b2 in 0..256 {
                let h2 = back(h3, b2);
                if !seen[(h2 >> 44) as usize] {
                    continue;
                }
                let at = forward.partition_point(|(h, _)| *h < h2);
                for (_, low) in forward[at..].iter().take_while(|(h, _)| *h == h2) {
                    found.push(b4 << 32 | b3 << 24 | b2 << 16 | low);
                }
            }
        }
    }
    found
}

#[test]
fn no_key_number_below_2_pow_40_hashes_to_the_one_negative_value() {
    // The search finds a number it is given ...
    let known = 0x12_3456_789a;
    assert!(preimages_below_2_40(fnv1a(known as i64)).contains(&known));
    // ... and no number below 2^40 (the scrambled Zipfian's stay below 2^34) has the hash
    // whose Java `Math.abs` stays negative, so fnvhash64 is never negative for them.
    assert_eq!(preimages_below_2_40(1 << 63), Vec::<u64>::new());
}

#[test]
fn zeta_matches_the_term_by_term_sum_and_ycsbs_constant() {
    let mut sum = 0.0;
    for i in 1..=300_000u64 {
        sum += (i as f64).powf(-THETA);
        if [1, 2, 49, 50, 51, 1000, 123_457, 300_000].contains(&i) {
            assert!((zeta(i) - sum).abs() <= 1e-12 * sum, "zeta({i})");
        }
    }
    assert_eq!(zeta(0), 0.0);
    let ycsb = SCRAMBLED_ZETAN;
    assert!((zeta(10_000_000_000) - ycsb).abs() < 1e-10 * ycsb);
}

#[test]
fn ycsb_zipfian_matches_the_exact_distribution_of_ycsbs_algorithm() {
    let pmf = Zipfian::new(1000).pmf(1000);
    assert!((pmf.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let values = draws(
        "{ycsb_zipfian 5..1005}",
        200_000,
        1,
        &mut GenState::new(0, 1, 0),
    );
    let p = chi_square_p(&counts(&values, 5, 1000), &pmf);
    assert!(p >= ALPHA, "p = {p}");
}

#[test]
fn ycsb_zipfian_is_not_the_zipf_law() {
    // YCSB's approximation: exact for the two hottest ranks, then 17 % too often at the
    // third and 11 % at the fourth, and 3.5 % too seldom in the tail (1000 keys).
    let (ycsb, law) = (Zipfian::new(1000).pmf(1000), zipf_law(1000, THETA));
    let ratio = |k: usize| ycsb[k] / law[k];
    assert!((ratio(0) - 1.0).abs() < 1e-9 && (ratio(1) - 1.0).abs() < 1e-9);
    assert!((1.16..1.18).contains(&ratio(2)), "{}", ratio(2));
    assert!((1.10..1.12).contains(&ratio(3)), "{}", ratio(3));
    assert!((0.96..0.97).contains(&ratio(900)), "{}", ratio(900));
    // At 10^10 + 1 numbers (the scrambled generator's), 20 % at the third rank.
    let big = Zipfian::grown(SCRAMBLED_ITEMS, SCRAMBLED_ITEMS, SCRAMBLED_ZETAN);
    let third = big.pmf(3)[2] * SCRAMBLED_ZETAN * 3f64.powf(THETA);
    assert!((1.19..1.21).contains(&third), "{third}");
    // And the draws show it: the Zipf law is rejected.
    let values = draws(
        "{ycsb_zipfian 0..1000}",
        200_000,
        2,
        &mut GenState::new(0, 1, 0),
    );
    let p = chi_square_p(&counts(&values, 0, 1000), &law);
    assert!(p < ALPHA, "p = {p}");
}

#[test]
fn exact_zipf_matches_the_zipf_law() {
    for (source, s, n) in [
        ("{zipf 0..1000}", THETA, 1000),
        ("{zipf 1..101 1.5}", 1.5, 100),
    ] {
        let lo = if n == 1000 { 0 } else { 1 };
        let values = draws(source, 200_000, 3, &mut GenState::new(0, 1, 0));
        let p = chi_square_p(&counts(&values, lo, n), &zipf_law(n, s));
        assert!(p >= ALPHA, "{source}: p = {p}");
    }
}

/// The CDF of the sum of 12 uniforms on [0, 1) (Irwin and Hall's distribution), exactly:
/// (1/12!) Σ_{k ≤ x} (-1)^k C(12, k) (x - k)^12.
fn irwin_hall_12(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 12.0 {
        return 1.0;
    }
    let mut c = 1.0; // C(12, k)
    let mut sum = 0.0;
    for k in 0..=(x.floor() as i32) {
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        sum += sign * c * (x - f64::from(k)).powi(12);
        c = c * f64::from(12 - k) / f64::from(k + 1);
    }
    sum / (1..=12).map(f64::from).product::<f64>()
}

/// sysbench 1.0's `special` ids over 1..=100,000, against the two parts its C describes,
/// computed without drawing: a quarter of the draws are ⌊t · S / 12⌋ with S the sum of 12
/// uniforms (t = 99,999), three quarters ⌊u · (t / 100 + 1) + 0.495 t⌋ with u uniform on
/// [0.25, 1) (the uniform that chose the part). Bins every 1,000 ids, and every 25 over the
/// hot band.
#[test]
fn sysbench_special_matches_sysbenchs_two_parts() {
    let (lo, t) = (1u64, 99_999.0_f64);
    let values = draws(
        "{sysbench_special 1..100001}",
        200_000,
        5,
        &mut GenState::new(0, 1, 0),
    );
    let band = |u: f64| u * (t / 100.0 + 1.0) + 0.495 * t;
    let mut edges: Vec<u64> = (0..=100).map(|i| lo + i * 1000).collect();
    let (b0, b1) = (band(0.25).floor() as u64, band(1.0).ceil() as u64);
    edges.extend((b0..=b1).step_by(25).map(|e| lo + e));
    edges.sort_unstable();
    edges.dedup();
    // P(lo + ⌊y⌋ in [x0, x1)) = P(y in [x0 - lo, x1 - lo)) for either part's y.
    let mass = |y0: f64, y1: f64| {
        let gauss = irwin_hall_12(12.0 * y1 / t) - irwin_hall_12(12.0 * y0 / t);
        let u = |y: f64| ((y - 0.495 * t) / (t / 100.0 + 1.0)).clamp(0.25, 1.0);
        0.25 * gauss + (u(y1) - u(y0))
    };
    let mut observed = vec![0u64; edges.len() - 1];
    for &v in &values {
        assert!((lo..lo + 100_000).contains(&v), "{v}");
        observed[edges.partition_point(|&e| e <= v) - 1] += 1;
    }
    let expected: Vec<f64> = (edges.windows(2))
        .map(|w| mass((w[0] - lo) as f64, (w[1] - lo) as f64))
        .collect();
    assert!((expected.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    let p = chi_square_p(&observed, &expected);
    assert!(p >= ALPHA, "p = {p}");
    // And it is not the uniform draw it replaces: three in four ids in 1 % of the range.
    let hot = values
        .iter()
        .filter(|&&v| (lo + b0..=lo + b1).contains(&v))
        .count();
    assert!(hot as f64 > 0.75 * values.len() as f64, "{hot}");
}

/// The distribution of `gen`'s keys, from its first: the exact masses of the first million
/// Zipfian numbers, each put on its key through the hash; the rest (42 % of the mass, spread
/// over ten thousand million numbers) evenly over the keys: how unevenly the hash spreads it
/// (a standard deviation of about 0.14 % of a key's share at 1000 keys) is far under the
/// 4.5 % a key's count varies by in the tests' draws.
fn scrambled_pmf(gen: &ScrambledZipfian) -> Vec<f64> {
    let head = gen.zipf.pmf(1_000_000);
    let tail = 1.0 - head.iter().sum::<f64>();
    let mut pmf = vec![tail / gen.items as f64; gen.items as usize];
    for (n, p) in head.iter().enumerate() {
        pmf[(gen.key(n as u64) - gen.lo) as usize] += p;
    }
    pmf
}

#[test]
fn scrambled_matches_ycsbs_zipfian_hashed_onto_the_range() {
    let (lo, keys) = (100, 1000);
    let gen = ScrambledZipfian::new(lo, lo + keys);
    let expected = scrambled_pmf(&gen);
    let values = draws(
        "{ycsb_scrambled 100..1100}",
        500_000,
        4,
        &mut GenState::new(0, 1, 0),
    );
    let observed = counts(&values, lo, keys as usize);
    let p = chi_square_p(&observed, &expected);
    assert!(p >= ALPHA, "p = {p}");
    // The hottest key is where number 0 hashes, with 1/zeta(10^10) of the draws, whatever
    // the range: 3.8 %, where the Zipf law over 1000 keys gives 12.9 %.
    let hottest = gen.key(0) - lo;
    assert_eq!(
        Some(hottest as usize),
        (0..1000).max_by_key(|&k| observed[k])
    );
    assert!((expected[hottest as usize] - 1.0 / SCRAMBLED_ZETAN).abs() < 0.002);
}

#[test]
fn scrambled_keys_without_inserts_are_ycsbs_over_one_more_key() {
    // YCSB's ScrambledZipfianGenerator(0, 1000) has 1001 numbers: number 0 hashes to key
    // 144 (fnvhash64(0) % 1001), where over 1000 keys it would be 211. Key 1000 is above
    // the newest loaded key, so it is drawn again.
    let values = draws(
        "{ycsb_scrambled_keys records 1000 0.0}",
        100_000,
        16,
        &mut GenState::new(0, 1, 0),
    );
    // `counts` fails on any draw of 1000 or more.
    let c = counts(&values, 0, 1000);
    assert_eq!((0..1000).max_by_key(|&k| c[k]), Some(144));
    assert_eq!(fnvhash64(0) % 1001, 144);
    assert_eq!(fnvhash64(0) % 1000, 211);
}

#[test]
fn expected_new_keys_is_cores_int_cast() {
    assert_eq!(expected_new_keys(1000, 0.05), 100);
    assert_eq!(expected_new_keys(1000, 0.0005), 1);
    assert_eq!(expected_new_keys(1000, 0.000_49), 0, "0.98 truncated");
    assert_eq!(expected_new_keys(1000, 0.0), 0);
    assert_eq!(
        expected_new_keys(u64::MAX, 1.0),
        i32::MAX as u64,
        "saturated"
    );
    assert!(ScrambledKeys::new(0, 1000, 0.0).is_none());
    assert!(ScrambledKeys::new(u64::MAX - 5, 1000, 0.05).is_none());
}

/// Draws of `{ycsb_scrambled_keys records 1000 0.05}` (YCSB's E: 100 expected inserts, so
/// 1101 numbers) by the client `st` against the scrambled Zipfian's distribution over those
/// 1101 keys conditioned on keys up to `newest`, YCSB's redraw above the newest key.
fn scrambled_keys_match_reference(st: &mut GenState, newest: u64, seed: u64) {
    let values = draws("{ycsb_scrambled_keys records 1000 0.05}", 200_000, seed, st);
    let full = scrambled_pmf(&ScrambledZipfian::new(0, 1101));
    let kept = &full[..=newest as usize];
    let mass: f64 = kept.iter().sum();
    let expected: Vec<f64> = kept.iter().map(|p| p / mass).collect();
    let p = chi_square_p(&counts(&values, 0, newest as usize + 1), &expected);
    assert!(p >= ALPHA, "newest {newest}: p = {p}");
}

#[test]
fn scrambled_keys_are_ycsbs_scrambled_zipfian_up_to_the_newest_key() {
    let mut st = GenState::new(0, 1, 1);
    scrambled_keys_match_reference(&mut st, 999, 17);
    // After 50 inserts by this client its newest key is 1049: the inserted keys are drawn
    // too, the modulus stays 1101.
    draws("{seq records}", 50, 18, &mut st);
    scrambled_keys_match_reference(&mut st, 1049, 19);
}

#[test]
fn hotspot_matches_its_two_uniform_sets() {
    let values = draws(
        "{ycsb_hotspot 0..records 0.2 0.8}",
        100_000,
        5,
        &mut GenState::new(0, 1, 0),
    );
    let expected: Vec<f64> = (0..1000)
        .map(|k| if k < 200 { 0.8 / 200.0 } else { 0.2 / 800.0 })
        .collect();
    let p = chi_square_p(&counts(&values, 0, 1000), &expected);
    assert!(p >= ALPHA, "p = {p}");
    // Java's `(int)` cast: a hot set of more than 2^31 - 1 keys is cut to that.
    let big = Hotspot::new(0, 10_000_000_000, 0.5, 0.5).unwrap();
    assert_eq!(big.hot, i32::MAX as u64);
    assert!(Hotspot::new(0, 4, 0.2, 0.5).is_none());
}

/// Draws of `{ycsb_latest 1000}` against the newest key minus YCSB's Zipfian made for 999
/// numbers and grown to `newest`.
fn latest_matches_reference(st: &mut GenState, newest: u64, seed: u64) {
    let values = draws("{ycsb_latest records}", 100_000, seed, st);
    let offsets: Vec<u64> = values.iter().map(|v| newest - v).collect();
    let zipf = Zipfian::grown(999, newest, zeta(newest));
    let p = chi_square_p(&counts(&offsets, 0, newest as usize), &zipf.pmf(newest));
    assert!(p >= ALPHA, "newest {newest}: p = {p}");
    assert!(values.iter().all(|&v| (1..=newest).contains(&v)));
}

#[test]
fn latest_is_the_newest_key_minus_a_ycsb_zipfian() {
    let mut st = GenState::new(0, 1, 1);
    latest_matches_reference(&mut st, 999, 6);
    // After 500 inserts by this client, the newest key is 1499.
    draws("{seq records}", 500, 7, &mut st);
    latest_matches_reference(&mut st, 1499, 8);
}

#[test]
fn latest_follows_the_clients_own_seq_only() {
    // Client 1 of 4 took 1001 and 1005: its newest is 1005, the most frequent draw.
    let mut st = GenState::new(1, 4, 1);
    assert_eq!(draws("{seq records}", 2, 9, &mut st), [1001, 1005]);
    let values = draws("{ycsb_latest records}", 10_000, 10, &mut st);
    let c = counts(&values, 0, 1006);
    assert_eq!((0..1006).max_by_key(|&k| c[k]), Some(1005));
    assert_eq!(c[0], 0);
    // A sequence inside fnvhash64 counts: the keys are hashed, their numbers are not.
    let mut st = GenState::new(0, 1, 1);
    draws("{fnvhash64 seq records}", 1, 14, &mut st);
    let values = draws("{ycsb_latest records}", 10_000, 15, &mut st);
    assert_eq!(values.iter().max(), Some(&1000));
    // A session id's sequence is not a key: 5000 of them leave the newest at 999.
    let mut st = GenState::new(0, 1, 1);
    let sid = Template::compile("{sid}", &BTreeMap::new(), &mut 0).unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..5000 {
        sid.render_str(&mut rng, &mut st, &mut String::new());
    }
    assert_eq!(st.counters, [5000]);
    let values = draws("{ycsb_latest records}", 10_000, 12, &mut st);
    assert_eq!(values.iter().max(), Some(&999));
    // A growth study's batch starts where the last one ended.
    let mut st = GenState::new(0, 1, 0);
    st.offset = 500;
    let values = draws("{ycsb_latest records}", 10_000, 13, &mut st);
    assert_eq!(values.iter().max(), Some(&1499));
}

/// pgbench's `random_gaussian(1, 100, 2.5)` as `{gaussian 1..101 2.5}`: value 1 + k has the
/// normal law's mass on [-p + 2pk/n, -p + 2p(k+1)/n), the whole cut to [-p, p).
#[test]
fn gaussian_is_pgbenchs_cut_normal() {
    use statrs::distribution::Normal;
    let (n, p) = (100, 2.5);
    let normal = Normal::new(0.0, 1.0).unwrap();
    let mass = normal.cdf(p) - normal.cdf(-p);
    let edge = |k: usize| -p + 2.0 * p * k as f64 / n as f64;
    let expected: Vec<f64> = (0..n)
        .map(|k| (normal.cdf(edge(k + 1)) - normal.cdf(edge(k))) / mass)
        .collect();
    let values = draws(
        "{gaussian 1..101 2.5}",
        200_000,
        7,
        &mut GenState::new(0, 1, 0),
    );
    let p_value = chi_square_p(&counts(&values, 1, n), &expected);
    assert!(p_value > ALPHA, "p = {p_value}");
}

/// pgbench's `random_exponential(1, 100, 5.0)` as `{exponential 1..101 5.0}`: value 1 + k
/// has the mass of [k/n, (k+1)/n) under the exponential law with rate p cut at 1.
#[test]
fn exponential_is_pgbenchs_cut_exponential() {
    let (n, p) = (100, 5.0_f64);
    let cdf = |x: f64| (1.0 - (-p * x).exp()) / (1.0 - (-p).exp());
    let expected: Vec<f64> = (0..n)
        .map(|k| cdf((k + 1) as f64 / n as f64) - cdf(k as f64 / n as f64))
        .collect();
    let values = draws(
        "{exponential 1..101 5.0}",
        200_000,
        8,
        &mut GenState::new(0, 1, 0),
    );
    let p_value = chi_square_p(&counts(&values, 1, n), &expected);
    assert!(p_value > ALPHA, "p = {p_value}");
}

/// TPC-C's NURand(255, 0, 999) with C = 123 as `{nurand 255 0..1000 123}`: the exact law
/// enumerates every pair of the two uniform draws, (((a | b) + C) % 1000) + 0 for a in
/// 0..=255 and b in 0..=999.
#[test]
fn nurand_is_tpccs_law() {
    let (a_max, n, c) = (255_u64, 1000_u64, 123_u64);
    let mut expected = vec![0.0; n as usize];
    let share = 1.0 / ((a_max + 1) * n) as f64;
    for a in 0..=a_max {
        for b in 0..n {
            expected[(((a | b) + c) % n) as usize] += share;
        }
    }
    let values = draws(
        "{nurand 255 0..1000 123}",
        200_000,
        9,
        &mut GenState::new(0, 1, 0),
    );
    let p_value = chi_square_p(&counts(&values, 0, n as usize), &expected);
    assert!(p_value > ALPHA, "p = {p_value}");
    // Item ids: NURand(8191, 1, 100000) stays in 1..=100000.
    let values = draws(
        "{nurand 8191 1..100001 4321}",
        10_000,
        10,
        &mut GenState::new(0, 1, 0),
    );
    assert!(values.iter().all(|v| (1..=100_000).contains(v)));
}

/// `{ycsb_exponential 1000 95 0.8571428571}` (YCSB's defaults) against the exact law of YCSB's
/// algorithm: the newest key (999) minus the floor of an exponential draw of rate gamma, drawn
/// again above 999, so back k has weight e^(-gamma k) (1 - e^(-gamma)) renormalised on 0..=999.
#[test]
fn exponential_is_ycsbs_exponential_back_from_the_newest_key() {
    let values = draws(
        "{ycsb_exponential records 95 0.8571428571}",
        100_000,
        21,
        &mut GenState::new(0, 1, 0),
    );
    let gamma = -(0.05f64).ln() / (1000.0 * 0.8571428571);
    let weights: Vec<f64> = (0..1000)
        .map(|key| (-gamma * (999 - key) as f64).exp() * (1.0 - (-gamma).exp()))
        .collect();
    let total: f64 = weights.iter().sum();
    let expected: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let p = chi_square_p(&counts(&values, 0, 1000), &expected);
    assert!(p >= ALPHA, "p = {p}");
    // 95 % of the untruncated draws fall within the newest 857 keys; after redrawing the 3 %
    // beyond key 0 that share is 0.95 / (1 - 0.05^(1000/857.14)) = 0.9798.
    let near = values.iter().filter(|&&v| v > 999 - 857).count() as f64 / 1e5;
    assert!((near - 0.9798).abs() < 0.003, "{near}");
    assert!(ExponentialLatest::new(1000, 100.0, 0.8).is_none());
    assert!(ExponentialLatest::new(1000, 95.0, 0.0).is_none());
}

#[test]
fn exponential_follows_the_clients_newest_seq() {
    let mut st = GenState::new(0, 1, 1);
    st.newest = Some(1499);
    let values = draws(
        "{ycsb_exponential records 95 0.8571428571}",
        10_000,
        22,
        &mut st,
    );
    assert!(values.iter().all(|&v| v <= 1499));
    assert!(values.iter().filter(|&&v| v > 999).count() > 8_000);
}

/// Two clients walk `{ycsb_sequential 0..5}` in turns and start again at 0 after 4, as YCSB's
/// one shared SequentialGenerator hands out 0, 1, 2, 3, 4, 0, ...
#[test]
fn sequential_cycles_the_range_with_clients_taking_turns() {
    let first = draws("{ycsb_sequential 3..8}", 5, 0, &mut GenState::new(0, 2, 1));
    let second = draws("{ycsb_sequential 3..8}", 5, 0, &mut GenState::new(1, 2, 1));
    assert_eq!(first, [3, 5, 7, 4, 6]);
    assert_eq!(second, [4, 6, 3, 5, 7]);
}

#[test]
fn latest_follows_the_inserts_the_clients_acknowledged() {
    let shared = std::sync::Arc::new(super::InsertCounters::new(1, 0, 1));
    let mut a = GenState::sharing(0, 2, 1, std::sync::Arc::clone(&shared));
    let mut b = GenState::sharing(1, 2, 1, shared);
    // One counter: a takes 1000 and 1001, b 1002; no read sees them before they end.
    assert_eq!(draws("{ycsb_counter records}", 2, 1, &mut a), [1000, 1001]);
    assert_eq!(draws("{ycsb_counter records}", 1, 1, &mut b), [1002]);
    let newest = |st: &mut GenState, seed| {
        let values = draws("{ycsb_latest records}", 10_000, seed, st);
        let c = counts(&values, 0, 1003);
        (0..1003).max_by_key(|&k| c[k]).unwrap()
    };
    assert_eq!(newest(&mut b, 2), 999);
    // b's insert has ended, a's two have not: 1002 is not the newest yet.
    b.acknowledge();
    assert_eq!(newest(&mut b, 3), 999);
    a.acknowledge();
    assert_eq!(newest(&mut a, 4), 1002);
    assert_eq!(newest(&mut b, 5), 1002);
    // The zipfian chooser draws again above the same newest key.
    let keys = draws("{ycsb_scrambled_keys records 100 1}", 10_000, 6, &mut b);
    assert!(keys.iter().all(|&k| k <= 1002));
    assert!(keys.iter().any(|&k| k > 999));
}
