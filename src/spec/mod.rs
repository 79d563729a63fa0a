//! Workload files: TOML parsed with spans, validated, and compiled into a [`Workload`].
//!
//! Every problem is an [`InputError`] that names `file:line:column`, says what was expected
//! and how to fix it. Parameters (`[params]`, overridable with `--set`) are substituted
//! when templates are compiled, so a run never meets an unknown name.

pub mod builtin;
pub mod duration;
pub mod template;

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::{line_col, InputError};
pub use template::{GenState, Template};

/// A workload file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: String,
    #[serde(default)]
    description: String,
    target: Option<Spanned<String>>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    load: LoadSection,
    data: Option<DataSection>,
    #[serde(default, rename = "op")]
    ops: Vec<Spanned<OpSection>>,
    /// Thresholds checked at the end of a run, like `--check` (see analysis::checks).
    #[serde(default)]
    checks: Vec<Spanned<String>>,
}

/// `[load]`: defaults for the load flags of `loadrig run`.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    pub clients: Option<u64>,
    pub rate: Option<f64>,
    pub arrivals: Option<Spanned<String>>,
    pub max_in_flight: Option<u64>,
    pub think_time: Option<Spanned<String>>,
    pub duration: Option<Spanned<String>>,
    pub ops: Option<u64>,
    pub samples: Option<u64>,
    pub interval: Option<Spanned<String>>,
    pub warmup: Option<Spanned<String>>,
    pub seed: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataSection {
    count: Spanned<toml::Value>,
    key: Spanned<String>,
    value: Spanned<String>,
    batch: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpSection {
    name: Spanned<String>,
    weight: Option<Spanned<f64>>,
    kv: Option<KvSection>,
    nop: Option<toml::value::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KvSection {
    put: Option<Spanned<KvArgs>>,
    get: Option<Spanned<KvArgs>>,
    update: Option<Spanned<KvArgs>>,
    delete: Option<Spanned<KvArgs>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KvArgs {
    key: Spanned<String>,
    value: Option<Spanned<String>>,
}

/// What one operation does, with its compiled templates.
#[derive(Debug, Clone)]
pub enum OpKind {
    Nop,
    Put { key: Template, value: Template },
    Get { key: Template },
    Update { key: Template, value: Template },
    Delete { key: Template },
}

impl OpKind {
    pub fn label(&self) -> &'static str {
        match self {
            OpKind::Nop => "nop",
            OpKind::Put { .. } => "kv.put",
            OpKind::Get { .. } => "kv.get",
            OpKind::Update { .. } => "kv.update",
            OpKind::Delete { .. } => "kv.delete",
        }
    }

    /// True if the op draws parameters, so the engine must read the clock after binding them.
    pub fn has_params(&self) -> bool {
        !matches!(self, OpKind::Nop)
    }
}

/// A compiled operation.
#[derive(Debug, Clone)]
pub struct OpSpec {
    pub name: String,
    pub weight: f64,
    pub kind: OpKind,
}

/// Records stored before the measured run.
#[derive(Debug, Clone)]
pub struct DataSpec {
    pub count: u64,
    pub key: Template,
    pub value: Template,
    pub batch: usize,
}

/// A validated workload, ready for the engine.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub description: String,
    pub source_name: String,
    pub target: Option<String>,
    pub params: BTreeMap<String, toml::Value>,
    pub load: LoadSection,
    pub data: Option<DataSpec>,
    pub ops: Vec<OpSpec>,
    /// How many `seq` generators the ops use (one counter each per client).
    pub seq_slots: usize,
    /// The `checks = [...]` array, each with its place in the file for error messages.
    pub checks: Vec<CheckSource>,
}

/// One threshold from the workload file, parsed by `analysis::checks` when the run starts.
#[derive(Debug, Clone)]
pub struct CheckSource {
    pub text: String,
    /// `file:line:column` of the string.
    pub location: String,
}

/// Where a piece of the source is, for error messages.
pub struct Source<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn at(&self, offset: usize) -> String {
        let (line, col) = line_col(self.text, offset);
        format!("{}:{line}:{col}", self.path)
    }

    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> InputError {
        InputError::new(message).at(self.at(span.start))
    }

    /// Position of byte `offset` inside a string value whose span includes the quotes.
    fn in_string(&self, span: &Range<usize>, offset: usize) -> String {
        self.at(span.start + 1 + offset)
    }
}

