//! `memcached.get = { key = "..." }`, `memcached.set = { key, value, exptime, flags }`, ...:
//! one command of memcached's text protocol, keys as templates (the target puts them under
//! loadrig's prefix), numbers (`exptime`, `flags`, `by`, `cas`) as templates that must be
//! whole numbers.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::compiler::OpCompiler;
use crate::error::InputError;
use crate::vocab::{MemcachedOp, StoreMode, ValueKind};
use crate::workload::template::Template;

/// `memcached.VERB = { ... }`, one field per command.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MemcachedSection {
    get: Option<Spanned<McArgs>>,
    gets: Option<Spanned<McArgs>>,
    gat: Option<Spanned<McArgs>>,
    gats: Option<Spanned<McArgs>>,
    set: Option<Spanned<McArgs>>,
    add: Option<Spanned<McArgs>>,
    replace: Option<Spanned<McArgs>>,
    append: Option<Spanned<McArgs>>,
    prepend: Option<Spanned<McArgs>>,
    cas: Option<Spanned<McArgs>>,
    incr: Option<Spanned<McArgs>>,
    decr: Option<Spanned<McArgs>>,
    touch: Option<Spanned<McArgs>>,
    delete: Option<Spanned<McArgs>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct McArgs {
    key: Option<Spanned<String>>,
    /// Several keys (the get family): one request, one reply per key found.
    keys: Option<Spanned<Vec<Spanned<String>>>>,
    value: Option<Spanned<String>>,
    /// Seconds, or a Unix time (memcached's `exptime`); negative expires the item at once.
    exptime: Option<Spanned<String>>,
    flags: Option<Spanned<String>>,
    /// The CAS token of `memcached.cas`, usually captured from a `memcached.gets`.
    cas: Option<Spanned<String>>,
    /// The amount of `incr` and `decr` (default 1).
    by: Option<Spanned<String>>,
}

/// What a command takes besides its key(s).
struct Shape {
    many_keys: bool,
    value: bool,
    exptime: Need,
    flags: bool,
    cas: bool,
    by: bool,
}

#[derive(PartialEq)]
enum Need {
    No,
    Optional,
    Required,
}

