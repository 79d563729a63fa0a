//! Intervals added up: a run's measured intervals into one figure per counter, wait,
//! statement and process figure (the result's `server.measured`), and whole numbers
//! written as integers.

use std::collections::BTreeMap;

use super::record::{
    ProcessFigures, ServerInterval, StatementDelta, TimedWait, WaitProfile, WaitShare,
};

/// MySQL's time of every statement, the observer's own taken off (`observe::mysql`).
pub const ALL_STATEMENT_TIME: &str = "performance_schema.statement_time_ms";

impl ServerInterval {
    /// Add `other`, a later interval of the same server: counters, waits, timed waits,
    /// statements (by id) and process figures are summed; gauges and the processes' counts
    /// of processes and threads are the later interval's; user queries keep their last
    /// value.
    pub fn absorb(&mut self, other: &ServerInterval) {
        for (k, v) in &other.counters {
            *self.counters.entry(k.clone()).or_insert(0.0) += v;
        }
        for (k, v) in &other.gauges {
            self.gauges.insert(k.clone(), *v);
        }
        if let Some(w) = &other.waits {
            self.waits
                .get_or_insert_with(WaitProfile::default)
                .absorb(w);
        }
        if let Some(l) = &other.lock_waits {
            match &mut self.lock_waits {
                Some(mine) => mine.absorb(l),
                None => self.lock_waits = Some(l.clone()),
            }
        }
        absorb_timed(&mut self.timed_waits, &other.timed_waits);
        absorb_statements(&mut self.statements, &other.statements);
        if let Some(p) = &other.processes {
            match &mut self.processes {
                Some(mine) => mine.absorb(p),
                None => self.processes = Some(p.clone()),
            }
        }
        for q in &other.queries {
            match self.queries.iter_mut().find(|m| m.name == q.name) {
                Some(m) => *m = q.clone(),
                None => self.queries.push(q.clone()),
            }
        }
    }

    /// Statements' server time, summed (ms); None when the server reported none.
    pub fn statement_time_ms(&self) -> Option<f64> {
        (!self.statements.is_empty()).then(|| self.statements.iter().map(|s| s.time_ms).sum())
    }

    /// Every statement's server time (ms): MySQL's performance_schema total where it was
    /// read, which holds the prepared statements' executions that MariaDB's digests leave
    /// out (a run of prepared statements alone has no digest of its own), else the
    /// statements' sum.
    pub fn all_statement_time_ms(&self) -> Option<f64> {
        self.counters
            .get(ALL_STATEMENT_TIME)
            .copied()
            .or_else(|| self.statement_time_ms())
    }
}

impl WaitProfile {
    /// Add another interval's samples; the shares are of the sum.
    pub fn absorb(&mut self, other: &WaitProfile) {
        self.samples += other.samples;
        self.backends += other.backends;
        self.active += other.active;
        self.idle_in_transaction += other.idle_in_transaction;
        self.hidden += other.hidden;
        for w in &other.waits {
            match self
                .waits
                .iter_mut()
                .find(|m| m.class == w.class && m.event == w.event)
            {
                Some(m) => m.samples += w.samples,
                None => self.waits.push(WaitShare {
                    share: 0.0,
                    ..w.clone()
                }),
            }
        }
        let active = self.active.max(1) as f64;
        for w in &mut self.waits {
            w.share = w.samples as f64 / active;
        }
        self.waits
            .sort_by(|a, b| b.samples.cmp(&a.samples).then(a.class.cmp(&b.class)));
    }

