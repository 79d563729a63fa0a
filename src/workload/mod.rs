//! The workload language: workload files, TOML parsed with spans, validated, and compiled into a [`Workload`].
//!
//! Every problem is an [`InputError`] that names `file:line:column`, says what was expected
//! and how to fix it. Parameters (`[params]`, overridable with `--set`) are substituted
//! when templates are compiled, so a run never meets an unknown name.

pub mod builtin;
pub mod figures;
pub mod grpc;
pub mod import;
pub mod load;
mod namespace;
pub mod observe;
pub mod ops;
pub mod peers;
pub mod template;
pub mod ycsb;

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::duration;
use crate::error::{line_col, InputError};
use crate::vocab::{NativeOp, RunStep, SqlOp, ValueKind};
pub use figures::FigureSpec;
pub use load::LoadSection;
pub use ops::{OpKind, OpSpec, Pause, Repeat, Retry, Step, When};
pub use peers::Peer;
pub use template::{GenState, Template};

/// A workload file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: String,
    #[serde(default)]
    description: String,
    target: Option<Spanned<String>>,
    /// The default of `--op-timeout`: an operation that takes longer fails as `timeout`.
    op_timeout: Option<Spanned<String>>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<toml::Value>>,
    /// String parameters limited to a list of values, the first the default.
    #[serde(default)]
    switches: BTreeMap<String, Spanned<SwitchDecl>>,
    /// Other systems that steps may run on (`on = "NAME"`), by name.
    #[serde(default)]
    peers: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    load: LoadSection,
    data: Option<DataSection>,
    /// The fields of the records that `record.*` operations and `[data]` store.
    records: Option<RecordsSection>,
    /// SQL run once before the data load; may only create `loadrig_` objects.
    #[serde(default)]
    setup: Vec<Spanned<SetupEntry>>,
    /// Steps before every measured run, `--skip-load` or not (pgbench's vacuum and emptied
    /// history before each run).
    #[serde(default)]
    before_run: Vec<Spanned<RunStepEntry>>,
    /// Whether the target settles the tables after the setup and load (PostgreSQL: VACUUM
    /// (ANALYZE), as `pgbench -i`); `false` leaves them as written, as `sysbench prepare`.
    settle: Option<bool>,
    /// `[grpc]`: the `.proto` files of the services `grpc` operations call.
    grpc: Option<grpc::GrpcSection>,
    #[serde(default, rename = "op")]
    ops: Vec<Spanned<ops::OpSection>>,
    /// Thresholds checked at the end of a run, like `--check` (see analysis::checks).
    #[serde(default)]
    checks: Vec<Spanned<String>>,
    /// Queries run after the run whose results must agree (pgbench's balance check).
    #[serde(default)]
    verify: Vec<Spanned<VerifySection>>,
    /// Figures computed after the run from the operation counts (TPC-C's tpmC).
    #[serde(default, rename = "figure")]
    figures: Vec<Spanned<figures::FigureSection>>,
    /// The user's own queries on the server under test, run by the observer.
    #[serde(default)]
    observe: Vec<Spanned<observe::ObserveEntry>>,
}

/// One entry of `setup = [...]`: a statement, or `{ repeat = "{tables}", sql = [...] }`,
/// statements run once per pass with `{iteration}` the pass (sysbench's `--tables`).
#[derive(Debug)]
enum SetupEntry {
    Statement(String),
    Repeat(SetupRepeat),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetupRepeat {
    repeat: Spanned<toml::Value>,
    sql: Vec<Spanned<String>>,
}

impl<'de> Deserialize<'de> for SetupEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting =
            "a statement, or a group { repeat = \"{tables}\", sql = [\"...{iteration}...\"] }";
        string_or_table(d, expecting, SetupEntry::Statement, SetupEntry::Repeat)
    }
}

/// One entry of `before_run = [...]`: `{ vacuum = "loadrig_..." }`,
/// `{ empty = "loadrig_..." }` or `{ sql = "..." }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunStepEntry {
    vacuum: Option<Spanned<String>>,
    empty: Option<Spanned<String>>,
    sql: Option<Spanned<String>>,
}

