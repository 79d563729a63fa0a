//! `ldap.*`: search, bind, add, modify and delete.

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// An LDAP operation; an entry's attributes (add) and replaced values (modify) are each a
/// name with its values.
#[derive(Debug, Clone, PartialEq)]
pub enum LdapOp<A> {
    Search {
        base: A,
        scope: Scope,
        filter: A,
        attrs: Vec<String>,
    },
    Bind {
        dn: A,
        password: A,
    },
    Add {
        dn: A,
        attrs: Vec<(String, Vec<A>)>,
    },
    Modify {
        dn: A,
        replace: Vec<(String, Vec<A>)>,
    },
    Delete {
        dn: A,
    },
}

/// LDAP search scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Base,
    One,
    Sub,
}

impl Scope {
    /// Its name as workloads write it.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Base => "base",
            Scope::One => "one",
            Scope::Sub => "sub",
        }
    }
}

impl<A> OpFamily<A> for LdapOp<A> {
    type With<B> = LdapOp<B>;

    fn label(&self) -> &'static str {
        match self {
            LdapOp::Search { .. } => "ldap.search",
            LdapOp::Bind { .. } => "ldap.bind",
            LdapOp::Add { .. } => "ldap.add",
            LdapOp::Modify { .. } => "ldap.modify",
            LdapOp::Delete { .. } => "ldap.delete",
        }
    }

    /// Search: base, filter; bind: DN, password; add or modify: DN, then each attribute's
    /// values; delete: DN.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> LdapOp<B> {
        match self {
            LdapOp::Search {
                base,
                scope,
                filter,
                attrs,
            } => {
                let base = f(base);
                LdapOp::Search {
                    base,
                    scope,
                    filter: f(filter),
                    attrs,
                }
            }
            LdapOp::Bind { dn, password } => {
                let dn = f(dn);
                LdapOp::Bind {
                    dn,
                    password: f(password),
                }
            }
            LdapOp::Add { dn, attrs } => {
                let dn = f(dn);
                LdapOp::Add {
                    dn,
                    attrs: map_values(attrs, f),
                }
            }
            LdapOp::Modify { dn, replace } => {
                let dn = f(dn);
                LdapOp::Modify {
                    dn,
                    replace: map_values(replace, f),
                }
            }
            LdapOp::Delete { dn } => LdapOp::Delete { dn: f(dn) },
        }
    }

    /// `base=... scope=sub filter=... attrs=cn,mail`, `dn=... password=***`,
    /// `dn=... cn=... sn=...`.
    fn pieces(self) -> Vec<Piece<A>> {
        let dn = |dn| Piece::Arg("dn=".into(), dn);
        match self {
            LdapOp::Search {
                base,
                scope,
                filter,
                attrs,
            } => {
                let mut pieces = vec![
                    Piece::Arg("base=".into(), base),
                    Piece::Arg(format!("scope={} filter=", scope.name()), filter),
                ];
                if !attrs.is_empty() {
                    pieces.push(Piece::Word(format!("attrs={}", attrs.join(","))));
                }
                pieces
            }
            LdapOp::Bind { dn: d, password } => {
                vec![dn(d), Piece::Secret("password=".into(), password)]
            }
            LdapOp::Add {
                dn: d,
                attrs: entry,
            }
            | LdapOp::Modify {
                dn: d,
                replace: entry,
            } => {
                let mut pieces = vec![dn(d)];
                for (name, values) in entry {
                    pieces.extend(
                        values
                            .into_iter()
                            .map(|v| Piece::Arg(format!("{name}="), v)),
                    );
                }
                pieces
            }
            LdapOp::Delete { dn: d } => vec![dn(d)],
        }
    }

    fn statement_kind(&self, _: impl Fn(&A) -> Option<String>) -> StatementKind {
        match self {
            LdapOp::Search { .. } => StatementKind::Read,
            LdapOp::Bind { .. } => StatementKind::Other,
            LdapOp::Add { .. } | LdapOp::Modify { .. } | LdapOp::Delete { .. } => {
                StatementKind::Write
            }
        }
    }

    /// A search: no more values than it returns (its first entry's DN, then one per listed
    /// attribute). The others return none.
    fn check_capture(&self, names: usize) -> Result<(), String> {
        match self {
            LdapOp::Search { attrs, .. } if names <= 1 + attrs.len() => Ok(()),
            LdapOp::Search { attrs, .. } => Err(format!(
                "ldap.search captures the first entry's DN, then one value per listed attribute: {names} name(s) for {} value(s)",
                1 + attrs.len()
            )),
            LdapOp::Bind { .. }
            | LdapOp::Add { .. }
            | LdapOp::Modify { .. }
            | LdapOp::Delete { .. } => Err(super::CAPTURES.to_string()),
        }
    }
}

/// An LDAP entry's attribute values, mapped in order.
fn map_values<A, B>(
    attrs: Vec<(String, Vec<A>)>,
    f: &mut impl FnMut(A) -> B,
) -> Vec<(String, Vec<B>)> {
    attrs
        .into_iter()
        .map(|(name, v)| (name, v.into_iter().map(&mut *f).collect()))
        .collect()
}
