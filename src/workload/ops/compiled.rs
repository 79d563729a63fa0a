//! Operations as compiled: what the engine runs, with their templates.

use std::time::Duration;

use crate::vocab::{ErrorClass, Family, NativeOp, RecordOp, StatementKind, ValueKind};
use crate::workload::template::Template;

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
    pub(super) fn new(op: NativeOp<Template>, capture: Vec<usize>) -> Step {
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