/// A switch as declared: `["a", "b"]`, or `{ values = ["a", "b"], help = "why only these" }`,
/// whose `help` goes with the refusal of any other value.
#[derive(Debug)]
struct SwitchDecl {
    values: Vec<Spanned<String>>,
    help: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchTable {
    values: Vec<Spanned<String>>,
    help: String,
}

impl<'de> Deserialize<'de> for SwitchDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = SwitchDecl;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a list of values, [\"one\", \"other\"], or { values = [...], help = \"...\" }",
                )
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, s: S) -> Result<SwitchDecl, S::Error> {
                let values =
                    Deserialize::deserialize(serde::de::value::SeqAccessDeserializer::new(s))?;
                Ok(SwitchDecl { values, help: None })
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, m: M) -> Result<SwitchDecl, M::Error> {
                let t = SwitchTable::deserialize(serde::de::value::MapAccessDeserializer::new(m))?;
                Ok(SwitchDecl {
                    values: t.values,
                    help: Some(t.help),
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A value a workload writes either as a string or as a table `T`. Not serde's untagged
/// enum: that would replace the table's own error (an unknown key, a missing field) with
/// "did not match any variant".
fn string_or_table<'de, D, T, Out>(
    d: D,
    expecting: &'static str,
    text: fn(String) -> Out,
    table: fn(T) -> Out,
) -> Result<Out, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Either<T, Out> {
        expecting: &'static str,
        text: fn(String) -> Out,
        table: fn(T) -> Out,
    }
    impl<'de, T: Deserialize<'de>, Out> serde::de::Visitor<'de> for Either<T, Out> {
        type Value = Out;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Out, E> {
            Ok((self.text)(s.to_string()))
        }
        fn visit_map<M: serde::de::MapAccess<'de>>(self, m: M) -> Result<Out, M::Error> {
            let map = serde::de::value::MapAccessDeserializer::new(m);
            T::deserialize(map).map(self.table)
        }
    }
    d.deserialize_any(Either {
        expecting,
        text,
        table,
    })
}

/// A value a workload writes either as one string or as a list of strings (`when`, `only`,
/// LDAP attribute values). Not serde's untagged enum, whose error says only "did not match
/// any variant": this one says what was found and what was expected.
fn string_or_list<'de, D, Out>(
    d: D,
    expecting: &'static str,
    one: fn(String) -> Out,
    many: fn(Vec<String>) -> Out,
) -> Result<Out, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Either<Out> {
        expecting: &'static str,
        one: fn(String) -> Out,
        many: fn(Vec<String>) -> Out,
    }
    impl<'de, Out> serde::de::Visitor<'de> for Either<Out> {
        type Value = Out;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Out, E> {
            Ok((self.one)(s.to_string()))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Out, A::Error> {
            let all = serde::de::value::SeqAccessDeserializer::new(seq);
            Vec::<String>::deserialize(all).map(self.many)
        }
    }
    d.deserialize_any(Either {
        expecting,
        one,
        many,
    })
}

/// `[[verify]]`: SQL queries whose first rows must all be equal after the run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifySection {
    name: Spanned<String>,
    sql: Vec<Spanned<String>>,
}

/// A compiled `[[verify]]`: its name and its queries (parameters substituted).
#[derive(Debug, Clone)]
pub struct VerifySpec {
    pub name: String,
    pub queries: Vec<NativeOp<ValueKind>>,
}

/// `[records]`: `fields = N` or `"{param}"` (YCSB's `fieldcount`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordsSection {
    fields: Spanned<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataSection {
    count: Spanned<toml::Value>,
    key: Spanned<String>,
    value: Spanned<String>,
    batch: Option<u64>,
}

/// Records stored before the measured run.
#[derive(Debug, Clone)]
pub struct DataSpec {
    pub count: u64,
    pub key: Template,
    pub value: Template,
    pub batch: usize,
    /// `[records]`: store whole records (`value` drawn once per field) in the target's
    /// record store, made empty first.
    pub records: Option<crate::vocab::RecordLayout>,
}

