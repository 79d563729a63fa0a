//! The vocabulary every layer shares: an operation as a target receives it ([`Op`]), what
//! it did ([`Outcome`]), and how it failed ([`OpError`], [`ErrorClass`]).

use serde::{Deserialize, Serialize};

use crate::spec::NativeOp;

/// Why an operation failed, so the engine can count failures by class.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Connect,
    Auth,
    Timeout,
    Deadlock,
    Serialization,
    Constraint,
    Protocol,
    Other,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 8] = [
        ErrorClass::Connect,
        ErrorClass::Auth,
        ErrorClass::Timeout,
        ErrorClass::Deadlock,
        ErrorClass::Serialization,
        ErrorClass::Constraint,
        ErrorClass::Protocol,
        ErrorClass::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Auth => "auth",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::Serialization => "serialization",
            ErrorClass::Constraint => "constraint",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Other => "other",
        }
    }
}

/// A failed operation: counted by class and by message, never a reason to stop the run.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{class:?}: {message}")]
pub struct OpError {
    pub class: ErrorClass,
    pub message: String,
}

impl OpError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        OpError {
            class,
            message: message.into(),
        }
    }
}

/// What a successful operation did: rows (or keys, entries, files) read or written, and
/// when asked (`capture`), the values of the first row or reply, one per column.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub rows: u64,
    pub captured: Vec<Vec<u8>>,
}

impl Outcome {
    pub fn rows(rows: u64) -> Outcome {
        Outcome {
            rows,
            captured: Vec::new(),
        }
    }
}

/// One operation with its parameters bound, borrowed from the client's buffers.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Does nothing on any target: the harness cost, or pure latency on `sleep`.
    Nop,
    Put {
        key: &'a str,
        value: &'a [u8],
    },
    Get {
        key: &'a str,
    },
    Update {
        key: &'a str,
        value: &'a [u8],
    },
    Delete {
        key: &'a str,
    },
    /// A native operation; `args` are its templates rendered in [`NativeOp::templates`]
    /// order. `capture` asks for the first row's values in [`Outcome::captured`].
    Native {
        op: &'a NativeOp,
        args: &'a [Vec<u8>],
        capture: bool,
    },
    Begin,
    Commit,
    Rollback,
}
