//! Parameter generators inside workload strings: `"session:{seq}"`, `"{bytes value_size}"`.
//!
//! A template is literal text with `{...}` expressions (`{{` and `}}` for literal braces).
//! Expressions are compiled once, with workload parameters already substituted, so the hot
//! path only draws random numbers and formats them into the client's reusable buffers.
//!
//! | expression            | value                                                        |
//! |-----------------------|--------------------------------------------------------------|
//! | `seq` / `seq START`   | a sequence; clients take interleaved numbers, never the same  |
//! | `uniform A..B`        | uniform integer in A..B (B excluded)                          |
//! | `zipf A..B [S]`       | Zipfian integer in A..B, exponent S (default 0.99), A hottest |
//! | `bytes N`             | N random bytes (values only)                                  |
//! | `string N`            | N random alphanumeric characters                              |
//! | `choice a\|b\|c`      | one of the listed words, uniformly                            |
//! | `client`              | the client's number, from 0                                   |
//! | `sid`                 | a session id: 32 hex digits, the MD5 of a sequence number and |
//! |                       | a random number (mod_python's `_new_sid`); never repeats      |
//! | `NAME`                | the workload parameter NAME                                   |

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rand::distr::{Alphanumeric, Distribution};
use rand::{Rng, RngCore};
use rand_distr::Zipf;

use crate::vocab::ValueKind;

/// A compile error with the byte offset inside the template string where it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    pub offset: usize,
    pub message: String,
}

fn err<T>(offset: usize, message: impl Into<String>) -> Result<T, TemplateError> {
    Err(TemplateError {
        offset,
        message: message.into(),
    })
}

#[derive(Debug, Clone)]
enum Part {
    Literal(String),
    Seq {
        start: u64,
        slot: usize,
    },
    Uniform {
        lo: u64,
        hi: u64,
    },
    Zipf {
        lo: u64,
        dist: Zipf<f64>,
    },
    Bytes(usize),
    Text(usize),
    Choice(Vec<String>),
    Client,
    /// A session id: the MD5 hex digest of the next number of its own sequence and a random
    /// draw, as mod_python's `_new_sid` hashes the time and a random number (seed 003). The
    /// sequence keeps ids unique, the seed keeps them reproducible.
    Sid {
        slot: usize,
    },
    /// A value captured by an earlier step of the same transaction.
    Capture(usize),
}

/// A compiled template.
#[derive(Debug, Clone)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
    kind: ValueKind,
}

/// Per-client generator state: its number, the client count, and one counter per `seq`.
#[derive(Debug, Clone)]
pub struct GenState {
    pub client: u64,
    pub stride: u64,
    pub counters: Vec<u64>,
    /// Added to every `seq` number: a growth study continues its sequences batch after batch.
    pub offset: u64,
    /// Values captured by transaction steps, by capture slot.
    pub captures: Vec<Vec<u8>>,
}

impl GenState {
    pub fn new(client: u64, stride: u64, seq_slots: usize) -> Self {
        GenState {
            client,
            stride: stride.max(1),
            counters: vec![0; seq_slots],
            offset: 0,
            captures: Vec::new(),
        }
    }
}

impl Template {
    /// Compile `source`; `seq_slots` counts the `seq` generators handed out so far.
    pub fn compile(
        source: &str,
        params: &BTreeMap<String, toml::Value>,
        seq_slots: &mut usize,
    ) -> Result<Template, TemplateError> {
        Template::compile_with(source, params, &[], seq_slots)
    }