/// A validated workload, ready for the engine.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub description: String,
    pub source_name: String,
    pub target: Option<String>,
    /// Where `target`'s value starts in the file (`file:line:column` of a bad URL).
    pub target_at: Option<usize>,
    /// `op_timeout`, checked: above zero.
    pub op_timeout: Option<Duration>,
    /// Parameters, switches included (as strings).
    pub params: BTreeMap<String, toml::Value>,
    /// `[switches]`: each switch's choices, in the order written.
    pub switches: BTreeMap<String, Vec<String>>,
    /// `[peers]`, in name order; steps name them by index.
    pub peers: Vec<Peer>,
    /// `[load]` as written: `plan` reads it with the flags (`plan::load`).
    pub load: LoadSection,
    pub data: Option<DataSpec>,
    /// `[records]`: with it, `[data]` stores whole records (its `value` drawn per field)
    /// and the target makes their table first.
    pub records: Option<crate::vocab::RecordLayout>,
    pub ops: Vec<OpSpec>,
    /// SQL statements to run once before the data load.
    pub setup: Vec<NativeOp<ValueKind>>,
    /// `before_run`: steps before every measured run, after the setup and load.
    pub before_run: Vec<RunStep>,
    /// Settle the tables after the setup or load ([`crate::targets::Session::settle`]);
    /// `settle = false` in the file leaves them as written.
    pub settle: bool,
    /// How many `seq` generators the ops use (one counter each per client).
    pub seq_slots: usize,
    /// How many values transaction steps capture (one slot each per client).
    pub capture_slots: usize,
    /// How many SQL statements the workload has (ids 0..statements).
    pub statements: usize,
    /// The `checks = [...]` array, each with its place in the file for error messages.
    pub checks: Vec<CheckSource>,
    /// `[[verify]]`: run after the measured run; a disagreement fails the run.
    pub verify: Vec<VerifySpec>,
    /// `[[figure]]`: computed from the measured operation counts after the run.
    pub figures: Vec<FigureSpec>,
    /// `[[observe]]`: the user's own queries, run by the server's observer at interval
    /// boundaries (docs/observe.md).
    pub observe: Vec<observe::UserQuery>,
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
}

/// Parse and compile a workload; `overrides` are the `--set NAME=VALUE` flags and the
/// properties of `--properties` files, applied in order (a later one wins).
pub fn compile(source: &Source<'_>, overrides: &[Setting]) -> Result<Workload, InputError> {
    let file: WorkloadFile = toml::from_str(source.text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        load::file_error(source, at, e.message().trim().to_string())
    })?;
    let (mut params, floors) = declared_params(source, &file.params)?;
    let (switches, helps) = declared_switches(source, &file.switches, &mut params)?;
    for setting in overrides {
        match switches.get(&setting.name) {
            Some(choices) => set_switch(&mut params, choices, helps.get(&setting.name), setting)?,
            None => set_param(&mut params, &file.name, setting, floors.get(&setting.name))?,
        }
    }
    let peers = peers::compile(source, &params, &file.peers)?;
    if file.ops.is_empty() {
        return Err(InputError::new(format!(
            "{}: the workload has no operations",
            source.path
        ))
        .help("add at least one [[op]] table with a name and an operation such as kv.get = { key = \"k{uniform 0..100}\" }"));
    }

    let records = match &file.records {
        Some(r) => Some(crate::vocab::RecordLayout {
            fields: record_fields(source, &params, &r.fields)?,
        }),
        None => None,
    };
    let protos = match &file.grpc {
        Some(section) => Some(grpc::Protos::compile(source, section)?),
        None => None,
    };
    let mut compiler = op_compiler(source, &params);
    compiler.protos = protos.as_ref();
    compiler.switches = &switches;
    compiler.peers = &peers;
    compiler.records = records;
    let setup = compile_setup(&mut compiler, &file.setup)?;
    let before_run = compile_before_run(&mut compiler, &file.before_run)?;
    let ops = compile_ops(&mut compiler, &file.ops)?;
    let verify = compile_verify(&mut compiler, &file.verify)?;
    let op_names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    let figures = figures::compile(source, &params, &op_names, &file.figures)?;
    let observe = observe::compile(source, &file.observe)?;
    let (seq_slots, statements, capture_slots) = (
        compiler.seq_slots,
        compiler.statements,
        compiler.capture_slots,
    );
    let data = match &file.data {
        Some(d) => Some(DataSpec {
            records,
            ..compile_data(source, &params, d)?
        }),
        None => None,
    };
    let op_timeout = match &file.op_timeout {
        Some(t) => Some(op_timeout(source, t)?),
        None => None,
    };

    Ok(Workload {
        name: file.name,
        description: file.description,
        source_name: source.path.to_string(),
        target_at: file.target.as_ref().map(|t| t.span().start + 1),
        target: file.target.map(|t| t.into_inner()),
        op_timeout,
        params,
        switches,
        peers,
        load: file.load,
        data,
        records,
        ops,
        setup,
        before_run,
        settle: file.settle.unwrap_or(true),
        seq_slots,
        capture_slots,
        statements,
        checks: check_sources(source, &file.checks),
        verify,
        figures,
        observe,
    })
}