/// Parse and compile a workload; `overrides` are the `--set NAME=VALUE` flags.
pub fn compile(
    source: &Source<'_>,
    overrides: &[(String, String)],
) -> Result<Workload, InputError> {
    let file: WorkloadFile = toml::from_str(source.text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        source
            .error(span, e.message().trim().to_string())
            .help("see `loadrig init session-store` for a complete example")
    })?;

    let mut params: BTreeMap<String, toml::Value> = BTreeMap::new();
    for (name, value) in &file.params {
        if matches!(
            value.get_ref(),
            toml::Value::Array(_) | toml::Value::Table(_) | toml::Value::Datetime(_)
        ) {
            return Err(source.error(
                value.span(),
                format!("parameter '{name}' must be a number, string or boolean"),
            ));
        }
        params.insert(name.clone(), value.get_ref().clone());
    }
    for (name, raw) in overrides {
        let Some(declared) = params.get(name) else {
            let known = params.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(InputError::new(format!(
                "--set {name}={raw}: the workload '{}' has no parameter '{name}'",
                file.name
            ))
            .help(if known.is_empty() {
                "this workload declares no [params]".to_string()
            } else {
                format!("its parameters are: {known}")
            }));
        };
        let value = convert_like(declared, raw).ok_or_else(|| {
            InputError::new(format!(
                "--set {name}={raw}: expected {} like the default {declared}",
                type_name(declared)
            ))
        })?;
        params.insert(name.clone(), value);
    }

    if file.ops.is_empty() {
        return Err(InputError::new(format!(
            "{}: the workload has no operations",
            source.path
        ))
        .help("add at least one [[op]] table with a name and an operation such as kv.get = { key = \"k{uniform 0..100}\" }"));
    }

    let mut seq_slots = 0;
    let mut ops = Vec::new();
    let mut names = BTreeMap::new();
    for op in &file.ops {
        let span = op.span();
        let op = op.get_ref();
        let name = op.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(source.error(op.name.span(), "operation name is empty"));
        }
        if names.insert(name.clone(), ()).is_some() {
            return Err(source.error(
                op.name.span(),
                format!("operation '{name}' is defined twice: names must be unique"),
            ));
        }
        let weight = match &op.weight {
            Some(w) if !(*w.get_ref() > 0.0 && w.get_ref().is_finite()) => {
                return Err(source.error(
                    w.span(),
                    format!("weight {} must be a positive number", w.get_ref()),
                ))
            }
            Some(w) => *w.get_ref(),
            None => 1.0,
        };
        let kind = compile_op(source, op, span, &params, &mut seq_slots)?;
        ops.push(OpSpec { name, weight, kind });
    }

    let data = match &file.data {
        Some(d) => {
            let count = match d.count.get_ref() {
                toml::Value::Integer(n) if *n >= 0 => *n as u64,
                toml::Value::String(s) => {
                    let name = s
                        .trim()
                        .trim_start_matches('{')
                        .trim_end_matches('}')
                        .trim();
                    match params.get(name) {
                        Some(toml::Value::Integer(n)) if *n >= 0 => *n as u64,
                        _ => {
                            return Err(source.error(
                                d.count.span(),
                                format!("count \"{s}\" must name an integer parameter, like \"{{records}}\""),
                            ))
                        }
                    }
                }
                other => {
                    return Err(source.error(
                        d.count.span(),
                        format!(
                            "count must be a non-negative integer or \"{{param}}\", found {other}"
                        ),
                    ))
                }
            };
            let mut data_slots = 0;
            let key = compile_template(source, &d.key, &params, &mut data_slots)?;
            check_key(source, &d.key, &key)?;
            let value = compile_template(source, &d.value, &params, &mut data_slots)?;
            Some(DataSpec {
                count,
                key,
                value,
                batch: d.batch.unwrap_or(1000).clamp(1, 1_000_000) as usize,
            })
        }
        None => None,
    };

    Ok(Workload {
        name: file.name,
        description: file.description,
        source_name: source.path.to_string(),
        target: file.target.map(|t| t.into_inner()),
        params,
        load: file.load,
        data,
        ops,
        seq_slots,
        checks: file
            .checks
            .iter()
            .map(|c| CheckSource {
                text: c.get_ref().clone(),
                location: source.in_string(&c.span(), 0),
            })
            .collect(),
    })
}

