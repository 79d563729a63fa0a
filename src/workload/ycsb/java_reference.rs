//! loadrig's YCSB key choosers against YCSB 0.17.0's own Java generators.
//!
//! Each fixture in `reference/` holds how often each key of 0..999 came up in 100 million draws
//! of a YCSB generator or of CoreWorkload's key chooser, named in its header. They were made by
//! `scripts/ycsb-reference.sh`, which runs our `scripts/ycsb-reference/YcsbReference.java`
//! against YCSB's core jar from Maven Central; YCSB draws from `ThreadLocalRandom`, which
//! cannot be seeded, so they are frequencies, not sequences.
//!
//! Each test draws the same chooser through the workload language with a fixed seed and
//! compares the two samples by Pearson's chi-square test of homogeneity at significance 0.001
//! (adjacent keys merged until every bin expects at least 5 draws in each sample). Unlike the
//! tests in `tests.rs`, nothing here comes from loadrig's own formulas, so a mistake shared by
//! a generator and its closed form cannot pass; and `Zipfian::pmf`, the closed form those
//! tests use, is itself checked against the Java draws (Pearson's goodness-of-fit test at the
//! same significance). The power test shows that near misses are rejected at these sample
//! sizes: the exact Zipf law, the scrambled Zipfian without CoreWorkload's extra key, the
//! latest chooser's Zipfian over one number too many, and a hotspot whose hot keys get 0.6 %
//! fewer draws.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::Zipfian;
use crate::workload::template::{GenState, Template};

const ALPHA: f64 = 0.001;
const KEYS: usize = 1000;
/// loadrig's draws per case. The Java samples are 25 times larger, so the test has nearly
/// the power of a one-sample test of this many draws against YCSB's true law: at df = 999
/// it rejects, almost surely, a law whose noncentrality n * sum((p - q)^2 / p) is 400 or
/// more, e.g. 0.4 % of the draws moved from the hot set to the cold one in the hotspot.
const DRAWS: usize = 4_000_000;

const ZIPFIAN: &str = include_str!("reference/zipfian.txt");
const SCRAMBLED: &str = include_str!("reference/scrambled.txt");
const SCRAMBLED_KEYS: &str = include_str!("reference/scrambled_keys.txt");
const LATEST: &str = include_str!("reference/latest.txt");
const HOTSPOT: &str = include_str!("reference/hotspot.txt");
const EXPONENTIAL: &str = include_str!("reference/exponential.txt");

/// A fixture's count for each key of 0..KEYS; its `# draws N` header must match their sum.
fn fixture(text: &str) -> Vec<u64> {
    let mut counts = Vec::with_capacity(KEYS);
    let mut draws = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# draws ") {
            let n = rest.split(';').next().unwrap();
            draws = Some(n.parse::<u64>().unwrap());
        } else if !line.starts_with('#') {
            let (key, count) = line.split_once(' ').unwrap();
            assert_eq!(key.parse::<usize>().unwrap(), counts.len(), "keys in order");
            counts.push(count.parse().unwrap());
        }
    }
    assert_eq!(counts.len(), KEYS);
    assert_eq!(Some(counts.iter().sum()), draws);
    counts
}

/// How often loadrig's template `source` drew each key of 0..KEYS in `n` draws with `seed`
/// (records = 1000, one client that has inserted nothing); every draw must be a key.
fn loadrig_counts(source: &str, n: usize, seed: u64) -> Vec<u64> {
    let mut params = BTreeMap::new();
    params.insert("records".to_string(), toml::Value::Integer(KEYS as i64));
    let t = Template::compile(source, &params, &mut 0).unwrap();
    let mut st = GenState::new(0, 1, 0);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut text = String::new();
    let mut counts = vec![0; KEYS];
    for _ in 0..n {
        text.clear();
        t.render_str(&mut rng, &mut st, &mut text);
        let key: usize = text.parse().unwrap();
        assert!(key < KEYS, "{source} drew {key}");
        counts[key] += 1;
    }
    counts
}

/// Pearson's chi-square statistic of homogeneity of two samples' key counts and its critical
/// value at ALPHA. Adjacent keys are merged until the bin expects at least 5 draws in each
/// sample (what is left at the end joins the last bin); df = bins - 1.
fn homogeneity(a: &[u64], b: &[u64]) -> (f64, f64) {
    assert_eq!(a.len(), b.len());
    let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let smaller = na.min(nb) / (na + nb);
    let pairs = a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64));
    let bins = super::tests::merged(pairs, |x, y| (x + y) * smaller >= 5.0);
    let statistic: f64 = bins
        .iter()
        .map(|&(x, y)| {
            let (ea, eb) = ((x + y) * na / (na + nb), (x + y) * nb / (na + nb));
            (x - ea).powi(2) / ea + (y - eb).powi(2) / eb
        })
        .sum();
    let df = (bins.len() - 1) as f64;
    (
        statistic,
        ChiSquared::new(df).unwrap().inverse_cdf(1.0 - ALPHA),
    )
}