/// The `[[verify]]` tables: at least two queries each, since their results are compared.
fn compile_verify(
    compiler: &mut ops::OpCompiler<'_>,
    sections: &[Spanned<VerifySection>],
) -> Result<Vec<VerifySpec>, InputError> {
    let mut out = Vec::new();
    for section in sections {
        let v = section.get_ref();
        if v.sql.len() < 2 {
            return Err(compiler.source.error(
                section.span(),
                format!("verify '{}' needs at least two queries in sql = [...]: their first rows must be equal", v.name.get_ref()),
            ));
        }
        let queries = v
            .sql
            .iter()
            .map(|q| compiler.setup_sql(&ops::SqlArgsRef { query: q }, None))
            .collect::<Result<_, _>>()?;
        out.push(VerifySpec {
            name: v.name.get_ref().clone(),
            queries,
        });
    }
    Ok(out)
}

/// `op_timeout`: a duration above zero.
fn op_timeout(source: &Source<'_>, t: &Spanned<String>) -> Result<Duration, InputError> {
    duration::parse(t.get_ref(), "op_timeout")
        .and_then(|d| positive(d, "op_timeout"))
        .map_err(|e| e.at(source.at(t.span().start)))
}

/// The `checks = [...]` strings, each with the place of its text (after the quote).
fn check_sources(source: &Source<'_>, checks: &[Spanned<String>]) -> Vec<CheckSource> {
    checks
        .iter()
        .map(|c| CheckSource {
            text: c.get_ref().clone(),
            location: source.at(c.span().start + 1),
        })
        .collect()
}

/// Parameter values by name.
type Params = BTreeMap<String, toml::Value>;

/// A numeric parameter's least value (`{ value = 1, min = 1, help = "..." }` in `[params]`),
/// so that `--set scale=0` is refused by name instead of failing in a template that uses it.
#[derive(Debug, Clone)]
struct Floor {
    min: f64,
    help: Option<String>,
}

