//! `memcached.*`: one command of memcached's text protocol (get, gets, gat, gats, set, add,
//! replace, append, prepend, cas, incr, decr, touch, delete) on keys in loadrig's namespace.

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// A memcached command. Keys are as written: the target puts them under its prefix.
#[derive(Debug, Clone, PartialEq)]
pub enum MemcachedOp<A> {
    /// `get` (`cas`: `gets`, each value with its CAS token) of one key or several.
    Get {
        keys: Vec<A>,
        cas: bool,
    },
    /// `gat` (`cas`: `gats`): the same, each item found given the expiry `exptime`.
    Gat {
        exptime: A,
        keys: Vec<A>,
        cas: bool,
    },
    /// `set`, `add`, `replace`, `append` or `prepend` of one item.
    Store {
        mode: StoreMode,
        key: A,
        value: A,
        flags: A,
        exptime: A,
    },
    /// `cas`: store only if the item's CAS token is still `cas` (from a `gets`).
    Cas {
        key: A,
        value: A,
        flags: A,
        exptime: A,
        cas: A,
    },
    /// `incr` (`decr`: `decr`) of a decimal value by `by`.
    Arith {
        decr: bool,
        key: A,
        by: A,
    },
    /// `touch`: a new expiry without reading the item.
    Touch {
        key: A,
        exptime: A,
    },
    Delete {
        key: A,
    },
}

/// How a store command treats an item that exists or does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// Always store.
    Set,
    /// Only if the key has no item.
    Add,
    /// Only if it has one.
    Replace,
    /// Add the value after an existing item's.
    Append,
    /// Add the value before an existing item's.
    Prepend,
}

impl StoreMode {
    /// The command's name on the wire.
    pub fn command(self) -> &'static str {
        match self {
            StoreMode::Set => "set",
            StoreMode::Add => "add",
            StoreMode::Replace => "replace",
            StoreMode::Append => "append",
            StoreMode::Prepend => "prepend",
        }
    }
}

impl<A> OpFamily<A> for MemcachedOp<A> {
    type With<B> = MemcachedOp<B>;

    fn label(&self) -> &'static str {
        match self {
            MemcachedOp::Get { cas: false, .. } => "memcached.get",
            MemcachedOp::Get { cas: true, .. } => "memcached.gets",
            MemcachedOp::Gat { cas: false, .. } => "memcached.gat",
            MemcachedOp::Gat { cas: true, .. } => "memcached.gats",
            MemcachedOp::Store { mode, .. } => match mode {
                StoreMode::Set => "memcached.set",
                StoreMode::Add => "memcached.add",
                StoreMode::Replace => "memcached.replace",
                StoreMode::Append => "memcached.append",
                StoreMode::Prepend => "memcached.prepend",
            },
            MemcachedOp::Cas { .. } => "memcached.cas",
            MemcachedOp::Arith { decr: false, .. } => "memcached.incr",
            MemcachedOp::Arith { decr: true, .. } => "memcached.decr",
            MemcachedOp::Touch { .. } => "memcached.touch",
            MemcachedOp::Delete { .. } => "memcached.delete",
        }
    }

    /// In the order of the command line: get, the keys; gat, the expiry then the keys;
    /// a store, key, value, flags, expiry (and cas's token); incr and decr, key and amount;
    /// touch, key and expiry; delete, the key.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> MemcachedOp<B> {
        match self {
            MemcachedOp::Get { keys, cas } => MemcachedOp::Get {
                keys: keys.into_iter().map(f).collect(),
                cas,
            },
            MemcachedOp::Gat { exptime, keys, cas } => {
                let exptime = f(exptime);
                MemcachedOp::Gat {
                    exptime,
                    keys: keys.into_iter().map(f).collect(),
                    cas,
                }
            }
            MemcachedOp::Store {
                mode,
                key,
                value,
                flags,
                exptime,
            } => {
                let (key, value, flags) = (f(key), f(value), f(flags));
                MemcachedOp::Store {
                    mode,
                    key,
                    value,
                    flags,
                    exptime: f(exptime),
                }
            }
            MemcachedOp::Cas {
                key,
                value,
                flags,
                exptime,
                cas,
            } => {
                let (key, value, flags, exptime) = (f(key), f(value), f(flags), f(exptime));
                MemcachedOp::Cas {
                    key,
                    value,
                    flags,
                    exptime,
                    cas: f(cas),
                }
            }
            MemcachedOp::Arith { decr, key, by } => {
                let key = f(key);
                MemcachedOp::Arith {
                    decr,
                    key,
                    by: f(by),
                }
            }
            MemcachedOp::Touch { key, exptime } => {
                let key = f(key);
                MemcachedOp::Touch {
                    key,
                    exptime: f(exptime),
                }
            }
            MemcachedOp::Delete { key } => MemcachedOp::Delete { key: f(key) },
        }
    }

    /// `KEY`, or `[K1, K2]` for several; then `value=`, `flags=`, `exptime=`, `cas=`,
    /// `by=` as the command has them.
    fn pieces(self) -> Vec<Piece<A>> {
        let keys = |mut keys: Vec<A>| match keys.len() {
            1 => Piece::Key(keys.remove(0)),
            _ => Piece::List(keys),
        };
        let arg = |name: &str, a| Piece::Arg(format!("{name}="), a);
        match self {
            MemcachedOp::Get { keys: k, .. } => vec![keys(k)],
            MemcachedOp::Gat {
                exptime, keys: k, ..
            } => vec![arg("exptime", exptime), keys(k)],
            MemcachedOp::Store {
                key,
                value,
                flags,
                exptime,
                ..
            } => vec![
                Piece::Key(key),
                arg("value", value),
                arg("flags", flags),
                arg("exptime", exptime),
            ],
            MemcachedOp::Cas {
                key,
                value,
                flags,
                exptime,
                cas,
            } => vec![
                Piece::Key(key),
                arg("value", value),
                arg("flags", flags),
                arg("exptime", exptime),
                arg("cas", cas),
            ],
            MemcachedOp::Arith { key, by, .. } => vec![Piece::Key(key), arg("by", by)],
            MemcachedOp::Touch { key, exptime } => vec![Piece::Key(key), arg("exptime", exptime)],
            MemcachedOp::Delete { key } => vec![Piece::Key(key)],
        }
    }

    /// `get` and `gets` read; every other command changes an item (`gat` its expiry).
    fn statement_kind(&self, _: impl Fn(&A) -> Option<String>) -> StatementKind {
        match self {
            MemcachedOp::Get { .. } => StatementKind::Read,
            _ => StatementKind::Write,
        }
    }

    /// The get family: each key's value (and with `gets`/`gats` its CAS token after it);
    /// incr and decr: the new value.
    fn check_capture(&self, names: usize) -> Result<(), String> {
        let (most, what) = match self {
            MemcachedOp::Get { keys, cas } | MemcachedOp::Gat { keys, cas, .. } => {
                let per_key = if *cas { 2 } else { 1 };
                let what = if *cas {
                    "each key's value and CAS token"
                } else {
                    "each key's value"
                };
                (keys.len() * per_key, what)
            }
            MemcachedOp::Arith { .. } => (1, "the new value"),
            _ => return Err(super::CAPTURES.to_string()),
        };
        if names <= most {
            Ok(())
        } else {
            Err(format!(
                "{} captures {what}, {most} value(s): {names} names",
                self.label()
            ))
        }
    }
}
