//! Operations as written in `[[op]]` tables, and their compiled form.
//!
//! `kv.*` and `nop` run on every target; `sql`, `redis`, `ldap.*` and `http` are native to
//! one kind of system; `connect` and `authenticate` measure the handshake itself; `tx`
//! runs several native steps as one transaction, passing captured values between them,
//! retried as a whole under `retry`; `steps` runs them the same way without a transaction,
//! each statement committed on its own.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::template::Template;
use super::{Peer, Source};
use crate::duration;
use crate::error::InputError;
use crate::vocab::{
    ErrorClass, Family, HttpOp, LdapOp, NativeOp, RecordLayout, RecordOp, RedisOp, Scope, SqlOp,
    StatementKind, ValueKind, CAPTURES,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OpSection {
    pub name: Spanned<String>,
    /// A number, or `"{param}"` naming a number parameter (YCSB's proportions); 0 leaves
    /// the op out.
    pub weight: Option<Spanned<toml::Value>>,
    kv: Option<KvSection>,
    record: Option<RecordSection>,
    nop: Option<toml::value::Table>,
    connect: Option<toml::value::Table>,
    authenticate: Option<toml::value::Table>,
    sql: Option<Spanned<SqlForm>>,
    redis: Option<Spanned<Vec<Spanned<String>>>>,
    ldap: Option<LdapSection>,
    http: Option<Spanned<HttpArgs>>,
    tx: Option<Spanned<Vec<Spanned<StepSection>>>>,
    /// `tx`'s steps without the transaction: each statement in autocommit.
    steps: Option<Spanned<Vec<Spanned<StepSection>>>>,
    capture: Option<Spanned<Vec<String>>>,
    retry: Option<Spanned<RetrySection>>,
    /// Values drawn once per attempt of the operation, which all its templates share.
    #[serde(rename = "let")]
    lets: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// The op exists only for these switch values.
    pub only: Option<Spanned<BTreeMap<String, OneOrMany>>>,
    /// A native op runs on this peer instead of the target.
    on: Option<Spanned<String>>,
    /// `pause = { keying = "18s", think = "12s", only = { ... } }`: TPC-C's keying time
    /// before the operation and think time after it (closed loop).
    pause: Option<Spanned<PauseSection>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseSection {
    keying: Option<Spanned<String>>,
    think: Option<Spanned<String>>,
    only: Option<Spanned<BTreeMap<String, OneOrMany>>>,
}

/// One string or a list of them: a switch's values in `only = { NAME = ... }`, an LDAP
/// attribute's values.
#[derive(Debug)]
pub(super) struct OneOrMany(Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let one = |s| OneOrMany(vec![s]);
        super::string_or_list(d, "a string, or a list of strings", one, OneOrMany)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KvSection {
    put: Option<Spanned<KvArgs>>,
    get: Option<Spanned<KvArgs>>,
    update: Option<Spanned<KvArgs>>,
    delete: Option<Spanned<KvArgs>>,
}

/// `record.insert`, `record.read`, `record.update`, `record.scan`, `record.delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordSection {
    insert: Option<Spanned<RecordArgs>>,
    read: Option<Spanned<RecordArgs>>,
    update: Option<Spanned<RecordArgs>>,
    scan: Option<Spanned<RecordArgs>>,
    delete: Option<Spanned<RecordArgs>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordArgs {
    key: Spanned<String>,
    /// Each field's value (insert, update): drawn once per field.
    value: Option<Spanned<String>>,
    /// One field's number (read, update, scan); without it, every field.
    field: Option<Spanned<String>>,
    /// How many records a scan reads.
    count: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KvArgs {
    key: Spanned<String>,
    value: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SqlArgs {
    query: Spanned<String>,
    #[serde(default)]
    params: Vec<Spanned<String>>,
}

/// `sql = "STATEMENT"` (no parameters) or `sql = { query = "...", params = [...] }`.
#[derive(Debug)]
enum SqlForm {
    Text(String),
    Table(SqlArgs),
}

impl SqlForm {
    /// As a table; the text form's query spans the whole value.
    fn args(&self, span: Range<usize>) -> SqlArgs {
        match self {
            SqlForm::Text(query) => SqlArgs {
                query: Spanned::new(span, query.clone()),
                params: Vec::new(),
            },
            SqlForm::Table(a) => SqlArgs {
                query: a.query.clone(),
                params: a.params.clone(),
            },
        }
    }
}

impl<'de> Deserialize<'de> for SqlForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting = "a statement, or a table { query = \"...\", params = [...] }";
        super::string_or_table(d, expecting, SqlForm::Text, SqlForm::Table)
    }
}

/// A setup statement, borrowed from the workload file.
pub(super) struct SqlArgsRef<'a> {
    pub query: &'a Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepSection {
    sql: Option<Spanned<SqlForm>>,
    record: Option<RecordSection>,
    redis: Option<Spanned<Vec<Spanned<String>>>>,
    ldap: Option<LdapSection>,
    http: Option<Spanned<HttpArgs>>,
    capture: Option<Spanned<Vec<String>>>,
    only: Option<Spanned<BTreeMap<String, OneOrMany>>>,
    /// `when = "NAME"`, or `when = ["NAME", "!OTHER", ...]`: every one must hold.
    when: Option<Spanned<WhenForm>>,
    on: Option<Spanned<String>>,
    /// `{ commit = {} }`: a commit point, not a native step.
    commit: Option<toml::value::Table>,
    /// `{ rollback = {}, when = "..." }`: roll back and end the operation, not a native step.
    rollback: Option<toml::value::Table>,
    /// `{ repeat = "COUNT", steps = [...] }`: run `steps` COUNT times, drawn each time.
    repeat: Option<Spanned<String>>,
    steps: Option<Spanned<Vec<Spanned<StepSection>>>>,
}

/// `when = "NAME"` or a list of them, all of which must hold (pgbench's `\elif`: the
/// branches before are false and this one true).
#[derive(Debug)]
enum WhenForm {
    One(String),
    All(Vec<String>),
}

impl<'de> Deserialize<'de> for WhenForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting = "a value's name, \"NAME\" or \"!NAME\", or a list of them: [\"!a\", \"b\"]";
        super::string_or_list(d, expecting, WhenForm::One, WhenForm::All)
    }
}

