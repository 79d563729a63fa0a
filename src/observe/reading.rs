//! A source's cumulative reading at one instant, and the delta between two: the one place
//! where counters become per-interval figures.

use std::collections::{BTreeMap, HashMap};

use super::record::{ServerInterval, StatementDelta, TimedWait};

/// One statement's cumulative figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatementTotal {
    pub text: String,
    pub calls: f64,
    pub time_ms: f64,
}

/// What a source read at one instant: cumulative counters, gauges, statements and timed
/// waits, keyed as the records name them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub counters: BTreeMap<String, f64>,
    pub gauges: BTreeMap<String, f64>,
    pub statements: HashMap<String, StatementTotal>,
    /// Wait event → (count, time in ms).
    pub timed_waits: HashMap<String, (f64, f64)>,
}

/// How much a counter grew. A counter below its earlier value was reset (by a restart or
/// someone's `pg_stat_reset`): what it counted since is its value now.
fn grew(now: f64, before: f64) -> f64 {
    if now >= before {
        now - before
    } else {
        now
    }
}

impl Reading {
    /// Counters and gauges under `prefix.`, from a JSON object's numeric fields (PostgreSQL's
    /// `row_to_json` of a statistics view); `gauges` names the fields that are not counters,
    /// `skip` the ones that are neither (identifiers).
    pub fn add_json(
        &mut self,
        prefix: &str,
        object: &serde_json::Map<String, serde_json::Value>,
        gauges: &[&str],
        skip: &[&str],
    ) {
        for (name, value) in object {
            let Some(v) = value.as_f64() else { continue };
            if skip.contains(&name.as_str()) {
                continue;
            }
            let key = format!("{prefix}.{name}");
            if gauges.contains(&name.as_str()) {
                self.gauges.insert(key, v);
            } else {
                self.counters.insert(key, v);
            }
        }
    }

    /// The figures from `before` to `self`. Statements and waits that did not move are left
    /// out; those new since `before` count from zero.
    pub fn since(&self, before: &Reading) -> ServerInterval {
        let counters = self
            .counters
            .iter()
            .filter_map(|(k, &now)| before.counters.get(k).map(|&b| (k.clone(), grew(now, b))))
            .collect();
        let mut statements: Vec<StatementDelta> = self
            .statements
            .iter()
            .filter_map(|(id, now)| {
                let (calls, time) = match before.statements.get(id) {
                    Some(b) => (grew(now.calls, b.calls), grew(now.time_ms, b.time_ms)),
                    None => (now.calls, now.time_ms),
                };
                (calls > 0.0).then(|| StatementDelta {
                    id: id.clone(),
                    text: now.text.clone(),
                    calls: calls.round() as u64,
                    time_ms: time,
                })
            })
            .collect();
        statements.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms).then(a.id.cmp(&b.id)));
        let mut timed_waits: Vec<TimedWait> = self
            .timed_waits
            .iter()
            .filter_map(|(event, &(count, time))| {
                let (c, t) = match before.timed_waits.get(event) {
                    Some(&(bc, bt)) => (grew(count, bc), grew(time, bt)),
                    None => (count, time),
                };
                (c > 0.0).then(|| TimedWait {
                    event: event.clone(),
                    count: c.round() as u64,
                    time_ms: t,
                })
            })
            .collect();
        timed_waits.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms).then(a.event.cmp(&b.event)));
        ServerInterval {
            counters,
            gauges: self.gauges.clone(),
            statements,
            timed_waits,
            ..ServerInterval::default()
        }
    }
}

/// A number the server printed as text (`SHOW GLOBAL STATUS`, `INFO`, cn=Monitor).
pub fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_of_counters_statements_and_waits() {
        let mut before = Reading::default();
        before.counters.insert("a.x".into(), 10.0);
        before.counters.insert("a.reset".into(), 100.0);
        before.statements.insert(
            "1".into(),
            StatementTotal {
                text: "q1".into(),
                calls: 5.0,
                time_ms: 1.0,
            },
        );
        before.timed_waits.insert("w".into(), (3.0, 2.0));
        let mut now = before.clone();
        now.counters.insert("a.x".into(), 15.0);
        now.counters.insert("a.reset".into(), 7.0);
        now.counters.insert("a.new".into(), 1.0);
        now.gauges.insert("a.g".into(), 4.0);
        now.statements.get_mut("1").unwrap().calls = 8.0;
        now.statements.insert(
            "2".into(),
            StatementTotal {
                text: "q2".into(),
                calls: 2.0,
                time_ms: 9.0,
            },
        );
        let d = now.since(&before);
        assert_eq!(d.counters["a.x"], 5.0);
        assert_eq!(d.counters["a.reset"], 7.0, "a reset counts from zero");
        assert!(
            !d.counters.contains_key("a.new"),
            "no delta without a before"
        );
        assert_eq!(d.gauges["a.g"], 4.0);
        assert_eq!(d.statements.len(), 2);
        assert_eq!(d.statements[0].id, "2", "most time first");
        assert_eq!(d.statements[1].calls, 3);
        assert!(
            d.timed_waits.is_empty(),
            "a wait that did not move is left out"
        );
    }

    #[test]
    fn json_fields_split_into_counters_and_gauges() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"datid":5,"numbackends":3,"xact_commit":12,"stats_reset":"x"}"#,
        )
        .unwrap();
        let mut r = Reading::default();
        r.add_json("db", v.as_object().unwrap(), &["numbackends"], &["datid"]);
        assert_eq!(r.counters.len(), 1);
        assert_eq!(r.counters["db.xact_commit"], 12.0);
        assert_eq!(r.gauges["db.numbackends"], 3.0);
    }
}
