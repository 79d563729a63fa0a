//! The SQL back-sql sent for the searches, as PostgreSQL counted it (pg_stat_statements,
//! read by loadrig's observer of the server behind slapd), sorted into the kinds the seed
//! describes, and the statement that finds the people with its literals put back, to be
//! explained.
//!
//! pg_stat_statements keeps each statement's text with its constants replaced by `$1`,
//! `$2`, ... in the order they appear (psqlODBC sends back-sql's parameters as literals, the
//! data source's `UseServerSidePrepare = 0`). What back-sql put there is known from the
//! search: the object class, its id, the subtree's pattern and the filter's value, so the
//! statement can be explained with them; a text whose placeholders do not fit is reported,
//! not guessed at.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::backsql::{Mapping, CLASSES, OUS, PEOPLE};
use super::filter::{reversed_upper, Filter};
use crate::observe::{Observation, Role};

/// A statement naming one of these is back-sql's: nothing else uses them.
const TABLES: [&str; 6] = [
    "ldap_entries",
    "ldap_entry_objclasses",
    "ldap_oc_mappings",
    "ldap_attr_mappings",
    PEOPLE,
    OUS,
];

/// How back-sql's search of `ldap_entries` by the base's DN begins.
const BASE_LOOKUP: &str = "SELECT id,keyval,oc_map_id,dn FROM ldap_entries WHERE";
/// How back-sql's per-object-class candidate query begins.
const CANDIDATES: &str = "SELECT DISTINCT ldap_entries.id,";

/// One statement: its normalised text and the calls over the whole observation.
#[derive(Debug, Clone)]
pub struct Sent {
    pub text: String,
    pub calls: u64,
    /// PostgreSQL's execution time for those calls, ms.
    pub time_ms: f64,
}

/// What a statement is, in the seed's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The base entry looked up by its DN.
    BaseLookup,
    /// The query for one object class's candidates (`never`: its condition is a constant
    /// false, `1=0`, because the filter names an attribute the class does not map).
    Candidates { never: bool },
    /// Everything back-sql reads about each entry it found (its attributes, their counts,
    /// its object classes).
    PerEntry,
}

impl Sent {
    pub fn kind(&self) -> Kind {
        if self.text.starts_with(BASE_LOOKUP) {
            Kind::BaseLookup
        } else if self.text.starts_with(CANDIDATES) {
            Kind::Candidates {
                never: ends_constant_false(&self.text),
            }
        } else {
            Kind::PerEntry
        }
    }

    /// The object class a candidate query is for: the key table it names.
    pub fn class(&self) -> Option<&'static str> {
        CLASSES
            .iter()
            .find(|(_, _, table)| self.text.contains(&format!("FROM ldap_entries,{table} ")))
            .map(|(_, name, _)| *name)
    }
}

/// `... AND $5=$6`: two constants compared, back-sql's `1=0` once normalised.
fn ends_constant_false(text: &str) -> bool {
    let last = text.trim_end().rsplit(" AND ").next().unwrap_or("");
    let mut sides = last.split('=');
    let placeholder = |s: Option<&str>| {
        s.and_then(|s| s.trim().strip_prefix('$'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    placeholder(sides.next()) && placeholder(sides.next()) && sides.next().is_none()
}

/// back-sql's statements over the whole observation (summed over its intervals), most calls
/// first; or why PostgreSQL's counts are not known.
pub fn sent(obs: &Observation) -> Result<Vec<Sent>, String> {
    let lost = obs.unavailable.iter().find(|u| {
        u.server == Role::Behind
            && ["pg_stat_statements", "observation", "connection"].contains(&u.what.as_str())
    });
    if let Some(u) = lost {
        return Err(u.to_string());
    }
    let mut by_id: BTreeMap<&str, Sent> = BTreeMap::new();
    for st in obs
        .intervals
        .iter()
        .filter_map(|i| i.behind.as_ref())
        .flat_map(|b| &b.statements)
    {
        if !TABLES.iter().any(|t| st.text.contains(t)) || st.text.starts_with("EXPLAIN") {
            continue;
        }
        let sent = by_id.entry(&st.id).or_insert_with(|| Sent {
            text: st.text.clone(),
            calls: 0,
            time_ms: 0.0,
        });
        sent.calls += st.calls;
        sent.time_ms += st.time_ms;
    }
    let mut out: Vec<Sent> = by_id.into_values().collect();
    out.sort_by(|a, b| (a.kind(), b.calls).cmp(&(b.kind(), a.calls)));
    Ok(out)
}

/// The statements per search in words, one line each: PostgreSQL's execution time per
/// search (µs), calls per search and the text.
pub fn per_search_lines(sent: &[Sent], searches: u64) -> String {
    let mut s = String::new();
    for st in sent {
        let what = match st.kind() {
            Kind::BaseLookup => "base lookup".to_string(),
            Kind::Candidates { never } => format!(
                "candidates of {}{}",
                st.class().unwrap_or("a class"),
                if never { " (1=0: cannot match)" } else { "" }
            ),
            Kind::PerEntry => "per entry".to_string(),
        };
        let per_search = |v: f64| v / searches.max(1) as f64;
        let _ = writeln!(
            s,
            "{:>10.1} µs {:>6.2} × {what}: {}",
            per_search(st.time_ms * 1e3),
            per_search(st.calls as f64),
            st.text
        );
    }
    s
}

/// A constant back-sql wrote into a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lit {
    Str(String),
    Int(i64),
}

impl Lit {
    fn sql(&self) -> String {
        match self {
            Lit::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Lit::Int(n) => n.to_string(),
        }
    }
}

/// What back-sql put into its statements for a subtree search of `base_ndn` (normalised)
/// with `filter`, under `mapping`.
pub struct Search<'a> {
    pub mapping: Mapping,
    pub base_ndn: &'a str,
    pub filter: &'a Filter,
}

impl Search<'_> {
    /// The candidate query of the people's class: `text('inetOrgPerson')`, its id, the
    /// subtree (`upper(dn) LIKE upper('%'||'OU=PEOPLE,...')`, or with `dn_ru`
    /// `dn_ru LIKE 'REVERSED%'`) and the filter's value.
    pub fn candidate_values(&self) -> Vec<Lit> {
        let (id, name, _) = CLASSES[0];
        let mut v = vec![Lit::Str(name.into()), Lit::Int(id.into())];
        if self.mapping.upper {
            v.push(Lit::Str(format!("{}%", reversed_upper(self.base_ndn))));
        } else {
            v.push(Lit::Str("%".into()));
            v.push(Lit::Str(self.base_ndn.to_uppercase()));
        }
        v.push(Lit::Str(self.filter.backsql_literal()));
        v
    }

    /// The base lookup: `upper(dn)=upper('ou=people,...')`, or `dn_ru='REVERSED'`.
    pub fn base_values(&self) -> Vec<Lit> {
        if self.mapping.upper {
            vec![Lit::Str(reversed_upper(self.base_ndn))]
        } else {
            vec![Lit::Str(self.base_ndn.into())]
        }
    }
}