impl WhenForm {
    fn names(&self) -> Vec<&str> {
        match self {
            WhenForm::One(n) => vec![n.as_str()],
            WhenForm::All(ns) => ns.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapSection {
    search: Option<Spanned<LdapSearch>>,
    bind: Option<Spanned<LdapBind>>,
    add: Option<Spanned<LdapEntry>>,
    modify: Option<Spanned<LdapModify>>,
    delete: Option<Spanned<LdapDn>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapSearch {
    base: Spanned<String>,
    scope: Option<Spanned<String>>,
    filter: Option<Spanned<String>>,
    #[serde(default)]
    attrs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapBind {
    dn: Spanned<String>,
    password: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapEntry {
    dn: Spanned<String>,
    attrs: Spanned<BTreeMap<String, OneOrMany>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapModify {
    dn: Spanned<String>,
    replace: Spanned<BTreeMap<String, OneOrMany>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LdapDn {
    dn: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpArgs {
    method: Option<String>,
    path: Spanned<String>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    body: Option<Spanned<String>>,
    expect: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetrySection {
    on: Vec<Spanned<String>>,
    max: Option<u32>,
    backoff: Option<Spanned<String>>,
}

/// One native operation ready to run (alone or as a step of a transaction): its shape as a
/// target receives it, its argument templates in [`NativeOp::map_args`] order, and the
/// capture slots its first result row fills.
#[derive(Debug, Clone)]
pub struct Step {
    pub op: NativeOp<ValueKind>,
    pub templates: Vec<Template>,
    pub capture: Vec<usize>,
    /// `when`: the values that decide, at run time, whether the step runs (all must hold;
    /// none: it always runs).
    pub when: Vec<When>,
    /// `on`: the index of the peer it runs on (else the target).
    pub peer: Option<usize>,
    /// A commit point precedes it in its tx: commit there and begin a new transaction.
    pub commit_before: bool,
    /// It begins a `repeat` group: it and the steps after it, `len` in all, run `count`
    /// times over.
    pub repeat: Option<Repeat>,
    /// What it does to the target, for the statement counts.
    pub statement: StatementKind,
    /// A rollback step follows it: after it (run or skipped), when the condition holds
    /// (always with `None`), the transaction is rolled back and the operation ends there,
    /// counted as rolled back.
    pub rollback_after: Option<Option<When>>,
    /// Its statement's text names a `let` value (`loadrig_sbtest{t}`): the statement as
    /// written for each value the `let` can take, chosen when the step is bound.
    pub texts: Option<Box<StatementTexts>>,
}

/// The statements of a step whose text names a `let` value: the one for value `lo + i`
/// is `ops[i]`, each with its own statement id, so each is prepared on its own.
#[derive(Debug, Clone)]
pub struct StatementTexts {
    pub slot: usize,
    pub lo: i64,
    pub ops: Vec<NativeOp<ValueKind>>,
}

/// What a statement whose text names a `let` value compiles to, before its step exists:
/// the let's slot, its lowest value, and each value's statement id and text.
type PendingTexts = (usize, i64, Vec<(usize, String)>);

/// At most this many statements are written for one step whose text names a `let` value.
const MAX_TEXTS: i64 = 1000;

/// `when = "NAME"` or `when = "!NAME"`: the capture slot whose value decides, and whether
/// the decision is negated (the step runs when the value is false).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct When {
    pub slot: usize,
    pub negate: bool,
}

/// A `repeat` group of a tx: how many passes (drawn each time the tx reaches it) over how
/// many steps.
#[derive(Debug, Clone)]
pub struct Repeat {
    pub count: Template,
    pub len: usize,
}

impl Step {
    /// Split a compiled operation into the shape a target receives and the templates the
    /// engine renders, once, so binding an operation allocates nothing.
    fn new(op: NativeOp<Template>, capture: Vec<usize>) -> Step {
        let statement = op.statement_kind(Template::constant_text);
        let mut templates = Vec::new();
        let op = op.map_args(|t| {
            let kind = t.kind();
            templates.push(t);
            kind
        });
        Step {
            op,
            templates,
            capture,
            when: Vec::new(),
            peer: None,
            commit_before: false,
            repeat: None,
            statement,
            rollback_after: None,
            texts: None,
        }
    }

    /// The operation to send now: the step's own, or, when its statement's text names a
    /// `let` value, the statement written for the value that `values` holds.
    #[inline]
    pub fn op_now<'s>(&'s self, values: &[Vec<u8>]) -> &'s NativeOp<ValueKind> {
        let Some(texts) = &self.texts else {
            return &self.op;
        };
        // The `let` is a `{uniform}` draw, so its value is always one of the texts'.
        std::str::from_utf8(&values[texts.slot])
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .and_then(|v| usize::try_from(v - texts.lo).ok())
            .and_then(|i| texts.ops.get(i))
            .unwrap_or(&self.op)
    }
}

/// Retry the whole operation when it fails with one of these classes.
#[derive(Debug, Clone)]
pub struct Retry {
    pub on: Vec<ErrorClass>,
    pub max: u32,
    pub backoff: Duration,
}

/// What one operation does, with its compiled templates.
#[derive(Debug, Clone)]
pub enum OpKind {
    Nop,
    Put {
        key: Template,
        value: Template,
    },
    Get {
        key: Template,
    },
    Update {
        key: Template,
        value: Template,
    },
    Delete {
        key: Template,
    },
    /// Open a new connection (handshake and authentication), then close it.
    Connect,
    /// Authenticate again on the client's open connection.
    Authenticate,
    Native(Step),
    Tx(Vec<Step>),
    /// A tx's steps run without BEGIN and COMMIT (sysbench's autocommit statements): no
    /// commit points or rollback steps.
    Steps(Vec<Step>),
}

impl OpKind {
    pub fn label(&self) -> &'static str {
        match self {
            OpKind::Nop => "nop",
            OpKind::Put { .. } => "kv.put",
            OpKind::Get { .. } => "kv.get",
            OpKind::Update { .. } => "kv.update",
            OpKind::Delete { .. } => "kv.delete",
            OpKind::Connect => "connect",
            OpKind::Authenticate => "authenticate",
            OpKind::Native(step) => step.op.label(),
            OpKind::Tx(_) => "tx",
            OpKind::Steps(_) => "steps",
        }
    }

    /// What one attempt of a single operation sends to the target: nothing for `nop`,
    /// `connect` (a handshake, not a statement) and peer steps; a tx or steps counts its
    /// steps.
    #[inline]
    pub fn statement_kind(&self) -> Option<StatementKind> {
        match self {
            OpKind::Get { .. } => Some(StatementKind::Read),
            OpKind::Put { .. } | OpKind::Update { .. } | OpKind::Delete { .. } => {
                Some(StatementKind::Write)
            }
            OpKind::Authenticate => Some(StatementKind::Other),
            OpKind::Native(step) if step.peer.is_none() => Some(step.statement),
            OpKind::Nop
            | OpKind::Connect
            | OpKind::Native(_)
            | OpKind::Tx(_)
            | OpKind::Steps(_) => None,
        }
    }

    /// A read of one record by its key (`kv.get`, `record.read`): one that reads no row
    /// found none (YCSB's `NOT_FOUND`).
    #[inline]
    pub fn is_lookup(&self) -> bool {
        match self {
            OpKind::Get { .. } => true,
            OpKind::Native(step) => matches!(step.op, NativeOp::Record(RecordOp::Read { .. })),
            _ => false,
        }
    }

    /// A single operation on the client's session: no transaction, no new connection.
    #[inline]
    pub fn is_plain(&self) -> bool {
        match self {
            OpKind::Connect | OpKind::Authenticate | OpKind::Tx(_) | OpKind::Steps(_) => false,
            OpKind::Native(step) => step.peer.is_none(),
            _ => true,
        }
    }

    /// Its native steps: a native op's one, a tx's or steps' all; none for the others.
    pub fn native_steps(&self) -> &[Step] {
        match self {
            OpKind::Native(step) => std::slice::from_ref(step),
            OpKind::Tx(steps) | OpKind::Steps(steps) => steps.as_slice(),
            _ => &[],
        }
    }

    /// The native families the op needs from its target (peer steps run elsewhere).
    pub fn families(&self) -> Vec<Family> {
        self.native_steps()
            .iter()
            .filter(|s| s.peer.is_none())
            .map(|s| s.op.family())
            .collect()
    }
}

/// A compiled operation.
#[derive(Debug, Clone)]
pub struct OpSpec {
    pub name: String,
    pub weight: f64,
    pub kind: OpKind,
    /// `kind.is_lookup()`, kept as a flag for the client loop, which reads it per operation.
    pub lookup: bool,
    pub retry: Option<Retry>,
    /// `let`: drawn at the start of every attempt, in name order.
    pub lets: Vec<Let>,
    /// `pause`, when its `only` keeps it: keying and think times around the operation.
    pub pause: Option<Pause>,
}

/// A closed-loop client waits `keying` before the operation (outside its latency) and,
/// after it, a think time drawn from a negative exponential of mean `think`, cut at ten
/// times the mean (TPC-C's clause 5.2.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pause {
    pub keying: Duration,
    pub think: Duration,
}

/// One `let` value: its name, the capture slot it is drawn into, and its template.
#[derive(Debug, Clone)]
pub struct Let {
    pub name: String,
    pub slot: usize,
    pub template: Template,
}

/// Capture names as written, with their place in the file.
type CaptureNames = (Vec<String>, Range<usize>);

/// An operation's `let` values (slot, template) and their names with their slots.
type LetSlots = (Vec<Let>, Vec<(String, usize)>);

/// Compiles ops, numbering SQL statements and capture slots across the workload.
pub(super) struct OpCompiler<'a> {
    pub source: &'a Source<'a>,
    pub params: &'a BTreeMap<String, toml::Value>,
    /// `[switches]`, for `only`.
    pub switches: &'a BTreeMap<String, Vec<String>>,
    /// `[peers]`, for `on`.
    pub peers: &'a [Peer],
    pub seq_slots: usize,
    pub statements: usize,
    pub capture_slots: usize,
    /// The kind of each `let` value's generator, by capture slot.
    pub let_kinds: BTreeMap<usize, ValueKind>,
    /// The range of each `let` value that is one `{uniform A..B}`, by capture slot.
    pub let_ranges: BTreeMap<usize, (i64, i64)>,
    /// Statements whose text names a `let` value, by the statement id of the text as
    /// written, until their step is made.
    pub pending_texts: BTreeMap<usize, PendingTexts>,
    /// Compiling the steps of a `repeat` group, where `{iteration}` has a value.
    pub in_repeat: bool,
    /// `[records]`: the fields of a record, for `record.*`.
    pub records: Option<RecordLayout>,
}

impl OpCompiler<'_> {
    pub fn template(
        &mut self,
        text: &Spanned<String>,
        captures: &[(String, usize)],
    ) -> Result<Template, InputError> {
        let t = Template::compile_with(text.get_ref(), self.params, captures, &mut self.seq_slots)
            .map_err(|e| {
                InputError::new(format!("in \"{}\": {}", text.get_ref(), e.message))
                    .at(self.source.at(text.span().start + 1 + e.offset))
            })?;
        self.check_iteration(&t, text.get_ref(), &text.span())?;
        // `"{aid}"` alone binds as the number its `let` draws, not as text.
        Ok(
            match t.single_capture().and_then(|s| self.let_kinds.get(&s)) {
                Some(kind) => t.with_kind(*kind),
                None => t,
            },
        )
    }

    /// A template from a string without its own position: errors point at `span`.
    fn template_at(
        &mut self,
        text: &str,
        span: &Range<usize>,
        captures: &[(String, usize)],
    ) -> Result<Template, InputError> {
        let t = Template::compile_with(text, self.params, captures, &mut self.seq_slots).map_err(
            |e| {
                self.source
                    .error(span.clone(), format!("in \"{text}\": {}", e.message))
            },
        )?;
        self.check_iteration(&t, text, span)?;
        Ok(t)
    }

    /// `{iteration}` counts the passes of a `repeat` group: outside one it has no value.
    fn check_iteration(
        &self,
        t: &Template,
        text: &str,
        span: &Range<usize>,
    ) -> Result<(), InputError> {
        if self.in_repeat || !t.uses_iteration() {
            return Ok(());
        }
        Err(self
            .source
            .error(span.clone(), format!("in \"{text}\": {{iteration}} has a value only in the steps of a repeat group"))
            .help("tx = [ { repeat = \"10\", steps = [ { sql = ..., params = [\"{iteration}\"] } ] } ]"))
    }

    pub fn key(&mut self, text: &Spanned<String>) -> Result<Template, InputError> {
        self.key_with(text, &[])
    }

    /// A key that may use an operation's `let` values.
    fn key_with(
        &mut self,
        text: &Spanned<String>,
        lets: &[(String, usize)],
    ) -> Result<Template, InputError> {
        let key = self.template(text, lets)?;
        if key.has_bytes() {
            return Err(self
                .source
                .error(text.span(), "a key cannot hold {bytes N}: keys are text")
                .help("use {string N} for random text in keys"));
        }
        Ok(key)
    }

    pub fn op(&mut self, op: &Spanned<OpSection>) -> Result<OpSpec, InputError> {
        let span = op.span();
        let op = op.get_ref();
        let name = op.name.get_ref().trim().to_string();
        let weight = self.weight(&op.weight)?;
        if weight == 0.0 {
            return Err(self
                .source
                .error(
                    op.name.span(),
                    format!("operation '{name}' has weight 0: it would never run"),
                )
                .help("give it a weight above 0, or leave it out"));
        }
        let (lets, visible) = self.lets(&op.lets)?;
        let mut kinds = Vec::new();
        if op.nop.is_some() {
            kinds.push(OpKind::Nop);
        }
        if op.connect.is_some() {
            kinds.push(OpKind::Connect);
        }
        if op.authenticate.is_some() {
            kinds.push(OpKind::Authenticate);
        }
        if let Some(kv) = &op.kv {
            self.kv(kv, &visible, &mut kinds)?;
        }
        let capture = self.capture_names(&op.capture)?;
        for native in self.natives(
            op.sql.as_ref(),
            op.record.as_ref(),
            op.redis.as_ref(),
            op.ldap.as_ref(),
            op.http.as_ref(),
            &visible,
        )? {
            let mut step = self.new_step(native, Vec::new());
            step.peer = self.peer(&op.on, &step.op)?;
            kinds.push(OpKind::Native(step));
        }
        if let (Some(on), false) = (&op.on, matches!(kinds.last(), Some(OpKind::Native(_)))) {
            return Err(self.source.error(
                on.span(),
                "on = \"PEER\" goes with one sql, redis or http operation, or on a step of a tx",
            ));
        }
        if let Some(tx) = &op.tx {
            kinds.push(self.tx(tx, visible.clone(), true)?);
        }
        if let Some(steps) = &op.steps {
            kinds.push(self.tx(steps, visible, false)?);
        }
        let mut kind = match kinds.len() {
            1 => kinds.remove(0),
            0 => {
                return Err(self.source.error(
                    span,
                    format!("operation '{name}' says nothing to do: add one of kv.put, kv.get, kv.update, kv.delete, record.*, sql, redis, ldap.*, http, tx, steps, connect, authenticate or nop = {{}}"),
                ))
            }
            n => return Err(self.source.error(span, format!("operation '{name}' has {n} operations: give each its own [[op]]"))),
        };
        if let Some((names, cspan)) = capture {
            match &mut kind {
                OpKind::Native(step) => {
                    self.check_capture(&step.op, &names, &cspan)?;
                    step.capture = self.slots(&names);
                }
                _ => return Err(self.source.error(cspan, CAPTURES)),
            }
        }
        let retry = match &op.retry {
            Some(r) => Some(self.retry(r)?),
            None => None,
        };
        let pause = match &op.pause {
            Some(p) => self.pause(p)?,
            None => None,
        };
        Ok(OpSpec {
            name,
            weight,
            lookup: kind.is_lookup(),
            kind,
            retry,
            lets,
            pause,
        })
    }

    /// `weight`: a number, or `"{param}"` naming a number parameter, at least 0 (0 leaves
    /// the op out); 1 when not given.
    pub fn weight(&self, w: &Option<Spanned<toml::Value>>) -> Result<f64, InputError> {
        let Some(w) = w else { return Ok(1.0) };
        let value = match w.get_ref() {
            toml::Value::Integer(n) => Some(*n as f64),
            toml::Value::Float(x) => Some(*x),
            toml::Value::String(s) => {
                let name = s
                    .trim()
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .trim();
                match self.params.get(name) {
                    Some(toml::Value::Integer(n)) => Some(*n as f64),
                    Some(toml::Value::Float(x)) => Some(*x),
                    _ => {
                        return Err(self.source.error(
                            w.span(),
                            format!("weight \"{s}\" must name a number parameter, like \"{{readproportion}}\""),
                        ))
                    }
                }
            }
            _ => None,
        };
        match value {
            Some(x) if x >= 0.0 && x.is_finite() => Ok(x),
            _ => Err(self.source.error(
                w.span(),
                format!(
                    "weight {} must be a number of at least 0 (0 leaves the operation out)",
                    w.get_ref()
                ),
            )),
        }
    }

    /// `let = { aid = "{uniform 1..100001}" }`: each name gets a capture slot that every
    /// template of the operation may use as `{aid}`. The values may use parameters, not
    /// each other.
    fn lets(
        &mut self,
        lets: &Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    ) -> Result<LetSlots, InputError> {
        let Some(lets) = lets else {
            return Ok((Vec::new(), Vec::new()));
        };
        let names: Vec<String> = lets.get_ref().keys().cloned().collect();
        self.capture_names(&Some(Spanned::new(lets.span(), names.clone())))?;
        let mut compiled = Vec::new();
        let mut visible = Vec::new();
        for (name, text) in lets.get_ref() {
            let template = self.template(text, &[])?;
            let slot = self.slots(std::slice::from_ref(name))[0];
            self.let_kinds.insert(slot, template.kind());
            if let Some(range) = template.uniform_range() {
                self.let_ranges.insert(slot, range);
            }
            compiled.push(Let {
                name: name.clone(),
                slot,
                template,
            });
            visible.push((name.clone(), slot));
        }
        Ok((compiled, visible))
    }

    /// Only operations that return values capture, each family says how many
    /// ([`NativeOp::check_capture`]).
    fn check_capture<A>(
        &self,
        op: &NativeOp<A>,
        names: &[String],
        span: &Range<usize>,
    ) -> Result<(), InputError> {
        op.check_capture(names.len())
            .map_err(|message| self.source.error(span.clone(), message))
    }

    fn slots(&mut self, names: &[String]) -> Vec<usize> {
        names
            .iter()
            .map(|_| {
                self.capture_slots += 1;
                self.capture_slots - 1
            })
            .collect()
    }

    fn capture_names(
        &self,
        c: &Option<Spanned<Vec<String>>>,
    ) -> Result<Option<CaptureNames>, InputError> {
        let Some(c) = c else { return Ok(None) };
        for name in c.get_ref() {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            {
                return Err(self.source.error(
                    c.span(),
                    format!("capture name '{name}' must be letters, digits and _"),
                ));
            }
            if self.params.contains_key(name) {
                return Err(self.source.error(
                    c.span(),
                    format!("capture name '{name}' is also a parameter: rename one"),
                ));
            }
        }
        Ok(Some((c.get_ref().clone(), c.span())))
    }

    fn kv(
        &mut self,
        kv: &KvSection,
        lets: &[(String, usize)],
        kinds: &mut Vec<OpKind>,
    ) -> Result<(), InputError> {
        let no_value = |c: &Self, a: &Spanned<KvArgs>, verb: &str| match &a.get_ref().value {
            Some(v) => Err(c
                .source
                .error(v.span(), format!("kv.{verb} takes no value"))),
            None => Ok(()),
        };
        if let Some(a) = &kv.get {
            no_value(self, a, "get")?;
            kinds.push(OpKind::Get {
                key: self.key_with(&a.get_ref().key, lets)?,
            });
        }
        if let Some(a) = &kv.delete {
            no_value(self, a, "delete")?;
            kinds.push(OpKind::Delete {
                key: self.key_with(&a.get_ref().key, lets)?,
            });
        }
        for (verb, args) in [("put", &kv.put), ("update", &kv.update)] {
            let Some(a) = args else { continue };
            let key = self.key_with(&a.get_ref().key, lets)?;
            let Some(v) = &a.get_ref().value else {
                return Err(self.source.error(
                    a.span(),
                    format!("kv.{verb} needs a value: kv.{verb} = {{ key = \"...\", value = \"{{bytes 100}}\" }}"),
                ));
            };
            let value = self.template(v, lets)?;
            kinds.push(if verb == "put" {
                OpKind::Put { key, value }
            } else {
                OpKind::Update { key, value }
            });
        }
        Ok(())
    }

    /// The native operations named in one table (an op or a tx step).
    fn natives(
        &mut self,
        sql: Option<&Spanned<SqlForm>>,
        record: Option<&RecordSection>,
        redis: Option<&Spanned<Vec<Spanned<String>>>>,
        ldap: Option<&LdapSection>,
        http: Option<&Spanned<HttpArgs>>,
        captures: &[(String, usize)],
    ) -> Result<Vec<NativeOp<Template>>, InputError> {
        let mut out = Vec::new();
        if let Some(s) = sql {
            out.push(self.sql(&s.get_ref().args(s.span()), captures)?);
        }
        if let Some(r) = redis {
            if r.get_ref().is_empty() {
                return Err(self.source.error(
                    r.span(),
                    "redis needs a command: redis = [\"GET\", \"loadrig:k1\"]",
                ));
            }
            let args = r
                .get_ref()
                .iter()
                .map(|a| self.template(a, captures))
                .collect::<Result<_, _>>()?;
            out.push(NativeOp::Redis(RedisOp { args }));
        }
        if let Some(l) = ldap {
            self.ldap(l, captures, &mut out)?;
        }
        if let Some(h) = http {
            out.push(self.http(h, captures)?);
        }
        if let Some(r) = record {
            self.record(r, captures, &mut out)?;
        }
        Ok(out)
    }

    /// The record operations named in one table, in the order insert, read, update, scan,
    /// delete. A value template is drawn once per field; `[records]` says how many.
    fn record(
        &mut self,
        r: &RecordSection,
        captures: &[(String, usize)],
        out: &mut Vec<NativeOp<Template>>,
    ) -> Result<(), InputError> {
        let verbs = [
            ("insert", &r.insert),
            ("read", &r.read),
            ("update", &r.update),
            ("scan", &r.scan),
            ("delete", &r.delete),
        ];
        for (verb, args) in verbs {
            let Some(a) = args else { continue };
            let Some(layout) = self.records else {
                return Err(self
                    .source
                    .error(
                        a.span(),
                        format!(
                            "record.{verb} needs the record's fields: declare them in [records]"
                        ),
                    )
                    .help("[records]\nfields = 10   # or \"{fieldcount}\""));
            };
            let args = a.get_ref();
            let wants_value = matches!(verb, "insert" | "update");
            let takes_field = matches!(verb, "read" | "update" | "scan");
            let wants_count = verb == "scan";
            let refuse = |c: &Self, what: &str, at: Range<usize>| {
                Err(c.source.error(at, format!("record.{verb} takes no {what}")))
            };
            match (&args.value, wants_value) {
                (Some(v), false) => return refuse(self, "value", v.span()),
                (None, true) => {
                    return Err(self.source.error(
                        a.span(),
                        format!("record.{verb} needs a value, drawn for each field: record.{verb} = {{ key = \"...\", value = \"{{string 100}}\" }}"),
                    ))
                }
                _ => {}
            }
            if let (Some(f), false) = (&args.field, takes_field) {
                return refuse(self, "field", f.span());
            }
            match (&args.count, wants_count) {
                (Some(c), false) => return refuse(self, "count", c.span()),
                (None, true) => {
                    return Err(self.source.error(
                        a.span(),
                        "record.scan needs a count: record.scan = { key = \"...\", count = \"{uniform 1..101}\" }",
                    ))
                }
                _ => {}
            }
            let key = self.key_with(&args.key, captures)?;
            let field = match &args.field {
                Some(f) => Some(self.number(f, captures, "field", "{uniform 0..fieldcount}")?),
                None => None,
            };
            let values = match &args.value {
                Some(v) => {
                    let t = self.template(v, captures)?;
                    let n = if field.is_some() { 1 } else { layout.fields };
                    vec![t; n]
                }
                None => Vec::new(),
            };
            out.push(NativeOp::Record(match verb {
                "insert" => RecordOp::Insert { key, values },
                "read" => RecordOp::Read { key, field },
                "update" => RecordOp::Update { key, field, values },
                "scan" => {
                    let count = args.count.as_ref().expect("checked above");
                    RecordOp::Scan {
                        key,
                        count: self.number(count, captures, "count", "{uniform 1..101}")?,
                        field,
                    }
                }
                _ => RecordOp::Delete { key },
            }));
        }
        Ok(())
    }

    /// A template that draws a whole number: a literal, an integer parameter or a number
    /// generator.
    fn number(
        &mut self,
        text: &Spanned<String>,
        captures: &[(String, usize)],
        what: &str,
        example: &str,
    ) -> Result<Template, InputError> {
        let t = self.template(text, captures)?;
        let whole = match t.constant_text() {
            Some(c) => c.trim().parse::<u64>().is_ok(),
            None => t.kind() == ValueKind::Integer,
        };
        if !whole {
            return Err(self
                .source
                .error(
                    text.span(),
                    format!("{what} = \"{}\": expected a whole number", text.get_ref()),
                )
                .help(format!(
                    "a number, an integer parameter or a number generator such as {example}"
                )));
        }
        Ok(t)
    }

    /// The LDAP operations named in one table, in the order search, bind, add, modify, delete.
    fn ldap(
        &mut self,
        l: &LdapSection,
        captures: &[(String, usize)],
        out: &mut Vec<NativeOp<Template>>,
    ) -> Result<(), InputError> {
        if let Some(s) = &l.search {
            let a = s.get_ref();
            let scope = match a.scope.as_ref().map(|s| s.get_ref().as_str()) {
                None | Some("sub") => Scope::Sub,
                Some("one") => Scope::One,
                Some("base") => Scope::Base,
                Some(other) => {
                    let at = a.scope.as_ref().map_or(s.span(), |s| s.span());
                    return Err(self
                        .source
                        .error(at, format!("scope '{other}': expected base, one or sub")));
                }
            };
            let filter = match &a.filter {
                Some(f) => self.template(f, captures)?,
                None => self.template_at("(objectClass=*)", &s.span(), captures)?,
            };
            out.push(NativeOp::Ldap(LdapOp::Search {
                base: self.template(&a.base, captures)?,
                scope,
                filter,
                attrs: a.attrs.clone(),
            }));
        }
        if let Some(b) = &l.bind {
            let a = b.get_ref();
            out.push(NativeOp::Ldap(LdapOp::Bind {
                dn: self.template(&a.dn, captures)?,
                password: self.template(&a.password, captures)?,
            }));
        }
        if let Some(e) = &l.add {
            let a = e.get_ref();
            out.push(NativeOp::Ldap(LdapOp::Add {
                dn: self.template(&a.dn, captures)?,
                attrs: self.attrs(&a.attrs, captures)?,
            }));
        }
        if let Some(m) = &l.modify {
            let a = m.get_ref();
            out.push(NativeOp::Ldap(LdapOp::Modify {
                dn: self.template(&a.dn, captures)?,
                replace: self.attrs(&a.replace, captures)?,
            }));
        }
        if let Some(d) = &l.delete {
            out.push(NativeOp::Ldap(LdapOp::Delete {
                dn: self.template(&d.get_ref().dn, captures)?,
            }));
        }
        Ok(())
    }

    fn http(
        &mut self,
        h: &Spanned<HttpArgs>,
        captures: &[(String, usize)],
    ) -> Result<NativeOp<Template>, InputError> {
        let a = h.get_ref();
        let method = a
            .method
            .clone()
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        if ![
            "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND", "MKCOL",
        ]
        .contains(&method.as_str())
        {
            return Err(self.source.error(
                h.span(),
                format!("http method '{method}' is not one loadrig sends"),
            ));
        }
        if !a.path.get_ref().starts_with('/') {
            return Err(self.source.error(
                a.path.span(),
                "an http path starts with /, like \"/static/hello.txt\"",
            ));
        }
        if a.expect.is_some_and(|s| !(100..=599).contains(&s)) {
            return Err(self
                .source
                .error(h.span(), "expect is an HTTP status from 100 to 599"));
        }
        let headers = a
            .headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.template(v, captures)?)))
            .collect::<Result<_, InputError>>()?;
        let body = match &a.body {
            Some(b) => Some(self.template(b, captures)?),
            None => None,
        };
        Ok(NativeOp::Http(HttpOp {
            method,
            path: self.template(&a.path, captures)?,
            headers,
            body,
            expect: a.expect,
        }))
    }