    /// Compile `source`, where `{NAME}` may also be one of `captures` (name, slot).
    pub fn compile_with(
        source: &str,
        params: &BTreeMap<String, toml::Value>,
        captures: &[(String, usize)],
        seq_slots: &mut usize,
    ) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut kind = ValueKind::Bytes;
        let bytes = source.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if c == b'{' && bytes.get(i + 1) == Some(&b'{') {
                literal.push('{');
                i += 2;
            } else if c == b'}' && bytes.get(i + 1) == Some(&b'}') {
                literal.push('}');
                i += 2;
            } else if c == b'{' {
                let Some(len) = source[i + 1..].find('}') else {
                    return err(
                        i,
                        "unclosed '{': write '}' after the expression, or '{{' for a literal brace",
                    );
                };
                let expr = &source[i + 1..i + 1 + len];
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(compile_expr(expr, i + 1, params, captures, seq_slots)?);
                if i == 0 && len + 2 == source.len() {
                    kind = expr_kind(&parts[0], expr, params);
                }
                i += len + 2;
            } else if c == b'}' {
                return err(i, "unmatched '}': write '}}' for a literal brace");
            } else {
                let ch = source[i..].chars().next().unwrap_or_default();
                literal.push(ch);
                i += ch.len_utf8();
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template {
            source: source.to_string(),
            parts,
            kind,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// True if the template produces raw bytes, which a key cannot hold.
    pub fn has_bytes(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Bytes(_)))
    }

    /// True if every expansion is the same text.
    pub fn is_constant(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// Append one expansion to `out` as text (keys).
    pub fn render_str<R: RngCore>(&self, rng: &mut R, st: &mut GenState, out: &mut String) {
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.push_str(s),
                Part::Bytes(n) | Part::Text(n) => {
                    out.extend(rng.sample_iter(Alphanumeric).take(*n).map(char::from))
                }
                Part::Choice(words) => out.push_str(&words[rng.random_range(0..words.len())]),
                Part::Capture(slot) => out.push_str(&String::from_utf8_lossy(capture(st, *slot))),
                Part::Sid { slot } => push_sid(*slot, rng, st, |b| out.push_str(b)),
                other => {
                    let _ = write!(out, "{}", number(other, rng, st));
                }
            }
        }
    }

    /// Append one expansion to `out` as bytes (values).
    pub fn render_bytes<R: RngCore>(&self, rng: &mut R, st: &mut GenState, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.extend_from_slice(s.as_bytes()),
                Part::Bytes(n) => {
                    let start = out.len();
                    out.resize(start + n, 0);
                    rng.fill_bytes(&mut out[start..]);
                }
                Part::Text(n) => out.extend(rng.sample_iter(Alphanumeric).take(*n)),
                Part::Choice(words) => {
                    out.extend_from_slice(words[rng.random_range(0..words.len())].as_bytes())
                }
                Part::Capture(slot) => out.extend_from_slice(capture(st, *slot)),
                Part::Sid { slot } => {
                    push_sid(*slot, rng, st, |b| out.extend_from_slice(b.as_bytes()))
                }
                other => {
                    let _ = write!(VecWriter(out), "{}", number(other, rng, st));
                }
            }
        }
    }
}

