//! What an experiment measures in each run: a response names one value of the run's result
//! file, and this is the one place that finds it.
//!
//! - `throughput`, `p50` `p90` `p99` `p999` `max` `mean` (latency, ns), `errors` (the share
//!   of attempted operations that failed), each optionally after an operation's name:
//!   `insert.p99` (as the checks write them; no operation: all operations together);
//! - a workload figure by its name: `tpmC`, `BBops/min`'s `bbops`;
//! - any number in the result file by its path: `figures.tpmC.value`,
//!   `operations.insert.latency.p99_ns`. A path's parts are object keys; in a list, a part
//!   is an index (`intervals.0.ok`) or the `name` of an element (`operations.insert`). The
//!   first part must be a field of the result file (docs/results.md), checked before
//!   anything runs; the rest after each run. Whatever a later version adds to the result
//!   file (the server's own figures) is a response this way without a change here.
//!
//! Higher is better for throughput, figures and paths; lower for latency and errors.

use serde_json::Value;

use super::record::Better;
use crate::analysis::TOTAL;
use crate::result::models::LatencyStat;
use crate::result::{OpResult, RunResult};

#[derive(Debug, Clone, PartialEq)]
pub enum ResponseKind {
    Throughput,
    Latency(LatencyStat),
    /// Failed attempts over all attempts.
    Errors,
    Figure(String),
    Path(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// As written.
    pub text: String,
    /// For the operation metrics: the operation (None: all together).
    pub op: Option<String>,
    pub kind: ResponseKind,
}

/// What the run will have: its operations and its workload's figures (name, unit).
pub struct Known {
    pub ops: Vec<String>,
    pub figures: Vec<(String, String)>,
}

const METRICS: &str = "throughput, p50, p90, p99, p999, max, mean, errors";

fn metric(word: &str) -> Option<ResponseKind> {
    Some(match word.to_ascii_lowercase().as_str() {
        "throughput" => ResponseKind::Throughput,
        "errors" => ResponseKind::Errors,
        "p50" | "median" => ResponseKind::Latency(LatencyStat::P50),
        "p90" => ResponseKind::Latency(LatencyStat::P90),
        "p99" => ResponseKind::Latency(LatencyStat::P99),
        "p999" | "p99.9" => ResponseKind::Latency(LatencyStat::P999),
        "max" => ResponseKind::Latency(LatencyStat::Max),
        "mean" => ResponseKind::Latency(LatencyStat::Mean),
        _ => return None,
    })
}

impl Response {
    /// Read a response and check it against what the run will have: an unknown operation,
    /// figure or result field is refused with what there is.
    pub fn parse(text: &str, known: &Known) -> Result<Response, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty response".into());
        }
        let (op, kind) = if let Some(kind) = metric(text) {
            (None, kind)
        } else if let Some(stem) = text.strip_suffix(".p99.9") {
            (Some(stem), ResponseKind::Latency(LatencyStat::P999))
        } else if let Some(kind) = text.rsplit_once('.').and_then(|(_, m)| metric(m)) {
            (text.rsplit_once('.').map(|(o, _)| o), kind)
        } else if !text.contains('.') {
            if !known.figures.iter().any(|(n, _)| n == text) {
                return Err(format!(
                    "response '{text}': neither a metric ({METRICS}) nor a figure of the workload ({})",
                    if known.figures.is_empty() {
                        "it has none".to_string()
                    } else {
                        known.figures.iter().map(|f| f.0.as_str()).collect::<Vec<_>>().join(", ")
                    }
                ));
            }
            (None, ResponseKind::Figure(text.to_string()))
        } else {
            let parts: Vec<String> = text.split('.').map(str::to_string).collect();
            let fields = result_fields();
            if !fields.contains(&parts[0]) {
                return Err(format!(
                    "response '{text}': the result file has no field '{}' (its fields: {})",
                    parts[0],
                    fields.join(", ")
                ));
            }
            (None, ResponseKind::Path(parts))
        };
        let op = match op {
            Some("") => {
                return Err(format!(
                    "response '{text}': the operation before '.' is empty"
                ))
            }
            Some(TOTAL) | None => None,
            Some(name) if known.ops.iter().any(|o| o == name) => Some(name.to_string()),
            Some(name) => {
                return Err(format!(
                "response '{text}': the workload runs no operation '{name}' (its operations: {})",
                known.ops.join(", ")
            ))
            }
        };
        Ok(Response {
            text: text.to_string(),
            op,
            kind,
        })
    }

    pub fn unit(&self, known: &Known) -> String {
        match &self.kind {
            ResponseKind::Throughput => "ops/s".into(),
            ResponseKind::Latency(_) => "ns".into(),
            ResponseKind::Errors => "share".into(),
            ResponseKind::Figure(name) => known
                .figures
                .iter()
                .find(|f| &f.0 == name)
                .map_or_else(String::new, |f| f.1.clone()),
            ResponseKind::Path(_) => String::new(),
        }
    }

    pub fn better(&self) -> Better {
        match self.kind {
            ResponseKind::Latency(_) | ResponseKind::Errors => Better::Lower,
            _ => Better::Higher,
        }
    }

    /// The response's value in one run.
    pub fn value(&self, run: &RunResult) -> Result<f64, String> {
        let op = || -> Result<&OpResult, String> {
            match &self.op {
                None if run.operations.len() == 1 => Ok(&run.operations[0]),
                None => Ok(&run.total),
                Some(name) => run
                    .operations
                    .iter()
                    .find(|o| &o.name == name)
                    .ok_or_else(|| format!("the run has no operation '{name}'")),
            }
        };
        match &self.kind {
            ResponseKind::Throughput => Ok(op()?.throughput_per_s),
            ResponseKind::Latency(stat) => {
                let o = op()?;
                if o.latency.count == 0 {
                    return Err(format!(
                        "{}: no successful operation, so no latency",
                        self.text
                    ));
                }
                Ok(stat.of(&o.latency))
            }
            ResponseKind::Errors => {
                let o = op()?;
                let attempts = o.ok + o.errors;
                if attempts == 0 {
                    return Err(format!("{}: no operation was attempted", self.text));
                }
                Ok(o.errors as f64 / attempts as f64)
            }
            ResponseKind::Figure(name) => run
                .figures
                .iter()
                .find(|f| &f.name == name)
                .map(|f| f.value)
                .ok_or_else(|| format!("the run has no figure '{name}'")),
            ResponseKind::Path(parts) => {
                let doc = serde_json::to_value(run).map_err(|e| e.to_string())?;
                follow(&doc, parts)
            }
        }
    }
}

