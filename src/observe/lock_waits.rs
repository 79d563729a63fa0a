//! Lock waits by statement: at every session sample, the statement each of the run's
//! sessions that waits for a lock is running, as the server shows it (PostgreSQL's
//! `pg_stat_activity.query` of a backend whose `wait_event_type` is `Lock`; InnoDB's
//! `information_schema.INNODB_TRX.trx_query` of a transaction in `LOCK WAIT`). The text is
//! the one the client sent, its literals kept, so the analysis can give each sample to the
//! operation that sent that statement (`analysis::server::lock_waits`).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Over one interval: how many samples were taken, and the sessions seen waiting for a
/// lock in them, by the statement they were running.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LockWaitSamples {
    /// Samples taken (each reads every session of the run once).
    pub samples: u64,
    /// Where the waits were read (`pg_stat_activity`, `INNODB_TRX`).
    pub from: String,
    /// Session-samples waiting for a lock, by statement, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<LockWaitStatement>,
}

/// One statement's session-samples waiting for a lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LockWaitStatement {
    /// The statement's text as the server showed it (cut at 1,000 characters).
    pub text: String,
    pub samples: u64,
}

/// The longest text kept of a waiting statement.
const TEXT_KEPT: usize = 1000;

/// Session samples since the last boundary.
#[derive(Debug, Default)]
pub struct LockTally {
    samples: u64,
    by_text: HashMap<String, u64>,
}

impl LockTally {
    /// One sample taken: `waiting` holds the text of every session seen waiting in it.
    pub fn sample<'a>(&mut self, waiting: impl IntoIterator<Item = &'a str>) {
        self.samples += 1;
        for text in waiting {
            let text: String = text.trim().chars().take(TEXT_KEPT).collect();
            *self.by_text.entry(text).or_default() += 1;
        }
    }

    /// The samples since the last call (None when none was taken).
    pub fn take(&mut self, from: &str) -> Option<LockWaitSamples> {
        let t = std::mem::take(self);
        if t.samples == 0 {
            return None;
        }
        let mut statements: Vec<LockWaitStatement> = t
            .by_text
            .into_iter()
            .map(|(text, samples)| LockWaitStatement { text, samples })
            .collect();
        statements.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.text.cmp(&b.text)));
        Some(LockWaitSamples {
            samples: t.samples,
            from: from.to_string(),
            statements,
        })
    }
}

impl LockWaitSamples {
    /// Add a later interval's samples.
    pub fn absorb(&mut self, other: &LockWaitSamples) {
        self.samples += other.samples;
        if self.from.is_empty() {
            self.from = other.from.clone();
        }
        for s in &other.statements {
            match self.statements.iter_mut().find(|m| m.text == s.text) {
                Some(m) => m.samples += s.samples,
                None => self.statements.push(s.clone()),
            }
        }
        self.statements
            .sort_by(|a, b| b.samples.cmp(&a.samples).then(a.text.cmp(&b.text)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_add_up_by_text() {
        let mut t = LockTally::default();
        t.sample(["UPDATE a", "UPDATE b"]);
        t.sample(["UPDATE a "]);
        t.sample([]);
        let mut one = t.take("INNODB_TRX").unwrap();
        assert_eq!(one.samples, 3);
        assert_eq!(one.statements[0].text, "UPDATE a");
        assert_eq!(one.statements[0].samples, 2);
        assert!(t.take("INNODB_TRX").is_none(), "nothing since");
        t.sample(["UPDATE b"]);
        one.absorb(&t.take("INNODB_TRX").unwrap());
        assert_eq!(one.samples, 4);
        assert_eq!(one.statements.len(), 2);
        assert_eq!(one.statements.iter().map(|s| s.samples).sum::<u64>(), 4);
    }
}