/// `{sid}`: 32 lowercase hex digits (see [`Part::Sid`]).
fn push_sid<R: RngCore>(slot: usize, rng: &mut R, st: &mut GenState, mut push: impl FnMut(&str)) {
    use md5::Digest as _;
    let n = number(&Part::Seq { start: 0, slot }, rng, st);
    let digest = md5::Md5::digest(format!("{n}{}", rng.next_u64()).as_bytes());
    let mut hex = [0u8; 32];
    for (i, b) in digest.iter().enumerate() {
        hex[2 * i] = HEX[(b >> 4) as usize];
        hex[2 * i + 1] = HEX[(b & 15) as usize];
    }
    push(std::str::from_utf8(&hex).unwrap_or_default());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn capture(st: &GenState, slot: usize) -> &[u8] {
    st.captures.get(slot).map_or(&[], Vec::as_slice)
}

struct VecWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn number<R: RngCore>(part: &Part, rng: &mut R, st: &mut GenState) -> u64 {
    match part {
        Part::Seq { start, slot } => {
            let n = st.counters[*slot];
            st.counters[*slot] += 1;
            start + st.offset + st.client + n * st.stride
        }
        Part::Uniform { lo, hi } => rng.random_range(*lo..*hi),
        Part::Zipf { lo, dist } => lo + dist.sample(rng) as u64 - 1,
        Part::Client => st.client,
        _ => 0,
    }
}

fn compile_expr(
    expr: &str,
    offset: usize,
    params: &BTreeMap<String, toml::Value>,
    captures: &[(String, usize)],
    seq_slots: &mut usize,
) -> Result<Part, TemplateError> {
    let words: Vec<(usize, &str)> = split_words(expr)
        .into_iter()
        .map(|(o, w)| (offset + o, w))
        .collect();
    let Some(&(head_at, head)) = words.first() else {
        return err(
            offset,
            "empty '{}': expected a generator such as {seq} or {uniform 1..100}",
        );
    };
    let call = Call {
        head,
        head_at,
        args: &words[1..],
        params,
    };
    match head {
        "seq" => call.seq(seq_slots),
        "uniform" => call.uniform(),
        "zipf" => call.zipf(),
        "bytes" | "string" => call.size(),
        "choice" => call.choice(),
        "client" => {
            call.arity(0..=0, "no arguments")?;
            Ok(Part::Client)
        }
        "sid" => {
            call.arity(0..=0, "no arguments")?;
            *seq_slots += 1;
            Ok(Part::Sid {
                slot: *seq_slots - 1,
            })
        }
        name if call.args.is_empty() => named(name, head_at, params, captures),
        other => err(
            head_at,
            format!("unknown generator '{other}': expected seq, uniform, zipf, bytes, string, choice, client or sid"),
        ),
    }
}

/// One generator expression: its name, where the name is, and its arguments with offsets.
struct Call<'a> {
    head: &'a str,
    head_at: usize,
    args: &'a [(usize, &'a str)],
    params: &'a BTreeMap<String, toml::Value>,
}

impl Call<'_> {
    fn arity(&self, n: std::ops::RangeInclusive<usize>, usage: &str) -> Result<(), TemplateError> {
        if n.contains(&self.args.len()) {
            Ok(())
        } else {
            err(self.head_at, format!("'{}' takes {usage}", self.head))
        }
    }

    fn seq(&self, seq_slots: &mut usize) -> Result<Part, TemplateError> {
        self.arity(0..=1, "an optional start: {seq} or {seq 1000}")?;
        let start = match self.args.first() {
            Some(&(at, w)) => integer(w, at, self.params)?,
            None => 0,
        };
        *seq_slots += 1;
        Ok(Part::Seq {
            start,
            slot: *seq_slots - 1,
        })
    }

    fn uniform(&self) -> Result<Part, TemplateError> {
        self.arity(1..=1, "a range: {uniform 1..100}")?;
        let (lo, hi) = range(self.args[0].1, self.args[0].0, self.params)?;
        Ok(Part::Uniform { lo, hi })
    }

    fn zipf(&self) -> Result<Part, TemplateError> {
        self.arity(
            1..=2,
            "a range and an optional exponent: {zipf 1..1000 0.99}",
        )?;
        let (lo, hi) = range(self.args[0].1, self.args[0].0, self.params)?;
        let s = match self.args.get(1) {
            Some(&(at, w)) => {
                let s = float(w, at, self.params)?;
                if !(s > 0.0 && s.is_finite()) {
                    return err(
                        at,
                        format!("zipf exponent must be a positive number, not {w}"),
                    );
                }
                s
            }
            None => 0.99,
        };
        let dist = Zipf::new((hi - lo) as f64, s).map_err(|e| TemplateError {
            offset: self.head_at,
            message: format!("invalid zipf: {e}"),
        })?;
        Ok(Part::Zipf { lo, dist })
    }

    /// `bytes N` or `string N`.
    fn size(&self) -> Result<Part, TemplateError> {
        self.arity(1..=1, "a size: {bytes 512}")?;
        let n = integer(self.args[0].1, self.args[0].0, self.params)? as usize;
        if n > 64 << 20 {
            return err(self.args[0].0, "size over 64 MiB: use a smaller value");
        }
        Ok(if self.head == "bytes" {
            Part::Bytes(n)
        } else {
            Part::Text(n)
        })
    }

    fn choice(&self) -> Result<Part, TemplateError> {
        let list: String = self
            .args
            .iter()
            .map(|(_, w)| *w)
            .collect::<Vec<_>>()
            .join(" ");
        let words: Vec<String> = list
            .split('|')
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() {
            return err(
                self.head_at,
                "'choice' takes words separated by '|': {choice red|green|blue}",
            );
        }
        Ok(Part::Choice(words))
    }
}

