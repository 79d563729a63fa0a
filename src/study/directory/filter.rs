//! The search filter: what the study can check. Only what the seed's search needs is taken:
//! one attribute of a person, equal to a value or starting with one (`(cn=fname2101*)`), so
//! that the entries every row must return follow from the generator, and the value back-sql
//! puts into its SQL is known (to explain the statement it sent). Anything else is refused
//! with the part that is not taken, before anything runs.

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

pub fn parse(text: &str) -> Result<Filter, InputError> {
    let refuse = |part: &str, why: &str| {
        InputError::new(format!("filter {text}: cannot translate '{part}': {why}")).help(
            "the directory study takes (ATTR=VALUE) and (ATTR=PREFIX*) on uid, cn, sn, givenName or mail, like (cn=fname2101*)",
        )
    };
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| refuse(text, "expected one parenthesised (ATTR=VALUE)"))?;
    if let Some(op) = ["&", "|", "!"].iter().find(|op| inner.starts_with(**op)) {
        return Err(refuse(op, "and, or and not are not taken"));
    }
    if let Some(op) = [">=", "<=", "~=", ":="]
        .iter()
        .find(|op| inner.contains(**op))
    {
        return Err(refuse(op, "only equality and prefix matches are taken"));
    }
    let (attr, value) = inner
        .split_once('=')
        .ok_or_else(|| refuse(inner, "expected ATTR=VALUE"))?;
    let (attr, column) = ATTRS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(attr.trim()))
        .copied()
        .ok_or_else(|| refuse(attr, "not an attribute of the generated people"))?;
    if attr == "telephoneNumber" {
        // telephoneNumberMatch ignores spaces and hyphens: which entries match is the
        // server's rule, not a comparison of the stored text.
        return Err(refuse(
            attr,
            "its matching rule ignores spaces and hyphens, which the study's expected entries do not model",
        ));
    }
    if let Some(bad) = value.chars().find(|c| matches!(c, '(' | ')' | '\\' | '\'')) {
        return Err(refuse(
            &bad.to_string(),
            "escapes, quotes and nested filters are not taken",
        ));
    }
    let (value, prefix) = match value.strip_suffix('*') {
        Some(v) => (v, true),
        None => (value, false),
    };
    if value.is_empty() {
        return Err(refuse(&format!("{attr}=*"), "presence is not taken"));
    }
    if value.contains('*') {
        return Err(refuse(value, "only a trailing * (a prefix match) is taken"));
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

    /// The literal back-sql writes into its SQL for this filter: the value upper-cased, a
    /// prefix with `%` after it (`LIKE 'FNAME2101%'`; an equality is `='USER21'`).
    pub fn backsql_literal(&self) -> String {
        let upper = self.value.to_uppercase();
        if self.prefix {
            format!("{upper}%")
        } else {
            upper
        }
    }
}

/// The DN upper-cased and reversed, as back-sql's `dn_ru` column holds it and as it searches
/// it (character by character, which is the seed's byte reversal for ASCII DNs; a reversed
/// multi-byte character would not be text).
pub fn reversed_upper(dn: &str) -> String {
    dn.to_uppercase().chars().rev().collect()
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
        assert_eq!(f.backsql_literal(), "FNAME2101%");
        assert_eq!(parse("(uid=user21)").unwrap().backsql_literal(), "USER21");
        assert_eq!(reversed_upper("ou=people,dc=x"), "X=CD,ELPOEP=UO");
        for (bad, part) in [
            ("(&(cn=a)(sn=b))", "'&'"),
            ("(cn>=a)", "'>='"),
            ("(cn=a*b)", "'a*b'"),
            ("(description=x)", "'description'"),
            ("(telephoneNumber=+1*)", "'telephoneNumber'"),
            ("(cn=o'brien)", "'''"),
            ("(cn=*)", "'cn=*'"),
            ("cn=a", "'cn=a'"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(part), "{e}");
        }
    }
}