/// The `[params]` as declared: numbers, strings and booleans, or a table of `value` and an
/// optional `min` (and `help`, said when a value is below it); and the floors.
fn declared_params(
    source: &Source<'_>,
    declared: &BTreeMap<String, Spanned<toml::Value>>,
) -> Result<(Params, BTreeMap<String, Floor>), InputError> {
    let mut params = BTreeMap::new();
    let mut floors = BTreeMap::new();
    for (name, value) in declared {
        let bad = |what: &str| source.error(value.span(), format!("parameter '{name}' {what}"));
        let scalar = |v: &toml::Value| {
            !matches!(
                v,
                toml::Value::Array(_) | toml::Value::Table(_) | toml::Value::Datetime(_)
            )
        };
        let v = match value.get_ref() {
            toml::Value::Table(t) => {
                if let Some(key) = t
                    .keys()
                    .find(|k| !["value", "min", "help"].contains(&k.as_str()))
                {
                    return Err(bad(&format!("has '{key}': expected value, min and help")));
                }
                let v = t.get("value").filter(|v| scalar(v)).ok_or_else(|| {
                    bad("needs a value = NUMBER, STRING or BOOLEAN (its default)")
                })?;
                if let Some(min) = t.get("min") {
                    let (Some(min), Some(default)) = (number(min), number(v)) else {
                        return Err(bad(
                            "has a min, which needs a number for both value and min",
                        ));
                    };
                    if default < min {
                        return Err(bad(&format!("defaults to {v}, below its min {min}")));
                    }
                    let help = t.get("help").and_then(|h| h.as_str()).map(str::to_string);
                    floors.insert(name.clone(), Floor { min, help });
                }
                v.clone()
            }
            v if scalar(v) => v.clone(),
            _ => return Err(bad("must be a number, string or boolean")),
        };
        params.insert(name.clone(), v);
    }
    Ok((params, floors))
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Apply a setting to a declared parameter, converted to the type of its default.
fn set_param(
    params: &mut BTreeMap<String, toml::Value>,
    workload: &str,
    setting: &Setting,
    floor: Option<&Floor>,
) -> Result<(), InputError> {
    let name = &setting.name;
    let Some(declared) = params.get(name) else {
        let known = params.keys().cloned().collect::<Vec<_>>().join(", ");
        return Err(setting
            .error(format!(
                "the workload '{workload}' has no parameter '{name}'"
            ))
            .help(if known.is_empty() {
                "this workload declares no [params]".to_string()
            } else {
                format!("its parameters are: {known}")
            }));
    };
    let value = convert_like(declared, &setting.value).ok_or_else(|| {
        setting.error(format!(
            "expected {} like the default {declared}",
            type_name(declared)
        ))
    })?;
    if let Some(f) = floor.filter(|f| number(&value).is_some_and(|n| n < f.min)) {
        return Err(setting
            .error(format!(
                "the workload '{workload}' needs {name} of {} or more",
                f.min
            ))
            .help(
                f.help
                    .clone()
                    .unwrap_or(format!("set {name} to {} or more", f.min)),
            ));
    }
    params.insert(name.to_string(), value);
    Ok(())
}

fn op_compiler<'a>(
    source: &'a Source<'a>,
    params: &'a BTreeMap<String, toml::Value>,
) -> ops::OpCompiler<'a> {
    static NO_SWITCHES: BTreeMap<String, Vec<String>> = BTreeMap::new();
    ops::OpCompiler {
        source,
        params,
        switches: &NO_SWITCHES,
        peers: &[],
        seq_slots: 0,
        statements: 0,
        capture_slots: 0,
        let_kinds: BTreeMap::new(),
        let_ranges: BTreeMap::new(),
        pending_texts: BTreeMap::new(),
        in_repeat: false,
        records: None,
        protos: None,
    }
}

/// The `setup = [...]` statements, a group's once per pass; each may only touch
/// `loadrig_` objects.
fn compile_setup(
    compiler: &mut ops::OpCompiler<'_>,
    entries: &[Spanned<SetupEntry>],
) -> Result<Vec<NativeOp<ValueKind>>, InputError> {
    let mut setup = Vec::new();
    for entry in entries {
        match entry.get_ref() {
            SetupEntry::Statement(text) => {
                let statement = Spanned::new(entry.span(), text.clone());
                check_setup_namespace(compiler, &statement, "setup")?;
                setup.push(compiler.setup_sql(&ops::SqlArgsRef { query: &statement }, None)?);
            }
            SetupEntry::Repeat(group) => {
                let passes = setup_passes(compiler, &group.repeat)?;
                for statement in &group.sql {
                    check_setup_namespace(compiler, statement, "setup")?;
                }
                for pass in 1..=passes {
                    for statement in &group.sql {
                        let sql = ops::SqlArgsRef { query: statement };
                        setup.push(compiler.setup_sql(&sql, Some(pass))?);
                    }
                }
            }
        }
    }
    Ok(setup)
}