/// A bare name: a value captured by an earlier step, else a workload parameter.
fn named(
    name: &str,
    at: usize,
    params: &BTreeMap<String, toml::Value>,
    captures: &[(String, usize)],
) -> Result<Part, TemplateError> {
    if let Some((_, slot)) = captures.iter().find(|(c, _)| c == name) {
        return Ok(Part::Capture(*slot));
    }
    match params.get(name) {
        Some(value) => Ok(Part::Literal(match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        })),
        None => err(
            at,
            format!(
                "unknown generator or parameter '{name}': expected seq, uniform, zipf, bytes, string, choice, client, sid{}",
                param_list(params)
            ),
        ),
    }
}

/// The kind of a template that is the single expression `expr`, compiled into `part`.
fn expr_kind(part: &Part, expr: &str, params: &BTreeMap<String, toml::Value>) -> ValueKind {
    match part {
        Part::Seq { .. } | Part::Uniform { .. } | Part::Zipf { .. } | Part::Client => {
            ValueKind::Integer
        }
        Part::Literal(_) => match params.get(expr.trim()) {
            Some(toml::Value::Integer(_)) => ValueKind::Integer,
            Some(toml::Value::Float(_)) => ValueKind::Float,
            _ => ValueKind::Bytes,
        },
        _ => ValueKind::Bytes,
    }
}

