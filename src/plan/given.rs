//! A setting with where it came from, so a bad value is reported at its flag or at its
//! file:line:column in the workload's `[load]`.

use std::ops::Range;

use crate::error::InputError;
use crate::workload::Source;

/// A value given by a flag or by the workload file.
#[derive(Debug, Clone, PartialEq)]
pub struct Given<T> {
    pub value: T,
    origin: Origin,
}

#[derive(Debug, Clone, PartialEq)]
enum Origin {
    /// `--clients`.
    Flag(&'static str),
    /// `[load] clients`, at `file:line:column`.
    File { field: &'static str, at: String },
}

impl<T> Given<T> {
    pub fn flag(value: T, flag: &'static str) -> Given<T> {
        Given {
            value,
            origin: Origin::Flag(flag),
        }
    }

    pub fn file(value: T, field: &'static str, span: Range<usize>, source: &Source<'_>) -> Self {
        Given {
            value,
            origin: Origin::File {
                field,
                at: source.at(span.start),
            },
        }
    }

    /// How the setting is named in messages: `--clients` or `[load] clients`.
    pub fn name(&self) -> String {
        match &self.origin {
            Origin::Flag(flag) => flag.to_string(),
            Origin::File { field, .. } => format!("[load] {field}"),
        }
    }

    /// An error about this setting, placed at its position in the file when it came from one.
    pub fn error(&self, message: impl Into<String>) -> InputError {
        let e = InputError::new(message);
        match &self.origin {
            Origin::Flag(_) => e,
            Origin::File { at, .. } => e.at(at.clone()),
        }
    }

    /// `e`, a problem with this value found elsewhere (a duration's parser), placed at the
    /// value in the file when it came from one.
    pub fn place(&self, e: InputError) -> InputError {
        match &self.origin {
            Origin::Flag(_) => e,
            Origin::File { at, .. } => e.at(at.clone()),
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Given<U> {
        Given {
            value: f(self.value),
            origin: self.origin,
        }
    }

    pub fn is_flag(&self) -> bool {
        matches!(self.origin, Origin::Flag(_))
    }
}
