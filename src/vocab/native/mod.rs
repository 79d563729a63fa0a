//! Operations native to one family of systems ([`NativeOp`]), nested by family: a target
//! matches the families it runs and refuses every other in one arm, while the compiler
//! still makes it handle every operation of its own families.
//!
//! Each family's type (one file here) knows what is generic about its operations
//! ([`OpFamily`]): their labels, the order of their arguments, how people read them and
//! what they may capture. [`NativeOp`] hands each call to its family, so the layers that
//! show, record or check operations need no arm per family.

pub mod grpc;
mod http;
mod ldap;
mod memcached;
mod record;
mod redis;
mod sql;

pub use grpc::{GrpcCall, GrpcOp, GrpcSlot, ReplyPath, Step};
pub use http::HttpOp;
pub use ldap::{LdapOp, Scope};
pub use memcached::{MemcachedOp, StoreMode};
pub use record::{RecordLayout, RecordOp, RECORD_TABLE};
pub use redis::RedisOp;
pub use sql::SqlOp;

use super::StatementKind;

/// An operation native to one family of systems, generic over its argument slots `A`: the
/// workload compiles `NativeOp<Template>`, and a target receives `NativeOp<ValueKind>`, the
/// same shape with each argument's kind, beside the rendered arguments (see
/// [`super::Op::Native`]).
#[derive(Debug, Clone, PartialEq)]
pub enum NativeOp<A> {
    Sql(SqlOp<A>),
    Redis(RedisOp<A>),
    Ldap(LdapOp<A>),
    Http(HttpOp<A>),
    Record(RecordOp<A>),
    Grpc(GrpcOp<A>),
    Memcached(MemcachedOp<A>),
}

/// The families of native operations; a target runs some of them ([`NativeOp::family`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Sql,
    Redis,
    Ldap,
    Http,
    /// `record.*`: YCSB's record operations, which each store that holds records (SQL,
    /// Redis, files) maps onto its own layout.
    Record,
    Grpc,
    Memcached,
}

impl Family {
    pub const ALL: [Family; 7] = [
        Family::Sql,
        Family::Redis,
        Family::Ldap,
        Family::Http,
        Family::Record,
        Family::Grpc,
        Family::Memcached,
    ];

    /// Its name as users write it: "sql", "redis", "ldap", "http", "record", "grpc" or "memcached".
    pub fn name(self) -> &'static str {
        match self {
            Family::Sql => "sql",
            Family::Redis => "redis",
            Family::Ldap => "ldap",
            Family::Http => "http",
            Family::Record => "record",
            Family::Grpc => "grpc",
            Family::Memcached => "memcached",
        }
    }
}

/// What the operations of one family answer, written once beside them. `A` is the
/// argument slot: a template in the workload, a [`super::ValueKind`] at a target.
pub trait OpFamily<A>: Sized {
    /// The same operations over other argument slots.
    type With<B>;

    /// The operation's name as workloads write it: `sql`, `ldap.search`, `record.read`.
    fn label(&self) -> &'static str;

    /// The same operation with every argument replaced by `f` of it, `f` called in the
    /// order the rendered arguments are handed to a target.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> Self::With<B>;

    /// The operation as people read it (`loadrig ops`), after its label: its arguments in
    /// [`OpFamily::map_args`] order, each with the words around it.
    fn pieces(self) -> Vec<Piece<A>>;

    /// What it does to the target, for the statement counts; `constant` gives an
    /// argument's text when the argument never varies (a Redis command's name).
    fn statement_kind(&self, constant: impl Fn(&A) -> Option<String>) -> StatementKind;

    /// Whether its first row, reply or entry can fill `names` capture slots; if not, why.
    fn check_capture(&self, names: usize) -> Result<(), String> {
        let _ = names;
        Err(CAPTURES.to_string())
    }

    /// The statement it sends, as written, for a family whose operations carry one (SQL):
    /// result files record it beside the parameters.
    fn statement(&self) -> Option<&str> {
        None
    }
}

/// Which operations capture, for an operation that cannot.
pub const CAPTURES: &str =
    "capture applies to sql, redis and ldap.search operations and tx steps, to http (its body), to grpc (its reply), and to memcached.get, gets, gat, gats, incr and decr";

/// A piece of a native operation as people read it, in [`OpFamily::map_args`] order: an
/// operation reads as its label, then its pieces, separated by spaces.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece<A> {
    /// An argument after its name: `dn=` and the value (`""`: the value alone).
    Arg(String, A),
    /// An argument never shown: its name and `***` (a bind password).
    Secret(String, A),
    /// The key of the record it reads or writes: shown as an argument, and named apart.
    Key(A),
    /// The statement's text, quoted, and named apart (SQL).
    Statement(String),
    /// Arguments in brackets, `[a, b]`, nothing when there are none (SQL parameters).
    List(Vec<A>),
    /// Text as it is: `attrs=cn,mail`, `fields=all`.
    Word(String),
}

