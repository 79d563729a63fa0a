//! Each operation's time split into the server's own and the rest: the statements (or
//! commands) the server timed, matched to the workload's operations.
//!
//! How they are matched (docs/observe.md): a statement matches an operation whose SQL has
//! the same normalised text (literals and placeholders as `?`, case, quoting and spaces
//! ignored); the statements the SQL targets write for `kv.*` and `record.*` operations
//! match by their table and verb (`SELECT ... loadrig_kv` is `kv.get`); transaction control
//! (`BEGIN`, `COMMIT`, `ROLLBACK`, Redis's `MULTI`/`EXEC`) matches the `tx` operations; a
//! Redis command matches the operations that send it by name (`kv.get` sends `GET`, a
//! record `HSET` and `ZADD`). A statement that matches several operations is split among
//! them in proportion to the operations each completed.

use crate::observe::StatementDelta;
use crate::result::server::{OpTime, ServerTotals};
use crate::result::workload::{NativeRecord, OpArgs, OpRecord};
use crate::result::RunResult;

/// The decomposition of a run, and what matched nothing.
pub struct Decomposition {
    pub ops: Vec<OpTime>,
    pub matching: String,
    pub unmatched: Vec<StatementDelta>,
}

/// The statements that matched no operation kept in the result, most time first.
const UNMATCHED_KEPT: usize = 10;

const TX_CONTROL: &str = "tx-control";

/// Split the measured statements of `measured` among `r`'s operations.
pub fn decompose(r: &RunResult, measured: &ServerTotals) -> Decomposition {
    let redis = matches!(r.target.kind.as_str(), "redis" | "rediss");
    let statements = &measured.figures.statements;
    let mut matching = if statements.is_empty() {
        String::new()
    } else if redis {
        "commands (commandstats) matched to operations by name; a command several operations send is split among them by their counts".to_string()
    } else {
        "statements matched to operations by normalised text (literals and placeholders as ?, case, quoting and spaces ignored), kv and record operations by table and verb, BEGIN/COMMIT/ROLLBACK to the tx operations; a statement several operations match is split among them by their counts".to_string()
    };
    let ops = &r.workload.ops;
    let done: Vec<f64> = ops
        .iter()
        .map(|o| {
            r.operations
                .iter()
                .find(|x| x.name == o.name)
                .map_or(0.0, |x| (x.ok + x.errors) as f64)
        })
        .collect();
    let keys: Vec<Vec<String>> = ops.iter().map(|o| op_keys(o, redis)).collect();
    let mut time = vec![0.0; ops.len()];
    let mut calls = vec![0.0; ops.len()];
    let mut matched: Vec<Vec<String>> = vec![Vec::new(); ops.len()];
    let mut unmatched = Vec::new();
    let mut tx_control = false;
    // Other roles' statements (PostgreSQL's `hidden`) are not the run's.
    for s in statements.iter().filter(|s| s.id != "hidden") {
        let mine = statement_keys(s, redis);
        tx_control |= mine.iter().any(|k| k == TX_CONTROL);
        let candidates: Vec<usize> = (0..ops.len())
            .filter(|&k| keys[k].iter().any(|key| matches(key, &mine)))
            .collect();
        let weight: f64 = candidates.iter().map(|&k| done[k]).sum();
        if candidates.is_empty() || weight <= 0.0 {
            unmatched.push(s.clone());
            continue;
        }
        for &k in &candidates {
            let part = done[k] / weight;
            time[k] += s.time_ms * part;
            calls[k] += s.calls as f64 * part;
            matched[k].push(s.id.clone());
        }
    }
    if !redis && !statements.is_empty() && !tx_control && ops.iter().any(|o| o.kind == "tx") {
        matching.push_str("; the server counted no BEGIN or COMMIT (pg_stat_statements leaves out those sent through the extended protocol, as loadrig's client sends them): a commit's own time, its WAL flush, is in the rest");
    }
    unmatched.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    unmatched.truncate(UNMATCHED_KEPT);
    let ops = ops
        .iter()
        .enumerate()
        .filter_map(|(k, o)| {
            let result = r.operations.iter().find(|x| x.name == o.name)?;
            let n = done[k];
            let client = result.latency.mean_ns / 1e6;
            let server = (!matched[k].is_empty() && n > 0.0).then(|| time[k] / n);
            Some(OpTime {
                op: o.name.clone(),
                ops: n as u64,
                client_mean_ms: client,
                server_mean_ms: server,
                rest_ms: server.map(|s| client - s),
                server_share: server.filter(|_| client > 0.0).map(|s| s / client),
                statements_per_op: server.map(|_| calls[k] / n),
                matched: std::mem::take(&mut matched[k]),
                lock_wait_ms: None,
                lock_wait_share: None,
            })
        })
        .collect();
    Decomposition {
        ops,
        matching,
        unmatched,
    }
}

