//! `sql`: one statement with its bound parameters.

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// A SQL statement; `id` numbers the workload's statements, so sessions can cache prepared
/// statements.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlOp<A> {
    pub id: usize,
    pub query: String,
    pub params: Vec<A>,
}

impl<A> OpFamily<A> for SqlOp<A> {
    type With<B> = SqlOp<B>;

    fn label(&self) -> &'static str {
        "sql"
    }

    /// The parameters as written.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> SqlOp<B> {
        SqlOp {
            id: self.id,
            query: self.query,
            params: self.params.into_iter().map(f).collect(),
        }
    }

    /// `"SELECT ..." [p1, p2]`.
    fn pieces(self) -> Vec<Piece<A>> {
        vec![Piece::Statement(self.query), Piece::List(self.params)]
    }

    fn statement_kind(&self, _: impl Fn(&A) -> Option<String>) -> StatementKind {
        StatementKind::of_sql(&self.query)
    }

    /// The first row's columns, as many as named.
    fn check_capture(&self, _: usize) -> Result<(), String> {
        Ok(())
    }

    fn statement(&self) -> Option<&str> {
        Some(&self.query)
    }
}
