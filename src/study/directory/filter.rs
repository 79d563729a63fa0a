//! The search filter and its translation into SQL under each schema. Only what back-sql's
//! seed search needs is translated: one attribute of a person, equal to a value or starting
//! with one (`(cn=fname2101*)`), in the subtree of a base. Anything else is refused with the
//! part that cannot be translated, before anything runs.

use crate::error::InputError;
use crate::workload::import::ldif::Person;

/// The attributes a person has: LDAP name, SQL column.
pub const ATTRS: [(&str, &str); 6] = [
    ("uid", "uid"),
    ("cn", "cn"),
    ("sn", "sn"),
    ("givenName", "given_name"),
    ("mail", "mail"),
    ("telephoneNumber", "telephone_number"),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub text: String,
    /// The LDAP attribute name, as [`ATTRS`] spells it.
    pub attr: &'static str,
    pub column: &'static str,
    pub value: String,
    pub prefix: bool,
}

/// The two schemas: the seed's naive back-sql one and its optimised one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    Naive,
    Optimised,
}

impl Schema {
    pub fn table(self) -> &'static str {
        match self {
            Schema::Naive => "loadrig_dir_naive",
            Schema::Optimised => "loadrig_dir_opt",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Schema::Naive => "naive",
            Schema::Optimised => "optimised",
        }
    }
}

pub fn parse(text: &str) -> Result<Filter, InputError> {
    let refuse = |part: &str, why: &str| {
        InputError::new(format!(
            "filter {text}: cannot translate '{part}' into SQL: {why}"
        ))
        .help("the directory study translates (ATTR=VALUE) and (ATTR=PREFIX*) on uid, cn, sn, givenName, mail or telephoneNumber, like (cn=fname2101*)")
    };
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| refuse(text, "expected one parenthesised (ATTR=VALUE)"))?;
    if let Some(op) = ["&", "|", "!"].iter().find(|op| inner.starts_with(**op)) {
        return Err(refuse(op, "and, or and not are not translated"));
    }
    if let Some(op) = [">=", "<=", "~=", ":="]
        .iter()
        .find(|op| inner.contains(**op))
    {
        return Err(refuse(
            op,
            "only equality and prefix matches are translated",
        ));
    }
    let (attr, value) = inner
        .split_once('=')
        .ok_or_else(|| refuse(inner, "expected ATTR=VALUE"))?;
    let (attr, column) = ATTRS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(attr.trim()))
        .copied()
        .ok_or_else(|| refuse(attr, "not an attribute of the generated people"))?;
    if let Some(bad) = value.chars().find(|c| matches!(c, '(' | ')' | '\\')) {
        return Err(refuse(
            &bad.to_string(),
            "escapes and nested filters are not translated",
        ));
    }
    let (value, prefix) = match value.strip_suffix('*') {
        Some(v) => (v, true),
        None => (value, false),
    };
    if value.is_empty() {
        return Err(refuse(&format!("{attr}=*"), "presence is not translated"));
    }
    if value.contains('*') {
        return Err(refuse(
            value,
            "only a trailing * (a prefix match) is translated",
        ));
    }
    Ok(Filter {
        text: text.trim().to_string(),
        attr,
        column,
        value: value.to_string(),
        prefix,
    })
}

impl Filter {
    /// Whether a person matches, as an LDAP server compares (case-insensitive).
    pub fn matches(&self, p: &Person) -> bool {
        let Some(v) = p.value(self.attr) else {
            return false;
        };
        let (v, want) = (v.to_uppercase(), self.value.to_uppercase());
        if self.prefix {
            v.starts_with(&want)
        } else {
            v == want
        }
    }

    /// The query (placeholders `$1`, `$2`, ... on SQLite and PostgreSQL alike) and its
    /// arguments, for a subtree search under `base`:
    /// - naive, as back-sql wrote it: `UPPER(attr) LIKE UPPER($1)` (or `=`) and
    ///   `UPPER(dn) LIKE '%' || UPPER(base)`: functions of columns, a leading wildcard;
    /// - optimised: the upper-cased column compared with the upper-cased value (a prefix as
    ///   the range [P, P+1)), and the reversed upper-cased DN as the range of the reversed
    ///   `,BASE`: both ranges of an index.
    pub fn sql(&self, schema: Schema, base: &str) -> Result<(String, Vec<String>), InputError> {
        let (t, c) = (schema.table(), self.column);
        Ok(match schema {
            Schema::Naive => {
                let value = if self.prefix {
                    format!("{}%", like_escape(&self.value))
                } else {
                    self.value.clone()
                };
                let op = if self.prefix {
                    "LIKE UPPER($1) ESCAPE '\\'"
                } else {
                    "= UPPER($1)"
                };
                (
                    format!("SELECT dn, uid FROM {t} WHERE UPPER({c}) {op} AND UPPER(dn) LIKE $2 ESCAPE '\\'"),
                    vec![value, format!("%{}", like_escape(&base.to_uppercase()))],
                )
            }
            Schema::Optimised => {
                let under = reversed_upper(&format!(",{base}"));
                let mut args = vec![self.value.to_uppercase()];
                let test = if self.prefix {
                    args.push(successor(&self.value.to_uppercase()).ok_or_else(|| {
                        InputError::new(format!(
                            "filter {}: no string follows the prefix",
                            self.text
                        ))
                    })?);
                    format!("{c}_u >= $1 AND {c}_u < $2")
                } else {
                    format!("{c}_u = $1")
                };
                let n = args.len();
                args.push(under.clone());
                args.push(successor(&under).expect("a DN ends in a character with a successor"));
                (
                    format!(
                        "SELECT dn, uid FROM {t} WHERE {test} AND dn_ru >= ${} AND dn_ru < ${}",
                        n + 1,
                        n + 2
                    ),
                    args,
                )
            }
        })
    }
}

/// The DN upper-cased and reversed (character by character: byte by byte for ASCII, as the
/// seed's `dn_ru`; a reversed multi-byte character would not be text).
pub fn reversed_upper(dn: &str) -> String {
    dn.to_uppercase().chars().rev().collect()
}

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// The first string after every string that starts with `s`, in code point (UTF-8 byte)
/// order: `s` with its last character incremented.
fn successor(s: &str) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_filter_and_refusals() {
        let f = parse("(cn=fname2101*)").unwrap();
        assert_eq!(
            (f.attr, f.value.as_str(), f.prefix),
            ("cn", "fname2101", true)
        );
        let (q, args) = f.sql(Schema::Optimised, "ou=people,dc=x").unwrap();
        assert!(q.contains("cn_u >= $1 AND cn_u < $2"), "{q}");
        assert_eq!(
            args[..2],
            ["FNAME2101".to_string(), "FNAME2102".to_string()]
        );
        assert_eq!(args[2], "X=CD,ELPOEP=UO,");
        assert_eq!(args[3], "X=CD,ELPOEP=UO-");
        let (q, args) = f.sql(Schema::Naive, "ou=people,dc=x").unwrap();
        assert!(q.contains("UPPER(cn) LIKE UPPER($1)"), "{q}");
        assert_eq!(args, ["fname2101%", "%OU=PEOPLE,DC=X"]);
        for (bad, part) in [
            ("(&(cn=a)(sn=b))", "'&'"),
            ("(cn>=a)", "'>='"),
            ("(cn=a*b)", "'a*b'"),
            ("(description=x)", "'description'"),
            ("(cn=*)", "'cn=*'"),
            ("cn=a", "'cn=a'"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(part), "{e}");
        }
    }
}
