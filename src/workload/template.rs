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
//! | `ycsb_zipfian A..B`   | YCSB 0.17's ZipfianGenerator (an approximation), A hottest    |
//! | `ycsb_scrambled A..B` | YCSB's ScrambledZipfianGenerator: hot keys spread by a hash   |
//! | `ycsb_scrambled_keys N OPS I` | YCSB's `zipfian` key chooser: ycsb_scrambled over N +   |
//! |                       | OPS·I·2 + 1 numbers, drawn again above the newest key         |
//! | `ycsb_hotspot A..B H O` | a fraction O of draws on the first fraction H of the range  |
//! | `sysbench_special A..B` | sysbench 1.0's default `--rand-type=special`: 3 draws in 4 on |
//! |                       | 1 % of the range in its middle, the rest a bell over it       |
//! | `ycsb_counter START`  | YCSB's insert key counter: START, START + 1, ... shared by    |
//! |                       | the process's clients, acknowledged when the operation ends   |
//! | `ycsb_latest N`       | YCSB's SkewedLatestGenerator: the newest acknowledged         |
//! |                       | `ycsb_counter` key (at least N - 1) minus a Zipfian number    |
//! | `ycsb_exponential N P F` | YCSB's ExponentialGenerator: that newest key minus an      |
//! |                       | exponential draw, P % of draws within the newest N * F keys   |
//! | `ycsb_sequential A..B` | YCSB's SequentialGenerator: A, A + 1, ... cycling; clients   |
//! |                       | take interleaved turns                                        |
//! | `fnvhash64 GEN`       | YCSB's FNV-64 hash of the number GEN draws (hashed key order) |
//! | `bytes N`             | N random bytes (values only)                                  |
//! | `string N`            | N random alphanumeric characters                              |
//! | `choice a\|b\|c`      | one of the listed words, uniformly                            |
//! | `client`              | the client's number, from 0                                   |
//! | `sid`                 | a session id: 32 hex digits, the MD5 of a sequence number and |
//! |                       | a random number (mod_python's `_new_sid`); never repeats      |
//! | `NAME`                | the workload parameter NAME                                   |

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::distr::{Alphanumeric, Distribution};
use rand::{Rng, RngCore};
use rand_distr::{StandardNormal, Zipf};

use super::ycsb;
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
    /// A uniform range that starts below zero (pgbench's `random(-5000, 5000)`).
    UniformSigned {
        lo: i64,
        hi: i64,
    },
    Zipf {
        lo: u64,
        dist: Zipf<f64>,
    },
    /// pgbench's `random_gaussian`: a normal draw cut at ±`param` standard deviations,
    /// spread over `lo..hi`.
    Gaussian {
        lo: u64,
        hi: u64,
        param: f64,
    },
    /// pgbench's `random_exponential`: an exponential draw cut at `param`, spread over
    /// `lo..hi`, most often `lo`.
    Exponential {
        lo: u64,
        hi: u64,
        param: f64,
    },
    /// TPC-C's NURand(A, lo, hi - 1) with run-time constant `c`:
    /// (((uniform 0..=A | uniform lo..hi) + c) % (hi - lo)) + lo.
    NuRand {
        a: u64,
        lo: u64,
        hi: u64,
        c: u64,
    },
    /// sysbench 1.0's `special` distribution over `lo..hi` (its `a` and `b` are `lo` and
    /// `hi - 1`), with its default `--rand-spec-iter=12`, `-pct=1`, `-res=75`.
    SysbenchSpecial {
        lo: u64,
        hi: u64,
    },
    YcsbZipfian(ycsb::RangeZipfian),
    YcsbScrambled(ycsb::ScrambledZipfian),
    YcsbScrambledKeys(ycsb::ScrambledKeys),
    YcsbHotspot(ycsb::Hotspot),
    YcsbLatest(ycsb::SkewedLatest),
    YcsbExponential(ycsb::ExponentialLatest),
    YcsbSequential {
        cycle: ycsb::Sequential,
        slot: usize,
    },
    /// The next key of the process's shared insert counter in `slot` (its `seq` slot).
    YcsbCounter {
        start: u64,
        slot: usize,
    },
    /// YCSB's hash of the number the inner generator draws.
    FnvHash(Box<Part>),
    Bytes(usize),
    Text(usize),
    Choice(Vec<String>),
    Client,
    /// The pass of the innermost `repeat` group, from 1.
    Iteration,
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
    /// The `{ycsb_counter}` counters, shared by the process's clients.
    pub inserts: Arc<ycsb::InsertCounters>,
    /// The `{ycsb_counter}` keys drawn for the operation running now, acknowledged when it
    /// ends ([`GenState::acknowledge`]).
    drawn: Vec<ycsb::Drawn>,
    pub client: u64,
    pub stride: u64,
    pub counters: Vec<u64>,
    /// Added to every `seq` number: a growth study continues its sequences batch after batch.
    pub offset: u64,
    /// Values captured by transaction steps, by capture slot.
    pub captures: Vec<Vec<u8>>,
    /// The largest number this client's `seq` generators have handed out: the newest key
    /// for `ycsb_latest` in a workload without `ycsb_counter`.
    pub newest: Option<u64>,
    /// `ycsb_latest`'s Zipfian for the current newest key.
    pub latest: Option<ycsb::LatestZipfian>,
    /// The pass of the `repeat` group running now, from 1 (`{iteration}`).
    pub iteration: u64,
}

