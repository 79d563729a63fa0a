//! `record.*`: YCSB's record operations (insert, read, update, scan, delete of a record of
//! numbered fields), which each store that holds records maps onto its own layout.

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// A record operation; `field`, when given, numbers the one field it reads or writes.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordOp<A> {
    /// YCSB's `insert`: a new record, `values` its fields in order (field0, field1, ...).
    Insert { key: A, values: Vec<A> },
    /// YCSB's `read`: every field, or the one field numbered `field`.
    Read { key: A, field: Option<A> },
    /// YCSB's `update`: every field (`values` holds one per field), or the one field
    /// numbered `field` (`values` holds one).
    Update {
        key: A,
        field: Option<A>,
        values: Vec<A>,
    },
    /// YCSB's `scan`: `count` records from `key` on, in the store's key order; every field
    /// or the one numbered `field`.
    Scan { key: A, count: A, field: Option<A> },
    /// YCSB's `delete`.
    Delete { key: A },
}

/// The table (SQL), hash prefix (Redis) or folder (files) that holds the records of the
/// `record.*` operations: loadrig's name for YCSB's `usertable`.
pub const RECORD_TABLE: &str = "loadrig_usertable";

/// A record's fields as the `record.*` operations and `[records]` lay them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLayout {
    /// YCSB's `fieldcount`: fields `field0` .. `field{fields-1}`.
    pub fields: usize,
}

impl<A> OpFamily<A> for RecordOp<A> {
    type With<B> = RecordOp<B>;

    fn label(&self) -> &'static str {
        match self {
            RecordOp::Insert { .. } => "record.insert",
            RecordOp::Read { .. } => "record.read",
            RecordOp::Update { .. } => "record.update",
            RecordOp::Scan { .. } => "record.scan",
            RecordOp::Delete { .. } => "record.delete",
        }
    }

    /// The key, then (scan) the count, then the field number if one, then the values.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> RecordOp<B> {
        match self {
            RecordOp::Insert { key, values } => {
                let key = f(key);
                RecordOp::Insert {
                    key,
                    values: values.into_iter().map(f).collect(),
                }
            }
            RecordOp::Read { key, field } => {
                let key = f(key);
                RecordOp::Read {
                    key,
                    field: field.map(f),
                }
            }
            RecordOp::Update { key, field, values } => {
                let key = f(key);
                let field = field.map(&mut *f);
                RecordOp::Update {
                    key,
                    field,
                    values: values.into_iter().map(f).collect(),
                }
            }
            RecordOp::Scan { key, count, field } => {
                let key = f(key);
                let count = f(count);
                RecordOp::Scan {
                    key,
                    count,
                    field: field.map(f),
                }
            }
            RecordOp::Delete { key } => RecordOp::Delete { key: f(key) },
        }
    }

    /// The key, then `field0=... field1=...`, or `field=N` (and an update's `value=...`),
    /// or `fields=all`; a scan's `count=` after its key.
    fn pieces(self) -> Vec<Piece<A>> {
        let numbered = |values: Vec<A>| {
            values
                .into_iter()
                .enumerate()
                .map(|(i, v)| Piece::Arg(format!("field{i}="), v))
                .collect::<Vec<_>>()
        };
        let one_or_all = |field: Option<A>| match field {
            Some(f) => Piece::Arg("field=".into(), f),
            None => Piece::Word("fields=all".into()),
        };
        match self {
            RecordOp::Insert { key, values } => {
                let mut pieces = vec![Piece::Key(key)];
                pieces.extend(numbered(values));
                pieces
            }
            RecordOp::Read { key, field } => vec![Piece::Key(key), one_or_all(field)],
            RecordOp::Update {
                key,
                field: Some(f),
                values,
            } => {
                let mut pieces = vec![Piece::Key(key), Piece::Arg("field=".into(), f)];
                pieces.extend(values.into_iter().map(|v| Piece::Arg("value=".into(), v)));
                pieces
            }
            RecordOp::Update {
                key,
                field: None,
                values,
            } => {
                let mut pieces = vec![Piece::Key(key)];
                pieces.extend(numbered(values));
                pieces
            }
            RecordOp::Scan { key, count, field } => vec![
                Piece::Key(key),
                Piece::Arg("count=".into(), count),
                one_or_all(field),
            ],
            RecordOp::Delete { key } => vec![Piece::Key(key)],
        }
    }

    fn statement_kind(&self, _: impl Fn(&A) -> Option<String>) -> StatementKind {
        match self {
            RecordOp::Read { .. } | RecordOp::Scan { .. } => StatementKind::Read,
            RecordOp::Insert { .. } | RecordOp::Update { .. } | RecordOp::Delete { .. } => {
                StatementKind::Write
            }
        }
    }
}
