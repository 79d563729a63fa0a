//! A user's own query (`[[observe]] name, sql, every` in a workload file): one read-only
//! statement on an SQL server whose first value is recorded per interval.

use std::time::Duration;

use serde::Deserialize;

use super::record::QueryValue;
use crate::duration;
use crate::error::InputError;

/// An `[[observe]]` entry as written (the workload file's parser wires it in; here it is a
/// plain struct).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserveEntry {
    pub name: String,
    pub sql: String,
    #[serde(default)]
    pub every: Option<String>,
}

/// A checked `[[observe]]` query.
#[derive(Debug, Clone, PartialEq)]
pub struct UserQuery {
    pub name: String,
    /// One statement, without a trailing `;`.
    pub sql: String,
    /// How often it runs: at the first interval boundary at least this long after its last
    /// run (None: at every boundary).
    pub every: Option<Duration>,
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

impl QueryValue {
    /// A value the server returned as text: a number when it parses as one.
    pub fn from_text(name: &str, text: Option<String>) -> QueryValue {
        let value = text
            .as_deref()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite());
        QueryValue {
            name: name.to_string(),
            text: if value.is_some() { None } else { text },
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn values_are_numbers_or_text() {
        assert_eq!(
            QueryValue::from_text("a", Some("12.5".into())).value,
            Some(12.5)
        );
        let t = QueryValue::from_text("a", Some("on".into()));
        assert_eq!((t.value, t.text.as_deref()), (None, Some("on")));
        assert_eq!(QueryValue::from_text("a", None).text, None);
    }
}