/// The statement that finds the people (the people's class's candidate query), and the base
/// lookup, among what was sent.
pub fn people_query(sent: &[Sent]) -> Option<&Sent> {
    sent.iter().find(|s| {
        matches!(s.kind(), Kind::Candidates { never: false }) && s.class() == Some(CLASSES[0].1)
    })
}

pub fn base_lookup(sent: &[Sent]) -> Option<&Sent> {
    sent.iter().find(|s| s.kind() == Kind::BaseLookup)
}

/// `text` with `$1`, `$2`, ... replaced by `values` in order; every placeholder from 1 to
/// the number of values must appear, and no other.
pub fn substitute(text: &str, values: &[Lit]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 64);
    let mut seen = vec![false; values.len()];
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            out.push('$');
            rest = &rest[at + 1..];
            continue;
        }
        let n: usize = rest[at + 1..at + 1 + digits].parse().unwrap_or(0);
        let Some(value) = n.checked_sub(1).and_then(|k| values.get(k)) else {
            return Err(format!(
                "${n} in the statement, but back-sql's search gives {} values",
                values.len()
            ));
        };
        seen[n - 1] = true;
        out.push_str(&value.sql());
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    match seen.iter().position(|s| !s) {
        Some(k) => Err(format!(
            "the statement has no ${}: it is not the one the study expects",
            k + 1
        )),
        None => Ok(out),
    }
}

/// Whether the plan compares `column` through an index (an index condition names it):
/// `index`, else `scan`.
pub fn plan_kind(plan: &serde_json::Value, column: &str) -> &'static str {
    fn walk(node: &serde_json::Value, column: &str) -> bool {
        let cond = node["Index Cond"].as_str().unwrap_or("");
        let named = cond
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == column);
        named
            || node["Plans"]
                .as_array()
                .is_some_and(|c| c.iter().any(|n| walk(n, column)))
    }
    if walk(plan, column) {
        "index"
    } else {
        "scan"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_and_substituting() {
        let q = Sent {
            text: "SELECT DISTINCT ldap_entries.id,loadrig_dir_ous.id,text($1) AS objectClass,ldap_entries.dn AS dn FROM ldap_entries,loadrig_dir_ous WHERE loadrig_dir_ous.id=ldap_entries.keyval AND ldap_entries.oc_map_id=$2 AND ldap_entries.dn_ru LIKE $3 AND $4=$5".into(),
            calls: 1,
            time_ms: 0.0,
        };
        assert_eq!(q.kind(), Kind::Candidates { never: true });
        assert_eq!(q.class(), Some("organizationalUnit"));
        let q = Sent {
            text: "SELECT id,keyval,oc_map_id,dn FROM ldap_entries WHERE dn_ru=$1".into(),
            calls: 1,
            time_ms: 0.0,
        };
        assert_eq!(q.kind(), Kind::BaseLookup);
        let values = [Lit::Str("O'X".into()), Lit::Int(2)];
        assert_eq!(
            substitute("a=$1 AND b=$2 AND c LIKE '$'", &values).unwrap(),
            "a='O''X' AND b=2 AND c LIKE '$'"
        );
        assert!(substitute("a=$1", &values).unwrap_err().contains("no $2"));
        assert!(substitute("a=$1 AND $3", &values)
            .unwrap_err()
            .contains("$3"));
        let plan = serde_json::json!({"Node Type": "Nested Loop", "Plans": [
            {"Node Type": "Index Scan", "Index Cond": "(((cn_u)::text ~>=~ 'F'::text))"}]});
        assert_eq!(plan_kind(&plan, "cn_u"), "index");
        assert_eq!(plan_kind(&plan, "cn"), "scan");
    }
}
