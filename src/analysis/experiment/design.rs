//! Factorial designs: the cells of a full factorial (any number of levels per factor) and of
//! a two-level fractional factorial 2^(k−p) made by its generators (`D=ABC`), with the
//! defining relation and the alias chains it implies (Box, Hunter & Hunter, ch. 6; Jain,
//! ch. 19). Factors are named by letters in the order given, A, B, C, … without I, which
//! stands for the identity in a defining relation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The letters factors are named by, in order (I is the identity).
pub const LETTERS: &[char] = &[
    'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q',
];

/// A factor and its levels, as the design sees it: names only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FactorLevels {
    pub name: String,
    /// Its letter in the design (A, B, …), for generators and alias chains.
    pub letter: String,
    /// The levels as given; with two, the first is "−" and the second "+", and an effect is
    /// the change from the first to the second.
    pub levels: Vec<String>,
}

/// `D=ABC`: factor `factor` set in every cell to the product of the signs of `word`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    pub factor: usize,
    pub word: Vec<usize>,
    /// `D=-ABC`: the other half-fraction.
    pub negative: bool,
}

/// A word of the defining relation: a set of factors (sorted) and its sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub factors: Vec<usize>,
    pub negative: bool,
}

/// One effect that can be estimated: a main effect or an interaction (the factors, sorted),
/// and in a fractional design the effects aliased with it (each with its sign).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub factors: Vec<usize>,
    pub aliases: Vec<Word>,
}

#[derive(Debug, Clone)]
pub struct Design {
    pub factors: Vec<FactorLevels>,
    /// Empty for a full factorial.
    pub generators: Vec<Generator>,
    /// Every cell's level (an index into the factor's levels) per factor; standard order,
    /// the first (base) factor changing fastest.
    pub cells: Vec<Vec<usize>>,
    /// The defining relation without I: every product of the generators' words.
    pub defining: Vec<Word>,
}

/// Letters for `n` factors.
pub fn letters(n: usize) -> Result<Vec<String>, String> {
    if n > LETTERS.len() {
        return Err(format!(
            "{n} factors: at most {} are supported (each run costs a run per cell)",
            LETTERS.len()
        ));
    }
    Ok(LETTERS[..n].iter().map(|c| c.to_string()).collect())
}

fn product(a: &Word, b: &Word) -> Word {
    let mut factors: Vec<usize> = a
        .factors
        .iter()
        .filter(|f| !b.factors.contains(f))
        .chain(b.factors.iter().filter(|f| !a.factors.contains(f)))
        .copied()
        .collect();
    factors.sort_unstable();
    Word {
        factors,
        negative: a.negative != b.negative,
    }
}

/// The sign (±1) of a set of factors in a two-level cell: the product of the factors' signs,
/// the first level being −1 and the second +1.
pub fn sign(cell: &[usize], factors: &[usize]) -> f64 {
    factors
        .iter()
        .map(|&f| if cell[f] == 1 { 1.0 } else { -1.0 })
        .product()
}

impl Design {
    /// Every combination of every factor's levels.
    pub fn full(factors: Vec<FactorLevels>) -> Result<Design, String> {
        check_levels(&factors)?;
        let mut cells = vec![Vec::new()];
        for f in &factors {
            // The first factor changes fastest: extend every cell so far by each level,
            // level-major.
            cells = (0..f.levels.len())
                .flat_map(|l| {
                    cells.iter().map(move |c| {
                        let mut c = c.clone();
                        c.push(l);
                        c
                    })
                })
                .collect();
        }
        // Reorder so that the first factor changes fastest.
        cells.sort_by(|a, b| a.iter().rev().cmp(b.iter().rev()));
        Ok(Design {
            factors,
            generators: Vec::new(),
            cells,
            defining: Vec::new(),
        })
    }

