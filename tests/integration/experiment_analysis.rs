//! The analysis of factorial experiments against ground truth, without runs: responses drawn
//! from a known model (additive, and multiplicative analysed on the log scale), hundreds of
//! seeded repetitions. The 95 % intervals must cover the true effects in about 95 % of them
//! and a factor without effect must be called significant in about 5 % (each inside three
//! binomial standard errors); a fraction must alias exactly the effects its generators say.

use loadrig::analysis::experiment::{
    analyse, design, Better, Design, FactorLevels, IntervalMethod, Options, ResponseAnalysis, Scale,
};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

const REPS: usize = 400;

fn factors(levels: &[usize]) -> Vec<FactorLevels> {
    levels
        .iter()
        .zip(design::letters(levels.len()).unwrap())
        .map(|(&n, l)| FactorLevels {
            name: l.to_lowercase(),
            letter: l,
            levels: (0..n).map(|i| format!("{i}")).collect(),
        })
        .collect()
}

fn s(cell: &[usize], f: usize) -> f64 {
    if cell[f] == 1 {
        1.0
    } else {
        -1.0
    }
}

/// Within three standard errors of a binomial proportion `p` over `n` trials.
fn near(count: usize, n: usize, p: f64, what: &str) {
    let se = (p * (1.0 - p) / n as f64).sqrt();
    let got = count as f64 / n as f64;
    assert!(
        (got - p).abs() <= 3.0 * se,
        "{what}: {got:.3} of {n} repetitions, expected {p} ± {:.3}",
        3.0 * se
    );
}

fn covers(a: &ResponseAnalysis, term: &str, truth: f64) -> bool {
    let e = a.effects.iter().find(|e| e.term == term).unwrap();
    let c = e.contrast.as_ref().unwrap();
    c.low.unwrap() <= truth && truth <= c.high.unwrap()
}

fn significant(a: &ResponseAnalysis, term: &str) -> bool {
    a.effects
        .iter()
        .find(|e| e.term == term)
        .unwrap()
        .significant
        .unwrap()
}

/// Run `REPS` seeded repetitions of a 2^3 design with 3 replicates; count, per term, how
/// often the interval covers the true effect, and how often C (no effect) is significant.
fn coverage(scale: Scale, truth: [(&str, f64); 4], draw: impl Fn(&[usize], &mut SmallRng) -> f64) {
    let d = Design::full(factors(&[2, 2, 2])).unwrap();
    let mut rng = SmallRng::seed_from_u64(54);
    let mut covered = [0usize; 4];
    let mut null_called = 0;
    for rep in 0..REPS {
        let ys: Vec<Vec<f64>> = d
            .cells
            .iter()
            .map(|c| (0..3).map(|_| draw(c, &mut rng)).collect())
            .collect();
        let mut o = Options::new("y", "", Better::Higher, scale);
        o.intervals = loadrig::analysis::experiment::Intervals::T;
        o.seed = rep as u64;
        let a = analyse(&d, &ys, &o).unwrap();
        assert_eq!(a.intervals, IntervalMethod::T);
        for (k, (term, t)) in truth.iter().enumerate() {
            covered[k] += usize::from(covers(&a, term, *t));
        }
        null_called += usize::from(significant(&a, "C"));
    }
    for (k, (term, _)) in truth.iter().enumerate() {
        near(covered[k], REPS, 0.95, &format!("coverage of {term}"));
    }
    near(null_called, REPS, 0.05, "C (no effect) called significant");
}

#[test]
fn additive_effects_are_covered_and_a_null_factor_is_rarely_called() {
    // y = 50 + 3·A − 1.5·B + 1·AB + noise: effects (− to +) 6, −3, 2, and 0 for C.
    let noise = Normal::new(0.0, 2.0).unwrap();
    coverage(
        Scale::Linear,
        [("A", 6.0), ("B", -3.0), ("AB", 2.0), ("C", 0.0)],
        |c, rng| 50.0 + 3.0 * s(c, 0) - 1.5 * s(c, 1) + s(c, 0) * s(c, 1) + noise.sample(rng),
    );
}

#[test]
fn multiplicative_effects_are_covered_on_the_log_scale() {
    // y = 100 · 1.5^[A+] · 0.8^[B+] · e^noise: on the log scale the effects are ln 1.5,
    // ln 0.8, and 0 for the interaction and for C.
    let noise = Normal::<f64>::new(0.0, 0.1).unwrap();
    coverage(
        Scale::Log,
        [
            ("A", 1.5f64.ln()),
            ("B", 0.8f64.ln()),
            ("AB", 0.0),
            ("C", 0.0),
        ],
        |c, rng| {
            let a: f64 = if c[0] == 1 { 1.5 } else { 1.0 };
            let b = if c[1] == 1 { 0.8 } else { 1.0 };
            100.0 * a * b * noise.sample(rng).exp()
        },
    );
}

