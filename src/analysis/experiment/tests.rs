use super::*;

fn factors(levels: &[usize]) -> Vec<FactorLevels> {
    let letters = design::letters(levels.len()).unwrap();
    levels
        .iter()
        .zip(letters)
        .map(|(&n, l)| FactorLevels {
            name: l.to_lowercase(),
            letter: l,
            levels: (0..n).map(|i| format!("l{i}")).collect(),
        })
        .collect()
}

/// Responses without noise from an additive model: 100 + 10·A + 4·B + 2·AB (signs ±1),
/// two replicates that differ by ±1.
#[test]
fn a_noise_free_two_level_model_is_recovered_exactly() {
    let d = Design::full(factors(&[2, 2, 2])).unwrap();
    let ys: Vec<Vec<f64>> = d
        .cells
        .iter()
        .map(|c| {
            let s = |f: usize| if c[f] == 1 { 1.0 } else { -1.0 };
            let y = 100.0 + 10.0 * s(0) + 4.0 * s(1) + 2.0 * s(0) * s(1);
            vec![y - 1.0, y + 1.0]
        })
        .collect();
    let a = analyse(
        &d,
        &ys,
        &Options::new("y", "", Better::Higher, Scale::Linear),
    )
    .unwrap();
    let effect = |t: &str| a.effects.iter().find(|e| e.term == t).unwrap();
    // An effect is the change from − to +: twice the model's coefficient.
    assert!((effect("A").contrast.as_ref().unwrap().estimate - 20.0).abs() < 1e-9);
    assert!((effect("B").contrast.as_ref().unwrap().estimate - 8.0).abs() < 1e-9);
    assert!((effect("AB").contrast.as_ref().unwrap().estimate - 4.0).abs() < 1e-9);
    assert!(effect("C").contrast.as_ref().unwrap().estimate.abs() < 1e-9);
    // SST = N·Σq² + SSE: 16·(100 + 16 + 4) + 16·1.
    assert!((a.total_ss - (16.0 * 120.0 + 16.0)).abs() < 1e-6);
    let shares: f64 = a.effects.iter().map(|e| e.share).sum::<f64>() + a.error.share;
    assert!((shares - 1.0).abs() < 1e-9);
    assert_eq!(a.error.df, 8);
    assert_eq!(effect("A").significant, Some(true));
    assert_eq!(effect("C").significant, Some(false));
    assert_eq!(a.best.levels[..2], ["l1", "l1"]);
    assert!(
        a.summary[0].starts_with("a (l0 → l1) explains 83 % of the variation in y"),
        "{:?}",
        a.summary
    );
}

/// A three-level factor: deviations from the grand mean, SS and df from the marginal means.
#[test]
fn more_levels_give_deviations_and_their_degrees_of_freedom() {
    let d = Design::full(factors(&[3, 2])).unwrap();
    let ys: Vec<Vec<f64>> = d
        .cells
        .iter()
        .map(|c| {
            let y = [0.0, 5.0, 10.0][c[0]] + if c[1] == 1 { 1.0 } else { 0.0 };
            vec![y - 0.5, y + 0.5]
        })
        .collect();
    let a = analyse(
        &d,
        &ys,
        &Options::new("y", "", Better::Higher, Scale::Linear),
    )
    .unwrap();
    let main = &a.effects[0];
    assert_eq!((main.term.as_str(), main.df), ("A", 2));
    let devs: Vec<f64> = main.levels.iter().map(|l| l.estimate.estimate).collect();
    for (got, want) in devs.iter().zip([-5.0, 0.0, 5.0]) {
        assert!((got - want).abs() < 1e-9, "{devs:?}");
    }
    assert_eq!(a.effects[2].df, 2, "AB has (3−1)(2−1) degrees of freedom");
    assert_eq!(a.main_effects[0].means.len(), 3);
}

/// One replicate: no error unless asked to pool, and then the pooled interaction is the noise.
#[test]
fn one_replicate_has_no_error_unless_interactions_are_pooled() {
    let d = Design::full(factors(&[2, 2, 2])).unwrap();
    let ys: Vec<Vec<f64>> = d
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| vec![c[0] as f64 * 10.0 + i as f64 * 0.1])
        .collect();
    let plain = analyse(
        &d,
        &ys,
        &Options::new("y", "", Better::Higher, Scale::Linear),
    )
    .unwrap();
    assert_eq!(plain.intervals, IntervalMethod::None);
    assert!(
        plain.warnings[0].contains("no error estimate"),
        "{:?}",
        plain.warnings
    );
    assert!(plain
        .effects
        .iter()
        .all(|e| e.significant.is_none() && e.p.is_none()));
    let mut o = Options::new("y", "", Better::Higher, Scale::Linear);
    o.pool = Some(3);
    let pooled = analyse(&d, &ys, &o).unwrap();
    assert_eq!(pooled.error.df, 1);
    assert_eq!(pooled.error.pooled, ["ABC"]);
    assert!(pooled.effects[0].p.is_some());
}

#[test]
fn the_log_scale_refuses_zero() {
    let d = Design::full(factors(&[2])).unwrap();
    let e = analyse(
        &d,
        &[vec![0.0], vec![1.0]],
        &Options::new("errors", "share", Better::Lower, Scale::Log),
    )
    .unwrap_err();
    assert!(e.contains("--scale linear"), "{e}");
}