    /// The two-level fraction that `generators` (`D=ABC`, `E=-AC`) define.
    pub fn fractional(factors: Vec<FactorLevels>, generators: &[String]) -> Result<Design, String> {
        check_levels(&factors)?;
        if let Some(f) = factors.iter().find(|f| f.levels.len() != 2) {
            return Err(format!(
                "factor {} has {} levels: a fractional design needs two levels for every factor",
                f.name,
                f.levels.len()
            ));
        }
        let parsed = generators
            .iter()
            .map(|g| parse_generator(g, &factors))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, g) in parsed.iter().enumerate() {
            let name = &factors[g.factor].letter;
            if parsed[..i].iter().any(|h| h.factor == g.factor) {
                return Err(format!("{name} is generated twice"));
            }
            if let Some(h) = parsed.iter().find(|h| h.word.contains(&g.factor)) {
                return Err(format!(
                    "{name} is generated, so it cannot stand on the right of {}=…: write every generator in the base factors only",
                    factors[h.factor].letter
                ));
            }
        }
        let generated: Vec<usize> = parsed.iter().map(|g| g.factor).collect();
        let base: Vec<usize> = (0..factors.len())
            .filter(|f| !generated.contains(f))
            .collect();
        if base.len() < 2 {
            return Err(format!(
                "{} generators for {} factors leave {} base factor(s): at least two must vary freely",
                parsed.len(),
                factors.len(),
                base.len()
            ));
        }
        let defining = defining_relation(&parsed);
        if let Some(w) = defining.iter().find(|w| w.factors.len() <= 2) {
            let text = word_text(&factors, &w.factors);
            return Err(format!(
                "the defining relation holds I = {text}: main effects {} would be aliased with each other (resolution II or less)",
                w.factors
                    .iter()
                    .map(|&f| factors[f].letter.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
        let cells = (0..1usize << base.len())
            .map(|bits| {
                let mut cell = vec![0; factors.len()];
                for (k, &f) in base.iter().enumerate() {
                    cell[f] = (bits >> k) & 1;
                }
                for g in &parsed {
                    let s = sign(&cell, &g.word) * if g.negative { -1.0 } else { 1.0 };
                    cell[g.factor] = usize::from(s > 0.0);
                }
                cell
            })
            .collect();
        Ok(Design {
            factors,
            generators: parsed,
            cells,
            defining,
        })
    }

    pub fn is_fractional(&self) -> bool {
        !self.generators.is_empty()
    }

    /// Every factor has two levels, so every effect is one contrast.
    pub fn two_level(&self) -> bool {
        self.factors.iter().all(|f| f.levels.len() == 2)
    }

    /// The shortest word of the defining relation (None for a full factorial).
    pub fn resolution(&self) -> Option<usize> {
        self.defining.iter().map(|w| w.factors.len()).min()
    }

    /// The effects the design estimates, main effects first, then by order: every
    /// interaction of a full factorial; in a fraction one term per alias chain, named by its
    /// shortest member.
    pub fn terms(&self) -> Vec<Term> {
        let k = self.factors.len();
        let mut terms = Vec::new();
        if !self.is_fractional() {
            for set in 1..1usize << k {
                let factors: Vec<usize> = (0..k).filter(|f| set >> f & 1 == 1).collect();
                terms.push(Term {
                    factors,
                    aliases: Vec::new(),
                });
            }
        } else {
            let generated: Vec<usize> = self.generators.iter().map(|g| g.factor).collect();
            let base: Vec<usize> = (0..k).filter(|f| !generated.contains(f)).collect();
            for set in 1..1usize << base.len() {
                let start = Word {
                    factors: (0..base.len())
                        .filter(|b| set >> b & 1 == 1)
                        .map(|b| base[b])
                        .collect(),
                    negative: false,
                };
                let mut chain: Vec<Word> = std::iter::once(start.clone())
                    .chain(self.defining.iter().map(|w| product(&start, w)))
                    .collect();
                chain.sort_by(|a, b| {
                    (a.factors.len(), &a.factors).cmp(&(b.factors.len(), &b.factors))
                });
                // Name the chain by its shortest member; the others' signs relative to it.
                let head = chain.remove(0);
                let aliases = chain
                    .into_iter()
                    .map(|w| Word {
                        negative: w.negative != head.negative,
                        factors: w.factors,
                    })
                    .collect();
                terms.push(Term {
                    factors: head.factors,
                    aliases,
                });
            }
        }
        terms.sort_by(|a, b| (a.factors.len(), &a.factors).cmp(&(b.factors.len(), &b.factors)));
        terms
    }

    /// A set of factors by letters: `AB`.
    pub fn letters_of(&self, factors: &[usize]) -> String {
        word_text(&self.factors, factors)
    }

    /// A set of factors by name: `clients × synchronous_commit`.
    pub fn names_of(&self, factors: &[usize]) -> String {
        factors
            .iter()
            .map(|&f| self.factors[f].name.as_str())
            .collect::<Vec<_>>()
            .join(" × ")
    }

    /// `A = BCD`, `AB = CD = −ABCE`: a term and its aliases, in letters.
    pub fn alias_text(&self, term: &Term) -> String {
        let mut out = self.letters_of(&term.factors);
        for w in &term.aliases {
            out.push_str(" = ");
            if w.negative {
                out.push('−');
            }
            out.push_str(&self.letters_of(&w.factors));
        }
        out
    }

    /// The generators as written back: `D = ABC`.
    pub fn generator_texts(&self) -> Vec<String> {
        self.generators
            .iter()
            .map(|g| {
                format!(
                    "{} = {}{}",
                    self.factors[g.factor].letter,
                    if g.negative { "−" } else { "" },
                    self.letters_of(&g.word)
                )
            })
            .collect()
    }

    /// `I = ABCD = …`.
    pub fn defining_text(&self) -> Option<String> {
        if self.defining.is_empty() {
            return None;
        }
        let words: Vec<String> = self
            .defining
            .iter()
            .map(|w| {
                format!(
                    "{}{}",
                    if w.negative { "−" } else { "" },
                    self.letters_of(&w.factors)
                )
            })
            .collect();
        Some(format!("I = {}", words.join(" = ")))
    }

    /// A cell's levels by name.
    pub fn cell_levels(&self, cell: usize) -> Vec<String> {
        self.cells[cell]
            .iter()
            .zip(&self.factors)
            .map(|(&l, f)| f.levels[l].clone())
            .collect()
    }
}

fn word_text(factors: &[FactorLevels], set: &[usize]) -> String {
    set.iter().map(|&f| factors[f].letter.as_str()).collect()
}

fn check_levels(factors: &[FactorLevels]) -> Result<(), String> {
    if factors.is_empty() {
        return Err("no factors: an experiment varies at least one".into());
    }
    letters(factors.len())?;
    for f in factors {
        if f.levels.len() < 2 {
            return Err(format!(
                "factor {} has {} level: a factor needs at least two levels to have an effect",
                f.name,
                f.levels.len()
            ));
        }
        for (i, l) in f.levels.iter().enumerate() {
            if f.levels[..i].contains(l) {
                return Err(format!("factor {} lists level '{l}' twice", f.name));
            }
        }
    }
    for (i, f) in factors.iter().enumerate() {
        if factors[..i].iter().any(|g| g.name == f.name) {
            return Err(format!("factor {} is given twice", f.name));
        }
    }
    Ok(())
}

/// `D=ABC`, `D = -ABC`, `D=A*B*C`.
fn parse_generator(text: &str, factors: &[FactorLevels]) -> Result<Generator, String> {
    let bad = |why: &str| {
        format!("generator '{text}': {why}; write it as D=ABC (a factor's letter = the product of base factors' letters)")
    };
    let (lhs, rhs) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
    let letter = |c: char| {
        factors
            .iter()
            .position(|f| f.letter.starts_with(c.to_ascii_uppercase()) && f.letter.len() == 1)
            .ok_or_else(|| {
                bad(&format!(
                    "no factor has the letter {c} (the factors are {})",
                    factors
                        .iter()
                        .map(|f| format!("{}={}", f.letter, f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    };
    let lhs: Vec<char> = lhs.trim().chars().collect();
    let [generated] = lhs[..] else {
        return Err(bad("the left side must be one factor's letter"));
    };
    let factor = letter(generated)?;
    let rhs = rhs.trim();
    let (negative, rhs) = match rhs.strip_prefix(['-', '−']) {
        Some(r) => (true, r.trim()),
        None => (false, rhs),
    };
    let mut word = Vec::new();
    for c in rhs.chars().filter(|c| !matches!(c, '*' | '×' | ' ')) {
        let f = letter(c)?;
        if word.contains(&f) {
            return Err(bad(&format!("{c} appears twice")));
        }
        word.push(f);
    }
    if word.contains(&factor) {
        return Err(bad("a factor cannot generate itself"));
    }
    if word.len() < 2 {
        return Err(bad(
            "the right side needs at least two letters: with one, two main effects would be the same column",
        ));
    }
    word.sort_unstable();
    Ok(Generator {
        factor,
        word,
        negative,
    })
}

/// Every product of the generators' words (I left out).
fn defining_relation(generators: &[Generator]) -> Vec<Word> {
    let words: Vec<Word> = generators
        .iter()
        .map(|g| {
            let mut factors = g.word.clone();
            factors.push(g.factor);
            factors.sort_unstable();
            Word {
                factors,
                negative: g.negative,
            }
        })
        .collect();
    let mut out = Vec::new();
    for set in 1..1usize << words.len() {
        let mut w = Word {
            factors: Vec::new(),
            negative: false,
        };
        for (i, g) in words.iter().enumerate() {
            if set >> i & 1 == 1 {
                w = product(&w, g);
            }
        }
        out.push(w);
    }
    out.sort_by(|a, b| (a.factors.len(), &a.factors).cmp(&(b.factors.len(), &b.factors)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_level(k: usize) -> Vec<FactorLevels> {
        letters(k)
            .unwrap()
            .into_iter()
            .map(|l| FactorLevels {
                name: l.to_lowercase(),
                letter: l,
                levels: vec!["lo".into(), "hi".into()],
            })
            .collect()
    }

    #[test]
    fn a_full_factorial_has_every_cell_in_standard_order() {
        let mut f = two_level(2);
        f[1].levels.push("top".into());
        let d = Design::full(f).unwrap();
        assert_eq!(
            d.cells,
            [[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2]].map(|c| c.to_vec())
        );
        assert_eq!(d.terms().len(), 3);
    }

    #[test]
    fn half_fraction_aliases_by_its_generator() {
        let d = Design::fractional(two_level(4), &["D=ABC".into()]).unwrap();
        assert_eq!(d.cells.len(), 8);
        assert_eq!(d.defining_text().unwrap(), "I = ABCD");
        assert_eq!(d.resolution(), Some(4));
        let texts: Vec<String> = d.terms().iter().map(|t| d.alias_text(t)).collect();
        assert_eq!(
            texts,
            ["A = BCD", "B = ACD", "C = ABD", "D = ABC", "AB = CD", "AC = BD", "AD = BC"]
        );
        for c in &d.cells {
            assert_eq!(sign(c, &[0, 1, 2, 3]), 1.0, "every cell has ABCD = +");
        }
    }

    #[test]
    fn quarter_fraction_multiplies_its_generators() {
        let d = Design::fractional(two_level(5), &["D=AB".into(), "E=-AC".into()]).unwrap();
        assert_eq!(d.defining_text().unwrap(), "I = ABD = −ACE = −BCDE");
        assert_eq!(d.resolution(), Some(3));
        let a = &d.terms()[0];
        assert_eq!(d.alias_text(a), "A = BD = −CE = −ABCDE");
    }

    #[test]
    fn impossible_generators_are_refused() {
        let f = || two_level(4);
        for (gens, why) in [
            (vec!["D=A"], "at least two letters"),
            (vec!["D=ABX"], "no factor has the letter X"),
            (vec!["D=ABD"], "cannot generate itself"),
            (vec!["DA=BC"], "one factor's letter"),
            (vec!["D=ABC", "D=AB"], "generated twice"),
            (vec!["D=AB", "C=AB"], "aliased with each other"),
            (vec!["C=AB", "D=AC"], "cannot stand on the right"),
            (vec!["B=ACD", "C=AD", "D=AB"], "cannot stand on the right"),
        ] {
            let gens: Vec<String> = gens.into_iter().map(String::from).collect();
            let e = Design::fractional(f(), &gens).unwrap_err();
            assert!(e.contains(why), "{gens:?}: {e}");
        }
    }
}
