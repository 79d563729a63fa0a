//! A user's own query (`[[observe]] name, sql, every` in a workload file, checked by the
//! workload compiler: `workload::observe`): one read-only statement on an SQL server whose
//! first value is recorded per interval.

use super::record::QueryValue;
pub use crate::vocab::UserQuery;

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