/// The number at `parts` in a result document.
pub fn follow(doc: &Value, parts: &[String]) -> Result<f64, String> {
    let mut at = doc;
    for (i, part) in parts.iter().enumerate() {
        let next = match at {
            Value::Object(map) => map.get(part),
            Value::Array(items) => match part.parse::<usize>() {
                Ok(k) => items.get(k),
                Err(_) => items
                    .iter()
                    .find(|item| item.get("name").and_then(Value::as_str) == Some(part)),
            },
            _ => None,
        };
        at = next.ok_or_else(|| {
            format!(
                "the run file has nothing at '{}' (looking for '{part}' in '{}')",
                parts.join("."),
                if i == 0 {
                    "the file".to_string()
                } else {
                    parts[..i].join(".")
                }
            )
        })?;
    }
    at.as_f64().ok_or_else(|| {
        format!(
            "'{}' in the run file is {}, not a number",
            parts.join("."),
            match at {
                Value::Object(_) => "an object",
                Value::Array(_) => "a list",
                Value::String(_) => "text",
                Value::Bool(_) => "true or false",
                _ => "null",
            }
        )
    })
}

/// The result file's top-level fields, from its schema.
fn result_fields() -> Vec<String> {
    let schema = crate::result::run_schema();
    schema
        .as_object()
        .and_then(|o| o.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known {
        Known {
            ops: vec!["insert".into(), "read".into()],
            figures: vec![("tpmC".into(), "tpmC".into())],
        }
    }

    #[test]
    fn responses_parse_and_unknown_ones_say_what_there_is() {
        let k = known();
        let p = |t: &str| Response::parse(t, &k);
        assert_eq!(
            p("p99").unwrap().kind,
            ResponseKind::Latency(LatencyStat::P99)
        );
        assert_eq!(p("insert.p99").unwrap().op.as_deref(), Some("insert"));
        assert_eq!(p("total.throughput").unwrap().op, None);
        assert_eq!(p("tpmC").unwrap().kind, ResponseKind::Figure("tpmC".into()));
        assert!(matches!(
            p("figures.tpmC.value").unwrap().kind,
            ResponseKind::Path(_)
        ));
        assert!(p("update.p99").unwrap_err().contains("insert, read"));
        assert!(p("bbops").unwrap_err().contains("tpmC"));
        assert!(p("nonsense.value")
            .unwrap_err()
            .contains("no field 'nonsense'"));
    }

    #[test]
    fn paths_follow_objects_lists_and_names() {
        let doc: Value = serde_json::json!({
            "operations": [{"name": "insert", "latency": {"p99_ns": 5}}],
            "figures": [{"name": "tpmC", "value": 12.5}],
            "label": "x"
        });
        let parts = |t: &str| t.split('.').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            follow(&doc, &parts("operations.insert.latency.p99_ns")).unwrap(),
            5.0
        );
        assert_eq!(
            follow(&doc, &parts("operations.0.latency.p99_ns")).unwrap(),
            5.0
        );
        assert_eq!(follow(&doc, &parts("figures.tpmC.value")).unwrap(), 12.5);
        assert!(follow(&doc, &parts("label")).unwrap_err().contains("text"));
        assert!(follow(&doc, &parts("operations.read.latency"))
            .unwrap_err()
            .contains("'read'"));
    }
}