impl GenState {
    /// A client's state with counters of its own (see [`GenState::sharing`]).
    pub fn new(client: u64, stride: u64, seq_slots: usize) -> Self {
        GenState {
            inserts: Arc::new(ycsb::InsertCounters::new(seq_slots, 0, 1)),
            drawn: Vec::new(),
            client,
            stride: stride.max(1),
            counters: vec![0; seq_slots],
            offset: 0,
            captures: Vec::new(),
            newest: None,
            latest: None,
            iteration: 0,
        }
    }

    /// The state of one of the clients that share `inserts`.
    pub fn sharing(
        client: u64,
        stride: u64,
        seq_slots: usize,
        inserts: Arc<ycsb::InsertCounters>,
    ) -> Self {
        GenState {
            inserts,
            ..GenState::new(client, stride, seq_slots)
        }
    }

    /// The newest key for the `latest`, `exponential` and `zipfian` key choosers: the
    /// newest acknowledged `{ycsb_counter}` key, else the client's own newest `{seq}`.
    fn newest_key(&self) -> Option<u64> {
        self.inserts.newest().or(self.newest)
    }

    /// The operation that drew `{ycsb_counter}` keys has ended: acknowledge them.
    #[inline]
    pub fn acknowledge(&mut self) {
        if !self.drawn.is_empty() {
            for d in self.drawn.drain(..) {
                self.inserts.acknowledge(d);
            }
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

    /// True if it draws `{iteration}`, which only a `repeat` group gives a value.
    pub fn uses_iteration(&self) -> bool {
        fn uses(p: &Part) -> bool {
            match p {
                Part::Iteration => true,
                Part::FnvHash(inner) => uses(inner),
                _ => false,
            }
        }
        self.parts.iter().any(uses)
    }

    /// True if every expansion is the same text.
    pub fn is_constant(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// The slot of a template that is one captured value and nothing else.
    pub fn single_capture(&self) -> Option<usize> {
        match self.parts.as_slice() {
            [Part::Capture(slot)] => Some(*slot),
            _ => None,
        }
    }

    /// The same template, bound as `kind` (a `let` value keeps the kind of its generator).
    pub fn with_kind(self, kind: ValueKind) -> Template {
        Template { kind, ..self }
    }

    /// The text of a template that holds only literals and parameters.
    pub fn constant_text(&self) -> Option<String> {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(s) => Some(s.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The text of a template of literals, parameters and `{iteration}`, at pass
    /// `iteration` (a setup group's statements, one per pass).
    pub fn constant_text_at(&self, iteration: u64) -> Option<String> {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(s) => Some(s.clone()),
                Part::Iteration => Some(iteration.to_string()),
                _ => None,
            })
            .collect()
    }

    /// The range of a template that is one `{uniform A..B}` and nothing else (A
    /// included, B excluded): the values a `let` bound into statement text can take.
    pub fn uniform_range(&self) -> Option<(i64, i64)> {
        match self.parts.as_slice() {
            [Part::Uniform { lo, hi }] => {
                Some((i64::try_from(*lo).ok()?, i64::try_from(*hi).ok()?))
            }
            [Part::UniformSigned { lo, hi }] => Some((*lo, *hi)),
            _ => None,
        }
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
                Part::UniformSigned { lo, hi } => {
                    out.push_str(itoa::Buffer::new().format(rng.random_range(*lo..*hi)))
                }
                other => out.push_str(itoa::Buffer::new().format(number(other, rng, st))),
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
                // itoa: a third of core::fmt's instructions for a drawn number.
                Part::UniformSigned { lo, hi } => {
                    let n = rng.random_range(*lo..*hi);
                    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
                }
                other => {
                    let n = number(other, rng, st);
                    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
                }
            }
        }
    }
}

/// `{sid}`: 32 lowercase hex digits (see [`Part::Sid`]).
fn push_sid<R: RngCore>(slot: usize, rng: &mut R, st: &mut GenState, mut push: impl FnMut(&str)) {
    use md5::Digest as _;
    let n = next_seq(st, 0, slot);
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

/// The next number of the sequence in `slot`: client c of N takes c, c + N, ...
fn next_seq(st: &mut GenState, start: u64, slot: usize) -> u64 {
    let n = st.counters[slot];
    st.counters[slot] += 1;
    start + st.offset + st.client + n * st.stride
}

fn number<R: RngCore>(part: &Part, rng: &mut R, st: &mut GenState) -> u64 {
    match part {
        Part::Seq { start, slot } => {
            let n = next_seq(st, *start, *slot);
            st.newest = Some(st.newest.map_or(n, |m| m.max(n)));
            n
        }
        Part::Uniform { lo, hi } => rng.random_range(*lo..*hi),
        // Hashed as YCSB hashes a Java long: its two's complement bits.
        Part::UniformSigned { lo, hi } => rng.random_range(*lo..*hi) as u64,
        Part::Zipf { lo, dist } => lo + dist.sample(rng) as u64 - 1,
        // As pgbench's getGaussianRand: redraw outside [-param, param), map onto [0, 1).
        Part::Gaussian { lo, hi, param } => {
            let z = loop {
                let z: f64 = StandardNormal.sample(rng);
                if (-param..*param).contains(&z) {
                    break z;
                }
            };
            spread(*lo, *hi, (z + param) / (2.0 * param))
        }
        // As pgbench's getExponentialRand: u in (0, 1], cut = e^-param.
        Part::Exponential { lo, hi, param } => {
            let u = 1.0 - rng.random::<f64>();
            let cut = (-param).exp();
            spread(*lo, *hi, -(cut + (1.0 - cut) * u).ln() / param)
        }
        Part::NuRand { a, lo, hi, c } => {
            let x = rng.random_range(0..=*a) | rng.random_range(*lo..*hi);
            (x + c) % (hi - lo) + lo
        }
        Part::SysbenchSpecial { lo, hi } => {
            (lo + sysbench_special((hi - 1 - lo) as f64, rng)).min(hi - 1)
        }
        Part::YcsbZipfian(z) => z.sample(rng),
        Part::YcsbScrambled(z) => z.sample(rng),
        Part::YcsbScrambledKeys(k) => k.sample(rng, st.newest_key(), st.offset),
        Part::YcsbHotspot(h) => h.sample(rng),
        Part::YcsbLatest(l) => {
            let newest = st.newest_key();
            l.sample(rng, newest, st.offset, &mut st.latest)
        }
        Part::YcsbExponential(e) => e.sample(rng, st.newest_key(), st.offset),
        Part::YcsbCounter { start, slot } => {
            let (key, drawn) = st.inserts.draw(*slot, start + st.offset);
            st.drawn.push(drawn);
            key
        }
        Part::YcsbSequential { cycle, slot } => {
            let n = st.counters[*slot];
            st.counters[*slot] += 1;
            cycle.nth(st.client + n * st.stride)
        }
        Part::FnvHash(inner) => {
            let n = match &**inner {
                Part::Capture(slot) => std::str::from_utf8(capture(st, *slot))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(0),
                other => number(other, rng, st),
            };
            ycsb::fnvhash64(n as i64) as u64
        }
        Part::Client => st.client,
        Part::Iteration => st.iteration,
        _ => 0,
    }
}

/// A draw of sysbench 1.0's `sb_rand_special` over `0..=t`, from its description: the range
/// is stretched to 4t (`res` = 75 %); a draw below t (a quarter of them) is the mean of 12
/// uniforms (`iter`) times t, any other maps the same uniform onto the 1 % (`pct`) of the
/// range that starts 0.5 % below its middle. Both are rounded down, as its C casts do.
fn sysbench_special<R: RngCore>(t: f64, rng: &mut R) -> u64 {
    const ITER: u32 = 12;
    const PCT: f64 = 0.01;
    const RES_STRETCH: f64 = 100.0 / (100.0 - 75.0);
    let u: f64 = rng.random();
    if u * t * RES_STRETCH < t {
        let sum: f64 = (0..ITER).map(|_| rng.random::<f64>()).sum();
        (sum * t / f64::from(ITER)) as u64
    } else {
        (u * (t * PCT + 1.0) + t / 2.0 - t * PCT / 2.0) as u64
    }
}

/// `lo` plus the share `x` (in [0, 1)) of `lo..hi`, rounded down as pgbench does.
fn spread(lo: u64, hi: u64, x: f64) -> u64 {
    (lo + ((hi - lo) as f64 * x) as u64).min(hi - 1)
}

/// True if `part` draws a number (which `fnvhash64` can hash, and which alone is an integer).
fn is_number(part: &Part) -> bool {
    matches!(
        part,
        Part::Seq { .. }
            | Part::Uniform { .. }
            | Part::UniformSigned { .. }
            | Part::Zipf { .. }
            | Part::Gaussian { .. }
            | Part::Exponential { .. }
            | Part::NuRand { .. }
            | Part::SysbenchSpecial { .. }
            | Part::YcsbZipfian(_)
            | Part::YcsbScrambled(_)
            | Part::YcsbScrambledKeys(_)
            | Part::YcsbHotspot(_)
            | Part::YcsbLatest(_)
            | Part::YcsbExponential(_)
            | Part::YcsbSequential { .. }
            | Part::YcsbCounter { .. }
            | Part::FnvHash(_)
            | Part::Client
            | Part::Iteration
    )
}

const GENERATORS: &str = "seq, uniform, zipf, gaussian, exponential, nurand, sysbench_special, ycsb_zipfian, ycsb_scrambled, ycsb_scrambled_keys, ycsb_hotspot, ycsb_latest, ycsb_exponential, ycsb_sequential, ycsb_counter, fnvhash64, select, bytes, string, choice, client, iteration or sid";

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
    compile_words(&words, offset, params, captures, seq_slots)
}

/// One generator expression as words with their offsets (`offset`: where it starts).
fn compile_words(
    words: &[(usize, &str)],
    offset: usize,
    params: &BTreeMap<String, toml::Value>,
    captures: &[(String, usize)],
    seq_slots: &mut usize,
) -> Result<Part, TemplateError> {
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
        "gaussian" | "exponential" => call.pgbench_skewed(),
        "nurand" => call.nurand(),
        "sysbench_special" => {
            call.arity(1..=1, "a range: {sysbench_special 1..table_size+1}")?;
            let (at, word) = call.args[0];
            range(word, at, params).map(|(lo, hi)| Part::SysbenchSpecial { lo, hi })
        }
        "ycsb_zipfian" | "ycsb_scrambled" => call.ycsb_zipfian(),
        "ycsb_scrambled_keys" => call.ycsb_scrambled_keys(),
        "ycsb_hotspot" => call.ycsb_hotspot(),
        "ycsb_latest" => call.ycsb_latest(),
        "ycsb_exponential" => call.ycsb_exponential(),
        "ycsb_sequential" => call.ycsb_sequential(seq_slots),
        "ycsb_counter" => call.ycsb_counter(seq_slots),
        "fnvhash64" => {
            call.arity(
                1..=usize::MAX,
                "a number generator: {fnvhash64 seq} or {fnvhash64 ycsb_scrambled 0..1000}",
            )?;
            let inner = compile_words(call.args, head_at, params, captures, seq_slots)?;
            // A `let` value is hashed as the number it holds.
            if !is_number(&inner) && !matches!(inner, Part::Capture(_)) {
                return err(call.args[0].0, format!("'fnvhash64' hashes the number a generator draws (seq, uniform, zipf, ycsb_*, client), not '{}'", call.args[0].1));
            }
            Ok(Part::FnvHash(Box::new(inner)))
        }
        "bytes" | "string" => call.size(),
        "choice" => call.choice(),
        "select" => {
            let (at, words) = call.select()?;
            compile_words(words, at, params, captures, seq_slots)
        }
        "client" => {
            call.arity(0..=0, "no arguments")?;
            Ok(Part::Client)
        }
        "iteration" => {
            call.arity(0..=0, "no arguments")?;
            Ok(Part::Iteration)
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
            format!("unknown generator '{other}': expected {GENERATORS}"),
        ),
    }
}