#[test]
fn a_null_factor_with_three_levels_is_called_in_about_five_percent() {
    let d = Design::full(factors(&[3, 2])).unwrap();
    let noise = Normal::new(0.0, 1.0).unwrap();
    let mut rng = SmallRng::seed_from_u64(3);
    let mut called = 0;
    for _ in 0..REPS {
        let ys: Vec<Vec<f64>> = d
            .cells
            .iter()
            .map(|c| {
                (0..3)
                    .map(|_| 10.0 + 2.0 * s(c, 1) + noise.sample(&mut rng))
                    .collect()
            })
            .collect();
        let mut o = Options::new("y", "", Better::Higher, Scale::Linear);
        o.intervals = loadrig::analysis::experiment::Intervals::T;
        let a = analyse(&d, &ys, &o).unwrap();
        let main = &a.effects[0];
        assert_eq!((main.term.as_str(), main.df), ("A", 2));
        called += usize::from(main.significant == Some(true));
        assert_eq!(a.effects[1].significant, Some(true), "B moves y by 4 σ");
    }
    near(
        called,
        REPS,
        0.05,
        "a three-level null factor called significant",
    );
}

/// With skewed (log-normal) noise the residuals fail the normality check in most
/// repetitions, where `auto` chooses the bootstrap's intervals; those still cover the true
/// effect in about 95 % (a residual bootstrap with 24 error degrees of freedom runs a little
/// short: the band is 5 standard errors below, 3 above).
#[test]
fn skewed_noise_switches_to_the_bootstrap_which_still_covers() {
    let d = Design::full(factors(&[2, 2, 2])).unwrap();
    let noise = rand_distr::LogNormal::new(0.0, 0.8).unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    let reps: usize = 150;
    let (mut not_normal, mut covered) = (0, 0);
    for rep in 0..reps {
        let ys: Vec<Vec<f64>> = d
            .cells
            .iter()
            .map(|c| {
                (0..4)
                    .map(|_| 20.0 + 2.0 * s(c, 0) + noise.sample(&mut rng))
                    .collect()
            })
            .collect();
        let mut o = Options::new("y", "", Better::Higher, Scale::Linear);
        o.seed = rep as u64;
        o.resamples = 1000;
        o.intervals = loadrig::analysis::experiment::Intervals::Bootstrap;
        let a = analyse(&d, &ys, &o).unwrap();
        assert_eq!(a.intervals, IntervalMethod::Bootstrap);
        not_normal += usize::from(!a.residuals.normality.as_ref().unwrap().passed);
        covered += usize::from(covers(&a, "A", 4.0));
    }
    assert!(
        not_normal > reps / 2,
        "normality failed in {not_normal} of {reps}"
    );
    let se = (0.95 * 0.05 / reps as f64).sqrt();
    let got = covered as f64 / reps as f64;
    assert!(
        got >= 0.95 - 5.0 * se && got <= 0.95 + 3.0 * se,
        "bootstrap coverage {got:.3} over {reps}"
    );
    // Under `auto` a failed normality check chooses the bootstrap.
    let ys: Vec<Vec<f64>> = d
        .cells
        .iter()
        .map(|c| {
            (0..4)
                .map(|_| 20.0 + 2.0 * s(c, 0) + noise.sample(&mut rng))
                .collect()
        })
        .collect();
    let a = analyse(
        &d,
        &ys,
        &Options::new("y", "", Better::Higher, Scale::Linear),
    )
    .unwrap();
    let failed = !a.residuals.normality.as_ref().unwrap().passed;
    assert_eq!(a.intervals == IntervalMethod::Bootstrap, failed);
}

#[test]
fn a_half_fraction_aliases_exactly_what_its_generator_says() {
    let d = Design::fractional(factors(&[2, 2, 2, 2]), &["D=ABC".into()]).unwrap();
    assert_eq!(d.cells.len(), 8);
    assert_eq!(d.defining_text().as_deref(), Some("I = ABCD"));
    let chains: Vec<String> = d.terms().iter().map(|t| d.alias_text(t)).collect();
    assert_eq!(
        chains,
        ["A = BCD", "B = ACD", "C = ABD", "D = ABC", "AB = CD", "AC = BD", "AD = BC"]
    );
    // Only the BCD interaction acts (+3 per sign, so its effect is 6) and CD (+1, effect 2):
    // the estimate named A is BCD's, the one named AB is CD's, every other is zero.
    let ys: Vec<Vec<f64>> = d
        .cells
        .iter()
        .map(|c| vec![10.0 + 3.0 * s(c, 1) * s(c, 2) * s(c, 3) + s(c, 2) * s(c, 3)])
        .collect();
    let a = analyse(
        &d,
        &ys,
        &Options::new("y", "", Better::Higher, Scale::Linear),
    )
    .unwrap();
    for e in &a.effects {
        let want = match e.term.as_str() {
            "A" => 6.0,
            "AB" => 2.0,
            _ => 0.0,
        };
        let got = e.contrast.as_ref().unwrap().estimate;
        assert!((got - want).abs() < 1e-9, "{}: {got}", e.term);
    }
    assert_eq!(a.effects[0].aliases, ["BCD"]);
    // A quarter fraction: I = ABD = ACE = BCDE, so A = BD = CE = ABCDE.
    let q = Design::fractional(factors(&[2, 2, 2, 2, 2]), &["D=AB".into(), "E=AC".into()]).unwrap();
    assert_eq!(q.defining_text().as_deref(), Some("I = ABD = ACE = BCDE"));
    assert_eq!(q.alias_text(&q.terms()[0]), "A = BD = CE = ABCDE");
    assert_eq!(q.resolution(), Some(3));
    for cell in &q.cells {
        assert_eq!(s(cell, 3), s(cell, 0) * s(cell, 1), "D = AB in every run");
        assert_eq!(s(cell, 4), s(cell, 0) * s(cell, 2), "E = AC in every run");
    }
}