/// What an operation sends, as keys a statement can match.
fn op_keys(op: &OpRecord, redis: bool) -> Vec<String> {
    let mut keys = Vec::new();
    match &op.args {
        OpArgs::Native(n) => keys.extend(native_keys(n, redis)),
        OpArgs::Tx { steps } => {
            for s in steps {
                keys.extend(native_keys(s, redis));
            }
            if op.kind == "tx" {
                keys.push(TX_CONTROL.to_string());
            }
        }
        OpArgs::Kv { .. } => keys.extend(kv_keys(&op.kind, redis)),
        OpArgs::Empty {} => {}
    }
    keys
}

fn kv_keys(kind: &str, redis: bool) -> Vec<String> {
    let verb = match kind {
        "kv.get" => ("get", "select"),
        "kv.put" => ("set", "insert"),
        "kv.update" => ("set", "update"),
        "kv.delete" => ("del", "delete"),
        _ => return Vec::new(),
    };
    if redis {
        vec![verb.0.to_string()]
    } else {
        vec![format!("loadrig_kv:{}", verb.1)]
    }
}

fn native_keys(n: &NativeRecord, redis: bool) -> Vec<String> {
    match n {
        // A text that names a `let` value (`sbtest{t}`) is written once per value.
        NativeRecord::Sql { sql, .. } if sql.contains('{') => {
            vec![format!("{PATTERN}{}", normalise(sql))]
        }
        NativeRecord::Sql { sql, .. } => vec![format!("sql:{}", normalise(sql))],
        NativeRecord::Other { kind, args } if kind == "redis" => args
            .first()
            .filter(|a| !a.contains('{'))
            .map(|a| vec![a.to_ascii_lowercase()])
            .unwrap_or_default(),
        NativeRecord::Other { kind, .. } => record_keys(kind, redis),
    }
}

/// What each record operation sends: Redis commands as YCSB's binding, or the record
/// table's verb.
fn record_keys(kind: &str, redis: bool) -> Vec<String> {
    let (commands, verb): (&[&str], &str) = match kind {
        "record.insert" => (&["hset", "zadd"], "insert"),
        "record.read" => (&["hgetall", "hmget"], "select"),
        "record.update" => (&["hset"], "update"),
        "record.scan" => (&["zrangebyscore", "zrange", "hgetall", "hmget"], "scan"),
        "record.delete" => (&["del", "zrem"], "delete"),
        _ => return Vec::new(),
    };
    if redis {
        commands.iter().map(|c| c.to_string()).collect()
    } else {
        vec![format!("{}:{verb}", crate::vocab::RECORD_TABLE)]
    }
}

/// An operation's key for a text with `{NAME}` in it, which stands for a word.
const PATTERN: &str = "sqlpattern:";

/// Whether an operation's `key` matches a statement with the keys `mine`.
fn matches(key: &str, mine: &[String]) -> bool {
    let Some(pattern) = key.strip_prefix(PATTERN) else {
        return mine.iter().any(|m| m == key);
    };
    mine.iter()
        .filter_map(|m| m.strip_prefix("sql:"))
        .any(|text| fits(pattern, text))
}

/// Whether `text` is `pattern` with each `{NAME}` replaced by a word (letters, digits, `_`).
pub(super) fn fits(pattern: &str, text: &str) -> bool {
    let Some(open) = pattern.find('{') else {
        return pattern == text;
    };
    let Some(close) = pattern[open..].find('}').map(|c| open + c) else {
        return pattern == text;
    };
    let (head, rest) = (&pattern[..open], &pattern[close + 1..]);
    let Some(after) = text.strip_prefix(head) else {
        return false;
    };
    let word = after
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(after.len(), |(i, _)| i);
    // The word may be shorter than all it could be (`{t}_x` against `1_x`).
    (0..=word).any(|n| fits(rest, &after[n..]))
}