/// `$body` with `$o` bound to the family's operation inside the native operation `$op`.
macro_rules! each_family {
    ($op:expr, $o:ident => $body:expr) => {
        match $op {
            NativeOp::Sql($o) => $body,
            NativeOp::Redis($o) => $body,
            NativeOp::Ldap($o) => $body,
            NativeOp::Http($o) => $body,
            NativeOp::Record($o) => $body,
            NativeOp::Grpc($o) => $body,
            NativeOp::Memcached($o) => $body,
        }
    };
}

impl<A> NativeOp<A> {
    /// The family of systems that run it.
    pub fn family(&self) -> Family {
        match self {
            NativeOp::Sql(_) => Family::Sql,
            NativeOp::Redis(_) => Family::Redis,
            NativeOp::Ldap(_) => Family::Ldap,
            NativeOp::Http(_) => Family::Http,
            NativeOp::Record(_) => Family::Record,
            NativeOp::Grpc(_) => Family::Grpc,
            NativeOp::Memcached(_) => Family::Memcached,
        }
    }

    /// See [`OpFamily::label`].
    pub fn label(&self) -> &'static str {
        each_family!(self, o => o.label())
    }

    /// The same operation with every argument replaced by `f` of it, in the order the
    /// rendered arguments are handed to a target (each family's [`OpFamily::map_args`]).
    pub fn map_args<B>(self, mut f: impl FnMut(A) -> B) -> NativeOp<B> {
        let f = &mut f;
        match self {
            NativeOp::Sql(o) => NativeOp::Sql(o.map_args(f)),
            NativeOp::Redis(o) => NativeOp::Redis(o.map_args(f)),
            NativeOp::Ldap(o) => NativeOp::Ldap(o.map_args(f)),
            NativeOp::Http(o) => NativeOp::Http(o.map_args(f)),
            NativeOp::Record(o) => NativeOp::Record(o.map_args(f)),
            NativeOp::Grpc(o) => NativeOp::Grpc(o.map_args(f)),
            NativeOp::Memcached(o) => NativeOp::Memcached(o.map_args(f)),
        }
    }

    /// See [`OpFamily::pieces`].
    pub fn pieces(self) -> Vec<Piece<A>> {
        each_family!(self, o => o.pieces())
    }

    /// See [`OpFamily::statement_kind`].
    pub fn statement_kind(&self, constant: impl Fn(&A) -> Option<String>) -> StatementKind {
        each_family!(self, o => o.statement_kind(constant))
    }

    /// See [`OpFamily::check_capture`].
    pub fn check_capture(&self, names: usize) -> Result<(), String> {
        each_family!(self, o => o.check_capture(names))
    }

    /// See [`OpFamily::statement`].
    pub fn statement(&self) -> Option<&str> {
        each_family!(self, o => o.statement())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::ValueKind;

    #[test]
    fn families_have_their_names() {
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "sql",
                "redis",
                "ldap",
                "http",
                "record",
                "grpc",
                "memcached"
            ]
        );
    }

    #[test]
    fn native_ops_know_their_family() {
        let search = NativeOp::Ldap(LdapOp::Search {
            base: (),
            scope: Scope::Sub,
            filter: (),
            attrs: Vec::new(),
        });
        assert_eq!(
            (search.family(), search.label()),
            (Family::Ldap, "ldap.search")
        );
        let redis = NativeOp::Redis(RedisOp { args: vec![(); 2] });
        assert_eq!((redis.family(), redis.label()), (Family::Redis, "redis"));
        let read = NativeOp::Record(RecordOp::Read {
            key: (),
            field: None,
        });
        assert_eq!(
            (read.family(), read.label()),
            (Family::Record, "record.read")
        );
    }

    /// The numbers of the arguments `map_args` visits, in visiting order.
    fn visit_order(op: NativeOp<u32>) -> Vec<u32> {
        let mut seen = Vec::new();
        op.map_args(|a| seen.push(a));
        seen
    }

    /// The numbers of the arguments the pieces show, in order.
    fn shown_order(op: NativeOp<u32>) -> Vec<u32> {
        op.pieces()
            .into_iter()
            .flat_map(|p| match p {
                Piece::Arg(_, a) | Piece::Secret(_, a) | Piece::Key(a) => vec![a],
                Piece::List(list) => list,
                Piece::Statement(_) | Piece::Word(_) => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn map_args_visits_arguments_in_the_documented_order() {
        let add = NativeOp::Ldap(LdapOp::Add {
            dn: 0,
            attrs: vec![("cn".into(), vec![1, 2]), ("sn".into(), vec![3])],
        });
        assert_eq!(visit_order(add), [0, 1, 2, 3]);
        let search = NativeOp::Ldap(LdapOp::Search {
            base: 0,
            scope: Scope::One,
            filter: 1,
            attrs: vec!["cn".into()],
        });
        assert_eq!(visit_order(search), [0, 1]);
        let scan = NativeOp::Record(RecordOp::Scan {
            key: 0,
            count: 1,
            field: Some(2),
        });
        assert_eq!(visit_order(scan), [0, 1, 2]);
        let update = NativeOp::Record(RecordOp::Update {
            key: 0,
            field: Some(1),
            values: vec![2],
        });
        assert_eq!(visit_order(update), [0, 1, 2]);
        let http = NativeOp::Http(HttpOp {
            method: "POST".into(),
            path: 0,
            headers: vec![("a".into(), 1), ("b".into(), 2)],
            body: Some(3),
            expect: None,
        });
        assert_eq!(visit_order(http.clone()), [0, 1, 2, 3]);
        // The shape survives the mapping.
        let kinds = http.map_args(|_| ValueKind::Bytes);
        assert_eq!(
            kinds,
            NativeOp::Http(HttpOp {
                method: "POST".into(),
                path: ValueKind::Bytes,
                headers: vec![
                    ("a".into(), ValueKind::Bytes),
                    ("b".into(), ValueKind::Bytes)
                ],
                body: Some(ValueKind::Bytes),
                expect: None,
            })
        );
    }

    #[test]
    fn pieces_show_every_argument_in_map_args_order() {
        let ops = [
            NativeOp::Sql(SqlOp {
                id: 0,
                query: "SELECT $1, $2".into(),
                params: vec![0, 1],
            }),
            NativeOp::Redis(RedisOp {
                args: vec![0, 1, 2],
            }),
            NativeOp::Ldap(LdapOp::Bind { dn: 0, password: 1 }),
            NativeOp::Ldap(LdapOp::Modify {
                dn: 0,
                replace: vec![("cn".into(), vec![1, 2])],
            }),
            NativeOp::Http(HttpOp {
                method: "PUT".into(),
                path: 0,
                headers: vec![("a".into(), 1)],
                body: Some(2),
                expect: None,
            }),
            NativeOp::Record(RecordOp::Insert {
                key: 0,
                values: vec![1, 2],
            }),
            NativeOp::Record(RecordOp::Scan {
                key: 0,
                count: 1,
                field: Some(2),
            }),
        ];
        for op in ops {
            let label = op.label();
            assert_eq!(shown_order(op.clone()), visit_order(op), "{label}");
        }
    }

    #[test]
    fn only_operations_that_return_values_capture() {
        let sql = NativeOp::Sql(SqlOp {
            id: 0,
            query: "SELECT 1".into(),
            params: Vec::<()>::new(),
        });
        assert_eq!(sql.check_capture(3), Ok(()));
        assert_eq!(sql.statement(), Some("SELECT 1"));
        let http = NativeOp::Http(HttpOp {
            method: "GET".into(),
            path: (),
            headers: Vec::new(),
            body: None,
            expect: None,
        });
        assert_eq!(http.check_capture(1), Ok(()));
        assert_eq!(
            http.check_capture(2),
            Err("http captures one value, the response body: 2 names".into())
        );
        assert_eq!(http.statement(), None);
        let search = NativeOp::Ldap(LdapOp::Search {
            base: (),
            scope: Scope::Sub,
            filter: (),
            attrs: vec!["cn".into()],
        });
        assert_eq!(search.check_capture(2), Ok(()));
        assert!(search.check_capture(3).is_err());
        let delete = NativeOp::Record(RecordOp::Delete { key: () });
        assert_eq!(delete.check_capture(1), Err(CAPTURES.into()));
    }

    #[test]
    fn statements_count_as_their_family_says() {
        let constant = |t: &&str| Some(t.to_string());
        let kind = |op: NativeOp<&str>| op.statement_kind(constant);
        let redis = |cmd| NativeOp::Redis(RedisOp { args: vec![cmd] });
        assert_eq!(kind(redis("GET")), StatementKind::Read);
        assert_eq!(kind(redis("SET")), StatementKind::Write);
        let get = HttpOp {
            method: "HEAD".into(),
            path: "/",
            headers: Vec::new(),
            body: None,
            expect: None,
        };
        assert_eq!(kind(NativeOp::Http(get)), StatementKind::Read);
        let bind = LdapOp::Bind {
            dn: "cn=a",
            password: "p",
        };
        assert_eq!(kind(NativeOp::Ldap(bind)), StatementKind::Other);
        let scan = RecordOp::Scan {
            key: "k",
            count: "1",
            field: None,
        };
        assert_eq!(kind(NativeOp::Record(scan)), StatementKind::Read);
        // A command computed at run time counts as a write.
        let computed = NativeOp::Redis(RedisOp { args: vec!["{x}"] });
        assert_eq!(computed.statement_kind(|_| None), StatementKind::Write);
    }
}
