//! `[load]`: a workload's defaults for the load settings of `loadrig run`, kept as written,
//! each key and value with its place in the file. What a key means, the type it takes and
//! its checks belong to its load setting, declared once with its flag in `plan::load`, which
//! reads these entries when it resolves a run. This module gives it the readers of the value
//! shapes a workload writes, whose errors say what was found and what was expected, at the
//! value's place, as the rest of the file's are.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use super::Source;
use crate::error::InputError;

/// `[load]` as written: each `key = value` with its place, in the order of the file, and
/// its `[[load.stage]]` tables, each field with its place.
#[derive(Debug, Default, Clone)]
pub struct LoadSection {
    pub entries: Vec<(Spanned<String>, Spanned<toml::Value>)>,
    pub stages: Option<Spanned<Vec<Spanned<StageSection>>>>,
}

/// One `[[load.stage]]`: a length and a rate (open loop) or a client count (closed loop),
/// constant (`rate`, `clients`) or going from one to the other (`rate_from` and `rate_to`,
/// `clients_from` and `clients_to`) in a `shape`: `linear` (the default) or `step` (`steps`
/// constant levels). What the values must be is checked with the load settings
/// (`plan::load`), at each field's place.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSection {
    pub name: Option<Spanned<String>>,
    /// Where it starts (from the start of the run): optional, and if given, the end of the
    /// stage before.
    pub start: Option<Spanned<String>>,
    pub duration: Option<Spanned<String>>,
    pub rate: Option<Spanned<f64>>,
    pub rate_from: Option<Spanned<f64>>,
    pub rate_to: Option<Spanned<f64>>,
    pub clients: Option<Spanned<u64>>,
    pub clients_from: Option<Spanned<u64>>,
    pub clients_to: Option<Spanned<u64>>,
    pub shape: Option<Spanned<String>>,
    pub steps: Option<Spanned<u64>>,
    /// The stage is the run's warm-up (only leading stages may be).
    pub warmup: Option<Spanned<bool>>,
}

impl<'de> Deserialize<'de> for LoadSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = LoadSection;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("struct LoadSection")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<LoadSection, M::Error> {
                let mut entries = Vec::new();
                let mut stages = None;
                while let Some(key) = m.next_key::<Spanned<String>>()? {
                    if key.get_ref() == "stage" {
                        // Read as tables with their fields' places, not as a plain value.
                        stages = Some(m.next_value()?);
                    } else {
                        entries.push((key, m.next_value()?));
                    }
                }
                Ok(LoadSection { entries, stages })
            }
        }
        d.deserialize_map(Entries)
    }
}

/// A key `[load]` does not have, refused as an unknown field of the file is; `known` are
/// the keys it has.
pub fn unknown_key(key: &Spanned<String>, known: &[&str], source: &Source<'_>) -> InputError {
    let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    file_error(
        source,
        key.span().start,
        format!(
            "unknown field `{}`, expected one of {}",
            key.get_ref(),
            expected.join(", ")
        ),
    )
}

/// A value of a type serde reads (`u64`, `f64`, `String`), refused as the file's own
/// values are: "invalid type: string "four", expected u64" at its place.
pub fn read<T: de::DeserializeOwned>(
    value: &Spanned<toml::Value>,
    source: &Source<'_>,
) -> Result<T, InputError> {
    T::deserialize(value.get_ref().clone())
        .map_err(|e| file_error(source, value.span().start, e.message().trim().to_string()))
}

/// A value written either as a whole number from 0 or as a string: `threads = 4` or
/// `threads = "per-client"`.
#[derive(Debug, Clone, PartialEq)]
pub enum NumberOrWord {
    Number(u64),
    Word(String),
}

/// Read a [`NumberOrWord`]; `expecting` says what both may be, for the error. Not serde's
/// untagged enum, whose error says only "did not match any variant".
pub fn number_or_word(
    value: &Spanned<toml::Value>,
    expecting: &'static str,
    source: &Source<'_>,
) -> Result<NumberOrWord, InputError> {
    struct Either(&'static str);
    impl Visitor<'_> for Either {
        type Value = NumberOrWord;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<NumberOrWord, E> {
            Ok(NumberOrWord::Number(n))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<NumberOrWord, E> {
            match u64::try_from(n) {
                Ok(n) => Ok(NumberOrWord::Number(n)),
                Err(_) => Err(E::invalid_value(de::Unexpected::Signed(n), &self)),
            }
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<NumberOrWord, E> {
            Ok(NumberOrWord::Word(s.to_string()))
        }
    }
    value
        .get_ref()
        .clone()
        .deserialize_any(Either(expecting))
        .map_err(|e| file_error(source, value.span().start, e.message().trim().to_string()))
}

/// The integer parameter that `"{name}"` names (`ops = "{operationcount}"`), if it is one
/// from 0.
pub fn integer_param(params: &BTreeMap<String, toml::Value>, text: &str) -> Option<u64> {
    let name = text
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim();
    match params.get(name) {
        Some(toml::Value::Integer(n)) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// An error in the workload file's syntax, at `offset`, with the help every such error has.
pub fn file_error(source: &Source<'_>, offset: usize, message: String) -> InputError {
    InputError::new(message)
        .at(source.at(offset))
        .help("see `loadrig init session-store` for a complete example")
}
