//! `[[observe]]`: a user's own query on the server under test, run by the observer in a
//! read-only transaction at interval boundaries, its first value recorded per interval
//! (docs/observe.md). Checked here, when the workload is compiled, so that a malformed one
//! is an input error at its place in the file before anything runs.

use serde::Deserialize;
use toml::Spanned;

use super::Source;
use crate::duration;
use crate::error::InputError;
pub use crate::vocab::UserQuery;

/// An `[[observe]]` entry as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserveEntry {
    pub name: String,
    pub sql: String,
    #[serde(default)]
    pub every: Option<String>,
}

impl UserQuery {
    /// Check an entry: a name of letters, digits, `_`, `-` and `.`; one statement; a
    /// positive `every`.
    pub fn new(entry: &ObserveEntry) -> Result<UserQuery, InputError> {
        let name = entry.name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(InputError::new(format!(
                "[[observe]] name '{}': expected letters, digits, '_', '-' or '.'",
                entry.name
            )));
        }
        let sql = entry.sql.trim().trim_end_matches(';').trim_end();
        if sql.is_empty() {
            return Err(InputError::new(format!("[[observe]] {name}: sql is empty")));
        }
        if sql.contains(';') {
            return Err(InputError::new(format!(
                "[[observe]] {name}: sql holds more than one statement (a ';' inside)"
            ))
            .help("an observe query is one read-only SELECT; its first column of its first row is recorded"));
        }
        let every = match &entry.every {
            None => None,
            Some(text) => {
                let d = duration::parse(text, &format!("[[observe]] {name}: every"))?;
                if d.is_zero() {
                    return Err(InputError::new(format!(
                        "[[observe]] {name}: every = '{text}' must be longer than zero"
                    )));
                }
                Some(d)
            }
        };
        Ok(UserQuery {
            name: name.to_string(),
            sql: sql.to_string(),
            every,
        })
    }
}

/// The `[[observe]]` tables, checked: a name used once, one statement, a positive `every`;
/// a problem is reported at the entry's place in the file.
pub(super) fn compile(
    source: &Source<'_>,
    sections: &[Spanned<ObserveEntry>],
) -> Result<Vec<UserQuery>, InputError> {
    let mut out: Vec<UserQuery> = Vec::new();
    for section in sections {
        let at = source.at(section.span().start);
        let q = UserQuery::new(section.get_ref()).map_err(|e| e.at(at.clone()))?;
        if out.iter().any(|o| o.name == q.name) {
            return Err(InputError::new(format!(
                "[[observe]] name '{}' is used twice",
                q.name
            ))
            .at(at)
            .help("give each [[observe]] query a name of its own: it names the query's values in the result"));
        }
        out.push(q);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(name: &str, sql: &str, every: Option<&str>) -> ObserveEntry {
        ObserveEntry {
            name: name.into(),
            sql: sql.into(),
            every: every.map(str::to_string),
        }
    }

    #[test]
    fn checks_name_statement_and_every() {
        let q = UserQuery::new(&entry("rows", "SELECT count(*) FROM t;", Some("5s"))).unwrap();
        assert_eq!(q.sql, "SELECT count(*) FROM t");
        assert_eq!(q.every, Some(Duration::from_secs(5)));
        assert!(UserQuery::new(&entry("a b", "SELECT 1", None)).is_err());
        assert!(UserQuery::new(&entry("x", " ; ", None)).is_err());
        assert!(UserQuery::new(&entry("x", "SELECT 1; DELETE FROM t", None)).is_err());
        assert!(UserQuery::new(&entry("x", "SELECT 1", Some("soon"))).is_err());
        assert!(UserQuery::new(&entry("x", "SELECT 1", Some("0s"))).is_err());
    }
}