    /// A setup statement: SQL without bound parameters, where `{NAME}` is replaced by the
    /// workload parameter NAME (`{{` and `}}` are braces), and `{iteration}` by the pass of
    /// the setup group it is in.
    pub fn setup_sql(
        &mut self,
        s: &SqlArgsRef<'_>,
        pass: Option<u64>,
    ) -> Result<NativeOp<ValueKind>, InputError> {
        let mut slots = 0;
        let template =
            Template::compile(s.query.get_ref(), self.params, &mut slots).map_err(|e| {
                InputError::new(format!("in \"{}\": {}", s.query.get_ref(), e.message))
                    .at(self.source.at(s.query.span().start + 1 + e.offset))
            })?;
        let text = match pass {
            Some(pass) => template.constant_text_at(pass),
            None => template.constant_text(),
        };
        let Some(query) = text else {
            return Err(self
                .source
                .error(s.query.span(), "setup statements may use {parameters} but no generators: they run once, before the load ({iteration} only in a repeat group)")
                .help("draw values in the operations, or generate rows in SQL (generate_series, a recursive CTE)"));
        };
        self.statements += 1;
        Ok(NativeOp::Sql(SqlOp {
            id: self.statements - 1,
            query,
            params: Vec::new(),
        }))
    }

    fn sql(
        &mut self,
        s: &SqlArgs,
        captures: &[(String, usize)],
    ) -> Result<NativeOp<Template>, InputError> {
        if s.query.get_ref().trim().is_empty() {
            return Err(self.source.error(s.query.span(), "the query is empty"));
        }
        let params = s
            .params
            .iter()
            .map(|p| self.template(p, captures))
            .collect::<Result<_, _>>()?;
        self.statements += 1;
        let id = self.statements - 1;
        if let Some(texts) = self.statement_texts(&s.query, captures)? {
            self.pending_texts.insert(id, texts);
        }
        Ok(NativeOp::Sql(SqlOp {
            id,
            query: s.query.get_ref().clone(),
            params,
        }))
    }

