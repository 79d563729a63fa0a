//! The analysis in plain words: which factor explains how much of the variation, by how
//! much it moved the response and how sure that is, whether any interaction matters, how
//! much is noise, and the best cell.

use super::design::Design;
use super::record::{Better, EffectRecord, Estimate, IntervalMethod, ResponseAnalysis, Scale};
use crate::duration::human_ns;

/// A share as people say it: `71 %`, `0.4 %`.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p >= 9.95 || p == 0.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// A value of the response in its unit: `1.20ms`, `4,120 ops/s`, `0.5 %`.
pub fn value_text(unit: &str, v: f64) -> String {
    match unit {
        "ns" => human_ns(v),
        "share" => format!("{:.3} %", v * 100.0),
        "" => number(v),
        u => format!("{} {u}", number(v)),
    }
}

fn number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        let whole = v.abs().round() as u64;
        let digits = whole.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            format!("-{out}")
        } else {
            out
        }
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A change on the analysed scale: `+1.20ms`, `−35 ops/s`, `×1.42`.
pub fn change_text(unit: &str, scale: Scale, v: f64) -> String {
    match scale {
        Scale::Log => format!("×{:.3}", v.exp()),
        Scale::Linear => {
            let sign = if v < 0.0 { "−" } else { "+" };
            match unit {
                "share" => format!("{sign}{:.3} points", v.abs() * 100.0),
                _ => format!("{sign}{}", value_text(unit, v.abs())),
            }
        }
    }
}

/// An estimate with its interval: `+1.20ms [+1.05ms, +1.35ms]`.
pub fn estimate_text(a: &ResponseAnalysis, e: &Estimate) -> String {
    let show = |v: f64| change_text(&a.unit, a.scale, v);
    match (e.low, e.high) {
        (Some(lo), Some(hi)) => format!("{} [{}, {}]", show(e.estimate), show(lo), show(hi)),
        _ => show(e.estimate),
    }
}

fn levels_text(design: &Design, e: &EffectRecord) -> String {
    if e.order != 1 {
        return String::new();
    }
    let f = design.factors.iter().find(|f| f.name == e.name);
    match f {
        Some(f) if f.levels.len() == 2 => format!(" ({} → {})", f.levels[0], f.levels[1]),
        Some(f) => format!(" ({})", f.levels.join(", ")),
        None => String::new(),
    }
}

fn noise_words(e: &EffectRecord) -> &'static str {
    match e.significant {
        Some(false) => ", not distinguishable from noise",
        _ => "",
    }
}

/// The sentences, largest effect first.
pub fn sentences(design: &Design, a: &ResponseAnalysis) -> Vec<String> {
    let mut out = Vec::new();
    let mut ranked: Vec<&EffectRecord> = a.effects.iter().filter(|e| !e.pooled).collect();
    ranked.sort_by(|x, y| y.share.total_cmp(&x.share));
    let scale = match a.scale {
        Scale::Linear => "",
        Scale::Log => " (on the log scale)",
    };
    let mut first = true;
    for e in ranked
        .iter()
        .filter(|e| e.order == 1 || e.significant == Some(true))
    {
        let what = if e.order == 1 {
            format!("{}{}", e.name, levels_text(design, e))
        } else {
            format!("the interaction {}", e.name)
        };
        let alias = if e.aliases.is_empty() {
            String::new()
        } else {
            format!(" (aliased with {})", e.aliases.join(", "))
        };
        let effect = match (&e.contrast, e.order) {
            (Some(c), _) => format!(": {}", estimate_text(a, c)),
            (None, 1) => match a.main_effects.iter().find(|m| m.factor == e.name) {
                Some(m) => format!(
                    ": mean {}",
                    m.levels
                        .iter()
                        .zip(&m.means)
                        .map(|(l, v)| format!("{l} {}", value_text(&a.unit, *v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => String::new(),
            },
            _ => String::new(),
        };
        if first {
            out.push(format!(
                "{what}{alias} explains {} of the variation in {}{scale}{effect}{}",
                percent(e.share),
                a.response,
                noise_words(e)
            ));
            first = false;
        } else {
            out.push(format!(
                "{what}{alias}: {}{effect}{}",
                percent(e.share),
                noise_words(e)
            ));
        }
    }
    let interactions: Vec<&&EffectRecord> = ranked.iter().filter(|e| e.order > 1).collect();
    if !interactions.is_empty()
        && a.intervals != IntervalMethod::None
        && interactions.iter().all(|e| e.significant == Some(false))
    {
        let total: f64 = interactions.iter().map(|e| e.share).sum();
        out.push(format!(
            "no interaction is distinguishable from noise (together {})",
            percent(total)
        ));
    }
    if a.error.df > 0 {
        let pooled = if a.error.pooled.is_empty() {
            String::new()
        } else {
            format!(", with the pooled {}", a.error.pooled.join(", "))
        };
        out.push(format!(
            "noise (the spread between replicates{pooled}): {}",
            percent(a.error.share)
        ));
    }
    let best = match a.better {
        Better::Higher => "highest",
        Better::Lower => "lowest",
    };
    let cell: Vec<String> = design
        .factors
        .iter()
        .zip(&a.best.levels)
        .map(|(f, l)| format!("{}={l}", f.name))
        .collect();
    out.push(format!(
        "best cell ({best} {}): {}, mean {}",
        a.response,
        cell.join(", "),
        value_text(&a.unit, a.best.mean)
    ));
    out
}