fn compile_op(
    source: &Source<'_>,
    op: &OpSection,
    span: Range<usize>,
    params: &BTreeMap<String, toml::Value>,
    slots: &mut usize,
) -> Result<OpKind, InputError> {
    let name = op.name.get_ref();
    let mut kinds = Vec::new();
    if op.nop.is_some() {
        kinds.push(OpKind::Nop);
    }
    if let Some(kv) = &op.kv {
        let mut key_of = |args: &Spanned<KvArgs>, verb: &str| -> Result<Template, InputError> {
            let a = args.get_ref();
            let key = compile_template(source, &a.key, params, slots)?;
            check_key(source, &a.key, &key)?;
            if let Some(v) = &a.value {
                return Err(source.error(v.span(), format!("kv.{verb} takes no value")));
            }
            Ok(key)
        };
        if let Some(a) = &kv.get {
            kinds.push(OpKind::Get {
                key: key_of(a, "get")?,
            });
        }
        if let Some(a) = &kv.delete {
            kinds.push(OpKind::Delete {
                key: key_of(a, "delete")?,
            });
        }
        let mut key_value = |args: &Spanned<KvArgs>,
                             verb: &str|
         -> Result<(Template, Template), InputError> {
            let a = args.get_ref();
            let key = compile_template(source, &a.key, params, slots)?;
            check_key(source, &a.key, &key)?;
            let Some(v) = &a.value else {
                return Err(source.error(
                    args.span(),
                    format!("kv.{verb} needs a value: kv.{verb} = {{ key = \"...\", value = \"{{bytes 100}}\" }}"),
                ));
            };
            Ok((key, compile_template(source, v, params, slots)?))
        };
        if let Some(a) = &kv.put {
            let (key, value) = key_value(a, "put")?;
            kinds.push(OpKind::Put { key, value });
        }
        if let Some(a) = &kv.update {
            let (key, value) = key_value(a, "update")?;
            kinds.push(OpKind::Update { key, value });
        }
    }
    match kinds.len() {
        1 => Ok(kinds.remove(0)),
        0 => Err(source.error(
            span,
            format!("operation '{name}' says nothing to do: add one of kv.put, kv.get, kv.update, kv.delete or nop = {{}}"),
        )),
        _ => Err(source.error(
            span,
            format!("operation '{name}' has {} operations: give each its own [[op]]", kinds.len()),
        )),
    }
}

fn compile_template(
    source: &Source<'_>,
    text: &Spanned<String>,
    params: &BTreeMap<String, toml::Value>,
    slots: &mut usize,
) -> Result<Template, InputError> {
    Template::compile(text.get_ref(), params, slots).map_err(|e| {
        InputError::new(format!("in \"{}\": {}", text.get_ref(), e.message))
            .at(source.in_string(&text.span(), e.offset))
    })
}

fn check_key(
    source: &Source<'_>,
    text: &Spanned<String>,
    key: &Template,
) -> Result<(), InputError> {
    if key.has_bytes() {
        return Err(source
            .error(text.span(), "a key cannot hold {bytes N}: keys are text")
            .help("use {string N} for random text in keys"));
    }
    Ok(())
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "true or false",
        _ => "a string",
    }
}

/// Convert a `--set` value to the type of the declared default.
fn convert_like(declared: &toml::Value, raw: &str) -> Option<toml::Value> {
    Some(match declared {
        toml::Value::Integer(_) => toml::Value::Integer(raw.replace('_', "").parse().ok()?),
        toml::Value::Float(_) => toml::Value::Float(raw.parse().ok()?),
        toml::Value::Boolean(_) => toml::Value::Boolean(raw.parse().ok()?),
        _ => toml::Value::String(raw.to_string()),
    })
}

/// Parse `NAME=VALUE` from `--set`.
pub fn parse_set(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected NAME=VALUE, found '{arg}'")),
    }
}