    /// `{NAME}` in a statement's text, NAME a `let` value of the operation drawn by one
    /// `{uniform A..B}`: the statement is written once per value (at most [`MAX_TEXTS`]),
    /// each prepared on its own, so a drawn number names an object (sysbench's
    /// `sbtest{t}`) without a drawn string ever being spliced into SQL. Other braces are
    /// the statement's own text.
    fn statement_texts(
        &mut self,
        query: &Spanned<String>,
        visible: &[(String, usize)],
    ) -> Result<Option<PendingTexts>, InputError> {
        let text = query.get_ref();
        let at = |offset: usize| self.source.at(query.span().start + 1 + offset);
        let mut bound: Option<(&str, usize)> = None;
        let mut from = 0;
        while let Some(open) = text[from..].find('{').map(|i| from + i) {
            let Some(close) = text[open..].find('}').map(|i| open + i) else {
                break;
            };
            from = close + 1;
            let name = &text[open + 1..close];
            let Some((_, slot)) = visible.iter().find(|(n, _)| n == name) else {
                continue;
            };
            if bound.is_some_and(|(b, _)| b != name) {
                return Err(InputError::new(format!("in \"{text}\": a statement's text may name one let value; '{name}' is a second")).at(at(open)));
            }
            if !self.let_ranges.contains_key(slot) {
                return Err(InputError::new(format!("in \"{text}\": '{{{name}}}' in a statement's text must be a let value drawn by {{uniform A..B}}, so that the statement can be written for each value"))
                    .at(at(open))
                    .help("bind other values as parameters: $1 with params = [\"{value}\"]"));
            }
            bound = Some((name, *slot));
        }
        let Some((name, slot)) = bound else {
            return Ok(None);
        };
        let (lo, hi) = self.let_ranges[&slot];
        if hi - lo > MAX_TEXTS {
            return Err(InputError::new(format!("in \"{text}\": '{{{name}}}' takes {} values; a statement's text may name a let value of at most {MAX_TEXTS}", hi - lo))
                .at(at(text.find('{').unwrap_or(0))));
        }
        let placeholder = format!("{{{name}}}");
        let texts = (lo..hi)
            .map(|v| {
                self.statements += 1;
                (
                    self.statements - 1,
                    text.replace(&placeholder, &v.to_string()),
                )
            })
            .collect();
        Ok(Some((slot, lo, texts)))
    }

