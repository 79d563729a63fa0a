//! Where a run reaches its steady state: the MSER-5 truncation rule for `--warmup auto`.
//!
//! MSER (Marginal Standard Error Rule): K. Preston White, Jr., "An effective truncation
//! heuristic for bias reduction in simulation output", Simulation 69(6), 1997, 323-334;
//! MSER-5 applies it to means of batches of 5 observations (White, Cobb & Spratt, "A
//! comparison of five steady-state truncation heuristics for simulation", Proceedings of
//! the 2000 Winter Simulation Conference, 755-760).
//!
//! For the batch means Y₁..Y_m, truncating the first d leaves the mean Ȳ(d) of the rest, and
//! MSER(d) = Σ_{i>d} (Y_i − Ȳ(d))² / (m − d)². The truncation point is the d that minimises
//! it, searched over the first half of the series only (White's rule: the statistic is
//! unstable over the last few batches). A minimum at the very edge of that half means the
//! series may still have been drifting there: the run is marked as not settled. The
//! observations here are the successful operations per interval.

/// Observations per batch in MSER-5.
pub const BATCH: usize = 5;
/// MSER-5 needs at least this many batches; a shorter series is judged interval by
/// interval (MSER, batches of 1).
pub const MIN_BATCHES: usize = 4;

/// The truncation MSER chose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truncation {
    /// Observations to cut from the start.
    pub cut: usize,
    /// Observations per batch used (5, or 1 for a short series).
    pub batch: usize,
    /// False when the minimum fell at the end of the first half: it may not have settled.
    pub settled: bool,
}

/// MSER over batch means of `batch` observations of `series`; `None` for fewer than two
/// batches. A trailing part batch is left out.
pub fn mser(series: &[f64], batch: usize) -> Option<Truncation> {
    let batch = batch.max(1);
    let means: Vec<f64> = series
        .chunks_exact(batch)
        .map(|c| c.iter().sum::<f64>() / batch as f64)
        .collect();
    let m = means.len();
    if m < 2 {
        return None;
    }
    let statistic = |d: usize| {
        let rest = &means[d..];
        let n = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / n;
        rest.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n * n)
    };
    let half = m / 2;
    let (best, _) =
        (0..=half)
            .map(|d| (d, statistic(d)))
            .fold(
                (0, f64::INFINITY),
                |acc, (d, s)| if s < acc.1 { (d, s) } else { acc },
            );
    Some(Truncation {
        cut: best * batch,
        batch,
        settled: best < half,
    })
}

/// Batch means varying less than this share of their mean (coefficient of variation) are
/// steady already: nothing is cut. MSER's minimum over such a series is the noise's choice
/// (ours, not White's: on a flat series at ±0.5 % it cut anything from 0 to half the run).
pub const STEADY_CV: f64 = 0.01;

/// MSER-5 when the series is long enough, else MSER on single observations; nothing is cut
/// from a series that is steady already (`STEADY_CV`).
pub fn truncation(series: &[f64]) -> Option<Truncation> {
    let batch = if series.len() >= BATCH * MIN_BATCHES {
        BATCH
    } else {
        1
    };
    let t = mser(series, batch)?;
    let means: Vec<f64> = series
        .chunks_exact(batch)
        .map(|c| c.iter().sum::<f64>() / batch as f64)
        .collect();
    let n = means.len() as f64;
    let mean = means.iter().sum::<f64>() / n;
    let sd = (means.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    if mean > 0.0 && sd / mean < STEADY_CV {
        return Some(Truncation {
            cut: 0,
            batch,
            settled: true,
        });
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_series_is_not_cut() {
        let flat = [100.0, 101.0, 99.0, 100.0, 100.0, 102.0, 98.0, 100.0];
        let t = truncation(&flat).unwrap();
        assert!(t.settled);
        assert!(t.cut <= 1, "{t:?}");
    }

    #[test]
    fn a_ramp_is_cut_where_it_ends() {
        // Rising for 10 intervals, then flat with noise.
        let mut s: Vec<f64> = (0..10).map(|i| 10.0 * i as f64).collect();
        s.extend((0..30).map(|i| 100.0 + if i % 2 == 0 { 1.0 } else { -1.0 }));
        let t = truncation(&s).unwrap();
        assert_eq!(t.batch, 5);
        assert!(t.settled);
        assert_eq!(t.cut, 10, "{t:?}");
    }

    #[test]
    fn a_series_steady_within_noise_is_not_cut() {
        // Means within ±0.5 %, lowest at the start: MSER alone would cut there.
        let mut s = vec![246.0, 247.0, 246.0, 247.0, 246.0];
        s.extend((0..35).map(|i| 248.0 + (i % 3) as f64 * 0.5));
        assert_eq!(truncation(&s).unwrap().cut, 0);
    }

    #[test]
    fn too_short_gives_nothing() {
        assert_eq!(mser(&[1.0], 1), None);
        assert_eq!(mser(&[1.0, 2.0, 3.0], 5), None);
    }
}