fn param_list(params: &BTreeMap<String, toml::Value>) -> String {
    if params.is_empty() {
        String::new()
    } else {
        format!(
            ", or a parameter ({})",
            params.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    }
}

fn split_words(expr: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in expr.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                words.push((s, &expr[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, &expr[s..]));
    }
    words
}

/// A non-negative integer literal or the name of an integer parameter.
fn integer(
    word: &str,
    at: usize,
    params: &BTreeMap<String, toml::Value>,
) -> Result<u64, TemplateError> {
    if let Ok(n) = word.replace('_', "").parse::<u64>() {
        return Ok(n);
    }
    match params.get(word) {
        Some(toml::Value::Integer(n)) if *n >= 0 => Ok(*n as u64),
        Some(other) => err(
            at,
            format!("parameter '{word}' is {other}, expected a non-negative integer"),
        ),
        None => err(
            at,
            format!(
                "expected a non-negative integer or an integer parameter, found '{word}'{}",
                param_list(params)
            ),
        ),
    }
}

fn float(
    word: &str,
    at: usize,
    params: &BTreeMap<String, toml::Value>,
) -> Result<f64, TemplateError> {
    if let Ok(x) = word.parse::<f64>() {
        return Ok(x);
    }
    match params.get(word) {
        Some(toml::Value::Float(x)) => Ok(*x),
        Some(toml::Value::Integer(n)) => Ok(*n as f64),
        _ => err(at, format!("expected a number, found '{word}'")),
    }
}

fn range(
    word: &str,
    at: usize,
    params: &BTreeMap<String, toml::Value>,
) -> Result<(u64, u64), TemplateError> {
    let Some((lo, hi)) = word.split_once("..") else {
        return err(
            at,
            format!("expected a range LOW..HIGH (HIGH excluded), found '{word}'"),
        );
    };
    let lo_v = integer(lo, at, params)?;
    let hi_v = integer(hi, at + lo.len() + 2, params)?;
    if hi_v <= lo_v {
        return err(
            at,
            format!("empty range {word} ({lo_v}..{hi_v}): HIGH must be above LOW"),
        );
    }
    Ok((lo_v, hi_v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn params() -> BTreeMap<String, toml::Value> {
        let mut p = BTreeMap::new();
        p.insert("records".into(), toml::Value::Integer(100));
        p.insert("name".into(), toml::Value::String("x".into()));
        p
    }

    fn render(src: &str, st: &mut GenState) -> String {
        let mut slots = 0;
        let t = Template::compile(src, &params(), &mut slots).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let mut s = String::new();
        t.render_str(&mut rng, st, &mut s);
        s
    }

    #[test]
    fn sequences_interleave_between_clients() {
        let mut a = GenState::new(0, 2, 1);
        let mut b = GenState::new(1, 2, 1);
        assert_eq!(render("k{seq}", &mut a), "k0");
        assert_eq!(render("k{seq}", &mut b), "k1");
        assert_eq!(render("k{seq}", &mut a), "k2");
        assert_eq!(
            render("{{{seq 10}}}-{name}", &mut GenState::new(0, 1, 1)),
            "{10}-x"
        );
    }

    #[test]
    fn session_ids_are_32_hex_digits_unique_and_seeded() {
        let ids = |seed| {
            let mut st = GenState::new(0, 1, 1);
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let mut slots = 0;
            let t = Template::compile("{sid}", &params(), &mut slots).unwrap();
            (0..1000)
                .map(|_| {
                    let mut s = String::new();
                    t.render_str(&mut rng, &mut st, &mut s);
                    s
                })
                .collect::<Vec<_>>()
        };
        let a = ids(7);
        assert!(a
            .iter()
            .all(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())));
        assert_eq!(
            a.iter().collect::<std::collections::HashSet<_>>().len(),
            1000
        );
        assert_eq!(a, ids(7));
        assert_ne!(a, ids(8));
    }

    #[test]
    fn draws_stay_in_range() {
        let mut slots = 0;
        let p = params();
        for src in [
            "{uniform 5..records}",
            "{zipf 5..records}",
            "{zipf 5..records 1.5}",
        ] {
            let t = Template::compile(src, &p, &mut slots).unwrap();
            let mut rng = SmallRng::seed_from_u64(7);
            let mut st = GenState::new(0, 1, 0);
            for _ in 0..10_000 {
                let mut s = String::new();
                t.render_str(&mut rng, &mut st, &mut s);
                let n: u64 = s.parse().unwrap();
                assert!((5..100).contains(&n), "{src} gave {n}");
            }
        }
    }

    #[test]
    fn errors_point_into_the_string() {
        let mut slots = 0;
        let e = Template::compile("a{uniform 1..nope}", &params(), &mut slots).unwrap_err();
        assert_eq!(e.offset, 13);
        let e = Template::compile("a{bogus 1}", &params(), &mut slots).unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.message.contains("unknown generator"));
        assert!(Template::compile("{seq", &params(), &mut slots).is_err());
        assert!(Template::compile("{uniform 9..3}", &params(), &mut slots).is_err());
    }

    #[test]
    fn a_lone_number_generator_or_number_parameter_has_a_number_kind() {
        let mut p = params();
        p.insert("ratio".into(), toml::Value::Float(0.5));
        let kind = |src: &str| Template::compile(src, &p, &mut 0).unwrap().kind();
        for src in [
            "{seq}",
            "{seq 5}",
            "{uniform 1..9}",
            "{zipf 1..9}",
            "{client}",
            "{records}",
        ] {
            assert_eq!(kind(src), ValueKind::Integer, "{src}");
        }
        assert_eq!(kind("{ratio}"), ValueKind::Float);
        for src in [
            "7",
            "k{seq}",
            "{seq} ",
            "{name}",
            "{string 3}",
            "{choice 1|2}",
            "{{seq}}",
        ] {
            assert_eq!(kind(src), ValueKind::Bytes, "{src}");
        }
    }

    #[test]
    fn bytes_have_the_requested_size() {
        let mut slots = 0;
        let t = Template::compile("{bytes 512}", &params(), &mut slots).unwrap();
        let mut out = Vec::new();
        t.render_bytes(
            &mut SmallRng::seed_from_u64(1),
            &mut GenState::new(0, 1, 0),
            &mut out,
        );
        assert_eq!(out.len(), 512);
        assert!(t.has_bytes());
    }
}