    /// A step of `op`, with the statements its text names (see `statement_texts`).
    fn new_step(&mut self, op: NativeOp<Template>, capture: Vec<usize>) -> Step {
        let mut step = Step::new(op, capture);
        if let NativeOp::Sql(SqlOp { id, params, .. }) = &step.op {
            if let Some((slot, lo, texts)) = self.pending_texts.remove(id) {
                let ops = texts
                    .into_iter()
                    .map(|(id, query)| {
                        NativeOp::Sql(SqlOp {
                            id,
                            query,
                            params: params.clone(),
                        })
                    })
                    .collect();
                step.texts = Some(Box::new(StatementTexts { slot, lo, ops }));
            }
        }
        step
    }

    fn attrs(
        &mut self,
        attrs: &Spanned<BTreeMap<String, OneOrMany>>,
        captures: &[(String, usize)],
    ) -> Result<Vec<(String, Vec<Template>)>, InputError> {
        let span = attrs.span();
        let mut out = Vec::new();
        for (name, values) in attrs.get_ref() {
            let compiled = values
                .0
                .iter()
                .map(|v| self.template_at(v, &span, captures))
                .collect::<Result<_, _>>()?;
            out.push((name.clone(), compiled));
        }
        Ok(out)
    }

    /// `tx = [...]` (`transaction`) or `steps = [...]`: the same steps, compiled alike; only
    /// a transaction has commit points and rollback steps.
    fn tx(
        &mut self,
        tx: &Spanned<Vec<Spanned<StepSection>>>,
        mut visible: Vec<(String, usize)>,
        transaction: bool,
    ) -> Result<OpKind, InputError> {
        let form = if transaction { "tx" } else { "steps" };
        if tx.get_ref().is_empty() {
            return Err(self.source.error(
                tx.span(),
                format!("{form} has no steps: {form} = [ {{ sql = {{ query = \"...\" }} }}, ... ]"),
            ));
        }
        let mut steps: Vec<Step> = Vec::new();
        let mut commit_point = false;
        // The last thing compiled was a repeat group: a rollback step cannot ride on it.
        let mut after_group = false;
        for step in tx.get_ref() {
            if !self.keeps(&step.get_ref().only)? {
                continue;
            }
            if !transaction {
                self.check_no_transaction(step)?;
            }
            if step.get_ref().commit.is_some() {
                self.check_commit_point(step)?;
                // At the start of a tx there is nothing to commit yet.
                commit_point = !steps.is_empty();
                continue;
            }
            if step.get_ref().rollback.is_some() {
                let after = if commit_point || after_group {
                    None
                } else {
                    steps.last_mut()
                };
                self.rollback_step(step, after, &visible)?;
                continue;
            }
            after_group = step.get_ref().repeat.is_some();
            let mut compiled = match &step.get_ref().repeat {
                Some(count) => self.repeat_group(step, count, &mut visible, transaction)?,
                None => vec![self.tx_step(step, &mut visible)?],
            };
            if let Some(first) = compiled.first_mut() {
                first.commit_before = std::mem::take(&mut commit_point);
            }
            steps.append(&mut compiled);
        }
        if steps.is_empty() {
            return Err(self.source.error(
                tx.span(),
                format!("`only` leaves out every step of this {form} for these switch values"),
            ));
        }
        let families: Vec<_> = steps
            .iter()
            .filter(|s| s.peer.is_none())
            .map(|s| s.op.family())
            .collect();
        if families.windows(2).any(|w| w[0] != w[1]) {
            return Err(self.source.error(
                tx.span(),
                format!("a {form} runs on one system: its steps are all sql, all record, all redis or all ldap (steps with on = \"PEER\" aside)"),
            ));
        }
        Ok(if transaction {
            OpKind::Tx(steps)
        } else {
            OpKind::Steps(steps)
        })
    }

