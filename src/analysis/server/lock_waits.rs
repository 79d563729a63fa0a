//! The server's lock waits given to the operations that waited: each session sample of a
//! statement waiting for a lock (`observe::LockWaitSamples`) goes to the operation that
//! sends that statement, and stands for the time between samples.
//!
//! How a statement is matched (docs/observe.md): first by its text with its literals kept
//! (case, quoting, spaces and placeholders ignored), so `... WHERE name = 'workorder'` is
//! the operation that takes work-order ids and not the one that takes order ids; then as
//! the latency decomposition matches, by normalised text. A statement several operations
//! send is split among them by the operations each completed.

use crate::result::server::{OpTime, ServerTotals};
use crate::result::workload::{NativeRecord, OpArgs, OpRecord};
use crate::result::RunResult;

use super::matching::{fits, normalise};

/// Fill each operation's lock waits from the measured samples; the words saying how, or
/// empty when the run has no lock-wait samples.
pub fn attribute(r: &RunResult, measured: &ServerTotals, ops: &mut [OpTime]) -> String {
    let Some(l) = &measured.figures.lock_waits else {
        return String::new();
    };
    if l.samples == 0 {
        return String::new();
    }
    let seconds_per_sample = measured.seconds / l.samples as f64;
    let texts: Vec<(String, Vec<String>)> = r
        .workload
        .ops
        .iter()
        .map(|o| (o.name.clone(), sql_texts(o)))
        .collect();
    let done = |name: &str| {
        ops.iter()
            .find(|o| o.op == name)
            .map_or(0.0, |o| o.ops as f64)
    };
    let mut by_op: Vec<f64> = vec![0.0; texts.len()];
    let (mut all, mut unmatched) = (0u64, 0u64);
    for s in &l.statements {
        all += s.samples;
        let literal = literal_key(&s.text);
        let normal = normalise(&s.text);
        let exact: Vec<usize> = (0..texts.len())
            .filter(|&k| texts[k].1.iter().any(|t| literal_key(t) == literal))
            .collect();
        let candidates = if exact.is_empty() {
            (0..texts.len())
                .filter(|&k| texts[k].1.iter().any(|t| fits(&normalise(t), &normal)))
                .collect()
        } else {
            exact
        };
        let weight: f64 = candidates.iter().map(|&k| done(&texts[k].0)).sum();
        if weight <= 0.0 {
            unmatched += s.samples;
            continue;
        }
        for &k in &candidates {
            by_op[k] += s.samples as f64 * done(&texts[k].0) / weight;
        }
    }
    for (k, (name, _)) in texts.iter().enumerate() {
        let Some(o) = ops.iter_mut().find(|o| &o.op == name) else {
            continue;
        };
        if o.ops == 0 {
            continue;
        }
        o.lock_wait_ms = Some(by_op[k] * seconds_per_sample * 1e3 / o.ops as f64);
        o.lock_wait_share = (all > 0).then(|| by_op[k] / all as f64);
    }
    let mut how = format!(
        "lock waits: {} samples of {} ({:.0} a second), each session seen waiting for a lock standing for {:.0} ms, given to the operation that sends its statement (by its text with its literals, else as the decomposition matches)",
        l.samples,
        l.from,
        1.0 / seconds_per_sample.max(1e-9),
        seconds_per_sample * 1e3
    );
    if unmatched > 0 {
        how.push_str(&format!(
            "; {unmatched} of {all} waiting session-samples ran a statement no operation sends"
        ));
    }
    how
}

/// The SQL an operation sends, step by step.
fn sql_texts(op: &OpRecord) -> Vec<String> {
    let steps: Vec<&NativeRecord> = match &op.args {
        OpArgs::Native(n) => vec![n],
        OpArgs::Tx { steps } => steps.iter().collect(),
        _ => Vec::new(),
    };
    steps
        .into_iter()
        .filter_map(|s| match s {
            NativeRecord::Sql { sql, .. } => Some(sql.clone()),
            NativeRecord::Other { .. } => None,
        })
        .collect()
}

/// A statement's text with its literals kept: lower case outside strings, no quoting of
/// identifiers, placeholders (`$1`, `?`, `:1`) as `?`, one space, none around punctuation.
fn literal_key(text: &str) -> String {
    let out = super::matching::scan(text, true);
    super::matching::tighten(out.trim().trim_end_matches(';'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_tell_statements_apart_placeholders_do_not() {
        let ours = "UPDATE loadrig_oe_sequence SET next_id = next_id + 1 WHERE name = 'workorder'";
        assert_eq!(
            literal_key(ours),
            literal_key(
                "update `loadrig_oe_sequence` set next_id=next_id+1 where name='workorder'"
            )
        );
        assert_ne!(
            literal_key(ours),
            literal_key(&ours.replace("'workorder'", "'order'"))
        );
        assert_eq!(
            literal_key("UPDATE t SET q = q - $1 WHERE part = $2"),
            literal_key("UPDATE t SET q = q - ? WHERE part = ?")
        );
    }
}