/// The `before_run = [...]` steps: a vacuum or an emptying names one `loadrig_` table, as
/// a plain name; a statement, as in `setup`, names only `loadrig_` objects.
fn compile_before_run(
    compiler: &mut ops::OpCompiler<'_>,
    entries: &[Spanned<RunStepEntry>],
) -> Result<Vec<RunStep>, InputError> {
    let source = compiler.source;
    let mut steps = Vec::new();
    for entry in entries {
        let e = entry.get_ref();
        let (table, step): (&Spanned<String>, fn(String) -> RunStep) =
            match (&e.vacuum, &e.empty, &e.sql) {
                (Some(t), None, None) => (t, RunStep::Vacuum),
                (None, Some(t), None) => (t, RunStep::Empty),
                (None, None, Some(statement)) => {
                    check_setup_namespace(compiler, statement, "before_run")?;
                    let sql = ops::SqlArgsRef { query: statement };
                    if let NativeOp::Sql(SqlOp { query, .. }) = compiler.setup_sql(&sql, None)? {
                        steps.push(RunStep::Sql(query));
                    }
                    continue;
                }
                _ => {
                    return Err(source
                        .error(entry.span(), "a before_run step is { vacuum = \"TABLE\" }, { empty = \"TABLE\" } or { sql = \"STATEMENT\" }, one key each")
                        .help("write one step per table or statement, in the order they should run"))
                }
            };
        let name = table.get_ref();
        let plain = name.strip_prefix("loadrig_").is_some_and(|rest| {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !plain {
            return Err(source
                .error(table.span(), format!("before_run names '{name}': it must be a table of loadrig's own, named loadrig_ and letters, digits or _"))
                .help("loadrig only changes, and `loadrig cleanup` only drops, objects in its own namespace"));
        }
        steps.push(step(name.clone()));
    }
    Ok(steps)
}

/// A setup or before_run statement (`what`) names only `loadrig_` objects.
fn check_setup_namespace(
    compiler: &ops::OpCompiler<'_>,
    statement: &Spanned<String>,
    what: &str,
) -> Result<(), InputError> {
    let outside = namespace::outside_namespace(statement.get_ref());
    if outside.is_some() || !statement.get_ref().contains("loadrig_") {
        let found = outside.map_or(String::new(), |name| format!(" ('{name}' is not)"));
        return Err(compiler.source
            .error(statement.span(), format!("{what} statements may only create objects named loadrig_...{found}"))
            .help("loadrig only creates, and `loadrig cleanup` only drops, objects in its own namespace"));
    }
    Ok(())
}

/// A setup group's `repeat`: a whole number of at least 1, or an integer parameter.
fn setup_passes(
    compiler: &ops::OpCompiler<'_>,
    repeat: &Spanned<toml::Value>,
) -> Result<u64, InputError> {
    let n = data_count(compiler.source, compiler.params, repeat).map_err(|_| {
        compiler.source.error(
            repeat.span(),
            format!("repeat = {} must be a whole number or name an integer parameter, like \"{{tables}}\"", repeat.get_ref()),
        )
    })?;
    if n == 0 {
        return Err(compiler
            .source
            .error(
                repeat.span(),
                match repeat.get_ref() {
                    toml::Value::String(s) => {
                        format!("repeat = \"{s}\" is 0: a setup group runs at least once")
                    }
                    other => format!("repeat = {other}: a setup group runs at least once"),
                },
            )
            .help("set the parameter to 1 or more (sysbench's --tables starts at 1)"));
    }
    Ok(n)
}

/// The `[[op]]` tables, with names that are not empty and unique.
fn compile_ops(
    compiler: &mut ops::OpCompiler<'_>,
    sections: &[Spanned<ops::OpSection>],
) -> Result<Vec<OpSpec>, InputError> {
    let mut ops = Vec::new();
    let mut names = BTreeMap::new();
    for op in sections {
        if !compiler.keeps(&op.get_ref().only)? || compiler.weight(&op.get_ref().weight)? == 0.0 {
            continue;
        }
        let compiled = compiler.op(op)?;
        let at = op.get_ref().name.span();
        if compiled.name.is_empty() {
            return Err(compiler.source.error(at, "operation name is empty"));
        }
        if names.insert(compiled.name.clone(), ()).is_some() {
            return Err(compiler.source.error(
                at,
                format!(
                    "operation '{}' is defined twice: names must be unique",
                    compiled.name
                ),
            ));
        }
        ops.push(compiled);
    }
    if ops.is_empty() {
        return Err(InputError::new(format!(
            "{}: `only` (or a weight of 0) leaves out every operation for these switch values and parameters",
            compiler.source.path
        ))
        .help("set the switches (--set NAME=VALUE) to values some operation is for, or a weight above 0"));
    }
    Ok(ops)
}

/// Each switch's values, and the help of those that have one.
type DeclaredSwitches = (BTreeMap<String, Vec<String>>, BTreeMap<String, String>);

/// The `[switches]`: each a non-empty list of distinct values, added to the parameters with
/// its first value; a name may not also be a parameter. Also each switch's `help`, if any.
fn declared_switches(
    source: &Source<'_>,
    declared: &BTreeMap<String, Spanned<SwitchDecl>>,
    params: &mut BTreeMap<String, toml::Value>,
) -> Result<DeclaredSwitches, InputError> {
    let mut switches = BTreeMap::new();
    let mut helps = BTreeMap::new();
    for (name, decl) in declared {
        let choices = &decl.get_ref().values;
        let values: Vec<String> = choices.iter().map(|c| c.get_ref().clone()).collect();
        if values.is_empty() {
            return Err(source.error(
                decl.span(),
                format!("switch '{name}' has no values: {name} = [\"one\", \"other\"], the first the default"),
            ));
        }
        if let Some(dup) = choices
            .iter()
            .skip(1)
            .find(|c| values.iter().filter(|v| *v == c.get_ref()).count() > 1)
        {
            return Err(source.error(
                dup.span(),
                format!("switch '{name}' lists '{}' twice", dup.get_ref()),
            ));
        }
        if params.contains_key(name) {
            return Err(source.error(
                decl.span(),
                format!("'{name}' is both a parameter and a switch: rename one"),
            ));
        }
        params.insert(name.clone(), toml::Value::String(values[0].clone()));
        switches.insert(name.clone(), values);
        if let Some(help) = &decl.get_ref().help {
            helps.insert(name.clone(), help.clone());
        }
    }
    Ok((switches, helps))
}

/// Apply a setting to a switch: its value must be one of the switch's values.
fn set_switch(
    params: &mut BTreeMap<String, toml::Value>,
    choices: &[String],
    help: Option<&String>,
    setting: &Setting,
) -> Result<(), InputError> {
    let name = &setting.name;
    let raw = setting.value.as_str();
    let Some(value) = choices.iter().find(|c| {
        *c == raw || java_boolean(raw) == Some(c.as_str()) || sysbench_flag(raw) == Some(c.as_str())
    }) else {
        let e = setting.error(format!("switch '{name}' is one of {}", choices.join(", ")));
        return Err(match help {
            Some(help) => e.help(help.clone()),
            None => e,
        });
    };
    params.insert(name.to_string(), toml::Value::String(value.clone()));
    Ok(())
}

/// `true` or `false` in any case, as the lower-case word. YCSB reads its boolean properties
/// with Java's `Boolean.parseBoolean`, which ignores case, so `readallfields=TRUE` in a YCSB
/// property file (or `-p`) means true; a switch of `"true"`, `"false"` and a boolean
/// parameter take it the same way. Any other spelling is still refused, where Java would
/// silently read false.
fn java_boolean(raw: &str) -> Option<&'static str> {
    if raw.eq_ignore_ascii_case("true") {
        Some("true")
    } else if raw.eq_ignore_ascii_case("false") {
        Some("false")
    } else {
        None
    }
}

/// `on` or `off` for the other spellings sysbench takes of a flag (`--skip_trx=true`, `=1`;
/// sysbench 1.0 takes on, off, true, false, 1 and 0), so an `["off", "on"]` switch copied
/// from a sysbench option takes them too.
fn sysbench_flag(raw: &str) -> Option<&'static str> {
    match raw {
        "true" | "1" => Some("on"),
        "false" | "0" => Some("off"),
        _ => None,
    }
}