/// The keys a server's statement matches by.
fn statement_keys(s: &StatementDelta, redis: bool) -> Vec<String> {
    if redis {
        let name = s.id.to_ascii_lowercase();
        let mut keys = vec![name.clone()];
        if matches!(name.as_str(), "multi" | "exec" | "discard") {
            keys.push(TX_CONTROL.to_string());
        }
        return keys;
    }
    let text = normalise(&s.text);
    let mut keys = vec![format!("sql:{text}")];
    // The first word: `select*from` has no space after its verb once normalised.
    let verb = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    if matches!(
        verb,
        "begin" | "commit" | "rollback" | "start" | "end" | "abort"
    ) {
        keys.push(TX_CONTROL.to_string());
    }
    if text.contains("loadrig_kv") {
        keys.push(format!("loadrig_kv:{verb}"));
    }
    let table = crate::vocab::RECORD_TABLE;
    if text.contains(table) {
        let verb = if verb == "select" && text.contains("ycsb_key>=") {
            "scan"
        } else {
            verb
        };
        keys.push(format!("{table}:{verb}"));
    }
    keys
}

/// A statement's text as servers normalise theirs: lower case, quoted strings, numbers and
/// placeholders (`$1`, `?`, `?1`) as `?`, identifiers unquoted, no space around
/// punctuation, lists of `?` as one.
pub fn normalise(text: &str) -> String {
    let out = scan(text, false);
    let mut text = tighten(out.trim()).replace("(...)", "(?)");
    while text.contains("?,?") {
        text = text.replace("?,?", "?");
    }
    text.trim_end_matches(';').to_string()
}

/// A statement's text lower case outside strings, identifiers unquoted, placeholders
/// (`$1`, `?`, `:1`) as `?` and runs of white space as one space; its quoted strings and
/// numbers kept (`keep_literals`, to tell two statements apart by their values) or each
/// made `?` (as servers normalise theirs).
pub(super) fn scan(text: &str, keep_literals: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                // A string, '' inside it an escaped quote.
                if keep_literals {
                    out.push('\'');
                }
                while let Some(d) = chars.next() {
                    if keep_literals {
                        out.push(d);
                    }
                    if d == '\'' {
                        if chars.peek() == Some(&'\'') {
                            if keep_literals {
                                out.push('\'');
                            }
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
                if !keep_literals {
                    out.push('?');
                }
            }
            '`' | '"' => {}
            '$' | '?' | ':' if chars.peek().is_some_and(|d| d.is_ascii_digit()) => {
                while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                    chars.next();
                }
                out.push('?');
            }
            c if !keep_literals && c.is_ascii_digit() && !out.chars().last().is_some_and(word) => {
                while chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.')
                {
                    chars.next();
                }
                out.push('?');
            }
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// `text` without the spaces next to punctuation, so `a = b` and `a=b` read the same.
pub(super) fn tighten(text: &str) -> String {
    let punct = ['(', ')', ',', '=', '<', '>', '+', '-', '*', '/', ';'];
    let chars: Vec<char> = text.chars().collect();
    let mut tight = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let by_punct = c == ' '
            && ((i > 0 && punct.contains(&chars[i - 1]))
                || chars.get(i + 1).is_some_and(|n| punct.contains(n)));
        if !by_punct {
            tight.push(c);
        }
    }
    tight
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_with_a_let_value_matches_each_of_its_texts() {
        let pattern = normalise("SELECT c FROM sbtest{t} WHERE id = $1");
        assert!(fits(
            &pattern,
            &normalise("SELECT c FROM sbtest12 WHERE id = $1")
        ));
        assert!(!fits(
            &pattern,
            &normalise("SELECT c FROM other12 WHERE id = $1")
        ));
        assert!(!fits(
            &pattern,
            &normalise("SELECT c FROM sbtest1 x WHERE id = $1")
        ));
    }

    #[test]
    fn servers_texts_and_ours_normalise_alike() {
        let ours = normalise("SELECT v FROM loadrig_kv WHERE k = $1");
        assert_eq!(ours, "select v from loadrig_kv where k=?");
        assert_eq!(
            normalise("SELECT `v` FROM `loadrig_kv` WHERE `k` = ?"),
            ours
        );
        assert_eq!(
            normalise("SELECT c FROM t WHERE id IN ($1, $2, $3) LIMIT 10"),
            normalise("SELECT `c` FROM `t` WHERE `id` IN (...) LIMIT ?")
        );
        assert_eq!(
            normalise("UPDATE t SET s = 'it''s' WHERE x2 = 5"),
            "update t set s=? where x2=?"
        );
    }

    #[test]
    fn a_record_read_matches_the_select_star_of_its_table() {
        let s = StatementDelta {
            id: "1".into(),
            text: "SELECT * FROM loadrig_usertable WHERE YCSB_KEY = $1".into(),
            calls: 1,
            time_ms: 1.0,
        };
        let mine = statement_keys(&s, false);
        let read = record_keys("record.read", false);
        assert!(matches(&read[0], &mine), "{mine:?}");
        assert!(!matches(&record_keys("record.update", false)[0], &mine));
    }
}
