//! The workload as a run resolved it: names, parameters, and every operation with its
//! templates as written, so a result file says what was run without the workload file.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::{ErrorClass, NativeOp, ValueKind};
use crate::workload::{OpKind, OpSpec, Step, Template, Workload};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkloadRecord {
    pub name: String,
    pub description: String,
    /// The workload file, or `<builtin NAME>`.
    pub source: String,
    /// Every parameter with the value the run used (`--set` applied).
    pub params: BTreeMap<String, ParamValue>,
    /// Setup statements, run once before the data load.
    pub setup: Vec<NativeRecord>,
    pub data: Option<DataRecord>,
    /// The operations run (all of the workload's, or those picked with `--op`).
    pub ops: Vec<OpRecord>,
    /// `[peers]`: each peer's URL, any password replaced by `***` (`${VAR}` unexpanded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub peers: BTreeMap<String, String>,
}

/// A parameter's value: parameters are numbers, strings or booleans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ParamValue {
    Bool(bool),
    Integer(i64),
    Float(f64),
    String(String),
}

/// The `[data]` section: records stored before the measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataRecord {
    pub count: u64,
    pub key: String,
    pub value: String,
    /// Records per load batch.
    pub batch: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpRecord {
    pub name: String,
    pub weight: f64,
    /// `nop`, `kv.get`, `sql`, `tx`, `steps`, …
    pub kind: String,
    pub args: OpArgs,
    pub retry: Option<RetryRecord>,
    /// The operation's `let` values (name, template); left out when it has none.
    #[serde(default, rename = "let", skip_serializing_if = "BTreeMap::is_empty")]
    pub lets: BTreeMap<String, String>,
}

/// An operation's templates as written, by kind of operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OpArgs {
    /// `kv.*`: the key, and the value of a put or update.
    Kv {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
    /// The steps of a transaction (`tx`) or of `steps` (no transaction).
    Tx {
        steps: Vec<NativeRecord>,
    },
    Native(NativeRecord),
    /// `nop`, `connect`, `authenticate`: an empty object.
    Empty {},
}

/// A native operation's templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NativeRecord {
    /// The statement and its parameters.
    Sql { sql: String, params: Vec<String> },
    /// Any other family: its kind (`redis`, `ldap.search`, `http`, …) and templates.
    Other { kind: String, args: Vec<String> },
}

/// An operation's `retry` policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetryRecord {
    pub on: Vec<ErrorClass>,
    pub max: u32,
    pub backoff_s: f64,
}

impl WorkloadRecord {
    /// The record of `w` as run with the operations `ops`.
    pub fn of(w: &Workload, ops: &[OpSpec]) -> WorkloadRecord {
        WorkloadRecord {
            name: w.name.clone(),
            description: w.description.clone(),
            source: w.source_name.clone(),
            params: w
                .params
                .iter()
                .map(|(k, v)| (k.clone(), ParamValue::of(v)))
                .collect(),
            setup: w.setup.iter().map(|s| NativeRecord::of(s, &[])).collect(),
            data: w.data.as_ref().map(|d| DataRecord {
                count: d.count,
                key: d.key.source().to_string(),
                value: d.value.source().to_string(),
                batch: d.batch,
            }),
            ops: ops.iter().map(OpRecord::of).collect(),
            peers: w
                .peers
                .iter()
                .map(|p| (p.name.clone(), crate::error::redact(&p.url)))
                .collect(),
        }
    }
}

impl ParamValue {
    fn of(v: &toml::Value) -> ParamValue {
        match v {
            toml::Value::Boolean(b) => ParamValue::Bool(*b),
            toml::Value::Integer(n) => ParamValue::Integer(*n),
            toml::Value::Float(x) => ParamValue::Float(*x),
            toml::Value::String(s) => ParamValue::String(s.clone()),
            // The workload compiler admits only the four above.
            other => ParamValue::String(other.to_string()),
        }
    }
}

impl OpRecord {
    fn of(o: &OpSpec) -> OpRecord {
        let args = match &o.kind {
            OpKind::Nop | OpKind::Connect | OpKind::Authenticate => OpArgs::Empty {},
            OpKind::Put { key, value } | OpKind::Update { key, value } => OpArgs::Kv {
                key: key.source().to_string(),
                value: Some(value.source().to_string()),
            },
            OpKind::Get { key } | OpKind::Delete { key } => OpArgs::Kv {
                key: key.source().to_string(),
                value: None,
            },
            OpKind::Native(step) => OpArgs::Native(NativeRecord::step(step)),
            OpKind::Tx(steps) | OpKind::Steps(steps) => OpArgs::Tx {
                steps: steps.iter().map(NativeRecord::step).collect(),
            },
        };
        OpRecord {
            name: o.name.clone(),
            weight: o.weight,
            kind: o.kind.label().to_string(),
            args,
            retry: o.retry.as_ref().map(|r| RetryRecord {
                on: r.on.clone(),
                max: r.max,
                backoff_s: r.backoff.as_secs_f64(),
            }),
            lets: o
                .lets
                .iter()
                .map(|l| (l.name.clone(), l.template.source().to_string()))
                .collect(),
        }
    }
}

impl NativeRecord {
    fn step(step: &Step) -> NativeRecord {
        NativeRecord::of(&step.op, &step.templates)
    }

    /// `op` with its `templates` (none for a setup statement): a statement with its
    /// parameters, any other operation by its label.
    fn of(op: &NativeOp<ValueKind>, templates: &[Template]) -> NativeRecord {
        let args: Vec<String> = templates.iter().map(|t| t.source().to_string()).collect();
        match op.statement() {
            Some(query) => NativeRecord::Sql {
                sql: query.to_string(),
                params: args,
            },
            None => NativeRecord::Other {
                kind: op.label().to_string(),
                args,
            },
        }
    }
}