impl OpCompiler<'_> {
    /// The memcached commands named in one table, in the order of [`MemcachedSection`].
    pub(super) fn memcached(
        &mut self,
        m: &MemcachedSection,
        captures: &[(String, usize)],
    ) -> Result<Vec<MemcachedOp<Template>>, InputError> {
        let verbs = [
            ("get", &m.get),
            ("gets", &m.gets),
            ("gat", &m.gat),
            ("gats", &m.gats),
            ("set", &m.set),
            ("add", &m.add),
            ("replace", &m.replace),
            ("append", &m.append),
            ("prepend", &m.prepend),
            ("cas", &m.cas),
            ("incr", &m.incr),
            ("decr", &m.decr),
            ("touch", &m.touch),
            ("delete", &m.delete),
        ];
        let mut out = Vec::new();
        for (verb, args) in verbs {
            if let Some(a) = args {
                out.push(self.memcached_op(verb, a, captures)?);
            }
        }
        Ok(out)
    }

    fn memcached_op(
        &mut self,
        verb: &str,
        a: &Spanned<McArgs>,
        captures: &[(String, usize)],
    ) -> Result<MemcachedOp<Template>, InputError> {
        let shape = shape_of(verb);
        let args = a.get_ref();
        let refuse = |c: &Self, what: &str, at: Range<usize>| {
            Err(c
                .source
                .error(at, format!("memcached.{verb} takes no {what}")))
        };
        let needs = |c: &Self, what: &str, example: &str| {
            Err(c.source.error(
                a.span(),
                format!("memcached.{verb} needs {what}: memcached.{verb} = {{ {example} }}"),
            ))
        };
        let example = match verb {
            "touch" | "gat" | "gats" => "key = \"session:{uniform 0..1000}\", exptime = \"1800\"",
            "cas" => "key = \"k\", value = \"{string 100}\", cas = \"{token}\"",
            _ if shape.value => "key = \"session:{seq}\", value = \"{string 512}\"",
            _ => "key = \"session:{uniform 0..1000}\"",
        };
        let checks: [(&str, &Option<Spanned<String>>, bool); 4] = [
            ("value", &args.value, shape.value),
            ("flags", &args.flags, shape.flags),
            ("cas", &args.cas, shape.cas),
            ("by", &args.by, shape.by),
        ];
        for (what, given, takes) in checks {
            if let (Some(g), false) = (given, takes) {
                return refuse(self, what, g.span());
            }
        }
        if let (Some(e), Need::No) = (&args.exptime, &shape.exptime) {
            return refuse(self, "exptime", e.span());
        }
        if let (Some(k), false) = (&args.keys, shape.many_keys) {
            return Err(self
                .source
                .error(k.span(), format!("memcached.{verb} takes one key"))
                .help("only the get family (get, gets, gat, gats) reads several keys at once"));
        }
        let keys = match (&args.key, &args.keys) {
            (Some(k), None) => vec![self.key_with(k, captures)?],
            (None, Some(ks)) if !ks.get_ref().is_empty() => ks
                .get_ref()
                .iter()
                .map(|k| self.key_with(k, captures))
                .collect::<Result<_, _>>()?,
            (Some(_), Some(ks)) => {
                return Err(self
                    .source
                    .error(ks.span(), "give key = \"...\" or keys = [...], not both"))
            }
            _ => return needs(self, "a key", example),
        };
        let value = match (&args.value, shape.value) {
            (Some(v), _) => Some(self.template(v, captures)?),
            (None, true) => return needs(self, "a value", example),
            (None, false) => None,
        };
        let cas = match (&args.cas, shape.cas) {
            (Some(c), _) => Some(self.mc_number(c, captures, "cas", false)?),
            (None, true) => return needs(self, "a CAS token", example),
            (None, false) => None,
        };
        let exptime = match (&args.exptime, &shape.exptime) {
            (Some(e), _) => Some(self.mc_number(e, captures, "exptime", true)?),
            (None, Need::Required) => return needs(self, "an exptime", example),
            (None, Need::Optional) => Some(self.template_at("0", &a.span(), captures)?),
            (None, Need::No) => None,
        };
        let flags = match &args.flags {
            Some(f) => self.mc_number(f, captures, "flags", false)?,
            None => self.template_at("0", &a.span(), captures)?,
        };
        let by = match &args.by {
            Some(b) => self.mc_number(b, captures, "by", false)?,
            None => self.template_at("1", &a.span(), captures)?,
        };
        let key = keys[0].clone();
        // Each is present when the command's shape needs it (checked or defaulted above).
        let need = |t: Option<Template>| t.expect("checked above");
        Ok(match verb {
            "get" | "gets" => MemcachedOp::Get {
                keys,
                cas: verb == "gets",
            },
            "gat" | "gats" => MemcachedOp::Gat {
                exptime: need(exptime),
                keys,
                cas: verb == "gats",
            },
            "cas" => MemcachedOp::Cas {
                key,
                value: need(value),
                flags,
                exptime: need(exptime),
                cas: need(cas),
            },
            "incr" | "decr" => MemcachedOp::Arith {
                decr: verb == "decr",
                key,
                by,
            },
            "touch" => MemcachedOp::Touch {
                key,
                exptime: need(exptime),
            },
            "delete" => MemcachedOp::Delete { key },
            store => MemcachedOp::Store {
                mode: match store {
                    "add" => StoreMode::Add,
                    "replace" => StoreMode::Replace,
                    "append" => StoreMode::Append,
                    "prepend" => StoreMode::Prepend,
                    _ => StoreMode::Set,
                },
                key,
                value: need(value),
                flags,
                exptime: need(exptime),
            },
        })
    }

    /// A number memcached reads from the command line: a whole number (negative only for
    /// `exptime`), an integer parameter, a number generator, or a captured value (a CAS
    /// token, checked when it is sent).
    fn mc_number(
        &mut self,
        text: &Spanned<String>,
        captures: &[(String, usize)],
        what: &str,
        signed: bool,
    ) -> Result<Template, InputError> {
        let t = self.template(text, captures)?;
        let ok = match t.constant_text() {
            Some(c) if signed => c.trim().parse::<i64>().is_ok(),
            Some(c) => c.trim().parse::<u64>().is_ok(),
            None => t.kind() == ValueKind::Integer || t.single_capture().is_some(),
        };
        if !ok {
            return Err(self
                .source
                .error(
                    text.span(),
                    format!("{what} = \"{}\": expected a whole number", text.get_ref()),
                )
                .help("a number, an integer parameter, a number generator such as {uniform 60..3600}, or one captured value"));
        }
        Ok(t)
    }
}

fn shape_of(verb: &str) -> Shape {
    let base = Shape {
        many_keys: false,
        value: false,
        exptime: Need::No,
        flags: false,
        cas: false,
        by: false,
    };
    match verb {
        "get" | "gets" => Shape {
            many_keys: true,
            ..base
        },
        "gat" | "gats" => Shape {
            many_keys: true,
            exptime: Need::Required,
            ..base
        },
        "set" | "add" | "replace" | "append" | "prepend" => Shape {
            value: true,
            exptime: Need::Optional,
            flags: true,
            ..base
        },
        "cas" => Shape {
            value: true,
            exptime: Need::Optional,
            flags: true,
            cas: true,
            ..base
        },
        "incr" | "decr" => Shape { by: true, ..base },
        "touch" => Shape {
            exptime: Need::Required,
            ..base
        },
        _ => base,
    }
}