/// The `[data]` section: how many records, and their key and value templates.
fn compile_data(
    source: &Source<'_>,
    params: &BTreeMap<String, toml::Value>,
    d: &DataSection,
) -> Result<DataSpec, InputError> {
    let count = data_count(source, params, &d.count)?;
    // A fresh compiler: the data's generator slots are counted apart from the operations'.
    let mut data = op_compiler(source, params);
    let key = data.key(&d.key)?;
    let value = data.template(&d.value, &[])?;
    Ok(DataSpec {
        count,
        key,
        value,
        batch: d.batch.unwrap_or(1000).clamp(1, 1_000_000) as usize,
        records: None,
    })
}

/// `[records] fields`: at least 1, as a number or `"{param}"`.
fn record_fields(
    source: &Source<'_>,
    params: &BTreeMap<String, toml::Value>,
    fields: &Spanned<toml::Value>,
) -> Result<usize, InputError> {
    let n = data_count(source, params, fields).map_err(|e| InputError {
        message: e.message.replace("count", "fields"),
        ..e
    })?;
    if n == 0 || n > 1000 {
        return Err(source.error(
            fields.span(),
            format!("[records] fields is {n}: a record has 1 to 1000 fields"),
        ));
    }
    Ok(n as usize)
}

/// `count`: a non-negative integer, or `"{param}"` naming an integer parameter.
fn data_count(
    source: &Source<'_>,
    params: &BTreeMap<String, toml::Value>,
    count: &Spanned<toml::Value>,
) -> Result<u64, InputError> {
    match count.get_ref() {
        toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
        toml::Value::String(s) => {
            let name = s
                .trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .trim();
            match params.get(name) {
                Some(toml::Value::Integer(n)) if *n >= 0 => Ok(*n as u64),
                _ => Err(source.error(
                    count.span(),
                    format!("count \"{s}\" must name an integer parameter, like \"{{records}}\""),
                )),
            }
        }
        other => Err(source.error(
            count.span(),
            format!("count must be a non-negative integer or \"{{param}}\", found {other}"),
        )),
    }
}