    /// The share of active backend time in each wait class (`CPU` for none), most first.
    pub fn by_class(&self) -> Vec<(String, f64)> {
        let mut classes: BTreeMap<&str, u64> = BTreeMap::new();
        for w in &self.waits {
            *classes.entry(&w.class).or_insert(0) += w.samples;
        }
        let active = self.active.max(1) as f64;
        let mut out: Vec<(String, f64)> = classes
            .into_iter()
            .map(|(c, n)| (c.to_string(), n as f64 / active))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

impl ProcessFigures {
    /// Add a later interval of the same process tree.
    pub fn absorb(&mut self, other: &ProcessFigures) {
        self.pid = other.pid;
        self.processes = other.processes;
        self.threads = other.threads;
        self.started += other.started;
        self.ended += other.ended;
        self.user_s += other.user_s;
        self.system_s += other.system_s;
        self.run_queue_s += other.run_queue_s;
        self.voluntary_switches += other.voluntary_switches;
        self.involuntary_switches += other.involuntary_switches;
        self.read_bytes = add_opt(self.read_bytes, other.read_bytes);
        self.write_bytes = add_opt(self.write_bytes, other.write_bytes);
        self.io_wait_s = match (self.io_wait_s, other.io_wait_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// CPU time, user and system, seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn absorb_timed(mine: &mut Vec<TimedWait>, other: &[TimedWait]) {
    for w in other {
        match mine.iter_mut().find(|m| m.event == w.event) {
            Some(m) => {
                m.count += w.count;
                m.time_ms += w.time_ms;
            }
            None => mine.push(w.clone()),
        }
    }
    mine.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
}

fn absorb_statements(mine: &mut Vec<StatementDelta>, other: &[StatementDelta]) {
    for s in other {
        match mine.iter_mut().find(|m| m.id == s.id) {
            Some(m) => {
                m.calls += s.calls;
                m.time_ms += s.time_ms;
            }
            None => mine.push(s.clone()),
        }
    }
    mine.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
}

/// A figure as people read it: a whole number without decimals (`12`, not `12.0`), else
/// with as many as its size needs.
pub fn figure(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let n = crate::stats::thousands(v.abs() as u64);
        if v < 0.0 {
            format!("-{n}")
        } else {
            n
        }
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Serde for counter maps: whole numbers are written as integers (`12`, not `12.0`), so
/// that counts read as counts in the result file and the stream; reading takes either.
pub mod whole {
    use std::collections::BTreeMap;

    use serde::ser::SerializeMap;
    use serde::Serializer;

    pub fn serialize<S: Serializer>(map: &BTreeMap<String, f64>, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(map.len()))?;
        for (k, v) in map {
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                m.serialize_entry(k, &(*v as i64))?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_add_up() {
        let mut a = ServerInterval::default();
        a.counters.insert("x".into(), 2.0);
        a.statements.push(StatementDelta {
            id: "1".into(),
            text: "SELECT".into(),
            calls: 3,
            time_ms: 1.5,
        });
        let mut b = a.clone();
        b.counters.insert("y".into(), 1.0);
        a.absorb(&b);
        assert_eq!(a.counters["x"], 4.0);
        assert_eq!(a.counters["y"], 1.0);
        assert_eq!(a.statements[0].calls, 6);
        assert_eq!(a.statement_time_ms(), Some(3.0));
    }

    #[test]
    fn every_statement_time_prefers_the_servers_total() {
        // MariaDB's digests leave out prepared statements' executions: a run of prepared
        // statements alone has no statement of its own there, and its time is in the total.
        let mut i = ServerInterval::default();
        i.statements.push(StatementDelta {
            id: "schema/digest".into(),
            text: "SHOW GLOBAL STATUS".into(),
            calls: 1,
            time_ms: 0.5,
        });
        assert_eq!(i.all_statement_time_ms(), Some(0.5));
        i.counters.insert(ALL_STATEMENT_TIME.into(), 120.0);
        assert_eq!(i.all_statement_time_ms(), Some(120.0));
        assert_eq!(i.statement_time_ms(), Some(0.5), "the digests' own sum");
    }

    #[test]
    fn wait_shares_are_of_the_sum() {
        let one = |class: &str, n: u64| WaitProfile {
            samples: 1,
            backends: n,
            active: n,
            waits: vec![WaitShare {
                class: class.into(),
                event: class.into(),
                samples: n,
                share: 1.0,
            }],
            ..WaitProfile::default()
        };
        let mut w = one("Lock", 3);
        w.absorb(&one("CPU", 1));
        assert_eq!(w.active, 4);
        assert_eq!(
            w.by_class(),
            vec![("Lock".into(), 0.75), ("CPU".into(), 0.25)]
        );
    }

    #[test]
    fn whole_numbers_print_as_integers() {
        assert_eq!(figure(12.0), "12");
        assert_eq!(figure(12345.0), "12,345");
        assert_eq!(figure(0.5), "0.500");
        #[derive(serde::Serialize)]
        struct M {
            #[serde(serialize_with = "whole::serialize")]
            m: BTreeMap<String, f64>,
        }
        let m = M {
            m: [("a".to_string(), 12.0), ("b".to_string(), 0.5)].into(),
        };
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"m":{"a":12,"b":0.5}}"#
        );
    }
}
