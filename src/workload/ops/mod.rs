//! Operations as written in `[[op]]` tables, and their compiled form.
//!
//! `kv.*` and `nop` run on every target; `sql`, `redis`, `ldap.*`, `http`, `memcached.*` and
//! `record.*` are native to one kind of system; `connect` and `authenticate` measure the handshake itself;
//! `tx` runs several native steps as one transaction, passing captured values between them,
//! retried as a whole under `retry`; `steps` runs them the same way without a transaction,
//! each statement committed on its own.
//!
//! `sections` holds the tables as written, `compiled` what they compile to, `compiler` what
//! every operation shares (templates, captures, `let`, `only`, `on`, `retry`, `pause`);
//! `kv` and `steps` (`tx` and `steps`) are the generic operations, and each native family
//! has its file: its syntax and its compiler to the family's operations in `vocab`.

mod compiled;
mod compiler;
mod grpc;
mod http;
mod kv;
mod ldap;
mod memcached;
mod record;
mod redis;
mod sections;
mod sql;
mod steps;

pub use compiled::{Let, OpKind, OpSpec, Pause, Repeat, Retry, StatementTexts, Step, When};
pub(super) use compiler::OpCompiler;
pub(super) use sections::OpSection;
pub(super) use sql::SqlArgsRef;