/// An operation time limit must be above zero (`0s` would fail every operation).
pub fn positive(d: Duration, what: &str) -> Result<Duration, InputError> {
    if d.is_zero() {
        return Err(InputError::new(format!("{what} must be above zero"))
            .help("for example 5s, or leave it out for no limit"));
    }
    Ok(d)
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
        toml::Value::Boolean(_) => toml::Value::Boolean(java_boolean(raw)?.parse().ok()?),
        _ => toml::Value::String(raw.to_string()),
    })
}

/// A parameter's new value: a `--set NAME=VALUE`, or a property of a `--properties` file,
/// which sets the parameter the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub name: String,
    pub value: String,
    /// Where a property was read, `FILE:LINE:COLUMN`; `None` for `--set`.
    pub at: Option<String>,
}

impl Setting {
    /// `--set NAME=VALUE`.
    pub fn flag(name: &str, value: &str) -> Setting {
        Setting {
            name: name.to_string(),
            value: value.to_string(),
            at: None,
        }
    }

    /// An error about this setting, at its place in its properties file when it came from one.
    fn error(&self, message: String) -> InputError {
        let (name, value) = (&self.name, &self.value);
        match &self.at {
            None => InputError::new(format!("--set {name}={value}: {message}")),
            Some(at) => InputError::new(format!("property {name}={value}: {message}")).at(at),
        }
    }
}

/// Parse `NAME=VALUE` from `--set`.
pub fn parse_set(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected NAME=VALUE, found '{arg}'")),
    }
}

#[cfg(test)]
mod tests;
