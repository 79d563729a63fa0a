//! The load settings of one run, each with where it was given: the workload's `[load]`
//! read through the table, the flags over it. What the readers (`read.rs`) turn into a
//! `LoadPlan`.

use std::collections::BTreeMap;
use std::time::Duration;

use super::table::{LoadSetting, Syntax, Value, SPECS};
use super::LoadFlags;
use crate::duration;
use crate::error::InputError;
use crate::plan::given::Given;
use crate::workload::load::{self as section, NumberOrWord};
use crate::workload::{Source, Workload};

/// Load settings with their origins.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    values: BTreeMap<LoadSetting, Given<Value>>,
}

impl Settings {
    /// The workload's `[load]`, each key read in the syntax of its setting: an unknown key
    /// or a value of the wrong type is refused at its place, as the rest of the file's are.
    pub fn of_file(workload: &Workload, source: &Source<'_>) -> Result<Settings, InputError> {
        let keys: Vec<&str> = SPECS.iter().filter_map(|s| s.key).collect();
        let mut values = BTreeMap::new();
        for (key, value) in &workload.load.entries {
            let Some(spec) = SPECS.iter().find(|s| s.key == Some(key.get_ref())) else {
                return Err(section::unknown_key(key, &keys, source));
            };
            let read = match spec.syntax {
                Syntax::Count => Value::Count(section::read(value, source)?),
                Syntax::Number | Syntax::PerSecond => Value::Number(section::read(value, source)?),
                Syntax::Text | Syntax::Stages => Value::Text(section::read(value, source)?),
                Syntax::CountOrWord(expecting) => {
                    match section::number_or_word(value, expecting, source)? {
                        NumberOrWord::Number(n) => Value::Count(n),
                        NumberOrWord::Word(w) => Value::Text(w),
                    }
                }
                Syntax::CountOrParam(expecting) => {
                    match section::number_or_word(value, expecting, source)? {
                        NumberOrWord::Number(n) => Value::Count(n),
                        NumberOrWord::Word(text) => Value::Count(
                            section::integer_param(&workload.params, &text).ok_or_else(|| {
                                source.error(
                                    value.span(),
                                    format!("{} \"{text}\" must name an integer parameter, like \"{{operationcount}}\"", key.get_ref()),
                                )
                            })?,
                        ),
                    }
                }
            };
            let key = spec.key.unwrap_or_default();
            values.insert(spec.setting, Given::file(read, key, value.span(), source));
        }
        if let Some(tables) = &workload.load.stages {
            let stages = super::stages::of_file(tables.get_ref(), source)?;
            let given = Given::file(Value::Stages(stages), "stage", tables.span(), source);
            values.insert(LoadSetting::Stages, given);
        }
        Ok(Settings { values })
    }

    /// The flags, each named by its flag in messages.
    pub fn of_flags(flags: &LoadFlags) -> Settings {
        Settings {
            values: flags
                .iter()
                .map(|(s, v)| (s, Given::flag(v.clone(), s.spec().flag)))
                .collect(),
        }
    }

    /// `flags` over `file`: a flag wins over the file's value, and stop conditions among the
    /// flags replace the file's as a whole (`--ops 100` drops the file's `duration`).
    pub fn merge(mut file: Settings, flags: Settings) -> Settings {
        if flags.values.keys().any(|s| s.is_stop()) {
            file.values.retain(|s, _| !s.is_stop());
        }
        // A constant load from the command line replaces the file's stages, and stages from
        // the command line the file's constant load (its clients still give an open loop's
        // concurrency, as they do for --rate).
        let constant = [LoadSetting::Rate, LoadSetting::Clients];
        if constant.iter().any(|s| flags.values.contains_key(s)) {
            file.values.remove(&LoadSetting::Stages);
        }
        if flags.values.contains_key(&LoadSetting::Stages) {
            file.values.remove(&LoadSetting::Rate);
        }
        file.values.extend(flags.values);
        file
    }

    pub fn get(&self, setting: LoadSetting) -> Option<&Given<Value>> {
        self.values.get(&setting)
    }

    /// The setting if a flag gave it.
    pub fn flag(&self, setting: LoadSetting) -> Option<&Given<Value>> {
        self.get(setting).filter(|g| g.is_flag())
    }
}

/// A setting's value read as its reader needs it; a value of another kind (a program's, or
/// words where a number belongs) is refused by the setting's name.
impl Given<Value> {
    pub fn count(&self) -> Result<u64, InputError> {
        match &self.value {
            Value::Count(n) => Ok(*n),
            Value::Text(t) => t
                .trim()
                .parse()
                .map_err(|_| self.expected("a whole number")),
            _ => Err(self.expected("a whole number")),
        }
    }

    pub fn number(&self) -> Result<f64, InputError> {
        match &self.value {
            Value::Number(x) => Ok(*x),
            Value::Count(n) => Ok(*n as f64),
            Value::Text(t) => t.trim().parse().map_err(|_| self.expected("a number")),
            Value::Duration(_) | Value::Stages(_) => Err(self.expected("a number")),
        }
    }

    /// A duration: one given as such, or text as people write them (`500ms`, `2m`).
    pub fn duration(&self) -> Result<Duration, InputError> {
        match &self.value {
            Value::Duration(d) => Ok(*d),
            Value::Text(t) => duration::parse(t, &self.name()).map_err(|e| self.place(e)),
            _ => Err(self.expected("a duration")),
        }
    }

    /// Words, as written (a number as its digits).
    pub fn text(&self) -> String {
        self.value.to_string()
    }

    fn expected(&self, what: &str) -> InputError {
        self.error(format!("{} {}: expected {what}", self.name(), self.value))
    }
}