    /// `steps = [...]` sends each statement on its own: a commit point or a rollback step
    /// (in it or in one of its groups) would need a transaction to act on.
    fn check_no_transaction(&self, step: &Spanned<StepSection>) -> Result<(), InputError> {
        let s = step.get_ref();
        let what = match (&s.commit, &s.rollback) {
            (Some(_), _) => "a commit point",
            (_, Some(_)) => "a rollback step",
            _ => return Ok(()),
        };
        Err(self
            .source
            .error(
                step.span(),
                format!("{what} needs a transaction: the steps of steps = [...] run without one, each statement committed on its own"),
            )
            .help("write tx = [ ... ] for one transaction, or leave it out"))
    }

    /// `{ repeat = "COUNT", steps = [...] }`: the group's steps, the first carrying the
    /// count; nothing when `only` leaves out every one. No commit point or group inside.
    fn repeat_group(
        &mut self,
        group: &Spanned<StepSection>,
        count: &Spanned<String>,
        visible: &mut Vec<(String, usize)>,
        transaction: bool,
    ) -> Result<Vec<Step>, InputError> {
        let g = group.get_ref();
        let alone = g.sql.is_none()
            && g.record.is_none()
            && g.redis.is_none()
            && g.ldap.is_none()
            && g.http.is_none()
            && g.capture.is_none()
            && g.when.is_none()
            && g.on.is_none()
            && g.commit.is_none()
            && g.rollback.is_none();
        let Some(inner) = g.steps.as_ref().filter(|_| alone) else {
            return Err(self
                .source
                .error(group.span(), "a repeat group is { repeat = \"COUNT\", steps = [ ... ] } (it may carry only = { ... })"));
        };
        let count_template = self.template(count, visible)?;
        let countable = match count_template.constant_text() {
            Some(text) => text.trim().parse::<u64>().is_ok(),
            None => count_template.kind() == ValueKind::Integer,
        };
        if !countable {
            return Err(self
                .source
                .error(count.span(), format!("repeat = \"{}\": expected a whole number of passes", count.get_ref()))
                .help("a number, an integer parameter, a number generator such as {uniform 5..16}, or a let value"));
        }
        let outer = std::mem::replace(&mut self.in_repeat, true);
        let mut steps = Vec::new();
        for step in inner.get_ref() {
            if !self.keeps(&step.get_ref().only)? {
                continue;
            }
            let s = step.get_ref();
            if !transaction {
                if let Err(e) = self.check_no_transaction(step) {
                    self.in_repeat = outer;
                    return Err(e);
                }
            }
            if s.rollback.is_some() {
                if let Err(e) = self.rollback_step(step, steps.last_mut(), visible) {
                    self.in_repeat = outer;
                    return Err(e);
                }
                continue;
            }
            if s.commit.is_some() || s.repeat.is_some() || s.steps.is_some() {
                self.in_repeat = outer;
                return Err(self.source.error(
                    step.span(),
                    "a repeat group holds native steps only: no commit point and no group inside it",
                ));
            }
            match self.tx_step(step, visible) {
                Ok(compiled) => steps.push(compiled),
                Err(e) => {
                    self.in_repeat = outer;
                    return Err(e);
                }
            }
        }
        self.in_repeat = outer;
        let len = steps.len();
        if let Some(first) = steps.first_mut() {
            first.repeat = Some(Repeat {
                count: count_template,
                len,
            });
        }
        Ok(steps)
    }