/// Words of an expression with their offsets.
type Words<'a> = &'a [(usize, &'a str)];

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

    fn ycsb_counter(&self, seq_slots: &mut usize) -> Result<Part, TemplateError> {
        self.arity(1..=1, "the first key it hands out: {ycsb_counter records}")?;
        let (at, w) = self.args[0];
        *seq_slots += 1;
        Ok(Part::YcsbCounter {
            start: integer(w, at, self.params)?,
            slot: *seq_slots - 1,
        })
    }

    fn uniform(&self) -> Result<Part, TemplateError> {
        self.arity(1..=1, "a range: {uniform 1..100}")?;
        let (at, word) = self.args[0];
        let Some((lo, hi)) = word.split_once("..") else {
            return range(word, at, self.params).map(|(lo, hi)| Part::Uniform { lo, hi });
        };
        let lo_v = signed(lo, at, self.params)?;
        let hi_v = signed(hi, at + lo.len() + 2, self.params)?;
        if hi_v <= lo_v {
            return err(
                at,
                format!("empty range {word} ({lo_v}..{hi_v}): HIGH must be above LOW"),
            );
        }
        Ok(match (u64::try_from(lo_v), u64::try_from(hi_v)) {
            (Ok(lo), Ok(hi)) => Part::Uniform { lo, hi },
            _ => Part::UniformSigned { lo: lo_v, hi: hi_v },
        })
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

    /// `gaussian A..B P` (P at least 2, as pgbench requires) or `exponential A..B P` (P
    /// above 0): pgbench's `random_gaussian` and `random_exponential` over A..B-1.
    fn pgbench_skewed(&self) -> Result<Part, TemplateError> {
        let gaussian = self.head == "gaussian";
        let example = if gaussian { "2.5" } else { "5.0" };
        self.arity(
            2..=2,
            &format!(
                "a range and a parameter: {{{} 1..1001 {example}}}",
                self.head
            ),
        )?;
        let (lo, hi) = range(self.args[0].1, self.args[0].0, self.params)?;
        let (at, word) = self.args[1];
        let param = float(word, at, self.params)?;
        let fine = if gaussian { param >= 2.0 } else { param > 0.0 };
        if !fine || !param.is_finite() {
            let need = if gaussian { "at least 2.0" } else { "above 0" };
            return err(
                at,
                format!(
                    "{}'s parameter must be {need} (as pgbench's), not {word}",
                    self.head
                ),
            );
        }
        Ok(if gaussian {
            Part::Gaussian { lo, hi, param }
        } else {
            Part::Exponential { lo, hi, param }
        })
    }

    /// `nurand A LO..HI C`: TPC-C's non-uniform random NURand(A, LO, HI - 1) with the
    /// run-time constant C (clause 2.1.6 of the specification).
    fn nurand(&self) -> Result<Part, TemplateError> {
        self.arity(
            3..=3,
            "A, a range and the constant C, as TPC-C's NURand(A, x, y): {nurand 1023 1..3001 259}",
        )?;
        let a = integer(self.args[0].1, self.args[0].0, self.params)?;
        let (lo, hi) = range(self.args[1].1, self.args[1].0, self.params)?;
        let c = integer(self.args[2].1, self.args[2].0, self.params)?;
        if a == u64::MAX || hi.checked_add(a.max(c)).is_none() {
            return err(self.head_at, "nurand's A, range and C must be below 2^62");
        }
        Ok(Part::NuRand { a, lo, hi, c })
    }

    /// `ycsb_zipfian A..B` or `ycsb_scrambled A..B`.
    fn ycsb_zipfian(&self) -> Result<Part, TemplateError> {
        self.arity(1..=1, &format!("a range: {{{} 0..1000}}", self.head))?;
        let (lo, hi) = range(self.args[0].1, self.args[0].0, self.params)?;
        Ok(if self.head == "ycsb_zipfian" {
            Part::YcsbZipfian(ycsb::RangeZipfian::new(lo, hi))
        } else {
            Part::YcsbScrambled(ycsb::ScrambledZipfian::new(lo, hi))
        })
    }

    fn ycsb_scrambled_keys(&self) -> Result<Part, TemplateError> {
        self.arity(
            3..=3,
            "the number of records loaded, the operation count and the insert proportion: {ycsb_scrambled_keys recordcount operationcount insertproportion}",
        )?;
        let records = integer(self.args[0].1, self.args[0].0, self.params)?;
        let operations = integer(self.args[1].1, self.args[1].0, self.params)?;
        let (at, w) = self.args[2];
        let insert = float(w, at, self.params)?;
        if !(insert >= 0.0 && insert.is_finite()) {
            return err(
                at,
                format!("ycsb_scrambled_keys's insert proportion must be a number of at least 0, not {w}"),
            );
        }
        match ycsb::ScrambledKeys::new(records, operations, insert) {
            Some(k) => Ok(Part::YcsbScrambledKeys(k)),
            None if records == 0 => err(
                self.args[0].0,
                "ycsb_scrambled_keys needs at least 1 record loaded, not 0",
            ),
            None => err(
                self.args[0].0,
                format!("ycsb_scrambled_keys's {records} records plus the inserts expected overflow a 64-bit count; use fewer records"),
            ),
        }
    }

    fn ycsb_hotspot(&self) -> Result<Part, TemplateError> {
        self.arity(
            3..=3,
            "a range, the fraction of it that is hot and the fraction of draws that go there: {ycsb_hotspot 0..1000 0.2 0.8}",
        )?;
        let (lo, hi) = range(self.args[0].1, self.args[0].0, self.params)?;
        let mut fractions = [0.0; 2];
        for (f, (&(at, w), what)) in fractions
            .iter_mut()
            .zip(self.args[1..].iter().zip(["hot set", "hot operation"]))
        {
            *f = float(w, at, self.params)?;
            if !(*f > 0.0 && *f < 1.0) {
                return err(
                    at,
                    format!("ycsb_hotspot's {what} fraction must lie between 0 and 1 (both excluded), not {w}"),
                );
            }
        }
        match ycsb::Hotspot::new(lo, hi, fractions[0], fractions[1]) {
            Some(h) => Ok(Part::YcsbHotspot(h)),
            None => err(
                self.args[1].0,
                format!(
                    "ycsb_hotspot's hot set is empty: {} of the {} keys in {} is less than one key; use a larger range or hot set fraction",
                    self.args[1].1,
                    hi - lo,
                    self.args[0].1
                ),
            ),
        }
    }

    fn ycsb_latest(&self) -> Result<Part, TemplateError> {
        self.arity(
            1..=1,
            "the number of records loaded (keys 0..N): {ycsb_latest records}",
        )?;
        let (at, w) = self.args[0];
        let records = integer(w, at, self.params)?;
        if records < 3 {
            return err(
                at,
                format!("ycsb_latest needs at least 3 records loaded (YCSB's formula divides by zero below), not {records}"),
            );
        }
        Ok(Part::YcsbLatest(ycsb::SkewedLatest::new(records)))
    }

    fn ycsb_exponential(&self) -> Result<Part, TemplateError> {
        self.arity(
            3..=3,
            "the number of records loaded, the percentile and the fraction of them it covers: {ycsb_exponential records 95 0.8571428571}",
        )?;
        let (at, w) = self.args[0];
        let records = integer(w, at, self.params)?;
        let percentile = float(self.args[1].1, self.args[1].0, self.params)?;
        let frac = float(self.args[2].1, self.args[2].0, self.params)?;
        match ycsb::ExponentialLatest::new(records, percentile, frac) {
            Some(e) if records > 0 => Ok(Part::YcsbExponential(e)),
            _ => err(
                self.head_at,
                format!("ycsb_exponential needs records above 0, a percentile strictly between 0 and 100 and a fraction above 0, not {records}, {percentile} and {frac}"),
            ),
        }
    }

    fn ycsb_sequential(&self, seq_slots: &mut usize) -> Result<Part, TemplateError> {
        self.arity(1..=1, "a range: {ycsb_sequential 0..records}")?;
        let (lo, hi) = range(self.args[0].1, self.args[0].0, self.params)?;
        *seq_slots += 1;
        Ok(Part::YcsbSequential {
            cycle: ycsb::Sequential { lo, hi },
            slot: *seq_slots - 1,
        })
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

    /// `select NAME V1: GEN ... | V2: GEN ...`: the words of the alternative whose value is
    /// the parameter or switch NAME's (decided when the workload is compiled; the others
    /// are not compiled), and where they start.
    fn select(&self) -> Result<(usize, Words<'_>), TemplateError> {
        let usage = "a switch or parameter and alternatives: {select order hashed: fnvhash64 seq | ordered: seq}";
        let Some(&(name_at, name)) = self.args.first() else {
            return err(self.head_at, format!("'select' takes {usage}"));
        };
        let Some(value) = self.params.get(name) else {
            return err(
                name_at,
                format!(
                    "select: '{name}' is not a switch or parameter{}",
                    param_list(self.params)
                ),
            );
        };
        let value = match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut seen = Vec::new();
        for alt in self.args[1..].split(|(_, w)| *w == "|") {
            let Some((&(at, label), rest)) = alt.split_first() else {
                return err(
                    name_at,
                    format!("select {name}: an empty alternative; 'select' takes {usage}"),
                );
            };
            let Some(label) = label.strip_suffix(':') else {
                return err(at, format!("select {name}: an alternative starts with its value and a colon, like 'hashed:', not '{label}'"));
            };
            if rest.is_empty() {
                return err(
                    at,
                    format!("select {name}: the alternative '{label}:' has no generator"),
                );
            }
            if label == value {
                return Ok((rest[0].0, rest));
            }
            seen.push(label);
        }
        err(
            name_at,
            format!(
                "select {name}: no alternative for its value '{value}' (the alternatives: {})",
                seen.join(", ")
            ),
        )
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
                "unknown generator or parameter '{name}': expected {GENERATORS}{}",
                param_list(params)
            ),
        ),
    }
}

/// The kind of a template that is the single expression `expr`, compiled into `part`.
fn expr_kind(part: &Part, expr: &str, params: &BTreeMap<String, toml::Value>) -> ValueKind {
    match part {
        p if is_number(p) => ValueKind::Integer,
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

/// A non-negative integer literal or the name of an integer parameter, or sums of products
/// of those (`100000*scale+1`).
fn integer(
    word: &str,
    at: usize,
    params: &BTreeMap<String, toml::Value>,
) -> Result<u64, TemplateError> {
    if let Ok(n) = word.replace('_', "").parse::<u64>() {
        return Ok(n);
    }
    if word.contains(['*', '+']) {
        let n = signed(word, at, params)?;
        return u64::try_from(n).or_else(|_| {
            err(
                at,
                format!("'{word}' is {n}, expected a non-negative integer"),
            )
        });
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

/// An integer with an optional sign, an integer parameter, or sums of products of those
/// written without spaces (`100000*scale+1`, as pgbench's `random(1, 100000 * :scale)`).
fn signed(
    word: &str,
    at: usize,
    params: &BTreeMap<String, toml::Value>,
) -> Result<i64, TemplateError> {
    let overflow = || TemplateError {
        offset: at,
        message: format!("'{word}' overflows a 64-bit integer"),
    };
    let mut total: i64 = 0;
    for term in word.split('+') {
        let mut product: i64 = 1;
        for factor in term.split('*') {
            let value = match (factor.replace('_', "").parse::<i64>(), params.get(factor)) {
                (Ok(n), _) => n,
                (_, Some(toml::Value::Integer(n))) => *n,
                (_, Some(other)) => {
                    return err(
                        at,
                        format!("parameter '{factor}' is {other}, expected an integer"),
                    )
                }
                (_, None) => {
                    return err(
                        at,
                        format!(
                            "expected an integer, an integer parameter or a product or sum of those (100000*scale+1), found '{factor}'{}",
                            param_list(params)
                        ),
                    )
                }
            };
            product = product.checked_mul(value).ok_or_else(overflow)?;
        }
        total = total.checked_add(product).ok_or_else(overflow)?;
    }
    Ok(total)
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
    fn select_compiles_only_the_alternative_of_the_value() {
        let mut st = GenState::new(0, 1, 1);
        // name = "x": the x alternative; the other is never compiled (its range is empty).
        assert_eq!(
            render("k{select name y: uniform 5..5 | x: seq 7}", &mut st),
            "k7"
        );
        let mut fresh = GenState::new(0, 1, 1);
        assert_eq!(
            render("{select records 100: fnvhash64 seq}", &mut fresh),
            "6284781860667377211"
        );
        let mut slots = 0;
        let t = Template::compile("{select name x: uniform 1..9}", &params(), &mut slots).unwrap();
        assert_eq!(
            t.kind(),
            ValueKind::Integer,
            "a number as the alternative is"
        );
        assert_eq!(slots, 0, "no seq slot for an alternative not taken");
        for (src, says) in [
            ("{select}", "'select' takes a switch or parameter"),
            (
                "{select nope x: seq}",
                "select: 'nope' is not a switch or parameter",
            ),
            ("{select name x seq}", "starts with its value and a colon"),
            ("{select name x:}", "the alternative 'x:' has no generator"),
            ("{select name y: seq | | x: seq}", "an empty alternative"),
            (
                "{select name y: seq}",
                "no alternative for its value 'x' (the alternatives: y)",
            ),
        ] {
            let e = Template::compile(src, &params(), &mut slots).unwrap_err();
            assert!(e.message.contains(says), "{src}: {}", e.message);
        }
    }

    #[test]
    fn fnvhash64_hashes_a_captured_number() {
        let mut slots = 0;
        let t = Template::compile_with(
            "user{fnvhash64 n}",
            &params(),
            &[("n".into(), 0)],
            &mut slots,
        )
        .unwrap();
        let mut st = GenState::new(0, 1, 0);
        st.captures = vec![b"0".to_vec()];
        let mut rng = SmallRng::seed_from_u64(1);
        let mut s = String::new();
        t.render_str(&mut rng, &mut st, &mut s);
        assert_eq!(s, "user6284781860667377211");
    }

    #[test]
    fn uniform_takes_negative_bounds_and_products_of_parameters() {
        let mut seen = std::collections::BTreeSet::new();
        let mut slots = 0;
        let t = Template::compile("{uniform -2..2}", &params(), &mut slots).unwrap();
        assert_eq!(t.kind(), ValueKind::Integer);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut st = GenState::new(0, 1, 0);
        for _ in 0..200 {
            let mut s = String::new();
            t.render_str(&mut rng, &mut st, &mut s);
            seen.insert(s.parse::<i64>().unwrap());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![-2, -1, 0, 1]);
        // records = 100: 1..2*records+1 is 1..201, one number.
        assert_eq!(render("{uniform 2*records+1..2*records+2}", &mut st), "201");
        let e = Template::compile("{uniform 1..2*nope}", &params(), &mut slots).unwrap_err();
        assert!(e.message.contains("found 'nope'"), "{}", e.message);
        let e = Template::compile("{zipf -1..5}", &params(), &mut slots).unwrap_err();
        assert!(e.message.contains("non-negative"), "{}", e.message);
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
            "{ycsb_zipfian 5..records}",
            "{ycsb_scrambled 5..records}",
            "{ycsb_hotspot 5..records 0.1 0.9}",
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
        for (src, offset, fragment) in [
            ("{ycsb_zipfian}", 1, "'ycsb_zipfian' takes a range"),
            ("{ycsb_zipfian 5..5}", 14, "empty range 5..5"),
            (
                "{ycsb_scrambled 0..9 2}",
                1,
                "'ycsb_scrambled' takes a range",
            ),
            ("{ycsb_scrambled 0..x}", 19, "found 'x'"),
            (
                "{ycsb_hotspot 0..100 0.2}",
                1,
                "'ycsb_hotspot' takes a range, the fraction",
            ),
            ("{ycsb_hotspot 9..3 0.2 0.8}", 14, "empty range"),
            (
                "{ycsb_hotspot 0..100 1.2 0.8}",
                21,
                "hot set fraction must lie between 0 and 1",
            ),
            (
                "{ycsb_hotspot 0..100 0.2 0}",
                25,
                "hot operation fraction must lie between 0 and 1",
            ),
            (
                "{ycsb_hotspot 0..100 0.2 nan}",
                25,
                "hot operation fraction",
            ),
            (
                "{ycsb_hotspot 0..100 x 0.8}",
                21,
                "expected a number, found 'x'",
            ),
            (
                "{ycsb_hotspot 0..4 0.2 0.5}",
                19,
                "hot set is empty: 0.2 of the 4 keys",
            ),
            (
                "{ycsb_latest}",
                1,
                "'ycsb_latest' takes the number of records loaded",
            ),
            (
                "{ycsb_counter}",
                1,
                "'ycsb_counter' takes the first key it hands out",
            ),
            ("{ycsb_latest 1 2}", 1, "'ycsb_latest' takes the number"),
            ("{ycsb_latest 2}", 13, "at least 3 records loaded"),
            ("{ycsb_latest name}", 13, "parameter 'name' is \"x\""),
            (
                "{ycsb_scrambled_keys records 10}",
                1,
                "'ycsb_scrambled_keys' takes the number of records loaded, the operation count",
            ),
            (
                "{ycsb_scrambled_keys 0 10 0.5}",
                21,
                "at least 1 record loaded, not 0",
            ),
            (
                "{ycsb_scrambled_keys records 10 -0.5}",
                32,
                "insert proportion must be a number of at least 0, not -0.5",
            ),
            (
                "{ycsb_scrambled_keys 18446744073709551615 10 0.0}",
                21,
                "plus the inserts expected overflow a 64-bit count",
            ),
            ("{fnvhash64}", 1, "'fnvhash64' takes a number generator"),
            (
                "{fnvhash64 name}",
                11,
                "hashes the number a generator draws",
            ),
            (
                "{fnvhash64 string 3}",
                11,
                "hashes the number a generator draws",
            ),
            ("{fnvhash64 bogus 1}", 11, "unknown generator 'bogus'"),
            ("{fnvhash64 ycsb_latest 1}", 23, "at least 3 records"),
        ] {
            let e = Template::compile(src, &params(), &mut slots).unwrap_err();
            assert!(e.message.contains(fragment), "{src}: {}", e.message);
            assert_eq!(e.offset, offset, "{src}: {}", e.message);
        }
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
            "{ycsb_zipfian 1..9}",
            "{ycsb_scrambled 1..9}",
            "{ycsb_hotspot 1..9 0.5 0.5}",
            "{ycsb_latest records}",
            "{ycsb_scrambled_keys records 10 0.5}",
            "{fnvhash64 seq}",
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