/// loadrig's `source` drawn DRAWS times with `seed` is not rejected as a sample of the same
/// law as the Java fixture `java`.
fn same_as_java(name: &str, java: &str, source: &str, seed: u64) {
    let (statistic, critical) = homogeneity(&fixture(java), &loadrig_counts(source, DRAWS, seed));
    println!("{name}: chi-square {statistic:.1}, critical {critical:.1}");
    assert!(
        statistic <= critical,
        "{name}: {source} differs from YCSB's: chi-square {statistic:.1} > {critical:.1}"
    );
}

#[test]
fn ycsb_zipfian_matches_javas_zipfian_generator() {
    same_as_java("zipfian", ZIPFIAN, "{ycsb_zipfian 0..1000}", 101);
}

#[test]
fn ycsb_scrambled_matches_javas_scrambled_zipfian_generator() {
    same_as_java("scrambled", SCRAMBLED, "{ycsb_scrambled 0..1000}", 102);
}

#[test]
fn ycsb_scrambled_keys_matches_core_workloads_zipfian_chooser() {
    same_as_java(
        "scrambled_keys",
        SCRAMBLED_KEYS,
        "{ycsb_scrambled_keys records 1000 0}",
        103,
    );
}

#[test]
fn ycsb_latest_matches_core_workloads_latest_chooser() {
    same_as_java("latest", LATEST, "{ycsb_latest records}", 104);
}

#[test]
fn ycsb_hotspot_matches_core_workloads_hotspot_chooser() {
    same_as_java("hotspot", HOTSPOT, "{ycsb_hotspot 0..records 0.2 0.8}", 105);
}

#[test]
fn ycsb_exponential_matches_core_workloads_exponential_chooser() {
    same_as_java(
        "exponential",
        EXPONENTIAL,
        "{ycsb_exponential records 95 0.8571428571}",
        106,
    );
}

/// Pearson's chi-square statistic of `counts` against the probabilities `pmf` and its
/// critical value at ALPHA (every bin here expects far more than 5 draws; df = bins - 1).
fn goodness_of_fit(counts: &[u64], pmf: &[f64]) -> (f64, f64) {
    let n = counts.iter().sum::<u64>() as f64;
    let statistic: f64 = counts
        .iter()
        .zip(pmf)
        .map(|(&o, &p)| {
            assert!(n * p >= 5.0);
            (o as f64 - n * p).powi(2) / (n * p)
        })
        .sum();
    let df = (counts.len() - 1) as f64;
    (
        statistic,
        ChiSquared::new(df).unwrap().inverse_cdf(1.0 - ALPHA),
    )
}

/// `Zipfian::pmf`, the closed form `tests.rs` checks the Zipfian and latest choosers with,
/// fits YCSB's own 100 million draws.
#[test]
fn zipfian_pmf_fits_javas_draws() {
    let zipfian = fixture(ZIPFIAN);
    // The latest chooser's key 999 - z for Zipfian number z of 0..999; key 0 never comes.
    let latest = fixture(LATEST);
    assert_eq!(latest[0], 0);
    let latest: Vec<u64> = latest[1..].iter().rev().copied().collect();
    for (name, counts, pmf) in [
        ("zipfian pmf", zipfian, Zipfian::new(1000).pmf(1000)),
        ("latest pmf", latest, Zipfian::new(999).pmf(999)),
    ] {
        let (statistic, critical) = goodness_of_fit(&counts, &pmf);
        println!("{name}: chi-square {statistic:.1}, critical {critical:.1}");
        assert!(
            statistic <= critical,
            "{name}: {statistic:.1} > {critical:.1}"
        );
    }
}

/// The test has power: choosers close to YCSB's but not it are rejected.
#[test]
fn near_misses_are_rejected() {
    let zipf_law = loadrig_counts("{zipf 0..1000}", DRAWS, 107);
    let scrambled_1000 = loadrig_counts("{ycsb_scrambled 0..1000}", DRAWS, 108);
    // The newest key minus a Zipfian over 1000 numbers, where YCSB's latest chooser takes
    // one over 999: key 0, which YCSB never draws, gets 0.013 % of the draws.
    let mut latest_1000 = loadrig_counts("{ycsb_zipfian 0..1000}", DRAWS, 109);
    latest_1000.reverse();
    let hotspot_795 = loadrig_counts("{ycsb_hotspot 0..records 0.2 0.795}", DRAWS, 110);
    for (name, java, counts) in [
        // YCSB's approximation draws rank 3 17 % more often than the Zipf law.
        ("zipf law", ZIPFIAN, zipf_law),
        // CoreWorkload's is over 1001 keys and redraws key 1000: the hash puts the hot
        // numbers on other keys.
        ("scrambled over 1000", SCRAMBLED_KEYS, scrambled_1000),
        ("latest over 1000", LATEST, latest_1000),
        // 79.5 % of the draws on the hot set, not 80 %: a noncentrality of about 600.
        ("hotspot 0.795", HOTSPOT, hotspot_795),
    ] {
        let (statistic, critical) = homogeneity(&fixture(java), &counts);
        println!("{name}: chi-square {statistic:.1}, critical {critical:.1}");
        assert!(
            statistic > critical,
            "{name}: {statistic:.1} <= {critical:.1}"
        );
    }
}
