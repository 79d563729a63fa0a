//! `redis`: one command as an array of arguments.

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// A Redis command: its name and arguments, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisOp<A> {
    pub args: Vec<A>,
}

impl<A> OpFamily<A> for RedisOp<A> {
    type With<B> = RedisOp<B>;

    fn label(&self) -> &'static str {
        "redis"
    }

    /// The arguments as written, the command's name first.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> RedisOp<B> {
        RedisOp {
            args: self.args.into_iter().map(f).collect(),
        }
    }

    fn pieces(self) -> Vec<Piece<A>> {
        self.args
            .into_iter()
            .map(|a| Piece::Arg(String::new(), a))
            .collect()
    }

    /// By the command's name; a name computed at run time counts as a write.
    fn statement_kind(&self, constant: impl Fn(&A) -> Option<String>) -> StatementKind {
        self.args
            .first()
            .and_then(constant)
            .map_or(StatementKind::Write, |c| StatementKind::of_redis(&c))
    }

    /// The reply's values, as many as named.
    fn check_capture(&self, _: usize) -> Result<(), String> {
        Ok(())
    }
}
