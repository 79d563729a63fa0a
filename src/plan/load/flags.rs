//! The load settings' flags, made from the table for clap: `RunArgs` flattens them, so
//! `loadrig run`, `sweep`, `ab` and `kube` take every load setting by its row.

use std::collections::BTreeMap;

use clap::{value_parser, Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use super::table::{LoadSetting, Spec, Syntax, Value, SPECS};

/// The load settings given on the command line, by setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadFlags {
    values: BTreeMap<LoadSetting, Value>,
}

impl LoadFlags {
    pub fn get(&self, setting: LoadSetting) -> Option<&Value> {
        self.values.get(&setting)
    }

    /// A count given as one (`--seed 7`).
    pub fn count(&self, setting: LoadSetting) -> Option<u64> {
        match self.get(setting) {
            Some(Value::Count(n)) => Some(*n),
            _ => None,
        }
    }

    /// Give `setting` as if its flag had been given (replacing an earlier one).
    pub fn set(&mut self, setting: LoadSetting, value: Value) {
        self.values.insert(setting, value);
    }

    pub fn remove(&mut self, setting: LoadSetting) -> Option<Value> {
        self.values.remove(&setting)
    }

    /// The flags given, in the order of the table.
    pub fn iter(&self) -> impl Iterator<Item = (LoadSetting, &Value)> {
        self.values.iter().map(|(s, v)| (*s, v))
    }
}

impl FromIterator<(LoadSetting, Value)> for LoadFlags {
    fn from_iter<I: IntoIterator<Item = (LoadSetting, Value)>>(iter: I) -> Self {
        LoadFlags {
            values: iter.into_iter().collect(),
        }
    }
}

/// The argument's id: the flag's name.
fn id(spec: &Spec) -> &'static str {
    &spec.flag[2..]
}

/// What clap parses the flag's value into: a count is a `u64`, a number an `f64`, the rest
/// text (read by the setting's reader, as the file's text is).
fn arg(spec: &Spec) -> Arg {
    let arg = Arg::new(id(spec))
        .long(id(spec))
        .value_name(spec.value_name)
        .help(spec.help)
        .action(ArgAction::Set);
    let arg = match spec.short {
        Some(c) => arg.short(c),
        None => arg,
    };
    match spec.syntax {
        Syntax::Count | Syntax::CountOrParam(_) => arg.value_parser(value_parser!(u64)),
        Syntax::Number => arg.value_parser(value_parser!(f64)),
        Syntax::Text | Syntax::CountOrWord(_) | Syntax::PerSecond | Syntax::Stages => {
            arg.value_parser(value_parser!(String))
        }
    }
}

impl Args for LoadFlags {
    fn augment_args(cmd: Command) -> Command {
        SPECS.iter().fold(cmd, |cmd, spec| cmd.arg(arg(spec)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for LoadFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = LoadFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for spec in &SPECS {
            let id = id(spec);
            let value = match spec.syntax {
                Syntax::Count | Syntax::CountOrParam(_) => {
                    matches.get_one::<u64>(id).map(|n| Value::Count(*n))
                }
                Syntax::Number => matches.get_one::<f64>(id).map(|x| Value::Number(*x)),
                Syntax::Text | Syntax::CountOrWord(_) | Syntax::PerSecond | Syntax::Stages => {
                    matches
                        .get_one::<String>(id)
                        .map(|t| Value::Text(t.clone()))
                }
            };
            if let Some(value) = value {
                self.values.insert(spec.setting, value);
            }
        }
        Ok(())
    }
}