    /// One native step of a tx; its captures become visible to the steps after it.
    fn tx_step(
        &mut self,
        step: &Spanned<StepSection>,
        visible: &mut Vec<(String, usize)>,
    ) -> Result<Step, InputError> {
        let s = step.get_ref();
        let mut ops = self.natives(
            s.sql.as_ref(),
            s.record.as_ref(),
            s.redis.as_ref(),
            s.ldap.as_ref(),
            s.http.as_ref(),
            visible,
        )?;
        if ops.len() != 1 {
            return Err(self.source.error(
                step.span(),
                "each tx step has exactly one of sql, record.*, redis, http (on a peer), ldap.search, ldap.add, ldap.modify, ldap.delete, or is a commit point { commit = {} } or a group { repeat = \"COUNT\", steps = [...] }",
            ));
        }
        let op = ops.remove(0);
        if let NativeOp::Ldap(LdapOp::Bind { .. }) = op {
            return Err(self.source.error(
                step.span(),
                "ldap.bind cannot be a tx step: a bind ends an LDAP transaction",
            ));
        }
        let peer = self.peer(&s.on, &op)?;
        if peer.is_none() && op.family() == Family::Http {
            return Err(self.source.error(
                step.span(),
                "an http step of a tx runs on a peer: add on = \"NAME\" naming one of [peers]",
            ));
        }
        if let Some(w) = s.when.as_ref().filter(|w| w.get_ref().names().is_empty()) {
            return Err(self.source.error(
                w.span(),
                "when = [] names no value: leave when out, or name one: when = [\"NAME\"]",
            ));
        }
        let when = match &s.when {
            Some(w) => w
                .get_ref()
                .names()
                .into_iter()
                .map(|name| self.when_slot(name, &w.span(), visible))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let capture = match self.capture_names(&s.capture)? {
            Some((names, cspan)) => {
                self.check_capture(&op, &names, &cspan)?;
                let slots = self.slots(&names);
                visible.extend(names.into_iter().zip(slots.iter().copied()));
                slots
            }
            None => Vec::new(),
        };
        let mut compiled = self.new_step(op, capture);
        compiled.when = when;
        compiled.peer = peer;
        Ok(compiled)
    }

    /// A commit point is `{ commit = {} }`, with at most `only` beside it.
    fn check_commit_point(&self, step: &Spanned<StepSection>) -> Result<(), InputError> {
        let s = step.get_ref();
        let alone = s.sql.is_none()
            && s.record.is_none()
            && s.redis.is_none()
            && s.ldap.is_none()
            && s.http.is_none()
            && s.capture.is_none()
            && s.when.is_none()
            && s.on.is_none()
            && s.repeat.is_none()
            && s.steps.is_none()
            && s.rollback.is_none()
            && s.commit.as_ref().is_some_and(|c| c.is_empty());
        if alone {
            Ok(())
        } else {
            Err(self.source.error(
                step.span(),
                "a commit point is { commit = {} } alone (it may carry only = { ... })",
            ))
        }
    }

    /// `{ rollback = {} }`, with at most `when` and `only` beside it, right after a native
    /// step of the same tx or group (`after`), which carries it.
    fn rollback_step(
        &self,
        step: &Spanned<StepSection>,
        after: Option<&mut Step>,
        visible: &[(String, usize)],
    ) -> Result<(), InputError> {
        let s = step.get_ref();
        let alone = s.sql.is_none()
            && s.redis.is_none()
            && s.ldap.is_none()
            && s.http.is_none()
            && s.capture.is_none()
            && s.on.is_none()
            && s.commit.is_none()
            && s.repeat.is_none()
            && s.steps.is_none()
            && s.rollback.as_ref().is_some_and(|r| r.is_empty());
        if !alone {
            return Err(self.source.error(
                step.span(),
                "a rollback step is { rollback = {}, when = \"NAME\" } (it may carry when and only, nothing else)",
            ));
        }
        let when = match s.when.as_ref().map(|w| (w.get_ref(), w.span())) {
            Some((WhenForm::One(name), span)) => Some(self.when_slot(name, &span, visible)?),
            Some((WhenForm::All(_), span)) => {
                return Err(self.source.error(
                    span,
                    "a rollback step's when names one value: when = \"NAME\" or \"!NAME\"",
                ))
            }
            None => None,
        };
        match after {
            Some(prev) if prev.rollback_after.is_none() => {
                prev.rollback_after = Some(when);
                Ok(())
            }
            _ => Err(self
                .source
                .error(
                    step.span(),
                    "a rollback step follows a native step of its tx or repeat group (not another rollback step, a commit point, a repeat group or the start)",
                )
                .help("tx = [ { sql = \"SELECT ...\", capture = [\"found\"] }, { rollback = {}, when = \"!found\" }, ... ]")),
        }
    }

    /// `when = "NAME"` (or `"!NAME"`, negated): the slot of a `let` value or of a capture of
    /// an earlier step.
    fn when_slot(
        &self,
        when: &str,
        span: &Range<usize>,
        visible: &[(String, usize)],
    ) -> Result<When, InputError> {
        let written = when.trim();
        let (name, negate) = match written.strip_prefix('!') {
            Some(rest) => (rest.trim(), true),
            None => (written, false),
        };
        match visible.iter().rev().find(|(n, _)| n == name) {
            Some((_, slot)) => Ok(When {
                slot: *slot,
                negate,
            }),
            None => Err(self
                .source
                .error(
                    span.clone(),
                    format!("when = \"{name}\": no earlier step of this op captures '{name}' and the op has no let of that name"),
                )
                .help("capture = [\"NAME\"] on an earlier step, or let = { NAME = \"...\" } on the op")),
        }
    }

    /// `on = "NAME"`: the index of that peer, which must run `op`'s family.
    fn peer<A>(
        &self,
        on: &Option<Spanned<String>>,
        op: &NativeOp<A>,
    ) -> Result<Option<usize>, InputError> {
        let Some(on) = on else { return Ok(None) };
        let Some(i) = self.peers.iter().position(|p| &p.name == on.get_ref()) else {
            let known: Vec<&str> = self.peers.iter().map(|p| p.name.as_str()).collect();
            return Err(self
                .source
                .error(
                    on.span(),
                    format!("on = \"{}\": no such peer", on.get_ref()),
                )
                .help(if known.is_empty() {
                    "declare it in [peers]: NAME = \"http://...\" or \"redis://...\"".to_string()
                } else {
                    format!("the peers are: {}", known.join(", "))
                }));
        };
        let peer = &self.peers[i];
        if peer.family.is_some_and(|f| f != op.family()) {
            return Err(self.source.error(
                on.span(),
                format!(
                    "peer '{}' is a {}:// system and does not run {} steps",
                    peer.name,
                    peer.family.map_or("", |f| f.name()),
                    op.family().name()
                ),
            ));
        }
        Ok(Some(i))
    }

    /// `only = { SWITCH = "value" | ["a", "b"], ... }`: whether every named switch has one
    /// of the listed values.
    pub fn keeps(
        &self,
        only: &Option<Spanned<BTreeMap<String, OneOrMany>>>,
    ) -> Result<bool, InputError> {
        let Some(only) = only else { return Ok(true) };
        let mut keep = true;
        for (name, listed) in only.get_ref() {
            let Some(choices) = self.switches.get(name) else {
                return Err(self.source.error(
                    only.span(),
                    format!("only: '{name}' is not a switch: declare it in [switches]"),
                ));
            };
            let listed: Vec<&String> = listed.0.iter().collect();
            if let Some(bad) = listed.iter().find(|v| !choices.contains(v)) {
                return Err(self.source.error(
                    only.span(),
                    format!(
                        "only: '{bad}' is not a value of switch '{name}' (one of {})",
                        choices.join(", ")
                    ),
                ));
            }
            let value = match self.params.get(name) {
                Some(toml::Value::String(v)) => v,
                _ => &choices[0],
            };
            keep &= listed.contains(&value);
        }
        Ok(keep)
    }

    /// `pause = { keying = "D", think = "D", only = { ... } }`: nothing when `only` leaves
    /// it out.
    fn pause(&self, p: &Spanned<PauseSection>) -> Result<Option<Pause>, InputError> {
        let a = p.get_ref();
        if !self.keeps(&a.only)? {
            return Ok(None);
        }
        let time = |d: &Option<Spanned<String>>, what: &str| match d {
            Some(d) => duration::parse(d.get_ref(), what).map_err(|e| InputError {
                location: Some(self.source.at(d.span().start)),
                ..e
            }),
            None => Ok(Duration::ZERO),
        };
        Ok(Some(Pause {
            keying: time(&a.keying, "pause keying")?,
            think: time(&a.think, "pause think")?,
        }))
    }

    fn retry(&self, r: &Spanned<RetrySection>) -> Result<Retry, InputError> {
        let a = r.get_ref();
        let mut on = Vec::new();
        for class in &a.on {
            match ErrorClass::ALL.iter().find(|c| c.name() == class.get_ref()) {
                Some(c) => on.push(*c),
                None => {
                    return Err(self.source.error(
                        class.span(),
                        format!(
                            "unknown error class '{}': expected {}",
                            class.get_ref(),
                            ErrorClass::ALL
                                .iter()
                                .map(|c| c.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
            }
        }
        let backoff = match &a.backoff {
            Some(b) => duration::parse(b.get_ref(), "retry backoff").map_err(|e| InputError {
                location: Some(self.source.at(b.span().start)),
                ..e
            })?,
            None => Duration::from_millis(1),
        };
        Ok(Retry {
            on,
            max: a.max.unwrap_or(3),
            backoff,
        })
    }
}
